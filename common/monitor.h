/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Region-based access monitoring with adaptive regions (SEMANTICS.md §1).
 *
 * A monitoring context (struct vr_ctx) watches one or more targets. A target
 * is a set of page-aligned address ranges, covered by regions. Every sampling
 * interval one random page of every region is checked through an access
 * source (struct vr_access_ops); every aggregation interval regions are aged,
 * merged, published to listeners and split. Cost is O(nr_regions) per sample,
 * never O(memory size).
 *
 * Pure: no I/O, no clock, no global state. The caller drives the context with
 * vr_ctx_tick() at the times vr_ctx_next_tick_us() asks for; randomness comes
 * from a seed given at creation.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "page.h"
#include "rng.h"

#define VR_MONITOR_ERROR (vr_monitor_error_quark())
GQuark vr_monitor_error_quark(void);

/**
 * enum vr_monitor_error - error codes in the VR_MONITOR_ERROR domain.
 * @VR_MONITOR_ERROR_INVALID_ATTR: an attribute is out of its allowed range.
 * @VR_MONITOR_ERROR_INVALID_RANGE: a target range is empty, unaligned,
 *	overlapping another, or there are too many of them.
 * @VR_MONITOR_ERROR_STATE: the call does not fit the context's state
 *	(e.g. a tick before vr_ctx_start()).
 * @VR_MONITOR_ERROR_SOURCE: the access source failed.
 */
enum vr_monitor_error {
	VR_MONITOR_ERROR_INVALID_ATTR,
	VR_MONITOR_ERROR_INVALID_RANGE,
	VR_MONITOR_ERROR_STATE,
	VR_MONITOR_ERROR_SOURCE,
};

/**
 * struct vr_range - a half-open address range [@start, @end), in bytes.
 */
struct vr_range {
	uint64_t start;
	uint64_t end;
};

/**
 * struct vr_region - a part of a target that one sampled page stands for.
 * @start:		first byte, page-aligned.
 * @end:		one past the last byte, page-aligned, > @start.
 * @sampling_addr:	the page checked this sampling interval; chosen by the
 *			engine, read by the access source.
 * @accessed:		written by the access source's check(): whether the page
 *			at @sampling_addr was accessed since prepare().
 * @nr_accesses:	sampling intervals of the current aggregation window in
 *			which an access was seen, 0..max_nr_accesses.
 * @last_nr_accesses:	@nr_accesses of the previous window.
 * @age:		aggregation intervals for which the access frequency has
 *			stayed about the same (see SEMANTICS.md §1).
 *
 * Regions live by value in their target's sorted array: pointers to them are
 * valid only until the next merge, split or range update.
 */
struct vr_region {
	uint64_t start;
	uint64_t end;
	uint64_t sampling_addr;
	uint32_t nr_accesses;
	uint32_t last_nr_accesses;
	uint32_t age;
	bool accessed;
};

/**
 * vr_region_size() - size of @r in bytes.
 */
static inline uint64_t vr_region_size(const struct vr_region *r)
{
	return r->end - r->start;
}

/**
 * struct vr_target - one monitored address space (a guest's RAM, a process).
 * @id:		caller's identifier, passed back to the access source.
 * @ranges:	the target's ranges, sorted, disjoint, page-aligned
 *		(struct vr_range). Owned by the target.
 * @regions:	the regions covering exactly @ranges, sorted and disjoint
 *		(struct vr_region). Owned by the target.
 */
struct vr_target {
	uint64_t id;
	GArray *ranges;
	GArray *regions;
};

/**
 * vr_target_region() - the @i-th region of @t, in address order.
 */
static inline struct vr_region *vr_target_region(const struct vr_target *t, guint i)
{
	return &g_array_index(t->regions, struct vr_region, i);
}

static inline guint vr_target_nr_regions(const struct vr_target *t)
{
	return t->regions->len;
}

/**
 * vr_target_size() - bytes covered by @t's ranges.
 */
uint64_t vr_target_size(const struct vr_target *t);

/**
 * struct vr_access_ops - an access source: where access checks come from.
 * @name:	short name for logs, e.g. "sim", "agent", "host-damon".
 * @update:	optional; re-reads @t's ranges (memory hotplug, balloon, new
 *		mappings) and appends them, as struct vr_range, to the empty
 *		@ranges. The engine validates and applies them
 *		(vr_target_set_ranges()). Called at start and every
 *		ops_update_interval. On failure, or when the new ranges are
 *		invalid, the target keeps its old ranges and the tick reports
 *		the error.
 * @prepare:	makes the page at each region's @sampling_addr "old" (clears its
 *		accessed bit, starts its dirty tracking) at @now_us.
 * @check:	sets each region's @accessed: was its @sampling_addr page
 *		accessed since prepare()? @now_us is the time of the check.
 * @cleanup:	optional; releases @data when the context is freed.
 *
 * The analogue of the kernel's struct damon_operations. prepare() and check()
 * get a contiguous array of regions of one target, so that a source can batch
 * its work; the engine never knows where the answers come from.
 */
