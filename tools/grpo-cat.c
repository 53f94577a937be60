/*
 * grpo-cat: print spool files as JSON lines, turn JSON lines back into a
 * spool file, and summarize what files hold; with a tokenizer, encode and
 * decode text and chat prompts. See grpo-cat(1).
 *
 * Inputs are spool files, concatenations of them (a pipe), or tar archives
 * of them in any compression libarchive knows (what `grpo-spool gc
 * --archive` writes), named or on standard input (spoolin.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "model/align.h"
#include "base/buf.h"
#include "model/chat.h"
#include "base/err.h"
#include "base/fsys.h"
#include "data/groupset.h"
#include "data/jsonview.h"
#include "data/scoresum.h"
#include "base/lineio.h"
#include "model/model.h"
#include "data/sfile.h"
#include "data/spoolin.h"
#include "spool/spool.h"
#include "base/tempfile.h"
#include "model/tokenizer.h"

#include "cli.h"

static const char *prog = "grpo-cat";

struct stats {
	uint64_t records, groups, microbatches, sequences;
	uint64_t prompt_tokens, response_tokens, batch_tokens, loss_tokens, pad_tokens;
	uint64_t bytes_on_disk, bytes_raw;
	int disk_unknown;               /* --head stopped inside an input: its bytes on disk are not the records' */
	uint64_t aligned_tokens;        /* with --model: trained response tokens compared */
	double diff_sum, abs_diff_sum, abs_diff_max;
	struct groupset gset;           /* groups of one, split group_ids */
	struct scoresum sum;            /* responses, finish reasons, rewards, pass@k */
	int verbose;                    /* -v: list their ids */
	int failed;
};

struct opts {
	int stats, json_stats;
	long long head;             /* records to print, -1 = all */
	struct stats st;
	struct buf out;             /* JSON text not yet written */
	struct model *model;        /* --model: add the model's logprobs */
	struct tokenizer *tok;      /* --tokenizer: add the decoded text */
	struct buf text;            /* scratch for decoded text */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-cat [--json] [--head N] [--model DIR] [--tokenizer FILE] [FILE...]\n"
		"       grpo-cat --stats [--json] [-v] [--head N] [--model DIR] [FILE...]\n"
		"       grpo-cat --from-json [-o FILE] [FILE...]\n"
		"       grpo-cat --tokenizer FILE | --model DIR --encode | --decode [FILE...]\n"
		"       grpo-cat --chat FORMAT [--no-thinking] [--encode --tokenizer FILE | --model DIR] [FILE...]\n"
		"       grpo-cat --chat auto [--no-thinking] [--encode] --tokenizer FILE | --model DIR [FILE...]\n"
		"Print spool files (or tar archives of them) as JSON lines, summarize them,\n"
		"write JSON lines back into a spool file, or turn text into token ids and back.\n"
		"Each form takes only the options it shows. FILE '-' or none: standard input.\n"
		"  -j, --json         JSON lines (the default view; with --stats, a JSON object)\n"
		"  -n, --head N       stop after N records\n"
		"  -s, --stats        records, sequences, tokens, bytes on disk, compression ratio,\n"
		"                     groups of one member and group_ids split over records;\n"
		"                     of rollouts, lengths and finish reasons; of scored ones,\n"
		"                     each reward's mean, solve rate and pass@k\n"
		"  -v, --verbose      with --stats: list those groups' ids\n"
		"  -m, --model DIR    add the model's logprob and entropy of every response token,\n"
		"                     and how far they are from the sampler's\n"
		"  -t, --tokenizer FILE  tokenizer.json: add prompt_text and response_text to\n"
		"                     each trajectory (default: DIR/tokenizer.json of --model)\n"
		"  -e, --encode       JSON strings in, JSON arrays of token ids out\n"
		"  -d, --decode       JSON arrays of token ids in, JSON strings out\n"
		"  -c, --chat FORMAT  a chat prompt from each line, a JSON string (the user's turn)\n"
		"                     or {\"messages\":[...]}, in " CHAT_FORMATS ",\n"
		"                     or auto (the one whose template is beside --tokenizer or\n"
		"                     in --model); its text, or its ids with --encode\n"
		"      --no-thinking  qwen3: enable_thinking=False (an empty think block)\n"
		"  -f, --from-json    read JSON lines, write one spool file\n"
		"  -o, --output FILE  with --from-json: write FILE atomically instead of stdout\n"
		"  -h, --help         this text\n"
		"  -V, --version      the version\n");
}

/* What o->out holds to standard output, once 64 KiB are there or when
 * force: 0, or -1 with the message in e, empty for a closed pipe (the
 * reader has gone: nothing to say). */
static int flush_out(struct opts *o, int force, struct err *e)
{
	if (o->out.len == 0 || (!force && o->out.len < (1 << 16)))
		return 0;
	size_t n = fwrite(o->out.data, 1, o->out.len, stdout);
	int bad = n != o->out.len;
	o->out.len = 0;
	if (bad || (force && fflush(stdout) != 0))
		return errno == EPIPE ? err_set(e, "%s", "") : err_sys(e, "standard output");
	return 0;
}

