#!/bin/sh
# Build norm_sim (sim.cc) over copies of kernels/'s RMSNorm (forward and
# backward), column-sum and SwiGLU kernels and launchers (extract.py) and
# run it on the CPU; exits non-zero if any case fails. It checks their
# indexing, barriers, vector loads and reductions against double-precision
# sums; nothing of timing. SIM_TSAN=1 builds it with ThreadSanitizer, on
# fewer shapes (../sim/cuda_runtime.h). A few seconds to a minute; no GPU.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
sim_extract norm_sim
$sim_cxx -I"$tmp" "$here/sim.cc" -o "$tmp/sim"
"$tmp/sim"
