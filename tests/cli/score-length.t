#!/bin/sh
# grpo-score's rewards that weigh a response's length by whether it is
# right: cosine (open-r1, TRL) and kimi-length (Kimi k1.5, per group), on
# responses encoded by Qwen3's tokenizer, against the published formulas
# computed here by jq from the responses' token counts; the reward that
# says right (--correct-by: a built-in, or a reward program's), the success
# threshold, --cosine-values, and the usage errors.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
plan 25
cd "$T"

# group | response (the answer is 5)
cat > cases.txt <<'CASES'
0|\boxed{5}
0|Adding the two numbers one at a time gives a total of five, so the answer is \boxed{5}.
0|\boxed{4}
0|Adding the two numbers one at a time gives a total of four, so \boxed{4}.
0|We count again: \boxed{5}
1|\boxed{5}
1|\boxed{5}
CASES
i=0
while IFS='|' read -r g resp; do
	ids=$(jq -n --arg r "$resp" '$r' | grpo-cat -t "$TOK" --encode) || break
	jq -nc --argjson g "$g" --argjson ids "$ids" --argjson i $i \
		'{group_id: $g, trajectories: [{prompt_tokens: [1, 2], response_tokens: $ids,
		  logprobs: [$ids[] | -1], answer: "5", sequence_id: $i, group_id: $g,
		  policy_version: 0, finish_reason: "stop"}]}'
	i=$((i + 1))
done < cases.txt > in.jsonl
is "$(wc -l < in.jsonl)" 7 "seven responses encoded"
grpo-cat --from-json -o in.zst in.jsonl
ok $? "input made"

# The formulas, over [length, right] of each response by group (M = 40):
# cosine   p = min(1, L/M), long + (short - long) (1 + cos(pi p)) / 2
# kimi     lambda = 0.5 - (L - min) / (max - min); right: lambda, wrong: min(0, lambda)
jq -c '[.group_id, (.trajectories[0].response_tokens | length),
	(if .trajectories[0].sequence_id == 2 or .trajectories[0].sequence_id == 3 then 0 else 1 end)]' in.jsonl > lr.txt
expect() { # expect RS RL WS WL THRESHOLD_PASSED: [right, cosine, kimi] of each response, rounded
	jq -sc --argjson v "[$1,$2,$3,$4]" --argjson pass "$5" '
	def r: . * 1e5 | round / 1e5;
	group_by(.[0]) | map(
		(map(.[1]) | min) as $lo | (map(.[1]) | max) as $hi |
		.[] | .[1] as $L | (.[2] * $pass) as $ok |
		([$L / 40, 1] | min) as $p |
		(if $ok == 1 then [$v[0], $v[1]] else [$v[2], $v[3]] end) as $sl |
		($sl[1] + ($sl[0] - $sl[1]) * (1 + ($p * (1 | atan * 4) | cos)) / 2) as $cos |
		(if $hi == $lo then 0 else 0.5 - ($L - $lo) / ($hi - $lo) end) as $lam |
		(if $ok == 1 or $lam < 0 then $lam else 0 end) as $kimi |
		[.[2], ($cos | r), ($kimi | r)]) | .[]' lr.txt
}
got() { grpo-cat "$1" | jq -c '.trajectories[].rewards | map(. * 1e5 | round / 1e5)'; }
expect 1 0.5 -1 -0.5 1 > want.txt
is "$(sort -u want.txt | wc -l | tr -d ' ')" 6 "six different expected rewards among the seven"

grpo-score -r math -r cosine -r kimi-length -m 40 -t "$TOK" in.zst > out.zst 2> err
ok $? "scored with math, cosine and kimi-length: $(cat err)"
is "$(got out.zst | tr '\n' ' ')" "$(tr '\n' ' ' < want.txt)" "[math, cosine, kimi-length] of each response"
is "$(grpo-cat out.zst | jq -r '.trajectories[].reward_names | join(",")' | sort -u)" "math,cosine,kimi-length" \
	"named in the order given"
