/*
 * model_gpu.c: see model_gpu.h. A thin bridge from the C model to the CUDA
 * library's C API, called through its table (kernels/gpu_ops.h), which is
 * found when a run first needs it:
 *  - a program linked with libgrpo-cuda.a and its table (tests/cuda and
 *    bench/cuda: the Makefile links them with -u grpo_cuda_ops) uses it;
 *  - else, in a build with GRPO_CUDA (set by the Makefile where it builds
 *    kernels/), dlopen loads libgrpo-cuda.so (lib_table below): the tools
 *    link nothing of CUDA, so that a run on the CPU never pays for loading
 *    cuBLAS and the CUDA runtime (0.15 s and 200 MB a run);
 *  - a build without it has no table, and says that it has no GPU path.
 * model_device_resolve asks the driver (libcuda.so.1) for a device before
 * loading the library, so that a machine without a GPU loads none of it.
 */
#include "model/model_gpu.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu_ops.h"

#ifdef GRPO_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "base/path.h"
#endif

const char *const model_device_names[] = {
	[MODEL_DEVICE_AUTO] = "auto", [MODEL_DEVICE_CPU] = "cpu", [MODEL_DEVICE_CUDA] = "cuda", NULL
};

int model_device_parse(const char *s, enum model_device *out)
{
	for (int i = 0; model_device_names[i]; i++)
		if (strcmp(s, model_device_names[i]) == 0) {
			*out = (enum model_device)i;
			return 0;
		}
	return -1;
}

const char *model_device_name(enum model_device d)
{
	return model_device_names[d];
}

int model_gpu_fused_head(void)
{
	const char *v = getenv("GRPO_CUDA_FUSED_HEAD");
	return !v || strcmp(v, "0") != 0;
}

/* An environment variable's whole number in 1..max; 0 where it is unset or empty. */
static int env_count(const char *var, long long max, long long *out, struct err *e)
{
	const char *v = getenv(var);
	char *end;
	*out = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (*v < '0' || *v > '9' || *end || errno || n < 1 || n > max)
		return err_set(e, "%s: expected a whole number from 1 to %lld, got '%s'", var, max, v);
	*out = n;
	return 0;
}

int model_gpu_gen_knobs(struct model_gpu_gen_knobs *k, struct err *e)
{
	long long rows, graphs;
	memset(k, 0, sizeof *k);
	if (env_count("GRPO_CUDA_MAX_BATCH", GPU_DECODE_MAX_BATCH, &rows, e) < 0 ||
	    env_count("GRPO_CUDA_KV_MIB", 1LL << 24, &k->cache_mib, e) < 0)
		return -1;
	const char *v = getenv("GRPO_CUDA_GRAPHS");
	if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
		return err_set(e, "GRPO_CUDA_GRAPHS: expected 0 or 1, got '%s'", v);
	graphs = !v || !*v || strcmp(v, "1") == 0;
	k->max_batch = (int)rows;
	k->no_graphs = !graphs;
	return 0;
}

#ifdef GRPO_CUDA

/* Defined where the program links libgrpo-cuda.a's table (tests/cuda and
 * bench/cuda, which call the kernels themselves too: one copy of them, and
 * no library to look for from build/bench/cuda); NULL elsewhere. */
extern const struct gpu_ops *grpo_cuda_ops(int abi) __attribute__((weak));

#define CUDA_LIB "libgrpo-cuda.so"

/* The table of the CUDA library at path, or NULL with why in e. */
static const struct gpu_ops *lib_table_at(const char *path, struct err *e)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		err_set(e, "%s", dlerror());
		return NULL;
	}
	const struct gpu_ops *(*entry)(int) = (const struct gpu_ops *(*)(int))dlsym(h, "grpo_cuda_ops");
	const struct gpu_ops *t = entry ? entry(GPU_OPS_ABI) : NULL;
	if (!entry)
		err_set(e, "%s is not grpo-tools' CUDA library: %s", path, dlerror());
	else if (!t)
		err_set(e, "%s was built for another version of grpo-tools (its table is not version %d): use the "
			CUDA_LIB " built with this program", path, GPU_OPS_ABI);
	if (!t)
		dlclose(h);
	return t;
}

/*
 * The CUDA library's table: GRPO_CUDA_LIB's, or that of the first place
 * beside the program that holds the library: EXE_DIR/.. (the build tree's
 * build/bin/.. and build/tests/..), then EXE_DIR/../lib/grpo-tools, where
 * make install puts it.
 */
