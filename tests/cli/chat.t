#!/bin/sh
# grpo-cat --chat against the models' own chat templates: tests/data/chat-templates.jsonl
# holds prompts rendered from the chat_template of Qwen3's, Llama 3's, Llama
# 3.1's and Llama 3.2's tokenizer_config.json, and of Qwen2.5-Instruct's, Qwen2.5-Math's,
# another revision of Llama 3's, Llama 2 chat's, Mistral Instruct's, TinyLlama
# Chat's, SmolLM2-Instruct's and the DeepSeek-R1 distills'
# (tests/data/chat-templates/), as transformers
# renders it (jinja2; make_chat_fixture.py). The text must be the same byte for
# byte; the ids, with the real tokenizers, those of the text
# (apply_chat_template(tokenize=True) encodes the rendered text). Where the
# template raises, grpo-cat must refuse the line, naming the message.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v jq > /dev/null || skip_all "jq is not installed"
fx="$GRPO_TOP/tests/data/chat-templates.jsonl"
data="$GRPO_SHARED/data"
plan 33

for f in qwen3 qwen2.5 qwen2.5-math llama3 llama3.1 llama3.2 llama2 mistral zephyr smollm2 deepseek-r1; do
	jq -c "select(.format == \"$f\" and has(\"text\")) | .text" "$fx" > "$T/want"
	jq -c "select(.format == \"$f\" and has(\"text\")) | .input" "$fx" | grpo-cat --chat "$f" > "$T/got"
	cmp -s "$T/got" "$T/want"
	is "$?" 0 "$f: the text of $(wc -l < "$T/want" | tr -d ' ') prompts equals the template's"
done
# llama2, mistral and zephyr: with their own SentencePiece tokenizers where ../shared has them,
# else with tests/data/tokspm's Llama 2-style one (its <s> and </s> special, as theirs);
# qwen2.5, qwen2.5-math and smollm2 with Qwen3's, which has their ChatML markers; deepseek-r1 with Qwen3's given the
# distills' four markers at ids 151643 to 151646, as DeepSeek-R1-Distill-Qwen's tokenizer
# puts them in place of Qwen's (its bos 151646, eos 151643)
r1tok="$T/r1-tokenizer.json"
if [ -f "$data/tokenizers/qwen3/tokenizer.json" ]; then
	jq -c '.added_tokens |= map(if .id >= 151643 and .id <= 151646 then .content =
		(["<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<｜begin▁of▁sentence｜>"][.id - 151643])
		else . end)' "$data/tokenizers/qwen3/tokenizer.json" > "$r1tok"
fi
for f in qwen3 qwen2.5 qwen2.5-math llama3 llama3.1 llama3.2 llama2 mistral zephyr smollm2 deepseek-r1; do
	case $f in zephyr) d=tinyllama ;; qwen2.5 | qwen2.5-math | smollm2) d=qwen3 ;; *) d=${f%.?} ;; esac
	tok="$data/tokenizers/$d/tokenizer.json"
	case $f in llama2 | mistral | zephyr)
		[ -f "$tok" ] || tok="$GRPO_TOP/tests/data/tokspm/legacy/tokenizer.json" ;;
	deepseek-r1) tok=$r1tok ;;
	esac
	if [ ! -f "$tok" ]; then
		_n=$((_n + 1)); echo "ok $_n # SKIP no tokenizer at $tok"
		continue
	fi
	jq -c "select(.format == \"$f\" and has(\"text\")) | .text" "$fx" | grpo-cat --tokenizer "$tok" --encode > "$T/want"
	jq -c "select(.format == \"$f\" and has(\"text\")) | .input" "$fx" | grpo-cat --chat "$f" --encode --tokenizer "$tok" > "$T/got"
	cmp -s "$T/got" "$T/want"
	is "$?" 0 "$f: --chat --encode gives the ids of the template's text"
done
if [ -f "$r1tok" ]; then
	echo '"2+2?"' | grpo-cat --chat deepseek-r1 --encode --tokenizer "$r1tok" > "$T/got"
	grep -q '^\[151646,151644,[0-9,]*,151645,[0-9,]*\]$' "$T/got"
	is "$?" 0 "deepseek-r1: bos, <｜User｜> and <｜Assistant｜> are one id each: $(cat "$T/got")"
else
	_n=$((_n + 1)); echo "ok $_n # SKIP no Qwen3 tokenizer to give DeepSeek's markers"
fi

# the conversations the [INST] templates raise on: each line alone must fail,
# its message naming the messages[] entry and what the template requires
for f in llama2 mistral; do
	jq -c "select(.format == \"$f\" and has(\"error\")) | .input" "$fx" > "$T/bad"
	total=$(wc -l < "$T/bad" | tr -d ' ') refused=0
	why='messages\[[0-9]*\]: .*\(alternate user/assistant\|only the first message may be a system\)'
	while read -r line; do
		if ! echo "$line" | grpo-cat --chat "$f" > /dev/null 2> "$T/err" && grep -q "$why" "$T/err"; then
			refused=$((refused + 1))
		else
			echo "# $f took $line: $(cat "$T/err")"
		fi
	done < "$T/bad"
	[ "$total" -gt 0 ] && [ "$refused" = "$total" ]
	is "$?" 0 "$f: the $total conversations its template raises on are refused ($refused), saying why"
