/* server.c: see server.h. */
#include "collect/server.h"

#include <cJSON.h>
#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"

const char *const server_api_names[] = { [SERVER_VLLM] = "vllm", [SERVER_SGLANG] = "sglang", [SERVER_OPENAI] = "openai", NULL };

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	return buf_append(ctx, p, size * nmemb) < 0 ? 0 : size * nmemb;
}

static int init_curl(struct err *e)
{
	static int done;
	if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return err_set(e, "libcurl: cannot initialise");
	done = 1;
	return 0;
}

/* ---- requests ---- */

/*
 * --seed for a prompt's first sample: the seed plus the prompt's place
 * times G, within the integers a JSON double holds exactly. vLLM draws a
 * request's sample j with its seed + j (its n children), and an SGLang
 * request gets one entry per sample with that seed (sglang_body), so
 * sample j of the prompt at place p has the stream seed + p·G + j in both,
 * and no two samples of a run share one. (seed + p, as this was, gave
 * vLLM's sample 1 of one prompt the stream of the next prompt's sample 0;
 * SGLang gives all n of one request its one sampling_seed, which with
 * --enable-deterministic-inference draws n identical samples.)
 */
static double request_seed(const struct server_opts *o, const struct server_prompt *p, int j)
{
	return (double)((o->seed + p->place * (uint64_t)o->samples + (uint64_t)j) & ((1ull << 53) - 1));
}

/*
 * top_k (-1: off), and no repetition penalty and no min-p, always sent: a
 * server left to its defaults takes them from the model's
 * generation_config.json (vLLM's --generation-config auto, SGLang's
 * --sampling-defaults model), which instruct models fill with a top_k and
 * a repetition_penalty: the tokens would be drawn otherwise than asked, and
 * processed logprobs taken after those.
 */
static void add_neutral(cJSON *params, int top_k)
{
	cJSON_AddNumberToObject(params, "top_k", top_k > 0 ? top_k : -1);
	cJSON_AddNumberToObject(params, "repetition_penalty", 1);
	cJSON_AddNumberToObject(params, "min_p", 0);
}

/* The stop strings, where there are any: each API takes "stop" as a list,
 * ends a response where its text comes to hold one and keeps its tokens. */
static void add_stops(cJSON *params, const struct server_opts *o)
{
	if (o->n_stops > 0)
		cJSON_AddItemToObject(params, "stop", cJSON_CreateStringArray(o->stops, o->n_stops));
}

/* SGLang's sampling_params for n samples; with a seed, the sample's own. */
static cJSON *sglang_params(const struct server_opts *o, int n, const struct server_prompt *p, int j)
{
	cJSON *params = cJSON_CreateObject();
	if (!params)
		return NULL;
	cJSON_AddNumberToObject(params, "n", n);
	cJSON_AddNumberToObject(params, "temperature", o->temperature);
	cJSON_AddNumberToObject(params, "top_p", o->top_p);
	add_neutral(params, o->top_k);
	cJSON_AddNumberToObject(params, "max_new_tokens", o->max_tokens);
	add_stops(params, o);
	if (o->have_seed)
		cJSON_AddNumberToObject(params, "sampling_seed", request_seed(o, p, j));
	return params;
}

static cJSON *prompt_json(const struct server_prompt *p)
{
	return p->tokens ? cJSON_CreateIntArray((const int *)p->tokens, (int)p->n) : cJSON_CreateString(p->text);
}

/*
 * An SGLang /generate request: the prompt with sampling_params.n = G; with
 * --seed, a batch of G copies of the prompt, each with its own
 * sampling_params and seed (request_seed), which SGLang answers as the
 * same array of G and grpo-collect's importer reads as one group.
 */
static void sglang_body(cJSON *r, const struct server_opts *o, const struct server_prompt *p)
{
	const char *key = p->tokens ? "input_ids" : "text";
	if (!o->have_seed || o->samples == 1) {
		cJSON_AddItemToObject(r, key, prompt_json(p));
		cJSON_AddItemToObject(r, "sampling_params", sglang_params(o, o->samples, p, 0));
	} else {
		cJSON *prompts = cJSON_AddArrayToObject(r, key), *params = cJSON_AddArrayToObject(r, "sampling_params");
		for (int j = 0; prompts && params && j < o->samples; j++) {
			cJSON_AddItemToArray(prompts, prompt_json(p));
			cJSON_AddItemToArray(params, sglang_params(o, 1, p, j));
		}
	}
	cJSON_AddBoolToObject(r, "return_logprob", 1);
	/* from 0 the response holds the prompt's ids; with ids sent, it need not */
	cJSON_AddNumberToObject(r, "logprob_start_len", p->tokens ? -1 : 0);
}

