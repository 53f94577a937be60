/* jsonpick.c: see jsonpick.h.
 *
 * A recursive-descent reader that accepts and refuses what cJSON 1.7 does,
 * at the same bytes: the same literals (matched without looking past them,
 * so "nullx" fails at the x), numbers as the run of 0-9 + - e E . of which
 * strtod takes a prefix (of any length, as cJSON reads them since its fix
 * of CVE-2023-26819), strings that end at the first quote no backslash
 * takes, objects whose keys are strings, and at most CJSON_NESTING_LIMIT
 * arrays and objects deep. A string with a backslash is decoded by cJSON
 * itself, so escapes mean what they meant. tests/unit/test_jsonpick.c holds
 * it to cJSON byte by byte. */
#include "data/jsonpick.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPAN_TYPE (cJSON_Raw | cJSON_IsReference)

/* ---- scanning ---- */

static const char *ws(const char *p, const char *end)
{
	while (p < end && (unsigned char)*p <= 32)
		p++;
	return p;
}

static int number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.';
}

/* The number at p as cJSON reads it: past what strtod took of the number
 * characters there, or NULL when it took none (or memory ran out for a
 * number of thousands of digits). *whole: it took them all (what a span
 * needs, to read it again alike). */
static const char *number_end(const char *p, const char *end, double *d, int *whole)
{
	char small[64], *buf = small, *after;
	size_t k = 0;
	while (p + k < end && number_char(p[k]))
		k++;
	if (k >= sizeof small && !(buf = malloc(k + 1)))
		return NULL;
	memcpy(buf, p, k);
	buf[k] = 0;
	*d = strtod(buf, &after);
	size_t took = (size_t)(after - buf);
	if (buf != small)
		free(buf);
	if (took == 0)
		return NULL;
	*whole = took == k;
	return p + took;
}

/* Past the closing quote of the string literal whose opening quote is at p
 * (a backslash takes the byte after it), or NULL when it does not end;
 * *esc when it holds a backslash. */
static const char *string_end(const char *p, const char *end, int *esc)
{
	*esc = 0;
	for (const char *q = p + 1; q < end; q++) {
		if (*q == '\\') {
			if (q + 1 >= end)
				return NULL;
			*esc = 1;
			q++;
		} else if (*q == '"') {
			return q + 1;
		}
	}
	return NULL;
}

/* The literal [p, q) with escapes decoded by cJSON: its node (the caller
 * deletes it), or NULL with *bad where cJSON stopped (NULL: out of memory). */
static cJSON *escaped(const char *p, const char *q, const char **bad)
{
	const char *at = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts(p, (size_t)(q - p), &at, 0);
	*bad = v ? NULL : at;
	return v;
}

/* The string literal [p, q) decoded into b, NUL-terminated: 0, or -1 with
 * *bad where it is wrong (NULL: out of memory). */
static int string_text(const char *p, const char *q, int esc, struct buf *b, const char **bad)
{
	*bad = NULL;
	b->len = 0;
	if (!esc)
		return buf_append(b, p + 1, (size_t)(q - p - 2)) < 0 || buf_put_u8(b, 0) < 0 ? -1 : 0;
	cJSON *v = escaped(p, q, bad);
	if (!v)
		return -1;
	int r = buf_append(b, v->valuestring, strlen(v->valuestring) + 1);
	cJSON_Delete(v);
	return r < 0 ? -1 : 0;
}

static void set_number(cJSON *v, double d)
{
	v->type = cJSON_Number;
	v->valuedouble = d;
	v->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
}

/* A scalar of a span at p: past it, or NULL when it is none a span holds.
 * With el, the element is described there (a string's bytes in str). */
