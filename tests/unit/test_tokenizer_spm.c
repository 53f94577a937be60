/*
 * test_tokenizer_spm: SentencePiece-style BPE (Llama 2, TinyLlama, Mistral)
 * against Hugging Face tokenizers 0.23.2 (tests/data/tokspm: make.mjs wrote
 * four tokenizers and each one's expected.jsonl): encode's ids, and decode's
 * text with and without skip_special_tokens, of texts and of random ids.
 * With GRPO_LLAMA2_TOKENIZER naming a real tokenizer.json and
 * GRPO_LLAMA2_EXPECTED the file make.mjs wrote for it, that one too.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tokexpect.h"
#include "model/tokenizer.h"

/* The legacy fixture with Strip(" ", start, stop) after Replace and Fuse:
 * decoding ids gives want, or, where tokenizers panics (want NULL), an error. */
static void strip(const char *top, int start, int stop, const int32_t *ids, size_t n, const char *want)
{
	char path[4096];
	struct buf f = { 0 }, j = { 0 }, out = { 0 };
	struct err e = { 0 };
	snprintf(path, sizeof path, "%s/tests/data/tokspm/legacy/tokenizer.json", top);
	if (buf_read_file(&f, path, &e) < 0) {
		ok(0, "%s", e.msg);
		return;
	}
	buf_put_u8(&f, 0);
	const char *d = strstr((const char *)f.data, "\"decoder\":"), *m = strstr((const char *)f.data, "\"model\":");
	buf_append(&j, f.data, (size_t)(d - (const char *)f.data));
	buf_printf(&j, "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
		   "{\"String\": \"\u2581\"}, \"content\": \" \"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", "
		   "\"content\": \" \", \"start\": %d, \"stop\": %d}]}, %s", start, stop, m);
	struct tokenizer *t = tok_load_mem((const char *)j.data, j.len, "strip", &e);
	int rc = t ? tok_decode(t, ids, n, 0, &out, &e) : -1;
	if (want)
		ok(rc == 0 && out.len == strlen(want) && (out.len == 0 || memcmp(out.data, want, out.len) == 0),
		   "Strip(\" \", %d, %d) of %zu ids gives \"%s\" %s", start, stop, n, want, rc ? e.msg : "");
	else
		ok(t && rc < 0 && strstr(e.msg, "Strip cannot cut"), "Strip(\" \", %d, %d) of %zu ids, where tokenizers "
		   "panics, is an error: %s", start, stop, n, e.msg);
	tok_free(t);
	buf_free(&f);
	buf_free(&j);
	buf_free(&out);
}

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char path[4096], exp[4096];
	static const char *const kind[] = { "legacy", "metaspace", "always", "never" };
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/tests/data/tokspm/%s/tokenizer.json", top ? top : ".", kind[i]);
		snprintf(exp, sizeof exp, "%s/tests/data/tokspm/%s/expected.jsonl", top ? top : ".", kind[i]);
		tokexpect_check(kind[i], path, exp, 900, NULL, NULL);
	}

	/* Strip's stop, which Llama 2 does not use, against tokenizers by hand
	 * (300: "hello", 259: "\u2581") */
	const char *at = top ? top : ".";
	strip(at, 0, 1, (const int32_t[]){ 300, 259 }, 2, "hello");
	strip(at, 0, 2, (const int32_t[]){ 300, 259, 259 }, 3, "hello");
	strip(at, 0, 1, (const int32_t[]){ 259 }, 1, "");
	strip(at, 1, 1, (const int32_t[]){ 300 }, 1, "hello");
	strip(at, 0, 2, (const int32_t[]){ 259 }, 1, NULL);
	strip(at, 1, 1, (const int32_t[]){ 259 }, 1, NULL);
	strip(at, 0, 1, NULL, 0, NULL);

	const char *real = getenv("GRPO_LLAMA2_TOKENIZER"), *real_exp = getenv("GRPO_LLAMA2_EXPECTED");
	if (real && *real && real_exp && *real_exp)
		tokexpect_check("GRPO_LLAMA2_TOKENIZER", real, real_exp, 1, NULL, NULL);
	else if (real && *real)
		skip("GRPO_LLAMA2_TOKENIZER is set but GRPO_LLAMA2_EXPECTED is not (what tokenizers gives for it: "
		     "cd tests/data/tokspm && node make.mjs \"$GRPO_LLAMA2_TOKENIZER\" OUT)");
	else
		skip("GRPO_LLAMA2_TOKENIZER is not set (a real Llama 2 tokenizer.json, not committed for its license; "
		     "with GRPO_LLAMA2_EXPECTED, what cd tests/data/tokspm && node make.mjs PATH OUT writes for it)");
	return tap_done();
}
