/*
 * stopstr.h: stop strings, text that ends a sampled response once it
 * appears in it (vLLM's and the OpenAI API's "stop").
 *
 * A response's text is its tokens decoded as a reward reads them
 * (tok_decode with special tokens left out). stopstr_hit() is asked after
 * each new token and says whether a stop string now occurs in that text
 * ending in what the new token added: the token that completed it is the
 * response's last, kept with its logprob, and nothing is cut, so the
 * trainer sees exactly the tokens that were sampled (vLLM keeps them too,
 * cutting only its text).
 *
 * Each check decodes a window of the last tokens, not the whole response,
 * so that it costs the same at token 2,000 as at token 2: a window long
 * enough that its text holds every stop string whole, plus some bytes of
 * margin before it where decoding from the middle of a response can differ
 * from decoding all of it (a UTF-8 character split at the window's start,
 * the leading space a SentencePiece decoder strips). A window never starts
 * inside a run of byte tokens (<0x..>, SentencePiece's byte fallback),
 * which the decoder reads as one: a run that is not UTF-8 as a whole
 * decodes to a U+FFFD a byte, even where its tail alone would be text.
 * Most tokens cannot complete a stop string at all: unless the text of the
 * last four (which holds every byte a new token can add or complete, a
 * UTF-8 character being at most four bytes) has the last byte of one, the
 * window is not decoded; that costs about a tenth as much.
 *
 * A failed decode (an id the tokenizer does not have, memory) cannot be
 * told to the sampler that asked: it ends the response (1), and
 * stopstr_error() then has the message, so the caller fails its run before
 * it publishes anything. Not thread-safe: one sampler asks at a time.
 */
#ifndef GRPO_STOPSTR_H
#define GRPO_STOPSTR_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/tokenizer.h"

/* The most stop strings and the longest one, in bytes, a run may give. */
#define STOPSTR_MAX 16
#define STOPSTR_MAX_LEN 256

struct stopstr {
	const struct tokenizer *tok;
	const char *s[STOPSTR_MAX];
	size_t len[STOPSTR_MAX];
	int n;
	size_t longest;
	unsigned char ends[256];  /* 1 for a byte that ends a stop string */
	int32_t bytes[256];       /* the ids of the byte tokens <0x00>..<0xFF>, sorted; */
	int nbytes;               /* none in a byte-level BPE */
	struct buf now, before;   /* the window's text with and without the new token */
	struct err e;
	int failed;
};

/* Set up s for the n strings strs (each 1 to STOPSTR_MAX_LEN bytes, kept by
 * the caller) over tok. -1 with e set when they are bad. */
int stopstr_init(struct stopstr *s, const struct tokenizer *tok, const char *const *strs, int n, struct err *e);
void stopstr_free(struct stopstr *s);

/* 1 when tokens[0..n) now hold a stop string that tokens[0..n-1) did not
 * (or a decode failed, see above); 0 otherwise. */
int stopstr_hit(struct stopstr *s, const int32_t *tokens, int n);

/* The sampler's callback (gen_params.stop_after): ctx is a struct stopstr. */
int stopstr_after(void *ctx, const int32_t *tokens, int n);

/* The message of the first failed decode, or NULL when none failed. */
const char *stopstr_error(const struct stopstr *s);

#endif
