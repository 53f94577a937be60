#!/bin/sh
# The modes of what the tools create follow the umask, as cp's and mkdir's
# do: every published file, checkpoint, DONE, claim record, lock, cursor,
# metrics line, archive and plot, and every directory. Fixed 0644 and 0755
# left a spool created under umask 002 unusable by another member of the
# group (no claim by rename in 0755 directories, no lock on a 0644 file);
# under 077 all of it must stay the owner's alone.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
task="$GRPO_TOP/examples/addition"
round() { # round SPOOL: a round of the pipeline and every writer of grpo-spool
	s=$1
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 --vocab 13 \
		--eos 12 --tokenizer "$task/tokenizer.json" --seed 1 -o "$s/init" &&
	grpo-collect --model "$s/init" --prompts "$task/prompts.jsonl" -n 2 --max-tokens 2 --seed 1 \
		--cursor "$s/cursor" -o "$s/rollouts" &&
	grpo-score --reward gsm8k --ref "$s/init" --metrics "$s/score.jsonl" -o "$s/scored" "$s/rollouts" &&
	grpo-pack --seq-len 512 --step 1 --flush -o "$s/batches" --metrics "$s/pack.jsonl" "$s/scored" &&
	grpo-step --model "$s/init" --batches "$s/batches" --step 1 -o "$s/policy" --lr 0.01 \
		--metrics "$s/step.jsonl" &&
	grpo-collect --model "$s/policy" --prompts "$task/prompts.jsonl" -n 2 --max-tokens 2 --seed 2 \
		--cursor "$s/cursor" -o "$s/rollouts" &&
	# the claim record, as the consumer's command sees it
	grpo-spool consume "$s/rollouts" -- sh -c 'find "${1%/*}/.claimed" -type f -printf "%m\n"' sh \
		> "$s.claim" &&
	grpo-spool gc "$s" --keep-last 1 --archive "$s/archive" &&
	{ ! command -v gnuplot > /dev/null || grpo-spool plot "$s" -o "$s/plot.png"; }
}
for u in 002 077; do
	file=$(printf %o $((0666 & ~0$u))) dir=$(printf %o $((0777 & ~0$u)))
	(umask $u && round "$T/u$u") > "$T/u$u.out" 2>&1
	is "$?" 0 "umask $u: a round, a consume, a gc with archive, a plot"
	[ -s "$T/u$u/archive/rollouts-step_0.tar.zst" ] && [ -s "$T/u$u/policy/step_1/model.safetensors" ] &&
		[ -s "$T/u$u/cursor" ] && [ -f "$T/u$u/batches/step_1/DONE" ]
	ok $? "umask $u: the archive, the checkpoint, the cursor and DONE are there"
	find "$T/u$u" \( -type f ! -perm $file -printf '%m %P\n' \) -o \( -type d ! -perm $dir -printf '%m %P/\n' \) \
		> "$T/u$u.bad"
	is "$(wc -l < "$T/u$u.bad"):$(sort -u "$T/u$u.claim")" "0:$file" \
		"umask $u: every file (claim records too) is $file, every directory $dir"
	sed 's/^/# /' "$T/u$u.bad" | head -20
done
