#!/bin/sh
# examples/pipeline.sh: collect | score | pack, then step, one step at a time.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4
GRPO_PIPELINE_STEPS=2 GRPO_PIPELINE_PROMPTS=4 GRPO_PIPELINE_SAMPLES=4 \
	sh "$GRPO_TOP/examples/pipeline.sh" "$T/s" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "two steps run, silent on standard error"
is "$(sed 's/[0-9.]*$/R/' "$T/out" | tr '\n' ' ')" "step 1: mean reward R step 2: mean reward R " \
	"one line per step"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' ')" "step_0 step_1 step_2 " "policy/step_0, 1 and 2"
is "$(grpo-cat "$T"/s/batches/step_2/rank_*/*.zst | grep -o '"policy_versions":\[[0-9,]*\]')" \
	'"policy_versions":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]' "step 2 trained on what step 1's policy sampled"
