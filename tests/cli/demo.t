#!/bin/sh
# examples/demo.sh, the README's main command: the four stages in a loop
# through one spool, and a random model that learns. The plain run checks
# the learning with a generous bound;
# under the sanitizers, which make every step many times slower, two steps
# check only that the loop runs and reports.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
if [ -n "$GRPO_SANITIZED" ]; then
	steps=2
else
	steps=30
fi
target=2 want=0   # a target never reached: every step runs
GRPO_DEMO_STEPS=$steps GRPO_DEMO_TARGET=$target sh "$GRPO_TOP/examples/demo.sh" "$T/s" > "$T/out" 2> "$T/err"
st=$?
is "$st:$(cat "$T/err")" "$want:" "the demo runs $steps steps at most, silent on standard error, exit $want"
first=$(sed -n 2p "$T/s/progress.tsv" | cut -f2)
last=$(tail -1 "$T/s/progress.tsv" | cut -f2)
n=$(($(wc -l < "$T/s/progress.tsv") - 1))
if [ -n "$GRPO_SANITIZED" ]; then
	is "$n" 2 "one progress line per step"
else
	best=$(tail -5 "$T/s/progress.tsv" | cut -f2 | sort -g | tail -1)
	awk -v a="$first" -v b="$best" 'BEGIN { exit !(a < 0.05 && b >= 0.08) }'
	is "$?" 0 "the mean reward climbs from the random model's level ($first) past 0.08 in the last 5 of $n steps ($best)"
fi
is "$(grep -c '^ *[0-9][0-9]*  *[0-9.][0-9.]*  *[-0-9.e][-0-9.e]*  *[0-9.][0-9.]*$' "$T/out")" "$n" "one line per step on standard output"
[ -f "$T/s/policy/step_$n/model.safetensors" ] && [ -f "$T/s/batches/step_$n/DONE" ]
is "$?" 0 "the spool holds the step's micro-batches and the policy it trained"
if command -v gnuplot > /dev/null; then
	head -c 8 "$T/s/progress.png" | od -An -c | grep -q 'P   N   G'
	is "$?" 0 "a PNG plot of reward and KL"
else
	is "$(grep -c 'gnuplot is not installed' "$T/out")" 1 "without gnuplot the demo says there is no plot"
fi
