#!/bin/sh
# Build model_sim: the whole CUDA path, every kernels/*.cu's kernels and
# host code unchanged (extract.py: launches made calls, dynamic shared
# memory a buffer per launch, mma.sync emulated), but cuBLASLt's products
# (matmul.cc: on the CPU) and the profiler (prof.cc: nothing), over the CUDA
# runtime of runtime.cc and ../sim (capture.cc first checks its graph
# capture against the GPU's rules); link it with each GPU test that
# MODEL_SIM_TESTS names (NAME: tests/cuda/test_cuda_NAME.c, or else
# tests/unit/test_NAME.c) and run them on the CPU; exits non-zero if any
# test fails. By default "model step paged lmhead reflp attention
# generate": the model's forward and backward and the training step against
# the C model (lib/), paged attention over a shuffled KV cache, the LM-head
# statistics, test_reflp's reference passes on the GPU, attention forward
# and backward, and sampling through the decoder (kernels/gpu_decode.cu:
# continuous batching, the paged cache, CUDA graphs, sequences taken out
# and started again) against gen_run. Not by default, for time:
# MODEL_SIM_TESTS=sample, the sampling kernel's draws against generate.c's
# rules (gpu_sample_test; sample_sim checks the kernel too). It checks
# the host code's buffer sizes, offsets, launches and graph captures (each
# copy within one allocation; SIM_ASAN=1: every access, with
# AddressSanitizer), on the tests' own shapes; nothing of timing or of the
# hardware's rounding. Needs build/libgrpo.a (made here with make CUDA=0
# when missing or stale) and python3 (skipped without). On two cores: about
# 35 s to build, then test_cuda_model 105 s, test_cuda_step 30 s,
# test_cuda_paged 5 s, test_cuda_lmhead and test_reflp 1 s each,
# test_cuda_attention 27 s and test_cuda_generate 40 s, four minutes in
# all; test_cuda_sample 150 s more with GRPO_TEST_SMALL=1 (as make
# check-sim sets it: 1000 draws a distribution), over 20 minutes without.
# With SIM_ASAN=1 about 10 minutes for test_cuda_model, 5 for
# test_cuda_generate. A block's threads run as fibers (runtime.cc);
# SIM_OS_THREADS=1 runs them as cuda_runtime.h's launch does, a thread each
# (far slower); SIM_MATMUL_F32=1 sums products in fp32; SIM_GPU_MIB sizes
# the device (4096); MODEL_SIM_KERNELS copies another kernels directory
# (extract.py). No GPU.
#
# test_cuda_step runs its fp32 cases alone (GRPO_TEST_FP32=1; MODEL_SIM_BF16=1
# runs all): its bf16 bounds are set on the GPU's rounding (fused
# multiply-adds, fast exp), and here the CPU's differs enough that qwen3's
# bf16 update comes out at a cosine of 0.9890 to the CPU's, against 0.99.
# test_cuda_attention runs its two small shapes (GRPO_TEST_SMALL=1) and
# test_cuda_generate its random model alone (GRPO_TEST_MODELS=random; the
# fixtures take the same decoder paths on other families); MODEL_SIM_FULL=1
# runs all of both, about 85 s and 55 s more.
# Under SIM_TSAN=1 model_sim is skipped: ThreadSanitizer needs a thread
# per CUDA thread, which takes over 15 minutes here, and the kernels' races
# are the other sims' part; this one is for the host code.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "${SIM_TSAN:-0}" = 1 ]; then
	echo "model_sim: skipped under ThreadSanitizer (the other sims race-check the kernels)" >&2
	exit 0
fi
. "$here/../sim/sim.sh"
top=$(cd "$here/../../.." && pwd)
sim_extract model_sim
make -s -C "$top" CUDA=0 build/libgrpo.a
deps="libzstd libarchive zlib libcjson openblas libcurl"
dcflags=$(pkg-config --cflags $deps 2>/dev/null || true)
dlibs=$(pkg-config --libs $deps 2>/dev/null || true)
cxx="$sim_cxx -g -fno-omit-frame-pointer -fno-strict-aliasing -include $here/sim_launch.h -I$tmp -I$here -I$top/lib"
cc="${CC:-cc} -std=c11 -D_GNU_SOURCE -g $sim_opt -fopenmp -I$sim_dir -I$top/kernels -I$top/lib -I$top/tests -I$top $dcflags"
# the kernels' copies and the stand-ins, two at a time
objs=
for f in "$tmp"/*.cc "$here/runtime.cc" "$here/matmul.cc" "$here/prof.cc"; do
	objs="$objs $tmp/obj/$(basename "$f" .cc).o"
done
mkdir -p "$tmp/obj"
ls "$tmp"/*.cc "$here/runtime.cc" "$here/matmul.cc" "$here/prof.cc" |
	xargs -P "${SIM_JOBS:-2}" -I{} sh -c "$cxx -c {} -o $tmp/obj/\$(basename {} .cc).o || exit 255"
# lib/model/model_gpu.c as the Makefile builds it where CUDA is found (GRPO_CUDA: the linked table)
$cc -DGRPO_CUDA -c "$top/lib/model/model_gpu.c" -o "$tmp/model_gpu.o"
# the driver that model_gpu.c asks for a device
${CC:-cc} -shared -fPIC "$here/libcuda.c" -o "$tmp/libcuda.so.1"
rc=0
# the runtime's graph capture against the GPU's rules (its refusals' messages kept for a failure)
$cxx "$here/capture.cc" "$tmp/obj/runtime.o" -o "$tmp/capture"
"$tmp/capture" 2>"$tmp/capture.err" || { cat "$tmp/capture.err"; rc=1; }
for t in ${MODEL_SIM_TESTS:-model step paged lmhead reflp attention generate}; do
	src=$top/tests/cuda/test_cuda_$t.c
	[ -f "$src" ] || src=$top/tests/unit/test_$t.c
	name=$(basename "$src" .c)
	$cc -c "$src" -o "$tmp/$name.o"
	$sim_cxx -fopenmp "$tmp/$name.o" "$tmp/model_gpu.o" $objs "$top/build/libgrpo.a" $dlibs -lm -ldl -o "$tmp/$name"
	echo "== $name"
	start=$(date +%s)
	(
		cd "$top"
		export GRPO_TOP="$top" LD_LIBRARY_PATH="$tmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		[ "$t" != step ] || [ "${MODEL_SIM_BF16:-0}" = 1 ] || export GRPO_TEST_FP32=1
		[ "$t" != attention ] || [ "${MODEL_SIM_FULL:-0}" = 1 ] || export GRPO_TEST_SMALL=1
		[ "$t" != generate ] || [ "${MODEL_SIM_FULL:-0}" = 1 ] ||
			export GRPO_TEST_MODELS="${GRPO_TEST_MODELS:-random}"
		exec "$tmp/$name"
	) || rc=1
	echo "== $name: $(($(date +%s) - start)) s"
done
exit $rc
