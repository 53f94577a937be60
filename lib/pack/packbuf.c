/*
 * packbuf.c: grpo-pack's buffer of trajectories, their sources and the
 * choice of each step's sequences. See packbuf.h.
 */
#include "pack/packbuf.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsys.h"
#include "data/done.h"
#include "data/mbbuild.h"
#include "pack/pack.h"
#include "data/sfile.h"
#include "data/trajhash.h"
#include "spool/spool.h"

void packbuf_init(struct packbuf *b, const struct packbuf_opt *o)
{
	memset(b, 0, sizeof *b);
	b->o = *o;
	b->job.hash = TRAJHASH_INIT;
}

void packbuf_free(struct packbuf *b)
{
	for (size_t i = 0; i < b->n; i++)
		traj_free(&b->ent[i].t);
	free(b->ent);
	for (size_t i = 0; i < b->nsrc; i++)
		free(b->src[i].done);
	free(b->src);
	for (uint32_t q = 0; q < b->n_runs; q++)
		free((char *)b->runs[q].name);
	free(b->runs);
	packstep_inputs_free(b->prev, b->n_prev);
	free(b->carry);
	free(b->job.done);
	for (uint32_t i = 0; i < b->job.n_in; i++)
		free(b->job.in_name[i]);
	free(b->job.in_name);
	free(b->job.in_data);
	free(b->job.in_file);
	free(b->job.in_seqs);
	done_job_free(&b->job.prev);
	free(b->queue);
	for (size_t i = 0; i < b->n_known; i++)
		free(b->known[i].name);
	free(b->known);
	memset(b, 0, sizeof *b);
}

int packbuf_resume(struct packbuf *b, const char *queue, int64_t step, struct err *e)
{
	if (step <= 0)
		return 0;
	free(b->queue);
	if (!(b->queue = strdup(queue)))
		return err_set(e, "out of memory");
	if (packstep_load_runs(queue, step - 1, &b->runs, &b->n_runs, &b->turn, e) < 0 ||
	    packstep_load_inputs(queue, step - 1, &b->prev, &b->n_prev, e) < 0)
		return -1;
	int r = done_load_job(queue, step - 1, &b->job.prev, e);
	b->job.has_prev = r == 1;
	b->job.prev_step = step - 1;
	return r < 0 ? -1 : 0;
}

/* 0 absent, 1 there, -1 error: QUEUE/step_K/rank_X/NAME, or with done its
 * record QUEUE/step_K/rank_X/.done/NAME. */
static int queue_has(const char *queue, const char *rel, int done, struct err *e)
{
	char p[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	struct stat sb;
	if (!slash)
		return 0;
	int len = done ? snprintf(p, sizeof p, "%s/%.*s/.done/%s", queue, (int)(slash - rel), rel, slash + 1)
		       : snprintf(p, sizeof p, "%s/%s", queue, rel);
	if (len >= (int)sizeof p)
		return err_set(e, "%s: path too long", queue);
	int r = fsys_stat(p, &sb, e);
	return r < 0 ? -1 : r == 0;
}

int packbuf_carry(struct packbuf *b, const char *const *queues, size_t n_queues, struct err *e)
{
	free(b->carry);
	if (!(b->carry = malloc(b->n_prev ? b->n_prev : 1)))
		return err_set(e, "out of memory");
	for (uint32_t q = 0; q < b->n_prev; q++) {
		int retired = 0, present = n_queues == 0;
		for (size_t i = 0; i < n_queues; i++) {
			int d = queue_has(queues[i], b->prev[q].name, 1, e);
			int f = d == 0 ? queue_has(queues[i], b->prev[q].name, 0, e) : 0;
			if (d < 0 || f < 0)
				return -1;
			retired |= d;
			present |= f;
		}
		b->carry[q] = present && !retired;
	}
	return 0;
}

/* A new plain input, named name, whose trajectories come next. */
static int job_input_begin(struct packbuf_job *j, const char *name, struct err *e)
{
	void *nn = j->in_name, *nd = j->in_data, *nf = j->in_file, *ns = j->in_seqs;
	int grown = buf_grow_array(&nn, j->n_in, sizeof *j->in_name) == 0;
	j->in_name = nn;
	grown = grown && buf_grow_array(&nd, j->n_in, sizeof *j->in_data) == 0;
	j->in_data = nd;
	grown = grown && buf_grow_array(&nf, j->n_in, sizeof *j->in_file) == 0;
	j->in_file = nf;
	grown = grown && buf_grow_array(&ns, j->n_in, sizeof *j->in_seqs) == 0;
	j->in_seqs = ns;
	if (!grown)
		return err_set(e, "out of memory");
	if (!(j->in_name[j->n_in] = strdup(name)))
		return err_set(e, "out of memory");
	j->in_data[j->n_in] = j->in_file[j->n_in] = TRAJHASH_INIT;
	j->in_seqs[j->n_in++] = 0;
	return 0;
}

/* ---- reading ---- */

static int run_index(struct packbuf *b, const char *name, uint32_t *idx)
{
	const char *n = name ? name : "";
	for (uint32_t q = 0; q < b->n_runs; q++)
		if (strcmp(b->runs[q].name, n) == 0) {
			*idx = q;
			return 0;
		}
	struct packstep_run *r = realloc(b->runs, (b->n_runs + 1) * sizeof *r);
	if (!r)
		return -1;
	b->runs = r;
	memset(&r[b->n_runs], 0, sizeof *r);
	if (!(r[b->n_runs].name = strdup(n)))
		return -1;
	*idx = b->n_runs++;
	return 0;
}

static int in_list(const uint32_t *v, uint32_t n, uint32_t ord)
{
	for (uint32_t x = 0; x < n; x++)
		if (v[x] == ord)
			return 1;
	return 0;
}

static int is_done(const struct packstep_input *in, uint32_t ord)
{
	return in_list(in->done, in->n_done, ord);
}

static int push_ord(uint32_t **v, uint32_t *n, uint32_t *cap, uint32_t ord)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? 2 * *cap : 16;
		uint32_t *d = realloc(*v, nc * sizeof *d);
		if (!d)
			return -1;
		*v = d, *cap = nc;
	}
	(*v)[(*n)++] = ord;
	return 0;
}

