#!/bin/sh
# Build sample_sim (sim.cc) over a copy of kernels/sample.cu's kernel and
# run it; exits non-zero if any case fails. An argument adds V 1.1M;
# SAMPLE_SIM_SMALL=1 stops before V 151936. SIM_TSAN=1 builds it with
# ThreadSanitizer (../sim/cuda_runtime.h) and runs the four cases of "race".
# Then, but under ThreadSanitizer (one thread), test_cuda_sample against
# sample_twin.h instead of the GPU: the twin, which sim.cc holds the kernel
# to, against generate.c's rules (GRPO_TEST_SMALL=1: 1000 draws each).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
k=$(cd "$here/../../../kernels" && pwd)
# the kernel without its launchers (which use <<< >>>)
{
	echo '#include <cuda_runtime.h>'
	echo "#line $(grep -n '^#define THREADS' "$k/sample.cu" | cut -d: -f1) \"$k/sample.cu\""
	sed -n '/^#define THREADS/,/^cudaError_t launch_sample/p' "$k/sample.cu" | sed '$d'
} >"$tmp/kern.inc"
$sim_cxx -I"$tmp" -I"$here/.." -I"$here/../.." "$here/sim.cc" -o "$tmp/sim"
if [ "${SIM_TSAN:-0}" = 1 ] && [ $# = 0 ]; then set -- race; fi
rc=0
"$tmp/sim" "$@" || rc=1
if [ "${SIM_TSAN:-0}" != 1 ]; then
	${CC:-cc} -std=c11 -D_GNU_SOURCE $sim_opt -DGRPO_SAMPLE_TWIN -I"$here/.." -I"$here/../.." \
		"$here/../test_cuda_sample.c" -lm -o "$tmp/twin"
	"$tmp/twin" >"$tmp/twin.tap" || rc=1
	grep -v '^ok ' "$tmp/twin.tap" || true
	echo "test_cuda_sample against sample_twin.h: $(grep -c '^ok ' "$tmp/twin.tap") ok, $(grep -c '^not ok' "$tmp/twin.tap") not ok"
fi
exit $rc
