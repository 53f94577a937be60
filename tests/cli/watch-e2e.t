#!/bin/sh
# End to end: collect -> score -> pack -> step for two steps, as --watch
# processes sharing one spool (examples/watch.sh), and step 2 trained on the
# rollouts that step 1's policy sampled.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
GRPO_WATCH_STEPS=2 GRPO_WATCH_PROMPTS=4 GRPO_WATCH_SAMPLES=4 timeout 300 \
	sh "$GRPO_TOP/examples/watch.sh" "$T/s" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out" "$T/err")" "0:" "two steps run and every process exits by itself, silently"
is "$(cd "$T/s/policy" && ls -d step_* | tr '\n' ' ')" "step_0 step_1 step_2 " \
	"the trainer published the initial policy and two steps"
# the sequences each step trained on, by the policy version that sampled them
versions() { grpo-cat "$T"/s/batches/step_$1/rank_*/*.zst | grep -o '"policy_versions":\[[0-9,]*\]' |
	sed 's/.*\[//; s/\]//' | tr ',' '\n' | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'; }
is "$(versions 1)" "0:16 " "step 1 trained on the 16 sequences the initial policy sampled"
is "$(versions 2)" "1:16 " "step 2 trained on the 16 sequences step 1's policy sampled"
is "$(wc -l < "$T/s/step.jsonl" | tr -d ' '):$(wc -l < "$T/s/score.jsonl" | tr -d ' ')" "2:2" \
	"one metrics line per step from the trainer, one per round from the scorer"
grpo-spool status "$T/s" > "$T/status"
is "$(grep -c 'claimed' "$T/status"):$(awk '$1 == "rollouts" || $1 == "scored" { w += $4; c += $5 } END { print w + 0, c + 0 }' "$T/status")" \
	"0:0 0" "nothing is left waiting or claimed in rollouts/ and scored/"
