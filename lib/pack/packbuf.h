/*
 * packbuf.h: grpo-pack's buffer between reading and publishing. It holds
 * the trajectories read and not yet in a published step, the queue files
 * (sources) they came from, per-run progress and the fair turn, and the
 * counts of what was dropped; it chooses each step's sequences. The tool
 * opens inputs and outputs and reports; packstep.h packs and publishes.
 *
 * Calling sequence, per step:
 *
 *	packbuf_take(b, step, flush, po, &st, e)    0: nothing left to pack
 *	packstep_run(po, step, st.seq, st.n, b->runs, b->n_runs, b->turn, ...,
 *		     st.in, st.n_in, &b->drops, ...)
 *	(report b->drops)
 *	packbuf_commit(b, &st)                      the step is published
 *	packbuf_retire(b, e)                        retire finished queue files
 *
 * A step that fails to publish leaves the buffer fit only for
 * packbuf_release and packbuf_free: take has already moved the turn and
 * noted the step's trajectories as done.
 *
 * Invariants:
 *  - every trajectory read from a source is in exactly one place: in the
 *    buffer (counted in the source's pending), or noted done (in a
 *    published step, dropped, or named by the previous manifest);
 *  - a source whose pending reaches 0 is retired by packbuf_retire, never
 *    before the step that holds its last sequence is published;
 *  - drops counts what was dropped since the last published step and not
 *    yet reported, each trajectory once across invocations: a source handed
 *    back to the queue (packbuf_hold) takes its drops back with it, since
 *    the next invocation reads it, and drops it, again. Truncation is
 *    counted when a shortened sequence goes into a step.
 *  - the entries keep arrival order; a run's units are taken in that order.
 *
 * Ownership: the buffer owns its entries' trajectories (moved out of the
 * groups read), the sources and their claims (held until retired or
 * released; packbuf_free neither retires nor releases), the run table and
 * its names, and prev (filled by packbuf_resume before reading). A
 * packbuf_step owns its arrays and input names; its seq[].t and in[].done
 * point into the buffer, valid until packbuf_commit.
 *
 * Never prints or exits; errors come back through struct err.
 */
#ifndef GRPO_PACKBUF_H
#define GRPO_PACKBUF_H

#include <stddef.h>
#include <stdint.h>

#include "spool/claim.h"
#include "base/err.h"
#include "pack/packstep.h"
#include "data/traj.h"

enum packbuf_overlong { PACKBUF_OVER_ERROR, PACKBUF_OVER_SKIP, PACKBUF_OVER_TRUNCATE };

struct packbuf_opt {
	uint32_t seq_len;               /* capacity T: longer sequences are overlong */
	const char *cap_text;           /* T in messages, in the user's terms ("--seq-len 8") */
	enum packbuf_overlong overlong;
	long max_lag;                   /* -1: nothing is dropped for age */
	int keep_groups;                /* a unit of selection is a group, not a sequence */
	uint64_t batch_size, batch_tokens;   /* a step's limit; 0: none */
	uint64_t min_tokens;            /* without a limit: tokens that make a step ready */
	double fill_target;             /* 0: no carrying for fill */
};

struct packbuf_entry {
	struct traj t;
	uint32_t run, use;        /* run index; tokens used (T when truncated) */
	int32_t src;              /* index into sources, -1 for a plain file */
	uint32_t ord;             /* position of the trajectory in its file */
	uint64_t group;           /* record ordinal: sequences of one group share it */
	int taken;                /* in the step being taken */
};

struct packbuf_source {
	struct claim c;
	uint32_t pending;         /* its sequences not yet in a published step */
	uint32_t taking;          /* of them, in the step being taken */
	uint32_t next_ord;        /* trajectories read so far */
	uint32_t *done, n_done, cap_done;   /* (n_done) ordinals handled: packed or dropped */
	uint64_t dropped[PACKSTEP_N_DROP];  /* its part of drops */
	const struct packstep_input *skip;  /* what the previous manifest says is handled */
	int unflushed;            /* retired, the retirement not yet flushed (packbuf_retire) */
	uint64_t hash;            /* of all its trajectories with their ids (packbuf_read_claim) */
	uint32_t seqs;            /* its trajectories, skipped ones too */
};

/* The plain inputs (files, standard input) as one job: see struct done_job, data/done.h.
 * Each input is also hashed alone (in_data, by data's function), so that
 * one packed before, by this job or another, is known by itself. */
