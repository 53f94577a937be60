/* jsonview.c: see jsonview.h. */
#include "data/jsonview.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "data/jsonpick.h"

/* ---- parsing that knows memory ran out ---- */

/* set when one of cJSON's allocations failed in this thread (json_parse_n) */
static _Thread_local int cjson_alloc_failed;

static void *cjson_malloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		cjson_alloc_failed = 1;
	return p;
}

/* before main, so before any thread parses: cJSON's hooks are global */
__attribute__((constructor)) static void cjson_hook(void)
{
	cJSON_Hooks h = { cjson_malloc, free };
	cJSON_InitHooks(&h);
}

cJSON *json_parse_n(const char *text, size_t n, const char **end)
{
	cjson_alloc_failed = 0;
	cJSON *o = cJSON_ParseWithLengthOpts(text, n, end, 0);
	if (!o)
		errno = cjson_alloc_failed ? ENOMEM : EINVAL;
	return o;
}

/* ---- NaN and Infinity, as Python writes them ---- */

static int word_at(const char *s, size_t n, size_t i, const char *w)
{
	size_t k = strlen(w);
	if (i + k > n || memcmp(s + i, w, k) != 0)
		return 0;
	return i + k == n || !(isalnum((unsigned char)s[i + k]) || s[i + k] == '_');
}

int json_fix_nonfinite(const char *text, size_t n, char **out, size_t *out_n)
{
	/* Fast path: most lines hold neither word anywhere. */
	if (!memmem(text, n, "NaN", 3) && !memmem(text, n, "Infinity", 8))
		return 0;
	struct buf b = { 0 };
	int in_str = 0, changed = 0;
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		const char *rep = NULL;
		size_t skip = 0;
		if (in_str) {
			if (c == '\\' && i + 1 < n) {
				if (buf_append(&b, text + i, 2) < 0)
					goto oom;
				i++;
				continue;
			}
			if (c == '"')
				in_str = 0;
		} else if (c == '"')
			in_str = 1;
		else if (c == 'N' && word_at(text, n, i, "NaN"))
			rep = "null", skip = 3;
		else if (c == 'I' && word_at(text, n, i, "Infinity"))
			rep = "1e999", skip = 8;
		else if (c == '-' && word_at(text, n, i + 1, "Infinity"))
			rep = "-1e999", skip = 9;
		if (rep) {
			if (buf_append(&b, rep, strlen(rep)) < 0)
				goto oom;
			i += skip - 1;
			changed = 1;
		} else if (buf_put_u8(&b, (unsigned char)c) < 0)
			goto oom;
	}
	if (!changed) {
		buf_free(&b);
		return 0;
	}
	if (buf_put_u8(&b, 0) < 0)
		goto oom;
	*out = (char *)b.data;
	*out_n = b.len - 1;
	return 1;
oom:
	buf_free(&b);
	return -1;
}

/* ---- printing ---- */

int json_format_float(char out[32], float f)
{
	/* Never null, which would read back as "absent" or fail: these words
	 * are Python's, and json_parse_record reads them back. */
	if (isnan(f))
		return snprintf(out, 32, "NaN");
	if (isinf(f))
		return snprintf(out, 32, f > 0 ? "Infinity" : "-Infinity");
	if (f == 0.0f)
		return snprintf(out, 32, signbit(f) ? "-0" : "0");
	int n = 0;
	for (int prec = 1; prec <= 9; prec++) {
		n = snprintf(out, 32, "%.*g", prec, (double)f);
		if (strtof(out, NULL) == f)
			break;
	}
	return n;
}

int json_print_string(struct buf *out, const char *s)
{
	return json_print_string_n(out, s, strlen(s));
}

int json_print_string_n(struct buf *out, const char *s, size_t n)
{
	int r = buf_put_u8(out, '"');
	const unsigned char *end = (const unsigned char *)s + n;
	for (const unsigned char *p = (const unsigned char *)s; p < end && r == 0; p++) {
		switch (*p) {
		case '"': r = buf_append(out, "\\\"", 2); break;
		case '\\': r = buf_append(out, "\\\\", 2); break;
		case '\n': r = buf_append(out, "\\n", 2); break;
		case '\r': r = buf_append(out, "\\r", 2); break;
		case '\t': r = buf_append(out, "\\t", 2); break;
		default:
			if (*p < 0x20)
				r = buf_printf(out, "\\u%04x", *p);
			else
				r = buf_put_u8(out, *p);
		}
	}
	return r | buf_put_u8(out, '"');
}

static int key(struct buf *out, int *first, const char *k)
{
	int r = *first ? 0 : buf_put_u8(out, ',');
	*first = 0;
	return r | buf_printf(out, "\"%s\":", k);
}

static int print_i32s(struct buf *out, const int32_t *a, uint32_t n)
{
	int r = buf_put_u8(out, '[');
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = buf_printf(out, i ? ",%d" : "%d", a[i]);
	return r | buf_put_u8(out, ']');
}

static int print_u32s(struct buf *out, const uint32_t *a, uint32_t n)
{
	int r = buf_put_u8(out, '[');
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = buf_printf(out, i ? ",%u" : "%u", a[i]);
	return r | buf_put_u8(out, ']');
}

int json_print_id(struct buf *out, const struct traj_id *id)
{
	if (id->str)
		return json_print_string(out, id->str);
	return buf_printf(out, "%lld", (long long)id->num);
}

static int print_ids(struct buf *out, const struct traj_id *a, uint32_t n)
{
	int r = buf_put_u8(out, '[');
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = (i ? buf_put_u8(out, ',') : 0) | json_print_id(out, &a[i]);
	return r | buf_put_u8(out, ']');
}

static int print_u8s(struct buf *out, const uint8_t *a, uint32_t n)
{
	int r = buf_put_u8(out, '[');
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = buf_printf(out, i ? ",%u" : "%u", a[i]);
	return r | buf_put_u8(out, ']');
}

static int print_float(struct buf *out, float f)
{
	char s[32];
	int n = json_format_float(s, f);
	return buf_append(out, s, (size_t)n);
}

static int print_f32s(struct buf *out, const float *a, uint32_t n)
{
	int r = buf_put_u8(out, '[');
	for (uint32_t i = 0; i < n && r == 0; i++)
		r = (i ? buf_put_u8(out, ',') : 0) | print_float(out, a[i]);
	return r | buf_put_u8(out, ']');
}


