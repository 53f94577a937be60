/*
 * test_steparc: the archives gc writes of a step before removing it.
 * The first holds every file of the step (its own, DONE counted, others
 * not; the ranks' published files), each member's name, size and bytes,
 * dot names left out; nothing new writes no archive; a step made anew gets
 * .2, then .3, holding only files no earlier archive holds under the same
 * name and size, the earlier ones untouched; a directory no archive would
 * hold (beside the ranks, or in one) is refused, said, nothing written; an
 * earlier archive that cannot be read is refused. Every file system call
 * fails in turn: -1, the errno kept, a path named, no dot temporary, and a
 * second run leaves the step archived once over; no descriptor stays open.
 * A file that changes while
 * archived, or an archive that appears meanwhile, is caught at each call
 * in turn (a child held there by the fsys hook). A step of 40 files. The
 * archive is one zstd frame with its checksum. clean_tmp removes only the
 * queue's archive temporaries, and says when a call fails; the queue's
 * name drops trailing '/'.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsys.h"
#include "spool/steparc.h"
#include "../tap.h"

static char top[256], q[300], arch[300];

/* Descriptors this process holds open: none may stay behind a call. */
static int open_fds(void)
{
	struct dirent **v;
	int n = scandir("/proc/self/fd", &v, NULL, NULL);
	for (int i = 0; i < n; i++)
		free(v[i]);
	if (n >= 0)
		free(v);
	return n;
}

static void put(const char *rel, const char *text)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", q, rel);
	shell("mkdir -p \"$(dirname %s)\"", p);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

/*
 * The members of the archive at path, "name:size" ' '-separated in order,
 * each member's data checked against the file of the same name under the
 * queue's parent (top), byte for byte, its mode 0644 and its mtime the
 * file's; "(unreadable)" or "(differs: M)".
 */
static const char *members(const char *path)
{
	static char out[4096];
	char data[4096], want[4096], p[600];
	struct archive *a = archive_read_new();
	struct archive_entry *ent;
	out[0] = 0;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
		archive_read_free(a);
		return "(unreadable)";
	}
	while (archive_read_next_header(a, &ent) == ARCHIVE_OK) {
		const char *m = archive_entry_pathname(ent);
		la_ssize_t n = archive_read_data(a, data, sizeof data);
		snprintf(p, sizeof p, "%s/%s", top, m);
		FILE *f = fopen(p, "r");
		size_t k = f ? fread(want, 1, sizeof want, f) : 0;
		if (f)
			fclose(f);
		if (n < 0 || (size_t)n != k || memcmp(data, want, k) != 0) {
			snprintf(out, sizeof out, "(differs: %s)", m);
			break;
		}
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s:%lld", out[0] ? " " : "", m,
			 (long long)archive_entry_size(ent));
		if (archive_entry_perm(ent) != 0644)
			snprintf(out + strlen(out), sizeof out - strlen(out), "(mode %o)", archive_entry_perm(ent));
		struct stat st;
		if (stat(p, &st) != 0 || archive_entry_mtime(ent) != st.st_mtime)
			snprintf(out + strlen(out), sizeof out - strlen(out), "(mtime %lld)",
				 (long long)archive_entry_mtime(ent));
	}
	archive_read_free(a);
	return out;
}

static const char *arc(const char *name)
{
	static char p[600];
	snprintf(p, sizeof p, "%s/%s", arch, name);
	return p;
}

