/* queue.c: see queue.h. */
#include "spool/queue.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "data/done.h"
#include "spool/spool.h"
#include "spool/steparc.h"

int queue_list(const char *spool, char ***names, size_t *n, struct err *e)
{
	int r = fsys_list_dir(spool, FSYS_DIRS, names, n, e);
	if (r == 0)
		fsys_drop_hidden(*names, n);
	return r;
}

static int step_path(char *out, size_t size, const char *queue, int64_t step, const char *rest,
		     struct err *e)
{
	int n = snprintf(out, size, "%s/step_%lld%s%s", queue, (long long)step, rest ? "/" : "",
			 rest ? rest : "");
	if (n < 0 || (size_t)n >= size)
		return err_set(e, "%s: path too long", queue);
	return 0;
}

static int has_marker(const char *queue, int64_t step, struct err *e)
{
	char p[PATH_MAX];
	struct stat st;
	if (step_path(p, sizeof p, queue, step, "DONE", e) < 0)
		return -1;
	int r = fsys_stat(p, &st, e);
	return r < 0 ? -1 : r == 0;
}

int queue_uses_markers(const char *queue, struct err *e)
{
	int64_t *steps;
	size_t n;
	int found = 0;
	if (spool_list_steps(queue, -1, -1, &steps, &n, e) < 0)
		return -1;
	for (size_t i = n; i-- > 0 && !found;)
		if ((found = has_marker(queue, steps[i], e)) < 0)
			break;
	free(steps);
	return found;
}

int queue_step_state(const char *queue, int64_t step, int claims, long lease, time_t now,
		     struct queue_step *s, struct err *e)
{
	int *ranks;
	size_t nr;
	memset(s, 0, sizeof *s);
	s->step = step;
	if ((s->marker = has_marker(queue, step, e)) < 0)
		return -1;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	s->ranks = (int)nr;
	size_t cap = 0;
	for (size_t i = 0; i < nr; i++) {
		struct spool_rank_state rs;
		if (spool_rank_state(queue, step, ranks[i], &rs, e) < 0)
			goto fail;
		s->waiting += (long)rs.nwaiting;
		s->done += (long)rs.ndone;
		for (size_t j = 0; claims && j < rs.nclaimed; j++) {
			char dir[PATH_MAX], p[PATH_MAX + 300];
			if (cap <= (size_t)s->claimed) {
				cap = cap ? 2 * cap : 8;
				struct queue_claim *nc = realloc(s->claims, cap * sizeof *nc);
				if (!nc) {
					spool_rank_state_free(&rs);
					err_set(e, "%s: out of memory", queue);
					goto fail;
				}
				s->claims = nc;
			}
			struct queue_claim *qc = &s->claims[s->claimed];
			memset(qc, 0, sizeof *qc);
			qc->rank = ranks[i];
			snprintf(qc->name, sizeof qc->name, "%s", rs.claimed[j]);
			spool_step_dir(dir, sizeof dir, queue, step, ranks[i], NULL);   /* fits: spool_rank_state */
			snprintf(p, sizeof p, "%s/.claimed/%s", dir, rs.claimed[j]);
			int r = claim_check(p, lease, now, &qc->id, &qc->age, e);
			if (r < 0) {
				spool_rank_state_free(&rs);
				goto fail;
			}
			if (r == 2) /* retired or released while we looked */
				continue;
			qc->stale = r == 1;
			s->claimed++;
		}
		if (!claims)
			s->claimed += (long)rs.nclaimed;
		spool_rank_state_free(&rs);
	}
	free(ranks);
	return 0;
fail:
	free(ranks);
	free(s->claims);
	s->claims = NULL;
	return -1;
}

/* Keep a message of what queue_status could not read; -1 when memory runs out. */
static int status_error(struct queue_status *st, const struct err *what, struct err *e)
{
	struct err *v = realloc(st->errors, (st->n_errors + 1) * sizeof *v);
	if (!v)
		return err_set(e, "out of memory");
	st->errors = v;
	st->errors[st->n_errors++] = *what;
	return 0;
}

