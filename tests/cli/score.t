#!/bin/sh
# grpo-score: rewards and advantages on a small input with exact values; a
# spool in and out with claims; reward programs that answer, crash, hang
# or speak garbage; reference logprobs against grpo-cat --model; four
# scorers sharing one queue; kill -9, recover, re-run.
. "$GRPO_TOP/tests/cli/lib.sh"
TOK="$GRPO_SHARED/data/tokenizers/qwen3/tokenizer.json"
[ -f "$TOK" ] || skip_all "no $TOK"
plan 118
cd "$T"

# ids of "#### 18", "#### 17" (qwen3)
R='[820,220,16,23]'
W='[820,220,16,22]'
{ rollout_group 1 "$R" "$W" "$W" "$R"; rollout_group 2 "$R" "$R"; rollout_group 3 "$W"; } > in.jsonl
grpo-cat --from-json -o in.zst in.jsonl
ok $? "input made"

# ---- rewards and advantages, standard output ----
grpo-score -r gsm8k -t "$TOK" -x m.jsonl in.zst > out.zst 2> err
ok $? "scores a file to standard output"
grpo-cat out.zst > out.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' out.jsonl | tr '\n' ' ')" \
   '"advantages":0.8658754 "advantages":-0.8658754 "advantages":-0.8658754 "advantages":0.8658754 "advantages":0 "advantages":0 "advantages":0 ' \
   "grpo advantages: (r - mean) / (std + 1e-4), zero for the flat group and the group of one"
is "$(grep -o '"rewards":\[[0-9,]*\]' out.jsonl | head -2 | tr '\n' ' ')" '"rewards":[1] "rewards":[0] ' "gsm8k rewards"
is "$(grep -o '"successes":\[1\]' out.jsonl | wc -l | tr -d ' ')" 4 "successes"
grep -q 'group 3' err || grep -q '1 group of one member' err
ok $? "a group of one is reported: $(head -1 err)"
grep -q 'group sizes differ (1 to 4)' err
ok $? "unequal sizes are reported"
grep -q '"groups":3,"sequences":7,"dropped_groups":0,"zero_std_groups":2,"singleton_groups":1' m.jsonl
ok $? "metrics line"
grep -q '"gsm8k":{"mean":0.571428' m.jsonl
ok $? "metrics: reward mean per function"

grpo-score -r gsm8k -t "$TOK" -a rloo < in.zst 2>/dev/null | grpo-cat > rloo.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' rloo.jsonl | head -2 | tr '\n' ' ')" \
   '"advantages":0.6666667 "advantages":-0.6666667 ' "--advantage rloo from standard input"
grpo-score -r gsm8k -t "$TOK" -a dr_grpo --drop-zero-std -x m2.jsonl in.zst 2>/dev/null | grpo-cat > drop.jsonl
is "$(wc -l < drop.jsonl | tr -d ' ')" 1 "--drop-zero-std drops the flat group and the group of one"
grep -q '"dropped_groups":2' m2.jsonl
ok $? "dropped groups counted"
is "$(grep -o '"advantages":[-0-9.e]*' drop.jsonl | head -1)" '"advantages":0.5' "dr_grpo: r - mean"

# ---- usage ----
grpo-score in.zst > /dev/null 2> err
is $? 2 "no reward: usage error"
grpo-score -r length in.zst > /dev/null 2> err
is $? 2 "length without --max-len: usage error"
grpo-score -r gsm8k in.zst > /dev/null 2> err
is $? 1 "text rewards without a tokenizer: error"
grep -q 'give --tokenizer' err
ok $? "says which option: $(cat err)"
grpo-score --device cpu -r length -m 3 -b 2 in.zst 2>/dev/null | grpo-cat > len.jsonl
ok $? "--device cpu"
grpo-score --device cuda -r length -m 3 in.zst > /dev/null 2> err
gpu=$?
if [ $gpu -eq 69 ]; then
	grep -Eq 'device cuda: (no GPU to run on|this build has no CUDA path)' err
	ok $? "--device cuda without a GPU: exit status 69, saying why: $(cat err)"
