#!/bin/sh
# Group integrity: groups of one member and a group_id split across inputs,
# reported by grpo-collect and by grpo-cat --stats (counts always, ids with -v).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 13

lone() { printf '{"group_id":%s,"prompt_tokens":[1],"response_tokens":[%s],"logprobs":[-1]}\n' "$1" "$2"; }
{ lone 5 2; lone 5 3; lone 9 3; lone 12 4; lone 12 5; } > "$T/a.jsonl"
{ lone 5 4; lone 11 3; lone 11 4; lone 9 6; } > "$T/b.jsonl"
{ lone 21 2; lone 21 3; } > "$T/c.jsonl"

grpo-collect --step 0 "$T/c.jsonl" > "$T/c.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "whole groups of two: silent"
grpo-collect --step 0 "$T/a.jsonl" "$T/b.jsonl" > "$T/ab.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-collect: warning: 3 groups of one member (its advantage is always 0)
grpo-collect: warning: 2 group_ids split across inputs or repeated (each part is scored alone)" \
	"groups of one member and a group_id split across inputs are reported, by count"
grpo-collect -v --step 0 "$T/a.jsonl" "$T/b.jsonl" 2>&1 > /dev/null | grep -v ' lines (' > "$T/err"
is "$(cat "$T/err")" "grpo-collect: warning: 3 groups of one member (its advantage is always 0)
grpo-collect: groups of one member: 5 9
grpo-collect: warning: 2 group_ids split across inputs or repeated (each part is scored alone)
grpo-collect: split group_ids: 5 9" "-v: groups of one member too, and the ids of both"

grpo-cat --stats "$T/ab.zst" | grep group > "$T/s"
is "$(cat "$T/s")" "records            6 (6 groups, 0 micro-batches)
groups of one      3
split group_ids    2" "grpo-cat --stats counts both"
is "$(grpo-cat --stats -v "$T/ab.zst" | grep -e '^groups of one' -e '^split')" "groups of one      3 (5 9)
split group_ids    2 (5 9)" "grpo-cat --stats -v lists their ids"
grpo-cat --stats --json -v "$T/ab.zst" | grep -q '"single_member_groups":3,"split_groups":2,"single_member_group_ids":\[5,9\],"split_group_ids":\[5,9\]}$'
is "$?" 0 "and --json says the same"
grpo-cat --stats --json "$T/c.zst" "$T/c.zst" | grep -q '"single_member_groups":0,"split_groups":1}$'
is "$?" 0 "the same group read twice is split too"

# string ids, as an OpenAI server's "cmpl-..." are kept, listed as JSON strings;
# the string "42" is not the integer 42 (grpo-cat(1))
r='"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1]'
for g in '"cmpl-8f3a"' 42 '"42"' '"a b"' '"a b"'; do
	printf '{"group_id":%s,"trajectories":[{%s}]}\n' "$g" "$r"
done | grpo-cat --from-json -o "$T/s.zst"
is "$(grpo-cat --stats -v "$T/s.zst" | grep -e '^groups of one' -e '^split')" 'groups of one      5 (42 "42" "a b" "cmpl-8f3a")
split group_ids    1 ("a b")' "grpo-cat --stats -v lists string ids as given, apart from the integer"
is "$(grpo-cat --stats --json -v "$T/s.zst" | grep -o '"single_member_groups.*')" \
	'"single_member_groups":5,"split_groups":1,"single_member_group_ids":[42,"42","a b","cmpl-8f3a"],"split_group_ids":["a b"]}' \
	"and --json as JSON strings"

# the same response twice in one input (a log concatenated with itself, a
# rotated log that overlaps): the copy is dropped (collect-repeats.t), so no
# group_id is split
v='{"id":"cmpl-7","choices":[{"finish_reason":"stop","logprobs":{"token_logprobs":[-0.5]},"token_ids":[4],"prompt_token_ids":[1,2]},{"finish_reason":"stop","logprobs":{"token_logprobs":[-0.25]},"token_ids":[5],"prompt_token_ids":[1,2]}]}'
printf '%s\n%s\n' "$v" "$v" > "$T/twice.jsonl"
grpo-collect -v --step 0 "$T/twice.jsonl" 2>&1 > "$T/twice.zst" | grep -v ' lines (' > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/twice.jsonl:2: group_id \"cmpl-7\" repeats $T/twice.jsonl:1 exactly: dropped
grpo-collect: warning: 1 record repeated an earlier one exactly: dropped" "a group repeated in one input is dropped, named"
is "$(grpo-cat --stats "$T/twice.zst" | grep '^split')" "split group_ids    0" "grpo-cat --stats finds nothing split"

# string ids (every vLLM or SGLang import has them) are counted by their text,
# and a string id that reads as a number is not the integer id
str() { printf '{"group_id":%s,"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1]}\n' "$1"; }
{ str '"g1"'; str '"g1"'; str '"g2"'; str '"42"'; str 42; } > "$T/s.jsonl"
grpo-collect --step 0 "$T/s.jsonl" 2> "$T/err" | grpo-cat --stats -v > "$T/s"
is "$(cat "$T/err")" "grpo-collect: warning: 3 groups of one member (its advantage is always 0)" \
	"string ids: one group of two, \"42\" and 42 apart, nothing split"
is "$(grep -a -e '^groups of one' -e '^split' "$T/s")" "groups of one      3 (42 \"42\" \"g2\")
split group_ids    0" "grpo-cat --stats counts string ids by their text"
