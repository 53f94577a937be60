/*
 * test_chat: the chat formats against text rendered by Hugging Face's own
 * templates (jinja2 on the tokenizer_config.json chat_template of Qwen3 and
 * Llama 3, and on tests/data/chat-templates/ for Llama 2, Mistral, TinyLlama,
 * SmolLM2 and the DeepSeek-R1 distills, copied here by hand), and the ids against ids read off the real
 * tokenizers, where every marker must be one id. The id checks skip, saying
 * so, when ../shared/data is absent.
 */
#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/chat.h"
#include "../tap.h"

static const struct chat_msg hello[] = { { "user", "Hello, world!" } };
static const struct chat_msg multi[] = {
	{ "system", "You are helpful." },
	{ "user", "What is 2+2?" },
	{ "assistant", "<think>\nadd\n</think>\n\n4" },
	{ "user", "  And 3+3? " },
};

static void is_text(enum chat_format f, const struct chat_msg *m, size_t n, int flags, const char *want,
                    const char *what)
{
	struct buf b = { 0 };
	struct err e = { 0 };
	int r = chat_render(f, m, n, flags, NULL, &b, &e);
	buf_put_u8(&b, 0);
	if (!ok(r == 0 && strcmp((char *)b.data, want) == 0, "%s: %s", chat_format_name(f), what))
		diag("got '%s' (%s)", b.data ? (char *)b.data : "", e.msg);
	buf_free(&b);
}

static void is_ids(const struct tokenizer *t, enum chat_format f, const struct chat_msg *m, size_t n, int flags,
                   const int32_t *want, size_t nw, const char *what)
{
	struct tok_ids ids = { 0 };
	struct err e = { 0 };
	int r = chat_encode(t, f, m, n, flags, NULL, &ids, NULL, &e);
	int same = r == 0 && ids.n == nw && memcmp(ids.v, want, nw * sizeof *want) == 0;
	if (!ok(same, "%s: %s", chat_format_name(f), what)) {
		diag("%s; got %zu ids:", e.msg, ids.n);
		for (size_t i = 0; i < ids.n; i++)
			printf("# %d\n", ids.v[i]);
	}
	tok_ids_free(&ids);
}

/* Write text to dir/name. */
static void put_file(const char *dir, const char *name, const char *text)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* tokenizer_config.json {"chat_template": tmpl} in dir */
static void put_config(const char *dir, const char *tmpl)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "chat_template", tmpl);
	char *t = cJSON_PrintUnformatted(j);
	put_file(dir, "tokenizer_config.json", t);
	free(t);
	cJSON_Delete(j);
}

/* The chat_template of a JSON file (tests/data/chat-templates/NAME.json, a tokenizer_config.json), or NULL. */
static cJSON *template_of(const char *path, const char **tmpl)
{
	FILE *f = fopen(path, "rb");
	char *txt = f ? calloc(1, 1 << 20) : NULL;
	size_t n = txt ? fread(txt, 1, (1 << 20) - 1, f) : 0;
	if (f)
		fclose(f);
	cJSON *j = n ? cJSON_Parse(txt) : NULL;
	free(txt);
	const cJSON *t = cJSON_GetObjectItem(j, "chat_template");
	*tmpl = cJSON_IsString(t) ? t->valuestring : NULL;
	return j;
}

