/*
 * progress.h: a one-line progress report for a person watching a terminal.
 *
 * A long-running tool shows how far it has come on standard error, on one
 * line that it redraws in place ("\r"), only when standard error is a
 * terminal: under cron, in a pipeline's log or in a test, where stderr is a
 * file or a pipe, it writes nothing, so that "silent on success" holds.
 *
 *   struct progress p;
 *   progress_init(&p, "grpo-step", STDERR_FILENO);
 *   for (i = 0; i < n; i++) {
 *           work(i);
 *           progress_show(&p, i + 1, n, "micro-batches of step %lld", step);
 *   }
 *   progress_end(&p);                 before printing anything else
 *
 * The line reads "PROG: DONE of TOTAL WHAT" ("grpo-step: 3 of 8 micro-batches
 * of step 2"), cut to the terminal's width so that it never wraps (a wrapped
 * line cannot be redrawn). It is drawn at most PROGRESS_HZ times a second,
 * the first and the last update always, so a fast loop pays a clock read per
 * update and nothing more. progress_end erases it: progress is for while the
 * work runs, and the tool's own report (or the shell prompt) takes the line.
 *
 * This is the one place in lib/ that writes to a terminal, and only to the
 * descriptor the tool gives it; a library loop takes a struct progress
 * pointer (NULL for none) and calls progress_show, never printf.
 */
#ifndef GRPO_PROGRESS_H
#define GRPO_PROGRESS_H

#define PROGRESS_HZ 10

struct progress {
	const char *prog;   /* the tool's name, the line's prefix */
	int fd;             /* where it is drawn */
	int on;             /* fd is a terminal: draw at all */
	int shown;          /* a line is on the terminal now */
	double last;        /* when it was last drawn (CLOCK_MONOTONIC seconds) */
};

/* Draws on fd only if fd is a terminal. */
void progress_init(struct progress *p, const char *prog, int fd);

/* Show done of total; what is a printf format naming the things counted. p may be NULL. */
void progress_show(struct progress *p, long long done, long long total, const char *what, ...)
	__attribute__((format(printf, 4, 5)));

/* Erase the line, if one is shown. p may be NULL. */
void progress_end(struct progress *p);

#endif
