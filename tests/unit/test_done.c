/* The DONE manifest: what done_format writes done_parse reads back the same,
 * a manifest from before loss_tokens reads with it unknown, and a damaged
 * one is refused naming the file and field; done_load_job reads a step's
 * job from the queue (grpo-pack's resume), with each plain input's data
 * where the manifest has it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/done.h"
#include "tap.h"

/* QUEUE/step_N/DONE holding text. */
static int put_done(const char *queue, int step, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/step_%d", queue, step);
	if (mkdir(p, 0777) < 0)
		return -1;
	snprintf(p, sizeof p, "%s/step_%d/DONE", queue, step);
	FILE *f = fopen(p, "w");
	int bad = !f || fputs(text, f) < 0;
	return (f && fclose(f) != 0) || bad ? -1 : 0;
}

static void test_load_job(void)
{
	char q[] = "/tmp/grpo-test-done.XXXXXX";
	struct done_job j;
	struct err e;
	if (!mkdtemp(q)) {
		ok(0, "a temporary queue");
		return;
	}
	int bad = put_done(q, 5, "{\"step\":5,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":4,"
			   "\"sequences\":3,\"finished\":false,\"done\":[0,2]}}\n") ||
		  put_done(q, 6, "{\"step\":6,\"runs\":[]}\n") || put_done(q, 8, "{\"step\":8,\"runs\":[],\"job\":7}\n");
	ok(!bad, "a queue with a job in step 5's DONE, none in step 6's, a damaged one in step 8's");
	ok(done_load_job(q, 5, &j, &e) == 1 && j.id == 0xff && j.first_step == 4 && j.sequences == 3 &&
	   !j.finished && j.n_done == 2 && j.done[0] == 0 && j.done[1] == 2, "done_load_job reads step 5's job");
	ok(j.n_inputs_data == 0 && !j.inputs_data && j.data == 0,
	   "a job from before data and inputs_data: none of either");
	done_job_free(&j);
	bad = put_done(q, 9, "{\"step\":9,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":9,"
		       "\"sequences\":3,\"finished\":true,\"data\":\"00000000000000aa\","
		       "\"inputs_data\":[\"00000000000000bb\",\"00000000000000cc\"],\"done\":[]}}\n");
	ok(!bad && done_load_job(q, 9, &j, &e) == 1 && j.data == 0xaa && j.n_inputs_data == 2 &&
	   j.inputs_data[0] == 0xbb && j.inputs_data[1] == 0xcc, "done_load_job hands over inputs_data");
	done_job_free(&j);
	ok(done_load_job(q, 6, &j, &e) == 0 && j.id == 0 && !j.done, "a manifest with no job: 0, zeroed");
	ok(done_load_job(q, 7, &j, &e) == 0 && j.id == 0 && !j.done, "no manifest: 0, zeroed");
	ok(done_load_job(q, 8, &j, &e) < 0 && strstr(e.msg, "/step_8/DONE: job"), "a damaged job: %s", e.msg);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", q);
	if (system(cmd) != 0)
		ok(0, "%s", cmd);
}

