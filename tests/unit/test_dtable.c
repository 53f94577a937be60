/*
 * test_dtable.c: grpo-step's --debug-table rows, every cell of every row,
 * against values worked out by hand for one micro-batch: a sequence whose
 * tokens are unclipped, clipped high and not clipped (A > 0, ratio < 1), one
 * with A < 0 clipped low, one with no trained token, and a padding span;
 * then without a reference or tokens, without the sampler's logprobs for one
 * sequence, under a TIS cap and with the sequence ratio.
 */
#include <stdio.h>
#include <string.h>

#include "../tap.h"
#include "base/buf.h"
#include "model/tokenizer.h"
#include "train/dtable.h"
#include "train/loss.h"

/* A byte-level tokenizer: id b is byte b (GPT-2's map of bytes to printable
 * characters in the vocab), so 9 is a tab, 10 a newline, 92 a backslash. */
static struct tokenizer *byte_tokenizer(void)
{
	struct buf j = { 0 };
	buf_printf(&j, "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
	               "\"trim_offsets\": false, \"use_regex\": false}, "
	               "\"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
	               "\"trim_offsets\": false, \"use_regex\": false}, "
	               "\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {");
	unsigned shifted = 256;
	for (unsigned c = 0; c < 256; c++) {
		int kept = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
		unsigned cp = kept ? c : shifted++;
		buf_printf(&j, "%s\"\\u%04x\": %u", c ? ", " : "", cp, c);
	}
	buf_printf(&j, "}}}");
	struct err e = { 0 };
	struct tokenizer *t = tok_load_mem((const char *)j.data, j.len, "bytes.json", &e);
	if (!t)
		diag("tokenizer: %s", e.msg);
	buf_free(&j);
	return t;
}

/* The micro-batch: 11 tokens in spans of 5, 3, 1 (three sequences) and 2
 * (padding). */
enum { T = 11 };
static int32_t input_ids[T] = { 120, 9, 10, 92, 999, 1, 120, 9, 10, 0, 0 };
static uint8_t loss_mask[T] = { 0, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0 };
static float advantages[T] = { 0, 0, 0.5f, 0.5f, 0.5f, 0, -1, -1, 0.25f, 0, 0 };
static float sampler[T] = { 0, 0, -0.25f, -0.5f, -0.75f, 0, -1, -2, 0, 0, 0 };
static float ref[T] = { 0, 0, -0.3f, -0.4f, -0.5f, 0, -1.5f, -2.5f, 0, 0, 0 };
/* the trainer's: log-ratios to the sampler 0, 0.5, -0.25 in the first
 * sequence (mean 1/12), -0.5 and 0 in the second (mean -0.25) */
static float trainer[T] = { -9, -3, -0.25f, 0, -1, -7, -1.5f, -2, -4, -5, -6 };
static uint32_t seq_lens[] = { 5, 3, 1, 2 };

static struct microbatch batch(struct traj_id *sid, struct traj_id *gid)
{
	struct microbatch mb = { 0 };
	mb.n_tokens = T;
	mb.input_ids = input_ids;
	mb.loss_mask = loss_mask;
	mb.advantages = advantages;
	mb.inference_logprobs = sampler;
	mb.ref_logprobs = ref;
	mb.n_seq_lens = 4;
	mb.seq_lens = seq_lens;
	mb.n_seqs = 3;
	mb.sequence_ids = sid;
	mb.group_ids = gid;
	mb.step = 3;
	mb.rank = 1;
	mb.index = 2;
	return mb;
}

/* The table dtable_mb writes equals want, row by row. */
static void rows_are(const struct microbatch *mb, const struct loss_opts *o, int tokens,
                     const struct tokenizer *tok, const char *want, const char *what)
{
	struct buf b = { 0 };
	int r = dtable_mb(&b, 7, mb, trainer, o, tokens, tok);
	buf_put_u8(&b, 0);
	const char *got = (const char *)b.data;
	int same = r == 0 && strcmp(got, want) == 0;
	if (!ok(same, "%s", what)) {
		/* the first row that differs */
		const char *g = got, *w = want;
		while (*g && *w && strcspn(g, "\n") == strcspn(w, "\n") && !strncmp(g, w, strcspn(g, "\n"))) {
			g += strcspn(g, "\n") + (g[strcspn(g, "\n")] != 0);
			w += strcspn(w, "\n") + (w[strcspn(w, "\n")] != 0);
		}
		diag("status %d; first row apart:\n#  got:  %.*s\n#  want: %.*s", r, (int)strcspn(g, "\n"), g,
		     (int)strcspn(w, "\n"), w);
	}
	buf_free(&b);
}

