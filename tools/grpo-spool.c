/*
 * grpo-spool: look after a spool: its state, crash recovery, retention,
 * a consumer that runs a command per file, and a plot of a run's metrics
 * (grpo-spool(1)).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "base/tempfile.h"
#include "data/metrics.h"
#include "spool/claim.h"
#include "spool/queue.h"
#include "spool/spool.h"
#include "spool/watch.h"

#include "cli.h"

static const char *prog = "grpo-spool";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-spool status SPOOL [--json] [--lease SECONDS]\n"
		"       grpo-spool recover SPOOL [-v] [--lease SECONDS] [--tmp-age SECONDS]\n"
		"       grpo-spool gc SPOOL --keep-last K [-v] [--archive DIR] [--queue NAME]...\n"
		"       grpo-spool consume QUEUE [-v] [--watch] [--poll SECONDS] [--rescan SECONDS]\n"
		"                  [--from STEP] [--to STEP] [--lease SECONDS] -- COMMAND [ARG...]\n"
		"       grpo-spool quarantine [-v] [--lease SECONDS] QUEUE/step_N/rank_X/NAME...\n"
		"       grpo-spool plot SPOOL [-o FILE.png | --tsv] [-v] [--metrics FILE]...\n"
		"Look after a spool: its state, what crashed processes left, old steps, consumers, a plot.\n"
		"      --archive DIR      gc: archive each step before removing it\n"
		"      --from STEP, --to STEP  consume: only the steps in this range (inclusive)\n"
		"      --json             status: JSON lines instead of a table\n"
		"      --keep-last K      gc: keep the newest K steps of each queue (required)\n"
		"      --metrics FILE     plot: a metrics file to read instead of the spool's (repeatable;\n"
		"                         '-': standard input)\n"
		"  -o, --output FILE.png  plot: where to draw (SPOOL/metrics.png; '-': standard output)\n"
		"      --lease SECONDS    status, recover, quarantine: judge other hosts' claims by this lease;\n"
		"                         consume: the lease recorded in claims (3600)\n"
		"      --poll SECONDS     consume: list the queue this often instead of inotify (implies --watch)\n"
		"      --queue NAME       gc: prune only this queue (repeatable; policy only so)\n"
		"      --rescan SECONDS   consume: with inotify, list the whole queue this often too (300)\n"
		"      --tsv              plot: print the table as tab-separated values instead\n"
		"      --tmp-age SECONDS  recover: remove temporaries at least this old (129600)\n"
		"      --watch            consume: keep waiting for new files until SIGINT or SIGTERM\n"
		"  -v, --verbose          report what was done on standard error\n"
		"  -h, --help             this text\n"
		"  -V, --version          the version\n");
}

enum { O_JSON = 256, O_METRICS, O_TSV, O_LEASE, O_TMP_AGE, O_KEEP, O_ARCHIVE, O_QUEUE, O_WATCH, O_POLL, O_RESCAN,
       O_FROM, O_TO };

static const struct option longopts[] = {
	{ "archive", required_argument, NULL, O_ARCHIVE },
	{ "from", required_argument, NULL, O_FROM },
	{ "help", no_argument, NULL, 'h' },
	{ "json", no_argument, NULL, O_JSON },
	{ "keep-last", required_argument, NULL, O_KEEP },
	{ "lease", required_argument, NULL, O_LEASE },
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "output", required_argument, NULL, 'o' },
	{ "poll", required_argument, NULL, O_POLL },
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "rescan", required_argument, NULL, O_RESCAN },
	{ "tmp-age", required_argument, NULL, O_TMP_AGE },
	{ "to", required_argument, NULL, O_TO },
	{ "tsv", no_argument, NULL, O_TSV },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ "watch", no_argument, NULL, O_WATCH },
	{ NULL, 0, NULL, 0 },
};

/* The options each command takes, as its synopsis shows them: any other
 * is a usage error, not ignored, so that `status --keep-last 3` or a
 * recover given gc's --queue does not pass for what was meant. */
static const struct {
	const char *cmd, *takes;
} command_options[] = {
	{ "status", " json lease " },
	{ "recover", " verbose lease tmp-age " },
	{ "gc", " keep-last verbose archive queue " },
	{ "consume", " verbose watch poll rescan from to lease " },
	{ "quarantine", " verbose lease " },
	{ "plot", " output tsv verbose metrics " },
};

