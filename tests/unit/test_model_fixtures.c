/*
 * test_model_fixtures: the reference transformer against Hugging Face
 * transformers on the tiny models of ../shared/data/fixtures (see its
 * make_fixtures.py): logprobs and entropies at temperatures 1.0 and 0.8, and
 * the gradient of sum_t c_t * logprob_t for every weight, with all five
 * sequences packed into one forward pass.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "safetensors.h"
#include "../tap.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

/* The five sequences packed: ids (T), seq_lens, and where each response starts. */
struct pack {
	int T, nseq;
	int ids[512], seq_lens[8], resp_at[8], resp_len[8];
};

static void build_pack(const cJSON *seqs, struct pack *p)
{
	memset(p, 0, sizeof *p);
	const cJSON *s;
	cJSON_ArrayForEach(s, seqs) {
		const cJSON *pr = cJSON_GetObjectItem(s, "prompt_tokens"), *re = cJSON_GetObjectItem(s, "response_tokens"), *x;
		int start = p->T;
		cJSON_ArrayForEach(x, pr) p->ids[p->T++] = x->valueint;
		p->resp_at[p->nseq] = p->T;
		cJSON_ArrayForEach(x, re) p->ids[p->T++] = x->valueint;
		p->resp_len[p->nseq] = p->T - p->resp_at[p->nseq];
		p->seq_lens[p->nseq++] = p->T - start;
	}
}

/* Largest |got - want| / max(|want|, 1e-3) over the response tokens. */
static double worst_rel(const struct pack *p, const float *got, const cJSON *want)
{
	double worst = 0;
	for (int s = 0; s < p->nseq; s++) {
		const cJSON *w = cJSON_GetArrayItem(want, s);
		for (int j = 0; j < p->resp_len[s]; j++) {
			double wv = cJSON_GetArrayItem(w, j)->valuedouble, g = got[p->resp_at[s] + j];
			double d = fabs(g - wv) / fmax(fabs(wv), 1e-3);
			if (!(d <= worst))
				worst = d;
		}
	}
	return worst;
}

static void check_family(const char *fx, const char *fam, const cJSON *all, const struct pack *p)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/models/%s", fx, fam);
	struct model m;
	struct err e = { "" };
	if (!ok(model_load(&m, dir, &e) == 0, "%s: load", fam)) {
		diag("%s", e.msg);
		return;
	}
	const cJSON *res = cJSON_GetObjectItem(cJSON_GetObjectItem(all, "models"), fam);
	ok(model_acts_alloc(&m, p->T, &e) == 0, "%s: activations for %d tokens", fam, p->T);
	float lp[512], ent[512], temps[512];
	const char *tnames[] = { "1.0", "0.8" };
	const float tvals[] = { 1.0f, 0.8f };
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < p->T; i++)
			temps[i] = tvals[k];
		int r = model_forward(&m, p->ids, p->T, p->seq_lens, p->nseq, temps, lp, ent, &e);
		ok(r == 0, "%s T=%s: packed forward of %d sequences, %d tokens", fam, tnames[k], p->nseq, p->T);
		const cJSON *want = cJSON_GetObjectItem(res, tnames[k]);
		double wl = worst_rel(p, lp, cJSON_GetObjectItem(want, "logprobs"));
		double we = worst_rel(p, ent, cJSON_GetObjectItem(want, "entropy"));
		ok(wl <= 1e-4, "%s T=%s: logprobs match transformers within 1e-4 relative (worst %.2g)", fam,
		   tnames[k], wl);
		ok(we <= 1e-4, "%s T=%s: entropies match transformers within 1e-4 relative (worst %.2g)", fam,
		   tnames[k], we);
	}

	/* gradient of sum c_t * logprob_t at temperature 1 */
	const cJSON *grad = cJSON_GetObjectItem(res, "grad");
	const cJSON *coefs = cJSON_GetObjectItem(grad, "coefficients");
	float dlp[512] = { 0 };
	for (int s = 0; s < p->nseq; s++)
		for (int j = 0; j < p->resp_len[s]; j++)
			dlp[p->resp_at[s] + j] = (float)cJSON_GetArrayItem(cJSON_GetArrayItem(coefs, s), j)->valuedouble;
	int r = model_forward(&m, p->ids, p->T, p->seq_lens, p->nseq, NULL, lp, NULL, &e);
	double loss = 0;
	for (int i = 0; i < p->T; i++)
		loss += (double)dlp[i] * lp[i];
	double wloss = cJSON_GetObjectItem(grad, "loss")->valuedouble;
	if (!ok(r == 0 && fabs(loss - wloss) <= 1e-4 * fabs(wloss), "%s: loss sum c_t logprob_t matches", fam))
		diag("  got %.9g want %.9g", loss, wloss);
	r = model_grads_alloc(&m, &e);
	r = r ? r : model_backward(&m, dlp, NULL, &e);
	if (!ok(r == 0, "%s: backward", fam))
		diag("%s", e.msg);

	snprintf(path, sizeof path, "%s/grad_of_weighted_logprobs.safetensors", dir);
	struct st_model st;
	if (!ok(st_open(&st, path, &e) == 0, "%s: open reference gradients", fam)) {
		diag("%s", e.msg);
		model_free(&m);
		return;
	}
	int n = model_tensors(&m.cfg, &m.g, NULL);
	struct model_tensor *ts = calloc((size_t)n, sizeof *ts);
	model_tensors(&m.cfg, &m.g, ts);
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
	ok(bad == 0, "%s: all %d weight gradients within 1e-4 relative norm (worst %.2g, %s)", fam, n, worst,
	   worst_name);
	ok(n == st.ntensors, "%s: the reference has the same %d tensors (it has %d)", fam, n, st.ntensors);
	free(ts);
	st_close(&st);

	/* the sequences one at a time give what the pack gave */
	r = model_forward(&m, p->ids, p->T, p->seq_lens, p->nseq, NULL, lp, ent, &e);
	double worst_pack = 0;
	for (int s = 0, off = 0; s < p->nseq; off += p->seq_lens[s], s++) {
		float lp1[512], ent1[512];
		r |= model_forward(&m, p->ids + off, p->seq_lens[s], &p->seq_lens[s], 1, NULL, lp1, ent1, &e);
		for (int j = 0; j < p->seq_lens[s]; j++) {
			worst_pack = fmax(worst_pack, fabs(lp1[j] - lp[off + j]));
			worst_pack = fmax(worst_pack, fabs(ent1[j] - ent[off + j]));
		}
	}
	if (!ok(r == 0 && worst_pack <= 1e-5, "%s: each sequence alone gives the logprobs it gets in the pack", fam))
		diag("  largest difference %g", worst_pack);
	model_free(&m);
}

int main(void)
{
	const char *shared = getenv("GRPO_SHARED");
	char fx[4096];
	snprintf(fx, sizeof fx, "%s/data/fixtures", shared ? shared : "../shared");
	char path[4200];
	snprintf(path, sizeof path, "%s/logprobs.json", fx);
	char *text = slurp(path);
	if (!text)
		skip_all("no fixtures (set GRPO_SHARED to the shared directory holding data/fixtures)");
	cJSON *all = cJSON_Parse(text);
	free(text);
	struct pack p;
	build_pack(cJSON_GetObjectItem(all, "sequences"), &p);
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++)
		check_family(fx, fams[i], all, &p);
	cJSON_Delete(all);
	return tap_done();
}
