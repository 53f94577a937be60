#!/bin/sh
# grpo-pack: exact micro-batches for a tiny input, the spool layout and its
# manifest, steps by batch size, runs, overlong and stale sequences, queue
# input with claims, --watch, and usage errors.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 80

d="$GRPO_TOP/tests/cli/pack"
grpo-cat --from-json -o "$T/tiny.zst" "$d/tiny.jsonl"
grpo-cat --from-json -o "$T/runs.zst" "$d/runs.jsonl"

# 1. worked example: exact JSON of every micro-batch
grpo-pack --seq-len 8 --ranks 2 --pad-multiple 4 "$T/tiny.zst" > "$T/out.zst"
is "$?" 0 "a pipe: spool file in, spool file out"
grpo-cat --json "$T/out.zst" > "$T/out.jsonl"
cmp -s "$T/out.jsonl" "$d/tiny-T8-W2-P4.expected"
is "$?" 0 "T=8 W=2 P=4: the exact micro-batches of the worked example"
[ $? -eq 0 ] || diff "$T/out.jsonl" "$d/tiny-T8-W2-P4.expected" | sed 's/^/# /'
grpo-pack --seq-len 8 --ranks 2 --pad-multiple 4 < "$T/tiny.zst" | cmp -s - "$T/out.zst"
is "$?" 0 "standard input, and the same bytes again: deterministic"

# 2. publishing into a spool
grpo-pack -T 8 -W 2 -P 4 -o "$T/spool/batches" --metrics "$T/m.jsonl" "$T/tiny.zst"
is "$?" 0 "-o publishes a step"
(cd "$T/spool/batches" && find step_1 -type f | sort | tr '\n' ' ') > "$T/files"
is "$(cat "$T/files")" "step_1/DONE step_1/rank_0/mb_0000.zst step_1/rank_1/mb_0000.zst " \
	"rank directories, one file per micro-batch, and DONE"
is "$(cat "$T/spool/batches/step_1/DONE")" \
	'{"step":1,"ranks":2,"micro_batches_per_rank":1,"sequences":3,"tokens":14,"loss_tokens":5,"pad_tokens":2,"dummies":0,"dummy_tokens":0,"dropped":{"stale":0,"overlong":0,"empty":0},"truncated":0,"truncated_untrained":0,"runs":[{"run":"","sequences":3,"tokens":14,"sequences_total":3,"run_step":1,"ready":true}],"next_run":"","inputs":[],"partial":[],"job":{"id":"68ee1643b2b331ad","first_step":1,"sequences":3,"finished":true,"data":"42ed76ed66ea2e88","inputs_data":["42ed76ed66ea2e88"],"inputs_hash":["05b05211796a7783"],"done":[]}}' \
	"the manifest, with the step's loss tokens over both ranks (2 + 3)"
cat "$T/spool/batches"/step_1/rank_*/mb_*.zst | grpo-cat --json | cmp -s - "$d/tiny-T8-W2-P4.expected"
is "$?" 0 "the published files hold the same micro-batches"
grep -q '"step":1,"ranks":2,"micro_batches_per_rank":1,"dummies":0,"sequences":3,"tokens":14,"pad_tokens":2,"dummy_tokens":0,"fill":0.875000' "$T/m.jsonl" &&
	grep -q '"rank_tokens":\[8,8\]' "$T/m.jsonl"
is "$?" 0 "a metrics line: micro-batches, pad tokens, fill, per-rank tokens"
grpo-pack -T 8 -W 2 -P 4 --step 1 -o "$T/spool/batches" "$T/runs.zst" 2> "$T/err"
is "$?" 1 "a step that has DONE is never rewritten"
grep -q "step 1 is already published" "$T/err"
is "$?" 0 "and says so: $(cat "$T/err")"
# other sequences (the same ones with other options are refused: once-mixups.t)
sed 's/"sequence_id":\([0-9]*\)/"sequence_id":9\1/g; s/"advantages":1}/"advantages":2}/' "$d/tiny.jsonl" |
	grpo-cat --from-json -o "$T/tiny9.zst"
