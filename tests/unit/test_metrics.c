/*
 * test_metrics: the table `grpo-spool plot` draws, value by value.
 *
 * Random runs of metrics lines (scorer lines in a queue step or without
 * one, trainer lines, the packer's, blank lines, inputs of no sequences,
 * means that are not numbers, fields left out), read in two files, against
 * a table this test keeps apart: a row per step any line named, each
 * reward's sum of mean x sequences over the sum of sequences, the last
 * trainer line's values, the names in the order a line with sequences
 * first gave them. Means are eighths and sequences whole, so every sum is
 * exact and the two tables agree bit for bit. Then the step each input's
 * path names, the ninth reward, a file that is not lines, and the gnuplot
 * script of small tables, checked whole.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "base/rng.h"
#include "data/metrics.h"

static uint64_t rs = 7;

static uint64_t rnd(uint64_t n)
{
	return splitmix64(&rs) % n;
}

#define STEPS 24   /* the queue steps and trainer steps drawn */
#define ROWS 100   /* the steps a run can reach: STEPS, and a line out of the queue after each of 60 */
static const char *const names[] = { "gsm8k", "format", "len" };

/* The table kept apart, by step: what each line should have added. */
struct want {
	int seen[ROWS];
	double sum[ROWS][3], seqs[ROWS][3];
	double v[ROWS][5];   /* kl, entropy, clip_fraction, grad_norm, tokens_per_s */
	int order[3], n_names;
	long next;
};

static void want_init(struct want *w)
{
	memset(w, 0, sizeof *w);
	for (int s = 0; s < ROWS; s++)
		for (int c = 0; c < 5; c++)
			w->v[s][c] = NAN;
	w->next = 1;
}

static int name_seen(struct want *w, int k)
{
	for (int i = 0; i < w->n_names; i++)
		if (w->order[i] == k)
			return 1;
	return 0;
}

/* A value of a trainer's line: a number, or left out (NAN). */
static double maybe(struct buf *b, const char *key, double v, int out)
{
	if (out)
		return NAN;
	buf_printf(b, ",\"%s\":%.17g", key, v);
	return v;
}

/* One scorer line into b, and what it adds into w. */
static void scorer_line(struct buf *b, struct want *w)
{
	long step;
	if (rnd(3) != 0) {
		long k = (long)rnd(STEPS);
		buf_printf(b, "{\"input\":\"/run/rollouts/step_%ld/rank_%d/r%d.zst\"", k, (int)rnd(4), (int)rnd(100));
		step = k + 1;
	} else {
		buf_printf(b, "{\"input\":\"%s\"", rnd(2) ? "standard input" : "/run/out/step_x/rank_0/a.zst");
		step = w->next;
	}
	w->next = step + 1;
	w->seen[step] = 1;
	int seqs = rnd(5) == 0 ? 0 : 1 + (int)rnd(16);
	if (rnd(8) != 0)
		buf_printf(b, ",\"sequences\":%d", seqs);
	else
		seqs = 0;
	buf_printf(b, ",\"rewards\":{");
	int first = 1;
	for (int k = 0; k < 3; k++) {
		if (rnd(3) == 0)
			continue;
		buf_printf(b, "%s\"%s\":{", first ? "" : ",", names[k]);
		first = 0;
		int kind = (int)rnd(6);
		double mean = (double)((int)rnd(17) - 4) / 8;
		if (kind == 0)
			buf_printf(b, "\"mean\":null");
		else if (kind == 1)
			buf_printf(b, "\"std\":0.5");
		else
			buf_printf(b, "\"mean\":%.17g,\"std\":0", mean);
		buf_printf(b, "}");
		if (seqs > 0 && !name_seen(w, k))
			w->order[w->n_names++] = k;
		if (seqs > 0 && kind >= 2) {
			w->sum[step][k] += mean * seqs;
			w->seqs[step][k] += seqs;
		}
	}
	buf_printf(b, "}}\n");
}

