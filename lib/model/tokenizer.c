/* tokenizer.c: see tokenizer.h. */
#include "model/tokenizer.h"

#include <cJSON.h>
#include <errno.h>
#include <oniguruma.h>
#include <pthread.h>
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
	uint8_t normalized;         /* an added token whose content the normalizer changes (see ndec) */
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

/* A normalizer step, applied in order to each stretch between added tokens. */
enum { N_NFC, N_PREPEND, N_REPLACE };
struct nstep {
	int kind;
	char *a, *b;                /* Prepend: a; Replace: a -> b */
	size_t la, lb;
	regex_t *re;                /* Replace of a Regex: it, not a */
};

/* A decoder step: each takes the list of token strings to a new one. */
enum { D_REPLACE, D_BYTE_FALLBACK, D_FUSE, D_STRIP, D_METASPACE };
struct dstep {
	int kind;
	char *a, *b;                /* Replace: a -> b; Metaspace: a, the replacement */
	size_t la, lb;
	uint32_t ch;                /* Strip: the character */
	size_t start, stop;         /* Strip: how many at most at each end */
	int prepend;                /* Metaspace: prepend_scheme is not never */
	regex_t *re;                /* Replace of a Regex: it, not a */
};

enum { PREPEND_NEVER, PREPEND_FIRST, PREPEND_ALWAYS };

/* A pre_tokenizer step: each splits every piece the steps before it made,
 * as tokenizers' Sequence does. */
enum { P_SPLIT, P_BYTE_LEVEL, P_DIGITS };
enum { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS };  /* SplitDelimiterBehavior */
struct pstep {
	int kind;
	regex_t *re;                /* Split: its pattern; ByteLevel: GPT-2's, with use_regex */
	const char *known;          /* Split: PAT_QWEN or PAT_LLAMA3, compiled only where the scanner
				     * does not do the work (see load_pre_tokenizer) */
	int behavior, invert;       /* Split */
	int prefix_space;           /* ByteLevel: add_prefix_space */
	int map;                    /* ByteLevel: steps follow, and see its characters, not bytes */
	int individual;             /* Digits: individual_digits */
};

struct tokenizer {
	int spm;                    /* SentencePiece-style: no ByteLevel; vocab tokens are UTF-8 strings
				     * and a word's first symbols are its characters */
	int byte_level_dec;         /* decoder is ByteLevel (else dsteps) */
	struct nstep *nsteps;       /* (n_nsteps) */
	size_t n_nsteps;
	struct dstep *dsteps;       /* (n_dsteps) */
	size_t n_dsteps;
	int meta;                   /* pre_tokenizer is Metaspace: */
	char meta_rep[8];           /*   its replacement character, as UTF-8 */
	size_t meta_rep_len;
	int meta_prepend, meta_split;
	int byte_fallback, fuse_unk;
	char *unk_token;            /* model.unk_token, NULL when none */
	int32_t unk_id;             /* its id in the vocab, -1 when it is not there */
	int32_t fb_id[256];         /* the <0xNN> token of each byte, -1 when missing */
	struct pstep *psteps;       /* (n_psteps) the pre_tokenizer, but Metaspace */
	size_t n_psteps;
	int scan;                   /* psteps are Qwen's or Llama 3's Split then ByteLevel, which the
				     * hand-written scanner does (pre_match) without Oniguruma */
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
	struct added *ndec;         /* (n_ndec) the normalized added tokens by id: SentencePiece-style decoding
				     * takes their normalized content, tokenizers' token string ("▁<x>") */
	size_t n_ndec;
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

/* ---- Oniguruma ---- */

static inline size_t cp_at(const unsigned char *s, size_t n, size_t i, uint32_t *cp);

/* Oniguruma, as tokenizers' onig crate sets it up: UTF-8, its default
 * syntax (Oniguruma's own), no options. onig_new is not safe to call from
 * several threads at once (the crate locks around it too); searching a
 * compiled regex is. */
static pthread_mutex_t onig_lock = PTHREAD_MUTEX_INITIALIZER;
static int onig_ready;

/* Compile pat[0..n) into *re, or -1 with Oniguruma's message after path. */
static int regex_compile(regex_t **re, const char *pat, size_t n, const char *path, struct err *e)
{
	OnigErrorInfo info = { 0 };
	OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
	OnigEncoding enc[] = { ONIG_ENCODING_UTF8 };
	int rc = ONIG_NORMAL;
	*re = NULL;
	pthread_mutex_lock(&onig_lock);
	/* (tried again while it fails: its memory may have run out) */
	if (!onig_ready && (rc = onig_initialize(enc, 1)) == ONIG_NORMAL)
		onig_ready = 1;
	if (onig_ready)
		rc = onig_new(re, (const OnigUChar *)pat, (const OnigUChar *)pat + n, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
			      ONIG_SYNTAX_DEFAULT, &info);
	pthread_mutex_unlock(&onig_lock);
	if (rc == ONIG_NORMAL)
		return 0;
	*re = NULL;
	if (!onig_ready) {
		onig_error_code_to_str(msg, rc);
		return err_set(e, "%s: Oniguruma failed to start: %s", path, (const char *)msg);
	}
	onig_error_code_to_str(msg, rc, &info);
	if (rc == ONIGERR_MEMORY)
		return err_set(e, "%s: out of memory compiling the regex (Oniguruma: %s)", path, (const char *)msg);
	return err_set(e, "%s: \"%.120s\" does not compile: %s (Oniguruma)", path, pat, (const char *)msg);
}

/* A Split's {"String": s}, as tokenizers compiles it: regex::escape(s),
 * then Oniguruma. */
static int regex_literal(regex_t **re, const char *s, const char *path, struct err *e)
{
	size_t n = strlen(s);
	char *q = malloc(2 * n + 1), *w = q;
	if (!q)
		return err_set(e, "out of memory");
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$#&-~", *s))
			*w++ = '\\';
		*w++ = *s;
	}
	int rc = regex_compile(re, q, (size_t)(w - q), path, e);
	free(q);
	return rc;
}

