// sim_launch.h for model_sim (see run.sh): what extract.py makes of a
// launch, k<<<grid, block, smem, stream>>>(args), included before each
// kernels/*.cu copy (g++ -include). The arguments are converted to the
// kernel's parameters at once, as a launch copies them, so that a launch
// captured into a graph (runtime.cc) runs later with the values it had;
// the kernel then runs as every thread of every block (cuda_runtime.h's
// launch, with fibers for threads, or launch_serial for a kernel that
// never synchronises its threads), with smem bytes of its own as its dynamic shared memory. A
// launch the GPU would refuse (an empty grid, a grid or block past the
// limits, more dynamic shared memory than it may have) runs nothing and
// leaves its error for cudaGetLastError, saying so on stderr.
#pragma once
#include <cuda_runtime.h>
#include <functional>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>

namespace sim {
inline unsigned char *dyn_smem;   // the running launch's dynamic shared memory
}
// body(ctx) as every thread of every block of the grid, each block's
// threads as fibers on this thread, switched at each barrier (runtime.cc):
// cuda_runtime.h's launch without an OS thread per CUDA thread, whose
// barriers cost a futex wake-up each on two cores
void sim_fiber_launch(dim3 grid, dim3 block, void (*body)(void *), void *ctx);
template <class F> static void sim_fiber_body(void *f) { (*(F *)f)(); }
// cudaSuccess, or the error the GPU would give the launch (runtime.cc)
cudaError_t sim_launch_check(dim3 grid, dim3 block, size_t smem, const void *kernel, const char *name);
// op as work on stream s: run now, or recorded into s's capture (runtime.cc);
// or refused, with the error the GPU gives, where s's capture was
// invalidated or s is the legacy stream while a blocking stream captures
cudaError_t sim_enqueue(cudaStream_t s, std::function<void()> op);
// SIM_OS_THREADS=1: a thread per CUDA thread (cuda_runtime.h's launch) instead of fibers
bool sim_os_threads();

template <bool SYNC, class... P, class... A>
static void sim_launch(dim3 grid, dim3 block, size_t smem, cudaStream_t s, void (*k)(P...), A &&...a)
{
	auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(a)...);
	std::function<void()> run = [=] {
		if (cudaError_t e = sim_launch_check(grid, block, smem, (const void *)k, __PRETTY_FUNCTION__)) {
			sim_last_error = e;
			return;
		}
		unsigned char *buf = smem ? (unsigned char *)::operator new(smem, std::align_val_t(16)) : nullptr;
		sim::dyn_smem = buf;
		auto body = [&] { std::apply(k, *args); };
		if (SYNC && !SIM_TSAN && !sim_os_threads())
			sim_fiber_launch(grid, block, sim_fiber_body<decltype(body)>, &body);
		else if (SYNC)
			launch(grid, block, body);
		else
			launch_serial(grid, block, body);
		sim::dyn_smem = nullptr;
		if (buf)
			::operator delete(buf, std::align_val_t(16));
	};
	if (cudaError_t e = sim_enqueue(s, run))
		sim_last_error = e;
}
