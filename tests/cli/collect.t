#!/bin/sh
# grpo-collect: exact imports of every input format, bad input with file and
# line, --on-error, answers, re-runs, and crashes during a publish.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 77
D="$GRPO_TOP/tests/data/collect"
view() { grpo-cat --json "$@"; }
# visible FILES of a step directory (what a consumer would see)
visible() { ls "$1" 2>/dev/null | grep -v '^\.' ; }

# --- every input format, exactly -------------------------------------------
# vllm-ids: return_token_ids alone (ids in choices[].token_ids, prompt_token_ids
# per choice or at the top; token strings are text, colliding and lossy);
# atropos-overrides: group_overrides.temperature under a member's own, and
# group_overrides.set_advantage_to_zero.
# A fixture with a prompt sampled once holds a group of one member, which is
# counted (group-integrity.t); the rest import silently.
for f in vllm-completions vllm-chat vllm-generate vllm-demo vllm-trl vllm-ids sglang atropos atropos-overrides native; do
	grpo-collect --step 3 "$D/$f.jsonl" > "$T/$f.zst" 2> "$T/err"
	case $f in
	vllm-completions | vllm-demo | sglang | atropos | native)
		is "$?:$(cat "$T/err")" "0:grpo-collect: warning: 1 group of one member (its advantage is always 0)" \
			"$f: imports, counting its group of one member" ;;
	*) is "$?:$(cat "$T/err")" "0:" "$f: imports silently" ;;
	esac
	view "$T/$f.zst" > "$T/$f.json"
	is "$(cmp "$T/$f.json" "$D/$f.expected" 2>&1)" "" "$f: the groups are exactly $f.expected"
done
is "$(grpo-collect --step 3 < "$D/sglang.jsonl" | view -)" "$(cat "$D/sglang.expected")" \
	"standard input in, standard output out: the same groups"
cat "$D"/vllm-chat.jsonl "$D"/atropos.jsonl "$D"/native.jsonl > "$T/mixed.jsonl"
is "$(grpo-collect --step 3 "$T/mixed.jsonl" | view - | wc -l | tr -d ' ')" 6 \
	"formats are detected line by line in one input"
grpo-collect --step 3 --format sglang "$D/vllm-chat.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-collect: $D/vllm-chat.jsonl:1: no meta_info: not an SGLang /generate response" \
	"--format forces a format"

# --- answers ---------------------------------------------------------------
grpo-collect --step 3 --answers "$D/answers.jsonl" "$D/vllm-completions.jsonl" "$D/native.jsonl" |
	view - | sed 's/.*"answer":"\([^"]*\)".*/\1/; t; s/.*/-/' | tr '\n' ' ' > "$T/answers"
is "$(cat "$T/answers")" "4 6 - 9 x - " \
	"--answers by request id, by prompt index (counted across inputs), by group_id; the input's own kept"

printf '%s\n' '{"question":"2+2?","answer":"2+2 = <<2+2=4>>4\n#### 4"}' '{"question":"3+3?","answer":"#### 6"}' \
	> "$T/gsm8k.jsonl"
is "$(grpo-collect --step 0 --answers "$T/gsm8k.jsonl" "$D/vllm-completions.jsonl" | view - |
	sed 's/.*"answer":\("[^"]*"\).*/\1/; t; s/.*/-/' | tr '\n' ' ')" '"2+2 = <<2+2=4>>4\n#### 4" "#### 6" - ' \
	"--answers: a prompts file without keys answers by line number"
# an answer given as a JSON number is stored as written (as --model and
# --server store a prompt's), not as 17 digits: "0.3", not "0.29999999999999999"
printf '%s\n' '{"answer":0.3}' '{"id":2.5,"answer":-7.1}' > "$T/num.jsonl"
printf '%s\n' "$(sed -n 1p "$D/native.jsonl")" \
	'{"request":{"prompt":[1]},"response":{"choices":[{"token_ids":[7],"prompt_token_ids":[1],"logprobs":{"token_logprobs":[-1]}}]},"id":2.5}' \
	'{"request":{"prompt":[1]},"response":{"choices":[{"token_ids":[8],"prompt_token_ids":[1],"logprobs":{"token_logprobs":[-1]}}]},"answer":1.1}' \
	> "$T/num-in.jsonl"
