/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated reclaim: pageout, refaults and the guest's free memory over a
 * simulated guest (see sim-actuator.h for the model).
 */
#include "sim-actuator.h"

#define NS_PER_S 1000000000ULL

/**
 * struct vr_sim_reclaim - the simulated reclaim of one guest.
 * @sim:	the guest (borrowed).
 * @params:	the cost model.
 * @start_us, @end_us: the run.
 * @nr_pages:	pages of the guest.
 * @until_us:	per page: the page is resident iff until_us <= @now_us;
 *		G_MAXUINT64 = non-resident for good (never accessed again).
 * @now_us:	the simulated time (vr_sim_reclaim_set_now()).
 * @comebacks:	binary min-heap (struct comeback) of the times at which
 *		non-resident pages become resident.
 * @resident_tree: Fenwick tree over the pages (1-based, @nr_pages + 1
 *		entries) of which are resident at @now_us, so that the
 *		resident pages of any range are counted, and the page where
 *		a count is reached found, in O(log pages).
 * @nr_nonresident: pages not resident at @now_us.
 * @refaults_done: refaults that happened by @now_us (for the PSI and
 *		refault metrics).
 * @psi_read_refaults: @refaults_done at the previous read of the PSI metric.
 * @refault_read_refaults: the same for the refault_bytes metric.
 * @checked_us:	per page: when a young filter last checked it (its
 *		accessed bit was cleared then); the run's start before the
 *		first check. Allocated at the first check (NULL until then).
 * @cpu_clock:	the caller's clock for @stats.sim_cpu_ns (optional).
 * @stats:	the totals.
 */
struct vr_sim_reclaim {
	const struct vr_sim *sim;
	struct vr_sim_reclaim_params params;
	uint64_t start_us;
	uint64_t end_us;
	uint64_t nr_pages;
	uint64_t *until_us;
	uint64_t now_us;
	GArray *comebacks;
	uint64_t *resident_tree;
	uint64_t nr_nonresident;
	uint64_t refaults_done;
	uint64_t psi_read_refaults;
	uint64_t refault_read_refaults;
	uint64_t *checked_us;
	struct vr_clock cpu_clock;
	struct vr_sim_reclaim_stats stats;
};

/* ---- the heap of come-back times ---- */

/*
 * struct comeback - a non-resident page's return.
 * @key:	(time << 1) | refault: the time (us) it becomes resident, and
 *		1 when that is a refault, 0 for the first access of a page
 *		that was never resident.
 * @page:	the page.
 */
struct comeback {
	uint64_t key;
	uint64_t page;
};

static uint64_t heap_key(const GArray *h, guint i)
{
	return g_array_index(h, struct comeback, i).key;
}

static void heap_swap(GArray *h, guint i, guint j)
{
	struct comeback x = g_array_index(h, struct comeback, i);

	g_array_index(h, struct comeback, i) = g_array_index(h, struct comeback, j);
	g_array_index(h, struct comeback, j) = x;
}

