/*
 * model.c: see model.h. The layer functions come first, each a flat function
 * over explicit arrays with its shapes in the comment; model_forward() and
 * model_backward() at the end read as the architecture.
 */
#include "model/model.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "base/path.h"
#include "base/rng.h"
#include "model/gemm.h"
#include "model/softmax_stats.h"

/* ---- layers ---- */

/* out (T, OC) = in (T, IC) @ w (OC, IC)^T + b (OC, may be NULL). Writes out. */
static void matmul_forward(float *out, const float *in, const float *w, const float *b, int T, int IC, int OC)
{
	gemm(0, 1, T, OC, IC, in, IC, w, IC, 0.0f, out, OC);
	if (b)
		for (int t = 0; t < T; t++)
			for (int o = 0; o < OC; o++)
				out[(size_t)t * OC + o] += b[o];
}

/*
 * Backward of matmul_forward. Accumulates (+=): din (T, IC) += dout @ w,
 * dw (OC, IC) += dout^T @ in, db (OC) += column sums of dout (db may be NULL).
 */
static void matmul_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                            const float *w, int T, int IC, int OC)
{
	gemm(0, 0, T, IC, OC, dout, OC, w, IC, 1.0f, din, IC);
	gemm(1, 0, OC, IC, T, dout, OC, in, IC, 1.0f, dw, IC);
	if (db)
		for (int t = 0; t < T; t++)
			for (int o = 0; o < OC; o++)
				db[o] += dout[(size_t)t * OC + o];
}

/* RMSNorm over rows: out (N, C) = in * rstd * w, rstd (N) = 1/sqrt(mean(in^2) + eps). */
static void rmsnorm_forward(float *out, float *rstd, const float *in, const float *w, int N, int C, float eps)
{
	for (int t = 0; t < N; t++) {
		const float *x = in + (size_t)t * C;
		double ss = 0;
		for (int i = 0; i < C; i++)
			ss += (double)x[i] * x[i];
		float r = (float)(1.0 / sqrt(ss / C + eps));
		rstd[t] = r;
		float *y = out + (size_t)t * C;
		for (int i = 0; i < C; i++)
			y[i] = w[i] * (x[i] * r);
	}
}

/* Backward of rmsnorm_forward. Accumulates (+=) into din (N, C) and dw (C). */
static void rmsnorm_backward(float *din, float *dw, const float *dout, const float *in, const float *w,
                             const float *rstd, int N, int C)
{
	for (int t = 0; t < N; t++) {
		const float *x = in + (size_t)t * C, *dy = dout + (size_t)t * C;
		float *dx = din + (size_t)t * C;
		float r = rstd[t];
		double dot = 0;   /* sum_i dy_i w_i x_i */
		for (int i = 0; i < C; i++)
			dot += (double)dy[i] * w[i] * x[i];
		float k = (float)(dot * r * r * r / C);
		for (int i = 0; i < C; i++) {
			dx[i] += dy[i] * w[i] * r - x[i] * k;
			dw[i] += dy[i] * x[i] * r;
		}
	}
}

/*
 * RoPE in Hugging Face's split-halves layout, in place on x (T, nh, HS): for
 * i < HS/2 the pair is (i, i + HS/2), rotated by the angle pos[t] * inv_freq[i].
 * cos, sin (maxT, HS/2) are indexed by position within the sequence.
 */
static void rope_forward(float *x, const int *pos, const float *cos, const float *sin, int T, int nh, int HS)
{
	int h2 = HS / 2;
	for (int t = 0; t < T; t++) {
		const float *c = cos + (size_t)pos[t] * h2, *s = sin + (size_t)pos[t] * h2;
		for (int h = 0; h < nh; h++) {
			float *v = x + ((size_t)t * nh + h) * HS;
			for (int i = 0; i < h2; i++) {
				float a = v[i], b = v[i + h2];
				v[i] = a * c[i] - b * s[i];
				v[i + h2] = b * c[i] + a * s[i];
			}
		}
	}
}

/* Backward of rope_forward in place on dx (T, nh, HS): the transposed rotation. */
static void rope_backward(float *dx, const int *pos, const float *cos, const float *sin, int T, int nh, int HS)
{
	int h2 = HS / 2;
	for (int t = 0; t < T; t++) {
		const float *c = cos + (size_t)pos[t] * h2, *s = sin + (size_t)pos[t] * h2;
		for (int h = 0; h < nh; h++) {
			float *v = dx + ((size_t)t * nh + h) * HS;
			for (int i = 0; i < h2; i++) {
				float a = v[i], b = v[i + h2];
				v[i] = a * c[i] + b * s[i];
				v[i + h2] = b * c[i] - a * s[i];
			}
		}
	}
}

