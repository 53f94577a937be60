/* tokenizer.c: see tokenizer.h. */
#include "model/tokenizer.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "data/jsonview.h"

/* The two Split patterns this scanner implements, as tokenizer.json spells them. */
static const char PAT_QWEN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum { KIND_NONE, KIND_VOCAB, KIND_ADDED };

struct idinfo {                 /* what an id decodes to */
	uint32_t off, len;          /* bytes in pool */
	uint8_t kind, special;
};

struct vslot {                  /* vocab hash: bytes -> id */
	uint32_t off, len;          /* len | VRAW: a token outside the byte table, as its UTF-8 */
	int32_t id;                 /* -1: empty */
};

/* Tokens outside the byte table share the vocab hash, so that loading can
 * look up merges and added tokens spelled with them; no byte string's
 * length has this bit, so encoding never finds them. */
#define VRAW 0x80000000u

struct mslot {                  /* merge hash: (left id, right id) -> rank, merged id */
	uint64_t key;
	uint32_t rank;
	int32_t id;                 /* -1: empty */
};

struct added {
	uint32_t off, len;          /* content in pool (normalized for the normalized set) */
	int32_t id;
	uint8_t first;              /* first byte of the content */
	uint8_t special, lstrip, rstrip, single_word;
	const unsigned char *p;     /* the content, t->pool + off (set once the pool is final) */
};

/* One set of added tokens to split on: sorted by content, a token before the
 * tokens it is a prefix of, equal ones by id. */
struct added_set {
	struct added *a;            /* (n) */
	size_t n;
	uint32_t first[257];        /* a[first[c] .. first[c+1]) begin with byte c */
};

struct tokenizer {
	int nfc;                    /* normalizer is NFC */
	int digits3;                /* \p{N}{1,3} (Llama 3) rather than \p{N} */
	int ignore_merges;
	uint32_t n_ids, ids_cap;
	uint32_t id_limit;          /* ids must be below it (see grow_ids) */
	uint32_t n_vocab;           /* entries in model.vocab: tokenizers numbers added tokens on from it */
	struct idinfo *ids;         /* (n_ids), room for ids_cap */
	unsigned char *pool;
	size_t pool_len, pool_cap;
	struct vslot *vocab;        /* (vmask + 1) */
	size_t vmask;
	struct mslot *merges;       /* (mmask + 1) */
	size_t mmask;
	int32_t byte_id[256];       /* the token of each single byte */
	struct added_set raw, norm; /* normalized: false / true */
	char name[256];
};

int tok_ids_push(struct tok_ids *a, int32_t id)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		int32_t *p = realloc(a->v, cap * sizeof *p);
		if (!p)
			return -1;
		a->v = p;
		a->cap = cap;
	}
	a->v[a->n++] = id;
	return 0;
}

void tok_ids_free(struct tok_ids *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* ---- byte-level mapping (GPT-2's bytes_to_unicode) ---- */

/* The byte a byte-level code point stands for, or -1. Printable bytes stand
 * for themselves; the other 68, in ascending order, are U+0100 onwards. */
static int cp_byte(uint32_t cp)
{
	if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
		return (int)cp;
	if (cp < 0x100 || cp > 0x143)
		return -1;
	uint32_t k = cp - 0x100;
	if (k < 33)
		return (int)k;              /* 0x00 .. 0x20 */
	if (k < 67)
		return (int)(0x7F + k - 33); /* 0x7F .. 0xA0 */
	return 0xAD;
}

/* Bytes of the byte-level token string s[0..n) into out[]; returns the
 * length, or -1 if some character is outside the table (out has room for n). */
static long token_bytes_n(const char *s, size_t n, unsigned char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	long k = 0;
	while (i < n) {
		uint32_t cp;
		int l = uni_utf8_decode(p + i, n - i, &cp);
		if (l <= 0)
			return -1;
		int b = cp_byte(cp);
		if (b < 0)
			return -1;
		out[k++] = (unsigned char)b;
		i += (size_t)l;
	}
	return k;
}

static long token_bytes(const char *s, unsigned char *out)
{
	return token_bytes_n(s, strlen(s), out);
}

/* ---- hash tables ---- */

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t k)
{
	k *= 0x9E3779B97F4A7C15ull;
	return k ^ (k >> 31);
}

static int32_t vocab_find(const struct tokenizer *t, const unsigned char *p, size_t n)
{
	for (size_t i = hash_bytes(p, n) & t->vmask;; i = (i + 1) & t->vmask) {
		const struct vslot *s = &t->vocab[i];
		if (s->id < 0)
			return -1;
		if (s->len == n && memcmp(t->pool + s->off, p, n) == 0)
			return s->id;
	}
}

static const struct mslot *merge_find(const struct tokenizer *t, int32_t a, int32_t b)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	for (size_t i = hash_pair(key) & t->mmask;; i = (i + 1) & t->mmask) {
		const struct mslot *s = &t->merges[i];
		if (s->id < 0)
			return NULL;
		if (s->key == key)
			return s;
	}
}

static size_t table_size(size_t n)
{
	size_t cap = 16;
	while (cap < n * 2)
		cap *= 2;
	return cap;
}

/* ---- loading ---- */

static int pool_add(struct tokenizer *t, const void *p, size_t n, uint32_t *off)
{
	if (t->pool_len + n > t->pool_cap) {
		size_t cap = t->pool_cap ? t->pool_cap : 1 << 16;
		while (cap < t->pool_len + n)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -1;
		unsigned char *q = realloc(t->pool, cap);
		if (!q)
			return -1;
		t->pool = q;
		t->pool_cap = cap;
	}
	if (n)   /* an empty token ("" in the vocab) before the pool exists */
		memcpy(t->pool + t->pool_len, p, n);
	*off = (uint32_t)t->pool_len;
	t->pool_len += n;
	return 0;
}

/*
 * The id table is indexed by id, so one id far beyond the others would ask
 * for gigabytes (id 2e9: 24 GiB) and fail as "out of memory", or worse,
 * succeed. Real vocabularies are dense (Qwen: 151669 ids, Llama 3: 128256),
 * so ids are bounded by the file's own size: 1M, or four times its entries.
 */
enum { TOK_MIN_ID_LIMIT = 1 << 20 };

static void set_id_limit(struct tokenizer *t, const cJSON *vocab, const cJSON *added)
{
	uint64_t entries = (uint64_t)cJSON_GetArraySize(vocab) + (uint64_t)cJSON_GetArraySize(added);
	uint64_t lim = 4 * entries > TOK_MIN_ID_LIMIT ? 4 * entries : TOK_MIN_ID_LIMIT;
	t->id_limit = lim < INT32_MAX ? (uint32_t)lim : INT32_MAX;
}

