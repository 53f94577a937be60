/*
 * test_tokenizer_load: tokenizer.json files written by hand, for what the
 * loader refuses and how it says so (test_tokenizer_hf has the real ones).
 * What each file does in Hugging Face tokenizers 0.23.2 (its Node binding,
 * Tokenizer.fromString) was tried: where it refuses a file, so do we; where
 * it loads one we do not support, the message says what is unsupported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tap.h"
#include "model/tokenizer.h"

/* Qwen3's pre_tokenizer, as its tokenizer.json has it, and its parts */
#define QWEN_RE "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\""
#define SPLIT(rest) "{\"type\": \"Split\", \"pattern\": {\"Regex\": " QWEN_RE "}" rest "}"
#define SPLIT_OK SPLIT(", \"behavior\": \"Isolated\", \"invert\": false")
#define BL(rest) "{\"type\": \"ByteLevel\"" rest "}"
#define BL_OK BL(", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false")
#define SEQ(a, b) "{\"type\": \"Sequence\", \"pretokenizers\": [" a ", " b "]}"
#define PRE SEQ(SPLIT_OK, BL_OK)
#define DEC BL_OK
/* an added token's fields other than id, content and special */
#define FLAGS "\"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false"
#define TOKEN(id, content) "{\"id\": " #id ", \"content\": \"" content "\", " FLAGS ", \"special\": true}"

/* The parts of a tokenizer.json: NULL takes the default, "" leaves the key
 * out, anything else is the key's JSON value. */
struct tj {
	const char *normalizer;     /* null */
	const char *pre;            /* PRE */
	const char *decoder;        /* DEC */
	const char *added;          /* [] */
	const char *model;          /* model's fields before vocab: "type": "BPE" */
	const char *vocab;          /* the 256 byte tokens, then vocab_extra */
	const char *vocab_extra;    /* more vocab entries */
	const char *merges;         /* [] */
};

static void put(struct buf *b, const char *key, const char *v, const char *dflt)
{
	if (!v)
		v = dflt;
	if (*v)
		buf_printf(b, "%s\"%s\": %s", b->len > 1 ? ", " : "", key, v);
}

/* tokenizer.json from its parts, in b. The vocabulary: the 256 byte tokens
 * (GPT-2's byte-to-character map) with ids 0 to 255, then vocab_extra. */
static void compose(const struct tj *j, struct buf *b)
{
	struct buf vocab = { 0 };
	buf_put_u8(&vocab, '{');
	for (int c = 0, k = 0; c < 256; c++) {
		int printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
		unsigned cp = printable ? (unsigned)c : 256u + (unsigned)k++;
		if (cp < 0x80)
			buf_printf(&vocab, "%s\"%s%c\": %d", c ? ", " : "", cp == '"' || cp == '\\' ? "\\" : "", (char)cp, c);
		else
			buf_printf(&vocab, "%s\"%c%c\": %d", c ? ", " : "", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)), c);
	}
	buf_printf(&vocab, "%s%s}", j->vocab_extra ? ", " : "", j->vocab_extra ? j->vocab_extra : "");
	buf_put_u8(&vocab, 0);
	buf_reset(b);
	buf_put_u8(b, '{');
	put(b, "normalizer", j->normalizer, "null");
	put(b, "pre_tokenizer", j->pre, PRE);
	put(b, "decoder", j->decoder, DEC);
	put(b, "added_tokens", j->added, "[]");
	buf_printf(b, ", \"model\": {%s", j->model ? j->model : "\"type\": \"BPE\"");
	size_t at = b->len;
	put(b, "vocab", j->vocab, (const char *)vocab.data);
	put(b, "merges", j->merges, "[]");
	if (j->model && !*j->model && b->len > at && b->data[at] == ',')
		memmove(b->data + at, b->data + at + 2, (b->len -= 2) - at);   /* no ", " after "{" */
	buf_printf(b, "}}");
	buf_free(&vocab);
}

static struct tokenizer *build(const struct tj *j, struct err *e)
{
	struct buf b = { 0 };
	compose(j, &b);
	struct tokenizer *t = tok_load_mem((const char *)b.data, b.len, "tokenizer.json", e);
	buf_free(&b);
	return t;
}

/* The file is refused with exactly this message (after "tokenizer.json: "). */
static void refused(const struct tj *j, const char *want, const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = build(j, &e);
	char full[1100];
	snprintf(full, sizeof full, "tokenizer.json: %s", want);
	if (!ok(!t && strcmp(e.msg, full) == 0, "%s is refused", what))
		diag("  got:  %s\n#   want: %s", t ? "(loaded)" : e.msg, full);
	tok_free(t);
}

static void refused_text(const char *json, size_t n, const char *want, const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = tok_load_mem(json, n, "tokenizer.json", &e);
	char full[1100];
	snprintf(full, sizeof full, "tokenizer.json: %s", want);
	if (!ok(!t && strcmp(e.msg, full) == 0, "%s is refused", what))
		diag("  got:  %s\n#   want: %s", t ? "(loaded)" : e.msg, full);
	tok_free(t);
}

/* The file loads and text encodes to ids (n of them; n < 0: only loads). */
static void loads(const struct tj *j, const char *text, const int32_t *ids, int n, const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = build(j, &e);
	struct tok_ids got = { 0 };
	int good = t != NULL;
	if (good && n >= 0)
		good = tok_encode(t, text, strlen(text), &got, &e) == 0 && got.n == (size_t)n &&
		       (n == 0 || memcmp(got.v, ids, (size_t)n * sizeof *ids) == 0);
	if (!ok(good, "%s", what)) {
		diag("  %s", t ? "ids differ" : e.msg);
		for (size_t i = 0; t && i < got.n; i++)
			diag("  got id %d", got.v[i]);
	}
	tok_ids_free(&got);
	tok_free(t);
}

