/*
 * tap.h: a tiny Test Anything Protocol harness for the unit tests.
 *
 *   ok(cond, "what it checks %d", x);   one test point
 *   is_int(got, want, "name");          with the values shown on failure
 *   is_float(got, want, tol, "name");
 *   skip_all("reason");                 when a needed input is absent
 *   skip("reason");                     one test not run (a GPU test on a machine without one)
 *   return tap_done();                  prints the plan, returns the exit status
 *   shell("rm -rf %s", dir)             system(3) of a formatted command: its status
 *   file_text(path)                     a small file's bytes as a string
 *   dir_names(dir)                      its entries' names, sorted, ' '-separated
 *
 * With TAP_BAIL set (not empty, not "0") the first failure ends the test
 * with status 1 (tools/mutate.py sets it: a mutant is killed by one failure,
 * the rest of the run is time wasted). is_int and is_float exit right after
 * their diag; a bare ok() exits at the next ok(), skip() or tap_done(), so
 * that the diag lines its caller prints after it still come out.
 *
 * Header-only, so each test is a single file with its own main().
 */
#ifndef TAP_H
#define TAP_H

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed, tap_bail_pending;

static int tap_bail_on(void)
{
	const char *b = getenv("TAP_BAIL");
	return b && *b && strcmp(b, "0") != 0;
}

/* Under TAP_BAIL, after a failure: stop here. */
static void tap_bail(void)
{
	if (tap_bail_pending) {
		printf("# TAP_BAIL: stopped at the first failure (test %d)\n", tap_n);
		fflush(stdout);
		exit(1);
	}
}

static int tap_vok(int cond, const char *fmt, va_list ap)
{
	tap_bail();
	tap_n++;
	if (!cond) {
		tap_failed++;
		tap_bail_pending = tap_bail_on();
	}
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

static int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = tap_vok(cond, fmt, ap);
	va_end(ap);
	return r;
}

#define diag(...) (printf("# "), printf(__VA_ARGS__), putchar('\n'))

#define is_int(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!ok(g_ == w_, __VA_ARGS__)) diag("  got %lld, want %lld (%s:%d)", g_, w_, __FILE__, __LINE__); \
	tap_bail(); \
} while (0)

#define is_float(got, want, tol, ...) do { \
	double g_ = (double)(got), w_ = (double)(want); \
	if (!ok(fabs(g_ - w_) <= (tol), __VA_ARGS__)) \
		diag("  got %.9g, want %.9g, tol %g (%s:%d)", g_, w_, (double)(tol), __FILE__, __LINE__); \
	tap_bail(); \
} while (0)

static void skip_all(const char *why) __attribute__((unused, noreturn));
static void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

/* One test not run, with the reason: counted, never as a pass. */
static void skip(const char *why) __attribute__((unused));
static void skip(const char *why)
{
	tap_bail();
	printf("ok %d # SKIP %s\n", ++tap_n, why);
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
	tap_bail();
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* The first 4 KiB of the file at path as a string (the same buffer each
 * call), or "(absent)" when it cannot be opened. */
static const char *file_text(const char *path) __attribute__((unused));
static const char *file_text(const char *path)
{
	static char b[4096];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
	b[n] = 0;
	if (f)
		fclose(f);
	return f ? b : "(absent)";
}

/* The names in dir but . and .., sorted, ' '-separated ("" when none or no
 * dir), in a static buffer. */
static const char *dir_names(const char *dir) __attribute__((unused));
static const char *dir_names(const char *dir)
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

/* system(3) of a command formatted into 4 KiB: its status, 0 when it exited 0. */
static int shell(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int shell(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

#endif
