/* The bytes of a spool file, field by field as grpo-spool(5) lays them out.
 *
 * Each record below is built twice: as structs, and as the bytes the
 * manual's tables give for it (tags, types, plain arrays below 16 elements
 * and byte-planar ones from 16, a prompt shared by a group's trajectories
 * stored once in the group, finish reasons as codes or as text), in the
 * order the writer keeps. The writer must write exactly those bytes; and
 * those bytes, compressed by zstd alone, must read back to records the
 * writer writes the same again, so the reader is held to the manual too.
 * A round trip through this writer and this reader alone (test_sfile) would
 * not see a field stored under another tag, type or byte order, which every
 * other build's reader would misread. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "data/sfile.h"
#include "tap.h"

/* grpo-spool(5): types, encodings, record kinds */
enum { I64 = 1, F32 = 2, STR = 3, I32S = 4, F32S = 5, U8S = 6, U32S = 7, I64S = 8, NESTED = 9, STRS = 10,
       IDS = 11 };
enum { PLAIN = 0, PLANAR = 1 };

/* ---- the manual's bytes ---- */

static void le(struct buf *b, uint64_t v, int bytes)
{
	for (int k = 0; k < bytes; k++)
		buf_put_u8(b, (uint8_t)(v >> (8 * k)));
}

static void x_field(struct buf *b, int tag, int type, int enc, const void *p, size_t len)
{
	le(b, (uint64_t)tag, 2);
	le(b, (uint64_t)type, 1);
	le(b, (uint64_t)enc, 1);
	le(b, len, 4);
	buf_append(b, p, len);
}

static void x_i64(struct buf *b, int tag, int64_t v)
{
	unsigned char d[8];
	for (int k = 0; k < 8; k++)
		d[k] = (unsigned char)((uint64_t)v >> (8 * k));
	x_field(b, tag, I64, PLAIN, d, 8);
}

static void x_f32(struct buf *b, int tag, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	unsigned char d[4] = { (unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
			       (unsigned char)(u >> 24) };
	x_field(b, tag, F32, PLAIN, d, 4);
}

static void x_str(struct buf *b, int tag, const char *s)
{
	x_field(b, tag, STR, PLAIN, s, strlen(s));
}

/* An array of n elements of size bytes, each read as a little-endian
 * integer of that size from v (host order); planar: every element's lowest
 * byte, then every second byte, ... */
static void x_array(struct buf *b, int tag, int type, int enc, const void *v, size_t n, size_t size)
{
	const unsigned char *p = v;
	unsigned char *d = malloc(n * size + 1);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < size; k++)
			d[enc == PLANAR ? k * n + i : i * size + k] = p[i * size + k];
	x_field(b, tag, type, enc, d, n * size);
	free(d);
}

static void x_strs(struct buf *b, int tag, int n, ...)
{
	struct buf d = { 0 };
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		const char *s = va_arg(ap, const char *);
		le(&d, strlen(s), 4);
		buf_append(&d, s, strlen(s));
	}
	va_end(ap);
	x_field(b, tag, STRS, PLAIN, d.data, d.len);
	buf_free(&d);
}

static void x_nested(struct buf *b, int tag, const struct buf *payload)
{
	x_field(b, tag, NESTED, PLAIN, payload->data, payload->len);
}

static void x_record(struct buf *b, int kind, const struct buf *payload)
{
	le(b, (uint64_t)kind, 4);
	le(b, 0, 4);   /* flags */
	le(b, payload->len, 8);
	buf_append(b, payload->data, payload->len);
}

static const unsigned char header[12] = { 'G', 'R', 'P', 'O', 1, 0, 1, 0, 0, 0, 0, 0 };

/* ---- the records as structs ---- */

static void *copy(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);
	memcpy(c, p, n);
	return c;
}

static struct traj_id str_id(const char *s)
{
	struct traj_id id = traj_id_none();
	traj_id_set_str(&id, s, strlen(s));
	return id;
}

static void set_names(struct traj *t, const char *a, const char *b)
{
	t->reward_names = calloc(2, sizeof(char *));
	t->reward_names[0] = strdup(a);
	t->reward_names[1] = strdup(b);
}

/*
 * Group 7: three trajectories sharing the prompt [5, 6], so it is stored
 * once in the group. t0 has every field (its finish reason a code), t1 a
 * response of 16 tokens (planar, its mask of 16 bytes plain), a string
 * sequence id and an integer group id of its own, t2 a response of 15
 * (plain), no logprobs, a string group id of its own and a finish reason
 * stored as text.
 */
static void group_7(struct group *g, struct buf *x)
{
	static const int32_t prompt[] = { 5, 6 }, r0[] = { 9, 10, 11 };
	static const float lp0[] = { -0.5f, -0.25f, 0 }, ref0[] = { -1, -2, -0.5f }, rw0[] = { 1, 0.5f },
			   sc0[] = { 1, 0 }, rw1[] = { 0, 1 };
	static const uint8_t m0[] = { 1, 0, 1 };
	int32_t r1[16], r2[15];
	float lp1[16];
	uint8_t m1[16];
	for (int i = 0; i < 16; i++) {
		r1[i] = 70000 + 300 * i;   /* three bytes vary */
		lp1[i] = -(float)i / 8;
		m1[i] = (uint8_t)(i % 2);
	}
	for (int i = 0; i < 15; i++)
		r2[i] = 256 * i + 1;

	memset(g, 0, sizeof *g);
	g->group_id = traj_id_num(7);
	g->n = 3;
	g->trajs = calloc(3, sizeof *g->trajs);
	for (int i = 0; i < 3; i++) {
		traj_init(&g->trajs[i]);
		g->trajs[i].prompt_tokens = copy(prompt, sizeof prompt);
		g->trajs[i].n_prompt = 2;
		g->trajs[i].group_id = traj_id_num(7);
	}
	struct traj *t = &g->trajs[0];
	t->response_tokens = copy(r0, sizeof r0);
	t->n_response = 3;
	t->logprobs = copy(lp0, sizeof lp0);
	t->response_mask = copy(m0, sizeof m0);
	t->answer = strdup("42");
	t->sequence_id = traj_id_num(100);
	t->policy_version = 3;
	t->temperature = 0.5f;
	traj_set_finish(t, "stop");
	t->run = strdup("r1");
	t->scored = 1;
	t->ref_logprobs = copy(ref0, sizeof ref0);
	t->rewards = copy(rw0, sizeof rw0);
	t->n_rewards = 2;
	set_names(t, "acc", "fmt");
	t->advantage = 0.25f;
	t->successes = copy(sc0, sizeof sc0);

	t = &g->trajs[1];
	t->response_tokens = copy(r1, sizeof r1);
	t->n_response = 16;
	t->logprobs = copy(lp1, sizeof lp1);
	t->response_mask = copy(m1, sizeof m1);
	t->sequence_id = str_id("s-1");
	t->group_id = traj_id_num(8);
	t->policy_version = 4;
	traj_set_finish(t, "length");
	t->scored = 1;
	t->rewards = copy(rw1, sizeof rw1);
	t->n_rewards = 2;
	t->advantage = -0.25f;

	t = &g->trajs[2];
	t->response_tokens = copy(r2, sizeof r2);
	t->n_response = 15;
	t->sequence_id = traj_id_num(102);
	traj_id_free(&t->group_id);
	t->group_id = str_id("g-x");
	t->policy_version = 0;
	t->temperature = 0.75f;
	traj_set_finish(t, "tool_calls");

	struct buf p = { 0 }, tr = { 0 };
	x_i64(&p, 1, 7);
	x_array(&p, 2, I32S, PLAIN, prompt, 2, 4);

	x_array(&tr, 2, I32S, PLAIN, r0, 3, 4);
	x_array(&tr, 3, F32S, PLAIN, lp0, 3, 4);
	x_array(&tr, 4, U8S, PLAIN, m0, 3, 1);
	x_str(&tr, 5, "42");
	x_i64(&tr, 6, 100);
	x_i64(&tr, 8, 3);
	x_f32(&tr, 9, 0.5f);
	x_i64(&tr, 10, 1);   /* stop */
	x_str(&tr, 11, "r1");
	x_i64(&tr, 12, 1);
	x_array(&tr, 13, F32S, PLAIN, ref0, 3, 4);
	x_array(&tr, 14, F32S, PLAIN, rw0, 2, 4);
	x_strs(&tr, 15, 2, "acc", "fmt");
	x_f32(&tr, 16, 0.25f);
	x_array(&tr, 20, F32S, PLAIN, sc0, 2, 4);
	x_nested(&p, 3, &tr);

	buf_reset(&tr);
	x_array(&tr, 2, I32S, PLANAR, r1, 16, 4);
	x_array(&tr, 3, F32S, PLANAR, lp1, 16, 4);
	x_array(&tr, 4, U8S, PLAIN, m1, 16, 1);
	x_str(&tr, 18, "s-1");
	x_i64(&tr, 7, 8);
	x_i64(&tr, 8, 4);
	x_f32(&tr, 9, 1);
	x_i64(&tr, 10, 2);   /* length */
	x_i64(&tr, 12, 1);
	x_array(&tr, 14, F32S, PLAIN, rw1, 2, 4);
	x_f32(&tr, 16, -0.25f);
	x_nested(&p, 3, &tr);

	buf_reset(&tr);
	x_array(&tr, 2, I32S, PLAIN, r2, 15, 4);
	x_i64(&tr, 6, 102);
	x_str(&tr, 19, "g-x");
	x_i64(&tr, 8, 0);
	x_f32(&tr, 9, 0.75f);
	x_str(&tr, 21, "tool_calls");
	x_nested(&p, 3, &tr);

	x_record(x, 1, &p);
	buf_free(&p);
	buf_free(&tr);
}

