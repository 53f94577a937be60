/*
 * buf.h: a growable byte buffer.
 *
 * Owns `data`; `len` bytes are used, `cap` allocated. Appends return -1 only
 * when memory runs out. A zeroed struct buf is an empty, valid buffer.
 */
#ifndef GRPO_BUF_H
#define GRPO_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct buf {
	unsigned char *data;
	size_t len, cap;
};

int buf_reserve(struct buf *b, size_t extra);   /* room for extra more bytes */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_put_u8(struct buf *b, uint8_t v);
int buf_put_u16(struct buf *b, uint16_t v);     /* little-endian */
int buf_put_u32(struct buf *b, uint32_t v);
int buf_put_u64(struct buf *b, uint64_t v);
/* Append the whole file at path (config.json, an index, a manifest), with a
 * NUL after it that len does not count. On failure b is freed and errno
 * still tells why the file could not be opened (ENOENT: it does not exist). */
int buf_read_file(struct buf *b, const char *path, struct err *e);
/* Append n bytes of s as one cell of tab-separated values: backslash, tab,
 * line breaks and the other control bytes escaped (\\ \t \n \r \xHH),
 * so that a row stays one row whatever text it holds. */
int buf_put_tsv_cell(struct buf *b, const char *s, size_t n);
void buf_reset(struct buf *b);                  /* len = 0, keeps memory */
void buf_free(struct buf *b);

/*
 * Room for one more element in the array *p of n elements of size sz, which
 * only this function has grown: its capacity is then n rounded up to a power
 * of two, so it reallocates only when n is 0 or a power of two, doubling, and
 * n appends cost O(n) rather than O(n^2). 0, or -1 when memory runs out (*p
 * is kept, still valid). The array needs no capacity field.
 */
int buf_grow_array(void **p, size_t n, size_t sz);

#endif