static void test_file(void)
{
	struct err e = { 0 };
	refused_text("", 0, "the file is empty: not a tokenizer.json", "an empty file");
	refused_text(" \n\t\n", 4, "the file is empty: not a tokenizer.json", "a file of white space");
	refused_text("hello", 5, "not valid JSON near line 1 (byte 0)", "a file that is not JSON");
	refused_text("{\n \"model\": {,}}", 16, "not valid JSON near line 2 (byte 14)", "JSON with an error");
	static const char whole[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
	refused_text(whole, 30, "not valid JSON: it ends inside a string or a bracket (truncated?)",
		     "a file cut short in a string");
	refused_text(whole, 43, "not valid JSON: it ends inside a string or a bracket (truncated?)", "or after a value");
	/* tokenizers reads text: it refuses what is not UTF-8, and what
	 * follows the JSON value; both once loaded. */
	struct buf b = { 0 };
	char want[128];
	compose(&(struct tj){ .vocab_extra = "\"a\xff\": 256" }, &b);
	snprintf(want, sizeof want, "not valid UTF-8, at line 1 (byte %zu)",
		 (size_t)((const char *)memmem(b.data, b.len, "a\xff", 2) + 1 - (const char *)b.data));
	refused_text((const char *)b.data, b.len, want, "a file that is not UTF-8");
	compose(&(struct tj){ 0 }, &b);
	snprintf(want, sizeof want, "not valid JSON: more follows its end, at line 2 (byte %zu)", b.len + 1);
	buf_printf(&b, "\n{}\n");
	refused_text((const char *)b.data, b.len, want, "a tokenizer.json with more JSON after it");
	buf_free(&b);
	refused_text("[]", 2, "not a tokenizer.json: the JSON is an array, not an object", "a JSON array");
	refused_text("{}", 2, "no \"model\": not a tokenizer.json", "an object without a model");
	refused_text("{\"model\": \"BPE\"}", 16, "model: expected an object, not a string", "a model that is a string");
	struct tokenizer *t = tok_load("/nonexistent/grpo-test/tokenizer.json", &e);
	ok(!t && strstr(e.msg, "/nonexistent/grpo-test/tokenizer.json: ") == e.msg && strstr(e.msg, "No such file"),
	   "a file that is not there is refused, naming it: %s", e.msg);
	tok_free(t);
}

#define DEC_ONLY "only ByteLevel (with a ByteLevel pre_tokenizer), or Replace, ByteFallback, Fuse, " \
	"Strip, Metaspace and Sequences of those (without it) are supported"
#define NORM_ONLY "(only NFC, Prepend, Replace, a Sequence of those, or none)"

static void test_decoder_normalizer(void)
{
	refused(&(struct tj){ .decoder = "null" }, "decoder: none given, and " DEC_ONLY
		" (without one, tokenizers joins tokens with spaces)", "a null decoder");
	refused(&(struct tj){ .decoder = "" }, "decoder: none given, and " DEC_ONLY
		" (without one, tokenizers joins tokens with spaces)", "no decoder");
	refused(&(struct tj){ .decoder = "{\"type\": \"Metaspace\", \"replacement\": \"_\"}" },
		"decoder: Metaspace with a ByteLevel pre_tokenizer is not supported (only ByteLevel)",
		"a Metaspace decoder after a ByteLevel pre_tokenizer");
	refused(&(struct tj){ .decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, "
				"{\"type\": \"Fuse\"}]}" },
		"decoder: a SentencePiece-style decoder with a ByteLevel pre_tokenizer is not supported (only ByteLevel)",
		"ByteFallback and Fuse after a ByteLevel pre_tokenizer");
	refused(&(struct tj){ .decoder = "{\"type\": \"Sequence\", \"decoders\": [" BL_OK "]}" },
		"decoder.decoders[0]: type \"ByteLevel\" is not supported: " DEC_ONLY, "ByteLevel inside a Sequence");
	refused(&(struct tj){ .decoder = "{\"type\": \"WordPiece\"}" },
		"decoder: type \"WordPiece\" is not supported: " DEC_ONLY, "a WordPiece decoder");
	refused(&(struct tj){ .decoder = "{}" }, "decoder: no \"type\"", "a decoder without a type");
	refused(&(struct tj){ .decoder = BL("") }, "decoder: no \"add_prefix_space\" (tokenizers requires it)",
		"a ByteLevel decoder without its fields");

	refused(&(struct tj){ .normalizer = "{\"type\": \"NFD\"}" },
		"normalizer: type \"NFD\" is not supported " NORM_ONLY, "an NFD normalizer");
	refused(&(struct tj){ .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"NFKC\"}]}" },
		"normalizer.normalizers[1]: type \"NFKC\" is not supported " NORM_ONLY,
		"a Sequence normalizer holding NFKC");
	refused(&(struct tj){ .normalizer = "{\"type\": \"Sequence\"}" },
		"normalizer: Sequence without \"normalizers\"", "a Sequence normalizer without its list");
	refused(&(struct tj){ .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [null]}" },
		"normalizer.normalizers[0]: expected an object, not null", "a Sequence normalizer holding null");
	refused(&(struct tj){ .normalizer = "\"NFC\"" }, "normalizer: expected an object, not a string",
		"a normalizer that is a string");
	loads(&(struct tj){ .normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
				"{\"type\": \"Sequence\", \"normalizers\": []}]}" },
	      "e\xcc\x81", (const int32_t[]){ 0xC3, 0xA9 }, 2, "a Sequence of NFC and an empty Sequence is NFC");
}

#define PRE_ONLY "only Split, ByteLevel and Digits, alone or in a Sequence, Metaspace, or none is supported"
#define SPLIT_ON(pat, rest) "{\"type\": \"Split\", \"pattern\": " pat rest "}"
#define ISOLATED ", \"behavior\": \"Isolated\", \"invert\": false"

static void test_pre_tokenizer(void)
{
	/* no pre_tokenizer is the SentencePiece-style kind, which ByteLevel
	 * does not decode */
	refused(&(struct tj){ .pre = "null" }, "decoder: ByteLevel with no pre_tokenizer is not supported (ByteLevel "
		"goes with a ByteLevel pre_tokenizer only)", "a null pre_tokenizer with a ByteLevel decoder");
	refused(&(struct tj){ .pre = "" }, "decoder: ByteLevel with no pre_tokenizer is not supported (ByteLevel "
		"goes with a ByteLevel pre_tokenizer only)", "no pre_tokenizer with a ByteLevel decoder");
	refused(&(struct tj){ .pre = "{\"type\": \"Metaspace\", \"replacement\": \"_\"}" },
		"decoder: ByteLevel with a Metaspace pre_tokenizer is not supported (ByteLevel goes with a ByteLevel "
		"pre_tokenizer only)", "a Metaspace pre_tokenizer with a ByteLevel decoder");
	refused(&(struct tj){ .pre = "{\"type\": \"Whitespace\"}" }, "pre_tokenizer: type \"Whitespace\" is not supported: "
		PRE_ONLY, "a Whitespace pre_tokenizer");
	refused(&(struct tj){ .pre = SEQ(SPLIT_OK, "{\"type\": \"Metaspace\", \"replacement\": \"_\"}") },
		"pre_tokenizer.pretokenizers[1]: type \"Metaspace\" is not supported in a Sequence: " PRE_ONLY,
		"Metaspace in a Sequence");
	refused(&(struct tj){ .pre = SEQ(SPLIT_OK, "{\"type\": \"Digits\", \"individual_digits\": true}") },
		"pre_tokenizer: Split or Digits without a ByteLevel is not supported (only SentencePiece-style BPE has no "
		"ByteLevel, and it is supported with Metaspace or no pre_tokenizer)", "Split and Digits without ByteLevel");
	refused(&(struct tj){ .pre = SEQ(BL_OK, SEQ(SPLIT_OK, BL_OK)) },
		"pre_tokenizer.pretokenizers[1].pretokenizers[1]: a second ByteLevel is not supported (it would map the "
		"bytes of the characters the first made)", "a second ByteLevel, in a Sequence inside the Sequence");
	refused(&(struct tj){ .pre = "{\"type\": \"Sequence\", \"pretokenizers\": [" SPLIT_OK ", " BL_OK ", {\"type\": \"Digits\"}]}" },
		"pre_tokenizer.pretokenizers[2]: no \"individual_digits\" (tokenizers requires it)",
		"Digits without individual_digits");
	refused(&(struct tj){ .pre = "{\"type\": \"Sequence\"}" },
		"pre_tokenizer: Sequence without \"pretokenizers\"", "a Sequence without its list");
	refused(&(struct tj){ .pre = SEQ("{\"type\": \"Split\", \"behavior\": \"Isolated\", \"invert\": false}", BL_OK) },
		"pre_tokenizer.pretokenizers[0]: Split without \"pattern\" (tokenizers requires it)", "a Split without a pattern");
	refused(&(struct tj){ .pre = SEQ(SPLIT(", \"invert\": false"), BL_OK) },
		"pre_tokenizer.pretokenizers[0]: Split without \"behavior\" (tokenizers requires it)", "a Split without a behavior");
	refused(&(struct tj){ .pre = SEQ(SPLIT(", \"behavior\": \"Isolated\""), BL_OK) },
		"pre_tokenizer.pretokenizers[0]: no \"invert\" (tokenizers requires it)", "a Split without invert");
	refused(&(struct tj){ .pre = SEQ(SPLIT(", \"behavior\": \"isolated\", \"invert\": false"), BL_OK) },
		"pre_tokenizer.pretokenizers[0].behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
		"Contiguous, not \"isolated\"", "a Split behavior tokenizers does not know (spelt in lower case)");
	refused(&(struct tj){ .pre = SEQ(SPLIT_ON("{\"Regex\": \"a\", \"String\": \"b\"}", ISOLATED), BL_OK) },
		"pre_tokenizer.pretokenizers[0].pattern: expected {\"String\": ...} or {\"Regex\": ...}, not that object",
		"a Split pattern that is both a Regex and a String");
	refused(&(struct tj){ .pre = SEQ(SPLIT_ON("\"\\\\s+\"", ISOLATED), BL_OK) },
		"pre_tokenizer.pretokenizers[0].pattern: expected {\"String\": ...} or {\"Regex\": ...}, not a string",
		"a Split pattern that is a bare string");
	/* a regex Oniguruma does not compile, which tokenizers refuses too,
	 * wherever it is; a String is a literal, escaped */
	refused(&(struct tj){ .pre = SEQ(BL_OK, SEQ(SPLIT_OK, SPLIT_ON("{\"Regex\": \"(a\"}", ISOLATED))) },
		"pre_tokenizer.pretokenizers[1].pretokenizers[1].pattern.Regex: \"(a\" does not compile: end pattern with "
		"unmatched parenthesis (Oniguruma)", "a Regex that does not compile");
	refused(&(struct tj){ .pre = SEQ(SPLIT_ON("{\"Regex\": \"\\\\p{Nope}\"}", ISOLATED), BL_OK) },
		"pre_tokenizer.pretokenizers[0].pattern.Regex: \"\\p{Nope}\" does not compile: invalid character property "
		"name {Nope} (Oniguruma)", "a Regex with a property Oniguruma lacks");
	loads(&(struct tj){ .pre = SEQ(SPLIT_ON("{\"String\": \"(a\"}", ISOLATED), BL_OK) }, "x(ay", NULL, -1,
	      "a String that is not a regex loads");
	/* every character escaped: the pattern is twice the String's length */
	loads(&(struct tj){ .pre = SEQ(SPLIT_ON("{\"String\": \"$.*\"}", ", \"behavior\": \"Removed\", \"invert\": false"), BL_OK) },
	      "a$.*b$x", (const int32_t[]){ 'a', 'b', '$', 'x' }, 4, "a String of three regex metacharacters splits on itself only");
	refused(&(struct tj){ .pre = SEQ(SPLIT_OK, BL(", \"trim_offsets\": false, \"use_regex\": false")) },
		"pre_tokenizer.pretokenizers[1]: no \"add_prefix_space\" (tokenizers requires it)",
		"ByteLevel without add_prefix_space");
	refused(&(struct tj){ .pre = SEQ(SPLIT_OK, BL(", \"add_prefix_space\": false, \"use_regex\": false")) },
		"pre_tokenizer.pretokenizers[1]: no \"trim_offsets\" (tokenizers requires it)",
		"ByteLevel without trim_offsets");
	static char many[64 * 70 + 200];
	size_t m = (size_t)snprintf(many, sizeof many, "{\"type\": \"Sequence\", \"pretokenizers\": [" BL_OK);
	for (int i = 0; i < 64; i++)
		m += (size_t)snprintf(many + m, sizeof many - m, ", {\"type\": \"Digits\", \"individual_digits\": true}");
	snprintf(many + m, sizeof many - m, "]}");
	refused(&(struct tj){ .pre = many }, "pre_tokenizer: more than 64 steps are not supported", "65 pre_tokenizers");
	loads(&(struct tj){ .pre = SEQ(SPLIT_OK, BL(", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false")) },
	      "a b", (const int32_t[]){ 'a', 0x20, 'b' }, 3, "ByteLevel's trim_offsets (offsets only) is no matter");
	/* what the scanner does not, through Oniguruma: without merges the ids
	 * are the bytes, and the pieces show in what add_prefix_space adds */
	loads(&(struct tj){ .pre = BL(", \"add_prefix_space\": true, \"trim_offsets\": false, \"use_regex\": true") },
	      "a b", (const int32_t[]){ 0x20, 'a', 0x20, 'b' }, 4, "ByteLevel alone, with add_prefix_space, loads");
	loads(&(struct tj){ .pre = SEQ("{\"type\": \"Digits\", \"individual_digits\": false}",
				       BL(", \"add_prefix_space\": true, \"trim_offsets\": false, \"use_regex\": false")) },
	      "a12b", (const int32_t[]){ 0x20, 'a', 0x20, '1', '2', 0x20, 'b' }, 7,
	      "Digits then ByteLevel with add_prefix_space puts a space before each piece");
	loads(&(struct tj){ .pre = SEQ(BL(", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": true"),
				       SPLIT_ON("{\"String\": \"\xc4\xa0\"}", ", \"behavior\": \"Removed\", \"invert\": false")) },
	      "a b", (const int32_t[]){ 'a', 'b' }, 2, "a Split after ByteLevel sees its characters (\xc4\xa0 for a space)");
}

static void test_model(void)
{
	refused(&(struct tj){ .model = "\"type\": \"WordPiece\"" }, "model: type \"WordPiece\" is not supported (only BPE)",
		"a WordPiece model");
	refused(&(struct tj){ .model = "\"type\": null" }, "model.type: expected a string, not null", "a null model type");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"dropout\": 0.5" },
		"model.dropout: 0.5 is not supported (only 0 or null: BPE dropout leaves merges out at random)", "BPE dropout");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"dropout\": 2" }, "model.dropout: 2 is not from 0 to 1",
		"a dropout above 1 (tokenizers: Dropout should be between 0 and 1)");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"dropout\": \"x\"" }, "model.dropout: expected a number, not a string",
		"a dropout that is not a number");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"byte_fallback\": true" },
		"model.byte_fallback: true is not supported with a ByteLevel pre_tokenizer (byte-level BPE has no <0xNN> "
		"tokens to fall back on)", "byte_fallback");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"byte_fallback\": \"yes\"" },
		"model.byte_fallback: expected true or false, not a string", "a byte_fallback that is a string");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"unk_token\": 5" }, "model.unk_token: expected a string, not a number",
		"an unk_token that is a number");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"continuing_subword_prefix\": \"##\"" },
		"model.continuing_subword_prefix: \"##\" is not supported (only \"\" or null)", "a continuing_subword_prefix");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"end_of_word_suffix\": \"</w>\"" },
		"model.end_of_word_suffix: \"</w>\" is not supported (only \"\" or null)", "an end_of_word_suffix");
	refused(&(struct tj){ .model = "\"type\": \"BPE\", \"ignore_merges\": \"true\"" },
		"model.ignore_merges: expected true or false, not a string", "an ignore_merges that is a string");
	loads(&(struct tj){ .model = "\"dropout\": 0, \"unk_token\": \"a\", \"fuse_unk\": true, \"byte_fallback\": null, "
			    "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": \"\"" },
	      "ab", (const int32_t[]){ 'a', 'b' }, 2, "a model without a type, dropout 0, an unk_token, fuse_unk and empty affixes loads");
}

