#!/bin/sh
# Build paged_sim (sim.cc) over kernels/paged_attention.cu without its
# launchers, linked with tests/cuda/test_cuda_paged.c, and run the test's
# plan on the CPU, after sim.cc's own checks; exits non-zero if any fails.
# GRPO_TEST_SMALL=1 runs two shapes only, as on a GPU. SIM_TSAN=1 builds
# it with ThreadSanitizer (../sim/cuda_runtime.h).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
top=$(cd "$here/../../.." && pwd)
# the launchers' lines blanked, not deleted, so that the #line holds
{ echo "#line 1 \"$top/kernels/paged_attention.cu\""
  sed '/^\/\/ ---- launchers ----/,/^\/\/ ---- the kernels alone/{/^\/\/ ---- the kernels alone/!s/.*//}' \
	"$top/kernels/paged_attention.cu"; } >"$tmp/paged.inc"
# the stand-ins here (gpu_model_impl.cuh) before kernels/
inc="-g -fno-strict-aliasing -I$tmp -I$here -I$top/kernels -I$top/tests -I$top/tests/cuda"
$sim_cxx $inc -c "$here/sim.cc" -o "$tmp/sim.o"
${CC:-cc} -std=c11 -D_GNU_SOURCE $sim_opt -I"$sim_dir" $inc -c "$top/tests/cuda/test_cuda_paged.c" -o "$tmp/test.o"
$sim_cxx "$tmp/sim.o" "$tmp/test.o" -lm -o "$tmp/sim"
$sim_cxx $inc -DSIM_EXTRA "$here/sim.cc" -o "$tmp/extra"
rc=0
"$tmp/extra" || rc=1
"$tmp/sim" || rc=1
exit $rc
