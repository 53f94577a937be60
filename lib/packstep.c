/* packstep.c: see packstep.h. */
#include "packstep.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsys.h"
#include "jsonview.h"
#include "mbbuild.h"
#include "spool.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void packstep_stats_free(struct packstep_stats *st)
{
	free(st->rank_tokens);
	free(st->rank_cost);
	memset(st, 0, sizeof *st);
}

int packstep_done_exists(const char *queue, int64_t step, struct err *e)
{
	char p[PATH_MAX];
	struct stat sb;
	if (snprintf(p, sizeof p, "%s/step_%lld/DONE", queue, (long long)step) >= (int)sizeof p)
		return err_set(e, "%s: path too long", queue);
	if (stat(p, &sb) == 0)
		return 1;
	if (errno == ENOENT || errno == ENOTDIR)
		return 0;
	return err_sys(e, "%s", p);
}

int packstep_next_step(const char *queue, int64_t *step, struct err *e)
{
	*step = 1;
	DIR *d = opendir(queue);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return err_sys(e, "%s", queue);
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		if (strncmp(de->d_name, "step_", 5) != 0)
			continue;
		long long n = strtoll(de->d_name + 5, &end, 10);
		if (*end || end == de->d_name + 5 || n < 0)
			continue;
		int r = packstep_done_exists(queue, n, e);
		if (r < 0) {
			closedir(d);
			return -1;
		}
		if (r == 1 && n + 1 > *step)
			*step = n + 1;
	}
	closedir(d);
	return 0;
}

/* Publish QUEUE/step_N/DONE: a unique temporary in QUEUE/.tmp, fsync,
 * rename without replacing, fsync of the step directory. */
static int publish_done(const struct packstep_opt *o, int64_t step, const struct buf *text,
			struct err *e)
{
	char tmpdir[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], fin[PATH_MAX], host[64] = "localhost";
	gethostname(host, sizeof host - 1);
	for (char *p = host; *p; p++)
		if (*p == '/' || *p == '.')
			*p = '_';
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", o->queue) >= (int)sizeof tmpdir ||
	    snprintf(tmp, sizeof tmp, "%s/DONE.%s.%ld.%lld.%ld", tmpdir, host, (long)getpid(),
		     (long long)step, ts.tv_nsec) >= (int)sizeof tmp ||
	    snprintf(dir, sizeof dir, "%s/step_%lld", o->queue, (long long)step) >= (int)sizeof dir ||
	    snprintf(fin, sizeof fin, "%s/DONE", dir) >= (int)sizeof fin)
		return err_set(e, "%s: path too long", o->queue);
	if (fsys_mkdirs(tmpdir, e) < 0 || fsys_mkdirs(dir, e) < 0)
		return -1;
	int fd = fsys_open_excl(tmp, e);
	if (fd < 0)
		return -1;
	if (fsys_write_all(fd, text->data, text->len, tmp, e) < 0 ||
	    (!o->no_fsync && fsys_fsync(fd, tmp, e) < 0)) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (fsys_close(fd, tmp, e) < 0) {
		unlink(tmp);
		return -1;
	}
	int r = fsys_rename_noreplace(tmp, fin, e);
	if (r != 0) {
		unlink(tmp);
		return r < 0 ? -1 : err_set(e, "%s: already exists: step %lld was published meanwhile", fin,
					    (long long)step);
	}
	return o->no_fsync ? 0 : fsys_fsync_dir(dir, e);
}

static int put_one(const struct packstep_opt *o, const struct microbatch *mb, int width,
		   struct packstep_stats *st, struct buf *enc, struct err *e)
{
	if (!o->queue)
		return sfile_write_mb(o->writer, mb, e);
	struct sfile_writer w;
	char name[64];
	snprintf(name, sizeof name, "mb_%0*d.zst", width, mb->index);
	buf_reset(enc);
	if (sfile_writer_init(&w, sfile_sink_buf, enc, o->level, e) < 0)
		return -1;
	int rc = sfile_write_mb(&w, mb, e) < 0 || sfile_writer_finish(&w, e) < 0 ? -1 : 0;
	sfile_writer_free(&w);
	if (rc < 0)
		return -1;
	struct spool_out so;
	if (spool_open(&so, o->queue, mb->step, mb->rank, name, e) < 0)
		return -1;
	so.no_fsync = o->no_fsync;
	if (spool_write(&so, enc->data, enc->len, e) < 0) {
		spool_abort(&so);
		return -1;
	}
	int r = spool_commit(&so, e);
	if (r < 0)
		return -1;
	st->files_existing += r == 1;
	st->bytes += enc->len;
	return 0;
}

