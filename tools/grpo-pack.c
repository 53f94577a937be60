/*
 * grpo-pack: scored groups in, balanced micro-batches for every trainer
 * rank out. See grpo-pack(1).
 *
 * Reads spool files (named, or standard input) and spool queues (a
 * directory such as SPOOL/scored, consumed through claims), buffers the
 * trajectories and chooses each step's sequences (lib/pack/packbuf.h), and
 * hands them to lib/pack/packstep.h, which packs and publishes. An input file
 * taken from a queue is retired only after every one of its sequences is
 * in a published step; on any error the claims still held are released,
 * so the files wait for the next run. What is left here: options, inputs
 * and outputs, the --watch loop, and what is said on standard error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "pack/packbuf.h"
#include "pack/packstep.h"
#include "data/sfile.h"
#include "spool/watch.h"

#include "cli.h"

static const char *prog = "grpo-pack";

struct opts {
	uint32_t seq_len, ranks, pad;
	int64_t step;
	int step_given;
	uint64_t batch_size, batch_tokens, min_tokens;
	long max_lag;             /* -1: none */
	enum packbuf_overlong overlong;
	int keep_groups, separate_runs, watch, verbose, flush;
	double fill_target;       /* 0: none */
	double timeout, poll, rescan;   /* seconds; 0: watch.h's defaults */
	long lease;               /* recorded in claims; 0: the default */
	const char *metrics, *out, *model;
	int flops;
};

struct state {
	struct opts o;
	struct packstep_opt po;
	struct packbuf b;              /* the trajectories read, not yet published */
	FILE *metrics;
	char cap_text[128];            /* the capacity in messages, in the user's terms */
	struct sfile_writer w;
	int writer_open;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-pack --seq-len T [--ranks W] [--pad-multiple P] [--step N]\n"
		"                 [--batch-size B | --batch-tokens K] [--cost tokens|flops --model DIR]\n"
		"                 [--max-lag L] [--overlong error|skip|truncate] [--keep-groups]\n"
		"                 [--fill-target F] [--flush]\n"
		"                 [--separate-runs] [--watch [--min-tokens M] [--timeout S]\n"
		"                 [--poll S] [--rescan S]] [--lease S]\n"
		"                 [--metrics FILE] [-v] [-o SPOOL/batches] [FILE|QUEUE ...]\n"
		"Pack scored groups into micro-batches of at most T tokens, the same number for\n"
		"each of W trainer ranks, balanced by cost. Inputs: spool files, '-' or none for\n"
		"standard input, or queue directories (SPOOL/scored). Output: -o QUEUE publishes\n"
		"QUEUE/step_N/rank_X/mb_NNNN.zst then QUEUE/step_N/DONE; else standard output.\n"
		"  -T, --seq-len T         tokens per micro-batch, padding included (required)\n"
		"  -W, --ranks W           trainer ranks (1)\n"
		"  -P, --pad-multiple P    pad each micro-batch to a multiple of P, within T (1)\n"
		"  -s, --step N            the first step to write (after the newest DONE in -o, else 1)\n"
		"  -b, --batch-size B      sequences per step (without it and -k: all input, one step)\n"
		"  -k, --batch-tokens K    tokens per step\n"
		"  -c, --cost KIND         balance ranks by tokens (default) or flops (needs --model)\n"
		"  -m, --model DIR         model directory whose config.json gives the FLOP cost\n"
		"  -l, --max-lag L         drop trajectories with policy_version < N-1-L\n"
		"  -O, --overlong HOW      a sequence longer than T: error (default), skip, truncate\n"
		"  -g, --keep-groups       a group's sequences stay in one step\n"
		"  -f, --fill-target F     carry sequences that would only part-fill a last round of W\n"
		"                          micro-batches to the next step, so steps fill to about F\n"
		"  -F, --flush             queues without --watch: pack the rest as a last short step\n"
		"                          (default: only full steps, the rest stays queued)\n"
		"  -r, --separate-runs     no micro-batch mixes runs\n"
		"  -w, --watch             keep consuming the input queue, pack each step when ready\n"
		"  -M, --min-tokens M      with --watch and no batch size: tokens that make a step (W*T)\n"
		"  -t, --timeout S         with --watch: pack what is buffered after S idle seconds\n"
		"  -p, --poll S            list the queue every S seconds instead of inotify (implies -w)\n"
		"  -R, --rescan S          with --watch and inotify: list the whole queue every S s (300)\n"
		"  -L, --lease S           the lease recorded in input claims (3600)\n"
		"  -x, --metrics FILE      append one JSON line of metrics per step ('-': stdout, with -o)\n"
		"  -v, --verbose           metrics lines on standard error too\n"
		"  -o, --output QUEUE      publish into QUEUE (SPOOL/batches) instead of stdout\n"
		"  -h, --help              this text\n"
		"  -V, --version           the version\n");
}

