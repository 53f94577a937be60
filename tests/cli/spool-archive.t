#!/bin/sh
# grpo-spool gc --archive never replaces an archive: a step removed again
# (a late file made it anew) gets QUEUE-step_N.2.tar.zst with what the first
# lacks, and grpo-cat reads the archives together, named or concatenated;
# a failed write names its reason; a step that cannot be archived whole is
# kept, and the others are still archived and removed.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10

ex="$GRPO_TOP/examples/gsm8k-groups.jsonl"
S=$T/spool
q=$S/rollouts
for s in 0 1; do for r in 0 1; do
	grpo-cat --from-json -o "$q/step_$s/rank_$r/g$r.zst" "$ex" || exit 1
done; done
grpo-spool consume "$q" -- true
grpo-spool gc "$S" --keep-last 1 --archive "$T/arch"
is "$?:$(ls "$T/arch")" "0:rollouts-step_0.tar.zst" "gc archives step 0 and removes it"
cp "$T/arch/rollouts-step_0.tar.zst" "$T/first.tar.zst"

# A producer late for step 0 publishes into it again; gc removes it again.
printf '%s\n' "$(head -n 1 "$ex")" | grpo-cat --from-json -o "$q/step_0/rank_1/late.zst"
grpo-spool consume "$q" -- true
grpo-spool gc "$S" --keep-last 1 --archive "$T/arch"
is "$?:$(ls "$T/arch" | tr '\n' ' ')" "0:rollouts-step_0.2.tar.zst rollouts-step_0.tar.zst " \
	"removed again, step 0 gets a second archive"
cmp -s "$T/first.tar.zst" "$T/arch/rollouts-step_0.tar.zst"
is "$?" 0 "the first archive is not replaced: same bytes"
is "$(zstd -dc "$T/arch/rollouts-step_0.2.tar.zst" | tar -tf - | tr '\n' ' ')" "rollouts/step_0/rank_1/late.zst " \
	"the second holds only the late file"
grpo-cat "$T/arch/rollouts-step_0.tar.zst" "$T/arch/rollouts-step_0.2.tar.zst" | wc -l | tr -d ' ' > "$T/n"
is "$(cat "$T/n")" 5 "grpo-cat reads both: 2 files of 2 groups and the late one"
cat "$T/arch"/rollouts-step_0*.tar.zst | grpo-cat | wc -l | tr -d ' ' > "$T/n"
is "$(cat "$T/n")" 5 "and the two concatenated, through a pipe"

# A write that fails (here the file size limit, as a full disk would) says why.
for s in 2 3; do for r in 0 1; do
	grpo-cat --from-json -o "$q/step_$s/rank_$r/g$r.zst" "$ex" || exit 1
done; done
grpo-spool consume "$q" -- true
(trap '' XFSZ; ulimit -f 1; grpo-spool gc "$S" --keep-last 1 --archive "$T/small") 2> "$T/err"
st=$?
grep -q "File too large" "$T/err"
is "$st:$?" "1:0" "a failed archive write names the system's reason: $(cat "$T/err")"
is "$(ls -A "$T/small" | wc -l | tr -d ' '):$(ls "$q" | tr '\n' ' ')" "0:step_1 step_2 step_3 " \
	"and leaves no temporary, removing nothing"

# A step holding a directory that no archive would hold is kept, said; the
# steps after it are archived and removed all the same, so that one stray
# directory does not stop a queue's retention for good.
S2=$T/spool2
q2=$S2/rollouts
for s in 4 5 6; do
	grpo-cat --from-json -o "$q2/step_$s/rank_0/g.zst" "$ex" || exit 1
done
mkdir "$q2/step_4/notes" && echo mine > "$q2/step_4/notes/n.txt"
grpo-spool consume "$q2" -- true
grpo-spool gc "$S2" --keep-last 1 --archive "$T/arch2" 2> "$T/err"
is "$?:$(cat "$T/err")" \
	"1:grpo-spool: $q2/step_4/notes: a directory that is not a rank's; not archived, so the step is kept" \
	"a step holding another directory is kept, exit 1, said"
is "$(ls "$q2" | tr '\n' ' '):$(ls "$T/arch2" | tr '\n' ' ')" "step_4 step_6 :rollouts-step_5.tar.zst " \
	"the next old step is still archived and removed"
