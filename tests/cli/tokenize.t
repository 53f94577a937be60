#!/bin/sh
# grpo-cat --encode, --decode, --chat and --tokenizer against the real Qwen3 and
# Llama 3 tokenizers: GSM8K questions and answers must give Hugging Face's ids
# (../shared/data/fixtures/tokenizer_ids.json), and decoding must give its text.
. "$GRPO_TOP/tests/cli/lib.sh"
data="$GRPO_SHARED/data"
fix="$data/fixtures/tokenizer_ids.json"
[ -f "$fix" ] && [ -f "$data/gsm8k/train.jsonl" ] || skip_all "no shared data at $data (fixtures, gsm8k)"
command -v jq > /dev/null || skip_all "jq is not installed"
plan 42

n=$(jq '.gsm8k_train_first' "$fix")
head -n "$n" "$data/gsm8k/train.jsonl" | jq -c '.question' > "$T/q.jsonl"
head -n "$n" "$data/gsm8k/train.jsonl" | jq -c '.answer' > "$T/a.jsonl"
for tk in qwen3 llama3; do
	tok="$data/tokenizers/$tk/tokenizer.json"
	grpo-cat --tokenizer "$tok" --encode "$T/q.jsonl" > "$T/$tk.q.ids"
	is "$?" 0 "$tk: --encode $n GSM8K questions"
	jq -c ".$tk.gsm8k_train_question[]" "$fix" | cmp -s - "$T/$tk.q.ids"
	is "$?" 0 "$tk: ids equal Hugging Face's for every question"
	jq -c ".$tk.gsm8k_train_answer[]" "$fix" > "$T/want"
	grpo-cat --tokenizer "$tok" --encode < "$T/a.jsonl" | cmp -s - "$T/want"
	is "$?" 0 "$tk: and for every answer, from standard input"
	jq -c ".$tk.texts[]" "$fix" > "$T/want"
	jq -c '.texts[]' "$fix" | grpo-cat --tokenizer "$tok" --encode | cmp -s - "$T/want"
	is "$?" 0 "$tk: and for the edge-case texts (special tokens, CJK, emoji, CRLF)"
	grpo-cat --tokenizer "$tok" --decode "$T/$tk.q.ids" | cmp -s - "$T/q.jsonl"
	is "$?" 0 "$tk: --decode gives each question back"
	jq -c ".$tk.decode[].text" "$fix" > "$T/want"
	jq -c ".$tk.decode[].ids" "$fix" | grpo-cat --tokenizer "$tok" --decode | cmp -s - "$T/want"
	is "$?" 0 "$tk: --decode of random ids gives Hugging Face's text (U+FFFD where bytes are not UTF-8)"
done

q3="$data/tokenizers/qwen3/tokenizer.json"
l3="$data/tokenizers/llama3/tokenizer.json"
# chat prompts: the text as each model's chat template writes it, specials as one id
is "$(echo '"What is 2+2?"' | grpo-cat --chat qwen3)" \
	'"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"' "--chat qwen3 prints the prompt text"
is "$(echo '"What is 2+2?"' | grpo-cat --chat qwen3 --no-thinking --encode --tokenizer "$q3")" \
	'[151644,872,198,3838,374,220,17,10,17,30,151645,198,151644,77091,198,151667,271,151668,271]' \
	"--chat qwen3 --no-thinking --encode: markers and the empty think block are single ids"
echo '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":" Hi "}],"enable_thinking":true}' |
	grpo-cat --chat llama3 --encode --tokenizer "$l3" > "$T/l"
is "$(cat "$T/l")" '[128000,128006,9125,128007,271,3513,10015,13,128009,128006,882,128007,271,13347,128009,128006,78191,128007,271]' \
	"--chat llama3 --encode with a system message (contents trimmed)"
echo '"hi"' | grpo-cat --chat qwen --encode --tokenizer "$l3" > /dev/null 2> "$T/err"
is "$?" 1 "a Qwen format with the Llama 3 tokenizer fails"
grep -q '<stdin>:1: .*<|im_start|>' "$T/err"
is "$?" 0 "naming the line and the missing token: $(cat "$T/err")"

# bad lines: file and line named, exit 1
printf '"fine"\n\n[1,2]\n' > "$T/bad.jsonl"
grpo-cat --tokenizer "$q3" --encode "$T/bad.jsonl" > "$T/out" 2> "$T/err"
is "$?" 1 "a line that is not a JSON string exits 1"
grep -q "bad.jsonl:3: expected a JSON string" "$T/err"
is "$?" 0 "naming file and line (blank lines count): $(cat "$T/err")"
# a quote left unescaped ends the string early: the rest of the line is not JSON, not to be dropped
for mode in "--tokenizer $q3 --encode" "--chat qwen3" "--tokenizer $q3 --decode"; do
	case $mode in *decode) line='[9707,11] ,1879]' ;; *) line='"He said "hi" to me"' ;; esac
	echo "$line" | grpo-cat $mode > "$T/out" 2> "$T/err"
	is "$?:$(cat "$T/out")" 1: "${mode#--tokenizer $q3 }: text after the line's JSON value exits 1, printing nothing"
	grep -q '<stdin>:1: .*after' "$T/err"
	is "$?" 0 "and names the line: $(cat "$T/err")"