/* 1 when command cmd (one of command_options) takes the option whose
 * getopt value is ch; *name is that option as messages name it (in buf). */
static int takes_option(const char *cmd, int ch, const char **name, char *buf, size_t size)
{
	const struct option *o = longopts;
	while (o->name && o->val != ch)
		o++;
	*name = cli_option_name(o, buf, size);
	char word[72];
	snprintf(word, sizeof word, " %s ", o->name ? o->name : "?");
	for (size_t i = 0; i < sizeof command_options / sizeof *command_options; i++)
		if (!strcmp(command_options[i].cmd, cmd))
			return strstr(command_options[i].takes, word) != NULL;
	return 0;
}

struct opts {
	int json, verbose;
	long lease, tmp_age, keep;
	const char *archive;
	const char **queues;
	int nqueues;
	const char **metrics;   /* plot: the metrics files */
	int nmetrics, tsv;
	const char *output;
	struct watch_opt w;
};

/* ---- plot ---- */

/* Is name an executable file in one of $PATH's directories? */
static int in_path(const char *name)
{
	const char *p = getenv("PATH");
	char path[PATH_MAX];
	while (p && *p) {
		size_t n = strcspn(p, ":");
		if (snprintf(path, sizeof path, "%.*s/%s", (int)n, n ? p : ".", name) < (int)sizeof path &&
		    access(path, X_OK) == 0)
			return 1;
		p += n + (p[n] == ':');
	}
	return 0;
}

/*
 * Does the file at fd end in PNG's IEND chunk? gnuplot exits 0 even when
 * its writes failed (a full disk), leaving the image cut short.
 */
static int png_complete(int fd)
{
	static const unsigned char iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	unsigned char tail[12];
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_size >= 20 &&
	       pread(fd, tail, sizeof tail, st.st_size - (off_t)sizeof tail) == (ssize_t)sizeof tail &&
	       memcmp(tail, iend, sizeof iend) == 0;
}

/* Copy the drawn image to a pipe or a device (-o /dev/stdout), or to
 * standard output as it is (-o -): 0, or -1 with e set. */
static int copy_to_special(int from, const char *to, struct err *e)
{
	unsigned char chunk[65536];
	ssize_t n;
	int out = strcmp(to, "-") == 0;
	int fd = out ? STDOUT_FILENO : open(to, O_WRONLY | O_CLOEXEC);
	if (out)
		to = "standard output";
	if (fd < 0)
		return err_sys(e, "%s", to);
	off_t at = 0;
	int r = 0;
	while (r == 0 && (n = pread(from, chunk, sizeof chunk, at)) > 0) {
		r = fsys_write_all(fd, chunk, (size_t)n, to, e);
		at += n;
	}
	if (r == 0 && n < 0)
		r = err_sys(e, "%s: reading back the image", to);
	if (!out && close(fd) < 0 && r == 0)
		r = err_sys(e, "%s", to);
	return r;
}

/*
 * Draw the table into png with gnuplot, all or nothing: gnuplot writes a
 * temporary (beside png, or in $TMPDIR when png is a pipe or a device,
 * which a rename would replace), which is checked whole and then renamed
 * over png or copied into it. gnuplot's standard output is not ours: where
 * it cannot open its output it writes the image there. 0, or -1 said.
 */
static int draw_png(const struct metrics_table *t, const char *png, struct buf *b)
{
	struct err e;
	char real[PATH_MAX];
	const char *target = png, *tmpdir = getenv("TMPDIR");
	/* "-", a pipe or a device is written as it is; a link: its target is drawn */
	int special = strcmp(png, "-") == 0 || cli_output_target(&target, real);
	if (!special && cli_output_dir(target, &e) < 0) {   /* named, not the temporary beside it */
		cli_warn("%s", e.msg);
		return -1;
	}
	struct tempfile *tmp = tempfile_create(target, special ? tmpdir && *tmpdir ? tmpdir : "/tmp" : NULL, &e);
	if (!tmp) {
		cli_warn("%s", e.msg);
		return -1;
	}
	if (metrics_gnuplot(t, tempfile_path(tmp), b) < 0) {
		tempfile_delete(tmp);
		cli_warn("out of memory");
		return -1;
	}
	FILE *g = popen("exec gnuplot >/dev/null", "w");
	if (!g) {
		cli_warn("gnuplot: %s", strerror(errno));
		tempfile_delete(tmp);
		return -1;
	}
	fwrite(b->data, 1, b->len, g);
	int ws = pclose(g);
	if (ws == -1 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		cli_warn("gnuplot failed drawing %s", png);
		tempfile_delete(tmp);
		return -1;
	}
	int fd = fsys_open_read(tempfile_path(tmp), &e), r = -1;
	if (fd < 0)
		cli_warn("%s", e.msg);
	else if (!png_complete(fd))
		cli_warn("%s: the image gnuplot drew was cut short (a full disk?); not written", png);
	else if ((r = special ? copy_to_special(fd, target, &e) : 0) < 0)
		cli_warn("%s", e.msg);
	if (fd >= 0)
		close(fd);
	if (r < 0 || special) {
		tempfile_delete(tmp);
		return r;
	}
	if ((r = tempfile_commit(tmp, TEMPFILE_REPLACE, &e)) < 0)
		cli_warn("%s", e.msg);
	return r < 0 ? -1 : 0;
}

