/* sfile.c: see sfile.h and grpo-spool(5). */
#include "data/sfile.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "base/fsys.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "spool files are little-endian and this code copies arrays as they are in memory"
#endif

/* Field types. */
enum { T_I64 = 1, T_F32 = 2, T_STR = 3, T_I32S = 4, T_F32S = 5, T_U8S = 6, T_U32S = 7,
       T_I64S = 8, T_NESTED = 9, T_STRS = 10, T_IDS = 11 };
/* Encodings of arrays. */
enum { ENC_PLAIN = 0, ENC_PLANAR = 1 };

/* Group record fields. */
enum { G_GROUP_ID = 1, G_PROMPT = 2, G_TRAJ = 3, G_GROUP_ID_STR = 4 };
/* Trajectory fields (nested in G_TRAJ). */
enum { TR_PROMPT = 1, TR_RESPONSE = 2, TR_LOGPROBS = 3, TR_MASK = 4, TR_ANSWER = 5,
       TR_SEQUENCE_ID = 6, TR_GROUP_ID = 7, TR_POLICY_VERSION = 8, TR_TEMPERATURE = 9,
       TR_FINISH = 10, TR_RUN = 11, TR_SCORED = 12, TR_REF_LOGPROBS = 13, TR_REWARDS = 14,
       TR_REWARD_NAMES = 15, TR_ADVANTAGE = 16, TR_SUCCESS = 17, TR_SEQUENCE_ID_STR = 18,
       TR_GROUP_ID_STR = 19, TR_SUCCESSES = 20, TR_FINISH_STR = 21 };
/* Micro-batch fields. */
enum { MB_INPUT_IDS = 1, MB_POSITION_IDS = 2, MB_LOSS_MASK = 3, MB_ADVANTAGES = 4,
       MB_INFERENCE_LOGPROBS = 5, MB_REF_LOGPROBS = 6, MB_TEMPERATURES = 7, MB_SEQ_LENS = 8,
       MB_SEQUENCE_IDS = 9, MB_GROUP_IDS = 10, MB_STEP = 11, MB_RANK = 12, MB_INDEX = 13,
       MB_RUN = 14, MB_SEQUENCE_IDS_ANY = 15, MB_GROUP_IDS_ANY = 16, MB_PROMPT_LENS = 17,
       MB_POLICY_VERSIONS = 18, MB_REWARDS = 19, MB_FINISH_REASONS = 20, MB_LOGPROBS_MISSING = 21 };
/* TR_FINISH's integer codes (1.0); other reasons go in TR_FINISH_STR. */
enum { FINISH_CODE_UNKNOWN = 0, FINISH_CODE_STOP = 1, FINISH_CODE_LENGTH = 2 };

#define HEADER_LEN 12
#define PLANAR_MIN 16   /* shorter arrays gain nothing from planes */

void record_free(struct record *rec)
{
	group_free(&rec->group);
	mb_free(&rec->mb);
	traj_free(&rec->traj);
	rec->kind = REC_NONE;
}

/* ---- little-endian access ---- */

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* ---- encoding ---- */

static int put_field_header(struct buf *b, int tag, int type, int enc, size_t len)
{
	if (len > UINT32_MAX)
		return -1;
	return buf_put_u16(b, (uint16_t)tag) | buf_put_u8(b, (uint8_t)type) |
	       buf_put_u8(b, (uint8_t)enc) | buf_put_u32(b, (uint32_t)len);
}

static int put_i64(struct buf *b, int tag, int64_t v)
{
	return put_field_header(b, tag, T_I64, ENC_PLAIN, 8) | buf_put_u64(b, (uint64_t)v);
}

static int put_f32(struct buf *b, int tag, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	return put_field_header(b, tag, T_F32, ENC_PLAIN, 4) | buf_put_u32(b, u);
}

static int put_str(struct buf *b, int tag, const char *s)
{
	if (!s)
		return 0;
	size_t n = strlen(s);
	return put_field_header(b, tag, T_STR, ENC_PLAIN, n) | buf_append(b, s, n);
}

static int put_array(struct buf *b, int tag, int type, const void *p, size_t n, size_t size);

/* A string id under its own tag, so a 1.0 reader skips it and sees no id
 * rather than misreading it. */
static int put_id(struct buf *b, int tag_num, int tag_str, const struct traj_id *id)
{
	return id->str ? put_str(b, tag_str, id->str) : put_i64(b, tag_num, id->num);
}

/* A micro-batch's ids: int64s (as in 1.0) when every id is an integer,
 * else a T_IDS list under the 1.1 tag, each entry u8 0 + 8-byte integer or
 * u8 1 + u32 length + bytes. */
static int put_ids(struct buf *b, int tag_num, int tag_any, const struct traj_id *ids, uint32_t n)
{
	int any_str = 0;
	for (uint32_t i = 0; i < n; i++)
		any_str |= ids[i].str != NULL;
	if (!any_str) {
		int64_t *v = malloc((n ? n : 1) * sizeof *v);
		if (!v)
			return -1;
		for (uint32_t i = 0; i < n; i++)
			v[i] = ids[i].num;
		int r = put_array(b, tag_num, T_I64S, v, n, 8);
		free(v);
		return r;
	}
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++)
		len += ids[i].str ? 5 + strlen(ids[i].str) : 9;
	int r = put_field_header(b, tag_any, T_IDS, ENC_PLAIN, len);
	for (uint32_t i = 0; i < n && r == 0; i++) {
		if (ids[i].str) {
			size_t k = strlen(ids[i].str);
			r = buf_put_u8(b, 1) | buf_put_u32(b, (uint32_t)k) | buf_append(b, ids[i].str, k);
		} else
			r = buf_put_u8(b, 0) | buf_put_u64(b, (uint64_t)ids[i].num);
	}
	return r;
}

/* An array of n elements of `size` bytes (host order is little-endian on
 * every machine we build for; the build refuses big-endian hosts). */
static int put_array(struct buf *b, int tag, int type, const void *p, size_t n, size_t size)
{
	if (!p)
		return 0;
	size_t len = n * size;
	int enc = (size >= 4 && n >= PLANAR_MIN) ? ENC_PLANAR : ENC_PLAIN;
	if (put_field_header(b, tag, type, enc, len) < 0 || buf_reserve(b, len) < 0)
		return -1;
	unsigned char *dst = b->data + b->len;
	const unsigned char *src = p;
	if (enc == ENC_PLAIN)
		memcpy(dst, src, len);
	else
		for (size_t k = 0; k < size; k++)
			for (size_t i = 0; i < n; i++)
				dst[k * n + i] = src[i * size + k];
	b->len += len;
	return 0;
}