is "$(grpo-collect --step 0 --answers "$T/num.jsonl" "$T/num-in.jsonl" 2> /dev/null | view - |
	sed 's/.*"answer":\("[^"]*"\).*/\1/' | tr '\n' ' ')" '"0.3" "-7.1" "1.1" ' \
	"--answers and a wrapper's answer given as numbers are stored as written, and matched by a numeric id"
printf '%s\n' '{"index":1,"answer":"a"}' '{"index":1,"answer":"b"}' > "$T/dup.jsonl"
grpo-collect --step 0 --answers "$T/dup.jsonl" "$D/native.jsonl" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/dup.jsonl: two answers for index 1" "two answers for one prompt are refused"
printf '%s\n' '{"index":0,"answer":"5"} {"index":1,"answer":"6"}' > "$T/two.jsonl"
grpo-collect --step 0 --answers "$T/two.jsonl" "$D/native.jsonl" 2> "$T/err" > /dev/null
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/two.jsonl:1: not valid JSON (text after the value, near byte 26)" \
	"two answers on one line are refused, not the second dropped"

# --- bad input: FILE:LINE: reason, exit 1, nothing published -----------------
good='{"prompt_tokens":[1,2],"response_tokens":[3],"logprobs":[-0.5]}'
bad() { # bad DESCRIPTION LINE EXPECTED-REASON [OPTIONS]
	desc=$1 line=$2 want=$3
	shift 3
	rm -rf "$T/sp"
	printf '%s\n%s\n%s\n' "$good" "$line" "$good" > "$T/bad.jsonl"
	grpo-collect -o "$T/sp/rollouts" --step 1 "$@" "$T/bad.jsonl" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(visible "$T/sp/rollouts/step_1/rank_0")$(ls "$T/sp/rollouts/.tmp" 2>/dev/null)" \
		"1:grpo-collect: $T/bad.jsonl:2: $want:" "$desc: exit 1, the message, nothing published"
}
bad "length mismatch" '{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1]}' \
	"1 logprobs for 2 response_tokens"
bad "negative token id" '{"prompt_tokens":[1,-4],"response_tokens":[2],"logprobs":[-1]}' \
	"trajectory 0: prompt_tokens[1] is -4, a negative token id"
bad "token id >= --vocab-size" '{"prompt_tokens":[1],"response_tokens":[151936],"logprobs":[-1]}' \
	"trajectory 0: response_tokens[0] is 151936, not below --vocab-size 151936" --vocab-size 151936
bad "logprob above 0" '{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,0.25]}' \
	"trajectory 0: logprobs[1] is 0.25, above 0"
bad "NaN logprob (Atropos)" '{"tokens":[[1,2,3]],"masks":[[-100,2,3]],"scores":[1],"inference_logprobs":[[1.0,-0.5,NaN]]}' \
	"trajectory 0: logprobs[1] is NaN or null, not a finite number"
bad "Infinity logprob" '{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-Infinity]}' \
	"trajectory 0: logprobs[0] is -Infinity, not a finite number"
bad "vLLM's -9999 sentinel" '{"id":"c","choices":[{"logprobs":{"token_logprobs":[-9999.0],"tokens":["token_id:5"]},"prompt_token_ids":[1]}]}' \
	'trajectory 0: logprobs[0] is -9999, a server'"'"'s sentinel for "no logprob" (vLLM writes -9999, SGLang -999999999)'
bad "SGLang's -999999999 sentinel" '{"text":" 4","output_ids":[220,19],"meta_info":{"id":"a","finish_reason":{"type":"stop"},"prompt_tokens":2,"input_token_logprobs":[[null,3838,null],[-0.5,30,null]],"output_token_logprobs":[[-0.25,220,null],[-999999999.0,19,null]]}}' \
	'trajectory 0: logprobs[1] is -1e+09, a server'"'"'s sentinel for "no logprob" (vLLM writes -9999, SGLang -999999999)'