static int note_done(struct packbuf_source *so, uint32_t ord)
{
	return push_ord(&so->done, &so->n_done, &so->cap_done, ord);
}

static int note_job_done(struct packbuf_job *j, uint32_t ord)
{
	return push_ord(&j->done, &j->n_done, &j->cap_done, ord);
}

/* Count a dropped trajectory, and note it done in its source: a file read
 * again later (its rest was left queued) must not count it twice. */
static int drop(struct packbuf *b, int reason, struct packbuf_source *so, uint32_t ord, struct err *e)
{
	b->drops.n[reason]++;
	if (!so) {
		b->job.dropped[reason]++;
		return note_job_done(&b->job, ord) < 0 ? err_set(e, "out of memory") : 0;
	}
	so->dropped[reason]++;
	return note_done(so, ord) < 0 ? err_set(e, "out of memory") : 0;
}

static int push_entry(struct packbuf *b, struct traj *t, uint32_t use, int32_t src, uint32_t ord,
		      uint64_t group, struct err *e)
{
	if (b->n == b->cap) {
		size_t nc = b->cap ? 2 * b->cap : 256;
		struct packbuf_entry *ne = realloc(b->ent, nc * sizeof *ne);
		if (!ne)
			return err_set(e, "out of memory");
		b->ent = ne, b->cap = nc;
	}
	struct packbuf_entry *en = &b->ent[b->n];
	if (run_index(b, t->run, &en->run) < 0)
		return err_set(e, "out of memory");
	en->t = *t;
	memset(t, 0, sizeof *t);
	en->use = use;
	en->src = src;
	en->ord = ord;
	en->group = group;
	en->taken = 0;
	if (src >= 0)
		b->src[src].pending++;
	else
		b->job.pending++;
	b->n++;
	return 0;
}

int packbuf_add_group(struct packbuf *b, struct group *g, int32_t src, const char *name, uint64_t rec,
		      struct err *e)
{
	uint64_t gi = b->groups++;
	struct packbuf_source *so = src >= 0 ? &b->src[src] : NULL;
	if (!so && b->job.n_in == 0 && job_input_begin(&b->job, name, e) < 0)
		return -1;
	for (uint32_t j = 0; j < g->n; j++) {
		struct traj *t = &g->trajs[j];
		uint32_t ord = so ? so->next_ord++ : b->job.next_ord++;
		if (so) {
			so->hash = trajhash_file_add(so->hash, g, j);
			so->seqs++;
		}
		if (so && so->skip && is_done(so->skip, ord)) {
			if (note_done(so, ord) < 0)
				return err_set(e, "out of memory");
			continue;
		}
		if (!so) {
			/* an unfinished job's packed part is skipped now; the job's
			 * identity, known once all is read, decides (packbuf_job_settle) */
			const struct done_job *pj = &b->job.prev;
			uint32_t in = b->job.n_in - 1;
			b->job.hash = trajhash_job_add(b->job.hash, g, j);
			b->job.in_data[in] = trajhash_job_add(b->job.in_data[in], g, j);
			b->job.in_file[in] = trajhash_file_add(b->job.in_file[in], g, j);
			b->job.in_seqs[in]++;
			if (b->job.has_prev && !pj->finished && in_list(pj->done, pj->n_done, ord)) {
				if (note_job_done(&b->job, ord) < 0)
					return err_set(e, "out of memory");
				continue;
			}
		}
		uint64_t len = (uint64_t)t->n_prompt + t->n_response;
		char idb[24];
		if (!t->scored)
			return err_set(e, "%s: record %llu: trajectory %u (sequence_id %s) is not scored", name,
				       (unsigned long long)rec, j, traj_id_text(&t->sequence_id, idb));
		if (len == 0) {
			if (drop(b, PACKSTEP_EMPTY, so, ord, e) < 0)
				return -1;
			continue;
		}
		uint32_t use = (uint32_t)len;
		if (len > b->o.seq_len) {
			if (b->o.overlong == PACKBUF_OVER_ERROR)
				return err_set(e, "%s: record %llu: sequence_id %s has %llu tokens, more than %s "
					       "(see --overlong)", name, (unsigned long long)rec,
					       traj_id_text(&t->sequence_id, idb), (unsigned long long)len, b->o.cap_text);
			if (b->o.overlong == PACKBUF_OVER_SKIP) {
				if (drop(b, PACKSTEP_OVERLONG, so, ord, e) < 0)
					return -1;
				continue;
			}
			use = b->o.seq_len;
		}
		if (push_entry(b, t, use, src, ord, gi, e) < 0)
			return -1;
	}
	return 0;
}

int packbuf_read_fd(struct packbuf *b, int fd, const char *name, int32_t src, struct err *e)
{
	struct sfile_reader r;
	struct record rec;
	int rc;
	if (src < 0 && job_input_begin(&b->job, name, e) < 0)
		return -1;
	if (sfile_reader_open_fd(&r, fd, name, e) < 0)
		return -1;
	while ((rc = sfile_read(&r, &rec, e)) > 0) {
		if (rec.kind != REC_GROUP) {
			record_free(&rec);
			rc = err_set(e, "%s: record %llu: not a group of trajectories", name,
				     (unsigned long long)r.record_no);
			break;
		}
		rc = packbuf_add_group(b, &rec.group, src, name, r.record_no, e);
		record_free(&rec);
		if (rc < 0)
			break;
	}
	sfile_reader_close(&r);
	return rc < 0 ? -1 : 0;
}

/* The rank directories of the sources retired, each flushed once: the
 * next manifest no longer names them, so it must not reach the disk before
 * their retirement does, or a power cut between the two would leave them
 * waiting again, known to no manifest, to be packed a second time. */