int main(void)
{
	struct err e = { "" };
	uint32_t ord[] = { 0, 2, 5 };
	struct done_run runs[] = { { "", 3, 71, 9, 2, 1 }, { "b \"q\"", 0, 0, 4, 1, 0 } };
	char *inputs[] = { "step_0/rank_0/a.zst" };
	struct done_partial part[] = { { "step_0/rank_1/b.zst", ord, 3 } };
	struct done_manifest m = { .step = 7, .ranks = 2, .micro_batches_per_rank = 3, .sequences = 12,
				   .dummies = 1, .tokens = 500, .loss_tokens = 321, .pad_tokens = 12,
				   .dummy_tokens = 8, .dropped_stale = 1, .dropped_overlong = 2, .dropped_empty = 3,
				   .truncated = 4, .truncated_untrained = 5, .runs = runs, .n_runs = 2,
				   .next_run = "b \"q\"", .inputs = inputs, .n_inputs = 1, .partial = part,
				   .n_partial = 1 };
	struct buf a = { 0 }, b = { 0 };
	ok(done_format(&a, &m) == 0, "format");
	const char *want = "{\"step\":7,\"ranks\":2,\"micro_batches_per_rank\":3,\"sequences\":12,\"tokens\":500,"
			   "\"loss_tokens\":321,\"pad_tokens\":12,\"dummies\":1,\"dummy_tokens\":8,"
			   "\"dropped\":{\"stale\":1,\"overlong\":2,\"empty\":3},\"truncated\":4,"
			   "\"truncated_untrained\":5,\"runs\":[{\"run\":\"\",\"sequences\":3,\"tokens\":71,"
			   "\"sequences_total\":9,\"run_step\":2,\"ready\":true},{\"run\":\"b \\\"q\\\"\",\"sequences\":0,"
			   "\"tokens\":0,\"sequences_total\":4,\"run_step\":1,\"ready\":false}],\"next_run\":\"b \\\"q\\\"\","
			   "\"inputs\":[\"step_0/rank_0/a.zst\"],\"partial\":[{\"file\":\"step_0/rank_1/b.zst\","
			   "\"done\":[0,2,5]}]}\n";
	ok(a.len == strlen(want) && memcmp(a.data, want, a.len) == 0, "the documented JSON line, loss_tokens included");

	struct done_manifest r;
	ok(done_parse((char *)a.data, a.len, "DONE", &r, &e) == 0, "parses (%s)", e.msg);
	done_format(&b, &r);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "and formats back to the same bytes");
	ok(r.loss_tokens == 321 && r.sequences == 12 && r.n_partial == 1 && r.partial[0].n_done == 3,
	   "step totals and bookkeeping read back");
	done_free(&r);

	/* the plain inputs' job, which grpo-pack reads back to resume */
	uint32_t jd[] = { 1, 3 };
	m.has_job = 1;
	m.job = (struct done_job){ 0x00ab00cd00ef0012ull, 5, 4, 0, jd, 2, 0x0123456789abcdefull, NULL, 0 };
	buf_reset(&a);
	buf_reset(&b);
	const char *tail = "\"partial\":[{\"file\":\"step_0/rank_1/b.zst\",\"done\":[0,2,5]}],\"job\":{\"id\":"
			   "\"00ab00cd00ef0012\",\"first_step\":5,\"sequences\":4,\"finished\":false,"
			   "\"data\":\"0123456789abcdef\",\"done\":[1,3]}}\n";
	ok(done_format(&a, &m) == 0 && a.len > strlen(tail) &&
	   memcmp(a.data + a.len - strlen(tail), tail, strlen(tail)) == 0,
	   "the job goes last");
	ok(done_parse((char *)a.data, a.len, "DONE", &r, &e) == 0 && r.has_job && r.job.id == 0x00ab00cd00ef0012ull &&
	   r.job.first_step == 5 && r.job.sequences == 4 && !r.job.finished && r.job.n_done == 2 &&
	   r.job.done[1] == 3 && r.job.data == 0x0123456789abcdefull, "and reads back (%s)", e.msg);
	done_format(&b, &r);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_free(&r);

	/* each plain input's data, which tells an input packed before among others */
	uint64_t ind[] = { 0xfedcba9876543210ull, 0x0000000000000001ull };
	m.job.inputs_data = ind;
	m.job.n_inputs_data = 2;
	m.job.finished = 1;
	buf_reset(&a);
	buf_reset(&b);
	tail = "\"finished\":true,\"data\":\"0123456789abcdef\",\"inputs_data\":[\"fedcba9876543210\","
	       "\"0000000000000001\"],\"done\":[]}}\n";
	ok(done_format(&a, &m) == 0 && a.len > strlen(tail) &&
	   memcmp(a.data + a.len - strlen(tail), tail, strlen(tail)) == 0,
	   "inputs_data, one hash per input, after data");
	ok(done_parse((char *)a.data, a.len, "DONE", &r, &e) == 0 && r.has_job && r.job.n_inputs_data == 2 &&
	   r.job.inputs_data[0] == ind[0] && r.job.inputs_data[1] == ind[1] && r.job.data == 0x0123456789abcdefull,
	   "and reads back (%s)", e.msg);
	done_format(&b, &r);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_free(&r);
	m.has_job = 0;

	const char *old = "{\"step\":1,\"ranks\":2,\"micro_batches_per_rank\":1,\"sequences\":3,\"tokens\":71,"
			  "\"runs\":[],\"next_run\":\"\",\"inputs\":[],\"partial\":[]}";
	ok(done_parse(old, strlen(old), "DONE", &r, &e) == 0 && r.loss_tokens == -1 && r.tokens == 71,
	   "a manifest from before loss_tokens reads, loss_tokens unknown (-1)");
	done_free(&r);

	const char *bad[][2] = {
		{ "{\"step\":1,\"ranks\":-2,\"runs\":[]}", "x/DONE: ranks: expected a whole number" },
		{ "{\"step\":1.5,\"runs\":[]}", "x/DONE: step: expected a whole number" },
		{ "{\"step\":1}", "x/DONE: not a grpo-pack manifest" },
		{ "{\"step\":1,\"runs\":[{\"run\":3}]}", "x/DONE: runs[0].run: expected a string" },
		{ "{\"step\":1,\"runs\":[],\"partial\":[{\"file\":\"f\",\"done\":[-1]}]}",
		  "x/DONE: partial[0].done[0]: not an ordinal" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"12\",\"first_step\":1,\"sequences\":2,"
		  "\"finished\":false,\"done\":[]}}", "x/DONE: job: expected id" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":false,\"done\":[2]}}", "x/DONE: job.done[0]: not an ordinal" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":-2,\"finished\":false,\"done\":[]}}", "x/DONE: sequences: expected a whole" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":true,\"inputs_data\":\"00000000000000ff\",\"done\":[]}}",
		  "x/DONE: job: inputs_data: expected an array" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":true,\"inputs_data\":[\"00000000000000ff\",\"-0000000000000ff\"],"
		  "\"done\":[]}}", "x/DONE: job.inputs_data[1]: not 16 hexadecimal digits" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(done_parse(bad[i][0], strlen(bad[i][0]), "x/DONE", &r, &e) < 0 && strstr(e.msg, bad[i][1]),
		   "refused: %s", e.msg);
	buf_free(&a);
	buf_free(&b);
	test_load_job();
	return tap_done();
}