/* --chat auto: which format a model's own template is */
static void format_of_model(const char *top, const char *shared)
{
	char dir[] = "/tmp/test_chat_auto.XXXXXX", tp[4096], from[4096], path[4096], want[4400];
	struct err e = { 0 };
	enum chat_format f;
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	snprintf(tp, sizeof tp, "%s/tokenizer.json", dir);
	/* every template of tests/data/chat-templates: its file's name is its format's */
	snprintf(path, sizeof path, "%s/tests/data/chat-templates", top);
	DIR *d = opendir(path);
	struct dirent *de;
	int known = 0, seen = 0;
	const char *qwen25 = NULL, *smollm2 = NULL;
	cJSON *keep[2] = { NULL, NULL };
	while (d && (de = readdir(d))) {
		size_t k = strlen(de->d_name);
		if (k < 6 || strcmp(de->d_name + k - 5, ".json") != 0)
			continue;
		char name[256], file[4096];
		snprintf(name, sizeof name, "%.*s", (int)(k - 5), de->d_name);
		snprintf(file, sizeof file, "%s/%s", path, de->d_name);
		const char *tmpl;
		cJSON *j = template_of(file, &tmpl);
		seen++;
		put_config(dir, tmpl ? tmpl : "");
		int r = chat_format_of_model(tp, &f, from, sizeof from, &e);
		if (r == 0 && strcmp(chat_format_name(f), name) == 0)
			known++;
		else
			diag("%s: %s", name, r == 0 ? chat_format_name(f) : e.msg);
		if (strcmp(name, "qwen2.5") == 0)
			qwen25 = tmpl, keep[0] = j;
		else if (strcmp(name, "smollm2") == 0)
			smollm2 = tmpl, keep[1] = j;
		else
			cJSON_Delete(j);
	}
	if (d)
		closedir(d);
	ok(seen >= 6 && known == seen, "each of the %d templates of tests/data/chat-templates is its own format", seen);
	ok(strstr(from, dir) && strstr(from, "/tokenizer_config.json"), "read from tokenizer_config.json: %s", from);
	if (qwen25 && smollm2) {
		/* chat_template.jinja beside it wins, as transformers loads it */
		put_config(dir, qwen25);
		put_file(dir, "chat_template.jinja", smollm2);
		ok(chat_format_of_model(tp, &f, from, sizeof from, &e) == 0 && f == CHAT_SMOLLM2 &&
		   strstr(from, "chat_template.jinja"), "chat_template.jinja before tokenizer_config.json");
		snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
		unlink(path);
		/* a list of named templates: the default one */
		cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "chat_template");
		const char *names[] = { "tool_use", "default" }, *tmpls[] = { smollm2, qwen25 };
		for (int i = 0; i < 2; i++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "name", names[i]);
			cJSON_AddStringToObject(x, "template", tmpls[i]);
			cJSON_AddItemToArray(list, x);
		}
		char *t = cJSON_PrintUnformatted(j);
		put_file(dir, "tokenizer_config.json", t);
		free(t);
		cJSON_Delete(j);
		ok(chat_format_of_model(tp, &f, from, sizeof from, &e) == 0 && f == CHAT_QWEN25,
		   "a list of named templates: the default one");
		/* another revision: one byte more */
		char *other = malloc(strlen(qwen25) + 2);
		sprintf(other, "%s ", qwen25);
		put_config(dir, other);
		free(other);
		ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strstr(e.msg, "tokenizer_config.json") &&
		   strstr(e.msg, "none that this build knows") && strstr(e.msg, "qwen2.5, "),
		   "a template one byte longer is unknown: %s", e.msg);
		/* and one of the same length: "You are qwen" (its FNV-1a hash computed by hand) */
		char *same = strdup(qwen25), msg[8192];
		*strstr(same, "Qwen") = 'q';
		put_config(dir, same);
		free(same);
		snprintf(msg, sizeof msg, "%s/tokenizer_config.json: its chat template (2507 bytes, hash 4e5d25f0c2ee96d5) "
		         "is none that this build knows, byte for byte: name the chat format (%s)", dir, CHAT_FORMATS);
		ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strcmp(e.msg, msg) == 0,
		   "a template of the same length, one byte changed, is unknown: %s", e.msg);
	}
	cJSON_Delete(keep[0]);
	cJSON_Delete(keep[1]);
	put_file(dir, "tokenizer_config.json", "{\"bos_token\": \"<s>\"}");
	ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strstr(e.msg, "has no chat_template"),
	   "no chat_template: %s", e.msg);
	put_file(dir, "tokenizer_config.json", "{\"chat_template\": \"a\", \"bos_token\": \"<s>\", \"chat_template\": \"b\"}");
	snprintf(want, sizeof want, "%s/tokenizer_config.json gives chat_template 2 times: name the chat format", dir);
	ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strcmp(e.msg, want) == 0,
	   "chat_template twice (transformers takes the last, cJSON the first): %s", e.msg);
	put_file(dir, "tokenizer_config.json", "{\"chat_template\": ");
	snprintf(want, sizeof want, "%s/tokenizer_config.json: not a JSON object", dir);
	ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strcmp(e.msg, want) == 0,
	   "not JSON: %s", e.msg);
	snprintf(want, sizeof want, "%s: path too long", tp);
	ok(chat_format_of_model(tp, &f, from, strlen(dir) + 20, &e) < 0 && strcmp(e.msg, want) == 0,
	   "a path longer than the room for it: %s", e.msg);
	put_file(dir, "tokenizer_config.json", "[\"chat_template\"]");
	ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strstr(e.msg, "not a JSON object"),
	   "not an object: %s", e.msg);
	snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
	unlink(path);
	ok(chat_format_of_model(tp, &f, from, sizeof from, &e) < 0 && strstr(e.msg, path),
	   "no tokenizer_config.json: %s", e.msg);
	rmdir(dir);

	/* the real files of ../shared */
	const char *real[] = { "qwen3", "llama3" };
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/data/tokenizers/%s/tokenizer.json", shared, real[i]);
		if (access(path, R_OK) != 0) {
			ok(1, "# SKIP no %s", path);
			continue;
		}
		int r = chat_format_of_model(path, &f, from, sizeof from, &e);
		if (!ok(r == 0 && strcmp(chat_format_name(f), real[i]) == 0, "%s's own tokenizer_config.json", real[i]))
			diag("%s", r == 0 ? chat_format_name(f) : e.msg);
	}
}

