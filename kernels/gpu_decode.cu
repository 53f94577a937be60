// gpu_decode.cu: see gpu_decode.h. The host side of generation: the cache's
// blocks and who holds them, the groups waiting, prefilled and decoding, and
// the per-step arrays; the device side is gpu_model.cu's layers with a
// kv_pass, paged.cuh's cache kernels and sample.cuh's sampler.
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_decode.h"
#include "gpu_model_impl.cuh"
#include "paged.cuh"
#include "sample.cuh"

// ---- two small kernels: copy cache blocks, gather rows ----

// pairs (npairs, 2): block src's contents to block dst, in every layer's K and V
__global__ void copy_blocks_kernel(uint32_t *cache, size_t layer_words, size_t block_words, int L,
				   const int32_t *pairs)
{
	int pair = blockIdx.x, l = blockIdx.y % L, kv = blockIdx.y / L;
	uint32_t *c = cache + ((size_t)kv * L + l) * layer_words;
	const uint32_t *src = c + (size_t)pairs[2 * pair] * block_words;
	uint32_t *dst = c + (size_t)pairs[2 * pair + 1] * block_words;
	for (size_t i = threadIdx.x; i < block_words; i += blockDim.x)
		dst[i] = src[i];
}

// out row i = in row rows[i], rows of `width` 16-bit words
__global__ void gather_rows_kernel(uint16_t *out, const uint16_t *in, const int32_t *rows, int width)
{
	const uint16_t *src = in + (size_t)rows[blockIdx.x] * width;
	uint16_t *dst = out + (size_t)blockIdx.x * width;
	for (int i = threadIdx.x; i < width; i += blockDim.x)
		dst[i] = src[i];
}

// ---- the state of one gpu_generate call ----

// Sequences that start from the same tokens: a prompt's samples, or one
// sequence taken out of the batch to free blocks and started again from its
// prompt and the tokens it had.
struct group {
	const int32_t *tokens;
	int32_t *owned;         // tokens, when this call made them (a restart)
	int first, k, len;      // its sequences first .. first + k - 1; len tokens
	int nshared;            // whole blocks of its tokens, shared by its sequences
	int32_t *shared;
	int live;               // sequences not finished or taken out
};

struct seq {
	int group;
	int npriv;              // blocks of its own: the group's partial block, then what it writes
	int32_t *priv;          // (MB)
	int pos;                // the position its last sampled token takes when fed
};

// The arrays a step uploads (one pinned block, one device block, same layout).
struct step_arrays {
	int32_t *ids, *pos, *slots, *ctx, *draws, *rows, *pairs, *table;
	uint64_t *states;
};

struct dec {
	struct gpu_model *g;
	const struct gpu_gen_params *p;
	const int32_t *const *prompts;
	const int *lens;
	const uint64_t *states;
	struct gpu_gen_seq *out;
	struct gpu_gen_stats *stats;
	int V, C, Bmax, MB;          // MB: the block table's row stride, blocks per sequence at most

	struct group *groups;
	int ngroups, cap_groups;
	int nfresh, next;            // the prompts' groups (the first nfresh), the first not started
	struct seq *seqs;
	int *active, nactive;        // sequences decoding, in the order they joined
	int *restarts, nrestarts;    // groups of sequences taken out, to start again first

	size_t block_words, layer_words;   // one block and one layer of K (or V), in 32-bit words
	int nblocks, nfree;
	int32_t *free_blocks;
	void *cache;                 // (2, L, nblocks, NKV, KV_BLOCK, HS) act: K then V
	void *dmem;                  // the step arrays, hidden rows, logits, outputs
	struct step_arrays d, h;     // device and pinned host
	char *hmem;
	void *hidden;                // (Bmax, C) act: the prefill's rows that sample
	float *work;                 // the paged attention's partial results
	float *logits;               // (Bmax, V)
	int32_t *d_tokens, *h_tokens;
	float *d_lp, *h_lp;
	cudaGraphExec_t *graphs;     // by batch size and context partitions, made on first use
	int parts;                   // partitions of PAGED_PART positions a context may need
	int use_graphs;
};

