/*
 * grpo-cat: print spool files as JSON lines, turn JSON lines back into a
 * spool file, and summarize what files hold. See grpo-cat(1).
 *
 * Inputs are spool files, concatenations of them (a pipe), or tar archives
 * of them in any compression libarchive knows (what `grpo-spool gc
 * --archive` writes).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "align.h"
#include "buf.h"
#include "err.h"
#include "fsys.h"
#include "jsonview.h"
#include "model.h"
#include "sfile.h"

static const char *prog = "grpo-cat";

struct stats {
	uint64_t records, groups, microbatches, sequences;
	uint64_t prompt_tokens, response_tokens, batch_tokens, loss_tokens, pad_tokens;
	uint64_t bytes_on_disk, bytes_raw;
	uint64_t aligned_tokens;        /* with --model: response tokens compared */
	double abs_diff_sum, abs_diff_max;
};

struct opts {
	int stats, json_stats;
	long long head;             /* records to print, -1 = all */
	struct stats st;
	struct buf out;             /* JSON text not yet written */
	struct model *model;        /* --model: add the model's logprobs */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: grpo-cat [--json] [--head N] [FILE...]\n"
		"       grpo-cat --stats [--json] [FILE...]\n"
		"       grpo-cat --from-json [-o FILE] [FILE...]\n"
		"Print spool files (or tar archives of them) as JSON lines, summarize them,\n"
		"or write JSON lines back into a spool file. FILE '-' or none: standard input.\n"
		"  -j, --json         JSON lines (the default view; with --stats, a JSON object)\n"
		"  -n, --head N       stop after N records\n"
		"  -s, --stats        records, sequences, tokens, bytes on disk, compression ratio\n"
		"  -m, --model DIR    add the model's logprob and entropy of every response token,\n"
		"                     and how far they are from the sampler's\n"
		"  -f, --from-json    read JSON lines, write one spool file\n"
		"  -o, --output FILE  with --from-json: write FILE atomically instead of stdout\n"
		"  -h, --help         this text\n"
		"  -V, --version      the version\n");
}

static int flush_out(struct opts *o, int force)
{
	if (o->out.len == 0 || (!force && o->out.len < (1 << 16)))
		return 0;
	size_t n = fwrite(o->out.data, 1, o->out.len, stdout);
	int bad = n != o->out.len;
	o->out.len = 0;
	if (bad || (force && fflush(stdout) != 0)) {
		if (errno != EPIPE)
			fprintf(stderr, "%s: standard output: %s\n", prog, strerror(errno));
		return -1;
	}
	return 0;
}

static void count(struct stats *st, const struct record *rec)
{
	st->records++;
	if (rec->kind == REC_GROUP) {
		st->groups++;
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

static int print_alignment(struct buf *out, const struct traj *t, uint32_t i, void *ctx)
{
	const struct align_traj *a = (const struct align_traj *)ctx + i;
	int r = buf_printf(out, ",\"model_logprobs\":");
	r |= json_print_floats(out, a->model_logprobs, t->n_response);
	r |= buf_printf(out, ",\"model_entropy\":");
	r |= json_print_floats(out, a->model_entropy, t->n_response);
	return r | buf_printf(out, ",\"model_logprob_abs_diff_mean\":%.6g,\"model_logprob_abs_diff_max\":%.6g",
			      a->abs_diff_mean, a->abs_diff_max);
}

/* A record in the JSON view; with --model, groups carry the model's view too. */
static int print_record(struct opts *o, const struct record *rec, struct err *e)
{
	if (!o->model || rec->kind != REC_GROUP)
		return o->stats ? 0 : json_print_record(&o->out, rec) < 0 ? err_set(e, "out of memory") : 0;
	const struct group *g = &rec->group;
	struct align_traj *a = calloc(g->n, sizeof *a);
	if (!a)
		return err_set(e, "out of memory");
	int rc = align_group(o->model, g, a, e);
	if (rc == 0) {
		for (uint32_t i = 0; i < g->n; i++) {
			o->st.aligned_tokens += g->trajs[i].n_response;
			o->st.abs_diff_sum += a[i].abs_diff_mean * g->trajs[i].n_response;
			if (a[i].abs_diff_max > o->st.abs_diff_max)
				o->st.abs_diff_max = a[i].abs_diff_max;
		}
		if (!o->stats && json_print_group_with(&o->out, g, print_alignment, a) < 0)
			rc = err_set(e, "out of memory");
		for (uint32_t i = 0; i < g->n; i++)
			align_traj_free(&a[i]);
	}
	free(a);
	return rc;
}

/* Read every record of one stream; 0 ok or head reached, -1 error. */
static int cat_reader(struct opts *o, struct sfile_reader *r)
{
	struct record rec;
	struct err e;
	int k = 0;
	while (o->head != 0 && (k = sfile_read(r, &rec, &e)) > 0) {
		count(&o->st, &rec);
		if (print_record(o, &rec, &e) < 0) {
			fprintf(stderr, "%s: %s: record %llu: %s\n", prog, r->name,
				(unsigned long long)(r->record_no - 1), e.msg);
			record_free(&rec);
			return -1;
		}
		if (flush_out(o, 0) < 0) {
			record_free(&rec);
			return -1;
		}
		record_free(&rec);
		if (o->head > 0)
			o->head--;
	}
	o->st.bytes_on_disk += r->bytes_in;
	o->st.bytes_raw += r->bytes_out;
	if (o->head != 0 && k < 0) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		return -1;
	}
	return 0;
}

static int cat_fd(struct opts *o, int fd, const char *name)
{
	struct sfile_reader r;
	struct err e;
	if (sfile_reader_open_fd(&r, fd, name, &e) < 0) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		return -1;
	}
	int rc = cat_reader(o, &r);
	sfile_reader_close(&r);
	return rc;
}

