/* data/jsonpick against cJSON, its reference: the same values accepted and
 * refused at the same byte, on crafted lines and on every line of
 * tests/data/collect cut short and corrupted at every byte; spans read back
 * element by element as the values cJSON parses; members left out by key. */
#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"
#include "tap.h"

/* What cJSON makes of a line, after json_fix_nonfinite as the importers did:
 * the tree, printed ("" when refused), and where it stopped, from 1. */
struct outcome {
	char *tree;
	size_t at;
};

static void ref_parse(const char *s, size_t n, struct outcome *o)
{
	char *fixed = NULL;
	size_t fn = 0;
	const char *end = NULL;
	int fx = json_fix_nonfinite(s, n, &fixed, &fn);
	const char *t = fx == 1 ? fixed : s;
	cJSON *v = cJSON_ParseWithLengthOpts(t, fx == 1 ? fn : n, &end, 0);
	o->tree = v ? cJSON_PrintUnformatted(v) : strdup("");
	o->at = (size_t)(end - t) + (v ? 0 : 1);
	cJSON_Delete(v);
	free(fixed);
}

/* A tree with its spans read back through the iterator into parsed nodes. */
static cJSON *expand(const cJSON *v)
{
	if (jsonpick_is_span(v)) {
		cJSON *a = cJSON_CreateArray();
		struct jsonpick_iter it;
		for (const cJSON *x = jsonpick_iter_start(&it, v); x; x = jsonpick_iter_next(&it))
			cJSON_AddItemToArray(a, expand(x));
		jsonpick_iter_end(&it);
		return a;
	}
	cJSON *c = cJSON_Duplicate(v, 0);
	if (cJSON_IsArray(v) || cJSON_IsObject(v))
		for (const cJSON *x = v->child; x; x = x->next) {
			cJSON *e = expand(x);
			if (x->string)
				cJSON_AddItemToObject(c, x->string, e);
			else
				cJSON_AddItemToArray(c, e);
		}
	return c;
}

static void pick_parse(const char *s, size_t n, const struct jsonpick_keys *k, struct outcome *o)
{
	char *fixed = NULL;
	size_t fn = 0, bad;
	const char *end = NULL;
	int fx = json_fix_nonfinite(s, n, &fixed, &fn);
	const char *t = fx == 1 ? fixed : s;
	cJSON *v = jsonpick_parse(t, fx == 1 ? fn : n, k, &end, &bad);
	cJSON *full = v ? expand(v) : NULL;
	o->tree = full ? cJSON_PrintUnformatted(full) : strdup("");
	o->at = v ? (size_t)(end - t) : bad;
	cJSON_Delete(full);
	cJSON_Delete(v);
	free(fixed);
}

/* Every member a span: the hardest case for reading them back. */
static const char *const all_spans[] = {
	"a", "b", "ids", "x", "prompt_token_ids", "token_ids", "token_logprobs", "tokens", "text_offset",
	"top_logprobs", "logprobs", "output_token_logprobs", "input_token_logprobs", "prompt_tokens",
	"response_tokens", "tokens", "masks", "inference_logprobs", "completion_ids", "prompt_ids",
	"input_ids", "prompt", "content", "bytes", "scores", "advantages", "ref_logprobs", "output_ids",
};
static const struct jsonpick_keys spans = { NULL, 0, 0, all_spans, sizeof all_spans / sizeof *all_spans };

/* 0 when jsonpick (with keys k) and cJSON agree on s; else prints why. */
static int agree(const char *s, size_t n, const struct jsonpick_keys *k, int quiet)
{
	struct outcome a, b;
	ref_parse(s, n, &a);
	pick_parse(s, n, k, &b);
	int same = strcmp(a.tree, b.tree) == 0 && a.at == b.at;
	if (!same && !quiet)
		printf("# %.*s\n#   cJSON    %zu '%.200s'\n#   jsonpick %zu '%.200s'\n", (int)(n > 300 ? 300 : n), s, a.at,
		       a.tree, b.at, b.tree);
	free(a.tree);
	free(b.tree);
	return !same;
}