static void count(struct stats *st, const struct record *rec)
{
	st->records++;
	if (rec->kind == REC_GROUP) {
		struct err e;
		/* a spool file holds whole groups: every group record is an input of its own */
		if (groupset_add_id(&st->gset, &rec->group.group_id, rec->group.n, st->records, &e) < 0 &&
		    !st->failed) {
			cli_warn("%s", e.msg);
			st->failed = 1;
		}
		st->groups++;
		if (scoresum_add(&st->sum, &rec->group, &e) < 0 && !st->failed) {
			cli_warn("%s", e.msg);
			st->failed = 1;
		}
		for (uint32_t i = 0; i < rec->group.n; i++) {
			st->sequences++;
			st->prompt_tokens += rec->group.trajs[i].n_prompt;
			st->response_tokens += rec->group.trajs[i].n_response;
		}
	} else if (rec->kind == REC_MICROBATCH) {
		const struct microbatch *mb = &rec->mb;
		uint64_t real = 0;
		st->microbatches++;
		st->sequences += mb->n_seqs;
		st->batch_tokens += mb->n_tokens;
		for (uint32_t i = 0; i < mb->n_seqs && i < mb->n_seq_lens; i++)
			real += mb->seq_lens[i];
		st->pad_tokens += mb->n_tokens - real;
		for (uint32_t i = 0; i < mb->n_tokens; i++)
			st->loss_tokens += mb->loss_mask[i];
	}
}

/* What a group's trajectories get besides their own fields. */
struct extra {
	struct align_traj *a;           /* --model: the model's logprobs, or NULL */
	const struct tokenizer *tok;    /* --tokenizer: decoded text, or NULL */
	struct buf *text;
	struct err *e;
};

static int print_decoded(struct buf *out, const char *key, const struct extra *x, const int32_t *ids, uint32_t n)
{
	buf_reset(x->text);
	if (tok_decode(x->tok, ids, n, 0, x->text, x->e) < 0)
		return err_prefix(x->e, "%s", key);
	return buf_printf(out, ",\"%s\":", key) | json_print_string_n(out, (const char *)x->text->data, x->text->len);
}

static int print_extra(struct buf *out, const struct traj *t, uint32_t i, void *ctx)
{
	const struct extra *x = ctx;
	int r = 0;
	if (x->a) {
		const struct align_traj *a = &x->a[i];
		r |= buf_printf(out, ",\"model_logprobs\":");
		r |= json_print_floats(out, a->model_logprobs, t->n_response);
		r |= buf_printf(out, ",\"model_entropy\":");
		r |= json_print_floats(out, a->model_entropy, t->n_response);
		if (!t->logprobs)   /* nothing to compare with: say so, compute nothing */
			r |= buf_printf(out, ",\"model_logprob_diff_mean\":null,\"model_logprob_abs_diff_mean\":null,"
					"\"model_logprob_abs_diff_max\":null,\"sampler_logprobs\":\"missing\"");
		else
			r |= buf_printf(out, ",\"model_logprob_diff_mean\":%.6g,\"model_logprob_abs_diff_mean\":%.6g,"
					"\"model_logprob_abs_diff_max\":%.6g", a->diff_mean, a->abs_diff_mean, a->abs_diff_max);
		if (r)
			return err_set(x->e, "out of memory");
	}
	if (x->tok && (print_decoded(out, "prompt_text", x, t->prompt_tokens, t->n_prompt) < 0 ||
	               print_decoded(out, "response_text", x, t->response_tokens, t->n_response) < 0))
		return err_prefix(x->e, "trajectory %u", i);
	return 0;
}

/* A record in the JSON view; groups carry the model's view and the text when asked. */
static int print_record(struct opts *o, const struct record *rec, struct err *e)
{
	if ((o->model || o->tok) && rec->kind == REC_MICROBATCH)   /* printed without what was asked, before */
		return err_set(e, "a micro-batch: --model and --tokenizer read groups (grpo-collect's and "
			       "grpo-score's files), not grpo-pack's");
	if ((!o->model && !o->tok) || rec->kind != REC_GROUP)
		return o->stats ? 0 : json_print_record(&o->out, rec) < 0 ? err_set(e, "out of memory") : 0;
	const struct group *g = &rec->group;
	struct extra x = { .tok = o->tok, .text = &o->text, .e = e };
	int rc = 0;
	if (o->model) {
		x.a = calloc(g->n, sizeof *x.a);
		if (!x.a)
			return err_set(e, "out of memory");
		rc = align_group(o->model, g, x.a, e);
		for (uint32_t i = 0; rc == 0 && i < g->n; i++) {
			o->st.aligned_tokens += x.a[i].n_trained;
			o->st.diff_sum += x.a[i].diff_mean * x.a[i].n_trained;
			o->st.abs_diff_sum += x.a[i].abs_diff_mean * x.a[i].n_trained;
			if (x.a[i].abs_diff_max > o->st.abs_diff_max)
				o->st.abs_diff_max = x.a[i].abs_diff_max;
		}
	}
	if (rc == 0 && !o->stats) {
		size_t at = o->out.len;
		e->msg[0] = 0;
		if (json_print_group_with(&o->out, g, print_extra, &x) < 0) {
			o->out.len = at;   /* no half-printed line */
			rc = e->msg[0] ? -1 : err_set(e, "out of memory");
		}
	}
	if (x.a) {
		for (uint32_t i = 0; i < g->n; i++)
			align_traj_free(&x.a[i]);
		free(x.a);
	}
	return rc;
}

