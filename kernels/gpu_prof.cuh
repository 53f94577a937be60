// gpu_prof.cuh: where the GPU model's passes spend their time, measured
// with CUDA events when GRPO_CUDA_PROFILE is set (the GPU machine has no
// profiler of its own). Not an interface: gpu_model.cu, gpu_train.cu and
// gpu_optim.cu mark the end of each phase of a pass; the time between two
// marks on the stream is the later mark's phase. The table is printed to
// standard error when the model is freed: each phase's total milliseconds,
// its share, its calls, and the TFLOP/s of those that say their FLOPs.
//
// Marks cost a cudaEventRecord each (a few microseconds of the host's
// time, none of the GPU's) and are skipped while a stream is captured into
// a graph (the decoder's steps), where events cannot be timed.
#ifndef GRPO_KERNELS_GPU_PROF_CUH
#define GRPO_KERNELS_GPU_PROF_CUH

#include <cuda_runtime.h>

struct gpu_model;
struct gpu_prof;

// A profile for g when GRPO_CUDA_PROFILE is set and not "0", else NULL.
struct gpu_prof *prof_new(void);
// Print the table (to stderr) and free it; NULL does nothing.
void prof_free(struct gpu_prof *p);

// A pass begins: the time from here to the first mark is that mark's.
void prof_start(struct gpu_model *g);
// The phase `what` (a string literal) ended here; flops, if not 0, the
// arithmetic it did, for its rate. Phases of the same name add up; while
// prof_tag is set (the backward's recompute of a layer), they add up under
// "tag: what" instead.
void prof_mark(struct gpu_model *g, const char *what, double flops);
void prof_tag(struct gpu_model *g, const char *tag);
// The pass's stream has been synchronized: add its marks into the totals.
void prof_collect(struct gpu_model *g);

#endif
