/* cuda_runtime_api.h for the CPU simulations (see cuda_runtime.h): the
 * little of the CUDA runtime's C API that tests/cuda/cuda_skip.h uses. Plain C. */
#ifndef GRPO_SIM_CUDA_RUNTIME_API_H
#define GRPO_SIM_CUDA_RUNTIME_API_H
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
#ifdef __cplusplus
extern "C" {
#endif
cudaError_t cudaGetDeviceCount(int *n);
const char *cudaGetErrorString(cudaError_t err);
#ifdef __cplusplus
}
#endif
#endif
