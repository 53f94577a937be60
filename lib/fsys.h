/*
 * fsys.h: the one way in for every file system call the spool makes.
 *
 * Publishing, claiming and recovery call these wrappers rather than the
 * system directly (SQLite's OS layer), for two reasons: every failure comes
 * back as a message naming the path, and a test can stop the process between
 * any two calls. With GRPO_FSYS_CRASH_AT=N in the environment, the Nth call
 * (counting from 1) calls _exit(GRPO_FSYS_CRASH_STATUS) before doing
 * anything, as a power cut or kill -9 would; GRPO_FSYS_TRACE=1 prints each
 * call's number and name on standard error, so a test can count them.
 */
#ifndef GRPO_FSYS_H
#define GRPO_FSYS_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define GRPO_FSYS_CRASH_STATUS 86

int fsys_open_excl(const char *path, struct err *e);             /* new file, 0644; fd or -1 */
int fsys_open_read(const char *path, struct err *e);             /* fd or -1 */
int fsys_write_all(int fd, const void *p, size_t n, const char *path, struct err *e);
int fsys_fsync(int fd, const char *path, struct err *e);
int fsys_close(int fd, const char *path, struct err *e);
int fsys_fsync_dir(const char *dir, struct err *e);
/* mkdir -p; each directory it creates is made durable in its parent. */
int fsys_mkdirs(const char *dir, struct err *e);
/* rename that never replaces: 0 done, 1 `to` already exists (nothing moved), -1 error. */
int fsys_rename_noreplace(const char *from, const char *to, struct err *e);
int fsys_rename(const char *from, const char *to, struct err *e); /* may replace */
int fsys_unlink(const char *path, struct err *e);

/* The crash-injection point every wrapper passes through; exported for tests. */
void fsys_step(const char *what);

#endif
