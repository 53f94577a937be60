/*
 * grpo-collect --model: sample G responses to each prompt of a prompts file
 * from a model directory, or the newest checkpoint of a policy queue, on the
 * CPU or a GPU, and publish them as the importer publishes its groups
 * (grpo-collect.c), with --cursor keeping the batch started so that a killed
 * run's successor finishes it from the same checkpoint. Apart from
 * grpo-collect.c because nothing else in the tool loads a model.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/progress.h"
#include "collect/collect.h"
#include "collect/cursor.h"
#include "data/sfile.h"
#include "model/rollout.h"

#include "cli.h"
#include "grpo-collect.h"

/*
 * A batch from a model that a run stopped before it advanced the cursor: the
 * checkpoint it was started from, under g->model, with its version (and the
 * step published into, rows and count) in place of the newest. 0, -1 with e
 * set.
 */
static int started_batch(struct opts *o, const struct gen_opts *g, const struct cursor *cur, char *dir, size_t dirsz,
			 int64_t *version, long long *offset, long long *count, struct err *e)
{
	const struct cursor_batch *b = &cur->batch;
	int64_t asked = o->step;
	if (!b->model)
		return err_set(e, "%s holds prompts sampled through a server and perhaps published in part: run the "
			       "grpo-collect --server command that sampled them again to finish them", g->cursor);
	if (cursor_check_target(cur, o->queue, o->rank, o->max_groups, o->have_step ? &asked : NULL, e) < 0)
		return -1;
	int r = rollout_policy_at(g->model, b->policy_version, dir, dirsz, e);
	if (r < 0)
		return -1;
	if (r > 0)
		return err_set(e, "%s holds %llu prompts from place %llu, started from %s (policy version %lld) and "
			       "perhaps published in part, but %s is gone (no config.json): they cannot be sampled again "
			       "as they were; bring the checkpoint back and run again, or write %llu alone into %s to pass "
			       "over those not yet published", cur->path, (unsigned long long)b->prompts,
			       (unsigned long long)b->from, b->model, (long long)b->policy_version, dir,
			       (unsigned long long)b->next, cur->path);
	*version = b->policy_version;
	o->step = b->step;
	*offset = (long long)b->from;
	*count = (long long)b->prompts;
	return 0;
}

/* The batch about to be sampled, kept in the cursor (collect/cursor.h). */
static int start_batch(struct cursor *cur, const struct opts *o, const char *dir, int64_t version, uint64_t names,
		       long long batch, uint64_t from, int n, uint64_t next, struct err *e)
{
	struct cursor_batch b = { .from = from, .prompts = (uint64_t)n, .next = next, .policy_version = version,
				  .rank = o->rank, .max_groups = o->max_groups, .names = names, .batch = batch,
				  .step = o->step };
	if (!(b.model = strdup(dir)) || (o->queue && !(b.output = strdup(o->queue)))) {
		cursor_batch_free(&b);
		return err_set(e, "out of memory");
	}
	return cursor_save(cur, &b, e);
}

/*
 * A prompt with its --max-tokens must fit the positions the model was
 * trained for: RoPE past them gives a model out of its range, and a sample
 * that reads well but means nothing. Refused before anything is sampled, as
 * an inference server refuses such a request.
 */
static int check_positions(const struct gen_opts *g, const struct model *m, const char *dir,
			   const struct rollout_prompt *ps, int n, struct err *e)
{
	long long max_pos = m->cfg.max_pos;
	for (int i = 0; i < n; i++)
		if ((long long)ps[i].n + g->max_tokens > max_pos)
			return err_set(e, "%s:%llu: a prompt of %u tokens and --max-tokens %lld need %lld positions, "
				       "beyond the %lld of %s/config.json (max_position_embeddings); shorten the "
				       "prompt or lower --max-tokens", g->prompts, (unsigned long long)ps[i].line,
				       ps[i].n, (long long)g->max_tokens, (long long)ps[i].n + g->max_tokens, max_pos,
				       dir);
	return 0;
}

/*
 * The GPU sampler --device asks for, in *gpu, or NULL for the C model:
 * auto means the GPU where there is one that can take the model, else the
 * C model (saying why when a GPU was there); cuda that cannot be had is -1
 * (exit 69).
 */
