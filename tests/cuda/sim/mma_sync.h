// mma_sync.h: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 on the
// CPU for the sims (mma_sim, model_sim): each lane of a warp posts its
// fragments of A (four registers of two bf16), B (two) and its four fp32
// accumulators; past a barrier of the warp every lane reads the rows and
// columns its accumulators need from the others' fragments, in the PTX
// manual's layout, and adds the 16 products in k order in fp32.
#pragma once
#include "cuda_runtime.h"
#include "cuda_bf16.h"

namespace sim {
struct mma_slot { uint32_t a[4], b0, b1; };
inline mma_slot mma_slots[32][32];   // [warp][lane]: the fragments crossing an mma.sync

static inline float mma_half(uint32_t reg, int hi)
{
	__nv_bfloat16 b = { (uint16_t)(hi ? reg >> 16 : reg & 0xffff) };
	return __bfloat162float(b);
}
// A (16 x 16, row-major) at row r, column k; B (16 x 8, column-major) at k, n
static inline float mma_a(const mma_slot *s, int r, int k)
{
	int gid = r % 8, tig = (k % 8) / 2, reg = (r >= 8) + 2 * (k >= 8);
	return mma_half(s[gid * 4 + tig].a[reg], k % 2);
}
static inline float mma_b(const mma_slot *s, int k, int n)
{
	const mma_slot &x = s[n * 4 + (k % 8) / 2];
	return mma_half(k >= 8 ? x.b1 : x.b0, k % 2);
}

static inline void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	int w = threadIdx.x / 32, l = threadIdx.x % 32, gid = l / 4, tig = l % 4;
	mma_slot *s = mma_slots[w];
	memcpy(s[l].a, a, 16);
	s[l].b0 = b0;
	s[l].b1 = b1;
	warp_wait("mma16816");
	for (int i = 0; i < 4; i++) {
		int r = gid + (i >= 2) * 8, n = tig * 2 + i % 2;
		float acc = c[i];
		for (int k = 0; k < 16; k++)
			acc += mma_a(s, r, k) * mma_b(s, k, n);
		c[i] = acc;
	}
	warp_wait("mma16816");
}
} // namespace sim
