#!/bin/sh
# grpo-cat --from-json -o: the temporary is never visible under a reader's
# name (in QUEUE/.tmp inside a spool, a dot name elsewhere), and a signal at
# any point removes it.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 21

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
q="$T/spool/scored"
out="$q/step_0/rank_0/g.zst"
grpo-cat --from-json -o "$out" "$ex"
is "$?:$(ls -A "$q/step_0/rank_0")" "0:g.zst" "-o into a rank directory publishes the file and nothing else"
grpo-cat "$out" | cmp -s - "$ex"
is "$?" 0 "and it reads back"
grpo-cat --from-json -o "$out" "$ex" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $out: already published; a spool file is never replaced" \
	"a spool file is published once, as everywhere in a spool"
grpo-cat --from-json -o "$T/plain.zst" "$ex" && grpo-cat --from-json -o "$T/plain.zst" "$ex"
is "$?" 0 "outside a spool, -o replaces its output"

# The spool is known by where the file is, not by how its path is spelled:
# a bare name given inside the rank directory, or a path through a link.
before=$(cksum < "$out")
head -n 1 "$ex" > "$T/one.jsonl"
(cd "$q/step_0/rank_0" && grpo-cat --from-json -o g.zst "$T/one.jsonl") 2> "$T/err"
is "$?:$(cksum < "$out"):$(cat "$T/err")" "1:$before:grpo-cat: g.zst: already published; a spool file is never replaced" \
	"a bare name inside a rank directory does not replace the published file"
ln -s "$q/step_0/rank_0" "$T/here"
grpo-cat --from-json -o "$T/here/g.zst" "$T/one.jsonl" 2> /dev/null
is "$?:$(cksum < "$out")" "1:$before" "nor does a path through a link to it"
(cd "$q/step_0/rank_0" && grpo-cat --from-json -o new.zst "$ex")
is "$?:$(ls -A "$q/step_0/rank_0" | tr '\n' ' ')" "0:g.zst new.zst " \
	"a new name there is published, its temporary kept in the queue's .tmp"
rm -f "$q/step_0/rank_0/new.zst" "$T/here"
grpo-cat --from-json -o "$T/nodir/x.zst" "$ex" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/nodir/x.zst: cannot create: No such file or directory" \
	"-o in a missing directory names the output asked for, not its temporary"

# -o names what it writes, not a place to rename a temporary over: a named
# pipe, a device or a link stays what it is (as root, a rename over
# /dev/null would replace the device with a file for the whole machine).
mkfifo "$T/fifo"
timeout 60 cat "$T/fifo" > "$T/from-fifo" &   # bounded: were the pipe renamed over, no writer would come
reader=$!
grpo-cat --from-json -o "$T/fifo" "$ex" 2> "$T/err"
st=$?
wait $reader
is "$st:$([ -p "$T/fifo" ] && echo fifo):$(grpo-cat "$T/from-fifo" | cmp -s - "$ex" && echo same):$(cat "$T/err")" \
	"0:fifo:same:" "-o a named pipe writes into the pipe, which stays one"
grpo-cat --from-json -o "$T/plain.zst" "$T/one.jsonl"
ln -s plain.zst "$T/link.zst"
grpo-cat --from-json -o "$T/link.zst" "$ex"
is "$?:$([ -L "$T/link.zst" ] && echo link):$(grpo-cat "$T/plain.zst" | cmp -s - "$ex" && echo same)" "0:link:same" \
	"-o a link publishes its target, and the link stays"
if mknod "$T/full" c 1 7 2> /dev/null; then   # /dev/full's device, where we may make one
	grpo-cat --from-json -o "$T/full" "$ex" 2> "$T/err"
	is "$?:$([ -c "$T/full" ] && echo device):$(cat "$T/err")" \
		"75:device:grpo-cat: $T/full: write failed: No space left on device" \
		"-o a device writes to it, and says when that fails (exit 75, as on a full disk)"
else
	skip "mknod is not permitted here (not root): no device to write to"
fi

# Crash (kill -9) at each file system call: a leftover only ever in QUEUE/.tmp.
calls=$(GRPO_FSYS_TRACE=1 grpo-cat --from-json -o "$q/step_1/rank_0/g.zst" "$ex" 2>&1 | grep -c '^fsys ')
rm -rf "$q/step_1"
bad=""
k=1
while [ "$k" -le "$calls" ]; do
	mkdir -p "$q/step_1/rank_0"
	GRPO_FSYS_CRASH_AT=$k grpo-cat --from-json -o "$q/step_1/rank_0/g.zst" "$ex" 2>/dev/null
	left=$(ls -A "$q/step_1/rank_0" 2>/dev/null | grep -v '^g.zst$')
	[ -z "$left" ] || bad="$bad $k"
	rm -rf "$q/step_1"
	k=$((k + 1))
done
[ "$calls" -gt 3 ] && [ -z "$bad" ]
is "$?" 0 "a crash at any of the $calls calls leaves nothing in the rank directory but g.zst${bad:+: $bad}"
rm -rf "$q/.tmp"