static int open_sampler(const struct gen_opts *g, const struct model *m, const struct rollout_prompt *ps, int n,
			int verbose, struct model_gpu **gpu, struct err *e)
{
	enum model_device got;
	*gpu = NULL;
	int r = model_device_resolve(g->device, &got, e);
	if (r < 0)
		return -1;
	if (r > 0)
		cli_warn("%s", e->msg);
	if (got == MODEL_DEVICE_CPU)
		return 0;
	int longest = 1;
	for (int i = 0; i < n; i++)
		if ((int)ps[i].n > longest)
			longest = (int)ps[i].n;
	if (model_gpu_open_gen(gpu, m, longest, (int)g->max_tokens, !g->fp32, e) < 0) {
		if (g->device == MODEL_DEVICE_CUDA)
			return -1;
		cli_warn("--device auto: sampling on the CPU: %s", e->msg);
		return 0;
	}
	if (verbose) {
		char d[512];
		model_gpu_describe(*gpu, d, sizeof d);
		cli_warn("sampling on the GPU in %s: %s", g->fp32 ? "fp32" : "bf16", d);
	}
	return 0;
}

/*
 * Sample G responses to each prompt taken from --prompts and publish them as
 * the importer publishes its groups. The parts are named from everything that
 * decides their bytes (policy version, sampling options and the prompts'
 * tokens), so a re-run after a crash publishes nothing twice. With --cursor
 * the batch is kept in it before it is sampled, with the checkpoint it is
 * sampled from, and a run that finds it there samples it again from that
 * checkpoint (not the newest), publishes it and stops.
 */