static void first_and_later(void)
{
	struct err e = { 0 };
	long files = -1, written = -1;
	put("step_0/DONE", "done\n");
	put("step_0/ckpt.bin", "weights");
	put("step_0/.hidden", "not archived");
	put("step_0/.tmp/x", "a dot directory beside the ranks");
	put("step_0/rank_0/a.zst", "aaaaa");
	put("step_0/rank_0/b.zst", "bb");
	put("step_0/rank_0/.claimed/a.zst", "claim");
	put("step_0/rank_0/.part", "partial");
	put("step_0/rank_1/c.zst", "ccc");
	int r = steparc_write(q, 0, arch, &files, &written, &e);
	is_int(r, 0, "the first archive of step 0: %s", r ? e.msg : "written");
	is_int(files, 4, "files: the three published and DONE, not the checkpoint's");
	is_int(written, 5, "written: every file of the step");
	ok(strcmp(dir_names(arch), "q-step_0.tar.zst") == 0, "one archive, no temporary: %s", dir_names(arch));
	const char *m = members(arc("q-step_0.tar.zst"));
	ok(strcmp(m, "q/step_0/DONE:5 q/step_0/ckpt.bin:7 q/step_0/rank_0/a.zst:5 q/step_0/rank_0/b.zst:2 "
		     "q/step_0/rank_1/c.zst:3") == 0, "members, sizes and bytes, dot names left out: %s", m);
	const unsigned char *z = (const unsigned char *)file_text(arc("q-step_0.tar.zst"));
	ok(memcmp(z, "\x28\xb5\x2f\xfd", 4) == 0 && (z[4] & 4), "one zstd frame, with its checksum (as zstd -t checks)");
	shell("cp %s %s/first", arc("q-step_0.tar.zst"), top);

	r = steparc_write(q, 0, arch, &files, &written, &e);
	ok(r == 0 && files == 4 && written == 0 && strcmp(dir_names(arch), "q-step_0.tar.zst") == 0,
	   "again with nothing new: no archive (%d, %ld files, %ld written: %s)", r, files, written, dir_names(arch));

	/* made anew: a grown, b the same size with other bytes, d new */
	put("step_0/rank_0/a.zst", "aaaaaa");
	put("step_0/rank_0/b.zst", "BB");
	put("step_0/rank_1/d.zst", "dddd");
	r = steparc_write(q, 0, arch, &files, &written, &e);
	ok(r == 0 && files == 5 && written == 2, "a later archive: %d, %ld files, %ld written", r, files, written);
	ok(strcmp(dir_names(arch), "q-step_0.2.tar.zst q-step_0.tar.zst") == 0, "numbered .2: %s", dir_names(arch));
	m = members(arc("q-step_0.2.tar.zst"));
	ok(strcmp(m, "q/step_0/rank_0/a.zst:6 q/step_0/rank_1/d.zst:4") == 0,
	   "it holds the file of a new size and the new one, not the one of the same size: %s", m);
	ok(shell("cmp -s %s %s/first", arc("q-step_0.tar.zst"), top) == 0, "the first archive is untouched");

	put("step_0/rank_2/e.zst", "e");
	r = steparc_write(q, 0, arch, &files, &written, &e);
	m = members(arc("q-step_0.3.tar.zst"));
	ok(r == 0 && written == 1 && strcmp(m, "q/step_0/rank_2/e.zst:1") == 0, "then .3: %s", m);
	ok(strcmp(dir_names(arch), "q-step_0.2.tar.zst q-step_0.3.tar.zst q-step_0.tar.zst") == 0, "three archives: %s",
	   dir_names(arch));
}

static void refused(void)
{
	struct err e = { 0 };
	long files, written;
	char want[700];
	put("step_1/rank_0/a.zst", "a");
	put("step_1/notes/n.txt", "mine");
	int r = steparc_write(q, 1, arch, &files, &written, &e);
	snprintf(want, sizeof want, "%s/step_1/notes: a directory that is not a rank's; not archived, so the step is kept", q);
	is_int(r, 1, "a directory beside the ranks: refused");
	ok(strcmp(e.msg, want) == 0, "said: %s", e.msg);
	ok(files == 0 && written == 0 && access(arc("q-step_1.tar.zst"), F_OK) != 0, "nothing written");

	put("step_2/rank_0/a.zst", "a");
	put("step_2/rank_0/sub/x", "x");
	r = steparc_write(q, 2, arch, &files, &written, &e);
	snprintf(want, sizeof want, "%s/step_2/rank_0/sub: a directory in a rank; not archived, so the step is kept", q);
	is_int(r, 1, "a directory in a rank: refused");
	ok(strcmp(e.msg, want) == 0, "said: %s", e.msg);
	ok(access(arc("q-step_2.tar.zst"), F_OK) != 0, "nothing written");

	put("step_3/rank_0/a.zst", "a");
	shell("echo junk > %s", arc("q-step_3.tar.zst"));
	r = steparc_write(q, 3, arch, &files, &written, &e);
	is_int(r, -1, "an earlier archive that cannot be read: an error");
	ok(strstr(e.msg, "an earlier archive of step 3 is unreadable; move it aside") &&
	   strstr(e.msg, "q-step_3.tar.zst"), "said, naming it: %s", e.msg);
	ok(access(arc("q-step_3.2.tar.zst"), F_OK) != 0, "and no archive beside it");
}

