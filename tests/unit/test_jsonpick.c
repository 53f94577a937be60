/* data/jsonpick against cJSON, its reference: the same values accepted and
 * refused at the same byte, on crafted lines and on every line of
 * tests/data/collect cut short and corrupted at every byte; spans read back
 * element by element as the values cJSON parses, each span its array's
 * exact text; members left out by key, as cJSON's tree pruned of them. Every
 * line is read where a page no one may read follows it, so a look past its
 * end crashes the test. */
#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/buf.h"
#include "data/jsonpick.h"
#include "data/jsonview.h"
#include "tap.h"

/* n bytes of s copied to end just before a page no one may read: a reader
 * that looks past the line's end crashes here, whatever the byte there. Two
 * fences: the line, and its text after json_fix_nonfinite. */
static const char *fenced(int which, const char *s, size_t n)
{
	static char *base[2];
	static size_t room[2];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (n > room[which]) {
		if (base[which])
			munmap(base[which], room[which] + page);
		room[which] = (n + page - 1) / page * page;
		base[which] = mmap(NULL, room[which] + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base[which] == MAP_FAILED || mprotect(base[which] + room[which], page, PROT_NONE) < 0)
			abort();
	}
	return memcpy(base[which] + room[which] - n, s, n);
}

/* What cJSON makes of a line, after json_fix_nonfinite as the importers did:
 * the tree, printed ("" when refused), and where it stopped, from 1. */
struct outcome {
	char *tree;
	size_t at;
};

/* Whether jsonpick keeps a member of this key, as jsonpick.h says. */
static int kept(const char *key, const struct jsonpick_keys *k)
{
	char *after;
	for (size_t i = 0; i < k->n_keep; i++)
		if (strcmp(k->keep[i], key) == 0)
			return 1;
	strtol(key, &after, 10);
	return k->keep_numbers && after != key && *after == 0;
}

/* cJSON's tree without the members k leaves out, at any depth. */
static void prune(cJSON *v, const struct jsonpick_keys *k)
{
	for (cJSON *c = v ? v->child : NULL, *next; c; c = next) {
		next = c->next;
		if (cJSON_IsObject(v) && !kept(c->string, k))
			cJSON_Delete(cJSON_DetachItemViaPointer(v, c));
		else
			prune(c, k);
	}
}

static void ref_parse(const char *s, size_t n, const struct jsonpick_keys *k, struct outcome *o)
{
	char *fixed = NULL;
	size_t fn = 0;
	const char *end = NULL;
	int fx = json_fix_nonfinite(s, n, &fixed, &fn);
	const char *t = fx == 1 ? fenced(1, fixed, fn) : s;
	cJSON *v = cJSON_ParseWithLengthOpts(t, fx == 1 ? fn : n, &end, 0);
	if (k && k->keep)
		prune(v, k);
	o->tree = v ? cJSON_PrintUnformatted(v) : strdup("");
	o->at = (size_t)(end - t) + (v ? 0 : 1);
	cJSON_Delete(v);
	free(fixed);
}

/* The line a tree was read from, and whether a span was found that is not
 * its array's exact text in it. */
static const char *line_at;
static size_t line_n;
static int span_wrong;

/* A span is the text of its array, from '[' to ']', within the line, of
 * as many elements as cJSON finds there. */
static int span_exact(const cJSON *v)
{
	const char *s = v->valuestring, *e = NULL;
	size_t len = (size_t)v->valuedouble;
	if (s < line_at || len < 2 || len > line_n || s + len > line_at + line_n || s[0] != '[' || s[len - 1] != ']')
		return 0;
	cJSON *a = cJSON_ParseWithLengthOpts(s, len, &e, 0);
	int exact = cJSON_IsArray(a) && e == s + len && cJSON_GetArraySize(a) == v->valueint;
	cJSON_Delete(a);
	return exact;
}

