/*
 * grpo-step: one GRPO optimizer step (or several) on packed micro-batches,
 * publishing policy/step_N.
 *
 * Reads BATCHES/step_N once its DONE marker exists, trains on the
 * micro-batches of every rank (lib/train/step.h), or of one with --rank,
 * exchanging gradients with the other ranks' processes (lib/train/gradx.h),
 * and publishes the new checkpoint into the policy queue
 * (lib/train/ckpt.h), then runs --on-publish. The first run publishes the
 * input model as policy/step_0. Step N starts from policy/step_{N-1}, with
 * its optimizer state when it has one.
 */
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "data/done.h"
#include "model/tokenizer.h"
#include "pack/packstep.h"
#include "spool/queue.h"
#include "spool/spool.h"
#include "train/ckpt.h"
#include "train/dtable.h"
#include "train/gradx.h"
#include "train/step.h"

#include "cli.h"

#ifndef GRPO_VERSION
#define GRPO_VERSION "0.1"
#endif

/* Exit status when --on-publish-fail stop stops training (grpo-step(1)). */
#define EXIT_HOOK 3

/* In policy/step_N once --on-publish has succeeded for it: a dot-file, which
 * transformers and the samplers never look at, and which goes with the step. */
#define HOOK_MARK ".on-publish-done"

static const char *prog = "grpo-step";

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: %s --batches QUEUE -o POLICY [--model DIR] [--step N] [--steps K] [--watch]\n"
	        "       [--epochs E] [--ratio token|sequence] [--clip-low X] [--clip-high X]\n"
	        "       [--dual-clip C] [--cispo] [--kl k1|k2|k3|k1+|k3+] [--kl-clamp C] [--beta B]\n"
	        "       [--entropy-coef C] [--tis-cap C] [--loss-agg grpo|dapo|dr_grpo|bnpo] [--max-len N]\n"
	        "       [--lr X] [--warmup-steps N] [--lr-schedule constant|cosine|linear]\n"
	        "       [--total-steps N] [--weight-decay X] [--weight-decay-on matrices|all]\n"
	        "       [--betas B1,B2] [--eps X] [--max-grad-norm X] [--save-dtype float32|bfloat16]\n"
	        "       [--shard-size BYTES] [--keep K] [--save-every K] [--mask-truncated]\n"
	        "       [--rank X [--rank-timeout S]] [--on-publish CMD [--on-publish-fail warn|stop]]\n"
	        "       [--device auto|cpu|cuda [--precision bf16|fp32] [--recompute]] [--threads N]\n"
	        "       [--metrics FILE] [--debug-table FILE [--debug-tokens]] [-v]\n"
	        "Train GRPO steps on the micro-batches of --batches and publish each as POLICY/step_N.\n"
	        "      --batches QUEUE      the micro-batch queue grpo-pack -o writes (required)\n"
	        "  -o, --output POLICY      the policy queue: step_0, the initial model, and the steps (required)\n"
	        "      --model DIR          the initial model, published as step_0 when POLICY has none\n"
	        "      --step N             train step N (default: the one after the newest checkpoint)\n"
	        "      --steps K            train K consecutive steps (1)\n"
	        "      --watch              wait for each step's DONE; without --steps, train until a signal\n"
	        "      --epochs E           optimizer steps over each step's micro-batches (1)\n"
	        "      --ratio KIND         token (default) or sequence (GSPO) ratio\n"
	        "      --clip-low X, --clip-high X  the clip range, each >= 0 (0.2 and 0.2)\n"
	        "      --dual-clip C        dual clip bound, > 1, or 0 for none (0)\n"
	        "      --cispo              CISPO's detached clipped weight instead of PPO clipping\n"
	        "      --kl KIND            KL estimator: k1, k2, k3, or k1+ or k3+ with k2's gradient (k3)\n"
	        "      --kl-clamp C         keep each token's KL estimate within +-C, no gradient past it (0: none)\n"
	        "      --beta B             KL coefficient, >= 0 (0); needs ref_logprobs in every micro-batch\n"
	        "      --entropy-coef C     entropy bonus coefficient (0)\n"
	        "      --tis-cap C          truncated importance sampling cap, >= 0 (0: off)\n"
	        "      --loss-agg HOW       grpo (default), dapo, dr_grpo or bnpo\n"
	        "      --max-len N          dr_grpo's constant length (required by it)\n"
	        "      --lr X               peak learning rate, >= 0 (1e-6)\n"
	        "      --warmup-steps N     linear warmup (0)\n"
	        "      --lr-schedule S      constant (default), cosine or linear (these need --total-steps)\n"
	        "      --total-steps N      the optimizer step at which cosine or linear ends\n"
	        "      --weight-decay X     decoupled weight decay, >= 0 (0)\n"
	        "      --weight-decay-on W  matrices (default; norms and biases undecayed) or all\n"
	        "      --betas B1,B2        AdamW betas, each >= 0 and < 1 (0.9,0.999)\n"
	        "      --eps X              AdamW epsilon, > 0 (1e-8)\n"
	        "      --max-grad-norm X    clip the gradient to this global norm, 0 for none (1)\n"
	        "      --save-dtype DTYPE   float32 or bfloat16 (default: as step_0's config.json)\n"
	        "      --shard-size BYTES   shard the weights above this size (default: never)\n"
	        "      --keep K             keep the newest K checkpoints with weights (default: all)\n"
	        "      --save-every K       publish weights with every K-th step only (1)\n"
	        "      --mask-truncated     train on nothing from sequences that finished by length\n"
	        "      --rank X             train rank X and exchange gradients with the other ranks\n"
	        "      --rank-timeout S     with --rank: how long to wait for a peer's gradient (600)\n"
	        "      --on-publish CMD     run CMD after each step with weights is published\n"
	        "      --on-publish-fail W  with --on-publish: on its failure warn (default) or stop (exit 3)\n"
	        "      --device WHERE       auto (the default, or $GRPO_DEVICE), cpu or cuda (exit 69 without a GPU)\n"
	        "      --precision P        on the GPU: bf16 (default) or fp32\n"
	        "      --recompute          on the GPU: recompute each layer's activations for its backward\n"
	        "      --threads N          threads for the matrix products (default: one per core)\n"
	        "      --metrics FILE       append one JSON line per step ('-': standard output)\n"
	        "      --debug-table FILE   append a row per sequence ('-': standard output)\n"
	        "      --debug-tokens       with --debug-table: a row per token too\n"
	        "  -v, --verbose            a summary per step on standard error\n"
	        "  -h, --help               this text\n"
	        "  -V, --version            the version\n",
	        prog);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	stop = sig;
}