# \boxed{5} is five tokens: 0.5 + (1 + cos(pi / 8)) / 4 = 0.98097
is "$(got out.zst | tail -n 2 | tr '\n' ' ')" "[1,0.98097,0] [1,0.98097,0] " \
	"a group of equal lengths: kimi-length 0 for all; cosine as worked by hand"

expect 2 1 -2 -1 1 | jq -c '.[0:2]' > want2.txt
grpo-score -r math -r cosine --cosine-values 2,1,-2,-1 -m 40 -t "$TOK" in.zst > out2.zst 2> err
is "$?:$(got out2.zst | tr '\n' ' ')" "0:$(tr '\n' ' ' < want2.txt)" "--cosine-values 2,1,-2,-1"

# a success is what makes a response right: with a threshold of 2, none is
expect 1 0.5 -1 -0.5 0 | jq -c '.[0:2]' > want3.txt
grpo-score -s 2 -r math -r cosine -m 40 -t "$TOK" in.zst | got - > got3.txt
is "$(tr '\n' ' ' < got3.txt)" "$(tr '\n' ' ' < want3.txt)" \
	"--success-threshold 2: no response is right, each gets the wrong response's cosine"

# a reward program says right
cat > right.sh <<'EOF'
while read -r l; do
	case $l in
	*'boxed{5}'*) echo '{"rewards": {"right": 1, "style": 0}}' ;;
	*) echo '{"rewards": {"right": 0, "style": 0}}' ;;
	esac
done
EOF
grpo-score -c 'sh right.sh' -r cosine -r kimi-length -m 40 --correct-by right -t "$TOK" in.zst > out4.zst 2> err
ok $? "a reward program's reward as --correct-by: $(cat err)"
grpo-cat out4.zst | jq -c '.trajectories[] | [.rewards[2], .rewards[0], .rewards[1]] | map(. * 1e5 | round / 1e5)' \
	> got4.txt
is "$(tr '\n' ' ' < got4.txt)" "$(tr '\n' ' ' < want.txt)" "its verdicts give the same cosine and kimi-length"
grpo-score -c 'sh right.sh' -r cosine -m 40 --correct-by correct -t "$TOK" in.zst > out5.zst 2> err
is "$?:$(wc -c < out5.zst | tr -d ' ')" "1:0" "--correct-by a name the program does not answer: exit 1, nothing written"
grep -q "^grpo-score: .*--correct-by correct: the reward program 'sh right.sh' answers no reward of that name (its rewards: right, style)" err
ok $? "naming what it answers: $(cat err)"

# usage errors, exit status 2, nothing read
while IFS='|' read -r args why; do
	# shellcheck disable=SC2086
	grpo-score $args -t "$TOK" in.zst > /dev/null 2> err < /dev/null
	is "$?:$(head -n 1 err)" "2:grpo-score: $why" "grpo-score $args"
done <<'EOF'
-r cosine|--reward cosine needs --max-len
-r cosine -m 40 -r format|--reward cosine and kimi-length need a reward that says whether a response is right: --reward gsm8k, boxed, math or exact, or --correct-by NAME
-r kimi-length -r math -r gsm8k|--reward cosine and kimi-length: both math and gsm8k say whether a response is right; choose with --correct-by
-r math --correct-by math|--correct-by goes with --reward cosine or kimi-length
-r kimi-length -r math --correct-by boxed|--correct-by boxed: give --reward boxed too
-r kimi-length -r cosine -m 9 --correct-by cosine|--correct-by cosine: that reward needs a verdict itself
-r kimi-length --correct-by math=2 -r math|--correct-by math=2: a reward's name, without a weight
-r kimi-length --correct-by right|--correct-by right: no built-in reward of that name, and no --reward-cmd to answer it
-r math --cosine-values 1,1,1,1|--cosine-values goes with --reward cosine
-r math -r kimi-length -m 5|--max-len goes with --reward length or cosine
-r math -r cosine -m 40 -b 3|--overlong-buffer goes with --reward length
EOF
grpo-score -r kimi-length -r math -r gsm8k --correct-by gsm8k -t "$TOK" in.zst > /dev/null 2> err
ok $? "two answer rewards, one chosen with --correct-by: $(cat err)"
