#!/bin/sh
# grpo-cat: JSON view, --from-json round trip, --stats, --head, archives, bad input.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 29

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
grpo-cat --from-json -o "$T/a.zst" "$ex"
is "$?" 0 "--from-json -o writes a spool file"
zstd -q -t "$T/a.zst" 2>/dev/null
is "$?" 0 "the file is one zstd frame that zstd -t accepts"
grpo-cat "$T/a.zst" > "$T/a.jsonl"
cmp -s "$T/a.jsonl" "$ex"
is "$?" 0 "grpo-cat prints back exactly the JSON lines it was given"
grpo-cat --from-json < "$ex" | grpo-cat --json - > "$T/b.jsonl"
cmp -s "$T/b.jsonl" "$ex"
is "$?" 0 "the same through pipes: stdout is a spool file, stdin reads one"
grpo-cat --from-json "$T/a.jsonl" | cmp -s - "$T/a.zst"
is "$?" 0 "writing is deterministic: the same JSON gives the same bytes"
cat "$T/a.zst" "$T/a.zst" | grpo-cat | wc -l | tr -d ' ' > "$T/n"
is "$(cat "$T/n")" 4 "concatenated spool files read as one stream"
is "$(grpo-cat --head 1 "$T/a.zst" | wc -l | tr -d ' ')" 1 "--head 1 prints one record"
grpo-cat --stats --json "$T/a.zst" > "$T/stats"
grep -q '"records":2,"groups":2,"microbatches":0,"sequences":3' "$T/stats" &&
	grep -q '"response_tokens":26' "$T/stats"
is "$?" 0 "--stats counts records, sequences and tokens"
size=$(wc -c < "$T/a.zst" | tr -d ' ')
grep -q "\"bytes_on_disk\":$size," "$T/stats"
is "$?" 0 "--stats: bytes_on_disk is the file's size, $size"
awk -v size="$size" '{
	match($0, /"bytes_uncompressed":[0-9]+/); u = substr($0, RSTART + 21, RLENGTH - 21)
	match($0, /"compression_ratio":[0-9.]+/); r = substr($0, RSTART + 20, RLENGTH - 20)
	d = u / size - r; exit !(u > size && d < 0.001 && d > -0.001)
}' "$T/stats"
is "$?" 0 "--stats: compression_ratio is bytes uncompressed over bytes on disk"
grpo-cat --stats "$T/a.zst" | grep -q "^bytes on disk *$size\$"
is "$?" 0 "--stats in text says the same"

mkdir -p "$T/arc/step_0/rank_0" && cp "$T/a.zst" "$T/arc/step_0/rank_0/x.zst"
(cd "$T/arc" && tar -cf - step_0 | zstd -q > ../arc.tar.zst)
grpo-cat "$T/arc.tar.zst" > "$T/c.jsonl"
cmp -s "$T/c.jsonl" "$ex"
is "$?" 0 "reads spool files inside a tar.zst archive"

head -c 100 "$T/a.zst" > "$T/trunc.zst"
grpo-cat "$T/trunc.zst" > /dev/null 2> "$T/err"
is "$?" 1 "a truncated file exits 1"
grep -q "trunc.zst: truncated" "$T/err"
is "$?" 0 "and the message names the file: $(cat "$T/err")"

printf '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1,-2]}]}\n' > "$T/bad.jsonl"
grpo-cat --from-json -o "$T/bad.zst" "$ex" "$T/bad.jsonl" 2> "$T/err"
is "$?" 1 "--from-json rejects a bad line with exit 1"
grep -q "bad.jsonl:1: trajectories\[0\]: 2 logprobs for 1 response_tokens" "$T/err" && [ ! -e "$T/bad.zst" ] &&
	[ -z "$(ls "$T" | grep 'bad.zst.tmp')" ]
is "$?" 0 "naming file and line, and leaving no output file: $(cat "$T/err")"
# Non-finite floats: no spool file holds one (grpo-spool(5)).
tr=',"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"rewards":[1],"reward_names":["r"]'
printf '{"group_id":1,"trajectories":[{"ref_logprobs":[-1],"advantages":NaN%s}]}\n' "$tr" > "$T/nan.jsonl"
grpo-cat --from-json -o "$T/nan.zst" "$T/nan.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/nan.jsonl:1: trajectories[0]: advantages is NaN or null, not a finite number" \
	"a NaN advantage is refused, naming line and field"
printf '{"group_id":1,"trajectories":[{"ref_logprobs":[-Infinity],"advantages":0.5%s}]}\n' "$tr" > "$T/inf.jsonl"
grpo-cat --from-json -o "$T/inf.zst" "$T/inf.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-cat: $T/inf.jsonl:1: trajectory 0: ref_logprobs[0] is -Infinity, not a finite number" \
	"a -Infinity reference logprob is refused as it is read, naming line, trajectory and field"
