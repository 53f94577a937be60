/*
 * test_model_hf: model directories written by grpo-init, as Hugging Face
 * transformers reads them (tests/data/hf, made by its make.sh and
 * make_expected.py). Each was loaded by transformers with no missing,
 * unexpected or mismatched tensor; here the C model loads the same files and
 * must give transformers' logprobs and entropies for five sequences packed
 * into one pass, each at its own temperature, and its gradient of
 *   sum_t c_t logprob_t + sum_t d_t entropy_t
 * for every weight. Three layouts: qwen2 tied with q/k/v bias in float32;
 * qwen3 with q/k norm and head_dim != hidden/heads in bfloat16; llama with
 * llama3 rope scaling, untied, in three shards.
 */
#include "../tap.h"
#include "../model_ref.h"

static void check(const char *dir, const char *fam)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s/expected.json", dir, fam);
	char *text = ref_slurp(path);
	cJSON *x = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!ok(x != NULL, "%s: expected.json readable", fam))
		return;
	struct ref_pack p;
	ref_pack(cJSON_GetObjectItem(x, "sequences"), &p);
	snprintf(path, sizeof path, "%s/%s", dir, fam);
	struct model m;
	struct err e = { 0 };
	if (!ok(model_load(&m, path, &e) == 0 && model_acts_alloc(&m, p.T, &e) == 0 && model_grads_alloc(&m, &e) == 0,
	        "%s: load %s", fam, path)) {
		diag("%s", e.msg);
		cJSON_Delete(x);
		return;
	}
	const cJSON *tied = cJSON_GetObjectItem(x, "tied");
	ok(cJSON_IsBool(tied) && !!cJSON_IsTrue(tied) == !!m.cfg.tied, "%s: tied as transformers tied it (%s)", fam,
	   m.cfg.tied ? "tied" : "untied");

	float lp[REF_MAX_TOKENS], ent[REF_MAX_TOKENS], dlp[REF_MAX_TOKENS], dent[REF_MAX_TOKENS];
	int r = model_forward(&m, p.ids, p.T, p.seq_lens, p.nseq, p.temps, lp, ent, &e);
	ok(r == 0, "%s: packed forward of %d sequences, %d tokens, temperatures 0.7 to 1.3", fam, p.nseq, p.T);
	double wl = ref_worst_rel(&p, lp, cJSON_GetObjectItem(x, "logprobs"));
	double we = ref_worst_rel(&p, ent, cJSON_GetObjectItem(x, "entropy"));
	ok(wl <= 1e-4, "%s: logprobs match transformers within 1e-4 relative (worst %.2g)", fam, wl);
	ok(we <= 1e-4, "%s: entropies match transformers within 1e-4 relative (worst %.2g)", fam, we);

	ref_spread(&p, cJSON_GetObjectItem(x, "logprob_coefficients"), dlp);
	ref_spread(&p, cJSON_GetObjectItem(x, "entropy_coefficients"), dent);
	double loss = 0, want = cJSON_GetObjectItem(x, "loss")->valuedouble;
	for (int i = 0; i < p.T; i++)
		loss += (double)dlp[i] * lp[i] + (double)dent[i] * ent[i];
	if (!ok(fabs(loss - want) <= 1e-4 * fabs(want), "%s: loss sum c logprob + d entropy matches", fam))
		diag("  got %.9g want %.9g", loss, want);
	model_grads_zero(&m);
	r = model_backward(&m, dlp, dent, &e);
	if (!ok(r == 0, "%s: backward through logprobs and entropies", fam))
		diag("%s", e.msg);
	snprintf(path, sizeof path, "%s/%s/grad.safetensors", dir, fam);
	ref_check_grads(&m, path, fam);
	model_free(&m);
	cJSON_Delete(x);
}

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/data/hf", top ? top : ".");
	const char *fams[] = { "qwen2", "qwen3", "llama" };
	for (int i = 0; i < 3; i++)
		check(dir, fams[i]);
	return tap_done();
}
