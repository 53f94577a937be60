/*
 * sample_twin.h: kernels/sample.cu's algorithm on the host, as a
 * gpu_sample_test() of the same signature: the row's maximum and
 * log-sum-exp, the radix searches over p's float bits in 2^-62 fixed
 * point, the ties' id cut, and the draw by 1024 contiguous chunks. The
 * sums of doubles are taken in another order than the kernel's (only
 * rounding differs). Compiling test_cuda_sample.c with -DGRPO_SAMPLE_TWIN
 * runs the test against this instead of the GPU, which checks the algorithm
 * (and the test) where there is no GPU:
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE -DGRPO_SAMPLE_TWIN -Itests -Ikernels \
 *      tests/cuda/test_cuda_sample.c -lm -o /tmp/twin && /tmp/twin
 */
#ifndef GRPO_TESTS_CUDA_SAMPLE_TWIN_H
#define GRPO_TESTS_CUDA_SAMPLE_TWIN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TW_THREADS 1024
#define TW_BINS 2048

struct tw_row {
	const float *z;
	int V;
	double inv, lse;
};

static float tw_prob(const struct tw_row *r, int j)
{
	return (float)exp(r->z[j] * r->inv - r->lse);
}

static uint32_t tw_key(float p)
{
	uint32_t k;
	memcpy(&k, &p, 4);
	return k;
}

static uint64_t tw_weight(uint32_t key)
{
	float p;
	memcpy(&p, &key, 4);
	return (uint64_t)((double)p * 0x1p62);
}

static void tw_chunk(int V, int t, int *lo, int *hi)
{
	long long c = V / TW_THREADS + (V % TW_THREADS != 0), l = (long long)t * c;
	*lo = (int)(l < V ? l : V);
	*hi = (int)(*lo + c < V ? *lo + c : V);
}

struct tw_pick {
	int found;
	uint32_t key;
	uint64_t gt_n, gt_mass, at_n, goal;
};

/* radix_search: the largest K with W(key >= K) >= goal */
static struct tw_pick tw_search(const struct tw_row *r, int by_mass, uint64_t goal, float top_p, uint32_t cutkey,
				int *ncut)
{
	static uint64_t cnt[TW_BINS], mass[TW_BINS];
	struct tw_pick pk = { 0, 0, 0, 0, 0, goal };
	uint32_t prefix = 0;
	uint64_t above_n = 0, above_m = 0, at_n = 0;
	for (int pass = 0; pass < 3; pass++) {
		int shift = pass == 0 ? 21 : pass == 1 ? 10 : 0, width = pass == 2 ? 10 : 11;
		memset(cnt, 0, sizeof cnt);
		memset(mass, 0, sizeof mass);
		int nc = 0;
		for (int j = 0; j < r->V; j++) {
			uint32_t key = tw_key(tw_prob(r, j));
			nc += key >= cutkey;
			if ((uint32_t)((uint64_t)key >> (shift + width)) != prefix)
				continue;
			uint32_t d = (key >> shift) & ((1u << width) - 1);
			cnt[d]++;
			mass[d] += tw_weight(key);
		}
		if (pass == 0)
			*ncut = nc;
		uint64_t tm = 0;
		for (int d = 0; d < TW_BINS; d++)
			tm += mass[d];
		if (pass == 0 && by_mass && goal == 0) {
			double g = ceil((double)top_p * (double)tm);
			pk.goal = goal = g >= 1 ? (uint64_t)g : 1;
		}
		/* from the top bin down: the first (largest) d whose W from d up reaches goal */
		uint64_t sn = 0, sm = 0;
		int d = TW_BINS - 1;
		for (; d >= 0; d--) {
			sn += cnt[d], sm += mass[d];
			if ((by_mass ? above_m + sm : above_n + sn) >= goal)
				break;
		}
		if (d < 0)
			return pk;
		above_n += sn - cnt[d], above_m += sm - mass[d], at_n = cnt[d];
		prefix = prefix << width | (uint32_t)d;
	}
	pk.found = 1;
	pk.key = prefix;
	pk.gt_n = above_n, pk.gt_mass = above_m, pk.at_n = at_n;
	return pk;
}

/* tie_cut: 1 + the id of the need-th token with key == K */
static int tw_tie_cut(const struct tw_row *r, uint32_t K, uint64_t need)
{
	for (int j = 0; j < r->V; j++)
		if (tw_key(tw_prob(r, j)) == K && --need == 0)
			return j + 1;
	return r->V;
}

