/*
 * grpo-collect --server: sample G responses to each prompt of a prompts file
 * through a live inference server (vLLM, SGLang, OpenAI-style) over HTTP,
 * feed its answers to the importer as the lines of one input and publish them
 * as grpo-collect.c publishes an imported file, with --max-lag refusing a
 * server too far behind the trainer and --cursor keeping the answers before
 * anything is published. Apart from grpo-collect.c because only this way of
 * sampling talks to a server.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/path.h"
#include "collect/collect.h"
#include "collect/cursor.h"
#include "collect/server.h"
#include "data/sfile.h"
#include "model/rollout.h"

#include "cli.h"
#include "grpo-collect.h"

/* The newest step_K of the policy queue beside the output queue (SPOOL/policy
 * for -o SPOOL/rollouts), as --model SPOOL/policy finds it; -1 when none. */
static int64_t trainer_newest(const char *queue)
{
	char dir[PATH_MAX], found[PATH_MAX];
	struct err e;
	int64_t v;
	size_t n = queue ? strlen(queue) : 0;
	while (n > 1 && queue[n - 1] == '/')
		n--;
	while (n > 0 && queue[n - 1] != '/')
		n--;
	if (!queue || snprintf(dir, sizeof dir, "%.*spolicy", (int)n, queue) >= (int)sizeof dir)
		return -1;
	return rollout_policy_find(dir, found, sizeof found, &v, &e) < 0 ? -1 : v;
}

/* --responses as messages name it: "-" is standard output (with -o, where
 * standard output carries nothing else; main refuses it without). */
static int responses_stdout(const char *responses)
{
	return strcmp(responses, "-") == 0;
}

static const char *responses_name(const char *responses)
{
	return responses_stdout(responses) ? "standard output" : responses;
}

/* --responses, created or emptied before anything is sampled: never the
 * prompts file (a slip of the shell), which it would empty before it is
 * read. NULL with e filled. */