static int flush_retired(struct packbuf *b, struct err *e)
{
	int r = 0;
	for (size_t i = 0; i < b->nsrc; i++) {
		const struct claim *c = &b->src[i].c;
		int seen = !b->src[i].unflushed;
		for (size_t k = 0; k < i && !seen; k++)
			seen = b->src[k].unflushed && claim_same_rank(&b->src[k].c, c);
		if (!seen && r == 0 && claim_flush_done(c, e) < 0)
			r = -1;
	}
	for (size_t i = 0; i < b->nsrc && r == 0; i++)
		b->src[i].unflushed = 0;
	return r;
}

/* "step_K/rank_X/NAME": how a manifest names a queue file (malloc'ed). */
static char *rel_name(const struct claim *c)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "step_%lld/rank_%d/%s", (long long)c->step, c->rank, c->name);
	return strdup(buf);
}

/* ---- files packed before ---- */

static int know(struct packbuf *b, uint64_t hash, int64_t step, const char *name, int removed, struct err *e)
{
	if (!hash)
		return 0;   /* a record from before hashes were kept */
	void *p = b->known;
	if (buf_grow_array(&p, b->n_known, sizeof *b->known) < 0)
		return err_set(e, "out of memory");
	b->known = p;
	char *n = strdup(name);
	if (!n)
		return err_set(e, "out of memory");
	b->known[b->n_known++] = (struct packbuf_known){ hash, step, n, removed };
	return 0;
}

/* The plain inputs of job j, of the manifest of step (or its record in .jobs). */
static int know_job(struct packbuf *b, const struct done_job *j, int64_t step, int removed, struct err *e)
{
	for (uint32_t x = 0; j->inputs_hash && x < j->n_inputs_data; x++) {
		char name[64];
		snprintf(name, sizeof name, "input %u of job %016llx", x + 1, (unsigned long long)j->id);
		if (know(b, j->inputs_hash[x], step, name, removed, e) < 0)
			return -1;
	}
	return 0;
}

static int know_manifest(struct packbuf *b, const struct done_manifest *m, struct err *e)
{
	for (uint32_t x = 0; x < m->n_inputs; x++)
		if (know(b, m->inputs_hash ? m->inputs_hash[x] : 0, m->step, m->inputs[x], 0, e) < 0)
			return -1;
	for (uint32_t x = 0; x < m->n_partial; x++)
		if (know(b, m->partial[x].hash, m->step, m->partial[x].file, 0, e) < 0)
			return -1;
	return m->has_job ? know_job(b, &m->job, m->step, 0, e) : 0;
}

/* The queue files and plain inputs every manifest of the output queue
 * records, and those of the steps gc removed (QUEUE/.jobs). */
static int read_known(struct packbuf *b, struct err *e)
{
	int64_t *steps = NULL;
	size_t n = 0;
	struct done_jobrec *v = NULL;
	size_t nv = 0;
	b->known_read = 1;
	if (!b->queue)
		return 0;
	int r = spool_list_steps(b->queue, -1, -1, &steps, &n, e);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct done_manifest m;
		int got = done_load(b->queue, steps[i], &m, e);
		r = got < 0 ? -1 : got == 1 ? know_manifest(b, &m, e) : 0;
		if (got == 1)
			done_free(&m);
	}
	free(steps);
	if (r == 0)
		r = done_jobs_load(b->queue, &v, &nv, e);
	for (size_t i = 0; i < nv && r == 0; i++) {
		for (uint32_t x = 0; x < v[i].n_files && r == 0; x++)
			r = know(b, v[i].files_hash[x], v[i].step, v[i].files[x], 1, e);
		if (r == 0)
			r = know_job(b, &v[i].job, v[i].step, 1, e);
	}
	done_jobrecs_free(v, nv);
	if (r < 0)
		b->known_read = 0;
	return r;
}

/* Where known k's trajectories are: "packed into step N" and, when gc
 * removed that step, where its record is. */
static void known_where(const struct packbuf *b, const struct packbuf_known *k, char *out, size_t size)
{
	if (k->removed)
		snprintf(out, size, "packed into step %lld (removed by grpo-spool gc, recorded in %s/.jobs)",
			 (long long)k->step, b->queue);
	else
		snprintf(out, size, "packed into step %lld", (long long)k->step);
}

/* Does source idx, just read, hold trajectories packed before, or read
 * before in this run (in a queue file or a plain input)? 1 saying so in
 * said (the file, whose they are and where), 0 no, -1 error. Its own
 * records in the newest manifest (a file packed in part) are its, not a
 * copy's. */
static int packed_before(struct packbuf *b, int32_t idx, struct err *said, struct err *e)
{
	const struct packbuf_source *so = &b->src[idx];
	if (so->seqs == 0 || (!b->known_read && read_known(b, e) < 0))
		return so->seqs == 0 ? 0 : -1;
	char *rel = rel_name(&so->c);
	if (!rel)
		return err_set(e, "out of memory");
	char what[2 * PATH_MAX + 128] = "", where[PATH_MAX + 96];
	for (size_t i = 0; i < b->n_known && !*what; i++) {
		const struct packbuf_known *k = &b->known[i];
		int itself = strcmp(k->name, rel) == 0;
		if (k->hash != so->hash || (itself && so->skip))
			continue;
		known_where(b, k, where, sizeof where);
		if (itself)
			snprintf(what, sizeof what, "%s already, and retired (a retirement lost, or the file "
				 "published again)", where);
		else
			snprintf(what, sizeof what, "those of %s, %s", k->name, where);
	}
	for (size_t i = 0; i < b->nsrc && !*what; i++)
		if ((int32_t)i != idx && b->src[i].seqs && b->src[i].hash == so->hash) {
			char *other = rel_name(&b->src[i].c);
			snprintf(what, sizeof what, "those of %s, read before it", other ? other : "another file");
			free(other);
		}
	for (uint32_t i = 0; i < b->job.n_in && !*what; i++)
		if (b->job.in_seqs[i] && b->job.in_file[i] == so->hash)
			snprintf(what, sizeof what, "those of %s, read before it", b->job.in_name[i]);
	free(rel);
	if (!*what)
		return 0;
	err_set(said, "%s: its %u sequence%s %s %s: not packed again, retired", so->c.path, so->seqs,
		so->seqs == 1 ? "" : "s", so->seqs == 1 ? "is" : "are", what);
	return 1;
}