static const char *scalar(const char *p, const char *end, cJSON *el, struct buf *str)
{
	double d = 0;
	const char *q = NULL;
	int type = cJSON_Number, whole, esc = 0;
	if (p >= end)
		return NULL;
	if (end - p >= 4 && memcmp(p, "null", 4) == 0)
		type = cJSON_NULL, q = p + 4;
	else if (end - p >= 5 && memcmp(p, "false", 5) == 0)
		type = cJSON_False, q = p + 5;
	else if (end - p >= 4 && memcmp(p, "true", 4) == 0)
		type = cJSON_True, q = p + 4;
	else if (*p == '"') {
		type = cJSON_String;
		if (!(q = string_end(p, end, &esc)))
			return NULL;
		if (esc && !el) {   /* checked once, when the span is cut out */
			const char *bad;
			cJSON *v = escaped(p, q, &bad);
			if (!v)
				return NULL;
			cJSON_Delete(v);
		}
	} else if (*p == '-' || (*p >= '0' && *p <= '9')) {
		if (!(q = number_end(p, end, &d, &whole)) || !whole)
			return NULL;
	} else
		return NULL;
	if (el) {
		memset(el, 0, sizeof *el);
		el->type = type;
		if (type == cJSON_Number)
			set_number(el, d);
		else if (type == cJSON_True)
			el->valueint = 1;
		else if (type == cJSON_String) {
			const char *bad;
			if (string_text(p, q, esc, str, &bad) < 0)
				el->type = cJSON_Invalid;   /* out of memory: no reader takes it */
			else
				el->valuestring = (char *)str->data;
		}
	}
	return q;
}

/* The span whose '[' is at p: past its ']' with *count its elements, or
 * NULL when the array is not one: empty (a row may be), holding an object,
 * a row within a row, or a number strtod does not take whole. */
static const char *span_end(const char *p, const char *end, int row, uint32_t *count)
{
	const char *s = ws(p + 1, end);
	uint64_t k = 0;
	if (s < end && *s == ']') {
		*count = 0;
		return row ? s + 1 : NULL;
	}
	for (;;) {
		uint32_t c;
		s = s < end && *s == '[' ? (row ? NULL : span_end(s, end, 1, &c)) : scalar(s, end, NULL, NULL);
		if (!s || ++k > INT_MAX)
			return NULL;
		s = ws(s, end);
		if (s < end && *s == ',') {
			s = ws(s + 1, end);
			continue;
		}
		break;
	}
	if (s >= end || *s != ']')
		return NULL;
	*count = (uint32_t)k;
	return s + 1;
}

static void set_span(cJSON *v, const char *p, const char *q, uint32_t count)
{
	v->type = SPAN_TYPE;
	v->valuestring = (char *)p;
	v->valuedouble = (double)(q - p);
	v->valueint = (int)count;
}

/* ---- parsing ---- */

struct parser {
	const char *end;
	const struct jsonpick_keys *keys;
	const char *fail;   /* where the line stopped making sense */
	int depth, oom;
	struct buf key;     /* the key being read */
};

static int value(struct parser *x, const char **p, cJSON **out);

static int fail_at(struct parser *x, const char *at)
{
	x->fail = at;
	return -1;
}

static int no_memory(struct parser *x)
{
	x->oom = 1;
	return -1;
}

static int listed(const char *const *list, size_t n, const char *k, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && memcmp(list[i], k, len) == 0)
			return 1;
	return 0;
}

/* The string at *p; its node in *out when out is given (else only checked). */
static int string(struct parser *x, const char **p, cJSON **out)
{
	int esc;
	const char *bad, *q = string_end(*p, x->end, &esc);
	if (!q)
		return fail_at(x, *p + 1);
	if (out || esc) {
		struct buf b = { 0 };
		if (string_text(*p, q, esc, &b, &bad) < 0) {
			buf_free(&b);
			return bad ? fail_at(x, bad) : no_memory(x);
		}
		if (out) {
			if (!(*out = cJSON_CreateNull())) {
				buf_free(&b);
				return no_memory(x);
			}
			(*out)->type = cJSON_String;
			(*out)->valuestring = (char *)b.data;   /* cJSON frees it */
		} else
			buf_free(&b);
	}
	*p = q;
	return 0;
}

static int append(cJSON *parent, cJSON *item)
{
	return cJSON_AddItemToArray(parent, item) ? 0 : -1;
}

/*
 * A container at *p ('[' or '{') up to its close: each element through
 * elem (which reads it and, when out is given, makes its node in *item, or
 * leaves *item NULL to drop it), separated by commas; *out, when given, the
 * container's node, made by make.
 */
