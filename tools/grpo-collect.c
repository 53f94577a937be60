/*
 * grpo-collect: import rollouts from inference servers (vLLM, SGLang,
 * Atropos, or grpo-cat's JSON view) into rollout groups. See grpo-collect(1).
 *
 * Inputs may be compressed (gzip, zstd, xz, ...: lib/base/lineio.h). Each input is
 * read whole and validated before anything of it is written:
 * its groups are held in memory, then published as spool files under names
 * derived from the input's bytes (so a re-run publishes nothing twice), all
 * written before any is renamed into place, or appended to the one spool
 * file written to standard output.
 *
 * This file holds the options, main and the import path, with what every
 * way of getting groups shares: holding them and publishing them (or writing
 * them to standard output), and the --cursor lock. Sampling from a model
 * (--model) is collect-model.c, sampling through an inference server
 * (--server) collect-server.c; grpo-collect.h declares what the three share.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsys.h"
#include "base/lineio.h"
#include "base/tempfile.h"
#include "collect/collect.h"
#include "collect/cursor.h"
#include "collect/server.h"
#include "data/groupset.h"
#include "data/jsonview.h"
#include "data/sfile.h"
#include "model/rollout.h"
#include "spool/spool.h"

#include "cli.h"
#include "grpo-collect.h"

const char *prog = "grpo-collect";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-collect [--format auto|native|vllm|sglang|atropos] [-o SPOOL/rollouts --step N\n"
		"                    [--rank X] [--max-groups N]] [--answers FILE] [--vocab-size V]\n"
		"                    [--temperature T] [--on-error fail|skip] [--allow-missing-logprobs] [-v]\n"
		"                    [FILE...]\n"
		"       grpo-collect --model DIR|SPOOL/policy --prompts FILE [--samples G] [--temperature T]\n"
		"                    [--top-p P] [--top-k K] [--max-tokens M] [--seed S] [--offset N]\n"
		"                    [--count N] [--cursor FILE] [--batch B] [--chat FMT] [--tokenizer FILE]\n"
		"                    [--stop TEXT]... [--device auto|cpu|cuda [--precision bf16|fp32]]\n"
		"                    [-o SPOOL/rollouts [--step N] [--rank X] [--max-groups N]] [-v]\n"
		"       grpo-collect --server URL [--api vllm|sglang|openai] --prompts FILE [--samples G]\n"
		"                    [--temperature T] [--top-p P] [--top-k K] [--max-tokens M] [--seed S]\n"
		"                    [--offset N] [--count N] [--cursor FILE] [--tokenizer FILE --chat FMT]\n"
		"                    [--stop TEXT]...\n"
		"                    [--concurrency N] [--timeout S] [--retries K] [--served-model NAME]\n"
		"                    [--policy-version K] [--max-lag L] [--responses FILE] [-e fail|skip]\n"
		"                    [-o SPOOL/rollouts [--rank X] [--max-groups N]] [-v]\n"
		"Import rollouts (JSON lines from vLLM, SGLang, Atropos or grpo-cat) as rollout groups,\n"
		"or sample them from a model or through an inference server.\n"
		"FILE '-' or none: standard input. Without -o, one spool file goes to standard output.\n"
		"  -f, --format FMT       input format, or auto (the default) to detect it line by line\n"
		"  -o, --output QUEUE     publish into QUEUE/step_N/rank_X/ (e.g. spool/rollouts)\n"
		"  -s, --step N, --policy-version N\n"
		"                         policy version that sampled them (required with -o; default 0)\n"
		"  -r, --rank X           the rank directory to publish into (default 0)\n"
		"  -m, --max-groups N     at most N groups per published file (default 256, 0: no limit)\n"
		"  -a, --answers FILE     reference answers, JSON lines keyed by \"index\" or \"id\"\n"
		"      --vocab-size V     reject token ids >= V\n"
		"  -t, --temperature T    sampling temperature where the input gives none (default 1)\n"
		"  -e, --on-error MODE    fail (the default, but with --server): a bad line fails its\n"
		"                         whole input; skip: drop bad lines (prompts), report how many\n"
		"      --allow-missing-logprobs\n"
		"                         take rollouts without sampler logprobs, marked as having none\n"
		"  -v, --verbose          report each input on standard error\n"
		"Sampling from a model:\n"
		"      --model DIR        a model directory, or a policy queue: its newest step_K\n"
		"      --prompts FILE     JSON lines with prompt, prompt_tokens or messages, and answer\n"
		"  -n, --samples G        responses per prompt (default 4)\n"
		"      --top-p P, --top-k K  nucleus and top-k sampling (default 1 and 0: off)\n"
		"      --max-tokens M     most tokens per response (default 256)\n"
		"      --stop TEXT        end a response where its text comes to hold TEXT, keeping its\n"
		"                         tokens (repeatable, up to 16)\n"
		"      --seed S           random seed (default 0)\n"
		"      --offset N         first place of the walk over --prompts, its row N modulo the rows\n"
		"                         (default 0, or what --cursor holds)\n"
		"      --count N          prompts this run, wrapping round the file (default: all rows)\n"
		"      --cursor FILE      read the offset from FILE, write the next one after publishing\n"
		"      --batch B          prompts sampled together (default 16)\n"
		"      --chat FMT         encode text prompts as a user turn of a chat format:\n"
		"                         " CHAT_FORMATS ",\n"
		"                         or auto: the one whose template is beside the tokenizer\n"
		"      --tokenizer FILE   tokenizer.json (default: the model's own)\n"
		"      --device DEV       auto (the default, or $GRPO_DEVICE), cpu or cuda: where to sample\n"
		"      --precision P      bf16 (the default) or fp32, on the GPU\n"
		"Sampling through a server (--prompts and the sampling options as above):\n"
		"      --server URL       the server, e.g. http://127.0.0.1:8000\n"
		"      --api API          vllm (the default), sglang or openai\n"
		"      --concurrency N    requests in flight (default 8)\n"
		"      --timeout S        seconds per request (default 600)\n"
		"      --retries K        further attempts of a failed request (default 3)\n"
		"      --served-model NAME  the model to ask for (default: the server's first)\n"
		"      --max-lag L        refuse a server older than SPOOL/policy's newest step - L (exit 3)\n"
		"      --responses FILE   also write the request/response lines imported to FILE\n"
		"                         ('-': standard output, with -o)\n"
		"  -h, --help             this text\n"
		"  -V, --version          the version\n");
}

/* Takes the group's contents rather than copying them. */
int hold(void *ctx, struct group *g, struct err *e)
{
	struct held *h = ctx;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		void *v = realloc(h->g, cap * sizeof *h->g);
		if (!v)
			return err_set(e, "out of memory");
		h->g = v;
		h->cap = cap;
	}
	h->g[h->n++] = *g;
	memset(g, 0, sizeof *g);
	return 0;
}

