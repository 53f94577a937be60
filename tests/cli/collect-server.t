#!/bin/sh
# grpo-collect --server against tests/cli/fake-server.py (vLLM's and SGLang's
# answer shapes, misbehaving on purpose by script): what it stores is exactly
# what importing the saved answers stores; failed requests are retried; a
# prompt that fails for good is named and skipped, or with -e fail nothing
# is published; --max-lag refuses an old server; policy_version is tagged.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to run the fake server"
plan 58

S="$T/server"
fake_server "$S"
# the fake server counts requests per prompt: each case has prompts of its own
prompts() { # prompts FILE TEXT...: one prompt a line, answers 1, 2, ...
	f=$1
	shift
	: > "$f"
	a=1
	for p; do
		case $p in
		\[*) printf '{"prompt_tokens":%s,"answer":"%s"}\n' "$p" $a >> "$f" ;;
		*) printf '{"prompt":"%s","answer":"%s"}\n' "$p" $a >> "$f" ;;
		esac
		a=$((a + 1))
	done
}
visible() { find "$1" -name '*.zst' 2> /dev/null | grep -v '/\.' | sort; }
# the groups published under DIR, as JSON lines (paths read a line at a time: $TMPDIR may hold spaces)
json_of() { visible "$1" | while IFS= read -r f; do grpo-cat --json "$f"; done; }
groups() { json_of "$1" | wc -l | tr -d ' '; }
posts() { grep -c "\"path\": \"$1\"" "$S/log"; }

# --- vLLM: the request, the store, and the import of the saved answers ------
prompts "$T/p1.jsonl" "3+4=" "[5,6,7]" "1+1="
grpo-collect --server "$URL" --prompts "$T/p1.jsonl" -n 2 -t 0.7 --responses "$T/r1.jsonl" \
	-o "$T/a/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(groups "$T/a")" "0::3" "vllm: 3 prompts, 3 groups, silently"
grpo-collect --step 0 -o "$T/b/rollouts" "$T/r1.jsonl"
(cd "$T/a" && visible .) > "$T/names.a"
(cd "$T/b" && visible .) > "$T/names.b"
same=0
while read -r f; do cmp -s "$T/a/$f" "$T/b/$f" || same=1; done < "$T/names.a"
is "$same:$(cmp "$T/names.a" "$T/names.b" 2>&1)" "0:" \
	"vllm: the same files, byte for byte and by name, as importing the saved answers"
# the request for the prompt given as ids (requests run in parallel: pick it by its prompt, not its place)
grep '"path": "/v1/completions"' "$S/log" | grep '"prompt": \[5, 6, 7\]' | head -n 1 > "$T/req"
for want in '"prompt": \[5, 6, 7\]' '"n": 2' '"logprobs": 0' '"return_token_ids": true' '"temperature": 0.7' \
	'"model": "fake-model"'; do
	grep -q "$want" "$T/req" || echo "$want" >> "$T/missing"
done
is "$(cat "$T/missing" 2> /dev/null)" "" "vllm: /v1/completions with n, logprobs 0, return_token_ids, the prompt's ids"
# without --top-k, top-k off and no penalty said outright: a server left to
# its defaults takes the model's generation_config.json ones (vLLM's
# --generation-config auto), drawing otherwise than asked
is "$(grep -o '"top_k": -1\|"repetition_penalty": 1[,}]\|"min_p": 0[,}]' "$T/req" | tr -d ',}' | tr '\n' ' ')" \
	'"top_k": -1 "repetition_penalty": 1 "min_p": 0 ' "vllm: top_k -1, repetition_penalty 1 and min_p 0 sent"
is "$(grpo-cat --json "$(visible "$T/a" | head -n 1)" | grep -o '"temperature":[0-9.]*' | sort -u)" \
	'"temperature":0.7' "the stored temperature is the one asked for"
