# Writes kern.inc into the directory given: device.cuh's helpers, then
# layers.cu's embedding, q/k/v preparation and bias kernels, backward.cu's
# q/k/v preparation and embedding backward, loss.cu's loss rows, each with
# its launcher, and gpu_optim.cu's gradient norm, AdamW and weight
# conversion kernels, copied from kernels/ unchanged except that each
# <<<grid, block, smem, stream>>> launch becomes a call of launch(), or of
# launch_serial() where the kernel never synchronises (tests/cuda/sim). gpu_optim.cu's
# launchers take struct gpu_model, so sim_sumsq, sim_adamw and sim_convert
# stand in for them, with the grid and block read from their launches.
# LAYERS_SIM_KERNELS names another kernels directory to copy from.
import os
import re
import sys

here = sys.path[0]
kernels = os.environ.get("LAYERS_SIM_KERNELS") or here + "/../../../kernels"
src = {f: open(kernels + "/" + f).read() for f in ("device.cuh", "layers.cu", "backward.cu", "loss.cu", "gpu_optim.cu")}
SYNC = re.compile(r"__syncthreads|__syncwarp|__shfl|warp_sum|block_sum|row_sum")


def function(text, head):
    """The definition containing head: from the blank line before it to its closing brace."""
    i = text.index(head)
    return text[text.rfind("\n\n", 0, i) + 2:text.index("\n}\n", i) + 3]


def defines(f, *names):
    """f's values of names, each #undef'd first: two files may define one name."""
    out = []
    for name in names:
        value = re.search(r"#define %s (\w+)" % name, src[f]).group(1)
        out += ["#undef %s" % name, "#define %s %s" % (name, value)]
    return "\n".join(out)


def serial(kernel):
    """Whether kernel (its name) never synchronises its threads."""
    return not SYNC.search(kernels_seen[kernel])


def launcher(kernel):
    return "launch_serial" if serial(kernel) else "launch"


def as_call(m):
    name = m.group(1).split("<")[0]
    return "%s(dim3(%s), dim3(%s), [&] { %s(%s); });" % (launcher(name), m.group(2), m.group(3), m.group(1),
                                                         m.group(4))


LAUNCH = re.compile(r"(\w+(?:<\w+>)?)<<<(.*?), (.*?), [^,]+, [\w>-]+>>>\((.*?)\);", re.S)
kernels_seen = {}


def copy(f, head):
    text = function(src[f], head)
    m = re.search(r"__global__ void (\w+)", text)
    if m:
        kernels_seen[m.group(1)] = text
    return LAUNCH.sub(as_call, text)


def grid(f, launcher, kernel):
    """The grid and block of kernel's launch in the function launcher of f,
    with the line that computes `blocks` where there is one."""
    text = function(src[f], launcher)
    m = re.search(kernel + r"(?:<\w+>)?<<<(.*?), (.*?), 0, g->stream>>>", text)
    blocks = re.search(r"\n\t(int blocks = .*?;)\n", text)
    return (blocks.group(1) + "\n\t" if blocks else ""), m.group(1), m.group(2)


device = src["device.cuh"]
out = ["#include <cuda_runtime.h>", device.split("// CUDA-core attention")[0] + "#endif\n"]

out.append(defines("layers.cu", "PREP_WARPS", "PREP_MAX_HS"))
for head in ("__global__ void embed_kernel", "cudaError_t launch_embed(", "__global__ void qkv_prep_kernel",
             "cudaError_t launch_qkv_prep(", "__global__ void add_bias_kernel", "cudaError_t launch_add_bias("):
    out.append(copy("layers.cu", head))

out.append(defines("backward.cu", "THREADS", "PREP_WARPS", "PREP_MAX_HS"))
for head in ("__global__ void qkv_prep_bwd_kernel", "cudaError_t launch_qkv_prep_backward(",
             "__global__ void embed_bwd_kernel", "cudaError_t launch_embed_backward("):
    out.append(copy("backward.cu", head))

out += ['#include "gpu_model.h"', '#include "loss.cuh"', defines("loss.cu", "THREADS")]
for head in ("__global__ void loss_rows_kernel", "cudaError_t launch_loss_rows("):
    out.append(copy("loss.cu", head))

out.append(defines("gpu_optim.cu", "NORM_BLOCKS", "NORM_THREADS"))
for head in ("__global__ void sumsq_kernel", "__global__ void adamw_kernel", "__global__ void convert_kernel"):
    out.append(copy("gpu_optim.cu", head))
b, g, t = grid("gpu_optim.cu", "int gpu_model_grad_norm(", "sumsq_kernel")
out.append("""static void sim_sumsq(double *partial, const float *x, size_t n)
{
	%s%s(dim3(%s), dim3(%s), [&] { sumsq_kernel(partial, x, n); });
}
""" % (b, launcher("sumsq_kernel"), g, t))
b, g, t = grid("gpu_optim.cu", "int gpu_model_adamw(", "adamw_kernel")
out.append("""static void sim_adamw(float *w, float *m, float *v, const float *grad, size_t n, struct gpu_adamw p)
{
	%s%s(dim3(%s), dim3(%s), [&] { adamw_kernel(w, m, v, grad, n, p); });
}
""" % (b, launcher("adamw_kernel"), g, t))
b, g, t = grid("gpu_optim.cu", "static cudaError_t to_weights(", "convert_kernel")
out.append("""template <typename T> static void sim_convert(T *dst, const float *src, size_t n)
{
	%s%s(dim3(%s), dim3(%s), [&] { convert_kernel<T>(dst, src, n); });
}
""" % (b, launcher("convert_kernel"), g, t))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
