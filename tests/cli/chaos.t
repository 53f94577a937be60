#!/bin/sh
# The loop of examples/demo.sh (collect, score, pack, step through one
# spool), each stage of its second round killed at one file-system call
# after another (GRPO_FSYS_CRASH_AT), then grpo-spool recover and the round
# run again, as grpo(7) says: the spool must end as a run never killed left
# it, byte for byte (the same rollouts, scored groups, micro-batches and
# policy steps, nothing waiting or claimed, no temporaries).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
head -n 6 "$GRPO_TOP/examples/addition/prompts.jsonl" > "$T/prompts.jsonl"
round() { # round SPOOL K [STAGE N]: the demo's step K, STAGE crashing at its Nth call
	_s=$1 _k=$2 _cs=${3:-} _cn=${4:-}
	_m="$_s/policy"
	[ -d "$_s/policy/step_0" ] || _m="$_s/init"
	if [ ! -f "$_s/batches/step_$_k/DONE" ]; then
		stage collect grpo-collect --model "$_m" --prompts "$T/prompts.jsonl" -n 4 --max-tokens 2 \
			--seed "$_k" -o "$_s/rollouts" || return
		stage score grpo-score --reward gsm8k --ref "$_s/init" -o "$_s/scored" "$_s/rollouts" || return
	fi
	stage pack grpo-pack --seq-len 64 --step "$_k" --flush -o "$_s/batches" "$_s/scored" || return
	stage step grpo-step --model "$_s/init" --batches "$_s/batches" --step "$_k" -o "$_s/policy" \
		--lr 0.01 --entropy-coef 0.02
}
stage() { # stage NAME CMD...: CMD, with the crash point when NAME is the stage to crash
	_st=$1
	shift
	if [ "$_st" != "$_cs" ]; then "$@"
	elif [ "$_cn" = trace ]; then GRPO_FSYS_TRACE=1 "$@"
	else GRPO_FSYS_CRASH_AT=$_cn "$@"; fi 2>> "$T/err"
}
digest() { # what must match: every published file's bytes (claim records hold pids and
	# times, lock files pids: names only), the directories, and what status says
	(cd "$1" && find . -path ./init -prune -o -type f -print | LC_ALL=C sort | while read -r _f; do
		case $_f in
		*/.done/* | */.claimed/* | *.lock) echo "$_f" ;;
		*) echo "$_f $(cksum < "$_f")" ;;
		esac
	done
	find . -path ./init -prune -o -type d -print | LC_ALL=C sort)
	grpo-spool status "$1"
}
grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 --vocab 13 \
	--eos 12 --tokenizer "$GRPO_TOP/examples/addition/tokenizer.json" --seed 1 -o "$T/ref/init" 2> "$T/err"
round "$T/ref" 1 && cp -R "$T/ref" "$T/one" && round "$T/ref" 2 && grpo-spool recover --tmp-age 0 "$T/ref"
is "$?:$(cat "$T/err")" "0:" "two rounds, never killed"
digest "$T/ref" > "$T/ref.d"
for st in collect score pack step; do
	# how many calls the stage makes in round 2; a crash point every so many of them, from
	# the first (nothing done yet) to the last (all published, the input not yet retired)
	rm -rf "$T/w" && cp -R "$T/one" "$T/w"
	round "$T/w" 2 $st trace
	calls=$(grep -c "^fsys [0-9]" "$T/err")
	: > "$T/err"
	by=$((calls / 12 + 1))
	bad= n=1 tried=0
	while [ $n -le "$calls" ]; do
		rm -rf "$T/w" && cp -R "$T/one" "$T/w"
		round "$T/w" 2 $st $n
		rc=$?
		grpo-spool recover --tmp-age 0 "$T/w" && round "$T/w" 2 && grpo-spool recover --tmp-age 0 "$T/w"
		rc2=$?
		if [ $rc -ne 86 ] || [ $rc2 -ne 0 ] || ! digest "$T/w" | cmp -s - "$T/ref.d"; then
			bad="$bad $n"
		fi
		[ $n -lt "$calls" ] && [ $((n + by)) -gt "$calls" ] && n=$((calls - by))
		n=$((n + by)) tried=$((tried + 1))
	done
	is "$calls:${bad:- none}" "$calls: none" \
		"grpo-$st killed at $tried of its $calls calls, recovered, run again: the spool as never killed"
done
