#!/bin/sh
# Inputs of lines that cannot be read say why, naming the input, instead of
# libarchive's "Error reading fd 3".
. "$GRPO_TOP/tests/cli/lib.sh"
plan 2

mkdir "$T/dir"
grpo-collect "$T/dir" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/dir: is a directory, not a file of lines" \
	"grpo-collect DIR says it is a directory"
grpo-collect < "$T/dir" > /dev/null 2> "$T/err"
st=$?
grep -q 'is a directory' "$T/err"
is "$st:$?" "1:0" "and so on standard input: $(cat "$T/err")"