static int put_strs(struct buf *b, int tag, char *const *s, uint32_t n)
{
	if (!s)
		return 0;
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++)
		len += 4 + strlen(s[i] ? s[i] : "");
	int r = put_field_header(b, tag, T_STRS, ENC_PLAIN, len);
	for (uint32_t i = 0; i < n && r == 0; i++) {
		size_t k = strlen(s[i] ? s[i] : "");
		r = buf_put_u32(b, (uint32_t)k) | buf_append(b, s[i] ? s[i] : "", k);
	}
	return r;
}

static int same_prompt(const struct traj *a, const struct traj *b)
{
	return a->n_prompt == b->n_prompt &&
	       (a->n_prompt == 0 || memcmp(a->prompt_tokens, b->prompt_tokens, a->n_prompt * 4) == 0);
}

static int encode_traj(struct buf *b, const struct traj *t, const struct group *g, int shared)
{
	int r = 0;
	if (!shared)
		r |= put_array(b, TR_PROMPT, T_I32S, t->prompt_tokens ? t->prompt_tokens : (void *)"",
			       t->n_prompt, 4);
	r |= put_array(b, TR_RESPONSE, T_I32S, t->response_tokens ? t->response_tokens : (void *)"",
		       t->n_response, 4);
	r |= put_array(b, TR_LOGPROBS, T_F32S, t->logprobs, t->n_response, 4);   /* absent: none given */
	r |= put_array(b, TR_MASK, T_U8S, t->response_mask, t->n_response, 1);
	r |= put_str(b, TR_ANSWER, t->answer);
	r |= put_id(b, TR_SEQUENCE_ID, TR_SEQUENCE_ID_STR, &t->sequence_id);
	if (!traj_id_eq(&t->group_id, &g->group_id))
		r |= put_id(b, TR_GROUP_ID, TR_GROUP_ID_STR, &t->group_id);
	r |= put_i64(b, TR_POLICY_VERSION, t->policy_version);
	r |= put_f32(b, TR_TEMPERATURE, t->temperature);
	if (t->finish_reason && strcmp(t->finish_reason, "stop") == 0)
		r |= put_i64(b, TR_FINISH, FINISH_CODE_STOP);
	else if (t->finish_reason && strcmp(t->finish_reason, "length") == 0)
		r |= put_i64(b, TR_FINISH, FINISH_CODE_LENGTH);
	else
		r |= put_str(b, TR_FINISH_STR, t->finish_reason);
	r |= put_str(b, TR_RUN, t->run);
	if (t->scored) {
		r |= put_i64(b, TR_SCORED, 1);
		r |= put_array(b, TR_REF_LOGPROBS, T_F32S, t->ref_logprobs, t->n_response, 4);
		r |= put_array(b, TR_REWARDS, T_F32S, t->rewards ? t->rewards : (void *)"", t->n_rewards, 4);
		r |= put_strs(b, TR_REWARD_NAMES, t->reward_names, t->n_rewards);
		r |= put_f32(b, TR_ADVANTAGE, t->advantage);
		r |= put_array(b, TR_SUCCESSES, T_F32S, t->successes, t->n_rewards, 4);
	}
	return r;
}

static int encode_group(struct buf *b, const struct group *g)
{
	/* A prompt shared by every trajectory is stored once, in the group. */
	int shared = g->n > 1;
	for (uint32_t i = 1; i < g->n && shared; i++)
		shared = same_prompt(&g->trajs[0], &g->trajs[i]);
	int r = put_id(b, G_GROUP_ID, G_GROUP_ID_STR, &g->group_id);
	if (shared)
		r |= put_array(b, G_PROMPT, T_I32S, g->trajs[0].prompt_tokens ? g->trajs[0].prompt_tokens
									  : (void *)"",
			       g->trajs[0].n_prompt, 4);
	for (uint32_t i = 0; i < g->n && r == 0; i++) {
		/* the nested length is patched once the trajectory is encoded */
		size_t at = b->len;
		r |= put_field_header(b, G_TRAJ, T_NESTED, ENC_PLAIN, 0);
		size_t start = b->len;
		r |= encode_traj(b, &g->trajs[i], g, shared);
		if (r == 0) {
			size_t len = b->len - start;
			if (len > UINT32_MAX)
				return -1;
			for (int k = 0; k < 4; k++)
				b->data[at + 4 + k] = (unsigned char)(len >> (8 * k));
		}
	}
	return r;
}

static int encode_mb(struct buf *b, const struct microbatch *mb)
{
	uint32_t T = mb->n_tokens;
	int r = put_array(b, MB_INPUT_IDS, T_I32S, mb->input_ids, T, 4);
	r |= put_array(b, MB_POSITION_IDS, T_I32S, mb->position_ids, T, 4);
	r |= put_array(b, MB_LOSS_MASK, T_U8S, mb->loss_mask, T, 1);
	r |= put_array(b, MB_ADVANTAGES, T_F32S, mb->advantages, T, 4);
	r |= put_array(b, MB_INFERENCE_LOGPROBS, T_F32S, mb->inference_logprobs, T, 4);
	r |= put_array(b, MB_REF_LOGPROBS, T_F32S, mb->ref_logprobs, T, 4);
	r |= put_array(b, MB_TEMPERATURES, T_F32S, mb->temperatures, T, 4);
	r |= put_array(b, MB_SEQ_LENS, T_U32S, mb->seq_lens ? (void *)mb->seq_lens : (void *)"",
		       mb->n_seq_lens, 4);
	r |= put_ids(b, MB_SEQUENCE_IDS, MB_SEQUENCE_IDS_ANY, mb->sequence_ids, mb->n_seqs);
	r |= put_ids(b, MB_GROUP_IDS, MB_GROUP_IDS_ANY, mb->group_ids, mb->n_seqs);
	r |= put_array(b, MB_PROMPT_LENS, T_U32S, mb->prompt_lens, mb->n_seqs, 4);
	r |= put_array(b, MB_POLICY_VERSIONS, T_I64S, mb->policy_versions, mb->n_seqs, 8);
	r |= put_array(b, MB_REWARDS, T_F32S, mb->rewards, mb->n_seqs, 4);
	if (mb->finish_reasons) {
		char *const empty = "";
		char **fr = malloc((mb->n_seqs ? mb->n_seqs : 1) * sizeof *fr);
		for (uint32_t i = 0; fr && i < mb->n_seqs; i++)
			fr[i] = mb->finish_reasons[i] ? mb->finish_reasons[i] : empty;   /* "": unknown */
		r |= fr ? put_strs(b, MB_FINISH_REASONS, fr, mb->n_seqs) : -1;
		free(fr);
	}
	r |= put_array(b, MB_LOGPROBS_MISSING, T_U8S, mb->logprobs_missing, mb->n_seqs, 1);
	r |= put_i64(b, MB_STEP, mb->step);
	r |= put_i64(b, MB_RANK, mb->rank);
	r |= put_i64(b, MB_INDEX, mb->index);
	r |= put_str(b, MB_RUN, mb->run);
	return r;
}

