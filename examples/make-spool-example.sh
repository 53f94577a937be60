#!/bin/sh
# Remake spool.example/, the small spool committed with the sources, from
# one step of the demo (GRPO_DEMO_STEPS=1 sh examples/demo.sh): one file of
# each kind the loop writes,
#
#   rollouts/step_0/rank_0/collect-*.zst   what grpo-collect sampled from
#                                          the initial model (55 groups of 16)
#   scored/step_0/rank_0/collect-*.zst     the same groups scored by grpo-score
#   batches/step_1/                        the micro-batches grpo-pack made of
#                                          them, with the step's DONE
#   policy/step_1/                         the checkpoint grpo-step trained on
#                                          them, saved in bfloat16 (half the
#                                          bytes) and without its optimizer
#                                          state, so the whole is about 100 KB
#
# The consumers' claim records (.done), the lock and the publishers' empty
# temporary directories are left out. Its files are deterministic, and
# tests/cli/example.t checks that the committed ones still read (an old file
# must stay readable) and match what this script makes. Run from anywhere
# after `make`; takes the directory to write (default: the source tree's
# spool.example, replaced).
#
# The same bits on every x86-64 processor with AVX2: OpenBLAS picks its
# matrix kernels for the processor, and an AVX-512 one's differ in the last
# bits, which change what is sampled; the committed example is what its
# Haswell kernels make (OPENBLAS_CORETYPE).
set -e
if grep -qw avx2 /proc/cpuinfo 2> /dev/null; then
	export OPENBLAS_CORETYPE=Haswell
fi
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
out=${1:-$top/spool.example}
work=$(mktemp -d "${TMPDIR:-/tmp}/grpo-example.XXXXXX")
trap 'rm -rf "$work"' EXIT
demo="$work/demo"
GRPO_DEMO_STEPS=1 sh "$top/examples/demo.sh" "$demo" > /dev/null

# step 1 again from the demo's step_0, on the demo's micro-batches and with
# its learning rates, to save the weights in bfloat16
mkdir "$work/policy"
cp -R "$demo/policy/step_0" "$work/policy/step_0"
grpo-step --batches "$demo/batches" --step 1 -o "$work/policy" --lr 0.01 --entropy-coef 0.02 \
	--save-dtype bfloat16

rm -rf "$out"
for q in rollouts/step_0 scored/step_0; do
	mkdir -p "$out/$q/rank_0"
	cp "$demo/$q"/rank_0/*.zst "$out/$q/rank_0/"
done
mkdir -p "$out/batches/step_1/rank_0" "$out/policy/step_1"
cp "$demo"/batches/step_1/rank_0/*.zst "$out/batches/step_1/rank_0/"
cp "$demo/batches/step_1/DONE" "$out/batches/step_1/"
for f in config.json generation_config.json model.safetensors tokenizer.json; do
	cp "$work/policy/step_1/$f" "$out/policy/step_1/"
done
