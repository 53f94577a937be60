#!/bin/sh
# A metrics file that cannot be written (a full disk: /dev/full) costs the
# metrics line, never the stage's output: grpo-score, grpo-pack and grpo-step
# each publish, exit 0 and say which file lost which line.
. "$GRPO_TOP/tests/cli/lib.sh"
[ -w /dev/full ] || skip_all "no /dev/full to stand for a full disk"
plan 6

d="$GRPO_TOP/tests/cli/step"
grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
grpo-cat --from-json -o "$T/groups.zst" "$d/groups.jsonl" || exit 1

grpo-score --reward length --max-len 8 -o "$T/scored" --metrics /dev/full "$T/groups.zst" 2> "$T/err"
ok $? "grpo-score exits 0"
[ -n "$(ls "$T/scored/step_0/rank_0/")" ] && grep -q '^grpo-score: /dev/full: No space left on device' "$T/err"
ok $? "it publishes the scored file and names the metrics file: $(cat "$T/err")"

grpo-pack -T 16 -W 1 -o "$T/b" --metrics /dev/full "$T/groups.zst" 2> "$T/err"
ok $? "grpo-pack exits 0"
[ -f "$T/b/step_1/DONE" ] && grep -q '^grpo-pack: /dev/full: No space left on device' "$T/err"
ok $? "it publishes the step and names the metrics file: $(cat "$T/err")"

grpo-step --model "$T/model" --batches "$T/b" -o "$T/policy" --lr 1e-3 --metrics /dev/full 2> "$T/err"
ok $? "grpo-step exits 0"
[ -f "$T/policy/step_1/model.safetensors" ] &&
	grep -q "^grpo-step: /dev/full: step 1's metrics line not written: No space left on device" "$T/err"
ok $? "it publishes step_1 and names the metrics file and the step: $(cat "$T/err")"
