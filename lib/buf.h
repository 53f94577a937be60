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
void buf_reset(struct buf *b);                  /* len = 0, keeps memory */
void buf_free(struct buf *b);

#endif
