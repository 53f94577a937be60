#!/bin/sh
# examples/import-server.sh: GSM8K questions to a vLLM server and its
# responses into grpo-collect, with recorded responses
# (examples/vllm-completions.jsonl) standing in for the server.
. "$GRPO_TOP/tests/cli/lib.sh"
G8K="$GRPO_SHARED/data/gsm8k"
[ -f "$G8K/train.jsonl" ] || skip_all "no GSM8K data in $G8K"
perl -MJSON::PP -e 1 2> /dev/null || skip_all "no perl with JSON::PP"
plan 6
# the stand-in for curl: keeps the requests and its --max-time, answers the
# recorded responses in turn. Found on PATH: CURL is split at blanks (it may
# carry options), and the path of $T may hold one.
mkdir "$T/bin"
PATH="$T/bin:$PATH"
cat > "$T/bin/curl" <<'EOS'
#!/bin/sh
while [ $# -gt 1 ]; do
	case $1 in
	-d) printf '%s\n' "$2" >> "$T/requests" ;;
	--max-time) printf '%s\n' "$2" >> "$T/max-time" ;;
	esac
	shift
done
echo "$1" >> "$T/urls"
n=$(wc -l < "$T/requests")
sed -n "${n}p" "$GRPO_TOP/examples/vllm-completions.jsonl"
EOS
chmod +x "$T/bin/curl"
T="$T" CURL="curl --max-time 600" GRPO_GSM8K="$G8K" GRPO_IMPORT_PROMPTS=2 GRPO_IMPORT_SAMPLES=2 GRPO_IMPORT_STEP=3 \
	GRPO_SERVER=http://gpu1:8000 sh "$GRPO_TOP/examples/import-server.sh" "$T/s" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out" "$T/err")" "0:" "the import runs, silently"
is "$(cut -c1-40 "$T/s/gsm8k-prompts.jsonl")" '{"answer":"72","prompt":"Natalia sold cl
{"answer":"10","prompt":"Weng earns $12 ' "the prompts file: GSM8K's questions with the number after ####"
is "$(sort -u "$T/urls"):$(grep -c '"n":2,.*"return_token_ids":true' "$T/requests")" \
	"http://gpu1:8000/v1/completions:2" "one request per question to the server, n samples with token ids"
is "$(sort -u "$T/max-time")" 600 "the options CURL carries reach curl"
grpo-cat "$T"/s/rollouts/step_3/rank_0/*.zst > "$T/groups" 2> "$T/err"
is "$?:$(grep -o '"answer":"[0-9]*"' "$T/groups" | sort -u | tr '\n' ' '):$(grep -c '"policy_version":3' "$T/groups")" \
	'0:"answer":"10" "answer":"72" :2' "two groups published in rollouts/step_3, carrying GSM8K's answers"

# the server fails the second request (curl --fail exits 22): the import
# fails and publishes nothing, rather than the first group as if it were all
cat > "$T/bin/curl" <<'EOS'
#!/bin/sh
while [ $# -gt 1 ]; do [ "$1" = -d ] && printf '%s\n' "$2" >> "$T/requests2"; shift; done
n=$(wc -l < "$T/requests2")
[ "$n" -eq 2 ] && { echo "curl: (22) The requested URL returned error: 500" >&2; exit 22; }
sed -n "${n}p" "$GRPO_TOP/examples/vllm-completions.jsonl"
EOS
T="$T" GRPO_GSM8K="$G8K" GRPO_IMPORT_PROMPTS=3 GRPO_IMPORT_SAMPLES=2 \
	GRPO_SERVER=http://gpu1:8000 sh "$GRPO_TOP/examples/import-server.sh" "$T/f" > "$T/out" 2> "$T/err"
st=$?
is "$([ $st -ne 0 ] && echo failed):$(find "$T/f/rollouts" -name '*.zst' 2> /dev/null | wc -l | tr -d ' ')" "failed:0" \
	"a request that fails fails the import, nothing published ($st: $(cat "$T/err"))"
