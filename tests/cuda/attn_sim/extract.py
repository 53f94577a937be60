# Writes kern.inc into the directory given: layers.cu's CUDA-core attention
# forward and its launcher launch_attention, attention_bwd.cu's three
# backward kernels and launch_attention_backward, gpu_model.cu's
# sequence_tiles (the att_tile lists), and gpu_decode.cu's copy_blocks_kernel
# and gather_rows_kernel, copied from kernels/ unchanged except that each
# <<<grid, block, smem, stream>>> launch becomes a call of launch(), or of
# launch_serial() where the kernel never synchronises (tests/cuda/sim).
# The two decoder kernels are launched inside prefill(), whose statements
# are copied as they are into sim_copy_blocks and sim_gather_rows: their
# grid, block and arguments (the row width among them) read prefill's
# names d, g, npairs, n and st, which sim.cc's stand-ins provide.
# ATTN_SIM_KERNELS names another kernels directory to copy from.
import os
import re
import sys

here = sys.path[0]
kernels = os.environ.get("ATTN_SIM_KERNELS") or here + "/../../../kernels"
src = {f: open(kernels + "/" + f).read() for f in ("layers.cu", "attention_bwd.cu", "gpu_model.cu", "gpu_decode.cu")}
SYNC = re.compile(r"__syncthreads|__syncwarp|__shfl|warp_sum|block_sum|row_sum")


def function(text, head):
    """The definition containing head: from the blank line before it to its closing brace."""
    i = text.index(head)
    return text[text.rfind("\n\n", 0, i) + 2:text.index("\n}\n", i) + 3]


def define(f, name):
    return "#define %s %s" % (name, re.search(r"#define %s (\w+)" % name, src[f]).group(1))


kernels_seen = {}


def launcher(kernel):
    """launch_serial for a kernel that never synchronises its threads."""
    return "launch" if SYNC.search(kernels_seen[kernel]) else "launch_serial"


def as_call(m):
    name = m.group(1).split("<")[0]
    return "%s(dim3(%s), dim3(%s), [&] { %s(%s); });" % (launcher(name), m.group(2), m.group(3), m.group(1),
                                                         m.group(4))


LAUNCH = re.compile(r"(\w+(?:<[^<>]*>)?)<<<(.*?), ([^,]+), [^,]+, [\w>-]+>>>\((.*?)\);", re.S)


def copy(f, head):
    text = function(src[f], head)
    m = re.search(r"__global__ void (?:__launch_bounds__\(.*?\)\s*)?(\w+)", text)
    if m:
        kernels_seen[m.group(1)] = text
    return LAUNCH.sub(as_call, text)


def prefill_launch(kernel, sim_name, params):
    """kernel's launch statement in gpu_decode.cu's prefill(), in a function of prefill's names."""
    m = re.search(r"\n\t+(%s<<<.*?>>>\(.*?\);)" % kernel, function(src["gpu_decode.cu"], "static int prefill("), re.S)
    return "static void %s(%s)\n{\n\t%s\n}\n" % (sim_name, params, LAUNCH.sub(as_call, m.group(1)))


out = ["#include <cuda_runtime.h>", '#include "device.cuh"', '#include "layers.cuh"']
for head in ("\nattention_kernel(", "static void attention_hs(", "int attention_head_size_ok(",
             "cudaError_t launch_attention("):
    out.append(copy("layers.cu", head))

out.append(define("attention_bwd.cu", "BWD_BQ"))
for head in ("__global__ void attention_bwd_dot_kernel", "\nattention_bwd_dq_kernel(", "\nattention_bwd_dkdv_kernel(",
             "static cudaError_t backward_hs(", "static cudaError_t backward_t(",
             "cudaError_t launch_attention_backward("):
    out.append(copy("attention_bwd.cu", head))

out.append(copy("gpu_model.cu", "static int sequence_tiles("))

for head in ("__global__ void copy_blocks_kernel", "__global__ void gather_rows_kernel"):
    out.append(copy("gpu_decode.cu", head))
out.append(prefill_launch("copy_blocks_kernel", "sim_copy_blocks",
                          "struct dec *d, struct gpu_model *g, int npairs, cudaStream_t st"))
out.append(prefill_launch("gather_rows_kernel", "sim_gather_rows",
                          "struct dec *d, struct gpu_model *g, int n, cudaStream_t st"))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
