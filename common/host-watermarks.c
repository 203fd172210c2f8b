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

uint64_t vr_host_pageout_room(const struct vr_host_snapshot *snap)
{
	uint64_t reserve = MAX(snap->swap_total_bytes / VR_HOST_SWAP_RESERVE_DIVISOR,
			       VR_HOST_SWAP_RESERVE_MIN_BYTES);
	uint64_t free_bytes = MIN(snap->swap_free_bytes, snap->swap_total_bytes);

	return free_bytes > reserve ? free_bytes - reserve : 0;
}
