/* pack.c: see pack.h. */
#include "pack/pack.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/jsonview.h"

#define NO_CLASS UINT32_MAX

/* Working state: bins identified by their index in 0..k-1 until the final
 * renumbering by rank. */
struct work {
	const struct pack_item *it;
	uint32_t n, k, cap;
	uint32_t *bin_of;      /* (n) */
	uint32_t *bin_len;     /* (k) */
	uint32_t *bin_cnt;     /* (k) items */
	uint32_t *bin_cls;     /* (k) class, NO_CLASS for a spare (dummy) bin */
	double *bin_cost;      /* (k) */
};

static int grow_bins(struct work *w, uint32_t k)
{
	uint32_t *l = realloc(w->bin_len, k * sizeof *l);
	if (l)
		w->bin_len = l;
	uint32_t *c = realloc(w->bin_cnt, k * sizeof *c);
	if (c)
		w->bin_cnt = c;
	uint32_t *s = realloc(w->bin_cls, k * sizeof *s);
	if (s)
		w->bin_cls = s;
	double *d = realloc(w->bin_cost, k * sizeof *d);
	if (d)
		w->bin_cost = d;
	if (!l || !c || !s || !d)
		return -1;
	for (uint32_t b = w->k; b < k; b++) {
		w->bin_len[b] = w->bin_cnt[b] = 0;
		w->bin_cls[b] = NO_CLASS;
		w->bin_cost[b] = 0;
	}
	w->k = k;
	return 0;
}

static void put(struct work *w, uint32_t i, uint32_t b)
{
	w->bin_of[i] = b;
	w->bin_len[b] += w->it[i].len;
	w->bin_cost[b] += w->it[i].cost;
	w->bin_cnt[b]++;
}

static void take(struct work *w, uint32_t i)
{
	uint32_t b = w->bin_of[i];
	w->bin_len[b] -= w->it[i].len;
	w->bin_cost[b] -= w->it[i].cost;
	w->bin_cnt[b]--;
	if (w->bin_cnt[b] == 0)
		w->bin_cost[b] = 0;   /* no rounding residue in an empty bin */
}

/* ---- phase 1: items of one class into its bins ---- */

/* A min-heap of bins by (cost, index). */
static int heap_less(const struct work *w, uint32_t a, uint32_t b)
{
	if (w->bin_cost[a] != w->bin_cost[b])
		return w->bin_cost[a] < w->bin_cost[b];
	return a < b;
}

