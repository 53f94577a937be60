/*
 * test_tokenizer_hf: encode and decode exactly as Hugging Face tokenizers,
 * with the real Qwen3 and Llama 3 tokenizer.json files, against the ids that
 * tokenizers 0.23 produced (shared/data/fixtures/tokenizer_ids.json): the
 * fixture's own strings, the first 200 GSM8K train questions and answers,
 * and 30 random id sequences with their decoded text.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "model/tokenizer.h"

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct buf b = { 0 };
	char tmp[65536];
	size_t r;
	while ((r = fread(tmp, 1, sizeof tmp, f)) > 0)
		buf_append(&b, tmp, r);
	fclose(f);
	buf_put_u8(&b, 0);
	*n = b.len - 1;
	return (char *)b.data;
}

/* Compare our ids for text with the fixture's; on a mismatch say where. */
static int same_ids(const struct tokenizer *t, const char *text, const cJSON *want, const char *what)
{
	struct tok_ids got = { 0 };
	struct err e;
	if (tok_encode(t, text, strlen(text), &got, &e) < 0) {
		diag("%s: %s", what, e.msg);
		tok_ids_free(&got);
		return 0;
	}
	size_t n = (size_t)cJSON_GetArraySize(want), k = 0;
	while (k < n && k < got.n && got.v[k] == cJSON_GetArrayItem(want, (int)k)->valueint)
		k++;
	int ok_ = k == n && k == got.n;
	if (!ok_)
		diag("%s: %zu ids, want %zu; first difference at %zu: got %d, want %d", what, got.n, n, k,
		     k < got.n ? got.v[k] : -1, k < n ? cJSON_GetArrayItem(want, (int)k)->valueint : -1);
	tok_ids_free(&got);
	return ok_;
}

