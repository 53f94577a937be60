#!/bin/sh
# grpo-score --reward-jobs: several copies of the reward program, each given
# one request at a time. The rewards must be one program's, whatever order
# the copies answer in, and every error of one program still fails the
# input, naming the copy and the sequence.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
plan 54
cd "$T"

# ids of "#### 18", "#### 17" (qwen3)
R='[820,220,16,23]'
W='[820,220,16,22]'
# 16 responses; sequence 403 is the input's last
{ rollout_group 1 "$R" "$W" "$W" "$R"; rollout_group 2 "$R" "$R" "$W" "$W"; rollout_group 3 "$W" "$W" "$W" "$R"; rollout_group 4 "$R" "$W" "$R" "$W"; } > in.jsonl
grpo-cat --from-json -o in.zst in.jsonl
ok $? "input made"

# Each answer gives the sequence id it was asked for (id) and whether the
# response is right, so that an answer stored on another sequence shows.
# SLEEP is how long it takes, DELAY (a shell case on the id) overrides it.
# Each copy appends its pid to pids once per request.
cat > prog.sh <<'EOF2'
while IFS= read -r line; do
	id=${line#*'"sequence_id": '}; id=${id%%,*}
	s=$SLEEP
	case $id in $DELAY) s=$DELAY_S ;; esac
	sleep "$s"
	echo $$ >> "$PIDS"
	case $line in
	*'"response": "#### 18"'*) echo "{\"rewards\": {\"id\": $id, \"right\": 1}}" ;;
	*) [ "$ORDER" = mixed ] && echo "{\"right\": 0, \"rewards\": {\"right\": 0, \"id\": $id}}" ||
		echo "{\"right\": 0, \"rewards\": {\"id\": $id, \"right\": 0}}" ;;
	esac
done
EOF2
export SLEEP=0.3 DELAY=none DELAY_S=0 PIDS="$T/pids1"
t0=$(date +%s.%N)
grpo-score -c 'sh prog.sh' -t "$TOK" in.zst 2> err1 | grpo-cat > one.jsonl
t1=$(date +%s.%N)
ok $? "--reward-jobs 1 (the default): $(cat err1)"
export PIDS="$T/pids4"
grpo-score -c 'sh prog.sh' --reward-jobs 4 -t "$TOK" in.zst 2> err4 | grpo-cat > four.jsonl
t2=$(date +%s.%N)
ok $? "--reward-jobs 4: $(cat err4)"
is "$(wc -l < four.jsonl | tr -d ' '):$(grep -c '"rewards":\[' four.jsonl)" "4:4" "four groups scored"
cmp -s one.jsonl four.jsonl
ok $? "the same output as one program's, byte for byte"
is "$(grep -o '"reward_names":\[[^]]*\]' four.jsonl | sort -u)" '"reward_names":["id","right"]' \
	"names in the order of the first answer"
# every stored id reward is its own sequence's
ids_match() { # ids_match FILE: the trajectories, and those whose reward named id is not their sequence id
	grep -o '"sequence_id":[0-9]*[^]]*"rewards":\[[^]]*\],"reward_names":\[[^]]*\]' "$1" |
		sed 's/"sequence_id":\([0-9]*\).*"rewards":\[\([^,]*\),\([^]]*\)\],"reward_names":\["\([a-z]*\)","\([a-z]*\)"\]/\1 \2 \3 \4 \5/' |
		awk '{ n++; v = $4 == "id" ? $2 : $3 } $1 != v + 0 { bad++ } END { print n + 0, bad + 0 }'
}
is "$(ids_match one.jsonl)" "16 0" "one program: each answer on its own sequence (check of the check)"
is "$(ids_match four.jsonl)" "16 0" "four copies: each answer on its own sequence"
is "$(wc -l < pids4 | tr -d ' ')" 16 "16 requests answered"
np=$(sort -u pids4 | wc -l | tr -d ' ')
[ "$np" -gt 1 ] && [ "$np" -le 4 ]
ok $? "by more than one copy, at most four: $np"
is "$(sort -u pids1 | wc -l | tr -d ' ')" 1 "one program without --reward-jobs"
echo "# 16 requests of 0.3 s: --reward-jobs 1 $(echo "$t1 - $t0" | bc) s, 4 $(echo "$t2 - $t1" | bc) s"

