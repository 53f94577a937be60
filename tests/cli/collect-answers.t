#!/bin/sh
# grpo-collect --answers that match no group: every answer would be dropped
# and every reward scored without one, so it is said (grpo-collect(1),
# ANSWERS); answers that match, or none given, stay silent.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4
g() { printf '{"trajectories":[{"prompt_tokens":[%s],"response_tokens":[2],"logprobs":[-0.5]},{"prompt_tokens":[%s],"response_tokens":[3],"logprobs":[-0.5]}]}\n' "$1" "$1"; }
{ g 1; g 2; g 3; } > "$T/in.jsonl"
# a data set's lines with an "id" of their own: keyed by it, they match nothing
printf '%s\n' '{"id":"gsm-1","question":"q1","answer":"#### 4"}' '{"id":"gsm-2","question":"q2","answer":"#### 5"}' \
	> "$T/ids.jsonl"
grpo-collect -a "$T/ids.jsonl" "$T/in.jsonl" > "$T/out.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"0:grpo-collect: warning: $T/ids.jsonl: none of its 2 answers matched any of the 3 groups imported (a line is keyed by its \"index\", else its \"id\", else its line number)" \
	"answers that match no group are warned of (they were dropped silently), exit 0"
is "$(grpo-cat --json "$T/out.zst" | grep -c '"answer"')" 0 "and no trajectory has an answer"
printf '%s\n' '{"question":"q1","answer":"#### 4"}' > "$T/rows.jsonl"
grpo-collect -a "$T/rows.jsonl" "$T/in.jsonl" 2> "$T/err" | grpo-cat --json | grep -c '"answer":"#### 4"' > "$T/n"
is "$(cat "$T/n"):$(cat "$T/err")" "1:" "an answer that matches one group of three: silent"
printf '%s\n' '{"index":1,"id":"gsm-1","answer":"7"}' > "$T/both.jsonl"
grpo-collect -a "$T/both.jsonl" "$T/in.jsonl" 2> "$T/err" | grpo-cat --json | sed -n 2p | grep -c '"answer":"7"' > "$T/n"
is "$(cat "$T/n"):$(cat "$T/err")" "1:" "a line with both keys is keyed by its index"
