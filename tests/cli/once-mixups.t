#!/bin/sh
# Exactly once against an operator's mix-ups: a stage whose output queue
# is its input queue (named the same or another way), and plain files
# packed again into a queue that holds them already.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 20

d="$GRPO_TOP/tests/cli/pack"
# unscored rollouts of tiny.jsonl
sed 's/,"ref_logprobs":\[[^]]*\]//g; s/,"advantages":[-0-9.]*//g' "$d/tiny.jsonl" > "$T/r.jsonl"

# 1. -o naming the input queue, through a link: the scored file took the
# input's name, was dropped as published already, and the input was
# retired: consumed, nothing scored anywhere. Refused, nothing consumed.
mkdir -p "$T/s/rollouts/step_0/rank_0"
grpo-cat --from-json -o "$T/s/rollouts/step_0/rank_0/g1.zst" "$T/r.jsonl"
ln -s "$T/s/rollouts" "$T/link"
grpo-score --reward length --max-len 8 --ref none -o "$T/link" "$T/s/rollouts" > /dev/null 2> "$T/err"
is "$?:$(ls -A "$T/s/rollouts/step_0/rank_0" | tr '\n' ' ')" "2:g1.zst " \
	"grpo-score -o the input queue through a link: usage error, the input still waiting"
grep -q "s/rollouts: the input queue is the output queue (-o $T/link)" "$T/err"
is "$?" 0 "saying so: $(head -n 1 "$T/err")"

# 2. grpo-pack likewise, the queue named relative and absolute
mkdir -p "$T/p/scored/step_0/rank_0"
grpo-cat --from-json -o "$T/p/scored/step_0/rank_0/g1.zst" "$d/tiny.jsonl"
(cd "$T/p" && grpo-pack -T 16 -o scored/ "$T/p/scored") > /dev/null 2> "$T/err"
is "$?:$(ls "$T/p/scored" | tr '\n' ' '):$(ls -A "$T/p/scored/step_0/rank_0" | tr '\n' ' ')" "2:step_0 :g1.zst " \
	"grpo-pack -o the input queue: usage error, nothing published into it, nothing claimed"
grep -q "the input queue is the output queue (-o scored/)" "$T/err"
is "$?" 0 "saying so: $(head -n 1 "$T/err")"

# 3. plain files: a.zst, then b.zst, then a.zst again. Only the newest
# manifest's job was known, so a was packed (and trained) twice. Now every
# manifest of the queue is read: the same command publishes nothing, and
# the same input with other options is refused, naming the steps.
grpo-cat --from-json -o "$T/a.zst" "$d/tiny.jsonl"
sed 's/\[9,9\]/[9,2]/' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/b.zst"
grpo-pack -T 16 -o "$T/q" "$T/a.zst" && grpo-pack -T 16 -o "$T/q" "$T/b.zst" &&
	grpo-pack -T 16 -o "$T/q" "$T/a.zst" 2> "$T/err"
is "$?:$(ls "$T/q" | tr '\n' ' ')" "0:step_1 step_2 " "a file packed again after another job: nothing published"
grpo-pack -T 16 -W 2 -o "$T/q" "$T/a.zst" 2> "$T/err"
is "$?:$(ls "$T/q" | tr '\n' ' ')" "1:step_1 step_2 " "and with other options (-W 2): refused, nothing published"
grep -q "step 1 holds these 3 sequences already, packed with other options" "$T/err"
is "$?" 0 "saying which step holds them: $(cat "$T/err")"
# a job of three steps, the newest: the steps named ran to the one before
grpo-pack -T 16 -b 2 -o "$T/q3" "$T/a.zst" "$T/b.zst" && grpo-pack -T 16 -o "$T/q3" "$T/a.zst" "$T/b.zst" 2> "$T/err"
st=$?
grep -q "steps 1 to 3 hold these 6 sequences already, packed with other options" "$T/err"
is "$st:$?:$(ls "$T/q3" | tr '\n' ' ')" "1:0:step_1 step_2 step_3 " "a job of steps 1 to 3, other options: refused, naming all three: $(cat "$T/err")"

# 4. a micro-batch of step 1 put by hand in place of one of step 2: the
# step's totals agree (the same sequences sampled by the next policy), so
# step 2 trained on step 1's data. Refused, naming the file; nothing trained.
grpo-init --preset tiny --seed 7 -o "$T/model" > /dev/null || exit 1
sed 's/"policy_version":[0-9]/"policy_version":1/g' "$d/tiny.jsonl" | grpo-cat --from-json -o "$T/v1.zst"
grpo-pack -T 16 -o "$T/m/batches" "$T/a.zst" && grpo-pack -T 16 -o "$T/m/batches" "$T/v1.zst" &&
	grpo-step --model "$T/model" --batches "$T/m/batches" -o "$T/m/policy" 2> /dev/null
cp "$T/m/batches/step_1/rank_0/mb_0000.zst" "$T/m/mb.zst"
mv -f "$T/m/mb.zst" "$T/m/batches/step_2/rank_0/mb_0000.zst"
grpo-step --model "$T/model" --batches "$T/m/batches" -o "$T/m/policy" 2> "$T/err"
is "$?:$(ls "$T/m/policy" | tr '\n' ' ')" "1:step_0 step_1 " "a step-1 micro-batch in step 2: exit 1, step 2 not trained"
grep -q "step_2/rank_0/mb_0000.zst: record 1: a micro-batch that grpo-pack made for step 1, rank 0, found in step 2, rank 0" "$T/err"
is "$?" 0 "naming it: $(cat "$T/err")"