static int print_traj(struct buf *out, const struct traj *t, uint32_t index, json_traj_extra extra, void *ctx)
{
	int first = 1, r = buf_put_u8(out, '{');
	r |= key(out, &first, "prompt_tokens") | print_i32s(out, t->prompt_tokens, t->n_prompt);
	r |= key(out, &first, "response_tokens") | print_i32s(out, t->response_tokens, t->n_response);
	if (t->logprobs)
		r |= key(out, &first, "logprobs") | print_f32s(out, t->logprobs, t->n_response);
	else
		r |= key(out, &first, "logprobs") | buf_append(out, "null", 4);
	if (t->response_mask)
		r |= key(out, &first, "response_mask") | print_u8s(out, t->response_mask, t->n_response);
	if (t->answer)
		r |= key(out, &first, "answer") | json_print_string(out, t->answer);
	r |= key(out, &first, "sequence_id") | json_print_id(out, &t->sequence_id);
	r |= key(out, &first, "group_id") | json_print_id(out, &t->group_id);
	r |= key(out, &first, "policy_version") | buf_printf(out, "%lld", (long long)t->policy_version);
	r |= key(out, &first, "temperature") | print_float(out, t->temperature);
	if (t->finish_reason)
		r |= key(out, &first, "finish_reason") | json_print_string(out, t->finish_reason);
	if (t->run)
		r |= key(out, &first, "run") | json_print_string(out, t->run);
	if (t->scored) {
		if (t->ref_logprobs)
			r |= key(out, &first, "ref_logprobs") | print_f32s(out, t->ref_logprobs, t->n_response);
		r |= key(out, &first, "rewards") | print_f32s(out, t->rewards, t->n_rewards);
		if (t->reward_names) {
			r |= key(out, &first, "reward_names") | buf_put_u8(out, '[');
			for (uint32_t i = 0; i < t->n_rewards; i++)
				r |= (i ? buf_put_u8(out, ',') : 0) | json_print_string(out, t->reward_names[i]);
			r |= buf_put_u8(out, ']');
		}
		r |= key(out, &first, "advantages") | print_float(out, t->advantage);
		if (t->successes)
			r |= key(out, &first, "successes") | print_f32s(out, t->successes, t->n_rewards);
	}
	if (r == 0 && extra)
		r = extra(out, t, index, ctx);
	return r | buf_put_u8(out, '}');
}

int json_print_group_with(struct buf *out, const struct group *g, json_traj_extra extra, void *ctx)
{
	int r = buf_append(out, "{\"group_id\":", 12) | json_print_id(out, &g->group_id) |
		buf_append(out, ",\"trajectories\":[", 17);
	for (uint32_t i = 0; i < g->n && r == 0; i++)
		r |= (i ? buf_put_u8(out, ',') : 0) | print_traj(out, &g->trajs[i], i, extra, ctx);
	return r | buf_append(out, "]}\n", 3);
}

int json_print_group(struct buf *out, const struct group *g)
{
	return json_print_group_with(out, g, NULL, NULL);
}

int json_print_floats(struct buf *out, const float *a, uint32_t n)
{
	return print_f32s(out, a, n);
}

int json_print_mb(struct buf *out, const struct microbatch *mb)
{
	int first = 1, r = buf_put_u8(out, '{');
	uint32_t T = mb->n_tokens;
	r |= key(out, &first, "input_ids") | print_i32s(out, mb->input_ids, T);
	r |= key(out, &first, "position_ids") | print_i32s(out, mb->position_ids, T);
	r |= key(out, &first, "seq_lens") | print_u32s(out, mb->seq_lens, mb->n_seq_lens);
	r |= key(out, &first, "loss_mask") | print_u8s(out, mb->loss_mask, T);
	r |= key(out, &first, "advantages") | print_f32s(out, mb->advantages, T);
	r |= key(out, &first, "inference_logprobs") | print_f32s(out, mb->inference_logprobs, T);
	if (mb->ref_logprobs)
		r |= key(out, &first, "ref_logprobs") | print_f32s(out, mb->ref_logprobs, T);
	r |= key(out, &first, "temperatures") | print_f32s(out, mb->temperatures, T);
	r |= key(out, &first, "sequence_ids") | print_ids(out, mb->sequence_ids, mb->n_seqs);
	r |= key(out, &first, "group_ids") | print_ids(out, mb->group_ids, mb->n_seqs);
	if (mb->prompt_lens)
		r |= key(out, &first, "prompt_lens") | print_u32s(out, mb->prompt_lens, mb->n_seqs);
	if (mb->policy_versions) {
		r |= key(out, &first, "policy_versions") | buf_put_u8(out, '[');
		for (uint32_t i = 0; i < mb->n_seqs; i++)
			r |= buf_printf(out, i ? ",%lld" : "%lld", (long long)mb->policy_versions[i]);
		r |= buf_put_u8(out, ']');
	}
	if (mb->rewards)
		r |= key(out, &first, "rewards") | print_f32s(out, mb->rewards, mb->n_seqs);
	if (mb->finish_reasons) {
		r |= key(out, &first, "finish_reasons") | buf_put_u8(out, '[');
		for (uint32_t i = 0; i < mb->n_seqs; i++)
			r |= (i ? buf_put_u8(out, ',') : 0) |
			     (mb->finish_reasons[i] ? json_print_string(out, mb->finish_reasons[i])
						    : buf_append(out, "null", 4));
		r |= buf_put_u8(out, ']');
	}
	if (mb->logprobs_missing)
		r |= key(out, &first, "logprobs_missing") | print_u8s(out, mb->logprobs_missing, mb->n_seqs);
	r |= key(out, &first, "step") | buf_printf(out, "%lld", (long long)mb->step);
	r |= key(out, &first, "rank") | buf_printf(out, "%d", mb->rank);
	r |= key(out, &first, "index") | buf_printf(out, "%d", mb->index);
	if (mb->run)
		r |= key(out, &first, "run") | json_print_string(out, mb->run);
	return r | buf_append(out, "}\n", 2);
}

int json_print_record(struct buf *out, const struct record *rec)
{
	if (rec->kind == REC_GROUP)
		return json_print_group(out, &rec->group);
	if (rec->kind == REC_MICROBATCH)
		return json_print_mb(out, &rec->mb);
	return -1;
}


