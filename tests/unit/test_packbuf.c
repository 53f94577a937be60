/*
 * test_packbuf: grpo-pack's buffer without a process or a file: step
 * readiness with a batch size or a token budget, groups kept whole, drops
 * and truncation counted once and in words, carrying for --fill-target,
 * and the fair turn with units carried across two runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsys.h"
#include "data/done.h"
#include "data/sfile.h"
#include "pack/packbuf.h"
#include "spool/claim.h"
#include "spool/spool.h"
#include "tap.h"

#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!ok(strcmp(g_, w_) == 0, __VA_ARGS__)) \
		diag("  got '%s', want '%s' (%s:%d)", g_, w_, __FILE__, __LINE__); \
} while (0)

/* One trajectory of len tokens (a one-token prompt, the rest response),
 * run NULL for the default run. */
static void mk_traj(struct traj *t, int64_t sid, uint32_t len, const char *run, int64_t pv)
{
	traj_init(t);
	t->n_prompt = len ? 1 : 0;
	t->n_response = len ? len - 1 : 0;
	t->prompt_tokens = calloc(1, sizeof(int32_t));
	t->response_tokens = calloc(len ? len : 1, sizeof(int32_t));
	t->logprobs = calloc(len ? len : 1, sizeof(float));
	t->run = run ? strdup(run) : NULL;
	t->sequence_id = traj_id_num(sid);
	t->policy_version = pv;
	t->scored = 1;
}

/* A group of n sequences of lengths len[], ids sid0, sid0+1, ..., into b. */
static int add(struct packbuf *b, const uint32_t *len, uint32_t n, int64_t sid0, const char *run, int64_t pv)
{
	struct traj t[8];
	struct group g = { traj_id_num(sid0), n, t };
	struct err e;
	for (uint32_t j = 0; j < n; j++)
		mk_traj(&t[j], sid0 + j, len[j], run, pv);
	int r = packbuf_add_group(b, &g, -1, "test", 1, &e);
	for (uint32_t j = 0; j < n; j++)
		traj_free(&t[j]);
	return r;
}

static struct packbuf_opt opt(uint32_t T)
{
	return (struct packbuf_opt){ T, "--seq-len 8", PACKBUF_OVER_SKIP, -1, 0, 0, 0, 0, 0 };
}

static struct packstep_opt popt(uint32_t T)
{
	struct packstep_opt po = { 0 };
	po.seq_len = po.seq_len_given = T;
	po.ranks = 1;
	po.cost = (struct pack_cost){ 1, 0 };
	return po;
}

/* Take one step and commit it: its sequence ids in order, "10 20 ". */
static int step_ids(struct packbuf *b, int64_t step, int flush, char *out, size_t size)
{
	struct packstep_opt po = popt(b->o.seq_len);
	struct packbuf_step st;
	struct err e;
	int r = packbuf_take(b, step, flush, &po, &st, &e);
	size_t at = 0;
	out[0] = 0;
	for (uint32_t i = 0; r > 0 && i < st.n; i++)
		at += (size_t)snprintf(out + at, size - at, "%lld ", (long long)st.seq[i].t->sequence_id.num);
	if (r > 0)
		packbuf_commit(b, &st);
	return r;
}

static void readiness(void)
{
	uint32_t one = 4, two[] = { 3, 3 };
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	o.batch_size = 3;
	packbuf_init(&b, &o);
	add(&b, two, 2, 10, NULL, 0);
	ok(!packbuf_ready(&b, 1), "-b 3: two sequences buffered are not a step");
	add(&b, &one, 1, 20, NULL, 0);
	ok(packbuf_ready(&b, 1), "-b 3: three are");
	packbuf_free(&b);

	o = opt(8);
	o.batch_tokens = 10;
	packbuf_init(&b, &o);
	add(&b, two, 2, 10, NULL, 0);
	ok(!packbuf_ready(&b, 1), "-k 10: 6 tokens are not a step");
	add(&b, &one, 1, 20, NULL, 0);
	ok(packbuf_ready(&b, 1) && packbuf_tokens(&b) == 10, "-k 10: 10 tokens are");
	packbuf_free(&b);

	uint32_t three = 3;
	packbuf_init(&b, &o);
	add(&b, two, 2, 10, NULL, 0);
	add(&b, &three, 1, 20, NULL, 0);
	ok(!packbuf_ready(&b, 1), "-k 10: 9 tokens are not a step");
	packbuf_free(&b);

	o = opt(8);
	o.min_tokens = 16;
	packbuf_init(&b, &o);
	add(&b, two, 2, 10, NULL, 0);
	add(&b, &one, 1, 20, NULL, 0);
	ok(!packbuf_ready(&b, 1), "no limit: 10 tokens short of --min-tokens 16");
	packbuf_free(&b);

	o = opt(8);
	o.batch_size = 2;
	o.max_lag = 0;
	packbuf_init(&b, &o);
	add(&b, two, 2, 10, NULL, 0);
	add(&b, &one, 1, 20, NULL, 1);
	ok(packbuf_ready(&b, 1), "-b 2 --max-lag 0: three of versions 0, 0, 1 are step 1");
	ok(!packbuf_ready(&b, 2), "but not step 2, where the two of version 0 are stale");
	packbuf_free(&b);
}

static void groups(void)
{
	uint32_t three[] = { 2, 2, 2 }, one = 2;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	char ids[128];
	o.batch_size = 2;
	o.keep_groups = 1;
	packbuf_init(&b, &o);
	add(&b, three, 3, 10, NULL, 0);
	add(&b, &one, 1, 20, NULL, 0);
	is_int(step_ids(&b, 1, 0, ids, sizeof ids), 1, "-g -b 2: a step");
	is_str(ids, "10 11 12 ", "a group of 3 goes whole, alone, though -b says 2");
	step_ids(&b, 2, 0, ids, sizeof ids);
	is_str(ids, "20 ", "the next group in the next step");
	is_int(step_ids(&b, 3, 0, ids, sizeof ids), 0, "then nothing is left");
	packbuf_free(&b);

	o.batch_size = 0;
	o.batch_tokens = 6;
	packbuf_init(&b, &o);
	add(&b, three, 3, 10, NULL, 0);
	add(&b, &one, 1, 20, NULL, 0);
	step_ids(&b, 1, 0, ids, sizeof ids);
	is_str(ids, "10 11 12 ", "-g -k 6: a group of 3 sequences of 2 tokens is the step's 6 tokens");
	step_ids(&b, 2, 0, ids, sizeof ids);
	is_str(ids, "20 ", "the next group waits for the next step");
	packbuf_free(&b);
}

