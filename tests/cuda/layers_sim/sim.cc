// layers_sim: kernels/'s embedding, q/k/v preparation (bias, Qwen3's q/k
// norm, RoPE) and bias kernels, their backward, the loss's per-row
// gradient, and the optimizer's gradient norm, AdamW and weight conversion,
// their code unchanged (extract.py), run on the CPU (tests/cuda/sim) and
// compared with references written from lib/model/model.c and
// lib/train/optim.c in double, and with lib/train/loss.c's loss_mb itself: packs of several
// sequences with one-token ones among them (positions restart), head sizes
// 24, 64, 80, 96, 128 and 256, grouped-query heads, fp32 and bf16, token ids at
// the vocabulary's ends and repeated, and lengths past the grid strides.
// Each case prints its worst error relative to its values' scale. With
// "small" (run.sh under SIM_TSAN=1): smaller shapes, and only the first
// blocks of the fixed grids. Run by run.sh beside it.
#include "kern.inc"
extern "C" {
#include "train/loss.h"
}
#include <algorithm>
#include <cstdarg>
#include <numeric>
#include <random>

static std::mt19937 gen(11);
static int fails, small;
static float rnd() { return std::normal_distribution<float>(0, 1)(gen); }
static const float NaN = nanf("");

// A case's worst error, relative to each value's scale, and its failures.
struct tally {
	double tol, worst = 0;
	int bad = 0;
	explicit tally(double tol_) : tol(tol_) {}
	void see(const char *what, size_t at, double got, double want, double scale)
	{
		double err = fabs(got - want) / (scale > 0 ? scale : 1);
		if (!(err <= tol)) {
			if (bad++ < 3)
				printf("  %s [%zu]: got %.9g want %.9g (scale %.3g)\n", what, at, got, want, scale);
			err = err == err ? err : INFINITY;
		}
		worst = std::max(worst, err);
	}
	// bits that must come out as they went in, or as given
	void same(const char *what, size_t at, const void *got, const void *want, size_t bytes)
	{
		if (memcmp(got, want, bytes) != 0 && bad++ < 3)
			printf("  %s [%zu]: not the bits expected\n", what, at);
	}
};
static void report(const tally &t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(const tally &t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", t.bad ? "FAIL" : "ok  ");
	vprintf(fmt, ap);
	va_end(ap);
	printf(": worst %.2g (tolerance %.2g)\n", t.worst, t.tol);
	fails += t.bad != 0;
}
static const char *dtype(int bf) { return bf ? "bf16" : "fp32"; }
// a case meant to pass the launch's grid stride that no longer does (a launcher changed)
static void past_stride(tally &tl, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	if (n <= stride)
		printf("  n %zu no longer passes the grid stride %zu: make it larger\n", n, stride), tl.bad++;
}
// fp32: a few roundings of each value; bf16: the output's rounding (8 bits)
static double tol_act(int bf) { return bf ? 1.0 / 256 + 4e-6 : 4e-6; }

// positions restarting at each sequence's start (lib/model's positions())
static std::vector<int32_t> positions(const std::vector<int> &lens)
{
	std::vector<int32_t> pos;
	for (int len : lens)
		for (int j = 0; j < len; j++)
			pos.push_back(j);
	return pos;
}

// cos, sin (n, HS/2) as lib/model's model_rope_table: fp32 angles, as transformers's
static void rope_table(int HS, int n, std::vector<float> &c, std::vector<float> &s)
{
	int h2 = HS / 2;
	c.resize((size_t)n * h2), s.resize((size_t)n * h2);
	for (int i = 0; i < h2; i++) {
		float inv = 1.0f / powf(1e6f, (float)(2 * i) / (float)HS);
		for (int t = 0; t < n; t++) {
			float ang = (float)t * inv;
			c[(size_t)t * h2 + i] = (float)cos(ang);
			s[(size_t)t * h2 + i] = (float)sin(ang);
		}
	}
}

static std::vector<float> randoms(size_t n, float scale, float offset = 0)
{
	std::vector<float> v(n);
	for (auto &x : v)
		x = offset + scale * rnd();
	return v;
}
template <typename T> static std::vector<T> randoms_as(size_t n, float scale)
{
	std::vector<T> v(n);
	for (auto &x : v)
		x = from_f<T>(scale * rnd());
	return v;
}

// ---- q/k/v preparation: bias, q/k norm, RoPE (model.c's forward and backward) ----

struct prep {
	int NH, NKV, HS;
	std::vector<int> lens;   // the pack's sequences
	bool bias, norm;         // Qwen2's q/k/v bias, Qwen3's q/k norm
};

// The inputs of both directions: the pack's positions, the RoPE table,
// biases and norm weights (empty where the family has none).
struct prep_in {
	std::vector<int32_t> pos;
	std::vector<float> cos, sin, bq, bk, bv, qn, kn;
	int T;
	explicit prep_in(const prep &p)
	{
		pos = positions(p.lens);
		T = (int)pos.size();
		rope_table(p.HS, *std::max_element(p.lens.begin(), p.lens.end()), cos, sin);
		if (p.bias)
			bq = randoms((size_t)p.NH * p.HS, 0.5f), bk = randoms((size_t)p.NKV * p.HS, 0.5f),
			bv = randoms((size_t)p.NKV * p.HS, 0.5f);
		if (p.norm)
			qn = randoms(p.HS, 0.2f, 1), kn = randoms(p.HS, 0.2f, 1);
	}
};
static const float *or_null(const std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }

// head h's projection output x (HS) plus its bias, in double
static void with_bias(std::vector<double> &x, const double *raw, const std::vector<float> &b, int hb, int HS)
{
	for (int i = 0; i < HS; i++)
		x[i] = raw[i] + (b.empty() ? 0.0 : b[(size_t)hb * HS + i]);
}
static double rstd(const std::vector<double> &x, double eps)
{
	double ss = 0;
	for (double v : x)
		ss += v * v;
	return 1 / sqrt(ss / x.size() + eps);
}

template <typename T> static void prep_case(const prep &p)
{
	int bf = sizeof(T) == 2, NH = p.NH, NKV = p.NKV, HS = p.HS, h2 = HS / 2, nh = NH + 2 * NKV;
	prep_in in(p);
	size_t W = (size_t)nh * HS;
	std::vector<T> qkv = randoms_as<T>(in.T * W, 2), raw = qkv;
	float eps = 1e-6f;
	int rc = launch_qkv_prep(qkv.data(), or_null(in.bq), or_null(in.bk), or_null(in.bv), or_null(in.qn),
				 or_null(in.kn), in.cos.data(), in.sin.data(), in.pos.data(), in.T, NH, NKV, HS, eps, bf, 0);
	tally tl(tol_act(bf));
	if (rc)
		printf("  launcher refused: %d\n", rc), tl.bad++;
	std::vector<double> x(HS), r0(HS), y(HS);
	for (int t = 0; t < in.T; t++) {
		const float *c = &in.cos[(size_t)in.pos[t] * h2], *s = &in.sin[(size_t)in.pos[t] * h2];
		for (int h = 0; h < nh; h++) {
			int isq = h < NH, isk = !isq && h < NH + NKV;
			size_t at = t * W + (size_t)h * HS;
			for (int i = 0; i < HS; i++)
				r0[i] = to_f(raw[at + i]);
			with_bias(x, r0.data(), isq ? in.bq : isk ? in.bk : in.bv, isq ? h : isk ? h - NH : h - NH - NKV, HS);
			if (!isq && !isk) {   // v: the bias alone
				for (int i = 0; i < HS; i++)
					tl.see("v", at + i, to_f(qkv[at + i]), x[i], fabs(x[i]));
				continue;
			}
			const std::vector<float> &w = isq ? in.qn : in.kn;
			double r = w.empty() ? 1 : rstd(x, eps);
			for (int i = 0; i < HS; i++)
				y[i] = (w.empty() ? 1 : w[i]) * x[i] * r;
			for (int i = 0; i < h2; i++) {   // the pair (i, i + HS/2) turned by the position's angle
				double scale = fabs(y[i]) + fabs(y[i + h2]);
				tl.see(isq ? "q" : "k", at + i, to_f(qkv[at + i]), y[i] * c[i] - y[i + h2] * s[i], scale);
				tl.see(isq ? "q" : "k", at + i + h2, to_f(qkv[at + i + h2]), y[i + h2] * c[i] + y[i] * s[i], scale);
			}
		}
	}
	report(tl, "qkv_prep NH %d NKV %d HS %d, %zu sequences of %d tokens%s%s %s", NH, NKV, HS, p.lens.size(), in.T,
	       p.bias ? ", bias" : "", p.norm ? ", q/k norm" : "", dtype(bf));
}

template <typename T> static void prep_bwd_case(const prep &p)
{
	int bf = sizeof(T) == 2, NH = p.NH, NKV = p.NKV, HS = p.HS, h2 = HS / 2, nh = NH + 2 * NKV;
	prep_in in(p);
	size_t W = (size_t)nh * HS;
	std::vector<T> dqkv = randoms_as<T>(in.T * W, 1), g0 = dqkv, raw = randoms_as<T>(in.T * W, 2);
	std::vector<float> nq, nk;
	if (p.norm)
		nq.assign((size_t)in.T * NH * HS, NaN), nk.assign((size_t)in.T * NKV * HS, NaN);
	float eps = 1e-6f;
	int rc = launch_qkv_prep_backward(dqkv.data(), p.norm ? nq.data() : NULL, p.norm ? nk.data() : NULL, raw.data(),
					  or_null(in.bq), or_null(in.bk), or_null(in.qn), or_null(in.kn), in.cos.data(),
					  in.sin.data(), in.pos.data(), in.T, NH, NKV, HS, eps, bf, 0);
	tally tl(tol_act(bf));
	if (rc)
		printf("  launcher refused: %d\n", rc), tl.bad++;
	std::vector<double> r0(HS), x(HS), d(HS), sd(HS);
	for (int t = 0; t < in.T; t++) {
		const float *c = &in.cos[(size_t)in.pos[t] * h2], *s = &in.sin[(size_t)in.pos[t] * h2];
		for (int h = 0; h < nh; h++) {
			int isq = h < NH, hb = isq ? h : h - NH;
			size_t at = t * W + (size_t)h * HS;
			if (h >= NH + NKV) {   // v's gradient goes through its bias unchanged
				tl.same("dv", at, &dqkv[at], &g0[at], HS * sizeof(T));
				continue;
			}
			for (int i = 0; i < h2; i++) {   // RoPE transposed
				double a = to_f(g0[at + i]), b = to_f(g0[at + i + h2]);
				d[i] = a * c[i] + b * s[i], sd[i] = fabs(a * c[i]) + fabs(b * s[i]);
				d[i + h2] = b * c[i] - a * s[i], sd[i + h2] = fabs(b * c[i]) + fabs(a * s[i]);
			}
			const std::vector<float> &w = isq ? in.qn : in.kn;
			if (w.empty()) {
				for (int i = 0; i < HS; i++)
					tl.see(isq ? "dq" : "dk", at + i, to_f(dqkv[at + i]), d[i], sd[i]);
				continue;
			}
			// RMSNorm's backward (model.c's rmsnorm_backward) at x = raw + bias
			for (int i = 0; i < HS; i++)
				r0[i] = to_f(raw[at + i]);
			with_bias(x, r0.data(), isq ? in.bq : in.bk, hb, HS);
			double r = rstd(x, eps), dot = 0, adot = 0;
			for (int i = 0; i < HS; i++)
				dot += d[i] * w[i] * x[i], adot += sd[i] * fabs(w[i] * x[i]);
			float *prod = isq ? &nq[((size_t)t * NH + hb) * HS] : &nk[((size_t)t * NKV + hb) * HS];
			for (int i = 0; i < HS; i++) {
				double want = d[i] * w[i] * r - x[i] * r * r * r * dot / HS;
				double scale = sd[i] * fabs(w[i]) * r + fabs(x[i]) * r * r * r * adot / HS;
				tl.see(isq ? "dq" : "dk", at + i, to_f(dqkv[at + i]), want, scale);
				tl.see(isq ? "q norm's dw row" : "k norm's dw row", at + i, prod[i], d[i] * x[i] * r,
				       sd[i] * fabs(x[i]) * r);
			}
		}
	}
	report(tl, "qkv_prep backward NH %d NKV %d HS %d, %zu sequences of %d tokens%s%s %s", NH, NKV, HS,
	       p.lens.size(), in.T, p.bias ? ", bias" : "", p.norm ? ", q/k norm" : "", dtype(bf));
}

// head sizes the launchers refuse, and an empty pack, leave qkv as it was
static void prep_refusals()
{
	tally tl(0);
	std::vector<float> qkv = randoms(3 * 258, 1), was = qkv, cs(129, 1), sn(129, 0), nq(258, NaN);
	int32_t pos = 0;
	for (int HS : { 63, 258 }) {
		if (launch_qkv_prep(qkv.data(), 0, 0, 0, 0, 0, cs.data(), sn.data(), &pos, 1, 1, 1, HS, 1e-6f, 0, 0) !=
			    cudaErrorInvalidValue ||
		    launch_qkv_prep_backward(qkv.data(), 0, 0, was.data(), 0, 0, 0, 0, cs.data(), sn.data(), &pos, 1, 1, 1,
					     HS, 1e-6f, 0, 0) != cudaErrorInvalidValue)
			printf("  head size %d: not refused\n", HS), tl.bad++;
	}
	if (launch_qkv_prep(qkv.data(), 0, 0, 0, 0, 0, cs.data(), sn.data(), &pos, 0, 1, 1, 64, 1e-6f, 0, 0) ||
	    launch_qkv_prep_backward(qkv.data(), 0, 0, was.data(), 0, 0, 0, 0, cs.data(), sn.data(), &pos, 0, 1, 1, 64,
				     1e-6f, 0, 0))
		printf("  an empty pack failed\n"), tl.bad++;
	tl.same("qkv", 0, qkv.data(), was.data(), qkv.size() * 4);
	report(tl, "qkv_prep and its backward refuse head sizes 63 and 258, and do nothing for no tokens");
}

// ---- the embedding and its backward ----

// T token ids with 0 and V-1 among them, and one id repeated (the prefix of hot)
static std::vector<int32_t> token_ids(int V, int T, int hot)
{
	std::vector<int32_t> ids(T);
	for (int t = 0; t < T; t++)
		ids[t] = t % 5 == 0 ? 0 : t % 5 == 1 ? V - 1 : t < hot ? 7 % V : (int32_t)(gen() % V);
	return ids;
}

template <typename T> static void embed_case(int V, int C, int T_)
{
	int bf = sizeof(T) == 2;
	std::vector<int32_t> ids = token_ids(V, T_, 0);
	std::vector<T> embed((size_t)V * C);   // zeros but in the rows read, to keep a large V quick
	for (int32_t id : ids)
		for (int c = 0; c < C; c++)
			embed[(size_t)id * C + c] = from_f<T>(rnd());
	std::vector<float> resid((size_t)T_ * C + 8, NaN), guard(8, NaN);
	int rc = launch_embed(resid.data(), embed.data(), ids.data(), T_, C, bf, 0);
	tally tl(0);
	if (rc)
		printf("  launcher refused: %d\n", rc), tl.bad++;
	for (int t = 0; t < T_; t++)
		for (int c = 0; c < C; c++) {
			float want = to_f(embed[(size_t)ids[t] * C + c]);
			tl.same("resid", (size_t)t * C + c, &resid[(size_t)t * C + c], &want, 4);
		}
	tl.same("past the end", (size_t)T_ * C, &resid[(size_t)T_ * C], guard.data(), 32);
	report(tl, "embed V %d C %d T %d %s", V, C, T_, dtype(bf));
}

// dembed[id] += each of id's tokens' rows, with the tokens grouped as
// gpu_train.cu's group_ids does it: by id, in position order within one
static void embed_bwd_case(int V, int C, int T_, int hot)
{
	std::vector<int32_t> ids = token_ids(V, T_, hot), order(T_), seg, seg_id;
	std::iota(order.begin(), order.end(), 0);
	std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ids[a] < ids[b]; });
	for (int k = 0; k < T_; k++)
		if (k == 0 || ids[order[k]] != ids[order[k - 1]])
			seg.push_back(k), seg_id.push_back(ids[order[k]]);
	int nseg = (int)seg.size();
	seg.push_back(T_);
	std::vector<float> dres = randoms((size_t)T_ * C, 1), dembed((size_t)V * C);
	for (size_t i = 0; i < dembed.size(); i++)   // what is there already: a quick pattern, random where added to
		dembed[i] = (float)(i % 1001) / 1000 - 0.5f;
	for (int32_t id : ids)
		for (int c = 0; c < C; c++)
			dembed[(size_t)id * C + c] = rnd();
	std::vector<float> d0 = dembed;
	int rc = launch_embed_backward(dembed.data(), dres.data(), order.data(), seg.data(), seg_id.data(), nseg, C, 0);
	tally tl(4e-6);
	if (rc)
		printf("  launcher refused: %d\n", rc), tl.bad++;
	std::vector<double> want(d0.begin(), d0.end()), scale(want.size());
	std::vector<int> used(V);
	for (size_t i = 0; i < scale.size(); i++)
		scale[i] = fabs(want[i]);
	for (int t = 0; t < T_; t++) {
		used[ids[t]] = 1;
		for (int c = 0; c < C; c++) {
			want[(size_t)ids[t] * C + c] += dres[(size_t)t * C + c];
			scale[(size_t)ids[t] * C + c] += fabs(dres[(size_t)t * C + c]);
		}
	}
	for (int v = 0; v < V; v++)
		for (int c = 0; c < C; c++) {
			size_t i = (size_t)v * C + c;
			if (used[v])
				tl.see("dembed", i, dembed[i], want[i], scale[i]);
			else
				tl.same("an unused id's row", i, &dembed[i], &d0[i], 4);
		}
	int most = 0;
	for (int u = 0; u < nseg; u++)
		most = std::max(most, seg[u + 1] - seg[u]);
	report(tl, "embed backward V %d C %d T %d (%d ids, the most repeated %d times)", V, C, T_, nseg, most);
}