static void test_crafted(void)
{
	static const char *const lines[] = {
		"null", "nullx", "true", "false", "tru", "1", "-", "-x", "01", "1.2.3", "[.5]", "[+1]", "[1e999]",
		"[-1e999,1e-999]", "1e", "[1,]", "[1 2]", "[1,,2]", "[1-2]", "[01x]", "[1,2", "[", "]", "{", "{}",
		"{ }", "[ ]", "{\"a\":1,}", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\" 1}", "{\"a\":1 \"b\":2}",
		"\"abc", "\"a\\\"b\"", "\"\\uZZZZ\"", "\"\\u00e9\\u20AC\"", "\"\\ud83d\\ude00\"", "\"\\ud800\"",
		"\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\x\"", "\"a\\", "\"\\u12\"", "[\"\\/\\b\\f\\n\\r\\t\"]",
		"NaN", "[NaN,Infinity,-Infinity]", "[NaNx]", "[- Infinity]", "{\"s\":\"NaN\",\"NaN\":NaN}",
		"[19,151645Infinity]", "{\"a\":[1eInfinity]}",
		"\xEF\xBB\xBF[1]", "\xEF\xBB\xBF", "[1]x", "  [1]  ", "[[1,2],[3,[4]]]", "[[],[1]]", "[[]]",
		"{\"a\":[1,\"x\",null,true,false,[2,3],[]],\"b\":[[1,null,\"t\"],[2,-0.5,null]]}",
		"{\"a\":[1,{\"b\":2}]}", "{\"a\":[[[1]]]}", "{\"ids\":[1,2,3e400,-0,0.1e-2]}",
		"{\"ids\":[12345678901234567890123456789012345678901234567890123456789012345]}",
		"{\"ids\":[1234567890123456789012345678901234567890123456789012345678901234.5.5]}",
		"{\"x\":[\"\\u0001\",\"a\\\"]\",\"[\"]}", "{\"a\":[1\n,\t2\r]}", "{\"a\":[1,2}", "{\"a\":[[1,2],[3}",
		"{\"a\" : [ [ 1 , 2 ] , [ ] ] , \"b\" : [ ] }",
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		bad += agree(lines[i], strlen(lines[i]), NULL, 0);
		bad += agree(lines[i], strlen(lines[i]), &spans, 0);
	}
	ok(bad == 0, "%zu crafted lines: the same values and the same refusals as cJSON, spans or not",
	   sizeof lines / sizeof *lines);

	/* the nesting limit, at the same depth */
	struct buf b = { 0 };
	bad = 0;
	for (int depth = CJSON_NESTING_LIMIT - 1; depth <= CJSON_NESTING_LIMIT + 1; depth++) {
		b.len = 0;
		buf_printf(&b, "{\"a\":");
		for (int i = 1; i < depth; i++)
			buf_append(&b, "[", 1);
		for (int i = 1; i < depth; i++)
			buf_append(&b, "]", 1);
		buf_append(&b, "}", 1);
		bad += agree((const char *)b.data, b.len, &spans, 0);
	}
	buf_free(&b);
	ok(bad == 0, "nested %d deep: refused where cJSON refuses", CJSON_NESTING_LIMIT);
}

/* Every line of every input of tests/data/collect, whole, cut short at every
 * byte and with each byte replaced by each of a few others. */