/* ---- writer ---- */

int sfile_sink_fd(void *ctx, const void *p, size_t n, struct err *e)
{
	int fd = (int)(intptr_t)ctx;
	return fsys_write_all(fd, p, n, fd == STDOUT_FILENO ? "standard output" : "output", e);
}

int sfile_sink_buf(void *ctx, const void *p, size_t n, struct err *e)
{
	if (buf_append(ctx, p, n) < 0)
		return err_set(e, "out of memory");
	return 0;
}

static int zcheck(size_t r, struct err *e, const char *what)
{
	if (ZSTD_isError(r))
		return err_set(e, "zstd %s: %s", what, ZSTD_getErrorName(r));
	return 0;
}

int sfile_writer_init(struct sfile_writer *w, sfile_sink sink, void *ctx, int level, struct err *e)
{
	memset(w, 0, sizeof *w);
	w->sink = sink;
	w->sink_ctx = ctx;
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!c)
		return err_set(e, "out of memory");
	w->cctx = c;
	if (zcheck(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level), e, "level") < 0 ||
	    zcheck(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1), e, "checksum") < 0)
		return -1;
	return 0;
}

/* Compress `n` bytes with the given end directive and hand the output on. */
static int compress(struct sfile_writer *w, const void *p, size_t n, ZSTD_EndDirective mode, struct err *e)
{
	ZSTD_inBuffer in = { p, n, 0 };
	size_t chunk = ZSTD_CStreamOutSize();
	for (;;) {
		if (buf_reserve(&w->out, chunk) < 0)
			return err_set(e, "out of memory");
		ZSTD_outBuffer out = { w->out.data + w->out.len, chunk, 0 };
		size_t left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
		if (zcheck(left, e, "compression") < 0)
			return -1;
		w->out.len += out.pos;
		w->file_bytes += out.pos;
		if (w->out.len >= (1 << 20) || (mode != ZSTD_e_continue && left == 0) ||
		    (mode == ZSTD_e_continue && in.pos == in.size)) {
			if (w->out.len && w->sink(w->sink_ctx, w->out.data, w->out.len, e) < 0)
				return -1;
			w->out.len = 0;
		}
		if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
			return 0;
	}
}

static int start(struct sfile_writer *w, struct err *e)
{
	if (w->started)
		return 0;
	unsigned char h[HEADER_LEN] = { 'G', 'R', 'P', 'O', SFILE_MAJOR, 0, SFILE_MINOR, 0, 0, 0, 0, 0 };
	w->started = 1;
	return compress(w, h, sizeof h, ZSTD_e_continue, e);
}

static int emit(struct sfile_writer *w, int kind, struct err *e)
{
	unsigned char h[16];
	uint64_t len = w->rec.len;
	for (int k = 0; k < 4; k++) {
		h[k] = (unsigned char)((uint32_t)kind >> (8 * k));
		h[4 + k] = 0;
	}
	for (int k = 0; k < 8; k++)
		h[8 + k] = (unsigned char)(len >> (8 * k));
	if (start(w, e) < 0 || compress(w, h, sizeof h, ZSTD_e_continue, e) < 0 ||
	    compress(w, w->rec.data, w->rec.len, ZSTD_e_continue, e) < 0)
		return -1;
	w->records++;
	return 0;
}

int sfile_write_group(struct sfile_writer *w, const struct group *g, struct err *e)
{
	char idb[24];
	if (group_check(g, e) < 0)
		return err_prefix(e, "record %llu (group %s)", (unsigned long long)w->records + 1,
				  traj_id_text(&g->group_id, idb));
	buf_reset(&w->rec);
	if (encode_group(&w->rec, g) < 0)
		return err_set(e, "group %s: too large or out of memory", traj_id_text(&g->group_id, idb));
	return emit(w, REC_GROUP, e);
}

int sfile_write_mb(struct sfile_writer *w, const struct microbatch *mb, struct err *e)
{
	if (mb_check(mb, e) < 0)
		return err_prefix(e, "record %llu (micro-batch)", (unsigned long long)w->records + 1);
	buf_reset(&w->rec);
	if (encode_mb(&w->rec, mb) < 0)
		return err_set(e, "micro-batch: too large or out of memory");
	return emit(w, REC_MICROBATCH, e);
}

int sfile_write_record(struct sfile_writer *w, const struct record *rec, struct err *e)
{
	if (rec->kind == REC_GROUP)
		return sfile_write_group(w, &rec->group, e);
	if (rec->kind == REC_MICROBATCH)
		return sfile_write_mb(w, &rec->mb, e);
	return err_set(e, "a lone trajectory cannot be written; put it in a group");
}

int sfile_writer_flush(struct sfile_writer *w, struct err *e)
{
	if (start(w, e) < 0)
		return -1;
	return compress(w, "", 0, ZSTD_e_flush, e);
}

int sfile_writer_finish(struct sfile_writer *w, struct err *e)
{
	if (start(w, e) < 0)
		return -1;
	return compress(w, "", 0, ZSTD_e_end, e);
}

void sfile_writer_free(struct sfile_writer *w)
{
	ZSTD_freeCCtx(w->cctx);
	buf_free(&w->rec);
	buf_free(&w->out);
	memset(w, 0, sizeof *w);
}

/* ---- decoding ---- */

struct field {
	int tag, type, enc;
	const unsigned char *data;
	uint32_t len;
};