/* Each regular member of a tar archive that is a spool file, in archive order. */
static int cat_archive(struct opts *o, const char *path)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ent;
	struct buf data = { 0 };
	int rc = 0, st;
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	while (rc == 0 && o->head != 0 && (st = archive_read_next_header(a, &ent)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(ent);
		const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
		if (archive_entry_filetype(ent) != AE_IFREG || base[0] == '.' || strcmp(base, "DONE") == 0)
			continue;
		buf_reset(&data);
		for (;;) {
			if (buf_reserve(&data, 1 << 16) < 0) {
				fprintf(stderr, "%s: %s: out of memory\n", prog, path);
				rc = -1;
				break;
			}
			la_ssize_t n = archive_read_data(a, data.data + data.len, 1 << 16);
			if (n < 0) {
				fprintf(stderr, "%s: %s: %s: %s\n", prog, path, name, archive_error_string(a));
				rc = -1;
				break;
			}
			if (n == 0)
				break;
			data.len += (size_t)n;
		}
		if (rc < 0)
			break;
		char label[PATH_MAX + 64];
		snprintf(label, sizeof label, "%s:%s", path, name);
		struct sfile_reader r;
		struct err e;
		if (sfile_reader_open_mem(&r, data.data, data.len, label, &e) < 0) {
			fprintf(stderr, "%s: %s\n", prog, e.msg);
			rc = -1;
			break;
		}
		rc = cat_reader(o, &r);
		sfile_reader_close(&r);
	}
	if (rc == 0 && o->head != 0 && st != ARCHIVE_EOF) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, archive_error_string(a));
		rc = -1;
	}
	buf_free(&data);
	archive_read_free(a);
	return rc;
}

/* A named file is a spool file when it starts with a zstd frame whose
 * content starts with "GRPO"; anything else is handed to libarchive. */
static int is_spool_file(int fd)
{
	unsigned char in[4096], out[4];
	ssize_t n = pread(fd, in, sizeof in, 0);
	if (n < 4)
		return 1; /* too short for an archive: let the spool reader say why */
	uint32_t magic = in[0] | in[1] << 8 | in[2] << 16 | (uint32_t)in[3] << 24;
	if (magic != ZSTD_MAGICNUMBER)
		return 0;
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_inBuffer ib = { in, (size_t)n, 0 };
	ZSTD_outBuffer ob = { out, sizeof out, 0 };
	while (ob.pos < ob.size && ib.pos < ib.size) {
		size_t r = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(r) || r == 0)
			break;
	}
	ZSTD_freeDCtx(d);
	return ob.pos < 4 || memcmp(out, "GRPO", 4) == 0;
}

