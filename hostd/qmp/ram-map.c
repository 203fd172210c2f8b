/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest-physical to host-virtual RAM map: its validation, and the
 * translations both ways: guest ranges into page-aligned host ranges for
 * host-pageout, a host-virtual picture into guest regions for host-damon.
 * See ram-map.h. Pure: no I/O.
 */
#define _POSIX_C_SOURCE 200809L

#include "qmp/ram-map.h"

#include <stdlib.h>
#include <sys/uio.h>

/* clang-format off */
G_DEFINE_QUARK(vr-ram-map-error-quark, vr_ram_map_error)
/* clang-format on */

#define X64 "0x%" G_GINT64_MODIFIER "x"

static gint gpa_cmp(gconstpointer a, gconstpointer b)
{
	const struct vr_ram_range *x = a, *y = b;

	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static gint hva_cmp(gconstpointer a, gconstpointer b)
{
	const struct vr_ram_range *x = a, *y = b;

	return x->hva < y->hva ? -1 : x->hva > y->hva;
}

static gint index_gpa_cmp(gconstpointer a, gconstpointer b, gpointer data)
{
	const struct vr_ram_range *map = data;

	return gpa_cmp(&map[*(const guint *)a], &map[*(const guint *)b]);
}

/* No two entries of @map (each already checked alone) share a guest-physical
 * byte; the message names the caller's entries. */
static gboolean check_overlaps(const struct vr_ram_range *map, guint nr, GError **error)
{
	g_autofree guint *order = g_new(guint, nr);

	for (guint i = 0; i < nr; i++)
		order[i] = i;
	g_qsort_with_data(order, (gint)nr, sizeof(*order), index_gpa_cmp, (gpointer)map);
	for (guint k = 1; k < nr; k++) {
		const struct vr_ram_range *a = &map[order[k - 1]], *b = &map[order[k]];

		if (b->gpa < a->gpa + a->size) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entries %u and %u overlap: entry %u ends at gpa " X64
				    ", entry %u starts at gpa " X64,
				    order[k - 1], order[k], order[k - 1],
				    (guint64)(a->gpa + a->size), order[k], (guint64)b->gpa);
			return FALSE;
		}
	}
	return TRUE;
}

/* @map itself when it is in gpa order, else a sorted copy in *@copy. */
static const struct vr_ram_range *in_gpa_order(const struct vr_ram_range *map, guint nr,
					       struct vr_ram_range **copy)
{
	for (guint i = 1; i < nr; i++) {
		if (map[i].gpa < map[i - 1].gpa) {
			*copy = g_memdup2(map, nr * sizeof(*map));
			qsort(*copy, nr, sizeof(**copy), gpa_cmp);
			return *copy;
		}
	}
	return map;
}

gboolean vr_ram_map_validate(const struct vr_ram_range *map, guint nr, GError **error)
{
	if (nr == 0) {
		g_set_error_literal(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "the RAM map has no entry");
		return FALSE;
	}
	if (nr > VR_RAM_MAP_MAX_ENTRIES) {
		g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
			    "the RAM map has %u entries, more than %d", nr, VR_RAM_MAP_MAX_ENTRIES);
		return FALSE;
	}
	g_return_val_if_fail(map != NULL, FALSE);
	for (guint i = 0; i < nr; i++) {
		const struct vr_ram_range *r = &map[i];

		if (r->size == 0) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entry %u (gpa " X64 ") has size 0", i,
				    (guint64)r->gpa);
			return FALSE;
		}
		if (r->size > G_MAXUINT64 - r->gpa) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entry %u: gpa " X64 " + size " X64
				    " wraps around the address space",
				    i, (guint64)r->gpa, (guint64)r->size);
			return FALSE;
		}
		if (r->size > G_MAXUINT64 - r->hva) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entry %u: hva " X64 " + size " X64
				    " wraps around the address space",
				    i, (guint64)r->hva, (guint64)r->size);
			return FALSE;
		}
	}
	return check_overlaps(map, nr, error);
}

/* The end of element @i of an array sorted by start, whose elements do not
 * overlap. */
typedef uint64_t (*end_of_fn)(const void *base, guint i);

static uint64_t entry_gpa_end(const void *base, guint i)
{
	const struct vr_ram_range *r = (const struct vr_ram_range *)base + i;

	return r->gpa + r->size;
}

static uint64_t region_end(const void *base, guint i)
{
	return ((const struct vr_picture_region *)base)[i].end;
}

/* Index of the first of @nr sorted, disjoint elements at @base that ends
 * after @addr (@nr if none): the one search both directions use. */
