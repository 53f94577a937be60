#!/bin/sh
# Remake spool.example/, the small spool committed with the sources: the
# rollouts grpo-collect makes of examples/vllm-completions.jsonl, and the
# micro-batches grpo-pack makes of the scored groups in
# examples/gsm8k-groups.jsonl, with the step's DONE marker. Its files are
# deterministic, and tests/cli/example.t checks that the committed ones still
# read (an old file must stay readable) and match what this script makes.
# Run from anywhere after `make`; takes the directory to write (default: the
# source tree's spool.example, replaced).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
out=${1:-$top/spool.example}
rm -rf "$out"
grpo-collect -o "$out/rollouts" --step 0 --rank 0 "$top/examples/vllm-completions.jsonl"
grpo-cat --from-json "$top/examples/gsm8k-groups.jsonl" |
	grpo-pack --seq-len 64 --ranks 2 -o "$out/batches" --step 1
# the publishers' temporary directories are empty and no packer holds the
# queue lock any more: leave no trace of them
rmdir "$out/rollouts/.tmp" "$out/batches/.tmp" 2> /dev/null || true
rm -f "$out/batches/.lock"
