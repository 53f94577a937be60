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
#include "base/path.h"
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

/* Append every micro-batch of the spool file path, in step_N/rank_X, to
 * *mbs. One that grpo-pack made for another step or rank (a step of 0: a
 * record that names none) was moved or copied there by hand, and would be
 * trained twice, or in place of the step's own: refused. */
static int read_file(const char *path, int64_t step, int rank, struct microbatch **mbs, size_t *n, size_t *cap,
		     struct err *e)
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
		if (rec.kind != REC_MICROBATCH) {   /* scored groups in the wrong queue, say: not skipped unseen */
			record_free(&rec);
			rc = err_set(e, "%s: record %llu: a group of trajectories, not a micro-batch (is this "
			             "grpo-pack's output?)", path, (unsigned long long)r.record_no);
			break;
		}
		if (rec.mb.step != 0 && (rec.mb.step != step || rec.mb.rank != rank)) {
			rc = err_set(e, "%s: record %llu: a micro-batch that grpo-pack made for step %lld, rank %d, "
				     "found in step %lld, rank %d (moved or copied by hand?); nothing is trained",
				     path, (unsigned long long)r.record_no, (long long)rec.mb.step, rec.mb.rank,
				     (long long)step, rank);
			record_free(&rec);
			break;
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

int step_read(const char *queue, int64_t step, int rank, struct microbatch **mbs, size_t *n, struct err *e)
{
	*mbs = NULL, *n = 0;
	size_t cap = 0, nr = 0;
	int *ranks = NULL;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	qsort(ranks, nr, sizeof *ranks, cmp_int);
	int rc = 0;
	for (size_t i = 0; i < nr && rc == 0; i++) {
		if (rank >= 0 && ranks[i] != rank)
			continue;
		char dir[PATH_MAX];
		char **names = NULL;
		size_t nn = 0;
		if (spool_step_dir(dir, sizeof dir, queue, step, ranks[i], e) < 0) {
			rc = -1;
			break;
		}
		if (fsys_list_dir(dir, FSYS_FILES, &names, &nn, e) < 0) {
			rc = -1;
			break;
		}
		for (size_t j = 0; j < nn && rc == 0; j++) {
			size_t len = strlen(names[j]);
			if (names[j][0] == '.' || len < 4 || strcmp(names[j] + len - 4, ".zst") != 0)
				continue;
			char path[PATH_MAX];
			rc = path_join(path, sizeof path, dir, names[j], e);
			if (rc == 0)
				rc = read_file(path, step, ranks[i], mbs, n, &cap, e);
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

void step_count(const struct microbatch *mbs, size_t n, struct loss_totals *t)
{
	for (size_t i = 0; i < n; i++)
		loss_totals_add_mb(t, &mbs[i]);
}

size_t step_mask_truncated(struct microbatch *mbs, size_t n, struct loss_totals *cut)
{
	size_t unknown = 0;
	for (size_t i = 0; i < n; i++) {
		struct microbatch *mb = &mbs[i];
		uint32_t start = 0;
		for (uint32_t s = 0; s < mb->n_seqs && s < mb->n_seq_lens; start += mb->seq_lens[s], s++) {
			if (!mb->finish_reasons || !mb->finish_reasons[s]) {
				unknown++;
				continue;
			}
			if (strcmp(mb->finish_reasons[s], "length") != 0)
				continue;
			cut->seqs += 1;
			for (uint32_t t = start; t < start + mb->seq_lens[s] && t < mb->n_tokens; t++) {
				cut->tokens += mb->loss_mask[t] != 0;
				mb->loss_mask[t] = 0;
			}
		}
	}
	return unknown;
}

int step_totals(const struct done_manifest *d, const struct loss_totals *cut, struct loss_totals *tot,
                struct err *e)
{
	if (d->loss_tokens < 0)
		return err_set(e, "step %lld: DONE has no loss_tokens (written by an older grpo-pack)",
		               (long long)d->step);
	tot->seqs = (double)d->sequences - (cut ? cut->seqs : 0);
	tot->tokens = (double)d->loss_tokens - (cut ? cut->tokens : 0);
	tot->mbs = (double)d->ranks * d->micro_batches_per_rank - d->dummies;
	return 0;
}

int step_check(const char *done_path, const struct done_manifest *d, const struct loss_totals *counted,
               struct err *e)
{
	double mbs = (double)d->ranks * d->micro_batches_per_rank - d->dummies;
	if (d->loss_tokens >= 0 && counted->tokens != (double)d->loss_tokens)
		return err_set(e, "%s: says %lld loss token%s, and the micro-batches of every rank hold %.0f",
		               done_path, (long long)d->loss_tokens, d->loss_tokens == 1 ? "" : "s", counted->tokens);
	if (counted->seqs != d->sequences)
		return err_set(e, "%s: says %u sequence%s, and the micro-batches of every rank hold %.0f", done_path,
		               d->sequences, d->sequences == 1 ? "" : "s", counted->seqs);
	if (counted->mbs != mbs)
		return err_set(e, "%s: says %.0f micro-batches that are not dummies, and the ranks hold %.0f",
		               done_path, mbs, counted->mbs);
	return 0;
}

int step_max_tokens(const struct microbatch *mbs, size_t n)
{
	uint32_t maxT = 1;
	for (size_t i = 0; i < n; i++)
		if (mbs[i].n_tokens > maxT)
			maxT = mbs[i].n_tokens;
	return (int)maxT;
}

int step_prepare(struct model *m, const struct microbatch *mbs, size_t n, struct err *e)
{
	int maxT = step_max_tokens(mbs, n);
	if (!m->g.mem && model_grads_alloc(m, e) < 0)
		return -1;
	if ((!m->a.mem || m->a.maxT < maxT) && model_acts_alloc(m, maxT, e) < 0)
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

/* Forward, loss and backward of one micro-batch, the gradient added into m->g. */
struct mbctx {
	struct model *m;
	struct model_gpu *gpu;   /* NULL: the CPU */
	const struct loss_opts *lo;
	const struct loss_totals *tot;
	const struct step_observer *obs;
	float *lp, *ent, *dlp, *dent;
	float **old;   /* (n) with a TIS cap: each micro-batch's ℓ at the step's start */
	float **fill;  /* (n) when a micro-batch has sequences without sampler logprobs:
	                  its inference_logprobs with theirs replaced by ℓ at the step's start */
	int fused;     /* the GPU's forward takes the loss's gradient and the LM head's backward */
	double *w;     /* (maxT) fused: the tokens' aggregation weights */
	uint8_t *flags;   /* (maxT) fused: MODEL_GPU_LOSS_* */
	struct step_result *r;
};

/* 1 when some real sequence of mb has no sampler logprobs. */
static int has_missing(const struct microbatch *mb)
{
	for (uint32_t s = 0; mb->logprobs_missing && s < mb->n_seqs; s++)
		if (mb->logprobs_missing[s])
			return 1;
	return 0;
}

/* 1 when span s of mb, from token start, is a sequence without sampler logprobs; *end its end. */
static int missing_span(const struct microbatch *mb, uint32_t s, uint32_t start, uint32_t *end)
{
	*end = start + mb->seq_lens[s] < mb->n_tokens ? start + mb->seq_lens[s] : mb->n_tokens;
	return mb->logprobs_missing[s];
}

/*
 * A sequence whose sampler gave no logprobs (grpo-collect
 * --allow-missing-logprobs) holds zeros in inference_logprobs, which mean
 * nothing. Its ℓ_old (and ℓ_behav, for TIS) is taken as the policy's own
 * logprob at the step's start instead, the on-policy assumption TRL makes
 * with one iteration: its ratio starts at 1 and its TIS weight is 1. Called
 * in the first epoch, with c->lp that epoch's forward.
 */
static int fill_missing(struct mbctx *c, size_t i, const struct microbatch *mb, struct err *e)
{
	if (!(c->fill[i] = malloc((size_t)mb->n_tokens * sizeof(float))))
		return err_set(e, "out of memory");
	memcpy(c->fill[i], mb->inference_logprobs, (size_t)mb->n_tokens * sizeof(float));
	uint32_t start = 0, end;
	for (uint32_t s = 0; s < mb->n_seqs && s < mb->n_seq_lens; start += mb->seq_lens[s], s++) {
		if (!missing_span(mb, s, start, &end))
			continue;
		for (uint32_t t = start; t < end; t++)
			c->fill[i][t] = mb->loss_mask[t] ? c->lp[t] : 0;
		c->r->no_sampler_seqs++;
	}
	return 0;
}

/*
 * The fused forward's loss inputs, made before there is an ℓ. Where
 * run_mb's loss will read this forward's own ℓ as ℓ_old or ℓ_behav (the
 * first epoch's old logprobs under a TIS cap, and fill_missing's
 * sequences), a flag says so instead, which is exact: the GPU reads the
 * very floats it returns in c->lp, and the ratio is 1.
 */
static int fused_inputs(struct mbctx *c, int ep, size_t i, const struct microbatch *mb, struct model_gpu_loss *gl,
                        struct err *e)
{
	struct loss_input in;
	loss_input_from_mb(&in, mb);
	int own_old = c->old && ep == 0;
	if (c->fill && c->fill[i])
		in.old = c->fill[i];
	if (c->old) {   /* as run_mb: the sampler's become ℓ_behav; an own ℓ_old is flagged, the array unread */
		in.behav = in.old;
		in.old = own_old ? in.behav : c->old[i];
	}
	for (uint32_t t = 0; t < mb->n_tokens; t++)
		c->flags[t] = mb->loss_mask[t] ? MODEL_GPU_LOSS_TOKEN | (own_old ? MODEL_GPU_LOSS_OLD_OWN : 0) : 0;
	if (ep == 0 && c->fill && has_missing(mb)) {   /* fill_missing will put ℓ there */
		uint32_t start = 0, end;
		for (uint32_t s = 0; s < mb->n_seqs && s < mb->n_seq_lens; start += mb->seq_lens[s], s++) {
			if (!missing_span(mb, s, start, &end))
				continue;
			for (uint32_t t = start; t < end; t++)
				if (c->flags[t])
					c->flags[t] |= c->old ? MODEL_GPU_LOSS_BEHAV_OWN : MODEL_GPU_LOSS_OLD_OWN;
		}
	}
	if (loss_token_weights(c->lo, c->tot, &in, c->w, e) < 0)
		return -1;
	struct model_gpu_loss l = { c->lo, c->flags, in.adv, in.old, in.behav, in.ref, c->w };
	*gl = l;
	return 0;
}

/* mb's forward into c->lp and c->ent: on the CPU, on the GPU, or there with the loss's gradient fused in. */
static int forward(struct mbctx *c, int ep, size_t i, const struct microbatch *mb, struct err *e)
{
	if (!c->gpu)
		return model_forward(c->m, (const int *)mb->input_ids, (int)mb->n_tokens, (const int *)mb->seq_lens,
		                     (int)mb->n_seq_lens, mb->temperatures, c->lp, c->ent, e);
	if (!c->fused)
		return model_gpu_forward_mb(c->gpu, mb, c->lp, c->ent, e);
	struct model_gpu_loss gl;
	if (fused_inputs(c, ep, i, mb, &gl, e) < 0)
		return -1;
	return model_gpu_forward_train(c->gpu, mb, &gl, c->lp, c->ent, e);
}

static int run_mb(struct mbctx *c, int ep, size_t i, const struct microbatch *mb, struct loss_stats *st,
                  struct err *e)
{
	int T = (int)mb->n_tokens;
	double t0 = now();
	if (forward(c, ep, i, mb, e) < 0)   /* such as a token id the model does not have */
		return err_prefix(e, "micro-batch %zu (rank %d, index %d)", i, mb->rank, mb->index);
	double t1 = now();
	if (ep == 0 && c->obs && c->obs->mb && c->obs->mb(c->obs->ctx, mb, c->lp, e) < 0)
		return -1;
	struct loss_input in;
	loss_input_from_mb(&in, mb);
	if (ep == 0 && c->fill && has_missing(mb) && fill_missing(c, i, mb, e) < 0)
		return -1;
	if (c->fill && c->fill[i])
		in.old = c->fill[i];
	if (c->old) {
		if (ep == 0) {
			if (!(c->old[i] = malloc((size_t)T * sizeof(float))))
				return err_set(e, "out of memory");
			memcpy(c->old[i], c->lp, (size_t)T * sizeof(float));
		}
		in.behav = in.old;
		in.old = c->old[i];
	}
	int use_ent = c->lo->entropy_coef != 0;
	float *dent = use_ent ? c->dent : NULL;
	if (loss_mb(c->lo, c->tot, &in, c->lp, c->ent, c->dlp, dent, st, e) < 0 ||
	    (c->gpu ? model_gpu_backward(c->gpu, c->dlp, dent, e) : model_backward(c->m, c->dlp, dent, e)) < 0)
		return err_prefix(e, "micro-batch %zu (rank %d, index %d)", i, mb->rank, mb->index);
	c->r->fwd_s += t1 - t0;
	c->r->bwd_s += now() - t1;
	c->r->tokens += T;
	return 0;
}

static int span_order(const void *a, const void *b)
{
	size_t x = ((const struct optim_span *)a)->off, y = ((const struct optim_span *)b)->off;
	return x < y ? -1 : x > y;
}

int step_decay_matrices(struct optim *op, const struct model *m, struct err *e)
{
	if (op->n != m->w.n)
		return err_set(e, "an optimizer for %zu weights, a model of %zu", op->n, m->w.n);
	int nt = model_tensors(&m->cfg, &m->w, NULL);
	struct model_tensor *ts = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *ts);
	struct optim_span *sp = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *sp);
	if (!ts || !sp) {
		free(ts), free(sp);
		return err_set(e, "out of memory for the model's %d tensors", nt);
	}
	model_tensors(&m->cfg, &m->w, ts);
	size_t ns = 0;
	for (int i = 0; i < nt; i++)
		if (ts[i].ndim == 2 && ts[i].data)
			sp[ns++] = (struct optim_span){ (size_t)(ts[i].data - m->w.mem),
			                                (size_t)ts[i].shape[0] * (size_t)ts[i].shape[1] };
	qsort(sp, ns, sizeof *sp, span_order);
	/* the layers' slices of one stacked tensor lie end to end: one span */
	size_t k = 0;
	for (size_t i = 0; i < ns; i++) {
		if (k > 0 && sp[k - 1].off + sp[k - 1].n == sp[i].off)
			sp[k - 1].n += sp[i].n;
		else
			sp[k++] = sp[i];
	}
	int rc = optim_set_decayed(op, sp, k, e);
	free(ts);
	free(sp);
	return rc;
}

/* The gradients zeroed, where they accumulate. */
static int grads_zero(struct model *m, struct model_gpu *gpu, struct err *e)
{
	if (gpu)
		return model_gpu_grads_zero(gpu, e);
	model_grads_zero(m);
	return 0;
}

int step_train(struct model *m, struct model_gpu *gpu, struct optim *op, const struct loss_opts *lo,
               const struct loss_totals *tot, int epochs, const struct microbatch *mbs, size_t n,
               const struct step_observer *obs, const struct step_reduce *red, struct step_result *r,
               struct err *e)
{
	memset(r, 0, sizeof *r);
	loss_stats_init(&r->first);
	loss_stats_init(&r->last);
	r->totals = *tot;
	int maxT = step_max_tokens(mbs, n);
	/* several ranks here, or a reduction: each rank's gradient on its own, then the sum in rank order */
	int groups = n > 0;
	for (size_t i = 1; i < n; i++)
		groups += mbs[i].rank != mbs[i - 1].rank;
	int on_host = groups > 1 || red;   /* the gradient summed on the host */
	if (gpu) {
		if (model_gpu_max_tokens(gpu) < maxT)
			return err_set(e, "a micro-batch of %d tokens, but the GPU model is sized for %d", maxT,
			               model_gpu_max_tokens(gpu));
		if (on_host && !m->g.mem && model_grads_alloc(m, e) < 0)
			return -1;
		if (on_host)   /* to the host and back every epoch: page-locked once, where the driver allows */
			model_gpu_pin(gpu, m->g.mem, m->g.n, NULL);
	} else if (step_prepare(m, mbs, n, e) < 0) {
		return -1;
	}
	size_t ng = m->w.n;
	float *sum = on_host ? malloc(ng * sizeof *sum) : NULL;
	struct mbctx c = { m, gpu, lo, tot, obs, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, r };
	/* GRPO_CUDA_FUSED_HEAD=1: GSPO's sequence ratio needs the whole sequence's ℓ first, so it keeps two phases */
	c.fused = gpu && lo->ratio == LOSS_RATIO_TOKEN && model_gpu_fused_head();
	c.lp = malloc((size_t)maxT * sizeof *c.lp), c.ent = malloc((size_t)maxT * sizeof *c.ent);
	c.w = c.fused ? malloc((size_t)maxT * sizeof *c.w) : NULL;
	c.flags = c.fused ? malloc((size_t)maxT) : NULL;
	c.dlp = malloc((size_t)maxT * sizeof *c.dlp), c.dent = malloc((size_t)maxT * sizeof *c.dent);
	c.old = lo->tis_cap > 0 ? calloc(n ? n : 1, sizeof *c.old) : NULL;
	int missing = 0;
	for (size_t i = 0; i < n && !missing; i++)
		missing = has_missing(&mbs[i]);
	c.fill = missing ? calloc(n, sizeof *c.fill) : NULL;
	int rc = 0;
	if (!c.lp || !c.ent || !c.dlp || !c.dent || (lo->tis_cap > 0 && !c.old) || (missing && !c.fill) ||
	    (on_host && !sum) || (c.fused && (!c.w || !c.flags)))
		rc = err_set(e, "out of memory for a step of %zu micro-batches", n);

	for (int ep = 0; ep < epochs && rc == 0; ep++) {
		struct loss_stats st;
		loss_stats_init(&st);
		if (sum)
			memset(sum, 0, ng * sizeof *sum);
		rc = grads_zero(m, gpu, e);
		for (size_t i = 0; i < n && rc == 0;) {
			/* one rank's micro-batches */
			size_t end = i + 1;
			while (end < n && mbs[end].rank == mbs[i].rank)
				end++;
			struct loss_stats sr;
			loss_stats_init(&sr);
			if (sum && !red && i > 0)
				rc = grads_zero(m, gpu, e);
			for (; i < end && rc == 0; i++) {
				if (has_loss(&mbs[i]))
					rc = run_mb(&c, ep, i, &mbs[i], &sr, e);
				if (obs)
					progress_show(obs->progress, (long long)(ep * n + i + 1), (long long)(epochs * n),
					              "micro-batches");
			}
			if (rc < 0)
				break;
			if (sum && !red) {
				if (gpu && model_gpu_grads_get(gpu, &m->g, e) < 0) {
					rc = -1;
					break;
				}
				for (size_t k = 0; k < ng; k++)
					sum[k] += m->g.mem[k];
			}
			loss_stats_add(&st, &sr);
		}
		if (rc < 0)
			break;
		if (red && gpu && model_gpu_grads_get(gpu, &m->g, e) < 0) {
			rc = -1;
			break;
		}
		if (red && red->fn(red->ctx, ep, m->g.mem, sum, ng, &st, e) < 0) {
			rc = -1;
			break;
		}
		if (sum)
			memcpy(m->g.mem, sum, ng * sizeof *sum);
		if (sum && gpu && model_gpu_grads_put(gpu, &m->g, e) < 0) {
			rc = -1;
			break;
		}
		double t2 = now();
		if ((gpu ? optim_step_gpu(op, gpu, &r->opt, e) : optim_step(op, m->w.mem, m->g.mem, &r->opt, e)) < 0) {
			rc = -1;
			break;
		}
		r->opt_s += now() - t2;
		if (ep == 0)
			r->first = st, r->first_opt = r->opt;
		r->last = st;
		r->epochs = ep + 1;
	}
	/* the weights and moments back where checkpoints are written from */
	if (gpu && r->epochs > 0) {
		double t3 = now();
		if (model_gpu_optim_get(gpu, m, op->m, op->v, rc < 0 ? NULL : e) < 0)
			rc = rc < 0 ? rc : -1;
		r->opt_s += now() - t3;
	}
	if (c.old)
		for (size_t i = 0; i < n; i++)
			free(c.old[i]);
	free(c.old);
	if (c.fill)
		for (size_t i = 0; i < n; i++)
			free(c.fill[i]);
	free(c.fill);
	free(c.lp);
	free(c.ent);
	free(c.dlp);
	free(c.dent);
	free(c.w);
	free(c.flags);
	free(sum);
	return rc;
}