static const struct gpu_ops *lib_table(struct err *e)
{
	static const char *const beside[] = { "../" CUDA_LIB, "../lib/grpo-tools/" CUDA_LIB };
	char dir[PATH_MAX], tried[2][PATH_MAX];
	const char *env = getenv("GRPO_CUDA_LIB");
	if (env && *env) {
		const struct gpu_ops *t = lib_table_at(env, e);
		if (!t)
			err_prefix(e, "GRPO_CUDA_LIB");
		return t;
	}
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
	char *slash = n > 0 ? memrchr(dir, '/', (size_t)n) : NULL;
	if (!slash) {
		err_sys(e, "/proc/self/exe: this program's directory, where " CUDA_LIB " is looked for, is not known "
			"(GRPO_CUDA_LIB names the library)");
		return NULL;
	}
	*slash = '\0';
	for (int i = 0; i < 2; i++) {
		if (path_join(tried[i], sizeof tried[i], dir, beside[i], e) < 0)
			return NULL;
		if (access(tried[i], F_OK) == 0)
			return lib_table_at(tried[i], e);
	}
	err_set(e, CUDA_LIB ", this build's CUDA path, is not at %s nor at %s (GRPO_CUDA_LIB names it)", tried[0],
		tried[1]);
	return NULL;
}

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static const struct gpu_ops *table;
static struct err table_err;

static void table_load(void)
{
	table = grpo_cuda_ops ? grpo_cuda_ops(GPU_OPS_ABI) : lib_table(&table_err);
	if (!table && grpo_cuda_ops)
		err_set(&table_err, "the CUDA library linked in is not version %d", GPU_OPS_ABI);
}

/* The CUDA library's table, loaded once, on the first call; NULL with why in e. */
static const struct gpu_ops *cuda_table(struct err *e)
{
	pthread_once(&table_once, table_load);
	if (!table)
		err_set(e, "%s", table_err.msg);
	return table;
}

/* The driver API's calls used here, as cuda.h declares them (0: CUDA_SUCCESS). */
typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_count_fn)(int *count);
typedef int (*cu_error_name_fn)(int error, const char **name);

/*
 * 0 where the driver sees a device, else -1 with why in e, asked of
 * libcuda.so.1 itself: on a machine without a driver or a GPU that costs a
 * failed dlopen, not loading the CUDA runtime and cuBLAS. The driver stays
 * loaded: the CUDA runtime uses it next.
 */
static int driver_device(struct err *e)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(e, "no CUDA driver: %s", dlerror());
	cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
	cu_count_fn count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
	cu_error_name_fn error_name = (cu_error_name_fn)dlsym(h, "cuGetErrorName");
	if (!init || !count)
		return err_set(e, "libcuda.so.1 has no cuInit or cuDeviceGetCount");
	int n = 0, rc = init(0);
	const char *call = "cuInit", *name = NULL;
	if (rc == 0)
		rc = count(&n), call = "cuDeviceGetCount";
	if (rc != 0) {
		if (!error_name || error_name(rc, &name) != 0 || !name)
			name = "an unknown error";
		return err_set(e, "the CUDA driver: %s: %s (%d)", call, name, rc);
	}
	return n > 0 ? 0 : err_set(e, "the CUDA driver sees no device");
}

/*
 * 0 where there is a GPU and the CUDA library to run on it; else, with why
 * in e, -1 where the driver sees no GPU, -2 where it sees one that this run
 * cannot use (the library missing or broken, the CUDA runtime failing).
 */
static int gpu_find(struct err *e)
{
	char msg[512] = "";
	struct err why;
	if (driver_device(&why) < 0) {
		err_set(e, "no GPU to run on (%s)", why.msg);
		return -1;
	}
	const struct gpu_ops *t = cuda_table(e);
	if (!t)
		return -2;
	if (t->gpu_count(msg, sizeof msg) <= 0) {
		err_set(e, "no GPU to run on (%s)", msg);
		return -2;
	}
	return 0;
}

#else /* !GRPO_CUDA */

#define NO_CUDA "this build has no CUDA path (nvcc and cuBLAS were not found when it was built)"

static const struct gpu_ops *cuda_table(struct err *e)
{
	err_set(e, NO_CUDA);
	return NULL;
}

static int gpu_find(struct err *e)
{
	return err_set(e, NO_CUDA);
}

#endif