grpo-pack -T 8 -W 2 -o "$T/spool/batches" "$T/tiny9.zst"
[ -f "$T/spool/batches/step_2/DONE" ]
is "$?" 0 "without --step the next step after the newest DONE"
grep -q '"sequences_total":6,"run_step":2' "$T/spool/batches/step_2/DONE"
is "$?" 0 "run progress carries over from the previous manifest"
grpo-pack -T 8 -W 2 --step 0 -o "$T/s0" "$T/tiny.zst" 2> "$T/err"
is "$?:$(ls "$T/s0" 2> /dev/null)" "2:" "--step 0 into a queue, a step grpo-step never trains: a usage error, nothing published"

# 3. steps by batch size, groups kept whole
grpo-pack -T 16 -W 1 --batch-size 2 -o "$T/b" "$T/tiny.zst"
is "$(ls "$T/b" | grep -c step_)" 2 "--batch-size 2 with 3 sequences: two steps"
grep -q '"sequences":2,' "$T/b/step_1/DONE" && grep -q '"sequences":1,' "$T/b/step_2/DONE"
is "$?" 0 "of 2 and 1 sequences"
grpo-pack -T 16 -W 1 --batch-size 1 --keep-groups "$T/tiny.zst" | grpo-cat --json > "$T/kg"
is "$(sed -n 1p "$T/kg" | grep -o '"sequence_ids":\[[0-9,]*\]')" '"sequence_ids":[10,11]' \
	"--keep-groups: a group of 2 stays in one step even with --batch-size 1"
is "$(grep -o '"step":[0-9]*' "$T/kg" | tr '\n' ' ')" '"step":1 "step":2 ' "then the next group in step 2"
grpo-pack -T 8 --batch-tokens 10 -x "$T/bt" "$T/tiny.zst" > /dev/null
grpo-pack -T 8 --batch-tokens 4 -x "$T/bt" "$T/tiny.zst" > /dev/null
is "$(grep -o '"dummies":0,"sequences":[0-9]*,"tokens":[0-9]*' "$T/bt" | cut -d, -f2-3 | tr '\n' ' ')" \
	'"sequences":1,"tokens":5 "sequences":2,"tokens":9 "sequences":1,"tokens":5 "sequences":1,"tokens":6 "sequences":1,"tokens":3 ' \
	"--batch-tokens 10 over 5, 6 and 3 tokens: steps of 5 and 9; --batch-tokens 4: a step per sequence"

# 4. runs
grpo-pack -T 8 -W 1 --separate-runs "$T/runs.zst" | grpo-cat --json > "$T/r"
is "$(grep -c '"run":"a"' "$T/r") $(grep -c '"run":"b"' "$T/r")" "2 1" \
	"--separate-runs: every micro-batch holds one run, and says which"
grpo-pack -T 64 -W 1 --batch-size 2 -o "$T/rr" "$T/runs.zst"
grep -o '"run":"[ab]","sequences":[0-9]' "$T/rr/step_1/DONE" | tr '\n' ' ' > "$T/s1"
is "$(cat "$T/s1")" '"run":"a","sequences":1 "run":"b","sequences":1 ' "round-robin: step 1 takes one sequence of each run"
grep -q '"next_run":"a"' "$T/rr/step_1/DONE"
is "$?" 0 "and the manifest says whose turn is next"