// ---- bias over rows ----

static void add_bias_case(int T_, int n, bool past = false)
{
	size_t total = (size_t)T_ * n;
	std::vector<float> x = randoms(total + 8, 1), x0 = x, b = randoms(n, 1);
	int rc = launch_add_bias(x.data(), b.data(), T_, n, 0);
	tally tl(0);
	if (rc)
		printf("  launcher refused: %d\n", rc), tl.bad++;
	if (past)
		past_stride(tl, total);
	for (size_t i = 0; i < total; i++) {
		float want = (float)((double)x0[i] + b[i % n]);   // exact in double, so rounded once
		tl.same("x", i, &x[i], &want, 4);
	}
	tl.same("past the end", total, &x[total], &x0[total], 32);
	report(tl, "add_bias T %d n %d (%zu values, %u blocks of %u)", T_, n, total, gridDim.x, blockDim.x);
}

// ---- the optimizer: gradient norm, AdamW, weights from the master copy ----

static void sumsq_case(size_t n, bool past = false)
{
	std::vector<float> x = randoms(n + 8, 1);
	for (size_t i = n; i < n + 8; i++)
		x[i] = NaN;   // past the end: any read of it shows
	std::vector<double> partial(NORM_BLOCKS + 1, nan(""));
	sim_sumsq(partial.data(), x.data(), n);
	size_t stride = (size_t)gridDim.x * blockDim.x, ran = sim_block_limit ? sim_block_limit : gridDim.x;
	std::vector<long double> want(gridDim.x);
	long double total = 0;
	for (size_t i = 0; i < n; i++) {
		long double sq = (long double)x[i] * x[i];
		want[i % stride / blockDim.x] += sq;
		total += sq;
	}
	tally tl(1e-13);
	if (past)
		past_stride(tl, n);
	for (size_t b = 0; b < ran; b++)
		tl.see("block's partial sum", b, partial[b], (double)want[b], (double)want[b]);
	if (ran == gridDim.x) {   // the host's sum of them, in block order
		double s = 0;
		for (size_t b = 0; b < ran; b++)
			s += partial[b];
		tl.see("sum of squares", 0, s, (double)total, (double)total);
	}
	double unwritten = nan("");
	tl.same("past the grid", NORM_BLOCKS, &partial[NORM_BLOCKS], &unwritten, 8);
	report(tl, "sumsq n %zu (grid stride %zu%s)", n, stride,
	       ran < gridDim.x ? ", the first blocks only" : "");
}

