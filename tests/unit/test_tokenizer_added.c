/*
 * test_tokenizer_added: added tokens with each of tokenizers' flags (special,
 * normalized, single_word, lstrip, rstrip) next to white space, words and
 * one another, against the ids Hugging Face tokenizers 0.23.2 gives
 * (tests/data/tokadded: make.mjs wrote the tokenizer and expected.jsonl).
 * Neither real tokenizer uses these flags; a model's own tokenizer.json may.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "model/tokenizer.h"

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char path[4096];
	struct err e = { 0 };
	snprintf(path, sizeof path, "%s/tests/data/tokadded/tokenizer.json", top ? top : ".");
	struct tokenizer *t = tok_load(path, &e);
	if (!ok(t != NULL, "the fixture's tokenizer loads")) {
		diag("%s", e.msg);
		return tap_done();
	}
	snprintf(path, sizeof path, "%s/tests/data/tokadded/expected.jsonl", top ? top : ".");
	FILE *f = fopen(path, "r");
	if (!ok(f != NULL, "%s opens", path))
		return tap_done();
	char *line = NULL;
	size_t cap = 0;
	int lines = 0, same = 0;
	while (getline(&line, &cap, f) > 0) {
		lines++;
		cJSON *j = cJSON_Parse(line);
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(j, "text"));
		const cJSON *want = cJSON_GetObjectItem(j, "ids");
		struct tok_ids got = { 0 };
		if (!text || !cJSON_IsArray(want))
			diag("line %d: no text or ids", lines);
		else if (tok_encode(t, text, strlen(text), &got, &e) < 0) {
			diag("line %d: %s", lines, e.msg);
		} else {
			size_t n = (size_t)cJSON_GetArraySize(want), k = 0;
			while (k < n && k < got.n && got.v[k] == cJSON_GetArrayItem(want, (int)k)->valueint)
				k++;
			if (k == n && k == got.n)
				same++;
			else
				diag("line %d: %zu ids, want %zu; first difference at %zu: got %d, want %d", lines,
				     got.n, n, k, k < got.n ? got.v[k] : -1,
				     k < n ? cJSON_GetArrayItem(want, (int)k)->valueint : -1);
		}
		tok_ids_free(&got);
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	ok(lines >= 800 && same == lines, "%d of %d texts encode to tokenizers' ids", same, lines);

	/* The case that once differed, spelled out: <|end|> strips the two
	 * spaces after it, and " ##", which begins at the second of them, is
	 * still found, as tokenizers' scan goes on from the end of <|end|>. */
	struct tok_ids ids = { 0 };
	ok(tok_encode(t, "<|end|>  ## b", 13, &ids, &e) == 0 && ids.n == 4 && ids.v[0] == 263 && ids.v[1] == 267 &&
	   ids.v[2] == 32 && ids.v[3] == 98, "an added token inside the white space an rstrip token took is kept");
	tok_ids_free(&ids);

	/* lstrip takes the white space that begins the text (expected.jsonl's
	 * ids), and stops there even where a space lies before it in memory */
	static const char mem[] = "x    <|b|> ##cat";
	ok(tok_encode(t, mem + 2, strlen(mem + 2), &ids, &e) == 0 && ids.n == 3 && ids.v[0] == 266 && ids.v[1] == 267 &&
	   ids.v[2] == 269, "lstrip stops at the start of the text");
	tok_ids_free(&ids);
	tok_free(t);
	return tap_done();
}