/* A tree with its spans read back through the iterator into parsed nodes. */
static cJSON *expand(const cJSON *v)
{
	if (jsonpick_is_span(v)) {
		if (!span_exact(v))
			span_wrong = 1;
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
	const char *t = fx == 1 ? fenced(1, fixed, fn) : s;
	cJSON *v = jsonpick_parse(t, fx == 1 ? fn : n, k, &end, &bad);
	line_at = t;
	line_n = fx == 1 ? fn : n;
	span_wrong = 0;
	cJSON *full = v ? expand(v) : NULL;
	o->tree = full ? cJSON_PrintUnformatted(full) : strdup("");
	if (span_wrong) {
		free(o->tree);
		o->tree = strdup("(a span that is not its array's text)");
	}
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

/* Some members kept, and those keyed by numbers. */
static const char *const some_keys[] = { "a", "ids", "choices", "token_ids", "logprobs", "x", "text", "content" };
static const struct jsonpick_keys picked = { some_keys, sizeof some_keys / sizeof *some_keys, 1, all_spans,
					     sizeof all_spans / sizeof *all_spans };

/* 0 when jsonpick (with keys k) and cJSON (its tree less the members k
 * leaves out) agree on s, read where nothing follows it; else prints why. */
static int agree(const char *s, size_t n, const struct jsonpick_keys *k, int quiet)
{
	struct outcome a, b;
	const char *f = fenced(0, s, n);
	ref_parse(f, n, k, &a);
	pick_parse(f, n, k, &b);
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
		/* a byte order mark before one byte (cJSON skips it only before more) */
		"\xEF\xBB\xBF" "1", "\xEF\xBB\xBF" "12", "\xEF\xBB\xBF" " 1",
		/* blanks are the bytes up to 32: '!' (33) is none, 0x80 and up neither */
		"[1,\x1f" "2]", "[1 !]", "[1,!2]", "{\"a\":!1}", "{\"a\"!:1}", "! 1", "[1\x80]", "[\xa0" "1]",
		/* members in any order, kept or not, escaped keys, nested picks */
		"{\"usage\":{\"a\":[1],\"ids\":[2]},\"ids\":[3],\"a\":{\"x\":[4,5],\"y\":[6]}}",
		"{\"\\u0069ds\":[1,2],\"i\\u0064s\":[3],\"\\\"a\":[4],\"a\\n\":5,\"\\u0061\":\"\\u00e9\\ud83d\\ude00\"}",
		"{\"12\":1,\" 7\":2,\"-3\":3,\"+4\":4,\"12a\":5,\"\":6,\"1.5\":7,\"0x1\":8}",
		"{\"choices\":[{\"text\":\"a\\\"\\\\\\/b\",\"logprobs\":{\"token_logprobs\":[-0.5,null]},\"other\":[[1]]}]}",
		/* spans of every scalar, rows, blanks, numbers in every JSON form */
		"{\"ids\":[ 0 , -0 , 12 , -12.5e+3 , 1E-2 , 0.0 , 1e400 , \"\\u0041]\" , null , true , false ]}",
		"{\"a\":[[1,\"x\"],[ ],[null , true],[false]],\"b\":[[],[]],\"x\":[[1,[2]],3]}",
		"{\"a\":[true],\"b\":[false],\"x\":[null],\"ids\":[\"\"]}", "{\"a\":[tru]}", "{\"a\":[fals]}",
		"{\"a\":[1,2]  }", "{\"a\":[1,2]\t,\"b\":1}", "{\"a\":[1 ,2 ]}", "{\"a\":[[1] ,[2] ]}",
	};
	static const struct jsonpick_keys *const keysets[] = { NULL, &spans, &picked };
	int bad = 0;
	for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
		size_t n = strlen(lines[i]);
		for (size_t j = 0; j < 3; j++)
			bad += agree(lines[i], n, keysets[j], 0);
		for (size_t k = 0; k < n; k++)
			bad += agree(lines[i], k, &picked, 0);
	}
	ok(bad == 0, "%zu crafted lines, whole and cut short: the same values and the same refusals as cJSON, "
	   "spans or not, members picked or not", sizeof lines / sizeof *lines);

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
	/* a span's member deep in objects: its rows may pass the limit */
	for (int depth = CJSON_NESTING_LIMIT - 3; depth <= CJSON_NESTING_LIMIT; depth++)
		for (int rows = 0; rows < 2; rows++) {
			b.len = 0;
			for (int i = 1; i < depth; i++)
				buf_printf(&b, "{\"x\":");
			buf_printf(&b, rows ? "{\"a\":[[1],[2]]}" : "{\"a\":[1,2]}");
			for (int i = 1; i < depth; i++)
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

/* Each span of v, in order: "key:count:text;". */
static void list_spans(const cJSON *v, struct buf *b)
{
	if (jsonpick_is_span(v)) {
		buf_printf(b, "%s:%d:%.*s;", v->string ? v->string : "", v->valueint, (int)v->valuedouble, v->valuestring);
		return;
	}
	for (const cJSON *c = v ? v->child : NULL; c; c = c->next)
		list_spans(c, b);
}

/* The arrays jsonpick.h says become spans do, each its exact text. */
static void test_spans_made(void)
{
	static const char *const cases[][2] = {
		{ "{\"a\":[1,\"x\",null,true,false],\"b\":[[true],[false,null],[]],\"c\":[],\"x\":[[1,[2]]]}",
		  "a:5:[1,\"x\",null,true,false];b:3:[[true],[false,null],[]];" },
		{ "{\"ids\" : [ 1.5e3 , -0 ]\t,\"tokens\":[{\"a\":1}],\"logprobs\":[1e400],\"scores\":[01]}",
		  "ids:2:[ 1.5e3 , -0 ];logprobs:1:[1e400];scores:1:[01];" },
		{ "{\"o\":{\"\\u0069ds\":[\"]\",\"\\\"\"]},\"masks\":[[ ] ],\"bytes\":[true ],\"prompt\":[ null]}",
		  "ids:2:[\"]\",\"\\\"\"];masks:1:[[ ] ];bytes:1:[true ];prompt:1:[ null];" },
		{ "[[1],{\"a\":[2]}]", "a:1:[2];" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *s = cases[i][0], *end;
		size_t bad;
		struct buf b = { 0 };
		cJSON *v = jsonpick_parse(s, strlen(s), &spans, &end, &bad);
		list_spans(v, &b);
		buf_put_u8(&b, 0);
		ok(v && strcmp((const char *)b.data, cases[i][1]) == 0, "spans of %s: %s", s, (const char *)b.data);
		buf_free(&b);
		cJSON_Delete(v);
	}
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
	test_spans_made();
	test_corpus();
	return tap_done();
}