static guint first_ending_after(const void *base, guint nr, end_of_fn end_of, uint64_t addr)
{
	guint lo = 0, hi = nr;

	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		if (end_of(base, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Shrink the host range [start, end) inward to whole pages and append it to
 * @out, merged into the last range when it continues it; an empty result is
 * dropped.
 */
static void append_aligned(GArray *out, uint64_t start, uint64_t end)
{
	uint64_t first, last;
	struct iovec iov;

	if (start > G_MAXUINT64 - (VR_PAGE_SIZE - 1))
		return;
	first = (start + VR_PAGE_SIZE - 1) & ~(VR_PAGE_SIZE - 1);
	last = end & ~(VR_PAGE_SIZE - 1);
	if (first >= last)
		return;
	if (out->len > 0) {
		struct iovec *prev = &g_array_index(out, struct iovec, out->len - 1);

		if ((uint64_t)(uintptr_t)prev->iov_base + prev->iov_len == first) {
			prev->iov_len += last - first;
			return;
		}
	}
	iov.iov_base = (void *)(uintptr_t)first;
	iov.iov_len = last - first;
	g_array_append_val(out, iov);
}

gboolean vr_ram_map_translate(const struct vr_ram_range *map, guint nr_map,
			      const struct vr_range *guest, guint nr_guest, GArray **host_ranges,
			      GError **error)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct iovec));
	g_autofree struct vr_ram_range *sorted = NULL;
	/* The current run of contiguous host bytes, not yet aligned. */
	uint64_t run_start = 0, run_end = 0;
	gboolean in_run = FALSE;

	g_return_val_if_fail(host_ranges != NULL, FALSE);
	g_return_val_if_fail(nr_guest == 0 || guest != NULL, FALSE);
	if (!vr_ram_map_validate(map, nr_map, error))
		return FALSE;
	map = in_gpa_order(map, nr_map, &sorted);
	/* A struct iovec holds host addresses as pointers: 64-bit hosts only. */
	G_STATIC_ASSERT(sizeof(void *) == sizeof(uint64_t));

	for (guint g = 0; g < nr_guest; g++) {
		uint64_t start = guest[g].start, end = guest[g].end;

		if (end < start) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "guest range %u [" X64 ", " X64 ") ends before it starts", g,
				    (guint64)start, (guint64)end);
			return FALSE;
		}
		for (guint i = first_ending_after(map, nr_map, entry_gpa_end, start);
		     i < nr_map && map[i].gpa < end; i++) {
			const struct vr_ram_range *r = &map[i];
			uint64_t lo = MAX(start, r->gpa);
			uint64_t hi = MIN(end, r->gpa + r->size);
			uint64_t host_lo = r->hva + (lo - r->gpa);
			uint64_t host_hi = r->hva + (hi - r->gpa);

			if (in_run && host_lo == run_end) {
				run_end = host_hi;
				continue;
			}
			if (in_run)
				append_aligned(out, run_start, run_end);
			run_start = host_lo;
			run_end = host_hi;
			in_run = TRUE;
		}
	}
	if (in_run)
		append_aligned(out, run_start, run_end);
	*host_ranges = g_steal_pointer(&out);
	return TRUE;
}

static gint region_start_cmp(gconstpointer a, gconstpointer b)
{
	const struct vr_picture_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void vr_ram_map_to_guest(const struct vr_ram_range *map, guint nr_map, const GArray *hva_regions,
			 uint32_t max_nr_accesses, GArray *out)
{
	g_autofree struct vr_ram_range *by_hva = NULL;
	const struct vr_picture_region *regions;
	guint first = out->len;

	if (nr_map == 0 || hva_regions->len == 0)
		return;
	regions = (const struct vr_picture_region *)hva_regions->data;
	by_hva = g_memdup2(map, nr_map * sizeof(*map));
	qsort(by_hva, nr_map, sizeof(*by_hva), hva_cmp);
	for (guint m = 0; m < nr_map; m++) {
		const struct vr_ram_range *ram = &by_hva[m];
		uint64_t hva_end = ram->hva + ram->size;

		for (guint i = first_ending_after(regions, hva_regions->len, region_end, ram->hva);
		     i < hva_regions->len && regions[i].start < hva_end; i++) {
			const struct vr_picture_region *r = &regions[i];
			uint64_t start = MAX(r->start, ram->hva);
			uint64_t end = MIN(r->end, hva_end);
			struct vr_picture_region piece = {
				.start = ram->gpa + (start - ram->hva),
				.end = ram->gpa + (end - ram->hva),
				.nr_accesses = MIN(r->nr_accesses, max_nr_accesses),
				.age = r->age,
			};

			g_array_append_val(out, piece);
		}
	}
	/* Only the appended part: the entries were visited in hva order. */
	if (out->len > first)
		qsort(out->data + (gsize)first * sizeof(struct vr_picture_region), out->len - first,
		      sizeof(struct vr_picture_region), region_start_cmp);
}