/* ---- long number arrays, kept as text ----
 *
 * cJSON makes a node of about 80 bytes (with malloc's overhead) for every
 * number, so a line of a few million token ids took more than ten times
 * its size as a tree (a 185 MB line peaked at 2.9 GB). Before parsing, the
 * per-token arrays of the view (the keys below, read only by
 * json_get_*_array) are cut out of the text when they hold nothing but
 * numbers and nulls, each replaced by a marker string "\u0001K"; after
 * parsing, the marker's node becomes a cJSON_Raw node (which the parser
 * never makes) pointing at the array's text in the line, flagged
 * cJSON_IsReference so cJSON_Delete leaves the text alone, valueint
 * holding its element count and valuedouble its length. The getters then
 * read the numbers straight from the text into their arrays.
 *
 * The numbers read as cJSON reads them: a token of at most 63 of the
 * characters 0-9 + - . e E, through strtod, which must take all of it (what
 * cJSON would refuse is left in place for cJSON to refuse, with its
 * message), or null. A line whose strings hold \u0001 already is parsed as
 * it is, so no marker can be forged.
 */
static const char *const long_keys[] = {
	"prompt_tokens", "response_tokens", "logprobs", "response_mask", "ref_logprobs", "input_ids",
	"position_ids", "loss_mask", "advantages", "inference_logprobs", "temperatures", "seq_lens",
	"prompt_lens",
};

static int is_long_key(const char *k, size_t n)
{
	for (size_t i = 0; i < sizeof long_keys / sizeof *long_keys; i++)
		if (strlen(long_keys[i]) == n && memcmp(long_keys[i], k, n) == 0)
			return 1;
	return 0;
}

/* One element of a number array's text at *p, whitespace around it
 * skipped and the ',' or ']' after it taken: 1 with *d (NaN for null: no
 * number token reads as NaN) and *last set after the ']', or -1 when it is
 * not an element cJSON reads so. */
static int elem(const char **p, const char *end, double *d, int *last)
{
	const char *s = *p;
	while (s < end && (unsigned char)*s <= 32)
		s++;
	const char *t = s;
	while (t < end && (isdigit((unsigned char)*t) || *t == '+' || *t == '-' || *t == '.' || *t == 'e' || *t == 'E'))
		t++;
	if (t == s && end - s >= 4 && memcmp(s, "null", 4) == 0) {
		*d = NAN;
		t = s + 4;
	} else {
		char num[64], *after;
		if (t == s || t - s > 63)
			return -1;
		memcpy(num, s, (size_t)(t - s));
		num[t - s] = 0;
		*d = strtod(num, &after);
		if (after != num + (t - s))
			return -1;
	}
	while (t < end && (unsigned char)*t <= 32)
		t++;
	if (t >= end || (*t != ',' && *t != ']'))
		return -1;
	*last = *t == ']';
	*p = t + 1;
	return 1;
}

/* The array whose '[' is at a (text up to end): its length and count when
 * it holds at least one element and only numbers and nulls, else 0. */
static size_t number_array(const char *a, const char *end, uint32_t *count)
{
	const char *p = a + 1;
	double d;
	int last = 0;
	uint32_t k = 0;
	while (!last) {
		if (elem(&p, end, &d, &last) < 0 || ++k == INT32_MAX)
			return 0;
	}
	*count = k;
	return (size_t)(p - a);
}

/* The end of the string literal whose opening quote is at s (just past its
 * closing quote), or NULL when it does not end; *marker is set when it holds
 * \u0001 or a raw byte 1. */
static const char *string_end(const char *s, const char *end, int *marker)
{
	for (const char *p = s + 1; p < end; p++) {
		if (*p == 1)
			*marker = 1;
		if (*p == '\\') {
			if (end - p >= 6 && p[1] == 'u' && p[2] == '0' && p[3] == '0' && p[4] == '0' && p[5] == '1')
				*marker = 1;
			p++;
		} else if (*p == '"') {
			return p + 1;
		}
	}
	return NULL;
}

struct long_arrays {
	struct buf text;          /* the line with the arrays cut out */
	struct long_array {
		const char *at;   /* its '[' in the line */
		size_t len;
		uint32_t count;
	} *a;                     /* (n) */
	uint32_t n, cap;
};

static void long_arrays_free(struct long_arrays *la)
{
	buf_free(&la->text);
	free(la->a);
	memset(la, 0, sizeof *la);
}

static int long_arrays_add(struct long_arrays *la, const char *at, size_t len, uint32_t count)
{
	if (la->n == la->cap) {
		uint32_t cap = la->cap ? la->cap * 2 : 16;
		struct long_array *a = realloc(la->a, cap * sizeof *a);
		if (!a)
			return -1;
		la->a = a;
		la->cap = cap;
	}
	la->a[la->n++] = (struct long_array){ at, len, count };
	return 0;
}

/* Cut the long arrays out of text: 1 with la->text to parse, 0 when there
 * are none (or a marker in the line forbids it), -1 out of memory. */
static int long_arrays_cut(const char *text, size_t n, struct long_arrays *la)
{
	const char *end = text + n, *copied = text, *p = text;
	int marker = 0;
	memset(la, 0, sizeof *la);
	while (p < end) {
		if (*p != '"') {
			p++;
			continue;
		}
		const char *k = p, *q = string_end(p, end, &marker);
		if (!q || marker)
			break;
		p = q;
		while (q < end && (unsigned char)*q <= 32)
			q++;
		if (q >= end || *q != ':' || !is_long_key(k + 1, (size_t)(p - k - 2)))
			continue;
		for (q++; q < end && (unsigned char)*q <= 32; q++)
			;
		uint32_t count = 0;
		size_t len = q < end && *q == '[' ? number_array(q, end, &count) : 0;
		if (!len)
			continue;
		if (buf_append(&la->text, copied, (size_t)(q - copied)) < 0 ||
		    buf_printf(&la->text, "\"\\u0001%u\"", la->n) < 0 || long_arrays_add(la, q, len, count) < 0) {
			long_arrays_free(la);
			return -1;
		}
		p = copied = q + len;
	}
	if (marker || !la->n) {
		long_arrays_free(la);
		return 0;
	}
	if (buf_append(&la->text, copied, (size_t)(end - copied)) < 0) {
		long_arrays_free(la);
		return -1;
	}
	return 1;
}