// AdamW as optim.c documents it, from lr, weight decay and step t: here in
// long double from the moments' definition, where the kernel takes the
// host's folded scalars (struct gpu_adamw, as optim.c's adamw_scalars)
static void adamw_case(size_t n, bool past = false)
{
	double lr = 1e-3, wd = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, clip = 0.6;
	int t = 7;
	struct gpu_adamw p = { clip, b1, b2, eps, lr / (1 - pow(b1, t)), sqrt(1 - pow(b2, t)), 1 - lr * wd };
	std::vector<float> w = randoms(n + 8, 0.05f), m = randoms(n + 8, 1e-3f), v(n + 8), g = randoms(n + 8, 0.01f);
	for (auto &x : v)
		x = 1e-5f * fabsf(rnd() * rnd());
	for (size_t i = n / 2 + 1; i < n; i += 97)   // alignment gaps: nothing moves
		w[i] = m[i] = v[i] = g[i] = 0;
	std::vector<float> w0 = w, m0 = m, v0 = v;
	sim_adamw(w.data(), m.data(), v.data(), g.data(), n, p);
	tally tl(1.2e-7);   // a float's rounding of the same real number
	if (past)
		past_stride(tl, n);
	for (size_t i = 0; i < n; i++) {
		long double gc = (long double)g[i] * clip;
		long double mi = b1 * (long double)m0[i] + (1 - b1) * gc, vi = b2 * (long double)v0[i] + (1 - b2) * gc * gc;
		long double mhat = mi / (1 - powl(b1, t)), vhat = vi / (1 - powl(b2, t));
		long double wi = w0[i] * (1 - lr * wd) - lr * mhat / (sqrtl(vhat) + eps);
		tl.see("m", i, m[i], (double)mi, fabs((double)mi));
		tl.see("v", i, v[i], (double)vi, fabs((double)vi));
		tl.see("w", i, w[i], (double)wi, fabs((double)wi));
	}
	tl.same("past the end", n, &w[n], &w0[n], 32);
	tl.same("past the end", n, &m[n], &m0[n], 32);
	report(tl, "adamw n %zu (%u blocks of %u)", n, gridDim.x, blockDim.x);
}