/* Decode ids (a cJSON array) and compare with want. */
static int same_text(const struct tokenizer *t, const cJSON *ids, const char *want, const char *what)
{
	size_t n = (size_t)cJSON_GetArraySize(ids);
	int32_t *v = malloc((n + 1) * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = cJSON_GetArrayItem(ids, (int)i)->valueint;
	struct buf out = { 0 };
	struct err e;
	int rc = tok_decode(t, v, n, 0, &out, &e);
	free(v);
	int ok_ = rc == 0 && out.len == strlen(want) && memcmp(out.data, want, out.len) == 0;
	if (rc < 0)
		diag("%s: %s", what, e.msg);
	else if (!ok_)
		diag("%s: got %.*s, want %s", what, (int)out.len, (const char *)out.data, want);
	buf_free(&out);
	return ok_;
}

int main(void)
{
	const char *shared = getenv("GRPO_SHARED");
	if (!shared)
		skip_all("GRPO_SHARED is not set (make check sets it to ../shared)");
	char path[4096];
	size_t n;
	snprintf(path, sizeof path, "%s/data/fixtures/tokenizer_ids.json", shared);
	char *fx = slurp(path, &n);
	if (!fx) {
		static char why[4200];
		snprintf(why, sizeof why, "%s not found", path);
		skip_all(why);
	}
	cJSON *root = cJSON_Parse(fx);
	free(fx);
	ok(root != NULL, "fixture parses");

	/* The GSM8K texts the fixture was made from. */
	int ngsm = cJSON_GetObjectItem(root, "gsm8k_train_first")->valueint;
	char **q = calloc((size_t)ngsm, sizeof *q), **a = calloc((size_t)ngsm, sizeof *a);
	snprintf(path, sizeof path, "%s/data/gsm8k/train.jsonl", shared);
	FILE *f = fopen(path, "r");
	ok(f != NULL, "%s opens", path);
	char *line = NULL;
	size_t cap = 0;
	for (int i = 0; f && i < ngsm && getline(&line, &cap, f) > 0; i++) {
		cJSON *g = cJSON_Parse(line);
		q[i] = strdup(cJSON_GetObjectItem(g, "question")->valuestring);
		a[i] = strdup(cJSON_GetObjectItem(g, "answer")->valuestring);
		cJSON_Delete(g);
	}
	free(line);
	if (f)
		fclose(f);

	const cJSON *texts = cJSON_GetObjectItem(root, "texts");
	const char *names[] = { "qwen3", "llama3" };
	for (int m = 0; m < 2; m++) {
		snprintf(path, sizeof path, "%s/data/tokenizers/%s/tokenizer.json", shared, names[m]);
		struct err e;
		struct tokenizer *t = tok_load(path, &e);
		if (!ok(t != NULL, "%s: tokenizer.json loads", names[m])) {
			diag("%s", e.msg);
			continue;
		}
		const cJSON *fm = cJSON_GetObjectItem(root, names[m]);
		char what[64];

		int good = 0, nt = cJSON_GetArraySize(texts);
		for (int i = 0; i < nt; i++) {
			snprintf(what, sizeof what, "%s texts[%d]", names[m], i);
			good += same_ids(t, cJSON_GetArrayItem(texts, i)->valuestring,
					 cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "texts"), i), what);
		}
		is_int(good, nt, "%s: the fixture's %d strings encode to Hugging Face's ids", names[m], nt);

		good = 0;
		for (int i = 0; i < nt; i++) {
			snprintf(what, sizeof what, "%s decode(texts[%d])", names[m], i);
			good += same_text(t, cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "texts"), i),
					  cJSON_GetArrayItem(texts, i)->valuestring, what);
		}
		is_int(good, nt, "%s: their ids decode back to the strings", names[m]);

		const char *parts[] = { "gsm8k_train_question", "gsm8k_train_answer" };
		for (int p = 0; p < 2; p++) {
			const cJSON *want = cJSON_GetObjectItem(fm, parts[p]);
			good = 0;
			for (int i = 0; i < ngsm; i++) {
				snprintf(what, sizeof what, "%s %s[%d]", names[m], parts[p], i);
				good += (p ? a : q)[i] && same_ids(t, (p ? a : q)[i], cJSON_GetArrayItem(want, i), what);
			}
			is_int(good, ngsm, "%s: %d GSM8K train %ss encode to Hugging Face's ids", names[m], ngsm,
			       p ? "answer" : "question");
			good = 0;
			for (int i = 0; i < ngsm; i++) {
				snprintf(what, sizeof what, "%s decode(%s[%d])", names[m], parts[p], i);
				good += (p ? a : q)[i] && same_text(t, cJSON_GetArrayItem(want, i), (p ? a : q)[i], what);
			}
			is_int(good, ngsm, "%s: and decode back to the same text", names[m]);
		}

		const cJSON *dec = cJSON_GetObjectItem(fm, "decode");
		good = 0;
		int nd = cJSON_GetArraySize(dec);
		for (int i = 0; i < nd; i++) {
			const cJSON *d = cJSON_GetArrayItem(dec, i);
			snprintf(what, sizeof what, "%s decode[%d]", names[m], i);
			good += same_text(t, cJSON_GetObjectItem(d, "ids"), cJSON_GetObjectItem(d, "text")->valuestring, what);
		}
		is_int(good, nd, "%s: %d random id sequences decode to Hugging Face's text (U+FFFD included)",
		       names[m], nd);
		if (m == 0) {
			/* NFC as Hugging Face's: its normalizer's data is Unicode 9.0
			 * (unicode-normalization-alignments), so marks of a later
			 * version have class 0 there and are not reordered, and the
			 * Dives Akuru pair (13.0) is not composed. Ids from tokenizers
			 * 0.23.2 (its Node binding): encode(text, add_special_tokens=false). */
			static const struct { const char *text; int32_t ids[8]; } nfc[] = {
				{ "e\xcc\x81", { 963, -1 } },                              /* e U+0301: é */
				{ "d\xcc\x87\xcc\xa3", { 145924, 136, 229, -1 } },        /* reordered, composed */
				{ "x\xe0\xa2\x98\xcc\xa3", { 87, 156, 95, 246, 136, 96, -1 } },  /* U+0898 (14.0) */
				{ "\xd8\xa8\xe0\xa3\x8a\xd9\x90", { 21360, 156, 96, 232, 52704, -1 } }, /* U+08CA (14.0) */
				{ "\xf0\x91\xa4\xb5\xf0\x91\xa4\xb0", { 128240, 97, 113, 128240, 97, 108, -1 } },
				{ "a\xe1\xb7\xb6\xcc\xa3", { 64, 157, 115, 114, 136, 96, -1 } },  /* U+1DF6 (10.0) */
			};
			good = 0;
			for (size_t i = 0; i < sizeof nfc / sizeof nfc[0]; i++) {
				cJSON *want = cJSON_CreateArray();
				for (int k = 0; nfc[i].ids[k] >= 0; k++)
					cJSON_AddItemToArray(want, cJSON_CreateNumber(nfc[i].ids[k]));
				snprintf(what, sizeof what, "%s nfc[%zu]", names[m], i);
				good += same_ids(t, nfc[i].text, want, what);
				cJSON_Delete(want);
			}
			is_int(good, (int)(sizeof nfc / sizeof nfc[0]),
			       "%s: combining marks of Unicode 10 to 15 normalized as Hugging Face's Unicode 9.0 NFC", names[m]);
		}
		{
			/* Letters and digits first assigned in Unicode 15.1 and 16.0:
			 * tokenizers 0.23's regex engine (Oniguruma) knows them, so
			 * the pre-tokenizer splits a contraction off a new letter and
			 * a space off a new digit. Ids from tokenizers 0.23.2 (its
			 * Node binding): encode(text, add_special_tokens=false). */
			static const struct { const char *text; int32_t ids[2][24]; } u16[] = {
				/* U+2EBF0 (CJK Extension I, 15.1) 's */
				{ "\xf0\xae\xaf\xb0's", { { 172, 106, 107, 108, 594, -1 }, { 172, 106, 107, 108, 596, -1 } } },
				/* U+13460 (Egyptian Hieroglyphs Extended-A, 16.0) 's */
				{ "\xf0\x93\x91\xa0's", { { 124373, 239, 254, 594, -1 }, { 172, 241, 239, 254, 596, -1 } } },
				/* I U+105C0 (Todhri, 16.0) 'll */
				{ "I\xf0\x90\x97\x80'll",
				  { { 40, 123934, 245, 222, 3278, -1 }, { 40, 172, 238, 245, 222, 3358, -1 } } },
				/* x, space, U+1CCF0..U+1CCF3 (outlined digits, 16.0), space, ! */
				{ "x \xf0\x9c\xb3\xb0\xf0\x9c\xb3\xb1\xf0\x9c\xb3\xb2\xf0\x9c\xb3\xb3 !",
				  { { 87, 220, 172, 250, 111, 108, 172, 250, 111, 109, 172, 250, 111, 110, 172, 250, 111, 111,
				      753, -1 },
				    { 87, 220, 172, 250, 111, 108, 172, 250, 111, 109, 172, 250, 111, 110, 172, 250, 111, 111,
				      758, -1 } } },
				/* Garay, space, U+10D40 U+10D41 (Garay digits, 16.0) ? */
				{ "Garay \xf0\x90\xb5\x80\xf0\x90\xb5\x81?",
				  { { 43930, 352, 220, 123934, 113, 222, 123934, 113, 223, 30, -1 },
				    { 45030, 352, 220, 172, 238, 113, 222, 172, 238, 113, 223, 30, -1 } } },
			};
			good = 0;
			for (size_t i = 0; i < sizeof u16 / sizeof u16[0]; i++) {
				cJSON *want = cJSON_CreateArray();
				for (int k = 0; u16[i].ids[m][k] >= 0; k++)
					cJSON_AddItemToArray(want, cJSON_CreateNumber(u16[i].ids[m][k]));
				snprintf(what, sizeof what, "%s unicode16[%zu]", names[m], i);
				good += same_ids(t, u16[i].text, want, what);
				cJSON_Delete(want);
			}
			is_int(good, (int)(sizeof u16 / sizeof u16[0]),
			       "%s: letters and digits of Unicode 15.1 and 16.0 pre-tokenized as Hugging Face's", names[m]);
		}
		tok_free(t);
	}
	for (int i = 0; i < ngsm; i++) {
		free(q[i]);
		free(a[i]);
	}
	free(q);
	free(a);
	cJSON_Delete(root);
	return tap_done();
}
