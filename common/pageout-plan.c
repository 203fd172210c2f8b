/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pageout plan: the selected regions of a picture, coldest first,
 * trimmed to pages and cut at the quota. See pageout-plan.h.
 */
#include "pageout-plan.h"

#include "picture-region.h"
#include "picture.h"

/* Coldest first; ties by address, lower first. Starts are unique (the
 * regions are disjoint), so the order is total and g_array_sort() gives the
 * same plan whatever its algorithm. */
static gint colder_first(gconstpointer a, gconstpointer b)
{
	const struct vr_pageout_range *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/*
 * [@start, @end) shrunk inward to whole pages into @out; FALSE when no whole
 * page is left. Rounding the end down first keeps the start's rounding up
 * from overflowing: the rounded start is at most the rounded end.
 */
static gboolean trim_to_pages(uint64_t start, uint64_t end, struct vr_pageout_range *out)
{
	uint64_t end_down = end - end % VR_PAGE_SIZE;
	uint64_t start_up;

	if (end_down <= start)
		return FALSE;
	start_up = start % VR_PAGE_SIZE ? start + (VR_PAGE_SIZE - start % VR_PAGE_SIZE) : start;
	if (start_up >= end_down)
		return FALSE;
	out->start = start_up;
	out->end = end_down;
	return TRUE;
}

gboolean vr_pageout_plan(const struct vr_proto_regions *picture, const struct vr_scheme *scheme,
			 uint64_t guest_memory_bytes, uint64_t quota_bytes, GArray **ranges,
			 GError **error)
{
	struct vr_monitor_attrs attrs = { 0 };
	g_autoptr(GArray) plan = NULL;
	uint64_t left = quota_bytes - quota_bytes % VR_PAGE_SIZE;
	guint keep = 0, n;

	g_return_val_if_fail(picture != NULL && scheme != NULL && ranges != NULL, FALSE);
	*ranges = NULL;
	if (scheme->action != VR_ACTION_PAGEOUT) {
		g_set_error(error, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID,
			    "scheme '%s' has action %s: only a pageout scheme plans a pageout",
			    scheme->name ? scheme->name : "?", vr_action_name(scheme->action));
		return FALSE;
	}
	if (!vr_picture_check(picture->regions, picture->sample_interval_us,
			      picture->aggr_interval_us,
			      &(struct vr_picture_bound){ .mem_bytes = guest_memory_bytes }, error))
		return FALSE;

	attrs.sample_interval_us = picture->sample_interval_us;
	attrs.aggr_interval_us = picture->aggr_interval_us;
	n = picture->regions ? picture->regions->len : 0;
	plan = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_pageout_range), n);
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *ar =
			&g_array_index(picture->regions, struct vr_picture_region, i);
		struct vr_pageout_range r = { 0 };

		if (!vr_fleet_region_score(ar, &attrs, scheme, &r.score) ||
		    !trim_to_pages(ar->start, ar->end, &r))
			continue;
		g_array_append_val(plan, r);
	}
	g_array_sort(plan, colder_first);

	/* Take ranges while the quota lasts; cut the one where it runs out. */
	for (; keep < plan->len && left > 0; keep++) {
		struct vr_pageout_range *r = &g_array_index(plan, struct vr_pageout_range, keep);
		uint64_t size = r->end - r->start;

		if (size > left) {
			r->end = r->start + left; /* both page multiples */
			left = 0;
		} else {
			left -= size;
		}
	}
	g_array_set_size(plan, keep);
	*ranges = g_steal_pointer(&plan);
	return TRUE;
}

uint64_t vr_pageout_plan_bytes(const GArray *ranges)
{
	uint64_t total = 0;

	for (guint i = 0; ranges && i < ranges->len; i++) {
		const struct vr_pageout_range *r =
			&g_array_index(ranges, struct vr_pageout_range, i);

		total += r->end - r->start;
	}
	return total;
}
