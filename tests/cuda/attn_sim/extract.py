# Writes kern.inc into the directory given: layers.cu's CUDA-core attention
# forward and its launcher launch_attention, attention_bwd.cu's three
# backward kernels and launch_attention_backward, gpu_model.cu's
# sequence_tiles (the att_tile lists), and gpu_decode.cu's copy_blocks_kernel
# and gather_rows_kernel, copied from kernels/ unchanged except for their
# launches (tests/cuda/sim/kernsrc.py).
# The two decoder kernels are launched inside prefill(), whose statements
# are copied as they are into sim_copy_blocks and sim_gather_rows: their
# grid, block and arguments (the row width among them) read prefill's
# names d, g, npairs, n and st, which sim.cc's stand-ins provide.
# ATTN_SIM_KERNELS names another kernels directory to copy from.
import re
import sys

sys.path.insert(0, sys.path[0] + "/../sim")
from kernsrc import Kernels

k = Kernels(("layers.cu", "attention_bwd.cu", "gpu_model.cu", "gpu_decode.cu"), "ATTN_SIM_KERNELS")


def prefill_launch(kernel, sim_name, params):
    """kernel's launch statement in gpu_decode.cu's prefill(), in a function of prefill's names."""
    m = re.search(r"\n\t+(%s<<<.*?>>>\(.*?\);)" % kernel, k.function("gpu_decode.cu", "static int prefill("), re.S)
    return "static void %s(%s)\n{\n\t%s\n}\n" % (sim_name, params, k.calls(m.group(1)))


out = ["#include <cuda_runtime.h>", '#include "device.cuh"', '#include "layers.cuh"']
for head in ("\nattention_kernel(", "static void attention_hs(", "int attention_head_size_ok(",
             "cudaError_t launch_attention("):
    out.append(k.copy("layers.cu", head))

out.append(k.defines("attention_bwd.cu", "BWD_BQ"))
for head in ("__global__ void attention_bwd_dot_kernel", "\nattention_bwd_dq_kernel(", "\nattention_bwd_dkdv_kernel(",
             "static cudaError_t backward_hs(", "static cudaError_t backward_t(",
             "cudaError_t launch_attention_backward("):
    out.append(k.copy("attention_bwd.cu", head))

out.append(k.copy("gpu_model.cu", "static int sequence_tiles("))

for head in ("__global__ void copy_blocks_kernel", "__global__ void gather_rows_kernel"):
    out.append(k.copy("gpu_decode.cu", head))
out.append(prefill_launch("copy_blocks_kernel", "sim_copy_blocks",
                          "struct dec *d, struct gpu_model *g, int npairs, cudaStream_t st"))
out.append(prefill_launch("gather_rows_kernel", "sim_gather_rows",
                          "struct dec *d, struct gpu_model *g, int n, cudaStream_t st"))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
