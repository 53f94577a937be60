#!/bin/sh
# Progress on a terminal: grpo-collect (per prompt batch), grpo-score (per
# group) and grpo-step (per micro-batch) redraw one line on standard error
# when it is a terminal (a pseudo-terminal made by script(1)), and write
# nothing there when it is a file, as under cron.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v script > /dev/null || skip_all "no script(1) (util-linux) to make a pseudo-terminal"
script -qc true /dev/null < /dev/null > /dev/null 2>&1 || skip_all "script(1) cannot open a pseudo-terminal here"
plan 6
task="$GRPO_TOP/examples/addition"
grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 --vocab 13 --eos 12 \
	--tokenizer "$task/tokenizer.json" --seed 1 -o "$T/init" 2> "$T/err" || echo "# grpo-init failed: $(cat "$T/err")"
# q WORD: WORD quoted for a shell; the commands below are strings, as script(1)
# runs its command through one, and $T may hold a space
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# tty NAME COMMAND: run COMMAND with a terminal for standard error, its output in $T/NAME.tty
tty() { n=$1; shift; script -qc "$*" /dev/null < /dev/null > "$T/$n.tty" 2>&1; }
# the last state of the line: what follows the last carriage return that has text after it
line() { tr '\r' '\n' < "$T/$1.tty" | sed 's/\x1b\[K//g' | grep . | tail -1; }

collect="grpo-collect --model $(q "$T/init") --prompts $(q "$task/prompts.jsonl") --count 8 --batch 4 -n 4 --max-tokens 2"
tty collect "$collect -o $(q "$T/a/rollouts")"
is "$(line collect)" "grpo-collect: 8 of 8 prompts sampled" "grpo-collect shows the prompts sampled on a terminal"
eval "$collect" '-o "$T/b/rollouts"' 2> "$T/collect.err"
is "$?:$(cat "$T/collect.err")" "0:" "and nothing when standard error is a file"

score="grpo-score --reward gsm8k --ref $(q "$T/init")"
tty score "$score -o $(q "$T/a/scored") $(q "$T/a/rollouts")"
is "$(line score)" "grpo-score: 8 of 8 groups given reference logprobs" \
	"grpo-score shows the groups scored on a terminal"
eval "$score" '-o "$T/b/scored" "$T/b/rollouts"' 2> "$T/score.err"
is "$?:$(cat "$T/score.err")" "0:" "and nothing when standard error is a file"

for s in a b; do grpo-pack --seq-len 16 --step 1 -o "$T/$s/batches" "$T/$s/scored" 2>> "$T/err"; done
step="grpo-step --model $(q "$T/init") --lr 0.01"
tty step "$step --batches $(q "$T/a/batches") -o $(q "$T/a/policy")"
mbs=$(ls "$T"/a/batches/step_1/rank_0/*.zst | wc -l | tr -d ' ')
is "$(line step)" "grpo-step: $mbs of $mbs micro-batches" \
	"grpo-step shows the micro-batches trained on a terminal"
eval "$step" '--batches "$T/b/batches" -o "$T/b/policy"' 2> "$T/step.err"
is "$?:$(cat "$T/step.err")" "0:" "and nothing when standard error is a file"
