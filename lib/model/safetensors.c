/* safetensors.c: see safetensors.h. */
#include "model/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "base/path.h"
#include "base/unicode.h"
#include "data/jsonview.h"

/* The reference implementation's limit; a larger header is a corrupt file. */
#define ST_MAX_HEADER 100000000u

static const char *dtype_names[] = {
	[ST_F32] = "F32", [ST_F16] = "F16", [ST_BF16] = "BF16", [ST_F64] = "F64",
	[ST_I64] = "I64", [ST_I32] = "I32", [ST_I16] = "I16", [ST_I8] = "I8",
	[ST_U8] = "U8", [ST_BOOL] = "BOOL",
};
static const size_t dtype_sizes[] = {
	[ST_F32] = 4, [ST_F16] = 2, [ST_BF16] = 2, [ST_F64] = 8, [ST_I64] = 8,
	[ST_I32] = 4, [ST_I16] = 2, [ST_I8] = 1, [ST_U8] = 1, [ST_BOOL] = 1,
};

size_t st_dtype_size(enum st_dtype d) { return dtype_sizes[d]; }

float st_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t st_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* keep NaN a NaN */
	u += 0x7fffu + ((u >> 16) & 1);            /* round to nearest even */
	return (uint16_t)(u >> 16);
}

float st_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	float f;
	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 */
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	uint32_t u;
	if (exp == 31)
		u = sign | 0x7f800000u | (man << 13);
	else
		u = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &u, 4);
	return f;
}

static int parse_dtype(const char *s, enum st_dtype *d)
{
	for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
		if (strcmp(s, dtype_names[i]) == 0) {
			*d = (enum st_dtype)i;
			return 0;
		}
	return -1;
}

void st_close(struct st_model *m)
{
	for (int i = 0; i < m->nfiles; i++) {
		if (m->files[i].map)
			munmap(m->files[i].map, m->files[i].size);
		free(m->files[i].path);
	}
	for (int i = 0; i < m->ntensors; i++)
		free(m->tensors[i].name);
	free(m->files);
	free(m->tensors);
	memset(m, 0, sizeof *m);
}

static int add_tensor(struct st_model *m, struct st_tensor *t)
{
	if ((m->ntensors & (m->ntensors - 1)) == 0) {
		int cap = m->ntensors ? 2 * m->ntensors : 16;
		void *p = realloc(m->tensors, (size_t)cap * sizeof *m->tensors);
		if (!p)
			return -1;
		m->tensors = p;
	}
	m->tensors[m->ntensors++] = *t;
	return 0;
}