static void test_vocab(void)
{
	refused(&(struct tj){ .vocab = "[]" }, "model.vocab: expected an object, not an array", "a vocab that is an array");
	refused(&(struct tj){ .vocab = "" }, "model: no \"vocab\"", "a model without a vocab");
	refused(&(struct tj){ .vocab_extra = "\"ab\": 2.5" },
		"model.vocab[\"ab\"]: expected an id (a whole number from 0 to 4294967295), not 2.5", "a fractional id");
	refused(&(struct tj){ .vocab_extra = "\"ab\": -1" },
		"model.vocab[\"ab\"]: expected an id (a whole number from 0 to 4294967295), not -1", "a negative id");
	refused(&(struct tj){ .vocab_extra = "\"ab\": \"300\"" },
		"model.vocab[\"ab\"]: expected an id (a whole number from 0 to 4294967295), not a string", "an id in a string");
	refused(&(struct tj){ .vocab_extra = "\"ab\": 97" },
		"model.vocab[\"ab\"]: id 97 is another token's too (one id for two tokens is not supported)", "an id used twice");
	refused(&(struct tj){ .vocab_extra = "\"a\": 300" }, "model.vocab[\"a\"]: listed twice, with ids 97 and 300",
		"a token listed twice (tokenizers keeps the last, and id 97 decodes to nothing)");
	struct err e = { 0 };
	struct tokenizer *t = build(&(struct tj){ .vocab_extra = "\"ab\": 2000000000" }, &e);
	ok(!t && strstr(e.msg, "tokenizer.json: model.vocab[\"ab\"]: id 2000000000 is beyond the ids") &&
	   strstr(e.msg, "22.4 GiB"), "one sparse vocab id is refused, saying what it would cost: %s", e.msg);
	tok_free(t);
	t = build(&(struct tj){ .vocab_extra = "\"ab\": 4294967295" }, &e);
	ok(!t && strstr(e.msg, "tokenizer.json: model.vocab[\"ab\"]: id 4294967295 is beyond the ids"),
	   "and the largest id tokenizers reads: %s", e.msg);
	tok_free(t);
}

