#!/bin/sh
# Run every benchmark binary of $BUILD/bench with its default arguments.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
for b in "$top/$BUILD"/bench/bench_*; do
	case "$b" in *.d|*.o) continue ;; esac
	[ -x "$b" ] || continue
	echo "== $(basename "$b")"
	"$b"
done