/* Take source idx's trajectories, the last read, back out of the buffer. */
static void unread(struct packbuf *b, int32_t idx)
{
	struct packbuf_source *so = &b->src[idx];
	while (b->n > 0 && b->ent[b->n - 1].src == idx)
		traj_free(&b->ent[--b->n].t);
	for (int r = 0; r < PACKSTEP_N_DROP; r++)
		b->drops.n[r] -= so->dropped[r];
	memset(so->dropped, 0, sizeof so->dropped);
	so->pending = 0;
}

/* What the previous manifest says of this file: NULL when nothing. */
static const struct packstep_input *prev_of(const struct packbuf *b, const struct claim *c, struct err *e,
					    int *oom)
{
	char *rel = rel_name(c);
	const struct packstep_input *in = NULL;
	*oom = !rel;
	for (uint32_t q = 0; rel && q < b->n_prev; q++)
		if (strcmp(rel, b->prev[q].name) == 0)
			in = &b->prev[q];
	free(rel);
	if (*oom)
		err_set(e, "out of memory");
	return in;
}

int packbuf_read_claim(struct packbuf *b, const struct claim *c, struct err *e)
{
	if (b->nsrc == b->capsrc) {
		size_t nc = b->capsrc ? 2 * b->capsrc : 64;
		struct packbuf_source *ns = realloc(b->src, nc * sizeof *ns);
		if (!ns) {
			struct claim tmp = *c;
			claim_let_go(&tmp, NULL);
			return err_set(e, "out of memory");
		}
		b->src = ns, b->capsrc = nc;
	}
	struct packbuf_source *so = &b->src[b->nsrc];
	memset(so, 0, sizeof *so);
	so->c = *c;
	int32_t idx = (int32_t)b->nsrc++;
	/* In the newest step already, before a crash kept it from retiring:
	 * all of it (retire it now), or some trajectories (skip those). */
	int oom;
	const struct packstep_input *in = prev_of(b, &so->c, e, &oom);
	if (oom)
		return -1;
	if (in && b->carry)
		b->carry[in - b->prev] = 0;   /* this source stands for it now */
	if (in && in->finished) {
		int k = claim_retire(&so->c, e);
		so->unflushed = k == 0;   /* flushed now: the next manifest will not name it */
		return k < 0 || flush_retired(b, e) < 0 ? -1 : 0;
	}
	so->skip = in;
	so->hash = TRAJHASH_INIT;
	int fd = fsys_open_read(so->c.path, e);
	if (fd < 0)
		return -1;
	int r = packbuf_read_fd(b, fd, so->c.path, idx, e);
	close(fd);
	struct err said = { 0 };
	if (r == 0)
		r = packed_before(b, idx, &said, e);
	if (r < 0)
		return -1;
	if (r == 1)
		unread(b, idx);
	if (so->pending == 0 && packbuf_retire(b, e) < 0)
		return -1;
	if (r == 1 && e)
		*e = said;
	return r;
}

/* ---- readiness and drops ---- */

uint64_t packbuf_tokens(const struct packbuf *b)
{
	uint64_t t = 0;
	for (size_t i = 0; i < b->n; i++)
		t += b->ent[i].use;
	return t;
}

/* Too old for step under --max-lag; without a policy version never. */
static int is_stale(const struct packbuf *b, const struct packbuf_entry *en, int64_t step)
{
	return b->o.max_lag >= 0 && en->t.policy_version >= 0 && en->t.policy_version < step - 1 - b->o.max_lag;
}

int packbuf_ready(const struct packbuf *b, int64_t step)
{
	/* what take will drop as stale does not make a step full */
	uint64_t n = 0, t = 0;
	for (size_t i = 0; i < b->n; i++)
		if (!is_stale(b, &b->ent[i], step))
			n++, t += b->ent[i].use;
	if (n == 0)
		return 0;
	if (b->o.batch_size)
		return n >= b->o.batch_size;
	if (b->o.batch_tokens)
		return t >= b->o.batch_tokens;
	return t >= b->o.min_tokens;
}

int packbuf_drop_stale(struct packbuf *b, int64_t step, struct err *e)
{
	if (b->o.max_lag < 0)
		return 0;
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct packbuf_entry *en = &b->ent[i];
		if (is_stale(b, en, step)) {
			struct packbuf_source *so = en->src >= 0 ? &b->src[en->src] : NULL;
			if (so)
				so->pending--;
			else
				b->job.pending--;
			traj_free(&en->t);
			if (drop(b, PACKSTEP_STALE, so, en->ord, e) < 0)
				return -1;
			continue;
		}
		b->ent[k++] = *en;
	}
	b->n = k;
	return 0;
}

void packbuf_drops_text(const struct packbuf *b, int64_t step, char *line, size_t size)
{
	const struct packstep_drops *d = &b->drops;
	size_t at = 0;
	const char *sep = "dropped ";
	line[0] = 0;
	for (int r = 0; r < PACKSTEP_N_DROP; r++) {
		if (!d->n[r])
			continue;
		at += (size_t)snprintf(line + at, size - at, "%s%llu %s", sep, (unsigned long long)d->n[r],
				       packstep_drop_names[r]);
		if (r == PACKSTEP_STALE)
			at += (size_t)snprintf(line + at, size - at, " (policy_version below %lld, --max-lag %ld)",
					       (long long)(step - 1 - b->o.max_lag), b->o.max_lag);
		else if (r == PACKSTEP_OVERLONG)
			at += (size_t)snprintf(line + at, size - at, " (longer than %s)", b->o.cap_text);
		else
			at += (size_t)snprintf(line + at, size - at, " (no tokens)");
		sep = ", ";
	}
	if (d->truncated)
		snprintf(line + at, size - at, "%struncated %llu to %s (%llu left with no trained token)",
			 at ? "; " : "", (unsigned long long)d->truncated, b->o.cap_text,
			 (unsigned long long)d->truncated_untrained);
}