static struct step_arrays carve_arrays(struct carve *c, int Bmax, int MB, int maxT)
{
	struct step_arrays a;
	a.ids = (int32_t *)carve(c, (size_t)maxT * 4);
	a.pos = (int32_t *)carve(c, (size_t)maxT * 4);
	a.slots = (int32_t *)carve(c, (size_t)maxT * 4);
	a.ctx = (int32_t *)carve(c, (size_t)Bmax * 4);
	a.draws = (int32_t *)carve(c, (size_t)Bmax * 4);
	a.rows = (int32_t *)carve(c, (size_t)Bmax * 4);
	a.pairs = (int32_t *)carve(c, (size_t)Bmax * 8);
	a.table = (int32_t *)carve(c, (size_t)Bmax * MB * 4);
	a.states = (uint64_t *)carve(c, (size_t)Bmax * 8);
	return a;
}

// The batch size a step of B rows runs at: few sizes, so few graphs.
static int bucket(int B, int Bmax)
{
	int b = 1;
	if (B <= 16)
		while (b < B)
			b *= 2;
	else
		b = (B + (B <= 256 ? 31 : 63)) / (B <= 256 ? 32 : 64) * (B <= 256 ? 32 : 64);
	return b < Bmax ? b : Bmax;
}

// ---- the cache's blocks ----

static int block_of(const struct group *gr, const struct seq *s, int pos)
{
	int i = pos / KV_BLOCK;
	return i < gr->nshared ? gr->shared[i] : s->priv[i - gr->nshared];
}

static int blocks_for(long long positions)
{
	return (int)((positions + KV_BLOCK - 1) / KV_BLOCK);
}

// Blocks a group takes to start: its whole blocks, and for each sequence
// the rest of its tokens and the first position it writes when decoding.
static int start_blocks(const struct group *gr)
{
	return gr->len / KV_BLOCK + gr->k * (blocks_for(gr->len + 1) - gr->len / KV_BLOCK);
}

static int32_t take_block(struct dec *d)
{
	int32_t b = d->free_blocks[--d->nfree];
	long long used = d->nblocks - d->nfree;
	if (used > d->stats->peak_blocks)
		d->stats->peak_blocks = used;
	return b;
}

static void give_blocks(struct dec *d, const int32_t *in, int n)
{
	for (int i = 0; i < n; i++)
		d->free_blocks[d->nfree++] = in[i];
}

// Sequence b leaves the batch: its blocks go back, and its group's shared
// ones with the group's last.
static void release(struct dec *d, int b)
{
	struct seq *s = &d->seqs[b];
	struct group *gr = &d->groups[s->group];
	give_blocks(d, s->priv, s->npriv);
	s->npriv = 0;
	if (--gr->live == 0) {
		give_blocks(d, gr->shared, gr->nshared);
		gr->nshared = 0;
	}
}

static int is_stop(const struct gpu_gen_params *p, int tok)
{
	for (int i = 0; i < p->n_stop; i++)
		if (p->stop_ids[i] == tok)
			return 1;
	return 0;
}

// Record sequence b's next token; 1 when that finished it (blocks released).
static int push(struct dec *d, int b, int tok, float lp)
{
	struct gpu_gen_seq *o = &d->out[b];
	o->tokens[o->n] = tok;
	o->logprobs[o->n] = lp;
	o->n++;
	d->stats->generated++;
	o->stopped = is_stop(d->p, tok) || (d->p->stop_after && d->p->stop_after(d->p->stop_ctx, o->tokens, o->n));
	if (!o->stopped && o->n < d->p->max_tokens)
		return 0;
	release(d, b);
	return 1;
}

static struct group *new_group(struct dec *d)
{
	if (d->ngroups == d->cap_groups) {
		int cap = d->cap_groups * 2;
		struct group *g = (struct group *)realloc(d->groups, (size_t)cap * sizeof *g);
		if (!g)
			return NULL;
		d->groups = g;
		d->cap_groups = cap;
	}
	struct group *gr = &d->groups[d->ngroups++];
	memset(gr, 0, sizeof *gr);
	return gr;
}