int main(void)
{
	struct err e = { 0 };
	enum chat_format f;
	ok(chat_format_parse("qwen3", &f) == 0 && f == CHAT_QWEN3 && chat_format_parse("chatml", &f) < 0 &&
	   chat_format_parse("mistral-v0.1", &f) < 0, "format names parse, unknown ones do not");
	/* every name parses to its own format and is in CHAT_FORMATS, which the usage messages print */
	int named = 0;
	for (int i = 0; chat_format_names[i]; i++) {
		const char *at = strstr(CHAT_FORMATS, chat_format_names[i]);
		size_t k = strlen(chat_format_names[i]);
		named += chat_format_parse(chat_format_names[i], &f) == 0 && (int)f == i && at &&
		         (at[k] == ',' || at[k] == '\0');
	}
	is_int(named, CHAT_QWEN25_MATH + 1, "each of the %d formats parses by its name, listed in CHAT_FORMATS",
	       CHAT_QWEN25_MATH + 1);
	ok(chat_format_parse("llama2", &f) == 0 && f == CHAT_LLAMA2 && chat_format_parse("mistral", &f) == 0 &&
	   f == CHAT_MISTRAL && chat_format_parse("zephyr", &f) == 0 && f == CHAT_ZEPHYR, "llama2, mistral, zephyr");

	/* rendered text, as jinja2 renders each model's own template */
	is_text(CHAT_QWEN3, hello, 1, 0, "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n",
	        "one user turn");
	is_text(CHAT_QWEN3, hello, 1, CHAT_NO_THINKING,
	        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
	        "enable_thinking=False ends in an empty think block");
	is_text(CHAT_QWEN3, multi, 4, 0,
	        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
	        "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\n  And 3+3? <|im_end|>\n<|im_start|>assistant\n",
	        "system, history with its reasoning dropped, content kept as is");
	const struct chat_msg last_asst[] = { { "user", "q" }, { "assistant", "\n<think>\n\nr1\n</think>\n\n\nans" } };
	is_text(CHAT_QWEN3, last_asst, 2, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr1\n</think>\n\nans<|im_end|>\n"
	        "<|im_start|>assistant\n",
	        "an assistant turn after the last query keeps its reasoning");
	/* Qwen3's think blocks in the history, as jinja2 renders its template (../shared's
	 * tokenizer_config.json): a user turn wrapped in <tool_response> is no query */
	const struct chat_msg q3_tool[] = { { "user", "q" }, { "assistant", "<think>r</think>a" },
	                                    { "user", "<tool_response>x</tool_response>" } };
	is_text(CHAT_QWEN3, q3_tool, 3, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\na<|im_end|>\n"
	        "<|im_start|>user\n<tool_response>x</tool_response><|im_end|>\n<|im_start|>assistant\n",
	        "an answer before a tool response keeps its reasoning: the last query is before it");
	const struct chat_msg q3_tool_plain[] = { { "user", "q" }, { "assistant", "a" },
	                                          { "user", "<tool_response>x</tool_response>" } };
	is_text(CHAT_QWEN3, q3_tool_plain, 3, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n"
	        "<|im_start|>user\n<tool_response>x</tool_response><|im_end|>\n<|im_start|>assistant\n",
	        "and one without reasoning there gets no empty think block");
	const struct chat_msg q3_half[] = { { "user", "<tool_response>x" }, { "assistant", "<think>r</think>a" },
	                                    { "user", "x</tool_response>" }, { "assistant", "<think>s</think>b" } };
	is_text(CHAT_QWEN3, q3_half, 4, 0,
	        "<|im_start|>user\n<tool_response>x<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n"
	        "<|im_start|>user\nx</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\ns\n</think>\n\nb"
	        "<|im_end|>\n<|im_start|>assistant\n",
	        "a user turn only opened or only closed by a tool response is a query");
	const struct chat_msg q3_no_user[] = { { "system", "s" }, { "assistant", "<think>r</think>a" } };
	is_text(CHAT_QWEN3, q3_no_user, 2, 0,
	        "<|im_start|>system\ns<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n<|im_start|>assistant\n",
	        "no user turn: the last message counts as the query, its reasoning dropped");
	const struct chat_msg q3_two_ends[] = { { "user", "q" },
	                                        { "assistant", "x<think>\nr1\n\n</think>\nmid</think>\n\nc" } };
	is_text(CHAT_QWEN3, q3_two_ends, 2, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr1\n</think>\n\nc<|im_end|>\n"
	        "<|im_start|>assistant\n",
	        "reasoning up to the first </think> after the last <think> in it, content after the last </think>");
	const struct chat_msg q3_plain[] = { { "user", "q" }, { "assistant", "plain" } };
	is_text(CHAT_QWEN3, q3_plain, 2, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nplain<|im_end|>\n"
	        "<|im_start|>assistant\n",
	        "the last answer after the query gets an empty think block when it has none");
	const struct chat_msg q3_end[] = { { "user", "q" }, { "assistant", "r</think>" } };
	is_text(CHAT_QWEN3, q3_end, 2, CHAT_NO_THINKING,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\n<|im_end|>\n"
	        "<|im_start|>assistant\n<think>\n\n</think>\n\n",
	        "an answer that ends in </think>, no <think>: all reasoning, no content");
	const struct chat_msg q3_bare[] = { { "user", "q" }, { "assistant", "</think>" } };
	is_text(CHAT_QWEN3, q3_bare, 2, 0,
	        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<|im_end|>\n"
	        "<|im_start|>assistant\n",
	        "an answer that is only </think>: neither reasoning nor content");
	const struct chat_msg empty[] = { { "user", "" } };
	is_text(CHAT_QWEN3, empty, 1, 0, "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n", "empty content");
	is_text(CHAT_QWEN, hello, 1, CHAT_NO_THINKING,
	        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n", "plain ChatML, no think block");
	is_text(CHAT_QWEN25, hello, 1, 0,
	        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
	        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n",
	        "Qwen2.5's default system message when none is given");
	is_text(CHAT_QWEN25, multi, 2, 0,
	        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
	        "<|im_start|>assistant\n", "and the given one otherwise");
	is_text(CHAT_LLAMA3, hello, 1, 0,
	        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello, world!<|eot_id|>"
	        "<|start_header_id|>assistant<|end_header_id|>\n\n", "one user turn");
	is_text(CHAT_LLAMA3, multi, 4, 0,
	        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
	        "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
	        "<|start_header_id|>assistant<|end_header_id|>\n\n<think>\nadd\n</think>\n\n4<|eot_id|>"
	        "<|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|>"
	        "<|start_header_id|>assistant<|end_header_id|>\n\n", "contents trimmed, history kept whole");
	const struct chat_msg spaces[] = { { "user", "\xe3\x80\x80\t x \xc2\xa0\n" } };
	is_text(CHAT_LLAMA3, spaces, 1, 0,
	        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>"
	        "<|start_header_id|>assistant<|end_header_id|>\n\n", "trim takes Unicode white space as Python does");

	const struct chat_msg separators[] = { { "user", "\x1c\x1d x \x1e\x1f" } };
	is_text(CHAT_LLAMA3, separators, 1, 0,
	        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>"
	        "<|start_header_id|>assistant<|end_header_id|>\n\n", "and the separators U+001C to U+001F");

	/* Llama 2 chat, Mistral Instruct and TinyLlama Chat, as jinja2 renders tests/data/chat-templates/ */
	is_text(CHAT_LLAMA2, hello, 1, 0, "<s>[INST] Hello, world! [/INST]", "one user turn, no generation prompt");
	is_text(CHAT_LLAMA2, multi, 4, 0,
	        "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nWhat is 2+2? [/INST] <think>\nadd\n</think>\n\n4 "
	        "</s><s>[INST] And 3+3? [/INST]", "the system block in the first turn, contents stripped");
	const struct chat_msg blank_first[] = { { "system", " S " }, { "user", " \n" } };
	is_text(CHAT_LLAMA2, blank_first, 2, 0, "<s>[INST] <<SYS>>\n S \n<</SYS>> [/INST]",
	        "the system message kept whole, a blank first turn stripped into the block's end");
	const struct chat_msg sys_only[] = { { "system", " Be brief.\n" } };
	is_text(CHAT_LLAMA2, sys_only, 1, 0, "", "a lone system message gives no text");
	const struct chat_msg late_sys[] = { { "system", "s" }, { "user", "u" }, { "system", "x" }, { "user", "v" } };
	is_text(CHAT_LLAMA2, late_sys, 4, 0, "<s>[INST] <<SYS>>\ns\n<</SYS>>\n\nu [/INST]<s>[INST] v [/INST]",
	        "a system message in an assistant's place is left out, as the template does");
	is_text(CHAT_MISTRAL, hello, 1, 0, "<s> [INST] Hello, world! [/INST]", "one user turn");
	is_text(CHAT_MISTRAL, multi, 4, 0,
	        "<s> [INST] You are helpful.\n\nWhat is 2+2? [/INST] <think>\nadd\n</think>\n\n4</s> "
	        "[INST]   And 3+3?  [/INST]", "the system message before the first turn's content, contents as given");
	is_text(CHAT_MISTRAL, blank_first, 2, 0, "<s> [INST]  S \n\n \n [/INST]", "white space kept");
	is_text(CHAT_MISTRAL, sys_only, 1, 0, "<s>", "a lone system message gives only <s>");
	is_text(CHAT_ZEPHYR, hello, 1, 0, "<|user|>\nHello, world!</s>\n<|assistant|>\n", "one user turn");
	is_text(CHAT_ZEPHYR, multi, 4, 0,
	        "<|system|>\nYou are helpful.</s>\n<|user|>\nWhat is 2+2?</s>\n<|assistant|>\n<think>\nadd\n</think>"
	        "\n\n4</s>\n<|user|>\n  And 3+3? </s>\n<|assistant|>\n", "every turn ends in </s>, contents as given");
	is_text(CHAT_ZEPHYR, late_sys, 4, 0,
	        "<|system|>\ns</s>\n<|user|>\nu</s>\n<|system|>\nx</s>\n<|user|>\nv</s>\n<|assistant|>\n",
	        "roles in any order");

	/* SmolLM2-Instruct and the DeepSeek-R1 distills */
	is_text(CHAT_SMOLLM2, hello, 1, 0,
	        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
	        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n",
	        "SmolLM's default system message when none is given");
	is_text(CHAT_SMOLLM2, multi, 4, 0,
	        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
	        "<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>\n<|im_start|>user\n  And 3+3? <|im_end|>\n"
	        "<|im_start|>assistant\n", "the given one otherwise, the history whole");
	is_text(CHAT_QWEN25_MATH, hello, 1, 0,
	        "<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
	        "<|im_start|>user\nHello, world!<|im_end|>\n<|im_start|>assistant\n",
	        "Qwen2.5-Math's default system message, one backslash before boxed");
	is_text(CHAT_QWEN25_MATH, multi, 2, 0,
	        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
	        "<|im_start|>assistant\n", "and the given one otherwise");
	is_text(CHAT_DEEPSEEK_R1, hello, 1, 0,
	        "<｜begin▁of▁sentence｜><｜User｜>Hello, world!<｜Assistant｜><think>\n",
	        "one user turn, the think block opened");
	is_text(CHAT_DEEPSEEK_R1, multi, 4, 0,
	        "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>What is 2+2?<｜Assistant｜>\n\n4<｜end▁of▁sentence｜>"
	        "<｜User｜>  And 3+3? <｜Assistant｜><think>\n",
	        "the system message after bos, an answer without its reasoning, contents as given");
	const struct chat_msg r1_turns[] = { { "system", "s1" }, { "user", "u" }, { "system", "s2" },
	                                     { "assistant", "a</think>b</think>c" } };
	is_text(CHAT_DEEPSEEK_R1, r1_turns, 4, 0,
	        "<｜begin▁of▁sentence｜>s2<｜User｜>u<｜Assistant｜>c<｜end▁of▁sentence｜><｜Assistant｜><think>\n",
	        "the last system message wins, wherever it stands; what follows the last </think>");

	const struct chat_msg r1_end[] = { { "user", "q" }, { "assistant", "</think>" }, { "user", "q2" },
	                                   { "assistant", "<think>r</think>" }, { "user", "q3" } };
	is_text(CHAT_DEEPSEEK_R1, r1_end, 5, 0,
	        "<｜begin▁of▁sentence｜><｜User｜>q<｜Assistant｜><｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜>"
	        "<｜end▁of▁sentence｜><｜User｜>q3<｜Assistant｜><think>\n",
	        "answers that end in </think>: nothing of them kept");

	/* refusals */
	struct buf b = { 0 };
	const struct chat_msg two_users[] = { { "system", "s" }, { "user", "a" }, { "user", "b" } };
	ok(chat_render(CHAT_LLAMA2, two_users, 3, 0, NULL, &b, &e) < 0 && strstr(e.msg, "messages[2]: user") &&
	   strstr(e.msg, "alternate user/assistant"), "llama2: two user turns in a row: %s", e.msg);
	const struct chat_msg asst_first[] = { { "assistant", "a" }, { "user", "u" } };
	ok(chat_render(CHAT_MISTRAL, asst_first, 2, 0, NULL, &b, &e) < 0 && strstr(e.msg, "messages[0]: assistant") &&
	   strstr(e.msg, "needs user"), "mistral: an assistant turn first: %s", e.msg);
	ok(chat_render(CHAT_MISTRAL, late_sys, 4, 0, NULL, &b, &e) < 0 && strstr(e.msg, "messages[2]") &&
	   strstr(e.msg, "only the first message may be a system message"), "mistral: a later system message: %s",
	   e.msg);
	const struct chat_msg two_sys[] = { { "system", "s" }, { "system", "t" }, { "user", "u" } };
	ok(chat_render(CHAT_LLAMA2, two_sys, 3, 0, NULL, &b, &e) < 0 && strstr(e.msg, "messages[1]: system"),
	   "llama2: a second system message first in the turns: %s", e.msg);
	b.len = 0;
	ok(chat_render(CHAT_ZEPHYR, two_users + 1, 2, 0, NULL, &b, &e) == 0, "zephyr takes two user turns in a row");
	const struct chat_msg tool[] = { { "user", "q" }, { "tool", "42" } };
	ok(chat_render(CHAT_QWEN3, tool, 2, 0, NULL, &b, &e) < 0 && strstr(e.msg, "messages[1]") && strstr(e.msg, "tool"),
	   "a tool message is refused: %s", e.msg);
	ok(chat_render(CHAT_QWEN, tool, 0, 0, NULL, &b, &e) < 0 && strstr(e.msg, "no messages"), "no messages: %s", e.msg);
	const struct chat_msg tool_first[] = { { "tool", "42" }, { "user", "q" } };
	ok(chat_render(CHAT_QWEN3, tool_first, 2, 0, NULL, &b, &e) < 0 &&
	   strcmp(e.msg, "messages[0]: role tool is not supported (system, user and assistant are)") == 0,
	   "a tool message first is refused too: %s", e.msg);
	const struct chat_msg no_content[] = { { "user", NULL } }, no_role[] = { { "user", "q" }, { NULL, "a" } };
	ok(chat_render(CHAT_QWEN3, no_content, 1, 0, NULL, &b, &e) < 0 &&
	   strcmp(e.msg, "messages[0]: needs a role and a content") == 0, "a message without content: %s", e.msg);
	ok(chat_render(CHAT_QWEN3, no_role, 2, 0, NULL, &b, &e) < 0 &&
	   strcmp(e.msg, "messages[1]: needs a role and a content") == 0, "a message without a role: %s", e.msg);
	buf_free(&b);

	/* JSON input */
	struct chat_msgs cm;
	const char *j1 = "\"What is 6*7?\"";
	ok(chat_parse_json(j1, strlen(j1), &cm, &e) == 0 && cm.n == 1 && strcmp(cm.m[0].role, "user") == 0 &&
	   strcmp(cm.m[0].content, "What is 6*7?") == 0 && !cm.has_flags, "a JSON string is one user turn");
	chat_msgs_free(&cm);
	const char *j2 = "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"u\"}],"
	                 "\"enable_thinking\":false}";
	ok(chat_parse_json(j2, strlen(j2), &cm, &e) == 0 && cm.n == 2 && strcmp(cm.m[1].content, "u") == 0 &&
	   cm.has_flags && cm.flags == CHAT_NO_THINKING, "an object with messages and enable_thinking");
	chat_msgs_free(&cm);
	const char *j3 = "{\"messages\":[{\"role\":\"user\",\"content\":[1]}]}";
	ok(chat_parse_json(j3, strlen(j3), &cm, &e) < 0 && strstr(e.msg, "messages[0]"), "bad message: %s", e.msg);
	/* grpo-collect frees the messages of a line whether or not they parsed */
	chat_msgs_free(&cm);
	ok(!cm.m && !cm.json && cm.n == 0, "a refused line's messages can be freed again");
	const char *j4 = "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[]}]}";
	ok(chat_parse_json(j4, strlen(j4), &cm, &e) < 0 && strstr(e.msg, "tool_calls"), "tool_calls refused: %s", e.msg);
	const char *j5 = "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"}],"
	                 "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"add\"}}]}";
	ok(chat_parse_json(j5, strlen(j5), &cm, &e) < 0 && strstr(e.msg, "tools is not supported"),
	   "a conversation's tools are refused, not dropped from the prompt: %s", e.msg);
	ok(chat_parse_json("[1]", 3, &cm, &e) < 0 && strstr(e.msg, "\"messages\""), "bad line: %s", e.msg);
	const char *j8 = "{\"messages\":\"hi\"}";
	ok(chat_parse_json(j8, strlen(j8), &cm, &e) < 0 &&
	   strcmp(e.msg, "expected a JSON string (the user's turn) or an object with a \"messages\" list") == 0,
	   "messages that are no list: %s", e.msg);
	const char *j6 = "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"}],\"date_string\":\"1 Jan 2026\"}";
	ok(chat_parse_json(j6, strlen(j6), &cm, &e) == 0 && cm.date && strcmp(cm.date, "1 Jan 2026") == 0,
	   "date_string is read for the Llama 3.1 and 3.2 templates");
	chat_msgs_free(&cm);
	const char *j7 = "{\"messages\":[{\"role\":\"user\",\"content\":\"u\"}],\"date_string\":20260101}";
	ok(chat_parse_json(j7, strlen(j7), &cm, &e) < 0 && strstr(e.msg, "date_string must be a string"), "%s", e.msg);

	/* Llama 3.1 and 3.2: a lone system message goes into the dated header, and no turn follows */
	const char *header = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
	                     "December 2023\nToday Date: ";
	char want[512];
	snprintf(want, sizeof want, "%s26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
	         header);
	b.len = 0;
	ok(chat_render(CHAT_LLAMA31, sys_only, 1, 0, NULL, &b, &e) == 0 && b.len == strlen(want) &&
	   memcmp(b.data, want, b.len) == 0, "llama3.1: a lone system message, the template's default date");
	snprintf(want, sizeof want, "%s1 Jan 2026\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello, "
	         "world!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", header);
	b.len = 0;
	ok(chat_render(CHAT_LLAMA32, hello, 1, 0, "1 Jan 2026", &b, &e) == 0 && b.len == strlen(want) &&
	   memcmp(b.data, want, b.len) == 0, "llama3.2: the date given, an empty system message");
	buf_free(&b);

	format_of_model(getenv("GRPO_TOP") ? getenv("GRPO_TOP") : ".",
	                getenv("GRPO_SHARED") ? getenv("GRPO_SHARED") : "../shared");

	/* bos and eos as the [INST] and Zephyr formats need them: tests/data/tokadded's
	 * tokenizer, first as it is (neither token), then with <s> and </s> added
	 * as special tokens after its own (ids bos, bos + 1) */
	const char *top = getenv("GRPO_TOP");
	char tp[4096];
	snprintf(tp, sizeof tp, "%s/tests/data/tokadded/tokenizer.json", top ? top : ".");
	struct tokenizer *ta = tok_load(tp, &e), *sp = NULL;
	struct tok_ids got = { 0 }, want_ids = { 0 };
	int bos = 0;
	if (ta) {
		ok(chat_encode(ta, CHAT_ZEPHYR, hello, 1, 0, NULL, &got, NULL, &e) < 0 && strstr(e.msg, "</s>") &&
		   strstr(e.msg, "zephyr"), "a tokenizer without </s>, zephyr: %s", e.msg);
		ok(chat_encode(ta, CHAT_MISTRAL, hello, 1, 0, NULL, &got, NULL, &e) < 0 && strstr(e.msg, "<s>"),
		   "and without <s>, mistral: %s", e.msg);
		FILE *tf = fopen(tp, "rb");
		char *txt = tf ? calloc(1, 1 << 20) : NULL;
		size_t tn = txt ? fread(txt, 1, (1 << 20) - 1, tf) : 0;
		if (tf)
			fclose(tf);
		cJSON *tj = tn ? cJSON_Parse(txt) : NULL, *added = cJSON_GetObjectItem(tj, "added_tokens");
		const cJSON *x;
		cJSON_ArrayForEach(x, added)
			if (cJSON_GetObjectItem(x, "id")->valueint >= bos)
				bos = cJSON_GetObjectItem(x, "id")->valueint + 1;
		for (int id = bos; added && id <= bos + 1; id++) {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddNumberToObject(a, "id", id);
			cJSON_AddStringToObject(a, "content", id == bos ? "<s>" : "</s>");
			cJSON_AddBoolToObject(a, "single_word", 0);
			cJSON_AddBoolToObject(a, "lstrip", 0);
			cJSON_AddBoolToObject(a, "rstrip", 0);
			cJSON_AddBoolToObject(a, "normalized", 0);
			cJSON_AddBoolToObject(a, "special", 1);
			cJSON_AddItemToArray(added, a);
		}
		char *out = tj ? cJSON_PrintUnformatted(tj) : NULL;
		char tmp[] = "/tmp/test_chat.XXXXXX";
		int fd = out ? mkstemp(tmp) : -1;
		FILE *wf = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (wf) {
			fputs(out, wf);
			fclose(wf);
			sp = tok_load(tmp, &e);
			unlink(tmp);
		}
		free(out);
		cJSON_Delete(tj);
		free(txt);
	}
	if (!ok(sp != NULL, "tests/data/tokadded's tokenizer with <s> and </s> added loads")) {
		diag("%s", e.msg);
	} else {
		/* the text between the markers encodes as it would alone: the markers are one id each */
		const char *inner = "[INST] Hello, world! [/INST]";
		int r = chat_encode(sp, CHAT_LLAMA2, hello, 1, 0, NULL, &got, NULL, &e);
		tok_ids_push(&want_ids, bos);
		r |= tok_encode(sp, inner, strlen(inner), &want_ids, &e);
		ok(r == 0 && got.n == want_ids.n && memcmp(got.v, want_ids.v, got.n * sizeof *got.v) == 0,
		   "llama2: <s> is id %d, then the turn's own ids (%zu ids)", bos, got.n);
		tok_ids_free(&got);
		tok_ids_free(&want_ids);
		const struct chat_msg ua[] = { { "user", "u" }, { "assistant", "a" } };
		r = chat_encode(sp, CHAT_ZEPHYR, ua, 2, 0, NULL, &got, NULL, &e);
		const char *piece[] = { "<|user|>\nu", "\n<|assistant|>\na", "\n<|assistant|>\n" };
		for (int i = 0; i < 3; i++) {
			r |= tok_encode(sp, piece[i], strlen(piece[i]), &want_ids, &e);
			if (i < 2)
				r |= tok_ids_push(&want_ids, bos + 1);
		}
		ok(r == 0 && got.n == want_ids.n && memcmp(got.v, want_ids.v, got.n * sizeof *got.v) == 0,
		   "zephyr: </s> is id %d after each turn (%zu ids)", bos + 1, got.n);
		/* with a text buffer that holds something already: the prompt's text is
		 * appended to it, and only the prompt is encoded */
		struct tok_ids alone = { 0 };
		struct buf txt = { 0 };
		const char *zt = "x<|user|>\nu</s>\n<|assistant|>\na</s>\n<|assistant|>\n";
		r = buf_append(&txt, "x", 1);
		tok_ids_free(&got);
		r |= chat_encode(sp, CHAT_ZEPHYR, ua, 2, 0, NULL, &got, &txt, &e);
		r |= chat_encode(sp, CHAT_ZEPHYR, ua, 2, 0, NULL, &alone, NULL, &e);
		ok(r == 0 && got.n == alone.n && memcmp(got.v, alone.v, got.n * sizeof *got.v) == 0 &&
		   txt.len == strlen(zt) && memcmp(txt.data, zt, txt.len) == 0,
		   "zephyr: the text appended to what the buffer held, the ids the prompt's alone");
		buf_free(&txt);
		tok_ids_free(&alone);
		tok_ids_free(&got);
		tok_ids_free(&want_ids);
	}
	tok_free(sp);
	tok_free(ta);

	/* ids with the real tokenizers: markers are single ids */
	const char *shared = getenv("GRPO_SHARED");
	char path[4096];
	snprintf(path, sizeof path, "%s/data/tokenizers/qwen3/tokenizer.json", shared ? shared : "../shared");
	struct tokenizer *q = tok_load(path, &e), *l = NULL;
	snprintf(path, sizeof path, "%s/data/tokenizers/llama3/tokenizer.json", shared ? shared : "../shared");
	if (q)
		l = tok_load(path, &e);
	if (!q || !l) {
		diag("SKIP the id checks: no real tokenizers (%s)", e.msg);
		tok_free(q);
		return tap_done();
	}
	/* <|im_start|> 151644, <|im_end|> 151645, "\n" 198, "user" 872, "assistant" 77091,
	 * <think> 151667, </think> 151668, "\n\n" 271; "Hello, world!" as in fixtures/tokenizer_ids.json */
	const int32_t q1[] = { 151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151644, 77091, 198 };
	is_ids(q, CHAT_QWEN3, hello, 1, 0, q1, sizeof q1 / sizeof q1[0], "ids of one user turn");
	const int32_t q2[] = { 151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151644, 77091, 198,
	                       151667, 271, 151668, 271 };
	is_ids(q, CHAT_QWEN3, hello, 1, CHAT_NO_THINKING, q2, sizeof q2 / sizeof q2[0],
	       "ids with the empty think block: <think> and </think> are one id each");
	/* <|begin_of_text|> 128000, <|start_header_id|> 128006, <|end_header_id|> 128007,
	 * <|eot_id|> 128009, "user" 882, "assistant" 78191, "\n\n" 271 */
	const int32_t l1[] = { 128000, 128006, 882, 128007, 271, 9906, 11, 1917, 0, 128009, 128006, 78191, 128007, 271 };
	is_ids(l, CHAT_LLAMA3, hello, 1, 0, l1, sizeof l1 / sizeof l1[0], "ids of one user turn");
	struct tok_ids ids = { 0 };
	ok(chat_encode(l, CHAT_QWEN, hello, 1, 0, NULL, &ids, NULL, &e) < 0 && strstr(e.msg, "<|im_start|>"),
	   "a Llama tokenizer with a Qwen format: %s", e.msg);
	tok_ids_free(&ids);
	ok(chat_encode(q, CHAT_LLAMA2, hello, 1, 0, NULL, &ids, NULL, &e) < 0 && strstr(e.msg, "<s>") &&
	   strstr(e.msg, "llama2"), "a Qwen tokenizer with the llama2 format: %s", e.msg);
	tok_ids_free(&ids);
	ok(chat_encode(q, CHAT_DEEPSEEK_R1, hello, 1, 0, NULL, &ids, NULL, &e) < 0 &&
	   strstr(e.msg, "<｜begin▁of▁sentence｜>") && strstr(e.msg, "deepseek-r1"),
	   "a Qwen3 tokenizer (not the distills') with the deepseek-r1 format: %s", e.msg);
	tok_ids_free(&ids);
	tok_free(q);
	tok_free(l);
	return tap_done();
}