static int grow_ids(struct tokenizer *t, uint32_t id, struct err *e)
{
	if (id < t->n_ids)
		return 0;
	if (id >= t->id_limit)
		return err_set(e, "id %u is beyond the ids a tokenizer of this size may use (below %u): "
			       "the table of ids up to it would take %.3g GiB", id, t->id_limit,
			       ((double)id + 1) * sizeof *t->ids / (1 << 30));
	/* ids arrive one at a time: grow geometrically, or loading is quadratic */
	if (id >= t->ids_cap) {
		size_t cap = t->ids_cap ? t->ids_cap : 1024;
		while (cap <= id)
			cap *= 2;
		struct idinfo *p = realloc(t->ids, cap * sizeof *p);
		if (!p)
			return err_set(e, "out of memory for a table of %zu token ids", cap);
		t->ids = p;
		t->ids_cap = (uint32_t)cap;
	}
	memset(t->ids + t->n_ids, 0, ((size_t)id + 1 - t->n_ids) * sizeof *t->ids);
	t->n_ids = id + 1;
	return 0;
}

/* What a JSON value is, for messages that say what was found instead. */
static const char *json_kind(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsTrue(v))
		return "true";
	if (cJSON_IsFalse(v))
		return "false";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

/* A true/false field of the object at path: 1 or 0, or -1 with the message.
 * tokenizers refuses a file that lacks a field it requires (need), or has
 * anything but true or false (or null, for optional ones) in one. */
static int get_flag(const cJSON *o, const char *k, int need, int dflt, const char *path, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	if (!v && need)
		return err_set(e, "%s: no \"%s\" (tokenizers requires it)", path, k);
	if (!v || (!need && cJSON_IsNull(v)))
		return dflt;
	return err_set(e, "%s.%s: expected true or false, not %s", path, k, json_kind(v));
}

/* An optional string field: its text ("" when missing or null), or NULL
 * with the message. */
static const char *get_str(const cJSON *o, const char *k, const char *path, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v || cJSON_IsNull(v))
		return "";
	if (cJSON_IsString(v))
		return v->valuestring;
	err_set(e, "%s.%s: expected a string, not %s", path, k, json_kind(v));
	return NULL;
}

static const char *get_type(const cJSON *o)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "type");
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The "type" of the object at path, or NULL with the message. */
static const char *need_type(const cJSON *o, const char *path, struct err *e)
{
	if (!cJSON_IsObject(o)) {
		err_set(e, "%s: expected an object, not %s", path, json_kind(o));
		return NULL;
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!cJSON_IsString(v)) {
		if (v)
			err_set(e, "%s.type: expected a string, not %s", path, json_kind(v));
		else
			err_set(e, "%s: no \"type\"", path);
		return NULL;
	}
	return v->valuestring;
}

/* An id as tokenizers reads one, a whole number from 0 to 2^32 - 1 (ids the
 * table cannot hold are grow_ids' to refuse): 0, or -1 with the message. */
static int get_id(const cJSON *v, uint32_t *id, struct err *e)
{
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= UINT32_MAX &&
	    v->valuedouble == (double)(uint32_t)v->valuedouble) {
		*id = (uint32_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsNumber(v))
		return err_set(e, "expected an id (a whole number from 0 to 4294967295), not %.17g", v->valuedouble);
	return err_set(e, "expected an id (a whole number from 0 to 4294967295), not %s", json_kind(v));
}

/* The slot of the vocab key with these bytes (len: with VRAW for a token
 * outside the byte table): where it is, or the empty slot it would take. */
static struct vslot *vocab_slot(struct tokenizer *t, const void *p, uint32_t len)
{
	size_t n = len & ~VRAW;
	size_t i = hash_bytes(p, n) & t->vmask;
	while (t->vocab[i].id >= 0 && !(t->vocab[i].len == len && memcmp(t->pool + t->vocab[i].off, p, n) == 0))
		i = (i + 1) & t->vmask;
	return &t->vocab[i];
}

/* The id of model.vocab's key s[0..n), or -1; *raw says whether it is
 * outside the byte table. tmp has room for n bytes. */
static int32_t vocab_key(struct tokenizer *t, const char *s, size_t n, unsigned char *tmp, int *raw)
{
	long bl = token_bytes_n(s, n, tmp);
	*raw = bl < 0;
	if (bl < 0)
		return n < VRAW ? vocab_slot(t, s, (uint32_t)n | VRAW)->id : -1;
	return vocab_find(t, tmp, (size_t)bl);
}

static int load_vocab(struct tokenizer *t, const cJSON *vocab, struct err *e)
{
	if (!vocab)
		return err_set(e, "model: no \"vocab\"");
	if (!cJSON_IsObject(vocab))
		return err_set(e, "model.vocab: expected an object, not %s", json_kind(vocab));
	size_t n = (size_t)cJSON_GetArraySize(vocab);
	t->vmask = table_size(n) - 1;
	t->vocab = malloc((t->vmask + 1) * sizeof *t->vocab);
	if (!t->vocab)
		return err_set(e, "out of memory");
	for (size_t i = 0; i <= t->vmask; i++)
		t->vocab[i].id = -1;
	for (int b = 0; b < 256; b++)
		t->byte_id[b] = -1;
	unsigned char *tmp = NULL;
	size_t tmp_cap = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, vocab) {
		uint32_t id;
		if (get_id(it, &id, e) < 0 || grow_ids(t, id, e) < 0) {
			free(tmp);
			return err_prefix(e, "model.vocab[\"%.64s\"]", it->string);
		}
		size_t sl = strlen(it->string);
		if (sl + 1 > tmp_cap) {
			tmp_cap = sl + 64;
			unsigned char *q = realloc(tmp, tmp_cap);
			if (!q) {
				free(tmp);
				return err_set(e, "out of memory");
			}
			tmp = q;
		}
		/* A token with characters outside the byte table decodes as its
		 * own UTF-8 (as tokenizers' ByteLevel decoder does) and can never
		 * come out of byte-level encoding. */
		long bl = token_bytes(it->string, tmp);
		const void *bytes = bl >= 0 ? (const void *)tmp : (const void *)it->string;
		size_t len = bl >= 0 ? (size_t)bl : sl;
		struct vslot *s = len < VRAW ? vocab_slot(t, bytes, (uint32_t)len | (bl < 0 ? VRAW : 0)) : NULL;
		if (s && s->id >= 0) {
			/* tokenizers keeps the last, and the first one's id then
			 * decodes to nothing */
			free(tmp);
			return err_set(e, "model.vocab[\"%.64s\"]: listed twice, with ids %d and %u",
				       it->string, (int)s->id, id);
		}
		struct idinfo *d = &t->ids[id];
		if (d->kind != KIND_NONE) {
			free(tmp);
			return err_set(e, "model.vocab[\"%.64s\"]: id %u is another token's too "
				       "(one id for two tokens is not supported)", it->string, id);
		}
		if (!s || pool_add(t, bytes, len, &d->off) < 0) {
			free(tmp);
			return err_set(e, "out of memory");
		}
		d->len = (uint32_t)len;
		d->kind = KIND_VOCAB;
		if (bl == 1)
			t->byte_id[tmp[0]] = (int32_t)id;
		*s = (struct vslot){ d->off, d->len | (bl < 0 ? VRAW : 0), (int32_t)id };
		t->n_vocab++;
	}
	free(tmp);
	return 0;
}