struct packbuf_job {
	uint64_t hash;                      /* FNV-1a of their trajectories so far; once settled, with the options */
	uint64_t data;                      /* once settled, of the trajectories alone */
	char **in_name;                     /* (n_in) each input's name, for messages */
	uint64_t *in_data;                  /* (n_in) each input's trajectories' hash */
	uint64_t *in_file;                  /* (n_in) each one's hash as a queue file's, with its ids */
	uint32_t *in_seqs;                  /* (n_in) each input's trajectories */
	uint32_t n_in;
	int64_t published_from;             /* settled as published: the job's first step */
	uint32_t next_ord;                  /* trajectories read */
	uint32_t pending;                   /* of them, in the buffer */
	uint32_t taking;                    /* of those, in the step being taken */
	uint32_t *done, n_done, cap_done;   /* ordinals packed or dropped */
	uint64_t dropped[PACKSTEP_N_DROP];
	struct done_job prev;           /* of the newest DONE (owned: done_job_free) */
	int has_prev;
	int64_t prev_step;              /* the newest DONE's step */
	int64_t first_step;
	struct done_job rec;            /* what the step being taken records */
};

struct packbuf {
	struct packbuf_opt o;
	struct packbuf_entry *ent;     /* (n) arrival order */
	size_t n, cap;
	struct packbuf_source *src;    /* (nsrc) */
	size_t nsrc, capsrc;
	struct packstep_run *runs;     /* (n_runs) names malloc'ed */
	uint32_t n_runs, turn;         /* turn: the run that goes first in the next step */
	uint64_t groups;
	struct packstep_drops drops;   /* since the last step, not yet reported */
	struct packstep_input *prev;   /* (n_prev) inputs of the newest DONE: handled already */
	uint32_t n_prev;
	uint8_t *carry;                /* (n_prev) 1: no source here stands for it: copy it on */
	struct packbuf_job job;
	char *queue;                   /* the output queue (packbuf_resume), or NULL */
	struct packbuf_known *known;   /* (n_known) what its manifests hold, once read */
	size_t n_known;
	int known_read;
};

/* A queue file that a manifest of the output queue records, or a plain
 * input of a job that one records, by its hash (with ids). */
struct packbuf_known {
	uint64_t hash;
	int64_t step;                  /* the manifest's */
	char *name;                    /* "step_K/rank_X/NAME", or "input I of job ID" */
	int removed;                   /* its step removed by gc, recorded in QUEUE/.jobs */
};

/* One step's choice. */
struct packbuf_step {
	struct packstep_seq *seq;      /* (n) in buffer order */
	uint32_t n;
	struct packstep_input *in;     /* (n_in) queue files it finishes or partly consumes */
	uint32_t n_in;
	uint32_t n_own;                /* of in, the first n_own are this run's (names owned) */
	const struct done_job *job;   /* the plain inputs' record, or NULL */
	int64_t step;
};

void packbuf_init(struct packbuf *b, const struct packbuf_opt *o);
/* Frees everything; claims still held stay held (packbuf_release first). */
void packbuf_free(struct packbuf *b);
/* Go on from QUEUE/step_(step-1)/DONE, if there is one: run progress and
 * the turn (packstep_load_runs), and the input files it names as handled,
 * whole or in part (packstep_load_inputs), so none is packed twice. */
int packbuf_resume(struct packbuf *b, const char *queue, int64_t step, struct err *e);

/*
 * The previous manifest's input records that no source of this run will
 * stand for are copied into every manifest this run writes, so that what
 * was packed of a file stays known until the file is retired (a file still
 * claimed by a dead packer, waiting for grpo-spool recover, is not read by
 * this run). A record is dropped when, in one of the input queues given,
 * the file is retired (rank_X/.done/NAME) or gone (gc); with no input
 * queue every record is copied. Call after packbuf_resume.
 */
int packbuf_carry(struct packbuf *b, const char *const *queues, size_t n_queues, struct err *e);

