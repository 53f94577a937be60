#!/bin/sh
# grpo-cat --model and --tokenizer read groups (grpo-collect's and
# grpo-score's files): given grpo-pack's micro-batch file they fail (exit 1)
# naming the file and record, where they used to print it without the
# model's logprobs or the text they were asked for.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5

grpo-init --preset tiny --seed 3 -o "$T/model" || exit 1
grpo-cat --from-json -o "$T/g.zst" "$GRPO_TOP/tests/cli/step/groups.jsonl" || exit 1
grpo-pack -T 64 -W 1 -o "$T/b" "$T/g.zst" > /dev/null || exit 1
mb="$T/b/step_1/rank_0/mb_0000.zst"

grpo-cat --model "$T/model" "$mb" > "$T/out" 2> "$T/err"
is $? 1 "--model on a micro-batch file: exit 1"
grep -q "mb_0000.zst: record 1: a micro-batch: --model and --tokenizer read groups" "$T/err"
ok $? "naming the file and the record ($(cat "$T/err"))"
grpo-cat --model "$T/model" --stats "$mb" > /dev/null 2>&1
is $? 1 "--model --stats on a micro-batch file: exit 1"
grpo-cat --model "$T/model" "$T/g.zst" > /dev/null
is $? 0 "--model on the groups it was packed from still runs"

tok="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
if [ -f "$tok" ]; then
	grpo-cat --tokenizer "$tok" "$mb" > /dev/null 2>&1
	is $? 1 "--tokenizer on a micro-batch file: exit 1"
else
	skip "no tokenizer at $tok"
fi
