/*
 * test_groupset: group integrity counts against hand-counted cases, and a
 * property over random streams of group records: the counts and id lists
 * agree with a brute-force recount, through the table's growth. Exact
 * repeats (recordset): every field a repeat must share changes the hash,
 * and a random stream of records drawn from a small pool finds exactly the
 * repeats a brute-force comparison finds, through growth and forgetting;
 * records one byte apart hash apart, at every byte; recordset_drop_copies
 * keeps a group's first of each member, in order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/groupset.h"
#include "../tap.h"

static int has(const char **ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], id) == 0)
			return 1;
	return 0;
}

/* a one-member record: group_id gid, sequence_id sid, prompt [1 2], response [tok], logprob lp */
struct rec {
	struct traj_id gid;
	struct traj t;
	int32_t p[2], r[1];
	float lp[1];
};

static void rec_make(struct rec *x, int64_t gid, int64_t sid, int32_t tok, float lp)
{
	memset(x, 0, sizeof *x);
	x->gid = traj_id_num(gid);
	x->t.sequence_id = traj_id_num(sid);
	x->p[0] = 1;
	x->p[1] = 2;
	x->r[0] = tok;
	x->lp[0] = lp;
	x->t.prompt_tokens = x->p;
	x->t.response_tokens = x->r;
	x->t.logprobs = x->lp;
	x->t.n_prompt = 2;
	x->t.n_response = 1;
}

static int same_hash(const struct rec *a, const struct rec *b)
{
	uint64_t ia, ma, ib, mb;
	recordset_hash(&a->gid, &a->t, 1, &ia, &ma);
	recordset_hash(&b->gid, &b->t, 1, &ib, &mb);
	return ia == ib && ma == mb;
}

/* Every byte of every array a record holds counts: a record that differs
 * from another in one byte alone (of a prompt or response token, a logprob,
 * a string group_id or sequence_id), at each place and for every length up
 * to a few words, is not its repeat. */
static int one_byte_apart(void *bytes, size_t n, const struct rec *a, const struct rec *b)
{
	int good = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char *p = (unsigned char *)bytes + i;
		*p ^= 0x80;
		good &= !same_hash(a, b);
		*p ^= 0x80;
		good &= same_hash(a, b);
	}
	return good;
}

static void test_each_byte(void)
{
	enum { MAX = 11 };
	int32_t pa[MAX], pb[MAX], ra[MAX], rb[MAX];
	float la[MAX], lb[MAX];
	int good = 1;
	for (uint32_t n = 1; n <= MAX; n++) {
		struct rec a, b;
		rec_make(&a, 5, 1, 0, 0);
		for (uint32_t i = 0; i < n; i++) {
			pa[i] = pb[i] = (int32_t)(1000 + 77 * i);
			ra[i] = rb[i] = (int32_t)(2000 + 13 * i);
			la[i] = lb[i] = -0.125f * (float)(i + 1);
		}
		a.t.prompt_tokens = pa, a.t.response_tokens = ra, a.t.logprobs = la;
		a.t.n_prompt = a.t.n_response = n;
		b = a;
		b.t.prompt_tokens = pb, b.t.response_tokens = rb, b.t.logprobs = lb;
		good &= one_byte_apart(pb, n * sizeof *pb, &a, &b);
		good &= one_byte_apart(rb, n * sizeof *rb, &a, &b);
		good &= one_byte_apart(lb, n * sizeof *lb, &a, &b);
	}
	ok(good, "a record one byte apart from another, in a token or logprob, at any place of 1 to %d, is no repeat", MAX);

	char ga[4 * MAX + 1], gb[4 * MAX + 1], sa[4 * MAX + 1], sb[4 * MAX + 1];
	good = 1;
	for (size_t n = 1; n <= 4 * MAX; n++) {
		struct rec a, b;
		rec_make(&a, 0, 0, 7, -0.5f);
		for (size_t i = 0; i < n; i++)
			ga[i] = gb[i] = sa[i] = sb[i] = (char)('a' + i % 26);
		ga[n] = gb[n] = sa[n] = sb[n] = 0;
		a.gid.str = ga, a.t.sequence_id.str = sa;
		b = a;
		b.gid.str = gb, b.t.sequence_id.str = sb;
		good &= one_byte_apart(gb, n, &a, &b) && one_byte_apart(sb, n, &a, &b);
	}
	ok(good, "string ids one byte apart, at any place of 1 to %d bytes: another record", 4 * MAX);
}

