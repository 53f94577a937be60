/*
 * server.h: sampling through a live inference server over HTTP, for
 * grpo-collect --server (grpo-collect(1)).
 *
 * One request per prompt asks for all G samples of it (n = G), so a prompt's
 * group comes back whole in one response or not at all. Three dialects:
 *
 *   vllm     POST /v1/completions {"prompt": text or ids, "n": G, "logprobs": 0,
 *            "return_token_ids": true, ...}: the sampled token's logprob and
 *            the prompt's and completion's ids in every choice
 *   sglang   POST /generate {"text" or "input_ids", "sampling_params": {"n": G,
 *            ...}, "return_logprob": true, "logprob_start_len": 0 for text, so
 *            that meta_info.input_token_logprobs gives the prompt's ids}
 *   openai   POST /v1/completions with only the fields of OpenAI's API; the
 *            importer refuses the answer unless the server returns token ids
 *            anyway (vLLM started with --return-tokens-as-token-ids)
 *
 * The driver only fetches: it does not read rollouts out of a response. Each
 * successful answer becomes one line {"request": REQ, "response": RESP,
 * "answer": A} (answer only where the prompt has one), the wrapper line that
 * grpo-collect imports from a file (collect.h), and the caller feeds those
 * lines to the same importer. So sampling through a server stores exactly
 * what importing its saved answers stores.
 *
 * Up to `concurrency` requests are in flight at once (libcurl's multi
 * interface, one thread). A request fails transiently on a transport error
 * (refused or dropped connection, a timeout), an HTTP 408, 429 or 5xx, or a
 * 200 whose body is not one whole JSON value or holds another number of
 * samples than n; it is retried up to `retries` more times, the k-th retry
 * after backoff_ms * 2^(k-1) (at most two minutes), or after the Retry-After
 * of a 429 or 503 when that is longer (at most timeout_ms). Any other HTTP
 * status fails the prompt at once
 * (the request itself is wrong: retrying cannot help). Results are per
 * prompt, in prompt order, whatever order the answers came in.
 */
#ifndef GRPO_SERVER_H
#define GRPO_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum server_api { SERVER_VLLM, SERVER_SGLANG, SERVER_OPENAI };

extern const char *const server_api_names[];   /* by enum, NULL-terminated */

struct server_opts {
	const char *url;          /* scheme, host and port, e.g. http://127.0.0.1:8000 */
	enum server_api api;
	const char *model;        /* the request's "model" (vllm, openai); NULL: none sent */
	int samples;              /* G, the request's n */
	double temperature;       /* sent as given, so the importer stores exactly this */
	double top_p;
	int top_k;                /* 0: not sent */
	int max_tokens;
	const char *const *stops;   /* (n_stops) stop strings, sent as "stop" */
	int n_stops;
	int have_seed;
	uint64_t seed;            /* with have_seed: sample j of the prompt at place p draws with seed + p·G + j */
	int concurrency;          /* requests in flight, >= 1 */
	long timeout_ms;          /* per request, connection included */
	int retries;              /* further attempts after a transient failure */
	long backoff_ms;          /* delay before the first retry */
};

struct server_prompt {
	const int32_t *tokens;    /* (n) the prompt as ids, or NULL ... */
	uint32_t n;
	const char *text;         /* ... then the prompt as text */
	const char *answer;       /* carried in the line; NULL: none */
	uint64_t place;           /* for the seed */
};

struct server_result {
	char *line;               /* the wrapper line, no newline; NULL when the prompt failed */
	size_t len;
	char *error;              /* why it failed for good (NULL on success) */
	int attempts;             /* requests sent for it */
	int down;                 /* with error: its last attempt found the server not there or not
	                             taking requests (refused, dropped or timed out; HTTP 408, 429,
	                             502, 503, 504), where a run later may succeed */
};

/*
 * Sample every prompt: out[i] gets prompt i's result. Returns 0 once every
 * prompt succeeded or failed for good (a prompt's failure is in its result,
 * not an error here); -1 with e filled when the driver itself cannot go on
 * (out of memory, libcurl unusable). Free the results with server_results_free.
 */
int server_sample(const struct server_opts *o, const struct server_prompt *p, size_t n,
		  struct server_result *out, struct err *e);
void server_results_free(struct server_result *r, size_t n);

/*
 * What the server serves, asked with the retries, backoff and Retry-After of
 * server_sample (a server mid-restart is waited for): GET /v1/models (vllm, openai: the entry named
 * o->model, else the first; *id its "id", *path its "root") or GET
 * /get_model_info (sglang: *path its "model_path", *id NULL). Either may be
 * NULL where the server does not say. Free both. A failure whose last
 * attempt found the server not there (as server_result.down) has errnum
 * EAGAIN, which the tools take as temporary.
 */
int server_model_info(const struct server_opts *o, char **id, char **path, struct err *e);

#endif