# 5. overlong, stale
grpo-pack -T 5 "$T/tiny.zst" > /dev/null 2> "$T/err"
is "$?" 1 "a sequence longer than T is an error by default"
grep -q "sequence_id 11 has 6 tokens, more than --seq-len 5" "$T/err"
is "$?" 0 "naming it: $(cat "$T/err")"
grpo-pack -T 5 --overlong skip -x "$T/m2" "$T/tiny.zst" 2>/dev/null | grpo-cat --json | grep -c input_ids > "$T/n"
grep -q '"overlong":1' "$T/m2" && [ "$(cat "$T/n")" = 2 ]
is "$?" 0 "--overlong skip drops it and counts it"
grpo-pack -T 5 --overlong truncate -x "$T/m3" "$T/tiny.zst" 2>/dev/null | grpo-cat --json > "$T/tr"
grep -q '"truncated":1' "$T/m3" && grep -q '"input_ids":\[1,2,3,6,7\]' "$T/tr"
is "$?" 0 "--overlong truncate keeps the first T tokens and counts it"
grpo-pack -T 16 --step 2 --max-lag 0 -x "$T/m4" "$T/tiny.zst" 2>/dev/null | grpo-cat --json > "$T/st"
grep -q '"stale":2' "$T/m4" && grep -q '"sequence_ids":\[20\]' "$T/st"
is "$?" 0 "--max-lag 0 at step 2 drops policy_version 0, keeps 1, and counts"
grpo-pack -T 16 --step 3 --max-lag 0 -x "$T/m6" "$T/tiny.zst" 2>/dev/null | grpo-cat --json > "$T/st2"
grep -q '"step":3,"sequences":0,"dropped":{"stale":3' "$T/m6" && [ ! -s "$T/st2" ]
is "$?" 0 "all of it stale: no micro-batch, but a metrics line that counts them"

# 6. FLOP cost from a config
mkdir -p "$T/model"
printf '{"hidden_size":16,"intermediate_size":64,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2,"head_dim":8,"vocab_size":32}' > "$T/model/config.json"
grpo-pack -T 16 --cost flops --model "$T/model" -x "$T/m5" "$T/tiny.zst" > /dev/null
grep -q '"rank_cost":\[248192\]' "$T/m5"
is "$?" 0 "--cost flops: 17408*14 + 64*(6^2+5^2+3^2) for one micro-batch"
grpo-pack -T 16 --model "$T/model" "$T/tiny.zst" > /dev/null 2> "$T/err"
is "$?" 2 "--model without --cost flops is a usage error, not silently ignored"
grep -q "goes with --cost flops" "$T/err"
is "$?" 0 "saying so: $(cat "$T/err")"

# 7. a spool queue as input, consumed through claims
q="$T/s2/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
grpo-pack -T 8 -W 2 -o "$T/s2/batches" "$q"
is "$?" 0 "reads a queue directory"
[ -f "$T/s2/batches/step_1/DONE" ] && [ -e "$q/step_0/rank_0/.done/g1.zst" ] &&
	grep -q '"inputs":\["step_0/rank_0/g1.zst"\]' "$T/s2/batches/step_1/DONE"
is "$?" 0 "publishes the step, naming its input in DONE, then retires the input"
grpo-pack -T 8 -W 2 -o "$T/s2/batches" "$q"
[ ! -e "$T/s2/batches/step_2" ]
is "$?" 0 "a second run finds nothing waiting and publishes nothing"

# 8. --watch: a step as soon as enough is spooled, and a clean stop
q="$T/s3/scored"
mkdir -p "$q"
grpo-pack -T 8 -W 2 --watch --min-tokens 10 -o "$T/s3/batches" "$q" 2> "$T/werr" &
pid=$!
sleep 0.3
mkdir -p "$q/step_0/rank_0/.t" && cp "$T/tiny.zst" "$q/step_0/rank_0/.t/g" &&
	mv "$q/step_0/rank_0/.t/g" "$q/step_0/rank_0/g1.zst" && rmdir "$q/step_0/rank_0/.t"