_Static_assert(MODEL_GPU_LOSS_TOKEN == GPU_LOSS_TOKEN && MODEL_GPU_LOSS_OLD_OWN == GPU_LOSS_OLD_OWN &&
	       MODEL_GPU_LOSS_BEHAV_OWN == GPU_LOSS_BEHAV_OWN, "the loss flags are the CUDA library's");

int model_device_resolve(enum model_device want, enum model_device *got, struct err *e)
{
	struct err why;
	*got = MODEL_DEVICE_CPU;
	if (want == MODEL_DEVICE_CPU)
		return 0;
	int found = gpu_find(&why);
	if (found == 0) {
		*got = MODEL_DEVICE_CUDA;
		return 0;
	}
	if (want == MODEL_DEVICE_CUDA)
		return err_set(e, "--device cuda: %s", why.msg);
	if (found == -2) {   /* a GPU left idle is worth a word, no GPU at all is not */
		err_set(e, "--device auto: the CUDA driver sees a GPU, but this run cannot use it: %s; running on the "
			"CPU", why.msg);
		return 1;
	}
	return 0;
}

struct model_gpu {
	const struct gpu_ops *cuda;   /* the CUDA library that made g */
	struct gpu_model *g;
	int maxT, max_pos;
	uint32_t *lens;   /* (maxT) seq_lens as the CUDA library takes them */
	struct gpu_gen_stats gen;   /* the last model_gpu_generate's */
	int head_done;              /* the last forward was model_gpu_forward_train's */
};

/* A GPU model for packs of maxT tokens at positions below max_pos (>= maxT). */
static int open_gpu(struct model_gpu **out, const struct model *m, int maxT, int max_pos, int bf16,
		    enum gpu_mode mode, struct err *e)
{
	const struct model_config *c = &m->cfg;
	const struct model_params *w = &m->w;
	char msg[512] = "";
	*out = NULL;
	const struct gpu_ops *cuda = cuda_table(e);
	if (!cuda)
		return err_prefix(e, "GPU model");
	struct model_gpu *mg = calloc(1, sizeof *mg);
	float *cos = malloc((size_t)max_pos * (c->HS / 2) * sizeof *cos);
	float *sin = malloc((size_t)max_pos * (c->HS / 2) * sizeof *sin);
	uint32_t *lens = malloc((size_t)maxT * sizeof *lens);
	if (!mg || !cos || !sin || !lens) {
		free(mg), free(cos), free(sin), free(lens);
		return err_set(e, "out of memory for a GPU model of %d tokens", maxT);
	}
	model_rope_table(c, cos, sin, max_pos);
	mg->cuda = cuda;
	struct gpu_model_shape shape = { c->V, c->C, c->L, c->NH, c->NKV, c->HS, c->I, c->eps };
	struct gpu_model_weights gw = {
		w->embed, w->lm_head, w->ln1, w->wq, w->bq, w->wk, w->bk, w->wv, w->bv, w->wo, w->bo,
		w->qnorm, w->knorm, w->ln2, w->wgate, w->wup, w->wdown, w->norm, cos, sin, max_pos,
	};
	int rc = cuda->gpu_model_create(&mg->g, &shape, &gw, maxT, bf16 ? GPU_BF16 : GPU_FP32, mode, msg, sizeof msg);
	free(cos);
	free(sin);
	if (rc < 0) {
		free(lens);
		free(mg);
		return err_set(e, "GPU model: %s", msg);
	}
	mg->maxT = maxT;
	mg->max_pos = max_pos;
	mg->lens = lens;
	*out = mg;
	return 0;
}

int model_gpu_open(struct model_gpu **out, const struct model *m, int maxT, int bf16, struct err *e)
{
	return open_gpu(out, m, maxT, maxT, bf16, GPU_INFER, e);
}

int model_gpu_open_train(struct model_gpu **out, const struct model *m, int maxT, int bf16, int recompute,
			 struct err *e)
{
	return open_gpu(out, m, maxT, maxT, bf16, recompute ? GPU_TRAIN_RECOMPUTE : GPU_TRAIN, e);
}

int model_gpu_open_gen(struct model_gpu **out, const struct model *m, int max_prompt, int max_new, int bf16,
		       struct err *e)
{
	if (max_prompt < 1 || max_new < 1)
		return err_set(e, "GPU sampler: prompts of %d tokens and %d new ones", max_prompt, max_new);
	long long longest = (long long)max_prompt + max_new;
	if (longest > 1 << 20)
		return err_set(e, "GPU sampler: %lld positions is too many", longest);
	int maxT = longest > GEN_GPU_PACK ? (int)longest : GEN_GPU_PACK;
	return open_gpu(out, m, maxT, maxT, bf16, GPU_INFER, e);
}

