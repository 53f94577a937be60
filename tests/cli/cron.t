#!/bin/sh
# examples/cron/: round.sh run twice as cron runs it (no terminal, a bare
# environment), then while another round holds the spool.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
command -v flock > /dev/null || skip_all "no flock(1) (util-linux)"
round() {
	env -i HOME="$T" PATH=/usr/bin:/bin GRPO_BIN="$GRPO_BIN" GRPO_CRON_PROMPTS=4 GRPO_CRON_SAMPLES=4 \
		GRPO_CRON_KEEP=1 sh "$GRPO_TOP/examples/cron/round.sh" "$T/s" < /dev/null > "$T/out" 2>&1
}
round
is "$?:$(cat "$T/out")" "0:" "the first round trains step 1, silently"
round
is "$?:$(cat "$T/out")" "0:" "the second round trains step 2, silently"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' ')" "step_0 step_2 " \
	"policy/step_2 is there, step_1 pruned (the newest one kept, and step_0)"
is "$(ls "$T/s/rollouts" "$T/s/scored" | tr '\n' ' ')" "$T/s/rollouts: step_1  $T/s/scored: step_1 " \
	"gc removed the finished steps but the newest"
grpo-spool status "$T/s" > "$T/status"
is "$(grep -c claimed "$T/status")" "0" "nothing is left claimed"
# a round still running holds the lock: the next one skips, silently
flock "$T/s/.round.lock" env -i PATH=/usr/bin:/bin GRPO_BIN="$GRPO_BIN" \
	sh "$GRPO_TOP/examples/cron/round.sh" "$T/s" > "$T/out" 2>&1
is "$?:$(cat "$T/out"):$(ls -d "$T"/s/policy/step_* | wc -l | tr -d ' ')" "0::2" \
	"a round that finds another running exits 0 at once and trains nothing"
