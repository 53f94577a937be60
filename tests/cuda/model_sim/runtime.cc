// runtime.cc for model_sim (see run.sh): the CUDA runtime that kernels/'s
// host code calls, on the CPU: one device, whose memory is host memory
// (SIM_GPU_MIB of it, 4096 by default), each allocation its own malloc so
// that AddressSanitizer (SIM_ASAN=1) sees the ends of each; copies and
// memsets checked to lie within one allocation where they name device
// memory (the sim aborts, naming the call, where one does not: the part of
// compute-sanitizer's memcheck that needs no sanitizer); streams in order,
// synchronous; graphs captured launch by launch, copy by copy and product
// by product (matmul.cc) and replayed by cudaGraphLaunch, a capture
// refusing and invalidated by what the GPU's refuses (a synchronising call,
// cudaMalloc, cudaFree, work on the legacy stream); events that time
// nothing; and mma.sync, emulated across a warp's threads as mma_sim does.
#include "sim_launch.h"
#include <cuda_bf16.h>
#include "mma_sync.h"
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

static cudaError_t sync_call(const char *call);

cudaError_t cudaMalloc(void **p, size_t n)
{
	*p = nullptr;
	if (cudaError_t e = sync_call("cudaMalloc"))
		return e;
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
	if (cudaError_t e = sync_call("cudaFree"))
		return e;
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

struct sim_stream { int capturing, invalid, relaxed, nonblocking; cudaGraph_t graph; };
struct sim_graph { std::vector<std::function<void()>> ops; };
struct sim_event { int recorded; };
static std::vector<cudaStream_t> captures;   // the streams now capturing

// The captures that a call the GPU deems unsafe during capture (one that
// synchronises, or allocates outside the stream's order) invalidates: all
// but those begun in relaxed mode. (Thread-local mode limits this to the
// capturing thread's calls; the host code here has the one thread.)
static bool invalidate_captures(const char *call, const char *why)
{
	bool any = false;
	for (cudaStream_t c : captures)
		if (!c->relaxed && !c->invalid)
			c->invalid = 1, any = true;
	if (any)
		fprintf(stderr, "sim: %s while a stream captures a graph: %s, and the capture invalidated\n", call, why);
	return any;
}

// A synchronous call while a stream captures: the GPU refuses it and invalidates the capture
static cudaError_t sync_call(const char *call)
{
	for (cudaStream_t c : captures)
		if (!c->relaxed)
			return invalidate_captures(call, "refused"), cudaErrorStreamCaptureUnsupported;
	return cudaSuccess;
}

cudaError_t sim_enqueue(cudaStream_t s, std::function<void()> op)
{
	if (s && s->capturing) {
		if (s->invalid)
			return cudaErrorStreamCaptureInvalidated;
		s->graph->ops.push_back(std::move(op));
		return cudaSuccess;
	}
	// the legacy stream waits for every blocking stream: on one that captures, that is refused
	if (!s)
		for (cudaStream_t c : captures)
			if (!c->nonblocking)
				return invalidate_captures("work on the legacy stream (0)", "refused"),
				       cudaErrorStreamCaptureImplicit;
	op();
	return cudaSuccess;
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
	return sim_enqueue(st, [=] { if (n) memmove(d, s, n); });
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t st)
{
	check_dev("cudaMemsetAsync", "memory", p, n);
	return sim_enqueue(st, [=] { memset(p, v, n); });
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
	return sim_enqueue(st, op);
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	*s = new sim_stream{};
	return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	cudaStreamCreate(s);
	(*s)->nonblocking = (flags & cudaStreamNonBlocking) != 0;
	return cudaSuccess;
}
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

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
	if (!s || s->capturing)
		return cudaErrorInvalidValue;   // the legacy stream cannot capture
	s->capturing = 1, s->invalid = 0, s->relaxed = mode == cudaStreamCaptureModeRelaxed;
	s->graph = new sim_graph;
	captures.push_back(s);
	return cudaSuccess;
}