is "$(grpo-cat --json "$(visible "$T/a" | head -n 1)" | head -n 1 | sed 's/^{"group_id":"\([^"]*\)".*/\1/')" \
	"$(sed -n '1s/.*"response":{"id": "\([^"]*\)".*/\1/p' "$T/r1.jsonl")" \
	"the group id is the server's request id"
is "$(grpo-cat --json "$(visible "$T/a" | head -n 1)" | grep -o '"answer":"[0-9]*"' | uniq | tr '\n' ' ')" \
	'"answer":"1" "answer":"2" "answer":"3" ' "each prompt's answer is carried, in prompt order"

# --- SGLang ------------------------------------------------------------------
prompts "$T/p2.jsonl" "2+2=" "[8,9]"
grpo-collect --server "$URL" --api sglang --prompts "$T/p2.jsonl" -n 3 -t 0.5 --responses "$T/r2.jsonl" \
	-o "$T/c/rollouts" 2> "$T/err"
grpo-collect --step 0 "$T/r2.jsonl" | grpo-cat --json > "$T/imported"
is "$?:$(cat "$T/err"):$(groups "$T/c"):$(json_of "$T/c" | cmp - "$T/imported" 2>&1)" "0::2:" \
	"sglang: 2 groups of 3, the same as importing the saved answers"
grep '"path": "/generate"' "$S/log" > "$T/req"
is "$(grep -c '"text": "2+2=".*"logprob_start_len": 0' "$T/req"):$(grep -c '"input_ids": \[8, 9\].*"logprob_start_len": -1' "$T/req"):$(grep -c '"sampling_params": {"n": 3, "temperature": 0.5' "$T/req")" \
	"1:1:2" "sglang: /generate with sampling_params.n, return_logprob, logprob_start_len 0 for text"
is "$(grep -c '"sampling_params": {[^}]*"top_k": -1, "repetition_penalty": 1, "min_p": 0' "$T/req")" 2 \
	"sglang: top_k -1, repetition_penalty 1 and min_p 0 in sampling_params"

# --seed: sample j of the prompt at place p draws with seed + p*G + j, so no two
# samples of a run share a stream. vLLM gives a request's n children its seed
# + j (the fake server does too); SGLang gives all n of a request its one
# sampling_seed (the fake server, as its deterministic mode, draws them alike),
# so each sample is a batch entry with its own
prompts "$T/ps.jsonl" "seedA" "seedB"
grpo-collect --server "$URL" --api sglang --prompts "$T/ps.jsonl" -n 2 --seed 9 --responses "$T/rs.jsonl" \
	-o "$T/cs/rollouts" 2> /dev/null &&
	grpo-collect --server "$URL" --api vllm --prompts "$T/ps.jsonl" -n 2 --seed 9 -o "$T/cv/rollouts" 2> /dev/null
is "$?:$(grep '"path": "/generate"' "$S/log" | grep -c '"text": \["seedA", "seedA"\].*"sampling_seed": 9[,}].*"sampling_seed": 10[,}]'):$(grep '"path": "/generate"' "$S/log" | grep -c '"text": \["seedB", "seedB"\].*"sampling_seed": 11[,}].*"sampling_seed": 12[,}]'):$(grep '"path": "/v1/completions"' "$S/log" | grep -c '"prompt": "seedB".*"seed": 11')" \
	"0:1:1:1" "--seed 9 -n 2: sglang's samples seeds 9, 10 and 11, 12 in a batch each; vllm's requests 9 and 11"
members_differ() { json_of "$1" | python3 -c 'import json, sys
gs = [json.loads(l) for l in sys.stdin]
print(len(gs), all(len(g["trajectories"]) == 2 and g["trajectories"][0]["response_tokens"] != g["trajectories"][1]["response_tokens"] for g in gs))'; }
is "$(members_differ "$T/cs"):$(members_differ "$T/cv")" "2 True:2 True" \
	"--seed: each prompt is one group of 2 different samples, sglang and vllm alike"
grpo-collect --step 0 -o "$T/cs2/rollouts" "$T/rs.jsonl" 2> /dev/null
is "$?:$(json_of "$T/cs2" | cmp -s - "$(json_of "$T/cs" > "$T/cs.json" && echo "$T/cs.json")" && echo same)" "0:same" \
	"--seed with sglang: the saved batch answers import as the same groups"

# --- retries -----------------------------------------------------------------
prompts "$T/p3.jsonl" "r500" "rslow" "rmix"
cat > "$S/script.json" <<'EOF'
{"slow_s": 4, "plans": {"r500": ["500", "500", "ok"], "rslow": ["slow", "ok"], "rmix": ["drop", "truncate", "ok"]}}
EOF
grpo-collect --server "$URL" --prompts "$T/p3.jsonl" -n 2 --timeout 1 --retries 3 --concurrency 3 \
	-o "$T/d/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(groups "$T/d")" "0::3" \
	"500s, a timeout, a dropped connection and cut JSON are retried: every prompt once"
is "$(grep -c '"prompt": "r500"' "$S/log"):$(grep -c '"prompt": "rslow"' "$S/log"):$(grep -c '"prompt": "rmix"' "$S/log")" \
	"3:2:3" "each retried until it succeeded, no more"
is "$(json_of "$T/d" | sed 's/"group_id":"\([^"]*\)".*/\1/' | sort | uniq -d)" "" \
	"no group published twice"

# A rate limit's Retry-After is waited for, longer than the backoff (0.25 s),
# but never past --timeout.
prompts "$T/p9.jsonl" "rlimit" "rhours"
cat > "$S/script.json" <<'EOF'
{"plans": {"rlimit": ["429:2", "ok"], "rhours": ["429:36000", "ok"]}}
EOF
grpo-collect --server "$URL" --prompts "$T/p9.jsonl" --timeout 3 --retries 1 -o "$T/d9/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(groups "$T/d9")" "0::2" "rate-limited prompts are retried and published"
# gap P LO HI: whether P's two requests were between LO and HI seconds apart
gap() { grep "\"prompt\": \"$1\"" "$S/log" | sed 's/.*"t": \([0-9.]*\).*/\1/' |
	awk -v lo="$2" -v hi="$3" 'NR==1{a=$1} END{d=$1-a; printf "%s", ((d >= lo && d < hi) ? "ok" : "gap " d)}'; }
is "$(gap rlimit 2 15):$(gap rhours 3 15)" "ok:ok" \
	"the retry waits the 2 s Retry-After asks, and 3 s (--timeout), not 10 hours, for one asking that"

# --- failures for good ---------------------------------------------------------
prompts "$T/p4.jsonl" "fine" "fewer" "bad" "notok"
cat > "$S/script.json" <<'EOF'
{"plans": {"fewer": ["choices"], "bad": ["400"], "notok": ["notokens"]}}
EOF
grpo-collect --server "$URL" --prompts "$T/p4.jsonl" -n 2 --retries 2 -o "$T/e/rollouts" 2> "$T/err"
is "$?:$(groups "$T/e")" "0:1" "-e skip (the default with --server): the prompts that failed are skipped"
is "$(sed -n 1p "$T/err")" \
	"grpo-collect: $T/p4.jsonl:2: prompt not sampled: the answer holds 1 samples for n = 2 (after 3 attempts)" \
	"a wrong number of samples, retried, then named by file and line"
is "$(sed -n 2p "$T/err" | sed 's/\(HTTP 400\): .*scripted failure.*/\1/')" "grpo-collect: $T/p4.jsonl:3: prompt not sampled: HTTP 400" \
	"an HTTP 400 names the prompt"
is "$(grep -c '"prompt": "bad"' "$S/log")" 1 "an HTTP 400 is not retried (the request is wrong)"
is "$(sed -n 3p "$T/err")" \
	"grpo-collect: $T/p4.jsonl:4: the server's answer is refused: choices[0]: no prompt token ids: ask vLLM with \"return_token_ids\": true, or wrap the line as {\"request\": ..., \"response\": ...} with the request's prompt as token ids" \
	"an answer without token ids is refused by the importer, naming the prompt"
is "$(sed -n 4p "$T/err")" "grpo-collect: $T/p4.jsonl: skipped 3 of 4 prompts" "and the skips are counted"
grpo-collect --server "$URL" --prompts "$T/p4.jsonl" -n 2 --retries 0 -e fail -o "$T/f/rollouts" 2> "$T/err"
is "$?:$(visible "$T/f" | wc -l | tr -d ' '):$(tail -n 1 "$T/err")" \
	"1:0:grpo-collect: $T/p4.jsonl: 3 of 4 prompts failed: nothing published (-e fail)" \
	"-e fail: a prompt that fails fails the run, and nothing is published"
prompts "$T/p5.jsonl" "fewer"
grpo-collect --server "$URL" --prompts "$T/p5.jsonl" -n 2 --retries 0 -o "$T/g/rollouts" 2> "$T/err"
is "$?:$(visible "$T/g" | wc -l | tr -d ' ')" "1:0" "every prompt failed: exit 1, nothing published"

# --- an answer longer than --max-tokens asked for --------------------------------
# The server went past the limit: storing it would hand the trainer sequences
# longer than the user allowed, so the answer is refused as a malformed one is,
# naming the prompt and the group, and not retried (the server is wrong, not busy).
prompts "$T/pl.jsonl" "shortA" "overlong" "[31,32]"
cat > "$S/script.json" <<'EOF2'
{"plans": {"overlong": ["long"], "31,32": ["long"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pl.jsonl" -n 2 --max-tokens 2 --responses "$T/rl.jsonl" \
	-o "$T/long/rollouts" 2> "$T/err"
is "$?:$(groups "$T/long"):$(json_of "$T/long" | grep -c '"response_tokens":\[[0-9]*,[0-9]*,')" "0:1:0" \
	"-e skip: the answers holding responses past --max-tokens are dropped, the others published"
is "$(sed -n 1p "$T/err" | sed 's/group cmpl-[0-9a-f]*-1,/group ID,/')" \
	"grpo-collect: $T/pl.jsonl:2: the server's answer is refused: group ID, trajectory 0: 3 response tokens, more than the request's max_tokens, 2" \
	"an answer past --max-tokens names the prompt's line, the group and the limit"
is "$(grep -c '"prompt": "overlong"' "$S/log"):$(tail -n 1 "$T/err")" "1:grpo-collect: $T/pl.jsonl: skipped 2 of 3 prompts" \
	"not retried, and counted as skipped"
grpo-collect --server "$URL" --api sglang --prompts "$T/pl.jsonl" -n 2 --max-tokens 2 -e fail -o "$T/long2/rollouts" \
	2> "$T/err"
is "$?:$(visible "$T/long2" | wc -l | tr -d ' '):$(grep -c "more than the request's max_new_tokens, 2" "$T/err")" "1:0:2" \
	"sglang, -e fail: max_new_tokens is checked too, and nothing is published"
grpo-collect --step 0 "$T/rl.jsonl" 2> "$T/err" > /dev/null
is "$?:$(sed 's/group cmpl-[0-9a-f]*-1,/group ID,/' "$T/err")" \
	"1:grpo-collect: $T/rl.jsonl:2: group ID, trajectory 0: 3 response tokens, more than the request's max_tokens, 2" \
	"importing the saved answers refuses the same line"

# --- group integrity, counted as for an imported file ---------------------------
# -n 1: each prompt a group of one member, which GRPO learns nothing from
prompts "$T/p1m.jsonl" "oneA" "oneB"
grpo-collect --server "$URL" --prompts "$T/p1m.jsonl" -n 1 --responses "$T/r1m.jsonl" -o "$T/one/rollouts" 2> "$T/err"
grpo-collect --step 0 "$T/r1m.jsonl" 2> "$T/err.imported" > /dev/null
is "$?:$(cat "$T/err"):$(groups "$T/one")" "0:$(cat "$T/err.imported"):2" \
	"-n 1: the groups of one member are counted, as importing the saved answers counts them"

# --- the server's version, --max-lag, --policy-version ---------------------------
echo '{"model_path": "/models/policy/step_4"}' > "$S/script.json"
mkdir -p "$T/h/policy/step_9" "$T/h/policy/step_3"
echo '{}' > "$T/h/policy/step_9/config.json"
echo '{}' > "$T/h/policy/step_3/config.json"
prompts "$T/p6.jsonl" "v1" "v2"
n0=$(posts /v1/completions)
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" --max-lag 4 -o "$T/h/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(visible "$T/h" | wc -l | tr -d ' '):$(($(posts /v1/completions) - n0))" \
	"3:grpo-collect: $URL serves policy version 4 (/models/policy/step_4), older than the trainer's newest, 9, by more than --max-lag 4: nothing sampled (sync the server and run again):0:0" \
	"--max-lag refuses a server older than the newest policy/step_K minus L (exit 3), asking nothing"
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" --max-lag 5 -o "$T/h/rollouts" 2> "$T/err"
is "$?:$(visible "$T/h" | sed 's,.*/rollouts/\(step_[0-9]*\)/.*,\1,'):$(json_of "$T/h" | grep -o '"policy_version":[0-9]*' | sort -u)" \
	'0:step_4:"policy_version":4' "within the lag: sampled, tagged with the server's version (its model path's step_K)"
echo '{"model_path": "/models/base"}' > "$S/script.json"
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" --max-lag 5 -o "$T/h/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"3:grpo-collect: $URL serves /models/base, whose path names no step_K: its policy version is unknown, and --max-lag needs it; nothing sampled" \
	"--max-lag refuses a server whose version is unknown"
rm -rf "$T/h/rollouts"
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" -o "$T/h/rollouts" 2> "$T/err"
is "$?:$(visible "$T/h" | sed 's,.*/rollouts/\(step_[0-9]*\)/.*,\1,')" "0:step_9" \
	"a server that names no version: the newest SPOOL/policy/step_K tags the rollouts"
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" --policy-version 7 | grpo-cat --json > "$T/out"
is "$(grep -o '"policy_version":[0-9]*' "$T/out" | sort -u)" '"policy_version":7' "--policy-version K tags them K"
ln -s "$T/h/policy/step_3" "$T/h/policy/current"
echo "{\"model_path\": \"$T/h/policy/current\"}" > "$S/script.json"
grpo-collect --server "$URL" --prompts "$T/p6.jsonl" | grpo-cat --json > "$T/out"
is "$(grep -o '"policy_version":[0-9]*' "$T/out" | sort -u)" '"policy_version":3' \
	"a served path that links to step_K (vllm-reload.sh) is followed"

# --- --responses: a file that cannot be written fails the run before sampling ---
echo '{}' > "$S/script.json"
prompts "$T/pr.jsonl" "respA" "respB"
grpo-collect --server "$URL" --prompts "$T/pr.jsonl" --responses "$T/nodir/r.jsonl" -o "$T/r/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(grep -c '"prompt": "resp' "$S/log")" \
	"1:grpo-collect: $T/nodir/r.jsonl: No such file or directory:0" \
	"--responses FILE that cannot be opened fails at once, before any prompt is sent"
is "$(visible "$T/r" | wc -l | tr -d ' ')" 0 "and nothing is published"
cp "$T/pr.jsonl" "$T/pr2.jsonl"
grpo-collect --server "$URL" --prompts "$T/pr2.jsonl" --responses "$T/pr2.jsonl" -o "$T/r/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(cmp "$T/pr.jsonl" "$T/pr2.jsonl" 2>&1):$(visible "$T/r" | wc -l | tr -d ' ')" \
	"1:grpo-collect: --responses $T/pr2.jsonl is the prompts file, which it would empty: nothing done::0" \
	"--responses naming the prompts file is refused, the prompts left as they were"
# a full disk under the saved answers (/dev/full: every write fails with ENOSPC)
if [ -w /dev/full ]; then
	grpo-collect --server "$URL" --prompts "$T/pr.jsonl" --responses /dev/full -o "$T/r/rollouts" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(visible "$T/r" | wc -l | tr -d ' ')" \
		"75:grpo-collect: /dev/full: write failed: No space left on device:0" \
		"--responses on a full disk: the run fails saying so, exit 75, and nothing is published"
	# answers enough to fill stdio's buffer while they come: the first write that fails is the one said
	i=0
	set --
	while [ $i -lt 80 ]; do set -- "$@" "$i+$i="; i=$((i + 1)); done
	prompts "$T/many.jsonl" "$@"
	grpo-collect --server "$URL" --prompts "$T/many.jsonl" --responses /dev/full -o "$T/r/rollouts" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(visible "$T/r" | wc -l | tr -d ' ')" \
		"75:grpo-collect: /dev/full: write failed: No space left on device:0" \
		"--responses filling up mid-run: said as such, exit 75, nothing published"
else
	skip "no /dev/full to fill the disk under --responses"
	skip "no /dev/full to fill the disk under --responses"
fi

# --- a server that conditions on other prompt ids than those sent (a BOS added) ---
echo '{"bos": 1}' > "$S/script.json"
prompts "$T/pb.jsonl" "[21,22]" "bostext"
grpo-collect --server "$URL" --prompts "$T/pb.jsonl" -n 2 -o "$T/bos/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"0:grpo-collect: $T/pb.jsonl:1: warning: the server's prompt ids differ from those sent in 2 sequences: stored the server's, which its logprobs are of" \
	"a prompt sent as ids that the server changed is named with its sequences counted (text sent: nothing to compare)"
json_of "$T/bos" | grep '"prompt_tokens":\[1,21,22\]' > "$T/out"
is "$(grep -o '"prompt_tokens":\[[0-9,]*\]\|"answer":"[0-9]"' "$T/out" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')" \
	' 2 "answer":"1"  2 "prompt_tokens":[1,21,22] ' \
	"the trajectories hold the server's prompt, with the prompts file's answer"

# --- OpenAI-style --------------------------------------------------------------
echo '{}' > "$S/script.json"
prompts "$T/p7.jsonl" "[11,12]" "text"
grpo-collect --server "$URL" --api openai --prompts "$T/p7.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-collect: $T/p7.jsonl:2: --api openai cannot send text: an OpenAI-style server gives no prompt token ids back; give prompt_tokens, or --tokenizer" \
	"openai: text prompts are refused up front"
prompts "$T/p8.jsonl" "[11,12]"
grpo-collect --server "$URL" --api openai --prompts "$T/p8.jsonl" > /dev/null 2> "$T/err"
is "$?:$(head -n 1 "$T/err")" \
	"1:grpo-collect: $T/p8.jsonl:1: the server's answer is refused: choices[0]: no token ids: the logprob tokens are text; ask vLLM with \"return_token_ids\" or \"return_tokens_as_token_ids\"" \
	"openai: an answer without token ids is refused clearly"
grep '"path": "/v1/completions"' "$S/log" | tail -n 1 > "$T/req"
is "$(grep -c 'return_token_ids\|top_k' "$T/req")" 0 "openai: only OpenAI's fields are sent"
echo '{"tokens_as_ids": true}' > "$S/script.json"
prompts "$T/p9.jsonl" "[13,14]"
grpo-collect --server "$URL" --api openai --prompts "$T/p9.jsonl" -n 2 2> "$T/err" | grpo-cat --json > "$T/out"
is "$(cat "$T/err"):$(grep -c '"prompt_tokens":\[13,14\]' "$T/out")" ":1" \
	"openai: token ids as \"token_id:N\" strings (vLLM --return-tokens-as-token-ids) are taken"

# --- usage -----------------------------------------------------------------------
grpo-collect --server "$URL" "$T/r1.jsonl" 2> "$T/err"
# a usage error: the message, then the usage
is "$?:$(sed -n 1p "$T/err"):$(sed -n 2p "$T/err" | cut -d' ' -f1-2)" \
	"2:grpo-collect: --server and --prompts go together, without FILEs:usage: grpo-collect" "--server needs --prompts"

# --- the first question, what the server serves, retried as the prompts are -----
# A server being restarted (a sync) refuses connections or answers 503 for a
# while: the run waits for it as for a prompt's request rather than fail at
# once. A fresh server, so that its per-path counts start here.
S2="$T/server2"
fake_server "$S2"
gets() { grep -c '"method": "GET"' "$S2/log"; }
prompts "$T/pq.jsonl" "probeA"
cat > "$S2/script.json" <<'EOF2'
{"plans": {"/v1/models": ["drop", "503:2", "500", "ok"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pq.jsonl" -n 2 --retries 3 -o "$T/pq/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(groups "$T/pq"):$(gets)" "0::1:4" \
	"GET /v1/models: a dropped connection, a 503 and a 500 are retried, then the prompts sampled"
grep '"method": "GET"' "$S2/log" | sed 's/.*"t": \([0-9.]*\).*/\1/' > "$T/t"
is "$(awk 'NR==2{a=$1} NR==3{d=$1-a; print (d >= 2 && d < 15) ? "ok" : "gap " d}' "$T/t")" ok \
	"the 503's Retry-After (2 s) is waited for"
cat > "$S2/script.json" <<'EOF2'
{"plans": {"/get_model_info": ["500"]}}
EOF2
grpo-collect --server "$URL" --api sglang --prompts "$T/pq.jsonl" --retries 1 -o "$T/pq2/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(grep -c '"method": "POST"' "$S2/log")" \
	"1:grpo-collect: $URL/get_model_info: HTTP 500 (after 2 attempts):1" \
	"a server still failing after --retries: exit 1, the attempts counted, no prompt sent"
n=$(gets)
cat > "$S2/script.json" <<'EOF2'
{"plans": {"/v1/models": ["404"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pq.jsonl" --retries 3 -o "$T/pq3/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err"):$(($(gets) - n))" "1:grpo-collect: $URL/v1/models: HTTP 404:1" \
	"an HTTP 404 is not retried (nothing is served there)"

# --- a server that is not there: exit 75, "later", as a full disk is -------------
# Refused, dropped or timed-out connections and HTTP 408, 429, 502, 503 and 504
# that outlast --retries say the server is being restarted or is overloaded: a
# cron job's next run may well succeed. A 500, a 404 or an answer that is
# wrong stays 1 (above), and one failure for good among them makes it 1.
cat > "$S2/script.json" <<'EOF2'
{"plans": {"/v1/models": ["503"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pq.jsonl" --retries 1 -o "$T/pq4/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" "75:grpo-collect: $URL/v1/models: HTTP 503 (after 2 attempts)" \
	"a server answering 503 after --retries: exit 75"
grpo-collect --server http://127.0.0.1:9 --prompts "$T/pq.jsonl" --retries 0 --timeout 5 -o "$T/pq5/rollouts" \
	2> "$T/err"
is "$?:$(grep -c '^grpo-collect: http://127.0.0.1:9/v1/models: ' "$T/err")" "75:1" \
	"no server at all (a refused connection): exit 75, naming the URL"
prompts "$T/pd.jsonl" "down1" "down2"
cat > "$S2/script.json" <<'EOF2'
{"plans": {"down1": ["drop"], "down2": ["503:1"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pd.jsonl" --retries 1 -o "$T/pd/rollouts" 2> "$T/err"
is "$?:$(visible "$T/pd" | wc -l | tr -d ' '):$(tail -n 1 "$T/err")" \
	"75:0:grpo-collect: $T/pd.jsonl: 2 of 2 prompts failed: nothing published" \
	"every prompt's connection dropped or answered 503: exit 75, nothing published"
prompts "$T/pe.jsonl" "down1" "bad"
cat > "$S2/script.json" <<'EOF2'
{"plans": {"down1": ["drop"], "bad": ["400"]}}
EOF2
grpo-collect --server "$URL" --prompts "$T/pe.jsonl" --retries 1 -e fail -o "$T/pe/rollouts" 2> "$T/err"
is "$?:$(visible "$T/pe" | wc -l | tr -d ' ')" "1:0" \
	"one prompt dropped and one refused for good (HTTP 400) under -e fail: exit 1"
