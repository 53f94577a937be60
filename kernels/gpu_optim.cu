// gpu_optim.cu: the optimizer's side of the GPU model (gpu_model.h): the
// fp32 master weights and AdamW moments, kept in the gradients' fused
// layout so that AdamW is one pass over one flat array (two, matrices then
// vectors, when the 1-D tensors do not decay); the global gradient
// norm; and copies between that layout and lib/model's (host fp32 arrays,
// struct gpu_host_params), for the gradients, the master weights and the
// moments alike, straight by DMA where the caller's arrays are page-locked
// (gpu_model_host_pin).
//
// The arithmetic is lib/train/optim.c's, in double per weight as there, so
// an fp32 GPU step and a CPU step differ only by the gradients' rounding.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device.cuh"
#include "gpu_model_impl.cuh"

#define NORM_BLOCKS 1024
#define NORM_THREADS 256

// ---- where a tensor lives in each state ----

// The state's base: every state has the gradients' layout, so a tensor's
// offset from the gradients' start is its offset in each.
static float *state_base(struct gpu_model *g, enum gpu_state which)
{
	switch (which) {
	case GPU_STATE_GRAD: return (float *)g->gmem;
	case GPU_STATE_MASTER: return g->master;
	case GPU_STATE_ADAM_M: return g->adam_m;
	case GPU_STATE_ADAM_V: return g->adam_v;
	}
	return NULL;
}

static float *in_state(struct gpu_model *g, float *base, const float *grad_tensor)
{
	return base + (grad_tensor - (const float *)g->gmem);
}

// One tensor of the fused layout and its host array, with what to copy: n
// values, or L layers of n rows of cols starting at row `from` of each
// layer's rows_per_layer (q/k/v out of wqkv, gate/up out of wgu).
struct span {
	float *host;
	const float *dev;   // in the gradients
	size_t L, rows_per_layer, from, rows, cols;
};

static int spans(struct gpu_model *g, const struct gpu_host_params *h, struct span *out)
{
	const struct gpu_model_shape *s = &g->s;
	size_t C = s->C, I = s->I, V = s->V, L = s->L, HS = s->HS;
	size_t QD = (size_t)s->NH * HS, KD = (size_t)s->NKV * HS, QKV = QD + 2 * KD;
	struct span all[] = {
		{ h->embed, g->g_embed, 1, V, 0, V, C },
		{ g->tied ? NULL : h->lm_head, g->g_lm_head, 1, V, 0, V, C },
		{ h->ln1, g->g_ln1, 1, L, 0, L, C },
		{ h->ln2, g->g_ln2, 1, L, 0, L, C },
		{ h->norm, g->g_norm, 1, 1, 0, 1, C },
		{ h->wo, g->g_wo, 1, L * C, 0, L * C, QD },
		{ h->wdown, g->g_wdown, 1, L * C, 0, L * C, I },
		{ h->qnorm, g->g_qnorm, 1, L, 0, L, HS },
		{ h->knorm, g->g_knorm, 1, L, 0, L, HS },
		{ h->bo, g->g_bo, 1, L, 0, L, C },
		{ h->wq, g->g_wqkv, L, QKV, 0, QD, C },
		{ h->wk, g->g_wqkv, L, QKV, QD, KD, C },
		{ h->wv, g->g_wqkv, L, QKV, QD + KD, KD, C },
		{ h->bq, g->g_bqkv, L, QKV, 0, QD, 1 },
		{ h->bk, g->g_bqkv, L, QKV, QD, KD, 1 },
		{ h->bv, g->g_bqkv, L, QKV, QD + KD, KD, 1 },
		{ h->wgate, g->g_wgu, L, 2 * I, 0, I, C },
		{ h->wup, g->g_wgu, L, 2 * I, I, I, C },
	};
	int n = (int)(sizeof all / sizeof all[0]);
	for (int i = 0; i < n; i++)
		out[i] = all[i];
	return n;
}