/* What every archive of step 4 holds, in number order. */
static const char *all_of_step4(void)
{
	static char out[4096];
	out[0] = 0;
	for (int k = 1; k <= 3; k++) {
		char name[64];
		snprintf(name, sizeof name, k == 1 ? "q-step_4.tar.zst" : "q-step_4.%d.tar.zst", k);
		if (access(arc(name), F_OK) == 0)
			snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "",
				 members(arc(name)));
	}
	return out;
}

/* Step 4 as a failure test starts it: later, a first archive holds a and b, c is new. */
static void step4(int later)
{
	struct err e = { 0 };
	long files, written;
	shell("rm -rf %s %s/q/step_4", arch, top);
	put("step_4/DONE", "d");
	put("step_4/rank_0/a.zst", "aa");
	put("step_4/rank_0/b.zst", "bbb");
	if (later && steparc_write(q, 4, arch, &files, &written, &e) != 0)
		diag("step 4's first archive: %s", e.msg);
	put("step_4/rank_1/c.zst", "c");
}

/*
 * Each of the C calls of a first and of a later archive fails in turn: -1
 * (never a step taken for archived), ENOSPC, a path named, no temporary;
 * an archive published only whole (the failure was after its rename); run
 * again, the archives hold the step once over. Failing call C + 1 fails
 * none.
 */
static void failures(int later)
{
	const char *fresh = later ? "q/step_4/rank_1/c.zst:1"
				  : "q/step_4/DONE:1 q/step_4/rank_0/a.zst:2 q/step_4/rank_0/b.zst:3 q/step_4/rank_1/c.zst:1";
	const char *name = later ? "q-step_4.2.tar.zst" : "q-step_4.tar.zst";
	const char *want = "q/step_4/DONE:1 q/step_4/rank_0/a.zst:2 q/step_4/rank_0/b.zst:3 q/step_4/rank_1/c.zst:1";
	struct err e = { 0 };
	long files, written;
	int bad = 0;
	step4(later);
	fsys_test_fail_at(0, 0);
	int r = steparc_write(q, 4, arch, &files, &written, &e);
	long calls = fsys_calls_made();
	ok(r == 0 && strcmp(all_of_step4(), want) == 0, "%s archive of step 4: %s", later ? "a later" : "a first",
	   all_of_step4());
	int fds = open_fds();
	for (long n = 1; n <= calls + 1; n++) {
		step4(later);
		fsys_test_fail_at(n, ENOSPC);
		r = steparc_write(q, 4, arch, &files, &written, &e);
		fsys_test_fail_at(0, 0);
		if (n > calls) {
			if (r != 0 || strcmp(all_of_step4(), want) != 0)
				bad++, diag("call %ld of %ld failed: %d, %s", n, calls, r, all_of_step4());
			break;
		}
		if (r != -1 || e.errnum != ENOSPC || !strstr(e.msg, top))
			bad++, diag("call %ld: %d, errno %d: %s", n, r, e.errnum, e.msg);
		if (open_fds() != fds)
			bad++, diag("call %ld left %d descriptors open", n, open_fds() - fds);
		if (strstr(dir_names(arch), ".q-step_4"))
			bad++, diag("call %ld left a temporary: %s", n, dir_names(arch));
		if (access(arc(name), F_OK) == 0 && strcmp(members(arc(name)), fresh) != 0)
			bad++, diag("call %ld published %s holding %s", n, name, members(arc(name)));
		if (steparc_write(q, 4, arch, &files, &written, &e) != 0 || strcmp(all_of_step4(), want) != 0)
			bad++, diag("call %ld, run again: %s: %s", n, all_of_step4(), e.msg);
	}
	ok(bad == 0 && calls > 5 && open_fds() == fds, "and each of its %ld calls failing: -1 said, no temporary, "
	   "no descriptor left open, nothing published partial; run again, the step archived once over", calls);
}

