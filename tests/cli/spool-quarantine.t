#!/bin/sh
# grpo-spool quarantine: a corrupt file that stops every grpo-pack run is
# moved aside to QUEUE/.quarantine/, and the packer goes on with the rest.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
S=$T/spool
r=$S/scored/step_0/rank_0
grpo-cat --from-json -o "$r/a.zst" "$ex" && grpo-cat --from-json -o "$r/c.zst" "$ex" || exit 1
head -c 100 "$r/a.zst" > "$r/b.zst"
cp "$r/b.zst" "$T/b.orig"
grpo-pack -T 256 -o "$S/batches" "$S/scored" 2> "$T/err"
grpo-pack -T 256 -o "$S/batches" "$S/scored" 2>> "$T/err"
is "$?:$(grep -c 'b.zst: truncated' "$T/err")" "1:2" "a truncated file stops every grpo-pack run"

grpo-spool quarantine -v "$r/b.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-spool: $r/b.zst: quarantined as $S/scored/.quarantine/step_0/rank_0/b.zst" \
	"grpo-spool quarantine moves it aside, saying where with -v"
cmp -s "$T/b.orig" "$S/scored/.quarantine/step_0/rank_0/b.zst" && [ ! -e "$r/b.zst" ]
is "$?" 0 "the file is kept as it was, out of the queue"
grpo-pack -T 256 -o "$S/batches" "$S/scored"
is "$?:$(ls "$S/scored/step_0/rank_0/.done" | tr '\n' ' ')" "0:a.zst c.zst " "grpo-pack then packs the rest"
grpo-spool status --json "$S" | grep '"queue":"scored"' | grep -q '"waiting":0'
is "$?" 0 "status counts no waiting file, so gc may remove the step"

grpo-spool quarantine "$r/a.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $r/a.zst: consumed already ($r/.done/a.zst exists); nothing to quarantine" \
	"a consumed file is not quarantined"
grpo-spool quarantine "$T/b.orig" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/b.orig: not a published spool file (QUEUE/step_N/rank_X/NAME)" \
	"nor a file outside a spool"
grpo-spool quarantine 2> /dev/null
is "$?" 2 "no operand is a usage error"
# A quarantined file given again (a glob over QUEUE/*/step_0/...): .quarantine
# is not a queue, and nothing may nest a .quarantine/.quarantine in it.
q=$S/scored/.quarantine/step_0/rank_0/b.zst
grpo-spool quarantine "$q" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls -A "$S/scored/.quarantine" | tr '\n' ' ')" \
	"1:grpo-spool: $q: not a published spool file (QUEUE/step_N/rank_X/NAME):step_0 " \
	"a file in .quarantine is not quarantined again"