// Each span's blocks (one per layer of a fused tensor, else one), queued on
// the model's stream behind the kernels before them. Between the device and
// page-locked host memory each is a DMA at the link's bandwidth, the next
// queued while it runs; with pageable memory the driver stages each through
// its own pinned buffers and a host memcpy (about 10 GB/s), as cudaMemcpy.
static int queue_copies(struct gpu_model *g, float *base, const struct span *sp, int n, int to_host, char *msg,
			size_t msglen)
{
	for (int i = 0; i < n; i++) {
		if (!sp[i].host)
			continue;
		size_t row = sp[i].cols * 4, block = sp[i].rows * row;
		for (size_t l = 0; l < sp[i].L; l++) {
			float *dev = in_state(g, base, sp[i].dev) + (l * sp[i].rows_per_layer + sp[i].from) * sp[i].cols;
			char *host = (char *)sp[i].host + l * block;
			if (to_host)
				CUDA_TRY(cudaMemcpyAsync(host, dev, block, cudaMemcpyDeviceToHost, g->stream));
			else
				CUDA_TRY(cudaMemcpyAsync(dev, host, block, cudaMemcpyHostToDevice, g->stream));
		}
	}
	return 0;
}

// Between host arrays and one state: to_host, or to the device. A NULL host
// array is skipped (the family has no such tensor; its device values stay).
// On return every copy is done: the host arrays hold the state, or may change.
static int copy_state(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *h, int to_host,
		      char *msg, size_t msglen)
{
	float *base = state_base(g, which);
	if (!g->train || !base)
		return gpu_fail(msg, msglen, "this GPU model holds no %s",
				which == GPU_STATE_GRAD ? "gradients" : "optimizer state");
	struct span sp[18];
	int n = spans(g, h, sp);
	prof_start(g);
	if (queue_copies(g, base, sp, n, to_host, msg, msglen) < 0) {
		cudaStreamSynchronize(g->stream);   // nothing left in flight to or from the caller's arrays
		return -1;
	}
	prof_mark(g, to_host ? "copies to the host" : "copies from the host", 0);
	CUDA_TRY(cudaStreamSynchronize(g->stream));
	prof_collect(g);
	return 0;
}

int gpu_model_state_get(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *out, char *msg,
			size_t msglen)
{
	return copy_state(g, which, out, 1, msg, msglen);
}

int gpu_model_state_put(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *in, char *msg,
			size_t msglen)
{
	return copy_state(g, which, in, 0, msg, msglen);
}

// ---- page-locked host arrays ----

// The whole pages inside a pinned array are left out of a fork's child
// (MADV_DONTFORK, as RDMA libraries do): else Linux copies every pinned page
// into the child at the fork (gigabytes, for --on-publish's fork and exec),
// and kernels before 5.9 would leave the DMA on the child's copy. The edge
// pages, which other allocations may share, stay.
static void dontfork(void *p, size_t bytes, int advice)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p;
	uintptr_t lo = (a + page - 1) & ~(page - 1), hi = (a + bytes) & ~(page - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, advice);   // best effort: a fork copies what it cannot keep out
}

int gpu_model_host_pin(struct gpu_model *g, void *p, size_t bytes, char *msg, size_t msglen)
{
	const char *env = getenv("GRPO_CUDA_PIN");
	char *a = (char *)p;
	if (env && strcmp(env, "0") == 0) {
		gpu_fail(msg, msglen, "left pageable: GRPO_CUDA_PIN=0");
		return 1;
	}
	for (int i = 0; i < g->npins; i++) {
		char *b = (char *)g->pins[i].p;
		if (a == b && bytes == g->pins[i].bytes)
			return 0;
		if (a < b + g->pins[i].bytes && b < a + bytes) {
			gpu_fail(msg, msglen, "left pageable: %.1f MiB overlapping an array pinned before", bytes / 1048576.0);
			return 1;
		}
	}
	if (!p || bytes == 0 || g->npins == GPU_PINS) {
		gpu_fail(msg, msglen, "left pageable: %s", g->npins == GPU_PINS ? "no room for another array" : "empty");
		return 1;
	}
	cudaError_t err = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
	if (err != cudaSuccess) {
		cudaGetLastError();   // not a sticky error: cleared, so that no later check reports it
		gpu_fail(msg, msglen, "left pageable: cudaHostRegister of %.1f MiB: %s", bytes / 1048576.0,
			 cudaGetErrorString(err));
		return 1;
	}
	dontfork(p, bytes, MADV_DONTFORK);
	g->pins[g->npins].p = p;
	g->pins[g->npins].bytes = bytes;
	g->npins++;
	return 0;
}

