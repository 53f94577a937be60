#!/bin/sh
# grpo-spool: consumers under kill -9 (theirs and their command's), leases
# renewed past their length, --watch (inotify, overflow, --poll, a remote
# file system), SIGTERM and SIGINT, status, recover and gc --archive (read
# back by grpo-cat), on a fresh spool under $TMPDIR.
# Every wait is bounded (wait_for), so a hang fails instead of hanging.

. "$GRPO_TOP/tests/cli/lib.sh"   # $T, wait_for, watches_dir; the counting below is this test's own
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT
PIDS=
n=0
fails=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi; }
check() { desc=$1; shift; "$@" >/dev/null 2>&1; ok $? "$desc"; }
# publish QUEUE STEP RANK NAME TEXT: as lib/spool does it, by rename from .tmp.
publish() {
	mkdir -p "$1/.tmp" "$1/step_$2/rank_$3" &&
	printf '%s\n' "$5" > "$1/.tmp/$4.$$" && mv "$1/.tmp/$4.$$" "$1/step_$2/rank_$3/$4"
}
lines() { if [ -f "$1" ]; then wc -l < "$1" | tr -d ' '; else echo 0; fi; }
has_lines() { [ "$(lines "$1")" -ge "$2" ]; }
no_claims() { [ -z "$(find "$1" -path '*/.claimed/*' -type f)" ]; }

# Every consumer below appends "STEP/RANK/NAME" of each file to a log.
LOGCMD='echo "$GRPO_STEP/$GRPO_RANK/$GRPO_NAME" >> "$0.log"'

grpo-spool --help | grep -q '^usage: grpo-spool status'
ok $? "--help prints the usage on stdout"
grpo-spool frobnicate x 2>/dev/null; ok $(( $? != 2 )) "an unknown command is a usage error (2)"
grpo-spool gc "$T" 2>/dev/null; ok $(( $? != 2 )) "gc without --keep-last is a usage error"
grpo-spool consume "$T/q" 2>/dev/null; ok $(( $? != 2 )) "consume without a command is a usage error"
# an option of another command is refused, not ignored: a status or recover
# given gc's options must not look as if it did what gc does
grpo-spool status "$T" --keep-last 3 2>"$T/err"; ok $(( $? != 2 )) "status --keep-last is a usage error"
grep -q '^grpo-spool: status takes no --keep-last$' "$T/err"; ok $? "naming the option"
grpo-spool recover "$T" --queue rollouts 2>/dev/null; ok $(( $? != 2 )) "recover --queue is a usage error"
grpo-spool plot "$T" --lease 5 2>/dev/null; ok $(( $? != 2 )) "plot --lease is a usage error"

# ---- kill -9 while holding a claim ----
S=$T/k9
publish "$S/rollouts" 0 0 a.zst A
publish "$S/rollouts" 0 0 b.zst B
grpo-spool consume "$S/rollouts" -- sh -c 'echo $$ > "$0.pid"; echo "$GRPO_NAME" >> "$0.started"; exec sleep 30' "$S/c" >/dev/null 2>&1 &
CPID=$!; PIDS="$PIDS $CPID"
wait_for 10 test -s "$S/c.started"
ok $? "a consumer took a file"
kill -9 $CPID; wait $CPID 2>/dev/null
first=$(cat "$S/c.started")
check "its claim is left behind" test -f "$S/rollouts/step_0/rank_0/.claimed/$first"
grpo-spool status "$S" | grep -q "claimed step_0/rank_0/$first by .* ago$"
ok $? "status names the holder; live while the command it ran (orphaned now) holds the lock"
grpo-spool recover "$S" -v 2>"$S/rec"
check "recover leaves it while the command runs" grep -q '0 claims returned, 1 live' "$S/rec"
kill -9 "$(cat "$S/c.pid")"
stale() { grpo-spool status "$S" | grep -q "claimed step_0/rank_0/$first by .* (stale)"; }
wait_for 10 stale
ok $? "once the command is gone too, status marks the claim stale"
grpo-spool status "$S" --json | grep -q '"claimed":1'
ok $? "status reports the claim"
grpo-spool recover "$S"
ok $? "recover runs"
check "recover returned the claim" test ! -e "$S/rollouts/step_0/rank_0/.claimed/$first"
grpo-spool consume "$S/rollouts" -- sh -c "$LOGCMD" "$S/c"
ok $? "a new consumer runs"
check "it processed both files once" test "$(sort "$S/c.log" | tr '\n' ' ')" = "0/0/a.zst 0/0/b.zst "
grpo-spool status "$S" --json | grep -q '"waiting":0,"claimed":0,"done":2'
ok $? "status: both done"
grpo-spool consume "$S/rollouts" -- sh -c "$LOGCMD" "$S/c"
check "a further run processes nothing" test "$(lines "$S/c.log")" = 2

