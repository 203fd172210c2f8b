/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Injected randomness for libvrcore.
 *
 * The engine never calls rand() or reads /dev/urandom: every random choice
 * (sampling address, split point) comes from a struct vr_rng that the caller
 * seeds, so that a run is reproducible for a seed.
 */
#pragma once

#include <stdint.h>

/**
 * struct vr_rng - a small, fast pseudo-random generator (xoshiro256**).
 * @s: generator state; never all zero once seeded.
 *
 * Not for cryptography. Owned by whoever embeds it; no allocation.
 */
struct vr_rng {
	uint64_t s[4];
};

/**
 * vr_rng_seed() - seed @rng deterministically from @seed (any value, 0 too).
 */
void vr_rng_seed(struct vr_rng *rng, uint64_t seed);

/**
 * vr_rng_next() - the next 64 random bits.
 */
uint64_t vr_rng_next(struct vr_rng *rng);

/**
 * vr_rng_below() - a random integer in [0, @bound), @bound > 0.
 *
 * Uses Lemire's multiply-shift reduction: unbiased enough for sampling and
 * O(1) with no division.
 */
uint64_t vr_rng_below(struct vr_rng *rng, uint64_t bound);

/**
 * vr_rng_range() - a random integer in [@lo, @hi), @lo < @hi.
 */
static inline uint64_t vr_rng_range(struct vr_rng *rng, uint64_t lo, uint64_t hi)
{
	return lo + vr_rng_below(rng, hi - lo);
}

/**
 * vr_hash64() - a stateless 64-bit mix (splitmix64 finalizer) of @x.
 *
 * For values that must be a pure function of their inputs, e.g. the phase of
 * a simulated page's accesses.
 */
static inline uint64_t vr_hash64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}
