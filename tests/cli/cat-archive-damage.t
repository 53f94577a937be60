#!/bin/sh
# grpo-cat on archives: truncated or corrupted at any point, an archive is an
# error naming it (never a crash: run under check-san, AddressSanitizer
# reports any use of freed memory here); a tar of a consumed spool skips the
# claim records of .done/ and .claimed/; --stats says nothing about input it
# rejects; an empty input is an error, and one that is neither a spool file
# nor an archive says what it looks like.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 18

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
grpo-cat --from-json -o "$T/a.zst" "$ex"
mkdir -p "$T/arc/q/step_0/rank_0" "$T/arc/q/step_0/rank_1"
for i in 0 1 2; do cp "$T/a.zst" "$T/arc/q/step_0/rank_0/f$i.zst"; done
cp "$T/a.zst" "$T/arc/q/step_0/rank_1/g.zst"
# -b 1: no padding after the two zero blocks that end a tar
(cd "$T/arc" && tar -b 1 -cf ../arc.tar q) && zstd -q -c "$T/arc.tar" > "$T/arc.tar.zst"
size=$(wc -c < "$T/arc.tar.zst" | tr -d ' ')
tsize=$(wc -c < "$T/arc.tar" | tr -d ' ')

# Cut at 40 points across each archive (the tar up to and including the
# point where its end blocks begin, which libarchive alone would take for a
# whole archive): exit 1, and every line of the message is grpo-cat's own,
# naming the archive.
bad=""
for f in arc.tar.zst arc.tar; do
	n=$(wc -c < "$T/$f" | tr -d ' ')
	if [ "$f" = arc.tar ]; then n=$((n - 1024)); else n=$((n - 1)); fi
	i=1
	while [ "$i" -le 40 ]; do
		cut=$((n * i / 40))
		head -c "$cut" "$T/$f" > "$T/cut"
		grpo-cat "$T/cut" > /dev/null 2> "$T/err"
		st=$?
		if [ "$st" -ne 1 ] || [ ! -s "$T/err" ] || grep -v "^grpo-cat: $T/cut" "$T/err" > /dev/null; then
			bad="$bad $f@$cut:$st"
		fi
		i=$((i + 1))
	done
done
is "$bad" "" "an archive cut anywhere is an error naming it, never a crash"

# Overwrite 16 bytes at 40 points of the tar (inside headers and members).
bad=""
i=0
while [ "$i" -lt 40 ]; do
	off=$((tsize * i / 40))
	cp "$T/arc.tar" "$T/bad.tar"
	printf 'ZZZZZZZZZZZZZZZZ' | dd of="$T/bad.tar" bs=1 seek="$off" conv=notrunc 2>/dev/null
	grpo-cat "$T/bad.tar" > /dev/null 2> "$T/err"
	st=$?
	if [ "$st" -gt 1 ] || grep -v "^grpo-cat: $T/bad.tar" "$T/err" > /dev/null; then
		bad="$bad $off:$st"
	fi
	i=$((i + 1))
done
is "$bad" "" "a corrupted tar is read or refused with grpo-cat's own message, never a crash"

head -c 1024 "$T/arc.tar" > "$T/first.tar"
grpo-cat "$T/first.tar" > /dev/null 2> "$T/err"
st=$?
grep -q "^grpo-cat: $T/first.tar: " "$T/err"
is "$st:$?" "1:0" "cut inside the first member: exit 1 naming the archive: $(cat "$T/err")"

# A consumed spool: its claim records are not spool files.
mkdir -p "$T/arc/q/step_0/rank_0/.done" "$T/arc/q/step_0/rank_0/.claimed"
printf 'host 1 2\n' > "$T/arc/q/step_0/rank_0/.done/f0.zst"
printf 'host 1 2\n' > "$T/arc/q/step_0/rank_0/.claimed/f1.zst"
(cd "$T/arc" && tar -cf - q | zstd -q > ../consumed.tar.zst)
grpo-cat "$T/consumed.tar.zst" 2> "$T/err" | wc -l | tr -d ' ' > "$T/n"
is "$(cat "$T/n"):$(cat "$T/err")" "8:" "a tar of a consumed spool: .done/ and .claimed/ records are skipped"

# --stats of input it rejects prints no summary.
head -c 100 "$T/a.zst" > "$T/trunc.zst"
grpo-cat --stats "$T/a.zst" "$T/trunc.zst" > "$T/out" 2> "$T/err"
is "$?:$(wc -c < "$T/out" | tr -d ' ')" "1:0" "--stats prints no summary when an input is rejected"
grpo-cat --stats --json "$T/a.zst" > "$T/out"
is "$?:$(grep -c records "$T/out")" "0:1" "and one when every input is read"

# Empty input: a producer that failed before its first flush.
: > "$T/empty.zst"
grpo-cat "$T/empty.zst" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/empty.zst: empty (0 bytes): not a spool file (did the program writing it fail?)" \
	"an empty file is an error"
printf '{"oops"\n' | grpo-cat --from-json 2>/dev/null | grpo-cat > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>: empty (0 bytes): not a spool file (did the program writing it fail?)" \
	"grpo-cat --from-json failing before its first record: the reader at the pipe's end fails too"
grpo-cat --from-json < /dev/null | grpo-cat
is "$?" 0 "a producer that succeeds with no records still writes a valid empty stream"

# Neither a spool file nor an archive: what it looks like, and what reads it.
nota="not a spool file or an archive of them"
printf '{"group_id":"1"}\n' > "$T/g.jsonl"
json="it looks like JSON text: grpo-cat --from-json reads that, grpo-collect imports a server's rollouts"
grpo-cat "$T/g.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/g.jsonl: $nota ($json)" "JSON lines: said so"
printf '\n  [1, 2]\n' | grpo-cat > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>: $nota ($json)" "JSON on standard input, after blank lines: likewise"
zjson="it looks like zstd-compressed JSON text: grpo-cat --from-json reads that once decompressed, grpo-collect imports a server's rollouts as they are"
zstd -q -c "$T/g.jsonl" > "$T/g.jsonl.zst"
grpo-cat "$T/g.jsonl.zst" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/g.jsonl.zst: $nota (${zjson})" "zstd-compressed JSON: said so"
gzip -c "$T/g.jsonl" | grpo-cat > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>: $nota ($(echo "$zjson" | sed 's/zstd/gzip/'))" \
	"gzip-compressed JSON from a pipe: said so"
# a step's DONE manifest is JSON that --from-json refuses: the manifest is named, and what reads it
printf '{"step":1,"ranks":1,"micro_batches_per_rank":1,"sequences":3}\n' > "$T/DONE"
grpo-cat "$T/DONE" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/DONE: $nota (it looks like a step's DONE manifest, JSON text: cat or jq reads that)" \
	"a DONE manifest: said so"
printf 'step 3 done\n' > "$T/note.txt"
grpo-cat "$T/note.txt" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/note.txt: $nota (it looks like text)" "other text: said so"
head -c 3000 /dev/zero | tr '\0' '\1' > "$T/bin"
grpo-cat "$T/bin" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/bin: $nota (in no archive format libarchive knows)" "other bytes: said so"
grpo-cat "$T/arc.tar.zst" "$T/g.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/g.jsonl: $nota ($json)" "an archive first, then JSON: the archive read, the JSON named"
# tar alone is read: an mtree spec, which libarchive reads by opening the
# files it names on this host, is text like any other
printf '#mtree\n./secret type=file contents=/etc/hostname\n' > "$T/m.mtree"
grpo-cat "$T/m.mtree" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/m.mtree: $nota (it looks like text)" "an mtree spec is not read as an archive"
