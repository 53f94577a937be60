/*
 * bench_score: reference tokens per second of grpo-score on the CPU
 * (lib/score/reflp: a group packed into passes of --ref-tokens, each
 * sequence at its own temperature), beside a bare model_forward over the
 * same tokens in one pass, for the small model and the Qwen2.5-0.5B shape
 * with random weights. The ratio is what packing, splitting and copying
 * cost over the model itself; it should stay near 1.
 *
 *   bench_score [-s preset[,preset...]] [-g seqs] [-p prompt] [-l response]
 *               [-r repeats] [-t threads]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#include "model/model.h"
#include "score/reflp.h"

static int bench(const char *name, int G, int P, int R, int reps)
{
	struct model_config c;
	struct model m;
	struct err e;
	if (model_config_preset(name, &c) < 0 || model_create(&m, &c, &e) < 0) {
		fprintf(stderr, "bench_score: %s: no such preset or no memory\n", name);
		return 1;
	}
	if (model_init_random(&m, 1, &e) < 0)
		return 1;
	int T = G * (P + R);
	struct group g = { 0 };
	g.n = (uint32_t)G;
	g.trajs = calloc((size_t)G, sizeof *g.trajs);
	uint64_t s = 1;
	for (int i = 0; i < G; i++) {
		struct traj *t = &g.trajs[i];
		traj_init(t);
		t->n_prompt = (uint32_t)P;
		t->n_response = (uint32_t)R;
		t->prompt_tokens = malloc((size_t)P * sizeof(int32_t));
		t->response_tokens = malloc((size_t)R * sizeof(int32_t));
		t->temperature = i % 2 ? 0.7f : 1.0f;
		for (int j = 0; j < P + R; j++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			int32_t id = (int32_t)((s >> 33) % (uint64_t)c.V);
			if (j < P)
				t->prompt_tokens[j] = id;
			else
				t->response_tokens[j - P] = id;
		}
	}
	int *ids = malloc((size_t)T * sizeof *ids), lens[4096];
	float *temps = malloc((size_t)T * sizeof *temps), *lp = malloc((size_t)T * sizeof *lp);
	for (int i = 0, at = 0; i < G; i++) {
		for (int j = 0; j < P + R; j++, at++) {
			ids[at] = j < P ? g.trajs[i].prompt_tokens[j] : g.trajs[i].response_tokens[j - P];
			temps[at] = g.trajs[i].temperature;
		}
		lens[i] = P + R;
	}

	struct reflp r;
	int split[] = { T, T / 2 };
	double best[2] = { 1e30, 1e30 }, bare = 1e30;
	printf("model %s: %.1fM parameters; group of %d sequences of %d + %d tokens (%d); threads %d; best of %d\n",
	       name, m.w.n / 1e6, G, P, R, T, model_threads(), reps);
	for (int k = 0; k < 2; k++) {
		struct model copy = m;
		reflp_init(&r, &copy, name, split[k]);
		/* one untimed run first: it allocates the activations and faults
		 * their pages in, which the bare forward below then finds done */
		if (reflp_group(&r, &g, &e) < 0) {
			fprintf(stderr, "bench_score: %s\n", e.msg);
			return 1;
		}
		/* the bare forward alternates with the reference runs, so a busy
		 * machine slows both alike */
		for (int i = 0; i < reps; i++) {
			double t0 = now();
			if (reflp_group(&r, &g, &e) < 0) {
				fprintf(stderr, "bench_score: %s\n", e.msg);
				return 1;
			}
			double t = now() - t0;
			best[k] = t < best[k] ? t : best[k];
			if (k == 0) {
				t0 = now();
				model_forward(&r.m, ids, T, lens, G, temps, lp, NULL, &e);
				t = now() - t0;
				bare = t < bare ? t : bare;
			}
		}
		/* the weights are shared between the two runs: give them back before closing */
		free(r.m.a.mem);
		r.m.a.mem = NULL;
		r.m.w.mem = NULL;
		reflp_close(&r);
	}
	printf("%-34s %10s %12s %8s\n", "pass", "seconds", "tokens/s", "ratio");
	printf("%-34s %10.4f %12.1f %8s\n", "model_forward, one pack", bare, T / bare, "1.00");
	printf("%-34s %10.4f %12.1f %8.2f\n", "reference, --ref-tokens = group", best[0], T / best[0], best[0] / bare);
	printf("%-34s %10.4f %12.1f %8.2f\n", "reference, --ref-tokens = group/2", best[1], T / best[1], best[1] / bare);
	group_free(&g);
	free(ids), free(temps), free(lp);
	model_free(&m);
	return 0;
}

int main(int argc, char **argv)
{
	char presets[256] = "small,qwen2.5-0.5b";
	int G = 8, P = 64, R = 192, reps = 3, o;
	while ((o = getopt(argc, argv, "s:g:p:l:r:t:h")) != -1) {
		switch (o) {
		case 's': snprintf(presets, sizeof presets, "%s", optarg); break;
		case 'g': G = atoi(optarg); break;
		case 'p': P = atoi(optarg); break;
		case 'l': R = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 't': model_set_threads(atoi(optarg)); break;
		default:
			fprintf(stderr, "usage: bench_score [-s presets] [-g seqs] [-p prompt] [-l response] [-r repeats] "
				"[-t threads]\n");
			return o == 'h' ? 0 : 2;
		}
	}
	if (G < 2 || G > 4096 || P < 1 || R < 1 || reps < 1) {
		fprintf(stderr, "bench_score: bad arguments\n");
		return 2;
	}
	int rc = 0;
	for (char *save, *p = strtok_r(presets, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		/* the large shape: a smaller group, one repeat, so make bench stays minutes */
		int big = strcmp(p, "small") != 0 && strcmp(p, "tiny") != 0;
		rc |= bench(p, big ? 4 : G, big ? 32 : P, big ? 96 : R, big ? 1 : reps);
	}
	return rc;
}