/*
 * After the plain inputs are read, before the first step: settle their
 * job (see struct done_job, data/done.h), opts being the options that shape the steps, as
 * text. Returns 0 to go on (a new job, or the rest of the same one, whose
 * packed trajectories were skipped while reading), 1 when the same job was
 * finished already, in the newest manifest or any other of queue (its
 * trajectories are dropped from the buffer; nothing of them is published),
 * or -1, saying why in e, when the newest manifest holds an unfinished job
 * of another command, when a manifest of queue holds the same trajectories
 * packed with other options, or, for a new job, when two of its inputs
 * hold the same trajectories, a manifest of queue holds one of its
 * inputs already (in a job of its own or among other inputs), or one is a
 * copy of a queue file (or another job's input) that a manifest or .jobs
 * knows by its hash with ids. The
 * manifests other than the newest, then QUEUE/.jobs, where grpo-spool gc
 * keeps the jobs of the steps it removed (data/done.h), are read only
 * when the newest does not settle it; a job found there counts as one
 * still in a manifest. queue NULL: there are none.
 */
int packbuf_job_settle(struct packbuf *b, const char *queue, const char *opts, int64_t step, struct err *e);

/* Take a group's trajectories into the buffer (the group is left empty),
 * dropping or truncating as the options say. src: a source index, or -1
 * (a plain input: the current one, begun by packbuf_read_fd, else the
 * first, named name); name and rec for messages. */
int packbuf_add_group(struct packbuf *b, struct group *g, int32_t src, const char *name, uint64_t rec,
		      struct err *e);
/* Every group of the spool file open on fd (the caller closes fd); with
 * src -1, one plain input, named name in messages. */
int packbuf_read_fd(struct packbuf *b, int fd, const char *name, int32_t src, struct err *e);
/*
 * A claimed queue file: the buffer takes over the claim (*c is copied, and
 * released on failure) and reads the file, skipping what the previous
 * manifest lists as handled; a file it lists as finished is retired.
 *
 * A file whose trajectories are packed already, or read already in this
 * run (in a queue file or a plain input), is not packed again: a copy
 * under another name or in another step or rank directory, restored from
 * a backup, or packed by name, or the same samples scored again (a file is
 * known by the hash of all its trajectories with their group and sequence
 * ids, less their advantages, which the manifests
 * record for each queue file and each plain input, data/done.h: files
 * sampled apart have other ids, whatever their tokens); or the file itself, named
 * by a manifest before the newest, so finished and retired once, its
 * retirement lost since. Its trajectories leave the buffer, it is retired,
 * and 1 is returned with e saying which file held them and where they
 * are; 0 otherwise. The manifests of the output queue are read for it
 * once, when the first file is read.
 */
int packbuf_read_claim(struct packbuf *b, const struct claim *c, struct err *e);

/* Sequences and tokens buffered. */
uint64_t packbuf_tokens(const struct packbuf *b);
/* 1 when a full step `step` is buffered: batch_size sequences,
 * batch_tokens tokens, or without either min_tokens tokens, none of them
 * stale at that step. */
int packbuf_ready(const struct packbuf *b, int64_t step);

/* Drop the buffered trajectories too old for step (--max-lag), counting them. */
int packbuf_drop_stale(struct packbuf *b, int64_t step, struct err *e);

/*
 * Choose step `step`'s sequences: drop the stale, then select fairly across
 * runs up to the step's limit (pack_select), then, unless flush, carry for
 * fill (packstep_fill_cut with po), the turn going back to the first
 * carried unit's run so that carried units keep their place in the
 * round-robin. Counts the truncated sequences chosen. Returns 1 with *st
 * filled (free it with packbuf_step_free), 0 when nothing is buffered, or
 * -1.
 */
int packbuf_take(struct packbuf *b, int64_t step, int flush, const struct packstep_opt *po,
		 struct packbuf_step *st, struct err *e);
/* The step is published: forget its sequences and zero drops (the caller
 * has reported them); frees st. */
void packbuf_commit(struct packbuf *b, struct packbuf_step *st);
void packbuf_step_free(struct packbuf_step *st);
/* drops in words, for step's line on standard error (size 512 is ample):
 * "dropped 2 stale (policy_version below 1, --max-lag 0); truncated ...". */
void packbuf_drops_text(const struct packbuf *b, int64_t step, char *line, size_t size);
/* Zero drops, after reporting them without a step. */
void packbuf_drops_reported(struct packbuf *b);

/* Retire every held source whose sequences are all in published steps. */
int packbuf_retire(struct packbuf *b, struct err *e);
/* Release every held claim (an error path): the files wait again. */
void packbuf_release(struct packbuf *b);
/* Hand the held sources back to the queue for a later run, with their
 * drops: what stays in drops belongs to files that will not be read again. */
void packbuf_hold(struct packbuf *b);

#endif
