#!/bin/sh
# Build layers_sim (sim.cc) over copies of kernels/'s embedding, q/k/v
# preparation, bias, loss-row and optimizer kernels and launchers
# (extract.py), with lib/train/loss.c as the loss's reference, and run it
# on the CPU; exits non-zero if any case fails. It checks their indexing,
# barriers and arithmetic against double-precision references; nothing of
# timing. SIM_TSAN=1 builds it with ThreadSanitizer and runs smaller shapes
# (../sim/cuda_runtime.h). About 20 seconds on two cores; no GPU.
# LAYERS_SIM_KERNELS names another kernels directory to copy from (e.g. a
# copy with a barrier removed, to see TSan find it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../sim/sim.sh"
root=$here/../../..
sim_extract layers_sim
size=
[ "${SIM_TSAN:-0}" = 1 ] && size=small
# the loss's reference, lib/train/loss.c, as C by the same compiler (one sanitizer runtime)
for f in train/loss base/err; do
	${CXX:-g++} -x c -std=c11 $sim_opt -ffp-contract=off -w -I"$root/lib" -c "$root/lib/$f.c" -o "$tmp/${f#*/}.o"
done
$sim_cxx -I"$tmp" -I"$here/.." -I"$root/kernels" -I"$root/lib" "$here/sim.cc" "$tmp/loss.o" "$tmp/err.o" -lm -o "$tmp/sim"
"$tmp/sim" $size