void gpu_unpin_all(struct gpu_model *g)
{
	for (int i = 0; i < g->npins; i++) {
		cudaHostUnregister(g->pins[i].p);
		dontfork(g->pins[i].p, g->pins[i].bytes, MADV_DOFORK);
	}
	g->npins = 0;
}

// ---- the optimizer's allocation ----

int gpu_model_optim_alloc(struct gpu_model *g, char *msg, size_t msglen)
{
	if (!g->train)
		return gpu_fail(msg, msglen, "a GPU model made for inference has no optimizer");
	if (g->omem)
		return 0;
	size_t n = g->grad_bytes / 4;
	size_t bytes = 3 * g->grad_bytes + NORM_BLOCKS * sizeof(double);
	cudaError_t err = cudaMalloc(&g->omem, bytes);
	if (err != cudaSuccess) {
		g->omem = NULL;
		return gpu_fail(msg, msglen, "cudaMalloc of %.1f MiB of master weights and AdamW moments: %s",
				bytes / 1048576.0, cudaGetErrorString(err));
	}
	g->obytes = bytes;
	g->master = (float *)g->omem;
	g->adam_m = g->master + n;
	g->adam_v = g->adam_m + n;
	g->norm_partial = (double *)(g->adam_v + n);
	// the alignment gaps and absent tensors stay 0 in every state: AdamW
	// moves a zero weight with a zero gradient nowhere
	CUDA_TRY(cudaMemset(g->omem, 0, bytes));
	return 0;
}

// ---- the global gradient norm ----

// Per block, the sum of squares of its grid-stride share, in double.
static __global__ void sumsq_kernel(double *partial, const float *x, size_t n)
{
	__shared__ double part[NORM_THREADS / 32];
	double s = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		s += (double)x[i] * x[i];
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		double t = 0;
		for (int w = 0; w < NORM_THREADS / 32; w++)
			t += part[w];
		partial[blockIdx.x] = t;
	}
}

int gpu_model_grad_norm(struct gpu_model *g, double *norm, char *msg, size_t msglen)
{
	if (!g->omem)
		return gpu_fail(msg, msglen, "gradient norm before gpu_model_optim_alloc");
	double part[NORM_BLOCKS];
	prof_start(g);
	sumsq_kernel<<<NORM_BLOCKS, NORM_THREADS, 0, g->stream>>>(g->norm_partial, (const float *)g->gmem,
								 g->grad_bytes / 4);
	CUDA_TRY(cudaGetLastError());
	CUDA_TRY(cudaMemcpyAsync(part, g->norm_partial, sizeof part, cudaMemcpyDeviceToHost, g->stream));
	prof_mark(g, "gradient norm", 0);
	CUDA_TRY(cudaStreamSynchronize(g->stream));
	prof_collect(g);
	double s = 0;
	for (int b = 0; b < NORM_BLOCKS; b++)   // in block order: the same bits every time
		s += part[b];
	*norm = sqrt(s);
	return 0;
}

// ---- AdamW, then the working weights from the master copy ----

