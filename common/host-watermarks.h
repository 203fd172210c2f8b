/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host watermarks: does the host need memory from its guests this window?
 *
 * DAMON's watermarks (SEMANTICS.md §2.3) applied to the host as a whole, plus
 * memory pressure: the daemon reads a snapshot of the host (/proc/meminfo,
 * /proc/pressure/memory) at the edge and asks vr_host_needs_memory(), which
 * is pure. When the host does not need memory, the fleet takes nothing and
 * the guests' agents only run their own policies.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "scheme.h"

#define VR_HOST_WATERMARKS_ERROR (vr_host_watermarks_error_quark())
GQuark vr_host_watermarks_error_quark(void);

/**
 * enum vr_host_watermarks_error - error codes in VR_HOST_WATERMARKS_ERROR.
 * @VR_HOST_WATERMARKS_ERROR_INVALID: a field is out of range (the message
 *	names it and its value).
 */
enum vr_host_watermarks_error {
	VR_HOST_WATERMARKS_ERROR_INVALID,
};

/* free_mem_rate is per thousand of total memory: 0..1000. */
#define VR_HOST_FREE_MEM_RATE_MAX 1000U

/* PSI shares of time in basis points: 10000 = 100.00%. */
#define VR_HOST_PSI_BP_MAX 10000U

/**
 * struct vr_host_snapshot - what the host looks like now.
 * @mem_total_bytes:	 MemTotal, bytes.
 * @mem_available_bytes: MemAvailable (what can be allocated without
 *			 swapping), bytes.
 * @psi_some_avg10_bp:	 memory PSI "some" avg10: share of the last 10 s in
 *			 which at least one task stalled on memory, in basis
 *			 points of time (the kernel's "12.34" -> 1234;
 *			 0..10000).
 * @psi_full_avg10_bp:	 memory PSI "full" avg10: every non-idle task
 *			 stalled at once, basis points as above.
 */
struct vr_host_snapshot {
	uint64_t mem_total_bytes;
	uint64_t mem_available_bytes;
	uint32_t psi_some_avg10_bp;
	uint32_t psi_full_avg10_bp;
	uint64_t swap_total_bytes;
	uint64_t swap_free_bytes;
};

/**
 * struct vr_host_watermarks - when the host needs memory.
 * @metric:		VR_WMARK_NONE (always needed) or VR_WMARK_FREE_MEM_RATE
 *			(MemAvailable per thousand of MemTotal, 0..1000).
 * @high, @mid, @low:	free_mem_rate thresholds, per-mille, 1000 >= high >=
 *			mid >= low (ignored with metric none). Above @high the
 *			host has enough; below @low vreclaim steps aside for
 *			the kernel's own reclaim; it starts below @mid
 *			and, once started, keeps going up to @high.
 * @psi_some_threshold_bp: memory PSI "some" avg10 at or above which the host
 *			needs memory whatever the free rate says, basis points
 *			(1..10000); 0 = off.
 * @psi_full_threshold_bp: the same for PSI "full" avg10; 0 = off.
 */
struct vr_host_watermarks {
	enum vr_wmark_metric metric;
	uint32_t high;
	uint32_t mid;
	uint32_t low;
	uint32_t psi_some_threshold_bp;
	uint32_t psi_full_threshold_bp;
};

/**
 * vr_host_watermarks_validate() - check @wm, naming the first bad field and
 * its value: an unknown metric, a threshold above 1000 per-mille or not
 * high >= mid >= low (with metric free_mem_rate), a PSI threshold above
 * 10000 bp. Errors are VR_HOST_WATERMARKS_ERROR_INVALID.
 */
gboolean vr_host_watermarks_validate(const struct vr_host_watermarks *wm, GError **error);

/**
 * vr_host_free_mem_rate() - MemAvailable per thousand of MemTotal, truncated,
 * 0..1000 (MemAvailable above MemTotal counts as MemTotal). 0 when MemTotal is
 * 0 (a snapshot that could not be read says nothing is free).
 */
uint32_t vr_host_free_mem_rate(const struct vr_host_snapshot *snap);

/**
 * vr_host_psi_exceeded() - is a PSI threshold of @wm that is on (not 0) met
 * or exceeded by @snap?
 */
bool vr_host_psi_exceeded(const struct vr_host_watermarks *wm, const struct vr_host_snapshot *snap);