// Take sequence b out of the batch to free its blocks: it starts again later
// from its prompt and the tokens it has, as a group of its own (its next
// token is then its draw n as it would have been: the same token, up to the
// rounding of a prefill against decode steps).
static int take_out(struct dec *d, int b, char *msg, size_t msglen)
{
	const struct gpu_gen_seq *o = &d->out[b];
	int len = d->lens[b] + o->n;
	if (len > d->g->maxT)
		return gpu_fail(msg, msglen, "the KV cache is too small: a sequence of %d tokens would have to start "
				"again in a pass of at most %d", len, d->g->maxT);
	int32_t *tokens = (int32_t *)malloc((size_t)len * sizeof *tokens);
	struct group *gr = tokens ? new_group(d) : NULL;
	if (!gr) {
		free(tokens);
		return gpu_fail(msg, msglen, "out of host memory");
	}
	memcpy(tokens, d->prompts[b], (size_t)d->lens[b] * sizeof *tokens);
	memcpy(tokens + d->lens[b], o->tokens, (size_t)o->n * sizeof *tokens);
	release(d, b);
	gr->tokens = gr->owned = tokens;
	gr->first = b, gr->k = 1, gr->len = len;
	gr->shared = (int32_t *)malloc(((size_t)len / KV_BLOCK + 1) * sizeof *gr->shared);
	if (!gr->shared)
		return gpu_fail(msg, msglen, "out of host memory");
	d->seqs[b].group = (int)(gr - d->groups);
	d->restarts[d->nrestarts++] = d->seqs[b].group;
	d->stats->restarts++;
	return 0;
}

// Every decoding sequence gets the block its next position needs; when none
// is free, the sequence that joined last is taken out (so the oldest always
// go on and finish).
static int grow(struct dec *d, char *msg, size_t msglen)
{
	for (int i = 0; i < d->nactive;) {
		int b = d->active[i];
		struct seq *s = &d->seqs[b];
		if (s->pos / KV_BLOCK < d->groups[s->group].nshared + s->npriv)
			i++;
		else if (d->nfree > 0)
			s->priv[s->npriv++] = take_block(d);
		else if (take_out(d, d->active[--d->nactive], msg, msglen) < 0)
			return -1;
	}
	return 0;
}

// ---- the device work of a step ----

// The LM head over n rows of x into d->logits, then the sampler: rows with
// draws < 0 are padding.
static int head_and_sample(struct dec *d, const void *x, int n, char *msg, size_t msglen)
{
	struct gpu_model *g = d->g;
	const struct gpu_gen_params *p = d->p;
	int l = -1;
	if (matmul(&g->mm, d->logits, 1, x, g->lm_head, g->bf16, n, d->V, d->C, 0.0f, msg, msglen) < 0)
		return -1;
	LAUNCH(launch_sample(d->d_tokens, d->d_lp, d->logits, n, d->V, p->temperature, p->top_p, p->top_k,
			     d->d.states, d->d.draws, g->stream));
	return 0;
}

// The cache for a pass; decoding, the rows' contexts are at most parts partitions long.
static struct kv_pass cache_pass(struct dec *d, int decoding, int parts)
{
	struct gpu_model *g = d->g;
	struct kv_pass kv = { d->cache, (char *)d->cache + (size_t)g->s.L * d->layer_words * 4,
			      d->layer_words * 4 / g->esize, d->d.slots, decoding, d->d.table, d->d.ctx,
			      d->MB, parts * PAGED_PART, d->work };
	return kv;
}

// One decode step over Bp rows whose arrays are on the device.
static int decode_kernels(struct dec *d, int Bp, int parts, char *msg, size_t msglen)
{
	struct kv_pass kv = cache_pass(d, 1, parts);
	if (gpu_forward_layers(d->g, Bp, 0, &kv, msg, msglen) < 0)
		return -1;
	return head_and_sample(d, d->g->ln, Bp, msg, msglen);
}

// Run a decode step of Bp rows with contexts of at most parts partitions:
// through its graph, captured on first use, or kernel by kernel where
// graphs are off or capture failed.
static int decode_launch(struct dec *d, int Bp, int parts, char *msg, size_t msglen)
{
	cudaStream_t st = d->g->stream;
	cudaGraphExec_t *graph = &d->graphs[(size_t)Bp * (d->parts + 1) + parts];
	if (d->use_graphs && !*graph) {
		cudaGraph_t made = NULL;
		CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
		int rc = decode_kernels(d, Bp, parts, msg, msglen);
		cudaError_t end = cudaStreamEndCapture(st, &made);
		if (rc == 0 && end == cudaSuccess && cudaGraphInstantiate(graph, made, 0) == cudaSuccess) {
			d->stats->graphs++;
		} else {   // a library call refused capture: run this call without graphs
			*graph = NULL;
			d->use_graphs = 0;
			(void)cudaGetLastError();
		}
		if (made)
			cudaGraphDestroy(made);
	}
	if (d->use_graphs)
		CUDA_TRY(cudaGraphLaunch(*graph, st));
	else if (decode_kernels(d, Bp, parts, msg, msglen) < 0)
		return -1;
	return 0;
}

