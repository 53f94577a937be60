#!/bin/sh
# A key twice in one JSON object, at any depth, is refused with the file,
# line and key (grpo-cat --from-json, grpo-collect's --answers and
# --prompts): cJSON's lookup took the first silently, where Python's json
# and jq take the last, so a line meant one thing here and another there.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4

t='{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-2],"reward":1}'
printf '{"group_id":1,"group_id":2,"trajectories":[%s]}\n' "$t" > "$T/top.jsonl"
grpo-cat --from-json -o "$T/top.zst" "$T/top.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T" | grep -c 'top.*zst')" \
	"1:grpo-cat: $T/top.jsonl:1: the key \"group_id\" appears twice in one object:0" \
	"--from-json: a group's key twice, nothing written"

printf '{"group_id":1,"trajectories":[%s]}\n' "$(echo "$t" | sed 's/"reward":1/"reward":1,"reward":0/')" > "$T/deep.jsonl"
grpo-cat --from-json -o "$T/deep.zst" "$T/deep.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/deep.jsonl:1: the key \"reward\" appears twice in one object" \
	"--from-json: a trajectory's key twice"

printf '%s\n' '{"group_id":1,"trajectories":[]}' | sed 's/\[\]/[{"a":{"b":1,"b":2}}]/' > "$T/nested.jsonl"
grpo-cat --from-json -o "$T/nested.zst" "$T/nested.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/nested.jsonl:1: the key \"b\" appears twice in one object" \
	"at any depth"

printf '%s\n' '{"index":0,"answer":"5","answer":"6"}' > "$T/answers.jsonl"
grpo-collect --step 0 --answers "$T/answers.jsonl" "$GRPO_TOP/tests/data/collect/native.jsonl" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/answers.jsonl:1: the key \"answer\" appears twice in one object" \
	"--answers: an answer given twice on one line"