else
	is $gpu 0 "--device cuda with a GPU here"
fi
grpo-score --device tpu -r length -m 3 in.zst > /dev/null 2> /dev/null
is $? 2 "--device tpu: usage error"
grpo-score --device auto --precision fp16 -r length -m 3 in.zst > /dev/null 2> /dev/null
is $? 2 "--precision fp16: usage error"
is "$(grep -o '"rewards":\[[-0-9.]*\]' len.jsonl | head -1)" '"rewards":[-1]' "length: 4 tokens past --max-len 3"
grpo-score -r length -m 5 -b 2 in.zst 2>/dev/null | grpo-cat > len.jsonl
is "$(grep -o '"rewards":\[[-0-9.]*\]' len.jsonl | head -1)" '"rewards":[-0.5]' "length: half into the buffer"

# ---- spool in and out ----
mkdir -p sp/rollouts/step_3/rank_1
cp in.zst sp/rollouts/step_3/rank_1/a.zst
grpo-score -r gsm8k -t "$TOK" -o sp/scored sp/rollouts 2>/dev/null
ok $? "scores a queue into -o"
[ -f sp/scored/step_3/rank_1/a.zst ] && [ -e sp/rollouts/step_3/rank_1/.done/a.zst ]
ok $? "published in the same step_3/rank_1 under the same name; the input retired"
cmp -s out.zst sp/scored/step_3/rank_1/a.zst || [ "$(grpo-cat sp/scored/step_3/rank_1/a.zst)" = "$(cat out.jsonl)" ]
ok $? "the same groups as on standard output"
mkdir -p sp3/rollouts/step_3/rank_1 && cp in.zst sp3/rollouts/step_3/rank_1/a.zst
grpo-spool consume sp3/rollouts -- grpo-score -r gsm8k -t "$TOK" -o sp2/scored 2>/dev/null
[ -f sp2/scored/step_3/rank_1/a.zst ]
ok $? "a file named by path (grpo-spool consume's) keeps its step and rank too"

# ---- a pipeline ----
grpo-collect --step 0 "$GRPO_TOP/examples/vllm-completions.jsonl" | grpo-score -r length -m 64 2> /dev/null |
	grpo-pack --seq-len 128 --ranks 2 -o pl/batches --step 1
[ $? -eq 0 ] && [ -f pl/batches/step_1/DONE ]
ok $? "grpo-collect | grpo-score | grpo-pack"

# ---- --watch ----
mkdir -p wq/rollouts/step_0/rank_0
grpo-score --watch -r gsm8k -t "$TOK" -o wq/scored wq/rollouts 2> werr &
wpid=$!
rollout_group 90 "$R" "$W" | grpo-cat --from-json -o wq/x.zst
mv wq/x.zst wq/rollouts/step_0/rank_0/x.zst
n=0
while [ ! -e wq/rollouts/step_0/rank_0/.done/x.zst ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
[ -f wq/scored/step_0/rank_0/x.zst ]
ok $? "--watch scores a file published while it runs"
kill -TERM $wpid
wait $wpid
is $? 0 "--watch stops on SIGTERM with status 0"
is "$(cat werr)" "" "silent"

# ---- reward programs ----
cat > good.sh <<'EOF'
while IFS= read -r line; do
	case $line in
	*'"response": "#### 18"'*) echo '{"rewards": {"right": 1, "style": 0.5}}' ;;
	*) echo '{"style": 0, "rewards": {"style": 0.25, "right": 0}}' ;;
	esac
done
EOF
grpo-score -c 'sh good.sh' -r gsm8k=0 -t "$TOK" in.zst 2>/dev/null | grpo-cat > cmd.jsonl
ok $? "a reward program"
is "$(grep -o '"reward_names":\[[^]]*\]' cmd.jsonl | head -1)" '"reward_names":["gsm8k","right","style"]' \
   "its rewards named, after the built-ins"
