/* scorer.c: see scorer.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/jsonview.h"
#include "data/scoresum.h"
#include "score/scored.h"
#include "score/scorer.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int scorer_merge(struct group *gs, uint32_t *n, struct err *e)
{
	/* the groups kept so far by the hash of their id (position + 1, 0
	 * empty): a scan of them all for every record made an input of
	 * 160,000 groups take 53 s */
	size_t cap = 16;
	while (cap < 2 * (size_t)*n)
		cap *= 2;
	uint32_t *at = calloc(cap, sizeof *at);
	if (!at)
		return err_set(e, "out of memory merging groups");
	uint32_t out = 0;
	for (uint32_t i = 0; i < *n; i++) {
		size_t h = scored_group_key(&gs[i]) & (cap - 1);
		while (at[h] && !scored_same_group(&gs[at[h] - 1], &gs[i]))
			h = (h + 1) & (cap - 1);
		uint32_t j = at[h] ? at[h] - 1 : out;
		if (j == out) {
			at[h] = out + 1;
			gs[out++] = gs[i];
			continue;
		}
		struct traj *t = realloc(gs[j].trajs, (size_t)(gs[j].n + gs[i].n) * sizeof *t);
		if (!t) {
			free(at);
			return err_set(e, "out of memory merging groups");
		}
		memcpy(t + gs[j].n, gs[i].trajs, gs[i].n * sizeof *t);
		gs[j].trajs = t;
		gs[j].n += gs[i].n;
		free(gs[i].trajs);
	}
	free(at);
	for (uint32_t i = out; i < *n; i++)
		memset(&gs[i], 0, sizeof gs[i]);
	*n = out;
	return 0;
}

/* The prompt tokens decoded to see whether they end by opening a think
 * block: "<think>" and the white space after it, however split. */
#define OPENED_TOKENS 16

/* When t's prompt ends by opening a think block (reward_think_opened), that
 * opening and then the response's text s (n bytes) into out, which format,
 * think and tags read; else out is left empty. */
static int think_continued(const struct scorer_opt *o, const struct traj *t, const char *s, size_t n,
			   struct buf *out, struct err *e)
{
	uint32_t k = t->n_prompt < OPENED_TOKENS ? t->n_prompt : OPENED_TOKENS;
	if (tok_decode(o->tok, t->prompt_tokens + t->n_prompt - k, k, 0, out, e) < 0)
		return -1;
	size_t open = reward_think_opened((const char *)out->data, out->len);
	if (open)
		memmove(out->data, out->data + out->len - open, open);
	out->len = open;
	if (open && buf_append(out, s, n) < 0)
		return err_set(e, "out of memory");
	return 0;
}

/* The response's text (and the prompt's, for a reward program) appended
 * to text and prompt, and the built-ins' rewards into row. */
static int decode_traj(const struct scorer_opt *o, const struct group *g, const struct traj *t, double *row,
		       struct buf *text, size_t *text_n, struct buf *prompt, size_t *prompt_n,
		       struct scorer_stats *st, struct err *e)
{
	char sid[64], gid[64];
	scored_seq_text(t, sid, sizeof sid);
	scored_group_text(g, gid, sizeof gid);
	double t0 = now();
	size_t at = text->len, pat = prompt->len;
	if (o->tok && tok_decode(o->tok, t->response_tokens, t->n_response, 1, text, e) < 0)
		return err_prefix(e, "group %s, sequence %s: response", gid, sid);
	if (o->tok && o->cmd && tok_decode(o->tok, t->prompt_tokens, t->n_prompt, 0, prompt, e) < 0)
		return err_prefix(e, "group %s, sequence %s: prompt", gid, sid);
	*text_n = text->len - at;
	*prompt_n = prompt->len - pat;
	double t1 = now();
	st->t_decode += t1 - t0;
	const char *s = text->data ? (const char *)text->data + at : "";
	struct buf opened = { 0 };
	int looked = 0, r = 0;
	for (uint32_t k = 0; k < o->n_rewards && r == 0; k++) {
		enum reward_kind kind = o->rewards[k].kind;
		const char *x = s;
		size_t xn = *text_n;
		if (reward_reads_think(kind)) {
			if (!looked++ && think_continued(o, t, s, *text_n, &opened, e) < 0) {
				r = err_prefix(e, "group %s, sequence %s: prompt", gid, sid);
				break;
			}
			if (opened.len)
				x = (const char *)opened.data, xn = opened.len;
		}
		row[k] = reward_eval(kind, &o->ropt, x, xn, t->answer, t->n_response);
		if (isnan(row[k]))   /* a built-in's NaN: memory ran out */
			r = err_set(e, "out of memory");
	}
	buf_free(&opened);
	st->t_reward += now() - t1;
	return r;
}

