#!/bin/sh
# Run every test under prove: the unit test binaries of $BUILD/tests and the
# shell TAP scripts of tests/cli, with $BUILD/bin first on PATH. Arguments,
# if any, name the tests to run instead (paths from the top of the tree).
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
export GRPO_TOP="$top"
export GRPO_BIN="$top/$BUILD/bin"
export GRPO_BUILD="$BUILD"
export GRPO_SHARED="${GRPO_SHARED:-$top/../shared}"
export PATH="$GRPO_BIN:$PATH"
# the CPU unless a test asks for the GPU (--device cuda): the tests' expected
# values are the C model's, and a GPU machine would otherwise take bf16
export GRPO_DEVICE="${GRPO_DEVICE:-cpu}"
# The C locale, whatever the user's: the tests read what ls, sort and awk
# print (de_DE's ls says "Datei oder Verzeichnis nicht gefunden", its awk
# reads 2.5 as 2 and its sort puts .tmp after step_0). The tests of how the
# examples fare in a user's locale set LC_ALL themselves (demo-locale.t).
export LC_ALL=C
if [ $# -gt 0 ]; then
	for t; do
		shift
		set -- "$@" "$top/$t"
	done
	exec prove ${PROVE_FLAGS:-} "$@"
fi
for t in "$top/$BUILD"/tests/test_*; do
	case "$t" in *.d|*.o) continue ;; esac
	[ -x "$t" ] && set -- "$@" "$t"
done
for t in "$top"/tests/cli/*.t; do
	[ -f "$t" ] && set -- "$@" "$t"
done
[ $# -gt 0 ] || { echo "tests/run.sh: no tests found under $BUILD" >&2; exit 1; }
exec prove ${PROVE_FLAGS:-} "$@"
