/* Spool file format: exact round trips through the binary format and the
 * JSON view, clean rejection of damaged files and of non-finite floats, and
 * a newer minor version's additions skipped by this reader. */
#include <stdlib.h>
#include <string.h>

#include "data/jsonview.h"
#include "data/sfile.h"
#include "tap.h"

#include <zstd.h>

#define XORSHIFT_SEED 88172645463325252ull
#include "../xorshift.h"

static uint32_t rnd(void)
{
	return (uint32_t)xorshift();
}

static float rnd_float(void)
{
	uint32_t u = rnd();
	float f;
	memcpy(&f, &u, 4);
	return (isnan(f) || isinf(f)) ? -1.5f : f; /* any bit pattern but NaN/Inf */
}

static void make_group(struct group *g, int64_t gid, uint32_t n, int scored, int share_prompt)
{
	g->group_id = traj_id_num(gid);
	g->n = n;
	g->trajs = calloc(n, sizeof *g->trajs);
	uint32_t np = 1 + rnd() % 40;
	for (uint32_t i = 0; i < n; i++) {
		struct traj *t = &g->trajs[i];
		traj_init(t);
		t->n_prompt = share_prompt ? np : rnd() % 30;
		t->n_response = rnd() % 60;
		t->prompt_tokens = malloc(t->n_prompt * 4 + 4);
		t->response_tokens = malloc(t->n_response * 4 + 4);
		t->logprobs = malloc(t->n_response * 4 + 4);
		for (uint32_t k = 0; k < t->n_prompt; k++)
			t->prompt_tokens[k] = share_prompt ? (int32_t)(k * 7 + gid) : (int32_t)(rnd() % 151936);
		for (uint32_t k = 0; k < t->n_response; k++) {
			t->response_tokens[k] = (int32_t)(rnd() % 151936);
			t->logprobs[k] = -fabsf(rnd_float());
		}
		if (i % 2) {
			t->response_mask = malloc(t->n_response + 1);
			for (uint32_t k = 0; k < t->n_response; k++)
				t->response_mask[k] = rnd() & 1;
		}
		if (i % 3 == 0)
			t->answer = strdup("72 \"quoted\"\n\\ tab\t ünïcode");
		t->sequence_id = traj_id_num(gid * 100 + i);
		t->group_id = traj_id_num(gid);
		t->policy_version = 3;
		t->temperature = 0.7f;
		static const char *fin[] = { NULL, "stop", "length", "tool_calls", "abort" };
		traj_set_finish(t, fin[i % 5]);
		if (i == 1)
			t->run = strdup("run-b");
		if (scored) {
			t->scored = 1;
			t->ref_logprobs = malloc(t->n_response * 4 + 4);
			for (uint32_t k = 0; k < t->n_response; k++)
				t->ref_logprobs[k] = -fabsf(rnd_float());
			t->n_rewards = 2;
			t->rewards = malloc(8);
			t->rewards[0] = rnd_float();
			t->rewards[1] = 1.0f;
			t->reward_names = calloc(2, sizeof(char *));
			t->reward_names[0] = strdup("correct");
			t->reward_names[1] = strdup("format");
			t->advantage = rnd_float();
			t->successes = malloc(8);
			t->successes[0] = 1.0f;
			t->successes[1] = 0.0f;
		}
	}
}