# answers out of order: the first requests take longest, so the copies
# answer the later ones first
export SLEEP=0 DELAY='100|101|200' DELAY_S=0.6 PIDS="$T/pidso"
grpo-score -c 'sh prog.sh' --reward-jobs 3 -t "$TOK" -x mo.jsonl in.zst 2> erro | grpo-cat > ooo.jsonl
ok $? "answers out of order: $(cat erro)"
cmp -s one.jsonl ooo.jsonl
ok $? "the same output as one program's"
is "$(ids_match ooo.jsonl)" "16 0" "each answer on its own sequence"
grep -q '"groups":4,"sequences":16,' mo.jsonl
ok $? "metrics count them all: $(cut -c 1-120 mo.jsonl)"
# names in another order from some answers: stored in the first answer's, whichever copy gave it
export SLEEP=0.05 DELAY=none ORDER=mixed PIDS="$T/pidsm"
grpo-score -c 'sh prog.sh' --reward-jobs 4 -t "$TOK" in.zst 2> errm | grpo-cat > mixed.jsonl
ok $? "names in either order: $(cat errm)"
is "$(ids_match mixed.jsonl)" "16 0" "each reward stored under its name"
is "$(grep -o '"reward_names":\[[^]]*\]' mixed.jsonl | sort -u | wc -l | tr -d ' ')" 1 "in one order throughout"
export ORDER=
# more copies than requests, and a group of standard input at a time
export SLEEP=0 DELAY=none PIDS="$T/pidss"
grpo-score -c 'sh prog.sh' --reward-jobs 32 -t "$TOK" < in.zst 2> errs | grpo-cat > stdin.jsonl
ok $? "32 copies, standard input: $(cat errs)"
cmp -s one.jsonl stdin.jsonl
ok $? "the same output"

# ---- standard input: the groups already read are scored together ----
# 4 groups of 4 requests and 8 copies: one group at a time kept 4 copies idle
export SLEEP=0 DELAY=none PIDS="$T/pids8"
grpo-score -c 'sh prog.sh' --reward-jobs 8 -t "$TOK" < in.zst 2> err8 | grpo-cat > stdin8.jsonl
ok $? "8 copies, standard input: $(cat err8)"
is "$(sort -u pids8 | wc -l | tr -d ' ')" 8 "all 8 copies answered (a group at a time, 4 did)"
cmp -s one.jsonl stdin8.jsonl
ok $? "the same output as the file's with one program"
# scored as one group at a time scores them: a group split (group 1 again,
# apart) is not merged, adjacent records of one group are (group 6), the
# sizes differ (pass_at's largest group, 5, comes after the 4s), group 5
# has zero std (--drop-zero-std), group 7 has one member
{ rollout_group 1 "$R" "$W" "$W" "$R"; rollout_group 2 "$R" "$R" "$W"; rollout_group 5 "$R" "$R" "$R" "$R"
	rollout_group 1 "$W" "$R" | sed 's/"sequence_id":10/"sequence_id":15/g'
	rollout_group 3 "$R" "$W" "$R" "$W" "$R"; rollout_group 6 "$R" "$W"
	rollout_group 6 "$W" "$W" | sed 's/"sequence_id":60/"sequence_id":65/g'; rollout_group 7 "$W"; } |
	grpo-cat --from-json -o mixed-in.zst
export PIDS="$T/pidsx"
for j in 1 8; do
	grpo-score -c 'sh prog.sh' --reward-jobs $j -z -x m$j.jsonl -t "$TOK" < mixed-in.zst > s$j.zst 2> e$j &&
		grpo-score -c 'sh prog.sh' --reward-jobs $j -z -x q$j.jsonl -o q$j -t "$TOK" < mixed-in.zst 2> /dev/null
	ok $? "--reward-jobs $j, standard input, to standard output and into a queue: $(cat e$j)"
