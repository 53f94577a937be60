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
 * second run leaves the step archived once over. clean_tmp removes only
 * the queue's archive temporaries; the queue's name drops trailing '/'.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsys.h"
#include "spool/steparc.h"
#include "../tap.h"

static char top[256], q[300], arch[300];

/* Names in dir, ' '-separated and sorted. */
static const char *ls(const char *dir)
{
	static char out[4096];
	struct dirent **v;
	out[0] = 0;
	int n = scandir(dir, &v, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", out[0] ? " " : "",
				 v[i]->d_name);
		free(v[i]);
	}
	if (n >= 0)
		free(v);
	return out;
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
 * queue's parent (top), byte for byte; "(unreadable)" or "(differs: M)".
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
	ok(strcmp(ls(arch), "q-step_0.tar.zst") == 0, "one archive, no temporary: %s", ls(arch));
	const char *m = members(arc("q-step_0.tar.zst"));
	ok(strcmp(m, "q/step_0/DONE:5 q/step_0/ckpt.bin:7 q/step_0/rank_0/a.zst:5 q/step_0/rank_0/b.zst:2 "
		     "q/step_0/rank_1/c.zst:3") == 0, "members, sizes and bytes, dot names left out: %s", m);
	shell("cp %s %s/first", arc("q-step_0.tar.zst"), top);

	r = steparc_write(q, 0, arch, &files, &written, &e);
	ok(r == 0 && files == 4 && written == 0 && strcmp(ls(arch), "q-step_0.tar.zst") == 0,
	   "again with nothing new: no archive (%d, %ld files, %ld written: %s)", r, files, written, ls(arch));

	/* made anew: a grown, b the same size with other bytes, d new */
	put("step_0/rank_0/a.zst", "aaaaaa");
	put("step_0/rank_0/b.zst", "BB");
	put("step_0/rank_1/d.zst", "dddd");
	r = steparc_write(q, 0, arch, &files, &written, &e);
	ok(r == 0 && files == 5 && written == 2, "a later archive: %d, %ld files, %ld written", r, files, written);
	ok(strcmp(ls(arch), "q-step_0.2.tar.zst q-step_0.tar.zst") == 0, "numbered .2: %s", ls(arch));
	m = members(arc("q-step_0.2.tar.zst"));
	ok(strcmp(m, "q/step_0/rank_0/a.zst:6 q/step_0/rank_1/d.zst:4") == 0,
	   "it holds the file of a new size and the new one, not the one of the same size: %s", m);
	ok(shell("cmp -s %s %s/first", arc("q-step_0.tar.zst"), top) == 0, "the first archive is untouched");

	put("step_0/rank_2/e.zst", "e");
	r = steparc_write(q, 0, arch, &files, &written, &e);
	m = members(arc("q-step_0.3.tar.zst"));
	ok(r == 0 && written == 1 && strcmp(m, "q/step_0/rank_2/e.zst:1") == 0, "then .3: %s", m);
	ok(strcmp(ls(arch), "q-step_0.2.tar.zst q-step_0.3.tar.zst q-step_0.tar.zst") == 0, "three archives: %s",
	   ls(arch));
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

/*
 * Each call of a first and of a later archive fails in turn: -1, ENOSPC, a
 * path named, no temporary; an archive published only whole (the failure
 * was after its rename); run again, the archives hold the step once over.
 */
static void failures(int later)
{
	const char *fresh = later ? "q/step_4/rank_1/c.zst:1" : "q/step_4/rank_0/a.zst:2 q/step_4/rank_0/b.zst:3";
	const char *name = later ? "q-step_4.2.tar.zst" : "q-step_4.tar.zst";
	const char *want = "q/step_4/rank_0/a.zst:2 q/step_4/rank_0/b.zst:3 q/step_4/rank_1/c.zst:1";
	int bad = 0, n;
	for (n = 1; n < 500; n++) {
		struct err e = { 0 };
		long files, written;
		shell("rm -rf %s %s/q/step_4", arch, top);
		put("step_4/rank_0/a.zst", "aa");
		put("step_4/rank_0/b.zst", "bbb");
		if (later && steparc_write(q, 4, arch, &files, &written, &e) != 0)
			bad++;
		put("step_4/rank_1/c.zst", "c");
		if (!later)
			shell("mv %s/q/step_4/rank_1 %s/rank_1", top, top);
		fsys_test_fail_at(n, ENOSPC);
		int r = steparc_write(q, 4, arch, &files, &written, &e);
		fsys_test_fail_at(0, 0);
		if (r == 0)
			break;
		if (r != -1 || e.errnum != ENOSPC || !strstr(e.msg, top))
			bad++, diag("call %d: %d, errno %d: %s", n, r, e.errnum, e.msg);
		if (strstr(ls(arch), ".q-step_4"))
			bad++, diag("call %d left a temporary: %s", n, ls(arch));
		if (access(arc(name), F_OK) == 0 && strcmp(members(arc(name)), fresh) != 0)
			bad++, diag("call %d published %s holding %s", n, name, members(arc(name)));
		if (!later)
			shell("mv %s/rank_1 %s/q/step_4/rank_1", top, top);
		if (steparc_write(q, 4, arch, &files, &written, &e) != 0 || strcmp(all_of_step4(), want) != 0)
			bad++, diag("call %d, run again: %s: %s", n, all_of_step4(), e.msg);
	}
	ok(bad == 0 && n > 5 && n < 500, "%s archive, each of its %d calls failing: said, no temporary, "
	   "nothing published partial; run again, the step archived once over", later ? "a later" : "a first", n - 1);
}

static void clean_tmp(void)
{
	struct err e = { 0 };
	shell("rm -rf %s && mkdir -p %s", arch, arch);
	shell("cd %s && touch .q-step_0.tar.zst.1a2b .q-step_12.3.tar.zst.x .q-step_0.tar.zst "
	      ".qq-step_0.tar.zst.x .p-step_0.tar.zst.x q-step_0.tar.zst", arch);
	int r = steparc_clean_tmp(q, arch, &e);
	ok(r == 0 && strcmp(ls(arch), ".p-step_0.tar.zst.x .q-step_0.tar.zst .qq-step_0.tar.zst.x q-step_0.tar.zst") == 0,
	   "clean_tmp removes the queue's archive temporaries only: %s", ls(arch));
	ok(steparc_clean_tmp(q, "/nonexistent/arch", &e) == 0, "and is content when there is no directory");
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
	snprintf(top, sizeof top, "/tmp/test_steparc.%d", (int)getpid());
	snprintf(q, sizeof q, "%s/q", top);
	snprintf(arch, sizeof arch, "%s/arch", top);
	shell("rm -rf %s && mkdir -p %s", top, q);
	first_and_later();
	refused();
	failures(0);
	failures(1);
	clean_tmp();
	queue_name();
	shell("rm -rf %s", top);
	return tap_done();
}