/**
 * vr_host_needs_memory() - does the host need memory from its guests now?
 * @wm:		the watermarks (valid).
 * @snap:	the host now.
 * @was_needed:	the answer of the previous window (false at start).
 *
 * TRUE when a PSI threshold is met (vr_host_psi_exceeded()), whatever the free
 * rate says; otherwise TRUE with metric none; otherwise DAMON's hysteresis on
 * the free rate (vr_watermarks_next_state() with @was_needed as the active
 * state): above high or below low no; from not needed to needed only below
 * mid (and at or above low); needed stays needed up to high.
 */
bool vr_host_needs_memory(const struct vr_host_watermarks *wm, const struct vr_host_snapshot *snap,
			  bool was_needed);

/**
 * enum vr_host_memory_state - why the host needs memory from its guests this
 * window, or why not: what vr_host_needs_memory() answered, explained for the
 * operator (status, metrics).
 * @VR_HOST_MEMORY_UNKNOWN:	/proc/meminfo could not be read: nothing is
 *				known (the previous answer holds).
 * @VR_HOST_MEMORY_ALWAYS:	needs: watermark-metric none.
 * @VR_HOST_MEMORY_PSI:		needs: a PSI threshold is met.
 * @VR_HOST_MEMORY_BELOW_MID:	needs: the free rate is below mid (and at or
 *				above low).
 * @VR_HOST_MEMORY_UP_TO_HIGH:	needs: reclaim started below mid and goes on
 *				up to high (the rate is between mid and high).
 * @VR_HOST_MEMORY_ABOVE_MID:	does not need: the rate is at or above mid
 *				(and at most high) and reclaim had not started.
 * @VR_HOST_MEMORY_ABOVE_HIGH:	does not need: the rate is above high.
 * @VR_HOST_MEMORY_BELOW_LOW:	does not need: the rate is below low, where
 *				vreclaim steps aside for the kernel's own
 *				reclaim (every share is 0 at once).
 */
enum vr_host_memory_state {
	VR_HOST_MEMORY_UNKNOWN,
	VR_HOST_MEMORY_ALWAYS,
	VR_HOST_MEMORY_PSI,
	VR_HOST_MEMORY_BELOW_MID,
	VR_HOST_MEMORY_UP_TO_HIGH,
	VR_HOST_MEMORY_ABOVE_MID,
	VR_HOST_MEMORY_ABOVE_HIGH,
	VR_HOST_MEMORY_BELOW_LOW,
};

#define VR_HOST_MEMORY_NR_STATES (VR_HOST_MEMORY_BELOW_LOW + 1)

/**
 * vr_host_memory_state() - why @needed (vr_host_needs_memory() of @wm and
 * @snap) is what it is. Pure. Never VR_HOST_MEMORY_UNKNOWN: the caller says
 * that when it has no snapshot.
 */
enum vr_host_memory_state vr_host_memory_state(const struct vr_host_watermarks *wm,
					       const struct vr_host_snapshot *snap, bool needed);

/**
 * vr_host_memory_state_name() - @state's name in status and metrics:
 * "unknown", "always", "psi", "below-mid", "up-to-high", "above-mid",
 * "above-high", "below-low"; "?" for a value out of range. Static.
 */
const char *vr_host_memory_state_name(enum vr_host_memory_state state);

/* host-pageout leaves this part of the host's swap free (and at least
 * VR_HOST_SWAP_RESERVE_MIN_BYTES): the kernel's own reclaim needs room to
 * swap too, and an almost full swap is where OOM kills begin. */
#define VR_HOST_SWAP_RESERVE_DIVISOR   64
#define VR_HOST_SWAP_RESERVE_MIN_BYTES (16ULL << 20)

/**
 * vr_host_pageout_room() - how many bytes host-pageout may still page out
 * to the host's swap (@snap's SwapTotal and SwapFree): SwapFree less a
 * reserve of max(SwapTotal / VR_HOST_SWAP_RESERVE_DIVISOR,
 * VR_HOST_SWAP_RESERVE_MIN_BYTES); 0 without swap or when the swap is that
 * full. MADV_PAGEOUT into a full swap is accepted by the kernel and frees
 * nothing (anonymous memory has nowhere to go): the host would count bytes
 * it never got.
 */
uint64_t vr_host_pageout_room(const struct vr_host_snapshot *snap);

/**
 * vr_host_swap_full_reason() - what host-pageout says when
 * vr_host_pageout_room() of @snap is 0, for the operator: "host-pageout
 * waits: the host's swap is full (...)" with SwapFree, SwapTotal and the
 * reserve in KiB, or "... the host has no swap" without any. Owned (g_free).
 */
char *vr_host_swap_full_reason(const struct vr_host_snapshot *snap);