/* A stretch of a piece, a match of a pattern or not. */
struct span {
	size_t a, b;
	int m;                      /* a match; once the behavior is applied: not part of a piece */
};

struct plevel {                 /* a pre_tokenizer step's scratch space */
	struct buf text, map;       /* ByteLevel: the piece with its prefix space; a piece's characters */
	struct span *sp;            /* (n) */
	size_t n, cap;
};

static int span_push(struct plevel *l, size_t a, size_t b, int m)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct span *q = realloc(l->sp, cap * sizeof *q);
		if (!q)
			return -1;
		l->sp = q;
		l->cap = cap;
	}
	l->sp[l->n++] = (struct span){ a, b, m };
	return 0;
}

/* The matches of re in s[0..n), and what lies between them, into l, as
 * tokenizers' find_matches has them (none for n = 0): as the onig crate's
 * find_iter finds them, each search from where the last match ended, an
 * empty match there skipped by one character. -4 with Oniguruma's code in
 * *rc when a search fails, -1 when memory runs out. */
static int regex_find(regex_t *re, const unsigned char *s, size_t n, OnigRegion *region, struct plevel *l, int *rc)
{
	size_t prev = 0, from = 0, last = 0;
	int any = 0;
	l->n = 0;
	if (n == 0)
		return span_push(l, 0, 0, 0);
	while (from <= n) {
		int r = onig_search(re, s, s + n, s + from, s + n, region, ONIG_OPTION_NONE);
		if (r == ONIG_MISMATCH)
			break;
		if (r < 0) {
			*rc = r;
			return -4;
		}
		size_t a = (size_t)region->beg[0], b = (size_t)region->end[0];
		if (a == b && any && last == b) {
			uint32_t c;
			from += from < n ? cp_at(s, n, from, &c) : 1;
			continue;
		}
		from = last = b;
		any = 1;
		if ((prev != a && span_push(l, prev, a, 0) < 0) || span_push(l, a, b, 1) < 0)
			return -1;
		prev = b;
	}
	return prev != n ? span_push(l, prev, n, 0) : 0;
}

/* Replace's regex: s[0..n) appended to out with each match of re (an
 * empty one too) as with[0..nw), as NormalizedString::replace and the
 * Replace decoder do. -4 (Oniguruma's code in *rc) or -1 as regex_find. */
