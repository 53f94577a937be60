#!/bin/sh
# grpo-collect: two runs given the same input at once, under other steps,
# must not both publish it. The first is held (SIGSTOP through the fsys
# hook) at its first rename, after its checks found nothing published; the
# second, another --step, runs meanwhile; then the first goes on.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
D="$GRPO_TOP/tests/data/collect"
Q="$T/sp/rollouts"
visible() { ls "$1" 2>/dev/null | grep -v '^\.' ; }

# where the first run's first rename falls, counted on a spool of its own
GRPO_FSYS_TRACE=1 grpo-collect -o "$T/count/rollouts" --step 4 --max-groups 2 "$D/vllm-completions.jsonl" \
	2> "$T/trace"
at=$(grep -m 1 '^fsys [0-9]* rename' "$T/trace" | cut -d ' ' -f 2)
[ -n "$at" ]
ok $? "the first run renames at fsys call $at"

GRPO_FSYS_CRASH_AT=$at GRPO_FSYS_CRASH_SIGNAL=$(perl -MPOSIX -e 'print SIGSTOP') \
	grpo-collect -o "$Q" --step 4 --max-groups 2 "$D/vllm-completions.jsonl" 2> "$T/err4" &
first=$!
i=0   # until it is stopped at that call
while kill -0 $first 2> /dev/null && [ "$(cut -d ' ' -f 3 /proc/$first/stat)" != T ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
grpo-collect -o "$Q" --step 5 --max-groups 2 "$D/vllm-completions.jsonl" 2> "$T/err5" &
second=$!
sleep 1   # time for it to check and publish, were it not made to wait
kill -CONT $first
wait $first
s4=$?
wait $second
s5=$?
is "$s4:$(visible "$Q/step_4/rank_0" | wc -l | tr -d ' ')" "0:$(visible "$T/count/rollouts/step_4/rank_0" | wc -l | tr -d ' ')" \
	"the first run publishes its parts: $(cat "$T/err4")"
is "$s5:$(visible "$Q/step_5/rank_0" | wc -l | tr -d ' ')" "1:0" \
	"the second, which waited for it, publishes nothing"
grep -q 'published already under step_4 (another --step)' "$T/err5"
ok $? "and says where the input went: $(cat "$T/err5")"
is "$(ls -A "$Q/.tmp" | wc -l | tr -d ' ')" 0 "no temporary is left"