static int container(struct parser *x, const char **p, char close, cJSON *(*make)(void),
		     int (*elem)(struct parser *x, const char **p, int building, cJSON **item), cJSON **out)
{
	const char *s = *p;
	if (x->depth >= CJSON_NESTING_LIMIT)
		return fail_at(x, s);
	if (out && !(*out = make()))
		return no_memory(x);
	x->depth++;
	s = ws(s + 1, x->end);
	if (!(s < x->end && *s == close)) {
		for (;;) {
			cJSON *item = NULL;
			if (elem(x, &s, out != NULL, &item) < 0) {
				cJSON_Delete(item);
				return -1;
			}
			if (item && append(*out, item) < 0) {
				cJSON_Delete(item);
				return no_memory(x);
			}
			s = ws(s, x->end);
			if (s < x->end && *s == ',') {
				s = ws(s + 1, x->end);
				continue;
			}
			break;
		}
		if (s >= x->end || *s != close)
			return fail_at(x, s);
	}
	x->depth--;
	*p = s + 1;
	return 0;
}

static int array_elem(struct parser *x, const char **p, int building, cJSON **item)
{
	return value(x, p, building ? item : NULL);
}

static int array(struct parser *x, const char **p, cJSON **out)
{
	return container(x, p, ']', cJSON_CreateArray, array_elem, out);
}

/* A member's value: a span where its key asks for one and it is one. */
static int member(struct parser *x, const char **p, int span, cJSON **out)
{
	uint32_t count;
	const char *q;
	/* a span is two deep at most: within cJSON's nesting limit */
	if (span && *p < x->end && **p == '[' && x->depth + 2 < CJSON_NESTING_LIMIT &&
	    (q = span_end(*p, x->end, 0, &count))) {
		if (!(*out = cJSON_CreateNull()))
			return no_memory(x);
		set_span(*out, *p, q, count);
		*p = q;
		return 0;
	}
	return value(x, p, out);
}

/* A key that is an integer as strtol reads it whole (blanks and a sign
 * before it allowed), as a reader of a dictionary keyed by ids reads it. */
static int integer(const char *k)
{
	char *end;
	strtol(k, &end, 10);
	return end != k && *end == 0;
}

/* The key at *p, decoded into x->key when it is needed: whether to keep
 * the member (*keep), and as a span (*span). */
static int key(struct parser *x, const char **p, int building, int *keep, int *span)
{
	int esc;
	const char *bad, *s = *p, *q = string_end(s, x->end, &esc);
	*keep = *span = 0;
	if (!q)
		return fail_at(x, s + 1);
	if (building || esc) {
		if (string_text(s, q, esc, &x->key, &bad) < 0)
			return bad ? fail_at(x, bad) : no_memory(x);
		const char *k = (const char *)x->key.data;
		size_t len = strlen(k);
		const struct jsonpick_keys *ks = x->keys;
		*keep = building && (!ks || !ks->keep || listed(ks->keep, ks->n_keep, k, len) ||
				     (ks->keep_numbers && integer(k)));
		*span = *keep && ks && listed(ks->spans, ks->n_spans, k, len);
	}
	*p = q;
	return 0;
}

/* "key": value, its node named and kept when its key asks for it. */
static int object_elem(struct parser *x, const char **p, int building, cJSON **item)
{
	int keep, span;
	const char *s = *p;
	char *name = NULL;   /* x->key is the next key's once the value is read */
	if (s >= x->end || *s != '"')
		return fail_at(x, s + 1);   /* where cJSON says a key is missing */
	if (key(x, &s, building, &keep, &span) < 0)
		return -1;
	if (keep && !(name = strdup((const char *)x->key.data)))
		return no_memory(x);
	s = ws(s, x->end);
	if (s >= x->end || *s != ':') {
		free(name);
		return fail_at(x, s);
	}
	s = ws(s + 1, x->end);
	if (member(x, &s, span, keep ? item : NULL) < 0) {
		free(name);
		return -1;
	}
	if (*item)
		(*item)->string = name;
	else
		free(name);
	*p = s;
	return 0;
}

static int object(struct parser *x, const char **p, cJSON **out)
{
	return container(x, p, '}', cJSON_CreateObject, object_elem, out);
}

/* The value at *p; its node in *out when out is given (else only checked).
 * On failure *out may hold what was built: the caller deletes it. */