static int cat_path(struct opts *o, const char *path)
{
	if (strcmp(path, "-") == 0)
		return cat_fd(o, STDIN_FILENO, "<stdin>");
	struct err e;
	int fd = fsys_open_read(path, &e);
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		return -1;
	}
	int rc = is_spool_file(fd) ? cat_fd(o, fd, path) : cat_archive(o, path);
	close(fd);
	return rc;
}

static void print_stats(const struct stats *st, int json)
{
	double ratio = st->bytes_on_disk ? (double)st->bytes_raw / (double)st->bytes_on_disk : 0.0;
	uint64_t tokens = st->prompt_tokens + st->response_tokens + st->batch_tokens;
	double per_resp = st->response_tokens ? (double)st->bytes_on_disk / (double)st->response_tokens : 0.0;
	if (json) {
		printf("{\"records\":%llu,\"groups\":%llu,\"microbatches\":%llu,\"sequences\":%llu,"
		       "\"tokens\":%llu,\"prompt_tokens\":%llu,\"response_tokens\":%llu,"
		       "\"batch_tokens\":%llu,\"loss_tokens\":%llu,\"pad_tokens\":%llu,"
		       "\"bytes_on_disk\":%llu,\"bytes_uncompressed\":%llu,\"compression_ratio\":%.3f,"
		       "\"bytes_per_response_token\":%.3f",
		       (unsigned long long)st->records, (unsigned long long)st->groups,
		       (unsigned long long)st->microbatches, (unsigned long long)st->sequences,
		       (unsigned long long)tokens, (unsigned long long)st->prompt_tokens,
		       (unsigned long long)st->response_tokens, (unsigned long long)st->batch_tokens,
		       (unsigned long long)st->loss_tokens, (unsigned long long)st->pad_tokens,
		       (unsigned long long)st->bytes_on_disk, (unsigned long long)st->bytes_raw, ratio, per_resp);
		if (st->aligned_tokens)
			printf(",\"model_logprob_abs_diff_mean\":%.6g,\"model_logprob_abs_diff_max\":%.6g",
			       st->abs_diff_sum / st->aligned_tokens, st->abs_diff_max);
		printf("}\n");
		return;
	}
	printf("records            %llu (%llu groups, %llu micro-batches)\n", (unsigned long long)st->records,
	       (unsigned long long)st->groups, (unsigned long long)st->microbatches);
	printf("sequences          %llu\n", (unsigned long long)st->sequences);
	printf("tokens             %llu (prompt %llu, response %llu, micro-batch %llu of which loss %llu, pad %llu)\n",
	       (unsigned long long)tokens, (unsigned long long)st->prompt_tokens,
	       (unsigned long long)st->response_tokens, (unsigned long long)st->batch_tokens,
	       (unsigned long long)st->loss_tokens, (unsigned long long)st->pad_tokens);
	printf("bytes on disk      %llu\n", (unsigned long long)st->bytes_on_disk);
	printf("bytes uncompressed %llu\n", (unsigned long long)st->bytes_raw);
	printf("compression ratio  %.3f\n", ratio);
	if (st->response_tokens)
		printf("bytes/response tok %.3f\n", per_resp);
	if (st->aligned_tokens)
		printf("model vs sampler   |logprob difference| mean %.6g, max %.6g over %llu tokens\n",
		       st->abs_diff_sum / st->aligned_tokens, st->abs_diff_max,
		       (unsigned long long)st->aligned_tokens);
}