/* Parse one tensor's header entry; fills t except name and file. */
static int parse_entry(const cJSON *v, const char *path, size_t data_len, const unsigned char *data,
                       struct st_tensor *t, struct err *e)
{
	const char *name = v->string;
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(v, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(v, "shape");
	const cJSON *of = cJSON_GetObjectItemCaseSensitive(v, "data_offsets");
	if (!cJSON_IsObject(v) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
	    cJSON_GetArraySize(of) != 2)
		return err_set(e, "%s: tensor %s: header entry needs dtype, shape and data_offsets", path, name);
	if (parse_dtype(dt->valuestring, &t->dtype) < 0)
		return err_set(e, "%s: tensor %s: unknown dtype %s", path, name, dt->valuestring);
	t->ndim = cJSON_GetArraySize(sh);
	if (t->ndim > ST_MAX_DIMS)
		return err_set(e, "%s: tensor %s: %d dimensions, at most %d supported", path, name, t->ndim, ST_MAX_DIMS);
	uint64_t count = 1;
	for (int i = 0; i < t->ndim; i++) {
		const cJSON *d = cJSON_GetArrayItem(sh, i);
		if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 9.0e15 ||
		    d->valuedouble != (double)(int64_t)d->valuedouble)
			return err_set(e, "%s: tensor %s: bad shape", path, name);
		t->shape[i] = (int64_t)d->valuedouble;
		if (t->shape[i] && count > UINT64_MAX / 16 / (uint64_t)t->shape[i])
			return err_set(e, "%s: tensor %s: shape too large", path, name);
		count *= (uint64_t)t->shape[i];
	}
	double b = cJSON_GetArrayItem(of, 0)->valuedouble, en = cJSON_GetArrayItem(of, 1)->valuedouble;
	if (!cJSON_IsNumber(cJSON_GetArrayItem(of, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(of, 1)) ||
	    b < 0 || en < b || b != floor(b) || en != floor(en))
		return err_set(e, "%s: tensor %s: bad data_offsets", path, name);
	if (en > (double)data_len)
		return err_set(e, "%s: tensor %s: data_offsets [%.0f, %.0f) beyond the %zu data bytes (truncated file?)",
		               path, name, b, en, data_len);
	t->nbytes = (size_t)(en - b);
	if ((uint64_t)t->nbytes != count * dtype_sizes[t->dtype])
		return err_set(e, "%s: tensor %s: %zu bytes, but shape and dtype %s need %" PRIu64, path, name,
		               t->nbytes, dtype_names[t->dtype], count * dtype_sizes[t->dtype]);
	t->data = data + (size_t)b;
	return 0;
}

static int cmp_span(const void *x, const void *y)
{
	const struct st_tensor *a = *(const struct st_tensor *const *)x, *b = *(const struct st_tensor *const *)y;
	if (a->data != b->data)
		return a->data < b->data ? -1 : 1;
	return (a->nbytes > b->nbytes) - (a->nbytes < b->nbytes);
}

/*
 * The tensors m->tensors[first..] of one file must hold its data_len bytes
 * of data exactly, each byte once, as the reference reader requires: a
 * header whose offsets overlap, skip bytes or stop short of the end is
 * corrupt, and would otherwise load some weights from another tensor's
 * bytes.
 */
static int check_spans(const struct st_model *m, int first, const unsigned char *data, size_t data_len,
                       const char *path, struct err *e)
{
	int n = m->ntensors - first;
	const struct st_tensor **o = malloc((size_t)(n ? n : 1) * sizeof *o);
	if (!o)
		return err_set(e, "%s: out of memory", path);
	for (int i = 0; i < n; i++)
		o[i] = &m->tensors[first + i];
	qsort(o, (size_t)n, sizeof *o, cmp_span);
	size_t at = 0;
	int r = 0;
	for (int i = 0; i < n && r == 0; i++) {
		size_t b = (size_t)(o[i]->data - data);
		if (b < at)
			r = err_set(e, "%s: tensor %s: data_offsets [%zu, %zu) overlap another tensor's", path,
			            o[i]->name, b, b + o[i]->nbytes);
		else if (b > at)
			r = err_set(e, "%s: tensor %s: data_offsets [%zu, %zu) leave bytes [%zu, %zu) that no tensor holds",
			            path, o[i]->name, b, b + o[i]->nbytes, at, b);
		at = b + o[i]->nbytes;
	}
	if (r == 0 && at != data_len)
		r = err_set(e, "%s: %zu bytes after the last tensor's data (which ends at %zu)", path, data_len - at, at);
	free(o);
	return r;
}

/* __metadata__, where present, maps names to strings (or is null). Its
 * "format", where given, is one transformers loads: "pt" or "mlx", whose
 * tensors have PyTorch's names; "tf" and "flax" name theirs otherwise (it
 * converts them), and it refuses any other. */
static int check_metadata(const cJSON *md, const char *path, struct err *e)
{
	if (!md || cJSON_IsNull(md))
		return 0;
	if (!cJSON_IsObject(md))
		return err_set(e, "%s: __metadata__ is not an object of strings", path);
	const cJSON *v;
	cJSON_ArrayForEach(v, md)
		if (!cJSON_IsString(v))
			return err_set(e, "%s: __metadata__: the value of \"%s\" is not a string", path, v->string);
	const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "format"));
	if (!f || strcmp(f, "pt") == 0 || strcmp(f, "mlx") == 0)
		return 0;
	if (strcmp(f, "tf") == 0 || strcmp(f, "flax") == 0)
		return err_set(e, "%s: __metadata__: format \"%s\": weights saved by %s, whose tensor names are not "
			       "PyTorch's; save them from transformers' PyTorch model (save_pretrained)", path, f,
			       f[0] == 't' ? "TensorFlow" : "Flax");
	return err_set(e, "%s: __metadata__: format \"%.40s\" is none of pt, mlx, tf and flax, which "
		       "transformers loads", path, f);
}

