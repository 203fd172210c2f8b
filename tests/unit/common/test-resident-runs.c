/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the resident runs (common/resident-runs.c): from pagemap
 * entries, the runs of present pages to advise, in order, merged, cut at
 * the quota; swapped and absent pages skipped and counted; the chunks and
 * entries it refuses.
 *
 * Pure: entry arrays in, runs out. Entries are written as strings, one
 * character a page: 'P' present, 'S' swapped, '.' neither.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "monitor.h"
#include "resident-runs.h"

#define PAGE VR_PAGE_SIZE
#define BASE 0x7f0000000000ULL

/* The entries of @pages ('P', 'S', '.'), owned. Present entries carry a PFN
 * and swapped ones a swap offset and type, as the kernel writes them, so
 * only bits 63 and 62 may matter. */
static uint64_t *entries_of(const char *pages)
{
	size_t n = strlen(pages);
	uint64_t *e = g_new0(uint64_t, MAX(n, 1));

	for (size_t i = 0; i < n; i++) {
		if (pages[i] == 'P')
			e[i] = VR_PAGEMAP_PRESENT | (1ULL << 61) | (0x1234 + i);
		else if (pages[i] == 'S')
			e[i] = VR_PAGEMAP_SWAPPED | ((0x40 + i) << 5) | 1;
		else
			e[i] = 0;
	}
	return e;
}

/* Scan @pages at BASE taking at most @want bytes, in chunks of @chunk
 * entries, stopping when full, as the reader does. */
static void scan(struct vr_resident_runs *rr, const char *pages, uint64_t want, size_t chunk)
{
	g_autofree uint64_t *e = entries_of(pages);
	g_autoptr(GError) err = NULL;
	size_t n = strlen(pages);

	vr_resident_runs_init(rr, want);
	for (size_t i = 0; i < n && !vr_resident_runs_full(rr); i += chunk)
		cr_assert(vr_resident_runs_add(rr, BASE + i * PAGE, e + i, MIN(chunk, n - i), &err),
			  "%s: %s", pages, err ? err->message : "");
}

/* @rr's runs as page ranges "a-b,c-d" relative to BASE, b exclusive. */
static char *runs_text(const struct vr_resident_runs *rr)
{
	GString *s = g_string_new(NULL);

	for (guint i = 0; i < rr->runs->len; i++) {
		const struct vr_range *r = &g_array_index(rr->runs, struct vr_range, i);

		g_string_append_printf(s, "%s%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT,
				       i ? "," : "", (guint64)((r->start - BASE) / PAGE),
				       (guint64)((r->end - BASE) / PAGE));
	}
	return g_string_free(s, FALSE);
}

static void expect(const char *pages, uint64_t want_pages, size_t chunk, const char *runs,
		   uint64_t resident, uint64_t swapped, uint64_t absent)
{
	struct vr_resident_runs rr;
	g_autofree char *got = NULL;

	scan(&rr, pages, want_pages == G_MAXUINT64 ? G_MAXUINT64 : want_pages * PAGE, chunk);
	got = runs_text(&rr);
	cr_assert_str_eq(got, runs, "%s (want %" G_GUINT64_FORMAT " pages, chunks of %zu): runs %s",
			 pages, (guint64)want_pages, chunk, got);
	cr_assert_eq(rr.resident_bytes, resident * PAGE, "%s: resident pages %" G_GUINT64_FORMAT,
		     pages, (guint64)(rr.resident_bytes / PAGE));
	cr_assert_eq(rr.swapped_bytes, swapped * PAGE, "%s: swapped pages %" G_GUINT64_FORMAT,
		     pages, (guint64)(rr.swapped_bytes / PAGE));
	cr_assert_eq(rr.absent_bytes, absent * PAGE, "%s: absent pages %" G_GUINT64_FORMAT, pages,
		     (guint64)(rr.absent_bytes / PAGE));
	vr_resident_runs_clear(&rr);
	cr_assert_null(rr.runs, "cleared");
}

TestSuite(resident_runs, .description = "pagemap entries -> the resident runs to advise");

Test(resident_runs, only_present_pages_are_taken_and_merged)
{
	expect("PPPP", G_MAXUINT64, 64, "0-4", 4, 0, 0);
	expect("SSSS", G_MAXUINT64, 64, "", 0, 4, 0);
	expect("....", G_MAXUINT64, 64, "", 0, 0, 4);
	expect("PPSSP.PP", G_MAXUINT64, 64, "0-2,4-5,6-8", 5, 2, 1);
	expect("", G_MAXUINT64, 64, "", 0, 0, 0);
}

