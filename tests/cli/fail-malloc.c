/*
 * fail-malloc.c: an LD_PRELOAD stand-in for glibc's allocator that makes
 * memory run out where a test says, failing the call with ENOMEM; every
 * other call goes to glibc's own. Three ways, by the environment:
 *
 *   FAIL_MALLOC_SIZE=S [FAIL_MALLOC_AFTER=K]  every malloc of S bytes
 *       after the first K of that size (a size no other allocation asks
 *       for picks out the one a test means, as collect-oom.t does);
 *   FAIL_MALLOC_NTH=N  the N-th call (from 1) of malloc, calloc, realloc,
 *       posix_memalign, aligned_alloc, memalign or valloc, once (strdup,
 *       fopen and the like go through malloc; realloc to 0 bytes frees and
 *       is not counted);
 *   FAIL_MALLOC_COUNT=FILE  writes to FILE, at exit, how many such calls
 *       the run made;
 *   FAIL_MALLOC_BACKTRACE=1  prints where the call failed on standard
 *       error (for a person finding the caller; link with -rdynamic).
 *
 * Only calls made once main has started are counted: libraries allocate
 * in their constructors (OpenBLAS, libcurl), before a program could say
 * anything about it, so those are not points a sweep can fail. The
 * program's children (a reward program, grpo-spool consume's command) are
 * left alone: the variables, LD_PRELOAD with them, leave the environment
 * as main starts. tests/cli/malloc-sweep.t sweeps N over every tool.
 * glibc only; not under ASan, which must own malloc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static size_t fail_size = (size_t)-1, fail_after, fail_nth;
static size_t calls, seen_of_size;
static int counting, backtraces;
static char count_file[4096];

static size_t env_size(const char *name, size_t dflt)
{
	const char *s = getenv(name);
	return s ? (size_t)strtoull(s, NULL, 10) : dflt;
}

/* 1 when this call is to fail: the N-th counted call, or one of the size */
static int fails(size_t n)
{
	if (!counting)
		return 0;
	size_t k = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	if (k == fail_nth || (n == fail_size && __atomic_fetch_add(&seen_of_size, 1, __ATOMIC_RELAXED) >= fail_after)) {
		if (backtraces) {
			void *at[32];
			counting = 0;
			backtrace_symbols_fd(at, backtrace(at, 32), 2);
			counting = 1;
		}
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	return fails(n) ? NULL : __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
	return fails((size_t)-2) ? NULL : __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
	if (p && n == 0)
		return __libc_realloc(p, n);
	return fails((size_t)-2) ? NULL : __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
	return fails((size_t)-2) ? NULL : __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}

void *valloc(size_t n)
{
	return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

static void write_count(void)
{
	counting = 0;
	FILE *f = fopen(count_file, "w");
	if (f) {
		fprintf(f, "%zu\n", calls);
		fclose(f);
	}
}

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn real_main;

/* main, once the environment has been read and cleared for children */
static int counted_main(int argc, char **argv, char **envp)
{
	fail_size = env_size("FAIL_MALLOC_SIZE", (size_t)-1);
	fail_after = env_size("FAIL_MALLOC_AFTER", 0);
	fail_nth = env_size("FAIL_MALLOC_NTH", 0);
	backtraces = getenv("FAIL_MALLOC_BACKTRACE") != NULL;
	const char *cf = getenv("FAIL_MALLOC_COUNT");
	if (cf) {
		snprintf(count_file, sizeof count_file, "%s", cf);
		atexit(write_count);
	}
	unsetenv("FAIL_MALLOC_SIZE");
	unsetenv("FAIL_MALLOC_AFTER");
	unsetenv("FAIL_MALLOC_NTH");
	unsetenv("FAIL_MALLOC_COUNT");
	unsetenv("FAIL_MALLOC_BACKTRACE");
	unsetenv("LD_PRELOAD");
	counting = 1;
	return real_main(argc, argv, envp);
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end)
{
	start_fn real_start = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
	real_main = main;
	return real_start(counted_main, argc, argv, init, fini, rtld_fini, stack_end);
}
