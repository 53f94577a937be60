/* cursor.c: see cursor.h. */
#include "collect/cursor.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "data/jsonview.h"
#include "data/traj.h"

/* The whole file into b (with a NUL after it): 0, 1 when it does not exist, -1. */
static int read_all(const char *path, struct buf *b, struct err *e)
{
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	for (;;) {
		if (buf_reserve(b, 1 << 16) < 0) {
			close(fd);
			return err_set(e, "%s: out of memory", path);
		}
		ssize_t k = fsys_read(fd, b->data + b->len, b->cap - b->len - 1, path, e);
		if (k < 0) {
			close(fd);
			return -1;
		}
		if (k == 0)
			break;
		b->len += (size_t)k;
	}
	close(fd);
	b->data[b->len] = 0;
	return 0;
}

/* A row number, digits alone (the first line). */
static int parse_row(const char *s, size_t n, uint64_t *row)
{
	uint64_t v = 0;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*row = v;
	return 0;
}

static int get_u64(const cJSON *o, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (double)TRAJ_INT_MAX ||
	    v->valuedouble != floor(v->valuedouble))
		return -1;
	*out = (uint64_t)v->valuedouble;
	return 0;
}

/* "names": "collect-<16 hex digits>-", the prefix of the parts' names */
static int get_names(const cJSON *o, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "names");
	char *end;
	if (!cJSON_IsString(v) || strncmp(v->valuestring, "collect-", 8) != 0 || strlen(v->valuestring) != 25 ||
	    v->valuestring[24] != '-')
		return -1;
	for (int i = 8; i < 24; i++)
		if (!strchr("0123456789abcdef", v->valuestring[i]))
			return -1;
	*out = strtoull(v->valuestring + 8, &end, 16);
	return end == v->valuestring + 24 ? 0 : -1;
}

/* The header line of a pending batch into b (its lines not yet): answers
 * from a server ("sampled") or a batch from a model ("generating"). */
static int parse_header(const char *s, size_t n, struct cursor_batch *b, const char *path, struct err *e)
{
	cJSON *h = json_parse_n(s, n, NULL);
	if (!h && errno == ENOMEM)
		return err_sys(e, "%s", path);
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(h, "sampled");
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(h, "generating");
	if (!o)
		o = gen;
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "output");
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
	uint64_t rank, version, max_groups, batch = 0, step = 0;
	int ok = cJSON_IsObject(o) && get_u64(o, "from", &b->from) == 0 && get_u64(o, "prompts", &b->prompts) == 0 &&
		 get_u64(o, "next", &b->next) == 0 && get_u64(o, "policy_version", &version) == 0 &&
		 get_u64(o, "rank", &rank) == 0 && rank <= INT32_MAX && get_u64(o, "max_groups", &max_groups) == 0 &&
		 (cJSON_IsNull(out) || cJSON_IsString(out));
	if (ok && o == gen)
		ok = cJSON_IsString(model) && get_names(o, &b->names) == 0 && get_u64(o, "batch", &batch) == 0 &&
		     batch > 0 && get_u64(o, "step", &step) == 0;
	else if (ok)
		ok = get_u64(o, "answers", &b->n_lines) == 0;
	if (ok && cJSON_IsString(out) && !(b->output = strdup(out->valuestring)))
		ok = -1;
	if (ok > 0 && o == gen && !(b->model = strdup(model->valuestring)))
		ok = -1;
	cJSON_Delete(h);
	if (ok < 0)
		return err_set(e, "%s: out of memory", path);
	if (!ok)
		return err_set(e, "%s:2: expected {\"sampled\": {\"from\", \"prompts\", \"next\", \"policy_version\", "
			       "\"output\", \"rank\", \"max_groups\", \"answers\"}} or {\"generating\": {\"from\", "
			       "\"prompts\", \"next\", \"policy_version\", \"model\", \"names\", \"batch\", \"step\", "
			       "\"output\", \"rank\", \"max_groups\"}}, what a started batch is kept as", path);
	b->policy_version = (int64_t)version;
	b->rank = (int)rank;
	b->max_groups = (int64_t)max_groups;
	b->batch = (int64_t)batch;
	b->step = o == gen ? (int64_t)step : b->policy_version;
	return 0;
}

