#!/bin/sh
# An option that only means something with another (its parent) is refused
# without it, exit 2, naming both, rather than taken and ignored: each tool
# alike. Nothing is read: the refusal comes before the inputs, which do
# not exist.
. "$GRPO_TOP/tests/cli/lib.sh"
N=$T/none
cat > "$T/cases" <<EOF
grpo-score|--ref-tokens goes with --ref DIR|-r length -m 5 --ref-tokens 100 $N.zst
grpo-score|--ref-tokens goes with --ref DIR|-r length -m 5 --ref none --ref-tokens 100 $N.zst
grpo-score|--reward-timeout goes with --reward-cmd|-r length -m 5 --reward-timeout 5 $N.zst
grpo-score|--reward-jobs goes with --reward-cmd|-r length -m 5 --reward-jobs 4 $N.zst
grpo-score|--reward-groups goes with --reward-cmd|-r length -m 5 --reward-groups $N.zst
grpo-score|--precision goes with --ref DIR (the reference model is all that runs on the GPU)|-r length -m 5 --precision fp32 $N.zst
grpo-score|--max-len goes with --reward length or cosine|-r gsm8k --max-len 5 $N.zst
grpo-score|--overlong-buffer goes with --reward length|-r gsm8k --overlong-buffer 5 $N.zst
grpo-step|--on-publish-fail goes with --on-publish|--batches $N -o $N.p --on-publish-fail stop
grpo-step|--rank-timeout goes with --rank|--batches $N -o $N.p --rank-timeout 5
grpo-step|--total-steps goes with --lr-schedule cosine or linear|--batches $N -o $N.p --total-steps 100
grpo-step|--debug-tokens goes with --debug-table|--batches $N -o $N.p --debug-tokens
grpo-pack|--model DIR goes with --cost flops (the default cost, tokens, reads no model)|-T 8 --model $N -o $N.q $N.zst
grpo-pack|--min-tokens, --timeout and --rescan go with --watch|-T 8 --rescan 5 -o $N.q $N.zst
grpo-collect|--max-lag goes with -o: the trainer's newest step is that of the spool's policy queue|--server http://127.0.0.1:9 --prompts $N.jsonl --max-lag 1
grpo-spool|consume: --rescan goes with --watch (or --poll)|consume $N --rescan 5 -- true
grpo-score|--precision goes with --device auto or cuda (--device cpu runs nothing on the GPU)|-r length -m 5 --ref $N --device cpu --precision fp32 $N.zst
grpo-step|--precision goes with --device auto or cuda (--device cpu runs nothing on the GPU)|--batches $N -o $N.p --device cpu --precision bf16
grpo-step|--recompute goes with --device auto or cuda (--device cpu runs nothing on the GPU)|--batches $N -o $N.p --recompute --device cpu
grpo-collect|--precision goes with --device auto or cuda (--device cpu runs nothing on the GPU)|--model $N --prompts $N.jsonl --device cpu --precision fp32
EOF
plan $(($(wc -l < "$T/cases") + 6))
while IFS='|' read -r tool want args; do
	$tool $args < /dev/null > /dev/null 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err")" "2:$tool: $want" "$tool $args: refused"
done < "$T/cases"
[ ! -e "$N" ] && [ ! -e "$N.p" ] && [ ! -e "$N.q" ]
ok $? "nothing made"

# with the parent, taken (the run fails later, reading what is not there)
grpo-score -r length -m 5 --reward-cmd true --reward-timeout 5 --reward-jobs 4 --reward-groups "$N.zst" > /dev/null 2> "$T/err"
is "$?:$(grep -c 'goes with' "$T/err")" "1:0" "grpo-score --reward-cmd --reward-timeout --reward-jobs --reward-groups: taken"
grpo-step --batches "$N" -o "$T/p" --rank 0 --rank-timeout 5 --on-publish true --on-publish-fail stop \
	--lr-schedule cosine --total-steps 100 > /dev/null 2> "$T/err"
is "$?:$(grep -c 'goes with' "$T/err")" "2:0" "grpo-step: each with its parent taken (the missing --model is what fails)"
# the GPU's options with --device auto (the CPU where there is no GPU) or
# GRPO_DEVICE=cpu, the machine's default, which a command line written for
# any machine may meet: taken (the run fails later, its model not there)
for dev in "--device auto" ""; do
	GRPO_DEVICE=cpu grpo-step --batches "$N" -o "$T/p" --model "$N" $dev --precision fp32 --recompute \
		> /dev/null 2> "$T/err"
	is "$?:$(grep -c 'goes with' "$T/err")" "1:0" "grpo-step ${dev:-GRPO_DEVICE=cpu} --precision --recompute: taken"
done
GRPO_DEVICE=cpu grpo-score -r length -m 5 --ref "$N" --precision fp32 "$N.zst" > /dev/null 2> "$T/err"
is "$?:$(grep -c 'goes with' "$T/err")" "1:0" "grpo-score GRPO_DEVICE=cpu --precision: taken"
exit $_failed