static int regex_replace(regex_t *re, const unsigned char *s, size_t n, const char *with, size_t nw,
			 struct buf *out, int *rc)
{
	struct plevel l = { 0 };
	OnigRegion *region = onig_region_new();
	int r = region ? regex_find(re, s, n, region, &l, rc) : -1;
	for (size_t i = 0; i < l.n && r == 0; i++)
		r = l.sp[i].m ? buf_append(out, with, nw) : buf_append(out, s + l.sp[i].a, l.sp[i].b - l.sp[i].a);
	free(l.sp);
	if (region)
		onig_region_free(region, 1);
	return r < 0 ? r : 0;
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

/* Append s[0..n) to out with each pat[0..np) replaced by with[0..nw),
 * left to right without overlaps (np > 0). -1 when memory runs out. */
static int replace_all(struct buf *out, const unsigned char *s, size_t n, const char *pat, size_t np,
		       const char *with, size_t nw)
{
	size_t i = 0, from = 0;
	while (i + np <= n) {
		if (s[i] == (unsigned char)pat[0] && memcmp(s + i, pat, np) == 0) {
			if (buf_append(out, s + from, i - from) < 0 || buf_append(out, with, nw) < 0)
				return -1;
			i += np;
			from = i;
		} else {
			i++;
		}
	}
	return buf_append(out, s + from, n - from);
}

/* The normalizer's steps over s[0..n), in a and b by turns: the result in
 * *rs, *rn (s itself when there are none). -1 when memory runs out, -4
 * with Oniguruma's code in *onig_rc when a search fails. */
static int normalize(const struct tokenizer *t, const unsigned char *s, size_t n, struct buf *a, struct buf *b,
		     const unsigned char **rs, size_t *rn, int *onig_rc)
{
	for (size_t i = 0; i < t->n_nsteps && n; i++) {
		const struct nstep *st = &t->nsteps[i];
		struct buf *dst = i % 2 ? b : a;
		buf_reset(dst);
		int rc;
		if (st->kind == N_NFC)
			rc = uni_nfc(dst, s, n);
		else if (st->kind == N_PREPEND)
			rc = buf_append(dst, st->a, st->la) < 0 ? -1 : buf_append(dst, s, n);
		else if (st->re)
			rc = regex_replace(st->re, s, n, st->b, st->lb, dst, onig_rc);
		else
			rc = replace_all(dst, s, n, st->a, st->la, st->b, st->lb);
		if (rc < 0)
			return rc;
		s = dst->data;
		n = dst->len;
	}
	*rs = s;
	*rn = n;
	return 0;
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

static int cmp_added_id(const void *x, const void *y)
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
			int orc = 0, r = normalize(t, (const unsigned char *)c, cl, &nb, &nb2, &ns, &nn, &orc);
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
		qsort(t->ndec, t->n_ndec, sizeof *t->ndec, cmp_added_id);
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
		return regex_compile(re, rx->valuestring, strlen(rx->valuestring), sub, e) < 0 ? NULL : "";
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

/* Each step is a level of pre_run's recursion, for every piece. */
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
	if (str ? regex_literal(&st.re, str->valuestring, sub, e) < 0
		: regex_compile(&st.re, rx->valuestring, strlen(rx->valuestring), sub, e) < 0)
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
	if (re && regex_compile(&st.re, PAT_GPT2, strlen(PAT_GPT2), path, e) < 0)
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
		if (s[i].known && regex_compile(&s[i].re, s[i].known, strlen(s[i].known), "pre_tokenizer", e) < 0)
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
	struct buf norm, norm2, meta;
	int missing;                /* a byte the vocab has no token for, or -1 */
	uint32_t missing_cp;        /* SentencePiece-style: the character */
	struct sym *sym;            /* (cap) */
	struct hent *heap;          /* (3 * cap) */
	size_t cap, nheap;
	struct plevel *lv;          /* (n_psteps + 1) the pre_tokenizer's steps' (see pre_run) */
	OnigRegion *region;
	int onig_rc;                /* what a failed search returned */
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

static inline size_t cp_at(const unsigned char *s, size_t n, size_t i, uint32_t *cp);

/* BPE of one pre-token, as tokenizers' merge_word: its first symbols are
 * its bytes' tokens (byte-level) or its characters' (SentencePiece-style);
 * a character the vocab lacks becomes its <0xNN> tokens when byte_fallback
 * is on and the vocab has all of them, else unk_token, a run of those one
 * unk_token with fuse_unk. (As in tokenizers, a pending unk_token is put
 * down before the next character found in the vocab but not before <0xNN>
 * tokens.) Then the adjacent pair of lowest rank merges, leftmost first,
 * until no pair has a merge. -1 when memory runs out, -2 (sc->missing or
 * sc->missing_cp) when a symbol has no token and there is no unk_token,
 * -3 when the vocab lacks unk_token. */
static int bpe(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc,
	       struct tok_ids *out)
{
	if (t->ignore_merges) {
		int32_t id = vocab_find(t, p, n);
		if (id >= 0)
			return tok_ids_push(out, id);
	}
	if (!t->spm && n == 1 && t->byte_id[p[0]] >= 0)
		return tok_ids_push(out, t->byte_id[p[0]]);
	if (scratch_reserve(sc, n) < 0)
		return -1;
	struct sym *s = sc->sym;
	size_t m = 0;
	int unk = 0;                /* an unk_token waits to be put down */
	for (size_t i = 0, l; i < n; i += l) {
		int32_t id;
		uint32_t cp = p[i];
		if (t->spm) {
			l = cp_at(p, n, i, &cp);
			id = vocab_find(t, p + i, l);
		} else {
			l = 1;
			id = t->byte_id[p[i]];
		}
		if (id >= 0) {
			if (unk)
				s[m++].id = t->unk_id;
			unk = 0;
			s[m++].id = id;
			continue;
		}
		size_t k = 0;
		while (t->byte_fallback && k < l && t->fb_id[p[i + k]] >= 0)
			k++;
		if (t->byte_fallback && k == l) {
			for (k = 0; k < l; k++)
				s[m++].id = t->fb_id[p[i + k]];
			continue;
		}
		if (!t->unk_token) {
			sc->missing = p[i];
			sc->missing_cp = cp;
			return -2;
		}
		if (t->unk_id < 0)
			return -3;
		if (unk && !t->fuse_unk)
			s[m++].id = t->unk_id;
		unk = 1;
	}
	if (unk)
		s[m++].id = t->unk_id;
	if (m == 0)
		return 0;
	for (size_t i = 0; i < m; i++) {
		s[i].prev = (int32_t)i - 1;
		s[i].next = i + 1 < m ? (int32_t)i + 1 : -1;
	}
	sc->nheap = 0;
	for (size_t i = 0; i + 1 < m; i++)
		push_pair(t, sc, (int32_t)i);
	while (sc->nheap) {
		struct hent h = heap_pop(sc);
		struct sym *a = &s[h.pos];
		if (a->id < 0 || a->next < 0)
			continue;   /* stale: merged away meanwhile */
		const struct mslot *mg = merge_find(t, a->id, s[a->next].id);
		if (!mg || mg->rank != h.rank)
			continue;   /* stale: a neighbour changed */
		struct sym *b = &s[a->next];
		a->id = mg->id;
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

/* ---- the pre_tokenizer's steps (all but the scanner's two) ---- */

/* The byte-level character of byte b (GPT-2's bytes_to_unicode; cp_byte
 * undoes it). */
static uint32_t byte_cp(unsigned b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	if (b <= 0x20)
		return 0x100 + b;
	return b == 0xAD ? 0x143 : 0x100 + 33 + (b - 0x7F);
}

/* tokenizers' find_matches: s[0..n), n > 0, tiled by the matches of st's
 * pattern and what lies between them, each marked a match or not (Digits:
 * each character char::is_numeric takes, \p{N}, is a match). -4 when
 * Oniguruma fails. */
static int find_matches(const struct pstep *st, const unsigned char *s, size_t n, struct plevel *l,
			struct scratch *sc)
{
	if (st->kind != P_DIGITS)
		return regex_find(st->re, s, n, sc->region, l, &sc->onig_rc);
	size_t prev = 0;
	l->n = 0;
	for (size_t i = 0, k; i < n; i += k) {
		uint32_t c;
		k = cp_at(s, n, i, &c);
		if (!(uni_class(c) & UNI_N))
			continue;
		if ((prev < i && span_push(l, prev, i, 0) < 0) || span_push(l, i, i + k, 1) < 0)
			return -1;
		prev = i + k;
	}
	return prev != n ? span_push(l, prev, n, 0) : 0;
}

/* NormalizedString::split's behaviors over l's spans: those left with m
 * unset are the pieces (some may be empty, which tokenizers drops). */
static void apply_behavior(struct plevel *l, int behavior, int invert)
{
	struct span *v = l->sp;
	size_t n = l->n, k = 0;
	int prev = 0;
	if (invert)
		for (size_t i = 0; i < n; i++)
			v[i].m = !v[i].m;
	switch (behavior) {
	case B_REMOVED:
		break;
	case B_ISOLATED:
		for (size_t i = 0; i < n; i++)
			v[i].m = 0;
		break;
	case B_CONTIGUOUS:
	case B_MERGED_PREV:
		for (size_t i = 0; i < n; i++) {
			struct span x = v[i];
			if (k && (behavior == B_CONTIGUOUS ? x.m == prev : x.m && !prev))
				v[k - 1].b = x.b;
			else
				v[k++] = (struct span){ x.a, x.b, 0 };
			prev = x.m;
		}
		l->n = k;
		break;
	case B_MERGED_NEXT:
		/* from the end, as tokenizers folds the reversed list */
		k = n;
		for (size_t i = n; i-- > 0;) {
			struct span x = v[i];
			if (k < n && x.m && !prev)
				v[k].a = x.a;
			else
				v[--k] = (struct span){ x.a, x.b, 0 };
			prev = x.m;
		}
		memmove(v, v + k, (n - k) * sizeof *v);
		l->n = n - k;
		break;
	}
}

typedef int (*piece_fn)(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc, void *arg);

/* Steps k.. of the pre_tokenizer over the piece s[0..n), n > 0, each piece
 * that comes out of the last to f as its bytes. mapped: s is ByteLevel's
 * characters (a step after ByteLevel sees those, as in tokenizers). */
static int pre_run(const struct tokenizer *t, size_t k, const unsigned char *s, size_t n, int mapped,
		   struct scratch *sc, piece_fn f, void *arg)
{
	struct plevel *l = &sc->lv[k];
	if (k == t->n_psteps) {
		if (!mapped)
			return f(t, s, n, sc, arg);
		buf_reset(&l->text);
		if (buf_reserve(&l->text, n) < 0)
			return -1;
		long bl = token_bytes_n((const char *)s, n, l->text.data);
		return f(t, l->text.data, bl < 0 ? 0 : (size_t)bl, sc, arg);  /* (bl < 0: unreachable) */
	}
	const struct pstep *st = &t->psteps[k];
	int rc;
	if (st->kind == P_BYTE_LEVEL && st->prefix_space && s[0] != ' ') {
		buf_reset(&l->text);
		if (buf_put_u8(&l->text, ' ') < 0 || buf_append(&l->text, s, n) < 0)
			return -1;
		s = l->text.data;
		n = l->text.len;
	}
	if (st->kind == P_BYTE_LEVEL && !st->re) {
		l->n = 0;
		rc = span_push(l, 0, n, 0);
	} else {
		rc = find_matches(st, s, n, l, sc);
		apply_behavior(l, st->kind == P_SPLIT ? st->behavior : st->kind == P_BYTE_LEVEL ? B_ISOLATED :
			       st->individual ? B_ISOLATED : B_CONTIGUOUS, st->kind == P_SPLIT && st->invert);
	}
	for (size_t i = 0; i < l->n && rc == 0; i++) {
		const struct span x = l->sp[i];
		if (x.m || x.b == x.a)
			continue;
		if (!st->map) {
			rc = pre_run(t, k + 1, s + x.a, x.b - x.a, mapped, sc, f, arg);
			continue;
		}
		buf_reset(&l->map);
		for (size_t j = x.a; j < x.b && rc == 0; j++) {
			unsigned char u[4];
			rc = buf_append(&l->map, u, (size_t)uni_utf8_encode(byte_cp(s[j]), u));
		}
		if (rc == 0)
			rc = pre_run(t, k + 1, l->map.data, l->map.len, 1, sc, f, arg);
	}
	return rc;
}

static int scratch_levels(const struct tokenizer *t, struct scratch *sc)
{
	if (sc->lv)
		return 0;
	if (!(sc->lv = calloc(t->n_psteps + 1, sizeof *sc->lv)) || !(sc->region = onig_region_new()))
		return -1;
	return 0;
}

static int piece_bpe(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc, void *out)
{
	return bpe(t, p, n, sc, out);
}

/* The pre_tokenizer's pieces of s[0..n), n > 0, each to f. */
static int pre_tokenize(const struct tokenizer *t, const unsigned char *s, size_t n, int scanner, struct scratch *sc,
			piece_fn f, void *arg)
{
	if (scanner) {
		for (size_t i = 0; i < n;) {
			size_t end = pre_match(s, n, i, t->digits3);
			int rc = f(t, s + i, end - i, sc, arg);
			if (rc < 0)
				return rc;
			i = end;
		}
		return 0;
	}
	return scratch_levels(t, sc) < 0 ? -1 : pre_run(t, 0, s, n, 0, sc, f, arg);
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

/* Metaspace: spaces become the replacement, which is put first (always, or
 * for the text's first piece, as first), then with split the piece is cut
 * before each run of replacements (tokenizers' MergedWithNext). */
static int encode_meta(const struct tokenizer *t, const unsigned char *s, size_t n, int first, struct scratch *sc,
		       struct tok_ids *out)
{
	const char *r = t->meta_rep;
	size_t rl = t->meta_rep_len;
	struct buf *m = &sc->meta;
	buf_reset(m);
	int starts = s[0] == ' ' || (n >= rl && memcmp(s, r, rl) == 0);
	if (!starts && (t->meta_prepend == PREPEND_ALWAYS || (t->meta_prepend == PREPEND_FIRST && first)) &&
	    buf_append(m, r, rl) < 0)
		return -1;
	if (replace_all(m, s, n, " ", 1, r, rl) < 0)
		return -1;
	s = m->data;
	n = m->len;
	if (!t->meta_split)
		return bpe(t, s, n, sc, out);
	size_t from = 0;
	for (size_t i = 1; i + rl <= n; i++)
		if (memcmp(s + i, r, rl) == 0) {
			int rc = bpe(t, s + from, i - from, sc, out);
			if (rc < 0)
				return rc;
			from = i;
		}
	return bpe(t, s + from, n - from, sc, out);
}

/* A piece of normalized text between added tokens (n > 0); first when it
 * begins the text, for Metaspace's prepend_scheme first. */
static int encode_piece(const struct tokenizer *t, const unsigned char *s, size_t n, int first, struct scratch *sc,
			struct tok_ids *out)
{
	if (t->meta)
		return encode_meta(t, s, n, first, sc, out);
	if (t->n_psteps)
		return pre_tokenize(t, s, n, t->scan, sc, piece_bpe, out);
	return bpe(t, s, n, sc, out);   /* no pre_tokenizer: one word */
}

/* A stretch of text between raw added tokens: normalize, split out the
 * normalized added tokens, pre-tokenize and merge the rest. tokenizers
 * normalizes each stretch on its own, so Prepend puts its "▁" before each. */
static int encode_text(const struct tokenizer *t, const unsigned char *s, size_t n, int first, struct scratch *sc,
		       struct tok_ids *out)
{
	int rc = normalize(t, s, n, &sc->norm, &sc->norm2, &s, &n, &sc->onig_rc);
	if (rc < 0)
		return rc;
	size_t at = 0, scan = 0, b, e;
	int32_t id;
	while (next_added(&t->norm, s, n, &scan, at, &b, &e, &id)) {
		rc = b > at ? encode_piece(t, s + at, b - at, first && at == 0, sc, out) : 0;
		if (rc < 0)
			return rc;
		if (tok_ids_push(out, id) < 0)
			return -1;
		at = e;
	}
	return at < n ? encode_piece(t, s + at, n - at, first && at == 0, sc, out) : 0;
}

static void scratch_free(const struct tokenizer *t, struct scratch *sc)
{
	buf_free(&sc->norm);
	buf_free(&sc->norm2);
	buf_free(&sc->meta);
	free(sc->sym);
	free(sc->heap);
	for (size_t i = 0; sc->lv && i <= t->n_psteps; i++) {
		buf_free(&sc->lv[i].text);
		buf_free(&sc->lv[i].map);
		free(sc->lv[i].sp);
	}
	free(sc->lv);
	if (sc->region)
		onig_region_free(sc->region, 1);
}

/* Oniguruma's message for what a search returned. */
static int onig_err(struct err *e, int rc)
{
	OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
	onig_error_code_to_str(msg, rc);
	if (rc == ONIGERR_MEMORY)
		return err_set(e, "out of memory in Oniguruma's search (%s)", (const char *)msg);
	return err_set(e, "Oniguruma failed to search the text: %s", (const char *)msg);
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
			rc = encode_text(t, s + at, b - at, at == 0, &sc, out);
		if (rc == 0)
			rc = tok_ids_push(out, id);
		at = stop;
	}
	if (rc == 0 && at < n)
		rc = encode_text(t, s + at, n - at, at == 0, &sc, out);
	scratch_free(t, &sc);
	if (rc == -4)
		return onig_err(e, sc.onig_rc);
	if (rc == -3)
		return err_set(e, "model.unk_token \"%.64s\" is not in the vocab, and the text needs it", t->unk_token);
	if (rc == -2 && t->spm)
		return err_set(e, "character U+%04X has no token in this vocabulary, and there is no unk_token%s",
			       (unsigned)sc.missing_cp, t->byte_fallback ? " nor all its <0xNN> tokens" : "");
	if (rc == -2) {
		char shown[8] = "";
		if (sc.missing > ' ' && sc.missing < 0x7F)
			snprintf(shown, sizeof shown, " ('%c')", sc.missing);
		return err_set(e, "byte 0x%02x%s has no token in this vocabulary", sc.missing, shown);
	}
	return rc < 0 ? err_set(e, "out of memory") : 0;
}

struct collect {
	struct buf *out;
	struct tok_ids *ends;
};

static int piece_collect(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc, void *arg)
{
	struct collect *c = arg;
	return buf_append(c->out, p, n) < 0 || tok_ids_push(c->ends, (int32_t)c->out->len) < 0 ? -1 : 0;
}

int tok_pre_tokenize(const struct tokenizer *t, const char *text, size_t n, int scanner, struct buf *out,
		     struct tok_ids *ends, struct err *e)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t bad = uni_utf8_check(s, n);
	if (bad != n)
		return err_set(e, "text is not valid UTF-8 at byte %zu (0x%02x)", bad, s[bad]);
	if (scanner && !t->scan)
		return err_set(e, "pre_tokenizer: not the one the scanner does (Qwen's or Llama 3's Split, then ByteLevel)");
	if (t->meta || !t->n_psteps)
		return err_set(e, "pre_tokenizer: %s, not steps that split", t->meta ? "Metaspace" : "none");
	if (out->len + n >= INT32_MAX)
		return err_set(e, "text too long to pre-tokenize (%zu bytes)", n);
	struct scratch sc = { .missing = -1 };
	struct collect c = { out, ends };
	/* the scanner's pattern through Oniguruma: compiled for this call */
	struct tokenizer tc;
	struct pstep ps[2];
	if (!scanner && t->scan) {
		tc = *t;
		memcpy(ps, t->psteps, sizeof ps);
		if (regex_compile(&ps[0].re, ps[0].known, strlen(ps[0].known), "pre_tokenizer", e) < 0)
			return -1;
		tc.psteps = ps;
		t = &tc;
	}
	int rc = n ? pre_tokenize(t, s, n, scanner, &sc, piece_collect, &c) : 0;
	scratch_free(t, &sc);
	if (t == &tc)
		onig_free(ps[0].re);
	if (rc == -4)
		return onig_err(e, sc.onig_rc);
	return rc < 0 ? err_set(e, "out of memory") : 0;
}

/* ---- decoding ---- */

/* A list of token strings: token k is b[end[k-1] .. end[k]). */
struct dlist {
	struct buf b;
	size_t *end;                /* (n) */
	size_t n, cap;
};

/* End the token being written. */
static int dl_end(struct dlist *d)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		size_t *q = realloc(d->end, cap * sizeof *q);
		if (!q)
			return -1;
		d->end = q;
		d->cap = cap;
	}
	d->end[d->n++] = d->b.len;
	return 0;
}

static int dl_add(struct dlist *d, const void *p, size_t n)
{
	return buf_append(&d->b, p, n) < 0 ? -1 : dl_end(d);
}

/* ByteFallback's token: "<0x" two hex digits ">", its byte, or -1. */
static int fallback_byte(const unsigned char *p, size_t n)
{
	if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
		return -1;
	int v = 0;
	for (int i = 3; i < 5; i++) {
		int c = p[i], x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (x < 0)
			return -1;
		v = v * 16 + x;
	}
	return v;
}

/* ByteFallback's run of bytes: one token of them when they are UTF-8, else
 * one U+FFFD token for each byte (not from_utf8_lossy's maximal parts). */
static int dl_flush_bytes(struct dlist *d, struct buf *bytes)
{
	int rc = 0;
	if (bytes->len && uni_utf8_check(bytes->data, bytes->len) == bytes->len)
		rc = dl_add(d, bytes->data, bytes->len);
	else
		for (size_t i = 0; i < bytes->len && rc == 0; i++)
			rc = dl_add(d, "\xEF\xBF\xBD", 3);
	buf_reset(bytes);
	return rc;
}

/* One decoder step from src to dst (empty); -1 when memory runs out, -2
 * where tokenizers would panic (Strip), -4 with Oniguruma's code in
 * *onig_rc when a Replace's search fails. */
static int decode_step(const struct dstep *st, const struct dlist *src, struct dlist *dst, int *onig_rc)
{
	struct buf bytes = { 0 };
	int rc = 0;
	for (size_t k = 0; k < src->n && rc == 0; k++) {
		size_t from = k ? src->end[k - 1] : 0;
		/* (tokens may all be empty, and then there is no buffer) */
		const unsigned char *p = src->b.data ? src->b.data + from : (const unsigned char *)"";
		size_t n = src->end[k] - from;
		switch (st->kind) {
		case D_REPLACE:
			rc = st->re ? regex_replace(st->re, p, n, st->b, st->lb, &dst->b, onig_rc) :
				replace_all(&dst->b, p, n, st->a, st->la, st->b, st->lb);
			rc = rc < 0 ? rc : dl_end(dst);
			break;
		case D_BYTE_FALLBACK: {
			int v = fallback_byte(p, n);
			if (v >= 0)
				rc = buf_put_u8(&bytes, (uint8_t)v);
			else
				rc = dl_flush_bytes(dst, &bytes) < 0 ? -1 : dl_add(dst, p, n);
			break;
		}
		case D_FUSE:
			rc = buf_append(&dst->b, p, n);
			break;
		case D_STRIP: {
			size_t a = 0, z = n, l;
			uint32_t c;
			for (size_t i = 0; i < st->start && a < z && (l = cp_at(p, z, a, &c)) && c == st->ch; i++)
				a += l;
			/* tokenizers cuts the two ends on its own and panics when
			 * the end passes the start, or the token (even empty) runs
			 * out while stop has more to cut */
			for (size_t i = 0; i < st->stop; i++) {
				if (z == 0) {
					rc = -2;
					break;
				}
				size_t j = prev_char(p, z);
				cp_at(p, z, j, &c);
				if (c != st->ch)
					break;
				z = j;
			}
			if (rc == 0 && z < a)
				rc = -2;
			if (rc == 0)
				rc = dl_add(dst, p + a, z - a);
			break;
		}
		case D_METASPACE:
			/* the replacement becomes a space, but in the first token
			 * (prepend_scheme first or always) it goes, every one */
			rc = replace_all(&dst->b, p, n, st->a, st->la, " ", k == 0 && st->prepend ? 0 : 1) < 0 ? -1 :
				dl_end(dst);
			break;
		}
	}
	if (rc == 0 && st->kind == D_BYTE_FALLBACK)
		rc = dl_flush_bytes(dst, &bytes);
	if (rc == 0 && st->kind == D_FUSE)
		rc = dl_end(dst);   /* one token, even of none */
	buf_free(&bytes);
	return rc;
}

/* SentencePiece-style decoding: the tokens' strings through the decoder's steps, joined. */
static int decode_steps(const struct tokenizer *t, const int32_t *ids, size_t n, int skip_special,
			struct buf *out, int *onig_rc)
{
	struct dlist l[2];
	int rc = 0, cur = 0;
	memset(l, 0, sizeof l);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct idinfo *d = &t->ids[ids[i]];
		if (skip_special && d->kind == KIND_ADDED && d->special)
			continue;
		const struct added key = { .id = ids[i] }, *a = NULL;
		if (d->normalized)
			a = bsearch(&key, t->ndec, t->n_ndec, sizeof *t->ndec, cmp_added_id);
		if (!t->pool)
			rc = dl_add(&l[0], "", 0);  /* only "" in the vocab */
		else
			rc = a ? dl_add(&l[0], t->pool + a->off, a->len) : dl_add(&l[0], t->pool + d->off, d->len);
	}
	for (size_t s = 0; s < t->n_dsteps && rc == 0; s++) {
		buf_reset(&l[!cur].b);
		l[!cur].n = 0;
		rc = decode_step(&t->dsteps[s], &l[cur], &l[!cur], onig_rc);
		cur = !cur;
	}
	if (rc == 0 && l[cur].b.len)
		rc = buf_append(out, l[cur].b.data, l[cur].b.len);
	for (int i = 0; i < 2; i++) {
		buf_free(&l[i].b);
		free(l[i].end);
	}
	return rc;
}

int tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n, int skip_special,
	       struct buf *out, struct err *e)
{
	size_t start = out->len;
	if (t->spm) {
		for (size_t i = 0; i < n; i++)
			if (ids[i] < 0 || (uint32_t)ids[i] >= t->n_ids || t->ids[ids[i]].kind == KIND_NONE)
				return err_set(e, "token %zu: id %d is not in the tokenizer (%u ids)", i, (int)ids[i],
					       t->n_ids);
		int orc = 0, rc = decode_steps(t, ids, n, skip_special, out, &orc);
		if (rc < 0)
			out->len = start;
		if (rc == -4)
			return onig_err(e, orc);
		if (rc == -2)
			return err_set(e, "decoder: Strip cannot cut a token of these ids as its stop says (tokenizers "
				       "panics there: stop would cut past the token's beginning, or into what start cut)");
		if (rc < 0)
			return err_set(e, "out of memory");
		return 0;
	}
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
