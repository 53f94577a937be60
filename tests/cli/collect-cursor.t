#!/bin/sh
# grpo-collect --server --cursor, exactly once across kills and re-runs
# (issues 10 and 17): the collector is stopped at every one of its file
# system calls (GRPO_FSYS_CRASH_AT, as kill -9 would, and with
# GRPO_FSYS_CRASH_SIGNAL as kill -TERM would) and while its requests are in
# flight, then run again; every prompt is published exactly once and the
# cursor walks on. The fake server answers a prompt's k-th request under the
# id "cmpl-HASH-k", so a prompt sampled twice shows as two groups.
. "$GRPO_TOP/tests/cli/lib.sh"
command -v python3 > /dev/null || skip_all "no python3 to run the fake server"
plan 21

S="$T/server"
fake_server "$S"

# six prompts; a run takes three, so two runs walk the file once
for i in 1 2 3 4 5 6; do printf '{"prompt":"p%d","answer":"%d"}\n' $i $i; done > "$T/p.jsonl"
visible() { find "$1" -name '*.zst' 2> /dev/null | grep -v '/\.' | sort; }
# how many trajectories of each prompt (by its answer) were published: 2 each, once
per_prompt() {
	visible "$1" | while IFS= read -r f; do grpo-cat --json "$f"; done | grep -o '"answer":"[0-9]*"' | sort | uniq -c |
		awk '{ printf "%s%s", s, $1; s = " " }'
}
posts() { grep -c '"path": "/v1/completions"' "$S/log"; }
collect() { # collect DIR [ENV...]: one run of the job into DIR (its queue and cursor)
	d=$1
	shift
	env "$@" grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$d/cursor" -m 1 \
		-o "$d/rollouts"
}
want="2 2 2 2 2 2"

# the calls of the first run (no cursor, no queue yet) and of the second,
# with -m 1: a file a group
rm -rf "$T/c" && mkdir "$T/c"
calls1=$(collect "$T/c" GRPO_FSYS_TRACE=1 2>&1 | grep -c '^fsys')
calls=$(collect "$T/c" GRPO_FSYS_TRACE=1 2>&1 | grep -c '^fsys')
is "$(per_prompt "$T/c"):$(cat "$T/c/cursor")" "$want:6" "two runs: each prompt once, the cursor at place 6 (row 0 of the second pass)"

# run N (1 or 2) stopped at call k, then the same command again until the
# file is walked once (the cursor at place 6, row 0; a run stopped after its
# last rename had finished)
trial() { # trial N K [ENV...]: prints what went wrong, nothing when all is well
	first=$1 k=$2
	shift 2
	rm -rf "$T/q" && mkdir "$T/q"
	[ "$first" = 1 ] || collect "$T/q" 2> "$T/err" || { echo "first run: $(cat "$T/err")"; return; }
	collect "$T/q" GRPO_FSYS_CRASH_AT="$k" "$@" 2> /dev/null
	st=$?
	st2=0 runs=0
	: > "$T/err"
	while [ "$(cat "$T/q/cursor" 2> /dev/null)" != 6 ] && [ $runs -lt 3 ]; do
		collect "$T/q" 2> "$T/err" || st2=$?
		runs=$((runs + 1))
	done
	got=$(per_prompt "$T/q")
	[ "$st" = "${crashed:-86}" ] && [ "$st2" = 0 ] && [ "$got" = "$want" ] && [ "$(cat "$T/q/cursor")" = 6 ] ||
		echo "run $first, call $k: status $st, re-runs $st2 ($(cat "$T/err")), trajectories per prompt '$got', cursor $(head -n 1 "$T/q/cursor")"
}
: > "$T/bad"
k=1
while [ $k -le "$calls1" ]; do trial 1 $k >> "$T/bad"; k=$((k + 1)); done
is "$(cat "$T/bad")" "" "the first run stopped at each of its $calls1 calls, then the same command: every prompt published once"
: > "$T/bad"
k=1
while [ $k -le "$calls" ]; do trial 2 $k >> "$T/bad"; k=$((k + 1)); done
is "$(cat "$T/bad")" "" "the second run stopped at each of its $calls calls, then the same command: every prompt published once"

