/* watch.c: see watch.h. */
#include "spool/watch.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/path.h"
#include "spool/spool.h"

enum { W_QUEUE, W_STEP, W_RANK, W_CLAIMED };

struct wdir {
	int wd, kind, rank;
	int64_t step;
};

struct cand {
	int64_t step;
	int rank;
	char name[256];
};

struct held {                      /* a detached claim, renewed until given up */
	char *claim_path;
	unsigned long long dev, ino;
};

struct watch {
	char queue[PATH_MAX];
	struct watch_opt o;
	int ifd;                       /* inotify, or -1 when polling */
	double interval;               /* poll or rescan interval, seconds */
	double next_scan;              /* CLOCK_MONOTONIC seconds */
	double retry_at;               /* when the files released here may be retried */
	int need_scan, test_overflow;
	struct wdir *dirs;
	size_t ndirs, capdirs;
	int64_t newest;                /* the newest step listed or notified; -1: none yet */
	struct cand *cands;            /* sorted from head on, unless dirty */
	size_t ncands, capcands, head;
	int dirty;
	struct cand *skip;             /* released here; not retried before the next rescan */
	size_t nskip, capskip;
	struct claim cur;
	struct held *held;
	size_t nheld, capheld;
	int held_lost;                 /* out of memory in watch_detach: one is not renewed */
	double renew_every, next_renew;
	double deadline;               /* CLOCK_MONOTONIC seconds; 0: none */
	int timed_out;
	struct watch_stats st;
	sigset_t oldmask, waitmask;
	struct sigaction oldint, oldterm;
};

static volatile sig_atomic_t watch_signal;