static float dot(const float *a, const float *b, int n)
{
	float s = 0;
	for (int i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/*
 * One query's attention over n keys and values, rows `stride` floats apart
 * (k and v start at the query's key/value head): o (HS) = the softmax of
 * the scores q.k_j * scale over v; returns their log-sum-exp. scores:
 * scratch (n).
 */
static float attend(float *o, const float *qt, const float *k, const float *v, size_t stride, int n, int HS,
                    float scale, float *scores)
{
	float mx = -INFINITY;
	for (int j = 0; j < n; j++) {
		scores[j] = dot(qt, k + j * stride, HS) * scale;
		mx = scores[j] > mx ? scores[j] : mx;
	}
	double sum = 0;
	for (int j = 0; j < n; j++) {
		scores[j] = expf(scores[j] - mx);
		sum += scores[j];
	}
	memset(o, 0, (size_t)HS * sizeof *o);
	float inv = (float)(1.0 / sum);
	for (int j = 0; j < n; j++) {
		const float *vj = v + j * stride;
		float p = scores[j] * inv;
		for (int i = 0; i < HS; i++)
			o[i] += p * vj[i];
	}
	return mx + (float)log(sum);
}

/*
 * Block-causal grouped-query attention. q (T, NH, HS), k and v (T, NKV, HS);
 * token t attends to tokens start[t]..t; query head h reads key/value head
 * h / (NH/NKV). Writes out (T, NH, HS) and lse (T, NH), the log-sum-exp of
 * each query's scaled scores. scores: scratch of the longest sequence.
 */
static void attention_forward(float *out, float *lse, const float *q, const float *k, const float *v,
                              const int *start, float *scores, int T, int NH, int NKV, int HS)
{
	float scale = 1.0f / sqrtf((float)HS);
	int group = NH / NKV;
	size_t KD = (size_t)NKV * HS;
	for (int t = 0; t < T; t++) {
		int s0 = start[t], n = t - s0 + 1;
		for (int h = 0; h < NH; h++) {
			size_t kv0 = (size_t)s0 * KD + (size_t)(h / group) * HS, at = ((size_t)t * NH + h) * HS;
			lse[(size_t)t * NH + h] = attend(out + at, q + at, k + kv0, v + kv0, KD, n, HS, scale, scores);
		}
	}
}

/*
 * Backward of attention_forward, recomputing each probability from q, k and
 * lse. Accumulates (+=) into dq (T, NH, HS), dk and dv (T, NKV, HS); dk and dv
 * sum over the query heads of their group.
 */
static void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q,
                               const float *k, const float *v, const float *out, const float *lse,
                               const int *start, int T, int NH, int NKV, int HS)
{
	float scale = 1.0f / sqrtf((float)HS);
	int group = NH / NKV;
	for (int t = 0; t < T; t++) {
		int s0 = start[t];
		for (int h = 0; h < NH; h++) {
			size_t qi = ((size_t)t * NH + h) * HS;
			const float *qt = q + qi, *dot_ = dout + qi;
			float *dqt = dq + qi;
			int kh = h / group;
			/* softmax backward: ds_j = p_j (dp_j - sum_i p_i dp_i), and sum_i p_i dp_i = dout . out */
			float D = dot(dot_, out + qi, HS);
			float l = lse[(size_t)t * NH + h];
			for (int s = s0; s <= t; s++) {
				size_t ki = ((size_t)s * NKV + kh) * HS;
				float p = expf(dot(qt, k + ki, HS) * scale - l);
				float dp = dot(dot_, v + ki, HS);
				float ds = p * (dp - D) * scale;
				for (int i = 0; i < HS; i++) {
					dqt[i] += ds * k[ki + i];
					dk[ki + i] += ds * qt[i];
					dv[ki + i] += p * dot_[i];
				}
			}
		}
	}
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* SwiGLU: out (N) = silu(gate) * up. */
static void swiglu_forward(float *out, const float *gate, const float *up, size_t N)
{
	for (size_t i = 0; i < N; i++)
		out[i] = silu(gate[i]) * up[i];
}

/* Backward of swiglu_forward. Writes dgate and dup (N). */
static void swiglu_backward(float *dgate, float *dup, const float *dout, const float *gate, const float *up,
                            size_t N)
{
	for (size_t i = 0; i < N; i++) {
		float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
		dup[i] = dout[i] * g * sg;
		dgate[i] = dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
	}
}

/* out (T, C) = a + b. */
static void residual_add(float *out, const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

/* Does position t predict a token, i.e. is t+1 in the same sequence? */
static int predicts(const struct model_acts *a, int t)
{
	return t + 1 < a->T && a->start[t + 1] == a->start[t];
}

/*
 * LM head forward, MODEL_LM_CHUNK positions at a time: the logits of
 * position t = lnf[t] @ W^T, divided by temp[t+1], give the logprob of
 * ids[t+1] and the entropy, stored at t+1 (with the log-sum-exp for the
 * backward), by softmax_stats().
 */
static void lm_head_forward(struct model_acts *a, const float *W, int C, int V, float *logprob)
{
	int T = a->T;
	for (int t0 = 0; t0 < T; t0 += MODEL_LM_CHUNK) {
		int n = T - t0 < MODEL_LM_CHUNK ? T - t0 : MODEL_LM_CHUNK;
		gemm(0, 1, n, V, C, a->lnf + (size_t)t0 * C, C, W, C, 0.0f, a->logits, V);
		for (int r = 0; r < n; r++) {
			int t = t0 + r;
			if (!predicts(a, t))
				continue;
			softmax_stats(a->logits + (size_t)r * V, V, a->ids[t + 1], a->temp[t + 1], &logprob[t + 1],
			              &a->ent[t + 1], &a->lm_lse[t + 1]);
		}
	}
}

/*
 * LM head backward: recomputes each chunk's logits, turns dlogprob and
 * dentropy into dlogits in place, then dlnf (T, C) += dlogits @ W and
 * dW (V, C) += dlogits^T @ lnf. With p = softmax(z), z = logits / temp:
 *   dlogprob/dz_j = [j == target] - p_j,   dH/dz_j = -p_j (log p_j + H).
 */
static void lm_head_backward(struct model_acts *a, const float *W, float *dW, float *dlnf, int C, int V,
                             const float *dlogprob, const float *dentropy)
{
	int T = a->T;
	for (int t0 = 0; t0 < T; t0 += MODEL_LM_CHUNK) {
		int n = T - t0 < MODEL_LM_CHUNK ? T - t0 : MODEL_LM_CHUNK;
		const float *x = a->lnf + (size_t)t0 * C;
		gemm(0, 1, n, V, C, x, C, W, C, 0.0f, a->logits, V);
		for (int r = 0; r < n; r++) {
			int t = t0 + r, i = t + 1;
			float *z = a->logits + (size_t)r * V;
			double dl = predicts(a, t) ? dlogprob[i] : 0, dh = predicts(a, t) && dentropy ? dentropy[i] : 0;
			if (dl == 0 && dh == 0) {   /* no prediction, or one the loss ignores (a prompt token) */
				memset(z, 0, (size_t)V * sizeof *z);
				continue;
			}
			double inv = 1.0 / a->temp[i], lse = a->lm_lse[i], H = a->ent[i];
			for (int j = 0; j < V; j++) {
				double lp = z[j] * inv - lse, p = exp(lp);
				z[j] = (float)((-dl * p - dh * p * (lp + H)) * inv);
			}
			z[a->ids[i]] += (float)(dl * inv);
		}
		gemm(0, 0, n, C, V, a->logits, V, W, C, 1.0f, dlnf + (size_t)t0 * C, C);
		gemm(1, 0, V, C, n, a->logits, V, x, C, 1.0f, dW, C);
	}
}

/* ---- parameters ---- */

/* Point p's fields into base (NULL: only count); returns the float count. */
static size_t params_layout(const struct model_config *c, struct model_params *p, float *base)
{
	size_t off = 0, L = (size_t)c->L, C = (size_t)c->C, I = (size_t)c->I, V = (size_t)c->V;
	size_t QD = (size_t)c->NH * c->HS, KD = (size_t)c->NKV * c->HS;
	memset(p, 0, sizeof *p);
#define TAKE(field, count, present) do { \
		if (present) { p->field = base ? base + off : NULL; off += (count); } \
	} while (0)
	TAKE(embed, V * C, 1);
	TAKE(lm_head, V * C, !c->tied);
	TAKE(ln1, L * C, 1);
	TAKE(wq, L * QD * C, 1);
	TAKE(bq, L * QD, c->qkv_bias);
	TAKE(wk, L * KD * C, 1);
	TAKE(bk, L * KD, c->qkv_bias);
	TAKE(wv, L * KD * C, 1);
	TAKE(bv, L * KD, c->qkv_bias);
	TAKE(wo, L * C * QD, 1);
	TAKE(bo, L * C, c->o_bias);
	TAKE(qnorm, L * (size_t)c->HS, c->qk_norm);
	TAKE(knorm, L * (size_t)c->HS, c->qk_norm);
	TAKE(ln2, L * C, 1);
	TAKE(wgate, L * I * C, 1);
	TAKE(wup, L * I * C, 1);
	TAKE(wdown, L * C * I, 1);
	TAKE(norm, C, 1);
#undef TAKE
	if (c->tied)
		p->lm_head = p->embed;
	p->mem = base;
	p->n = off;
	return off;
}

static int params_alloc(const struct model_config *c, struct model_params *p, struct err *e)
{
	struct model_params tmp;
	size_t n = params_layout(c, &tmp, NULL);
	float *mem = calloc(n, sizeof *mem);
	if (!mem)
		return err_set(e, "out of memory for %zu parameters (%.1f MiB)", n, n * 4.0 / 1048576);
	params_layout(c, p, mem);
	return 0;
}

int model_tensors(const struct model_config *c, const struct model_params *p, struct model_tensor *out)
{
	int n = 0;
	int64_t C = c->C, I = c->I, V = c->V, HS = c->HS, QD = (int64_t)c->NH * c->HS, KD = (int64_t)c->NKV * c->HS;
#define ADD(nm, base, d0, d1) do { \
		if (out) { \
			struct model_tensor *t_ = &out[n]; \
			snprintf(t_->name, sizeof t_->name, "%s", nm); \
			t_->ndim = (d1) ? 2 : 1; \
			t_->shape[0] = (d0); \
			t_->shape[1] = (d1); \
			t_->data = base; \
		} \
		n++; \
	} while (0)
	ADD("model.embed_tokens.weight", p->embed, V, C);
	for (int l = 0; l < c->L; l++) {
		char nm[96];
		struct { const char *suffix; float *base; int64_t d0, d1; int present; } lt[] = {
			{ "self_attn.q_proj.weight", p->wq, QD, C, 1 },
			{ "self_attn.q_proj.bias", p->bq, QD, 0, c->qkv_bias },
			{ "self_attn.k_proj.weight", p->wk, KD, C, 1 },
			{ "self_attn.k_proj.bias", p->bk, KD, 0, c->qkv_bias },
			{ "self_attn.v_proj.weight", p->wv, KD, C, 1 },
			{ "self_attn.v_proj.bias", p->bv, KD, 0, c->qkv_bias },
			{ "self_attn.o_proj.weight", p->wo, C, QD, 1 },
			{ "self_attn.o_proj.bias", p->bo, C, 0, c->o_bias },
			{ "self_attn.q_norm.weight", p->qnorm, HS, 0, c->qk_norm },
			{ "self_attn.k_norm.weight", p->knorm, HS, 0, c->qk_norm },
			{ "mlp.gate_proj.weight", p->wgate, I, C, 1 },
			{ "mlp.up_proj.weight", p->wup, I, C, 1 },
			{ "mlp.down_proj.weight", p->wdown, C, I, 1 },
			{ "input_layernorm.weight", p->ln1, C, 0, 1 },
			{ "post_attention_layernorm.weight", p->ln2, C, 0, 1 },
		};
		for (size_t k = 0; k < sizeof lt / sizeof lt[0]; k++) {
			if (!lt[k].present)
				continue;
			snprintf(nm, sizeof nm, "model.layers.%d.%s", l, lt[k].suffix);
			int64_t per = lt[k].d0 * (lt[k].d1 ? lt[k].d1 : 1);
			ADD(nm, lt[k].base ? lt[k].base + l * per : NULL, lt[k].d0, lt[k].d1);
		}
	}
	ADD("model.norm.weight", p->norm, C, 0);
	if (!c->tied)
		ADD("lm_head.weight", p->lm_head, V, C);
#undef ADD
	return n;
}

int model_create(struct model *m, const struct model_config *cfg, struct err *e)
{
	memset(m, 0, sizeof *m);
	if (model_config_check(cfg, e) < 0)
		return -1;
	m->cfg = *cfg;
	return params_alloc(cfg, &m->w, e);
}

int model_load_weights(struct model *m, const struct st_model *st, const char *name, struct err *e)
{
	int n = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *ts = malloc((size_t)n * sizeof *ts);
	if (!ts)
		return err_set(e, "%s: out of memory", name);
	model_tensors(&m->cfg, &m->w, ts);
	int r = 0;
	for (int i = 0; i < n && r == 0; i++) {
		if (!st_find(st, ts[i].name))
			r = err_set(e, "%s: missing tensor %s", name, ts[i].name);
		else
			r = st_read_f32(st, ts[i].name, ts[i].shape, ts[i].ndim, ts[i].data, e);
	}
	free(ts);
	return r;
}

int model_load(struct model *m, const char *dir, struct err *e)
{
	struct model_config cfg;
	if (model_config_load(dir, &cfg, e) < 0)
		return -1;
	if (model_create(m, &cfg, e) < 0)
		return err_prefix(e, "%s/config.json", dir);
	struct st_model st;
	if (st_open(&st, dir, e) < 0) {
		model_free(m);
		return -1;
	}
	int r = model_load_weights(m, &st, dir, e);
	st_close(&st);
	if (r < 0)
		model_free(m);
	return r;
}

void model_free(struct model *m)
{
	free(m->w.mem);
	free(m->g.mem);
	free(m->a.mem);
	memset(m, 0, sizeof *m);
}

int model_grads_alloc(struct model *m, struct err *e)
{
	if (m->g.mem)
		return 0;
	return params_alloc(&m->cfg, &m->g, e);
}

void model_grads_zero(struct model *m)
{
	if (m->g.mem)
		memset(m->g.mem, 0, m->g.n * sizeof *m->g.mem);
}

static double uniform01(uint64_t *s)
{
	return ((splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);   /* in (0, 1) */
}

int model_init_random(struct model *m, uint64_t seed, struct err *e)
{
	int n = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *ts = n > 0 ? malloc((size_t)n * sizeof *ts) : NULL;
	if (!ts)
		return err_set(e, "random weights: out of memory for the list of %d tensors", n);
	model_tensors(&m->cfg, &m->w, ts);
	/* each tensor draws from its own stream: the same values on any number of threads */
#pragma omp parallel for schedule(dynamic, 1)
	for (int i = 0; i < n; i++) {
		struct model_tensor *t = &ts[i];
		size_t count = (size_t)t->shape[0] * (size_t)(t->ndim == 2 ? t->shape[1] : 1);
		const char *suffix = strrchr(t->name, '.');
		int is_norm = strstr(t->name, "norm") != NULL;
		if (strcmp(suffix, ".bias") == 0 || is_norm) {
			for (size_t j = 0; j < count; j++)
				t->data[j] = is_norm ? 1.0f : 0.0f;
			continue;
		}
		/* FNV-1a of the name, mixed with the seed, keys the tensor's stream */
		uint64_t h = 0xcbf29ce484222325ull;
		for (const char *c = t->name; *c; c++)
			h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
		uint64_t s = h ^ (seed * 0x9e3779b97f4a7c15ull);
		for (size_t j = 0; j < count; j += 2) {
			/* Box-Muller: two normals per pair of uniforms */
			double u1 = uniform01(&s), u2 = uniform01(&s), r = sqrt(-2.0 * log(u1));
			t->data[j] = (float)(m->cfg.init_std * r * cos(2 * M_PI * u2));
			if (j + 1 < count)
				t->data[j + 1] = (float)(m->cfg.init_std * r * sin(2 * M_PI * u2));
		}
	}
	free(ts);
	return 0;
}

int model_write_dir(const struct model *m, const char *dir, enum st_dtype dtype, size_t shard_bytes,
                    struct err *e)
{
	const struct model_config *c = &m->cfg;
	struct buf b = { 0 };
	char path[4096];
	if (path_join(path, sizeof path, dir, "config.json", e) < 0)
		return -1;
	int r = model_config_json(c, dtype == ST_BF16 ? "bfloat16" : "float32", &b);
	if (r == 0)
		r = fsys_write_new(path, b.data, b.len, e);
	else
		err_set(e, "%s: out of memory", path);
	if (r == 0) {
		buf_reset(&b);
		r |= buf_printf(&b, "{\n  \"_from_model_config\": true,\n");
		if (c->bos_id >= 0)
			r |= buf_printf(&b, "  \"bos_token_id\": %d,\n", c->bos_id);
		if (c->n_eos == 1)
			r |= buf_printf(&b, "  \"eos_token_id\": %d,\n", c->eos_ids[0]);
		else if (c->n_eos > 1) {
			r |= buf_printf(&b, "  \"eos_token_id\": [");
			for (int i = 0; i < c->n_eos; i++)
				r |= buf_printf(&b, "%s%d", i ? ", " : "", c->eos_ids[i]);
			r |= buf_printf(&b, "],\n");
		}
		r |= buf_printf(&b, "  \"use_cache\": true\n}\n");
		if (path_join(path, sizeof path, dir, "generation_config.json", e) < 0)
			r = -1;
		else
			r = r ? err_set(e, "%s: out of memory", path) : fsys_write_new(path, b.data, b.len, e);
	}
	buf_free(&b);
	if (r < 0)
		return -1;

	struct model_params p = m->w;
	int n = model_tensors(c, &p, NULL);
	struct model_tensor *ts = malloc((size_t)n * sizeof *ts);
	struct st_entry *es = malloc((size_t)n * sizeof *es);
	if (!ts || !es) {
		free(ts);
		free(es);
		return err_set(e, "%s: out of memory", dir);
	}
	model_tensors(c, &p, ts);
	for (int i = 0; i < n; i++) {
		es[i] = (struct st_entry){ .name = ts[i].name, .ndim = ts[i].ndim, .data = ts[i].data };
		es[i].shape[0] = ts[i].shape[0];
		es[i].shape[1] = ts[i].shape[1];
	}
	r = st_write_dir(dir, es, n, dtype, shard_bytes, e);
	free(ts);
	free(es);
	return r;
}

/* ---- activations ---- */

/* inv_freq (HS/2) as transformers computes it, in fp32, with llama3 scaling. */
static void rope_inv_freq(const struct model_config *c, float *inv)
{
	int h2 = c->HS / 2;
	for (int i = 0; i < h2; i++)
		inv[i] = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)c->HS);
	if (!c->rope_llama3)
		return;
	/* llama3: long wavelengths slowed by `factor`, short ones kept, a smooth band between */
	float lo_wavelen = (float)c->rope_orig_max / c->rope_low_freq;
	float hi_wavelen = (float)c->rope_orig_max / c->rope_high_freq;
	for (int i = 0; i < h2; i++) {
		float wavelen = 2.0f * (float)M_PI / inv[i];
		if (wavelen > lo_wavelen) {
			inv[i] /= c->rope_factor;
		} else if (!(wavelen < hi_wavelen)) {
			float smooth = ((float)c->rope_orig_max / wavelen - c->rope_low_freq) /
			               (c->rope_high_freq - c->rope_low_freq);
			inv[i] = (1 - smooth) * inv[i] / c->rope_factor + smooth * inv[i];
		}
	}
}