static char *request_body(const struct server_opts *o, const struct server_prompt *p)
{
	cJSON *r = cJSON_CreateObject();
	if (!r)
		return NULL;
	if (o->api == SERVER_SGLANG) {
		sglang_body(r, o, p);
	} else {
		if (o->model)
			cJSON_AddStringToObject(r, "model", o->model);
		cJSON_AddItemToObject(r, "prompt", prompt_json(p));
		cJSON_AddNumberToObject(r, "n", o->samples);
		cJSON_AddNumberToObject(r, "temperature", o->temperature);
		cJSON_AddNumberToObject(r, "top_p", o->top_p);
		if (o->api == SERVER_VLLM)
			add_neutral(r, o->top_k);
		cJSON_AddNumberToObject(r, "max_tokens", o->max_tokens);
		add_stops(r, o);
		cJSON_AddNumberToObject(r, "logprobs", 0);
		if (o->api == SERVER_VLLM)
			cJSON_AddBoolToObject(r, "return_token_ids", 1);
		if (o->have_seed)
			cJSON_AddNumberToObject(r, "seed", request_seed(o, p, 0));
	}
	char *s = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	return s;
}

/* How many samples a response holds: choices (vllm, openai); an array's
 * length or 1 for an object (sglang). -1 when it has no such shape. */
static int samples_in(const struct server_opts *o, const cJSON *v)
{
	if (o->api == SERVER_SGLANG)
		return cJSON_IsArray(v) ? cJSON_GetArraySize(v) : cJSON_IsObject(v) ? 1 : -1;
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(v, "choices");
	return cJSON_IsArray(ch) ? cJSON_GetArraySize(ch) : -1;
}

/* {"request":REQ,"response":BODY,"answer":A}. A valid JSON body holds raw
 * line breaks only as blanks between tokens, so they become spaces. */
static int make_line(const char *req, const unsigned char *body, size_t n, const char *answer,
		     struct server_result *res)
{
	struct buf b = { 0 };
	char *a = NULL;
	if (answer) {
		cJSON *s = cJSON_CreateString(answer);
		a = s ? cJSON_PrintUnformatted(s) : NULL;
		cJSON_Delete(s);
		if (!a)
			return -1;
	}
	while (n && isspace((unsigned char)body[n - 1]))
		n--;
	while (n && isspace((unsigned char)*body)) {
		body++;
		n--;
	}
	int r = buf_printf(&b, "{\"request\":%s,\"response\":", req);
	size_t at = b.len;
	if (r == 0)
		r = buf_append(&b, body, n);
	for (size_t i = at; r == 0 && i < b.len; i++)
		if (b.data[i] == '\n' || b.data[i] == '\r')
			b.data[i] = ' ';
	if (r == 0)
		r = a ? buf_printf(&b, ",\"answer\":%s}", a) : buf_append(&b, "}", 2);
	free(a);
	if (r < 0) {
		buf_free(&b);
		return -1;
	}
	res->line = (char *)b.data;
	res->len = strlen(res->line);
	return 0;
}

/* ---- the transfer loop ---- */

enum { WAITING, FLYING, DONE };

struct job {
	char *req;                /* the request body, made once */
	int state;
	long long due;            /* WAITING: not before this time */
	long long retry_after_ms; /* the server's Retry-After on the last failure, 0 when none */
	int down;                 /* the last failure was the server's absence (server_down) */
	char why[256];            /* the last failure */
};

struct slot {
	CURL *h;
	size_t job;               /* (size_t)-1: free */
	struct buf body;
	char curl_err[CURL_ERROR_SIZE];
};

static const char *endpoint(enum server_api api)
{
	return api == SERVER_SGLANG ? "/generate" : "/v1/completions";
}

static int url_of(const char *base, const char *path, char *out, size_t sz)
{
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	return snprintf(out, sz, "%.*s%s", (int)n, base, path) < (int)sz ? 0 : -1;
}