i=0
while [ ! -f "$T/s3/batches/step_1/DONE" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$T/s3/batches/step_1/DONE" ]
is "$?" 0 "--watch packs a step once --min-tokens are spooled"
kill -TERM $pid
wait $pid
is "$?" 0 "and exits 0 on SIGTERM"
[ -e "$q/step_0/rank_0/.done/g1.zst" ] && [ -z "$(ls "$q/step_0/rank_0/.claimed" 2>/dev/null)" ]
is "$?" 0 "leaving its input retired and nothing claimed"

# 9. usage
grpo-pack --ranks 2 < /dev/null > /dev/null 2>&1
is "$?" 2 "--seq-len is required (exit 2)"
grpo-pack -T 8 --batch-size 2 --batch-tokens 9 < /dev/null > /dev/null 2>&1
is "$?" 2 "--batch-size and --batch-tokens exclude each other"
for b in "-b 2" "-k 9"; do
	grpo-pack -T 8 $b --watch --min-tokens 10 -o "$T/nothing" "$T/nothing" 2> "$T/err"
	is "$?:$(grep -c 'min-tokens goes with neither' "$T/err")" "2:1" "--min-tokens with $b, which it would not change: usage, 2"
done

# 10. --watch --timeout: a short step after idle seconds
q="$T/s4/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
grpo-pack -T 8 -W 2 --watch --timeout 0.5 --batch-size 100 -o "$T/s4/batches" "$q" &
pid=$!
i=0
while [ ! -f "$T/s4/batches/step_1/DONE" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $pid; wait $pid
grep -q '"sequences":3,' "$T/s4/batches/step_1/DONE" 2>/dev/null
is "$?" 0 "--timeout packs 3 buffered sequences though --batch-size asks for 100"

# 11. bad input in a queue: nothing published, every claim released
q="$T/s5/scored"
mkdir -p "$q/step_0/rank_0"
cp "$T/tiny.zst" "$q/step_0/rank_0/a.zst"
head -c 60 "$T/tiny.zst" > "$q/step_0/rank_0/b.zst"
grpo-pack -T 8 -o "$T/s5/batches" "$q" 2> "$T/err"
is "$?" 1 "a truncated input file exits 1"
[ ! -e "$T/s5/batches/step_1" ] && [ -z "$(ls "$q/step_0/rank_0/.claimed" 2>/dev/null)" ] &&
	[ -z "$(ls "$q/step_0/rank_0/.done" 2>/dev/null)" ]
is "$?" 0 "publishing nothing and leaving both files waiting: $(cat "$T/err")"

# 12. a crash at every file system call: recover, run again, same result
q="$T/s6/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
cp -r "$T/s6" "$T/s6.count" && calls=$(GRPO_FSYS_TRACE=1 grpo-pack -T 8 -W 2 -P 4 -o "$T/s6.count/batches" "$T/s6.count/scored" 2>&1 | grep -c '^fsys')
bad=0
n=1
while [ $n -le "$calls" ]; do
	rm -rf "$T/c" && cp -r "$T/s6" "$T/c"
	GRPO_FSYS_CRASH_AT=$n grpo-pack -T 8 -W 2 -P 4 -o "$T/c/batches" "$T/c/scored" 2>/dev/null
	st=$?
	grpo-spool recover "$T/c" > /dev/null 2>&1
	grpo-pack -T 8 -W 2 -P 4 -o "$T/c/batches" "$T/c/scored" 2>/dev/null
	cat "$T/c/batches"/step_1/rank_*/mb_*.zst 2>/dev/null | grpo-cat --json > "$T/c.json" 2>/dev/null
	if [ "$st" != 86 ] || [ ! -f "$T/c/batches/step_1/DONE" ] || [ -e "$T/c/batches/step_2" ] ||
		! cmp -s "$T/c.json" "$GRPO_TOP/tests/cli/pack/tiny-T8-W2-P4.expected"; then
		echo "# crash at call $n of $calls (status $st) left a different result"
		bad=1
	fi
	n=$((n + 1))
done
is "$bad" 0 "a crash at any of $calls file system calls, then recover and a re-run: step 1 exactly once"

# 13. the same with one input file spread over two steps (--batch-size 2 --flush)
q="$T/s7/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
rm -rf "$T/s7.count" && cp -r "$T/s7" "$T/s7.count"
calls=$(GRPO_FSYS_TRACE=1 grpo-pack -T 8 -b 2 --flush -o "$T/s7.count/batches" "$T/s7.count/scored" 2>&1 | grep -c '^fsys')
grep -q '"partial":\[{"file":"step_0/rank_0/g1.zst","hash":"[0-9a-f]\{16\}","done":\[0,1\]}\]' "$T/s7.count/batches/step_1/DONE"
is "$?" 0 "step 1's manifest lists the trajectories of the half-consumed file it holds"
bad=0
n=1
while [ $n -le "$calls" ]; do
	rm -rf "$T/c" && cp -r "$T/s7" "$T/c"
	GRPO_FSYS_CRASH_AT=$n grpo-pack -T 8 -b 2 --flush -o "$T/c/batches" "$T/c/scored" 2>/dev/null
	grpo-spool recover "$T/c" > /dev/null 2>&1
	grpo-pack -T 8 -b 2 --flush -o "$T/c/batches" "$T/c/scored" 2>/dev/null
	ids=$(cat "$T/c/batches"/step_*/rank_*/mb_*.zst 2>/dev/null | grpo-cat --json |
		grep -o '"sequence_ids":\[[0-9,]*\]' | grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' ')
	if [ "$ids" != "10 11 20 " ] || [ "$(ls "$T/c/batches"/step_*/DONE | wc -l)" -ne 2 ]; then
		echo "# crash at call $n of $calls: sequences '$ids'"
		bad=1
	fi
	n=$((n + 1))
done
is "$bad" 0 "a crash at any of $calls calls across two steps: every sequence packed exactly once"

# 14. one packer per output queue: the lock, and files already published
mkdir -p "$T/l"
grpo-pack -T 8 -W 2 -P 4 -o "$T/l/batches" "$T/tiny.zst"
flock "$T/l/batches/.lock" grpo-pack -T 8 -W 2 -o "$T/l/batches" "$T/tiny.zst" 2> "$T/err"
is "$?" 75 "a second packer on a locked queue exits 75 (temporary)"
grep -q "another grpo-pack is publishing into this queue" "$T/err" && [ ! -e "$T/l/batches/step_2" ]
is "$?" 0 "says why and publishes nothing: $(cat "$T/err")"
mkdir -p "$T/l2/batches/step_1/rank_0"
cp "$T/l/batches/step_1/rank_1/mb_0000.zst" "$T/l2/batches/step_1/rank_0/mb_0000.zst"
grpo-pack -T 8 -W 2 -P 4 -o "$T/l2/batches" "$T/tiny.zst" 2> "$T/err"
is "$?:$(cat "$T"/l2/batches/step_1/rank_*/mb_*.zst | grpo-cat --json | cmp - "$d/tiny-T8-W2-P4.expected" 2>&1)" "0:" \
	"a step left without DONE, holding other bytes, is rolled back and published whole"
is "$(cat "$T/err")" "grpo-pack: step 1: rolled back the 1 file that a packer which died or failed publishing it had left without DONE" \
	"saying so"
rm -rf "$T/l2" && mkdir -p "$T/l2/batches/step_1/rank_0"
cp "$T/l/batches/step_1/rank_0/mb_0000.zst" "$T/l2/batches/step_1/rank_0/mb_0000.zst"
grpo-pack -T 8 -W 2 -P 4 -o "$T/l2/batches" "$T/tiny.zst" 2>/dev/null && [ -f "$T/l2/batches/step_1/DONE" ]
is "$?" 0 "the same bytes left there (a re-run after a crash): rolled back and published again"
# two packers racing over one queue: whatever the timing, each step is whole
i=1
while [ $i -le 30 ]; do
	sed "s/\"sequence_id\":\([0-9]*\)/\"sequence_id\":$i\1/g" "$d/tiny.jsonl" > "$T/one.jsonl"
	mkdir -p "$T/race.in/step_0/rank_0"
	grpo-cat --from-json -o "$T/race.in/step_0/rank_0/g$i.zst" "$T/one.jsonl"
	i=$((i + 1))
done
bad=0
for round in 1 2 3; do
	rm -rf "$T/race" && cp -r "$T/race.in" "$T/race.q"
	mkdir -p "$T/race" && mv "$T/race.q" "$T/race/scored"
	grpo-pack -T 16 -W 2 -b 3 -o "$T/race/batches" "$T/race/scored" 2> "$T/e1" & p1=$!
	grpo-pack -T 16 -W 2 -b 3 -o "$T/race/batches" "$T/race/scored" 2> "$T/e2" & p2=$!
	wait $p1; s1=$?
	wait $p2; s2=$?
	for st in $s1 $s2; do case $st in 0|75) ;; *) bad=1; echo "# round $round: status $st: $(cat "$T/e1" "$T/e2")" ;; esac; done
	for m in "$T/race/batches"/step_*/DONE; do
		want=$(grep -o '"sequences":[0-9]*' "$m" | head -1 | cut -d: -f2)
		got=$(cat "$(dirname "$m")"/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
			grep -o '[0-9][0-9]*' | wc -l)
		[ "$want" = "$got" ] || { bad=1; echo "# round $round: $m says $want sequences, holds $got"; }
	done
	n=$(cat "$T/race/batches"/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
		grep -o '[0-9][0-9]*' | sort | uniq | wc -l)
	dup=$(cat "$T/race/batches"/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
		grep -o '[0-9][0-9]*' | sort | uniq -d | wc -l)
	[ "$n" = 90 ] && [ "$dup" = 0 ] || { bad=1; echo "# round $round: $n distinct sequences, $dup repeated"; }
