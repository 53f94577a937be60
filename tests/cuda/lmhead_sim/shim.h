// shim.h for lmhead_sim (see sim.cc): sample_sim's CUDA shims (threads,
// barriers, shuffles, __shared__) and the float4 that lmhead.cu loads.
#include "sample_sim/shim.h"
struct alignas(16) float4 { float x, y, z, w; };
static float4 make_float4(float x, float y, float z, float w) { return { x, y, z, w }; }
