#!/bin/sh
# grpo-pack packs a queue file's trajectories once however many copies of
# the file come into the queue: a copy under another name, in another step
# or rank directory, a backup restored, or the file itself waiting again
# after its retirement was lost. A manifest records each queue file's hash
# (its trajectories with their ids, less their advantages); a file whose hash a manifest of the
# output queue records, or another file of the run holds, is retired
# unpacked, with a warning naming both. Files with the same tokens but
# other ids (sampled apart) are not copies.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 27

d="$GRPO_TOP/tests/cli/pack"
one() { # one FILE ID [SED]: tiny.jsonl's 3 sequences with ids made distinct by ID, SED applied too
	sed "s/\"sequence_id\":\([0-9]*\)/\"sequence_id\":$2\1/g; ${3:-}" "$d/tiny.jsonl" > "$T/one.jsonl"
	grpo-cat --from-json -o "$1" "$T/one.jsonl"
}
# own FILE ID: the same with other tokens too (plain inputs: a job knows its
# inputs by their trajectories alone, so one has to differ in its tokens)
own() { one "$1" "$2" "s/\[9,9\]/[9,$2]/"; }
# the sequence ids of the published steps, sorted, one line
published() {
	cat "$1"/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
		grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' '
}
waiting() { grpo-spool status "$1" 2> /dev/null | awk '$1 == "scored" { w += $4 } END { print w + 0 }'; }
pack() { grpo-pack -T 16 --flush -o "$1/batches" "$1/scored" 2> "$T/err"; }

# 1. two copies in one run, a third in another step: packed once
s="$T/a" && mkdir -p "$s/scored/step_0/rank_0" "$s/scored/step_1/rank_1"
one "$s/scored/step_0/rank_0/g.zst" 1
cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_0/rank_0/h.zst"
cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_1/rank_1/g.zst"
pack "$s"
is "$?:$(published "$s/batches")" "0:110 111 120 " "one file and two copies in one run: its 3 sequences packed once"
is "$(grep -c 'not packed again, retired' "$T/err")" 2 "a warning for each copy"
grep -q "scored/step_0/rank_0/h.zst: its 3 sequences are those of step_0/rank_0/g.zst, read before it: not packed again, retired" "$T/err"
is "$?" 0 "naming the copy and the file read before it: $(head -n 1 "$T/err")"
is "$(waiting "$s"):$(ls "$s/scored/step_1/rank_1/.done")" "0:g.zst" "the copies retired: nothing left waiting"
grep -q '"inputs":\["step_0/rank_0/g.zst"\],"inputs_hash":\["[0-9a-f]\{16\}"\]' "$s/batches/step_1/DONE"
is "$?" 0 "the manifest records the file packed, with its hash"

# 2. a copy arriving after the file was packed and retired, in a later run
mkdir -p "$s/scored/step_2/rank_0" && cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_2/rank_0/copy.zst"
pack "$s"
is "$?:$(published "$s/batches"):$(ls "$s/batches" | grep -c step_)" "0:110 111 120 :1" \
	"a copy in a later run: nothing published"
grep -q "step_2/rank_0/copy.zst: its 3 sequences are those of step_0/rank_0/g.zst, packed into step 1: not packed again" "$T/err"
is "$?" 0 "saying which step holds them: $(cat "$T/err")"

# 3. the file itself waiting again once a later manifest no longer names it
# (its retirement lost: a power cut on a file system that kept the manifest)
one "$s/scored/step_2/rank_0/new.zst" 2
pack "$s"
rm "$s/scored/step_0/rank_0/.done/g.zst"
pack "$s"
is "$?:$(published "$s/batches")" "0:110 111 120 210 211 220 " "its record lost, the file is not packed a second time"
grep -q "step_0/rank_0/g.zst: its 3 sequences are packed into step 1 already, and retired" "$T/err"
is "$?" 0 "and it is retired again, saying so: $(cat "$T/err")"

# 4. the same tokens under other ids are other sequences: both packed
s="$T/b" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 3
one "$s/scored/step_0/rank_0/h.zst" 4
pack "$s"
is "$?:$(published "$s/batches"):$(grep -c 'not packed again' "$T/err")" "0:310 311 320 410 411 420 :0" \
	"two files of equal tokens and other ids are both packed, neither taken for a copy"

# 5. a file packed in part across runs is the same file, not its own copy:
# step 1 takes 2 of its 3, a later run the third, even after other steps
s="$T/c" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 5
grpo-pack -T 16 -b 2 -o "$s/batches" "$s/scored" 2> /dev/null
one "$s/scored/step_0/rank_0/h.zst" 6
grpo-pack -T 16 -b 2 -o "$s/batches" "$s/scored" 2> /dev/null
grpo-pack -T 16 -b 2 --flush -o "$s/batches" "$s/scored" 2> "$T/err"
is "$?:$(published "$s/batches"):$(grep -c 'not packed again' "$T/err")" "0:510 511 520 610 611 620 :0" \
	"a file packed in part by several runs: every sequence once, none taken for a copy"

