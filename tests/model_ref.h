/*
 * model_ref.h: comparing the reference transformer with values that Hugging
 * Face's own code made (test_model_fixtures, test_model_hf). Header-only, as
 * tap.h, and included after it.
 *
 *   ref_slurp(path)                      a whole file, NUL-terminated, or NULL
 *   ref_pack(sequences, &pack)           JSON sequences packed back to back
 *   ref_worst_rel(&pack, got, want)      worst relative error on response tokens
 *   ref_check_grads(&m, path, label)     every weight's gradient against a
 *                                        safetensors file of reference gradients
 */
#ifndef MODEL_REF_H
#define MODEL_REF_H

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/safetensors.h"

enum { REF_MAX_TOKENS = 512, REF_MAX_SEQS = 8 };

/* Sequences packed: ids (T), seq_lens, where each response starts and its length,
 * and each token's temperature (a sequence's "temperature", else 1). */
struct ref_pack {
	int T, nseq;
	int ids[REF_MAX_TOKENS], seq_lens[REF_MAX_SEQS], resp_at[REF_MAX_SEQS], resp_len[REF_MAX_SEQS];
	float temps[REF_MAX_TOKENS];
};

static char *ref_slurp(const char *path) __attribute__((unused));
static char *ref_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

static void ref_pack(const cJSON *seqs, struct ref_pack *p) __attribute__((unused));
static void ref_pack(const cJSON *seqs, struct ref_pack *p)
{
	memset(p, 0, sizeof *p);
	const cJSON *s;
	cJSON_ArrayForEach(s, seqs) {
		if (p->nseq == REF_MAX_SEQS)
			break;
		const cJSON *pr = cJSON_GetObjectItem(s, "prompt_tokens"), *re = cJSON_GetObjectItem(s, "response_tokens");
		const cJSON *tj = cJSON_GetObjectItem(s, "temperature"), *x;
		float temp = cJSON_IsNumber(tj) ? (float)tj->valuedouble : 1.0f;
		int start = p->T;
		cJSON_ArrayForEach(x, pr) if (p->T < REF_MAX_TOKENS) p->ids[p->T++] = x->valueint;
		p->resp_at[p->nseq] = p->T;
		cJSON_ArrayForEach(x, re) if (p->T < REF_MAX_TOKENS) p->ids[p->T++] = x->valueint;
		p->resp_len[p->nseq] = p->T - p->resp_at[p->nseq];
		p->seq_lens[p->nseq++] = p->T - start;
		for (int i = start; i < p->T; i++)
			p->temps[i] = temp;
	}
}

/* Largest |got - want| / max(|want|, 1e-3) over the response tokens; want is
 * one JSON array per sequence. NaN, which no tolerance accepts, when there is
 * nothing to compare (no sequence, no response token) or want's arrays do not
 * match the pack's sequences one for one and token for token: an empty or
 * truncated fixture must fail the parity test, not pass it. */
static double ref_worst_rel(const struct ref_pack *p, const float *got, const cJSON *want) __attribute__((unused));
static double ref_worst_rel(const struct ref_pack *p, const float *got, const cJSON *want)
{
	double worst = 0;
	long compared = 0;
	if (!cJSON_IsArray(want) || cJSON_GetArraySize(want) != p->nseq)
		return NAN;
	for (int s = 0; s < p->nseq; s++) {
		const cJSON *w = cJSON_GetArrayItem(want, s);
		if (!cJSON_IsArray(w) || cJSON_GetArraySize(w) != p->resp_len[s])
			return NAN;
		for (int j = 0; j < p->resp_len[s]; j++) {
			const cJSON *v = cJSON_GetArrayItem(w, j);
			double wv = cJSON_IsNumber(v) ? v->valuedouble : NAN, g = got[p->resp_at[s] + j];
			double d = fabs(g - wv) / fmax(fabs(wv), 1e-3);
			if (!(d <= worst))
				worst = d;
			compared++;
		}
	}
	return compared > 0 ? worst : NAN;
}

/* Each sequence's per-token JSON values (one array per sequence) spread over
 * the pack's response positions of out (T), zero elsewhere. */
static void ref_spread(const struct ref_pack *p, const cJSON *per_seq, float *out) __attribute__((unused));
static void ref_spread(const struct ref_pack *p, const cJSON *per_seq, float *out)
{
	memset(out, 0, (size_t)p->T * sizeof *out);
	for (int s = 0; s < p->nseq; s++)
		for (int j = 0; j < p->resp_len[s]; j++)
			out[p->resp_at[s] + j] = (float)cJSON_GetArrayItem(cJSON_GetArrayItem(per_seq, s), j)->valuedouble;
}

/* m's gradients (m->g) against the tensors of the safetensors file at path:
 * one test point that every tensor is within 1e-4 relative norm, one that the
 * file has exactly the model's tensors. */
static void ref_check_grads(const struct model *m, const char *path, const char *label) __attribute__((unused));
static void ref_check_grads(const struct model *m, const char *path, const char *label)
{
	struct err e = { 0 };
	struct st_model st;
	if (!ok(st_open(&st, path, &e) == 0, "%s: open reference gradients", label)) {
		diag("%s", e.msg);
		return;
	}
	int n = model_tensors(&m->cfg, &m->g, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&m->cfg, &m->g, ts);
	int bad = 0;
	double worst = 0;
	const char *worst_name = "";
	for (int i = 0; i < n; i++) {
		size_t cnt = (size_t)ts[i].shape[0] * (size_t)(ts[i].ndim == 2 ? ts[i].shape[1] : 1);
		float *ref = malloc(cnt * sizeof *ref);
		if (st_read_f32(&st, ts[i].name, ts[i].shape, ts[i].ndim, ref, &e) < 0) {
			diag("%s", e.msg);
			bad++;
			free(ref);
			continue;
		}
		double dd = 0, rr = 0;
		for (size_t j = 0; j < cnt; j++) {
			double d = (double)ts[i].data[j] - ref[j];
			dd += d * d;
			rr += (double)ref[j] * ref[j];
		}
		double rel = sqrt(dd) / fmax(sqrt(rr), 1e-30);
		if (!(rel <= 1e-4)) {
			diag("  %s: relative norm of difference %g", ts[i].name, rel);
			bad++;
		}
		if (rel > worst) {
			worst = rel;
			worst_name = ts[i].name;
		}
		free(ref);
	}
	ok(bad == 0, "%s: all %d weight gradients within 1e-4 relative norm (worst %.2g, %s)", label, n, worst,
	   worst_name);
	ok(n == st.ntensors, "%s: the reference has the same %d tensors (it has %d)", label, n, st.ntensors);
	free(ts);
	st_close(&st);
}

#endif
