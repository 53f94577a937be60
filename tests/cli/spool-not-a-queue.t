#!/bin/sh
# grpo-spool status, recover and gc take a SPOOL, consume and quarantine a
# QUEUE in it: a queue (or a step) given where the spool goes must be an
# error, not a spool of queues named step_N with nothing in them, which
# leaves a cron job's recover or gc doing nothing, in silence, for ever.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
S=$T/spool
for s in 0 1 2; do grpo-cat --from-json -o "$S/rollouts/step_$s/rank_0/g.zst" "$ex" || exit 1; done
grpo-spool consume "$S/rollouts" -- true
for cmd in status recover "gc --keep-last 1"; do
	grpo-spool $cmd "$S/rollouts" > "$T/out" 2> "$T/err"
	is "$?:$(cat "$T/out" "$T/err")" \
		"1:grpo-spool: $S/rollouts: a queue or a step, not a spool (it holds step_0): give the spool above it" \
		"${cmd%% *} of a queue is an error, naming it"
done
is "$(ls -A "$S/rollouts" | tr '\n' ' ')" ".tmp step_0 step_1 step_2 " "and nothing in it is touched"
