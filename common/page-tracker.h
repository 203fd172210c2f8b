/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The page-granular baseline tracker: checks every page every interval, the
 * way idle page tracking and Accessed-bit scanners do, through the same
 * access-source vtable as the region engine. It is the reference for the
 * engine's cost (O(memory size) per interval) and accuracy (every page known).
 *
 * Per page it keeps the number of the scan that last found it accessed, so its
 * memory is 4 bytes per 4 KiB page.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "monitor.h"

struct vr_page_tracker;
typedef struct vr_page_tracker vr_page_tracker;

/**
 * vr_page_tracker_new() - a tracker over @nr @ranges (validated as a target's
 * ranges, without a count limit).
 * @ops, @ops_data:  the access source; borrowed (the tracker never calls
 *		     @ops->cleanup).
 * @interval_us:     time between two scans of every page, > 0.
 * Return: owned by the caller (vr_page_tracker_free()), or NULL with @error.
 */
struct vr_page_tracker *vr_page_tracker_new(const struct vr_access_ops *ops, void *ops_data,
					    const struct vr_range *ranges, size_t nr,
					    uint64_t interval_us, GError **error);
void vr_page_tracker_free(struct vr_page_tracker *pt);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_page_tracker, vr_page_tracker_free)

/**
 * vr_page_tracker_start() - make every page old at @now_us.
 */
void vr_page_tracker_start(struct vr_page_tracker *pt, uint64_t now_us);

/**
 * vr_page_tracker_scan() - check every page (accessed since the last scan?)
 * and make it old again, at @now_us. Return: pages found accessed.
 */
uint64_t vr_page_tracker_scan(struct vr_page_tracker *pt, uint64_t now_us);

/**
 * vr_page_tracker_scan_part() - like vr_page_tracker_scan() for at most
 * @max_pages pages from where the previous partial scan stopped; for
 * measuring the cost of a scan too large to finish.
 * Return: pages scanned.
 */
uint64_t vr_page_tracker_scan_part(struct vr_page_tracker *pt, uint64_t now_us, uint64_t max_pages);

uint64_t vr_page_tracker_nr_pages(const struct vr_page_tracker *pt);

/**
 * vr_page_tracker_idle_bytes() - bytes of the pages in [@start, @end) not
 * found accessed for at least @min_idle_us (by the last scan).
 */
uint64_t vr_page_tracker_idle_bytes(const struct vr_page_tracker *pt, uint64_t start, uint64_t end,
				    uint64_t min_idle_us);

/**
 * vr_page_tracker_idle_ranges() - the runs of pages idle for at least
 * @min_idle_us, merged, as a new GArray of struct vr_range (caller owns).
 */
GArray *vr_page_tracker_idle_ranges(const struct vr_page_tracker *pt, uint64_t min_idle_us);
