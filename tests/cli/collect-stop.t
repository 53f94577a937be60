#!/bin/sh
# grpo-collect --model stops a response at every stop id of the model: the
# union of config.json's eos_token_id and generation_config.json's (where
# instruct models list their end-of-turn tokens), as transformers'
# generate() does; a generation_config.json it cannot read is an error
# naming it. grpo-step's checkpoints keep step_0's generation_config.json,
# so that every policy step stops where step_0 does. --stop TEXT ends a
# response at the first token whose text so far holds TEXT, keeping the
# tokens sampled; with --server it goes to the server as "stop".
. "$GRPO_TOP/tests/cli/lib.sh"
plan 18

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

# --- stop strings: the addition task's model, whose ids are its characters
grpo-init --preset tiny --vocab 13 --eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 4 \
	-o "$T/a" || exit 1
head -n 6 "$GRPO_TOP/examples/addition/prompts.jsonl" > "$T/ap.jsonl"
sample() { grpo-collect --model "$T/a" --prompts "$T/ap.jsonl" -n 16 --max-tokens 24 --seed 7 "$@"; }
# one line a response: its text (0-9 + =), then its finish reason
texts() { grpo-cat --json | grep -o '"response_tokens":\[[0-9,]*\][^}]*"finish_reason":"[a-z]*"' |
	sed 's/,"logprobs".*"finish_reason":"/ /; s/"response_tokens":\[//; s/\]//; s/"$//' |
	awk '{ n = split($1, t, ","); s = ""; for (i = 1; i <= n; i++) s = s (t[i] < 10 ? t[i] : t[i] == 10 ? "+" : t[i] == 11 ? "=" : "E");
	       print s, $2 }'; }
sample | texts > "$T/plain"
sample --stop '+1' --stop '==' | texts > "$T/stopped"
# each stopped response: ends at its first +1 or ==, or at the end token, or runs to 24 without either
bad=$(awk '{ t = $1; f = $2; p = t; sub(/.$/, "", p); hit = (t ~ /\+1|==/) && !(p ~ /\+1|==/);
	if (f == "stop" && !hit && t !~ /E$/) print; if (f == "length" && (t ~ /\+1|==/ || length(t) != 24)) print }' "$T/stopped")
is "$(wc -l < "$T/stopped" | tr -d ' '):$bad" "96:" "--stop +1 --stop ==: every response ends at its first +1 or == (or the end token, or at 24 tokens without one)"
hits=$(awk '$2 == "stop" && $1 !~ /E$/' "$T/stopped" | wc -l | tr -d ' ')
prefix=$(paste -d ' ' "$T/plain" "$T/stopped" | awk 'substr($1, 1, length($3)) != $3' | wc -l | tr -d ' ')
ok $([ "$hits" -gt 3 ] && [ "$prefix" = 0 ] && echo 0 || echo 1) \
	"$hits responses end at a stop string, each the start of the same run's response without --stop ($prefix not)"

sample -o "$T/s2/rollouts" 2> /dev/null && sample --stop '+1' -o "$T/s2/rollouts" 2> /dev/null &&
	sample --stop '+1' -o "$T/s2/rollouts" -v 2> "$T/err"
is "$?:$(ls "$T/s2/rollouts/step_0/rank_0" | wc -l | tr -d ' '):$(grep -c 'already published' "$T/err")" "0:2:1" \
	"--stop publishes under a name of its own; the same run again publishes nothing"

# the text is read with the model's tokenizer: none, none to read it with
mkdir -p "$T/bare" && cp "$T/a/config.json" "$T/a/model.safetensors" "$T/bare/"
grpo-collect --model "$T/bare" --prompts "$T/p.jsonl" -n 1 --stop x > "$T/out.zst" 2> "$T/err"
is "$?:$(wc -c < "$T/out.zst" | tr -d ' '):$(cat "$T/err")" \
	"1:0:grpo-collect: --stop: $T/bare has no tokenizer.json to read the responses' text with: give --tokenizer" \
	"--stop with no tokenizer: exit 1, saying so, nothing written"
grpo-collect --model "$T/bare" --prompts "$T/p.jsonl" -n 1 -t 0 --max-tokens 4 --stop 11 \
	--tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" 2> "$T/err" | texts > "$T/g"
is "$?:$(cat "$T/g")" "0:3333 length" "--tokenizer gives it one (the greedy 3,3,3,3 never writes 11)"

grpo-collect --model "$T/a" --prompts "$T/ap.jsonl" --stop '' > /dev/null 2> "$T/err"
is "$?:$(head -n 1 "$T/err")" "2:grpo-collect: --stop: give text of 1 to 256 bytes, not 0" "an empty stop string is a usage error"
set -- ; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do set -- "$@" --stop "s$i"; done
grpo-collect --model "$T/a" --prompts "$T/ap.jsonl" "$@" > /dev/null 2> "$T/err"
is "$?:$(head -n 1 "$T/err")" "2:grpo-collect: --stop: at most 16 stop strings" "so are 17 of them"
grpo-collect --stop x --step 0 < /dev/null > /dev/null 2> "$T/err"
is "$?" 2 "importing takes no --stop: the rollouts were sampled already"

# --server: "stop" in the request, for vLLM and SGLang alike
fake_server "$T/srv"
for api in vllm sglang; do
	printf '%s\n' '{"prompt":"2+2=","answer":"4"}' > "$T/sp.jsonl"
	grpo-collect --server "$URL" --api $api --prompts "$T/sp.jsonl" -n 2 --stop '</answer>' --stop 'User:' \
		> /dev/null 2> "$T/err" || cat "$T/err"
done
is "$(grep -c '"path": "/v1/completions".*"stop": \["</answer>", "User:"\]' "$T/srv/log"):$(grep -c '"path": "/generate".*"sampling_params": {.*"stop": \["</answer>", "User:"\]' "$T/srv/log")" \
	"1:1" "--server sends the stop strings as \"stop\": vLLM's request and SGLang's sampling_params"