/* The path SPOOL/NAME of a queue in a spool. */
static int queue_path(char *out, size_t size, const char *spool, const char *name, struct err *e)
{
	if (snprintf(out, size, "%s/%s", spool, name) >= (int)size)
		return err_set(e, "%s/%s: path too long", spool, name);
	return 0;
}

/* The newest step of SPOOL/q into *newest (-1: none); 0, or -1 when memory runs out. */
static int status_newest(struct queue_status *st, const char *spool, const char *q, int64_t *newest,
			 struct err *e)
{
	char path[PATH_MAX];
	int64_t *steps;
	size_t n;
	struct err why;
	*newest = -1;
	if (queue_path(path, sizeof path, spool, q, &why) < 0 ||
	    spool_list_steps(path, -1, -1, &steps, &n, &why) < 0)
		return status_error(st, &why, e);
	if (n)
		*newest = steps[n - 1];
	free(steps);
	return 0;
}

/* One queue's steps into q (q->name set); 0, or -1 when memory runs out. */
static int status_queue(struct queue_status *st, const char *spool, struct queue_status_queue *q, long lease,
			time_t now, struct err *e)
{
	char path[PATH_MAX];
	int64_t *steps;
	size_t n;
	struct err why;
	if (queue_path(path, sizeof path, spool, q->name, &why) < 0 ||
	    spool_list_steps(path, -1, -1, &steps, &n, &why) < 0)
		return status_error(st, &why, e);
	int r = 0;
	if (n && !(q->steps = calloc(n, sizeof *q->steps)))
		r = err_set(e, "out of memory");
	for (size_t j = 0; j < n && r == 0; j++) {
		if (queue_step_state(path, steps[j], 1, lease, now, &q->steps[q->n_steps], &why) < 0)
			r = status_error(st, &why, e);
		else
			q->n_steps++;
	}
	free(steps);
	return r;
}

int queue_status(const char *spool, long lease, time_t now, struct queue_status *st, struct err *e)
{
	char **names;
	size_t n;
	memset(st, 0, sizeof *st);
	st->policy_step = st->collect_step = -1;
	int r = queue_list(spool, &names, &n, e);
	if (r != 0)
		return r;
	if (n && !(st->queues = calloc(n, sizeof *st->queues)))
		r = err_set(e, "out of memory");
	for (size_t i = 0; i < n && r == 0; i++) {
		if (strcmp(names[i], "policy") == 0)
			continue;   /* checkpoints, not spool files: only its newest step */
		struct queue_status_queue *q = &st->queues[st->n_queues++];
		if (!(q->name = strdup(names[i])))
			r = err_set(e, "out of memory");
		else
			r = status_queue(st, spool, q, lease, now, e);
	}
	fsys_free_names(names, n);
	if (r == 0)
		r = status_newest(st, spool, "policy", &st->policy_step, e);
	if (r == 0)
		r = status_newest(st, spool, "rollouts", &st->collect_step, e);
	return r;
}

void queue_status_free(struct queue_status *st)
{
	for (size_t i = 0; i < st->n_queues; i++) {
		for (size_t j = 0; j < st->queues[i].n_steps; j++)
			free(st->queues[i].steps[j].claims);
		free(st->queues[i].steps);
		free(st->queues[i].name);
	}
	free(st->queues);
	free(st->errors);
	memset(st, 0, sizeof *st);
	st->policy_step = st->collect_step = -1;
}

/*
 * Is the step finished (queue.h)? *files: how many published files it
 * holds, so that a second look can tell whether one arrived in between.
 */
