#!/bin/sh
# grpo-pack's plain inputs (files, standard input) each packed once: the
# same trajectories named twice in one run (a file twice, a glob overlap, a
# copy), or a file packed before by another job of the queue (a cron job
# over a growing glob of files), were packed, and trained, twice: a job was
# known only as a whole. Now each input's trajectories are recorded in the
# manifest (job.inputs_data), and such a run is refused, publishing nothing.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 29

d="$GRPO_TOP/tests/cli/pack"
# three inputs of 3 sequences each, with distinct trajectories
grpo-cat --from-json -o "$T/a.zst" "$d/tiny.jsonl" || exit 1
sed 's/\[9,9\]/[9,2]/' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/b.zst" || exit 1
sed 's/\[9,9\]/[9,3]/' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/c.zst" || exit 1
cp "$T/a.zst" "$T/copy.zst"
steps() { ls "$1" 2> /dev/null | tr '\n' ' '; }

# 1. one run naming the same trajectories twice: refused, naming both
grpo-pack -T 16 -o "$T/q1" "$T/a.zst" "$T/b.zst" "$T/a.zst" 2> "$T/err"
is "$?:$(steps "$T/q1")" "1:" "a file named twice (a glob overlap): exit 1, nothing published"
grep -q "$T/a.zst (input 1) and $T/a.zst (input 3) hold the same 3 sequences" "$T/err"
is "$?" 0 "naming both: $(cat "$T/err")"
grep -q "nothing published: packing both would train them twice" "$T/err"
is "$?" 0 "saying why"
grpo-pack -T 16 -o "$T/q1" "$T/a.zst" "$T/copy.zst" 2> "$T/err"
is "$?:$(steps "$T/q1")" "1:" "a file and its copy: exit 1, nothing published"
grep -q "$T/a.zst (input 1) and $T/copy.zst (input 2) hold the same 3 sequences" "$T/err"
is "$?" 0 "naming both: $(cat "$T/err")"
grpo-pack -T 16 -o "$T/q1" "$T/b.zst" - < "$T/b.zst" 2> "$T/err"
st=$?
grep -q "$T/b.zst (input 1) and <stdin> (input 2) hold the same" "$T/err"
is "$st:$?:$(steps "$T/q1")" "1:0:" "standard input is one input like a file: $(cat "$T/err")"
grpo-pack -T 16 "$T/a.zst" "$T/a.zst" > "$T/out" 2> "$T/err"
st=$?
grep -q "^grpo-pack: $T/a.zst (input 1) and $T/a.zst (input 2) hold the same 3 sequences" "$T/err"
is "$st:$?:$(wc -c < "$T/out" | tr -d ' ')" "1:0:0" "to standard output too: exit 1, nothing written: $(cat "$T/err")"
grpo-pack -T 16 -o "$T/q1" "$T/a.zst" "$T/b.zst"
is "$?:$(steps "$T/q1")" "0:step_1 " "each named once: published"

# 2. a file packed before alone, then among other files: refused, naming
# the file and the step that holds it; the new file alone is packed
grpo-pack -T 16 -o "$T/q2" "$T/a.zst" || exit 1
grpo-pack -T 16 -o "$T/q2" "$T/a.zst" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$T/q2")" "1:step_1 " "a file packed before, then among others: exit 1, nothing published"
grep -q "$T/a.zst: step 1 holds its 3 sequences already (job [0-9a-f]*); nothing published: packing it again would train it twice" "$T/err"
is "$?" 0 "naming the file and the step: $(cat "$T/err")"
grpo-pack -T 16 -o "$T/q2" "$T/b.zst" && grpo-pack -T 16 -o "$T/q2" "$T/a.zst" 2> "$T/err"
is "$?:$(steps "$T/q2"):$(cat "$T/err")" "0:step_1 step_2 :" "the new file alone is published; the first job re-run publishes nothing"
grpo-pack -T 16 -o "$T/q2" "$T/c.zst" - < "$T/b.zst" 2> "$T/err"
st=$?
grep -q "<stdin>: step 2 holds its 3 sequences already" "$T/err"
is "$st:$?:$(steps "$T/q2")" "1:0:step_1 step_2 " "standard input packed before as a file: refused: $(cat "$T/err")"

# 3. files packed before together, one of them again: refused, naming the
# steps of that job; the job re-run publishes nothing
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/a.zst" "$T/b.zst" || exit 1
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$T/q3")" "1:step_1 step_2 step_3 " "a file packed before among others, then alone: exit 1, nothing published"
grep -q "$T/b.zst: steps 1 to 3 hold its 3 sequences already" "$T/err"
is "$?" 0 "naming the steps of that job: $(cat "$T/err")"
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/c.zst" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$T/q3")" "1:step_1 step_2 step_3 " "and beside a new file: exit 1"
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/a.zst" "$T/b.zst" 2> "$T/err"
is "$?:$(steps "$T/q3"):$(cat "$T/err")" "0:step_1 step_2 step_3 :" "the same job re-run: exit 0, nothing published"
grpo-pack -T 16 -W 2 -o "$T/q3" "$T/a.zst" "$T/b.zst" 2> "$T/err"
st=$?
grep -q "steps 1 to 3 hold these 6 sequences already, packed with other options" "$T/err"
is "$st:$?:$(steps "$T/q3")" "1:0:step_1 step_2 step_3 " "the same job with other options: refused as before"
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/a.zst" "$T/b.zst" "$T/c.zst" 2> "$T/err"
st=$?
grep -q "$T/a.zst: steps 1 to 3 hold its 3 sequences already (job [0-9a-f]*); nothing published: packing it again would train it twice (so would 1 more of these inputs)$" "$T/err"
is "$st:$?:$(steps "$T/q3")" "1:0:step_1 step_2 step_3 " "that job's two files and a new one: refused, naming the first, counting the other: $(cat "$T/err")"

