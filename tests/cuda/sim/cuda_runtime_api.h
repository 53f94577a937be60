/* cuda_runtime_api.h for the CPU simulations (see cuda_runtime.h): the
 * little of the CUDA runtime's C API that tests/cuda/cuda_skip.h and
 * test_cuda_lmhead.c use. Plain C; C linkage, as the real runtime's. */
#ifndef GRPO_SIM_CUDA_RUNTIME_API_H
#define GRPO_SIM_CUDA_RUNTIME_API_H
#include <stddef.h>
typedef enum {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInvalidConfiguration = 9,
	cudaErrorInvalidDevicePointer = 17,
	cudaErrorInsufficientDriver = 35,
	cudaErrorNoDevice = 100,
	cudaErrorStreamCaptureUnsupported = 900,
	cudaErrorStreamCaptureInvalidated = 901,
	cudaErrorStreamCaptureImplicit = 906,
} cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
		      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
#ifdef __cplusplus
extern "C" {
#endif
cudaError_t cudaGetDeviceCount(int *n);
const char *cudaGetErrorString(cudaError_t err);
cudaError_t cudaMalloc(void **p, size_t n);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k);
cudaError_t cudaDeviceSynchronize(void);
#ifdef __cplusplus
}
#endif
#endif
