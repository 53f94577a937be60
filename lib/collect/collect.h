/*
 * collect.h: importing rollouts from inference servers (grpo-collect(1)).
 *
 * One input line is one JSON value in one of five formats, detected line by
 * line or forced:
 *
 *   native   the JSON view of grpo-cat: a group line {"group_id", "trajectories"}
 *            or a lone trajectory line {"prompt_tokens", "response_tokens", ...}
 *   vllm     a /v1/completions or /v1/chat/completions response, or one of the
 *            tokens-in/tokens-out /inference/v1/generate endpoint
 *   sglang   a /generate response object, or a JSON array of them
 *   atropos  a ScoredDataGroup (or a ScoredDataItem, a list of groups, or a
 *            {"batch": [...]} reply)
 *
 * Any of them may come wrapped as {"request": REQ, "response": RESP, "answer": A,
 * "id": ID}: the request supplies what a response leaves out (the prompt ids of
 * the generate endpoint and of SGLang, the sampling temperature).
 *
 * Layers, bottom up:
 *   collect_parse_line()  one line -> the groups it holds, nothing assigned yet:
 *                         ids and policy_version -1 where the input has none,
 *                         temperature NaN where the input has none.
 *   struct collect        one run over one or more inputs: assigns the
 *                         defaults (deterministic ids, --step, --temperature),
 *                         fills answers, validates, gathers lone trajectories
 *                         by group_id, and hands each finished group to the
 *                         caller's emit function. A line is taken whole or not
 *                         at all: its groups are emitted only once every one
 *                         of them validated.
 *
 * Ids: a group from a server's response is named after the request id the
 * server gave it (vLLM's "id", SGLang's meta_info "id": collect_name_group),
 * as a string. Any other group without group_id gets the top 52 bits of a 64-bit FNV-1a hash
 * of the line's bytes and the group's index within the line; a trajectory
 * without sequence_id gets the top 52 bits of a mix of its group_id and its
 * index in the group. 52 bits, so JSON numbers hold them exactly.
 *
 * Exact repeats: a record (a line's group, or a lone trajectory line) that
 * repeats one taken before in the run, ids assigned (data/groupset.h's
 * recordset), is dropped, as is a member of a group that repeats one before
 * it in the same group: a log appended to twice must not train its samples
 * twice. Derived ids take part, so a sequence without a sequence_id is told
 * apart by its place in its group: two samples alike are both kept, as an
 * easy prompt's answers often are; repeated lone lines of one input without
 * sequence_id that join one group_id are therefore kept too. A record of an
 * input dropped (collect_drop_input) is forgotten, since nothing of it was
 * published.
 */
#ifndef GRPO_COLLECT_H
#define GRPO_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/groupset.h"
#include "data/traj.h"

struct cJSON;

enum collect_format { COLLECT_AUTO, COLLECT_NATIVE, COLLECT_VLLM, COLLECT_SGLANG, COLLECT_ATROPOS };

const char *collect_format_name(enum collect_format f);
extern const char *const collect_format_names[];   /* by enum, NULL-terminated */

/* What one input line holds. */
struct collect_line {
	enum collect_format format;  /* the format it was read as */
	struct group *groups;        /* (n_groups) */
	uint32_t n_groups;
	int lone;                    /* one native trajectory line: groups[0] has n == 1 */
	char *id;                    /* the request's id, matched by --answers; NULL if none */
	char *answer;                /* the wrapper's "answer"; NULL if none */
	uint32_t prompt_differs;     /* trajectories whose response's prompt ids are not the request's */
};
void collect_line_free(struct collect_line *l);

/* Parse one line (no newline needed) as fmt, or detect the format when fmt
 * is COLLECT_AUTO. Messages name the field and index at fault. The line is
 * read by data/jsonpick.h: only the members the importers read, their
 * token id and logprob arrays kept as text and parsed straight into the
 * trajectories' arrays, so a line takes about its own size again in memory,
 * not ten times it. */
int collect_parse_line(const char *text, size_t n, enum collect_format fmt,
		       struct collect_line *out, struct err *e);
/* The same through cJSON alone, a node per value: the plain reference that
 * collect_parse_line is tested against. */
int collect_parse_line_ref(const char *text, size_t n, enum collect_format fmt,
			   struct collect_line *out, struct err *e);

/* The format parsers, over a parsed JSON value. `req` is the request of a
 * wrapper line, or NULL. They append groups to out. */
int collect_vllm(const struct cJSON *resp, const struct cJSON *req, struct collect_line *out, struct err *e);
int collect_sglang(const struct cJSON *resp, const struct cJSON *req, struct collect_line *out, struct err *e);
int collect_atropos(const struct cJSON *v, struct collect_line *out, struct err *e);
int collect_native(const struct cJSON *v, struct collect_line *out, struct err *e);

/* Shared by the parsers: a new, zeroed group of n trajectories (traj_init'd,
 * temperature NaN) at the end of out; NULL when memory runs out. */
struct group *collect_add_group(struct collect_line *out, uint32_t n, struct err *e);
/* n trajectories, traj_init'd, at temperature temp, for collect_group_runs;
 * NULL when memory runs out. collect_trajs_free frees them (a parse that
 * failed). */
struct traj *collect_trajs_new(uint32_t n, float temp);
void collect_trajs_free(struct traj *t, uint32_t n);
/* Whether t's prompt ids, the response's, differ from the request's req_ids
 * (an array of ids, or NULL): the server conditioned on other ids than it
 * was sent (a BOS added). 0 where there is nothing to compare (no ids sent,
 * or not readable as ids). A trajectory holds the response's ids whenever
 * the response gives them. */
