/* tokenizer_stages.c: the pipeline's steps from tokenizer.json: the normalizer, the pre_tokenizer
 * (Split, ByteLevel and Digits steps, or Metaspace) and the decoder, loaded into struct tokenizer,
 * and the check that the decoder undoes the pre_tokenizer. The model is tokenizer_load.c's. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <oniguruma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The two Split patterns the hand-written scanner (tokenizer_pretok.c) implements, as tokenizer.json spells them. */
static const char PAT_QWEN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The "type" of the object at path, or NULL with the message. */
static const char *need_type(const cJSON *o, const char *path, struct err *e)
{
	if (!cJSON_IsObject(o)) {
		err_set(e, "%s: expected an object, not %s", path, tok_json_kind(o));
		return NULL;
	}
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!cJSON_IsString(v)) {
		if (v)
			err_set(e, "%s.type: expected a string, not %s", path, tok_json_kind(v));
		else
			err_set(e, "%s: no \"type\"", path);
		return NULL;
	}
	return v->valuestring;
}

/* A string field that tokenizers reads as one char: its UTF-8 in out
 * (room for 4 bytes), its length, or -1 with the message. */
static int get_char(const cJSON *o, const char *k, const char *path, char *out, uint32_t *cp, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v)
		return err_set(e, "%s: no \"%s\" (tokenizers requires it)", path, k);
	if (!cJSON_IsString(v))
		return err_set(e, "%s.%s: expected a string of one character, not %s", path, k, tok_json_kind(v));
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
			cJSON_IsObject(pat) ? "that object" : tok_json_kind(pat));
	} else if (!*str->valuestring) {
		err_set(e, "%s.pattern.String: \"\" is not supported", path);
	} else {
		return str->valuestring;
	}
	return NULL;
}

char *tok_dup_str(const char *s, size_t *len)
{
	*len = strlen(s);
	char *d = malloc(*len + 1);
	if (d)
		memcpy(d, s, *len + 1);
	return d;
}

/* A Replace step's pattern (*a, or *re for a Regex) and its content (*b),
 * for the normalizer and the decoder alike: 0, or -1 with the message. */
static int load_replace(const cJSON *o, const char *path, const char **a, const char **b, regex_t **re,
			struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "content");
	if (!(*a = get_pattern(o, path, re, e)))
		return -1;
	if (!cJSON_IsString(v)) {
		if (*re)
			onig_free(*re);
		*re = NULL;
		return v ? err_set(e, "%s.content: expected a string, not %s", path, tok_json_kind(v))
			 : err_set(e, "%s: no \"content\" (tokenizers requires it)", path);
	}
	*b = v->valuestring;
	return 0;
}

/* A normalizer's or decoder's step made whole: its strings a and b (NULL:
 * none) copied into *sa and *sb, and room for it after the n steps (of
 * size bytes each) of steps. The grown array, or NULL with the copies and
 * re freed when memory runs out. */
static void *keep_step(const char *a, const char *b, char **sa, size_t *la, char **sb, size_t *lb, regex_t *re,
		       void *steps, size_t n, size_t size, struct err *e)
{
	void *q = NULL;
	if ((!a || (*sa = tok_dup_str(a, la))) && (!b || (*sb = tok_dup_str(b, lb))) &&
	    (q = realloc(steps, (n + 1) * size)))
		return q;
	free(*sa);
	free(*sb);
	if (re)
		onig_free(re);
	err_set(e, "out of memory");
	return NULL;
}

/* A Sequence's list, o[key], each loaded by load as path.key[i]. */
static int load_sequence(struct tokenizer *t, const cJSON *o, const char *key, const char *path,
			 int (*load)(struct tokenizer *, const cJSON *, const char *, struct err *), struct err *e)
{
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsArray(seq))
		return seq ? err_set(e, "%s.%s: expected an array, not %s", path, key, tok_json_kind(seq))
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

