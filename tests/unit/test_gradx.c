/* The gradient file of grpo-step --rank (train/gradx.h, version 3): what
 * gradx_encode writes gradx_decode reads back bit for bit; the bytes are
 * the documented little-endian layout, checked against bytes written out by
 * hand (checksum by Python's FNV-1a); every damage is refused naming the
 * file and what is wrong: a bad magic, another version, every truncation,
 * trailing bytes, another rank, step, epoch, options or count, and every
 * changed byte; the options' hash changes with every option that shapes
 * the gradient or the update; and gradx_reduce sums two ranks through real
 * files, refusing a peer trained with other options; three ranks in rank
 * order with DONE's counts checked; a peer that does not come, or a signal,
 * ends the wait as something a later run gets past; rank 0 finishes only
 * once every rank acknowledged, and leaves a later step's exchange; each
 * file system call failing in turn is said, never half done. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "train/gradx.h"
#include "tap.h"

#define P "q/.grad/step_7/e0.rank_1"

/* The file of the layout test: rank 1, step 0x0102030405, epoch 3, two elements. */
static const unsigned char by_hand[] = {
	'G', 'R', 'P', 'O', 'G', 'R', 'D', '1',          /* magic */
	0x03, 0x00, 0x00, 0x00,                          /* version 3 */
	0x01, 0x00, 0x00, 0x00,                          /* rank 1 */
	0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00,  /* step 0x0102030405 */
	0x03, 0x00, 0x00, 0x00,                          /* epoch 3 */
	0x14, 0x00, 0x00, 0x00,                          /* 20 statistics */
	0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  /* n = 2 */
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  /* options hash 0x1122334455667788 */
	0x54, 0xa4, 0xec, 0x6f, 0xf6, 0xb8, 0xb6, 0x23,  /* FNV-1a of the payload */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x40,  /* sequences 3.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x44, 0x40,  /* loss tokens 40.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,  /* micro-batches 2.0 */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f,  /* loss 1.0 */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* policy, kl */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* entropy, tokens */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* seqs, kl_sum */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* ent_sum, ratio_sum */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x7f,  /* ratio_min +inf */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0xff,  /* ratio_max -inf */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* clip_low, clip_high */
	0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, /* dual_clipped, tis_capped */
	0, 0, 0, 0, 0, 0, 0, 0,                          /* diff_sum */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0xbf,  /* diff_abs_sum -0.5 */
	0x00, 0x00, 0x80, 0x3f,                          /* g[0] 1.0f */
	0x00, 0x00, 0x00, 0xc0,                          /* g[1] -2.0f */
};

/* Statistics and a gradient of n elements that differ everywhere. */
static void sample(struct loss_totals *c, struct loss_stats *st, float *g, size_t n, int seed)
{
	double *d = (double *)st;
	for (size_t i = 0; i < sizeof *st / sizeof *d; i++)
		d[i] = seed + 0.125 * (double)i - 1.0 / 3;
	*c = (struct loss_totals){ 3 + seed, 40 + seed, 2 + seed };
	for (size_t k = 0; k < n; k++)
		g[k] = (float)((double)seed * 1e-3 - (double)k / 7);
}

/* Decode a copy of exactly len bytes (so that AddressSanitizer sees any read past them). */
static int decode(const unsigned char *data, size_t len, const struct gradx_head *want, float *acc, struct err *e)
{
	unsigned char *copy = malloc(len ? len : 1);
	memcpy(copy, data, len);
	struct loss_totals c;
	struct loss_stats st;
	int r = gradx_decode(copy, len, P, want, &c, &st, acc, e);
	free(copy);
	return r;
}

static int refused(const unsigned char *data, size_t len, const struct gradx_head *want, const char *what)
{
	struct err e = { 0 };
	float acc[8] = { 0 };
	int r = decode(data, len, want, acc, &e);
	int untouched = 1;
	for (int k = 0; k < 8; k++)
		untouched &= acc[k] == 0;
	int ok_ = r == -1 && strncmp(e.msg, P ": ", strlen(P) + 2) == 0 && strstr(e.msg, what) && untouched;
	if (!ok_)
		diag("  got %d '%s', want '%s'", r, e.msg, what);
	return ok_;
}

