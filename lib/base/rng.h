/*
 * rng.h: splitmix64, the small counter-based generator the model's random
 * initialisation and the sampler draw from. Counter-based: the state after
 * n draws is the start plus n * 0x9e3779b97f4a7c15, so a draw can be taken
 * without the ones before it (generate.h's streams, the GPU sampler).
 */
#ifndef GRPO_BASE_RNG_H
#define GRPO_BASE_RNG_H

#include <stdint.h>

/* splitmix64's finalizer: every bit of x moves every bit of the result
 * (also a hash of a word, as the importers' ids and records use it). */
static inline uint64_t splitmix64_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t splitmix64(uint64_t *s)
{
	return splitmix64_mix(*s += 0x9e3779b97f4a7c15ull);
}

#endif
