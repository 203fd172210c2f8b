/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The page-granular baseline: every page checked every interval.
 */
#include "page-tracker.h"

/* Pages handed to the access source per call. */
#define BATCH_PAGES 4096

/**
 * struct vr_page_tracker - state of the baseline tracker.
 * @ops, @ops_data: the access source (borrowed).
 * @target:	a target holding the ranges, passed to the source.
 * @first_page:	per range, the index of its first page among all pages.
 * @last_seen:	per page, the number of the scan that last found it accessed
 *		(0: not since the start).
 * @nr_scans:	scans completed.
 * @cursor:	where the next partial scan starts (a page index).
 * @batch:	one-page regions handed to the source.
 */
struct vr_page_tracker {
	const struct vr_access_ops *ops;
	void *ops_data;
	struct vr_target target;
	uint64_t *first_page;
	uint64_t nr_pages;
	uint64_t interval_us;
	uint32_t *last_seen;
	uint32_t nr_scans;
	uint64_t cursor;
	struct vr_region *batch;
};

struct vr_page_tracker *vr_page_tracker_new(const struct vr_access_ops *ops, void *ops_data,
					    const struct vr_range *ranges, size_t nr,
					    uint64_t interval_us, GError **error)
{
	g_autoptr(vr_page_tracker) pt = g_new0(struct vr_page_tracker, 1);

	pt->target.ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	pt->target.regions = g_array_new(FALSE, FALSE, sizeof(struct vr_region));
	if (interval_us == 0) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR,
			    "interval_us = 0: must be at least 1 us");
		return NULL;
	}
	if (!vr_target_set_ranges(&pt->target, ranges, nr, G_MAXUINT32, error))
		return NULL;
	/* the tracker keeps no regions of its own: only the batch */
	g_array_set_size(pt->target.regions, 0);

	pt->ops = ops;
	pt->ops_data = ops_data;
	pt->interval_us = interval_us;
	pt->first_page = g_new(uint64_t, pt->target.ranges->len + 1);
	for (guint i = 0; i < pt->target.ranges->len; i++) {
		const struct vr_range *r = &g_array_index(pt->target.ranges, struct vr_range, i);

		pt->first_page[i] = pt->nr_pages;
		pt->nr_pages += (r->end - r->start) / VR_PAGE_SIZE;
	}
	pt->first_page[pt->target.ranges->len] = pt->nr_pages;
	/* calloc: pages of a huge guest that a partial scan never reaches are
	 * never touched, so never resident */
	pt->last_seen = g_try_new0(uint32_t, MAX(pt->nr_pages, 1));
	if (!pt->last_seen) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_STATE,
			    "cannot allocate the state of %" G_GUINT64_FORMAT " pages",
			    pt->nr_pages);
		return NULL;
	}
	pt->batch = g_new0(struct vr_region, BATCH_PAGES);
	return g_steal_pointer(&pt);
}

void vr_page_tracker_free(struct vr_page_tracker *pt)
{
	if (!pt)
		return;
	g_array_unref(pt->target.ranges);
	g_array_unref(pt->target.regions);
	g_free(pt->first_page);
	g_free(pt->last_seen);
	g_free(pt->batch);
	g_free(pt);
}

uint64_t vr_page_tracker_nr_pages(const struct vr_page_tracker *pt)
{
	return pt->nr_pages;
}