static int step_finished(const char *queue, int64_t step, int need_marker, long *files,
			 struct err *e)
{
	int *ranks;
	size_t nr;
	int finished = 1;
	*files = 0;
	int m = has_marker(queue, step, e);
	if (m < 0)
		return -1;
	if (need_marker && !m)
		finished = 0;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	for (size_t i = 0; i < nr; i++) {
		struct spool_rank_state rs;
		char dir[PATH_MAX], **names;
		size_t nn;
		if (spool_rank_state(queue, step, ranks[i], &rs, e) < 0) {
			free(ranks);
			return -1;
		}
		if (rs.nwaiting || rs.nclaimed)
			finished = 0;
		spool_rank_state_free(&rs);
		spool_step_dir(dir, sizeof dir, queue, step, ranks[i], NULL);   /* fits: spool_rank_state */
		if (fsys_list_dir(dir, FSYS_FILES, &names, &nn, e) < 0) {
			free(ranks);
			return -1;
		}
		fsys_drop_hidden(names, &nn);
		*files += (long)nn;
		fsys_free_names(names, nn);
	}
	free(ranks);
	return finished;
}

static int remove_tree(const char *dir, struct err *e)
{
	char **v, p[PATH_MAX];
	size_t n;
	int r = fsys_list_dir(dir, FSYS_DIRS, &v, &n, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, v[i]);
		if (remove_tree(p, e) < 0) {
			fsys_free_names(v, n);
			return -1;
		}
	}
	fsys_free_names(v, n);
	if (fsys_list_dir(dir, FSYS_FILES, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, v[i]);
		if (fsys_unlink(p, e) < 0) {
			fsys_free_names(v, n);
			return -1;
		}
	}
	fsys_free_names(v, n);
	return fsys_rmdir(dir, e);
}

/* fn(src/NAME, dst/NAME) for each NAME of kind (FSYS_FILES, FSYS_DIRS) in src. */
static int each_pair(const char *src, const char *dst, int kind,
		     int (*fn)(const char *from, const char *to, struct err *e), struct err *e)
{
	char **v, a[PATH_MAX], b[PATH_MAX];
	size_t n;
	int r = 0;
	if (fsys_list_dir(src, kind, &v, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (snprintf(a, sizeof a, "%s/%s", src, v[i]) >= (int)sizeof a ||
		    snprintf(b, sizeof b, "%s/%s", dst, v[i]) >= (int)sizeof b)
			r = err_set(e, "%s/%s: path too long", src, v[i]);
		else
			r = fn(a, b, e);
	}
	fsys_free_names(v, n);
	return r;
}

/* Move everything under src into dst without replacing anything, removing
 * the directories it empties; what collides stays in src. */
static int merge_back(const char *src, const char *dst, struct err *e)
{
	if (fsys_mkdir(dst, e) < 0 || each_pair(src, dst, FSYS_DIRS, merge_back, e) < 0 ||
	    each_pair(src, dst, FSYS_FILES, fsys_rename_noreplace, e) < 0 || fsys_fsync_dir(dst, e) < 0)
		return -1;
	fsys_rmdir(src, NULL);   /* empty unless something collided */
	return 0;
}

/*
 * A step moved aside to gcdir/step_N: delete it if it is still finished
 * and holds `expected` files (-1: any number), else put it back.
 * 1 removed, 0 put back, -1 error.
 */
static int finish_isolated(const char *queue, const char *gcdir, int64_t step, int need_marker,
			   long expected, struct err *e)
{
	char from[PATH_MAX], to[PATH_MAX];
	long files;
	int f = step_finished(gcdir, step, need_marker, &files, e);
	if (f < 0)
		return -1;
	if (f == 1 && (expected < 0 || files == expected)) {
		/* Deleting is not atomic, and a half-deleted step (records gone,
		 * files left) would look unfinished: rename it to del.* first,
		 * which is deleted without a second look if we crash. */
		char del[PATH_MAX + 200], uniq[160];
		spool_unique_name(uniq, sizeof uniq);
		snprintf(del, sizeof del, "%s/.tmp/del.%s", queue, uniq);
		if (fsys_rename(gcdir, del, e) < 0)
			return -1;
		return remove_tree(del, e) < 0 ? -1 : 1;
	}
	if (step_path(from, sizeof from, gcdir, step, NULL, e) < 0 ||
	    step_path(to, sizeof to, queue, step, NULL, e) < 0)
		return -1;
	int r = fsys_rename_noreplace(from, to, e);
	if (r < 0)
		return -1;
	if (r == 1 && merge_back(from, to, e) < 0) /* a producer made the step anew meanwhile */
		return -1;
	if (fsys_fsync_dir(queue, e) < 0)
		return -1;
	fsys_rmdir(gcdir, NULL);   /* empty unless something collided */
	return 0;
}

static int isolate_and_remove(const char *queue, int64_t step, int need_marker, long expected,
			      struct err *e)
{
	char tmpdir[PATH_MAX], gcdir[PATH_MAX], uniq[160], from[PATH_MAX], to[PATH_MAX];
	spool_unique_name(uniq, sizeof uniq);
	if (snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue) >= (int)sizeof tmpdir ||
	    snprintf(gcdir, sizeof gcdir, "%s/gc.%s", tmpdir, uniq) >= (int)sizeof gcdir ||
	    step_path(from, sizeof from, queue, step, NULL, e) < 0 ||
	    step_path(to, sizeof to, gcdir, step, NULL, e) < 0)
		return err_set(e, "%s: path too long", queue);
	if (fsys_mkdirs(tmpdir, e) < 0 || fsys_mkdir(gcdir, e) < 0 ||
	    fsys_rename(from, to, e) < 0 || fsys_fsync_dir(queue, e) < 0)
		return -1;
	return finish_isolated(queue, gcdir, step, need_marker, expected, e);
}

