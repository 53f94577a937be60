/*
 * grpo-score: rollout groups in, scored groups out (rewards, advantages,
 * reference logprobs). See grpo-score(1).
 *
 * Each input (a spool file or a file claimed from a queue) is read whole,
 * scored as one batch by lib/score/scorer.h, and published as one file (or
 * written to standard output) only when every group of it is scored, so no
 * group is ever half-scored or split. Standard input is streamed instead,
 * group by group (score_stream; those already read together, for the
 * copies of a reward program), and still published as one file. A
 * claimed input is retired only after its output is published, and
 * released on any error, so it waits for the next run. The output keeps
 * the input's step_N/rank_X and name, so a re-run after a crash publishes
 * the same name and the copy is dropped (spool.h). Into -o, each input is
 * recorded by the hash of its trajectories (scoreio.h), so that a copy of
 * one under any name is not scored again (scored_before).
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
#include "data/sfile.h"
#include "data/trajhash.h"
#include "model/model_gpu.h"
#include "model/tokenizer.h"
#include "score/scored.h"
#include "score/scoreio.h"
#include "score/scorer.h"
#include "spool/watch.h"

#include "cli.h"

static const char *prog = "grpo-score";

struct opts {
	struct reward_spec rewards[16];
	uint32_t n_rewards;
	struct reward_spec cmd_weights[16];   /* the reward program's, by name */
	uint32_t n_cmd_weights;
	struct reward_opt ropt;
	const char *correct_by;     /* cosine, kimi-length: the reward that says right */
	const char *reward_cmd, *ref, *tokenizer, *out, *metrics;
	double reward_timeout, success_threshold, poll;
	uint32_t reward_jobs;       /* copies of the reward program */
	int reward_groups;          /* the program asked once per group */
	struct adv_opt adv;
	int drop_zero_std, watch, verbose, fp32;
	enum model_device device;   /* as asked; resolved in main() where it matters */
	long ref_tokens, lease;
};

struct state {
	struct opts o;
	struct scorer_opt so;
	struct rewardpool cmd;
	struct reflp ref;
	struct tokenizer *tok;
	FILE *metrics;
	struct sfile_writer w;      /* standard output */
	int writer_open;
	struct scoreio_seen seen;   /* group ids of earlier inputs */
	struct progress pg;         /* on a terminal: groups scored */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-score [--reward NAME[=WEIGHT]]...\n"
		"                  [--reward-cmd CMD [--reward-timeout S] [--reward-jobs N]\n"
		"                               [--reward-groups]]\n"
		"                  [--success-threshold X] [--max-len N [--overlong-buffer N]]\n"
		"                  [--correct-by NAME] [--cosine-values RS,RL,WS,WL] [--ngram N]\n"
		"                  [--answer-after-think]\n"
		"                  [--advantage grpo|dr_grpo|rloo|batch] [--std unbiased|biased] [--std-eps E]\n"
		"                  [--combine sum-then-normalize|normalize-then-sum] [--drop-zero-std]\n"
		"                  [--ref MODEL_DIR|SPOOL/policy|none [--ref-tokens N]]\n"
		"                  [--device auto|cpu|cuda [--precision bf16|fp32]]\n"
		"                  [--tokenizer FILE]\n"
		"                  [--watch [--poll S]] [--lease S] [--metrics FILE] [-v] [-o SPOOL/scored]\n"
		"                  [FILE|QUEUE ...]\n"
		"Score rollout groups: rewards, group advantages, reference logprobs. Inputs: spool files,\n"
		"'-' or none for standard input, or queue directories (SPOOL/rollouts), claimed file by file.\n"
		"  -r, --reward NAME[=W]      a built-in reward: gsm8k boxed math format think tags length\n"
		"                             exact repetition steps cosine kimi-length (weight 1),\n"
		"                             or the weight of a reward the --reward-cmd program names\n"
		"  -c, --reward-cmd CMD       a reward program speaking JSON lines (grpo-score(1))\n"
		"  -T, --reward-timeout S     seconds the program may take per answer (60)\n"
		"      --reward-jobs N        copies of the program, each given one request at a time (1)\n"
		"      --reward-groups        ask the program once per group, for rewards over the whole group\n"
		"  -s, --success-threshold X  a reward at or above X is a success (1)\n"
		"  -m, --max-len N            length, cosine: the longest response, in tokens\n"
		"  -b, --overlong-buffer N    length: tokens before --max-len where the penalty starts (0)\n"
		"  -n, --ngram N              repetition: the words in each n-gram (3)\n"
		"      --correct-by NAME      cosine, kimi-length: the reward whose success makes a response\n"
		"                             right (the one of gsm8k, boxed, math, exact given)\n"
		"      --cosine-values RS,RL,WS,WL\n"
		"                             cosine: its value for a right response of no length and of\n"
		"                             --max-len, for a wrong one of no length and of --max-len\n"
		"                             (1,0.5,-1,-0.5)\n"
		"      --answer-after-think   gsm8k, boxed, math, exact: the answer is what follows the\n"
		"                             response's last </think>; without one, 0\n"
		"  -a, --advantage KIND       grpo (default), dr_grpo, rloo, batch\n"
		"  -S, --std KIND             unbiased (n-1, default) or biased (n)\n"
		"  -e, --std-eps E            added to the std (1e-4)\n"
		"  -C, --combine HOW          sum-then-normalize (default) or normalize-then-sum\n"
		"  -z, --drop-zero-std        drop groups whose rewards are all equal\n"
		"  -R, --ref DIR              reference model directory, or SPOOL/policy (its step_0); none\n"
		"  -k, --ref-tokens N         tokens per reference pass (4096)\n"
		"  -d, --device WHERE         where the reference model runs: auto (the GPU when there is one,\n"
		"                             default), cpu, or cuda (exit 69 when there is none)\n"
		"  -P, --precision P          on the GPU: bf16 (default) or fp32\n"
		"  -t, --tokenizer FILE       tokenizer.json (default: the reference model's)\n"
		"  -w, --watch                keep consuming the input queue\n"
		"  -p, --poll S               list the queue every S seconds instead of inotify (implies -w)\n"
		"  -L, --lease S              the lease recorded in input claims (3600)\n"
		"  -x, --metrics FILE         append one JSON line of metrics per input ('-': stdout, with -o)\n"
		"  -v, --verbose              metrics lines on standard error too\n"
		"  -o, --output QUEUE         publish into QUEUE (SPOOL/scored) instead of standard output\n"
		"  -h, --help                 this text\n"
		"  -V, --version              the version\n");
}

