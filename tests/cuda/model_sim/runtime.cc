// runtime.cc for model_sim (see run.sh): the CUDA runtime that kernels/'s
// host code calls, on the CPU: one device, whose memory is host memory
// (SIM_GPU_MIB of it, 4096 by default), each allocation its own malloc so
// that AddressSanitizer (SIM_ASAN=1) sees the ends of each; copies and
// memsets checked to lie within one allocation where they name device
// memory (the sim aborts, naming the call, where one does not: the part of
// compute-sanitizer's memcheck that needs no sanitizer); streams in order,
// synchronous; graphs captured launch by launch and copy by copy and
// replayed by cudaGraphLaunch; events that time nothing; and mma.sync,
// emulated across a warp's threads as mma_sim does.
#include "sim_launch.h"
#include <cuda_bf16.h>
#include <map>
#include <mutex>
#include <vector>

// ---- memory ----

static std::map<uintptr_t, size_t> device, host;   // allocations: start, bytes
static size_t device_used;

static size_t gpu_bytes()
{
	static size_t total = [] {
		const char *v = getenv("SIM_GPU_MIB");
		return (size_t)(v && *v ? atoll(v) : 4096) << 20;
	}();
	return total;
}

// the allocation of m holding [p, p + n), or null
static const std::pair<const uintptr_t, size_t> *within(const std::map<uintptr_t, size_t> &m, const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	auto it = m.upper_bound(a);
	if (it == m.begin())
		return nullptr;
	--it;
	return a >= it->first && a - it->first <= it->second && n <= it->second - (a - it->first) ? &*it : nullptr;
}

static void fault(const char *call, const char *what, const void *p, size_t n)
{
	fprintf(stderr, "sim: %s: %s [%p, +%zu) is not within one device allocation\n", call, what, p, n);
	auto it = device.upper_bound((uintptr_t)p);
	if (it != device.begin()) {
		--it;
		fprintf(stderr, "sim:   the allocation below it: [%p, +%zu), %zd bytes from its start\n", (void *)it->first,
			it->second, (ssize_t)((uintptr_t)p - it->first));
	}
	abort();
}

static void check_dev(const char *call, const char *what, const void *p, size_t n)
{
	if (n && !within(device, p, n))
		fault(call, what, p, n);
}

static void check_copy(const char *call, void *d, const void *s, size_t n, cudaMemcpyKind k)
{
	if (k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice)
		check_dev(call, "destination", d, n);
	if (k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice)
		check_dev(call, "source", s, n);
	if (k == cudaMemcpyDefault && n && !within(device, d, n) && !within(device, s, n)) {
		fprintf(stderr, "sim: %s: cudaMemcpyDefault between two host arrays\n", call);
		abort();
	}
}

cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = nullptr;
	if (device_used + n > gpu_bytes())
		return cudaErrorMemoryAllocation;
	void *m = nullptr;
	if (posix_memalign(&m, 256, n ? n : 1) != 0)   // its end exactly n bytes on: ASan's redzone there
		return cudaErrorMemoryAllocation;
	memset(m, 0xff, n);   // a fresh allocation holds NaNs, where the GPU's may hold anything (often 0)
	device[(uintptr_t)m] = n;
	device_used += n;
	*p = m;
	return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
	if (!p)
		return cudaSuccess;
	auto it = device.find((uintptr_t)p);
	if (it == device.end()) {
		fprintf(stderr, "sim: cudaFree(%p): not a device allocation\n", p);
		abort();
	}
	device_used -= it->second;
	device.erase(it);
	free(p);
	return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned)
{
	*p = malloc(n ? n : 1);
	if (!*p)
		return cudaErrorMemoryAllocation;
	host[(uintptr_t)*p] = n;
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
	if (!p)
		return cudaSuccess;
	if (!host.erase((uintptr_t)p)) {
		fprintf(stderr, "sim: cudaFreeHost(%p): not from cudaHostAlloc\n", p);
		abort();
	}
	free(p);
	return cudaSuccess;
}

