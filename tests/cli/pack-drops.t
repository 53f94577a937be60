#!/bin/sh
# grpo-pack from cron (a queue, no --watch): a dropped sequence is reported
# once, in the step that publishes, even when earlier runs published
# nothing and left its file queued.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 12

d="$GRPO_TOP/tests/cli/pack"
q="$T/s/scored"
mkdir -p "$q/step_0/rank_0"
grpo-cat --from-json -o "$q/step_0/rank_0/g1.zst" "$d/tiny.jsonl"
pack() { grpo-pack -T 5 --overlong skip -b 3 -o "$T/s/batches" "$@" "$q"; }

# tiny: 5, 6 and 3 tokens; at T=5 the 6 is dropped, 2 are left, -b 3 waits
pack 2> "$T/err1"
pack 2> "$T/err2"
is "$(cat "$T/err1" "$T/err2")" "" "two runs without a full step: nothing published, the drop not yet reported"
[ ! -e "$T/s/batches/step_1" ] && [ -f "$q/step_0/rank_0/g1.zst" ]
is "$?" 0 "the file waits in the queue"
sed 's/"sequence_id":\([0-9]*\)/"sequence_id":5\1/g' "$d/tiny.jsonl" | grpo-cat --from-json -o "$q/step_0/rank_0/g2.zst"
pack 2> "$T/err3"
is "$(cat "$T/err3")" "grpo-pack: step 1: dropped 2 overlong (longer than --seq-len 5)
grpo-pack: step 1: warning: 1 sequence sampled from policy versions after 0 (up to 1): is the batches queue \
behind the scored one (--step)?" "with a full step: both files' drops reported once (and tiny's version 1, early)"
grep -q '"dropped":{"stale":0,"overlong":2,"empty":0}' "$T/s/batches/step_1/DONE"
is "$?" 0 "and recorded in its manifest"
pack --flush 2> "$T/err4"
is "$(cat "$T/err4")" "" "the last sequence in a flush step: no drop reported again"
grep -q '"dropped":{"stale":0,"overlong":0,"empty":0}' "$T/s/batches/step_2/DONE"
is "$?" 0 "nor recorded again"
ids=$(cat "$T/s/batches"/step_*/rank_*/mb_*.zst | grpo-cat --json | grep -o '"sequence_ids":\[[0-9,]*\]' |
	grep -o '[0-9][0-9]*' | sort -n | tr '\n' ' ')
is "$ids" "10 20 510 520 " "every kept sequence packed exactly once"

# --max-lag: a step is full only with B sequences that are not stale. tiny
# at step 2, --max-lag 0: two of policy_version 0 (stale), one of 1.
q="$T/l/scored"
mkdir -p "$q/step_0/rank_0"
grpo-cat --from-json -o "$q/step_0/rank_0/g1.zst" "$d/tiny.jsonl"
lag() { grpo-pack -T 8 -b 2 --max-lag 0 -o "$T/l/batches" "$@" "$q"; }
lag --step 2 2> "$T/err5"
[ ! -e "$T/l/batches/step_2" ] && [ ! -e "$q/step_0/rank_0/.done/g1.zst" ] && [ ! -s "$T/err5" ]
is "$?" 0 "-b 2 with one fresh and two stale sequences queued: no short step, the file waits"
sed -n 's/"sequence_id":20/"sequence_id":520/p' "$d/tiny.jsonl" | grpo-cat --from-json -o "$q/step_0/rank_0/g2.zst"
lag --step 2 2> "$T/err6"
is "$(ls "$T/l/batches" | tr '\n' ' ')|$(cat "$T/err6")" "step_2 |grpo-pack: step 2: dropped 2 stale (policy_version below 1, --max-lag 0)" \
	"with one more of policy_version 1: a full step, the stale reported once"
grep -q '"sequences":2,.*"dropped":{"stale":2,' "$T/l/batches/step_2/DONE" &&
	[ -e "$q/step_0/rank_0/.done/g1.zst" ] && [ -e "$q/step_0/rank_0/.done/g2.zst" ]
is "$?" 0 "of 2 sequences, both files retired"

# sequences from a queue sampled after the step's policy (a batches queue
# behind the scored one): packed, and said, each step that packs them; a
# plain file's versions are an import's, and nothing is said of them
mkdir -p "$T/fq/scored/step_1/rank_0"
grpo-cat --from-json -o "$T/fq/scored/step_1/rank_0/t.zst" "$d/tiny.jsonl"
grpo-pack -T 16 -b 3 -o "$T/fq/batches" "$T/fq/scored" 2> "$T/err7"
is "$?:$(cat "$T/err7")" "0:grpo-pack: step 1: warning: 1 sequence sampled from policy versions after 0 (up to 1): \
is the batches queue behind the scored one (--step)?" "a queued sequence of policy_version 1 in step 1: a warning"
cp "$T/fq/scored/step_1/rank_0/t.zst" "$T/t.zst"
grpo-pack -T 16 "$T/t.zst" > /dev/null 2> "$T/err8"
is "$?:$(cat "$T/err8")" "0:" "a copy of the same file named: nothing said"
