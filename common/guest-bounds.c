/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bounds on what a guest claims: see guest-bounds.h.
 */
#include "guest-bounds.h"

/* The slowest rate vr_guest_max_reclaim_rate() gives, bytes/s. */
#define GUEST_MIN_RECLAIM_RATE ((uint64_t)1 << 20)

uint64_t vr_guest_max_reclaim_rate(uint64_t guest_mem_bytes)
{
	uint64_t rate = guest_mem_bytes / VR_GUEST_RECLAIM_TURNOVER_S;

	if (!guest_mem_bytes || rate > VR_GUEST_MAX_RECLAIM_BYTES_PER_S)
		rate = VR_GUEST_MAX_RECLAIM_BYTES_PER_S;
	return rate < GUEST_MIN_RECLAIM_RATE ? GUEST_MIN_RECLAIM_RATE : rate;
}

bool vr_reclaim_bound_check(struct vr_reclaim_bound *b, uint64_t claimed_bytes,
			    uint64_t guest_mem_bytes, int64_t now_us)
{
	uint64_t size = guest_mem_bytes ? guest_mem_bytes : VR_GUEST_MAX_RECLAIM_BYTES_PER_S;

	if (!b->started) {
		b->started = true;
		b->allowance_bytes = size;
		b->last_us = now_us;
	} else if (now_us > b->last_us) {
		/* 128 bits: years at 16 GiB/s do not fit in 64. */
		unsigned __int128 add =
			(unsigned __int128)((uint64_t)now_us - (uint64_t)b->last_us) *
			vr_guest_max_reclaim_rate(guest_mem_bytes) / 1000000U;
		unsigned __int128 sum = add + b->allowance_bytes;

		b->allowance_bytes = sum > size ? size : (uint64_t)sum;
		b->last_us = now_us;
	}
	if (b->allowance_bytes > size)
		b->allowance_bytes = size; /* the guest's memory shrank */
	if (claimed_bytes > b->allowance_bytes)
		return false;
	b->allowance_bytes -= claimed_bytes;
	return true;
}
