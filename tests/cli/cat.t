#!/bin/sh
# grpo-cat: JSON view, --from-json round trip, --stats, --head, archives, bad input.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 14

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
grpo-cat --bogus > /dev/null 2>&1
is "$?" 2 "an unknown option exits 2"
