#!/bin/sh
# One round of the loop, for cron: each run trains one step, and a run that
# was killed half way is finished by the next.
#
#   grpo-spool recover   returns the claims of a run that died
#   grpo-collect         samples a round from the newest policy (the initial
#                        model before the first step), walking the prompts
#                        file with a cursor kept in the spool;
#                        nothing new while a killed round is unfinished
#   grpo-score           scores everything waiting in rollouts/
#   grpo-pack --flush    packs everything waiting in scored/ as the next step
#   grpo-step            trains it and publishes policy/step_N, keeping the
#                        newest K checkpoints (and step_0)
#   grpo-spool gc        removes the finished steps of each queue but the
#                        newest K (a step of batches/ is finished once
#                        grpo-step has trained it, which retires its files)
#
# Silent on success, so that cron mails only trouble. Runs that overlap (a
# round slower than the crontab's period) do not: the later one finds the
# spool's lock held and exits 0 at once.
#
# Usage: sh examples/cron/round.sh SPOOL
# Environment: GRPO_BIN (the tools, default: the source tree's build/bin),
# GRPO_CRON_PROMPTS (prompts per round, 16), GRPO_CRON_SAMPLES (responses
# per prompt, 8), GRPO_CRON_KEEP (K, 3).
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
[ $# -eq 1 ] || { echo "usage: round.sh SPOOL" >&2; exit 2; }
spool=$1
prompts=${GRPO_CRON_PROMPTS:-16}
G=${GRPO_CRON_SAMPLES:-8}
keep=${GRPO_CRON_KEEP:-3}
task="$top/examples/addition"

mkdir -p "$spool"
exec 9> "$spool/.round.lock"
flock -n 9 || exit 0

grpo-spool recover "$spool"
if [ ! -d "$spool/init" ]; then
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 \
		--vocab 13 --eos 12 --tokenizer "$task/tokenizer.json" --seed 1 -o "$spool/init"
fi
model="$spool/policy"
[ -d "$spool/policy/step_0" ] || model="$spool/init"
mkdir -p "$spool/rollouts" "$spool/scored"
# A round killed half way is finished before another is sampled: while its
# rollouts wait in rollouts/ or scored/, or its step is packed but not yet
# trained, grpo-collect runs only to finish a batch that its cursor says was
# cut short, so that a kill neither doubles a step nor leaves every later
# round a step behind the policy.
step_of() { sed -n 's|^\(.*/\)\{0,1\}step_\([0-9][0-9]*\)\(/DONE\)\{0,1\}$|\2|p' | sort -n | tail -n 1; }
packed=$(ls -d "$spool"/batches/step_*/DONE 2> /dev/null | step_of)
trained=$(ls "$spool/policy" 2> /dev/null | step_of)
busy=
[ -n "$packed" ] && [ "$packed" -gt "${trained:-0}" ] && busy=1
grpo-spool status --json "$spool" | grep -E '"queue":"(rollouts|scored)"' | grep -qv '"waiting":0,"claimed":0' && busy=1
if [ -z "$busy" ] || [ -n "$(sed -n 2p "$spool/cursor" 2> /dev/null)" ]; then
	grpo-collect --model "$model" --prompts "$task/prompts.jsonl" --cursor "$spool/cursor" \
		--count "$prompts" -n "$G" --max-tokens 2 \
		--seed "$(head -n 1 "$spool/cursor" 2> /dev/null || echo 0)" -o "$spool/rollouts"
fi
grpo-score --reward gsm8k --ref "$spool/init" --metrics "$spool/score.jsonl" -o "$spool/scored" \
	"$spool/rollouts"
grpo-pack --seq-len 512 --flush -o "$spool/batches" "$spool/scored"
grpo-step --model "$spool/init" --batches "$spool/batches" -o "$spool/policy" --keep "$keep" \
	--lr 0.01 --entropy-coef 0.02 --metrics "$spool/step.jsonl"
grpo-spool gc "$spool" --keep-last "$keep"
