#!/bin/sh
# A Mistral checkpoint (MistralForCausalLM) is a Llama under another name: the
# same model, its config.json saying mistral, gives the same logprobs and the
# same samples bit for bit (grpo-step keeps config.json as it is: step.t). A
# sliding window shorter than the model's positions (Mistral v0.1's) is
# refused rather than run as full attention.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5

grpo-init --family llama --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 --vocab 13 --eos 12 \
	--tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 1 -o "$T/llama" 2> "$T/err"
mkdir "$T/mistral" && cp "$T/llama/"* "$T/mistral/" &&
	sed -e 's/LlamaForCausalLM/MistralForCausalLM/' -e 's/"model_type": "llama"/"model_type": "mistral"/' \
	    -e 's/^  "rms_norm_eps"/  "sliding_window": null,\n  "rms_norm_eps"/' "$T/llama/config.json" > "$T/mistral/config.json"
grep -q '"sliding_window": null' "$T/mistral/config.json" && grep -q MistralForCausalLM "$T/mistral/config.json"
ok $? "a Mistral config.json made of the Llama one"

printf '%s\n' '{"group_id":7,"trajectories":[{"prompt_tokens":[1,2,3],"response_tokens":[4,5,12],"logprobs":[-1,-1,-1]},{"prompt_tokens":[3,2],"response_tokens":[6],"logprobs":[-2]}]}' |
	grpo-cat --from-json -o "$T/g.zst"
grpo-cat --model "$T/llama" "$T/g.zst" > "$T/llama.out" && grpo-cat --model "$T/mistral" "$T/g.zst" > "$T/mistral.out" &&
	grep -q '"model_logprobs":\[' "$T/mistral.out" && cmp -s "$T/llama.out" "$T/mistral.out"
ok $? "grpo-cat --model: the Mistral's logprobs and entropies are the Llama's, bit for bit"

for m in llama mistral; do
	grpo-collect --model "$T/$m" --prompts "$GRPO_TOP/examples/addition/prompts.jsonl" --count 4 -n 3 \
		--max-tokens 3 --seed 5 -o "$T/r-$m" 2>> "$T/err" &&
		grpo-cat "$T/r-$m"/step_0/rank_0/*.zst | sed 's/"policy_version":[^,]*,//' > "$T/s-$m"
done
[ -s "$T/s-llama" ] && cmp -s "$T/s-llama" "$T/s-mistral"
ok $? "grpo-collect --model: the same samples from both ($(wc -l < "$T/s-llama" | tr -d ' ') groups)"

# Mistral v0.1: a window of 4096 in 32768 positions
sed 's/"sliding_window": null/"sliding_window": 4096/' "$T/mistral/config.json" > "$T/c" && mv "$T/c" "$T/mistral/config.json"
grpo-cat --model "$T/mistral" "$T/g.zst" > /dev/null 2> "$T/err"
is "$?" 1 "a sliding window shorter than the positions: refused, exit 1"
grep -q "config.json: sliding_window 4096 is not supported: attention here is over the whole sequence" "$T/err"
ok $? "saying why: $(cat "$T/err")"