/* Next field of [*p, end); 1 got one, 0 at end, -1 malformed. */
static int next_field(const unsigned char **p, const unsigned char *end, struct field *f)
{
	if (*p == end)
		return 0;
	if (end - *p < 8)
		return -1;
	f->tag = get16(*p);
	f->type = (*p)[2];
	f->enc = (*p)[3];
	f->len = get32(*p + 4);
	if ((size_t)(end - *p - 8) < f->len)
		return -1;
	f->data = *p + 8;
	*p += 8 + (size_t)f->len;
	return 1;
}

static int want_type(const struct field *f, int type, const char *what, struct err *e)
{
	if (f->type != type)
		return err_set(e, "field %s has type %d, expected %d", what, f->type, type);
	return 0;
}

static int get_i64(const struct field *f, int64_t *v, const char *what, struct err *e)
{
	if (want_type(f, T_I64, what, e) < 0)
		return -1;
	if (f->len != 8)
		return err_set(e, "field %s: %u bytes, expected 8", what, f->len);
	*v = (int64_t)get64(f->data);
	return 0;
}

static int get_f32(const struct field *f, float *v, const char *what, struct err *e)
{
	if (want_type(f, T_F32, what, e) < 0)
		return -1;
	if (f->len != 4)
		return err_set(e, "field %s: %u bytes, expected 4", what, f->len);
	uint32_t u = get32(f->data);
	memcpy(v, &u, 4);
	return 0;
}

static int get_str(const struct field *f, char **s, const char *what, struct err *e)
{
	if (want_type(f, T_STR, what, e) < 0)
		return -1;
	if (memchr(f->data, 0, f->len))
		return err_set(e, "field %s: string holds a NUL byte", what);
	free(*s);
	*s = malloc((size_t)f->len + 1);
	if (!*s)
		return err_set(e, "out of memory");
	memcpy(*s, f->data, f->len);
	(*s)[f->len] = '\0';
	return 0;
}

/* The common case, 4-byte values, as one loop the compiler vectorizes. */
static void unplanar4(uint32_t *dst, const unsigned char *src, size_t n)
{
	const unsigned char *b0 = src, *b1 = src + n, *b2 = src + 2 * n, *b3 = src + 3 * n;
	for (size_t i = 0; i < n; i++)
		dst[i] = (uint32_t)b0[i] | (uint32_t)b1[i] << 8 | (uint32_t)b2[i] << 16 | (uint32_t)b3[i] << 24;
}

/* An array field into a new allocation; *n receives the element count. */
static int get_array(const struct field *f, int type, size_t size, void **out, uint32_t *n,
		     const char *what, struct err *e)
{
	if (want_type(f, type, what, e) < 0)
		return -1;
	if (f->len % size)
		return err_set(e, "field %s: %u bytes is not a whole number of %zu-byte values", what, f->len, size);
	if (f->enc != ENC_PLAIN && f->enc != ENC_PLANAR)
		return err_set(e, "field %s: unknown encoding %d", what, f->enc);
	size_t count = f->len / size;
	unsigned char *dst = malloc(f->len ? f->len : 1);
	if (!dst)
		return err_set(e, "out of memory");
	if (f->enc == ENC_PLAIN || size == 1)
		memcpy(dst, f->data, f->len);
	else if (size == 4)
		unplanar4((uint32_t *)dst, f->data, count);
	else
		for (size_t k = 0; k < size; k++)
			for (size_t i = 0; i < count; i++)
				dst[i * size + k] = f->data[k * count + i];
	free(*out);
	*out = dst;
	*n = (uint32_t)count;
	return 0;
}

static int get_strs(const struct field *f, char ***out, uint32_t *n, const char *what, struct err *e)
{
	if (want_type(f, T_STRS, what, e) < 0)
		return -1;
	uint32_t count = 0;
	for (const unsigned char *p = f->data, *end = f->data + f->len; p < end; count++) {
		if (end - p < 4 || (size_t)(end - p - 4) < get32(p))
			return err_set(e, "field %s: malformed string list", what);
		p += 4 + get32(p);
	}
	char **s = calloc(count ? count : 1, sizeof *s);
	if (!s)
		return err_set(e, "out of memory");
	const unsigned char *p = f->data;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t k = get32(p);
		s[i] = malloc((size_t)k + 1);
		if (!s[i] || memchr(p + 4, 0, k)) {
			int oom = !s[i];
			for (uint32_t j = 0; j <= i; j++)
				free(s[j]);
			free(s);
			return oom ? err_set(e, "out of memory") : err_set(e, "field %s: bad string", what);
		}
		memcpy(s[i], p + 4, k);
		s[i][k] = '\0';
		p += 4 + k;
	}
	if (*out)
		for (uint32_t i = 0; i < *n; i++)
			free((*out)[i]);
	free(*out);
	*out = s;
	*n = count;
	return 0;
}

/* An integer id field (T_I64) or a string id field (T_STR) into *id. */
static int get_id(const struct field *f, struct traj_id *id, const char *what, struct err *e)
{
	if (f->type == T_STR) {
		if (traj_id_set_str(id, (const char *)f->data, f->len) < 0)
			return err_set(e, "field %s: a NUL byte in the id, or out of memory", what);
		return 0;
	}
	int64_t v;
	if (get_i64(f, &v, what, e) < 0)
		return -1;
	traj_id_free(id);
	id->num = v;
	return 0;
}

static void ids_free(struct traj_id *ids, uint32_t n)
{
	for (uint32_t i = 0; ids && i < n; i++)
		traj_id_free(&ids[i]);
	free(ids);
}

