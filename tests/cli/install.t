#!/bin/sh
# `make install`: an install into DESTDIR puts every tool in PREFIX/bin,
# every man page in PREFIX/share/man/manN, and the CUDA library, where the
# build has one, in PREFIX/lib/grpo-tools, where the installed tools find it;
# `make uninstall` takes them away (the README's first command,
# examples/demo.sh, is demo.t's).
. "$GRPO_TOP/tests/cli/lib.sh"
command -v make > /dev/null || skip_all "no make"
plan 7

# Only the copying is under test: the tools are built (CUDA=0 keeps make from
# building CUDA into a sanitizer build, which has no CUDA library), and the
# outer make's jobserver stays outside.
B=${GRPO_BUILD:-build}
cuda=CUDA=0
[ -f "$GRPO_TOP/$B/libgrpo-cuda.so" ] && cuda=
# A staging directory with a space in it, as a packager's may be: the recipes quote it
R="$T/stage dir"
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$GRPO_TOP" BUILD="$B" $cuda DESTDIR="$R" PREFIX=/usr "$@"
}
mk install > "$T/log" 2>&1
is "$?" 0 "make install DESTDIR=... PREFIX=/usr succeeds"
missing=
for t in "$GRPO_TOP"/tools/grpo-*.c; do
	t=$(basename "$t" .c)
	[ -x "$R/usr/bin/$t" ] || missing="$missing bin/$t"
done
for m in "$GRPO_TOP"/man/*.[1-9]; do
	m=$(basename "$m")
	[ -f "$R/usr/share/man/man${m##*.}/$m" ] || missing="$missing man${m##*.}/$m"
done
is "${missing:-none}" none "every tool is in PREFIX/bin and every man page in PREFIX/share/man/manN"
"$R/usr/bin/grpo-cat" --version > /dev/null 2>&1
is "$?" 0 "the installed grpo-cat runs"
# The installed tools find the installed CUDA library with GRPO_CUDA_LIB unset: given a
# driver with a device (a stand-in), they load it, and the stand-in fails in the CUDA runtime
if [ -n "$cuda" ]; then
	skip "this build has no CUDA library to install"
	skip "this build has no CUDA library to install"
elif ! fake_cuda_driver "$T/driver"; then
	skip "no cc to build the stand-in CUDA driver"
	skip "no cc to build the stand-in CUDA driver"
else
	[ -f "$R/usr/lib/grpo-tools/libgrpo-cuda.so" ]; ok $? "the CUDA library is in PREFIX/lib/grpo-tools"
	echo '{"prompt_tokens":[1],"response_tokens":[2]}' | grpo-collect --step 0 > "$T/in.zst" 2> /dev/null
	score() {
		LD_LIBRARY_PATH="$T/driver" FAKE_CUDA_DEVICES=1 "$@" --device cuda -r length -m 3 "$T/in.zst" 2>&1 > /dev/null
	}
	want=$(GRPO_CUDA_LIB="$GRPO_TOP/$B/libgrpo-cuda.so" score grpo-score)
	got=$(unset GRPO_CUDA_LIB; score "$R/usr/bin/grpo-score")
	is "$got" "$want" "the installed grpo-score --device cuda loads it (and fails, as the build's, in the runtime)"
fi
mk uninstall > "$T/log" 2>&1 && find "$R" -type f > "$T/left"
is "$?:$(cat "$T/left")" "0:" "make uninstall takes away every file it installed"
# From nothing built, install builds the tools and nothing else (make -n: what it would run).
# BUILD names make targets, which cannot hold a space as $T may: a name under
# build/ that is not there, and that make -n does not make.
fresh=build/install-plan.$$
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -C "$GRPO_TOP" BUILD="$fresh" CUDA=0 V=1 \
	DESTDIR="$T/root2" PREFIX=/usr install > "$T/plan" 2>&1
grep -q -- "-o $fresh/bin/grpo-cat" "$T/plan" && ! grep -q -- "-o $fresh/\(tests\|bench\)/" "$T/plan"
is "$?" 0 "make install from a clean tree builds the tools, not the tests or benchmarks"