int tok_load_normalizer(struct tokenizer *t, const cJSON *n, const char *path, struct err *e)
{
	const char *type = need_type(n, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(t, n, "normalizers", path, tok_load_normalizer, e);
	struct nstep st = { 0 };
	const char *a = NULL, *b = NULL;
	if (strcmp(type, "NFC") == 0) {
		st.kind = N_NFC;
	} else if (strcmp(type, "Prepend") == 0) {
		st.kind = N_PREPEND;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(n, "prepend");
		if (!cJSON_IsString(v))
			return v ? err_set(e, "%s.prepend: expected a string, not %s", path, tok_json_kind(v))
				 : err_set(e, "%s: no \"prepend\" (tokenizers requires it)", path);
		a = v->valuestring;
	} else if (strcmp(type, "Replace") == 0) {
		st.kind = N_REPLACE;
		if (load_replace(n, path, &a, &b, &st.re, e) < 0)
			return -1;
	} else {
		return err_set(e, "%s: type \"%.64s\" is not supported (only NFC, Prepend, Replace, a Sequence of "
			       "those, or none)", path, type);
	}
	struct nstep *q = keep_step(a, b, &st.a, &st.la, &st.b, &st.lb, st.re, t->nsteps, t->n_nsteps, sizeof *q, e);
	if (!q)
		return -1;
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
				       path, cJSON_IsString(v) ? "\"" : "", cJSON_IsString(v) ? v->valuestring : tok_json_kind(v),
				       cJSON_IsString(v) ? "\"" : "");
		*prepend = k;
	}
	int aps = tok_get_flag(o, "add_prefix_space", 0, -1, path, e);
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
	if ((*split = tok_get_flag(o, "split", 0, 1, path, e)) < 0)
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
			       cJSON_IsObject(pattern) ? "that object" : tok_json_kind(pattern));
	st.behavior = -1;
	for (int i = 0; i < 5; i++)
		if (cJSON_IsString(b) && strcmp(b->valuestring, beh[i]) == 0)
			st.behavior = i;
	if (st.behavior < 0)
		return err_set(e, "%s.behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
			       "Contiguous, not %s%.64s%s", path, cJSON_IsString(b) ? "\"" : "",
			       cJSON_IsString(b) ? b->valuestring : tok_json_kind(b), cJSON_IsString(b) ? "\"" : "");
	if ((st.invert = tok_get_flag(o, "invert", 1, 0, path, e)) < 0)
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
		if ((st.individual = tok_get_flag(p, "individual_digits", 1, 0, path, e)) < 0)
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
	if ((st.prefix_space = tok_get_flag(p, "add_prefix_space", 1, 0, path, e)) < 0 ||
	    tok_get_flag(p, "trim_offsets", 1, 0, path, e) < 0 || (re = tok_get_flag(p, "use_regex", 0, 1, path, e)) < 0)
		return -1;
	if (re && tok_regex_compile(&st.re, PAT_GPT2, strlen(PAT_GPT2), path, e) < 0)
		return -1;
	t->spm = 0;
	return add_pstep(t, &st, e);
}

int tok_load_pre_tokenizer(struct tokenizer *t, const cJSON *p, struct err *e)
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

#define DEC_ONLY "only ByteLevel (with a ByteLevel pre_tokenizer), or Replace, ByteFallback, Fuse, " \
	"Strip, Metaspace and Sequences of those (without it) are supported"

int tok_load_decoder(struct tokenizer *t, const cJSON *d, const char *path, struct err *e)
{
	if (!d || cJSON_IsNull(d))
		return err_set(e, "%s: none given, and " DEC_ONLY " (without one, tokenizers joins tokens with spaces)",
			       path);
	const char *type = need_type(d, path, e);
	if (!type)
		return -1;
	if (strcmp(type, "ByteLevel") == 0 && t->n_dsteps == 0 && strcmp(path, "decoder") == 0) {
		if (tok_get_flag(d, "add_prefix_space", 1, 0, path, e) < 0 || tok_get_flag(d, "trim_offsets", 1, 0, path, e) < 0 ||
		    tok_get_flag(d, "use_regex", 0, 1, path, e) < 0)
			return -1;
		t->byte_level_dec = 1;
		return 0;
	}
	if (strcmp(type, "Sequence") == 0)
		return load_sequence(t, d, "decoders", path, tok_load_decoder, e);
	struct dstep st = { 0 };
	const char *a = NULL, *b = NULL;
	char rep[8] = "";
	if (strcmp(type, "Replace") == 0) {
		st.kind = D_REPLACE;
		if (load_replace(d, path, &a, &b, &st.re, e) < 0)
			return -1;
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
			if (tok_get_id(v, &x, e) < 0)
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
	struct dstep *q = keep_step(a, b, &st.a, &st.la, &st.b, &st.lb, st.re, t->dsteps, t->n_dsteps, sizeof *q, e);
	if (!q)
		return -1;
	t->dsteps = q;
	t->dsteps[t->n_dsteps++] = st;
	return 0;
}

/* The decoder must undo what the pre_tokenizer did: ByteLevel's characters
 * with ByteLevel, otherwise the UTF-8 tokens as they are. */
int tok_check_decoder(const struct tokenizer *t, struct err *e)
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