static __global__ void adamw_kernel(float *w, float *m, float *v, const float *grad, size_t n, struct gpu_adamw p)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		double gi = (double)grad[i] * p.clip;
		double mi = p.beta1 * m[i] + (1 - p.beta1) * gi;
		double vi = p.beta2 * v[i] + (1 - p.beta2) * gi * gi;
		m[i] = (float)mi;
		v[i] = (float)vi;
		double wi = (double)w[i] * p.decay;
		w[i] = (float)(wi - p.step_size * mi / (sqrt(vi) / p.sqrt_bc2 + p.eps));
	}
}

template <typename T> static __global__ void convert_kernel(T *dst, const float *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		dst[i] = from_f<T>(src[i]);
}

static cudaError_t to_weights(struct gpu_model *g, void *dst, const float *grad_tensor, size_t n)
{
	const float *src = in_state(g, g->master, grad_tensor);
	int blocks = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
	if (g->bf16)
		convert_kernel<bf16><<<blocks, 256, 0, g->stream>>>((bf16 *)dst, src, n);
	else
		convert_kernel<float><<<blocks, 256, 0, g->stream>>>((float *)dst, src, n);
	return cudaGetLastError();
}

// The fp32 vectors (norms, biases) as they are; bq/bk/bv out of the fused
// (L, QKV) bias rows, each a strided copy.
static cudaError_t vec(struct gpu_model *g, float *dst, const float *grad_tensor, size_t n)
{
	if (!dst)
		return cudaSuccess;
	return cudaMemcpyAsync(dst, in_state(g, g->master, grad_tensor), n * 4, cudaMemcpyDeviceToDevice, g->stream);
}

static cudaError_t bias(struct gpu_model *g, float *dst, size_t from, size_t width, size_t QKV)
{
	if (!dst)
		return cudaSuccess;
	return cudaMemcpy2DAsync(dst, width * 4, in_state(g, g->master, g->g_bqkv) + from, QKV * 4, width * 4,
				 (size_t)g->s.L, cudaMemcpyDeviceToDevice, g->stream);
}

static int refresh_weights(struct gpu_model *g, char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	size_t C = s->C, I = s->I, V = s->V, L = s->L, HS = s->HS;
	size_t QD = (size_t)s->NH * HS, KD = (size_t)s->NKV * HS, QKV = QD + 2 * KD;
	CUDA_TRY(to_weights(g, g->embed, g->g_embed, V * C));
	if (!g->tied)
		CUDA_TRY(to_weights(g, g->lm_head, g->g_lm_head, V * C));
	CUDA_TRY(to_weights(g, g->wqkv, g->g_wqkv, L * QKV * C));
	CUDA_TRY(to_weights(g, g->wo, g->g_wo, L * C * QD));
	CUDA_TRY(to_weights(g, g->wgu, g->g_wgu, L * 2 * I * C));
	CUDA_TRY(to_weights(g, g->wdown, g->g_wdown, L * C * I));
	CUDA_TRY(vec(g, g->ln1, g->g_ln1, L * C));
	CUDA_TRY(vec(g, g->ln2, g->g_ln2, L * C));
	CUDA_TRY(vec(g, g->norm, g->g_norm, C));
	CUDA_TRY(vec(g, g->qnorm, g->g_qnorm, L * HS));
	CUDA_TRY(vec(g, g->knorm, g->g_knorm, L * HS));
	CUDA_TRY(vec(g, g->bo, g->g_bo, L * C));
	CUDA_TRY(bias(g, g->bq, 0, QD, QKV));
	CUDA_TRY(bias(g, g->bk, QD, KD, QKV));
	CUDA_TRY(bias(g, g->bv, QD + KD, KD, QKV));
	return 0;
}

int gpu_model_weights_from_master(struct gpu_model *g, char *msg, size_t msglen)
{
	if (!g->omem)
		return gpu_fail(msg, msglen, "no master weights (gpu_model_optim_alloc)");
	if (refresh_weights(g, msg, msglen) < 0)
		return -1;
	prof_mark(g, "working weights from the master copy", 0);
	CUDA_TRY(cudaStreamSynchronize(g->stream));
	prof_collect(g);
	return 0;
}

