/*
 * optim.c: AdamW with learning-rate schedules and global-norm clipping, and
 * its state file (see optim.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsys.h"
#include "train/optim.h"

#define OPTIM_MAGIC "GRPOOPT1"
#define OPTIM_VERSION 1u

void optim_opts_default(struct optim_opts *o)
{
	memset(o, 0, sizeof *o);
	o->kind = OPTIM_ADAMW;
	o->lr = 1e-6;
	o->schedule = LR_CONSTANT;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = 1e-8;
	o->max_grad_norm = 1.0;
}

const char *const lr_schedule_names[] = { [LR_CONSTANT] = "constant", [LR_COSINE] = "cosine", [LR_LINEAR] = "linear", NULL };

const char *lr_schedule_name(enum lr_schedule s)
{
	return (unsigned)s < 3 ? lr_schedule_names[s] : "?";
}

const char *const wd_on_names[] = { [WD_ON_MATRICES] = "matrices", [WD_ON_ALL] = "all", NULL };

const char *wd_on_name(enum wd_on w)
{
	return (unsigned)w < 2 ? wd_on_names[w] : "?";
}

int optim_opts_check(const struct optim_opts *o, struct err *e)
{
	if (!(o->lr >= 0) || !isfinite(o->lr))
		return err_set(e, "learning rate must be >= 0 (got %g)", o->lr);
	if (o->warmup_steps < 0)
		return err_set(e, "warmup steps must be >= 0 (got %d)", o->warmup_steps);
	if (o->schedule != LR_CONSTANT && o->total_steps <= o->warmup_steps)
		return err_set(e, "the %s schedule needs total steps above the warmup's %d (got %d)",
		               lr_schedule_name(o->schedule), o->warmup_steps, o->total_steps);
	if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
		return err_set(e, "betas must lie in [0, 1) (got %g, %g)", o->beta1, o->beta2);
	if (!(o->eps > 0))
		return err_set(e, "eps must be > 0 (got %g)", o->eps);
	if (!(o->weight_decay >= 0))
		return err_set(e, "weight decay must be >= 0 (got %g)", o->weight_decay);
	if ((unsigned)o->wd_on > WD_ON_ALL)
		return err_set(e, "weight decay on: unknown choice %d", (int)o->wd_on);
	if (!(o->max_grad_norm >= 0))
		return err_set(e, "max grad norm must be >= 0 (got %g)", o->max_grad_norm);
	return 0;
}

double optim_lr(const struct optim_opts *o, int64_t t)
{
	if (t < 1)
		t = 1;
	if (t <= o->warmup_steps)
		return o->lr * (double)t / o->warmup_steps;
	if (o->schedule == LR_CONSTANT)
		return o->lr;
	double p = (double)(t - 1 - o->warmup_steps) / (double)(o->total_steps - o->warmup_steps);
	if (p > 1)
		p = 1;
	if (o->schedule == LR_LINEAR)
		return o->lr * (1 - p);
	return o->lr * 0.5 * (1 + cos(M_PI * p));
}

int optim_init(struct optim *op, const struct optim_opts *o, size_t n, struct err *e)
{
	memset(op, 0, sizeof *op);
	if (optim_opts_check(o, e) < 0)
		return -1;
	op->o = *o;
	op->n = n;
	op->m = calloc(n ? n : 1, sizeof *op->m);
	op->v = calloc(n ? n : 1, sizeof *op->v);
	if (!op->m || !op->v) {
		optim_free(op);
		return err_set(e, "out of memory for the optimizer state of %zu weights", n);
	}
	return 0;
}

void optim_free(struct optim *op)
{
	free(op->m);
	free(op->v);
	free(op->decayed);
	memset(op, 0, sizeof *op);
}

int optim_set_decayed(struct optim *op, const struct optim_span *s, size_t ns, struct err *e)
{
	size_t end = 0;
	for (size_t i = 0; i < ns; i++) {
		if (s[i].off < end || s[i].off > op->n || s[i].n > op->n - s[i].off)
			return err_set(e, "decayed span %zu [%zu, +%zu) is out of order or past the %zu weights", i,
			               s[i].off, s[i].n, op->n);
		end = s[i].off + s[i].n;
	}
	struct optim_span *c = malloc((ns ? ns : 1) * sizeof *c);
	if (!c)
		return err_set(e, "out of memory for %zu decayed spans", ns);
	if (ns)
		memcpy(c, s, ns * sizeof *c);
	free(op->decayed);
	op->decayed = c;
	op->ndecayed = ns;
	op->decayed_set = 1;
	return 0;
}

/* Step t's scalars from the gradient's norm: refused (-1) when it is not finite. */
static int adamw_scalars(const struct optim *op, double norm, struct model_gpu_adamw *p, struct optim_result *r,
                         struct err *e)
{
	const struct optim_opts *o = &op->o;
	if (!isfinite(norm))
		return err_set(e, "the gradient norm is %g: step %lld not taken", norm, (long long)op->step + 1);
	/* torch.nn.utils.clip_grad_norm_: min(1, max/(norm + 1e-6)) at every norm, so a
	 * norm within 1e-6 below the bound is scaled too */
	double clip = 1;
	if (o->max_grad_norm > 0)
		clip = fmin(1.0, o->max_grad_norm / (norm + 1e-6));
	int64_t t = op->step + 1;
	double lr = optim_lr(o, t);
	p->clip = clip;
	p->beta1 = o->beta1, p->beta2 = o->beta2, p->eps = o->eps;
	p->step_size = lr / (1 - pow(o->beta1, (double)t));
	p->sqrt_bc2 = sqrt(1 - pow(o->beta2, (double)t));
	p->decay = 1 - lr * o->weight_decay;
	p->decay_vectors = o->wd_on == WD_ON_ALL;
	if (r) {
		r->grad_norm = norm;
		r->clip = clip;
		r->lr = lr;
	}
	return 0;
}

