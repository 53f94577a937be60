/*
 * test_cursor: grpo-collect's --cursor file (collect/cursor.h). A batch
 * kept by cursor_save reads back whole (a server's answers, or a model's
 * batch by what decides its bytes), cursor_advance leaves the next place
 * alone, and a save that fails at any of its file system calls (an advance,
 * at its first) says so (-1), leaving the file as it was (or whole, after
 * the rename) and no temporary. A damaged file is refused naming the file
 * and line, an unreadable one is not taken for an absent one, and loading
 * leaves no descriptor open; a re-run that would publish or sample the
 * batch otherwise is refused naming what the file holds. The lock turns
 * a second holder away with the first's pid (none while it has not
 * written it), refuses a link or a pipe, and removes the temporaries a
 * killed holder left beside the cursor, and only those.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "collect/cursor.h"
#include "../tap.h"

static char top[256];

static const char *at(const char *name)
{
	static char p[4][512];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof p[i], "%s/%s", top, name);
	return p[i];
}

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

/* The answers of b, each followed by '|'. */
static const char *answers(const struct cursor_batch *b)
{
	static char out[1024];
	size_t pos = 0, n;
	const char *line;
	out[0] = 0;
	for (size_t i = 0; cursor_batch_next(b, &i, &line, &n);)
		pos += (size_t)snprintf(out + pos, sizeof out - pos, "%.*s|", (int)n, line);
	return out;
}

/* A server's batch of places 12 to 15, two answers kept (two prompts failed). */
static void server_batch(struct cursor_batch *b)
{
	memset(b, 0, sizeof *b);
	b->from = 12, b->prompts = 4, b->next = 16, b->policy_version = 3, b->step = 3, b->rank = 1,
	b->max_groups = 256;
	b->output = strdup("spool/rollouts");
	cursor_batch_add(b, "{\"a\":1}", 7, NULL);
	cursor_batch_add(b, "{\"b\":2}", 7, NULL);
}

/* A model's batch of places 4 and 5 (wrapping round a file of 5 rows), published into step 7. */
static void model_batch(struct cursor_batch *b)
{
	memset(b, 0, sizeof *b);
	b->from = 4, b->prompts = 2, b->next = 6, b->policy_version = 3, b->max_groups = 2;
	b->model = strdup("spool/policy/step_3");
	b->names = 0x0123456789abcdefull, b->batch = 16, b->step = 7;
}

static const char *server_text = "12\n{\"sampled\":{\"from\":12,\"prompts\":4,\"next\":16,\"policy_version\":3,"
				 "\"output\":\"spool/rollouts\",\"rank\":1,\"max_groups\":256,\"answers\":2}}\n"
				 "{\"a\":1}\n{\"b\":2}\n";

