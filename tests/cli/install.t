#!/bin/sh
# `make install`: an install into DESTDIR puts every tool in PREFIX/bin and
# every man page in PREFIX/share/man/manN (the README's first command,
# examples/demo.sh, is demo.t's).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4
command -v make > /dev/null || skip_all "no make"

# Only the copying is under test: the tools are built (CUDA=0 keeps make from
# building CUDA into a sanitizer build), and the outer make's jobserver stays
# outside.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$GRPO_TOP" BUILD="${GRPO_BUILD:-build}" CUDA=0 \
	DESTDIR="$T/root" PREFIX=/usr install > "$T/log" 2>&1
is "$?" 0 "make install DESTDIR=... PREFIX=/usr succeeds"
missing=
for t in "$GRPO_TOP"/tools/grpo-*.c; do
	t=$(basename "$t" .c)
	[ -x "$T/root/usr/bin/$t" ] || missing="$missing bin/$t"
done
for m in "$GRPO_TOP"/man/*.[1-9]; do
	m=$(basename "$m")
	[ -f "$T/root/usr/share/man/man${m##*.}/$m" ] || missing="$missing man${m##*.}/$m"
done
is "${missing:-none}" none "every tool is in PREFIX/bin and every man page in PREFIX/share/man/manN"
"$T/root/usr/bin/grpo-cat" --version > /dev/null 2>&1
is "$?" 0 "the installed grpo-cat runs"
# From nothing built, install builds the tools and nothing else (make -n: what it would run)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -C "$GRPO_TOP" BUILD="$T/fresh" CUDA=0 V=1 \
	DESTDIR="$T/root2" PREFIX=/usr install > "$T/plan" 2>&1
grep -q -- "-o $T/fresh/bin/grpo-cat" "$T/plan" && ! grep -q -- "-o $T/fresh/\(tests\|bench\)/" "$T/plan"
is "$?" 0 "make install from a clean tree builds the tools, not the tests or benchmarks"