/* One trainer line into b (its step's values replace the row's). */
static void trainer_line(struct buf *b, struct want *w)
{
	long step = 1 + (long)rnd(STEPS - 1);
	w->seen[step] = 1;
	double *v = w->v[step];
	buf_printf(b, "{\"step\":%ld,\"grad_norm\":%.17g", step, v[3] = (double)rnd(1000) / 64);
	v[0] = maybe(b, "kl", (double)rnd(100) / 1024, rnd(6) == 0);
	v[1] = maybe(b, "entropy", 0.5 + (double)rnd(100) / 32, rnd(6) == 0);
	double lo = maybe(b, "clip_low", (double)rnd(16) / 128, rnd(8) == 0);
	double hi = maybe(b, "clip_high", (double)rnd(16) / 64, rnd(8) == 0);
	v[2] = lo + hi;
	v[4] = maybe(b, "tokens_per_s", (double)(1000 + rnd(50000)), rnd(6) == 0);
	buf_printf(b, ",\"loss\":0.25}\n");
}

/* The lines of one random run, cut into two files at a line. */
static void run_lines(struct buf *one, struct buf *two, struct want *w)
{
	int lines = 1 + (int)rnd(60), cut = (int)rnd((uint64_t)lines + 1);
	for (int i = 0; i < lines; i++) {
		struct buf *b = i < cut ? one : two;
		int kind = (int)rnd(10);
		if (kind < 5)
			scorer_line(b, w);
		else if (kind < 8)
			trainer_line(b, w);
		else if (kind == 8)
			buf_printf(b, "{\"step\":%d,\"micro_batches\":3,\"fill\":0.9}\n", 1 + (int)rnd(STEPS - 1));
		else
			buf_printf(b, rnd(2) ? "\n" : "  \t\r\n");
	}
}

static int read_text(struct metrics_table *t, struct buf *b, const char *name, struct err *e)
{
	FILE *f = fmemopen(b->len ? b->data : (unsigned char *)"", b->len, "r");
	if (!f)
		return err_set(e, "fmemopen");
	int rc = metrics_read_stream(t, f, name, e);
	fclose(f);
	return rc;
}

static void cell(struct buf *out, double v)
{
	if (isfinite(v))
		buf_printf(out, "\t%.9g", v);
	else
		buf_printf(out, "\t-");
}

/* The TSV the table kept apart should print. */
static void want_tsv(const struct want *w, struct buf *out)
{
	buf_printf(out, "step");
	for (int i = 0; i < w->n_names; i++)
		buf_printf(out, "\treward.%s", names[w->order[i]]);
	buf_printf(out, "\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n");
	for (int s = 0; s < ROWS; s++) {
		if (!w->seen[s])
			continue;
		buf_printf(out, "%d", s);
		for (int i = 0; i < w->n_names; i++) {
			int k = w->order[i];
			cell(out, w->seqs[s][k] > 0 ? w->sum[s][k] / w->seqs[s][k] : NAN);
		}
		for (int c = 0; c < 5; c++)
			cell(out, w->v[s][c]);
		buf_printf(out, "\n");
	}
}

static void differential(int cases)
{
	int bad = 0, rows = 0, rewards = 0, unplaced = 0;
	for (int c = 0; c < cases; c++) {
		struct want w;
		want_init(&w);
		struct buf one = { 0 }, two = { 0 }, got = { 0 }, want = { 0 };
		run_lines(&one, &two, &w);
		unplaced += strstr((char *)one.data ? (char *)one.data : "", "standard input") != NULL;
		struct metrics_table t = METRICS_TABLE_INIT;
		struct err e = { 0 };
		int rc = read_text(&t, &one, "one", &e);
		if (rc == 0)
			rc = read_text(&t, &two, "two", &e);
		if (rc == 0)
			rc = metrics_tsv(&t, &got);
		want_tsv(&w, &want);
		buf_put_u8(&got, 0);
		buf_put_u8(&want, 0);
		if ((rc != 0 || strcmp((char *)got.data, (char *)want.data) != 0) && bad++ < 3) {
			buf_put_u8(&one, 0);
			buf_put_u8(&two, 0);
			diag("case %d: rc %d %s\n# lines:\n%s%s# got:\n%s# want:\n%s", c, rc, rc ? e.msg : "",
			     one.data ? (char *)one.data : "", two.data ? (char *)two.data : "", (char *)got.data,
			     (char *)want.data);
		}
		rows += (int)t.n;
		rewards += w.n_names;
		metrics_free(&t);
		buf_free(&one);
		buf_free(&two);
		buf_free(&got);
		buf_free(&want);
	}
	ok(bad == 0, "%d random runs read in two files: every row, reward mean and trainer value as computed apart "
	   "(%d rows, %d reward columns, %d runs with lines out of the queue)", cases, rows, rewards, unplaced);
}

