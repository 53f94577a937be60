/*
 * done.h: a step's DONE manifest, QUEUE/step_N/DONE (grpo-spool(5)).
 *
 * grpo-pack writes it last, after every micro-batch of the step, so a
 * reader that sees it sees the whole step; its presence is the step's
 * completion marker and its content the step's totals and the packer's
 * bookkeeping. One JSON object on one line:
 *
 *   {"step":N,"ranks":W,"micro_batches_per_rank":K,"sequences":S,
 *    "tokens":real tokens,"loss_tokens":L,"pad_tokens":P,"dummies":D,
 *    "dummy_tokens":Q,"dropped":{"stale":a,"overlong":b,"empty":c},
 *    "truncated":t,"truncated_untrained":u,
 *    "runs":[{"run":NAME,"sequences":s,"tokens":t,"sequences_total":u,
 *             "run_step":r,"ready":b}, ...],"next_run":NAME,
 *    "inputs":["step_K/rank_X/NAME", ...],"inputs_hash":["16 hex digits", ...],
 *    "partial":[{"file":"step_K/rank_X/NAME","hash":"16 hex digits",
 *                "done":[ordinals]}, ...],
 *    "job":{"id":"16 hex digits","first_step":F,"sequences":S,
 *           "finished":b,"data":"16 hex digits",
 *           "inputs_data":["16 hex digits", ...],
 *           "inputs_hash":["16 hex digits", ...],"done":[ordinals]}}
 *
 * sequences and loss_tokens (tokens whose loss_mask is 1) are over all
 * ranks: a token-mean loss over the whole step divides by loss_tokens,
 * which a trainer needs before its first micro-batch. The meaning of the
 * packer's fields is in packstep.h; job, the record of the plain
 * inputs (named files and standard input, which no claim tracks), is
 * present only in the steps that hold any of them (see packbuf.h). This module is the one writer
 * (done_format) and the one reader (done_parse, done_load); a manifest
 * written before loss_tokens existed reads with loss_tokens -1 (unknown).
 *
 * QUEUE/.jobs keeps the jobs of the steps grpo-spool gc removed, so that
 * grpo-pack still knows the inputs they packed: one record a line, the
 * manifest's step and its job without done (what was packed of an
 * unfinished job is read from the newest manifest only, which gc keeps):
 *
 *   {"step":N,"job":{"id":"16 hex digits","first_step":F,"sequences":S,
 *    "finished":b,"data":"16 hex digits","inputs_data":[...],"inputs_hash":[...]}}
 *
 * One line per job: a record of the same job (id and first_step) and a
 * later step replaces the earlier one. The queue files a removed step held
 * are kept too, so that grpo-pack still knows a copy of one (packbuf.h), in
 * a line of their own per step, whose files had hashes:
 *
 *   {"step":N,"inputs":["step_K/rank_X/NAME", ...],"inputs_hash":[...]}
 *
 * done_jobs_add rewrites the file whole (temporary in QUEUE/.tmp, flushed,
 * renamed over it), so a crash
 * leaves the old file or the new one; done_jobs_load passes over a last
 * line cut short (no newline, not a record: a copy cut short) and reads
 * duplicates as they come.
 */
#ifndef GRPO_DONE_H
#define GRPO_DONE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

struct done_run {
	char *run;                  /* "" for the default run */
	uint32_t sequences;         /* this step */
	uint64_t tokens;            /* this step */
	uint64_t sequences_total;
	int64_t run_step;
	int ready;
};

struct done_partial {
	char *file;                 /* "step_K/rank_X/NAME" */
	uint32_t *done;             /* (n_done) ordinals already packed or dropped */
	uint32_t n_done;
	uint64_t hash;              /* the file's hash; 0: not known */
};

/* The plain inputs' job: id hashes their trajectories and the options
 * that shape the steps; sequences counts the trajectories read; done lists
 * the ordinals (0-based, across the plain inputs in order, each below
 * sequences) packed or dropped so far, empty once finished; data hashes
 * the trajectories alone, so that the same input packed with other
 * options is known (0: not recorded, a manifest from before it was);
 * inputs_data hashes each input's alone, in order, by data's function, so
 * that an input packed before among others is known (none in a manifest
 * from before it was: there a job of one input has its data as its
 * input's); inputs_hash hashes each input as a queue file is hashed, with
 * its ids, so that a queue file that copies an input is known, and an
 * input that copies a queue file (NULL in a manifest from before it was). */