static void heap_down(const struct work *w, uint32_t *h, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && heap_less(w, h[l], h[m]))
			m = l;
		if (r < n && heap_less(w, h[r], h[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_up(const struct work *w, uint32_t *h, uint32_t i)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!heap_less(w, h[i], h[p]))
			return;
		uint32_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void heap_push(const struct work *w, uint32_t *h, uint32_t *n, uint32_t b)
{
	h[*n] = b;
	heap_up(w, h, (*n)++);
}

static uint32_t heap_pop(const struct work *w, uint32_t *h, uint32_t *n)
{
	uint32_t top = h[0];
	h[0] = h[--*n];
	heap_down(w, h, *n, 0);
	return top;
}

/* Longest first into the cheapest bin with room. scratch: (2 * nb). */
static int place_lpt(struct work *w, const uint32_t *order, uint32_t ni, const uint32_t *bins,
		     uint32_t nb, uint32_t *scratch)
{
	uint32_t *h = scratch, *aside = scratch + nb, nh = 0;
	for (uint32_t j = 0; j < nb; j++)
		heap_push(w, h, &nh, bins[j]);
	for (uint32_t x = 0; x < ni; x++) {
		uint32_t i = order[x], na = 0, found = NO_CLASS;
		while (nh > 0) {
			uint32_t b = heap_pop(w, h, &nh);
			if (w->bin_len[b] + w->it[i].len <= w->cap) {
				found = b;
				break;
			}
			/* items come longest first: a bin without room for the
			 * last (shortest) one is full for good */
			if (w->bin_len[b] + w->it[order[ni - 1]].len <= w->cap)
				aside[na++] = b;
		}
		for (uint32_t j = 0; j < na; j++)
			heap_push(w, h, &nh, aside[j]);
		if (found == NO_CLASS)
			return -1;
		put(w, i, found);
		heap_push(w, h, &nh, found);
	}
	return 0;
}

/*
 * First fit in O(log nb) rather than a scan of every bin: a max-tree over
 * the bins' free room (leaves at P + j, P a power of two), so that FFD over
 * a step of a million sequences does not take minutes.
 */
/* The inner nodes, once the leaves are set. */
static void room_build(uint32_t *t, uint32_t P)
{
	for (uint32_t v = P; v-- > 1;)
		t[v] = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
}

static void room_set(uint32_t *t, uint32_t P, uint32_t j, uint32_t room)
{
	uint32_t v = P + j;
	t[v] = room;
	for (v /= 2; v >= 1; v /= 2)
		t[v] = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
}

/* The first bin with at least len free, or NO_CLASS. */
static uint32_t room_first(const uint32_t *t, uint32_t P, uint32_t len)
{
	if (t[1] < len)
		return NO_CLASS;
	uint32_t v = 1;
	while (v < P)
		v = t[2 * v] >= len ? 2 * v : 2 * v + 1;
	return v - P;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t P = 1;
	while (P < n)
		P *= 2;
	return P;
}

/* tree: (2 * pow2_at_least(nb)). */
static int place_ffd(struct work *w, const uint32_t *order, uint32_t ni, const uint32_t *bins,
		     uint32_t nb, uint32_t *tree)
{
	uint32_t P = pow2_at_least(nb);
	for (uint32_t j = 0; j < P; j++)
		tree[P + j] = j < nb ? w->cap - w->bin_len[bins[j]] : 0;
	room_build(tree, P);
	for (uint32_t x = 0; x < ni; x++) {
		uint32_t i = order[x], j = room_first(tree, P, w->it[i].len);
		if (j == NO_CLASS)
			return -1;
		put(w, i, bins[j]);
		room_set(tree, P, j, w->cap - w->bin_len[bins[j]]);
	}
	/* FFD may leave bins empty that could hold an item: an empty bin would
	 * become a dummy, so give each one the cheapest item of the costliest
	 * bin holding two or more. */
	for (uint32_t j = 0; j < nb; j++) {
		uint32_t e = bins[j];
		if (w->bin_cnt[e] > 0)
			continue;
		uint32_t src = NO_CLASS;
		for (uint32_t q = 0; q < nb; q++) {
			uint32_t b = bins[q];
			if (w->bin_cnt[b] >= 2 && (src == NO_CLASS || w->bin_cost[b] > w->bin_cost[src]))
				src = b;
		}
		if (src == NO_CLASS)
			break;
		uint32_t best = NO_CLASS;
		for (uint32_t x = 0; x < ni; x++) {
			uint32_t i = order[x];
			if (w->bin_of[i] == src && (best == NO_CLASS || w->it[i].cost < w->it[best].cost))
				best = i;
		}
		take(w, best);
		put(w, best, e);
	}
	return 0;
}

static void reset_bins(struct work *w, uint32_t from, uint32_t to, uint32_t cls)
{
	for (uint32_t b = from; b < to; b++) {
		w->bin_len[b] = w->bin_cnt[b] = 0;
		w->bin_cost[b] = 0;
		w->bin_cls[b] = cls;
	}
}

/* Bins FFD opens for a class's items (longest first): every item fits an
 * unopened bin, so the first fit over ni bins of full room opens them in
 * FFD's order. tree: (2 * pow2_at_least(ni)). */
static uint32_t ffd_count(const struct work *w, const uint32_t *order, uint32_t ni, uint32_t *tree)
{
	uint32_t nb = 0, P = pow2_at_least(ni);
	for (uint32_t j = 0; j < P; j++)
		tree[P + j] = j < ni ? w->cap : 0;
	room_build(tree, P);
	for (uint32_t x = 0; x < ni; x++) {
		uint32_t len = w->it[order[x]].len, b = room_first(tree, P, len);
		if (b + 1 > nb)
			nb = b + 1;
		room_set(tree, P, b, tree[P + b] - len);
	}
	return nb;
}

/* A class into m bins: LPT, else FFD when FFD is known to fit. */
static int try_class(struct work *w, uint32_t c, const uint32_t *order, uint32_t ni,
		     const uint32_t *bins, uint32_t m, uint32_t ffdn, uint32_t *scratch, uint32_t *tree)
{
	if (ni == 0)
		return 0;
	reset_bins(w, bins[0], bins[0] + m, c);
	if (place_lpt(w, order, ni, bins, m, scratch) == 0)
		return 0;
	if (ffdn > m)
		return -1;
	reset_bins(w, bins[0], bins[0] + m, c);
	return place_ffd(w, order, ni, bins, m, tree);
}

/* The comparators take their keys through qsort_r's argument, never a
 * file-scope variable, so that packing is pure and safe in threads. */
static int by_len_desc(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const struct pack_item *items = arg, *x = &items[a], *y = &items[b];
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* ---- phase 2: bins to ranks ---- */

/* Karmarkar-Karp with equal cardinality: bins sorted by cost are cut into
 * chunks of W, each chunk a partial partition of W one-bin sets; the two
 * partial partitions with the largest spread are merged repeatedly, the
 * heaviest set of one joined with the lightest of the other. rank_of: (k). */
static int kk_desc(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const double *kk_sums = arg;
	if (kk_sums[a] != kk_sums[b])
		return kk_sums[a] > kk_sums[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int bins_by_cost(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const double *bin_cost_sort = arg;
	if (bin_cost_sort[a] != bin_cost_sort[b])
		return bin_cost_sort[a] < bin_cost_sort[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

static double kk_spread(const double *sum, uint32_t W)
{
	double lo = sum[0], hi = sum[0];
	for (uint32_t j = 1; j < W; j++) {
		lo = sum[j] < lo ? sum[j] : lo;
		hi = sum[j] > hi ? sum[j] : hi;
	}
	return hi - lo;
}

/* a before b in the heap: the larger spread, else the lower index */
static int kk_before(uint32_t a, uint32_t b, const double *spread)
{
	return spread[a] != spread[b] ? spread[a] > spread[b] : a < b;
}

static void kk_down(uint32_t *h, uint32_t n, uint32_t i, const double *spread)
{
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, t = i;
		if (l < n && kk_before(h[l], h[t], spread))
			t = l;
		if (r < n && kk_before(h[r], h[t], spread))
			t = r;
		if (t == i)
			return;
		uint32_t x = h[i];
		h[i] = h[t];
		h[t] = x;
		i = t;
	}
}

static void kk_up(uint32_t *h, uint32_t i, const double *spread)
{
	while (i > 0 && kk_before(h[i], h[(i - 1) / 2], spread)) {
		uint32_t p = (i - 1) / 2, x = h[i];
		h[i] = h[p];
		h[p] = x;
		i = p;
	}
}

static int kk_partition(const double *cost, uint32_t k, uint32_t W, uint32_t *rank_of)
{
	if (W == 1) {
		memset(rank_of, 0, k * sizeof *rank_of);
		return 0;
	}
	uint32_t m = k / W;
	uint32_t *sorted = malloc(k * sizeof *sorted);
	double *sum = malloc((size_t)k * sizeof *sum);           /* (m, W) set sums */
	uint32_t *head = malloc(k * sizeof *head), *tail = malloc(k * sizeof *tail);
	uint32_t *next = malloc(k * sizeof *next);               /* bin -> next bin in its set */
	uint8_t *alive = malloc(m);
	uint32_t *ia = malloc(W * sizeof *ia), *ib = malloc(W * sizeof *ib);
	double *ns = malloc(W * sizeof *ns);
	uint32_t *nh = malloc(W * sizeof *nh), *nt = malloc(W * sizeof *nt);
	uint32_t *heap = malloc((m ? m : 1) * sizeof *heap);
	double *spread = malloc((m ? m : 1) * sizeof *spread);
	int rc = -1;
	if (!sorted || !sum || !head || !tail || !next || !alive || !ia || !ib || !ns || !nh || !nt || !heap ||
	    !spread)
		goto out;
	for (uint32_t b = 0; b < k; b++)
		sorted[b] = b;
	qsort_r(sorted, k, sizeof *sorted, bins_by_cost, (void *)cost);
	for (uint32_t s = 0; s < m; s++) {
		alive[s] = 1;
		for (uint32_t j = 0; j < W; j++) {
			uint32_t b = sorted[s * W + j];
			sum[s * W + j] = cost[b];
			head[s * W + j] = tail[s * W + j] = b;
			next[b] = NO_CLASS;
		}
	}
	/* the states in a max-heap by spread (ties: lower index), so that
	 * finding the two to merge is not a scan of every state each time */
	for (uint32_t s = 0; s < m; s++) {
		spread[s] = kk_spread(sum + (size_t)s * W, W);
		heap[s] = s;
	}
	for (uint32_t x = m / 2; x-- > 0;)
		kk_down(heap, m, x, spread);
	for (uint32_t left = m; left > 1; left--) {
		uint32_t a = heap[0], hn = left;
		heap[0] = heap[--hn];
		kk_down(heap, hn, 0, spread);
		uint32_t c = heap[0];
		heap[0] = heap[--hn];
		kk_down(heap, hn, 0, spread);
		for (uint32_t j = 0; j < W; j++)
			ia[j] = ib[j] = j;
		qsort_r(ia, W, sizeof *ia, kk_desc, sum + (size_t)a * W);
		qsort_r(ib, W, sizeof *ib, kk_desc, sum + (size_t)c * W);
		for (uint32_t j = 0; j < W; j++) {
			uint32_t x = a * W + ia[j], y = c * W + ib[W - 1 - j];
			ns[j] = sum[x] + sum[y];
			next[tail[x]] = head[y];
			nh[j] = head[x];
			nt[j] = tail[y];
		}
		for (uint32_t j = 0; j < W; j++) {
			sum[a * W + j] = ns[j];
			head[a * W + j] = nh[j];
			tail[a * W + j] = nt[j];
		}
		alive[c] = 0;
		spread[a] = kk_spread(sum + (size_t)a * W, W);
		heap[hn] = a;
		kk_up(heap, hn, spread);
	}
	for (uint32_t s = 0; s < m; s++) {
		if (!alive[s])
			continue;
		for (uint32_t j = 0; j < W; j++)
			for (uint32_t b = head[s * W + j]; b != NO_CLASS; b = next[b])
				rank_of[b] = j;
	}
	rc = 0;
out:
	free(sorted), free(sum), free(head), free(tail), free(next), free(alive);
	free(ia), free(ib), free(ns), free(nh), free(nt), free(heap), free(spread);
	return rc;
}

/* Refinement: move one item, or swap two, between the costliest rank and
 * the cheapest rank that admits an improving change; the change of cost d
 * is taken closest to half the gap D, and 0 < d < D, so the sum of squared
 * rank costs falls strictly with every move. */
static int refine(struct work *w, const uint32_t *rank_of, uint32_t W, double *rc_,
		  uint32_t *moves)
{
	uint32_t n = w->n;
	uint32_t *start = calloc(W + 1, sizeof *start), *lst = malloc((n ? n : 1) * sizeof *lst);
	uint32_t *fill = malloc(W * sizeof *fill), *ranks = malloc(W * sizeof *ranks);
	int rc = -1;
	uint64_t work = 0;   /* candidate pairs looked at, bounded so time is too */
	if (!start || !lst || !fill || !ranks)
		goto out;
	for (; *moves < PACK_REFINE_MAX && work < PACK_REFINE_WORK; (*moves)++) {
		uint32_t hi = 0;
		double total = 0;
		for (uint32_t r = 0; r < W; r++) {
			total += rc_[r];
			if (rc_[r] > rc_[hi])
				hi = r;
		}
		/* Close enough: further moves would not change a step's time. */
		if (rc_[hi] <= (1 + PACK_REFINE_EPS) * total / W)
			break;
		/* items by rank, ascending index */
		memset(start, 0, (W + 1) * sizeof *start);
		for (uint32_t i = 0; i < n; i++)
			start[rank_of[w->bin_of[i]] + 1]++;
		for (uint32_t r = 0; r < W; r++)
			start[r + 1] += start[r], fill[r] = start[r];
		for (uint32_t i = 0; i < n; i++)
			lst[fill[rank_of[w->bin_of[i]]]++] = i;
		/* partners, cheapest first */
		uint32_t np = 0;
		for (uint32_t r = 0; r < W; r++)
			if (rc_[r] < rc_[hi])
				ranks[np++] = r;
		for (uint32_t x = 1; x < np; x++)
			for (uint32_t y = x; y > 0 && (rc_[ranks[y]] < rc_[ranks[y - 1]] ||
					(rc_[ranks[y]] == rc_[ranks[y - 1]] && ranks[y] < ranks[y - 1])); y--) {
				uint32_t t = ranks[y];
				ranks[y] = ranks[y - 1];
				ranks[y - 1] = t;
			}
		int done = 0;
		for (uint32_t p = 0; p < np && !done && work < PACK_REFINE_WORK; p++) {
			uint32_t lo = ranks[p];
			work += (uint64_t)(start[hi + 1] - start[hi]) * (start[lo + 1] - start[lo] + w->k);
			double D = rc_[hi] - rc_[lo], best = D;   /* |d - D/2| * 2 of the best so far */
			uint32_t bi = NO_CLASS, bj = NO_CLASS, bbin = NO_CLASS;
			/* a move: item i of hi into a bin of lo */
			for (uint32_t x = start[hi]; x < start[hi + 1]; x++) {
				uint32_t i = lst[x], src = w->bin_of[i];
				double d = w->it[i].cost;
				if (w->bin_cnt[src] < 2 || !(d > 0 && d < D) || fabs(2 * d - D) >= best)
					continue;
				for (uint32_t b = 0; b < w->k; b++) {
					if (rank_of[b] != lo || w->bin_cls[b] != w->bin_cls[src] ||
					    w->bin_len[b] + w->it[i].len > w->cap)
						continue;
					best = fabs(2 * d - D), bi = i, bj = NO_CLASS, bbin = b;
					break;
				}
			}
			/* a swap: item i of hi with item j of lo */
			for (uint32_t x = start[hi]; x < start[hi + 1]; x++) {
				uint32_t i = lst[x], bx = w->bin_of[i];
				for (uint32_t y = start[lo]; y < start[lo + 1]; y++) {
					uint32_t j = lst[y], by = w->bin_of[j];
					double d = w->it[i].cost - w->it[j].cost;
					if (!(d > 0 && d < D) || fabs(2 * d - D) >= best ||
					    w->bin_cls[bx] != w->bin_cls[by] ||
					    w->bin_len[bx] - w->it[i].len + w->it[j].len > w->cap ||
					    w->bin_len[by] - w->it[j].len + w->it[i].len > w->cap)
						continue;
					best = fabs(2 * d - D), bi = i, bj = j, bbin = NO_CLASS;
				}
			}
			if (bi == NO_CLASS)
				continue;
			double d = w->it[bi].cost;
			if (bj == NO_CLASS) {
				take(w, bi);
				put(w, bi, bbin);
			} else {
				uint32_t bx = w->bin_of[bi], by = w->bin_of[bj];
				d -= w->it[bj].cost;
				take(w, bi);
				take(w, bj);
				put(w, bi, by);
				put(w, bj, bx);
			}
			rc_[hi] -= d;
			rc_[lo] += d;
			done = 1;
		}
		if (!done)
			break;
	}
	rc = 0;
out:
	free(start), free(lst), free(fill), free(ranks);
	return rc;
}

/* ---- the whole ---- */

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

int pack_items(const struct pack_item *it, uint32_t n, const struct pack_opt *o,
	       struct pack_result *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	if (o->cap == 0 || o->ranks == 0)
		return err_set(e, "pack: capacity and ranks must be positive");
	uint32_t W = o->ranks;
	for (uint32_t i = 0; i < n; i++)
		if (it[i].len == 0 || it[i].len > o->cap)
			return err_set(e, "pack: item %u has %u tokens, capacity %u", i, it[i].len, o->cap);

	struct work w = { .it = it, .n = n, .cap = o->cap };
	uint32_t ncls = 0;
	for (uint32_t i = 0; i < n; i++)
		if (o->separate && it[i].cls + 1 > ncls)
			ncls = it[i].cls + 1;
	if (ncls == 0)
		ncls = 1;
	uint64_t *tok = calloc(ncls, sizeof *tok);
	uint32_t *cnt = calloc(ncls, sizeof *cnt), *want = calloc(ncls, sizeof *want);
	uint32_t *order = malloc((n ? n : 1) * sizeof *order), *cstart = calloc(ncls + 1, sizeof *cstart);
	uint32_t *bins = NULL, *scratch = NULL, *rank_of = NULL, *ffdn = NULL, *tree = NULL;
	w.bin_of = malloc((n ? n : 1) * sizeof *w.bin_of);
	int rc = -1;
	if (!tok || !cnt || !want || !order || !cstart || !w.bin_of)
		goto oom;

	/* items grouped by class, each class longest first */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = o->separate ? it[i].cls : 0;
		tok[c] += it[i].len;
		cnt[c]++;
	}
	for (uint32_t c = 0; c < ncls; c++)
		cstart[c + 1] = cstart[c] + cnt[c];
	{
		uint32_t *f = calloc(ncls, sizeof *f);
		if (!f)
			goto oom;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t c = o->separate ? it[i].cls : 0;
			order[cstart[c] + f[c]++] = i;
		}
		free(f);
	}
	for (uint32_t c = 0; c < ncls; c++)
		qsort_r(order + cstart[c], cnt[c], sizeof *order, by_len_desc, (void *)it);

	/* bin count: each class's lower bound, the total rounded up to W */
	uint32_t lb = 0;
	for (uint32_t c = 0; c < ncls; c++) {
		want[c] = cnt[c] ? div_up(tok[c], o->cap) : 0;
		lb += want[c];
	}
	r->lower_bound = lb;
	uint32_t k = lb ? div_up(lb, W) * W : W;
	/* Every class needs at most one bin per item, so k never exceeds this. */
	uint32_t kmax = k > div_up(n, W) * W ? k : div_up(n, W) * W;
	bins = malloc(kmax * sizeof *bins);
	scratch = malloc(2 * (size_t)kmax * sizeof *scratch);
	ffdn = malloc(ncls * sizeof *ffdn);
	tree = malloc(2 * (size_t)pow2_at_least(kmax) * sizeof *tree);   /* kmax >= n: every class's items */
	if (grow_bins(&w, kmax) < 0 || !bins || !scratch || !ffdn || !tree)
		goto oom;
	w.k = k;
	for (uint32_t b = 0; b < kmax; b++)
		bins[b] = b;
	/* FFD into m bins succeeds exactly when m >= FFD's own bin count */
	for (uint32_t c = 0; c < ncls; c++)
		ffdn[c] = ffd_count(&w, order + cstart[c], cnt[c], tree);

	for (;;) {
		/* Spare bins go one at a time to the class with the most tokens
		 * per bin, while it has items to put in them. */
		uint32_t used = 0;
		for (uint32_t c = 0; c < ncls; c++)
			used += want[c];
		while (used < w.k) {
			uint32_t best = NO_CLASS;
			for (uint32_t c = 0; c < ncls; c++) {
				if (want[c] >= cnt[c])
					continue;
				if (best == NO_CLASS ||
				    (double)tok[c] * want[best] > (double)tok[best] * want[c])
					best = c;
			}
			if (best == NO_CLASS)
				break;
			want[best]++, used++;
		}
		/* bins b0..b0+want[c]-1 to class c in turn, the rest spare */
		reset_bins(&w, 0, kmax, NO_CLASS);
		uint32_t b0 = 0, grew = 0;
		for (uint32_t c = 0; c < ncls && !grew; c++) {
			const uint32_t *ord = order + cstart[c];
			if (try_class(&w, c, ord, cnt[c], bins + b0, want[c], ffdn[c], scratch, tree) < 0) {
				/* the fewest bins that work: LPT's success is nearly
				 * monotonic in the bin count, FFD's exactly */
				uint32_t lo = want[c] + 1, hi = ffdn[c];
				while (lo < hi) {
					uint32_t mid = lo + (hi - lo) / 2;
					reset_bins(&w, b0, b0 + mid, c);
					if (place_lpt(&w, ord, cnt[c], bins + b0, mid, scratch) == 0)
						hi = mid;
					else
						lo = mid + 1;
				}
				want[c] = lo;
				grew = 1;
			}
			b0 += want[c];
		}
		if (!grew)
			break;
		uint32_t total = 0;
		for (uint32_t c = 0; c < ncls; c++)
			total += want[c];
		if (div_up(total, W) * W > w.k)
			w.k = div_up(total, W) * W;
	}
	k = w.k;

	/* ranks */
	rank_of = malloc(k * sizeof *rank_of);
	r->rank_cost = calloc(W, sizeof *r->rank_cost);
	r->rank_tokens = calloc(W, sizeof *r->rank_tokens);
	if (!rank_of || !r->rank_cost || !r->rank_tokens)
		goto oom;
	for (uint32_t b = 0; b < k; b++)
		if (w.bin_cnt[b] == 0)
			w.bin_cost[b] = o->dummy_cost;
	if (kk_partition(w.bin_cost, k, W, rank_of) < 0)
		goto oom;
	for (uint32_t b = 0; b < k; b++)
		r->rank_cost[rank_of[b]] += w.bin_cost[b];
	if (W > 1 && refine(&w, rank_of, W, r->rank_cost, &r->refine_moves) < 0)
		goto oom;

	/* renumber: rank-major, costliest micro-batch first within a rank */
	r->n_items = n;
	r->k = k;
	r->per_rank = k / W;
	r->bin_start = calloc(k + 1, sizeof *r->bin_start);
	r->items = malloc((n ? n : 1) * sizeof *r->items);
	r->bin_len = malloc(k * sizeof *r->bin_len);
	r->bin_cost = malloc(k * sizeof *r->bin_cost);
	uint32_t *newid = malloc(k * sizeof *newid);
	if (!r->bin_start || !r->items || !r->bin_len || !r->bin_cost || !newid) {
		free(newid);
		goto oom;
	}
	for (uint32_t b = 0; b < k; b++)
		bins[b] = b;
	/* sort by (rank, cost desc, index): reuse scratch as keys via insertion into rank lists */
	{
		uint32_t *pos = calloc(W, sizeof *pos);
		if (!pos) {
			free(newid);
			goto oom;
		}
		qsort_r(bins, k, sizeof *bins, bins_by_cost, w.bin_cost);    /* ascending cost */
		for (uint32_t x = k; x-- > 0;) {
			uint32_t b = bins[x], rk = rank_of[b];
			newid[b] = rk * r->per_rank + pos[rk]++;
		}
		free(pos);
	}
	for (uint32_t b = 0; b < k; b++) {
		uint32_t nb = newid[b];
		r->bin_len[nb] = w.bin_len[b];
		r->bin_cost[nb] = w.bin_cnt[b] ? w.bin_cost[b] : o->dummy_cost;
		r->bin_start[nb + 1] = w.bin_cnt[b];
		if (w.bin_cnt[b] == 0)
			r->dummies++;
	}
	for (uint32_t b = 0; b < k; b++)
		r->bin_start[b + 1] += r->bin_start[b];
	memcpy(scratch, r->bin_start, k * sizeof *scratch);
	for (uint32_t i = 0; i < n; i++)   /* ascending i: items ascend within a bin */
		r->items[scratch[newid[w.bin_of[i]]]++] = i;
	for (uint32_t b = 0; b < k; b++) {
		r->rank_tokens[b / r->per_rank] += r->bin_len[b];
	}
	for (uint32_t q = 0; q < W; q++)
		r->rank_cost[q] = 0;
	for (uint32_t b = 0; b < k; b++)
		r->rank_cost[b / r->per_rank] += r->bin_cost[b];
	free(newid);
	rc = 0;
	goto out;
oom:
	err_set(e, "pack: out of memory");
	pack_result_free(r);
out:
	free(tok), free(cnt), free(want), free(order), free(cstart), free(bins), free(scratch), free(ffdn), free(tree);
	free(rank_of), free(w.bin_of), free(w.bin_len), free(w.bin_cnt), free(w.bin_cls), free(w.bin_cost);
	return rc;
}

void pack_result_free(struct pack_result *r)
{
	free(r->bin_start), free(r->items), free(r->bin_len), free(r->bin_cost);
	free(r->rank_tokens), free(r->rank_cost);
	memset(r, 0, sizeof *r);
}

double pack_balance(const struct pack_result *r)
{
	uint32_t W = r->per_rank ? r->k / r->per_rank : 0;
	if (W == 0)
		return 1;
	double mx = 0, sum = 0;
	for (uint32_t q = 0; q < W; q++) {
		sum += r->rank_cost[q];
		mx = r->rank_cost[q] > mx ? r->rank_cost[q] : mx;
	}
	return sum > 0 ? mx / (sum / W) : 1;
}

static int ffd_cmp(const void *pa, const void *pb, void *arg)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	const uint32_t *ffd_len = arg;
	if (ffd_len[a] != ffd_len[b])
		return ffd_len[a] > ffd_len[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

uint32_t pack_ffd_bins(const uint32_t *len, uint32_t n, uint32_t cap, uint32_t *bin_of)
{
	uint32_t *ord = malloc((n ? n : 1) * sizeof *ord), *room = malloc((n ? n : 1) * sizeof *room);
	uint32_t nb = 0;
	if (!ord || !room) {
		free(ord), free(room);
		return 0;
	}
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	qsort_r(ord, n, sizeof *ord, ffd_cmp, (void *)len);
	for (uint32_t x = 0; x < n; x++) {
		uint32_t i = ord[x], b = 0;
		while (b < nb && room[b] < len[i])
			b++;
		if (b == nb)
			room[nb++] = cap;
		room[b] -= len[i] < room[b] ? len[i] : room[b];
		if (bin_of)
			bin_of[i] = b;
	}
	free(ord), free(room);
	return nb;
}

double pack_cost_of(const struct pack_cost *c, uint32_t n)
{
	return c->a * n + c->b * (double)n * n;
}

static int cfg_int(const cJSON *j, const char *key, long *out, int required, const char *name,
		   struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return err_set(e, "%s: no %s", name, key);
		*out = -1;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 ||
	    v->valuedouble != floor(v->valuedouble))
		return err_set(e, "%s: %s is not a positive integer", name, key);
	*out = (long)v->valuedouble;
	return 0;
}

int pack_cost_from_config(const char *json, size_t len, const char *name, struct pack_cost *c,
			  struct err *e)
{
	cJSON *j = json_parse_n(json, len, NULL);
	if (!j && errno == ENOMEM)
		return err_sys(e, "%s", name);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return err_set(e, "%s: not a JSON object", name);
	}
	/* Multimodal configs keep the language model's shape in text_config. */
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text_config");
	const cJSON *s = cJSON_IsObject(t) ? t : j;
	long C, I, L, NH, NKV, HS, V;
	int rc = -1;
	if (cfg_int(s, "hidden_size", &C, 1, name, e) < 0 ||
	    cfg_int(s, "intermediate_size", &I, 1, name, e) < 0 ||
	    cfg_int(s, "num_hidden_layers", &L, 1, name, e) < 0 ||
	    cfg_int(s, "num_attention_heads", &NH, 1, name, e) < 0 ||
	    cfg_int(s, "num_key_value_heads", &NKV, 0, name, e) < 0 ||
	    cfg_int(s, "head_dim", &HS, 0, name, e) < 0 ||
	    cfg_int(s, "vocab_size", &V, 1, name, e) < 0)
		goto out;
	if (NKV < 0)
		NKV = NH;
	if (HS < 0)
		HS = C / NH;
	if (HS < 1) {   /* attention would cost nothing, and cost(n) would lose its n^2 */
		err_set(e, "%s: hidden_size %ld over %ld attention heads leaves no head size", name, C, NH);
		goto out;
	}
	/* Mixture of experts: a token goes through topk experts (and the shared
	 * ones) in the sparse layers; some layers may stay dense. */
	long topk, Ie, Ish, nsh, kdense, sstep;
	if (cfg_int(s, "num_experts_per_tok", &topk, 0, name, e) < 0 ||
	    cfg_int(s, "moe_intermediate_size", &Ie, 0, name, e) < 0 ||
	    cfg_int(s, "shared_expert_intermediate_size", &Ish, 0, name, e) < 0 ||
	    cfg_int(s, "n_shared_experts", &nsh, 0, name, e) < 0 ||
	    cfg_int(s, "first_k_dense_replace", &kdense, 0, name, e) < 0 ||
	    cfg_int(s, "decoder_sparse_step", &sstep, 0, name, e) < 0)
		goto out;
	const cJSON *dense_list = cJSON_GetObjectItemCaseSensitive(s, "mlp_only_layers");
	if (!cJSON_IsArray(dense_list))
		dense_list = NULL;
	double ffn = (double)I * L;   /* sum over layers of the MLP width a token sees */
	if (topk > 0) {
		if (Ie < 0)
			Ie = I;   /* Mixtral: intermediate_size is the expert's */
		double moe = (double)Ie * topk + (Ish > 0 ? (double)Ish : nsh > 0 ? (double)nsh * Ie : 0.0);
		ffn = 0;
		for (long l = 0; l < L; l++) {
			int dense = (kdense > 0 && l < kdense) || (sstep > 1 && (l + 1) % sstep != 0);
			const cJSON *x;
			cJSON_ArrayForEach(x, dense_list)
				dense |= cJSON_IsNumber(x) && (long)x->valuedouble == l;
			ffn += dense ? (double)I : moe;
		}
	}
	c->a = (double)L * (2.0 * C * (NH + 2.0 * NKV) * HS + 2.0 * NH * HS * C) + 6.0 * C * ffn +
	       2.0 * C * V;
	c->b = 2.0 * L * NH * HS;
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

int pack_fill_cut(const struct pack_item *it, uint32_t n, const uint32_t *unit_of, uint32_t n_units,
		  const struct pack_opt *o, double F, uint8_t *keep, struct err *e)
{
	memset(keep, 1, n_units);
	uint64_t S = 0, T = o->cap, W = o->ranks;
	uint64_t *ut = calloc(n_units ? n_units : 1, sizeof *ut);
	if (!ut)
		return err_set(e, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		ut[unit_of[i]] += it[i].len;
		S += it[i].len;
	}
	uint64_t kb = ((S + T - 1) / T + W - 1) / W * W;
	uint64_t m = (uint64_t)((double)S / (F * (double)T * (double)W));
	if (S == 0 || (double)S >= F * (double)kb * (double)T || m == 0) {
		free(ut);
		return (int)n_units;
	}
	uint32_t k = (uint32_t)(m * W);
	struct pack_item *sub = malloc((n ? n : 1) * sizeof *sub);
	int kept = -1;
	if (!sub) {
		free(ut);
		return err_set(e, "out of memory");
	}
	/* The budget shrinks by T/32 per try: a few tries at most in practice,
	 * and the last one stands whatever it packs into. */
	uint64_t budget = (uint64_t)k * T;
	for (int tries = 0;; tries++) {
		uint64_t acc = 0;
		kept = 0;
		for (uint32_t u = 0; u < n_units; u++) {
			keep[u] = acc + ut[u] <= budget;
			if (keep[u]) {
				acc += ut[u];
				kept++;
			}
		}
		uint32_t ns = 0;
		for (uint32_t i = 0; i < n; i++)
			if (keep[unit_of[i]])
				sub[ns++] = it[i];
		struct pack_result r;
		if (pack_items(sub, ns, o, &r, e) < 0) {
			kept = -1;
			break;
		}
		uint32_t got = r.k;
		pack_result_free(&r);
		if (got <= k || tries == 32 || acc == 0) {
			/* Coarse units (whole groups) can leave the kept ones emptier
			 * than everything would be: then carrying is no use. */
			if ((double)acc * kb < (double)S * got) {
				memset(keep, 1, n_units);
				kept = (int)n_units;
			}
			break;
		}
		budget = acc - 1 - (T / 32 < acc - 1 ? T / 32 : acc - 1);
	}
	free(sub), free(ut);
	return kept;
}

int64_t pack_select(const struct pack_unit *u, uint32_t n, uint32_t n_runs, uint64_t max_seqs,
		     uint64_t max_tokens, uint32_t *turn, uint8_t *taken)
{
	if (n_runs == 0)
		return 0;
	uint32_t *next = malloc(n_runs * sizeof *next);   /* each run's next unit, n when none */
	uint8_t *done = calloc(n_runs, 1);
	uint32_t chosen = 0;
	if (!next || !done) {
		free(next), free(done);
		return -1;
	}
	for (uint32_t q = 0; q < n_runs; q++)
		next[q] = n;
	for (uint32_t i = n; i-- > 0;)
		if (!taken[i] && u[i].run < n_runs)
			next[u[i].run] = i;
	uint64_t seqs = 0, toks = 0;
	uint32_t q = *turn % n_runs, idle = 0;
	while (idle < n_runs) {
		uint32_t i = next[q];
		if (done[q] || i == n) {
			idle++;
		} else if (chosen > 0 && ((max_seqs && seqs + u[i].seqs > max_seqs) ||
					  (max_tokens && toks + u[i].tokens > max_tokens))) {
			done[q] = 1;
			idle++;
		} else {
			taken[i] = 1;
			chosen++;
			seqs += u[i].seqs;
			toks += u[i].tokens;
			uint32_t j = i + 1;
			while (j < n && (taken[j] || u[j].run != q))
				j++;
			next[q] = j;
			idle = 0;
			*turn = (q + 1) % n_runs;
			if ((max_seqs && seqs >= max_seqs) || (max_tokens && toks >= max_tokens))
				break;
		}
		q = (q + 1) % n_runs;
	}
	free(next), free(done);
	return chosen;
}