/* Turn the markers of the parsed tree back into the arrays' text. */
static void long_arrays_put(cJSON *o, const struct long_arrays *la)
{
	for (cJSON *c = o; c; c = c->next) {
		if (c->child)
			long_arrays_put(c->child, la);
		if (!cJSON_IsString(c) || c->valuestring[0] != 1 || !c->string || !is_long_key(c->string, strlen(c->string)))
			continue;
		unsigned long k = strtoul(c->valuestring + 1, NULL, 10);
		if (k >= la->n)
			continue;
		cJSON_free(c->valuestring);
		c->type = cJSON_Raw | cJSON_IsReference;
		c->valuestring = (char *)la->a[k].at;
		c->valueint = (int)la->a[k].count;
		c->valuedouble = (double)la->a[k].len;
	}
}

/* ---- parsing ---- */

static int count_array(const cJSON *arr, const char *what, uint32_t *n, struct err *e)
{
	if (jsonpick_is_span(arr)) {
		*n = (uint32_t)arr->valueint;
		return 0;
	}
	if (!cJSON_IsArray(arr))
		return err_set(e, "%s: expected an array", what);
	uint32_t k = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, arr) k++;
	*n = k;
	return 0;
}

/* The elements of an array, parsed or a span (a long array cut out here,
 * or one of data/jsonpick.h), each as a kind and a number. */
enum { EL_NUMBER, EL_NULL, EL_TRUE, EL_FALSE, EL_OTHER };
struct elems {
	struct jsonpick_iter it;
	const cJSON *v;           /* the next element */
};

static void elems_start(struct elems *it, const cJSON *arr)
{
	it->v = jsonpick_iter_start(&it->it, arr);
}

/* The kind of the next element (count_array said how many) and its number. */
static int elems_next(struct elems *it, double *d)
{
	const cJSON *v = it->v;
	*d = v->valuedouble;
	int kind = cJSON_IsNumber(v) ? EL_NUMBER : cJSON_IsNull(v) ? EL_NULL : cJSON_IsTrue(v) ? EL_TRUE
		   : cJSON_IsFalse(v) ? EL_FALSE : EL_OTHER;
	it->v = jsonpick_iter_next(&it->it);   /* a span's element is overwritten: read first */
	return kind;
}

static void elems_end(struct elems *it)
{
	jsonpick_iter_end(&it->it);
}

/* The integer of a JSON number; hint ends the message of one too large. */
static int get_i64(const cJSON *v, const char *what, const char *hint, int64_t *out, struct err *e)
{
	if (!cJSON_IsNumber(v))
		return err_set(e, "%s: expected an integer", what);
	double d = v->valuedouble;
	if (d != floor(d))
		return err_set(e, "%s: %.17g is not an integer", what, d);
	/* the number read need not be the one written: 2^53 + 1 reads as 2^53 */
	if (fabs(d) > (double)TRAJ_INT_MAX)
		return err_set(e, "%s: an integer beyond +-%" PRId64 " (2^53 - 1), which JSON numbers do not hold "
			       "exactly (it reads as %.16g)%s", what, (int64_t)TRAJ_INT_MAX, d, hint);
	*out = (int64_t)d;
	return 0;
}

int json_get_i64(const cJSON *v, const char *what, int64_t *out, struct err *e)
{
	return get_i64(v, what, "", out, e);
}