int collect_prompt_differs(const struct cJSON *req_ids, const struct traj *t);
/* Member i's prompt among the `rows` of a batched request (an array of
 * np prompts, each asked for `per` samples; per 0 where the request does not
 * say), when the response's n members come prompt by prompt: row
 * i / (n / np), described in *tmp for a span. NULL when n is not np * per
 * (per 0: not a multiple of np): which prompt a member answers would be a
 * guess, and a wrong one pairs an answer with another prompt's ids. */
const struct cJSON *collect_request_row(const struct cJSON *rows, uint32_t i, uint32_t n, int64_t per,
					struct cJSON *tmp);
/* Why collect_request_row found no row for n members (each a `member`)
 * among the np prompts of the request's `field`, asked for per samples
 * each under the name `per_name` (per 0: not said): -1 with e set. */
int collect_request_row_err(struct err *e, const char *field, int np, const char *per_name, int64_t per,
			    uint32_t n, const char *member);
/* Move t[0..n) into groups, one per run of consecutive trajectories with the
 * same prompt (the n choices of one prompt; a batched request holds several
 * prompts). Takes t's contents in every case; frees t itself. */
int collect_group_runs(struct collect_line *out, struct traj *t, uint32_t n, struct err *e);
/* Name group g after the server's request id: id itself, or "ID-k" when the
 * response holds several prompts' groups and g is the k-th (vLLM names a
 * batch's prompts so). Nothing when id is NULL or g has an id already. */
int collect_name_group(struct group *g, const char *id, int several, uint32_t k, struct err *e);
/* A string field or NULL; "temperature" of a sampling-parameter object or NaN. */
const char *collect_str(const struct cJSON *o, const char *key);
float collect_temperature(const struct cJSON *params);

/* --answers FILE: JSON lines, each an object with "answer" (a string or a
 * number) and "index" (the prompt index) or "id" (a request id, string or
 * integer); a line with neither is keyed by its own 0-based line number,
 * so a prompts file such as GSM8K's can serve directly. */
struct collect_answers {
	struct collect_answer { char *key; char *answer; } *v;   /* (n) sorted by key */
	size_t n;
};
int collect_answers_load(struct collect_answers *a, const char *path, struct err *e);
const char *collect_answers_index(const struct collect_answers *a, uint64_t index);
const char *collect_answers_id(const struct collect_answers *a, const char *id);
void collect_answers_free(struct collect_answers *a);

struct collect_opts {
	enum collect_format format;
	int64_t step;                /* policy_version where the input gives none */
	float temperature;           /* where the input gives none */
	int64_t vocab_size;          /* token ids must be below it; 0: no bound */
	int allow_missing_logprobs;  /* take trajectories without sampler logprobs (logprobs NULL) */
	const struct collect_answers *answers;   /* NULL: none */
};

/* Called with each finished, valid group; returns -1 with e filled to stop.
 * It may take the group's contents, leaving *g zeroed (a zeroed group is
 * freed as an empty one). */
typedef int (*collect_emit)(void *ctx, struct group *g, struct err *e);

struct collect {
	struct collect_opts o;
	collect_emit emit;
	void *ctx;
	uint64_t next_index;         /* prompt index of the next group, across inputs */
	/* lone native trajectories of this input, grouped by group_id */
	struct collect_pending { struct group g; uint64_t index; } *pending;
	size_t n_pending, cap_pending;
	size_t *pending_ix, cap_ix;  /* hash of their group_ids: position + 1, 0 empty */
	/* counts for -v and the skip report */
	uint64_t lines, groups, trajs, tokens, answered;
	uint64_t prompt_differs;     /* trajectories taken whose server's prompt ids are not the request's */
	unsigned formats;            /* bit (1 << format) for each format read */
	/* exact repeats: the records taken; where the line about to be fed is,
	 * which the caller sets (its input's number, its line number), kept
	 * with each record; the records dropped, in all and on the last line fed
	 * (what: "group_id G" or "group_id G, sequence_id S", first: where the
	 * record it repeats came from) */
	struct recordset taken;
	struct recordset_at at;
	uint64_t repeats;
	struct collect_repeat { char what[160]; struct recordset_at first; } *line_repeats;   /* (n_line_repeats) */
	size_t n_line_repeats;
};

void collect_init(struct collect *c, const struct collect_opts *o, collect_emit emit, void *ctx);
/* One line of the input: 0 taken (blank lines are ignored); -1 a bad line,
 * nothing of it kept, e holding the reason without file and line; -2 the
 * emit function failed (e holds its message). */
int collect_feed(struct collect *c, const char *text, size_t n, struct err *e);
/* End of one input: emit the lone trajectories' groups, in order of first
 * appearance. Groups never span inputs. */
int collect_end_input(struct collect *c, struct err *e);
/* Drop what an input left pending (after a failure). */
void collect_drop_input(struct collect *c);
void collect_free(struct collect *c);

/* Check one group against the validation rules: token ids >= 0 and below
 * vocab_size (when not 0), logprobs finite, <= 0 and not a server's
 * sentinel for "no value" (<= -9999), temperature positive and finite, and
 * every float of a scored trajectory (rewards, advantages, successes,
 * ref_logprobs) finite in binary32, as group_check() of data/sfile.h. */
int collect_check_group(const struct group *g, int64_t vocab_size, struct err *e);

/* 64-bit FNV-1a, continued from h (start with COLLECT_HASH_INIT). */
#define COLLECT_HASH_INIT 0xcbf29ce484222325ull
uint64_t collect_hash(uint64_t h, const void *p, size_t n);

#endif
