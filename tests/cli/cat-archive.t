#!/bin/sh
# grpo-cat on zstd-compressed tars of a spool whose first compressed block is
# far larger than one read: the kind is decided from the decompressed bytes,
# from a file and from a pipe, and a live spool stream is not held up.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
grpo-cat --from-json -o "$T/a.zst" "$ex"
# 40 small files: the tar's first zstd block compresses to well over 4 KiB
# (distinct token ids in each, so that zstd finds little to share)
i=0
while [ $i -lt 40 ]; do
	mkdir -p "$T/sp/rollouts/step_0/rank_$((i % 4))"
	awk -v s=$i 'BEGIN { x = s * 7919 + 1; printf "{\"group_id\":%d,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":[", s
		for (k = 0; k < 300; k++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%s%d", k ? "," : "", x % 150000 }
		printf "],\"logprobs\":["
		for (k = 0; k < 300; k++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%s-%d.%d", k ? "," : "", x % 9, x % 997 }
		printf "]}]}\n" }' > "$T/g.jsonl"
	grpo-cat --from-json "$T/g.jsonl" > "$T/sp/rollouts/step_0/rank_$((i % 4))/f$i.zst"
	i=$((i + 1))
done
(cd "$T" && tar -cf - sp | zstd -q --no-progress > sp.tar.zst)
grpo-cat "$T/sp.tar.zst" > "$T/out" 2> "$T/err"
is "$?:$(wc -l < "$T/out" | tr -d ' '):$(cat "$T/err")" "0:40:" "a tar.zst of 40 spool files reads whole"
grpo-cat < "$T/sp.tar.zst" > "$T/out" 2> "$T/err"
is "$?:$(wc -l < "$T/out" | tr -d ' '):$(cat "$T/err")" "0:40:" "the same from a pipe"
grpo-cat --stats --json "$T/sp.tar.zst" | grep -q '"records":40,"groups":40'
is "$?" 0 "--stats over the archive counts every member's records"

# a big first record: a spool stream whose first block is large still reads
awk 'BEGIN { printf "{\"group_id\":7,\"trajectories\":[{\"prompt_tokens\":[1],\"response_tokens\":["
	for (i = 0; i < 60000; i++) printf "%s%d", i ? "," : "", (i * 7919) % 150000
	printf "],\"logprobs\":["
	for (i = 0; i < 60000; i++) printf "%s-%d.%d", i ? "," : "", i % 7, i % 97
	printf "]}]}\n" }' > "$T/big.jsonl"
grpo-cat --from-json "$T/big.jsonl" | cat | grpo-cat > "$T/big.out" 2> "$T/err"
is "$?:$(grep -c response_tokens "$T/big.out"):$(cat "$T/err")" "0:1:" \
	"a spool stream with a large first block reads from a pipe"

# a live pipe: the writer sends one whole spool file and waits until the
# reader printed a line; a reader that waited for more bytes would hang here
mkfifo "$T/go"
{ cat "$T/a.zst"; read x < "$T/go"; } | timeout 60 grpo-cat --head 1 | { head -n 1 > "$T/live"; echo > "$T/go"; cat > /dev/null; }
is "$(cat "$T/live")" "$(head -n 1 "$ex")" "a live pipe is not held up: the first record comes before the writer ends"
