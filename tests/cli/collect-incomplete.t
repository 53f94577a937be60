#!/bin/sh
# An input whose last line is cut short (a worker still writing the file, a
# pipe ended mid-record) is incomplete, not a bad line: under -e skip its
# other lines were published under a name hashed from the partial bytes, and
# the complete file, imported later, published them again under another.
# Now nothing of it is published and grpo-collect exits 75 (try again).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 22
view() { grpo-cat --json "$@"; }
visible() { ls "$1" 2>/dev/null | grep -v '^\.'; }
line() { printf '{"group_id":%s,"prompt_tokens":[1,2],"response_tokens":[3],"logprobs":[-0.5]}' "$1"; }
{ line 1; echo; line 1; echo; line 2; echo; line 2; echo; } > "$T/whole.jsonl"
head -c -20 "$T/whole.jsonl" > "$T/part.jsonl"   # the last line cut short, no newline

for mode in skip fail; do
	rm -rf "$T/sp"
	grpo-collect -e $mode -o "$T/sp/rollouts" -s 1 "$T/part.jsonl" 2> "$T/err"
	is "$?:$(cat "$T/err")" \
		"75:grpo-collect: $T/part.jsonl:4: ends mid-record (its last line is cut short, without a newline): nothing of it published; try again once it is complete" \
		"-e $mode: an input cut short mid-record exits 75, naming it"
	is "$(visible "$T/sp/rollouts/step_1/rank_0")" "" "-e $mode: and nothing of it is published"
done
grpo-collect -e skip -o "$T/sp/rollouts" -s 1 "$T/whole.jsonl"
is "$?:$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" "0:2" \
	"the complete input, imported later, publishes each group once"

# standard input ending mid-record: the same
grpo-collect -e skip -s 1 < "$T/part.jsonl" > "$T/out.zst" 2> "$T/err"
st=$?
grep -q '^grpo-collect: <stdin>:4: ends mid-record' "$T/err"
is "$st:$?" "75:0" "standard input ending mid-record exits 75: $(cat "$T/err")"
view "$T/out.zst" > /dev/null 2>&1
is "$?" 1 "and its spool file is left unended, so readers reject it"

# with other inputs: each is published or not on its own, as for a bad line;
# 75 where the cut one was the only trouble, 1 where another input failed
rm -rf "$T/sp"
{ line 7; echo; } > "$T/other.jsonl"
grpo-collect -e skip -o "$T/sp/rollouts" -s 1 "$T/part.jsonl" "$T/other.jsonl" 2> /dev/null
is "$?:$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" "75:1" \
	"with several inputs the others are published, exit 75"
echo 'not json' > "$T/bad.jsonl"
grpo-collect -o "$T/sp/rollouts" -s 1 "$T/bad.jsonl" "$T/part.jsonl" 2> /dev/null
is "$?" 1 "a failed input as well: exit 1"

# a last line without a newline that is whole stays valid input; one that is
# whole but bad is a bad line as any other
rm -rf "$T/sp"
head -c -1 "$T/whole.jsonl" > "$T/nonl.jsonl"
grpo-collect -o "$T/sp/rollouts" -s 1 "$T/nonl.jsonl"
is "$?:$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" "0:2" \
	"a whole last line without a newline is imported"
{ line 1; echo; printf '{"group_id":2,"prompt_tokens":[1],"response_tokens":[3],"logprobs":[0.5]}'; } > "$T/badlast.jsonl"
grpo-collect -e skip -o "$T/sp/rollouts" -s 2 "$T/badlast.jsonl" 2> "$T/err"
is "$?:$(tail -n +2 "$T/err" | head -1)" "0:grpo-collect: $T/badlast.jsonl: skipped 1 of 2 lines" \
	"a whole but bad last line without a newline is skipped as a bad line"

# A compressed input cut short (a worker's gzip still writing it, a copy
# interrupted) is the same: exit 75, nothing of it published, where it once
# failed for good (exit 1) like a corrupt file. The cut may fall anywhere,
# in the trailer too, after every line is whole.
rm -rf "$T/sp"
i=0
while [ $i -lt 300 ]; do line $i; echo; i=$((i + 1)); done > "$T/big.jsonl"
gzip -c "$T/big.jsonl" > "$T/big.jsonl.gz"
size=$(wc -c < "$T/big.jsonl.gz")
for cut in $((size / 2)) $((size - 4)); do
	head -c $cut "$T/big.jsonl.gz" > "$T/cut.jsonl.gz"
	for mode in skip fail; do
		grpo-collect -e $mode -o "$T/sp/rollouts" -s 1 "$T/cut.jsonl.gz" 2> "$T/err"
		echo "$cut $mode $?:$(visible "$T/sp/rollouts/step_1/rank_0" | wc -l | tr -d ' ')" >> "$T/got"
	done
