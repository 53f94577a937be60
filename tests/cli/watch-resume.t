#!/bin/sh
# examples/watch.sh run again on its spool, after it trained its steps or
# was stopped by a signal: it goes on where it stopped, each step still
# trained on what the step before it sampled (lag 0), as in a run never
# stopped, and no round sampled twice from one policy.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9
watch() { # watch SPOOL STEPS
	GRPO_WATCH_STEPS=$2 GRPO_WATCH_PROMPTS=4 GRPO_WATCH_SAMPLES=4 timeout 120 \
		sh "$GRPO_TOP/examples/watch.sh" "$1" > "$1.out" 2>&1
}
# the policy versions each step trained on, "N:V" for step N and version V
versions() {
	for d in "$1"/batches/step_*; do
		n=${d##*step_}
		grpo-cat "$d"/rank_*/*.zst | grep -o '"policy_versions":\[[0-9,]*\]' | sed 's/.*\[//; s/\]//' |
			tr ',' '\n' | sort -u | sed "s/^/$n:/"
	done | sort -n | tr '\n' ' '
}
watch "$T/u" 4
is "$?:$(cat "$T/u.out"):$(versions "$T/u")" "0::1:0 2:1 3:2 4:3 " "four steps never stopped, each on the step before's samples"

watch "$T/s" 2 && watch "$T/s" 2
is "$?:$(cat "$T/s.out")" "0:" "two steps, then two more on the same spool, silently"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' '):$(versions "$T/s")" \
	"step_0 step_1 step_2 step_3 step_4 :1:0 2:1 3:2 4:3 " \
	"the second run trains steps 3 and 4, on what steps 2 and 3 sampled"
cmp -s "$T/s/policy/step_4/model.safetensors" "$T/u/policy/step_4/model.safetensors"
is "$?:$(cat "$T/s/cursor")" "0:$(cat "$T/u/cursor")" "its step 4 is that of the run never stopped, its cursor too"

# stopped by SIGTERM (as ^C stops it) once step 2 is published, then two more steps
GRPO_WATCH_PROMPTS=4 GRPO_WATCH_SAMPLES=4 sh "$GRPO_TOP/examples/watch.sh" "$T/i" > "$T/i.out" 2>&1 &
pid=$!
i=0
while [ ! -f "$T/i/policy/step_2/config.json" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
wait $pid
is "$?" 143 "stopped by SIGTERM after step 2"
n=$(cd "$T/i/policy" && ls -d step_* | sed 's/step_//' | sort -n | tail -n 1)
watch "$T/i" 2
is "$?:$(cat "$T/i.out")" "0:" "run again, it trains two more steps"
want=$(i=1; while [ $i -le $((n + 2)) ]; do printf '%d:%d ' $i $((i - 1)); i=$((i + 1)); done)
is "$(versions "$T/i")" "$want" "steps 1 to $((n + 2)), each on what the step before sampled"

# its scorer killed holding round 4's rollouts (at its first output file's
# creation), then run again for one step: the claim is returned, not waited on
s=$T/s
grpo-collect --model "$s/policy" --prompts "$GRPO_TOP/examples/addition/prompts.jsonl" --cursor "$s/cursor" \
	--count 4 -n 4 --max-tokens 2 --seed 4 -o "$s/rollouts" || exit 1
score() { grpo-score --reward gsm8k --ref "$1/init" --metrics "$1/score.jsonl" -o "$1/scored" "$1/rollouts"; }
cp -R "$s" "$T/trace"
at=$(GRPO_FSYS_TRACE=1 score "$T/trace" 2>&1 | awk '$1 == "fsys" && $3 == "open_excl" { print $2; exit }')
GRPO_FSYS_CRASH_AT=$at score "$s" 2> /dev/null
is "$?:$(grpo-spool status "$s" | grep -c claimed)" "86:1" "grpo-score dies holding round 4's rollouts"
watch "$s" 1
is "$?:$(cat "$s.out"):$(versions "$s"):$(grpo-spool status "$s" | grep -c claimed)" \
	"0::1:0 2:1 3:2 4:3 5:4 :0" "run again for a step, it trains step 5 on them, nothing left claimed"
