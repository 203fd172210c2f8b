// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A kernel's DAMON through sysfs (damon-sysfs.h), the status reader: what
 * a running kdamond reports, read back: its schemes' stats
 * ("update_schemes_stats"), the regions a scheme tried
 * ("update_schemes_tried_regions", then "clear_schemes_tried_regions", whose
 * listing costs kernel memory), merged down to a bound (pure), and the
 * kdamond's pid and CPU time (/proc/PID/stat). The tree it reads is the one
 * damon-sysfs.c wrote.
 */
#define _POSIX_C_SOURCE 200809L

#include "damon-sysfs.h"

#include <string.h>
#include <unistd.h>

#include "damon-sysfs-private.h"
#include "kernel-file.h"
#include "procfs-text.h"

/* ---- reading back ---- */

static gboolean get_u64(const char *dir, const char *name, uint64_t *out, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return vr_kfile_read_u64(path, out, error);
}

gboolean vr_damon_sysfs_read_stats(const struct vr_agent_paths *paths, struct vr_scheme_stats *out,
				   guint nr, GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	g_autofree char *schemes = kdamond_path(paths, 0, "contexts/0/schemes");

	if (!put(kd, "state", "update_schemes_stats", error)) {
		g_prefix_error(error, "cannot read DAMON scheme stats: ");
		return FALSE;
	}
	for (guint i = 0; i < nr; i++) {
		g_autofree char *sdir = sub_index(schemes, i);
		g_autofree char *stats = g_build_filename(sdir, "stats", NULL);
		struct vr_scheme_stats st = { 0 };

		if (!get_u64(stats, "nr_tried", &st.nr_tried, error) ||
		    !get_u64(stats, "sz_tried", &st.sz_tried, error) ||
		    !get_u64(stats, "nr_applied", &st.nr_applied, error) ||
		    !get_u64(stats, "sz_applied", &st.sz_applied, error) ||
		    !get_u64(stats, "qt_exceeds", &st.qt_exceeds, error))
			return FALSE;
		out[i] = st;
	}
	return TRUE;
}

/* A tried region and the folder it came from (for messages). */
struct tried_region {
	struct vr_picture_region r;
	uint64_t dir_index;
};

static gint tried_cmp(gconstpointer a, gconstpointer b)
{
	const struct tried_region *ta = a, *tb = b;

	return ta->r.start < tb->r.start ? -1 : ta->r.start > tb->r.start;
}

static gboolean read_one_tried(const char *rdir, uint64_t index, struct tried_region *out,
			       GError **error)
{
	uint64_t start, end, nr_accesses, age;

	if (!get_u64(rdir, "start", &start, error) || !get_u64(rdir, "end", &end, error) ||
	    !get_u64(rdir, "nr_accesses", &nr_accesses, error) ||
	    !get_u64(rdir, "age", &age, error))
		return FALSE;
	if (start >= end) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s: empty region: start %" G_GUINT64_FORMAT
			    " >= end %" G_GUINT64_FORMAT,
			    rdir, (guint64)start, (guint64)end);
		return FALSE;
	}
	if (nr_accesses > G_MAXUINT32 || age > G_MAXUINT32) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s: nr_accesses %" G_GUINT64_FORMAT " or age %" G_GUINT64_FORMAT
			    " is out of the kernel's range",
			    rdir, (guint64)nr_accesses, (guint64)age);
		return FALSE;
	}
	*out = (struct tried_region){
		.r = { .start = start,
		       .end = end,
		       .nr_accesses = (uint32_t)nr_accesses,
		       .age = (uint32_t)age },
		.dir_index = index,
	};
	return TRUE;
}

/* The numbered folders of @dir into @regions (struct tried_region), sorted. */
static gboolean read_tried_dir(const char *dir, GArray *regions, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GDir) d = g_dir_open(dir, 0, &local);
	const char *name;

	if (!d) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot list %s: %s", dir,
			    local->message);
		return FALSE;
	}
	while ((name = g_dir_read_name(d))) {
		g_autofree char *rdir = NULL;
		struct tried_region t;
		guint64 index;

		if (!g_ascii_string_to_unsigned(name, 10, 0, G_MAXUINT32, &index, NULL))
			continue; /* total_bytes */
		if (regions->len >= VR_DAMON_MAX_TRIED_REGIONS) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "%s holds more than %u regions", dir,
				    VR_DAMON_MAX_TRIED_REGIONS);
			return FALSE;
		}
		rdir = g_build_filename(dir, name, NULL);
		if (!read_one_tried(rdir, index, &t, error))
			return FALSE;
		g_array_append_val(regions, t);
	}
	g_array_sort(regions, tried_cmp);
	/*
	 * A listing made while the kdamond splits and merges regions (a policy
	 * commit, an ops update) can hold a region twice, in two shapes (seen
	 * on 6.12). The kernel is not lying: the part already listed wins, the
	 * rest of the later region stays.
	 */
	for (guint i = 1; i < regions->len;) {
		const struct tried_region *a = &g_array_index(regions, struct tried_region, i - 1);
		struct tried_region *b = &g_array_index(regions, struct tried_region, i);

		if (b->r.start >= a->r.end) {
			i++;
			continue;
		}
		g_debug("%s: regions %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT
			" overlap: the later one is cut",
			dir, (guint64)a->dir_index, (guint64)b->dir_index);
		if (b->r.end <= a->r.end) {
			g_array_remove_index(regions, i);
		} else {
			b->r.start = a->r.end;
			i++;
		}
	}
	return TRUE;
}