static void held_clear(struct held *h)
{
	for (size_t i = 0; i < h->n; i++)
		group_free(&h->g[i]);
	h->n = 0;
}

void held_free(struct held *h)
{
	held_clear(h);
	free(h->g);
	h->g = NULL;
	h->cap = 0;
}

static int sink_spool(void *ctx, const void *p, size_t n, struct err *e)
{
	return spool_write(ctx, p, n, e);
}

/*
 * Before any rename: the parts of this input already in the rank directory
 * (a re-run) must be the parts this run made, byte for byte. Otherwise the
 * input was split another way (another --max-groups) or its groups made
 * otherwise (another -t or -a), and publishing the missing names would
 * publish some groups twice, so nothing is published.
 */
static int check_existing(struct spool_out *so, size_t made, uint64_t hash, struct err *e)
{
	char prefix[64], dir[PATH_MAX], fin[PATH_MAX], **names;
	size_t n;
	snprintf(prefix, sizeof prefix, "collect-%016llx-", (unsigned long long)hash);
	if (spool_step_dir(dir, sizeof dir, so[0].queue, so[0].step, so[0].rank, e) < 0)
		return -1;
	int r = fsys_list_dir(dir, FSYS_FILES, &names, &n, e);
	if (r < 0)
		return -1;
	for (size_t i = 0; i < n && r >= 0; i++) {
		if (strncmp(names[i], prefix, strlen(prefix)) != 0)
			continue;
		/* part k is named ...-%04zu.zst: read k from the name rather than
		 * search every part for it (a re-run of 20,000 parts took 12 s) */
		char *end;
		size_t k = strtoul(names[i] + strlen(prefix), &end, 10);
		if (end == names[i] + strlen(prefix) || k >= made || strcmp(so[k].name, names[i]) != 0)
			k = made;
		int same = 0;
		if (k < made)
			same = spool_same_file(tempfile_path(so[k].tmp), spool_out_path(&so[k], fin, sizeof fin), e);
		if (same < 0)
			r = -1;
		else if (!same)
			r = err_set(e, "%s/%s: this input was published already, split otherwise (another "
				    "--max-groups) or made otherwise (another -t or -a); nothing published, as that "
				    "would publish groups twice (re-run with the first run's options)", dir, names[i]);
	}
	fsys_free_names(names, n);
	return r < 0 ? -1 : 0;
}

/*
 * Before any rename as well: parts of this input in another rank or another
 * step of the queue. A re-run under another --step (a cron line that reads
 * the current step anew) or another --rank (two workers given the same
 * file) would otherwise publish every group a second time, there, so
 * nothing is published.
 */
static int check_other_steps(const struct opts *o, uint64_t hash, struct err *e)
{
	char prefix[64], dir[PATH_MAX], **names;
	int64_t *steps;
	int *ranks = NULL;
	size_t ns, nr = 0, n;
	int r = 0;
	snprintf(prefix, sizeof prefix, "collect-%016llx-", (unsigned long long)hash);
	if (spool_list_steps(o->queue, -1, -1, &steps, &ns, e) < 0)
		return -1;
	for (size_t i = 0; i < ns && r == 0; i++) {
		if ((r = spool_list_ranks(o->queue, steps[i], &ranks, &nr, e)) < 0)
			break;
		for (size_t j = 0; j < nr && r == 0; j++) {
			if (steps[i] == o->step && ranks[j] == o->rank)
				continue;
			if (spool_step_dir(dir, sizeof dir, o->queue, steps[i], ranks[j], e) < 0) {
				r = -1;
				break;
			}
			if (fsys_list_dir(dir, FSYS_FILES, &names, &n, e) < 0) {
				r = -1;
				break;
			}
			for (size_t k = 0; k < n && r == 0; k++) {
				if (strncmp(names[k], prefix, strlen(prefix)) != 0)
					continue;
				if (ranks[j] == o->rank)
					r = err_set(e, "%s/%s: this input was published already under step_%lld (another "
						    "--step); nothing published, as that would publish its groups twice (re-run "
						    "with --step %lld)", dir, names[k], (long long)steps[i], (long long)steps[i]);
				else
					r = err_set(e, "%s/%s: this input was published already under step_%lld, rank_%d "
						    "(another --rank%s); nothing published, as that would publish its groups "
						    "twice (re-run with --step %lld --rank %d)", dir, names[k],
						    (long long)steps[i], ranks[j], steps[i] == o->step ? "" : " and --step",
						    (long long)steps[i], ranks[j]);
			}
			fsys_free_names(names, n);
		}
		free(ranks);
		ranks = NULL;
	}
	free(steps);
	return r;
}