void packbuf_drops_reported(struct packbuf *b)
{
	memset(&b->drops, 0, sizeof b->drops);
	for (size_t i = 0; i < b->nsrc; i++)
		memset(b->src[i].dropped, 0, sizeof b->src[i].dropped);
}

/* ---- choosing a step ---- */

/* Units of selection: one per sequence, or per group with keep_groups.
 * first[x] is unit x's first entry; its entries run to first[x + 1]. */
static uint32_t make_units(const struct packbuf *b, struct pack_unit *u, uint32_t *first)
{
	uint32_t nu = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct packbuf_entry *en = &b->ent[i];
		if (b->o.keep_groups && nu > 0 && b->ent[first[nu - 1]].group == en->group &&
		    b->ent[first[nu - 1]].run == en->run) {
			u[nu - 1].seqs++;
			u[nu - 1].tokens += en->use;
			continue;
		}
		first[nu] = (uint32_t)i;
		u[nu++] = (struct pack_unit){ en->run, 1, en->use };
	}
	return nu;
}

static size_t unit_end(const struct packbuf *b, const uint32_t *first, uint32_t nu, uint32_t x)
{
	return x + 1 < nu ? first[x + 1] : b->n;
}

static struct packstep_seq seq_of(const struct packbuf_entry *en)
{
	return (struct packstep_seq){ &en->t, en->use, en->run };
}

/*
 * --fill-target: of the units pack_select took, leave those that would
 * only fill a last, mostly empty round of micro-batches in the buffer for
 * the next step (pack_fill_cut); whole units, so --keep-groups holds.
 */
static int carry_for_fill(const struct packbuf *b, const struct packstep_opt *po, const uint32_t *first,
			  uint32_t nu, uint8_t *taken, struct err *e)
{
	uint32_t *tu = malloc((nu ? nu : 1) * sizeof *tu), *unit_of = malloc(b->n * sizeof *unit_of);
	struct packstep_seq *seq = malloc(b->n * sizeof *seq);
	uint8_t *keep = malloc(nu ? nu : 1);
	int rc = -1;
	if (!tu || !unit_of || !seq || !keep) {
		err_set(e, "out of memory");
		goto out;
	}
	uint32_t nt = 0, ns = 0;
	for (uint32_t x = 0; x < nu; x++) {
		if (!taken[x])
			continue;
		for (size_t i = first[x]; i < unit_end(b, first, nu, x); i++) {
			unit_of[ns] = nt;
			seq[ns++] = seq_of(&b->ent[i]);
		}
		tu[nt++] = x;
	}
	int kept = packstep_fill_cut(po, seq, ns, unit_of, nt, b->o.fill_target, keep, e);
	if (kept < 0)
		goto out;
	for (uint32_t j = 0; kept > 0 && j < nt; j++)
		taken[tu[j]] = keep[j];
	rc = 0;
out:
	free(tu), free(unit_of), free(seq), free(keep);
	return rc;
}

/*
 * Where the turn goes back to when fill carried some of the units chosen
 * (chose) and kept only some (kept): the run of the first carried unit in
 * the order pack_select chose them. That order is the turns replayed from
 * turn0: each run in turn gives its next chosen unit in arrival order, and
 * a run with none left has stopped for good. *turn is left alone when
 * nothing was carried.
 */
static void rewind_turn(const struct pack_unit *u, uint32_t nu, uint32_t n_runs, uint32_t turn0,
			const uint8_t *chose, const uint8_t *kept, uint32_t *turn)
{
	uint32_t *at = calloc(n_runs, sizeof *at);   /* each run's replay position */
	if (!at)
		return;   /* fairness only, not correctness: keep pack_select's turn */
	uint32_t q = turn0 % n_runs, idle = 0;
	while (idle < n_runs) {
		uint32_t i = at[q];
		while (i < nu && !(chose[i] && u[i].run == q))
			i++;
		at[q] = i < nu ? i + 1 : nu;
		if (i == nu) {
			idle++;
		} else if (!kept[i]) {
			*turn = q;
			break;
		} else {
			idle = 0;
		}
		q = (q + 1) % n_runs;
	}
	free(at);
}

/* The queue files the step finishes or partly consumes, for its manifest;
 * the step's entries are noted done in their sources. */
static int step_inputs(struct packbuf *b, struct packbuf_step *st, struct err *e)
{
	for (size_t i = 0; i < b->nsrc; i++)
		b->src[i].taking = 0;
	b->job.taking = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct packbuf_entry *en = &b->ent[i];
		if (en->taken && en->src >= 0) {
			b->src[en->src].taking++;
			if (note_done(&b->src[en->src], en->ord) < 0)
				return err_set(e, "out of memory");
		} else if (en->taken) {
			b->job.taking++;
			if (note_job_done(&b->job, en->ord) < 0)
				return err_set(e, "out of memory");
		}
	}
	if (!(st->in = calloc(b->nsrc + b->n_prev + 1, sizeof *st->in)))
		return err_set(e, "out of memory");
	for (size_t i = 0; i < b->nsrc; i++) {
		struct packbuf_source *so = &b->src[i];
		if (so->c.state != CLAIM_HELD || so->n_done == 0)
			continue;
		struct packstep_input *in = &st->in[st->n_in++];
		in->finished = so->taking == so->pending;
		in->done = so->done;
		in->n_done = so->n_done;
		in->hash = so->hash;
		if (!(in->name = rel_name(&so->c)))
			return err_set(e, "out of memory");
	}
	st->n_own = st->n_in;
	for (uint32_t q = 0; b->carry && q < b->n_prev; q++)
		if (b->carry[q])
			st->in[st->n_in++] = b->prev[q];   /* borrowed: b->prev owns name and done */
	if (b->job.next_ord > 0) {
		struct packbuf_job *j = &b->job;
		j->rec = (struct done_job){ j->hash, j->first_step, j->next_ord, j->taking == j->pending,
					    j->done, j->n_done, j->data, j->in_data, j->in_file, j->n_in };
		st->job = &j->rec;
	}
	return 0;
}

