#!/bin/sh
# Build mma_sim (sim.cc) over copies of the tensor-core attention kernels and
# run it on four shapes; exits non-zero if any fails. SIM_TSAN=1 builds it
# with ThreadSanitizer (../sim/cuda_runtime.h) and runs the first two, one
# of each head size.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
k=$(cd "$here/../../../kernels" && pwd)
cp "$k/layers.cuh" "$here/mma.cuh" "$here/sim.cc" "$tmp/"
# the kernels without their launchers (which use <<< >>>), dynamic shared memory as a global array,
# under a #line naming kernels/'s file (for the compiler's messages, and the sim's about a barrier)
{ echo "#line 1 \"$k/attention_mma.cu\""; sed -n '1,/^int attention_mma_head_size_ok/p' "$k/attention_mma.cu" | sed '$d'; } >"$tmp/fwd.inc"
{ echo "#line 1 \"$k/attention_bwd_mma.cu\""; sed -n '1,/^template <int HS>$/p' "$k/attention_bwd_mma.cu" | sed '$d' |
	sed 's/extern __shared__ __align__(16) unsigned char smem\[\];/unsigned char *smem = g_smem;/'; } >"$tmp/bwd.inc"
$sim_cxx -I"$tmp" "$tmp/sim.cc" -o "$tmp/sim"
shapes="0 1 2 3"
[ "${SIM_TSAN:-0}" = 1 ] && shapes="0 1"
rc=0
for shape in $shapes; do
	"$tmp/sim" $shape || rc=1
done
exit $rc
