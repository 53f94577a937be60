/* done.c: see done.h. */
#include "data/done.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tempfile.h"
#include "data/jsonview.h"

/* ["16 hex digits", ...] */
static int format_hashes(struct buf *b, const uint64_t *h, uint32_t n)
{
	int r = buf_put_u8(b, '[');
	for (uint32_t x = 0; x < n; x++)
		r |= buf_printf(b, "%s\"%016" PRIx64 "\"", x ? "," : "", h[x]);
	return r | buf_put_u8(b, ']');
}

/* The job as one JSON object; with_done: with its done ordinals, as a
 * manifest records them (a .jobs record has none). */
static int format_job(struct buf *b, const struct done_job *j, int with_done)
{
	int r = buf_printf(b, "{\"id\":\"%016" PRIx64 "\",\"first_step\":%" PRId64 ",\"sequences\":%u,"
			   "\"finished\":%s", j->id, j->first_step, j->sequences, j->finished ? "true" : "false");
	if (j->data)
		r |= buf_printf(b, ",\"data\":\"%016" PRIx64 "\"", j->data);
	if (j->n_inputs_data)
		r |= buf_printf(b, ",\"inputs_data\":") | format_hashes(b, j->inputs_data, j->n_inputs_data);
	if (j->n_inputs_data && j->inputs_hash)
		r |= buf_printf(b, ",\"inputs_hash\":") | format_hashes(b, j->inputs_hash, j->n_inputs_data);
	if (with_done) {
		r |= buf_printf(b, ",\"done\":[");
		for (uint32_t x = 0; !j->finished && x < j->n_done; x++)
			r |= buf_printf(b, "%s%u", x ? "," : "", j->done[x]);
		r |= buf_printf(b, "]");
	}
	return r | buf_printf(b, "}");
}

int done_format(struct buf *b, const struct done_manifest *m)
{
	int r = buf_printf(b, "{\"step\":%" PRId64 ",\"ranks\":%u,\"micro_batches_per_rank\":%u,\"sequences\":%u,"
			   "\"tokens\":%" PRIu64 ",", m->step, m->ranks, m->micro_batches_per_rank, m->sequences,
			   m->tokens);
	if (m->loss_tokens >= 0)   /* unknown (-1, a manifest from before it was): left out, as there */
		r |= buf_printf(b, "\"loss_tokens\":%" PRId64 ",", m->loss_tokens);
	r |= buf_printf(b, "\"pad_tokens\":%" PRIu64 ",\"dummies\":%u,\"dummy_tokens\":%" PRIu64 ",",
			m->pad_tokens, m->dummies, m->dummy_tokens);
	r |= buf_printf(b, "\"dropped\":{\"stale\":%" PRIu64 ",\"overlong\":%" PRIu64 ",\"empty\":%" PRIu64
			"},\"truncated\":%" PRIu64 ",\"truncated_untrained\":%" PRIu64 ",\"runs\":[",
			m->dropped_stale, m->dropped_overlong, m->dropped_empty, m->truncated, m->truncated_untrained);
	for (uint32_t q = 0; q < m->n_runs; q++) {
		const struct done_run *u = &m->runs[q];
		r |= buf_printf(b, "%s{\"run\":", q ? "," : "") | json_print_string(b, u->run ? u->run : "");
		r |= buf_printf(b, ",\"sequences\":%u,\"tokens\":%" PRIu64 ",\"sequences_total\":%" PRIu64
				",\"run_step\":%" PRId64 ",\"ready\":%s}", u->sequences, u->tokens, u->sequences_total,
				u->run_step, u->ready ? "true" : "false");
	}
	r |= buf_printf(b, "],\"next_run\":") | json_print_string(b, m->next_run ? m->next_run : "");
	r |= buf_printf(b, ",\"inputs\":[");
	for (uint32_t q = 0; q < m->n_inputs; q++)
		r |= (q ? buf_put_u8(b, ',') : 0) | json_print_string(b, m->inputs[q]);
	r |= buf_printf(b, "]");
	if (m->inputs_hash && m->n_inputs)
		r |= buf_printf(b, ",\"inputs_hash\":") | format_hashes(b, m->inputs_hash, m->n_inputs);
	r |= buf_printf(b, ",\"partial\":[");
	for (uint32_t q = 0; q < m->n_partial; q++) {
		r |= buf_printf(b, "%s{\"file\":", q ? "," : "") | json_print_string(b, m->partial[q].file);
		if (m->partial[q].hash)
			r |= buf_printf(b, ",\"hash\":\"%016" PRIx64 "\"", m->partial[q].hash);
		r |= buf_printf(b, ",\"done\":[");
		for (uint32_t x = 0; x < m->partial[q].n_done; x++)
			r |= buf_printf(b, "%s%u", x ? "," : "", m->partial[q].done[x]);
		r |= buf_printf(b, "]}");
	}
	r |= buf_printf(b, "]");
	if (m->has_job)
		r |= buf_printf(b, ",\"job\":") | format_job(b, &m->job, 1);
	return r | buf_printf(b, "}\n");
}