struct vr_access_ops {
	const char *name;
	gboolean (*update)(void *data, const struct vr_target *t, GArray *ranges, GError **error);
	void (*prepare)(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
			uint64_t now_us);
	void (*check)(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
		      uint64_t now_us);
	void (*cleanup)(void *data);
};

/**
 * struct vr_monitor_attrs - monitoring attributes.
 * @sample_interval_us:	 time between access checks, in us (default 5 ms).
 * @aggr_interval_us:	 length of an aggregation window, in us (default
 *			 100 ms); a multiple of @sample_interval_us.
 * @ops_update_interval_us: how often the access source re-reads the targets'
 *			 ranges, in us (default 1 s); a multiple of
 *			 @sample_interval_us, 0 for never.
 * @min_nr_regions:	 floor of the region count at start and for merging
 *			 (default 10, at least 3).
 * @max_nr_regions:	 ceiling of the region count (default 1000).
 *
 * max_nr_accesses = @aggr_interval_us / @sample_interval_us.
 */
struct vr_monitor_attrs {
	uint64_t sample_interval_us;
	uint64_t aggr_interval_us;
	uint64_t ops_update_interval_us;
	uint32_t min_nr_regions;
	uint32_t max_nr_regions;
};

/* The published DAMON defaults (SEMANTICS.md §1). */
#define VR_MONITOR_ATTRS_DEFAULT                                                                   \
	((struct vr_monitor_attrs){                                                                \
		.sample_interval_us = 5000,                                                        \
		.aggr_interval_us = 100000,                                                        \
		.ops_update_interval_us = 1000000,                                                 \
		.min_nr_regions = 10,                                                              \
		.max_nr_regions = 1000,                                                            \
	})

/**
 * vr_monitor_attrs_validate() - check @attrs, naming the first bad field.
 *
 * Refuses: a zero interval, @aggr_interval_us < @sample_interval_us or not a
 * multiple of it, @ops_update_interval_us not a multiple of
 * @sample_interval_us, @min_nr_regions < 3, @max_nr_regions < @min_nr_regions,
 * a max_nr_accesses above 2^16.
 */
gboolean vr_monitor_attrs_validate(const struct vr_monitor_attrs *attrs, GError **error);

static inline uint32_t vr_monitor_attrs_max_nr_accesses(const struct vr_monitor_attrs *attrs)
{
	return (uint32_t)(attrs->aggr_interval_us / attrs->sample_interval_us);
}

/**
 * vr_ranges_validate() - check that @nr @ranges can form a target.
 * @max_nr_regions: a target may have at most this many ranges.
 *
 * Every range must be page-aligned and non-empty; ranges must not overlap
 * (they need not be given sorted). Errors name the offending index.
 */
gboolean vr_ranges_validate(const struct vr_range *ranges, size_t nr, uint32_t max_nr_regions,
			    GError **error);

struct vr_ctx;

/**
 * vr_listener_fn - called with every aggregated snapshot.
 * @ctx:	the context; its regions hold this window's @nr_accesses and
 *		updated ages (after the merge, before the reset and split).
 * @now_us:	time of the aggregation.
 * @user_data:	as given to vr_ctx_add_listener().
 *
 * Must not change the context.
 */
typedef void (*vr_listener_fn)(const struct vr_ctx *ctx, uint64_t now_us, void *user_data);

/**
 * vr_ctx_new() - a new monitoring context with default attributes.
 * @ops:	the access source; not copied, must outlive the context.
 * @ops_data:	passed to every @ops call; released with @ops->cleanup (if set)
 *		when the context is freed.
 * @seed:	seed of the context's random choices.
 *
 * Return: a context owned by the caller (vr_ctx_free()).
 */
struct vr_ctx *vr_ctx_new(const struct vr_access_ops *ops, void *ops_data, uint64_t seed);

void vr_ctx_free(struct vr_ctx *ctx);
typedef struct vr_ctx vr_ctx;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_ctx, vr_ctx_free)

/**
 * vr_ctx_set_attrs() - validate and apply @attrs; nothing changes on error.
 *
 * Allowed while running (DAMON's commit): intervals take effect from the
 * next tick, region bounds from the next aggregation. Running regions keep
 * what they learnt: nr_accesses and last_nr_accesses are scaled by the new
 * max_nr_accesses over the old, ages by the old aggr_interval over the new.
 */
gboolean vr_ctx_set_attrs(struct vr_ctx *ctx, const struct vr_monitor_attrs *attrs, GError **error);

const struct vr_monitor_attrs *vr_ctx_attrs(const struct vr_ctx *ctx);

/**
 * vr_ctx_add_target() - add a target with @nr @ranges (validated).
 *
 * Return: the target, owned by @ctx, or NULL with @error set. A target added
 * while running gets its regions at once (evenly split).
 */
