#!/bin/sh
# Regenerates the Hugging Face parity fixtures in this directory. Two halves,
# because the machines differ:
#   sh make.sh models        here: grpo-init writes three tiny model directories
#   python3 make_expected.py .   where torch and transformers are (the GPU machine):
#                            loads each directory with transformers, checks that
#                            it loads with no missing, unexpected or mismatched
#                            tensor, and writes expected.json and grad.safetensors
# Both outputs are committed; test_model_hf compares the C model with them.
# Beside them, the same way (here, then there), two more fixtures:
#   python3 make_step_input.py > step-input.jsonl      a scored step for the tiny models
#   python3 make_step_expected.py step-input.jsonl qwen2 qwen3
#                            one grpo-step in PyTorch: FAMILY/step-expected.json,
#                            for tests/cli/step-parity.t
#   sh make_wide.sh DIR; python3 make_wide_expected.py DIR wide-expected.json
#                            real-width models (not committed: made again by
#                            the test) past 4000 positions, for test_model_wide
set -e
cd "$(dirname "$0")"
[ "$1" = models ] || { echo "usage: sh make.sh models" >&2; exit 2; }
common="--hidden 64 --layers 2 --heads 4 --kv-heads 2 --intermediate 128 --vocab 320 --seed 7"
rm -rf qwen2 qwen3 llama
# tied, q/k/v bias, float32 in one file
grpo-init --family qwen2 $common --tie -o qwen2
# q/k norm, head_dim 24 != 64/4, bfloat16, untied
grpo-init --family qwen3 $common --head-dim 24 --no-tie --dtype bfloat16 -o qwen3
# llama3 rope scaling (the llama3.2-1b preset's), untied, three shards with an index
grpo-init --preset llama3.2-1b $common --head-dim 16 --bos 1 --eos 2 --no-tie --shard-size 200000 -o llama