static void layout(void)
{
	struct gradx_head h = { 1, 3, 0x0102030405ll, 2, 0x1122334455667788ull };
	struct loss_totals c = { 3, 40, 2 };
	struct loss_stats st;
	memset(&st, 0, sizeof st);
	st.loss = 1, st.ratio_min = INFINITY, st.ratio_max = -INFINITY, st.diff_abs_sum = -0.5;
	float g[2] = { 1, -2 };
	struct buf b = { 0 };
	ok(gradx_encode(&b, &h, &c, &st, g) == 0, "encode a file of 2 elements");
	is_int(b.len, sizeof by_hand, "%zu bytes: a 56-byte header, 20 doubles, 2 floats", sizeof by_hand);
	size_t at = 0;
	while (at < b.len && at < sizeof by_hand && b.data[at] == by_hand[at])
		at++;
	if (!ok(b.len == sizeof by_hand && at == b.len, "byte for byte the little-endian layout written by hand"))
		diag("  first difference at byte %zu", at);

	float acc[2] = { 0, 0 };
	struct loss_totals rc;
	struct loss_stats rs;
	struct err e = { 0 };
	ok(gradx_decode(by_hand, sizeof by_hand, P, &h, &rc, &rs, acc, &e) == 0, "the bytes by hand decode (%s)",
	   e.msg);
	ok(acc[0] == 1 && acc[1] == -2 && rc.seqs == 3 && rc.tokens == 40 && rc.mbs == 2 && rs.loss == 1 &&
	   rs.ratio_min == INFINITY && rs.ratio_max == -INFINITY && rs.diff_abs_sum == -0.5 && rs.policy == 0,
	   "to the values they were written from");

	buf_reset(&b);
	buf_append(&b, "abc", 3);
	ok(gradx_encode(&b, &h, &c, &st, g) == 0 && b.len == 3 + sizeof by_hand && memcmp(b.data, "abc", 3) == 0 &&
	   memcmp(b.data + 3, by_hand, sizeof by_hand) == 0, "encode appends the file after what the buffer holds");
	buf_free(&b);
}

static void round_trip(void)
{
	enum { N = 1000 };
	float g[N], acc[N], one[N];
	struct loss_totals c, rc;
	struct loss_stats st, rs;
	sample(&c, &st, g, N, 5);
	g[1] = -0.0f, g[2] = 1e-45f, g[3] = INFINITY, g[4] = NAN;   /* every float's bits travel */
	st.ratio_min = INFINITY;
	struct gradx_head h = { 3, 1, 42, N, 99 };
	struct buf b = { 0 };
	struct err e = { 0 };
	ok(gradx_encode(&b, &h, &c, &st, g) == 0, "encode %d elements", N);
	for (int k = 0; k < N; k++)
		acc[k] = -0.0f;   /* x + -0 is x, for x = -0 too */
	memset(&rs, 0, sizeof rs);
	ok(gradx_decode(b.data, b.len, P, &h, &rc, &rs, acc, &e) == 0, "decode (%s)", e.msg);
	ok(memcmp(acc, g, sizeof g) == 0, "the gradient comes back bit for bit (-0, subnormal, inf, NaN too)");
	ok(memcmp(&rs, &st, sizeof st) == 0 && rc.seqs == c.seqs && rc.tokens == c.tokens && rc.mbs == c.mbs,
	   "the counts and every statistic too");
	for (int k = 0; k < N; k++)
		acc[k] = one[k] = 1.5f;
	g[3] = 0, g[4] = 0;
	buf_reset(&b);
	gradx_encode(&b, &h, &c, &st, g);
	gradx_decode(b.data, b.len, P, &h, &rc, &rs, acc, &e);
	int added = 1;
	for (int k = 0; k < N; k++)
		added &= acc[k] == one[k] + g[k];
	ok(added, "decode adds the gradient into what is there");
	buf_free(&b);
}

