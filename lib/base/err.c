/* err.c: see err.h. */
#include "base/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Room to format a message before it is fitted into e->msg: a few paths of
 * PATH_MAX bytes and the words around them. */
#define ERR_ROOM 16384

/* s (n bytes) into e->msg. One too long keeps its head and its end, joined by
 * "...", cut between UTF-8 characters: the end says what went wrong (a
 * strerror, "path too long"), and a path of 4000 bytes must not push it out. */
static void err_fit_raw(struct err *e, const char *s, size_t n)
{
	if (n < sizeof e->msg) {
		memcpy(e->msg, s, n);
		e->msg[n] = '\0';
		return;
	}
	size_t head = 256, from = n - (sizeof e->msg - 1 - head - 3);
	while (head > 0 && (s[head] & 0xc0) == 0x80)
		head--;
	while (from < n && (s[from] & 0xc0) == 0x80)
		from++;
	memcpy(e->msg, s, head);
	memcpy(e->msg + head, "...", 3);
	memcpy(e->msg + head + 3, s + from, n - from);
	e->msg[head + 3 + n - from] = '\0';
}

/* A message is one line for a terminal, whatever it quotes of the data (a
 * name a reward program chose, a line of a damaged file): a line break
 * would split it into two that a log reader takes for separate messages,
 * and an escape sequence would act on the operator's terminal. */
void err_printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* s into e->msg, fitted and printable. */
static void err_fit(struct err *e, const char *s, size_t n)
{
	err_fit_raw(e, s, n);
	err_printable(e->msg);
}

/* The length vsnprintf wrote into a buffer of size bytes, at most size - 1. */
static size_t written(int n, size_t size)
{
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

int err_set(struct err *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	char s[ERR_ROOM];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	err_fit(e, s, written(n, sizeof s));
	e->errnum = 0;
	return -1;
}

int err_sys(struct err *e, const char *fmt, ...)
{
	int saved = errno;
	if (!e)
		return -1;
	char s[ERR_ROOM];
	va_list ap;
	va_start(ap, fmt);
	size_t n = written(vsnprintf(s, sizeof s - 256, fmt, ap), sizeof s - 256);   /* room for strerror */
	va_end(ap);
	n += written(snprintf(s + n, sizeof s - n, ": %s", strerror(saved)), sizeof s - n);
	err_fit(e, s, n);
	e->errnum = saved;
	errno = saved;
	return -1;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	char s[ERR_ROOM];
	va_list ap;
	va_start(ap, fmt);
	size_t n = written(vsnprintf(s, sizeof s - sizeof e->msg - 2, fmt, ap), sizeof s - sizeof e->msg - 2);
	va_end(ap);
	n += written(snprintf(s + n, sizeof s - n, ": %s", e->msg), sizeof s - n);
	err_fit(e, s, n);
	return -1;
}

int err_later(struct err *e)
{
	if (e)
		e->errnum = EAGAIN;
	return -1;
}
