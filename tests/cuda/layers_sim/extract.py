# Writes kern.inc into the directory given: device.cuh's helpers, then
# layers.cu's embedding, q/k/v preparation and bias kernels, backward.cu's
# q/k/v preparation and embedding backward, loss.cu's loss rows, each with
# its launcher, and gpu_optim.cu's gradient norm, AdamW and weight
# conversion kernels, copied from kernels/ unchanged except for their
# launches (tests/cuda/sim/kernsrc.py). gpu_optim.cu's launchers take
# struct gpu_model, so sim_sumsq, sim_adamw and sim_convert stand in for
# them, with the grid and block read from their launches.
# LAYERS_SIM_KERNELS names another kernels directory to copy from.
import re
import sys

sys.path.insert(0, sys.path[0] + "/../sim")
from kernsrc import Kernels

k = Kernels(("device.cuh", "layers.cu", "backward.cu", "loss.cu", "gpu_optim.cu"), "LAYERS_SIM_KERNELS")


def grid(f, launcher, kernel):
    """The grid and block of kernel's launch in the function launcher of f,
    with the line that computes `blocks` where there is one."""
    text = k.function(f, launcher)
    m = re.search(kernel + r"(?:<\w+>)?<<<(.*?), (.*?), 0, g->stream>>>", text)
    blocks = re.search(r"\n\t(int blocks = .*?;)\n", text)
    return (blocks.group(1) + "\n\t" if blocks else ""), m.group(1), m.group(2)


out = ["#include <cuda_runtime.h>", k.head("device.cuh", "// CUDA-core attention") + "#endif\n"]

out.append(k.defines("layers.cu", "PREP_WARPS", "PREP_MAX_HS"))
for head in ("__global__ void embed_kernel", "cudaError_t launch_embed(", "__global__ void qkv_prep_kernel",
             "cudaError_t launch_qkv_prep(", "__global__ void add_bias_kernel", "cudaError_t launch_add_bias("):
    out.append(k.copy("layers.cu", head))

out.append(k.defines("backward.cu", "THREADS", "PREP_WARPS", "PREP_MAX_HS"))
for head in ("__global__ void qkv_prep_bwd_kernel", "cudaError_t launch_qkv_prep_backward(",
             "__global__ void embed_bwd_kernel", "cudaError_t launch_embed_backward("):
    out.append(k.copy("backward.cu", head))

out += ['#include "gpu_model.h"', '#include "loss.cuh"', k.defines("loss.cu", "THREADS")]
for head in ("__global__ void loss_rows_kernel", "cudaError_t launch_loss_rows("):
    out.append(k.copy("loss.cu", head))

out.append(k.defines("gpu_optim.cu", "NORM_BLOCKS", "NORM_THREADS"))
for head in ("__global__ void sumsq_kernel", "__global__ void adamw_kernel", "__global__ void convert_kernel"):
    out.append(k.copy("gpu_optim.cu", head))
b, g, t = grid("gpu_optim.cu", "int gpu_model_grad_norm(", "sumsq_kernel")
out.append("""static void sim_sumsq(double *partial, const float *x, size_t n)
{
	%s%s(dim3(%s), dim3(%s), [&] { sumsq_kernel(partial, x, n); });
}
""" % (b, k.launcher("sumsq_kernel"), g, t))
b, g, t = grid("gpu_optim.cu", "static cudaError_t adamw_launch(", "adamw_kernel")
out.append("""static void sim_adamw(float *w, float *m, float *v, const float *grad, size_t n, struct gpu_adamw p)
{
	%s%s(dim3(%s), dim3(%s), [&] { adamw_kernel(w, m, v, grad, n, p); });
}
""" % (b, k.launcher("adamw_kernel"), g, t))
b, g, t = grid("gpu_optim.cu", "static cudaError_t to_weights(", "convert_kernel")
out.append("""template <typename T> static void sim_convert(T *dst, const float *src, size_t n)
{
	%s%s(dim3(%s), dim3(%s), [&] { convert_kernel<T>(dst, src, n); });
}
""" % (b, k.launcher("convert_kernel"), g, t))
open(sys.argv[1] + "/kern.inc", "w").write("\n".join(out) + "\n")