int json_get_id(const cJSON *v, const char *what, struct traj_id *out, struct err *e)
{
	if (cJSON_IsString(v)) {
		if (traj_id_set_str(out, v->valuestring, strlen(v->valuestring)) < 0)
			return err_set(e, "out of memory");
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return err_set(e, "%s: expected a string or an integer", what);
	int64_t x;
	if (get_i64(v, what, "; give it as a string", &x, e) < 0)
		return -1;
	traj_id_free(out);
	out->num = x;
	return 0;
}

/* An element of an array into slot: 0, or -1 when it is not of the type. */
typedef int (*put_elem)(int kind, double d, void *slot);

static int put_i32(int kind, double d, void *slot)
{
	if (kind != EL_NUMBER || !(d == floor(d) && d >= INT32_MIN && d <= INT32_MAX))
		return -1;
	*(int32_t *)slot = (int32_t)d;
	return 0;
}

static int put_f32(int kind, double d, void *slot)   /* null, NaN in JSON (json_fix_nonfinite), reads as NaN */
{
	if (kind != EL_NULL && kind != EL_NUMBER)
		return -1;
	*(float *)slot = kind == EL_NULL ? NAN : (float)d;
	return 0;
}

static int put_mask(int kind, double d, void *slot)
{
	if (kind == EL_TRUE || kind == EL_FALSE)
		*(uint8_t *)slot = kind == EL_TRUE;
	else if (kind == EL_NUMBER && (d == 0 || d == 1))
		*(uint8_t *)slot = d == 1;
	else
		return -1;
	return 0;
}

/*
 * The array arr as a new array of elements of size bytes, each through
 * put; an element put refuses is named with what was expected. On success
 * *out (freed first) gets it and *n its length.
 */
static int get_array(const cJSON *arr, const char *what, size_t size, put_elem put, const char *expected,
                     void **out, uint32_t *n, struct err *e)
{
	uint32_t k = 0;
	if (count_array(arr, what, &k, e) < 0)
		return -1;
	char *a = malloc(k ? k * size : 1);
	if (!a)
		return err_set(e, "out of memory");
	struct elems it;
	elems_start(&it, arr);
	for (uint32_t i = 0; i < k; i++) {
		double d;
		int kind = elems_next(&it, &d);
		if (put(kind, d, a + i * size) < 0) {
			free(a);
			elems_end(&it);
			return err_set(e, "%s[%u]: expected %s", what, i, expected);
		}
	}
	elems_end(&it);
	free(*out);
	*out = a;
	*n = k;
	return 0;
}

int json_get_i32_array(const cJSON *arr, const char *what, int32_t **out, uint32_t *n, struct err *e)
{
	void *a = *out;
	int r = get_array(arr, what, sizeof **out, put_i32, "a 32-bit integer", &a, n, e);
	*out = a;
	return r;
}

int json_get_f32_array(const cJSON *arr, const char *what, float **out, uint32_t *n, struct err *e)
{
	void *a = *out;
	int r = get_array(arr, what, sizeof **out, put_f32, "a number", &a, n, e);
	*out = a;
	return r;
}

int json_get_mask_array(const cJSON *arr, const char *what, uint8_t **out, uint32_t *n, struct err *e)
{
	void *a = *out;
	int r = get_array(arr, what, sizeof **out, put_mask, "0, 1, false or true", &a, n, e);
	*out = a;
	return r;
}

static int get_f32(const cJSON *v, const char *what, float *out, struct err *e)
{
	if (cJSON_IsNull(v))   /* also Python's NaN, rewritten by json_fix_nonfinite() */
		return err_set(e, "%s is NaN or null, not a finite number", what);
	if (!cJSON_IsNumber(v))
		return err_set(e, "%s: expected a number", what);
	*out = (float)v->valuedouble;
	return 0;
}

static int get_str(const cJSON *v, const char *what, char **out, struct err *e)
{
	if (cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return err_set(e, "%s: expected a string", what);
	char *s = strdup(v->valuestring);
	if (!s)
		return err_set(e, "out of memory");
	free(*out);
	*out = s;
	return 0;
}

/* rewards: one per reward function; a bare number (a scalar reward, as
 * most trainers write it) is a list of one. */
static int get_rewards(const cJSON *v, struct traj *t, struct err *e)
{
	if (!cJSON_IsNumber(v))
		return json_get_f32_array(v, "rewards", &t->rewards, &t->n_rewards, e);
	float *a = malloc(sizeof *a);
	if (!a)
		return err_set(e, "out of memory");
	if (get_f32(v, "rewards", &a[0], e) < 0) {
		free(a);
		return -1;
	}
	t->rewards = a;
	t->n_rewards = 1;
	return 0;
}

/* successes: one per reward function; a bare number or boolean (files
 * written before per-function successes) is a one-element list, dropped
 * unless there is one reward function. */
static int get_successes(const cJSON *v, struct traj *t, struct err *e)
{
	uint32_t k = 1;
	float *a = NULL;
	if (cJSON_IsArray(v)) {
		if (json_get_f32_array(v, "successes", &a, &k, e) < 0)
			return -1;
	} else {
		if (!(a = malloc(sizeof *a)))
			return err_set(e, "out of memory");
		if (cJSON_IsBool(v))
			a[0] = cJSON_IsTrue(v) ? 1.0f : 0.0f;
		else if (get_f32(v, "successes", &a[0], e) < 0) {
			free(a);
			return -1;
		}
	}
	if (!cJSON_IsArray(v) && t->n_rewards != 1) {
		/* a file from before per-function successes: its one number cannot
		 * be split over another number of functions, so it is dropped */
		free(a);
		return 0;
	}
	if (k != t->n_rewards) {
		free(a);
		return err_set(e, "%u successes for %u rewards: one per reward function", k, t->n_rewards);
	}
	free(t->successes);
	t->successes = a;
	return 0;
}

int json_parse_traj(const cJSON *o, struct traj *t, struct err *e)
{
	uint32_t n = 0, nmask = 0, nref = 0;
	const cJSON *v;
	traj_init(t);
	if (!cJSON_IsObject(o))
		return err_set(e, "a trajectory must be a JSON object");
	if (json_get_i32_array(cJSON_GetObjectItemCaseSensitive(o, "prompt_tokens"), "prompt_tokens",
			       &t->prompt_tokens, &t->n_prompt, e) < 0 ||
	    json_get_i32_array(cJSON_GetObjectItemCaseSensitive(o, "response_tokens"), "response_tokens",
			       &t->response_tokens, &t->n_response, e) < 0 ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "logprobs")) && !cJSON_IsNull(v) &&
	     json_get_f32_array(cJSON_GetObjectItemCaseSensitive(o, "logprobs"), "logprobs", &t->logprobs, &n, e) < 0))
		goto fail;
	if (t->logprobs && n != t->n_response) {
		err_set(e, "%u logprobs for %u response_tokens", n, t->n_response);
		goto fail;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "response_mask")) && !cJSON_IsNull(v)) {
		if (json_get_mask_array(v, "response_mask", &t->response_mask, &nmask, e) < 0)
			goto fail;
		if (nmask != t->n_response) {
			err_set(e, "%u response_mask entries for %u response_tokens", nmask, t->n_response);
			goto fail;
		}
	}
	if (((v = cJSON_GetObjectItemCaseSensitive(o, "answer")) && get_str(v, "answer", &t->answer, e) < 0) ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "run")) && get_str(v, "run", &t->run, e) < 0) ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "sequence_id")) && !cJSON_IsNull(v) &&
	     json_get_id(v, "sequence_id", &t->sequence_id, e) < 0) ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "group_id")) && !cJSON_IsNull(v) &&
	     json_get_id(v, "group_id", &t->group_id, e) < 0) ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "policy_version")) && json_get_i64(v, "policy_version", &t->policy_version, e) < 0) ||
	    ((v = cJSON_GetObjectItemCaseSensitive(o, "temperature")) && get_f32(v, "temperature", &t->temperature, e) < 0))
		goto fail;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "finish_reason")) && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v) || !*v->valuestring) {
			err_set(e, "finish_reason: expected a string such as \"stop\" or \"length\"");
			goto fail;
		}
		if (traj_set_finish(t, v->valuestring) < 0) {
			err_set(e, "out of memory");
			goto fail;
		}
	}
	/* scored fields */
	const cJSON *adv = cJSON_GetObjectItemCaseSensitive(o, "advantages");
	const cJSON *rew = cJSON_GetObjectItemCaseSensitive(o, "rewards");
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "ref_logprobs");
	if (adv || rew || ref) {
		t->scored = 1;
		if (adv && get_f32(adv, "advantages", &t->advantage, e) < 0)
			goto fail;
		if (ref && !cJSON_IsNull(ref)) {
			if (json_get_f32_array(ref, "ref_logprobs", &t->ref_logprobs, &nref, e) < 0)
				goto fail;
			if (nref != t->n_response) {
				err_set(e, "%u ref_logprobs for %u response_tokens", nref, t->n_response);
				goto fail;
			}
		}
		if (rew && get_rewards(rew, t, e) < 0)
			goto fail;
		if ((v = cJSON_GetObjectItemCaseSensitive(o, "reward_names")) && !cJSON_IsNull(v)) {
			uint32_t k = 0;
			if (count_array(v, "reward_names", &k, e) < 0)
				goto fail;
			if (k != t->n_rewards) {
				err_set(e, "%u reward_names for %u rewards", k, t->n_rewards);
				goto fail;
			}
			t->reward_names = calloc(k ? k : 1, sizeof(char *));
			if (!t->reward_names) {
				err_set(e, "out of memory");
				goto fail;
			}
			uint32_t i = 0;
			const cJSON *s;
			cJSON_ArrayForEach(s, v) {
				if (!cJSON_IsString(s)) {
					err_set(e, "reward_names[%u]: expected a string", i);
					goto fail;
				}
				if (!(t->reward_names[i++] = strdup(s->valuestring))) {
					err_set(e, "out of memory");
					goto fail;
				}
			}
		}
		if ((v = cJSON_GetObjectItemCaseSensitive(o, "successes")) && !cJSON_IsNull(v) &&
		    get_successes(v, t, e) < 0)
			goto fail;
	}
	return 0;
