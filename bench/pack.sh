#!/bin/sh
# pack.sh: grpo-pack end to end (read, pack, build, compress, publish with
# fsync) on issue 4's workload, next to `zstd -d` of the same input.
# Figures only; the target is pack + publish within 10x of decompression.
# Wall clock is the best of 5; CPU (user + system, one run) is printed too,
# since on a shared machine the wall clock mostly measures the neighbours.
# Usage: sh bench/pack.sh [INPUT.zst]   (default: issue 4's workload, made
# by bench_pack)
# The figures are ours, printed with a '.' whatever the user's locale (in
# de_DE awk read 0.5 as 0 and printf wrote 0,000).
LC_ALL=C
export LC_ALL
BUILD=${BUILD:-build}
top=${GRPO_TOP:-$(cd "$(dirname "$0")/.." && pwd)}
PATH="$top/$BUILD/bin:$PATH"
command -v zstd >/dev/null || { echo "pack.sh: zstd not installed, skipped"; exit 0; }
t=$(mktemp -d "${TMPDIR:-/tmp}/bench-pack.XXXXXX")
trap 'rm -rf "$t"' EXIT
if [ $# -gt 0 ]; then
	cp "$1" "$t/in.zst" || exit 1
else
	"$top/$BUILD/bench/bench_pack" --make-input "$t/in.zst" || exit 1
fi
now() { date +%s.%N; }
best() { # best of 5 wall-clock seconds of "$@"
	b=
	for i in 1 2 3 4 5; do
		s=$(now); "$@" >/dev/null 2>&1; e=$(now)
		b=$(echo "$s $e ${b:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
	done
	echo "$b"
}
publish() { rm -rf "$t/b"; grpo-pack -T 16384 -W "$1" $2 -o "$t/b" "$t/in.zst"; }
stdout() { grpo-pack -T 16384 -W "$1" "$t/in.zst" > "$t/out.zst"; }
cpu() { # user + system seconds of one run of "$@"
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f "%U %S" -o "$t/cpu" "$@" >/dev/null 2>&1
		awk '{printf "%.3f", $1 + $2}' "$t/cpu"
	else
		echo "?"
	fi
}
z=$(best zstd -q -d -c "$t/in.zst")
zc=$(cpu zstd -q -d -c "$t/in.zst")
echo "pack.sh: input $(wc -c < "$t/in.zst") bytes compressed, $(zstd -q -d -c "$t/in.zst" | wc -c) raw; zstd -d $(printf %.3f "$z") s wall, $zc s cpu"
for W in 8 64; do
	p=$(best publish $W)
	o=$(best stdout $W)
	rm -rf "$t/b"
	pc=$(cpu grpo-pack -T 16384 -W $W -o "$t/b" "$t/in.zst")
	oc=$(cpu grpo-pack -T 16384 -W $W "$t/in.zst")
	grpo-pack -T 16384 -W $W -x "$t/m" -o "$t/m.q" "$t/in.zst"
	f=$(sed 's/.*"fill":\([0-9.]*\).*"rank_cost_max_mean":\([0-9.]*\).*"pack_s":\([0-9.]*\).*"write_s":\([0-9.]*\).*"bytes":\([0-9]*\).*/fill \1 max\/mean \2 pack_s \3 write_s \4 bytes \5/' "$t/m")
	rm -rf "$t/m" "$t/m.q"
	echo "pack.sh: W=$W: pack+publish (fsync) $(printf %.3f "$p") s = $(echo "$p $z" | awk '{printf "%.1f", $1/$2}')x zstd -d (cpu $pc s); to stdout $(printf %.3f "$o") s (cpu $oc s); $f"
done
