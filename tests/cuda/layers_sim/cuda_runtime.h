// cuda_runtime.h for layers_sim: what kernels/loss.cuh includes it for
// (cudaError_t, cudaStream_t) comes from shim.h, included first.
#pragma once
