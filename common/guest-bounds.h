/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a guest can truthfully claim, from what the host knows: its memory
 * size and the time that passed. A guest's agent is untrusted; the numbers it
 * reports (bytes reclaimed, regions, memory) pass these bounds before the
 * daemon counts them.
 *
 * Pure: the caller passes the monotonic time.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * The fastest a guest reclaims, bytes/s: 16 GiB/s. An agent's policy
 * reclaims through one kernel thread per reclaimer (kdamond for a DAMON
 * scheme, the agent's memory.reclaim writer for the swap-cache release):
 * writing anonymous pages to swap runs at the swap device's speed (a virtio
 * disk, a few GB/s at best), dropping clean page cache at a few GB/s per
 * CPU. Four times the fastest of these leaves room for hardware to come,
 * while a guest claiming 1 TiB in 6 s (about 170 GiB/s, issue 16) is far
 * beyond it.
 */
#define VR_GUEST_MAX_RECLAIM_BYTES_PER_S ((uint64_t)16 << 30)

/*
 * A guest reclaims at most its whole memory in this time, s: 1. A page is
 * reclaimed again only after the guest touched it back in; a guest that
 * brought all its memory back every second while it was being reclaimed
 * would be thrashing, not giving. So a small guest's rate is bounded by its
 * size (a 512 MiB guest: 512 MiB/s), a large one's by
 * VR_GUEST_MAX_RECLAIM_BYTES_PER_S.
 */
#define VR_GUEST_RECLAIM_TURNOVER_S 1U

/**
 * vr_guest_max_reclaim_rate() - the fastest a guest of @guest_mem_bytes
 * (0: not known) can reclaim, bytes/s: min(VR_GUEST_MAX_RECLAIM_BYTES_PER_S,
 * @guest_mem_bytes / VR_GUEST_RECLAIM_TURNOVER_S), at least 1 MiB/s.
 */
uint64_t vr_guest_max_reclaim_rate(uint64_t guest_mem_bytes);

/**
 * struct vr_reclaim_bound - how many bytes a guest can have reclaimed by
 * now: a token bucket holding at most the guest's memory (all of it given
 * back at once), refilled at vr_guest_max_reclaim_rate(). So over any time
 * T a guest of M bytes is counted at most M + T x that rate.
 * @allowance_bytes:	bytes a claim may add now (after the last refill).
 *
 * Plain data: embed it; all zero is a bound that has seen nothing (its
 * first check starts it full).
 */
struct vr_reclaim_bound {
	uint64_t allowance_bytes;
	/* private: */
	bool started;
	int64_t last_us;
};

/**
 * vr_reclaim_bound_check() - may a guest claim @claimed_bytes more reclaimed
 * bytes at @now_us?
 * @b:			the guest's bound; updated.
 * @claimed_bytes:	the increase it claims, bytes.
 * @guest_mem_bytes:	its memory size, bytes (the bucket's size); 0 when not
 *			known: one second at the maximum rate then.
 * @now_us:		monotonic time, us. A time before the last one (a
 *			clock that went back) adds nothing.
 *
 * The bucket first refills by the time since the last check at
 * vr_guest_max_reclaim_rate(@guest_mem_bytes), up to @guest_mem_bytes (it
 * starts full at the first check); a claim within
 * the allowance is taken from it, a larger one takes nothing. Pure; O(1).
 *
 * Return: true when @claimed_bytes is within the bound (and was taken);
 * false when it is beyond: the claim cannot be true.
 */
bool vr_reclaim_bound_check(struct vr_reclaim_bound *b, uint64_t claimed_bytes,
			    uint64_t guest_mem_bytes, int64_t now_us);

/**
 * vr_u64_add_sat() - @a + @b, or UINT64_MAX when the sum does not fit: a
 * total that saturates instead of wrapping modulo 2^64.
 */
static inline uint64_t vr_u64_add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}