enum {
	O_BATCHES = 256, O_MODEL, O_STEP, O_STEPS, O_WATCH, O_EPOCHS, O_RATIO, O_CLIP_LOW, O_CLIP_HIGH,
	O_DUAL, O_CISPO, O_KL, O_KLCLAMP, O_BETA, O_ENT, O_TIS, O_AGG, O_MAXLEN, O_LR, O_WARMUP, O_SCHED, O_TOTAL,
	O_WD, O_WDON, O_BETAS, O_EPS, O_MAXGN, O_DTYPE, O_SHARD, O_THREADS, O_METRICS, O_DTABLE, O_DTOKENS, O_KEEP,
	O_SAVE_EVERY, O_MASK_TRUNC, O_RANK, O_RANK_TIMEOUT, O_ON_PUBLISH, O_ON_PUBLISH_FAIL, O_DEVICE, O_PRECISION,
	O_RECOMPUTE,
};

static const struct option longopts[] = {
	{ "batches", required_argument, NULL, O_BATCHES },
	{ "model", required_argument, NULL, O_MODEL },
	{ "output", required_argument, NULL, 'o' },
	{ "step", required_argument, NULL, O_STEP },
	{ "steps", required_argument, NULL, O_STEPS },
	{ "watch", no_argument, NULL, O_WATCH },
	{ "epochs", required_argument, NULL, O_EPOCHS },
	{ "ratio", required_argument, NULL, O_RATIO },
	{ "clip-low", required_argument, NULL, O_CLIP_LOW },
	{ "clip-high", required_argument, NULL, O_CLIP_HIGH },
	{ "dual-clip", required_argument, NULL, O_DUAL },
	{ "cispo", no_argument, NULL, O_CISPO },
	{ "kl", required_argument, NULL, O_KL },
	{ "kl-clamp", required_argument, NULL, O_KLCLAMP },
	{ "beta", required_argument, NULL, O_BETA },
	{ "entropy-coef", required_argument, NULL, O_ENT },
	{ "tis-cap", required_argument, NULL, O_TIS },
	{ "loss-agg", required_argument, NULL, O_AGG },
	{ "max-len", required_argument, NULL, O_MAXLEN },
	{ "lr", required_argument, NULL, O_LR },
	{ "warmup-steps", required_argument, NULL, O_WARMUP },
	{ "lr-schedule", required_argument, NULL, O_SCHED },
	{ "total-steps", required_argument, NULL, O_TOTAL },
	{ "weight-decay", required_argument, NULL, O_WD },
	{ "weight-decay-on", required_argument, NULL, O_WDON },
	{ "betas", required_argument, NULL, O_BETAS },
	{ "eps", required_argument, NULL, O_EPS },
	{ "max-grad-norm", required_argument, NULL, O_MAXGN },
	{ "save-dtype", required_argument, NULL, O_DTYPE },
	{ "shard-size", required_argument, NULL, O_SHARD },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "metrics", required_argument, NULL, O_METRICS },
	{ "debug-table", required_argument, NULL, O_DTABLE },
	{ "debug-tokens", no_argument, NULL, O_DTOKENS },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "save-every", required_argument, NULL, O_SAVE_EVERY },
	{ "mask-truncated", no_argument, NULL, O_MASK_TRUNC },
	{ "rank", required_argument, NULL, O_RANK },
	{ "rank-timeout", required_argument, NULL, O_RANK_TIMEOUT },
	{ "on-publish", required_argument, NULL, O_ON_PUBLISH },
	{ "on-publish-fail", required_argument, NULL, O_ON_PUBLISH_FAIL },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "precision", required_argument, NULL, O_PRECISION },
	{ "recompute", no_argument, NULL, O_RECOMPUTE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	const char *batches, *model, *policy, *metrics, *dtable, *on_publish;
	int dtokens, keep, save_every, mask_truncated, hook_stop;
	int rank;             /* -1: every rank in this process */
	double rank_timeout;
	int64_t step;     /* -1: the one after the newest checkpoint */
	long long steps;  /* 0: forever (--watch) */
	int watch, epochs, verbose, dtype_given;
	enum model_device device;   /* as asked */
	int fp32;                   /* --precision fp32 on the GPU */
	int recompute;              /* --recompute: the GPU keeps only the layers' inputs */
	enum st_dtype dtype;
	size_t shard;
	struct loss_opts loss;
	struct optim_opts opt;
};

/* ,"key":v with %.9g; null where v is not finite (the KL at β 0, measured
 * past exp's range), which JSON has no number for */
static int metric(struct buf *b, const char *key, double v)
{
	return isfinite(v) ? buf_printf(b, ",\"%s\":%.9g", key, v) : buf_printf(b, ",\"%s\":null", key);
}

/* One JSON line of a step's metrics (with '\n'). */
static int metrics_line(struct buf *b, int64_t step, const struct step_result *r, int resumed_from_state,
                        const struct loss_totals *cut, int weights, const struct model_gpu *gpu, double read_s,
                        double write_s, double total_s)
{
	const struct loss_stats *f = &r->first, *l = &r->last;
	double n = f->tokens > 0 ? f->tokens : 1;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	int x = buf_printf(b, "{\"step\":%lld", (long long)step);
	x |= metric(b, "loss", f->loss) | metric(b, "policy_loss", f->policy) | metric(b, "kl_loss", f->kl) |
	     metric(b, "entropy_loss", f->entropy);
	x |= metric(b, "kl", f->kl_sum / n) | metric(b, "entropy", f->ent_sum / n);
	x |= buf_printf(b, ",\"clip_low\":%.6g,\"clip_high\":%.6g,\"dual_clipped\":%.6g,\"tis_capped\":%.6g",
	                f->clip_low / n, f->clip_high / n, f->dual_clipped / n, f->tis_capped / n);
	/* a step that trained no token has no ratio: 1, the ratio at a step's start, for all three */
	int any = f->tokens > 0;
	x |= metric(b, "ratio_mean", any ? f->ratio_sum / n : 1) | metric(b, "ratio_min", any ? f->ratio_min : 1) |
	     metric(b, "ratio_max", any ? f->ratio_max : 1);
	x |= metric(b, "align_diff_mean", f->diff_sum / n) | metric(b, "align_diff_abs_mean", f->diff_abs_sum / n);
	if (r->epochs > 1)
		x |= metric(b, "last_epoch_loss", l->loss);
	/* the first epoch's, as the loss above: the gradient at the step's start */
	x |= metric(b, "grad_norm", r->first_opt.grad_norm) | metric(b, "grad_clip", r->first_opt.clip) |
	     metric(b, "lr", r->first_opt.lr);
	x |= buf_printf(b, ",\"epochs\":%d", r->epochs);
	x |= buf_printf(b, ",\"sequences\":%.0f,\"loss_tokens\":%.0f,\"micro_batches\":%.0f", r->totals.seqs,
	                r->totals.tokens, r->totals.mbs);
	x |= buf_printf(b, ",\"masked_truncated\":%.0f,\"masked_truncated_tokens\":%.0f,\"weights\":%s", cut->seqs,
	                cut->tokens, weights ? "true" : "false");
	x |= buf_printf(b, ",\"sequences_without_sampler_logprobs\":%.0f", r->no_sampler_seqs);
	x |= buf_printf(b, ",\"tokens_per_s\":%.6g,\"peak_rss_bytes\":%lld",
	                total_s > 0 ? r->tokens / total_s : 0, (long long)ru.ru_maxrss * 1024);
	/* the GPU model allocates once, so what it holds is its peak */
	x |= buf_printf(b, ",\"device\":\"%s\",\"gpu_bytes\":%zu", gpu ? "cuda" : "cpu",
	                gpu ? model_gpu_bytes(gpu) : 0);
	x |= buf_printf(b, ",\"time\":{\"read\":%.6f,\"forward\":%.6f,\"backward\":%.6f,\"optimizer\":%.6f,"
	                "\"write\":%.6f,\"total\":%.6f},\"resumed_optimizer\":%s}\n",
	                read_s, r->fwd_s, r->bwd_s, r->opt_s, write_s, total_s,
	                resumed_from_state ? "true" : "false");
	return x;
}