static int upload(struct dec *d, const void *dst, const void *src, size_t bytes, char *msg, size_t msglen)
{
	if (bytes)
		CUDA_TRY(cudaMemcpyAsync((void *)dst, src, bytes, cudaMemcpyHostToDevice, d->g->stream));
	return 0;
}

// The first n sampled tokens and logprobs back, the step done.
static int fetch_tokens(struct dec *d, int n, char *msg, size_t msglen)
{
	cudaStream_t st = d->g->stream;
	CUDA_TRY(cudaMemcpyAsync(d->h_tokens, d->d_tokens, (size_t)n * 4, cudaMemcpyDeviceToHost, st));
	CUDA_TRY(cudaMemcpyAsync(d->h_lp, d->d_lp, (size_t)n * 4, cudaMemcpyDeviceToHost, st));
	CUDA_TRY(cudaStreamSynchronize(st));
	return 0;
}

// ---- groups join: the prefill ----

// The groups that join now, into list: restarts first, then new groups in
// order, while there are rows, blocks and room in one pass for them.
static int choose(struct dec *d, int *list)
{
	int n = 0, rows = d->nactive, blocks = d->nfree, T = 0, r = 0;
	for (;;) {
		int q = r < d->nrestarts ? d->restarts[r] : d->next < d->nfresh ? d->next : -1;
		if (q < 0)
			break;
		const struct group *gr = &d->groups[q];
		if (rows + gr->k > d->Bmax || start_blocks(gr) > blocks || T + gr->len > d->g->maxT)
			break;
		rows += gr->k, blocks -= start_blocks(gr), T += gr->len;
		list[n++] = q;
		if (r < d->nrestarts)
			r++;
		else
			d->next++;
	}
	memmove(d->restarts, d->restarts + r, (size_t)(d->nrestarts - r) * sizeof *d->restarts);
	d->nrestarts -= r;
	return n;
}

