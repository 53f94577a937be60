#!/bin/sh
# grpo-pack, exactly once across crashes and re-runs (issue 10, items 1 and
# 2): property tests over seeded crash points (GRPO_FSYS_CRASH_AT), each
# followed by re-runs and recoveries in a seeded order, with the invariant
# "every input sequence in exactly one published step"; and a different
# command against a partly published job refuses, saying what exists.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 16

d="$GRPO_TOP/tests/cli/pack"
# files of tiny.jsonl with sequence ids made distinct: 3 sequences each
make_inputs() { # DIR FIRST LAST: files gFIRST.zst ... gLAST.zst
	i=$2
	while [ $i -le "$3" ]; do
		sed "s/\"sequence_id\":\([0-9]*\)/\"sequence_id\":$i\1/g" "$d/tiny.jsonl" > "$T/one.jsonl"
		grpo-cat --from-json -o "$1/g$i.zst" "$T/one.jsonl"
		i=$((i + 1))
	done
}
# the sequence ids of the published steps (those with DONE), sorted, one line
published() {
	for m in "$1"/step_*/DONE; do
		[ -f "$m" ] && cat "$(dirname "$m")"/rank_*/mb_*.zst
	done | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' | grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' '
}
# a small seeded generator: rnd SEED MOD sets r (and the next seed in seed)
rnd() { seed=$(( ($1 * 1103515245 + 12345) % 2147483648 )); r=$(( seed / 65536 % $2 )); }

mkdir -p "$T/in/step_0/rank_0" "$T/more"
make_inputs "$T/in/step_0/rank_0" 1 6
cp "$T/in/step_0/rank_0/g1.zst" "$T/g1.zst"   # other input, outside any queue
make_inputs "$T/more" 7 15
want=$(cat "$T"/in/step_0/rank_0/g*.zst | grpo-cat --json |
	grep -o '"sequence_id":[0-9]*' | grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' ')
cat "$T"/in/step_0/rank_0/g*.zst > "$T/all.zst"

# 1. files: a crash at a seeded point, then the same command again
job="-T 16 -W 2 -b 4"
rm -rf "$T/cnt" && calls=$(GRPO_FSYS_TRACE=1 grpo-pack $job -o "$T/cnt" "$T/all.zst" 2>&1 | grep -c '^fsys')
bad=0 trials=0 seed=7
while [ $trials -lt 12 ]; do
	rnd $seed "$calls"; k=$((r + 1))
	rm -rf "$T/q"
	GRPO_FSYS_CRASH_AT=$k grpo-pack $job -o "$T/q" "$T/all.zst" 2>/dev/null
	st=$?
	grpo-pack $job -o "$T/q" "$T/all.zst" 2> "$T/err"
	st2=$?
	got=$(published "$T/q")
	if [ "$st" != 86 ] || [ "$st2" != 0 ] || [ "$got" != "$want" ]; then
		echo "# crash at call $k of $calls (status $st, re-run $st2: $(cat "$T/err")): '$got'"
		bad=1
	fi
	trials=$((trials + 1))
done
is "$bad" 0 "files: a crash at any of 12 seeded points of $calls, then the same command: every sequence in exactly one step"
grpo-pack $job -o "$T/q" "$T/all.zst"
is "$?:$(published "$T/q")" "0:$want" "the same command once more publishes nothing"

# 2. a different command against a partly published job says what exists and refuses
rm -rf "$T/q"
k=$((calls / 2))
GRPO_FSYS_CRASH_AT=$k grpo-pack $job -o "$T/q" "$T/all.zst" 2>/dev/null
before=$(published "$T/q")
grpo-pack -T 16 -W 2 -b 5 -o "$T/q" "$T/all.zst" 2> "$T/err"
st=$?
is "$st:$(published "$T/q")" "1:$before" "another --batch-size on a partly published job: refused, nothing published"
grep -q "hold [0-9]* of the 18 sequences of job [0-9a-f]*, which is not finished: it was started with other input or options" "$T/err"
is "$?" 0 "saying what exists: $(cat "$T/err")"
grpo-pack $job -o "$T/q" "$T/g1.zst" 2> /dev/null
is "$?:$(published "$T/q")" "1:$before" "and so is other input"
grpo-pack $job -o "$T/q" "$T/all.zst"
is "$?:$(published "$T/q")" "0:$want" "the first command finishes the job"

