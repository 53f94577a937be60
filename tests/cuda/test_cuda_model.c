/*
 * test_cuda_model: the GPU forward (kernels/gpu_model.h through
 * lib/model/model_gpu.h) against the C model, its specification.
 *
 *  - the committed transformers fixtures (tests/data/hf: Qwen2 with q/k/v
 *    bias, Qwen3 with q/k norm, Llama with llama3 RoPE, untied): in fp32
 *    within 1e-4 of the C model and of transformers' own logprobs; in bf16
 *    the mean and worst absolute difference, reported and bounded;
 *  - random models of other shapes (head sizes 16 to 128, query groups of
 *    1, 2 and 7, o_proj bias), weights scaled up so that the distributions
 *    are far from uniform and an error anywhere shows, on packs with
 *    sequences of 1, 63, 64, 65 and several hundred tokens (query and key
 *    tiles of 64 and 32, and their edges);
 *  - the backward (gpu_train.cu): every weight's gradient against the C
 *    model's, within 1e-3 of its largest value in fp32 and with a cosine
 *    similarity above 0.999 in bf16; with the layers' activations
 *    recomputed (GPU_TRAIN_RECOMPUTE) the same gradient bytes, in fp32 and
 *    bf16, from a model that holds fewer;
 *  - packing invariance: the same sequences in another order give the same
 *    values; a pack of one token; bad ids and oversized packs refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "model/model_gpu.h"
#include "model_ref.h"

/* Worst and mean |a - b| over the tokens that a sequence predicts. */
struct diff { double worst, mean; };
static struct diff compare(const float *a, const float *b, const int *seq_lens, int nseq)
{
	struct diff d = { 0, 0 };
	int n = 0, t = 0;
	for (int s = 0; s < nseq; s++)
		for (int j = 0; j < seq_lens[s]; j++, t++) {
			if (j == 0)
				continue;
			double x = fabs((double)a[t] - b[t]);
			if (!(x <= d.worst))   /* NaN counts as worst */
				d.worst = isnan(x) ? INFINITY : x;
			d.mean += x;
			n++;
		}
	if (n)
		d.mean /= n;
	return d;
}

/* The first tokens must be 0 on both paths. */
static int firsts_zero(const float *v, const int *seq_lens, int nseq)
{
	int t = 0;
	for (int s = 0; s < nseq; t += seq_lens[s++])
		if (v[t] != 0.0f)
			return 0;
	return 1;
}

struct pack { int T, nseq; int *ids, *lens; float *temps; };

/* The C model's and the GPU's logprobs and entropies for one pack. */
static void check_pack(struct model *m, const struct pack *p, const char *name, double bf16_mean_max)
{
	struct err e = { 0 };
	float *lp = malloc(4 * sizeof(float) * p->T), *ent = lp + p->T, *glp = ent + p->T, *gent = glp + p->T;
	if (!ok(model_acts_alloc(m, p->T, &e) == 0 &&
		model_forward(m, p->ids, p->T, p->lens, p->nseq, p->temps, lp, ent, &e) == 0,
		"%s: C forward of %d tokens in %d sequences", name, p->T, p->nseq)) {
		diag("%s", e.msg);
		free(lp);
		return;
	}
	for (int bf16 = 0; bf16 <= 1; bf16++) {
		const char *mode = bf16 ? "bf16" : "fp32";
		struct model_gpu *g = NULL;
		int r = model_gpu_open(&g, m, p->T, bf16, &e);
		if (r == 0)
			r = model_gpu_forward(g, p->ids, p->T, p->lens, p->nseq, p->temps, glp, gent, &e);
		if (!ok(r == 0, "%s: GPU forward in %s", name, mode)) {
			diag("%s", e.msg);
			model_gpu_close(g);
			continue;
		}
		struct diff dl = compare(glp, lp, p->lens, p->nseq), de = compare(gent, ent, p->lens, p->nseq);
		ok(firsts_zero(glp, p->lens, p->nseq) && firsts_zero(gent, p->lens, p->nseq),
		   "%s %s: 0 at every sequence's first token", name, mode);
		if (!bf16) {
			ok(dl.worst <= 1e-4, "%s fp32: logprobs within 1e-4 of the C model (worst %.2g, mean %.2g)", name,
			   dl.worst, dl.mean);
			ok(de.worst <= 1e-4, "%s fp32: entropies within 1e-4 of the C model (worst %.2g, mean %.2g)", name,
			   de.worst, de.mean);
		} else {
			ok(dl.mean <= bf16_mean_max,
			   "%s bf16: logprobs' mean |diff| %.4f (worst %.3f) to fp32, within %.2g", name, dl.mean, dl.worst,
			   bf16_mean_max);
			ok(de.mean <= bf16_mean_max, "%s bf16: entropies' mean |diff| %.4f (worst %.3f), within %.2g", name,
			   de.mean, de.worst, bf16_mean_max);
		}
		model_gpu_close(g);
	}
	free(lp);
}

