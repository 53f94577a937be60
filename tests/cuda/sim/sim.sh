# Sourced by tests/cuda/*_sim/run.sh: $tmp, a scratch directory removed on
# exit; sim_extract NAME, which runs the extract.py beside the run.sh into
# it; $sim_cxx, the C++ compiler with the
# flags of a simulation over cuda_runtime.h beside this file, of which
# $sim_opt are those that C code linked with it is built with too. With
# SIM_TSAN=1 they build with ThreadSanitizer, which then fails the run
# (exit 66) at the first race between the threads of a block; with
# SIM_ASAN=1, with AddressSanitizer and UBSan, which fail it at the first
# access out of bounds or undefined operation. SIM_BLOCK_ORDER=reverse or
# shuffle runs each grid's blocks in that order (cuda_runtime.h).
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# sim_extract NAME: kern.inc in $tmp, cut out of kernels/ by the sim's
# extract.py; without python3 the sim is skipped (exit 0)
sim_extract() {
	command -v python3 > /dev/null || { echo "$1: skipped: no python3 to copy the kernels out" >&2; exit 0; }
	python3 "$(dirname "$0")/extract.py" "$tmp"
}
