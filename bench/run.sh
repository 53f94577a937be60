#!/bin/sh
# make bench: run every benchmark binary, then every bench/*.sh script.
# Figures are printed, never asserted: compare the ratios each one reports.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$top/$BUILD/bin:$PATH" GRPO_TOP="$top" GRPO_SHARED="${GRPO_SHARED:-$top/../shared}"
for b in "$top/$BUILD"/bench/bench_*; do
	case "$b" in *.o|*.d) continue ;; esac
	[ -x "$b" ] && "$b"
done
for s in "$top"/bench/*.sh; do
	[ -f "$s" ] && [ "$(basename "$s")" != run.sh ] && sh "$s"
done
exit 0
