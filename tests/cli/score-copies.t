#!/bin/sh
# grpo-score -o knows the inputs it scored into its output queue by their
# trajectories (OUT/.scored/HASH), so that a copy of one (another name,
# another step, standard input, restored from an archive) is not sent to a
# paid judge again, nor published a second time for grpo-pack to drop; a
# re-run finds its own record; a crash at any file system call loses no
# output and leaves each input scored once.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
plan 31
cd "$T"

{ rollout_group 1 '[820,220,16,23]' '[820,220,16,22]'; rollout_group 2 '[5]' '[6]'; } > in.jsonl
grpo-cat --from-json -o a.zst in.jsonl || exit 1
cp a.zst b.zst
# the same tokens sampled apart: other sequence ids
sed 's/"sequence_id":1\([0-9][0-9]\)/"sequence_id":7\1/g' in.jsonl | grpo-cat --from-json -o other.zst || exit 1
# the judge counts its calls
cat > judge.sh <<'EOF2'
while IFS= read -r line; do echo x >> "$CALLS"; echo '{"rewards": {"judge": 1}}'; done
EOF2
export CALLS="$T/calls"
calls() { [ -f "$CALLS" ] && wc -l < "$CALLS" | tr -d ' ' || echo 0; }
score() { grpo-score -t "$TOK" -c 'sh judge.sh' "$@"; }
outs() { find out -path '*/rank_*/*' ! -path '*/.*' -type f | sort; }

score -o out a.zst 2> err
ok $? "a file scored: $(cat err)"
first=$(outs)
is "$(calls)" 4 "its four sequences judged"
rec=$(ls out/.scored)
is "$(cat out/.scored/$rec)" "${first#out/}" "out/.scored/HASH names the output"
is "$(outs | wc -l)" 1 "one output"

score -o out b.zst 2> err
ok $? "a copy under another name: exit 0"
is "$(calls)" 4 "not judged again"
is "$(outs)" "$first" "nothing published for it"
is "$(cat err)" "grpo-score: b.zst: warning: its 4 sequences were scored before, into $first (recorded in out/.scored/$rec); not scored again" \
	"the warning names the output and the record"

score -o out a.zst 2> err
ok $? "a re-run of the same file: exit 0"
is "$(calls):$(cat err)" "4:" "not judged again, and silent"
score -v -o out a.zst 2> err
is "$(grep -c 'already published (a re-run); a.zst not scored again' err)" 1 "with -v it says so"

score -o out other.zst 2> err
ok $? "the same tokens under other sequence ids are scored"
is "$(calls):$(outs | wc -l)" "8:2" "judged and published"

# in a queue, in two other steps and ranks; and a record lost (a crash
# before it was written): the file is judged again and its copy dropped
mkdir -p roll/step_3/rank_0 roll/step_5/rank_1
cp a.zst roll/step_3/rank_0/x.zst
cp a.zst roll/step_5/rank_1/y.zst
score -o out roll 2> err
ok $? "copies in a queue: exit 0"
is "$(calls)" 8 "neither judged"
is "$(ls roll/step_3/rank_0/.done roll/step_5/rank_1/.done | grep -c zst)" 2 "both retired"
is "$(grep -c 'warning: its 4 sequences were scored before' err)" 2 "each with its warning"
is "$(outs | wc -l)" 2 "nothing published for them"

score -o out < a.zst 2> err
ok $? "a copy on standard input: exit 0"
is "$(calls):$(outs | wc -l)" 12:2 "judged as its groups came, not published again"
grep -q "grpo-score: <stdin>: warning: its 4 sequences were scored before, into $first (recorded in out/.scored/$rec); not published again" err
ok $? "the warning says so: $(cat err)"

# without -o nothing is recorded, and nothing is known
score a.zst > so.zst 2> err
ok $? "to standard output a scored file is scored again"
is "$(calls)" 16 "judged"

# a record that is not one
printf 'step_0/rank_0/x.zst' > out/.scored/$rec
score -o out b.zst 2> err
is $? 1 "a record without its newline is an error"
is "$(cat err)" "grpo-score: out/.scored/$rec: not a record of a scored file (one line naming it); remove it to score its input again" \
	"naming it"
rm out/.scored/$rec
score -o out b.zst 2> err
ok $? "removed, the copy is scored again"
is "$(calls):$(outs | wc -l)" "20:3" "judged, and published under its own name"

# two scorers of one queue take two copies at once: the second waits while
# the first judges (holding out2/.scored/HASH.lock), then finds its record
cat > slow.sh <<'EOF2'
touch judging
while [ ! -e go ]; do sleep 0.05; done
exec sh judge.sh
EOF2
rm -f "$CALLS"
(exec grpo-score -t "$TOK" -c 'sh slow.sh' -o out2 a.zst 2> err1) &
first_pid=$!
i=0
while [ ! -e judging ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
(exec grpo-score -v -t "$TOK" -c 'sh slow.sh' -o out2 b.zst 2> err2) &
second_pid=$!
# until the second holds the lock file open (waiting on it), or gives up
i=0
while ! ls -l /proc/$second_pid/fd 2> /dev/null | grep -q '\.lock$' && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
touch go
wait $first_pid
st1=$?
wait $second_pid
is "$st1:$?:$(calls):$(find out2 -path '*/rank_*/*' ! -path '*/.*' -type f | wc -l):$(ls out2/.scored)" \
	"0:0:4:1:$rec" "two copies scored at once: judged once, one output, one record, no lock left"
is "$(grep -c 'b.zst: waiting for another scorer of out2, judging a copy of it' err2)" 1 "the second waited (-v says so)"
is "$(grep -c 'warning: its 4 sequences were scored before' err2)" 1 "and then found the copy scored"

# killed at each file system call of a first scoring, then run again: one
# output, one record, and a judge called again only where the run died
# before the record was written; the judging's lock gone with the record
n=$(GRPO_FSYS_TRACE=1 grpo-score -t "$TOK" -c 'sh judge.sh' -o crash0 a.zst 2>&1 | grep -c '^fsys ')
bad=
k=1
while [ $k -le "$n" ]; do
	rm -rf crash "$CALLS"
	GRPO_FSYS_CRASH_AT=$k score -o crash a.zst 2>/dev/null
	before=$(calls)
	known=$(ls crash/.scored 2>/dev/null | grep -v '\.lock$')   # a record, not the judging's lock
	score -o crash a.zst 2>/dev/null || bad="$bad $k:rerun"
	got=$(find crash -path '*/rank_*/*' ! -path '*/.*' -type f | wc -l):$(ls crash/.scored | wc -l)
	[ "$got" = 1:1 ] || bad="$bad $k:$got"
	[ -n "$known" ] && [ "$(calls)" -gt "$before" ] && bad="$bad $k:judged-again"
	k=$((k + 1))
done
is "$n:$bad" "$n:" "killed at each of $n file system calls, a re-run leaves one output and its record"
