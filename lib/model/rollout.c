/* rollout.c: see rollout.h. */
#include "model/rollout.h"

#include <cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/lineio.h"
#include "base/path.h"
#include "data/jsonview.h"

void rollout_prompt_free(struct rollout_prompt *p)
{
	free(p->tokens);
	free(p->text);
	free(p->answer);
	memset(p, 0, sizeof *p);
}

/* "prompt_tokens": a non-empty array of integer ids below vocab. */
static int parse_ids(const cJSON *a, uint32_t vocab, struct rollout_prompt *p, struct err *e)
{
	int n = cJSON_GetArraySize(a);
	if (n < 1)
		return err_set(e, "prompt_tokens: empty");
	if (!(p->tokens = malloc((size_t)n * sizeof *p->tokens)))
		return err_set(e, "out of memory");
	int i = 0;
	for (const cJSON *v = a->child; v; v = v->next, i++) {
		double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
		if (!(d >= 0 && d < vocab && d == floor(d)))
			return err_set(e, "prompt_tokens[%d]: expected a token id in [0, %u)", i, vocab);
		p->tokens[i] = (int32_t)d;
	}
	p->n = (uint32_t)n;
	return 0;
}

/* Text or messages through the tokenizer (and the chat format, if any). */
static int encode(const struct tokenizer *tok, const enum chat_format *chat, const char *line, size_t n,
                  const char *text, struct rollout_prompt *p, struct err *e)
{
	struct tok_ids ids = { 0 };
	struct chat_msgs msgs = { 0 };
	int r;
	if (!chat)
		r = tok_encode(tok, text, strlen(text), &ids, e);
	else if (text) {
		struct chat_msg m = { "user", text };
		r = chat_encode(tok, *chat, &m, 1, 0, NULL, &ids, NULL, e);
	} else if ((r = chat_parse_json(line, n, &msgs, e)) == 0)
		r = chat_encode(tok, *chat, msgs.m, msgs.n, msgs.flags, msgs.date, &ids, NULL, e);
	chat_msgs_free(&msgs);
	if (r == 0 && ids.n == 0)
		r = err_set(e, "the prompt encodes to no tokens");
	if (r < 0) {
		tok_ids_free(&ids);
		return -1;
	}
	p->tokens = ids.v;
	p->n = (uint32_t)ids.n;
	return 0;
}

static int prompt_parse(const char *line, size_t n, const struct tokenizer *tok, const enum chat_format *chat,
                        uint32_t vocab, unsigned flags, uint64_t place, struct rollout_prompt *p, struct err *e)
{
	memset(p, 0, sizeof *p);
	p->place = place;
	if (json_check_text(line, n, e) < 0)
		return -1;
	/* one value alone: cJSON stops after the first, and a second object on
	 * the line would be dropped silently */
	cJSON *o = json_parse_one(line, n, e);
	if (!o)
		return -1;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return err_set(e, "not a JSON object");
	}
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(o, "prompt_tokens");
	const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "prompt");
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(o, "messages");
	const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answer");
	int r = 0;
	if (!!ids + !!text + !!msgs != 1)
		r = err_set(e, "expected exactly one of prompt, prompt_tokens or messages");
	else if (ids)
		r = cJSON_IsArray(ids) ? parse_ids(ids, vocab, p, e) : err_set(e, "prompt_tokens: expected an array");
	else if (!tok && text && (flags & ROLLOUT_KEEP_TEXT)) {
		if (!cJSON_IsString(text) || !*text->valuestring)
			r = err_set(e, "prompt: expected a non-empty string");
		else if (!(p->text = strdup(text->valuestring)))
			r = err_set(e, "out of memory");
	} else if (!tok)
		r = err_set(e, "%s is text: the model has no tokenizer.json (give --tokenizer, or prompt_tokens)",
		            text ? "prompt" : "messages");
	else if (text && !cJSON_IsString(text))
		r = err_set(e, "prompt: expected a string");
	else if (msgs && !chat)
		r = err_set(e, "messages: needs a chat format (--chat)");
	else if ((r = encode(tok, chat, line, n, text ? text->valuestring : NULL, p, e)) == 0)
		for (uint32_t i = 0; i < p->n && r == 0; i++)
			if ((uint32_t)p->tokens[i] >= vocab)
				r = err_set(e, "the tokenizer gives id %d, past the model's vocabulary of %u",
				            (int)p->tokens[i], vocab);
	if (r == 0 && ans) {
		if (cJSON_IsString(ans))
			p->answer = strdup(ans->valuestring);
		else if (cJSON_IsNumber(ans))
			p->answer = cJSON_PrintUnformatted(ans);
		else
			r = err_set(e, "answer: expected a string or a number");
		if (r == 0 && !p->answer)
			r = err_set(e, "out of memory");
	}
	cJSON_Delete(o);
	if (r < 0)
		rollout_prompt_free(p);
	return r;
}

