/* stopstr.c: stop strings over a window of a response's last tokens (see stopstr.h). */
#include "model/stopstr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes at the start of a window's text that may read otherwise than in the
 * whole response: a UTF-8 character cut by the window (up to 3 bytes, each
 * written as U+FFFD's 3) and a stripped leading space, with room to spare. */
#define MARGIN 16

static int cmp_id(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Whether id may join a run of byte tokens: a byte token, or a special one,
 * which decoding leaves out so that the bytes on either side meet. */
static int in_byte_run(const struct stopstr *s, int32_t id)
{
	return tok_is_special(s->tok, id) || bsearch(&id, s->bytes, (size_t)s->nbytes, sizeof id, cmp_id);
}

int stopstr_init(struct stopstr *s, const struct tokenizer *tok, const char *const *strs, int n, struct err *e)
{
	memset(s, 0, sizeof *s);
	if (n < 1 || n > STOPSTR_MAX)
		return err_set(e, "from 1 to %d stop strings, not %d", STOPSTR_MAX, n);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(strs[i]);
		if (len == 0 || len > STOPSTR_MAX_LEN)
			return err_set(e, "stop string %d is %zu bytes: give 1 to %d", i + 1, len, STOPSTR_MAX_LEN);
		s->s[i] = strs[i];
		s->len[i] = len;
		s->ends[(unsigned char)strs[i][len - 1]] = 1;
		if (len > s->longest)
			s->longest = len;
	}
	s->tok = tok;
	s->n = n;
	for (int b = 0; b < 256; b++) {
		char name[8];
		snprintf(name, sizeof name, "<0x%02X>", b);
		int32_t id = tok_token_id(tok, name);
		if (id >= 0)
			s->bytes[s->nbytes++] = id;
	}
	qsort(s->bytes, (size_t)s->nbytes, sizeof *s->bytes, cmp_id);
	return 0;
}

void stopstr_free(struct stopstr *s)
{
	buf_free(&s->now);
	buf_free(&s->before);
}

static int decode(struct stopstr *s, const int32_t *ids, int n, struct buf *out)
{
	buf_reset(out);
	return tok_decode(s->tok, ids, (size_t)n, 1, out, &s->e);
}

/* Whether the new token may complete a stop string: the text of the last
 * four tokens holds a byte that ends one, or they are such that this cannot
 * be told from them (a byte token, whose run may decode anew, or a special
 * one, which adds no text). 0, 1, or -1 when the decode failed. */
static int may_end_one(struct stopstr *s, const int32_t *tokens, int n)
{
	int from = n > 4 ? n - 4 : 0;
	for (int i = from; i < n; i++)
		if (in_byte_run(s, tokens[i]))
			return 1;
	if (decode(s, tokens + from, n - from, &s->now) < 0)
		return -1;
	for (size_t i = 0; i < s->now.len; i++)
		if (s->ends[s->now.data[i]])
			return 1;
	return 0;
}

int stopstr_hit(struct stopstr *s, const int32_t *tokens, int n)
{
	if (s->failed)
		return 1;
	if (n <= 0)
		return 0;
	int may = may_end_one(s, tokens, n);
	if (may <= 0) {
		s->failed = may < 0;
		return may < 0;
	}
	/* a token is a byte or more of text, unless special: most windows of
	 * this many tokens are long enough at the first try */
	int k = (int)(s->longest + MARGIN);
	for (;;) {
		int from = n > k ? n - k : 0;
		if (s->nbytes)
			while (from > 0 && in_byte_run(s, tokens[from - 1]) && in_byte_run(s, tokens[from]))
				from--;
		if (decode(s, tokens + from, n - from, &s->now) < 0 ||
		    decode(s, tokens + from, n - 1 - from, &s->before) < 0) {
			s->failed = 1;
			return 1;
		}
		/* the new token's text: where the two decodes part (a character it
		 * completes replaces the U+FFFD its first bytes decoded to) */
		size_t c = 0, m = s->now.len < s->before.len ? s->now.len : s->before.len;
		while (c < m && s->now.data[c] == s->before.data[c])
			c++;
		/* a match may start as early as `longest` bytes before the new text,
		 * and must not reach into the window's uncertain first bytes */
		if (from > 0 && c < s->longest + MARGIN) {
			k *= 2;
			continue;
		}
		const char *text = (const char *)s->now.data;
		for (int i = 0; i < s->n; i++) {
			size_t at = c + 1 > s->len[i] ? c + 1 - s->len[i] : 0;
			if (at < s->now.len && memmem(text + at, s->now.len - at, s->s[i], s->len[i]))
				return 1;
		}
		return 0;
	}
}

int stopstr_after(void *ctx, const int32_t *tokens, int n)
{
	return stopstr_hit(ctx, tokens, n);
}

const char *stopstr_error(const struct stopstr *s)
{
	return s->failed ? s->e.msg : NULL;
}