is "$(grep -o '"rewards":\[[-0-9.,]*\]' cmd.jsonl | head -2 | tr '\n' ' ')" '"rewards":[1,1,0.5] "rewards":[0,0,0.25] ' \
   "its rewards, by name"
# weighted as the built-ins are: dr_grpo on x = sum of w * r. Group 1 is
# R W W R; R answers right 1, style 0.5, gsm8k 1; W right 0, style 0.25, gsm8k 0.
grpo-score -c 'sh good.sh' -r gsm8k=0 -r right=2 -r style=4 -a dr_grpo -t "$TOK" in.zst 2>/dev/null | grpo-cat > cmdw.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' cmdw.jsonl | head -4 | tr '\n' ' ')" \
   '"advantages":1.5 "advantages":-1.5 "advantages":-1.5 "advantages":1.5 ' \
   "program rewards weighted by name: x = 2 right + 4 style, R 4, W 1, mean 2.5"
is "$(grep -o '"rewards":\[[-0-9.,]*\]' cmdw.jsonl | head -2 | tr '\n' ' ')" '"rewards":[1,1,0.5] "rewards":[0,0,0.25] ' \
   "stored unweighted"
grpo-score -c 'sh good.sh' -r gsm8k=0.5 -r style=-4 -a dr_grpo -t "$TOK" in.zst 2>/dev/null | grpo-cat > cmdw.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' cmdw.jsonl | head -2 | tr '\n' ' ')" '"advantages":0.25 "advantages":-0.25 ' \
   "with a built-in's weight, right's 1 by default: R 0.5 + 1 - 2 = -0.5, W -1, mean -0.75"
grpo-score -c 'sh good.sh' -r wrong=2 -t "$TOK" in.zst 2> err > /dev/null
is $? 1 "a weight for a reward the program does not name: error"
grep -qF "in.zst: --reward wrong: the reward program 'sh good.sh' answers no reward of that name (its rewards: right, style)" err
ok $? "naming it and the program's rewards: $(cat err)"
grpo-score -r wrong=2 -r length -m 9 in.zst 2> err > /dev/null
is $? 2 "a reward neither built in nor a program's: usage error"
# three rewards of weight W, sequence 100 alone answering c: x = 3W there, 2W in the rest
# of group 1. At 1e308 both sums overflowed to inf, so the group looked flat and
# every advantage was 0 without a word; weights are now at most 1e38
cat > three.sh <<'EOF'
while read -r l; do case $l in *'"sequence_id": 100,'*) c=1 ;; *) c=0 ;; esac
	echo "{\"rewards\": {\"a\": 1, \"b\": 1, \"c\": $c}}"; done
EOF
grpo-score -c 'sh three.sh' -r a=1e38 -r b=1e38 -r c=1e38 -t "$TOK" in.zst 2>/dev/null | grpo-cat > heavy.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' heavy.jsonl | head -4 | tr '\n' ' ')" \
   '"advantages":1.5 "advantages":-0.5 "advantages":-0.5 "advantages":-0.5 ' \
   "weights of 1e38: the advantages of weights of 1, less the std's 1e-4"
grpo-score -c 'sh three.sh' -r a=1e308 -r b=1e308 -r c=1e308 -t "$TOK" in.zst 2> err > heavy.zst
is $? 2 "a weight past 1e38: usage error, not advantages of 0"
grep -qF "weight '1e308' is beyond 1e+38" err
ok $? "saying so: $(cat err)"
long=correct_final_answer_under_the_strict_grader_v2_abcdefghijk   # 59 bytes
grpo-score -c "while read -r l; do echo '{\"rewards\": {\"$long\": 1}}'; done" -r gsm8k=0 -r "$long=0" -t "$TOK" \
	in.zst 2> err | grpo-cat > long.jsonl