/* cos, sin (n, HS/2): the RoPE rotation of every position below n (model.h). */
void model_rope_table(const struct model_config *c, float *cos_, float *sin_, int n)
{
	int h2 = c->HS / 2;
	float inv[h2];
	rope_inv_freq(c, inv);
	for (int t = 0; t < n; t++)
		for (int i = 0; i < h2; i++) {
			float ang = (float)t * inv[i];   /* fp32 as transformers computes it */
			cos_[(size_t)t * h2 + i] = (float)cos(ang);
			sin_[(size_t)t * h2 + i] = (float)sin(ang);
		}
}

int model_acts_alloc(struct model *m, int maxT, struct err *e)
{
	const struct model_config *c = &m->cfg;
	struct model_acts *a = &m->a;
	free(a->mem);
	memset(a, 0, sizeof *a);
	size_t T = (size_t)maxT, L = (size_t)c->L, C = (size_t)c->C, I = (size_t)c->I;
	size_t QD = (size_t)c->NH * c->HS, KD = (size_t)c->NKV * c->HS, H2 = (size_t)c->HS / 2;
	int qk = c->qk_norm;
	struct { float **p; size_t n; } f[] = {
		{ &a->resid, (L + 1) * T * C }, { &a->ln1, L * T * C }, { &a->ln1_rstd, L * T },
		{ &a->qraw, qk ? L * T * QD : 0 }, { &a->kraw, qk ? L * T * KD : 0 },
		{ &a->qn_rstd, qk ? L * T * c->NH : 0 }, { &a->kn_rstd, qk ? L * T * c->NKV : 0 },
		{ &a->q, L * T * QD }, { &a->k, L * T * KD }, { &a->v, L * T * KD },
		{ &a->att_lse, L * T * c->NH }, { &a->att, L * T * QD }, { &a->resid2, L * T * C },
		{ &a->ln2, L * T * C }, { &a->ln2_rstd, L * T },
		{ &a->gate, L * T * I }, { &a->up, L * T * I }, { &a->mlp, L * T * I },
		{ &a->lnf, T * C }, { &a->lnf_rstd, T }, { &a->lm_lse, T }, { &a->ent, T }, { &a->temp, T },
		{ &a->cos, T * H2 }, { &a->sin, T * H2 },
		{ &a->logits, (size_t)MODEL_LM_CHUNK * c->V }, { &a->scores, T }, { &a->tmp, T * C },
		{ &a->dres, T * C }, { &a->dln, T * C }, { &a->dq, T * QD }, { &a->dk, T * KD }, { &a->dv, T * KD },
		{ &a->datt, T * QD }, { &a->dqk, T * QD }, { &a->dgate, T * I }, { &a->dup, T * I }, { &a->dmlp, T * I },
	};
	size_t nf = sizeof f / sizeof f[0], total = 0;
	for (size_t i = 0; i < nf; i++)
		total += f[i].n;
	size_t bytes = total * sizeof(float) + 3 * T * sizeof(int);
	char *mem = calloc(1, bytes);
	if (!mem)
		return err_set(e, "out of memory for activations of %d tokens (%.1f MiB)", maxT, bytes / 1048576.0);
	float *p = (float *)mem;
	for (size_t i = 0; i < nf; i++) {
		*f[i].p = f[i].n ? p : NULL;
		p += f[i].n;
	}
	a->ids = (int *)p;
	a->pos = a->ids + T;
	a->start = a->pos + T;
	a->mem = mem;
	a->bytes = bytes;
	a->maxT = maxT;

	model_rope_table(c, a->cos, a->sin, maxT);
	return 0;
}

