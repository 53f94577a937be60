#!/bin/sh
# grpo-collect --model --device and --precision: the words checked (GRPO_DEVICE
# too); --device cuda without a GPU exits 69 saying why and publishes nothing;
# on a GPU, fp32 samples are the CPU's tokens, and the logprobs the sampler
# recorded match the C model's (seed 004's alignment check, grpo-cat --model
# --stats): mean |diff| under 1e-4 in fp32 and 0.01 in bf16.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 16

grpo-init --preset tiny --seed 5 -o "$T/m" || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3]}' '{"prompt_tokens":[4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}' \
	'{"prompt_tokens":[7]}' > "$T/p.jsonl"
run() { grpo-collect --model "$T/m" --prompts "$T/p.jsonl" -n 4 --max-tokens 24 -t 0.8 --seed 3 "$@"; }

run --device tpu > /dev/null 2> "$T/err"
is "$?" 2 "--device tpu: usage error"
grep -q -- "--device: expected one of auto, cpu, cuda, got 'tpu'" "$T/err"; ok $? "naming the words"
GRPO_DEVICE=tpu run > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-collect: GRPO_DEVICE: expected one of auto, cpu, cuda, got 'tpu'" \
	"GRPO_DEVICE, --device's default, is checked as the option is"
run --precision fp16 > /dev/null 2>&1
is "$?" 2 "--precision fp16: usage error"
# the GPU sampler's knobs are checked at start, on any machine, unless on the CPU
GRPO_CUDA_MAX_BATCH=lots run --device auto > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-collect: GRPO_CUDA_MAX_BATCH: expected a whole number from 1 to 1024, got 'lots'" \
	"a malformed GRPO_CUDA_MAX_BATCH: usage error, naming it"
GRPO_CUDA_KV_MIB=0 run --device auto > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-collect: GRPO_CUDA_KV_MIB: expected a whole number from 1 to 16777216, got '0'" \
	"GRPO_CUDA_KV_MIB 0: usage error"
GRPO_CUDA_GRAPHS=no run --device cuda > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "2:grpo-collect: GRPO_CUDA_GRAPHS: expected 0 or 1, got 'no'" "GRPO_CUDA_GRAPHS: 0 or 1"
GRPO_CUDA_MAX_BATCH=lots run --device cpu > /dev/null 2>&1
is "$?" 0 "--device cpu does not look at them"

run --device cpu > "$T/cpu.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "--device cpu samples with the C model, silently"

run --device cuda --precision fp32 -o "$T/s/rollouts" 2> "$T/err"
st=$?
if [ $st -eq 69 ]; then
	grep -Eq 'device cuda: (no GPU to run on|this build has no CUDA path)' "$T/err"
	ok $? "--device cuda without a GPU: 69, saying why: $(cat "$T/err")"
	[ ! -d "$T/s/rollouts" ]; ok $? "and nothing is published"
	run --device auto > "$T/auto.zst" 2> "$T/err"
	cmp -s "$T/auto.zst" "$T/cpu.zst"
	is "$?:$(cat "$T/err")" "0:" "--device auto without a GPU samples on the CPU, silently"
	for i in 1 2 3 4; do skip "no GPU: the GPU sampler not compared with the CPU"; done
	exit 0
fi
is $st 0 "--device cuda --precision fp32 samples on the GPU here"
grpo-cat "$T"/s/rollouts/step_0/rank_0/*.zst > "$T/gpu.json" && grpo-cat "$T/cpu.zst" > "$T/cpu.json"
tokens() { grep -o '"response_tokens":\[[0-9,]*\]' "$1"; }
[ "$(tokens "$T/gpu.json")" = "$(tokens "$T/cpu.json")" ]
ok $? "fp32: the same tokens as the C sampler from the same seed"
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
grpo-cat --model "$T/m" --stats --json "$T"/s/rollouts/step_0/rank_0/*.zst > "$T/st32"
m32=$(field "$T/st32" model_logprob_abs_diff_mean)
awk -v m="$m32" 'BEGIN { exit !(m != "" && m < 1e-4) }'
ok $? "fp32: the sampler's logprobs are the C model's (mean |diff| $m32)"
run --device cuda -v > "$T/bf16.zst" 2> "$T/err"
grep -q 'sampling on the GPU in bf16' "$T/err"; ok $? "-v says where it samples"
grep -q 'decode steps (at most' "$T/err"; ok $? "and how: $(grep -o 'in [0-9]* decode steps.*' "$T/err")"
grpo-cat --model "$T/m" --stats --json "$T/bf16.zst" > "$T/st16"
m16=$(field "$T/st16" model_logprob_abs_diff_mean)
awk -v m="$m16" 'BEGIN { exit !(m != "" && m < 0.01) }'
ok $? "bf16: within bf16 noise of the fp32 C model (mean |diff| $m16)"
run --device cuda -v > "$T/again.zst" 2> /dev/null
cmp -s "$T/bf16.zst" "$T/again.zst"; ok $? "bf16: the same run twice, the same bytes"