static std::map<uintptr_t, size_t> registered;
cudaError_t cudaHostRegister(void *p, size_t n, unsigned)
{
	if (!p || !n)
		return cudaErrorInvalidValue;
	for (auto &r : registered)   // overlapping a registered range: cudaErrorHostMemoryAlreadyRegistered
		if ((uintptr_t)p < r.first + r.second && r.first < (uintptr_t)p + n)
			return cudaErrorInvalidValue;
	registered[(uintptr_t)p] = n;
	return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
	return registered.erase((uintptr_t)p) ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
	*total = gpu_bytes();
	*free = gpu_bytes() - device_used;
	return cudaSuccess;
}

// ---- streams and graphs ----

struct sim_stream { int capturing, invalid; cudaGraph_t graph; };
struct sim_graph { std::vector<std::function<void()>> ops; };
struct sim_event { int recorded; };
static int capturing;   // streams now capturing

bool sim_capture(cudaStream_t s, std::function<void()> op)
{
	if (!s || !s->capturing)
		return false;
	s->graph->ops.push_back(std::move(op));
	return true;
}

// A synchronous call while a stream captures: the GPU refuses it and the capture
static cudaError_t sync_call(const char *call)
{
	if (!capturing)
		return cudaSuccess;
	fprintf(stderr, "sim: %s while a stream captures a graph: refused, and the capture invalidated\n", call);
	return cudaErrorStreamCaptureUnsupported;
}

cudaError_t cudaMemset(void *p, int v, size_t n)
{
	if (cudaError_t e = sync_call("cudaMemset"))
		return e;
	check_dev("cudaMemset", "memory", p, n);
	memset(p, v, n);
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k)
{
	if (cudaError_t e = sync_call("cudaMemcpy"))
		return e;
	check_copy("cudaMemcpy", d, s, n, k);
	if (n)
		memmove(d, s, n);
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st)
{
	check_copy("cudaMemcpyAsync", d, s, n, k);
	if (!sim_capture(st, [=] { if (n) memmove(d, s, n); }) && n)
		memmove(d, s, n);
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st)
{
	check_dev("cudaMemsetAsync", "memory", p, n);
	if (!sim_capture(st, [=] { memset(p, v, n); }))
		memset(p, v, n);
	return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *d, size_t dpitch, const void *s, size_t spitch, size_t width, size_t height,
			      cudaMemcpyKind k, cudaStream_t st)
{
	if (width > dpitch || width > spitch)
		return cudaErrorInvalidValue;
	if (!height || !width)
		return cudaSuccess;
	// the whole span each side touches, first byte to last
	check_copy("cudaMemcpy2DAsync", d, s, 0, k);
	if (k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice)
		check_dev("cudaMemcpy2DAsync", "destination", d, dpitch * (height - 1) + width);
	if (k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice)
		check_dev("cudaMemcpy2DAsync", "source", s, spitch * (height - 1) + width);
	auto op = [=] {
		for (size_t r = 0; r < height; r++)
			memmove((char *)d + r * dpitch, (const char *)s + r * spitch, width);
	};
	if (!sim_capture(st, op))
		op();
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	*s = new sim_stream{};
	return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	if (s && s->capturing) {
		fprintf(stderr, "sim: cudaStreamDestroy of a stream capturing a graph\n");
		abort();
	}
	delete s;
	return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return sync_call("cudaStreamSynchronize"); }
cudaError_t cudaDeviceSynchronize() { return sync_call("cudaDeviceSynchronize"); }

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode)
{
	if (!s || s->capturing)
		return cudaErrorInvalidValue;   // the legacy stream cannot capture
	s->capturing = 1, s->invalid = 0;
	s->graph = new sim_graph;
	capturing++;
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	if (!s || !s->capturing)
		return cudaErrorInvalidValue;
	s->capturing = 0;
	capturing--;
	*g = s->graph;
	s->graph = nullptr;
	return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st)
{
	*st = s && s->capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
	return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long)
{
	*e = new sim_graph(*g);
	return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long f)
{
	return cudaGraphInstantiate(e, g, f);
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
	if (s && s->capturing)
		return cudaErrorStreamCaptureUnsupported;
	for (auto &op : e->ops)
		op();
	return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { delete e; return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete g; return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new sim_event{}; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) { e->recorded = 1; return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	*ms = 0;
	return a->recorded && b->recorded ? cudaSuccess : cudaErrorInvalidValue;
}

// ---- the device ----

extern "C" cudaError_t cudaGetDeviceCount(int *n)
{
	*n = 1;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
	*d = 0;
	return cudaSuccess;
}

#define SMEM_DEFAULT (48 << 10)
#define SMEM_OPTIN (227 << 10)

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
	if (d != 0)
		return cudaErrorInvalidValue;
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "CPU simulation (tests/cuda/model_sim)");
	p->totalGlobalMem = gpu_bytes();
	p->sharedMemPerBlock = SMEM_DEFAULT;
	p->sharedMemPerBlockOptin = SMEM_OPTIN;
	p->warpSize = 32;
	p->maxThreadsPerBlock = 1024;
	p->multiProcessorCount = 132;
	p->major = 9;
	return cudaSuccess;
}