# 3. queues: a crash, then packers, recovers, crashes and new input in a
# seeded order (cron, or systemd restarting a packer before recover); at the
# end a recover and --flush. A half-consumed file and a half-published step are
# never packed twice, and no run is wedged.
qjob="-T 16 -W 2 -b 4"
rm -rf "$T/cq" && mkdir -p "$T/cq" && cp -r "$T/in" "$T/cq/scored"
qcalls=$(GRPO_FSYS_TRACE=1 grpo-pack $qjob -o "$T/cq/batches" "$T/cq/scored" 2>&1 | grep -c '^fsys')
bad=0 trials=0 seed=11
while [ $trials -lt 30 ]; do
	rm -rf "$T/s" && mkdir -p "$T/s" && cp -r "$T/in" "$T/s/scored"
	rnd $seed "$qcalls"; k=$((r + 1))
	GRPO_FSYS_CRASH_AT=$k grpo-pack $qjob -o "$T/s/batches" "$T/s/scored" 2>/dev/null
	log="crash at $k"
	rnd $seed 6; acts=$((r + 1)) more=7
	while [ $acts -gt 0 ]; do
		rnd $seed 4
		case $r in
		3) mkdir -p "$T/s/scored/step_1/rank_0" && cp "$T/more/g$more.zst" "$T/s/scored/step_1/rank_0/"
		   more=$((more + 1)); log="$log, new file" ;;
		0) grpo-spool recover "$T/s" > /dev/null 2>&1; log="$log, recover" ;;
		1) grpo-pack $qjob -o "$T/s/batches" "$T/s/scored" 2> "$T/err"; st=$?; log="$log, pack ($st)"
		   [ $st = 0 ] || { bad=1; echo "# $log: $(cat "$T/err")"; } ;;
		2) rnd $seed "$qcalls"; k=$((r + 1))
		   GRPO_FSYS_CRASH_AT=$k grpo-pack $qjob -o "$T/s/batches" "$T/s/scored" 2> "$T/err"; st=$?
		   log="$log, crash at $k ($st)"
		   case $st in 0|86) ;; *) bad=1; echo "# $log: $(cat "$T/err")" ;; esac ;;
		esac
		acts=$((acts - 1))
	done
	grpo-spool recover "$T/s" > /dev/null 2>&1
	grpo-pack $qjob --flush -o "$T/s/batches" "$T/s/scored" 2> "$T/err" || { bad=1; echo "# $log: $(cat "$T/err")"; }
	got=$(published "$T/s/batches")
	qwant=$(cat "$T"/s/scored/step_*/rank_0/g*.zst | grpo-cat --json | grep -o '"sequence_id":[0-9]*' |
		grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' ')
	if [ "$got" != "$qwant" ]; then
		echo "# $log, recover, --flush: '$got'"
		bad=1
	fi
	left=$(ls "$T"/s/scored/step_*/rank_0/.done | grep -c zst)
	[ "$left" -eq $((more - 1)) ] || { bad=1; echo "# $log: $left of $((more - 1)) files retired"; }
	trials=$((trials + 1))
done
is "$bad" 0 "queues: 30 seeded crash points, re-runs, recovers, crashes and new files in seeded orders: every sequence in exactly one step, every file retired"