done
is "$bad" 0 "two packers started together: 0 or 75 each, every step whole, 90 sequences exactly once"

# 15. drops and truncation: one line on standard error, and in the manifest
grpo-pack -T 5 --overlong skip -o "$T/d1" "$T/tiny.zst" 2> "$T/err"
is "$(cat "$T/err")" "grpo-pack: step 1: dropped 1 overlong (longer than --seq-len 5)" \
	"--overlong skip says so on standard error without -v or --metrics"
grep -q '"dropped":{"stale":0,"overlong":1,"empty":0},"truncated":0,' "$T/d1/step_1/DONE"
is "$?" 0 "and the manifest records it"
grpo-pack -T 5 --overlong truncate -o "$T/d2" "$T/tiny.zst" 2> "$T/err"
is "$(cat "$T/err")" "grpo-pack: step 1: truncated 1 to --seq-len 5 (0 left with no trained token)" \
	"--overlong truncate: one line"
grep -q '"truncated":1,"truncated_untrained":0' "$T/d2/step_1/DONE"
is "$?" 0 "in the manifest too"
grpo-pack -T 16 --step 2 --max-lag 0 -o "$T/d3" "$T/tiny.zst" 2> "$T/err"
is "$(cat "$T/err")" "grpo-pack: step 2: dropped 2 stale (policy_version below 1, --max-lag 0)" \
	"stale sequences: one line with the reason"
