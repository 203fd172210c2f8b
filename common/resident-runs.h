/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resident runs: which pages of the host ranges a pageout plan chose are
 * actually in memory, from their /proc/<pid>/pagemap entries, as the runs
 * to hand to process_madvise(MADV_PAGEOUT) and the bytes to charge.
 *
 * A page that is already in swap (or was never touched) looks cold to every
 * access source, so a plan keeps choosing it; MADV_PAGEOUT accepts it and
 * counts it as advised though nothing leaves memory. Advising only the
 * present pages makes the advised bytes what can really leave memory, and
 * lets the quota go to pages that are still resident.
 *
 * Pure: the caller reads the pagemap (kernel/process-pageout.c,
 * vr_pagemap_read_resident()) and feeds the entries here a chunk at a time,
 * in plan order, until enough resident bytes are found.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "page.h"

/* A pagemap entry: 64 bits per page (Documentation/admin-guide/mm/pagemap.rst). */
#define VR_PAGEMAP_ENTRY_BYTES 8U
/* Bit 63: the page is present in memory. */
#define VR_PAGEMAP_PRESENT (1ULL << 63)
/* Bit 62: the page is in swap. */
#define VR_PAGEMAP_SWAPPED (1ULL << 62)

#define VR_RESIDENT_ERROR (vr_resident_error_quark())
GQuark vr_resident_error_quark(void);

/**
 * enum vr_resident_error - error codes in the VR_RESIDENT_ERROR domain.
 * @VR_RESIDENT_ERROR_INVALID: a chunk that is not page-aligned or wraps
 *			       around the address space, or an entry that is
 *			       both present and swapped (the kernel never sets
 *			       both); the message names the address.
 */
enum vr_resident_error {
	VR_RESIDENT_ERROR_INVALID,
};

/**
 * struct vr_resident_runs - the resident runs found so far in a scan.
 * @want_bytes:		the most resident bytes to take (the quota), whole
 *			pages; G_MAXUINT64 means no limit. Set by
 *			vr_resident_runs_init(), not changed after.
 * @resident_bytes:	resident bytes taken into @runs, <= @want_bytes: what
 *			is advised and charged.
 * @swapped_bytes:	bytes seen in swap, skipped.
 * @absent_bytes:	bytes seen neither present nor in swap (never touched,
 *			or dropped), skipped: there is nothing to page out.
 * @runs:		struct vr_range (host-virtual, page-aligned, end >
 *			start) in scan order; a run adjacent to the one before
 *			is merged into it. Owned; freed by
 *			vr_resident_runs_clear().
 *
 * The skipped counts cover only the entries looked at: the scan stops at the
 * first page past @want_bytes.
 */
struct vr_resident_runs {
	uint64_t want_bytes;
	uint64_t resident_bytes;
	uint64_t swapped_bytes;
	uint64_t absent_bytes;
	GArray *runs;
};

/** vr_resident_runs_init() - an empty scan taking at most @want_bytes. */
void vr_resident_runs_init(struct vr_resident_runs *rr, uint64_t want_bytes);

/** vr_resident_runs_clear() - free @rr's runs and zero it. */
void vr_resident_runs_clear(struct vr_resident_runs *rr);

/**
 * vr_resident_runs_full() - whether @rr has its @want_bytes: no more entries
 * need reading.
 */
gboolean vr_resident_runs_full(const struct vr_resident_runs *rr);

/**
 * vr_resident_runs_add() - add the pages of a chunk of a host range.
 * @rr:		the scan.
 * @start:	the address of the first entry's page, page-aligned.
 * @entries:	@nr pagemap entries, one per page from @start; borrowed.
 *		Kernel data, still checked: an entry with both
 *		VR_PAGEMAP_PRESENT and VR_PAGEMAP_SWAPPED is refused.
 * @nr:		how many; the chunk must not run past the end of the
 *		address space.
 *
 * Present pages are taken in order (merged into runs) until @rr is full;
 * swapped and absent ones are counted and skipped. Entries after the page
 * that filled @rr are not looked at. O(@nr).
 *
 * Return: TRUE; FALSE with VR_RESIDENT_ERROR_INVALID (naming the address)
 * for a bad chunk or entry, @rr then holding the pages before it.
 */
gboolean vr_resident_runs_add(struct vr_resident_runs *rr, uint64_t start, const uint64_t *entries,
			      size_t nr, GError **error);
