/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest-physical to host-virtual RAM map: validation and the
 * translation of guest ranges into page-aligned host ranges for
 * host-pageout. See ram-map.h. Pure: no I/O.
 */
#define _POSIX_C_SOURCE 200809L

#include "qmp/ram-map.h"

#include <sys/uio.h>

/* clang-format off */
G_DEFINE_QUARK(vr-ram-map-error-quark, vr_ram_map_error)
/* clang-format on */

#define X64 "0x%" G_GINT64_MODIFIER "x"

gboolean vr_ram_map_validate(const struct vr_ram_range *map, guint nr, GError **error)
{
	if (nr == 0) {
		g_set_error_literal(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "the RAM map has no entry");
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
		if (i > 0 && r->gpa < map[i - 1].gpa) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entries are not sorted by gpa: entry %u (gpa " X64
				    ") comes after entry %u (gpa " X64 ")",
				    i, (guint64)r->gpa, i - 1, (guint64)map[i - 1].gpa);
			return FALSE;
		}
		if (i > 0 && r->gpa < map[i - 1].gpa + map[i - 1].size) {
			g_set_error(error, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID,
				    "RAM map entries %u and %u overlap: entry %u ends at gpa " X64
				    ", entry %u starts at gpa " X64,
				    i - 1, i, i - 1, (guint64)(map[i - 1].gpa + map[i - 1].size), i,
				    (guint64)r->gpa);
			return FALSE;
		}
	}
	return TRUE;
}

/* Index of the first entry of @map that ends after @gpa (@nr if none). */
static guint first_entry_ending_after(const struct vr_ram_range *map, guint nr, uint64_t gpa)
{
	guint lo = 0, hi = nr;

	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		if (map[mid].gpa + map[mid].size <= gpa)
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
	/* The current run of contiguous host bytes, not yet aligned. */
	uint64_t run_start = 0, run_end = 0;
	gboolean in_run = FALSE;

	g_return_val_if_fail(host_ranges != NULL, FALSE);
	g_return_val_if_fail(nr_guest == 0 || guest != NULL, FALSE);
	if (!vr_ram_map_validate(map, nr_map, error))
		return FALSE;
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
		for (guint i = first_entry_ending_after(map, nr_map, start);
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