/* The ids whole, as JSON, each NUL-terminated, appended to ids: the
 * sequence's at *sid, the group's at *gid (scored_*_text cuts them to
 * size for messages). */
static int ids_json(struct buf *ids, const struct group *g, const struct traj *t, size_t *sid, size_t *gid,
		    struct err *e)
{
	*sid = ids->len;
	if (json_print_id(ids, &t->sequence_id) < 0 || buf_put_u8(ids, 0) < 0)
		return err_set(e, "out of memory");
	*gid = ids->len;
	if (json_print_id(ids, &g->group_id) < 0 || buf_put_u8(ids, 0) < 0)
		return err_set(e, "out of memory");
	return 0;
}

/* The rewards of one trajectory into row (K): one program, asked one
 * request at a time as each is decoded. */
static int reward_traj(const struct scorer_opt *o, const struct group *g, const struct traj *t, int last,
		       double *row, struct buf *text, struct buf *prompt, struct scorer_stats *st, struct err *e)
{
	size_t text_n, prompt_n;
	buf_reset(text);
	buf_reset(prompt);
	if (decode_traj(o, g, t, row, text, &text_n, prompt, &prompt_n, st, e) < 0)
		return -1;
	if (!o->cmd)
		return 0;
	double t1 = now();
	struct buf ids = { 0 };
	size_t sid, gid;
	if (ids_json(&ids, g, t, &sid, &gid, e) < 0) {
		buf_free(&ids);
		return -1;
	}
	struct rewardcmd_req q = { .seq_id = (const char *)ids.data + sid, .group_id = (const char *)ids.data + gid,
				   .prompt = prompt->data ? (const char *)prompt->data : "",
				   .response = text->data ? (const char *)text->data : "", .prompt_n = prompt_n,
				   .response_n = text_n, .answer = t->answer, .finish_reason = t->finish_reason };
	struct rewardcmd *c = &o->cmd->c[0];
	double v[REWARDCMD_MAX];
	int r = rewardcmd_ask(c, &q, v, e);
	/* a second answer to the input's last request fails this input */
	if (r == 0 && last)
		r = rewardcmd_check(c, &q, e);
	buf_free(&ids);
	if (r < 0)
		return -1;
	for (uint32_t k = 0; k < c->n_names; k++)
		row[o->n_rewards + k] = v[k];
	st->t_reward += now() - t1;
	return 0;
}

/* Groups whose rewards are all in, for the pool's answers coming in any order. */
struct batch_done {
	const struct scorer_opt *o;
	const uint32_t *group_of;   /* (N) each request's group */
	uint32_t *left;             /* (n) answers still to come */
	uint32_t n, complete;
};

static int answer_in(void *ctx, uint32_t i, struct err *e)
{
	struct batch_done *d = ctx;
	if (--d->left[d->group_of[i]])
		return 0;
	d->complete++;
	progress_show(d->o->progress, d->complete, d->n, "groups rewarded");
	return d->o->between ? d->o->between(d->o->ctx, e) : 0;
}

/* Where one request's texts and ids lie in reward_batch's buffers. */
struct held {
	size_t text, text_n, prompt, prompt_n, sid, gid;
};

/* The rewards of the whole batch into r (stride K0), the program's requests
 * all at once over its copies (--reward-jobs): every text of the input is
 * decoded first and held until the last answer is in, which for one input
 * of rollouts (a step's groups of one rank) is some megabytes. With
 * --reward-groups the requests are the groups (an empty one is not asked),
 * each holding its members'. */