done

# Llama 3.2's template dates its system header today (transformers' strftime_now,
# "%d %b %Y" in the C locale) when the line gives no date_string, in any locale
before=$(LC_ALL=C date +'%d %b %Y')
echo '"hi"' | LC_ALL=de_DE.UTF-8 grpo-cat --chat llama3.2 > "$T/got"
after=$(LC_ALL=C date +'%d %b %Y')
grep -q -e "Today Date: $before\\\\n" -e "Today Date: $after\\\\n" "$T/got"
is "$?" 0 "llama3.2 without date_string: today's date ($before)"

# --chat auto: the format whose template the model's own files hold (chat.h), told
# by its text; another template, or none, is refused naming the file
q3="$data/tokenizers/qwen3/tokenizer.json"
grpo-cat --chat auto < /dev/null > /dev/null 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" "2:grpo-cat: --chat auto needs --tokenizer FILE or --model DIR (the chat template beside its tokenizer.json names the format)" \
	"--chat auto with no model to read it from: a usage error"
if [ -f "$q3" ]; then
	jq -c 'select(.format == "qwen3" and has("text")) | .input' "$fx" > "$T/in"
	grpo-cat --chat auto --tokenizer "$q3" < "$T/in" > "$T/got" && grpo-cat --chat qwen3 < "$T/in" > "$T/want" &&
		cmp -s "$T/got" "$T/want"
	is "$?" 0 "--chat auto with Qwen3's tokenizer writes qwen3's prompts ($(wc -l < "$T/in" | tr -d ' '))"
	# the DeepSeek-R1 distills' template beside the tokenizer with their markers
	mkdir "$T/r1" && cp "$r1tok" "$T/r1/tokenizer.json" &&
		jq '{chat_template}' "$GRPO_TOP/tests/data/chat-templates/deepseek-r1.json" > "$T/r1/tokenizer_config.json"
	jq -c 'select(.format == "deepseek-r1" and has("text")) | .input' "$fx" > "$T/in"
	grpo-cat --chat auto --encode --model "$T/r1" < "$T/in" > "$T/got" &&
		grpo-cat --chat deepseek-r1 --encode --tokenizer "$r1tok" < "$T/in" > "$T/want" && cmp -s "$T/got" "$T/want"
	is "$?" 0 "--chat auto --encode --model: the distills' template gives deepseek-r1's ids"
	# one byte more: another revision, not recognised; no config at all
	jq '{chat_template: (.chat_template + " ")}' "$GRPO_TOP/tests/data/chat-templates/deepseek-r1.json" \
		> "$T/r1/tokenizer_config.json"
	echo '"hi"' | grpo-cat --chat auto --model "$T/r1" > "$T/out" 2> "$T/err"
	is "$?:$(wc -c < "$T/out" | tr -d ' ')" "1:0" "an unknown template: exit 1, nothing printed"
	grep -q "^grpo-cat: $T/r1/tokenizer_config.json: its chat template (2247 bytes, hash [0-9a-f]*) is none that this build knows, byte for byte: name the chat format (qwen, " "$T/err"
	is "$?" 0 "the message names the file and asks for the format: $(cat "$T/err")"
	rm "$T/r1/tokenizer_config.json"
	echo '"hi"' | grpo-cat --chat auto --encode --model "$T/r1" > /dev/null 2> "$T/err"
	is "$?:$(cat "$T/err")" "1:grpo-cat: $T/r1/tokenizer_config.json: No such file or directory" "no tokenizer_config.json"
	# grpo-collect samples from a model whose files hold Qwen3's template
	grpo-init --preset tiny --tokenizer "$q3" -o "$T/m" &&
		echo '{"prompt": "What is 2+2?", "answer": "4"}' > "$T/p.jsonl" &&
		grpo-collect --model "$T/m" --prompts "$T/p.jsonl" --chat auto -n 1 --max-tokens 2 --device cpu \
			-o "$T/q" -v 2> "$T/err" &&
		grep -q "^grpo-collect: --chat auto: qwen3, the template of $T/m/tokenizer_config.json$" "$T/err" &&
		grpo-cat "$T"/q/step_0/rank_0/*.zst | jq -c '.trajectories[0].prompt_tokens' > "$T/got" &&
		echo '"What is 2+2?"' | grpo-cat --chat qwen3 --encode --tokenizer "$q3" > "$T/want" && cmp -s "$T/got" "$T/want"
	is "$?" 0 "grpo-collect --chat auto -v: says qwen3 and samples from its prompt"
else
	for i in 1 2 3 4 5 6; do _n=$((_n + 1)); echo "ok $_n # SKIP no Qwen3 tokenizer at $q3"; done
fi
