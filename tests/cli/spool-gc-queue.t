#!/bin/sh
# grpo-spool gc --queue NAME prunes that queue: a name the spool has no
# queue of (a typo, or "rollouts/" as a shell completes it) must not pass
# for a queue with nothing to prune, which leaves a cron job filling the
# disk in silence. --queue policy --archive archives the checkpoints it
# removes, which are files of the step itself, not of rank directories.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 9

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
S=$T/spool
for s in 0 1 2; do grpo-cat --from-json -o "$S/rollouts/step_$s/rank_0/g.zst" "$ex" || exit 1; done
grpo-spool consume "$S/rollouts" -- true
steps() { ls "$S/rollouts" | tr '\n' ' '; }

grpo-spool gc "$S" --keep-last 1 --queue rollout 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "1:grpo-spool: $S/rollout: no such queue:step_0 step_1 step_2 " \
	"a queue the spool does not have is an error, and nothing is pruned"
grpo-spool gc "$S" --keep-last 1 --queue rollouts --queue scored 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "1:grpo-spool: $S/scored: no such queue:step_0 step_1 step_2 " \
	"one missing among several: nothing is pruned"
grpo-spool gc "$S" --keep-last 2 --queue rollouts/ 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "0::step_1 step_2 " "rollouts/, as a shell completes it, is the queue rollouts"
grpo-spool gc "$S" --keep-last 1 --queue rollouts 2> "$T/err"
is "$?:$(cat "$T/err"):$(steps)" "0::step_2 " "the queue named is pruned"

# A checkpoint is policy/step_N/{config.json,model.safetensors,optim.bin}: no
# rank directories. Removed with --archive, it must be in the archive.
for s in 1 2; do
	mkdir -p "$S/policy/step_$s" && echo "{\"step\":$s}" > "$S/policy/step_$s/config.json" &&
		head -c 5000 /dev/urandom > "$S/policy/step_$s/optim.bin" || exit 1
done
cp "$S/policy/step_1/optim.bin" "$T/optim.1"
grpo-spool gc "$S" --keep-last 1 --queue policy --archive "$T/arch" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$S/policy")" "0::step_2" "gc --queue policy --archive removes the old checkpoint"
members=$(zstd -dc "$T/arch/policy-step_1.tar.zst" 2>/dev/null | tar -tf - 2>/dev/null | LC_ALL=C sort | tr '\n' ' ')
is "$members" "policy/step_1/config.json policy/step_1/optim.bin " "after archiving its files"
mkdir "$T/x" && zstd -dc "$T/arch/policy-step_1.tar.zst" 2>/dev/null | (cd "$T/x" && tar -xf - 2>/dev/null)
cmp -s "$T/x/policy/step_1/optim.bin" "$T/optim.1"
is "$?" 0 "byte for byte"
mkdir -p "$S/policy/step_3/sub" && echo x > "$S/policy/step_3/sub/f" && mkdir -p "$S/policy/step_4"
grpo-spool gc "$S" --keep-last 1 --queue policy --archive "$T/arch" 2> "$T/err"
is "$?:$(ls "$S/policy" | tr '\n' ' ')" "1:step_3 step_4 " \
	"a step holding a directory that is not a rank's is kept, not removed unarchived: $(cat "$T/err")"
rm -rf "$S/policy/step_3/sub"
mkdir -p "$S/rollouts/step_5/rank_0/sub" "$S/rollouts/step_6" && echo x > "$S/rollouts/step_5/rank_0/sub/f"
grpo-spool gc "$S" --keep-last 1 --queue rollouts --archive "$T/arch" 2> "$T/err"
is "$?:$(ls "$S/rollouts" | tr '\n' ' ')" "1:step_5 step_6 " \
	"so is one holding a directory in a rank directory: $(cat "$T/err")"
