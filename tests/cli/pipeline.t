#!/bin/sh
# examples/pipeline.sh: collect | score | pack, then step, one step at a time.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7
GRPO_PIPELINE_STEPS=2 GRPO_PIPELINE_PROMPTS=4 GRPO_PIPELINE_SAMPLES=4 \
	sh "$GRPO_TOP/examples/pipeline.sh" "$T/s" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "two steps run, silent on standard error"
is "$(sed 's/[0-9.]*$/R/' "$T/out" | tr '\n' ' ')" "step 1: mean reward R step 2: mean reward R " \
	"one line per step"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' ')" "step_0 step_1 step_2 " "policy/step_0, 1 and 2"
is "$(grpo-cat "$T"/s/batches/step_2/rank_*/*.zst | grep -o '"policy_versions":\[[0-9,]*\]')" \
	'"policy_versions":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' "step 2 trained on what step 1's policy sampled"

# run again on the same spool, it goes on after the newest policy step; a
# step packed by a run stopped before training it is trained, not sampled
# again: step 4 is that of four steps never stopped
pipeline() { GRPO_PIPELINE_STEPS=$2 GRPO_PIPELINE_PROMPTS=4 GRPO_PIPELINE_SAMPLES=4 \
	sh "$GRPO_TOP/examples/pipeline.sh" "$1" > "$1.out" 2> "$1.err"; }
pipeline "$T/u" 4 || exit 1
pipeline "$T/s" 1
is "$?:$(cat "$T/s.err"):$(cat "$T/s.out" | tr '\n' ' ')" "0::step 3: mean reward $(sed -n 3p "$T/u.out" | sed 's/.* //') " \
	"run again for one step, it trains step 3"
grpo-collect --model "$T/s/policy" --prompts "$GRPO_TOP/examples/addition/prompts.jsonl" --cursor "$T/s/cursor" \
	--count 4 -n 4 --max-tokens 2 --seed 4 |
	grpo-score --reward gsm8k --ref "$T/s/init" --metrics "$T/s/score.jsonl" |
	grpo-pack --seq-len 512 --step 4 -o "$T/s/batches" || exit 1
pipeline "$T/s" 1
is "$?:$(cat "$T/s.err"):$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' '):$(cat "$T/s/cursor")" \
	"0::step_0 step_1 step_2 step_3 step_4 :$(cat "$T/u/cursor")" \
	"step 4 packed, then run again: it trains step 4 and samples nothing more"
cmp -s "$T/s/policy/step_4/model.safetensors" "$T/u/policy/step_4/model.safetensors"
is "$?" 0 "policy/step_4 is that of four steps never stopped"
