/*
 * spoolin.h: an input that holds spool files, whichever way it comes.
 *
 * A reader of spool files (grpo-cat) is handed a file or standard input that
 * may be a spool stream (one spool file, or several concatenated) or a tar
 * archive of spool files in any compression libarchive knows (what
 * `grpo-spool gc --archive` writes). The first bytes tell which: a zstd
 * frame whose content begins with "GRPO" is a spool stream, anything else an
 * archive. spoolin_open() reads only as many bytes as it takes to tell, so a
 * live pipe is not held up, and then gives them back:
 *
 *   - a seekable input is rewound, and its fd is read directly;
 *   - from a pipe, an archive's reader gets the sniffed bytes first through
 *     a read callback; a spool stream gets them through a socket pair that a
 *     thread fills with the sniffed bytes and then the rest of the pipe, so
 *     records still stream as the writer flushes them.
 *
 *   struct spoolin in;
 *   spoolin_open(&in, fd, "name", &e);
 *   if (in.kind == SPOOLIN_STREAM)  read in.fd with sfile_reader_open_fd()
 *   else while ((r = spoolin_next(&in, &data, &member, &e)) > 0)  data holds one member
 *   spoolin_close(&in, read_to_the_end, &e);
 *
 * spoolin_close() does not close fd. When the caller stopped early, the
 * thread of a pipe is left to end on its own (it may wait on a writer that
 * never ends; the process's exit does not wait for it).
 */
#ifndef GRPO_SPOOLIN_H
#define GRPO_SPOOLIN_H

#include "buf.h"
#include "err.h"

enum spoolin_kind { SPOOLIN_STREAM, SPOOLIN_ARCHIVE };

struct spoolin {
	enum spoolin_kind kind;
	int fd;                   /* SPOOLIN_STREAM: where the stream reads from */
	const char *name;         /* for messages; not owned */
	void *a;                  /* SPOOLIN_ARCHIVE: struct archive */
	void *src;                /* the archive's read callback state */
	void *replay;             /* the thread of a piped spool stream, or NULL */
};

/* Sniff fd and make it ready to read. On failure nothing needs closing. */
int spoolin_open(struct spoolin *s, int fd, const char *name, struct err *e);

/*
 * Next archive member that is a spool file (regular, not a dot file, not a
 * DONE marker): its bytes in data (replaced), its path in *member (valid
 * until the next call). 1: a member; 0: end; -1: error.
 */
int spoolin_next(struct spoolin *s, struct buf *data, const char **member, struct err *e);

/*
 * Release s. at_end: the caller read to the end, so a pipe's thread has
 * finished and a read error it met is reported (-1); otherwise 0.
 */
int spoolin_close(struct spoolin *s, int at_end, struct err *e);

#endif
