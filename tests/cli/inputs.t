#!/bin/sh
# The tools that read [FILE...] read them alike (cli_inputs, tools/cli.h):
# "-" and no operand at all are standard input, named <stdin> in messages;
# a file that cannot be opened is named with the reason and the exit status
# is 1; grpo-cat goes on to the next file as cat(1) does, grpo-pack and
# grpo-score stop at the first.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 12
cd "$T"
d="$GRPO_TOP/tests/cli/pack"
grpo-cat --from-json -o tiny.zst "$d/tiny.jsonl" && grpo-pack -T 8 -W 2 -P 4 tiny.zst > mb.zst
ok $? "a spool file of groups and one of micro-batches"

grpo-cat tiny.zst > a && grpo-cat - < tiny.zst > b && grpo-cat < tiny.zst > c &&
	cmp -s a b && cmp -s a c
ok $? "grpo-cat: FILE, - and no operand read the same"
grpo-cat --from-json - < "$d/tiny.jsonl" > b.zst && cmp -s tiny.zst b.zst
ok $? "grpo-cat --from-json: - is standard input"
grpo-pack -T 8 -W 2 -P 4 - < tiny.zst > b.zst && cmp -s mb.zst b.zst
ok $? "grpo-pack: - is standard input"

grpo-cat nosuch tiny.zst > out 2> err
is "$?:$(cat err):$(wc -l < out)" "1:grpo-cat: nosuch: No such file or directory:$(wc -l < a)" \
	"grpo-cat names a missing file and goes on to the next"
grpo-cat --head 1 tiny.zst nosuch > out 2> err
is "$?:$(cat err):$(wc -l < out)" "1:grpo-cat: nosuch: No such file or directory:1" \
	"grpo-cat --head stops reading once it has printed enough, and still names a missing file"
grpo-cat --from-json nosuch "$d/tiny.jsonl" > out 2> err
is "$?:$(cat err):$(wc -c < out)" "1:grpo-cat: nosuch: No such file or directory:0" \
	"grpo-cat --from-json stops at a missing file"
grpo-pack -T 8 -W 2 tiny.zst nosuch > out 2> err
is "$?:$(cat err):$(wc -c < out)" "1:grpo-pack: nosuch: No such file or directory:0" \
	"grpo-pack stops at a missing file"
grpo-score -r length -m 9 nosuch tiny.zst > out 2> err
is "$?:$(cat err):$(wc -c < out)" "1:grpo-score: nosuch: No such file or directory:0" \
	"grpo-score stops at a missing file"

grpo-pack -T 8 -W 2 < mb.zst > /dev/null 2> err
is "$?:$(cat err)" "1:grpo-pack: <stdin>: record 1: not a group of trajectories" \
	"grpo-pack names standard input <stdin>"
grpo-cat - < /dev/null > /dev/null 2> err
is "$?:$(cat err)" "1:grpo-cat: <stdin>: empty (0 bytes): not a spool file (did the program writing it fail?)" \
	"grpo-cat names standard input <stdin>"
grpo-pack -T 8 -W 2 --watch tiny.zst 2> err
is "$?:$(cat err)" "2:grpo-pack: tiny.zst: --watch consumes queue directories only" \
	"grpo-pack --watch refuses a file before reading any"
exit $_failed
