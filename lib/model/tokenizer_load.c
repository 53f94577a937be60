/* tokenizer_load.c: reading tokenizer.json into struct tokenizer and checking it. See tokenizer.h,
 * and tokenizer_impl.h for how the modules divide the work. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <errno.h>
#include <oniguruma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/jsonview.h"

/* The two Split patterns the hand-written scanner (tokenizer_pretok.c) implements, as tokenizer.json spells them. */
static const char PAT_QWEN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";


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
int tok_cp_byte(uint32_t cp)
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
long tok_token_bytes_n(const char *s, size_t n, unsigned char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	long k = 0;
	while (i < n) {
		uint32_t cp;
		int l = uni_utf8_decode(p + i, n - i, &cp);
		if (l <= 0)
			return -1;
		int b = tok_cp_byte(cp);
		if (b < 0)
			return -1;
		out[k++] = (unsigned char)b;
		i += (size_t)l;
	}
	return k;
}

static long token_bytes(const char *s, unsigned char *out)
{
	return tok_token_bytes_n(s, strlen(s), out);
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
	if (t->spm) {
		*raw = 0;
		return vocab_find(t, (const unsigned char *)s, n);
	}
	long bl = tok_token_bytes_n(s, n, tmp);
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
		long bl = t->spm ? (long)sl : token_bytes(it->string, tmp);
		if (t->spm)
			memcpy(tmp, it->string, sl);
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
		if (bl == 1 && !t->spm)
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

int tok_cmp_added_id(const void *x, const void *y)
{
	const struct added *a = x, *b = y;
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
	struct buf nb = { 0 }, nb2 = { 0 };
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
		if (f[1] && t->n_nsteps) {
			/* Matched against normalized text, so in its normalized form
			 * (with Prepend, "<x>" is found as "▁<x>") */
			const unsigned char *ns;
			size_t nn;
			int orc = 0, r = tok_normalize(t, (const unsigned char *)c, cl, &nb, &nb2, &ns, &nn, &orc);
			if (r == -4) {
				OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
				onig_error_code_to_str(msg, orc);
				err_set(e, "%s: the normalizer's regex failed on its content: %s (Oniguruma)", path,
					(const char *)msg);
				goto done;
			}
			if (r < 0 || pool_add(t, ns, nn, &a.off) < 0) {
				err_set(e, "out of memory");
				goto done;
			}
			a.len = (uint32_t)nn;
			d->normalized = 1;
		}
		if (a.len == 0)
			continue;   /* normalized to nothing: it can match nothing */
		a.first = t->pool[a.off];
		struct added_set *set = f[1] ? &t->norm : &t->raw;
		set->a[set->n++] = a;
	}
	if (t->norm.n && !(t->ndec = malloc(t->norm.n * sizeof *t->ndec))) {
		err_set(e, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < t->norm.n; i++)
		t->ndec[t->n_ndec++] = t->norm.a[i];
	if (t->n_ndec)
		qsort(t->ndec, t->n_ndec, sizeof *t->ndec, tok_cmp_added_id);
	index_set(&t->raw, t->pool);
	index_set(&t->norm, t->pool);
	rc = 0;
done:
	buf_free(&nb);
	buf_free(&nb2);
	free(tmp);
	free(seen);
	return rc;
}

/* A string field that tokenizers reads as one char: its UTF-8 in out
 * (room for 4 bytes), its length, or -1 with the message. */
static int get_char(const cJSON *o, const char *k, const char *path, char *out, uint32_t *cp, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v)
		return err_set(e, "%s: no \"%s\" (tokenizers requires it)", path, k);
	if (!cJSON_IsString(v))
		return err_set(e, "%s.%s: expected a string of one character, not %s", path, k, json_kind(v));
	const unsigned char *p = (const unsigned char *)v->valuestring;
	size_t n = strlen(v->valuestring);
	uint32_t c;
	int l = n ? uni_utf8_decode(p, n, &c) : -1;
	if (l <= 0 || (size_t)l != n)
		return err_set(e, "%s.%s: \"%.64s\" is not one character (tokenizers requires one)", path, k,
			       v->valuestring);
	memcpy(out, p, n);
	if (cp)
		*cp = c;
	return l;
}

/* Replace's "pattern": {"String": s}, its text; or {"Regex": r}, compiled
 * into *re, and then "". NULL with the message. */