static void test_merges(void)
{
	refused(&(struct tj){ .merges = "" }, "model: no \"merges\"", "a model without merges");
	refused(&(struct tj){ .merges = "{}" }, "model.merges: expected an array, not an object", "merges that are an object");
	refused(&(struct tj){ .merges = "[5]" }, "model.merges[0]: expected \"a b\" or [\"a\", \"b\"], not a number",
		"a merge that is a number");
	refused(&(struct tj){ .merges = "[[\"h\"]]" }, "model.merges[0]: expected \"a b\" or [\"a\", \"b\"], not that array",
		"a merge of one token");
	refused(&(struct tj){ .merges = "[\"h e x\"]" }, "model.merges[0]: \"h e x\" is not two tokens with one space between",
		"a merge of three tokens");
	refused(&(struct tj){ .vocab_extra = "\"he\": 256, \"ab\": 257", .merges = "[[\"h\", \"e\"], \"a b\"]" },
		"model.merges[1]: a string where model.merges[0] is a pair: tokenizers takes merges all as \"a b\" strings "
		"or all as [\"a\", \"b\"] pairs", "merges of both forms in one list");
	refused(&(struct tj){ .merges = "[\"hel lo\"]" }, "model.merges[0]: \"hel\" is not in the vocab",
		"a merge of a token the vocab lacks");
	refused(&(struct tj){ .merges = "[[\"l\", \"o\"]]" },
		"model.merges[0]: \"lo\", the merge of \"l\" and \"o\", is not in the vocab", "a merge whose result the vocab lacks");
	refused(&(struct tj){ .merges = "[[\"\xe4\xb8\x80\", \"a\"]]" }, "model.merges[0]: \"\xe4\xb8\x80\" is not in the vocab",
		"a merge of a token outside the byte table that the vocab lacks");
	refused(&(struct tj){ .vocab_extra = "\"\xe4\xb8\x80\": 256", .merges = "[[\"\xe4\xb8\x80\", \"a\"]]" },
		"model.merges[0]: \"\xe4\xb8\x80" "a\", the merge of \"\xe4\xb8\x80\" and \"a\", is not in the vocab",
		"and one whose result it lacks");
	loads(&(struct tj){ .vocab_extra = "\"\xe4\xb8\x80\": 256, \"\xe4\xb8\x80" "a\": 257", .merges = "[[\"\xe4\xb8\x80\", \"a\"]]" },
	      "\xe4\xb8\x80" "a", (const int32_t[]){ 0xE4, 0xB8, 0x80, 'a' }, 4,
	      "a merge of tokens outside the byte table loads, and no byte-level text reaches it");
	loads(&(struct tj){ .vocab_extra = "\"he\": 256, \"ll\": 257", .merges = "[\"#version: 0.2\", \"h e\", \"#version\", \"l l\"]" },
	      "hell", (const int32_t[]){ 256, 257 }, 2, "\"#version\" lines are skipped wherever they are, as tokenizers does");
	loads(&(struct tj){ .vocab_extra = "\"ll\": 256, \"lo\": 257", .merges = "[[\"l\", \"l\"], [\"l\", \"o\"], [\"l\", \"l\"]]" },
	      "llo", (const int32_t[]){ 'l', 257 }, 2, "a merge listed twice takes its last rank, as in tokenizers");
	loads(&(struct tj){ .vocab = "{\"a\": 0, \"b\": 1, \"ab\": 2}", .merges = "[\"a b\"]" },
	      "ab", (const int32_t[]){ 2 }, 1, "a merge whose left token has id 0 is made");
	loads(&(struct tj){ .vocab = "{\"ab\": 0, \"a\": 1, \"b\": 2}", .model = "\"type\": \"BPE\", \"ignore_merges\": true" },
	      "ab", (const int32_t[]){ 0 }, 1, "with ignore_merges, a word that is vocab id 0 is taken whole");
	/* tokens of 3000 bytes: once refused as "token too long" */
	struct buf v = { 0 }, m = { 0 };
	buf_printf(&v, "\"%0*d\": 256, \"%0*d\": 257, \"%0*d%0*d\": 258", 3000, 1, 3000, 2, 3000, 1, 3000, 2);
	buf_printf(&m, "[[\"%0*d\", \"%0*d\"]]", 3000, 1, 3000, 2);
	buf_put_u8(&v, 0);
	buf_put_u8(&m, 0);
	loads(&(struct tj){ .vocab_extra = (const char *)v.data, .merges = (const char *)m.data }, "", NULL, -1,
	      "a merge of two tokens of 3000 bytes loads");
	buf_free(&v);
	buf_free(&m);
}