/* Add the tensors of the safetensors bytes p[0..size) of file fi to m. */
static int parse_file(struct st_model *m, int fi, const unsigned char *p, size_t size, const char *path,
                      struct err *e)
{
	if (size < 8)
		return err_set(e, "%s: %zu bytes, too short for a safetensors header", path, size);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | p[i];
	if (n > ST_MAX_HEADER || n > size - 8)
		return err_set(e, "%s: header length %" PRIu64 " out of range for a %zu-byte file", path, n, size);
	/* the reference reader's rules: UTF-8 text that opens with '{', one
	 * object with blanks after it, metadata of strings; a file it refuses
	 * would load here and nowhere else */
	const char *text = (const char *)p + 8;
	if (n == 0 || text[0] != '{')
		return err_set(e, "%s: header does not start with '{'", path);
	size_t bad = uni_utf8_check((const unsigned char *)text, (size_t)n);
	if (bad < n)
		return err_set(e, "%s: header is not UTF-8 (byte %zu)", path, bad + 1);
	cJSON *h = json_parse_one(text, (size_t)n, e);
	if (!h)
		return err_prefix(e, "%s: header", path);
	if (check_metadata(cJSON_GetObjectItemCaseSensitive(h, "__metadata__"), path, e) < 0) {
		cJSON_Delete(h);
		return -1;
	}
	const unsigned char *data = p + 8 + n;
	size_t data_len = size - 8 - (size_t)n;
	int first = m->ntensors;
	const cJSON *v;
	cJSON_ArrayForEach(v, h) {
		if (strcmp(v->string, "__metadata__") == 0)
			continue;
		struct st_tensor t = { 0 };
		if (parse_entry(v, path, data_len, data, &t, e) < 0) {
			cJSON_Delete(h);
			return -1;
		}
		if (st_find(m, v->string)) {
			err_set(e, "%s: tensor %s appears twice", path, v->string);
			cJSON_Delete(h);
			return -1;
		}
		t.file = fi;
		t.name = strdup(v->string);
		if (!t.name || add_tensor(m, &t) < 0) {
			free(t.name);
			cJSON_Delete(h);
			return err_set(e, "%s: out of memory", path);
		}
	}
	cJSON_Delete(h);
	return check_spans(m, first, data, data_len, path, e);
}

/* Append a file entry (map may be NULL for a caller's buffer); returns its index or -1. */
static int add_file(struct st_model *m, const char *path, void *map, size_t size)
{
	void *files = m->files;
	if (buf_grow_array(&files, (size_t)m->nfiles, sizeof *m->files) < 0)
		return -1;
	m->files = files;
	m->files[m->nfiles] = (struct st_file){ .path = strdup(path), .map = map, .size = size };
	if (!m->files[m->nfiles].path)
		return -1;
	return m->nfiles++;
}

/* Map `path` read-only and add its tensors to m. */
static int open_file(struct st_model *m, const char *path, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return err_sys(e, "%s", path);
	}
	size_t size = (size_t)st.st_size;
	if (size < 8) {
		close(fd);
		return err_set(e, "%s: %zu bytes, too short for a safetensors header", path, size);
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return err_sys(e, "%s: mmap", path);
	int fi = add_file(m, path, map, size);
	if (fi < 0) {
		munmap(map, size);
		return err_set(e, "%s: out of memory", path);
	}
	return parse_file(m, fi, map, size, path, e);
}

int st_open_mem(struct st_model *m, const void *data, size_t size, const char *name, struct err *e)
{
	memset(m, 0, sizeof *m);
	int fi = add_file(m, name, NULL, size);
	int r = fi < 0 ? err_set(e, "%s: out of memory", name) : parse_file(m, fi, data, size, name, e);
	if (r < 0)
		st_close(m);
	return r;
}

static int open_index(struct st_model *m, const char *dir, const char *index, struct err *e)
{
	struct buf text = { 0 };
	if (buf_read_file(&text, index, e) < 0)
		return -1;
	cJSON *j = json_parse_n((const char *)text.data, text.len, NULL);
	buf_free(&text);
	if (!j && errno == ENOMEM)
		return err_sys(e, "%s", index);
	const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
	if (!cJSON_IsObject(wm)) {
		cJSON_Delete(j);
		return err_set(e, "%s: no weight_map object", index);
	}
	const cJSON *v;
	/* open each shard once, in the order the index first names it */
	cJSON_ArrayForEach(v, wm) {
		if (!cJSON_IsString(v) || strchr(v->valuestring, '/')) {
			err_set(e, "%s: weight_map: %s: bad file name", index, v->string);
			cJSON_Delete(j);
			return -1;
		}
		char path[4096];
		if (path_join(path, sizeof path, dir, v->valuestring, e) < 0) {
			cJSON_Delete(j);
			return -1;
		}
		int seen = 0;
		for (int i = 0; i < m->nfiles; i++)
			seen |= strcmp(m->files[i].path, path) == 0;
		if (!seen && open_file(m, path, e) < 0) {
			cJSON_Delete(j);
			return -1;
		}
	}
	/* every tensor the index names must be in the shard it names */
	cJSON_ArrayForEach(v, wm) {
		const struct st_tensor *t = st_find(m, v->string);
		const char *f = t ? strrchr(m->files[t->file].path, '/') + 1 : NULL;
		if (!t || strcmp(f, v->valuestring) != 0) {
			err_set(e, "%s: tensor %s: not in %s as the index says", index, v->string, v->valuestring);
			cJSON_Delete(j);
			return -1;
		}
	}
	cJSON_Delete(j);
	return 0;
}