static FILE *open_responses(const char *responses, const char *prompts, struct err *e)
{
	struct stat a, b;
	if (responses_stdout(responses))
		return stdout;
	if (stat(responses, &a) == 0 && stat(prompts, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		err_set(e, "--responses %s is the prompts file, which it would empty: nothing done", responses);
		return NULL;
	}
	FILE *f = fopen(responses, "w");
	if (!f)
		err_sys(e, "%s", responses);
	return f;
}

/* One answer line (len bytes, its newline after them) into the saved copy;
 * *werr gets the errno of the first write that fails, which stdio's error
 * flag does not keep, so that a full disk is told apart (exit 75). */
static void save_answer(FILE *f, const char *line, size_t len, int *werr)
{
	if ((fwrite(line, 1, len, f) != len || putc('\n', f) == EOF) && !*werr)
		*werr = errno ? errno : EIO;
}

/*
 * After a batch's answers are fed: the saved copy (--responses) closed, then
 * the batch failed when its refusals say so: all of them, or any without
 * -e skip. what names them in the message ("answers refused"); werr is
 * save_answer's; later says that every refusal was the server's absence
 * (server_result.down), so that the batch's failure is temporary (EAGAIN).
 */
static int answers_end(FILE **saved, int werr, const char *responses, const struct opts *o, const char *where,
                       const char *what, unsigned long long bad, unsigned long long total, int later,
                       struct err *e)
{
	FILE *f = *saved;
	*saved = NULL;
	/* a write that failed early (a full disk) sets the error flag, which a
	 * later flush that succeeds does not clear, and fclose does not report;
	 * standard output is flushed, not closed */
	int failed = f && ferror(f);
	if (f && ((f == stdout ? fflush(f) : fclose(f)) != 0 || failed)) {
		if (werr)   /* the error flag's cause, which stdio does not keep */
			errno = werr;
		return err_sys(e, "%s: write failed", responses_name(responses));
	}
	if (bad && (!o->skip || bad == total)) {
		err_set(e, "%s: %llu of %llu %s: nothing published%s", where, bad, total, what,
		        o->skip ? "" : " (-e fail)");
		return later ? err_later(e) : -1;
	}
	return 0;
}

/* The end of a run through a server, however it went: the error said, the
 * saved answers closed, the held groups and the importer freed; the
 * status, a failure's as its errno calls for (cli_failure_status). */
static int end_server_run(int status, const struct err *e, FILE *saved, struct held *held, struct collect *col)
{
	if (status)
		cli_warn("%s", e->msg);
	if (status == CLI_EXIT_FAILURE)
		status = cli_failure_status(e->errnum);
	if (saved && saved != stdout)
		fclose(saved);
	held_free(held);
	collect_free(col);
	return status;
}

/*
 * The answers a killed run sampled and kept in the cursor (collect/cursor.h):
 * import and publish them as that run would have, under the same names and
 * policy version, and advance the cursor, asking the server nothing.
 */
static int finish_batch(struct opts *o, const struct gen_opts *g, const struct srv_opts *sv,
			struct collect_opts co, struct sfile_writer *w, struct cursor *cur)
{
	struct err e = { 0 };
	struct held held = { 0 };
	struct collect col;
	const struct cursor_batch *b = &cur->batch;
	uint64_t hash = COLLECT_HASH_INIT, k = 0, refused = 0;
	FILE *saved = NULL;
	int werr = 0;
	const char *line;
	size_t at = 0, len;
	int status = 1;
	int64_t asked = o->step;
	if (cursor_check_target(cur, o->queue, o->rank, o->max_groups, o->have_step ? &asked : NULL, &e) < 0) {
		cli_warn("%s", e.msg);
		return 1;
	}
	o->step = co.step = b->policy_version;
	collect_init(&col, &co, hold, &held);
	if (sv->responses && !(saved = open_responses(sv->responses, g->prompts, &e)))
		goto fail;
	while (cursor_batch_next(b, &at, &line, &len)) {
		k++;
		hash = collect_hash(collect_hash(hash, line, len), "\n", 1);
		if (saved)
			save_answer(saved, line, len, &werr);
		uint64_t differs0 = col.prompt_differs;
		col.at = (struct recordset_at){ 0, k };
		int r = collect_feed(&col, line, len, &e);
		if (r == -2)
			goto fail;
		char where[PATH_MAX + 64];
		snprintf(where, sizeof where, "%s: answer %llu of the batch sampled before", cur->path,
		         (unsigned long long)k);
		if (r == 0 && col.prompt_differs > differs0)
			warn_prompt_differs(where, col.prompt_differs - differs0);
		for (size_t i = 0; r == 0 && o->verbose && i < col.n_line_repeats; i++) {
			char first[32];
			snprintf(first, sizeof first, "answer %llu", (unsigned long long)col.line_repeats[i].first.line);
			say_repeat(where, col.line_repeats[i].what, first);
		}
		if (r < 0) {
			cli_warn("%s: answer %llu of the batch sampled before is refused: %s",
			         cur->path, (unsigned long long)k, e.msg);
			refused++;
		}
	}
	if (answers_end(&saved, werr, sv->responses, o, cur->path, "answers refused", refused, k, 0, &e) < 0)
		goto fail;
	uint64_t from = b->from, prompts = b->prompts;   /* b goes with the advance */
	if (emit_groups(o, &held, hash, g->prompts, w, &e) < 0 || cursor_advance(cur, b->next, &e) < 0)
		goto fail;
	warn_repeats(col.repeats);
	report_held(&held, o->verbose);
	if (o->verbose)
		cli_warn("%s: published the %llu prompt%s from place %llu of %s that an earlier run sampled "
		         "(policy version %lld), %zu group%s", g->cursor, (unsigned long long)prompts,
		         cli_s((long long)prompts), (unsigned long long)from, g->prompts, (long long)co.step, held.n,
		         cli_s((long long)held.n));
	status = 0;
fail:
	return end_server_run(status, &e, saved, &held, &col);
}

/* The sampled answers, kept in the cursor before any is published. */
static int keep_batch(struct cursor *cur, struct cursor_batch *b, const struct opts *o, uint64_t from, int n,
		      uint64_t next, struct err *e)
{
	b->from = from;
	b->prompts = (uint64_t)n;
	b->next = next;
	b->policy_version = b->step = o->step;
	b->rank = o->rank;
	b->max_groups = o->max_groups;
	if (o->queue && !(b->output = strdup(o->queue)))
		return err_set(e, "out of memory");
	return cursor_save(cur, b, e);
}

/*
 * Sample G responses to each prompt through the server, feed the answers, in
 * prompt order, to the importer as the lines of one input, and publish them as
 * the importer publishes a file of those lines (the same names: --responses
 * saves that file). A prompt that fails for good is named and skipped, or
 * with -e fail publishes nothing. With --cursor the answers are kept in it
 * before anything is published, and a run that finds them there publishes
 * them rather than sampling.
 */
int serve(struct opts *o, const struct gen_opts *g, struct srv_opts *sv, struct collect_opts co,
		 struct sfile_writer *w)
{
	struct err e = { 0 };
	struct tokenizer *tok = NULL;
	enum chat_format chat;
	const enum chat_format *use_chat;
	struct rollout_prompt *ps = NULL;
	struct server_prompt *sp = NULL;
	struct server_result *res = NULL;
	struct held held = { 0 };
	struct collect col;
	struct cursor cur = { 0 };
	struct cursor_batch batch = { 0 };
	char *model_id = NULL, *path = NULL;
	FILE *saved = NULL;
	int n = 0, status = 1, failed = 0, for_good = 0, lock_fd = -1, werr = 0;
	uint64_t rows, hash = COLLECT_HASH_INIT;
	long long offset = g->offset;
	int opened = g->cursor ? open_cursor(g, &cur, &offset, &lock_fd, &e) : 0;
	if (opened == 0 && cur.pending && cur.batch.model) {
		err_set(&e, "%s holds prompts started from %s and perhaps published in part: run the grpo-collect "
			"--model command that started them again to finish them", g->cursor, cur.batch.model);
		opened = -1;
	}
	if (opened != 0 || cur.pending) {
		if (opened != 0)
			cli_warn("%s", e.msg);
		status = opened > 0 ? CLI_EXIT_LATER
		       : opened < 0 ? cli_failure_status(e.errnum) : finish_batch(o, g, sv, co, w, &cur);
		cursor_free(&cur);
		if (lock_fd >= 0)
			close(lock_fd);
		return status;
	}
	collect_init(&col, &co, hold, &held);
	/* before anything is sampled: a path that cannot be written must not
	 * cost the whole run's answers */
	if (sv->responses && !(saved = open_responses(sv->responses, g->prompts, &e)))
		goto fail;
	if (g->tokenizer && !(tok = tok_load(g->tokenizer, &e)))
		goto fail;
	if (gen_chat(g, g->tokenizer, o->verbose, &chat, &use_chat, &e) < 0)
		goto fail;
	if (rollout_prompts_load(g->prompts, tok, use_chat,
	                         co.vocab_size ? (uint32_t)co.vocab_size : INT32_MAX, ROLLOUT_KEEP_TEXT,
	                         (uint64_t)offset, (uint64_t)g->count, &ps, &n, &rows, &e) < 0)
		goto fail;
	if (sv->so.api == SERVER_OPENAI)
		for (int i = 0; i < n; i++)
			if (!ps[i].tokens) {
				err_set(&e, "%s:%llu: --api openai cannot send text: an OpenAI-style server gives no "
				        "prompt token ids back; give prompt_tokens, or --tokenizer", g->prompts,
				        (unsigned long long)ps[i].line);
				goto fail;
			}
	/* the version it serves, from its model's path (.../step_K) */
	if (server_model_info(&sv->so, &model_id, &path, &e) < 0)
		goto fail;
	if (!sv->so.model && sv->so.api != SERVER_SGLANG)
		sv->so.model = model_id;
	int64_t served = path ? path_step(path) : -1, newest = trainer_newest(o->queue);
	/* a link to the step served (examples/sync/vllm-reload.sh), where this
	 * machine sees the server's file system */
	char *real = served < 0 && path ? realpath(path, NULL) : NULL;
	if (real)
		served = path_step(real);
	free(real);
	if (sv->max_lag >= 0 && newest >= 0 && (served < 0 || served < newest - sv->max_lag)) {
		if (served < 0)
			err_set(&e, "%s serves %s, whose path names no step_K: its policy version is unknown, and "
			        "--max-lag needs it; nothing sampled", sv->so.url, path ? path : "a model with no path");
		else
			err_set(&e, "%s serves policy version %lld (%s), older than the trainer's newest, %lld, by more "
			        "than --max-lag %lld: nothing sampled (sync the server and run again)", sv->so.url,
			        (long long)served, path, (long long)newest, sv->max_lag);
		status = 3;
		goto fail;
	}
	o->step = co.step = o->have_step ? o->step : served >= 0 ? served : newest >= 0 ? newest : 0;
	collect_free(&col);
	collect_init(&col, &co, hold, &held);
	sp = calloc((size_t)n, sizeof *sp);
	res = calloc((size_t)n, sizeof *res);
	if (!sp || !res) {
		err_set(&e, "out of memory");
		goto fail;
	}
	for (int i = 0; i < n; i++)
		sp[i] = (struct server_prompt){ ps[i].tokens, ps[i].n, ps[i].text, ps[i].answer, ps[i].place };
	if (server_sample(&sv->so, sp, (size_t)n, res, &e) < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		if (!res[i].line) {
			cli_warn("%s:%llu: prompt not sampled: %s", g->prompts,
			         (unsigned long long)ps[i].line, res[i].error);
			failed++;
			for_good += !res[i].down;
			continue;
		}
		/* as the importer hashes the line of a file, newline included */
		hash = collect_hash(collect_hash(hash, res[i].line, res[i].len), "\n", 1);
		if (saved)
			save_answer(saved, res[i].line, res[i].len, &werr);
		if (g->cursor && cursor_batch_add(&batch, res[i].line, res[i].len, &e) < 0)
			goto fail;
		uint64_t differs0 = col.prompt_differs;
		col.at = (struct recordset_at){ 0, ps[i].line };
		int r = collect_feed(&col, res[i].line, res[i].len, &e);
		if (r == -2)
			goto fail;
		char where[PATH_MAX + 32];
		snprintf(where, sizeof where, "%s:%llu", g->prompts, (unsigned long long)ps[i].line);
		if (r == 0 && col.prompt_differs > differs0)
			warn_prompt_differs(where, col.prompt_differs - differs0);
		for (size_t j = 0; r == 0 && o->verbose && j < col.n_line_repeats; j++) {
			char first[PATH_MAX + 32];
			snprintf(first, sizeof first, "%s:%llu", g->prompts,
			         (unsigned long long)col.line_repeats[j].first.line);
			say_repeat(where, col.line_repeats[j].what, first);
		}
		if (r < 0) {
			cli_warn("%s:%llu: the server's answer is refused: %s", g->prompts,
			         (unsigned long long)ps[i].line, e.msg);
			failed++;
			for_good++;
		}
	}
	if (answers_end(&saved, werr, sv->responses, o, g->prompts, "prompts failed", (unsigned long long)failed,
	                (unsigned long long)n, for_good == 0, &e) < 0)
		goto fail;
	uint64_t next = (uint64_t)offset + (uint64_t)n;   /* a place, as a model's cursor keeps */
	if (g->cursor && keep_batch(&cur, &batch, o, (uint64_t)offset, n, next, &e) < 0)
		goto fail;
	if (emit_groups(o, &held, hash, g->prompts, w, &e) < 0 || (g->cursor && cursor_advance(&cur, next, &e) < 0))
		goto fail;
	if (failed)
		cli_warn("%s: skipped %d of %d prompt%s", g->prompts, failed, n, n == 1 ? "" : "s");
	warn_repeats(col.repeats);
	report_held(&held, o->verbose);
	if (o->verbose)
		cli_warn("%s (%s, policy version %lld): %d prompt%s from row %llu of %s, %zu group%s of %lld",
		         sv->so.url, path ? path : "no path", (long long)co.step, n, cli_s(n),
		         (unsigned long long)((uint64_t)offset % rows), g->prompts, held.n, cli_s((long long)held.n),
		         g->samples);
	status = 0;
fail:
	status = end_server_run(status, &e, saved, &held, &col);
	cursor_batch_free(&batch);
	cursor_free(&cur);
	if (lock_fd >= 0)
		close(lock_fd);
	server_results_free(res, (size_t)n);
	free(res);
	free(sp);
	free(model_id);
	free(path);
	rollout_prompts_free(ps, n);
	tok_free(tok);
	return status;
}