// One packed pass over the tokens of the groups in list, writing the cache
// (their blocks taken), then each sequence's next token from its group's
// last row; those not finished join the batch.
static int prefill(struct dec *d, const int *list, int nlist, char *msg, size_t msglen)
{
	struct gpu_model *g = d->g;
	struct step_arrays *h = &d->h;
	cudaStream_t st = g->stream;
	int T = 0, n = 0, npairs = 0, ntiles = 0, l = -1;
	for (int i = 0; i < nlist; i++) {
		struct group *gr = &d->groups[list[i]];
		gr->nshared = gr->len / KV_BLOCK;
		for (int j = 0; j < gr->nshared; j++)
			gr->shared[j] = take_block(d);
		int own = blocks_for(gr->len + 1) - gr->nshared;
		struct seq *first = &d->seqs[gr->first];
		for (int j = 0; j < gr->k; j++) {
			int b = gr->first + j;
			struct seq *s = &d->seqs[b];
			for (s->npriv = 0; s->npriv < own; s->npriv++)
				s->priv[s->npriv] = take_block(d);
			s->pos = gr->len;
			if (j > 0 && gr->len % KV_BLOCK) {   // the partial block, copied from the first sequence's
				h->pairs[2 * npairs] = first->priv[0];
				h->pairs[2 * npairs++ + 1] = s->priv[0];
			}
			h->rows[n] = T + gr->len - 1;
			h->states[n] = d->states[b];
			h->draws[n++] = d->out[b].n;
		}
		for (int t = 0; t < gr->len; t++, T++) {
			h->ids[T] = gr->tokens[t];
			h->pos[T] = t;
			h->slots[T] = block_of(gr, first, t) * KV_BLOCK + t % KV_BLOCK;
		}
		for (int q0 = 0; q0 < gr->len; q0 += ATT_TILE_Q) {
			struct att_tile tile = { T - gr->len, gr->len, q0, 0 };
			g->h_tiles[ntiles++] = tile;
		}
		gr->live = gr->k;
	}
	d->stats->prefill_tokens += T;
	if (upload(d, g->ids, h->ids, (size_t)T * 4, msg, msglen) < 0 ||
	    upload(d, g->pos, h->pos, (size_t)T * 4, msg, msglen) < 0 ||
	    upload(d, d->d.slots, h->slots, (size_t)T * 4, msg, msglen) < 0 ||
	    upload(d, g->tiles, g->h_tiles, (size_t)ntiles * sizeof(struct att_tile), msg, msglen) < 0 ||
	    upload(d, d->d.rows, h->rows, (size_t)n * 4, msg, msglen) < 0 ||
	    upload(d, d->d.states, h->states, (size_t)n * 8, msg, msglen) < 0 ||
	    upload(d, d->d.draws, h->draws, (size_t)n * 4, msg, msglen) < 0 ||
	    upload(d, d->d.pairs, h->pairs, (size_t)npairs * 8, msg, msglen) < 0)
		return -1;
	struct kv_pass kv = cache_pass(d, 0, 0);
	if (gpu_forward_layers(g, T, ntiles, &kv, msg, msglen) < 0)
		return -1;
	if (npairs) {
		copy_blocks_kernel<<<dim3(npairs, 2 * g->s.L), 256, 0, st>>>((uint32_t *)d->cache, d->layer_words,
									 d->block_words, g->s.L, d->d.pairs);
		LAUNCH(cudaGetLastError());
	}
	gather_rows_kernel<<<n, 256, 0, st>>>((uint16_t *)d->hidden, (const uint16_t *)g->ln, d->d.rows,
					      (int)(d->C * g->esize / 2));
	LAUNCH(cudaGetLastError());
	if (head_and_sample(d, d->hidden, n, msg, msglen) < 0 || fetch_tokens(d, n, msg, msglen) < 0)
		return -1;
	for (int i = 0, row = 0; i < nlist; i++) {
		const struct group *gr = &d->groups[list[i]];
		for (int j = 0; j < gr->k; j++, row++)
			if (!push(d, gr->first + j, d->h_tokens[row], d->h_lp[row]))
				d->active[d->nactive++] = gr->first + j;
	}
	return 0;
}

// ---- a decode step ----

static int decode_step(struct dec *d, char *msg, size_t msglen)
{
	struct gpu_model *g = d->g;
	struct step_arrays *h = &d->h;
	int B = d->nactive, Bp = bucket(B, d->Bmax), longest = 0;
	for (int i = 0; i < Bp; i++) {
		if (i >= B) {   // padding: nothing written, nothing drawn
			h->ids[i] = 0, h->pos[i] = 0, h->slots[i] = -1, h->ctx[i] = 0, h->draws[i] = -1;
			h->states[i] = 0;
			continue;
		}
		int b = d->active[i];
		const struct seq *s = &d->seqs[b];
		const struct group *gr = &d->groups[s->group];
		h->ids[i] = d->out[b].tokens[d->out[b].n - 1];
		h->pos[i] = s->pos;
		h->slots[i] = block_of(gr, s, s->pos) * KV_BLOCK + s->pos % KV_BLOCK;
		h->ctx[i] = s->pos + 1;
		longest = s->pos + 1 > longest ? s->pos + 1 : longest;
		h->draws[i] = d->out[b].n;
		h->states[i] = d->states[b];
		for (int j = 0; j <= s->pos / KV_BLOCK; j++)
			h->table[(size_t)i * d->MB + j] = block_of(gr, s, j * KV_BLOCK);
	}
	// whole rows of the table go up: a row's entries past its context are never read
	if (upload(d, g->ids, h->ids, (size_t)Bp * 4, msg, msglen) < 0 ||
	    upload(d, g->pos, h->pos, (size_t)Bp * 4, msg, msglen) < 0 ||
	    upload(d, d->d.slots, h->slots, (size_t)Bp * 4, msg, msglen) < 0 ||
	    upload(d, d->d.ctx, h->ctx, (size_t)Bp * 4, msg, msglen) < 0 ||
	    upload(d, d->d.draws, h->draws, (size_t)Bp * 4, msg, msglen) < 0 ||
	    upload(d, d->d.states, h->states, (size_t)Bp * 8, msg, msglen) < 0 ||
	    upload(d, d->d.table, h->table, (size_t)Bp * d->MB * 4, msg, msglen) < 0 ||
	    decode_launch(d, Bp, (longest + PAGED_PART - 1) / PAGED_PART, msg, msglen) < 0 ||
	    fetch_tokens(d, B, msg, msglen) < 0)
		return -1;
	d->stats->decode_steps++;
	if (B > d->stats->peak_batch)
		d->stats->peak_batch = B;
	int kept = 0;
	for (int i = 0; i < B; i++) {
		int b = d->active[i];
		d->seqs[b].pos++;
		if (!push(d, b, d->h_tokens[i], d->h_lp[i]))
			d->active[kept++] = b;
	}
	d->nactive = kept;
	return 0;
}