# SIGTERM at each call: nothing left anywhere, beside the output or in .tmp.
bad=""
k=1
while [ "$k" -le "$calls" ]; do
	GRPO_FSYS_CRASH_AT=$k GRPO_FSYS_CRASH_SIGNAL=15 grpo-cat --from-json -o "$q/step_1/rank_0/g.zst" "$ex" 2>/dev/null
	st=$?
	left=$(ls -A "$q/step_1/rank_0" "$q/.tmp" 2>/dev/null | grep -v '^g.zst$' | grep -v ':$' | grep -v '^$')
	[ "$st" -eq 143 ] && [ -z "$left" ] || bad="$bad $k:$st"
	rm -rf "$q/step_1"
	k=$((k + 1))
done
[ -z "$bad" ]
is "$?" 0 "SIGTERM at any of the $calls calls leaves no temporary${bad:+: $bad}"

# A program started with SIGINT ignored (by a shell without job control
# running it in the background, or nohup) keeps it ignored, as it should:
# then the signal cannot stop it, and there is nothing to test.
ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status 2> /dev/null)
if [ -n "$ign" ] && [ $((0x$ign & 2)) -ne 0 ]; then
	skip "SIGINT is ignored in this environment (started in the background without job control)"
else
	mkdir "$T/plain"
	k=1
	bad=""
	calls=$(GRPO_FSYS_TRACE=1 grpo-cat --from-json -o "$T/plain/x.zst" "$ex" 2>&1 | grep -c '^fsys ')
	rm -f "$T/plain/x.zst"
	while [ "$k" -le "$calls" ]; do
		GRPO_FSYS_CRASH_AT=$k GRPO_FSYS_CRASH_SIGNAL=2 grpo-cat --from-json -o "$T/plain/x.zst" "$ex" 2>/dev/null
		left=$(ls -A "$T/plain" | grep -v '^x.zst$')
		[ -z "$left" ] || bad="$bad $k"
		rm -f "$T/plain/x.zst"
		k=$((k + 1))
	done
	[ -z "$bad" ]
	is "$?" 0 "outside a spool, SIGINT at any of the $calls calls leaves no temporary${bad:+: $bad}"
fi

# A binary spool file is not written to a terminal (script(1) makes one).
if command -v script > /dev/null 2>&1; then
	script -qc "grpo-cat --from-json '$ex'; echo rc=\$?" /dev/null < /dev/null > "$T/tty" 2>&1
	grep -q 'not writing a binary spool file to a terminal' "$T/tty" && grep -q 'rc=2' "$T/tty"
	is "$?" 0 "--from-json refuses a terminal as standard output (exit 2)"
else
	echo "ok 8 # SKIP no script(1)"
fi

# Strings that cJSON would change silently are refused, naming the line.
tr='"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1]'
printf '{"group_id":1,"trajectories":[{%s,"answer":"a\\u0000b"}]}\n' "$tr" > "$T/nul.jsonl"
grpo-cat --from-json -o "$T/nul.zst" "$T/nul.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-cat: $T/nul.jsonl:1: a NUL character (\\u0000) in a string is not supported (it would be cut there)" \
	"a \\u0000 in a string is refused (it was cut silently)"
printf '{"group_id":1,"trajectories":[{%s,"answer":"a\377b"}]}\n' "$tr" > "$T/bad.jsonl"
grpo-cat --from-json -o "$T/bad.zst" "$T/bad.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/bad.jsonl:1: byte 101 is not UTF-8 (JSON text is UTF-8; it would be stored raw)" \
	"invalid UTF-8 is refused (it was stored raw)"
printf '{"group_id":1,"trajectories":[{%s,"answer":"a\\udfffb"}]}\n' "$tr" > "$T/sur.jsonl"
grpo-cat --from-json -o "$T/sur.zst" "$T/sur.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/sur.zst" 2>&1 | grep -c 'No such')" \
	"1:grpo-cat: $T/sur.jsonl:1: a lone surrogate \\udfff at byte 101 (half of a UTF-16 pair, not a character):1" \
	"a lone surrogate is refused as such (it was 'not JSON'), no output written"
printf '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[02],"logprobs":[-1]}]}\n' > "$T/zero.jsonl"
grpo-cat --from-json -o "$T/zero.zst" "$T/zero.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/zero.zst" 2>&1 | grep -c 'No such')" \
	"1:grpo-cat: $T/zero.jsonl:1: not valid JSON (near byte 71: 02 is not a number as JSON writes one):1" \
	"a token id written 02 is refused (it was read as 2), no output written"
printf '{"group_id":1,"trajectories":[{%s,"answer":"a\\\\u0000b \303\251"}]}\n' "$tr" > "$T/ok.jsonl"
pat=$(printf '"answer":"a\\\\u0000b \303\251"')
grpo-cat --from-json "$T/ok.jsonl" | grpo-cat | grep -qF "$pat"
is "$?" 0 "an escaped backslash before u0000, and UTF-8 text, read back exactly"

# grpo-spool(5)'s round trip of a micro-batch: the same content uncompressed.
grpo-pack -T 256 -o "$T/mbq" "$T/plain.zst" 2>/dev/null
mb="$T/mbq/step_1/rank_0/mb_0000.zst"
grpo-cat "$mb" | grpo-cat --from-json | zstd -dc > "$T/mb.raw" && zstd -dc "$mb" > "$T/mb.orig" &&
	cmp -s "$T/mb.raw" "$T/mb.orig"
is "$?" 0 "a micro-batch through the JSON view decompresses to the same bytes (grpo-spool(5))"
