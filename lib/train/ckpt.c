/*
 * ckpt.c: publishing and loading policy/step_N checkpoints (see ckpt.h).
 */
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "base/path.h"
#include "base/tempfile.h"
#include "data/jsonview.h"
#include "model/model_config.h"
#include "spool/spool.h"
#include "train/ckpt.h"
#include "train/step.h"

/* Tokenizer files copied into every checkpoint when the input model has them. */
static const char *const tok_files[] = {
	"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
	"merges.txt", "added_tokens.json", "tokenizer.model", "chat_template.jinja",
};

static int step_path(char *out, size_t size, const char *queue, int64_t step)
{
	return snprintf(out, size, "%s/step_%lld", queue, (long long)step) >= (int)size ? -1 : 0;
}

int ckpt_exists(const char *queue, int64_t step, struct err *e)
{
	char p[PATH_MAX];
	if (step_path(p, sizeof p, queue, step) < 0)
		return err_set(e, "%s: path too long", queue);
	struct stat st;
	if (stat(p, &st) == 0)
		return 1;
	if (errno == ENOENT)
		return 0;
	return err_sys(e, "%s", p);
}

int ckpt_latest(const char *queue, int64_t below, int64_t *step, struct err *e)
{
	char **names = NULL;
	size_t n = 0;
	struct stat st;
	if (stat(queue, &st) < 0 && errno == ENOENT)
		return 1;
	if (fsys_list_dir(queue, FSYS_DIRS, &names, &n, e) < 0)
		return -1;
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t k;
		if (spool_parse_step(names[i], &k) < 0 || k > below)
			continue;
		if (!found || k > *step)
			*step = k;
		found = 1;
	}
	fsys_free_names(names, n);
	return found ? 0 : 1;
}

/* Copy src to the new file dst (fsynced), a MiB at a time: src may be a
 * model's weights, gigabytes that need not be in memory at once. */
static int copy_file(const char *src, const char *dst, struct err *e)
{
	enum { CHUNK = 1 << 20 };
	char *b = malloc(CHUNK);
	if (!b)
		return err_set(e, "out of memory copying %s", src);
	int in = fsys_open_read(src, e), out = in < 0 ? -1 : fsys_open_excl(dst, e);
	int r = out < 0 ? -1 : 0;
	ssize_t n;
	while (r == 0 && (n = fsys_read(in, b, CHUNK, src, e)) != 0)
		r = n < 0 || fsys_write_all(out, b, (size_t)n, dst, e) < 0 ? -1 : 0;
	if (r == 0 && fsys_fsync(out, dst, e) < 0)
		r = -1;
	if (out >= 0 && fsys_close(out, dst, r < 0 ? NULL : e) < 0)
		r = -1;
	if (in >= 0)
		close(in);
	free(b);
	return r;
}

/* Hard link, or copy where linking is not possible (another file system, no links).
 * A symlink is followed (a hub cache snapshot's files are relative links into
 * ../../blobs, which would dangle in the queue). */
