/* libFuzzer target: text through the real Llama 3 and Qwen3 tokenizers
 * ($GRPO_SHARED/data/tokenizers, else ../shared from the top of the tree, as
 * make fuzz runs it; without them every input passes, and the target says so
 * once). Encoding must fail exactly on invalid UTF-8. On valid text, every id
 * is in the vocabulary and decoding gives the text back: exactly for Llama 3,
 * which has no normalizer; for Qwen3, whose normalizer is NFC, a second round
 * trip gives the first one's text unchanged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "model/tokenizer.h"

enum { MAX_TEXT = 4096 };

static struct tokenizer *toks[2];   /* llama3 (exact), qwen3 (NFC) */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *shared = getenv("GRPO_SHARED");
	const char *names[2] = { "llama3", "qwen3" };
	char path[4096];
	for (int i = 0; i < 2; i++) {
		struct err e;
		snprintf(path, sizeof path, "%s/data/tokenizers/%s/tokenizer.json", shared ? shared : "../shared", names[i]);
		toks[i] = tok_load(path, &e);
		if (!toks[i])
			fprintf(stderr, "fuzz_tokenizer: %s: skipped (%s)\n", names[i], e.msg);
	}
	return 0;
}

static int same(const void *a, size_t an, const void *b, size_t bn)
{
	return an == bn && (an == 0 || memcmp(a, b, an) == 0);   /* an empty buf's data is NULL */
}

static void round_trip(const struct tokenizer *t, const char *text, size_t n, int exact, int valid)
{
	struct tok_ids ids = { 0 }, again = { 0 };
	struct buf out = { 0 }, out2 = { 0 };
	struct err e;
	int r = tok_encode(t, text, n, &ids, &e);
	if ((r == 0) != valid)
		abort();   /* invalid UTF-8 accepted, or valid text refused */
	if (r == 0) {
		uint32_t V = tok_vocab_size(t);
		for (size_t i = 0; i < ids.n; i++)
			if (ids.v[i] < 0 || (uint32_t)ids.v[i] >= V)
				abort();
		if (tok_decode(t, ids.v, ids.n, 0, &out, &e) < 0)
			abort();
		if (exact && !same(out.data, out.len, text, n))
			abort();
		if (!exact) {
			if (tok_encode(t, (const char *)out.data, out.len, &again, &e) < 0 ||
			    tok_decode(t, again.v, again.n, 0, &out2, &e) < 0)
				abort();
			if (!same(out2.data, out2.len, out.data, out.len))
				abort();
		}
	}
	tok_ids_free(&ids), tok_ids_free(&again);
	buf_free(&out), buf_free(&out2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_TEXT)
		return 0;
	int valid = uni_utf8_check(data, size) == size;
	for (int i = 0; i < 2; i++)
		if (toks[i])
			round_trip(toks[i], (const char *)data, size, i == 0, valid);
	return 0;
}