static void test_added(void)
{
	static const char lacks[] = "model.vocab lacks one after another, in file order, from the vocab's size (256)";
	char want[512];
	refused(&(struct tj){ .added = "null" }, "added_tokens: expected an array, not null", "null added_tokens");
	refused(&(struct tj){ .added = "[5]" }, "added_tokens[0]: expected an object, not a number", "an added token that is a number");
	refused(&(struct tj){ .added = "[{\"content\": \"<x>\", " FLAGS ", \"special\": true}]" }, "added_tokens[0]: no \"id\"",
		"an added token without an id");
	refused(&(struct tj){ .added = "[{\"id\": 256, " FLAGS ", \"special\": true}]" }, "added_tokens[0]: no \"content\"",
		"an added token without content");
	refused(&(struct tj){ .added = "[{\"id\": -1, \"content\": \"<x>\", " FLAGS ", \"special\": true}]" },
		"added_tokens[0].id: expected an id (a whole number from 0 to 4294967295), not -1", "a negative added id");
	refused(&(struct tj){ .added = "[{\"id\": 256, \"content\": 5, " FLAGS ", \"special\": true}]" },
		"added_tokens[0].content: expected a string, not a number", "content that is a number");
	refused(&(struct tj){ .added = "[{\"id\": 256, \"content\": \"<x>\", " FLAGS "}]" },
		"added_tokens[0]: no \"special\" (tokenizers requires it)", "an added token without special");
	refused(&(struct tj){ .added = "[{\"id\": 256, \"content\": \"<x>\", \"special\": true}]" },
		"added_tokens[0]: no \"normalized\" (tokenizers requires it)", "an added token without its flags");
	refused(&(struct tj){ .added = "[{\"id\": 256, \"content\": \"<x>\", " FLAGS ", \"special\": null}]" },
		"added_tokens[0].special: expected true or false, not null", "a null special");

	/* tokenizers gives an added token its vocab id, else the next id from
	 * the vocab's size on, whatever the file says: these once loaded with
	 * the file's ids, and encoded "<|end|>" as 151643 where tokenizers
	 * gives 256. */
	snprintf(want, sizeof want, "added_tokens[0]: \"<|end|>\" has id 151643, but tokenizers gives it 256: it numbers "
		 "the added tokens that %s", lacks);
	refused(&(struct tj){ .added = "[" TOKEN(151643, "<|end|>") "]" }, want, "an added token past the vocab's end");
	snprintf(want, sizeof want, "added_tokens[0]: \"<|b|>\" has id 257, but tokenizers gives it 256: it numbers "
		 "the added tokens that %s", lacks);
	refused(&(struct tj){ .added = "[" TOKEN(257, "<|b|>") ", " TOKEN(256, "<|a|>") "]" }, want,
		"added tokens numbered out of file order");
	snprintf(want, sizeof want, "added_tokens[0]: \"<|end|>\" has id 100, but tokenizers gives it 256: it numbers "
		 "the added tokens that %s", lacks);
	refused(&(struct tj){ .added = "[" TOKEN(100, "<|end|>") "]" }, want, "an added token on a vocab token's id");
	refused(&(struct tj){ .added = "[" TOKEN(300, "a") "]" },
		"added_tokens[0]: \"a\" has id 300, but tokenizers gives it 97, its id in model.vocab",
		"an added token in the vocab under another id");
	snprintf(want, sizeof want, "added_tokens[1]: \"<|x|>\" has id 256, but tokenizers gives it 257: it numbers "
		 "the added tokens that %s", lacks);
	refused(&(struct tj){ .added = "[" TOKEN(256, "<|end|>") ", " TOKEN(256, "<|x|>") "]" }, want,
		"two added tokens with one id");
	refused(&(struct tj){ .added = "[" TOKEN(256, "<|end|>") ", " TOKEN(257, "<|end|>") "]" },
		"added_tokens[1]: \"<|end|>\" is added_tokens[0] again, with another id (not supported)",
		"an added token listed twice with two ids");
	refused(&(struct tj){ .added = "[" TOKEN(256, "<|end|>") ", {\"id\": 256, \"content\": \"<|end|>\", \"single_word\": false, "
				"\"lstrip\": true, \"rstrip\": false, \"normalized\": false, \"special\": true}]" },
		"added_tokens[1]: \"<|end|>\" is added_tokens[0] again, with another special, normalized, lstrip, rstrip or "
		"single_word (not supported)", "an added token listed twice with other flags (tokenizers takes the last)");
	loads(&(struct tj){ .added = "[" TOKEN(256, "<|end|>") ", " TOKEN(256, "<|end|>") ", " TOKEN(257, "<|x|>") "]" },
	      "<|x|><|end|>", (const int32_t[]){ 257, 256 }, 2, "an added token listed twice alike is taken once, as tokenizers does");
	loads(&(struct tj){ .added = "[" TOKEN(256, "") ", " TOKEN(256, "<|end|>") "]" },
	      "<|end|>", (const int32_t[]){ 256 }, 1, "an empty added token is left out, and takes no id");
	loads(&(struct tj){ .added = "[" TOKEN(97, "a") ", " TOKEN(256, "<|end|>") "]" },
	      "ba<|end|>", (const int32_t[]){ 'b', 97, 256 }, 3, "an added token in the vocab keeps its vocab id");
	loads(&(struct tj){ .vocab_extra = "\"xyz\": 400", .added = "[" TOKEN(257, "<|a|>") ", " TOKEN(400, "xyz") ", " TOKEN(258, "<|b|>") "]" },
	      "<|b|>xyz", (const int32_t[]){ 258, 400 }, 2,
	      "after a vocab with a gap, added tokens count from its size (257 entries), not its largest id");
}