static int link_or_copy(const char *src, const char *dst, struct err *e)
{
	if (linkat(AT_FDCWD, src, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return copy_file(src, dst, e);
}

/* A unique name QUEUE/.tmp/step_N.HOST.PID.TIME.K in tmp (tempfile.h's), QUEUE/.tmp made. */
static int tmp_name(const char *queue, int64_t step, char *tmp, size_t size, struct err *e)
{
	char dir[PATH_MAX], uniq[128];
	snprintf(dir, sizeof dir, "%s/.tmp", queue);
	if (fsys_mkdirs(dir, e) < 0)
		return -1;
	tempfile_unique_name(uniq, sizeof uniq);
	if (snprintf(tmp, size, "%s/step_%lld.%s", dir, (long long)step, uniq) >= (int)size)
		return err_set(e, "%s: path too long", dir);
	return 0;
}

/* A new temporary directory QUEUE/.tmp/step_N.UNIQUE in tmp. */
static int make_tmp(const char *queue, int64_t step, char *tmp, size_t size, struct err *e)
{
	if (tmp_name(queue, step, tmp, size, e) < 0)
		return -1;
	return fsys_mkdir(tmp, e) < 0 ? -1 : 0;
}

/* Remove the temporary directory tmp and what it holds (an abandoned
 * publish, a pruned step): 0, or -1 when some of it stays (e may be NULL). */
static int remove_tmp(const char *tmp, struct err *e)
{
	char **names = NULL;
	size_t n = 0;
	int r = fsys_list_dir(tmp, FSYS_FILES, &names, &n, e);
	if (r < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", tmp, names[i]);
		unlink(p);
	}
	fsys_free_names(names, n);
	if (rmdir(tmp) < 0 && errno != ENOENT)
		return err_sys(e, "%s: cannot remove directory", tmp);
	return 0;
}

/* fsync tmp, rename it to QUEUE/step_N without replacing, fsync QUEUE. */
static int finish(const char *queue, int64_t step, const char *tmp, struct err *e)
{
	char dst[PATH_MAX];
	if (step_path(dst, sizeof dst, queue, step) < 0)
		return err_set(e, "%s: path too long", queue);
	if (fsys_fsync_dir(tmp, e) < 0)
		return -1;
	int r = fsys_rename_noreplace(tmp, dst, e);
	if (r != 0)
		return r;
	/* published from here on, whatever becomes of the flush */
	return fsys_fsync_dir(queue, e) < 0 ? CKPT_UNFLUSHED : 0;
}

int ckpt_publish_initial(const char *queue, const char *src, struct err *e)
{
	int r = ckpt_exists(queue, 0, e);
	if (r != 0)
		return r;
	char tmp[PATH_MAX];
	if (make_tmp(queue, 0, tmp, sizeof tmp, e) < 0)
		return -1;
	char **names = NULL;
	size_t n = 0;
	if (fsys_list_dir(src, FSYS_FILES, &names, &n, e) < 0) {
		remove_tmp(tmp, NULL);
		return -1;
	}
	r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char a[PATH_MAX], b[PATH_MAX];
		/* the model alone: a run's optimizer state (an old run's policy
		 * step given as the model) would make the new run resume that run's
		 * AdamW moments and step count, where it starts afresh */
		if (names[i][0] == '.' || !strcmp(names[i], CKPT_OPTIM_FILE))
			continue;
		snprintf(a, sizeof a, "%s/%s", src, names[i]);
		snprintf(b, sizeof b, "%s/%s", tmp, names[i]);
		r = link_or_copy(a, b, e);
	}
	fsys_free_names(names, n);
	if (r == 0)
		r = finish(queue, 0, tmp, e);
	if (r != 0 && r != CKPT_UNFLUSHED)
		remove_tmp(tmp, NULL);
	return r;
}

/* Whether n bytes at off are the same in the open files fa and fb: 1, 0, or -1 (e says which read failed). */
static int same_bytes(int fa, const char *a, int fb, const char *b, off_t off, size_t n, struct err *e)
{
	enum { BLOCK = 1 << 14 };
	char x[BLOCK], y[BLOCK];
	while (n > 0) {
		size_t k = n < BLOCK ? n : BLOCK;
		ssize_t ra = pread(fa, x, k, off), rb = ra == (ssize_t)k ? pread(fb, y, k, off) : 0;
		if (ra != (ssize_t)k || rb != (ssize_t)k)
			return err_sys(e, "%s: read", ra != (ssize_t)k ? a : b);
		if (memcmp(x, y, k))
			return 0;
		off += (off_t)k;
		n -= k;
	}
	return 1;
}

/* Whether the files a and b look the same (see ckpt_initial_differs): 1, 0 or -1. */
static int same_file(const char *a, const struct stat *sa, const char *b, const struct stat *sb, struct err *e)
{
	enum { SPAN = 1 << 20 };
	if (sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino)
		return 1;   /* the hard link ckpt_publish_initial made */
	if (sa->st_size != sb->st_size)
		return 0;
	/* plain open(2), not fsys's: a look that only warns is no spool call, and
	 * the crash tests count those on a copy of the spool, whose links are gone */
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = fa < 0 ? -1 : open(b, O_RDONLY | O_CLOEXEC);
	if (fb < 0)
		err_sys(e, "%s", fa < 0 ? a : b);
	size_t size = (size_t)sa->st_size, head = size < 2 * SPAN ? size : SPAN;
	int r = fb < 0 ? -1 : same_bytes(fa, a, fb, b, 0, head, e);
	if (r == 1 && head < size)
		r = same_bytes(fa, a, fb, b, (off_t)(size - SPAN), SPAN, e);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return r;
}

int ckpt_initial_differs(const char *queue, const char *src, char *why, size_t size, struct err *e)
{
	char **names = NULL;
	size_t n = 0;
	if (fsys_list_dir(src, FSYS_FILES, &names, &n, e) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char a[PATH_MAX], b[PATH_MAX];
		struct stat sa, sb;
		/* the files ckpt_publish_initial takes */
		if (names[i][0] == '.' || !strcmp(names[i], CKPT_OPTIM_FILE))
			continue;
		snprintf(a, sizeof a, "%s/%s", src, names[i]);
		snprintf(b, sizeof b, "%s/step_0/%s", queue, names[i]);
		if (stat(a, &sa) < 0) {
			r = err_sys(e, "%s", a);
		} else if (stat(b, &sb) < 0) {
			if (errno != ENOENT)
				r = err_sys(e, "%s", b);
			else if (snprintf(why, size, "step_0 has no %s", names[i]) >= 0)
				r = 1;
		} else if ((r = same_file(a, &sa, b, &sb, e)) >= 0) {
			r = !r;
			if (r)
				snprintf(why, size, "its %s is not step_0's", names[i]);
		}
	}
	fsys_free_names(names, n);
	return r;
}

int ckpt_has_weights(const char *queue, int64_t step)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof p, "%s/step_%lld/config.json", queue, (long long)step) < (int)sizeof p &&
	       stat(p, &st) == 0;
}

