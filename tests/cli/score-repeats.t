#!/bin/sh
# grpo-score reading a file that holds the same group twice (grpo-cat
# --from-json of a log read twice): its records are merged into one group,
# so the copies would be scored as members of their own group and make up
# its baseline. Each sequence that repeats one before it in its group
# exactly is dropped, with a warning that counts them; the rest stays.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7

# t SEQUENCE_ID RESPONSE_TOKENS [LOGPROBS]
t() { printf '{"sequence_id":%s,"prompt_tokens":[1,2],"response_tokens":[%s],"logprobs":[%s]}' "$1" "$2" "${3:--0.5}"; }
g0=$(printf '{"group_id":0,"trajectories":[%s,%s]}' "$(t 0 4)" "$(t 1 5,6 -0.5,-0.5)")
g1=$(printf '{"group_id":1,"trajectories":[%s,%s]}' "$(t 0 4)" "$(t 1 4)")
printf '%s\n%s\n%s\n' "$g0" "$g1" "$g0" | grpo-cat --from-json -o "$T/twice.zst"
printf '%s\n%s\n' "$g0" "$g1" | grpo-cat --from-json -o "$T/once.zst"

grpo-score -r length -m 8 "$T/twice.zst" > "$T/out.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-score: $T/twice.zst: warning: 2 sequences repeated one before them in their group exactly: dropped" \
	"a group read twice: exit 0, the copies counted"
grpo-score -r length -m 8 "$T/once.zst" > "$T/once-out.zst" 2> /dev/null
grpo-cat "$T/out.zst" > "$T/out.jsonl"
grpo-cat "$T/once-out.zst" > "$T/once.jsonl"
cmp -s "$T/out.jsonl" "$T/once.jsonl"
is "$?" 0 "scored as the file that holds it once: the same groups, rewards and advantages"

# the same on standard input, streamed: the copy next to its group is dropped
printf '%s\n%s\n%s\n' "$g1" "$g0" "$g0" | grpo-cat --from-json -o "$T/next.zst"
grpo-score -r length -m 8 < "$T/next.zst" 2> "$T/err" | grpo-cat | grep -o .sequence_id. | wc -l > "$T/n"
is "$(cat "$T/err"):$(grep -o '"sequence_id"' "$T/once.jsonl" | wc -l | tr -d ' ')" \
	"grpo-score: <stdin>: warning: 2 sequences repeated one before them in their group exactly: dropped:4" \
	"standard input: the copies that follow their group are dropped too"

# a sequence twice inside one group record
printf '{"group_id":3,"trajectories":[%s,%s,%s]}\n' "$(t 0 4)" "$(t 1 5)" "$(t 0 4)" |
	grpo-cat --from-json -o "$T/in.zst"
grpo-score -r length -m 8 "$T/in.zst" 2> "$T/err" | grpo-cat > "$T/in.jsonl"
is "$(cat "$T/err"):$(grep -o '"sequence_id":[0-9]*' "$T/in.jsonl" | tr '\n' ' ')" \
	"grpo-score: $T/in.zst: warning: 1 sequence repeated one before it in its group exactly: dropped:\"sequence_id\":0 \"sequence_id\":1 " \
	"a sequence twice in one group: the copy dropped"

# not repeats: the same group_id with another member, samples alike with other ids
g0b=$(printf '{"group_id":0,"trajectories":[%s]}' "$(t 2 4)")
printf '%s\n%s\n' "$g0" "$g0b" | grpo-cat --from-json -o "$T/more.zst"
grpo-score -r length -m 8 "$T/more.zst" 2> "$T/err" | grpo-cat > "$T/more.jsonl"
is "$?:$(cat "$T/err"):$(grep -o '"sequence_id"' "$T/more.jsonl" | wc -l | tr -d ' ')" "0::3" \
	"a group in two records of other members: merged, all kept, no warning"
grpo-score -r length -m 8 "$T/once.zst" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "0:" "group 1's two alike answers under two sequence ids: no warning"
grpo-score -o "$T/sp/scored" -r length -m 8 "$T/twice.zst" 2> "$T/err"
is "$?:$(grep -c 'exactly: dropped' "$T/err")" "0:1" "publishing into a queue warns the same"
