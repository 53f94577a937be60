#!/bin/sh
# Output that cannot be written (a full disk: /dev/full) is an error with a
# message, never exit 0, but 75, "later", as a full disk is everywhere:
# grpo-cat --stats and grpo-spool status print small reports through
# stdio, whose write errors show only at the end.
. "$GRPO_TOP/tests/cli/lib.sh"
[ -w /dev/full ] || skip_all "no /dev/full"
plan 6

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
tok="$GRPO_TOP/examples/addition/tokenizer.json"
grpo-cat --from-json -o "$T/spool/rollouts/step_0/rank_0/g.zst" "$ex" || exit 1
f=$T/spool/rollouts/step_0/rank_0/g.zst

grpo-cat --stats "$f" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-cat --stats to a full disk: exit 75, said"
grpo-cat --stats --json "$f" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-cat --stats --json likewise"
printf '"1+2="\n' > "$T/q.jsonl"
grpo-cat --tokenizer "$tok" --encode "$T/q.jsonl" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-cat --encode of a file: exit 75, said"
grpo-cat --tokenizer "$tok" --encode < "$T/q.jsonl" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-cat --encode from a pipe, answering line by line: likewise"
grpo-spool status "$T/spool" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-spool status to a full disk: exit 75, said"
grpo-spool status --json "$T/spool" > /dev/full 2> "$T/err"
is "$?:$(grep -c 'standard output' "$T/err")" "75:1" "grpo-spool status --json likewise"
