# Writes kern.inc into the directory given: device.cuh's helpers, then the
# norm, column-sum, SwiGLU and LM-head-gradient kernels and their launchers, copied from
# kernels/ unchanged except that each <<<grid, block, smem, stream>>>
# launch becomes a call of launch() (tests/cuda/sim/cuda_runtime.h).
import re
import sys

here = sys.path[0]
kernels = here + "/../../../kernels/"
src = {f: open(kernels + f).read() for f in ("device.cuh", "layers.cu", "backward.cu", "backward.cuh")}


def function(text, head):
    """The definition containing head: from the blank line before it to its closing brace."""
    i = text.index(head)
    return text[text.rfind("\n\n", 0, i) + 2:text.index("\n}\n", i) + 3]


def define(f, name):
    return "#define %s %s" % (name, re.search(r"#define %s (\d+)" % name, src[f]).group(1))


def as_call(m):
    return "launch(dim3(%s), dim3(%s), [&] { %s(%s); });" % (m.group(2), m.group(3), m.group(1), m.group(4))


device = src["device.cuh"]
out = ["#include <cuda_runtime.h>", device.split("// CUDA-core attention")[0] + "#endif\n",
       define("backward.cuh", "RMS_ROWS"), define("backward.cu", "THREADS"), define("layers.cu", "NORM_WARPS"),
       define("backward.cu", "COLSUM_ROWS")]
for f, head in (("layers.cu", "__global__ void rmsnorm_kernel"), ("layers.cu", "cudaError_t launch_rmsnorm("),
                ("layers.cu", "__global__ void swiglu_kernel"), ("layers.cu", "cudaError_t launch_swiglu("),
                ("backward.cu", "__global__ void colsum_kernel"), ("backward.cu", "size_t colsum_scratch_floats"),
                ("backward.cu", "cudaError_t launch_colsum("), ("backward.cu", "__global__ void rmsnorm_bwd_kernel"),
                ("backward.cu", "static void rmsnorm_bwd("), ("backward.cu", "cudaError_t launch_rmsnorm_backward("),
                ("backward.cu", "__global__ void swiglu_bwd_kernel"), ("backward.cu", "cudaError_t launch_swiglu_backward("),
                ("backward.cu", "__global__ void lmhead_bwd_kernel"), ("backward.cu", "cudaError_t launch_lmhead_backward(")):
    out.append(re.sub(r"(\w+(?:<[^<>]*>)?)<<<(.*?), ([^,]+), [^,]+, \w+>>>\((.*?)\);", as_call,
                      function(src[f], head), flags=re.S))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