#define EXIT_NO_GNUPLOT 69   /* sysexits.h's EX_UNAVAILABLE */

static int cmd_plot(const char *spool, const struct opts *op)
{
	struct metrics_table t = METRICS_TABLE_INIT;
	struct err e;
	struct buf b = { 0 };
	char paths[2][PATH_MAX], png[PATH_MAX];
	const char *defaults[2] = { paths[0], paths[1] }, **files = op->metrics;
	int n = op->nmetrics, status = 1;
	if (n == 0) {
		/* what examples/demo.sh and the examples leave in the spool,
		 * which must be there to hold them */
		struct stat st;
		int bad = stat(spool, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
		if (bad) {
			cli_warn("%s: %s", spool, strerror(bad));
			return 1;
		}
		snprintf(paths[0], sizeof paths[0], "%s/score.jsonl", spool);
		snprintf(paths[1], sizeof paths[1], "%s/step.jsonl", spool);
		for (int i = 0; i < 2; i++)
			if (access(defaults[i], F_OK) == 0)
				defaults[n++] = defaults[i];
		if (n == 0) {
			cli_warn("%s: no score.jsonl or step.jsonl: name the metrics files with --metrics", spool);
			return 1;
		}
		files = defaults;
	}
	for (int i = 0; i < n; i++)
		if ((strcmp(files[i], "-") ? metrics_read(&t, files[i], &e)
		                           : metrics_read_stream(&t, stdin, "<stdin>", &e)) < 0) {
			cli_warn("%s", e.msg);
			goto out;
		}
	if (t.n == 0) {
		cli_warn("%s%s: no metrics lines of grpo-score or grpo-step",
		         strcmp(files[0], "-") ? files[0] : "<stdin>", n > 1 ? " and the rest" : "");
		goto out;
	}
	if (op->tsv) {
		if (metrics_tsv(&t, &b) < 0 || fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0) {
			cli_warn("standard output: %s", strerror(errno));
			goto out;
		}
		status = 0;
		goto out;
	}
	if (!in_path("gnuplot")) {
		cli_warn("plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox); "
		         "--tsv prints the table instead");
		status = EXIT_NO_GNUPLOT;
		goto out;
	}
	snprintf(png, sizeof png, "%s", op->output ? op->output : "");
	if (!op->output)
		snprintf(png, sizeof png, "%s/metrics.png", spool);
	if (draw_png(&t, png, &b) < 0)
		goto out;
	if (op->verbose)
		cli_warn("%s: %zu step%s", png, t.n, t.n == 1 ? "" : "s");
	status = 0;
out:
	buf_free(&b);
	metrics_free(&t);
	return status;
}

/* ---- status ---- */

static void json_num_or_null(cJSON *o, const char *k, int64_t v)
{
	if (v < 0)
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, (double)v);
}

static void print_json(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);
	if (s)
		puts(s);
	free(s);
	cJSON_Delete(o);
}

