/*
 * packstep.h: one optimizer step of grpo-pack, from chosen sequences to
 * published micro-batches: pack (pack.h), build (data/mbbuild.h), write, and
 * the step's manifest and metrics.
 *
 * Output, either
 *  - a queue (SPOOL/batches): rank X's micro-batches as
 *    QUEUE/step_N/rank_X/mb_0000.zst, mb_0001.zst, ... (names sort in
 *    micro-step order; one micro-batch per spool file), each published by
 *    spool.h (tmp, fsync, rename without replacing), then QUEUE/step_N/DONE,
 *    the manifest, published last the same way; a reader that sees DONE sees
 *    every file of the step. A step directory left without DONE is rolled
 *    back first (below); a file that still appears under its name meanwhile
 *    is accepted only if it holds the same bytes, and otherwise the step
 *    fails rather than mix two packers' steps. A step that already has DONE
 *    is refused. One packer at a time: the caller holds packstep_lock()
 *    while it reads the newest manifest and publishes.
 *  - or a spool file writer (standard output): every micro-batch of the
 *    step, rank by rank, micro-step by micro-step.
 *
 * A step directory without DONE is what a packer that died publishing it
 * left: no reader has taken it (readers wait for DONE), and the packer
 * holding the lock is the only one, so packstep_run rolls it back (moves it
 * into QUEUE/.tmp and removes it there) before publishing the step anew,
 * whatever inputs the new step holds. A packstep_run that fails before its
 * DONE is in (a full disk, an I/O error) rolls back what it published of
 * the step itself; only a second failure there leaves it to the next run.
 *
 * The manifest, one JSON object:
 *   {"step":N,"ranks":W,"micro_batches_per_rank":K,"sequences":S,
 *    "tokens":real tokens,"pad_tokens":P,"dummies":D,"dummy_tokens":Q,
 *    "dropped":{"stale":a,"overlong":b,"empty":c},"truncated":t,
 *    "truncated_untrained":u,
 *    "runs":[{"run":NAME,"sequences":s,"tokens":t,"sequences_total":u,
 *             "run_step":r,"ready":b}, ...],"next_run":NAME,
 *    "inputs":["step_K/rank_X/NAME", ...],
 *    "partial":[{"file":"step_K/rank_X/NAME","done":[ordinals]}, ...],
 *    "job":{...}}   (only with plain inputs: see struct done_job)
 * where pad_tokens counts the padding of micro-batches that hold sequences
 * and dummy_tokens the tokens of dummy micro-batches (all padding), in the
 * manifest and the metrics line alike; dropped counts the sequences left
 * out since the previous step, by reason (each once: a queue file left
 * queued without a step is dropped from again when read again, and counted
 * then), and truncated the step's sequences shortened to T
 * (truncated_untrained: of them, those left with no trained token).
 * A run's run_step counts its completed steps of --batch-size
 * sequences (of every step when there is no batch size), ready says the
 * run completed one in this step (prime-rl's ready_to_update), and
 * next_run is the run whose turn comes first in the next step. The next
 * invocation reads them back (packstep_load_runs), so progress and
 * fairness carry over from one cron run to the next. inputs names the
 * queue files whose last sequences went into this step: they are retired
 * right after DONE. partial names the files still being consumed, with the
 * ordinals (0-based position of a trajectory in its file) of those already
 * in this or an earlier step, or dropped. The next invocation, after a
 * crash or after leaving the rest of a file queued on purpose (full steps
 * only, --fill-target), reads both back (packstep_load_inputs): it retires
 * the finished files and skips the handled trajectories of the partial
 * ones, so nothing is packed twice. The caller (packbuf_carry) copies the
 * records of files it did not read into the lists it passes, so that they
 * stay in every manifest until their files are retired.
 */
#ifndef GRPO_PACKSTEP_H
#define GRPO_PACKSTEP_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "pack/pack.h"
#include "data/done.h"
#include "data/sfile.h"
#include "data/traj.h"

struct packstep_opt {
	uint32_t seq_len;          /* capacity: T rounded down to a multiple of pad_multiple */
	uint32_t seq_len_given;    /* T as given (0: seq_len); fill is relative to it */
	uint32_t ranks;            /* W */
	uint32_t pad_multiple;     /* 0/1: none */
	struct pack_cost cost;
	int separate_runs;
	const char *queue;         /* output queue, or NULL for writer */
	int64_t newest_done;       /* the queue's newest step with DONE as the run began (0: none) */
	struct sfile_writer *writer;
	int level;                 /* zstd level of published files */
	int no_fsync;              /* scratch output (tests, tmpfs) */
};

struct packstep_seq {
	const struct traj *t;
	uint32_t use;              /* tokens used: its length, or T when truncated */
	uint32_t run;              /* index into the run table */
};

/* A queue file that a step finishes, or only partly consumes. */
struct packstep_input {
	char *name;            /* "step_K/rank_X/NAME" */
	int finished;          /* every trajectory of it is in a published step */
	uint32_t *done;        /* (n_done) ordinals already packed, when not finished */
	uint32_t n_done;
	uint64_t hash;         /* the file's trajectories with their ids (packbuf.h); 0: not known */
};
void packstep_inputs_free(struct packstep_input *in, uint32_t n);