int ckpt_load(struct model *m, struct optim *op, const struct optim_opts *o, const char *queue, int64_t step,
              int *resumed, struct err *e)
{
	char dir[PATH_MAX], opt[PATH_MAX];
	if (step_path(dir, sizeof dir, queue, step) < 0)
		return err_set(e, "%s: path too long", queue);
	snprintf(opt, sizeof opt, "%s/%s", dir, CKPT_OPTIM_FILE);
	*resumed = 0;
	int weights = ckpt_has_weights(queue, step);
	if (weights) {
		if (model_load(m, dir, e) < 0)
			return -1;
	} else {
		/* a step saved without weights (--save-every): the shapes from step_0, the weights from optim.bin */
		struct model_config c;
		char s0[PATH_MAX];
		snprintf(s0, sizeof s0, "%s/step_0", queue);
		if (access(opt, F_OK) != 0)
			return err_set(e, "%s: neither weights (config.json) nor optimizer state (%s)", dir,
			               CKPT_OPTIM_FILE);
		if (model_config_load(s0, &c, e) < 0 || model_create(m, &c, e) < 0)
			return -1;
	}
	if (optim_init(op, o, m->w.n, e) < 0) {
		model_free(m);
		return -1;
	}
	if (step_decay_matrices(op, m, e) < 0) {
		optim_free(op);
		model_free(m);
		return -1;
	}
	if (weights && access(opt, F_OK) != 0)
		return 0;
	if (optim_load(op, m->w.mem, m->w.n, opt, e) < 0) {
		optim_free(op);
		model_free(m);
		return -1;
	}
	*resumed = 1;
	return 0;
}

/* Past the string that opens at s[i] (a '"'), escapes skipped. */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i < n ? i + 1 : n;
}

/* Past the string, number, true, false or null that opens at s[i]; i itself
 * for an object or an array. */
static size_t scalar_end(const char *s, size_t n, size_t i)
{
	if (s[i] == '"')
		return string_end(s, n, i);
	size_t j = i;
	while (j < n && !strchr(",}] \t\r\n{[", s[j]))
		j++;
	return j;
}