static const char *get_pattern(const cJSON *o, const char *path, regex_t **re, struct err *e)
{
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(o, "pattern");
	const cJSON *str = cJSON_GetObjectItemCaseSensitive(pat, "String");
	const cJSON *rx = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
	char sub[300];
	if (!pat) {
		err_set(e, "%s: Replace without \"pattern\"", path);
	} else if (cJSON_IsObject(pat) && cJSON_IsString(rx) && cJSON_GetArraySize(pat) == 1) {
		snprintf(sub, sizeof sub, "%s.pattern.Regex", path);
		return tok_regex_compile(re, rx->valuestring, strlen(rx->valuestring), sub, e) < 0 ? NULL : "";
	} else if (!cJSON_IsObject(pat) || !cJSON_IsString(str) || cJSON_GetArraySize(pat) != 1) {
		err_set(e, "%s.pattern: expected {\"String\": ...} or {\"Regex\": ...}, not %s", path,
			cJSON_IsObject(pat) ? "that object" : json_kind(pat));
	} else if (!*str->valuestring) {
		err_set(e, "%s.pattern.String: \"\" is not supported", path);
	} else {
		return str->valuestring;
	}
	return NULL;
}

static char *dup_str(const char *s, size_t *len)
{
	*len = strlen(s);
	char *d = malloc(*len + 1);
	if (d)
		memcpy(d, s, *len + 1);
	return d;
}

/* A Sequence's list, o[key], each loaded by load as path.key[i]. */
static int load_sequence(struct tokenizer *t, const cJSON *o, const char *key, const char *path,
			 int (*load)(struct tokenizer *, const cJSON *, const char *, struct err *), struct err *e)
{
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsArray(seq))
		return seq ? err_set(e, "%s.%s: expected an array, not %s", path, key, json_kind(seq))
			   : err_set(e, "%s: Sequence without \"%s\"", path, key);
	const cJSON *it;
	size_t k = 0;
	cJSON_ArrayForEach(it, seq) {
		char sub[256];
		snprintf(sub, sizeof sub, "%s.%s[%zu]", path, key, k++);
		if (load(t, it, sub, e) < 0)
			return -1;
	}
	return 0;
}

static int load_normalizer(struct tokenizer *t, const cJSON *n, const char *path, struct err *e)
{
	const char *type = need_type(n, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(t, n, "normalizers", path, load_normalizer, e);
	struct nstep st = { 0 };
	const char *a = NULL, *b = NULL;
	if (strcmp(type, "NFC") == 0) {
		st.kind = N_NFC;
	} else if (strcmp(type, "Prepend") == 0) {
		st.kind = N_PREPEND;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, "prepend");
		if (!cJSON_IsString(v))
			return v ? err_set(e, "%s.prepend: expected a string, not %s", path, json_kind(v))
				 : err_set(e, "%s: no \"prepend\" (tokenizers requires it)", path);
		a = v->valuestring;
	} else if (strcmp(type, "Replace") == 0) {
		st.kind = N_REPLACE;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, "content");
		if (!(a = get_pattern(n, path, &st.re, e)))
			return -1;
		if (!cJSON_IsString(v)) {
			if (st.re)
				onig_free(st.re);
			return v ? err_set(e, "%s.content: expected a string, not %s", path, json_kind(v))
				 : err_set(e, "%s: no \"content\" (tokenizers requires it)", path);
		}
		b = v->valuestring;
	} else {
		return err_set(e, "%s: type \"%.64s\" is not supported (only NFC, Prepend, Replace, a Sequence of "
			       "those, or none)", path, type);
	}
	if ((a && !(st.a = dup_str(a, &st.la))) || (b && !(st.b = dup_str(b, &st.lb)))) {
		free(st.a);
		if (st.re)
			onig_free(st.re);
		return err_set(e, "out of memory");
	}
	struct nstep *q = realloc(t->nsteps, (t->n_nsteps + 1) * sizeof *q);
	if (!q) {
		free(st.a);
		free(st.b);
		if (st.re)
			onig_free(st.re);
		return err_set(e, "out of memory");
	}
	t->nsteps = q;
	t->nsteps[t->n_nsteps++] = st;
	return 0;
}

/* Metaspace's fields, for the pre_tokenizer and the decoder alike: the
 * replacement into rep (room for 8 bytes), prepend_scheme and split. */