/* encode text with the file j: the ids (want, n), or the error message (err) */
static void encodes(const struct tj *j, const char *text, const int32_t *want, size_t n, const char *err,
		    const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = build(j, &e);
	struct tok_ids got = { 0 };
	int rc = t ? tok_encode(t, text, strlen(text), &got, &e) : -1;
	int good = err ? t && rc < 0 && strcmp(e.msg, err) == 0
		       : rc == 0 && got.n == n && (n == 0 || memcmp(got.v, want, n * sizeof *want) == 0);
	if (!ok(good, "%s", what)) {
		diag("  %s", rc < 0 ? e.msg : "ids differ");
		for (size_t i = 0; i < got.n; i++)
			diag("  got id %d", got.v[i]);
	}
	tok_ids_free(&got);
	tok_free(t);
}

/* Where tokenizers 0.23.2 and we differed: ids written as floats and keys
 * it does not know loaded here, and a byte-level vocab with an unk_token
 * stopped at a byte it lacks where tokenizers puts down unk_token. */
static void test_like_tokenizers(void)
{
	refused(&(struct tj){ .vocab_extra = "\"ab\": 258.0" }, "model.vocab[\"ab\"]: id 258.0 is not written as a whole "
		"number, and tokenizers refuses it (it reads ids as u32)", "a vocab id written 258.0");
	refused(&(struct tj){ .vocab_extra = "\"ab\": 2.58e2" }, "model.vocab[\"ab\"]: id 2.58e2 is not written as a whole "
		"number, and tokenizers refuses it (it reads ids as u32)", "a vocab id written 2.58e2");
	refused(&(struct tj){ .vocab_extra = "\"ab\": 258, \"ba\": -0" }, "model.vocab[\"ba\"]: id -0 is not written as a "
		"whole number, and tokenizers refuses it (it reads ids as u32)", "a vocab id written -0");
	refused(&(struct tj){ .added = "[{\"id\": 256.0, \"content\": \"<|end|>\", " FLAGS ", \"special\": true}]" },
		"added_tokens[0].id: 256.0 is not written as a whole number, and tokenizers refuses it (it reads ids as u32)",
		"an added token's id written 256.0");
	loads(&(struct tj){ .vocab_extra = "\"ab\": 258" }, "", NULL, -1, "a vocab id written 258 loads");

	struct buf b = { 0 };
	compose(&(struct tj){ 0 }, &b);
	static const char *const keys[] = { "\"version\": \"1.0\", \"truncation\": null, \"padding\": null, "
					    "\"post_processor\": null, ", "\"foo\": 1, ", "\"Version\": \"1.0\", ",
					    "\"truncation\": {\"direction\": \"Right\", \"max_length\": 2, \"strategy\": "
					    "\"LongestFirst\", \"stride\": 0}, ",
					    "\"padding\": {\"strategy\": {\"Fixed\": 8}, \"direction\": \"Right\", "
					    "\"pad_to_multiple_of\": null, \"pad_id\": 0, \"pad_type_id\": 0, \"pad_token\": \"a\"}, " };
	static const char *const want[] = { NULL, "\"foo\": not a key of tokenizer.json", "\"Version\": not a key of "
					    "tokenizer.json", "truncation: an object is not supported (only null: tokenizers "
					    "would cut each encoding to its max_length)", "padding: an object is not supported "
					    "(only null: tokenizers would pad each encoding)" };
	for (int i = 0; i < 5; i++) {
		struct buf f = { 0 };
		struct err e = { 0 };
		buf_printf(&f, "{%s%s", keys[i], (const char *)b.data + 1);
		struct tokenizer *t = tok_load_mem((const char *)f.data, f.len, "tokenizer.json", &e);
		if (!want[i])
			ok(t != NULL, "a file with version, truncation, padding and post_processor loads: %s", t ? "" : e.msg);
		else
			ok(!t && strstr(e.msg, want[i]) && (i > 2 || strstr(e.msg, "(tokenizers refuses the file; it takes "
			   "version, truncation, padding, added_tokens, normalizer, pre_tokenizer, post_processor, decoder "
			   "and model)")), "a file with %.40s... is refused: %s", keys[i], e.msg);
		tok_free(t);
		buf_free(&f);
	}
	buf_free(&b);

	/* byte-level, a vocab without a and b: unk_token for them, a run of
	 * them one with fuse_unk (ids as tokenizers gives them) */
	const char *vocab = "{\"<unk>\": 0, \"\u0120\": 1, \"c\": 2, \"x\": 3, \"y\": 4}";
	const char *fuse = "\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true";
	const char *nofuse = "\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": false";
	encodes(&(struct tj){ .vocab = vocab, .model = fuse }, "ab cab", (const int32_t[]){ 0, 1, 2, 0 }, 4, NULL,
		"byte-level: bytes the vocab lacks are unk_token, fused");
	encodes(&(struct tj){ .vocab = vocab, .model = fuse }, "xaby", (const int32_t[]){ 3, 0, 4 }, 3, NULL,
		"byte-level: a fused unk_token between known bytes");
	encodes(&(struct tj){ .vocab = vocab, .model = nofuse }, "ab cab", (const int32_t[]){ 0, 0, 1, 2, 0, 0 }, 6, NULL,
		"byte-level: without fuse_unk, one unk_token a byte");
	encodes(&(struct tj){ .vocab = vocab, .model = "\"type\": \"BPE\", \"unk_token\": \"<nope>\"" }, "ab", NULL, 0,
		"model.unk_token \"<nope>\" is not in the vocab, and the text needs it",
		"byte-level: an unk_token the vocab lacks fails the text that needs it, as in tokenizers");
	encodes(&(struct tj){ .vocab = vocab, .model = "\"type\": \"BPE\", \"unk_token\": \"<nope>\"" }, "xy",
		(const int32_t[]){ 3, 4 }, 2, NULL, "and a text that does not need it encodes");
	encodes(&(struct tj){ .vocab = vocab }, "xay", NULL, 0, "byte 0x61 ('a') has no token in this vocabulary",
		"byte-level without unk_token: a byte the vocab lacks is still an error naming it");
	encodes(&(struct tj){ .vocab = vocab }, "x\x7f", NULL, 0, "byte 0x7f has no token in this vocabulary",
		"and DEL, which does not print, is named by its code alone");
}

