/* cuda_skip.h: the CUDA tests' one rule for a machine without a GPU. */
#ifndef GRPO_TESTS_CUDA_SKIP_H
#define GRPO_TESTS_CUDA_SKIP_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_model.h"
#include "tap.h"

/*
 * Skip the whole test, saying why, where no GPU is present. A machine with
 * the NVIDIA driver loaded has a GPU: there a failure is a broken set-up (a
 * driver older than the runtime, say), not a reason to skip, so it bails out.
 */
static void skip_without_gpu(void)
{
	int devices = 0;
	cudaError_t err = cudaGetDeviceCount(&devices);
	if (err != cudaSuccess && err != cudaErrorNoDevice && access("/dev/nvidiactl", F_OK) == 0) {
		printf("Bail out! a GPU driver is loaded but CUDA fails: %s\n", cudaGetErrorString(err));
		exit(1);
	}
	if (err != cudaSuccess || devices == 0) {
		char reason[200] = "", why[300];
		gpu_count(reason, sizeof reason);
		snprintf(why, sizeof why, "no GPU: CUDA kernels built but not run (%s)", reason);
		skip_all(why);
	}
}

#endif