static void test_repeats(void)
{
	struct rec a, b;
	rec_make(&a, 5, 1, 7, -0.5f);
	rec_make(&b, 5, 1, 7, -0.5f);
	ok(same_hash(&a, &b) && recordset_same_member(&a.t, &b.t), "the same record: the same hashes, the same member");
	b.gid = traj_id_num(6);
	ok(!same_hash(&a, &b), "another group_id: another record");
	rec_make(&b, 5, 2, 7, -0.5f);
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "another sequence_id");
	rec_make(&b, 5, 1, 8, -0.5f);
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "another response token");
	rec_make(&b, 5, 1, 7, -0.5f);
	b.p[1] = 3;
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "another prompt token");
	rec_make(&b, 5, 1, 7, nextafterf(-0.5f, 0));
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "a logprob one ulp away");
	rec_make(&a, 5, 1, 7, 0.0f);
	rec_make(&b, 5, 1, 7, -0.0f);
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "logprobs compared bitwise: -0 is not 0");
	b.lp[0] = 0.0f;
	b.t.logprobs = NULL;
	ok(!same_hash(&a, &b) && !recordset_same_member(&a.t, &b.t), "no logprobs is not logprobs 0");
	rec_make(&b, 5, 1, 7, 0.0f);
	b.t.n_prompt = 1;
	ok(!same_hash(&a, &b), "a shorter prompt");
	rec_make(&b, 5, 1, 7, 0.0f);
	char five[] = "5";
	b.gid.str = five;   /* the string "5" is not the integer 5 */
	ok(!same_hash(&a, &b), "a string group_id is not the integer of its text");

	/* two members: their order matters, their count too */
	struct rec c, d;
	rec_make(&c, 5, 1, 7, -0.5f);
	rec_make(&d, 5, 2, 8, -0.25f);
	struct traj cd[2] = { c.t, d.t }, dc[2] = { d.t, c.t };
	uint64_t i1, m1, i2, m2, i3, m3;
	recordset_hash(&c.gid, cd, 2, &i1, &m1);
	recordset_hash(&c.gid, dc, 2, &i2, &m2);
	recordset_hash(&c.gid, cd, 1, &i3, &m3);
	ok(i1 == i2 && m1 != m2 && m1 != m3, "members in another order, or fewer: another record");

	/* take, repeat, where from, keep and forget */
	struct recordset s = { 0 };
	struct recordset_at first = { 0 };
	struct err e;
	recordset_hash(&c.gid, cd, 2, &i1, &m1);
	ok(recordset_take(&s, i1, m1, (struct recordset_at){ 0, 3 }, &first, &e) == 0, "a record taken");
	ok(recordset_take(&s, i1, m1, (struct recordset_at){ 1, 9 }, &first, &e) == 1 && first.input == 0 &&
	   first.line == 3, "its repeat found, with where the first came from");
	recordset_keep(&s);
	ok(recordset_take(&s, i2, m2, (struct recordset_at){ 1, 10 }, &first, &e) == 0, "another taken");
	recordset_forget(&s);
	ok(recordset_take(&s, i2, m2, (struct recordset_at){ 2, 1 }, &first, &e) == 0,
	   "forgotten (its input failed): taken again, not a repeat");
	ok(recordset_take(&s, i1, m1, (struct recordset_at){ 2, 2 }, &first, &e) == 1 && first.line == 3,
	   "what was kept stays");
	recordset_free(&s);

	/* property: 30,000 records drawn from a pool of 8,000, 6 inputs, every
	 * third input forgotten: repeats found exactly as a brute-force scan */
	enum { POOL = 8000, DRAWS = 30000, INPUTS = 6 };
	static unsigned char taken[POOL], kept[POOL];
	int good = 1, found = 0;
	srand(11);
	for (int in = 0; in < INPUTS; in++) {
		for (int k = 0; k < DRAWS / INPUTS; k++) {
			int x = rand() % POOL;
			struct rec r;
			rec_make(&r, x / 4, x % 4, x, -1.0f);   /* four records under each group_id */
			uint64_t id, m;
			recordset_hash(&r.gid, &r.t, 1, &id, &m);
			int got = recordset_take(&s, id, m, (struct recordset_at){ (uint64_t)in, (uint64_t)k }, &first, &e);
			good &= got == (taken[x] != 0);
			found += got == 1;
			taken[x] = 1;
		}
		if (in % 3 == 2) {
			recordset_forget(&s);
			memcpy(taken, kept, sizeof taken);
		} else {
			recordset_keep(&s);
			memcpy(kept, taken, sizeof kept);
		}
	}
	ok(good && found > 0, "property: %d repeats, each found, no other record taken for one", found);
	recordset_free(&s);
}

/* recordset_drop_copies on one group: copies anywhere (after a copy too)
 * are dropped and shown, the others kept in order; a refusal from dropped
 * keeps the members not yet compared. */
struct seen {
	int64_t sid[8];
	int n, refuse_at;
};

static int seen_copy(void *ctx, const struct traj *copy)
{
	struct seen *s = ctx;
	s->sid[s->n++] = copy->sequence_id.num;
	return s->n == s->refuse_at ? -1 : 0;
}

