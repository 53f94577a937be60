#!/bin/sh
# grpo-pack knows the plain inputs (files, standard input) it packed by the
# jobs its manifests record; grpo-spool gc removed old steps of batches,
# manifests and all, and with them what they knew: an input given again
# after gc was packed, and trained, again. Now gc first records the jobs of
# the steps it removes in QUEUE/.jobs, which grpo-pack reads as it reads the
# manifests: the input is known after gc, --archive or not, whatever crash
# came between the record and the removal, and a torn last line of .jobs
# costs only that line.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 19

d="$GRPO_TOP/tests/cli/pack"
# inputs of 3 sequences each, with distinct trajectories
grpo-cat --from-json -o "$T/a.zst" "$d/tiny.jsonl" || exit 1
for k in 2 3 4; do
	sed "s/\[9,9\]/[9,$k]/" "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/in$k.zst" || exit 1
done
mv "$T/in2.zst" "$T/b.zst" && mv "$T/in3.zst" "$T/c.zst" && mv "$T/in4.zst" "$T/e.zst"
steps() { ls "$1" 2> /dev/null | tr '\n' ' '; }
# what grpo-step does once it has trained a step: retire its micro-batches, so that gc may remove it
trained() { grpo-spool consume "$1/batches" -- true; }
gc() { grpo-spool gc "$@" --queue batches; }

# 1. the brief's scenario: a.zst in step 1, b.zst in step 2, step 1 gc'd; a.zst again publishes nothing
S=$T/s1
grpo-pack -T 16 -o "$S/batches" "$T/a.zst" && grpo-pack -T 16 -o "$S/batches" "$T/b.zst" || exit 1
trained "$S" && gc "$S" --keep-last 0 || exit 1
is "$(steps "$S/batches")" "step_2 " "gc --keep-last 0 removes step 1, keeps the newest with a DONE"
grpo-pack -v -T 16 -o "$S/batches" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "this input, with these options, is published already (job [0-9a-f]*, from step 1)" "$T/err"
is "$st:$?:$(steps "$S/batches")" "0:0:step_2 " "a.zst again after gc: exit 0, nothing published: $(cat "$T/err")"
grpo-pack -T 16 -o "$S/batches" "$T/c.zst" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "$T/a.zst: step 1 held its 3 sequences (job [0-9a-f]*; removed by grpo-spool gc, recorded in $S/batches/.jobs); nothing published: packing it again would train it twice" "$T/err"
is "$st:$?:$(steps "$S/batches")" "1:0:step_2 " "a.zst beside a new file after gc: refused, naming the step: $(cat "$T/err")"
grpo-pack -T 16 -W 2 -o "$S/batches" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "step 1 held these 3 sequences (removed by grpo-spool gc, recorded in $S/batches/.jobs), packed with other options" "$T/err"
is "$st:$?:$(steps "$S/batches")" "1:0:step_2 " "a.zst with other options after gc: refused: $(cat "$T/err")"
n=$(grep -c . "$S/batches/.jobs")
grep -q "^{\"step\":1,\"job\":{\"id\":\"[0-9a-f]\{16\}\",\"first_step\":1,\"sequences\":3,\"finished\":true,\"data\":\"[0-9a-f]\{16\}\",\"inputs_data\":\[\"[0-9a-f]\{16\}\"\],\"inputs_hash\":\[\"[0-9a-f]\{16\}\"\]}}$" "$S/batches/.jobs"
is "$?:$n" "0:1" "QUEUE/.jobs holds step 1's job, one line, as grpo-spool(5) shows it"

# 2. the same through gc --archive: the step goes into the archive, its job into .jobs too
S=$T/s2
grpo-pack -T 16 -o "$S/batches" "$T/a.zst" && grpo-pack -T 16 -o "$S/batches" "$T/b.zst" || exit 1
trained "$S" && gc "$S" --keep-last 0 --archive "$T/arch2" || exit 1
grpo-pack -T 16 -o "$S/batches" "$T/a.zst" 2> "$T/err"
is "$?:$(steps "$S/batches"):$(ls "$T/arch2"):$(cat "$T/err")" "0:step_2 :batches-step_1.tar.zst:" \
	"gc --archive: step 1 archived and removed; a.zst again: exit 0, nothing published"

# 3. a job of several inputs over steps 1 to 3, then another job, then gc: one of its inputs again is
# refused naming its steps; the same job re-run publishes nothing, as before gc
S=$T/s3
grpo-pack -T 16 -b 2 -o "$S/batches" "$T/a.zst" "$T/b.zst" && grpo-pack -T 16 -b 2 -o "$S/batches" "$T/c.zst" ||
	exit 1
