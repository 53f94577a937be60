// capture.cc for model_sim (see run.sh): runtime.cc's graph capture against
// the GPU's rules, which the decoder's graphs (kernels/gpu_decode.cu) rely
// on: work on a capturing stream runs only when the graph is launched; a
// call the GPU refuses during a capture (cudaMalloc, a synchronous copy,
// work on the legacy stream while a blocking stream captures) is refused
// with its error and invalidates the capture, whose later work is refused
// and whose end gives no graph; a relaxed capture tolerates them.
// Exits 1 at the first rule broken, naming it.
#include <cstdio>

static int failed;
static void check(bool cond, const char *rule)
{
	if (!cond) {
		printf("not ok - %s\n", rule);
		failed = 1;
	}
}

static void add_one(int *p) { *p += 1; }

static int value(const int *d)
{
	int h = -1;
	cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost);
	return h;
}

int main()
{
	cudaStream_t s, nb;
	int *d, h = 0;
	void *q;
	cudaGraph_t g;
	cudaGraphExec_t e;
	cudaStreamCaptureStatus st;
	cudaStreamCreate(&s);
	cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);
	cudaMalloc((void **)&d, 4);
	cudaMemset(d, 0, 4);

	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	sim_launch<0>(dim3(1), dim3(1), 0, s, &add_one, d);
	check(cudaStreamEndCapture(s, &g) == cudaSuccess && g, "a clean capture gives a graph");
	check(value(d) == 0, "a captured launch does not run at capture");
	check(cudaGraphInstantiate(&e, g, 0) == cudaSuccess, "the graph instantiates");
	cudaGraphLaunch(e, s);
	cudaGraphLaunch(e, s);
	check(value(d) == 2, "it runs at each cudaGraphLaunch");
	cudaGraphExecDestroy(e);
	cudaGraphDestroy(g);

	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	check(cudaMalloc(&q, 4) == cudaErrorStreamCaptureUnsupported && !q, "cudaMalloc during a capture is refused");
	check(cudaStreamIsCapturing(s, &st) == cudaSuccess && st == cudaStreamCaptureStatusInvalidated,
	      "and invalidates the capture");
	check(cudaMemcpyAsync(d, &h, 4, cudaMemcpyHostToDevice, s) == cudaErrorStreamCaptureInvalidated,
	      "a copy into an invalidated capture is refused");
	sim_launch<0>(dim3(1), dim3(1), 0, s, &add_one, d);
	check(cudaGetLastError() == cudaErrorStreamCaptureInvalidated, "so is a launch");
	check(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && !g,
	      "an invalidated capture ends with no graph");

	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	check(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost) != cudaSuccess, "a synchronous copy during a capture is refused");
	check(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated, "and invalidates it");

	cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
	sim_launch<0>(dim3(1), dim3(1), 0, (cudaStream_t)0, &add_one, d);
	check(cudaGetLastError() == cudaErrorStreamCaptureImplicit,
	      "a launch on the legacy stream while a blocking stream captures is refused");
	check(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated, "and invalidates the capture");

	cudaStreamBeginCapture(nb, cudaStreamCaptureModeThreadLocal);
	sim_launch<0>(dim3(1), dim3(1), 0, (cudaStream_t)0, &add_one, d);
	check(cudaGetLastError() == cudaSuccess && cudaStreamEndCapture(nb, &g) == cudaSuccess && g && value(d) == 3,
	      "while a non-blocking stream captures, the legacy stream runs work");
	cudaGraphDestroy(g);

	cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
	check(cudaMalloc(&q, 4) == cudaSuccess && cudaStreamEndCapture(s, &g) == cudaSuccess && g,
	      "a relaxed capture tolerates cudaMalloc");
	cudaGraphDestroy(g);
	cudaFree(q);
	cudaFree(d);
	cudaStreamDestroy(s);
	cudaStreamDestroy(nb);
	if (!failed)
		printf("ok - runtime.cc's graph capture follows the GPU's rules\n");
	return failed;
}
