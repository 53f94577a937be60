/*
 * test_model_fixtures: the reference transformer against Hugging Face
 * transformers on the tiny models of ../shared/data/fixtures (see its
 * make_fixtures.py): logprobs and entropies at temperatures 1.0 and 0.8, and
 * the gradient of sum_t c_t * logprob_t for every weight, with all five
 * sequences packed into one forward pass.
 */
#include "../tap.h"
#include "../model_ref.h"

static void check_family(const char *fx, const char *fam, const cJSON *all, const struct ref_pack *p)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/models/%s", fx, fam);
	struct model m;
	struct err e = { 0 };
	if (!ok(model_load(&m, dir, &e) == 0, "%s: load", fam)) {
		diag("%s", e.msg);
		return;
	}
	const cJSON *res = cJSON_GetObjectItem(cJSON_GetObjectItem(all, "models"), fam);
	ok(model_acts_alloc(&m, p->T, &e) == 0, "%s: activations for %d tokens", fam, p->T);
	float lp[REF_MAX_TOKENS], ent[REF_MAX_TOKENS], temps[REF_MAX_TOKENS];
	const char *tnames[] = { "1.0", "0.8" };
	const float tvals[] = { 1.0f, 0.8f };
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < p->T; i++)
			temps[i] = tvals[k];
		int r = model_forward(&m, p->ids, p->T, p->seq_lens, p->nseq, temps, lp, ent, &e);
		ok(r == 0, "%s T=%s: packed forward of %d sequences, %d tokens", fam, tnames[k], p->nseq, p->T);
		const cJSON *want = cJSON_GetObjectItem(res, tnames[k]);
		double wl = ref_worst_rel(p, lp, cJSON_GetObjectItem(want, "logprobs"));
		double we = ref_worst_rel(p, ent, cJSON_GetObjectItem(want, "entropy"));
		ok(wl <= 1e-4, "%s T=%s: logprobs match transformers within 1e-4 relative (worst %.2g)", fam,
		   tnames[k], wl);
		ok(we <= 1e-4, "%s T=%s: entropies match transformers within 1e-4 relative (worst %.2g)", fam,
		   tnames[k], we);
	}

	/* gradient of sum c_t * logprob_t at temperature 1 */
	const cJSON *grad = cJSON_GetObjectItem(res, "grad");
	const cJSON *coefs = cJSON_GetObjectItem(grad, "coefficients");
	float dlp[REF_MAX_TOKENS];
	ref_spread(p, coefs, dlp);
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
	ref_check_grads(&m, path, fam);

	/* the sequences one at a time give what the pack gave */
	r = model_forward(&m, p->ids, p->T, p->seq_lens, p->nseq, NULL, lp, ent, &e);
	double worst_pack = 0;
	for (int s = 0, off = 0; s < p->nseq; off += p->seq_lens[s], s++) {
		float lp1[REF_MAX_TOKENS], ent1[REF_MAX_TOKENS];
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
	char *text = ref_slurp(path);
	if (!text)
		skip_all("no fixtures (set GRPO_SHARED to the shared directory holding data/fixtures)");
	cJSON *all = cJSON_Parse(text);
	free(text);
	struct ref_pack p;
	ref_pack(cJSON_GetObjectItem(all, "sequences"), &p);
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++)
		check_family(fx, fams[i], all, &p);
	cJSON_Delete(all);
	return tap_done();
}
