/*
 * test_tokenizer_regex: pre_tokenizers through Oniguruma against Hugging
 * Face tokenizers 0.23.2 (tests/data/tokregex: make.mjs wrote eight
 * tokenizers, GPT-2's ByteLevel with and without add_prefix_space,
 * SmolLM2's Digits then ByteLevel, DeepSeek V3's three Splits, every Split
 * behavior, steps after ByteLevel, and a SentencePiece-style one with
 * Replace of a Regex in its normalizer and decoder, and each one's
 * expected.jsonl):
 * encode's ids, and decode's text with and without skip_special_tokens, of
 * texts and of random ids. With GRPO_REGEX_TOKENIZER naming a real
 * tokenizer.json and GRPO_REGEX_EXPECTED the file make.mjs wrote for it,
 * that one too.
 *
 * Then a differential oracle: Qwen's and Llama 3's Split, which the
 * hand-written scanner does, must cut the GSM8K texts (under $GRPO_SHARED)
 * and thousands of random strings into the same pieces as Oniguruma does.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tokexpect.h"
#include "base/unicode.h"
#include "model/tokenizer.h"

/* GPT-2's bytes_to_unicode: the character ByteLevel maps byte b to. */
static uint32_t byte_char(unsigned b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	if (b <= 0x20)
		return 0x100 + b;
	return b == 0xAD ? 0x143 : 0x100 + 33 + (b - 0x7F);
}

/* 1 if the pre_tokenizer (through Oniguruma) cuts text into want's pieces,
 * which tokenizers writes as ByteLevel's characters. */
static int same_pieces(const struct tokenizer *t, const char *text, const cJSON *want, int line)
{
	struct buf b = { 0 }, m = { 0 };
	struct tok_ids ends = { 0 };
	struct err e = { 0 };
	int same = tok_pre_tokenize(t, text, strlen(text), 0, &b, &ends, &e) == 0 &&
		   (size_t)cJSON_GetArraySize(want) == ends.n;
	for (size_t k = 0; same && k < ends.n; k++) {
		buf_reset(&m);
		for (int32_t i = k ? ends.v[k - 1] : 0; i < ends.v[k]; i++) {
			unsigned char u[4];
			buf_append(&m, u, (size_t)uni_utf8_encode(byte_char(b.data[i]), u));
		}
		const char *w = cJSON_GetStringValue(cJSON_GetArrayItem(want, (int)k));
		same = w && strlen(w) == m.len && memcmp(w, m.data, m.len) == 0;
		if (!same)
			diag("line %d: piece %zu is \"%.*s\", want \"%s\"", line, k, (int)m.len, (const char *)m.data,
			     w ? w : "(none)");
	}
	if (!same && e.msg[0])
		diag("line %d: %s", line, e.msg);
	else if (!same && (size_t)cJSON_GetArraySize(want) != ends.n)
		diag("line %d: %zu pieces, want %d", line, ends.n, cJSON_GetArraySize(want));
	buf_free(&b);
	buf_free(&m);
	tok_ids_free(&ends);
	return same;
}

/* tokexpect's extra check: a line's "pieces", where it has them. */
static int cut_pieces(const struct tokenizer *t, const char *text, const cJSON *line, int lineno)
{
	const cJSON *pieces = cJSON_GetObjectItem(line, "pieces");
	return pieces ? same_pieces(t, text, pieces, lineno) : -1;
}

/* ---- the scanner against Oniguruma ---- */

static const char PAT_QWEN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
	"\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+";