struct vr_target *vr_ctx_add_target(struct vr_ctx *ctx, uint64_t id, const struct vr_range *ranges,
				    size_t nr, GError **error);

guint vr_ctx_nr_targets(const struct vr_ctx *ctx);
struct vr_target *vr_ctx_target(const struct vr_ctx *ctx, guint i);

/**
 * vr_ctx_nr_regions() - regions of all targets.
 */
guint vr_ctx_nr_regions(const struct vr_ctx *ctx);

/**
 * vr_ctx_add_listener() - call @fn with every aggregated snapshot.
 */
void vr_ctx_add_listener(struct vr_ctx *ctx, vr_listener_fn fn, void *user_data);

/**
 * vr_ctx_start() - lay out the initial regions and schedule the first tick.
 * @now_us: the current time.
 *
 * Calls the source's update() once, then splits every target evenly into at
 * least min_nr_regions regions (each at most target_size / min_nr_regions,
 * page-aligned, at least one page; fewer when the target has fewer pages).
 * Before the start a target has one region per range.
 */
gboolean vr_ctx_start(struct vr_ctx *ctx, uint64_t now_us, GError **error);

/**
 * vr_ctx_next_tick_us() - when vr_ctx_tick() wants to run next.
 */
uint64_t vr_ctx_next_tick_us(const struct vr_ctx *ctx);

/**
 * vr_ctx_tick() - do the work due at @now_us.
 *
 * One sampling step: check the samples prepared by the previous tick, then,
 * every max_nr_accesses samples, aggregate (age and merge, publish, reset,
 * split), every ops_update_interval re-read the ranges, and finally prepare
 * the next samples. Calling it early does nothing; calling it late runs one
 * step (missed samples are not made up).
 */
gboolean vr_ctx_tick(struct vr_ctx *ctx, uint64_t now_us, GError **error);

/**
 * vr_ctx_nr_aggregations() - aggregation windows completed so far.
 */
uint64_t vr_ctx_nr_aggregations(const struct vr_ctx *ctx);

/**
 * vr_ctx_rng() - the context's random generator (for tests and sources that
 * must share the seed).
 */
struct vr_rng *vr_ctx_rng(struct vr_ctx *ctx);

/*
 * Building blocks of an aggregation, exposed for tests and tools. The engine
 * calls them in this order from vr_ctx_tick().
 */

/**
 * vr_target_set_ranges() - replace @t's ranges; regions follow.
 * @max_nr_regions: the ranges count limit (the context's max_nr_regions).
 *
 * Regions that intersect a new range are trimmed to it and keep their
 * counters; parts of new ranges that no region covered get fresh regions
 * (nr_accesses 0, age 0); regions outside every new range are dropped.
 * Nothing changes on error.
 */
gboolean vr_target_set_ranges(struct vr_target *t, const struct vr_range *ranges, size_t nr,
			      uint32_t max_nr_regions, GError **error);

/**
 * vr_target_split_evenly() - replace @t's regions with regions of at most
 * @sz_piece bytes (page-aligned, >= one page), evenly sized per range.
 */
void vr_target_split_evenly(struct vr_target *t, uint64_t sz_piece);

/**
 * vr_target_update_ages() - update each region's age for the window just closed:
 * 0 when |nr_accesses - last_nr_accesses| > @thres, else +1.
 */
void vr_target_update_ages(struct vr_target *t, uint32_t thres);

/**
 * vr_target_merge_regions() - one merge walk in address order.
 *
 * A region merges into its left neighbour when they are adjacent, their
 * nr_accesses differ by at most @thres and the merged size is at most
 * @sz_limit. nr_accesses, last_nr_accesses and age of the result are the
 * size-weighted averages (truncated).
 */
void vr_target_merge_regions(struct vr_target *t, uint32_t thres, uint64_t sz_limit);

/**
 * vr_target_split_regions() - split every region of at least two pages into
 * @nr_pieces (2 or 3) at distinct random page-aligned points between 10% and
 * 90% of its size (fewer pieces when fewer such points exist). Split-off
 * pieces copy the counters and age of their region.
 */
void vr_target_split_regions(struct vr_target *t, unsigned nr_pieces, struct vr_rng *rng);

/**
 * vr_ctx_merge_regions() - age and merge all targets as SEMANTICS.md §1 says:
 * ages on the first walk, then walks with a doubling threshold while the
 * count exceeds max_nr_regions and thres / 2 < max_nr_accesses.
 * Return: the threshold of the first walk.
 */
uint32_t vr_ctx_merge_regions(struct vr_ctx *ctx);

/**
 * vr_ctx_split_regions() - split all targets when the count is below
 * max_nr_regions / 2 (into 3 when the count did not change since the
 * previous split and is below max_nr_regions / 3).
 */
void vr_ctx_split_regions(struct vr_ctx *ctx);

/**
 * vr_ctx_sz_limit() - the merge size limit: total size / min_nr_regions,
 * at least one page.
 */
uint64_t vr_ctx_sz_limit(const struct vr_ctx *ctx);