fail:
	traj_free(t);
	return -1;
}

static int parse_group(const cJSON *o, struct group *g, struct err *e)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "trajectories"), *v;
	uint32_t n = 0;
	memset(g, 0, sizeof *g);
	g->group_id = traj_id_none();
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "group_id")) && !cJSON_IsNull(v) &&
	    json_get_id(v, "group_id", &g->group_id, e) < 0)
		return -1;
	int r = count_array(arr, "trajectories", &n, e);
	if (r == 0 && n == 0)
		r = err_set(e, "trajectories: a group needs at least one");
	if (r == 0 && !(g->trajs = calloc(n, sizeof *g->trajs)))
		r = err_set(e, "out of memory");
	if (r < 0) {
		traj_id_free(&g->group_id);
		return -1;
	}
	cJSON_ArrayForEach(v, arr) {
		if (json_parse_traj(v, &g->trajs[g->n], e) < 0) {
			err_prefix(e, "trajectories[%u]", g->n);
			group_free(g);
			return -1;
		}
		struct traj *t = &g->trajs[g->n++];
		if (!traj_id_given(&t->group_id) && traj_id_copy(&t->group_id, &g->group_id) < 0) {
			group_free(g);
			return err_set(e, "out of memory");
		}
	}
	if (group_check(g, e) < 0) {
		group_free(g);
		return -1;
	}
	return 0;
}

/* The optional per-sequence fields, each one per sequence_ids entry. */
static int parse_mb_seqs(const cJSON *o, struct microbatch *mb, struct err *e)
{
	const cJSON *v, *it;
	uint32_t k, i;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "prompt_lens")) && !cJSON_IsNull(v)) {
		int32_t *a = NULL;
		if (json_get_i32_array(v, "prompt_lens", &a, &k, e) < 0)
			return -1;
		mb->prompt_lens = (uint32_t *)a;
		for (i = 0; i < k; i++)
			if (a[i] < 0)
				return err_set(e, "prompt_lens[%u]: negative", i);
		if (k != mb->n_seqs)
			return err_set(e, "%u prompt_lens for %u sequences", k, mb->n_seqs);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "policy_versions")) && !cJSON_IsNull(v)) {
		if (count_array(v, "policy_versions", &k, e) < 0)
			return -1;
		if (k != mb->n_seqs)
			return err_set(e, "%u policy_versions for %u sequences", k, mb->n_seqs);
		if (!(mb->policy_versions = malloc((k ? k : 1) * sizeof(int64_t))))
			return err_set(e, "out of memory");
		i = 0;
		cJSON_ArrayForEach(it, v) {
			char what[40];
			snprintf(what, sizeof what, "policy_versions[%u]", i);
			if (json_get_i64(it, what, &mb->policy_versions[i++], e) < 0)
				return -1;
		}
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "rewards")) && !cJSON_IsNull(v)) {
		if (json_get_f32_array(v, "rewards", &mb->rewards, &k, e) < 0)
			return -1;
		if (k != mb->n_seqs)
			return err_set(e, "%u rewards for %u sequences", k, mb->n_seqs);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "finish_reasons")) && !cJSON_IsNull(v)) {
		if (count_array(v, "finish_reasons", &k, e) < 0)
			return -1;
		if (k != mb->n_seqs)
			return err_set(e, "%u finish_reasons for %u sequences", k, mb->n_seqs);
		if (!(mb->finish_reasons = calloc(k ? k : 1, sizeof(char *))))
			return err_set(e, "out of memory");
		i = 0;
		cJSON_ArrayForEach(it, v) {
			if (!cJSON_IsNull(it) && (!cJSON_IsString(it) || !*it->valuestring))
				return err_set(e, "finish_reasons[%u]: expected a string or null", i);
			if (cJSON_IsString(it) && !(mb->finish_reasons[i] = strdup(it->valuestring)))
				return err_set(e, "out of memory");
			i++;
		}
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "logprobs_missing")) && !cJSON_IsNull(v)) {
		if (json_get_mask_array(v, "logprobs_missing", &mb->logprobs_missing, &k, e) < 0)
			return -1;
		if (k != mb->n_seqs)
			return err_set(e, "%u logprobs_missing for %u sequences", k, mb->n_seqs);
	}
	return 0;
}

