#!/bin/sh
# Records are numbered from 1 in every tool's messages, as lines are: the
# same bad record of the same input is "record 3" to grpo-pack, grpo-score
# (a file or standard input); the reader's and writer's own messages
# (tests/unit/test_sfile.c) and grpo-cat's count the same way.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
cd "$T"
d="$GRPO_TOP/tests/cli/pack"
grpo-cat --from-json -o tiny.zst "$d/tiny.jsonl" && grpo-pack -T 8 -W 2 -P 4 tiny.zst > mb.zst &&
	printf '%s\n' '{"group_id":5,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"sequence_id":50,"group_id":5}]}' |
	grpo-cat --from-json -o raw.zst
ok $? "two groups, micro-batches, an unscored group"

# two groups, then a micro-batch: the third record
cat tiny.zst mb.zst > mixed.zst
grpo-pack -T 8 -W 2 mixed.zst 2> err > /dev/null
grep -q 'mixed.zst: record 3: not a group of trajectories' err
ok $? "grpo-pack: $(cat err)"
grpo-score -r length -m 9 mixed.zst 2> err > /dev/null
grep -q 'mixed.zst: record 3 is not a rollout group' err
ok $? "grpo-score, a file: $(cat err)"
grpo-score -r length -m 9 < mixed.zst 2> err > /dev/null
grep -q '<stdin>: record 3 is not a rollout group' err
ok $? "grpo-score, standard input: $(cat err)"
cat tiny.zst raw.zst > unscored.zst
grpo-pack -T 8 -W 2 unscored.zst 2> err > /dev/null
grep -q 'unscored.zst: record 3: trajectory 0 (sequence_id 50) is not scored' err
ok $? "grpo-pack, a field of a record: $(cat err)"

# the first line of a JSON input is line 1 too
{ head -1 "$d/tiny.jsonl"; echo nonsense; } | grpo-cat --from-json 2> err > /dev/null
grep -q '<stdin>:2: ' err
ok $? "grpo-cat --from-json names line 2 of two: $(cat err)"
exit $_failed
