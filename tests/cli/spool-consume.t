#!/bin/sh
# grpo-spool consume: a mistyped queue is an error, never an empty queue nor
# (with --watch) a new directory; a Ctrl-C at the terminal stops grpo-spool
# after the command in hand, without killing the command; a single pass so
# stopped says it did not finish (exit 1), leaving the rest waiting.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 12

publish() {
	mkdir -p "$1/.tmp" "$1/step_$2/rank_$3" &&
	printf '%s\n' "$5" > "$1/.tmp/$4.$$" && mv "$1/.tmp/$4.$$" "$1/step_$2/rank_$3/$4"
}

S=$T/spool
publish "$S/scored" 0 0 a.zst a
grpo-spool consume "$S/socred" -- true 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $S/socred: no such queue" "a queue that does not exist is an error"
timeout 20 grpo-spool consume --watch "$T/spoool/scored" -- true 2> "$T/err"
is "$?:$(ls "$T" | grep -c spoool)" "1:0" "--watch does not create a mistyped spool: $(cat "$T/err")"
grpo-spool consume "$S/scored/step_0" -- true 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-spool: $S/scored/step_0: a step or rank directory, not a queue (consume QUEUE --from N --to N)" \
	"a step directory is not a queue"
grpo-spool consume "$S/scored/step_0/rank_0/a.zst" -- true 2> /dev/null
is "$?" 1 "nor is a file"
# signalled itself, not through timeout(1), which was once seen to die and leave it
# running, holding the TAP stream (so its output goes elsewhere, and a watchdog kills
# it if it outlives the TERM by far)
grpo-spool consume --watch "$S/rollouts" -- true > /dev/null 2>&1 &
pid=$!
( sleep 30; kill -KILL $pid ) > /dev/null 2>&1 &
dog=$!
wait_for 10 test -d "$S/rollouts"
is "$?" 0 "--watch of a queue not made yet in an existing spool creates it (consumers may start first)"
kill -TERM $pid; { wait $pid; } 2>/dev/null
kill $dog 2> /dev/null

# Ctrl-C at a terminal signals the whole foreground process group; setsid
# puts grpo-spool in a group of its own, as a shell's job control would.
setsid grpo-spool consume --watch "$S/scored" -- \
	sh -c 'touch "$1.started"; while [ ! -e "$1.go" ]; do sleep 0.05; done; echo finished > "$1.log"' \
	sh "$T/cmd" &
pid=$!
wait_for 10 test -e "$T/cmd.started"
env kill -s INT -- -"$pid"
touch "$T/cmd.go"
wait "$pid"
st=$?
is "$st:$(cat "$T/cmd.log" 2>/dev/null)" "0:finished" \
	"SIGINT to grpo-spool's process group: the command finishes, grpo-spool exits 0"
is "$(ls -A "$S/scored/step_0/rank_0/.done")" "a.zst" "and the file is retired, not left waiting"

# One pass (no --watch) stopped by SIGTERM, as from cron or timeout(1): the
# command in hand finishes and is retired, the rest waits, and the exit status
# must not say that the queue was consumed: 75, "later", as grpo-step stopped
# short of --steps says.
publish "$S/once" 0 0 a.zst a && publish "$S/once" 0 0 b.zst b
grpo-spool consume "$S/once" -- \
	sh -c 'touch "$0.started"; while [ ! -e "$0.go" ]; do sleep 0.05; done' "$T/once" 2> "$T/err" &
pid=$!
wait_for 10 test -e "$T/once.started"
kill -TERM $pid
touch "$T/once.go"
wait $pid
st=$?
is "$st:$(ls -A "$S/once/step_0/rank_0/.done")" "75:a.zst" \
	"one pass stopped by SIGTERM: the file in hand is retired, and it exits 75, not 0"
grep -q "stopped by SIGTERM" "$T/err"
is "$?" 0 "saying it was stopped: $(cat "$T/err")"

# grpo-spool(1) --rescan: a file whose command failed waits for the next
# rescan, with --poll too, and is not run again at every poll
publish "$S/fails" 0 0 a.zst a
grpo-spool consume "$S/fails" --poll 0.05 --rescan 1000 -v -- sh -c 'echo run >> "$0.log"; exit 3' "$T/fails" \
	2> "$T/err" &
pid=$!
scans() { [ "$(sed -n 's/.* \([0-9]*\) scans,.*/\1/p' "$T/err")" -ge 3 ] 2>/dev/null; }
wait_for 10 test -s "$T/fails.log" && sleep 0.5
kill -TERM $pid; wait $pid
is "$?:$(wc -l < "$T/fails.log" | tr -d ' '):$(scans && echo polled)" "1:1:polled" \
	"--poll: a failed file is not retried at every poll, only at --rescan ($(tail -n 1 "$T/err"))"
# the command is run without a shell (grpo-spool(1)): a queue whose path has
# a space, a quote and a leading '-' in a name reaches it as one argument
Q="$T/a b'c/-scored"
publish "$Q" 2 0 "x y.zst" q
grpo-spool consume "$Q" -- sh -c 'printf "%s|%s\n" "$#" "$1"' sh > "$T/args" 2> "$T/err"
is "$?:$(cat "$T/args")" "0:1|$Q/step_2/rank_0/x y.zst" "a path with a space and a quote arrives as one argument"

# Each retirement is flushed as it is made (its rank's .done directory):
# consume cannot know what its command published, so a retirement lost to a
# power cut would run the command on the file a second time. Failing each
# file system call in turn: the flush of each file's .done fails in one run,
# which says so and exits 1, the command having run once.
R=$T/flush && publish "$R/q" 0 0 a.zst a && publish "$R/q" 0 1 b.zst b && cp -r "$R" "$R.orig"
n=$(GRPO_FSYS_TRACE=1 grpo-spool consume "$R/q" -- true 2>&1 | grep -c '^fsys')
k=1 && : > "$T/flushes"
while [ $k -le "$n" ]; do
	rm -rf "$R" && cp -r "$R.orig" "$R"
	GRPO_FSYS_FAIL_AT=$k:EIO grpo-spool consume "$R/q" -- true 2> "$T/err"
	st=$?
	grep -o 'q/step_0/rank_[01]/.done: fsync failed' "$T/err" | sed "s/^/$st /" >> "$T/flushes"
	k=$((k + 1))
done
is "$(sort "$T/flushes" | uniq -c | awk '{ printf "%s %s %s;", $1, $2, $3 }')" \
	"1 1 q/step_0/rank_0/.done:;1 1 q/step_0/rank_1/.done:;" \
	"each retirement's .done flushed once, a failed flush an error (exit 1) naming it"