struct done_job {
	uint64_t id;
	int64_t first_step;
	uint32_t sequences;
	int finished;
	uint32_t *done;        /* (n_done) */
	uint32_t n_done;
	uint64_t data;
	uint64_t *inputs_data; /* (n_inputs_data) */
	uint64_t *inputs_hash; /* (n_inputs_data) or NULL */
	uint32_t n_inputs_data;
};

struct done_manifest {
	int64_t step;
	uint32_t ranks, micro_batches_per_rank, sequences, dummies;
	uint64_t tokens, pad_tokens, dummy_tokens;
	int64_t loss_tokens;        /* -1: unknown (an older manifest) */
	uint64_t dropped_stale, dropped_overlong, dropped_empty;
	uint64_t truncated, truncated_untrained;
	struct done_run *runs;      /* (n_runs) */
	uint32_t n_runs;
	char *next_run;             /* NULL: "" */
	char **inputs;              /* (n_inputs) queue files finished by this step */
	uint64_t *inputs_hash;      /* (n_inputs) each one's hash (0: not known), or NULL */
	uint32_t n_inputs;
	struct done_partial *partial;   /* (n_partial) queue files still being consumed */
	uint32_t n_partial;
	int has_job;
	struct done_job job;        /* when has_job */
};

/* Append the manifest as one JSON line; -1 only when memory runs out. */
int done_format(struct buf *out, const struct done_manifest *m);
/* Parse a manifest (name for messages); m is freed on failure. */
int done_parse(const char *text, size_t n, const char *name, struct done_manifest *m, struct err *e);
/* Read QUEUE/step_N/DONE: 1 read, 0 no such file (m zeroed), -1 error. */
int done_load(const char *queue, int64_t step, struct done_manifest *m, struct err *e);
/* The job of QUEUE/step_N/DONE: 1 with *j filled (done_job_free), 0 when
 * the manifest has none or there is no manifest (j zeroed), -1. */
int done_load_job(const char *queue, int64_t step, struct done_job *j, struct err *e);

/* A record of QUEUE/.jobs: a removed step and its job, or (n_files > 0)
 * the queue files it held whose hashes its manifest recorded. */
struct done_jobrec {
	int64_t step;
	struct done_job job;   /* done unused: n_done 0 */
	char **files;          /* (n_files) "step_K/rank_X/NAME" */
	uint64_t *files_hash;  /* (n_files) */
	uint32_t n_files;
};

/* Append the record as one line; -1 only when memory runs out. */
int done_jobrec_format(struct buf *out, const struct done_jobrec *r);
/* Parse one line (name for messages, "QUEUE/.jobs: line 3"); r is freed on failure. */
int done_jobrec_parse(const char *text, size_t n, const char *name, struct done_jobrec *r, struct err *e);
/* Read QUEUE/.jobs into *v (n records, in file order; none when there is
 * no such file); free with done_jobrecs_free. 0 or -1. */
int done_jobs_load(const char *queue, struct done_jobrec **v, size_t *n, struct err *e);
/* Add records (borrowed) to QUEUE/.jobs, each replacing the record of
 * its job of an earlier step; the file is rewritten, durably, only when
 * that changes it. 0 or -1 (the file as it was). */
int done_jobs_add(const char *queue, const struct done_jobrec *add, size_t n_add, struct err *e);
void done_jobrecs_free(struct done_jobrec *v, size_t n);
void done_jobrecs_free_one(struct done_jobrec *r);
/* What gc keeps of QUEUE/step_N/DONE, read once, whatever else the marker
 * holds: the step's job record, then the record of its queue files with
 * hashes, each when there is one, in rec[0..n) (done_jobrecs_free_one
 * each). n is 0 when there is no marker or it holds neither (empty, not
 * JSON, {}: another producer's marker); -1 when the marker cannot be read,
 * or is a JSON object whose job or files are damaged. */
int done_step_records(const char *queue, int64_t step, struct done_jobrec rec[2], struct err *e);

/* Free what done_parse or done_load allocated, and zero m. */
void done_free(struct done_manifest *m);
/* Free what done_load_job allocated in j, and zero it. */
void done_job_free(struct done_job *j);

#endif