// An invalidated capture ends with no graph, and says so
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
	if (!s || !s->capturing)
		return cudaErrorInvalidValue;
	s->capturing = 0;
	captures.erase(std::find(captures.begin(), captures.end(), s));
	*g = s->invalid ? nullptr : s->graph;
	if (s->invalid)
		delete s->graph;
	s->graph = nullptr;
	return s->invalid ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st)
{
	*st = !s || !s->capturing ? cudaStreamCaptureStatusNone
		: s->invalid	  ? cudaStreamCaptureStatusInvalidated
				  : cudaStreamCaptureStatusActive;
	return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long)
{
	if (!g)
		return cudaErrorInvalidValue;
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
	return sim_enqueue(s, [e] {
		for (auto &op : e->ops)
			op();
	});
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
	case cudaErrorStreamCaptureImplicit:
		return "operation would make the legacy stream depend on a capturing blocking stream";
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

// ---- mma.sync.m16n8k16, bf16 in, fp32 accumulators (../sim/mma_sync.h) ----

void sim_mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) { sim::mma16816(c, a, b0, b1); }

// ---- a block's threads as fibers ----
//
// Each CUDA thread of the block runs on a stack of its own (ucontext) on
// this one thread, until it waits at a barrier or returns; once every
// thread has, the barriers whose threads are all there (each warp's whose
// lanes that have not returned all wait at a __syncwarp or shuffle, else
// the block's, all at a __syncthreads) let them go on, after checking that
// they wait at the same place, as cuda_runtime.h's barriers do. Threads
// waiting where none can be let go (some of a warp at its barrier, others
// at the block's) abort the run: the GPU would hang or be undefined there.

#include <sys/mman.h>
#include <ucontext.h>

// On x86-64, a switch of stacks of its own: swapcontext's two system calls
// (the signal mask) a switch were nine tenths of the run. Elsewhere ucontext.
#if defined(__x86_64__)
#define SIM_OWN_SWITCH 1
// *from = the stack here, then on to the stack at to (both as left by this call)
extern "C" void sim_switch(void **from, void *to);
asm(".text\n.globl sim_switch\n.type sim_switch,@function\nsim_switch:\n"
    "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
    "\tmovq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n"
    "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\tret\n"
    ".size sim_switch,.-sim_switch\n");
#else
#define SIM_OWN_SWITCH 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SIM_FIBER_ASAN 1
#include <sanitizer/common_interface_defs.h>
#else
#define SIM_FIBER_ASAN 0
#endif

bool sim_os_threads()
{
	static bool on = [] { const char *v = getenv("SIM_OS_THREADS"); return v && strcmp(v, "1") == 0; }();
	return on;
}