static int parse_mb(const cJSON *o, struct microbatch *mb, struct err *e)
{
	static const char *f32_names[] = { "advantages", "inference_logprobs", "ref_logprobs", "temperatures" };
	float **f32_fields[] = { &mb->advantages, &mb->inference_logprobs, &mb->ref_logprobs, &mb->temperatures };
	const cJSON *v;
	uint32_t n = 0, nsid = 0, ngid = 0;
	int64_t x;
	memset(mb, 0, sizeof *mb);
	if (json_get_i32_array(cJSON_GetObjectItemCaseSensitive(o, "input_ids"), "input_ids", &mb->input_ids, &mb->n_tokens, e) < 0)
		goto fail;
	if (json_get_i32_array(cJSON_GetObjectItemCaseSensitive(o, "position_ids"), "position_ids", &mb->position_ids, &n, e) < 0)
		goto fail;
	if (n != mb->n_tokens) {
		err_set(e, "position_ids has %u entries, input_ids %u", n, mb->n_tokens);
		goto fail;
	}
	if (json_get_mask_array(cJSON_GetObjectItemCaseSensitive(o, "loss_mask"), "loss_mask", &mb->loss_mask, &n, e) < 0)
		goto fail;
	if (n != mb->n_tokens) {
		err_set(e, "loss_mask has %u entries, input_ids %u", n, mb->n_tokens);
		goto fail;
	}
	for (int i = 0; i < 4; i++) {
		v = cJSON_GetObjectItemCaseSensitive(o, f32_names[i]);
		if (i == 2 && (!v || cJSON_IsNull(v)))
			continue;
		if (json_get_f32_array(v, f32_names[i], f32_fields[i], &n, e) < 0)
			goto fail;
		if (n != mb->n_tokens) {
			err_set(e, "%s has %u entries, input_ids %u", f32_names[i], n, mb->n_tokens);
			goto fail;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "seq_lens");
	int32_t *sl = NULL;
	if (json_get_i32_array(v, "seq_lens", &sl, &mb->n_seq_lens, e) < 0)
		goto fail;
	mb->seq_lens = (uint32_t *)sl;
	for (uint32_t i = 0; i < mb->n_seq_lens; i++)
		if (sl[i] < 0) {
			err_set(e, "seq_lens[%u]: negative", i);
			goto fail;
		}
	if (count_array(cJSON_GetObjectItemCaseSensitive(o, "sequence_ids"), "sequence_ids", &nsid, e) < 0 ||
	    count_array(cJSON_GetObjectItemCaseSensitive(o, "group_ids"), "group_ids", &ngid, e) < 0)
		goto fail;
	if (nsid != ngid) {
		err_set(e, "%u group_ids for %u sequence_ids", ngid, nsid);
		goto fail;
	}
	const char *idn[2] = { "sequence_ids", "group_ids" };
	struct traj_id **ids[2] = { &mb->sequence_ids, &mb->group_ids };
	for (int k = 0; k < 2; k++) {
		*ids[k] = malloc((nsid ? nsid : 1) * sizeof(struct traj_id));
		if (!*ids[k]) {
			err_set(e, "out of memory");
			goto fail;
		}
		for (uint32_t i = 0; i < nsid; i++)
			(*ids[k])[i] = traj_id_none();
	}
	mb->n_seqs = nsid;   /* from here mb_free frees the ids */
	for (int k = 0; k < 2; k++) {
		uint32_t i = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, idn[k])) {
			char what[32];
			snprintf(what, sizeof what, "%s[%u]", idn[k], i);
			if (json_get_id(it, what, &(*ids[k])[i++], e) < 0)
				goto fail;
		}
	}
	if (parse_mb_seqs(o, mb, e) < 0)
		goto fail;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "step")) && json_get_i64(v, "step", &mb->step, e) < 0)
		goto fail;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "rank"))) {
		if (json_get_i64(v, "rank", &x, e) < 0)
			goto fail;
		mb->rank = (int32_t)x;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "index"))) {
		if (json_get_i64(v, "index", &x, e) < 0)
			goto fail;
		mb->index = (int32_t)x;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "run")) && get_str(v, "run", &mb->run, e) < 0)
		goto fail;
	if (mb_check(mb, e) < 0)
		goto fail;
	return 0;
fail:
	mb_free(mb);
	return -1;
}

cJSON *json_parse_line(const char *text, size_t n, size_t *bad_at, struct json_line *l)
{
	const char *end = NULL;
	memset(l, 0, sizeof *l);
	*bad_at = 0;
	int fx = json_fix_nonfinite(text, n, &l->fixed, &n);
	if (fx < 0)
		return NULL;
	const char *src = fx ? l->fixed : text;   /* NaN and Infinity rewritten, or the line as it is */
	struct long_arrays *la = calloc(1, sizeof *la);
	int cut = la ? long_arrays_cut(src, n, la) : -1;
	if (cut < 0) {
		free(la);
		json_line_free(l);
		return NULL;
	}
	l->arrays = la;
	const char *parsed = cut ? (const char *)la->text.data : src;
	size_t len = cut ? la->text.len : n;
	cJSON *o = cut ? json_parse_n(parsed, len, &end) : NULL;
	if (o)
		long_arrays_put(o, la);
	else {   /* none cut out; or, for a line cJSON refuses, to say where as it says it in the line as given */
		parsed = src;
		len = n;
		o = json_parse_n(src, n, &end);
	}
	if (!o) {
		*bad_at = errno == ENOMEM ? 0 : (end && end >= src ? (size_t)(end - src) : 0) + 1;
		return NULL;
	}
	/* cJSON stops at the end of the first value: anything after it but
	 * blanks is a second value or garbage, never to be dropped silently */
	for (const char *p = end; p < parsed + len; p++)
		if (!isspace((unsigned char)*p)) {
			cJSON_Delete(o);
			l->after = 1;
			/* the byte in the line as given: add back what each array
			 * cut out before p took beyond its marker (arrays after the
			 * value are cut out too) */
			ptrdiff_t at = p - parsed, shift = 0;   /* a marker may be longer than its array */
			for (uint32_t k = 0; cut && k < la->n; k++) {
				if (la->a[k].at - src - shift >= at)
					break;
				shift += (ptrdiff_t)la->a[k].len - snprintf(NULL, 0, "\"\\u0001%u\"", k);
			}
			*bad_at = (size_t)(at + shift) + 1;
			return NULL;
		}
	return o;
}

int json_duplicate_key(const cJSON *o, struct err *e)
{
	for (const cJSON *c = o->child; c; c = c->next) {
		if (cJSON_IsObject(o))
			for (const cJSON *d = o->child; d != c; d = d->next)
				if (strcmp(d->string, c->string) == 0)
					return err_set(e, "the key \"%s\" appears twice in one object", c->string);
		if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && json_duplicate_key(c, e) < 0)
			return -1;
	}
	return 0;
}

