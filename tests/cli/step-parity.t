#!/bin/sh
# grpo-step against PyTorch + transformers: one step over the groups of
# tests/data/hf/step-input.jsonl with the tiny qwen2 (tied, q/k/v bias) and
# qwen3 (q/k norm, bfloat16) models, for --loss-agg grpo and dapo, at β 0 and
# at β 0.1 with k3; the metrics line's loss and grad_norm (before clipping)
# must be those that make_step_expected.py computed in float64 into
# FAMILY/step-expected.json.
#
# Tolerance: 1e-5 relative (with 1e-7 absolute for a value near 0). The C
# model runs in float32 and forms the loss in double from its float32
# logprobs; on the committed fixtures the worst difference from float64 is
# 4e-7 relative (loss) and 2e-7 (grad norm), so 1e-5 leaves 25 times that
# for other compilers and BLAS, while a wrong temperature, mask, weight or
# clip moves either number by 1e-3 or more (--clip-high 0.25 for 0.2 moves
# the loss by 3%).
. "$GRPO_TOP/tests/cli/lib.sh"
hf="$GRPO_TOP/tests/data/hf"
fams="qwen2 qwen3"
configs="grpo:0 dapo:0 grpo:0.1 dapo:0.1"
plan 10

grpo-cat --from-json -o "$T/groups.zst" "$hf/step-input.jsonl" || exit 1
grpo-pack -T 64 -W 1 -o "$T/b" "$T/groups.zst" || exit 1
close() { # close GOT WANT
	awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
		exit !(a != "" && b != "" && d <= 1e-5 * m + 1e-7) }'
}
for fam in $fams; do
	want="$hf/$fam/step-expected.json"
	if [ ! -f "$want" ]; then
		skip "$fam: no $want yet (made by make_step_expected.py on a machine with PyTorch)"
		for c in $configs; do skip "$fam: no step-expected.json"; done
		continue
	fi
	sum=$(sha256sum "$hf/step-input.jsonl" | cut -d' ' -f1)
	grep -q "\"input_sha256\": \"$sum\"" "$want"
	ok $? "$fam: step-expected.json was made from this step-input.jsonl"
	for c in $configs; do
		agg=${c%:*} beta=${c#*:}
		args="--loss-agg $agg --beta $beta --kl k3"
		line=$(grep -F "\"args\": \"$args\"" "$want")
		grpo-step --model "$hf/$fam" --batches "$T/b" -o "$T/p-$fam-$agg-$beta" $args --lr 0 \
			--metrics "$T/m-$fam-$agg-$beta" 2> "$T/err" || { echo "# grpo-step $args failed:"; sed 's/^/# /' "$T/err"; }
		okk=0
		for k in loss grad_norm; do
			got=$(sed -n "s/.*\"$k\":\([-0-9.e+]*\).*/\1/p" "$T/m-$fam-$agg-$beta")
			exp=$(echo "$line" | sed -n "s/.*\"$k\": \([-0-9.e+]*\).*/\1/p")
			close "$got" "$exp" || { okk=1; echo "# $k: grpo-step $got, PyTorch $exp"; }
		done
		ok $okk "$fam: $args: loss and grad norm match PyTorch within 1e-5"
	done
done
exit $_failed
