#!/bin/sh
# examples/cron/: the crontab's command, run twice as cron runs it (through
# sh -c, no terminal, a bare environment) on a spool whose path holds a space,
# then round.sh while another round holds the spool.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v flock > /dev/null || skip_all "no flock(1) (util-linux)"
plan 11
# the command field of the crontab's entry (its first five fields are the
# times), round.sh named by $ROUND instead of its installed path
cmd=$(sed -n '/^[*0-9]/s/^\([^ \t]*[ \t]*\)\{5\}//p' "$GRPO_TOP/examples/cron/crontab" |
	sed 's|/usr/local/share/grpo-tools/examples/cron/round.sh|"$ROUND"|')
case $cmd in *'"$ROUND"'*) ok 0 "the crontab runs round.sh: $cmd" ;; *) ok 1 "the crontab runs round.sh: $cmd" ;; esac
S="$T/cron spool"
round() {
	env -i HOME="$T" PATH=/usr/bin:/bin SHELL=/bin/sh GRPO_BIN="$GRPO_BIN" SPOOL="$S" \
		ROUND="$GRPO_TOP/examples/cron/round.sh" GRPO_CRON_PROMPTS=4 GRPO_CRON_SAMPLES=4 GRPO_CRON_KEEP=1 \
		sh -c "$cmd" < /dev/null > "$T/out" 2>&1
}
round
is "$?:$(cat "$T/out")" "0:" "the first round trains step 1, silently"
round
is "$?:$(cat "$T/out")" "0:" "the second round trains step 2, silently"
is "$(cd "$S/policy" 2> /dev/null && ls -d step_* | tr '\n' ' ')" "step_0 step_2 " \
	"policy/step_2 is there, step_1 pruned (the newest one kept, and step_0)"
is "$(ls "$S/rollouts" "$S/scored" 2>&1 | tr '\n' ' ')" "$S/rollouts: step_1  $S/scored: step_1 " \
	"gc removed the finished steps but the newest"
grpo-spool status "$S" > "$T/status"
is "$?:$(grep -c claimed "$T/status")" "0:0" "nothing is left claimed"
# a round still running holds the lock: the next one skips, silently
flock "$S/.round.lock" env -i PATH=/usr/bin:/bin GRPO_BIN="$GRPO_BIN" \
	sh "$GRPO_TOP/examples/cron/round.sh" "$S" > "$T/out" 2>&1
is "$?:$(cat "$T/out"):$(ls -d "$S"/policy/step_* | wc -l | tr -d ' ')" "0::2" \
	"a round that finds another running exits 0 at once and trains nothing"

# A round killed half way (grpo-score or grpo-step at its first file-system
# call) is finished by the next, which samples nothing new: the policy it
# trains is the one two rounds never stopped train, and no extra step is
# packed behind it.
mkdir -p "$T/bin"
for t in grpo-collect grpo-score grpo-pack grpo-step grpo-spool grpo-init; do
	printf '#!/bin/sh\n[ "$CRASH_TOOL" = %s ] && export GRPO_FSYS_CRASH_AT=1\nexec "%s/%s" "$@"\n' \
		"$t" "$GRPO_BIN" "$t" > "$T/bin/$t"
	chmod +x "$T/bin/$t"
done
rounds() { # rounds SPOOL CRASH-TOOL...: one round per argument, that tool crashing in it (- none)
	_s=$1
	shift
	for _t; do
		env -i HOME="$T" PATH=/usr/bin:/bin GRPO_BIN="$T/bin" CRASH_TOOL="$_t" GRPO_CRON_PROMPTS=4 \
			GRPO_CRON_SAMPLES=4 sh "$GRPO_TOP/examples/cron/round.sh" "$_s" < /dev/null > /dev/null 2>&1
	done
}
rounds "$T/ref" - -
for t in grpo-score grpo-step; do
	rounds "$T/$t" - "$t" -
	cmp -s "$T/ref/policy/step_2/model.safetensors" "$T/$t/policy/step_2/model.safetensors"
	is "$?:$(head -n 1 "$T/$t/cursor"):$(ls "$T/$t/batches" | tr '\n' ' ')" "0:8:step_1 step_2 " \
		"$t killed in round 2: round 3 finishes it, policy/step_2 as without the kill, nothing more sampled or packed"
	grpo-spool status --json "$T/$t" | grep -v '"waiting":0,"claimed":0' | grep -c '"queue"' > "$T/left"
	is "$(cat "$T/left")" 0 "nothing waiting or claimed after it"
done