static void on_signal(int sig)
{
	watch_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int in_range(const struct watch *w, int64_t step)
{
	return (w->o.from < 0 || step >= w->o.from) && (w->o.to < 0 || step <= w->o.to);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *nv = realloc(*v, nc * size);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

static int add_cand(struct watch *w, int64_t step, int rank, const char *name, struct err *e)
{
	if (name[0] == '.' || strlen(name) >= sizeof w->cands[0].name)
		return 0;
	if (grow((void **)&w->cands, &w->capcands, w->ncands + 1, sizeof *w->cands) < 0)
		return err_set(e, "%s: out of memory", w->queue);
	struct cand *c = &w->cands[w->ncands++];
	c->step = step;
	c->rank = rank;
	strcpy(c->name, name);
	w->dirty = 1;
	return 0;
}

/* Sort what is left and drop duplicates (a file both listed and notified). */
static void tidy_cands(struct watch *w)
{
	if (!w->dirty)
		return;
	memmove(w->cands, w->cands + w->head, (w->ncands - w->head) * sizeof *w->cands);
	w->ncands -= w->head;
	w->head = 0;
	qsort(w->cands, w->ncands, sizeof *w->cands, cand_cmp);
	size_t k = 0;
	for (size_t i = 0; i < w->ncands; i++)
		if (k == 0 || cand_cmp(&w->cands[k - 1], &w->cands[i]) != 0)
			w->cands[k++] = w->cands[i];
	w->ncands = k;
	w->dirty = 0;
}

static int skipped(const struct watch *w, const struct cand *c)
{
	for (size_t i = 0; i < w->nskip; i++)
		if (cand_cmp(&w->skip[i], c) == 0)
			return 1;
	return 0;
}

static void go_polling(struct watch *w)
{
	if (w->ifd >= 0)
		close(w->ifd);
	w->ifd = -1;
	w->ndirs = 0;
	w->interval = w->o.poll > 0 ? w->o.poll : WATCH_POLL_DEFAULT;
	w->st.polling = 1;
}

/* Watch path (kind, step, rank). 0 watched or polling now; 1 the directory is gone; -1 error. */
static int add_watch(struct watch *w, const char *path, int kind, int64_t step, int rank,
		     struct err *e)
{
	if (w->ifd < 0)
		return 0;
	uint32_t mask = IN_ONLYDIR | IN_MOVE_SELF |
			(kind == W_CLAIMED ? IN_DELETE : IN_CREATE | IN_MOVED_TO);
	int wd = inotify_add_watch(w->ifd, path, mask);
	if (wd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		if (errno == ENOSPC) { /* the watch limit: fall back, as inotify(7) advises */
			go_polling(w);
			return 0;
		}
		return err_sys(e, "%s: cannot watch", path);
	}
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd) {
			w->dirs[i] = (struct wdir){ wd, kind, rank, step };
			return 0;
		}
	if (grow((void **)&w->dirs, &w->capdirs, w->ndirs + 1, sizeof *w->dirs) < 0)
		return err_set(e, "%s: out of memory", path);
	w->dirs[w->ndirs++] = (struct wdir){ wd, kind, rank, step };
	return 0;
}

/* Steps older than the newest WATCH_STEPS are listed by the scans but not
 * watched, so that the watches stay bounded however many steps a queue
 * keeps. */
static int followed(const struct watch *w, int64_t step)
{
	return step > w->newest - WATCH_STEPS;
}

/* The newest step is now step: stop watching the steps it leaves behind
 * (their IN_IGNORED finds no entry and is passed over). */
static void note_newest(struct watch *w, int64_t step)
{
	if (step <= w->newest)
		return;
	w->newest = step;
	for (size_t i = 0; i < w->ndirs;)
		if (w->dirs[i].kind != W_QUEUE && !followed(w, w->dirs[i].step)) {
			inotify_rm_watch(w->ifd, w->dirs[i].wd);
			w->dirs[i] = w->dirs[--w->ndirs];
		} else {
			i++;
		}
}

static int scan_rank(struct watch *w, int64_t step, int rank, struct err *e)
{
	char dir[PATH_MAX], sub[PATH_MAX + 16];
	if (spool_step_dir(dir, sizeof dir, w->queue, step, rank, e) < 0)
		return -1;
	if (followed(w, step)) {
		int r = add_watch(w, dir, W_RANK, step, rank, e);
		if (r != 0)
			return r < 0 ? -1 : 0;
		snprintf(sub, sizeof sub, "%s/.claimed", dir);
		if (add_watch(w, sub, W_CLAIMED, step, rank, e) < 0)
			return -1;
	}
	struct spool_rank_state s;
	if (spool_rank_state(w->queue, step, rank, &s, e) < 0)
		return -1;
	for (size_t i = 0; i < s.nwaiting; i++)
		if (add_cand(w, step, rank, s.waiting[i], e) < 0) {
			spool_rank_state_free(&s);
			return -1;
		}
	spool_rank_state_free(&s);
	return 0;
}

static int scan_step(struct watch *w, int64_t step, struct err *e)
{
	char dir[PATH_MAX];
	int *ranks;
	size_t n;
	if (snprintf(dir, sizeof dir, "%s/step_%lld", w->queue, (long long)step) >= (int)sizeof dir)
		return err_set(e, "%s: path too long", w->queue);
	int r = followed(w, step) ? add_watch(w, dir, W_STEP, step, 0, e) : 0;
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (spool_list_ranks(w->queue, step, &ranks, &n, e) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (scan_rank(w, step, ranks[i], e) < 0) {
			free(ranks);
			return -1;
		}
	free(ranks);
	return 0;
}

static int scan_all(struct watch *w, struct err *e)
{
	int64_t *steps;
	size_t n;
	w->ncands = w->head = 0;
	w->dirty = 0;
	if (add_watch(w, w->queue, W_QUEUE, 0, 0, e) < 0)
		return -1;
	if (spool_list_steps(w->queue, w->o.from, w->o.to, &steps, &n, e) < 0)
		return -1;
	int64_t newest = -1;
	for (size_t i = 0; i < n; i++)
		newest = steps[i] > newest ? steps[i] : newest;
	note_newest(w, newest);
	for (size_t i = 0; i < n; i++)
		if (scan_step(w, steps[i], e) < 0) {
			free(steps);
			return -1;
		}
	free(steps);
	w->st.scans++;
	w->need_scan = 0;
	double now = now_s();
	w->next_scan = now + w->interval;
	if (now >= w->retry_at) {
		w->nskip = 0;
		w->retry_at = now + (w->o.rescan > 0 ? w->o.rescan : WATCH_RESCAN_DEFAULT);
	}
	tidy_cands(w);
	return 0;
}

static struct wdir *find_wd(struct watch *w, int wd)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd)
			return &w->dirs[i];
	return NULL;
}

