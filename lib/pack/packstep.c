/* packstep.c: see packstep.h. */
#include "pack/packstep.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "data/done.h"
#include "data/jsonview.h"
#include "data/mbbuild.h"
#include "spool/spool.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *const packstep_drop_names[PACKSTEP_N_DROP] = { "stale", "overlong", "empty" };

int packstep_drops_any(const struct packstep_drops *d)
{
	uint64_t any = d->truncated;
	for (int r = 0; r < PACKSTEP_N_DROP; r++)
		any += d->n[r];
	return any > 0;
}

int packstep_drops_json(struct buf *b, const struct packstep_drops *d)
{
	int bad = buf_printf(b, "\"dropped\":{");
	for (int r = 0; r < PACKSTEP_N_DROP; r++)
		bad |= buf_printf(b, "%s\"%s\":%llu", r ? "," : "", packstep_drop_names[r],
				  (unsigned long long)d->n[r]);
	bad |= buf_printf(b, "},\"truncated\":%llu,\"truncated_untrained\":%llu",
			  (unsigned long long)d->truncated, (unsigned long long)d->truncated_untrained);
	return bad ? -1 : 0;
}

int packstep_drops_metrics(struct buf *b, int64_t step, const struct packstep_drops *d)
{
	int bad = buf_printf(b, "{\"step\":%lld,\"sequences\":0,", (long long)step);
	bad |= packstep_drops_json(b, d);
	bad |= buf_printf(b, "}\n");
	return bad ? -1 : 0;
}

void packstep_stats_free(struct packstep_stats *st)
{
	free(st->rank_tokens);
	free(st->rank_cost);
	memset(st, 0, sizeof *st);
}

int packstep_done_exists(const char *queue, int64_t step, struct err *e)
{
	char p[PATH_MAX];
	struct stat sb;
	if (snprintf(p, sizeof p, "%s/step_%lld/DONE", queue, (long long)step) >= (int)sizeof p)
		return err_set(e, "%s: path too long", queue);
	if (stat(p, &sb) == 0)
		return 1;
	if (errno == ENOENT || errno == ENOTDIR)
		return 0;
	return err_sys(e, "%s", p);
}

int packstep_lock(const char *queue, int *fd, struct err *e)
{
	char p[PATH_MAX];
	*fd = -1;
	if (snprintf(p, sizeof p, "%s/.lock", queue) >= (int)sizeof p)
		return err_set(e, "%s: path too long", queue);
	if (fsys_mkdirs(queue, e) < 0)
		return -1;
	return fsys_try_lock(p, 1, fd, e);
}

/* 1 when the file at path holds exactly n bytes equal to p, 0 when not. */
static int same_bytes(const char *path, const uint8_t *p, size_t n, struct err *e)
{
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return -1;
	uint8_t chunk[65536];
	size_t at = 0;
	int same = 1;
	for (;;) {
		ssize_t k = fsys_read(fd, chunk, sizeof chunk, path, e);
		if (k < 0) {
			close(fd);
			return -1;
		}
		if (k == 0)
			break;
		if (at + (size_t)k > n || memcmp(chunk, p + at, (size_t)k) != 0) {
			same = 0;
			break;
		}
		at += (size_t)k;
	}
	close(fd);
	return same && at == n;
}

int packstep_next_step(const char *queue, int64_t *step, struct err *e)
{
	*step = 1;
	DIR *d = opendir(queue);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return err_sys(e, "%s", queue);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		if (strncmp(de->d_name, "step_", 5) != 0)
			continue;
		long long n = strtoll(de->d_name + 5, &end, 10);
		if (*end || end == de->d_name + 5 || n < 0)
			continue;
		int r = packstep_done_exists(queue, n, e);
		if (r < 0) {
			closedir(d);
			return -1;
		}
		if (r == 1 && n + 1 > *step)
			*step = n + 1;
	}
	closedir(d);
	return 0;
}

/* Publish QUEUE/step_N/DONE through a temporary in QUEUE/.tmp, never
 * replacing one that exists. */
