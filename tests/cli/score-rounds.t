#!/bin/sh
# grpo-score over a queue that holds several rounds: rounds sampled from the
# same offset (examples/demo.sh samples every round from the first prompt;
# a --cursor walk gets new places, so new ids, in each pass) give a prompt
# the same group id in every round, so round K's group 0 and round K+1's
# are different groups, sampled by different policies. A scorer that sees
# both (a --watch scorer, or a run after a backlog) must not report them as
# one group split across inputs; a group split within one round still is.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4
TOK="$GRPO_TOP/examples/addition/tokenizer.json"
group() { # group ID VERSION ANSWER-TOKEN...: one JSON line
	g=$1 v=$2
	shift 2
	printf '{"group_id":%s,"trajectories":[' "$g"
	i=0
	for r; do
		[ $i -gt 0 ] && printf ','
		printf '{"prompt_tokens":[1,10,2,11],"response_tokens":[%s,12],"logprobs":[-1,-1],"answer":"3","sequence_id":%d,"group_id":%s,"policy_version":%s,"finish_reason":"stop"}' \
			"$r" $((g * 100 + i)) "$g" "$v"
		i=$((i + 1))
	done
	printf ']}\n'
}
q=$T/s/rollouts
mkdir -p "$q/step_0/rank_0" "$q/step_1/rank_0"
{ group 0 0 3 4; group 1 0 3 3; } | grpo-cat --from-json -o "$q/step_0/rank_0/a.zst"
{ group 0 1 4 4; group 1 1 3 5; } | grpo-cat --from-json -o "$q/step_1/rank_0/b.zst"
grpo-score --reward gsm8k --tokenizer "$TOK" --ref none -o "$T/s/scored" "$q" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "two rounds' groups 0 and 1, one scorer run: silent"
is "$(find "$T/s/scored" -name '*.zst' ! -path '*/.*' | wc -l | tr -d ' ')" 2 "both rounds scored"

group 1 1 3 4 | grpo-cat --from-json -o "$q/step_1/rank_0/c.zst"
grpo-score --reward gsm8k --tokenizer "$TOK" --ref none -o "$T/s/scored" "$q" 2> "$T/err"
is "$?:$(grep -c 'came in an earlier input too' "$T/err")" "0:0" \
	"a later run finds only round 1's second part: nothing earlier in that run"
rm -rf "$T/s/scored" "$q"/step_*/rank_0/.done
grpo-score --reward gsm8k --tokenizer "$TOK" --ref none -o "$T/s/scored" "$q" 2> "$T/err"
is "$(cat "$T/err")" "grpo-score: $q/step_1/rank_0/c.zst: group 1 came in an earlier input too; each part is normalized over its own members" \
	"a group of one round in two files is reported, once"