is "$?:$(grep -o '"advantages":[-0-9.e]*' long.jsonl | sort -u | tr '\n' ' ')" '0:"advantages":0 ' \
	"a program's reward of a 59-byte name can be weighted (by 0: advantages 0): $(cat err)"

grpo-score -c 'while read -r l; do echo "{\"rewards\": {\"r\": 1e999}}"; done' -t "$TOK" in.zst 2> err | grpo-cat > inf.jsonl
ok $? "an infinite reward from a program: scored"
grep -q 'non-finite rewards stored as 0, their sequences. advantage 0 (first: group 1, sequence 100, reward r = inf)' err
ok $? "and said: $(cat err | head -1)"
is "$(grep -o '"advantages":[-0-9.e]*' inf.jsonl | sort -u | tr '\n' ' ')" '"advantages":0 ' "no NaN: advantage 0"
# NaN and Infinity as Python's json module writes them are the non-finite rewards above
grpo-score -c 'while read -r l; do echo "{\"rewards\": {\"r\": NaN, \"s\": -Infinity}}"; done' -t "$TOK" in.zst 2> err |
	grpo-cat > nan.jsonl
ok $? "NaN and -Infinity from a program (Python's json): scored"
grep -q 'non-finite rewards stored as 0, their sequences. advantage 0 (first: group 1, sequence 100, reward r = nan)' err
ok $? "and said: $(cat err | head -1)"
is "$(grep -o '"advantages":[-0-9.e]*' nan.jsonl | sort -u | tr '\n' ' ')" '"advantages":0 ' "no NaN advantage"
# a reward that is not a number solved nothing, whatever the threshold
grpo-score -s -1 -c 'while read -r l; do echo "{\"rewards\": {\"r\": NaN}}"; done' -t "$TOK" in.zst 2> /dev/null |
	grpo-cat | grep -o '"successes":\[[0-9]*\]' | sort -u > nan-succ
is "$(cat nan-succ)" '"successes":[0]' "a NaN reward is no success, even at --success-threshold -1"
# a reward that fits a double but not a float is stored as 0 like a non-finite one, so it
# must be left out of the advantages as one is: not 1.5 for a stored 0 and -0.5 for the rest
grpo-score -c 'while read -r l; do case $l in *"\"sequence_id\": 100,"*) r=1e39 ;; *) r=0 ;; esac
	echo "{\"rewards\": {\"r\": $r}}"; done' -t "$TOK" -x big-m.jsonl in.zst 2> err | grpo-cat > big.jsonl
is "$(grep -o '"advantages":[-0-9.e]*' big.jsonl | sort -u | tr '\n' ' ')" '"advantages":0 ' \
	"a reward too large for a float: left out of the advantages, the rest of its group flat"
grep -q '"zero_std_groups":3' big-m.jsonl
ok $? "and its group counted as zero std: $(grep -o '"zero_std_groups":[0-9]*' big-m.jsonl)"
# two lines for the input's last request: no later request finds the second, so the
# input itself must fail, not be published as if the program had kept to one line.
# Two lines in one write (cat's, whatever the shell: bash's printf writes each line
# apart), as a line that comes after the next request is sent is read as its answer
printf '%s\n' '{"rewards": {"r": 1}}' '{"rewards": {"r": 0}}' > two.jsonl
printf '%s\n' 'while read -r x; do case $x in *"\"sequence_id\": 300,"*) cat two.jsonl ;;
*) echo "{\"rewards\": {\"r\": 1}}" ;; esac; done' > lasttwice.sh
grpo-score -c 'sh lasttwice.sh' -t "$TOK" in.zst 2> err > lasttwice.zst
is "$?:$(wc -c < lasttwice.zst | tr -d ' ')" "1:0" "two answers to the last request: exit status 1, nothing written"
grep -qF "wrote '{\"rewards\": {\"r\": 0}}' before it was asked (one line per request) for sequence 300 of group 3" err
ok $? "naming that sequence: $(cat err)"
# reward names are stored whole or not at all: two names of 70 bytes that differ only at
# the end must not be published cut to the same 63 bytes
L=$(printf '%070d' 0)
grpo-score -c "while read -r l; do echo '{\"rewards\": {\"${L}x\": 1, \"${L}y\": 0}}'; done" -t "$TOK" in.zst \
	2> err > longname.zst