/* Read every record of one stream; 0 ok or head reached, -1 error. */
static int cat_reader(struct opts *o, struct sfile_reader *r, struct err *e)
{
	struct record rec;
	int k = 0;
	while (o->head != 0 && (k = sfile_read(r, &rec, e)) > 0) {
		count(&o->st, &rec);
		int bad = print_record(o, &rec, e) < 0 ? err_prefix(e, "%s: record %llu", r->name,
								     (unsigned long long)r->record_no) : 0;
		if (!bad && flush_out(o, 0, e) < 0)
			bad = -1;
		record_free(&rec);
		if (bad)
			return -1;
		if (o->head > 0)
			o->head--;
	}
	/* the bytes parsed, not those decompressed ahead of the records counted */
	o->st.bytes_raw += r->bytes_out - (r->out.len - r->out_pos);
	if (k > 0 && !sfile_reader_drained(r))
		o->st.disk_unknown = 1;
	else
		o->st.bytes_on_disk += r->bytes_in;
	return o->head != 0 && k < 0 ? -1 : 0;
}

/* One input, a spool stream or an archive of spool files (spoolin.h), for
 * cli_inputs: 0 or -1. Once --head has printed enough, the inputs left are
 * opened and not read, so that one that is missing is still said. */
static int cat_input(void *ctx, const struct cli_input *ci, struct err *e)
{
	struct opts *o = ctx;
	struct spoolin in;
	struct stat st;
	if (o->head == 0)
		return fstat(ci->fd, &st) == 0 && S_ISDIR(st.st_mode) ? err_set(e, "%s: %s", ci->name, strerror(EISDIR))
								       : 0;
	if (spoolin_open(&in, ci->fd, ci->name, e) < 0)
		return -1;
	int rc = 0;
	if (in.kind == SPOOLIN_STREAM) {
		struct sfile_reader r;
		if (spoolin_reader(&in, &r, e) < 0) {
			rc = -1;
		} else {
			rc = cat_reader(o, &r, e);
			sfile_reader_close(&r);
		}
	} else {
		struct buf data = { 0 };
		const char *member;
		int k;
		while (rc == 0 && o->head != 0 && (k = spoolin_next(&in, &data, &member, e)) != 0) {
			char label[PATH_MAX + 64];
			struct sfile_reader r;
			/* member is set only for k > 0: after an error it may be freed or unset */
			if (k > 0)
				snprintf(label, sizeof label, "%s:%s", ci->name, member);
			if (k < 0 || sfile_reader_open_mem(&r, data.data, data.len, label, e) < 0) {
				rc = -1;
				break;
			}
			rc = cat_reader(o, &r, e);
			sfile_reader_close(&r);
		}
		buf_free(&data);
	}
	spoolin_close(&in);
	return rc;
}

/* v to 3 places, or what stands for a value not known */
static void print_ratio(int known, double v, const char *unknown)
{
	if (known)
		printf("%.3f", v);
	else
		fputs(unknown, stdout);
}

/* A number of --stats --json, or null where there is none (NAN). */
static void json_num(const char *key, double v)
{
	printf(isnan(v) ? ",\"%s\":null" : ",\"%s\":%.6g", key, v);
}

static double ratio_or_nan(double a, uint64_t b)
{
	return b ? a / (double)b : NAN;
}

static void print_sum_json(const struct scoresum *s)
{
	if (!s->seqs)
		return;
	json_num("response_len_mean", ratio_or_nan((double)s->resp_tokens, s->seqs));
	printf(",\"response_len_max\":%u,\"finish_reasons\":{\"stop\":%llu,\"length\":%llu,\"other\":%llu,"
	       "\"none\":%llu}", s->resp_max, (unsigned long long)s->stop, (unsigned long long)s->length,
	       (unsigned long long)s->other_finish, (unsigned long long)s->no_finish);
	if (!s->scored)
		return;
	printf(",\"scored_sequences\":%llu", (unsigned long long)s->scored);
	json_num("reward_mean", s->reward_sum / (double)s->scored);
	printf(",\"scored_groups\":%llu,\"zero_std_groups\":%llu,\"rewards\":{", (unsigned long long)s->scored_groups,
	       (unsigned long long)s->equal_groups);
	uint32_t ks[34];
	int nk = scoresum_ks(s, ks);
	for (size_t i = 0; i < s->nfn; i++) {
		const struct scoresum_fn *f = &s->fn[i];
		struct buf name = { 0 };
		if (json_print_string(&name, f->name) < 0)
			continue;
		double mean = f->sum / (double)f->seqs, var = f->sumsq / (double)f->seqs - mean * mean;
		printf("%s%.*s:{\"sequences\":%llu", i ? "," : "", (int)name.len, (const char *)name.data,
		       (unsigned long long)f->seqs);
		buf_free(&name);
		json_num("mean", mean);
		json_num("std", sqrt(var > 0 ? var : 0));
		json_num("success_rate", ratio_or_nan((double)f->solved, f->flagged));
		printf(",\"pass_at\":{");
		for (int j = 0, first = 1; j < nk; j++) {
			size_t groups;
			double p = scoresum_pass_at(f, ks[j], &groups);
			if (groups) {
				printf("%s\"%u\":%.6g", first ? "" : ",", ks[j], p);
				first = 0;
			}
		}
		printf("}}");
	}
	printf("}");
}