/* Every cell: the ids as given (tab and newline in an id become spaces), a
 * sequence's length, its trained tokens, its last trained token's advantage
 * (0 when none) and the means over its trained tokens; a token's position,
 * id, text (empty for an id the tokenizer lacks), advantage, logprobs (the
 * trainer's empty only for a sequence's first token), ratio, clip flag and
 * mask. The padding span has no row. */
#define S "seq\t7\t1\t2\t"
#define K "tok\t7\t1\t2\t"
#define ID0 "7\tg x y\t"
#define ID1 "s1\t2\t"
#define ID2 "9\t2\t"
static const char seq0[] = S ID0 "\t5\t3\t\t\t0.5\t-0.500000\t-0.400000\t-0.416667\t\t\t\n";
static const char seq1[] = S ID1 "\t3\t2\t\t\t-1\t-1.500000\t-2.000000\t-1.750000\t\t\t\n";
#define SEQ2 S ID2 "\t1\t0\t\t\t0\t\t\t\t\t\t\n"

static void test_default_rows(const struct tokenizer *tok, struct traj_id *sid, struct traj_id *gid)
{
	struct microbatch mb = batch(sid, gid);
	struct loss_opts o;
	loss_opts_default(&o);
	char want[4096];
	snprintf(want, sizeof want, "%s%s%s%s%s%s%s%s%s%s%s%s", seq0,
	         K ID0 "0\t\t\t120\tx\t0\t\t\t0.000000\t\t\t0\n",
	         K ID0 "1\t\t\t9\t\\t\t0\t\t\t-3.000000\t\t\t0\n",
	         K ID0 "2\t\t\t10\t\\n\t0.5\t-0.250000\t-0.300000\t-0.250000\t1\t0\t1\n",
	         K ID0 "3\t\t\t92\t\\\\\t0.5\t-0.500000\t-0.400000\t0.000000\t1.64872\t1\t1\n",
	         K ID0 "4\t\t\t999\t\t0.5\t-0.750000\t-0.500000\t-1.000000\t0.778801\t0\t1\n",
	         seq1,
	         K ID1 "0\t\t\t1\t\\x01\t0\t\t\t0.000000\t\t\t0\n",
	         K ID1 "1\t\t\t120\tx\t-1\t-1.000000\t-1.500000\t-1.500000\t0.606531\t1\t1\n",
	         K ID1 "2\t\t\t9\t\\t\t-1\t-2.000000\t-2.500000\t-2.000000\t1\t0\t1\n",
	         SEQ2,
	         K ID2 "0\t\t\t10\t\\n\t0.25\t\t\t0.000000\t\t\t0\n");
	rows_are(&mb, &o, 1, tok, want, "every cell of every row, with tokens and their text");

	mb.ref_logprobs = NULL;
	rows_are(&mb, &o, 0, NULL, S ID0 "\t5\t3\t\t\t0.5\t-0.500000\t\t-0.416667\t\t\t\n"
	                            S ID1 "\t3\t2\t\t\t-1\t-1.500000\t\t-1.750000\t\t\t\n" SEQ2,
	         "no reference: its mean empty; no --debug-tokens: the sequence rows alone");
	snprintf(want, sizeof want, "%s%s%s%s",
	         K ID1 "0\t\t\t1\t\t0\t\t\t0.000000\t\t\t0\n",
	         K ID1 "1\t\t\t120\t\t-1\t-1.000000\t\t-1.500000\t0.606531\t1\t1\n",
	         K ID1 "2\t\t\t9\t\t-1\t-2.000000\t\t-2.000000\t1\t0\t1\n", "");
	struct buf b = { 0 };
	dtable_mb(&b, 7, &mb, trainer, &o, 1, NULL);
	buf_put_u8(&b, 0);
	ok(strstr((const char *)b.data, want) != NULL, "no reference: each token's ref_lp empty; no tokenizer: no text");
	buf_free(&b);
}

/* The second sequence without the sampler's logprobs: its sampler means
 * and logprobs empty, its ratio 1 (nothing clipped), the others as before. */