namespace {
enum { RUN, WAIT_BLOCK, WAIT_WARP, DONE };
#define FIBER_STACK ((size_t)256 << 10)
struct fibers {
	ucontext_t main, ctx[1024];
	void *main_sp, *sp[1024];
	int state[1024];
	unsigned cur, n;
	char *stacks;
	void (*body)(void *);
	void *arg;
	void *main_fake;   // ASan's fake stack of the scheduler
};
fibers F;

void switch_to(unsigned t)
{
	F.cur = t;
	threadIdx = dim3(t, 0, 0);
#if SIM_FIBER_ASAN
	__sanitizer_start_switch_fiber(&F.main_fake, F.stacks + (size_t)t * FIBER_STACK, FIBER_STACK);
#endif
#if SIM_OWN_SWITCH
	sim_switch(&F.main_sp, F.sp[t]);
#else
	swapcontext(&F.main, &F.ctx[t]);
#endif
#if SIM_FIBER_ASAN
	__sanitizer_finish_switch_fiber(F.main_fake, nullptr, nullptr);
#endif
}

void to_main()
{
#if SIM_FIBER_ASAN
	void *fake = nullptr;
	__sanitizer_start_switch_fiber(F.state[F.cur] == DONE ? nullptr : &fake, nullptr, 0);
#endif
#if SIM_OWN_SWITCH
	sim_switch(&F.sp[F.cur], F.main_sp);
#else
	swapcontext(&F.ctx[F.cur], &F.main);
#endif
#if SIM_FIBER_ASAN
	__sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void fiber_wait(int warp)
{
	F.state[F.cur] = warp ? WAIT_WARP : WAIT_BLOCK;
	to_main();
}

void fiber_main()
{
#if SIM_FIBER_ASAN
	__sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
	F.body(F.arg);
	sim::site[F.cur] = nullptr;
	F.state[F.cur] = DONE;
	to_main();
}

void run_block()
{
	unsigned n = F.n, warps = (n + 31) / 32;
	for (unsigned t = 0; t < n; t++) {
#if SIM_OWN_SWITCH
		// as sim_switch leaves a stack: six registers, then where it returns to (fiber_main, as if
		// called: its entry sees the stack 8 bytes off 16)
		void **sp = (void **)(F.stacks + (size_t)(t + 1) * FIBER_STACK) - 8;
		memset(sp, 0, 8 * sizeof *sp);
		sp[6] = (void *)fiber_main;
		F.sp[t] = sp;
		F.state[t] = RUN;
		sim::site[t] = nullptr;
		continue;
#endif
		getcontext(&F.ctx[t]);
		F.ctx[t].uc_stack.ss_sp = F.stacks + (size_t)t * FIBER_STACK;
		F.ctx[t].uc_stack.ss_size = FIBER_STACK;
		F.ctx[t].uc_link = nullptr;
		makecontext(&F.ctx[t], fiber_main, 0);
		F.state[t] = RUN;
		sim::site[t] = nullptr;
	}
	for (;;) {
		for (unsigned t = 0; t < n; t++)
			if (F.state[t] == RUN)
				switch_to(t);
		// every thread waits or is done: let go whom a barrier lets go
		bool go = false, all_block = true, any = false;
		for (unsigned w = 0; w < warps; w++) {
			unsigned first = 32 * w, lanes = std::min(32u, n - first), at_warp = 0, alive = 0;
			for (unsigned t = first; t < first + lanes; t++) {
				alive += F.state[t] != DONE;
				at_warp += F.state[t] == WAIT_WARP;
			}
			if (alive && at_warp == alive) {
				sim::same_site{ first, lanes }();   // returned threads have no site
				for (unsigned t = first; t < first + lanes; t++)
					if (F.state[t] == WAIT_WARP)
						F.state[t] = RUN;
				go = true;
			}
			if (at_warp)
				all_block = false;
			any |= alive > 0;
		}
		if (!any)
			return;
		if (go)
			continue;
		if (!all_block) {
			fprintf(stderr, "sim: block %u: threads wait at a warp's barrier that others of the warp never reach "
				"(they wait at the block's, or returned)\n", blockIdx.x);
			for (unsigned t = 0; t < n; t++)
				if (F.state[t] != DONE)
					fprintf(stderr, "sim:   thread %u: %s at %s\n", t,
						F.state[t] == WAIT_WARP ? "warp" : "block", sim::site[t]);
			abort();
		}
		sim::same_site{ 0, n }();
		for (unsigned t = 0; t < n; t++)
			if (F.state[t] == WAIT_BLOCK)
				F.state[t] = RUN;
	}
}
} // namespace

void sim_fiber_launch(dim3 grid, dim3 block, void (*body)(void *), void *arg)
{
	unsigned blocks = sim_grid(grid, block);
	if (!F.stacks) {
		F.stacks = (char *)mmap(nullptr, 1024 * FIBER_STACK, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (F.stacks == MAP_FAILED) {
			perror("sim: mmap of the fibers' stacks");
			abort();
		}
	}
	F.n = block.x;
	F.body = body;
	F.arg = arg;
	sim::wait_hook = fiber_wait;
	for (unsigned k : sim_block_order(blocks)) {
		sim_enter(0, k);
		run_block();
	}
	sim::wait_hook = nullptr;
}