/* ---- steps ---- */

static void emit_metrics(struct state *s, const struct buf *m)
{
	if (s->metrics && (fwrite(m->data, 1, m->len, s->metrics) != m->len || fflush(s->metrics) != 0))
		cli_warn("%s: %s", s->o.metrics, strerror(errno));
	if (s->o.verbose)
		fwrite(m->data, 1, m->len, stderr);
}

/*
 * What was dropped or truncated for step N, one line on standard error
 * whatever -v says (a dropped sequence is never silent), and with nothing
 * left to pack a metrics line all the same. Then the counts start again.
 */
static void report_drops(struct state *s, int packed)
{
	const struct packstep_drops *d = &s->b.drops;
	if (!packstep_drops_any(d))
		return;
	char line[512];
	packbuf_drops_text(&s->b, s->o.step, line, sizeof line);
	cli_warn("step %lld: %s", (long long)s->o.step, line);
	if (!packed) {
		struct buf m = { 0 };
		if (packstep_drops_metrics(&m, s->o.step, d) == 0)
			emit_metrics(s, &m);
		buf_free(&m);
	}
	packbuf_drops_reported(&s->b);
}

/*
 * Sequences from a queue sampled from a policy after N-1, packed into step
 * N: a scored queue ahead of the batches queue (a --step set too low, a
 * batches queue started afresh), which trains a policy on another's
 * future. Packed, as nothing says which step was meant, but never unsaid.
 * Plain files are left alone: their versions are whatever an import gave.
 */
static void warn_future(const struct state *s, const struct packbuf_step *t)
{
	if (t->n_in == 0)
		return;
	uint32_t n = 0;
	int64_t newest = -1;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->seq[i].t->policy_version > s->o.step - 1) {
			n++;
			if (t->seq[i].t->policy_version > newest)
				newest = t->seq[i].t->policy_version;
		}
	if (n)
		cli_warn("step %lld: warning: %u sequence%s sampled from policy versions after %lld (up to "
			 "%lld): is the batches queue behind the scored one (--step)?", (long long)s->o.step,
			 n, n == 1 ? "" : "s", (long long)s->o.step - 1, (long long)newest);
}

/*
 * Sequences scored without a reference model packed beside ones scored
 * with it: their micro-batches carry no ref_logprobs (mb_build), so that
 * grpo-step --beta refuses them rather than take 0 for the reference.
 */
static void warn_mixed_ref(const struct state *s, const struct packbuf_step *t)
{
	uint32_t without = 0;
	for (uint32_t i = 0; i < t->n; i++)
		without += t->seq[i].t->ref_logprobs == NULL;
	if (without > 0 && without < t->n)
		cli_warn("step %lld: warning: %u of its %u sequences %s no reference logprobs: %s, "
			 "and grpo-step --beta will refuse %s; score every sequence against the same reference, or "
			 "none", (long long)s->o.step, without, t->n, without == 1 ? "has" : "have",
			 without == 1 ? "the micro-batch holding it carries none" : "the micro-batches holding them carry none",
			 without == 1 ? "it" : "them");
}

/* Pack and publish one step from the buffer; 0 when the buffer was empty.
 * flush: the whole selection goes, whatever --fill-target says. */