static void drops(void)
{
	uint32_t lens[] = { 5, 9, 0, 3 }, old = 4, longer = 12;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	char ids[128], line[512];
	o.max_lag = 0;
	o.batch_size = 2;
	packbuf_init(&b, &o);
	add(&b, lens, 4, 10, NULL, 2);
	add(&b, &old, 1, 20, NULL, 0);
	ok(b.drops.n[PACKSTEP_OVERLONG] == 1 && b.drops.n[PACKSTEP_EMPTY] == 1 && b.n == 3,
	   "9 tokens at T=8 with skip, and an empty one: dropped as read, 3 buffered");
	step_ids(&b, 3, 0, ids, sizeof ids);
	is_str(ids, "10 13 ", "step 3 with --max-lag 0: policy_version 0 is stale, the rest goes");
	is_int(b.n, 0, "nothing left");
	packbuf_free(&b);

	packbuf_init(&b, &o);
	add(&b, lens, 4, 10, NULL, 2);
	add(&b, &old, 1, 20, NULL, 0);
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e;
	packbuf_take(&b, 3, 0, &po, &st, &e);
	is_int((int)b.drops.n[PACKSTEP_STALE], 1, "the stale one is counted when its step is taken");
	packbuf_drops_text(&b, 3, line, sizeof line);
	is_str(line, "dropped 1 stale (policy_version below 2, --max-lag 0), 1 overlong (longer than --seq-len 8), "
	       "1 empty (no tokens)", "in words");
	packbuf_commit(&b, &st);
	ok(!packstep_drops_any(&b.drops), "and zeroed once the step is published");
	packbuf_free(&b);

	o = opt(8);
	o.overlong = PACKBUF_OVER_TRUNCATE;
	o.batch_size = 1;
	packbuf_init(&b, &o);
	add(&b, &old, 1, 10, NULL, 0);
	add(&b, &longer, 1, 20, NULL, 0);
	packbuf_take(&b, 1, 0, &po, &st, &e);
	is_int((int)b.drops.truncated, 0, "truncate: not counted while the sequence waits");
	packbuf_commit(&b, &st);
	packbuf_take(&b, 2, 0, &po, &st, &e);
	ok(b.drops.truncated == 1 && st.seq[0].use == 8, "counted once, in the step that holds it, cut to 8");
	packbuf_drops_text(&b, 2, line, sizeof line);
	is_str(line, "truncated 1 to --seq-len 8 (0 left with no trained token)", "in words");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
}

static void carry(void)
{
	uint32_t lens[] = { 5, 6, 3 };
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	char ids[128];
	o.fill_target = 0.9;
	packbuf_init(&b, &o);
	add(&b, lens, 1, 10, NULL, 0);
	add(&b, lens + 1, 1, 11, NULL, 0);
	add(&b, lens + 2, 1, 20, NULL, 0);
	step_ids(&b, 1, 0, ids, sizeof ids);
	is_str(ids, "10 20 ", "F=0.9, T=8: 5 + 3 fill one micro-batch; the 6 is carried");
	ok(b.n == 1 && b.ent[0].t.sequence_id.num == 11, "and waits in the buffer");
	is_int((int)packbuf_tokens(&b), 6, "its 6 tokens are what the buffer holds");
	step_ids(&b, 2, 1, ids, sizeof ids);
	is_str(ids, "11 ", "a flush step takes it");
	packbuf_free(&b);
}

/*
 * Two runs, a's two sequences arriving before b's one; -b 3 chooses a, b,
 * a in turn. Fill keeps a's 5 and b's 3 and carries a's 6, the third
 * turn: the next step starts with run a, so that its carried sequence
 * keeps its place, not with b, the run after the last one that took.
 */
static void two_runs(struct packbuf *b, double F)
{
	uint32_t a1 = 5, a2 = 6, b1 = 3;
	struct packbuf_opt o = opt(8);
	o.fill_target = F;
	o.batch_size = 3;
	packbuf_init(b, &o);
	add(b, &a1, 1, 10, "a", 0);
	add(b, &a2, 1, 11, "a", 0);
	add(b, &b1, 1, 20, "b", 0);
}

static void fair_carry(void)
{
	uint32_t b2 = 2;
	struct packbuf b;
	char ids[128];
	two_runs(&b, 0.9);
	step_ids(&b, 1, 0, ids, sizeof ids);
	is_str(ids, "10 20 ", "two runs, F=0.9: a's 5 and b's 3 kept, a's 6 carried");
	is_str(b.runs[b.turn].name, "a", "the turn goes back to a, whose carried sequence was next");
	add(&b, &b2, 1, 21, "b", 0);
	b.o.batch_size = 1;
	step_ids(&b, 2, 1, ids, sizeof ids);
	is_str(ids, "11 ", "step 2 starts with the carried sequence, before b's newer one");
	is_str(b.runs[b.turn].name, "b", "then it is b's turn");
	packbuf_free(&b);

	two_runs(&b, 0);
	step_ids(&b, 1, 0, ids, sizeof ids);
	ok(b.n == 0 && strcmp(b.runs[b.turn].name, "b") == 0,
	   "without carrying, the turn passes to b as before");
	packbuf_free(&b);
}

/*
 * The carried unit is not of the run whose turn began the step: a's 3,
 * then b's 5, 8 and 2 (a has no more), -b 4, F=0.9 at T=8: the 2 would
 * fill a last micro-batch alone and is carried; the turn goes back to b,
 * not on to a, the run after the last that took.
 */
