/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "rng.h"

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void vr_rng_seed(struct vr_rng *rng, uint64_t seed)
{
	/* splitmix64 expands one word into the four words of state */
	for (int i = 0; i < 4; i++) {
		seed += 0x9e3779b97f4a7c15ULL;
		rng->s[i] = vr_hash64(seed);
	}
	if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]))
		rng->s[0] = 1;
}

uint64_t vr_rng_next(struct vr_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t vr_rng_below(struct vr_rng *rng, uint64_t bound)
{
	return (uint64_t)(((unsigned __int128)vr_rng_next(rng) * bound) >> 64);
}