is "$(steps "$S/batches")" "step_1 step_2 step_3 step_4 step_5 " "a job of two inputs in steps 1 to 3, another in 4 and 5"
trained "$S" && gc "$S" --keep-last 1 || exit 1
is "$(steps "$S/batches")" "step_5 " "gc --keep-last 1 leaves step 5"
grpo-pack -T 16 -b 2 -o "$S/batches" "$T/b.zst" 2> "$T/err"
st=$?
grep -q "$T/b.zst: steps 1 to 3 held its 3 sequences (job [0-9a-f]*; removed by grpo-spool gc, recorded in $S/batches/.jobs)" "$T/err"
is "$st:$?:$(steps "$S/batches")" "1:0:step_5 " "one input of that job again, after gc: refused: $(cat "$T/err")"
grpo-pack -T 16 -b 2 -o "$S/batches" "$T/e.zst" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$S/batches")" "1:step_5 " "and beside a new file: refused"
grpo-pack -T 16 -b 2 -o "$S/batches" "$T/a.zst" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$S/batches"):$(cat "$T/err")" "0:step_5 :" "the same job re-run after gc: exit 0, nothing published"
grpo-pack -T 16 -b 2 -o "$S/batches" "$T/c.zst" 2> "$T/err"
is "$?:$(steps "$S/batches"):$(cat "$T/err")" "0:step_5 :" "the job of the kept step re-run: exit 0, nothing published"
n=$(grep -c . "$S/batches/.jobs")
is "$n" 2 ".jobs: one line per job, not per step removed"

# 4. gc killed (GRPO_FSYS_CRASH_AT) or failing (GRPO_FSYS_FAIL_AT) at each of its file-system calls, the
# .jobs record written and the step not yet removed among them: what it leaves, a later gc and
# grpo-pack deal with: the step is gone, a.zst stays known, .jobs holds one line
base=$T/s4
grpo-pack -T 16 -o "$base/batches" "$T/a.zst" && grpo-pack -T 16 -o "$base/batches" "$T/b.zst" &&
	trained "$base" || exit 1
cp -R "$base" "$T/w" && GRPO_FSYS_TRACE=1 gc "$T/w" --keep-last 0 2> "$T/trace"
calls=$(grep -c "^fsys [0-9]" "$T/trace")
rename=$(grep "^fsys [0-9]" "$T/trace" | grep -n " rename$" | head -n 1 | cut -d: -f1)
for hook in GRPO_FSYS_CRASH_AT GRPO_FSYS_FAIL_AT; do
	bad=
	n=1
	while [ "$n" -le "$calls" ]; do
		rm -rf "$T/w" && cp -R "$base" "$T/w"
		env "$hook=$n" grpo-spool gc "$T/w" --keep-last 0 --queue batches > /dev/null 2>&1
		rc=$?
		wrong=
		grpo-pack -T 16 -o "$T/w/batches" "$T/a.zst" 2> "$T/err" && [ ! -s "$T/err" ] ||
			wrong="$wrong pack-before($(cat "$T/err"))"
		gc "$T/w" --keep-last 0 2> "$T/err" || wrong="$wrong gc-again($(cat "$T/err"))"
		grpo-pack -T 16 -o "$T/w/batches" "$T/a.zst" 2> "$T/err" && [ ! -s "$T/err" ] ||
			wrong="$wrong pack-after($(cat "$T/err"))"
		[ "$(steps "$T/w/batches"):$(grep -c . "$T/w/batches/.jobs")" = "step_2 :1" ] ||
			wrong="$wrong steps $(steps "$T/w/batches") .jobs $(grep -c . "$T/w/batches/.jobs")"
		[ -z "$wrong" ] || bad="$bad $n:$rc($wrong)"
		n=$((n + 1))
	done
	is "${rename:+found}:${bad:- none}" "found: none" \
		"gc with $hook at each of its $calls calls (.jobs renamed in at call $rename): then gc and a.zst as never failed"
done

# 5. .jobs torn in its last line (a copy cut short): that line is passed over, the rest read; the next gc
# writes the file whole again
S=$T/s5
for f in a b c; do grpo-pack -T 16 -o "$S/batches" "$T/$f.zst" || exit 1; done
trained "$S" && gc "$S" --keep-last 0 || exit 1
is "$(steps "$S/batches"):$(grep -c . "$S/batches/.jobs")" "step_3 :2" "steps 1 and 2 gc'd: .jobs holds their 2 jobs"
head -c -20 "$S/batches/.jobs" > "$T/jobs" && cp "$T/jobs" "$S/batches/.jobs"
grpo-pack -T 16 -o "$S/batches" "$T/a.zst" 2> "$T/err"
is "$?:$(steps "$S/batches"):$(cat "$T/err")" "0:step_3 :" "a torn last line: the lines before it still read (a.zst known)"
grpo-pack -T 16 -o "$S/batches" "$T/e.zst" && trained "$S" && gc "$S" --keep-last 0 || exit 1
is "$(tail -c 1 "$S/batches/.jobs" | od -An -c | tr -d ' '):$(grep -c '}}$' "$S/batches/.jobs")" '\n:2' \
	"the next gc writes .jobs whole: the torn line dropped, step 3's job added"
printf '{"step":9,"job":7}\n' >> "$S/batches/.jobs"
grpo-pack -T 16 -o "$S/batches" "$T/b.zst" 2> "$T/err"
st=$?
grep -q "^grpo-pack: $S/batches: $S/batches/.jobs: line 3: job" "$T/err"
is "$st:$?:$(steps "$S/batches")" "1:0:step_4 " "a damaged line, whole (it ends in a newline): exit 1, naming the file and line: $(cat "$T/err")"
