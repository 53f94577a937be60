#!/bin/sh
# examples/gsm8k.sh: GRPO on GSM8K, here on the CPU with a tiny random model
# that has Qwen3's tokenizer and chat template (../shared), two questions a
# step: each step trains on the next training questions, the policy is
# evaluated before the first step, every EVAL_EVERY steps and after the
# last, and a second run on the spool goes on from its newest step.
. "$GRPO_TOP/tests/cli/lib.sh"
qwen3="$GRPO_SHARED/data/tokenizers/qwen3"
[ -f "$qwen3/tokenizer.json" ] && [ -f "$GRPO_SHARED/data/gsm8k/test.jsonl" ] ||
	skip_all "../shared's Qwen3 tokenizer or GSM8K is absent"
command -v jq > /dev/null || skip_all "jq is not installed (tools/install-deps.sh installs it)"
plan 7
grpo-init --preset tiny --vocab 151936 --eos 151645 --tokenizer "$qwen3/tokenizer.json" --seed 2 -o "$T/m" || exit 1
run() { STEPS=$1 G=2 PROMPTS_PER_STEP=2 MAX_TOKENS=4 EVAL_EVERY=2 EVAL_PROMPTS=3 EVAL_SAMPLES=2 \
	EVAL_TEMPERATURE=1 SEQ_LEN=1024 LR=1e-3 DEVICE=cpu \
	sh "$GRPO_TOP/examples/gsm8k.sh" "$T/m" "$GRPO_SHARED/data/gsm8k" "$T/s" > "$T/out" 2> "$T/err"; }
run 3
is "$?:$(cat "$T/err")" "0:" "three steps, silent on standard error"
is "$(grep -c '^ *[0-9]' "$T/out"):$(grep '^eval' "$T/out" | sed 's/solved [0-9.]*, pass@2 [0-9.]*/S/' | tr '\n' ' ')" \
	"3:eval  step 0: S over 3 test questions eval  step 2: S over 3 test questions eval  step 3: S over 3 test questions " \
	"a line a step; evaluated before step 1, at step 2 (EVAL_EVERY) and after the last"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' ')" "step_0 step_1 step_2 step_3 " "policy/step_0 to step_3"
is "$(grep -o '"gsm8k":{"sequences":6,' "$T/s/eval/step_3.json")" '"gsm8k":{"sequences":6,' \
	"an evaluation scores 2 answers to each of 3 test questions"
# the prompts: GSM8K's question with the instruction, in Qwen3's chat format
grpo-cat --tokenizer "$T/m/tokenizer.json" "$T"/s/rollouts/step_2/rank_0/*.zst | head -n 1 > "$T/g.json"
want=$(sed -n 5p "$GRPO_SHARED/data/gsm8k/train.jsonl" | jq -r .question | head -c 40)
grep -q '"prompt_text":"<|im_start|>user\\n'"$want" "$T/g.json"
ok $? "step 3 samples training questions 5 and 6, as a Qwen3 user turn"
is "$(cat "$T/s/cursor" | head -n 1)" 6 "the cursor walked 6 training questions"
run 4
is "$?:$(grep -c '^ *[0-9]' "$T/out"):$(grep -c '^eval  step 4' "$T/out"):$(cat "$T/s/cursor" | head -n 1)" "0:1:1:8" \
	"run again for STEPS=4: it trains step 4 alone, on questions 7 and 8, and evaluates it"