int model_gpu_generate(struct model_gpu *mg, const int *const *prompts, const int *prompt_lens, int B,
		       const struct gen_params *p, struct gen_seq *out, struct err *e)
{
	struct model_gpu_gen_knobs k;
	if (model_gpu_gen_knobs(&k, e) < 0)
		return err_prefix(e, "GPU sampler");
	struct gpu_gen_params gp = {
		.temperature = p->temperature, .top_p = p->top_p, .top_k = p->top_k, .max_tokens = p->max_tokens,
		.stop_ids = p->stop_ids, .n_stop = p->n_stop, .stop_after = p->stop_after, .stop_ctx = p->stop_ctx,
		.max_batch = k.max_batch,
		.cache_bytes = (size_t)k.cache_mib << 20, .no_graphs = k.no_graphs,
	};
	char msg[512] = "";
	uint64_t *states = malloc((size_t)(B > 0 ? B : 1) * sizeof *states);
	struct gpu_gen_seq *gs = calloc((size_t)(B > 0 ? B : 1), sizeof *gs);
	if (!states || !gs) {
		free(states), free(gs);
		return err_set(e, "out of memory");
	}
	int r = gen_start(prompt_lens, B, p, out, states, e);
	for (int b = 0; r == 0 && b < B; b++) {
		gs[b].tokens = (int32_t *)out[b].tokens;   /* int32_t and int are one type where this builds */
		gs[b].logprobs = out[b].logprobs;
	}
	if (r == 0 && mg->cuda->gpu_generate(mg->g, (const int32_t *const *)prompts, prompt_lens, B, states, &gp, gs, &mg->gen,
				   msg, sizeof msg) < 0) {
		for (int b = 0; b < B; b++)
			gen_seq_free(&out[b]);
		r = err_set(e, "GPU sampler: %s", msg);
	}
	for (int b = 0; r == 0 && b < B; b++) {
		out[b].n = gs[b].n;
		out[b].finish = gs[b].stopped ? GEN_STOP : GEN_LENGTH;
	}
	free(states);
	free(gs);
	return r;
}

void model_gpu_gen_describe(const struct model_gpu *mg, char *buf, size_t n)
{
	const struct gpu_gen_stats *s = &mg->gen;
	snprintf(buf, n, "%lld prompt tokens in %d groups, %lld tokens in %lld decode steps (at most %d sequences "
		 "at once, %d started again), KV cache %.0f MiB (%lld of %lld blocks at most), %s; %.0f MiB in use on "
		 "the device while decoding", s->prefill_tokens, s->groups, s->generated, s->decode_steps, s->peak_batch,
		 s->restarts, s->cache_bytes / 1048576.0, s->peak_blocks, s->blocks,
		 s->graphs ? "CUDA graphs" : "no CUDA graphs", s->device_used / 1048576.0);
}

int model_gpu_backward(struct model_gpu *mg, const float *dlogprob, const float *dentropy, struct err *e)
{
	char msg[512] = "";
	const char *check = getenv("GRPO_CUDA_FUSED_CHECK");
	if (mg->head_done && !(check && strcmp(check, "1") == 0))
		dlogprob = dentropy = NULL;   /* the GPU formed its own; the host's are only compared */
	if (mg->cuda->gpu_model_backward(mg->g, dlogprob, dentropy, msg, sizeof msg) < 0)
		return err_set(e, "GPU backward: %s", msg);
	return 0;
}

int model_gpu_grads_zero(struct model_gpu *mg, struct err *e)
{
	char msg[512] = "";
	if (mg->cuda->gpu_model_grads_zero(mg->g, msg, sizeof msg) < 0)
		return err_set(e, "GPU gradients: %s", msg);
	return 0;
}

/* The host arrays of p (lib/model's layout) as the CUDA library takes them;
 * a tied head is embed's. */
static struct gpu_host_params host_params(const struct model_params *p)
{
	struct gpu_host_params h = {
		p->embed, p->lm_head == p->embed ? NULL : p->lm_head, p->ln1, p->wq, p->bq, p->wk, p->bk, p->wv, p->bv,
		p->wo, p->bo, p->qnorm, p->knorm, p->ln2, p->wgate, p->wup, p->wdown, p->norm,
	};
	return h;
}