// ---- the call ----

static int check_args(struct gpu_model *g, const int32_t *const *prompts, const int *lens, int B,
		      const struct gpu_gen_params *p, char *msg, size_t msglen)
{
	if (B < 1 || p->max_tokens < 1)
		return gpu_fail(msg, msglen, "need at least one sequence and max_tokens >= 1");
	if (!(p->temperature >= 0) || !(p->top_p > 0 && p->top_p <= 1) || p->top_k < 0)
		return gpu_fail(msg, msglen, "temperature must be >= 0, top_p in (0, 1], top_k >= 0");
	for (int b = 0; b < B; b++) {
		if (lens[b] < 1 || (long long)lens[b] + p->max_tokens > g->maxT)
			return gpu_fail(msg, msglen, "prompt %d: %d tokens and %d to generate, but the GPU model takes "
					"at most %d in all", b, lens[b], p->max_tokens, g->maxT);
		if ((long long)lens[b] + p->max_tokens > g->max_pos)
			return gpu_fail(msg, msglen, "prompt %d: %d tokens and %d to generate pass the %d positions "
					"the GPU model was made for", b, lens[b], p->max_tokens, g->max_pos);
		for (int t = 0; t < lens[b]; t++)
			if (prompts[b][t] < 0 || prompts[b][t] >= g->s.V)
				return gpu_fail(msg, msglen, "prompt %d, token %d: id %d outside the vocabulary of %d", b, t,
						prompts[b][t], g->s.V);
	}
	return 0;
}

// Groups: runs of the same prompt, at most Bmax sequences each.
static int make_groups(struct dec *d, int B, char *msg, size_t msglen)
{
	for (int b = 0; b < B; b++) {
		struct group *last = d->ngroups ? &d->groups[d->ngroups - 1] : NULL;
		if (last && d->lens[b] == last->len && last->k < d->Bmax &&
		    (d->prompts[b] == last->tokens ||
		     memcmp(d->prompts[b], last->tokens, (size_t)d->lens[b] * sizeof(int32_t)) == 0)) {
			last->k++;
		} else {
			struct group *gr = new_group(d);
			if (!gr || !(gr->shared = (int32_t *)malloc(((size_t)d->lens[b] / KV_BLOCK + 1) * 4)))
				return gpu_fail(msg, msglen, "out of host memory");
			gr->tokens = d->prompts[b];
			gr->first = b, gr->k = 1, gr->len = d->lens[b];
		}
		d->seqs[b].group = d->ngroups - 1;
		if (!(d->seqs[b].priv = (int32_t *)malloc((size_t)d->MB * sizeof(int32_t))))
			return gpu_fail(msg, msglen, "out of host memory");
	}
	d->stats->groups = d->nfresh = d->ngroups;
	return 0;
}

