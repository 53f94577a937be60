#!/bin/sh
# Build attn_sim (sim.cc) over copies of kernels/'s CUDA-core attention,
# forward and backward with their launchers, and gpu_decode.cu's block-copy
# and row-gather kernels (extract.py), and run it on the CPU; exits non-zero
# if any case fails. It checks their tiling, masking, barriers and
# arithmetic against attention in double; nothing of timing. SIM_TSAN=1
# builds it with ThreadSanitizer and runs each head size once on short
# packs (../sim/cuda_runtime.h). About 35 seconds on two cores, and 45 with
# SIM_TSAN=1; no GPU. ATTN_SIM_KERNELS names another kernels directory to
# copy from (e.g. a copy with a barrier removed, to see TSan find it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
sim_extract attn_sim
size=
[ "${SIM_TSAN:-0}" = 1 ] && size=small
$sim_cxx -I"$tmp" -I"${ATTN_SIM_KERNELS:-$here/../../../kernels}" "$here/sim.cc" -o "$tmp/sim"
"$tmp/sim" $size
