// attn_sim: the CUDA-core attention (kernels/layers.cu's attention_kernel
// through launch_attention, kernels/attention_bwd.cu's three kernels
// through launch_attention_backward) and gpu_decode.cu's copy_blocks_kernel
// and gather_rows_kernel, their code unchanged (extract.py), run on the CPU
// (tests/cuda/sim). Attention is compared with block-causal grouped-query
// attention and its gradient in double, on packs laid out by gpu_model.cu's
// sequence_tiles: sequences of 1, 2, 31, 32, 33, 63, 64, 65 and 300 tokens
// (the edges of the 64-query and 32-key tiles), groups of 1, 2 and 7 query
// heads, every head size the launcher takes, fp32 and bf16; out, lse, the
// backward's D, dq, dk and dv, and memory just past each output. Each value's
// error is relative to the sum of its terms' magnitudes, which is what
// floating point rounds against; each case prints its worst. The decoder's
// copies are launched by prefill()'s own statements and must move exactly the
// bytes they should. With "small" (run.sh under SIM_TSAN=1): each head size
// once, on short packs. Run by run.sh beside it.
#include <cuda_runtime.h>

// What prefill()'s two launches read of gpu_decode.cu's struct dec and
// gpu_model_impl.cuh's struct gpu_model, with the same names and types.
struct dec {
	void *cache;   // (2, L, nblocks, NKV, KV_BLOCK, HS) act
	size_t block_words, layer_words;
	struct {
		int32_t *rows, *pairs;
	} d;
	void *hidden;   // (rows, C) act
	int C;
};
struct gpu_model {
	struct {
		int L;
	} s;
	size_t esize;
	void *ln;   // (T, C) act
};

#include "kern.inc"
#include "paged.cuh"
#include <cstdarg>
#include <random>
#include <string>

static std::mt19937 gen(7);
static int fails, small;
static float rnd() { return std::normal_distribution<float>(0, 1)(gen); }
static const char *dtype(int bf) { return bf ? "bf16" : "fp32"; }

// fp32: a few roundings of the sum of a few hundred terms; bf16: the
// output's rounding (2^-8 of the value) on top, twice for the backward, whose
// D (in dq and dk) comes from the forward's rounded out
static const double TOL_FP32 = 4e-6, BF16_ROUND = 1.0 / 256;

// The worst error of one quantity, relative to each value's scale, and its failures.
struct tally {
	const char *name;
	double tol, worst = 0;
	int bad = 0;
	tally(const char *name_, double tol_) : name(name_), tol(tol_) {}
	// token t's value in column i (-1: none) of head h
	void see(int t, int h, int i, double got, double want, double scale)
	{
		double err = fabs(got - want) / (scale > 0 ? scale : 1);
		if (!(err <= tol)) {
			if (bad++ < 3)
				printf("  %s token %d head %d%s: got %.9g want %.9g (scale %.3g)\n", name, t, h,
				       i < 0 ? "" : (" col " + std::to_string(i)).c_str(), got, want, scale);
			err = err == err ? err : INFINITY;
		}
		worst = std::max(worst, err);
	}
	// bytes that must be as they were, or as given
	void same(const std::string &where, const void *got, const void *want, size_t bytes)
	{
		if (memcmp(got, want, bytes) != 0 && bad++ < 3)
			printf("  %s %s: not the bytes expected\n", name, where.c_str());
	}
};

