/*
 * bench.h: what every benchmark shares, header-only (as tests/tap.h):
 *
 *   now()         a monotonic clock, in seconds
 *   cmp_double()  qsort's order for doubles, for the medians of repeats
 */
#ifndef BENCH_H
#define BENCH_H

#include <time.h>

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#endif