// The cache: as many blocks as every group would need at once to its last
// token, within 90% of the free device memory (or p->cache_bytes); at least
// what the largest group needs to start and the longest sequence to finish.
static int make_cache(struct dec *d, char *msg, size_t msglen)
{
	struct gpu_model *g = d->g;
	const struct gpu_model_shape *s = &g->s;
	d->block_words = (size_t)s->NKV * KV_BLOCK * s->HS * g->esize / 4;
	long long all = 0, least = 0;
	for (int q = 0; q < d->ngroups; q++) {
		const struct group *gr = &d->groups[q];
		int whole = gr->len / KV_BLOCK, last = blocks_for(gr->len + d->p->max_tokens - 1);
		all += whole + (long long)gr->k * (last - whole);
		least = start_blocks(gr) > least ? start_blocks(gr) : least;
		least = last > least ? last : least;
	}
	size_t block_bytes = 2 * (size_t)s->L * d->block_words * 4, freeb = 0, total = 0;
	CUDA_TRY(cudaMemGetInfo(&freeb, &total));
	size_t budget = d->p->cache_bytes;
	if (!budget) {
		size_t other = (size_t)d->Bmax * d->V * 4 + ((size_t)512 << 20);   // logits and the rest, roughly
		budget = freeb > other ? (size_t)((freeb - other) * 0.9) : 0;
		if ((size_t)all * block_bytes < budget)
			budget = (size_t)all * block_bytes;
	}
	d->nblocks = (int)(budget / block_bytes < INT32_MAX ? budget / block_bytes : INT32_MAX);
	if (d->nblocks < least)
		return gpu_fail(msg, msglen, "a KV cache of %.0f MiB (%d blocks of %zu bytes) cannot hold the %lld "
				"blocks one sequence or group needs", budget / 1048576.0, d->nblocks, block_bytes, least);
	d->layer_words = (size_t)d->nblocks * d->block_words;
	d->stats->blocks = d->nblocks;
	d->stats->cache_bytes = (size_t)d->nblocks * block_bytes;
	cudaError_t err = cudaMalloc(&d->cache, d->stats->cache_bytes);
	if (err != cudaSuccess) {
		d->cache = NULL;
		return gpu_fail(msg, msglen, "cudaMalloc of a %.0f MiB KV cache: %s", d->stats->cache_bytes / 1048576.0,
				cudaGetErrorString(err));
	}
	if (!(d->free_blocks = (int32_t *)malloc((size_t)d->nblocks * sizeof *d->free_blocks)))
		return gpu_fail(msg, msglen, "out of host memory");
	for (int i = 0; i < d->nblocks; i++)   // taken from the end: block 0 first
		d->free_blocks[i] = d->nblocks - 1 - i;
	d->nfree = d->nblocks;
	return 0;
}

// The step arrays (pinned and on the device), rows, logits and outputs.
static int make_buffers(struct dec *d, char *msg, size_t msglen)
{
	struct gpu_model *g = d->g;
	size_t es = g->esize, work = paged_attention_workspace_bytes(d->Bmax, g->s.NH, g->s.HS, g->max_pos);
	struct carve c = { NULL, 0 };
	carve_arrays(&c, d->Bmax, d->MB, g->maxT);
	carve(&c, (size_t)d->Bmax * 4);
	carve(&c, (size_t)d->Bmax * 4);
	cudaError_t err = cudaHostAlloc((void **)&d->hmem, c.off, cudaHostAllocDefault);
	if (err != cudaSuccess) {
		d->hmem = NULL;
		return gpu_fail(msg, msglen, "cudaHostAlloc: %s", cudaGetErrorString(err));
	}
	c.base = d->hmem;
	c.off = 0;
	d->h = carve_arrays(&c, d->Bmax, d->MB, g->maxT);
	d->h_tokens = (int32_t *)carve(&c, (size_t)d->Bmax * 4);
	d->h_lp = (float *)carve(&c, (size_t)d->Bmax * 4);

	struct carve dc = { NULL, 0 };
	for (int pass = 0; pass < 2; pass++) {
		d->d = carve_arrays(&dc, d->Bmax, d->MB, g->maxT);
		d->hidden = carve(&dc, (size_t)d->Bmax * g->s.C * es);
		d->work = (float *)carve(&dc, work);
		d->logits = (float *)carve(&dc, (size_t)d->Bmax * d->V * 4);
		d->d_tokens = (int32_t *)carve(&dc, (size_t)d->Bmax * 4);
		d->d_lp = (float *)carve(&dc, (size_t)d->Bmax * 4);
		if (pass == 0) {
			if ((err = cudaMalloc(&d->dmem, dc.off)) != cudaSuccess) {
				d->dmem = NULL;
				return gpu_fail(msg, msglen, "cudaMalloc of %.0f MiB for the decode steps: %s",
						dc.off / 1048576.0, cudaGetErrorString(err));
			}
			dc.base = (char *)d->dmem;
			dc.off = 0;
		}
	}
	d->parts = (g->max_pos + PAGED_PART - 1) / PAGED_PART;
	if (!(d->graphs = (cudaGraphExec_t *)calloc((size_t)(d->Bmax + 1) * (d->parts + 1), sizeof *d->graphs)))
		return gpu_fail(msg, msglen, "out of host memory");
	d->use_graphs = !d->p->no_graphs;
	return 0;
}

