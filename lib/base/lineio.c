/* lineio.c: see lineio.h. */
#include "base/lineio.h"

#include <archive.h>
#include <archive_entry.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1 << 16)

/*
 * Whether a read error is the compressed stream ending before its end, as
 * libarchive's filters say it: "truncated gzip input" (and bzip2's, lz4's,
 * zstd's "Truncated"), liblzma's "No progress is possible" (xz, lzma: the
 * input ran out), and gzip's trailer cut short, for which it says nothing.
 * Corrupt data says otherwise ("Corrupted input data", "Data corruption
 * detected").
 */
static int stream_cut(struct archive *a, int fd)
{
	const char *msg = archive_error_string(a);
	unsigned char magic[2];
	if (msg)
		return strstr(msg, "truncated") || strstr(msg, "Truncated") || strstr(msg, "No progress is possible");
	if (archive_filter_count(a) > 0)
		return archive_filter_code(a, 0) == ARCHIVE_FILTER_GZIP;
	/* failed while opening (a small file is read whole then), its filters
	 * gone: gzip's magic, where the file can be read again */
	return fd >= 0 && pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

/* libarchive's message with the system's reason, in place of "Error reading fd 3" alone. */
static int lio_err(struct err *e, const char *name, struct archive *a, int cut)
{
	const char *msg = archive_error_string(a) ? archive_error_string(a)
			  : cut ? "truncated gzip input (in its trailer)" : "cannot read";
	int en = archive_errno(a);
	if (en > 0 && !strstr(msg, strerror(en)))
		return err_set(e, "%s: %s: %s", name, msg, strerror(en));
	return err_set(e, "%s: %s", name, msg);
}

int lineio_open(struct lineio *li, int fd, const char *name, struct err *e)
{
	struct stat st;
	memset(li, 0, sizeof *li);
	li->name = name;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
		return err_set(e, "%s: is a directory, not a file of lines", name);
	struct archive *a = archive_read_new();
	if (!a)
		return err_set(e, "%s: out of memory", name);
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	/* an empty input is no error: it has no lines */
	archive_read_support_format_empty(a);
	struct archive_entry *ent;
	if (archive_read_open_fd(a, fd, CHUNK) != ARCHIVE_OK) {
		li->truncated = stream_cut(a, fd);
		lio_err(e, name, a, li->truncated);
		archive_read_free(a);
		return -1;
	}
	int r = archive_read_next_header(a, &ent);
	if (r == ARCHIVE_EOF)
		li->eof = 1;
	else if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		li->truncated = stream_cut(a, fd);
		lio_err(e, name, a, li->truncated);
		archive_read_free(a);
		return -1;
	}
	li->a = a;
	return 0;
}

int lineio_next(struct lineio *li, const char **line, size_t *n, struct err *e)
{
	for (;;) {
		unsigned char *start = li->b.data + li->pos;
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
		la_ssize_t r = archive_read_data(li->a, li->b.data + li->b.len, CHUNK);
		if (r < 0) {
			li->truncated = stream_cut(li->a, -1);
			return lio_err(e, li->name, li->a, li->truncated);
		}
		if (r == 0)
			li->eof = 1;
		li->b.len += (size_t)r;
	}
}

void lineio_close(struct lineio *li)
{
	if (li->a)
		archive_read_free(li->a);
	buf_free(&li->b);
	memset(li, 0, sizeof *li);
}
