/*
 * lineio.h: reading text lines from a file or a pipe that may be compressed.
 *
 * Server logs are often rotated into .gz, .zst or .xz files; grpo-collect
 * reads them as they are. The compression is detected from the bytes, not
 * the name. gzip goes through zlib, which checks each member's CRC-32 and
 * length (libarchive's gzip filter checks neither, so a flipped bit would
 * pass as other text); any other compression libarchive knows goes through
 * its filters, and its raw format passes the result through; plain text
 * passes unchanged. Lines are returned with their newline, if any, as they
 * were in the decompressed text.
 *
 *   struct lineio li;
 *   lineio_open(&li, fd, "name", &e);
 *   while ((r = lineio_next(&li, &line, &n, &e)) > 0) { use line[0..n) }
 *   lineio_close(&li);           does not close fd
 */
#ifndef GRPO_LINEIO_H
#define GRPO_LINEIO_H

#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"

struct lineio {
	void *a;                    /* struct archive, or NULL */
	unsigned char *chunk;       /* what libarchive reads from fd into */
	void *gz;                   /* the gzip reader (lineio.c), or NULL */
	int fd;
	unsigned char head[2];      /* the first bytes, read to detect gzip, handed on first */
	size_t head_n, head_given;
	const char *name;           /* for messages; not owned */
	struct buf b;               /* decompressed bytes, from pos on not yet returned */
	size_t pos;
	size_t scanned;             /* bytes from pos on known to hold no newline */
	int eof;
	int truncated;              /* after an error: the compressed stream ends before its end (cut short) */
};

int lineio_open(struct lineio *li, int fd, const char *name, struct err *e);
/* 1: a line in *line (n bytes, valid until the next call); 0: end; -1: error,
 * with li->truncated set when the input is compressed and ends before its
 * compressed stream does: a file still being written, or cut short. */
int lineio_next(struct lineio *li, const char **line, size_t *n, struct err *e);
void lineio_close(struct lineio *li);

/*
 * archive_read_open(a, data, NULL, read, NULL), for a reader of either kind
 * (lineio, data/spoolin) to open a with: libarchive's own goes on when it
 * cannot allocate the place for data, and dies of SIGSEGV using it, and its
 * archive_read_open1 fails its other allocations without a message, which
 * this gives (ENOMEM, "out of memory"). ARCHIVE_OK or a failure's status.
 */
struct archive;
/* libarchive's error on a, about what (a file, a member): "what: message", with
 * the system's reason where it has one ("Write error" alone says little). -1. */
int lineio_archive_err(struct err *e, const char *what, struct archive *a);
int lineio_archive_open(struct archive *a, void *data,
			ssize_t (*read)(struct archive *, void *, const void **));

#endif