int done_jobrec_format(struct buf *b, const struct done_jobrec *r)
{
	if (!r->n_files)
		return buf_printf(b, "{\"step\":%" PRId64 ",\"job\":", r->step) | format_job(b, &r->job, 0) |
		       buf_printf(b, "}\n");
	int rc = buf_printf(b, "{\"step\":%" PRId64 ",\"inputs\":[", r->step);
	for (uint32_t q = 0; q < r->n_files; q++)
		rc |= (q ? buf_put_u8(b, ',') : 0) | json_print_string(b, r->files[q]);
	return rc | buf_printf(b, "],\"inputs_hash\":") | format_hashes(b, r->files_hash, r->n_files) |
	       buf_printf(b, "}\n");
}

void done_free(struct done_manifest *m)
{
	for (uint32_t q = 0; m->runs && q < m->n_runs; q++)
		free(m->runs[q].run);
	free(m->runs);
	free(m->next_run);
	for (uint32_t q = 0; m->inputs && q < m->n_inputs; q++)
		free(m->inputs[q]);
	free(m->inputs);
	free(m->inputs_hash);
	for (uint32_t q = 0; m->partial && q < m->n_partial; q++) {
		free(m->partial[q].file);
		free(m->partial[q].done);
	}
	free(m->partial);
	done_job_free(&m->job);
	memset(m, 0, sizeof *m);
}

void done_job_free(struct done_job *j)
{
	free(j->done);
	free(j->inputs_data);
	free(j->inputs_hash);
	memset(j, 0, sizeof *j);
}

/* A whole number in [lo, hi] under key k of o; absent: *v untouched when
 * optional, else an error. */
static int get_num(const cJSON *o, const char *k, double lo, double hi, int optional, double *v,
		   const char *name, struct err *e)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!x && optional)
		return 0;
	if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) || x->valuedouble < lo ||
	    x->valuedouble > hi)
		return err_set(e, "%s: %s: expected a whole number from %.0f to %.0f", name, k, lo, hi);
	*v = x->valuedouble;
	return 0;
}

static int get_string(const cJSON *x, char **out, const char *name, const char *what, struct err *e)
{
	if (!cJSON_IsString(x))
		return err_set(e, "%s: %s: expected a string", name, what);
	if (!(*out = strdup(x->valuestring)))
		return err_set(e, "out of memory");
	return 0;
}

#define U32 4294967295.0
#define I53 ((double)TRAJ_INT_MAX)   /* JSON numbers hold every integer up to 2^53 - 1 */

static int parse_runs(const cJSON *arr, struct done_manifest *m, const char *name, struct err *e)
{
	const cJSON *it;
	m->runs = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *m->runs);
	if (!m->runs)
		return err_set(e, "out of memory");
	cJSON_ArrayForEach(it, arr) {
		struct done_run *u = &m->runs[m->n_runs++];
		double seqs = 0, tok = 0, tot, rs;
		char what[32];
		snprintf(what, sizeof what, "runs[%u].run", m->n_runs - 1);
		if (get_string(cJSON_GetObjectItemCaseSensitive(it, "run"), &u->run, name, what, e) < 0 ||
		    get_num(it, "sequences", 0, U32, 1, &seqs, name, e) < 0 ||
		    get_num(it, "tokens", 0, I53, 1, &tok, name, e) < 0 ||
		    get_num(it, "sequences_total", 0, I53, 0, &tot, name, e) < 0 ||
		    get_num(it, "run_step", -I53, I53, 0, &rs, name, e) < 0)
			return -1;
		u->sequences = (uint32_t)seqs;
		u->tokens = (uint64_t)tok;
		u->sequences_total = (uint64_t)tot;
		u->run_step = (int64_t)rs;
		u->ready = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "ready"));
	}
	return 0;
}

