#!/bin/sh
# Ids as given (issue 11): string and integer sequence_id and group_id kept
# exactly from native JSON through grpo-collect, grpo-score, grpo-pack and
# every JSON view; 42 and "42" are different ids; a group's members are kept
# together by the id given. rewards as a bare number is a list of one.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 8

traj() { # traj SEQUENCE_ID GROUP_ID RESPONSE_TOKEN
	printf '{"prompt_tokens":[1,2],"response_tokens":[%s],"logprobs":[-1],"sequence_id":%s,"group_id":%s}\n' "$3" "$1" "$2"
}
{
	traj '"cmpl-8f3a-1"' '"gsm8k-train-0042"' 3
	traj 42 '"42"' 4
	traj '"cmpl-8f3a-2"' '"gsm8k-train-0042"' 5
	traj '"42"' 42 6
	traj 7 '"42"' 7
	traj 8 42 8
} > "$T/in.jsonl"
grpo-collect --step 2 "$T/in.jsonl" > "$T/r.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "native JSON with string and integer ids is taken"
grpo-cat "$T/r.zst" | sed 's/"trajectories":.*//' > "$T/groups"
is "$(cat "$T/groups")" '{"group_id":"gsm8k-train-0042",
{"group_id":"42",
{"group_id":42,' "one group per id as given: \"42\" and 42 apart, each group's lines together"
ids() { grep -o '"sequence_id":[^,]*' | cut -d: -f2 | tr '\n' ' '; }
is "$(grpo-cat "$T/r.zst" | ids)" '"cmpl-8f3a-1" "cmpl-8f3a-2" 42 7 "42" 8 ' \
	"sequence_ids print back exactly as given, string or integer"
grpo-cat "$T/r.zst" > "$T/groups.full"
is "$(grpo-cat "$T/r.zst" | grpo-cat --from-json | grpo-cat | cmp - "$T/groups.full" 2>&1)" "" \
	"and read back through --from-json the same"

grpo-score --reward length --max-len 8 "$T/r.zst" > "$T/s.zst" 2> /dev/null &&
	grpo-pack --seq-len 64 --ranks 1 --step 2 "$T/s.zst" > "$T/mb.zst"
is "$?:$(grpo-cat "$T/mb.zst" | grep -o '"sequence_ids":[^]]*],"group_ids":[^]]*]')" \
	'0:"sequence_ids":["cmpl-8f3a-1","cmpl-8f3a-2",42,7,"42",8],"group_ids":["gsm8k-train-0042","gsm8k-train-0042","42","42",42,42]' \
	"scored and packed, the micro-batch's sequence_ids and group_ids are the ids as given"
is "$(grpo-cat "$T/mb.zst" | grep -o '"prompt_lens":.*"finish_reasons":[^]]*]')" \
	'"prompt_lens":[2,2,2,2,2,2],"policy_versions":[2,2,2,2,2,2],"rewards":[0,0,0,0,0,0],"finish_reasons":[null,null,null,null,null,null]' \
	"and per sequence, in the same order, its prompt length, policy version, combined reward and finish reason"
is "$(grpo-cat --stats --json "$T/s.zst" | grep -o '"groups":[0-9]*')" '"groups":3' "grpo-cat --stats counts the three groups"

# rewards written as one number (as a scalar reward is often written) is the
# list of one reward, as successes written before 1.1 is
printf '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"rewards":0.5,"reward_names":["r"],"advantages":1,"successes":1}]}\n' |
	grpo-cat --from-json > "$T/b.zst" 2> "$T/err"
is "$?:$(cat "$T/err"):$(grpo-cat "$T/b.zst" | grep -o '"rewards":[^,]*,"reward_names":[^,]*,"advantages":1,"successes":[^}]*')" \
	'0::"rewards":[0.5],"reward_names":["r"],"advantages":1,"successes":[1]' "a bare number in rewards reads as a list of one"
