// prof.cc for model_sim (see run.sh): kernels/gpu_prof.cuh's profiler,
// which times CUDA events, as nothing: the sim has no time to measure.
#include "gpu_prof.cuh"
struct gpu_prof *prof_new(void) { return nullptr; }
void prof_free(struct gpu_prof *) {}
void prof_start(struct gpu_model *) {}
void prof_mark(struct gpu_model *, const char *, double) {}
void prof_tag(struct gpu_model *, const char *) {}
void prof_collect(struct gpu_model *) {}