static int load_merges(struct tokenizer *t, const cJSON *merges, struct err *e)
{
	if (!merges)
		return err_set(e, "model: no \"merges\"");
	if (!cJSON_IsArray(merges))
		return err_set(e, "model.merges: expected an array, not %s", json_kind(merges));
	size_t n = (size_t)cJSON_GetArraySize(merges);
	t->mmask = table_size(n) - 1;
	t->merges = malloc((t->mmask + 1) * sizeof *t->merges);
	if (!t->merges)
		return err_set(e, "out of memory");
	for (size_t i = 0; i <= t->mmask; i++)
		t->merges[i].id = -1;
	char *tmp = NULL;           /* a and b joined, then room for the bytes of either */
	size_t tmp_cap = 0, k = 0;
	uint32_t rank = 0;
	int strings = -1;           /* the first entry's form: tokenizers takes one throughout */
	const cJSON *it;
	int rc = -1;
	cJSON_ArrayForEach(it, merges) {
		size_t at = k++;
		const char *a, *b;
		size_t la, lb;
		int is_str = cJSON_IsString(it);
		if (!is_str && !(cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
				 cJSON_IsString(cJSON_GetArrayItem(it, 0)) && cJSON_IsString(cJSON_GetArrayItem(it, 1)))) {
			err_set(e, "model.merges[%zu]: expected \"a b\" or [\"a\", \"b\"], not %s", at,
				cJSON_IsArray(it) ? "that array" : json_kind(it));
			goto done;
		}
		if (strings < 0)
			strings = is_str;
		if (is_str != strings) {
			err_set(e, "model.merges[%zu]: %s where model.merges[0] is %s: tokenizers takes merges all as "
				"\"a b\" strings or all as [\"a\", \"b\"] pairs", at, is_str ? "a string" : "a pair",
				strings ? "a string" : "a pair");
			goto done;
		}
		if (is_str) {
			/* tokenizers skips "#version" lines, wherever they are */
			const char *s = it->valuestring;
			if (strncmp(s, "#version", 8) == 0)
				continue;
			const char *sp = strchr(s, ' ');
			if (!sp || strchr(sp + 1, ' ')) {
				err_set(e, "model.merges[%zu]: \"%.64s\" is not two tokens with one space between", at, s);
				goto done;
			}
			a = s;
			la = (size_t)(sp - s);
			b = sp + 1;
			lb = strlen(b);
		} else {
			a = cJSON_GetArrayItem(it, 0)->valuestring;
			b = cJSON_GetArrayItem(it, 1)->valuestring;
			la = strlen(a);
			lb = strlen(b);
		}
		if (2 * (la + lb) > tmp_cap) {
			size_t cap = 2 * (la + lb) + 64;
			char *q = realloc(tmp, cap);
			if (!q) {
				err_set(e, "out of memory");
				goto done;
			}
			tmp = q;
			tmp_cap = cap;
		}
		unsigned char *bytes = (unsigned char *)tmp + la + lb;
		int ra, rb, rab;
		int32_t ia = vocab_key(t, a, la, bytes, &ra), ib = vocab_key(t, b, lb, bytes, &rb);
		if (ia < 0 || ib < 0) {
			err_set(e, "model.merges[%zu]: \"%.*s\" is not in the vocab", at,
				(int)(ia < 0 ? (la < 64 ? la : 64) : (lb < 64 ? lb : 64)), ia < 0 ? a : b);
			goto done;
		}
		memcpy(tmp, a, la);
		memcpy(tmp + la, b, lb);
		int32_t iab = vocab_key(t, tmp, la + lb, bytes, &rab);
		if (iab < 0) {
			err_set(e, "model.merges[%zu]: \"%.*s\", the merge of \"%.*s\" and \"%.*s\", is not in the vocab",
				at, (int)(la + lb < 64 ? la + lb : 64), tmp, (int)(la < 64 ? la : 64), a,
				(int)(lb < 64 ? lb : 64), b);
			goto done;
		}
		if (ra || rb) {
			/* Not byte-level characters: no byte-level input reaches it. */
			rank++;
			continue;
		}
		/* a pair listed twice keeps its last rank, as in tokenizers */
		uint64_t key = (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib;
		size_t i = hash_pair(key) & t->mmask;
		while (t->merges[i].id >= 0 && t->merges[i].key != key)
			i = (i + 1) & t->mmask;
		t->merges[i] = (struct mslot){ key, rank, iab };
		rank++;
	}
	rc = 0;
done:
	free(tmp);
	return rc;
}

static int cmp_added(const void *x, const void *y)
{
	const struct added *a = x, *b = y;
	int c = memcmp(a->p, b->p, a->len < b->len ? a->len : b->len);
	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static void index_set(struct added_set *s, const unsigned char *pool)
{
	for (size_t k = 0; k < s->n; k++)
		s->a[k].p = pool + s->a[k].off;
	qsort(s->a, s->n, sizeof *s->a, cmp_added);
	size_t k = 0;
	for (unsigned c = 0; c <= 256; c++) {
		while (k < s->n && s->a[k].first < c)
			k++;
		s->first[c] = (uint32_t)k;
	}
}

/* An added token seen while loading, by content (see load_added). */
struct aslot {
	const char *c;              /* NULL: empty */
	size_t len, at;             /* content length, index in added_tokens */
	uint32_t id;
	unsigned flags;
};

static int load_added(struct tokenizer *t, const cJSON *arr, struct err *e)
{
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return err_set(e, "added_tokens: expected an array, not %s", json_kind(arr));
	size_t n = (size_t)cJSON_GetArraySize(arr);
	size_t smask = table_size(n) - 1;
	t->raw.a = calloc(n + 1, sizeof *t->raw.a);
	t->norm.a = calloc(n + 1, sizeof *t->norm.a);
	struct aslot *seen = calloc(smask + 1, sizeof *seen);
	unsigned char *tmp = NULL;
	size_t tmp_cap = 0;
	struct buf nb = { 0 };
	int rc = -1;
	if (!t->raw.a || !t->norm.a || !seen) {
		err_set(e, "out of memory");
		goto done;
	}
	/* tokenizers does not keep the ids it reads: it gives an added token
	 * its id in the vocab, else the next of n_vocab, n_vocab + 1, ... */
	uint32_t fresh = 0;
	size_t k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr) {
		size_t at = k++;
		char path[48];
		snprintf(path, sizeof path, "added_tokens[%zu]", at);
		if (!cJSON_IsObject(it)) {
			err_set(e, "%s: expected an object, not %s", path, json_kind(it));
			goto done;
		}
		const cJSON *idv = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
		uint32_t tid;
		if (!idv || !content) {
			err_set(e, "%s: no \"%s\"", path, idv ? "content" : "id");
			goto done;
		}
		if (get_id(idv, &tid, e) < 0) {
			err_prefix(e, "%s.id", path);
			goto done;
		}
		if (!cJSON_IsString(content)) {
			err_set(e, "%s.content: expected a string, not %s", path, json_kind(content));
			goto done;
		}
		static const char *const flag[] = { "special", "normalized", "lstrip", "rstrip", "single_word" };
		int f[5];
		unsigned flags = 0;
		for (int i = 0; i < 5; i++) {
			if ((f[i] = get_flag(it, flag[i], 1, 0, path, e)) < 0)
				goto done;
			flags |= (unsigned)f[i] << i;
		}
		const char *c = content->valuestring;
		size_t cl = strlen(c);
		if (cl == 0)
			continue;   /* tokenizers ignores an empty added token */
		if (uni_utf8_check((const unsigned char *)c, cl) != cl) {
			/* the file is checked whole, but uni_nfc needs this */
			err_set(e, "%s.content: not valid UTF-8", path);
			goto done;
		}
		struct aslot *s = &seen[hash_bytes((const unsigned char *)c, cl) & smask];
		while (s->c && !(s->len == cl && memcmp(s->c, c, cl) == 0))
			s = s == &seen[smask] ? seen : s + 1;
		if (s->c) {
			if (s->id == tid && s->flags == flags)
				continue;   /* tokenizers skips it as already added */
			err_set(e, "%s: \"%.64s\" is added_tokens[%zu] again, with another %s (not supported)", path, c,
				s->at, s->id != tid ? "id" : "special, normalized, lstrip, rstrip or single_word");
			goto done;
		}
		*s = (struct aslot){ c, cl, at, tid, flags };
		if (cl > tmp_cap) {
			unsigned char *q = realloc(tmp, cl);
			if (!q) {
				err_set(e, "out of memory");
				goto done;
			}
			tmp = q;
			tmp_cap = cl;
		}
		int raw;
		int32_t vid = vocab_key(t, c, cl, tmp, &raw);
		uint64_t want = vid >= 0 ? (uint64_t)vid : (uint64_t)t->n_vocab + fresh++;
		if (tid != want) {
			if (vid >= 0)
				err_set(e, "%s: \"%.64s\" has id %u, but tokenizers gives it %u, its id in model.vocab",
					path, c, tid, (unsigned)want);
			else
				err_set(e, "%s: \"%.64s\" has id %u, but tokenizers gives it %llu: it numbers the added "
					"tokens that model.vocab lacks one after another, in file order, from the vocab's "
					"size (%u)", path, c, tid, (unsigned long long)want, t->n_vocab);
			goto done;
		}
		if (grow_ids(t, tid, e) < 0) {
			err_prefix(e, "%s", path);
			goto done;
		}
		struct idinfo *d = &t->ids[tid];
		if (d->kind == KIND_ADDED) {
			err_set(e, "%s: id %u is another added token's too", path, tid);
			goto done;
		}
		/* An added token that is also in the vocab decodes as the added
		 * token: tokenizers looks there first. */
		if (pool_add(t, c, cl, &d->off) < 0) {
			err_set(e, "out of memory");
			goto done;
		}
		d->len = (uint32_t)cl;
		d->kind = KIND_ADDED;
		d->special = (uint8_t)f[0];
		struct added a = {
			.off = d->off, .len = d->len, .id = (int32_t)tid, .special = d->special,
			.lstrip = (uint8_t)f[2], .rstrip = (uint8_t)f[3], .single_word = (uint8_t)f[4],
		};
		if (f[1] && t->nfc) {
			/* Matched against normalized text, so in its normalized form. */
			buf_reset(&nb);
			if (uni_nfc(&nb, (const unsigned char *)c, cl) < 0 || pool_add(t, nb.data, nb.len, &a.off) < 0) {
				err_set(e, "out of memory");
				goto done;
			}
			a.len = (uint32_t)nb.len;
		}
		a.first = t->pool[a.off];
		struct added_set *set = f[1] ? &t->norm : &t->raw;
		set->a[set->n++] = a;
	}
	index_set(&t->raw, t->pool);
	index_set(&t->norm, t->pool);
	rc = 0;
done:
	buf_free(&nb);
	free(tmp);
	free(seen);
	return rc;
}

static int load_normalizer(struct tokenizer *t, const cJSON *n, const char *path, struct err *e)
{
	const char *type = need_type(n, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "NFC") == 0) {
		t->nfc = 1;
		return 0;
	}
	if (strcmp(type, "Sequence") == 0) {
		const cJSON *seq = cJSON_GetObjectItemCaseSensitive(n, "normalizers");
		if (!cJSON_IsArray(seq))
			return seq ? err_set(e, "%s.normalizers: expected an array, not %s", path, json_kind(seq))
				   : err_set(e, "%s: Sequence without \"normalizers\"", path);
		const cJSON *it;
		size_t k = 0;
		cJSON_ArrayForEach(it, seq) {
			char sub[256];
			snprintf(sub, sizeof sub, "%s.normalizers[%zu]", path, k++);
			if (load_normalizer(t, it, sub, e) < 0)
				return -1;
		}
		return 0;
	}
	return err_set(e, "%s: type \"%s\" is not supported (only NFC, or none)", path, type);
}