static void heap_push(GArray *h, struct comeback c)
{
	guint i = h->len;

	g_array_append_val(h, c);
	while (i > 0 && heap_key(h, (i - 1) / 2) > heap_key(h, i)) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static struct comeback heap_pop(GArray *h)
{
	struct comeback top = g_array_index(h, struct comeback, 0);
	guint i = 0;

	g_array_index(h, struct comeback, 0) = g_array_index(h, struct comeback, h->len - 1);
	g_array_set_size(h, h->len - 1);
	for (;;) {
		guint l = 2 * i + 1, r = l + 1, min = i;

		if (l < h->len && heap_key(h, l) < heap_key(h, min))
			min = l;
		if (r < h->len && heap_key(h, r) < heap_key(h, min))
			min = r;
		if (min == i)
			break;
		heap_swap(h, i, min);
		i = min;
	}
	return top;
}

/* ---- the tree of resident pages ---- */

static uint64_t lowest_bit(uint64_t i)
{
	return i & (~i + 1);
}

/* Page @page became resident (@delta 1) or left (@delta -1). */
static void tree_add(struct vr_sim_reclaim *r, uint64_t page, int delta)
{
	for (uint64_t i = page + 1; i <= r->nr_pages; i += lowest_bit(i))
		r->resident_tree[i] += (uint64_t)(int64_t)delta;
}

/* Resident pages among the first @nr_pages pages. */
static uint64_t tree_prefix(const struct vr_sim_reclaim *r, uint64_t nr_pages)
{
	uint64_t sum = 0;

	for (uint64_t i = nr_pages; i > 0; i -= lowest_bit(i))
		sum += r->resident_tree[i];
	return sum;
}

/* The smallest n such that the first n pages hold @want (>= 1, at most all)
 * resident pages. */
static uint64_t tree_search(const struct vr_sim_reclaim *r, uint64_t want)
{
	uint64_t pos = 0, step = 1;

	while (step <= r->nr_pages / 2)
		step <<= 1;
	for (; step; step >>= 1) {
		if (pos + step <= r->nr_pages && r->resident_tree[pos + step] < want) {
			pos += step;
			want -= r->resident_tree[pos];
		}
	}
	return pos + 1;
}

/* Builds the tree from @until_us at @now_us, in O(pages). */
static void tree_build(struct vr_sim_reclaim *r)
{
	for (uint64_t p = 0; p < r->nr_pages; p++)
		r->resident_tree[p + 1] = r->until_us[p] <= r->now_us;
	for (uint64_t i = 1; i <= r->nr_pages; i++) {
		uint64_t up = i + lowest_bit(i);

		if (up <= r->nr_pages)
			r->resident_tree[up] += r->resident_tree[i];
	}
}

/* A page becomes non-resident until @until_us (G_MAXUINT64: for good). */
static void page_leave(struct vr_sim_reclaim *r, uint64_t page, uint64_t until_us, bool refault)
{
	r->until_us[page] = until_us;
	r->nr_nonresident++;
	if (until_us != G_MAXUINT64)
		heap_push(r->comebacks,
			  (struct comeback){ .key = until_us << 1 | refault, .page = page });
}

/* ---- life cycle ---- */

struct vr_sim_reclaim *vr_sim_reclaim_new(const struct vr_sim *sim, const struct vr_range *resident,
					  size_t nr, uint64_t start_us, uint64_t end_us,
					  const struct vr_sim_reclaim_params *params,
					  GError **error)
{
	const struct vr_sim_reclaim_params defaults = VR_SIM_RECLAIM_PARAMS_DEFAULT;
	g_autoptr(vr_sim_reclaim) r = NULL;
	uint64_t size = vr_sim_size(sim);

	if (!params)
		params = &defaults;
	if (params->pageout_bps == 0) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "pageout throughput: must be positive");
		return NULL;
	}
	if (end_us <= start_us || end_us >= G_MAXUINT64 >> 1) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "run from %" G_GUINT64_FORMAT " us to %" G_GUINT64_FORMAT
			    " us: the end must follow the start",
			    start_us, end_us);
		return NULL;
	}
	for (size_t i = 0; i < nr; i++) {
		if (resident[i].start % VR_PAGE_SIZE || resident[i].end % VR_PAGE_SIZE ||
		    resident[i].start > resident[i].end || resident[i].end > size) {
			g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
				    "resident ranges[%zu] [0x%" G_GINT64_MODIFIER
				    "x, 0x%" G_GINT64_MODIFIER
				    "x): must be page-aligned and inside the guest",
				    i, resident[i].start, resident[i].end);
			return NULL;
		}
	}

	r = g_new0(struct vr_sim_reclaim, 1);
	r->sim = sim;
	r->params = *params;
	r->start_us = start_us;
	r->end_us = end_us;
	r->now_us = start_us;
	r->nr_pages = size / VR_PAGE_SIZE;
	r->until_us = g_new(uint64_t, r->nr_pages);
	r->comebacks = g_array_new(FALSE, FALSE, sizeof(struct comeback));
	r->resident_tree = g_new0(uint64_t, r->nr_pages + 1);
	/* every page waits for its first access ... */
	for (uint64_t p = 0; p < r->nr_pages; p++)
		r->until_us[p] = G_MAXUINT64;
	/* ... but the resident ones */
	for (size_t i = 0; i < nr; i++)
		for (uint64_t p = resident[i].start / VR_PAGE_SIZE;
		     p < resident[i].end / VR_PAGE_SIZE; p++)
			r->until_us[p] = start_us;
	for (uint64_t p = 0; p < r->nr_pages; p++)
		if (r->until_us[p] == G_MAXUINT64)
			page_leave(r, p, vr_sim_next_access_us(sim, p * VR_PAGE_SIZE, start_us),
				   false);
	tree_build(r);
	return g_steal_pointer(&r);
}