gboolean vr_damon_sysfs_read_tried_regions(const struct vr_agent_paths *paths, guint scheme,
					   guint max, GArray *out, GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	g_autofree char *schemes = kdamond_path(paths, 0, "contexts/0/schemes");
	g_autofree char *sdir = sub_index(schemes, scheme);
	g_autofree char *dir = g_build_filename(sdir, "tried_regions", NULL);
	g_autoptr(GArray) tried = g_array_new(FALSE, FALSE, sizeof(struct tried_region));
	g_autoptr(GArray) regions = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) clear_error = NULL;
	gboolean ok;

	if (!put(kd, "state", "update_schemes_tried_regions", error)) {
		g_prefix_error(error, "cannot read DAMON's regions: ");
		return FALSE;
	}
	ok = read_tried_dir(dir, tried, error);
	/* Clear also after a failed read: the listing costs kernel memory. */
	if (!put(kd, "state", "clear_schemes_tried_regions", ok ? error : &clear_error)) {
		if (!ok)
			g_debug("after a failed read: %s", clear_error->message);
		ok = FALSE;
	}
	if (!ok) {
		g_prefix_error(error, "cannot read DAMON's regions: ");
		return FALSE;
	}
	for (guint i = 0; i < tried->len; i++)
		g_array_append_val(regions, g_array_index(tried, struct tried_region, i).r);
	vr_damon_regions_merge(regions, max);
	g_array_append_vals(out, regions->data, regions->len);
	return TRUE;
}

/* ---- merging regions (pure) ---- */

#define NONE G_MAXUINT

/**
 * struct group - regions merged so far, in a doubly linked list in address
 * order.
 * @start, @end:	its range (covers the holes between its parts).
 * @bytes:		bytes of its parts (holes excluded): the weight.
 * @acc_sum, @age_sum:	nr_accesses and age times bytes, summed over parts.
 * @prev, @next:	neighbours' indices, NONE at the ends.
 * @version:		bumped by every merge into it (stale heap entries).
 * @alive:		FALSE once merged into its left neighbour.
 */
struct group {
	uint64_t start;
	uint64_t end;
	double bytes;
	double acc_sum;
	double age_sum;
	guint prev;
	guint next;
	guint version;
	bool alive;
};

/**
 * struct candidate - a possible merge of group @left with its right
 * neighbour @right, with its cost in order of importance.
 */
struct candidate {
	guint left;
	guint right;
	guint left_version;
	guint right_version;
	uint64_t gap;	      /* 1 when a hole separates them */
	uint64_t d_accesses;  /* nr_accesses difference */
	uint64_t d_age_log;   /* difference of bit lengths of the ages */
	uint64_t merged_size; /* bytes of the result */
};

static uint32_t group_accesses(const struct group *g)
{
	return (uint32_t)(g->acc_sum / g->bytes);
}

static uint32_t group_age(const struct group *g)
{
	return (uint32_t)(g->age_sum / g->bytes);
}

