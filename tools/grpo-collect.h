/*
 * grpo-collect.h: what the parts of grpo-collect share, and nothing more:
 * its options (parsed in grpo-collect.c's main), the groups held before they
 * are published, the publishing itself and the --cursor lock (grpo-collect.c),
 * and the two ways of sampling, from a model (collect-model.c) and through an
 * inference server (collect-server.c), which main calls.
 *
 * It is the tool's own header, not a library's: what is declared here prints
 * and exits as a tool does. Each function's comment is at its definition.
 */
#ifndef GRPO_TOOLS_GRPO_COLLECT_H
#define GRPO_TOOLS_GRPO_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "collect/collect.h"
#include "collect/cursor.h"
#include "collect/server.h"
#include "data/sfile.h"
#include "model/chat.h"
#include "model/model_gpu.h"
#include "model/stopstr.h"

/* The name in messages, cli_init's answer (grpo-collect.c). */
extern const char *prog;

/* The groups of the input being read, held until it validated. */
struct held {
	struct group *g;
	size_t n, cap;
};

/* The options the ways of collecting share: where the groups are published
 * (-o, --step, --rank, --max-groups), -v, and -e where there are lines
 * that may be bad (importing, --server; --model refuses it). */
struct opts {
	const char *queue;
	long long step;
	int have_step, rank, verbose, skip;
	long long max_groups;
};

/* Sampling from a model (--model): the options beyond the importer's. */
struct gen_opts {
	const char *model, *prompts, *cursor, *tokenizer;
	long long samples, max_tokens, top_k, offset, count, batch;
	int have_offset, have_chat;
	const char *stops[STOPSTR_MAX];   /* --stop */
	int n_stops;
	int chat_auto;              /* --chat auto: the format of the template beside the tokenizer */
	double top_p;
	float temperature;   /* -t: 0 samples greedily */
	unsigned long long seed;
	enum chat_format chat;
	enum model_device device;   /* --device, resolved in generate() */
	int fp32;                   /* --precision fp32 on the GPU */
};

/* Sampling through a server (--server): the options beyond --model's. */
struct srv_opts {
	struct server_opts so;
	const char *responses;   /* --responses FILE, or NULL */
	long long max_lag;       /* -1: no check */
};

/* grpo-collect.c: holding the groups (hold is collect_init's sink),
 * publishing or writing them, the --cursor lock. */
int hold(void *ctx, struct group *g, struct err *e);
void held_free(struct held *h);
int emit_groups(const struct opts *o, struct held *h, uint64_t hash, const char *name,
		struct sfile_writer *w, struct err *e);
int open_cursor(const struct gen_opts *g, struct cursor *c, long long *offset, int *lock_fd, struct err *e);
void warn_prompt_differs(const char *where, uint64_t n);
void report_held(const struct held *h, int verbose);
void say_repeat(const char *where, const char *what, const char *first);
void warn_repeats(uint64_t n);

/* collect-model.c: --model; the exit status. */
int gen_chat(const struct gen_opts *g, const char *tokenizer, int verbose, enum chat_format *f,
             const enum chat_format **use, struct err *e);
int generate(struct opts *o, const struct gen_opts *g, struct sfile_writer *w);

/* collect-server.c: --server; the exit status. */
int serve(struct opts *o, const struct gen_opts *g, struct srv_opts *sv, struct collect_opts co,
	  struct sfile_writer *w);

#endif
