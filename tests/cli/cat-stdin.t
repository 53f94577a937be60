#!/bin/sh
# grpo-cat on standard input: spool files and tar archives of them, from a
# redirected file (seekable) or a pipe (not), told apart by their first bytes.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
grpo-cat --from-json -o "$T/a.zst" "$ex"
mkdir -p "$T/arc/step_0/rank_0" && cp "$T/a.zst" "$T/arc/step_0/rank_0/x.zst" && : > "$T/arc/step_0/DONE"
(cd "$T/arc" && tar -cf ../arc.tar step_0) && zstd -q -c "$T/arc.tar" > "$T/arc.tar.zst" &&
	gzip -c "$T/arc.tar" > "$T/arc.tar.gz"

grpo-cat - < "$T/arc.tar.zst" > "$T/out"
is "$?" 0 "grpo-cat - < x.tar.zst runs"
cmp -s "$T/out" "$ex"
is "$?" 0 "and prints the archive's records"
cat "$T/arc.tar.zst" | grpo-cat > "$T/out" && cmp -s "$T/out" "$ex"
is "$?" 0 "a tar.zst through a pipe"
cat "$T/arc.tar.gz" | grpo-cat - > "$T/out" && cmp -s "$T/out" "$ex"
is "$?" 0 "a tar.gz through a pipe"
cat "$T/arc.tar" | grpo-cat > "$T/out" && cmp -s "$T/out" "$ex"
is "$?" 0 "an uncompressed tar through a pipe"
cat "$T/a.zst" "$T/a.zst" | grpo-cat | wc -l | tr -d ' ' > "$T/n"
is "$(cat "$T/n")" 4 "spool files through a pipe still stream as before"
is "$(cat "$T/arc.tar.zst" | grpo-cat --head 1 | wc -l | tr -d ' ')" 1 "--head 1 on an archive in a pipe"
is "$(cat "$T/a.zst" "$T/a.zst" "$T/a.zst" | grpo-cat --head 1 | wc -l | tr -d ' ')" 1 \
	"--head 1 on spool files in a pipe (the reader stops before the end)"
grpo-cat --stats --json < "$T/arc.tar.zst" | grep -q '"records":2,"groups":2'
is "$?" 0 "--stats of an archive on standard input"
printf 'abc' | grpo-cat > /dev/null 2> "$T/err"
is "$?" 1 "three bytes that are neither fail (exit 1): $(cat "$T/err")"
