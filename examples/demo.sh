#!/bin/sh
# A first look at grpo-tools: import a vLLM completions dump into a spool,
# look at what the spool holds, and pack scored groups into micro-batches.
# Run from the top of the source tree after `make`. Takes a spool directory
# (default: a fresh temporary one).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
spool=${1:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-demo.XXXXXX")}
say() { printf '\n$ %s\n' "$*"; }

say grpo-collect -o "$spool/rollouts" --step 0 --rank 0 examples/vllm-completions.jsonl
grpo-collect -o "$spool/rollouts" --step 0 --rank 0 "$top/examples/vllm-completions.jsonl"

say grpo-spool status "$spool"
grpo-spool status "$spool"

say grpo-cat --stats "$spool"/rollouts/step_0/rank_0/*.zst
grpo-cat --stats "$spool"/rollouts/step_0/rank_0/*.zst

say grpo-cat --head 1 "$spool"/rollouts/step_0/rank_0/*.zst
grpo-cat --head 1 "$spool"/rollouts/step_0/rank_0/*.zst

# Scoring is the next stage; examples/gsm8k-groups.jsonl holds groups with
# rewards and advantages already, as grpo-score writes them.
say "grpo-cat --from-json examples/gsm8k-groups.jsonl | grpo-pack --seq-len 64 --ranks 2 -o $spool/batches --step 1"
grpo-cat --from-json "$top/examples/gsm8k-groups.jsonl" |
	grpo-pack --seq-len 64 --ranks 2 -o "$spool/batches" --step 1

say cat "$spool/batches/step_1/DONE"
cat "$spool/batches/step_1/DONE"

say grpo-cat "$spool"/batches/step_1/rank_0/*.zst
grpo-cat "$spool"/batches/step_1/rank_0/*.zst

printf '\nThe spool is in %s; see man/grpo.7 for the pipeline.\n' "$spool"