static void print_sum(const struct scoresum *s)
{
	if (!s->seqs)
		return;
	printf("responses          mean %.1f tokens, max %u; finish reasons: stop %llu, length %llu (%.1f%%), "
	       "other %llu, none %llu\n", (double)s->resp_tokens / (double)s->seqs, s->resp_max,
	       (unsigned long long)s->stop, (unsigned long long)s->length, 100.0 * (double)s->length / (double)s->seqs,
	       (unsigned long long)s->other_finish, (unsigned long long)s->no_finish);
	if (!s->scored)
		return;
	printf("reward             mean %.4g over %llu scored sequence%s; %llu of %llu group%s all of one reward\n",
	       s->reward_sum / (double)s->scored, (unsigned long long)s->scored, cli_s((long long)s->scored),
	       (unsigned long long)s->equal_groups, (unsigned long long)s->scored_groups,
	       cli_s((long long)s->scored_groups));
	uint32_t ks[34];
	int nk = scoresum_ks(s, ks);
	for (size_t i = 0; i < s->nfn; i++) {
		const struct scoresum_fn *f = &s->fn[i];
		double mean = f->sum / (double)f->seqs, var = f->sumsq / (double)f->seqs - mean * mean;
		/* a reward program names its rewards: its control bytes shown, not sent to the terminal */
		struct buf name = { 0 };
		int shown = buf_put_tsv_cell(&name, f->name, strlen(f->name)) == 0 && buf_put_u8(&name, 0) == 0;
		printf("  %-16s mean %.4g, std %.4g", shown ? (const char *)name.data : "?", mean, sqrt(var > 0 ? var : 0));
		buf_free(&name);
		if (f->flagged)
			printf(", solved %.4g", (double)f->solved / (double)f->flagged);
		for (int j = 0; j < nk; j++) {
			size_t groups;
			double p = scoresum_pass_at(f, ks[j], &groups);
			if (groups)
				printf(", pass@%u %.4g", ks[j], p);
			if (groups && groups < f->groups)   /* the groups of fewer than k members sit it out */
				printf(" (%zu of %zu groups)", groups, f->groups);
		}
		printf("\n");
	}
}

static void print_stats(const struct stats *st, int json)
{
	/* the ratios where they mean something: the bytes on disk known (not
	 * --head inside an input), none of them zero; else - (null) */
	int ratio_known = !st->disk_unknown && st->bytes_on_disk > 0;
	int per_resp_known = !st->disk_unknown && st->response_tokens > 0;
	double ratio = ratio_known ? (double)st->bytes_raw / (double)st->bytes_on_disk : 0.0;
	double per_resp = per_resp_known ? (double)st->bytes_on_disk / (double)st->response_tokens : 0.0;
	uint64_t tokens = st->prompt_tokens + st->response_tokens + st->batch_tokens;
	if (json) {
		printf("{\"records\":%llu,\"groups\":%llu,\"microbatches\":%llu,\"sequences\":%llu,"
		       "\"tokens\":%llu,\"prompt_tokens\":%llu,\"response_tokens\":%llu,"
		       "\"batch_tokens\":%llu,\"loss_tokens\":%llu,\"pad_tokens\":%llu,"
		       "\"bytes_on_disk\":",
		       (unsigned long long)st->records, (unsigned long long)st->groups,
		       (unsigned long long)st->microbatches, (unsigned long long)st->sequences,
		       (unsigned long long)tokens, (unsigned long long)st->prompt_tokens,
		       (unsigned long long)st->response_tokens, (unsigned long long)st->batch_tokens,
		       (unsigned long long)st->loss_tokens, (unsigned long long)st->pad_tokens);
		if (st->disk_unknown)
			printf("null");
		else
			printf("%llu", (unsigned long long)st->bytes_on_disk);
		printf(",\"bytes_uncompressed\":%llu,\"compression_ratio\":", (unsigned long long)st->bytes_raw);
		print_ratio(ratio_known, ratio, "null");
		printf(",\"bytes_per_response_token\":");
		print_ratio(per_resp_known, per_resp, "null");
		if (st->aligned_tokens)
			printf(",\"model_logprob_diff_mean\":%.6g,\"model_logprob_abs_diff_mean\":%.6g,"
			       "\"model_logprob_abs_diff_max\":%.6g,\"aligned_tokens\":%llu",
			       st->diff_sum / st->aligned_tokens, st->abs_diff_sum / st->aligned_tokens, st->abs_diff_max,
			       (unsigned long long)st->aligned_tokens);
		print_sum_json(&st->sum);
		printf(",\"single_member_groups\":%llu,\"split_groups\":%llu",
		       (unsigned long long)st->gset.single_records, (unsigned long long)st->gset.split_ids);
		for (int k = 0; k < 2 && st->verbose; k++) {
			const char **ids = NULL;
			size_t n = 0;
			struct err e;
			if (groupset_ids(&st->gset, k ? GROUPSET_SPLIT : GROUPSET_SINGLE, &ids, &n, &e) < 0)
				n = 0;
			printf(",\"%s\":[", k ? "split_group_ids" : "single_member_group_ids");
			for (size_t i = 0; i < n; i++)
				printf(i ? ",%s" : "%s", ids[i]);
			printf("]");
			free(ids);
		}
		printf("}\n");
		return;
	}
	printf("records            %llu (%llu group%s, %llu micro-batch%s)\n", (unsigned long long)st->records,
	       (unsigned long long)st->groups, cli_s((long long)st->groups), (unsigned long long)st->microbatches,
	       st->microbatches == 1 ? "" : "es");
	printf("sequences          %llu\n", (unsigned long long)st->sequences);
	printf("tokens             %llu (prompt %llu, response %llu, micro-batch %llu of which loss %llu, pad %llu)\n",
	       (unsigned long long)tokens, (unsigned long long)st->prompt_tokens,
	       (unsigned long long)st->response_tokens, (unsigned long long)st->batch_tokens,
	       (unsigned long long)st->loss_tokens, (unsigned long long)st->pad_tokens);
	if (st->disk_unknown)
		printf("bytes on disk      - (--head stopped inside an input)\n");
	else
		printf("bytes on disk      %llu\n", (unsigned long long)st->bytes_on_disk);
	printf("bytes uncompressed %llu\n", (unsigned long long)st->bytes_raw);
	printf("compression ratio  ");
	print_ratio(ratio_known, ratio, "-");
	printf("\nbytes/response tok ");
	print_ratio(per_resp_known, per_resp, "-");
	printf("\n");
	for (int k = 0; k < 2; k++) {
		uint64_t c = k ? st->gset.split_ids : st->gset.single_records;
		const char **ids = NULL;
		size_t n = 0;
		struct err e;
		printf("%s %llu", k ? "split group_ids   " : "groups of one     ", (unsigned long long)c);
		if (c && st->verbose && groupset_ids(&st->gset, k ? GROUPSET_SPLIT : GROUPSET_SINGLE, &ids, &n, &e) == 0)
			for (size_t i = 0; i < n; i++)
				printf("%s%s", i ? " " : " (", ids[i]);
		printf("%s\n", n ? ")" : "");
		free(ids);
	}
	if (st->aligned_tokens)
		printf("model vs sampler   logprob difference mean %.6g, |difference| mean %.6g, max %.6g "
		       "over %llu trained token%s\n", st->diff_sum / st->aligned_tokens,
		       st->abs_diff_sum / st->aligned_tokens, st->abs_diff_max, (unsigned long long)st->aligned_tokens,
		       cli_s((long long)st->aligned_tokens));
	print_sum(&st->sum);
}

