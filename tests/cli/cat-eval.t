#!/bin/sh
# grpo-cat --stats as the summary of an evaluation: how the responses ended
# and how long they were, and for scored groups each reward function's mean,
# solve rate and pass@k (the unbiased estimator over each group's members),
# and the groups whose members all got one reward; by hand on two groups,
# and on a model's samples scored by grpo-score, against its metrics and
# the groups' own successes.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9

# group 1: 4 members, 1 solved; group 2: 2 members, both solved
traj() { # traj GROUP SEQ REWARD FINISH LEN
	printf '{"prompt_tokens":[1],"response_tokens":[%s],"logprobs":[%s],"group_id":%s,"sequence_id":%s,"finish_reason":"%s","rewards":[%s],"reward_names":["gsm8k"],"successes":[%s],"advantages":0}' \
		"$(seq -s, 1 "$5")" "$(seq -s, 1 "$5" | sed 's/[0-9]*/-1/g')" "$1" "$2" "$4" "$3" "$3"
}
{
	printf '{"group_id":1,"trajectories":[%s,%s,%s,%s]}\n' "$(traj 1 0 1 stop 2)" "$(traj 1 1 0 length 8)" \
		"$(traj 1 2 0 stop 2)" "$(traj 1 3 0 stop 4)"
	printf '{"group_id":2,"trajectories":[%s,%s]}\n' "$(traj 2 4 1 stop 3)" "$(traj 2 5 1 stop 5)"
} | grpo-cat --from-json -o "$T/s.zst" || exit 1
grpo-cat --stats "$T/s.zst" > "$T/out"
is "$(grep '^responses' "$T/out")" \
	"responses          mean 4.0 tokens, max 8; finish reasons: stop 5, length 1 (16.7%), other 0, none 0" \
	"responses: mean and longest length, finish reasons"
is "$(grep '^reward ' "$T/out")" "reward             mean 0.5 over 6 scored sequences; 1 of 2 groups all of one reward" \
	"the mean reward, and group 2 all of one reward (no advantage)"
# pass@1: (1/4 + 1) / 2; pass@2: (1 - C(3,2)/C(4,2) + 1) / 2 = 0.75; pass@4: group 1 alone, 1
is "$(grep '^  gsm8k' "$T/out")" "  gsm8k            mean 0.5, std 0.5, solved 0.5, pass@1 0.625, pass@2 0.75, pass@4 1 (1 of 2 groups)" \
	"gsm8k: solved by sequence, pass@k by group, pass@4 over the one group that large"
grpo-cat --stats --json "$T/s.zst" > "$T/out.json"
is "$(grep -o '"finish_reasons":{[^}]*},"scored_sequences":6,"reward_mean":0.5,"scored_groups":2,"zero_std_groups":1' "$T/out.json" | wc -l | tr -d ' '):$(grep -o '"gsm8k":{"sequences":6,"mean":0.5,"std":0.5,"success_rate":0.5,"pass_at":{"1":0.625,"2":0.75,"4":1}}' "$T/out.json" | wc -l | tr -d ' ')" \
	"1:1" "--json: the same as members of the object"

grpo-cat --from-json -o "$T/r.zst" <<'J'
{"group_id":7,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-1]},{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"finish_reason":"stop"}]}
J
grpo-cat --stats "$T/r.zst" > "$T/out"
is "$(grep -c '^reward\|^  ' "$T/out"):$(grep '^responses' "$T/out")" \
	"0:responses          mean 1.5 tokens, max 2; finish reasons: stop 1, length 0 (0.0%), other 0, none 1" \
	"rollouts not scored: responses and finish reasons, no reward lines"

# a model's samples, 6 prompts x 16, scored: the numbers grpo-score's metrics give, and
# pass@16 the share of prompts answered right at least once
grpo-init --preset tiny --vocab 13 --eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 4 \
	-o "$T/a" || exit 1
head -n 6 "$GRPO_TOP/examples/addition/prompts.jsonl" > "$T/p.jsonl"
grpo-collect --model "$T/a" --prompts "$T/p.jsonl" -n 16 --max-tokens 2 --seed 3 |
	grpo-score --reward gsm8k --tokenizer "$T/a/tokenizer.json" --metrics "$T/m.jsonl" > "$T/e.zst" || exit 1
