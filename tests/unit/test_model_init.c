/*
 * test_model_init: a directory written by grpo-init loads through the model
 * library with the shape asked for, runs, and is the same for the same seed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "../tap.h"

int main(void)
{
	const char *bin = getenv("GRPO_BIN");
	char init[4096];
	snprintf(init, sizeof init, "%s/grpo-init", bin ? bin : "build/bin");
	if (access(init, X_OK) != 0)
		skip_all("grpo-init not built (set GRPO_BIN)");
	char dir[256], cmd[8192];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/test_init.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		skip_all("cannot make a temporary directory");

	/* quoted: TMPDIR may hold a space */
	snprintf(cmd, sizeof cmd, "'%s' --family qwen3 --hidden 48 --layers 3 --heads 4 --kv-heads 2 --head-dim 16 "
	         "--intermediate 80 --vocab 300 --no-tie --seed 11 -o '%s/m'", init, dir);
	ok(system(cmd) == 0, "grpo-init writes a qwen3 model");
	char path[512];
	snprintf(path, sizeof path, "%s/m", dir);
	struct model m, m2;
	struct err e = { 0 };
	if (!ok(model_load(&m, path, &e) == 0, "model_load reads it back")) {
		diag("%s", e.msg);
		return tap_done();   /* nothing below has a model to look at */
	}
	ok(m.cfg.family == MODEL_QWEN3 && m.cfg.C == 48 && m.cfg.L == 3 && m.cfg.NH == 4 && m.cfg.NKV == 2 &&
	   m.cfg.HS == 16 && m.cfg.I == 80 && m.cfg.V == 300 && !m.cfg.tied && m.cfg.qk_norm,
	   "with the shape asked for");

	/* the library with the same seed makes the same weights the tool wrote */
	model_create(&m2, &m.cfg, &e);
	model_init_random(&m2, 11, NULL);
	ok(memcmp(m.w.mem, m2.w.mem, m.w.n * sizeof(float)) == 0, "weights are model_init_random(seed 11), bit for bit");
	model_init_random(&m2, 12, NULL);
	ok(memcmp(m.w.mem, m2.w.mem, m.w.n * sizeof(float)) != 0, "seed 12 gives other weights");
	double sum = 0, sq = 0;
	size_t n = (size_t)m.cfg.V * m.cfg.C;
	for (size_t i = 0; i < n; i++) {
		sum += m.w.embed[i];
		sq += (double)m.w.embed[i] * m.w.embed[i];
	}
	double sd = sqrt(sq / n - (sum / n) * (sum / n));
	ok(fabs(sum / n) < 0.002 && fabs(sd - 0.02) < 0.001, "embedding ~ N(0, 0.02): mean %.5f, sd %.5f", sum / n, sd);
	ok(m.w.qnorm[0] == 1 && m.w.ln1[5] == 1 && m.w.norm[47] == 1, "norm weights are 1");

	/* near-uniform predictions from a fresh model */
	int ids[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, lens[2] = { 4, 6 };
	float lp[10], ent[10];
	model_acts_alloc(&m, 10, &e);
	ok(model_forward(&m, ids, 10, lens, 2, NULL, lp, ent, &e) == 0, "forward runs");
	ok(fabs(lp[3] + log(300.0)) < 0.5 && fabs(ent[3] - log(300.0)) < 0.1,
	   "a fresh model predicts about uniformly: logprob %.3f, entropy %.3f, log V %.3f", lp[3], ent[3], log(300.0));
	model_free(&m);
	model_free(&m2);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return tap_done();
}