/* A group of n trajectories with the prompts given (n_prompt[i] tokens from
 * prompts[i]), each of one response token, no logprobs, no finish reason,
 * and the group's id. */
static void plain_group(struct group *g, struct traj_id gid, uint32_t n, const int32_t *const *prompts,
			const uint32_t *n_prompt)
{
	memset(g, 0, sizeof *g);
	g->group_id = gid;
	g->n = n;
	g->trajs = calloc(n, sizeof *g->trajs);
	for (uint32_t i = 0; i < n; i++) {
		struct traj *t = &g->trajs[i];
		traj_init(t);
		t->prompt_tokens = n_prompt[i] ? copy(prompts[i], n_prompt[i] * 4) : NULL;
		t->n_prompt = n_prompt[i];
		t->response_tokens = copy(&(int32_t){ 40 + (int32_t)i }, 4);
		t->n_response = 1;
		traj_id_copy(&t->group_id, &gid);
	}
}

/* A trajectory of plain_group as the manual lays it out, its prompt in it
 * when it is not the group's. */
static void x_plain_traj(struct buf *p, uint32_t i, const int32_t *prompt, uint32_t n_prompt)
{
	struct buf tr = { 0 };
	if (prompt)
		x_array(&tr, 1, I32S, PLAIN, prompt, n_prompt, 4);
	x_array(&tr, 2, I32S, PLAIN, &(int32_t){ 40 + (int32_t)i }, 1, 4);
	x_i64(&tr, 6, -1);   /* no sequence id */
	x_i64(&tr, 8, -1);   /* no policy version */
	x_f32(&tr, 9, 1);
	x_nested(p, 3, &tr);
	buf_free(&tr);
}

/* Group "row-1": a string id, two trajectories whose prompts are as long
 * and differ in their last token, so each keeps its own. */
static void group_row1(struct group *g, struct buf *x)
{
	static const int32_t a[] = { 1, 2 }, b[] = { 1, 3 };
	const int32_t *pr[] = { a, b };
	plain_group(g, str_id("row-1"), 2, pr, (uint32_t[]){ 2, 2 });
	struct buf p = { 0 };
	x_str(&p, 4, "row-1");
	x_plain_traj(&p, 0, a, 2);
	x_plain_traj(&p, 1, b, 2);
	x_record(x, 1, &p);
	buf_free(&p);
}

/* Group 0: one trajectory, whose prompt stays in it: a group of one shares
 * nothing. */
static void group_0(struct group *g, struct buf *x)
{
	static const int32_t a[] = { 4 };
	const int32_t *pr[] = { a };
	plain_group(g, traj_id_num(0), 1, pr, (uint32_t[]){ 1 });
	struct buf p = { 0 };
	x_i64(&p, 1, 0);
	x_plain_traj(&p, 0, a, 1);
	x_record(x, 1, &p);
	buf_free(&p);
}

/* Group 5: two trajectories with empty prompts, which they share: the
 * group holds an empty prompt and they none. */
static void group_5(struct group *g, struct buf *x)
{
	const int32_t *pr[] = { NULL, NULL };
	plain_group(g, traj_id_num(5), 2, pr, (uint32_t[]){ 0, 0 });
	struct buf p = { 0 };
	x_i64(&p, 1, 5);
	x_field(&p, 2, I32S, PLAIN, "", 0);
	x_plain_traj(&p, 0, NULL, 0);
	x_plain_traj(&p, 1, NULL, 0);
	x_record(x, 1, &p);
	buf_free(&p);
}

/* Group 20: twenty trajectories sharing the prompt [9], more than a reader
 * first makes room for. */
static void group_20(struct group *g, struct buf *x)
{
	static const int32_t a[] = { 9 };
	const int32_t *pr[20];
	uint32_t np[20];
	for (int i = 0; i < 20; i++)
		pr[i] = a, np[i] = 1;
	plain_group(g, traj_id_num(20), 20, pr, np);
	struct buf p = { 0 };
	x_i64(&p, 1, 20);
	x_array(&p, 2, I32S, PLAIN, a, 1, 4);
	for (uint32_t i = 0; i < 20; i++)
		x_plain_traj(&p, i, NULL, 0);
	x_record(x, 1, &p);
	buf_free(&p);
}

/*
 * A micro-batch of 16 tokens (its per-token arrays planar, the loss mask
 * plain): sequences of 7 and 6 tokens (prompts of 3 and 2) and 3 of
 * padding, integer ids, every per-sequence field, a finish reason unknown
 * (stored as ""), a run.
 */