/* ---- gradients ---- */

#define XORSHIFT_SEED 0x2545f4914f6cdd1dull
#include "../xorshift.h"


/* The GPU's gradients of one forward and backward into got (lib/model's
 * layout), recomputing or not; bytes: what the GPU model held. */
static int gpu_grads(struct model *m, const struct pack *p, int bf16, int recompute, const float *dlp,
		     const float *dent, struct model_params *got, size_t *bytes, struct err *e)
{
	float *lp = malloc(2 * sizeof(float) * p->T), *ent = lp + p->T;
	struct model_gpu *g = NULL;
	memset(got->mem, 0xff, m->g.n * sizeof(float));   /* NaN where nothing is written */
	int r = lp ? model_gpu_open_train(&g, m, p->T, bf16, recompute, e) : err_set(e, "out of memory");
	/* twice, with a zero between: what remains is one backward's */
	for (int k = 0; k < 2 && r == 0; k++)
		r = model_gpu_grads_zero(g, e) ||
		    model_gpu_forward(g, p->ids, p->T, p->lens, p->nseq, p->temps, lp, ent, e) ||
		    model_gpu_backward(g, dlp, dent, e);
	if (r == 0)
		r = model_gpu_grads_get(g, got, e);
	*bytes = g ? model_gpu_bytes(g) : 0;
	model_gpu_close(g);
	free(lp);
	return r;
}

/* like's tensors in mem, another array of its layout. */
static struct model_params params_in(const struct model_params *like, float *mem)
{
	struct model_params q = *like;
	for (float **f = &q.embed; f <= &q.norm; f++)
		if (*f)
			*f = mem + (*f - like->mem);
	q.mem = mem;
	return q;
}

/* Each weight's gradient from the GPU against the C model's for the same
 * pack and loss gradients: in fp32 within 1e-3 of the tensor's largest
 * value, in bf16 a cosine similarity above min_cos. Measured on an H200:
 * fp32 within 1e-5; bf16 above 0.9999 on the transformers fixtures, and on
 * the random models with doubled weights (sharp distributions) down to
 * 0.9973, the least each time a sum over tokens (a q bias, a k norm
 * weight), where bf16's rounding of the attention's gradients shows most.
 * The goal is 0.999 everywhere (issue 15). */