static int load_metaspace(const cJSON *o, const char *path, char *rep, size_t *rep_len, int *prepend, int *split,
			  struct err *e)
{
	int l = get_char(o, "replacement", path, rep, NULL, e);
	if (l < 0)
		return -1;
	*rep_len = (size_t)l;
	*prepend = PREPEND_ALWAYS;  /* tokenizers' default */
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "prepend_scheme");
	if (v) {
		static const char *const name[] = { "never", "first", "always" };
		int k = -1;
		for (int i = 0; i < 3; i++)
			if (cJSON_IsString(v) && strcmp(v->valuestring, name[i]) == 0)
				k = i;
		if (k < 0)
			return err_set(e, "%s.prepend_scheme: expected \"first\", \"always\" or \"never\", not %s%.64s%s",
				       path, cJSON_IsString(v) ? "\"" : "", cJSON_IsString(v) ? v->valuestring : json_kind(v),
				       cJSON_IsString(v) ? "\"" : "");
		*prepend = k;
	}
	int aps = get_flag(o, "add_prefix_space", 0, -1, path, e);
	if (aps == -1 && cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space") &&
	    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space")))
		return -1;
	/* the field of older files: tokenizers refuses false unless
	 * prepend_scheme is never, and then goes by prepend_scheme */
	if (aps == 0 && *prepend != PREPEND_NEVER)
		return err_set(e, "%s.add_prefix_space: false does not match prepend_scheme %s (tokenizers refuses it)",
			       path, *prepend == PREPEND_FIRST ? "first" : "always, as tokenizers takes it when missing,");
	v = cJSON_GetObjectItemCaseSensitive(o, "split");
	if (cJSON_IsNull(v))
		return err_set(e, "%s.split: null is not supported (only true or false)", path);
	if ((*split = get_flag(o, "split", 0, 1, path, e)) < 0)
		return -1;
	return 0;
}

#define PRE_ONLY "only Split, ByteLevel and Digits, alone or in a Sequence, Metaspace, or none is supported"

/* ByteLevel's own regex, GPT-2's, as byte_level.rs spells it. */
static const char PAT_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Each step is a level of tok_pre_run's recursion, for every piece. */
enum { TOK_MAX_PSTEPS = 64 };

static int add_pstep(struct tokenizer *t, const struct pstep *st, struct err *e)
{
	struct pstep *q = realloc(t->psteps, (t->n_psteps + 1) * sizeof *q);
	if (!q) {
		if (st->re)
			onig_free(st->re);
		return err_set(e, "out of memory");
	}
	t->psteps = q;
	t->psteps[t->n_psteps++] = *st;
	if (t->n_psteps > TOK_MAX_PSTEPS)
		return err_set(e, "pre_tokenizer: more than %d steps are not supported", TOK_MAX_PSTEPS);
	return 0;
}

static int load_split(struct tokenizer *t, const cJSON *o, const char *path, struct err *e)
{
	static const char *const beh[] = { "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous" };
	struct pstep st = { .kind = P_SPLIT };
	char sub[300];
	const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(o, "pattern");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "behavior");
	if (!pattern || !b)
		return err_set(e, "%s: Split without \"%s\" (tokenizers requires it)", path, pattern ? "behavior" : "pattern");
	const cJSON *str = cJSON_GetObjectItemCaseSensitive(pattern, "String");
	const cJSON *rx = cJSON_GetObjectItemCaseSensitive(pattern, "Regex");
	if (!cJSON_IsObject(pattern) || cJSON_GetArraySize(pattern) != 1 || !(cJSON_IsString(str) || cJSON_IsString(rx)))
		return err_set(e, "%s.pattern: expected {\"String\": ...} or {\"Regex\": ...}, not %s", path,
			       cJSON_IsObject(pattern) ? "that object" : json_kind(pattern));
	st.behavior = -1;
	for (int i = 0; i < 5; i++)
		if (cJSON_IsString(b) && strcmp(b->valuestring, beh[i]) == 0)
			st.behavior = i;
	if (st.behavior < 0)
		return err_set(e, "%s.behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
			       "Contiguous, not %s%.64s%s", path, cJSON_IsString(b) ? "\"" : "",
			       cJSON_IsString(b) ? b->valuestring : json_kind(b), cJSON_IsString(b) ? "\"" : "");
	if ((st.invert = get_flag(o, "invert", 1, 0, path, e)) < 0)
		return -1;
	snprintf(sub, sizeof sub, "%s.pattern.%s", path, str ? "String" : "Regex");
	if (rx && (strcmp(rx->valuestring, PAT_QWEN) == 0 || strcmp(rx->valuestring, PAT_LLAMA3) == 0)) {
		st.known = strcmp(rx->valuestring, PAT_QWEN) == 0 ? PAT_QWEN : PAT_LLAMA3;
		return add_pstep(t, &st, e);
	}
	if (str ? tok_regex_literal(&st.re, str->valuestring, sub, e) < 0
		: tok_regex_compile(&st.re, rx->valuestring, strlen(rx->valuestring), sub, e) < 0)
		return -1;
	return add_pstep(t, &st, e);
}