/*
 * Where -o's temporary goes: in QUEUE/.tmp when output is a file of a spool
 * rank directory (where recover cleans and no consumer looks), else beside
 * output under a dot name. Either way it is registered (tempfile.h), so an
 * exit or a signal removes it.
 */
static struct tempfile *output_tmp(const char *output, int *in_spool, struct err *e)
{
	char queue[PATH_MAX], tmpdir[PATH_MAX + 8];
	*in_spool = spool_queue_of_real(output, queue, sizeof queue);
	if (*in_spool) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", output);
		char *slash = strrchr(dir, '/');   /* none: "NAME" in the rank directory itself */
		if (slash)
			*slash = 0;
		if (slash && *dir && fsys_mkdirs(dir, e) < 0)
			return NULL;
		snprintf(tmpdir, sizeof tmpdir, "%s/.tmp", queue);
	} else if (cli_output_dir(output, e) < 0) {   /* named, not the temporary beside it */
		return NULL;
	}
	return tempfile_create(output, *in_spool ? tmpdir : NULL, e);
}

/* The writer's sink: a failed write names the output. */
struct out_sink {
	int fd;
	const char *name;
};

static int sink_output(void *ctx, const void *p, size_t n, struct err *e)
{
	const struct out_sink *o = ctx;
	return fsys_write_all(o->fd, p, n, o->name, e);
}

/* --from-json's reading of one input (cli_inputs): its lines to the writer. */
struct json_in {
	struct sfile_writer *w;
	char *line;                 /* getline's, kept across inputs */
	size_t cap;
};

static int json_input(void *ctx, const struct cli_input *ci, struct err *e)
{
	struct json_in *ji = ctx;
	/* stdio's own stream for a file, a copy of the descriptor cli_inputs closes */
	int fd = ci->is_stdin ? -1 : dup(ci->fd);
	FILE *in = ci->is_stdin ? stdin : fd < 0 ? NULL : fdopen(fd, "r");
	if (!in) {
		if (fd >= 0)
			close(fd);
		return err_sys(e, "%s", ci->name);
	}
	int rc = 0;
	ssize_t n;
	long lineno = 0;
	while (rc == 0 && (n = getline(&ji->line, &ji->cap, in)) >= 0) {
		const char *line = ji->line;
		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)n)
			continue;
		struct record rec;
		if (json_check_text(line, (size_t)n, e) < 0) {
			rc = err_prefix(e, "%s:%ld", ci->name, lineno);
			break;
		}
		if (json_parse_record(line, (size_t)n, &rec, e) < 0)
			rc = err_prefix(e, "%s:%ld", ci->name, lineno);
		else if (rec.kind == REC_TRAJ)
			rc = err_set(e, "%s:%ld: a lone trajectory; grpo-cat writes groups and micro-batches "
				     "(grpo-collect groups trajectories)", ci->name, lineno);
		else if (sfile_write_record(ji->w, &rec, e) < 0)
			rc = err_prefix(e, "%s:%ld", ci->name, lineno);   /* a write error names the output too */
		record_free(&rec);
	}
	/* a read error (a directory, EIO) is not the end of the input, nor is getline
	 * failing for memory, which sets no error flag: only feof is the end */
	if (rc == 0 && !feof(in))
		rc = errno == EISDIR ? err_set(e, "%s: is a directory, not a file of lines", ci->name)
				     : err_sys(e, "%s", ci->name);
	if (!ci->is_stdin)
		fclose(in);
	return rc;
}