static int publish_done(const struct packstep_opt *o, int64_t step, const struct buf *text,
			struct err *e)
{
	char tmpdir[PATH_MAX], dir[PATH_MAX], fin[PATH_MAX];
	if (snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", o->queue) >= (int)sizeof tmpdir ||
	    snprintf(dir, sizeof dir, "%s/step_%lld", o->queue, (long long)step) >= (int)sizeof dir ||
	    snprintf(fin, sizeof fin, "%s/DONE", dir) >= (int)sizeof fin)
		return err_set(e, "%s: path too long", o->queue);
	if (fsys_mkdirs(dir, e) < 0)
		return -1;
	int r = tempfile_write(fin, tmpdir, text->data, text->len, o->no_fsync ? TEMPFILE_NO_FSYNC : 0, e);
	if (r == 1)
		return err_set(e, "%s: already exists: step %lld was published meanwhile", fin, (long long)step);
	return r;
}

/* Remove dir and everything under it (a rolled-back step); *files counts
 * the files removed. */
static int remove_tree(const char *dir, uint32_t *files, int depth, struct err *e)
{
	char **v, p[PATH_MAX];
	size_t n;
	int r = fsys_list_dir(dir, FSYS_ANY, &v, &n, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct stat sb;
		if (snprintf(p, sizeof p, "%s/%s", dir, v[i]) >= (int)sizeof p)
			r = err_set(e, "%s: path too long", dir);
		else if ((r = fsys_stat(p, &sb, e)) == 1)
			r = 0;
		else if (r == 0 && S_ISDIR(sb.st_mode))
			r = depth > 8 ? err_set(e, "%s: too deep to remove", p) : remove_tree(p, files, depth + 1, e);
		else if (r == 0 && (r = fsys_unlink(p, e)) == 0)
			(*files)++;
	}
	fsys_free_names(v, n);
	return r < 0 || fsys_rmdir(dir, e) < 0 ? -1 : 0;
}

/*
 * Roll back QUEUE/step_N when it exists without DONE (see packstep.h): one
 * rename takes it out of the readers' sight, into QUEUE/.tmp/rollback.*,
 * then it is removed there, with what earlier rollbacks left when a crash
 * cut them short.
 */
static int rollback(const char *queue, int64_t step, uint32_t *files, struct err *e)
{
	char dir[PATH_MAX], tmpdir[PATH_MAX], to[PATH_MAX], uniq[160];
	struct stat sb;
	spool_unique_name(uniq, sizeof uniq);
	if (snprintf(dir, sizeof dir, "%s/step_%lld", queue, (long long)step) >= (int)sizeof dir ||
	    snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue) >= (int)sizeof tmpdir ||
	    snprintf(to, sizeof to, "%s/rollback.%s", tmpdir, uniq) >= (int)sizeof to)
		return err_set(e, "%s: path too long", queue);
	int r = fsys_stat(dir, &sb, e);
	if (r < 0)
		return -1;
	if (r == 0 && (fsys_mkdirs(tmpdir, e) < 0 || fsys_rename(dir, to, e) < 0))
		return -1;
	char **v;
	size_t n;
	if ((r = fsys_list_dir(tmpdir, FSYS_DIRS, &v, &n, e)) != 0)
		return r < 0 ? -1 : 0;
	for (size_t i = 0; i < n && r == 0; i++)
		if (strncmp(v[i], "rollback.", 9) == 0 &&
		    snprintf(to, sizeof to, "%s/%s", tmpdir, v[i]) < (int)sizeof to)
			r = remove_tree(to, files, 0, e);
	fsys_free_names(v, n);
	return r;
}

/*
 * A step this run began to publish and could not finish (a full disk, an
 * I/O error): its files are taken back at once, as the next run would
 * take them, so the queue is left as before rather than holding a step
 * without DONE that grpo-spool status counts as waiting. Not once DONE is
 * in: the step is whole then, and the error only says it may not be
 * durable. Best effort: what a second failure leaves, the next run rolls
 * back.
 */
static void abandon(const char *queue, int64_t step)
{
	uint32_t files = 0;
	if (packstep_done_exists(queue, step, NULL) == 0)
		rollback(queue, step, &files, NULL);
}

struct bin_out {
	uint32_t n_tokens;
	double cost;          /* of every span, padding included */
	uint64_t bytes;
	int existing;
};

struct bins_ctx {
	const struct packstep_opt *o;
	const struct pack_result *pr;
	const struct packstep_seq *s;
	const struct packstep_run *runs;
	int64_t step;
	int width;
	struct bin_out *out;            /* (k) */
	pthread_mutex_t mu;             /* next, failed, err; spool_open's name counter */
	uint32_t next;
	int failed;
	struct err err;
};

