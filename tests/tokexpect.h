/*
 * tokexpect.h: a tokenizer against the expected.jsonl that a fixture's
 * make.mjs writes with Hugging Face tokenizers (tests/data/tokspm,
 * tests/data/tokregex), one line a case:
 *
 *   {"text": T, "ids": [...], "dec": D, "dec_skip": S}   T encodes to ids
 *   {"ids": [...], "dec": D, "dec_skip": S}              random ids
 *
 * where D and S are tokenizers' decode of the ids without and with
 * skip_special_tokens. A line may carry more, which the caller's `extra`
 * checks. Header-only, as tap.h, which it needs included first.
 */
#ifndef TOKEXPECT_H
#define TOKEXPECT_H

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

/* 1 if got is want's ids; *at: the first place they differ. */
static int tokexpect_same_ids(const struct tok_ids *got, const cJSON *want, size_t *at)
{
	size_t n = (size_t)cJSON_GetArraySize(want), k = 0;
	while (k < n && k < got->n && got->v[k] == cJSON_GetArrayItem(want, (int)k)->valueint)
		k++;
	*at = k;
	return k == n && k == got->n;
}

/* 1 if decoding ids (skip_special or not) gives want's text. */
static int tokexpect_same_text(const struct tokenizer *t, const int32_t *ids, size_t n, int skip, const cJSON *want,
			       int line)
{
	struct buf b = { 0 };
	struct err e = { 0 };
	const char *w = cJSON_GetStringValue(want);
	int rc = tok_decode(t, ids, n, skip, &b, &e);
	int same = rc == 0 && w && b.len == strlen(w) && (b.len == 0 || memcmp(b.data, w, b.len) == 0);
	if (!same)
		diag("line %d: decode%s gives \"%.*s\"%s%s, want \"%s\"", line, skip ? " (skip special)" : "",
		     (int)(b.len < 200 ? b.len : 200), b.len ? (const char *)b.data : "", rc ? ": " : "",
		     rc ? e.msg : "", w ? w : "(none)");
	buf_free(&b);
	return same;
}

/* A check of a text line beyond its ids: 1 passed, 0 failed, -1 the line
 * has nothing for it. */
typedef int (*tokexpect_extra)(const struct tokenizer *t, const char *text, const cJSON *line, int lineno);

/* Compare the tokenizer at path with the lines of expected (at least
 * min_lines): its encoding of each text, its decoding of each id list, and
 * extra (what: its test's name) where given. */
static void tokexpect_check(const char *name, const char *path, const char *expected, int min_lines,
			    tokexpect_extra extra, const char *what) __attribute__((unused));
static void tokexpect_check(const char *name, const char *path, const char *expected, int min_lines,
			    tokexpect_extra extra, const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = tok_load(path, &e);
	if (!ok(t != NULL, "%s: the tokenizer loads", name)) {
		diag("%s", e.msg);
		return;
	}
	FILE *f = fopen(expected, "r");
	if (!ok(f != NULL, "%s opens", expected)) {
		tok_free(t);
		return;
	}
	char *line = NULL;
	size_t cap = 0;
	int lines = 0, texts = 0, enc_same = 0, dec_same = 0, shown = 0, extras = 0, extra_same = 0;
	while (getline(&line, &cap, f) > 0) {
		lines++;
		cJSON *j = cJSON_Parse(line);
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(j, "text"));
		const cJSON *want = cJSON_GetObjectItem(j, "ids");
		size_t n = (size_t)cJSON_GetArraySize(want), k;
		int32_t *ids = malloc((n + 1) * sizeof *ids);
		for (k = 0; k < n; k++)
			ids[k] = cJSON_GetArrayItem(want, (int)k)->valueint;
		if (text) {
			struct tok_ids got = { 0 };
			texts++;
			if (tok_encode(t, text, strlen(text), &got, &e) < 0)
				diag("line %d: %s", lines, e.msg);
			else if (tokexpect_same_ids(&got, want, &k))
				enc_same++;
			else if (shown++ < 10)
				diag("line %d: %zu ids, want %zu; first difference at %zu: got %d, want %d", lines, got.n, n,
				     k, k < got.n ? got.v[k] : -1, k < n ? cJSON_GetArrayItem(want, (int)k)->valueint : -1);
			tok_ids_free(&got);
			int r = extra ? extra(t, text, j, lines) : -1;
			extras += r >= 0;
			extra_same += r > 0;
		}
		if (tokexpect_same_text(t, ids, n, 0, cJSON_GetObjectItem(j, "dec"), lines) &&
		    tokexpect_same_text(t, ids, n, 1, cJSON_GetObjectItem(j, "dec_skip"), lines))
			dec_same++;
		free(ids);
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	ok(lines >= min_lines && enc_same == texts, "%s: %d of %d texts encode to tokenizers' ids", name, enc_same, texts);
	if (extras)
		ok(extra_same == extras, "%s: %s: %d of %d texts", name, what, extra_same, extras);
	ok(dec_same == lines, "%s: %d of %d id lists decode to tokenizers' text, with and without special tokens", name,
	   dec_same, lines);
	tok_free(t);
}

#endif