#define PRE_ONLY "only Sequence[Split, ByteLevel], as Qwen2, Qwen3 and Llama 3 have, is supported"

static int load_pre_tokenizer(struct tokenizer *t, const cJSON *p, struct err *e)
{
	if (!p || cJSON_IsNull(p))
		return err_set(e, "pre_tokenizer: none given, and " PRE_ONLY);
	const char *type = need_type(p, "pre_tokenizer", e);
	if (!type)
		return -1;
	if (strcmp(type, "Sequence") != 0)
		return err_set(e, "pre_tokenizer: type \"%.64s\" is not supported: " PRE_ONLY, type);
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
	if (!cJSON_IsArray(seq))
		return seq ? err_set(e, "pre_tokenizer.pretokenizers: expected an array, not %s", json_kind(seq))
			   : err_set(e, "pre_tokenizer: Sequence without \"pretokenizers\"");
	const cJSON *split = cJSON_GetArrayItem(seq, 0), *bl = cJSON_GetArrayItem(seq, 1);
	if (cJSON_GetArraySize(seq) != 2 || strcmp(get_type(split), "Split") != 0 || strcmp(get_type(bl), "ByteLevel") != 0) {
		char got[160] = "";
		size_t m = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, seq)
			if (m < sizeof got)
				m += (size_t)snprintf(got + m, sizeof got - m, "%s%s", m ? ", " : "",
						      *get_type(it) ? get_type(it) : "?");
		return err_set(e, "pre_tokenizer: Sequence[%s] is not supported: " PRE_ONLY, got);
	}
	const char *sp = "pre_tokenizer.pretokenizers[0]", *bp = "pre_tokenizer.pretokenizers[1]";
	const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(split, "pattern");
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(pattern, "Regex");
	if (!pattern)
		return err_set(e, "%s: Split without \"pattern\"", sp);
	if (!cJSON_IsString(pat) || cJSON_GetArraySize(pattern) != 1)
		return err_set(e, "%s.pattern: only a Regex, the Qwen2/Qwen3 or the Llama 3 one, is supported", sp);
	if (strcmp(pat->valuestring, PAT_QWEN) == 0)
		t->digits3 = 0;
	else if (strcmp(pat->valuestring, PAT_LLAMA3) == 0)
		t->digits3 = 1;
	else
		return err_set(e, "%s.pattern.Regex: \"%.200s\" is neither the Qwen2/Qwen3 one nor the Llama 3 one "
			       "(no other is supported)", sp, pat->valuestring);
	const cJSON *beh = cJSON_GetObjectItemCaseSensitive(split, "behavior");
	if (!beh)
		return err_set(e, "%s: Split without \"behavior\"", sp);
	if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") != 0)
		return err_set(e, "%s.behavior: %s%.64s%s is not supported (only \"Isolated\")", sp,
			       cJSON_IsString(beh) ? "\"" : "", cJSON_IsString(beh) ? beh->valuestring : json_kind(beh),
			       cJSON_IsString(beh) ? "\"" : "");
	int inv = get_flag(split, "invert", 1, 0, sp, e);
	if (inv < 0)
		return -1;
	if (inv)
		return err_set(e, "%s.invert: true is not supported", sp);
	int aps = get_flag(bl, "add_prefix_space", 1, 0, bp, e);
	if (aps < 0 || get_flag(bl, "trim_offsets", 1, 0, bp, e) < 0)
		return -1;
	if (aps)
		return err_set(e, "%s.add_prefix_space: true is not supported", bp);
	int re = get_flag(bl, "use_regex", 0, 1, bp, e);
	if (re < 0)
		return -1;
	if (re)
		return err_set(e, "%s: ByteLevel with use_regex true%s is not supported (the Split before it splits the text)",
			       bp, cJSON_GetObjectItemCaseSensitive(bl, "use_regex") ? "" : ", as tokenizers takes it when missing,");
	return 0;
}