/* A hash as the manifest writes it: a string of 16 hexadecimal digits. */
static int parse_hash(const cJSON *x, uint64_t *h)
{
	char *end = NULL;
	if (!cJSON_IsString(x) || strlen(x->valuestring) != 16 || !isxdigit((unsigned char)x->valuestring[0]))
		return -1;
	*h = strtoull(x->valuestring, &end, 16);
	return *end ? -1 : 0;
}

/* An array of hashes (what names it in messages: "job.inputs_data"),
 * absent in a manifest from before it existed (*v NULL, *n 0). */
static int parse_hashes(const cJSON *arr, uint64_t **v, uint32_t *n, const char *what, const char *name,
			struct err *e)
{
	const cJSON *x;
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return err_set(e, "%s: %s: expected an array", name, what);
	if (!(*v = malloc(((size_t)cJSON_GetArraySize(arr) + 1) * sizeof **v)))
		return err_set(e, "out of memory");
	cJSON_ArrayForEach(x, arr) {
		if (parse_hash(x, &(*v)[*n]) < 0)
			return err_set(e, "%s: %s[%u]: not 16 hexadecimal digits", name, what, *n);
		(*n)++;
	}
	return 0;
}

/* The same, of the length want when present (of: what want counts, in
 * the message: "inputs"). */
static int parse_hashes_of(const cJSON *arr, uint64_t **v, uint32_t want, const char *what, const char *of,
			   const char *name, struct err *e)
{
	uint32_t n = 0;
	if (parse_hashes(arr, v, &n, what, name, e) < 0)
		return -1;
	if (arr && n != want)
		return err_set(e, "%s: %s: %u hashes for %u %s", name, what, n, want, of);
	return 0;
}

/* An array of strings, what naming it in messages ("inputs"); absent, none. */
static int parse_strings(const cJSON *arr, char ***v, uint32_t *n, const char *what, const char *name,
			 struct err *e)
{
	const cJSON *it;
	if (!(*v = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof **v)))
		return err_set(e, "out of memory");
	cJSON_ArrayForEach(it, arr) {
		char at[48];
		snprintf(at, sizeof at, "%s[%u]", what, *n);
		if (get_string(it, &(*v)[*n], name, at, e) < 0)
			return -1;
		(*n)++;
	}
	return 0;
}

static int parse_files(const cJSON *fin, const cJSON *hashes, const cJSON *part, struct done_manifest *m,
		       const char *name, struct err *e)
{
	const cJSON *it, *v;
	if (parse_strings(fin, &m->inputs, &m->n_inputs, "inputs", name, e) < 0)
		return -1;
	if (!(m->partial = calloc((size_t)cJSON_GetArraySize(part) + 1, sizeof *m->partial)))
		return err_set(e, "out of memory");
	if (parse_hashes_of(hashes, &m->inputs_hash, m->n_inputs, "inputs_hash", "inputs", name, e) < 0)
		return -1;
	cJSON_ArrayForEach(it, part) {
		struct done_partial *p = &m->partial[m->n_partial++];
		const cJSON *dn = cJSON_GetObjectItemCaseSensitive(it, "done");
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(it, "hash");
		char what[32];
		snprintf(what, sizeof what, "partial[%u].file", m->n_partial - 1);
		if (get_string(cJSON_GetObjectItemCaseSensitive(it, "file"), &p->file, name, what, e) < 0)
			return -1;
		if (ph && parse_hash(ph, &p->hash) < 0)
			return err_set(e, "%s: partial[%u].hash: not 16 hexadecimal digits", name, m->n_partial - 1);
		if (!cJSON_IsArray(dn))
			return err_set(e, "%s: partial[%u].done: expected an array", name, m->n_partial - 1);
		if (!(p->done = malloc(((size_t)cJSON_GetArraySize(dn) + 1) * sizeof *p->done)))
			return err_set(e, "out of memory");
		cJSON_ArrayForEach(v, dn) {
			if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
			    v->valuedouble > U32)
				return err_set(e, "%s: partial[%u].done[%u]: not an ordinal", name, m->n_partial - 1,
					       p->n_done);
			p->done[p->n_done++] = (uint32_t)v->valuedouble;
		}
	}
	return 0;
}

