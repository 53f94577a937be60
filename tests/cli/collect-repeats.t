#!/bin/sh
# A record imported twice (a retried request logged again, a log appended to
# twice, `cat a a`) is published once: grpo-collect drops an exact repeat of a
# record it took before in the run (the same group_id, sequence ids, tokens
# and logprobs), warns with the count, and with -v names each and the record
# it repeats. Records that share only a group_id stay as they were.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 29

D=$GRPO_TOP/examples
W1='grpo-collect: warning: 1 record repeated an earlier one exactly: dropped'
records() { grpo-cat "$1" | wc -l | tr -d ' '; }
trajs() { grpo-cat "$1" | grep -o '"sequence_id"' | wc -l | tr -d ' '; }
# -v output less the lines every run prints (the input's counts, what was published)
quiet() { grep -v -e ' lines\? (' -e ': published ' -e 'already published:'; }

# vLLM: the same response twice in one file
head -1 "$D/vllm-completions.jsonl" > "$T/v1.jsonl"
cat "$T/v1.jsonl" "$T/v1.jsonl" > "$T/v2.jsonl"
grpo-collect -s 0 "$T/v2.jsonl" > "$T/v2.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:$W1" "vLLM line twice: exit 0, one warning with the count"
is "$(records "$T/v2.zst"):$(trajs "$T/v2.zst")" "1:2" "the group is written once"
grpo-collect -s 0 "$T/v1.jsonl" | cmp -s - "$T/v2.zst"
is "$?" 0 "the same bytes as the file read once"
grpo-collect -v -s 0 -o "$T/V" "$T/v2.jsonl" 2>&1 | quiet > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/v2.jsonl:2: group_id \"cmpl-3f0c9a1e\" repeats $T/v2.jsonl:1 exactly: dropped
$W1" "-v names the repeat and the line it repeats, and says no group_id is split"
is "$(cat "$T"/V/step_0/rank_0/*.zst | grpo-cat | wc -l | tr -d ' ')" 1 "published once into the spool"

# native: the first group of gsm8k-groups.jsonl three times
head -1 "$D/gsm8k-groups.jsonl" > "$T/n1.jsonl"
cat "$T/n1.jsonl" "$T/n1.jsonl" "$T/n1.jsonl" > "$T/n3.jsonl"
grpo-collect -v -s 0 "$T/n3.jsonl" 2>&1 > "$T/n3.zst" | quiet > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/n3.jsonl:2: group_id 0 repeats $T/n3.jsonl:1 exactly: dropped
grpo-collect: $T/n3.jsonl:3: group_id 0 repeats $T/n3.jsonl:1 exactly: dropped
grpo-collect: warning: 2 records repeated an earlier one exactly: dropped" "native group line three times: two dropped, each named"
is "$(records "$T/n3.zst")" 1 "one group published"

# SGLang and Atropos lines, each twice, a blank line between
sg='{"text":" 4","output_ids":[220,19],"meta_info":{"id":"s1","finish_reason":{"type":"stop"},"prompt_tokens":2,"input_token_logprobs":[[null,3838,null],[-0.5,30,null]],"output_token_logprobs":[[-0.25,220,null],[-0.125,19,null]]}}'
at='{"tokens":[[1,2,3],[1,2,4]],"masks":[[-100,2,3],[-100,2,4]],"scores":[1,0],"inference_logprobs":[[1,-0.5,-0.25],[1,-0.5,-0.75]]}'
printf '%s\n%s\n\n%s\n%s\n' "$sg" "$at" "$sg" "$at" > "$T/sa.jsonl"
grpo-collect -v -s 0 "$T/sa.jsonl" 2>&1 > "$T/sa.zst" | quiet | sed 's/group_id [0-9][0-9]*/group_id N/' > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/sa.jsonl:4: group_id \"s1\" repeats $T/sa.jsonl:1 exactly: dropped
grpo-collect: $T/sa.jsonl:5: group_id N repeats $T/sa.jsonl:2 exactly: dropped
grpo-collect: warning: 2 records repeated an earlier one exactly: dropped
grpo-collect: warning: 1 group of one member (its advantage is always 0)
grpo-collect: groups of one member: \"s1\"" "SGLang and Atropos repeats dropped, lines counted as in the file"
is "$(records "$T/sa.zst")" 2 "one SGLang group and one Atropos group written"