/* SentencePiece-style files: what loads, what is refused, how unknown
 * characters go (ids as tokenizers 0.23.2 gives them). */
#define SPM_VOCAB "{\"<unk>\": 0, \"a\": 1, \"b\": 2, \"<0xC3>\": 3, \"<0xA9>\": 4, \"ab\": 5}"
#define SPM_MODEL(rest) "\"type\": \"BPE\"" rest
#define META(rest) "{\"type\": \"Metaspace\", \"replacement\": \"\u2581\"" rest "}"
#define FUSE "{\"type\": \"Fuse\"}"

static void test_spm(void)
{
	struct tj j = { .pre = "null", .decoder = FUSE, .vocab = SPM_VOCAB, .merges = "[\"a b\"]",
			.model = SPM_MODEL(", \"byte_fallback\": true") };
	encodes(&j, "a\xc3\xa9" "b", (const int32_t[]){ 1, 3, 4, 2 }, 4, NULL, "byte_fallback: é is <0xC3> <0xA9>");
	j.model = SPM_MODEL(", \"byte_fallback\": true, \"unk_token\": \"<unk>\"");
	encodes(&j, "a\xc3\xa9\xe2\x82\xac\xe2\x82\xac" "b", (const int32_t[]){ 1, 3, 4, 0, 0, 2 }, 6, NULL,
		"€, which has no <0xE2>, is unk_token, once each without fuse_unk");
	j.model = SPM_MODEL(", \"byte_fallback\": true, \"unk_token\": \"<unk>\", \"fuse_unk\": true");
	encodes(&j, "\xe2\x82\xac\xc3\xa9\xe2\x82\xac" "b", (const int32_t[]){ 3, 4, 0, 2 }, 4, NULL,
		"with fuse_unk, a waiting unk_token goes after <0xNN> tokens and fuses on, as in tokenizers");
	j.model = SPM_MODEL("");
	encodes(&j, "a\xe2\x82\xac", NULL, 0, "character U+20AC has no token in this vocabulary, and there is no unk_token",
		"no unk_token nor byte_fallback: a character the vocab lacks is an error naming it");
	j.model = SPM_MODEL(", \"byte_fallback\": true");
	encodes(&j, "a\xe2\x82\xac", NULL, 0, "character U+20AC has no token in this vocabulary, and there is no unk_token "
		"nor all its <0xNN> tokens", "and with byte_fallback, when a <0xNN> is missing too");

	refused(&(struct tj){ .pre = "null", .vocab = SPM_VOCAB }, "decoder: ByteLevel with no pre_tokenizer is not supported "
		"(ByteLevel goes with a ByteLevel pre_tokenizer only)", "SentencePiece-style with a ByteLevel decoder");
	refused(&(struct tj){ .pre = META(", \"add_prefix_space\": false"), .decoder = FUSE, .vocab = SPM_VOCAB },
		"pre_tokenizer.add_prefix_space: false does not match prepend_scheme always, as tokenizers takes it when "
		"missing, (tokenizers refuses it)", "Metaspace with add_prefix_space false and no prepend_scheme");
	loads(&(struct tj){ .pre = META(", \"add_prefix_space\": false, \"prepend_scheme\": \"never\""), .decoder = FUSE,
			    .vocab = SPM_VOCAB }, "ab", (const int32_t[]){ 1, 2 }, 2,
	      "Metaspace with add_prefix_space false and prepend_scheme never loads");
	refused(&(struct tj){ .pre = META(", \"prepend_scheme\": \"First\""), .decoder = FUSE, .vocab = SPM_VOCAB },
		"pre_tokenizer.prepend_scheme: expected \"first\", \"always\" or \"never\", not \"First\"",
		"Metaspace with prepend_scheme First");
	refused(&(struct tj){ .pre = META(", \"prepend_scheme\": null"), .decoder = FUSE, .vocab = SPM_VOCAB },
		"pre_tokenizer.prepend_scheme: expected \"first\", \"always\" or \"never\", not null",
		"Metaspace with prepend_scheme null (tokenizers refuses it)");
	refused(&(struct tj){ .pre = "{\"type\": \"Metaspace\", \"replacement\": \"ab\"}", .decoder = FUSE,
			      .vocab = SPM_VOCAB },
		"pre_tokenizer.replacement: \"ab\" is not one character (tokenizers requires one)",
		"Metaspace with a replacement of two characters");
	refused(&(struct tj){ .pre = "{\"type\": \"Metaspace\"}", .decoder = FUSE, .vocab = SPM_VOCAB },
		"pre_tokenizer: no \"replacement\" (tokenizers requires it)", "Metaspace without a replacement");
	loads(&(struct tj){ .pre = "null", .decoder = FUSE, .vocab = SPM_VOCAB,
			    .normalizer = "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\"}, \"content\": \"b\"}" },
	      "a  a a", (const int32_t[]){ 1, 2, 1, 2, 1 }, 5, "a Replace normalizer with a Regex puts its content for each match");
	refused(&(struct tj){ .pre = "null", .decoder = FUSE, .vocab = SPM_VOCAB,
			      .normalizer = "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"[\"}, \"content\": \"_\"}" },
		"normalizer.pattern.Regex: \"[\" does not compile: premature end of char-class (Oniguruma)",
		"a Replace normalizer whose Regex does not compile");
	refused(&(struct tj){ .pre = "null", .decoder = FUSE, .vocab = SPM_VOCAB,
			      .normalizer = "{\"type\": \"Replace\", \"pattern\": {\"Regexp\": \" \"}, \"content\": \"_\"}" },
		"normalizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}, not that object",
		"a Replace normalizer with a pattern of another kind");
	refused(&(struct tj){ .pre = "null", .vocab = SPM_VOCAB, .decoder = "{\"type\": \"Sequence\", \"decoders\": ["
			      "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(?<x\"}, \"content\": \" \"}]}" },
		"decoder.decoders[0].pattern.Regex: \"(?<x\" does not compile: invalid group name <x> (Oniguruma)",
		"a Replace decoder whose Regex does not compile");
	refused(&(struct tj){ .pre = "null", .decoder = FUSE, .vocab = SPM_VOCAB,
			      .normalizer = "{\"type\": \"Prepend\"}" },
		"normalizer: no \"prepend\" (tokenizers requires it)", "a Prepend normalizer without its string");
	refused(&(struct tj){ .pre = "null", .vocab = SPM_VOCAB,
			      .decoder = "{\"type\": \"Strip\", \"content\": \" \", \"start\": 1.5, \"stop\": 0}" },
		"decoder.start: expected an id (a whole number from 0 to 4294967295), not 1.5", "a Strip decoder cutting 1.5");
	refused(&(struct tj){ .pre = "null", .vocab = SPM_VOCAB, .decoder = "{\"type\": \"Sequence\", \"decoders\": ["
			      "{\"type\": \"Replace\", \"pattern\": {\"String\": \"\u2581\"}, \"content\": \" \"}, "
			      "{\"type\": \"CTC\"}]}" },
		"decoder.decoders[1]: type \"CTC\" is not supported: " DEC_ONLY, "a CTC decoder in a Sequence");

	/* Llama 2's normalizer: "▁" before each stretch between added tokens,
	 * spaces as "▁" */
	struct tj l = { .pre = "null", .decoder = FUSE, .added = "[" TOKEN(7, "<s>") "]",
			.vocab = "{\"<unk>\": 0, \"\u2581\": 1, \"a\": 2, \"b\": 3, \"\u2581a\": 4, \"\u2581b\": 5, \"<s>\": 7}",
			.merges = "[\"\u2581 a\", \"\u2581 b\"]", .model = SPM_MODEL(", \"unk_token\": \"<unk>\""),
			.normalizer = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}, "
				      "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]}" };
	encodes(&l, "a<s>b a", (const int32_t[]){ 4, 7, 5, 4 }, 4, NULL, "Prepend puts \"\u2581\" before each stretch");
	encodes(&l, "<s>", (const int32_t[]){ 7 }, 1, NULL, "and none where there is no text");
}