static void tw_kept_set(const struct tw_row *r, float top_p, int top_k, uint32_t *K, int *J)
{
	int V = r->V, topk = top_k > 0 && top_k < V, ncut;
	uint64_t m = (uint64_t)V, need = 0, ties = 0, kept = 0;
	*K = 0, *J = V;
	if (!topk && !(top_p < 1))
		return;
	if (topk) {
		struct tw_pick a = tw_search(r, 0, (uint64_t)top_k, top_p, UINT32_MAX, &ncut);
		m = (uint64_t)top_k, *K = a.key, need = m - a.gt_n, ties = a.at_n;
		kept = a.gt_mass + need * tw_weight(a.key);
	}
	if (top_p < 1) {
		uint64_t goal = 0;
		if (topk) {
			/* ceil, as the kernel; floor would differ only below 2^52
			 * (a kept mass under 2^-10 / top_p: doubles from 2^52 up
			 * are whole), and then only for a prefix whose mass is
			 * floor's goal to the last 2^-62, so no test tells them apart */
			double g = ceil((double)top_p * (double)kept);
			goal = g >= 1 ? (uint64_t)g : 1;
		}
		uint32_t cutkey = UINT32_MAX;
		if (!topk && V > 1) {
			volatile float cut = (1.0f - top_p) / (float)(V - 1);   /* rounded to float as the kernel's */
			cutkey = tw_key(cut);
		}
		struct tw_pick q = tw_search(r, 1, goal, top_p, cutkey, &ncut);
		if (ncut > 0 && (uint64_t)ncut < m)
			m = (uint64_t)ncut, *K = cutkey - 1, need = 0, ties = 0;
		if (q.found) {
			uint64_t w = tw_weight(q.key), n = w ? (q.goal - q.gt_mass + w - 1) / w : q.at_n;
			n = n < 1 ? 1 : n > q.at_n ? q.at_n : n;
			if (q.gt_n + n < m)
				m = q.gt_n + n, *K = q.key, need = n, ties = q.at_n;
		}
	}
	*J = need == 0 ? 0 : need >= ties ? V : tw_tie_cut(r, *K, need);
}

static double tw_uniform_at(uint64_t s, int n)
{
	uint64_t z = s + ((uint64_t)n + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int tw_allowed(uint32_t k, int j, uint32_t K, int J)
{
	return k > K || (k == K && j < J);
}

static int tw_draw(const struct tw_row *r, uint32_t K, int J, double uni)
{
	static double s[TW_THREADS], pre[TW_THREADS];
	int last = -1;
	double total = 0;
	for (int t = 0; t < TW_THREADS; t++) {
		int lo, hi;
		tw_chunk(r->V, t, &lo, &hi);
		s[t] = 0;
		for (int j = lo; j < hi; j++) {
			float p = tw_prob(r, j);
			if (tw_allowed(tw_key(p), j, K, J)) {
				s[t] += (double)p;
				if (p > 0)
					last = j;
			}
		}
		pre[t] = total;
		total += s[t];
	}
	double u = uni * total;
	for (int t = 0; t < TW_THREADS; t++) {
		if (!(s[t] > 0 && u < pre[t] + s[t]))
			continue;
		int lo, hi;
		double acc = 0;
		tw_chunk(r->V, t, &lo, &hi);
		for (int j = lo; j < hi; j++) {
			float p = tw_prob(r, j);
			if (!tw_allowed(tw_key(p), j, K, J))
				continue;
			acc += (double)p;
			if (p > 0 && u < pre[t] + acc)
				return j;
		}
		return last;   /* not reached: the walk ends at pre[t] + s[t] */
	}
	return last;
}

static int gpu_sample_test(const float *logits, int B, int V, float temperature, float top_p, int top_k,
			   const uint64_t *stream_state, const int32_t *draws, int32_t *tokens, float *logprobs,
			   char *msg, size_t msglen)
{
	(void)msg, (void)msglen;
	for (int b = 0; b < B; b++) {
		if (draws[b] < 0)
			continue;
		struct tw_row r = { logits + (size_t)b * V, V, temperature > 0 ? 1.0 / temperature : 1.0, 0 };
		int arg = 0;
		for (int j = 1; j < V; j++)
			if (r.z[j] > r.z[arg])
				arg = j;
		double mx = r.z[arg] * r.inv, s = 0;
		for (int j = 0; j < V; j++)
			s += exp(r.z[j] * r.inv - mx);
		r.lse = mx + log(s);
		int tok = arg;
		if (temperature > 0) {
			uint32_t K;
			int J;
			tw_kept_set(&r, top_p, top_k, &K, &J);
			tok = tw_draw(&r, K, J, tw_uniform_at(stream_state[b], draws[b]));
			if (tok < 0)
				tok = arg;
		}
		tokens[b] = tok;
		logprobs[b] = (float)(r.z[tok] * r.inv - r.lse);
	}
	return 0;
}

#endif
