/* lineio.c: see lineio.h. */
#include "base/lineio.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (1 << 16)

/* The gzip reader: zlib's inflate over one member after another (`cat a.gz
 * b.gz` is one gzip file), checking each member's CRC-32 and length. */
struct gz {
	z_stream z;
	unsigned char in[CHUNK];
	int in_eof;                 /* the descriptor is at its end */
	int member;                 /* inside a member: its trailer not yet read */
	int padded;                 /* zeros after a member (gzip ignores them): nothing else may follow */
};

/* Up to n bytes of the input: the head bytes first, then the descriptor's.
 * 0 at its end, -1 with errno. */
static ssize_t raw_read(struct lineio *li, unsigned char *p, size_t n)
{
	if (li->head_given < li->head_n) {
		size_t k = li->head_n - li->head_given;
		if (k > n)
			k = n;
		memcpy(p, li->head + li->head_given, k);
		li->head_given += k;
		return (ssize_t)k;
	}
	ssize_t r;
	do
		r = read(li->fd, p, n);
	while (r < 0 && errno == EINTR);
	return r;
}

/* libarchive's read callback. */
static la_ssize_t archive_feed(struct archive *a, void *data, const void **buf)
{
	struct lineio *li = data;
	ssize_t r = raw_read(li, li->chunk, CHUNK);
	if (r < 0)
		archive_set_error(a, errno, "%s", strerror(errno));
	*buf = li->chunk;
	return r;
}

/*
 * Whether a libarchive read error is the compressed stream ending before its
 * end, as its filters say it: "truncated ... input" (bzip2's, lz4's, zstd's
 * "Truncated"), liblzma's "No progress is possible" (xz, lzma: the input ran
 * out). Corrupt data says otherwise ("Corrupted input data", "Data
 * corruption detected").
 */
static int stream_cut(struct archive *a)
{
	const char *msg = archive_error_string(a);
	return msg && (strstr(msg, "truncated") || strstr(msg, "Truncated") || strstr(msg, "No progress is possible"));
}

/* libarchive's message with the system's reason, in place of "Error reading fd 3" alone. */
int lineio_archive_err(struct err *e, const char *what, struct archive *a)
{
	const char *msg = archive_error_string(a);
	int en = archive_errno(a);
	if (!msg && en <= 0)
		return err_set(e, "%s: libarchive failed without saying why, as it does when memory runs out", what);
	if (!msg)
		err_set(e, "%s: %s", what, strerror(en));
	else if (en > 0 && !strstr(msg, strerror(en)))
		err_set(e, "%s: %s: %s", what, msg, strerror(en));
	else
		err_set(e, "%s: %s", what, msg);
	if (e && en > 0)
		e->errnum = en;   /* as err_sys keeps it: a full disk is told from bad input */
	return -1;
}

/* Up to cap decompressed bytes into out: how many, 0 at the end of the last
 * member, or -1 (li->truncated where the input ends inside a member). */
static ssize_t gz_read(struct lineio *li, unsigned char *out, size_t cap, struct err *e)
{
	struct gz *g = li->gz;
	g->z.next_out = out;
	g->z.avail_out = (uInt)cap;
	while (g->z.avail_out == cap) {
		if (g->z.avail_in == 0 && !g->in_eof) {
			ssize_t r = raw_read(li, g->in, sizeof g->in);
			if (r < 0)
				return err_set(e, "%s: %s", li->name, strerror(errno));
			g->in_eof = r == 0;
			g->z.next_in = g->in;
			g->z.avail_in = (uInt)r;
		}
		if (!g->member) {
			while (g->z.avail_in && *g->z.next_in == 0) {
				g->z.next_in++;
				g->z.avail_in--;
				g->padded = 1;
			}
			if (g->z.avail_in == 0) {
				if (g->in_eof)
					break;
				continue;
			}
			if (g->padded || *g->z.next_in != 0x1f)
				return err_set(e, "%s: data after the end of its gzip stream", li->name);
			inflateReset(&g->z);
			g->member = 1;
		}
		uInt before = g->z.avail_out;
		int r = inflate(&g->z, Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			g->member = 0;
		else if (r == Z_MEM_ERROR)
			return err_set(e, "%s: out of memory", li->name);
		else if (r != Z_OK && r != Z_BUF_ERROR)
			return err_set(e, "%s: corrupt gzip data: %s", li->name, g->z.msg ? g->z.msg : "inflate failed");
		else if (g->z.avail_in == 0 && g->in_eof && g->z.avail_out == before) {
			li->truncated = 1;
			return err_set(e, "%s: truncated gzip input", li->name);
		}
	}
	return (ssize_t)(cap - g->z.avail_out);
}

static int open_archive(struct lineio *li, struct err *e)
{
	struct archive *a = archive_read_new();
	/* an entry of our own for the header (archive_read_next_header2):
	 * archive_read_new does not check the allocation of its own, and
	 * archive_read_next_header dies of SIGSEGV on it when that failed */
	struct archive_entry *ent = archive_entry_new();
	if (!a || !ent || !(li->chunk = malloc(CHUNK))) {
		archive_read_free(a);
		archive_entry_free(ent);
		return err_set(e, "%s: out of memory", li->name);
	}
	/* raw takes any input, and an empty one is no error: it has no lines. A
	 * registration fails only when memory runs out, and unchecked it made
	 * "Unrecognized archive format" of a plain file */
	int r = archive_read_support_filter_all(a) == ARCHIVE_FATAL ||
	        archive_read_support_format_raw(a) == ARCHIVE_FATAL ||
	        archive_read_support_format_empty(a) == ARCHIVE_FATAL
	        ? (archive_set_error(a, ENOMEM, "%s", strerror(ENOMEM)), ARCHIVE_FATAL)
	        : lineio_archive_open(a, li, archive_feed);
	if (r == ARCHIVE_OK) {
		r = archive_read_next_header2(a, ent);
		if (r == ARCHIVE_EOF)
			li->eof = 1;
	}
	archive_entry_free(ent);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN && r != ARCHIVE_EOF) {
		li->truncated = stream_cut(a);
		lineio_archive_err(e, li->name, a);
		archive_read_free(a);
		free(li->chunk);
		li->chunk = NULL;
		return -1;
	}
	li->a = a;
	return 0;
}