static int value(struct parser *x, const char **p, cJSON **out)
{
	const char *s = *p, *end = x->end;
	double d = 0;
	int whole, type = -1;
	if (s >= end)
		return fail_at(x, s);
	if (end - s >= 4 && memcmp(s, "null", 4) == 0)
		type = cJSON_NULL, *p = s + 4;
	else if (end - s >= 5 && memcmp(s, "false", 5) == 0)
		type = cJSON_False, *p = s + 5;
	else if (end - s >= 4 && memcmp(s, "true", 4) == 0)
		type = cJSON_True, *p = s + 4;
	else if (*s == '-' || (*s >= '0' && *s <= '9')) {
		const char *q = number_end(s, end, &d, &whole);
		if (!q)
			return fail_at(x, s);
		type = cJSON_Number, *p = q;
	} else if (*s == '"')
		return string(x, p, out);
	else if (*s == '[')
		return array(x, p, out);
	else if (*s == '{')
		return object(x, p, out);
	else
		return fail_at(x, s);
	if (out) {
		if (!(*out = cJSON_CreateNull()))
			return no_memory(x);
		if (type == cJSON_Number)
			set_number(*out, d);
		else if (type == cJSON_True)
			(*out)->type = cJSON_True, (*out)->valueint = 1;
		else
			(*out)->type = type;
	}
	return 0;
}

cJSON *jsonpick_parse(const char *text, size_t n, const struct jsonpick_keys *keys, const char **end, size_t *bad_at)
{
	struct parser x = { .end = text + n, .keys = keys };
	const char *s = text;
	cJSON *v = NULL;
	*bad_at = 1;
	if (n == 0)
		return NULL;
	if (n > 4 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)   /* cJSON skips a byte order mark */
		s += 3;
	s = ws(s, x.end);
	int r = value(&x, &s, &v);
	buf_free(&x.key);
	if (r < 0) {
		cJSON_Delete(v);
		*bad_at = x.oom ? 0 : (x.fail >= x.end ? n - 1 : (size_t)(x.fail - text)) + 1;
		return NULL;
	}
	*end = s;
	return v;
}

/* ---- reading spans ---- */

int jsonpick_is_span(const cJSON *v)
{
	return v && v->type == SPAN_TYPE;
}

int jsonpick_is_array(const cJSON *v)
{
	return cJSON_IsArray(v) || jsonpick_is_span(v);
}

int jsonpick_size(const cJSON *v)
{
	return jsonpick_is_span(v) ? v->valueint : cJSON_GetArraySize(v);
}

const cJSON *jsonpick_iter_start(struct jsonpick_iter *it, const cJSON *arr)
{
	memset(it, 0, sizeof *it);
	it->span = jsonpick_is_span(arr);
	if (!it->span) {
		it->node = cJSON_IsArray(arr) ? arr->child : NULL;
		return it->node;
	}
	it->p = arr->valuestring + 1;
	it->end = arr->valuestring + (size_t)arr->valuedouble;
	return jsonpick_iter_next(it);
}

const cJSON *jsonpick_iter_next(struct jsonpick_iter *it)
{
	if (!it->span) {
		const cJSON *v = it->node;
		it->node = v ? v->next : NULL;
		return it->node;
	}
	const char *s = ws(it->p, it->end), *q;
	uint32_t count;
	if (s >= it->end || *s == ']')
		return NULL;
	if (*s == '[') {
		q = span_end(s, it->end, 1, &count);
		memset(&it->el, 0, sizeof it->el);
		if (q)
			set_span(&it->el, s, q, count);
	} else
		q = scalar(s, it->end, &it->el, &it->str);
	if (!q) {
		/* checked when the span was cut out: only memory ran out (a
		 * number of many digits), and no reader takes the element */
		memset(&it->el, 0, sizeof it->el);
		it->el.type = cJSON_Invalid;
		it->p = it->end;
		return &it->el;
	}
	s = ws(q, it->end);
	it->p = s < it->end && *s == ',' ? s + 1 : s;
	return &it->el;
}

void jsonpick_iter_end(struct jsonpick_iter *it)
{
	buf_free(&it->str);
	memset(it, 0, sizeof *it);
}

const cJSON *jsonpick_at(const cJSON *arr, int i, cJSON *tmp)
{
	if (!jsonpick_is_span(arr))
		return cJSON_IsArray(arr) ? cJSON_GetArrayItem(arr, i) : NULL;
	struct jsonpick_iter it;
	if (i < 0)
		return NULL;
	const cJSON *v = jsonpick_iter_start(&it, arr);
	for (; v && i > 0; i--)
		v = jsonpick_iter_next(&it);
	if (v) {
		*tmp = *v;
		if (cJSON_IsString(tmp)) {   /* its bytes go with the iterator */
			tmp->type = cJSON_Invalid;
			tmp->valuestring = NULL;
		}
		v = tmp;
	}
	jsonpick_iter_end(&it);
	return v;
}