struct cJSON *json_parse_one(const char *text, size_t n, struct err *e)
{
	const char *end = NULL;
	cJSON *o = json_parse_n(text, n, &end);
	if (!o && errno == ENOMEM) {
		err_sys(e, "JSON");
		return NULL;
	}
	if (!o) {
		err_set(e, "not valid JSON (near byte %zu)", (end && end >= text ? (size_t)(end - text) : 0) + 1);
		return NULL;
	}
	for (const char *p = end; p < text + n; p++)
		if (!isspace((unsigned char)*p)) {
			cJSON_Delete(o);
			err_set(e, "not valid JSON (text after the value, near byte %zu)", (size_t)(p - text) + 1);
			return NULL;
		}
	if (json_duplicate_key(o, e) < 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void json_line_free(struct json_line *l)
{
	if (l->arrays)
		long_arrays_free(l->arrays);
	free(l->arrays);
	free(l->fixed);
	memset(l, 0, sizeof *l);
}

int json_parse_record(const char *text, size_t n, struct record *rec, struct err *e)
{
	size_t at;
	struct json_line l;
	memset(rec, 0, sizeof *rec);
	cJSON *o = json_parse_line(text, n, &at, &l);
	if (!o) {
		int after = l.after;
		json_line_free(&l);
		if (!at)
			return err_set(e, "out of memory");
		return err_set(e, "not valid JSON (%snear byte %zu)", after ? "text after the value, " : "", at);
	}
	int r;
	if (!cJSON_IsObject(o))
		r = err_set(e, "expected a JSON object");
	else if (json_duplicate_key(o, e) < 0)
		r = -1;
	else if (cJSON_GetObjectItemCaseSensitive(o, "trajectories")) {
		rec->kind = REC_GROUP;
		r = parse_group(o, &rec->group, e);
	} else if (cJSON_GetObjectItemCaseSensitive(o, "input_ids")) {
		rec->kind = REC_MICROBATCH;
		r = parse_mb(o, &rec->mb, e);
	} else if (cJSON_GetObjectItemCaseSensitive(o, "response_tokens")) {
		rec->kind = REC_TRAJ;
		r = json_parse_traj(o, &rec->traj, e);
	} else
		r = err_set(e, "neither a group (\"trajectories\"), a micro-batch (\"input_ids\") "
			       "nor a trajectory (\"response_tokens\")");
	cJSON_Delete(o);
	json_line_free(&l);   /* the long arrays' text, kept until here */
	if (r < 0)
		rec->kind = REC_NONE;
	return r;
}

/* Whether [p, p + n) is a number as JSON's grammar writes one. */
static int json_number_ok(const char *p, size_t n)
{
	size_t k = p[0] == '-';
	if (k >= n || !isdigit((unsigned char)p[k]))
		return 0;
	if (p[k] == '0')
		k++;
	else
		while (k < n && isdigit((unsigned char)p[k]))
			k++;
	if (k < n && p[k] == '.') {
		if (++k >= n || !isdigit((unsigned char)p[k]))
			return 0;
		while (k < n && isdigit((unsigned char)p[k]))
			k++;
	}
	if (k < n && (p[k] == 'e' || p[k] == 'E')) {
		k++;
		if (k < n && (p[k] == '+' || p[k] == '-'))
			k++;
		if (k >= n || !isdigit((unsigned char)p[k]))
			return 0;
		while (k < n && isdigit((unsigned char)p[k]))
			k++;
	}
	return k == n;
}

int json_check_numbers(const char *line, size_t n, struct err *e)
{
	int in_str = 0;
	for (size_t i = 0; i < n; i++) {
		char c = line[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"') {
			in_str = 1;
			continue;
		}
		/* outside strings only numbers hold these (true, false, null, NaN
		 * and Infinity none of them) */
		if (c != '-' && c != '+' && c != '.' && !isdigit((unsigned char)c))
			continue;
		size_t j = i + 1;
		while (j < n && (isdigit((unsigned char)line[j]) || line[j] == '+' || line[j] == '-' || line[j] == '.' ||
				 line[j] == 'e' || line[j] == 'E'))
			j++;
		if (c == '-' && j == i + 1)
			continue;   /* -Infinity (Python's), or not JSON at all: the parser's to say */
		if (!json_number_ok(line + i, j - i))
			return err_set(e, "not valid JSON (near byte %zu: %.*s%s is not a number as JSON writes one)", i + 1,
				       (int)(j - i > 24 ? 24 : j - i), line + i, j - i > 24 ? "..." : "");
		i = j - 1;
	}
	return 0;
}

/* The code unit of the \\uXXXX escape at p (end - p >= 6), or -1. */
static long u_escape(const char *p)
{
	if (p[0] != '\\' || p[1] != 'u')
		return -1;
	long v = 0;
	for (int i = 2; i < 6; i++) {
		int c = (unsigned char)p[i], d = c >= '0' && c <= '9' ? c - '0'
					       : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

int json_check_text(const char *line, size_t n, struct err *e)
{
	size_t bad = uni_utf8_check((const unsigned char *)line, n);
	if (bad < n)
		return err_set(e, "byte %zu is not UTF-8 (JSON text is UTF-8; it would be stored raw)", bad + 1);
	if (memchr(line, 0, n))
		return err_set(e, "a NUL byte (strings would be cut there)");
	for (const char *p = line, *end = line + n; (p = memchr(p, '\\', (size_t)(end - p))); p += 2) {
		if (end - p >= 6 && memcmp(p + 1, "u0000", 5) == 0)
			return err_set(e, "a NUL character (\\u0000) in a string is not supported (it would be cut there)");
		/* JSON's grammar allows half a UTF-16 pair, which is no character
		 * and has no UTF-8: cJSON fails with no reason given. */
		long u = end - p >= 6 ? u_escape(p) : -1;
		if (u >= 0xD800 && u <= 0xDFFF) {
			long lo = u < 0xDC00 && end - p >= 12 ? u_escape(p + 6) : -1;
			if (lo < 0xDC00 || lo > 0xDFFF)
				return err_set(e, "a lone surrogate \\%.5s at byte %zu (half of a UTF-16 pair, not a character)",
					       p + 1, (size_t)(p - line) + 1);
			p += 6;   /* the pair's second half is not a lone one */
		}
		if (p + 1 >= end)
			break;
	}
	return json_check_numbers(line, n, e);
}

int json_cut_short(const char *s, size_t n)
{
	long depth = 0;
	int in_str = 0;
	for (size_t i = 0; i < n; i++) {
		if (in_str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_str = 0;
		} else if (s[i] == '"')
			in_str = 1;
		else if (s[i] == '{' || s[i] == '[')
			depth++;
		else if (s[i] == '}' || s[i] == ']')
			depth--;
	}
	return in_str || depth > 0;
}
