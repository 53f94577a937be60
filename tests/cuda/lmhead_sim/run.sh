#!/bin/sh
# Build lmhead_sim (sim.cc) over a copy of kernels/lmhead.cu's kernel and run
# it; exits non-zero if any case fails. LMHEAD_SIM_KERNEL names another copy
# of lmhead.cu to run instead (e.g. an older one, to compare:
# git show main~5:kernels/lmhead.cu >old.cu). SIM_TSAN=1 builds it with
# ThreadSanitizer (../sim/cuda_runtime.h).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
src=${LMHEAD_SIM_KERNEL:-$here/../../../kernels/lmhead.cu}
# the kernel without its launchers (which use <<< >>>)
{ echo '#include <cuda_runtime.h>'; sed -n '/^#define THREADS/,/^extern "C" int grpo_cuda_lmhead_stats/p' "$src" | sed '$d'; } >"$tmp/kern.inc"
$sim_cxx -I"$tmp" -I"$here/.." "$here/sim.cc" -o "$tmp/sim"
"$tmp/sim" "$@"