static void fair_carry_other_run(void)
{
	uint32_t a1 = 3, bl[] = { 5, 8, 2 }, a2 = 1;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	char ids[128];
	o.fill_target = 0.9;
	o.batch_size = 4;
	packbuf_init(&b, &o);
	add(&b, &a1, 1, 10, "a", 0);
	for (int i = 0; i < 3; i++)
		add(&b, &bl[i], 1, 20 + i, "b", 0);
	step_ids(&b, 1, 0, ids, sizeof ids);
	is_str(ids, "10 20 21 ", "a's 3 and b's 5 and 8 kept, b's 2 carried");
	is_str(b.runs[b.turn].name, "b", "the turn goes back to b, whose carried sequence was next");
	add(&b, &a2, 1, 11, "a", 0);
	b.o.batch_size = 1;
	step_ids(&b, 2, 1, ids, sizeof ids);
	is_str(ids, "22 ", "step 2 starts with the carried sequence, before a's newer one");
	packbuf_free(&b);
}

/* More sequences than the buffer's first allocation holds, in one step, in arrival order. */
static void many_sequences(void)
{
	enum { N = 600 };
	uint32_t len = 2;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	int in_order = 1;
	o.batch_size = N;
	packbuf_init(&b, &o);
	for (int i = 0; i < N; i++)
		add(&b, &len, 1, 1000 + i, NULL, 0);
	ok(b.n == N && packbuf_tokens(&b) == 2 * N, "%d sequences of 2 tokens buffered", N);
	is_int(packbuf_take(&b, 1, 1, &po, &st, &e), 1, "-b %d: a step", N);
	for (uint32_t i = 0; i < st.n; i++)
		in_order &= st.seq[i].t->sequence_id.num == 1000 + (int64_t)i && st.seq[i].use == 2;
	ok(st.n == N && in_order, "of all of them, in arrival order");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
}

/* A plain input of one sequence is a job like any: recorded, finished, so that a re-run packs nothing. */
static void job_of_one(void)
{
	uint32_t len = 4;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	packbuf_init(&b, &o);
	add(&b, &len, 1, 10, NULL, 0);
	is_int(packbuf_job_settle(&b, NULL, "T=8", 1, &e), 0, "one sequence read: a new job");
	is_int(packbuf_take(&b, 1, 1, &po, &st, &e), 1, "a step");
	ok(st.job && st.job->finished && st.job->sequences == 1 && st.job->id == b.job.hash && st.job->data != 0 &&
	   st.job->data != st.job->id, "its job recorded, finished, by its id (input and options) and its data");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
}

static int to_spool(void *ctx, const void *p, size_t n, struct err *e)
{
	return spool_write(ctx, p, n, e);
}

/* Publish QUEUE/step_N/rank_X/NAME holding one group of two sequences,
 * ids sid and sid + 1, of 4 and 5 tokens. */
static int put_group(const char *queue, int64_t step, int rank, const char *name, int64_t sid, struct err *e)
{
	struct traj t[2];
	struct group g = { traj_id_num(sid), 2, t };
	struct spool_out so;
	struct sfile_writer w;
	mk_traj(&t[0], sid, 4, NULL, 0);
	mk_traj(&t[1], sid + 1, 5, NULL, 0);
	int r = spool_open(&so, queue, step, rank, name, e);
	if (r == 0) {
		so.no_fsync = 1;
		r = sfile_writer_init(&w, to_spool, &so, 1, e);
		r = r < 0 ? r : sfile_write_group(&w, &g, e);
		r = r < 0 ? r : sfile_writer_finish(&w, e);
		sfile_writer_free(&w);
		r = r < 0 ? (spool_abort(&so), r) : spool_commit(&so, e);
	}
	traj_free(&t[0]);
	traj_free(&t[1]);
	return r < 0 ? -1 : 0;
}

/* A --watch run: a queue file a step, each claimed, packed and retired.
 * The buffer kept every source it ever read (some 9 KiB each, and walked
 * at every step): it must hold only those it still has sequences of. */
static void many_sources(void)
{
	enum { FILES = 200 };
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/scored", top);
	struct packbuf_opt o = opt(8);
	o.batch_size = 2;
	struct packbuf b;
	packbuf_init(&b, &o);
	struct packstep_opt po = popt(8);
	struct err e = { 0 };
	size_t most = 0;
	int r = 0, steps = 0;
	for (int i = 0; i < FILES && r == 0; i++) {
		struct claim c;
		r = put_group(queue, i, 0, "f.zst", 2 * i, &e);
		r = r < 0 ? r : claim_take(&c, queue, i, 0, "f.zst", 0, &e) != 0 ? -1 : 0;
		r = r < 0 ? r : packbuf_read_claim(&b, &c, &e);
		most = b.nsrc > most ? b.nsrc : most;
		struct packbuf_step st;
		while (r == 0 && packbuf_ready(&b, steps + 1) && (r = packbuf_take(&b, ++steps, 0, &po, &st, &e)) > 0) {
			packbuf_commit(&b, &st);
			r = packbuf_retire(&b, &e);
		}
	}
	ok(r == 0 && steps == FILES, "%d files claimed, packed a step each and retired", steps);
	if (r != 0)
		diag("%s", e.msg);
	ok(most == 1 && b.nsrc == 0, "the buffer held at most %zu sources, %zu at the end", most, b.nsrc);
	packbuf_free(&b);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
}

/* One trajectory of a prompt of p tokens and a response of r. */
static void mk_traj_pr(struct traj *t, int64_t sid, uint32_t p, uint32_t r)
{
	mk_traj(t, sid, 1, NULL, 0);
	free(t->prompt_tokens);
	free(t->response_tokens);
	free(t->logprobs);
	t->n_prompt = p;
	t->n_response = r;
	t->prompt_tokens = calloc(p, sizeof(int32_t));
	t->response_tokens = calloc(r, sizeof(int32_t));
	t->logprobs = calloc(r, sizeof(float));
}