/* The job of the plain inputs (named files and standard input, which no
 * claim tracks) is recorded in the manifest of every step that holds any
 * of them (struct done_job, data/done.h; read back by done_load_job). A
 * re-run of the same command after a crash skips what it lists; another
 * command refuses while the job is unfinished. */

/* Per-run progress, kept by the caller across steps. */
struct packstep_run {
	const char *name;          /* "" for the default run */
	uint64_t seqs_total;       /* sequences consumed so far */
	int64_t run_step;          /* completed run steps */
	uint32_t seqs, ready;      /* this step */
	uint64_t tokens;           /* this step */
};

/* Sequences left out of a step, or shortened to fit, since the last step. */
enum { PACKSTEP_STALE, PACKSTEP_OVERLONG, PACKSTEP_EMPTY, PACKSTEP_N_DROP };
extern const char *const packstep_drop_names[PACKSTEP_N_DROP];   /* "stale", ... */
struct packstep_drops {
	uint64_t n[PACKSTEP_N_DROP];
	uint64_t truncated, truncated_untrained;
};
/* 1 when anything was dropped or truncated. */
int packstep_drops_any(const struct packstep_drops *d);
/* "dropped":{...},"truncated":t,"truncated_untrained":u (a JSON fragment). */
int packstep_drops_json(struct buf *b, const struct packstep_drops *d);
/* The metrics line of a step with nothing left to pack but drops:
 * {"step":N,"sequences":0,"dropped":...} and '\n'. */
int packstep_drops_metrics(struct buf *b, int64_t step, const struct packstep_drops *d);

struct packstep_stats {
	int64_t step;
	uint32_t ranks, per_rank, dummies, sequences, lower_bound;
	uint64_t tokens, pad_tokens, dummy_tokens;
	double fill, fill_bound;   /* tokens / (k * T as given); k = the bound's micro-batches */
	uint64_t *rank_tokens;     /* (ranks), padding included */
	double *rank_cost;         /* (ranks), padding and dummies included */
	uint32_t refine_moves;
	uint64_t bytes;            /* compressed bytes written */
	uint32_t files_existing;   /* files found already published (re-run) */
	uint32_t rolled_back;      /* files of a step left without DONE, removed first */
	double pack_s, write_s;    /* packing alone; building + writing + publishing */
};
void packstep_stats_free(struct packstep_stats *st);

/*
 * Pack and write step `step` from n sequences. runs (n_runs) is updated:
 * seqs/tokens/ready for this step, seqs_total and run_step advanced by
 * batch_size (0: one run step per step that includes the run).
 */
int packstep_run(const struct packstep_opt *o, int64_t step, const struct packstep_seq *s, uint32_t n,
		 struct packstep_run *runs, uint32_t n_runs, uint32_t next_run, uint64_t batch_size,
		 const struct packstep_input *inputs, uint32_t n_inputs, const struct done_job *job,
		 const struct packstep_drops *drops, struct packstep_stats *st, struct err *e);

/* pack_fill_cut() (pack.h) over these sequences as packstep_run would pack
 * them: which of the units (unit_of[i], in priority order) the step keeps
 * to fill its micro-batches to about F. Returns the count kept, or -1. */
int packstep_fill_cut(const struct packstep_opt *o, const struct packstep_seq *s, uint32_t n,
		      const uint32_t *unit_of, uint32_t n_units, double F, uint8_t *keep, struct err *e);

/* The runs recorded in QUEUE/step_N/DONE (names malloc'ed), and the index
 * of its next_run; nothing (0 runs) when there is no such manifest. */
int packstep_load_runs(const char *queue, int64_t step, struct packstep_run **runs, uint32_t *n,
		       uint32_t *next_run, struct err *e);

/* The inputs and partial lists of QUEUE/step_N/DONE (free with
 * packstep_inputs_free); none when there is no such manifest. */
int packstep_load_inputs(const char *queue, int64_t step, struct packstep_input **in, uint32_t *n,
			 struct err *e);

/* Lock QUEUE/.lock (creating QUEUE) without waiting, flock(2) style, so
 * the kernel drops it if the holder dies: 0 held (keep *fd open while
 * publishing, close it to unlock), 1 another process holds it, -1 error
 * (also where the file system has no locks). */
int packstep_lock(const char *queue, int *fd, struct err *e);

/* 1 if QUEUE/step_N/DONE exists, 0 if not, -1 on error. */
int packstep_done_exists(const char *queue, int64_t step, struct err *e);
/* The step after the newest step of the queue with a DONE marker; 1 for none. */
int packstep_next_step(const char *queue, int64_t *step, struct err *e);

/* --cost flops: pack_cost_from_config() of DIR/config.json. */
int packstep_cost_load(const char *dir, struct pack_cost *c, struct err *e);

/* The metrics line (with '\n'). */
int packstep_metrics(struct buf *b, const struct packstep_stats *st, const struct packstep_run *runs,
		     uint32_t n_runs, const struct packstep_drops *drops);

#endif
