/*
 * test_tokenizer_load: tokenizer.json files written by hand, for what the
 * loader refuses and how it says so (test_tokenizer_hf has the real ones).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tap.h"
#include "model/tokenizer.h"

/* Qwen3's pre_tokenizer, as its tokenizer.json has it */
#define PRE "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]}"

/* A byte-level vocabulary: the 256 byte tokens (GPT-2's byte-to-character
 * map) with ids 0 to 255, then extra entries. */
static struct tokenizer *load(const char *extra, const char *added, struct err *e)
{
	char vocab[8192];
	size_t n = 0;
	for (int b = 0, k = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
		unsigned cp = printable ? (unsigned)b : 256u + (unsigned)k++;
		char ch[8];
		if (cp < 0x80)
			snprintf(ch, sizeof ch, "%s%c", cp == '"' || cp == '\\' ? "\\" : "", (char)cp);
		else
			snprintf(ch, sizeof ch, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
		n += (size_t)snprintf(vocab + n, sizeof vocab - n, "%s\"%s\": %d", b ? ", " : "", ch, b);
	}
	size_t cap = strlen(PRE) + strlen(added) + n + strlen(extra) + 256;
	char *json = malloc(cap);
	if (!json)
		return NULL;
	snprintf(json, cap,
		 "{\"normalizer\": null, \"pre_tokenizer\": %s, "
		 "\"decoder\": {\"type\": \"ByteLevel\"}, \"added_tokens\": [%s], "
		 "\"model\": {\"type\": \"BPE\", \"vocab\": {%s%s%s}, \"merges\": []}}", PRE, added, vocab,
		 *extra ? ", " : "", extra);
	struct tokenizer *t = tok_load_mem(json, strlen(json), "tokenizer.json", e);
	free(json);
	return t;
}

int main(void)
{
	struct err e = { "" };
	struct tokenizer *t = load("", "{\"id\": 151643, \"content\": \"<|end|>\", \"special\": true}", &e);
	if (!ok(t != NULL, "a vocab of the 256 bytes with an added token at id 151643 loads"))
		diag("%s", e.msg);
	ok(t && tok_vocab_size(t) == 151644, "its vocabulary size counts to the added token");
	tok_free(t);

	t = load("\"ab\": 2000000000", "", &e);
	ok(!t && strstr(e.msg, "tokenizer.json: model.vocab[\"ab\"]: id 2000000000 is beyond the ids") &&
	   strstr(e.msg, "22.4 GiB"), "one sparse vocab id is refused, saying what it would cost: %s", e.msg);
	tok_free(t);
	t = load("", "{\"id\": 5000000, \"content\": \"<x>\"}", &e);
	ok(!t && strstr(e.msg, "tokenizer.json: added_tokens[0]: id 5000000 is beyond the ids"),
	   "and a sparse added token: %s", e.msg);
	tok_free(t);
	/* a vocab of a few bytes, as examples/addition's: the digits, + and = */
	static const char small[] =
		"{\"normalizer\": null, \"pre_tokenizer\": " PRE ", \"decoder\": {\"type\": \"ByteLevel\"}, "
		"\"added_tokens\": [{\"id\": 12, \"content\": \"<|end|>\", \"special\": true}], "
		"\"model\": {\"type\": \"BPE\", \"vocab\": {\"0\": 0, \"1\": 1, \"2\": 2, \"3\": 3, \"4\": 4, "
		"\"5\": 5, \"6\": 6, \"7\": 7, \"8\": 8, \"9\": 9, \"+\": 10, \"=\": 11}, \"merges\": []}}";
	t = tok_load_mem(small, strlen(small), "tokenizer.json", &e);
	if (!ok(t != NULL, "a byte-level vocab of 12 bytes and an end token loads"))
		diag("%s", e.msg);
	struct tok_ids ids = { 0 };
	struct buf txt = { 0 };
	ok(t && tok_vocab_size(t) == 13 && tok_encode(t, "7+2=9<|end|>", 12, &ids, &e) == 0 && ids.n == 6 &&
	   ids.v[0] == 7 && ids.v[1] == 10 && ids.v[2] == 2 && ids.v[3] == 11 && ids.v[4] == 9 && ids.v[5] == 12,
	   "it encodes the bytes it has, one token each, and its end token");
	ok(t && tok_decode(t, ids.v, ids.n, 1, &txt, &e) == 0 && txt.len == 5 && memcmp(txt.data, "7+2=9", 5) == 0,
	   "and decodes them back, the end token skipped");
	ids.n = 0;
	ok(t && tok_encode(t, "7 + 2", 5, &ids, &e) < 0 && strcmp(e.msg, "byte 0x20 has no token in this vocabulary") == 0,
	   "a byte it lacks is an error naming the byte: %s", e.msg);
	ok(t && tok_encode(t, "7-2", 3, &ids, &e) < 0 && strcmp(e.msg, "byte 0x2d ('-') has no token in this vocabulary") == 0,
	   "and showing it when printable: %s", e.msg);
	tok_ids_free(&ids);
	buf_free(&txt);
	tok_free(t);

	t = load("\"ab\": 2.5", "", &e);
	ok(!t && strstr(e.msg, "model.vocab[\"ab\"]: expected an id"), "a fractional id is not an id: %s", e.msg);
	tok_free(t);

	/* Added tokens that are prefixes of one another: leftmost, then
	 * longest. The ids are those of tokenizers 0.23.2 (its Node binding)
	 * for this tokenizer.json. */
	t = load("", "{\"id\": 256, \"content\": \"<<\"}, {\"id\": 257, \"content\": \"<a\"}, "
		 "{\"id\": 258, \"content\": \"<ab\"}, {\"id\": 259, \"content\": \"<abc>\"}, "
		 "{\"id\": 260, \"content\": \"<b\"}, {\"id\": 261, \"content\": \"<|x|>\"}, "
		 "{\"id\": 262, \"content\": \"<|x\"}", &e);
	static const char pfx[] = "<<<ab<abc<abc><b<|x|<|x|><a<";
	static const int32_t pfx_ids[] = { 256, 258, 258, 99, 259, 260, 262, 124, 261, 257, 60 };
	size_t np = sizeof pfx_ids / sizeof pfx_ids[0];
	ok(t && tok_encode(t, pfx, strlen(pfx), &ids, &e) == 0 && ids.n == np &&
	   memcmp(ids.v, pfx_ids, sizeof pfx_ids) == 0, "added tokens that prefix one another match leftmost-longest");
	ids.n = 0;
	tok_free(t);

	/* Matching does not try every added token at each position: with
	 * 65536 beginning "<|t", 32 KiB of '<' took some 10 s of CPU time
	 * (one comparison per token and position), now some 5 ms. */
	struct buf many = { 0 };
	char one[96];
	for (int k = 0; k < 65536; k++) {
		int l = snprintf(one, sizeof one, "%s{\"id\": %d, \"content\": \"<|t%05d|>\"}", k ? ", " : "", 256 + k, k);
		buf_append(&many, one, (size_t)l);
	}
	buf_put_u8(&many, 0);
	t = load("", (const char *)many.data, &e);
	buf_free(&many);
	if (!ok(t != NULL, "a tokenizer with 65536 added tokens loads"))
		diag("%s", e.msg);
	size_t nlt = 32768;
	char *lt = malloc(nlt + 10);
	memset(lt, '<', nlt);
	memcpy(lt + nlt, "<|t01234|>", 10);
	clock_t c0 = clock();
	int rc = t ? tok_encode(t, lt, nlt + 10, &ids, &e) : -1;
	double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
	ok(rc == 0 && ids.n == nlt + 1 && ids.v[nlt] == 256 + 1234 && secs < 2,
	   "32 KiB of '<' then one of them encodes in %.3f s of CPU time", secs);
	free(lt);
	tok_ids_free(&ids);
	tok_free(t);
	return tap_done();
}
