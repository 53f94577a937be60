#!/bin/sh
# The build with clang and warnings as errors (make CC=clang WERROR=-Werror):
# the Makefile gave every compiler GCC's -Wno-format-truncation, which clang
# does not know, so with -Werror not one file compiled. One module, built by
# the Makefile into a scratch build directory, stands for all (in the tree:
# make takes no space in a path, which $T may have), by a make of its own:
# run from make check, the outer make's flags (-w among them) would reach it.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v clang > /dev/null || skip_all "no clang"
command -v make > /dev/null || skip_all "no make"
plan 1
b=build/clang-check.$$
trap 'rm -rf "$T" "${GRPO_TOP:?}/$b"' EXIT
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$GRPO_TOP" CC=clang WERROR=-Werror CUDA=0 BUILD="$b" "$b/lib/base/err.o" > "$T/out" 2>&1
is "$?:$(cat "$T/out")" "0:  CC      lib/base/err.c" "clang with -Werror compiles a module of lib/ without a word"