/* Mark the chosen units' entries taken, list them in st, count truncation. */
static int step_seqs(struct packbuf *b, const uint32_t *first, uint32_t nu, const uint8_t *taken,
		     struct packbuf_step *st, struct err *e)
{
	if (!(st->seq = malloc(b->n * sizeof *st->seq)))
		return err_set(e, "out of memory");
	for (uint32_t x = 0; x < nu; x++) {
		for (size_t i = first[x]; taken[x] && i < unit_end(b, first, nu, x); i++) {
			struct packbuf_entry *en = &b->ent[i];
			en->taken = 1;
			st->seq[st->n++] = seq_of(en);
			if (en->use < (uint64_t)en->t.n_prompt + en->t.n_response) {
				b->drops.truncated++;
				if (mb_trained_tokens(&en->t, en->use) == 0)
					b->drops.truncated_untrained++;
			}
		}
	}
	return 0;
}

int packbuf_take(struct packbuf *b, int64_t step, int flush, const struct packstep_opt *po,
		 struct packbuf_step *st, struct err *e)
{
	memset(st, 0, sizeof *st);
	st->step = step;
	if (packbuf_drop_stale(b, step, e) < 0)
		return -1;
	if (b->n == 0)
		return 0;
	struct pack_unit *u = malloc(b->n * sizeof *u);
	uint32_t *first = malloc(b->n * sizeof *first);
	uint8_t *taken = calloc(b->n, 1), *chose = malloc(b->n);
	int rc = -1;
	if (!u || !first || !taken || !chose) {
		err_set(e, "out of memory");
		goto out;
	}
	uint32_t nu = make_units(b, u, first), turn0 = b->turn;
	/* a failed selection must not read as an empty step: the input would wait, or go, unpacked */
	if (pack_select(u, nu, b->n_runs, b->o.batch_size, b->o.batch_tokens, &b->turn, taken) < 0) {
		err_set(e, "out of memory");
		goto out;
	}
	if (!flush && b->o.fill_target > 0) {
		memcpy(chose, taken, nu);
		if (carry_for_fill(b, po, first, nu, taken, e) < 0)
			goto out;
		rewind_turn(u, nu, b->n_runs, turn0, chose, taken, &b->turn);
	}
	if (step_seqs(b, first, nu, taken, st, e) < 0 || step_inputs(b, st, e) < 0)
		goto out;
	rc = 1;
out:
	free(u), free(first), free(taken), free(chose);
	if (rc < 0)
		packbuf_step_free(st);
	return rc;
}

void packbuf_step_free(struct packbuf_step *st)
{
	for (uint32_t q = 0; q < st->n_own; q++)
		free(st->in[q].name);   /* done belongs to the source; the rest to b->prev */
	free(st->in);
	free(st->seq);
	memset(st, 0, sizeof *st);
}

void packbuf_commit(struct packbuf *b, struct packbuf_step *st)
{
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct packbuf_entry *en = &b->ent[i];
		if (en->taken) {
			if (en->src >= 0)
				b->src[en->src].pending--;
			else
				b->job.pending--;
			traj_free(&en->t);
		} else {
			b->ent[k++] = *en;
		}
	}
	b->n = k;
	packbuf_drops_reported(b);
	/* a --watch run goes on: what it published is known from now on */
	for (uint32_t q = 0; b->known_read && q < st->n_own; q++)
		if (know(b, st->in[q].hash, st->step, st->in[q].name, 0, NULL) < 0)
			b->known_read = 0;   /* read again from the manifests when needed */
	packbuf_step_free(st);
}

/* ---- sources ---- */

int packbuf_retire(struct packbuf *b, struct err *e)
{
	int r = 0;
	for (size_t i = 0; i < b->nsrc && r == 0; i++) {
		struct packbuf_source *so = &b->src[i];
		if (so->c.state != CLAIM_HELD || so->pending != 0)
			continue;
		int k = claim_retire(&so->c, e);
		so->unflushed = k == 0;   /* 1: another holder retires it */
		r = k < 0 ? -1 : 0;
	}
	/* those retired before a failure too: the manifest naming them is out */
	if (flush_retired(b, r < 0 ? NULL : e) < 0 || r < 0)
		return -1;
	/* Forget the sources given up: kept, a --watch run grew by some 9 KiB
	 * a file and went through them all at every step. No entry names one
	 * (none pending), so only the entries' indices of the rest move. */
	int32_t *to = malloc((b->nsrc ? b->nsrc : 1) * sizeof *to);
	if (!to)
		return 0;   /* they stay: only memory and time */
	size_t k = 0;
	for (size_t i = 0; i < b->nsrc; i++) {
		struct packbuf_source *so = &b->src[i];
		to[i] = -1;
		if (so->c.state != CLAIM_HELD && so->pending == 0) {
			free(so->done);
			continue;
		}
		to[i] = (int32_t)k;
		b->src[k++] = *so;
	}
	if (k < b->nsrc)
		for (size_t j = 0; j < b->n; j++)
			if (b->ent[j].src >= 0)
				b->ent[j].src = to[b->ent[j].src];
	b->nsrc = k;
	free(to);
	return 0;
}

void packbuf_release(struct packbuf *b)
{
	for (size_t i = 0; i < b->nsrc; i++)
		if (b->src[i].c.state == CLAIM_HELD)
			claim_let_go(&b->src[i].c, NULL);
}