bad "vLLM length mismatch" '{"choices":[{"logprobs":{"token_logprobs":[-1]},"token_ids":[5,6],"prompt_token_ids":[1]}]}' \
	"choices[0]: 1 logprobs for 2 token_ids"
bad "Atropos rows disagree" '{"tokens":[[1,2,3]],"masks":[[-100,2]],"scores":[1],"inference_logprobs":[[1,-1,-1]]}' \
	"masks[0] has 2 entries, tokens[0] 3"
bad "malformed JSON" '{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1}' \
	"not valid JSON (near byte 58)"
bad "unknown format" '{"model":"x","usage":{}}' \
	'not a rollout in any known format (no "choices", "meta_info", "tokens" and "masks", "trajectories" or "response_tokens")'

printf '%s\n' '{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1]}' > "$T/len.jsonl"
grpo-collect --step 0 - < "$T/len.jsonl" 2> "$T/err" > /dev/null
is "$(cat "$T/err")" "grpo-collect: <stdin>:1: 1 logprobs for 2 response_tokens" "standard input is named <stdin>"
grpo-collect --step 0 "$T/len.jsonl" 2> /dev/null | view - > /dev/null 2>&1
is "$?" 1 "without -o, a failed input leaves an unended spool file that readers reject"

# --- --on-error skip -------------------------------------------------------
rm -rf "$T/sp"
{ echo "$good"; echo 'not json'; echo "$good" | sed 's/-0.5/0.5/'; echo; echo "$good"; } > "$T/mix.jsonl"
grpo-collect -o "$T/sp/rollouts" --step 1 --on-error skip "$T/mix.jsonl" 2> "$T/err"
is "$?" 0 "--on-error skip: exit 0"
is "$(cat "$T/err")" "grpo-collect: $T/mix.jsonl:2: not valid JSON (near byte 1)
grpo-collect: $T/mix.jsonl:3: trajectory 0: logprobs[0] is 0.5, above 0
grpo-collect: $T/mix.jsonl: skipped 2 of 4 lines
grpo-collect: warning: 1 record repeated an earlier one exactly: dropped
grpo-collect: warning: 1 group of one member (its advantage is always 0)" \
	"each skipped line is named, then counted (blank lines are not lines); the good line given twice is dropped once"
is "$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" 1 "the good line is published once"
# Lone trajectories gathered by group_id take the prompt index of their
# group's first line; a skipped one must not move the groups after it onto
# other --answers (nor its own group, when it was the first line).
printf '%s\n' '{"answer":"A0"}' '{"answer":"A1"}' '{"answer":"A2"}' > "$T/idx.jsonl"
lone() { printf '{"prompt_tokens":[1],"response_tokens":[3],"logprobs":[%s],"group_id":"%s"}\n' "$2" "$1"; }
{ lone x -0.5; lone x 0.5; lone y -0.5; lone x 0.5; lone z -0.5; } > "$T/lone-mid.jsonl"
{ lone x 0.5; lone x -0.5; lone y -0.5; } > "$T/lone-first.jsonl"
for f in lone-mid lone-first; do
	grpo-collect -e skip --step 0 --answers "$T/idx.jsonl" "$T/$f.jsonl" 2> /dev/null | view - |
		sed 's/^{"group_id":"\([a-z]\)".*"answer":"\(A[0-9]\)".*/\1=\2/' | tr '\n' ' ' > "$T/$f.got"
done
is "$(cat "$T/lone-mid.got")/$(cat "$T/lone-first.got")" "x=A0 y=A1 z=A2 /x=A0 y=A1 " \
	"-e skip: a skipped lone trajectory keeps the prompt indices of its group and the groups after it"

