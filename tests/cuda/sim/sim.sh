# Sourced by tests/cuda/*_sim/run.sh: $sim_cxx, the C++ compiler with the
# flags of a simulation over cuda_runtime.h beside this file; with
# SIM_TSAN=1, built with ThreadSanitizer, which then fails the run (exit 66)
# at the first race between the threads of a block (see cuda_runtime.h).
sim_dir=$(cd "$(dirname "$0")/../sim" && pwd)
sim_cxx="${CXX:-g++} -std=c++20 -ffp-contract=off -pthread -w -I$sim_dir"
if [ "${SIM_TSAN:-0}" = 1 ]; then
	sim_cxx="$sim_cxx -O1 -g -fsanitize=thread"
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"
	export TSAN_OPTIONS
else
	sim_cxx="$sim_cxx -O2"
fi
