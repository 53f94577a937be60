/* chat.c: see chat.h. Each format follows its Jinja template line by line. */
#include "model/chat.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/unicode.h"
#include "data/jsonview.h"

const char *const chat_format_names[] = {
	[CHAT_QWEN] = "qwen", [CHAT_QWEN25] = "qwen2.5", [CHAT_QWEN3] = "qwen3", [CHAT_LLAMA3] = "llama3",
	[CHAT_LLAMA31] = "llama3.1", [CHAT_LLAMA32] = "llama3.2", [CHAT_LLAMA2] = "llama2", [CHAT_MISTRAL] = "mistral",
	[CHAT_ZEPHYR] = "zephyr", [CHAT_SMOLLM2] = "smollm2", [CHAT_DEEPSEEK_R1] = "deepseek-r1",
	[CHAT_QWEN25_MATH] = "qwen2.5-math", NULL
};

int chat_format_parse(const char *name, enum chat_format *f)
{
	for (int i = 0; chat_format_names[i]; i++)
		if (strcmp(name, chat_format_names[i]) == 0) {
			*f = (enum chat_format)i;
			return 0;
		}
	return -1;
}

const char *chat_format_name(enum chat_format f) { return chat_format_names[f]; }

/* Length of the white space character at s[0..n), as Python's str.isspace()
 * sees it (White_Space, plus the separators U+001C..U+001F), or 0. */
static size_t space_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	int k = n ? uni_utf8_decode(s, n, &cp) : 0;
	if (k <= 0)
		return 0;
	return (uni_class(cp) & UNI_S) || (cp >= 0x1c && cp <= 0x1f) ? (size_t)k : 0;
}

/* Python's str.rstrip(): *e moved back over the white space that ends s[b..*e). */
static void rtrim(const char *s, size_t b, size_t *e)
{
	const unsigned char *u = (const unsigned char *)s;
	for (;;) {   /* from the end: try the 1-, 2- and 3-byte forms ending at *e */
		size_t got = 0;
		for (size_t w = 1; w <= 3 && w <= *e - b && !got; w++)
			if (space_len(u + *e - w, w) == w)
				got = w;
		if (!got)
			break;
		*e -= got;
	}
}

/* Jinja's trim (Python's str.strip()): s[*b..*e) without white space at either end. */
static void trim(const char *s, size_t *b, size_t *e)
{
	size_t k;
	while (*b < *e && (k = space_len((const unsigned char *)s + *b, *e - *b)) > 0)
		*b += k;
	rtrim(s, *b, e);
}

static int starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int ends_with(const char *s, const char *p)
{
	size_t n = strlen(s), k = strlen(p);
	return n >= k && memcmp(s + n - k, p, k) == 0;
}

/* Last occurrence of needle in s[0..n), or NULL. */
static const char *last_of(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	const char *best = NULL;
	for (const char *p = s; (size_t)(s + n - p) >= k && (p = memmem(p, (size_t)(s + n - p), needle, k)); p++)
		best = p;
	return best;
}

static int put(struct buf *out, const char *s, size_t n) { return buf_append(out, s, n); }
static int puts_(struct buf *out, const char *s) { return buf_append(out, s, strlen(s)); }

static int check_roles(const struct chat_msg *m, size_t n, struct err *e)
{
	if (n == 0)
		return err_set(e, "no messages");
	for (size_t i = 0; i < n; i++) {
		if (!m[i].role || !m[i].content)
			return err_set(e, "messages[%zu]: needs a role and a content", i);
		if (strcmp(m[i].role, "user") && strcmp(m[i].role, "assistant") && strcmp(m[i].role, "system"))
			return err_set(e, "messages[%zu]: role %s is not supported (system, user and assistant are)", i,
			               m[i].role);
	}
	return 0;
}

/*
 * Qwen3's assistant message: the history keeps only what follows the last
 * </think> (reasoning dropped), except for an assistant turn after the last
 * user query, which keeps its reasoning in a think block.
 */