/* Build micro-batch b, then write it to the stream or publish it. */
static int do_bin(struct bins_ctx *c, uint32_t b, const struct traj **seqs, uint32_t *use,
		  struct buf *enc, int threaded, struct err *e)
{
	const struct pack_result *pr = c->pr;
	const struct packstep_opt *o = c->o;
	uint32_t ns = 0, P = o->pad_multiple > 1 ? o->pad_multiple : 1;
	for (uint32_t x = pr->bin_start[b]; x < pr->bin_start[b + 1]; x++) {
		seqs[ns] = c->s[pr->items[x]].t;
		use[ns++] = c->s[pr->items[x]].use;
	}
	struct microbatch mb;
	struct mbbuild_opt mo = { o->seq_len, P, c->step };
	int32_t rank = (int32_t)(b / pr->per_rank), index = (int32_t)(b % pr->per_rank);
	if (mb_build(&mb, seqs, use, ns, &mo, rank, index, e) < 0)
		return -1;
	const char *run = ns ? c->runs[c->s[pr->items[pr->bin_start[b]]].run].name : "";
	if (o->separate_runs && run[0] && !(mb.run = strdup(run))) {
		mb_free(&mb);
		return err_set(e, "out of memory");
	}
	struct bin_out *bo = &c->out[b];
	bo->n_tokens = mb.n_tokens;
	for (uint32_t q = 0; q < mb.n_seq_lens; q++)
		bo->cost += pack_cost_of(&o->cost, mb.seq_lens[q]);
	int rc = -1;
	if (!o->queue) {
		rc = sfile_write_mb(o->writer, &mb, e);
		goto done;
	}
	struct sfile_writer w;
	char name[64];
	snprintf(name, sizeof name, "mb_%0*d.zst", c->width, index);
	buf_reset(enc);
	if (sfile_writer_init(&w, sfile_sink_buf, enc, o->level, e) < 0)
		goto done;
	int bad = sfile_write_mb(&w, &mb, e) < 0 || sfile_writer_finish(&w, e) < 0;
	sfile_writer_free(&w);
	if (bad)
		goto done;
	struct spool_out so;
	if (threaded)
		pthread_mutex_lock(&c->mu);
	int r = spool_open(&so, o->queue, c->step, rank, name, e);
	if (threaded)
		pthread_mutex_unlock(&c->mu);
	if (r < 0)
		goto done;
	so.no_fsync = o->no_fsync;
	if (spool_write(&so, enc->data, enc->len, e) < 0) {
		spool_abort(&so);
		goto done;
	}
	if ((r = spool_commit(&so, e)) < 0)
		goto done;
	if (r == 1) {
		/* Published before: a re-run after a crash makes the same bytes;
		 * anything else is someone else's step, not ours to complete. */
		char path[PATH_MAX];
		spool_out_path(&so, path, sizeof path);
		int same = same_bytes(path, enc->data, enc->len, e);
		if (same < 0)
			goto done;
		if (!same) {
			err_set(e, "%s: already published with different contents (another packer, or "
				"other input or options, wrote this step)", path);
			goto done;
		}
	}
	bo->existing = r == 1;
	bo->bytes = enc->len;
	rc = 0;
done:
	mb_free(&mb);
	if (rc < 0)
		err_prefix(e, "step %lld rank %d micro-batch %d", (long long)c->step, rank, index);
	return rc;
}

static void *bin_worker(void *arg)
{
	struct bins_ctx *c = arg;
	const struct pack_result *pr = c->pr;
	uint32_t most = 0;
	for (uint32_t b = 0; b < pr->k; b++)
		if (pr->bin_start[b + 1] - pr->bin_start[b] > most)
			most = pr->bin_start[b + 1] - pr->bin_start[b];
	const struct traj **seqs = malloc((most ? most : 1) * sizeof *seqs);
	uint32_t *use = malloc((most ? most : 1) * sizeof *use);
	struct buf enc = { 0 };
	struct err e;
	for (;;) {
		pthread_mutex_lock(&c->mu);
		uint32_t b = c->next++;
		int stop = c->failed || b >= pr->k;
		if (!stop && (!seqs || !use)) {
			err_set(&c->err, "out of memory");
			c->failed = stop = 1;
		}
		pthread_mutex_unlock(&c->mu);
		if (stop)
			break;
		if (do_bin(c, b, seqs, use, &enc, 1, &e) < 0) {
			pthread_mutex_lock(&c->mu);
			if (!c->failed)
				c->err = e;
			c->failed = 1;
			pthread_mutex_unlock(&c->mu);
		}
	}
	free(seqs), free(use);
	buf_free(&enc);
	return NULL;
}