/* The same tensors in another flat array of like's layout (the moments). */
static float *moved(const float *p, const struct model_params *like, float *base)
{
	return p ? base + (p - like->mem) : NULL;
}

static struct model_params params_at(const struct model_params *like, float *base)
{
	struct model_params q = *like;
	const struct model_params *l = like;
	q.embed = moved(l->embed, l, base), q.lm_head = moved(l->lm_head, l, base), q.ln1 = moved(l->ln1, l, base);
	q.wq = moved(l->wq, l, base), q.bq = moved(l->bq, l, base), q.wk = moved(l->wk, l, base);
	q.bk = moved(l->bk, l, base), q.wv = moved(l->wv, l, base), q.bv = moved(l->bv, l, base);
	q.wo = moved(l->wo, l, base), q.bo = moved(l->bo, l, base), q.qnorm = moved(l->qnorm, l, base);
	q.knorm = moved(l->knorm, l, base), q.ln2 = moved(l->ln2, l, base), q.wgate = moved(l->wgate, l, base);
	q.wup = moved(l->wup, l, base), q.wdown = moved(l->wdown, l, base), q.norm = moved(l->norm, l, base);
	q.mem = base;
	return q;
}

static int state(struct model_gpu *mg, enum gpu_state which, const struct model_params *p, int get, struct err *e)
{
	static const char *const names[] = { "gradients", "master weights", "first moments", "second moments" };
	char msg[512] = "";
	struct gpu_host_params h = host_params(p);
	int rc = get ? mg->cuda->gpu_model_state_get(mg->g, which, &h, msg, sizeof msg)
		     : mg->cuda->gpu_model_state_put(mg->g, which, &h, msg, sizeof msg);
	if (rc < 0)
		return err_set(e, "GPU %s: %s", names[which], msg);
	return 0;
}

int model_gpu_grads_get(struct model_gpu *mg, struct model_params *grads, struct err *e)
{
	return state(mg, GPU_STATE_GRAD, grads, 1, e);
}

int model_gpu_grads_put(struct model_gpu *mg, const struct model_params *grads, struct err *e)
{
	return state(mg, GPU_STATE_GRAD, grads, 0, e);
}

int model_gpu_pin(struct model_gpu *mg, const float *host, size_t n, struct err *e)
{
	char msg[512] = "";
	if (mg->cuda->gpu_model_host_pin(mg->g, (void *)host, n * sizeof *host, msg, sizeof msg) != 0) {
		err_set(e, "GPU host arrays: %s", msg);
		return 1;
	}
	return 0;
}

int model_gpu_optim_put(struct model_gpu *mg, const struct model *m, const float *adam_m, const float *adam_v,
			struct err *e)
{
	char msg[512] = "";
	if (mg->cuda->gpu_model_optim_alloc(mg->g, msg, sizeof msg) < 0)
		return err_set(e, "GPU optimizer: %s", msg);
	/* copied back after every step: page-locked where the driver allows (else pageable, as fast as before) */
	model_gpu_pin(mg, m->w.mem, m->w.n, NULL);
	model_gpu_pin(mg, adam_m, m->w.n, NULL);
	model_gpu_pin(mg, adam_v, m->w.n, NULL);
	struct model_params pm = params_at(&m->w, (float *)adam_m), pv = params_at(&m->w, (float *)adam_v);
	if (state(mg, GPU_STATE_MASTER, &m->w, 0, e) < 0 || state(mg, GPU_STATE_ADAM_M, &pm, 0, e) < 0 ||
	    state(mg, GPU_STATE_ADAM_V, &pv, 0, e) < 0)
		return -1;
	if (mg->cuda->gpu_model_weights_from_master(mg->g, msg, sizeof msg) < 0)
		return err_set(e, "GPU weights: %s", msg);
	return 0;
}

int model_gpu_optim_get(struct model_gpu *mg, struct model *m, float *adam_m, float *adam_v, struct err *e)
{
	struct model_params pm = params_at(&m->w, adam_m), pv = params_at(&m->w, adam_v);
	return state(mg, GPU_STATE_MASTER, &m->w, 1, e) < 0 || state(mg, GPU_STATE_ADAM_M, &pm, 1, e) < 0 ||
			       state(mg, GPU_STATE_ADAM_V, &pv, 1, e) < 0
		       ? -1
		       : 0;
}

int model_gpu_grad_norm(struct model_gpu *mg, double *norm, struct err *e)
{
	char msg[512] = "";
	if (mg->cuda->gpu_model_grad_norm(mg->g, norm, msg, sizeof msg) < 0)
		return err_set(e, "GPU gradient norm: %s", msg);
	return 0;
}