static void test_missing_logprobs(struct traj_id *sid, struct traj_id *gid)
{
	struct microbatch mb = batch(sid, gid);
	uint8_t missing[3] = { 0, 1, 0 };
	mb.logprobs_missing = missing;
	struct loss_opts o;
	loss_opts_default(&o);
	char want[4096];
	snprintf(want, sizeof want, "%s%s%s%s%s",
	         seq0,   /* its own flag 0: unchanged (a sequence row each) */
	         S ID1 "\t3\t2\t\t\t-1\t\t-2.000000\t-1.750000\t\t\t\n",
	         K ID1 "0\t\t\t1\t\t0\t\t\t0.000000\t\t\t0\n",
	         K ID1 "1\t\t\t120\t\t-1\t\t-1.500000\t-1.500000\t1\t0\t1\n",
	         K ID1 "2\t\t\t9\t\t-1\t\t-2.500000\t-2.000000\t1\t0\t1\n");
	struct buf b = { 0 };
	dtable_mb(&b, 7, &mb, trainer, &o, 1, NULL);
	buf_put_u8(&b, 0);
	const char *got = (const char *)b.data;
	const char *s1 = strstr(got, S ID1);
	ok(strncmp(got, seq0, strlen(seq0)) == 0 && s1 && strncmp(s1, want + strlen(seq0), strlen(want) - strlen(seq0)) == 0,
	   "a sequence without sampler logprobs: empty sampler cells, ratio 1, nothing clipped; the others as they were");
	if (!s1 || strncmp(s1, want + strlen(seq0), strlen(want) - strlen(seq0)))
		diag("got:\n%s", got);
	ok(strstr(got, K ID0 "3\t\t\t92\t\t0.5\t-0.500000\t-0.400000\t0.000000\t1.64872\t1\t1\n") != NULL,
	   "the first sequence's tokens still clipped against the sampler");
	buf_free(&b);
}

/* The clipped column of each trained token, in order, for options o. */
static void clipped_are(const struct loss_opts *o, const char *want, const char *what)
{
	struct traj_id sid[3] = { traj_id_num(7), traj_id_num(8), traj_id_num(9) };
	struct traj_id gid[3] = { traj_id_num(1), traj_id_num(2), traj_id_num(2) };
	struct microbatch mb = batch(sid, gid);
	struct buf b = { 0 }, flags = { 0 };
	dtable_mb(&b, 7, &mb, trainer, o, 1, NULL);
	buf_put_u8(&b, 0);
	for (char *row = (char *)b.data; row && *row; row = strchr(row, '\n') ? strchr(row, '\n') + 1 : NULL) {
		/* cells 17 and 18: clipped, loss_mask */
		const char *c = row;
		for (int i = 1; i < 17; i++)
			c = strchr(c, '\t') + 1;
		if (!strncmp(row, "tok", 3) && c[2] == '1')
			buf_put_u8(&flags, (uint8_t)c[0]);
	}
	buf_put_u8(&flags, 0);
	if (!ok(strcmp((const char *)flags.data, want) == 0, "%s", what))
		diag("got %s, want %s", (const char *)flags.data, want);
	buf_free(&b);
	buf_free(&flags);
}

static void test_clipped(void)
{
	struct loss_opts o;
	loss_opts_default(&o);
	clipped_are(&o, "01010", "token ratios: 1.65 with A > 0 and 0.61 with A < 0 clipped (ε 0.2)");
	o.clip_high = 0.7f;
	clipped_are(&o, "00010", "ε_high 0.7: 1.65 no longer clipped");
	o.clip_high = 0.2f;
	o.clip_low = 0.4f;
	clipped_are(&o, "01000", "ε_low 0.4: 0.61 no longer clipped");
	loss_opts_default(&o);
	o.tis_cap = 2;
	clipped_are(&o, "00000", "a TIS cap: the ratio to ℓ_old is 1, nothing clipped");
	loss_opts_default(&o);
	o.ratio = LOSS_RATIO_SEQUENCE;
	clipped_are(&o, "00011", "sequence ratio: exp(1/12) = 1.087 within 0.2; exp(-0.25) = 0.78 clipped, both tokens");
	o.clip_high = 0.05f;
	clipped_are(&o, "11111", "sequence ratio, ε_high 0.05: 1.087 clipped, every token of it");
	o.tis_cap = 2;
	clipped_are(&o, "00000", "sequence ratio under a TIS cap: 1, nothing clipped");
}

int main(void)
{
	struct buf h = { 0 };
	dtable_header(&h);
	buf_put_u8(&h, 0);
	ok(strcmp((const char *)h.data, "kind\tstep\trank\tmb\tsequence_id\tgroup_id\tpos\tlen\ttrained\ttoken\ttext\t"
	                                 "advantage\tsampler_lp\tref_lp\ttrainer_lp\tratio\tclipped\tloss_mask\n") == 0,
	   "the header: 18 columns");
	buf_free(&h);

	struct tokenizer *tok = byte_tokenizer();
	ok(tok != NULL, "a byte-level tokenizer");
	struct traj_id sid[3] = { traj_id_num(7), traj_id_none(), traj_id_num(9) };
	struct traj_id gid[3] = { traj_id_none(), traj_id_num(2), traj_id_num(2) };
	ok(traj_id_set_str(&sid[1], "s1", 2) == 0 && traj_id_set_str(&gid[0], "g\tx\ny", 5) == 0, "string ids");
	if (tok)
		test_default_rows(tok, sid, gid);
	test_missing_logprobs(sid, gid);
	test_clipped();
	tok_free(tok);
	for (int i = 0; i < 3; i++) {
		traj_id_free(&sid[i]);
		traj_id_free(&gid[i]);
	}
	return tap_done();
}
