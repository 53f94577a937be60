/*
 * gradx.c: the file-system all-reduce of grpo-step --rank (see gradx.h).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "spool/spool.h"
#include "train/gradx.h"
#include "train/step.h"

/* The statistics after the counts, in the file's order. */
static const size_t stat_field[] = {
	offsetof(struct loss_stats, loss), offsetof(struct loss_stats, policy),
	offsetof(struct loss_stats, kl), offsetof(struct loss_stats, entropy),
	offsetof(struct loss_stats, tokens), offsetof(struct loss_stats, seqs),
	offsetof(struct loss_stats, kl_sum), offsetof(struct loss_stats, ent_sum),
	offsetof(struct loss_stats, ratio_sum), offsetof(struct loss_stats, ratio_min),
	offsetof(struct loss_stats, ratio_max), offsetof(struct loss_stats, clip_low),
	offsetof(struct loss_stats, clip_high), offsetof(struct loss_stats, dual_clipped),
	offsetof(struct loss_stats, tis_capped), offsetof(struct loss_stats, diff_sum),
	offsetof(struct loss_stats, diff_abs_sum),
};
/* a field added to struct loss_stats must be added above, and the version raised */
_Static_assert(sizeof(struct loss_stats) == 17 * sizeof(double) && 3 + 17 == GRADX_NSTAT,
               "struct loss_stats and the gradient file's statistics differ");

static double *stat_at(struct loss_stats *st, size_t i)
{
	return (double *)((char *)st + stat_field[i]);
}

/*
 * Little-endian by shifts, whatever the host: one code path, the one the
 * tests run, which GCC and Clang at -O2 turn into plain loads and stores on
 * a little-endian host.
 */
static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16), p[3] = (unsigned char)(v >> 24);
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put_f64(unsigned char *p, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	put64(p, u);
}

