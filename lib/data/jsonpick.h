/*
 * jsonpick.h: one JSON line read into a cJSON tree that holds only what its
 * reader needs, for lines of many megabytes (grpo-collect's importers).
 *
 * cJSON makes a node of about 80 bytes for every value, so a server's answer
 * of a million tokens (its token ids, logprobs, token strings, top logprobs,
 * text offsets) took ten times its size as a tree. jsonpick_parse reads the
 * line as cJSON_ParseWithLengthOpts does (the same values accepted and
 * refused at the same bytes; Python's NaN and Infinity are the caller's, to
 * rewrite with json_fix_nonfinite() of data/jsonview.h first, as for
 * cJSON), with two differences:
 *
 *  - keys: a member of an object, at any depth, whose key is not in
 *    keys->keep is left out of the tree (its value is still checked: a line
 *    cJSON refuses is refused), unless keys->keep_numbers is set and the key
 *    is an integer as strtol reads it (a token id, as dictionaries keyed by
 *    id have);
 *  - spans: the value of a member whose key is in keys->spans, when it is a
 *    non-empty array of scalars (numbers, strings, null, true, false) or of
 *    arrays of scalars (SGLang's [logprob, id, text] triples, TRL's rows),
 *    becomes one node that points at the array's text in the line (type
 *    cJSON_Raw | cJSON_IsReference, valuestring its '[', valuedouble its
 *    length, valueint its element count), read element by element with the
 *    functions below. A number in a span must be one that strtod reads
 *    whole; an array with another is parsed into nodes, as is one of more
 *    than INT_MAX elements.
 *
 * The spans point into text, so it must outlive the tree. data/jsonview.h's
 * getters (json_get_i32_array and its kin) read spans as they read parsed
 * arrays, straight into their arrays.
 */
#ifndef GRPO_JSONPICK_H
#define GRPO_JSONPICK_H

#include <cJSON.h>
#include <stddef.h>

#include "base/buf.h"

struct jsonpick_keys {
	const char *const *keep;    /* (n_keep) members kept; NULL: every member */
	size_t n_keep;
	int keep_numbers;           /* and members whose key is an integer */
	const char *const *spans;   /* (n_spans) members whose arrays become spans */
	size_t n_spans;
};

/*
 * Parse text[0..n) as one JSON value. *end is set past the value (what comes
 * after is the caller's to judge). NULL on failure, with *bad_at the byte,
 * from 1, near which the line stopped making sense, or 0 when memory ran out.
 */
struct cJSON *jsonpick_parse(const char *text, size_t n, const struct jsonpick_keys *keys, const char **end,
			     size_t *bad_at);

/* A span node; an array, parsed or a span; its element count (as cJSON_IsArray
 * and cJSON_GetArraySize, which see a span as neither). */
int jsonpick_is_span(const struct cJSON *v);
int jsonpick_is_array(const struct cJSON *v);
int jsonpick_size(const struct cJSON *v);

/*
 * The elements of an array, parsed or a span. A parsed array's are its
 * nodes; a span's come one at a time in el, valid until the next call: a
 * number, string, null, true or false node as cJSON would have made it, or
 * for a row of a span, a span node of the row; where memory ran out for
 * one, a cJSON_Invalid node, the last. Free with jsonpick_iter_end.
 *
 *   struct jsonpick_iter it;
 *   for (v = jsonpick_iter_start(&it, arr); v; v = jsonpick_iter_next(&it)) ...
 *   jsonpick_iter_end(&it);
 */
struct jsonpick_iter {
	const struct cJSON *node;   /* a parsed array's current node */
	const char *p, *end;        /* a span's text after the current element */
	int span;
	struct cJSON el;            /* a span's current element */
	struct buf str;             /* its string's bytes */
};
const struct cJSON *jsonpick_iter_start(struct jsonpick_iter *it, const struct cJSON *arr);
const struct cJSON *jsonpick_iter_next(struct jsonpick_iter *it);
void jsonpick_iter_end(struct jsonpick_iter *it);

/*
 * Element i of an array, parsed or a span (cJSON_GetArrayItem, but NULL
 * for what is not an array): a parsed array's node, or a span's element
 * described in *tmp, which holds no memory of its own. A span's string
 * element reads as cJSON_Invalid here: iterate for strings.
 */
const struct cJSON *jsonpick_at(const struct cJSON *arr, int i, struct cJSON *tmp);

#endif
