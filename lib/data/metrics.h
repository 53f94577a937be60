/*
 * metrics.h: a run's metrics lines as one table per step, for
 * `grpo-spool plot`.
 *
 * Reads the JSON lines grpo-score --metrics and grpo-step --metrics append
 * (one per scored input, one per trained step) and keeps, per training
 * step:
 *
 *   reward.NAME    the mean of reward NAME over the step's rollouts, each
 *                  scored input weighted by its sequences
 *   kl, entropy    per token, from the trainer's line
 *   clip_fraction  clip_low + clip_high: tokens whose ratio was clipped
 *   grad_norm      before clipping
 *   tokens_per_s   the trainer's throughput
 *
 * Which step a scorer's line belongs to: its input's path names the queue
 * step, QUEUE/step_K/rank_X/NAME, the rollouts policy K sampled, which step
 * K+1 trains on (so the reward of step K+1 is what the policy before it
 * earned). A line whose input has no such path (standard input, as in a
 * pipeline) goes to the step after the previous such line's, starting at 1,
 * so a run of one scorer line per step reads in order. A trainer's line
 * names its step. A line of neither kind (grpo-pack's) is passed over; a
 * line that is not a JSON object is an error naming the file and line.
 * A value no line gave is missing: NAN here, "-" in the table.
 */
#ifndef GRPO_METRICS_H
#define GRPO_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/err.h"

#define METRICS_MAX_REWARDS 8

struct metrics_row {
	int64_t step;
	double reward_sum[METRICS_MAX_REWARDS];   /* mean x sequences, summed over the step's inputs */
	double reward_seqs[METRICS_MAX_REWARDS];  /* sequences: the weights */
	double kl, entropy, clip_fraction, grad_norm, tokens_per_s;   /* NAN until the trainer's line */
};

struct metrics_table {
	struct metrics_row *rows;   /* (n) by step, ascending */
	size_t n, cap;
	char names[METRICS_MAX_REWARDS][64];   /* (n_rewards) reward names, as first seen */
	int n_rewards;
	int64_t next_unplaced;      /* the step of the next scorer line without a queue path */
};

#define METRICS_TABLE_INIT { NULL, 0, 0, { { 0 } }, 0, 1 }

/* Add the lines of the file at path to t. */
int metrics_read(struct metrics_table *t, const char *path, struct err *e);
/* The same from a stream open for reading (standard input), which stays
 * open; name stands for its path in messages ("<stdin>:3: ..."). */
int metrics_read_stream(struct metrics_table *t, FILE *f, const char *name, struct err *e);

/* The table as tab-separated values with a header line:
 * step, reward.NAME..., kl, entropy, clip_fraction, grad_norm, tokens_per_s. */
int metrics_tsv(const struct metrics_table *t, struct buf *out);

/* A gnuplot script drawing every column of the table against the step,
 * one panel each, into png: the table goes in the script as a datablock. */
int metrics_gnuplot(const struct metrics_table *t, const char *png, struct buf *out);

void metrics_free(struct metrics_table *t);

#endif