static int load_model(struct tokenizer *t, const cJSON *m, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "type");
	if (v && !cJSON_IsString(v))
		return err_set(e, "model.type: expected a string, not %s", json_kind(v));
	if (v && strcmp(v->valuestring, "BPE") != 0)
		return err_set(e, "model: type \"%.64s\" is not supported (only BPE)", v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(m, "dropout")) && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1)
			return cJSON_IsNumber(v) ? err_set(e, "model.dropout: %g is not from 0 to 1", v->valuedouble)
						 : err_set(e, "model.dropout: expected a number, not %s", json_kind(v));
		if (v->valuedouble != 0)
			return err_set(e, "model.dropout: %g is not supported (only 0 or null: BPE dropout "
				       "leaves merges out at random)", v->valuedouble);
	}
	int bf = get_flag(m, "byte_fallback", 0, 0, "model", e);
	if (bf < 0 || get_flag(m, "fuse_unk", 0, 0, "model", e) < 0 || !get_str(m, "unk_token", "model", e))
		return -1;
	if (bf)
		return err_set(e, "model.byte_fallback: true is not supported (byte-level BPE has no <0xNN> tokens to fall back on)");
	const char *affix[] = { "continuing_subword_prefix", "end_of_word_suffix" };
	for (int i = 0; i < 2; i++) {
		const char *s = get_str(m, affix[i], "model", e);
		if (!s)
			return -1;
		if (*s)
			return err_set(e, "model.%s: \"%.64s\" is not supported (only \"\" or null)", affix[i], s);
	}
	if ((t->ignore_merges = get_flag(m, "ignore_merges", 0, 0, "model", e)) < 0)
		return -1;
	if (load_vocab(t, cJSON_GetObjectItemCaseSensitive(m, "vocab"), e) < 0)
		return -1;
	return load_merges(t, cJSON_GetObjectItemCaseSensitive(m, "merges"), e);
}

static int load_decoder(const cJSON *d, struct err *e)
{
	if (!d || cJSON_IsNull(d))
		return err_set(e, "decoder: none given, and only ByteLevel is supported (without it, decoded text "
			       "would keep the byte-level characters)");
	const char *type = need_type(d, "decoder", e);
	if (!type)
		return -1;
	if (strcmp(type, "ByteLevel") != 0)
		return err_set(e, "decoder: type \"%.64s\" is not supported (only ByteLevel)", type);
	if (get_flag(d, "add_prefix_space", 1, 0, "decoder", e) < 0 || get_flag(d, "trim_offsets", 1, 0, "decoder", e) < 0 ||
	    get_flag(d, "use_regex", 0, 1, "decoder", e) < 0)
		return -1;
	return 0;
}

/* Line and byte of p in json[0..n), for messages. */
static void json_where(const char *json, size_t n, const char *p, char *out, size_t cap)
{
	size_t at = (size_t)(p - json), line = 1;
	for (size_t i = 0; i < at && i < n; i++)
		line += json[i] == '\n';
	snprintf(out, cap, "line %zu (byte %zu)", line, at);
}

