#!/bin/sh
# Two models at the real width of Qwen2.5-0.5B and Qwen3-0.6B, with 2 layers
# and a vocabulary of 512 so that they are cheap: too big to commit (60 and
# 70 MB), so made again wherever they are needed, by the same grpo-init
# commands, which give the same bytes for the same seed:
#
#   sh tests/data/hf/make_wide.sh DIR     writes DIR/qwen2-wide, DIR/qwen3-wide
#
# test_model_wide runs it into a temporary directory; make_wide_expected.py
# reads what it wrote on the machine with PyTorch. grpo-init is taken from
# $GRPO_BIN when set, else from PATH. Where grpo-tools cannot be built (the
# GPU machine has no libcjson-dev), a grpo-init built elsewhere runs with its
# libcjson.so.1 beside it:
#   LD_LIBRARY_PATH=DIR GRPO_BIN=DIR sh tests/data/hf/make_wide.sh /tmp/wide
set -e
[ $# -eq 1 ] || { echo "usage: sh make_wide.sh DIR" >&2; exit 2; }
init=${GRPO_BIN:+$GRPO_BIN/}grpo-init
rm -rf "$1/qwen2-wide" "$1/qwen3-wide"
mkdir -p "$1"
# Qwen2.5-0.5B: hidden 896, 14 heads of 64, 2 key/value heads, q/k/v bias, tied
"$init" --family qwen2 --hidden 896 --layers 2 --heads 14 --kv-heads 2 --head-dim 64 \
	--intermediate 4864 --rope-theta 1000000 --vocab 512 --tie --dtype bfloat16 --seed 11 -o "$1/qwen2-wide"
# Qwen3-0.6B: hidden 1024, 16 heads of 128 (16*128 != 1024), 8 key/value heads, q/k norm, tied
"$init" --family qwen3 --hidden 1024 --layers 2 --heads 16 --kv-heads 8 --head-dim 128 \
	--intermediate 3072 --rope-theta 1000000 --vocab 512 --tie --dtype bfloat16 --seed 12 -o "$1/qwen3-wide"