/* A job object into j; need_done: a manifest's, whose done is required
 * (a .jobs record has none). j is left for the caller to free. */
static int parse_job_obj(const cJSON *job, struct done_job *j, int need_done, const char *name, struct err *e)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(job, "id");
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(job, "finished");
	const cJSON *dn = cJSON_GetObjectItemCaseSensitive(job, "done"), *v;
	double fs, sq;
	if (!cJSON_IsObject(job) || parse_hash(id, &j->id) < 0 || !cJSON_IsBool(fin) ||
	    (need_done ? !cJSON_IsArray(dn) : dn && !cJSON_IsArray(dn)))
		return err_set(e, "%s: job: expected id, first_step, sequences%s", name,
			       need_done ? ", finished and done" : " and finished");
	if (get_num(job, "first_step", -I53, I53, 0, &fs, name, e) < 0 ||
	    get_num(job, "sequences", 0, U32, 0, &sq, name, e) < 0)
		return -1;
	j->first_step = (int64_t)fs;
	j->sequences = (uint32_t)sq;
	j->finished = cJSON_IsTrue(fin);
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(job, "data");
	if (data && parse_hash(data, &j->data) < 0)
		return err_set(e, "%s: job: data is not 16 hexadecimal digits", name);
	if (parse_hashes(cJSON_GetObjectItemCaseSensitive(job, "inputs_data"), &j->inputs_data, &j->n_inputs_data,
			 "job.inputs_data", name, e) < 0)
		return -1;
	if (parse_hashes_of(cJSON_GetObjectItemCaseSensitive(job, "inputs_hash"), &j->inputs_hash, j->n_inputs_data,
			    "job.inputs_hash", "in inputs_data", name, e) < 0)
		return -1;
	if (!dn)
		return 0;
	if (!(j->done = malloc(((size_t)cJSON_GetArraySize(dn) + 1) * sizeof *j->done)))
		return err_set(e, "out of memory");
	cJSON_ArrayForEach(v, dn) {
		if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
		    v->valuedouble >= sq)
			return err_set(e, "%s: job.done[%u]: not an ordinal below sequences (%u)", name, j->n_done,
				       j->sequences);
		j->done[j->n_done++] = (uint32_t)v->valuedouble;
	}
	return 0;
}

static int parse_job(const cJSON *job, struct done_manifest *m, const char *name, struct err *e)
{
	m->has_job = 1;
	return parse_job_obj(job, &m->job, 1, name, e);
}