static double get_f64(const unsigned char *p)
{
	uint64_t u = get64(p);
	double v;
	memcpy(&v, &u, 8);
	return v;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

uint64_t gradx_opts_hash(const struct loss_opts *lo, const struct optim_opts *oo, int epochs,
                         int mask_truncated)
{
	char text[1024];
	int len = snprintf(text, sizeof text,
	                   "ratio=%s clip=%.9g,%.9g dual=%.9g cispo=%d kl=%s,%.9g beta=%.9g entropy=%.9g tis=%.9g "
	                   "agg=%s max_len=%d epochs=%d mask_truncated=%d optim=%d lr=%.17g warmup=%d "
	                   "schedule=%s total=%d wd=%.17g wd_on=%s betas=%.17g,%.17g eps=%.17g max_grad_norm=%.17g",
	                   loss_ratio_names[lo->ratio], lo->clip_low, lo->clip_high, lo->dual_clip, lo->cispo,
	                   loss_kl_names[lo->kl], lo->kl_clamp, lo->beta, lo->entropy_coef, lo->tis_cap, loss_agg_name(lo->agg),
	                   lo->agg == LOSS_AGG_DR_GRPO ? lo->max_len : 0, epochs, mask_truncated, (int)oo->kind,
	                   oo->lr, oo->warmup_steps, lr_schedule_name(oo->schedule), oo->total_steps,
	                   oo->weight_decay, oo->weight_decay > 0 ? wd_on_name(oo->wd_on) : "-", oo->beta1, oo->beta2, oo->eps, oo->max_grad_norm);
	if (len < 0)   /* printf of a double can run out of memory */
		return 0;
	return fnv1a((const unsigned char *)text, len < (int)sizeof text ? (size_t)len : sizeof text - 1);
}

static size_t file_size(uint64_t n)
{
	return GRADX_HEAD + 8 * (size_t)GRADX_NSTAT + 4 * (size_t)n;
}

int gradx_encode(struct buf *b, const struct gradx_head *h, const struct loss_totals *counts,
                 const struct loss_stats *st, const float *g)
{
	if (h->n > (SIZE_MAX - GRADX_HEAD - 8 * GRADX_NSTAT) / 4)
		return -1;
	size_t size = file_size(h->n);
	if (buf_reserve(b, size) < 0)
		return -1;
	unsigned char *p = b->data + b->len, *q = p + GRADX_HEAD;
	memcpy(p, GRADX_MAGIC, 8);
	put32(p + 8, GRADX_VERSION);
	put32(p + 12, (uint32_t)h->rank);
	put64(p + 16, (uint64_t)h->step);
	put32(p + 24, (uint32_t)h->epoch);
	put32(p + 28, GRADX_NSTAT);
	put64(p + 32, h->n);
	put64(p + 40, h->opts);
	put_f64(q, counts->seqs), put_f64(q + 8, counts->tokens), put_f64(q + 16, counts->mbs);
	q += 24;
	struct loss_stats s = *st;
	for (size_t i = 0; i < GRADX_NSTAT - 3; i++, q += 8)
		put_f64(q, *stat_at(&s, i));
	for (uint64_t k = 0; k < h->n; k++, q += 4) {
		uint32_t u;
		memcpy(&u, &g[k], 4);
		put32(q, u);
	}
	put64(p + 48, fnv1a(p + GRADX_HEAD, size - GRADX_HEAD));
	b->len += size;
	return 0;
}

int gradx_decode(const unsigned char *data, size_t len, const char *path, const struct gradx_head *want,
                 struct loss_totals *counts, struct loss_stats *st, float *acc, struct err *e)
{
	if (len > 0 && memcmp(data, GRADX_MAGIC, len < 8 ? len : 8) != 0)
		return err_set(e, "%s: not a gradient file of grpo-step --rank (bad magic)", path);
	if (len < 12)
		return err_set(e, "%s: short file: %zu bytes, less than a header (%d)", path, len, GRADX_HEAD);
	uint32_t version = get32(data + 8);
	if (version != GRADX_VERSION)
		return err_set(e, "%s: a gradient file of version %u, and this grpo-step reads version %d: "
		               "is every rank's grpo-step the same?", path, version, GRADX_VERSION);
	if (len < GRADX_HEAD)
		return err_set(e, "%s: short file: %zu bytes, less than a header (%d)", path, len, GRADX_HEAD);
	uint32_t rank = get32(data + 12), epoch = get32(data + 24), nstat = get32(data + 28);
	uint64_t step = get64(data + 16), n = get64(data + 32), opts = get64(data + 40);
	if (rank != (uint32_t)want->rank || step != (uint64_t)want->step || epoch != (uint32_t)want->epoch)
		return err_set(e, "%s: holds rank %u, step %lld, epoch %u; expected rank %d, step %lld, epoch %d", path,
		               rank, (long long)step, epoch, want->rank, (long long)want->step, want->epoch);
	if (opts != want->opts)
		return err_set(e, "%s: rank %u's options differ from this rank's (options hash %016llx, here "
		               "%016llx): its gradient is of another loss or optimizer step; give every rank "
		               "the same --epochs, loss and optimizer options (grpo-step(1), --rank)", path, rank,
		               (unsigned long long)opts, (unsigned long long)want->opts);
	if (n != want->n || nstat != GRADX_NSTAT)
		return err_set(e, "%s: wrong count: a gradient of %llu elements and %u statistics, expected %llu "
		               "and %d: do the ranks train the same model?", path, (unsigned long long)n, nstat,
		               (unsigned long long)want->n, GRADX_NSTAT);
	size_t size = file_size(n);
	if (len < size)
		return err_set(e, "%s: short file: %zu bytes, expected %zu", path, len, size);
	if (len > size)
		return err_set(e, "%s: %zu bytes, expected %zu: trailing bytes", path, len, size);
	uint64_t sum = fnv1a(data + GRADX_HEAD, size - GRADX_HEAD), said = get64(data + 48);
	if (sum != said)
		return err_set(e, "%s: checksum mismatch: the payload hashes to %016llx, the header says %016llx",
		               path, (unsigned long long)sum, (unsigned long long)said);

	const unsigned char *q = data + GRADX_HEAD;
	counts->seqs = get_f64(q), counts->tokens = get_f64(q + 8), counts->mbs = get_f64(q + 16);
	q += 24;
	for (size_t i = 0; i < GRADX_NSTAT - 3; i++, q += 8)
		*stat_at(st, i) = get_f64(q);
	for (uint64_t k = 0; k < n; k++, q += 4) {
		uint32_t u = get32(q);
		float v;
		memcpy(&v, &u, 4);
		acc[k] += v;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dir_of(const struct gradx *x, char *out, size_t size, struct err *e)
{
	if (snprintf(out, size, "%s/.grad/step_%lld", x->queue, (long long)x->step) >= (int)size)
		return err_set(e, "%s: path too long", x->queue);
	return 0;
}

static int file_of(const struct gradx *x, const char *what, int epoch, int rank, char *out, size_t size,
                   struct err *e)
{
	char dir[PATH_MAX];
	if (dir_of(x, dir, sizeof dir, e) < 0)
		return -1;
	if (snprintf(out, size, "%s/e%d.%s_%d", dir, epoch, what, rank) >= (int)size)
		return err_set(e, "%s: path too long", dir);
	return 0;
}

/* Wait for path: 0 there, -1 after the timeout (or a signal), naming rank.
 * Either is "later": nothing was published, and the same step run again
 * once the peer runs goes on (a cron job's ranks need not start together). */
static int wait_for(const struct gradx *x, const char *path, int rank, const char *what, struct err *e)
{
	double end = now() + x->timeout_s;
	struct stat st;
	while (stat(path, &st) != 0) {
		if (errno != ENOENT)
			return err_sys(e, "%s", path);
		if (x->stop && *x->stop) {
			err_set(e, "%s: stopped by a signal while waiting for rank %d", path, rank);
			return err_later(e);
		}
		if (now() > end) {
			err_set(e, "step %lld: rank %d's %s did not appear within %gs (%s): is its "
			        "grpo-step --rank %d running? (--rank-timeout)", (long long)x->step, rank,
			        what, x->timeout_s, path, rank);
			return err_later(e);
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int publish(const struct gradx *x, int epoch, const float *g, size_t n, const struct loss_stats *st,
                   struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	if (dir_of(x, dir, sizeof dir, e) < 0 || file_of(x, "rank", epoch, x->rank, path, sizeof path, e) < 0 ||
	    fsys_mkdirs(dir, e) < 0)
		return -1;
	struct buf b = { 0 };
	struct gradx_head h = { x->rank, epoch, x->step, n, x->opts };
	if (gradx_encode(&b, &h, &x->local, st, g) < 0) {
		buf_free(&b);
		return err_set(e, "%s: out of memory", path);
	}
	struct tempfile *t = tempfile_create(path, NULL, e);
	int r = t ? 0 : -1;
	if (t && fsys_write_all(tempfile_fd(t), b.data, b.len, path, e) < 0) {
		tempfile_delete(t);
		r = -1;
	} else if (t) {
		r = tempfile_commit(t, TEMPFILE_REPLACE, e) < 0 ? -1 : 0;
	}
	buf_free(&b);
	return r;
}

/* Add rank's gradient of epoch into sum (n), its counts into counted and its
 * statistics into total, through b. */
static int load(const struct gradx *x, int epoch, int rank, float *sum, size_t n, struct buf *b,
                struct loss_totals *counted, struct loss_stats *total, struct err *e)
{
	char path[PATH_MAX];
	buf_reset(b);
	if (file_of(x, "rank", epoch, rank, path, sizeof path, e) < 0 || buf_read_file(b, path, e) < 0)
		return -1;
	struct gradx_head want = { rank, epoch, x->step, n, x->opts };
	struct loss_totals c;
	struct loss_stats st;
	if (gradx_decode(b->data, b->len, path, &want, &c, &st, sum, e) < 0)
		return -1;
	counted->seqs += c.seqs, counted->tokens += c.tokens, counted->mbs += c.mbs;
	loss_stats_add(total, &st);
	return 0;
}

int gradx_reduce(void *ctx, int epoch, const float *g, float *sum, size_t n, struct loss_stats *st,
                 struct err *e)
{
	const struct gradx *x = ctx;
	if (publish(x, epoch, g, n, st, e) < 0)
		return -1;
	char path[PATH_MAX];
	for (int r = 0; r < x->ranks; r++)
		if (r != x->rank &&
		    (file_of(x, "rank", epoch, r, path, sizeof path, e) < 0 || wait_for(x, path, r, "gradient", e) < 0))
			return -1;

	/* from zeros in rank order, this rank's from memory: the same bits in every process */
	memset(sum, 0, n * sizeof *sum);
	struct loss_stats total;
	struct loss_totals counted = { 0, 0, 0 };
	loss_stats_init(&total);
	struct buf b = { 0 };
	int rc = 0;
	for (int r = 0; r < x->ranks && rc == 0; r++) {
		if (r != x->rank) {
			rc = load(x, epoch, r, sum, n, &b, &counted, &total, e);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			sum[k] += g[k];
		counted.seqs += x->local.seqs, counted.tokens += x->local.tokens, counted.mbs += x->local.mbs;
		loss_stats_add(&total, st);
	}
	buf_free(&b);
	if (rc < 0)
		return -1;
	if (x->done && step_check(x->done_path, x->done, &counted, e) < 0)
		return -1;
	*st = total;
	if (x->rank != 0 && (file_of(x, "read", epoch, x->rank, path, sizeof path, e) < 0 ||
	                     tempfile_write(path, NULL, "", 0, TEMPFILE_REPLACE, e) < 0))
		return -1;
	return 0;
}

/* Remove the directory dir and the files in it. */
static int remove_dir(const char *dir, struct err *e)
{
	char path[PATH_MAX];
	char **names = NULL;
	size_t nn = 0;
	if (fsys_list_dir(dir, FSYS_FILES, &names, &nn, e) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < nn && rc == 0; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		rc = fsys_unlink(path, e);
	}
	fsys_free_names(names, nn);
	return rc == 0 ? fsys_rmdir(dir, e) : rc;
}

int gradx_finish(const struct gradx *x, int epochs, struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	for (int r = 1; r < x->ranks; r++)
		if (file_of(x, "read", epochs - 1, r, path, sizeof path, e) < 0 ||
		    wait_for(x, path, r, "acknowledgement", e) < 0)
			return -1;
	if (dir_of(x, dir, sizeof dir, e) < 0)
		return -1;
	int rc = remove_dir(dir, e);
	/* The exchanges of earlier steps that a rank 0 killed after publishing
	 * left behind, each as large as the model: every rank has read them,
	 * since each published its gradient of this step only after. */
	char grad[PATH_MAX], **names = NULL;
	size_t nn = 0;
	snprintf(grad, sizeof grad, "%s/.grad", x->queue);
	if (rc == 0 && fsys_list_dir(grad, FSYS_DIRS, &names, &nn, e) < 0)
		rc = -1;
	for (size_t i = 0; i < nn && rc == 0; i++) {
		int64_t k;
		if (spool_parse_step(names[i], &k) < 0 || k >= x->step)
			continue;
		snprintf(path, sizeof path, "%s/%s", grad, names[i]);
		rc = remove_dir(path, e);
	}
	fsys_free_names(names, nn);
	fsys_rmdir(grad, NULL);   /* fails while another step's exchange is under way */
	return rc;
}