/* The words of the tool's own word options (cli_word); the others are lib's
 * (adv_kind_names, adv_combine_names, model_device_names). */
static const char *const std_words[] = { "unbiased", "biased", NULL };   /* std_biased 0, 1 */
static const char *const precision_words[] = { "bf16", "fp32", NULL };   /* fp32 0, 1 */

/* The reward that says whether a response is right, for the rewards that
 * need it (reward_needs_verdict): the one named, else the one answer
 * reward given. Exits with a usage error when there is none to take. */
static void pick_correct_by(struct opts *o, int verdict_given)
{
	if (!verdict_given) {
		if (o->correct_by)
			cli_bad_usage("--correct-by goes with --reward cosine or kimi-length");
		return;
	}
	if (o->correct_by) {
		struct reward_spec r;
		struct err e;
		if (!reward_is_builtin(o->correct_by)) {
			if (!o->reward_cmd)
				cli_bad_usage("--correct-by %s: no built-in reward of that name, and no --reward-cmd to "
					      "answer it", o->correct_by);
			return;
		}
		if (reward_parse(o->correct_by, &r, &e) < 0 || strchr(o->correct_by, '='))
			cli_bad_usage("--correct-by %s: a reward's name, without a weight", o->correct_by);
		uint32_t k = 0;
		while (k < o->n_rewards && o->rewards[k].kind != r.kind)
			k++;
		if (k == o->n_rewards)
			cli_bad_usage("--correct-by %s: give --reward %s too", o->correct_by, o->correct_by);
		if (reward_needs_verdict(r.kind))
			cli_bad_usage("--correct-by %s: that reward needs a verdict itself", o->correct_by);
		return;
	}
	for (uint32_t k = 0; k < o->n_rewards; k++) {
		if (!reward_reads_answer(o->rewards[k].kind))
			continue;
		if (o->correct_by)
			cli_bad_usage("--reward cosine and kimi-length: both %s and %s say whether a response is right; "
				      "choose with --correct-by", o->correct_by, o->rewards[k].name);
		o->correct_by = o->rewards[k].name;
	}
	if (!o->correct_by)
		cli_bad_usage("--reward cosine and kimi-length need a reward that says whether a response is right: "
			      "--reward gsm8k, boxed, math or exact, or --correct-by NAME");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_CORRECT_BY = 256, O_COSINE_VALUES, O_AFTER_THINK, O_REWARD_JOBS, O_REWARD_GROUPS };
	static const struct option lo[] = {
		{ "reward", 1, 0, 'r' }, { "reward-cmd", 1, 0, 'c' }, { "reward-timeout", 1, 0, 'T' },
		{ "reward-jobs", 1, 0, O_REWARD_JOBS }, { "reward-groups", 0, 0, O_REWARD_GROUPS },
		{ "success-threshold", 1, 0, 's' }, { "max-len", 1, 0, 'm' }, { "overlong-buffer", 1, 0, 'b' },
		{ "ngram", 1, 0, 'n' }, { "correct-by", 1, 0, O_CORRECT_BY }, { "cosine-values", 1, 0, O_COSINE_VALUES },
		{ "answer-after-think", 0, 0, O_AFTER_THINK },
		{ "advantage", 1, 0, 'a' }, { "std", 1, 0, 'S' }, { "std-eps", 1, 0, 'e' }, { "combine", 1, 0, 'C' },
		{ "drop-zero-std", 0, 0, 'z' }, { "ref", 1, 0, 'R' }, { "ref-tokens", 1, 0, 'k' },
		{ "tokenizer", 1, 0, 't' }, { "watch", 0, 0, 'w' }, { "poll", 1, 0, 'p' }, { "lease", 1, 0, 'L' },
		{ "metrics", 1, 0, 'x' }, { "verbose", 0, 0, 'v' }, { "output", 1, 0, 'o' },
		{ "device", 1, 0, 'd' }, { "precision", 1, 0, 'P' }, { "help", 0, 0, 'h' }, { "version", 0, 0, 'V' }, { 0, 0, 0, 0 }
	};
	struct err e;
	int c, len_given = 0, rep_given = 0, cos_given = 0, verdict_given = 0, cos_values_given = 0, answer_given = 0;
	int timeout_given = 0, jobs_given = 0, ref_tokens_given = 0, precision_given = 0, device_given = 0;
	o->device = (enum model_device)cli_env_word("GRPO_DEVICE", model_device_names, MODEL_DEVICE_AUTO);
	o->adv = (struct adv_opt)ADV_OPT_INIT;
	o->reward_timeout = 60;
	o->reward_jobs = 1;
	o->success_threshold = 1;
	o->ropt = (struct reward_opt){ .cosine = REWARD_COSINE_DEFAULT };
	o->ref_tokens = 4096;
	while ((c = cli_getopt(argc, argv, "r:c:T:s:m:b:n:a:S:e:C:zR:k:t:wp:L:x:vo:d:P:hV", lo)) != -1) {
		switch (c) {
		case 'r':
			if (!reward_is_builtin(optarg)) {
				if (o->n_cmd_weights == 16)
					cli_bad_usage("at most 16 --reward for the reward program");
				struct reward_spec *w = &o->cmd_weights[o->n_cmd_weights];
				if (reward_parse_program(optarg, w, &e) < 0)
					cli_bad_usage("--reward: %s", e.msg);
				for (uint32_t k = 0; k < o->n_cmd_weights; k++)
					if (strcmp(o->cmd_weights[k].name, w->name) == 0)
						cli_bad_usage("--reward %s given twice", w->name);
				o->n_cmd_weights++;
				break;
			}
			if (o->n_rewards == 16)
				cli_bad_usage("at most 16 --reward");
			if (reward_parse(optarg, &o->rewards[o->n_rewards], &e) < 0)
				cli_bad_usage("--reward: %s", e.msg);
			for (uint32_t k = 0; k < o->n_rewards; k++)
				if (o->rewards[k].kind == o->rewards[o->n_rewards].kind)
					cli_bad_usage("--reward %s given twice", o->rewards[k].name);
			len_given |= o->rewards[o->n_rewards].kind == REWARD_LENGTH;
			cos_given |= o->rewards[o->n_rewards].kind == REWARD_COSINE;
			verdict_given |= reward_needs_verdict(o->rewards[o->n_rewards].kind);
			answer_given |= reward_reads_answer(o->rewards[o->n_rewards].kind);
			rep_given |= o->rewards[o->n_rewards++].kind == REWARD_REPETITION;
			break;
		case 'c': o->reward_cmd = optarg; break;
		case 'T': o->reward_timeout = cli_seconds("--reward-timeout", optarg, 1e6); timeout_given = 1; break;
		case O_REWARD_JOBS:
			o->reward_jobs = (uint32_t)cli_positive("--reward-jobs", optarg, REWARDPOOL_MAX);
			jobs_given = 1;
			break;
		case O_REWARD_GROUPS: o->reward_groups = 1; break;
		case 's': o->success_threshold = cli_number("--success-threshold", optarg, -INFINITY, INFINITY, 0); break;
		case 'm': o->ropt.max_len = (uint32_t)cli_positive("--max-len", optarg, 1u << 30); break;
		case 'b': o->ropt.overlong_buffer = (uint32_t)cli_uint("--overlong-buffer", optarg, 1u << 30); break;
		case 'n': o->ropt.ngram = (uint32_t)cli_positive("--ngram", optarg, 1000); break;
		case O_CORRECT_BY: o->correct_by = optarg; break;
		case O_AFTER_THINK: o->ropt.after_think = 1; break;
		case O_COSINE_VALUES: {
			double *v = o->ropt.cosine;
			int ok = cli_number_list(optarg, v, 4) == 0;
			for (int k = 0; k < 4; k++)
				ok = ok && fabs(v[k]) <= 1e38;   /* stored as floats, as every reward */
			if (!ok)
				cli_bad_value("--cosine-values", "four numbers from -1e38 to 1e38, separated by commas",
					      optarg);
			cos_values_given = 1;
			break;
		}
		case 'a': o->adv.kind = (enum adv_kind)cli_word("--advantage", optarg, adv_kind_names); break;
		case 'S': o->adv.std_biased = cli_word("--std", optarg, std_words); break;
		case 'e': o->adv.std_eps = cli_number("--std-eps", optarg, 0, 1e6, 0); break;
		case 'C': o->adv.combine = (enum adv_combine)cli_word("--combine", optarg, adv_combine_names); break;
		case 'z': o->drop_zero_std = 1; break;
		case 'R': o->ref = strcmp(optarg, "none") == 0 ? NULL : cli_path("--ref", optarg); break;
		case 'k': o->ref_tokens = (long)cli_positive("--ref-tokens", optarg, 1 << 24); ref_tokens_given = 1; break;
		case 't': o->tokenizer = cli_path("--tokenizer", optarg); break;
		case 'w': o->watch = 1; break;
		case 'p': o->poll = cli_seconds("--poll", optarg, 1e7); o->watch = 1; break;
		case 'L': o->lease = (long)cli_whole_seconds("--lease", optarg, 1, 1000000000); break;
		case 'x': o->metrics = cli_path("--metrics", optarg); break;
		case 'v': o->verbose = 1; break;
		case 'o': o->out = cli_dir(CLI_OUTPUT, optarg); break;
		case 'd':
			o->device = (enum model_device)cli_word("--device", optarg, model_device_names);
			device_given = 1;
			break;
		case 'P': o->fp32 = cli_word("--precision", optarg, precision_words); precision_given = 1; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("%s %s\n", prog, GRPO_VERSION); exit(0);
		default: cli_usage_hint(); return -1;
		}
	}
	cli_path_operands(argv + optind, argc - optind);
	const char *why = NULL;
	if (o->n_cmd_weights && !o->reward_cmd) {
		cli_bad_usage("--reward: unknown reward '%s' (built in: " REWARD_BUILTINS
			"; another name is a reward program's, with --reward-cmd)", o->cmd_weights[0].name);
	}
	if (!o->n_rewards && !o->reward_cmd)
		why = "no reward: give --reward NAME or --reward-cmd CMD";
	else if (len_given && !o->ropt.max_len)
		why = "--reward length needs --max-len";
	else if (cos_given && !o->ropt.max_len)
		why = "--reward cosine needs --max-len";
	else if (!len_given && !cos_given && o->ropt.max_len)
		why = "--max-len goes with --reward length or cosine";
	else if (!len_given && o->ropt.overlong_buffer)
		why = "--overlong-buffer goes with --reward length";
	else if (cos_values_given && !cos_given)
		why = "--cosine-values goes with --reward cosine";
	else if (o->ropt.after_think && !answer_given)
		why = "--answer-after-think goes with --reward gsm8k, boxed, math or exact";
	else if (o->ropt.overlong_buffer > o->ropt.max_len)
		why = "--overlong-buffer is larger than --max-len";
	else if (o->ropt.ngram && !rep_given)
		why = "--ngram goes with --reward repetition";
	/* what these set is used by what the other starts, and nothing else */
	else if (timeout_given && !o->reward_cmd)
		why = "--reward-timeout goes with --reward-cmd";
	else if (jobs_given && !o->reward_cmd)
		why = "--reward-jobs goes with --reward-cmd";
	else if (o->reward_groups && !o->reward_cmd)
		why = "--reward-groups goes with --reward-cmd";
	else if (ref_tokens_given && !o->ref)
		why = "--ref-tokens goes with --ref DIR";
	else if (precision_given && !o->ref)
		why = "--precision goes with --ref DIR (the reference model is all that runs on the GPU)";
	else if (o->metrics && !strcmp(o->metrics, "-") && !o->out)
		why = "--metrics -: without -o standard output carries the scored groups; give -o QUEUE or --metrics FILE";
	if (!why)
		pick_correct_by(o, verdict_given);
	if (why)
		cli_bad_usage("%s", why);
	cli_gpu_option("--precision", precision_given, device_given && o->device == MODEL_DEVICE_CPU);
	return 0;
}

