#!/bin/sh
# Rollouts from an inference server instead of grpo-collect's own sampler:
# GSM8K questions sent to a vLLM server's /v1/completions with curl, its
# responses piped into grpo-collect, which publishes them into the spool as
# the groups of policy version STEP, for grpo-score and the rest of the loop.
#
#   1. the prompts file SPOOL/gsm8k-prompts.jsonl, made from GSM8K's
#      train.jsonl: {"prompt": question, "answer": the number after ####}
#   2. one request per prompt, n samples with their token ids and logprobs
#      ("return_token_ids", "logprobs"), each response wrapped with its
#      request and answer ({"request": ..., "response": ..., "answer": ...},
#      grpo-collect(1) FORMATS) so the groups carry the answer to the scorer
#   3. once every request has been answered (SPOOL/responses.jsonl),
#      grpo-collect -o SPOOL/rollouts --step STEP < SPOOL/responses.jsonl;
#      a request that fails fails the import, and nothing is published
#
# An SGLang server works the same through its OpenAI-style /v1/completions;
# its native /generate responses are read too (grpo-collect --format sglang),
# wrapped with the request, which holds the prompt ids they lack.
#
# Usage: sh examples/import-server.sh SPOOL
# Environment: GRPO_SERVER (the server's URL, http://localhost:8000),
# GRPO_SERVED_MODEL (the model name it serves, Qwen/Qwen2.5-1.5B-Instruct),
# GRPO_GSM8K (the directory of train.jsonl, ../shared/data/gsm8k from the
# source tree), GRPO_IMPORT_PROMPTS (questions, 8), GRPO_IMPORT_SAMPLES
# (responses per question, 8), GRPO_IMPORT_STEP (the policy version the
# server runs, 0), CURL (the command that posts a request, curl; split at
# blanks, so it may carry options, CURL='curl --max-time 600', and a curl
# whose path holds a blank is named by its directory on PATH instead).
# Needs perl (its core JSON::PP) to make the JSON.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
[ $# -eq 1 ] || { echo "usage: import-server.sh SPOOL" >&2; exit 2; }
spool=$1
server=${GRPO_SERVER:-http://localhost:8000}
served=${GRPO_SERVED_MODEL:-Qwen/Qwen2.5-1.5B-Instruct}
gsm8k=${GRPO_GSM8K:-$top/../shared/data/gsm8k}
n=${GRPO_IMPORT_PROMPTS:-8}
G=${GRPO_IMPORT_SAMPLES:-8}
step=${GRPO_IMPORT_STEP:-0}
curl=${CURL:-curl}
mkdir -p "$spool"

# 1. the prompts
head -n "$n" "$gsm8k/train.jsonl" | perl -MJSON::PP -ne '
	BEGIN { $j = JSON::PP->new->canonical }
	$r = decode_json($_);
	($a) = $r->{answer} =~ /####\s*(.*?)\s*$/;
	$a =~ s/,//g;
	print $j->encode({ prompt => $r->{question}, answer => $a }), "\n";
' > "$spool/gsm8k-prompts.jsonl"

# 2. a request per prompt, a tab, its answer (JSON escapes every tab)
perl -MJSON::PP -ne '
	BEGIN { ($model, $G) = @ARGV[0, 1]; @ARGV = (); $j = JSON::PP->new->canonical }
	$p = decode_json($_);
	print $j->encode({ model => $model, n => $G + 0, max_tokens => 512, temperature => 1.0,
	                   logprobs => 1, return_token_ids => JSON::PP::true,
	                   return_tokens_as_token_ids => JSON::PP::true,
	                   prompt => $p->{prompt} . "\nLet us think step by step and give the final answer after \"####\"." }),
	      "\t", $j->encode($p->{answer}), "\n";
' "$served" "$G" < "$spool/gsm8k-prompts.jsonl" |
	while IFS="	" read -r request answer; do
		# shellcheck disable=SC2086 # CURL: a command and its options
		response=$($curl -sS --fail -H 'Content-Type: application/json' -d "$request" \
			"$server/v1/completions")
		printf '{"request":%s,"response":%s,"answer":%s}\n' "$request" "$response" "$answer"
	done > "$spool/responses.jsonl.tmp"
# (kept whole before the import: piped, the responses before a request that
# failed would end the input at a line, look complete, and be published)
mv "$spool/responses.jsonl.tmp" "$spool/responses.jsonl"

# 3. the groups, published whole once every response read
grpo-collect -o "$spool/rollouts" --step "$step" < "$spool/responses.jsonl"