# --- a request and its response that disagree on the prompt ids ------------
# the server conditioned on the response's (a BOS added): those are stored,
# the line named with its sequences counted, for vLLM and SGLang alike
sg='{"request":{"input_ids":[5,6]},"response":[{"meta_info":{"id":"s","prompt_tokens":3,"input_token_logprobs":[[null,1,null],[-1,5,null],[-1,6,null]],"output_token_logprobs":[[-1,7,null]]}},{"meta_info":{"id":"t","prompt_tokens":3,"input_token_logprobs":[[null,1,null],[-1,5,null],[-1,6,null]],"output_token_logprobs":[[-1,8,null]]}}]}'
vl='{"request":{"prompt":[5,6]},"response":{"id":"v","choices":[{"token_ids":[7],"prompt_token_ids":[1,5,6],"logprobs":{"token_logprobs":[-1],"tokens":["x"]}}]}}'
printf '%s\n' "$sg" "$vl" '{"request":{"prompt":[1,5,6]},"response":{"id":"w","choices":[{"token_ids":[7],"prompt_token_ids":[1,5,6],"logprobs":{"token_logprobs":[-1],"tokens":["x"]}}]}}' > "$T/differ.jsonl"
grpo-collect --step 0 "$T/differ.jsonl" 2> "$T/err" | view - > "$T/differ.json"
is "$(grep -v 'of one member' "$T/err")" "grpo-collect: $T/differ.jsonl:1: warning: the server's prompt ids differ from those sent in 2 sequences: stored the server's, which its logprobs are of
grpo-collect: $T/differ.jsonl:2: warning: the server's prompt ids differ from those sent in 1 sequence: stored the server's, which its logprobs are of" \
	"a response whose prompt ids differ from its request's is named, its sequences counted"
is "$(grep -o '"prompt_tokens":\[[0-9,]*\]' "$T/differ.json" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')" \
	' 4 "prompt_tokens":[1,5,6] ' "and the server's prompt ids are stored (SGLang's and vLLM's)"

# --- publishing: names, re-runs, splitting ----------------------------------
rm -rf "$T/sp"
grpo-collect -o "$T/sp/rollouts" --step 3 --rank 2 "$D/vllm-completions.jsonl"
name=$(visible "$T/sp/rollouts/step_3/rank_2")
case $name in collect-[0-9a-f]*-0000.zst) r=0 ;; *) r=1 ;; esac
is "$r:$(view "$T/sp/rollouts/step_3/rank_2/$name" | cmp - "$D/vllm-completions.expected" 2>&1)" "0:" \
	"-o publishes one file, named after the input, into step_N/rank_X: $name"
cp "$D/vllm-completions.jsonl" "$T/copy.jsonl"
grpo-collect -v -o "$T/sp/rollouts" --step 3 --rank 2 "$T/copy.jsonl" 2> "$T/err"
is "$?:$(visible "$T/sp/rollouts/step_3/rank_2")" "0:$name" "re-running the same input publishes nothing twice"
grep -q "already published: $T/sp/rollouts/step_3/rank_2/$name" "$T/err"
is "$?" 0 "and -v says so"
# (the runs below publish the same input into rank_0: they start from a queue
# without step_3/rank_2, where it would make them refuse as another --rank)
rm -rf "$T/sp/rollouts/step_3"
grpo-collect -o "$T/sp/rollouts" --step 4 --max-groups 2 "$D/vllm-completions.jsonl" "$D/native.jsonl"
is "$(visible "$T/sp/rollouts/step_4/rank_0" | sed 's/collect-[0-9a-f]*-//' | sort | tr '\n' ' ')" \
	"0000.zst 0000.zst 0001.zst 0001.zst " "--max-groups 2 splits each input into files of at most 2 groups"
is "$(view "$T"/sp/rollouts/step_4/rank_0/* | wc -l | tr -d ' ')" 6 "and every group is in one of them"
for m in 1 0 3; do
	grpo-collect -o "$T/sp/rollouts" --step 4 --max-groups $m "$D/vllm-completions.jsonl" 2> "$T/err"
	st=$?
	is "$st:$(view "$T"/sp/rollouts/step_4/rank_0/* | wc -l | tr -d ' ')" "1:6" \
		"a re-run with --max-groups $m (another split) refuses and publishes no group twice"