is "$?:$(wc -c < longname.zst | tr -d ' ')" "1:0" "reward names over 63 bytes: exit status 1, nothing written"
grep -q "': a name of over 63 bytes for sequence 100 of group 1" err
ok $? "saying why: $(cut -c 1-300 err)"
grpo-score -c "while read -r l; do echo '{\"rewards\": {\"a\\\\nb\": 1}}'; done" -t "$TOK" in.zst 2> err > ctlname.zst
is "$?:$(wc -c < ctlname.zst | tr -d ' ')" "1:0" "a reward name with a line break: exit status 1, nothing written"
grep -q "': a name holding a control character (a line break, a tab) for sequence 100 of group 1" err
ok $? "saying why: $(cut -c 1-300 err)"
# a name twice: JSON allows it, cJSON would read the first, Python's json the last
grpo-score -c "while read -r l; do echo '{\"rewards\": {\"r\": 1, \"r\": 0}}'; done" -t "$TOK" in.zst \
	2> err > dupname.zst
is "$?:$(wc -c < dupname.zst | tr -d ' ')" "1:0" "a reward named twice in one answer: exit status 1, nothing written"
grep -qF "answered '{\"rewards\": {\"r\": 1, \"r\": 0}}': the key \"r\" appears twice in one object for sequence 100 of group 1" err
ok $? "saying which: $(cat err)"
# later answers keep the first one's names, neither fewer nor others
for kind in fewer other; do
	case $kind in
	fewer) later='{"rewards": {"r": 1}}' want="1 rewards, where its first answer named 2" ;;
	other) later='{"rewards": {"r": 1, "t": 0}}' want="no 's', which its first answer named" ;;
	esac
	printf '%s\n' "while read -r x; do case \$x in *'\"sequence_id\": 100,'*) echo '{\"rewards\": {\"r\": 1, \"s\": 0}}' ;;
	*) echo '$later' ;; esac; done" > names.sh
	grpo-score -c 'sh names.sh' -t "$TOK" in.zst 2> err > names.zst
	is "$?:$(wc -c < names.zst | tr -d ' ')" "1:0" "$kind names than the first answer: exit status 1, nothing written"
	grep -qF "answered '$later': $want for sequence 101 of group 1" err
	ok $? "$kind: $(cat err)"
done
# string ids longer than a message's 63 bytes go to the program whole: the request stays JSON
L=$(printf '%080d' 0)
printf '{"group_id":"g-%s","trajectories":[{"prompt_tokens":[1,2],"response_tokens":%s,"logprobs":[-1,-1,-1,-1],"sequence_id":"s-%s"}]}\n' \
	"$L" "$R" "$L" | grpo-cat --from-json -o long.zst
grpo-score -c "tee req.jsonl | while read -r l; do echo '{\"rewards\": {\"r\": 1}}'; done" -t "$TOK" long.zst > /dev/null 2>&1
grep -qF "{\"sequence_id\": \"s-$L\", \"group_id\": \"g-$L\", \"prompt\": " req.jsonl
ok $? "long string ids are sent whole: $(cut -c 1-200 req.jsonl)"
rollout_group 1 "$R" "$W" | grpo-cat --from-json -o split2.zst
grpo-score -r gsm8k -t "$TOK" in.zst split2.zst 2> err > /dev/null
grep -q 'split2.zst: group 1 came in an earlier input too; each part is normalized over its own members' err
ok $? "a group split across inputs is reported"
# (the second record's sequences under ids of their own: sequence 701 twice,
# the same, would be a copy, dropped: score-repeats.t)
{ rollout_group 7 "$R" "$W"; rollout_group 7 "$W" "$W" | sed 's/"sequence_id":70/"sequence_id":71/g'; } |
	grpo-cat --from-json | grpo-score -r gsm8k -t "$TOK" -a dr_grpo | grpo-cat > merged.jsonl
