#!/bin/sh
# grpo-collect on real server shapes (tests/data/collect/SOURCES): those that
# work give exactly FILE.expected; those refused on purpose say why, by
# FILE:LINE, also under -e skip, and publish nothing.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 19
D="$GRPO_TOP/tests/data/collect"

# vllm-trl-old, vllm-echo and vllm-echo-score sample each prompt once: their
# groups of one member are counted (group-integrity.t)
for f in vllm-trl-ranked vllm-trl-old vllm-trl-limits vllm-batch-prompts vllm-echo vllm-echo-score finish-reasons; do
	grpo-collect --step 3 "$D/$f.jsonl" > "$T/$f.zst" 2> "$T/err"
	case $f in
	vllm-trl-old | vllm-echo | vllm-echo-score)
		w="grpo-collect: warning: 2 groups of one member (its advantage is always 0)" how="counting its groups of one member" ;;
	finish-reasons)
		w="grpo-collect: warning: 1 group of one member (its advantage is always 0)" how="counting its group of one member" ;;
	*) w= how=silently ;;
	esac
	is "$?:$(cat "$T/err"):$(grpo-cat --json "$T/$f.zst" | cmp - "$D/$f.expected" 2>&1)" "0:$w:" \
		"$f: imports $how, exactly $f.expected"
done
grep -q '"response_tokens":\[20,13,151645\],"logprobs":\[-1.5,-0.125,-0.0625\]' "$D/vllm-trl-ranked.expected"
is "$?" 0 "TRL ranked lists: the sampled token's logprob is found by its id, not by its rank"
is "$(grep -o '"finish_reason":"[a-z_]*"' "$D/finish-reasons.expected" | tr '\n' ' ')" \
	'"finish_reason":"tool_calls" "finish_reason":"abort" "finish_reason":"abort" ' \
	"finish reasons other than stop and length (vLLM tool_calls and abort, SGLang abort) are kept"
# TRL's /generate/ says no finish reason: the request's max_tokens tells it
is "$(grpo-cat --json "$T/vllm-trl-limits.zst" | grep -o '"response_tokens":\[[0-9,]*\]\|"finish_reason":"[a-z]*"' |
	tr '\n' ' ')" '"response_tokens":[19,20] "finish_reason":"length" "response_tokens":[21] "finish_reason":"stop" '\
'"response_tokens":[19,20,21] "finish_reason":"length" "response_tokens":[22,151645] "finish_reason":"stop" '\
'"response_tokens":[19,20] "response_tokens":[21] "response_tokens":[19,20] "response_tokens":[21] ' \
	"TRL: max_tokens tokens is length, fewer stop (generation_kwargs' limit first); none with no limit or no request"
grpo-collect --step 3 "$D/finish-reasons.jsonl" 2> /dev/null | grpo-score --reward length --max-len 8 2> /dev/null |
	grpo-pack --seq-len 64 --ranks 1 --step 3 | grpo-cat | grep -o '"finish_reasons":\[[^]]*\]' > "$T/fr"
is "$(cat "$T/fr")" '"finish_reasons":["tool_calls","abort","abort"]' "and carried into the micro-batches' finish_reasons"

refused() { # refused FILE LINE MESSAGE
	grpo-collect -e skip --step 0 "$D/$1" > "$T/out.zst" 2> "$T/err"
	is "$?:$(head -n 1 "$T/err"):$(grpo-cat "$T/out.zst" | wc -l | tr -d ' ')" "0:grpo-collect: $D/$1:$2: $3:0" \
		"$1: refused, even under -e skip"
}
stream='grpo-collect reads whole responses: ask with "stream": false'
refused refused-trl-0.23.jsonl 1 'no prompt_ids: TRL 0.23 and earlier return none from vllm-serve'"'"'s /generate/; use TRL 0.24 or later, or wrap the line as {"request": {"prompts": [[ids...]], ...}, "response": ...} with the prompts sent as token ids'
refused refused-stream-chat.jsonl 1 "a stream chunk (\"object\": \"chat.completion.chunk\"), not a whole response: $stream"
refused refused-stream-completions.jsonl 1 "a stream chunk (\"finish_reason\": null: the sequence goes on in later chunks), not a whole response: $stream"
refused refused-stream-sse.txt 1 'a server-sent event ("data: ..."), a piece of a streamed response, not a whole one: grpo-collect reads whole responses; ask with "stream": false'
refused refused-echo-text.jsonl 1 'choices[0]: no token ids: the logprob tokens are text; ask vLLM with "return_token_ids" or "return_tokens_as_token_ids"'

# the last chunk of a completions stream has a finish_reason but no usage
sed 's/"finish_reason":null/"finish_reason":"stop"/' "$D/refused-stream-completions.jsonl" > "$T/last.jsonl"
grpo-collect --step 0 "$T/last.jsonl" 2> "$T/err" > /dev/null
grep -q 'last.jsonl:1: a stream chunk ("usage": null' "$T/err"
is "$?" 0 "the last chunk of a stream is refused as a chunk too"
# a wrapper whose request says "stream": true
printf '{"request":{"prompt":[1,2],"stream":true},"response":%s}\n' "$(sed 's/"usage":null/"usage":{}/; s/"finish_reason":null/"finish_reason":"stop"/' "$D/refused-stream-completions.jsonl")" > "$T/wrapped.jsonl"
grpo-collect --step 0 "$T/wrapped.jsonl" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/wrapped.jsonl:1: a streamed response (the request has \"stream\": true): $stream" \
	"a wrapped streamed response is refused by its request"
# a batch of prompts that does not divide the choices evenly
sed 's/"n":2/"n":1/; s/\[\[3838,374,220,17,10,17,30\],/[[1],[3838,374,220,17,10,17,30],/' "$D/vllm-batch-prompts.jsonl" > "$T/uneven.jsonl"
grpo-collect --step 0 "$T/uneven.jsonl" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/uneven.jsonl:1: choices[0]: request prompt: 3 prompts with n = 1 each, but 4 choices: which prompt a choice answers is unknown" \
	"a batch of prompts is matched to its choices, and says so when they do not divide"