/* The table and gnuplot script of lines, as one string. */
static const char *script(const char *lines, const char *png)
{
	static struct buf out;
	struct buf in = { 0 };
	struct metrics_table t = METRICS_TABLE_INIT;
	struct err e = { 0 };
	buf_reset(&out);
	buf_printf(&in, "%s", lines);
	if (read_text(&t, &in, "lines", &e) < 0 || metrics_gnuplot(&t, png, &out) < 0)
		buf_printf(&out, "error: %s", e.msg);
	buf_put_u8(&out, 0);
	metrics_free(&t);
	buf_free(&in);
	return (const char *)out.data;
}

static void is_text(const char *got, const char *want, const char *what)
{
	if (!ok(strcmp(got, want) == 0, "%s", what))
		diag("got:\n%s\n# want:\n%s", got, want);
}

#define HEAD(rows, cols, w, h) \
	"EOD\nset terminal png noenhanced size " w "," h "\nset output \"p.png\"\n" \
	"set datafile separator \"\\t\"\nset datafile missing \"-\"\nset key autotitle columnhead\n" \
	"set xlabel \"step\"\nset grid\nset multiplot layout " rows "," cols "\n"

static void gnuplot(void)
{
	/* one step, one trainer value: one panel, the x range around the step,
	 * the y range around the one value */
	is_text(script("{\"step\":3,\"grad_norm\":2}\n", "p.png"),
		"$metrics << EOD\nstep\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n3\t-\t-\t-\t2\t-\n"
		HEAD("1", "1", "600", "300")
		"set xtics 1\nset xrange [2:4]\nset yrange [1.8:2.2]\nset title \"grad norm\"\n"
		"plot $metrics using 1:5 with linespoints notitle\nunset multiplot\n",
		"one step, grad_norm alone: the whole script");

	/* two rewards over three steps, kl everywhere 0, grad_norm varying, a
	 * negative flat entropy: four panels in two rows */
	is_text(script("{\"input\":\"s/step_0/rank_0/a\",\"sequences\":2,\"rewards\":{\"a\":{\"mean\":1},\"b\":{\"mean\":-0.5}}}\n"
		       "{\"input\":\"s/step_2/rank_0/a\",\"sequences\":2,\"rewards\":{\"a\":{\"mean\":0.5}}}\n"
		       "{\"step\":1,\"kl\":0,\"entropy\":-2,\"grad_norm\":1}\n"
		       "{\"step\":3,\"kl\":0,\"entropy\":-2,\"grad_norm\":4}\n", "p.png"),
		"$metrics << EOD\nstep\treward.a\treward.b\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n"
		"1\t1\t-0.5\t0\t-2\t-\t1\t-\n3\t0.5\t-\t0\t-2\t-\t4\t-\n"
		HEAD("2", "2", "1200", "600")
		"set xtics 1\nset autoscale y\nset title \"mean reward\"\n"
		"plot $metrics using 1:2 with linespoints, $metrics using 1:3 with linespoints\n"
		"set yrange [-1:1]\nset title \"KL from the reference\"\nplot $metrics using 1:4 with linespoints notitle\n"
		"set yrange [-2.2:-1.8]\nset title \"entropy (per token)\"\nplot $metrics using 1:5 with linespoints notitle\n"
		"set autoscale y\nset title \"grad norm\"\nplot $metrics using 1:7 with linespoints notitle\n"
		"unset multiplot\n",
		"two rewards and three trainer values over steps 1 and 3: the whole script");

	/* steps 1 and 22: past 20 steps apart no xtics 1; three panels (clip
	 * fraction, tokens_per_s, one reward flat at 0.25) in two rows; a PNG
	 * name with a quote, a backslash and a line break, escaped */
	is_text(script("{\"input\":\"q/step_21/rank_0/x\",\"sequences\":1,\"rewards\":{\"r\":{\"mean\":0.25}}}\n"
		       "{\"input\":\"standard input\",\"sequences\":3,\"rewards\":{\"r\":{\"mean\":0.25}}}\n"
		       "{\"step\":1,\"clip_low\":0.5,\"clip_high\":0.25,\"grad_norm\":null,\"tokens_per_s\":9}\n"
		       "{\"step\":1,\"clip_low\":0.5,\"clip_high\":0.25,\"grad_norm\":1e400,\"tokens_per_s\":9}\n"
		       "{\"step\":22,\"clip_low\":0,\"clip_high\":0.125,\"grad_norm\":\"x\",\"tokens_per_s\":9}\n"
		       "{\"step\":1,\"clip_low\":0.5,\"clip_high\":0.25,\"grad_norm\":-1,\"tokens_per_s\":9}\n",
		       "a\"b\\c\nd.png"),
		"$metrics << EOD\nstep\treward.r\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n"
		"1\t-\t-\t-\t0.75\t-1\t9\n22\t0.25\t-\t-\t-\t-\t-\n23\t0.25\t-\t-\t-\t-\t-\n"
		"EOD\nset terminal png noenhanced size 1200,600\nset output \"a\\\"b\\\\c\\012d.png\"\n"
		"set datafile separator \"\\t\"\nset datafile missing \"-\"\nset key autotitle columnhead\n"
		"set xlabel \"step\"\nset grid\nset multiplot layout 2,2\n"
		"set yrange [0.225:0.275]\nset title \"mean reward\"\nplot $metrics using 1:2 with linespoints\n"
		"set yrange [0.675:0.825]\nset title \"clip fraction (tokens)\"\n"
		"plot $metrics using 1:5 with linespoints notitle\n"
		"set yrange [-1.1:-0.9]\nset title \"grad norm\"\nplot $metrics using 1:6 with linespoints notitle\n"
		"set yrange [8.1:9.9]\nset title \"tokens per second\"\nplot $metrics using 1:7 with linespoints notitle\n"
		"unset multiplot\n",
		"steps 1, 22, 23 from a queue line and the one after it; only trainer lines with a finite grad_norm count; "
		"an escaped PNG name: the whole script");
}