/*
 * Where the top-level member key (quoted, as it is spelled in the text) of
 * the JSON object text[0..n) has its value: [*at, *end), 0; 1 when it has
 * none, -1 when the text holds no object. *open is the object's '{'.
 */
static int top_member(const char *text, size_t n, const char *key, size_t *open, size_t *at, size_t *end)
{
	int depth = 0, key_next = 0, found = 0;
	*open = n;
	for (size_t i = 0; i < n;) {
		char c = text[i];
		if (c == '"') {
			size_t j = string_end(text, n, i);
			if (depth == 1 && key_next) {   /* a key: its value follows the ':' */
				size_t v = j;
				while (v < n && strchr(" \t\r\n:", text[v]))
					v++;
				/* an object or array as its value is taken as no value, the member added */
				if (j - i == strlen(key) && !memcmp(text + i, key, j - i) && v < n &&
				    scalar_end(text, n, v) > v)
					*at = v, *end = scalar_end(text, n, v), found = 1;
				key_next = 0;
				j = v;
			}
			i = j;
			continue;
		}
		if (c == '{' || c == '[') {
			if (++depth == 1 && c == '{' && *open == n)
				*open = i, key_next = 1;
		} else if (c == '}' || c == ']') {
			depth--;
		} else if (c == ',' && depth == 1) {
			key_next = 1;
		}
		i++;
	}
	return *open == n ? -1 : !found;
}

/* text[0..n) into out with the top-level member key's value the string
 * value, the member added first in the object where it is absent. -1 when
 * out of memory, -2 when the text holds no object. */
static int set_member(const char *text, size_t n, const char *key, const char *value, struct buf *out)
{
	size_t open, at, end;
	int r = top_member(text, n, key, &open, &at, &end);
	if (r < 0)
		return -2;
	if (r == 1)   /* absent: added after the '{' */
		at = end = open + 1;
	r = buf_append(out, text, at) |
	    (r == 1 ? buf_printf(out, "\n  %s: \"%s\",", key, value) : buf_printf(out, "\"%s\"", value)) |
	    buf_append(out, text + end, n - end);
	return r ? -1 : 0;
}

/*
 * The config.json text[0..n) (one that has parsed) into out with its
 * top-level "dtype" and "torch_dtype" (a string, or null) set to dtype,
 * each added where it is absent (transformers 5 reads the one, 4.x and vLLM
 * the other); every other byte as it was, numbers' spelling included
 * (transformers warns at a llama3 rope factor written 4 rather than 4.0).
 * -1 when out of memory, -2 when the text holds no object.
 */
static int config_with_dtype(const char *text, size_t n, const char *dtype, struct buf *out)
{
	struct buf mid = { 0 };
	int r = set_member(text, n, "\"torch_dtype\"", dtype, &mid);
	if (r == 0)
		r = set_member((const char *)mid.data, mid.len, "\"dtype\"", dtype, out);
	buf_free(&mid);
	return r;
}

/*
 * tmp/config.json from src's, its dtype set (config_with_dtype), in place of
 * the one written from m's config: a sampler then builds every step as it
 * built step_0, with the keys grpo-tools does not read (pad_token_id,
 * sliding_window, max_window_layers, ...) and those it read as
 * transformers' defaults left as they were, as save_pretrained keeps them.
 */
static int publish_config(const char *src, const char *tmp, enum st_dtype dtype, struct err *e)
{
	char a[PATH_MAX], p[PATH_MAX];
	snprintf(a, sizeof a, "%s/config.json", src);
	snprintf(p, sizeof p, "%s/config.json", tmp);
	struct buf in = { 0 }, out = { 0 };
	int r;
	if (buf_read_file(&in, a, e) < 0)
		r = -1;
	else if ((r = config_with_dtype((const char *)in.data, in.len, dtype == ST_BF16 ? "bfloat16" : "float32",
	                                &out)) == -2)
		r = err_set(e, "%s: not a JSON object", a);
	else if (r < 0)
		r = err_set(e, "%s: out of memory", a);
	else if (fsys_unlink(p, e) < 0 || fsys_write_new(p, out.data, out.len, e) < 0)
		r = -1;
	buf_free(&in);
	buf_free(&out);
	return r;
}