/* After an HTTP status other than 200: 0 where a retry may help (408, 429,
 * 5xx), with *retry_after_ms what a 429 or 503 asked for, else -1. */
static int status_transient(CURL *h, long code, long long *retry_after_ms)
{
	curl_off_t after = 0;   /* seconds, from a number or an HTTP date */
	if ((code == 429 || code == 503) && curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0)
		*retry_after_ms = after < 86400 ? (long long)after * 1000 : 86400000ll;
	return code == 408 || code == 429 || code >= 500 ? 0 : -1;
}

/*
 * Whether a failed transfer (rc, else the HTTP status code) says the
 * server is not there or not taking requests now (it is being restarted,
 * is overloaded, or the network is down) rather than that it or the
 * request is wrong: a run later may well succeed (server_result.down).
 */
static int server_down(CURLcode rc, long code)
{
	switch (rc) {
	case CURLE_OK:
		return code == 408 || code == 429 || code == 502 || code == 503 || code == 504;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return 1;
	default:
		return 0;
	}
}

/* A finished transfer: 1 success, 0 transient failure (why filled, and
 * *retry_after_ms the wait a 429 or 503 asked for), -1 for good (why
 * filled); *down as server_down says of a failure. */
static int judge(const struct server_opts *o, struct slot *s, CURLcode rc, char *why, size_t wsz,
		 long long *retry_after_ms, int *down)
{
	long code = 0;
	*retry_after_ms = 0;
	if (rc == CURLE_OK)
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
	*down = server_down(rc, code);
	if (rc != CURLE_OK) {
		snprintf(why, wsz, "%s", *s->curl_err ? s->curl_err : curl_easy_strerror(rc));
		return 0;
	}
	if (code != 200) {
		int n = (int)(s->body.len < 160 ? s->body.len : 160);
		snprintf(why, wsz, "HTTP %ld%s%.*s", code, n ? ": " : "", n, s->body.data ? (char *)s->body.data : "");
		for (char *c = why; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		return status_transient(s->h, code, retry_after_ms);
	}
	const char *end = NULL;
	cJSON *v = cJSON_ParseWithLengthOpts((const char *)s->body.data, s->body.len, &end, 0);
	int ok = v != NULL;
	for (const char *c = end; ok && c < (const char *)s->body.data + s->body.len; c++)
		if (!isspace((unsigned char)*c))
			ok = 0;
	if (!ok) {
		cJSON_Delete(v);
		snprintf(why, wsz, "the answer is not one whole JSON value (%zu bytes; cut short?)", s->body.len);
		return 0;
	}
	int got = samples_in(o, v);
	cJSON_Delete(v);
	if (got != o->samples) {
		if (got < 0)
			snprintf(why, wsz, "the answer has no %s", o->api == SERVER_SGLANG ? "response object" : "\"choices\"");
		else
			snprintf(why, wsz, "the answer holds %d samples for n = %d", got, o->samples);
		return 0;
	}
	return 1;
}

/*
 * The wait before retry k (attempts = k): backoff * 2^(k-1), at most
 * RETRY_MAX_MS, or longer where the server asked for it with Retry-After (a
 * rate limit), but never past --timeout: a server asking for hours is as
 * good as down, and the run should say so rather than sleep.
 */
#define RETRY_MAX_MS 120000ll
static long long retry_delay(const struct server_opts *o, int attempts, long long retry_after_ms)
{
	long long d = o->backoff_ms;
	for (int k = 1; k < attempts && d < RETRY_MAX_MS; k++)
		d *= 2;
	if (d > RETRY_MAX_MS)
		d = RETRY_MAX_MS;
	if (retry_after_ms > d)
		d = retry_after_ms < o->timeout_ms ? retry_after_ms : o->timeout_ms;
	return d;
}

static int start(const struct server_opts *o, struct slot *s, size_t j, struct job *job, CURLM *m, const char *url,
		 struct curl_slist *hdr)
{
	buf_reset(&s->body);
	s->curl_err[0] = 0;
	s->job = j;
	curl_easy_reset(s->h);
	curl_easy_setopt(s->h, CURLOPT_URL, url);
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, job->req);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, &s->body);
	curl_easy_setopt(s->h, CURLOPT_ERRORBUFFER, s->curl_err);
	curl_easy_setopt(s->h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	job->state = FLYING;
	return curl_multi_add_handle(m, s->h) == CURLM_OK ? 0 : -1;
}