static void forget_wd(struct watch *w, int wd)
{
	for (size_t i = 0; i < w->ndirs; i++)
		if (w->dirs[i].wd == wd) {
			w->dirs[i] = w->dirs[--w->ndirs];
			return;
		}
}

static int handle_event(struct watch *w, const struct inotify_event *ev, struct err *e)
{
	if (ev->mask & IN_Q_OVERFLOW) {
		w->st.overflows++;
		w->need_scan = 1;
		return 0;
	}
	struct wdir *d = find_wd(w, ev->wd);
	if (!d)
		return 0;
	if (ev->mask & IN_IGNORED) {
		forget_wd(w, ev->wd);
		return 0;
	}
	if (ev->mask & IN_MOVE_SELF) { /* gc moved the step away: stop following it */
		inotify_rm_watch(w->ifd, ev->wd);
		forget_wd(w, ev->wd);
		return 0;
	}
	if (!ev->len || ev->name[0] == '\0')
		return 0;
	int isdir = (ev->mask & IN_ISDIR) != 0;
	struct wdir here = *d; /* the scans below may move w->dirs */
	int64_t step;
	int rank;
	char sub[PATH_MAX];
	switch (here.kind) {
	case W_QUEUE:
		if (!isdir || spool_parse_step(ev->name, &step) < 0 || !in_range(w, step))
			return 0;
		note_newest(w, step);
		return scan_step(w, step, e);
	case W_STEP:
		if (isdir && spool_parse_rank(ev->name, &rank) == 0)
			return scan_rank(w, here.step, rank, e);
		return 0;
	case W_RANK:
		if (isdir && strcmp(ev->name, ".claimed") == 0) {
			char rank_dir[PATH_MAX];
			if (spool_step_dir(rank_dir, sizeof rank_dir, w->queue, here.step, here.rank, e) < 0 ||
			    path_join(sub, sizeof sub, rank_dir, ".claimed", e) < 0)
				return -1;
			return add_watch(w, sub, W_CLAIMED, here.step, here.rank, e) < 0 ? -1 : 0;
		}
		return isdir ? 0 : add_cand(w, here.step, here.rank, ev->name, e);
	case W_CLAIMED:
		return isdir ? 0 : add_cand(w, here.step, here.rank, ev->name, e);
	}
	return 0;
}

static int read_events(struct watch *w, struct err *e)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(w->ifd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return err_sys(e, "%s: cannot read inotify events", w->queue);
		if (n == 0)
			return 0;
		if (w->test_overflow) {
			w->st.overflows++;
			w->need_scan = 1;
			continue;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			w->st.events++;
			if (handle_event(w, ev, e) < 0)
				return -1;
			if (w->ifd < 0) /* fell back to polling: events no longer mean anything */
				return 0;
			p += sizeof *ev + ev->len;
		}
	}
}

static int stop_requested(struct watch *w)
{
	if (!w->o.signals)
		return 0;
	if (!watch_signal) {
		sigset_t p;
		if (sigpending(&p) == 0 && (sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGTERM) == 1)) {
			struct timespec zero = { 0, 0 };
			ppoll(NULL, 0, &zero, &w->waitmask); /* lets the handler run */
		}
	}
	return watch_signal != 0;
}

