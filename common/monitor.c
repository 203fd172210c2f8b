/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Region-based access monitoring with adaptive regions: SEMANTICS.md §1.
 * Attributes, ranges, targets and their regions (age, merge, split), and the
 * context's attributes and aggregation steps; the context's life and tick,
 * which also applies the schemes, are in ctx.c, above this file.
 */
#include "monitor.h"

#include "ctx-private.h"
#include "picture.h"

#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-monitor-error-quark, vr_monitor_error)
/* clang-format on */

static uint64_t align_down(uint64_t x, uint64_t a)
{
	return x - x % a;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return align_down(x + a - 1, a);
}

#define SWAP_U64(a, b)                                                                             \
	do {                                                                                       \
		uint64_t tmp_ = (a);                                                               \
		(a) = (b);                                                                         \
		(b) = tmp_;                                                                        \
	} while (0)

static uint32_t abs_diff(uint32_t a, uint32_t b)
{
	return a > b ? a - b : b - a;
}

/* (a * sz_a + b * sz_b) / (sz_a + sz_b), truncated, without overflow. */
static uint32_t weighted_avg(uint32_t a, uint64_t sz_a, uint32_t b, uint64_t sz_b)
{
	unsigned __int128 sum = (unsigned __int128)a * sz_a + (unsigned __int128)b * sz_b;

	return (uint32_t)(sum / ((unsigned __int128)sz_a + sz_b));
}

/* ---- attributes and ranges ---- */

gboolean vr_monitor_attrs_validate(const struct vr_monitor_attrs *a, GError **error)
{
	if (a->sample_interval_us == 0) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "sample_interval_us = 0: must be at least 1 us");
		return FALSE;
	}
	if (a->aggr_interval_us < a->sample_interval_us) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "aggr_interval_us = %" G_GUINT64_FORMAT
			    ": must be at least sample_interval_us (%" G_GUINT64_FORMAT ")",
			    a->aggr_interval_us, a->sample_interval_us);
		return FALSE;
	}
	if (a->aggr_interval_us % a->sample_interval_us != 0) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "aggr_interval_us = %" G_GUINT64_FORMAT
			    ": must be a multiple of sample_interval_us (%" G_GUINT64_FORMAT ")",
			    a->aggr_interval_us, a->sample_interval_us);
		return FALSE;
	}
	/* The monitor's picture must be one an access picture can carry
	 * (common/picture.h): the agent sends it, the host checks it. */
	if (a->aggr_interval_us / a->sample_interval_us > VR_PICTURE_MAX_NR_ACCESSES) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "aggr_interval_us = %" G_GUINT64_FORMAT
			    ": at most %u samples per aggregation window are allowed "
			    "(sample_interval_us is %" G_GUINT64_FORMAT ")",
			    a->aggr_interval_us, VR_PICTURE_MAX_NR_ACCESSES, a->sample_interval_us);
		return FALSE;
	}
	if (a->aggr_interval_us > VR_PICTURE_MAX_AGGR_INTERVAL_US) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "aggr_interval_us = %" G_GUINT64_FORMAT
			    ": an aggregation window is at most %" G_GUINT64_FORMAT " us (1 hour)",
			    a->aggr_interval_us, VR_PICTURE_MAX_AGGR_INTERVAL_US);
		return FALSE;
	}
	if (a->ops_update_interval_us % a->sample_interval_us != 0) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "ops_update_interval_us = %" G_GUINT64_FORMAT
			    ": must be 0 or a multiple of sample_interval_us (%" G_GUINT64_FORMAT
			    ")",
			    a->ops_update_interval_us, a->sample_interval_us);
		return FALSE;
	}
	if (a->min_nr_regions < 3) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "min_nr_regions = %u: must be at least 3", a->min_nr_regions);
		return FALSE;
	}
	if (a->max_nr_regions < a->min_nr_regions) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "max_nr_regions = %u: must be at least min_nr_regions (%u)",
			    a->max_nr_regions, a->min_nr_regions);
		return FALSE;
	}
	return TRUE;
}

