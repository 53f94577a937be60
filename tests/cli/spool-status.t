#!/bin/sh
# grpo-spool status: what it says of claims whose record cannot be read.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 2

S=$T/spool
mkdir -p $S/q/step_0/rank_0/.claimed
grpo-cat --from-json -o $S/q/step_0/rank_0/a.zst "$GRPO_TOP/examples/gsm8k-groups.jsonl"
echo 'not a claim record' > $S/q/step_0/rank_0/.claimed/a.zst
grpo-spool status $S > "$T/out"
is "$?:$(grep claimed "$T/out" | sed 's/, [0-9]*s ago.*//')" \
	"0:  claimed step_0/rank_0/a.zst by (unreadable record)" \
	"a claim whose record cannot be read names no holder (no 'pid 0')"
grpo-spool status --json $S | grep -q '"claims":\[{"rank":0,"name":"a.zst","age":[0-9]*,"stale":false}\]'
ok $? "--json gives it no host or pid either"
