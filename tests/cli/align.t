#!/bin/sh
# grpo-cat --model: the model's logprobs of every response token, next to the
# sampler's (seed 004's alignment check), against Hugging Face's values.
. "$GRPO_TOP/tests/cli/lib.sh"
model="$GRPO_SHARED/data/fixtures/models/qwen3"
[ -f "$model/model.safetensors" ] || skip_all "no fixture model at $model"
plan 5

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