/* Orders indices into a range array by the ranges' start. */
static gint range_index_cmp(gconstpointer a, gconstpointer b, gpointer user_data)
{
	const struct vr_range *ranges = user_data;
	uint64_t x = ranges[*(const guint *)a].start, y = ranges[*(const guint *)b].start;

	return x < y ? -1 : x > y;
}

/* Validates and returns the ranges sorted, or NULL with @error set. */
static GArray *ranges_sorted(const struct vr_range *ranges, size_t nr, uint32_t max_nr_regions,
			     GError **error)
{
	g_autoptr(GArray) order = NULL;
	g_autoptr(GArray) sorted = NULL;

	if (nr > max_nr_regions) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_RANGE,
			    "%zu ranges: a target may have at most max_nr_regions (%u) ranges", nr,
			    max_nr_regions);
		return NULL;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct vr_range *r = &ranges[i];

		if (r->start % VR_PAGE_SIZE || r->end % VR_PAGE_SIZE) {
			g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_RANGE,
				    "ranges[%zu] = [0x%" G_GINT64_MODIFIER
				    "x, 0x%" G_GINT64_MODIFIER
				    "x): start and end must be multiples of the page size (%llu)",
				    i, r->start, r->end, VR_PAGE_SIZE);
			return NULL;
		}
		if (r->end <= r->start) {
			g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_RANGE,
				    "ranges[%zu] = [0x%" G_GINT64_MODIFIER
				    "x, 0x%" G_GINT64_MODIFIER "x): empty, end must be above start",
				    i, r->start, r->end);
			return NULL;
		}
	}
	/* sort indices, not copies, so that errors name the ranges as given */
	order = g_array_sized_new(FALSE, FALSE, sizeof(guint), (guint)nr);
	for (guint i = 0; i < nr; i++)
		g_array_append_val(order, i);
	g_array_sort_with_data(order, range_index_cmp, (gpointer)ranges);
	sorted = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_range), (guint)nr);
	for (guint k = 0; k < order->len; k++) {
		guint i = g_array_index(order, guint, k);

		if (k > 0) {
			guint p = g_array_index(order, guint, k - 1);

			if (ranges[i].start < ranges[p].end) {
				g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_RANGE,
					    "ranges[%u] = [0x%" G_GINT64_MODIFIER
					    "x, 0x%" G_GINT64_MODIFIER
					    "x) and ranges[%u] = [0x%" G_GINT64_MODIFIER
					    "x, 0x%" G_GINT64_MODIFIER "x) overlap",
					    MIN(p, i), ranges[MIN(p, i)].start,
					    ranges[MIN(p, i)].end, MAX(p, i),
					    ranges[MAX(p, i)].start, ranges[MAX(p, i)].end);
				return NULL;
			}
		}
		g_array_append_val(sorted, ranges[i]);
	}
	return g_steal_pointer(&sorted);
}

gboolean vr_ranges_validate(const struct vr_range *ranges, size_t nr, uint32_t max_nr_regions,
			    GError **error)
{
	g_autoptr(GArray) sorted = ranges_sorted(ranges, nr, max_nr_regions, error);

	return sorted != NULL;
}

/* ---- targets ---- */

uint64_t vr_target_size(const struct vr_target *t)
{
	uint64_t sz = 0;

	for (guint i = 0; i < t->ranges->len; i++) {
		const struct vr_range *r = &g_array_index(t->ranges, struct vr_range, i);

		sz += r->end - r->start;
	}
	return sz;
}

static void append_region(GArray *regions, uint64_t start, uint64_t end)
{
	struct vr_region r = { .start = start, .end = end, .sampling_addr = start };

	g_array_append_val(regions, r);
}