int server_sample(const struct server_opts *o, const struct server_prompt *p, size_t n,
		  struct server_result *out, struct err *e)
{
	char url[2048];
	memset(out, 0, n * sizeof *out);
	if (init_curl(e) < 0)
		return -1;
	if (url_of(o->url, endpoint(o->api), url, sizeof url) < 0)
		return err_set(e, "%s: URL too long", o->url);
	int ns = o->concurrency < 1 ? 1 : o->concurrency;
	if ((size_t)ns > n)
		ns = n ? (int)n : 1;
	struct job *jobs = calloc(n ? n : 1, sizeof *jobs);
	struct slot *slots = calloc((size_t)ns, sizeof *slots);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	CURLM *m = curl_multi_init();
	int r = 0;
	if (!jobs || !slots || !hdr || !m) {
		r = err_set(e, "out of memory");
		goto out;
	}
	for (int i = 0; i < ns; i++) {
		slots[i].job = (size_t)-1;
		if (!(slots[i].h = curl_easy_init())) {
			r = err_set(e, "libcurl: cannot make a handle");
			goto out;
		}
	}
	for (size_t j = 0; j < n; j++)
		if (!(jobs[j].req = request_body(o, &p[j]))) {
			r = err_set(e, "out of memory");
			goto out;
		}
	size_t left = n, next = 0;   /* next: the first job that may still wait */
	while (left > 0) {
		long long now = now_ms(), wake = now + 1000;
		/* fill the free slots with the due jobs, in prompt order */
		for (int i = 0; i < ns; i++) {
			if (slots[i].job != (size_t)-1)
				continue;
			while (next < n && jobs[next].state == DONE)
				next++;
			size_t j = next;
			while (j < n && (jobs[j].state != WAITING || jobs[j].due > now))
				j++;
			if (j == n)
				break;
			if (start(o, &slots[i], j, &jobs[j], m, url, hdr) < 0) {
				r = err_set(e, "libcurl: cannot start a request");
				goto out;
			}
			out[j].attempts++;
		}
		int running;
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int queued;
		while ((msg = curl_multi_info_read(m, &queued))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct slot *s = NULL;
			for (int i = 0; i < ns && !s; i++)
				if (slots[i].h == msg->easy_handle)
					s = &slots[i];
			CURLcode rc = msg->data.result;
			curl_multi_remove_handle(m, s->h);
			size_t j = s->job;
			struct job *job = &jobs[j];
			int v = judge(o, s, rc, job->why, sizeof job->why, &job->retry_after_ms, &job->down);
			s->job = (size_t)-1;
			if (v == 1) {
				if (make_line(job->req, s->body.data, s->body.len, p[j].answer, &out[j]) < 0) {
					r = err_set(e, "out of memory");
					goto out;
				}
				job->state = DONE;
				left--;
			} else if (v == 0 && out[j].attempts <= o->retries) {
				job->state = WAITING;
				job->due = now_ms() + retry_delay(o, out[j].attempts, job->retry_after_ms);
			} else {
				size_t sz = strlen(job->why) + 64;
				if (!(out[j].error = malloc(sz))) {
					r = err_set(e, "out of memory");
					goto out;
				}
				if (out[j].attempts > 1)
					snprintf(out[j].error, sz, "%s (after %d attempts)", job->why, out[j].attempts);
				else
					snprintf(out[j].error, sz, "%s", job->why);
				out[j].down = job->down;
				job->state = DONE;
				left--;
			}
		}
		if (left == 0)
			break;
		/* sleep until a socket is ready or the earliest retry falls due */
		int flying = 0;
		for (int i = 0; i < ns; i++)
			flying += slots[i].job != (size_t)-1;
		for (size_t j = next; j < n; j++)
			if (jobs[j].state == WAITING && jobs[j].due < wake)
				wake = jobs[j].due;
		long long wait = wake - now_ms();
		if (flying < ns && wait <= 0)
			continue;
		curl_multi_poll(m, NULL, 0, (int)(wait < 1 ? 1 : wait > 1000 ? 1000 : wait), NULL);
	}
out:
	for (int i = 0; slots && i < ns; i++) {
		if (slots[i].h) {
			if (slots[i].job != (size_t)-1)
				curl_multi_remove_handle(m, slots[i].h);
			curl_easy_cleanup(slots[i].h);
		}
		buf_free(&slots[i].body);
	}
	for (size_t j = 0; jobs && j < n; j++)
		cJSON_free(jobs[j].req);
	if (m)
		curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	free(jobs);
	free(slots);
	if (r < 0)
		server_results_free(out, n);
	return r;
}