/*
 * The checks above and the renames are made under QUEUE/.lock, waiting for
 * its holder: two runs given the same input under other steps or ranks at
 * once would otherwise both find nothing of it published and both publish
 * it. Held for those moments only, so runs importing other inputs into the
 * queue go on side by side. Where the file system has no locks the checks
 * run unlocked, as they did before the lock.
 */
static int lock_publishing(const struct opts *o, int *fd, struct err *e)
{
	char p[PATH_MAX];
	*fd = -1;
	if (snprintf(p, sizeof p, "%s/.lock", o->queue) >= (int)sizeof p)
		return err_set(e, "%s: path too long", o->queue);
	return fsys_lock_wait(p, fd, e) < 0 ? -1 : 0;
}

/* Publish the held groups as files of at most max_groups groups, named
 * collect-<hash of the input>-<part>.zst: every part is written and flushed
 * first, checked against the parts of this input already published, then
 * all are renamed into place, so a failure to write (a full disk) or another
 * split publishes nothing. A failure among the renames leaves the parts
 * before it published: they are never removed, since a consumer may have
 * taken one already and names must stay taken (spool.h); a re-run publishes
 * the rest, and nothing twice. */
static int publish(const struct opts *o, struct held *h, uint64_t hash, const char *name, struct err *e)
{
	size_t per = o->max_groups > 0 ? (size_t)o->max_groups : h->n;
	size_t parts = h->n ? (h->n + per - 1) / per : 0, made = 0, done = 0;
	struct spool_out *so = calloc(parts ? parts : 1, sizeof *so);
	if (!so)
		return err_set(e, "out of memory for %zu parts", parts);
	int r = 0, lock_fd = -1;
	for (; made < parts && r == 0; made++) {
		char fname[64];
		struct sfile_writer w;
		size_t at = made * per;
		snprintf(fname, sizeof fname, "collect-%016llx-%04zu.zst", (unsigned long long)hash, made);
		if ((r = spool_open(&so[made], o->queue, o->step, o->rank, fname, e)) < 0)
			break;
		r = sfile_writer_init(&w, sink_spool, &so[made], 3, e);
		for (size_t i = at; i < h->n && i < at + per && r == 0; i++)
			r = sfile_write_group(&w, &h->g[i], e);
		if (r == 0)
			r = sfile_writer_finish(&w, e);
		sfile_writer_free(&w);
		if (r == 0)
			r = spool_finish_write(&so[made], e);
	}
	if (r == 0 && made > 0)
		r = lock_publishing(o, &lock_fd, e);
	if (r == 0 && made > 0)
		r = check_existing(so, made, hash, e);
	if (r == 0 && made > 0)
		r = check_other_steps(o, hash, e);
	for (; done < made && r == 0; done++) {
		r = spool_commit(&so[done], e);
		char fin[PATH_MAX];
		if (r >= 0 && o->verbose)
			cli_warn("%s: %s %s", name, r == 1 ? "already published:" : "published",
				 spool_out_path(&so[done], fin, sizeof fin));
		if (r > 0)
			r = 0;
		else if (r < 0 && done > 0)
			err_prefix(e, "%zu of %zu parts published, the rest not (run again to publish them)", done,
				   parts);
	}
	if (lock_fd >= 0)
		close(lock_fd);
	for (size_t i = done; i < made; i++)
		spool_abort(&so[i]);
	free(so);
	return r;
}

/* The held groups, published into the queue or written to standard output. */
int emit_groups(const struct opts *o, struct held *h, uint64_t hash, const char *name,
		       struct sfile_writer *w, struct err *e)
{
	if (o->queue)
		return publish(o, h, hash, name, e);
	for (size_t i = 0; i < h->n; i++)
		if (sfile_write_group(w, &h->g[i], e) < 0)
			return -1;
	return sfile_writer_finish(w, e);
}

/*
 * The chat format the prompts are encoded in: --chat's, or with --chat auto
 * the one whose template the tokenizer's directory holds (chat.h); *use NULL
 * for none.
 */
int gen_chat(const struct gen_opts *g, const char *tokenizer, int verbose, enum chat_format *f,
             const enum chat_format **use, struct err *e)
{
	*use = NULL;
	if (!g->have_chat)
		return 0;
	*f = g->chat;
	if (g->chat_auto) {
		char from[PATH_MAX];
		if (!tokenizer)
			return err_set(e, "--chat auto: no tokenizer.json, beside which the model's chat template would be");
		if (chat_format_of_model(tokenizer, f, from, sizeof from, e) < 0)
			return -1;
		if (verbose)
			cli_warn("--chat auto: %s, the template of %s", chat_format_name(*f), from);
	}
	*use = f;
	return 0;
}