/* ---- the model ---- */

/* positions restart in every sequence; start[t] bounds attention. The
 * lengths are int (lens_i) or, from a micro-batch, uint32_t (lens_u). */
static int positions(struct model_acts *a, int T, const int *lens_i, const uint32_t *lens_u, int nseq,
		     struct err *e)
{
	int t = 0;
	for (int s = 0; s < nseq; s++) {
		long long len = lens_i ? lens_i[s] : (long long)lens_u[s];
		if (len <= 0 || len > T - t)
			return err_set(e, "seq_lens[%d] = %lld does not fit a pack of %d tokens", s, len, T);
		for (int j = 0; j < (int)len; j++, t++) {
			a->pos[t] = j;
			a->start[t] = t - j;
		}
	}
	if (t != T)
		return err_set(e, "seq_lens sum to %d, but the pack has %d tokens", t, T);
	return 0;
}

static int forward(struct model *m, const int32_t *ids, int T, const float *temps, float *logprob,
		   float *entropy, struct err *e);

int model_forward(struct model *m, const int *ids, int T, const int *seq_lens, int nseq,
                  const float *temps, float *logprob, float *entropy, struct err *e)
{
	m->a.done = 0;
	if (!m->a.mem || T > m->a.maxT)
		return err_set(e, "pack of %d tokens, but activations are sized for %d", T, m->a.mem ? m->a.maxT : 0);
	if (positions(&m->a, T, seq_lens, NULL, nseq, e) < 0)
		return -1;
	return forward(m, ids, T, temps, logprob, entropy, e);
}