static void print_step_json(const char *queue, const struct queue_step *s)
{
	cJSON *o = cJSON_CreateObject(), *cl = cJSON_CreateArray();
	cJSON_AddStringToObject(o, "queue", queue);
	cJSON_AddNumberToObject(o, "step", (double)s->step);
	cJSON_AddNumberToObject(o, "ranks", s->ranks);
	cJSON_AddNumberToObject(o, "waiting", (double)s->waiting);
	cJSON_AddNumberToObject(o, "claimed", (double)s->claimed);
	cJSON_AddNumberToObject(o, "done", (double)s->done);
	cJSON_AddBoolToObject(o, "marker", s->marker);
	for (long k = 0; k < s->claimed; k++) {
		const struct queue_claim *c = &s->claims[k];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "rank", c->rank);
		cJSON_AddStringToObject(x, "name", c->name);
		if (c->id.host[0]) {
			cJSON_AddStringToObject(x, "host", c->id.host);
			cJSON_AddNumberToObject(x, "pid", (double)c->id.pid);
			cJSON_AddNumberToObject(x, "since", (double)c->id.since);
			cJSON_AddNumberToObject(x, "lease", (double)c->id.lease);
		}
		cJSON_AddNumberToObject(x, "age", (double)c->age);
		cJSON_AddBoolToObject(x, "stale", c->stale);
		cJSON_AddItemToArray(cl, x);
	}
	cJSON_AddItemToObject(o, "claims", cl);
	print_json(o);
}

static void print_step(const char *queue, const struct queue_step *s)
{
	printf("%-12s %8lld %5d %8ld %8ld %8ld %s\n", queue, (long long)s->step,
	       s->ranks, s->waiting, s->claimed, s->done, s->marker ? "yes" : "-");
	for (long k = 0; k < s->claimed; k++) {
		const struct queue_claim *c = &s->claims[k];
		char by[sizeof c->id.host + 32];
		if (c->id.host[0])
			snprintf(by, sizeof by, "%s pid %ld", c->id.host, c->id.pid);
		else   /* no holder known: its age alone says whether it is stale */
			snprintf(by, sizeof by, "(unreadable record)");
		printf("  claimed step_%lld/rank_%d/%s by %s, %llds ago%s\n", (long long)s->step, c->rank,
		       c->name, by, c->age, c->stale ? " (stale)" : "");
	}
}

/*
 * A queue (or a step) given where the spool goes would read as a spool of
 * queues named step_N (rank_X) with nothing in them, and recover or gc would
 * do nothing in silence: 1, said, when a directory in it is named so.
 */
static int not_a_spool(const char *spool, char **names, size_t n)
{
	int64_t step;
	int rank;
	for (size_t i = 0; i < n; i++)
		if (spool_parse_step(names[i], &step) == 0 || spool_parse_rank(names[i], &rank) == 0) {
			cli_warn("%s: a queue or a step, not a spool (it holds %s): give the spool above it",
				 spool, names[i]);
			return 1;
		}
	return 0;
}

/* The state queue_status returns, as a table or as JSON lines. */
static int cmd_status(const char *spool, const struct opts *op)
{
	struct err e;
	struct queue_status st;
	char **names;
	size_t nq;
	int list_failed = 0;
	if (queue_list(spool, &names, &nq, &e) == 0) {
		int bad = not_a_spool(spool, names, nq);
		for (size_t i = 0; i < nq && !bad; i++) {
			char queue[PATH_MAX];
			snprintf(queue, sizeof queue, "%s/%s", spool, names[i]);
			list_failed |= cli_warn_misnamed(queue) < 0;
		}
		fsys_free_names(names, nq);
		if (bad)
			return 1;
	}
	int r = queue_status(spool, op->lease, time(NULL), &st, &e);
	if (r != 0) {
		if (r == 1)
			cli_warn("%s: no such spool", spool);
		else
			cli_warn("%s", e.msg);
		queue_status_free(&st);
		return 1;
	}
	if (!op->json)
		printf("%-12s %8s %5s %8s %8s %8s %s\n", "QUEUE", "STEP", "RANKS", "WAITING", "CLAIMED",
		       "DONE", "DONE-MARKER");
	for (size_t i = 0; i < st.n_queues; i++)
		for (size_t j = 0; j < st.queues[i].n_steps; j++)
			if (op->json)
				print_step_json(st.queues[i].name, &st.queues[i].steps[j]);
			else
				print_step(st.queues[i].name, &st.queues[i].steps[j]);
	int64_t policy = st.policy_step, collect = st.collect_step;
	if (op->json) {
		cJSON *o = cJSON_CreateObject();
		json_num_or_null(o, "policy_step", policy);
		json_num_or_null(o, "collect_step", collect);
		if (policy >= 0 && collect >= 0)
			cJSON_AddNumberToObject(o, "lag", (double)(policy - collect));
		else
			cJSON_AddNullToObject(o, "lag");
		print_json(o);
	} else {
		char a[32] = "-", b[32] = "-", c[32] = "-";
		if (policy >= 0)
			snprintf(a, sizeof a, "%lld", (long long)policy);
		if (collect >= 0)
			snprintf(b, sizeof b, "%lld", (long long)collect);
		if (policy >= 0 && collect >= 0)
			snprintf(c, sizeof c, "%lld", (long long)(policy - collect));
		printf("policy step %s, collecting step %s, lag %s\n", a, b, c);
	}
	for (size_t i = 0; i < st.n_errors; i++)
		cli_warn("%s", st.errors[i].msg);
	int bad = cli_worse_status(st.n_errors != 0 || list_failed, cli_stdout_flushed());
	queue_status_free(&st);
	return bad;
}

