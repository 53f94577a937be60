#!/bin/sh
# The tools' threaded paths, small enough to run under ThreadSanitizer
# (make check-tsan runs this file with the tools built with it): grpo-pack
# publishing a step's micro-batches from several threads, two packers racing
# over one queue, and a --watch consumer stopped by a signal. The same files
# must come out as with one thread.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7

d="$GRPO_TOP/tests/cli/pack"
# 40 groups of the tiny example, each with its own sequence ids
i=1
while [ $i -le 40 ]; do
	sed "s/\"sequence_id\":\([0-9]*\)/\"sequence_id\":$i\1/g" "$d/tiny.jsonl"
	i=$((i + 1))
done > "$T/many.jsonl"
grpo-cat --from-json -o "$T/many.zst" "$T/many.jsonl"

# 1. publishing threads: 120 sequences, 2 ranks, micro-batches of 8 tokens
grpo-pack -T 8 -W 2 -o "$T/a/batches" "$T/many.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "a step of many micro-batches published by the publishing threads"
n=$(ls "$T"/a/batches/step_1/rank_*/mb_*.zst | wc -l | tr -d ' ')
[ "$n" -ge 16 ] && [ -f "$T/a/batches/step_1/DONE" ] && [ -z "$(ls -A "$T/a/batches/.tmp" 2>/dev/null)" ]
is "$?" 0 "all $n micro-batches and DONE, no temporary left"
ids=$(cat "$T"/a/batches/step_1/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | sort | uniq -c | awk '$1 != 1' | wc -l | tr -d ' ')
seqs=$(cat "$T"/a/batches/step_1/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | wc -l | tr -d ' ')
is "$seqs:$ids" "120:0" "every sequence in exactly one micro-batch"

# 2. one thread (the trace forces it) publishes the same bytes
GRPO_FSYS_TRACE=1 grpo-pack -T 8 -W 2 -o "$T/b/batches" "$T/many.zst" 2> /dev/null
(cd "$T/a/batches" && find step_1 -type f | sort | xargs cksum) > "$T/a.sum"
(cd "$T/b/batches" && find step_1 -type f | sort | xargs cksum) > "$T/b.sum"
cmp -s "$T/a.sum" "$T/b.sum"
is "$?" 0 "one thread publishes the same files, byte for byte"

# 3. two packers racing over one queue: each step whole, each sequence once
mkdir -p "$T/r/scored/step_0/rank_0"
i=1
while [ $i -le 12 ]; do
	sed "s/\"sequence_id\":\([0-9]*\)/\"sequence_id\":$i\1/g" "$d/tiny.jsonl" > "$T/one.jsonl"
	grpo-cat --from-json -o "$T/r/scored/step_0/rank_0/g$i.zst" "$T/one.jsonl"
	i=$((i + 1))
done
grpo-pack -T 8 -W 2 -b 6 -o "$T/r/batches" "$T/r/scored" 2> "$T/e1" & p1=$!
grpo-pack -T 8 -W 2 -b 6 -o "$T/r/batches" "$T/r/scored" 2> "$T/e2" & p2=$!
wait $p1; s1=$?
wait $p2; s2=$?
case "$s1:$s2" in 0:0|0:75|75:0) st=0 ;; *) st=1; echo "# status $s1 $s2: $(cat "$T/e1" "$T/e2")" ;; esac
is "$st" 0 "two packers on one queue: each succeeds or finds it locked (75)"
got=$(cat "$T"/r/batches/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | sort | uniq | wc -l | tr -d ' ')
is "$got" 36 "and the 36 sequences are packed, each once"

# 4. --watch: a consumer loop stopped by SIGTERM
q="$T/w/scored"
mkdir -p "$q"
grpo-pack -T 8 -W 2 --watch --min-tokens 10 -o "$T/w/batches" "$q" 2> "$T/werr" &
pid=$!
mkdir -p "$q/step_0/rank_0/.t" && cp "$T/many.zst" "$q/step_0/rank_0/.t/g" &&
	mv "$q/step_0/rank_0/.t/g" "$q/step_0/rank_0/g1.zst" && rmdir "$q/step_0/rank_0/.t"
i=0
while [ ! -f "$T/w/batches/step_1/DONE" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid
wait $pid
is "$?:$([ -f "$T/w/batches/step_1/DONE" ] && echo DONE)" "0:DONE" \
	"--watch packs what is published, and exits 0 on SIGTERM"

[ "$_failed" -eq 0 ]