int st_open(struct st_model *m, const char *path, struct err *e)
{
	memset(m, 0, sizeof *m);
	struct stat st;
	if (stat(path, &st) < 0)
		return err_sys(e, "%s", path);
	int r;
	if (S_ISDIR(st.st_mode)) {
		char p[4096];
		if (path_join(p, sizeof p, path, "model.safetensors.index.json", e) < 0)
			r = -1;
		else if (access(p, F_OK) == 0)
			r = open_index(m, path, p, e);
		else if (path_join(p, sizeof p, path, "model.safetensors", e) < 0)
			r = -1;
		else
			r = open_file(m, p, e);
	} else {
		r = open_file(m, path, e);
	}
	if (r < 0)
		st_close(m);
	return r;
}

const struct st_tensor *st_find(const struct st_model *m, const char *name)
{
	for (int i = 0; i < m->ntensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

static void shape_str(char *s, size_t n, const int64_t *shape, int ndim)
{
	size_t k = (size_t)snprintf(s, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(s + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (k < n)
		snprintf(s + k, n - k, "]");
}

int st_read_f32(const struct st_model *m, const char *name, const int64_t *shape, int ndim,
                float *out, struct err *e)
{
	const struct st_tensor *t = st_find(m, name);
	if (!t) {
		const char *where = m->nfiles == 1 ? m->files[0].path : "checkpoint";
		return err_set(e, "%s: missing tensor %s", m->nfiles ? where : "checkpoint", name);
	}
	const char *path = m->files[t->file].path;
	int same = t->ndim == ndim;
	for (int i = 0; same && i < ndim; i++)
		same = t->shape[i] == shape[i];
	if (!same) {
		char want[128], got[128];
		shape_str(want, sizeof want, shape, ndim);
		shape_str(got, sizeof got, t->shape, t->ndim);
		return err_set(e, "%s: tensor %s: shape %s, but the config needs %s", path, name, got, want);
	}
	size_t count = t->nbytes / dtype_sizes[t->dtype];
	const unsigned char *p = t->data;
	switch (t->dtype) {
	case ST_F32:
		memcpy(out, p, t->nbytes);
		break;
	case ST_BF16:
	case ST_F16:
		for (size_t i = 0; i < count; i++) {
			uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
			out[i] = t->dtype == ST_BF16 ? st_bf16_to_f32(h) : st_f16_to_f32(h);
		}
		break;
	default:
		return err_set(e, "%s: tensor %s: dtype %s, expected F32, F16 or BF16", path, name,
		               dtype_names[t->dtype]);
	}
	return 0;
}

/* ---- writing ---- */

static size_t entry_count(const struct st_entry *t)
{
	size_t c = 1;
	for (int i = 0; i < t->ndim; i++)
		c *= (size_t)t->shape[i];
	return c;
}

/* A name the header can hold as it is: no quote, backslash or control
 * byte, which JSON would need escaped (the model's names have none). */
static int plain_name(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return 0;
	return 1;
}

int st_write_file(const char *path, const struct st_entry *ents, int n, enum st_dtype dtype,
                  struct err *e)
{
	if (dtype != ST_F32 && dtype != ST_BF16)
		return err_set(e, "%s: can only write F32 or BF16", path);
	for (int i = 0; i < n; i++)
		if (!*ents[i].name || !plain_name(ents[i].name))
			return err_set(e, "%s: tensor name '%s' is empty or holds a quote, backslash or control "
				       "character", path, ents[i].name);
	size_t es = dtype_sizes[dtype];
	struct buf h = { 0 };
	int r = -1;
	size_t off = 0;
	if (buf_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}") < 0)
		goto oom;
	for (int i = 0; i < n; i++) {
		size_t nb = entry_count(&ents[i]) * es;
		if (buf_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", ents[i].name, dtype_names[dtype]) < 0)
			goto oom;
		for (int d = 0; d < ents[i].ndim; d++)
			if (buf_printf(&h, "%s%" PRId64, d ? "," : "", ents[i].shape[d]) < 0)
				goto oom;
		if (buf_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + nb) < 0)
			goto oom;
		off += nb;
	}
	if (buf_put_u8(&h, '}') < 0)
		goto oom;
	while (h.len % 8)
		if (buf_put_u8(&h, ' ') < 0)
			goto oom;

	int fd = fsys_open_excl(path, e);
	if (fd < 0)
		goto out;
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
	if (fsys_write_all(fd, len8, 8, path, e) < 0 || fsys_write_all(fd, h.data, h.len, path, e) < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		size_t c = entry_count(&ents[i]);
		if (dtype == ST_F32) {
			if (fsys_write_all(fd, ents[i].data, c * 4, path, e) < 0)
				goto fail;
			continue;
		}
		/* BF16: convert through a bounded staging buffer */
		uint16_t stage[8192];
		for (size_t k = 0; k < c; k += 8192) {
			size_t m = c - k < 8192 ? c - k : 8192;
			for (size_t j = 0; j < m; j++)
				stage[j] = st_f32_to_bf16(ents[i].data[k + j]);
			if (fsys_write_all(fd, stage, m * 2, path, e) < 0)
				goto fail;
		}
	}
	if (fsys_fsync(fd, path, e) < 0)
		goto fail;
	r = fsys_close(fd, path, e);
	goto out;
fail:
	close(fd);
	goto out;
oom:
	err_set(e, "%s: out of memory", path);
out:
	buf_free(&h);
	return r;
}

int st_write_dir(const char *dir, const struct st_entry *ents, int n, enum st_dtype dtype,
                 size_t shard_bytes, struct err *e)
{
	size_t es = dtype_sizes[dtype], total = 0;
	for (int i = 0; i < n; i++)
		total += entry_count(&ents[i]) * es;
	char path[4096];
	if (shard_bytes == 0 || total <= shard_bytes) {
		if (path_join(path, sizeof path, dir, "model.safetensors", e) < 0)
			return -1;
		return st_write_file(path, ents, n, dtype, e);
	}
	/* greedy: a shard takes tensors in order until the next would overflow it */
	int *shard_of = malloc((size_t)n * sizeof *shard_of);
	if (!shard_of)
		return err_set(e, "%s: out of memory", dir);
	int nshards = 0;
	size_t used = 0;
	for (int i = 0; i < n; i++) {
		size_t nb = entry_count(&ents[i]) * es;
		if (nshards == 0 || (used > 0 && used + nb > shard_bytes)) {
			nshards++;
			used = 0;
		}
		used += nb;
		shard_of[i] = nshards - 1;
	}
	int r = 0;
	struct buf idx = { 0 };
	if (buf_printf(&idx, "{\n  \"metadata\": {\n    \"total_size\": %zu\n  },\n  \"weight_map\": {", total) < 0)
		r = err_set(e, "%s: out of memory", dir);
	for (int s = 0, first = 0; r == 0 && s < nshards; s++) {
		int last = first;
		while (last < n && shard_of[last] == s)
			last++;
		char name[64];
		snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, nshards);
		r = path_join(path, sizeof path, dir, name, e);
		if (r == 0)
			r = st_write_file(path, ents + first, last - first, dtype, e);
		for (int i = first; r == 0 && i < last; i++)
			if (buf_printf(&idx, "%s\n    \"%s\": \"model-%05d-of-%05d.safetensors\"", i ? "," : "",
			               ents[i].name, s + 1, nshards) < 0)
				r = err_set(e, "%s: out of memory", dir);
		first = last;
	}
	if (r == 0 && buf_printf(&idx, "\n  }\n}\n") < 0)
		r = err_set(e, "%s: out of memory", dir);
	if (r == 0 && path_join(path, sizeof path, dir, "model.safetensors.index.json", e) < 0)
		r = -1;
	if (r == 0) {
		int fd = fsys_open_excl(path, e);
		if (fd < 0 || fsys_write_all(fd, idx.data, idx.len, path, e) < 0 || fsys_fsync(fd, path, e) < 0)
			r = -1;
		if (fd >= 0 && fsys_close(fd, path, r < 0 ? NULL : e) < 0)   /* keep the first error's message */
			r = -1;
	}
	buf_free(&idx);
	free(shard_of);
	return r;
}