/* ---- one input ---- */

/* Where one input's output goes in -o: where the claim or the path says. */
static void place(const char *path, const struct claim *c, const struct group *gs, uint32_t n, int64_t *step,
		  int *rank, char *name, size_t size)
{
	scoreio_place(path, gs, n, step, rank, name, size);
	if (c)
		*step = c->step, *rank = c->rank, snprintf(name, size, "%s", c->name);
}

static int publish(struct state *s, int64_t step, int rank, const char *name, const struct group *gs, uint32_t n,
		   const uint8_t *keep, struct err *e)
{
	int r = scoreio_publish(s->o.out, step, rank, name, gs, n, keep, e);
	if (r == 1 && s->o.verbose)
		cli_warn("%s/step_%lld/rank_%d/%s: already published (a re-run); this copy dropped",
			 s->o.out, (long long)step, rank, name);
	return r;
}

/*
 * Whether -o records an input of these trajectories (hash) as scored
 * already, under whatever name: 1, said (a copy is worth a warning, a
 * re-run, whose output is here, only with -v), 0, or -1. here: the
 * output's name in -o, "step_N/rank_X/NAME"; what: what is not done again.
 */
static int scored_before(struct state *s, const char *name, uint64_t hash, uint64_t seqs, const char *here,
			 const char *what, struct err *e)
{
	char was[PATH_MAX], rec[PATH_MAX];
	int k = scoreio_known(s->o.out, hash, was, sizeof was, e);
	if (k != 1)
		return k;
	if (strcmp(was, here) == 0) {
		if (s->o.verbose)
			cli_warn("%s/%s: already published (a re-run); %s %s", s->o.out, here, name, what);
	} else if (scoreio_record_path(rec, sizeof rec, s->o.out, hash, e) == 0) {
		cli_warn("%s: warning: its %llu sequence%s scored before, into %s/%s (recorded in %s); %s", name,
			 (unsigned long long)seqs, seqs == 1 ? " was" : "s were", s->o.out, was, rec, what);
	}
	return 1;
}

