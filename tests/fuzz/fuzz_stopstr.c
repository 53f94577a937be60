/* libFuzzer target: stop strings (model/stopstr.h) against the whole text.
 * An input is a tokenizer choice, up to three stop strings and a response's
 * ids; the response must end where decoding all of it at every token first
 * finds a stop string, though stopstr decodes only a window of its last
 * tokens. The tokenizers are the committed fixtures: byte-level BPE with
 * added tokens (tokadded) and SentencePiece-style with byte fallback
 * (tokspm/legacy), found from the top of the tree (the directory make runs
 * the fuzzers in). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/stopstr.h"

enum { MAX_IDS = 300 };

static struct tokenizer *toks[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *files[2] = { "tests/data/tokadded/tokenizer.json", "tests/data/tokspm/legacy/tokenizer.json" };
	(void)argc, (void)argv;
	for (int i = 0; i < 2; i++) {
		struct err e;
		if (!(toks[i] = tok_load(files[i], &e))) {
			fprintf(stderr, "fuzz_stopstr: %s\n", e.msg);
			abort();   /* run from elsewhere than the top of the tree: nothing would be checked */
		}
	}
	return 0;
}

/* The first n at which decode(ids[0..n)) holds one of the stops, or 0. */
static int whole_text(const struct tokenizer *t, const int32_t *ids, int len, const char *const *stops, int nstops)
{
	struct buf b = { 0 };
	struct err e;
	int at = 0;
	for (int n = 1; n <= len && !at; n++) {
		buf_reset(&b);
		if (tok_decode(t, ids, (size_t)n, 1, &b, &e) < 0)
			abort();   /* ids are taken modulo the vocabulary */
		for (int i = 0; i < nstops && !at; i++)
			if (b.len && memmem(b.data, b.len, stops[i], strlen(stops[i])))
				at = n;
	}
	buf_free(&b);
	return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const struct tokenizer *t = toks[data[0] & 1];
	int nstops = 1 + (data[0] >> 1) % 3;
	size_t at = 1;
	char stops[3][33];
	const char *sp[3];
	/* each stop: a length byte (1 to 32) and its bytes, NULs made 0x01 */
	for (int i = 0; i < nstops; i++) {
		if (at >= size)
			return 0;
		size_t len = 1 + data[at++] % 32;
		if (at + len > size)
			return 0;
		for (size_t j = 0; j < len; j++)
			stops[i][j] = data[at + j] ? (char)data[at + j] : 1;
		stops[i][len] = 0;
		sp[i] = stops[i];
		at += len;
	}
	int32_t ids[MAX_IDS];
	int n = 0;
	uint32_t V = tok_vocab_size(t);
	for (; at + 1 < size && n < MAX_IDS; at += 2)
		ids[n++] = (int32_t)(((uint32_t)data[at] << 8 | data[at + 1]) % V);
	if (n == 0)
		return 0;
	struct stopstr s;
	struct err e;
	if (stopstr_init(&s, t, sp, nstops, &e) < 0)
		abort();
	int windowed = 0;
	for (int k = 1; k <= n && !windowed; k++)
		if (stopstr_hit(&s, ids, k))
			windowed = k;
	if (stopstr_error(&s) || windowed != whole_text(t, ids, n, sp, nstops))
		abort();
	stopstr_free(&s);
	return 0;
}