done
grep -q "published already, split otherwise (another --max-groups) or made otherwise (another -t or -a); nothing published" "$T/err"
is "$?" 0 "saying why: $(cat "$T/err")"
grpo-collect -o "$T/sp/rollouts" --step 4 --max-groups 2 -t 0.5 "$D/vllm-completions.jsonl" 2> "$T/err"
is "$?:$(view "$T"/sp/rollouts/step_4/rank_0/* | wc -l | tr -d ' '):$(grep -c 'another -t or -a' "$T/err")" "1:6:1" \
	"so does one with another -t (other contents under the same names), and its message names -t too"
grpo-collect -o "$T/sp/rollouts" --step 4 --max-groups 2 "$D/vllm-completions.jsonl" "$D/native.jsonl"
is "$?:$(view "$T"/sp/rollouts/step_4/rank_0/* | wc -l | tr -d ' ')" "0:6" "the same split again publishes nothing new"

# A re-run under another --step (the cron line of grpo-collect(1) reads the
# step anew each minute) would publish every group of the input again, in
# another step directory: it is refused, naming where the input went.
grpo-collect -o "$T/sp/rollouts" --step 8 --max-groups 2 "$D/vllm-completions.jsonl" 2> "$T/err"
is "$?:$(visible "$T/sp/rollouts/step_8/rank_0" | wc -l | tr -d ' '):$(grep -c 'published already under step_4 (another --step)' "$T/err")" \
	"1:0:1" "a re-run with another --step refuses and publishes no group twice: $(cat "$T/err")"
# The same input given to a second worker, another --rank of the same step or
# of another, would publish every group twice as well.
grpo-collect -o "$T/sp/rollouts" --step 4 --rank 1 --max-groups 2 "$D/vllm-completions.jsonl" 2> "$T/err"
is "$?:$(visible "$T/sp/rollouts/step_4/rank_1" | wc -l | tr -d ' '):$(sed 's/collect-[0-9a-f]*-0000/NAME/' "$T/err")" \
	"1:0:grpo-collect: $D/vllm-completions.jsonl: $T/sp/rollouts/step_4/rank_0/NAME.zst: this input was published already under step_4, rank_0 (another --rank); nothing published, as that would publish its groups twice (re-run with --step 4 --rank 0)" \
	"another --rank of the same step refuses, naming where the input went"
grpo-collect -o "$T/sp/rollouts" --step 9 --rank 3 --max-groups 2 "$D/vllm-completions.jsonl" 2> "$T/err"
is "$?:$(visible "$T/sp/rollouts/step_9/rank_3" | wc -l | tr -d ' '):$(grep -c 'published already under step_4, rank_0 (another --rank and --step)' "$T/err")" \
	"1:0:1" "so does another --rank of another step: $(cat "$T/err")"

gzip -c "$D/vllm-completions.jsonl" > "$T/copy.jsonl.gz"
before=$(visible "$T/sp/rollouts/step_4/rank_0")
grpo-collect -o "$T/sp/rollouts" --step 4 --max-groups 2 "$T/copy.jsonl.gz"
is "$?:$(visible "$T/sp/rollouts/step_4/rank_0")" "0:$before" \
	"a gzip-compressed input reads as its text: the same groups, the same names, nothing new published"
zstd -q -c "$D/atropos.jsonl" | grpo-collect --step 3 | view - > "$T/z.json"
is "$(cmp "$T/z.json" "$D/atropos.expected" 2>&1)" "" "so does a zstd-compressed pipe"
head -c 300 "$T/copy.jsonl.gz" > "$T/trunc.jsonl.gz"
grpo-collect -o "$T/sp/rollouts" --step 6 "$T/trunc.jsonl.gz" 2> "$T/err"
is "$?:$(cat "$T/err"):$(visible "$T/sp/rollouts/step_6/rank_0")" \
	"75:grpo-collect: $T/trunc.jsonl.gz: truncated gzip input: the input ends before its compressed stream does (still being written?): nothing of it published; try again once it is complete:" \
	"a truncated compressed input publishes nothing, exit 75 (collect-incomplete.t)"

