#!/bin/sh
# grpo-score over a file that was scored before: its rewards are replaced by
# the ones asked for, names and all, also where the earlier rewards came
# without reward_names (a file grpo-cat --from-json wrote from such lines).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 3
cd "$T"
traj() { # traj RESPONSE REWARD
	printf '{"prompt_tokens":[1],"response_tokens":%s,"logprobs":[-1],"ref_logprobs":[0],"rewards":[%s],"advantages":0,"successes":[0]}' "$1" "$2"
}
printf '{"group_id":1,"trajectories":[%s,%s]}\n' "$(traj '[2]' 0.5)" "$(traj '[4]' 1)" |
	grpo-cat --from-json -o in.zst || exit 1

grpo-score -r length -m 9 -o out in.zst 2> err
ok $? "a scored input without reward_names is scored again: $(cat err)"
is "$(grpo-cat out/step_0/rank_0/*.zst | grep -o '"reward_names":\[[^]]*\]' | sort -u)" '"reward_names":["length"]' \
	"its rewards are the new ones, named"
is "$(grpo-cat out/step_0/rank_0/*.zst | grep -o '"rewards":\[[^]]*\]' | tr '\n' ' ')" '"rewards":[0] "rewards":[0] ' \
	"the earlier rewards (0.5, 1) are gone"
