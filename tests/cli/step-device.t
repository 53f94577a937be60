#!/bin/sh
# grpo-step --device and --precision: word values checked (GRPO_DEVICE too); --device cuda
# without a GPU exits 69 saying why and publishes nothing; on a GPU, one step
# there equals the same step on the CPU (fp32: loss and gradient norm to
# 1e-5 relative; bf16: to a percent), and the metrics say where it ran;
# its checkpoint is the same byte for byte whether the weights and moments
# came back through page-locked host arrays or pageable ones
# (GRPO_CUDA_PIN=0), and --on-publish forks with them page-locked;
# --recompute gives the same checkpoint byte for byte from a GPU model that
# holds fewer bytes (and GRPO_DEVICE=cpu ignores it); the LM head fused with the
# loss (the default; GRPO_CUDA_FUSED_HEAD=0 gives the two phases; each token's gradient checked against the
# host's) gives the two phases' loss and gradient norm, and with --recompute
# its own checkpoint byte for byte.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 20

d="$GRPO_TOP/tests/cli/step"
grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
grpo-cat --from-json -o "$T/groups.zst" "$d/groups.jsonl" || exit 1
grpo-pack -T 64 -W 1 -o "$T/b" "$T/groups.zst" || exit 1

grpo-step --model "$T/model" --batches "$T/b" -o "$T/px" --device tpu 2> "$T/err"
is $? 2 "--device tpu: usage error"
grep -q -- "--device: expected one of auto, cpu, cuda, got 'tpu'" "$T/err"; ok $? "naming the words"
GRPO_DEVICE=tpu grpo-step --model "$T/model" --batches "$T/b" -o "$T/px" 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-step: GRPO_DEVICE: expected one of auto, cpu, cuda, got 'tpu'" \
	"GRPO_DEVICE, --device's default, is checked as the option is"
grpo-step --model "$T/model" --batches "$T/b" -o "$T/px" --precision fp16 2> /dev/null
is $? 2 "--precision fp16: usage error"

# the reference: the CPU
grpo-step --model "$T/model" --batches "$T/b" -o "$T/pc" --device cpu --lr 1e-3 --metrics "$T/cpu.jsonl" || exit 1
grep -q '"device":"cpu","gpu_bytes":0' "$T/cpu.jsonl"; ok $? "--device cpu: the metrics say cpu, 0 GPU bytes"
GRPO_DEVICE=cpu grpo-step --model "$T/model" --batches "$T/b" -o "$T/pcr" --recompute --lr 1e-3 || exit 1
cmp "$T/pc/step_1/optim.bin" "$T/pcr/step_1/optim.bin" && cmp "$T/pc/step_1/model.safetensors" "$T/pcr/step_1/model.safetensors"
ok $? "--recompute with GRPO_DEVICE=cpu: ignored, the same checkpoint (--device cpu refuses it: cli-depends.t)"

grpo-step --model "$T/model" --batches "$T/b" -o "$T/pg" --device cuda --precision fp32 --lr 1e-3 \
	--metrics "$T/gpu.jsonl" --on-publish 'echo "$GRPO_STEP" > "$GRPO_POLICY_QUEUE/hook"' 2> "$T/err"
st=$?
if [ $st -eq 69 ]; then
	grep -Eq 'device cuda: (no GPU to run on|this build has no CUDA path)' "$T/err"
	ok $? "--device cuda without a GPU: 69, saying why: $(cat "$T/err")"
	[ ! -d "$T/pg" ]; ok $? "and nothing is published"
	skip "no GPU: the copies through pinned and pageable host arrays not compared"
	skip "no GPU: --on-publish not run beside a GPU model"
	skip "no GPU: --recompute not compared"
	skip "no GPU: --recompute's GPU bytes not compared"
	skip "no GPU: GRPO_CUDA_FUSED_HEAD=1 not compared with the two phases"
	skip "no GPU: GRPO_CUDA_FUSED_HEAD=1 --recompute not compared"
	for p in fp32 bf16; do
		skip "no GPU: --device cuda --precision $p not compared with the CPU"
		skip "no GPU: --device cuda --precision $p not compared with the CPU"
		skip "no GPU: --device cuda --precision $p not compared with the CPU"
	done
	exit 0