int generate(struct opts *o, const struct gen_opts *g, struct sfile_writer *w)
{
	struct err e = { 0 };
	char dir[PATH_MAX], tpath[PATH_MAX];
	int64_t version;
	struct model m = { 0 };
	struct model_gpu *gpu = NULL;
	struct tokenizer *tok = NULL;
	enum chat_format chat;
	const enum chat_format *use_chat;
	struct rollout_prompt *ps = NULL;
	struct held held = { 0 };
	struct cursor cur = { 0 };
	struct stopstr stops = { 0 };
	int n = 0, status = 1, lock_fd = -1;
	uint64_t rows;
	long long offset = g->offset, count = g->count;
	struct progress pg;
	progress_init(&pg, prog, STDERR_FILENO);
	if (g->cursor) {
		int r = open_cursor(g, &cur, &offset, &lock_fd, &e);
		if (r != 0) {
			status = r > 0 ? CLI_EXIT_LATER : 1;
			goto fail;
		}
	}
	if (cur.pending) {
		if (started_batch(o, g, &cur, dir, sizeof dir, &version, &offset, &count, &e) < 0)
			goto fail;
	} else {
		if (rollout_policy_find(g->model, dir, sizeof dir, &version, &e) < 0)
			goto fail;
		if (!o->have_step)
			o->step = version;
	}
	if (model_load(&m, dir, &e) < 0)
		goto fail;
	/* an instruct model lists its end-of-turn tokens in generation_config.json */
	int stop[MODEL_MAX_STOP], n_stop;
	if (model_stop_ids_load(dir, &m.cfg, stop, &n_stop, &e) < 0)
		goto fail;
	const char *tfile = g->tokenizer;
	if (!tfile && snprintf(tpath, sizeof tpath, "%s/tokenizer.json", dir) < (int)sizeof tpath &&
	    access(tpath, R_OK) == 0)
		tfile = tpath;
	if (tfile && !(tok = tok_load(tfile, &e)))
		goto fail;
	if (gen_chat(g, tfile, o->verbose, &chat, &use_chat, &e) < 0)
		goto fail;
	if (g->n_stops && !tok) {
		err_set(&e, "--stop: %s has no tokenizer.json to read the responses' text with: give --tokenizer", dir);
		goto fail;
	}
	if (g->n_stops && stopstr_init(&stops, tok, g->stops, g->n_stops, &e) < 0)
		goto fail;
	if (rollout_prompts_load(g->prompts, tok, use_chat, (uint32_t)m.cfg.V, 0,
	                         (uint64_t)offset, (uint64_t)count, &ps, &n, &rows, &e) < 0)
		goto fail;
	if (check_positions(g, &m, dir, ps, n, &e) < 0)
		goto fail;
	if (open_sampler(g, &m, ps, n, o->verbose, &gpu, &e) < 0) {
		status = 69;
		goto fail;
	}
	struct gen_params gp = { .temperature = g->temperature, .top_p = (float)g->top_p, .top_k = (int)g->top_k,
	                         .max_tokens = (int)g->max_tokens, .stop_ids = stop,
	                         .n_stop = n_stop, .seed = g->seed };
	if (g->n_stops) {
		gp.stop_after = stopstr_after;
		gp.stop_ctx = &stops;
	}
	uint64_t hash = collect_hash(COLLECT_HASH_INIT, "generate", 8);
	long long knobs[] = { version, g->samples, g->max_tokens, g->top_k };
	double reals[] = { g->temperature, g->top_p };
	hash = collect_hash(hash, knobs, sizeof knobs);
	hash = collect_hash(hash, reals, sizeof reals);
	hash = collect_hash(hash, &g->seed, sizeof g->seed);
	for (int i = 0; i < g->n_stops; i++)   /* none: the names runs without --stop always had */
		hash = collect_hash(hash, g->stops[i], strlen(g->stops[i]) + 1);
	if (gpu)   /* the GPU's numbers are not the C model's: other bytes, other names */
		hash = collect_hash(hash, g->fp32 ? "cuda fp32" : "cuda bf16", 9);
	for (int i = 0; i < n; i++) {
		hash = collect_hash(hash, &ps[i].place, sizeof ps[i].place);
		hash = collect_hash(hash, ps[i].tokens, ps[i].n * sizeof *ps[i].tokens);
	}
	/* the cursor keeps places, not rows: a second pass over the file has new
	 * places, so new samples and ids, rather than the first pass's again */
	uint64_t from = (uint64_t)offset, next = (uint64_t)offset + (uint64_t)n;
	int finishing = cur.pending;
	if (finishing && cursor_check_sampling(&cur, hash, g->batch, &e) < 0)
		goto fail;
	if (g->cursor && !finishing && start_batch(&cur, o, dir, version, hash, g->batch, from, n, next, &e) < 0)
		goto fail;
	if (!(held.g = calloc(n ? (size_t)n : 1, sizeof *held.g))) {
		err_set(&e, "out of memory");
		goto fail;
	}
	held.cap = (size_t)n;
	for (int at = 0; at < n; at += (int)g->batch) {
		int b = n - at < g->batch ? n - at : (int)g->batch;
		if (rollout_sample(&m, gpu, ps + at, b, (int)g->samples, &gp, version, held.g + held.n, &e) < 0)
			goto fail;
		if (stopstr_error(&stops)) {   /* the responses it cut short are not published */
			err_set(&e, "--stop: %s", stopstr_error(&stops));
			held.n += (size_t)b;   /* freed with the others */
			goto fail;
		}
		if (gpu && o->verbose) {
			char d[512];
			model_gpu_gen_describe(gpu, d, sizeof d);
			cli_warn("GPU batch of %d prompt%s: %s", b, cli_s(b), d);
		}
		held.n += (size_t)b;
		progress_show(&pg, at + b, n, "prompts sampled");
	}
	progress_end(&pg);
	if (emit_groups(o, &held, hash, g->prompts, w, &e) < 0 || (g->cursor && cursor_advance(&cur, next, &e) < 0))
		goto fail;
	if (o->verbose)
		cli_warn("%s (policy version %lld): %d prompt%s from row %llu of %s, %d group%s of %lld%s",
		         dir, (long long)version, n, cli_s(n), (unsigned long long)(from % rows), g->prompts, n,
		         cli_s(n), g->samples,
		         finishing ? ", the batch an earlier run started" : "");
	status = 0;
fail:
	progress_end(&pg);
	if (status)
		cli_warn("%s", e.msg);
	if (status == CLI_EXIT_FAILURE)
		status = cli_failure_status(e.errnum);
	held_free(&held);
	cursor_free(&cur);
	if (lock_fd >= 0)
		close(lock_fd);
	rollout_prompts_free(ps, n);
	stopstr_free(&stops);
	tok_free(tok);
	model_gpu_close(gpu);
	model_free(&m);
	return status;
}