gboolean vr_target_set_ranges(struct vr_target *t, const struct vr_range *ranges, size_t nr,
			      uint32_t max_nr_regions, GError **error)
{
	g_autoptr(GArray) sorted = ranges_sorted(ranges, nr, max_nr_regions, error);
	GArray *old = t->regions;
	GArray *regions;
	guint first = 0; /* first old region that may intersect the current range */

	if (!sorted)
		return FALSE;

	regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_region), old->len);
	for (guint i = 0; i < sorted->len; i++) {
		const struct vr_range *range = &g_array_index(sorted, struct vr_range, i);
		uint64_t pos = range->start; /* first byte of @range not covered yet */

		while (first < old->len &&
		       g_array_index(old, struct vr_region, first).end <= range->start)
			first++;
		for (guint j = first; j < old->len; j++) {
			struct vr_region r = g_array_index(old, struct vr_region, j);

			if (r.start >= range->end)
				break;
			r.start = MAX(r.start, range->start);
			r.end = MIN(r.end, range->end);
			if (pos < r.start)
				append_region(regions, pos, r.start);
			if (r.sampling_addr < r.start || r.sampling_addr >= r.end) {
				r.sampling_addr = r.start;
				r.accessed = false;
			}
			g_array_append_val(regions, r);
			pos = r.end;
		}
		if (pos < range->end)
			append_region(regions, pos, range->end);
	}
	g_array_unref(t->regions);
	t->regions = regions;
	g_array_unref(t->ranges);
	t->ranges = g_steal_pointer(&sorted);
	return TRUE;
}

void vr_target_split_evenly(struct vr_target *t, uint64_t sz_piece)
{
	uint64_t piece_pages = MAX(sz_piece / VR_PAGE_SIZE, 1);

	g_array_set_size(t->regions, 0);
	for (guint i = 0; i < t->ranges->len; i++) {
		const struct vr_range *range = &g_array_index(t->ranges, struct vr_range, i);
		uint64_t pages = (range->end - range->start) / VR_PAGE_SIZE;
		uint64_t nr = (pages + piece_pages - 1) / piece_pages;
		uint64_t base = pages / nr, extra = pages % nr;
		uint64_t start = range->start;

		/* the first @extra pieces get one page more than the others */
		for (uint64_t k = 0; k < nr; k++) {
			uint64_t end = start + (base + (k < extra)) * VR_PAGE_SIZE;

			append_region(t->regions, start, end);
			start = end;
		}
	}
}

void vr_target_update_ages(struct vr_target *t, uint32_t thres)
{
	for (guint i = 0; i < t->regions->len; i++) {
		struct vr_region *r = vr_target_region(t, i);

		if (abs_diff(r->nr_accesses, r->last_nr_accesses) > thres)
			r->age = 0;
		else if (r->age < G_MAXUINT32)
			r->age++;
	}
}

void vr_target_merge_regions(struct vr_target *t, uint32_t thres, uint64_t sz_limit)
{
	guint kept = 0;

	for (guint i = 0; i < t->regions->len; i++) {
		struct vr_region r = *vr_target_region(t, i);
		struct vr_region *prev = kept ? vr_target_region(t, kept - 1) : NULL;

		if (prev && prev->end == r.start &&
		    abs_diff(prev->nr_accesses, r.nr_accesses) <= thres &&
		    vr_region_size(prev) + vr_region_size(&r) <= sz_limit) {
			uint64_t sz_l = vr_region_size(prev), sz_r = vr_region_size(&r);

			prev->nr_accesses =
				weighted_avg(prev->nr_accesses, sz_l, r.nr_accesses, sz_r);
			prev->last_nr_accesses = weighted_avg(prev->last_nr_accesses, sz_l,
							      r.last_nr_accesses, sz_r);
			prev->age = weighted_avg(prev->age, sz_l, r.age, sz_r);
			prev->end = r.end;
			continue;
		}
		*vr_target_region(t, kept++) = r;
	}
	g_array_set_size(t->regions, kept);
}

/*
 * The legal cut points of a region of @sz bytes: page-aligned offsets in
 * [10%, 90%] of its size, [*@lo, *@lo + *@nr * page). Returns *@nr (0: none).
 */