/* Take the judging of an input's trajectories (hash) in -o, waiting while
 * another scorer judges a copy of them (said with -v): the lock's fd, or -1. */
static int judge_alone(struct state *s, const char *name, uint64_t hash, struct err *e)
{
	int fd = scoreio_judging(s->o.out, hash, 0, e);
	if (fd == -2) {
		if (s->o.verbose)
			cli_warn("%s: waiting for another scorer of %s, judging a copy of it", name, s->o.out);
		fd = scoreio_judging(s->o.out, hash, 1, e);
	}
	return fd < 0 ? err_prefix(e, "%s", name) : fd;
}

/* Record an input's trajectories as scored into here, its output being
 * published: a failure fails the input, which then waits to be scored
 * again (its output found published, its metrics line not owed), so that
 * a run after a full disk ends as one that never failed. */
static int remember(struct state *s, const char *name, uint64_t hash, const char *here, struct err *e)
{
	if (scoreio_remember(s->o.out, hash, here, e) < 0)
		return err_prefix(e, "%s: the record of what was scored", name);
	return 0;
}

/* A group seen in an earlier input (or, streamed, earlier in this one) is scored in parts: say so. */
static void note_seen(struct state *s, const char *name, const struct group *g, int streamed)
{
	if (scoreio_seen_add(&s->seen, g) != 1)
		return;
	char gid[64];
	scored_group_text(g, gid, sizeof gid);
	if (streamed)
		cli_warn("%s: group %s came earlier too, apart from these records; each part is "
			 "normalized over its own members", name, gid);
	else
		cli_warn("%s: group %s came in an earlier input too; each part is normalized "
			 "over its own members", name, gid);
}