# native lone trajectory lines: a line repeated joins its group once
lone() { printf '{"group_id":%s,"sequence_id":%s,"prompt_tokens":[1],"response_tokens":[%s],"logprobs":[-1]}\n' "$@"; }
{ lone 5 1 2; lone 5 2 3; lone 5 1 2; } > "$T/lone.jsonl"
grpo-collect -v -s 0 "$T/lone.jsonl" 2>&1 > "$T/lone.zst" | quiet > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/lone.jsonl:3: group_id 5, sequence_id 1 repeats $T/lone.jsonl:1 exactly: dropped
$W1" "a lone trajectory line repeated is dropped"
is "$(records "$T/lone.zst"):$(trajs "$T/lone.zst")" "1:2" "its group holds the two sequences once each"

# across two inputs of one run, with -o: b.jsonl holds another group (of
# one member), then a's
W1b="$W1
grpo-collect: warning: 1 group of one member (its advantage is always 0)"
head -2 "$D/gsm8k-groups.jsonl" | tail -1 > "$T/b.jsonl"
cat "$T/n1.jsonl" >> "$T/b.jsonl"
grpo-collect -v -s 0 -o "$T/Q" "$T/n1.jsonl" "$T/b.jsonl" 2>&1 | quiet > "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-collect: $T/b.jsonl:2: group_id 0 repeats $T/n1.jsonl:1 exactly: dropped
$W1b
grpo-collect: groups of one member: 1" "a group repeated in a second input is dropped, naming the input it came from first"
is "$(cat "$T"/Q/step_0/rank_0/*.zst | grpo-cat | grep -o '^{"group_id":[0-9]*' | sort | tr '\n' ' ')" \
	'{"group_id":0 {"group_id":1 ' "each group published once"
grpo-collect -s 0 -o "$T/Q" "$T/n1.jsonl" "$T/b.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:$W1b" "a re-run publishes nothing more, and says the same"
is "$(ls "$T/Q/step_0/rank_0" | wc -l | tr -d ' ')" 2 "still one file per input"
# standard output too, the repeat in the second of three inputs
grpo-collect -s 0 "$T/n1.jsonl" "$T/n1.jsonl" "$T/v1.jsonl" 2> "$T/err" > "$T/o.zst"
is "$?:$(cat "$T/err"):$(records "$T/o.zst")" "0:$W1:2" "the same file named twice: its groups once"

# a sequence repeated inside one group record: the copy is dropped
t() { printf '{"sequence_id":%s,"prompt_tokens":[1,2],"response_tokens":[%s],"logprobs":[%s]}' "$@"; }
printf '{"group_id":7,"trajectories":[%s,%s,%s]}\n' "$(t 3 4 -0.5)" "$(t 4 5 -0.5)" "$(t 3 4 -0.5)" > "$T/in.jsonl"
grpo-collect -v -s 0 "$T/in.jsonl" 2>&1 > "$T/in.zst" | quiet > "$T/err"
is "$(cat "$T/err")" "grpo-collect: $T/in.jsonl:1: group_id 7, sequence_id 3 repeats $T/in.jsonl:1 exactly: dropped
$W1" "a sequence twice in one group: the copy dropped, named"
is "$(grpo-cat "$T/in.zst" | grep -o '"sequence_id":[0-9]*' | tr '\n' ' ')" '"sequence_id":3 "sequence_id":4 ' \
	"the group keeps the first and the other"
# ... and the group as it was taken is what a later copy repeats
grpo-collect -s 0 "$T/in.jsonl" "$T/in.jsonl" 2> "$T/err" | grpo-cat | wc -l > "$T/n"
is "$(cat "$T/err"):$(tr -d ' ' < "$T/n")" "grpo-collect: warning: 3 records repeated an earlier one exactly: dropped:1" \
	"the group line read again: its copy and the copy inside it dropped"