grep -q '"dropped":{"stale":2,' "$T/d3/step_2/DONE"
is "$?" 0 "and their count in the manifest"
grpo-cat --from-json -o "$T/empty.zst" "$d/empty.jsonl"
cat "$T/tiny.zst" "$T/empty.zst" | grpo-pack -T 8 -W 4 -P 4 -x "$T/m7" -o "$T/d4" 2> "$T/err"
is "$(cat "$T/err")" "grpo-pack: step 1: dropped 1 empty (no tokens)" "an empty sequence: one line"

# 16. pad_tokens means the same in the manifest and the metrics line
grep -q '"pad_tokens":6,"dummies":1,"dummy_tokens":4,' "$T/d4/step_1/DONE" &&
	grep -q '"pad_tokens":6,"dummy_tokens":4,' "$T/m7"
is "$?" 0 "padding of real micro-batches 6, a dummy's 4 tokens apart, in both"

# 17. T not a multiple of P: the user's T in messages and in fill
grpo-pack -T 7 -P 4 "$T/tiny.zst" > /dev/null 2> "$T/err"
grep -q "sequence_id 10 has 5 tokens, more than 4 tokens (--seq-len 7 rounded down to a multiple of --pad-multiple 4)" "$T/err"
is "$?" 0 "the overlong message quotes T as given: $(cat "$T/err")"
grpo-pack -T 10 -P 4 -x "$T/m8" "$T/tiny.zst" > /dev/null
grep -q '"micro_batches_per_rank":2,.*"fill":0.700000,"fill_bound":0.700000' "$T/m8"
is "$?" 0 "T=10 P=4: 14 tokens in two micro-batches of capacity 8, fill 14/(2*10)"