int rollout_prompt_parse(const char *line, size_t n, const struct tokenizer *tok, const enum chat_format *chat,
                         uint32_t vocab, uint64_t place, struct rollout_prompt *p, struct err *e)
{
	return prompt_parse(line, n, tok, chat, vocab, 0, place, p, e);
}

/* One generated sequence as a trajectory of prompt p; takes s's arrays. */
static int to_traj(const struct rollout_prompt *p, struct gen_seq *s, int j, int G, float temperature,
                   int64_t policy_version, struct traj *t, struct err *e)
{
	traj_init(t);
	t->prompt_tokens = malloc((size_t)p->n * sizeof *t->prompt_tokens);
	t->response_tokens = malloc((size_t)(s->n ? s->n : 1) * sizeof *t->response_tokens);
	t->logprobs = s->logprobs;
	s->logprobs = NULL;
	if (p->answer)
		t->answer = strdup(p->answer);
	if (!t->prompt_tokens || !t->response_tokens || (p->answer && !t->answer))
		return err_set(e, "out of memory");
	memcpy(t->prompt_tokens, p->tokens, (size_t)p->n * sizeof *t->prompt_tokens);
	for (int i = 0; i < s->n; i++)
		t->response_tokens[i] = s->tokens[i];
	t->n_prompt = p->n;
	t->n_response = (uint32_t)s->n;
	t->group_id = traj_id_num((int64_t)p->place);
	t->sequence_id = traj_id_num((int64_t)(p->place * (uint64_t)G + (uint64_t)j));
	t->policy_version = policy_version;
	t->temperature = temperature > 0 ? temperature : 1.0f;
	if (traj_set_finish(t, s->finish == GEN_STOP ? "stop" : "length") < 0)
		return err_set(e, "out of memory");
	return 0;
}

int rollout_sample(const struct model *m, struct model_gpu *gpu, const struct rollout_prompt *prompts, int n, int G,
                   const struct gen_params *gp, int64_t policy_version, struct group *out, struct err *e)
{
	memset(out, 0, (size_t)n * sizeof *out);
	if (n < 1 || G < 1)
		return err_set(e, "need at least one prompt and one sample");
	int B = n * G;
	const int **ptr = malloc((size_t)B * sizeof *ptr);
	int *lens = malloc((size_t)B * sizeof *lens);
	uint64_t *streams = malloc((size_t)B * sizeof *streams);
	struct gen_seq *seqs = calloc((size_t)B, sizeof *seqs);
	int r = 0;
	if (!ptr || !lens || !streams || !seqs) {
		r = err_set(e, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < G; j++) {
			/* int32_t and int are one type on every platform this builds on */
			ptr[i * G + j] = (const int *)prompts[i].tokens;
			lens[i * G + j] = (int)prompts[i].n;
			streams[i * G + j] = prompts[i].place * (uint64_t)G + (uint64_t)j;
		}
	struct gen_params p = *gp;
	p.streams = streams;
	if ((r = gpu ? model_gpu_generate(gpu, ptr, lens, B, &p, seqs, e) : gen_run(m, ptr, lens, B, &p, seqs, e)) < 0)
		goto out;
	for (int i = 0; i < n && r == 0; i++) {
		out[i].group_id = traj_id_num((int64_t)prompts[i].place);
		if (!(out[i].trajs = calloc((size_t)G, sizeof *out[i].trajs))) {
			r = err_set(e, "out of memory");
			break;
		}
		out[i].n = (uint32_t)G;
		for (int j = 0; j < G && r == 0; j++)
			r = to_traj(&prompts[i], &seqs[i * G + j], j, G, gp->temperature, policy_version,
			            &out[i].trajs[j], e);
	}
out:
	if (seqs)
		for (int b = 0; b < B; b++)
			gen_seq_free(&seqs[b]);
	if (r < 0)
		for (int i = 0; i < n; i++)
			group_free(&out[i]);
	free(ptr);
	free(lens);
	free(streams);
	free(seqs);
	return r;
}

void rollout_prompts_free(struct rollout_prompt *p, int n)
{
	for (int i = 0; p && i < n; i++)
		rollout_prompt_free(&p[i]);
	free(p);
}

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n", s[i]))
			return 0;
	return 1;
}