static int reward_batch(const struct scorer_opt *o, struct group *gs, uint32_t n, uint32_t N, double *r, uint32_t K0,
			struct scorer_stats *st, struct err *e)
{
	struct buf text = { 0 }, prompt = { 0 }, ids = { 0 };
	struct held *at = malloc(((size_t)N + 1) * sizeof *at);
	struct rewardcmd_req *q = malloc(((size_t)N + 1) * sizeof *q);
	struct rewardcmd_req *gq = o->cmd_groups ? malloc(((size_t)n + 1) * sizeof *gq) : NULL;
	uint32_t *group_at = o->cmd_groups ? malloc(((size_t)n + 1) * sizeof *group_at) : NULL;
	uint32_t *group_of = malloc(((size_t)N + 1) * sizeof *group_of);
	uint32_t *left = malloc(((size_t)n + 1) * sizeof *left);
	struct batch_done d = { o, group_of, left, n, 0 };
	int rc = 0;
	if (!at || !q || !group_of || !left || (o->cmd_groups && (!gq || !group_at))) {
		rc = err_set(e, "out of memory scoring %u sequences", N);
		goto out;
	}
	for (uint32_t g = 0, i = 0; g < n && rc == 0; g++) {
		left[g] = gs[g].n;
		d.complete += !gs[g].n;
		for (uint32_t j = 0; j < gs[g].n && rc == 0; j++, i++) {
			struct held *a = &at[i];
			a->text = text.len, a->prompt = prompt.len;
			group_of[i] = g;
			rc = decode_traj(o, &gs[g], &gs[g].trajs[j], r + (size_t)i * K0, &text, &a->text_n, &prompt,
					 &a->prompt_n, st, e);
			rc = rc < 0 ? rc : ids_json(&ids, &gs[g], &gs[g].trajs[j], &a->sid, &a->gid, e);
		}
	}
	if (rc < 0)
		goto out;
	for (uint32_t g = 0, i = 0; g < n; g++) {
		for (uint32_t j = 0; j < gs[g].n; j++, i++) {
			const struct held *a = &at[i];
			const struct traj *t = &gs[g].trajs[j];
			q[i] = (struct rewardcmd_req){ .seq_id = (const char *)ids.data + a->sid,
						       .group_id = (const char *)ids.data + a->gid,
						       .prompt = prompt.data ? (const char *)prompt.data + a->prompt
									     : "",
						       .response = text.data ? (const char *)text.data + a->text : "",
						       .prompt_n = a->prompt_n, .response_n = a->text_n,
						       .answer = t->answer, .finish_reason = t->finish_reason };
		}
	}
	uint32_t n_ask = N;
	const struct rewardcmd_req *ask = q;
	if (o->cmd_groups) {
		/* answer_in then counts group requests: each group's is its one answer */
		n_ask = 0;
		for (uint32_t g = 0, i = 0; g < n; i += gs[g++].n) {
			if (!gs[g].n)
				continue;
			gq[n_ask] = (struct rewardcmd_req){ .group_id = q[i].group_id, .members = &q[i],
							    .n_members = gs[g].n, .stride = K0, .row = i };
			group_at[n_ask++] = g;
			left[g] = 1;
		}
		ask = gq;
		d.group_of = group_at;
	}
	double t1 = now();
	rc = rewardpool_run(o->cmd, ask, n_ask, r + o->n_rewards, K0, answer_in, &d, e);
	st->t_reward += now() - t1;
out:
	buf_free(&text);
	buf_free(&prompt);
	buf_free(&ids);
	free(at);
	free(q);
	free(gq);
	free(group_at);
	free(group_of);
	free(left);
	return rc;
}

static void names_into(const struct scorer_opt *o, struct scorer_stats *st)
{
	st->K = o->n_rewards + (o->cmd ? rewardpool_n_names(o->cmd) : 0);
	for (uint32_t k = 0; k < st->K; k++)
		snprintf(st->names[k], sizeof st->names[k], "%s",
			 k < o->n_rewards ? o->rewards[k].name : rewardpool_name(o->cmd, k - o->n_rewards));
}

/* err_set for a name the reward program does not answer, listing those it does. */
static int unknown_program_reward(const struct scorer_opt *o, const struct scorer_stats *st, const char *option,
				  const char *name, struct err *e)
{
	struct buf have = { 0 };
	for (uint32_t j = o->n_rewards; j < st->K; j++)
		buf_printf(&have, "%s%s", j > o->n_rewards ? ", " : "", st->names[j]);
	err_set(e, "%s %s: the reward program '%s' answers no reward of that name (its rewards: %s)", option, name,
		o->cmd ? o->cmd->cmd : "", have.data ? (char *)have.data : "none");
	buf_free(&have);
	return -1;
}