# 4. the file was packed with other options before, alone: refused, as
# packed before among other files
grpo-pack -T 16 -W 2 -o "$T/q3" "$T/c.zst" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "$T/a.zst: steps 1 to 3 hold its 3 sequences already" "$T/err"
is "$st:$?:$(steps "$T/q3")" "1:0:step_1 step_2 step_3 " "a file of that job beside a new one, other options: refused"

# 5. a manifest from before job.inputs_data: its job of one input is known
# by its data, the hash of that input's trajectories
grpo-pack -T 16 -o "$T/q5" "$T/a.zst" || exit 1
grep -q '"inputs_data":\["[0-9a-f]\{16\}"\]' "$T/q5/step_1/DONE"
is "$?" 0 "the manifest records its one input's data"
sed 's/,"inputs_data":\[[^]]*\]//; s/,"inputs_hash":\[[^]]*\],"done"/,"done"/' "$T/q5/step_1/DONE" > "$T/DONE" && mv "$T/DONE" "$T/q5/step_1/DONE"
grpo-pack -T 16 -o "$T/q5" "$T/b.zst" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "$T/a.zst: step 1 holds its 3 sequences already" "$T/err"
is "$st:$?:$(steps "$T/q5")" "1:0:step_1 " "its input among others: refused, nothing published"
grpo-pack -T 16 -o "$T/q5" "$T/a.zst" 2> "$T/err"
is "$?:$(steps "$T/q5"):$(cat "$T/err")" "0:step_1 :" "its job re-run: exit 0, nothing published"

sed -n 2p "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/one.zst" || exit 1
grpo-pack -T 16 -o "$T/q1" "$T/one.zst" "$T/one.zst" 2> "$T/err"
grep -q "hold the same 1 sequence; nothing published: packing both would train it twice" "$T/err"
is "$?" 0 "a file of one sequence named twice: said of one: $(cat "$T/err")"

# 6. inputs alike but for their prompts, or their runs' names, are not the
# same trajectories: packed together. The hash of an input's trajectories
# is kept in manifests, and a later version must find the same for the same
# file, or it would pack again what an older one packed: it is pinned here
# (little-endian: the hash is of the values' bytes).
d6='s/"advantages":1}/"advantages":1,"run":"x"}/'
sed "$d6" "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/x.zst" || exit 1
sed "$d6" "$d/tiny.jsonl" | sed 's/"run":"x"/"run":"y"/' | grpo-cat --from-json -o "$T/y.zst" || exit 1
sed 's/"prompt_tokens":\[1,2,3\]/"prompt_tokens":[1,2,4]/' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/p.zst" || exit 1
grpo-pack -T 16 -o "$T/q6" "$T/a.zst" "$T/p.zst" 2> "$T/err"
is "$?:$(steps "$T/q6")" "0:step_1 " "two inputs that differ in a prompt only: both packed: $(cat "$T/err")"
grpo-pack -T 16 -o "$T/q6" "$T/x.zst" "$T/y.zst" 2> "$T/err"
is "$?:$(steps "$T/q6")" "0:step_1 step_2 " "two that differ in their runs' names only: both packed: $(cat "$T/err")"
is "$(grep -o '"inputs_data":\[[^]]*\]' "$T/q6/step_1/DONE" "$T/q6/step_2/DONE" | sed 's/.*://' | tr '\n' ' ')" \
	'["42ed76ed66ea2e88","00ba9c28840c8e17"] ["2155a8018e5dabb0","1a27451651490045"] ' "each input's hash, as manifests keep it, is what it was"

# 7. a manifest before the newest that cannot be read: its job is not
# known, so the run is refused (packed, a file of that job would be
# trained twice), naming the manifest
grpo-pack -T 16 -o "$T/q7" "$T/a.zst" && grpo-pack -T 16 -o "$T/q7" "$T/b.zst" || exit 1
echo '{' > "$T/q7/step_1/DONE"
grpo-pack -T 16 -o "$T/q7" "$T/a.zst" 2> "$T/err"
st=$?
grep -q "$T/q7/step_1/DONE" "$T/err"
is "$st:$?:$(steps "$T/q7")" "1:0:step_1 step_2 " "an older manifest damaged: refused, naming it: $(cat "$T/err")"

# every sequence once: the queues above hold each sequence id once per input
n=$(cat "$T"/q2/step_*/rank_*/*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | wc -l | tr -d ' ')
is "$n" 6 "q2 holds the 6 sequences of a and b, each once"

# 8. a job re-run whose steps the newest manifest holds: -v says from which
# step, the job's first, not the queue's
grpo-pack -T 16 -o "$T/q8" "$T/a.zst" && grpo-pack -T 16 -o "$T/q8" "$T/b.zst" || exit 1
grpo-pack -v -T 16 -o "$T/q8" "$T/b.zst" 2> "$T/err"
st=$?
grep -q "is published already (job [0-9a-f]\{16\}, from step 2); nothing of it is packed again" "$T/err"
is "$st:$?:$(steps "$T/q8")" "0:0:step_1 step_2 " "the newest step's job re-run: exit 0, nothing published, -v naming its step"
