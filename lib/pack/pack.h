/*
 * pack.h: choosing and packing sequences into micro-batches for W trainer
 * ranks (grpo-pack). Pure: no I/O, no clock, no hash order, so the same
 * input and options always give the same result, and tests and the bench
 * call it directly.
 *
 * The packer works on abstract items: a length in tokens, a cost, and a
 * class (the run, when runs are kept apart). It fills bins of capacity T
 * (micro-batches) and hands every rank the same number of them.
 *
 *  1. The bin count k is chosen up front as the smallest multiple of W that
 *     can hold the tokens: k = ceil(ceil(sum len / T) / W) * W (with runs
 *     kept apart, the sum of each run's own bound). Splitting bins after the
 *     fact, as prime-rl does, costs fill; choosing k first does not.
 *  2. Items are placed longest first into the bin of least cost that still
 *     has room (LPT under a capacity), which makes the k bins close to equal
 *     in cost. If an item fits nowhere, first-fit-decreasing into the same k
 *     bins is tried; if that fails too, k grows by W. Since FFD into k bins
 *     succeeds once k reaches FFD's own bin count, k never exceeds FFD's
 *     count rounded up to W: the fill is at least FFD's.
 *  3. The k bins are split among the W ranks, k/W each, by Karmarkar-Karp
 *     with equal cardinality, then refined by moving or swapping single
 *     items between the costliest rank and a cheaper one (within capacity,
 *     never emptying a bin, never mixing classes), each move strictly
 *     lowering the sum of squared rank costs, at most PACK_REFINE_MAX moves
 *     and PACK_REFINE_WORK candidates examined (a few tens of milliseconds
 *     whatever the input), until max/mean rank cost is within
 *     PACK_REFINE_EPS of 1.
 *  4. Within a rank, micro-batches go costliest first, so micro-step j
 *     costs about the same on every rank (FSDP waits at every layer).
 *
 * A bin left empty is a dummy; dummies happen only when there are fewer
 * items than bins (they cannot be split), and the micro-batch builder makes
 * them as small as it can. Items inside a bin keep their input order.
 *
 * Cost: tokens (a = 1, b = 0), or forward FLOPs per sequence of n tokens,
 * a*n + b*n^2, from a model's config.json (pack_cost_from_config):
 *   a = L * (2*C*(NH + 2*NKV)*HS + 2*NH*HS*C + 6*C*I) + 2*C*V
 *       (q, k, v and o projections, SwiGLU's three matrices, the LM head)
 *   b = 2 * L * NH * HS
 *       (causal attention: about n^2/2 query-key pairs, 2*HS FLOPs each for
 *        the scores and 2*HS for the weighted sum, per head and layer)
 * With num_experts_per_tok (mixture of experts) I becomes, in each sparse
 * layer, topk * moe_intermediate_size (Mixtral: intermediate_size) plus the
 * shared experts (shared_expert_intermediate_size, or n_shared_experts *
 * moe_intermediate_size); layers made dense by first_k_dense_replace,
 * decoder_sparse_step or mlp_only_layers keep intermediate_size. The router
 * (2*C*experts, small) and MLA's low-rank projections are not modelled.
 * prime-rl counts the output projection as 2*C^2, which is 2*NH*HS*C only
 * when NH*HS = C (Qwen3-4B: 4096 != 2560, a = 7.76e9 there, 8.04e9 here).
 * Backward is about twice forward for every term, so the ratio, which is
 * all balancing needs, is the same for training.
 *
 * Selection (pack_select): which buffered units (sequences, or whole groups
 * with --keep-groups) make up one optimizer step, fair across runs: runs
 * with buffered work take turns, one unit per turn, each run's units in
 * arrival order, until the step's sequence or token limit is reached. The
 * turn position persists from step to step.
 */
#ifndef GRPO_PACK_H
#define GRPO_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define PACK_REFINE_MAX 1024   /* refinement moves per call, a bound on time */
#define PACK_REFINE_EPS 1e-4   /* stop refining at max/mean rank cost <= 1 + this */
#define PACK_REFINE_WORK 4000000ull   /* candidate moves examined per call, at most */

struct pack_item {
	uint32_t len;       /* tokens, 1..T */
	uint32_t cls;       /* items of different classes never share a bin (with separate) */
	double cost;        /* pack_cost() of len, or anything positive */
};