/*
 * Whether an input whose copy was dropped, its output published by an
 * earlier run, gets a metrics line: only where that run died before
 * writing it, so that no input is counted twice (a crash between
 * publishing and retiring the input gave two lines). Standard input's
 * lines share one name, so the file cannot say: it gets none.
 */
static int line_owed(struct state *s, const char *name, int is_stdin)
{
	struct err e;
	if (!s->metrics || s->metrics == stdout || is_stdin)   /* no file to look in */
		return 0;
	int r = scorer_metrics_has(s->o.metrics, name, &e);
	if (r < 0)
		cli_warn("%s", e.msg);
	return r != 1;
}

/* Members dropped as copies of one before them in their group (a group
 * read twice, its records merged): said always, as grpo-collect says the
 * records it drops, since a file that holds a group twice is worth knowing
 * of, though only the copies are lost. */
static void warn_copies(const char *name, uint64_t n)
{
	if (n)
		cli_warn("%s: warning: %llu sequence%s repeated one before %s in %s group exactly: dropped",
			 name, (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
			 n == 1 ? "its" : "their");
}

/* What an input's scoring found, once it is all published: notes and the
 * metrics line (for a dropped copy, only where line_owed says so). */
static void report(struct state *s, const char *name, const struct scorer_stats *st, int dropped, int is_stdin)
{
	if (st->nonfinite)
		cli_warn("%s: %u non-finite reward%s stored as 0, %s sequence%s advantage 0 (first: "
			 "%s)", name, st->nonfinite, st->nonfinite == 1 ? "" : "s",
			 st->nonfinite == 1 ? "its" : "their", st->nonfinite == 1 ? "'s" : "s'", st->first_nonfinite);
	if (st->singletons)
		cli_warn("%s: %u group%s of one member: no baseline, advantage 0", name,
			 st->singletons, st->singletons == 1 ? "" : "s");
	if (st->min_size != st->max_size)
		cli_warn("%s: group sizes differ (%u to %u); each group is normalized over its own "
			 "members", name, st->min_size, st->max_size);
	struct buf m = { 0 };
	if ((!dropped || line_owed(s, name, is_stdin)) && scorer_metrics(&m, name, st) == 0) {
		if (s->metrics && (fwrite(m.data, 1, m.len, s->metrics) != m.len || fflush(s->metrics) != 0))
			cli_warn("%s: %s", s->o.metrics, strerror(errno));
		if (s->o.verbose)
			fwrite(m.data, 1, m.len, stderr);
	}
	buf_free(&m);
}

static uint64_t count_seqs(const struct group *gs, uint32_t n)
{
	uint64_t k = 0;
	for (uint32_t g = 0; g < n; g++)
		k += gs[g].n;
	return k;
}

static int score_fd(struct state *s, int fd, const char *name, const char *path, const struct claim *c,
		    struct err *e)
{
	struct group *gs = NULL;
	uint32_t n = 0;
	uint8_t *keep = NULL;
	uint64_t copies = 0, hash = 0, seqs = 0;
	int64_t step = 0;
	int rank = 0, known = 0, judging = -1, recorded = 0;
	char oname[256], here[320];
	int r = scoreio_read(fd, name, &gs, &n, &copies, e);
	if (r == 0 && s->o.out) {
		place(path, c, gs, n, &step, &rank, oname, sizeof oname);
		snprintf(here, sizeof here, "step_%lld/rank_%d/%s", (long long)step, rank, oname);
		hash = trajhash_file(gs, n);
		seqs = count_seqs(gs, n);
		if (seqs && ((judging = judge_alone(s, name, hash, e)) < 0 ||
			     (known = scored_before(s, name, hash, seqs, here, "not scored again", e)) < 0))
			r = -1;
	}
	if (r == 0 && !known && !(keep = malloc(n + 1)))
		r = err_set(e, "out of memory");
	struct scorer_stats st;
	int dropped = 0;
	if (r == 0 && !known && (r = scorer_run(&s->so, gs, n, keep, &st, e)) < 0)
		err_prefix(e, "%s", name);
	progress_end(&s->pg);
	if (r == 0 && !known) {
		for (uint32_t g = 0; g < n; g++)
			note_seen(s, name, &gs[g], 0);
		if (s->o.out) {
			dropped = (r = publish(s, step, rank, oname, gs, n, keep, e)) == 1;
			r = r < 0 ? -1 : 0;
		} else if ((r = scoreio_write(&s->w, gs, n, keep, e)) == 0) {
			r = sfile_writer_flush(&s->w, e);
		}
		if (r == 0) {
			warn_copies(name, copies);
			report(s, name, &st, dropped, !path);
			if (s->o.out && seqs)   /* after the metrics line, which a re-run owes until then */
				recorded = (r = remember(s, name, hash, here, e)) == 0;
		}
	}
	if (judging >= 0)
		scoreio_judged(s->o.out, hash, judging, known == 1 || recorded);
	for (uint32_t g = 0; g < n; g++)
		group_free(&gs[g]);
	free(gs);
	free(keep);
	return r;
}

/*
 * The groups of standard input scored together: with several copies of a
 * reward program (--reward-jobs), those the input already holds, up to
 * enough requests for every copy twice over (--reward-groups: a request a
 * group) and STREAM_TOKENS tokens, so that the copies do not wait on one
 * group at a time; else one.
 */
#define STREAM_TOKENS ((uint64_t)1 << 24)

static uint32_t stream_batch(const struct state *s)
{
	return s->so.cmd && s->o.reward_jobs > 1 ? 2 * s->o.reward_jobs : 1;
}

/*
 * Standard input, group by group as it arrives (scoreio.h): each group is
 * scored and written (standard output, flushed) or added to the one file
 * published into -o at the end. The groups already read are scored
 * together (stream_batch), each as if alone: never merged, counted group
 * by group, written in order, flushed one by one, so the output and the
 * metrics are those of one group at a time; a producer that is slow
 * gets each group back as soon as it is read. On error nothing is
 * published into -o; on standard output the groups of the batches before
 * it stay written, whole, and the stream is left unended, so its reader
 * fails rather than take it as all.
 */
static int score_stream(struct state *s, int fd, const char *name, struct err *e)
{
	struct scoreio_stream in;
	struct scoreio_pub pub;
	struct scorer_stats sum;
	struct err re;   /* a read error after a batch's first group: the batch is scored first */
	uint32_t cap = stream_batch(s), n = 0;
	int r = 0, read_err = 0, dropped = 0;
	memset(&sum, 0, sizeof sum);
	struct group *gs = calloc(cap, sizeof *gs);
	struct scorer_stats *st = malloc(cap * sizeof *st);
	uint8_t *keep = malloc(cap);
	if (!gs || !st || !keep)
		r = err_set(e, "out of memory");
	else if (scoreio_stream_open(&in, fd, name, e) < 0)
		r = -1;
	else if (s->o.out && scoreio_pub_open(&pub, s->o.out, e) < 0) {
		scoreio_stream_close(&in);
		r = -1;
	}
	if (r < 0) {
		free(gs);
		free(st);
		free(keep);
		return -1;
	}
	while (!read_err && (r = scoreio_stream_next(&in, &gs[0], e)) > 0) {
		/* what else the input holds, without waiting for it */
		uint64_t asks = s->o.reward_groups ? 1 : gs[0].n, tokens = 0;
		for (n = 1;; n++) {
			for (uint32_t j = 0; j < gs[n - 1].n; j++)
				tokens += gs[n - 1].trajs[j].n_prompt + gs[n - 1].trajs[j].n_response;
			if (n == cap || asks >= cap || tokens >= STREAM_TOKENS)
				break;
			int m = scoreio_stream_ready_next(&in, &gs[n], &re);
			if (m != 1) {
				read_err = m < 0;
				break;
			}
			asks += s->o.reward_groups ? 1 : gs[n].n;
		}
		if ((r = scorer_run_each(&s->so, gs, n, keep, st, e)) < 0)
			err_prefix(e, "%s", name);
		for (uint32_t g = 0; g < n && r == 0; g++) {
			note_seen(s, name, &gs[g], 1);
			scorer_stats_add(&sum, &st[g]);
			if (s->o.out)
				r = scoreio_pub_group(&pub, &gs[g], keep[g], e);
			else if (keep[g] && (r = sfile_write_group(&s->w, &gs[g], e)) == 0)
				r = sfile_writer_flush(&s->w, e);
		}
		for (uint32_t g = 0; g < n; g++)
			group_free(&gs[g]);
		if (r < 0)
			break;
	}
	if (r == 0 && read_err) {   /* after the groups before it, as when read one at a time */
		*e = re;
		r = -1;
	}
	uint64_t copies = in.copies;
	scoreio_stream_close(&in);
	free(gs);
	free(st);
	free(keep);
	/* a copy is known only now, scored already: it is not published again */
	char here[320];
	int known = 0;
	if (s->o.out && r == 0 && sum.seqs) {
		snprintf(here, sizeof here, "step_%lld/rank_0/%s", (long long)pub.step, scoreio_pub_name(&pub));
		if ((known = scored_before(s, name, pub.samples, sum.seqs, here, "not published again", e)) < 0)
			r = -1;
	}
	if (s->o.out && (r < 0 || known))
		scoreio_pub_abort(&pub);
	if (s->o.out && r == 0 && !known) {
		char out[64];
		if ((r = scoreio_pub_commit(&pub, out, sizeof out, e)) == 1 && s->o.verbose)
			cli_warn("%s/step_%lld/rank_0/%s: already published (a re-run); this copy dropped",
				 s->o.out, (long long)pub.step, out);
		dropped = r == 1;
		r = r < 0 ? -1 : 0;
	}
	if (r == 0 && !known) {
		warn_copies(name, copies);
		report(s, name, &sum, dropped, 1);
		if (s->o.out && sum.seqs)
			r = remember(s, name, pub.samples, here, e);
	}
	return r;
}

static int renew(void *w, struct err *e)
{
	return watch_renew(w, e);
}

static int score_queue(struct state *s, const char *queue, struct err *e)
{
	if (s->o.verbose)
		cli_warn_misnamed(queue);
	struct watch_opt wo = WATCH_OPT_INIT;
	wo.follow = s->o.watch;
	wo.signals = s->o.watch;
	wo.poll = s->o.poll;
	wo.lease = s->o.lease;
	struct watch *w = watch_open(queue, &wo, e);
	if (!w)
		return -1;
	struct claim *c;
	int r;
	/* a file may take longer to score than a third of the lease */
	s->so.between = renew;
	s->so.ctx = w;
	while ((r = watch_next(w, &c, e)) > 0) {
		int fd = open(c->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			err_sys(e, "%s", c->path);
			claim_release(c, NULL);
			r = -1;
			break;
		}
		r = score_fd(s, fd, c->path, c->path, c, e);
		close(fd);
		if (r < 0) {
			claim_release(c, NULL);
			break;
		}
		if (claim_retire(c, e) < 0) {
			r = -1;
			break;
		}
	}
	s->so.between = NULL;
	watch_close(w);
	return r < 0 ? -1 : 0;
}

/* One named file, scored whole, or standard input, which may not fit in
 * memory: streamed, unless the advantage needs it whole (cli_inputs). */
static int score_input(void *ctx, const struct cli_input *in, struct err *e)
{
	struct state *s = ctx;
	if (in->is_stdin && s->o.adv.kind != ADV_BATCH)
		return score_stream(s, in->fd, in->name, e);
	return score_fd(s, in->fd, in->name, in->is_stdin ? NULL : in->name, NULL, e);
}

static int setup(struct state *s, struct err *e)
{
	struct opts *o = &s->o;
	int text = o->reward_cmd != NULL;
	for (uint32_t k = 0; k < o->n_rewards; k++)
		text |= reward_needs_text(o->rewards[k].kind);
	if (o->ref) {
		if (reflp_open(&s->ref, o->ref, (int)o->ref_tokens, e) < 0)
			return -1;
		s->so.ref = &s->ref;
		if (o->device == MODEL_DEVICE_CUDA && reflp_use_gpu(&s->ref, !o->fp32, e) < 0)
			return -1;
		if (o->verbose) {
			char where[512] = "the CPU";
			if (s->ref.gpu)
				model_gpu_describe(s->ref.gpu, where, sizeof where);
			cli_warn("reference model %s on %s%s", s->ref.dir, where,
				 s->ref.gpu ? (o->fp32 ? ", fp32" : ", bf16") : "");
		}
	}
	if (text) {
		char path[PATH_MAX + 32];
		if (o->tokenizer)
			snprintf(path, sizeof path, "%s", o->tokenizer);
		else if (o->ref)
			snprintf(path, sizeof path, "%s/tokenizer.json", s->ref.dir);
		else
			return err_set(e, "the rewards read text: give --tokenizer FILE (or --ref DIR with a tokenizer.json)");
		if (!(s->tok = tok_load(path, e)))
			return -1;
		s->so.tok = s->tok;
	}
	if (o->reward_cmd) {
		if (rewardpool_start(&s->cmd, o->reward_cmd, o->reward_jobs, o->reward_timeout, e) < 0)
			return -1;
		s->so.cmd = &s->cmd;
		s->so.cmd_groups = o->reward_groups;
		s->so.cmd_weights = o->cmd_weights;
		s->so.n_cmd_weights = o->n_cmd_weights;
	}
	progress_init(&s->pg, prog, STDERR_FILENO);
	s->so.progress = &s->pg;
	s->so.rewards = o->rewards;
	s->so.n_rewards = o->n_rewards;
	s->so.ropt = o->ropt;
	s->so.adv = o->adv;
	s->so.success_threshold = o->success_threshold;
	s->so.correct_by = o->correct_by;
	s->so.drop_zero_std = o->drop_zero_std;
	if (o->metrics && !(s->metrics = strcmp(o->metrics, "-") ? fopen(o->metrics, "a") : stdout))
		return err_sys(e, "%s", o->metrics);
	return 0;
}

int main(int argc, char **argv)
{
	struct state s;
	struct err e = { 0 };
	memset(&s, 0, sizeof s);
	prog = cli_init(argv[0], "--reward NAME | --reward-cmd CMD [OPTION]... [-o QUEUE] [FILE | QUEUE]...");
	if (parse_args(argc, argv, &s.o) < 0)
		return 2;
	struct opts *o = &s.o;
	/* auto matters only to a reference model: without one, a GPU machine need not load the CUDA library */
	int found = o->ref || o->device == MODEL_DEVICE_CUDA ? model_device_resolve(o->device, &o->device, &e) : 0;
	if (found != 0)
		cli_warn("%s", e.msg);
	if (found < 0)   /* EX_UNAVAILABLE: a script can tell it from a usage error and run on the CPU */
		return 69;
	int status = 1, nargs = argc - optind, queues = 0;
	for (int i = 0; i < nargs; i++)
		queues += cli_is_queue(argv[optind + i]);
	if (o->watch && (queues != 1 || nargs != 1))
		cli_bad_usage("--watch needs exactly one queue directory");
	if (!o->out && isatty(1))
		cli_bad_usage("standard output is a terminal; use -o QUEUE or a pipe");
	const char *same = cli_input_is_output(argv + optind, nargs, o->out);
	if (same)
		cli_bad_usage("%s: the input queue is the output queue (-o %s): each scored file would be dropped as "
			      "published already, and its input retired; -o names the next queue (SPOOL/scored)",
			      same, o->out);
	if (o->out)   /* standard output is a look, which consumes nothing */
		cli_refuse_queue_files(argv + optind, nargs);
	if (setup(&s, &e) < 0)
		goto fail;
	if (!o->out) {
		if (sfile_writer_init(&s.w, sfile_sink_fd, (void *)(intptr_t)1, 3, &e) < 0)
			goto fail;
		s.writer_open = 1;
	}

	/* named files and standard input first, then queues */
	if ((status = cli_inputs(argv + optind, nargs, cli_is_queue, 0, score_input, &s)) != 0)
		goto done;
	for (int i = 0; i < nargs; i++)
		if (cli_is_queue(argv[optind + i]) && score_queue(&s, argv[optind + i], &e) < 0)
			goto fail;
	if (s.writer_open && sfile_writer_finish(&s.w, &e) < 0)
		goto fail;
	status = 0;
	goto done;
fail:
	cli_warn("%s", e.msg);
	status = cli_failure_status(e.errnum);
done:
	if (s.so.cmd && rewardpool_stop(&s.cmd, &e) < 0 && status == 0)
		cli_warn("warning: %s", e.msg);
	if (s.writer_open)
		sfile_writer_free(&s.w);
	if (s.metrics && s.metrics != stdout)
		fclose(s.metrics);
	if (s.so.ref)
		reflp_close(&s.ref);
	tok_free(s.tok);
	scoreio_seen_free(&s.seen);
	return status;
}
