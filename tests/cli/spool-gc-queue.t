#!/bin/sh
# grpo-spool gc --queue NAME prunes that queue: a name the spool has no
# queue of (a typo, or "rollouts/" as a shell completes it) must not pass
# for a queue with nothing to prune, which leaves a cron job filling the
# disk in silence.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
S=$T/spool
for s in 0 1 2; do grpo-cat --from-json -o "$S/rollouts/step_$s/rank_0/g.zst" "$ex" || exit 1; done
grpo-spool consume "$S/rollouts" -- true
steps() { ls "$S/rollouts" | tr '\n' ' '; }

grpo-spool gc "$S" --keep-last 1 --queue rollout 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "1:grpo-spool: $S/rollout: no such queue:step_0 step_1 step_2 " \
	"a queue the spool does not have is an error, and nothing is pruned"
grpo-spool gc "$S" --keep-last 1 --queue rollouts --queue scored 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "1:grpo-spool: $S/scored: no such queue:step_0 step_1 step_2 " \
	"one missing among several: nothing is pruned"
grpo-spool gc "$S" --keep-last 2 --queue rollouts/ 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "0::step_1 step_2 " "rollouts/, as a shell completes it, is the queue rollouts"
grpo-spool gc "$S" --keep-last 1 --queue rollouts 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "0::step_2 " "the queue named is pruned"