int model_forward_mb(struct model *m, const struct microbatch *mb, float *logprob, float *entropy, struct err *e)
{
	m->a.done = 0;
	if (mb->n_tokens > INT_MAX || mb->n_seq_lens > INT_MAX)
		return err_set(e, "a micro-batch of %u tokens is too large", mb->n_tokens);
	int T = (int)mb->n_tokens;
	if (!m->a.mem || T > m->a.maxT)
		return err_set(e, "pack of %d tokens, but activations are sized for %d", T, m->a.mem ? m->a.maxT : 0);
	if (positions(&m->a, T, NULL, mb->seq_lens, (int)mb->n_seq_lens, e) < 0)
		return -1;
	return forward(m, mb->input_ids, T, mb->temperatures, logprob, entropy, e);
}

/* The forward proper, once positions() has laid out the sequences. */
static int forward(struct model *m, const int32_t *ids, int T, const float *temps, float *logprob,
		   float *entropy, struct err *e)
{
	const struct model_config *c = &m->cfg;
	struct model_acts *a = &m->a;
	const struct model_params *w = &m->w;
	int C = c->C, I = c->I, NH = c->NH, NKV = c->NKV, HS = c->HS, V = c->V;
	int QD = NH * HS, KD = NKV * HS;
	int t;
	for (t = 0; t < T; t++) {
		if (ids[t] < 0 || ids[t] >= V)
			return err_set(e, "token %d: id %d outside the vocabulary of %d", t, ids[t], V);
		/* the first token of a sequence is predicted by nothing: its temperature is unused */
		float tau = temps && a->start[t] != t ? temps[t] : 1.0f;
		if (!(tau > 0) || !isfinite(tau))
			return err_set(e, "token %d: temperature %g must be positive", t, tau);
		a->ids[t] = ids[t];
		a->temp[t] = tau;
	}
	a->T = T;

	/* embedding */
	for (t = 0; t < T; t++)
		memcpy(a->resid + (size_t)t * C, w->embed + (size_t)ids[t] * C, (size_t)C * sizeof(float));

	for (int l = 0; l < c->L; l++) {
		size_t TC = (size_t)T * C;
		const float *x = a->resid + l * TC;
		float *ln1 = a->ln1 + l * TC, *ln1r = a->ln1_rstd + (size_t)l * T;
		float *q = a->q + (size_t)l * T * QD, *k = a->k + (size_t)l * T * KD, *v = a->v + (size_t)l * T * KD;
		float *att = a->att + (size_t)l * T * QD, *lse = a->att_lse + (size_t)l * T * NH;
		float *r2 = a->resid2 + l * TC, *ln2 = a->ln2 + l * TC, *ln2r = a->ln2_rstd + (size_t)l * T;
		float *gate = a->gate + (size_t)l * T * I, *up = a->up + (size_t)l * T * I;
		float *mlp = a->mlp + (size_t)l * T * I;

		/* attention block: x -> RMSNorm -> q, k, v (-> q/k norm) -> RoPE -> attention -> o_proj */
		rmsnorm_forward(ln1, ln1r, x, w->ln1 + (size_t)l * C, T, C, c->eps);
		float *qdst = c->qk_norm ? a->qraw + (size_t)l * T * QD : q;
		float *kdst = c->qk_norm ? a->kraw + (size_t)l * T * KD : k;
		matmul_forward(qdst, ln1, w->wq + (size_t)l * QD * C, w->bq ? w->bq + (size_t)l * QD : NULL, T, C, QD);
		matmul_forward(kdst, ln1, w->wk + (size_t)l * KD * C, w->bk ? w->bk + (size_t)l * KD : NULL, T, C, KD);
		matmul_forward(v, ln1, w->wv + (size_t)l * KD * C, w->bv ? w->bv + (size_t)l * KD : NULL, T, C, KD);
		if (c->qk_norm) {
			rmsnorm_forward(q, a->qn_rstd + (size_t)l * T * NH, qdst, w->qnorm + (size_t)l * HS, T * NH, HS, c->eps);
			rmsnorm_forward(k, a->kn_rstd + (size_t)l * T * NKV, kdst, w->knorm + (size_t)l * HS, T * NKV, HS, c->eps);
		}
		rope_forward(q, a->pos, a->cos, a->sin, T, NH, HS);
		rope_forward(k, a->pos, a->cos, a->sin, T, NKV, HS);
		attention_forward(att, lse, q, k, v, a->start, a->scores, T, NH, NKV, HS);
		matmul_forward(a->tmp, att, w->wo + (size_t)l * C * QD, w->bo ? w->bo + (size_t)l * C : NULL, T, QD, C);
		residual_add(r2, x, a->tmp, TC);

		/* MLP block: RMSNorm -> down(silu(gate) * up) */
		rmsnorm_forward(ln2, ln2r, r2, w->ln2 + (size_t)l * C, T, C, c->eps);
		matmul_forward(gate, ln2, w->wgate + (size_t)l * I * C, NULL, T, C, I);
		matmul_forward(up, ln2, w->wup + (size_t)l * I * C, NULL, T, C, I);
		swiglu_forward(mlp, gate, up, (size_t)T * I);
		matmul_forward(a->tmp, mlp, w->wdown + (size_t)l * C * I, NULL, T, I, C);
		residual_add(a->resid + (l + 1) * TC, r2, a->tmp, TC);
	}

	rmsnorm_forward(a->lnf, a->lnf_rstd, a->resid + (size_t)c->L * T * C, w->norm, T, C, c->eps);
	memset(logprob, 0, (size_t)T * sizeof *logprob);
	memset(a->ent, 0, (size_t)T * sizeof *a->ent);
	memset(a->lm_lse, 0, (size_t)T * sizeof *a->lm_lse);
	lm_head_forward(a, w->lm_head, C, V, logprob);
	if (entropy)
		memcpy(entropy, a->ent, (size_t)T * sizeof *entropy);
	a->done = 1;
	return 0;
}