# 5. a file of a queue named as a plain input was read without a claim, so
# the run over its queue packed it again: two steps, trained twice. Refused
# before anything is read, however the file is named; the queue packs it once.
mkdir -p "$T/f/scored/step_0/rank_0"
cp "$T/a.zst" "$T/f/scored/step_0/rank_0/g.zst"
grpo-pack -T 16 -o "$T/f/batches" "$T/f/scored/step_0/rank_0/g.zst" 2> "$T/err"
is "$?:$(ls "$T/f" | tr '\n' ' ')" "2:scored " "grpo-pack on a file of the queue scored: usage error, nothing published"
grep -q "^grpo-pack: $T/f/scored/step_0/rank_0/g.zst: a file of the queue $T/f/scored, which a run over that queue would take again: name the queue ($T/f/scored)" "$T/err"
is "$?" 0 "naming the queue to give: $(head -n 1 "$T/err")"
(cd "$T/f/scored/step_0/rank_0" && grpo-pack -T 16 -o "$T/f/batches" g.zst 2> /dev/null)
st=$?
grpo-pack -T 16 --flush -o "$T/f/batches" "$T/f/scored"
is "$st:$(ls "$T/f/batches" | tr '\n' ' ')" "2:step_1 " "named from its own directory: refused too; the queue packs it in one step"

# without -o a stage writes standard output: a look at the file, which
# consumes nothing and leaves it waiting for the queue's run
mkdir -p "$T/l/scored/step_0/rank_0" && cp "$T/a.zst" "$T/l/scored/step_0/rank_0/g.zst"
n=$(grpo-pack -T 16 "$T/l/scored/step_0/rank_0/g.zst" | grpo-cat --stats --json | grep -o '"sequences":[0-9]*')
is "$n:$(ls "$T/l/scored/step_0/rank_0")" '"sequences":3:g.zst' \
	"grpo-pack on a queue's file to standard output: read, the file left waiting"

# grpo-score likewise: the file stayed waiting, scored again by the queue's run
mkdir -p "$T/r/rollouts/step_0/rank_0"
grpo-cat --from-json -o "$T/r/rollouts/step_0/rank_0/g.zst" "$T/r.jsonl"
ln -s "$T/r/rollouts/step_0/rank_0" "$T/rank"
grpo-score --reward length --max-len 8 --ref none -o "$T/r/scored" "$T/rank/g.zst" 2> "$T/err"
is "$?:$(ls "$T/r" | tr '\n' ' ')" "2:rollouts " "grpo-score on a file of the queue rollouts, through a link: usage error, nothing scored"
grep -q "g.zst: a file of the queue .*/r/rollouts, which a run over that queue would take again" "$T/err"
is "$?" 0 "saying so: $(head -n 1 "$T/err")"

# the way to run a stage on each file: grpo-spool consume hands it the claim
grpo-spool consume "$T/r/rollouts" -- grpo-score --reward length --max-len 8 --ref none -o "$T/r/scored" &&
	grpo-spool consume "$T/r/scored" -- grpo-pack -T 16 -o "$T/r/batches"
is "$?:$(ls "$T/r/rollouts/step_0/rank_0/.done"):$(ls "$T/r/scored/step_0/rank_0/.done"):$(ls "$T/r/batches")" \
	"0:g.zst:g.zst:step_1" \
	"under grpo-spool consume each stage reads the file it claimed, and consume retires it"

# a file moved out of its queue is a plain input
mkdir -p "$T/x/scored/step_0/rank_0"
cp "$T/a.zst" "$T/x/scored/step_0/rank_0/g.zst"
grpo-spool quarantine "$T/x/scored/step_0/rank_0/g.zst" > /dev/null &&
	grpo-pack -T 16 "$T/x/scored/.quarantine/step_0/rank_0/g.zst" | grpo-cat --stats > /dev/null
is "$?" 0 "a quarantined file is read as a plain input"

# 6. two --rank processes given different options (rank 1 --lr 1e-5): their
# gradients were summed, and each took its own optimizer step, rank 1's not
# the one rank 0 published. Both refuse, naming the rank; nothing published.
grpo-pack -T 16 -W 2 -o "$T/x2" "$T/a.zst" || exit 1
mkdir "$T/rp" && cp -r "$T/m/policy/step_0" "$T/rp/"
grpo-step --batches "$T/x2" -o "$T/rp" --rank 1 --lr 1e-5 --rank-timeout 60 2> "$T/err1" &
pid1=$!
grpo-step --batches "$T/x2" -o "$T/rp" --rank 0 --rank-timeout 60 2> "$T/err0"
s0=$?
wait $pid1
is "$s0:$?:$(ls "$T/rp" | tr '\n' ' ')" "1:1:step_0 " "--rank 0 and --rank 1 with another --lr: both exit 1, step 1 not published"
grep -q "e0.rank_1: rank 1's options differ from this rank's (options hash [0-9a-f]*, here [0-9a-f]*)" "$T/err0" &&
	grep -q "e0.rank_0: rank 0's options differ from this rank's" "$T/err1"
is "$?" 0 "each names the other rank: $(cat "$T/err0")"
