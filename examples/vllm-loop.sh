#!/bin/sh
# The GRPO loop with vLLM sampling: each step, grpo-collect asks vLLM for G
# samples of a batch of prompts, grpo-score rewards them, grpo-pack packs
# them, grpo-step trains and publishes policy/step_K, and a sync hook
# (examples/sync/) hands the new weights to vLLM before the next collection.
#
# Usage: sh examples/vllm-loop.sh MODEL PROMPTS [SPOOL]
#   MODEL    the initial model directory (Hugging Face: config.json,
#            safetensors, tokenizer.json), also the reference for the KL
#   PROMPTS  JSON lines with "prompt" (or "prompt_tokens") and "answer"
#   SPOOL    the spool (default: a new temporary directory); run again on
#            the same SPOOL, the loop goes on after its newest policy step
# Environment:
#   STEPS (10, the steps this run trains), G (8 samples a prompt), PROMPTS_PER_STEP (32), MAX_TOKENS (512),
#   TEMPERATURE (1), REWARD (gsm8k), LR (1e-6), SEQ_LEN (4096, the packed length)
#   SYNC     the hook after each step (default examples/sync/vllm-restart.sh;
#            vllm-reload.sh for a server started on SPOOL/policy/current)
#   VLLM_PORT (8000), VLLM_ARGS (extra `vllm serve` arguments)
#   GRPO_SERVER  an inference server already running (its URL): then none is
#            started here, and SYNC talks to it (VLLM_URL)
#   GRPO_BIN  where the grpo tools are (default: the build tree's)
# Needs a GPU with vLLM installed (`pip install vllm`), unless GRPO_SERVER.
#
# vLLM's logprobs are of the raw logits unless it runs with
# --logprobs-mode processed_logprobs: at a temperature other than 1 the
# sampler's logprobs then disagree with the trainer's, so that option is
# passed here by default (recent vLLM; remove it from VLLM_ARGS for older).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
[ $# -ge 2 ] || { echo "usage: sh examples/vllm-loop.sh MODEL PROMPTS [SPOOL]" >&2; exit 2; }
model=$(cd "$1" && pwd)
prompts=$2
spool=${3:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-vllm.XXXXXX")}
steps=${STEPS:-10}
G=${G:-8}
per_step=${PROMPTS_PER_STEP:-32}
sync=${SYNC:-$top/examples/sync/vllm-restart.sh}
port=${VLLM_PORT:-8000}
export VLLM_PORT="$port" VLLM_PID_FILE="$spool/vllm.pid" VLLM_LOG="$spool/vllm.log"
export VLLM_ARGS="${VLLM_ARGS---logprobs-mode processed_logprobs}"
export VLLM_URL="${GRPO_SERVER:-http://127.0.0.1:$port}"
mkdir -p "$spool/policy"
# a run killed while a stage held a file left its claim: hand it back
grpo-spool recover "$spool"

# Run again on the same spool: after the newest policy step, sampling from it.
newest=$(ls "$spool/policy" | sed -n 's/^step_\([0-9][0-9]*\)$/\1/p' | sort -n | tail -n 1)
weights=$model
[ -n "$newest" ] && weights="$spool/policy/step_$newest"

# The server: started here on the newest weights, and stopped on exit. One
# already running is synced to them, as a run killed between publishing a
# step and its sync left it on the weights before.
if [ -z "${GRPO_SERVER:-}" ]; then
	trap '[ -s "$VLLM_PID_FILE" ] && kill -TERM "-$(cat "$VLLM_PID_FILE")" 2> /dev/null || true' EXIT
	GRPO_POLICY_DIR=$weights sh "$top/examples/sync/vllm-restart.sh"
	echo "vllm-loop: vLLM on $weights at $VLLM_URL (log: $VLLM_LOG)"
elif [ -n "$newest" ]; then
	GRPO_POLICY_DIR=$weights GRPO_STEP=$newest GRPO_POLICY_QUEUE="$spool/policy" sh "$sync"
fi

# grpo-step runs the hook itself where it has --on-publish; else it runs here
# after each step, with the same environment.
on_publish=
grpo-step --help 2>&1 | grep -q -- '--on-publish' && on_publish=1

k=$((${newest:-0} + 1))
last=$((k + steps - 1))
while [ "$k" -le "$last" ]; do
	# a step packed by a run stopped before training it is trained as it is
	if [ ! -f "$spool/batches/step_$k/DONE" ]; then
		# --max-lag 0: never sample from weights older than the newest published
		grpo-collect --server "$VLLM_URL" --api vllm --prompts "$prompts" -n "$G" \
			--max-tokens "${MAX_TOKENS:-512}" --temperature "${TEMPERATURE:-1}" --count "$per_step" \
			--cursor "$spool/cursor" --max-lag 0 -o "$spool/rollouts"
		grpo-score --reward "${REWARD:-gsm8k}" --ref "$model" --metrics "$spool/score.jsonl" \
			-o "$spool/scored" "$spool/rollouts"
		grpo-pack --seq-len "${SEQ_LEN:-4096}" --step "$k" --flush -o "$spool/batches" "$spool/scored"
	fi
	if [ -n "$on_publish" ]; then
		grpo-step --model "$model" --batches "$spool/batches" --step "$k" -o "$spool/policy" \
			--lr "${LR:-1e-6}" --metrics "$spool/step.jsonl" --on-publish "sh $sync"
	else
		grpo-step --model "$model" --batches "$spool/batches" --step "$k" -o "$spool/policy" \
			--lr "${LR:-1e-6}" --metrics "$spool/step.jsonl"
		GRPO_POLICY_DIR="$spool/policy/step_$k" GRPO_STEP=$k GRPO_POLICY_QUEUE="$spool/policy" sh "$sync"
	fi
	echo "vllm-loop: step $k: $(tail -n 1 "$spool/score.jsonl")"
	k=$((k + 1))
done