static void dec_free(struct dec *d, int B)
{
	for (size_t i = 0; d->graphs && i < (size_t)(d->Bmax + 1) * (d->parts + 1); i++)
		if (d->graphs[i])
			cudaGraphExecDestroy(d->graphs[i]);
	free(d->graphs);
	cudaFree(d->cache);
	cudaFree(d->dmem);
	cudaFreeHost(d->hmem);
	free(d->free_blocks);
	for (int q = 0; q < d->ngroups; q++) {
		free(d->groups[q].shared);
		free(d->groups[q].owned);
	}
	for (int b = 0; d->seqs && b < B; b++)
		free(d->seqs[b].priv);
	free(d->groups);
	free(d->seqs);
	free(d->active);
	free(d->restarts);
}

int gpu_generate(struct gpu_model *g, const int32_t *const *prompts, const int *lens, int B, const uint64_t *states,
		 const struct gpu_gen_params *p, struct gpu_gen_seq *out, struct gpu_gen_stats *stats, char *msg,
		 size_t msglen)
{
	if (check_args(g, prompts, lens, B, p, msg, msglen) < 0)
		return -1;
	memset(stats, 0, sizeof *stats);
	for (int b = 0; b < B; b++)
		out[b].n = out[b].stopped = 0;
	struct dec d;
	memset(&d, 0, sizeof d);
	d.g = g, d.p = p, d.prompts = prompts, d.lens = lens, d.states = states, d.out = out, d.stats = stats;
	d.V = g->s.V, d.C = g->s.C;
	d.MB = blocks_for(g->max_pos);
	d.Bmax = p->max_batch > 0 ? p->max_batch : GPU_DECODE_MAX_BATCH;
	d.Bmax = d.Bmax < B ? d.Bmax : B;
	d.Bmax = d.Bmax < g->maxT ? d.Bmax : g->maxT;
	d.cap_groups = B + 16;
	d.groups = (struct group *)calloc((size_t)d.cap_groups, sizeof *d.groups);
	d.seqs = (struct seq *)calloc((size_t)B, sizeof *d.seqs);
	d.active = (int *)malloc((size_t)B * sizeof *d.active);
	d.restarts = (int *)malloc((size_t)B * sizeof *d.restarts);
	int rc = -1, *list = NULL;
	if (!d.groups || !d.seqs || !d.active || !d.restarts) {
		gpu_fail(msg, msglen, "out of host memory");
		goto out;
	}
	if (make_groups(&d, B, msg, msglen) < 0 || make_cache(&d, msg, msglen) < 0 ||
	    make_buffers(&d, msg, msglen) < 0)
		goto out;
	{
		size_t freeb = 0, total = 0;   // every allocation of the call is made
		if (cudaMemGetInfo(&freeb, &total) == cudaSuccess)
			stats->device_used = total - freeb;
	}
	if (!(list = (int *)malloc((size_t)B * sizeof *list))) {
		gpu_fail(msg, msglen, "out of host memory");
		goto out;
	}
	while (d.next < d.nfresh || d.nrestarts > 0 || d.nactive > 0) {
		int n = choose(&d, list);
		if (n > 0 && prefill(&d, list, n, msg, msglen) < 0)
			goto out;
		if (n == 0 && d.nactive == 0) {   // cannot happen: make_cache sized the cache for one group
			gpu_fail(msg, msglen, "no room in the KV cache to start a group");
			goto out;
		}
		if (d.nactive > 0 && (grow(&d, msg, msglen) < 0 || (d.nactive > 0 && decode_step(&d, msg, msglen) < 0)))
			goto out;
	}
	rc = 0;
out:
	free(list);
	dec_free(&d, B);
	return rc;
}