int model_backward(struct model *m, const float *dlogprob, const float *dentropy, struct err *e)
{
	const struct model_config *c = &m->cfg;
	struct model_acts *a = &m->a;
	const struct model_params *w = &m->w;
	struct model_params *g = &m->g;
	int C = c->C, I = c->I, NH = c->NH, NKV = c->NKV, HS = c->HS, V = c->V, T = a->T;
	int QD = NH * HS, KD = NKV * HS;
	size_t TC = (size_t)T * C;
	if (!a->done)
		return err_set(e, "backward without a forward");
	if (!g->mem)
		return err_set(e, "backward without gradients allocated");

	/* LM head and final norm: dres = dL/d(residual stream out of the last layer) */
	memset(a->dln, 0, TC * sizeof(float));
	lm_head_backward(a, w->lm_head, g->lm_head, a->dln, C, V, dlogprob, dentropy);
	memset(a->dres, 0, TC * sizeof(float));
	rmsnorm_backward(a->dres, g->norm, a->dln, a->resid + (size_t)c->L * TC, w->norm, a->lnf_rstd, T, C);

	for (int l = c->L - 1; l >= 0; l--) {
		const float *x = a->resid + l * TC;
		const float *ln1 = a->ln1 + l * TC, *ln1r = a->ln1_rstd + (size_t)l * T;
		const float *q = a->q + (size_t)l * T * QD, *k = a->k + (size_t)l * T * KD, *v = a->v + (size_t)l * T * KD;
		const float *att = a->att + (size_t)l * T * QD, *lse = a->att_lse + (size_t)l * T * NH;
		const float *r2 = a->resid2 + l * TC, *ln2 = a->ln2 + l * TC, *ln2r = a->ln2_rstd + (size_t)l * T;
		const float *gate = a->gate + (size_t)l * T * I, *up = a->up + (size_t)l * T * I;
		const float *mlp = a->mlp + (size_t)l * T * I;

		/* MLP block; dres holds dL/d(resid[l+1]) and becomes dL/d(resid2) */
		memset(a->dmlp, 0, (size_t)T * I * sizeof(float));
		matmul_backward(a->dmlp, g->wdown + (size_t)l * C * I, NULL, a->dres, mlp, w->wdown + (size_t)l * C * I, T, I, C);
		swiglu_backward(a->dgate, a->dup, a->dmlp, gate, up, (size_t)T * I);
		memset(a->dln, 0, TC * sizeof(float));
		matmul_backward(a->dln, g->wgate + (size_t)l * I * C, NULL, a->dgate, ln2, w->wgate + (size_t)l * I * C, T, C, I);
		matmul_backward(a->dln, g->wup + (size_t)l * I * C, NULL, a->dup, ln2, w->wup + (size_t)l * I * C, T, C, I);
		rmsnorm_backward(a->dres, g->ln2 + (size_t)l * C, a->dln, r2, w->ln2 + (size_t)l * C, ln2r, T, C);

		/* attention block; dres becomes dL/d(resid[l]) */
		memset(a->datt, 0, (size_t)T * QD * sizeof(float));
		matmul_backward(a->datt, g->wo + (size_t)l * C * QD, g->bo ? g->bo + (size_t)l * C : NULL, a->dres, att,
		                w->wo + (size_t)l * C * QD, T, QD, C);
		memset(a->dq, 0, (size_t)T * QD * sizeof(float));
		memset(a->dk, 0, (size_t)T * KD * sizeof(float));
		memset(a->dv, 0, (size_t)T * KD * sizeof(float));
		attention_backward(a->dq, a->dk, a->dv, a->datt, q, k, v, att, lse, a->start, T, NH, NKV, HS);
		rope_backward(a->dq, a->pos, a->cos, a->sin, T, NH, HS);
		rope_backward(a->dk, a->pos, a->cos, a->sin, T, NKV, HS);
		memset(a->dln, 0, TC * sizeof(float));
		const float *dq = a->dq, *dk = a->dk;
		if (c->qk_norm) {
			/* through q_norm into dqk, then q's projection; then the same for k */
			memset(a->dqk, 0, (size_t)T * QD * sizeof(float));
			rmsnorm_backward(a->dqk, g->qnorm + (size_t)l * HS, a->dq, a->qraw + (size_t)l * T * QD,
			                 w->qnorm + (size_t)l * HS, a->qn_rstd + (size_t)l * T * NH, T * NH, HS);
			dq = a->dqk;
		}
		matmul_backward(a->dln, g->wq + (size_t)l * QD * C, g->bq ? g->bq + (size_t)l * QD : NULL, dq, ln1,
		                w->wq + (size_t)l * QD * C, T, C, QD);
		if (c->qk_norm) {
			memset(a->dqk, 0, (size_t)T * KD * sizeof(float));
			rmsnorm_backward(a->dqk, g->knorm + (size_t)l * HS, a->dk, a->kraw + (size_t)l * T * KD,
			                 w->knorm + (size_t)l * HS, a->kn_rstd + (size_t)l * T * NKV, T * NKV, HS);
			dk = a->dqk;
		}
		matmul_backward(a->dln, g->wk + (size_t)l * KD * C, g->bk ? g->bk + (size_t)l * KD : NULL, dk, ln1,
		                w->wk + (size_t)l * KD * C, T, C, KD);
		matmul_backward(a->dln, g->wv + (size_t)l * KD * C, g->bv ? g->bv + (size_t)l * KD : NULL, a->dv, ln1,
		                w->wv + (size_t)l * KD * C, T, C, KD);
		rmsnorm_backward(a->dres, g->ln1 + (size_t)l * C, a->dln, x, w->ln1 + (size_t)l * C, ln1r, T, C);
	}

	/* embedding: scatter-add (a tied model's head gradient is already in g->embed) */
	for (int t = 0; t < T; t++) {
		float *d = g->embed + (size_t)a->ids[t] * C;
		const float *s = a->dres + (size_t)t * C;
		for (int i = 0; i < C; i++)
			d[i] += s[i];
	}
	return 0;
}