: > "$T/bad" && : > "$T/left"
crashed=143
k=1
while [ $k -le "$calls" ]; do
	trial 2 $k GRPO_FSYS_CRASH_SIGNAL=15 >> "$T/bad"
	find "$T/q" -name '.*' ! -name .tmp ! -path "$T/q/rollouts/.lock" >> "$T/left"   # the queue's lock stays
	ls -A "$T/q/rollouts/.tmp" 2> /dev/null >> "$T/left"
	k=$((k + 1))
done
crashed=
is "$(cat "$T/bad")" "" "SIGTERM at each of the $calls calls, then the same command: every prompt published once"
is "$(cat "$T/left")" "" "and a terminated run leaves no temporary behind, beside the cursor or in the queue"

# a crash after the answers were kept: the re-run publishes them, asking nothing
rm -rf "$T/q" && mkdir "$T/q"
collect "$T/q"
collect "$T/q" GRPO_FSYS_CRASH_AT=$((calls - 6)) 2> /dev/null
n0=$(posts)
head -n 1 "$T/q/cursor" > "$T/row"
is "$(cat "$T/row"):$(sed -n 2p "$T/q/cursor" | grep -o '"from":3,"prompts":3,"next":6')" '3:"from":3,"prompts":3,"next":6' \
	"killed after keeping its answers: the cursor holds its row and the batch of places 3 to 5, the next 6"
env grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/q/cursor" -m 2 \
	-o "$T/q/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-collect: $T/q/cursor holds 3 prompts from place 3, sampled at policy version 0 for $T/q/rollouts (rank 0, --max-groups 1) and perhaps published in part: publishing them elsewhere would publish some twice; run the command that sampled them again to finish them" \
	"another command (another -m) against the kept batch refuses, saying what the cursor holds"
env grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/q/cursor" -m 1 \
	-o "$T/other/rollouts" 2> /dev/null
is "$?:$(visible "$T/other" | wc -l | tr -d ' ')" "1:0" "and so does another queue, publishing nothing"
collect "$T/q" 2> "$T/err"
is "$?:$(cat "$T/err"):$(($(posts) - n0)):$(per_prompt "$T/q"):$(cat "$T/q/cursor")" "0::0:$want:6" \
	"the same command publishes the kept answers, asking the server nothing, and the cursor moves on"

# kill -9 while the requests are in flight: nothing kept, the re-run asks again
rm -rf "$T/q" && mkdir "$T/q"
collect "$T/q"
# p5's answer is held until the run is killed: in flight however slow the machine
echo "{\"release\": \"$T/go5\", \"plans\": {\"p5\": [\"slow\", \"ok\"]}}" > "$S/script.json"
env grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/q/cursor" -m 1 \
	-o "$T/q/rollouts" 2> /dev/null &
