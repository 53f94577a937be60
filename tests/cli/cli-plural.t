#!/bin/sh
# Counts in messages agree with their nouns: "1 group", "2 groups" (the
# messages printed "1 groups of one member", "none of its 1 answer", "the
# 1 files"; pack.t has the rolled-back file).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
g() { printf '{"trajectories":[{"prompt_tokens":[%s],"response_tokens":[2],"logprobs":[-0.5]}%s]}\n' "$1" "$2"; }
two=',{"prompt_tokens":[1],"response_tokens":[3],"logprobs":[-0.5]}'
g 1 > "$T/one.jsonl"
{ g 1; g 2; } > "$T/two.jsonl"
g 1 "$two" > "$T/pair.jsonl"

printf '%s\n' '{"id":"gsm-1","answer":"#### 4"}' > "$T/a1.jsonl"
grpo-collect -a "$T/a1.jsonl" "$T/one.jsonl" 2> "$T/err" > "$T/one.zst"
is "$(sed -n 2p "$T/err")" "grpo-collect: warning: $T/a1.jsonl: its 1 answer matched none of the 1 group imported (a line is keyed by its \"index\", else its \"id\", else its line number)" \
	"grpo-collect: one answer, one group"
grpo-collect -a "$T/a1.jsonl" "$T/two.jsonl" 2> "$T/err" > /dev/null
is "$(sed -n 2p "$T/err")" "grpo-collect: warning: $T/a1.jsonl: its 1 answer matched none of the 2 groups imported (a line is keyed by its \"index\", else its \"id\", else its line number)" \
	"grpo-collect: one answer, two groups"

grpo-score -r length -m 5 "$T/one.zst" 2> "$T/err" > /dev/null
is "$(cat "$T/err")" "grpo-score: $T/one.zst: 1 group of one member: no baseline, advantage 0" "grpo-score: 1 group"
grpo-collect "$T/two.jsonl" 2> /dev/null | grpo-score -r length -m 5 2> "$T/err" > /dev/null
is "$(cat "$T/err")" "grpo-score: <stdin>: 2 groups of one member: no baseline, advantage 0" "grpo-score: 2 groups"

{ g 1 "$two"; echo '{"nonsense":1}'; } > "$T/bad.jsonl"
grpo-collect -e skip "$T/bad.jsonl" 2> "$T/err" > /dev/null
is "$(tail -n 1 "$T/err")" "grpo-collect: $T/bad.jsonl: skipped 1 of 2 lines" "grpo-collect: 1 of 2 lines"
echo '{"nonsense":1}' > "$T/bad1.jsonl"
grpo-collect -e skip "$T/bad1.jsonl" 2> "$T/err" > /dev/null
is "$(tail -n 1 "$T/err")" "grpo-collect: $T/bad1.jsonl: skipped 1 of 1 line" "grpo-collect: 1 of 1 line"
exit $_failed
