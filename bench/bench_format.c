/*
 * bench_format: what the spool file format costs, next to the obvious
 * alternatives, on realistic rollouts: 1,000 sequences in groups of 8 that
 * share a prompt, Zipf-distributed token ids over Qwen's 151,936-token
 * vocabulary, sampler logprobs mostly near zero.
 *
 * Reports bytes on disk per response token (everything in the file counted)
 * and write/read throughput for: the spool format; the same records as JSON
 * lines, raw and zstd-compressed (printing + compressing, decompressing +
 * parsing); and plain zstd on the raw int32/float32 arrays, both ways. "read" for the spool format is decompression plus decoding into
 * structs, reported as a ratio to decompressing the same file alone
 * (what `zstd -d` does); the target is at most 1.5x.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bench.h"

#include "data/jsonview.h"
#include "data/sfile.h"

#define NSEQ 1000
#define GROUP 8
#define VOCAB 151936

#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#include "../tests/xorshift.h"

static double uniform(void)
{
	return ((xorshift() >> 11) + 0.5) / 9007199254740992.0;
}

static double *zipf_cdf;
static int32_t *perm;

static void zipf_init(void)
{
	zipf_cdf = malloc(VOCAB * sizeof *zipf_cdf);
	perm = malloc(VOCAB * sizeof *perm);
	double sum = 0;
	for (int i = 0; i < VOCAB; i++)
		sum += 1.0 / pow(i + 1, 1.1);
	double acc = 0;
	for (int i = 0; i < VOCAB; i++) {
		acc += 1.0 / pow(i + 1, 1.1) / sum;
		zipf_cdf[i] = acc;
		perm[i] = i;
	}
	/* Byte-level BPE assigns ids in merge order, which follows frequency, so
	 * the frequency rank is the id, up to local shuffles: swap neighbours
	 * within blocks of 64 to keep the bench from being kinder than reality. */
	for (int i = VOCAB - 1; i > 0; i--) {
		int j = i - (int)(uniform() * ((i % 64) + 1));
		int32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
}

static int32_t zipf_token(void)
{
	double u = uniform();
	int lo = 0, hi = VOCAB - 1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return perm[lo];
}

/* Most sampled tokens are near-certain; a few are not. */
static float sampler_logprob(void)
{
	double z = sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
	double lp = -exp(-4.0 + 2.5 * z);
	return (float)(lp < -20 ? -20 : lp);
}

static void make_groups(struct group *gs, int ng, uint64_t *resp_tokens)
{
	*resp_tokens = 0;
	for (int g = 0; g < ng; g++) {
		uint32_t np = 60 + (uint32_t)(uniform() * 240);
		int32_t *prompt = malloc(np * 4);
		for (uint32_t k = 0; k < np; k++)
			prompt[k] = zipf_token();
		gs[g].group_id = traj_id_num(g);
		gs[g].n = GROUP;
		gs[g].trajs = calloc(GROUP, sizeof(struct traj));
		for (int i = 0; i < GROUP; i++) {
			struct traj *t = &gs[g].trajs[i];
			traj_init(t);
			t->n_prompt = np;
			t->prompt_tokens = malloc(np * 4);
			memcpy(t->prompt_tokens, prompt, np * 4);
			t->n_response = 50 + (uint32_t)(uniform() * 950);
			t->response_tokens = malloc(t->n_response * 4);
			t->logprobs = malloc(t->n_response * 4);
			for (uint32_t k = 0; k < t->n_response; k++) {
				t->response_tokens[k] = zipf_token();
				t->logprobs[k] = sampler_logprob();
			}
			t->answer = strdup("1234");
			t->sequence_id = traj_id_num(g * GROUP + i);
			t->group_id = traj_id_num(g);
			t->policy_version = 7;
			t->temperature = 1.0f;
			traj_set_finish(t, "stop");
			*resp_tokens += t->n_response;
		}
		free(prompt);
	}
}

