/* tokenizer_decode.c: decoding: tok_decode and the decoder's steps. See tokenizer.h,
 * and tokenizer_impl.h for how the modules divide the work. */
#include "model/tokenizer_impl.h"

#include <oniguruma.h>
#include <stdlib.h>
#include <string.h>

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
			rc = st->re ? tok_regex_replace(st->re, p, n, st->b, st->lb, &dst->b, onig_rc) :
				tok_replace_all(&dst->b, p, n, st->a, st->la, st->b, st->lb);
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
				size_t j = tok_prev_char(p, z);
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
			rc = tok_replace_all(&dst->b, p, n, st->a, st->la, " ", k == 0 && st->prepend ? 0 : 1) < 0 ? -1 :
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
			a = bsearch(&key, t->ndec, t->n_ndec, sizeof *t->ndec, tok_cmp_added_id);
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
			return tok_onig_err(e, orc);
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
