/*
 * test_fsys: fsys_mkdirs against another process that removes the parent
 * it has just found, between that and its mkdir: as grpo-step's rank 0
 * removes an empty .grad after a step while rank 1 makes .grad/step_N for
 * the next. fsys's crash hook, with SIGSTOP, holds the child at that very
 * call while the parent removes the directory, so the race is run, not
 * waited for.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsys.h"
#include "../tap.h"

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* fsys_mkdirs(dir) in a child held before its first file system call (the
 * mkdir of dir itself, its parent being there) while removed is removed;
 * the child's exit status, 0 where dir was made. */
static int mkdirs_while_removed(const char *dir, const char *removed)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct err e;
		fsys_test_crash_at(1);   /* SIGSTOP (GRPO_FSYS_CRASH_SIGNAL, set in main) */
		if (fsys_mkdirs(dir, &e) < 0) {
			fprintf(stderr, "# %s\n", e.msg);
			_exit(1);
		}
		_exit(is_dir(dir) ? 0 : 2);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st))
		return -1;
	int removed_ok = rmdir(removed) == 0;
	kill(pid, SIGCONT);
	if (waitpid(pid, &st, 0) != pid || !removed_ok)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
	char top[] = "/tmp/test_fsys.XXXXXX", grad[64], dir[80], cmd[120];
	if (!mkdtemp(top))
		return 1;
	setenv("GRPO_FSYS_CRASH_SIGNAL", "19", 1);   /* SIGSTOP, read at the first call */
	snprintf(grad, sizeof grad, "%s/.grad", top);
	snprintf(dir, sizeof dir, "%s/step_2", grad);

	ok(mkdir(grad, 0755) == 0, "the parent is there when the child looks");
	is_int(mkdirs_while_removed(dir, grad), 0,
	       "fsys_mkdirs makes the parent again when it is removed before its mkdir, and the directory in it");
	ok(is_dir(dir), "%s is there", dir);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd) != 0)
		diag("could not remove %s", top);
	return tap_done();
}