# 4. a packer run before recover, after a packer died holding a half-packed
# file: the next manifests still say what was packed of it
rm -rf "$T/h" && mkdir -p "$T/h" && cp -r "$T/in" "$T/h/scored"
grpo-pack -T 16 -b 4 --watch --timeout 1000 -o "$T/h/batches" "$T/h/scored" 2>/dev/null &
pid=$!
i=0
while [ ! -f "$T/h/batches/step_4/DONE" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill -KILL $pid; wait $pid 2>/dev/null
mkdir -p "$T/h/scored/step_1/rank_0"
sed 's/"sequence_id":\([0-9]*\)/"sequence_id":9\1/g' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/h/scored/step_1/rank_0/n.zst"
grpo-pack -T 16 -b 2 -o "$T/h/batches" "$T/h/scored" 2> "$T/err"
st=$?
grpo-spool recover "$T/h" > /dev/null 2>&1
grpo-pack -T 16 -b 2 --flush -o "$T/h/batches" "$T/h/scored" 2>> "$T/err"
is "$st:$?:$(published "$T/h/batches")" "0:0:$(echo "$want 910 911 920" | tr ' ' '\n' | grep . | sort -n | tr '\n' ' ')" \
	"a packer killed holding files, a run before recover, then after: every sequence once"

# 5. --step past the newest DONE: the newest manifest still says what was packed
# of the files left queued, and what of an unfinished job
rm -rf "$T/g" && mkdir -p "$T/g" && cp -r "$T/in" "$T/g/scored"
grpo-pack -T 16 -b 4 -o "$T/g/batches" "$T/g/scored" 2> /dev/null
grpo-pack -T 16 -b 4 --flush --step 9 -o "$T/g/batches" "$T/g/scored" 2> "$T/err"
is "$?:$(published "$T/g/batches")" "0:$want" "a queue file half packed, then --step 9: every sequence in exactly one step"
rm -rf "$T/q"
GRPO_FSYS_CRASH_AT=$((calls / 2)) grpo-pack $job -o "$T/q" "$T/all.zst" 2> /dev/null
before=$(published "$T/q")
grpo-pack $job --step 9 -o "$T/q" "$T/g1.zst" 2> /dev/null
is "$?:$(published "$T/q")" "1:$before" "--step 9 with other input against an unfinished job: refused, nothing published"

# 6. --step below the newest DONE: the next run reads what was packed from
# the newest manifest only, so a step published below it would be lost to
# it, and its sequences of a half-consumed file packed twice. Refused.
rm -rf "$T/b6" && mkdir -p "$T/b6/scored/step_0/rank_0"
cp "$T/in/step_0/rank_0/g1.zst" "$T/b6/scored/step_0/rank_0/"
grpo-pack -T 16 -b 2 --step 5 -o "$T/b6/batches" "$T/b6/scored" 2> /dev/null
cp "$T/in/step_0/rank_0/g2.zst" "$T/b6/scored/step_0/rank_0/"
grpo-pack -T 16 -b 3 --step 2 -o "$T/b6/batches" "$T/b6/scored" 2> "$T/err"
st=$?
is "$st:$(ls "$T/b6/batches" | tr '\n' ' '):$(ls "$T/b6/scored/step_0/rank_0/.claimed" | wc -l | tr -d ' ')" "1:step_5 :0" \
	"--step 2 with step 5 published: exit 1, nothing published, no claim left"
grep -q "step 2 comes before step 5, the newest published" "$T/err"
is "$?" 0 "saying why: $(cat "$T/err")"
grpo-pack -T 16 -b 3 --flush -o "$T/b6/batches" "$T/b6/scored" 2> /dev/null
is "$?:$(published "$T/b6/batches")" "0:110 111 120 210 211 220 " "the next run packs every sequence exactly once"

# 7. A power cut may lose a retirement that was never flushed: the file waits
# again, and once a later manifest no longer names it, nothing would stop a
# run packing it twice. So every rank directory's .done is flushed, once a
# run, before the next manifest; and the retirement of a file the newest
# manifest finished (a packer killed before retiring it) is flushed at once.
rm -rf "$T/p7" && mkdir -p "$T/p7/scored/step_0/rank_1" && cp -r "$T/in/step_0" "$T/p7/scored/"
mv "$T/p7/scored/step_0/rank_0/g6.zst" "$T/p7/scored/step_0/rank_1/"
cp -r "$T/p7" "$T/p7.orig"
n7=$(GRPO_FSYS_TRACE=1 grpo-pack -T 16 -b 40 --flush -o "$T/p7/batches" "$T/p7/scored" 2>&1 | grep -c '^fsys')
flushes() { # the run over DIR with each call failing in turn: the .done directories whose flush failed
	k=1
	while [ $k -le "$n7" ]; do
		rm -rf "$T/p7f" && cp -r "$1" "$T/p7f"
		GRPO_FSYS_FAIL_AT=$k:EIO grpo-pack -T 16 -b 40 --flush -o "$T/p7f/batches" "$T/p7f/scored" 2>&1 |
			grep -o 'scored/step_0/rank_[01]/.done: fsync failed'
		k=$((k + 1))
	done | sort | uniq -c | awk '{ printf "%s %s;", $1, $2 }'
}
is "$(flushes "$T/p7.orig")" "1 scored/step_0/rank_0/.done:;1 scored/step_0/rank_1/.done:;" \
	"each rank's .done flushed once, after retiring its files (5 and 1)"
rm -rf "$T/p7/scored/step_0/rank_0/.done" "$T/p7/scored/step_0/rank_1/.done"
is "$(flushes "$T/p7")" "5 scored/step_0/rank_0/.done:;1 scored/step_0/rank_1/.done:;" \
	"their records lost: retired again as the newest manifest finished them, each flushed at once"
grpo-pack -T 16 -b 40 --flush -o "$T/p7/batches" "$T/p7/scored" 2> /dev/null
is "$?:$(published "$T/p7/batches"):$(ls "$T/p7/batches" | tr '\n' ' ')" "0:$want:step_1 " \
	"and the next run packs nothing again"