int done_parse(const char *text, size_t n, const char *name, struct done_manifest *m, struct err *e)
{
	memset(m, 0, sizeof *m);
	cJSON *j = json_parse_n(text, n, NULL);
	if (!j && errno == ENOMEM)
		return err_sys(e, "%s", name);
	const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(j, "inputs");
	const cJSON *part = cJSON_GetObjectItemCaseSensitive(j, "partial");
	const cJSON *drop = cJSON_GetObjectItemCaseSensitive(j, "dropped");
	int rc = 0;
	if (!cJSON_IsObject(j) || !cJSON_IsArray(runs) || (fin && !cJSON_IsArray(fin)) ||
	    (part && !cJSON_IsArray(part)))
		rc = err_set(e, "%s: not a grpo-pack manifest", name);
	double v[15] = { 0 };
	v[6] = -1;   /* loss_tokens unknown unless given */
	static const char *const keys[] = { "step", "ranks", "micro_batches_per_rank", "sequences", "dummies",
					    "tokens", "loss_tokens", "pad_tokens", "dummy_tokens", "truncated",
					    "truncated_untrained" };
	static const double lo[] = { -I53, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const double hi[] = { I53, U32, U32, U32, U32, I53, I53, I53, I53, I53, I53 };
	for (int k = 0; k < 11 && rc == 0; k++)
		rc = get_num(j, keys[k], lo[k], hi[k], k != 0, &v[k], name, e);
	static const char *const dk[] = { "stale", "overlong", "empty" };
	for (int k = 0; k < 3 && rc == 0 && drop; k++)
		rc = get_num(drop, dk[k], 0, I53, 1, &v[11 + k], name, e);
	if (rc == 0) {
		m->step = (int64_t)v[0];
		m->ranks = (uint32_t)v[1], m->micro_batches_per_rank = (uint32_t)v[2];
		m->sequences = (uint32_t)v[3], m->dummies = (uint32_t)v[4];
		m->tokens = (uint64_t)v[5], m->loss_tokens = (int64_t)v[6], m->pad_tokens = (uint64_t)v[7];
		m->dummy_tokens = (uint64_t)v[8], m->truncated = (uint64_t)v[9];
		m->truncated_untrained = (uint64_t)v[10];
		m->dropped_stale = (uint64_t)v[11], m->dropped_overlong = (uint64_t)v[12];
		m->dropped_empty = (uint64_t)v[13];
		const cJSON *nx = cJSON_GetObjectItemCaseSensitive(j, "next_run");
		if (nx)
			rc = get_string(nx, &m->next_run, name, "next_run", e);
	}
	if (rc == 0)
		rc = parse_runs(runs, m, name, e);
	if (rc == 0)
		rc = parse_files(fin, cJSON_GetObjectItemCaseSensitive(j, "inputs_hash"), part, m, name, e);
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(j, "job");
	if (rc == 0 && job)
		rc = parse_job(job, m, name, e);
	cJSON_Delete(j);
	if (rc < 0)
		done_free(m);
	return rc;
}

/* QUEUE/step_N/DONE into b, its path into p: 1, 0 when there is none, -1. */
static int read_marker(const char *queue, int64_t step, char p[PATH_MAX], struct buf *b, struct err *e)
{
	if (snprintf(p, PATH_MAX, "%s/step_%" PRId64 "/DONE", queue, step) >= PATH_MAX)
		return err_set(e, "%s: path too long", queue);
	if (buf_read_file(b, p, e) < 0)
		return errno == ENOENT ? 0 : -1;
	return 1;
}

int done_load(const char *queue, int64_t step, struct done_manifest *m, struct err *e)
{
	char p[PATH_MAX];
	memset(m, 0, sizeof *m);
	struct buf b = { 0 };
	int got = read_marker(queue, step, p, &b, e);
	if (got <= 0)
		return got;
	int rc = done_parse((const char *)b.data, b.len, p, m, e);
	buf_free(&b);
	return rc < 0 ? -1 : 1;
}

int done_load_job(const char *queue, int64_t step, struct done_job *j, struct err *e)
{
	struct done_manifest m;
	memset(j, 0, sizeof *j);
	int got = done_load(queue, step, &m, e);
	if (got <= 0)
		return got;
	int has = m.has_job;
	if (has) {
		*j = m.job;   /* taken over */
		m.job.done = NULL;
		m.job.inputs_data = NULL;
		m.job.inputs_hash = NULL;
	}
	done_free(&m);
	return has;
}

/* QUEUE/step_N/DONE as gc reads it, whatever else the marker holds: 1
 * with *o its JSON object (cJSON_Delete it), 0 when there is no marker or
 * it is another producer's (not an object), -1. */
static int marker_object(const char *queue, int64_t step, char p[PATH_MAX], cJSON **o, struct err *e)
{
	struct buf b = { 0 };
	*o = NULL;
	int got = read_marker(queue, step, p, &b, e);
	if (got <= 0)
		return got;
	size_t at = 0;
	while (at < b.len && isspace(b.data[at]))
		at++;
	/* a marker of another producer holds anything; grpo-pack's is an object */
	if (at == b.len || b.data[at] != '{') {
		buf_free(&b);
		return 0;
	}
	*o = json_parse_n((const char *)b.data, b.len, NULL);
	buf_free(&b);
	if (!*o && errno == ENOMEM)
		return err_sys(e, "%s", p);
	if (!cJSON_IsObject(*o)) {
		cJSON_Delete(*o);
		*o = NULL;
		return err_set(e, "%s: not a JSON object, so what it records cannot be read", p);
	}
	return 1;
}

/* The files of m whose hashes are known, moved into r (m keeps the rest). */
static int take_files(struct done_manifest *m, struct done_jobrec *r, struct err *e)
{
	r->files = calloc(m->n_inputs + m->n_partial + 1, sizeof *r->files);
	r->files_hash = calloc(m->n_inputs + m->n_partial + 1, sizeof *r->files_hash);
	if (!r->files || !r->files_hash)
		return err_set(e, "out of memory");
	for (uint32_t x = 0; m->inputs_hash && x < m->n_inputs; x++)
		if (m->inputs_hash[x]) {
			r->files_hash[r->n_files] = m->inputs_hash[x];
			r->files[r->n_files++] = m->inputs[x];
			m->inputs[x] = NULL;
		}
	for (uint32_t x = 0; x < m->n_partial; x++)
		if (m->partial[x].hash) {
			r->files_hash[r->n_files] = m->partial[x].hash;
			r->files[r->n_files++] = m->partial[x].file;
			m->partial[x].file = NULL;
		}
	return 0;
}

/* The queue files marker o (read from p) records with hashes, into r: 1
 * when there are any, 0 none (r holds nothing), -1. */
static int step_files(const cJSON *o, const char *p, struct done_jobrec *r, struct err *e)
{
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(o, "inputs");
	const cJSON *part = cJSON_GetObjectItemCaseSensitive(o, "partial");
	struct done_manifest m = { 0 };
	int rc = (fin && !cJSON_IsArray(fin)) || (part && !cJSON_IsArray(part)) ?
			 err_set(e, "%s: inputs and partial: expected arrays", p) :
			 parse_files(fin, cJSON_GetObjectItemCaseSensitive(o, "inputs_hash"), part, &m, p, e);
	if (rc == 0)
		rc = take_files(&m, r, e);
	done_free(&m);
	int any = rc == 0 && r->n_files > 0;
	if (!any)
		done_jobrecs_free_one(r);   /* nothing for the caller to free */
	return rc < 0 ? -1 : any;
}

int done_step_records(const char *queue, int64_t step, struct done_jobrec rec[2], struct err *e)
{
	char p[PATH_MAX];
	cJSON *o;
	memset(rec, 0, 2 * sizeof *rec);
	int got = marker_object(queue, step, p, &o, e);
	if (got <= 0)
		return got;
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(o, "job");
	int n = 0, rc = job ? parse_job_obj(job, &rec[0].job, 1, p, e) : 0;
	n += job && rc == 0;
	if (rc == 0 && (rc = step_files(o, p, &rec[n], e)) == 1)
		n++;
	cJSON_Delete(o);
	for (int i = 0; i < 2; i++)
		rec[i].step = step;
	if (rc >= 0)
		return n;
	done_jobrecs_free_one(&rec[0]);
	done_jobrecs_free_one(&rec[1]);
	return -1;
}

/* A file record's inputs and inputs_hash, both required, of one length. */
static int parse_file_rec(const cJSON *o, struct done_jobrec *r, const char *name, struct err *e)
{
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(o, "inputs");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "inputs_hash");
	if (!cJSON_IsArray(fin) || !cJSON_IsArray(h))
		return err_set(e, "%s: a file record needs inputs and inputs_hash", name);
	if (parse_strings(fin, &r->files, &r->n_files, "inputs", name, e) < 0 ||
	    parse_hashes_of(h, &r->files_hash, r->n_files, "inputs_hash", "inputs", name, e) < 0)
		return -1;
	if (r->n_files == 0)
		return err_set(e, "%s: inputs_hash: 0 hashes for 0 inputs", name);
	return 0;
}

