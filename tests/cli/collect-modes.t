#!/bin/sh
# grpo-collect's three ways (importing files, sampling with --model, sampling
# through --server) each take their own options: one that the way chosen
# does not use is a usage error naming the option and the way, before
# anything is read, sampled or published, rather than ignored.
. "$GRPO_TOP/tests/cli/lib.sh"
D="$GRPO_TOP/tests/data/collect"

# WAY|OPTION ARGUMENT: the options each way refuses
cat > "$T/refused" <<'EOF2'
importing files|--samples 2
importing files|--top-p 0.9
importing files|--top-k 5
importing files|--max-tokens 8
importing files|--seed 1
importing files|--offset 1
importing files|--count 1
importing files|--cursor CUR
importing files|--batch 2
importing files|--chat qwen
importing files|--tokenizer TOK
importing files|--device cpu
importing files|--precision fp32
importing files|--api sglang
importing files|--concurrency 2
importing files|--timeout 5
importing files|--retries 1
importing files|--served-model m
importing files|--max-lag 1
importing files|--responses RESP
sampling with --model|--format vllm
sampling with --model|--answers ANS
sampling with --model|--vocab-size 100
sampling with --model|--allow-missing-logprobs
sampling with --model|--on-error skip
sampling with --model|--api sglang
sampling with --model|--concurrency 2
sampling with --model|--timeout 5
sampling with --model|--retries 1
sampling with --model|--served-model m
sampling with --model|--max-lag 1
sampling with --model|--responses RESP
sampling through --server|--answers ANS
sampling through --server|--batch 2
sampling through --server|--device cpu
sampling through --server|--precision fp32
EOF2
plan $(($(wc -l < "$T/refused") + 15))

grpo-init --preset tiny --seed 3 -o "$T/m" > /dev/null || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3],"answer":"5"}' > "$T/p.jsonl"
echo '{"index":0,"answer":"5"}' > "$T/ans.jsonl"
# The server is never asked: a usage error comes first.
URL=http://127.0.0.1:9
way() { # way WAY OPTION...: grpo-collect in that way, publishing into $T/q
	w=$1
	shift
	case $w in
	importing*) grpo-collect -o "$T/q" -s 0 "$@" "$D/native.jsonl" ;;
	*--model) grpo-collect --model "$T/m" --prompts "$T/p.jsonl" --max-tokens 2 -o "$T/q" "$@" ;;
	*--server) grpo-collect --server "$URL" --prompts "$T/p.jsonl" -o "$T/q" "$@" ;;
	esac
}

while IFS='|' read -r w opt; do
	name=${opt%% *}
	arg=${opt#"$name"}
	arg=${arg# }
	case $arg in # the placeholders for paths, which may hold spaces ($TMPDIR)
	CUR) arg=$T/cur ;;
	TOK) arg=$T/m/tokenizer.json ;;
	RESP) arg=$T/resp ;;
	ANS) arg=$T/ans.jsonl ;;
	esac
	way "$w" "$name" ${arg:+"$arg"} > /dev/null 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err" | sed 's/ (it goes with [^)]*)$//'):$(sed -n 2p "$T/err" | cut -d' ' -f1-2):$(ls "$T/q" "$T/cur" "$T/resp" 2>&1 | grep -vc 'No such')" \
		"2:grpo-collect: $w takes no $name:usage: grpo-collect:0" "$w: $opt is refused, nothing done"
done < "$T/refused"

# A short option is named by its long name.
way "sampling with --model" -a "$T/ans.jsonl" > /dev/null 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-collect: sampling with --model takes no --answers (it goes with importing files)" \
	"-a is named --answers, and the way that takes it"
# -r and -m say how -o publishes: without -o they would do nothing.
for opt in "-r 1|--rank" "-m 1|--max-groups"; do
	# shellcheck disable=SC2086 # the option and its argument, two words
	grpo-collect -s 0 ${opt%|*} "$D/native.jsonl" > "$T/out" 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err"):$(wc -c < "$T/out" | tr -d ' ')" \
		"2:grpo-collect: without -o, ${opt#*|} would do nothing (it says how -o publishes):0" \
		"${opt%|*} without -o is refused, nothing written"
done
# --server sends a text prompt as text unless --tokenizer encodes it here:
# --chat alone would do nothing (the server was sent "p" without the template)
printf '%s\n' '{"prompt":"p"}' > "$T/text.jsonl"
grpo-collect --server "$URL" --prompts "$T/text.jsonl" --chat qwen -o "$T/q" > /dev/null 2> "$T/err"
is "$?:$(sed -n 1p "$T/err"):$(ls "$T/q" 2>&1 | grep -vc 'No such')" \
	"2:grpo-collect: --chat with --server needs --tokenizer, which encodes the prompts here: without it the server is sent the text without a chat format:0" \
	"--server --chat without --tokenizer is refused, nothing done"
grpo-collect --server "$URL" --prompts "$T/text.jsonl" --chat qwen --tokenizer "$T/m/tokenizer.json" --retries 0 \
	--timeout 2 -o "$T/q" > /dev/null 2> "$T/err"
[ $? -ne 2 ] && ! grep -q 'needs --tokenizer' "$T/err"
ok $? "--server --chat with --tokenizer is taken"
# --chat auto reads the template beside --tokenizer before the server is asked
mkdir "$T/tk" && cp "$GRPO_TOP/tests/data/tokadded/tokenizer.json" "$T/tk/"
grpo-collect --server "$URL" --prompts "$T/text.jsonl" --chat auto --tokenizer "$T/tk/tokenizer.json" -o "$T/q" \
	> /dev/null 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/q" 2>&1 | grep -vc 'No such')" \
	"1:grpo-collect: $T/tk/tokenizer_config.json: No such file or directory:0" \
	"--server --chat auto: no template beside the tokenizer, nothing sent or published"
# The options each way shares are taken.
way importing -r 1 -m 1 -t 0.7 -f native -a "$T/ans.jsonl" --vocab-size 100 --allow-missing-logprobs -e skip 2> /dev/null
is "$?:$(ls "$T/q/step_0/rank_1" | wc -l | tr -d ' ')" "0:3" "importing: its options taken"
rm -rf "$T/q"
way "sampling with --model" -n 2 -t 0.5 --top-p 0.9 --top-k 5 --seed 1 --offset 0 --count 1 \
	--cursor "$T/cur" --batch 1 --precision fp32 -s 4 -r 1 -m 1 -v 2> /dev/null
is "$?:$(ls "$T/q/step_4/rank_1" | wc -l | tr -d ' '):$(cat "$T/cur")" "0:1:1" "sampling with --model: its options taken"
rm -rf "$T/q" "$T/cur"
# --server: the options it shares with --model and with importing reach the
# server's step (here, the refused connection), past the check.
for opt in "-n 2" "--seed 1" "--count 1" "-f vllm" "--vocab-size 100" "--allow-missing-logprobs" "-e fail"; do
	# shellcheck disable=SC2086
	way "sampling through --server" --retries 0 --timeout 2 $opt > /dev/null 2> "$T/err"
	[ $? -ne 2 ] && ! grep -q 'takes no' "$T/err"
	ok $? "sampling through --server: $opt taken"
done

exit $_failed
