/* spoolin.c: see spoolin.h. */
#include "data/spoolin.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "base/lineio.h"

enum sniff { SNIFF_MORE, SNIFF_SPOOL, SNIFF_ARCHIVE };

/* The kind, decided from the first 4 decompressed bytes. zstd hands out
 * nothing of a block before the whole block is in, and a compressed block
 * can be 128 KiB (a tar of a spool of small files reaches that at once), so
 * the decompressor is fed every byte as it arrives and asked again. */
struct sniffer {
	ZSTD_DCtx *d;
	size_t fed;               /* bytes of head given to d */
	unsigned char out[4];
	size_t out_n;
};

static enum sniff sniff(struct sniffer *z, const unsigned char *in, size_t n)
{
	if (n < 4)
		return SNIFF_MORE;
	uint32_t magic = in[0] | in[1] << 8 | in[2] << 16 | (uint32_t)in[3] << 24;
	if (magic != ZSTD_MAGICNUMBER)
		return SNIFF_ARCHIVE;
	if (!z->d && !(z->d = ZSTD_createDCtx()))
		return SNIFF_SPOOL;   /* the spool reader will say it is out of memory */
	ZSTD_inBuffer ib = { in, n, z->fed };
	while (z->out_n < sizeof z->out && ib.pos < ib.size) {
		ZSTD_outBuffer ob = { z->out, sizeof z->out, z->out_n };
		size_t r = ZSTD_decompressStream(z->d, &ob, &ib);
		if (ZSTD_isError(r))
			return SNIFF_SPOOL;   /* let the spool reader say what is wrong */
		z->out_n = ob.pos;
		if (r == 0)
			break;
	}
	z->fed = ib.pos;
	if (z->out_n < 4)
		return SNIFF_MORE;
	return memcmp(z->out, "GRPO", 4) == 0 ? SNIFF_SPOOL : SNIFF_ARCHIVE;
}

enum { READ_BUF = 1 << 16 };

/* libarchive's read callback: the sniffed bytes of a pipe first, then fd. */
static la_ssize_t src_read(struct archive *a, void *ctx, const void **out)
{
	struct spoolin *s = ctx;
	if (s->head_pos < s->head_n) {
		*out = s->head + s->head_pos;
		la_ssize_t n = (la_ssize_t)(s->head_n - s->head_pos);
		s->head_pos = s->head_n;
		return n;
	}
	for (;;) {
		ssize_t k = read(s->fd, s->buf, READ_BUF);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			s->read_failed = 1;
			archive_set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		*out = s->buf;
		return k;
	}
}

/*
 * Input that no archive format took (libarchive's message for JSON lines,
 * "Missing type keyword in mtree specification", names a format nobody
 * meant): what its first bytes, decompressed as libarchive's filters would,
 * look like, and what reads that.
 */