# 18. --poll, --rescan, --lease: the watch options of grpo-spool consume
q="$T/s8/scored"
mkdir -p "$q"
grpo-pack -T 8 -W 2 --poll 0.2 --lease 60 --min-tokens 10 -v -o "$T/s8/batches" "$q" 2> "$T/perr" &
pid=$!
sleep 0.3
mkdir -p "$q/step_0/rank_0/.t" && cp "$T/tiny.zst" "$q/step_0/rank_0/.t/g" &&
	mv "$q/step_0/rank_0/.t/g" "$q/step_0/rank_0/g1.zst" && rmdir "$q/step_0/rank_0/.t"
i=0
while [ ! -f "$T/s8/batches/step_1/DONE" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$T/s8/batches/step_1/DONE" ]
is "$?" 0 "--poll 0.2 (implying --watch) finds a file published meanwhile and packs it"
kill -TERM $pid
wait $pid
grep -q "1 file, .* polling every 0.2s, stopped by signal" "$T/perr"
is "$?" 0 "by listing the queue every 0.2 s, not inotify: $(tail -1 "$T/perr")"
grep -q " lease=60$" "$q/step_0/rank_0/.done/g1.zst"
is "$?" 0 "--lease 60 is the lease recorded in the input's claim"
grpo-pack -T 8 --rescan 10 "$q" > /dev/null 2>&1
is "$?" 2 "--rescan without --watch is a usage error"

# 19. a queue without --watch (cron): only full steps; the rest waits
q="$T/s9/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
grpo-pack -T 8 -b 2 -o "$T/s9/batches" "$q"
ls "$T/s9/batches" | grep step_ | tr '\n' ' ' > "$T/steps"
is "$(cat "$T/steps")" "step_1 " "-b 2 over 3 queued sequences: one full step, no short one"
grep -q '"sequences":2,.*"partial":\[{"file":"step_0/rank_0/g1.zst","hash":"[0-9a-f]\{16\}","done":\[0,1\]}\]' "$T/s9/batches/step_1/DONE" &&
	[ -f "$q/step_0/rank_0/g1.zst" ] && [ -z "$(ls "$q/step_0/rank_0/.claimed" 2>/dev/null)" ] && [ -z "$(ls "$q/step_0/rank_0/.done" 2>/dev/null)" ]
is "$?" 0 "the file with the third sequence waits again, the manifest saying which two are packed"
grpo-pack -T 8 -b 2 -o "$T/s9/batches" "$q"
[ ! -e "$T/s9/batches/step_2" ]
is "$?" 0 "the next run, with nothing new, publishes nothing"
sed 's/"sequence_id":\([0-9]*\)/"sequence_id":5\1/g' "$d/tiny.jsonl" | grpo-cat --from-json -o "$q/step_0/rank_0/g2.zst"
grpo-pack -T 8 -b 2 -o "$T/s9/batches" "$q"
ids=$(cat "$T/s9/batches"/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' ')
is "$(ls "$T/s9/batches" | grep -c step_) $ids" "3 10 11 20 510 511 520 " \
	"with 3 more: steps 2 and 3 of 2, each sequence exactly once"
[ -e "$q/step_0/rank_0/.done/g1.zst" ] && [ -e "$q/step_0/rank_0/.done/g2.zst" ]
is "$?" 0 "and both files retired"
q="$T/s10/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
grpo-pack -T 8 -b 2 --flush -o "$T/s10/batches" "$q"
grep -q '"sequences":1,' "$T/s10/batches/step_2/DONE" 2>/dev/null && [ -e "$q/step_0/rank_0/.done/g1.zst" ]
is "$?" 0 "--flush packs the rest as a last short step and retires the file"

# 20. --fill-target: a step of whole rounds, the rest in the next step
grpo-pack -T 8 --fill-target 0.9 -x "$T/m9" -o "$T/f1" "$T/tiny.zst"
ids() { cat "$1"/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' | grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' '; }
is "$(ids "$T/f1/step_1")/$(ids "$T/f1/step_2")" "10 20 /11 " \
	"F=0.9, T=8: 5 + 3 tokens fill step 1's one micro-batch, the 6 goes to step 2 (end of a file)"
grep -q '"step":1,.*"fill":1.000000' "$T/m9"
is "$?" 0 "step 1 filled to 1 (0.875 without --fill-target)"
q="$T/f2/scored"
mkdir -p "$q/step_0/rank_0" && cp "$T/tiny.zst" "$q/step_0/rank_0/g1.zst"
grpo-pack -T 8 --fill-target 0.9 -o "$T/f2/batches" "$q"
[ ! -e "$T/f2/batches/step_2" ] && grep -q '"partial":\[{"file":"step_0/rank_0/g1.zst","hash":"[0-9a-f]\{16\}","done":\[0,2\]}\]' "$T/f2/batches/step_1/DONE"
is "$?" 0 "from a queue the carried sequence stays queued, the manifest naming the two packed"
grpo-pack -T 8 --fill-target 0.9 --flush -o "$T/f2/batches" "$q"
is "$(ids "$T/f2/batches/step_2")" "11 " "and a later run with --flush packs it exactly once"

# 21. a sequence scored without a reference beside ones scored with it: its
# micro-batch carries no ref_logprobs (0 there would pass for the reference's
# logprob in grpo-step's KL), the others keep theirs, and grpo-pack says so
sed 's/"ref_logprobs":\[-0.75,-0.5\],//' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/mixed.zst" || exit 1
grpo-pack -T 16 -W 1 -o "$T/mx1" "$T/mixed.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-pack: step 1: warning: 1 of its 3 sequences has no reference logprobs: the micro-batch holding it carries none, and grpo-step --beta will refuse it; score every sequence against the same reference, or none" \
	"one micro-batch of all three: packed, with a warning"
is "$(grpo-cat --json "$T"/mx1/step_1/rank_0/mb_*.zst | grep -c '"ref_logprobs"')" 0 \
	"and no ref_logprobs in it (they were 0 for sequence 10 before)"
grpo-pack -T 8 -W 2 -P 4 "$T/mixed.zst" 2> /dev/null | grpo-cat --json | grep -o '"ref_logprobs":[^]]*]' > "$T/refs"
is "$(cat "$T/refs")" '"ref_logprobs":[0,0,0,-1.5,-2.5,-3.5,0,0]' \
	"sequence 11 alone in its micro-batch keeps its reference logprobs, aligned; 10 and 20's has none"
grpo-init --preset tiny --seed 1 -o "$T/mxmodel" > /dev/null &&
	grpo-step --model "$T/mxmodel" --batches "$T/mx1" -o "$T/mxp" --beta 0.1 2> "$T/err"
is "$?:$(grep -c 'needs reference logprobs' "$T/err")" "1:1" "grpo-step --beta refuses that step, saying why"
