/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host watermarks: the free-memory hysteresis and the PSI override. See
 * host-watermarks.h.
 */
#include "host-watermarks.h"

/* clang-format off */
G_DEFINE_QUARK(vr-host-watermarks-error-quark, vr_host_watermarks_error)
/* clang-format on */

static gboolean invalid(GError **error, const char *field, uint32_t value, const char *allowed)
{
	g_set_error(error, VR_HOST_WATERMARKS_ERROR, VR_HOST_WATERMARKS_ERROR_INVALID,
		    "host watermarks: %s = %u: %s", field, value, allowed);
	return FALSE;
}

gboolean vr_host_watermarks_validate(const struct vr_host_watermarks *wm, GError **error)
{
	if (wm->metric != VR_WMARK_NONE && wm->metric != VR_WMARK_FREE_MEM_RATE)
		return invalid(error, "metric", (uint32_t)wm->metric,
			       "it must be none or free_mem_rate");
	if (wm->metric == VR_WMARK_FREE_MEM_RATE) {
		if (wm->high > VR_HOST_FREE_MEM_RATE_MAX)
			return invalid(error, "high", wm->high,
				       "a free_mem_rate is per-mille, at most 1000");
		if (wm->mid > wm->high)
			return invalid(error, "mid", wm->mid, "it must be at most high");
		if (wm->low > wm->mid)
			return invalid(error, "low", wm->low, "it must be at most mid");
	}
	if (wm->psi_some_threshold_bp > VR_HOST_PSI_BP_MAX)
		return invalid(error, "psi_some_threshold_bp", wm->psi_some_threshold_bp,
			       "a PSI share is at most 10000 bp (100%); 0 turns it off");
	if (wm->psi_full_threshold_bp > VR_HOST_PSI_BP_MAX)
		return invalid(error, "psi_full_threshold_bp", wm->psi_full_threshold_bp,
			       "a PSI share is at most 10000 bp (100%); 0 turns it off");
	return TRUE;
}

uint32_t vr_host_free_mem_rate(const struct vr_host_snapshot *snap)
{
	uint64_t avail_bytes;

	if (!snap->mem_total_bytes)
		return 0;
	avail_bytes = MIN(snap->mem_available_bytes, snap->mem_total_bytes);
	return (uint32_t)((unsigned __int128)avail_bytes * VR_HOST_FREE_MEM_RATE_MAX /
			  snap->mem_total_bytes);
}

bool vr_host_psi_exceeded(const struct vr_host_watermarks *wm, const struct vr_host_snapshot *snap)
{
	return (wm->psi_some_threshold_bp &&
		snap->psi_some_avg10_bp >= wm->psi_some_threshold_bp) ||
	       (wm->psi_full_threshold_bp && snap->psi_full_avg10_bp >= wm->psi_full_threshold_bp);
}

bool vr_host_needs_memory(const struct vr_host_watermarks *wm, const struct vr_host_snapshot *snap,
			  bool was_needed)
{
	const struct vr_watermarks w = {
		.metric = wm->metric,
		.high = wm->high,
		.mid = wm->mid,
		.low = wm->low,
	};

	if (vr_host_psi_exceeded(wm, snap))
		return true;
	return vr_watermarks_next_state(&w, was_needed, vr_host_free_mem_rate(snap));
}

/* The reserve vr_host_pageout_room() keeps free in @snap's swap, bytes. */
static uint64_t swap_reserve(const struct vr_host_snapshot *snap)
{
	return MAX(snap->swap_total_bytes / VR_HOST_SWAP_RESERVE_DIVISOR,
		   VR_HOST_SWAP_RESERVE_MIN_BYTES);
}

uint64_t vr_host_pageout_room(const struct vr_host_snapshot *snap)
{
	uint64_t reserve = swap_reserve(snap);
	uint64_t free_bytes = MIN(snap->swap_free_bytes, snap->swap_total_bytes);

	return free_bytes > reserve ? free_bytes - reserve : 0;
}

char *vr_host_swap_full_reason(const struct vr_host_snapshot *snap)
{
	if (!snap->swap_total_bytes)
		return g_strdup("host-pageout waits: the host has no swap");
	return g_strdup_printf(
		"host-pageout waits: the host's swap is full (SwapFree %" G_GUINT64_FORMAT
		" of SwapTotal %" G_GUINT64_FORMAT " KiB, %" G_GUINT64_FORMAT
		" KiB of it kept free for the kernel)",
		(guint64)(MIN(snap->swap_free_bytes, snap->swap_total_bytes) / 1024),
		(guint64)(snap->swap_total_bytes / 1024), (guint64)(swap_reserve(snap) / 1024));
}

enum vr_host_memory_state vr_host_memory_state(const struct vr_host_watermarks *wm,
					       const struct vr_host_snapshot *snap, bool needed)
{
	uint32_t rate = vr_host_free_mem_rate(snap);

	if (vr_host_psi_exceeded(wm, snap))
		return VR_HOST_MEMORY_PSI;
	if (wm->metric == VR_WMARK_NONE)
		return VR_HOST_MEMORY_ALWAYS;
	if (rate < wm->low)
		return VR_HOST_MEMORY_BELOW_LOW;
	if (rate > wm->high)
		return VR_HOST_MEMORY_ABOVE_HIGH;
	if (!needed)
		return VR_HOST_MEMORY_ABOVE_MID;
	return rate < wm->mid ? VR_HOST_MEMORY_BELOW_MID : VR_HOST_MEMORY_UP_TO_HIGH;
}

const char *vr_host_memory_state_name(enum vr_host_memory_state state)
{
	static const char *const names[VR_HOST_MEMORY_NR_STATES] = {
		[VR_HOST_MEMORY_UNKNOWN] = "unknown",
		[VR_HOST_MEMORY_ALWAYS] = "always",
		[VR_HOST_MEMORY_PSI] = "psi",
		[VR_HOST_MEMORY_BELOW_MID] = "below-mid",
		[VR_HOST_MEMORY_UP_TO_HIGH] = "up-to-high",
		[VR_HOST_MEMORY_ABOVE_MID] = "above-mid",
		[VR_HOST_MEMORY_ABOVE_HIGH] = "above-high",
		[VR_HOST_MEMORY_BELOW_LOW] = "below-low",
	};

	return (unsigned)state < VR_HOST_MEMORY_NR_STATES ? names[state] : "?";
}