/* Weights [from, to) with the decay factor decay (1: none, the bits of wd = 0). */
static void adamw_run(struct optim *op, float *w, const float *g, size_t from, size_t to,
                      const struct model_gpu_adamw *p, double decay)
{
	double b1 = p->beta1, b2 = p->beta2;
	for (size_t i = from; i < to; i++) {
		double gi = g[i] * p->clip;
		double m = b1 * op->m[i] + (1 - b1) * gi;
		double v = b2 * op->v[i] + (1 - b2) * gi * gi;
		op->m[i] = (float)m;
		op->v[i] = (float)v;
		double wi = (double)w[i] * decay;
		w[i] = (float)(wi - p->step_size * m / (sqrt(v) / p->sqrt_bc2 + p->eps));
	}
}

int optim_step(struct optim *op, float *w, const float *g, struct optim_result *r, struct err *e)
{
	int spans = op->o.wd_on == WD_ON_MATRICES && op->o.weight_decay > 0;
	if (spans && !op->decayed_set)
		return err_set(e, "weight decay on matrices, but the optimizer was not told which weights are "
		               "matrices: step %lld not taken", (long long)op->step + 1);
	double ss = 0;
	for (size_t i = 0; i < op->n; i++)
		ss += (double)g[i] * g[i];
	struct model_gpu_adamw p;
	if (adamw_scalars(op, sqrt(ss), &p, r, e) < 0)
		return -1;
	if (!spans) {
		adamw_run(op, w, g, 0, op->n, &p, p.decay);
	} else {
		size_t at = 0;
		for (size_t k = 0; k < op->ndecayed; k++) {
			const struct optim_span *s = &op->decayed[k];
			adamw_run(op, w, g, at, s->off, &p, 1);
			adamw_run(op, w, g, s->off, s->off + s->n, &p, p.decay);
			at = s->off + s->n;
		}
		adamw_run(op, w, g, at, op->n, &p, 1);
	}
	op->step++;
	return 0;
}

int optim_step_gpu(struct optim *op, struct model_gpu *g, struct optim_result *r, struct err *e)
{
	double norm;
	struct model_gpu_adamw p;
	if (model_gpu_grad_norm(g, &norm, e) < 0 || adamw_scalars(op, norm, &p, r, e) < 0 ||
	    model_gpu_adamw(g, &p, e) < 0)
		return -1;
	op->step++;
	return 0;
}