struct tokenizer *tok_load_mem(const char *json, size_t n, const char *name, struct err *e)
{
	struct tokenizer *t = calloc(1, sizeof *t);
	if (!t) {
		err_set(e, "%s: out of memory", name);
		return NULL;
	}
	snprintf(t->name, sizeof t->name, "%s", name);
	cJSON *root = NULL;
	char where[64];
	size_t sp = 0, bad;
	while (sp < n && strchr(" \t\r\n", json[sp]))
		sp++;
	if (sp == n) {
		err_set(e, "the file is empty: not a tokenizer.json");
		goto fail;
	}
	/* tokenizers reads text, as cJSON does not check */
	if ((bad = uni_utf8_check((const unsigned char *)json, n)) < n) {
		json_where(json, n, json + bad, where, sizeof where);
		err_set(e, "not valid UTF-8, at %s", where);
		goto fail;
	}
	const char *end = NULL;
	root = json_parse_n(json, n, &end);
	if (!root && errno == ENOMEM) {
		err_sys(e, "JSON");
		goto fail;
	}
	if (!root) {
		const char *at = end;   /* where cJSON stopped (its global error pointer is shared by threads) */
		if (json_cut_short(json, n))
			err_set(e, "not valid JSON: it ends inside a string or a bracket (truncated?)");
		else if (at && at >= json && at < json + n) {
			json_where(json, n, at, where, sizeof where);
			err_set(e, "not valid JSON near %s", where);
		} else
			err_set(e, "not valid JSON");
		goto fail;
	}
	if (end) {
		while (end < json + n && strchr(" \t\r\n", *end) && *end)
			end++;
		if (end < json + n) {
			json_where(json, n, end, where, sizeof where);
			err_set(e, "not valid JSON: more follows its end, at %s", where);
			goto fail;
		}
	}
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	set_id_limit(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), cJSON_GetObjectItemCaseSensitive(root, "added_tokens"));
	const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
	if (!cJSON_IsObject(root))
		err_set(e, "not a tokenizer.json: the JSON is %s, not an object", json_kind(root));
	else if (!model)
		err_set(e, "no \"model\": not a tokenizer.json");
	else if (!cJSON_IsObject(model))
		err_set(e, "model: expected an object, not %s", json_kind(model));
	else if (load_decoder(cJSON_GetObjectItemCaseSensitive(root, "decoder"), e) == 0 &&
		 (!norm || cJSON_IsNull(norm) || load_normalizer(t, norm, "normalizer", e) == 0) &&
		 load_pre_tokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), e) == 0 &&
		 load_model(t, model, e) == 0 &&
		 load_added(t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), e) == 0) {
		cJSON_Delete(root);
		return t;
	}
fail:
	cJSON_Delete(root);
	err_prefix(e, "%s", name);
	tok_free(t);
	return NULL;
}

struct tokenizer *tok_load(const char *path, struct err *e)
{
	struct buf b = { 0 };
	if (buf_read_file(&b, path, e) < 0)
		return NULL;
	struct tokenizer *t = tok_load_mem((const char *)b.data, b.len, path, e);
	buf_free(&b);
	return t;
}

void tok_free(struct tokenizer *t)
{
	if (!t)
		return;
	free(t->ids);
	free(t->pool);
	free(t->vocab);
	free(t->merges);
	free(t->raw.a);
	free(t->norm.a);
	free(t);
}

uint32_t tok_vocab_size(const struct tokenizer *t)
{
	return t->n_ids;
}

int tok_is_special(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && (uint32_t)id < t->n_ids && t->ids[id].kind == KIND_ADDED && t->ids[id].special;
}

int32_t tok_token_id(const struct tokenizer *t, const char *token)
{
	size_t n = strlen(token);
	for (uint32_t i = 0; i < t->n_ids; i++)
		if (t->ids[i].kind == KIND_ADDED && t->ids[i].len == n && memcmp(t->pool + t->ids[i].off, token, n) == 0)
			return (int32_t)i;
	unsigned char *tmp = malloc(n + 1);
	if (!tmp)
		return -1;
	long bl = token_bytes(token, tmp);
	int32_t id = bl >= 0 ? vocab_find(t, tmp, (size_t)bl) : -1;
	free(tmp);
	return id;
}

/* ---- encoding ---- */

struct sym {
	int32_t id;                 /* -1 once merged into its left neighbour */
	int32_t prev, next;         /* -1 at the ends */
};

struct hent {
	uint32_t rank, pos;
};

/* Scratch space of one tok_encode call. */
struct scratch {
	struct buf norm;
	int missing;                /* a byte the vocab has no token for, or -1 */
	struct sym *sym;            /* (cap) */
	struct hent *heap;          /* (3 * cap) */
	size_t cap, nheap;
};

static int scratch_reserve(struct scratch *sc, size_t n)
{
	if (n <= sc->cap)
		return 0;
	size_t cap = sc->cap ? sc->cap : 64;
	while (cap < n)
		cap *= 2;
	struct sym *s = realloc(sc->sym, cap * sizeof *s);
	if (!s)
		return -1;
	sc->sym = s;
	struct hent *h = realloc(sc->heap, 3 * cap * sizeof *h);
	if (!h)
		return -1;
	sc->heap = h;
	sc->cap = cap;
	return 0;
}

static int hent_less(struct hent a, struct hent b)
{
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(struct scratch *sc, uint32_t rank, uint32_t pos)
{
	size_t i = sc->nheap++;
	struct hent x = { rank, pos };
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!hent_less(x, sc->heap[p]))
			break;
		sc->heap[i] = sc->heap[p];
		i = p;
	}
	sc->heap[i] = x;
}

static struct hent heap_pop(struct scratch *sc)
{
	struct hent top = sc->heap[0], x = sc->heap[--sc->nheap];
	size_t i = 0, n = sc->nheap;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hent_less(sc->heap[c + 1], sc->heap[c]))
			c++;
		if (!hent_less(sc->heap[c], x))
			break;
		sc->heap[i] = sc->heap[c];
		i = c;
	}
	if (n)
		sc->heap[i] = x;
	return top;
}

static void push_pair(const struct tokenizer *t, struct scratch *sc, int32_t pos)
{
	int32_t nx = sc->sym[pos].next;
	if (nx < 0)
		return;
	const struct mslot *m = merge_find(t, sc->sym[pos].id, sc->sym[nx].id);
	if (m)
		heap_push(sc, m->rank, (uint32_t)pos);
}

/* BPE of one pre-token (raw bytes): merge the adjacent pair of lowest rank,
 * leftmost first, until no pair has a merge; as tokenizers' word merging.
 * -1 when memory runs out, -2 (the byte in sc->missing) when a byte has no
 * token, which a vocab without all 256 bytes allows. */