static int not_archive(const struct spoolin *s, struct archive *a, struct err *e)
{
	char text[512], filter[32] = "";
	la_ssize_t n = -1;
	struct archive *r = archive_read_new();
	struct archive_entry *ent = archive_entry_new();   /* not archive_read_new's: see lineio.c */
	if (r && ent) {
		archive_read_support_filter_all(r);
		archive_read_support_format_raw(r);
		if (archive_read_open_memory(r, s->head, s->sniffed) == ARCHIVE_OK &&
		    archive_read_next_header2(r, ent) == ARCHIVE_OK) {
			n = archive_read_data(r, text, sizeof text);
			if (archive_filter_code(r, 0) != ARCHIVE_FILTER_NONE)
				snprintf(filter, sizeof filter, "%s-compressed",
				         archive_filter_name(r, 0) ? archive_filter_name(r, 0) : "otherwise");
		}
	}
	archive_read_free(r);
	archive_entry_free(ent);
	if (n <= 0)   /* not even its filter's: libarchive says why */
		return lineio_archive_err(e, s->name, a);
	int is_text = 1;
	for (la_ssize_t i = 0; i < n && is_text; i++) {
		unsigned char c = (unsigned char)text[i];
		is_text = (c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r' || c == '\f';
	}
	la_ssize_t i = 0;
	while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
		i++;
	const char *what = "not a spool file or an archive of them";
	static const char manifest[] = "{\"step\":";   /* how grpo-pack's DONE begins */
	if (is_text && !*filter && n - i >= (la_ssize_t)strlen(manifest) && !memcmp(text + i, manifest, strlen(manifest)))
		return err_set(e, "%s: %s (it looks like a step's DONE manifest, JSON text: cat or jq reads that)", s->name,
			       what);
	if (is_text && i < n && (text[i] == '{' || text[i] == '['))
		return err_set(e, "%s: %s (it looks like %s%sJSON text: grpo-cat --from-json reads that%s, grpo-collect "
			       "imports a server's rollouts%s)", s->name, what, filter, *filter ? " " : "",
			       *filter ? " once decompressed" : "", *filter ? " as they are" : "");
	if (is_text)
		return err_set(e, "%s: %s (it looks like %s%stext)", s->name, what, filter, *filter ? " " : "");
	return err_set(e, "%s: %s (%s%sin no archive format libarchive knows)", s->name, what, filter,
		       *filter ? ", " : "");
}

/* libarchive's error, or for input that no archive format took (no read
 * failed, no member found), what it looks like. */
static int archive_failed(const struct spoolin *s, struct archive *a, struct err *e)
{
	int format = archive_format(a) & ARCHIVE_FORMAT_BASE_MASK;
	if (!s->read_failed && !s->headers && (format == 0 || format == ARCHIVE_FORMAT_MTREE))
		return not_archive(s, a, e);
	return lineio_archive_err(e, s->name, a);
}

int spoolin_open(struct spoolin *s, int fd, const char *name, struct err *e)
{
	size_t n = 0, cap = 0;
	enum sniff k = SNIFF_MORE;
	struct sniffer z = { 0 };
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->name = name;
	/* read only until the bytes tell, one read() at a time, so a live pipe
	 * is not held up: a spool stream's writer flushes whole blocks */
	while (k == SNIFF_MORE) {
		if (n == cap) {
			if (cap >= SPOOLIN_HEAD_MAX)
				break;   /* undecided: a spool stream, whose reader will say what is wrong */
			cap = cap ? 2 * cap : 4096;
			unsigned char *h = realloc(s->head, cap);
			if (!h) {
				ZSTD_freeDCtx(z.d);
				free(s->head);
				s->head = NULL;
				return err_set(e, "%s: out of memory", name);
			}
			s->head = h;
		}
		ssize_t got = read(fd, s->head + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			ZSTD_freeDCtx(z.d);
			free(s->head);
			s->head = NULL;
			return err_sys(e, "%s", name);
		}
		if (got == 0)
			break;
		n += (size_t)got;
		k = sniff(&z, s->head, n);
	}
	ZSTD_freeDCtx(z.d);
	s->sniffed = n;
	s->head_n = lseek(fd, -(off_t)n, SEEK_CUR) >= 0 ? 0 : n;
	if (k != SNIFF_ARCHIVE) {
		s->kind = SPOOLIN_STREAM;
		return 0;
	}
	s->kind = SPOOLIN_ARCHIVE;
	struct archive *a = archive_read_new();
	s->buf = malloc(READ_BUF);
	s->ent = archive_entry_new();   /* not archive_read_new's own: see lineio.c */
	if (!a || !s->buf || !s->ent) {
		archive_read_free(a);
		archive_entry_free(s->ent);
		free(s->buf);
		free(s->head);
		return err_set(e, "%s: out of memory", name);
	}
	/* tar alone: spool archives are tar, and other formats (mtree, for one,
	 * which names files on this host to read) have no business here; and
	 * archives one after another (cat a.tar.zst a.2.tar.zst |) read as one,
	 * as tar -i does. Each fails only when memory runs out. */
	int r = archive_read_support_filter_all(a) == ARCHIVE_FATAL ||
	        archive_read_support_format_tar(a) == ARCHIVE_FATAL ||
	        archive_read_set_format_option(a, "tar", "read_concatenated_archives", "1") == ARCHIVE_FATAL
	        ? (archive_set_error(a, ENOMEM, "%s", strerror(ENOMEM)), ARCHIVE_FATAL)
	        : lineio_archive_open(a, s, src_read);
	if (r != ARCHIVE_OK) {
		archive_failed(s, a, e);
		archive_read_free(a);
		archive_entry_free(s->ent);
		free(s->buf);
		free(s->head);
		return -1;
	}
	s->a = a;
	return 0;
}

int spoolin_reader(struct spoolin *s, struct sfile_reader *r, struct err *e)
{
	return sfile_reader_open_fd_after(r, s->fd, s->head, s->head_n, s->name, e);
}

/* a/.done/b, .tmp/x: a component that begins with '.' (but not "." or ".."). */
static int has_dot_component(const char *path)
{
	for (const char *p = path; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p)) {
		if (p[0] == '.' && !(p[1] == '/' || p[1] == 0) && !(p[1] == '.' && (p[2] == '/' || p[2] == 0)))
			return 1;
	}
	return 0;
}

int spoolin_next(struct spoolin *s, struct buf *data, const char **member, struct err *e)
{
	struct archive *a = s->a;
	struct archive_entry *ent = s->ent;
	int st;
	while ((st = archive_read_next_header2(a, ent)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(ent);
		if (!name)   /* its conversion ran out of memory */
			return err_set(e, "%s: out of memory", s->name);
		const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		long long size = archive_entry_size(ent);
		s->tar_end = archive_filter_bytes(a, 0) + (size > 0 ? (size + 511) / 512 * 512 : 0);
		s->headers = 1;
		if (archive_entry_filetype(ent) != AE_IFREG || has_dot_component(name) ||
		    strcmp(base, "DONE") == 0)
			continue;
		buf_reset(data);
		for (;;) {
			if (buf_reserve(data, 1 << 16) < 0)
				return err_set(e, "%s: %s: out of memory", s->name, name);
			la_ssize_t n = archive_read_data(a, data->data + data->len, 1 << 16);
			if (n < 0) {
				lineio_archive_err(e, name, a);
				return err_prefix(e, "%s", s->name);
			}
			if (n == 0)
				break;
			data->len += (size_t)n;
		}
		*member = name;
		return 1;
	}
	if (st != ARCHIVE_EOF)
		return archive_failed(s, a, e);
	/* a tar cut at a block boundary ends where a header would begin, which
	 * libarchive takes for the end; a whole one has its zero blocks there */
	if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_TAR && s->tar_end > 0 &&
	    archive_filter_bytes(a, 0) < s->tar_end + 512)
		return err_set(e, "%s: truncated tar archive (it ends without its end-of-archive blocks)",
			       s->name);
	return 0;
}

void spoolin_close(struct spoolin *s)
{
	if (s->a)
		archive_read_free(s->a);
	archive_entry_free(s->ent);
	free(s->buf);
	free(s->head);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}
