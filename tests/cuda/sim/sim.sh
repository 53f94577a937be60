# Sourced by tests/cuda/*_sim/run.sh: $sim_cxx, the C++ compiler with the
# flags of a simulation over cuda_runtime.h beside this file, of which
# $sim_opt are those that C code linked with it is built with too. With
# SIM_TSAN=1 they build with ThreadSanitizer, which then fails the run
# (exit 66) at the first race between the threads of a block; with
# SIM_ASAN=1, with AddressSanitizer and UBSan, which fail it at the first
# access out of bounds or undefined operation.
sim_dir=$(cd "$(dirname "$0")/../sim" && pwd)
if [ "${SIM_TSAN:-0}" = 1 ]; then
	sim_opt="-O1 -g -fsanitize=thread"
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
	export TSAN_OPTIONS
elif [ "${SIM_ASAN:-0}" = 1 ]; then
	sim_opt="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all"
else
	sim_opt=-O2
fi
sim_cxx="${CXX:-g++} -std=c++20 $sim_opt -ffp-contract=off -pthread -w -I$sim_dir"