done
cmp -s s1.zst s8.zst
ok $? "8 copies: standard output byte for byte one program's ($(wc -c < s8.zst | tr -d ' ') bytes)"
is "$(grpo-cat s8.zst | wc -l | tr -d ' ')" 6 "7 groups, group 5 dropped (check of the check)"
(cd q1 && find . -type f | sort | xargs cksum) > q1.sum && (cd q8 && find . -type f | sort | xargs cksum) > q8.sum
cmp -s q1.sum q8.sum
ok $? "the same file published, byte for byte: $(cat q8.sum)"
cmp -s e1 e8 && grep -q 'group 1 came earlier too' e8
ok $? "the same warnings: $(cat e8)"
# the times aside (decode_s on), the same metrics lines
cat m1.jsonl q1.jsonl | sed 's/,"decode_s".*//' > m1.cut && cat m8.jsonl q8.jsonl | sed 's/,"decode_s".*//' > m8.cut
cmp -s m1.cut m8.cut && grep -q '"groups":7,' m8.cut && grep -q '"pass_at":{"1":[^}]*"5":' m8.cut
ok $? "the same metrics lines: $(cat m8.cut)"
# A producer that waits: the groups it has written are scored without waiting
# for more (group 1 comes out once group 2's record shows it whole)
{ rollout_group 1 "$R" "$W" "$W" "$R"; rollout_group 2 "$R" "$R" "$W" "$W"; } | grpo-cat --from-json -o part1.zst
{ rollout_group 3 "$W" "$W" "$W" "$R"; rollout_group 4 "$R" "$W" "$R" "$W"; } | grpo-cat --from-json -o part2.zst
rm -f late
{ cat part1.zst; n=0
	while [ "$(grpo-cat part.zst 2> /dev/null | wc -l)" -lt 1 ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	[ $n -lt 300 ] || touch late
	cat part2.zst; } | grpo-score -c 'sh prog.sh' --reward-jobs 4 -t "$TOK" > part.zst 2> errp
ok $? "a producer that waits for its first group's output: $(cat errp)"
[ ! -e late ]
ok $? "group 1 came out before the producer went on"
grpo-cat part.zst | cmp -s one.jsonl -
ok $? "then the rest: the same output"

# ---- errors: exit status 1, nothing written, the copy and the sequence named ----
printf '%s\n' '{"rewards": {"r": 1, "s": 0}}' '{"rewards": {"r": 0, "s": 0}}' > two.jsonl
for kind in crash hang garbage twice lasttwice names; do
	to=60
	case $kind in
	crash) act='exit 3'; seq=201; want='ended without answering for sequence 201 of group 2 (exited with status 3)' ;;
	hang) act='sleep 30'; seq=201; to=3; want='did not answer within --reward-timeout 3s for sequence 201 of group 2' ;;
	garbage) act='echo hello'; seq=201; want="answered 'hello': not valid JSON (near byte 1)" ;;
	# the second line is found when that copy is asked again, or after the last answer
	twice) act='cat two.jsonl'; seq=201; want="wrote '{\"rewards\": {\"r\": 0, \"s\": 0}}' before it was asked (one line per request) for sequence" ;;
	lasttwice) act='cat two.jsonl'; seq=403; want="wrote '{\"rewards\": {\"r\": 0, \"s\": 0}}' before it was asked (one line per request) for sequence 403 of group 4" ;;
	# another copy's first answer named the rewards
	names) act="echo '{\"rewards\": {\"r\": 1, \"t\": 0}}'"; seq=201; want="answered '{\"rewards\": {\"r\": 1, \"t\": 0}}': no 's', which the program's first answer named for sequence 201 of group 2" ;;
	esac
	# every request but the odd one takes 0.1 s, so that all four copies get some
	# (the hang's 3 s limit leaves a loaded machine room for those)
	printf '%s\n' "while IFS= read -r x; do case \$x in *'\"sequence_id\": $seq,'*) $act ;;
	*) sleep 0.1; echo '{\"rewards\": {\"r\": 1, \"s\": 0}}' ;; esac; done" > bad.sh
	grpo-score -c 'sh bad.sh' --reward-jobs 4 -T $to -t "$TOK" in.zst 2> err > bad.zst
	is "$?:$(wc -c < bad.zst | tr -d ' ')" "1:0" "$kind: exit status 1, nothing written"
	grep -q "reward program 'sh bad.sh' (copy [1-4] of 4) " err && grep -qF "$want" err
	ok $? "$kind: naming the copy and the sequence: $(cat err)"
