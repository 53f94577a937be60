#!/bin/sh
# examples/watch.sh: the four stages started together on one spool, stopped
# by one signal, leaving nothing claimed and no process behind.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4
GRPO_WATCH_PROMPTS=4 GRPO_WATCH_SAMPLES=4 sh "$GRPO_TOP/examples/watch.sh" "$T/s" > "$T/out" 2> "$T/err" &
pid=$!
trap 'kill -TERM $pid 2> /dev/null; wait $pid; rm -rf "$T"' EXIT
i=0
while [ ! -f "$T/s/policy/step_2/config.json" ] && [ $i -lt 1500 ]; do
	sleep 0.2
	i=$((i + 1))
done
[ -f "$T/s/policy/step_2/config.json" ]
ok $? "the processes run the loop unattended: policy/step_2 appears"
kill -TERM $pid
wait $pid
is "$?:$(cat "$T/out" "$T/err")" "143:" "SIGTERM to the script stops it (status 143), silently"
left=$(ps -eo pid=,args= | grep -F "$T/s" | grep -v grep)
is "$left" "" "no process of the pipeline is left running"
grpo-spool status "$T/s" > "$T/status"
is "$(grep -c claimed "$T/status"):$(awk '$1 == "rollouts" || $1 == "scored" { c += $5 } END { print c + 0 }' "$T/status")" \
	"0:0" "nothing is left claimed"