static void check_grads(struct model *m, const struct pack *p, const char *name, double min_cos)
{
	struct err e = { 0 };
	float *dlp = malloc(4 * sizeof(float) * p->T), *dent = dlp + p->T, *lp = dent + p->T, *ent = lp + p->T;
	for (int t = 0; t < p->T; t++) {
		dlp[t] = (float)((int)(xorshift32() % 2001) - 1000) * 1e-3f;
		dent[t] = (float)((int)(xorshift32() % 2001) - 1000) * 5e-4f;
	}
	if (!ok(model_acts_alloc(m, p->T, &e) == 0 && model_grads_alloc(m, &e) == 0 &&
		model_forward(m, p->ids, p->T, p->lens, p->nseq, p->temps, lp, ent, &e) == 0 &&
		model_backward(m, dlp, dent, &e) == 0, "%s: C backward", name)) {
		diag("%s", e.msg);
		free(dlp);
		return;
	}
	float *mem = calloc(2 * m->g.n, sizeof(float));
	struct model_params got = params_in(&m->g, mem), again = params_in(&m->g, mem + m->g.n);
	for (int bf16 = 0; bf16 <= 1; bf16++) {
		const char *mode = bf16 ? "bf16" : "fp32";
		size_t bytes = 0, rbytes = 0;
		if (!ok(gpu_grads(m, p, bf16, 0, dlp, dent, &got, &bytes, &e) == 0, "%s %s: GPU forward and backward",
			name, mode)) {
			diag("%s", e.msg);
			continue;
		}
		/* recomputing: the same kernels on the same inputs, so the same bits */
		if (ok(gpu_grads(m, p, bf16, 1, dlp, dent, &again, &rbytes, &e) == 0,
		       "%s %s: GPU forward and backward recomputing the layers", name, mode)) {
			ok(memcmp(mem, mem + m->g.n, m->g.n * sizeof(float)) == 0,
			   "%s %s: the same gradient bytes with the layers' activations recomputed", name, mode);
			ok(m->cfg.L == 1 || rbytes < bytes, "%s %s: recomputing, the GPU model holds %.2f MiB, not %.2f",
			   name, mode, rbytes / 1048576.0, bytes / 1048576.0);
		} else {
			diag("%s", e.msg);
		}
		struct model_tensor want[64], have[64];
		int n = model_tensors(&m->cfg, &m->g, want);
		model_tensors(&m->cfg, &got, have);
		double worst_rel = 0, worst_cos = 1;
		const char *worst_name = "", *cos_name = "";
		for (int i = 0; i < n; i++) {
			size_t len = (size_t)want[i].shape[0] * (want[i].ndim > 1 ? want[i].shape[1] : 1);
			double mx = 0, d = 0, ab = 0, aa = 0, bb = 0;
			for (size_t j = 0; j < len; j++) {
				double a = want[i].data[j], b = have[i].data[j];
				mx = fabs(a) > mx ? fabs(a) : mx;
				d = fabs(a - b) > d || isnan(b) ? (isnan(b) ? INFINITY : fabs(a - b)) : d;
				ab += a * b, aa += a * a, bb += b * b;
			}
			double rel = d / (mx > 0 ? mx : 1), cs = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : (aa == bb ? 1 : 0);
			if (!(rel <= worst_rel))
				worst_rel = rel, worst_name = want[i].name;
			if (!(cs >= worst_cos))
				worst_cos = cs, cos_name = want[i].name;
		}
		if (!bf16)
			ok(worst_rel <= 1e-3, "%s fp32: every weight's gradient within 1e-3 of its largest value "
			   "(worst %.2g, %s; least cosine %.7f)", name, worst_rel, worst_name, worst_cos);
		else
			ok(worst_cos > min_cos, "%s bf16: every weight's gradient with cosine similarity > %g to fp32's "
			   "(least %.5f, %s)", name, min_cos, worst_cos, cos_name);
	}
	free(mem);
	free(dlp);
}

/* ---- the transformers fixtures ---- */

static void fixture(const char *dir, const char *fam)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s/expected.json", dir, fam);
	char *text = ref_slurp(path);
	cJSON *x = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok(x != NULL, "%s: expected.json readable", fam))
		return;
	static struct ref_pack rp;
	ref_pack(cJSON_GetObjectItem(x, "sequences"), &rp);
	snprintf(path, sizeof path, "%s/%s", dir, fam);
	struct model m;
	struct err e = { 0 };
	if (!ok(model_load(&m, path, &e) == 0, "%s: load %s", fam, path)) {
		diag("%s", e.msg);
		cJSON_Delete(x);
		return;
	}
	struct pack p = { rp.T, rp.nseq, rp.ids, rp.seq_lens, rp.temps };
	check_pack(&m, &p, fam, 0.05);
	check_grads(&m, &p, fam, 0.999);

	/* and against transformers itself */
	float lp[REF_MAX_TOKENS], ent[REF_MAX_TOKENS];
	struct model_gpu *g = NULL;
	int r = model_gpu_open(&g, &m, rp.T, 0, &e);
	if (r == 0)
		r = model_gpu_forward(g, rp.ids, rp.T, rp.seq_lens, rp.nseq, rp.temps, lp, ent, &e);
	if (ok(r == 0, "%s: GPU fp32 forward for transformers' values", fam)) {
		double wl = ref_worst_rel(&rp, lp, cJSON_GetObjectItem(x, "logprobs"));
		double we = ref_worst_rel(&rp, ent, cJSON_GetObjectItem(x, "entropy"));
		ok(wl <= 1e-4, "%s: GPU logprobs match transformers within 1e-4 relative (worst %.2g)", fam, wl);
		ok(we <= 1e-4, "%s: GPU entropies match transformers within 1e-4 relative (worst %.2g)", fam, we);
	} else {
		diag("%s", e.msg);
	}
	model_gpu_close(g);
	model_free(&m);
	cJSON_Delete(x);
}

