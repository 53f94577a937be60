/*
 * path.h: file names built into fixed buffers, never cut short.
 *
 * snprintf truncates silently, and a truncated path names another file:
 * "MODEL/config.json" cut to "MODEL/config.js" is read or, worse, written.
 * path_join checks, and says which path was too long.
 */
#ifndef GRPO_PATH_H
#define GRPO_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* "dir/name" into out (size bytes): 0, or -1 with "DIR/NAME: path too long"
 * in e when it does not fit (out is then an empty string). */
int path_join(char *out, size_t size, const char *dir, const char *name, struct err *e);

/* The K of a path whose last component (trailing '/' aside) is "step_K",
 * K decimal without leading zeros as the spool names its steps (a policy
 * checkpoint named directly, a model path a server reports); -1 when it
 * names none. */
int64_t path_step(const char *path);

#endif