int done_jobrec_parse(const char *text, size_t n, const char *name, struct done_jobrec *r, struct err *e)
{
	memset(r, 0, sizeof *r);
	cJSON *o = json_parse_n(text, n, NULL);
	if (!o && errno == ENOMEM)
		return err_sys(e, "%s", name);
	const cJSON *job = cJSON_GetObjectItemCaseSensitive(o, "job");
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(o, "inputs");
	double step;
	int rc;
	if (!cJSON_IsObject(o) || (!job && !files))
		rc = err_set(e, "%s: not a job record ({\"step\":N,\"job\":{...}}) nor a file record "
			     "({\"step\":N,\"inputs\":[...],\"inputs_hash\":[...]})", name);
	else if ((rc = get_num(o, "step", -I53, I53, 0, &step, name, e)) == 0)
		rc = job ? parse_job_obj(job, &r->job, 0, name, e) : parse_file_rec(o, r, name, e);
	cJSON_Delete(o);
	if (rc < 0)
		done_jobrecs_free_one(r);
	else
		r->step = (int64_t)step;
	return rc;
}

void done_jobrecs_free_one(struct done_jobrec *r)
{
	done_job_free(&r->job);
	for (uint32_t x = 0; r->files && x < r->n_files; x++)
		free(r->files[x]);
	free(r->files);
	free(r->files_hash);
	r->files = NULL;
	r->files_hash = NULL;
	r->n_files = 0;
}

