/* libFuzzer target: tokenizer.json loading on arbitrary bytes; a file that
 * loads encodes and decodes a few texts without fault, and every id it
 * encodes to decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const texts[] = { "", "Hello, world! 123", "<|end|>  ## b", "a\n\n\tb  c", "né\u00e9 <x> <y>" };
	struct err e;
	struct tokenizer *t = tok_load_mem((const char *)data, size, "fuzz", &e);
	if (!t)
		return 0;
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		struct tok_ids ids = { 0 };
		struct buf out = { 0 };
		if (tok_encode(t, texts[i], strlen(texts[i]), &ids, &e) == 0 &&
		    tok_decode(t, ids.v, ids.n, 0, &out, &e) < 0 && strstr(e.msg, "not in the tokenizer"))
			abort();   /* an id the encoder made that the decoder does not know */
		tok_ids_free(&ids);
		buf_free(&out);
	}
	tok_free(t);
	return 0;
}