/* A micro-batch's ids, T_I64S (1.0) or T_IDS (1.1), replacing *out (*n entries). */
static int get_ids(const struct field *f, struct traj_id **out, uint32_t *n, const char *what, struct err *e)
{
	if (f->type != T_I64S && f->type != T_IDS)
		return err_set(e, "field %s has type %d, expected %d or %d", what, f->type, T_I64S, T_IDS);
	struct traj_id *ids = NULL;
	uint32_t k = 0;
	if (f->type == T_I64S) {
		int64_t *v = NULL;
		if (get_array(f, T_I64S, 8, (void **)&v, &k, what, e) < 0)
			return -1;
		ids = malloc((k ? k : 1) * sizeof *ids);
		for (uint32_t i = 0; ids && i < k; i++)
			ids[i] = traj_id_num(v[i]);
		free(v);
		if (!ids)
			return err_set(e, "out of memory");
	} else {
		uint32_t cap = 0;
		const unsigned char *p = f->data, *end = f->data + f->len;
		while (p < end) {
			if (k == cap) {
				cap = cap ? 2 * cap : 16;
				struct traj_id *x = realloc(ids, cap * sizeof *x);
				if (!x) {
					ids_free(ids, k);
					return err_set(e, "out of memory");
				}
				ids = x;
			}
			ids[k] = traj_id_none();
			int bad = 0;
			if (*p == 0 && end - p >= 9) {
				ids[k].num = (int64_t)get64(p + 1);
				p += 9;
			} else if (*p == 1 && end - p >= 5 && (size_t)(end - p - 5) >= get32(p + 1)) {
				uint32_t len = get32(p + 1);
				bad = traj_id_set_str(&ids[k], (const char *)p + 5, len) < 0;
				p += 5 + (size_t)len;
			} else
				bad = 1;
			if (bad) {
				ids_free(ids, k);
				return err_set(e, "field %s: malformed id list at entry %u", what, k);
			}
			k++;
		}
	}
	ids_free(*out, *n);
	*out = ids;
	*n = k;
	return 0;
}

struct shared_prompt {
	int32_t *tokens;            /* (n), NULL when the group has none */
	uint32_t n;
};

static int decode_traj_fields(const unsigned char *p, const unsigned char *end, struct traj *t,
			      const struct traj_id *group_id, const struct shared_prompt *sp, uint32_t *n_names,
			      struct err *e);

/* Decode one trajectory; on failure nothing is left allocated in t. */
static int decode_traj(const unsigned char *p, const unsigned char *end, struct traj *t,
		       const struct traj_id *group_id, const struct shared_prompt *sp, struct err *e)
{
	uint32_t n_names = 0;
	if (decode_traj_fields(p, end, t, group_id, sp, &n_names, e) == 0)
		return 0;
	/* reward_names may disagree with n_rewards here: free by its own count */
	for (uint32_t i = 0; t->reward_names && i < n_names; i++)
		free(t->reward_names[i]);
	free(t->reward_names);
	t->reward_names = NULL;
	traj_free(t);
	return -1;
}

static int decode_traj_fields(const unsigned char *p, const unsigned char *end, struct traj *t,
			      const struct traj_id *group_id, const struct shared_prompt *sp, uint32_t *n_names,
			      struct err *e)
{
	struct field f;
	int r;
	uint32_t n_resp_lp = 0, n_mask = 0, n_ref = 0, n_resp = 0, n_succ = 0;
	int have_resp = 0, have_lp = 0, have_success1 = 0;
	float success1 = 0;
	traj_init(t);
	if (traj_id_copy(&t->group_id, group_id) < 0)
		return err_set(e, "out of memory");
	while ((r = next_field(&p, end, &f)) > 0) {
		int ok = 0;
		switch (f.tag) {
		case TR_PROMPT: ok = get_array(&f, T_I32S, 4, (void **)&t->prompt_tokens, &t->n_prompt, "prompt_tokens", e); break;
		case TR_RESPONSE: ok = get_array(&f, T_I32S, 4, (void **)&t->response_tokens, &n_resp, "response_tokens", e); have_resp = 1; break;
		case TR_LOGPROBS: ok = get_array(&f, T_F32S, 4, (void **)&t->logprobs, &n_resp_lp, "logprobs", e); have_lp = 1; break;
		case TR_MASK: ok = get_array(&f, T_U8S, 1, (void **)&t->response_mask, &n_mask, "response_mask", e); break;
		case TR_ANSWER: ok = get_str(&f, &t->answer, "answer", e); break;
		case TR_SEQUENCE_ID:
		case TR_SEQUENCE_ID_STR: ok = get_id(&f, &t->sequence_id, "sequence_id", e); break;
		case TR_GROUP_ID:
		case TR_GROUP_ID_STR: ok = get_id(&f, &t->group_id, "group_id", e); break;
		case TR_POLICY_VERSION: ok = get_i64(&f, &t->policy_version, "policy_version", e); break;
		case TR_TEMPERATURE: ok = get_f32(&f, &t->temperature, "temperature", e); break;
		case TR_FINISH: {
			int64_t v;
			ok = get_i64(&f, &v, "finish_reason", e);
			if (ok == 0 && (v < FINISH_CODE_UNKNOWN || v > FINISH_CODE_LENGTH))
				ok = err_set(e, "finish_reason %lld unknown", (long long)v);
			if (ok == 0 && traj_set_finish(t, v == FINISH_CODE_STOP ? "stop" : v == FINISH_CODE_LENGTH ? "length" : NULL) < 0)
				ok = err_set(e, "out of memory");
			break;
		}
		case TR_FINISH_STR: ok = get_str(&f, &t->finish_reason, "finish_reason", e); break;
		case TR_RUN: ok = get_str(&f, &t->run, "run", e); break;
		case TR_SCORED: {
			int64_t v;
			ok = get_i64(&f, &v, "scored", e);
			t->scored = v != 0;
			break;
		}
		case TR_REF_LOGPROBS: ok = get_array(&f, T_F32S, 4, (void **)&t->ref_logprobs, &n_ref, "ref_logprobs", e); break;
		case TR_REWARDS: ok = get_array(&f, T_F32S, 4, (void **)&t->rewards, &t->n_rewards, "rewards", e); break;
		case TR_REWARD_NAMES: ok = get_strs(&f, &t->reward_names, n_names, "reward_names", e); break;
		case TR_ADVANTAGE: ok = get_f32(&f, &t->advantage, "advantages", e); break;
		case TR_SUCCESS: ok = get_f32(&f, &success1, "successes", e); have_success1 = ok == 0; break;
		case TR_SUCCESSES: ok = get_array(&f, T_F32S, 4, (void **)&t->successes, &n_succ, "successes", e); break;
		default: break; /* a field from a newer minor version */
		}
		if (ok < 0)
			return -1;
	}
	if (r < 0)
		return err_set(e, "malformed field list");
	if (!t->prompt_tokens) {
		if (!sp->tokens)
			return err_set(e, "no prompt_tokens and no shared group prompt");
		t->prompt_tokens = malloc(sp->n ? sp->n * sizeof(int32_t) : 1);
		if (!t->prompt_tokens)
			return err_set(e, "out of memory");
		memcpy(t->prompt_tokens, sp->tokens, sp->n * sizeof(int32_t));
		t->n_prompt = sp->n;
	}
	if (!have_resp)
		return err_set(e, "missing response_tokens");
	t->n_response = n_resp;
	if (have_lp && n_resp_lp != n_resp)
		return err_set(e, "%u logprobs for %u response tokens", n_resp_lp, n_resp);
	if (t->response_mask && n_mask != n_resp)
		return err_set(e, "%u response_mask entries for %u response tokens", n_mask, n_resp);
	if (t->ref_logprobs && n_ref != n_resp)
		return err_set(e, "%u ref_logprobs for %u response tokens", n_ref, n_resp);
	if (t->reward_names && *n_names != t->n_rewards)
		return err_set(e, "%u reward_names for %u rewards", *n_names, t->n_rewards);
	if (t->successes && n_succ != t->n_rewards)
		return err_set(e, "%u successes for %u rewards", n_succ, t->n_rewards);
	/* 1.0's one scalar success is the list of its one reward function; with
	 * another number of functions it cannot be split, and is dropped */
	if (!t->successes && have_success1 && t->n_rewards == 1) {
		if (!(t->successes = malloc(sizeof(float))))
			return err_set(e, "out of memory");
		t->successes[0] = success1;
	}
	return 0;
}

