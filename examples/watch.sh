#!/bin/sh
# The loop as four processes sharing one spool, started together:
#
#   grpo-step  --watch   trains each step of batches/ as its DONE appears and
#                        publishes policy/step_N (first policy/step_0)
#   grpo-score --watch   scores every file published into rollouts/
#   grpo-pack  --watch   packs scored/ into batches/step_N, one round each
#   the collector        this script's loop: once policy/step_K is there,
#                        grpo-collect samples a round of prompts from it into
#                        rollouts/step_K, and waits for policy/step_K+1
#
# so step N+1 trains on what step N's policy sampled (on-policy, lag 0).
# One signal stops them all: SIGINT (^C, sent to the whole process group) or
# SIGTERM to this script, whose trap stops the three watchers with SIGTERM;
# each finishes the file in hand, releases its claims and exits, so
# `grpo-spool status SPOOL` shows nothing claimed afterwards.
#
# Usage: sh examples/watch.sh [SPOOL]   (default: a new temporary directory)
# Run again on the same SPOOL, it goes on after the newest policy step.
# Environment: GRPO_WATCH_STEPS (steps to train, then stop; 0, the default:
# until a signal), GRPO_WATCH_PROMPTS (prompts per round, 16),
# GRPO_WATCH_SAMPLES (responses per prompt, 8).
# Exit status: 0 when the steps ran or a signal stopped it, 1 when a process
# failed.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
spool=${1:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-watch.XXXXXX")}
steps=${GRPO_WATCH_STEPS:-0}
prompts=${GRPO_WATCH_PROMPTS:-16}
G=${GRPO_WATCH_SAMPLES:-8}
task="$top/examples/addition"

# the --watch consumers need their queues to exist
mkdir -p "$spool/rollouts" "$spool/scored" "$spool/batches"
if [ ! -d "$spool/init" ]; then
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 \
		--vocab 13 --eos 12 --tokenizer "$task/tokenizer.json" --seed 1 -o "$spool/init"
fi

# the claims of a process that died (kill -9) go back to their queues: the
# watchers pass over a claim held by another, and the round would never come
grpo-spool recover "$spool"

# Run again on the spool, it goes on where it stopped: round K is sampled
# from policy/step_K, so the first round is that of the newest step (P),
# unless that round was sampled before the stop (and its batch finished:
# a cursor holding a batch cut short is finished by the collector first);
# the trainer then trains STEPS more, on rounds up to P + STEPS - 1.
newest=$(ls "$spool/policy" 2> /dev/null | sed -n 's/^step_\([0-9][0-9]*\)$/\1/p' | sort -n | tail -n 1)
newest=${newest:-0}
k=$newest
[ -d "$spool/rollouts/step_$k" ] && [ -z "$(sed -n 2p "$spool/cursor" 2> /dev/null)" ] && k=$((k + 1))
end=$((newest + steps))

pids=
stop() { # stop STATUS: SIGTERM to every watcher, wait for them, exit
	trap - INT TERM
	[ -z "$pids" ] || kill -TERM $pids 2> /dev/null || true
	for p in $pids; do wait "$p" 2> /dev/null || true; done
	exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM

trainer_steps=
[ "$steps" -gt 0 ] && trainer_steps="--steps $steps"
grpo-step --watch $trainer_steps --model "$spool/init" --batches "$spool/batches" -o "$spool/policy" \
	--lr 0.01 --entropy-coef 0.02 --metrics "$spool/step.jsonl" &
trainer=$!
grpo-score --watch --reward gsm8k --ref "$spool/init" --metrics "$spool/score.jsonl" -o "$spool/scored" \
	"$spool/rollouts" &
pids="$! $trainer"
# one round of the collector's sequences makes a step
grpo-pack --watch --seq-len 512 --batch-size $((prompts * G)) -o "$spool/batches" "$spool/scored" &
pids="$! $pids"

# Wait for policy/step_K (published whole, by rename), while every watcher
# lives; 1 when the trainer is gone, having trained its steps or failed.
wait_policy() {
	while [ ! -f "$spool/policy/step_$1/config.json" ]; do
		for p in $pids; do
			kill -0 "$p" 2> /dev/null || return 1
		done
		sleep 0.2
	done
}

while [ "$steps" -eq 0 ] || [ "$k" -lt "$end" ]; do
	if ! wait_policy "$k"; then
		echo "watch.sh: a watcher exited before policy/step_$k appeared" >&2
		stop 1
	fi
	grpo-collect --model "$spool/policy" --prompts "$task/prompts.jsonl" --cursor "$spool/cursor" \
		--count "$prompts" -n "$G" --max-tokens 2 --seed "$k" -o "$spool/rollouts" || stop 1
	k=$((k + 1))
done
# the trainer stops after its steps; then the others
status=0
wait "$trainer" || status=1
pids=${pids% *}
stop $status