/* The weight of each of the K functions: the built-ins' own, the
 * program's by name (1 when not given). */
static int weights(const struct scorer_opt *o, const struct scorer_stats *st, double *w, struct err *e)
{
	for (uint32_t k = 0; k < st->K; k++)
		w[k] = k < o->n_rewards ? o->rewards[k].weight : 1.0;
	for (uint32_t q = 0; q < o->n_cmd_weights; q++) {
		uint32_t k = o->n_rewards;
		while (k < st->K && strcmp(st->names[k], o->cmd_weights[q].name) != 0)
			k++;
		if (k == st->K)
			return unknown_program_reward(o, st, "--reward", o->cmd_weights[q].name, e);
		w[k] = o->cmd_weights[q].weight;
	}
	return 0;
}

/* The rewards that weigh a response's length by whether it is right
 * (reward_needs_verdict), into r (N x K) once every other reward is in:
 * right is a success of the correctness reward, o->correct_by. */
static int verdict_rewards(const struct scorer_opt *o, const struct scorer_stats *st, const struct group *gs,
			   uint32_t n, double *r, struct err *e)
{
	uint32_t K = st->K, c = 0, any = 0;
	for (uint32_t k = 0; k < o->n_rewards; k++)
		any |= reward_needs_verdict(o->rewards[k].kind);
	if (!any)
		return 0;
	while (c < K && strcmp(st->names[c], o->correct_by) != 0)
		c++;
	if (c == K)
		return unknown_program_reward(o, st, "--correct-by", o->correct_by, e);
	for (uint32_t g = 0, i = 0; g < n; i += gs[g++].n) {
		uint32_t shortest = UINT32_MAX, longest = 0;
		for (uint32_t j = 0; j < gs[g].n; j++) {
			uint32_t L = gs[g].trajs[j].n_response;
			shortest = L < shortest ? L : shortest;
			longest = L > longest ? L : longest;
		}
		for (uint32_t j = 0; j < gs[g].n; j++) {
			double *row = r + (size_t)(i + j) * K;
			uint32_t L = gs[g].trajs[j].n_response;
			int right = isfinite(row[c]) && row[c] >= o->success_threshold;
			for (uint32_t k = 0; k < o->n_rewards; k++) {
				if (o->rewards[k].kind == REWARD_COSINE)
					row[k] = reward_cosine(&o->ropt, right, L);
				else if (o->rewards[k].kind == REWARD_KIMI_LENGTH)
					row[k] = reward_kimi_length(right, L, shortest, longest);
			}
		}
	}
	return 0;
}

/* Count in st the pass@k of a group of n members, solved[k] of them a
 * success of reward k. */
static void pass_add(struct scorer_stats *st, uint32_t K, uint32_t n, const uint32_t *solved)
{
	for (uint32_t i = 0; i < SCORER_PASS_POW && (1u << i) <= n; i++) {
		st->pass_groups[i]++;
		for (uint32_t k = 0; k < K; k++)
			st->pass_sum[k][i] += pass_at_k(n, solved[k], 1u << i);
	}
	if (n > st->pass_top) {   /* smaller groups have no pass@n */
		st->pass_top = n, st->pass_top_groups = 0;
		memset(st->pass_top_sum, 0, sizeof st->pass_top_sum);
	}
	if (n == st->pass_top) {
		st->pass_top_groups++;
		for (uint32_t k = 0; k < K; k++)
			st->pass_top_sum[k] += pass_at_k(n, solved[k], n);
	}
}

/* scorer_run, or with each 1 scorer_run_each: the counts into st[g] for
 * group g, and the batch's times into st[0]. */
