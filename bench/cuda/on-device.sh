#!/bin/sh
# On the GPU machine, from the top of a checkout that carries cuda-run/
# (bench/cuda/carry.sh): unpack it, put on the library path the libraries
# this machine lacks, and run what needs the GPU, logs under ${OUT:-out}:
#   tests   the CUDA tests and the tools' GPU cases (tests.txt)
#   unpack  nothing more (run it first when the others start side by side)
#   bench   make bench-cuda's run.sh with the peer (bench.txt; BENCH_QUICK=1:
#           the figures the issue asks for alone)
#   quick   ours alone, once: generation, the training step with and without
#           --recompute (quick.txt)
#   profile the reference forward and the training step with and without
#           --recompute under GRPO_CUDA_PROFILE=1: each phase's time, share
#           and TFLOP/s (profile.txt; PROFILE_PASSES picks: forward train
#           recompute)
#   gen     make bench-cuda's run_generate.sh with the peer (gen.txt)
#   san     compute-sanitizer memcheck on the CUDA tests, SAN_JOBS at once
#           (default 4; san.txt)
#   sync    compute-sanitizer synccheck on the CUDA tests, likewise (sync.txt)
#   race    compute-sanitizer racecheck, one kernel of a test at a time,
#           RACE_JOBS at once (default 4; RACE_PAIRS: test:kernel-name-part
#           ...; race.txt)
#   wide    tests/data/hf/make_wide*: transformers' values for test_model_wide
#           (wide-expected.json)
#   fused   the LM head fused with the loss (GRPO_CUDA_FUSED_HEAD=1): test_cuda_step
#           and step-device.t with it and the per-token check
#           (GRPO_CUDA_FUSED_CHECK=1), then the quick training step with and
#           without it, -R too (fused.txt)
# Arguments pick them (default: tests bench). TESTS and SAN_TESTS name the
# test binaries to run (default: every CUDA test); COMPUTE_SANITIZER the
# sanitizer (default /usr/local/cuda/bin/compute-sanitizer).
top=$(pwd)
out=${OUT:-$top/out}
mkdir -p "$out"
# once per machine: several of these may run at once (race beside tests)
if [ ! -f cuda-run/.unpacked ]; then
	python3 -c "import tarfile; tarfile.open('cuda-run/pkg.tar.xz').extractall('cuda-run')" || exit 1
	touch cuda-run/.unpacked
fi
mkdir -p cuda-run/lib
for lib in cuda-run/lib-all/*; do
	[ -e "$lib" ] || continue
	name=${lib##*/}
	ldconfig -p | grep -qF "$name " || ln -sf "../lib-all/$name" "cuda-run/lib/$name"