int ckpt_publish(const char *queue, int64_t step, const struct model *m, const struct optim *op, int weights,
                 enum st_dtype dtype, size_t shard_bytes, const char *tok_dir, struct err *e)
{
	int r = ckpt_exists(queue, step, e);
	if (r != 0)
		return r;
	char tmp[PATH_MAX], p[PATH_MAX];
	if (make_tmp(queue, step, tmp, sizeof tmp, e) < 0)
		return -1;
	r = weights ? model_write_dir(m, tmp, dtype, shard_bytes, e) : 0;
	for (size_t i = 0; r == 0 && weights && tok_dir && i < sizeof tok_files / sizeof tok_files[0]; i++) {
		char a[PATH_MAX];
		snprintf(a, sizeof a, "%s/%s", tok_dir, tok_files[i]);
		if (access(a, F_OK) != 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", tmp, tok_files[i]);
		r = link_or_copy(a, p, e);
	}
	/* step_0's generation_config.json (its stop ids, its sampling defaults)
	 * in place of the one written from config.json, so that every step
	 * samples as step_0 does (save_pretrained keeps a model's own too) */
	char g[PATH_MAX];
	snprintf(g, sizeof g, "%s/generation_config.json", tok_dir ? tok_dir : "");
	if (r == 0 && weights && tok_dir && access(g, F_OK) == 0) {
		snprintf(p, sizeof p, "%s/generation_config.json", tmp);
		r = fsys_unlink(p, e) < 0 ? -1 : link_or_copy(g, p, e);
	}
	if (r == 0 && weights && tok_dir)
		r = publish_config(tok_dir, tmp, dtype, e);
	if (r == 0) {
		snprintf(p, sizeof p, "%s/%s", tmp, CKPT_OPTIM_FILE);
		r = optim_save(op, m->w.mem, p, e);
	}
	if (r == 0)
		r = finish(queue, step, tmp, e);
	if (r != 0 && r != CKPT_UNFLUSHED)
		remove_tmp(tmp, NULL);
	return r;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* 1 when some float of p[0..n) is infinite or NaN: all exponent bits set,
 * tested on the bits so that the loop vectorises. */
static int any_nonfinite(const float *p, size_t n)
{
	uint32_t hit = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &p[i], sizeof u);
		hit |= (u & 0x7f800000u) == 0x7f800000u;
	}
	return hit != 0;
}

int ckpt_check_finite(const struct model *m, const struct optim *op, struct err *e)
{
	const float *arr[3] = { m->w.mem, op ? op->m : NULL, op ? op->v : NULL };
	static const char *const what[3] = { "", "the first moment of ", "the second moment of " };
	size_t n = m->w.n;
	for (int k = 0; k < 3; k++) {
		if (!arr[k] || (k > 0 && op->n != n) || !any_nonfinite(arr[k], n))
			continue;
		size_t i = 0;
		while (isfinite(arr[k][i]))
			i++;
		double x = arr[k][i];
		/* the weights' tensor that holds index i (the moments share their layout) */
		int nt = model_tensors(&m->cfg, &m->w, NULL);
		struct model_tensor *ts = malloc((size_t)nt * sizeof *ts);
		if (ts)
			model_tensors(&m->cfg, &m->w, ts);
		for (int j = 0; ts && j < nt; j++) {
			size_t at = (size_t)(ts[j].data - m->w.mem);
			size_t len = (size_t)ts[j].shape[0] * (size_t)(ts[j].ndim == 2 ? ts[j].shape[1] : 1);
			if (ts[j].data && i >= at && i < at + len) {
				err_set(e, "%s%s is not finite (element %zu: %g)", what[k], ts[j].name, i - at, x);
				free(ts);
				return -1;
			}
		}
		free(ts);
		return err_set(e, "%sweight %zu is not finite (%g)", what[k], i, x);
	}
	return 0;
}