done
echo '[1,999999]' | grpo-cat --tokenizer "$q3" --decode > /dev/null 2> "$T/err"
grep -q '<stdin>:1: .*999999' "$T/err"
is "$?" 0 "an id the tokenizer lacks is an error: $(cat "$T/err")"

# NUL: decoded as \u0000 (the byte-level token for byte 0 is 188 in Qwen3), refused when encoding
is "$(echo '[32,188,33]' | grpo-cat --tokenizer "$q3" --decode)" '"A\u0000B"' "a decoded NUL byte prints as \\u0000"
echo '"A\u0000B"' | grpo-cat --tokenizer "$q3" --encode > /dev/null 2> "$T/err"
is "$?" 1 "text holding a NUL is refused, not cut short: $(cat "$T/err")"
# an escaped backslash before u0000 is the text \u0000, which code is full of
# (ids from tokenizers 0.23.2, Node binding: encode('a\\u0000b'))
is "$(printf '%s\n' '"a\\u0000b"' | grpo-cat --tokenizer "$q3" --encode 2>&1)" '[64,3770,15,15,15,15,65]' \
	"the text \\u0000 (an escaped backslash) is encoded, not taken for a NUL"
is "$(printf '%s\n' '"a\\u0000b"' | grpo-cat --chat qwen3 2>&1)" '"<|im_start|>user\na\\u0000b<|im_end|>\n<|im_start|>assistant\n"' \
	"and --chat prints it"
# a raw NUL or bytes that are not UTF-8 inside the string: refused, never cut
# short or printed raw into the JSON output
for mode in "--tokenizer $q3 --encode" "--chat qwen3"; do
	printf '"ab\000c"\n' | grpo-cat $mode > "$T/out" 2> "$T/err"
	is "$?:$(cat "$T/out")" 1: "${mode#--tokenizer $q3 }: a raw NUL in the string is refused: $(cat "$T/err")"
done
printf '"ab\377c"\n' | grpo-cat --chat qwen3 > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out")" 1: "--chat: a byte that is not UTF-8 is refused, not printed raw: $(cat "$T/err")"
# a lone surrogate escape is half a UTF-16 pair, no character: refused, and
# said so (it was "expected a JSON string"); Python's json reads it into a
# str that tokenizers cannot take ("surrogates not allowed")
printf '%s\n' '"ok"' '"a\ud800b"' | grpo-cat --tokenizer "$q3" --encode > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out"):$(cat "$T/err")" \
	"1:[562]:grpo-cat: <stdin>:2: a lone surrogate \\ud800 at byte 3 (half of a UTF-16 pair, not a character)" \
	"--encode: a lone high surrogate is refused, naming the line and the escape"
for bad in '"\uDC00x"' '"\ud83d\u0041"' '"\ud83d"' '"\ude00\ud83d"'; do
	echo "$bad" | grpo-cat --tokenizer "$q3" --encode > /dev/null 2> "$T/err"
	is "$?:$(grep -c 'a lone surrogate' "$T/err")" 1:1 "--encode: $bad is refused as a lone surrogate: $(cat "$T/err")"
done
echo '{"messages":[{"role":"user","content":"hi \udbff"}]}' | grpo-cat --chat qwen3 > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out"):$(cat "$T/err")" \
	"1::grpo-cat: <stdin>:1: a lone surrogate \\udbff at byte 43 (half of a UTF-16 pair, not a character)" \
	"--chat: and so is one in a message"
# a pair, in either case, is one character (ids from tokenizers 0.23.2, Node
# binding: encode('a\u{1F600}b'))
is "$(printf '%s\n' '"a\ud83d\ude00b"' '"a\uD83D\uDE00b"' | grpo-cat --tokenizer "$q3" --encode 2>&1)" \
	"$(printf '[64,141334,65]\n[64,141334,65]')" "a surrogate pair is encoded as its character"

# the JSON view with a tokenizer, taken from --tokenizer or from --model DIR
grpo-cat --from-json -o "$T/g.zst" "$GRPO_TOP/examples/gsm8k-groups.jsonl"
grpo-cat --tokenizer "$q3" "$T/g.zst" | head -n 1 | jq -r '.trajectories[0].prompt_text, .trajectories[0].response_text' > "$T/txt"
printf '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n\n2+2=4. The answer is 4.<|im_end|>\n' |
	cmp -s - "$T/txt"
is "$?" 0 "--tokenizer adds prompt_text and response_text, specials kept"
mkdir "$T/m" && cp "$q3" "$T/m/tokenizer.json"
is "$(echo '"Hello, world!"' | grpo-cat --model "$T/m" --encode)" '[9707,11,1879,0]' \
	"--model DIR is where tokenizer.json comes from when --tokenizer is not given"
