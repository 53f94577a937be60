/*
 * xorshift.h: the random inputs of the tests and benchmarks: Marsaglia's
 * xorshift64 (shifts 13, 7, 17), one stream per file, so that every run
 * draws the same numbers. Header-only, as tap.h; a file picks its stream
 * by defining XORSHIFT_SEED (nonzero) before including it.
 *
 *   xorshift()   the next 64 bits
 *   xorshift32() their high 32 bits (the better mixed half)
 *   urand()      uniform in [0, 1), 53 bits
 */
#ifndef XORSHIFT_H
#define XORSHIFT_H

#include <stdint.h>

#ifndef XORSHIFT_SEED
#define XORSHIFT_SEED 0x9e3779b97f4a7c15ull
#endif

static uint64_t rng = XORSHIFT_SEED;

static inline uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static inline uint32_t xorshift32(void)
{
	return (uint32_t)(xorshift() >> 32);
}

static inline double urand(void)
{
	return (xorshift() >> 11) * (1.0 / 9007199254740992.0);
}

#endif
