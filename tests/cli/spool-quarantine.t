#!/bin/sh
# grpo-spool quarantine: a corrupt file that stops every grpo-pack run is
# moved aside to QUEUE/.quarantine/, and the packer goes on with the rest.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 16

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
# A disk that fails once the file is moved (a full one, exit 75; a bad one, 1): the message says it
# was moved and what failed; run again, it says the file is in quarantine already; a claim left is
# recover's to return.
grpo-cat --from-json -o "$r/d.zst" "$ex" && grpo-cat --from-json -o "$r/e.zst" "$ex" || exit 1
rm -rf "$T/s2" && cp -R "$S" "$T/s2"
GRPO_FSYS_TRACE=1 grpo-spool quarantine "$T/s2/scored/step_0/rank_0/d.zst" 2> "$T/trace"
last=$(grep -c '^fsys [0-9]' "$T/trace")   # its last call removes its claim record; 2 before, the flush
d=$S/scored/.quarantine/step_0/rank_0
GRPO_FSYS_FAIL_AT=$((last - 2)) grpo-spool quarantine "$r/d.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "75:grpo-spool: $r/d.zst: quarantined as $d/d.zst, but not flushed to disk: $r: fsync failed: No space left on device" \
	"a flush that fails after the move, the disk full: said so, exit 75"
GRPO_FSYS_FAIL_AT=$last:EIO grpo-spool quarantine "$r/e.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $r/e.zst: quarantined as $d/e.zst, but its claim stays until grpo-spool recover: $r/.claimed/e.zst: cannot remove: Input/output error" \
	"a claim record that cannot be removed, the disk failing: said so, exit 1"
grpo-spool quarantine -v "$r/d.zst" "$r/e.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-spool: $r/d.zst: quarantined already as $d/d.zst
grpo-spool: $r/e.zst: quarantined already as $d/e.zst" "run again, both are found in quarantine"
grpo-spool recover "$S" && grpo-spool status --json "$S" | grep '"queue":"scored"' | grep -q '"claimed":0'
is "$?:$(ls "$d" | tr '\n' ' ')" "0:b.zst d.zst e.zst " "recover returns the claim left; the files are kept aside"

# A file is known by where it is, not by its path's text: given from inside
# its rank directory or through a link to one it was 'not a published spool file'.
r3=$T/s3/scored/step_0/rank_0
grpo-cat --from-json -o "$r3/f.zst" "$ex" && grpo-cat --from-json -o "$r3/g.zst" "$ex" && ln -s "$r3" "$T/link" || exit 1
(cd "$r3" && grpo-spool quarantine f.zst) 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s3/scored/.quarantine/step_0/rank_0")" "0::f.zst" \
	"a file named from inside its rank directory is quarantined"
grpo-spool quarantine "$T/link/g.zst" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s3/scored/.quarantine/step_0/rank_0" | tr '\n' ' '):$(ls "$r3")" "0::f.zst g.zst :" \
	"and one named through a link to it"
(cd "$T/s3/scored/.quarantine/step_0/rank_0" && grpo-spool quarantine f.zst) 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: f.zst: not a published spool file (QUEUE/step_N/rank_X/NAME)" \
	"a quarantined file named from inside .quarantine is still no spool file"