# --- usage -----------------------------------------------------------------
grpo-collect -o "$T/sp/rollouts" "$D/native.jsonl" 2> /dev/null
is "$?" 2 "-o without --step is a usage error"
grpo-collect --format csv "$D/native.jsonl" 2> /dev/null
is "$?" 2 "an unknown format is a usage error"
grpo-collect --on-error ignore "$D/native.jsonl" 2> /dev/null
is "$?" 2 "an unknown --on-error mode is a usage error"
is "$(grpo-collect --help | head -1 | cut -c1-20)" "usage: grpo-collect " "--help prints the usage to standard output"
grpo-collect -o "$T/sp5/rollouts" --step 5 --rank 1 "$T/absent.jsonl" "$D/native.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err"):$(visible "$T/sp5/rollouts/step_5/rank_1" | wc -l | tr -d ' ')" \
	"1:grpo-collect: $T/absent.jsonl: No such file or directory
grpo-collect: warning: 1 group of one member (its advantage is always 0):1" "a missing input is named; the others are published"

# --- crashes while publishing ----------------------------------------------
# Every point of the publish where the process can die (GRPO_FSYS_CRASH_AT),
# then at chosen points of a large one: no visible file is ever
# partial, and a re-run completes the publish.
check_visible() { # every visible file reads whole (one reader over all of them)
	[ -z "$(visible "$1")" ] || (cd "$1" && view $(visible .) > /dev/null 2>&1)
}
rm -rf "$T/sp"
GRPO_FSYS_TRACE=1 grpo-collect -o "$T/sp/trace" --step 1 --max-groups 2 "$D/native.jsonl" 2> "$T/trace"
calls=$(grep -c "^fsys " "$T/trace")
# the last call that writes a part (its close) and the first rename
last_write=$(grep "^fsys [0-9]* close$" "$T/trace" | tail -1 | cut -d' ' -f2)
first_rename=$(grep "^fsys [0-9]* rename_noreplace$" "$T/trace" | head -1 | cut -d' ' -f2)
[ "$calls" -gt 0 ] && [ "${last_write:-0}" -gt 0 ] && [ "${first_rename:-0}" -gt "${last_write:-0}" ]
is "$?" 0 "the publish's $calls file system calls write both parts (until call $last_write) before the first rename (call $first_rename)"
bad_points= early=
i=1
while [ "$i" -le "$calls" ]; do
	rm -rf "$T/sp"
	GRPO_FSYS_CRASH_AT=$i grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 2 "$D/native.jsonl" 2> /dev/null
	check_visible "$T/sp/rollouts/step_1/rank_0" > /dev/null || bad_points="$bad_points $i"
	[ "$i" -le "$first_rename" ] && [ -n "$(visible "$T/sp/rollouts/step_1/rank_0")" ] && early="$early $i"
	grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 2 "$D/native.jsonl" 2> /dev/null
	[ "$(view "$T"/sp/rollouts/step_1/rank_0/* 2>/dev/null | wc -l | tr -d ' ')" = 3 ] || bad_points="$bad_points r$i"
	i=$((i + 1))
done
is "$calls:${bad_points:-none}:${early:-none}" "$calls:none:none" \
	"a crash at any of the $calls calls leaves no partial file, none at all before the first rename; a re-run completes"

# A part that cannot be written (here: over the file size limit) fails the
# input before any part is published.
{ cat "$D/native.jsonl"; awk 'BEGIN { srand(3); printf "{\"group_id\":99,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[";
  for (k = 0; k < 30000; k++) printf "%s%d", k ? "," : "", int(rand() * 151000); printf "],\"logprobs\":[";
  for (k = 0; k < 30000; k++) printf "%s-%.5f", k ? "," : "", rand() * 5; print "]}]}" }'; } > "$T/fat.jsonl"