static int bpe(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc,
	       struct tok_ids *out)
{
	if (t->ignore_merges) {
		int32_t id = vocab_find(t, p, n);
		if (id >= 0)
			return tok_ids_push(out, id);
	}
	for (size_t i = 0; i < n; i++)
		if (t->byte_id[p[i]] < 0) {
			sc->missing = p[i];
			return -2;
		}
	if (n == 1)
		return tok_ids_push(out, t->byte_id[p[0]]);
	if (scratch_reserve(sc, n) < 0)
		return -1;
	struct sym *s = sc->sym;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct sym){ t->byte_id[p[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1 };
	sc->nheap = 0;
	for (size_t i = 0; i + 1 < n; i++)
		push_pair(t, sc, (int32_t)i);
	while (sc->nheap) {
		struct hent h = heap_pop(sc);
		struct sym *a = &s[h.pos];
		if (a->id < 0 || a->next < 0)
			continue;   /* stale: merged away meanwhile */
		const struct mslot *m = merge_find(t, a->id, s[a->next].id);
		if (!m || m->rank != h.rank)
			continue;   /* stale: a neighbour changed */
		struct sym *b = &s[a->next];
		a->id = m->id;
		b->id = -1;
		a->next = b->next;
		if (a->next >= 0)
			s[a->next].prev = (int32_t)h.pos;
		if (a->prev >= 0)
			push_pair(t, sc, a->prev);
		push_pair(t, sc, (int32_t)h.pos);
	}
	for (int32_t i = 0; i >= 0; i = s[i].next)
		if (tok_ids_push(out, s[i].id) < 0)
			return -1;
	return 0;
}

static inline size_t cp_at(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
	if (s[i] < 0x80) {
		*cp = s[i];
		return 1;
	}
	int k = uni_utf8_decode(s + i, n - i, cp);
	if (k < 0) {
		*cp = 0xFFFD;   /* unreachable: input was checked */
		return 1;
	}
	return (size_t)k;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) after the quote at s[i-1]: the end, or 0.
 * Case-insensitive as Oniguruma folds: U+017F LONG S folds to s. */
static size_t contraction(const unsigned char *s, size_t n, size_t i)
{
	uint32_t c, d;
	size_t l = cp_at(s, n, i, &c);
	c = c == 0x17F ? 's' : (c < 0x80 ? (c | 0x20) : c);
	if (c == 's' || c == 't' || c == 'm' || c == 'd')
		return i + l;
	if ((c != 'r' && c != 'v' && c != 'l') || i + l >= n)
		return 0;
	size_t l2 = cp_at(s, n, i + l, &d);
	d = d < 0x80 ? (d | 0x20) : d;
	if ((c == 'l' && d == 'l') || (c != 'l' && d == 'e'))
		return i + l + l2;
	return 0;
}

/* End of the pre-tokenizer's match at s[i..n), i < n, by the alternatives of
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} (or \p{N}{1,3})
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * tried left to right, each greedy with backtracking, as Oniguruma does.
 * Some alternative matches at every character, so the matches tile s. */
static size_t pre_match(const unsigned char *s, size_t n, size_t i, int digits3)
{
	uint32_t c0, c;
	size_t l0 = cp_at(s, n, i, &c0), j, l;
	unsigned k0 = uni_class(c0);

	if (c0 == '\'' && i + 1 < n) {
		size_t end = contraction(s, n, i + 1);
		if (end)
			return end;
	}

	/* [^\r\n\p{L}\p{N}]?\p{L}+ */
	j = n + 1;
	if (k0 & UNI_L) {
		j = i;
	} else if (c0 != '\r' && c0 != '\n' && !(k0 & UNI_N) && i + l0 < n) {
		cp_at(s, n, i + l0, &c);
		if (uni_class(c) & UNI_L)
			j = i + l0;
	}
	if (j <= n) {
		while (j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_L))
			j += l;
		return j;
	}

	/* \p{N} or \p{N}{1,3} */
	if (k0 & UNI_N) {
		j = i + l0;
		for (int k = 1; digits3 && k < 3 && j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_N); k++)
			j += l;
		return j;
	}

	/*  ?[^\s\p{L}\p{N}]+[\r\n]* : the optional space is tried first; without
	 * it the match would start at the space, which the class excludes. */
	j = c0 == ' ' ? i + 1 : i;
	if (j < n) {
		size_t start = j;
		while (j < n && (l = cp_at(s, n, j, &c)) && !(uni_class(c) & (UNI_S | UNI_L | UNI_N)))
			j += l;
		if (j > start) {
			while (j < n && (s[j] == '\r' || s[j] == '\n'))
				j++;
			return j;
		}
	}

	/* c0 is white space. \s*[\r\n]+ ends after the run's last \r or \n;
	 * failing that, \s+(?!\S) takes the run but its last character when a
	 * non-space follows; failing that, \s+. */
	size_t last_nl = 0, last_start = i;
	for (j = i; j < n && (l = cp_at(s, n, j, &c)) && (uni_class(c) & UNI_S); j += l) {
		last_start = j;
		if (c == '\r' || c == '\n')
			last_nl = j + 1;
	}
	if (last_nl)
		return last_nl;
	if (j == n || last_start == i)
		return j;
	return last_start;
}

static int encode_words(const struct tokenizer *t, const unsigned char *s, size_t n, struct scratch *sc,
			struct tok_ids *out)
{
	for (size_t i = 0; i < n;) {
		size_t end = pre_match(s, n, i, t->digits3);
		int rc = bpe(t, s + i, end - i, sc, out);
		if (rc < 0)
			return rc;
		i = end;
	}
	return 0;
}

/* Offset of the character that ends s[0..i), i > 0. */
static size_t prev_char(const unsigned char *s, size_t i)
{
	size_t j = i - 1;
	while (j > 0 && (s[j] & 0xC0) == 0x80 && i - j < 4)
		j--;
	return j;
}

/* Classes of the character that ends s[0..i), i > 0, and of the one at s[i]. */
static unsigned class_before(const unsigned char *s, size_t i)
{
	uint32_t c;
	cp_at(s, i, prev_char(s, i), &c);
	return uni_class(c);
}

static unsigned class_at(const unsigned char *s, size_t n, size_t i)
{
	uint32_t c;
	cp_at(s, n, i, &c);
	return uni_class(c);
}

/* Start of the white space that ends s[0..i). */
static size_t space_before(const unsigned char *s, size_t i)
{
	while (i > 0 && (class_before(s, i) & UNI_S))
		i = prev_char(s, i);
	return i;
}