static int pack_step(struct state *s, int flush, struct err *e)
{
	struct packbuf *b = &s->b;
	struct packbuf_step t;
	int r = packbuf_take(b, s->o.step, flush, &s->po, &t, e);
	if (r <= 0) {
		if (r == 0)
			report_drops(s, 0);
		return r < 0 || packbuf_retire(b, e) < 0 ? -1 : 0;
	}
	struct packstep_stats st;
	if (packstep_run(&s->po, s->o.step, t.seq, t.n, b->runs, b->n_runs, b->turn, s->o.batch_size,
			 t.in, t.n_in, t.job, &b->drops, &st, e) < 0) {
		packstep_stats_free(&st);
		packbuf_step_free(&t);
		return -1;
	}
	if (st.rolled_back)
		cli_warn("step %lld: rolled back the %u file%s that a packer which died or failed "
			 "publishing it had left without DONE", (long long)s->o.step, st.rolled_back,
			 st.rolled_back == 1 ? "" : "s");
	struct buf m = { 0 };
	if (packstep_metrics(&m, &st, b->runs, b->n_runs, &b->drops) == 0)
		emit_metrics(s, &m);
	buf_free(&m);
	packstep_stats_free(&st);
	report_drops(s, 1);
	warn_future(s, &t);
	warn_mixed_ref(s, &t);
	/* the step is published: forget its sequences, retire finished inputs */
	packbuf_commit(b, &t);
	s->o.step++;
	return packbuf_retire(b, e) < 0 ? -1 : 1;
}

/*
 * End of input, or --watch stopped by a signal. The full steps buffered go
 * out (less what --fill-target carries; without a batch size and without
 * --watch all input is one full step). The rest is packed as a last, short
 * step, unless it all came from queues and neither --watch nor --flush was
 * given: then it stays queued, its files released (the manifest's partial
 * list says which of their sequences are packed already), so that a cron
 * job publishes only full steps and the next run goes on from there. The
 * drops of the files released are counted again when they are read again,
 * so only the others are reported now.
 */
static int finish_input(struct state *s, struct err *e)
{
	struct packbuf *b = &s->b;
	int hold = !s->o.watch && !s->o.flush;
	for (size_t i = 0; i < b->n && hold; i++)
		hold = b->ent[i].src >= 0;
	if (!s->o.watch && !s->o.batch_size && !s->o.batch_tokens) {
		if (b->n > 0 && pack_step(s, 0, e) < 0)
			return -1;
	} else {
		while (b->n > 0 && packbuf_ready(b, s->o.step))
			if (pack_step(s, 0, e) < 0)
				return -1;
	}
	if (hold && b->n > 0) {
		if (s->o.verbose)
			cli_warn("%zu sequence%s left queued for a later step (--flush packs %s now)",
				 b->n, b->n == 1 ? "" : "s", b->n == 1 ? "it" : "them");
		packbuf_hold(b);
		report_drops(s, 0);
		return 0;
	}
	int r;
	while ((r = pack_step(s, 1, e)) > 0)
		;
	return r;
}

/* ---- inputs ---- */

static int consume_queue(struct state *s, const char *queue, int follow, struct err *e)
{
	if (s->o.verbose)
		cli_warn_misnamed(queue);
	struct watch_opt wo = WATCH_OPT_INIT;
	wo.follow = follow;
	wo.signals = follow;
	wo.poll = s->o.poll;
	wo.rescan = s->o.rescan;
	wo.lease = s->o.lease;
	struct watch *w = watch_open(queue, &wo, e);
	if (!w)
		return -1;
	struct claim *c, held;
	int r;
	for (;;) {
		if (follow && s->o.timeout > 0)
			watch_deadline(w, s->o.timeout);
		r = watch_next(w, &c, e);
		if (r < 0)
			break;
		if (r == 0) {
			if (follow && watch_timed_out(w) && !watch_stopped(w)) {
				if ((r = watch_renew(w, e)) < 0 || (r = pack_step(s, 1, e)) < 0)
					break;
				continue;
			}
			break;
		}
		watch_detach(w, &held);
		if ((r = packbuf_read_claim(&s->b, &held, e)) < 0)
			break;
		if (r == 1)
			cli_warn("warning: %s", e->msg);
		/* the claims held across steps are renewed by watch_next while it
		 * waits, and here between the steps packed without waiting */
		while (follow && packbuf_ready(&s->b, s->o.step))
			if ((r = watch_renew(w, e)) < 0 || (r = pack_step(s, 0, e)) < 0)
				goto done;
	}
done:
	if (s->o.verbose && follow) {
		struct buf line = { 0 };
		if (watch_summary(w, 1, &line) == 0)
			cli_warn("%s: %s", queue, (const char *)line.data);
		buf_free(&line);
	}
	watch_close(w);
	return r < 0 ? -1 : 0;
}