void done_jobrecs_free(struct done_jobrec *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		done_jobrecs_free_one(&v[i]);
	free(v);
}

static int jobs_path(char *p, size_t size, const char *queue, struct err *e)
{
	if (snprintf(p, size, "%s/.jobs", queue) >= (int)size)
		return err_set(e, "%s: path too long", queue);
	return 0;
}

int done_jobs_load(const char *queue, struct done_jobrec **v, size_t *n, struct err *e)
{
	char p[PATH_MAX], name[PATH_MAX + 32];
	struct buf b = { 0 };
	*v = NULL;
	*n = 0;
	if (jobs_path(p, sizeof p, queue, e) < 0)
		return -1;
	if (buf_read_file(&b, p, e) < 0)
		return errno == ENOENT ? 0 : -1;
	size_t lines = 1;
	for (size_t i = 0; i < b.len; i++)
		lines += b.data[i] == '\n';
	if (!(*v = calloc(lines, sizeof **v))) {
		buf_free(&b);
		return err_set(e, "out of memory");
	}
	const char *at = (const char *)b.data, *end = at + b.len;
	for (size_t line = 1; at < end; line++) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t len = nl ? (size_t)(nl - at) : (size_t)(end - at);
		snprintf(name, sizeof name, "%s: line %zu", p, line);
		struct err why;
		if (len > 0 && done_jobrec_parse(at, len, name, &(*v)[*n], &why) == 0)
			(*n)++;
		else if (len > 0 && nl) {   /* a whole line that is no record: damage, said */
			*e = why;
			buf_free(&b);
			done_jobrecs_free(*v, *n);
			*v = NULL, *n = 0;
			return -1;
		}
		/* else a last line cut short (no newline): a record never whole, passed over */
		at += len + (nl != NULL);
	}
	buf_free(&b);
	return 0;
}

/* Put r into the list out (n, room for all): in place of its job's record
 * of an earlier step, else at the end; 1 when that changes the list. */
static int merge_rec(const struct done_jobrec **out, size_t *n, const struct done_jobrec *r)
{
	for (size_t i = 0; i < *n; i++) {
		if (!out[i]->n_files != !r->n_files)
			continue;   /* a job's record, and a step's files' */
		if (r->n_files ? out[i]->step != r->step :
				 out[i]->job.id != r->job.id || out[i]->job.first_step != r->job.first_step)
			continue;
		if (r->n_files && r->step == out[i]->step)
			return 0;   /* the same step's, recorded by a gc that did not finish */
		if (r->step <= out[i]->step)
			return 0;
		out[i] = r;
		return 1;
	}
	out[(*n)++] = r;
	return 1;
}

int done_jobs_add(const char *queue, const struct done_jobrec *add, size_t n_add, struct err *e)
{
	struct done_jobrec *old;
	size_t n_old, n = 0;
	char p[PATH_MAX], tmp[PATH_MAX];
	if (n_add == 0)
		return 0;
	if (jobs_path(p, sizeof p, queue, e) < 0 || done_jobs_load(queue, &old, &n_old, e) < 0)
		return -1;
	const struct done_jobrec **out = malloc((n_old + n_add) * sizeof *out);
	struct buf b = { 0 };
	int changed = 0, rc = -1;
	if (!out) {
		err_set(e, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n_old; i++)
		merge_rec(out, &n, &old[i]);
	for (size_t i = 0; i < n_add; i++)
		changed |= merge_rec(out, &n, &add[i]);
	rc = 0;
	if (!changed)
		goto done;
	for (size_t i = 0; i < n; i++)
		if (done_jobrec_format(&b, out[i]) < 0) {
			rc = err_set(e, "out of memory");
			goto done;
		}
	snprintf(tmp, sizeof tmp, "%s/.tmp", queue);
	rc = tempfile_write(p, tmp, b.data, b.len, TEMPFILE_REPLACE, e) < 0 ? -1 : 0;
done:
	buf_free(&b);
	free(out);
	done_jobrecs_free(old, n_old);
	return rc;
}