/* Sleep until an event, a signal or the next scan is due. */
static int wait_for_work(struct watch *w, struct err *e)
{
	double until = w->next_scan;
	if (w->deadline > 0 && w->deadline < until)
		until = w->deadline;
	if ((w->nheld > 0 || w->cur.state == CLAIM_HELD) && w->next_renew < until)
		until = w->next_renew;
	double left = until - now_s();
	if (left <= 0) {
		if (w->next_scan <= now_s())
			w->need_scan = 1;
		return 0;
	}
	struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
	struct pollfd pfd = { w->ifd, POLLIN, 0 };
	int r = ppoll(w->ifd >= 0 ? &pfd : NULL, w->ifd >= 0 ? 1 : 0, &ts,
		      w->o.signals ? &w->waitmask : NULL);
	if (r < 0 && errno != EINTR)
		return err_sys(e, "%s: poll failed", w->queue);
	if (r > 0)
		return read_events(w, e);
	if (r == 0 && w->next_scan <= now_s())
		w->need_scan = 1;
	return 0;
}

struct watch *watch_open(const char *queue, const struct watch_opt *o, struct err *e)
{
	struct watch *w = calloc(1, sizeof *w);
	if (!w) {
		err_set(e, "%s: out of memory", queue);
		return NULL;
	}
	w->ifd = -1;
	w->cur.fd = -1;
	w->newest = -1;
	w->o = *o;
	if (snprintf(w->queue, sizeof w->queue, "%s", queue) >= (int)sizeof w->queue) {
		err_set(e, "%s: path too long", queue);
		free(w);
		return NULL;
	}
	/* Consumers may start before their producers: a watched queue is made here. */
	if (o->follow && fsys_mkdirs(queue, e) < 0) {
		free(w);
		return NULL;
	}
	const char *t = getenv("GRPO_WATCH_TEST_OVERFLOW");
	w->test_overflow = t && *t && *t != '0';
	w->need_scan = 1;
	w->retry_at = now_s() + (o->rescan > 0 ? o->rescan : WATCH_RESCAN_DEFAULT);
	w->interval = o->rescan > 0 ? o->rescan : WATCH_RESCAN_DEFAULT;
	if (o->follow) {
		if (o->poll > 0 || fsys_is_remote(queue) ||
		    (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
			go_polling(w);
	}
	w->st.interval = w->interval;
	w->renew_every = (double)(o->lease > 0 ? o->lease : CLAIM_LEASE_DEFAULT) / 3.0;
	w->next_renew = now_s() + w->renew_every;
	if (o->signals) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGINT);
		sigaddset(&s, SIGTERM);
		sigprocmask(SIG_BLOCK, &s, &w->oldmask);
		w->waitmask = w->oldmask;
		sigdelset(&w->waitmask, SIGINT);
		sigdelset(&w->waitmask, SIGTERM);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &w->oldint);
		sigaction(SIGTERM, &sa, &w->oldterm);
		watch_signal = 0;
	}
	return w;
}

/* Remember a file this process released, so it is not handed straight back. */
static void note_released(struct watch *w)
{
	struct claim *c = &w->cur;
	if (grow((void **)&w->skip, &w->capskip, w->nskip + 1, sizeof *w->skip) == 0) {
		struct cand *s = &w->skip[w->nskip++];
		s->step = c->step;
		s->rank = c->rank;
		strcpy(s->name, c->name);
	}
	c->state = CLAIM_NONE;
}

int watch_next(struct watch *w, struct claim **out, struct err *e)
{
	*out = NULL;
	if (w->cur.state == CLAIM_HELD && claim_release(&w->cur, e) < 0)
		return -1;
	if (w->cur.state == CLAIM_RELEASED)
		note_released(w);
	for (;;) {
		if (stop_requested(w))
			return 0;
		if (watch_renew(w, e) < 0)
			return -1;
		if (w->need_scan) {
			if (!w->o.follow && w->st.scans > 0)
				return 0;
			if (scan_all(w, e) < 0)
				return -1;
		}
		tidy_cands(w);
		while (w->head < w->ncands) {
			struct cand *c = &w->cands[w->head++];
			if (!in_range(w, c->step) || skipped(w, c))
				continue;
			int r = claim_take(&w->cur, w->queue, c->step, c->rank, c->name, w->o.lease, e);
			if (r < 0)
				return -1;
			if (r == 0) {
				w->st.claimed++;
				*out = &w->cur;
				return 1;
			}
			if (stop_requested(w))
				return 0;
		}
		if (!w->o.follow)
			return 0;
		if (w->deadline > 0 && now_s() >= w->deadline) {
			w->timed_out = 1;
			return 0;
		}
		if (wait_for_work(w, e) < 0)
			return -1;
	}
}

