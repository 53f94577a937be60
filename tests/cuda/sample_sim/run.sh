#!/bin/sh
# Build sample_sim (sim.cc) over a copy of kernels/sample.cu's kernel and
# run it; exits non-zero if any case fails. An argument adds V 1.1M;
# SAMPLE_SIM_SMALL=1 stops before V 151936 (a minute instead of three).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
k=$here/../../../kernels
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the kernel without its launchers (which use <<< >>>), after the shims
{ cat "$here/shim.h"; sed -n '/^#define THREADS/,/^cudaError_t launch_sample/p' "$k/sample.cu" | sed '$d'; } >"$tmp/kern.inc"
${CXX:-g++} -std=c++20 -O2 -ffp-contract=off -pthread -w -I"$tmp" -I"$here/.." -I"$here/../.." "$here/sim.cc" -o "$tmp/sim"
"$tmp/sim" "$@"