/* One pass over the file: count its rows, or parse the rows that [offset, offset + count) picks. */
static int prompts_pass(const char *path, const struct tokenizer *tok, const enum chat_format *chat, uint32_t vocab,
                        unsigned flags, uint64_t rows, uint64_t offset, uint64_t count, struct rollout_prompt *out, uint64_t *seen,
                        struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	struct lineio li;
	if (lineio_open(&li, fd, path, e) < 0) {
		close(fd);
		return -1;
	}
	const char *line;
	size_t len;
	uint64_t lineno = 0, row = 0;
	int r, got;
	while ((got = lineio_next(&li, &line, &len, e)) > 0) {
		lineno++;
		if (blank(line, len))
			continue;
		if (rows) {
			/* the k-th prompt taken is row (offset + k) mod rows; k < count */
			uint64_t k = (row + rows - offset % rows) % rows;
			for (; k < count; k += rows)
				if ((r = prompt_parse(line, len, tok, chat, vocab, flags, offset + k, &out[k], e)) < 0) {
					err_prefix(e, "%s:%llu", path, (unsigned long long)lineno);
					lineio_close(&li);
					close(fd);
					return -1;
				} else
					out[k].line = lineno;
		}
		row++;
	}
	lineio_close(&li);
	close(fd);
	*seen = row;
	return got < 0 ? -1 : 0;
}

int rollout_prompts_load(const char *path, const struct tokenizer *tok, const enum chat_format *chat,
                         uint32_t vocab, unsigned flags, uint64_t offset, uint64_t count,
                         struct rollout_prompt **out, int *n, uint64_t *rows, struct err *e)
{
	*out = NULL;
	*n = 0;
	if (prompts_pass(path, tok, chat, vocab, flags, 0, 0, 0, NULL, rows, e) < 0)
		return -1;
	if (*rows == 0)
		return err_set(e, "%s: no prompts", path);
	if (count == 0)
		count = *rows;
	if (count > INT32_MAX)
		return err_set(e, "%s: %llu prompts are too many for one call", path, (unsigned long long)count);
	struct rollout_prompt *p = calloc((size_t)count, sizeof *p);
	if (!p)
		return err_set(e, "out of memory for %llu prompts", (unsigned long long)count);
	uint64_t again;
	if (prompts_pass(path, tok, chat, vocab, flags, *rows, offset, count, p, &again, e) < 0) {
		rollout_prompts_free(p, (int)count);
		return -1;
	}
	if (again != *rows) {
		rollout_prompts_free(p, (int)count);
		return err_set(e, "%s: changed while being read", path);
	}
	*out = p;
	*n = (int)count;
	return 0;
}

static int has_config(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;
	return snprintf(p, sizeof p, "%s/config.json", dir) < (int)sizeof p && stat(p, &st) == 0;
}

/* A model directory's own version: K when its name is step_K (a policy
 * queue's checkpoint named directly, to pin it), else 0. */
static int64_t dir_version(const char *dir)
{
	int64_t k = path_step(dir);
	return k < 0 ? 0 : k;
}

int rollout_policy_find(const char *dir, char *out, size_t outsz, int64_t *version, struct err *e)
{
	if (has_config(dir)) {
		*version = dir_version(dir);
		if (snprintf(out, outsz, "%s", dir) >= (int)outsz)
			return err_set(e, "%s: path too long", dir);
		return 0;
	}
	DIR *d = opendir(dir);
	if (!d)
		return err_set(e, "%s: %s", dir, strerror(errno));
	long long best = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		if (strncmp(de->d_name, "step_", 5) || !isdigit((unsigned char)de->d_name[5]))
			continue;
		errno = 0;
		long long k = strtoll(de->d_name + 5, &end, 10);
		char sub[PATH_MAX];
		if (*end || errno || k <= best || snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >= (int)sizeof sub)
			continue;
		if (has_config(sub))
			best = k;
	}
	closedir(d);
	if (best < 0)
		return err_set(e, "%s: neither a model directory (no config.json) nor a policy queue with a step_K "
		               "that holds one", dir);
	*version = best;
	if (snprintf(out, outsz, "%s/step_%lld", dir, best) >= (int)outsz)
		return err_set(e, "%s: path too long", dir);
	return 0;
}

int rollout_policy_at(const char *dir, int64_t version, char *out, size_t outsz, struct err *e)
{
	if (has_config(dir)) {
		if (version != dir_version(dir))
			return err_set(e, "%s is a model directory (policy version %lld), not a policy queue with a "
				       "step_%lld", dir, (long long)dir_version(dir), (long long)version);
		if (snprintf(out, outsz, "%s", dir) >= (int)outsz)
			return err_set(e, "%s: path too long", dir);
		return 0;
	}
	if (snprintf(out, outsz, "%s/step_%lld", dir, (long long)version) >= (int)outsz)
		return err_set(e, "%s: path too long", dir);
	return has_config(out) ? 0 : 1;
}