static uint64_t cut_points(uint64_t sz, uint64_t *lo)
{
	uint64_t hi = align_down((uint64_t)((unsigned __int128)sz * 9 / 10), VR_PAGE_SIZE);

	*lo = align_up((sz + 9) / 10, VR_PAGE_SIZE);
	if (*lo > hi || *lo == 0 || hi >= sz)
		return 0;
	return (hi - *lo) / VR_PAGE_SIZE + 1;
}

void vr_target_split_regions(struct vr_target *t, unsigned nr_pieces, struct vr_rng *rng)
{
	GArray *regions;

	g_return_if_fail(nr_pieces == 2 || nr_pieces == 3);

	regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_region),
				    t->regions->len * nr_pieces);
	for (guint i = 0; i < t->regions->len; i++) {
		const struct vr_region *r = vr_target_region(t, i);
		uint64_t lo, nr_points = cut_points(vr_region_size(r), &lo);
		uint64_t cuts[2];
		guint nr_cuts = (guint)MIN(nr_pieces - 1, nr_points);
		uint64_t start = r->start;

		if (nr_cuts >= 1)
			cuts[0] = vr_rng_below(rng, nr_points);
		if (nr_cuts == 2) {
			/* a second, different point: draw among the others */
			cuts[1] = vr_rng_below(rng, nr_points - 1);
			if (cuts[1] >= cuts[0])
				cuts[1]++;
			else
				SWAP_U64(cuts[0], cuts[1]);
		}
		for (guint k = 0; k < nr_cuts; k++)
			cuts[k] = lo + cuts[k] * VR_PAGE_SIZE;
		for (guint k = 0; k <= nr_cuts; k++) {
			struct vr_region piece = *r;

			piece.start = start;
			piece.end = k < nr_cuts ? r->start + cuts[k] : r->end;
			piece.sampling_addr = piece.start;
			piece.accessed = false;
			g_array_append_val(regions, piece);
			start = piece.end;
		}
	}
	g_array_unref(t->regions);
	t->regions = regions;
}

void vr_target_split_region_at(struct vr_target *t, guint i, uint64_t offset)
{
	struct vr_region right = *vr_target_region(t, i);

	g_return_if_fail(offset % VR_PAGE_SIZE == 0 && offset > 0 &&
			 offset < vr_region_size(&right));
	right.start += offset;
	right.sampling_addr = right.start;
	right.accessed = false;
	vr_target_region(t, i)->end = right.start;
	if (vr_target_region(t, i)->sampling_addr >= right.start)
		vr_target_region(t, i)->sampling_addr = vr_target_region(t, i)->start;
	g_array_insert_val(t->regions, i + 1, right);
}

/* ---- the context: attributes, accessors, aggregation steps ---- */

/*
 * Keeps what the regions have learnt meaningful under new attributes, as
 * DAMON does on a commit: access counts scale with max_nr_accesses, ages
 * (in aggregation intervals) with the aggregation interval.
 */
static void rescale_results(struct vr_ctx *ctx, const struct vr_monitor_attrs *old,
			    const struct vr_monitor_attrs *new)
{
	uint32_t old_max = vr_monitor_attrs_max_nr_accesses(old);
	uint32_t new_max = vr_monitor_attrs_max_nr_accesses(new);

	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < t->regions->len; j++) {
			struct vr_region *r = vr_target_region(t, j);

			r->nr_accesses = (uint32_t)((uint64_t)r->nr_accesses * new_max / old_max);
			r->last_nr_accesses =
				(uint32_t)((uint64_t)r->last_nr_accesses * new_max / old_max);
			r->age = (uint32_t)MIN((unsigned __int128)r->age * old->aggr_interval_us /
						       new->aggr_interval_us,
					       G_MAXUINT32);
		}
	}
}