# 6. a manifest from before hashes were kept knows no copy: the file is
# packed as before, and the manifests written from then on keep hashes
s="$T/d" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 7
pack "$s"
sed 's/,"inputs_hash":\[[^]]*\]//' "$s/batches/step_1/DONE" > "$T/old" && cp "$T/old" "$s/batches/step_1/DONE"
grpo-spool status "$s" > /dev/null 2>&1
is "$?" 0 "a manifest without inputs_hash still reads"
mkdir -p "$s/scored/step_1/rank_0" && cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_1/rank_0/copy.zst"
pack "$s"
is "$?:$(published "$s/batches")" "0:710 710 711 711 720 720 " \
	"a copy of a file packed before hashes were kept is packed again (nothing records it)"

# 7. --watch: a copy that arrives while the packer runs, after the file's step
s="$T/w" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 8
grpo-pack -T 16 -b 3 --watch -o "$s/batches" "$s/scored" 2> "$T/err" &
pid=$!
wait_for 30 test -f "$s/batches/step_1/DONE"
cp "$s/scored/step_0/rank_0/g.zst" "$T/late.zst"   # published by rename, as a tool would
mkdir -p "$s/scored/step_1/rank_0" && mv "$T/late.zst" "$s/scored/step_1/rank_0/late.zst"
wait_for 30 test -f "$s/scored/step_1/rank_0/.done/late.zst"
kill -TERM $pid
wait $pid
is "$?:$(published "$s/batches")" "0:810 811 820 " "--watch: a copy arriving after the file's step is published is not packed"

# 8. after grpo-spool gc removed the steps that held them, their files are
# still known: gc keeps each removed step's queue files and hashes in .jobs
s="$T/g" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 9
pack "$s"
one "$s/scored/step_0/rank_0/h.zst" 1
pack "$s"
grpo-spool consume "$s/batches" -- true && grpo-spool gc "$s" --keep-last 0 --queue batches > /dev/null 2>&1
is "$(ls "$s/batches" | tr '\n' ' ')" "step_2 " "gc removed step 1"
grep -q '^{"step":1,"inputs":\["step_0/rank_0/g.zst"\],"inputs_hash":\["[0-9a-f]\{16\}"\]}$' "$s/batches/.jobs"
is "$?" 0 "recording its file and hash in .jobs"
mkdir -p "$s/scored/step_5/rank_0" && cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_5/rank_0/back.zst"
pack "$s"
is "$?:$(ls "$s/batches" | tr '\n' ' '):$(grep -c "those of step_0/rank_0/g.zst, packed into step 1 (removed by grpo-spool gc, recorded in $s/batches/.jobs): not packed again" "$T/err")" \
	"0:step_2 :1" "a copy of a file of the removed step is not packed"

# 9. a manifest that cannot be read refuses the run: what it packed is unknown
s="$T/m" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 2
pack "$s"
one "$s/scored/step_0/rank_0/h.zst" 3
pack "$s"
echo '{"step":1,' > "$s/batches/step_1/DONE"
mkdir -p "$s/scored/step_1/rank_0" && cp "$s/scored/step_0/rank_0/g.zst" "$s/scored/step_1/rank_0/copy.zst"
pack "$s"
st=$?
grep -q "batches/step_1/DONE" "$T/err"
is "$st:$?:$(ls "$s/batches" | tr '\n' ' '):$(waiting "$s")" "1:0:step_1 step_2 :1" \
	"an older manifest damaged: exit 1 naming it, the new file left waiting: $(cat "$T/err")"

# 10. between plain inputs and queue files, both ways: a file moved out of
# the queue (quarantined, saved aside, restored from a gc archive) and packed
# by name, and a file packed by name copied into the queue, are copies too
s="$T/x" && mkdir -p "$s/scored/step_0/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 1
pack "$s"
cp "$s/scored/step_0/rank_0/g.zst" "$T/aside.zst"
grpo-pack -T 16 --flush -o "$s/batches" "$T/aside.zst" 2> "$T/err"
st=$?
grep -q "$T/aside.zst: its 3 sequences are those of step_0/rank_0/g.zst, packed into step 1; nothing published: packing them again would train them twice" "$T/err"
is "$st:$?:$(published "$s/batches")" "1:0:110 111 120 " \
	"a queue file packed, then given by name: refused, nothing published: $(cat "$T/err")"