/* ---- recover and gc ---- */

/*
 * The spool's queues, with its lock held (*fd: close it when done): 0, or
 * the exit status (75 when another recover or gc holds it, or the disk
 * is full), said.
 */
static int lock_spool(const char *spool, char ***queues, size_t *nq, int *fd)
{
	struct err e;
	int r = queue_list(spool, queues, nq, &e);
	if (r != 0) {
		if (r == 1)
			cli_warn("%s: no such spool", spool);
		else
			cli_warn("%s", e.msg);
		return r == 1 ? 1 : cli_failure_status(e.errnum);
	}
	if (not_a_spool(spool, *queues, *nq)) {
		fsys_free_names(*queues, *nq);
		return 1;
	}
	r = queue_lock_spool(spool, fd, &e);
	if (r == 0)
		return 0;
	if (r == 1)
		cli_warn("%s: busy: another recover or gc holds %s/.lock", spool, spool);
	else
		cli_warn("%s", e.msg);
	fsys_free_names(*queues, *nq);
	return r == 1 ? CLI_EXIT_LATER : cli_failure_status(e.errnum);
}

static int cmd_recover(const char *spool, const struct opts *op)
{
	struct err e;
	char **queues, qpath[PATH_MAX];
	size_t nq;
	int fd, bad = 0;
	struct queue_recover_stats st = { 0, 0, 0, 0 };
	int r = lock_spool(spool, &queues, &nq, &fd);
	if (r != 0)
		return r;
	time_t now = time(NULL);
	for (size_t i = 0; i < nq; i++) {
		snprintf(qpath, sizeof qpath, "%s/%s", spool, queues[i]);
		if (queue_recover(qpath, op->lease, op->tmp_age, now, &st, &e) < 0) {
			cli_warn("%s", e.msg);
			bad = cli_worse_status(bad, cli_failure_status(e.errnum));
		}
	}
	fsys_free_names(queues, nq);
	close(fd);
	if (op->verbose)
		cli_warn("%s: %ld claim%s returned, %ld live, %ld temporar%s removed, "
			 "%ld interrupted gc finished", spool, st.returned, cli_s(st.returned), st.live,
			 st.tmp_removed, st.tmp_removed == 1 ? "y" : "ies", st.gc_finished);
	return bad;
}

/* --queue NAME without the slashes a shell's completion leaves after it */
static size_t queue_len(const char *name)
{
	size_t n = strlen(name);
	while (n > 1 && name[n - 1] == '/')
		n--;
	return n;
}

static int names_queue(const char *name, const char *queue)
{
	size_t n = queue_len(name);
	return strncmp(name, queue, n) == 0 && queue[n] == 0;
}

static int cmd_gc(const char *spool, const struct opts *op)
{
	struct err e;
	char **queues, qpath[PATH_MAX];
	size_t nq;
	int fd, bad = 0;
	struct queue_gc_stats st = { 0, 0, 0 };
	int r = lock_spool(spool, &queues, &nq, &fd);
	if (r != 0)
		return r;
	/* a --queue the spool lacks (a typo) would prune nothing in silence:
	 * refuse the run before pruning any; "rollouts/" is rollouts */
	for (int k = 0; k < op->nqueues; k++) {
		size_t i = 0;
		while (i < nq && !names_queue(op->queues[k], queues[i]))
			i++;
		if (i == nq) {
			cli_warn("%s/%.*s: no such queue", spool, (int)queue_len(op->queues[k]), op->queues[k]);
			bad = 1;
		}
	}
	if (bad) {
		fsys_free_names(queues, nq);
		close(fd);
		return 1;
	}
	for (size_t i = 0; i < nq; i++) {
		int chosen = op->nqueues == 0 && strcmp(queues[i], "policy") != 0;
		for (int k = 0; k < op->nqueues; k++)
			chosen |= names_queue(op->queues[k], queues[i]);
		if (!chosen)
			continue;
		snprintf(qpath, sizeof qpath, "%s/%s", spool, queues[i]);
		if (queue_gc(qpath, op->keep, op->archive, &st, &e) < 0) {
			cli_warn("%s", e.msg);
			bad = cli_worse_status(bad, cli_failure_status(e.errnum));
		}
	}
	fsys_free_names(queues, nq);
	close(fd);
	if (op->verbose)
		cli_warn("%s: %ld step%s removed, %ld archived, %ld old step%s not finished",
			 spool, st.removed, cli_s(st.removed), st.archived, st.unfinished, cli_s(st.unfinished));
	return bad;
}

