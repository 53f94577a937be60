#!/bin/sh
# Build paged_sim (sim.cc) over kernels/paged_attention.cu without its
# launchers, linked with tests/cuda/test_cuda_paged.c, and run the test's
# plan on the CPU, after sim.cc's own checks; exits non-zero if any fails.
# GRPO_TEST_SMALL=1 runs two shapes only, as on a GPU.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$here/../../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed '/^\/\/ ---- launchers ----/,/^\/\/ ---- the kernels alone/{/^\/\/ ---- the kernels alone/!d}' \
	"$top/kernels/paged_attention.cu" >"$tmp/paged.inc"
flags="-O2 -g -fno-strict-aliasing -I$tmp -I$here -I$top/kernels -I$top/tests -I$top/tests/cuda"
${CXX:-g++} -std=c++20 $flags -pthread -w -c "$here/sim.cc" -o "$tmp/sim.o"
${CC:-cc} -std=c11 -D_GNU_SOURCE $flags -c "$top/tests/cuda/test_cuda_paged.c" -o "$tmp/test.o"
${CXX:-g++} -pthread "$tmp/sim.o" "$tmp/test.o" -lm -o "$tmp/sim"
${CXX:-g++} -std=c++20 $flags -pthread -w -DSIM_EXTRA "$here/sim.cc" -o "$tmp/extra"
rc=0
"$tmp/extra" || rc=1
"$tmp/sim" || rc=1
exit $rc