done
export LD_LIBRARY_PATH="$top/cuda-run/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GRPO_TOP="$top" GRPO_SHARED="$top/cuda-run/shared"
san=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
# sanitize TOOL JOBS ITEM...: compute-sanitizer's TOOL over each ITEM, a
# test binary, or BINARY:PART to instrument only the kernels whose names
# hold PART; JOBS at once, each its own process, each SAN_TIMEOUT seconds at
# most (default 300), with GRPO_TEST_SMALL=1. Prints each one's exit and,
# where it failed, the lines that say why.
sanitize() {
	tool=$1 jobs=$2
	shift 2
	tmp=$(mktemp -d)
	for item; do echo "$item"; done | xargs -P "$jobs" -n 1 sh -c '
		tool=$1 item=$4 t=${4%%:*} only=
		[ "$t" = "$item" ] || only="--kernel-name kns=${item#*:}"
		log=$2/$(echo "${item##*/}" | tr : _)
		GRPO_TEST_SMALL=1 timeout "${SAN_TIMEOUT:-300}" "$3" --tool "$tool" $only --error-exitcode 3 "$t" \
			> "$log.txt" 2>&1
		rc=$?
		{
			echo "=== $tool $item"
			echo "=== exit $rc (3: what the tool reports; 124: out of time)"
			[ $rc = 0 ] || grep -E "not ok|Invalid|[Hh]azard|Race|rror" "$log.txt" | head -n 30
			tail -n 3 "$log.txt"
		} > "$log.sum"
	' sh "$tool" "$tmp" "$san"
	cat "$tmp"/*.sum
	rm -rf "$tmp"
}
# the peer's batch (bench/cuda/run.sh draws the same): "PROMPT RESPONSE" a line
lengths() {
	python3 -c 'import torch
g = torch.Generator().manual_seed(1)
for p in [int(x) for x in torch.randint(64, 512, (16,), generator=g)]:
    for _ in range(8): print(p, int(torch.randint(32, 1536, (1,), generator=g)))'
}
[ $# -gt 0 ] || set -- tests bench
for what; do
	case $what in
	unpack) ;;   # done above: before jobs that start at once
	tests)
		nvidia-smi -L > "$out/tests.txt" 2>&1
		for t in ${TESTS:-cuda-run/tests/*}; do
			echo "=== $t" >> "$out/tests.txt"
			timeout 300 "$t" >> "$out/tests.txt" 2>&1
			echo "=== $t: exit $?" >> "$out/tests.txt"
		done
		BUILD=cuda-run timeout 300 sh tests/run.sh tests/cli/step-device.t tests/cli/collect-device.t \
			tests/cli/score.t >> "$out/tests.txt" 2>&1
		grep -E '^(===|not ok|Result)' "$out/tests.txt"
		;;
	bench)
		# its files stay here (bench.txt has their lines): $OUT brings back 8 files at most
		BUILD=cuda-run BENCH_OUT=/tmp/bench timeout 550 sh bench/cuda/run.sh > "$out/bench.txt" 2>&1
		tail -n 12 "$out/bench.txt"
		;;
	quick)   # ours alone, once each: generation at 128 sequences, the training step with and without -R
		lengths > "$out/lengths.txt"
		{
			timeout 120 cuda-run/bench/cuda/bench_cuda_generate -P 16 -G 8 -r 1
			timeout 120 cuda-run/bench/cuda/bench_cuda_model -d bf16 -t -r 2 "$out/lengths.txt"
			timeout 120 cuda-run/bench/cuda/bench_cuda_model -d bf16 -t -r 2 -R "$out/lengths.txt"
		} > "$out/quick.txt" 2>&1
		cat "$out/quick.txt"
		;;
	profile)   # where the time goes: one timed run each, the phase table on stderr
		[ -f "$out/lengths.txt" ] || lengths > "$out/lengths.txt"
		{
			for pass in ${PROFILE_PASSES:-forward train recompute}; do
				case $pass in
				forward) mode= ;;
				train) mode=-t ;;
				*) mode="-t -R" ;;
				esac
				echo "=== bench_cuda_model -d bf16 -r 1 $mode"
				GRPO_CUDA_PROFILE=1 timeout 120 cuda-run/bench/cuda/bench_cuda_model -d bf16 -r 1 $mode \
					"$out/lengths.txt"
			done
		} > "$out/profile.txt" 2>&1
		cat "$out/profile.txt"
		;;
	gen)
		BUILD=cuda-run BENCH_OUT=/tmp/bench timeout 400 sh bench/cuda/run_generate.sh > "$out/gen.txt" 2>&1
		tail -n 8 "$out/gen.txt"
		;;
	wide)
		GRPO_BIN=cuda-run/bin sh tests/data/hf/make_wide.sh /tmp/wide > "$out/wide.txt" 2>&1 &&
			python3 tests/data/hf/make_wide_expected.py /tmp/wide "$out/wide-expected.json" >> "$out/wide.txt" 2>&1
		tail -n 3 "$out/wide.txt"
		;;
	san)   # memcheck over whole tests
		sanitize memcheck "${SAN_JOBS:-4}" ${SAN_TESTS:-cuda-run/tests/*} > "$out/san.txt"
		cat "$out/san.txt"
		;;
	sync)   # synccheck (barriers reached by some of a block's threads) over whole tests
		sanitize synccheck "${SAN_JOBS:-4}" ${SAN_TESTS:-cuda-run/tests/*} > "$out/sync.txt"
		cat "$out/sync.txt"
		;;
	race)   # racecheck one kernel at a time (the rest run uninstrumented), so that each run ends.
		# On the H200 with CUDA 13, test_cuda_step's first bf16 step stops racecheck ("Internal
		# Sanitizer Error: failed to handle a hardware exception") whichever kernel it
		# instruments, and the rest of the test fails after it (memcheck and plain runs pass):
		# GRPO_TEST_FP32=1 leaves those out. sample_kernel takes about 200 s there.
		# racecheck sees hazards in shared memory alone: the default names every
		# kernel of kernels/ that uses it (a part matches each kernel whose name
		# holds it: rmsnorm's backward, lmhead's statistics, qkv_prep forward
		# and backward), in a test that launches it.
		pairs=${RACE_PAIRS:-attention:attention_mma_kernel attention:attention_bwd_mma_dq \
			attention:attention_bwd_mma_dkdv attention:attention_kernel attention:attention_bwd_dq \
			attention:attention_bwd_dkdv step:rmsnorm step:lmhead step:sumsq step:qkv_prep \
			sample:sample_kernel paged:paged_attention}
		(export GRPO_TEST_FP32=1; sanitize racecheck "${RACE_JOBS:-4}" \
			$(for pair in $pairs; do echo "cuda-run/tests/test_cuda_$pair"; done)) > "$out/race.txt"
		cat "$out/race.txt"
		;;
	fused)
		nvidia-smi -L > "$out/fused.txt" 2>&1
		t=cuda-run/tests/test_cuda_step   # its CPU comparisons through the fused head, then its fused tests
		echo "=== $t (GRPO_CUDA_FUSED_HEAD=1)" >> "$out/fused.txt"
		GRPO_CUDA_FUSED_HEAD=1 GRPO_CUDA_FUSED_CHECK=1 timeout 200 "$t" >> "$out/fused.txt" 2>&1
		echo "=== $t: exit $?" >> "$out/fused.txt"
		GRPO_CUDA_FUSED_HEAD=1 GRPO_CUDA_FUSED_CHECK=1 BUILD=cuda-run timeout 200 sh tests/run.sh \
			tests/cli/step-device.t >> "$out/fused.txt" 2>&1
		[ -f "$out/lengths.txt" ] || lengths > "$out/lengths.txt"
		for r in "" -R; do
			for f in 0 1; do
				GRPO_CUDA_FUSED_HEAD=$f timeout 100 cuda-run/bench/cuda/bench_cuda_model -d bf16 -t -r 2 $r \
					"$out/lengths.txt" >> "$out/fused.txt" 2>&1
			done
		done
		grep -E '^(===|not ok|Result|shape=)' "$out/fused.txt"
		;;
	*) echo "on-device.sh: $what: unpack, tests, bench, quick, profile, gen, san, sync, race, wide or fused" >&2; exit 2 ;;
	esac
done
