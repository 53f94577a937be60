// gpu_prof.cu: the phase timings of gpu_prof.cuh.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_model_impl.cuh"

// Marks held between two collections; a pass with more collects early
// (one synchronization more, no time lost: the next event starts anew).
#define PROF_EVENTS 4096
#define PROF_PHASES 96

struct prof_phase {
	const char *tag, *what;
	double ms, flops;
	long calls;
};

struct gpu_prof {
	cudaEvent_t ev[PROF_EVENTS];
	const char *what[PROF_EVENTS], *tag_of[PROF_EVENTS];
	double flops[PROF_EVENTS];
	int n;              // events recorded since the last collection; ev[0] starts
	const char *tag;
	struct prof_phase phase[PROF_PHASES];
	int nphases;
	int dropped;        // phases past PROF_PHASES, not shown
};

struct gpu_prof *prof_new(void)
{
	const char *on = getenv("GRPO_CUDA_PROFILE");
	if (!on || !*on || strcmp(on, "0") == 0)
		return NULL;
	struct gpu_prof *p = (struct gpu_prof *)calloc(1, sizeof *p);
	if (!p)
		return NULL;
	for (int i = 0; i < PROF_EVENTS; i++)
		if (cudaEventCreate(&p->ev[i]) != cudaSuccess) {
			for (int j = 0; j < i; j++)
				cudaEventDestroy(p->ev[j]);
			free(p);
			fprintf(stderr, "GRPO_CUDA_PROFILE: cannot create CUDA events; no profile\n");
			return NULL;
		}
	return p;
}

// Not while the stream is being captured into a graph.
static int timing(struct gpu_model *g)
{
	cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
	return g->prof && cudaStreamIsCapturing(g->stream, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone;
}

void prof_start(struct gpu_model *g)
{
	if (!timing(g))
		return;
	struct gpu_prof *p = g->prof;
	p->n = 0;
	if (cudaEventRecord(p->ev[0], g->stream) == cudaSuccess)
		p->n = 1;
}

static struct prof_phase *phase_of(struct gpu_prof *p, const char *tag, const char *what)
{
	for (int i = 0; i < p->nphases; i++)
		if (p->phase[i].tag == tag && strcmp(p->phase[i].what, what) == 0)
			return &p->phase[i];
	if (p->nphases == PROF_PHASES) {
		p->dropped = 1;
		return NULL;
	}
	struct prof_phase *ph = &p->phase[p->nphases++];
	ph->tag = tag;
	ph->what = what;
	return ph;
}

void prof_collect(struct gpu_model *g)
{
	struct gpu_prof *p = g->prof;
	if (!p || p->n == 0)
		return;
	if (cudaEventSynchronize(p->ev[p->n - 1]) != cudaSuccess) {
		p->n = 0;
		return;
	}
	for (int i = 1; i < p->n; i++) {
		float ms = 0;
		struct prof_phase *ph = phase_of(p, p->tag_of[i], p->what[i]);
		if (ph && cudaEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]) == cudaSuccess) {
			ph->ms += ms;
			ph->flops += p->flops[i];
			ph->calls++;
		}
	}
	p->n = 0;
}

void prof_mark(struct gpu_model *g, const char *what, double flops)
{
	if (!timing(g))
		return;
	struct gpu_prof *p = g->prof;
	if (p->n == PROF_EVENTS) {
		prof_collect(g);
		prof_start(g);
	}
	if (p->n == 0)   // no prof_start: this phase counts from here, empty
		prof_start(g);
	if (cudaEventRecord(p->ev[p->n], g->stream) != cudaSuccess)
		return;
	p->what[p->n] = what;
	p->tag_of[p->n] = p->tag;
	p->flops[p->n] = flops;
	p->n++;
}

void prof_tag(struct gpu_model *g, const char *tag)
{
	if (g->prof)
		g->prof->tag = tag;
}

static int by_time(const void *a, const void *b)
{
	double x = ((const struct prof_phase *)a)->ms, y = ((const struct prof_phase *)b)->ms;
	return x < y ? 1 : x > y ? -1 : 0;
}

void prof_free(struct gpu_prof *p)
{
	if (!p)
		return;
	double total = 0;
	for (int i = 0; i < p->nphases; i++)
		total += p->phase[i].ms;
	qsort(p->phase, (size_t)p->nphases, sizeof *p->phase, by_time);
	fprintf(stderr, "GRPO_CUDA_PROFILE: %.1f ms of GPU time in marked phases\n", total);
	fprintf(stderr, "%10s %6s %7s %8s  %s\n", "ms", "share", "calls", "TFLOP/s", "phase");
	for (int i = 0; i < p->nphases; i++) {
		const struct prof_phase *ph = &p->phase[i];
		char rate[32] = "";
		if (ph->flops > 0 && ph->ms > 0)
			snprintf(rate, sizeof rate, "%.1f", ph->flops / (ph->ms * 1e-3) / 1e12);
		fprintf(stderr, "%10.2f %5.1f%% %7ld %8s  %s%s%s\n", ph->ms, total > 0 ? 100 * ph->ms / total : 0.0,
			ph->calls, rate, ph->tag ? ph->tag : "", ph->tag ? ": " : "", ph->what);
	}
	if (p->dropped)
		fprintf(stderr, "(more than %d phases: the rest not shown)\n", PROF_PHASES);
	for (int i = 0; i < PROF_EVENTS; i++)
		cudaEventDestroy(p->ev[i]);
	free(p);
}
