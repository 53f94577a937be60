/*
 * spool_util.h: what the spool tests (test_claim, test_queue, test_watch)
 * do alike. Header-only, as tap.h, and included after it.
 *
 *   sh("rm -rf %s", dir)                      a shell command that must
 *                                             succeed, else "Bail out!"
 *   spool_put(queue, step, rank, name, text)  publish one file holding text:
 *                                             0, or -1 with why as a diagnostic
 */
#ifndef SPOOL_UTIL_H
#define SPOOL_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spool/spool.h"

static void sh(const char *fmt, const char *arg)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, fmt, arg);
	if (system(cmd) != 0) {
		printf("Bail out! %s failed\n", cmd);
		exit(1);
	}
}

static int spool_put(const char *queue, int64_t step, int rank, const char *name, const char *text)
{
	struct spool_out o;
	struct err e;
	if (spool_open(&o, queue, step, rank, name, &e) < 0 || spool_write(&o, text, strlen(text), &e) < 0) {
		diag("publish %s: %s", name, e.msg);
		spool_abort(&o);
		return -1;
	}
	int r = spool_commit(&o, &e);
	if (r < 0)
		diag("commit %s: %s", name, e.msg);
	return r;
}

#endif
