/*
 * metrics.c: the per-step table of a run's metrics lines (metrics.h).
 */
#include "data/metrics.h"
#include "data/jsonview.h"
#include "data/traj.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The row of step, made (with every value missing) where there is none. */
static struct metrics_row *row_at(struct metrics_table *t, int64_t step)
{
	/* the first row not before step, by bisection: a scan from the first
	 * row for every line made a long run's plot quadratic (80,000 lines, 15 s) */
	size_t i = 0, hi = t->n;
	while (i < hi) {
		size_t mid = i + (hi - i) / 2;
		if (t->rows[mid].step < step)
			i = mid + 1;
		else
			hi = mid;
	}
	if (i < t->n && t->rows[i].step == step)
		return &t->rows[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct metrics_row *r = realloc(t->rows, cap * sizeof *r);
		if (!r)
			return NULL;
		t->rows = r;
		t->cap = cap;
	}
	memmove(&t->rows[i + 1], &t->rows[i], (t->n - i) * sizeof *t->rows);
	t->n++;
	struct metrics_row *r = &t->rows[i];
	memset(r, 0, sizeof *r);
	r->step = step;
	r->kl = r->entropy = r->clip_fraction = r->grad_norm = r->tokens_per_s = NAN;
	return r;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* K of ".../step_K/rank_X/NAME", or -1; -2 where K is past TRAJ_INT_MAX,
 * which no tool writes (and K + 1 could overflow). */
static int64_t input_step(const char *path)
{
	const char *s = path, *p;
	int64_t found = -1;
	while ((p = strstr(s, "step_")) != NULL) {
		char *end;
		errno = 0;
		long long k = strtoll(p + 5, &end, 10);
		if (end > p + 5 && k >= 0 && strncmp(end, "/rank_", 6) == 0 && (p == path || p[-1] == '/'))
			found = errno || k > TRAJ_INT_MAX ? -2 : k;
		s = p + 5;
	}
	return found;
}

static int reward_index(struct metrics_table *t, const char *name)
{
	for (int k = 0; k < t->n_rewards; k++)
		if (strcmp(t->names[k], name) == 0)
			return k;
	if (t->n_rewards == METRICS_MAX_REWARDS)
		return -1;
	snprintf(t->names[t->n_rewards], sizeof t->names[0], "%s", name);
	return t->n_rewards++;
}

static int add_score(struct metrics_table *t, const cJSON *o, const char *input, const char *path,
                     unsigned long long line, struct err *e)
{
	int64_t k = input_step(input);
	if (k == -2)
		return err_set(e, "%s:%llu: input %s: a step past %lld", path, line, input, TRAJ_INT_MAX);
	int64_t step = k >= 0 ? k + 1 : t->next_unplaced;
	t->next_unplaced = step + 1;
	struct metrics_row *r = row_at(t, step);
	if (!r)
		return err_set(e, "out of memory");
	double seqs = num(o, "sequences");
	if (!(seqs > 0))
		return 0;   /* an input of no sequences has no mean reward */
	const cJSON *rw = cJSON_GetObjectItemCaseSensitive(o, "rewards"), *f;
	cJSON_ArrayForEach(f, rw) {
		int i = reward_index(t, f->string);
		if (i < 0)
			return err_set(e, "%s:%llu: more than %d reward functions", path, line, METRICS_MAX_REWARDS);
		double mean = num(f, "mean");
		if (isfinite(mean)) {
			r->reward_sum[i] += mean * seqs;
			r->reward_seqs[i] += seqs;
		}
	}
	return 0;
}

static int add_step(struct metrics_table *t, const cJSON *o, int64_t step, struct err *e)
{
	struct metrics_row *r = row_at(t, step);
	if (!r)
		return err_set(e, "out of memory");
	r->kl = num(o, "kl");
	r->entropy = num(o, "entropy");
	r->clip_fraction = num(o, "clip_low") + num(o, "clip_high");
	r->grad_norm = num(o, "grad_norm");
	r->tokens_per_s = num(o, "tokens_per_s");
	return 0;
}

int metrics_read(struct metrics_table *t, const char *path, struct err *e)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return err_sys(e, "%s", path);
	int rc = metrics_read_stream(t, f, path, e);
	fclose(f);
	return rc;
}

int metrics_read_stream(struct metrics_table *t, FILE *f, const char *path, struct err *e)
{
	char *s = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned long long line = 0;
	int rc = 0;
	while (rc == 0 && (len = getline(&s, &cap, f)) >= 0) {
		line++;
		if (strspn(s, " \t\r\n") == (size_t)len)
			continue;
		cJSON *o = json_parse_n(s, (size_t)len, NULL);
		if (!o && errno == ENOMEM) {
			rc = err_sys(e, "%s:%llu", path, line);
		} else if (!cJSON_IsObject(o)) {
			rc = err_set(e, "%s:%llu: not a JSON object", path, line);
		} else {
			const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "input");
			double step = num(o, "step");
			if (cJSON_IsString(in) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "rewards")))
				rc = add_score(t, o, in->valuestring, path, line, e);
			else if (isfinite(step) && isfinite(num(o, "grad_norm")) &&
				 (step < 0 || step > TRAJ_INT_MAX || step != floor(step)))
				rc = err_set(e, "%s:%llu: a trainer's line with step %.17g, not a step number", path, line, step);
			else if (isfinite(step) && isfinite(num(o, "grad_norm")))
				rc = add_step(t, o, (int64_t)step, e);
		}
		cJSON_Delete(o);
	}
	if (rc == 0 && !feof(f))   /* getline failing for memory sets no error flag */
		rc = err_sys(e, "%s", path);
	free(s);
	return rc;
}