is "$(wc -l < merged.jsonl | tr -d ' '),$(grep -o '"advantages":[-0-9.e]*' merged.jsonl | tr '\n' ' ')" \
   '1,"advantages":0.75 "advantages":-0.25 "advantages":-0.25 "advantages":-0.25 ' \
   "records of one group in one input are merged and scored together"

mkdir -p bad/rollouts/step_0/rank_0
cp in.zst bad/rollouts/step_0/rank_0/b.zst
printf '%s\n' 'while read -r x; do cat two.jsonl; done' > twice.sh
for kind in crash later hang garbage twice oneline zero; do
	st=1
	case $kind in
	# only the hang gets a short timeout: the others must not be mistaken
	# for it on a busy machine
	crash) cmd='read x; exit 3'; to=60; want='ended without answering for sequence 100 of group 1 (exited with status 3)' ;;
	# EX_TEMPFAIL (a judge's service down, say): the run says "later" in turn
	later) cmd='read x; exit 75'; to=60; st=75
		want='ended without answering for sequence 100 of group 1 (exited with status 75)' ;;
	hang) cmd='sleep 30'; to=0.2; want='did not answer within --reward-timeout 0.2s for sequence 100 of group 1' ;;
	garbage) cmd='read x; echo hello; sleep 30'; to=60; want="answered 'hello': not valid JSON (near byte 1)" ;;
	# two lines an answer: the second must not be taken as the next sequence's
	twice) cmd='sh twice.sh'; to=60; want="wrote '{\"rewards\": {\"r\": 0}}' before it was asked (one line per request) for sequence 101 of group 1" ;;
	# two answers on one line: not the first taken and the second dropped
	oneline) cmd='read x; echo "{\"rewards\": {\"r\": 1}} {\"rewards\": {\"r\": 0}}"; sleep 30'; to=60
		want="answered '{\"rewards\": {\"r\": 1}} {\"rewards\": {\"r\": 0}}': not valid JSON (text after the value" ;;
	# a number JSON forbids: 05 is not known to mean 5
	zero) cmd='read x; echo "{\"rewards\": {\"r\": 05}}"; sleep 30'; to=60
		want="answered '{\"rewards\": {\"r\": 05}}': not valid JSON (near byte 19: 05 is not a number as JSON writes one)" ;;
	esac
	grpo-score -c "$cmd" -T $to -t "$TOK" -o bad/scored bad/rollouts 2> err
	is $? $st "$kind: exit status $st"
	grep -qF "reward program '$cmd' $want" err
	ok $? "$kind: $(cat err)"
	[ ! -d bad/scored/step_0 ] || [ -z "$(ls bad/scored/step_0/rank_0 2>/dev/null)" ]
	ok $? "$kind: nothing published"
	[ -f bad/rollouts/step_0/rank_0/b.zst ] && [ ! -e bad/rollouts/step_0/rank_0/.done/b.zst ] &&
		[ -z "$(ls bad/rollouts/step_0/rank_0/.claimed 2>/dev/null)" ]
	ok $? "$kind: the input is waiting again"
done

# ---- reference logprobs ----
MODEL="$GRPO_TOP/tests/data/hf/qwen2"
printf '%s\n' '{"group_id":5,"trajectories":[{"prompt_tokens":[3,4,5],"response_tokens":[6,7],"logprobs":[-1,-1],"temperature":0.7,"sequence_id":1,"group_id":5},{"prompt_tokens":[8],"response_tokens":[9,10,11],"logprobs":[-1,-1,-1],"sequence_id":2,"group_id":5}]}' |
	grpo-cat --from-json -o small.zst