# not repeats: they stay as they were
# two samples alike, without sequence ids (an easy prompt's answer): both kept
u() { printf '{"prompt_tokens":[1,2],"response_tokens":[4],"logprobs":[-0.5]}'; }
printf '{"group_id":8,"trajectories":[%s,%s]}\n' "$(u)" "$(u)" > "$T/alike.jsonl"
grpo-collect -s 0 "$T/alike.jsonl" 2> "$T/err" > "$T/alike.zst"
is "$?:$(cat "$T/err"):$(trajs "$T/alike.zst")" "0::2" "identical samples without sequence ids are both kept"
# the same sequence_id with another response or other logprobs
printf '{"group_id":9,"trajectories":[%s,%s,%s]}\n' "$(t 1 4 -0.5)" "$(t 1 5 -0.5)" "$(t 1 4 -0.25)" > "$T/other.jsonl"
grpo-collect -s 0 "$T/other.jsonl" 2> "$T/err" > "$T/other.zst"
is "$?:$(cat "$T/err"):$(trajs "$T/other.zst")" "0::3" "a sequence_id with other content is not a repeat"
# a vLLM request's choices as lines of their own share an id: split, as before
c() { printf '{"id":"cmpl-9","choices":[{"index":%s,"finish_reason":"stop","logprobs":{"token_logprobs":[%s]},"token_ids":[%s],"prompt_token_ids":[1,2]}]}\n' "$@"; }
{ c 0 -0.5 4; c 1 -0.25 5; } > "$T/split.jsonl"
grpo-collect -v -s 0 "$T/split.jsonl" 2>&1 > "$T/split.zst" | quiet > "$T/err"
is "$(cat "$T/err")" "grpo-collect: warning: 2 groups of one member (its advantage is always 0)
grpo-collect: groups of one member: \"cmpl-9\"
grpo-collect: warning: 1 group_id split across inputs or repeated (each part is scored alone)
grpo-collect: split group_ids: \"cmpl-9\"" "vLLM choices as lines: split, nothing dropped"
is "$(records "$T/split.zst")" 2 "both lines written"
# the same group_id with other content, in one input and across two
sed 's/-0.0123/-0.0124/' "$T/n1.jsonl" > "$T/n1b.jsonl"
cat "$T/n1.jsonl" "$T/n1b.jsonl" > "$T/nn.jsonl"
grpo-collect -s 0 "$T/nn.jsonl" 2> "$T/err" > "$T/nn.zst"
is "$?:$(cat "$T/err"):$(records "$T/nn.zst")" \
	"0:grpo-collect: warning: 1 group_id split across inputs or repeated (each part is scored alone):2" \
	"group 0 with one logprob changed: not a repeat, split as before"
grpo-collect -s 0 "$T/n1.jsonl" "$T/n1b.jsonl" 2> "$T/err" > "$T/nn.zst"
is "$?:$(cat "$T/err"):$(records "$T/nn.zst")" \
	"0:grpo-collect: warning: 1 group_id split across inputs or repeated (each part is scored alone):2" \
	"and across two inputs"

# an input that failed published nothing: its records are not taken, so the
# next input's copy of them is published
printf '%s\nnot json\n' "$(cat "$T/n1.jsonl")" > "$T/bad.jsonl"
grpo-collect -s 0 -o "$T/F" "$T/bad.jsonl" "$T/n1.jsonl" 2> "$T/err"
is "$?:$(grep -c 'repeated' "$T/err")" "1:0" "the failed input (exit 1) leaves nothing taken"
is "$(cat "$T"/F/step_0/rank_0/*.zst | grpo-cat | wc -l | tr -d ' ')" 1 "its group is published from the next input"
# with -e skip the good lines of an input are taken, the bad one not
grpo-collect -s 0 -e skip "$T/bad.jsonl" "$T/n1.jsonl" 2> "$T/err" > "$T/sk.zst"
is "$?:$(grep -c 'repeated an earlier' "$T/err"):$(records "$T/sk.zst")" "0:1:1" \
	"-e skip: the good line is taken, its copy in the next input dropped"

# lone lines across inputs: the group made of an input's lines is published once
grpo-collect -s 0 "$T/lone.jsonl" "$T/lone.jsonl" 2> "$T/err" > "$T/ll.zst"
is "$(cat "$T/err"):$(records "$T/ll.zst"):$(trajs "$T/ll.zst")" \
	"grpo-collect: warning: 4 records repeated an earlier one exactly: dropped:1:2" \
	"lone lines read again: each dropped, no empty group written"
