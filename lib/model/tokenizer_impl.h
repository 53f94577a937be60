/* tokenizer_impl.h: the tokenizer's insides, shared by its modules. Only
 * lib/model/tokenizer*.c include it; everyone else goes through tokenizer.h.
 *
 *   tokenizer_load.c    reads tokenizer.json into struct tokenizer, checks it;
 *                       the pool, ids, vocab, merges and added tokens
 *   tokenizer_stages.c  loads the normalizer's, pre_tokenizer's and decoder's
 *                       steps
 *   tokenizer_json.c    reads values as tokenizers does (kinds, flags, ids), and
 *                       checks how the ids are written in the text
 *   tokenizer_pretok.c  Oniguruma, the hand-written Qwen/Llama 3 scanner and
 *                       the generic pre_tokenizer steps
 *   tokenizer_encode.c  normalizer, added tokens, BPE, tok_encode
 *   tokenizer_decode.c  tok_decode and the decoder's steps
 *
 * Names shared between them start with tok_ so they cannot collide. */
#ifndef GRPO_MODEL_TOKENIZER_IMPL_H
#define GRPO_MODEL_TOKENIZER_IMPL_H

#include <oniguruma.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/unicode.h"
#include "model/tokenizer.h"

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
				     * does not do the work (see tok_load_pre_tokenizer) */
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

typedef int (*piece_fn)(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc, void *arg);

/* ---- hot helpers: inline here so BPE and the scanner keep them inlined ---- */

/* ---- hash tables ---- */

static inline uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static inline uint64_t hash_pair(uint64_t k)
{
	k *= 0x9E3779B97F4A7C15ull;
	return k ^ (k >> 31);
}

static inline int32_t vocab_find(const struct tokenizer *t, const unsigned char *p, size_t n)
{
	for (size_t i = hash_bytes(p, n) & t->vmask;; i = (i + 1) & t->vmask) {
		const struct vslot *s = &t->vocab[i];
		if (s->id < 0)
			return -1;
		if (s->len == n && memcmp(t->pool + s->off, p, n) == 0)
			return s->id;
	}
}

static inline const struct mslot *merge_find(const struct tokenizer *t, int32_t a, int32_t b)
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


struct cJSON;

/* tokenizer_load.c */
int tok_cmp_added_id(const void *x, const void *y);
int tok_cp_byte(uint32_t cp);
long tok_token_bytes_n(const char *s, size_t n, unsigned char *out);

/* tokenizer_stages.c: each loads its part of the file into t, or returns -1 with the message */
int tok_load_normalizer(struct tokenizer *t, const struct cJSON *n, const char *path, struct err *e);
int tok_load_pre_tokenizer(struct tokenizer *t, const struct cJSON *p, struct err *e);
int tok_load_decoder(struct tokenizer *t, const struct cJSON *d, const char *path, struct err *e);
int tok_check_decoder(const struct tokenizer *t, struct err *e);
char *tok_dup_str(const char *s, size_t *len);

/* tokenizer_json.c */
const char *tok_json_kind(const struct cJSON *v);
int tok_get_flag(const struct cJSON *o, const char *k, int need, int dflt, const char *path, struct err *e);
int tok_get_id(const struct cJSON *v, uint32_t *id, struct err *e);
int tok_check_id_text(const char *json, size_t n, struct err *e);
void tok_json_where(const char *json, size_t n, const char *p, char *out, size_t cap);

/* tokenizer_pretok.c */
int tok_find_matches(const struct pstep *st, const unsigned char *s, size_t n, struct plevel *l,
		     struct scratch *sc);
int tok_onig_err(struct err *e, int rc);
int tok_pre_run(const struct tokenizer *t, size_t k, const unsigned char *s, size_t n, int mapped,
		struct scratch *sc, piece_fn f, void *arg);
int tok_pre_pieces(const struct tokenizer *t, const unsigned char *s, size_t n, int scanner, struct scratch *sc,
		   piece_fn f, void *arg);
int tok_regex_compile(regex_t **re, const char *pat, size_t n, const char *path, struct err *e);
int tok_regex_literal(regex_t **re, const char *s, const char *path, struct err *e);
int tok_regex_replace(regex_t *re, const unsigned char *s, size_t n, const char *with, size_t nw,
		      struct buf *out, int *rc);

/* tokenizer_encode.c */
int tok_normalize(const struct tokenizer *t, const unsigned char *s, size_t n, struct buf *a, struct buf *b,
		  const unsigned char **rs, size_t *rn, int *onig_rc);
int tok_replace_all(struct buf *out, const unsigned char *s, size_t n, const char *pat, size_t np,
		    const char *with, size_t nw);
size_t tok_prev_char(const unsigned char *s, size_t i);

#endif
