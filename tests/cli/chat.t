#!/bin/sh
# grpo-cat --chat against the models' own chat templates: tests/data/chat-templates.jsonl
# holds prompts rendered from the chat_template of Qwen3's, Llama 3's, Llama
# 3.1's and Llama 3.2's tokenizer_config.json as transformers renders it
# (jinja2; make_chat_fixture.py). The text must be the same byte for byte; the
# ids, with the real tokenizers, those of the text (apply_chat_template(tokenize=True)
# encodes the rendered text).
. "$GRPO_TOP/tests/cli/lib.sh"
command -v jq > /dev/null || skip_all "jq is not installed"
fx="$GRPO_TOP/tests/data/chat-templates.jsonl"
data="$GRPO_SHARED/data"
plan 9

for f in qwen3 llama3 llama3.1 llama3.2; do
	jq -c "select(.format == \"$f\") | .text" "$fx" > "$T/want"
	jq -c "select(.format == \"$f\") | .input" "$fx" | grpo-cat --chat "$f" > "$T/got"
	cmp -s "$T/got" "$T/want"
	is "$?" 0 "$f: the text of $(wc -l < "$T/want" | tr -d ' ') prompts equals the template's"
done
for f in qwen3 llama3 llama3.1 llama3.2; do
	tok="$data/tokenizers/${f%.?}/tokenizer.json"
	if [ ! -f "$tok" ]; then
		_n=$((_n + 1)); echo "ok $_n # SKIP no tokenizer at $tok"
		continue
	fi
	jq -c "select(.format == \"$f\") | .text" "$fx" | grpo-cat --tokenizer "$tok" --encode > "$T/want"
	jq -c "select(.format == \"$f\") | .input" "$fx" | grpo-cat --chat "$f" --encode --tokenizer "$tok" > "$T/got"
	cmp -s "$T/got" "$T/want"
	is "$?" 0 "$f: --chat --encode gives the ids of the template's text"
done

# Llama 3.2's template dates its system header today (transformers' strftime_now,
# "%d %b %Y" in the C locale) when the line gives no date_string, in any locale
before=$(LC_ALL=C date +'%d %b %Y')
echo '"hi"' | LC_ALL=de_DE.UTF-8 grpo-cat --chat llama3.2 > "$T/got"
after=$(LC_ALL=C date +'%d %b %Y')
grep -q -e "Today Date: $before\\\\n" -e "Today Date: $after\\\\n" "$T/got"
is "$?" 0 "llama3.2 without date_string: today's date ($before)"
