#!/bin/sh
# Build norm_sim (sim.cc) over copies of kernels/'s RMSNorm (forward and
# backward), column-sum and SwiGLU kernels and launchers (extract.py) and
# run it on the CPU; exits non-zero if any case fails. It checks their
# indexing, barriers, vector loads and reductions against double-precision
# sums; nothing of timing. SIM_TSAN=1 builds it with ThreadSanitizer, on
# fewer shapes (../sim/cuda_runtime.h). A few seconds to a minute; no GPU.
set -eu
command -v python3 > /dev/null || { echo "norm_sim: skipped: no python3 to copy the kernels out" >&2; exit 0; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/extract.py" "$tmp"
$sim_cxx -I"$tmp" "$here/sim.cc" -o "$tmp/sim"
"$tmp/sim"