/*
 * --cursor: locked for the whole run, so that two runs never start at the
 * same row (*lock_fd holds the lock: close it at the end), then read: where
 * this run starts, unless --offset says (collect/cursor.h). 0, 1 with the
 * lock held by another run (e says so: exit 75), -1 error.
 */
int open_cursor(const struct gen_opts *g, struct cursor *c, long long *offset, int *lock_fd, struct err *e)
{
	long holder;
	int r = cursor_lock(g->cursor, lock_fd, &holder, e);
	if (r == 1) {
		char who[32] = "";
		if (holder > 0)
			snprintf(who, sizeof who, " (pid %ld)", holder);
		err_set(e, "%s: another grpo-collect%s is running with this cursor (it holds %s.lock): nothing done; "
			"try again later", g->cursor, who, g->cursor);
		return 1;
	}
	if (r < 0 || cursor_load(c, g->cursor, e) < 0)
		return -1;
	if (!g->have_offset)
		*offset = (long long)c->row;
	return 0;
}

/* A record whose server conditioned n sequences on other prompt ids than it
 * was sent (a BOS added): the server's are stored, as its logprobs are of
 * them, and the answer is kept, but a prompt changed must not pass unseen.
 * where names the record ("FILE:LINE"). */
void warn_prompt_differs(const char *where, uint64_t n)
{
	cli_warn("%s: warning: the server's prompt ids differ from those sent in %llu sequence%s: "
		 "stored the server's, which its logprobs are of", where, (unsigned long long)n,
		 n == 1 ? "" : "s");
}

/* -v: record `what` of the line at `where` dropped as an exact repeat of
 * the record at `first` (collect.h). */
void say_repeat(const char *where, const char *what, const char *first)
{
	cli_warn("%s: %s repeats %s exactly: dropped", where, what, first);
}

/* Records dropped as exact repeats, said always: a log read twice is worth
 * knowing of, though nothing is lost (only the copies are dropped). */
void warn_repeats(uint64_t n)
{
	if (n)
		cli_warn("warning: %llu record%s repeated an earlier one exactly: dropped",
			 (unsigned long long)n, n == 1 ? "" : "s");
}

static const char *input_name(const char *file)
{
	return strcmp(file, "-") == 0 ? "<stdin>" : file;
}

/* Group integrity (groupset.h): groups of one member (no baseline: GRPO
 * learns nothing from them) and group_ids split across inputs or repeated
 * within one (each part is scored apart), counted always, the ids with -v. Neither is an error: n = 1
 * is a legitimate request, and the scorer handles both. */
static int report_groups(const struct groupset *s, int verbose)
{
	static const char *what[] = { "of one member (its advantage is always 0)",
				      "split across inputs or repeated (each part is scored alone)" };
	uint64_t count[] = { s->single_records, s->split_ids };
	for (int k = 0; k < 2; k++) {
		const char **ids;
		size_t n;
		struct err e;
		if (count[k] == 0)
			continue;
		cli_warn("warning: %llu %s %s", (unsigned long long)count[k],
			 k ? (count[k] == 1 ? "group_id" : "group_ids") : (count[k] == 1 ? "group" : "groups"), what[k]);
		if (!verbose)
			continue;
		if (groupset_ids(s, k ? GROUPSET_SPLIT : GROUPSET_SINGLE, &ids, &n, &e) < 0) {
			cli_warn("%s", e.msg);
			return -1;
		}
		struct buf list = { 0 };   /* one line, written at once */
		int cut = 0;               /* out of memory: the ids so far, and "..." */
		for (size_t i = 0; i < n && !cut; i++)
			cut = buf_printf(&list, " %s", ids[i]) < 0;
		cli_warn("%s:%s%s", k ? "split group_ids" : "groups of one member",
			 list.data ? (const char *)list.data : "", cut ? " ..." : "");
		buf_free(&list);
		free(ids);
	}
	return 0;
}

/* The group integrity of the groups a run through a server published, warned
 * of as for an imported file: they are the lines of one input. */
void report_held(const struct held *h, int verbose)
{
	struct groupset s = { 0 };
	struct err e;
	int r = 0;
	for (size_t i = 0; i < h->n && r == 0; i++)
		r = groupset_add_id(&s, &h->g[i].group_id, h->g[i].n, i, &e);
	if (r < 0)
		cli_warn("%s", e.msg);
	else
		report_groups(&s, verbose);
	groupset_free(&s);
}

/* After libarchive's "truncated gzip input" and the like. */
static const char cut_stream[] = ": the input ends before its compressed stream does (still being written?): "
				 "nothing of it published; try again once it is complete";

enum {
	OPT_MODEL = 256, OPT_PROMPTS, OPT_TOP_P, OPT_TOP_K, OPT_MAX_TOKENS, OPT_SEED, OPT_OFFSET, OPT_COUNT,
	OPT_CURSOR, OPT_BATCH, OPT_CHAT, OPT_TOKENIZER, OPT_SERVER, OPT_API, OPT_CONCURRENCY, OPT_TIMEOUT,
	OPT_RETRIES, OPT_MAX_LAG, OPT_SERVED_MODEL, OPT_RESPONSES, OPT_STOP, OPT_DEVICE, OPT_PRECISION,
};

/* The three ways of collecting, and the options that only some of them use:
 * given to another, such an option would do nothing, so it is refused
 * rather than ignored. Every way takes the others (-o, -s, -r, -m, -t, -v). */
