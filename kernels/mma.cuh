// mma.cuh: the tensor-core kernels' shared pieces (attention_mma.cu,
// attention_bwd_mma.cu): mma.sync.m16n8k16 with bf16 inputs and fp32
// accumulators, and the packing of fragments. The thread layout is PTX's:
// lane = 4 gid + tig; A (16 x 16, row-major) a0 = (gid, 2 tig .. +1),
// a1 = (gid + 8, 2 tig), a2 = (gid, 2 tig + 8), a3 = (gid + 8, 2 tig + 8);
// B (16 x 8, k by n) b0 = (k 2 tig .. +1, n gid), b1 = (k 2 tig + 8 .. +9,
// n gid); C (16 x 8) c0, c1 = (gid, 2 tig .. +1), c2, c3 = (gid + 8, 2 tig .. +1).
#ifndef GRPO_KERNELS_MMA_CUH
#define GRPO_KERNELS_MMA_CUH

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t ld32(const bf16 *p) { return *(const uint32_t *)p; }

// Two bf16 in one register, lo in the low half (the lower k index).
static __device__ __forceinline__ uint32_t pack2(bf16 lo, bf16 hi)
{
	return (uint32_t)__bfloat16_as_ushort(lo) | (uint32_t)__bfloat16_as_ushort(hi) << 16;
}
static __device__ __forceinline__ uint32_t pack2f(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
	return *(uint32_t *)&v;
}

static __device__ __forceinline__ float quad_max(float v)
{
	v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
	return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
static __device__ __forceinline__ float quad_sum(float v)
{
	v += __shfl_xor_sync(0xffffffffu, v, 1);
	return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

#endif