static void mb_16(struct microbatch *mb, struct buf *x)
{
	int32_t ids[16], pos[16];
	uint8_t mask[16];
	float adv[16], ilp[16], ref[16], temp[16];
	static const uint32_t sl[] = { 7, 6, 3 }, pl[] = { 3, 2 };
	static const int64_t sid[] = { 11, 12 }, gid[] = { 1, 1 }, pv[] = { 5, 6 };
	static const float rw[] = { 1.5f, -0.5f };
	static const uint8_t miss[] = { 0, 1 };
	for (int i = 0; i < 16; i++) {
		int seq = i < 7 ? 0 : i < 13 ? 1 : 2, at = i < 7 ? i : i < 13 ? i - 7 : i - 13;
		ids[i] = seq == 2 ? 0 : 100 + 70000 * i;
		pos[i] = at;
		mask[i] = seq < 2 && at >= (seq == 0 ? 3 : 2);
		adv[i] = mask[i] ? (seq == 0 ? 0.5f : -0.5f) : 0;
		ilp[i] = mask[i] ? -0.125f * (float)at : 0;
		ref[i] = mask[i] ? -0.25f : 0;
		temp[i] = seq == 1 ? 0.5f : 1;
	}
	memset(mb, 0, sizeof *mb);
	mb->n_tokens = 16;
	mb->input_ids = copy(ids, sizeof ids);
	mb->position_ids = copy(pos, sizeof pos);
	mb->loss_mask = copy(mask, sizeof mask);
	mb->advantages = copy(adv, sizeof adv);
	mb->inference_logprobs = copy(ilp, sizeof ilp);
	mb->ref_logprobs = copy(ref, sizeof ref);
	mb->temperatures = copy(temp, sizeof temp);
	mb->seq_lens = copy(sl, sizeof sl);
	mb->n_seq_lens = 3;
	mb->n_seqs = 2;
	mb->sequence_ids = calloc(2, sizeof *mb->sequence_ids);
	mb->group_ids = calloc(2, sizeof *mb->group_ids);
	for (int i = 0; i < 2; i++) {
		mb->sequence_ids[i] = traj_id_num(sid[i]);
		mb->group_ids[i] = traj_id_num(gid[i]);
	}
	mb->prompt_lens = copy(pl, sizeof pl);
	mb->policy_versions = copy(pv, sizeof pv);
	mb->rewards = copy(rw, sizeof rw);
	mb->finish_reasons = calloc(2, sizeof(char *));
	mb->finish_reasons[0] = strdup("stop");
	mb->logprobs_missing = copy(miss, sizeof miss);
	mb->step = 9;
	mb->rank = 1;
	mb->index = 2;
	mb->run = strdup("r1");

	struct buf p = { 0 };
	x_array(&p, 1, I32S, PLANAR, ids, 16, 4);
	x_array(&p, 2, I32S, PLANAR, pos, 16, 4);
	x_array(&p, 3, U8S, PLAIN, mask, 16, 1);
	x_array(&p, 4, F32S, PLANAR, adv, 16, 4);
	x_array(&p, 5, F32S, PLANAR, ilp, 16, 4);
	x_array(&p, 6, F32S, PLANAR, ref, 16, 4);
	x_array(&p, 7, F32S, PLANAR, temp, 16, 4);
	x_array(&p, 8, U32S, PLAIN, sl, 3, 4);
	x_array(&p, 9, I64S, PLAIN, sid, 2, 8);
	x_array(&p, 10, I64S, PLAIN, gid, 2, 8);
	x_array(&p, 17, U32S, PLAIN, pl, 2, 4);
	x_array(&p, 18, I64S, PLAIN, pv, 2, 8);
	x_array(&p, 19, F32S, PLAIN, rw, 2, 4);
	x_strs(&p, 20, 2, "stop", "");
	x_array(&p, 21, U8S, PLAIN, miss, 2, 1);
	x_i64(&p, 11, 9);
	x_i64(&p, 12, 1);
	x_i64(&p, 13, 2);
	x_str(&p, 14, "r1");
	x_record(x, 2, &p);
	buf_free(&p);
}

/*
 * A micro-batch of 17 sequences of 2 tokens (a prompt token and a trained
 * one): seq_lens, prompt_lens, the integer sequence ids and the policy
 * versions planar, 8-byte ones with every byte in use; the group ids, one a
 * string, as an id list of more entries than a reader first makes room for. No reference logprobs, rewards, finish reasons,
 * missing logprobs nor run: none stored.
 */
static void mb_34(struct microbatch *mb, struct buf *x)
{
	int32_t ids[34], pos[34];
	uint8_t mask[34];
	float adv[34], ilp[34], temp[34];
	uint32_t sl[17], pl[17];
	int64_t sid[17], pv[17];
	for (int i = 0; i < 34; i++) {
		ids[i] = 3 * i + 1;
		pos[i] = i % 2;
		mask[i] = (uint8_t)(i % 2);
		adv[i] = mask[i] ? (float)(i - 17) / 4 : 0;
		ilp[i] = mask[i] ? -1.0f / (float)(i + 1) : 0;
		temp[i] = 1;
	}
	for (int i = 0; i < 17; i++) {
		sl[i] = 2;
		pl[i] = 1;
		sid[i] = (int64_t)i << 45 | (int64_t)0x0102030405 * (i + 1);
		pv[i] = (int64_t)(17 - i) << 40 | i;
	}
	memset(mb, 0, sizeof *mb);
	mb->n_tokens = 34;
	mb->input_ids = copy(ids, sizeof ids);
	mb->position_ids = copy(pos, sizeof pos);
	mb->loss_mask = copy(mask, sizeof mask);
	mb->advantages = copy(adv, sizeof adv);
	mb->inference_logprobs = copy(ilp, sizeof ilp);
	mb->temperatures = copy(temp, sizeof temp);
	mb->seq_lens = copy(sl, sizeof sl);
	mb->n_seq_lens = 17;
	mb->n_seqs = 17;
	mb->sequence_ids = calloc(17, sizeof *mb->sequence_ids);
	mb->group_ids = calloc(17, sizeof *mb->group_ids);
	for (int i = 0; i < 17; i++) {
		mb->sequence_ids[i] = traj_id_num(sid[i]);
		mb->group_ids[i] = i == 3 ? str_id("row-3") : traj_id_num(i / 4);
	}
	mb->prompt_lens = copy(pl, sizeof pl);
	mb->policy_versions = copy(pv, sizeof pv);

	struct buf p = { 0 }, l = { 0 };
	x_array(&p, 1, I32S, PLANAR, ids, 34, 4);
	x_array(&p, 2, I32S, PLANAR, pos, 34, 4);
	x_array(&p, 3, U8S, PLAIN, mask, 34, 1);
	x_array(&p, 4, F32S, PLANAR, adv, 34, 4);
	x_array(&p, 5, F32S, PLANAR, ilp, 34, 4);
	x_array(&p, 7, F32S, PLANAR, temp, 34, 4);
	x_array(&p, 8, U32S, PLANAR, sl, 17, 4);
	x_array(&p, 9, I64S, PLANAR, sid, 17, 8);
	for (int i = 0; i < 17; i++)
		if (i == 3) {
			le(&l, 1, 1);
			le(&l, 5, 4);
			buf_append(&l, "row-3", 5);
		} else {
			le(&l, 0, 1);
			le(&l, (uint64_t)(i / 4), 8);
		}
	x_field(&p, 16, IDS, PLAIN, l.data, l.len);
	x_array(&p, 17, U32S, PLANAR, pl, 17, 4);
	x_array(&p, 18, I64S, PLANAR, pv, 17, 8);
	x_i64(&p, 11, 0);
	x_i64(&p, 12, 0);
	x_i64(&p, 13, 0);
	x_record(x, 2, &p);
	buf_free(&p);
	buf_free(&l);
}