/* The step of a scorer line from its input's path: QUEUE/step_K/rank_X/NAME
 * alone, K in decimal; any other path goes to the step after the previous
 * line's. Each path follows a line of queue step 4 (row 5), so a path read
 * as no queue step lands on row 6. */
static void input_paths(void)
{
	static const struct {
		const char *path;
		long step;
	} cases[] = {
		{ "/q/rollouts/step_2/rank_0/a.zst", 3 },
		{ "step_2/rank_1/a.zst", 3 },            /* relative, step_ first */
		{ "/q/step_010/rank_0/a.zst", 11 },      /* decimal, not octal */
		{ "/q/step_0x1/rank_0/a.zst", 6 },
		{ "/q/notstep_2/rank_0/a.zst", 6 },      /* step_ must start a component */
		{ "/q/step_/rank_0/a.zst", 6 },          /* no number */
		{ "/q/step_2/rank/a.zst", 6 },           /* rank_, not rank */
		{ "/q/step_2/out/a.zst", 6 },
		{ "/q/step_-2/rank_0/a.zst", 6 },
		{ "/q/step_1/rank_0/step_2/rank_0/a.zst", 3 },   /* the last one */
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct buf in = { 0 };
		struct metrics_table t = METRICS_TABLE_INIT;
		struct err e = { 0 };
		buf_printf(&in, "{\"input\":\"/q/step_4/rank_0/x.zst\",\"sequences\":1,\"rewards\":{\"r\":{\"mean\":0}}}\n"
			   "{\"input\":\"%s\",\"sequences\":1,\"rewards\":{\"r\":{\"mean\":1}}}\n", cases[i].path);
		errno = ENOTTY;   /* stale, from an earlier call: not a step number's overflow */
		int rc = read_text(&t, &in, "paths", &e);
		long got = -1;
		for (size_t r = 0; r < t.n; r++)
			if (t.rows[r].reward_sum[0] == 1)
				got = (long)t.rows[r].step;
		ok(rc == 0 && got == cases[i].step, "input %s: step %ld (got %ld)", cases[i].path, cases[i].step, got);
		metrics_free(&t);
		buf_free(&in);
	}
}