static int value(struct buf *out, double v)
{
	return isfinite(v) ? buf_printf(out, "\t%.9g", v) : buf_printf(out, "\t-");
}

int metrics_tsv(const struct metrics_table *t, struct buf *out)
{
	int x = buf_printf(out, "step");
	for (int k = 0; k < t->n_rewards; k++)
		x |= buf_printf(out, "\treward.") | buf_put_tsv_cell(out, t->names[k], strlen(t->names[k]));
	x |= buf_printf(out, "\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s\n");
	for (size_t i = 0; i < t->n; i++) {
		const struct metrics_row *r = &t->rows[i];
		x |= buf_printf(out, "%lld", (long long)r->step);
		for (int k = 0; k < t->n_rewards; k++)
			x |= value(out, r->reward_seqs[k] > 0 ? r->reward_sum[k] / r->reward_seqs[k] : NAN);
		x |= value(out, r->kl) | value(out, r->entropy) | value(out, r->clip_fraction);
		x |= value(out, r->grad_norm) | value(out, r->tokens_per_s);
		x |= buf_printf(out, "\n");
	}
	return x ? -1 : 0;
}

/* s as a gnuplot double-quoted string's contents: a control byte as its
 * octal escape, as a line break would end the command and begin another. */
static int quoted(struct buf *out, const char *s)
{
	int x = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			x |= buf_printf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			x |= buf_printf(out, "\\%03o", c);
		else
			x |= buf_put_u8(out, c);
	}
	return x;
}

/* Value c of row r: 0..n_rewards-1 the rewards' means, then kl ... tokens_per_s. */
static double cell(const struct metrics_table *t, const struct metrics_row *r, int c)
{
	if (c < t->n_rewards)
		return r->reward_seqs[c] > 0 ? r->reward_sum[c] / r->reward_seqs[c] : NAN;
	double v[] = { r->kl, r->entropy, r->clip_fraction, r->grad_norm, r->tokens_per_s };
	return v[c - t->n_rewards];
}

/* The range of columns [c0, c1) over every row: 0 when they hold no value. */
static int range(const struct metrics_table *t, int c0, int c1, double *lo, double *hi)
{
	int any = 0;
	for (size_t i = 0; i < t->n; i++)
		for (int c = c0; c < c1; c++) {
			double v = cell(t, &t->rows[i], c);
			if (!isfinite(v))
				continue;
			*lo = any && *lo < v ? *lo : v;
			*hi = any && *hi > v ? *hi : v;
			any = 1;
		}
	return any;
}

/* Before a panel of columns [c0, c1): a y range of its own where all its
 * values are one (gnuplot would warn of an empty range and widen it so). */
static int yrange(struct buf *out, const struct metrics_table *t, int c0, int c1)
{
	double lo, hi;
	range(t, c0, c1, &lo, &hi);
	if (lo != hi)
		return buf_printf(out, "set autoscale y\n");
	double d = lo != 0 ? fabs(lo) / 10 : 1;
	return buf_printf(out, "set yrange [%.9g:%.9g]\n", lo - d, hi + d);
}

int metrics_gnuplot(const struct metrics_table *t, const char *png, struct buf *out)
{
	static const char *const titles[] = { "KL from the reference", "entropy (per token)",
		                              "clip fraction (tokens)", "grad norm", "tokens per second" };
	/* gnuplot stops at a plot with no point: draw only the panels with some */
	double lo, hi;
	int R = t->n_rewards, panels = R && range(t, 0, R, &lo, &hi);
	for (int c = 0; c < 5; c++)
		panels += range(t, R + c, R + c + 1, &lo, &hi);
	int rows = panels > 1 ? (panels + 1) / 2 : 1;
	int x = buf_printf(out, "$metrics << EOD\n");
	x |= metrics_tsv(t, out);
	x |= buf_printf(out, "EOD\nset terminal png noenhanced size %d,%d\nset output \"", panels > 1 ? 1200 : 600,
	                300 * rows);
	x |= quoted(out, png);
	x |= buf_printf(out, "\"\nset datafile separator \"\\t\"\nset datafile missing \"-\"\n"
	                "set key autotitle columnhead\nset xlabel \"step\"\nset grid\n"
	                "set multiplot layout %d,%d\n", rows, panels > 1 ? 2 : 1);
	/* whole steps on the x axis; one step alone gets a range around it (gnuplot would warn) */
	int64_t first = t->n ? t->rows[0].step : 0, last = t->n ? t->rows[t->n - 1].step : 0;
	if (last - first <= 20)
		x |= buf_printf(out, "set xtics 1\n");
	if (first == last)
		x |= buf_printf(out, "set xrange [%lld:%lld]\n", (long long)first - 1, (long long)last + 1);
	if (R && range(t, 0, R, &lo, &hi)) {
		x |= yrange(out, t, 0, R) | buf_printf(out, "set title \"mean reward\"\nplot");
		for (int k = 0; k < R; k++)
			x |= buf_printf(out, "%s $metrics using 1:%d with linespoints", k ? "," : "", k + 2);
		x |= buf_printf(out, "\n");
	}
	for (int c = 0; c < 5; c++)
		if (range(t, R + c, R + c + 1, &lo, &hi))
			x |= yrange(out, t, R + c, R + c + 1) |
			     buf_printf(out, "set title \"%s\"\nplot $metrics using 1:%d with linespoints notitle\n",
			                titles[c], R + 2 + c);
	x |= buf_printf(out, "unset multiplot\n");
	return x ? -1 : 0;
}

void metrics_free(struct metrics_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = t->cap = 0;
}