/* Deal with the gc.* directories an interrupted gc left in QUEUE/.tmp. */
static int finish_leftovers(const char *queue, int need_marker, long *count, struct err *e)
{
	char tmpdir[PATH_MAX], gcdir[PATH_MAX], **v, **steps;
	size_t n, ns;
	snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue);
	int r = fsys_list_dir(tmpdir, FSYS_DIRS, &v, &n, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(gcdir, sizeof gcdir, "%s/%s", tmpdir, v[i]);
		if (strncmp(v[i], "del.", 4) == 0) {
			if (remove_tree(gcdir, e) < 0)
				goto fail;
			(*count)++;
			continue;
		}
		if (strncmp(v[i], "gc.", 3) != 0)
			continue;
		if (fsys_list_dir(gcdir, FSYS_DIRS, &steps, &ns, e) < 0)
			goto fail;
		int bad = 0;
		for (size_t j = 0; j < ns && !bad; j++) {
			int64_t s;
			if (spool_parse_step(steps[j], &s) == 0 &&
			    finish_isolated(queue, gcdir, s, need_marker, -1, e) < 0)
				bad = 1;
		}
		fsys_free_names(steps, ns);
		if (bad)
			goto fail;
		fsys_rmdir(gcdir, NULL);
		(*count)++;
	}
	fsys_free_names(v, n);
	return 0;
fail:
	fsys_free_names(v, n);
	return -1;
}

int queue_recover(const char *queue, long lease, long tmp_age, time_t now,
		  struct queue_recover_stats *st, struct err *e)
{
	int64_t *steps;
	size_t ns;
	int need_marker = queue_uses_markers(queue, e);
	if (need_marker < 0 || finish_leftovers(queue, need_marker, &st->gc_finished, e) < 0)
		return -1;
	if (spool_list_steps(queue, -1, -1, &steps, &ns, e) < 0)
		return -1;
	for (size_t i = 0; i < ns; i++) {
		int *ranks;
		size_t nr;
		if (spool_list_ranks(queue, steps[i], &ranks, &nr, e) < 0)
			goto fail;
		for (size_t j = 0; j < nr; j++) {
			char dir[PATH_MAX], cdir[PATH_MAX + 16], p[PATH_MAX + 300], **v;
			size_t n;
			if (spool_step_dir(dir, sizeof dir, queue, steps[i], ranks[j], e) < 0) {
				free(ranks);
				goto fail;
			}
			snprintf(cdir, sizeof cdir, "%s/.claimed", dir);
			if (fsys_list_dir(cdir, FSYS_FILES, &v, &n, e) < 0) {
				free(ranks);
				goto fail;
			}
			for (size_t k = 0; k < n; k++) {
				struct claim_id id;
				long long age;
				snprintf(p, sizeof p, "%s/%s", cdir, v[k]);
				if (v[k][0] == '.')
					continue;
				int r = claim_check(p, lease, now, &id, &age, e);
				if (r == 1)
					r = fsys_unlink(p, e) < 0 ? -1 : 1;
				if (r < 0) {
					fsys_free_names(v, n);
					free(ranks);
					goto fail;
				}
				if (r == 1)
					st->returned++;
				else if (r == 0)
					st->live++;
			}
			fsys_free_names(v, n);
		}
		free(ranks);
	}
	free(steps);