/* ---- inference with a key/value cache ---- */

int model_kv_alloc(const struct model *m, struct model_kv *kv, int B, int maxlen, int maxT, struct err *e)
{
	const struct model_config *c = &m->cfg;
	memset(kv, 0, sizeof *kv);
	if (B < 1 || maxlen < 1 || maxT < 1)
		return err_set(e, "cache needs at least one slot, position and token");
	size_t L = (size_t)c->L, C = (size_t)c->C, I = (size_t)c->I, T = (size_t)maxT;
	size_t QD = (size_t)c->NH * c->HS, KD = (size_t)c->NKV * c->HS, H2 = (size_t)c->HS / 2;
	size_t cache = L * (size_t)B * (size_t)maxlen * KD;
	struct { float **p; size_t n; } f[] = {
		{ &kv->k, cache }, { &kv->v, cache }, { &kv->cos, (size_t)maxlen * H2 }, { &kv->sin, (size_t)maxlen * H2 },
		{ &kv->x, T * C }, { &kv->ln, T * C }, { &kv->q, T * QD }, { &kv->kn, T * KD }, { &kv->vn, T * KD },
		{ &kv->att, T * QD }, { &kv->tmp, T * C }, { &kv->gate, T * I }, { &kv->up, T * I },
		{ &kv->rstd, T * (size_t)c->NH }, { &kv->scores, (size_t)maxlen },
	};
	size_t nf = sizeof f / sizeof f[0], total = 0;
	for (size_t i = 0; i < nf; i++)
		total += f[i].n;
	size_t bytes = total * sizeof(float) + ((size_t)B + T) * sizeof(int);
	char *mem = calloc(1, bytes);
	if (!mem)
		return err_set(e, "out of memory for a cache of %d x %d tokens (%.1f MiB)", B, maxlen, bytes / 1048576.0);
	float *p = (float *)mem;
	for (size_t i = 0; i < nf; i++) {
		*f[i].p = p;
		p += f[i].n;
	}
	kv->len = (int *)p;
	kv->pos = kv->len + B;
	kv->mem = mem;
	kv->bytes = bytes;
	kv->B = B, kv->maxlen = maxlen, kv->maxT = maxT;
	model_rope_table(c, kv->cos, kv->sin, maxlen);
	return 0;
}