static int run(const struct scorer_opt *o, struct group *gs, uint32_t n, uint8_t *keep, struct scorer_stats *st,
	       int each, struct err *e)
{
	memset(st, 0, (each ? n : 1) * sizeof *st);
	uint32_t N = 0, K0 = o->n_rewards + (o->cmd ? REWARDCMD_MAX : 0);
	for (uint32_t g = 0; g < n; g++)
		N += gs[g].n;
	double *r = malloc(((size_t)N * K0 + 1) * sizeof *r);
	float *adv = malloc(((size_t)N + 1) * sizeof *adv);
	uint8_t *zs = malloc((size_t)n + 1), *ex = malloc((size_t)N + 1);
	uint32_t *size = malloc(((size_t)n + 1) * sizeof *size);
	struct buf text = { 0 }, prompt = { 0 };
	int rc = 0;
	if (!r || !adv || !zs || !ex || !size) {
		rc = err_set(e, "out of memory scoring %u sequences", N);
		goto out;
	}

	/* rewards, row-major with stride K0 until the program's names are known */
	int batch = o->cmd && (o->cmd->jobs > 1 || o->cmd_groups);
	if (batch)
		rc = reward_batch(o, gs, n, N, r, K0, st, e);
	for (uint32_t g = 0, i = 0; !batch && g < n && rc == 0; g++) {
		for (uint32_t j = 0; j < gs[g].n && rc == 0; j++, i++)
			rc = reward_traj(o, &gs[g], &gs[g].trajs[j], g + 1 == n && j + 1 == gs[g].n,
					 r + (size_t)i * K0, &text, &prompt, st, e);
		if (rc == 0 && o->between)
			rc = o->between(o->ctx, e);
		progress_show(o->progress, g + 1, n, "groups rewarded");
	}
	if (rc < 0)
		goto out;
	for (uint32_t g = 0; g < (each ? n : 1); g++)
		names_into(o, &st[g]);
	uint32_t K = st->K;
	for (uint32_t i = 0; i < N; i++)
		memmove(r + (size_t)i * K, r + (size_t)i * K0, K * sizeof *r);

	double w[SCORER_MAX_REWARDS];
	if ((rc = weights(o, st, w, e)) < 0 || (rc = verdict_rewards(o, st, gs, n, r, e)) < 0)
		goto out;
	for (uint32_t g = 0; g < n; g++)
		size[g] = gs[g].n;
	struct adv_batch b = { n, size, K, r, w };
	if (K == 0) {
		memset(adv, 0, N * sizeof *adv);
		memset(zs, 1, n);
		memset(ex, 0, N);
	} else if ((rc = adv_compute(&o->adv, &b, adv, zs, ex, e)) < 0) {
		goto out;
	}

	/* reference logprobs of the groups kept */
	for (uint32_t g = 0; g < n; g++) {
		keep[g] = !(o->drop_zero_std && zs[g]);
		if (keep[g] && o->ref && gs[g].n) {
			double t0 = now();
			uint64_t before = o->ref->tokens;
			if ((rc = reflp_group(o->ref, &gs[g], e)) < 0)
				goto out;
			st[each ? g : 0].t_ref += now() - t0;
			st[each ? g : 0].ref_tokens += o->ref->tokens - before;
			if (o->between && (rc = o->between(o->ctx, e)) < 0)
				goto out;
		}
		if (o->ref)
			progress_show(o->progress, g + 1, n, "groups given reference logprobs");
	}

	/* all computed: mark scored, count */
	const char *names[SCORER_MAX_REWARDS];
	for (uint32_t k = 0; k < K; k++)
		names[k] = st->names[k];
	st->min_size = n ? UINT32_MAX : 0;
	struct scorer_stats *all = st;
	for (uint32_t g = 0, i = 0; g < n; g++) {
		if (each)   /* counted as when the group is scored alone */
			st = &all[g], st->min_size = UINT32_MAX;
		st->groups++;
		st->zero_std += zs[g];
		st->dropped += !keep[g];
		st->singletons += gs[g].n == 1;
		st->min_size = gs[g].n < st->min_size ? gs[g].n : st->min_size;
		st->max_size = gs[g].n > st->max_size ? gs[g].n : st->max_size;
		uint32_t solved[SCORER_MAX_REWARDS] = { 0 };
		for (uint32_t j = 0; j < gs[g].n; j++, i++) {
			struct traj *t = &gs[g].trajs[j];
			float fr[SCORER_MAX_REWARDS];
			uint8_t su[SCORER_MAX_REWARDS];
			for (uint32_t k = 0; k < K; k++) {
				double v = r[(size_t)i * K + k];
				int finite = isfinite(v) && isfinite((float)v);
				if (!finite) {
					if (!st->nonfinite++) {
						char sid[64], gid[64];
						scored_seq_text(t, sid, sizeof sid);
						scored_group_text(&gs[g], gid, sizeof gid);
						snprintf(st->first_nonfinite, sizeof st->first_nonfinite,
							 "group %s, sequence %s, reward %s = %g", gid, sid, names[k], v);
					}
					v = 0;
				}
				fr[k] = (float)v;
				su[k] = finite && v >= o->success_threshold;   /* stored as 0, it solved nothing */
				st->r_sum[k] += v;
				st->r_sq[k] += v * v;
				st->succ[k] += su[k];
				solved[k] += su[k];
			}
			if (scored_set(t, K, fr, names, su, adv[i]) < 0) {
				rc = err_set(e, "out of memory");
				goto out;
			}
			st->seqs++;
			st->resp_len_sum += t->n_response;
			st->resp_len_max = t->n_response > st->resp_len_max ? t->n_response : st->resp_len_max;
			st->truncated += traj_truncated(t);
		}
		if (gs[g].n)
			pass_add(st, K, gs[g].n, solved);
	}
	st = all;
out:
	if (rc < 0)
		for (uint32_t g = 0; g < n; g++)
			for (uint32_t j = 0; j < gs[g].n; j++)
				gs[g].trajs[j].scored = 0;
	buf_free(&text);
	buf_free(&prompt);
	free(r);
	free(adv);
	free(zs);
	free(ex);
	free(size);
	return rc;
}

