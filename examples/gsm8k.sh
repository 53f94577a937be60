#!/bin/sh
# GRPO on GSM8K with a real model, sampled by grpo-collect itself (on the GPU
# where there is one and the CUDA kernels are built): each step samples G
# answers to the next PROMPTS_PER_STEP training questions from the newest
# policy, rewards the right final number (gsm8k), takes the initial model's
# logprobs for the KL, packs and trains, publishing policy/step_K. Before
# the first step, every EVAL_EVERY steps and after the last, it evaluates
# the newest policy on the first EVAL_PROMPTS test questions: the share
# solved, and pass@EVAL_SAMPLES where more than one answer is sampled.
#
# Usage: sh examples/gsm8k.sh MODEL GSM8K [SPOOL]
#   MODEL  the initial model directory (Hugging Face: config.json,
#          safetensors, tokenizer.json and, for CHAT=auto, its chat
#          template), also the reference for the KL
#   GSM8K  a directory with GSM8K's train.jsonl and test.jsonl
#          ({"question": ..., "answer": "... #### 72"} lines)
#   SPOOL  the spool (default: a new temporary directory); run again on the
#          same SPOOL, it goes on after its newest policy step, walking the
#          training questions on from where it stopped
# Environment: STEPS (20, the last step trained), G (8), PROMPTS_PER_STEP (32),
#   MAX_TOKENS (512), TEMPERATURE (1), LR (1e-6), SEQ_LEN (8192, the packed
#   length), CHAT (auto: the model's own chat format; none for a base model),
#   DEVICE (auto), EVAL_EVERY (10), EVAL_PROMPTS (200), EVAL_SAMPLES (1),
#   EVAL_TEMPERATURE (0: greedy), GRPO_BIN (the tools; default the build tree's)
# Each question is followed by the instruction verl's GSM8K recipe gives,
# to think step by step and write the answer after "####". Prints a line a
# step (mean reward of its samples, KL from the initial model, seconds) and
# a line an evaluation, also kept in SPOOL/eval/step_K.json (grpo-cat
# --stats --json). Needs jq. Exit status 0, or that of the stage that failed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
[ $# -ge 2 ] || { echo "usage: sh examples/gsm8k.sh MODEL GSM8K [SPOOL]" >&2; exit 2; }
command -v jq > /dev/null || { echo "gsm8k.sh: needs jq (apt-get install jq)" >&2; exit 1; }
model=$(cd "$1" && pwd)
data=$2
spool=${3:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-gsm8k.XXXXXX")}
case $spool in -*) spool=./$spool ;; esac
steps=${STEPS:-20}
G=${G:-8}
per_step=${PROMPTS_PER_STEP:-32}
max_tokens=${MAX_TOKENS:-512}
every=${EVAL_EVERY:-10}
chat=
[ "${CHAT:-auto}" = none ] || chat="--chat ${CHAT:-auto}"
device="--device ${DEVICE:-auto}"
num() { LC_ALL=C "$@"; }   # numbers in the C locale, whatever the user's

# the prompts files: the question and the instruction, the answer as GSM8K writes it
mkdir -p "$spool/eval"
for part in train test; do
	[ -s "$spool/$part.jsonl" ] && continue
	jq -c '{prompt: (.question + " Let'\''s think step by step and output the final answer after \"####\"."),
		answer: .answer}' "$data/$part.jsonl" > "$spool/$part.jsonl.tmp"
	mv "$spool/$part.jsonl.tmp" "$spool/$part.jsonl"
done
echo "grpo-tools: GRPO on GSM8K from $model in $spool ($device)"
grpo-spool recover "$spool"

# newest: the newest policy, or the initial model before the first step
newest() { if [ -d "$spool/policy/step_0" ]; then echo "$spool/policy"; else echo "$model"; fi; }
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" "$2" | tail -1; }

# evaluate K: the newest policy on the first EVAL_PROMPTS test questions
evaluate() {
	n=${EVAL_SAMPLES:-1}
	grpo-collect --model "$(newest)" --prompts "$spool/test.jsonl" --count "${EVAL_PROMPTS:-200}" --offset 0 \
		-n "$n" -t "${EVAL_TEMPERATURE:-0}" --max-tokens "$max_tokens" $chat $device |
		grpo-score --reward gsm8k --tokenizer "$model/tokenizer.json" |
		grpo-cat --stats --json > "$spool/eval/step_$1.json.tmp"
	mv "$spool/eval/step_$1.json.tmp" "$spool/eval/step_$1.json"
	solved=$(field success_rate "$spool/eval/step_$1.json")
	pass=
	[ "$n" -gt 1 ] && pass=", pass@$n $(sed -n "s/.*\"pass_at\":{[^}]*\"$n\":\([-0-9.e+]*\).*/\1/p" "$spool/eval/step_$1.json")"
	num printf 'eval  step %d: solved %.3f%s over %s test questions\n' "$1" "$solved" "$pass" "${EVAL_PROMPTS:-200}"
}

k=$(ls "$spool/policy" 2> /dev/null | sed -n 's/^step_\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1)
k=$((${k:-0} + 1))
[ -f "$spool/eval/step_$((k - 1)).json" ] || evaluate $((k - 1))
printf '%4s  %6s  %8s  %7s\n' step reward kl seconds
while [ "$k" -le "$steps" ]; do
	start=$(date +%s.%N)
	if [ ! -f "$spool/batches/step_$k/DONE" ]; then
		grpo-collect --model "$(newest)" --prompts "$spool/train.jsonl" --cursor "$spool/cursor" \
			--count "$per_step" -n "$G" -t "${TEMPERATURE:-1}" --max-tokens "$max_tokens" --seed "$k" \
			$chat $device -o "$spool/rollouts"
		grpo-score --reward gsm8k --ref "$model" $device --metrics "$spool/score.jsonl" -o "$spool/scored" \
			"$spool/rollouts"
	fi
	grpo-pack --seq-len "${SEQ_LEN:-8192}" --step "$k" --flush -o "$spool/batches" "$spool/scored"
	grpo-step --model "$model" --batches "$spool/batches" --step "$k" -o "$spool/policy" \
		--lr "${LR:-1e-6}" $device --metrics "$spool/step.jsonl"
	secs=$(num awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	num printf '%4d  %6.3f  %8.5f  %7s\n' "$k" "$(field mean "$spool/score.jsonl")" \
		"$(field kl "$spool/step.jsonl")" "$secs"
	if [ $((k % every)) -eq 0 ] || [ "$k" -eq "$steps" ]; then
		evaluate "$k"
	fi
	k=$((k + 1))
done
echo "Evaluations: $spool/eval/step_*.json; the policy: $spool/policy"
