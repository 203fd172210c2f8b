/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules of an access picture, checked in one place. See picture.h.
 */
#include "picture.h"

/* clang-format off */
G_DEFINE_QUARK(vr-picture-error-quark, vr_picture_error)
/* clang-format on */

static gboolean check_intervals(uint64_t sample_interval_us, uint64_t aggr_interval_us,
				GError **error)
{
	if (sample_interval_us == 0) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_INTERVALS,
			    "the picture's sample_interval_us is 0: it must be above 0");
		return FALSE;
	}
	if (aggr_interval_us < sample_interval_us ||
	    aggr_interval_us > VR_PICTURE_MAX_AGGR_INTERVAL_US) {
		g_set_error(
			error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_INTERVALS,
			"the picture's aggregation interval aggr_interval_us is %" G_GUINT64_FORMAT
			": it must be from sample_interval_us (%" G_GUINT64_FORMAT
			") to %" G_GUINT64_FORMAT,
			aggr_interval_us, sample_interval_us, VR_PICTURE_MAX_AGGR_INTERVAL_US);
		return FALSE;
	}
	if (aggr_interval_us / sample_interval_us > VR_PICTURE_MAX_NR_ACCESSES) {
		g_set_error(
			error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_INTERVALS,
			"the picture's aggr_interval_us / sample_interval_us is %" G_GUINT64_FORMAT
			": it must be at most %u",
			aggr_interval_us / sample_interval_us, VR_PICTURE_MAX_NR_ACCESSES);
		return FALSE;
	}
	return TRUE;
}

/* Checks region @i against the one before it (@prev, NULL for the first), the
 * access count bound and the guest's physical end (0: none). */
static gboolean check_region(const struct vr_picture_region *r,
			     const struct vr_picture_region *prev, guint i,
			     uint64_t max_nr_accesses, uint64_t phys_end_bytes, GError **error)
{
	if (r->end <= r->start) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_EMPTY,
			    "region %u [0x%" G_GINT64_MODIFIER "x, 0x%" G_GINT64_MODIFIER
			    "x) is empty: its end must be above its start",
			    i, r->start, r->end);
		return FALSE;
	}
	if (prev && r->start < prev->end) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_ORDER,
			    "region %u starts at 0x%" G_GINT64_MODIFIER
			    "x, below the end of region %u (0x%" G_GINT64_MODIFIER
			    "x): regions must be sorted and must not overlap",
			    i, r->start, i - 1, prev->end);
		return FALSE;
	}
	if (r->nr_accesses > max_nr_accesses) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_ACCESSES,
			    "region %u has nr_accesses %u, more than the %" G_GUINT64_FORMAT
			    " sampling intervals of an aggregation interval",
			    i, r->nr_accesses, max_nr_accesses);
		return FALSE;
	}
	if (phys_end_bytes && r->end > phys_end_bytes) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_BEYOND,
			    "region %u ends at byte %" G_GUINT64_FORMAT
			    ", beyond the guest's memory, which ends at byte %" G_GUINT64_FORMAT,
			    i, r->end, phys_end_bytes);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_picture_check_at(const GArray *regions, uint64_t sample_interval_us,
			     uint64_t aggr_interval_us, const struct vr_picture_bound *bound,
			     guint *region, GError **error)
{
	uint64_t total_bytes = 0, max_nr_accesses;
	guint n = regions ? regions->len : 0;
	guint dummy;

	if (!region)
		region = &dummy;
	if (!check_intervals(sample_interval_us, aggr_interval_us, error)) {
		*region = VR_PICTURE_NO_REGION;
		return FALSE;
	}
	if (n > VR_PICTURE_MAX_REGIONS) {
		g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_TOO_MANY,
			    "the picture has %u regions, more than %d", n, VR_PICTURE_MAX_REGIONS);
		*region = VR_PICTURE_NO_REGION;
		return FALSE;
	}
	max_nr_accesses = aggr_interval_us / sample_interval_us;
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *r =
			&g_array_index(regions, struct vr_picture_region, i);

		if (!check_region(r, i ? r - 1 : NULL, i, max_nr_accesses,
				  bound ? bound->phys_end_bytes : 0, error)) {
			*region = i;
			return FALSE;
		}
		/* Sorted, disjoint regions below 2^64 add up to less than 2^64. */
		total_bytes += r->end - r->start;
		if (bound && total_bytes > bound->mem_bytes) {
			g_set_error(error, VR_PICTURE_ERROR, VR_PICTURE_ERROR_TOO_LARGE,
				    "the picture's regions 0..%u cover %" G_GUINT64_FORMAT
				    " bytes, more than the guest's %" G_GUINT64_FORMAT
				    " bytes of memory",
				    i, total_bytes, bound->mem_bytes);
			*region = i;
			return FALSE;
		}
	}
	return TRUE;
}

gboolean vr_picture_check(const GArray *regions, uint64_t sample_interval_us,
			  uint64_t aggr_interval_us, const struct vr_picture_bound *bound,
			  GError **error)
{
	return vr_picture_check_at(regions, sample_interval_us, aggr_interval_us, bound, NULL,
				   error);
}
