#!/bin/sh
# spool.example/, committed: a format compatibility guard. Its files were
# written by an earlier build; this one must still read them, and they must
# hold what examples/make-spool-example.sh makes today.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7
E="$GRPO_TOP/spool.example"
[ -d "$E" ] || skip_all "no spool.example/ in this tree"

roll=$(ls "$E"/rollouts/step_0/rank_0/*.zst 2> /dev/null)
mbs=$(ls "$E"/batches/step_1/rank_*/*.zst 2> /dev/null)
is "$(echo $roll | wc -w | tr -d ' '):$(echo $mbs | wc -w | tr -d ' ')" "1:2" \
	"the example holds one rollout file and a micro-batch file for each of two ranks"
zstd -q -t $roll $mbs
is "$?" 0 "every file is a zstd frame whose checksum holds"
grpo-cat $roll > "$T/roll.json" 2> "$T/err"
is "$?:$(wc -l < "$T/roll.json" | tr -d ' '):$(cat "$T/err")" "0:3:" "the committed rollouts read: 3 groups"
grpo-cat $mbs > "$T/mb.json" 2> "$T/err"
is "$?:$(grep -c '"input_ids"' "$T/mb.json"):$(cat "$T/err")" "0:2:" "the committed micro-batches read: one per rank"
grep -q '"step":1,"ranks":2' "$E/batches/step_1/DONE"
is "$?" 0 "the step's DONE marker is there"

sh "$GRPO_TOP/examples/make-spool-example.sh" "$T/new" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "examples/make-spool-example.sh remakes it"
(cd "$E" && find . -type f | sort) > "$T/old.list"
(cd "$T/new" && find . -type f | sort) > "$T/new.list"
same=$(cmp -s "$T/old.list" "$T/new.list" && echo names)
for f in $(cat "$T/old.list"); do
	case $f in
	*.zst) [ "$(grpo-cat "$E/$f")" = "$(grpo-cat "$T/new/$f" 2>&1)" ] || same="$same, not $f" ;;
	*) cmp -s "$E/$f" "$T/new/$f" || same="$same, not $f" ;;
	esac
done
is "$same" "names" "with the same names and the same records (compared in the JSON view, not byte for byte)"
