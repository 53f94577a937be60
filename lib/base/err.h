/*
 * err.h: error messages that the library hands back to the tools.
 *
 * Library functions never print or exit. A function that can fail takes a
 * `struct err *` and returns -1 after filling it with a message a person can
 * act on ("file:line: what was expected, what was found"); the tool prints it
 * as "prog: message". Callers add context from the outside in with
 * err_prefix(), so the innermost function need not know the file name.
 * A message longer than msg keeps its beginning and its end, where what
 * went wrong is said, with "..." between: a long path in it never pushes
 * "path too long" or strerror's words out. A message is one printable line:
 * a control byte it quotes from the data (a line break, an escape
 * sequence) is stored as '?'.
 *
 * errnum keeps the errno an err_sys() message ends with (0 after err_set),
 * through err_prefix(), so a tool can tell a full disk, which a later run
 * may get past, from a failure for good (cli.h: cli_failure_status).
 */
#ifndef GRPO_ERR_H
#define GRPO_ERR_H

#include <stddef.h>

struct err {
	char msg[1024];
	int errnum;
};

/* Format a message into e (which may be NULL), errnum 0; always returns -1. */
int err_set(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* As err_set, with ": strerror(errno)" appended, and errnum = errno. */
int err_sys(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Put "prefix: " in front of the message already in e; returns -1. */
int err_prefix(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Make s one printable line in place, the rule every message follows: each
 * control byte (below 0x20, and 0x7f) becomes '?', as ls -q shows one;
 * every other byte, UTF-8 among them, stays. For lines a caller formats
 * itself, so that they keep the rule the messages above keep. */
void err_printable(char *s);

/* Mark the message in e as one a later run may get past (errnum EAGAIN: a
 * server away, a peer not yet there); returns -1. */
int err_later(struct err *e);

#endif
