#!/bin/sh
# spool.example/, committed: a format compatibility guard. Its files were
# written by an earlier build from one step of the demo; this one must still
# read them, and they must hold what examples/make-spool-example.sh makes
# today.
. "$GRPO_TOP/tests/cli/lib.sh"
E="$GRPO_TOP/spool.example"
[ -d "$E" ] || skip_all "no spool.example/ in this tree"
plan 9

roll=$(ls "$E"/rollouts/step_0/rank_0/*.zst 2> /dev/null)
scored=$(ls "$E"/scored/step_0/rank_0/*.zst 2> /dev/null)
mbs=$(ls "$E"/batches/step_1/rank_*/*.zst 2> /dev/null)
n() { echo $# | tr -d ' '; }
is "$(n $roll):$(n $scored):$(n $mbs):$(ls "$E/policy")" "1:1:11:step_1" \
	"the example holds a rollout file, a scored file, a step of 11 micro-batches and a checkpoint"
zstd -q -t $roll $scored $mbs
is "$?" 0 "every file is a zstd frame whose checksum holds"
grpo-cat $roll > "$T/roll.json" 2> "$T/err"
is "$?:$(wc -l < "$T/roll.json" | tr -d ' '):$(cat "$T/err")" "0:55:" "the committed rollouts read: 55 groups"
grpo-cat $scored > "$T/scored.json" 2> "$T/err"
is "$?:$(grep -c '"ref_logprobs":.*"rewards":.*"advantages"' "$T/scored.json"):$(cat "$T/err")" "0:55:" "the committed scored groups read, with rewards, advantages and reference logprobs"
grpo-cat $mbs > "$T/mb.json" 2> "$T/err"
is "$?:$(grep -c '"input_ids"' "$T/mb.json"):$(cat "$T/err")" "0:11:" "the committed micro-batches read"
grep -q '"step":1,"ranks":1,"micro_batches_per_rank":11' "$E/batches/step_1/DONE"
is "$?" 0 "the step's DONE marker is there and counts them"
grpo-collect --model "$E/policy" --prompts "$GRPO_TOP/examples/addition/prompts.jsonl" --count 1 -n 2 \
	--max-tokens 2 2> "$T/err" | grpo-cat > "$T/sampled.json"
is "$?:$(grep -o '"policy_version":[0-9]*' "$T/sampled.json" | sort -u):$(cat "$T/err")" '0:"policy_version":1:' \
	"the committed checkpoint loads and samples, as policy version 1"

# the script makes the example with OpenBLAS's Haswell kernels, which need AVX2
if ! grep -qw avx2 /proc/cpuinfo 2> /dev/null; then
	skip "no AVX2 here: the example is what OpenBLAS's Haswell kernels make, and other kernels sample otherwise"
	skip "no AVX2 here: not remade"
	exit $_failed
fi
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
is "$same" "names" "with the same names, the same records (compared in the JSON view) and the same checkpoint"
