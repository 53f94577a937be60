// gpu_model_impl.cuh for paged_sim (see sim.cc): the two things of the GPU
// model's that paged_attention.cu's test entry uses, done on the host.
#pragma once
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_bf16.h>

static inline int gpu_fail(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return -1;
}

static inline cudaError_t act_put(void *dst, const float *src, size_t n, int bf16)
{
	if (!bf16)
		return cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice);
	__nv_bfloat16 *d = (__nv_bfloat16 *)dst;
	for (size_t i = 0; i < n; i++)
		d[i] = __float2bfloat16_rn(src[i]);
	return cudaSuccess;
}

static inline cudaError_t act_get(float *dst, const void *src, size_t n, int bf16)
{
	if (!bf16)
		return cudaMemcpy(dst, src, n * 4, cudaMemcpyDeviceToHost);
	const __nv_bfloat16 *s = (const __nv_bfloat16 *)src;
	for (size_t i = 0; i < n; i++)
		dst[i] = __bfloat162float(s[i]);
	return cudaSuccess;
}