own "$T/p.zst" 2
grpo-pack -T 16 --flush -o "$s/batches" "$T/p.zst" 2> /dev/null
mkdir -p "$s/scored/step_1/rank_0" && cp "$T/p.zst" "$s/scored/step_1/rank_0/p.zst"
pack "$s"
st=$?
grep -q "scored/step_1/rank_0/p.zst: its 3 sequences are those of input 1 of job [0-9a-f]\{16\}, packed into step 2: not packed again, retired" "$T/err"
is "$st:$?:$(published "$s/batches"):$(waiting "$s")" "0:0:110 111 120 210 211 220 :0" \
	"a file packed by name, then copied into the queue: not packed, retired: $(cat "$T/err")"
grep -q '"job":{[^}]*"inputs_hash":\["[0-9a-f]\{16\}"\]' "$s/batches/step_2/DONE"
is "$?" 0 "the job records each input's hash as a queue file's"
# in one run: the plain input first, then its copy in the queue
own "$T/q.zst" 3
mkdir -p "$s/scored/step_2/rank_0" && cp "$T/q.zst" "$s/scored/step_2/rank_0/q.zst"
grpo-pack -T 16 --flush -o "$s/batches" "$T/q.zst" "$s/scored" 2> "$T/err"
st=$?
grep -q "scored/step_2/rank_0/q.zst: its 3 sequences are those of $T/q.zst, read before it: not packed again, retired" "$T/err"
is "$st:$?:$(published "$s/batches")" "0:0:110 111 120 210 211 220 310 311 320 " \
	"a plain input and its copy in the queue in one run: packed once: $(cat "$T/err")"
# after gc removed their steps, from .jobs: a queue file's copy by name, a plain input's in the queue
grpo-spool consume "$s/batches" -- true && grpo-spool gc "$s" --keep-last 0 --queue batches > /dev/null 2>&1
grpo-pack -T 16 --flush -o "$s/batches" "$T/aside.zst" 2> "$T/err"
st=$?
grep -q "$T/aside.zst: its 3 sequences are those of step_0/rank_0/g.zst, packed into step 1 (removed by grpo-spool gc, recorded in $s/batches/.jobs); nothing published" "$T/err"
is "$st:$?:$(ls "$s/batches" | tr '\n' ' ')" "1:0:step_3 " "after gc, a queue file given by name: refused: $(cat "$T/err")"
mkdir -p "$s/scored/step_3/rank_0" && cp "$T/p.zst" "$s/scored/step_3/rank_0/p2.zst"
pack "$s"
grep -q "p2.zst: its 3 sequences are those of input 1 of job [0-9a-f]\{16\}, packed into step 2 (removed by grpo-spool gc, recorded in $s/batches/.jobs): not packed again" "$T/err"
is "$?:$(ls "$s/batches" | tr '\n' ' '):$(waiting "$s")" "0:step_3 :0" "after gc, a plain input copied into the queue: not packed: $(cat "$T/err")"
# the same tokens under other ids, by name: packed
grpo-cat --json "$s/scored/step_0/rank_0/g.zst" | sed 's/"group_id":\([0-9]*\)/"group_id":7\1/' |
	grpo-cat --from-json -o "$T/o.zst"
grpo-pack -T 16 --flush -o "$s/batches" "$T/o.zst" 2> "$T/err"
is "$?:$(ls "$s/batches" | tr '\n' ' ')" "0:step_3 step_4 " "a queue file's tokens under other group ids, by name: packed: $(cat "$T/err")"

# 11. the same samples scored twice are the same samples, whatever their
# advantages: a rollouts file collected twice with one seed, or restored
# from a backup, and scored again by a judge whose verdicts differ
s="$T/j" && mkdir -p "$s/scored/step_0/rank_0" "$s/scored/step_1/rank_0"
one "$s/scored/step_0/rank_0/g.zst" 1
one "$s/scored/step_1/rank_0/again.zst" 1 's/"advantages":1}/"advantages":0.25}/'
pack "$s"
st=$?
grep -q "step_1/rank_0/again.zst: its 3 sequences are those of step_0/rank_0/g.zst, read before it: not packed again" "$T/err"
is "$st:$?:$(published "$s/batches"):$(waiting "$s")" "0:0:110 111 120 :0" \
	"the same samples with other advantages: packed once: $(cat "$T/err")"
one "$T/third.zst" 1 's/"advantages":1}/"advantages":-0.5}/'
grpo-pack -T 16 --flush -o "$s/batches" "$T/third.zst" 2> "$T/err"
st=$?
grep -q "third.zst: its 3 sequences are those of step_0/rank_0/g.zst, packed into step 1; nothing published" "$T/err"
is "$st:$?:$(published "$s/batches")" "1:0:110 111 120 " "and scored a third time, given by name: refused: $(cat "$T/err")"