static int decode_group(const unsigned char *p, const unsigned char *end, struct group *g, struct err *e)
{
	struct field f;
	struct shared_prompt sp = { NULL, 0 };
	uint32_t cap = 0;
	int r, rc = 0;
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_none();
	while ((r = next_field(&p, end, &f)) > 0 && rc == 0) {
		switch (f.tag) {
		case G_GROUP_ID:
		case G_GROUP_ID_STR: rc = get_id(&f, &g->group_id, "group_id", e); break;
		case G_PROMPT: rc = get_array(&f, T_I32S, 4, (void **)&sp.tokens, &sp.n, "prompt_tokens", e); break;
		case G_TRAJ:
			if ((rc = want_type(&f, T_NESTED, "trajectory", e)) < 0)
				break;
			if (g->n == cap) {
				cap = cap ? 2 * cap : 8;
				struct traj *tr = realloc(g->trajs, cap * sizeof *tr);
				if (!tr) {
					rc = err_set(e, "out of memory");
					break;
				}
				g->trajs = tr;
			}
			rc = decode_traj(f.data, f.data + f.len, &g->trajs[g->n], &g->group_id, &sp, e);
			g->n++; /* counted even on failure, so group_free frees it */
			if (rc < 0)
				err_prefix(e, "trajectory %u", g->n - 1);
			break;
		default: break;
		}
	}
	free(sp.tokens);
	if (rc == 0 && r < 0)
		rc = err_set(e, "malformed field list");
	if (rc == 0 && g->n == 0) {
		char idb[24];
		rc = err_set(e, "group %s has no trajectories", traj_id_text(&g->group_id, idb));
	}
	if (rc == 0)
		rc = group_check(g, e);
	if (rc < 0)
		group_free(g);
	return rc;
}

static int decode_mb(const unsigned char *p, const unsigned char *end, struct microbatch *mb, struct err *e)
{
	struct field f;
	uint32_t n[8] = { 0 }, nsl = 0, nsid = 0, ngid = 0;
	uint32_t nseq[5] = { 0 };   /* prompt_lens, policy_versions, rewards, finish_reasons, logprobs_missing */
	int r, rc = 0;
	int64_t v;
	memset(mb, 0, sizeof *mb);
	while ((r = next_field(&p, end, &f)) > 0 && rc == 0) {
		switch (f.tag) {
		case MB_INPUT_IDS: rc = get_array(&f, T_I32S, 4, (void **)&mb->input_ids, &mb->n_tokens, "input_ids", e); break;
		case MB_POSITION_IDS: rc = get_array(&f, T_I32S, 4, (void **)&mb->position_ids, &n[1], "position_ids", e); break;
		case MB_LOSS_MASK: rc = get_array(&f, T_U8S, 1, (void **)&mb->loss_mask, &n[2], "loss_mask", e); break;
		case MB_ADVANTAGES: rc = get_array(&f, T_F32S, 4, (void **)&mb->advantages, &n[3], "advantages", e); break;
		case MB_INFERENCE_LOGPROBS: rc = get_array(&f, T_F32S, 4, (void **)&mb->inference_logprobs, &n[4], "inference_logprobs", e); break;
		case MB_REF_LOGPROBS: rc = get_array(&f, T_F32S, 4, (void **)&mb->ref_logprobs, &n[5], "ref_logprobs", e); break;
		case MB_TEMPERATURES: rc = get_array(&f, T_F32S, 4, (void **)&mb->temperatures, &n[6], "temperatures", e); break;
		case MB_SEQ_LENS: rc = get_array(&f, T_U32S, 4, (void **)&mb->seq_lens, &nsl, "seq_lens", e); break;
		case MB_SEQUENCE_IDS:
		case MB_SEQUENCE_IDS_ANY: rc = get_ids(&f, &mb->sequence_ids, &nsid, "sequence_ids", e); break;
		case MB_GROUP_IDS:
		case MB_GROUP_IDS_ANY: rc = get_ids(&f, &mb->group_ids, &ngid, "group_ids", e); break;
		case MB_STEP: rc = get_i64(&f, &mb->step, "step", e); break;
		case MB_RANK: rc = get_i64(&f, &v, "rank", e); mb->rank = (int32_t)v; break;
		case MB_INDEX: rc = get_i64(&f, &v, "index", e); mb->index = (int32_t)v; break;
		case MB_RUN: rc = get_str(&f, &mb->run, "run", e); break;
		case MB_PROMPT_LENS: rc = get_array(&f, T_U32S, 4, (void **)&mb->prompt_lens, &nseq[0], "prompt_lens", e); break;
		case MB_POLICY_VERSIONS: rc = get_array(&f, T_I64S, 8, (void **)&mb->policy_versions, &nseq[1], "policy_versions", e); break;
		case MB_REWARDS: rc = get_array(&f, T_F32S, 4, (void **)&mb->rewards, &nseq[2], "rewards", e); break;
		case MB_FINISH_REASONS:
			rc = get_strs(&f, &mb->finish_reasons, &nseq[3], "finish_reasons", e);
			for (uint32_t i = 0; rc == 0 && i < nseq[3]; i++)
				if (!*mb->finish_reasons[i]) {   /* "": unknown */
					free(mb->finish_reasons[i]);
					mb->finish_reasons[i] = NULL;
				}
			break;
		case MB_LOGPROBS_MISSING: rc = get_array(&f, T_U8S, 1, (void **)&mb->logprobs_missing, &nseq[4], "logprobs_missing", e); break;
		default: break;
		}
	}
	if (rc == 0 && r < 0)
		rc = err_set(e, "malformed field list");
	if (rc == 0) {
		static const char *names[] = { "", "position_ids", "loss_mask", "advantages",
					       "inference_logprobs", "ref_logprobs", "temperatures" };
		void *arrays[] = { NULL, mb->position_ids, mb->loss_mask, mb->advantages,
				   mb->inference_logprobs, mb->ref_logprobs, mb->temperatures };
		if (!mb->input_ids)
			rc = err_set(e, "micro-batch without input_ids");
		for (int i = 1; i < 7 && rc == 0; i++) {
			if (!arrays[i] && i != 5)
				rc = err_set(e, "micro-batch without %s", names[i]);
			else if (arrays[i] && n[i] != mb->n_tokens)
				rc = err_set(e, "%s has %u entries, input_ids %u", names[i], n[i], mb->n_tokens);
		}
		mb->n_seq_lens = nsl;
		if (rc == 0 && ngid != nsid)
			rc = err_set(e, "%u group_ids for %u sequence_ids", ngid, nsid);
		static const char *seqn[] = { "prompt_lens", "policy_versions", "rewards", "finish_reasons",
					      "logprobs_missing" };
		const void *seqa[] = { mb->prompt_lens, mb->policy_versions, mb->rewards, mb->finish_reasons,
				       mb->logprobs_missing };
		for (int k = 0; k < 5 && rc == 0; k++)
			if (seqa[k] && nseq[k] != nsid)
				rc = err_set(e, "%u %s for %u sequences", nseq[k], seqn[k], nsid);
		if (rc == 0) {
			mb->n_seqs = nsid;
			rc = mb_check(mb, e);
		}
	}
	if (rc < 0) {
		/* the two id lists may differ in length here: free each by its own */
		ids_free(mb->sequence_ids, nsid);
		ids_free(mb->group_ids, ngid);
		mb->sequence_ids = mb->group_ids = NULL;
		for (uint32_t i = 0; mb->finish_reasons && i < nseq[3]; i++)
			free(mb->finish_reasons[i]);
		free(mb->finish_reasons);
		mb->finish_reasons = NULL;
		mb_free(mb);
	}
	return rc;
}

