/*
 * step.c: reading a step's micro-batches and training on them (see step.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "data/sfile.h"
#include "spool/spool.h"
#include "train/step.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void step_free_batches(struct microbatch *mbs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mb_free(&mbs[i]);
	free(mbs);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Append every micro-batch of the spool file path to *mbs. */
static int read_file(const char *path, struct microbatch **mbs, size_t *n, size_t *cap, struct err *e)
{
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return -1;
	struct sfile_reader r;
	if (sfile_reader_open_fd(&r, fd, path, e) < 0) {
		close(fd);
		return -1;
	}
	int rc;
	struct record rec;
	while ((rc = sfile_read(&r, &rec, e)) > 0) {
		if (rec.kind != REC_MICROBATCH) {
			record_free(&rec);
			continue;
		}
		if (*n == *cap) {
			size_t nc = *cap ? 2 * *cap : 16;
			struct microbatch *p = realloc(*mbs, nc * sizeof *p);
			if (!p) {
				record_free(&rec);
				rc = err_set(e, "%s: out of memory", path);
				break;
			}
			*mbs = p, *cap = nc;
		}
		(*mbs)[(*n)++] = rec.mb;
		memset(&rec.mb, 0, sizeof rec.mb);
		record_free(&rec);
	}
	sfile_reader_close(&r);
	close(fd);
	return rc < 0 ? -1 : 0;
}

int step_read(const char *queue, int64_t step, struct microbatch **mbs, size_t *n, struct err *e)
{
	*mbs = NULL, *n = 0;
	size_t cap = 0, nr = 0;
	int *ranks = NULL;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	qsort(ranks, nr, sizeof *ranks, cmp_int);
	int rc = 0;
	for (size_t i = 0; i < nr && rc == 0; i++) {
		char dir[PATH_MAX];
		spool_step_dir(dir, sizeof dir, queue, step, ranks[i]);
		char **names = NULL;
		size_t nn = 0;
		if (fsys_list_dir(dir, FSYS_FILES, &names, &nn, e) < 0) {
			rc = -1;
			break;
		}
		for (size_t j = 0; j < nn && rc == 0; j++) {
			size_t len = strlen(names[j]);
			if (names[j][0] == '.' || len < 4 || strcmp(names[j] + len - 4, ".zst") != 0)
				continue;
			char path[PATH_MAX];
			snprintf(path, sizeof path, "%s/%s", dir, names[j]);
			rc = read_file(path, mbs, n, &cap, e);
		}
		fsys_free_names(names, nn);
	}
	free(ranks);
	if (rc < 0) {
		step_free_batches(*mbs, *n);
		*mbs = NULL, *n = 0;
	}
	return rc;
}

int step_prepare(struct model *m, const struct microbatch *mbs, size_t n, struct err *e)
{
	uint32_t maxT = 1;
	for (size_t i = 0; i < n; i++)
		if (mbs[i].n_tokens > maxT)
			maxT = mbs[i].n_tokens;
	if (!m->g.mem && model_grads_alloc(m, e) < 0)
		return -1;
	if ((!m->a.mem || m->a.maxT < (int)maxT) && model_acts_alloc(m, (int)maxT, e) < 0)
		return -1;
	return 0;
}

static int has_loss(const struct microbatch *mb)
{
	for (uint32_t t = 0; t < mb->n_tokens; t++)
		if (mb->loss_mask[t])
			return 1;
	return 0;
}

int step_train(struct model *m, struct optim *op, const struct loss_opts *lo, int epochs,
               const struct microbatch *mbs, size_t n, const struct step_observer *obs,
               struct step_result *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	loss_stats_init(&r->first);
	loss_stats_init(&r->last);
	for (size_t i = 0; i < n; i++)
		loss_totals_add_mb(&r->totals, &mbs[i]);
	if (step_prepare(m, mbs, n, e) < 0)
		return -1;
	int maxT = m->a.maxT;
	int tis = lo->tis_cap > 0;
	float *lp = malloc((size_t)maxT * sizeof *lp), *ent = malloc((size_t)maxT * sizeof *ent);
	float *dlp = malloc((size_t)maxT * sizeof *dlp), *dent = malloc((size_t)maxT * sizeof *dent);
	float **old = tis ? calloc(n ? n : 1, sizeof *old) : NULL;
	int rc = 0;
	if (!lp || !ent || !dlp || !dent || (tis && !old))
		rc = err_set(e, "out of memory for a step of %zu micro-batches", n);

	for (int ep = 0; ep < epochs && rc == 0; ep++) {
		struct loss_stats st;
		loss_stats_init(&st);
		model_grads_zero(m);
		for (size_t i = 0; i < n && rc == 0; i++) {
			const struct microbatch *mb = &mbs[i];
			if (!has_loss(mb))
				continue;
			int T = (int)mb->n_tokens;
			double t0 = now();
			if (model_forward(m, (const int *)mb->input_ids, T, (const int *)mb->seq_lens,
			                  (int)mb->n_seq_lens, mb->temperatures, lp, ent, e) < 0) {
				rc = -1;
				break;
			}
			double t1 = now();
			if (ep == 0 && obs && obs->mb && obs->mb(obs->ctx, mb, lp, e) < 0) {
				rc = -1;
				break;
			}
			struct loss_input in;
			loss_input_from_mb(&in, mb);
			if (tis) {
				if (ep == 0) {
					old[i] = malloc((size_t)T * sizeof(float));
					if (!old[i]) {
						rc = err_set(e, "out of memory");
						break;
					}
					memcpy(old[i], lp, (size_t)T * sizeof(float));
				}
				in.behav = in.old;
				in.old = old[i];
			}
			int use_ent = lo->entropy_coef != 0;
			if (loss_mb(lo, &r->totals, &in, lp, ent, dlp, use_ent ? dent : NULL, &st, e) < 0 ||
			    model_backward(m, dlp, use_ent ? dent : NULL, e) < 0) {
				rc = err_prefix(e, "micro-batch %zu (rank %d, index %d)", i, mb->rank, mb->index);
				break;
			}
			r->fwd_s += t1 - t0;
			r->bwd_s += now() - t1;
			r->tokens += T;
			if (obs)
				progress_show(obs->progress, (long long)(ep * n + i + 1), (long long)(epochs * n),
				              "micro-batches");
		}
		if (rc < 0)
			break;
		double t2 = now();
		if (optim_step(op, m->w.mem, m->g.mem, &r->opt, e) < 0) {
			rc = -1;
			break;
		}
		r->opt_s += now() - t2;
		if (ep == 0)
			r->first = st;
		r->last = st;
		r->epochs = ep + 1;
	}
	if (old)
		for (size_t i = 0; i < n; i++)
			free(old[i]);
	free(old);
	free(lp);
	free(ent);
	free(dlp);
	free(dent);
	return rc;
}
