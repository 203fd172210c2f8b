/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rules of an access picture: the one check every reader of an
 * untrusted picture (a guest agent's get-regions reply, an access source's
 * regions, the pictures the fleet quota and the pageout plan score) runs
 * before using it. A picture is a guest's regions (struct vr_picture_region,
 * guest-physical addresses) with the sampling and aggregation intervals they
 * were counted over.
 *
 * Pure: no I/O. Its own error domain, so that common/ needs nothing above it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "picture-region.h"

/*
 * The most regions a picture holds: DAMON's own region limit is larger, but
 * a picture is a summary a guest sends in one line (the protocol's
 * VR_PROTO_MAX_REGIONS is the same number, and may never be larger: a
 * get-regions reply is checked as a picture).
 */
#define VR_PICTURE_MAX_REGIONS 512

/*
 * The longest aggregation interval a picture may claim, us: one hour. An age
 * counted in aggregation intervals then stays within 64 bits, and no sane
 * monitor aggregates for longer.
 */
#define VR_PICTURE_MAX_AGGR_INTERVAL_US ((uint64_t)3600 * 1000 * 1000)

/*
 * The most sampling intervals per aggregation interval a picture may claim:
 * the monitor's own bound (vr_monitor_attrs_validate()).
 */
#define VR_PICTURE_MAX_NR_ACCESSES 65536U

#define VR_PICTURE_ERROR (vr_picture_error_quark())
GQuark vr_picture_error_quark(void);

/**
 * enum vr_picture_error - the rule a refused picture broke (one code per
 * rule, so that a caller or a test can tell them apart).
 * @VR_PICTURE_ERROR_INTERVALS:	sample_interval_us is 0, aggr_interval_us is
 *				below it or above
 *				VR_PICTURE_MAX_AGGR_INTERVAL_US, or their
 *				ratio is above VR_PICTURE_MAX_NR_ACCESSES.
 * @VR_PICTURE_ERROR_TOO_MANY:	more than VR_PICTURE_MAX_REGIONS regions.
 * @VR_PICTURE_ERROR_EMPTY:	a region's end is not above its start.
 * @VR_PICTURE_ERROR_ORDER:	a region starts below the end of the one
 *				before it (unsorted or overlapping).
 * @VR_PICTURE_ERROR_ACCESSES:	a region's nr_accesses is above
 *				aggr_interval_us / sample_interval_us.
 * @VR_PICTURE_ERROR_BEYOND:	a region ends above the guest's physical
 *				address space (struct vr_picture_bound).
 * @VR_PICTURE_ERROR_TOO_LARGE:	the regions cover more bytes than the guest
 *				has memory (struct vr_picture_bound).
 */
enum vr_picture_error {
	VR_PICTURE_ERROR_INTERVALS,
	VR_PICTURE_ERROR_TOO_MANY,
	VR_PICTURE_ERROR_EMPTY,
	VR_PICTURE_ERROR_ORDER,
	VR_PICTURE_ERROR_ACCESSES,
	VR_PICTURE_ERROR_BEYOND,
	VR_PICTURE_ERROR_TOO_LARGE,
};

/**
 * struct vr_picture_bound - what the host knows of the guest a picture
 * comes from: the guest-memory bound of its regions.
 * @mem_bytes:		the guest's memory size, bytes: the regions cover at
 *			most this many bytes in total (0: no region passes).
 * @phys_end_bytes:	the end of the guest's physical RAM (the highest RAM
 *			address + 1, above @mem_bytes when the RAM has holes),
 *			bytes: no region ends above it. 0: not known (not
 *			checked).
 *
 * Plain data. A caller that knows nothing of the guest passes no bound (NULL)
 * to vr_picture_check().
 */
struct vr_picture_bound {
	uint64_t mem_bytes;
	uint64_t phys_end_bytes;
};

/**
 * vr_picture_check() - does a picture follow the rules?
 * @regions:		struct vr_picture_region; NULL for none. Untrusted.
 * @sample_interval_us:	the picture's sampling interval, us: above 0.
 * @aggr_interval_us:	its aggregation interval, us: from
 *			@sample_interval_us to VR_PICTURE_MAX_AGGR_INTERVAL_US,
 *			and at most VR_PICTURE_MAX_NR_ACCESSES sampling
 *			intervals long.
 * @bound:		the guest's bound (struct vr_picture_bound); NULL when
 *			the caller knows none. Borrowed.
 *
 * The rules, each with its own error code (enum vr_picture_error): the
 * intervals above; at most VR_PICTURE_MAX_REGIONS regions; each region
 * non-empty (start < end), sorted by address and not overlapping the one
 * before it, with nr_accesses at most @aggr_interval_us /
 * @sample_interval_us; none ending above @bound's physical end; all together
 * no larger than @bound's memory. Regions are checked in address order and
 * the first broken rule is reported. Pure; O(number of regions).
 *
 * Return: TRUE when the picture may be used; FALSE with @error
 * (VR_PICTURE_ERROR, the code of the rule) naming the rule and the interval,
 * or the region's index and values, otherwise.
 */
gboolean vr_picture_check(const GArray *regions, uint64_t sample_interval_us,
			  uint64_t aggr_interval_us, const struct vr_picture_bound *bound,
			  GError **error);

/*
 * The index vr_picture_check_at() gives for a rule of the whole picture (the
 * intervals, the number of regions) rather than of one region.
 */
#define VR_PICTURE_NO_REGION G_MAXUINT

/**
 * vr_picture_check_at() - vr_picture_check(), also saying where the picture
 * broke its rule, for a caller that names the place in its own terms (the
 * agent protocol names the JSON member: "return.regions[3].end").
 * @regions, @sample_interval_us, @aggr_interval_us, @bound: as for
 *			vr_picture_check().
 * @region:		where to store, on failure, the index in @regions of
 *			the region at fault: the region that is empty
 *			(VR_PICTURE_ERROR_EMPTY, its end), starts below the
 *			one before (_ORDER, its start), counts too many
 *			accesses (_ACCESSES, its nr_accesses), ends too high
 *			(_BEYOND, its end) or brings the total above the
 *			guest's memory (_TOO_LARGE); VR_PICTURE_NO_REGION for
 *			_INTERVALS and _TOO_MANY. Untouched on success. NULL
 *			when not wanted.
 * @error:		as for vr_picture_check(); its code is the rule.
 *
 * Return: as vr_picture_check().
 */
gboolean vr_picture_check_at(const GArray *regions, uint64_t sample_interval_us,
			     uint64_t aggr_interval_us, const struct vr_picture_bound *bound,
			     guint *region, GError **error);