/* A prompt longer than T, truncated: no response token is left to train. */
static void truncated_untrained(void)
{
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct traj t;
	struct group g = { traj_id_num(10), 1, &t };
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	char line[512];
	o.overlong = PACKBUF_OVER_TRUNCATE;
	packbuf_init(&b, &o);
	mk_traj_pr(&t, 10, 9, 2);
	packbuf_add_group(&b, &g, -1, "test", 1, &e);
	traj_free(&t);
	is_int(packbuf_take(&b, 1, 1, &po, &st, &e), 1, "a prompt of 9 and a response of 2 at T=8: a step");
	packbuf_drops_text(&b, 1, line, sizeof line);
	is_str(line, "truncated 1 to --seq-len 8 (1 left with no trained token)",
	       "cut to its prompt's first 8 tokens: nothing of it is trained, and the line says so");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
}

/* A stale plain input dropped before the job's step: the job is finished
 * all the same, so that a re-run finds it done instead of packing again. */
static void job_finished_after_stale(void)
{
	uint32_t len = 4;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	o.max_lag = 0;
	packbuf_init(&b, &o);
	add(&b, &len, 1, 10, NULL, 0);
	add(&b, &len, 1, 20, NULL, 5);
	is_int(packbuf_take(&b, 3, 1, &po, &st, &e), 1, "--max-lag 0, step 3: a step");
	ok(st.n == 1 && st.seq[0].t->sequence_id.num == 20, "of the fresh one only");
	ok(st.job && st.job->finished && st.job->sequences == 2 && st.job->n_done == 2,
	   "the job's record: finished, both sequences handled (one packed, one dropped)");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
}

/* A queue file QUEUE/step_S/rank_0/NAME of one group of n sequences, ids sid0..., policy version pv. */
static int queue_file(const char *queue, int64_t step, const char *name, int64_t sid0, const uint32_t *len,
		      uint32_t n, int64_t pv)
{
	struct traj t[8];
	struct group g = { traj_id_num(sid0), n, t };
	struct spool_out so;
	struct sfile_writer w;
	struct err e = { 0 };
	for (uint32_t j = 0; j < n; j++)
		mk_traj(&t[j], sid0 + j, len[j], NULL, pv);
	int r = spool_open(&so, queue, step, 0, name, &e);
	if (r == 0) {
		so.no_fsync = 1;
		r = sfile_writer_init(&w, to_spool, &so, 1, &e);
		r = r < 0 ? r : sfile_write_group(&w, &g, &e);
		r = r < 0 ? r : sfile_writer_finish(&w, &e);
		sfile_writer_free(&w);
		r = r < 0 ? (spool_abort(&so), r) : spool_commit(&so, &e);
	}
	for (uint32_t j = 0; j < n; j++)
		traj_free(&t[j]);
	return r;
}

/* Claim QUEUE/step_0/rank_0/NAME and read it into b: 0 or -1. */
static int claim_read(struct packbuf *b, const char *queue, const char *name)
{
	struct claim c;
	struct err e = { 0 };
	if (claim_take(&c, queue, 0, 0, name, 0, &e) != 0)
		return -1;
	return packbuf_read_claim(b, &c, &e);
}

static int retired(const char *queue, const char *name)
{
	return shell("test -e '%s/step_0/rank_0/.done/%s'", queue, name) == 0;
}

/* The input a step records for one queue file: finished or not, and the ordinals packed. */
static void is_input(const struct packbuf_step *st, const char *name, int finished, const char *ords,
		     const char *what)
{
	char got[128] = "";
	size_t at = 0;
	if (st->n_in == 1) {
		at = (size_t)snprintf(got, sizeof got, "%s %s", st->in[0].name, st->in[0].finished ? "finished" : "part");
		for (uint32_t x = 0; x < st->in[0].n_done && at < sizeof got; x++)
			at += (size_t)snprintf(got + at, sizeof got - at, " %u", st->in[0].done ? st->in[0].done[x] : 99);
	}
	char want[128];
	snprintf(want, sizeof want, "step_0/rank_0/%s %s%s", name, finished ? "finished" : "part", ords);
	is_str(got, want, "%s", what);
}

/*
 * Two queue files of two sequences, -b 3: step 1 finishes a and takes the
 * first of b, whose claim is kept; step 2 finishes b. Each file retired
 * once its last sequence is published, and only then; a step's manifest
 * names what it packed of each.
 */
static void sources_in_steps(void)
{
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/scored", top);
	uint32_t len[] = { 4, 5 };
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	char ids[128];
	o.batch_size = 3;
	packbuf_init(&b, &o);
	int r = queue_file(queue, 0, "a.zst", 10, len, 2, 0);
	r = r < 0 ? r : queue_file(queue, 0, "b.zst", 20, len, 2, 0);
	r = r < 0 ? r : claim_read(&b, queue, "a.zst");
	r = r < 0 ? r : claim_read(&b, queue, "b.zst");
	is_int(r, 0, "two queue files claimed and read");
	is_int(packbuf_take(&b, 1, 1, &po, &st, &e), 1, "-b 3: step 1");
	ok(st.n == 3 && st.n_in == 2, "of 3 sequences, from 2 files");
	ok(st.n_in == 2 && strcmp(st.in[0].name, "step_0/rank_0/a.zst") == 0 && st.in[0].finished &&
	   st.in[0].n_done == 2 && st.in[0].done && st.in[0].done[0] == 0 && st.in[0].done[1] == 1,
	   "a finished, its sequences 0 and 1 packed");
	ok(st.n_in == 2 && strcmp(st.in[1].name, "step_0/rank_0/b.zst") == 0 && !st.in[1].finished &&
	   st.in[1].n_done == 1 && st.in[1].done && st.in[1].done[0] == 0, "b in part: its sequence 0");
	packbuf_commit(&b, &st);
	is_int(packbuf_retire(&b, &e), 0, "retire after step 1");
	ok(retired(queue, "a.zst") && !retired(queue, "b.zst"), "a retired, b still claimed (one sequence waits)");
	is_int(step_ids(&b, 2, 1, ids, sizeof ids), 1, "step 2");
	is_str(ids, "21 ", "b's second sequence");
	is_int(packbuf_retire(&b, &e), 0, "retire after step 2");
	ok(retired(queue, "b.zst") && b.nsrc == 0, "b retired now, no source left");
	packbuf_free(&b);

	/* the same, the second step's manifest checked */
	packbuf_init(&b, &o);
	r = queue_file(queue, 0, "c.zst", 30, len, 2, 0);
	r = r < 0 ? r : queue_file(queue, 0, "d.zst", 40, len, 2, 0);
	r = r < 0 ? r : claim_read(&b, queue, "c.zst");
	r = r < 0 ? r : claim_read(&b, queue, "d.zst");
	is_int(r, 0, "two more claimed and read");
	packbuf_take(&b, 1, 1, &po, &st, &e);
	packbuf_commit(&b, &st);
	packbuf_retire(&b, &e);
	is_int(packbuf_take(&b, 2, 1, &po, &st, &e), 1, "step 2, c retired before it");
	is_input(&st, "d.zst", 1, " 0 1", "step 2 finishes d, both its sequences handled");
	packbuf_commit(&b, &st);
	packbuf_free(&b);
	if (shell("rm -rf '%s'", top) != 0)
		diag("could not remove %s", top);
}