struct pack_opt {
	uint32_t cap;       /* T: tokens per micro-batch */
	uint32_t ranks;     /* W */
	int separate;       /* 1: a bin holds items of one class only */
	double dummy_cost;  /* the cost of a dummy micro-batch, for balancing */
};

struct pack_result {
	uint32_t n_items;
	uint32_t k;              /* bins = ranks * per_rank */
	uint32_t per_rank;
	uint32_t dummies;        /* bins with no item */
	uint32_t lower_bound;    /* ceil(sum len / T) (sum over classes when separate) */
	uint32_t *bin_start;     /* (k + 1) items of bin b: items[bin_start[b] .. bin_start[b+1]) */
	uint32_t *items;         /* (n_items) item indices, ascending within a bin */
	uint32_t *bin_len;       /* (k) tokens */
	double *bin_cost;        /* (k) dummy_cost for a dummy */
	/* Bin b belongs to rank b / per_rank, micro-step b % per_rank. */
	uint64_t *rank_tokens;   /* (ranks) */
	double *rank_cost;       /* (ranks) */
	uint32_t refine_moves;   /* refinement moves made */
};

/* Pack n items; -1 with e filled when an item is longer than cap or is empty,
 * or memory runs out. n == 0 gives one dummy per rank. */
int pack_items(const struct pack_item *it, uint32_t n, const struct pack_opt *o,
	       struct pack_result *r, struct err *e);
void pack_result_free(struct pack_result *r);

/* The bins first-fit-decreasing uses for these lengths (stable sort by
 * length descending, first bin with room in creation order): the baseline. */
uint32_t pack_ffd_bins(const uint32_t *len, uint32_t n, uint32_t cap, uint32_t *bin_of);

/* max rank cost / mean rank cost (1 for a perfect balance). */
double pack_balance(const struct pack_result *r);

/* Cost coefficients: cost(n) = a*n + b*n^2. Tokens: a = 1, b = 0. */
struct pack_cost {
	double a, b;
};
double pack_cost_of(const struct pack_cost *c, uint32_t n);
/* From config.json text (hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, num_key_value_heads, head_dim, vocab_size, and the
 * mixture-of-experts fields above); `name` for messages. Absent
 * num_key_value_heads means NH, absent head_dim C/NH. */
int pack_cost_from_config(const char *json, size_t len, const char *name, struct pack_cost *c,
			  struct err *e);

/*
 * Carry-over for fill (--fill-target F): which of n_units units (unit_of[i]
 * is item i's; units in priority order) one step keeps, so that its
 * micro-batches, a multiple of W, are filled to about F, the rest waiting
 * for the next step. All are kept when packing everything fills the bound's
 * micro-batches to F already, or when the tokens cannot fill even W
 * micro-batches to F (there is nothing to wait for). Otherwise k is the
 * largest multiple of W with F*k*T <= the tokens; units are kept in order
 * while they fit in k*T tokens (one that does not is carried and the next
 * tried), and if the kept items do not pack into k bins the budget shrinks
 * until they do; if what is kept then fills its micro-batches less than
 * everything would fill the bound's (coarse units: whole groups), all are
 * kept. keep[u] is set to 1 for a kept unit, 0 for a carried one.
 * Returns the number of units kept, or -1 (e filled).
 */
int pack_fill_cut(const struct pack_item *it, uint32_t n, const uint32_t *unit_of, uint32_t n_units,
		  const struct pack_opt *o, double F, uint8_t *keep, struct err *e);

/* One unit of selection: a sequence, or a whole group with --keep-groups. */
struct pack_unit {
	uint32_t run;        /* run index, 0..n_runs-1 */
	uint32_t seqs;
	uint64_t tokens;
};

/*
 * Choose the units of one step among n buffered units (in arrival order):
 * runs take turns starting at *turn, one unit per turn, each run in arrival
 * order; a run whose next unit would exceed max_seqs or max_tokens (0: no
 * limit) is done for this step, unless the step is still empty, so a unit
 * larger than the limit still goes alone. taken[i] is set to 1 for chosen
 * units. *turn becomes the run after the last one that took a unit.
 * Returns the number of units chosen, or -1 when memory runs out (nothing taken).
 */
int64_t pack_select(const struct pack_unit *u, uint32_t n, uint32_t n_runs, uint64_t max_seqs,
		     uint64_t max_tokens, uint32_t *turn, uint8_t *taken);

#endif
