/* Spool file format: exact round trips through the binary format and the
 * JSON view, and clean rejection of damaged files. */
#include <stdlib.h>
#include <string.h>

#include "jsonview.h"
#include "sfile.h"
#include "tap.h"

#include <zstd.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
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
	g->group_id = gid;
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
		t->sequence_id = gid * 100 + i;
		t->group_id = gid;
		t->policy_version = 3;
		t->temperature = 0.7f;
		t->finish_reason = (enum finish_reason)(i % 3);
		if (i == 1)
			t->run = strdup("run-b");
		if (scored) {
			t->scored = 1;
			t->ref_logprobs = malloc(t->n_response * 4 + 4);
			for (uint32_t k = 0; k < t->n_response; k++)
				t->ref_logprobs[k] = rnd_float();
			t->n_rewards = 2;
			t->rewards = malloc(8);
			t->rewards[0] = rnd_float();
			t->rewards[1] = 1.0f;
			t->reward_names = calloc(2, sizeof(char *));
			t->reward_names[0] = strdup("correct");
			t->reward_names[1] = strdup("format");
			t->advantage = rnd_float();
			t->success = 1.0f;
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
	    a->sequence_id != b->sequence_id || a->group_id != b->group_id ||
	    a->policy_version != b->policy_version || a->temperature != b->temperature ||
	    a->finish_reason != b->finish_reason || a->scored != b->scored)
		return 0;
	if (!a->scored)
		return 1;
	if (!same_floats(a->ref_logprobs, b->ref_logprobs, a->n_response) || a->n_rewards != b->n_rewards ||
	    !same_floats(a->rewards, b->rewards, a->n_rewards) ||
	    memcmp(&a->advantage, &b->advantage, 4) || a->success != b->success)
		return 0;
	for (uint32_t i = 0; i < a->n_rewards; i++)
		if (!same_str(a->reward_names[i], b->reward_names[i]))
			return 0;
	return 1;
}

static int same_group(const struct group *a, const struct group *b)
{
	if (a->group_id != b->group_id || a->n != b->n)
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
		mb->position_ids[i] = (int32_t)(i < 30 ? i : i - 30);
		mb->loss_mask[i] = i % 30 > 5;
		mb->advantages[i] = rnd_float();
		mb->inference_logprobs[i] = -fabsf(rnd_float());
		mb->ref_logprobs[i] = rnd_float();
		mb->temperatures[i] = 1.0f;
	}
	mb->n_seq_lens = 3;
	mb->seq_lens = malloc(12);
	mb->seq_lens[0] = 30;
	mb->seq_lens[1] = 16;
	mb->seq_lens[2] = 4; /* padding */
	mb->n_seqs = 2;
	mb->sequence_ids = malloc(16);
	mb->group_ids = malloc(16);
	mb->sequence_ids[0] = 7;
	mb->sequence_ids[1] = 9;
	mb->group_ids[0] = 1;
	mb->group_ids[1] = 2;
	mb->step = 4;
	mb->rank = 1;
	mb->index = 2;
}

static int same_mb(const struct microbatch *a, const struct microbatch *b)
{
	uint32_t T = a->n_tokens;
	return T == b->n_tokens && !memcmp(a->input_ids, b->input_ids, T * 4) &&
	       !memcmp(a->position_ids, b->position_ids, T * 4) && !memcmp(a->loss_mask, b->loss_mask, T) &&
	       same_floats(a->advantages, b->advantages, T) &&
	       same_floats(a->inference_logprobs, b->inference_logprobs, T) &&
	       same_floats(a->ref_logprobs, b->ref_logprobs, T) && same_floats(a->temperatures, b->temperatures, T) &&
	       a->n_seq_lens == b->n_seq_lens && !memcmp(a->seq_lens, b->seq_lens, a->n_seq_lens * 4) &&
	       a->n_seqs == b->n_seqs && !memcmp(a->sequence_ids, b->sequence_ids, a->n_seqs * 8) &&
	       !memcmp(a->group_ids, b->group_ids, a->n_seqs * 8) && a->step == b->step && a->rank == b->rank &&
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

int main(void)
{
	struct group gs[6];
	struct microbatch mb;
	struct record recs[10];
	struct err e = { "" };
	for (int i = 0; i < 6; i++)
		make_group(&gs[i], 10 + i, 1 + rnd() % 8, i % 2, i % 3 != 0);
	make_mb(&mb);

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
	   r.traj.sequence_id == -1 && r.traj.scored == 0,
	   "a minimal trajectory takes the documented defaults");
	record_free(&r);

	char s[32];
	json_format_float(s, 0.1f);
	ok(strcmp(s, "0.1") == 0, "0.1f prints as 0.1 (%s)", s);
	json_format_float(s, -1.0f / 3.0f);
	ok(strtof(s, NULL) == -1.0f / 3.0f, "-1/3 prints with enough digits (%s)", s);

	for (int i = 0; i < 6; i++)
		group_free(&gs[i]);
	mb_free(&mb);
	buf_free(&file);
	buf_free(&two);
	return tap_done();
}
