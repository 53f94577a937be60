/* tokenizer_encode.c: encoding: the normalizer, the added-token splitter, BPE, tok_encode. See tokenizer.h,
 * and tokenizer_impl.h for how the modules divide the work. */
#include "model/tokenizer_impl.h"

#include <oniguruma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- encoding ---- */


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

/* Append s[0..n) to out with each pat[0..np) replaced by with[0..nw),
 * left to right without overlaps (np > 0). -1 when memory runs out. */
int tok_replace_all(struct buf *out, const unsigned char *s, size_t n, const char *pat, size_t np,
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
int tok_normalize(const struct tokenizer *t, const unsigned char *s, size_t n, struct buf *a, struct buf *b,
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
			rc = tok_regex_replace(st->re, s, n, st->b, st->lb, dst, onig_rc);
		else
			rc = tok_replace_all(dst, s, n, st->a, st->la, st->b, st->lb);
		if (rc < 0)
			return rc;
		s = dst->data;
		n = dst->len;
	}
	*rs = s;
	*rn = n;
	return 0;
}

static int piece_bpe(const struct tokenizer *t, const unsigned char *p, size_t n, struct scratch *sc, void *out)
{
	return bpe(t, p, n, sc, out);
}

/* Offset of the character that ends s[0..i), i > 0. */
size_t tok_prev_char(const unsigned char *s, size_t i)
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
	cp_at(s, i, tok_prev_char(s, i), &c);
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
		i = tok_prev_char(s, i);
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
 * rstrip as its AddedVocabulary::tok_find_matches. Sets *start, *stop (the
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
	if (tok_replace_all(m, s, n, " ", 1, r, rl) < 0)
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
		return tok_pre_pieces(t, s, n, t->scan, sc, piece_bpe, out);
	return bpe(t, s, n, sc, out);   /* no pre_tokenizer: one word */
}

/* A stretch of text between raw added tokens: tok_normalize, split out the
 * normalized added tokens, pre-tokenize and merge the rest. tokenizers
 * normalizes each stretch on its own, so Prepend puts its "▁" before each. */
static int encode_text(const struct tokenizer *t, const unsigned char *s, size_t n, int first, struct scratch *sc,
		       struct tok_ids *out)
{
	int rc = tok_normalize(t, s, n, &sc->norm, &sc->norm2, &s, &n, &sc->onig_rc);
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
		return tok_onig_err(e, sc.onig_rc);
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
		if (tok_regex_compile(&ps[0].re, ps[0].known, strlen(ps[0].known), "pre_tokenizer", e) < 0)
			return -1;
		tc.psteps = ps;
		t = &tc;
	}
	int rc = n ? tok_pre_pieces(t, s, n, scanner, &sc, piece_collect, &c) : 0;
	scratch_free(t, &sc);
	if (t == &tc)
		onig_free(ps[0].re);
	if (rc == -4)
		return tok_onig_err(e, sc.onig_rc);
	return rc < 0 ? err_set(e, "out of memory") : 0;
}