/*
 * Every micro-batch of the step. A stream is written in order by this
 * thread. Publishing into a queue spends most of its time waiting on fsync,
 * one file after another, so it runs on PACK_THREADS threads, which also
 * share the compression; names and contents do not depend on the order.
 * With GRPO_FSYS_CRASH_AT, GRPO_FSYS_FAIL_AT or GRPO_FSYS_TRACE set (crash
 * and fault tests count system calls, and need the same sequence every
 * time) one thread.
 */
#define PACK_THREADS 8
static int write_bins(struct bins_ctx *c, struct err *e)
{
	uint32_t nt = c->o->queue ? PACK_THREADS : 1;
	if (getenv("GRPO_FSYS_CRASH_AT") || getenv("GRPO_FSYS_FAIL_AT") || getenv("GRPO_FSYS_TRACE") ||
	    c->pr->k < 2)
		nt = 1;
	if (nt > c->pr->k)
		nt = c->pr->k;
	pthread_t th[PACK_THREADS];
	pthread_mutex_init(&c->mu, NULL);
	uint32_t started = 0;
	if (nt > 1)
		for (; started < nt; started++)
			if (pthread_create(&th[started], NULL, bin_worker, c) != 0)
				break;
	if (started == 0)
		bin_worker(c);   /* threads unavailable: do it here */
	for (uint32_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&c->mu);
	if (c->failed) {
		*e = c->err;
		return -1;
	}
	return 0;
}

/* The packer's view of the sequences: items and options (it: n entries). */
static void pack_input(const struct packstep_opt *o, const struct packstep_seq *s, uint32_t n,
		       struct pack_item *it, struct pack_opt *po)
{
	uint32_t P = o->pad_multiple > 1 ? o->pad_multiple : 1;
	for (uint32_t i = 0; i < n; i++)
		it[i] = (struct pack_item){ s[i].use, s[i].run, pack_cost_of(&o->cost, s[i].use) };
	*po = (struct pack_opt){ o->seq_len, o->ranks, o->separate_runs, pack_cost_of(&o->cost, P) };
}

int packstep_fill_cut(const struct packstep_opt *o, const struct packstep_seq *s, uint32_t n,
		      const uint32_t *unit_of, uint32_t n_units, double F, uint8_t *keep, struct err *e)
{
	struct pack_item *it = malloc((n ? n : 1) * sizeof *it);
	struct pack_opt po;
	if (!it)
		return err_set(e, "out of memory");
	pack_input(o, s, n, it, &po);
	int r = pack_fill_cut(it, n, unit_of, n_units, &po, F, keep, e);
	free(it);
	return r;
}

/* The step's DONE manifest (data/done.h) as one JSON line: its totals,
 * the loss tokens of every rank among them, and the packer's bookkeeping. */