	char tmpdir[PATH_MAX], p[PATH_MAX + 300], **v;
	size_t n;
	snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue);
	int r = fsys_list_dir(tmpdir, FSYS_ANY, &v, &n, e);
	if (r != 0)
		return r < 0 ? -1 : 0;
	for (size_t k = 0; k < n; k++) {
		struct stat sb;
		snprintf(p, sizeof p, "%s/%s", tmpdir, v[k]);
		if (!strncmp(v[k], "gc.", 3) || !strncmp(v[k], "del.", 4))
			continue; /* gc leftovers were handled above */
		int gone = fsys_stat(p, &sb, e);
		if (gone < 0) {
			fsys_free_names(v, n);
			return -1;
		}
		if (gone)
			continue; /* removed meanwhile */
		if (tmp_age > 0 && (long long)now - (long long)sb.st_mtime < tmp_age)
			continue;
		if ((S_ISDIR(sb.st_mode) ? remove_tree(p, e) : fsys_unlink(p, e)) < 0) {
			fsys_free_names(v, n);
			return -1;
		}
		st->tmp_removed++;
	}
	fsys_free_names(v, n);
	return 0;
fail:
	free(steps);
	return -1;
}

/*
 * Before any of the old steps goes, the jobs their manifests record, and
 * the queue files with their hashes, go to QUEUE/.jobs (data/done.h),
 * written whole and flushed: grpo-pack knows the plain inputs it packed by
 * those jobs, and copies of the queue files by those hashes, and would
 * pack them again once the steps are gone. A crash after this leaves records of steps
 * still there, which say what their manifests say. All the old steps'
 * jobs are recorded at once, the newest marked step's aside (it stays),
 * whether or not a step turns out finished: one rewrite of the file per
 * gc, not one per step.
 *
 * What gc moves here is every job's last word but an unfinished job's:
 * gc removes only finished steps, never the newest with a DONE, and an
 * unfinished job is always the newest DONE's (grpo-pack refuses any other
 * command into the queue until it is finished), so a record with
 * finished false is of an earlier step of a job whose newest step is in
 * the queue, or of a job that went on to a later record.
 */
static int record_jobs(const char *queue, const int64_t *steps, size_t old, int64_t newest_marked,
		       struct err *e)
{
	struct done_jobrec *v = calloc(2 * old + 1, sizeof *v);
	size_t n = 0;
	int rc = 0;
	if (!v)
		return err_set(e, "out of memory");
	for (size_t i = 0; i < old && rc == 0; i++) {
		if (steps[i] == newest_marked)
			continue;
		/* its job and the queue files it packed, known by their hashes */
		int r = done_step_records(queue, steps[i], &v[n], e);
		if (r < 0) {
			struct err why = *e;
			rc = err_set(e, "%s; nothing removed from %s: gc records what each step it removes packed "
				     "first", why.msg, queue);
		} else {
			n += (size_t)r;
		}
	}
	if (rc == 0)
		rc = done_jobs_add(queue, v, n, e);
	done_jobrecs_free(v, n);
	return rc;
}