static int qwen3_assistant(struct buf *out, const char *c, int after_query, int last)
{
	size_t n = strlen(c);
	const char *content = c, *rs = "";
	size_t clen = n, rlen = 0;
	const char *end_think = last_of(c, n, "</think>");
	if (end_think) {
		/* content.split('</think>')[-1].lstrip('\n') */
		content = end_think + 8;
		clen = (size_t)(c + n - content);
		while (clen && *content == '\n')
			content++, clen--;
		/* content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
		const char *first_end = strstr(c, "</think>");
		size_t head = (size_t)(first_end - c);
		while (head && c[head - 1] == '\n')
			head--;
		const char *open = last_of(c, head, "<think>");
		rs = open ? open + 7 : c;
		rlen = (size_t)(c + head - rs);
		while (rlen && *rs == '\n')
			rs++, rlen--;
	}
	int r = puts_(out, "<|im_start|>assistant\n");
	if (after_query && (last || rlen)) {
		while (rlen && *rs == '\n')   /* reasoning_content.strip('\n') */
			rs++, rlen--;
		while (rlen && rs[rlen - 1] == '\n')
			rlen--;
		while (clen && *content == '\n')
			content++, clen--;
		r |= puts_(out, "<think>\n") | put(out, rs, rlen) | puts_(out, "\n</think>\n\n");
	}
	return r | put(out, content, clen) | puts_(out, "<|im_end|>\n");
}

static int is_llama(enum chat_format f) { return f == CHAT_LLAMA3 || f == CHAT_LLAMA31 || f == CHAT_LLAMA32; }

/* content with Jinja's trim applied */
static int put_trimmed(struct buf *out, const char *content)
{
	size_t b = 0, end = strlen(content);
	trim(content, &b, &end);
	return put(out, content + b, end - b);
}

/* Today as Python's strftime("%d %b %Y") writes it in the C locale (which
 * transformers' strftime_now runs in), whatever this process's locale. */
static void today(char *s, size_t n)
{
	static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	snprintf(s, n, "%02d %s %d", tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900);
}

/*
 * Llama 3's turns; from 3.1 on, a system header first that carries the
 * knowledge cutoff, the date and the first message when it is a system one.
 */