static int manifest(struct buf *man, const struct packstep_opt *o, int64_t step, const struct pack_result *pr,
		    const struct packstep_stats *st, uint32_t n, const struct packstep_seq *s,
		    const struct packstep_run *runs, uint32_t n_runs, uint32_t next_run,
		    const struct packstep_input *inputs, uint32_t n_inputs, const struct done_job *job,
		    const struct packstep_drops *drops)
{
	struct done_manifest m = {
		.step = step, .ranks = o->ranks, .micro_batches_per_rank = pr->per_rank, .sequences = n,
		.dummies = pr->dummies, .tokens = st->tokens, .pad_tokens = st->pad_tokens,
		.dummy_tokens = st->dummy_tokens, .dropped_stale = drops->n[PACKSTEP_STALE],
		.dropped_overlong = drops->n[PACKSTEP_OVERLONG], .dropped_empty = drops->n[PACKSTEP_EMPTY],
		.truncated = drops->truncated, .truncated_untrained = drops->truncated_untrained,
		.next_run = n_runs ? (char *)runs[next_run % n_runs].name : NULL,
	};
	for (uint32_t i = 0; i < n; i++)
		m.loss_tokens += mb_trained_tokens(s[i].t, s[i].use);
	/* borrowed strings: the manifest is only formatted, never freed */
	m.runs = calloc(n_runs + 1, sizeof *m.runs);
	m.inputs = calloc(n_inputs + 1, sizeof *m.inputs);
	m.inputs_hash = calloc(n_inputs + 1, sizeof *m.inputs_hash);
	m.partial = calloc(n_inputs + 1, sizeof *m.partial);
	int rc = -1;
	if (m.runs && m.inputs && m.inputs_hash && m.partial) {
		/* every run known, so that one absent from this step keeps its progress */
		for (uint32_t q = 0; q < n_runs; q++)
			m.runs[m.n_runs++] = (struct done_run){ (char *)runs[q].name, runs[q].seqs, runs[q].tokens,
								 runs[q].seqs_total, runs[q].run_step,
								 (int)runs[q].ready };
		for (uint32_t q = 0; q < n_inputs; q++) {
			if (inputs[q].finished) {
				m.inputs_hash[m.n_inputs] = inputs[q].hash;
				m.inputs[m.n_inputs++] = inputs[q].name;
			} else {
				m.partial[m.n_partial++] = (struct done_partial){ inputs[q].name, inputs[q].done,
										   inputs[q].n_done, inputs[q].hash };
			}
		}
		if (job) {
			m.has_job = 1;
			m.job = *job;
		}
		rc = done_format(man, &m);
	}
	free(m.runs);
	free(m.inputs);
	free(m.inputs_hash);
	free(m.partial);
	return rc;
}