/* The range holding page number @page. */
static guint range_of_page(const struct vr_page_tracker *pt, uint64_t page)
{
	guint lo = 0, hi = pt->target.ranges->len;

	while (hi - lo > 1) {
		guint mid = (lo + hi) / 2;

		if (pt->first_page[mid] <= page)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Fills the batch with pages [@page, @page + @nr) (nr <= BATCH_PAGES). */
static void fill_batch(struct vr_page_tracker *pt, uint64_t page, size_t nr)
{
	guint ri = range_of_page(pt, page);

	for (size_t i = 0; i < nr; i++, page++) {
		const struct vr_range *r;

		while (page >= pt->first_page[ri + 1])
			ri++;
		r = &g_array_index(pt->target.ranges, struct vr_range, ri);
		pt->batch[i].start = r->start + (page - pt->first_page[ri]) * VR_PAGE_SIZE;
		pt->batch[i].end = pt->batch[i].start + VR_PAGE_SIZE;
		pt->batch[i].sampling_addr = pt->batch[i].start;
		pt->batch[i].accessed = false;
	}
}

/*
 * Checks pages [@first, @first + @nr) and then makes them old. Every check
 * comes before any prepare, so a source that keeps one "made old at" time
 * (like the simulator) sees the same interval for every page.
 */
static uint64_t scan_pages(struct vr_page_tracker *pt, uint64_t first, uint64_t nr, uint64_t now_us)
{
	uint64_t found = 0;

	for (uint64_t done = 0; done < nr; done += BATCH_PAGES) {
		size_t n = (size_t)MIN(BATCH_PAGES, nr - done);

		fill_batch(pt, first + done, n);
		pt->ops->check(pt->ops_data, &pt->target, pt->batch, n, now_us);
		for (size_t i = 0; i < n; i++) {
			if (pt->batch[i].accessed) {
				pt->last_seen[first + done + i] = pt->nr_scans + 1;
				found++;
			}
		}
	}
	for (uint64_t done = 0; done < nr; done += BATCH_PAGES) {
		size_t n = (size_t)MIN(BATCH_PAGES, nr - done);

		fill_batch(pt, first + done, n);
		pt->ops->prepare(pt->ops_data, &pt->target, pt->batch, n, now_us);
	}
	return found;
}

void vr_page_tracker_start(struct vr_page_tracker *pt, uint64_t now_us)
{
	for (uint64_t done = 0; done < pt->nr_pages; done += BATCH_PAGES) {
		size_t n = (size_t)MIN(BATCH_PAGES, pt->nr_pages - done);

		fill_batch(pt, done, n);
		pt->ops->prepare(pt->ops_data, &pt->target, pt->batch, n, now_us);
	}
}

uint64_t vr_page_tracker_scan(struct vr_page_tracker *pt, uint64_t now_us)
{
	uint64_t found = scan_pages(pt, 0, pt->nr_pages, now_us);

	pt->nr_scans++;
	pt->cursor = 0;
	return found;
}

uint64_t vr_page_tracker_scan_part(struct vr_page_tracker *pt, uint64_t now_us, uint64_t max_pages)
{
	uint64_t nr = MIN(max_pages, pt->nr_pages - pt->cursor);

	scan_pages(pt, pt->cursor, nr, now_us);
	pt->cursor += nr;
	if (pt->cursor == pt->nr_pages) {
		pt->cursor = 0;
		pt->nr_scans++;
	}
	return nr;
}

static bool page_idle(const struct vr_page_tracker *pt, uint64_t page, uint64_t min_idle_us)
{
	uint32_t last = pt->last_seen[page];
	/* seen by the scan under way (partial scans): not idle at all */
	uint64_t idle_scans = last > pt->nr_scans ? 0 : pt->nr_scans - last;

	return idle_scans * pt->interval_us >= min_idle_us;
}

uint64_t vr_page_tracker_idle_bytes(const struct vr_page_tracker *pt, uint64_t start, uint64_t end,
				    uint64_t min_idle_us)
{
	uint64_t bytes = 0;

	for (guint ri = 0; ri < pt->target.ranges->len; ri++) {
		const struct vr_range *r = &g_array_index(pt->target.ranges, struct vr_range, ri);
		uint64_t lo = MAX(r->start, start - start % VR_PAGE_SIZE), hi = MIN(r->end, end);

		for (uint64_t addr = lo; addr < hi; addr += VR_PAGE_SIZE) {
			uint64_t page = pt->first_page[ri] + (addr - r->start) / VR_PAGE_SIZE;

			if (page_idle(pt, page, min_idle_us))
				bytes += MIN(addr + VR_PAGE_SIZE, hi) - MAX(addr, start);
		}
	}
	return bytes;
}

GArray *vr_page_tracker_idle_ranges(const struct vr_page_tracker *pt, uint64_t min_idle_us)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(struct vr_range));

	for (guint ri = 0; ri < pt->target.ranges->len; ri++) {
		const struct vr_range *r = &g_array_index(pt->target.ranges, struct vr_range, ri);

		for (uint64_t addr = r->start; addr < r->end; addr += VR_PAGE_SIZE) {
			uint64_t page = pt->first_page[ri] + (addr - r->start) / VR_PAGE_SIZE;
			struct vr_range *last;

			if (!page_idle(pt, page, min_idle_us))
				continue;
			last = out->len ? &g_array_index(out, struct vr_range, out->len - 1) : NULL;
			if (last && last->end == addr) {
				last->end += VR_PAGE_SIZE;
			} else {
				struct vr_range run = { addr, addr + VR_PAGE_SIZE };

				g_array_append_val(out, run);
			}
		}
	}
	return out;
}
