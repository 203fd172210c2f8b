/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resident runs from pagemap entries. See resident-runs.h.
 */
#include "resident-runs.h"

#include "monitor.h"

/* clang-format off */
G_DEFINE_QUARK(vr-resident-error-quark, vr_resident_error)
/* clang-format on */

void vr_resident_runs_init(struct vr_resident_runs *rr, uint64_t want_bytes)
{
	*rr = (struct vr_resident_runs){
		.want_bytes = want_bytes == G_MAXUINT64 ? want_bytes :
							  want_bytes / VR_PAGE_SIZE * VR_PAGE_SIZE,
		.runs = g_array_new(FALSE, FALSE, sizeof(struct vr_range)),
	};
}

void vr_resident_runs_clear(struct vr_resident_runs *rr)
{
	if (rr->runs)
		g_array_unref(rr->runs);
	*rr = (struct vr_resident_runs){ 0 };
}

gboolean vr_resident_runs_full(const struct vr_resident_runs *rr)
{
	return rr->resident_bytes >= rr->want_bytes;
}

/* Take the page at @addr into the last run, or a new one. */
static void take_page(struct vr_resident_runs *rr, uint64_t addr)
{
	struct vr_range *last =
		rr->runs->len ? &g_array_index(rr->runs, struct vr_range, rr->runs->len - 1) : NULL;

	if (last && last->end == addr) {
		last->end += VR_PAGE_SIZE;
	} else {
		struct vr_range run = { .start = addr, .end = addr + VR_PAGE_SIZE };

		g_array_append_val(rr->runs, run);
	}
	rr->resident_bytes += VR_PAGE_SIZE;
}

gboolean vr_resident_runs_add(struct vr_resident_runs *rr, uint64_t start, const uint64_t *entries,
			      size_t nr, GError **error)
{
	g_return_val_if_fail(rr != NULL && rr->runs != NULL && (entries != NULL || nr == 0), FALSE);
	if (start % VR_PAGE_SIZE) {
		g_set_error(error, VR_RESIDENT_ERROR, VR_RESIDENT_ERROR_INVALID,
			    "pagemap chunk at 0x%" G_GINT64_MODIFIER "x: not page-aligned",
			    (guint64)start);
		return FALSE;
	}
	/* The chunk's end, start + nr * VR_PAGE_SIZE, must be an address (below
	 * 2^64): nr <= (2^64 - 1 - start) / VR_PAGE_SIZE. */
	if ((uint64_t)nr > (G_MAXUINT64 - start) / VR_PAGE_SIZE) {
		g_set_error(error, VR_RESIDENT_ERROR, VR_RESIDENT_ERROR_INVALID,
			    "pagemap chunk at 0x%" G_GINT64_MODIFIER "x of %" G_GSIZE_FORMAT
			    " pages runs past the end of the address space",
			    (guint64)start, (gsize)nr);
		return FALSE;
	}
	for (size_t i = 0; i < nr && !vr_resident_runs_full(rr); i++) {
		uint64_t addr = start + (uint64_t)i * VR_PAGE_SIZE;
		uint64_t e = entries[i];

		if ((e & VR_PAGEMAP_PRESENT) && (e & VR_PAGEMAP_SWAPPED)) {
			g_set_error(error, VR_RESIDENT_ERROR, VR_RESIDENT_ERROR_INVALID,
				    "pagemap entry 0x%016" G_GINT64_MODIFIER
				    "x of the page at 0x%" G_GINT64_MODIFIER
				    "x is both present and swapped",
				    (guint64)e, (guint64)addr);
			return FALSE;
		}
		if (e & VR_PAGEMAP_PRESENT)
			take_page(rr, addr);
		else if (e & VR_PAGEMAP_SWAPPED)
			rr->swapped_bytes += VR_PAGE_SIZE;
		else
			rr->absent_bytes += VR_PAGE_SIZE;
	}
	return TRUE;
}