/*
 * A queue file held back for a later run (packbuf_hold): its claim let go,
 * so that the file is claimable again, and what was dropped of it taken
 * out of drops, since the next run drops, and counts, it again.
 */
static void hold(void)
{
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/scored", top);
	uint32_t len[] = { 4, 12 }, fresh = 3;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct err e = { 0 };
	struct claim c;
	o.max_lag = 0;
	packbuf_init(&b, &o);
	int r = queue_file(queue, 0, "old.zst", 10, len, 2, 0);
	r = r < 0 ? r : claim_read(&b, queue, "old.zst");
	is_int(r, 0, "a queue file of policy_version 0, one sequence of 12 tokens at T=8, claimed and read");
	add(&b, &fresh, 1, 20, NULL, 5);
	is_int(packbuf_drop_stale(&b, 3, &e), 0, "step 3 with --max-lag 0");
	ok(b.drops.n[PACKSTEP_STALE] == 1 && b.drops.n[PACKSTEP_OVERLONG] == 1, "its 4 stale, its 12 overlong");
	packbuf_hold(&b);
	ok(b.drops.n[PACKSTEP_STALE] == 0 && b.drops.n[PACKSTEP_OVERLONG] == 0,
	   "held back: neither counted now (the next run drops them again)");
	is_int(claim_take(&c, queue, 0, 0, "old.zst", 0, &e), 0, "the file is claimable again");
	claim_let_go(&c, NULL);
	ok(!retired(queue, "old.zst"), "not retired");
	packbuf_free(&b);
	if (shell("rm -rf '%s'", top) != 0)
		diag("could not remove %s", top);
}

/* Pack the three files of queue (step_0: rank_0/a.zst, rank_0/b.zst,
 * rank_1/c.zst) into step 1, then retire them with the kth file system
 * call failing (0: none): packbuf_retire's result, its message in e. */
static int retire_failing(const char *queue, long k, struct err *e)
{
	static const struct { int rank; const char *name; } f[] = { { 0, "a.zst" }, { 0, "b.zst" }, { 1, "c.zst" } };
	struct packbuf_opt o = opt(16);
	struct packstep_opt po = popt(16);
	struct packbuf b;
	struct packbuf_step st;
	packbuf_init(&b, &o);
	int r = 0;
	for (int i = 0; i < 3 && r == 0; i++) {
		struct claim c;
		r = put_group(queue, 0, f[i].rank, f[i].name, 2 * i, e);
		r = r < 0 ? r : claim_take(&c, queue, 0, f[i].rank, f[i].name, 0, e) != 0 ? -1 : 0;
		r = r < 0 ? r : packbuf_read_claim(&b, &c, e);
	}
	if (r == 0 && packbuf_take(&b, 1, 1, &po, &st, e) == 1) {
		packbuf_commit(&b, &st);
		fsys_test_fail_at(k, EIO);
		r = packbuf_retire(&b, e);
		fsys_test_fail_at(0, 0);
	} else if (r == 0) {
		r = err_set(e, "no step taken: %s", e->msg);
	}
	packbuf_release(&b);
	packbuf_free(&b);
	return r;
}

/* grpo-pack's next manifest no longer names the files it retired, so
 * their retirement must be on disk first (claim.h): each rank directory's
 * .done flushed, once, and a failure to flush it is an error. */
static void retire_flushes(void)
{
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/scored", top);
	struct err e = { 0 };
	int flushed0 = 0, flushed1 = 0, other = 0, r;
	long k;
	for (k = 1; k < 100; k++) {
		shell("rm -rf '%s'", queue);
		if ((r = retire_failing(queue, k, &e)) == 0)
			break;
		if (strstr(e.msg, "/step_0/rank_0/.done: fsync failed"))
			flushed0++;
		else if (strstr(e.msg, "/step_0/rank_1/.done: fsync failed"))
			flushed1++;
		else if (!strstr(e.msg, "Input/output error"))
			diag("call %ld: %s", k, e.msg), other++;
	}
	ok(r == 0 && other == 0, "retired after %ld failing calls, each said", k - 1);
	ok(flushed0 == 1 && flushed1 == 1, "rank_0/.done flushed once for its two files (%d), rank_1/.done once (%d)",
	   flushed0, flushed1);
	char done[128];
	int all = 1;
	for (int i = 0; i < 3; i++) {
		static const char *const rec[] = { "rank_0/.done/a.zst", "rank_0/.done/b.zst", "rank_1/.done/c.zst" };
		snprintf(done, sizeof done, "%s/step_0/%s", queue, rec[i]);
		all &= access(done, F_OK) == 0;
	}
	ok(all, "the three files retired");
	shell("rm -rf '%s'", top);
}