/* ---- random models ---- */

static void make_pack(struct pack *p, const int *lens, int nseq, int V)
{
	p->nseq = nseq;
	p->T = 0;
	for (int s = 0; s < nseq; s++)
		p->T += lens[s];
	p->lens = malloc(nseq * sizeof *p->lens);
	p->ids = malloc(p->T * sizeof *p->ids);
	p->temps = malloc(p->T * sizeof *p->temps);
	memcpy(p->lens, lens, nseq * sizeof *lens);
	static const float taus[] = { 1.0f, 0.7f, 1.3f, 0.5f };
	for (int t = 0; t < p->T; t++)
		p->ids[t] = (int)(xorshift32() % (uint32_t)V);
	for (int s = 0, t = 0; s < nseq; s++)
		for (int j = 0; j < lens[s]; j++)
			p->temps[t++] = taus[s % 4];
}

static void free_pack(struct pack *p)
{
	free(p->lens);
	free(p->ids);
	free(p->temps);
}

/* The pack's sequences in reverse order. */
static void reversed(const struct pack *p, struct pack *q)
{
	int lens[64];
	for (int s = 0; s < p->nseq; s++)
		lens[s] = p->lens[p->nseq - 1 - s];
	make_pack(q, lens, p->nseq, 1);
	for (int s = 0, to = 0; s < p->nseq; s++) {
		int from = 0, src = p->nseq - 1 - s;
		for (int k = 0; k < src; k++)
			from += p->lens[k];
		memcpy(q->ids + to, p->ids + from, p->lens[src] * sizeof(int));
		memcpy(q->temps + to, p->temps + from, p->lens[src] * sizeof(float));
		to += p->lens[src];
	}
}

struct shape {
	const char *name;
	enum model_family fam;
	int C, I, L, NH, NKV, HS, V, tied, o_bias;
};

static int random_model(struct model *m, const struct shape *s)
{
	struct model_config c;
	memset(&c, 0, sizeof c);
	c.C = s->C, c.I = s->I, c.L = s->L, c.NH = s->NH, c.NKV = s->NKV, c.HS = s->HS, c.V = s->V;
	model_config_defaults(&c, s->fam);
	c.C = s->C, c.I = s->I, c.L = s->L, c.NH = s->NH, c.NKV = s->NKV, c.HS = s->HS, c.V = s->V;
	c.tied = s->tied;
	c.o_bias = s->o_bias;
	struct err e = { 0 };
	if (model_create(m, &c, &e) < 0 || model_init_random(m, 7, &e) < 0) {
		diag("%s: %s", s->name, e.msg);
		return -1;
	}
	/* transformers' init (std 0.02) gives near-uniform outputs, which hide
	 * errors; doubled, the logprobs spread from 0 to about -20 (entropies
	 * near 6 nats). Biases, zero at init, get values of their own. */
	for (size_t i = 0; i < m->w.n; i++)
		m->w.mem[i] *= 2.0f;
	float *bias[] = { m->w.bq, m->w.bk, m->w.bv, m->w.bo };
	size_t nb[] = { (size_t)c.L * c.NH * c.HS, (size_t)c.L * c.NKV * c.HS, (size_t)c.L * c.NKV * c.HS,
			(size_t)c.L * c.C };
	for (int k = 0; k < 4; k++)
		for (size_t i = 0; bias[k] && i < nb[k]; i++)
			bias[k][i] = ((int)(xorshift32() % 2001) - 1000) * 1e-4f;
	return 0;
}