/* The first of a[lo..hi) whose byte d is at least c (above c when above),
 * for a run of tokens that are all longer than d and sorted by content. */
static size_t byte_bound(const struct added *a, size_t lo, size_t hi, size_t d, unsigned c, int above)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid].p[d] < c || (above && a[mid].p[d] == c))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The longest added token of set that s[i..n) begins with (the lowest id of
 * equal ones), or NULL. The tokens that begin with the d bytes s[i..i+d) are
 * a run of the sorted set, the one that is those bytes first; each next byte
 * narrows it by binary search, so the cost does not grow with the number of
 * tokens (Llama 3's 256 all begin with "<|"). */
static const struct added *longest_at(const struct added_set *set, const unsigned char *s, size_t n, size_t i)
{
	const struct added *a = set->a, *best = NULL;
	size_t lo = set->first[s[i]], hi = set->first[s[i] + 1];
	for (size_t d = 1; lo < hi; d++) {
		if (a[lo].len == d) {
			best = &a[lo];
			while (lo < hi && a[lo].len == d)
				lo++;
		}
		if (lo == hi || i + d >= n)
			break;
		lo = byte_bound(a, lo, hi, d, s[i + d], 0);
		hi = byte_bound(a, lo, hi, d, s[i + d], 1);
	}
	return best;
}

/* Find the next added token of set in s[*scan..n): leftmost, then longest,
 * as tokenizers' Aho-Corasick LeftmostLongest; single_word, lstrip and
 * rstrip as its AddedVocabulary::find_matches. Sets *start, *stop (the
 * span it replaces, stripped white space included) and *id; 0 if none.
 * lstrip takes no white space before floor, where the last span stopped.
 * The scan goes on from the end of the match, not of the span, as
 * tokenizers' does: a token that begins inside the white space an rstrip
 * token took is still found, and its span then starts before floor. */
static int next_added(const struct added_set *set, const unsigned char *s, size_t n,
		      size_t *scan, size_t floor, size_t *start, size_t *stop, int32_t *id)
{
	if (set->n == 0)
		return 0;
	for (size_t i = *scan; i < n;) {
		const struct added *hit = longest_at(set, s, n, i);
		if (!hit) {
			i++;
			continue;
		}
		size_t b = i, e = i + hit->len;
		if (hit->single_word && ((b > 0 && (class_before(s, b) & UNI_W)) ||
					 (e < n && (class_at(s, n, e) & UNI_W)))) {
			i = e;  /* the match is consumed, not retried inside */
			continue;
		}
		*scan = e;
		if (hit->lstrip) {
			b = space_before(s, b);
			if (b < floor)
				b = floor;
		}
		if (hit->rstrip) {
			uint32_t ch;
			size_t l;
			while (e < n && (l = cp_at(s, n, e, &ch)) && (uni_class(ch) & UNI_S))
				e += l;
		}
		*start = b;
		*stop = e;
		*id = hit->id;
		return 1;
	}
	return 0;
}

/* A stretch of text between raw added tokens: normalize, split out the
 * normalized added tokens, pre-tokenize and merge the rest. */
static int encode_text(const struct tokenizer *t, const unsigned char *s, size_t n, struct scratch *sc,
		       struct tok_ids *out)
{
	if (t->nfc) {
		buf_reset(&sc->norm);
		if (uni_nfc(&sc->norm, s, n) < 0)
			return -1;
		s = sc->norm.data;
		n = sc->norm.len;
	}
	size_t at = 0, scan = 0, b, e;
	int32_t id;
	while (next_added(&t->norm, s, n, &scan, at, &b, &e, &id)) {
		int rc = b > at ? encode_words(t, s + at, b - at, sc, out) : 0;
		if (rc < 0)
			return rc;
		if (tok_ids_push(out, id) < 0)
			return -1;
		at = e;
	}
	return encode_words(t, s + at, n - at, sc, out);
}

int tok_encode(const struct tokenizer *t, const char *text, size_t n, struct tok_ids *out, struct err *e)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t bad = uni_utf8_check(s, n);
	if (bad != n)
		return err_set(e, "text is not valid UTF-8 at byte %zu (0x%02x)", bad, s[bad]);
	struct scratch sc = { .missing = -1 };
	size_t at = 0, scan = 0, b, stop;
	int32_t id;
	int rc = 0;
	while (rc == 0 && next_added(&t->raw, s, n, &scan, at, &b, &stop, &id)) {
		if (b > at)
			rc = encode_text(t, s + at, b - at, &sc, out);
		if (rc == 0)
			rc = tok_ids_push(out, id);
		at = stop;
	}
	if (rc == 0 && at < n)
		rc = encode_text(t, s + at, n - at, &sc, out);
	buf_free(&sc.norm);
	free(sc.sym);
	free(sc.heap);
	if (rc == -2) {
		char shown[8] = "";
		if (sc.missing > ' ' && sc.missing < 0x7F)
			snprintf(shown, sizeof shown, " ('%c')", sc.missing);
		return err_set(e, "byte 0x%02x%s has no token in this vocabulary", sc.missing, shown);
	}
	return rc < 0 ? err_set(e, "out of memory") : 0;
}

/* ---- decoding ---- */

int tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n, int skip_special,
	       struct buf *out, struct err *e)
{
	size_t start = out->len;
	for (size_t i = 0; i < n; i++) {
		int32_t id = ids[i];
		if (id < 0 || (uint32_t)id >= t->n_ids || t->ids[id].kind == KIND_NONE) {
			out->len = start;
			return err_set(e, "token %zu: id %d is not in the tokenizer (%u ids)", i, (int)id, t->n_ids);
		}
		const struct idinfo *d = &t->ids[id];
		if (skip_special && d->kind == KIND_ADDED && d->special)
			continue;
		if (buf_append(out, t->pool + d->off, d->len) < 0) {
			out->len = start;
			return err_set(e, "out of memory");
		}
	}
	size_t len = out->len - start;
	if (len == 0 || uni_utf8_check(out->data + start, len) == len)
		return 0;   /* (len 0: out->data may be NULL, which takes no offset) */
	/* Some bytes do not form UTF-8 (a character cut between tokens, a
	 * response stopped by length): redo the span with U+FFFD. */
	unsigned char *raw = malloc(len);
	if (!raw) {
		out->len = start;
		return err_set(e, "out of memory");
	}
	memcpy(raw, out->data + start, len);
	out->len = start;
	int rc = uni_utf8_lossy(out, raw, len);
	free(raw);
	if (rc < 0) {
		out->len = start;
		return err_set(e, "out of memory");
	}
	return 0;
}