/* ---- quarantine ---- */

static int cmd_quarantine(char **files, int n, const struct opts *op)
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		struct err e;
		struct claim_id who;
		char dest[PATH_MAX + 300];
		int r = queue_quarantine(files[i], op->lease, time(NULL), dest, sizeof dest, &who, &e);
		if (r < 0) {
			cli_warn("%s", e.msg);
			rc = cli_worse_status(rc, cli_failure_status(e.errnum));
		} else if (r == 1) {
			cli_warn("%s: claimed by a live consumer (host %s, pid %ld); "
				 "try again once it lets go", files[i], who.host[0] ? who.host : "?", who.pid);
			rc = cli_worse_status(rc, CLI_EXIT_LATER);
		} else if (op->verbose) {
			cli_warn("%s: quarantined %sas %s", files[i], r == 2 ? "already " : "", dest);
		}
	}
	return rc;
}

/* ---- consume ---- */

/*
 * Run argv with the file's path appended; its exit status, or -1. The
 * command inherits the claim's locked descriptor, so that the claim lives
 * as long as the command even if we are killed (claim.h); while it runs,
 * the claim's lease is renewed on the watch's timer.
 */
static int run_command(char **argv, int argc, struct watch *w, const struct claim *c)
{
	char **av = calloc((size_t)argc + 2, sizeof *av);
	if (!av)
		return -1;
	memcpy(av, argv, (size_t)argc * sizeof *av);
	av[argc] = (char *)c->path;
	sigset_t chld, saved;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &saved); /* for sigtimedwait below */
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int saved_errno = errno;
		sigprocmask(SIG_SETMASK, &saved, NULL);
		free(av);
		errno = saved_errno;
		return -1;
	}
	if (pid == 0) {
		char v[32];
		sigset_t none;
		/* its own process group, out of the terminal's: a Ctrl-C stops
		 * grpo-spool after this command, not the command half-way */
		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (c->fd >= 0 && fcntl(c->fd, F_SETFD, 0) == 0) {
			snprintf(v, sizeof v, "%d", c->fd);
			setenv("GRPO_CLAIM_FD", v, 1);
		}
		snprintf(v, sizeof v, "%lld", (long long)c->step);
		setenv("GRPO_STEP", v, 1);
		snprintf(v, sizeof v, "%d", c->rank);
		setenv("GRPO_RANK", v, 1);
		setenv("GRPO_NAME", c->name, 1);
		execvp(av[0], av);
		cli_warn("%s: %s", av[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);   /* as the child does: whichever runs first */
	free(av);
	int status, warned = 0;
	pid_t r;
	while ((r = waitpid(pid, &status, WNOHANG)) != pid) {
		if (r < 0 && errno != EINTR) {
			sigprocmask(SIG_SETMASK, &saved, NULL);
			return -1;
		}
		double t = watch_renew_in(w);
		struct timespec ts = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };
		sigtimedwait(&chld, NULL, &ts); /* the child's exit, or a renewal due */
		struct err e;
		if (watch_renew(w, &e) < 0 && !warned++)
			cli_warn("%s: cannot renew the claim: %s", c->path, e.msg);
	}
	sigprocmask(SIG_SETMASK, &saved, NULL);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/*
 * A mistyped queue must not pass for an empty one (exit 0 in silence) nor,
 * with --watch, be created: the queue exists, or with --watch at least the
 * spool above it does; a step or rank directory is not a queue.
 */
static int check_queue(const char *queue, int follow)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	int64_t step;
	int rank;
	snprintf(buf, sizeof buf, "%s", queue);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	if (spool_parse_step(base, &step) == 0 || spool_parse_rank(base, &rank) == 0) {
		cli_warn("%s: a step or rank directory, not a queue (consume QUEUE --from N --to N)", queue);
		return -1;
	}
	if (stat(queue, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		cli_warn("%s: not a directory", queue);
		return -1;
	}
	snprintf(parent, sizeof parent, "%s", buf);
	char *slash = strrchr(parent, '/');
	if (slash)
		*(slash == parent ? slash + 1 : slash) = 0;
	else
		snprintf(parent, sizeof parent, ".");
	if (!follow) {
		cli_warn("%s: no such queue", queue);
		return -1;
	}
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode)) {
		cli_warn("%s: no such spool directory %s (a --watch creates the queue, not the spool)",
			 queue, parent);
		return -1;
	}
	return 0;
}