grpo-cat --stats --json "$T/e.zst" > "$T/e.json"
# the solve rate, mean reward and groups of one reward, as grpo-score's metrics line has them
field() { grep -o "\"$1\":[0-9.e-]*" "$2" | head -n 1 | cut -d: -f2; }
same() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; print (d < 1e-6 && d > -1e-6) ? "=" : a "!=" b }'; }
is "$(same "$(field success_rate "$T/e.json")" "$(field success_rate "$T/m.jsonl")") $(same "$(field mean "$T/e.json")" "$(field mean "$T/m.jsonl")") $(same "$(field zero_std_groups "$T/e.json")" "$(field zero_std_groups "$T/m.jsonl")")" \
	"= = =" "the solve rate, mean and groups of one reward are those of grpo-score's metrics ($(field success_rate "$T/m.jsonl"))"
groups=$(grpo-cat "$T/e.zst" | grep -c '"successes":\[1\]')
p16=$(grep -o '"16":[0-9.e-]*' "$T/e.json" | cut -d: -f2)
is "$(awk -v p="$p16" -v g="$groups" 'BEGIN { d = p - g / 6; print (d < 1e-5 && d > -1e-5) ? "same" : p " vs " g "/6" }'):$([ "$groups" -gt 0 ] && [ "$groups" -lt 6 ] && echo between)" \
	"same:between" "pass@16 is the share of the 6 groups with a right answer ($groups, pass@16 $p16)"

# pass@k in grpo-score's metrics, groups of 3 and of 12 alternating: scored
# whole from a file, and streamed from standard input group by group (its
# sums added up), both what grpo-cat --stats says of the scored groups
grpo-cat "$T/e.zst" | jq -c -n '[inputs] | to_entries[] | .value as $g |
	$g | .trajectories |= .[0:(if $g.group_id % 2 == 0 then 3 else 12 end)]' |
	grpo-cat --from-json -o "$T/cut.zst" || exit 1
grpo-score --reward gsm8k --tokenizer "$T/a/tokenizer.json" --metrics "$T/mf.jsonl" "$T/cut.zst" > "$T/f.zst" 2> /dev/null &&
	grpo-score --reward gsm8k --tokenizer "$T/a/tokenizer.json" --metrics "$T/ms.jsonl" < "$T/cut.zst" > /dev/null 2>&1 ||
	exit 1
grpo-cat --stats --json "$T/f.zst" | jq -c '.rewards.gsm8k.pass_at' > "$T/pc"
jq -c '.rewards.gsm8k.pass_at' "$T/mf.jsonl" > "$T/pf"
jq -c '.rewards.gsm8k.pass_at' "$T/ms.jsonl" > "$T/ps"
close() { jq -n --slurpfile a "$1" --slurpfile b "$2" \
	'$a[0] | keys_unsorted == ($b[0] | keys_unsorted) and all(to_entries[]; (.value - $b[0][.key] | fabs) < 1e-5)'; }
is "$(jq -r 'keys_unsorted | join(",")' "$T/pf"):$(close "$T/pf" "$T/pc"):$(close "$T/ps" "$T/pc")" "1,2,4,8,12:true:true" \
	"grpo-score's pass_at, from a file and streamed, is grpo-cat's: $(cat "$T/pf") $(cat "$T/pc")"

# A reward program names its rewards: a name's escape and line breaks are
# shown escaped in the summary, not sent to the terminal
printf '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"rewards":[1],"reward_names":["a\\u001b[2Jb\\nc"],"successes":[1],"advantages":0}]}\n' |
	grpo-cat --from-json -o "$T/n.zst" || exit 1
grpo-cat --stats "$T/n.zst" > "$T/nstats"
is "$?:$(grep -c "$(printf '\033')" "$T/nstats"):$(grep -c '^  a\\x1b\[2Jb\\nc  *mean 1' "$T/nstats")" "0:0:1" \
	"--stats: a reward's name with an escape and a line break, shown escaped on its one line"