enum { IMPORT = 1, MODEL = 2, SERVER = 4 };
static const char *const way_names[] = { "importing files", "sampling with --model", "sampling through --server" };
static const struct cli_mode_option mode_options[] = {
	{ 'f', IMPORT | SERVER },   /* with --server, the answers' format, as an input's */
	{ 'a', IMPORT },            /* sampling takes the answers from the prompts */
	{ 'W', IMPORT | SERVER },   /* --model's vocabulary is its own */
	{ 'L', IMPORT | SERVER },
	{ 'e', IMPORT | SERVER },
	{ 'n', MODEL | SERVER },
	{ OPT_TOP_P, MODEL | SERVER },
	{ OPT_TOP_K, MODEL | SERVER },
	{ OPT_MAX_TOKENS, MODEL | SERVER },
	{ OPT_STOP, MODEL | SERVER },
	{ OPT_SEED, MODEL | SERVER },
	{ OPT_OFFSET, MODEL | SERVER },
	{ OPT_COUNT, MODEL | SERVER },
	{ OPT_CURSOR, MODEL | SERVER },
	{ OPT_CHAT, MODEL | SERVER },
	{ OPT_TOKENIZER, MODEL | SERVER },
	{ OPT_BATCH, MODEL },
	{ OPT_DEVICE, MODEL },
	{ OPT_PRECISION, MODEL },
	{ OPT_API, SERVER },
	{ OPT_CONCURRENCY, SERVER },
	{ OPT_TIMEOUT, SERVER },
	{ OPT_RETRIES, SERVER },
	{ OPT_SERVED_MODEL, SERVER },
	{ OPT_MAX_LAG, SERVER },
	{ OPT_RESPONSES, SERVER },
};

/* The words of the tool's own word option (cli_word); the others are lib's
 * (server_api_names, chat_format_names, collect_format_names). */