/* --from-json: JSON lines to one spool file, published atomically with -o. */
static int from_json(char **files, int nfiles, const char *output)
{
	struct sfile_writer w;
	struct err e;
	int rc = 0, in_spool = 0;
	struct out_sink out = { STDOUT_FILENO, "standard output" };
	struct tempfile *tmp = NULL;
	char real[PATH_MAX];
	if (output && strcmp(output, "-") != 0) {
		out.name = output;
		if (cli_output_target(&output, real)) {   /* a pipe or a device: written as it is */
			if ((out.fd = open(output, O_WRONLY | O_CLOEXEC)) < 0) {
				cli_warn("%s: %s", output, strerror(errno));
				return 1;
			}
		} else if (!(tmp = output_tmp(output, &in_spool, &e))) {
			cli_warn("%s", e.msg);
			return cli_failure_status(e.errnum);
		} else {
			out.fd = tempfile_fd(tmp);
		}
	}
	if (!tmp && isatty(out.fd)) {
		cli_warn("--from-json: not writing a binary spool file to a terminal "
			 "(use -o FILE or a pipe)");
		if (out.fd != STDOUT_FILENO)
			close(out.fd);
		return 2;
	}
	if (sfile_writer_init(&w, sink_output, &out, 3, &e) < 0) {
		cli_warn("%s: %s", out.name, e.msg);
		sfile_writer_free(&w);
		tempfile_delete(tmp);
		return cli_failure_status(e.errnum);
	}
	struct json_in ji = { &w, NULL, 0 };
	rc = cli_inputs(files, nfiles, NULL, 0, json_input, &ji);
	free(ji.line);
	if (rc == 0 && sfile_writer_finish(&w, &e) < 0) {
		cli_warn("%s", e.msg);   /* the sink's message names the output */
		rc = cli_failure_status(e.errnum);
	}
	sfile_writer_free(&w);
	if (!tmp && out.fd != STDOUT_FILENO && close(out.fd) < 0 && rc == 0) {
		rc = cli_failure_status(errno);
		cli_warn("%s: %s", out.name, strerror(errno));
	}
	if (tmp && rc != 0) {
		tempfile_delete(tmp);
	} else if (tmp) {
		/* in a spool a name is published once (grpo-spool(5)); elsewhere -o replaces */
		int r = tempfile_commit(tmp, in_spool ? 0 : TEMPFILE_REPLACE, &e);
		if (r == 1)
			r = err_set(&e, "%s: already published; a spool file is never replaced", output);
		if (r < 0) {
			cli_warn("%s", e.msg);
			rc = cli_failure_status(e.errnum);
		}
	}
	return rc;
}

/* --encode, --decode, --chat: one JSON value a line in, one a line out. */
struct textmode {
	int encode, decode, chat;
	enum chat_format fmt;
	int chat_flags;
	const struct tokenizer *tok;
};

static int print_ids(struct buf *out, const struct tok_ids *ids)
{
	int r = buf_put_u8(out, '[');
	for (size_t i = 0; i < ids->n; i++)
		r |= buf_printf(out, i ? ",%d" : "%d", ids->v[i]);
	return r | buf_append(out, "]\n", 2);
}

static int text_line(const struct textmode *m, const char *line, size_t n, struct buf *out, struct buf *text,
		     struct err *e)
{
	struct tok_ids ids = { 0 };
	int r = 0;
	buf_reset(text);
	/* cJSON ends its strings at a NUL (raw or \u0000) and keeps bytes that are
	 * not UTF-8 raw: text cut short silently, or printed back as no JSON.
	 * (A search for "\u0000" took the text \\u0000, backslash escaped, for one.) */
	if (!m->decode && json_check_text(line, n, e) < 0)
		return -1;
	/* cJSON stops after the first value: a quote left unescaped would end a
	 * string early, and the rest of the line be dropped silently */
	const char *end = NULL;
	cJSON *j = json_parse_n(line, n, &end);
	if (!j && errno == ENOMEM)
		return err_set(e, "out of memory");
	for (const char *p = j ? end : line + n; p < line + n; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
			cJSON_Delete(j);
			return err_set(e, "not valid JSON (text after the value, near byte %zu)", (size_t)(p - line) + 1);
		}
	if (m->decode) {
		int32_t *v = NULL;
		uint32_t k = 0;
		r = cJSON_IsArray(j) ? json_get_i32_array(j, "ids", &v, &k, e)
				     : err_set(e, "expected a JSON array of token ids");
		cJSON_Delete(j);
		if (r == 0)
			r = tok_decode(m->tok, v, k, 0, text, e);
		free(v);
		if (r == 0 && (json_print_string_n(out, (const char *)text->data, text->len) | buf_put_u8(out, '\n')))
			r = err_set(e, "out of memory");
		return r;
	}
	if (m->chat) {
		struct chat_msgs cm;
		cJSON_Delete(j);
		if (chat_parse_json(line, n, &cm, e) < 0)
			return -1;
		int flags = cm.has_flags ? cm.flags : m->chat_flags;
		r = m->encode ? chat_encode(m->tok, m->fmt, cm.m, cm.n, flags, cm.date, &ids, NULL, e)
			      : chat_render(m->fmt, cm.m, cm.n, flags, cm.date, text, e);
		chat_msgs_free(&cm);
		if (r == 0 && !m->encode && (json_print_string_n(out, (const char *)text->data, text->len) | buf_put_u8(out, '\n')))
			r = err_set(e, "out of memory");
	} else {
		r = cJSON_IsString(j) ? tok_encode(m->tok, j->valuestring, strlen(j->valuestring), &ids, e)
				      : err_set(e, "expected a JSON string");
		cJSON_Delete(j);
	}
	if (r == 0 && m->encode && print_ids(out, &ids) < 0)
		r = err_set(e, "out of memory");
	tok_ids_free(&ids);
	return r;
}

/* --encode, --decode, --chat's reading of one input (cli_inputs). */
struct text_in {
	const struct textmode *m;
	struct buf out, text;
};

