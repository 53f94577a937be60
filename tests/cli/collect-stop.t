#!/bin/sh
# grpo-collect --model stops a response at every stop id of the model: the
# union of config.json's eos_token_id and generation_config.json's (where
# instruct models list their end-of-turn tokens), as transformers'
# generate() does; a generation_config.json it cannot read is an error
# naming it. grpo-step's checkpoints keep step_0's generation_config.json,
# so that every policy step stops where step_0 does.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9

# the tiny random model, greedy, repeats the prompt's last token: [1,2,3] gives 3,3,3,...
grpo-init --preset tiny --seed 3 --eos 500 -o "$T/m" || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3]}' > "$T/p.jsonl"
run() { grpo-collect --model "$T/m" --prompts "$T/p.jsonl" -n 1 -t 0 --max-tokens 6 > "$T/out.zst" 2> "$T/err"; }
gen() { run && grpo-cat --json "$T/out.zst"; }
resp() { grep -o '"response_tokens":\[[0-9,]*\].*"finish_reason":"[a-z]*"' | sed 's/,"logprobs".*"finish_reason"/ /'; }

is "$(gen | resp)" '"response_tokens":[3,3,3,3,3,3] :"length"' "config.json's eos 500 alone: no stop, cut at --max-tokens"

printf '{\n  "bos_token_id": 1,\n  "eos_token_id": [7, 3],\n  "do_sample": true\n}\n' > "$T/m/generation_config.json"
is "$(gen | resp)" '"response_tokens":[3] :"stop"' "generation_config.json's list adds stop id 3: kept, finish_reason stop"

printf '{"eos_token_id": 3}\n' > "$T/m/generation_config.json"
is "$(gen | resp)" '"response_tokens":[3] :"stop"' "an integer eos_token_id there too"

printf '{"eos_token_id": 7}\n' > "$T/m/generation_config.json"
sed 's/"eos_token_id": 500/"eos_token_id": [500, 3]/' "$T/m/config.json" > "$T/c" && mv "$T/c" "$T/m/config.json"
is "$(gen | resp)" '"response_tokens":[3] :"stop"' "config.json's ids still stop where generation_config.json lists others"

printf '{"eos_token_id": "3"}\n' > "$T/m/generation_config.json"
run
is "$?:$(wc -c < "$T/out.zst" | tr -d ' '):$(cat "$T/err")" \
	"1:0:grpo-collect: $T/m/generation_config.json: eos_token_id must be an integer or a list" \
	"a malformed eos_token_id: exit 1, an error naming the file, nothing written"
printf '{"eos_token_id": [3' > "$T/m/generation_config.json"
run
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/m/generation_config.json: not a JSON object" "so is a file that is not JSON"
printf '{"eos_token_id": [3, 600]}\n' > "$T/m/generation_config.json"
run
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/m/generation_config.json: eos_token_id 600 is not in the vocabulary (vocab_size 512)" \
	"an id outside the vocabulary too"

# a policy step trained by grpo-step keeps step_0's stop ids
grpo-init --preset tiny --seed 3 --eos 500 -o "$T/s/policy/step_0" || exit 1
printf '{\n  "eos_token_id": [7, 3],\n  "temperature": 0.6\n}\n' > "$T/s/policy/step_0/generation_config.json"
grpo-cat --from-json "$GRPO_TOP/tests/cli/pack/tiny.jsonl" | grpo-pack -T 8 -W 1 -o "$T/s/batches" || exit 1
grpo-step --batches "$T/s/batches" -o "$T/s/policy" 2> /dev/null || exit 1
cmp -s "$T/s/policy/step_0/generation_config.json" "$T/s/policy/step_1/generation_config.json"
ok $? "policy/step_1 holds step_0's generation_config.json"
grpo-collect --model "$T/s/policy" --prompts "$T/p.jsonl" -n 1 -t 0 --max-tokens 6 2> "$T/err" | grpo-cat --json > "$T/s1.json"
is "$(resp < "$T/s1.json") $(grep -o '"policy_version":[0-9]*' "$T/s1.json")" '"response_tokens":[3] :"stop" "policy_version":1' \
	"and sampling from it stops at 3 as from step_0"