/* ---- comparing ---- */

#define NREC 7
static const char *rec_name[NREC] = {
	"group 7 (a shared prompt, every trajectory field, planar and plain arrays, ids and finish reasons of each kind)",
	"group row-1 (a string id, prompts as long that differ)",
	"group 0 (one trajectory)",
	"group 5 (shared empty prompts)",
	"group 20 (twenty trajectories)",
	"the micro-batch of 16 tokens (every field)",
	"the micro-batch of 17 sequences (planar 8-byte arrays, a long id list)",
};

static void build(struct record *recs, struct buf *x)
{
	memset(recs, 0, NREC * sizeof *recs);
	for (int i = 0; i < 5; i++)
		recs[i].kind = REC_GROUP;
	recs[5].kind = recs[6].kind = REC_MICROBATCH;
	group_7(&recs[0].group, &x[0]);
	group_row1(&recs[1].group, &x[1]);
	group_0(&recs[2].group, &x[2]);
	group_5(&recs[3].group, &x[3]);
	group_20(&recs[4].group, &x[4]);
	mb_16(&recs[5].mb, &x[5]);
	mb_34(&recs[6].mb, &x[6]);
}

/* The decompressed content of what a writer writes of recs (n); the
 * writer's error, if any, in e. */
static int write_raw(const struct record *recs, int n, struct buf *raw, struct err *e)
{
	struct sfile_writer w;
	struct buf file = { 0 };
	int rc = sfile_writer_init(&w, sfile_sink_buf, &file, 3, e);
	for (int i = 0; i < n && rc == 0; i++)
		rc = sfile_write_record(&w, &recs[i], e);
	if (rc == 0)
		rc = sfile_writer_finish(&w, e);
	sfile_writer_free(&w);
	buf_reset(raw);
	unsigned long long size = ZSTD_getFrameContentSize(file.data, file.len);
	if (rc == 0 && (size == ZSTD_CONTENTSIZE_ERROR || size > (1u << 20)))
		size = 1u << 20;   /* a streamed frame need not say its size */
	if (rc == 0 && buf_reserve(raw, size + 1) == 0) {
		size_t got = ZSTD_decompress(raw->data, size + 1, file.data, file.len);
		if (ZSTD_isError(got))
			rc = err_set(e, "zstd: %s", ZSTD_getErrorName(got));
		else
			raw->len = got;
	}
	buf_free(&file);
	return rc;
}

/* 1 when a and b hold the same bytes; else a diag at the first that differs. */
static int same_bytes(const struct buf *a, const struct buf *b)
{
	size_t n = a->len < b->len ? a->len : b->len, i = 0;
	while (i < n && a->data[i] == b->data[i])
		i++;
	if (i == n && a->len == b->len)
		return 1;
	diag("written %zu bytes, the manual's %zu; first difference at byte %zu (written 0x%02x, manual 0x%02x)",
	     a->len, b->len, i, i < a->len ? a->data[i] : 0, i < b->len ? b->data[i] : 0);
	return 0;
}

/* A file zstd alone made of raw (one whole frame). */
static void zfile(struct buf *file, const struct buf *raw)
{
	buf_reset(file);
	buf_reserve(file, ZSTD_compressBound(raw->len));
	file->len = ZSTD_compress(file->data, ZSTD_compressBound(raw->len), raw->data, raw->len, 1);
}

/* The manual's bytes as a file zstd alone made, read back: the number of
 * records, each freed; -1 with e set on error. `back` receives what a
 * writer writes of the records read (empty on error). */
static int read_back(const struct buf *raw, struct buf *back, struct err *e)
{
	struct buf file = { 0 };
	zfile(&file, raw);
	struct sfile_reader r;
	struct record recs[NREC + 1];
	int n = 0, k;
	if (sfile_reader_open_mem(&r, file.data, file.len, "manual.zst", e) < 0)
		return -1;
	while ((k = sfile_read(&r, &recs[n], e)) > 0 && ++n <= NREC)
		;
	sfile_reader_close(&r);
	buf_reset(back);
	if (k >= 0 && n <= NREC && write_raw(recs, n, back, e) < 0)
		k = -1;
	for (int i = 0; i < n && i < NREC + 1; i++)
		record_free(&recs[i]);
	buf_free(&file);
	return k < 0 ? -1 : n;
}

/* ---- damaged fields: refused, naming the file, record, trajectory and field ---- */

/* A one-trajectory scored group whose reward_names field holds names (its
 * data as given, for two rewards), as a file. */
static void names_file(struct buf *file, const void *names, size_t len)
{
	static const float rw[] = { 1, 0 };
	struct buf raw = { 0 }, p = { 0 }, tr = { 0 };
	buf_append(&raw, header, sizeof header);
	x_i64(&p, 1, 3);
	x_array(&tr, 1, I32S, PLAIN, &(int32_t){ 1 }, 1, 4);
	x_array(&tr, 2, I32S, PLAIN, &(int32_t){ 2 }, 1, 4);
	x_i64(&tr, 12, 1);
	x_array(&tr, 14, F32S, PLAIN, rw, 2, 4);
	x_field(&tr, 15, STRS, PLAIN, names, len);
	x_nested(&p, 3, &tr);
	x_record(&raw, 1, &p);
	zfile(file, &raw);
	buf_free(&raw);
	buf_free(&p);
	buf_free(&tr);
}

/* Read one record of file: 1 with it in *rec, else -1 with e set. */
static int read_one(const struct buf *file, struct record *rec, struct err *e)
{
	struct sfile_reader r;
	if (sfile_reader_open_mem(&r, file->data, file->len, "bad.zst", e) < 0)
		return -1;
	int k = sfile_read(&r, rec, e);
	sfile_reader_close(&r);
	return k;
}