/* A step of 40 files and DONE: every one archived (the lists grow past their first 16). */
static void many(void)
{
	struct err e = { 0 };
	long files, written;
	char rel[64];
	for (int i = 0; i < 40; i++) {
		snprintf(rel, sizeof rel, "step_6/rank_%d/f%02d.zst", i % 3, i);
		put(rel, rel);
	}
	put("step_6/DONE", "d");
	int fds = open_fds();
	int r = steparc_write(q, 6, arch, &files, &written, &e);
	is_int(open_fds(), fds, "no descriptor left open by archiving 41 files");
	const char *m = members(arc("q-step_6.tar.zst"));
	int n = 0;
	for (const char *c = m; (c = strstr(c, ":")); c++)
		n++;
	ok(r == 0 && files == 41 && written == 41 && n == 41 && !strchr(m, '('),
	   "a step of 40 files and DONE: %d, %ld files, %ld written, %d members read back", r, files, written, n);
}

/*
 * The file of step 5 changed (how) while call k of its archiving is held
 * (the fsys hook stops a child there; *stopped: it got there): its
 * status, its message in msg.
 */
static int changed_at(long k, const char *how, char *msg, size_t size, int *stopped)
{
	char f[600], mf[600];
	snprintf(f, sizeof f, "%s/step_5/rank_0/f.zst", q);
	snprintf(mf, sizeof mf, "%s/msg", top);
	shell("rm -rf %s %s/step_5 %s", arch, q, mf);
	put("step_5/rank_0/f.zst", "0123456789");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct err e = { 0 };
		long files, written;
		fsys_test_crash_at(k);
		int fds = open_fds();
		int r = steparc_write(q, 5, arch, &files, &written, &e);
		if (open_fds() != fds)
			r = 50;   /* a descriptor left open: a status of its own */
		FILE *o = fopen(mf, "w");
		fputs(e.msg, o);
		fclose(o);
		_exit(r + 1);
	}
	int st;
	waitpid(pid, &st, WUNTRACED);
	*stopped = WIFSTOPPED(st);
	if (*stopped) {
		if (strcmp(how, "appear") == 0) {
			int fd = open(arc("q-step_5.tar.zst"), O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd >= 0 && (write(fd, "x", 1) != 1 || close(fd) != 0))
				diag("cannot write %s", arc("q-step_5.tar.zst"));
		} else if (strcmp(how, "shrink") == 0) {
			if (truncate(f, 3) != 0)
				diag("truncate: %s", strerror(errno));
		} else {
			FILE *o = fopen(f, strcmp(how, "grow") == 0 ? "a" : "r+");
			fputs(strcmp(how, "grow") == 0 ? "x" : "ABCDEFGHIJ", o);
			fclose(o);
		}
		kill(pid, SIGCONT);
		waitpid(pid, &st, 0);
	}
	snprintf(msg, size, "%s", file_text(mf));
	return WIFEXITED(st) ? WEXITSTATUS(st) - 1 : 100 + st;
}

/*
 * A file that changes while it is archived (grows, shrinks, other bytes of
 * the same size) at each call in turn: the archive is published only as
 * read back whole; where the change falls between writing and reading
 * back, -1 saying so, no archive, no temporary. An archive of the same
 * name that appears meanwhile (another gc) is never replaced: -1, said.
 */
