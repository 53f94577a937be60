// paged_sim: kernels/paged_attention.cu, its kernels and its test entry
// unchanged, run on the CPU (tests/cuda/sim), with the launchers (which
// use <<< >>>) copied here with their grids. Linked with
// tests/cuda/test_cuda_paged.c, whose main then runs its whole plan against
// the emulated kernels; with -DSIM_EXTRA, its own main checks what the test
// cannot reach (a context past max_ctx). It checks the indexing, masking,
// partitioning and the test itself; it says nothing about timing,
// alignment faults or the hardware's rounding (expf here, not __expf).
// Run by run.sh beside it; no GPU needed.
#include "paged.inc"
#include <cstdio>
#include <cstdlib>
#include <vector>

// ---- the launchers of paged_attention.cu, their checks and grids copied ----

cudaError_t launch_kv_write(void *kc, void *vc, const void *qkv, const int32_t *slots, int T, int NH, int NKV,
			    int HS, int bf16flag, cudaStream_t)
{
	if (HS <= 0 || HS % 4 || NH < 0 || NKV <= 0)
		return cudaErrorInvalidValue;
	launch_serial(dim3(T), dim3(128), [&] {
		if (bf16flag)
			kv_write_kernel<bf16>((bf16 *)kc, (bf16 *)vc, (const bf16 *)qkv, slots, NH, NKV, HS);
		else
			kv_write_kernel<float>((float *)kc, (float *)vc, (const float *)qkv, slots, NH, NKV, HS);
	});
	return cudaSuccess;
}

template <int HS>
static void sim_attention(void *out, const void *qkv, const void *kc, const void *vc, const int32_t *table,
			  int table_stride, const int32_t *ctx_lens, int B, int max_ctx, float *work, int NH, int NKV,
			  int bf16flag)
{
	int chunks = (NH / NKV + PAGED_QMAX - 1) / PAGED_QMAX;
	dim3 grid(B, NKV * chunks, paged_splits(max_ctx));
	float scale = 1.0f / sqrtf((float)HS);
	launch(grid, dim3(32 * PAGED_WARPS), [&] {
		if (bf16flag)
			paged_attention_kernel<HS, bf16>((bf16 *)out, work, (const bf16 *)qkv, (const bf16 *)kc,
							 (const bf16 *)vc, table, table_stride, ctx_lens, max_ctx, NH,
							 NKV, chunks, scale);
		else
			paged_attention_kernel<HS, float>((float *)out, work, (const float *)qkv, (const float *)kc,
							  (const float *)vc, table, table_stride, ctx_lens, max_ctx, NH,
							  NKV, chunks, scale);
	});
}

cudaError_t launch_paged_attention(void *out, const void *qkv, const void *kc, const void *vc,
				   const int32_t *block_table, int table_stride, const int32_t *ctx_lens, int B,
				   int max_ctx, float *work, int NH, int NKV, int HS, int bf16flag, cudaStream_t)
{
	if (NKV <= 0 || NH % NKV || max_ctx < 0 || (NH / NKV + PAGED_QMAX - 1) / PAGED_QMAX * NKV > 65535)
		return cudaErrorInvalidValue;
	int S = paged_splits(max_ctx);
	if (S > 65535 || (S > 1 && !work))
		return cudaErrorInvalidValue;
	if (B == 0)
		return cudaSuccess;
#define SIM_HS(n) \
	case n: sim_attention<n>(out, qkv, kc, vc, block_table, table_stride, ctx_lens, B, max_ctx, work, NH, NKV, bf16flag); break
	switch (HS) {
	SIM_HS(16); SIM_HS(24); SIM_HS(32); SIM_HS(48); SIM_HS(64); SIM_HS(80); SIM_HS(96); SIM_HS(128);
	default: return cudaErrorInvalidValue;
	}
	if (S == 1)
		return cudaSuccess;
	launch_serial(dim3(B, NH), dim3(32), [&] {
		if (bf16flag)
			paged_combine_kernel<bf16>((bf16 *)out, work, ctx_lens, max_ctx, NH, HS, S);
		else
			paged_combine_kernel<float>((float *)out, work, ctx_lens, max_ctx, NH, HS, S);
	});
	return cudaSuccess;
}

int attention_head_size_ok(int HS)
{
	return HS == 16 || HS == 24 || HS == 32 || HS == 48 || HS == 64 || HS == 80 || HS == 96 || HS == 128;
}

// ---- the runtime, on host memory ----

extern "C" cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}
extern "C" const char *cudaGetErrorString(cudaError_t err) { return err ? "emulated error" : "no error"; }
extern "C" int gpu_count(char *, size_t) { return 1; }
cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = aligned_alloc(256, (n + 255) / 256 * 256);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n)
{
	memset(p, v, n);
	return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind)
{
	memcpy(d, s, n);
	return cudaSuccess;
}
static struct sim_stream { int x; } the_stream;
static struct sim_graph { int x; } the_graph;
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
	*s = &the_stream;
	return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) { return cudaSuccess; }
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g)
{
	*g = &the_graph;
	return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long)
{
	*e = g;
	return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }

#ifdef SIM_EXTRA
// A row whose context is past the launch's max_ctx gets NaNs (and its
// neighbours their results), with and without a workspace; a step with
// B = 0 launches nothing.
int main()
{
	const int NH = 2, NKV = 1, HS = 16, nb = 40;
	std::vector<float> kc((size_t)nb * KV_BLOCK * HS, 0.5f), vc(kc.size(), 1.0f), qkv(2 * (NH + 2 * NKV) * HS, 0.25f);
	std::vector<int32_t> table(2 * nb);
	for (int i = 0; i < 2 * nb; i++)
		table[i] = i % nb;
	int fails = 0;
	for (int max_ctx : { 100, 600 }) {
		int32_t lens[2] = { max_ctx + 1, 7 };
		std::vector<float> out(2 * NH * HS, 0.0f), work(paged_attention_workspace_bytes(2, NH, HS, max_ctx) / 4 + 1);
		cudaError_t err = launch_paged_attention(out.data(), qkv.data(), kc.data(), vc.data(), table.data(), nb,
							 lens, 2, max_ctx, work.data(), NH, NKV, HS, 0, nullptr);
		int nan = 0, ones = 0;
		for (int i = 0; i < NH * HS; i++) {
			nan += std::isnan(out[i]);
			ones += out[NH * HS + i] == 1.0f;   // every value is 1: so is their mean
		}
		printf("max_ctx %d: %d of %d NaN past it, %d of %d ones beside it\n", max_ctx, nan, NH * HS, ones, NH * HS);
		fails += err != cudaSuccess || nan != NH * HS || ones != NH * HS;
	}
	fails += launch_paged_attention(nullptr, nullptr, nullptr, nullptr, nullptr, 1, nullptr, 0, 600, nullptr, NH,
					NKV, HS, 0, nullptr) != cudaErrorInvalidValue;   // no workspace
	fails += launch_paged_attention(nullptr, nullptr, nullptr, nullptr, nullptr, 1, nullptr, 0, 100, nullptr, NH,
					NKV, HS, 0, nullptr) != cudaSuccess;
	printf(fails ? "FAIL\n" : "PASS\n");
	return fails != 0;
}
#endif