// AdamW on the n values from the gradients' offset `at` in every state.
static cudaError_t adamw_launch(struct gpu_model *g, size_t at, size_t n, const struct gpu_adamw *p)
{
	if (n == 0)
		return cudaSuccess;
	int blocks = (int)((n + 255) / 256 < 8192 ? (n + 255) / 256 : 8192);
	adamw_kernel<<<blocks, 256, 0, g->stream>>>(g->master + at, g->adam_m + at, g->adam_v + at,
						    (const float *)g->gmem + at, n, *p);
	return cudaGetLastError();
}

// One tensor of the gradients' layout: where, how many, whether 1-D.
struct region {
	size_t at, n;
	int vector;
};

static int region_order(const void *a, const void *b)
{
	size_t x = ((const struct region *)a)->at, y = ((const struct region *)b)->at;
	return x < y ? -1 : x > y;
}

// Without decay on the 1-D tensors (norm gains, biases; the fused q/k/v bias
// is one per layer): a launch per run of neighbouring tensors of one kind,
// in address order, the vectors' with decay 1 (the alignment gaps between
// tensors are 0 in every state and stay so, so a run may span them).
static int adamw_by_kind(struct gpu_model *g, const struct gpu_adamw *p, char *msg, size_t msglen)
{
	const struct gpu_model_shape *s = &g->s;
	size_t C = s->C, I = s->I, V = s->V, L = s->L, HS = s->HS;
	size_t QD = (size_t)s->NH * HS, KD = (size_t)s->NKV * HS, QKV = QD + 2 * KD;
	const float *base = (const float *)g->gmem;
	struct { const float *t; size_t n; int vector; } all[] = {
		{ g->g_embed, V * C, 0 },
		{ g->tied ? NULL : g->g_lm_head, V * C, 0 },   // tied: the embedding's, stepped once
		{ g->g_wqkv, L * QKV * C, 0 },
		{ g->g_wo, L * C * QD, 0 },
		{ g->g_wgu, L * 2 * I * C, 0 },
		{ g->g_wdown, L * C * I, 0 },
		{ g->g_ln1, L * C, 1 },
		{ g->g_ln2, L * C, 1 },
		{ g->g_norm, C, 1 },
		{ g->g_qnorm, L * HS, 1 },
		{ g->g_knorm, L * HS, 1 },
		{ g->g_bqkv, L * QKV, 1 },
		{ g->g_bo, L * C, 1 },
	};
	struct region r[sizeof all / sizeof all[0]];
	int nr = 0;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i].t && all[i].n) {
			r[nr].at = (size_t)(all[i].t - base), r[nr].n = all[i].n, r[nr].vector = all[i].vector;
			nr++;
		}
	qsort(r, (size_t)nr, sizeof *r, region_order);
	struct gpu_adamw kept = *p;
	kept.decay = 1;
	for (int i = 0; i < nr;) {
		int j = i + 1;
		while (j < nr && r[j].vector == r[i].vector)
			j++;
		size_t end = r[j - 1].at + r[j - 1].n;
		CUDA_TRY(adamw_launch(g, r[i].at, end - r[i].at, r[i].vector ? &kept : p));
		i = j;
	}
	return 0;
}

int gpu_model_adamw(struct gpu_model *g, const struct gpu_adamw *p, char *msg, size_t msglen)
{
	if (!g->omem)
		return gpu_fail(msg, msglen, "AdamW before gpu_model_optim_alloc");
	prof_start(g);
	if (p->decay_vectors || p->decay == 1)
		CUDA_TRY(adamw_launch(g, 0, g->grad_bytes / 4, p));
	else if (adamw_by_kind(g, p, msg, msglen) < 0)
		return -1;
	prof_mark(g, "AdamW", 0);
	return gpu_model_weights_from_master(g, msg, msglen);
}