int model_gpu_adamw(struct model_gpu *mg, const struct model_gpu_adamw *p, struct err *e)
{
	char msg[512] = "";
	struct gpu_adamw a = { p->clip, p->beta1, p->beta2, p->eps, p->step_size, p->sqrt_bc2, p->decay,
	                     p->decay_vectors };
	if (mg->cuda->gpu_model_adamw(mg->g, &a, msg, sizeof msg) < 0)
		return err_set(e, "GPU AdamW: %s", msg);
	return 0;
}

int model_gpu_max_tokens(const struct model_gpu *mg)
{
	return mg->maxT;
}

size_t model_gpu_bytes(const struct model_gpu *mg)
{
	return mg->cuda->gpu_model_bytes(mg->g);
}

void model_gpu_close(struct model_gpu *mg)
{
	if (!mg)
		return;
	mg->cuda->gpu_model_free(mg->g);
	free(mg->lens);
	free(mg);
}

static int forward(struct model_gpu *mg, const int32_t *ids, int T, const uint32_t *lens, int nseq,
		   const float *temps, const struct gpu_loss *loss, float *logprob, float *entropy, struct err *e)
{
	char msg[512] = "";
	mg->head_done = 0;
	if ((loss ? mg->cuda->gpu_model_forward_train(mg->g, ids, T, lens, nseq, temps, loss, logprob, entropy, msg,
						       sizeof msg)
		  : mg->cuda->gpu_model_forward(mg->g, ids, T, lens, nseq, temps, logprob, entropy, msg, sizeof msg)) < 0)
		return err_set(e, "GPU forward: %s", msg);
	mg->head_done = loss != NULL;
	return 0;
}

int model_gpu_forward(struct model_gpu *mg, const int *ids, int T, const int *seq_lens, int nseq,
		      const float *temps, float *logprob, float *entropy, struct err *e)
{
	if (nseq < 0 || nseq > mg->maxT)
		return err_set(e, "%d sequences in a pack the GPU model sizes for %d tokens", nseq, mg->maxT);
	for (int i = 0; i < nseq; i++) {
		if (seq_lens[i] <= 0)
			return err_set(e, "seq_lens[%d] = %d is not positive", i, seq_lens[i]);
		mg->lens[i] = (uint32_t)seq_lens[i];
	}
	return forward(mg, ids, T, mg->lens, nseq, temps, NULL, logprob, entropy, e);
}

int model_gpu_forward_mb(struct model_gpu *mg, const struct microbatch *mb, float *logprob, float *entropy,
			 struct err *e)
{
	if (mb->n_tokens > (uint32_t)mg->maxT || mb->n_seq_lens > (uint32_t)mg->maxT)
		return err_set(e, "a micro-batch of %u tokens, but the GPU model is sized for %d", mb->n_tokens,
			       mg->maxT);
	return forward(mg, mb->input_ids, (int)mb->n_tokens, mb->seq_lens, (int)mb->n_seq_lens, mb->temperatures,
		       NULL, logprob, entropy, e);
}

int model_gpu_forward_train(struct model_gpu *mg, const struct microbatch *mb, const struct model_gpu_loss *loss,
			    float *logprob, float *entropy, struct err *e)
{
	if (mb->n_tokens > (uint32_t)mg->maxT || mb->n_seq_lens > (uint32_t)mg->maxT)
		return err_set(e, "a micro-batch of %u tokens, but the GPU model is sized for %d", mb->n_tokens,
			       mg->maxT);
	struct gpu_loss gl = { loss->opts, loss->flags, loss->adv, loss->old, loss->behav, loss->ref, loss->w };
	return forward(mg, mb->input_ids, (int)mb->n_tokens, mb->seq_lens, (int)mb->n_seq_lens, mb->temperatures,
		       &gl, logprob, entropy, e);
}

void model_gpu_describe(const struct model_gpu *mg, char *buf, size_t n)
{
	char name[256];
	size_t used = 0;
	mg->cuda->gpu_model_device(mg->g, name, sizeof name, &used);
	snprintf(buf, n, "%s, %.0f MiB held by this model (%.0f MiB in use on the device)", name,
		 mg->cuda->gpu_model_bytes(mg->g) / 1048576.0, used / 1048576.0);
}

const char *model_gpu_attention(const struct model_gpu *mg)
{
	return mg->cuda->gpu_model_attention(mg->g);
}