static const char PAT_LLAMA3[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
	"\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+";

/* The gpt2 fixture with Qwen's (or Llama 3's) pre_tokenizer, as their
 * files write it (the pattern above is JSON-escaped). */
static struct tokenizer *scanner_tokenizer(const char *top, const char *pat)
{
	char path[4096];
	struct buf f = { 0 }, j = { 0 };
	struct err e = { 0 };
	snprintf(path, sizeof path, "%s/tests/data/tokregex/gpt2/tokenizer.json", top);
	if (buf_read_file(&f, path, &e) < 0) {
		diag("%s", e.msg);
		return NULL;
	}
	buf_put_u8(&f, 0);
	const char *p = strstr((const char *)f.data, "\"pre_tokenizer\":"), *q = strstr((const char *)f.data,
											  ",\"post_processor\"");
	struct tokenizer *t = NULL;
	if (p && q) {
		buf_append(&j, f.data, (size_t)(p - (const char *)f.data));
		buf_printf(&j, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
			   "\"pattern\": {\"Regex\": \"%s\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
			   "\"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]}%s",
			   pat, q);
		t = tok_load_mem((const char *)j.data, j.len, "scanner", &e);
		if (!t)
			diag("%s", e.msg);
	}
	buf_free(&f);
	buf_free(&j);
	return t;
}

struct oracle {
	const struct tokenizer *t;
	const char *name;
	int texts, same, shown;
};

/* One text through the scanner and through Oniguruma: the same pieces? */
static void compare(struct oracle *o, const char *s, size_t n)
{
	struct buf b[2] = { { 0 }, { 0 } };
	struct tok_ids ends[2] = { { 0 }, { 0 } };
	struct err e = { 0 };
	int rc = 0;
	for (int k = 0; k < 2; k++)
		if (tok_pre_tokenize(o->t, s, n, k, &b[k], &ends[k], &e) < 0) {
			diag("%s: %s", o->name, e.msg);
			rc = -1;
		}
	o->texts++;
	int same = rc == 0 && ends[0].n == ends[1].n && b[0].len == b[1].len &&
		   (ends[0].n == 0 || memcmp(ends[0].v, ends[1].v, ends[0].n * sizeof *ends[0].v) == 0) &&
		   (b[0].len == 0 || memcmp(b[0].data, b[1].data, b[0].len) == 0);
	if (same) {
		o->same++;
	} else if (rc == 0 && o->shown++ < 5) {
		size_t k = 0;
		while (k < ends[0].n && k < ends[1].n && ends[0].v[k] == ends[1].v[k])
			k++;
		int from = k ? ends[1].v[k - 1] : 0;
		diag("%s: \"%.*s\": piece %zu is \"%.*s\" by Oniguruma, \"%.*s\" by the scanner", o->name, (int)n, s, k,
		     k < ends[0].n ? ends[0].v[k] - from : 0, (const char *)b[0].data + from,
		     k < ends[1].n ? ends[1].v[k] - from : 0, (const char *)b[1].data + from);
	}
	for (int k = 0; k < 2; k++) {
		buf_free(&b[k]);
		tok_ids_free(&ends[k]);
	}
}

/* Characters the random strings are drawn from, by kind; all assigned by
 * Unicode 14 or never (Debian's Oniguruma 6.9.8 has Unicode 14's classes,
 * the scanner 16's: a character new since then is classed apart). */
static const uint32_t pool_letter[] = { 'a', 'z', 'A', 'Z', 's', 'S', 't', 'T', 'l', 'L', 'r', 'R', 'e', 'E',
	'v', 'V', 'm', 'M', 'd', 'D', 0xE9, 0xDF, 0x17F, 0x130, 0x131, 0x212A, 0xFF33, 0xFB05, 0xFB06, 0x3B1, 0x391,
	0x436, 0x416, 0x5D0, 0x627, 0x915, 0xE01, 0x4E2D, 0x6587, 0x3042, 0x30AB, 0xFF76, 0xAC00, 0x20000, 0x2B820,
	0x1D400, 0x2C6, 0x2B0, 0x1C5, 0x10400 };
static const uint32_t pool_digit[] = { '0', '1', '5', '9', 0x663, 0x6F4, 0x967, 0xFF11, 0xB2, 0xB9, 0xBD, 0x2167,
	0x2460, 0x3007, 0x1D7CE, 0x10107, 0x1F100 };
static const uint32_t pool_space[] = { ' ', ' ', ' ', '\t', '\n', '\n', '\r', 0x0B, 0x0C, 0x85, 0xA0, 0x1680,
	0x2000, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0x180E, 0x200B, 0xFEFF };
static const uint32_t pool_quote[] = { '\'', '\'', '\'', 0x2019, 0x2BC, '`', '"' };
static const uint32_t pool_punct[] = { '.', ',', '!', '?', '-', '_', '(', ')', '[', '$', '%', '#', '@', '&', '*',
	'+', '=', '/', '\\', '|', '~', '^', ':', ';', '<', '>', 0xA1, 0xBF, 0xB7, 0x2026, 0x201C, 0x2014, 0x20AC,
	0x2122, 0x3001, 0x3002, 0xFF01, 0x1, 0x1F, 0x7F, 0xAD, 0xE000, 0x378, 0xFFFF, 0x10FFFF, 0xFFFD };
static const uint32_t pool_emoji[] = { 0x1F600, 0x1F44D, 0x1F3FD, 0x200D, 0xFE0F, 0x2764, 0x1F468, 0x1F1FA, 0x1F1F8,
	0x1F9D1, 0x2705, 0x231A };
static const uint32_t pool_mark[] = { 0x301, 0x308, 0x303, 0x327, 0x93F, 0x94D, 0xE31, 0x64E, 0x5B4, 0x20DD, 0x1AB0,
	0xFE20, 0x1DF9 };

static uint64_t rng = 0x853c49e6748fea9bull;

static unsigned next_rand(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* A random string of up to 24 characters into b. */
static void random_text(struct buf *b)
{
	static const struct {
		const uint32_t *c;
		unsigned n;
	} pool[] = {
#define P(x) { x, sizeof x / sizeof *x }
		P(pool_letter), P(pool_letter), P(pool_letter), P(pool_digit), P(pool_space), P(pool_space),
		P(pool_quote), P(pool_punct), P(pool_emoji), P(pool_mark),
#undef P
	};
	buf_reset(b);
	for (unsigned k = 1 + next_rand(24); k > 0; k--) {
		unsigned p = next_rand(sizeof pool / sizeof *pool);
		unsigned char u[4];
		buf_append(b, u, (size_t)uni_utf8_encode(pool[p].c[next_rand(pool[p].n)], u));
	}
}

/* The questions and answers of a GSM8K file, each through compare. */
static int gsm8k(struct oracle *o, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *j = cJSON_Parse(line);
		for (int k = 0; k < 2; k++) {
			const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(j, k ? "answer" : "question"));
			if (s)
				compare(o, s, strlen(s));
		}
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	return 1;
}

static void oracle(const char *top, const char *name, const char *pat)
{
	struct oracle o = { scanner_tokenizer(top, pat), name, 0, 0, 0 };
	if (!ok(o.t != NULL, "%s: the scanner's pre_tokenizer loads", name))
		return;
	/* the cases the scanner's comments name, then random ones */
	static const char *const cases[] = { "", " ", "a", "'s", "'S", "'\xC5\xBFx", "'LL", "'Ll", "'lL go", "''ll",
		"'re", "'RE'", "'ve'm'd't", "'x", "don't", "I'M", "a  b", "a \n b", "  \n\n  x", "x   ", "\t\tx", "\r\n",
		"12345", "1 22 333 4444", "\xC2\xB2\xC2\xB3", "$1,000.50", " ?!", "?\n\n", "\xE4\xB8\xAD\xE6\x96\x87",
		"\xF0\x9F\x98\x80 a", "e\xCC\x81", "\xCC\x81" "x", "a\xC2\xA0" "b", "\xE3\x80\x80" "x" };
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		compare(&o, cases[i], strlen(cases[i]));
	struct buf b = { 0 };
	for (int i = 0; i < 4000; i++) {
		random_text(&b);
		compare(&o, b.len ? (const char *)b.data : "", b.len);
	}
	buf_free(&b);
	ok(o.same == o.texts, "%s: the scanner and Oniguruma cut %d of %d named and random texts alike", name, o.same,
	   o.texts);
	const char *shared = getenv("GRPO_SHARED");
	char path[4096];
	int texts = o.texts, same = o.same, files = 0;
	for (int k = 0; k < 2 && shared && *shared; k++) {
		snprintf(path, sizeof path, "%s/data/gsm8k/%s.jsonl", shared, k ? "train" : "test");
		files += gsm8k(&o, path);
	}
	if (files)
		ok(o.same - same == o.texts - texts, "%s: the scanner and Oniguruma cut %d of %d GSM8K questions and answers "
		   "alike", name, o.same - same, o.texts - texts);
	else
		skip("no GSM8K ($GRPO_SHARED/data/gsm8k/test.jsonl; make check sets GRPO_SHARED to ../shared)");
	tok_free((struct tokenizer *)o.t);
}

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char path[4096], exp[4096];
	static const char *const kind[] = { "gpt2", "prefix", "smollm2", "deepseek", "behaviors", "chars", "mapped", "replace" };
	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof path, "%s/tests/data/tokregex/%s/tokenizer.json", top ? top : ".", kind[i]);
		snprintf(exp, sizeof exp, "%s/tests/data/tokregex/%s/expected.jsonl", top ? top : ".", kind[i]);
		tokexpect_check(kind[i], path, exp, 1000, cut_pieces, "the pre_tokenizer cuts them into tokenizers' pieces");
	}

	oracle(top ? top : ".", "Qwen", PAT_QWEN);
	oracle(top ? top : ".", "Llama 3", PAT_LLAMA3);

	const char *real = getenv("GRPO_REGEX_TOKENIZER"), *real_exp = getenv("GRPO_REGEX_EXPECTED");
	if (real && *real && real_exp && *real_exp)
		tokexpect_check("GRPO_REGEX_TOKENIZER", real, real_exp, 1, cut_pieces,
				"the pre_tokenizer cuts them into tokenizers' pieces");
	else if (real && *real)
		skip("GRPO_REGEX_TOKENIZER is set but GRPO_REGEX_EXPECTED is not (what tokenizers gives for it: "
		     "cd tests/data/tokregex && node make.mjs \"$GRPO_REGEX_TOKENIZER\" OUT)");
	else
		skip("GRPO_REGEX_TOKENIZER is not set (a real tokenizer.json such as DeepSeek V3's, not committed; with "
		     "GRPO_REGEX_EXPECTED, what cd tests/data/tokregex && node make.mjs PATH OUT writes for it)");
	return tap_done();
}