static int same_floats(const float *a, const float *b, uint32_t n)
{
	if (!a || !b)
		return a == b;
	return memcmp(a, b, n * sizeof(float)) == 0;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_traj(const struct traj *a, const struct traj *b)
{
	if (a->n_prompt != b->n_prompt || a->n_response != b->n_response ||
	    memcmp(a->prompt_tokens, b->prompt_tokens, a->n_prompt * 4) ||
	    memcmp(a->response_tokens, b->response_tokens, a->n_response * 4) ||
	    !same_floats(a->logprobs, b->logprobs, a->n_response) ||
	    (!a->response_mask) != (!b->response_mask) ||
	    (a->response_mask && memcmp(a->response_mask, b->response_mask, a->n_response)) ||
	    !same_str(a->answer, b->answer) || !same_str(a->run, b->run) ||
	    !traj_id_eq(&a->sequence_id, &b->sequence_id) || !traj_id_eq(&a->group_id, &b->group_id) ||
	    a->policy_version != b->policy_version || a->temperature != b->temperature ||
	    !same_str(a->finish_reason, b->finish_reason) || a->scored != b->scored)
		return 0;
	if (!a->scored)
		return 1;
	if (!same_floats(a->ref_logprobs, b->ref_logprobs, a->n_response) || a->n_rewards != b->n_rewards ||
	    !same_floats(a->rewards, b->rewards, a->n_rewards) ||
	    memcmp(&a->advantage, &b->advantage, 4) || !same_floats(a->successes, b->successes, a->n_rewards))
		return 0;
	for (uint32_t i = 0; i < a->n_rewards; i++)
		if (!same_str(a->reward_names[i], b->reward_names[i]))
			return 0;
	return 1;
}

static int same_group(const struct group *a, const struct group *b)
{
	if (!traj_id_eq(&a->group_id, &b->group_id) || a->n != b->n)
		return 0;
	for (uint32_t i = 0; i < a->n; i++)
		if (!same_traj(&a->trajs[i], &b->trajs[i]))
			return 0;
	return 1;
}

static void make_mb(struct microbatch *mb)
{
	uint32_t T = 50;
	memset(mb, 0, sizeof *mb);
	mb->n_tokens = T;
	mb->input_ids = malloc(T * 4);
	mb->position_ids = malloc(T * 4);
	mb->loss_mask = malloc(T);
	mb->advantages = malloc(T * 4);
	mb->inference_logprobs = malloc(T * 4);
	mb->ref_logprobs = malloc(T * 4);
	mb->temperatures = malloc(T * 4);
	for (uint32_t i = 0; i < T; i++) {
		mb->input_ids[i] = (int32_t)(rnd() % 1000);
		/* spans of 30, 16 and 4 (padding) tokens, prompts of 5 and 3 */
		uint32_t x = i < 30 ? i : i < 46 ? i - 30 : i - 46;
		mb->position_ids[i] = (int32_t)x;
		mb->loss_mask[i] = i < 46 && x >= (i < 30 ? 5u : 3u) && rnd() % 4;
		mb->advantages[i] = rnd_float();
		mb->inference_logprobs[i] = -fabsf(rnd_float());
		mb->ref_logprobs[i] = -fabsf(rnd_float());
		mb->temperatures[i] = 1.0f;
	}
	mb->n_seq_lens = 3;
	mb->seq_lens = malloc(12);
	mb->seq_lens[0] = 30;
	mb->seq_lens[1] = 16;
	mb->seq_lens[2] = 4; /* padding */
	mb->n_seqs = 2;
	mb->sequence_ids = calloc(2, sizeof(struct traj_id));
	mb->group_ids = calloc(2, sizeof(struct traj_id));
	traj_id_set_str(&mb->sequence_ids[0], "cmpl-7-0", 8);   /* ids as given: a string ... */
	mb->sequence_ids[1] = traj_id_num(9);                    /* ... beside an integer */
	mb->group_ids[0] = traj_id_num(1);
	mb->group_ids[1] = traj_id_num(2);
	mb->prompt_lens = malloc(8);
	mb->prompt_lens[0] = 5, mb->prompt_lens[1] = 3;
	mb->policy_versions = malloc(16);
	mb->policy_versions[0] = 3, mb->policy_versions[1] = 2;
	mb->rewards = malloc(8);
	mb->rewards[0] = 1.5f, mb->rewards[1] = -0.25f;
	mb->finish_reasons = calloc(2, sizeof(char *));
	mb->finish_reasons[0] = strdup("tool_calls");   /* [1] unknown */
	mb->logprobs_missing = calloc(2, 1);
	mb->logprobs_missing[1] = 1;
	mb->step = 4;
	mb->rank = 1;
	mb->index = 2;
}

static int same_ids(const struct traj_id *a, const struct traj_id *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!traj_id_eq(&a[i], &b[i]))
			return 0;
	return 1;
}

static int same_mb(const struct microbatch *a, const struct microbatch *b)
{
	uint32_t T = a->n_tokens;
	for (uint32_t j = 0; a->finish_reasons && b->finish_reasons && j < a->n_seqs; j++)
		if (!same_str(a->finish_reasons[j], b->finish_reasons[j]))
			return 0;
	if (!a->finish_reasons != !b->finish_reasons || !a->prompt_lens != !b->prompt_lens ||
	    !a->policy_versions != !b->policy_versions || !a->logprobs_missing != !b->logprobs_missing ||
	    (a->prompt_lens && memcmp(a->prompt_lens, b->prompt_lens, a->n_seqs * 4)) ||
	    (a->policy_versions && memcmp(a->policy_versions, b->policy_versions, a->n_seqs * 8)) ||
	    (a->logprobs_missing && memcmp(a->logprobs_missing, b->logprobs_missing, a->n_seqs)) ||
	    !same_floats(a->rewards, b->rewards, a->n_seqs))
		return 0;
	return T == b->n_tokens && !memcmp(a->input_ids, b->input_ids, T * 4) &&
	       !memcmp(a->position_ids, b->position_ids, T * 4) && !memcmp(a->loss_mask, b->loss_mask, T) &&
	       same_floats(a->advantages, b->advantages, T) &&
	       same_floats(a->inference_logprobs, b->inference_logprobs, T) &&
	       same_floats(a->ref_logprobs, b->ref_logprobs, T) && same_floats(a->temperatures, b->temperatures, T) &&
	       a->n_seq_lens == b->n_seq_lens && !memcmp(a->seq_lens, b->seq_lens, a->n_seq_lens * 4) &&
	       a->n_seqs == b->n_seqs && same_ids(a->sequence_ids, b->sequence_ids, a->n_seqs) &&
	       same_ids(a->group_ids, b->group_ids, a->n_seqs) && a->step == b->step && a->rank == b->rank &&
	       a->index == b->index;
}

