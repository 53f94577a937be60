# Writes kern.inc into the directory given: device.cuh's helpers, then the
# norm, column-sum, SwiGLU and LM-head-gradient kernels and their launchers,
# copied from kernels/ unchanged except for their launches
# (tests/cuda/sim/kernsrc.py).
import sys

sys.path.insert(0, sys.path[0] + "/../sim")
from kernsrc import Kernels

k = Kernels(("device.cuh", "layers.cu", "backward.cu", "backward.cuh"), "NORM_SIM_KERNELS")
out = ["#include <cuda_runtime.h>", k.head("device.cuh", "// CUDA-core attention") + "#endif\n",
       k.defines("backward.cuh", "RMS_ROWS"), k.defines("backward.cu", "THREADS"),
       k.defines("layers.cu", "NORM_WARPS"), k.defines("backward.cu", "COLSUM_ROWS")]
for f, head in (("layers.cu", "__global__ void rmsnorm_kernel"), ("layers.cu", "cudaError_t launch_rmsnorm("),
                ("layers.cu", "__global__ void swiglu_kernel"), ("layers.cu", "cudaError_t launch_swiglu("),
                ("backward.cu", "__global__ void colsum_kernel"), ("backward.cu", "size_t colsum_scratch_floats"),
                ("backward.cu", "cudaError_t launch_colsum("), ("backward.cu", "__global__ void rmsnorm_bwd_kernel"),
                ("backward.cu", "static void rmsnorm_bwd("), ("backward.cu", "cudaError_t launch_rmsnorm_backward("),
                ("backward.cu", "__global__ void swiglu_bwd_kernel"), ("backward.cu", "cudaError_t launch_swiglu_backward("),
                ("backward.cu", "__global__ void lmhead_bwd_kernel"), ("backward.cu", "cudaError_t launch_lmhead_backward(")):
    out.append(k.copy(f, head))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
