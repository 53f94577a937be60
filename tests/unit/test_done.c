/* The DONE manifest: what done_format writes done_parse reads back the same,
 * a manifest from before loss_tokens reads with it unknown, and a damaged
 * one is refused naming the file and field; done_load_job reads a step's
 * job from the queue (grpo-pack's resume), with each plain input's data
 * where the manifest has it; and QUEUE/.jobs, where grpo-spool gc keeps
 * the jobs of the steps it removes: its record's line, its reader and its
 * writer, and the job gc reads from any step's marker. */
#include <errno.h>
#include <limits.h>
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
	ok(j.id == 0 && !j.done && j.n_done == 0 && j.sequences == 0, "done_job_free zeroes the job");
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

/* QUEUE/.jobs holding text (NULL: none). */
static int put_jobs(const char *queue, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/.jobs", queue);
	if (!text)
		return unlink(p) < 0 ? -1 : 0;
	FILE *f = fopen(p, "w");
	int bad = !f || fputs(text, f) < 0;
	return (f && fclose(f) != 0) || bad ? -1 : 0;
}

static int jobs_text_is(const char *queue, const char *want)
{
	char p[512], got[2048];
	snprintf(p, sizeof p, "%s/.jobs", queue);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
	if (f)
		fclose(f);
	got[n] = 0;
	if (strcmp(got, want) != 0)
		diag("got  %s", got);
	return strcmp(got, want) == 0;
}

/*
 * A .jobs that is there but cannot be read is an error, not "no records":
 * taken for none, done_jobs_add would rename a file of its new records
 * alone over it, grpo-pack would forget the jobs of the removed steps and
 * pack their inputs again (data trained twice). The tests run as root, so
 * a mode does not stop a read: .jobs is a link to a directory, which opens
 * and then fails to read (EISDIR), as a bad disk's file fails with EIO,
 * and which a rename would replace. A queue path too long for .jobs is an
 * error too.
 */
static void test_jobs_unreadable(const char *q, const struct done_jobrec *add)
{
	char jobs[512], held[512], link[512] = "";
	struct done_jobrec *v = NULL;
	size_t n = 0;
	struct err e = { 0 };
	snprintf(jobs, sizeof jobs, "%s/.jobs", q);
	snprintf(held, sizeof held, "%s/held", q);
	int bad = mkdir(held, 0777) != 0 || symlink(held, jobs) != 0;
	ok(!bad, "QUEUE/.jobs a link to a directory");
	ok(done_jobs_load(q, &v, &n, &e) == -1 && strstr(e.msg, "/.jobs: read error: Is a directory") && !v && n == 0 &&
	   e.errnum == EISDIR, "load: -1, said with the system's reason (%s)", e.msg);
	done_jobrecs_free(v, n);
	e.msg[0] = '\0';
	int r = done_jobs_add(q, add, 1, &e);
	ssize_t k = readlink(jobs, link, sizeof link - 1);
	link[k > 0 ? k : 0] = '\0';
	ok(r == -1 && strstr(e.msg, "/.jobs: read error") && strcmp(link, held) == 0,
	   "add: -1, said, .jobs not replaced by a file of its record alone (%d, %s)", r, e.msg);
	unlink(jobs);
	rmdir(held);

	char deep[PATH_MAX];
	memset(deep, 'q', sizeof deep - 1);
	deep[0] = '/';
	deep[sizeof deep - 4] = '\0';   /* fits PATH_MAX, QUEUE/.jobs does not */
	ok(done_jobs_load(deep, &v, &n, &e) == -1 && strstr(e.msg, "path too long") && !v && n == 0,
	   "a queue path too long for .jobs: -1, said");
	done_jobrecs_free(v, n);
}

/* The records of QUEUE/.jobs: their line, what the reader passes over
 * (a last line cut short) and refuses (a whole line that is no record),
 * and the writer's one line per job. */
