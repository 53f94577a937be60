#!/bin/sh
# grpo-cat --head N: the inputs after the Nth record are still opened, so a
# missing one is said (--head 0 opened none, and exited 0 on a file that was
# not there); with --stats the bytes are those of the records counted: the
# decoder reads a block ahead, so the bytes on disk read to reach N records
# were reported against N records' uncompressed bytes (a file that
# compresses 8 times was said to grow).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10

mb="$GRPO_TOP/spool.example/batches/step_1/rank_0"
cat "$mb"/mb_0000.zst "$mb"/mb_0001.zst "$mb"/mb_0002.zst > "$T/three.zst"

grpo-cat --head 0 "$T/missing.zst" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out" "$T/err")" "1:grpo-cat: $T/missing.zst: No such file or directory" \
	"--head 0 on a missing file: said, exit 1"
grpo-cat --head 0 "$T/three.zst" > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/out" "$T/err")" "0:" "--head 0 on a spool file prints nothing, exit 0"
grpo-cat --head 1 "$T/three.zst" "$T/missing.zst" "$T" > "$T/out" 2> "$T/err"
is "$?:$(grep -c . < "$T/out"):$(cat "$T/err" | tr '\n' ' ')" \
	"1:1:grpo-cat: $T/missing.zst: No such file or directory grpo-cat: $T: Is a directory " \
	"--head 1: one record printed, then a missing file and a directory after it are said, exit 1"

# the bytes of the first record alone, and those of the three
one=$(grpo-cat --stats --json "$mb/mb_0000.zst")
raw1=$(echo "$one" | sed 's/.*"bytes_uncompressed":\([0-9]*\).*/\1/')
grpo-cat --stats --json --head 1 "$T/three.zst" > "$T/s1"
is "$?:$(grep -c "\"records\":1,.*\"bytes_on_disk\":null,\"bytes_uncompressed\":$raw1,\"compression_ratio\":null,\"bytes_per_response_token\":null" "$T/s1")" \
	"0:1" "--stats --head 1 inside a file: the first record's uncompressed bytes ($raw1), no bytes on disk or ratio"
grpo-cat --stats --head 1 "$T/three.zst" > "$T/t1"
is "$(grep '^bytes\|^compression' "$T/t1" | tr -s ' ' | tr '\n' ';')" \
	"bytes on disk - (--head stopped inside an input);bytes uncompressed $raw1;compression ratio -;bytes/response tok -;" \
	"the text says why there are no bytes on disk, and prints - for the ratios, as the man page says"
grpo-cat --stats --json "$T/three.zst" > "$T/all"
grpo-cat --stats --json --head 3 "$T/three.zst" > "$T/s3"
is "$?:$(cat "$T/s3")" "0:$(cat "$T/all")" "--head 3 of a file of 3 records: the whole file's statistics"
grpo-cat --stats --json --head 2 "$mb/mb_0000.zst" "$mb/mb_0001.zst" "$mb/mb_0002.zst" > "$T/s2"
grpo-cat --stats --json "$mb/mb_0000.zst" "$mb/mb_0001.zst" > "$T/two"
is "$?:$(cat "$T/s2")" "0:$(cat "$T/two")" \
	"--head 2 over three files of one record: the first two files' bytes, the third opened only"
cat "$T/three.zst" | grpo-cat --stats --json --head 1 > "$T/p1"
is "$(cat "$T/p1")" "$(cat "$T/s1")" \
	"from a pipe as from the file"
grpo-cat --stats --head 0 "$T/three.zst" | sed -n '1p;4,7p' | tr -s ' ' | tr '\n' ';' > "$T/s0"
is "$(cat "$T/s0")" "records 0 (0 groups, 0 micro-batches);bytes on disk 0;bytes uncompressed 0;compression ratio -;bytes/response tok -;" \
	"--stats --head 0: nothing counted, and no ratio of nothing"
grpo-cat --stats "$mb/mb_0000.zst" | grep '^compression\|^bytes/' | tr -s ' ' | sed 's/[0-9][0-9.]*/N/' | tr '\n' ';' > "$T/mbt"
is "$(cat "$T/mbt"):$(echo "$one" | grep -c '"compression_ratio":[0-9.]*,"bytes_per_response_token":null')" \
	"compression ratio N;bytes/response tok -;:1" \
	"a micro-batch file has a compression ratio but no response tokens: - in the text, null in JSON (not 0)"