// the bf16 nearest x, ties to the even one, by comparing both candidates in double
static uint16_t bf16_nearest(float x)
{
	uint32_t u, lo, hi;
	memcpy(&u, &x, 4);
	lo = u & 0xffff0000u, hi = lo + 0x10000u;   // toward zero, away from it
	float flo, fhi;
	memcpy(&flo, &lo, 4), memcpy(&fhi, &hi, 4);
	double dl = fabs((double)x - flo), dh = fabs((double)fhi - x);
	return (uint16_t)((dl < dh || (dl == dh && !(lo & 0x10000u)) ? lo : hi) >> 16);
}

template <typename T> static void convert_case(size_t n, bool past = false)
{
	int bf = sizeof(T) == 2;
	std::vector<float> src(n);
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)gen();
		switch (i % 4) {
		case 0: src[i] = rnd(); break;
		case 1: u = (u & 0x3fff0000u) | 0x8000u, memcpy(&src[i], &u, 4); break;   // a tie
		case 2: src[i] = rnd() * powf(2, (float)(int)(gen() % 200) - 100); break;
		default: src[i] = i % 8 == 3 ? -0.0f : rnd() * 1e-40f; break;   // zero, subnormals
		}
	}
	std::vector<T> dst(n + 8), guard(8);
	for (auto &x : guard)
		x = from_f<T>(42);
	std::copy(guard.begin(), guard.end(), dst.begin() + n);
	sim_convert<T>(dst.data(), src.data(), n);
	tally tl(0);
	if (past)
		past_stride(tl, n);
	for (size_t i = 0; i < n; i++) {
		if (bf) {
			uint16_t want = bf16_nearest(src[i]);
			tl.same("bf16", i, &dst[i], &want, 2);
		} else {
			tl.same("fp32", i, &dst[i], &src[i], 4);
		}
	}
	tl.same("past the end", n, &dst[n], guard.data(), 8 * sizeof(T));
	report(tl, "convert n %zu to %s (%u blocks of %u)", n, dtype(bf), gridDim.x, blockDim.x);
}