/* ---- reader ---- */

static int reader_init(struct sfile_reader *r, const char *name, struct err *e)
{
	r->name = name;
	r->dctx = ZSTD_createDCtx();
	r->in_cap = ZSTD_DStreamInSize();
	r->in = malloc(r->in_cap);
	if (!r->dctx || !r->in) {
		sfile_reader_close(r);
		return err_set(e, "%s: out of memory", name);
	}
	return 0;
}

int sfile_reader_open_fd(struct sfile_reader *r, int fd, const char *name, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	return reader_init(r, name, e);
}

int sfile_reader_open_fd_after(struct sfile_reader *r, int fd, const void *head, size_t n, const char *name,
			       struct err *e)
{
	if (sfile_reader_open_fd(r, fd, name, e) < 0)
		return -1;
	/* the input window holds them all; fill() reads fd only once the
	 * window is used up */
	if (n > r->in_cap) {
		unsigned char *in = realloc(r->in, n);
		if (!in) {
			sfile_reader_close(r);
			return err_set(e, "%s: out of memory", name);
		}
		r->in = in;
		r->in_cap = n;
	}
	if (n)
		memcpy(r->in, head, n);
	r->in_len = n;
	r->bytes_in = n;
	return 0;
}

int sfile_reader_open_mem(struct sfile_reader *r, const void *p, size_t n, const char *name, struct err *e)
{
	memset(r, 0, sizeof *r);
	r->fd = -1;
	r->mem = p;
	r->mem_len = n;
	return reader_init(r, name, e);
}

void sfile_reader_close(struct sfile_reader *r)
{
	ZSTD_freeDCtx(r->dctx);
	free(r->in);
	buf_free(&r->out);
	r->dctx = NULL;
	r->in = NULL;
}

/* Refill the compressed window; 0 ok (r->eof set at end of input), -1 error. */
static int fill(struct sfile_reader *r, struct err *e)
{
	if (r->in_pos < r->in_len || r->eof)
		return 0;
	r->in_pos = r->in_len = 0;
	if (r->fd < 0) {
		size_t n = r->mem_len - r->mem_pos;
		if (n > r->in_cap)
			n = r->in_cap;
		if (n)
			memcpy(r->in, r->mem + r->mem_pos, n);
		r->mem_pos += n;
		r->in_len = n;
	} else {
		ssize_t n;
		do
			n = read(r->fd, r->in, r->in_cap);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return err_sys(e, "%s: read failed", r->name);
		r->in_len = (size_t)n;
	}
	r->bytes_in += r->in_len;
	if (r->in_len == 0)
		r->eof = 1;
	return 0;
}

/* Decompress more of the current frame into r->out. 1: more bytes, 0: the
 * frame (or the input) ended, -1: error. */
