#!/bin/sh
# grpo-score --reward-groups: the reward program is asked once per group and
# answers an array per reward, one number per response, for rewards that
# need the whole group (a rank, a comparison). Each value must be stored on
# its own response, with one copy or several, and every error fails the
# input, naming the group.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
command -v jq > /dev/null || skip_all "no jq"
plan 39
cd "$T"

# ids of "####", "#### ", "#### 1", "#### 18", "#### 17" (qwen3): 4 to 7 characters
A='[820]' B='[820,220]' C='[820,220,16]' R='[820,220,16,23]' W='[820,220,16,22]'
# 13 responses in groups of 4, 3, 1 and 5; group 4 is the input's last
{ rollout_group 1 "$R" "$A" "$C" "$B"; rollout_group 2 "$W" "$R" "$A"; rollout_group 3 "$B"; rollout_group 4 "$R" "$R" "$W" "$C" "$A"; } > in.jsonl
grpo-cat --from-json -o in.zst in.jsonl
ok $? "input made"

# rank: how many of the group's responses are shorter; id: the sequence id
# it was asked for, so that a value stored on another response shows
export J='{rewards: {rank: [(.responses | map(.response | length)) as $l | $l[] as $x | [$l[] | select(. < $x)] | length],
	id: [.responses[].sequence_id]}}'
cat > rank.sh <<'EOF2'
while IFS= read -r x; do
	printf '%s\n' "$x" >> "$REQS"
	printf '%s\n' "$x" | jq -c "$J"
done
EOF2
# SEQ REWARDS... per response, as stored (floats: 100 is 1e+02)
stored() {
	grep -o '"sequence_id":[0-9]*[^]]*"rewards":\[[^]]*\]' "$1" | sed 's/"sequence_id":\([0-9]*\).*"rewards":\[\([^]]*\)\]/\1 \2/'
}
REQS=$T/reqs1 grpo-score -c 'sh rank.sh' --reward-groups -t "$TOK" in.zst 2> err1 | grpo-cat > one.jsonl
ok $? "--reward-groups: $(cat err1)"
is "$(wc -l < reqs1 | tr -d ' ')" 4 "one request per group"
is "$(grep -o '"reward_names":\[[^]]*\]' one.jsonl | sort -u)" '"reward_names":["rank","id"]' "names of the first answer"
is "$(stored one.jsonl | tr '\n' ' ')" \
	'100 3,1e+02 101 0,101 102 2,102 103 1,103 200 1,2e+02 201 1,201 202 0,202 300 0,3e+02 400 2,4e+02 401 2,401 402 2,402 403 1,403 404 0,404 ' \
	"each response's rank in its group, on its own sequence"
# the request: the group's id once, its responses in order, each without the group id
is "$(sed -n 2p reqs1 | jq -c '[.group_id, (.responses | length), (.responses[0] | keys), .responses[1].sequence_id,
	.responses[0].response, .responses[0].answer, .responses[0].finish_reason]')" \
	'[2,3,["answer","finish_reason","prompt","response","sequence_id"],201,"#### 17","#### 18","stop"]' \
	"a request: group_id, then each response as in the per-response form"
is "$(head -c 40 reqs1)" '{"group_id": 1, "responses": [{"sequence' "the group id first, as a program may match it"