rm -rf "$T/sp"
(trap '' XFSZ; ulimit -f 64; exec grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 1 "$T/fat.jsonl") 2> "$T/err"
is "$?:$(visible "$T/sp/rollouts/step_1/rank_0"):$(ls "$T/sp/rollouts/.tmp")" "1::" \
	"the last of three parts fails to write: exit 1, no part published, no temporary left"
grep -q "write failed: File too large" "$T/err"
is "$?" 0 "and the message says why: $(cat "$T/err")"

groups=600
[ -n "$GRPO_SANITIZED" ] && groups=200
awk -v G=$groups 'BEGIN { srand(7); for (g = 0; g < G; g++) { printf "{\"group_id\":%d,\"trajectories\":[", g;
  for (i = 0; i < 4; i++) { printf "%s{\"prompt_tokens\":[", i ? "," : "";
    for (k = 0; k < 16; k++) printf "%s%d", k ? "," : "", (g * 31 + k) % 151000;
    printf "],\"response_tokens\":["; for (k = 0; k < 48; k++) printf "%s%d", k ? "," : "", int(rand() * 151000);
    printf "],\"logprobs\":["; for (k = 0; k < 48; k++) printf "%s-%.4f", k ? "," : "", rand() * 3;
    printf "]}" } print "]}" } }' > "$T/big.jsonl"
# Four crashes of a large publish at points its trace finds (the crash hook,
# as kill -9 would, but at the same point every time): halfway through
# writing the parts, at the first rename, halfway through the renames and at
# the last. The last leaves its spool for the re-run.
total=$(( (groups + 2) / 3 ))
rm -rf "$T/sp"
GRPO_FSYS_TRACE=1 grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 3 "$T/big.jsonl" 2> "$T/trace"
renames=$(grep "^fsys [0-9]* rename_noreplace$" "$T/trace" | cut -d' ' -f2)
r_first=$(echo "$renames" | head -1)
r_mid=$(echo "$renames" | sed -n "$(( $(echo "$renames" | wc -l) / 2 ))p")
r_last=$(echo "$renames" | tail -1)
w_mid=$(grep "^fsys [0-9]* write$" "$T/trace" | awk -v r="${r_first:-0}" '$2 < r { w[n++] = $2 } END { print w[int(n / 2)] }')
partial=0 seen= midway=0 early=0
for at in "$w_mid" "$r_first" "$r_mid" "$r_last"; do
	rm -rf "$T/sp"
	GRPO_FSYS_CRASH_AT=${at:-1} grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 3 "$T/big.jsonl" 2> /dev/null
	st=$?
	check_visible "$T/sp/rollouts/step_1/rank_0" > /dev/null || partial=$((partial + 1))
	n=$(visible "$T/sp/rollouts/step_1/rank_0" | wc -l | tr -d ' ')
	seen="$seen $n"
	[ "$st" -eq 86 ] || partial=$((partial + 1))
	[ "$at" = "$w_mid" ] || [ "$at" = "$r_first" ] && [ "$n" -ne 0 ] && early=$((early + 1))
	[ "$n" -gt 0 ] && [ "$n" -lt "$total" ] && midway=$((midway + 1))
done
is "$partial:$early" 0:0 "crashes at four points of a large publish (calls $w_mid, $r_first, $r_mid, $r_last): no visible partial file, none before the first rename (files seen:$seen of $total)"
[ "$midway" -eq 2 ]
is "$?" 0 "and $midway of the crashes (of 2) landed mid-publish, with some files renamed into place and not all"
grpo-collect -o "$T/sp/rollouts" --step 1 --max-groups 3 "$T/big.jsonl"
is "$?:$(visible "$T/sp/rollouts/step_1/rank_0" | wc -l | tr -d ' '):$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" \
	"0:$(( (groups + 2) / 3 )):$groups" "a re-run after the kills publishes the rest: every group exactly once"

[ "$_failed" -eq 0 ]
