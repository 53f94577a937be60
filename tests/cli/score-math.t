#!/bin/sh
# grpo-score --reward math: answers that the boxed reward's text comparison
# calls wrong (0.5 against \frac{1}{2}, a set in another order, an expanded
# polynomial) score 1, wrong answers and unboxed ones 0, on responses
# encoded by Qwen3's tokenizer and decoded again by grpo-score. Then the
# repetition and steps rewards on the same responses, and --ngram; think
# and --answer-after-think on a response cut off while thinking; format,
# think and tags on a response whose prompt opened the think block.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
plan 13
cd "$T"

# response | answer | boxed | math
cat > cases.txt <<'CASES'
So the probability is \boxed{0.5}.|\frac{1}{2}|0|1
Thus \boxed{\dfrac{1}{2}}|\frac{1}{2}|1|1
We get \boxed{x^2+2x+1}.|(x+1)^2|0|1
The roots are \boxed{1, -2}.|The roots are $\boxed{\{-2, 1\}}$.|0|1
The roots are \boxed{1 \pm \sqrt{3}}|1+\sqrt3, 1-\sqrt3|0|1
The interval is \boxed{\left[0, \frac{1}{2}\right)}|[0, 0.5)|0|1
Hence \boxed{x = 12}|12|0|1
\boxed{0.333}|\frac{1}{3}|0|0
\boxed{[0, 1]}|[0,1)|0|0
The answer is 0.5|\frac12|0|0
CASES
i=0
while IFS='|' read -r resp ans boxed math; do
	ids=$(jq -n --arg r "$resp" '$r' | grpo-cat -t "$TOK" --encode) || break
	jq -nc --arg a "$ans" --argjson ids "$ids" --argjson i $i \
		'{group_id: $i, trajectories: [{prompt_tokens: [1, 2], response_tokens: $ids,
		  logprobs: [$ids[] | -1], answer: $a, sequence_id: $i, group_id: $i,
		  policy_version: 0, finish_reason: "stop"}]}'
	echo "[$boxed,$math]" >> want.txt
	i=$((i + 1))
done < cases.txt > in.jsonl
is "$(wc -l < in.jsonl)" 10 "ten responses encoded"
grpo-cat --from-json -o in.zst in.jsonl
ok $? "input made"

grpo-score -r boxed -r math -t "$TOK" in.zst > out.zst 2> err
ok $? "scored with boxed and math"
grpo-cat out.zst | jq -c '.trajectories[0].rewards // .rewards' > got.txt
is "$(tr '\n' ' ' < got.txt)" "$(tr '\n' ' ' < want.txt)" "rewards [boxed, math] of each response"
grpo-cat out.zst | jq -r '.trajectories[0].reward_names // .reward_names | join(",")' | sort -u > names.txt
is "$(cat names.txt)" "boxed,math" "named boxed and math"

# repetition (n 1: each response's repeated words) and steps
grpo-score -r repetition -n 1 -r steps -t "$TOK" in.zst > rs.zst 2> err
ok $? "scored with repetition --ngram 1 and steps"
grpo-cat rs.zst | jq -c '.trajectories[0].rewards // .rewards' | head -4 | tr '\n' ' ' > got.txt
is "$(cat got.txt)" "[0,0] [0,0] [0,0] [0,0] " "no word twice, no step, in the first four responses"
printf '%s\n' '"Step 1: add. Step 2: add again. Step 3: add again."' | grpo-cat -t "$TOK" --encode > ids.json
jq -nc --argjson ids "$(cat ids.json)" '{group_id: 9, trajectories: [{prompt_tokens: [1, 2],
	response_tokens: $ids, logprobs: [$ids[] | -1], sequence_id: 9, group_id: 9, policy_version: 0,
	finish_reason: "stop"}]}' | grpo-cat --from-json -o steps.zst