/* --overlong's words, in the enum's order (cli_word). */
static const char *const overlong_words[] = {
	[PACKBUF_OVER_ERROR] = "error", [PACKBUF_OVER_SKIP] = "skip", [PACKBUF_OVER_TRUNCATE] = "truncate", NULL
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "seq-len", 1, 0, 'T' }, { "ranks", 1, 0, 'W' }, { "pad-multiple", 1, 0, 'P' },
		{ "step", 1, 0, 's' }, { "batch-size", 1, 0, 'b' }, { "batch-tokens", 1, 0, 'k' },
		{ "cost", 1, 0, 'c' }, { "model", 1, 0, 'm' }, { "max-lag", 1, 0, 'l' },
		{ "overlong", 1, 0, 'O' }, { "keep-groups", 0, 0, 'g' }, { "separate-runs", 0, 0, 'r' },
		{ "watch", 0, 0, 'w' }, { "min-tokens", 1, 0, 'M' }, { "timeout", 1, 0, 't' },
		{ "metrics", 1, 0, 'x' }, { "verbose", 0, 0, 'v' }, { "output", 1, 0, 'o' },
		{ "flush", 0, 0, 'F' }, { "fill-target", 1, 0, 'f' }, { "poll", 1, 0, 'p' }, { "rescan", 1, 0, 'R' }, { "lease", 1, 0, 'L' },
		{ "help", 0, 0, 'h' }, { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
	};
	int c;
	o->ranks = 1;
	o->pad = 1;
	o->max_lag = -1;
	while ((c = cli_getopt(argc, argv, "T:W:P:s:b:k:c:m:l:O:grwM:t:x:vo:p:R:L:Ff:hV", lo)) != -1) {
		switch (c) {
		case 'T': o->seq_len = (uint32_t)cli_positive("--seq-len", optarg, 1u << 30); break;
		case 'W': o->ranks = (uint32_t)cli_positive("--ranks", optarg, 65536); break;
		case 'P': o->pad = (uint32_t)cli_positive("--pad-multiple", optarg, 1u << 20); break;
		case 's': o->step = (int64_t)cli_uint("--step", optarg, CLI_STEP_MAX); o->step_given = 1; break;
		case 'b': o->batch_size = cli_positive("--batch-size", optarg, UINT64_MAX); break;
		case 'k': o->batch_tokens = cli_positive("--batch-tokens", optarg, UINT64_MAX); break;
		case 'c': o->flops = cli_word("--cost", optarg, (const char *const[]){ "tokens", "flops", NULL }); break;
		case 'm': o->model = cli_path("--model", optarg); break;
		case 'l': o->max_lag = (long)cli_uint("--max-lag", optarg, 1u << 30); break;
		case 'O': o->overlong = (enum packbuf_overlong)cli_word("--overlong", optarg, overlong_words); break;
		case 'g': o->keep_groups = 1; break;
		case 'r': o->separate_runs = 1; break;
		case 'w': o->watch = 1; break;
		case 'M': o->min_tokens = cli_positive("--min-tokens", optarg, UINT64_MAX); break;
		case 't': o->timeout = cli_seconds("--timeout", optarg, 1e7); break;
		case 'p': o->poll = cli_seconds("--poll", optarg, 1e7); o->watch = 1; break;
		case 'F': o->flush = 1; break;
		case 'f': o->fill_target = cli_number("--fill-target", optarg, 0, 1, CLI_ABOVE_MIN); break;
		case 'R': o->rescan = cli_seconds("--rescan", optarg, 1e7); break;
		case 'L': o->lease = (long)cli_whole_seconds("--lease", optarg, 1, LONG_MAX); break;
		case 'x': o->metrics = cli_path("--metrics", optarg); break;
		case 'v': o->verbose = 1; break;
		case 'o': o->out = cli_dir(CLI_OUTPUT, optarg); break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("%s %s\n", prog, GRPO_VERSION); exit(0);
		default: cli_usage_hint(); return -1;
		}
	}
	cli_path_operands(argv + optind, argc - optind);
	const char *why = NULL;
	if (!o->seq_len)
		why = "--seq-len is required";
	else if (o->batch_size && o->batch_tokens)
		why = "--batch-size and --batch-tokens exclude each other";
	else if (o->flops && !o->model)
		why = "--cost flops needs --model DIR";
	else if (o->model && !o->flops)
		why = "--model DIR goes with --cost flops (the default cost, tokens, reads no model)";
	else if (o->metrics && !strcmp(o->metrics, "-") && !o->out)
		why = "--metrics -: without -o standard output carries the micro-batches; give -o QUEUE or --metrics FILE";
	else if (o->pad > o->seq_len)
		why = "--pad-multiple is larger than --seq-len";
	else if (o->out && o->step_given && o->step == 0)   /* policy/step_0 is the initial model */
		why = "--step 0 with -o: grpo-step trains steps from 1, and would never train step 0";
	else if (!o->watch && (o->min_tokens || o->timeout > 0 || o->rescan > 0))
		why = "--min-tokens, --timeout and --rescan go with --watch";
	else if (o->min_tokens && (o->batch_size || o->batch_tokens))
		why = "--min-tokens goes with neither --batch-size nor --batch-tokens, which say when a step is ready";
	if (why)
		cli_bad_usage("%s", why);
	return 0;
}