/* One pre_tokenizer, at path; a Sequence's are added in order. */
static int load_pre_step(struct tokenizer *t, const cJSON *p, const char *path, struct err *e)
{
	const char *type = need_type(p, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(t, p, "pretokenizers", path, load_pre_step, e);
	if (strcmp(type, "Split") == 0)
		return load_split(t, p, path, e);
	struct pstep st = { 0 };
	if (strcmp(type, "Digits") == 0) {
		st.kind = P_DIGITS;
		if ((st.individual = get_flag(p, "individual_digits", 1, 0, path, e)) < 0)
			return -1;
		return add_pstep(t, &st, e);
	}
	if (strcmp(type, "ByteLevel") != 0)
		return err_set(e, "%s: type \"%.64s\" is not supported%s: " PRE_ONLY, path, type,
			       strcmp(path, "pre_tokenizer") ? " in a Sequence" : "");
	for (size_t i = 0; i < t->n_psteps; i++)
		if (t->psteps[i].kind == P_BYTE_LEVEL)
			return err_set(e, "%s: a second ByteLevel is not supported (it would map the bytes of the "
				       "characters the first made)", path);
	st.kind = P_BYTE_LEVEL;
	int re;
	if ((st.prefix_space = get_flag(p, "add_prefix_space", 1, 0, path, e)) < 0 ||
	    get_flag(p, "trim_offsets", 1, 0, path, e) < 0 || (re = get_flag(p, "use_regex", 0, 1, path, e)) < 0)
		return -1;
	if (re && tok_regex_compile(&st.re, PAT_GPT2, strlen(PAT_GPT2), path, e) < 0)
		return -1;
	t->spm = 0;
	return add_pstep(t, &st, e);
}

static int load_pre_tokenizer(struct tokenizer *t, const cJSON *p, struct err *e)
{
	/* no ByteLevel: the SentencePiece-converted kind */
	t->spm = 1;
	if (!p || cJSON_IsNull(p))
		return 0;
	const char *type = need_type(p, "pre_tokenizer", e);
	if (!type)
		return -1;
	if (strcmp(type, "Metaspace") == 0) {
		t->meta = 1;
		return load_metaspace(p, "pre_tokenizer", t->meta_rep, &t->meta_rep_len, &t->meta_prepend,
				      &t->meta_split, e);
	}
	if (load_pre_step(t, p, "pre_tokenizer", e) < 0)
		return -1;
	if (t->spm)
		return err_set(e, "pre_tokenizer: Split or Digits without a ByteLevel is not supported (only SentencePiece-style "
			       "BPE has no ByteLevel, and it is supported with Metaspace or no pre_tokenizer)");
	/* ByteLevel maps the bytes to characters only where a step after it
	 * would see them */
	for (size_t i = 0; i + 1 < t->n_psteps; i++)
		if (t->psteps[i].kind == P_BYTE_LEVEL)
			t->psteps[i].map = 1;
	/* Qwen2/Qwen3 and Llama 3: the hand-written scanner, which splits as
	 * Oniguruma does (test_tokenizer_regex compares them) */
	struct pstep *s = t->psteps;
	if (t->n_psteps == 2 && s[0].known && s[0].behavior == B_ISOLATED && !s[0].invert &&
	    s[1].kind == P_BYTE_LEVEL && !s[1].re && !s[1].prefix_space) {
		t->scan = 1;
		t->digits3 = s[0].known == PAT_LLAMA3;
		return 0;
	}
	for (size_t i = 0; i < t->n_psteps; i++)
		if (s[i].known && tok_regex_compile(&s[i].re, s[i].known, strlen(s[i].known), "pre_tokenizer", e) < 0)
			return -1;
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
	int fu = get_flag(m, "fuse_unk", 0, 0, "model", e);
	const char *unk = get_str(m, "unk_token", "model", e);
	if (bf < 0 || fu < 0 || !unk)
		return -1;
	if (bf && !t->spm)
		return err_set(e, "model.byte_fallback: true is not supported with a ByteLevel pre_tokenizer (byte-level BPE "
			       "has no <0xNN> tokens to fall back on)");
	t->byte_fallback = bf;
	t->fuse_unk = fu;
	const cJSON *uv = cJSON_GetObjectItemCaseSensitive(m, "unk_token");
	if (cJSON_IsString(uv)) {
		size_t ul;
		if (!(t->unk_token = dup_str(unk, &ul)))
			return err_set(e, "out of memory");
	}
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
	/* tokenizers looks unk_token up only when a word needs it, and fails
	 * the encoding then if the vocab lacks it: so does tok_encode */
	t->unk_id = -1;
	if (t->unk_token) {
		size_t ul = strlen(t->unk_token);
		unsigned char *tmp = malloc(ul + 1);
		int raw;
		if (!tmp)
			return err_set(e, "out of memory");
		t->unk_id = vocab_key(t, t->unk_token, ul, tmp, &raw);
		free(tmp);
	}
	for (int b = 0; b < 256; b++) {
		char name[8];
		snprintf(name, sizeof name, "<0x%02X>", b);
		t->fb_id[b] = t->spm ? vocab_find(t, (const unsigned char *)name, 6) : -1;
	}
	return load_merges(t, cJSON_GetObjectItemCaseSensitive(m, "merges"), e);
}

#define DEC_ONLY "only ByteLevel (with a ByteLevel pre_tokenizer), or Replace, ByteFallback, Fuse, " \
	"Strip, Metaspace and Sequences of those (without it) are supported"

static int load_decoder(struct tokenizer *t, const cJSON *d, const char *path, struct err *e)
{
	if (!d || cJSON_IsNull(d))
		return err_set(e, "%s: none given, and " DEC_ONLY " (without one, tokenizers joins tokens with spaces)",
			       path);
	const char *type = need_type(d, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "ByteLevel") == 0 && t->n_dsteps == 0 && strcmp(path, "decoder") == 0) {
		if (get_flag(d, "add_prefix_space", 1, 0, path, e) < 0 || get_flag(d, "trim_offsets", 1, 0, path, e) < 0 ||
		    get_flag(d, "use_regex", 0, 1, path, e) < 0)
			return -1;
		t->byte_level_dec = 1;
		return 0;
	}
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(t, d, "decoders", path, load_decoder, e);
	struct dstep st = { 0 };
	const char *a = NULL, *b = NULL;
	char rep[8] = "";
	if (strcmp(type, "Replace") == 0) {
		st.kind = D_REPLACE;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "content");
		if (!(a = get_pattern(d, path, &st.re, e)))
			return -1;
		if (!cJSON_IsString(v)) {
			if (st.re)
				onig_free(st.re);
			return v ? err_set(e, "%s.content: expected a string, not %s", path, json_kind(v))
				 : err_set(e, "%s: no \"content\" (tokenizers requires it)", path);
		}
		b = v->valuestring;
	} else if (strcmp(type, "ByteFallback") == 0) {
		st.kind = D_BYTE_FALLBACK;
	} else if (strcmp(type, "Fuse") == 0) {
		st.kind = D_FUSE;
	} else if (strcmp(type, "Strip") == 0) {
		st.kind = D_STRIP;
		char c[8];
		if (get_char(d, "content", path, c, &st.ch, e) < 0)
			return -1;
		static const char *const k[] = { "start", "stop" };
		for (int i = 0; i < 2; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, k[i]);
			uint32_t x;
			if (!v)
				return err_set(e, "%s: no \"%s\" (tokenizers requires it)", path, k[i]);
			if (get_id(v, &x, e) < 0)
				return err_prefix(e, "%s.%s", path, k[i]);
			*(i ? &st.stop : &st.start) = x;
		}
	} else if (strcmp(type, "Metaspace") == 0) {
		st.kind = D_METASPACE;
		int prepend, split;
		if (load_metaspace(d, path, rep, &st.la, &prepend, &split, e) < 0)
			return -1;
		st.prepend = prepend != PREPEND_NEVER;
		rep[st.la] = 0;
		a = rep;
	} else {
		return err_set(e, "%s: type \"%.64s\" is not supported: " DEC_ONLY, path, type);
	}
	if ((a && !(st.a = dup_str(a, &st.la))) || (b && !(st.b = dup_str(b, &st.lb)))) {
		free(st.a);
		if (st.re)
			onig_free(st.re);
		return err_set(e, "out of memory");
	}
	struct dstep *q = realloc(t->dsteps, (t->n_dsteps + 1) * sizeof *q);
	if (!q) {
		free(st.a);
		free(st.b);
		if (st.re)
			onig_free(st.re);
		return err_set(e, "out of memory");
	}
	t->dsteps = q;
	t->dsteps[t->n_dsteps++] = st;
	return 0;
}