static int llama_render(enum chat_format f, const struct chat_msg *m, size_t n, const char *date, struct buf *out)
{
	int r = puts_(out, "<|begin_of_text|>");
	if (f != CHAT_LLAMA3) {
		char now[32];
		if (!date && f == CHAT_LLAMA32)
			today(now, sizeof now), date = now;
		r |= puts_(out, "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
		                "Today Date: ") | puts_(out, date ? date : "26 Jul 2024") | puts_(out, "\n\n");
		if (strcmp(m[0].role, "system") == 0)
			r |= put_trimmed(out, m[0].content), m++, n--;
		r |= puts_(out, "<|eot_id|>");
	}
	for (size_t i = 0; i < n; i++) {
		r |= puts_(out, "<|start_header_id|>") | puts_(out, m[i].role) | puts_(out, "<|end_header_id|>\n\n");
		r |= put_trimmed(out, m[i].content) | puts_(out, "<|eot_id|>");
	}
	return r | puts_(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/*
 * The [INST] templates' check: after an optional first system message, user
 * turns at even places and assistant ones at odd places. Llama 2's lets a
 * system message through at an assistant's place (and then writes nothing
 * for it); Mistral's raises there too.
 */
static int inst_roles(enum chat_format f, const struct chat_msg *m, size_t n, struct err *e)
{
	size_t first = strcmp(m[0].role, "system") == 0;
	for (size_t i = first; i < n; i++) {
		int user = strcmp(m[i].role, "user") == 0, even = (i - first) % 2 == 0;
		if (user != even)
			return err_set(e, "messages[%zu]: %s where the %s template needs %s: after an optional "
			               "first system message, turns must alternate user/assistant/user/assistant/...",
			               i, m[i].role, chat_format_name(f), even ? "user" : "assistant");
		if (f == CHAT_MISTRAL && !user && strcmp(m[i].role, "assistant") != 0)
			return err_set(e, "messages[%zu]: system where the mistral template needs assistant: only "
			                  "the first message may be a system message", i);
	}
	return 0;
}

/*
 * Llama 2 chat's turns: <s>[INST] user [/INST] and then " assistant </s>",
 * contents stripped; a first system message goes into the first user turn
 * as <<SYS>>\nsystem\n<</SYS>>\n\n. No generation prompt: the prompt ends
 * with the last turn.
 */
static int llama2_render(const struct chat_msg *m, size_t n, struct buf *out)
{
	const char *sys = NULL;
	if (strcmp(m[0].role, "system") == 0)
		sys = m[0].content, m++, n--;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		int user = strcmp(m[i].role, "user") == 0;
		if (!user && strcmp(m[i].role, "assistant") != 0)
			continue;   /* a later system message: the template writes nothing for it */
		r |= puts_(out, user ? "<s>[INST] " : " ");
		if (i == 0 && sys) {
			/* ('<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content).strip(): the block keeps the
			 * system message whole and the user's content its leading white space */
			size_t end = strlen(m[i].content);
			rtrim(m[i].content, 0, &end);
			r |= puts_(out, "<<SYS>>\n") | puts_(out, sys) | puts_(out, "\n<</SYS>>");
			if (end)
				r |= puts_(out, "\n\n") | put(out, m[i].content, end);
		} else {
			r |= put_trimmed(out, m[i].content);
		}
		r |= puts_(out, user ? " [/INST]" : " </s>");
	}
	return r;
}

/* Mistral Instruct's: <s>, then " [INST] user [/INST]" and " assistant</s>",
 * contents as given, a first system message and "\n\n" before the first user
 * turn's content. */
static int mistral_render(const struct chat_msg *m, size_t n, struct buf *out)
{
	const char *sys = NULL;
	if (strcmp(m[0].role, "system") == 0)
		sys = m[0].content, m++, n--;
	int r = puts_(out, "<s>");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(m[i].role, "user") != 0) {
			r |= puts_(out, " ") | puts_(out, m[i].content) | puts_(out, "</s>");
			continue;
		}
		r |= puts_(out, " [INST] ");
		if (i == 0 && sys)
			r |= puts_(out, sys) | puts_(out, "\n\n");
		r |= puts_(out, m[i].content) | puts_(out, " [/INST]");
	}
	return r;
}

/* TinyLlama Chat's (Zephyr's): <|role|>\ncontent</s>\n per message, any order,
 * then <|assistant|>\n. */
static int zephyr_render(const struct chat_msg *m, size_t n, struct buf *out)
{
	int r = 0;
	for (size_t i = 0; i < n; i++)
		r |= puts_(out, "<|") | puts_(out, m[i].role) | puts_(out, "|>\n") | puts_(out, m[i].content) |
		     puts_(out, "</s>\n");
	return r | puts_(out, "<|assistant|>\n");
}

/* The DeepSeek-R1 distills': the begin-of-sentence token and the last system
 * message's content, wherever it stands; then the user turns and the answers,
 * each answer without its reasoning; then the assistant's turn, its think
 * block opened. */
static int deepseek_r1_render(const struct chat_msg *m, size_t n, struct buf *out)
{
	const char *sys = "";
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].role, "system") == 0)
			sys = m[i].content;
	int r = puts_(out, "<｜begin▁of▁sentence｜>") | puts_(out, sys);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(m[i].role, "user") == 0) {
			r |= puts_(out, "<｜User｜>") | puts_(out, m[i].content);
		} else if (strcmp(m[i].role, "assistant") == 0) {
			/* content.split('</think>')[-1] */
			const char *c = m[i].content, *end_think = last_of(c, strlen(c), "</think>");
			r |= puts_(out, "<｜Assistant｜>") | puts_(out, end_think ? end_think + 8 : c) |
			     puts_(out, "<｜end▁of▁sentence｜>");
		}
	}
	return r | puts_(out, "<｜Assistant｜><think>\n");
}

