#!/bin/sh
# The metrics lines are what scripts and dashboards read: every key that
# grpo-score, grpo-pack and grpo-step write is named in its man page, and
# grpo-step(1)'s Metrics list names no key that is not written; grpo-pack(1)'s
# DONE manifest is a real one's keys.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to read the JSON lines"
plan 5
man="$GRPO_TOP/man"
check() { python3 "$GRPO_TOP/tests/cli/metrics-doc.py" "$@" 2>&1; }

grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
grpo-cat --from-json -o "$T/groups.zst" "$GRPO_TOP/tests/cli/step/groups.jsonl" || exit 1
grpo-score --reward length --max-len 8 -o "$T/scored" --metrics "$T/score.jsonl" \
	"$T/groups.zst" 2> /dev/null || exit 1
out=$(check "$man/grpo-score.1" ".It Fl x , Fl -metrics Ar file" "$T/score.jsonl")
ok $? "grpo-score's: $out"

# a step that drops a sequence too long for -T, then one with nothing left to pack
grpo-pack -T 16 -W 2 -o "$T/b" --metrics "$T/pack.jsonl" "$T/groups.zst" 2> /dev/null || exit 1
printf '{"group_id":9,"trajectories":[{"prompt_tokens":[1,2,3,4,5,6,7,8,9,10],"response_tokens":[1,2,3,4,5,6,7,8],"logprobs":[-1,-1,-1,-1,-1,-1,-1,-1],"advantages":1,"ref_logprobs":[-1,-1,-1,-1,-1,-1,-1,-1]}]}\n' |
	grpo-cat --from-json -o "$T/long.zst" || exit 1
grpo-pack -T 16 -W 2 --overlong skip --flush -o "$T/b" --metrics "$T/pack.jsonl" "$T/long.zst" 2> /dev/null
out=$(check "$man/grpo-pack.1" ".It Fl x , Fl -metrics Ar file" "$T/pack.jsonl") &&
	grep -q '^{"step":2,"sequences":0,"dropped":{[^}]*"overlong":1' "$T/pack.jsonl"
ok $? "grpo-pack's, a full step's and a step of drops alone: $out"

# a manifest of named files (with "job"), one of a queue whose file is packed
# in part, and the next, which finishes it
grpo-pack -T 16 -W 2 --batch-size 6 -o "$T/bq" "$T/scored" 2> /dev/null || exit 1
grpo-pack -T 16 -W 2 --flush -o "$T/bq" "$T/scored" 2> /dev/null || exit 1
cat "$T/b/step_1/DONE" "$T/bq/step_1/DONE" "$T/bq/step_2/DONE" > "$T/done.jsonl"
out=$(check "$man/grpo-pack.1" ".It Pa SPOOL/batches/step_N/DONE" "$T/done.jsonl" both)
ok $? "grpo-pack(1)'s DONE manifest has the keys of real ones, no more, no fewer: $out"

grpo-step --model "$T/model" --batches "$T/b" -o "$T/policy" --lr 1e-3 --epochs 2 --steps 1 \
	--metrics "$T/step.jsonl" 2> /dev/null || exit 1
out=$(check "$man/grpo-step.1" ".Ss Metrics" "$T/step.jsonl")
ok $? "grpo-step's: $out"
out=$(check "$man/grpo-step.1" ".Ss Metrics" "$T/step.jsonl" both)
ok $? "and grpo-step(1) names no key that it does not write: $out"