done
is "$(cat "$T/got")" "$((size / 2)) skip 75:0
$((size / 2)) fail 75:0
$((size - 4)) skip 75:0
$((size - 4)) fail 75:0" "a .gz cut mid-stream or in its trailer: exit 75, nothing published"
is "$(cat "$T/err")" \
	"grpo-collect: $T/cut.jsonl.gz: truncated gzip input: the input ends before its compressed stream does (still being written?): nothing of it published; try again once it is complete" \
	"the message names the input and says to try again"
grpo-collect -e skip -o "$T/sp/rollouts" -s 1 "$T/cut.jsonl.gz" "$T/other.jsonl" 2> /dev/null
is "$?:$(visible "$T/sp/rollouts/step_1/rank_0" | wc -l | tr -d ' ')" "75:1" "the other inputs are published, exit 75"
grpo-collect -s 1 < "$T/cut.jsonl.gz" > /dev/null 2> "$T/err"
is "$?:$(grep -c '^grpo-collect: <stdin>: truncated gzip input' "$T/err")" "75:1" "so is a pipe that ends mid-stream"
grpo-collect -o "$T/sp/rollouts" -s 1 "$T/big.jsonl.gz"
is "$?:$(view "$T"/sp/rollouts/step_1/rank_0/* | wc -l | tr -d ' ')" "0:301" \
	"the complete file, imported later, publishes each group once"
# corrupt data is not a file still being written
xz -c "$T/big.jsonl" > "$T/bad.jsonl.xz"
printf '\377\377\377\377' | dd of="$T/bad.jsonl.xz" bs=1 seek=300 conv=notrunc 2> /dev/null
grpo-collect -o "$T/sp/rollouts" -s 2 "$T/bad.jsonl.xz" 2> "$T/err"
is "$?:$(grep -c 'try again' "$T/err")" "1:0" "a corrupt .xz still fails for good (exit 1)"

# Through a real pipe, and cut within its header: the same
head -c $((size - 4)) "$T/big.jsonl.gz" | grpo-collect -s 1 > /dev/null 2> "$T/err"
st=$?
head -c 6 "$T/big.jsonl.gz" | grpo-collect -s 1 > /dev/null 2>> "$T/err"
is "$st:$?:$(grep -c '^grpo-collect: <stdin>: truncated gzip input' "$T/err")" "75:75:2" \
	"a pipe cut in the gzip trailer, or in its header, is incomplete too (exit 75)"

# gzip's CRC-32 and length are checked (libarchive's gzip reader checks
# neither): a flipped bit that leaves the text well-formed is corrupt data
cp "$T/big.jsonl.gz" "$T/crc.jsonl.gz"
printf '\377' | dd of="$T/crc.jsonl.gz" bs=1 seek=$((size - 8)) conv=notrunc 2> /dev/null
grpo-collect -o "$T/sp/rollouts" -s 3 "$T/crc.jsonl.gz" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/sp/rollouts/step_3" 2> /dev/null | wc -l | tr -d ' ')" \
	"1:grpo-collect: $T/crc.jsonl.gz: corrupt gzip data: incorrect data check:0" "a .gz whose CRC-32 does not match: refused, nothing published"
# the text changed inside the stream, the trailer of the original kept
sed 's/"group_id":17,/"group_id":71,/' "$T/big.jsonl" | gzip -c | head -c -8 > "$T/swap.jsonl.gz"
tail -c 8 "$T/big.jsonl.gz" >> "$T/swap.jsonl.gz"
grpo-collect -s 3 "$T/swap.jsonl.gz" > /dev/null 2> "$T/err"
is "$?:$(grep -c 'incorrect data check' "$T/err")" "1:1" "a group id changed inside the stream (the trailer kept): refused"

# members one after another are one gzip file (cat a.gz b.gz); zeros after
# the last are padding, anything else is refused
{ head -n 150 "$T/big.jsonl" | gzip -c; tail -n +151 "$T/big.jsonl" | gzip -c; head -c 512 /dev/zero; } > "$T/two.jsonl.gz"
grpo-collect -s 1 "$T/two.jsonl.gz" | grpo-cat | wc -l > "$T/n"
is "$(cat "$T/n")" "300" "two gzip members, then zero padding: every line of both"
{ cat "$T/big.jsonl.gz"; echo junk; } > "$T/junk.jsonl.gz"
grpo-collect -s 1 "$T/junk.jsonl.gz" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/junk.jsonl.gz: data after the end of its gzip stream" "bytes after the gzip stream: refused"
