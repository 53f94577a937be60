/* tokenizer_json.c: tokenizer.json's values as tokenizers reads them (what a value is, a flag, an
 * id), and its text: how the ids are written, which cJSON does not keep, and where a byte is. */
#include "model/tokenizer_impl.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a JSON value is, for messages that say what was found instead. */
const char *tok_json_kind(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsTrue(v))
		return "true";
	if (cJSON_IsFalse(v))
		return "false";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

/* A true/false field of the object at path: 1 or 0, or -1 with the message.
 * tokenizers refuses a file that lacks a field it requires (need), or has
 * anything but true or false (or null, for optional ones) in one. */
int tok_get_flag(const cJSON *o, const char *k, int need, int dflt, const char *path, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	if (!v && need)
		return err_set(e, "%s: no \"%s\" (tokenizers requires it)", path, k);
	if (!v || (!need && cJSON_IsNull(v)))
		return dflt;
	return err_set(e, "%s.%s: expected true or false, not %s", path, k, tok_json_kind(v));
}

/* An id as tokenizers reads one, a whole number from 0 to 2^32 - 1 (ids the
 * table cannot hold are for grow_ids, in tokenizer_load.c, to refuse): 0, or
 * -1 with the message. */
int tok_get_id(const cJSON *v, uint32_t *id, struct err *e)
{
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= UINT32_MAX &&
	    v->valuedouble == (double)(uint32_t)v->valuedouble) {
		*id = (uint32_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsNumber(v))
		return err_set(e, "expected an id (a whole number from 0 to 4294967295), not %.17g", v->valuedouble);
	return err_set(e, "expected an id (a whole number from 0 to 4294967295), not %s", tok_json_kind(v));
}

/* ---- how the ids are written, which cJSON does not keep ---- */

static const char *jws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Past the string that starts at p, its opening quote. */
static const char *jstr(const char *p, const char *end)
{
	for (p++; p < end && *p != '"'; p++)
		if (*p == '\\')
			p++;
	return p < end ? p + 1 : end;
}

/* Past the value at p (the text is valid JSON: cJSON has read it). */
static const char *jskip(const char *p, const char *end)
{
	if (p >= end)
		return end;
	if (*p == '"')
		return jstr(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != ']' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\n' &&
		       *p != '\r')
			p++;
		return p;
	}
	for (int depth = 0; p < end;) {
		if (*p == '"') {
			p = jstr(p, end);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return end;
}

/* The next member of an object or element of an array: p is past its '{'
 * or '[', or past the last value. Where the value starts, with the key
 * (quotes included) in *k, *kl for an object; NULL at the end. */
static const char *jnext(const char *p, const char *end, int object, const char **k, size_t *kl)
{
	p = jws(p, end);
	if (p < end && *p == ',')
		p = jws(p + 1, end);
	if (p >= end || *p == '}' || *p == ']')
		return NULL;
	if (object) {
		*k = p;
		p = jstr(p, end);
		*kl = (size_t)(p - *k);
		p = jws(p, end);
		if (p < end && *p == ':')
			p++;
	}
	return jws(p, end);
}

/* A number at p that tok_get_id takes but that is written otherwise than as
 * digits only ("258.0", "2.58e2", "-0"): how far it goes, or 0 (digits, a
 * number tok_get_id refuses, or no number). */
static size_t float_id(const char *p, const char *end)
{
	if (p >= end || !(*p == '-' || (*p >= '0' && *p <= '9')))
		return 0;
	const char *q = jskip(p, end);
	const char *r = p;
	while (r < q && *r >= '0' && *r <= '9')
		r++;
	if (r == q || q - p >= 64)
		return 0;
	char num[64];
	memcpy(num, p, (size_t)(q - p));
	num[q - p] = 0;
	double d = strtod(num, NULL);
	return d >= 0 && d <= UINT32_MAX && d == (double)(uint32_t)d ? (size_t)(q - p) : 0;
}

/* tokenizers reads ids as u32 and refuses one written as a float (258.0,
 * 2.58e2, -0), which cJSON reads as the whole number it equals: look at how
 * model.vocab's and added_tokens' ids are written. */
int tok_check_id_text(const char *json, size_t n, struct err *e)
{
	const char *end = json + n, *p = jws(json, end), *v, *k, *k2, *v2, *v3;
	size_t kl, kl2, fl;
	if (p >= end || *p != '{')
		return 0;
	for (p++; (v = jnext(p, end, 1, &k, &kl)); p = jskip(v, end)) {
		if (kl == 7 && memcmp(k, "\"model\"", 7) == 0 && *v == '{') {
			for (const char *q = v + 1; (v2 = jnext(q, end, 1, &k, &kl)); q = jskip(v2, end)) {
				if (kl != 7 || memcmp(k, "\"vocab\"", 7) != 0 || *v2 != '{')
					continue;
				for (const char *r = v2 + 1; (v3 = jnext(r, end, 1, &k2, &kl2)); r = jskip(v3, end))
					if ((fl = float_id(v3, end)))
						return err_set(e, "model.vocab[%.*s]: id %.*s is not written as a whole number, "
							       "and tokenizers refuses it (it reads ids as u32)",
							       (int)(kl2 < 66 ? kl2 : 66), k2, (int)(fl < 32 ? fl : 32), v3);
			}
		} else if (kl == 14 && memcmp(k, "\"added_tokens\"", 14) == 0 && *v == '[') {
			size_t at = 0;
			for (const char *q = v + 1; (v2 = jnext(q, end, 0, NULL, NULL)); q = jskip(v2, end), at++) {
				if (*v2 != '{')
					continue;
				for (const char *r = v2 + 1; (v3 = jnext(r, end, 1, &k2, &kl2)); r = jskip(v3, end))
					if (kl2 == 4 && memcmp(k2, "\"id\"", 4) == 0 && (fl = float_id(v3, end)))
						return err_set(e, "added_tokens[%zu].id: %.*s is not written as a whole number, "
							       "and tokenizers refuses it (it reads ids as u32)", at,
							       (int)(fl < 32 ? fl : 32), v3);
			}
		}
	}
	return 0;
}

/* Line and byte of p in json[0..n), for messages. */
void tok_json_where(const char *json, size_t n, const char *p, char *out, size_t cap)
{
	size_t at = (size_t)(p - json), line = 1;
	for (size_t i = 0; i < at && i < n; i++)
		line += json[i] == '\n';
	snprintf(out, cap, "line %zu (byte %zu)", line, at);
}
