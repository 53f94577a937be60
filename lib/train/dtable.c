/*
 * dtable.c: the debug table's rows (see dtable.h).
 */
#include <math.h>
#include <stdio.h>

#include "train/dtable.h"

int dtable_header(struct buf *b)
{
	return buf_printf(b, "kind\tstep\trank\tmb\tsequence_id\tgroup_id\tpos\tlen\ttrained\ttoken\ttext\tadvantage\t"
	                     "sampler_lp\tref_lp\ttrainer_lp\tratio\tclipped\tloss_mask\n");
}

/* One id as a TSV cell: as given, with tabs and line breaks turned into spaces so the row stays one row. */
static int id_cell(struct buf *b, const struct traj_id *id)
{
	char num[24];
	for (const char *c = traj_id_text(id, num); *c; c++)
		if (buf_put_u8(b, (uint8_t)(*c == '\t' || *c == '\n' || *c == '\r' ? ' ' : *c)) < 0)
			return -1;
	return 0;
}

/* Token id's text as one TSV cell (buf_put_tsv_cell). */
static int text_cell(struct buf *b, const struct tokenizer *tok, int32_t id, struct buf *scratch)
{
	if (!tok)
		return 0;
	buf_reset(scratch);
	if (tok_decode(tok, &id, 1, 0, scratch, NULL) < 0)
		return 0;   /* an id the tokenizer lacks: an empty cell */
	return buf_put_tsv_cell(b, (const char *)scratch->data, scratch->len);
}

/* The ids of real sequence j of mb. */
static int ids(struct buf *b, const struct microbatch *mb, uint32_t j)
{
	if (j < mb->n_seqs && mb->sequence_ids && mb->group_ids)
		return id_cell(b, &mb->sequence_ids[j]) < 0 || buf_put_u8(b, '\t') < 0 ? -1
		                                                                     : id_cell(b, &mb->group_ids[j]);
	return buf_printf(b, "\t");
}

int dtable_mb(struct buf *b, int64_t step, const struct microbatch *mb, const float *logprob,
              const struct loss_opts *o, int tokens, const struct tokenizer *tok)
{
	int x = 0;
	struct buf scratch = { 0 };
	uint32_t start = 0;
	for (uint32_t s = 0; s < mb->n_seq_lens; start += mb->seq_lens[s], s++) {
		uint32_t len = mb->seq_lens[s], n = 0;
		double sa = 0, re = 0, tr = 0, logs = 0;
		float adv = 0;
		for (uint32_t t = start; t < start + len; t++)
			if (mb->loss_mask[t]) {
				n++;
				sa += mb->inference_logprobs[t];
				re += mb->ref_logprobs ? mb->ref_logprobs[t] : 0;
				tr += logprob[t];
				logs += (double)logprob[t] - mb->inference_logprobs[t];
				adv = mb->advantages[t];
			}
		if (s >= mb->n_seqs && n == 0)
			continue;   /* padding */
		/* no sampler logprobs: empty cells, never the zeros that stand in for them */
		int miss = mb->logprobs_missing && s < mb->n_seqs && mb->logprobs_missing[s];
		/* the ratio the loss clips is to ℓ_old: the policy's own logprob (ratio 1)
		 * under a TIS cap or without sampler logprobs, else the sampler's; with
		 * --ratio sequence the sequence's, as loss.c forms it */
		int own = miss || o->tis_cap > 0;
		double sr = own || !n ? 1 : exp(loss_clampd(logs / n, -LOSS_LOGR_MAX, LOSS_LOGR_MAX));
		x |= buf_printf(b, "seq\t%lld\t%d\t%d\t", (long long)step, mb->rank, mb->index);
		x |= ids(b, mb, s);
		x |= buf_printf(b, "\t\t%u\t%u\t\t\t%.6g\t", len, n, adv);
		if (n && !miss)
			x |= buf_printf(b, "%.6f\t", sa / n);
		else
			x |= buf_printf(b, "\t");
		if (n && mb->ref_logprobs)
			x |= buf_printf(b, "%.6f\t", re / n);
		else
			x |= buf_printf(b, "\t");
		if (n)
			x |= buf_printf(b, "%.6f\t\t\t\n", tr / n);
		else
			x |= buf_printf(b, "\t\t\t\n");
		if (!tokens)
			continue;
		for (uint32_t t = start; t < start + len; t++) {
			int m = mb->loss_mask[t] != 0;
			x |= buf_printf(b, "tok\t%lld\t%d\t%d\t", (long long)step, mb->rank, mb->index);
			x |= ids(b, mb, s);
			x |= buf_printf(b, "\t%u\t\t\t%d\t", t - start, mb->input_ids[t]);
			x |= text_cell(b, tok, mb->input_ids[t], &scratch);
			x |= buf_printf(b, "\t%.6g\t", mb->advantages[t]);
			if (!m) {
				x |= buf_printf(b, "\t\t%.6f\t\t\t0\n", t == start ? 0.0 : logprob[t]);
				continue;
			}
			/* the ratio at the step's start; 1 without sampler logprobs (step.c) */
			double r = miss ? 1.0 : exp((double)logprob[t] - mb->inference_logprobs[t]);
			double A = mb->advantages[t];
			double rc = o->ratio == LOSS_RATIO_SEQUENCE ? sr : own ? 1.0 : r;
			int clipped = (rc < 1.0 - o->clip_low && A < 0) || (rc > 1.0 + o->clip_high && A > 0);
			if (miss)
				x |= buf_printf(b, "\t");
			else
				x |= buf_printf(b, "%.6f\t", mb->inference_logprobs[t]);
			if (mb->ref_logprobs)
				x |= buf_printf(b, "%.6f\t", mb->ref_logprobs[t]);
			else
				x |= buf_printf(b, "\t");
			x |= buf_printf(b, "%.6f\t%.6g\t%d\t1\n", logprob[t], r, clipped);
		}
	}
	buf_free(&scratch);
	return x;
}