void packbuf_hold(struct packbuf *b)
{
	for (size_t i = 0; i < b->nsrc; i++) {
		struct packbuf_source *so = &b->src[i];
		if (so->c.state != CLAIM_HELD)
			continue;
		for (int r = 0; r < PACKSTEP_N_DROP; r++)
			b->drops.n[r] -= so->dropped[r];
		memset(so->dropped, 0, sizeof so->dropped);
		claim_let_go(&so->c, NULL);
	}
}

/* ---- the plain inputs' job ---- */

/* Where an earlier job holds one of this run's inputs: steps from to at,
 * of job id, removed by gc when removed (known from QUEUE/.jobs); at -1:
 * none found. */
struct job_held {
	int64_t from, at;
	uint64_t id;
	int removed;
};

/* Note which of the run's inputs the earlier job dj, of the manifest of
 * step at (or its record in .jobs, removed), holds: one of its
 * inputs_data, or its data (all of a job from before inputs_data, of one
 * input; or an input that is a whole job's files in one). Jobs come newest
 * first, so the first found is kept. An input with no trajectories trains
 * nothing, and is never held. */
static void note_held(const struct packbuf_job *j, const struct done_job *dj, int64_t at, int removed,
		      struct job_held *held)
{
	for (uint32_t i = 0; i < j->n_in; i++) {
		int hit = dj->data == j->in_data[i];
		for (uint32_t x = 0; x < dj->n_inputs_data && !hit; x++)
			hit = dj->inputs_data[x] == j->in_data[i];
		if (hit && j->in_seqs[i] > 0 && held[i].at < 0)
			held[i] = (struct job_held){ dj->first_step, at, dj->id, removed };
	}
}

/* What find_job found: 1 the job id finished, 2 the same trajectories
 * under other options, 0 neither yet; its first step and the step of
 * its manifest (or record), and whether gc removed that. */
struct job_found {
	int kind;
	int64_t from, at;
	int removed;
};

/* One earlier job, dj at step at, in the search of find_job. */
static void consider_job(const struct packbuf_job *j, uint64_t id, const struct done_job *dj, int64_t at,
			 int removed, struct job_held *held, struct job_found *f)
{
	if (f->kind == 1)
		return;
	if ((dj->id == id && dj->finished) || (!f->kind && dj->data == j->data))
		*f = (struct job_found){ dj->id == id && dj->finished ? 1 : 2, dj->first_step, at, removed };
	note_held(j, dj, at, removed, held);
}

static int by_step_down(const void *a, const void *b)
{
	int64_t x = ((const struct done_jobrec *)a)->step, y = ((const struct done_jobrec *)b)->step;
	return (x < y) - (x > y);
}

/* The jobs of the steps gc removed, QUEUE/.jobs, newest first, after the
 * manifests: gc writes a step's record before it removes the step, so
 * what a manifest read before was removed since is here. */
static int find_removed_job(const char *queue, const struct packbuf_job *j, uint64_t id, struct job_held *held,
			    struct job_found *f, struct err *e)
{
	struct done_jobrec *v;
	size_t n;
	if (done_jobs_load(queue, &v, &n, e) < 0)
		return -1;
	if (n > 1)   /* v is NULL when there is no .jobs */
		qsort(v, n, sizeof *v, by_step_down);
	for (size_t i = 0; i < n && f->kind != 1; i++)
		if (!v[i].n_files)   /* a job's record, not a step's files' */
			consider_job(j, id, &v[i].job, v[i].step, 1, held, f);
	done_jobrecs_free(v, n);
	return 0;
}

/* The manifests of queue other than the newest (which the caller has
 * read), then the records of the steps gc removed, that hold the job id
 * finished, or the same trajectories (data) under other options (f). A
 * re-run of a command after other jobs finds its own job only here.
 * Every job read notes which of the job's inputs it holds (note_held),
 * for a new job's check. 0 or -1. */
static int find_job(const char *queue, const struct packbuf_job *j, uint64_t id, struct job_held *held,
		    struct job_found *f, struct err *e)
{
	int64_t *steps = NULL;
	size_t n = 0;
	if (j->prev_step >= 1 && spool_list_steps(queue, -1, j->prev_step - 1, &steps, &n, e) < 0)
		return -1;
	for (size_t i = n; i-- > 0 && f->kind != 1;) {
		struct done_job dj;
		int r = done_load_job(queue, steps[i], &dj, e);
		if (r < 0) {
			free(steps);
			return -1;
		}
		if (r == 1)
			consider_job(j, id, &dj, steps[i], 0, held, f);
		done_job_free(&dj);
	}
	free(steps);
	return f->kind == 1 ? 0 : find_removed_job(queue, j, id, held, f, e);
}

/* "steps F to A hold" (held, of steps gc removed), or with one step "step A holds". */
static void steps_text(char *out, size_t size, int64_t from, int64_t at, int removed)
{
	if (at > from)
		snprintf(out, size, "steps %lld to %lld %s", (long long)from, (long long)at, removed ? "held" : "hold");
	else
		snprintf(out, size, "step %lld %s", (long long)at, removed ? "held" : "holds");
}

/* The job's trajectories are in the steps of f already, under other
 * options: packed again, they would be trained twice. Returns -1. */
static int refuse_repack(const struct packbuf_job *j, const char *queue, const struct job_found *f,
			 struct err *e)
{
	char steps[64], gone[PATH_MAX + 64] = "";
	steps_text(steps, sizeof steps, j->published_from, f->at, f->removed);
	if (f->removed)
		snprintf(gone, sizeof gone, " (removed by grpo-spool gc, recorded in %s/.jobs)", queue);
	return err_set(e, "%s these %u sequences%s%s, packed with other options (job %016llx is this input "
		       "with these); nothing published: packing them again would train them twice", steps, j->next_ord,
		       f->removed ? "" : " already", gone, (unsigned long long)j->hash);
}

