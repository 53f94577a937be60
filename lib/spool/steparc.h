/*
 * steparc.h: the archives of a queue's steps, as `grpo-spool gc --archive`
 * writes them before it removes a step.
 *
 * A step's archives are DIR/NAME-step_N.tar.zst, then NAME-step_N.2.tar.zst,
 * NAME-step_N.3.tar.zst, ... (NAME: the queue's last path component): zstd-
 * compressed pax archives whose members are NAME/step_N/rank_X/FILE,
 * NAME/step_N/DONE and any other file of the step itself (a checkpoint's, in
 * policy); a step holding a directory other than rank_X is refused. An
 * archive is never replaced. A step archived again (a file published late
 * into a step already removed, which made the step anew; or a gc
 * interrupted after archiving, before removing) gets the next number and
 * holds only the files that no earlier archive of the step holds
 * under the same member name and size, and no archive at all when there are
 * none; so the archives of a step together hold every file it ever had,
 * each once, and reading them all (grpo-cat takes them all) reads the step.
 *
 * An archive is written under a dot name in DIR (a registered tempfile, so
 * a signal removes it), flushed, and renamed into place without replacing;
 * what a crash leaves, steparc_clean_tmp removes. The caller serialises
 * writers of one DIR and queue (gc holds the spool's lock).
 */
#ifndef GRPO_STEPARC_H
#define GRPO_STEPARC_H

#include <stdint.h>

#include "base/err.h"

/*
 * Archive what step holds that no archive of it holds yet. *files: the
 * step's published files and marker that the step's archives now hold (all
 * of them; the step's other files are archived but not counted);
 * *written: members of the new archive (0: none was needed). 0; 1 when
 * the step holds a directory that no archive would hold (other than rank_X,
 * or in a rank directory), which e names: nothing written, the step is to
 * be kept; or -1.
 */
int steparc_write(const char *queue, int64_t step, const char *dir, long *files, long *written,
		  struct err *e);

/* Remove the archive temporaries of queue in dir that a crash left. */
int steparc_clean_tmp(const char *queue, const char *dir, struct err *e);

/* The queue's name as archives use it: its last path component, into buf. */
const char *steparc_queue_name(const char *queue, char *buf, size_t size);

#endif