/* A copy of a queue file read in the same run: its sequences leave the
 * buffer, the drops its reading counted go back, it is retired, and the
 * result (1) and message say so; the file itself stays as read. */
static void copies(void)
{
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64], rec[128];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/scored", top);
	struct packbuf_opt o = opt(4);   /* the 5-token sequence of each file is dropped: overlong */
	struct packbuf b;
	struct err e = { 0 };
	struct claim c;
	packbuf_init(&b, &o);
	int r = put_group(queue, 0, 0, "a.zst", 10, &e);
	r = r < 0 ? r : put_group(queue, 3, 1, "b.zst", 10, &e);   /* the same ids and tokens */
	r = r < 0 ? r : put_group(queue, 0, 0, "c.zst", 20, &e);   /* other ids */
	r = r < 0 ? r : claim_take(&c, queue, 0, 0, "a.zst", 0, &e) != 0 ? -1 : 0;
	r = r < 0 ? r : packbuf_read_claim(&b, &c, &e);
	ok(r == 0 && b.n == 1 && b.drops.n[PACKSTEP_OVERLONG] == 1, "a.zst read: one sequence, one dropped%s%s", r ? ": " : "", r ? e.msg : "");
	r = claim_take(&c, queue, 3, 1, "b.zst", 0, &e) != 0 ? -1 : packbuf_read_claim(&b, &c, &e);
	ok(r == 1 && strstr(e.msg, "/step_3/rank_1/b.zst: its 2 sequences are those of step_0/rank_0/a.zst, read before it: "
			    "not packed again, retired"), "its copy b.zst: %s", e.msg);
	snprintf(rec, sizeof rec, "%s/step_3/rank_1/.done/b.zst", queue);
	ok(b.n == 1 && b.drops.n[PACKSTEP_OVERLONG] == 1 && access(rec, F_OK) == 0,
	   "nothing of it buffered, its drop not counted, retired");
	r = claim_take(&c, queue, 0, 0, "c.zst", 0, &e) != 0 ? -1 : packbuf_read_claim(&b, &c, &e);
	ok(r == 0 && b.n == 2 && b.drops.n[PACKSTEP_OVERLONG] == 2, "c.zst, the same tokens under other ids, is read");
	packbuf_release(&b);
	packbuf_free(&b);
	shell("rm -rf '%s'", top);
}

/*
 * One step published by packstep_run into a queue, its figures worked by
 * hand: T = 9 given, P = 4 so capacity 8, W = 4, cost n + n^2. Sequences
 * of 6, 5 (run a) and 3 (run b) tokens: 14 tokens, a bound of 2 bins, so
 * 4 micro-batches, one a dummy of P tokens. Padded: 6 -> 8, 5 -> 8, 3 -> 4
 * (6 pad tokens); the ranks hold 8, 8, 4, 4 tokens and cost 6+36 + 2+4 =
 * 48, 5+25 + 3+9 = 42, 3+9 + 1+1 = 14 and the dummy 4+16 = 20.
 */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/*
 * A run after step 1 (whose manifest lists x.zst and y.zst), with no input
 * queue given: both records are copied into its step's manifest, so that
 * what was packed of y stays known; the step owns only its own names.
 */
static void carried_records(const char *queue)
{
	uint32_t len = 4;
	struct packbuf_opt o = opt(8);
	struct packbuf b;
	struct packstep_opt po = popt(8);
	struct packbuf_step st;
	struct err e = { 0 };
	packbuf_init(&b, &o);
	int r = packbuf_resume(&b, queue, 2, &e);
	r = r < 0 ? r : packbuf_carry(&b, NULL, 0, &e);
	is_int(r, 0, "resumed after step 1, its inputs carried");
	add(&b, &len, 1, 10, NULL, 0);
	is_int(packbuf_take(&b, 2, 1, &po, &st, &e), 1, "step 2");
	ok(st.n_in == 2 && st.n_own == 0 && strcmp(st.in[0].name, "step_1/rank_0/x.zst") == 0 && st.in[0].finished &&
	   strcmp(st.in[1].name, "step_1/rank_0/y.zst") == 0 && !st.in[1].finished && st.in[1].n_done == 2,
	   "its manifest lists step 1's two inputs as step 1 had them");
	packbuf_commit(&b, &st);
	ok(b.n_prev == 2 && strcmp(b.prev[0].name, "step_1/rank_0/x.zst") == 0 &&
	   strcmp(b.prev[1].name, "step_1/rank_0/y.zst") == 0, "and they are still the buffer's after the step");
	packbuf_free(&b);
}