static void changed(const char *how, const char *says)
{
	char msg[1100];
	int bad = 0, said = 0;
	long k;
	for (k = 1; k < 200; k++) {
		int stopped, r = changed_at(k, how, msg, sizeof msg, &stopped);
		if (r == 0 && strstr(members(arc("q-step_5.tar.zst")), "(unreadable)"))
			bad++, diag("%s at call %ld: published unreadable", how, k);
		if (r == -1) {
			said += strstr(msg, says) != NULL;
			if (strcmp(how, "appear") == 0 && strcmp(file_text(arc("q-step_5.tar.zst")), "x") != 0)
				bad++, diag("at call %ld: %s: the archive that appeared was replaced", k, msg);
			if (strcmp(dir_names(arch), strcmp(how, "appear") == 0 ? "q-step_5.tar.zst" : "") != 0)
				bad++, diag("%s at call %ld: %s left %s", how, k, msg, dir_names(arch));
		} else if (r != 0) {
			bad++, diag("%s at call %ld: status %d: %s", how, k, r, msg);
		}
		if (!stopped)
			break;
	}
	ok(bad == 0 && said > 0, "%s %ss while archived, at each of %ld calls: said (\"%s\" %d times), "
	   "nothing left", strcmp(how, "appear") ? "a file that" : "an archive that", how, k - 1, says, said);
}

static void clean_tmp(void)
{
	struct err e = { 0 };
	shell("rm -rf %s && mkdir -p %s", arch, arch);
	shell("cd %s && touch .q-step_0.tar.zst.1a2b .q-step_12.3.tar.zst.x .q-step_0.tar.zst "
	      ".qq-step_0.tar.zst.x .p-step_0.tar.zst.x q-step_0.tar.zst", arch);
	int r = steparc_clean_tmp(q, arch, &e);
	ok(r == 0 && strcmp(dir_names(arch), ".p-step_0.tar.zst.x .q-step_0.tar.zst .qq-step_0.tar.zst.x q-step_0.tar.zst") == 0,
	   "clean_tmp removes the queue's archive temporaries only: %s", dir_names(arch));
	ok(steparc_clean_tmp(q, "/nonexistent/arch", &e) == 0, "and is content when there is no directory");
	for (long n = 1; n <= 2; n++) {
		shell("touch %s/.q-step_0.tar.zst.1a2b", arch);
		fsys_test_fail_at(n, ENOSPC);
		int r = steparc_clean_tmp(q, arch, &e);
		fsys_test_fail_at(0, 0);
		ok(r == -1 && e.errnum == ENOSPC && strstr(e.msg, arch), "clean_tmp's call %ld failing: -1, said: %s", n, e.msg);
	}
}

static void queue_name(void)
{
	char b[64];
	ok(strcmp(steparc_queue_name("/s/rollouts//", b, sizeof b), "rollouts") == 0, "queue name: trailing '/' dropped");
	ok(strcmp(steparc_queue_name("q", b, sizeof b), "q") == 0, "queue name of a bare name");
	ok(strcmp(steparc_queue_name("/", b, sizeof b), "") == 0, "queue name of /: empty");
}

int main(void)
{
	char sig[16];
	snprintf(sig, sizeof sig, "%d", SIGSTOP);   /* read at the first call: fsys_test_crash_at then holds, not exits */
	setenv("GRPO_FSYS_CRASH_SIGNAL", sig, 1);
	snprintf(top, sizeof top, "/tmp/test_steparc.%d", (int)getpid());
	snprintf(q, sizeof q, "%s/q", top);
	snprintf(arch, sizeof arch, "%s/arch", top);
	shell("rm -rf %s && mkdir -p %s", top, q);
	first_and_later();
	refused();
	failures(0);
	failures(1);
	many();
	changed("grow", "shorter than");
	changed("shrink", "shrank while being archived");
	changed("shrink", "differs from");
	changed("change", "differs from");
	changed("appear", "appeared while being written (two gc at once?); not replaced");
	clean_tmp();
	queue_name();
	shell("rm -rf %s", top);
	return tap_done();
}
