#!/bin/sh
# grpo-cat --chat against the models' own chat templates: tests/data/chat-templates.jsonl
# holds prompts rendered from the chat_template of Qwen3's, Llama 3's, Llama
# 3.1's and Llama 3.2's tokenizer_config.json, and of Llama 2 chat's, Mistral
# Instruct's and TinyLlama Chat's (tests/data/chat-templates/), as transformers
# renders it (jinja2; make_chat_fixture.py). The text must be the same byte for
# byte; the ids, with the real tokenizers, those of the text
# (apply_chat_template(tokenize=True) encodes the rendered text). Where the
# template raises, grpo-cat must refuse the line, naming the message.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v jq > /dev/null || skip_all "jq is not installed"
fx="$GRPO_TOP/tests/data/chat-templates.jsonl"
data="$GRPO_SHARED/data"
plan 17

for f in qwen3 llama3 llama3.1 llama3.2 llama2 mistral zephyr; do
	jq -c "select(.format == \"$f\" and has(\"text\")) | .text" "$fx" > "$T/want"
	jq -c "select(.format == \"$f\" and has(\"text\")) | .input" "$fx" | grpo-cat --chat "$f" > "$T/got"
	cmp -s "$T/got" "$T/want"
	is "$?" 0 "$f: the text of $(wc -l < "$T/want" | tr -d ' ') prompts equals the template's"
done
# llama2, mistral and zephyr: with their own SentencePiece tokenizers where ../shared has them,
# else with tests/data/tokspm's Llama 2-style one (its <s> and </s> special, as theirs)
for f in qwen3 llama3 llama3.1 llama3.2 llama2 mistral zephyr; do
	case $f in zephyr) d=tinyllama ;; *) d=${f%.?} ;; esac
	tok="$data/tokenizers/$d/tokenizer.json"
	case $f in llama2 | mistral | zephyr)
		[ -f "$tok" ] || tok="$GRPO_TOP/tests/data/tokspm/legacy/tokenizer.json" ;;
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