pid=$!
asked() { [ "$(grep -c "\"prompt\": \"$1\"" "$S/log")" -gt "$2" ]; } # asked PROMPT N: more than N requests for it
wait_for 120 asked p5 0
kill -9 $pid
{ wait $pid; } 2> /dev/null
st=$?
touch "$T/go5"
echo '{}' > "$S/script.json"
is "$st:$(cat "$T/q/cursor")" "137:3" "killed in flight: the cursor still at row 3"
collect "$T/q" 2> "$T/err"
is "$?:$(cat "$T/err"):$(per_prompt "$T/q"):$(cat "$T/q/cursor")" "0::$want:6" "the re-run samples them: each prompt once"

# two runs on one cursor at once: the second is turned away at once (75),
# naming the first, which publishes its prompts once
rm -rf "$T/q" && mkdir "$T/q"
# the first's request for p2 is held until the second has been turned away
echo "{\"release\": \"$T/go2\", \"plans\": {\"p2\": [\"slow\"]}}" > "$S/script.json"
n0=$(grep -c '"prompt": "p2"' "$S/log")
env grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/q/cursor" -m 1 \
	-o "$T/q/rollouts" 2> /dev/null &
pid=$!
wait_for 120 asked p2 "$n0"
collect "$T/q" 2> "$T/err"
is "$?:$(cat "$T/err"):$(visible "$T/q" | wc -l | tr -d ' ')" \
	"75:grpo-collect: $T/q/cursor: another grpo-collect (pid $pid) is running with this cursor (it holds $T/q/cursor.lock): nothing done; try again later:0" \
	"a second run on a cursor in use is turned away (exit 75), naming the first's pid"
touch "$T/go2"
wait $pid
st=$?
echo '{}' > "$S/script.json"
collect "$T/q" 2> "$T/err"
is "$st:$?:$(cat "$T/err"):$(per_prompt "$T/q"):$(cat "$T/q/cursor")" "0:0::$want:6" \
	"the first publishes its prompts, the next run the rest: each prompt once"

# standard output: a killed run's kept answers go to standard output again
# (killed at the first file system call after the cursor kept them)
k=0 kept=0
while [ "$kept" = 0 ] && [ $k -lt 40 ]; do
	k=$((k + 1))
	rm -f "$T/o.cursor"
	GRPO_FSYS_CRASH_AT=$k grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 2 \
		--cursor "$T/o.cursor" > "$T/o1.zst" 2> /dev/null
	kept=$(sed -n 2p "$T/o.cursor" 2> /dev/null | grep -c '"sampled"')
done
grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 2 --cursor "$T/o.cursor" > "$T/o2.zst"
is "$kept:$?:$(cat "$T/o.cursor"):$(grpo-cat --json "$T/o2.zst" | grep -c '"group_id":"cmpl-')" "1:0:2:2" \
	"to standard output: the kept answers are written, the cursor moves on"
touch "$T/.o.cursor.tmp.deadhost.99999.1"   # what a run killed while writing the cursor leaves
grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 2 --cursor "$T/o.cursor" -o "$T/o/rollouts" 2> /dev/null
is "$?" 0 "and the next run goes on from there"
is "$(ls -a "$T" | grep -c '^\.o\.cursor\.tmp\.')" 0 "removing the cursor temporary a killed run left"

# a cursor that is not one
echo "row 3" > "$T/bad.cursor"
grpo-collect --server "$URL" --prompts "$T/p.jsonl" --cursor "$T/bad.cursor" -o "$T/x/rollouts" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/bad.cursor:1: expected the next place in the prompts, a number, not 'row 3'" \
	"a cursor that holds no row number is named, with its line"
printf '3\n{"sampled": {"from": 3, "prompts": 3, "next": 0, "policy_version": 0, "output": null, "rank": 0, "max_groups": 256, "answers": 2}}\n{}\n' \
	> "$T/cut.cursor"
grpo-collect --server "$URL" --prompts "$T/p.jsonl" --cursor "$T/cut.cursor" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-collect: $T/cut.cursor: the sampled batch counts 2 answers, but 1 line follows it: the file was changed by hand, or not written as grpo-collect writes it (whole, by rename)" \
	"a batch that lacks answers is refused"

# The cursor is rewritten by a rename, which would replace a link with a file
# (the file it names no longer walked) and a pipe or device with one (as
# root, --cursor /dev/null would take the machine's /dev/null): refused.
mkfifo "$T/fifo.cursor"
echo 0 > "$T/real.cursor" && ln -s real.cursor "$T/link.cursor"
for c in fifo link; do
	grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/$c.cursor" -o "$T/$c/rollouts" \
		2> "$T/err"
	is "$?:$([ -p "$T/fifo.cursor" ] && [ -L "$T/link.cursor" ] && echo kept):$(ls "$T/$c" 2> /dev/null | wc -l | tr -d ' ')" \
		"1:kept:0" "a cursor that is a $c is refused and left as it is, nothing sampled: $(cat "$T/err")"
done

# a full disk at the lock's first write (the holder's pid, which a second
# run names when it finds the lock held): said, exit 75, nothing asked or
# published; the next run collects
mkdir -p "$T/t" "$T/f"
GRPO_FSYS_TRACE=1 grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/t/cursor" \
	-o "$T/t/rollouts" 2> "$T/err"
n=$(grep '^fsys [0-9]' "$T/err" | awk '$3 == "try_lock" { l = 1 } l && $3 == "write" { print $2; exit }')
before=$(posts)
GRPO_FSYS_FAIL_AT=$n grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/f/cursor" \
	-o "$T/f/rollouts" 2> "$T/err"
st=$?
asked=$(($(posts) - before))
grpo-collect --server "$URL" --prompts "$T/p.jsonl" -n 2 --count 3 --cursor "$T/f/cursor" -o "$T/f/rollouts"
is "$st:$asked:$(cat "$T/err"):$?:$(per_prompt "$T/f")" \
	"75:0:grpo-collect: $T/f/cursor.lock: write failed: No space left on device:0:2 2 2" \
	"a full disk writing the lock's pid: said, exit 75, nothing asked; the next run collects"
exit $_failed