int queue_gc(const char *queue, long keep, const char *archive_dir, struct queue_gc_stats *st,
	     struct err *e)
{
	int64_t *steps;
	size_t ns;
	long leftovers = 0, refused = 0;
	struct err first_refused;
	int need_marker = queue_uses_markers(queue, e);
	if (need_marker < 0 || finish_leftovers(queue, need_marker, &leftovers, e) < 0)
		return -1;
	if (archive_dir && steparc_clean_tmp(queue, archive_dir, e) < 0)
		return -1;
	if (spool_list_steps(queue, -1, -1, &steps, &ns, e) < 0)
		return -1;
	size_t old = keep < 0 ? 0 : ns > (size_t)keep ? ns - (size_t)keep : 0;
	/* the newest step with a marker stays, whatever keep says: its producer
	 * reads back from that manifest where it stopped (grpo-pack: its next
	 * step, its half-packed inputs), and would start over without it */
	int64_t newest_marked = -1;
	for (size_t i = ns; need_marker && i-- > 0 && newest_marked < 0;) {
		int m = has_marker(queue, steps[i], e);
		if (m < 0)
			goto fail;
		if (m)
			newest_marked = steps[i];
	}
	if (need_marker && record_jobs(queue, steps, old, newest_marked, e) < 0)
		goto fail;
	for (size_t i = 0; i < old; i++) {
		long files, members = -1;
		if (steps[i] == newest_marked)
			continue;
		int f = step_finished(queue, steps[i], need_marker, &files, e);
		if (f < 0)
			goto fail;
		if (!f) {
			st->unfinished++;
			continue;
		}
		if (archive_dir) {
			long written;
			int k = steparc_write(queue, steps[i], archive_dir, &members, &written, e);
			if (k < 0)
				goto fail;
			if (k == 1) {   /* this step is kept, said; the others are still pruned */
				if (!refused++)
					first_refused = *e;
				continue;
			}
			st->archived += written > 0;   /* an empty step needs no archive */
			/* the DONE marker is archived too, but not a published file */
			int marker = has_marker(queue, steps[i], e);
			if (marker < 0)
				goto fail;
			members -= marker;
		}
		int r = isolate_and_remove(queue, steps[i], need_marker, members, e);
		if (r < 0)
			goto fail;
		if (r == 1)
			st->removed++;
		else
			st->unfinished++;
	}
	free(steps);
	if (refused == 0)
		return 0;
	*e = first_refused;
	return refused > 1 ? err_prefix(e, "%s: %ld steps kept unarchived; the first", queue, refused)
			   : -1;
fail:
	free(steps);
	return -1;
}

int queue_quarantine(const char *given, long lease, time_t now, char *dest, size_t size,
		     struct claim_id *holder, struct err *e)
{
	char queue[PATH_MAX], dir[PATH_MAX], buf[PATH_MAX], path[PATH_MAX];
	int64_t step;
	int rank;
	struct stat st;
	struct claim c;
	/* known by where it is: "g.zst" inside a rank directory, or through a link to one */
	if (!spool_locate(given, queue, sizeof queue, path, sizeof path))
		return err_set(e, "%s: not a published spool file (QUEUE/step_N/rank_X/NAME)", given);
	/* step_N and rank_X of the path: spool_queue_of checked they parse */
	snprintf(buf, sizeof buf, "%s", path);
	char *name = strrchr(buf, '/');
	*name++ = 0;
	char *r = strrchr(buf, '/');
	*r++ = 0;
	char *s = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	if (spool_parse_step(s, &step) < 0 || spool_parse_rank(r, &rank) < 0 || name[0] == '.')
		return err_set(e, "%s: not a published spool file (QUEUE/step_N/rank_X/NAME)", path);
	int n = snprintf(dir, sizeof dir, "%s/.quarantine/step_%lld/rank_%d", queue, (long long)step, rank);
	if (n < 0 || (size_t)n >= sizeof dir || snprintf(dest, size, "%s/%s", dir, name) >= (int)size)
		return err_set(e, "%s: path too long", queue);
	int k = fsys_stat(path, &st, e);
	if (k == 1 && (k = fsys_stat(dest, &st, e)) == 0)
		return 2;   /* a run before this one moved it, and failed after (a full disk) */
	if (k != 0)
		return k < 0 ? -1 : err_set(e, "%s: no such file", path);
	if (!S_ISREG(st.st_mode))
		return err_set(e, "%s: not a file", path);
	for (int tries = 0;; tries++) {
		k = claim_take(&c, queue, step, rank, name, lease, e);
		if (k <= 0)
			break;
		char done[PATH_MAX];   /* claim.h: the done record, beside .claimed/ */
		snprintf(done, sizeof done, "%.*s/.done/%s", (int)c.dir_len, c.path, c.name);
		if ((k = fsys_stat(done, &st, e)) <= 0)
			return k < 0 ? -1 : err_set(e, "%s: consumed already (%s exists); nothing to quarantine",
						    path, done);
		long long age;
		k = claim_check(c.claim_path, lease, now, holder, &age, e);
		if (k == 0)
			return 1;
		if (k < 0 || (k == 1 && fsys_unlink(c.claim_path, e) < 0))
			return -1;
		if (tries == 3)
			return err_set(e, "%s: claimed again and again while being quarantined", path);
	}
	if (k < 0)
		return -1;
	/* ours now: move it aside, then drop our claim */
	if (fsys_mkdirs(dir, e) < 0 || (k = fsys_rename_noreplace(path, dest, e)) < 0 ||
	    (k == 1 && err_set(e, "%s: quarantined once already; move %s away first", path, dest))) {
		claim_let_go(&c, NULL);
		return -1;
	}
	/* moved: what fails now is said as such, and a run again finds it done */
	char rank_dir[PATH_MAX];
	spool_step_dir(rank_dir, sizeof rank_dir, queue, step, rank, NULL);   /* fits: claim_take */
	if (fsys_fsync_dir(dir, e) < 0 || fsys_fsync_dir(rank_dir, e) < 0) {
		claim_let_go(&c, NULL);
		return err_prefix(e, "%s: quarantined as %s, but not flushed to disk", path, dest);
	}
	if (claim_let_go(&c, e) < 0)
		return err_prefix(e, "%s: quarantined as %s, but its claim stays until grpo-spool recover", path,
				  dest);
	return 0;
}