void server_results_free(struct server_result *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].line);
		free(r[i].error);
		memset(&r[i], 0, sizeof r[i]);
	}
}

/* ---- what the server serves ---- */

static char *dup_str(const cJSON *v)
{
	return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

/* Sleep ms milliseconds, a signal's wake-up included. */
static void sleep_ms(long long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * One GET of what the server serves: 1 a 200 holding JSON, parsed into *v;
 * 0 a transient failure as judge() counts one (a refused or dropped
 * connection, a timeout, HTTP 408, 429 or 5xx, a body that is not JSON: cut
 * short), with *retry_after_ms what a 429 or 503 asked for; -1 for good
 * (another HTTP status). why says what went wrong, *down as server_down.
 */
static int probe(const struct server_opts *o, const char *url, cJSON **v, char *why, size_t wsz,
		 long long *retry_after_ms, int *down)
{
	struct buf body = { 0 };
	char cerr[CURL_ERROR_SIZE] = "";
	*v = NULL;
	*retry_after_ms = 0;
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(why, wsz, "libcurl: cannot make a handle");
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	CURLcode rc = curl_easy_perform(h);
	long code = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	*down = server_down(rc, code);
	int r = 1;
	if (rc != CURLE_OK) {
		snprintf(why, wsz, "%s", *cerr ? cerr : curl_easy_strerror(rc));
		r = 0;
	} else if (code != 200) {
		snprintf(why, wsz, "HTTP %ld", code);
		r = status_transient(h, code, retry_after_ms);
	} else if (!(*v = cJSON_ParseWithLength((const char *)body.data, body.len))) {
		snprintf(why, wsz, "the answer is not JSON");
		r = 0;
	}
	curl_easy_cleanup(h);
	buf_free(&body);
	return r;
}

/*
 * Asked first, before any prompt: a server being restarted (a sync by
 * examples/sync/vllm-restart.sh) refuses connections or answers 503 for a
 * while, so a transient failure is retried as a prompt's request is, with
 * the same backoff, Retry-After and --timeout bound.
 */
int server_model_info(const struct server_opts *o, char **id, char **path, struct err *e)
{
	char url[2048], why[CURL_ERROR_SIZE + 64];
	*id = *path = NULL;
	if (init_curl(e) < 0)
		return -1;
	const char *what = o->api == SERVER_SGLANG ? "/get_model_info" : "/v1/models";
	if (url_of(o->url, what, url, sizeof url) < 0)
		return err_set(e, "%s: URL too long", o->url);
	cJSON *v = NULL;
	long long after = 0;
	int attempts = 0, got, down = 0;
	do {
		if (attempts > 0)
			sleep_ms(retry_delay(o, attempts, after));
		got = probe(o, url, &v, why, sizeof why, &after, &down);
		attempts++;
	} while (got == 0 && attempts <= o->retries);
	int r = 0;
	if (got < 1) {
		r = attempts > 1 ? err_set(e, "%s: %s (after %d attempts)", url, why, attempts)
				 : err_set(e, "%s: %s", url, why);
		if (down)
			err_later(e);   /* not there now: a run later may find it */
	}
	else if (o->api == SERVER_SGLANG)
		*path = dup_str(cJSON_GetObjectItemCaseSensitive(v, "model_path"));
	else {
		const cJSON *m, *pick = NULL;
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(v, "data")) {
			const char *mid = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "id"))
						  ? cJSON_GetObjectItemCaseSensitive(m, "id")->valuestring : NULL;
			if (!pick && (!o->model || (mid && strcmp(mid, o->model) == 0)))
				pick = m;
		}
		if (!pick)
			r = err_set(e, "%s: %s", url, o->model ? "the server does not serve that model" : "no models");
		else {
			*id = dup_str(cJSON_GetObjectItemCaseSensitive(pick, "id"));
			*path = dup_str(cJSON_GetObjectItemCaseSensitive(pick, "root"));
		}
	}
	cJSON_Delete(v);
	return r;
}