// ---- the loss's rows: dlp, dent against loss.c's loss_mb ----

// n rows in spans of 1 to 40 (a span's first token never trained), 80% on
// the mask; own: some rows' ℓ_old (and ℓ_behav) are the row's own ℓ
static void loss_case(const char *what, struct loss_opts o, int n, bool behav, bool ref, bool own)
{
	std::vector<uint32_t> lens;
	for (int left = n; left > 0;) {
		int len = std::min(left, 1 + (int)(gen() % 40));
		lens.push_back(len), left -= len;
	}
	std::vector<uint8_t> mask(n), flags(n);
	std::vector<float> lp(n), adv(n), old(n), bh(n), rf(n), zero(n), dlp(n, NaN), dent(n, NaN), dl(n), de(n);
	for (int s = 0, t = 0; s < (int)lens.size(); s++) {
		float a = rnd();
		for (uint32_t j = 0; j < lens[s]; j++, t++) {
			mask[t] = j > 0 && gen() % 5 != 0;
			lp[t] = -2 * fabsf(rnd());
			old[t] = lp[t] + (t % 50 == 7 ? 25 : t % 50 == 8 ? -25 : 0.3f * rnd());   // some past the ±20 clamp
			adv[t] = a, bh[t] = old[t] + 0.2f * rnd(), rf[t] = lp[t] + 0.5f * rnd();
			int old_own = own && t % 5 == 0, behav_own = own && behav && t % 7 == 0;
			flags[t] = mask[t] ? GPU_LOSS_TOKEN | (old_own ? GPU_LOSS_OLD_OWN : 0) | (behav_own ? GPU_LOSS_BEHAV_OWN : 0)
					   : 0;
		}
	}
	// the host's view: ℓ_old and ℓ_behav are ℓ where the flags say so
	std::vector<float> old_h = old, bh_h = bh;
	for (int t = 0; t < n; t++) {
		if (flags[t] & GPU_LOSS_OLD_OWN)
			old_h[t] = lp[t];
		if (flags[t] & GPU_LOSS_BEHAV_OWN)
			bh_h[t] = lp[t];
	}
	struct loss_input in = { n, (int)lens.size(), lens.data(), mask.data(), adv.data(), old_h.data(),
				 behav ? bh_h.data() : NULL, ref ? rf.data() : NULL };
	struct loss_totals tot = { (double)lens.size() + 3, (double)n + 100, 2 };
	std::vector<double> w(n);
	struct loss_stats st;
	loss_stats_init(&st);
	struct err e;
	tally tl(0);
	bool ent = o.entropy_coef != 0;
	if (loss_token_weights(&o, &tot, &in, w.data(), &e) < 0 ||
	    loss_mb(&o, &tot, &in, lp.data(), ent ? zero.data() : NULL, dl.data(), ent ? de.data() : NULL, &st, &e) < 0) {
		printf("  loss.c: %s\n", e.msg);
		tl.bad++;
	}
	// what the kernel must not read is NaN: off the mask, and ℓ_old / ℓ_behav where they are ℓ
	for (int t = 0; t < n; t++) {
		if (!mask[t])
			adv[t] = old[t] = bh[t] = rf[t] = NaN, w[t] = nan("");
		if (flags[t] & GPU_LOSS_OLD_OWN)
			old[t] = NaN;
		if (flags[t] & GPU_LOSS_BEHAV_OWN)
			bh[t] = NaN;
	}
	struct loss_rows rows = { flags.data(), adv.data(), old.data(), behav ? bh.data() : NULL, ref ? rf.data() : NULL,
				  w.data() };
	if (launch_loss_rows(dlp.data(), dent.data(), lp.data(), rows, o, n, 0))
		printf("  launcher refused\n"), tl.bad++;
	for (int t = 0; t < n; t++) {
		tl.see("dlogprob", t, dlp[t], dl[t], 1);
		tl.see("dentropy", t, dent[t], ent ? de[t] : 0, 1);
	}
	report(tl, "loss rows n %d, %s", n, what);
}