void vr_sim_reclaim_free(struct vr_sim_reclaim *r)
{
	if (!r)
		return;
	g_free(r->until_us);
	g_free(r->resident_tree);
	g_free(r->checked_us);
	g_array_unref(r->comebacks);
	g_free(r);
}

void vr_sim_reclaim_set_now(struct vr_sim_reclaim *r, uint64_t now_us)
{
	if (now_us <= r->now_us)
		return;
	r->now_us = now_us;
	while (r->comebacks->len && heap_key(r->comebacks, 0) >> 1 <= now_us) {
		struct comeback c = heap_pop(r->comebacks);

		r->nr_nonresident--;
		r->refaults_done += c.key & 1;
		tree_add(r, c.page, 1);
	}
}

void vr_sim_reclaim_set_cpu_clock(struct vr_sim_reclaim *r, const struct vr_clock *clock)
{
	r->cpu_clock = clock ? *clock : (struct vr_clock){ 0 };
}

static uint64_t reclaim_now_ns(void *data)
{
	const struct vr_sim_reclaim *r = data;

	return r->stats.actuator_ns;
}

struct vr_clock vr_sim_reclaim_clock(struct vr_sim_reclaim *r)
{
	return (struct vr_clock){ .now_ns = reclaim_now_ns, .data = r };
}

bool vr_sim_reclaim_page_resident(const struct vr_sim_reclaim *r, uint64_t addr)
{
	uint64_t page = addr / VR_PAGE_SIZE;

	return page < r->nr_pages && r->until_us[page] <= r->now_us;
}

uint64_t vr_sim_reclaim_resident_bytes(const struct vr_sim_reclaim *r)
{
	return (r->nr_pages - r->nr_nonresident) * VR_PAGE_SIZE;
}

void vr_sim_reclaim_get_stats(const struct vr_sim_reclaim *r, struct vr_sim_reclaim_stats *stats)
{
	*stats = r->stats;
}

double vr_sim_reclaim_saved_bytes(const struct vr_sim_reclaim *r)
{
	return (double)r->stats.nonresident_page_us * VR_PAGE_SIZE /
	       (double)(r->end_us - r->start_us);
}

/* ---- the actuator ---- */

/*
 * Was page @p accessed since a young filter last checked it? The check clears
 * the page's accessed bit, as the kernel's does: the next one sees only what
 * came after.
 */
static bool page_young(struct vr_sim_reclaim *r, uint64_t p)
{
	uint64_t since;
	bool young;

	if (!r->checked_us) {
		r->checked_us = g_new(uint64_t, r->nr_pages);
		for (uint64_t i = 0; i < r->nr_pages; i++)
			r->checked_us[i] = r->start_us;
	}
	since = r->checked_us[p];
	young = r->now_us > since &&
		vr_sim_page_accessed(r->sim, p * VR_PAGE_SIZE, since, r->now_us);
	r->checked_us[p] = r->now_us;
	return young;
}

/* May @s page out resident page @p? Every simulated page is anonymous. */
static bool filters_pass(struct vr_sim_reclaim *r, const struct vr_scheme *s, uint64_t p)
{
	bool young = false;

	for (guint i = 0; i < s->nr_filters; i++) {
		if (s->filters[i].type == VR_FILTER_YOUNG) {
			young = page_young(r, p);
			break;
		}
	}
	return vr_scheme_filters_pass(s->filters, s->nr_filters, true, young);
}

/* Pages out the resident pages of [start, end) that @s's filters leave to
 * it; returns the bytes. */