grpo-score -r length -m 100 --ref "$MODEL" --ref-tokens 4 --device cpu -v small.zst 2> err | grpo-cat > ref.jsonl
ok $? "--ref, split into passes of 4 tokens"
grep -q "reference model $MODEL on the CPU" err
ok $? "-v says where the reference model runs: $(grep reference err)"
got=$(grep -o '"ref_logprobs":\[[^]]*\]' ref.jsonl | tr -d '"a-z_:[]' | tr ',' '\n')
want=$(grpo-cat --model "$MODEL" small.zst | grep -o '"model_logprobs":\[[^]]*\]' | tr -d '"a-z_:[]' | tr ',' '\n')
[ -n "$got" ] && [ "$(echo "$got" | wc -l)" -eq 5 ] && [ "$got" = "$want" ]
ok $? "reference logprobs equal grpo-cat --model's, at each temperature ($(echo $got))"
# on a GPU, the same values in fp32 (1e-4) and in bf16 (0.05)
for p in fp32 bf16; do
	if [ $gpu -ne 0 ]; then
		skip "no GPU: --device cuda --precision $p not run"
		continue
	fi
	gotg=$(grpo-score -r length -m 100 --ref "$MODEL" --ref-tokens 4 --device cuda -P $p small.zst | grpo-cat |
		grep -o '"ref_logprobs":\[[^]]*\]' | tr -d '"a-z_:[]' | tr ',' '\n')
	tol=$([ $p = fp32 ] && echo 1e-4 || echo 0.05)
	printf '%s\n' "$want" > want.txt
	echo "$gotg" | awk -v tol=$tol 'NR == FNR { w[NR] = $1; next } { d = $1 - w[FNR]; if (d < 0) d = -d; if (d > tol) bad++; n++ }
		END { exit !(n == 5 && !bad) }' want.txt -
	ok $? "--device cuda --precision $p: the CPU's reference logprobs within $tol ($(echo $gotg))"
done
grpo-score -r length -m 100 --ref "$MODEL" in.zst > /dev/null 2> err
is $? 1 "a token outside the model's vocabulary: error"
grep -q 'group 1, sequence 100: response token 0 is id 820, outside the reference model' err
ok $? "naming the record: $(cat err)"

# ---- four scorers, one queue, 40 groups ----
mkdir -p q/rollouts/step_0/rank_0
i=1
while [ $i -le 40 ]; do
	rollout_group $((i + 10)) "$R" "$W" | grpo-cat --from-json -o q/rollouts/step_0/rank_0/g$i.zst
	i=$((i + 1))
done
for k in 1 2 3 4; do
	grpo-score -r length -m 100 -o q/scored q/rollouts 2> err$k &
