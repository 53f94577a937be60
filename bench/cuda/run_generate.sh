#!/bin/sh
# make bench-cuda, generation: grpo-collect's GPU sampler against
# transformers' generate() (peer_torch_generate.py: bf16, sampling at
# temperature 1, 16 prompts x 8 samples, 256 prompt and 512 new tokens) in
# one run, and the same with 16 prompts x 64 samples (1,024 sequences).
# Prints the figures and their ratios; asserts nothing.
#
# Needs a GPU; the peer needs python3 with torch and transformers, and its
# script in $GRPO_SHARED/bench (default ../shared).
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
shared=${GRPO_SHARED:-$top/../shared}
out=${BENCH_OUT:-$top/$BUILD/bench-cuda}
mkdir -p "$out"
bench="$top/$BUILD/bench/cuda/bench_cuda_generate"

"$bench" -d bf16 -P 16 -G 8 | tee "$out/gen-128.txt"
"$bench" -d bf16 -P 16 -G 64 -r 1 | tee "$out/gen-1024.txt"
[ -n "$BENCH_QUICK" ] || GRPO_CUDA_GRAPHS=0 "$bench" -d bf16 -P 16 -G 8 -r 1 | tee "$out/gen-128-nographs.txt"

peer="$shared/bench/peer_torch_generate.py"
if [ ! -f "$peer" ] || ! python3 -c 'import torch' 2>/dev/null; then
	echo "bench-cuda: no peer for generation ($peer, or python3 with torch); no ratios" >&2
	exit 0
fi
python3 "$peer" | tail -n 1 > "$out/peer-generate.json"
python3 - "$out/gen-128.txt" "$out/gen-1024.txt" "$out/peer-generate.json" <<'PY'
import json, re, sys
def ours(path):
    text = open(path).read()
    kv = dict(re.findall(r"(\w+)=(\S+)", text.splitlines()[0]))
    used = re.search(r"([\d.]+) MiB in use on the device while decoding", text)
    return float(kv["tokens_per_s"]), float(kv["seconds"]), (float(used.group(1)) / 1024 if used else float("nan"))
peer = json.load(open(sys.argv[3]))
print(f"generation, {peer['gpu']}: {peer['batch']} sequences, {peer['prompt']} prompt + {peer['new_tokens']} new tokens")
for label, path in (("128 sequences (16 x 8)", sys.argv[1]), ("1,024 sequences (16 x 64)", sys.argv[2])):
    tps, s, gib = ours(path)
    line = f"  grpo-tools bf16, {label}: {tps:,.0f} generated tokens/s ({s} s), {gib:.1f} GiB in use"
    for k in ("dynamic", "static"):
        r = peer.get(k, {})
        if "generated_tokens_per_s" in r:
            line += f"; {tps / r['generated_tokens_per_s']:.1f}x the peer's {k} cache"
    print(line)
for k in ("dynamic", "static"):
    r = peer.get(k, {})
    if "generated_tokens_per_s" in r:
        print(f"  peer {k} cache: {r['generated_tokens_per_s']:,} generated tokens/s ({r['s']} s), peak {r['peak_gib']} GiB")
    elif r:
        print(f"  peer {k} cache: failed: {r.get('error')}")
PY