/* Write groups then a micro-batch into memory; returns the file bytes. */
static void write_file(struct buf *file, struct group *gs, int ng, struct microbatch *mb)
{
	struct sfile_writer w;
	struct err e;
	sfile_writer_init(&w, sfile_sink_buf, file, 3, &e);
	for (int i = 0; i < ng; i++)
		sfile_write_group(&w, &gs[i], &e);
	if (mb)
		sfile_write_mb(&w, mb, &e);
	sfile_writer_finish(&w, &e);
	sfile_writer_free(&w);
}

static int read_all(const struct buf *file, struct record *out, int max, struct err *e)
{
	struct sfile_reader r;
	int n = 0, k = 0;
	sfile_reader_open_mem(&r, file->data, file->len, "mem.zst", e);
	while (n < max && (k = sfile_read(&r, &out[n], e)) > 0)
		n++;
	sfile_reader_close(&r);
	if (k < 0) {
		while (n > 0)
			record_free(&out[--n]);
		return -1;
	}
	return n;
}

/* ---- raw file surgery: a file another writer could have written ---- */

static void unzstd(const struct buf *file, struct buf *raw)
{
	raw->cap = 1 << 20;
	raw->data = malloc(raw->cap);
	raw->len = ZSTD_decompress(raw->data, raw->cap, file->data, file->len);
	if (ZSTD_isError(raw->len))
		raw->len = 0;
}