/* Seed 004's health ranges: warnings on standard error. */
static void health(int64_t step, const struct step_result *r)
{
	const struct loss_stats *f = &r->first;
	if (f->tokens <= 0)
		return;
	double n = f->tokens, diff = f->diff_abs_sum / n, rm = f->ratio_sum / n;
	double clipped = (f->clip_low + f->clip_high) / n;
	if (diff > 0.1)
		cli_warn("step %lld: warning: trainer and sampler logprobs differ by %.3g on average "
		         "(mean |diff| > 0.1): check temperatures, tokenization and alignment",
		         (long long)step, diff);
	if (rm < 0.8 || rm > 1.2)
		cli_warn("step %lld: warning: ratio mean %.3g outside 0.8-1.2", (long long)step, rm);
	if (clipped > 0.3)
		cli_warn("step %lld: warning: %.0f%% of tokens clipped (> 30%%)", (long long)step, 100 * clipped);
}

/* --debug-table: each micro-batch's rows, appended to the file as they come. */
struct dtable_ctx {
	FILE *f;
	const char *path;
	int64_t step;
	const struct args *a;
	const struct tokenizer *tok;   /* NULL: no token text */
	struct buf b;
};

/* Whether the debug table has no rows yet, so that its header goes first:
 * a regular file by its size, as standard output appended to (>>) stands
 * at offset 0 however much it holds; a pipe or a terminal is a new stream. */
static int file_empty(FILE *f)
{
	struct stat st;
	return fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0;
}

static int dtable_rows(void *ctx, const struct microbatch *mb, const float *logprob, struct err *e)
{
	struct dtable_ctx *d = ctx;
	buf_reset(&d->b);
	if (dtable_mb(&d->b, d->step, mb, logprob, &d->a->loss, d->a->dtokens, d->tok) < 0)
		return err_set(e, "%s: out of memory", d->path);
	if (fwrite(d->b.data, 1, d->b.len, d->f) != d->b.len)
		return err_sys(e, "%s", d->path);
	return 0;
}

/*
 * A step's micro-batches are consumed by its checkpoint: once policy/step_N
 * is published, batches/step_N's files are retired (claim.h), so that
 * grpo-spool status shows them done, not waiting, and gc can remove the
 * step. Rank 0 (or the one process) does it for every rank, whose files
 * were all read before their gradients reached it. A failure leaves them
 * waiting, said; retire_published finishes on the next run.
 */
static void retire_batches(const struct args *a, int64_t step)
{
	struct err e;
	if (queue_retire_step(a->batches, step, NULL, &e) < 0)
		cli_warn("warning: %s/step_%lld was trained, but its files stay waiting: %s",
		         a->batches, (long long)step, e.msg);
}

/* The batches of published steps (up to newest) that a run killed between
 * publishing and retiring left waiting. */
static void retire_published(const struct args *a, int64_t newest)
{
	struct err e;
	int64_t *steps;
	size_t n;
	if (newest < 1)
		return;
	if (spool_list_steps(a->batches, 1, newest, &steps, &n, &e) < 0) {
		cli_warn("warning: the trained steps' files in %s stay waiting: %s", a->batches, e.msg);
		return;
	}
	for (size_t i = 0; i < n; i++)
		retire_batches(a, steps[i]);
	free(steps);
}

/*
 * --keep, after each step is published, and at the start of a run: a
 * removal that failed (a full disk, an I/O error) leaves the published step
 * as it is, said as a warning, and the next run finishes it.
 */
static void prune(const struct args *a)
{
	struct err e;
	int pruned = 0;
	if (a->keep > 0 && ckpt_prune(a->policy, a->keep, &pruned, &e) < 0)
		cli_warn("warning: %s: the steps before the newest %d with weights stay: %s",
		         a->policy, a->keep, e.msg);
}

/* --model names the initial model of a new queue; one given to a queue that
 * has another step_0 is not trained from, which the user had better know. */
static void warn_other_model(const struct args *a)
{
	char why[PATH_MAX + 64];
	struct err e;
	int r = ckpt_initial_differs(a->policy, a->model, why, sizeof why, &e);
	if (r < 0)
		cli_warn("warning: could not compare --model with %s/step_0: %s", a->policy, e.msg);
	else if (r == 1)
		cli_warn("warning: --model %s is not the initial model of %s (%s): training goes on "
		         "from the queue's own steps, which began at its step_0; give another queue (-o) to "
		         "start from %s", a->model, a->policy, why, a->model);
}

/* --keep and --on-publish act on what rank 0 alone publishes: said once on
 * another rank, which does neither, rather than ignored without a word. */
static void rank0_only(const struct args *a)
{
	if (a->keep > 0)
		cli_warn("--keep is rank 0's (it alone publishes and prunes policy/step_N): "
		         "ignored on rank %d", a->rank);
	if (a->on_publish)
		cli_warn("--on-publish is rank 0's (it alone publishes policy/step_N): "
		         "ignored on rank %d", a->rank);
}