int chat_render(enum chat_format f, const struct chat_msg *m, size_t n, int flags, const char *date,
                struct buf *out, struct err *e)
{
	if (check_roles(m, n, e) < 0)
		return -1;
	if (is_llama(f))
		return llama_render(f, m, n, date, out) ? err_set(e, "out of memory") : 0;
	if ((f == CHAT_LLAMA2 || f == CHAT_MISTRAL) && inst_roles(f, m, n, e) < 0)
		return -1;
	if (f == CHAT_LLAMA2 || f == CHAT_MISTRAL || f == CHAT_ZEPHYR || f == CHAT_DEEPSEEK_R1) {
		int r = f == CHAT_LLAMA2 ? llama2_render(m, n, out) : f == CHAT_MISTRAL ? mistral_render(m, n, out)
		      : f == CHAT_ZEPHYR ? zephyr_render(m, n, out) : deepseek_r1_render(m, n, out);
		return r ? err_set(e, "out of memory") : 0;
	}
	int r = 0;
	/* the default system message of Qwen2.5's, Qwen2.5-Math's and SmolLM2's templates */
	if (f == CHAT_QWEN25 && strcmp(m[0].role, "system") != 0)
		r |= puts_(out, "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
		                "assistant.<|im_end|>\n");
	if (f == CHAT_QWEN25_MATH && strcmp(m[0].role, "system") != 0)
		r |= puts_(out, "<|im_start|>system\nPlease reason step by step, and put your final answer within "
		                "\\boxed{}.<|im_end|>\n");
	if (f == CHAT_SMOLLM2 && strcmp(m[0].role, "system") != 0)
		r |= puts_(out, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
		                "Face<|im_end|>\n");
	/* Qwen3: the last user turn that is not a tool response */
	size_t last_query = n - 1;
	for (size_t i = n; i-- > 0;)
		if (strcmp(m[i].role, "user") == 0 &&
		    !(starts_with(m[i].content, "<tool_response>") && ends_with(m[i].content, "</tool_response>"))) {
			last_query = i;
			break;
		}
	for (size_t i = 0; i < n; i++) {
		if (f == CHAT_QWEN3 && strcmp(m[i].role, "assistant") == 0) {
			r |= qwen3_assistant(out, m[i].content, i > last_query, i == n - 1);
			continue;
		}
		r |= puts_(out, "<|im_start|>") | puts_(out, m[i].role) | puts_(out, "\n");
		r |= puts_(out, m[i].content) | puts_(out, "<|im_end|>\n");
	}
	r |= puts_(out, "<|im_start|>assistant\n");
	if (f == CHAT_QWEN3 && (flags & CHAT_NO_THINKING))
		r |= puts_(out, "<think>\n\n</think>\n\n");
	return r ? err_set(e, "out of memory") : 0;
}

int chat_encode(const struct tokenizer *t, enum chat_format f, const struct chat_msg *msgs, size_t n, int flags,
                const char *date, struct tok_ids *ids, struct buf *text, struct err *e)
{
	static const char *const qwen[] = { "<|im_start|>", "<|im_end|>", NULL };
	static const char *const llama[] = { "<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
	                                     "<|eot_id|>", NULL };
	/* [INST], <<SYS>> and <|user|> are plain text to these models' tokenizers; bos and eos are not */
	static const char *const bos_eos[] = { "<s>", "</s>", NULL };
	static const char *const eos[] = { "</s>", NULL };
	static const char *const deepseek[] = { "<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
	                                        "<｜end▁of▁sentence｜>", NULL };
	const char *const *need = is_llama(f) ? llama : f == CHAT_LLAMA2 || f == CHAT_MISTRAL ? bos_eos
	                        : f == CHAT_ZEPHYR ? eos : f == CHAT_DEEPSEEK_R1 ? deepseek : qwen;
	/* a marker missing from the tokenizer would be spelled out in pieces: wrong, silently */
	for (const char *const *k = need; *k; k++)
		if (!tok_is_special(t, tok_token_id(t, *k)))
			return err_set(e, "the tokenizer has no special token %s, which the %s chat format needs", *k,
			               chat_format_name(f));
	struct buf own = { 0 };
	struct buf *b = text ? text : &own;
	size_t at = b->len;
	int r = chat_render(f, msgs, n, flags, date, b, e);
	if (r == 0)
		r = tok_encode(t, (const char *)b->data + at, b->len - at, ids, e);
	buf_free(&own);
	return r;
}