static void rezstd(const struct buf *raw, struct buf *file)
{
	buf_free(file);
	file->cap = ZSTD_compressBound(raw->len);
	file->data = malloc(file->cap);
	file->len = ZSTD_compress(file->data, file->cap, raw->data, raw->len, 3);
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int k = 0; k < bytes; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int k = bytes - 1; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

/* Insert n bytes at offset at of raw. */
static void insert(struct buf *raw, size_t at, const void *p, size_t n)
{
	buf_append(raw, p, n); /* grow */
	memmove(raw->data + at + n, raw->data + at, raw->len - n - at);
	memcpy(raw->data + at, p, n);
}

/* Replace the first 4-byte float equal to from (by bits) with to; 1 if found. */
static int patch_float(struct buf *raw, float from, float to)
{
	for (size_t i = 0; i + 4 <= raw->len; i++)
		if (!memcmp(raw->data + i, &from, 4)) {
			memcpy(raw->data + i, &to, 4);
			return 1;
		}
	return 0;
}

/* Set element i of the byte-planar float array a (n) in raw to to; 1 if found. */
static int patch_planar(struct buf *raw, const float *a, uint32_t n, uint32_t i, float to)
{
	unsigned char *img = malloc(4 * n);
	const unsigned char *src = (const unsigned char *)a, *t = (const unsigned char *)&to;
	for (uint32_t k = 0; k < 4; k++)
		for (uint32_t j = 0; j < n; j++)
			img[k * n + j] = src[j * 4 + k];
	unsigned char *at = memmem(raw->data, raw->len, img, 4 * n);
	for (uint32_t k = 0; at && k < 4; k++)
		at[k * n + i] = t[k];
	free(img);
	return at != NULL;
}

static const float poison[] = { NAN, INFINITY, -INFINITY };
static const char *poison_name[] = { "NaN", "Infinity", "-Infinity" };

/* A one-trajectory scored group whose float fields hold distinct markers. */
static void marked_group(struct group *g)
{
	make_group(g, 77, 1, 1, 0);
	struct traj *t = &g->trajs[0];
	free(t->logprobs);
	free(t->ref_logprobs);
	t->n_response = 2;
	t->logprobs = malloc(8);
	t->ref_logprobs = malloc(8);
	t->logprobs[0] = -0.125f, t->logprobs[1] = -0.375f;
	t->ref_logprobs[0] = -0.625f, t->ref_logprobs[1] = -0.875f;
	t->rewards[0] = 0.3125f, t->rewards[1] = 0.4375f;
	t->temperature = 0.6875f;
	t->advantage = 1.8125f;
	t->successes[0] = 0.125f, t->successes[1] = 0.9375f;
	t->response_mask = NULL;
}

static void nonfinite_tests(void)
{
	struct err e = { 0 };
	struct record recs[4];
	/* each float field, by the marker value it holds, and its name in messages */
	static const struct { float mark; const char *field; } gf[] = {
		{ -0.375f, "logprobs[1]" }, { 0.6875f, "temperature" }, { -0.625f, "ref_logprobs[0]" },
		{ 0.4375f, "rewards[1]" }, { 1.8125f, "advantages" }, { 0.9375f, "successes[1]" },
	};
	int writer_ok = 1, reader_ok = 1;
	for (size_t f = 0; f < sizeof gf / sizeof *gf; f++) {
		for (int p = 0; p < 3; p++) {
			struct group g;
			marked_group(&g);
			struct buf file = { 0 }, raw = { 0 }, msg = { 0 };
			write_file(&file, &g, 1, NULL);

			/* the writer refuses the poisoned field */
			struct traj *t = &g.trajs[0];
			float *slot[] = { &t->logprobs[1], &t->temperature, &t->ref_logprobs[0], &t->rewards[1],
					  &t->advantage, &t->successes[1] };
			*slot[f] = poison[p];
			struct sfile_writer w;
			sfile_writer_init(&w, sfile_sink_buf, &msg, 3, &e);
			int rc = sfile_write_group(&w, &g, &e);
			sfile_writer_free(&w);
			char want[96];
			snprintf(want, sizeof want, "record 1 (group 77): trajectory 0: %s is %s", gf[f].field,
				 poison_name[p]);
			if (rc == 0 || !strstr(e.msg, want)) {
				diag("writer, %s = %s: %s", gf[f].field, poison_name[p], rc ? e.msg : "written");
				writer_ok = 0;
			}

			/* the reader refuses a file whose field another writer poisoned */
			unzstd(&file, &raw);
			int found = patch_float(&raw, gf[f].mark, poison[p]);
			rezstd(&raw, &file);
			int n = read_all(&file, recs, 4, &e);
			snprintf(want, sizeof want, "mem.zst: record 1: trajectory 0: %s is %s", gf[f].field,
				 poison_name[p]);
			if (!found || n >= 0 || !strstr(e.msg, want)) {
				diag("reader, %s = %s: %s", gf[f].field, poison_name[p], n < 0 ? e.msg : "read");
				reader_ok = 0;
			}
			for (int i = 0; i < n; i++)
				record_free(&recs[i]);
			group_free(&g);
			buf_free(&file);
			buf_free(&raw);
			buf_free(&msg);
		}
	}
	ok(writer_ok, "writer: NaN, Infinity and -Infinity refused in each trajectory float field, record and field named");
	ok(reader_ok, "reader: the same in a file from another writer, file, record and field named");

	static const char *mf[] = { "advantages", "inference_logprobs", "ref_logprobs", "temperatures" };
	int mb_ok = 1;
	for (int f = 0; f < 4; f++) {
		struct microbatch mb;
		make_mb(&mb);
		struct buf file = { 0 }, raw = { 0 };
		float *arr[] = { mb.advantages, mb.inference_logprobs, mb.ref_logprobs, mb.temperatures };
		float sign = (f == 1 || f == 2) ? -1.0f : 1.0f;   /* logprobs are at most 0 */
		for (uint32_t i = 0; i < mb.n_tokens; i++)   /* markers no random value takes */
			arr[f][i] = sign * 0.0625f;
		arr[f][3] = sign * 4.0625f;
		write_file(&file, NULL, 0, &mb);
		arr[f][3] = NAN;
		struct sfile_writer w;
		struct buf out = { 0 };
		sfile_writer_init(&w, sfile_sink_buf, &out, 3, &e);
		char want[80];
		snprintf(want, sizeof want, "record 1 (micro-batch): %s[3] is NaN", mf[f]);
		if (sfile_write_mb(&w, &mb, &e) == 0 || !strstr(e.msg, want)) {
			diag("writer, micro-batch %s: %s", mf[f], e.msg);
			mb_ok = 0;
		}
		sfile_writer_free(&w);
		unzstd(&file, &raw);
		arr[f][3] = sign * 4.0625f;
		int found = patch_planar(&raw, arr[f], mb.n_tokens, 3, -INFINITY);
		rezstd(&raw, &file);
		int n = read_all(&file, recs, 4, &e);
		snprintf(want, sizeof want, "record 1: %s[3] is -Infinity", mf[f]);
		if (!found || n >= 0 || !strstr(e.msg, want)) {
			diag("reader, micro-batch %s: %s", mf[f], n < 0 ? e.msg : "read");
			mb_ok = 0;
		}
		for (int i = 0; i < n; i++)
			record_free(&recs[i]);
		mb_free(&mb);
		buf_free(&file);
		buf_free(&raw);
		buf_free(&out);
	}
	ok(mb_ok, "micro-batch: non-finite advantages, inference_logprobs, ref_logprobs, temperatures refused both ways");

	/* the JSON view: never null; Python's words, read back, then refused by the writer */
	char s[32];
	json_format_float(s, NAN);
	ok(!strcmp(s, "NaN"), "NaN prints as NaN, not null (%s)", s);
	json_format_float(s, INFINITY);
	ok(!strcmp(s, "Infinity"), "+inf prints as Infinity (%s)", s);
	json_format_float(s, -INFINITY);
	ok(!strcmp(s, "-Infinity"), "-inf prints as -Infinity (%s)", s);
	const char *line = "{\"prompt_tokens\":[1],\"response_tokens\":[2],"
			   "\"logprobs\":[-0.5],\"ref_logprobs\":[-0.5],\"rewards\":[1],\"reward_names\":[\"r\"],"
			   "\"advantages\":-Infinity,\"successes\":1}";
	struct record r;
	int rc = json_parse_record(line, strlen(line), &r, &e);
	ok(rc == 0 && r.kind == REC_TRAJ && isinf(r.traj.advantage) && r.traj.advantage < 0 &&
		   r.traj.successes && r.traj.successes[0] == 1.0f,
	   "a lone trajectory with \"advantages\":-Infinity reads as -inf, a bare success as a list (%s)",
	   rc ? e.msg : "ok");
	if (rc == 0) {
		struct buf out = { 0 };
		struct sfile_writer w;
		sfile_writer_init(&w, sfile_sink_buf, &out, 3, &e);
		struct group g = { traj_id_num(5), 1, &r.traj };
		rc = sfile_write_group(&w, &g, &e);
		ok(rc < 0 && strstr(e.msg, "group 5): trajectory 0: advantages is -Infinity"),
		   "and the writer refuses it in a group: %s", e.msg);
		sfile_writer_free(&w);
		buf_free(&out);
		record_free(&r);
	}
}

/* Replace the first byte of the first occurrence of mark in raw with 0xff; 1 if found. */
static int patch_text(struct buf *raw, const char *mark)
{
	unsigned char *at = memmem(raw->data, raw->len, mark, strlen(mark));
	if (at)
		*at = 0xff;
	return at != NULL;
}

/* A one-trajectory scored group whose strings hold distinct markers; slot
 * f (the order of utf8_tests' fields) is returned in *s. */
static void text_group(struct group *g, int f, char **s)
{
	make_group(g, 0, 1, 1, 0);
	struct traj *t = &g->trajs[0];
	traj_id_free(&g->group_id);
	traj_id_free(&t->group_id);
	traj_id_set_str(&g->group_id, "#grp", 4);
	traj_id_set_str(&t->group_id, "#grp", 4);
	traj_id_set_str(&t->sequence_id, "#seq", 4);
	free(t->answer), free(t->run);
	t->answer = strdup("#ans");
	t->run = strdup("#run");
	traj_set_finish(t, "#fin");
	free(t->reward_names[1]);
	t->reward_names[1] = strdup("#rwd");
	char *slot[] = { t->answer, t->run, t->finish_reason, t->sequence_id.str, t->reward_names[1] };
	*s = slot[f];
}

/* Strings that are not UTF-8, which the JSON view would print raw (no
 * JSON), are refused by the writer and by the reader, field named. */
static void utf8_tests(void)
{
	static const char *field[] = { "answer", "run", "finish_reason", "sequence_id", "reward_names[1]" };
	static const char *mark[] = { "#ans", "#run", "#fin", "#seq", "#rwd" };
	struct err e = { 0 };
	struct record recs[4];
	int writer_ok = 1, reader_ok = 1;
	for (int f = 0; f < 5; f++) {
		struct group g;
		char *s;
		text_group(&g, f, &s);
		struct buf file = { 0 }, raw = { 0 }, out = { 0 };
		write_file(&file, &g, 1, NULL);
		s[0] = (char)0xff;
		struct sfile_writer w;
		sfile_writer_init(&w, sfile_sink_buf, &out, 3, &e);
		int rc = sfile_write_group(&w, &g, &e);
		sfile_writer_free(&w);
		char want[128];
		snprintf(want, sizeof want, "record 1 (group #grp): trajectory 0: %s is not UTF-8 (its byte 1, 0xff,",
			 field[f]);
		if (rc == 0 || !strstr(e.msg, want)) {
			diag("writer, %s: %s", field[f], rc ? e.msg : "written");
			writer_ok = 0;
		}
		unzstd(&file, &raw);
		int found = patch_text(&raw, mark[f]);
		rezstd(&raw, &file);
		int n = read_all(&file, recs, 4, &e);
		snprintf(want, sizeof want, "mem.zst: record 1: trajectory 0: %s is not UTF-8", field[f]);
		if (!found || n >= 0 || !strstr(e.msg, want)) {
			diag("reader, %s: %s", field[f], n < 0 ? e.msg : "read");
			reader_ok = 0;
		}
		for (int i = 0; i < n; i++)
			record_free(&recs[i]);
		group_free(&g);
		buf_free(&file);
		buf_free(&raw);
		buf_free(&out);
	}
	ok(writer_ok, "writer: a byte that is not UTF-8 in answer, run, finish_reason, a string id, a reward name is refused");
	ok(reader_ok, "reader: the same in a file from another writer, file, record and field named");

	/* a group's own id, and a micro-batch's strings */
	struct group g;
	char *s;
	text_group(&g, 0, &s);
	g.group_id.str[1] = (char)0xc3;   /* a lead byte with no continuation after it */
	ok(group_check(&g, &e) < 0 && strstr(e.msg, "group_id is not UTF-8 (its byte 2, 0xc3,"),
	   "a group_id cut inside a character is refused: %s", e.msg);
	group_free(&g);
	struct microbatch mb;
	int mb_ok = 1;
	static const char *mfield[] = { "sequence_ids[0]", "finish_reasons[0]", "run" };
	for (int f = 0; f < 3; f++) {
		make_mb(&mb);
		mb.run = strdup("run-a");
		char *ms[] = { mb.sequence_ids[0].str, mb.finish_reasons[0], mb.run };
		ms[f][2] = (char)0x80;   /* a continuation byte with no lead */
		char want[80];
		snprintf(want, sizeof want, "%s is not UTF-8 (its byte 3, 0x80,", mfield[f]);
		if (mb_check(&mb, &e) == 0 || !strstr(e.msg, want)) {
			diag("micro-batch %s: %s", mfield[f], e.msg);
			mb_ok = 0;
		}
		mb_free(&mb);
	}
	ok(mb_ok, "micro-batch: a string id, a finish reason or the run that is not UTF-8 is refused");
	make_mb(&mb);
	mb.finish_reasons[1] = strdup("stop \xe2\x9c\x93 \xf0\x9f\x98\x80");
	ok(mb_check(&mb, &e) == 0, "and UTF-8 of 2 to 4 bytes is taken (%s)", e.msg);
	mb_free(&mb);
}

/* A file as a newer minor version might write it: minor + 1, a header
 * extension, a record kind and field tags (of known and unknown types, in a
 * group, a trajectory and a micro-batch) that this reader does not know. */
static void forward_compat_tests(void)
{
	struct group g;
	struct microbatch mb;
	struct err e = { 0 };
	struct buf file = { 0 }, raw = { 0 };
	make_group(&g, 42, 3, 1, 1);
	make_mb(&mb);
	write_file(&file, &g, 1, &mb);
	unzstd(&file, &raw);

	/* walk the original: header 12 bytes, group record, micro-batch record */
	size_t grp = 12, glen = get_le(raw.data + grp + 8, 8);
	size_t mbr = grp + 16 + glen;
	/* fields: u16 tag, u8 type, u8 encoding, u32 len, data */
	static const unsigned char unknown_f32[] = { 0xc8, 0x00, 2, 0, 4, 0, 0, 0, 0x00, 0x00, 0xc0, 0x7f };
	static const unsigned char unknown_type[] = { 0xc9, 0x00, 77, 9, 3, 0, 0, 0, 'x', 'y', 'z' };
	static const unsigned char unknown_nested[] = { 0xca, 0x00, 9, 0, 8, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0 };

	/* 1. the micro-batch gains an unknown field at its end (work back to front) */
	insert(&raw, mbr + 16 + get_le(raw.data + mbr + 8, 8), unknown_type, sizeof unknown_type);
	put_le(raw.data + mbr + 8, get_le(raw.data + mbr + 8, 8) + sizeof unknown_type, 8);
	/* 2. the group's first trajectory gains one at its start, the group one at its end */
	size_t p = grp + 16, end = p + glen;
	while (p < end && get_le(raw.data + p, 2) != 3)   /* G_TRAJ */
		p += 8 + get_le(raw.data + p + 4, 4);
	insert(&raw, grp + 16 + glen, unknown_nested, sizeof unknown_nested);
	insert(&raw, p + 8, unknown_f32, sizeof unknown_f32);
	put_le(raw.data + p + 4, get_le(raw.data + p + 4, 4) + sizeof unknown_f32, 4);
	put_le(raw.data + grp + 8, glen + sizeof unknown_nested + sizeof unknown_f32, 8);
	/* 3. a record of an unknown kind before everything */
	static const unsigned char unknown_rec[] = { 9, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,
						     'h', 'e', 'l', 'l', 'o' };
	insert(&raw, 12, unknown_rec, sizeof unknown_rec);
	/* 4. the header: minor + 1 and an 8-byte extension */
	put_le(raw.data + 6, SFILE_MINOR + 1, 2);
	put_le(raw.data + 8, 8, 4);
	insert(&raw, 12, "ext-data", 8);
	rezstd(&raw, &file);

	struct record recs[4];
	int n = read_all(&file, recs, 4, &e);
	is_int(n, 2, "minor version %d with a header extension, an unknown record kind and unknown field tags reads (%s)",
	       SFILE_MINOR + 1, n < 0 ? e.msg : "ok");
	ok(n == 2 && recs[0].kind == REC_GROUP && same_group(&g, &recs[0].group),
	   "the group reads back exactly, its unknown fields skipped");
	ok(n == 2 && recs[1].kind == REC_MICROBATCH && same_mb(&mb, &recs[1].mb),
	   "the micro-batch reads back exactly, its unknown field skipped");
	for (int i = 0; i < n; i++)
		record_free(&recs[i]);
	group_free(&g);
	mb_free(&mb);
	buf_free(&file);
	buf_free(&raw);
}

/* Parse a JSON line, write it to a spool file, read it back and print it:
 * the printed line must equal `want` (the input's own canonical form). */
static void json_trip(const char *line, const char *want, const char *what)
{
	struct record rec, back[2];
	struct err e = { 0 };
	struct buf file = { 0 }, out = { 0 };
	int ok_parse = json_parse_record(line, strlen(line), &rec, &e) == 0;
	int n = -1;
	if (ok_parse) {
		struct sfile_writer w;
		sfile_writer_init(&w, sfile_sink_buf, &file, 3, &e);
		sfile_write_record(&w, &rec, &e);
		sfile_writer_finish(&w, &e);
		sfile_writer_free(&w);
		record_free(&rec);
		n = read_all(&file, back, 2, &e);
		if (n == 1)
			json_print_record(&out, &back[0]);
		while (n > 0)
			record_free(&back[--n]);
	}
	buf_put_u8(&out, 0);
	ok(ok_parse && strcmp((char *)out.data, want) == 0, "%s: %s%s", what, out.data ? (char *)out.data : "",
	   e.msg);
	buf_free(&file);
	buf_free(&out);
}

static void test_ids(void)
{
	/* strings stay strings, integers integers, "42" is not 42 */
	const char *g = "{\"group_id\":\"gsm8k-train-0042\",\"trajectories\":["
			"{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-0.5],"
			"\"sequence_id\":\"cmpl-8f3a-1\",\"group_id\":\"gsm8k-train-0042\",\"policy_version\":0,"
			"\"temperature\":1},"
			"{\"prompt_tokens\":[1],\"response_tokens\":[3],\"logprobs\":[-0.25],"
			"\"sequence_id\":\"42\",\"group_id\":\"gsm8k-train-0042\",\"policy_version\":0,"
			"\"temperature\":1},"
			"{\"prompt_tokens\":[1],\"response_tokens\":[4],\"logprobs\":[-1],"
			"\"sequence_id\":42,\"group_id\":\"gsm8k-train-0042\",\"policy_version\":0,"
			"\"temperature\":1}]}\n";
	json_trip(g, g, "string and integer ids survive JSON -> spool file -> JSON");
	const char *esc = "{\"group_id\":7,\"trajectories\":["
			  "{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-0.5],"
			  "\"sequence_id\":\"a\\\"b\\\\c\\u0001\",\"group_id\":7,\"policy_version\":0,"
			  "\"temperature\":1}]}\n";
	json_trip(esc, esc, "an id with quotes, backslashes and control bytes");
	const char *mb = "{\"input_ids\":[1,2,3],\"position_ids\":[0,1,0],\"seq_lens\":[2,1],"
			 "\"loss_mask\":[0,1,0],\"advantages\":[0.5,0.5,0],\"inference_logprobs\":[0,-0.5,0],"
			 "\"temperatures\":[1,1,1],\"sequence_ids\":[\"cmpl-1-0\",17],"
			 "\"group_ids\":[\"row-9\",3],\"step\":1,\"rank\":0,\"index\":0}\n";
	json_trip(mb, mb, "a micro-batch's sequence_ids and group_ids as given");
	struct record r;
	struct err e = { 0 };
	const char *bad = "{\"prompt_tokens\":[1],\"response_tokens\":[2],\"logprobs\":[-1],\"sequence_id\":[1]}";
	ok(json_parse_record(bad, strlen(bad), &r, &e) < 0 && strstr(e.msg, "sequence_id: expected a string or an integer"),
	   "an id that is neither string nor integer is refused: %s", e.msg);
}

int main(void)
{
	struct group gs[6];
	struct microbatch mb;
	struct record recs[10];
	struct err e = { 0 };
	for (int i = 0; i < 6; i++)
		make_group(&gs[i], 10 + i, 1 + rnd() % 8, i % 2, i % 3 != 0);
	make_mb(&mb);
	test_ids();

	struct buf file = { 0 };
	write_file(&file, gs, 6, &mb);
	int n = read_all(&file, recs, 10, &e);
	is_int(n, 7, "binary: six groups and a micro-batch read back (%s)", n < 0 ? e.msg : "ok");
	int all = n == 7;
	for (int i = 0; i < 6 && all; i++)
		all = recs[i].kind == REC_GROUP && same_group(&gs[i], &recs[i].group);
	ok(all, "binary: every group field is bit-identical after the round trip");
	ok(n == 7 && recs[6].kind == REC_MICROBATCH && same_mb(&mb, &recs[6].mb),
	   "binary: the micro-batch is bit-identical after the round trip");

	/* JSON view round trip, starting from what the binary gave back */
	int json_ok = 1;
	for (int i = 0; i < 7 && i < n; i++) {
		struct buf line = { 0 };
		struct record back;
		json_print_record(&line, &recs[i]);
		if (json_parse_record((char *)line.data, line.len, &back, &e) < 0) {
			diag("line %d: %s", i, e.msg);
			json_ok = 0;
		} else if (i < 6 ? !same_group(&recs[i].group, &back.group) : !same_mb(&recs[i].mb, &back.mb))
			json_ok = 0;
		record_free(&back);
		buf_free(&line);
	}
	ok(json_ok, "JSON view: every record reads back bit-identical (floats included)");
	for (int i = 0; i < n; i++)
		record_free(&recs[i]);

	/* concatenated files read as one stream */
	struct buf two = { 0 };
	buf_append(&two, file.data, file.len);
	buf_append(&two, file.data, file.len);
	struct record many[20];
	n = read_all(&two, many, 20, &e);
	is_int(n, 14, "two concatenated files read as 14 records");
	for (int i = 0; i < n; i++)
		record_free(&many[i]);

	/* every truncation is an error, never a crash or a silent short read */
	int truncs_rejected = 1;
	for (size_t cut = 0; cut < file.len; cut += 1 + file.len / 97) {
		struct buf part = { 0 };
		buf_append(&part, file.data, cut);
		n = read_all(&part, many, 20, &e);
		if (cut > 0 && n >= 0) {
			diag("cut at %zu of %zu read %d records without error", cut, file.len, n);
			truncs_rejected = 0;
		}
		for (int i = 0; i < n; i++)
			record_free(&many[i]);
		buf_free(&part);
	}
	ok(truncs_rejected, "every truncated file is rejected");
	{
		struct buf part = { 0 };
		buf_append(&part, file.data, file.len - 3);
		read_all(&part, many, 20, &e);
		ok(strstr(e.msg, "mem.zst") && strstr(e.msg, "truncated"), "truncation message names the file: %s", e.msg);
		buf_free(&part);
	}
	{
		struct buf bad = { 0 };
		buf_append(&bad, file.data, file.len);
		bad.data[bad.len / 2] ^= 0x40;
		n = read_all(&bad, many, 20, &e);
		ok(n < 0 && strstr(e.msg, "mem.zst"), "a flipped byte is rejected: %s", e.msg);
		for (int i = 0; i < (n > 0 ? n : 0); i++)
			record_free(&many[i]);
		buf_free(&bad);
	}
	{
		struct buf bad = { 0 };
		buf_append(&bad, "{\"not\": \"zstd\"}\n", 16);
		n = read_all(&bad, many, 20, &e);
		ok(n < 0 && strstr(e.msg, "not a spool file"), "wrong magic is rejected: %s", e.msg);
		buf_free(&bad);
	}
	{
		/* a zstd file whose content is not ours, and one from a future major version */
		struct buf raw = { 0 }, z = { 0 };
		buf_append(&raw, "GRPO\x02\x00\x00\x00\x00\x00\x00\x00", 12);
		z.cap = 256;
		z.data = malloc(z.cap);
		z.len = ZSTD_compress(z.data, z.cap, raw.data, raw.len, 1);
		n = read_all(&z, many, 20, &e);
		ok(n < 0 && strstr(e.msg, "version 2.0"), "a newer major version is rejected: %s", e.msg);
		buf_free(&raw);
		buf_free(&z);
	}

	/* JSON input errors name the field */
	struct record r;
	const char *bad_lines[][2] = {
		{ "{\"prompt_tokens\":[1],\"response_tokens\":[2,3],\"logprobs\":[-0.1]}", "1 logprobs for 2" },
		{ "{\"prompt_tokens\":[1.5],\"response_tokens\":[],\"logprobs\":[]}", "prompt_tokens[0]" },
		{ "{\"group_id\":1,\"trajectories\":[]}", "at least one" },
		{ "[1,2]", "JSON object" },
		{ "{\"prompt_tokens\":[1],", "not valid JSON" },
	};
	for (size_t i = 0; i < sizeof bad_lines / sizeof *bad_lines; i++) {
		int rc = json_parse_record(bad_lines[i][0], strlen(bad_lines[i][0]), &r, &e);
		ok(rc < 0 && strstr(e.msg, bad_lines[i][1]), "bad JSON line %zu rejected: %s", i, e.msg);
	}
	const char *min = "{\"prompt_tokens\":[1,2],\"response_tokens\":[3],\"logprobs\":[-0.25]}";
	ok(json_parse_record(min, strlen(min), &r, &e) == 0 && r.kind == REC_TRAJ && r.traj.temperature == 1.0f &&
	   !traj_id_given(&r.traj.sequence_id) && r.traj.scored == 0,
	   "a minimal trajectory takes the documented defaults");
	record_free(&r);

	char s[32];
	json_format_float(s, 0.1f);
	ok(strcmp(s, "0.1") == 0, "0.1f prints as 0.1 (%s)", s);
	json_format_float(s, -1.0f / 3.0f);
	ok(strtof(s, NULL) == -1.0f / 3.0f, "-1/3 prints with enough digits (%s)", s);

	nonfinite_tests();
	utf8_tests();
	forward_compat_tests();

	for (int i = 0; i < 6; i++)
		group_free(&gs[i]);
	mb_free(&mb);
	buf_free(&file);
	buf_free(&two);
	return tap_done();
}