static void refusals(void)
{
	enum { N = 3 };
	float g[N];
	struct loss_totals c;
	struct loss_stats st;
	sample(&c, &st, g, N, 1);
	struct gradx_head h = { 1, 0, 7, N, 0xfeedull };
	struct buf b = { 0 };
	gradx_encode(&b, &h, &c, &st, g);
	size_t n = b.len;
	unsigned char *f = malloc(n + 1);
	memcpy(f, b.data, n);

	f[0] = 'X';
	ok(refused(f, n, &h, "not a gradient file of grpo-step --rank (bad magic)"), "a bad magic");
	ok(refused(f, 1, &h, "bad magic"), "a file of one byte, not the magic's first: a bad magic, not a short file");
	memcpy(f, b.data, n);
	f[8] = 1;
	ok(refused(f, n, &h, "a gradient file of version 1, and this grpo-step reads version 3"), "version 1");
	f[8] = 4;
	ok(refused(f, n, &h, "version 4"), "version 4");
	memcpy(f, b.data, n);
	/* version 1 as it was written: host order, its own layout */
	unsigned char v1[40 + 8 * GRADX_NSTAT + 4 * N + 8] = "GRPOGRD1";
	uint32_t one = 1;
	memcpy(v1 + 8, &one, 4);
	ok(refused(v1, sizeof v1, &h, "version 1"), "a file of version 1");
	/* version 2 as it was written: little-endian, a 48-byte header without the options */
	unsigned char v2[48 + 8 * GRADX_NSTAT + 4 * N] = "GRPOGRD1";
	v2[8] = 2;
	ok(refused(v2, sizeof v2, &h, "a gradient file of version 2, and this grpo-step reads version 3"),
	   "a file of version 2 (what the previous grpo-step wrote)");

	struct gradx_head w = h;
	w.rank = 2;
	ok(refused(f, n, &w, "holds rank 1, step 7, epoch 0; expected rank 2, step 7, epoch 0"), "another rank");
	w = h, w.step = 8;
	ok(refused(f, n, &w, "expected rank 1, step 8, epoch 0"), "another step");
	w = h, w.epoch = 1;
	ok(refused(f, n, &w, "expected rank 1, step 7, epoch 1"), "another epoch");
	w = h, w.opts = 0xfeefull;
	ok(refused(f, n, &w, "rank 1's options differ from this rank's (options hash 000000000000feed, here "
	                     "000000000000feef)"), "other options");
	w = h, w.n = N + 1;
	ok(refused(f, n, &w, "wrong count: a gradient of 3 elements and 20 statistics, expected 4 and 20"),
	   "another element count");
	f[28] = 21;
	ok(refused(f, n, &h, "wrong count: a gradient of 3 elements and 21 statistics, expected 3 and 20"),
	   "another statistics count");
	memcpy(f, b.data, n);
	f[n] = 0;
	ok(refused(f, n + 1, &h, "229 bytes, expected 228: trailing bytes"), "a byte too many");
	f[60] ^= 0x10;
	ok(refused(f, n, &h, "checksum mismatch: the payload hashes to"), "a changed byte of the payload");

	/* every truncation, every byte changed */
	int shorts = 0, flips = 0, payload = 0;
	for (size_t k = 0; k < n; k++) {
		char what[64];
		if (k < GRADX_HEAD)
			snprintf(what, sizeof what, "short file: %zu bytes, less than a header (%d)", k, GRADX_HEAD);
		else
			snprintf(what, sizeof what, "short file: %zu bytes, expected %zu", k, n);
		shorts += refused(b.data, k, &h, what);
		memcpy(f, b.data, n);
		f[k] ^= 0x01;
		flips += refused(f, n, &h, "");
		f[k] ^= 0xff;
		flips += refused(f, n, &h, "");
		if (k >= GRADX_HEAD) {
			payload += refused(f, n, &h, "checksum mismatch");
			f[k] ^= 0xff ^ 0x80;
			payload += refused(f, n, &h, "checksum mismatch");
		}
	}
	is_int(shorts, n, "cut at each of its %zu bytes: a short file, saying how many bytes, and how many a "
	       "header or the file needs", n);
	is_int(flips, 2 * n, "any one byte changed anywhere (two ways each): refused");
	is_int(payload, 2 * (n - GRADX_HEAD), "a changed byte of the payload: by the checksum");
	free(f);
	buf_free(&b);
}

/* Write rank's file of step 7, epoch 0 as its process would: 0, or -1. */
static int write_file(const char *q, int rank, const struct loss_totals *c, const struct loss_stats *st,
                      const float *g, size_t n, uint64_t opts)
{
	char path[512];
	snprintf(path, sizeof path, "%s/.grad/step_7/e0.rank_%d", q, rank);
	struct gradx_head h = { rank, 0, 7, n, opts };
	struct buf b = { 0 };
	gradx_encode(&b, &h, c, st, g);
	FILE *f = fopen(path, "wb");
	int r = f && fwrite(b.data, 1, b.len, f) == b.len ? 0 : -1;
	if (f && fclose(f) != 0)
		r = -1;
	buf_free(&b);
	return r;
}

static void put_file(const char *q, int rank, const struct loss_totals *c, const struct loss_stats *st,
                     const float *g, size_t n, uint64_t opts)
{
	ok(write_file(q, rank, c, st, g, n, opts) == 0, "rank %d's file by hand", rank);
}

/* A new policy queue in q (under $TMPDIR) and its step 7's exchange directory
 * in dir, made; 0 when either cannot be. */
static int temp_queue(char *q, size_t qsize, char *dir, size_t dsize)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(q, qsize, "%s/test_gradx.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(q))
		return 0;
	snprintf(dir, dsize, "%s/.grad/step_7", q);
	return shell("mkdir -p '%s'", dir) == 0;
}