static uint64_t pageout(struct vr_sim_reclaim *r, const struct vr_scheme *s, uint64_t start,
			uint64_t end)
{
	uint64_t now = r->now_us, done = 0;
	uint64_t last = MIN(end / VR_PAGE_SIZE, r->nr_pages);

	for (uint64_t p = start / VR_PAGE_SIZE; p < last; p++) {
		uint64_t next;

		if (r->until_us[p] > now)
			continue; /* not resident: nothing to do */
		if (!filters_pass(r, s, p))
			continue;
		next = vr_sim_next_access_us(r->sim, p * VR_PAGE_SIZE, now);
		page_leave(r, p, next, true);
		tree_add(r, p, -1);
		done += VR_PAGE_SIZE;
		r->stats.nr_pageouts++;
		if (next <= r->end_us) {
			r->stats.refaults++;
			r->stats.refault_penalty_us += r->params.refault_penalty_us;
		}
		if (now < r->end_us)
			r->stats.nonresident_page_us += MIN(next, r->end_us) - now;
	}
	r->stats.pageout_bytes += done;
	/* the total, not a sum of rounded parts: no drift */
	r->stats.actuator_ns = (uint64_t)((unsigned __int128)r->stats.pageout_bytes * NS_PER_S /
					  r->params.pageout_bps);
	return done;
}

static uint64_t cpu_now_ns(const struct vr_sim_reclaim *r)
{
	return r->cpu_clock.now_ns ? r->cpu_clock.now_ns(r->cpu_clock.data) : 0;
}

static gboolean sim_apply(void *data, const struct vr_target *t G_GNUC_UNUSED,
			  const struct vr_scheme *s, uint64_t start, uint64_t end,
			  uint64_t *bytes_done, GError **error G_GNUC_UNUSED)
{
	struct vr_sim_reclaim *r = data;
	uint64_t begin_ns = cpu_now_ns(r);

	switch (s->action) {
	case VR_ACTION_PAGEOUT:
		*bytes_done = pageout(r, s, start, end);
		break;
	case VR_ACTION_COLD:
		*bytes_done = end - start; /* nothing to simulate: LRU order is not modeled */
		break;
	case VR_ACTION_WILLNEED:
	case VR_ACTION_HUGEPAGE:
	case VR_ACTION_NOHUGEPAGE:
	case VR_ACTION_STAT:
		*bytes_done = 0;
		break;
	}
	r->stats.sim_cpu_ns += cpu_now_ns(r) - begin_ns;
	return TRUE;
}

static uint64_t sim_resident(void *data, const struct vr_target *t G_GNUC_UNUSED, uint64_t start,
			     uint64_t end, uint64_t limit, uint64_t *stop)
{
	const struct vr_sim_reclaim *r = data;
	uint64_t first = MIN(start / VR_PAGE_SIZE, r->nr_pages);
	uint64_t last = MIN(end / VR_PAGE_SIZE, r->nr_pages);
	uint64_t before = tree_prefix(r, first);
	uint64_t pages = last > first ? tree_prefix(r, last) - before : 0;
	uint64_t want = limit / VR_PAGE_SIZE;

	if (pages <= want) {
		*stop = end;
		return pages * VR_PAGE_SIZE;
	}
	if (want == 0) {
		*stop = start;
		return 0;
	}
	*stop = tree_search(r, before + want) * VR_PAGE_SIZE;
	return want * VR_PAGE_SIZE;
}

const struct vr_actuator_ops vr_sim_actuator_ops = {
	.name = "sim",
	.apply = sim_apply,
	.resident = sim_resident,
};

/* ---- the metrics ---- */

static gboolean sim_metric_get(void *data, enum vr_metric_kind kind, int metric, uint64_t *value,
			       GError **error)
{
	struct vr_sim_reclaim *r = data;

	if ((kind == VR_METRIC_WMARK && metric == VR_WMARK_FREE_MEM_RATE) ||
	    (kind == VR_METRIC_GOAL && metric == VR_GOAL_FREE_MEM_RATE)) {
		*value = r->nr_nonresident * 1000 / r->nr_pages;
		return TRUE;
	}
	if (kind == VR_METRIC_GOAL && metric == VR_GOAL_SOME_MEM_PSI_US) {
		*value = (r->refaults_done - r->psi_read_refaults) * r->params.refault_penalty_us;
		r->psi_read_refaults = r->refaults_done;
		return TRUE;
	}
	if (kind == VR_METRIC_GOAL && metric == VR_GOAL_REFAULT_BYTES) {
		*value = (r->refaults_done - r->refault_read_refaults) * VR_PAGE_SIZE;
		r->refault_read_refaults = r->refaults_done;
		return TRUE;
	}
	g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
		    "the simulated guest has no %s metric %d",
		    kind == VR_METRIC_WMARK ? "watermark" : "goal", metric);
	return FALSE;
}

const struct vr_metric_ops vr_sim_metric_ops = {
	.get = sim_metric_get,
};
