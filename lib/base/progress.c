/*
 * progress.c: the terminal progress line (progress.h).
 */
#include "base/progress.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* All of s (n bytes) to fd; a terminal that fails to take it is not worth an error. */
static void put(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

void progress_init(struct progress *p, const char *prog, int fd)
{
	p->prog = prog;
	p->fd = fd;
	p->on = isatty(fd);
	p->shown = 0;
	p->last = 0;
}

void progress_show(struct progress *p, long long done, long long total, const char *what, ...)
{
	if (!p || !p->on)
		return;
	double t = now();
	if (p->shown && done < total && t - p->last < 1.0 / PROGRESS_HZ)
		return;
	char line[512];
	/* "\r", the text, then erase what a longer earlier line left to the right */
	int n = snprintf(line, sizeof line, "\r%s: %lld of %lld ", p->prog, done, total);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	va_list ap;
	va_start(ap, what);
	int m = vsnprintf(line + n, sizeof line - (size_t)n, what, ap);
	va_end(ap);
	if (m < 0)
		return;
	n = (size_t)(n + m) < sizeof line ? n + m : (int)sizeof line - 1;
	struct winsize ws;
	if (ioctl(p->fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && n > ws.ws_col)
		n = ws.ws_col;   /* the "\r" and ws_col - 1 characters: the cursor stays on the line */
	put(p->fd, line, (size_t)n);
	put(p->fd, "\033[K", 3);
	p->shown = 1;
	p->last = t;
}

void progress_end(struct progress *p)
{
	if (!p || !p->shown)
		return;
	put(p->fd, "\r\033[K", 4);
	p->shown = 0;
}