static int text_input(void *ctx, const struct cli_input *ci, struct err *e)
{
	struct text_in *ti = ctx;
	struct lineio li;
	if (lineio_open(&li, ci->fd, ci->name, e) < 0)
		return -1;
	const char *line;
	size_t n;
	long lineno = 0;
	int k, rc = 0;
	while (rc == 0 && (k = lineio_next(&li, &line, &n, e)) > 0) {
		lineno++;
		size_t sp = 0;   /* the line is not NUL-terminated */
		while (sp < n && line[sp] && strchr(" \t\r\n", line[sp]))
			sp++;
		if (sp == n)
			continue;
		if (text_line(ti->m, line, n, &ti->out, &ti->text, e) < 0) {
			rc = err_prefix(e, "%s:%ld", ci->name, lineno);
		} else if (ti->out.len >= (1 << 16) || ci->is_stdin) {
			/* from a pipe, answer each line as it comes (a co-process may wait for it) */
			if (fwrite(ti->out.data, 1, ti->out.len, stdout) != ti->out.len || fflush(stdout) != 0)
				/* a closed pipe: the reader has gone, nothing to say */
				rc = errno == EPIPE ? err_set(e, "%s", "") : err_sys(e, "standard output");
			ti->out.len = 0;
		}
	}
	if (rc == 0 && k < 0)
		rc = -1;
	lineio_close(&li);
	return rc;
}

static int text_mode(const struct textmode *m, char **files, int nfiles)
{
	struct text_in ti = { m, { 0 }, { 0 } };
	int rc = cli_inputs(files, nfiles, NULL, 0, text_input, &ti);
	if (ti.out.len)
		fwrite(ti.out.data, 1, ti.out.len, stdout);   /* a failure stays in ferror(stdout) */
	if (rc == 0)   /* (else its message is out already) */
		rc = cli_stdout_flushed();
	buf_free(&ti.out);
	buf_free(&ti.text);
	return rc;
}

/* --tokenizer FILE, else DIR/tokenizer.json of --model DIR when it has one; NULL with *failed set on error. */
static struct tokenizer *load_tokenizer(const char *file, const char *model_dir, int *failed)
{
	char path[PATH_MAX];
	struct err e;
	*failed = 0;
	if (!file && model_dir) {
		snprintf(path, sizeof path, "%s/tokenizer.json", model_dir);
		if (access(path, F_OK) != 0)
			return NULL;
		file = path;
	}
	if (!file)
		return NULL;
	struct tokenizer *t = tok_load(file, &e);
	if (!t) {
		cli_warn("%s", e.msg);
		*failed = 1;
	}
	return t;
}

/* --chat auto: the format of the template beside the tokenizer (chat.h);
 * --no-thinking is then a usage error unless it is Qwen3's. */
static int chat_of_model(struct textmode *tm, const char *tok_file, const char *model_dir)
{
	char path[PATH_MAX], from[PATH_MAX];
	struct err e;
	if (!tok_file && snprintf(path, sizeof path, "%s/tokenizer.json", model_dir) < (int)sizeof path)
		tok_file = path;
	if (!tok_file || chat_format_of_model(tok_file, &tm->fmt, from, sizeof from, &e) < 0) {
		cli_warn("%s", tok_file ? e.msg : "--model: path too long");
		return -1;
	}
	if ((tm->chat_flags & CHAT_NO_THINKING) && tm->fmt != CHAT_QWEN3)
		cli_bad_usage("--no-thinking goes with Qwen3's chat template (no other format has a think block); %s "
		              "holds %s's", from, chat_format_name(tm->fmt));
	return 0;
}

/* The modes, one a command line, and the options that only some of them
 * use: given to another, such an option would do nothing (a tokenizer not
 * loaded, -v with nothing to list), so it is a usage error. */
enum { PRINT = 1, STATS = 2, FROM_JSON = 4, ENCODE = 8, DECODE = 16, CHAT = 32, CHAT_ENCODE = 64, CHAT_AUTO = 128 };
static const char *const mode_names[] = {   /* by bit, PRINT's first */
	"printing records", "--stats", "--from-json", "--encode", "--decode", "--chat without --encode",
	"--chat --encode", "--chat auto without --encode",
};
enum { O_NOTHINK = 256 };
static const struct cli_mode_option mode_options[] = {
	{ 'j', PRINT | STATS },
	{ 'n', PRINT | STATS },
	{ 'v', STATS },
	/* the text modes: DIR/tokenizer.json; --chat auto: the template beside it */
	{ 'm', PRINT | STATS | ENCODE | DECODE | CHAT_ENCODE | CHAT_AUTO },
	{ 't', PRINT | ENCODE | DECODE | CHAT_ENCODE | CHAT_AUTO },
	{ O_NOTHINK, CHAT | CHAT_ENCODE | CHAT_AUTO },
	{ 'o', FROM_JSON },
};

/* The mode the options that choose one give, or a usage error for two
 * (--chat --encode is one). */
