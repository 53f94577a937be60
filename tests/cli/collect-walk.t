#!/bin/sh
# grpo-collect --cursor walks the prompts file round-robin by places: a
# second pass over the file has new places, so new samples and group ids
# (grpo-collect(1), SAMPLING FROM A MODEL), and a batch started past the
# file's end is finished by the same command after a crash.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7
grpo-init --preset tiny --seed 3 -o "$T/m" > /dev/null || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3]}' '{"prompt_tokens":[4,5]}' > "$T/p.jsonl"
walk() { grpo-collect --model "$T/m" --prompts "$T/p.jsonl" -n 2 --max-tokens 4 --device cpu --count 2 "$@"; }
groups() { for f in "$1"/*.zst; do grpo-cat --json "$f"; done | grep -o '"group_id":[0-9]*,"traj' | tr -dc '0-9 \n' | sort -n | tr '\n' ' '; }
responses() { for f in "$1"/*.zst; do grpo-cat --json "$f"; done | grep -o '"prompt_tokens":\[1,2,3\],"response_tokens":\[[0-9,]*\]' | sort -u | wc -l | tr -d ' '; }

# two runs walk the file once each: the second pass is sampled anew (with a
# model directory, nothing else changes between the passes)
walk --cursor "$T/cur" -o "$T/s/rollouts" 2> "$T/err" && walk --cursor "$T/cur" -o "$T/s/rollouts" 2>> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/s/rollouts/step_0/rank_0" | wc -l | tr -d ' ')" "0::2" \
	"a second pass over the file publishes a second file (it was 'already published')"
is "$(groups "$T/s/rollouts/step_0/rank_0")" "0 1 2 3 " "the second pass has new places: group ids 2 and 3"
is "$(responses "$T/s/rollouts/step_0/rank_0")" 4 "the first row's two samples in each pass are four different responses"
is "$(cat "$T/cur")" 4 "the cursor holds the next place, 4 (row 0 of the third pass)"

# a run from --offset 6 (row 0 of the fourth pass) killed between writing its
# parts and renaming them: the same command again finishes the batch
calls=$(GRPO_FSYS_TRACE=1 walk --cursor "$T/c2" --offset 6 -o "$T/t/rollouts" 2>&1 | grep '^fsys' |
	grep -n rename_noreplace | head -n 1 | cut -d: -f1)
rm -rf "$T/t" "$T/c2"
GRPO_FSYS_CRASH_AT=$calls walk --cursor "$T/c2" --offset 6 -o "$T/t/rollouts" 2> /dev/null
st=$?
walk --cursor "$T/c2" --offset 6 -o "$T/t/rollouts" 2> "$T/err"
is "$st:$?:$(cat "$T/err")" "86:0:" "killed before its first rename, the same command again finishes the batch (it was refused)"
is "$(groups "$T/t/rollouts/step_0/rank_0"):$(cat "$T/c2")" "6 7 :8" "published once, as places 6 and 7; the cursor at 8"

# through a server with --seed, each prompt is sent the seed plus its place
# times -n (vLLM draws its samples from there, one apart): the second pass
# sends new seeds, not the first pass's again
if command -v python3 > /dev/null; then
	fake_server "$T/server"
	printf '%s\n' '{"prompt":"a"}' '{"prompt":"b"}' > "$T/ps.jsonl"
	for pass in 1 2; do
		grpo-collect --server "$URL" --prompts "$T/ps.jsonl" -n 2 --seed 9 --cursor "$T/sc" -o "$T/sv/rollouts" 2> /dev/null
	done
	is "$?:$(grep -o '"prompt": "[ab]".*"seed": [0-9]*' "$T/server/log" | sed 's/.*"prompt": "\([ab]\)".*"seed": /\1/' | sort | tr '\n' ' ')" \
		"0:a13 a9 b11 b15 " "--server --seed 9 -n 2: places 0 to 3 are sent 9, 11, 13 and 15 (the second pass sent the first's again)"
else
	skip "no python3 to run the fake server"
fi