static void test_round_trip(void)
{
	struct cursor c;
	struct cursor_batch b;
	struct err e = { 0 };
	const char *p = at("c1");
	is_int(cursor_load(&c, p, &e), 0, "no file: loaded");
	is_int((int)c.row * 10 + c.pending, 0, "at place 0, nothing pending");
	c.row = 12;
	server_batch(&b);
	is_int(cursor_save(&c, &b, &e), 0, "a server's batch saved: %s", e.msg);
	is_int(c.pending, 1, "and pending");
	is_int(b.output == NULL && b.n_lines == 0, 1, "the batch's contents moved into the cursor");
	is_int(strcmp(file_text(p), server_text), 0, "the file holds the row, the header, the answers");
	cursor_free(&c);

	is_int(cursor_load(&c, p, &e), 0, "read back: %s", e.msg);
	const struct cursor_batch *k = &c.batch;
	is_int(c.pending && c.row == 12 && k->from == 12 && k->prompts == 4 && k->next == 16, 1,
	       "the row and the places read back");
	is_int(k->policy_version == 3 && k->step == 3 && k->rank == 1 && k->max_groups == 256 && !k->model &&
		       k->output && !strcmp(k->output, "spool/rollouts"),
	       1, "the version (the step too), rank, -m, output read back, no model");
	is_int(k->n_lines == 2 && !strcmp(answers(k), "{\"a\":1}|{\"b\":2}|"), 1, "the answers read back: %s",
	       answers(k));

	is_int(cursor_advance(&c, 16, &e), 0, "advanced: %s", e.msg);
	is_int(c.row == 16 && !c.pending && !c.batch.output, 1, "the cursor at 16, nothing pending");
	is_int(strcmp(file_text(p), "16\n"), 0, "the file holds the next place alone");
	cursor_free(&c);
	is_int(cursor_load(&c, p, &e) == 0 && c.row == 16 && !c.pending, 1, "and reads back so");
	cursor_free(&c);

	/* a model's batch, to standard output, rank 0 */
	p = at("c2");
	cursor_load(&c, p, &e);
	c.row = 4;
	model_batch(&b);
	is_int(cursor_save(&c, &b, &e), 0, "a model's batch saved: %s", e.msg);
	is_int(strcmp(file_text(p), "4\n{\"generating\":{\"from\":4,\"prompts\":2,\"next\":6,\"policy_version\":3,"
				"\"model\":\"spool/policy/step_3\",\"names\":\"collect-0123456789abcdef-\",\"batch\":16,"
				"\"step\":7,\"output\":null,\"rank\":0,\"max_groups\":2}}\n"),
	       0, "kept by what decides its bytes, no answers");
	cursor_free(&c);
	is_int(cursor_load(&c, p, &e), 0, "read back: %s", e.msg);
	k = &c.batch;
	is_int(c.pending && c.row == 4 && k->from == 4 && k->prompts == 2 && k->next == 6 && k->policy_version == 3 &&
		       k->step == 7 && k->batch == 16 && k->names == 0x0123456789abcdefull && !k->output &&
		       k->rank == 0 && k->max_groups == 2 && k->n_lines == 0 && k->model &&
		       !strcmp(k->model, "spool/policy/step_3"),
	       1, "every field of a model's batch reads back");
	cursor_free(&c);
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* load text from a file and the message it is refused with ("" when loaded) */
static const char *load_text(const char *text, struct cursor *c)
{
	static struct err e;
	const char *p = at("bad");
	put_text(p, text);
	e.msg[0] = 0;
	if (cursor_load(c, p, &e) == 0)
		return "";
	return strncmp(e.msg, p, strlen(p)) ? e.msg : e.msg + strlen(p);
}

/* Open descriptors of this process. */
static int open_fds(void)
{
	return shell("exit $(ls /proc/%ld/fd | wc -l)", (long)getpid()) >> 8;
}

static void test_damaged(void)
{
	struct cursor c;
	static const char *header =
		"{\"sampled\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,\"rank\":0,"
		"\"max_groups\":256,\"answers\":1}}";
	char t[1024];
	const char *r = load_text("12 \r\n", &c);
	is_int(strcmp(r, "") == 0 && c.row == 12 && !c.pending, 1, "'12 \\r': place 12 (%s)", r);
	cursor_free(&c);
	r = load_text("7", &c);
	is_int(strcmp(r, "") == 0 && c.row == 7, 1, "'7' with no newline: place 7 (%s)", r);
	cursor_free(&c);
	r = load_text("9007199254740991\n", &c);
	is_int(strcmp(r, "") == 0 && c.row == 9007199254740991ull, 1, "place 2^53-1 reads whole (%s)", r);
	cursor_free(&c);
	is_int(strcmp(load_text("row 3\n", &c), ":1: expected the next place in the prompts, a number, not 'row 3'"), 0,
	       "no row number: refused, naming file and line: %s", load_text("row 3\n", &c));
	is_int(strcmp(load_text("", &c), ":1: expected the next place in the prompts, a number, not ''"), 0,
	       "an empty file: refused");
	is_int(starts(load_text("3x\n", &c), ":1:"), 1, "a row with a letter after it: refused");
	is_int(starts(load_text("/3\n", &c), ":1:"), 1, "a row with a '/' before it: refused");
	is_int(starts(load_text(":3\n", &c), ":1:"), 1, "a row with a ':' before it: refused");
	is_int(strcmp(load_text("12345678901234567890123456789012345678901234567890\n", &c),
		      ":1: expected the next place in the prompts, a number, not '1234567890123456789012345678901234567890'"),
	       0, "a long line: its first 40 bytes quoted");
	is_int(starts(load_text("99999999999999999999\n", &c), ":1:"), 1, "a row past 64 bits: refused");

	snprintf(t, sizeof t, "3\n%s", header);
	is_int(strcmp(load_text(t, &c), ":2: a batch header with no answers after it"), 0,
	       "a header cut before its newline: refused: %s", load_text(t, &c));
	snprintf(t, sizeof t, "3\n%s\n{}\n", header);
	r = load_text(t, &c);
	is_int(strcmp(r, "") == 0 && c.pending && c.batch.n_lines == 1 && !strcmp(answers(&c.batch), "{}|"), 1,
	       "a whole batch of one answer loads (%s)", r);
	cursor_free(&c);
	snprintf(t, sizeof t, "3\n%s\n{}\n{}\n", header);
	is_int(strcmp(load_text(t, &c), ": the sampled batch counts 1 answer, but 2 lines follow it: the file was "
					 "changed by hand, or not written as grpo-collect writes it (whole, by rename)"),
	       0, "an answer too many: refused: %s", load_text(t, &c));
	snprintf(t, sizeof t, "3\n%s\n{}\n{}", header);
	is_int(starts(load_text(t, &c), ": the sampled batch counts 1 answer, but 1 line follows it"), 1,
	       "a last answer cut before its newline: refused: %s", load_text(t, &c));
	snprintf(t, sizeof t, "3\n%s\n", header);
	is_int(starts(load_text(t, &c), ": the sampled batch counts 1 answer, but 0 lines follow it"), 1,
	       "an answer missing: refused: %s", load_text(t, &c));

	snprintf(t, sizeof t, "3\n{\"sampled\":{\"from\":3,\"prompts\":3,\"next\":9007199254740991,"
		 "\"policy_version\":0,\"output\":null,\"rank\":2147483647,\"max_groups\":256,\"answers\":0}}\n");
	r = load_text(t, &c);
	is_int(strcmp(r, "") == 0 && c.batch.next == 9007199254740991ull && c.batch.rank == 2147483647, 1,
	       "a header's numbers up to 2^53-1, its rank up to 2^31-1, read whole (%s)", r);
	cursor_free(&c);

	/* a cursor that cannot be read is not taken for an absent one */
	struct err e = { 0 };
	put_text(at("plain"), "3\n");
	is_int(cursor_load(&c, at("plain/cursor"), &e), -1, "a cursor under a file: refused");
	is_int(!!strstr(e.msg, "plain/cursor: Not a directory"), 1, "naming it: %s", e.msg);
	is_int(cursor_load(&c, top, &e), -1, "a directory: refused: %s", e.msg);
	int fds = open_fds();
	for (int i = 0; i < 3; i++) {
		cursor_load(&c, at("plain"), &e);
		cursor_free(&c);
	}
	is_int(open_fds(), fds, "loading a cursor leaves no file open");

	/* headers that are not one: each refused at line 2 */
	static const char *bad[] = {
		"{}",
		"[1]",
		"{\"sampled\":{\"from\":-1,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,\"rank\":0,"
		"\"max_groups\":256,\"answers\":0}}",
		"{\"sampled\":{\"from\":1.5,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,\"rank\":0,"
		"\"max_groups\":256,\"answers\":0}}",
		"{\"sampled\":{\"from\":9007199254740992,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,"
		"\"rank\":0,\"max_groups\":256,\"answers\":0}}",
		"{\"sampled\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,\"rank\":2147483648,"
		"\"max_groups\":256,\"answers\":0}}",
		"{\"sampled\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":1,\"rank\":0,"
		"\"max_groups\":256,\"answers\":0}}",
		"{\"sampled\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"output\":null,\"rank\":0,"
		"\"max_groups\":256}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collect-0123456789abcdef-\",\"batch\":0,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collect-0123456789abcdeF-\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collect-0123456789abcdef_\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collect-0123456789abcde-\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"Collect-0123456789abcdef-\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collectX0123456789abcdef-\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":5,\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":null,"
		"\"names\":\"collect-0123456789abcdef-\",\"batch\":1,\"step\":0,\"output\":null,\"rank\":0,\"max_groups\":2}}",
		"{\"generating\":{\"from\":3,\"prompts\":3,\"next\":6,\"policy_version\":0,\"model\":\"m\","
		"\"names\":\"collect-0123456789abcdef-\",\"batch\":1,\"output\":null,\"rank\":0,\"max_groups\":2}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(t, sizeof t, "3\n%s\n", bad[i]);
		is_int(starts(load_text(t, &c), ":2: expected {\"sampled\": {\"from\", "), 1,
		       "header %zu refused at line 2: %s", i, load_text(t, &c));
	}
}

static void test_checks(void)
{
	struct cursor c;
	struct cursor_batch b;
	struct err e = { 0 };
	int64_t v3 = 3, v4 = 4, v7 = 7;
	cursor_load(&c, at("k1"), &e);
	server_batch(&b);
	cursor_save(&c, &b, &e);
	is_int(cursor_check_target(&c, "spool/rollouts", 1, 256, &v3, &e), 0, "the same target: accepted");
	is_int(cursor_check_target(&c, "spool/rollouts", 1, 256, NULL, &e), 0, "no version given: accepted");
	is_int(cursor_check_target(&c, "spool/other", 1, 256, NULL, &e), -1, "another queue: refused");
	is_int(strcmp(e.msg, "") && strstr(e.msg, "holds 4 prompts from place 12, sampled at policy version 3 for "
						  "spool/rollouts (rank 1, --max-groups 256)") != NULL,
	       1, "naming what the file holds: %s", e.msg);
	is_int(cursor_check_target(&c, NULL, 1, 256, NULL, &e), -1, "standard output: refused");
	is_int(cursor_check_target(&c, "spool/rollouts", 0, 256, NULL, &e), -1, "another rank: refused");
	is_int(cursor_check_target(&c, "spool/rollouts", 1, 255, NULL, &e), -1, "another -m: refused");
	is_int(cursor_check_target(&c, "spool/rollouts", 1, 256, &v4, &e), -1, "another version: refused");
	cursor_free(&c);

	cursor_load(&c, at("k2"), &e);
	model_batch(&b);
	cursor_save(&c, &b, &e);
	server_batch(&b);
	cursor_save(&c, &b, &e);
	model_batch(&b);
	is_int(cursor_save(&c, &b, &e), 0, "a model's batch saved over a server's");
	is_int(!c.batch.output && c.batch.n_lines == 0 && c.batch.model, 1, "holds the model's alone");
	is_int(cursor_check_target(&c, NULL, 0, 2, &v7, &e), 0, "a model's batch to standard output, step 7: accepted");
	is_int(cursor_check_target(&c, "spool/rollouts", 0, 2, &v7, &e), -1, "into a queue: refused");
	is_int(cursor_check_target(&c, NULL, 0, 2, &v3, &e), -1, "into step 3 (its version, not its step): refused");
	is_int(!!strstr(e.msg, "sampled at policy version 3 for standard output (--step) (rank 0, --max-groups 2)"), 1,
	       "saying --step: %s", e.msg);
	is_int(cursor_check_sampling(&c, 0x0123456789abcdefull, 16, &e), 0, "sampled alike: accepted");
	is_int(cursor_check_sampling(&c, 0x0123456789abcdeeull, 16, &e), -1, "other names: refused");
	is_int(!!strstr(e.msg, "holds 2 prompts from place 4, started from spool/policy/step_3 (policy version 3) and "
			       "perhaps published in part, but this command samples them otherwise (other prompts"),
	       1, "naming the checkpoint and the cause: %s", e.msg);
	is_int(cursor_check_sampling(&c, 0x0123456789abcdefull, 8, &e), -1, "another --batch: refused");
	is_int(!!strstr(e.msg, "otherwise (another --batch)"), 1, "saying so: %s", e.msg);
	cursor_free(&c);

	memset(&b, 0, sizeof b);
	is_int(cursor_batch_add(&b, "a\nb", 3, &e), -1, "an answer with a line break: refused");
	is_int(cursor_batch_add(&b, "ab", 2, &e) == 0 && b.n_lines == 1 && !strcmp(answers(&b), "ab|"), 1,
	       "one without: kept");
	cursor_batch_free(&b);
}

/* A save failing at each of its file system calls keeps the file as it was. */
static void test_failed_save(void)
{
	const char *p = at("f1");
	int k;
	for (k = 1; k < 100; k++) {
		struct cursor c;
		struct cursor_batch b;
		struct err e = { 0 };
		put_text(p, "12\n");
		cursor_load(&c, p, &e);
		server_batch(&b);
		fsys_test_fail_at(k, ENOSPC);
		long before = fsys_calls_made();
		int r = cursor_save(&c, &b, &e);
		long calls = fsys_calls_made() - before;
		fsys_test_fail_at(0, 0);
		if (r == 0) {
			cursor_free(&c);
			break;
		}
		/* before the rename the file is as it was; after it (the
		 * directory's flush failed) the batch is whole, and a re-run
		 * publishes it */
		const char *now = file_text(p);
		is_int(r, -1, "call %d of %ld failed: the save fails", k, calls);
		is_int(c.pending, 0, "and nothing is pending");
		is_int(!strcmp(now, "12\n") || !strcmp(now, server_text), 1, "call %d failed: the file as it was, or whole", k);
		is_int(shell("ls -A '%s' | grep -q tmp", top) != 0, 1, "call %d failed: no temporary left", k);
		/* and the cursor goes on */
		is_int(cursor_advance(&c, 16, &e) == 0 && !strcmp(file_text(p), "16\n"), 1, "call %d failed: advanced after", k);
		cursor_free(&c);
	}
	ok(k > 3, "a save is %d calls, each failed in turn", k - 1);

	/* an advance that fails leaves the cursor where it was */
	struct cursor c;
	struct err e = { 0 };
	put_text(p, "12\n");
	cursor_load(&c, p, &e);
	fsys_test_fail_at(1, ENOSPC);
	int r = cursor_advance(&c, 16, &e);
	fsys_test_fail_at(0, 0);
	is_int(r, -1, "an advance failing at its first call fails: %s", e.msg);
	is_int(c.row == 12 && !strcmp(file_text(p), "12\n"), 1, "the cursor still at 12, in memory and in the file");
	cursor_free(&c);
}

static void test_lock(void)
{
	char p[512];
	int fd, fd2;
	long holder = -1;
	struct err e = { 0 };
	char want[32];
	snprintf(p, sizeof p, "%s", at("L"));
	is_int(cursor_lock(p, &fd, &holder, &e), 0, "a lock beside a cursor not yet written: %s", e.msg);
	snprintf(want, sizeof want, "%ld\n", (long)getpid());
	is_int(strcmp(file_text(at("L.lock")), want), 0, "it holds our pid");
	is_int(cursor_lock(p, &fd2, &holder, &e), 1, "a second holder is turned away");
	is_int(holder, (long)getpid(), "told the first's pid");
	close(fd);
	is_int(cursor_lock(p, &fd2, &holder, &e), 0, "the first gone, the lock is taken");
	close(fd2);
	/* a holder that has not written its pid yet is not named */
	is_int(truncate(at("L.lock"), 0), 0, "the lock emptied");
	is_int(fsys_try_lock(at("L.lock"), 0, &fd, &e), 0, "and held, no pid in it");
	is_int(cursor_lock(p, &fd2, &holder, &e), 1, "a second holder is turned away");
	is_int(holder, 0, "told no pid");
	close(fd);

	/* the temporaries a killed holder left beside the cursor go; nothing else */
	put_text(at("L"), "3\n");
	put_text(at(".L.tmp.host.1.1"), "4\n");
	put_text(at(".L.tmp.host.2.1"), "4\n");
	put_text(at(".Lx.tmp.host.1.1"), "4\n");
	put_text(at(".L.tm.host.1.1"), "4\n");
	put_text(at("L.tmp.host.1.1"), "4\n");
	is_int(cursor_lock(p, &fd, &holder, &e), 0, "locked again");
	close(fd);
	is_int(shell("cd '%s' && test \"$(ls -A | grep tm | tr '\\n' ' ')\" = "
		     "'.L.tm.host.1.1 .Lx.tmp.host.1.1 L.tmp.host.1.1 '", top),
	       0, "the cursor's dead temporaries removed, no other file");

	/* a cursor a rename would replace: refused */
	is_int(symlink("L", at("link")), 0, "a link");
	is_int(cursor_lock(at("link"), &fd, &holder, &e), -1, "a link refused: %s", e.msg);
	is_int(!!strstr(e.msg, "link: a symbolic link"), 1, "saying so");
	is_int(mkfifo(at("fifo"), 0600), 0, "a pipe");
	is_int(cursor_lock(at("fifo"), &fd, &holder, &e), -1, "a pipe refused: %s", e.msg);
	is_int(!!strstr(e.msg, "fifo: not a regular file"), 1, "saying so");
	is_int(access(at("link.lock"), F_OK) != 0 && access(at("fifo.lock"), F_OK) != 0, 1, "and no lock made for them");
}

int main(void)
{
	snprintf(top, sizeof top, "%s/test_cursor.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	test_round_trip();
	test_damaged();
	test_checks();
	test_failed_save();
	test_lock();
	shell("rm -rf '%s'", top);
	return tap_done();
}