gboolean vr_ctx_set_attrs(struct vr_ctx *ctx, const struct vr_monitor_attrs *attrs, GError **error)
{
	if (!vr_monitor_attrs_validate(attrs, error))
		return FALSE;
	for (guint i = 0; i < ctx->targets->len; i++) {
		const struct vr_target *t = g_ptr_array_index(ctx->targets, i);

		if (t->ranges->len > attrs->max_nr_regions) {
			g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
				    "max_nr_regions = %u: target %" G_GUINT64_FORMAT
				    " has %u ranges, more than that",
				    attrs->max_nr_regions, t->id, t->ranges->len);
			return FALSE;
		}
	}
	if (ctx->started)
		rescale_results(ctx, &ctx->attrs, attrs);
	ctx->attrs = *attrs;
	return TRUE;
}

const struct vr_monitor_attrs *vr_ctx_attrs(const struct vr_ctx *ctx)
{
	return &ctx->attrs;
}

struct vr_rng *vr_ctx_rng(struct vr_ctx *ctx)
{
	return &ctx->rng;
}

guint vr_ctx_nr_targets(const struct vr_ctx *ctx)
{
	return ctx->targets->len;
}

struct vr_target *vr_ctx_target(const struct vr_ctx *ctx, guint i)
{
	return g_ptr_array_index(ctx->targets, i);
}

guint vr_ctx_nr_regions(const struct vr_ctx *ctx)
{
	guint nr = 0;

	for (guint i = 0; i < ctx->targets->len; i++)
		nr += vr_target_nr_regions(vr_ctx_target(ctx, i));
	return nr;
}

uint64_t vr_ctx_nr_aggregations(const struct vr_ctx *ctx)
{
	return ctx->nr_aggregations;
}

uint64_t vr_ctx_next_tick_us(const struct vr_ctx *ctx)
{
	return ctx->next_tick_us;
}

void vr_ctx_add_listener(struct vr_ctx *ctx, vr_listener_fn fn, void *user_data)
{
	struct vr_listener l = { .fn = fn, .user_data = user_data };

	g_array_append_val(ctx->listeners, l);
}

uint64_t vr_ctx_sz_limit(const struct vr_ctx *ctx)
{
	uint64_t total = 0;

	for (guint i = 0; i < ctx->targets->len; i++)
		total += vr_target_size(vr_ctx_target(ctx, i));
	return MAX(total / ctx->attrs.min_nr_regions, VR_PAGE_SIZE);
}

uint32_t vr_ctx_merge_regions(struct vr_ctx *ctx)
{
	uint32_t max_nr_accesses = vr_monitor_attrs_max_nr_accesses(&ctx->attrs);
	uint64_t sz_limit = vr_ctx_sz_limit(ctx);
	uint32_t highest = 0, first_thres;
	uint64_t thres;
	guint nr_regions;

	for (guint i = 0; i < ctx->targets->len; i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < t->regions->len; j++)
			highest = MAX(highest, vr_target_region(t, j)->nr_accesses);
	}
	first_thres = MAX(1, highest / 10);
	for (guint i = 0; i < ctx->targets->len; i++)
		vr_target_update_ages(vr_ctx_target(ctx, i), first_thres);

	thres = first_thres;
	do {
		for (guint i = 0; i < ctx->targets->len; i++)
			vr_target_merge_regions(vr_ctx_target(ctx, i),
						(uint32_t)MIN(thres, G_MAXUINT32), sz_limit);
		nr_regions = vr_ctx_nr_regions(ctx);
		thres *= 2;
	} while (nr_regions > ctx->attrs.max_nr_regions && thres / 2 < max_nr_accesses);
	return first_thres;
}

void vr_ctx_split_regions(struct vr_ctx *ctx)
{
	guint nr_regions = vr_ctx_nr_regions(ctx);
	unsigned nr_pieces = 2;

	if (nr_regions >= ctx->attrs.max_nr_regions / 2)
		return;
	if (nr_regions == ctx->last_split_nr_regions && nr_regions < ctx->attrs.max_nr_regions / 3)
		nr_pieces = 3;
	for (guint i = 0; i < ctx->targets->len; i++)
		vr_target_split_regions(vr_ctx_target(ctx, i), nr_pieces, &ctx->rng);
	ctx->last_split_nr_regions = nr_regions;
}
