/*
 * fake-libcuda.c: a stand-in for the CUDA driver, libcuda.so.1, with only
 * the three calls grpo-tools asks of it before loading its CUDA library
 * (lib/model/model_gpu.c): cuInit answers FAKE_CUDA_INIT (default 0,
 * success) and cuDeviceGetCount FAKE_CUDA_DEVICES (default 0). The CUDA
 * runtime finds nothing else in it and fails, saying so, which is what
 * tests/cli/cuda-load.t needs of a driver "with a device" on a machine
 * without a GPU.
 */
#include <stdlib.h>

static int env(const char *name)
{
	const char *s = getenv(name);
	return s ? atoi(s) : 0;
}

int cuInit(unsigned flags)
{
	(void)flags;
	return env("FAKE_CUDA_INIT");
}

int cuDeviceGetCount(int *count)
{
	*count = env("FAKE_CUDA_DEVICES");
	return 0;
}

int cuGetErrorName(int error, const char **name)
{
	*name = error == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
	return 0;
}
