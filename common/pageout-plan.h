/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pageout plan: which guest-physical ranges of a guest without an agent
 * the host pages out this window, from the host's access picture of the
 * guest and the domain's pageout scheme, within the engine's quota.
 *
 * This is DAMOS prioritization done once over a picture: the regions the
 * scheme's access pattern selects (the same selection as the fleet's
 * histogram, vr_fleet_region_score()) are taken coldest first until the quota
 * is spent. hostd/actions/host-pageout.c then translates the plan to host ranges of
 * the QEMU process and pages them out. Pure: no I/O, no clock.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "fleet-quota.h"
#include "protocol.h"
#include "scheme.h"

/**
 * struct vr_pageout_range - a guest-physical range to page out.
 * @start:	its first byte, guest-physical, page-aligned
 *		(VR_PAGE_SIZE).
 * @end:	one past its last byte, page-aligned, > @start.
 * @score:	the cold score of the picture region it comes from under the
 *		scheme (vr_cold_score()), 0..VR_MAX_SCORE; higher is colder.
 */
struct vr_pageout_range {
	uint64_t start;
	uint64_t end;
	uint32_t score;
};

/**
 * vr_pageout_plan() - the guest-physical ranges to page out this window.
 * @picture:		the guest's access picture (struct vr_proto_regions of
 *			struct vr_picture_region: guest-physical, sorted, not
 *			overlapping; NULL regions for none). Untrusted: checked
 *			with vr_picture_check(). Borrowed.
 * @scheme:		the domain's scheme; its action must be pageout. Its
 *			access pattern selects the regions and its quota
 *			weights score them; its quota sizes are not read (the
 *			window's quota is @quota_bytes). Borrowed.
 * @guest_memory_bytes:	the guest's memory size, bytes: the picture may cover
 *			at most this many bytes.
 * @quota_bytes:	the most bytes the plan may hold: 0 plans nothing,
 *			G_MAXUINT64 means no limit.
 * @ranges:		out: a new GArray of struct vr_pageout_range, owned by
 *			the caller; set to NULL on error.
 *
 * The regions @scheme's pattern selects (hot, too young or wrongly sized ones
 * are left out) are ordered coldest first: highest cold score first, ties by
 * address, lower first. Each is trimmed inward to whole pages (start rounded
 * up, end rounded down; one left empty is dropped), so no byte outside a
 * selected region is planned. They are then taken in that order until
 * @quota_bytes is spent: the range at which the quota runs out keeps only its
 * lower part, so the plan holds exactly min(@quota_bytes, selected bytes)
 * rounded down to whole pages, the selected bytes counted after trimming.
 * Ranges are disjoint (they come from disjoint regions). Pure;
 * O(n log n) for n regions.
 *
 * Return: TRUE with @ranges (possibly empty). FALSE with @error:
 * VR_FLEET_ERROR_INVALID (naming the scheme and its action) when the action is
 * not pageout; VR_PICTURE_ERROR (naming the region index or interval and
 * the broken rule) when the picture breaks a rule of vr_picture_check() with
 * the bound @guest_memory_bytes: an empty, out-of-order or overlapping region,
 * a region with more accesses than sampling intervals, intervals out of range,
 * more than VR_PICTURE_MAX_REGIONS regions, or more bytes than
 * @guest_memory_bytes.
 */
gboolean vr_pageout_plan(const struct vr_proto_regions *picture, const struct vr_scheme *scheme,
			 uint64_t guest_memory_bytes, uint64_t quota_bytes, GArray **ranges,
			 GError **error);

/**
 * vr_pageout_plan_bytes() - the bytes of the @ranges of a plan (struct
 * vr_pageout_range; NULL for none), summed.
 */
uint64_t vr_pageout_plan_bytes(const GArray *ranges);