done
# standard input, into a queue: its batch fails with the group named, nothing published
printf '%s\n' "while IFS= read -r x; do case \$x in *'\"sequence_id\": 201,'*) exit 3 ;;
	*) echo '{\"rewards\": {\"r\": 1}}' ;; esac; done" > crash.sh
grpo-score -c 'sh crash.sh' --reward-jobs 4 -x mc.jsonl -o qc -t "$TOK" < in.zst 2> err
is "$?:$(find qc -name '*.zst' | wc -l | tr -d ' '):$(cat mc.jsonl 2> /dev/null | wc -l | tr -d ' ')" "1:0:0" \
	"standard input, a copy crashing on group 2: exit status 1, nothing published, no metrics line"
grep -q "^grpo-score: <stdin>: reward program 'sh crash.sh' (copy [1-4] of 4) ended without answering for sequence 201 of group 2" err
ok $? "naming standard input, the copy and the sequence: $(cat err)"
# the other copies are stopped with the one that failed: a copy 30 s into
# sequence 200 when another ends at 201 holds nothing up (waiting for it,
# the run took 30 s)
printf '%s\n' "while IFS= read -r x; do case \$x in *'\"sequence_id\": 200,'*) sleep 30 ;; *'\"sequence_id\": 201,'*) exit 3 ;;
	*) sleep 0.1; echo '{\"rewards\": {\"r\": 1}}' ;; esac; done" > stuck.sh
t0=$(date +%s)
grpo-score -c 'sh stuck.sh' --reward-jobs 4 -t "$TOK" in.zst 2> err > /dev/null
st=$? t1=$(date +%s)
[ $st -eq 1 ] && [ $((t1 - t0)) -lt 20 ] && grep -qF 'ended without answering for sequence 201 of group 2' err
ok $? "one copy's error stops the others at once: status $st, $((t1 - t0)) s: $(cat err)"
is "$(ps -eo args | grep -c '^sh stuck.sh$')" 0 "no copy left running"

# ---- a copy that exits non-zero at the end: a warning, status 0 ----
printf '%s\n' "st=0; while IFS= read -r x; do case \$x in *'\"sequence_id\": 201,'*) st=5 ;; esac
	sleep 0.1; echo '{\"rewards\": {\"r\": 1}}'; done; exit \$st" > exit5.sh
grpo-score -c 'sh exit5.sh' --reward-jobs 4 -t "$TOK" in.zst 2> err > exit5.zst
is "$?:$(grpo-cat exit5.zst | wc -l | tr -d ' ')" "0:4" "a copy exiting with status 5 at the end: status 0, the output written"
grep -q "^grpo-score: warning: reward program 'sh exit5.sh' (copy [1-4] of 4) exited with status 5$" err
ok $? "a warning naming the copy: $(cat err)"
grpo-score -c 'while read -r x; do echo "{\"rewards\": {\"r\": 1}}"; done; exit 4' --reward-jobs 3 -t "$TOK" in.zst 2> err > /dev/null
is "$?:$(grep -c warning err)" "0:1" "every copy exiting with status 4: one warning"
grep -qF "(copy 1 of 3) exited with status 4; 2 other copies did not exit with status 0 either" err
ok $? "counting the others: $(cat err)"

# ---- the option ----
grpo-score -c 'sh prog.sh' --reward-jobs 257 -t "$TOK" in.zst 2> err > /dev/null
is $? 2 "--reward-jobs 257: usage error"
exit $_failed
