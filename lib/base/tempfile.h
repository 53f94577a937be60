/*
 * tempfile.h: temporaries that do not outlive their process, and publishing
 * them by rename; in the manner of git's tempfile.c.
 *
 * Every file or directory written to be published later is made here. It is
 * created under a name no reader looks at: inside a temporary directory the
 * caller names (a queue's QUEUE/.tmp, which `grpo-spool recover` cleans), or
 * beside its target as a dot name ".TARGET.tmp.UNIQUE". It is registered in
 * a process-wide list from creation until it is published or deleted, and
 * whatever is still registered is removed at exit(3) and on SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT and SIGPIPE; the signal is then raised again with its
 * default action, so the process still dies of it (a shell sees 130, 143).
 * Only signals whose action is the default are caught: a signal the program
 * or its parent ignores (nohup's SIGHUP) stays ignored. Nothing can remove a
 * temporary after kill -9 or a power cut; that is what QUEUE/.tmp and
 * recover are for.
 *
 * The cleanup is async-signal-safe: it walks the registry with atomic
 * loads, and calls only close(2), unlink(2), rmdir(2) and, for a directory,
 * getdents64(2) and unlinkat(2) on its entries (a temporary directory is a
 * directory of files, as a model directory is). A temporary registered by
 * another process (the parent of a fork) is left alone. The registry is
 * safe to use from several threads; its entries are recycled, never freed,
 * so a handler never reads freed memory.
 *
 *   struct tempfile *t = tempfile_create("out/x.zst", NULL, &e);   or tempfile_mkdir
 *   write(tempfile_fd(t), ...)                                      or files in tempfile_path(t)
 *   tempfile_commit(t, 0, &e);                                      or tempfile_delete(t)
 *
 * Commit flushes the file (fsync, close), renames it to its target, and
 * makes the rename durable (fsync of the target's directory). By default
 * the rename never replaces: when the target exists, the temporary is
 * removed and commit returns 1, the spool's rule that a name is published
 * once. After commit (whatever it returns) or delete, t is gone.
 *
 * To publish several files all or (short of a crash) nothing, write every
 * one, close each with tempfile_close() (a full disk or an I/O error shows
 * there, before anything is visible), then tempfile_commit_set().
 *
 * Every system call that changes the disk goes through fsys.h, so the
 * crash hook stops a test between any two of them.
 */
#ifndef GRPO_TEMPFILE_H
#define GRPO_TEMPFILE_H

#include <stddef.h>

#include "base/err.h"

struct tempfile;

enum {
	TEMPFILE_NO_FSYNC = 1,  /* scratch on tmpfs: no fsync of the file or of directories */
	TEMPFILE_REPLACE = 2,   /* commit may replace an existing target file */
};

/*
 * A new temporary file for target, open for writing (tempfile_fd), in
 * tmpdir (created if missing) when given, else beside target under a dot
 * name. NULL on error.
 */
struct tempfile *tempfile_create(const char *target, const char *tmpdir, struct err *e);
/* The same for a directory (mode 0777 less the umask), into which the caller writes files. */
struct tempfile *tempfile_mkdir(const char *target, const char *tmpdir, struct err *e);

/*
 * Publish t at another target, for a writer that learns its file's name
 * only from what it wrote (a name made from the content). Nothing moves
 * now; commit renames to the new target. For a temporary made in a tmpdir
 * (one beside its old target keeps its dot name there). 0, or -1 when the
 * name does not fit.
 */
int tempfile_retarget(struct tempfile *t, const char *target, struct err *e);

int tempfile_fd(const struct tempfile *t);            /* -1 once closed, and for a directory */
const char *tempfile_path(const struct tempfile *t);  /* where it is being written */
/* HOST.PID.SECNSEC.K: a name no other writer, on this host or another sharing the filesystem, makes. */
void tempfile_unique_name(char *out, size_t size);

/* Flush (unless TEMPFILE_NO_FSYNC) and close the file, or flush the directory; still registered. 0 or -1. */
int tempfile_close(struct tempfile *t, int flags, struct err *e);

/* Publish t at its target: 0 done; 1 the target exists (t removed); -1 error (t removed). */
int tempfile_commit(struct tempfile *t, int flags, struct err *e);

/*
 * Publish n temporaries: every one is closed first, and if any of that
 * fails all are removed and nothing is published (-1). Then each is
 * renamed; a target that exists keeps its file and that temporary is
 * removed (counted in *existed when given). 0 all published, 1 some
 * existed, -1 error. Every t is gone afterwards.
 */
int tempfile_commit_set(struct tempfile **t, size_t n, int flags, size_t *existed, struct err *e);

/* Remove t and forget it; NULL is allowed. */
void tempfile_delete(struct tempfile *t);

/* A small file with the given bytes (a marker such as DONE) published at target: as commit. */
int tempfile_write(const char *target, const char *tmpdir, const void *p, size_t n, int flags,
		   struct err *e);

/* Remove every temporary this process has registered; what exit and the signals do. */
void tempfile_remove_all(void);

#endif