// One line for a case: ok or FAIL, what it ran, each quantity's worst error.
static void report(const std::vector<tally *> &ts, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(const std::vector<tally *> &ts, const char *fmt, ...)
{
	int bad = 0;
	for (tally *t : ts)
		bad += t->bad;
	va_list ap;
	va_start(ap, fmt);
	printf("%s ", bad ? "FAIL" : "ok  ");
	vprintf(fmt, ap);
	va_end(ap);
	const char *sep = ":";
	for (tally *t : ts)
		if (t->tol > 0)
			printf("%s %s %.2g", sep, t->name, t->worst), sep = "";
	printf("\n");
	fails += bad != 0;
}

// ---- attention in double ----

// One attention case: head size, query and kv heads, bf16 or fp32, the pack's sequences.
struct shape {
	int HS, NH, NKV, bf;
	std::vector<int> lens;
	int tokens() const
	{
		int T = 0;
		for (int l : lens)
			T += l;
		return T;
	}
};

// Block-causal grouped-query attention over x (T, (NH + 2 NKV) HS) and its
// gradient from g (T, NH HS), each value with its scale: the sum of the
// magnitudes of the terms that make it. lse's is 1 + |lse| + the largest
// such sum of a score's products, which its rounding errors scale with.
struct attention_ref {
	std::vector<double> out, out_s, lse, lse_s, dqkv, dqkv_s;
	attention_ref(const shape &p, const std::vector<double> &x, const std::vector<double> &g)
	{
		int HS = p.HS, NH = p.NH, NKV = p.NKV, T = p.tokens(), group = NH / NKV;
		size_t W = (size_t)(NH + 2 * NKV) * HS;
		out.assign((size_t)T * NH * HS, 0), out_s = out, lse.assign((size_t)T * NH, 0), lse_s = lse;
		dqkv.assign(T * W, 0), dqkv_s = dqkv;
		double sc = 1 / sqrt((double)HS);
		std::vector<double> s(T), sabs(T);
		for (int q = 0, start = 0; q < (int)p.lens.size(); start += p.lens[q++])
			for (int t = start; t < start + p.lens[q]; t++)
				for (int h = 0; h < NH; h++) {
					int kh = h / group;
					const double *qr = &x[t * W + (size_t)h * HS];
					double m = -INFINITY, l = 0, most = 0;
					for (int j = start; j <= t; j++) {   // scores, this sequence's keys up to t
						const double *k = &x[j * W + (size_t)(NH + kh) * HS];
						s[j] = sabs[j] = 0;
						for (int i = 0; i < HS; i++)
							s[j] += qr[i] * k[i] * sc, sabs[j] += fabs(qr[i] * k[i] * sc);
						m = std::max(m, s[j]), most = std::max(most, sabs[j]);
					}
					for (int j = start; j <= t; j++)
						l += s[j] = exp(s[j] - m);   // s: P from here on
					size_t r = (size_t)t * NH + h;
					lse[r] = m + log(l), lse_s[r] = 1 + fabs(lse[r]) + most;
					double *o = &out[r * HS], *os = &out_s[r * HS];
					for (int j = start; j <= t; j++) {
						s[j] /= l;
						const double *v = &x[j * W + (size_t)(NH + NKV + kh) * HS];
						for (int i = 0; i < HS; i++)
							o[i] += s[j] * v[i], os[i] += s[j] * fabs(v[i]);
					}
					// dV += P dO; dS = P (dO.V - D); dQ = scale dS K; dK += scale dS Q
					const double *gr = &g[r * HS];
					double D = 0, Dabs = 0;
					for (int i = 0; i < HS; i++)
						D += gr[i] * o[i], Dabs += fabs(gr[i]) * os[i];
					double *dq = &dqkv[t * W + (size_t)h * HS], *dqs = &dqkv_s[t * W + (size_t)h * HS];
					for (int j = start; j <= t; j++) {
						size_t kc = j * W + (size_t)(NH + kh) * HS, vc = kc + (size_t)NKV * HS;
						double gv = 0, gvabs = 0;
						for (int i = 0; i < HS; i++)
							gv += gr[i] * x[vc + i], gvabs += fabs(gr[i] * x[vc + i]);
						double ds = s[j] * (gv - D), dsabs = s[j] * (gvabs + Dabs);
						for (int i = 0; i < HS; i++) {
							dqkv[vc + i] += s[j] * gr[i], dqkv_s[vc + i] += s[j] * fabs(gr[i]);
							dq[i] += sc * ds * x[kc + i], dqs[i] += sc * dsabs * fabs(x[kc + i]);
							dqkv[kc + i] += sc * ds * qr[i], dqkv_s[kc + i] += sc * dsabs * fabs(qr[i]);
						}
					}
				}
	}
};

// ---- the kernels against it ----

static const size_t GUARD = 64;   // elements past each output that must stay as they were
static const unsigned char GUARD_BYTE = 0x5a, UNWRITTEN_BYTE = 0xff;   // 0xff..: NaN in fp32 and bf16

// n values and GUARD more, unwritten (NaN) and then the guard's bytes
template <typename V> static std::vector<V> output(size_t n)
{
	std::vector<V> v(n + GUARD);
	memset(v.data(), UNWRITTEN_BYTE, n * sizeof(V));
	memset(v.data() + n, GUARD_BYTE, GUARD * sizeof(V));
	return v;
}
template <typename V> static void guard_kept(tally &tl, const char *what, const std::vector<V> &v)
{
	std::vector<unsigned char> want(GUARD * sizeof(V), GUARD_BYTE);
	tl.same(std::string("just past ") + what, v.data() + v.size() - GUARD, want.data(), want.size());
}
// n random values and GUARD NaNs, which show if read
template <typename V> static std::vector<V> input(size_t n)
{
	std::vector<V> v(n + GUARD);
	for (size_t i = 0; i < n; i++)
		v[i] = from_f<V>(rnd());
	memset(v.data() + n, UNWRITTEN_BYTE, GUARD * sizeof(V));
	return v;
}
template <typename V> static std::vector<double> as_double(const std::vector<V> &v)
{
	std::vector<double> d(v.size() - GUARD);
	for (size_t i = 0; i < d.size(); i++)
		d[i] = to_f(v[i]);
	return d;
}

template <typename T> static void attention_case(const shape &p)
{
	int bf = p.bf, HS = p.HS, NH = p.NH, NKV = p.NKV, T_ = p.tokens();
	size_t W = (size_t)(NH + 2 * NKV) * HS, rows = (size_t)T_ * NH;
	std::vector<T> qkv = input<T>(T_ * W), dout = input<T>(rows * HS);
	std::vector<att_tile> tiles(T_);
	int nt = 0;
	for (int q = 0, t = 0; q < (int)p.lens.size(); t += p.lens[q++])   // as gpu_model.cu's lay_out
		nt += sequence_tiles(t, p.lens[q], tiles.data() + nt);
	std::vector<T> out = output<T>(rows * HS), dqkv = output<T>(T_ * W);
	std::vector<float> lse = output<float>(rows), D = output<float>(rows);

	double tol = TOL_FP32 + (bf ? BF16_ROUND : 0), tol_bwd = TOL_FP32 + (bf ? 2 * BF16_ROUND : 0);
	tally o("out", tol), l("lse", TOL_FP32), d("D", TOL_FP32), dq("dq", tol_bwd), dk("dk", tol_bwd),
		dv("dv", tol), exact("bytes", 0);   // exact: what must keep its bytes, or match others

	int rc = launch_attention(out.data(), lse.data(), qkv.data(), tiles.data(), nt, NH, NKV, HS, bf, 0);
	int rc2 = launch_attention_backward(dqkv.data(), dout.data(), out.data(), qkv.data(), lse.data(), D.data(),
					    tiles.data(), nt, T_, NH, NKV, HS, bf, 0);
	if (rc || rc2)
		printf("  launchers returned %d and %d\n", rc, rc2), exact.bad++;
	if (!small && att_tpq(HS) == 1) {   // without lse, as inference runs it: the same out (quick sizes only)
		std::vector<T> out2 = output<T>(rows * HS);
		launch_attention(out2.data(), NULL, qkv.data(), tiles.data(), nt, NH, NKV, HS, bf, 0);
		exact.same("out without lse", out2.data(), out.data(), out.size() * sizeof(T));
	}

	attention_ref r(p, as_double(qkv), as_double(dout));
	for (int t = 0; t < T_; t++)
		for (int h = 0; h < NH; h++) {
			size_t row = (size_t)t * NH + h;
			l.see(t, h, -1, lse[row], r.lse[row], r.lse_s[row]);
			double Dw = 0, Ds = 0;   // D from the out the forward stored
			for (int i = 0; i < HS; i++) {
				size_t e = row * HS + i;
				o.see(t, h, i, to_f(out[e]), r.out[e], r.out_s[e]);
				Dw += (double)to_f(dout[e]) * to_f(out[e]), Ds += fabs((double)to_f(dout[e]) * to_f(out[e]));
			}
			d.see(t, h, -1, D[row], Dw, Ds);
		}
	for (int t = 0; t < T_; t++)
		for (size_t c = 0; c < W; c++) {
			int h = (int)(c / HS), i = (int)(c % HS);
			tally &tl = h < NH ? dq : h < NH + NKV ? dk : dv;
			tl.see(t, h < NH ? h : h < NH + NKV ? h - NH : h - NH - NKV, i, to_f(dqkv[t * W + c]), r.dqkv[t * W + c],
			       r.dqkv_s[t * W + c]);
		}
	guard_kept(exact, "out", out), guard_kept(exact, "lse", lse), guard_kept(exact, "D", D);
	guard_kept(exact, "dqkv", dqkv);

	std::string lens;
	for (int len : p.lens)
		lens += (lens.empty() ? "" : " ") + std::to_string(len);
	report({ &o, &l, &d, &dq, &dk, &dv, &exact }, "HS %d NH %d NKV %d %s, sequences of %s (%d tiles)", HS, NH, NKV,
	       dtype(bf), lens.c_str(), nt);
}

// head sizes, groups and empty packs the launchers refuse or skip, writing nothing
static void attention_refusals()
{
	tally tl("refusals", 0);
	std::vector<float> qkv = input<float>(2 * 4 * 256), out = output<float>(2 * 2 * 256), out0 = out;
	std::vector<float> lse = output<float>(4), lse0 = lse, D = lse;
	std::vector<att_tile> tiles(2);
	sequence_tiles(0, 2, tiles.data());
	struct {
		int NH, NKV, HS;
	} bad[] = { { 2, 1, 40 }, { 2, 1, 256 }, { 2, 1, 8 }, { 3, 2, 64 }, { 2, 0, 64 } };
	for (auto b : bad) {
		if (launch_attention(out.data(), lse.data(), qkv.data(), tiles.data(), 1, b.NH, b.NKV, b.HS, 0, 0) !=
		    cudaErrorInvalidValue)
			printf("  forward NH %d NKV %d HS %d: not refused\n", b.NH, b.NKV, b.HS), tl.bad++;
		if (launch_attention_backward(out.data(), qkv.data(), qkv.data(), qkv.data(), lse0.data(), D.data(),
					      tiles.data(), 1, 2, b.NH, b.NKV, b.HS, 0, 0) != cudaErrorInvalidValue)
			printf("  backward NH %d NKV %d HS %d: not refused\n", b.NH, b.NKV, b.HS), tl.bad++;
	}
	if (launch_attention(out.data(), lse.data(), qkv.data(), tiles.data(), 0, 2, 1, 64, 0, 0) ||
	    launch_attention_backward(out.data(), qkv.data(), qkv.data(), qkv.data(), lse0.data(), D.data(), tiles.data(),
				      0, 2, 2, 1, 64, 0, 0))
		printf("  no tiles: failed\n"), tl.bad++;
	tl.same("out", out.data(), out0.data(), out.size() * 4);
	tl.same("lse", lse.data(), lse0.data(), lse.size() * 4);
	report({ &tl }, "attention launchers refuse head sizes 8, 40 and 256 and NH %% NKV != 0, and do nothing for no "
			"tiles");
}

// ---- the decoder's block copies and row gathers ----

// prefill's copies: pairs (src, dst) of cache blocks, in every layer's K and V
static void copy_blocks_case(int L, int nblocks, int NKV, int HS, int bf, std::vector<int32_t> pairs)
{
	gpu_model g = {};
	dec d = {};
	g.s.L = L, g.esize = bf ? 2 : 4;
	d.block_words = (size_t)NKV * KV_BLOCK * HS * g.esize / 4;   // as make_cache
	d.layer_words = (size_t)nblocks * d.block_words;
	size_t words = 2 * L * d.layer_words;
	std::vector<uint32_t> cache(words + GUARD);
	for (auto &w : cache)
		w = (uint32_t)gen();
	std::vector<uint32_t> want = cache;
	int npairs = (int)pairs.size() / 2;
	for (int kv = 0; kv < 2; kv++)
		for (int l = 0; l < L; l++)
			for (int k = 0; k < npairs; k++) {
				uint32_t *c = &want[(kv * L + l) * d.layer_words];
				memcpy(c + pairs[2 * k + 1] * d.block_words, c + pairs[2 * k] * d.block_words, d.block_words * 4);
			}
	d.cache = cache.data(), d.d.pairs = pairs.data();
	sim_copy_blocks(&d, &g, npairs, 0);
	tally tl("cache", 0);
	for (size_t b = 0; b < words / d.block_words; b++)
		tl.same("block " + std::to_string(b % nblocks) + " of layer " + std::to_string(b / nblocks % L) +
				(b / nblocks / L ? "'s V" : "'s K"),
			&cache[b * d.block_words], &want[b * d.block_words], d.block_words * 4);
	tl.same("just past the cache", &cache[words], &want[words], GUARD * 4);
	report({ &tl }, "copy_blocks L %d, %d blocks of %zu words (NKV %d HS %d %s), %d pairs (grid %ux%u of %u)", L,
	       nblocks, d.block_words, NKV, HS, dtype(bf), npairs, gridDim.x, gridDim.y, blockDim.x);
}

// prefill's gather of each sampling row's hidden state: rows of C act values
static void gather_rows_case(int T, int C, int bf, std::vector<int32_t> rows)
{
	gpu_model g = {};
	dec d = {};
	g.esize = bf ? 2 : 4, d.C = C;
	int n = (int)rows.size();
	size_t row_bytes = (size_t)C * g.esize;
	std::vector<unsigned char> ln(T * row_bytes), hidden(n * row_bytes + GUARD, GUARD_BYTE);
	for (auto &b : ln)
		b = (unsigned char)gen();
	g.ln = ln.data(), d.hidden = hidden.data(), d.d.rows = rows.data();
	sim_gather_rows(&d, &g, n, 0);
	tally tl("hidden", 0);
	for (int i = 0; i < n; i++)
		tl.same("row " + std::to_string(i), &hidden[i * row_bytes], &ln[rows[i] * row_bytes], row_bytes);
	std::vector<unsigned char> guard(GUARD, GUARD_BYTE);
	tl.same("just past the rows", &hidden[n * row_bytes], guard.data(), GUARD);
	report({ &tl }, "gather_rows %d of %d rows, C %d %s (%u blocks of %u)", n, T, C, dtype(bf), gridDim.x,
	       blockDim.x);
}

int main(int argc, char **argv)
{
	small = argc > 1 && strcmp(argv[1], "small") == 0;
	// every tile edge (64 queries, 32 keys) in one pack, sequences starting
	// anywhere; a long sequence between short ones; shorter packs
	std::vector<int> edges = { 33, 1, 64, 2, 65, 31, 63, 32 }, longer = { 2, 300, 1 }, some = { 65, 1, 32 },
			 tiny = { 33, 1, 2 };
	// NH, NKV: groups of 1 and 2 query heads over two kv heads, of 7 over one.
	// Head sizes 64 and 128 sum a row by shuffles across 2 and 4 threads, each
	// shuffle two barriers here: they run fewer and shorter packs.
	std::vector<shape> cases = {
		{ 16, 2, 2, 0, edges }, { 16, 7, 1, 1, tiny }, { 24, 4, 2, 0, tiny }, { 24, 2, 2, 1, edges },
		{ 32, 2, 2, 0, edges }, { 32, 7, 1, 1, tiny }, { 48, 7, 1, 0, tiny }, { 48, 2, 2, 1, edges },
		{ 80, 2, 2, 0, edges }, { 80, 4, 2, 1, tiny }, { 96, 7, 1, 0, tiny }, { 96, 2, 2, 1, edges },
		{ 48, 4, 2, 0, longer }, { 64, 2, 2, 0, edges }, { 64, 1, 1, 1, longer }, { 128, 2, 2, 0, some },
		{ 128, 2, 1, 1, tiny },
	};
	if (small)   // each head size once, for ThreadSanitizer: a block's barriers between two tiles of keys
		cases = { { 16, 7, 1, 0, tiny }, { 24, 4, 2, 1, tiny }, { 32, 2, 2, 0, tiny }, { 48, 7, 1, 1, tiny },
			  { 64, 2, 1, 0, tiny },  { 80, 4, 2, 1, tiny }, { 96, 2, 2, 0, tiny }, { 128, 1, 1, 1, { 33, 1 } } };
	for (const shape &c : cases)
		if (c.bf)
			attention_case<bf16>(c);
		else
			attention_case<float>(c);
	attention_refusals();

	// a partial block copied to each of a group's other samples (one source, several pairs)
	copy_blocks_case(3, 9, 2, 64, 1, { 2, 5, 2, 7, 2, 8, 0, 1 });
	copy_blocks_case(1, 4, 1, 16, 1, { 3, 0 });    // a block of 128 words: fewer than the threads
	copy_blocks_case(2, 5, 7, 24, 0, { 1, 4 });    // 2688 words: past the block's stride, not a multiple of it
	// each sample of a group samples from its prompt's last row, which several share
	gather_rows_case(40, 896, 0, { 4, 4, 4, 39, 0, 17 });
	gather_rows_case(9, 72, 1, { 8, 0, 0 });
	gather_rows_case(3, 4100, 1, { 2 });   // 4100 halfwords: past the block's stride
	printf("%s\n", fails ? "FAILED" : "all passed");
	return fails != 0;
}
