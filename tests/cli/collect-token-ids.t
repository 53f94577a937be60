#!/bin/sh
# Token ids written otherwise than JSON writes integers: "05" and "5." are
# not JSON, yet the parser (as cJSON) read them as 5, and "token_id:+5",
# "token_id: 5" and "token_id:05" strings (vLLM's return_tokens_as_token_ids)
# and the Atropos demo server's {"05": lp} keys went through strtol. A writer
# making them is not writing what vLLM writes: the line is refused, named,
# as other malformed ids are, in an imported file, a server's answer and a
# prompts file. Numbers JSON allows (5.0, 1e2) keep their value.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10
native() { printf '{"prompt_tokens":[1,2],"response_tokens":[3,%s],"logprobs":[-0.5,-0.25]}\n' "$1"; }

for v in 05 00 -05 5. 1.e2 +5; do
	native "$v" > "$T/n.jsonl"
	grpo-collect "$T/n.jsonl" > /dev/null 2> "$T/err" && echo "$v taken" >> "$T/taken"
	grep -q "^grpo-collect: $T/n.jsonl:1: not valid JSON" "$T/err" || echo "$v: $(cat "$T/err")" >> "$T/msg"
done
is "$(cat "$T/taken" "$T/msg" 2> /dev/null)" "" "05, 00, -05, 5., 1.e2 and +5 as ids: refused as not JSON, naming file and line"
native 05 > "$T/n.jsonl"
grpo-collect "$T/n.jsonl" > /dev/null 2> "$T/err"
is "$(cat "$T/err")" \
	"grpo-collect: $T/n.jsonl:1: not valid JSON (near byte 45: 05 is not a number as JSON writes one)" \
	"the message names the byte and the number"
{ native 6; native 05; native 7; } > "$T/three.jsonl"
grpo-collect -e skip -s 1 "$T/three.jsonl" 2> "$T/err" | grpo-cat --json > "$T/out"
is "$?:$(grep -c . "$T/out"):$(grep -c 'skipped 1 of 3 lines' "$T/err")" "0:2:1" "-e skip drops that line alone"
# numbers JSON allows, and strings that hold them, are as before
{ native 5.0; native 1e2; printf '{"prompt_tokens":[1,2],"response_tokens":[3],"logprobs":[-5e-1],"answer":"05 +5 5."}\n'; } > "$T/ok.jsonl"
grpo-collect -s 1 "$T/ok.jsonl" 2> /dev/null | grpo-cat --json > "$T/out"
is "$?:$(grep -o '"response_tokens":\[[0-9,]*\]' "$T/out" | tr '\n' ' ')" \
	'0:"response_tokens":[3,5] "response_tokens":[3,100] "response_tokens":[3] ' \
	"5.0 and 1e2 are JSON numbers, read as 5 and 100; numbers in strings are text"

# vLLM's "token_id:N" strings
tok() { # tok TOKEN: a completions line whose ids come from its token strings alone
	printf '{"request":{"prompt":[1,2]},"response":{"id":"c","choices":[{"index":0,"finish_reason":"stop","logprobs":{"token_logprobs":[-0.5,-0.25],"tokens":["token_id:7","%s"]}}]}}\n' "$1"
}
for v in +5 " 5" 05 5.0 "5 " ""; do
	tok "token_id:$v" > "$T/t.jsonl"
	grpo-collect "$T/t.jsonl" > /dev/null 2> "$T/err" && echo "[$v] taken" >> "$T/taken2"
	grep -q "^grpo-collect: $T/t.jsonl:1: choices\[0\]: logprobs.tokens\[1\]: \"token_id:$v\" is not token_id:N with N an integer" "$T/err" ||
		echo "[$v]: $(cat "$T/err")" >> "$T/msg2"
done
is "$(cat "$T/taken2" "$T/msg2" 2> /dev/null)" "" \
	"\"token_id:N\" with N +5, ' 5', 05, 5.0, '5 ' or empty: refused, naming the token"
tok "token_id:0" > "$T/t.jsonl"
grpo-collect "$T/t.jsonl" 2> /dev/null | grpo-cat --json | grep -c '"response_tokens":\[7,0\]' > "$T/out"
is "$(cat "$T/out")" 1 "token_id:0 is taken"

# the Atropos demo server's {"ID": logprob} keys
printf '%s\n' '{"prompt_token_ids":[1,2],"token_ids":[[7,5]],"logprobs":[[[{"7":-0.5}],[{"05":-0.25}]]],"finish_reasons":["stop"]}' > "$T/d.jsonl"
grpo-collect "$T/d.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/d.jsonl:1: logprobs[0][1]: expected [{\"5\": logprob}]" \
	"a demo server's key \"05\" is not the id 5"

# a prompts file's prompt_tokens
printf '{"prompt_tokens":[1,02],"answer":"1"}\n' > "$T/p.jsonl"
grpo-collect --server http://127.0.0.1:9 --prompts "$T/p.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/p.jsonl:1: not valid JSON (near byte 21: 02 is not a number as JSON writes one)" \
	"a prompts file's id 02 is refused before anything is sent"

# a server's answer
command -v python3 > /dev/null || { skip "no python3 to run the fake server"; skip "no python3"; exit 0; }
S="$T/server"
fake_server "$S"
printf '{"prompt":"zpA","answer":"1"}\n{"prompt":"zpB","answer":"2"}\n' > "$T/pz.jsonl"
echo '{"plans": {"zpB": ["zeropad"]}}' > "$S/script.json"
grpo-collect --server "$URL" --prompts "$T/pz.jsonl" -n 2 -o "$T/z/rollouts" 2> "$T/err"
is "$?:$(sed -n 1p "$T/err" | sed 's/near byte [0-9]*: 0[0-9]*/near byte N: 0ID/')" \
	"0:grpo-collect: $T/pz.jsonl:2: the server's answer is refused: not valid JSON (near byte N: 0ID is not a number as JSON writes one)" \
	"a server's answer with an id 0N is refused, naming the prompt; the other published"
is "$(find "$T/z" -name '*.zst' | grep -v '/\.' | while IFS= read -r f; do grpo-cat --json "$f"; done | grep -c .)" 1 "one group published"