static void test_corpus(void)
{
	const char *top = getenv("GRPO_TOP");
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/tests/data/collect", top ? top : ".");
	DIR *d = opendir(dir);
	if (!d) {
		ok(0, "%s: cannot list it", dir);
		return;
	}
	static const char subst[] = "\"]},x\\";
	long lines = 0, cases = 0, bad = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "SOURCES") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "r");
		char *line = NULL;
		size_t cap = 0;
		ssize_t len;
		while (f && (len = getline(&line, &cap, f)) > 0) {
			size_t n = (size_t)len;
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				n--;
			lines++;
			bad += agree(line, n, NULL, bad > 3) + agree(line, n, &spans, bad > 3);
			cases += 2;
			for (size_t k = 1; k < n; k++, cases++)
				bad += agree(line, k, &spans, bad > 3);
			char *m = malloc(n ? n : 1);
			for (size_t i = 0; i < n; i++)
				for (const char *c = subst; *c; c++, cases++) {
					memcpy(m, line, n);
					m[i] = *c;
					bad += agree(m, n, &spans, bad > 3);
				}
			free(m);
		}
		free(line);
		if (f)
			fclose(f);
	}
	closedir(d);
	ok(lines > 30 && bad == 0, "%ld lines of tests/data/collect, %ld cases (cut short, corrupted): %ld disagree "
	   "with cJSON", lines, cases, bad);
}

static void test_keys(void)
{
	static const char *const keep[] = { "choices", "token_ids", "logprobs", "token_logprobs" };
	static const char *const sp[] = { "token_ids", "token_logprobs" };
	struct jsonpick_keys k = { keep, 4, 0, sp, 2 };
	const char *s = "{\"id\":\"c\",\"choices\":[{\"text\":\"ab\",\"logprobs\":{\"token_logprobs\":[-1,-2],"
			"\"top_logprobs\":[{\"a\":-1},{\"b\":-2}],\"text_offset\":[0,1]},\"token_ids\":[5,6]}],"
			"\"usage\":{\"x\":[1,{\"y\":[2]}]}}";
	const char *end;
	size_t bad;
	cJSON *v = jsonpick_parse(s, strlen(s), &k, &end, &bad);
	cJSON *full = v ? expand(v) : NULL;
	char *p = full ? cJSON_PrintUnformatted(full) : NULL;
	ok(p && strcmp(p, "{\"choices\":[{\"logprobs\":{\"token_logprobs\":[-1,-2]},\"token_ids\":[5,6]}]}") == 0 &&
	   end == s + strlen(s), "only the members asked for, at any depth: %s", p ? p : "(refused)");
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(v, "choices");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(ch ? ch->child : NULL, "token_ids");
	ok(jsonpick_is_span(ids) && jsonpick_is_array(ids) && !cJSON_IsArray(ids) && jsonpick_size(ids) == 2,
	   "token_ids is a span of 2");
	int32_t *a = NULL;
	uint32_t n = 0;
	struct err e;
	ok(json_get_i32_array(ids, "token_ids", &a, &n, &e) == 0 && n == 2 && a[0] == 5 && a[1] == 6,
	   "read straight into an array by json_get_i32_array");
	cJSON tmp;
	const cJSON *x = jsonpick_at(ids, 1, &tmp);
	ok(x == &tmp && cJSON_IsNumber(x) && x->valuedouble == 6 && !jsonpick_at(ids, 2, &tmp) &&
	   !jsonpick_at(ch, 1, &tmp), "jsonpick_at: element 1, none past the end");
	free(a);
	free(p);
	cJSON_Delete(full);
	cJSON_Delete(v);

	/* keys that are token ids (the Atropos demo server's dictionaries) */
	k.keep_numbers = 1;
	s = "{\"logprobs\":[[[{\"220\":-0.5}]]],\"x\":{\"7\":1}}";
	v = jsonpick_parse(s, strlen(s), &k, &end, &bad);
	p = v ? cJSON_PrintUnformatted(v) : NULL;
	ok(p && strcmp(p, "{\"logprobs\":[[[{\"220\":-0.5}]]]}") == 0, "keep_numbers keeps members keyed by a number: %s",
	   p ? p : "(refused)");
	free(p);
	cJSON_Delete(v);
}

int main(void)
{
	test_crafted();
	test_keys();
	test_corpus();
	return tap_done();
}