int ckpt_prune(const char *queue, int keep, int *removed, struct err *e)
{
	*removed = 0;
	if (keep < 1)
		return err_set(e, "--keep must be at least 1 (got %d)", keep);
	char **names = NULL;
	size_t n = 0;
	if (fsys_list_dir(queue, FSYS_DIRS, &names, &n, e) < 0)
		return -1;
	int64_t *steps = malloc((n ? n : 1) * sizeof *steps);
	size_t ns = 0;
	if (!steps) {
		fsys_free_names(names, n);
		return err_set(e, "%s: out of memory", queue);
	}
	for (size_t i = 0; i < n; i++) {
		int64_t k;
		if (spool_parse_step(names[i], &k) == 0 && k > 0)
			steps[ns++] = k;
	}
	fsys_free_names(names, n);
	qsort(steps, ns, sizeof *steps, cmp_i64);
	/* the oldest step kept: the keep-th newest with weights (later steps, weights or not, stay) */
	size_t first = ns;
	for (size_t i = ns, seen = 0; i-- > 0 && seen < (size_t)keep;)
		if (ckpt_has_weights(queue, steps[i]))
			seen++, first = i;
	int rc = 0;
	for (size_t i = 0; i < first && rc == 0; i++) {
		char from[PATH_MAX], tmp[PATH_MAX];
		step_path(from, sizeof from, queue, steps[i]);
		if (tmp_name(queue, steps[i], tmp, sizeof tmp, e) < 0 || fsys_rename(from, tmp, e) < 0) {
			rc = -1;
			break;
		}
		(*removed)++;
		if (remove_tmp(tmp, e) < 0) {   /* out of sight: the next run's sweep removes the rest */
			rc = -1;
			break;
		}
	}
	free(steps);
	return rc;
}

int ckpt_sweep(const char *queue, int *removed, struct err *e)
{
	*removed = 0;
	char dir[PATH_MAX], me[128];
	if (snprintf(dir, sizeof dir, "%s/.tmp", queue) >= (int)sizeof dir)
		return err_set(e, "%s: path too long", queue);
	struct stat st;
	if (stat(dir, &st) < 0 && errno == ENOENT)
		return 0;
	/* this host's name as the temporaries spell it: the first field of a unique name */
	tempfile_unique_name(me, sizeof me);
	size_t hl = strcspn(me, ".");
	char **names = NULL;
	size_t n = 0;
	if (fsys_list_dir(dir, FSYS_DIRS, &names, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		/* step_N.HOST.PID.TIME.K */
		const char *h = strchr(names[i], '.');
		if (strncmp(names[i], "step_", 5) != 0 || !h || strncmp(h + 1, me, hl) != 0 || h[1 + hl] != '.')
			continue;
		char *end;
		errno = 0;
		long pid = strtol(h + 2 + hl, &end, 10);
		if (errno || *end != '.' || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		remove_tmp(p, NULL);
		(*removed)++;
	}
	fsys_free_names(names, n);
	return 0;
}

int ckpt_model_dtype(const char *src, enum st_dtype *d, struct err *e)
{
	char p[PATH_MAX];
	struct buf b = { 0 };
	*d = ST_F32;
	if (path_join(p, sizeof p, src, "config.json", e) < 0 || buf_read_file(&b, p, e) < 0)
		return -1;
	/* json_parse_n says when memory ran out, which must not read as "no
	 * dtype given" and save a bfloat16 model in float32 */
	cJSON *j = json_parse_n((const char *)b.data, b.len, NULL);
	int r = 0;
	if (!j && errno == ENOMEM) {
		r = err_sys(e, "%s", p);
	} else if (!cJSON_IsObject(j)) {
		r = err_set(e, "%s: not a JSON object", p);
	} else {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "torch_dtype");
		if (!cJSON_IsString(t))
			t = cJSON_GetObjectItemCaseSensitive(j, "dtype");
		if (cJSON_IsString(t) && strcmp(t->valuestring, "bfloat16") == 0)
			*d = ST_BF16;
	}
	cJSON_Delete(j);
	buf_free(&b);
	return r;
}