/* members with sequence_ids sids[0..n), each its own heap copy */
static void group_of(struct group *g, const int64_t *sids, uint32_t n)
{
	memset(g, 0, sizeof *g);
	g->trajs = calloc(n, sizeof *g->trajs);
	g->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct traj *t = &g->trajs[i];
		traj_init(t);
		t->sequence_id = traj_id_num(sids[i]);
		t->n_prompt = t->n_response = 1;
		t->prompt_tokens = malloc(sizeof *t->prompt_tokens);
		t->response_tokens = malloc(sizeof *t->response_tokens);
		t->prompt_tokens[0] = 1;
		t->response_tokens[0] = (int32_t)(100 + sids[i]);
	}
}

static int sids_are(const struct group *g, const int64_t *want, uint32_t n)
{
	int good = g->n == n;
	for (uint32_t i = 0; good && i < n; i++)
		good = g->trajs[i].sequence_id.num == want[i];
	return good;
}

static void test_drop_copies(void)
{
	static const int64_t in[] = { 1, 2, 1, 3, 2, 4 }, kept[] = { 1, 2, 3, 4 };
	struct group g;
	struct seen s = { .refuse_at = -1 };
	group_of(&g, in, 6);
	long n = recordset_drop_copies(&g, seen_copy, &s);
	ok(n == 2 && sids_are(&g, kept, 4) && s.n == 2 && s.sid[0] == 1 && s.sid[1] == 2,
	   "copies after a copy dropped and shown, 1 2 3 4 kept in order (%ld dropped, %u kept)", n, g.n);
	group_free(&g);

	/* dropped refuses the first copy (1): 3, 2 and 4 are not compared, and stay */
	static const int64_t left[] = { 1, 2, 3, 2, 4 };
	s = (struct seen){ .refuse_at = 1 };
	group_of(&g, in, 6);
	n = recordset_drop_copies(&g, seen_copy, &s);
	ok(n == -1 && sids_are(&g, left, 5) && s.n == 1,
	   "a refusal: -1, the members kept and those not yet compared stay (%u)", g.n);
	group_free(&g);
}

int main(void)
{
	struct groupset s = { 0 };
	struct err e;
	const char **ids;
	size_t n;

	/* input 0: 5 (2 members), 9 (1); input 1: 5 (1), 11 (2), 9 (1) again in input 1 */
	groupset_add(&s, "5", 2, 0, &e);
	groupset_add(&s, "9", 1, 0, &e);
	groupset_add(&s, "5", 1, 1, &e);
	groupset_add(&s, "11", 2, 1, &e);
	groupset_add(&s, "9", 1, 1, &e);
	groupset_add(&s, "gsm8k-0042", 1, 1, &e);
	groupset_add(&s, "gsm8k-0042", 1, 1, &e);   /* twice in one input: not split */
	is_int((long long)s.single_records, 5, "groups of one member, counted per record");
	is_int((long long)s.split_ids, 2, "ids split across inputs, counted once each");
	groupset_ids(&s, GROUPSET_SPLIT, &ids, &n, &e);
	ok(n == 2 && strcmp(ids[0], "5") == 0 && strcmp(ids[1], "9") == 0, "split ids: 5 9");
	free(ids);
	groupset_ids(&s, GROUPSET_SINGLE, &ids, &n, &e);
	ok(n == 3 && strcmp(ids[0], "5") == 0 && strcmp(ids[1], "9") == 0 && strcmp(ids[2], "gsm8k-0042") == 0,
	   "single ids sorted: numbers by value, then text");
	free(ids);
	groupset_free(&s);

	/* property: random records over 3000 ids and 5 inputs, fed input by input */
	srand(7);
	enum { IDS = 3000, RECS = 20000 };
	static unsigned inputs_of[IDS], singles[IDS];
	for (int in = 0; in < 5; in++)
		for (int r = 0; r < RECS / 5; r++) {
			int id = rand() % IDS;
			uint32_t members = 1 + (uint32_t)(rand() % 3);
			char text[16];
			snprintf(text, sizeof text, "%d", id);
			if (groupset_add(&s, text, members, (uint64_t)in, &e) < 0)
				break;
			inputs_of[id] |= 1u << in;
			singles[id] += members == 1;
		}
	uint64_t want_split = 0, want_single = 0;
	for (int i = 0; i < IDS; i++) {
		want_split += __builtin_popcount(inputs_of[i]) > 1;
		want_single += singles[i];
	}
	is_int((long long)s.split_ids, (long long)want_split, "property: split ids match a recount");
	is_int((long long)s.single_records, (long long)want_single, "property: single-member records match");
	groupset_ids(&s, GROUPSET_SPLIT, &ids, &n, &e);
	int good = n == want_split;
	for (size_t i = 1; i < n; i++)
		good &= atoi(ids[i - 1]) < atoi(ids[i]);
	for (int i = 0; i < IDS && good; i += 97) {
		char text[16];
		snprintf(text, sizeof text, "%d", i);
		good &= has(ids, n, text) == (__builtin_popcount(inputs_of[i]) > 1);
	}
	ok(good, "property: the split list is sorted and holds exactly the split ids");
	free(ids);
	groupset_free(&s);
	test_repeats();
	test_each_byte();
	test_drop_copies();
	return tap_done();
}
