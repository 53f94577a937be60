/*
 * gradx.c: the file-system all-reduce of grpo-step --rank (see gradx.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "base/tempfile.h"
#include "train/gradx.h"
#include "train/step.h"

#define GRADX_MAGIC "GRPOGRD1"
#define GRADX_HEAD (8 + 4 + 4 + 8 + 4 + 4 + 8 + 3 * 8 + sizeof(struct loss_stats))

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
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

/* Wait for path: 0 there, -1 after the timeout (or a signal), naming rank. */
static int wait_for(const struct gradx *x, const char *path, int rank, const char *what, struct err *e)
{
	double end = now() + x->timeout_s;
	struct stat st;
	while (stat(path, &st) != 0) {
		if (errno != ENOENT)
			return err_sys(e, "%s", path);
		if (x->stop && *x->stop)
			return err_set(e, "%s: stopped by a signal while waiting for rank %d", path, rank);
		if (now() > end)
			return err_set(e, "step %lld: rank %d's %s did not appear within %gs (%s): is its "
			               "grpo-step --rank %d running? (--rank-timeout)", (long long)x->step, rank,
			               what, x->timeout_s, path, rank);
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
	double counts[3] = { x->local.seqs, x->local.tokens, x->local.mbs };
	int bad = buf_append(&b, GRADX_MAGIC, 8) | buf_put_u32(&b, 1) | buf_put_u32(&b, (uint32_t)x->rank) |
	          buf_put_u64(&b, (uint64_t)x->step) | buf_put_u32(&b, (uint32_t)epoch) | buf_put_u32(&b, 0) |
	          buf_put_u64(&b, n) | buf_append(&b, counts, sizeof counts) | buf_append(&b, st, sizeof *st);
	bad |= buf_append(&b, g, n * sizeof *g);
	uint64_t sum = bad ? 0 : fnv(0xcbf29ce484222325ull, b.data, b.len);
	bad |= buf_append(&b, &sum, sizeof sum);
	if (bad) {
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

/* Read rank's file of epoch into b, checked; its gradient, counts and stats point into b. */
static int load(const struct gradx *x, int epoch, int rank, size_t n, struct buf *b, const float **g,
                double counts[3], struct loss_stats *st, struct err *e)
{
	char path[PATH_MAX];
	if (file_of(x, "rank", epoch, rank, path, sizeof path, e) < 0 || buf_read_file(b, path, e) < 0)
		return -1;
	size_t want = GRADX_HEAD + n * sizeof(float) + 8;
	if (b->len != want || memcmp(b->data, GRADX_MAGIC, 8) != 0)
		return err_set(e, "%s: not a gradient of %zu weights (%zu bytes, expected %zu)", path, n, b->len,
		               want);
	uint64_t sum;
	memcpy(&sum, b->data + want - 8, 8);
	if (sum != fnv(0xcbf29ce484222325ull, b->data, want - 8))
		return err_set(e, "%s: checksum mismatch", path);
	uint32_t r32, ep32;
	uint64_t step;
	memcpy(&r32, b->data + 12, 4);
	memcpy(&step, b->data + 16, 8);
	memcpy(&ep32, b->data + 24, 4);
	if (r32 != (uint32_t)rank || step != (uint64_t)x->step || ep32 != (uint32_t)epoch)
		return err_set(e, "%s: holds rank %u, step %llu, epoch %u", path, r32, (unsigned long long)step,
		               ep32);
	memcpy(counts, b->data + 40, 3 * sizeof(double));
	memcpy(st, b->data + 64, sizeof *st);
	*g = (const float *)(b->data + GRADX_HEAD);
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

	memset(sum, 0, n * sizeof *sum);
	struct loss_stats total;
	struct loss_totals counted = { 0, 0, 0 };
	loss_stats_init(&total);
	struct buf b = { 0 };
	int rc = 0;
	for (int r = 0; r < x->ranks && rc == 0; r++) {
		const float *gr = g;
		double c[3] = { x->local.seqs, x->local.tokens, x->local.mbs };
		struct loss_stats sr = *st;
		buf_reset(&b);
		if (r != x->rank && load(x, epoch, r, n, &b, &gr, c, &sr, e) < 0) {
			rc = -1;
			break;
		}
		for (size_t k = 0; k < n; k++)
			sum[k] += gr[k];
		loss_stats_add(&total, &sr);
		counted.seqs += c[0], counted.tokens += c[1], counted.mbs += c[2];
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

int gradx_finish(const struct gradx *x, int epochs, struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	for (int r = 1; r < x->ranks; r++)
		if (file_of(x, "read", epochs - 1, r, path, sizeof path, e) < 0 ||
		    wait_for(x, path, r, "acknowledgement", e) < 0)
			return -1;
	if (dir_of(x, dir, sizeof dir, e) < 0)
		return -1;
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
	if (rc == 0)
		rc = fsys_rmdir(dir, e);
	snprintf(path, sizeof path, "%s/.grad", x->queue);
	fsys_rmdir(path, NULL);   /* fails while another step's exchange is under way */
	return rc;
}
