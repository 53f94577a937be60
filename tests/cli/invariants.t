#!/bin/sh
# One set of invariants (check.h), run by the writer and the reader: the bad
# records of issue 9 are refused by grpo-cat --from-json, naming the line,
# the trajectory or position, and the field.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 14

g='"prompt_tokens":[1,2],"response_tokens":[3,4],"logprobs":[-0.5,-0.25]'
refuse() { # refuse JSON WANT-MESSAGE DESCRIPTION
	printf '%s\n' "$1" > "$T/in.jsonl"
	grpo-cat --from-json "$T/in.jsonl" > "$T/out.zst" 2> "$T/err"
	is "$?:$(cat "$T/err")" "1:grpo-cat: $T/in.jsonl:1: $2" "$3"
}
refuse '{"group_id":1,"trajectories":[{"prompt_tokens":[1,-5],"response_tokens":[3],"logprobs":[-1]}]}' \
	"trajectory 0: prompt_tokens[1] is -5, but a token id is at least 0" \
	"a token id of -5"
refuse '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[3,4],"logprobs":[-1,3.5]}]}' \
	"trajectory 0: logprobs[1] is 3.5, but a logprob is at most 0" \
	"a logprob of +3.5"
refuse "{\"group_id\":1,\"trajectories\":[{$g,\"temperature\":-2}]}" \
	"trajectory 0: temperature is -2, not above 0" \
	"a temperature of -2"
refuse "{\"group_id\":\"g\",\"trajectories\":[{$g,\"sequence_id\":-3}]}" \
	"trajectory 0: sequence_id is -3, but an integer id is at least 0, or -1 for none" \
	"a negative integer id: the message says what is taken"
printf '{"group_id":-1,"trajectories":[{%s,"sequence_id":-1}]}\n' "$g" | grpo-cat --from-json | grpo-cat > "$T/none.json"
is "$?:$(cat "$T/none.json")" '0:{"group_id":-1,"trajectories":[{"prompt_tokens":[1,2],"response_tokens":[3,4],"logprobs":[-0.5,-0.25],"sequence_id":-1,"group_id":-1,"policy_version":-1,"temperature":1}]}' \
	"and -1, no id given, is taken as the message says"

# A string that is not UTF-8 in a file from another writer (the JSON line
# reader refuses such bytes itself): grpo-cat printed it raw, its output no
# JSON; the reader refuses the record, naming it and the field.
printf '{"group_id":1,"trajectories":[{%s,"finish_reason":"st#op"}]}\n' "$g" | grpo-cat --from-json > "$T/fin.zst"
zstd -qdc "$T/fin.zst" | LC_ALL=C sed "s/st#op/st$(printf '\377')op/" | zstd -q --check > "$T/bad.zst"
grpo-cat "$T/bad.zst" > "$T/out.json" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/bad.zst: record 1: trajectory 0: finish_reason is not UTF-8 (its byte 3, 0xff, begins no valid character)" \
	"a spool file whose finish_reason holds the byte 0xff is refused, record and field named"
is "$(wc -c < "$T/out.json")" 0 "and no line of it is printed"

m='"input_ids":[1,2,3,4],"seq_lens":[2,2],"advantages":[0,0,0,0],"inference_logprobs":[0,0,0,0],"sequence_ids":[1,2],"group_ids":[1,1]'
refuse "{$m,\"position_ids\":[7,7,7,7],\"loss_mask\":[0,1,0,1],\"temperatures\":[1,1,1,1]}" \
	"position_ids[0] is 7, expected 0 (sequence 0 starts at 0)" \
	"position_ids 7,7,7,7"
refuse "{$m,\"position_ids\":[0,1,0,1],\"loss_mask\":[1,1,0,1],\"temperatures\":[1,1,1,1]}" \
	"loss_mask[0] is 1 on the first token of sequence 0" \
	"loss_mask set on a sequence start"
refuse "{$m,\"position_ids\":[0,1,0,1],\"loss_mask\":[0,2,0,1],\"temperatures\":[1,1,1,1]}" \
	"loss_mask[1]: expected 0, 1, false or true" \
	"loss_mask neither 0 nor 1"
refuse "{$m,\"position_ids\":[0,1,0,1],\"loss_mask\":[0,1,0,1],\"temperatures\":[1,-1,0,1]}" \
	"temperatures[1] is -1, not above 0" \
	"temperatures -1 and 0"
refuse "{$m,\"position_ids\":[0,1,0,1],\"loss_mask\":[0,1,0,1],\"temperatures\":[1,1,1,1],\"prompt_lens\":[1]}" \
	"1 prompt_lens for 2 sequences" \
	"per-sequence fields one per sequence"
refuse "{$m,\"position_ids\":[0,1,0,1],\"loss_mask\":[0,1,0,1],\"temperatures\":[1,1,1,1],\"prompt_lens\":[2,1]}" \
	"loss_mask[1] is 1 on a prompt token of sequence 0" \
	"loss_mask set on a prompt token"

printf '{%s,"position_ids":[0,1,0,1],"loss_mask":[0,1,0,1],"temperatures":[1,1,1,1],"prompt_lens":[1,1]}\n' "$m" |
	grpo-cat --from-json | grpo-cat > "$T/ok.json" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "a micro-batch that keeps them passes"