extern "C" const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInvalidConfiguration: return "invalid configuration argument";
	case cudaErrorInvalidDevicePointer: return "invalid device pointer";
	case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
	case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
	}
	return "unknown error";
}

// ---- launches ----

static std::map<const void *, int> max_smem;   // by kernel: cudaFuncAttributeMaxDynamicSharedMemorySize

cudaError_t sim_func_set_attribute(const void *f, cudaFuncAttribute a, int v)
{
	if (a != cudaFuncAttributeMaxDynamicSharedMemorySize || v < 0 || v > SMEM_OPTIN)
		return cudaErrorInvalidValue;
	max_smem[f] = v;
	return cudaSuccess;
}

cudaError_t sim_launch_check(dim3 grid, dim3 block, size_t smem, const void *kernel, const char *name)
{
	const char *why = nullptr;
	cudaError_t e = cudaErrorInvalidConfiguration;
	auto it = max_smem.find(kernel);
	size_t allowed = it != max_smem.end() ? (size_t)it->second : SMEM_DEFAULT;
	if (!grid.x || !grid.y || !grid.z)
		why = "an empty grid";
	else if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
		why = "a grid past the limits";
	else if (!block.x || !block.y || !block.z || block.x * block.y * block.z > 1024 || block.z > 64)
		why = "a block past the limits";
	else if (smem > allowed)
		why = "more dynamic shared memory than the kernel may have", e = cudaErrorInvalidValue;
	if (!why)
		return cudaSuccess;
	fprintf(stderr, "sim: launch refused, as the GPU would refuse it: %s (grid %ux%ux%u, block %ux%ux%u, "
		"%zu bytes of dynamic shared memory): %s\n", why, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem,
		name);
	return e;
}

// ---- mma.sync.m16n8k16, bf16 in, fp32 accumulators (mma_sim/sim.cc's) ----

struct slot { uint32_t a[4], b0, b1; };
static slot slots[32][32];   // [warp][lane]: the fragments crossing an mma.sync
static float bfh(uint32_t reg, int hi)
{
	__nv_bfloat16 b = { (uint16_t)(hi ? reg >> 16 : reg & 0xffff) };
	return __bfloat162float(b);
}
static float Aget(slot *s, int r, int k)
{
	int gid = r % 8, tig = (k % 8) / 2, reg = (r >= 8) + 2 * (k >= 8);
	return bfh(s[gid * 4 + tig].a[reg], k % 2);
}
static float Bget(slot *s, int k, int n)
{
	int tig = (k % 8) / 2;
	slot &x = s[n * 4 + tig];
	return bfh(k >= 8 ? x.b1 : x.b0, k % 2);
}
void sim_mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	int w = threadIdx.x / 32, l = threadIdx.x % 32, gid = l / 4, tig = l % 4;
	slot *s = slots[w];
	memcpy(s[l].a, a, 16);
	s[l].b0 = b0;
	s[l].b1 = b1;
	sim::warp_wait("mma16816");
	for (int i = 0; i < 4; i++) {
		int r = gid + (i >= 2) * 8, n = tig * 2 + i % 2;
		float acc = c[i];
		for (int k = 0; k < 16; k++)
			acc += Aget(s, r, k) * Bget(s, k, n);
		c[i] = acc;
	}
	sim::warp_wait("mma16816");
}