static void reduce(void)
{
	enum { N = 50 };
	const uint64_t OPTS = 0x0123456789abcdefull;
	const char *tmp = getenv("TMPDIR");
	char q[512], dir[600], cmd[700];
	snprintf(q, sizeof q, "%s/test_gradx.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!ok(mkdtemp(q) != NULL, "a temporary policy queue"))
		return;
	snprintf(dir, sizeof dir, "%s/.grad/step_7", q);
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	if (system(cmd) != 0)
		return;

	float g0[N], g1[N], sum[N];
	struct loss_totals c0, c1;
	struct loss_stats s0, s1;
	sample(&c0, &s0, g0, N, 0);
	sample(&c1, &s1, g1, N, 1);
	put_file(q, 1, &c1, &s1, g1, N, OPTS);
	struct err e = { 0 };
	struct gradx x = { q, 7, 0, 2, 5, NULL, c0, NULL, NULL, OPTS };
	struct loss_stats st = s0, want = s0;
	ok(gradx_reduce(&x, 0, g0, sum, N, &st, &e) == 0, "rank 0 of 2 reduces (%s)", e.msg);
	int same = 1;
	for (int k = 0; k < N; k++)
		same &= sum[k] == 0.0f + g0[k] + g1[k];
	loss_stats_add(&want, &s1);
	ok(same && memcmp(&st, &want, sizeof st) == 0, "to the sum in rank order, the statistics summed");

	char path[700];
	snprintf(path, sizeof path, "%s/e0.rank_0", dir);
	struct buf b = { 0 };
	float back[N] = { 0 };
	struct loss_totals rc;
	struct loss_stats rs;
	struct gradx_head h0 = { 0, 0, 7, N, OPTS };
	ok(buf_read_file(&b, path, &e) == 0 && gradx_decode(b.data, b.len, path, &h0, &rc, &rs, back, &e) == 0 &&
	   memcmp(back, g0, sizeof g0) == 0 && memcmp(&rs, &s0, sizeof rs) == 0 && rc.tokens == c0.tokens,
	   "rank 0 published its own gradient as a version 3 file (%s)", e.msg);
	buf_free(&b);

	/* rank 1 reads rank 0's file and acknowledges; then rank 0 finishes */
	struct gradx x1 = { q, 7, 1, 2, 5, NULL, c1, NULL, NULL, OPTS };
	st = s1;
	float sum1[N];
	ok(gradx_reduce(&x1, 0, g1, sum1, N, &st, &e) == 0 && memcmp(sum, sum1, sizeof sum) == 0 &&
	   memcmp(&st, &want, sizeof st) == 0, "rank 1 gets the same bits (%s)", e.msg);
	ok(gradx_finish(&x, 1, &e) == 0 && access(dir, F_OK) != 0, "rank 0 finishes: the step's directory is gone (%s)",
	   e.msg);

	/* a damaged peer: refused naming its file */
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	if (system(cmd) != 0)
		return;
	g1[N - 1] = 5;
	put_file(q, 1, &c1, &s1, g1, N, OPTS);
	snprintf(path, sizeof path, "%s/e0.rank_1", dir);
	snprintf(cmd, sizeof cmd, "printf x | dd of='%s' bs=1 seek=100 conv=notrunc 2>/dev/null", path);
	st = s0;
	ok(system(cmd) == 0 && gradx_reduce(&x, 0, g0, sum, N, &st, &e) == -1 && strstr(e.msg, path) == e.msg &&
	   strstr(e.msg, ": checksum mismatch"), "a peer's damaged file is refused naming it: %s", e.msg);
	snprintf(cmd, sizeof cmd, "truncate -s 47 '%s'", path);
	ok(system(cmd) == 0 && gradx_reduce(&x, 0, g0, sum, N, &st, &e) == -1 &&
	   strstr(e.msg, "e0.rank_1: short file: 47 bytes"), "a cut one too: %s", e.msg);

	/* a peer given another --lr: its gradient is not summed */
	put_file(q, 1, &c1, &s1, g1, N, OPTS + 1);
	st = s0;
	ok(gradx_reduce(&x, 0, g0, sum, N, &st, &e) == -1 && strstr(e.msg, path) == e.msg &&
	   strstr(e.msg, "rank 1's options differ from this rank's"), "a peer of other options is refused: %s",
	   e.msg);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", q);
	if (system(cmd) != 0)
		diag("could not remove %s", q);
}

/* Three ranks, this one in the middle: the sum is 0 + g0 + g1 + g2 in rank
 * order (an element 0 in every rank stays exactly 0), the statistics are
 * summed, and the ranks' counts together are checked against DONE's,
 * naming it and what differs; a rank that refuses does not acknowledge. */
static void three_ranks(void)
{
	enum { N = 40 };
	const uint64_t OPTS = 77;
	char q[512], dir[600], ack[700];
	if (!ok(temp_queue(q, sizeof q, dir, sizeof dir), "a temporary policy queue"))
		return;
	snprintf(ack, sizeof ack, "%s/e0.read_1", dir);
	float g[3][N], sum[N];
	struct loss_totals c[3];
	struct loss_stats s[3], want;
	loss_stats_init(&want);
	for (int r = 0; r < 3; r++) {
		sample(&c[r], &s[r], g[r], N, r);
		g[r][N / 2] = 0;
		loss_stats_add(&want, &s[r]);
	}
	put_file(q, 0, &c[0], &s[0], g[0], N, OPTS);
	put_file(q, 2, &c[2], &s[2], g[2], N, OPTS);
	/* sample's counts are 3 + r sequences, 40 + r loss tokens, 2 + r micro-batches */
	struct done_manifest dm;
	memset(&dm, 0, sizeof dm);
	dm.ranks = 3, dm.micro_batches_per_rank = 3, dm.sequences = 12, dm.loss_tokens = 123;
	struct gradx x = { q, 7, 1, 3, 5, NULL, c[1], &dm, "DONE", OPTS };
	struct loss_stats st = s[1];
	struct err e = { 0 };
	ok(gradx_reduce(&x, 0, g[1], sum, N, &st, &e) == 0, "rank 1 of 3 reduces, its counts and its peers' "
	   "those of DONE (%s)", e.msg);
	int same = 1;
	for (int k = 0; k < N; k++)
		same &= sum[k] == 0.0f + g[0][k] + g[1][k] + g[2][k];
	ok(same && sum[N / 2] == 0, "to the sum of the three in rank order, an element 0 in each exactly 0");
	ok(memcmp(&st, &want, sizeof st) == 0, "the three ranks' statistics summed");
	ok(access(ack, F_OK) == 0, "rank 1 acknowledges with e0.read_1");

	static const struct {
		uint32_t seqs, dummies;
		int64_t tokens;
		const char *msg;
	} bad[] = {
		{ 13, 0, 123, "DONE: says 13 sequences, and the micro-batches of every rank hold 12" },
		{ 12, 0, 124, "DONE: says 124 loss tokens, and the micro-batches of every rank hold 123" },
		{ 12, 1, 123, "DONE: says 8 micro-batches that are not dummies, and the ranks hold 9" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		dm.sequences = bad[i].seqs, dm.dummies = bad[i].dummies, dm.loss_tokens = bad[i].tokens;
		unlink(ack);
		st = s[1];
		ok(gradx_reduce(&x, 0, g[1], sum, N, &st, &e) == -1 && strcmp(e.msg, bad[i].msg) == 0 &&
		   access(ack, F_OK) != 0, "counts that DONE does not say: refused, not acknowledged (%s)", e.msg);
	}
	shell("rm -rf '%s'", q);
}

/* A peer not there: the wait ends after the timeout, or at a signal,
 * naming the rank, as something a later run gets past (EAGAIN); rank 0
 * finishes a step only once every other rank acknowledged its last epoch. */
static void waiting(void)
{
	enum { N = 4 };
	const uint64_t OPTS = 78;
	char q[512], dir[600], path[700];
	if (!ok(temp_queue(q, sizeof q, dir, sizeof dir), "a temporary policy queue"))
		return;
	float g[N], sum[N];
	struct loss_totals c;
	struct loss_stats st;
	struct err e = { 0 };
	sample(&c, &st, g, N, 1);
	struct gradx x = { q, 7, 1, 2, 0, NULL, c, NULL, NULL, OPTS };
	snprintf(path, sizeof path, "%s/e0.rank_0", dir);
	ok(gradx_reduce(&x, 0, g, sum, N, &st, &e) == -1 && e.errnum == EAGAIN &&
	   strstr(e.msg, "step 7: rank 0's gradient did not appear within 0s") == e.msg && strstr(e.msg, path),
	   "rank 0's gradient not there within --rank-timeout: later, naming it (%s)", e.msg);
	snprintf(path, sizeof path, "%s/e0.rank_1", dir);
	ok(access(path, F_OK) == 0, "rank 1 published its own before waiting");
	snprintf(path, sizeof path, "%s/e0.read_1", dir);
	ok(access(path, F_OK) != 0, "and acknowledged nothing");
	volatile sig_atomic_t stop = 1;
	x.stop = &stop, x.timeout_s = 60;
	ok(gradx_reduce(&x, 0, g, sum, N, &st, &e) == -1 && e.errnum == EAGAIN &&
	   strstr(e.msg, "e0.rank_0: stopped by a signal while waiting for rank 0"),
	   "a signal ends the wait: later (%s)", e.msg);

	/* rank 0 of 3 after 2 epochs: it waits for e1.read_1 and e1.read_2 */
	struct gradx x0 = { q, 7, 0, 3, 0, NULL, c, NULL, NULL, OPTS };
	shell("touch '%s/e0.read_1' '%s/e1.read_2'", dir, dir);
	ok(gradx_finish(&x0, 2, &e) == -1 && e.errnum == EAGAIN &&
	   strstr(e.msg, "step 7: rank 1's acknowledgement did not appear within 0s") && access(dir, F_OK) == 0,
	   "rank 1 acknowledged only epoch 0 of 2: rank 0 leaves the step's files (%s)", e.msg);
	shell("touch '%s/e1.read_1' && rm '%s/e1.read_2'", dir, dir);
	ok(gradx_finish(&x0, 2, &e) == -1 && strstr(e.msg, "rank 2's acknowledgement did not appear") &&
	   access(dir, F_OK) == 0, "rank 2 not at all: the same (%s)", e.msg);
	shell("touch '%s/e1.read_2'", dir);
	ok(gradx_finish(&x0, 2, &e) == 0 && access(dir, F_OK) != 0, "both: the step's directory is removed (%s)",
	   e.msg);
	shell("rm -rf '%s'", q);
}

/* gradx_finish removes the exchanges of earlier steps, which a rank 0
 * killed after publishing left, and never a later step's, which a rank
 * already on the next step may have begun. */
static void finish_others(void)
{
	char q[512], dir[600], path[700];
	if (!ok(temp_queue(q, sizeof q, dir, sizeof dir), "a temporary policy queue"))
		return;
	struct err e = { 0 };
	struct gradx x = { q, 7, 0, 1, 0, NULL, { 0, 0, 0 }, NULL, NULL, 0 };
	shell("mkdir '%s/.grad/step_5' '%s/.grad/step_8' && touch '%s/e0.rank_0' '%s/.grad/step_5/e0.rank_0' "
	      "'%s/.grad/step_8/e0.rank_1'", q, q, dir, q, q);
	ok(gradx_finish(&x, 1, &e) == 0, "rank 0 finishes step 7 (%s)", e.msg);
	snprintf(path, sizeof path, "%s/.grad/step_8/e0.rank_1", q);
	ok(access(dir, F_OK) != 0 && shell("test ! -e '%s/.grad/step_5'", q) == 0,
	   "step 7's exchange and step 5's left over are removed");
	ok(access(path, F_OK) == 0, "step 8's, under way, stays");
	x.step = 8;
	ok(gradx_finish(&x, 1, &e) == 0 && shell("test ! -e '%s/.grad'", q) == 0,
	   "once step 8 finishes .grad is gone (%s)", e.msg);
	shell("rm -rf '%s'", q);
}

/* What rank 1 of 2 leaves after gradx_reduce returned r: NULL when it is
 * right (-1 saying the failure, or 0 with the sum, its own gradient
 * published and acknowledged), else what is wrong. */
static const char *reduce_left(int r, const struct err *e, const char *dir, const float *sum, const float *g0,
                               const float *g1, size_t n, int errnum)
{
	if (r == -1)
		return strstr(e->msg, strerror(errnum)) ? NULL : "a failure that does not say why";
	if (r != 0)
		return "neither 0 nor -1";
	for (size_t k = 0; k < n; k++)
		if (sum[k] != 0.0f + g0[k] + g1[k])
			return "0 with a wrong sum";
	char path[700];
	struct buf b = { 0 };
	struct err e2 = { 0 };
	float back[64] = { 0 };
	struct loss_totals c;
	struct loss_stats st;
	struct gradx_head h = { 1, 0, 7, n, 79 };
	snprintf(path, sizeof path, "%s/e0.rank_1", dir);
	int good = n <= 64 && buf_read_file(&b, path, &e2) == 0 &&
	           gradx_decode(b.data, b.len, path, &h, &c, &st, back, &e2) == 0 && memcmp(back, g1, n * 4) == 0;
	buf_free(&b);
	if (!good)
		return "0 without its own gradient published";
	snprintf(path, sizeof path, "%s/e0.read_1", dir);
	return access(path, F_OK) == 0 ? NULL : "0 without acknowledging";
}

/* Each file system call failing in turn (a full or failing disk): rank 1
 * says so, or goes on as if none had failed; then a peer's file that
 * cannot be read, and rank 0 finishing with each call failing. */
static void faults(void)
{
	enum { N = 16 };
	const uint64_t OPTS = 79;
	char q[512], dir[600], path[700];
	if (!ok(temp_queue(q, sizeof q, dir, sizeof dir), "a temporary policy queue"))
		return;
	float g0[N], g1[N], sum[N];
	struct loss_totals c0, c1;
	struct loss_stats s0, s1, st;
	struct err e = { 0 };
	sample(&c0, &s0, g0, N, 0);
	sample(&c1, &s1, g1, N, 1);
	struct gradx x = { q, 7, 1, 2, 5, NULL, c1, NULL, NULL, OPTS };
	const char *why = NULL;
	long n = 0;
	for (long k = 0; k <= n && !why; k++) {
		if (shell("rm -rf '%s/.grad'", q) != 0 || shell("mkdir -p '%s'", dir) != 0 ||
		    write_file(q, 0, &c0, &s0, g0, N, OPTS) != 0) {
			why = "cannot set the queue up";
			break;
		}
		st = s1;
		fsys_test_fail_at(k, EIO);
		int r = gradx_reduce(&x, 0, g1, sum, N, &st, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		why = k == 0 && r != 0 ? "it fails with no failure" : reduce_left(r, &e, dir, sum, g0, g1, N, EIO);
		if (why)
			diag("  call %ld of %ld failing: %s (%d: %s)", k, n, why, r, e.msg);
	}
	ok(n >= 4 && !why, "rank 1's exchange with each of its %ld file system calls failing (EIO): said, or "
	   "done whole", n);

	/* alone in a queue without .grad: a failure while publishing is said, not
	 * taken for rank 0 not coming (nor waited past, when the directory is made) */
	why = NULL;
	x.timeout_s = 0;
	for (long k = 1; !why; k++) {
		if (shell("rm -rf '%s/.grad'", q) != 0) {
			why = "cannot set the queue up";
			break;
		}
		st = s1;
		fsys_test_fail_at(k, EIO);
		int r = gradx_reduce(&x, 0, g1, sum, N, &st, &e);
		long made = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		if (made < k)
			break;   /* past publishing: it waits for rank 0 */
		if (r != -1 || !strstr(e.msg, strerror(EIO)))
			why = e.msg;
		if (why)
			diag("  call %ld failing: %d: %s", k, r, e.msg);
	}
	ok(!why, "rank 1 publishing into a queue without .grad, each call failing: it says so");
	x.timeout_s = 5;
	shell("mkdir -p '%s' && rm -f '%s'/*", dir, dir);
	write_file(q, 0, &c0, &s0, g0, N, OPTS);

	/* a peer's file there but unreadable (a directory by its name) */
	snprintf(path, sizeof path, "%s/e0.rank_0", dir);
	shell("rm -rf '%s' && mkdir '%s'", path, path);
	ok(gradx_reduce(&x, 0, g1, sum, N, &st, &e) == -1 && strstr(e.msg, path) == e.msg,
	   "a peer's file that cannot be read: refused naming it (%s)", e.msg);
	/* rank 1's own file or its acknowledgement that cannot be published */
	ok(shell("rm -rf '%s' '%s/e0.rank_1' && mkdir '%s/e0.rank_1'", path, dir, dir) == 0 &&
	   write_file(q, 0, &c0, &s0, g0, N, OPTS) == 0 && gradx_reduce(&x, 0, g1, sum, N, &st, &e) == -1 && strstr(e.msg, "e0.rank_1"),
	   "its own gradient not published: it fails (%s)", e.msg);
	ok(shell("rmdir '%s/e0.rank_1' && rm -f '%s/e0.read_1' && mkdir '%s/e0.read_1'", dir, dir, dir) == 0 &&
	   gradx_reduce(&x, 0, g1, sum, N, &st, &e) == -1 && strstr(e.msg, "e0.read_1"),
	   "its acknowledgement not published: it fails (%s)", e.msg);

	/* rank 0 finishing step 7, with step 5's exchange left over */
	struct gradx x0 = { q, 7, 0, 2, 0, NULL, c0, NULL, NULL, OPTS };
	why = NULL, n = 0;
	for (long k = 0; k <= n && !why; k++) {
		if (shell("rm -rf '%s/.grad' && mkdir -p '%s' '%s/.grad/step_5' && touch '%s/e0.rank_0' "
		          "'%s/e0.rank_1' '%s/e0.read_1' '%s/.grad/step_5/e0.rank_1'", q, dir, q, dir, dir, dir, q) != 0) {
			why = "cannot set the queue up";
			break;
		}
		fsys_test_fail_at(k, EIO);
		int r = gradx_finish(&x0, 1, &e);
		if (k == 0)
			n = fsys_calls_made();
		fsys_test_fail_at(0, 0);
		if (r == -1 && !strstr(e.msg, strerror(EIO)))
			why = "a failure that does not say why";
		else if (r == 0 && shell("test ! -e '%s' && test ! -e '%s/.grad/step_5'", dir, q) != 0)
			why = "0 with an exchange left";
		else if (r != 0 && r != -1)
			why = "neither 0 nor -1";
		else if (k == 0 && r != 0)
			why = "it fails with no failure";
		if (why)
			diag("  call %ld of %ld failing: %s (%d: %s)", k, n, why, r, e.msg);
	}
	ok(n >= 6 && !why, "rank 0's finish with each of its %ld file system calls failing (EIO): said, or done "
	   "whole", n);
	shell("rm -rf '%s'", q);
}

/* Every option that shapes the gradient or the update changes the hash;
 * dr_grpo's --max-len only under dr_grpo. */
static void opts_hash(void)
{
	struct loss_opts l0, l;
	struct optim_opts o0, o;
	loss_opts_default(&l0);
	optim_opts_default(&o0);
	uint64_t h0 = gradx_opts_hash(&l0, &o0, 1, 0);
	ok(h0 == gradx_opts_hash(&l0, &o0, 1, 0) && h0 != 0, "the same options: the same hash %016llx",
	   (unsigned long long)h0);
	int differ = 0, k = 0;
#define CHANGED(stmt, epochs, mask)                                                  \
	do {                                                                         \
		l = l0, o = o0;                                                      \
		stmt;                                                                \
		k++;                                                                 \
		if (gradx_opts_hash(&l, &o, epochs, mask) != h0)                     \
			differ++;                                                    \
		else                                                                 \
			diag("  %s: the same hash", #stmt);                          \
	} while (0)
	CHANGED(l.ratio = LOSS_RATIO_SEQUENCE, 1, 0);
	CHANGED(l.clip_low = 0.21f, 1, 0);
	CHANGED(l.clip_high = 0.28f, 1, 0);
	CHANGED(l.dual_clip = 3, 1, 0);
	CHANGED(l.cispo = 1, 1, 0);
	CHANGED(l.kl = LOSS_KL_K1, 1, 0);
	CHANGED(l.kl = LOSS_KL_K3P, 1, 0);
	CHANGED(l.kl_clamp = 10, 1, 0);
	CHANGED(l.beta = 0.04f, 1, 0);
	CHANGED(l.entropy_coef = 0.001f, 1, 0);
	CHANGED(l.tis_cap = 2, 1, 0);
	CHANGED(l.agg = LOSS_AGG_DAPO, 1, 0);
	CHANGED((void)0, 2, 0);
	CHANGED((void)0, 1, 1);
	CHANGED(o.lr = 2e-6, 1, 0);
	CHANGED(o.warmup_steps = 10, 1, 0);
	CHANGED((o.schedule = LR_COSINE, o.total_steps = 100), 1, 0);
	CHANGED(o.total_steps = 100, 1, 0);
	CHANGED(o.weight_decay = 0.1, 1, 0);
	CHANGED(o.beta1 = 0.8, 1, 0);
	CHANGED(o.beta2 = 0.99, 1, 0);
	CHANGED(o.eps = 1e-6, 1, 0);
	CHANGED(o.max_grad_norm = 0.5, 1, 0);
#undef CHANGED
	is_int(differ, k, "each of %d options changed alone changes the hash", k);
	l = l0, l.max_len = 512;
	ok(gradx_opts_hash(&l, &o0, 1, 0) == h0, "--max-len without dr_grpo, which does not read it: the same");
	l0.agg = l.agg = LOSS_AGG_DR_GRPO, l0.max_len = 256;
	ok(gradx_opts_hash(&l, &o0, 1, 0) != gradx_opts_hash(&l0, &o0, 1, 0), "--max-len under dr_grpo: another");
	o = o0, o.wd_on = WD_ON_ALL;
	ok(gradx_opts_hash(&l0, &o, 1, 0) == gradx_opts_hash(&l0, &o0, 1, 0),
	   "--weight-decay-on without weight decay, which makes it moot: the same");
	o0.weight_decay = o.weight_decay = 0.1;
	ok(gradx_opts_hash(&l0, &o, 1, 0) != gradx_opts_hash(&l0, &o0, 1, 0),
	   "--weight-decay-on all against matrices under weight decay: another");
}

int main(void)
{
	layout();
	round_trip();
	refusals();
	opts_hash();
	reduce();
	three_ranks();
	waiting();
	finish_others();
	faults();
	return tap_done();
}