int packstep_run(const struct packstep_opt *o, int64_t step, const struct packstep_seq *s, uint32_t n,
		 struct packstep_run *runs, uint32_t n_runs, uint32_t next_run, uint64_t batch_size,
		 const struct packstep_input *inputs, uint32_t n_inputs, const struct done_job *job,
		 const struct packstep_drops *drops, struct packstep_stats *st, struct err *e)
{
	memset(st, 0, sizeof *st);
	st->step = step;
	st->ranks = o->ranks;
	if (o->queue) {
		int r = packstep_done_exists(o->queue, step, e);
		if (r < 0)
			return -1;
		if (r == 1)
			return err_set(e, "%s/step_%lld/DONE: step %lld is already published", o->queue,
				       (long long)step, (long long)step);
		if (step < o->newest_done)
			return err_set(e, "%s: step %lld comes before step %lld, the newest published: the next "
				       "run reads what was packed from the newest manifest only, and would pack "
				       "this step's sequences again; give --step %lld or more, or no --step",
				       o->queue, (long long)step, (long long)o->newest_done,
				       (long long)o->newest_done + 1);
		if (rollback(o->queue, step, &st->rolled_back, e) < 0)
			return -1;
	}
	struct pack_item *it = malloc((n ? n : 1) * sizeof *it);
	struct buf man = { 0 };
	struct pack_result pr = { 0 };
	int rc = -1;
	if (!it) {
		err_set(e, "out of memory");
		goto out;
	}
	struct pack_opt po;
	pack_input(o, s, n, it, &po);
	double t0 = now_s();
	if (pack_items(it, n, &po, &pr, e) < 0)
		goto out;
	st->pack_s = now_s() - t0;
	st->per_rank = pr.per_rank;
	st->dummies = pr.dummies;
	st->sequences = n;
	st->lower_bound = pr.lower_bound;
	st->refine_moves = pr.refine_moves;
	st->rank_tokens = calloc(o->ranks, sizeof *st->rank_tokens);
	st->rank_cost = calloc(o->ranks, sizeof *st->rank_cost);
	if (!st->rank_tokens || !st->rank_cost) {
		err_set(e, "out of memory");
		goto out;
	}

	t0 = now_s();
	uint64_t bytes0 = o->writer ? o->writer->file_bytes : 0;
	struct bins_ctx bc = { .o = o, .pr = &pr, .s = s, .runs = runs, .step = step, .width = 4 };
	for (uint32_t k = pr.per_rank; k >= 10000; k /= 10)
		bc.width++;
	bc.out = calloc(pr.k, sizeof *bc.out);
	if (!bc.out) {
		err_set(e, "out of memory");
		goto out;
	}
	if (write_bins(&bc, e) < 0) {
		free(bc.out);
		if (o->queue)
			abandon(o->queue, step);
		goto out;
	}
	/* totals in bin order, so that sums of floats come out the same every time */
	for (uint32_t b = 0; b < pr.k; b++) {
		uint32_t rank = b / pr.per_rank;
		st->tokens += pr.bin_len[b];
		if (pr.bin_start[b] == pr.bin_start[b + 1])
			st->dummy_tokens += bc.out[b].n_tokens;
		else
			st->pad_tokens += bc.out[b].n_tokens - pr.bin_len[b];
		st->rank_tokens[rank] += bc.out[b].n_tokens;
		st->rank_cost[rank] += bc.out[b].cost;
		st->bytes += bc.out[b].bytes;
		st->files_existing += bc.out[b].existing;
	}
	free(bc.out);
	/* Against T as the user gave it: when P does not divide T, the tokens
	 * rounding leaves unusable are lost fill, and the figures say so. */
	double T = o->seq_len_given ? o->seq_len_given : o->seq_len;
	uint32_t kb = pr.lower_bound ? (pr.lower_bound + o->ranks - 1) / o->ranks * o->ranks : o->ranks;
	st->fill = (double)st->tokens / ((double)pr.k * T);
	st->fill_bound = (double)st->tokens / ((double)kb * T);

	/* run progress */
	for (uint32_t q = 0; q < n_runs; q++)
		runs[q].seqs = runs[q].ready = 0, runs[q].tokens = 0;
	for (uint32_t i = 0; i < n; i++) {
		runs[s[i].run].seqs++;
		runs[s[i].run].tokens += s[i].use;
	}
	for (uint32_t q = 0; q < n_runs; q++) {
		if (runs[q].seqs == 0)
			continue;
		runs[q].seqs_total += runs[q].seqs;
		int64_t now = batch_size ? (int64_t)(runs[q].seqs_total / batch_size) : runs[q].run_step + 1;
		runs[q].ready = now > runs[q].run_step;
		runs[q].run_step = now;
	}

	if (o->queue) {
		if (manifest(&man, o, step, &pr, st, n, s, runs, n_runs, next_run, inputs, n_inputs, job, drops) < 0) {
			err_set(e, "out of memory");
			abandon(o->queue, step);
			goto out;
		}
		if (publish_done(o, step, &man, e) < 0) {
			abandon(o->queue, step);
			goto out;
		}
	} else {
		if (sfile_writer_flush(o->writer, e) < 0)
			goto out;
		st->bytes = o->writer->file_bytes - bytes0;
	}
	st->write_s = now_s() - t0;
	rc = 0;
out:
	free(it);
	buf_free(&man);
	pack_result_free(&pr);
	return rc;
}

int packstep_metrics(struct buf *b, const struct packstep_stats *st, const struct packstep_run *runs,
		     uint32_t n_runs, const struct packstep_drops *drops)
{
	double tmax = 0, tsum = 0, cmax = 0, csum = 0;
	for (uint32_t q = 0; q < st->ranks; q++) {
		tsum += (double)st->rank_tokens[q];
		csum += st->rank_cost[q];
		tmax = (double)st->rank_tokens[q] > tmax ? (double)st->rank_tokens[q] : tmax;
		cmax = st->rank_cost[q] > cmax ? st->rank_cost[q] : cmax;
	}
	int bad = buf_printf(b, "{\"step\":%lld,\"ranks\":%u,\"micro_batches_per_rank\":%u,\"dummies\":%u,"
			     "\"sequences\":%u,\"tokens\":%llu,\"pad_tokens\":%llu,\"dummy_tokens\":%llu,"
			     "\"fill\":%.6f,\"fill_bound\":%.6f,\"rank_tokens\":[",
			     (long long)st->step, st->ranks, st->per_rank, st->dummies, st->sequences,
			     (unsigned long long)st->tokens, (unsigned long long)st->pad_tokens,
			     (unsigned long long)st->dummy_tokens, st->fill, st->fill_bound);
	for (uint32_t q = 0; q < st->ranks; q++)
		bad |= buf_printf(b, "%s%llu", q ? "," : "", (unsigned long long)st->rank_tokens[q]);
	bad |= buf_printf(b, "],\"rank_cost\":[");
	for (uint32_t q = 0; q < st->ranks; q++)
		bad |= buf_printf(b, "%s%.6g", q ? "," : "", st->rank_cost[q]);
	bad |= buf_printf(b, "],\"rank_tokens_max_mean\":%.6f,\"rank_cost_max_mean\":%.6f,",
			  tsum > 0 ? tmax / (tsum / st->ranks) : 1.0, csum > 0 ? cmax / (csum / st->ranks) : 1.0);
	bad |= packstep_drops_json(b, drops);
	bad |= buf_printf(b, ",\"runs\":[");
	for (uint32_t q = 0, first = 1; q < n_runs; q++) {
		if (runs[q].seqs == 0)
			continue;
		bad |= buf_printf(b, "%s{\"run\":", first ? "" : ",");
		bad |= json_print_string(b, runs[q].name);
		bad |= buf_printf(b, ",\"sequences\":%u,\"tokens\":%llu,\"run_step\":%lld,\"ready\":%s}",
				  runs[q].seqs, (unsigned long long)runs[q].tokens, (long long)runs[q].run_step,
				  runs[q].ready ? "true" : "false");
		first = 0;
	}
	bad |= buf_printf(b, "],\"refine_moves\":%u,\"pack_s\":%.6f,\"write_s\":%.6f,\"bytes\":%llu}\n",
			  st->refine_moves, st->pack_s, st->write_s, (unsigned long long)st->bytes);
	return bad ? -1 : 0;
}


