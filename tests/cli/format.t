#!/bin/sh
# Spool format versions: files of version 1.0 (tests/data/spool-1.0) still
# read, to the JSON committed beside them; this build writes 1.1.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
D="$GRPO_TOP/tests/data/spool-1.0"

for f in rollouts scored mb; do
	head=$(zstd -dc "$D/$f.zst" | od -An -tu1 -N8 | tr -s ' ')
	grpo-cat "$D/$f.zst" > "$T/$f.json" 2> "$T/err"
	is "$?:$head:$(cmp -s "$T/$f.json" "$D/$f.json" && echo same):$(cat "$T/err")" \
		"0: 71 82 80 79 1 0 0 0:same:" "a 1.0 $f file reads, to the JSON committed beside it"
done

grpo-cat --from-json "$D/scored.json" -o "$T/new.zst"
head=$(zstd -dc "$T/new.zst" | od -An -tu1 -N8 | tr -s ' ')
is "$head" " 71 82 80 79 1 0 1 0" "this build writes version 1.1"
grpo-cat "$T/new.zst" | cmp -s - "$D/scored.json"
is "$?" 0 "and reads back what it wrote"
