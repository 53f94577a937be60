/*
 * spoolin.h: an input that holds spool files, whichever way it comes.
 *
 * A reader of spool files (grpo-cat) is handed a file or standard input that
 * may be a spool stream (one spool file, or several concatenated) or a tar
 * archive of spool files in any compression libarchive knows (what
 * `grpo-spool gc --archive` writes). The first bytes tell which: a zstd
 * frame whose content begins with "GRPO" is a spool stream, anything else an
 * archive. spoolin_open() reads only as many bytes as it takes to tell: the
 * first 4 decompressed bytes, however many compressed bytes they take (a
 * zstd block comes out whole, up to 128 KiB; at most SPOOLIN_HEAD_MAX), one
 * read() at a time, so a live pipe is not held up, and then gives them
 * back: a seekable input is rewound; from a pipe, the spool reader or the
 * archive's read callback takes the sniffed bytes first and then reads the
 * pipe itself, so records still stream as the writer flushes them. Tar
 * archives concatenated (the several archives of one step that gc may
 * write, through cat) read as one.
 *
 *   struct spoolin in;
 *   spoolin_open(&in, fd, "name", &e);
 *   if (in.kind == SPOOLIN_STREAM)  spoolin_reader(&in, &reader, &e), then sfile_read()
 *   else while ((r = spoolin_next(&in, &data, &member, &e)) > 0)  data holds one member
 *   spoolin_close(&in);
 *
 * spoolin_close() does not close fd.
 */
#ifndef GRPO_SPOOLIN_H
#define GRPO_SPOOLIN_H

#include "base/buf.h"
#include "base/err.h"
#include "data/sfile.h"

enum spoolin_kind { SPOOLIN_STREAM, SPOOLIN_ARCHIVE };

/* More than a zstd frame header and its largest block: an input still
 * undecided after it is read as a spool stream. */
#define SPOOLIN_HEAD_MAX (256u << 10)

struct spoolin {
	enum spoolin_kind kind;
	int fd;                   /* the input */
	const char *name;         /* for messages; not owned */
	unsigned char *head;      /* (sniffed) the bytes read while sniffing */
	size_t sniffed;
	size_t head_n;            /* of them, those still to be read: 0 when the input was rewound */
	void *a;                  /* SPOOLIN_ARCHIVE: struct archive */
	void *ent;                /* SPOOLIN_ARCHIVE: struct archive_entry, the members' headers */
	size_t head_pos;          /* SPOOLIN_ARCHIVE: head bytes given to libarchive */
	unsigned char *buf;       /* SPOOLIN_ARCHIVE: read buffer of the callback */
	long long tar_end;        /* SPOOLIN_ARCHIVE: offset where the last member's data ends */
	int headers;              /* SPOOLIN_ARCHIVE: whether a member's header was read */
	int read_failed;          /* SPOOLIN_ARCHIVE: whether a read() of fd failed */
};

/* Sniff fd and make it ready to read. On failure nothing needs closing.
 * Input in no archive format may fail here or at spoolin_next(), alike. */
int spoolin_open(struct spoolin *s, int fd, const char *name, struct err *e);

/*
 * Next archive member that is a spool file (regular, not a DONE marker, no
 * component of its path a dot name, so that the claim records of a
 * consumed spool's .done/ and .claimed/ and the temporaries of .tmp/ are
 * passed over): its bytes in data (replaced), its path in *member (valid
 * until the next call). 1: a member; 0: end; -1: error (*member unset).
 * A tar that ends without its end-of-archive blocks is an error
 * (truncated at a block boundary, which libarchive takes for the end).
 * Input in no archive format is an error that says what it looks like
 * (JSON text, other text, compressed or not), not libarchive's guess.
 */
int spoolin_next(struct spoolin *s, struct buf *data, const char **member, struct err *e);

/* SPOOLIN_STREAM: open r on the input, the sniffed bytes first; close r
 * with sfile_reader_close() before spoolin_close(). */
int spoolin_reader(struct spoolin *s, struct sfile_reader *r, struct err *e);

void spoolin_close(struct spoolin *s);

#endif