[ ! -e "$T/nan.zst" ] && [ ! -e "$T/inf.zst" ]
is "$?" 0 "and neither left an output file"
# Text after the value: a second value or garbage, never dropped silently
# (with the per-token arrays cut out as text, and with none cut out).
g='{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-2]}]}'
printf '%s  \n%s {"group_id":2}\n' "$g" "$g" > "$T/after.jsonl"
printf '%s x\n' "$(echo "$g" | sed 's/\[2,3\]/"x"/; s/\[-1,-2\]/"y"/; s/\[1\]/"z"/')" > "$T/after2.jsonl"
grpo-cat --from-json -o "$T/after.zst" "$T/after.jsonl" 2> "$T/err"
grpo-cat --from-json -o "$T/after2.zst" "$T/after2.jsonl" 2>> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T" | grep -c after.*zst)" \
	"1:grpo-cat: $T/after.jsonl:2: not valid JSON (text after the value, near byte 98)
grpo-cat: $T/after2.jsonl:1: not valid JSON (text after the value, near byte 92):0" \
	"--from-json refuses a line with text after its value, naming file, line and byte (blanks after it are fine)"
printf '%s {"response_tokens":[1,2,3,4,5,6,7,8],"logprobs":[0]}\n' "$g" > "$T/after3.jsonl"
grpo-cat --from-json -o "$T/after3.zst" "$T/after3.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/after3.jsonl:1: not valid JSON (text after the value, near byte 98)" \
	"the byte named is the line's own when the text after the value holds per-token arrays"

# Integers stop at 2^53 - 1: beyond it JSON numbers round, and 2^53 + 1 would read as 2^53.
big() { printf '{"group_id":%s,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1]}]}\n' "$1"; }
big 9007199254740991 | grpo-cat --from-json | grpo-cat > "$T/big.json"
is "$?:$(grep -o '"group_id":[0-9]*' "$T/big.json" | sort -u)" '0:"group_id":9007199254740991' \
	"an id of 2^53 - 1 goes through the JSON view unchanged"
: > "$T/err"
for v in 9007199254740992 9007199254740993; do big $v | grpo-cat --from-json > /dev/null 2>> "$T/err"; echo $? >> "$T/err"; done
is "$(cat "$T/err")" \
"grpo-cat: <stdin>:1: group_id: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly (it reads as 9007199254740992); give it as a string
1
grpo-cat: <stdin>:1: group_id: an integer beyond +-9007199254740991 (2^53 - 1), which JSON numbers do not hold exactly (it reads as 9007199254740992); give it as a string
1" \
	"an id of 2^53 or 2^53 + 1 is refused, naming the line, and 2^53 + 1 is not called 2^53 (it reads as that)"
big 1.5 | grpo-cat --from-json > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>:1: group_id: 1.5 is not an integer" "an id of 1.5: not an integer"

grpo-cat --bogus > /dev/null 2>&1
is "$?" 2 "an unknown option exits 2"

# --no-thinking is Qwen3's: with another format it would change nothing, and
# a Qwen3 model given --chat qwen would think after all
echo '"hi"' | grpo-cat --chat qwen --no-thinking > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out")" "2:" "--chat qwen --no-thinking is a usage error, not a prompt without the think block ($(head -n 1 "$T/err"))"
is "$?:$(echo '"hi"' | grpo-cat --chat qwen3 --no-thinking)" \
	'0:"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"' "--chat qwen3 --no-thinking ends in the empty think block"
# a conversation's tools, which the template writes into the prompt, were dropped silently
printf '"hi"\n{"messages":[{"role":"user","content":"What is 6*7?"}],"tools":[{"type":"function","function":{"name":"mul"}}]}\n' > "$T/tools.jsonl"
grpo-cat --chat qwen3 "$T/tools.jsonl" > "$T/out" 2> "$T/err"
is "$?:$(wc -l < "$T/out"):$(cat "$T/err")" "1:1:grpo-cat: $T/tools.jsonl:2: tools is not supported (the chat template would write the tool definitions into the prompt)" \
	"--chat refuses a line with tools, naming it, rather than prompting without them"

# decoded text: tokens that end inside a character (a response cut by its
# length) decode to U+FFFD as Hugging Face's decode does, never to raw bytes
# that would make the line no JSON (U+1D11E is ids 124596 and 252 in Qwen3's)
q3="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
if [ -f "$q3" ]; then
	echo '{"group_id":1,"trajectories":[{"prompt_tokens":[124596],"response_tokens":[124596,252,124596],"logprobs":[-1,-1,-1]}]}' |
		grpo-cat --from-json | grpo-cat --tokenizer "$q3" | sed 's/.*"prompt_text"/"prompt_text"/' > "$T/dec"
	is "$(cat "$T/dec")" "$(printf '"prompt_text":"\357\277\275","response_text":"\360\235\204\236\357\277\275"}]}')" \
		"--tokenizer: a character cut between tokens prints as U+FFFD, the line still UTF-8"
else
	skip "no Qwen3 tokenizer at $q3"
fi