int scorer_run(const struct scorer_opt *o, struct group *gs, uint32_t n, uint8_t *keep, struct scorer_stats *st,
	       struct err *e)
{
	return run(o, gs, n, keep, st, 0, e);
}

int scorer_run_each(const struct scorer_opt *o, struct group *gs, uint32_t n, uint8_t *keep,
		    struct scorer_stats *st, struct err *e)
{
	return run(o, gs, n, keep, st, 1, e);
}

void scorer_stats_add(struct scorer_stats *sum, const struct scorer_stats *st)
{
	if (!st->groups)
		return;
	if (!sum->groups || st->min_size < sum->min_size)
		sum->min_size = st->min_size;
	if (st->max_size > sum->max_size)
		sum->max_size = st->max_size;
	if (st->K > sum->K) {   /* the reward program's names are known from its first answer */
		sum->K = st->K;
		memcpy(sum->names, st->names, sizeof sum->names);
	}
	if (!sum->nonfinite && st->nonfinite)
		memcpy(sum->first_nonfinite, st->first_nonfinite, sizeof sum->first_nonfinite);
	sum->groups += st->groups, sum->seqs += st->seqs, sum->dropped += st->dropped;
	sum->zero_std += st->zero_std, sum->singletons += st->singletons, sum->nonfinite += st->nonfinite;
	for (uint32_t k = 0; k < st->K; k++) {
		sum->r_sum[k] += st->r_sum[k];
		sum->r_sq[k] += st->r_sq[k];
		sum->succ[k] += st->succ[k];
	}
	for (uint32_t i = 0; i < SCORER_PASS_POW; i++) {
		sum->pass_groups[i] += st->pass_groups[i];
		for (uint32_t k = 0; k < st->K; k++)
			sum->pass_sum[k][i] += st->pass_sum[k][i];
	}
	if (st->pass_top > sum->pass_top) {
		sum->pass_top = st->pass_top, sum->pass_top_groups = 0;
		memset(sum->pass_top_sum, 0, sizeof sum->pass_top_sum);
	}
	if (st->pass_top == sum->pass_top) {
		sum->pass_top_groups += st->pass_top_groups;
		for (uint32_t k = 0; k < st->K; k++)
			sum->pass_top_sum[k] += st->pass_top_sum[k];
	}
	sum->resp_len_sum += st->resp_len_sum;
	if (st->resp_len_max > sum->resp_len_max)
		sum->resp_len_max = st->resp_len_max;
	sum->truncated += st->truncated;
	sum->t_decode += st->t_decode, sum->t_reward += st->t_reward, sum->t_ref += st->t_ref;
	sum->ref_tokens += st->ref_tokens;
}

/* :V, null when not finite */
static int num_value(struct buf *out, double v)
{
	char f[32];
	json_format_float(f, (float)v);
	return buf_printf(out, ":%s", isfinite(v) ? f : "null");
}

static int num(struct buf *out, const char *key, double v)
{
	int r = buf_printf(out, ",\"%s\"", key);
	return r < 0 ? r : num_value(out, v);
}

/* {"input":INPUT, : how each of an input's lines begins. */
static int metrics_head(struct buf *out, const char *input)
{
	int r = buf_printf(out, "{\"input\":");
	r = r < 0 ? r : json_print_string(out, input);
	return r < 0 ? r : buf_printf(out, ",");
}

