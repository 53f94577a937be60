#!/bin/sh
# grpo-spool(5) documents the file format byte for byte: tests/cli/spool5.py,
# a second reader written from the page alone (in Python, through zstd -dc),
# decodes every kind of file this build writes, and those of version 1.0,
# and finds in each record what grpo-cat prints for it; between them the
# files hold every field of the page's three tables.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to run the page's own reader"

ex="$GRPO_TOP/spool.example"
v10="$GRPO_TOP/tests/data/spool-1.0"

agree() { # agree FILE DESCRIPTION: the page's reader and grpo-cat agree on FILE
	grpo-cat "$1" > "$T/cat.jsonl" && python3 "$GRPO_TOP/tests/cli/spool5.py" "$1" "$T/cat.jsonl" > "$T/out" 2>&1
	ok $? "$2: $(head -c 300 "$T/out")"
	cat "$T/out" >> "$T/all"
}
agree "$(ls "$ex"/rollouts/step_0/rank_0/*.zst)" "the example's rollouts"
agree "$(ls "$ex"/scored/step_0/rank_0/*.zst)" "its scored groups"
agree "$ex/batches/step_1/rank_0/mb_0000.zst" "a micro-batch of its step 1"
for f in rollouts scored mb; do
	agree "$v10/$f.zst" "a version 1.0 $f file"
done
# string ids, a response mask, two reward functions, a finish reason of the
# server's own, a run, no sampler logprobs, members with prompts and group
# ids of their own, arrays long enough to be stored byte-planar
grpo-cat --from-json -o "$T/rich.zst" "$GRPO_TOP/tests/cli/spool5-rich.jsonl" || exit 1
agree "$T/rich.zst" "groups with every optional field"
head -2 "$GRPO_TOP/tests/cli/spool5-rich.jsonl" | grpo-cat --from-json -o "$T/scored.zst" || exit 1
grpo-pack -T 64 -W 2 --separate-runs --max-lag 5 --step 4 -o "$T/b" "$T/scored.zst" || exit 1
for f in "$T"/b/step_4/rank_*/*.zst; do
	agree "$f" "micro-batch $(echo "$f" | sed 's|.*/step_4/||') of string ids, runs kept apart and a sequence without logprobs"
done
missing=$(python3 "$GRPO_TOP/tests/cli/spool5.py" --fields | while read -r fld; do
	grep -q " $fld[ /]\| $fld$" "$T/all" || printf ' %s' "$fld"; done)
is "$missing" "" "every field of the page's tables was in some file"
plan $_n
