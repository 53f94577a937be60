/* spoolin.c: see spoolin.h. */
#include "spoolin.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#define SNIFF_MAX 4096   /* an undecided input this long is taken as a spool stream */

enum sniff { SNIFF_MORE, SNIFF_SPOOL, SNIFF_ARCHIVE };

static enum sniff sniff(const unsigned char *in, size_t n)
{
	unsigned char out[4];
	if (n < 4)
		return SNIFF_MORE;
	uint32_t magic = in[0] | in[1] << 8 | in[2] << 16 | (uint32_t)in[3] << 24;
	if (magic != ZSTD_MAGICNUMBER)
		return SNIFF_ARCHIVE;
	ZSTD_DCtx *d = ZSTD_createDCtx();
	if (!d)
		return SNIFF_SPOOL;
	ZSTD_inBuffer ib = { in, n, 0 };
	ZSTD_outBuffer ob = { out, sizeof out, 0 };
	int bad = 0;
	while (ob.pos < ob.size && ib.pos < ib.size) {
		size_t r = ZSTD_decompressStream(d, &ob, &ib);
		if ((bad = ZSTD_isError(r)) || r == 0)
			break;
	}
	ZSTD_freeDCtx(d);
	if (bad)
		return SNIFF_SPOOL;   /* let the spool reader say what is wrong */
	return ob.pos < 4 ? SNIFF_MORE : memcmp(out, "GRPO", 4) == 0 ? SNIFF_SPOOL : SNIFF_ARCHIVE;
}

/* An archive read from fd, after the sniffed bytes head[0..n). */
struct src {
	int fd;
	unsigned char head[SNIFF_MAX];
	size_t n, pos;
	unsigned char buf[1 << 16];
};

static la_ssize_t src_read(struct archive *a, void *ctx, const void **out)
{
	struct src *s = ctx;
	if (s->pos < s->n) {
		*out = s->head + s->pos;
		s->pos = s->n;
		return (la_ssize_t)s->n;
	}
	for (;;) {
		ssize_t k = read(s->fd, s->buf, sizeof s->buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			archive_set_error(a, errno, "%s", strerror(errno));
			return -1;
		}
		*out = s->buf;
		return k;
	}
}

/*
 * The thread of a piped spool stream. Shared by the thread and the caller,
 * freed by whichever lets go last, since a caller that stops early does not
 * wait for the thread.
 */
struct replay {
	atomic_int refs;
	pthread_t th;
	int from, to, err;
	unsigned char head[SNIFF_MAX];
	size_t n;
	unsigned char buf[1 << 16];
};

static void replay_unref(struct replay *r)
{
	if (atomic_fetch_sub(&r->refs, 1) == 1) {
		close(r->to);
		free(r);
	}
}

/* send() with MSG_NOSIGNAL: a reader gone early ends the thread quietly, with no SIGPIPE. */
static int send_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *replay_main(void *arg)
{
	struct replay *r = arg;
	if (send_all(r->to, r->head, r->n) == 0)
		for (;;) {
			ssize_t k = read(r->from, r->buf, sizeof r->buf);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				r->err = errno;
			if (k <= 0 || send_all(r->to, r->buf, (size_t)k) < 0)
				break;
		}
	shutdown(r->to, SHUT_WR);
	replay_unref(r);
	return NULL;
}

static int start_replay(struct spoolin *s, const unsigned char *head, size_t n, struct err *e)
{
	struct replay *r = calloc(1, sizeof *r);
	int sv[2];
	if (!r)
		return err_set(e, "%s: out of memory", s->name);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(r);
		return err_sys(e, "%s: socketpair", s->name);
	}
	memcpy(r->head, head, n);
	r->n = n;
	r->from = s->fd;
	r->to = sv[1];
	atomic_init(&r->refs, 2);
	int rc = pthread_create(&r->th, NULL, replay_main, r);
	if (rc != 0) {
		close(sv[0]);
		close(sv[1]);
		free(r);
		errno = rc;
		return err_sys(e, "%s: pthread_create", s->name);
	}
	s->fd = sv[0];
	s->replay = r;
	return 0;
}

int spoolin_open(struct spoolin *s, int fd, const char *name, struct err *e)
{
	unsigned char head[SNIFF_MAX];
	size_t n = 0;
	enum sniff k = SNIFF_MORE;
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->name = name;
	/* read only until the bytes tell, so a live pipe is not held up */
	while (k == SNIFF_MORE && n < sizeof head) {
		ssize_t got = read(fd, head + n, sizeof head - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return err_sys(e, "%s", name);
		if (got == 0)
			break;
		n += (size_t)got;
		k = sniff(head, n);
	}
	int rewound = lseek(fd, -(off_t)n, SEEK_CUR) >= 0;
	if (k != SNIFF_ARCHIVE) {
		s->kind = SPOOLIN_STREAM;
		return rewound ? 0 : start_replay(s, head, n, e);
	}
	s->kind = SPOOLIN_ARCHIVE;
	struct archive *a = archive_read_new();
	struct src *src = calloc(1, sizeof *src);
	if (!a || !src) {
		archive_read_free(a);
		free(src);
		return err_set(e, "%s: out of memory", name);
	}
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	src->fd = fd;
	if (!rewound) {
		memcpy(src->head, head, n);
		src->n = n;
	}
	if (archive_read_open(a, src, NULL, src_read, NULL) != ARCHIVE_OK) {
		err_set(e, "%s: %s", name, archive_error_string(a));
		archive_read_free(a);
		free(src);
		return -1;
	}
	s->a = a;
	s->src = src;
	return 0;
}

int spoolin_next(struct spoolin *s, struct buf *data, const char **member, struct err *e)
{
	struct archive *a = s->a;
	struct archive_entry *ent;
	int st;
	while ((st = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(ent);
		const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		if (archive_entry_filetype(ent) != AE_IFREG || base[0] == '.' || strcmp(base, "DONE") == 0)
			continue;
		buf_reset(data);
		for (;;) {
			if (buf_reserve(data, 1 << 16) < 0)
				return err_set(e, "%s: %s: out of memory", s->name, name);
			la_ssize_t n = archive_read_data(a, data->data + data->len, 1 << 16);
			if (n < 0)
				return err_set(e, "%s: %s: %s", s->name, name, archive_error_string(a));
			if (n == 0)
				break;
			data->len += (size_t)n;
		}
		*member = name;
		return 1;
	}
	if (st != ARCHIVE_EOF)
		return err_set(e, "%s: %s", s->name, archive_error_string(a));
	return 0;
}

int spoolin_close(struct spoolin *s, int at_end, struct err *e)
{
	int rc = 0;
	if (s->a)
		archive_read_free(s->a);
	free(s->src);
	struct replay *r = s->replay;
	if (r) {
		close(s->fd);
		if (at_end) {
			/* the reader saw the end of the stream, so the thread has sent everything */
			pthread_join(r->th, NULL);
			if (r->err) {
				errno = r->err;
				rc = err_sys(e, "%s", s->name);
			}
		} else {
			pthread_detach(r->th);
		}
		replay_unref(r);
	}
	memset(s, 0, sizeof *s);
	s->fd = -1;
	return rc;
}