static void loss_cases()
{
	struct loss_opts o;
	loss_opts_default(&o);
	loss_case("grpo's defaults", o, small ? 300 : 700, false, false, false);
	o.beta = 0.05f, o.tis_cap = 2, o.dual_clip = 3, o.entropy_coef = 0.01f, o.agg = LOSS_AGG_DAPO;
	loss_case("k3, TIS, dual clip, entropy, dapo, own old/behav", o, small ? 100 : 513, true, true, true);
	loss_opts_default(&o);
	o.cispo = 1, o.kl = LOSS_KL_K2, o.beta = 0.1f, o.clip_high = 0.28f, o.agg = LOSS_AGG_BNPO;
	loss_case("CISPO, k2, bnpo, own old", o, 256, false, true, true);
	loss_opts_default(&o);
	o.kl = LOSS_KL_K1, o.agg = LOSS_AGG_DR_GRPO, o.max_len = 64, o.entropy_coef = -0.02f;
	loss_case("k1 at beta 0, dr_grpo, entropy", o, 2, true, true, false);
}

int main(int argc, char **argv)
{
	small = argc > 1 && strcmp(argv[1], "small") == 0;
	std::vector<prep> preps = {
		{ 4, 2, 64, { 5, 1, 7, 1, 3 }, false, false },   // Llama, grouped-query
		{ 6, 2, 128, { 1, 9, 2 }, true, false },          // Qwen2
		{ 4, 1, 128, { 4, 1, 6 }, false, true },          // Qwen3
		{ 3, 1, 80, { 3, 1, 5 }, true, true },            // HS/2 past a warp
		{ 2, 2, 24, { 2, 1, 3 }, false, true },           // HS/2 under a warp
		{ 2, 1, 256, { 2, 1 }, true, true },              // the kernels' largest
		{ 2, 1, 96, { 2, 1, 3 }, false, false },          // pairs of values loaded by two lanes
	};
	if (small)   // both pairs' values in other lanes (HS/2 not a multiple of 32) with and without the norm
		preps = { { 3, 1, 80, { 2, 1 }, true, true }, { 2, 1, 80, { 1, 2 }, false, false },
			  { 2, 2, 24, { 2, 1 }, true, false } };
	for (auto &p : preps) {
		prep_case<float>(p), prep_case<bf16>(p);
		prep_bwd_case<float>(p), prep_bwd_case<bf16>(p);
	}
	prep_refusals();

	embed_case<float>(1000, 100, 13), embed_case<bf16>(1000, 100, 13);
	embed_case<float>(151936, small ? 8 : 128, small ? 3 : 9), embed_case<bf16>(151936, small ? 8 : 72, small ? 3 : 9);
	embed_bwd_case(300, 100, 1, 0);
	embed_bwd_case(1000, 896, small ? 12 : 60, small ? 12 : 50);
	embed_bwd_case(151936, small ? 8 : 40, small ? 10 : 40, 0);

	add_bias_case(17, 896);
	add_bias_case(1, 5);
	if (!small)   // past the launcher's 65536 blocks of 256
		add_bias_case(16385, 1025, true);

	if (small)
		sim_block_limit = 3;
	sumsq_case(small ? 5000 : NORM_BLOCKS * NORM_THREADS + 12345, !small);
	sumsq_case(small ? 700 : 1000);
	sim_block_limit = 0;
	adamw_case(small ? 3000 : 8192 * 256 + 12345, !small);
	adamw_case(1);
	convert_case<float>(small ? 3000 : 4096 * 256 + 777, !small);
	convert_case<bf16>(small ? 3000 : 4096 * 256 + 777, !small);
	convert_case<bf16>(5);

	loss_cases();
	printf("%s\n", fails ? "FAILED" : "all passed");
	return fails != 0;
}