int packstep_run(const struct packstep_opt *o, int64_t step, const struct packstep_seq *s, uint32_t n,
		 struct packstep_run *runs, uint32_t n_runs, uint32_t next_run, uint64_t batch_size,
		 struct packstep_stats *st, struct err *e)
{
	memset(st, 0, sizeof *st);
	st->step = step;
	st->ranks = o->ranks;
	if (o->queue) {
		int r = packstep_done_exists(o->queue, step, e);
		if (r < 0)
			return -1;
		if (r == 1)
			return err_set(e, "%s/step_%lld/DONE: step %lld is already published", o->queue,
				       (long long)step, (long long)step);
	}
	uint32_t P = o->pad_multiple > 1 ? o->pad_multiple : 1;
	struct pack_item *it = malloc((n ? n : 1) * sizeof *it);
	const struct traj **seqs = malloc((n ? n : 1) * sizeof *seqs);
	uint32_t *use = malloc((n ? n : 1) * sizeof *use);
	struct buf enc = { 0 }, man = { 0 };
	struct pack_result pr = { 0 };
	int rc = -1;
	if (!it || !seqs || !use) {
		err_set(e, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		it[i] = (struct pack_item){ s[i].use, s[i].run, pack_cost_of(&o->cost, s[i].use) };
	struct pack_opt po = { o->seq_len, o->ranks, o->separate_runs, pack_cost_of(&o->cost, P) };
	double t0 = now_s();
	if (pack_items(it, n, &po, &pr, e) < 0)
		goto out;
	st->pack_s = now_s() - t0;
	st->per_rank = pr.per_rank;
	st->dummies = pr.dummies;
	st->sequences = n;
	st->lower_bound = pr.lower_bound;
	st->refine_moves = pr.refine_moves;
	st->rank_tokens = calloc(o->ranks, sizeof *st->rank_tokens);
	st->rank_cost = calloc(o->ranks, sizeof *st->rank_cost);
	if (!st->rank_tokens || !st->rank_cost) {
		err_set(e, "out of memory");
		goto out;
	}

	t0 = now_s();
	uint64_t bytes0 = o->writer ? o->writer->file_bytes : 0;
	struct mbbuild_opt mo = { o->seq_len, P, step };
	int width = 4;
	for (uint32_t k = pr.per_rank; k >= 10000; k /= 10)
		width++;
	for (uint32_t b = 0; b < pr.k; b++) {
		uint32_t ns = 0;
		for (uint32_t x = pr.bin_start[b]; x < pr.bin_start[b + 1]; x++) {
			seqs[ns] = s[pr.items[x]].t;
			use[ns++] = s[pr.items[x]].use;
		}
		struct microbatch mb;
		int32_t rank = (int32_t)(b / pr.per_rank), index = (int32_t)(b % pr.per_rank);
		if (mb_build(&mb, seqs, use, ns, &mo, rank, index, e) < 0)
			goto out;
		if (o->separate_runs && ns > 0 && runs[s[pr.items[pr.bin_start[b]]].run].name[0]) {
			mb.run = strdup(runs[s[pr.items[pr.bin_start[b]]].run].name);
			if (!mb.run) {
				mb_free(&mb);
				err_set(e, "out of memory");
				goto out;
			}
		}
		uint64_t real = pr.bin_len[b];
		st->tokens += real;
		if (ns == 0)
			st->dummy_tokens += mb.n_tokens;
		else
			st->pad_tokens += mb.n_tokens - real;
		st->rank_tokens[rank] += mb.n_tokens;
		for (uint32_t q = 0; q < mb.n_seq_lens; q++)
			st->rank_cost[rank] += pack_cost_of(&o->cost, mb.seq_lens[q]);
		int r = put_one(o, &mb, width, st, &enc, e);
		mb_free(&mb);
		if (r < 0) {
			err_prefix(e, "step %lld rank %d micro-batch %d", (long long)step, rank, index);
			goto out;
		}
	}
	uint32_t kb = pr.lower_bound ? (pr.lower_bound + o->ranks - 1) / o->ranks * o->ranks : o->ranks;
	st->fill = (double)st->tokens / ((double)pr.k * o->seq_len);
	st->fill_bound = (double)st->tokens / ((double)kb * o->seq_len);

	/* run progress */
	for (uint32_t q = 0; q < n_runs; q++)
		runs[q].seqs = runs[q].ready = 0, runs[q].tokens = 0;
	for (uint32_t i = 0; i < n; i++) {
		runs[s[i].run].seqs++;
		runs[s[i].run].tokens += s[i].use;
	}
	for (uint32_t q = 0; q < n_runs; q++) {
		if (runs[q].seqs == 0)
			continue;
		runs[q].seqs_total += runs[q].seqs;
		int64_t now = batch_size ? (int64_t)(runs[q].seqs_total / batch_size) : runs[q].run_step + 1;
		runs[q].ready = now > runs[q].run_step;
		runs[q].run_step = now;
	}

	if (o->queue) {
		int bad = buf_printf(&man, "{\"step\":%lld,\"ranks\":%u,\"micro_batches_per_rank\":%u,"
				     "\"sequences\":%u,\"tokens\":%llu,\"pad_tokens\":%llu,\"dummies\":%u,\"runs\":[",
				     (long long)step, o->ranks, pr.per_rank, n, (unsigned long long)st->tokens,
				     (unsigned long long)(st->pad_tokens + st->dummy_tokens), pr.dummies);
		for (uint32_t q = 0, first = 1; q < n_runs; q++) {
			if (runs[q].seqs == 0)
				continue;
			bad |= buf_printf(&man, "%s{\"run\":", first ? "" : ",");
			bad |= json_print_string(&man, runs[q].name);
			bad |= buf_printf(&man, ",\"sequences\":%u,\"tokens\":%llu,\"sequences_total\":%llu,"
					  "\"run_step\":%lld,\"ready\":%s}", runs[q].seqs,
					  (unsigned long long)runs[q].tokens, (unsigned long long)runs[q].seqs_total,
					  (long long)runs[q].run_step, runs[q].ready ? "true" : "false");
			first = 0;
		}
		bad |= buf_printf(&man, "],\"next_run\":");
		bad |= json_print_string(&man, n_runs ? runs[next_run % n_runs].name : "");
		bad |= buf_printf(&man, "}\n");
		if (bad) {
			err_set(e, "out of memory");
			goto out;
		}
		if (publish_done(o, step, &man, e) < 0)
			goto out;
	} else {
		if (sfile_writer_flush(o->writer, e) < 0)
			goto out;
		st->bytes = o->writer->file_bytes - bytes0;
	}
	st->write_s = now_s() - t0;
	rc = 0;
out:
	free(it), free(seqs), free(use);
	buf_free(&enc), buf_free(&man);
	pack_result_free(&pr);
	return rc;
}

int packstep_metrics(struct buf *b, const struct packstep_stats *st, const struct packstep_run *runs,
		     uint32_t n_runs, const char *const *reasons, const uint64_t *dropped,
		     uint32_t n_reasons, uint64_t truncated, uint64_t truncated_untrained)
{
	double tmax = 0, tsum = 0, cmax = 0, csum = 0;
	for (uint32_t q = 0; q < st->ranks; q++) {
		tsum += (double)st->rank_tokens[q];
		csum += st->rank_cost[q];
		tmax = (double)st->rank_tokens[q] > tmax ? (double)st->rank_tokens[q] : tmax;
		cmax = st->rank_cost[q] > cmax ? st->rank_cost[q] : cmax;
	}
	int bad = buf_printf(b, "{\"step\":%lld,\"ranks\":%u,\"micro_batches_per_rank\":%u,\"dummies\":%u,"
			     "\"sequences\":%u,\"tokens\":%llu,\"pad_tokens\":%llu,\"dummy_tokens\":%llu,"
			     "\"fill\":%.6f,\"fill_bound\":%.6f,\"rank_tokens\":[",
			     (long long)st->step, st->ranks, st->per_rank, st->dummies, st->sequences,
			     (unsigned long long)st->tokens, (unsigned long long)st->pad_tokens,
			     (unsigned long long)st->dummy_tokens, st->fill, st->fill_bound);
	for (uint32_t q = 0; q < st->ranks; q++)
		bad |= buf_printf(b, "%s%llu", q ? "," : "", (unsigned long long)st->rank_tokens[q]);
	bad |= buf_printf(b, "],\"rank_cost\":[");
	for (uint32_t q = 0; q < st->ranks; q++)
		bad |= buf_printf(b, "%s%.6g", q ? "," : "", st->rank_cost[q]);
	bad |= buf_printf(b, "],\"rank_tokens_max_mean\":%.6f,\"rank_cost_max_mean\":%.6f,\"dropped\":{",
			  tsum > 0 ? tmax / (tsum / st->ranks) : 1.0, csum > 0 ? cmax / (csum / st->ranks) : 1.0);
	for (uint32_t r = 0; r < n_reasons; r++)
		bad |= buf_printf(b, "%s\"%s\":%llu", r ? "," : "", reasons[r], (unsigned long long)dropped[r]);
	bad |= buf_printf(b, "},\"truncated\":%llu,\"truncated_untrained\":%llu,\"runs\":[",
			  (unsigned long long)truncated, (unsigned long long)truncated_untrained);
	for (uint32_t q = 0, first = 1; q < n_runs; q++) {
		if (runs[q].seqs == 0)
			continue;
		bad |= buf_printf(b, "%s{\"run\":", first ? "" : ",");
		bad |= json_print_string(b, runs[q].name);
		bad |= buf_printf(b, ",\"sequences\":%u,\"tokens\":%llu,\"run_step\":%lld,\"ready\":%s}",
				  runs[q].seqs, (unsigned long long)runs[q].tokens, (long long)runs[q].run_step,
				  runs[q].ready ? "true" : "false");
		first = 0;
	}
	bad |= buf_printf(b, "],\"refine_moves\":%u,\"pack_s\":%.6f,\"write_s\":%.6f,\"bytes\":%llu}\n",
			  st->refine_moves, st->pack_s, st->write_s, (unsigned long long)st->bytes);
	return bad ? -1 : 0;
}

int packstep_load_runs(const char *queue, int64_t step, struct packstep_run **runs, uint32_t *n,
		       uint32_t *next_run, struct err *e)
{
	char p[PATH_MAX];
	*runs = NULL;
	*n = *next_run = 0;
	if (snprintf(p, sizeof p, "%s/step_%lld/DONE", queue, (long long)step) >= (int)sizeof p)
		return err_set(e, "%s: path too long", queue);
	FILE *f = fopen(p, "rb");
	if (!f)
		return errno == ENOENT ? 0 : err_sys(e, "%s", p);
	struct buf b = { 0 };
	char chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		buf_append(&b, chunk, k);
	fclose(f);
	cJSON *j = cJSON_ParseWithLength((const char *)b.data, b.len);
	buf_free(&b);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "runs");
	const cJSON *nx = cJSON_GetObjectItemCaseSensitive(j, "next_run");
	if (!j || !cJSON_IsArray(arr)) {
		cJSON_Delete(j);
		return err_set(e, "%s: not a grpo-pack manifest", p);
	}
	uint32_t cnt = (uint32_t)cJSON_GetArraySize(arr), q = 0;
	struct packstep_run *r = calloc(cnt ? cnt : 1, sizeof *r);
	const cJSON *it;
	int rc = 0;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "run");
		const cJSON *tot = cJSON_GetObjectItemCaseSensitive(it, "sequences_total");
		const cJSON *rs = cJSON_GetObjectItemCaseSensitive(it, "run_step");
		if (!r || !cJSON_IsString(nm) || !cJSON_IsNumber(tot) || !cJSON_IsNumber(rs)) {
			rc = err_set(e, "%s: runs[%u]: expected run, sequences_total and run_step", p, q);
			break;
		}
		if (!(r[q].name = strdup(nm->valuestring))) {
			rc = err_set(e, "out of memory");
			break;
		}
		r[q].seqs_total = (uint64_t)tot->valuedouble;
		r[q].run_step = (int64_t)rs->valuedouble;
		if (cJSON_IsString(nx) && strcmp(nx->valuestring, r[q].name) == 0)
			*next_run = q;
		q++;
	}
	cJSON_Delete(j);
	if (rc < 0) {
		for (uint32_t x = 0; x < q; x++)
			free((char *)r[x].name);
		free(r);
		return -1;
	}
	*runs = r;
	*n = q;
	return 0;
}
