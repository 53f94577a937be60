#!/bin/sh
# grpo-cat --model: the model's logprobs of every response token, next to the
# sampler's (seed 004's alignment check), against Hugging Face's values.
. "$GRPO_TOP/tests/cli/lib.sh"
model="$GRPO_SHARED/data/fixtures/models/qwen3"
[ -f "$model/model.safetensors" ] || skip_all "no fixture model at $model"
plan 9

grpo-cat --from-json -o "$T/g.zst" "$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8.jsonl"
grpo-cat --model "$model" --stats --json "$T/g.zst" > "$T/stats"
is "$?" 0 "--model --stats runs"
max=$(sed 's/.*"model_logprob_abs_diff_max":\([^,}]*\).*/\1/' "$T/stats")
awk -v m="$max" 'BEGIN { exit !(m < 1e-4) }'
is "$?" 0 "the C model matches transformers' logprobs at temperature 0.8 (max |diff| $max)"

grpo-cat --model "$model" "$T/g.zst" > "$T/g.json"
n=$(grep -o '"model_logprobs":\[[^]]*\]' "$T/g.json" | wc -l | tr -d ' ')
is "$n" 5 "every trajectory gets model_logprobs"
grep -q '"model_entropy":\[' "$T/g.json" && grep -q '"model_logprob_abs_diff_mean":' "$T/g.json"
is "$?" 0 "and model_entropy with the mean and max difference"

# logprobs shifted by one token, the classic alignment bug, must stand out
sed 's/"logprobs":\[\([^],]*\),/"logprobs":[/; s/\],"temperature"/,-1],"temperature"/' \
	"$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8.jsonl" > "$T/shifted.jsonl"
grpo-cat --from-json "$T/shifted.jsonl" | grpo-cat --model "$model" --stats --json > "$T/s2"
max2=$(sed 's/.*"model_logprob_abs_diff_max":\([^,}]*\).*/\1/' "$T/s2")
awk -v m="$max2" 'BEGIN { exit !(m > 0.5) }'
is "$?" 0 "logprobs shifted by one token are flagged (max |diff| $max2)"

# Only trained tokens are compared: tool output (response_mask 0, stored with
# logprob 0) must not enter the mean. fixture-group-qwen3-t0.8-masked.jsonl is
# the fixture group with response tokens 2..4 of its first trajectory masked.
grpo-cat --from-json "$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8-masked.jsonl" |
	grpo-cat --model "$model" --stats --json > "$T/s3"
max3=$(sed 's/.*"model_logprob_abs_diff_max":\([^,}]*\).*/\1/' "$T/s3")
n3=$(sed 's/.*"aligned_tokens":\([0-9]*\).*/\1/' "$T/s3")
awk -v m="$max3" -v n="$n3" -v all="$(sed 's/.*"aligned_tokens":\([0-9]*\).*/\1/' "$T/stats")" \
	'BEGIN { exit !(m < 1e-4 && n == all - 3) }'
is "$?" 0 "masked tokens are left out of the comparison (max |diff| $max3 over $n3 tokens)"
m1=$(grpo-cat --from-json "$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8-masked.jsonl" | grpo-cat --model "$model" |
	sed 's/[^}]*"model_logprob_abs_diff_max":\([^,}]*\).*/\1/')
awk -v m="$m1" 'BEGIN { exit !(m < 1e-4) }'
is "$?" 0 "and from the masked trajectory's own numbers (max |diff| $m1)"

# The signed mean says which side is sharper: sampler logprobs lowered by 0.5
# (fixture-group-qwen3-t0.8-minus-half.jsonl) give model - sampler = +0.5.
grpo-cat --from-json "$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8-minus-half.jsonl" |
	grpo-cat --model "$model" --stats --json > "$T/s4"
d=$(sed 's/.*"model_logprob_diff_mean":\([^,}]*\).*/\1/' "$T/s4")
a=$(sed 's/.*"model_logprob_abs_diff_mean":\([^,}]*\).*/\1/' "$T/s4")
awk -v d="$d" -v a="$a" 'BEGIN { exit !(d > 0.4999 && d < 0.5001 && a > 0.4999 && a < 0.5001) }'
is "$?" 0 "--stats reports the signed mean (+$d) beside the mean absolute difference ($a)"
grpo-cat --from-json "$GRPO_TOP/tests/data/fixture-group-qwen3-t0.8-minus-half.jsonl" |
	grpo-cat --model "$model" --stats | grep -q '^model vs sampler   logprob difference mean 0.5'
is "$?" 0 "and so does the text summary"