int main(void)
{
	const int ng = NSEQ / GROUP;
	struct group *gs = calloc(ng, sizeof *gs);
	uint64_t resp;
	struct err e;
	zipf_init();
	make_groups(gs, ng, &resp);
	const int reps = 5;

	/* spool format: write */
	struct buf file = { 0 };
	double t0 = now();
	for (int r = 0; r < reps; r++) {
		struct sfile_writer w;
		buf_reset(&file);
		sfile_writer_init(&w, sfile_sink_buf, &file, 3, &e);
		for (int g = 0; g < ng; g++)
			sfile_write_group(&w, &gs[g], &e);
		sfile_writer_finish(&w, &e);
		sfile_writer_free(&w);
	}
	double t_write = (now() - t0) / reps;
	size_t raw_size = 0;
	{
		struct sfile_reader rd;
		struct record rec;
		sfile_reader_open_mem(&rd, file.data, file.len, "bench", &e);
		while (sfile_read(&rd, &rec, &e) > 0)
			record_free(&rec);
		raw_size = rd.bytes_out;
		sfile_reader_close(&rd);
	}

	/* spool format: read (decompress + decode), and decompress alone */
	t0 = now();
	long records = 0;
	for (int r = 0; r < reps; r++) {
		struct sfile_reader rd;
		struct record rec;
		sfile_reader_open_mem(&rd, file.data, file.len, "bench", &e);
		while (sfile_read(&rd, &rec, &e) > 0) {
			records++;
			record_free(&rec);
		}
		sfile_reader_close(&rd);
	}
	double t_read = (now() - t0) / reps;
	void *plain = malloc(raw_size);
	t0 = now();
	for (int r = 0; r < reps; r++)
		if (ZSTD_isError(ZSTD_decompress(plain, raw_size, file.data, file.len)))
			fprintf(stderr, "bench_format: decompression failed\n");
	double t_unzstd = (now() - t0) / reps;

	/* JSON lines, raw and compressed */
	struct buf json = { 0 };
	t0 = now();
	for (int g = 0; g < ng; g++)
		json_print_group(&json, &gs[g]);
	double t_json_write = now() - t0;
	t0 = now();
	for (size_t off = 0; off < json.len;) {
		char *nl = memchr(json.data + off, '\n', json.len - off);
		size_t n = (size_t)(nl - (char *)json.data) - off + 1;
		struct record rec;
		json_parse_record((char *)json.data + off, n, &rec, &e);
		record_free(&rec);
		off += n;
	}
	double t_json_read = now() - t0;
	/* | zstd: printing then compressing, and decompressing then parsing */
	size_t jz_cap = ZSTD_compressBound(json.len), jz_len = 0;
	void *jz = malloc(jz_cap), *jplain = malloc(json.len);
	t0 = now();
	for (int r = 0; r < reps; r++)
		jz_len = ZSTD_compress(jz, jz_cap, json.data, json.len, 3);
	double t_jz = (now() - t0) / reps;
	t0 = now();
	for (int r = 0; r < reps; r++)
		if (ZSTD_isError(ZSTD_decompress(jplain, json.len, jz, jz_len)))
			fprintf(stderr, "bench_format: decompression failed\n");
	double t_junz = (now() - t0) / reps;

	/* plain zstd on the raw arrays: prompt and response ids as int32, logprobs as float32 */
	struct buf arrays = { 0 };
	for (int g = 0; g < ng; g++)
		for (int i = 0; i < GROUP; i++) {
			const struct traj *t = &gs[g].trajs[i];
			buf_append(&arrays, t->prompt_tokens, t->n_prompt * 4);
			buf_append(&arrays, t->response_tokens, t->n_response * 4);
			buf_append(&arrays, t->logprobs, t->n_response * 4);
		}
	size_t az_cap = ZSTD_compressBound(arrays.len);
	void *az = malloc(az_cap);
	size_t az_len = 0;
	void *aplain = malloc(arrays.len);
	t0 = now();
	for (int r = 0; r < reps; r++)
		az_len = ZSTD_compress(az, az_cap, arrays.data, arrays.len, 3);
	double t_az = (now() - t0) / reps;
	t0 = now();
	for (int r = 0; r < reps; r++)
		if (ZSTD_isError(ZSTD_decompress(aplain, arrays.len, az, az_len)))
			fprintf(stderr, "bench_format: decompression failed\n");
	double t_aunz = (now() - t0) / reps;

	double mb = 1e6;
	printf("bench_format: %d sequences in groups of %d, %llu response tokens, Zipf ids over %d, zstd level 3\n",
	       NSEQ, GROUP, (unsigned long long)resp, VOCAB);
	printf("  %-34s %12s %14s %12s %12s\n", "", "bytes", "bytes/resp tok", "write MB/s", "read MB/s");
	printf("  %-34s %12zu %14.3f %12.1f %12.1f\n", "spool file (grpo-spool(5))", file.len,
	       (double)file.len / resp, raw_size / t_write / mb, raw_size / t_read / mb);
	printf("  %-34s %12zu %14.3f %12.1f %12.1f\n", "JSON lines", json.len, (double)json.len / resp,
	       json.len / t_json_write / mb, json.len / t_json_read / mb);
	printf("  %-34s %12zu %14.3f %12.1f %12.1f\n", "JSON lines | zstd -3", jz_len, (double)jz_len / resp,
	       json.len / (t_json_write + t_jz) / mb, json.len / (t_junz + t_json_read) / mb);
	printf("  %-34s %12zu %14.3f %12.1f %12.1f\n", "raw int32/float32 arrays | zstd -3", az_len,
	       (double)az_len / resp, arrays.len / t_az / mb, arrays.len / t_aunz / mb);
	printf("  MB/s count uncompressed bytes: the spool file's records, the JSON text, the raw arrays;\n"
	       "  JSON | zstd is printing + compressing and decompressing + parsing, the arrays zstd alone\n");
	printf("  read: decode %.2f ms vs decompress alone %.2f ms: %.2fx (target <= 1.5x); "
	       "%.3f bytes/response token (target <= 6); %ld records per pass\n",
	       t_read * 1e3, t_unzstd * 1e3, t_read / t_unzstd, (double)file.len / resp, records / reps);

	for (int g = 0; g < ng; g++)
		group_free(&gs[g]);
	free(gs);
	free(plain);
	free(jz);
	free(jplain);
	free(az);
	free(aplain);
	buf_free(&file);
	buf_free(&json);
	buf_free(&arrays);
	free(zipf_cdf);
	free(perm);
	return 0;
}
