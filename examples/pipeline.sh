#!/bin/sh
# The loop as a plain shell pipeline, one step at a time: no queue between
# the first three stages, only the micro-batches and the policy kept in the
# spool.
#
#   grpo-collect --model POLICY ... |     sample a round from the newest policy
#   grpo-score --reward gsm8k ... |       reward it, take reference logprobs
#   grpo-pack --step K -o SPOOL/batches   pack it as step K, with its DONE
#   grpo-step --step K ...                train step K, publish policy/step_K
#
# A stage that fails makes the next one see a short input, which it refuses,
# so the step stops there (and set -e stops the loop).
#
# Usage: sh examples/pipeline.sh [SPOOL]   (default: a new temporary directory)
# Run again on the same SPOOL, it goes on after the newest policy step.
# Environment: GRPO_PIPELINE_STEPS (steps to train, 10), GRPO_PIPELINE_PROMPTS
# (prompts per step, 16), GRPO_PIPELINE_SAMPLES (responses per prompt, 8).
# Prints the mean reward of each step's round; exit status 0, or 1 when a
# stage failed.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
spool=${1:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-pipeline.XXXXXX")}
steps=${GRPO_PIPELINE_STEPS:-10}
prompts=${GRPO_PIPELINE_PROMPTS:-16}
G=${GRPO_PIPELINE_SAMPLES:-8}
task="$top/examples/addition"

mkdir -p "$spool"
if [ ! -d "$spool/init" ]; then
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 \
		--vocab 13 --eos 12 --tokenizer "$task/tokenizer.json" --seed 1 -o "$spool/init"
fi

# after the newest policy step, when the spool has one (run again)
k=$(ls "$spool/policy" 2> /dev/null | sed -n 's/^step_\([0-9][0-9]*\)$/\1/p' | sort -n | tail -n 1)
k=$((${k:-0} + 1))
last=$((k + steps - 1))
while [ "$k" -le "$last" ]; do
	# before the first step there is no policy queue yet: sample from the initial model
	model="$spool/policy"
	[ -d "$spool/policy/step_0" ] || model="$spool/init"
	# a step packed by a run stopped before training it is trained as it is
	if [ ! -f "$spool/batches/step_$k/DONE" ]; then
		grpo-collect --model "$model" --prompts "$task/prompts.jsonl" --cursor "$spool/cursor" \
			--count "$prompts" -n "$G" --max-tokens 2 --seed "$k" |
			grpo-score --reward gsm8k --ref "$spool/init" --metrics "$spool/score.jsonl" |
			grpo-pack --seq-len 512 --step "$k" -o "$spool/batches"
	fi
	grpo-step --model "$spool/init" --batches "$spool/batches" --step "$k" -o "$spool/policy" \
		--lr 0.01 --entropy-coef 0.02 --metrics "$spool/step.jsonl"
	echo "step $k: mean reward $(sed -n 's/.*"mean": *\([-0-9.e+]*\).*/\1/p' "$spool/score.jsonl" | tail -1)"
	k=$((k + 1))
done