int lineio_archive_open(struct archive *a, void *data,
			ssize_t (*read)(struct archive *, void *, const void **))
{
	int r = archive_read_set_read_callback(a, read);
	if (r == ARCHIVE_OK)
		r = archive_read_set_callback_data(a, data);
	if (r == ARCHIVE_OK)
		r = archive_read_open1(a);
	if (r != ARCHIVE_OK && !archive_error_string(a))
		archive_set_error(a, ENOMEM, "%s", strerror(ENOMEM));
	return r;
}

int lineio_open(struct lineio *li, int fd, const char *name, struct err *e)
{
	struct stat st;
	memset(li, 0, sizeof *li);
	li->name = name;
	li->fd = fd;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return err_set(e, "%s: is a directory, not a file of lines", name);
	/* gzip's magic number, read here since a pipe cannot be read twice */
	while (li->head_n < sizeof li->head) {
		ssize_t r = read(fd, li->head + li->head_n, sizeof li->head - li->head_n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err_set(e, "%s: %s", name, strerror(errno));
		if (r == 0)
			break;
		li->head_n += (size_t)r;
	}
	if (li->head_n < 2 || li->head[0] != 0x1f || li->head[1] != 0x8b)
		return open_archive(li, e);
	struct gz *g = calloc(1, sizeof *g);
	/* 15 + 16: the largest window, and a gzip header and trailer around it */
	if (!g || inflateInit2(&g->z, 15 + 16) != Z_OK) {
		free(g);
		return err_set(e, "%s: out of memory", name);
	}
	li->gz = g;
	return 0;
}

int lineio_next(struct lineio *li, const char **line, size_t *n, struct err *e)
{
	for (;;) {
		/* no buffer before the first read (an empty input never has one) */
		unsigned char *start = li->b.data ? li->b.data + li->pos : NULL;
		size_t left = li->b.len - li->pos;
		/* only the bytes not yet looked at: a long line comes in many reads */
		unsigned char *nl = left > li->scanned ? memchr(start + li->scanned, '\n', left - li->scanned) : NULL;
		if (nl || (li->eof && left)) {
			size_t k = nl ? (size_t)(nl - start) + 1 : left;
			*line = (const char *)start;
			*n = k;
			li->pos += k;
			li->scanned = 0;
			return 1;
		}
		li->scanned = left;
		if (li->eof)
			return 0;
		/* keep the unfinished line, drop what was returned */
		if (li->pos) {
			memmove(li->b.data, start, left);
			li->b.len = left;
			li->pos = 0;
		}
		if (buf_reserve(&li->b, CHUNK) < 0)
			return err_set(e, "%s: out of memory", li->name);
		ssize_t r;
		if (li->gz)
			r = gz_read(li, li->b.data + li->b.len, CHUNK, e);
		else if ((r = archive_read_data(li->a, li->b.data + li->b.len, CHUNK)) < 0) {
			li->truncated = stream_cut(li->a);
			return lineio_archive_err(e, li->name, li->a);
		}
		if (r < 0)
			return -1;
		if (r == 0)
			li->eof = 1;
		li->b.len += (size_t)r;
	}
}

void lineio_close(struct lineio *li)
{
	if (li->a)
		archive_read_free(li->a);
	free(li->chunk);
	if (li->gz) {
		inflateEnd(&((struct gz *)li->gz)->z);
		free(li->gz);
	}
	buf_free(&li->b);
	memset(li, 0, sizeof *li);
}