fi
is $st 0 "--device cuda --precision fp32 trains on the GPU here"
[ -s "$T/pg/step_1/model.safetensors" ]; ok $? "and publishes step_1"
is "$(cat "$T/pg/hook" 2>&1)" 1 "--on-publish runs (forked beside the page-locked host arrays)"
GRPO_CUDA_PIN=0 grpo-step --model "$T/model" --batches "$T/b" -o "$T/pp" --device cuda --precision fp32 --lr 1e-3 ||
	echo "# the step with pageable host arrays failed"
cmp "$T/pg/step_1/optim.bin" "$T/pp/step_1/optim.bin" && cmp "$T/pg/step_1/model.safetensors" "$T/pp/step_1/model.safetensors"
ok $? "the same checkpoint, byte for byte, through pageable host arrays (GRPO_CUDA_PIN=0)"
grpo-step --model "$T/model" --batches "$T/b" -o "$T/pb" --device cuda --lr 1e-3 --metrics "$T/bf16.jsonl" ||
	echo "# bf16 step failed"
grpo-step --model "$T/model" --batches "$T/b" -o "$T/pr" --device cuda --precision fp32 --recompute --lr 1e-3 \
	--metrics "$T/rc.jsonl" || echo "# the step with --recompute failed"
cmp "$T/pg/step_1/optim.bin" "$T/pr/step_1/optim.bin" && cmp "$T/pg/step_1/model.safetensors" "$T/pr/step_1/model.safetensors"
ok $? "--recompute: the same checkpoint, byte for byte"

for f in 0 1; do
	GRPO_CUDA_FUSED_HEAD=$f GRPO_CUDA_FUSED_CHECK=1 grpo-step --model "$T/model" --batches "$T/b" -o "$T/pf$f" \
		--device cuda --precision fp32 --lr 1e-3 --metrics "$T/fused$f.jsonl" || echo "# the step with GRPO_CUDA_FUSED_HEAD=$f failed"
done
GRPO_CUDA_FUSED_HEAD=1 GRPO_CUDA_FUSED_CHECK=1 grpo-step --model "$T/model" --batches "$T/b" -o "$T/pfr" \
	--device cuda --precision fp32 --recompute --lr 1e-3 || echo "# the fused step with --recompute failed"

field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
close() { awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; s = b < 0 ? -b : b; exit !(d <= tol * s + 1e-9) }'; }
l1=$(field "$T/fused1.jsonl" loss) l0=$(field "$T/fused0.jsonl" loss)
n1=$(field "$T/fused1.jsonl" grad_norm) n0=$(field "$T/fused0.jsonl" grad_norm)
[ -n "$l1" ] && [ -n "$n1" ] && close "$l1" "$l0" 1e-6 && close "$n1" "$n0" 1e-6
ok $? "GRPO_CUDA_FUSED_HEAD=1: loss $l1 and gradient norm $n1, the two phases' $l0 and $n0 (within 1e-6)"
cmp "$T/pf1/step_1/optim.bin" "$T/pfr/step_1/optim.bin" && cmp "$T/pf1/step_1/model.safetensors" "$T/pfr/step_1/model.safetensors"
ok $? "GRPO_CUDA_FUSED_HEAD=1 --recompute: the same checkpoint, byte for byte"
a=$(field "$T/gpu.jsonl" gpu_bytes) b=$(field "$T/rc.jsonl" gpu_bytes)
[ -n "$b" ] && [ "$b" -lt "$a" ]; ok $? "--recompute: the GPU model holds $b bytes, not $a"
for p in fp32 bf16; do
	f="$T/gpu.jsonl" tol=1e-5
	[ $p = bf16 ] && f="$T/bf16.jsonl" tol=0.01
	grep -q '"device":"cuda","gpu_bytes":[1-9]' "$f"; ok $? "$p: the metrics say cuda and the GPU bytes held"
	for k in loss grad_norm; do
		close "$(field "$f" $k)" "$(field "$T/cpu.jsonl" $k)" $tol
		ok $? "$p: $k $(field "$f" $k) on the GPU, $(field "$T/cpu.jsonl" $k) on the CPU (within $tol)"
	done
done