static int cmd_consume(const char *queue, char **argv, int argc, const struct opts *op)
{
	struct err e;
	struct claim *c;
	int bad = 0, r;
	struct watch_opt wo = op->w;
	wo.signals = 1;
	wo.lease = op->lease;
	if (check_queue(queue, op->w.follow) < 0)
		return 1;
	signal(SIGCHLD, SIG_DFL); /* ignored, children would be reaped unseen */
	if (op->verbose)
		cli_warn_misnamed(queue);
	struct watch *w = watch_open(queue, &wo, &e);
	if (!w) {
		cli_warn("%s", e.msg);
		return cli_failure_status(e.errnum);
	}
	while ((r = watch_next(w, &c, &e)) > 0) {
		int st = run_command(argv, argc, w, c);
		if (st == 0) {
			/* flushed at once: the command's output is nothing this
			 * loop can name, so a retirement lost to a power cut would
			 * run the command on the file a second time */
			int k = claim_retire(c, &e);
			if (k < 0 || (k == 0 && claim_flush_done(c, &e) < 0)) {
				cli_warn("%s", e.msg);
				bad = cli_worse_status(bad, cli_failure_status(e.errnum));
			} else if (op->verbose) {
				cli_warn("%s: done", c->path);
			}
			continue;
		}
		if (st < 0)
			cli_warn("%s: cannot run %s: %s", c->path, argv[0], strerror(errno));
		else
			cli_warn("%s: %s exited with status %d; left waiting", c->path, argv[0], st);
		/* a command that says "later" as the tools do is passed on: nothing failed for good */
		bad = cli_worse_status(bad, st == CLI_EXIT_LATER ? CLI_EXIT_LATER : 1);
		if (claim_release(c, &e) < 0)
			cli_warn("%s", e.msg);
	}
	if (r < 0) {
		cli_warn("%s", e.msg);
		bad = cli_worse_status(bad, cli_failure_status(e.errnum));
	}
	/* a pass cut short may leave files waiting: exit 0 would say they were
	 * consumed, and as grpo-step stopped short of --steps, the next run goes on */
	if (r == 0 && !op->w.follow && watch_stopped(w)) {
		cli_warn("%s: stopped by %s before the end of the pass; what is left waits",
			 queue, watch_stopped(w) == SIGINT ? "SIGINT" : "SIGTERM");
		bad = cli_worse_status(bad, CLI_EXIT_LATER);
	}
	if (op->verbose) {
		struct buf line = { 0 };
		if (watch_summary(w, op->w.follow, &line) == 0)
			cli_warn("%s: %s", queue, (const char *)line.data);
		buf_free(&line);
	}
	watch_close(w);
	return bad;
}

