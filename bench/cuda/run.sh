#!/bin/sh
# make bench-cuda: the GPU reference forward (grpo-score's logprobs) against
# PyTorch + transformers' forward on the same batch, in one run: the peer's
# 128 sequences (16 prompts x 8 samples, 144k tokens), their lengths drawn
# by the peer's own generator so that both sides see the same batch; then
# grpo-step's whole training step on the GPU on the same batch (and the
# Qwen2.5-1.5B shape's, which the peer cannot fit) against the peer's step,
# each also with the layers' activations recomputed (-R, grpo-step
# --recompute) for its time and memory.
# Prints the figures and their ratios; asserts nothing. BENCH_QUICK=1
# measures only what the ratios need (the forward, the step with and
# without -R, the 1.5B step and the peer), for a short GPU lease.
#
# Needs a GPU; the peer needs python3 with torch and transformers, and its
# script, peer_torch_grpo.py, in $GRPO_SHARED/bench (default ../shared).
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
shared=${GRPO_SHARED:-$top/../shared}
out=${BENCH_OUT:-$top/$BUILD/bench-cuda}
mkdir -p "$out"

if ! python3 -c 'import torch' 2>/dev/null; then
	echo "bench-cuda: python3 with torch is needed for the peer's batch; skipped" >&2
	exit 0
fi
python3 - > "$out/lengths.txt" <<'PY'
import torch
g = torch.Generator().manual_seed(1)
prompts = [int(x) for x in torch.randint(64, 512, (16,), generator=g)]
for p in prompts:
    for _ in range(8):
        print(p, int(torch.randint(32, 1536, (1,), generator=g)))
PY

bench="$top/$BUILD/bench/cuda/bench_cuda_model"
"$bench" -d bf16 "$out/lengths.txt" | tee "$out/ours-bf16.txt"
if [ -z "$BENCH_QUICK" ]; then   # the CUDA-core attention, fp32, Qwen3 and the forward+backward alone, for comparison
	GRPO_CUDA_ATTENTION=simple "$bench" -d bf16 "$out/lengths.txt"
	"$bench" -d fp32 "$out/lengths.txt"
	"$bench" -d bf16 -s qwen3-0.6b "$out/lengths.txt"
	"$bench" -d bf16 -b "$out/lengths.txt"
fi
# grpo-step's whole step on the GPU: forward, backward, gradient norm, AdamW, the copy back
"$bench" -d bf16 -t "$out/lengths.txt" | tee "$out/ours-train.txt"
[ -n "$BENCH_QUICK" ] || GRPO_CUDA_PIN=0 "$bench" -d bf16 -t "$out/lengths.txt"   # the copy back through pageable memory
# the same step recomputing each layer's activations: less memory, more time
"$bench" -d bf16 -t -R "$out/lengths.txt" | tee "$out/ours-train-recompute.txt"
# the Qwen2.5-1.5B shape, where the peer runs out of memory on an 80 GB GPU
"$bench" -d bf16 -t -r 1 -s qwen2.5-1.5b "$out/lengths.txt" || echo "bench-cuda: the 1.5B step failed" >&2
[ -n "$BENCH_QUICK" ] ||
	"$bench" -d bf16 -t -r 1 -R -s qwen2.5-1.5b "$out/lengths.txt" || echo "bench-cuda: the 1.5B step with -R failed" >&2

peer="$shared/bench/peer_torch_grpo.py"
if [ ! -f "$peer" ]; then
	echo "bench-cuda: $peer not found (set GRPO_SHARED); no peer figures" >&2
	exit 0
fi
VARIANTS=${PEER_VARIANTS:-sdpa/padded,sdpa/packed} python3 "$peer" | tail -n 1 > "$out/peer.json"
python3 - "$out/ours-bf16.txt" "$out/peer.json" "$out/ours-train.txt" "$out/ours-train-recompute.txt" <<'PY'
import json, re, sys
ours = dict(re.findall(r"(\w+)=(\S+)", open(sys.argv[1]).readline()))
train = dict(re.findall(r"(\w+)=(\S+)", open(sys.argv[3]).readline()))
rc = dict(re.findall(r"(\w+)=(\S+)", open(sys.argv[4]).readline()))
peer = json.load(open(sys.argv[2]))
tps = float(ours["tokens_per_s"])
used = re.search(r"\((\d+) MiB in use on the device\)", open(sys.argv[1]).read())
gib = int(used.group(1)) / 1024 if used else float("nan")
tused = re.search(r"\((\d+) MiB in use on the device\)", open(sys.argv[3]).read())
print(f"training step (forward, backward, AdamW, copy back): {float(train['tokens_per_s']):,.0f} tokens/s ({train['seconds']} s), "
      f"{int(tused.group(1)) / 1024 if tused else float('nan'):.1f} GiB in use on the device")
if rc:
    print(f"  recomputing the layers: {float(rc['tokens_per_s']):,.0f} tokens/s ({rc['seconds']} s), "
          f"the model holds {int(rc['gpu_bytes']) / 2**30:.1f} GiB, not {int(train['gpu_bytes']) / 2**30:.1f}")
print(f"reference forward, {peer['gpu']}, torch {peer['torch']}, transformers {peer['transformers']}:")
print(f"  grpo-tools bf16: {tps:,.0f} tokens/s ({ours['seconds']} s, MFU {float(ours['mfu']):.1%}), "
      f"{gib:.1f} GiB in use on the device")
for k, v in peer.items():
    if isinstance(v, dict) and "ref_forward" in v:
        r = v["ref_forward"]
        print(f"  peer {k}: {r['tokens_per_s']:,} tokens/s, peak {r['peak_gib']} GiB"
              f" -> ratio {tps / r['tokens_per_s']:.2f}x")
    if isinstance(v, dict) and "train" in v:
        r = v["train"]
        print(f"  peer {k} training step (with AdamW): {r['tokens_per_s']:,} tokens/s, peak {r['peak_gib']} GiB"
              f" -> our training step {float(train['tokens_per_s']) / r['tokens_per_s']:.2f}x, "
              f"memory {(int(tused.group(1)) / 1024 if tused else float('nan')) / r['peak_gib']:.2f}x")
    if isinstance(v, dict) and "error" in v:
        print(f"  peer {k}: failed: {v['error']}")
PY