/* FNV-1a, 64 bits: a name for a template's exact text */
static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* The templates chat.t renders with jinja2 and compares with these formats. */
static const struct {
	uint64_t hash;
	size_t len;
	enum chat_format f;
} known_templates[] = {
	{ 0xc2b27ee60f1b8775ull, 2507, CHAT_QWEN25 },       /* Qwen2.5-Instruct */
	{ 0x2bfdb7aa9754484eull, 4116, CHAT_QWEN3 },        /* Qwen3 */
	{ 0x74891e390e614ae2ull, 348, CHAT_LLAMA3 },        /* Llama 3 Instruct */
	{ 0x0e60067a5537498eull, 389, CHAT_LLAMA3 },        /* and its add_generation_prompt revision */
	{ 0x0ac29b9538e2befaull, 3827, CHAT_LLAMA32 },      /* Llama 3.2 Instruct */
	{ 0xf344eecf1bd3a427ull, 815, CHAT_LLAMA2 },        /* Llama 2 chat */
	{ 0xf741d22a1d1ed6d7ull, 1058, CHAT_MISTRAL },      /* Mistral-7B-Instruct-v0.2 */
	{ 0x0af6ea9cf9896e56ull, 413, CHAT_ZEPHYR },        /* TinyLlama Chat */
	{ 0x45ec583d4d25bc3aull, 368, CHAT_SMOLLM2 },       /* SmolLM2-Instruct */
	{ 0x845fdf813c637ee2ull, 2246, CHAT_DEEPSEEK_R1 },  /* the DeepSeek-R1 distills */
	{ 0xb844301e4c148c65ull, 2513, CHAT_QWEN25_MATH },  /* Qwen2.5-Math */
};

/* The template of tokenizer_config.json's "chat_template", or NULL with the message. */
static const char *config_template(const cJSON *j, const char *path, struct err *e)
{
	/* cJSON finds the first, transformers the last: with two, which is meant is not known */
	int given = 0;
	for (const cJSON *c = j->child; c; c = c->next)
		given += c->string && strcmp(c->string, "chat_template") == 0;
	if (given > 1)
		return err_set(e, "%s gives chat_template %d times: name the chat format", path, given), NULL;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
	if (cJSON_IsString(t))
		return t->valuestring;
	if (!t || cJSON_IsNull(t))
		return err_set(e, "%s has no chat_template: name the chat format", path), NULL;
	const cJSON *x;
	if (cJSON_IsArray(t))
		cJSON_ArrayForEach(x, t) {
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(x, "name");
			const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(x, "template");
			if (cJSON_IsString(name) && strcmp(name->valuestring, "default") == 0 && cJSON_IsString(tmpl))
				return tmpl->valuestring;
		}
	return err_set(e, "%s: chat_template is neither a string nor a list holding a \"default\" one", path), NULL;
}

int chat_format_of_model(const char *tokenizer_path, enum chat_format *f, char *from, size_t from_size,
                         struct err *e)
{
	const char *slash = strrchr(tokenizer_path, '/');
	int dir_len = slash ? (int)(slash - tokenizer_path) : 1;
	const char *dir = slash ? tokenizer_path : ".";
	struct buf b = { 0 };
	int n = snprintf(from, from_size, "%.*s/chat_template.jinja", dir_len, dir);
	if (n < 0 || (size_t)n >= from_size)
		return err_set(e, "%s: path too long", tokenizer_path);
	const char *tmpl = NULL;
	size_t len = 0;
	cJSON *j = NULL;
	if (buf_read_file(&b, from, e) == 0) {
		tmpl = (const char *)b.data, len = b.len;
	} else if (errno != ENOENT) {
		return -1;
	} else {
		snprintf(from, from_size, "%.*s/tokenizer_config.json", dir_len, dir);
		if (buf_read_file(&b, from, e) < 0)
			return -1;
		j = json_parse_n((const char *)b.data, b.len, NULL);
		if (!j || !cJSON_IsObject(j)) {
			int oom = !j && errno == ENOMEM;
			cJSON_Delete(j);
			buf_free(&b);
			return oom ? err_sys(e, "%s", from) : err_set(e, "%s: not a JSON object", from);
		}
		if ((tmpl = config_template(j, from, e)))
			len = strlen(tmpl);
	}
	int r = -1;
	if (tmpl) {
		uint64_t h = text_hash(tmpl, len);
		for (size_t i = 0; i < sizeof known_templates / sizeof *known_templates && r < 0; i++)
			if (known_templates[i].hash == h && known_templates[i].len == len) {
				*f = known_templates[i].f;
				r = 0;
			}
		if (r < 0)
			err_set(e, "%s: its chat template (%zu bytes, hash %016llx) is none that this build knows, "
			        "byte for byte: name the chat format (%s)", from, len, (unsigned long long)h, CHAT_FORMATS);
	}
	cJSON_Delete(j);
	buf_free(&b);
	return r;
}