/* 64-bit FNV-1a, continued from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int little_endian(void)
{
	uint32_t x = 1;
	unsigned char c;
	memcpy(&c, &x, 1);
	return c == 1;
}

struct opt_header {
	char magic[8];
	uint32_t version, kind;
	uint64_t n;
	int64_t step;
};

int optim_save(const struct optim *op, const float *w, const char *path, struct err *e)
{
	if (!little_endian())
		return err_set(e, "%s: the optimizer state is little-endian; this host is not", path);
	struct opt_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, OPTIM_MAGIC, 8);
	h.version = OPTIM_VERSION;
	h.kind = (uint32_t)op->o.kind;
	h.n = op->n;
	h.step = op->step;
	size_t bytes = op->n * sizeof(float);
	uint64_t sum = 0xcbf29ce484222325ull;
	sum = fnv(sum, &h, sizeof h);
	sum = fnv(sum, w, bytes);
	sum = fnv(sum, op->m, bytes);
	sum = fnv(sum, op->v, bytes);

	int fd = fsys_open_excl(path, e);
	if (fd < 0)
		return -1;
	if (fsys_write_all(fd, &h, sizeof h, path, e) < 0 || fsys_write_all(fd, w, bytes, path, e) < 0 ||
	    fsys_write_all(fd, op->m, bytes, path, e) < 0 || fsys_write_all(fd, op->v, bytes, path, e) < 0 ||
	    fsys_write_all(fd, &sum, sizeof sum, path, e) < 0 || fsys_fsync(fd, path, e) < 0) {
		fsys_close(fd, path, NULL);
		return -1;
	}
	return fsys_close(fd, path, e);
}

static int read_exact(int fd, void *p, size_t n, const char *path, struct err *e)
{
	char *c = p;
	while (n > 0) {
		ssize_t k = fsys_read(fd, c, n, path, e);
		if (k < 0)
			return -1;
		if (k == 0)
			return err_set(e, "%s: truncated optimizer state", path);
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

int optim_load(struct optim *op, float *w, size_t n, const char *path, struct err *e)
{
	if (!little_endian())
		return err_set(e, "%s: the optimizer state is little-endian; this host is not", path);
	struct opt_header h;
	int fd = fsys_open_read(path, e);
	if (fd < 0)
		return -1;
	int rc = -1;
	float *m = NULL, *v = NULL, *wt = NULL;
	if (read_exact(fd, &h, sizeof h, path, e) < 0)
		goto out;
	if (memcmp(h.magic, OPTIM_MAGIC, 8) != 0) {
		err_set(e, "%s: not an optimizer state file (bad magic)", path);
		goto out;
	}
	if (h.version != OPTIM_VERSION || h.kind != (uint32_t)op->o.kind) {
		err_set(e, "%s: optimizer state version %u kind %u, expected version %u kind %u", path, h.version,
		        h.kind, OPTIM_VERSION, (unsigned)op->o.kind);
		goto out;
	}
	if (h.n != n || op->n != n) {
		err_set(e, "%s: optimizer state for %llu weights, the model has %zu", path,
		        (unsigned long long)h.n, n);
		goto out;
	}
	size_t bytes = n * sizeof(float);
	wt = malloc(bytes ? bytes : 1), m = malloc(bytes ? bytes : 1), v = malloc(bytes ? bytes : 1);
	if (!wt || !m || !v) {
		err_set(e, "%s: out of memory", path);
		goto out;
	}
	uint64_t sum, want = 0xcbf29ce484222325ull;
	if (read_exact(fd, wt, bytes, path, e) < 0 || read_exact(fd, m, bytes, path, e) < 0 ||
	    read_exact(fd, v, bytes, path, e) < 0 || read_exact(fd, &sum, sizeof sum, path, e) < 0)
		goto out;
	want = fnv(want, &h, sizeof h);
	want = fnv(want, wt, bytes);
	want = fnv(want, m, bytes);
	want = fnv(want, v, bytes);
	char extra;
	ssize_t k = fsys_read(fd, &extra, 1, path, e);
	if (k != 0) {
		if (k > 0)
			err_set(e, "%s: trailing bytes after the optimizer state", path);
		goto out;
	}
	if (sum != want) {
		err_set(e, "%s: optimizer state checksum mismatch (corrupt file)", path);
		goto out;
	}
	memcpy(w, wt, bytes);
	memcpy(op->m, m, bytes);
	memcpy(op->v, v, bytes);
	op->step = h.step;
	rc = 0;
out:
	free(wt);
	free(m);
	free(v);
	fsys_close(fd, path, NULL);
	return rc;
}
