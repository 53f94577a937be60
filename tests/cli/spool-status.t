#!/bin/sh
# grpo-spool status: what it says of claims whose record cannot be read, and
# of directories named like steps or ranks that no tool reads (step_01).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9

S=$T/spool
mkdir -p "$S/q/step_0/rank_0/.claimed"
grpo-cat --from-json -o "$S/q/step_0/rank_0/a.zst" "$GRPO_TOP/examples/gsm8k-groups.jsonl"
echo 'not a claim record' > "$S/q/step_0/rank_0/.claimed/a.zst"
grpo-spool status "$S" > "$T/out"
is "$?:$(grep claimed "$T/out" | sed 's/, [0-9]*s ago.*//')" \
	"0:  claimed step_0/rank_0/a.zst by (unreadable record)" \
	"a claim whose record cannot be read names no holder (no 'pid 0')"
grpo-spool status --json "$S" | grep -q '"claims":\[{"rank":0,"name":"a.zst","age":[0-9]*,"stale":false}\]'
ok $? "--json gives it no host or pid either"

# step_01 and rank_00 are no part of the spool (grpo-spool(5)): a consumer
# passes over them, so status and consume -v say so
S=$T/zeros
mkdir -p "$S/q/step_01/rank_0" "$S/q/step_1/rank_00" "$S/q/step_2/rank_0"
grpo-cat --from-json -o "$S/q/step_01/rank_0/a.zst" "$GRPO_TOP/examples/gsm8k-groups.jsonl"
cp "$S/q/step_01/rank_0/a.zst" "$S/q/step_1/rank_00/"
grpo-spool status "$S" > "$T/out" 2> "$T/err"
is "$?:$(sed 's/: not part of the spool, and no tool reads it: .*/: not part/' "$T/err" | tr '\n' ' ')" \
	"0:grpo-spool: $S/q/step_01: not part grpo-spool: $S/q/step_1/rank_00: not part " \
	"status warns of step_01 and step_1/rank_00, exit 0"
grep -q "steps and ranks are step_N and rank_X, N and X in decimal without leading zeros" "$T/err"
ok $? "and says how the spool names them"
grpo-spool consume -v "$S/q" -- true 2> "$T/err"
is "$?:$(grep -c 'not part of the spool' "$T/err")" "0:2" "consume -v says it passed over both"
grpo-spool consume "$S/q" -- true 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "consume without -v stays silent"
# the stages that consume a queue say the same with -v (and nothing without)
grpo-pack -v --seq-len 512 -o "$S/batches" "$S/q" 2> "$T/err"
is "$?:$(grep -c 'not part of the spool' "$T/err")" "0:2" "grpo-pack -v warns of both"
mkdir -p "$S/r/step_01/rank_0" "$S/r/step_0/rank_0"
cp "$S/q/step_1/rank_00/a.zst" "$S/r/step_01/rank_0/"
grpo-score -v --reward length --max-len 64 -o "$S/scored" "$S/r" 2> "$T/err"
is "$?:$(grep -c 'not part of the spool' "$T/err")" "0:1" "grpo-score -v warns of step_01"
mkdir -p "$S/batches/step_07"
grpo-step -v --model "$GRPO_TOP/spool.example/policy/step_1" --batches "$S/batches" -o "$S/policy" 2> "$T/err"
is "$(grep -c 'step_07: not part of the spool' "$T/err")" "1" "grpo-step -v warns of a step_07 in --batches"