void chat_msgs_free(struct chat_msgs *m)
{
	free(m->m);
	cJSON_Delete(m->json);
	memset(m, 0, sizeof *m);
}

int chat_parse_json(const char *json, size_t n, struct chat_msgs *out, struct err *e)
{
	memset(out, 0, sizeof *out);
	cJSON *j = json_parse_n(json, n, NULL);
	if (!j)
		return errno == ENOMEM ? err_sys(e, "JSON") : err_set(e, "not JSON");
	out->json = j;
	if (cJSON_IsString(j)) {
		out->m = malloc(sizeof *out->m);
		if (!out->m)
			goto oom;
		out->m[0] = (struct chat_msg){ "user", j->valuestring };
		out->n = 1;
		return 0;
	}
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "messages");
	if (!cJSON_IsObject(j) || !cJSON_IsArray(ms)) {
		chat_msgs_free(out);
		return err_set(e, "expected a JSON string (the user's turn) or an object with a \"messages\" list");
	}
	/* apply_chat_template(tools=...) writes the tool definitions into the
	 * prompt (Qwen's templates in a <tools> system block): dropping them
	 * would prompt a model without the tools it was meant to call */
	if (cJSON_GetObjectItemCaseSensitive(j, "tools")) {
		chat_msgs_free(out);
		return err_set(e, "tools is not supported (the chat template would write the tool definitions "
		                  "into the prompt)");
	}
	const cJSON *th = cJSON_GetObjectItemCaseSensitive(j, "enable_thinking");
	if (th && !cJSON_IsBool(th)) {
		chat_msgs_free(out);
		return err_set(e, "enable_thinking must be true or false");
	}
	if (th) {
		out->has_flags = 1;
		out->flags = cJSON_IsFalse(th) ? CHAT_NO_THINKING : 0;
	}
	const cJSON *date = cJSON_GetObjectItemCaseSensitive(j, "date_string");
	if (date && !cJSON_IsString(date)) {
		chat_msgs_free(out);
		return err_set(e, "date_string must be a string");
	}
	out->date = date ? date->valuestring : NULL;
	size_t k = (size_t)cJSON_GetArraySize(ms);
	out->m = calloc(k ? k : 1, sizeof *out->m);
	if (!out->m)
		goto oom;
	const cJSON *x;
	cJSON_ArrayForEach(x, ms) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(x, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(x, "content");
		if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
			size_t i = out->n;
			chat_msgs_free(out);
			return err_set(e, "messages[%zu]: expected {\"role\": string, \"content\": string}", i);
		}
		/* the templates would render these; dropping them silently would change the prompt */
		const char *unsupported = cJSON_GetObjectItemCaseSensitive(x, "tool_calls") ? "tool_calls"
		                        : cJSON_GetObjectItemCaseSensitive(x, "reasoning_content") ? "reasoning_content"
		                        : NULL;
		if (unsupported) {
			size_t i = out->n;
			chat_msgs_free(out);
			return err_set(e, "messages[%zu]: %s is not supported", i, unsupported);
		}
		out->m[out->n++] = (struct chat_msg){ role->valuestring, content->valuestring };
	}
	return 0;
oom:
	chat_msgs_free(out);
	return err_set(e, "out of memory");
}