int cursor_load(struct cursor *c, const char *path, struct err *e)
{
	struct buf f = { 0 };
	memset(c, 0, sizeof *c);
	if (!(c->path = strdup(path)))
		return err_set(e, "out of memory");
	int r = read_all(path, &f, e);
	if (r != 0) {
		buf_free(&f);
		if (r < 0)
			cursor_free(c);
		return r < 0 ? -1 : 0;
	}
	const char *s = (const char *)f.data, *end = s + f.len;
	const char *nl = memchr(s, '\n', f.len);
	const char *l1 = nl ? nl : end;
	while (l1 > s && (l1[-1] == ' ' || l1[-1] == '\r'))
		l1--;
	if (parse_row(s, (size_t)(l1 - s), &c->row) < 0) {
		err_set(e, "%s:1: expected the next place in the prompts, a number, not '%.*s'", path,
			(int)(l1 - s > 40 ? 40 : l1 - s), s);
		goto fail;
	}
	if (!nl || nl + 1 == end)
		goto done;
	/* a pending batch: its header, then exactly the answers it counts */
	const char *h = nl + 1, *he = memchr(h, '\n', (size_t)(end - h));
	if (!he || parse_header(h, (size_t)(he - h), &c->batch, path, e) < 0) {
		if (!he)
			err_set(e, "%s:2: a batch header with no answers after it", path);
		goto fail;
	}
	const char *body = he + 1;
	uint64_t lines = 0;
	for (const char *p = body; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
		lines++;
	if (lines != c->batch.n_lines || (end > body && end[-1] != '\n')) {
		err_set(e, "%s: the sampled batch counts %llu answer%s, but %llu line%s follow%s it: the file was "
			"changed by hand, or not written as grpo-collect writes it (whole, by rename)", path,
			(unsigned long long)c->batch.n_lines, c->batch.n_lines == 1 ? "" : "s", (unsigned long long)lines,
			lines == 1 ? "" : "s", lines == 1 ? "s" : "");
		goto fail;
	}
	if (buf_append(&c->batch.lines, body, (size_t)(end - body)) < 0) {
		err_set(e, "%s: out of memory", path);
		goto fail;
	}
	c->pending = 1;
done:
	buf_free(&f);
	return 0;
fail:
	buf_free(&f);
	cursor_free(c);
	return -1;
}

int cursor_batch_add(struct cursor_batch *b, const char *line, size_t n, struct err *e)
{
	if (memchr(line, '\n', n))
		return err_set(e, "an answer of %zu bytes holds a line break: it cannot be kept one a line", n);
	if (buf_reserve(&b->lines, n + 1) < 0)
		return err_set(e, "out of memory for an answer of %zu bytes", n);
	buf_append(&b->lines, line, n);
	buf_append(&b->lines, "\n", 1);
	b->n_lines++;
	return 0;
}

int cursor_batch_next(const struct cursor_batch *b, size_t *at, const char **line, size_t *n)
{
	if (*at >= b->lines.len)
		return 0;
	const char *s = (const char *)b->lines.data + *at;
	const char *nl = memchr(s, '\n', b->lines.len - *at);
	*line = s;
	*n = (size_t)(nl - s);
	*at += *n + 1;
	return 1;
}

void cursor_batch_free(struct cursor_batch *b)
{
	free(b->output);
	free(b->model);
	buf_free(&b->lines);
	memset(b, 0, sizeof *b);
}

/* Replace the file by text, by rename. */
static int put(const struct cursor *c, const struct buf *text, struct err *e)
{
	return tempfile_write(c->path, NULL, text->data, text->len, TEMPFILE_REPLACE, e) < 0 ? -1 : 0;
}

static int print_header(struct buf *t, uint64_t row, const struct cursor_batch *b)
{
	char names[32];
	snprintf(names, sizeof names, "collect-%016llx-", (unsigned long long)b->names);
	cJSON *h = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(h, b->model ? "generating" : "sampled");
	int ok = o && cJSON_AddNumberToObject(o, "from", (double)b->from) &&
		 cJSON_AddNumberToObject(o, "prompts", (double)b->prompts) &&
		 cJSON_AddNumberToObject(o, "next", (double)b->next) &&
		 cJSON_AddNumberToObject(o, "policy_version", (double)b->policy_version);
	if (ok && b->model)
		ok = cJSON_AddStringToObject(o, "model", b->model) && cJSON_AddStringToObject(o, "names", names) &&
		     cJSON_AddNumberToObject(o, "batch", (double)b->batch) &&
		     cJSON_AddNumberToObject(o, "step", (double)b->step);
	ok = ok &&
	     (b->output ? cJSON_AddStringToObject(o, "output", b->output) != NULL
			: cJSON_AddNullToObject(o, "output") != NULL) &&
	     cJSON_AddNumberToObject(o, "rank", b->rank) &&
	     cJSON_AddNumberToObject(o, "max_groups", (double)b->max_groups) &&
	     (b->model || cJSON_AddNumberToObject(o, "answers", (double)b->n_lines));
	char *s = ok ? cJSON_PrintUnformatted(h) : NULL;
	int r = s && buf_printf(t, "%llu\n%s\n", (unsigned long long)row, s) == 0 ? 0 : -1;
	free(s);
	cJSON_Delete(h);
	return r;
}

int cursor_save(struct cursor *c, struct cursor_batch *b, struct err *e)
{
	struct buf t = { 0 };
	cursor_batch_free(&c->batch);
	c->batch = *b;
	memset(b, 0, sizeof *b);
	c->pending = 0;
	if (print_header(&t, c->row, &c->batch) < 0 || buf_append(&t, c->batch.lines.data, c->batch.lines.len) < 0) {
		buf_free(&t);
		return err_set(e, "%s: out of memory", c->path);
	}
	int r = put(c, &t, e);
	buf_free(&t);
	if (r == 0)
		c->pending = 1;
	return r;
}

int cursor_advance(struct cursor *c, uint64_t next, struct err *e)
{
	struct buf t = { 0 };
	if (buf_printf(&t, "%llu\n", (unsigned long long)next) < 0)
		return err_set(e, "out of memory");
	int r = put(c, &t, e);
	buf_free(&t);
	if (r < 0)
		return -1;
	c->row = next;
	c->pending = 0;
	cursor_batch_free(&c->batch);
	return 0;
}

int cursor_check_target(const struct cursor *c, const char *output, int rank, int64_t max_groups,
			const int64_t *policy_version, struct err *e)
{
	const struct cursor_batch *b = &c->batch;
	int same_out = (!output && !b->output) || (output && b->output && strcmp(output, b->output) == 0);
	if (same_out && rank == b->rank && max_groups == b->max_groups &&
	    (!policy_version || *policy_version == b->step))
		return 0;
	return err_set(e, "%s holds %llu prompts from place %llu, sampled at policy version %lld for %s%s (rank %d, "
		       "--max-groups %lld) and perhaps published in part: publishing them elsewhere would publish "
		       "some twice; run the command that sampled them again to finish them", c->path,
		       (unsigned long long)b->prompts, (unsigned long long)b->from, (long long)b->policy_version,
		       b->output ? b->output : "standard output", b->step != b->policy_version ? " (--step)" : "",
		       b->rank, (long long)b->max_groups);
}

int cursor_check_sampling(const struct cursor *c, uint64_t names, int64_t batch, struct err *e)
{
	const struct cursor_batch *b = &c->batch;
	if (names == b->names && batch == b->batch)
		return 0;
	return err_set(e, "%s holds %llu prompts from place %llu, started from %s (policy version %lld) and perhaps "
		       "published in part, but this command samples them otherwise (%s): nothing published; run "
		       "the command that started them again to finish them", c->path, (unsigned long long)b->prompts,
		       (unsigned long long)b->from, b->model, (long long)b->policy_version,
		       names != b->names ? "other prompts, or another --samples, --temperature, --top-p, --top-k, "
					   "--max-tokens, --stop or --seed"
					 : "another --batch");
}

/*
 * The temporaries a holder killed while writing the cursor left beside it
 * (".CURSOR.tmp.UNIQUE", tempfile.h): only the lock's holder writes the
 * cursor, and the lock is ours now, so each is a dead holder's. Best
 * effort, and outside fsys (as an abandoned temporary's removal is, see
 * fsys.h): a crash before or after it leaves the same cursor.
 */
static void sweep_dead_writes(const char *path)
{
	char dir[PATH_MAX], prefix[PATH_MAX], p[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	size_t n = (size_t)snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
	DIR *d = n < sizeof prefix ? opendir(dir) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (!strncmp(de->d_name, prefix, n) && snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p)
			unlink(p);
	if (d)
		closedir(d);
}

/* The cursor is rewritten by renaming a new file over it, which would
 * replace a link, or a device (as root, --cursor /dev/null would take the
 * machine's /dev/null): only a regular file, or none yet, will do. */
static int check_replaceable(const char *path, struct err *e)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : err_sys(e, "%s", path);
	if (S_ISLNK(st.st_mode))
		return err_set(e, "%s: a symbolic link: the cursor is rewritten by a rename, which would replace the "
			       "link; give the file itself", path);
	if (!S_ISREG(st.st_mode))
		return err_set(e, "%s: not a regular file: the cursor is rewritten by a rename, which would replace it",
			       path);
	return 0;
}

int cursor_lock(const char *path, int *fd, long *holder, struct err *e)
{
	char p[PATH_MAX], pid[32];
	*holder = 0;
	*fd = -1;
	if (check_replaceable(path, e) < 0)
		return -1;
	if (snprintf(p, sizeof p, "%s.lock", path) >= (int)sizeof p)
		return err_set(e, "%s: path too long", path);
	int r = fsys_try_lock(p, 1, fd, e);
	if (r == 1) {
		/* the holder's pid, when it has written it already */
		int rfd = open(p, O_RDONLY | O_CLOEXEC);
		ssize_t k = rfd < 0 ? -1 : read(rfd, pid, sizeof pid - 1);
		if (rfd >= 0)
			close(rfd);
		if (k > 0) {
			pid[k] = 0;
			*holder = strtol(pid, NULL, 10);
		}
		return 1;
	}
	if (r != 0)
		return -1;
	int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	/* through fsys, as every other write of a run, so that the tests' failing
	 * file system calls reach it too; the lock's fd is new, at offset 0 */
	if (ftruncate(*fd, 0) < 0 ? err_sys(e, "%s", p) : fsys_write_all(*fd, pid, (size_t)n, p, e)) {
		close(*fd);
		*fd = -1;
		return -1;
	}
	sweep_dead_writes(path);
	return 0;
}

void cursor_free(struct cursor *c)
{
	free(c->path);
	cursor_batch_free(&c->batch);
	memset(c, 0, sizeof *c);
}
