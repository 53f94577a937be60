/* tokenizer_load.c: reading tokenizer.json into struct tokenizer and checking it: the pool, the id
 * table, the model's vocab and merges, the added tokens, and tok_load_mem, which loads the steps
 * (tokenizer_stages.c) and these in turn. See tokenizer.h, and tokenizer_impl.h for how the
 * modules divide the work. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <errno.h>
#include <oniguruma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/jsonview.h"

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
		return err_set(e, "model.vocab: expected an object, not %s", tok_json_kind(vocab));
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
		if (tok_get_id(it, &id, e) < 0 || grow_ids(t, id, e) < 0) {
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
		return err_set(e, "model.merges: expected an array, not %s", tok_json_kind(merges));
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
				cJSON_IsArray(it) ? "that array" : tok_json_kind(it));
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
		return err_set(e, "added_tokens: expected an array, not %s", tok_json_kind(arr));
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
			err_set(e, "%s: expected an object, not %s", path, tok_json_kind(it));
			goto done;
		}
		const cJSON *idv = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
		uint32_t tid;
		if (!idv || !content) {
			err_set(e, "%s: no \"%s\"", path, idv ? "content" : "id");
			goto done;
		}
		if (tok_get_id(idv, &tid, e) < 0) {
			err_prefix(e, "%s.id", path);
			goto done;
		}
		if (!cJSON_IsString(content)) {
			err_set(e, "%s.content: expected a string, not %s", path, tok_json_kind(content));
			goto done;
		}
		static const char *const flag[] = { "special", "normalized", "lstrip", "rstrip", "single_word" };
		int f[5];
		unsigned flags = 0;
		for (int i = 0; i < 5; i++) {
			if ((f[i] = tok_get_flag(it, flag[i], 1, 0, path, e)) < 0)
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

/* An optional string field: its text ("" when missing or null), or NULL
 * with the message. */
static const char *get_str(const cJSON *o, const char *k, const char *path, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v || cJSON_IsNull(v))
		return "";
	if (cJSON_IsString(v))
		return v->valuestring;
	err_set(e, "%s.%s: expected a string, not %s", path, k, tok_json_kind(v));
	return NULL;
}

static int load_model(struct tokenizer *t, const cJSON *m, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "type");
	if (v && !cJSON_IsString(v))
		return err_set(e, "model.type: expected a string, not %s", tok_json_kind(v));
	if (v && strcmp(v->valuestring, "BPE") != 0)
		return err_set(e, "model: type \"%.64s\" is not supported (only BPE)", v->valuestring);
	if ((v = cJSON_GetObjectItemCaseSensitive(m, "dropout")) && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1)
			return cJSON_IsNumber(v) ? err_set(e, "model.dropout: %g is not from 0 to 1", v->valuedouble)
						 : err_set(e, "model.dropout: expected a number, not %s", tok_json_kind(v));
		if (v->valuedouble != 0)
			return err_set(e, "model.dropout: %g is not supported (only 0 or null: BPE dropout "
				       "leaves merges out at random)", v->valuedouble);
	}
	int bf = tok_get_flag(m, "byte_fallback", 0, 0, "model", e);
	int fu = tok_get_flag(m, "fuse_unk", 0, 0, "model", e);
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
		if (!(t->unk_token = tok_dup_str(unk, &ul)))
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
	if ((t->ignore_merges = tok_get_flag(m, "ignore_merges", 0, 0, "model", e)) < 0)
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
			       "max_length)", tok_json_kind(v));
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "padding")) && !cJSON_IsNull(v))
		return err_set(e, "padding: %s is not supported (only null: tokenizers would pad each encoding)",
			       tok_json_kind(v));
	return 0;
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
		tok_json_where(json, n, json + bad, where, sizeof where);
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
			tok_json_where(json, n, at, where, sizeof where);
			err_set(e, "not valid JSON near %s", where);
		} else
			err_set(e, "not valid JSON");
		goto fail;
	}
	if (end) {
		while (end < json + n && strchr(" \t\r\n", *end) && *end)
			end++;
		if (end < json + n) {
			tok_json_where(json, n, end, where, sizeof where);
			err_set(e, "not valid JSON: more follows its end, at %s", where);
			goto fail;
		}
	}
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	set_id_limit(t, cJSON_GetObjectItemCaseSensitive(model, "vocab"), cJSON_GetObjectItemCaseSensitive(root, "added_tokens"));
	const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
	if (!cJSON_IsObject(root))
		err_set(e, "not a tokenizer.json: the JSON is %s, not an object", tok_json_kind(root));
	else if (!model)
		err_set(e, "no \"model\": not a tokenizer.json");
	else if (!cJSON_IsObject(model))
		err_set(e, "model: expected an object, not %s", tok_json_kind(model));
	else if (check_keys(root, e) == 0 && tok_check_id_text(json, n, e) == 0 &&
		 tok_load_decoder(t, cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder", e) == 0 &&
		 (!norm || cJSON_IsNull(norm) || tok_load_normalizer(t, norm, "normalizer", e) == 0) &&
		 tok_load_pre_tokenizer(t, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), e) == 0 &&
		 tok_check_decoder(t, e) == 0 &&
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