# several copies: the groups spread over them, the same output
REQS=$T/reqs3 grpo-score -c 'sh rank.sh' --reward-groups --reward-jobs 3 -t "$TOK" in.zst 2> err3 | grpo-cat > three.jsonl
ok $? "--reward-groups --reward-jobs 3: $(cat err3)"
cmp -s one.jsonl three.jsonl
ok $? "the same output as one program's, byte for byte"
is "$(wc -l < reqs3 | tr -d ' ')" 4 "one request per group"
# standard input: a group at a time
REQS=$T/reqss grpo-score -c 'sh rank.sh' --reward-groups -t "$TOK" < in.zst 2> errs | grpo-cat > stdin.jsonl
ok $? "standard input: $(cat errs)"
cmp -s one.jsonl stdin.jsonl
ok $? "the same output"
# and with two copies, the groups it holds together: each copy's first
# request waits (10 s at most) until the other copy has one too. Asked one
# group at a time, one copy worked and the other waited for nothing.
mkdir at
cat > meet.sh <<'EOF2'
first=1
while IFS= read -r x; do
	touch "$AT/$$"
	n=0
	while [ $first = 1 ] && [ -z "$(ls "$AT" | grep -vx $$)" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	[ $n -lt 100 ] || echo $$ >> "$AT.alone"
	first=0
	printf '%s\n' "$x" | jq -c "$J"
done
EOF2
AT=$T/at grpo-score -c 'sh meet.sh' --reward-groups --reward-jobs 2 -t "$TOK" < in.zst 2> errm | grpo-cat > meet.jsonl
ok $? "standard input, 2 copies: $(cat errm)"
is "$(ls at | wc -l | tr -d ' '):$(cat at.alone 2> /dev/null | wc -l | tr -d ' ')" 2:0 \
	"both copies at work at once (copies asked : copies that waited alone)"
cmp -s one.jsonl meet.jsonl
ok $? "the same output"

# with built-in rewards and weights: dr_grpo on x = gsm8k + 2 rank + 0 id. Group 1 is
# R A C B: x = 1 + 6, 0, 4, 2, mean 3.25
REQS=$T/reqsw grpo-score -c 'sh rank.sh' --reward-groups -r gsm8k -r rank=2 -r id=0 -a dr_grpo -t "$TOK" in.zst \
	2> errw | grpo-cat > w.jsonl
ok $? "with -r gsm8k -r rank=2 -r id=0: $(cat errw)"
is "$(grep -o '"reward_names":\[[^]]*\]' w.jsonl | sort -u)" '"reward_names":["gsm8k","rank","id"]' \
	"the built-in's first"
is "$(stored w.jsonl | head -4 | tr '\n' ' ')" '100 1,3,1e+02 101 0,0,101 102 0,2,102 103 0,1,103 ' "stored unweighted"
is "$(grep -o '"advantages":[-0-9.e]*' w.jsonl | head -4 | tr '\n' ' ')" \
	'"advantages":3.75 "advantages":-3.25 "advantages":0.75 "advantages":-1.25 ' "weighted by name"
# NaN (Python's json) in an array: stored as 0, as a per-response reward is
grpo-score -c "jq -c --unbuffered '{rewards: {r: [.responses[] | 1]}} | if .rewards.r | length == 3 then .rewards.r[1] = \"NAN\" else . end' | sed -u 's/\"NAN\"/NaN/'" \
	--reward-groups -t "$TOK" in.zst 2> errn | grpo-cat > nan.jsonl
ok $? "NaN in an array: scored"
grep -q 'first: group 2, sequence 201, reward r = nan' errn
ok $? "and said, on its own sequence: $(head -1 errn)"

# G's group answered by ACT, the others by J
cat > bad.sh <<'EOF2'
while IFS= read -r x; do
	case $x in
	"{\"group_id\": $G,"*) eval "$ACT" ;;
	*) printf '%s\n' "$x" | jq -c "$J" ;;
	esac
done
EOF2
# answers out of order: group 1 is answered last, after the copies' others
G=1 ACT='sleep 0.5; printf "%s\n" "$x" | jq -c "$J"' \
	grpo-score -c 'sh bad.sh' --reward-groups --reward-jobs 3 -t "$TOK" in.zst 2> erro | grpo-cat > ooo.jsonl
ok $? "group 1 answered last: $(cat erro)"
cmp -s one.jsonl ooo.jsonl
ok $? "the same output as one program's"

# ---- errors: exit status 1, nothing written, the group named ----
printf '%s\n' '{"rewards": {"rank": [0,0,0,0,0], "id": [0,0,0,0,0]}}' '{"rewards": {"rank": [0,0,0,0,0], "id": [0,0,0,0,0]}}' > two.jsonl
for kind in length array value missing timeout exits lasttwice; do
	G=2 to=60
	case $kind in
	length) ACT="echo '{\"rewards\": {\"rank\": [0, 1], \"id\": [1, 2, 3]}}'"
		want="'rank' has 2 values for a group of 3 for group 2" ;;
	array) ACT="echo '{\"rewards\": {\"rank\": 1, \"id\": [1, 2, 3]}}'"; want="'rank' is not an array for group 2" ;;
	value) ACT="echo '{\"rewards\": {\"rank\": [0, \"1\", 2], \"id\": [1, 2, 3]}}'"
		want="'rank' holds a value that is not a number for group 2" ;;
	missing) ACT="echo '{\"rewards\": {\"rank\": [0, 1, 2], \"di\": [1, 2, 3]}}'"
		want="no 'id', which its first answer named for group 2" ;;
	timeout) ACT='sleep 30'; to=1; want="did not answer within --reward-timeout 1s for group 2" ;;
	exits) ACT='exit 3'; want="ended without answering for group 2 (exited with status 3)" ;;
	lasttwice) G=4 ACT='cat two.jsonl'
		want="wrote '{\"rewards\": {\"rank\": [0,0,0,0,0], \"id\": [0,0,0,0,0]}}' before it was asked (one line per request) for group 4" ;;
	esac
	export G ACT
	grpo-score -c 'sh bad.sh' --reward-groups -T $to -t "$TOK" in.zst 2> err > bad.zst
	is "$?:$(wc -c < bad.zst | tr -d ' ')" "1:0" "$kind: exit status 1, nothing written"
	grep -qF "reward program 'sh bad.sh' " err && grep -qF "$want" err
	ok $? "$kind: naming the group: $(cat err)"
done
# with several copies too, naming the copy
G=2 ACT="echo '{\"rewards\": {\"rank\": [0, 1], \"id\": [1, 2, 3]}}'" \
	grpo-score -c 'sh bad.sh' --reward-groups --reward-jobs 3 -t "$TOK" in.zst 2> err > bad.zst
is "$?:$(wc -c < bad.zst | tr -d ' ')" "1:0" "a wrong length from one of 3 copies: exit status 1, nothing written"
grep -q "reward program 'sh bad.sh' (copy [1-3] of 3) answered .*'rank' has 2 values for a group of 3 for group 2" err
ok $? "naming the copy and the group: $(cat err)"
exit $_failed