/* The decoder must undo what the pre_tokenizer did: ByteLevel's characters
 * with ByteLevel, otherwise the UTF-8 tokens as they are. */
static int check_decoder(const struct tokenizer *t, struct err *e)
{
	if (t->spm && t->byte_level_dec)
		return err_set(e, "decoder: ByteLevel with %s pre_tokenizer is not supported (ByteLevel goes with "
			       "a ByteLevel pre_tokenizer only)", t->meta ? "a Metaspace" : t->n_psteps ?
			       "a pre_tokenizer without ByteLevel" : "no");
	if (!t->spm && !t->byte_level_dec)
		return err_set(e, "decoder: %s with a ByteLevel pre_tokenizer is not supported (only ByteLevel)",
			       t->dsteps[0].kind == D_METASPACE ? "Metaspace" : "a SentencePiece-style decoder");
	return 0;
}

/* tokenizers knows these keys of tokenizer.json and refuses a file with
 * any other. */
static int check_keys(const cJSON *root, struct err *e)
{
	static const char *const known[] = { "version", "truncation", "padding", "added_tokens", "normalizer",
					     "pre_tokenizer", "post_processor", "decoder", "model" };
	const size_t nk = sizeof known / sizeof *known;
	const cJSON *it;
	cJSON_ArrayForEach(it, root) {
		size_t i = 0;
		while (i < nk && strcmp(it->string, known[i]) != 0)
			i++;
		if (i == nk)
			return err_set(e, "\"%.64s\": not a key of tokenizer.json (tokenizers refuses the file; it takes "
				       "version, truncation, padding, added_tokens, normalizer, pre_tokenizer, "
				       "post_processor, decoder and model)", it->string);
	}
	/* tokenizers' encode cuts every encoding to truncation's max_length
	 * and pads it as padding says: what tok_encode does not */
	const cJSON *v;
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "truncation")) && !cJSON_IsNull(v))
		return err_set(e, "truncation: %s is not supported (only null: tokenizers would cut each encoding to its "
			       "max_length)", json_kind(v));
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "padding")) && !cJSON_IsNull(v))
		return err_set(e, "padding: %s is not supported (only null: tokenizers would pad each encoding)",
			       json_kind(v));
	return 0;
}