int queue_lock_spool(const char *spool, int *fd, struct err *e)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof p, "%s/.lock", spool) >= (int)sizeof p)
		return err_set(e, "%s: path too long", spool);
	return fsys_try_lock(p, 1, fd, e);
}

int queue_retire_step(const char *queue, int64_t step, long *retired, struct err *e)
{
	int *ranks;
	size_t nr;
	long n = 0;
	int rc = 0;
	if (spool_list_ranks(queue, step, &ranks, &nr, e) < 0)
		return -1;
	for (size_t i = 0; i < nr && rc == 0; i++) {
		struct spool_rank_state rs;
		if (spool_rank_state(queue, step, ranks[i], &rs, e) < 0) {
			rc = -1;
			break;
		}
		/* the claimed too: a stale claim is the caller's own, killed while
		 * retiring (or a dead consumer's), returned as recover would */
		for (size_t k = 0; k < rs.nwaiting + rs.nclaimed && rc == 0; k++) {
			const char *name = k < rs.nwaiting ? rs.waiting[k] : rs.claimed[k - rs.nwaiting];
			struct claim c;
			int r = 0;
			if (k >= rs.nwaiting) {
				char dir[PATH_MAX], p[PATH_MAX + 300];
				struct claim_id id;
				long long age;
				spool_step_dir(dir, sizeof dir, queue, step, ranks[i], NULL);   /* fits: spool_rank_state */
				snprintf(p, sizeof p, "%s/.claimed/%s", dir, name);
				r = claim_check(p, 0, time(NULL), &id, &age, e);
				if (r == 1)
					r = fsys_unlink(p, e) < 0 ? -1 : 0;
				else if (r >= 0)
					r = 1;   /* live, or gone: its holder's */
			}
			if (r == 0)
				r = claim_take(&c, queue, step, ranks[i], name, 0, e);
			if (r == 0 && claim_retire(&c, e) < 0) {
				claim_let_go(&c, NULL);
				r = -1;
			}
			if (r < 0)
				rc = -1;
			n += r == 0;
		}
		spool_rank_state_free(&rs);
	}
	free(ranks);
	if (retired)
		*retired = n;
	return rc;
}
