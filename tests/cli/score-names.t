#!/bin/sh
# grpo-score -o names an input's output so that a re-run finds it and only a
# re-run: a file of a queue keeps its name; another file's output is named by
# its base name and what it holds, so two inputs of one name in different
# directories (a cron job's day1/rollouts.zst, day2/rollouts.zst) both
# publish, and the same file scored again is dropped.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
cd "$T"
mkdir d1 d2
line() { printf '{"group_id":%s,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-1]},{"prompt_tokens":[1],"response_tokens":[4],"logprobs":[-1]}]}\n' "$1"; }
line 1 | grpo-cat --from-json -o d1/rollouts.zst || exit 1
line 2 | grpo-cat --from-json -o d2/rollouts.zst || exit 1

grpo-score -r length -m 9 -o out d1/rollouts.zst && grpo-score -r length -m 9 -o out d2/rollouts.zst 2> err
ok $? "two inputs named rollouts.zst: both scored"
is "$(grpo-cat out/step_0/rank_0/*.zst | grep -o '"group_id":[0-9]*,"traj' | sort | tr '\n' ' ')" \
	'"group_id":1,"traj "group_id":2,"traj ' "both published, neither taken for a re-run of the other: $(cat err)"
ls out/step_0/rank_0 | grep -q '^rollouts-[0-9a-f]\{16\}\.zst$'
ok $? "each under its base name and a hash of what it holds: $(ls out/step_0/rank_0 | tr '\n' ' ')"

grpo-score -v -r length -m 9 -o out d1/rollouts.zst 2> err
is "$?:$(ls out/step_0/rank_0 | wc -l | tr -d ' ')" "0:2" "the same file again: a re-run, its copy dropped"
grep -q 'already published (a re-run); d1/rollouts.zst not scored again' err
ok $? "and -v says so"

mkdir -p q/rollouts/step_4/rank_2
line 3 | grpo-cat --from-json -o q/rollouts/step_4/rank_2/g.zst || exit 1
grpo-spool consume q/rollouts -- grpo-score -r length -m 9 -o out
[ -f out/step_4/rank_2/g.zst ]
ok $? "a file of a queue, handed over by grpo-spool consume, keeps its step, rank and name"
