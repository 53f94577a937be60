/* buf.c: see buf.h. */
#include "base/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_reserve(struct buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	size_t need = b->len + extra;
	if (need < b->len)
		return -1;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	unsigned char *p = realloc(b->data, cap);
	if (!p)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || buf_reserve(b, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_put_u8(struct buf *b, uint8_t v)
{
	return buf_append(b, &v, 1);
}

int buf_put_u16(struct buf *b, uint16_t v)
{
	unsigned char p[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
	return buf_append(b, p, 2);
}

int buf_put_u32(struct buf *b, uint32_t v)
{
	unsigned char p[4];
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return buf_append(b, p, 4);
}

int buf_put_u64(struct buf *b, uint64_t v)
{
	unsigned char p[8];
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return buf_append(b, p, 8);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
}

int buf_put_tsv_cell(struct buf *b, const char *s, size_t n)
{
	static const char named[] = { ['\\'] = '\\', ['\t'] = 't', ['\n'] = 'n', ['\r'] = 'r' };
	int x = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < sizeof named && named[c])
			x |= buf_printf(b, "\\%c", named[c]);
		else if (c < 0x20 || c == 0x7f)
			x |= buf_printf(b, "\\x%02x", c);
		else
			x |= buf_put_u8(b, c);
	}
	return x;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int buf_read_file(struct buf *b, const char *path, struct err *e)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		err_sys(e, "%s", path);
		buf_free(b);
		return -1;
	}
	size_t n;
	int oom = 0;
	do {
		oom = buf_reserve(b, 1 << 16) < 0;
		n = oom ? 0 : fread(b->data + b->len, 1, b->cap - b->len, f);
		b->len += n;
	} while (n > 0);
	int bad = ferror(f), why = errno;   /* read(2)'s, which stdio's error flag does not keep */
	fclose(f);
	if (!oom && !bad && buf_reserve(b, 1) == 0) {
		b->data[b->len] = 0;
		return 0;
	}
	if (bad) {
		errno = why;
		err_sys(e, "%s: read error", path);
	} else
		err_set(e, "%s: out of memory", path);
	buf_free(b);
	return -1;
}

int buf_grow_array(void **p, size_t n, size_t sz)
{
	if (n & (n - 1))
		return 0;   /* not a power of two: below the capacity */
	size_t cap = n ? 2 * n : 1;
	if (cap < n || (sz && cap > SIZE_MAX / sz))
		return -1;
	void *q = realloc(*p, cap * sz);
	if (!q)
		return -1;
	*p = q;
	return 0;
}