static void random_shape(const struct shape *s)
{
	struct model m;
	if (!ok(random_model(&m, s) == 0, "%s: random model", s->name))
		return;
	static const int lens[] = { 65, 1, 300, 64, 63, 2, 129, 17 };
	int nseq = sizeof lens / sizeof lens[0];
	struct pack p, q;
	make_pack(&p, lens, nseq, s->V);
	check_pack(&m, &p, s->name, 0.25);
	check_grads(&m, &p, s->name, 0.995);

	/* packing invariance: the same sequences, reversed, give the same values */
	reversed(&p, &q);
	struct err e = { 0 };
	float *a = malloc(4 * sizeof(float) * p.T), *ae = a + p.T, *b = ae + p.T, *be = b + p.T;
	struct model_gpu *g = NULL;
	int r = model_gpu_open(&g, &m, p.T, 0, &e);
	if (r == 0)
		r = model_gpu_forward(g, p.ids, p.T, p.lens, p.nseq, p.temps, a, ae, &e);
	if (r == 0)
		r = model_gpu_forward(g, q.ids, q.T, q.lens, q.nseq, q.temps, b, be, &e);
	if (ok(r == 0, "%s: forward of the pack and of its sequences reversed", s->name)) {
		double worst = 0;
		for (int k = 0, from = 0; k < p.nseq; from += p.lens[k++]) {
			int to = 0;
			for (int j = p.nseq - 1; j > k; j--)
				to += p.lens[j];
			for (int j = 0; j < p.lens[k]; j++) {
				double d = fabs((double)a[from + j] - b[to + j]) + fabs((double)ae[from + j] - be[to + j]);
				worst = d > worst || isnan(d) ? d : worst;
			}
		}
		ok(worst <= 1e-5, "%s: packing invariance, worst difference %.2g", s->name, worst);
	} else {
		diag("%s", e.msg);
	}

	/* a pack of one token, and what is refused */
	int one = 1, id = 3;
	float lp1 = 1, ent1 = 1;
	r = g ? model_gpu_forward(g, &id, 1, &one, 1, NULL, &lp1, &ent1, &e) : -1;
	ok(r == 0 && lp1 == 0 && ent1 == 0, "%s: a pack of one token gives 0", s->name);
	p.ids[5] = s->V;
	r = g ? model_gpu_forward(g, p.ids, p.T, p.lens, p.nseq, p.temps, a, ae, &e) : 0;
	ok(r < 0 && strstr(e.msg, "outside the vocabulary"), "%s: an id past the vocabulary is refused: %s", s->name,
	   e.msg);
	p.ids[5] = 0;
	int big = p.T + 1;
	r = g ? model_gpu_forward(g, p.ids, p.T + 1, &big, 1, NULL, a, ae, &e) : 0;
	ok(r < 0, "%s: a pack larger than the GPU model's size is refused: %s", s->name, e.msg);
	model_gpu_close(g);
	free(a);
	free_pack(&p);
	free_pack(&q);
	model_free(&m);
}

int main(void)
{
	skip_without_gpu();
	struct err e = { 0 };
	enum model_device d;
	ok(model_device_resolve(MODEL_DEVICE_AUTO, &d, &e) == 0 && d == MODEL_DEVICE_CUDA,
	   "--device auto picks the GPU here");

	const char *top = getenv("GRPO_TOP");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/data/hf", top ? top : ".");
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++)
		fixture(dir, fams[i]);

	static const struct shape shapes[] = {
		{ "qwen2 HS 64, 7 q heads per kv head", MODEL_QWEN2, 448, 512, 2, 7, 1, 64, 2048, 1, 0 },
		{ "qwen3 HS 128, q/k norm, untied", MODEL_QWEN3, 256, 384, 2, 4, 2, 128, 3000, 0, 0 },
		{ "llama HS 16, o_proj bias, no grouping", MODEL_LLAMA, 96, 160, 3, 6, 6, 16, 1000, 0, 1 },
		{ "qwen2 HS 32, 2 q heads per kv head", MODEL_QWEN2, 128, 256, 2, 4, 2, 32, 777, 1, 0 },
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		random_shape(&shapes[i]);
	return tap_done();
}