int packstep_load_runs(const char *queue, int64_t step, struct packstep_run **runs, uint32_t *n,
		       uint32_t *next_run, struct err *e)
{
	struct done_manifest m;
	*runs = NULL;
	*n = *next_run = 0;
	int got = done_load(queue, step, &m, e);
	if (got <= 0)
		return got;
	struct packstep_run *r = calloc(m.n_runs + 1, sizeof *r);
	if (!r) {
		done_free(&m);
		return err_set(e, "out of memory");
	}
	for (uint32_t q = 0; q < m.n_runs; q++) {
		r[q].name = m.runs[q].run;   /* taken over */
		m.runs[q].run = NULL;
		r[q].seqs_total = m.runs[q].sequences_total;
		r[q].run_step = m.runs[q].run_step;
		if (m.next_run && strcmp(m.next_run, r[q].name) == 0)
			*next_run = q;
	}
	*runs = r;
	*n = m.n_runs;
	done_free(&m);
	return 0;
}

void packstep_inputs_free(struct packstep_input *in, uint32_t n)
{
	for (uint32_t q = 0; in && q < n; q++) {
		free(in[q].name);
		free(in[q].done);
	}
	free(in);
}

int packstep_load_inputs(const char *queue, int64_t step, struct packstep_input **out, uint32_t *n,
			 struct err *e)
{
	struct done_manifest m;
	*out = NULL;
	*n = 0;
	int got = done_load(queue, step, &m, e);
	if (got <= 0)
		return got;
	struct packstep_input *in = calloc(m.n_inputs + m.n_partial + 1, sizeof *in);
	if (!in) {
		done_free(&m);
		return err_set(e, "out of memory");
	}
	uint32_t q = 0;
	/* the manifest's strings and ordinals are taken over, not copied */
	for (uint32_t x = 0; x < m.n_inputs; x++, q++) {
		in[q].name = m.inputs[x];
		m.inputs[x] = NULL;
		in[q].finished = 1;
		in[q].hash = m.inputs_hash ? m.inputs_hash[x] : 0;
	}
	for (uint32_t x = 0; x < m.n_partial; x++, q++) {
		in[q].name = m.partial[x].file;
		in[q].done = m.partial[x].done;
		in[q].n_done = m.partial[x].n_done;
		in[q].hash = m.partial[x].hash;
		m.partial[x].file = NULL;
		m.partial[x].done = NULL;
	}
	done_free(&m);
	*out = in;
	*n = q;
	return 0;
}

int packstep_cost_load(const char *dir, struct pack_cost *c, struct err *e)
{
	char path[PATH_MAX];
	struct buf b = { 0 };
	if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
		return err_set(e, "%s: path too long", dir);
	if (buf_read_file(&b, path, e) < 0)
		return -1;
	int rc = pack_cost_from_config((const char *)b.data, b.len, path, c, e);
	buf_free(&b);
	return rc;
}