void watch_deadline(struct watch *w, double seconds)
{
	w->deadline = seconds > 0 ? now_s() + seconds : 0;
	w->timed_out = 0;
}

int watch_timed_out(const struct watch *w)
{
	return w->timed_out;
}

void watch_detach(struct watch *w, struct claim *c)
{
	*c = w->cur;
	w->cur.state = CLAIM_NONE;
	w->cur.fd = -1;
	if (c->state != CLAIM_HELD)
		return;
	char *p = strdup(c->claim_path);
	if (!p || grow((void **)&w->held, &w->capheld, w->nheld + 1, sizeof *w->held) < 0) {
		free(p);
		w->held_lost = 1; /* reported by the next watch_renew */
		return;
	}
	w->held[w->nheld++] = (struct held){ p, c->dev, c->ino };
}

int watch_renew(struct watch *w, struct err *e)
{
	if (w->held_lost) {
		w->held_lost = 0;
		return err_set(e, "%s: out of memory: a detached claim will not be renewed", w->queue);
	}
	double now = now_s();
	if (now < w->next_renew)
		return 0;
	w->next_renew = now + w->renew_every;
	int bad = 0;
	if (w->cur.state == CLAIM_HELD && claim_renew(&w->cur, e) < 0)
		bad = 1;
	size_t k = 0;
	for (size_t i = 0; i < w->nheld; i++) {
		struct held *h = &w->held[i];
		int r = bad ? 0 : claim_renew_record(h->claim_path, h->dev, h->ino, e);
		if (r < 0)
			bad = 1;
		if (r == 1) { /* retired or released by its holder: forget it */
			free(h->claim_path);
			continue;
		}
		w->held[k++] = *h;
	}
	w->nheld = k;
	return bad ? -1 : 0;
}

double watch_renew_in(const struct watch *w)
{
	double left = w->next_renew - now_s();
	return left > 0 ? left : 0;
}

int watch_stopped(const struct watch *w)
{
	return w->o.signals ? (int)watch_signal : 0;
}

void watch_stats(const struct watch *w, struct watch_stats *s)
{
	*s = w->st;
	s->interval = w->interval;
	s->watches = (long)w->ndirs;
}

static const char *plural(long n)
{
	return n == 1 ? "" : "s";
}

int watch_summary(const struct watch *w, int follow, struct buf *out)
{
	const struct watch_stats *s = &w->st;
	int x = buf_printf(out, "%ld file%s, %ld scan%s, %ld event%s, %ld overflow%s, ", s->claimed,
	                   plural(s->claimed), s->scans, plural(s->scans), s->events, plural(s->events),
	                   s->overflows, plural(s->overflows));
	if (follow)
		x |= buf_printf(out, "%s every %gs", s->polling ? "polling" : "inotify, rescan", w->interval);
	else
		x |= buf_printf(out, "one pass");
	return x | buf_printf(out, "%s", watch_stopped(w) ? ", stopped by signal" : "");
}

void watch_test_overflow(struct watch *w)
{
	w->test_overflow = 1;
}

void watch_close(struct watch *w)
{
	if (!w)
		return;
	if (w->cur.state == CLAIM_HELD)
		claim_let_go(&w->cur, NULL);
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->o.signals) {
		sigaction(SIGINT, &w->oldint, NULL);
		sigaction(SIGTERM, &w->oldterm, NULL);
		sigprocmask(SIG_SETMASK, &w->oldmask, NULL);
	}
	for (size_t i = 0; i < w->nheld; i++)
		free(w->held[i].claim_path);
	free(w->held);
	free(w->dirs);
	free(w->cands);
	free(w->skip);
	free(w);
}