/* The text tok_decode gives for ids (n of them) equals want exactly. */
static void decodes(const struct tj *j, const int32_t *ids, size_t n, const char *want, const char *what)
{
	struct err e = { 0 };
	struct tokenizer *t = build(j, &e);
	struct buf out = { 0 };
	int rc = t ? tok_decode(t, ids, n, 0, &out, &e) : -1;
	if (!ok(rc == 0 && out.len == strlen(want) && (out.len == 0 || memcmp(out.data, want, out.len) == 0), "%s", what))
		diag("  %s: got \"%.*s\"", rc < 0 ? e.msg : "text differs", (int)out.len, out.data ? (char *)out.data : "");
	buf_free(&out);
	tok_free(t);
}

/* SentencePiece-style decoding by hand, as tokenizers' decoders do it:
 * ByteFallback reads <0xNN>'s two digits with u8::from_str_radix(.., 16),
 * which takes lowercase digits too and refuses what is not hex; Strip cuts
 * each token on its own (and panics on an empty one when stop is > 0). */
#define BYTE_VOCAB "{\"<unk>\": 0, \"a\": 1, \"<0xc3>\": 2, \"<0xbf>\": 3, \"<0xzz>\": 4, \"\u2581b\": 5, " \
	"\"<0X41>\": 6, \"<0y41>\": 7, \"\u2581\": 8}"
static void test_spm_decode(void)
{
	struct tj j = { .pre = "null", .vocab = BYTE_VOCAB, .model = SPM_MODEL(""),
			.decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, " FUSE "]}" };
	decodes(&j, (const int32_t[]){ 1, 2, 3, 1 }, 4, "a\xc3\xbf" "a", "<0xc3> <0xbf>, in lowercase, are the bytes of \u00ff");
	decodes(&j, (const int32_t[]){ 1, 4, 1 }, 3, "a<0xzz>a", "<0xzz>, not hex, stays text");
	decodes(&j, (const int32_t[]){ 6, 7 }, 2, "<0X41><0y41>", "<0X41> and <0y41>, not \"<0x\", stay text");
	int32_t many[100];
	for (int i = 0; i < 100; i++)
		many[i] = 1;
	decodes(&j, many, 100, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaa", "100 tokens (past a first allocation of 64) decode to 100 a's");
	/* Strip right after a step that is not Fuse: each token cut alone,
	 * none of them empty, so tokenizers does not panic */
	j.decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\u2581\"}, "
		    "\"content\": \" \"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": 0, \"stop\": 1}]}";
	decodes(&j, (const int32_t[]){ 1, 5 }, 2, "a b", "Replace then Strip(\" \", 0, 1) of a \u2581b gives \"a b\"");
	/* Strip's start stops at the token's end: " " is cut to "", and the
	 * next token's space is its own */
	j.decoder = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\u2581\"}, "
		    "\"content\": \" \"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": 2, \"stop\": 0}]}";
	decodes(&j, (const int32_t[]){ 8, 5 }, 2, "b", "Replace then Strip(\" \", 2, 0) of \u2581 \u2581b gives \"b\"");
	/* byte-level: a lone byte that is not UTF-8 is U+FFFD, as from_utf8_lossy gives it */
	decodes(&(struct tj){ 0 }, (const int32_t[]){ 0xC3 }, 1, "\xEF\xBF\xBD", "a lone byte 0xC3 decodes to U+FFFD");
}

int main(void)
{
	struct err e = { 0 };
	struct tokenizer *t = build(&(struct tj){ .added = "[" TOKEN(256, "<|end|>") "]" }, &e);
	if (!ok(t != NULL, "a vocab of the 256 bytes with an added token at id 256 loads"))
		diag("%s", e.msg);
	ok(t && tok_vocab_size(t) == 257, "its vocabulary size counts to the added token");
	tok_free(t);

	test_file();
	test_decoder_normalizer();
	test_pre_tokenizer();
	test_model();
	test_vocab();
	test_merges();
	test_added();
	test_like_tokenizers();
	test_spm();
	test_spm_decode();

	/* a vocab of a few bytes, as examples/addition's: the digits, + and = */
	static const char small[] =
		"{\"normalizer\": null, \"pre_tokenizer\": " PRE ", \"decoder\": " DEC ", "
		"\"added_tokens\": [" TOKEN(12, "<|end|>") "], "
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

	/* Added tokens that are prefixes of one another: leftmost, then
	 * longest. The ids are those of tokenizers 0.23.2 (its Node binding)
	 * for this tokenizer.json. */
	t = build(&(struct tj){ .added = "[" TOKEN(256, "<<") ", " TOKEN(257, "<a") ", " TOKEN(258, "<ab") ", "
				TOKEN(259, "<abc>") ", " TOKEN(260, "<b") ", " TOKEN(261, "<|x|>") ", " TOKEN(262, "<|x") "]" }, &e);
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
	buf_put_u8(&many, '[');
	for (int k = 0; k < 65536; k++)
		buf_printf(&many, "%s{\"id\": %d, \"content\": \"<|t%05d|>\", " FLAGS ", \"special\": true}", k ? ", " : "", 256 + k, k);
	buf_printf(&many, "]");
	buf_put_u8(&many, 0);
	t = build(&(struct tj){ .added = (const char *)many.data }, &e);
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
	ok(rc == 0 && ids.n == nlt + 1 && ids.v[nlt] == 256 + 1234, "32 KiB of '<' then one of them encodes");
	diag("in %.3f s of CPU", secs);   /* said, not asserted: a bound fails on a slow machine */
	free(lt);
	tok_ids_free(&ids);
	tok_free(t);
	return tap_done();
}