static void publish(void)
{
	char top[] = "/tmp/test_packbuf.XXXXXX", queue[64], path[128];
	if (!mkdtemp(top)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(queue, sizeof queue, "%s/batches", top);
	struct traj t[4];
	uint32_t len[] = { 6, 5, 3, 2 };
	for (int i = 0; i < 4; i++)
		mk_traj(&t[i], 100 + i, len[i], NULL, 0);
	struct packstep_seq sq[] = { { &t[0], 6, 0 }, { &t[1], 5, 0 }, { &t[2], 3, 1 }, { &t[3], 2, 1 } };
	struct packstep_run runs[] = { { "a", 4, 1, 0, 0, 0 }, { "b", 0, 0, 0, 0, 0 }, { "c", 7, 3, 0, 0, 0 } };
	uint32_t done_ord[] = { 0, 2 };
	struct packstep_input in[] = { { "step_1/rank_0/x.zst", 1, NULL, 0, 0 }, { "step_1/rank_0/y.zst", 0, done_ord, 2, 0 } };
	struct packstep_drops dr = { { 1, 2, 3 }, 4, 5 };
	struct packstep_opt po = { 0 };
	po.seq_len = 8, po.seq_len_given = 9, po.ranks = 4, po.pad_multiple = 4;
	po.cost = (struct pack_cost){ 1, 1 };
	po.queue = queue, po.level = 1, po.no_fsync = 1;
	struct packstep_stats st;
	struct err e = { 0 };
	int r = packstep_run(&po, 1, sq, 3, runs, 3, 4, 2, in, 2, NULL, &dr, &st, &e);
	ok(r == 0, "step 1 published: %s", r ? e.msg : "");
	if (r != 0)
		goto out;
	is_int(st.tokens, 14, "14 tokens");
	is_int(st.pad_tokens, 6, "padding 2 + 3 + 1");
	is_int(st.dummies, 1, "one dummy");
	is_int(st.dummy_tokens, 4, "of P = 4 tokens");
	ok(st.per_rank == 1 && st.sequences == 3 && st.lower_bound == 2,
	   "1 micro-batch a rank, 3 sequences, a bound of 2: %u %u %u", st.per_rank, st.sequences, st.lower_bound);
	is_float(st.fill, 14 / 36.0, 1e-12, "fill against T as given: 14 / (4 * 9)");
	is_float(st.fill_bound, 14 / 36.0, 1e-12, "the bound's 4 micro-batches give the same");
	uint64_t rt[4];
	double rc[4];
	memcpy(rt, st.rank_tokens, sizeof rt);
	memcpy(rc, st.rank_cost, sizeof rc);
	qsort(rt, 4, sizeof *rt, cmp_u64);
	qsort(rc, 4, sizeof *rc, cmp_dbl);
	ok(rt[0] == 4 && rt[1] == 4 && rt[2] == 8 && rt[3] == 8, "ranks hold 4 4 8 8 tokens, padding included: "
	   "%llu %llu %llu %llu", (unsigned long long)rt[0], (unsigned long long)rt[1], (unsigned long long)rt[2],
	   (unsigned long long)rt[3]);
	ok(rc[0] == 14 && rc[1] == 20 && rc[2] == 42 && rc[3] == 48, "ranks cost 14 20 42 48, padding and dummy "
	   "included: %g %g %g %g", rc[0], rc[1], rc[2], rc[3]);
	ok(st.bytes > 0 && st.files_existing == 0 && st.rolled_back == 0, "bytes written, nothing there before");
	ok(runs[0].seqs == 2 && runs[0].tokens == 11 && runs[0].seqs_total == 6 && runs[0].run_step == 3 &&
	   runs[0].ready, "run a: 2 sequences, 11 tokens, 6 in all, -b 2: run step 3, ready");
	ok(runs[1].seqs == 1 && runs[1].tokens == 3 && runs[1].seqs_total == 1 && runs[1].run_step == 0 &&
	   !runs[1].ready, "run b: 1 sequence of 3, not a run step of 2 yet");
	ok(runs[2].seqs == 0 && runs[2].seqs_total == 7 && runs[2].run_step == 3 && !runs[2].ready,
	   "run c, absent: as it was");
	int files = 0;
	for (int q = 0; q < 4; q++) {
		snprintf(path, sizeof path, "%s/step_1/rank_%d/mb_0000.zst", queue, q);
		files += access(path, F_OK) == 0;
	}
	is_int(files, 4, "rank_0 .. rank_3 hold mb_0000.zst");

	struct buf mt = { 0 };
	is_int(packstep_metrics(&mt, &st, runs, 3, &dr), 0, "the metrics line made (grpo-pack prints it on 0)");
	buf_put_u8(&mt, 0);
	const char *m = (const char *)mt.data;
	ok(strstr(m, "\"tokens\":14,\"pad_tokens\":6,\"dummy_tokens\":4,\"fill\":0.388889,\"fill_bound\":0.388889") &&
	   strstr(m, "\"rank_tokens_max_mean\":1.333333,\"rank_cost_max_mean\":1.548387") &&
	   strstr(m, "\"runs\":[{\"run\":\"a\",\"sequences\":2,\"tokens\":11,\"run_step\":3,\"ready\":true},"
		     "{\"run\":\"b\",\"sequences\":1,\"tokens\":3,\"run_step\":0,\"ready\":false}]") &&
	   strstr(m, "\"dropped\":{\"stale\":1,\"overlong\":2,\"empty\":3},\"truncated\":4"),
	   "the metrics line: %s", m);
	buf_free(&mt);
	packstep_stats_free(&st);
	struct buf dl = { 0 };
	is_int(packstep_drops_metrics(&dl, 7, &dr), 0, "a drops-only metrics line made");
	buf_put_u8(&dl, 0);
	is_str((const char *)dl.data, "{\"step\":7,\"sequences\":0,\"dropped\":{\"stale\":1,\"overlong\":2,"
	       "\"empty\":3},\"truncated\":4,\"truncated_untrained\":5}\n", "the drops-only line");
	buf_free(&dl);

	struct done_manifest dm;
	r = done_load(queue, 1, &dm, &e);
	ok(r == 1, "DONE reads back");
	if (r == 1) {
		ok(dm.step == 1 && dm.ranks == 4 && dm.micro_batches_per_rank == 1 && dm.sequences == 3 &&
		   dm.dummies == 1 && dm.tokens == 14 && dm.pad_tokens == 6 && dm.dummy_tokens == 4,
		   "DONE: step 1, 4 ranks of 1, 3 sequences, 1 dummy, 14 + 6 + 4 tokens");
		is_int(dm.loss_tokens, 5 + 4 + 2, "DONE: loss tokens, the responses after each one-token prompt");
		ok(dm.dropped_stale == 1 && dm.dropped_overlong == 2 && dm.dropped_empty == 3 && dm.truncated == 4 &&
		   dm.truncated_untrained == 5, "DONE: the drops as given");
		ok(dm.n_runs == 3 && dm.runs[2].sequences_total == 7 && dm.runs[2].run_step == 3 &&
		   dm.runs[0].sequences == 2 && dm.runs[0].tokens == 11 && dm.runs[0].ready && !dm.runs[1].ready,
		   "DONE: every run, the absent c too");
		ok(dm.next_run && strcmp(dm.next_run, "b") == 0, "DONE: next_run is run 4 mod 3, b");
		ok(dm.n_inputs == 1 && strcmp(dm.inputs[0], "step_1/rank_0/x.zst") == 0 && dm.n_partial == 1 &&
		   dm.partial[0].n_done == 2 && dm.partial[0].done[1] == 2, "DONE: one input finished, one partial");
		done_free(&dm);
	}
	struct packstep_run *lr;
	uint32_t nlr, next;
	ok(packstep_load_runs(queue, 1, &lr, &nlr, &next, &e) == 0 && nlr == 3 && next == 1 &&
	   strcmp(lr[0].name, "a") == 0 && lr[0].seqs_total == 6 && lr[0].run_step == 3 && lr[2].seqs_total == 7,
	   "the runs read back, with b's turn next");
	for (uint32_t q = 0; q < nlr; q++)
		free((char *)lr[q].name);
	free(lr);
	struct packstep_input *li;
	uint32_t nli;
	ok(packstep_load_inputs(queue, 1, &li, &nli, &e) == 0 && nli == 2 && li[0].finished &&
	   strcmp(li[1].name, "step_1/rank_0/y.zst") == 0 && !li[1].finished && li[1].n_done == 2 &&
	   li[1].done[0] == 0 && li[1].done[1] == 2, "the inputs read back");
	packstep_inputs_free(li, nli);
	carried_records(queue);
	nlr = nli = 7;
	ok(packstep_load_runs(queue, 9, &lr, &nlr, &next, &e) == 0 && nlr == 0 && next == 0 && !lr &&
	   packstep_load_inputs(queue, 9, &li, &nli, &e) == 0 && nli == 0 && !li,
	   "no step 9: no runs, no inputs");

	int64_t nx = 0;
	ok(packstep_done_exists(queue, 1, &e) == 1 && packstep_done_exists(queue, 2, &e) == 0,
	   "step 1 has DONE, step 2 not");
	ok(packstep_next_step(queue, &nx, &e) == 0 && nx == 2, "the next step is 2: %lld", (long long)nx);
	r = packstep_run(&po, 1, sq, 3, runs, 3, 0, 2, NULL, 0, NULL, &dr, &st, &e);
	ok(r < 0 && strstr(e.msg, "step 1 is already published"), "step 1 again is refused: %s", e.msg);
	packstep_stats_free(&st);

	/* a step left without DONE (a packer died) is rolled back first; with no
	 * batch size every step a run is in is a run step */
	snprintf(path, sizeof path, "%s/step_2/rank_0", queue);
	struct err e2;
	fsys_mkdirs(path, &e2);
	/* a directory of .tmp that no rollback made stays */
	snprintf(path, sizeof path, "%s/.tmp/other", queue);
	fsys_mkdirs(path, &e2);
	snprintf(path, sizeof path, "%s/step_2/rank_0/mb_0009.zst", queue);
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
	r = packstep_run(&po, 2, sq + 3, 1, runs, 3, 0, 0, NULL, 0, NULL, &dr, &st, &e);
	ok(r == 0 && st.rolled_back == 1 && access(path, F_OK) != 0, "step 2: a file left without DONE rolled "
	   "back (%u), gone", st.rolled_back);
	ok(runs[1].seqs == 1 && runs[1].run_step == 1 && runs[1].ready && runs[0].seqs == 0 && runs[0].run_step == 3,
	   "no batch size: run b's step counts one, a's stays");
	packstep_stats_free(&st);
	snprintf(path, sizeof path, "%s/.tmp/other", queue);
	ok(access(path, F_OK) == 0, "a directory of .tmp not named rollback.* is left alone");
	ok(packstep_next_step(queue, &nx, &e) == 0 && nx == 3, "then the next step is 3: %lld", (long long)nx);
	/* step_10 (decimal), and names that are no step */
	const char *names[] = { "step_10", "step_x7", "step_", "step_-4", "step_12" };
	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof path, "%s/%s", queue, names[i]);
		fsys_mkdirs(path, &e2);
		snprintf(path, sizeof path, "%s/%s/DONE", queue, names[i]);
		if (i < 4 && (f = fopen(path, "w")))
			fclose(f);
	}
	ok(packstep_next_step(queue, &nx, &e) == 0 && nx == 11,
	   "step_10/DONE: the next step is 11 (step_12 has no DONE): %lld", (long long)nx);
	snprintf(path, sizeof path, "%s/step_1/DONE", queue);
	ok(packstep_next_step(path, &nx, &e) < 0, "a file for a queue is an error: %s", e.msg);
	snprintf(path, sizeof path, "%s/none", top);
	ok(packstep_next_step(path, &nx, &e) == 0 && nx == 1, "no queue yet: step 1");
	int fd = -1;
	snprintf(path, sizeof path, "%s/new/batches", top);
	ok(packstep_lock(path, &fd, &e) >= 0 && fd >= 0, "the lock of a queue not made yet");
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof path, "%s/batches/step_1/DONE/q", top);
	ok(packstep_lock(path, &fd, &e) < 0 && fd < 0, "no lock where the queue cannot be made: %s", e.msg);
	po.newest_done = 5;   /* as if step 5 had been published meanwhile */
	r = packstep_run(&po, 4, sq, 1, runs, 3, 0, 0, NULL, 0, NULL, &dr, &st, &e);
	ok(r < 0 && strstr(e.msg, "step 4 comes before step 5, the newest published") && strstr(e.msg, "--step 6"),
	   "a step before the newest refused: %s", e.msg);
	packstep_stats_free(&st);
out:
	for (int i = 0; i < 4; i++)
		traj_free(&t[i]);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
}

int main(void)
{
	readiness();
	groups();
	drops();
	carry();
	fair_carry();
	fair_carry_other_run();
	job_of_one();
	many_sequences();
	many_sources();
	truncated_untrained();
	job_finished_after_stale();
	sources_in_steps();
	hold();
	retire_flushes();
	copies();
	publish();
	return tap_done();
}