static unsigned cat_mode(const struct option *longopts, const unsigned char *given)
{
	static const struct {
		int ch;
		unsigned mode;
	} choose[] = { { 'f', FROM_JSON }, { 's', STATS }, { 'e', ENCODE }, { 'd', DECODE }, { 'c', CHAT } };
	unsigned mode = PRINT;
	int first = 0;
	for (size_t i = 0; i < sizeof choose / sizeof *choose; i++) {
		if (!given[choose[i].ch])
			continue;
		if (mode == ENCODE && choose[i].mode == CHAT) {
			mode = CHAT_ENCODE;
			continue;
		}
		if (mode != PRINT) {
			const char *a = NULL, *b = NULL;
			for (const struct option *o = longopts; o->name; o++) {
				a = o->val == first && !a ? o->name : a;
				b = o->val == choose[i].ch && !b ? o->name : b;
			}
			cli_bad_usage("--%s and --%s exclude each other", a, b);
		}
		mode = choose[i].mode;
		first = choose[i].ch;
	}
	return mode;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "chat", required_argument, NULL, 'c' },    { "decode", no_argument, NULL, 'd' },
		{ "encode", no_argument, NULL, 'e' },        { "from-json", no_argument, NULL, 'f' },
		{ "head", required_argument, NULL, 'n' },    { "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },          { "model", required_argument, NULL, 'm' },
		{ "no-thinking", no_argument, NULL, O_NOTHINK },
		{ "output", required_argument, NULL, 'o' },  { "stats", no_argument, NULL, 's' },
		{ "tokenizer", required_argument, NULL, 't' }, { "version", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .head = -1 };
	struct textmode tm = { 0 };
	int c, json = 0, fromjson = 0, chat_auto = 0;
	const char *output = NULL, *model_dir = NULL, *tok_file = NULL;
	unsigned char given[O_NOTHINK + 1] = { 0 };   /* by getopt value */
	prog = cli_init(argv[0], "[--stats | --from-json | --encode | --decode | --chat FORMAT] [OPTION]... "
				 "[FILE]...");
	while ((c = cli_getopt(argc, argv, "c:defhjm:n:o:st:vV", longopts)) != -1) {
		if (c >= 0 && c <= O_NOTHINK)
			given[c] = 1;
		switch (c) {
		case 'c':
			chat_auto = strcmp(optarg, "auto") == 0;
			if (!chat_auto && chat_format_parse(optarg, &tm.fmt) < 0) {
				cli_warn("--chat: unknown format '%s' (%s or auto)", optarg, CHAT_FORMATS);
				return 2;
			}
			tm.chat = 1;
			break;
		case 'd': tm.decode = 1; break;
		case 'e': tm.encode = 1; break;
		case 'f': fromjson = 1; break;
		case 'h': usage(stdout); return 0;
		case 'j': json = 1; break;
		case 'n': o.head = (long long)cli_uint("--head", optarg, LLONG_MAX); break;
		case 'm': model_dir = cli_path("--model", optarg); break;
		case 'o': output = cli_path(CLI_OUTPUT, optarg); break;
		case 's': o.stats = 1; break;
		case 'v': o.st.verbose = 1; break;
		case 't': tok_file = cli_path("--tokenizer", optarg); break;
		case O_NOTHINK: tm.chat_flags |= CHAT_NO_THINKING; break;
		case 'V': printf("grpo-cat %s\n", GRPO_VERSION); return 0;
		default: cli_usage_hint(); return 2;
		}
	}
	cli_path_operands(argv + optind, argc - optind);
	int text = tm.encode || tm.decode || tm.chat;
	const char *bad = NULL;
	unsigned mode = cat_mode(longopts, given);
	if (mode == CHAT && chat_auto)
		mode = CHAT_AUTO;
	cli_mode_options(longopts, mode_options, sizeof mode_options / sizeof *mode_options, given, mode, mode_names);
	if ((tm.chat_flags & CHAT_NO_THINKING) && tm.fmt != CHAT_QWEN3 && !chat_auto)
		bad = "--no-thinking goes with --chat qwen3 (no other format has a think block)";
	else if (chat_auto && !tok_file && !model_dir)
		bad = "--chat auto needs --tokenizer FILE or --model DIR (the chat template beside its tokenizer.json "
		      "names the format)";
	else if ((tm.encode || tm.decode) && !tok_file && !model_dir)
		bad = "--encode and --decode need --tokenizer FILE (or --model DIR holding tokenizer.json)";
	if (bad)
		cli_bad_usage("%s", bad);
	if (fromjson)
		return from_json(argv + optind, argc - optind, output);
	int failed;
	if (text) {
		/* only the tokenizer: --model DIR here is where tokenizer.json is */
		struct tokenizer *t = NULL;
		if (tm.encode || tm.decode) {
			t = load_tokenizer(tok_file, model_dir, &failed);
			if (!t && !failed)
				cli_warn("%s: no tokenizer.json", model_dir);
			if (!t)
				return 1;
		}
		if (chat_auto && chat_of_model(&tm, tok_file, model_dir) < 0) {
			tok_free(t);
			return 1;
		}
		tm.tok = t;
		int rc = text_mode(&tm, argv + optind, argc - optind);
		tok_free(t);
		return rc;
	}
	o.json_stats = o.stats && json;
	if (!o.stats) {
		o.tok = load_tokenizer(tok_file, model_dir, &failed);
		if (failed)
			return 1;
	}
	struct model model;
	if (model_dir) {
		struct err e;
		if (model_load(&model, model_dir, &e) < 0) {
			cli_warn("%s", e.msg);
			tok_free(o.tok);
			return 1;
		}
		o.model = &model;
	}
	int rc = cli_inputs(argv + optind, argc - optind, NULL, CLI_INPUTS_ALL, cat_input, &o);
	struct err e;
	if (flush_out(&o, 1, &e) < 0) {
		if (e.msg[0])
			cli_warn("%s", e.msg);
		rc = cli_worse_status(rc, cli_failure_status(e.errnum));
	}
	buf_free(&o.out);
	buf_free(&o.text);
	if (o.stats && rc == 0) {   /* no summary of input that was refused */
		print_stats(&o.st, o.json_stats);
		rc = cli_stdout_flushed();
	}
	if (o.st.failed)
		rc = cli_worse_status(rc, CLI_EXIT_FAILURE);
	groupset_free(&o.st.gset);
	scoresum_free(&o.st.sum);
	if (o.model)
		model_free(o.model);
	tok_free(o.tok);
	return rc;
}