static void damaged_names(void)
{
	struct buf file = { 0 };
	struct record rec;
	struct err e = { 0 };
	static const struct {
		const char *data;
		size_t len;
		const char *want, *what;
	} cases[] = {
		{ "\3\0\0\0acc\3\0\0\0fmt\1\0\0", 17, "bad.zst: record 1: trajectory 0: field reward_names: malformed string list",
		  "3 bytes after the last name, too few for a length" },
		{ "\3\0\0\0acc\4\0\0\0fmt", 14, "bad.zst: record 1: trajectory 0: field reward_names: malformed string list",
		  "a last name whose length runs one byte past the field" },
		{ "\3\0\0\0acc\3\0\0\0f\0t", 14, "bad.zst: record 1: trajectory 0: field reward_names: bad string",
		  "a NUL byte in a name" },
		{ "\3\0\0\0acc\3\0\0\0fmt\1\0\0\0x", 19, "bad.zst: record 1: trajectory 0: 3 reward_names for 2 rewards",
		  "three names for two rewards" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		names_file(&file, cases[i].data, cases[i].len);
		int k = read_one(&file, &rec, &e);
		ok(k < 0 && strcmp(e.msg, cases[i].want) == 0, "reward_names with %s is refused: %s", cases[i].what,
		   k < 0 ? e.msg : "read");
		if (k > 0)
			record_free(&rec);
	}
	names_file(&file, "\3\0\0\0a\1c\3\0\0\0fmt", 14);
	int k = read_one(&file, &rec, &e);
	ok(k == 1 && rec.group.trajs[0].n_rewards == 2 && strcmp(rec.group.trajs[0].reward_names[0], "a\1c") == 0 &&
	   strcmp(rec.group.trajs[0].reward_names[1], "fmt") == 0,
	   "a name holding a byte 1 (a control character, no NUL) reads as it is (%s)", k < 0 ? e.msg : "ok");
	if (k > 0)
		record_free(&rec);
	buf_free(&file);
}

/* A one-trajectory group (prompt [1], response [2]) whose trajectory ends
 * in the bytes given, as a file. */
static void traj_file(struct buf *file, const void *tail, size_t len)
{
	struct buf raw = { 0 }, p = { 0 }, tr = { 0 };
	buf_append(&raw, header, sizeof header);
	x_i64(&p, 1, 3);
	x_array(&tr, 1, I32S, PLAIN, &(int32_t){ 1 }, 1, 4);
	x_array(&tr, 2, I32S, PLAIN, &(int32_t){ 2 }, 1, 4);
	buf_append(&tr, tail, len);
	x_nested(&p, 3, &tr);
	x_record(&raw, 1, &p);
	zfile(file, &raw);
	buf_free(&raw);
	buf_free(&p);
	buf_free(&tr);
}

/* A field of another type, though of the right size, and a last field whose
 * length runs past its trajectory are refused, not read as if they fit. */
static void damaged_traj_fields(void)
{
	struct buf file = { 0 };
	struct record rec;
	struct err e = { 0 };
	static const struct {
		const char *data;
		size_t len;
		const char *want, *what;
	} cases[] = {
		{ "\x08\0\x08\0\x08\0\0\0\1\0\0\0\0\0\0\0", 16,
		  "bad.zst: record 1: trajectory 0: field policy_version has type 8, expected 1",
		  "a policy_version of 8 bytes typed I64S" },
		{ "\x09\0\x01\0\x04\0\0\0\0\0\x80\x3f", 12,
		  "bad.zst: record 1: trajectory 0: field temperature has type 1, expected 2",
		  "a temperature of 4 bytes typed I64" },
		{ "\x0b\0\x03\0\x03\0\0\0r1", 10, "bad.zst: record 1: trajectory 0: malformed field list",
		  "a last field (run) one byte longer than the trajectory" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		traj_file(&file, cases[i].data, cases[i].len);
		int k = read_one(&file, &rec, &e);
		ok(k < 0 && strcmp(e.msg, cases[i].want) == 0, "%s is refused: %s", cases[i].what,
		   k < 0 ? e.msg : "read");
		if (k > 0)
			record_free(&rec);
	}
	buf_free(&file);
}

/* The fields of a micro-batch of one sequence of 2 tokens, the second
 * trained, up to its seq_lens (the field of tag left_out left out; 0:
 * none), into p. */
static void x_mb_tokens(struct buf *p, int left_out)
{
	static const int32_t tok[] = { 1, 2 }, pos[] = { 0, 1 };
	static const uint8_t mask[] = { 0, 1 };
	static const float adv[] = { 0, 1 }, lp[] = { 0, -1 }, temp[] = { 1, 1 };
	static const uint32_t sl[] = { 2 };
	if (left_out != 1)
		x_array(p, 1, I32S, PLAIN, tok, 2, 4);
	x_array(p, 2, I32S, PLAIN, pos, 2, 4);
	if (left_out != 3)
		x_array(p, 3, U8S, PLAIN, mask, 2, 1);
	x_array(p, 4, F32S, PLAIN, adv, 2, 4);
	x_array(p, 5, F32S, PLAIN, lp, 2, 4);
	x_array(p, 7, F32S, PLAIN, temp, 2, 4);
	x_array(p, 8, U32S, PLAIN, sl, 1, 4);
}

/* The micro-batch of x_mb_tokens whose sequence ids are the id list given
 * (data as given), its payload ending in the tail given, as a file. */
static void mb_file(struct buf *file, const void *ids, size_t len, const void *tail, size_t tail_len)
{
	static const int64_t gid[] = { 4 };
	struct buf raw = { 0 }, p = { 0 };
	buf_append(&raw, header, sizeof header);
	x_mb_tokens(&p, 0);
	x_field(&p, 15, IDS, PLAIN, ids, len);
	x_array(&p, 10, I64S, PLAIN, gid, 1, 8);
	buf_append(&p, tail, tail_len);
	x_record(&raw, 2, &p);
	zfile(file, &raw);
	buf_free(&raw);
	buf_free(&p);
}

static void damaged_ids(void)
{
	struct buf file = { 0 };
	struct record rec;
	struct err e = { 0 };
	static const struct {
		const char *data;
		size_t len;
		const char *what;
	} cases[] = {
		{ "\1\3\0\0", 4, "a string entry cut inside its length" },
		{ "\1\3\0\0\0ab", 7, "a string entry whose length runs one byte past the list" },
		{ "\0\7\0\0\0\0\0\0", 8, "an integer entry of 7 bytes" },
		{ "\2\7\0\0\0\0\0\0\0", 9, "an entry of kind 2" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		mb_file(&file, cases[i].data, cases[i].len, "", 0);
		int k = read_one(&file, &rec, &e);
		ok(k < 0 && strcmp(e.msg, "bad.zst: record 1: field sequence_ids: malformed id list at entry 0") == 0,
		   "an id list with %s is refused: %s", cases[i].what, k < 0 ? e.msg : "read");
		if (k > 0)
			record_free(&rec);
	}
	mb_file(&file, "\1\3\0\0\0abc", 8, "", 0);
	int k = read_one(&file, &rec, &e);
	ok(k == 1 && rec.mb.n_seqs == 1 && rec.mb.sequence_ids[0].str && strcmp(rec.mb.sequence_ids[0].str, "abc") == 0,
	   "and one whose string ends exactly at the list's end reads (%s)", k < 0 ? e.msg : "ok");
	if (k > 0)
		record_free(&rec);

	mb_file(&file, "\0\7\0\0\0\0\0\0\0", 9, "\x14\0\x0a\0\x08", 5);
	k = read_one(&file, &rec, &e);
	ok(k < 0 && strcmp(e.msg, "bad.zst: record 1: malformed field list") == 0,
	   "a micro-batch whose fields end in 5 bytes of a field header is refused: %s", k < 0 ? e.msg : "read");
	if (k > 0)
		record_free(&rec);
	struct buf fr = { 0 };
	x_strs(&fr, 20, 1, "");
	mb_file(&file, "\0\7\0\0\0\0\0\0\0", 9, fr.data, fr.len);
	k = read_one(&file, &rec, &e);
	ok(k == 1 && rec.mb.finish_reasons && !rec.mb.finish_reasons[0],
	   "a first sequence's finish reason stored as \"\" reads as unknown (%s)", k < 0 ? e.msg : "ok");
	if (k > 0)
		record_free(&rec);
	buf_free(&fr);
	buf_free(&file);
}

/* A group id list that ends inside a string entry's length, followed by
 * a field of a tag from a newer version (256, whose first byte is 0): it
 * is refused, not read on into that field's header as the string. */
static void ids_cut_before_field(void)
{
	static const int64_t sid[] = { 9 };
	struct buf raw = { 0 }, p = { 0 }, file = { 0 };
	struct record rec;
	struct err e = { 0 };
	buf_append(&raw, header, sizeof header);
	x_mb_tokens(&p, 0);
	x_array(&p, 9, I64S, PLAIN, sid, 1, 8);
	x_field(&p, 16, IDS, PLAIN, "\1\2\0\0", 4);
	x_i64(&p, 256, 1);
	x_record(&raw, 2, &p);
	zfile(&file, &raw);
	int k = read_one(&file, &rec, &e);
	ok(k < 0 && strcmp(e.msg, "bad.zst: record 1: field group_ids: malformed id list at entry 0") == 0,
	   "an id list cut inside a length, before a field of tag 256, is refused: %s", k < 0 ? e.msg : "read");
	if (k > 0)
		record_free(&rec);
	buf_free(&raw);
	buf_free(&p);
	buf_free(&file);
}

/* The micro-batch of x_mb_tokens (the field of tag left_out left out), of
 * sequence 9 and the group ids given (one a sequence is right; gid NULL: no
 * group_ids field), then the fields in tail (NULL: none), as a file. */
static void mb_fields_file(struct buf *file, int left_out, const int64_t *gid, size_t ngid,
			   const struct buf *tail)
{
	static const int64_t sid[] = { 9 };
	struct buf raw = { 0 }, p = { 0 };
	buf_append(&raw, header, sizeof header);
	x_mb_tokens(&p, left_out);
	x_array(&p, 9, I64S, PLAIN, sid, 1, 8);
	if (gid)
		x_array(&p, 10, I64S, PLAIN, gid, ngid, 8);
	if (tail)
		buf_append(&p, tail->data, tail->len);
	x_record(&raw, 2, &p);
	zfile(file, &raw);
	buf_free(&raw);
	buf_free(&p);
}

/* A micro-batch lacking its tokens, or with a group id more or fewer than
 * its sequences, is refused saying so: the trainer would otherwise read
 * tokens or groups that are not there. */
static void damaged_mb_shape(void)
{
	static const int64_t gid[] = { 4, 5 };
	struct buf file = { 0 };
	struct record rec;
	struct err e = { 0 };
	static const struct {
		int left_out, has_gid;
		size_t ngid;
		const char *want, *what;
	} cases[] = {
		{ 0, 1, 1, NULL, "the whole micro-batch" },
		{ 1, 1, 1, "bad.zst: record 1: micro-batch without input_ids", "no input_ids" },
		{ 3, 1, 1, "bad.zst: record 1: micro-batch without loss_mask", "no loss_mask" },
		{ 0, 1, 2, "bad.zst: record 1: 2 group_ids for 1 sequence_ids", "two group ids for one sequence" },
		{ 0, 1, 0, "bad.zst: record 1: 0 group_ids for 1 sequence_ids", "no group id for one sequence" },
		{ 0, 0, 0, "bad.zst: record 1: 0 group_ids for 1 sequence_ids", "no group_ids field" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		mb_fields_file(&file, cases[i].left_out, cases[i].has_gid ? gid : NULL, cases[i].ngid, NULL);
		int k = read_one(&file, &rec, &e);
		if (!cases[i].want)
			ok(k == 1 && rec.mb.n_tokens == 2 && rec.mb.n_seqs == 1 && rec.mb.group_ids[0].num == 4,
			   "%s reads: 2 tokens, 1 sequence of group 4 (%s)", cases[i].what, k < 0 ? e.msg : "ok");
		else
			ok(k < 0 && strcmp(e.msg, cases[i].want) == 0, "a micro-batch with %s is refused: %s",
			   cases[i].what, k < 0 ? e.msg : "read");
		if (k > 0)
			record_free(&rec);
	}
	/* each per-sequence field with two entries for the one sequence */
	static const struct {
		int tag, type;
		size_t len;
		const char *name;
	} per_seq[] = {
		{ 17, U32S, 8, "prompt_lens" }, { 18, I64S, 16, "policy_versions" }, { 19, F32S, 8, "rewards" },
		{ 20, STRS, 8, "finish_reasons" }, { 21, U8S, 2, "logprobs_missing" },
	};
	static const unsigned char zeros[16] = { 0 };   /* as STRS: two empty strings */
	for (size_t i = 0; i < sizeof per_seq / sizeof *per_seq; i++) {
		struct buf tail = { 0 };
		char want[96];
		x_field(&tail, per_seq[i].tag, per_seq[i].type, PLAIN, zeros, per_seq[i].len);
		mb_fields_file(&file, 0, gid, 1, &tail);
		snprintf(want, sizeof want, "bad.zst: record 1: 2 %s for 1 sequences", per_seq[i].name);
		int k = read_one(&file, &rec, &e);
		ok(k < 0 && strcmp(e.msg, want) == 0, "a micro-batch of one sequence with 2 %s is refused: %s",
		   per_seq[i].name, k < 0 ? e.msg : "read");
		if (k > 0)
			record_free(&rec);
		buf_free(&tail);
	}
	buf_free(&file);
}

/* zstd frames of no content (`zstd < /dev/null`) before, between and after
 * a file's frames are passed over: the records are those of the others,
 * each once. */
static void empty_frames(const struct buf *x)
{
	struct buf raw = { 0 }, one = { 0 }, none = { 0 }, file = { 0 };
	struct err e = { 0 };
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	zfile(&one, &raw);
	buf_reset(&raw);
	zfile(&none, &raw);
	static const char *const layouts[] = { "E1", "1E", "1E1", "EE1E1E" };
	static const int want[] = { 1, 1, 2, 2 };
	for (int i = 0; i < 4; i++) {
		buf_reset(&file);
		for (const char *c = layouts[i]; *c; c++)
			buf_append(&file, *c == 'E' ? none.data : one.data, *c == 'E' ? none.len : one.len);
		struct sfile_reader r;
		struct record rec;
		int n = 0, k = -1;
		if (sfile_reader_open_mem(&r, file.data, file.len, "frames.zst", &e) == 0) {
			while ((k = sfile_read(&r, &rec, &e)) > 0) {
				n++;
				record_free(&rec);
			}
			sfile_reader_close(&r);
		}
		ok(k == 0 && n == want[i], "frames %s (E: empty) read as %d record%s (%d: %s)", layouts[i], want[i],
		   want[i] == 1 ? "" : "s", n, k < 0 ? e.msg : "ok");
	}
	buf_free(&raw);
	buf_free(&one);
	buf_free(&none);
	buf_free(&file);
}

/* A scored trajectory of one reward function and no successes reads with
 * none: a 1.0 file's scalar success is taken only where the file has one. */
static void no_successes(void)
{
	struct buf raw = { 0 }, p = { 0 }, tr = { 0 }, file = { 0 };
	struct record rec;
	struct err e = { 0 };
	buf_append(&raw, header, sizeof header);
	x_i64(&p, 1, 3);
	x_array(&tr, 1, I32S, PLAIN, &(int32_t){ 1 }, 1, 4);
	x_array(&tr, 2, I32S, PLAIN, &(int32_t){ 2 }, 1, 4);
	x_i64(&tr, 12, 1);
	x_array(&tr, 14, F32S, PLAIN, &(float){ 1 }, 1, 4);
	x_nested(&p, 3, &tr);
	x_record(&raw, 1, &p);
	zfile(&file, &raw);
	int k = read_one(&file, &rec, &e);
	ok(k == 1 && rec.group.trajs[0].n_rewards == 1 && !rec.group.trajs[0].successes,
	   "a trajectory of one reward and no successes reads with none (%s)", k < 0 ? e.msg : "ok");
	if (k > 0)
		record_free(&rec);
	buf_free(&raw);
	buf_free(&p);
	buf_free(&tr);
	buf_free(&file);
}

/* A stream that arrives one byte per read (a socket of one-byte packets, as
 * a slow pipe may deliver it) reads whole: a short read is not the end. */
static void byte_at_a_time(const struct buf *raw)
{
	struct buf file = { 0 };
	zfile(&file, raw);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0) {
		skip("no socketpair");
		buf_free(&file);
		return;
	}
	pid_t kid = fork();
	if (kid == 0) {
		close(sv[0]);
		for (size_t i = 0; i < file.len; i++)
			if (write(sv[1], file.data + i, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(sv[1]);
	struct sfile_reader r;
	struct record rec;
	struct err e = { 0 };
	int n = 0, k;
	sfile_reader_open_fd(&r, sv[0], "slow", &e);
	while ((k = sfile_read(&r, &rec, &e)) > 0) {
		n++;
		record_free(&rec);
	}
	sfile_reader_close(&r);
	close(sv[0]);
	waitpid(kid, NULL, 0);
	ok(k == 0 && n == NREC, "a stream of one byte per read gives its %d records (%d: %s)", NREC, n,
	   k < 0 ? e.msg : "ok");
	buf_free(&file);
}

/* Records read from file before the error, and the error; -1 if none came
 * (or more than 16 records). */
static int read_to_error(const struct buf *file, struct err *e)
{
	struct sfile_reader r;
	struct record rec;
	int n = 0, k = 0;
	sfile_reader_open_mem(&r, file->data, file->len, "cut.zst", e);
	while (n < 16 && (k = sfile_read(&r, &rec, e)) > 0) {   /* more than any file here holds */
		n++;
		record_free(&rec);
	}
	sfile_reader_close(&r);
	return k < 0 ? n : -1;
}

/* The content of a whole frame damaged after record 1 (group 0, x): each
 * damage is refused naming the file and record 2, record 1 read first; a
 * group without trajectories, a header that is not ours, or too long. */
static void damaged_records(const struct buf *x)
{
	struct buf raw = { 0 }, file = { 0 };
	struct err e = { 0 };
	static const size_t cut_at[] = { 1, 15 };   /* into record 2's header */
	for (int i = 0; i < 2; i++) {
		buf_reset(&raw);
		buf_append(&raw, header, sizeof header);
		buf_append(&raw, x->data, x->len);
		buf_append(&raw, x->data, cut_at[i]);
		zfile(&file, &raw);
		int n = read_to_error(&file, &e);
		ok(n == 1 && strcmp(e.msg, "cut.zst: record 2: truncated record header") == 0,
		   "content ending inside record 2's header (%zu of its 16 bytes): %s", cut_at[i], e.msg);
	}
	buf_reset(&raw);
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	buf_append(&raw, x->data, x->len - 5);
	zfile(&file, &raw);
	char want[96];
	snprintf(want, sizeof want, "cut.zst: record 2: truncated (%zu of %zu bytes)", x->len - 21, x->len - 16);
	int n = read_to_error(&file, &e);
	ok(n == 1 && strcmp(e.msg, want) == 0, "content ending 5 bytes before record 2's end: %s", e.msg);

	buf_reset(&raw);
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	buf_append(&raw, x->data, x->len);
	raw.data[sizeof header + x->len + 8 + 3] = 0x80;   /* record 2's length + 2 GiB */
	zfile(&file, &raw);
	snprintf(want, sizeof want, "cut.zst: record 2: length %llu is implausible (corrupted?)",
		 (unsigned long long)(x->len - 16 + (1ull << 31)));
	n = read_to_error(&file, &e);
	ok(n == 1 && strcmp(e.msg, want) == 0, "a record 2 of more than 2 GiB: %s", e.msg);

	struct buf p = { 0 };
	x_i64(&p, 1, 3);
	buf_reset(&raw);
	buf_append(&raw, header, sizeof header);
	x_record(&raw, 1, &p);
	zfile(&file, &raw);
	n = read_to_error(&file, &e);
	ok(n == 0 && strcmp(e.msg, "cut.zst: record 1: group 3 has no trajectories") == 0,
	   "a group record without trajectories: %s", e.msg);
	buf_free(&p);

	buf_reset(&raw);
	buf_append(&raw, "GRPX\1\0\1\0\0\0\0\0", 12);
	zfile(&file, &raw);
	n = read_to_error(&file, &e);
	ok(n == 0 && strcmp(e.msg, "cut.zst: not a spool file (zstd content lacks the GRPO header)") == 0,
	   "content that begins GRPX: %s", e.msg);
	buf_reset(&raw);
	buf_append(&raw, "GRPO\2\0\3\0\0\0\0\0", 12);
	zfile(&file, &raw);
	n = read_to_error(&file, &e);
	ok(n == 0 && strcmp(e.msg, "cut.zst: format version 2.3; this reader reads version 1.x") == 0,
	   "a file of version 2.3: %s", e.msg);

	/* a header extension of 1 MiB is read past; one byte more is damage */
	for (int more = 0; more < 2; more++) {
		size_t ext = (1u << 20) + (size_t)more;
		buf_reset(&raw);
		buf_append(&raw, "GRPO\1\0\1\0", 8);
		le(&raw, ext, 4);
		buf_reserve(&raw, ext);
		memset(raw.data + raw.len, 'x', ext);
		raw.len += ext;
		buf_append(&raw, x->data, x->len);
		zfile(&file, &raw);
		if (more) {
			n = read_to_error(&file, &e);
			ok(n == 0 && strcmp(e.msg, "cut.zst: header extension of 1048577 bytes is implausible") == 0,
			   "a header extension of 1 MiB and a byte: %s", e.msg);
		} else {
			struct buf back = { 0 };
			n = read_back(&raw, &back, &e);
			ok(n == 1, "a header extension of 1 MiB is skipped, the record after it read (%s)",
			   n < 0 ? e.msg : "ok");
			buf_free(&back);
		}
	}
	buf_free(&raw);
	buf_free(&file);
}

/* A file zstd alone made of raw, its block ended after the first `at`
 * bytes, so that the rest lies in a later block (as a writer's flush leaves
 * it). */
static void zfile_flushed(struct buf *file, const struct buf *raw, size_t at)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t room = ZSTD_compressBound(raw->len) + 64;
	buf_reset(file);
	buf_reserve(file, room);
	ZSTD_outBuffer out = { file->data, room, 0 };
	ZSTD_inBuffer a = { raw->data, at, 0 }, b = { raw->data + at, raw->len - at, 0 };
	size_t left;
	do
		left = ZSTD_compressStream2(c, &out, &a, ZSTD_e_flush);
	while (left != 0 && !ZSTD_isError(left));
	do
		left = ZSTD_compressStream2(c, &out, &b, ZSTD_e_end);
	while (left != 0 && !ZSTD_isError(left));
	file->len = out.pos;
	ZSTD_freeCCtx(c);
}

/* Damage to the frames around records (x: group 0, rec its record): bytes
 * after the last frame, a wrong checksum, a header extension cut short, a
 * frame cut inside a record whose header came in an earlier block. Each is
 * refused with its own message, the records before it read. */
static void damaged_frames(const struct buf *x, const struct record *rec)
{
	struct buf raw = { 0 }, file = { 0 };
	struct err e = { 0 };
	char want[96];
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	zfile(&file, &raw);
	size_t at = file.len;
	buf_append(&file, "junk", 4);
	snprintf(want, sizeof want, "cut.zst: not a spool file (no zstd frame at byte %zu)", at);
	int n = read_to_error(&file, &e);
	ok(n == 1 && strcmp(e.msg, want) == 0, "4 bytes of junk after a file: its record, then %s", e.msg);

	struct sfile_writer w;
	buf_reset(&file);
	sfile_writer_init(&w, sfile_sink_buf, &file, 3, &e);
	sfile_write_record(&w, rec, &e);
	sfile_writer_finish(&w, &e);
	sfile_writer_free(&w);
	file.data[file.len - 1] ^= 1;   /* the content checksum's last byte */
	n = read_to_error(&file, &e);
	ok(n >= 0 && strcmp(e.msg, "cut.zst: corrupted (zstd checksum mismatch)") == 0, "a wrong checksum: %s",
	   e.msg);

	buf_reset(&raw);
	buf_append(&raw, "GRPO\1\0\1\0\12\0\0\0abcde", 17);   /* 5 of its 10 extension bytes */
	zfile(&file, &raw);
	n = read_to_error(&file, &e);
	ok(n == 0 && strcmp(e.msg, "cut.zst: truncated header") == 0, "a header extension cut short: %s", e.msg);

	buf_reset(&raw);
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	buf_append(&raw, x->data, x->len);
	zfile_flushed(&file, &raw, sizeof header + x->len + 16);
	file.len -= 3;   /* into the block of record 2's payload */
	n = read_to_error(&file, &e);
	ok(n == 1 && strcmp(e.msg, "cut.zst: truncated zstd frame (input ends inside it)") == 0,
	   "a frame cut inside record 2, whose header came in a block before: record 1, then %s", e.msg);
	buf_free(&raw);
	buf_free(&file);
}

/* Two trajectories' empty prompts, one NULL and one an allocation, are the
 * same prompt: stored once in the group as an empty array, whichever is
 * first (x: group 5's bytes, whose prompts are both NULL). */
static void empty_prompts_mixed(const struct buf *x)
{
	struct buf raw = { 0 }, want = { 0 }, unused = { 0 };
	struct err e = { 0 };
	buf_append(&want, header, sizeof header);
	buf_append(&want, x->data, x->len);
	for (int i = 0; i < 2; i++) {
		struct record rec = { .kind = REC_GROUP };
		group_5(&rec.group, &unused);
		rec.group.trajs[i].prompt_tokens = malloc(1);
		int rc = write_raw(&rec, 1, &raw, &e);
		ok(rc == 0 && same_bytes(&raw, &want), "empty prompts, trajectory %d's allocated, the other's NULL: "
		   "written as group 5 (%s)", i, rc ? e.msg : "ok");
		record_free(&rec);
	}
	buf_free(&raw);
	buf_free(&want);
	buf_free(&unused);
}

/* A reader of memory is ready before its first read. A reader of a pipe
 * whose producer wrote two records and is still writing holds the second
 * whole once it has read the first: it is ready, though nothing more is in
 * the pipe. Read to the pipe's end, it is drained. (x: group 0) */
static void ready_and_drained(const struct buf *x)
{
	struct buf raw = { 0 }, file = { 0 };
	struct err e = { 0 };
	struct sfile_reader r;
	struct record rec;
	buf_append(&raw, header, sizeof header);
	buf_append(&raw, x->data, x->len);
	buf_append(&raw, x->data, x->len);
	zfile(&file, &raw);
	sfile_reader_open_mem(&r, file.data, file.len, "mem", &e);
	ok(sfile_reader_ready(&r) == 1, "a reader of memory is ready before its first read");
	sfile_reader_close(&r);

	int fd[2];
	if (pipe(fd) < 0 || write(fd[1], file.data, file.len) != (ssize_t)file.len) {
		skip("no pipe");
		buf_free(&raw);
		buf_free(&file);
		return;
	}
	sfile_reader_open_fd(&r, fd[0], "pipe", &e);
	int k = sfile_read(&r, &rec, &e);
	if (k > 0)
		record_free(&rec);
	ok(k == 1 && sfile_reader_ready(&r) == 1, "record 1 read from a pipe still open: ready, record 2 held (%s)",
	   k < 0 ? e.msg : "ok");
	close(fd[1]);
	int n = 0;
	while (n < 16 && (k = sfile_read(&r, &rec, &e)) > 0) {
		n++;
		record_free(&rec);
	}
	ok(k == 0 && n == 1 && sfile_reader_drained(&r) == 1, "the rest, record 2, then the pipe's end: drained (%s)",
	   k < 0 ? e.msg : "ok");
	sfile_reader_close(&r);
	close(fd[0]);
	buf_free(&raw);
	buf_free(&file);
}

int main(void)
{
	struct record recs[NREC];
	struct buf x[NREC] = { 0 }, raw = { 0 }, want = { 0 }, back = { 0 };
	struct err e = { 0 };
	build(recs, x);

	int rc = write_raw(recs, 0, &raw, &e);
	buf_append(&want, header, sizeof header);
	ok(rc == 0 && same_bytes(&raw, &want), "a file of no records is the header alone: GRPO, 1, 1, 0 (%s)",
	   rc ? e.msg : "ok");

	for (int i = 0; i < NREC; i++) {
		buf_reset(&want);
		buf_append(&want, header, sizeof header);
		buf_append(&want, x[i].data, x[i].len);
		rc = write_raw(&recs[i], 1, &raw, &e);
		ok(rc == 0 && same_bytes(&raw, &want), "%s is written byte for byte as grpo-spool(5) lays it out (%s)",
		   rec_name[i], rc ? e.msg : "ok");
		int n = read_back(&want, &back, &e);
		ok(n == 1 && same_bytes(&back, &want), "and the manual's bytes read back to it (%d record: %s)", n,
		   n < 0 ? e.msg : "ok");
	}

	buf_reset(&want);
	buf_append(&want, header, sizeof header);
	for (int i = 0; i < NREC; i++)
		buf_append(&want, x[i].data, x[i].len);
	rc = write_raw(recs, NREC, &raw, &e);
	ok(rc == 0 && same_bytes(&raw, &want), "the %d records in one file: the header once, then each in order", NREC);
	int n = read_back(&want, &back, &e);
	ok(n == NREC && same_bytes(&back, &want), "which read back as %d records, none lost, repeated or changed (%d: %s)",
	   NREC, n, n < 0 ? e.msg : "ok");
	byte_at_a_time(&want);
	damaged_names();
	damaged_traj_fields();
	damaged_ids();
	ids_cut_before_field();
	damaged_mb_shape();
	empty_frames(&x[0]);
	no_successes();
	damaged_records(&x[2]);
	damaged_frames(&x[2], &recs[2]);
	empty_prompts_mixed(&x[3]);
	ready_and_drained(&x[2]);

	for (int i = 0; i < NREC; i++) {
		record_free(&recs[i]);
		buf_free(&x[i]);
	}
	buf_free(&raw);
	buf_free(&want);
	buf_free(&back);
	return tap_done();
}