/* ---- how the ids are written, which cJSON does not keep ---- */

static const char *jws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Past the string that starts at p, its opening quote. */
static const char *jstr(const char *p, const char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\')
			p++;
	return p < end ? p + 1 : end;
}

/* Past the value at p (the text is valid JSON: cJSON has read it). */
static const char *jskip(const char *p, const char *end)
{
	if (p >= end)
		return end;
	if (*p == '"')
		return jstr(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != ']' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\n' &&
		       *p != '\r')
			p++;
		return p;
	}
	for (int depth = 0; p < end;) {
		if (*p == '"') {
			p = jstr(p, end);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return end;
}

/* The next member of an object or element of an array: p is past its '{'
 * or '[', or past the last value. Where the value starts, with the key
 * (quotes included) in *k, *kl for an object; NULL at the end. */
static const char *jnext(const char *p, const char *end, int object, const char **k, size_t *kl)
{
	p = jws(p, end);
	if (p < end && *p == ',')
		p = jws(p + 1, end);
	if (p >= end || *p == '}' || *p == ']')
		return NULL;
	if (object) {
		*k = p;
		p = jstr(p, end);
		*kl = (size_t)(p - *k);
		p = jws(p, end);
		if (p < end && *p == ':')
			p++;
	}
	return jws(p, end);
}

/* A number at p that get_id takes but that is written otherwise than as
 * digits only ("258.0", "2.58e2", "-0"): how far it goes, or 0 (digits, a
 * number get_id refuses, or no number). */
static size_t float_id(const char *p, const char *end)
{
	if (p >= end || !(*p == '-' || (*p >= '0' && *p <= '9')))
		return 0;
	const char *q = jskip(p, end);
	const char *r = p;
	while (r < q && *r >= '0' && *r <= '9')
		r++;
	if (r == q || q - p >= 64)
		return 0;
	char num[64];
	memcpy(num, p, (size_t)(q - p));
	num[q - p] = 0;
	double d = strtod(num, NULL);
	return d >= 0 && d <= UINT32_MAX && d == (double)(uint32_t)d ? (size_t)(q - p) : 0;
}

/* tokenizers reads ids as u32 and refuses one written as a float (258.0,
 * 2.58e2, -0), which cJSON reads as the whole number it equals: look at how
 * model.vocab's and added_tokens' ids are written. */
static int check_id_text(const char *json, size_t n, struct err *e)
{
	const char *end = json + n, *p = jws(json, end), *v, *k, *k2, *v2, *v3;
	size_t kl, kl2, fl;
	if (p >= end || *p != '{')
		return 0;
	for (p++; (v = jnext(p, end, 1, &k, &kl)); p = jskip(v, end)) {
		if (kl == 7 && memcmp(k, "\"model\"", 7) == 0 && *v == '{') {
			for (const char *q = v + 1; (v2 = jnext(q, end, 1, &k, &kl)); q = jskip(v2, end)) {
				if (kl != 7 || memcmp(k, "\"vocab\"", 7) != 0 || *v2 != '{')
					continue;
				for (const char *r = v2 + 1; (v3 = jnext(r, end, 1, &k2, &kl2)); r = jskip(v3, end))
					if ((fl = float_id(v3, end)))
						return err_set(e, "model.vocab[%.*s]: id %.*s is not written as a whole number, "
							       "and tokenizers refuses it (it reads ids as u32)",
							       (int)(kl2 < 66 ? kl2 : 66), k2, (int)(fl < 32 ? fl : 32), v3);
			}
		} else if (kl == 14 && memcmp(k, "\"added_tokens\"", 14) == 0 && *v == '[') {
			size_t at = 0;
			for (const char *q = v + 1; (v2 = jnext(q, end, 0, NULL, NULL)); q = jskip(v2, end), at++) {
				if (*v2 != '{')
					continue;
				for (const char *r = v2 + 1; (v3 = jnext(r, end, 1, &k2, &kl2)); r = jskip(v3, end))
					if (kl2 == 4 && memcmp(k2, "\"id\"", 4) == 0 && (fl = float_id(v3, end)))
						return err_set(e, "added_tokens[%zu].id: %.*s is not written as a whole number, "
							       "and tokenizers refuses it (it reads ids as u32)", at,
							       (int)(fl < 32 ? fl : 32), v3);
			}
		}
	}
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
	else if (check_keys(root, e) == 0 && check_id_text(json, n, e) == 0 &&
		 load_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder", e) == 0 &&
		 (!norm || cJSON_IsNull(norm) || load_normalizer(t, norm, "normalizer", e) == 0) &&
		 load_pre_tokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), e) == 0 &&
		 check_decoder(t, e) == 0 &&
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
	free(t->ndec);
	for (size_t i = 0; i < t->n_nsteps; i++) {
		free(t->nsteps[i].a);
		free(t->nsteps[i].b);
		if (t->nsteps[i].re)
			onig_free(t->nsteps[i].re);
	}
	free(t->nsteps);
	for (size_t i = 0; i < t->n_dsteps; i++) {
		free(t->dsteps[i].a);
		free(t->dsteps[i].b);
		if (t->dsteps[i].re)
			onig_free(t->dsteps[i].re);
	}
	free(t->dsteps);
	for (size_t i = 0; i < t->n_psteps; i++)
		if (t->psteps[i].re)
			onig_free(t->psteps[i].re);
	free(t->psteps);
	free(t->unk_token);
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
	if (t->spm)
		return vocab_find(t, (const unsigned char *)token, n);
	unsigned char *tmp = malloc(n + 1);
	if (!tmp)
		return -1;
	long bl = token_bytes(token, tmp);
	int32_t id = bl >= 0 ? vocab_find(t, tmp, (size_t)bl) : -1;
	free(tmp);
	return id;
}