/*
 * One process per policy queue and rank, for the whole run, as grpo-pack
 * holds its queue: two would train the same step, and the second would
 * find it published only at the end. The publisher (one process over
 * every rank, or rank 0) holds POLICY/.lock, rank X > 0 POLICY/.lock.rank_X,
 * so the ranks of a --rank run go on side by side. Another holder: exit 75
 * at once, naming it (its pid and host, which it writes into the file).
 * Returns the descriptor, which stays open (close-on-exec: not the
 * --on-publish command's), or -1 when there is no queue yet and no --model
 * to make it (the usage error after says so).
 */
static int lock_queue(const struct args *a)
{
	char p[PATH_MAX], host[256] = "";
	struct err e;
	int fd;
	if (a->rank > 0)
		snprintf(p, sizeof p, "%s/.lock.rank_%d", a->policy, a->rank);
	else
		snprintf(p, sizeof p, "%s/.lock", a->policy);
	if (a->model && fsys_mkdirs(a->policy, &e) < 0)
		cli_die_err(&e);
	int r = fsys_try_lock(p, 1, &fd, &e);
	if (r < 0 && errno == ENOENT && !a->model)
		return -1;
	if (r < 0)   /* also a file system without locks (NFS without a lock manager): not unguarded */
		cli_die_err(&e);
	if (r == 1) {
		char who[300] = "";
		int rfd = fsys_open_read(p, NULL);
		if (rfd >= 0) {
			ssize_t k = fsys_read(rfd, who, sizeof who - 1, p, NULL);
			who[k > 0 ? k : 0] = 0;
			who[strcspn(who, "\n")] = 0;
			close(rfd);
		}
		cli_warn("%s: another grpo-step (%s) is training into this policy queue%s (it holds %s); "
		         "try again later", a->policy, *who ? who : "its pid unknown",
		         a->rank > 0 ? " as this rank" : "", p);
		exit(CLI_EXIT_LATER);
	}
	gethostname(host, sizeof host - 1);
	char who[300];
	int n = snprintf(who, sizeof who, "pid %ld on %s\n", (long)getpid(), *host ? host : "?");
	if (ftruncate(fd, 0) < 0 || fsys_write_all(fd, who, (size_t)n, p, &e) < 0)
		cli_warn("warning: %s: cannot say who holds it: %s", p, strerror(errno));
	return fd;
}