int main(int argc, char **argv)
{
	struct opts op;
	struct watch_opt wdef = WATCH_OPT_INIT;
	memset(&op, 0, sizeof op);
	op.w = wdef;
	op.keep = -1;
	op.tmp_age = QUEUE_TMP_AGE_DEFAULT;
	prog = cli_init(argv[0], "status | recover | gc | consume | quarantine | plot [OPTION]... OPERAND...");
	if (argc < 2)
		cli_bad_usage("no command: status, recover, gc, consume, quarantine or plot");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "-V") || !strcmp(sub, "--version")) {
		printf("%s %s\n", prog, GRPO_VERSION);
		return 0;
	}
	if (strcmp(sub, "status") && strcmp(sub, "recover") && strcmp(sub, "gc") && strcmp(sub, "consume") &&
	    strcmp(sub, "quarantine") && strcmp(sub, "plot"))
		cli_bad_usage("unknown command: %s", sub);
	op.queues = calloc((size_t)argc, sizeof *op.queues);
	op.metrics = calloc((size_t)argc, sizeof *op.metrics);
	if (!op.queues || !op.metrics)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	/* Options may follow the operand; "--" ends them (consume's COMMAND). */
	int ac = argc - 1, ch;
	char **av = argv + 1;
	while ((ch = cli_getopt(ac, av, "hVvo:", longopts)) != -1) {
		const char *name;
		char buf[64];
		if (ch != 'h' && ch != 'V' && ch != '?' && !takes_option(sub, ch, &name, buf, sizeof buf))
			cli_bad_usage("%s takes no %s", sub, name);
		switch (ch) {
		case 'h':
			usage(stdout);
			free(op.queues);
			free(op.metrics);
			return 0;
		case 'V':
			printf("%s %s\n", prog, GRPO_VERSION);
			free(op.queues);
			free(op.metrics);
			return 0;
		case 'v':
			op.verbose = 1;
			break;
		case O_ARCHIVE:
			op.archive = cli_dir("--archive", optarg);
			break;
		case O_FROM:
			op.w.from = (int64_t)cli_uint("--from", optarg, CLI_STEP_MAX);
			break;
		case O_JSON:
			op.json = 1;
			break;
		case O_METRICS:
			op.metrics[op.nmetrics++] = cli_path("--metrics", optarg);
			break;
		case 'o':
			op.output = cli_path(CLI_OUTPUT, optarg);
			break;
		case O_TSV:
			op.tsv = 1;
			break;
		case O_KEEP:
			op.keep = (long)cli_uint("--keep-last", optarg, LONG_MAX);
			break;
		case O_LEASE:
			op.lease = (long)cli_whole_seconds("--lease", optarg, 1, LONG_MAX);
			break;
		case O_POLL:
			op.w.poll = cli_seconds("--poll", optarg, 1e7);
			op.w.follow = 1;
			break;
		case O_QUEUE:
			op.queues[op.nqueues++] = cli_path("--queue", optarg);
			break;
		case O_RESCAN:
			op.w.rescan = cli_seconds("--rescan", optarg, 1e7);
			break;
		case O_TMP_AGE:
			op.tmp_age = (long)cli_whole_seconds("--tmp-age", optarg, 0, LONG_MAX);
			break;
		case O_TO:
			op.w.to = (int64_t)cli_uint("--to", optarg, CLI_STEP_MAX);
			break;
		case O_WATCH:
			op.w.follow = 1;
			break;
		default:
			cli_usage_hint();
			free(op.queues);
			free(op.metrics);
			return 2;
		}
	}
	char **rest = av + optind;
	int nrest = ac - optind;
	if (nrest < 1)
		cli_bad_usage("%s: missing operand", sub);
	/* consume's operands after its queue are the command's */
	cli_path_operands(rest, strcmp(sub, "consume") ? nrest : 1);
	if (op.w.rescan > 0 && !op.w.follow)   /* a run over the files waiting lists them once */
		cli_bad_usage("%s: --rescan goes with --watch (or --poll)", sub);
	if (op.w.from >= 0 && op.w.to >= 0 && op.w.from > op.w.to)
		cli_bad_usage("%s: --from is after --to", sub);
	int r;
	if (!strcmp(sub, "consume")) {
		if (nrest < 2)
			cli_bad_usage("%s: missing COMMAND (after --)", sub);
		r = cmd_consume(rest[0], rest + 1, nrest - 1, &op);
	} else if (!strcmp(sub, "quarantine")) {
		r = cmd_quarantine(rest, nrest, &op);
	} else {
		if (nrest > 1)
			cli_bad_usage("unexpected operand: %s", rest[1]);
		if (!strcmp(sub, "status")) {
			r = cmd_status(rest[0], &op);
		} else if (!strcmp(sub, "plot")) {
			if (op.tsv && op.output)
				cli_bad_usage("%s: -o draws a PNG, --tsv prints the table: one or the other", sub);
			if (op.output && !strcmp(op.output, "-") && isatty(STDOUT_FILENO))
				cli_bad_usage("%s: -o -: standard output is a terminal; pipe it, or give -o FILE.png", sub);
			r = cmd_plot(rest[0], &op);
		} else if (!strcmp(sub, "recover")) {
			r = cmd_recover(rest[0], &op);
		} else {
			if (op.keep < 0)
				cli_bad_usage("%s: --keep-last is required", sub);
			r = cmd_gc(rest[0], &op);
		}
	}
	free(op.queues);
	free(op.metrics);
	return r;
}