void model_kv_free(struct model_kv *kv)
{
	free(kv->mem);
	memset(kv, 0, sizeof *kv);
}

/*
 * Attention of T new tokens against their slots' caches: token t (slot
 * slots[t], position pos[t]) attends to positions 0..pos[t] of its slot.
 * q (T, NH, HS); kc, vc (B, maxlen, NKV, HS) of one layer. Writes out (T, NH, HS).
 */
static void attention_cached(float *out, const float *q, const float *kc, const float *vc, const int *slots,
                             const int *pos, float *scores, int T, int maxlen, int NH, int NKV, int HS)
{
	float scale = 1.0f / sqrtf((float)HS);
	int group = NH / NKV;
	size_t KD = (size_t)NKV * HS;
	for (int t = 0; t < T; t++) {
		size_t slot = (size_t)slots[t] * maxlen * KD;
		for (int h = 0; h < NH; h++) {
			size_t kv0 = slot + (size_t)(h / group) * HS, at = ((size_t)t * NH + h) * HS;
			attend(out + at, q + at, kc + kv0, vc + kv0, KD, pos[t] + 1, HS, scale, scores);
		}
	}
}

int model_step(const struct model *m, struct model_kv *kv, const int *ids, const int *slots, int T,
               const unsigned char *want, float *logits, struct err *e)
{
	const struct model_config *c = &m->cfg;
	const struct model_params *w = &m->w;
	int C = c->C, I = c->I, NH = c->NH, NKV = c->NKV, HS = c->HS, V = c->V;
	int QD = NH * HS, KD = NKV * HS;
	if (T < 1 || T > kv->maxT)
		return err_set(e, "step of %d tokens, but the cache takes at most %d at a time", T, kv->maxT);
	for (int t = 0; t < T; t++) {
		if (slots[t] < 0 || slots[t] >= kv->B)
			return err_set(e, "token %d: slot %d outside the cache's %d", t, slots[t], kv->B);
		if (ids[t] < 0 || ids[t] >= V)
			return err_set(e, "token %d: id %d outside the vocabulary of %d", t, ids[t], V);
	}
	/* positions: each slot continues where it stopped */
	for (int t = 0; t < T; t++) {
		kv->pos[t] = kv->len[slots[t]]++;
		if (kv->pos[t] >= kv->maxlen) {
			for (int u = 0; u <= t; u++)
				kv->len[slots[u]]--;
			return err_set(e, "slot %d is full (%d tokens)", slots[t], kv->maxlen);
		}
	}
	for (int t = 0; t < T; t++)
		memcpy(kv->x + (size_t)t * C, w->embed + (size_t)ids[t] * C, (size_t)C * sizeof(float));

	size_t layer_cache = (size_t)kv->B * kv->maxlen * KD;
	for (int l = 0; l < c->L; l++) {
		float *kc = kv->k + l * layer_cache, *vc = kv->v + l * layer_cache;
		rmsnorm_forward(kv->ln, kv->rstd, kv->x, w->ln1 + (size_t)l * C, T, C, c->eps);
		matmul_forward(kv->q, kv->ln, w->wq + (size_t)l * QD * C, w->bq ? w->bq + (size_t)l * QD : NULL, T, C, QD);
		matmul_forward(kv->kn, kv->ln, w->wk + (size_t)l * KD * C, w->bk ? w->bk + (size_t)l * KD : NULL, T, C, KD);
		matmul_forward(kv->vn, kv->ln, w->wv + (size_t)l * KD * C, w->bv ? w->bv + (size_t)l * KD : NULL, T, C, KD);
		if (c->qk_norm) {
			/* in place: each row is read whole before it is written */
			rmsnorm_forward(kv->q, kv->rstd, kv->q, w->qnorm + (size_t)l * HS, T * NH, HS, c->eps);
			rmsnorm_forward(kv->kn, kv->rstd, kv->kn, w->knorm + (size_t)l * HS, T * NKV, HS, c->eps);
		}
		rope_forward(kv->q, kv->pos, kv->cos, kv->sin, T, NH, HS);
		rope_forward(kv->kn, kv->pos, kv->cos, kv->sin, T, NKV, HS);
		for (int t = 0; t < T; t++) {
			size_t at = ((size_t)slots[t] * kv->maxlen + kv->pos[t]) * KD;
			memcpy(kc + at, kv->kn + (size_t)t * KD, (size_t)KD * sizeof(float));
			memcpy(vc + at, kv->vn + (size_t)t * KD, (size_t)KD * sizeof(float));
		}
		attention_cached(kv->att, kv->q, kc, vc, slots, kv->pos, kv->scores, T, kv->maxlen, NH, NKV, HS);
		matmul_forward(kv->tmp, kv->att, w->wo + (size_t)l * C * QD, w->bo ? w->bo + (size_t)l * C : NULL, T, QD, C);
		residual_add(kv->x, kv->x, kv->tmp, (size_t)T * C);

		rmsnorm_forward(kv->ln, kv->rstd, kv->x, w->ln2 + (size_t)l * C, T, C, c->eps);
		matmul_forward(kv->gate, kv->ln, w->wgate + (size_t)l * I * C, NULL, T, C, I);
		matmul_forward(kv->up, kv->ln, w->wup + (size_t)l * I * C, NULL, T, C, I);
		swiglu_forward(kv->gate, kv->gate, kv->up, (size_t)T * I);
		matmul_forward(kv->tmp, kv->gate, w->wdown + (size_t)l * C * I, NULL, T, I, C);
		residual_add(kv->x, kv->x, kv->tmp, (size_t)T * C);
	}

	/* final norm of the wanted rows only, gathered to the front, then the LM head */
	int n = 0;
	for (int t = 0; t < T; t++)
		if (!want || want[t]) {
			rmsnorm_forward(kv->ln + (size_t)n * C, kv->rstd, kv->x + (size_t)t * C, w->norm, 1, C, c->eps);
			n++;
		}
	if (n)
		gemm(0, 1, n, V, C, kv->ln, C, w->lm_head, C, 0.0f, logits, V);
	return 0;
}

void model_set_threads(int n)
{
	gemm_set_threads(n);
}

int model_threads(void)
{
	return gemm_threads();
}
