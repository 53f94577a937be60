/*
 * cursor.h: where grpo-collect stands in its prompts file (--cursor FILE),
 * and which prompts it has sampled and published, kept so that a run killed
 * at any point and run again neither samples a published prompt again nor
 * skips one that was not published (grpo-collect(1), --cursor).
 *
 * Sampling through a server is not repeatable (the server draws anew), so
 * a re-run may not sample again what a killed run may have published: the
 * answers are kept in the cursor file before anything is published, and a
 * re-run publishes those, under the same names, instead of asking again.
 * The file is text. Its first line is the next place in the walk over the
 * prompts file (rollout.h: its row is the place modulo the file's rows, and
 * a second pass has new places, so new samples and ids), which is all it
 * holds between runs, as it always did:
 *
 *   12
 *
 * While a batch is sampled and not known to be published, a header line and
 * the server's answers, one a line, as grpo-collect would import them from
 * a file, follow:
 *
 *   12
 *   {"sampled": {"from": 12, "prompts": 4, "next": 16, "policy_version": 3,
 *    "output": "spool/rollouts", "rank": 0, "max_groups": 256, "answers": 4}}
 *   {"request": ..., "response": ..., "answer": ...}
 *   ...
 *
 * (the header is one line). "output" is null when the groups go to standard
 * output; "answers" counts the lines after the header, fewer than "prompts"
 * when prompts failed and were skipped.
 *
 * Sampling from a model (--model) is repeatable: the same checkpoint,
 * prompts, options and seed give the same bytes. But --model SPOOL/policy
 * samples from the newest checkpoint, and a re-run after the trainer has
 * published a newer one would sample the batch otherwise, under other names
 * and another version: some prompts published twice. So such a batch is
 * kept before it is sampled, by what decides its bytes rather than by its
 * samples, and a re-run samples it again from that checkpoint:
 *
 *   12
 *   {"generating": {"from": 12, "prompts": 4, "next": 16, "policy_version": 3,
 *    "model": "spool/policy/step_3", "names": "collect-0123456789abcdef-",
 *    "batch": 16, "step": 3, "output": "spool/rollouts", "rank": 0,
 *    "max_groups": 256}}
 *
 * with no lines after it. "names" is the prefix of the parts' names, the
 * hash of the policy version, the sampling options and the prompts' places
 * and tokens: a re-run whose prompts or options hash otherwise would sample
 * something else, and is refused. "step" is the directory published into
 * (the policy version unless --step says), "batch" --batch (a batch of
 * another size may round a logprob otherwise).
 *
 * A run goes through three states, each a whole file put in place by
 * rename (written beside it under a dot name, flushed, renamed, the
 * directory flushed: base/tempfile.h), so a crash leaves one of them:
 *
 *   ROW                 cursor_load: nothing pending; sample from place ROW
 *   ROW + batch         cursor_save: sampled (a model's: started), perhaps
 *                       partly published
 *   NEXT                cursor_advance: published
 *
 * A run that finds a batch publishes it (a model's sampled again from its
 * checkpoint) and advances, asking the server nothing: publishing is idempotent (the names come from the answers, a name
 * is published once), so publishing again what a killed run published in
 * part publishes only the rest. Every write goes through base/fsys.h, so
 * GRPO_FSYS_CRASH_AT stops a test between any two of them.
 *
 * One run at a time: two runs on one cursor would both start at its row and
 * sample the same prompts. cursor_lock takes an flock(2) on PATH.lock for
 * the whole run (the kernel drops it when the holder dies) and writes the
 * holder's pid into it for the message of the run it turns away.
 */
#ifndef GRPO_CURSOR_H
#define GRPO_CURSOR_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

/* A batch sampled (from a model: started) and not known to be published. */
struct cursor_batch {
	uint64_t from;            /* the place of the first prompt sampled */
	uint64_t prompts;         /* places from `from` on, wrapping round the file */
	uint64_t next;            /* the place after them, where the next run starts */
	int64_t policy_version;   /* the version the groups are tagged and published under */
	char *output;             /* the queue published into; NULL: standard output */
	int rank;
	int64_t max_groups;       /* -m: how the groups are split into files */
	struct buf lines;         /* the answers, each ending in '\n' */
	uint64_t n_lines;
	/* a batch sampled from a model: no answers kept ("generating") */
	char *model;              /* the checkpoint sampled from; NULL: answers from a server */
	uint64_t names;           /* the hash in the parts' names */
	int64_t batch;            /* --batch */
	int64_t step;             /* the step directory published into */
};

struct cursor {
	char *path;
	uint64_t row;             /* the next place to sample (the file's first line) */
	int pending;              /* batch holds a batch sampled and not known published */
	struct cursor_batch batch;
};

/* Read the cursor at path: row 0 and nothing pending when the file does not
 * exist. Messages name the file and line. */
int cursor_load(struct cursor *c, const char *path, struct err *e);

/* Append one answer (no newline in it) to b. */
int cursor_batch_add(struct cursor_batch *b, const char *line, size_t n, struct err *e);
/* The answer after *at (start at 0): 1 with line and n, 0 at the end. */
int cursor_batch_next(const struct cursor_batch *b, size_t *at, const char **line, size_t *n);
void cursor_batch_free(struct cursor_batch *b);

/* Keep b in the file beside the current row, before anything of it is
 * published; c takes b's contents (b is zeroed), whatever the result. */
int cursor_save(struct cursor *c, struct cursor_batch *b, struct err *e);

/* The batch in c was published (or none was pending): the file holds next
 * alone. */
int cursor_advance(struct cursor *c, uint64_t next, struct err *e);

/* A run that finds a pending batch must publish it where the run that
 * sampled it did: -1, naming what the file holds, when output, rank,
 * max_groups or (when given) the policy version differ (for a batch from a
 * model, the step directory published into). */
int cursor_check_target(const struct cursor *c, const char *output, int rank, int64_t max_groups,
			const int64_t *policy_version, struct err *e);

/* A batch from a model, started from the checkpoint b->model: a re-run
 * that would sample it otherwise (names differs: other prompts or sampling
 * options; or another batch) is refused, naming what the file holds. */
int cursor_check_sampling(const struct cursor *c, uint64_t names, int64_t batch, struct err *e);

/* Lock path.lock (created beside the cursor) for the run, without waiting:
 * 0 held (*fd holds it: keep it open, close it to unlock), 1 another
 * process holds it (*holder its pid, 0 when it has not written it yet),
 * -1 error (also where the file system has no locks, and where path is a
 * link or other than a regular file, which the cursor's rename would
 * replace). */
int cursor_lock(const char *path, int *fd, long *holder, struct err *e);

void cursor_free(struct cursor *c);

#endif