Test(resident_runs, a_run_across_chunks_is_one_run)
{
	/* the chunk boundary falls inside each run */
	expect("PPPPPPSPPPP", G_MAXUINT64, 3, "0-6,7-11", 10, 1, 0);
	expect("PPPPPPSPPPP", G_MAXUINT64, 1, "0-6,7-11", 10, 1, 0);
}

Test(resident_runs, the_quota_counts_resident_pages_only)
{
	/* swapped pages do not use the quota: 3 resident pages past them */
	expect("SSSSPPSP.P", 3, 64, "4-6,7-8", 3, 5, 0);
	/* the scan stops at the page that filled it: nothing after counted */
	expect("PPPSSS", 2, 64, "0-2", 2, 0, 0);
	expect("PPPSSS", 2, 1, "0-2", 2, 0, 0);
	/* a quota of 0 takes nothing and looks at nothing */
	expect("PPSS", 0, 64, "", 0, 0, 0);
	/* more quota than resident pages: all of them */
	expect("PSPS", 100, 64, "0-1,2-3", 2, 2, 0);
}

Test(resident_runs, a_quota_is_whole_pages)
{
	struct vr_resident_runs rr;

	vr_resident_runs_init(&rr, 2 * PAGE + 100);
	cr_assert_eq(rr.want_bytes, 2 * PAGE, "rounded down to whole pages");
	vr_resident_runs_clear(&rr);
	vr_resident_runs_init(&rr, PAGE - 1);
	cr_assert(vr_resident_runs_full(&rr), "less than a page is no page");
	vr_resident_runs_clear(&rr);
}

Test(resident_runs, separate_ranges_stay_separate_runs)
{
	g_autofree uint64_t *e = entries_of("PP");
	g_autoptr(GError) err = NULL;
	struct vr_resident_runs rr;
	g_autofree char *got = NULL;

	vr_resident_runs_init(&rr, G_MAXUINT64);
	/* a plan's ranges come coldest first, not by address: a later range
	 * below an earlier one is a run of its own, in plan order */
	cr_assert(vr_resident_runs_add(&rr, BASE + 10 * PAGE, e, 2, &err));
	cr_assert(vr_resident_runs_add(&rr, BASE, e, 2, &err));
	cr_assert(vr_resident_runs_add(&rr, BASE + 2 * PAGE, e, 2, &err));
	got = runs_text(&rr);
	cr_assert_str_eq(got, "10-12,0-4");
	vr_resident_runs_clear(&rr);
}

Test(resident_runs, bad_chunks_and_entries_are_refused)
{
	uint64_t e[3] = { VR_PAGEMAP_PRESENT, VR_PAGEMAP_PRESENT | VR_PAGEMAP_SWAPPED, 0 };
	g_autoptr(GError) err = NULL;
	struct vr_resident_runs rr;

	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert_not(vr_resident_runs_add(&rr, BASE + 1, e, 1, &err));
	cr_assert(g_error_matches(err, VR_RESIDENT_ERROR, VR_RESIDENT_ERROR_INVALID));
	cr_assert(strstr(err->message, "not page-aligned") &&
			  strstr(err->message, "0x7f0000000001"),
		  "names the address: %s", err->message);
	g_clear_error(&err);

	/* the last page of the address space has no end address */
	cr_assert_not(vr_resident_runs_add(&rr, G_MAXUINT64 - PAGE + 1, e, 1, &err));
	cr_assert(strstr(err->message, "end of the address space"), "%s", err->message);
	g_clear_error(&err);
	cr_assert_not(vr_resident_runs_add(&rr, G_MAXUINT64 - 4 * PAGE + 1, e, 4, &err));
	g_clear_error(&err);
	cr_assert(vr_resident_runs_add(&rr, G_MAXUINT64 - 4 * PAGE + 1, e, 0, &err),
		  "an empty chunk is fine");
	cr_assert(vr_resident_runs_add(&rr, G_MAXUINT64 - 2 * PAGE + 1, e, 1, &err),
		  "the page before the last is fine");
	cr_assert_eq(rr.resident_bytes, PAGE);
	vr_resident_runs_clear(&rr);

	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert_not(vr_resident_runs_add(&rr, BASE, e, 3, &err));
	cr_assert(strstr(err->message, "both present and swapped") &&
			  strstr(err->message, "0x7f0000001000"),
		  "names the page: %s", err->message);
	cr_assert_eq(rr.resident_bytes, PAGE, "the page before it is kept");
	vr_resident_runs_clear(&rr);
}