/* One named file or standard input, read whole into the buffer (cli_inputs). */
static int read_input(void *ctx, const struct cli_input *in, struct err *e)
{
	struct state *s = ctx;
	return packbuf_read_fd(&s->b, in->fd, in->name, -1, e);
}

/* The options that decide which sequences go into which step, as text:
 * part of the plain inputs' job identity (packbuf_job_settle). */
static void job_opts(const struct state *s, char *out, size_t size)
{
	const struct opts *o = &s->o;
	snprintf(out, size, "T=%u W=%u P=%u b=%llu k=%llu l=%ld O=%d g=%d r=%d f=%.17g cost=%.17g,%.17g",
		 o->seq_len, o->ranks, o->pad, (unsigned long long)o->batch_size,
		 (unsigned long long)o->batch_tokens, o->max_lag, (int)o->overlong, o->keep_groups,
		 o->separate_runs, o->fill_target, s->po.cost.a, s->po.cost.b);
}

int main(int argc, char **argv)
{
	struct state s;
	struct err e = { 0 };
	memset(&s, 0, sizeof s);
	prog = cli_init(argv[0], "--seq-len T [OPTION]... [-o SPOOL/batches] [FILE | QUEUE]...");
	if (parse_args(argc, argv, &s.o) < 0)
		return CLI_EXIT_USAGE;
	struct opts *o = &s.o;
	int status = 1, lock_fd = -1;
	const char *same = cli_input_is_output(argv + optind, argc - optind, o->out);
	if (same)
		cli_bad_usage("%s: the input queue is the output queue (-o %s): its micro-batches would be read "
			      "back as input; -o names the next queue (SPOOL/batches)", same, o->out);
	if (o->out)   /* standard output is a look, which consumes nothing */
		cli_refuse_queue_files(argv + optind, argc - optind);

	/* Each micro-batch's length is padded to a multiple of P within T, so
	 * the usable capacity is T rounded down to a multiple of P. */
	s.po.seq_len = o->seq_len - o->seq_len % o->pad;
	s.po.ranks = o->ranks;
	s.po.pad_multiple = o->pad;
	s.po.cost = (struct pack_cost){ 1, 0 };
	s.po.separate_runs = o->separate_runs;
	s.po.queue = o->out;
	s.po.level = 1;
	if (!o->min_tokens)
		o->min_tokens = (uint64_t)o->ranks * s.po.seq_len;
	s.po.seq_len_given = o->seq_len;
	if (s.po.seq_len == o->seq_len)
		snprintf(s.cap_text, sizeof s.cap_text, "--seq-len %u", o->seq_len);
	else
		snprintf(s.cap_text, sizeof s.cap_text, "%u tokens (--seq-len %u rounded down to a multiple of "
			 "--pad-multiple %u)", s.po.seq_len, o->seq_len, o->pad);
	packbuf_init(&s.b, &(struct packbuf_opt){ s.po.seq_len, s.cap_text, o->overlong, o->max_lag, o->keep_groups,
						  o->batch_size, o->batch_tokens, o->min_tokens, o->fill_target });
	if (o->flops && packstep_cost_load(o->model, &s.po.cost, &e) < 0)
		goto fail;
	/* One packer per output queue, for the whole run: the step number and
	 * the carried-over progress come from the newest manifest, so two
	 * packers would publish the same step from different sequences. */
	if (o->out) {
		int r = packstep_lock(o->out, &lock_fd, &e);
		if (r < 0)
			goto fail;
		if (r == 1) {
			cli_warn("%s: another grpo-pack is publishing into this queue (it holds "
				 "%s/.lock); try again later", o->out, o->out);
			status = CLI_EXIT_LATER;
			goto fail_quiet;
		}
	}
	/* From the newest manifest, whatever --step says: it alone holds what
	 * was packed of the files left queued and of an unfinished job. */
	int64_t next = 1;
	if (o->out && packstep_next_step(o->out, &next, &e) < 0)
		goto fail;
	if (!o->step_given)
		o->step = next;
	s.po.newest_done = next - 1;
	if (o->out && packbuf_resume(&s.b, o->out, next, &e) < 0)
		goto fail;
	int nargs = argc - optind, queues = 0;
	const char **qv = calloc((size_t)nargs + 1, sizeof *qv);
	if (!qv) {
		err_set(&e, "out of memory");
		goto fail;
	}
	for (int i = 0; i < nargs; i++)
		if (cli_is_queue(argv[optind + i]))
			qv[queues++] = argv[optind + i];
	int carried = o->out ? packbuf_carry(&s.b, qv, (size_t)queues, &e) : 0;
	free(qv);
	queues = 0;
	if (carried < 0)
		goto fail;
	if (o->metrics && !(s.metrics = strcmp(o->metrics, "-") ? fopen(o->metrics, "a") : stdout)) {
		err_sys(&e, "%s", o->metrics);
		goto fail;
	}
	if (!o->out) {
		if (isatty(1)) {
			cli_warn("standard output is a terminal; use -o QUEUE or a pipe");
			return 2;
		}
		if (sfile_writer_init(&s.w, sfile_sink_fd, (void *)(intptr_t)1, 1, &e) < 0)
			goto fail;
		s.writer_open = 1;
		s.po.writer = &s.w;
	}

	/* inputs: named files and stdin first, then queues */
	for (int i = 0; i < (nargs ? nargs : 1); i++) {
		const char *a = nargs ? argv[optind + i] : "-";
		if (cli_is_queue(a)) {
			queues++;
		} else if (o->watch) {
			cli_warn("%s: --watch consumes queue directories only", a);
			status = 2;
			goto fail_quiet;
		}
	}
	int read = cli_inputs(argv + optind, nargs, cli_is_queue, 0, read_input, &s);
	if (read != 0) {
		status = read;
		goto fail_quiet;
	}
	if (o->watch && queues != 1) {
		cli_warn("--watch needs exactly one queue directory");
		status = 2;
		goto fail_quiet;
	}
	char jo[256];
	job_opts(&s, jo, sizeof jo);
	int settled = packbuf_job_settle(&s.b, o->out, jo, o->step, &e);
	if (settled < 0) {
		if (o->out)
			cli_warn("%s: %s", o->out, e.msg);
		else
			cli_warn("%s", e.msg);
		status = cli_failure_status(e.errnum);
		goto fail_quiet;
	}
	if (settled == 1 && o->verbose)
		cli_warn("%s: this input, with these options, is published already (job %016llx, "
			 "from step %lld); nothing of it is packed again", o->out,
			 (unsigned long long)s.b.job.hash, (long long)s.b.job.published_from);
	for (int i = 0; i < nargs; i++)
		if (cli_is_queue(argv[optind + i]) && consume_queue(&s, argv[optind + i], o->watch, &e) < 0)
			goto fail;
	if (finish_input(&s, &e) < 0)
		goto fail;
	if (s.writer_open && sfile_writer_finish(&s.w, &e) < 0)
		goto fail;
	status = 0;
	goto done;
fail:
	cli_warn("%s", e.msg);
	status = cli_failure_status(e.errnum);
fail_quiet:
	packbuf_release(&s.b);
done:
	if (lock_fd >= 0)
		close(lock_fd);
	if (s.writer_open)
		sfile_writer_free(&s.w);
	if (s.metrics && s.metrics != stdout)
		fclose(s.metrics);
	packbuf_free(&s.b);
	return status;
}
