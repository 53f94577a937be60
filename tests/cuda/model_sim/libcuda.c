/* libcuda.c for model_sim (see run.sh): built as the libcuda.so.1 that
 * lib/model/model_gpu.c asks (dlopen) whether the machine has a GPU before
 * it uses the CUDA library's table: one device, the simulation's. */
int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuGetErrorName(int error, const char **name) { (void)error; *name = "CUDA_ERROR_UNKNOWN"; return 0; }
