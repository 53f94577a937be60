#!/bin/sh
# Inputs of lines that cannot be read say why, naming the input, instead of
# libarchive's "Error reading fd 3", and never pass for an empty input
# (grpo-cat --from-json DIR wrote an empty stream and exited 0).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4

mkdir "$T/dir"
grpo-collect "$T/dir" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/dir: is a directory, not a file of lines" \
	"grpo-collect DIR says it is a directory"
grpo-collect < "$T/dir" > /dev/null 2> "$T/err"
st=$?
grep -q 'is a directory' "$T/err"
is "$st:$?" "1:0" "and so on standard input: $(cat "$T/err")"
grpo-cat --from-json "$T/dir" > "$T/out.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: $T/dir: is a directory, not a file of lines" \
	"grpo-cat --from-json DIR says it is a directory, and fails"
grpo-cat --from-json < "$T/dir" > "$T/out.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>: is a directory, not a file of lines" "and so on standard input"

