/* cuda_runtime_api.h for paged_sim (see sim.cc): the little of the CUDA
 * runtime's C API that tests/cuda/cuda_skip.h uses. Plain C. */
#ifndef PAGED_SIM_CUDA_RUNTIME_API_H
#define PAGED_SIM_CUDA_RUNTIME_API_H
typedef enum {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorNoDevice = 100,
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
