#!/bin/sh
# Counts in messages agree with their nouns: "1 group", "2 groups" (the
# messages printed "1 groups of one member", "none of its 1 answer", "the
# 1 files"; pack.t has the rolled-back file), the -v statistics lines and
# grpo-cat --stats too ("1 lines (native), 1 groups, 1 trajectories").
. "$GRPO_TOP/tests/cli/lib.sh"
plan 11
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

# -v and --stats: one of each, then two
grpo-collect -v "$T/one.jsonl" 2> "$T/err" > "$T/v1.zst"
is "$(sed -n 1p "$T/err")" "grpo-collect: $T/one.jsonl: 1 line (native), 1 group, 1 trajectory, 1 response token" \
	"grpo-collect -v: 1 line, group, trajectory and token"
grpo-collect -v "$T/two.jsonl" 2> "$T/err" > /dev/null
is "$(sed -n 1p "$T/err")" "grpo-collect: $T/two.jsonl: 2 lines (native), 2 groups, 2 trajectories, 2 response tokens" \
	"grpo-collect -v: 2 of each"
is "$(grpo-cat --stats "$T/v1.zst" | sed -n 1p)" "records            1 (1 group, 0 micro-batches)" "grpo-cat --stats: 1 group"
grpo-collect -s 0 -o "$T/sp/rollouts" "$T/one.jsonl" 2> /dev/null
grpo-spool consume -v "$T/sp/rollouts" -- true 2> "$T/err"
is "$(tail -n 1 "$T/err")" "grpo-spool: $T/sp/rollouts: 1 file, 1 scan, 0 events, 0 overflows, one pass" \
	"grpo-spool consume -v: 1 file, 1 scan"
grpo-spool gc -v "$T/sp" --keep-last 5 2> "$T/err"
is "$(cat "$T/err")" "grpo-spool: $T/sp: 0 steps removed, 0 archived, 0 old steps not finished" "grpo-spool gc -v: 0 steps"
exit $_failed