static void test_jobs(void)
{
	char q[] = "/tmp/grpo-test-jobs.XXXXXX";
	struct err e = { 0 };
	struct done_jobrec *v;
	size_t n;
	if (!mkdtemp(q)) {
		ok(0, "a temporary queue");
		return;
	}
	uint64_t ind[] = { 0xfedcba9876543210ull, 0x0000000000000001ull };
	struct done_jobrec r = { 3, { 0x00ab00cd00ef0012ull, 1, 6, 1, NULL, 0, 0x0123456789abcdefull, ind, NULL, 2 }, NULL, NULL, 0 };
	struct buf a = { 0 }, b = { 0 };
	const char *want = "{\"step\":3,\"job\":{\"id\":\"00ab00cd00ef0012\",\"first_step\":1,\"sequences\":6,"
			   "\"finished\":true,\"data\":\"0123456789abcdef\",\"inputs_data\":[\"fedcba9876543210\","
			   "\"0000000000000001\"]}}\n";
	ok(done_jobrec_format(&a, &r) == 0 && a.len == strlen(want) && memcmp(a.data, want, a.len) == 0,
	   "a record: the documented line, the manifest's job without done");
	struct done_jobrec back;
	ok(done_jobrec_parse((char *)a.data, a.len, "J", &back, &e) == 0 && back.step == 3 &&
	   back.job.id == r.job.id && back.job.first_step == 1 && back.job.sequences == 6 && back.job.finished &&
	   back.job.data == r.job.data && back.job.n_inputs_data == 2 && back.job.inputs_data[1] == 1,
	   "and reads back (%s)", e.msg);
	done_jobrec_format(&b, &back);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_job_free(&back.job);
	uint64_t inh[] = { 0x00000000000000a1ull, 0x00000000000000b2ull };
	r.job.inputs_hash = inh;
	buf_reset(&a);
	done_jobrec_format(&a, &r);
	const char *inh_tail = "\"inputs_hash\":[\"00000000000000a1\",\"00000000000000b2\"]}}\n";
	ok(done_jobrec_parse((char *)a.data, a.len, "J", &back, &e) == 0 && back.job.inputs_hash &&
	   back.job.inputs_hash[0] == 0xa1 && back.job.inputs_hash[1] == 0xb2 && a.len > strlen(inh_tail) &&
	   memcmp(a.data + a.len - strlen(inh_tail), inh_tail, strlen(inh_tail)) == 0,
	   "a record keeps the job's inputs_hash, after inputs_data, and reads it back (%s)", e.msg);
	done_job_free(&back.job);
	r.job.inputs_hash = NULL;
	const char *bad[][2] = {
		{ "{\"step\":3}", "J: not a job record" },
		{ "[1]", "J: not a job record" },
		{ "{\"step\":\"3\",\"job\":{}}", "J: step: expected a whole number" },
		{ "{\"step\":3,\"job\":7}", "J: job: expected id, first_step, sequences and finished" },
		{ "{\"step\":3,\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,\"sequences\":2,"
		  "\"finished\":true,\"data\":\"xyz\"}}", "J: job: data is not 16 hexadecimal digits" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(done_jobrec_parse(bad[i][0], strlen(bad[i][0]), "J", &back, &e) < 0 && strstr(e.msg, bad[i][1]),
		   "a record refused: %s", e.msg);

	ok(done_jobs_load(q, &v, &n, &e) == 0 && n == 0, "no .jobs: no records");
	done_jobrecs_free(v, n);
	/* two records, a duplicate of the first, and a last line cut short */
	struct buf f = { 0 };
	struct done_jobrec r2 = r;
	r2.step = 5;
	r2.job.id = 0x77;
	r2.job.first_step = 4;
	done_jobrec_format(&f, &r);
	done_jobrec_format(&f, &r2);
	done_jobrec_format(&f, &r);
	buf_append(&f, a.data, a.len - 9);
	buf_put_u8(&f, 0);
	ok(put_jobs(q, (char *)f.data) == 0 && done_jobs_load(q, &v, &n, &e) == 0 && n == 3 && v[0].step == 3 &&
	   v[1].job.id == 0x77 && v[2].job.id == r.job.id, "a duplicate read as it comes, a torn last line passed over (%s)",
	   e.msg);
	done_jobrecs_free(v, n);
	/* the writer: one line per job, the later step's; the torn line and the duplicate dropped */
	struct done_jobrec later = r;
	later.step = 4;
	later.job.finished = 0;
	buf_reset(&b);
	done_jobrec_format(&b, &later);
	done_jobrec_format(&b, &r2);
	buf_put_u8(&b, 0);
	ok(done_jobs_add(q, &later, 1, &e) == 0 && jobs_text_is(q, (char *)b.data),
	   "add: a later step's record of a job replaces the earlier (%s)", e.msg);
	ok(done_jobs_add(q, &r, 1, &e) == 0 && jobs_text_is(q, (char *)b.data),
	   "an earlier step's changes nothing");
	struct stat before, after;
	char jobs[512];
	snprintf(jobs, sizeof jobs, "%s/.jobs", q);
	ok(stat(jobs, &before) == 0 && done_jobs_add(q, &later, 1, &e) == 0 && stat(jobs, &after) == 0 &&
	   after.st_ino == before.st_ino && jobs_text_is(q, (char *)b.data),
	   "nor does the same step's again (gc run again after a crash): the file is not rewritten");
	struct done_jobrec r3 = r;
	r3.job.first_step = 9;
	r3.step = 9;
	buf_reset(&f);
	done_jobrec_format(&f, &later);
	done_jobrec_format(&f, &r2);
	done_jobrec_format(&f, &r3);
	buf_put_u8(&f, 0);
	ok(done_jobs_add(q, &r3, 1, &e) == 0 && jobs_text_is(q, (char *)f.data),
	   "a job of another first step is another job: a line of its own");
	ok(put_jobs(q, "{\"step\":3}\n") == 0 && done_jobs_load(q, &v, &n, &e) < 0 &&
	   strstr(e.msg, "/.jobs: line 1: not a job record"), "a whole line that is no record: refused: %s", e.msg);
	ok(done_jobs_add(q, &r3, 1, &e) < 0 && jobs_text_is(q, "{\"step\":3}\n"), "and add leaves it as it is");
	buf_reset(&f);
	done_jobrec_format(&f, &r2);
	buf_append(&f, "x\n", 3);
	buf_put_u8(&f, 0);
	ok(put_jobs(q, (char *)f.data) == 0 && done_jobs_load(q, &v, &n, &e) < 0 && strstr(e.msg, "/.jobs: line 2: "),
	   "a damaged line of one byte is refused too, naming it: %s", e.msg);
	buf_reset(&f);
	done_jobrec_format(&f, &r2);
	buf_append(&f, "\n", 1);
	done_jobrec_format(&f, &r3);
	buf_put_u8(&f, 0);
	ok(put_jobs(q, (char *)f.data) == 0 && done_jobs_load(q, &v, &n, &e) == 0 && n == 2 && v[1].step == 9,
	   "an empty line is passed over");
	done_jobrecs_free(v, n);
	put_jobs(q, NULL);
	test_jobs_unreadable(q, &r3);

	/* what gc reads of a step's marker */
	struct done_jobrec j[2];
	int made = put_done(q, 1, "") || put_done(q, 2, "{}\n") || put_done(q, 3, "done\n") ||
		   put_done(q, 4, "{\"step\":4,\"job\":{\"id\":\"00000000000000ff\",\"first_step\":4,"
				  "\"sequences\":2,\"finished\":true,\"done\":[]}}\n") ||
		   put_done(q, 5, "{\"step\":5,\"job\":{\"id\":\"ff\"}}\n") || put_done(q, 6, "{\"step\":");
	ok(!made, "markers: empty, {}, text, a job, a damaged job, a torn object");
	int none = 1;
	for (int s = 1; s <= 3; s++)
		none &= done_step_records(q, s, j, &e) == 0 && j[0].job.id == 0;
	ok(none && done_step_records(q, 7, j, &e) == 0, "done_step_records: another producer's marker, or none: no job");
	ok(done_step_records(q, 4, j, &e) == 1 && j[0].step == 4 && j[0].job.id == 0xff && j[0].job.first_step == 4 &&
	   j[0].job.finished, "a manifest's job");
	done_jobrecs_free_one(&j[0]);
	int lead = put_done(q, 8, "\n {\"step\":8,\"job\":{\"id\":\"00000000000000ee\",\"first_step\":8,"
				  "\"sequences\":1,\"finished\":true,\"done\":[]}}\n");
	ok(!lead && done_step_records(q, 8, j, &e) == 1 && j[0].job.id == 0xee, "a manifest after white space: its job");
	done_jobrecs_free_one(&j[0]);
	ok(done_step_records(q, 5, j, &e) < 0 && strstr(e.msg, "/step_5/DONE: job: expected"), "a damaged job: %s",
	   e.msg);
	ok(done_step_records(q, 6, j, &e) < 0 && strstr(e.msg, "/step_6/DONE: not a JSON object"), "a torn object: %s",
	   e.msg);
	buf_free(&a);
	buf_free(&b);
	buf_free(&f);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", q);
	if (system(cmd) != 0)
		ok(0, "%s", cmd);
}

/*
 * What a reader of DONE depends on beyond the round trip: a step with no
 * dummies (its counts 0) and a run that has made nothing yet read, absent
 * optional counts read as 0; a damaged entry anywhere is refused, naming
 * it, never read as a shorter manifest.
 */
/* Each queue file's hash (grpo-pack knows a copy by it): finished files'
 * beside their names, a partial file's in its record; a manifest from
 * before has none, and an unknown hash (0) of a carried record is kept. */
static void test_file_hashes(void)
{
	struct err e = { 0 };
	uint32_t ord[] = { 1 };
	char *inputs[] = { "step_0/rank_0/a.zst", "step_1/rank_0/c.zst" };
	uint64_t data[] = { 0x0123456789abcdefull, 0 };
	struct done_partial part[] = { { "step_0/rank_1/b.zst", ord, 1, 0xfedcba9876543210ull } };
	struct done_manifest m = { .step = 2, .ranks = 1, .inputs = inputs, .inputs_hash = data, .n_inputs = 2,
				   .partial = part, .n_partial = 1 };
	struct buf a = { 0 }, b = { 0 };
	const char *want = "\"inputs\":[\"step_0/rank_0/a.zst\",\"step_1/rank_0/c.zst\"],"
			   "\"inputs_hash\":[\"0123456789abcdef\",\"0000000000000000\"],"
			   "\"partial\":[{\"file\":\"step_0/rank_1/b.zst\",\"hash\":\"fedcba9876543210\",\"done\":[1]}]}\n";
	ok(done_format(&a, &m) == 0 && a.len > strlen(want) && memcmp(a.data + a.len - strlen(want), want, strlen(want)) == 0,
	   "inputs_hash beside inputs, hash in a partial record");
	struct done_manifest r;
	ok(done_parse((char *)a.data, a.len, "DONE", &r, &e) == 0 && r.n_inputs == 2 && r.inputs_hash &&
	   r.inputs_hash[0] == data[0] && r.inputs_hash[1] == 0 && r.n_partial == 1 && r.partial[0].hash == part[0].hash,
	   "and read back (%s)", e.msg);
	done_format(&b, &r);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_free(&r);
	const char *old = "{\"step\":1,\"runs\":[],\"inputs\":[\"step_0/rank_0/a.zst\"],"
			  "\"partial\":[{\"file\":\"b\",\"done\":[]}]}";
	ok(done_parse(old, strlen(old), "DONE", &r, &e) == 0 && !r.inputs_hash && r.partial[0].hash == 0,
	   "a manifest from before them reads with none known (%s)", e.msg);
	done_free(&r);
	const char *bad[][2] = {
		{ "{\"step\":1,\"runs\":[],\"inputs\":[\"a\",\"b\"],\"inputs_hash\":[\"0123456789abcdef\"]}",
		  "x/DONE: inputs_hash: 1 hashes for 2 inputs" },
		{ "{\"step\":1,\"runs\":[],\"inputs\":[\"a\"],\"inputs_hash\":\"0123456789abcdef\"}",
		  "x/DONE: inputs_hash: expected an array" },
		{ "{\"step\":1,\"runs\":[],\"inputs\":[\"a\"],\"inputs_hash\":[\"0123456789abcdeg\"]}",
		  "x/DONE: inputs_hash[0]: not 16 hexadecimal digits" },
		{ "{\"step\":1,\"runs\":[],\"partial\":[{\"file\":\"a\",\"hash\":12,\"done\":[]}]}",
		  "x/DONE: partial[0].hash: not 16 hexadecimal digits" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(done_parse(bad[i][0], strlen(bad[i][0]), "x/DONE", &r, &e) < 0 && strstr(e.msg, bad[i][1]),
		   "refused: %s", e.msg);
	buf_free(&a);
	buf_free(&b);
}

/* .jobs keeps a removed step's queue files with their hashes in a line of
 * their own (grpo-pack knows their copies by them): written and read back,
 * one line per step however often gc records it, beside the step's job;
 * done_step_records reads them from a marker as gc does. */
static void test_file_records(void)
{
	char q[] = "/tmp/grpo-test-jobs.XXXXXX";
	struct err e = { 0 };
	if (!mkdtemp(q)) {
		ok(0, "a temporary queue");
		return;
	}
	char *files[] = { "step_0/rank_0/a.zst", "step_1/rank_2/b \"c\".zst" };
	uint64_t hash[] = { 0x0123456789abcdefull, 0x00000000000000ffull };
	struct done_jobrec r = { 0 };
	r.step = 4, r.files = files, r.files_hash = hash, r.n_files = 2;
	struct buf a = { 0 }, b = { 0 };
	const char *want = "{\"step\":4,\"inputs\":[\"step_0/rank_0/a.zst\",\"step_1/rank_2/b \\\"c\\\".zst\"],"
			   "\"inputs_hash\":[\"0123456789abcdef\",\"00000000000000ff\"]}\n";
	ok(done_jobrec_format(&a, &r) == 0 && a.len == strlen(want) && memcmp(a.data, want, a.len) == 0,
	   "a step's files: the documented line");
	struct done_jobrec back;
	ok(done_jobrec_parse((char *)a.data, a.len, "J", &back, &e) == 0 && back.step == 4 && back.n_files == 2 &&
	   strcmp(back.files[1], files[1]) == 0 && back.files_hash[0] == hash[0] && back.files_hash[1] == hash[1],
	   "and reads back (%s)", e.msg);
	done_jobrec_format(&b, &back);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_jobrecs_free_one(&back);
	const char *bad[][2] = {
		{ "{\"step\":4,\"inputs\":[\"a\"]}", "J: a file record needs inputs and inputs_hash" },
		{ "{\"step\":4,\"inputs\":[\"a\",\"b\"],\"inputs_hash\":[\"0123456789abcdef\"]}",
		  "J: inputs_hash: 1 hashes for 2 inputs" },
		{ "{\"step\":4,\"inputs\":[],\"inputs_hash\":[]}", "J: inputs_hash: 0 hashes for 0 inputs" },
		{ "{\"step\":4,\"inputs\":[5],\"inputs_hash\":[\"0123456789abcdef\"]}", "J: inputs[0]: expected a string" },
		{ "{\"inputs\":[\"a\"],\"inputs_hash\":[\"0123456789abcdef\"]}", "J: step: expected a whole number" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(done_jobrec_parse(bad[i][0], strlen(bad[i][0]), "J", &back, &e) < 0 && strstr(e.msg, bad[i][1]),
		   "a file record refused: %s", e.msg);

	/* beside a job's record of the same step; the same step's files again change nothing */
	uint64_t ind[] = { 0xfedcba9876543210ull };
	struct done_jobrec job = { 4, { 0x77, 1, 3, 1, NULL, 0, 0x1234, ind, NULL, 1 }, NULL, NULL, 0 };
	struct done_jobrec two[2] = { job, r };
	buf_reset(&b);
	done_jobrec_format(&b, &job);
	done_jobrec_format(&b, &r);
	buf_put_u8(&b, 0);
	ok(done_jobs_add(q, two, 2, &e) == 0 && jobs_text_is(q, (char *)b.data),
	   "a step's job and its files: two lines (%s)", e.msg);
	ok(done_jobs_add(q, &r, 1, &e) == 0 && jobs_text_is(q, (char *)b.data), "its files again: no second line");
	struct done_jobrec r5 = r;
	r5.step = 5;
	buf_reset(&b);
	done_jobrec_format(&b, &job);
	done_jobrec_format(&b, &r);
	done_jobrec_format(&b, &r5);
	buf_put_u8(&b, 0);
	ok(done_jobs_add(q, &r5, 1, &e) == 0 && jobs_text_is(q, (char *)b.data),
	   "another step's files, the same names: a line of their own");
	struct done_jobrec *v;
	size_t n;
	ok(done_jobs_load(q, &v, &n, &e) == 0 && n == 3 && v[0].n_files == 0 && v[0].job.id == 0x77 &&
	   v[1].n_files == 2 && v[2].step == 5, "and all three read back (%s)", e.msg);
	done_jobrecs_free(v, n);

	/* from a manifest: finished and partial files with hashes, none without */
	struct done_manifest m = { 0 };
	char *in[] = { "step_0/rank_0/a.zst", "step_0/rank_0/old.zst" };
	uint64_t ih[] = { 0x0123456789abcdefull, 0 };
	uint32_t ord[] = { 0 };
	struct done_partial part[] = { { "step_1/rank_0/p.zst", ord, 1, 0x00000000000000ffull } };
	m.step = 6, m.ranks = 1, m.inputs = in, m.inputs_hash = ih, m.n_inputs = 2, m.partial = part, m.n_partial = 1;
	buf_reset(&a);
	done_format(&a, &m);
	buf_put_u8(&a, 0);
	shell("mkdir -p '%s/step_6' '%s/step_7' && printf '%%s' '%s' > '%s/step_6/DONE' && echo done > '%s/step_7/DONE'",
	      q, q, (char *)a.data, q, q);
	struct done_jobrec got[2];
	ok(done_step_records(q, 6, got, &e) == 1 && got[0].step == 6 && got[0].n_files == 2 &&
	   strcmp(got[0].files[0], "step_0/rank_0/a.zst") == 0 && got[0].files_hash[0] == ih[0] &&
	   strcmp(got[0].files[1], "step_1/rank_0/p.zst") == 0 && got[0].files_hash[1] == 0xff,
	   "a step's files from its manifest: the finished and the partial with hashes, not the one without (%s)", e.msg);
	done_jobrecs_free_one(&got[0]);
	ok(done_step_records(q, 7, got, &e) == 0 && got[0].n_files == 0, "another producer's marker: none");
	ok(done_step_records(q, 8, got, &e) == 0, "no marker: none");
	shell("mkdir -p '%s/step_9' && echo '{\"step\":9,\"runs\":[],\"inputs\":[\"x\"],\"partial\":[]}' > '%s/step_9/DONE'",
	      q, q);
	ok(done_step_records(q, 9, got, &e) == 0 && got[0].n_files == 0 && !got[0].files,
	   "a manifest whose files have no hash (from before hashes): none, nothing left to free");
	shell("mkdir -p '%s/step_10' && echo '{\"step\":10,\"runs\":[],\"inputs\":[\"x\"],\"inputs_hash\":"
	      "[\"0000000000000abc\"],\"job\":{\"id\":\"00000000000000dd\",\"first_step\":10,\"sequences\":1,"
	      "\"finished\":true,\"done\":[]}}' > '%s/step_10/DONE'", q, q);
	ok(done_step_records(q, 10, got, &e) == 2 && got[0].job.id == 0xdd && !got[0].n_files && got[1].n_files == 1 &&
	   got[1].files_hash[0] == 0xabc && got[0].step == 10 && got[1].step == 10,
	   "a job and hashed files, read at once: the job's record, then the files' (%s)", e.msg);
	done_jobrecs_free_one(&got[0]);
	done_jobrecs_free_one(&got[1]);
	buf_free(&a);
	buf_free(&b);
	shell("rm -rf '%s'", q);
}

static void test_parse_more(void)
{
	struct done_manifest r;
	struct err e = { 0 };
	const char *zero = "{\"step\":0,\"ranks\":1,\"micro_batches_per_rank\":0,\"sequences\":0,\"tokens\":0,"
			   "\"loss_tokens\":0,\"pad_tokens\":0,\"dummies\":0,\"dummy_tokens\":0,"
			   "\"runs\":[{\"run\":\"a\",\"sequences_total\":0,\"run_step\":0}],"
			   "\"partial\":[{\"file\":\"step_0/rank_0/a.zst\",\"done\":[]}],"
			   "\"job\":{\"id\":\"00000000000000ff\",\"first_step\":0,\"sequences\":0,\"finished\":true,"
			   "\"done\":[]}}";
	ok(done_parse(zero, strlen(zero), "DONE", &r, &e) == 0 && r.dummy_tokens == 0 && r.micro_batches_per_rank == 0 &&
	   r.n_runs == 1 && r.runs[0].sequences == 0 && r.runs[0].tokens == 0 && r.runs[0].sequences_total == 0 &&
	   r.n_partial == 1 && r.partial[0].n_done == 0 && r.has_job && r.job.sequences == 0,
	   "a step of zeros reads: no dummies, a run that made nothing, an empty job (%s)", e.msg);
	done_free(&r);
	ok(!r.runs && r.n_runs == 0 && !r.partial && r.n_partial == 0 && !r.has_job,
	   "done_free zeroes the manifest");
	const char *bad[][2] = {
		{ "not json", "x/DONE: not a grpo-pack manifest" },
		{ "{\"step\":1,\"runs\":[],\"inputs\":[\"step_0/rank_0/a.zst\",3]}", "x/DONE: inputs[1]: expected a string" },
		{ "{\"step\":1,\"runs\":[],\"partial\":[{\"file\":7,\"done\":[]}]}", "x/DONE: partial[0].file: expected a string" },
		{ "{\"step\":1,\"runs\":[{\"run\":\"a\",\"sequences_total\":1}]}", "x/DONE: run_step: expected a whole number" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,\"sequences\":2,"
		  "\"finished\":true,\"data\":\"00000000000000fg\",\"done\":[]}}", "x/DONE: job: data is not 16 hexadecimal" },
		{ "{\"step\":1,\"runs\":[],\"partial\":[{\"file\":\"a\",\"done\":[]},{\"file\":\"b\",\"done\":3}]}",
		  "x/DONE: partial[1].done: expected an array" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,\"sequences\":2,"
		  "\"finished\":false,\"done\":[0.5]}}", "x/DONE: job.done[0]: not an ordinal below sequences (2)" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int rc = done_parse(bad[i][0], strlen(bad[i][0]), "x/DONE", &r, &e);
		ok(rc < 0 && strstr(e.msg, bad[i][1]), "refused: %s", e.msg);
	}
	struct done_jobrec jr;
	const char *nostep = "{\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,\"sequences\":2,\"finished\":true}}";
	int rc = done_jobrec_parse(nostep, strlen(nostep), "J", &jr, &e);
	ok(rc < 0 && strstr(e.msg, "J: step: expected a whole number"), "a .jobs record without its step: %s", e.msg);
}

int main(void)
{
	struct err e = { 0 };
	uint32_t ord[] = { 0, 2, 5 };
	struct done_run runs[] = { { "", 3, 71, 9, 2, 1 }, { "b \"q\"", 0, 0, 4, 1, 0 } };
	char *inputs[] = { "step_0/rank_0/a.zst" };
	struct done_partial part[] = { { "step_0/rank_1/b.zst", ord, 3, 0 } };
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
	m.job = (struct done_job){ 0x00ab00cd00ef0012ull, 5, 4, 0, jd, 2, 0x0123456789abcdefull, NULL, NULL, 0 };
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

	/* and each one's hash as a queue file's, which tells a copy of one in a queue */
	uint64_t inh[] = { 0x1111222233334444ull, 0xaaaabbbbccccddddull };
	m.job.inputs_hash = inh;
	buf_reset(&a);
	buf_reset(&b);
	tail = "\"inputs_data\":[\"fedcba9876543210\",\"0000000000000001\"],"
	       "\"inputs_hash\":[\"1111222233334444\",\"aaaabbbbccccdddd\"],\"done\":[]}}\n";
	ok(done_format(&a, &m) == 0 && a.len > strlen(tail) &&
	   memcmp(a.data + a.len - strlen(tail), tail, strlen(tail)) == 0,
	   "inputs_hash, one per input, after inputs_data");
	ok(done_parse((char *)a.data, a.len, "DONE", &r, &e) == 0 && r.has_job && r.job.n_inputs_data == 2 &&
	   r.job.inputs_hash && r.job.inputs_hash[0] == inh[0] && r.job.inputs_hash[1] == inh[1],
	   "and reads back (%s)", e.msg);
	done_format(&b, &r);
	ok(b.len == a.len && memcmp(a.data, b.data, a.len) == 0, "to the same bytes");
	done_free(&r);
	m.job.inputs_hash = NULL;
	m.has_job = 0;

	const char *old = "{\"step\":1,\"ranks\":2,\"micro_batches_per_rank\":1,\"sequences\":3,\"tokens\":71,"
			  "\"runs\":[],\"next_run\":\"\",\"inputs\":[],\"partial\":[]}";
	ok(done_parse(old, strlen(old), "DONE", &r, &e) == 0 && r.loss_tokens == -1 && r.tokens == 71,
	   "a manifest from before loss_tokens reads, loss_tokens unknown (-1)");
	buf_free(&b);
	done_format(&b, &r);
	struct done_manifest again;
	ok(!memmem(b.data, b.len, "loss_tokens", 11) && done_parse((char *)b.data, b.len, "DONE", &again, &e) == 0 &&
	   again.loss_tokens == -1, "and writes back without it, as it was, which reads again (%s)", e.msg);
	done_free(&again);
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
		  "x/DONE: job.inputs_data: expected an array" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":true,\"inputs_data\":[\"00000000000000ff\",\"-0000000000000ff\"],"
		  "\"done\":[]}}", "x/DONE: job.inputs_data[1]: not 16 hexadecimal digits" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":true,\"inputs_data\":[\"00000000000000ff\"],"
		  "\"inputs_hash\":[\"00000000000000ff\",\"00000000000000ee\"],\"done\":[]}}",
		  "x/DONE: job.inputs_hash: 2 hashes for 1 in inputs_data" },
		{ "{\"step\":1,\"runs\":[],\"job\":{\"id\":\"00000000000000ff\",\"first_step\":1,"
		  "\"sequences\":2,\"finished\":true,\"inputs_data\":[\"00000000000000ff\"],"
		  "\"inputs_hash\":[\"00000000000000fg\"],\"done\":[]}}",
		  "x/DONE: job.inputs_hash[0]: not 16 hexadecimal digits" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ok(done_parse(bad[i][0], strlen(bad[i][0]), "x/DONE", &r, &e) < 0 && strstr(e.msg, bad[i][1]),
		   "refused: %s", e.msg);
	test_parse_more();
	test_file_hashes();
	buf_free(&a);
	buf_free(&b);
	test_load_job();
	test_jobs();
	test_file_records();
	return tap_done();
}
