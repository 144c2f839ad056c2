// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * deterministic PRNG of the core (splitmix64).  Seeded by
 * the embedder so the simulator and the tests are reproducible; the
 * kernel seeds it from get_random_u64().
 */
#include "mroce_core.h"

void mroce_prng_seed(struct mroce_prng *r, u64 seed)
{
	r->s = seed;
}

u64 mroce_prng_next(struct mroce_prng *r)
{
	u64 z;

	r->s += 0x9e3779b97f4a7c15ULL;
	z = r->s;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

u32 mroce_prng_below(struct mroce_prng *r, u32 n)
{
	/* Multiply-shift: unbiased enough for n far below 2^32. */
	return (u32)(((mroce_prng_next(r) >> 32) * (u64)n) >> 32);
}