/* Eight reward names are the most: a ninth is an error naming the line. */
static void many_rewards(void)
{
	struct buf in = { 0 };
	struct metrics_table t = METRICS_TABLE_INIT;
	struct err e = { 0 };
	buf_printf(&in, "{\"input\":\"stdin\",\"sequences\":1,\"rewards\":{");
	for (int k = 0; k < METRICS_MAX_REWARDS; k++)
		buf_printf(&in, "%s\"r%d\":{\"mean\":%d}", k ? "," : "", k, k);
	buf_printf(&in, "}}\n");
	int rc = read_text(&t, &in, "eight", &e);
	ok(rc == 0 && t.n_rewards == 8 && t.rows[0].reward_sum[7] == 7, "eight reward names are taken");
	buf_reset(&in);
	buf_printf(&in, "\n{\"input\":\"stdin\",\"sequences\":1,\"rewards\":{\"r1\":{\"mean\":5},\"ninth\":{\"mean\":1}}}\n");
	rc = read_text(&t, &in, "nine", &e);
	ok(rc < 0 && strcmp(e.msg, "nine:2: more than 8 reward functions") == 0, "a ninth is an error: %s", rc ? e.msg : "none");
	metrics_free(&t);
	buf_free(&in);
}

/* How many panels, and so the image's layout and size: none (a row of no
 * values), two side by side, three in two rows (a reward of one sequence a
 * step among them). */
static void panels(void)
{
	is_text(script("", "p.png"),
		"$metrics << EOD\nstep\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n"
		HEAD("1", "1", "600", "300")
		"set xtics 1\nset xrange [-1:1]\nunset multiplot\n",
		"no lines at all: no panel, the x range around 0");
	is_text(script("{\"input\":\"stdin\",\"sequences\":1,\"rewards\":{\"r\":{\"mean\":null}}}\n", "p.png"),
		"$metrics << EOD\nstep\treward.r\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n1\t-\t-\t-\t-\t-\t-\n"
		HEAD("1", "1", "600", "300")
		"set xtics 1\nset xrange [0:2]\nunset multiplot\n",
		"a row of no values, a reward's name among them: no panel, one row of one");
	is_text(script("{\"step\":10,\"kl\":1,\"grad_norm\":2}\n{\"step\":30,\"kl\":3,\"grad_norm\":2}\n", "p.png"),
		"$metrics << EOD\nstep\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n"
		"10\t1\t-\t-\t2\t-\n30\t3\t-\t-\t2\t-\n"
		HEAD("1", "2", "1200", "300")
		"set xtics 1\nset autoscale y\nset title \"KL from the reference\"\n"
		"plot $metrics using 1:2 with linespoints notitle\n"
		"set yrange [1.8:2.2]\nset title \"grad norm\"\nplot $metrics using 1:5 with linespoints notitle\n"
		"unset multiplot\n",
		"two panels: side by side, 1200 wide; steps 10 to 30, every one a tic");
	is_text(script("{\"input\":\"stdin\",\"sequences\":1,\"rewards\":{\"r\":{\"mean\":0.5}}}\n"
		       "{\"step\":1,\"kl\":1,\"grad_norm\":2}\n", "p.png"),
		"$metrics << EOD\nstep\treward.r\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n"
		"1\t0.5\t1\t-\t-\t2\t-\n"
		HEAD("2", "2", "1200", "600")
		"set xtics 1\nset xrange [0:2]\n"
		"set yrange [0.45:0.55]\nset title \"mean reward\"\nplot $metrics using 1:2 with linespoints\n"
		"set yrange [0.9:1.1]\nset title \"KL from the reference\"\nplot $metrics using 1:3 with linespoints notitle\n"
		"set yrange [1.8:2.2]\nset title \"grad norm\"\nplot $metrics using 1:6 with linespoints notitle\n"
		"unset multiplot\n",
		"three panels, the reward's of one sequence: two rows");
}

/* A file that cannot be read as lines (a directory) is an error, not an
 * empty table. */
static void unreadable(void)
{
	struct metrics_table t = METRICS_TABLE_INIT;
	struct err e = { 0 };
	int rc = metrics_read(&t, "/", &e);
	ok(rc < 0 && strstr(e.msg, "/: Is a directory"), "a directory for a metrics file: %s", rc ? e.msg : "no error");
	metrics_free(&t);
}

int main(void)
{
	differential(400);
	input_paths();
	many_rewards();
	unreadable();
	gnuplot();
	panels();
	return tap_done();
}