static const char *const on_error_words[] = { "fail", "skip", NULL };   /* skip 0, 1 */
static const char *const precision_words[] = { "bf16", "fp32", NULL };  /* fp32 0, 1 */

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "step", required_argument, NULL, 's' },
		{ "policy-version", required_argument, NULL, 's' },
		{ "rank", required_argument, NULL, 'r' },
		{ "max-groups", required_argument, NULL, 'm' },
		{ "answers", required_argument, NULL, 'a' },
		{ "vocab-size", required_argument, NULL, 'W' },
		{ "allow-missing-logprobs", no_argument, NULL, 'L' },
		{ "temperature", required_argument, NULL, 't' },
		{ "on-error", required_argument, NULL, 'e' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "prompts", required_argument, NULL, OPT_PROMPTS },
		{ "samples", required_argument, NULL, 'n' },
		{ "top-p", required_argument, NULL, OPT_TOP_P },
		{ "top-k", required_argument, NULL, OPT_TOP_K },
		{ "max-tokens", required_argument, NULL, OPT_MAX_TOKENS },
		{ "stop", required_argument, NULL, OPT_STOP },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "cursor", required_argument, NULL, OPT_CURSOR },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "chat", required_argument, NULL, OPT_CHAT },
		{ "tokenizer", required_argument, NULL, OPT_TOKENIZER },
		{ "server", required_argument, NULL, OPT_SERVER },
		{ "api", required_argument, NULL, OPT_API },
		{ "concurrency", required_argument, NULL, OPT_CONCURRENCY },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "retries", required_argument, NULL, OPT_RETRIES },
		{ "max-lag", required_argument, NULL, OPT_MAX_LAG },
		{ "served-model", required_argument, NULL, OPT_SERVED_MODEL },
		{ "responses", required_argument, NULL, OPT_RESPONSES },
		{ "device", required_argument, NULL, OPT_DEVICE },
		{ "precision", required_argument, NULL, OPT_PRECISION },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .max_groups = 256, .skip = -1 };
	struct srv_opts sv = { .so = { .concurrency = 8, .timeout_ms = 600000, .retries = 3, .backoff_ms = 250 },
	                       .max_lag = -1 };
	double temp_arg = 1;
	struct collect_opts co = { .format = COLLECT_AUTO, .temperature = 1.0f };
	struct gen_opts g = { .samples = 4, .max_tokens = 256, .top_p = 1, .batch = 16 };
	const char *answers_path = NULL;
	unsigned char given[OPT_PRECISION + 1] = { 0 };   /* by getopt value */
	int c;
	prog = cli_init(argv[0], "[OPTION]... [-o QUEUE --step N] "
				 "[FILE... | --model DIR --prompts FILE | --server URL --prompts FILE]");
	g.device = (enum model_device)cli_env_word("GRPO_DEVICE", model_device_names, MODEL_DEVICE_AUTO);
	while ((c = cli_getopt(argc, argv, "f:o:s:r:m:a:t:e:n:vhV", longopts)) != -1) {
		if (c >= 0 && c < (int)sizeof given)
			given[c] = 1;
		switch (c) {
		case OPT_MODEL: g.model = cli_path("--model", optarg); break;
		case OPT_PROMPTS: g.prompts = cli_path("--prompts", optarg); break;
		case OPT_CURSOR: g.cursor = cli_path("--cursor", optarg); break;
		case OPT_TOKENIZER: g.tokenizer = cli_path("--tokenizer", optarg); break;
		case OPT_SERVER: sv.so.url = optarg; break;
		case OPT_SERVED_MODEL: sv.so.model = optarg; break;
		case OPT_RESPONSES: sv.responses = cli_path("--responses", optarg); break;
		case OPT_DEVICE: g.device = (enum model_device)cli_word("--device", optarg, model_device_names); break;
		case OPT_PRECISION: g.fp32 = cli_word("--precision", optarg, precision_words); break;
		case OPT_API: sv.so.api = (enum server_api)cli_word("--api", optarg, server_api_names); break;
		case OPT_CONCURRENCY:
			sv.so.concurrency = (int)cli_positive("--concurrency", optarg, 4096);
			break;
		case OPT_RETRIES:
			sv.so.retries = (int)cli_uint("--retries", optarg, 100);
			break;
		case OPT_MAX_LAG:
			sv.max_lag = (long long)cli_uint("--max-lag", optarg, TRAJ_INT_MAX);
			break;
		case OPT_TIMEOUT: {
			double t = cli_seconds("--timeout", optarg, 86400);
			sv.so.timeout_ms = (long)(t * 1000 + 0.5) ? (long)(t * 1000 + 0.5) : 1;
			break;
		}
		case 'n':
			g.samples = (long long)cli_positive("--samples", optarg, 1 << 16);
			break;
		case OPT_MAX_TOKENS:
			g.max_tokens = (long long)cli_positive("--max-tokens", optarg, 1 << 20);
			break;
		case OPT_STOP:
			if (g.n_stops == STOPSTR_MAX)
				cli_bad_usage("--stop: at most %d stop strings", STOPSTR_MAX);
			if (!*optarg || strlen(optarg) > STOPSTR_MAX_LEN)
				cli_bad_usage("--stop: give text of 1 to %d bytes, not %zu", STOPSTR_MAX_LEN, strlen(optarg));
			g.stops[g.n_stops++] = optarg;
			break;
		case OPT_TOP_K:
			g.top_k = (long long)cli_uint("--top-k", optarg, INT_MAX);
			break;
		case OPT_OFFSET:
			g.offset = (long long)cli_uint("--offset", optarg, LLONG_MAX);
			g.have_offset = 1;
			break;
		case OPT_COUNT:
			g.count = (long long)cli_uint("--count", optarg, INT_MAX);
			break;
		case OPT_BATCH:
			g.batch = (long long)cli_positive("--batch", optarg, 1 << 16);
			break;
		case OPT_SEED:
			g.seed = cli_uint("--seed", optarg, ULLONG_MAX);
			sv.so.have_seed = 1;
			break;
		case OPT_TOP_P:
			g.top_p = cli_number("--top-p", optarg, 0, 1, CLI_ABOVE_MIN);
			break;
		case OPT_CHAT:
			g.chat_auto = strcmp(optarg, "auto") == 0;
			if (!g.chat_auto && chat_format_parse(optarg, &g.chat) < 0)
				cli_bad_value("--chat", "one of " CHAT_FORMATS " or auto", optarg);
			g.have_chat = 1;
			break;
		case 'f': co.format = (enum collect_format)cli_word("--format", optarg, collect_format_names); break;
		case 'o': o.queue = cli_dir(CLI_OUTPUT, optarg); break;
		case 's':
			o.step = (long long)cli_uint("--step", optarg, CLI_STEP_MAX);
			o.have_step = 1;
			break;
		case 'r':
			o.rank = (int)cli_uint("--rank", optarg, INT_MAX);
			break;
		case 'm':
			o.max_groups = (long long)cli_uint("--max-groups", optarg, LLONG_MAX);
			break;
		case 'L': co.allow_missing_logprobs = 1; break;
		case 'W':
			co.vocab_size = (int64_t)cli_positive("--vocab-size", optarg, (unsigned long long)INT32_MAX + 1);
			break;
		case 't':
			co.temperature = cli_float("--temperature", optarg, 0, INFINITY, 0);
			temp_arg = strtod(optarg, NULL);   /* for a server: 0.7 as given, not the float nearest it */
			break;
		case 'a': answers_path = cli_path("--answers", optarg); break;
		case 'e': o.skip = cli_word("--on-error", optarg, on_error_words); break;
		case 'v': o.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, GRPO_VERSION); return 0;
		default: cli_usage_hint(); return 2;
		}
	}
	cli_path_operands(argv + optind, argc - optind);
	if (g.model && sv.so.url)
		cli_bad_usage("--model samples here, --server through a server: give one of them");
	if (sv.so.url && (!g.prompts || optind < argc))
		cli_bad_usage("--server and --prompts go together, without FILEs");
	if (!sv.so.url && (!g.model != !g.prompts || (g.model && optind < argc)))
		cli_bad_usage("%s", g.model || g.prompts ? "--model (or --server) and --prompts go together, without FILEs"
		                                         : "--model needs --prompts");
	cli_mode_options(longopts, mode_options, sizeof mode_options / sizeof *mode_options, given,
	                 sv.so.url ? SERVER : g.model ? MODEL : IMPORT, way_names);
	cli_gpu_option("--precision", given[OPT_PRECISION], given[OPT_DEVICE] && g.device == MODEL_DEVICE_CPU);
	if (sv.so.url && g.have_chat && !g.tokenizer)   /* the server would be sent the text as it is */
		cli_bad_usage("--chat with --server needs --tokenizer, which encodes the prompts here: without it "
		              "the server is sent the text without a chat format");
	if (!o.queue && sv.responses && !strcmp(sv.responses, "-"))
		cli_bad_usage("--responses -: without -o standard output carries the rollout groups; give -o QUEUE "
		              "or --responses FILE");
	if (!o.queue && given[OPT_MAX_LAG])   /* the trainer's newest step is that of -o's SPOOL/policy */
		cli_bad_usage("--max-lag goes with -o: the trainer's newest step is that of the spool's policy queue");
	if (!o.queue && (given['r'] || given['m']))   /* standard output takes one spool file, no rank */
		cli_bad_usage("without -o, %s would do nothing (it says how -o publishes)",
		              given['r'] ? "--rank" : "--max-groups");
	if (o.skip < 0)
		o.skip = sv.so.url != NULL;
	if (!g.model && co.temperature == 0)
		cli_bad_usage("--temperature 0 (greedy) is for sampling with --model; imported rollouts need the "
		              "temperature they were sampled at");
	if (o.queue && !o.have_step && !g.model && !sv.so.url)
		cli_bad_usage("-o needs --step N, the policy version that sampled the rollouts");
	if (!o.queue && isatty(STDOUT_FILENO))
		cli_bad_usage("standard output is a terminal; give -o or pipe it (grpo-cat shows it)");
	co.step = o.step;

	struct err e = { 0 };
	struct model_gpu_gen_knobs knobs;   /* a malformed one fails now, on any machine, not after the work */
	if (g.model && g.device != MODEL_DEVICE_CPU && model_gpu_gen_knobs(&knobs, &e) < 0)
		cli_die(CLI_EXIT_USAGE, "%s", e.msg);
	if (sv.so.url) {
		sv.so.samples = (int)g.samples;
		sv.so.temperature = temp_arg;
		sv.so.top_p = g.top_p;
		sv.so.top_k = (int)g.top_k;
		sv.so.max_tokens = (int)g.max_tokens;
		sv.so.stops = g.stops;
		sv.so.n_stops = g.n_stops;
		sv.so.seed = g.seed;
		struct sfile_writer sw;
		if (!o.queue && sfile_writer_init(&sw, sfile_sink_fd, (void *)(intptr_t)STDOUT_FILENO, 3, &e) < 0) {
			cli_warn("%s", e.msg);
			return cli_failure_status(e.errnum);
		}
		int st = serve(&o, &g, &sv, co, &sw);
		if (!o.queue)
			sfile_writer_free(&sw);
		return st;
	}
	if (g.model) {
		g.temperature = co.temperature;
		struct sfile_writer gw;
		if (!o.queue && sfile_writer_init(&gw, sfile_sink_fd, (void *)(intptr_t)STDOUT_FILENO, 3, &e) < 0) {
			cli_warn("%s", e.msg);
			return cli_failure_status(e.errnum);
		}
		int st = generate(&o, &g, &gw);
		if (!o.queue)
			sfile_writer_free(&gw);
		return st;
	}
	struct collect_answers answers;
	if (answers_path) {
		if (collect_answers_load(&answers, answers_path, &e) < 0) {
			cli_warn("%s", e.msg);
			return 1;
		}
		co.answers = &answers;
	}
	struct held held = { 0 };
	struct groupset groups = { 0 };
	uint64_t records = 0;
	struct collect col;
	collect_init(&col, &co, hold, &held);
	struct sfile_writer w;
	int status = 0, fatal = 0;
	if (!o.queue && sfile_writer_init(&w, sfile_sink_fd, (void *)(intptr_t)STDOUT_FILENO, 3, &e) < 0) {
		cli_warn("%s", e.msg);
		return cli_failure_status(e.errnum);
	}

	char *stdin_only[] = { "-" };
	char **files = optind < argc ? argv + optind : stdin_only;
	int nfiles = optind < argc ? argc - optind : 1;
	for (int f = 0; f < nfiles && !fatal; f++) {
		int is_stdin = strcmp(files[f], "-") == 0;
		const char *name = input_name(files[f]);
		int fd = is_stdin ? STDIN_FILENO : open(files[f], O_RDONLY | O_CLOEXEC);
		struct lineio in;
		if (fd < 0) {
			cli_warn("%s: %s", name, strerror(errno));
			status = 1;
			continue;
		}
		if (lineio_open(&in, fd, name, &e) < 0) {
			cli_warn("%s%s", e.msg, in.truncated ? cut_stream : "");
			if (!is_stdin)
				close(fd);
			status = cli_worse_status(status, in.truncated ? CLI_EXIT_LATER : 1);
			continue;
		}
		uint64_t hash = COLLECT_HASH_INIT, lineno = 0, bad = 0, lines0 = col.lines;
		uint64_t groups0 = col.groups, trajs0 = col.trajs, tokens0 = col.tokens;
		int failed = 0, incomplete = 0, got;
		const char *line;
		size_t len;
		while ((got = lineio_next(&in, &line, &len, &e)) > 0) {
			lineno++;
			hash = collect_hash(hash, line, len);
			uint64_t differs0 = col.prompt_differs;
			col.at = (struct recordset_at){ (uint64_t)f, lineno };
			int r = collect_feed(&col, line, len, &e);
			char where[PATH_MAX + 32];
			snprintf(where, sizeof where, "%s:%llu", name, (unsigned long long)lineno);
			if (r == 0 && col.prompt_differs > differs0)
				warn_prompt_differs(where, col.prompt_differs - differs0);
			for (size_t i = 0; r == 0 && o.verbose && i < col.n_line_repeats; i++) {
				const struct collect_repeat *x = &col.line_repeats[i];
				char first[PATH_MAX + 32];
				snprintf(first, sizeof first, "%s:%llu", input_name(files[x->first.input]),
					 (unsigned long long)x->first.line);
				say_repeat(where, x->what, first);
			}
			if (r == -2) {
				cli_warn("%s", e.msg);
				failed = fatal = 1;
				break;
			}
			/* Only the last line can lack its newline. Cut short, it is
			 * a file still being written (or a pipe that broke), not a
			 * bad line: publishing the rest would name it from bytes the
			 * whole file does not have, and publish it again then. */
			if (r < 0 && len > 0 && line[len - 1] != '\n' && json_cut_short(line, len)) {
				cli_warn("%s:%llu: ends mid-record (its last line is cut short, without a "
					 "newline): nothing of it published; try again once it is complete", name,
					 (unsigned long long)lineno);
				failed = incomplete = 1;
				break;
			}
			if (r < 0) {
				cli_warn("%s:%llu: %s", name, (unsigned long long)lineno, e.msg);
				bad++;
				if (!o.skip) {
					failed = 1;
					break;
				}
			}
		}
		/* A compressed input that ends before its stream does is one still
		 * being written (or cut short), as a last line cut mid-record is,
		 * even where the cut falls between two lines: try again later. */
		if (!failed && got < 0) {
			cli_warn("%s%s", e.msg, in.truncated ? cut_stream : "");
			failed = 1;
			incomplete = in.truncated;
		}
		lineio_close(&in);
		if (!is_stdin)
			close(fd);
		if (!failed && collect_end_input(&col, &e) < 0) {
			cli_warn("%s: %s", name, e.msg);
			failed = fatal = 1;
		}
		if (failed) {
			collect_drop_input(&col);
			held_clear(&held);
			status = cli_worse_status(status, incomplete ? CLI_EXIT_LATER : 1);
			continue;
		}
		if (bad)
			cli_warn("%s: skipped %llu of %llu line%s", name, (unsigned long long)bad,
				 (unsigned long long)(col.lines - lines0), col.lines - lines0 == 1 ? "" : "s");
		if (o.verbose) {
			char fmts[64] = "";
			for (int k = COLLECT_NATIVE; k <= COLLECT_ATROPOS; k++)
				if (col.formats & (1u << k))
					snprintf(fmts + strlen(fmts), sizeof fmts - strlen(fmts), "%s%s", *fmts ? ", " : "",
						 collect_format_name((enum collect_format)k));
			uint64_t lines = col.lines - lines0, groups = col.groups - groups0, trajs = col.trajs - trajs0,
				 tokens = col.tokens - tokens0;
			cli_warn("%s: %llu line%s (%s), %llu group%s, %llu trajector%s, %llu response token%s",
				 name, (unsigned long long)lines, cli_s((long long)lines), *fmts ? fmts : "none",
				 (unsigned long long)groups, cli_s((long long)groups), (unsigned long long)trajs,
				 trajs == 1 ? "y" : "ies", (unsigned long long)tokens, cli_s((long long)tokens));
		}
		col.formats = 0;
		int r = 0;
		if (o.queue)
			r = publish(&o, &held, hash, name, &e);
		else {
			for (size_t i = 0; i < held.n && r == 0; i++)
				r = sfile_write_group(&w, &held.g[i], &e);
			if (r == 0)
				r = sfile_writer_flush(&w, &e);
		}
		/* each group record apart, as grpo-cat --stats counts them: an id
		 * repeated within one input is caught as well as one split across
		 * inputs */
		for (size_t i = 0; i < held.n && r == 0; i++)
			r = groupset_add_id(&groups, &held.g[i].group_id, held.g[i].n, records++, &e);
		if (r < 0) {
			cli_warn("%s: %s", name, e.msg);
			status = cli_worse_status(status, cli_failure_status(e.errnum));
			fatal = !o.queue;
		}
		held_clear(&held);
	}
	/* Without -o a failure leaves the frame unended: a reader of the pipe
	 * then fails on a truncated file rather than taking part for the whole. */
	if (!o.queue) {
		if (status == 0 && sfile_writer_finish(&w, &e) < 0) {
			cli_warn("%s", e.msg);
			status = cli_failure_status(e.errnum);
		} else if (status != 0)
			sfile_writer_flush(&w, &e);
		sfile_writer_free(&w);
	}
	warn_repeats(col.repeats);
	if (report_groups(&groups, o.verbose) < 0)
		status = 1;
	groupset_free(&groups);
	if (o.verbose && answers_path)
		cli_warn("%llu trajector%s answered from %s", (unsigned long long)col.answered,
			 col.answered == 1 ? "y" : "ies", answers_path);
	/* keyed otherwise than the groups (a data set's own "id"), the answers
	 * would all be dropped, and every reward then scored without one */
	if (status == 0 && answers_path && answers.n && col.answered == 0 && col.trajs > 0)
		cli_warn("warning: %s: %s %zu answer%s matched %s of the %llu group%s imported "
			 "(a line is keyed by its \"index\", else its \"id\", else its line number)",
			 answers_path, answers.n == 1 ? "its" : "none of its", answers.n, answers.n == 1 ? "" : "s",
			 answers.n == 1 ? "none" : "any", (unsigned long long)col.groups, col.groups == 1 ? "" : "s");
	free(held.g);
	collect_free(&col);
	if (answers_path)
		collect_answers_free(&answers);
	return status;
}