/*
 * A new job's inputs, each to be packed once: -1 when two of them hold the
 * same trajectories (a file named twice, a glob overlap, a copy), or when
 * an earlier job holds one (held), naming the inputs and the steps; else 0.
 * The same trajectories are the same hash: FNV-1a's 64 bits make a chance
 * match between different inputs negligible.
 */
static int refuse_twice(const struct packbuf_job *j, const char *queue, const struct job_held *held,
			struct err *e)
{
	for (uint32_t i = 0; i < j->n_in; i++)
		for (uint32_t k = i + 1; k < j->n_in && j->in_seqs[i] > 0; k++)
			if (j->in_data[k] == j->in_data[i])
				return err_set(e, "%s (input %u) and %s (input %u) hold the same %u sequence%s; nothing "
					       "published: packing both would train %s twice", j->in_name[i], i + 1,
					       j->in_name[k], k + 1, j->in_seqs[i], j->in_seqs[i] == 1 ? "" : "s",
					       j->in_seqs[i] == 1 ? "it" : "them");
	uint32_t first = j->n_in, more = 0;
	for (uint32_t i = 0; i < j->n_in; i++)
		if (held[i].at >= 0)
			first < j->n_in ? more++ : (first = i);
	if (first == j->n_in)
		return 0;
	const struct job_held *h = &held[first];
	char steps[64], also[64] = "", gone[PATH_MAX + 64] = "";
	steps_text(steps, sizeof steps, h->from, h->at, h->removed);
	if (more)
		snprintf(also, sizeof also, " (so would %u more of these inputs)", more);
	if (h->removed)
		snprintf(gone, sizeof gone, "; removed by grpo-spool gc, recorded in %s/.jobs", queue);
	return err_set(e, "%s: %s its %u sequences%s (job %016llx%s); nothing published: packing it again "
		       "would train it twice%s", j->in_name[first], steps, j->in_seqs[first],
		       h->removed ? "" : " already", (unsigned long long)h->id, gone, also);
}

/* A new job's input that copies a queue file (or another job's input)
 * that a manifest or .jobs holds by its hash with ids: -1 naming both and
 * where it is, else 0. Its own inputs' records (the job resumed) are not
 * looked at: only a new job comes here. */
static int refuse_known_file(struct packbuf *b, struct err *e)
{
	const struct packbuf_job *j = &b->job;
	if (!b->known_read && read_known(b, e) < 0)
		return -1;
	for (uint32_t i = 0; i < j->n_in; i++)
		for (size_t x = 0; x < b->n_known && j->in_seqs[i] > 0; x++) {
			const struct packbuf_known *k = &b->known[x];
			char where[PATH_MAX + 96];
			if (k->hash != j->in_file[i])
				continue;
			known_where(b, k, where, sizeof where);
			return err_set(e, "%s: its %u sequence%s %s those of %s, %s; nothing published: packing %s "
				       "again would train %s twice", j->in_name[i], j->in_seqs[i],
				       j->in_seqs[i] == 1 ? "" : "s", j->in_seqs[i] == 1 ? "is" : "are", k->name, where,
				       j->in_seqs[i] == 1 ? "it" : "them", j->in_seqs[i] == 1 ? "it" : "them");
		}
	return 0;
}

/* All of the job is in steps already: forget it, and what reading it dropped. */
static int forget_job(struct packbuf *b)
{
	struct packbuf_job *j = &b->job;
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (b->ent[i].src < 0)
			traj_free(&b->ent[i].t);
		else
			b->ent[k++] = b->ent[i];
	}
	b->n = k;
	for (int r = 0; r < PACKSTEP_N_DROP; r++)
		b->drops.n[r] -= j->dropped[r];
	memset(j->dropped, 0, sizeof j->dropped);
	j->next_ord = j->pending = 0;
	return 1;
}

int packbuf_job_settle(struct packbuf *b, const char *queue, const char *opts, int64_t step, struct err *e)
{
	struct packbuf_job *j = &b->job;
	const struct done_job *pj = &j->prev;
	uint64_t id = trajhash_bytes(j->hash, opts, strlen(opts));
	j->first_step = step;
	if (j->has_prev && !pj->finished && (j->next_ord == 0 || pj->id != id))
		return err_set(e, "steps %lld to %lld hold %u of the %u sequences of job %016llx, which is not "
			       "finished: it was started with other input or options (or from files, where this "
			       "run has none); nothing published: run that command again to finish it",
			       (long long)pj->first_step, (long long)j->prev_step, pj->n_done, pj->sequences,
			       (unsigned long long)pj->id);
	if (j->next_ord == 0)
		return 0;
	j->data = j->hash;
	j->hash = id;
	if (j->has_prev && !pj->finished) {
		j->first_step = pj->first_step;
		return 0;
	}
	j->published_from = pj->first_step;
	if (j->has_prev && pj->finished && pj->id == id)
		return forget_job(b);   /* the newest settles it: no other manifest is read */
	struct job_held *held = malloc((j->n_in + 1) * sizeof *held);
	if (!held)
		return err_set(e, "out of memory");
	for (uint32_t i = 0; i < j->n_in; i++)
		held[i].at = -1;
	if (j->has_prev)
		note_held(j, pj, j->prev_step, 0, held);
	struct job_found f = { 0, 0, 0, 0 };
	int r = queue ? find_job(queue, j, id, held, &f, e) : 0;
	if (r == 0 && f.kind != 1 && j->has_prev && pj->data == j->data)
		/* the newest manifest's, under other options: its steps run to the newest */
		f = (struct job_found){ 2, pj->first_step, j->prev_step, 0 };
	if (f.kind)
		j->published_from = f.from;
	if (r == 0 && f.kind == 1)
		r = forget_job(b);
	else if (r == 0 && f.kind == 2)
		r = refuse_repack(j, queue, &f, e);
	else if (r == 0)
		r = refuse_twice(j, queue, held, e);
	if (r == 0 && f.kind == 0)
		r = refuse_known_file(b, e);
	free(held);
	return r;
}
