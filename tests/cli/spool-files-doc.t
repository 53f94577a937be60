#!/bin/sh
# grpo-spool(1) FILES names every kind of temporary that lib/spool makes in
# QUEUE/.tmp/ (PREFIX.unique), so that a reader who finds one left after a
# crash knows what it is and who removes it.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v mandoc > /dev/null || skip_all "no mandoc to render the man page"
plan 1

grep -ohE '"%s/(\.tmp/)?[a-z]+\.%s"' "$GRPO_TOP"/lib/spool/*.c |
	sed -E 's|"%s/(\.tmp/)?([a-z]+)\.%s"|\2|' | sort -u > "$T/made"
n=$(wc -l < "$T/made" | tr -d ' ')
# the list read, so that an empty one cannot pass: claim, discard, gc, del
[ "$n" -ge 4 ] || n="only $n"
# the QUEUE/.tmp/ entry of FILES, as mandoc renders it
mandoc -Tmarkdown "$GRPO_TOP/man/grpo-spool.1" | sed -n '/^# FILES/,/^# /p' |
	sed -n '/^\*QUEUE\/\.tmp\/\*$/,/^\*QUEUE\/step/p' | sed 's/\\\*/*/g' > "$T/files"
missing=
while read -r p; do grep -qF "$p.*" "$T/files" || missing="$missing $p.*"; done < "$T/made"
is "$n:$missing" "$n:" "grpo-spool(1) FILES, QUEUE/.tmp/, names every temporary lib/spool makes there"
