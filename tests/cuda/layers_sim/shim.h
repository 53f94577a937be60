// shim.h for layers_sim (see sim.cc): norm_sim's CUDA shims (a thread per
// CUDA thread, barriers, shuffles, __shared__ as static, bf16), with what
// these kernels use besides: __syncwarp, and sim_launch, which runs a grid
// a block at a time on one team of blockDim.x threads kept for the whole
// launch (creating 256 threads for each block cost more than the kernels:
// sumsq's 1024 blocks took half a minute), or on this thread alone, one
// CUDA thread after another, for a kernel that never synchronises.
#include "norm_sim/shim.h"
#include <cstdlib>

// A warp's barrier: a warp's lanes all reach it before any goes on.
static void __syncwarp(unsigned = 0xffffffffu)
{
	if (!wbar[threadIdx.x / 32]) {
		fprintf(stderr, "layers_sim: __syncwarp in a kernel launched as barrier-free\n");
		abort();
	}
	wbar[threadIdx.x / 32]->arrive_and_wait();
}

// Blocks past this many are not run (0: all): for ThreadSanitizer's run,
// whose races lie within a block, on grids the launcher fixes.
static unsigned sim_block_limit;

// fn() for every thread of every block of grid g (blocks of b.x threads, a
// multiple of 32 unless serial). Serial: threads one after another, with no
// barriers to call (a kernel that calls one then aborts: no barrier at all
// for __syncthreads, whose null pointer faults).
template <typename F> static void sim_launch(dim3 g, dim3 b, F fn, bool serial)
{
	gridDim = { g.x, g.y, 1 };
	blockDim = { b.x, 1, 1 };
	unsigned nblocks = g.x * g.y;
	if (sim_block_limit && nblocks > sim_block_limit)
		nblocks = sim_block_limit;
	unsigned k = 0;
	auto block = [&] { blockIdx = { k % g.x, k / g.x, 0 }; };
	if (serial) {
		bbar = nullptr;
		for (auto &w : wbar)
			w = nullptr;
		for (; k < nblocks; k++) {
			block();
			for (unsigned t = 0; t < b.x; t++) {
				threadIdx = { t, 0, 0 };
				fn();
			}
		}
		return;
	}
	std::barrier<> bb(b.x);
	bbar = &bb;
	std::vector<std::unique_ptr<std::barrier<>>> warps;
	for (unsigned w = 0; w < b.x / 32; w++)
		warps.emplace_back(new std::barrier<>(32)), wbar[w] = warps.back().get();
	block();
	auto next = [&]() noexcept { k++, block(); };   // once a block's every thread is done
	std::barrier<decltype(next)> done(b.x, next);
	std::vector<std::thread> team;
	for (unsigned t = 0; t < b.x; t++)
		team.emplace_back([&, t] {
			threadIdx = { t, 0, 0 };
			for (unsigned j = 0; j < nblocks; j++) {
				fn();
				done.arrive_and_wait();
			}
		});
	for (auto &th : team)
		th.join();
	bbar = nullptr;
}