grpo-score -r repetition -n 2 -r steps -t "$TOK" steps.zst | grpo-cat |
	jq -c '(.trajectories[0].rewards // .rewards) | map(. * 1e6 | round / 1e6)' > got.txt
# 11 words, 10 bigrams, "add again." twice: 9/10 - 1; three "Step N:"
is "$(cat got.txt)" "[-0.1,1]" "repetition with --ngram 2, and steps"
grpo-score -n 2 -r steps -t "$TOK" steps.zst > /dev/null 2> err
is "$?:$(head -n 1 err)" "2:grpo-score: --ngram goes with --reward repetition" "--ngram without repetition: usage error"

# think, and the answer after </think>: Qwen3 keeps <think> and </think> as
# text (added tokens, not special), so they decode
printf '%s\n' '"<think>\nMaybe \\boxed{3}? No.\n</think>\n\nSo \\boxed{\\frac{1}{2}}."' \
	'"<think>\nIt is \\boxed{0.5}, surely"' > think.txt
i=20
while read -r resp; do
	ids=$(printf '%s\n' "$resp" | grpo-cat -t "$TOK" --encode) || break
	jq -nc --argjson ids "$ids" --argjson i $i '{group_id: $i, trajectories: [{prompt_tokens: [1, 2],
		response_tokens: $ids, logprobs: [$ids[] | -1], answer: "0.5", sequence_id: $i, group_id: $i,
		policy_version: 0, finish_reason: "stop"}]}'
	i=$((i + 1))
done < think.txt | grpo-cat --from-json -o think.zst
grpo-score -r math -r think -t "$TOK" think.zst 2> /dev/null | grpo-cat | jq -c '.trajectories[0].rewards' > whole.txt
grpo-score -r math -r think --answer-after-think -t "$TOK" think.zst 2> /dev/null | grpo-cat |
	jq -c '.trajectories[0].rewards' > after.txt
is "$(tr '\n' ' ' < whole.txt)" "[1,1] [1,0] " "[math, think]: the response cut off while thinking is right by its last boxed answer"
is "$(tr '\n' ' ' < after.txt)" "[1,1] [0,0] " "with --answer-after-think it answered nothing; the finished one still right"
# a prompt that opened the think block (the R1 distills' template ends in
# "<think>\n"): format, think and tags read the response after that opening,
# so a response that closes the block scores as one that opened it would
pa=$(printf '%s\n' '"<|im_start|>user\nAdd.<|im_end|>\n<|im_start|>assistant\n<think>\n"' | grpo-cat -t "$TOK" --encode)
pc=$(printf '%s\n' '"<|im_start|>user\nAdd.<|im_end|>\n<|im_start|>assistant\n"' | grpo-cat -t "$TOK" --encode)
r=$(printf '%s\n' '"I add.\n</think>\n<answer>\n3\n</answer>"' | grpo-cat -t "$TOK" --encode)
jq -nc --argjson pa "$pa" --argjson pc "$pc" --argjson r "$r" '[$pa, $pc] | to_entries[] |
	{group_id: (40 + .key), trajectories: [{prompt_tokens: .value, response_tokens: $r, logprobs: [$r[] | -1],
	 answer: "3", sequence_id: (40 + .key), group_id: (40 + .key), policy_version: 0, finish_reason: "stop"}]}' |
	grpo-cat --from-json -o opened.zst
grpo-score -r format -r think -r tags -t "$TOK" opened.zst 2> /dev/null | grpo-cat |
	jq -c '.trajectories[0].rewards' > got.txt
is "$(tr '\n' ' ' < got.txt)" "[1,1,1] [0,0,0.75] " \
	"[format, think, tags]: the response continuing a think block its prompt opened is read after that opening"
grpo-score -r format --answer-after-think -t "$TOK" think.zst > /dev/null 2> err
is "$?:$(head -n 1 err)" "2:grpo-score: --answer-after-think goes with --reward gsm8k, boxed, math or exact" \
	"--answer-after-think without an answer reward: usage error"
