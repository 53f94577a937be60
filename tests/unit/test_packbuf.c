/*
 * test_packbuf: grpo-pack's buffer without a process or a file: step
 * readiness with a batch size or a token budget, groups kept whole, drops
 * and truncation counted once and in words, carrying for --fill-target,
 * and the fair turn with units carried across two runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int to_spool(void *ctx, const void *p, size_t n, struct err *e)
{
	return spool_write(ctx, p, n, e);
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
	struct err e = { "" };
	size_t most = 0;
	int r = 0, steps = 0;
	for (int i = 0; i < FILES && r == 0; i++) {
		struct traj t[2];
		struct group g = { traj_id_num(i), 2, t };
		struct spool_out so;
		struct sfile_writer w;
		struct claim c;
		mk_traj(&t[0], 2 * i, 4, NULL, 0);
		mk_traj(&t[1], 2 * i + 1, 5, NULL, 0);
		r = spool_open(&so, queue, i, 0, "f.zst", &e);
		if (r == 0) {
			so.no_fsync = 1;
			r = sfile_writer_init(&w, to_spool, &so, 1, &e);
			r = r < 0 ? r : sfile_write_group(&w, &g, &e);
			r = r < 0 ? r : sfile_writer_finish(&w, &e);
			sfile_writer_free(&w);
			r = r < 0 ? (spool_abort(&so), r) : spool_commit(&so, &e);
		}
		traj_free(&t[0]);
		traj_free(&t[1]);
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

int main(void)
{
	readiness();
	groups();
	drops();
	carry();
	fair_carry();
	many_sources();
	return tap_done();
}