# ---- a claim held past its lease is renewed while its command runs ----
# Another host judges the claim by its lease (GRPO_CLAIM_HOST makes recover
# that host); the consumer renews every lease/3, so the claim stays live.
S=$T/lease
publish "$S/q" 0 0 long.zst L
# The command runs until the test is done with it (a fixed run time could end
# before a slow recover looks); the 4 s are the lease's 3 passing.
grpo-spool consume "$S/q" --lease 3 -- sh -c 'touch "$0.go"; i=0
	while [ ! -e "$0.end" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	echo "$GRPO_NAME" >> "$0.log"' "$S/c" &
CPID=$!; PIDS="$PIDS $CPID"
wait_for 60 test -e "$S/c.go"
sleep 4
GRPO_CLAIM_HOST=elsewhere.example grpo-spool recover "$S" -v 2>"$S/rec"
check "recover on another host, past the lease, leaves the claim alone" grep -q '0 claims returned, 1 live' "$S/rec"
touch "$S/c.end"
wait $CPID; ok $? "the consumer finishes"
check "the file was processed once" test "$(cat "$S/c.log")" = long.zst
check "and is done" test -f "$S/q/step_0/rank_0/.done/long.zst"
publish "$S/q" 0 0 late.zst L
echo "host=elsewhere.example pid=1 pstart=1 time=1 lease=3" > "$S/q/step_0/rank_0/.claimed/late.zst"
touch -d '10 seconds ago' "$S/q/step_0/rank_0/.claimed/late.zst"
grpo-spool recover "$S" -v 2>"$S/rec"
check "a claim from another host not renewed within its lease is returned" grep -q '1 claim returned, 0 live' "$S/rec"

# ---- kill -9 of the consumer alone: its command holds the claim ----
S=$T/orphan
publish "$S/q" 0 0 o.zst O
grpo-spool consume "$S/q" -- sh -c 'echo $$ > "$0.pid"; exec sleep 30' "$S/c" >/dev/null 2>&1 &
CPID=$!; PIDS="$PIDS $CPID"
wait_for 10 test -s "$S/c.pid"
kill -9 $CPID; wait $CPID 2>/dev/null
child=$(cat "$S/c.pid"); PIDS="$PIDS $child"
check "the command outlives its consumer" kill -0 $child
grpo-spool recover "$S" -v 2>"$S/rec"
check "recover does not re-queue the file while the command runs" grep -q '0 claims returned, 1 live' "$S/rec"
check "its claim is in place" test -f "$S/q/step_0/rank_0/.claimed/o.zst"
kill -9 $child
returned() { grpo-spool recover "$S" && test ! -e "$S/q/step_0/rank_0/.claimed/o.zst"; }
wait_for 10 returned
ok $? "once the command is gone, unfinished, recover returns the file"
grpo-spool status "$S" --json | grep -q '"waiting":1,"claimed":0,"done":0'
ok $? "it is waiting again"

# ---- a failing command leaves its file waiting ----
S=$T/fail
publish "$S/q" 1 0 x.zst X
grpo-spool consume "$S/q" -- false 2>"$S/err"
ok $(( $? != 1 )) "a failing command makes consume exit 1"
check "and says so" grep -q 'false exited with status 1; left waiting' "$S/err"
grpo-spool status "$S" --json | grep -q '"waiting":1,"claimed":0'
ok $? "the file is waiting again, not claimed"

# ---- --watch with inotify ----
watch_test() { # MODE-ARGS...: run a watching consumer and feed it
	S=$T/w$n; mkdir -p "$S/q"
	grpo-spool consume "$S/q" --watch "$@" -- sh -c "$LOGCMD" "$S/c" &
	WPID=$!; PIDS="$PIDS $WPID"
	publish "$S/q" 0 0 before.zst 1
	wait_for 10 has_lines "$S/c.log" 1
	ok $? "[$*] a file renamed in after start is consumed"
	mkdir -p "$S/q/step_1/rank_3" && echo 2 > "$S/q/.tmp/l" && ln "$S/q/.tmp/l" "$S/q/step_1/rank_3/linked.zst" && rm "$S/q/.tmp/l"
	wait_for 10 has_lines "$S/c.log" 2
	ok $? "[$*] a file linked into a step_N/rank_X made after start is consumed"
	for i in 1 2 3 4 5 6 7 8 9 10; do publish "$S/q" 2 $((i % 3)) f$i.zst $i; done
	publish "$S/q" 10 0 z.zst z
	wait_for 10 has_lines "$S/c.log" 13
	ok $? "[$*] a burst of files in a new step is consumed"
	check "[$*] each exactly once" test "$(sort "$S/c.log" | uniq | wc -l)" = 13
	kill -${SIG:-TERM} $WPID
	wait_for 10 sh -c "! kill -0 $WPID"
	ok $? "[$*] SIG${SIG:-TERM} stops it"
	wait $WPID; ok $? "[$*] with exit status 0"
	check "[$*] nothing left claimed" no_claims "$S/q"
}
watch_test --rescan 1000
GRPO_WATCH_TEST_OVERFLOW=1 watch_test --rescan 1000 -v 2>"$T/ovf.err"
check "with the overflow hook, only overflow rescans found the files" grep -q ', [1-9][0-9]* overflows, inotify' "$T/ovf.err"
SIG=INT watch_test --poll 0.1

# ---- a queue on a remote file system is polled without --poll ----
S=$T/remote; publish "$S/q" 0 0 r.zst r
GRPO_FSYS_REMOTE=1 grpo-spool consume "$S/q" --watch -v -- sh -c "$LOGCMD" "$S/c" 2>"$S/err" &
WPID=$!; PIDS="$PIDS $WPID"
wait_for 10 has_lines "$S/c.log" 1
ok $? "a watching consumer on a remote file system consumes"
kill -TERM $WPID; wait $WPID
check "by polling every 5 seconds, unasked" grep -q 'polling every 5s' "$S/err"

# ---- a done file whose claim record comes and goes does not wake watchers for ever ----
S=$T/pingpong; mkdir -p "$S/q"
publish "$S/q" 0 0 d.zst d
grpo-spool consume "$S/q" -- true
for k in 1 2; do
	grpo-spool consume "$S/q" --watch --rescan 1000 -v -- true 2>"$S/w$k.err" & PIDS="$PIDS $!"; eval W$k=$!
done
# both watching .claimed (so their signal handlers are in place too) before the records come and go
wait_for 60 watches_dir $W1 "$S/q/step_0/rank_0/.claimed" && wait_for 60 watches_dir $W2 "$S/q/step_0/rank_0/.claimed"
ok $? "both watchers watch the queue's claims"
for i in 1 2 3; do touch "$S/q/step_0/rank_0/.claimed/d.zst"; rm "$S/q/step_0/rank_0/.claimed/d.zst"; done
sleep 0.5
kill -TERM $W1 $W2; wait $W1 $W2
check "watchers hand out nothing for a done file" test "$(cat "$S/w1.err" "$S/w2.err" | grep -c ': 0 files,')" = 2
cat "$S/w1.err" "$S/w2.err" | sed "s/^/# /"
ev=$(sed -n 's/.* \([0-9]*\) events.*/\1/p' "$S/w1.err" "$S/w2.err" | sort -n | tail -1)
check "and go quiet after a few events ($ev)" test "${ev:-999}" -lt 20

# ---- SIGTERM while a file is in hand: it is finished, then the consumer stops ----
S=$T/term; mkdir -p "$S/q"
publish "$S/q" 0 0 slow.zst s
publish "$S/q" 0 0 then.zst t
grpo-spool consume "$S/q" --watch -- sh -c 'touch "$0.go"; sleep 1; echo "$GRPO_NAME" >> "$0.log"' "$S/c" &
WPID=$!; PIDS="$PIDS $WPID"
wait_for 10 test -e "$S/c.go"; kill -TERM $WPID
wait_for 10 sh -c "! kill -0 $WPID"
wait $WPID; ok $? "stopped with status 0 after the file in hand"
check "that file was finished and retired" test -f "$S/q/step_0/rank_0/.done/slow.zst"
check "the next one was not started" test "$(cat "$S/c.log")" = slow.zst
check "nothing left claimed" no_claims "$S/q"

# ---- concurrent consumers through the command line ----
S=$T/conc; mkdir -p "$S/q"
for s in 0 1; do for i in $(seq 1 40); do publish "$S/q" $s $((i % 4)) g$i.zst $i; done; done
for k in 1 2 3; do grpo-spool consume "$S/q" -- sh -c "$LOGCMD" "$S/c" & PIDS="$PIDS $!"; done
wait
check "3 consumers processed 80 files" test "$(lines "$S/c.log")" = 80
check "each once" test "$(sort -u "$S/c.log" | wc -l)" = 80

# ---- recover: temporaries by age, the lock ----
S=$T/rec; publish "$S/q" 0 0 a.zst a
echo partial > "$S/q/.tmp/host.1.2.3"; touch -d '3 days ago' "$S/q/.tmp/host.1.2.3"
echo recent > "$S/q/.tmp/host.1.2.4"
grpo-spool recover "$S"
check "recover removes temporaries older than 36 h" test ! -e "$S/q/.tmp/host.1.2.3"
check "and keeps recent ones" test -e "$S/q/.tmp/host.1.2.4"
if command -v flock >/dev/null; then
	flock -n "$S/.lock" grpo-spool recover "$S" 2>/dev/null
	ok $(( $? != 75 )) "recover exits 75 while another holds the spool lock"
else
	ok 0 "# SKIP flock(1) not installed"
fi

# ---- gc --keep-last --archive ----
S=$T/gc
for s in 1 2 3 4 5; do for r in 0 1; do for i in 1 2; do
	publish "$S/rollouts" $s $r r$r-$i.zst "rollout $s $r $i"; done; done; done
mkdir -p "$S/policy/step_5"
cp -R "$S/rollouts" "$T/orig"
grpo-spool consume "$S/rollouts" --to 4 -- true
publish "$S/rollouts" 2 1 late.zst late      # step 2 now has a waiting file
mkdir -p "$S/rollouts/step_0/rank_0"         # an empty step: removed, nothing to archive
grpo-spool gc "$S" --keep-last 2 --archive "$T/arch" -v 2>"$T/gc.err"
ok $? "gc runs"
check "gc reports what it did: the empty step removed, not counted as archived" \
	grep -q '3 steps removed, 2 archived, 1 old step not finished' "$T/gc.err"
check "finished old steps are gone" test ! -e "$S/rollouts/step_1" -a ! -e "$S/rollouts/step_3"
check "an unfinished old step is kept" test -e "$S/rollouts/step_2/rank_1/late.zst"
check "the newest 2 steps are kept" test -e "$S/rollouts/step_4" -a -e "$S/rollouts/step_5"
check "policy checkpoints are not touched" test -d "$S/policy/step_5"
check "archives are written under their names" test -f "$T/arch/rollouts-step_1.tar.zst" -a -f "$T/arch/rollouts-step_3.tar.zst"
check "no temporaries are left beside them" test "$(ls -A "$T/arch" | wc -l)" = 2
mkdir "$T/x"
for s in 1 3; do zstd -dc "$T/arch/rollouts-step_$s.tar.zst" | tar -C "$T/x" -xf - || fails=$((fails + 1)); done
archived_as_published() { # every record of steps 1 and 3 as extracted from the archives
	for s in 1 3; do for f in "$T"/orig/step_$s/rank_*/*.zst; do
		cmp "$f" "$T/x/rollouts/step_$s/${f#"$T"/orig/step_$s/}" || return 1
	done; done
}
check "every record reads back from the archives, byte for byte" archived_as_published
check "archives hold only the records" test "$(zstd -dc "$T/arch/rollouts-step_1.tar.zst" | tar -tf - | wc -l)" = 4

# grpo-cat reads an archived step: real grpo-collect output, archived by gc,
# prints the same JSON as the files did before they were removed
D=$GRPO_TOP/tests/data/collect
C=$T/catarch
grpo-collect -o "$C/rollouts" --step 1 --max-groups 2 "$D/native.jsonl" &&
grpo-collect -o "$C/rollouts" --step 1 --rank 1 "$D/vllm-completions.jsonl" &&
grpo-collect -o "$C/rollouts" --step 2 "$D/atropos.jsonl"
ok $? "grpo-collect publishes steps 1 and 2"
grpo-cat "$C"/rollouts/step_1/rank_0/*.zst "$C"/rollouts/step_1/rank_1/*.zst > "$T/orig.jsonl"
grpo-spool consume "$C/rollouts" --to 1 -- true && grpo-spool gc "$C" --keep-last 1 --archive "$T/catarch.a"
check "gc archives step 1 and removes it" test -f "$T/catarch.a/rollouts-step_1.tar.zst" -a ! -e "$C/rollouts/step_1"
grpo-cat "$T/catarch.a/rollouts-step_1.tar.zst" > "$T/arch.jsonl"
ok $? "grpo-cat reads the archive"
check "the same JSON as the originals, in the same order ($(lines "$T/orig.jsonl") groups)" \
	sh -c 'test -s "$0/orig.jsonl" && cmp "$0/orig.jsonl" "$0/arch.jsonl"' "$T"

# batches: a step is finished only with its DONE marker, and the newest
# step with one stays (grpo-pack reads back where it stopped from it)
for s in 1 2 3 4; do publish "$S/batches" $s 0 b.zst b$s; done
grpo-spool consume "$S/batches" -- true
echo '{}' > "$S/batches/step_1/DONE"
echo '{}' > "$S/batches/step_3/DONE"
grpo-spool gc "$S" --keep-last 1 --queue batches
check "a batches step with DONE is removed" test ! -e "$S/batches/step_1"
check "one without DONE is kept" test -e "$S/batches/step_2"
check "the newest with DONE is kept, beyond --keep-last" test -e "$S/batches/step_3"

# ---- status --json: queues, steps, policy and lag ----
grpo-spool status "$S" --json > "$T/st.json"
ok $? "status --json runs"
check "one line per queue and step" grep -q '"queue":"rollouts","step":2,"ranks":2,"waiting":1' "$T/st.json"
check "a last line with the policy step and the lag" grep -q '{"policy_step":5,"collect_step":5,"lag":0}' "$T/st.json"

echo "1..$n"
[ $fails -eq 0 ]