static uint64_t bit_length(uint32_t v)
{
	return v ? 32 - (uint64_t)__builtin_clz(v) : 0;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static struct candidate candidate_of(const struct group *groups, guint l)
{
	const struct group *a = &groups[l], *b = &groups[a->next];

	return (struct candidate){
		.left = l,
		.right = a->next,
		.left_version = a->version,
		.right_version = b->version,
		.gap = a->end != b->start,
		.d_accesses = absdiff(group_accesses(a), group_accesses(b)),
		.d_age_log = absdiff(bit_length(group_age(a)), bit_length(group_age(b))),
		.merged_size = (uint64_t)(a->bytes + b->bytes),
	};
}

static bool candidate_less(const struct candidate *x, const struct candidate *y)
{
	if (x->gap != y->gap)
		return x->gap < y->gap;
	if (x->d_accesses != y->d_accesses)
		return x->d_accesses < y->d_accesses;
	if (x->d_age_log != y->d_age_log)
		return x->d_age_log < y->d_age_log;
	if (x->merged_size != y->merged_size)
		return x->merged_size < y->merged_size;
	return x->left < y->left;
}

static void heap_push(GArray *heap, struct candidate c)
{
	guint i = heap->len;

	g_array_append_val(heap, c);
	while (i > 0) {
		guint parent = (i - 1) / 2;
		struct candidate *ci = &g_array_index(heap, struct candidate, i);
		struct candidate *cp = &g_array_index(heap, struct candidate, parent);
		struct candidate tmp;

		if (!candidate_less(ci, cp))
			break;
		tmp = *ci;
		*ci = *cp;
		*cp = tmp;
		i = parent;
	}
}

static struct candidate heap_pop(GArray *heap)
{
	struct candidate top = g_array_index(heap, struct candidate, 0);
	guint i = 0;

	g_array_index(heap, struct candidate, 0) =
		g_array_index(heap, struct candidate, heap->len - 1);
	g_array_set_size(heap, heap->len - 1);
	for (;;) {
		guint l = 2 * i + 1, r = l + 1, best = i;
		struct candidate tmp;

		if (l < heap->len && candidate_less(&g_array_index(heap, struct candidate, l),
						    &g_array_index(heap, struct candidate, best)))
			best = l;
		if (r < heap->len && candidate_less(&g_array_index(heap, struct candidate, r),
						    &g_array_index(heap, struct candidate, best)))
			best = r;
		if (best == i)
			break;
		tmp = g_array_index(heap, struct candidate, i);
		g_array_index(heap, struct candidate, i) =
			g_array_index(heap, struct candidate, best);
		g_array_index(heap, struct candidate, best) = tmp;
		i = best;
	}
	return top;
}

static bool candidate_valid(const struct group *groups, const struct candidate *c)
{
	const struct group *a = &groups[c->left], *b = &groups[c->right];

	return a->alive && b->alive && a->next == c->right && a->version == c->left_version &&
	       b->version == c->right_version;
}

void vr_damon_regions_merge(GArray *regions, guint max)
{
	guint n = regions->len, count = n;
	g_autofree struct group *groups = NULL;
	g_autoptr(GArray) heap = NULL;
	guint out = 0;

	if (n <= max)
		return;
	if (max == 0) {
		g_array_set_size(regions, 0);
		return;
	}
	groups = g_new0(struct group, n);
	heap = g_array_sized_new(FALSE, FALSE, sizeof(struct candidate), n);
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *r =
			&g_array_index(regions, struct vr_picture_region, i);
		double bytes = (double)(r->end - r->start);

		groups[i] = (struct group){
			.start = r->start,
			.end = r->end,
			.bytes = bytes,
			.acc_sum = bytes * r->nr_accesses,
			.age_sum = bytes * r->age,
			.prev = i ? i - 1 : NONE,
			.next = i + 1 < n ? i + 1 : NONE,
			.alive = true,
		};
	}
	for (guint i = 0; i + 1 < n; i++)
		heap_push(heap, candidate_of(groups, i));
	while (count > max && heap->len > 0) {
		struct candidate c = heap_pop(heap);
		struct group *a = &groups[c.left], *b = &groups[c.right];

		if (!candidate_valid(groups, &c))
			continue;
		a->end = b->end;
		a->bytes += b->bytes;
		a->acc_sum += b->acc_sum;
		a->age_sum += b->age_sum;
		a->next = b->next;
		if (b->next != NONE)
			groups[b->next].prev = c.left;
		b->alive = false;
		a->version++;
		count--;
		if (a->prev != NONE)
			heap_push(heap, candidate_of(groups, a->prev));
		if (a->next != NONE)
			heap_push(heap, candidate_of(groups, c.left));
	}
	for (guint i = 0; i < n; i++) {
		const struct group *g = &groups[i];

		if (!g->alive)
			continue;
		g_array_index(regions, struct vr_picture_region, out++) =
			(struct vr_picture_region){
				.start = g->start,
				.end = g->end,
				.nr_accesses = group_accesses(g),
				.age = group_age(g),
			};
	}
	g_array_set_size(regions, out);
}

/* ---- kdamond CPU time ---- */

gboolean vr_damon_sysfs_kdamond_pid(const struct vr_agent_paths *paths, int64_t *pid,
				    GError **error)
{
	g_autofree char *path = kdamond_path(paths, 0, "pid");
	g_autofree char *text = read_trimmed(path, error);
	gint64 v;

	if (!text)
		return FALSE;
	if (!g_ascii_string_to_signed(text, 10, -1, G_MAXINT64, &v, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s holds '%s', not a pid", path, text);
		return FALSE;
	}
	*pid = v;
	return TRUE;
}

gboolean vr_proc_pid_cpu_us(const char *procfs, int64_t pid, uint64_t *cpu_us, GError **error)
{
	char num[24];
	g_autofree char *path = NULL;
	g_autofree char *text = NULL;
	long ticks = sysconf(_SC_CLK_TCK);
	struct vr_proc_stat st;

	*cpu_us = 0;
	if (pid <= 0)
		return TRUE;
	g_snprintf(num, sizeof(num), "%" G_GINT64_FORMAT, (gint64)pid);
	path = g_build_filename(procfs, num, "stat", NULL);
	text = vr_kfile_read(path, 4096, error);
	if (!text)
		return FALSE;
	if (!vr_proc_stat_parse(text, path, ticks > 0 ? (uint64_t)ticks : 100, &st, error))
		return FALSE;
	*cpu_us = st.cpu_us;
	return TRUE;
}