done
wait
cat q/scored/step_0/rank_0/*.zst | grpo-cat | grep -o '"group_id":[0-9]*,"trajectories"' | sort > ids
is "$(wc -l < ids | tr -d ' ')" 40 "four scorers: 40 groups published"
is "$(sort -u ids | wc -l | tr -d ' ')" 40 "each exactly once"
is "$(ls q/rollouts/step_0/rank_0/.done | wc -l | tr -d ' ')" 40 "every input retired"
is "$(cat err1 err2 err3 err4)" "" "no scorer complained"

# ---- kill -9, recover, re-run ----
mkdir -p k/rollouts/step_0/rank_0
i=1
while [ $i -le 6 ]; do
	rollout_group $((i + 60)) "$R" "$W" | grpo-cat --from-json -o k/rollouts/step_0/rank_0/g$i.zst
	i=$((i + 1))
done
cat > slow.sh <<EOF
n=0
while IFS= read -r line; do
	n=\$((n + 1))
	if [ \$n -eq 5 ] && [ -e "$T/hang" ]; then echo \$\$ > "$T/rpid"; exec sleep 300; fi
	echo '{"rewards": {"r": 1}}'
done
EOF
touch hang
grpo-score -c 'sh slow.sh' -T 300 -t "$TOK" -o k/scored k/rollouts 2> /dev/null &
pid=$!
n=0
while [ ! -s rpid ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
kill -9 $pid
wait $pid 2> /dev/null
[ -s rpid ] && kill -9 "$(cat rpid)" 2> /dev/null
rm -f hang
is "$(ls k/rollouts/step_0/rank_0/.claimed | wc -l | tr -d ' ')" 1 "killed while holding one claim"
grpo-spool recover k
ok $? "grpo-spool recover"
grpo-score -c 'sh slow.sh' -t "$TOK" -o k/scored k/rollouts
ok $? "re-run"
cat k/scored/step_0/rank_0/*.zst | grpo-cat | grep -o '"group_id":[0-9]*,"trajectories"' | sort > kids
is "$(wc -l < kids | tr -d ' '),$(sort -u kids | wc -l | tr -d ' ')" "6,6" "nothing lost, nothing duplicated"
is "$(ls k/rollouts/step_0/rank_0/.done | wc -l | tr -d ' ')" 6 "every input retired"

# ---- killed after publishing, before retiring the input: one metrics line ----
# The re-run drops its copy of the output. It appended a line for the input
# again, so one killed after writing its line left two (a step's reward mean
# counted the input twice); one killed before must still get its line.
mkdir -p dm0/rollouts/step_3/rank_1 && cp in.zst dm0/rollouts/step_3/rank_1/a.zst
GRPO_FSYS_TRACE=1 grpo-score -r gsm8k -t "$TOK" -o dm0/scored dm0/rollouts 2> trace
# the output's publishing: the first rename flushed (the record of what was scored is the second)
n=$(awk '$1 == "fsys" { if (!n && prev == "rename_noreplace" && $3 == "fsync_dir") n = $2; prev = $3 } END { print n }' trace)
for c in "$n before" "$((n + 1)) after"; do
	set -- $c
	mkdir -p dm$1/rollouts/step_3/rank_1 && cp in.zst dm$1/rollouts/step_3/rank_1/a.zst
	echo '{"input":"other/rollouts/step_3/rank_1/a.zst","groups":1}' > dm$1.jsonl
	GRPO_FSYS_CRASH_AT=$1 grpo-score -r gsm8k -t "$TOK" -o dm$1/scored -x dm$1.jsonl dm$1/rollouts 2> /dev/null
	is "$?:$(ls dm$1/scored/step_3/rank_1):$(grep -c '^{"input":"dm' dm$1.jsonl)" "86:a.zst:$([ $2 = after ] && echo 1 || echo 0)" \
		"killed after publishing, $2 the metrics line, the input still claimed"
	grpo-spool recover dm$1 && grpo-score -r gsm8k -t "$TOK" -o dm$1/scored -x dm$1.jsonl dm$1/rollouts 2> /dev/null
	is "$?:$(ls dm$1/rollouts/step_3/rank_1/.done):$(grep -c "^{\"input\":\"dm$1/rollouts/step_3/rank_1/a.zst\"," dm$1.jsonl)" \
		"0:a.zst:1" "recovered and re-run: the input retired, with one metrics line"
done
grpo-score -r gsm8k -t "$TOK" -o dm/scored -x dmf.jsonl in.zst 2> /dev/null &&
	grpo-score -r gsm8k -t "$TOK" -o dm/scored -x dmf.jsonl in.zst 2> /dev/null
is "$?:$(wc -l < dmf.jsonl | tr -d ' ')" "0:1" "a named file scored twice into -o: one line"
grpo-score -r gsm8k -t "$TOK" -o dms/scored -x dms.jsonl < in.zst 2> /dev/null &&
	grpo-score -r gsm8k -t "$TOK" -o dms/scored -x dms.jsonl < in.zst 2> /dev/null
is "$?:$(wc -l < dms.jsonl | tr -d ' ')" "0:1" "standard input scored twice into -o: one line, the published copy's"
exit $_failed
