/*
 * test_tap_bail: tap.h's TAP_BAIL. The test runs itself as a child with
 * three assertions, the second failing, and reads what the child printed:
 * with TAP_BAIL=1 it stops after the failure's diag with status 1, with
 * TAP_BAIL=0 (or unset) it runs all three and prints the plan.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "tap.h"

static int child(int bare)
{
	ok(1, "first");
	if (bare) {
		if (!ok(0, "second"))
			diag("  the caller's diag");
	} else {
		is_int(1, 2, "second");
	}
	ok(1, "third");
	return tap_done();
}

/* The child's output in out, its exit status returned. */
static int run_child(const char *self, const char *bail, int bare, char *out, size_t size)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "TAP_BAIL='%s' '%s' %s", bail, self, bare ? "bare" : "is");
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	size_t n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		return child(strcmp(argv[1], "bare") == 0);
	if (strlen(argv[0]) > 4000 || strchr(argv[0], '\''))
		skip_all("the test's own path cannot be quoted for sh");
	char out[4096];

	int st = run_child(argv[0], "1", 0, out, sizeof out);
	is_int(st, 1, "TAP_BAIL=1, is_int failing: status 1");
	ok(strstr(out, "not ok 2 - second\n# ") != NULL, "TAP_BAIL=1, is_int: the not ok line and its diag");
	ok(strstr(out, "got 1, want 2") != NULL, "TAP_BAIL=1, is_int: the diag shows the values");
	ok(strstr(out, "third") == NULL && strstr(out, "1..") == NULL,
	   "TAP_BAIL=1, is_int: nothing runs after the failure, no plan");

	st = run_child(argv[0], "1", 1, out, sizeof out);
	is_int(st, 1, "TAP_BAIL=1, bare ok failing: status 1");
	ok(strstr(out, "not ok 2 - second\n#   the caller's diag\n") != NULL,
	   "TAP_BAIL=1, bare ok: the caller's diag still printed");
	ok(strstr(out, "third") == NULL, "TAP_BAIL=1, bare ok: the next assertion not run");

	st = run_child(argv[0], "0", 0, out, sizeof out);
	is_int(st, 1, "TAP_BAIL=0: status 1 (a failure)");
	ok(strstr(out, "ok 3 - third\n1..3\n") != NULL, "TAP_BAIL=0: all three run, then the plan");

	st = run_child(argv[0], "", 1, out, sizeof out);
	ok(st == 1 && strstr(out, "ok 3 - third\n1..3\n") != NULL, "TAP_BAIL empty: all three run");
	return tap_done();
}