/* --from-json: JSON lines to one spool file, published atomically with -o. */
static int from_json(char **files, int nfiles, const char *output)
{
	struct sfile_writer w;
	struct err e;
	int rc = 0;
	int out_fd = STDOUT_FILENO;
	char tmp[PATH_MAX];
	if (output && strcmp(output, "-") != 0) {
		if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", output, (long)getpid()) >= (int)sizeof tmp) {
			fprintf(stderr, "%s: %s: path too long\n", prog, output);
			return 1;
		}
		out_fd = fsys_open_excl(tmp, &e);
		if (out_fd < 0) {
			fprintf(stderr, "%s: %s\n", prog, e.msg);
			return 1;
		}
	} else
		output = NULL;
	sfile_writer_init(&w, sfile_sink_fd, (void *)(intptr_t)out_fd, 3, &e);
	char *line = NULL;
	size_t cap = 0;
	char *stdin_only[] = { "-" };
	if (nfiles == 0) {
		files = stdin_only;
		nfiles = 1;
	}
	for (int f = 0; f < nfiles && rc == 0; f++) {
		const char *name = strcmp(files[f], "-") == 0 ? "<stdin>" : files[f];
		FILE *in = strcmp(files[f], "-") == 0 ? stdin : fopen(files[f], "r");
		if (!in) {
			fprintf(stderr, "%s: %s: %s\n", prog, files[f], strerror(errno));
			rc = 1;
			break;
		}
		ssize_t n;
		long lineno = 0;
		while (rc == 0 && (n = getline(&line, &cap, in)) >= 0) {
			lineno++;
			if (strspn(line, " \t\r\n") == (size_t)n)
				continue;
			struct record rec;
			if (json_parse_record(line, (size_t)n, &rec, &e) < 0) {
				fprintf(stderr, "%s: %s:%ld: %s\n", prog, name, lineno, e.msg);
				rc = 1;
			} else if (rec.kind == REC_TRAJ) {
				fprintf(stderr, "%s: %s:%ld: a lone trajectory; grpo-cat writes groups and micro-batches "
						"(grpo-collect groups trajectories)\n", prog, name, lineno);
				rc = 1;
			} else if (sfile_write_record(&w, &rec, &e) < 0) {
				fprintf(stderr, "%s: %s: %s\n", prog, output ? output : "standard output", e.msg);
				rc = 1;
			}
			record_free(&rec);
		}
		if (in != stdin)
			fclose(in);
	}
	free(line);
	if (rc == 0 && sfile_writer_finish(&w, &e) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, output ? output : "standard output", e.msg);
		rc = 1;
	}
	sfile_writer_free(&w);
	if (output) {
		if (rc == 0 && (fsys_fsync(out_fd, tmp, &e) < 0 || fsys_close(out_fd, tmp, &e) < 0 ||
				fsys_rename(tmp, output, &e) < 0)) {
			fprintf(stderr, "%s: %s\n", prog, e.msg);
			rc = 1;
		}
		if (rc != 0) {
			close(out_fd);
			unlink(tmp);
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from-json", no_argument, NULL, 'f' }, { "head", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },      { "json", no_argument, NULL, 'j' },
		{ "model", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' }, { "stats", no_argument, NULL, 's' },
		{ "version", no_argument, NULL, 'V' },   { NULL, 0, NULL, 0 }
	};
	struct opts o = { .head = -1 };
	int c, json = 0, fromjson = 0;
	const char *output = NULL, *model_dir = NULL;
	while ((c = getopt_long(argc, argv, "fhjm:n:o:sV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': fromjson = 1; break;
		case 'h': usage(stdout); return 0;
		case 'j': json = 1; break;
		case 'n': {
			char *end;
			errno = 0;
			o.head = strtoll(optarg, &end, 10);
			if (errno || *end || o.head < 0) {
				fprintf(stderr, "%s: --head: '%s' is not a count\n", prog, optarg);
				return 2;
			}
			break;
		}
		case 'm': model_dir = optarg; break;
		case 'o': output = optarg; break;
		case 's': o.stats = 1; break;
		case 'V': printf("grpo-cat %s\n", GRPO_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (output && !fromjson) {
		fprintf(stderr, "%s: --output goes with --from-json\n", prog);
		return 2;
	}
	if (fromjson) {
		if (o.stats || o.head >= 0) {
			fprintf(stderr, "%s: --from-json takes neither --stats nor --head\n", prog);
			return 2;
		}
		return from_json(argv + optind, argc - optind, output);
	}
	o.json_stats = o.stats && json;
	struct model model;
	if (model_dir) {
		struct err e;
		if (model_load(&model, model_dir, &e) < 0) {
			fprintf(stderr, "%s: %s\n", prog, e.msg);
			return 1;
		}
		o.model = &model;
	}
	int rc = 0;
	if (optind == argc)
		rc |= cat_path(&o, "-");
	for (int i = optind; i < argc && o.head != 0; i++)
		rc |= cat_path(&o, argv[i]);
	if (flush_out(&o, 1) < 0)
		rc = -1;
	buf_free(&o.out);
	if (o.stats)
		print_stats(&o.st, o.json_stats);
	if (o.model)
		model_free(o.model);
	return rc ? 1 : 0;
}