/* Wait for BATCHES/step_N/DONE: 0 there, 1 not there (and not watching, or stopped). */
static int wait_done(const struct args *a, int64_t step)
{
	struct err e;
	for (;;) {
		int r = packstep_done_exists(a->batches, step, &e);
		if (r < 0)
			cli_die_err(&e);
		if (r == 1)
			return 0;
		if (!a->watch || stop)
			return 1;
		static int said;   /* a typo in --batches would otherwise wait without a word */
		if (!said && access(a->batches, F_OK) != 0) {
			cli_warn("%s: %s: waiting for it (is it the queue grpo-pack -o writes?)",
			         a->batches, strerror(errno));
			said = 1;
		}
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * --on-publish: CMD through /bin/sh -c with the step's directory, number
 * and queue in its environment (absolute paths). 0 when it exits 0; else
 * says how it failed and returns -1.
 */
static int on_publish(const struct args *a, int64_t step)
{
	char rel[PATH_MAX], dir[PATH_MAX], queue[PATH_MAX], num[32];
	snprintf(rel, sizeof rel, "%s/step_%lld", a->policy, (long long)step);
	snprintf(num, sizeof num, "%lld", (long long)step);
	if (!realpath(rel, dir) || !realpath(a->policy, queue)) {
		cli_warn("step %lld: --on-publish '%s' not run: %s: %s", (long long)step,
		         a->on_publish, rel, strerror(errno));
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_warn("step %lld: --on-publish '%s' not run: fork: %s", (long long)step,
		         a->on_publish, strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (setenv("GRPO_POLICY_DIR", dir, 1) == 0 && setenv("GRPO_STEP", num, 1) == 0 &&
		    setenv("GRPO_POLICY_QUEUE", queue, 1) == 0)
			execl("/bin/sh", "sh", "-c", a->on_publish, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			cli_warn("step %lld: --on-publish '%s': wait: %s", (long long)step,
			         a->on_publish, strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		cli_warn("step %lld: --on-publish '%s' killed by signal %d (%s)", (long long)step,
		         a->on_publish, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		cli_warn("step %lld: --on-publish '%s' failed with exit status %d",
		         (long long)step, a->on_publish, WEXITSTATUS(st));
	return -1;
}

/* 1 when --on-publish has succeeded for step (its marker is there). */
static int hook_done(const struct args *a, int64_t step)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof p, "%s/step_%lld/" HOOK_MARK, a->policy, (long long)step);
	return stat(p, &st) == 0;
}

/*
 * --on-publish for step, then its marker: an empty file, whose creation is
 * atomic. A crash before the marker is durable makes the next run run the
 * command again (at least once, never lost). -1 when the command failed.
 */
static int run_hook(const struct args *a, int64_t step)
{
	if (on_publish(a, step) < 0)
		return -1;
	char dir[PATH_MAX], p[PATH_MAX];
	struct err e;
	snprintf(dir, sizeof dir, "%s/step_%lld", a->policy, (long long)step);
	snprintf(p, sizeof p, "%s/" HOOK_MARK, dir);
	int fd = fsys_open_excl(p, &e);
	if ((fd < 0 && errno != EEXIST) || (fd >= 0 && (fsys_close(fd, p, &e) < 0 || fsys_fsync_dir(dir, &e) < 0)))
		cli_warn("warning: step %lld: --on-publish succeeded, but not marked so (the next run "
		         "runs it again): %s", (long long)step, e.msg);
	return 0;
}

/*
 * After "stopped before step S" (a signal, or no DONE yet), of a run of
 * --steps K that trained some of them: the steps left, and what trains
 * them and no more. The same command again would train K steps after the
 * newest (--steps counts from there), which no run can tell from a new
 * run asking for K more; --step S --steps LEFT is right either way.
 * Written into out, which it returns, for the end of the line said.
 */
static const char *untrained(char *out, size_t size, int64_t step, long long left)
{
	snprintf(out, size, ", %lld step%s asked for not trained (--step %lld --steps %lld trains %s and no more)",
	         left, left == 1 ? "" : "s", (long long)step, left, left == 1 ? "it" : "them");
	return out;
}

/*
 * At startup: the newest step with weights whose --on-publish never
 * succeeded (a run killed between publishing it and running the command,
 * or a command that failed) gets it now. Only the newest: the sampler wants
 * it, and an older step's weights handed over after it would roll the
 * sampler back. Step 0, the input model, has none. -1 when it failed, or
 * when listing the queue for that step failed.
 */
static int hook_catch_up(const struct args *a, int64_t newest)
{
	int64_t h = newest;
	struct err e;
	int r;
	while (h > 0 && !ckpt_has_weights(a->policy, h))
		if ((r = ckpt_latest(a->policy, h - 1, &h, &e)) != 0) {
			/* not knowing which step is owed the command is its failure:
			 * under stop, the sampler may lack the newest weights */
			if (r < 0)
				cli_warn("warning: cannot find the newest step with weights to run "
				         "--on-publish for, if it has not succeeded yet: %s", e.msg);
			return r < 0 ? -1 : 0;
		}
	if (h <= 0 || hook_done(a, h))
		return 0;
	cli_warn("step %lld: running --on-publish, which has not succeeded for it yet", (long long)h);
	return run_hook(a, h);
}

/*
 * The micro-batches of this process for step (every rank's, or --rank's),
 * masked with --mask-truncated, and the step's totals: from DONE, checked
 * here against the micro-batches when this process holds every rank (the
 * gradient exchange checks them otherwise, into x->local).
 */
static void read_step(const struct args *a, int64_t step, struct done_manifest *dm, struct microbatch **mbs,
                      size_t *n, struct loss_totals *tot, struct loss_totals *cut, struct gradx *x)
{
	struct err e;
	char done_path[PATH_MAX];
	snprintf(done_path, sizeof done_path, "%s/step_%lld/DONE", a->batches, (long long)step);
	int r = done_load(a->batches, step, dm, &e);
	if (r < 0)
		cli_die_err(&e);
	if (r == 0)
		cli_die(1, "%s: disappeared", done_path);
	if (a->rank >= 0 && (uint32_t)a->rank >= dm->ranks)
		cli_die(1, "%s: the step has %u ranks, and --rank is %d", done_path, dm->ranks, a->rank);
	if (step_read(a->batches, step, a->rank, mbs, n, &e) < 0)
		cli_die_err(&e);
	struct loss_totals counted = { 0, 0, 0 };
	step_count(*mbs, *n, &counted);
	memset(cut, 0, sizeof *cut);
	if (a->mask_truncated) {
		size_t unknown = step_mask_truncated(*mbs, *n, cut);
		if (unknown)
			cli_warn("step %lld: warning: --mask-truncated: %zu of %.0f sequences have no "
				 "finish_reason (their source gave none), so they are trained whether cut or not",
				 (long long)step, unknown, counted.seqs);
		/* the other ranks' truncated sequences leave the totals too: count them (read, not trained) */
		for (int k = 0; a->rank >= 0 && k < (int)dm->ranks; k++) {
			struct microbatch *o;
			size_t no;
			if (k == a->rank)
				continue;
			if (step_read(a->batches, step, k, &o, &no, &e) < 0)
				cli_die_err(&e);
			step_mask_truncated(o, no, cut);
			step_free_batches(o, no);
		}
	}
	if (step_totals(dm, cut, tot, &e) < 0) {
		if (a->rank >= 0)
			cli_die(cli_failure_status(e.errnum), "%s: %s: --rank needs them", done_path, e.msg);
		/* an older manifest: the totals of the micro-batches themselves */
		tot->seqs = counted.seqs - cut->seqs, tot->tokens = counted.tokens - cut->tokens;
		tot->mbs = counted.mbs;
	}
	if (a->rank < 0 && step_check(done_path, dm, &counted, &e) < 0)
		cli_die_err(&e);
	x->local = counted;
}

/*
 * The GPU model for a step whose largest micro-batch has maxT tokens: gpu
 * itself when it is large enough, else a new one (the host holds the
 * weights and moments after every step, so the old one can go). Where it
 * cannot be made, --device auto trains on the CPU, saying why once;
 * --device cuda exits 69.
 */
static struct model_gpu *gpu_for_step(struct args *a, struct model_gpu *gpu, struct model *m, struct optim *op,
                                      const struct microbatch *mbs, size_t n)
{
	int maxT = step_max_tokens(mbs, n);
	if (gpu && model_gpu_max_tokens(gpu) >= maxT)
		return gpu;
	model_gpu_close(gpu);
	struct err e;
	gpu = NULL;
	if (model_gpu_open_train(&gpu, m, maxT, !a->fp32, a->recompute, &e) < 0 ||
	    model_gpu_optim_put(gpu, m, op->m, op->v, &e) < 0) {
		model_gpu_close(gpu);
		if (a->device == MODEL_DEVICE_CUDA) {
			cli_warn("--device cuda: %s", e.msg);
			exit(69);
		}
		cli_warn("training on the CPU: %s", e.msg);
		a->device = MODEL_DEVICE_CPU;
		return NULL;
	}
	if (a->verbose) {
		char d[512];
		model_gpu_describe(gpu, d, sizeof d);
		cli_warn("training on the GPU (%s, %s attention%s), packs of up to %d tokens: %s",
		         a->fp32 ? "fp32" : "bf16", model_gpu_attention(gpu),
		         a->recompute ? ", each layer's activations recomputed for its backward" : "", maxT, d);
	}
	return gpu;
}

/* The words of the tool's own word options (cli_word); the others are lib's
 * (loss_ratio_names, loss_kl_names, loss_agg_names, lr_schedule_names,
 * wd_on_names). */
static const char *const dtype_words[] = { "float32", "bfloat16", NULL };     /* ST_F32, ST_BF16 */
static const char *const hook_fail_words[] = { "warn", "stop", NULL };       /* hook_stop 0, 1 */
static const char *const precision_words[] = { "bf16", "fp32", NULL };       /* fp32 0, 1 */

int main(int argc, char **argv)
{
	struct args a;
	memset(&a, 0, sizeof a);
	a.step = -1, a.steps = 1, a.epochs = 1, a.rank = -1, a.rank_timeout = 600;
	loss_opts_default(&a.loss);
	optim_opts_default(&a.opt);
	int threads = 0, steps_given = 0, rank_timeout_given = 0, hook_fail_given = 0;
	int device_given = 0, precision_given = 0;
	int c;
	double d;
	prog = cli_init(argv[0], "--batches QUEUE -o POLICY [OPTION]...");
	a.device = (enum model_device)cli_env_word("GRPO_DEVICE", model_device_names, MODEL_DEVICE_AUTO);
	while ((c = cli_getopt(argc, argv, "o:vhV", longopts)) != -1) {
		switch (c) {
		case O_BATCHES: a.batches = cli_path("--batches", optarg); break;
		case O_MODEL: a.model = cli_path("--model", optarg); break;
		case 'o': a.policy = cli_dir(CLI_OUTPUT, optarg); break;
		case O_STEP: a.step = (int64_t)cli_positive("--step", optarg, CLI_STEP_MAX); break;
		case O_STEPS: a.steps = (long long)cli_positive("--steps", optarg, LLONG_MAX), steps_given = 1; break;
		case O_WATCH: a.watch = 1; break;
		case O_EPOCHS: a.epochs = (int)cli_positive("--epochs", optarg, INT_MAX); break;
		case O_RATIO: a.loss.ratio = (enum loss_ratio)cli_word("--ratio", optarg, loss_ratio_names); break;
		case O_CLIP_LOW: a.loss.clip_low = cli_float("--clip-low", optarg, 0, INFINITY, 0); break;
		case O_CLIP_HIGH: a.loss.clip_high = cli_float("--clip-high", optarg, 0, INFINITY, 0); break;
		case O_DUAL:
			if (cli_scan_number(optarg, &d) < 0 || !(d == 0 || ((float)d > 1 && d <= FLT_MAX)))
				cli_bad_value("--dual-clip", "a number > 1, or 0 for none", optarg);
			a.loss.dual_clip = (float)d;
			break;
		case O_CISPO: a.loss.cispo = 1; break;
		case O_KL: a.loss.kl = (enum loss_kl)cli_word("--kl", optarg, loss_kl_names); break;
		case O_KLCLAMP: a.loss.kl_clamp = cli_float("--kl-clamp", optarg, 0, INFINITY, 0); break;
		case O_BETA: a.loss.beta = cli_float("--beta", optarg, 0, INFINITY, 0); break;
		case O_ENT: a.loss.entropy_coef = cli_float("--entropy-coef", optarg, -INFINITY, INFINITY, 0); break;
		case O_TIS: a.loss.tis_cap = cli_float("--tis-cap", optarg, 0, INFINITY, 0); break;
		case O_AGG: a.loss.agg = (enum loss_agg)cli_word("--loss-agg", optarg, loss_agg_names); break;
		case O_MAXLEN: a.loss.max_len = (int)cli_positive("--max-len", optarg, INT_MAX); break;
		case O_LR: a.opt.lr = cli_number("--lr", optarg, 0, INFINITY, 0); break;
		case O_WARMUP: a.opt.warmup_steps = (int)cli_uint("--warmup-steps", optarg, INT_MAX); break;
		case O_SCHED: a.opt.schedule = (enum lr_schedule)cli_word("--lr-schedule", optarg, lr_schedule_names); break;
		case O_TOTAL: a.opt.total_steps = (int)cli_positive("--total-steps", optarg, INT_MAX); break;
		case O_WD: a.opt.weight_decay = cli_number("--weight-decay", optarg, 0, INFINITY, 0); break;
		case O_WDON: a.opt.wd_on = (enum wd_on)cli_word("--weight-decay-on", optarg, wd_on_names); break;
		case O_BETAS: {
			double b[2];
			if (cli_number_list(optarg, b, 2) < 0 || !(b[0] >= 0 && b[0] < 1) || !(b[1] >= 0 && b[1] < 1))
				cli_bad_value("--betas", "B1,B2, each a number >= 0 and < 1", optarg);
			a.opt.beta1 = b[0], a.opt.beta2 = b[1];
			break;
		}
		case O_EPS: a.opt.eps = cli_number("--eps", optarg, 0, INFINITY, CLI_ABOVE_MIN); break;
		case O_MAXGN: a.opt.max_grad_norm = cli_number("--max-grad-norm", optarg, 0, INFINITY, 0); break;
		case O_DTYPE:
			a.dtype = cli_word("--save-dtype", optarg, dtype_words) ? ST_BF16 : ST_F32;
			a.dtype_given = 1;
			break;
		case O_SHARD: a.shard = (size_t)cli_bytes("--shard-size", optarg, SIZE_MAX); break;
		case O_THREADS: threads = (int)cli_positive("--threads", optarg, INT_MAX); break;
		case O_METRICS: a.metrics = cli_path("--metrics", optarg); break;
		case O_DTABLE: a.dtable = cli_path("--debug-table", optarg); break;
		case O_DTOKENS: a.dtokens = 1; break;
		case O_KEEP: a.keep = (int)cli_positive("--keep", optarg, INT_MAX); break;
		case O_SAVE_EVERY: a.save_every = (int)cli_positive("--save-every", optarg, INT_MAX); break;
		case O_MASK_TRUNC: a.mask_truncated = 1; break;
		case O_RANK: a.rank = (int)cli_uint("--rank", optarg, INT_MAX); break;
		case O_RANK_TIMEOUT: a.rank_timeout = cli_seconds("--rank-timeout", optarg, 0); rank_timeout_given = 1; break;
		case O_ON_PUBLISH: a.on_publish = optarg; break;
		case O_ON_PUBLISH_FAIL:
			a.hook_stop = cli_word("--on-publish-fail", optarg, hook_fail_words);
			hook_fail_given = 1;
			break;
		case O_DEVICE:
			a.device = (enum model_device)cli_word("--device", optarg, model_device_names);
			device_given = 1;
			break;
		case O_PRECISION: a.fp32 = cli_word("--precision", optarg, precision_words), precision_given = 1; break;
		case O_RECOMPUTE: a.recompute = 1; break;
		case 'v': a.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, GRPO_VERSION); return 0;
		default: cli_usage_hint(); return 2;
		}
	}
	if (optind != argc)
		cli_bad_usage("unexpected argument '%s'", argv[optind]);
	if (!a.batches || !a.policy)
		cli_bad_usage("--batches and -o are required");
	if (a.loss.agg == LOSS_AGG_DR_GRPO && a.loss.max_len <= 0)
		cli_bad_usage("--loss-agg dr_grpo needs --max-len");
	if (a.metrics && a.dtable && !strcmp(a.metrics, "-") && !strcmp(a.dtable, "-"))
		cli_bad_usage("--metrics - and --debug-table - would mix on standard output: give one a FILE");
	if (a.dtokens && !a.dtable)
		cli_bad_usage("--debug-tokens goes with --debug-table");
	if (rank_timeout_given && a.rank < 0)
		cli_bad_usage("--rank-timeout goes with --rank");
	if (hook_fail_given && !a.on_publish)
		cli_bad_usage("--on-publish-fail goes with --on-publish");
	if (a.opt.total_steps && a.opt.schedule == LR_CONSTANT)   /* where the schedule ends: constant has no end */
		cli_bad_usage("--total-steps goes with --lr-schedule cosine or linear");
	cli_gpu_option("--precision", precision_given, device_given && a.device == MODEL_DEVICE_CPU);
	cli_gpu_option("--recompute", a.recompute, device_given && a.device == MODEL_DEVICE_CPU);
	if (a.watch && !steps_given)
		a.steps = 0;
	struct err e;
	if (optim_opts_check(&a.opt, &e) < 0)
		cli_bad_usage("%s", e.msg);
	if (a.rank > 0)
		rank0_only(&a);
	enum model_device asked = a.device;
	int found = model_device_resolve(asked, &a.device, &e);
	if (found != 0)
		cli_warn("%s", e.msg);
	if (found < 0)   /* EX_UNAVAILABLE, as grpo-score: a script can tell it from a usage error */
		return 69;
	if (a.device == MODEL_DEVICE_CUDA && asked == MODEL_DEVICE_AUTO)
		a.device = MODEL_DEVICE_AUTO;   /* a GPU that cannot take the model means the CPU */
	if (threads > 0)
		model_set_threads(threads);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	int lock_fd = lock_queue(&a);

	/* what a crashed run left in policy/.tmp */
	int swept = 0;
	if (ckpt_sweep(a.policy, &swept, &e) < 0)
		cli_die_err(&e);
	if (swept)
		cli_warn("%s/.tmp: removed %d temporar%s left by processes of this host that died",
		         a.policy, swept, swept == 1 ? "y" : "ies");

	/* policy/step_0 */
	int64_t newest;
	int r = ckpt_latest(a.policy, INT64_MAX, &newest, &e);
	if (r < 0)
		cli_die_err(&e);
	if (r == 1) {
		if (!a.model)
			cli_bad_usage("%s has no step_0 yet: --model names the initial model", a.policy);
		r = ckpt_publish_initial(a.policy, a.model, &e);
		if (r < 0)
			cli_die_err(&e);
		if (r == CKPT_UNFLUSHED)
			cli_die(cli_failure_status(e.errnum), "%s/step_0 is published, but %s", a.policy, e.msg);
		newest = 0;
		if (a.verbose)
			cli_warn("published %s as %s/step_0", a.model, a.policy);
	} else if (a.model && a.rank <= 0) {
		warn_other_model(&a);
	}
	if (a.verbose && access(a.batches, F_OK) == 0)
		cli_warn_misnamed(a.batches);
	if (a.rank <= 0) {
		retire_published(&a, newest);
		prune(&a);
	}
	if (a.on_publish && a.rank <= 0 && hook_catch_up(&a, newest) < 0 && a.hook_stop) {
		cli_warn("stopping before training (--on-publish-fail stop)");
		return EXIT_HOOK;
	}
	char step0[PATH_MAX];
	snprintf(step0, sizeof step0, "%s/step_0", a.policy);
	if (!a.dtype_given && ckpt_model_dtype(step0, &a.dtype, &e) < 0)
		cli_die_err(&e);
	int64_t step = a.step < 0 ? newest + 1 : a.step;
	/* the steps asked for that are published already are left alone, and
	 * the rest trained: a re-run after a crash in --steps K goes on. A step
	 * up to the newest was published, as each starts from the one before,
	 * even when --keep has removed it since: training it again from step_0
	 * would train its micro-batches twice. */
	long long done = 0;
	for (; step <= newest && (a.steps == 0 || done < a.steps); step++, done++) {
		if ((r = ckpt_exists(a.policy, step, &e)) < 0)
			cli_die_err(&e);
		if (a.verbose)
			cli_warn("%s/step_%lld %s: left alone", a.policy, (long long)step,
			         r ? "exists" : "was published and has been removed since");
	}
	if (a.steps > 0 && done == a.steps)
		return 0;
	if (a.steps > 0)
		a.steps -= done;
	int64_t base;
	if ((r = ckpt_latest(a.policy, step - 1, &base, &e)) < 0)
		cli_die_err(&e);
	if (r != 0 || base != step - 1)
		cli_die(1, "%s: step %lld starts from step_%lld, which is not there (newest: step_%lld)", a.policy,
			(long long)step, (long long)step - 1, (long long)newest);

	struct model m;
	struct optim op;
	int resumed;
	double t0 = now();
	if (ckpt_load(&m, &op, &a.opt, a.policy, base, &resumed, &e) < 0)
		cli_die_err(&e);
	/* every step grpo-step publishes after step_0 has optim.bin: one without
	 * it (lost, or a checkpoint put there by hand) restarts AdamW, which a
	 * user resuming a run had better know */
	if (!resumed && base > 0)
		cli_warn("warning: %s/step_%lld has no optim.bin: AdamW starts afresh from its weights "
		         "(moments 0, optimizer step 1, so --warmup-steps and --lr-schedule start again), not as "
		         "the run that published it would have gone on", a.policy, (long long)base);
	FILE *mf = NULL;
	if (a.metrics && !(mf = strcmp(a.metrics, "-") ? fopen(a.metrics, "a") : stdout))
		cli_die(cli_failure_status(errno), "%s: %s", a.metrics, strerror(errno));
	struct dtable_ctx dt = { NULL, a.dtable, 0, &a, NULL, { 0 } };
	struct progress pg;
	progress_init(&pg, prog, STDERR_FILENO);
	struct step_observer obs = { a.dtable ? dtable_rows : NULL, &dt, &pg };
	struct tokenizer *tok = NULL;
	if (a.dtokens) {
		char tp[PATH_MAX];
		snprintf(tp, sizeof tp, "%s/tokenizer.json", step0);
		if (access(tp, F_OK) == 0 && !(tok = tok_load(tp, &e)))
			cli_warn("warning: no token text in the debug table: %s", e.msg);
		dt.tok = tok;
	}
	if (a.dtable) {
		if (!(dt.f = strcmp(a.dtable, "-") ? fopen(a.dtable, "a") : stdout))
			cli_die(cli_failure_status(errno), "%s: %s", a.dtable, strerror(errno));
		if (file_empty(dt.f)) {
			if (dtable_header(&dt.b) < 0 || fwrite(dt.b.data, 1, dt.b.len, dt.f) != dt.b.len)
				cli_die(1, "%s: cannot write", a.dtable);
		}
	}

	int status = 0;
	struct model_gpu *gpu = NULL;
	/* what every rank must share, checked on each gradient exchange (gradx.h) */
	const uint64_t opts_hash = gradx_opts_hash(&a.loss, &a.opt, a.epochs, a.mask_truncated);
	if (opts_hash == 0)
		cli_die(CLI_EXIT_FAILURE, "out of memory");
	long long k = 0;
	for (; (a.steps == 0 || k < a.steps) && !stop; k++, step++) {
		double ts = now();
		if (wait_done(&a, step)) {
			if (stop)
				break;
			char why[PATH_MAX + 128] = "", left[160] = "";
			if (access(a.batches, F_OK) != 0)   /* before grpo-pack's first run, or a typo */
				snprintf(why, sizeof why, " (%s: %s: is it the queue grpo-pack -o writes?)", a.batches,
				         strerror(errno));
			if (k > 0 && a.steps > 0)   /* run again as it was, it would start after step - 1 */
				untrained(left, sizeof left, step, a.steps - k);
			cli_warn("%s/step_%lld: no DONE yet%s%s", a.batches, (long long)step, why, left);
			status = CLI_EXIT_LATER;
			break;
		}
		struct microbatch *mbs;
		size_t n;
		struct done_manifest dm;
		struct loss_totals tot, cut;
		struct gradx x = { a.policy, step, a.rank, 0, a.rank_timeout, &stop, { 0, 0, 0 }, &dm, NULL, opts_hash };
		read_step(&a, step, &dm, &mbs, &n, &tot, &cut, &x);
		char done_path[PATH_MAX];
		snprintf(done_path, sizeof done_path, "%s/step_%lld/DONE", a.batches, (long long)step);
		x.ranks = (int)dm.ranks, x.done_path = done_path;
		struct step_reduce red = { gradx_reduce, &x };
		if (a.device != MODEL_DEVICE_CPU)
			gpu = gpu_for_step(&a, gpu, &m, &op, mbs, n);
		double tr = now();
		struct step_result res;
		dt.step = step;
		int trained = step_train(&m, gpu, &op, &a.loss, &tot, a.epochs, mbs, n, &obs, a.rank >= 0 ? &red : NULL,
		                         &res, &e);
		progress_end(&pg);
		if (trained < 0)
			cli_die(cli_failure_status(e.errnum), "%s/step_%lld: %s", a.batches, (long long)step, e.msg);
		/* AdamW keeps what an --lr or --weight-decay far too large makes of
		 * finite gradients: no step whose weights or moments would be inf or
		 * NaN is published, on every rank (they hold the same bits) */
		if (ckpt_check_finite(&m, &op, &e) < 0)
			cli_die(1, "%s/step_%lld not published: %s after the optimizer step", a.policy, (long long)step,
			        e.msg);
		/* the step's debug rows reach the file before the step is published:
		 * a full disk then fails the step, not the run after publishing it */
		if (dt.f && fflush(dt.f) != 0)
			cli_die(cli_failure_status(errno), "%s: %s: step %lld not published", a.dtable, strerror(errno),
			        (long long)step);
		double tw = now();
		int weights = a.save_every == 0 || step % a.save_every == 0, unflushed = 0;
		if (a.rank <= 0) {
			r = ckpt_publish(a.policy, step, &m, &op, weights, a.dtype, a.shard, step0, &e);
			if (r < 0)
				cli_die_err(&e);
			if (r == 1)
				cli_die(1, "%s/step_%lld appeared while training it: another grpo-step?", a.policy,
					(long long)step);
			unflushed = r == CKPT_UNFLUSHED;
		}
		double te = now();
		struct buf b = { 0 };
		if (metrics_line(&b, step, &res, resumed, &cut, weights && a.rank <= 0, gpu,
		                 (tr - ts) + (k == 0 ? ts - t0 : 0), te - tw, te - ts) < 0)
			cli_die(1, "out of memory");
		/* the step is published whatever becomes of its line: say so, as grpo-score and grpo-pack do */
		if (mf && (fwrite(b.data, 1, b.len, mf) != b.len || fflush(mf) != 0))
			cli_warn("%s: step %lld's metrics line not written: %s", a.metrics,
			         (long long)step, strerror(errno));
		/* published, so no re-run writes the line: it is written first (a
		 * re-run retires the micro-batches, as after a kill here) */
		if (unflushed)
			cli_die(cli_failure_status(e.errnum), "%s/step_%lld is published, but %s", a.policy,
			        (long long)step, e.msg);
		/* after the line, so that a kill while the peers acknowledge, the
		 * micro-batches are retired or old steps pruned loses no line (a
		 * re-run retires what is left: retire_published) */
		if (a.rank <= 0) {
			if (a.rank == 0 && gradx_finish(&x, res.epochs, &e) < 0)
				cli_warn("warning: %s", e.msg);
			retire_batches(&a, step);
			prune(&a);
		}
		done_free(&dm);
		if (a.verbose)
			cli_warn("step %lld: loss %.6g, grad norm %.4g, lr %.3g, %.0f sequences, %.0f tokens, %.2fs",
			         (long long)step, res.first.loss, res.first_opt.grad_norm, res.first_opt.lr, res.totals.seqs,
			         res.totals.tokens, te - ts);
		health(step, &res);
		buf_free(&b);
		step_free_batches(mbs, n);
		resumed = 1;
		/* after the metrics, so a stop still leaves the step's line */
		if (a.on_publish && weights && a.rank <= 0 && run_hook(&a, step) < 0 && a.hook_stop) {
			cli_warn("stopping after step %lld (--on-publish-fail stop); it stays published",
			         (long long)step);
			status = EXIT_HOOK;
			step++;
			break;
		}
	}
	/* 0 says every step asked for was published: a signal that stopped the
	 * run short of --steps K says 75, as a re-run goes on from there */
	if (status == 0 && stop && a.steps > 0 && k < a.steps) {
		char left[160];
		cli_warn("stopped by a signal (%s) before step %lld%s", strsignal(stop), (long long)step,
		         untrained(left, sizeof left, step, a.steps - k));
		status = CLI_EXIT_LATER;
	}
	if (mf && mf != stdout && fclose(mf) != 0)
		cli_warn("%s: %s", a.metrics, strerror(errno));
	if (dt.f && (fflush(dt.f) != 0 || (dt.f != stdout && fclose(dt.f) != 0)))
		cli_die(cli_failure_status(errno), "%s: %s", a.dtable, strerror(errno));
	buf_free(&dt.b);
	tok_free(tok);
	model_gpu_close(gpu);
	optim_free(&op);
	model_free(&m);
	if (lock_fd >= 0)
		close(lock_fd);
	return status;
}