static int more(struct sfile_reader *r, struct err *e)
{
	if (r->frame_done)
		return 0;
	for (;;) {
		if (fill(r, e) < 0)
			return -1;
		if (r->in_pos == r->in_len) {
			if (r->in_frame)
				return err_set(e, "%s: truncated zstd frame (input ends inside it)", r->name);
			return 0;
		}
		if (!r->in_frame) {
			/* A frame starts here: check its magic for a clear message. */
			if (r->in_len - r->in_pos >= 4) {
				uint32_t magic = get32(r->in + r->in_pos);
				if (magic != ZSTD_MAGICNUMBER)
					return err_set(e, "%s: not a spool file (no zstd frame at byte %llu)", r->name,
						       (unsigned long long)(r->bytes_in - (r->in_len - r->in_pos)));
			}
			r->in_frame = 1;
			r->header_done = 0;
		}
		size_t chunk = ZSTD_DStreamOutSize();
		if (buf_reserve(&r->out, chunk) < 0)
			return err_set(e, "%s: out of memory", r->name);
		ZSTD_inBuffer in = { r->in, r->in_len, r->in_pos };
		ZSTD_outBuffer out = { r->out.data + r->out.len, chunk, 0 };
		size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->in_pos = in.pos;
		if (ZSTD_isError(ret)) {
			ZSTD_ErrorCode code = ZSTD_getErrorCode(ret);
			if (code == ZSTD_error_checksum_wrong)
				return err_set(e, "%s: corrupted (zstd checksum mismatch)", r->name);
			if (code == ZSTD_error_prefix_unknown)
				return err_set(e, "%s: not a spool file (not zstd)", r->name);
			return err_set(e, "%s: corrupted zstd frame: %s", r->name, ZSTD_getErrorName(ret));
		}
		r->out.len += out.pos;
		r->bytes_out += out.pos;
		if (ret == 0) {
			r->frame_done = 1;
			r->in_frame = 0;
			return 1;
		}
		if (out.pos > 0)
			return 1;
	}
}

/* Make at least n unparsed bytes available; 1 yes, 0 frame ended first, -1 error. */
static int need(struct sfile_reader *r, size_t n, struct err *e)
{
	while (r->out.len - r->out_pos < n) {
		if (r->out_pos > 0 && r->out_pos >= r->out.len / 2) {
			memmove(r->out.data, r->out.data + r->out_pos, r->out.len - r->out_pos);
			r->out.len -= r->out_pos;
			r->out_pos = 0;
		}
		int m = more(r, e);
		if (m <= 0)
			return m;
	}
	return 1;
}

int sfile_read(struct sfile_reader *r, struct record *rec, struct err *e)
{
	memset(rec, 0, sizeof *rec);
	for (;;) {
		if (!r->header_done) {
			int h = need(r, HEADER_LEN, e);
			if (h < 0)
				return -1;
			if (h == 0) {
				if (r->out.len - r->out_pos > 0)
					return err_set(e, "%s: truncated header", r->name);
				/* a writer always writes a header, even with no records: an
				 * empty input is a producer that failed before its first flush */
				if (r->bytes_in == 0)
					return err_set(e, "%s: empty (0 bytes): not a spool file "
						       "(did the program writing it fail?)", r->name);
				if (r->frame_done) {
					/* an empty frame; go on to the next one */
					r->frame_done = 0;
					if (r->eof && r->in_pos == r->in_len)
						return 0;
					continue;
				}
				return 0;
			}
			const unsigned char *p = r->out.data + r->out_pos;
			if (memcmp(p, "GRPO", 4) != 0)
				return err_set(e, "%s: not a spool file (zstd content lacks the GRPO header)", r->name);
			r->major = get16(p + 4);
			r->minor = get16(p + 6);
			if (r->major != SFILE_MAJOR)
				return err_set(e, "%s: format version %d.%d; this reader reads version %d.x",
					       r->name, r->major, r->minor, SFILE_MAJOR);
			uint32_t extra = get32(p + 8);
			if (extra > (1u << 20))
				return err_set(e, "%s: header extension of %u bytes is implausible", r->name, extra);
			int x = need(r, HEADER_LEN + (size_t)extra, e);
			if (x <= 0)
				return x < 0 ? -1 : err_set(e, "%s: truncated header", r->name);
			r->out_pos += HEADER_LEN + extra;
			r->header_done = 1;
		}
		int h = need(r, 16, e);
		if (h < 0)
			return -1;
		if (h == 0) {
			if (r->out.len - r->out_pos > 0)
				return err_set(e, "%s: record %llu: truncated record header", r->name,
					       (unsigned long long)r->record_no + 1);
			/* end of this frame: the next one, if any, has its own header */
			r->header_done = 0;
			r->frame_done = 0;
			r->out.len = r->out_pos = 0;
			if (r->eof && r->in_pos == r->in_len)
				return 0;
			continue;
		}
		const unsigned char *p = r->out.data + r->out_pos;
		uint32_t kind = get32(p);
		uint64_t len = get64(p + 8);
		if (len > SFILE_MAX_RECORD)
			return err_set(e, "%s: record %llu: length %llu is implausible (corrupted?)", r->name,
				       (unsigned long long)r->record_no + 1, (unsigned long long)len);
		int b = need(r, 16 + (size_t)len, e);
		if (b < 0)
			return -1;
		if (b == 0)
			return err_set(e, "%s: record %llu: truncated (%llu of %llu bytes)", r->name,
				       (unsigned long long)r->record_no + 1,
				       (unsigned long long)(r->out.len - r->out_pos - 16), (unsigned long long)len);
		p = r->out.data + r->out_pos + 16;
		r->out_pos += 16 + (size_t)len;
		int rc = 0;
		if (kind == REC_GROUP) {
			rec->kind = REC_GROUP;
			rc = decode_group(p, p + len, &rec->group, e);
		} else if (kind == REC_MICROBATCH) {
			rec->kind = REC_MICROBATCH;
			rc = decode_mb(p, p + len, &rec->mb, e);
		} else {
			r->record_no++;
			continue; /* a record kind from a newer minor version */
		}
		if (rc < 0) {
			rec->kind = REC_NONE;
			return err_prefix(e, "%s: record %llu", r->name, (unsigned long long)r->record_no + 1);
		}
		r->record_no++;
		return 1;
	}
}

int sfile_reader_ready(const struct sfile_reader *r)
{
	if (r->eof || r->fd < 0 || r->in_pos < r->in_len)
		return 1;
	size_t held = r->out.len - r->out_pos;
	if (r->header_done && held >= 16 && get64(r->out.data + r->out_pos + 8) <= held - 16)
		return 1;
	struct pollfd pfd = { r->fd, POLLIN, 0 };
	int n;
	while ((n = poll(&pfd, 1, 0)) < 0 && errno == EINTR)
		;
	return n != 0;   /* an error is the read's to report */
}

int sfile_reader_drained(const struct sfile_reader *r)
{
	struct stat st;
	if (r->in_pos < r->in_len || r->out_pos < r->out.len || r->in_frame)
		return 0;
	if (r->eof || r->fd < 0)
		return r->eof || r->mem_pos == r->mem_len;
	return fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == r->bytes_in;
}