int scorer_metrics_has(const char *path, const char *input, struct err *e)
{
	struct buf head = { 0 };
	if (metrics_head(&head, input) < 0)
		return err_set(e, "out of memory");
	FILE *f = fopen(path, "r");
	if (!f) {
		buf_free(&head);
		return errno == ENOENT ? 0 : err_sys(e, "%s", path);
	}
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (!found && getline(&line, &cap, f) >= 0)
		found = strncmp(line, (const char *)head.data, head.len) == 0;
	int r = !found && !feof(f) ? err_sys(e, "%s", path) : found;   /* not ferror: see metrics.c */
	free(line);
	fclose(f);
	buf_free(&head);
	return r;
}

/* ,"pass_at":{"1":P,"2":P,...,"N":P} of reward k: the powers of two up
 * to the largest group, and its size, as grpo-cat --stats gives them. */
static int pass_metrics(struct buf *out, const struct scorer_stats *st, uint32_t k)
{
	if (!st->pass_top)
		return 0;
	int r = buf_printf(out, ",\"pass_at\":{");
	uint32_t i = 0;
	for (; i < SCORER_PASS_POW && st->pass_groups[i]; i++) {
		r = r < 0 ? r : buf_printf(out, "%s\"%u\"", i ? "," : "", 1u << i);
		r = r < 0 ? r : num_value(out, st->pass_sum[k][i] / st->pass_groups[i]);
	}
	if (r >= 0 && st->pass_top != 1u << (i - 1)) {
		r = buf_printf(out, ",\"%u\"", st->pass_top);
		r = r < 0 ? r : num_value(out, st->pass_top_sum[k] / st->pass_top_groups);
	}
	return r < 0 ? r : buf_printf(out, "}");
}

int scorer_metrics(struct buf *out, const char *input, const struct scorer_stats *st)
{
	double N = st->seqs ? st->seqs : 1;
	int r = metrics_head(out, input);
	r = r < 0 ? r : buf_printf(out, "\"groups\":%u,\"sequences\":%u,\"dropped_groups\":%u,"
				   "\"zero_std_groups\":%u,\"singleton_groups\":%u,\"nonfinite_rewards\":%u",
				   st->groups, st->seqs, st->dropped, st->zero_std, st->singletons, st->nonfinite);
	r = r < 0 ? r : num(out, "zero_std_fraction", st->groups ? (double)st->zero_std / st->groups : 0);
	r = r < 0 ? r : buf_printf(out, ",\"rewards\":{");
	for (uint32_t k = 0; k < st->K && r >= 0; k++) {
		double mean = st->r_sum[k] / N, var = st->r_sq[k] / N - mean * mean;
		r = buf_printf(out, "%s", k ? "," : "");
		r = r < 0 ? r : json_print_string(out, st->names[k]);
		char f[32];
		json_format_float(f, (float)mean);
		r = r < 0 ? r : buf_printf(out, ":{\"mean\":%s", f);
		r = r < 0 ? r : num(out, "std", sqrt(var > 0 ? var : 0));
		r = r < 0 ? r : num(out, "success_rate", st->succ[k] / N);
		r = r < 0 ? r : pass_metrics(out, st, k);
		r = r < 0 ? r : buf_printf(out, "}");
	}
	r = r < 0 ? r : buf_printf(out, "}");
	r = r < 0 ? r : num(out, "response_len_mean", st->resp_len_sum / N);
	r = r < 0 ? r : buf_printf(out, ",\"response_len_max\":%u", st->resp_len_max);
	r = r < 0 ? r : num(out, "truncated_fraction", st->truncated / N);
	r = r < 0 ? r : num(out, "decode_s", st->t_decode);
	r = r < 0 ? r : num(out, "reward_s", st->t_reward);
	r = r < 0 ? r : num(out, "ref_s", st->t_ref);
	r = r < 0 ? r : buf_printf(out, ",\"ref_tokens\":%llu", (unsigned long long)st->ref_tokens);
	r = r < 0 ? r : num(out, "ref_tokens_per_s", st->t_ref > 0 ? st->ref_tokens / st->t_ref : 0);
	r = r < 0 ? r : buf_printf(out, "}\n");
	return r < 0 ? -1 : 0;
}
