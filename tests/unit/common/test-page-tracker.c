/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the page-granular baseline tracker (common/page-tracker.h):
 * validation, one check of every page per scan through a fake access source
 * that records its calls, idle times and idle runs after known access
 * patterns, partial scans, and agreement with the simulator's truth.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "page-tracker.h"
#include "rng.h"
#include "sim.h"

#define PAGE	 VR_PAGE_SIZE
#define MIB	 (1ULL << 20)
#define US_PER_S 1000000ULL

/* ---- a fake access source: answers from a table, records every call ---- */

/* The fake's address space, in pages. */
#define FAKE_PAGES 10000

enum fake_call_kind {
	FAKE_CHECK,
	FAKE_PREPARE,
};

struct fake_call {
	enum fake_call_kind kind;
	size_t nr;
	uint64_t now_us;
};

/**
 * struct fake_source - the fake's table and records.
 * @accessed:	per page (address / PAGE): the answer of check().
 * @nr_checks:	per page: how many times check() was asked about it.
 * @nr_prepares: per page: how many times prepare() made it old.
 * @calls:	every call, in order (struct fake_call).
 */
struct fake_source {
	bool *accessed;
	guint *nr_checks;
	guint *nr_prepares;
	GArray *calls;
};
typedef struct fake_source fake_source;

static struct fake_source *fake_new(void)
{
	struct fake_source *f = g_new0(struct fake_source, 1);

	f->accessed = g_new0(bool, FAKE_PAGES);
	f->nr_checks = g_new0(guint, FAKE_PAGES);
	f->nr_prepares = g_new0(guint, FAKE_PAGES);
	f->calls = g_array_new(FALSE, FALSE, sizeof(struct fake_call));
	return f;
}

static void fake_free(struct fake_source *f)
{
	g_free(f->accessed);
	g_free(f->nr_checks);
	g_free(f->nr_prepares);
	g_array_unref(f->calls);
	g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(fake_source, fake_free)

/* Every region the tracker hands over is one page, sampled at its start. */
static uint64_t fake_page(const struct vr_region *r)
{
	cr_assert_eq(r->end, r->start + PAGE,
		     "the tracker should hand over one-page regions, got [0x%" G_GINT64_MODIFIER
		     "x, 0x%" G_GINT64_MODIFIER "x)",
		     r->start, r->end);
	cr_assert_eq(r->sampling_addr, r->start,
		     "the sampled page should be the region's page 0x%" G_GINT64_MODIFIER "x",
		     r->start);
	cr_assert_lt(r->start / PAGE, FAKE_PAGES, "page 0x%" G_GINT64_MODIFIER "x beyond the fake",
		     r->start);
	return r->start / PAGE;
}

static void fake_record(struct fake_source *f, enum fake_call_kind kind, size_t nr, uint64_t now_us)
{
	struct fake_call c = { kind, nr, now_us };

	g_array_append_val(f->calls, c);
}

static void fake_prepare(void *data, const struct vr_target *t, struct vr_region *regions,
			 size_t nr, uint64_t now_us)
{
	struct fake_source *f = data;

	cr_assert_not_null(t, "prepare() should get the tracker's target");
	for (size_t i = 0; i < nr; i++)
		f->nr_prepares[fake_page(&regions[i])]++;
	fake_record(f, FAKE_PREPARE, nr, now_us);
}

static void fake_check(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
		       uint64_t now_us)
{
	struct fake_source *f = data;

	cr_assert_not_null(t, "check() should get the tracker's target");
	for (size_t i = 0; i < nr; i++) {
		uint64_t page = fake_page(&regions[i]);

		f->nr_checks[page]++;
		regions[i].accessed = f->accessed[page];
	}
	fake_record(f, FAKE_CHECK, nr, now_us);
}

static const struct vr_access_ops fake_ops = {
	.name = "fake",
	.prepare = fake_prepare,
	.check = fake_check,
};

/* Pages of the fake's calls of @kind since call @from. */
static uint64_t fake_pages_in_calls(const struct fake_source *f, enum fake_call_kind kind,
				    guint from)
{
	uint64_t n = 0;

	for (guint i = from; i < f->calls->len; i++) {
		const struct fake_call *c = &g_array_index(f->calls, struct fake_call, i);

		if (c->kind == kind)
			n += c->nr;
	}
	return n;
}

static struct vr_page_tracker *tracker_new_ok(const struct vr_access_ops *ops, void *data,
					      const struct vr_range *ranges, size_t nr,
					      uint64_t interval_us)
{
	g_autoptr(GError) err = NULL;
	struct vr_page_tracker *pt = vr_page_tracker_new(ops, data, ranges, nr, interval_us, &err);

	cr_assert_not_null(pt, "vr_page_tracker_new should succeed, got: %s",
			   err ? err->message : "NULL without an error");
	return pt;
}

static void set_accessed(struct fake_source *f, const uint64_t *pages, size_t nr)
{
	memset(f->accessed, 0, FAKE_PAGES * sizeof(*f->accessed));
	for (size_t i = 0; i < nr; i++)
		f->accessed[pages[i]] = true;
}

/* ---- construction ---- */

TestSuite(page_tracker_new, .description = "vr_page_tracker_new() validation");

Test(page_tracker_new, refuses_zero_interval)
{
	g_autoptr(fake_source) f = fake_new();
	g_autoptr(GError) err = NULL;
	struct vr_range r = { 0, 16 * PAGE };
	struct vr_page_tracker *pt = vr_page_tracker_new(&fake_ops, f, &r, 1, 0, &err);

	cr_expect_null(pt, "interval 0 should be refused");
	vr_page_tracker_free(pt);
	cr_assert(g_error_matches(err, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_ATTR),
		  "interval 0: expected VR_MONITOR_ERROR_INVALID_ATTR, got %s",
		  err ? err->message : "no error");
	cr_expect(strstr(err->message, "interval"),
		  "the message should name the interval, got '%s'", err->message);
	cr_expect_eq(f->calls->len, 0, "a refused tracker should never call its source");
}

/* Parameters are copied into Criterion's workers: strings as arrays. */
struct bad_ranges_case {
	char what[40];
	struct vr_range ranges[3];
	size_t nr;
};

ParameterizedTestParameters(page_tracker_new, refuses_bad_ranges)
{
	static struct bad_ranges_case cases[] = {
		{ "start unaligned", { { 100, 16 * PAGE } }, 1 },
		{ "end unaligned", { { 0, 16 * PAGE - 1 } }, 1 },
		{ "empty", { { 16 * PAGE, 16 * PAGE } }, 1 },
		{ "end below start", { { 32 * PAGE, 16 * PAGE } }, 1 },
		{ "second range unaligned", { { 0, PAGE }, { 2 * PAGE, 3 * PAGE + 8 } }, 2 },
		{ "overlapping", { { 0, 8 * PAGE }, { 4 * PAGE, 12 * PAGE } }, 2 },
		{ "overlapping, unsorted",
		  { { 20 * PAGE, 30 * PAGE }, { 0, 4 * PAGE }, { 29 * PAGE, 31 * PAGE } },
		  3 },
		{ "one inside another", { { 0, 8 * PAGE }, { 2 * PAGE, 3 * PAGE } }, 2 },
		{ "the same twice", { { PAGE, 2 * PAGE }, { PAGE, 2 * PAGE } }, 2 },
	};

	return cr_make_param_array(struct bad_ranges_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct bad_ranges_case *c, page_tracker_new, refuses_bad_ranges)
{
	g_autoptr(fake_source) f = fake_new();
	g_autoptr(GError) err = NULL;
	struct vr_page_tracker *pt =
		vr_page_tracker_new(&fake_ops, f, c->ranges, c->nr, 1000, &err);

	cr_expect_null(pt, "%s: the ranges should be refused", c->what);
	vr_page_tracker_free(pt);
	cr_assert(g_error_matches(err, VR_MONITOR_ERROR, VR_MONITOR_ERROR_INVALID_RANGE),
		  "%s: expected VR_MONITOR_ERROR_INVALID_RANGE, got %s", c->what,
		  err ? err->message : "no error");
	cr_expect(strstr(err->message, "range"), "%s: the message should name the range, got '%s'",
		  c->what, err->message);
}

/* The tracker validates ranges "without a count limit": a target may not have 5000. */
Test(page_tracker_new, accepts_many_ranges_and_no_range)
{
	g_autoptr(fake_source) f = fake_new();
	g_autofree struct vr_range *ranges = g_new(struct vr_range, 5000);
	g_autoptr(vr_page_tracker) many = NULL;
	g_autoptr(vr_page_tracker) none = NULL;
	g_autoptr(GArray) runs = NULL;

	/* one-page ranges with one-page holes, given in reverse order */
	for (guint i = 0; i < 5000; i++)
		ranges[i] =
			(struct vr_range){ (2 * (4999 - i)) * PAGE, (2 * (4999 - i) + 1) * PAGE };
	many = tracker_new_ok(&fake_ops, f, ranges, 5000, 1000);
	cr_expect_eq(vr_page_tracker_nr_pages(many), 5000,
		     "5000 one-page ranges: expected 5000 pages");
	vr_page_tracker_start(many, 0);
	cr_expect_eq(vr_page_tracker_scan(many, 1000), 0,
		     "nothing accessed: the scan should find 0");
	runs = vr_page_tracker_idle_ranges(many, 1000);
	cr_expect_eq(runs->len, 5000,
		     "5000 idle one-page ranges with holes between: expected 5000 runs, got %u",
		     runs->len);

	none = tracker_new_ok(&fake_ops, f, NULL, 0, 1000);
	cr_expect_eq(vr_page_tracker_nr_pages(none), 0, "no range: expected 0 pages");
	vr_page_tracker_start(none, 0);
	cr_expect_eq(vr_page_tracker_scan(none, 1000), 0, "no range: the scan should find 0");
	cr_expect_eq(vr_page_tracker_idle_bytes(none, 0, G_MAXUINT64, 0), 0,
		     "no range: no idle bytes");
}

/* ---- scanning ---- */

TestSuite(page_tracker_scan, .description = "scans, idle times and idle runs (fake source)");

/*
 * Ranges with holes, given unsorted (pages):
 *
 *   0   4   8  12 13 14      20     27
 *   [###)   [###) [#)        [######)
 *
 * 16 pages.
 */
static const struct vr_range holes_ranges[] = {
	{ 20 * PAGE, 27 * PAGE },
	{ 0, 4 * PAGE },
	{ 13 * PAGE, 14 * PAGE },
	{ 8 * PAGE, 12 * PAGE },
};

static bool in_holes_ranges(uint64_t page)
{
	for (size_t i = 0; i < G_N_ELEMENTS(holes_ranges); i++)
		if (page * PAGE >= holes_ranges[i].start && page * PAGE < holes_ranges[i].end)
			return true;
	return false;
}

Test(page_tracker_scan, every_page_checked_once_per_scan)
{
	g_autoptr(fake_source) f = fake_new();
	g_autoptr(vr_page_tracker)
		pt = tracker_new_ok(&fake_ops, f, holes_ranges, G_N_ELEMENTS(holes_ranges), 1000);
	/* pages found accessed per scan, some of them in holes (never asked about) */
	static const uint64_t accessed[][4] = {
		{ 0, 5, 13, 26 },
		{ 3, 8, 20, 30 },
		{ 6, 7, 14, 15 },
		{ 1, 2, 9, 10 },
	};
	static const uint64_t want_found[] = { 3, 3, 0, 4 };

	cr_assert_eq(vr_page_tracker_nr_pages(pt), 16, "expected 16 pages, got %" G_GUINT64_FORMAT,
		     vr_page_tracker_nr_pages(pt));
	vr_page_tracker_start(pt, 0);
	cr_expect_eq(fake_pages_in_calls(f, FAKE_CHECK, 0), 0, "start() should check nothing");
	for (uint64_t p = 0; p < 40; p++)
		cr_assert_eq(f->nr_prepares[p], in_holes_ranges(p),
			     "start(): page %" G_GUINT64_FORMAT
			     " should be made old %d times, got %u",
			     p, in_holes_ranges(p), f->nr_prepares[p]);

	for (guint k = 0; k < G_N_ELEMENTS(accessed); k++) {
		uint64_t found;

		set_accessed(f, accessed[k], 4);
		found = vr_page_tracker_scan(pt, (k + 1) * 1000);
		cr_expect_eq(found, want_found[k],
			     "scan %u: expected %" G_GUINT64_FORMAT
			     " pages found accessed, got %" G_GUINT64_FORMAT,
			     k + 1, want_found[k], found);
		for (uint64_t p = 0; p < 40; p++) {
			guint want = in_holes_ranges(p) ? k + 1 : 0;

			cr_assert_eq(f->nr_checks[p], want,
				     "after %u scans page %" G_GUINT64_FORMAT
				     " should be checked %u times, got %u",
				     k + 1, p, want, f->nr_checks[p]);
			cr_assert_eq(f->nr_prepares[p], in_holes_ranges(p) ? want + 1 : 0,
				     "after start and %u scans page %" G_GUINT64_FORMAT
				     " should be made old %u times, got %u",
				     k + 1, p, in_holes_ranges(p) ? want + 1 : 0,
				     f->nr_prepares[p]);
		}
	}
}

/*
 * Within a scan every check comes before any prepare, across batches too:
 * 8500 pages are more than one batch.
 */
Test(page_tracker_scan, checks_before_prepares)
{
	g_autoptr(fake_source) f = fake_new();
	static const struct vr_range ranges[] = { { 3500 * PAGE, 9000 * PAGE },
						  { 0, 3000 * PAGE } };
	g_autoptr(vr_page_tracker)
		pt = tracker_new_ok(&fake_ops, f, ranges, G_N_ELEMENTS(ranges), 1000);
	const uint64_t nr = 8500;

	vr_page_tracker_start(pt, 0);
	cr_expect_eq(fake_pages_in_calls(f, FAKE_PREPARE, 0), nr,
		     "start() should make %" G_GUINT64_FORMAT " pages old", nr);
	for (guint k = 1; k <= 3; k++) {
		guint from = f->calls->len;
		bool seen_prepare = false;
		guint nr_check_calls = 0;

		vr_page_tracker_scan(pt, k * 1000);
		for (guint i = from; i < f->calls->len; i++) {
			const struct fake_call *c = &g_array_index(f->calls, struct fake_call, i);

			cr_assert_eq(
				c->now_us, k * 1000,
				"scan %u: every call should be at the scan's time %u, call %u is at %" G_GUINT64_FORMAT,
				k, k * 1000, i - from, c->now_us);
			if (c->kind == FAKE_PREPARE)
				seen_prepare = true;
			else
				cr_assert_not(
					seen_prepare,
					"scan %u: call %u is a check after a prepare: every check "
					"should come first",
					k, i - from);
			nr_check_calls += c->kind == FAKE_CHECK;
		}
		cr_expect_gt(nr_check_calls, 1, "scan %u: 8500 pages should take several batches",
			     k);
		cr_expect_eq(fake_pages_in_calls(f, FAKE_CHECK, from), nr,
			     "scan %u: expected %" G_GUINT64_FORMAT " pages checked", k, nr);
		cr_expect_eq(fake_pages_in_calls(f, FAKE_PREPARE, from), nr,
			     "scan %u: expected %" G_GUINT64_FORMAT " pages made old", k, nr);
	}
	for (uint64_t p = 0; p < 9000; p++)
		cr_assert_eq(f->nr_checks[p], (p < 3000 || p >= 3500) ? 3 : 0,
			     "page %" G_GUINT64_FORMAT ": expected %d checks in 3 scans, got %u", p,
			     (p < 3000 || p >= 3500) ? 3 : 0, f->nr_checks[p]);
}

/*
 * Six pages [0, 6), scans 1..4 every 1000 us; "x" = found accessed:
 *
 *   page   scan 1  2  3  4   last   idle after 4 scans
 *   0           x  x  x  x   4      0
 *   1           x            1      3000
 *   2                        -      4000 (never)
 *   3                 x      3      1000
 *   4              x         2      2000
 *   5                    x   4      0
 */
#define IDLE_I 1000ULL

static const uint64_t idle_pattern[4][2] = { { 0, 1 }, { 0, 4 }, { 0, 3 }, { 0, 5 } };

struct idle_bytes_case {
	uint64_t min_idle_us;
	uint64_t start, end;
	uint64_t bytes;
};

ParameterizedTestParameters(page_tracker_scan, idle_bytes_by_hand)
{
	static struct idle_bytes_case cases[] = {
		{ 0, 0, 6 * PAGE, 6 * PAGE },
		{ 1, 0, 6 * PAGE, 4 * PAGE },
		{ IDLE_I, 0, 6 * PAGE, 4 * PAGE },
		{ IDLE_I + 1, 0, 6 * PAGE, 3 * PAGE },
		{ 2 * IDLE_I, 0, 6 * PAGE, 3 * PAGE },
		{ 3 * IDLE_I, 0, 6 * PAGE, 2 * PAGE },
		{ 4 * IDLE_I, 0, 6 * PAGE, 1 * PAGE },
		{ 4 * IDLE_I + 1, 0, 6 * PAGE, 0 },
		{ 100 * IDLE_I, 0, 6 * PAGE, 0 },
		/* parts of the range */
		{ IDLE_I, PAGE, 3 * PAGE, 2 * PAGE },
		{ IDLE_I, 3 * PAGE, 4 * PAGE, 1 * PAGE },
		{ IDLE_I, 5 * PAGE, 6 * PAGE, 0 },
		{ 0, 2 * PAGE, 2 * PAGE, 0 },
		/* beyond the tracked pages */
		{ 0, 0, 100 * PAGE, 6 * PAGE },
		{ 0, 6 * PAGE, 100 * PAGE, 0 },
		/* ending inside page 2 (idle): its bytes below the end */
		{ 3 * IDLE_I, 0, 2 * PAGE + 100, PAGE + 100 },
	};

	return cr_make_param_array(struct idle_bytes_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct idle_bytes_case *c, page_tracker_scan, idle_bytes_by_hand)
{
	g_autoptr(fake_source) f = fake_new();
	struct vr_range r = { 0, 6 * PAGE };
	g_autoptr(vr_page_tracker) pt = tracker_new_ok(&fake_ops, f, &r, 1, IDLE_I);
	uint64_t got;

	vr_page_tracker_start(pt, 0);
	for (guint k = 0; k < 4; k++) {
		set_accessed(f, idle_pattern[k], 2);
		vr_page_tracker_scan(pt, (k + 1) * IDLE_I);
	}
	got = vr_page_tracker_idle_bytes(pt, c->start, c->end, c->min_idle_us);
	cr_expect_eq(
		got, c->bytes,
		"[0x%" G_GINT64_MODIFIER "x, 0x%" G_GINT64_MODIFIER "x) idle >= %" G_GUINT64_FORMAT
		" us after 4 scans: expected %" G_GUINT64_FORMAT " bytes, got %" G_GUINT64_FORMAT,
		c->start, c->end, c->min_idle_us, c->bytes, got);
}

/* A page found accessed in scan k is idle (n - k) * interval after n scans. */
Test(page_tracker_scan, idle_time_grows_by_an_interval_a_scan)
{
	g_autoptr(fake_source) f = fake_new();
	struct vr_range r = { 0, 64 * PAGE };
	g_autoptr(vr_page_tracker) pt = tracker_new_ok(&fake_ops, f, &r, 1, IDLE_I);
	guint last[64] = { 0 }; /* scan that last found each page accessed, 0 for none */
	struct vr_rng rng;

	vr_rng_seed(&rng, 1);
	vr_page_tracker_start(pt, 0);
	for (guint n = 1; n <= 20; n++) {
		for (uint64_t p = 0; p < 64; p++) {
			/* page p is accessed with probability (p % 8) / 8 */
			f->accessed[p] = vr_rng_below(&rng, 8) < p % 8;
			if (f->accessed[p])
				last[p] = n;
		}
		vr_page_tracker_scan(pt, n * IDLE_I);
		for (uint64_t p = 0; p < 64; p++) {
			uint64_t idle = (n - last[p]) * IDLE_I;
			uint64_t a = p * PAGE, b = a + PAGE;

			cr_assert_eq(vr_page_tracker_idle_bytes(pt, a, b, idle), PAGE,
				     "after %u scans page %" G_GUINT64_FORMAT
				     " (last accessed in scan %u) should be idle %" G_GUINT64_FORMAT
				     " us",
				     n, p, last[p], idle);
			cr_assert_eq(
				vr_page_tracker_idle_bytes(pt, a, b, idle + 1), 0,
				"after %u scans page %" G_GUINT64_FORMAT
				" (last accessed in scan %u) should not be idle over %" G_GUINT64_FORMAT
				" us",
				n, p, last[p], idle);
		}
	}
}

static void expect_runs(GArray *runs, const struct vr_range *want, guint nr, const char *what)
{
	cr_expect_eq(runs->len, nr, "%s: expected %u idle runs, got %u", what, nr, runs->len);
	for (guint i = 0; i < MIN(nr, runs->len); i++) {
		const struct vr_range *r = &g_array_index(runs, struct vr_range, i);

		cr_expect(r->start == want[i].start && r->end == want[i].end,
			  "%s: run %u should be pages [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			  "), got [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ")",
			  what, i, want[i].start / PAGE, want[i].end / PAGE, r->start / PAGE,
			  r->end / PAGE);
	}
}

/*
 * Ranges [0, 4) and [4, 6) touch; [8, 12) is after a hole (pages):
 *
 *   page      0 1 2 3 | 4 5 | . . | 8 9 10 11
 *   accessed    x     |     |     |   x
 *   idle runs [0,1) [2,    6)     [8,9) [10,12)
 *
 * Runs merge across touching ranges, never across the hole.
 */
Test(page_tracker_scan, idle_runs_merge_but_not_across_holes)
{
	g_autoptr(fake_source) f = fake_new();
	static const struct vr_range ranges[] = { { 8 * PAGE, 12 * PAGE },
						  { 0, 4 * PAGE },
						  { 4 * PAGE, 6 * PAGE } };
	static const uint64_t accessed[] = { 1, 9 };
	static const struct vr_range some[] = { { 0, PAGE },
						{ 2 * PAGE, 6 * PAGE },
						{ 8 * PAGE, 9 * PAGE },
						{ 10 * PAGE, 12 * PAGE } };
	static const struct vr_range all[] = { { 0, 6 * PAGE }, { 8 * PAGE, 12 * PAGE } };
	g_autoptr(vr_page_tracker)
		pt = tracker_new_ok(&fake_ops, f, ranges, G_N_ELEMENTS(ranges), IDLE_I);
	g_autoptr(GArray) before = NULL;
	g_autoptr(GArray) after = NULL;
	g_autoptr(GArray) zero = NULL;
	g_autoptr(GArray) longer = NULL;

	vr_page_tracker_start(pt, 0);
	before = vr_page_tracker_idle_ranges(pt, IDLE_I);
	expect_runs(before, NULL, 0, "before any scan, idle >= 1 interval");
	set_accessed(f, accessed, G_N_ELEMENTS(accessed));
	vr_page_tracker_scan(pt, IDLE_I);
	after = vr_page_tracker_idle_ranges(pt, IDLE_I);
	expect_runs(after, some, G_N_ELEMENTS(some), "one scan, pages 1 and 9 accessed");
	zero = vr_page_tracker_idle_ranges(pt, 0);
	expect_runs(zero, all, G_N_ELEMENTS(all), "idle >= 0 (every page)");
	set_accessed(f, NULL, 0);
	vr_page_tracker_scan(pt, 2 * IDLE_I);
	longer = vr_page_tracker_idle_ranges(pt, 2 * IDLE_I);
	expect_runs(longer, some, G_N_ELEMENTS(some), "idle >= 2 intervals after 2 scans");
}

/*
 * Partial scans of 5 pages walk the 16 pages of holes_ranges in address
 * order, each page checked once, and count as one scan at the end.
 */
Test(page_tracker_scan, partial_scans_cover_every_page_then_count)
{
	g_autoptr(fake_source) f = fake_new();
	g_autoptr(vr_page_tracker)
		pt = tracker_new_ok(&fake_ops, f, holes_ranges, G_N_ELEMENTS(holes_ranges), IDLE_I);
	/* the tracked pages in address order */
	static const uint64_t order[16] = {
		0, 1, 2, 3, 8, 9, 10, 11, 13, 20, 21, 22, 23, 24, 25, 26
	};
	static const uint64_t want_nr[] = { 5, 5, 5, 1 };
	static const uint64_t accessed[] = { 9, 24 };
	uint64_t done = 0;

	vr_page_tracker_start(pt, 0);
	set_accessed(f, accessed, G_N_ELEMENTS(accessed));
	for (guint call = 0; call < G_N_ELEMENTS(want_nr); call++) {
		uint64_t nr = vr_page_tracker_scan_part(pt, IDLE_I, 5);

		cr_assert_eq(nr, want_nr[call],
			     "partial scan %u: expected %" G_GUINT64_FORMAT
			     " pages scanned, got %" G_GUINT64_FORMAT,
			     call, want_nr[call], nr);
		done += nr;
		for (guint i = 0; i < 16; i++)
			cr_assert_eq(f->nr_checks[order[i]], i < done,
				     "after %" G_GUINT64_FORMAT
				     " pages of partial scans, page %" G_GUINT64_FORMAT
				     " should be checked %d times, got %u",
				     done, order[i], i < done, f->nr_checks[order[i]]);
		/* idle times between the parts: see page_found_by_unfinished_scan_is_not_idle */
	}
	cr_expect_eq(
		vr_page_tracker_idle_bytes(pt, 0, 27 * PAGE, IDLE_I), 14 * PAGE,
		"after the parts of one scan the 14 pages not accessed should be idle 1 interval");
	cr_expect_eq(vr_page_tracker_idle_bytes(pt, 0, 27 * PAGE, IDLE_I + 1), 0,
		     "after the parts of one scan no page should be idle over 1 interval");

	/* a second pass in one part; its scan is the second */
	set_accessed(f, NULL, 0);
	cr_expect_eq(vr_page_tracker_scan_part(pt, 2 * IDLE_I, 1000), 16,
		     "a part larger than the pages left should scan them all (16)");
	for (guint i = 0; i < 16; i++)
		cr_assert_eq(f->nr_checks[order[i]], 2,
			     "page %" G_GUINT64_FORMAT " should be checked once per pass",
			     order[i]);
	cr_expect_eq(vr_page_tracker_idle_bytes(pt, 0, 27 * PAGE, 2 * IDLE_I), 14 * PAGE,
		     "after two scans the pages never accessed should be idle 2 intervals");
	cr_expect_eq(vr_page_tracker_idle_bytes(pt, 0, 27 * PAGE, IDLE_I), 16 * PAGE,
		     "after two scans the pages accessed in the first should be idle 1 interval");
	cr_expect_eq(vr_page_tracker_scan_part(pt, 3 * IDLE_I, 0), 0,
		     "a part of 0 pages should scan nothing");
}

/*
 * Between the parts of a scan, a page the current scan already found
 * accessed is idle for 0 us, not for the full range of the counter.
 *
 * (A regression test: scan_pages() sets last_seen to nr_scans + 1 before the
 * scan completes, and page_idle() once let nr_scans - last_seen wrap around.)
 */
Test(page_tracker_scan, page_found_by_unfinished_scan_is_not_idle)
{
	g_autoptr(fake_source) f = fake_new();
	struct vr_range r = { 0, 16 * PAGE };
	g_autoptr(vr_page_tracker) pt = tracker_new_ok(&fake_ops, f, &r, 1, IDLE_I);
	g_autoptr(GArray) runs = NULL;

	vr_page_tracker_start(pt, 0);
	memset(f->accessed, 1, 16 * sizeof(*f->accessed));
	cr_assert_eq(vr_page_tracker_scan_part(pt, IDLE_I, 8), 8, "the part should scan 8 pages");
	cr_expect_eq(vr_page_tracker_idle_bytes(pt, 0, 16 * PAGE, 1), 0,
		     "pages 0-7 were just found accessed and pages 8-15 not yet scanned: none "
		     "should be idle for 1 us, got %" G_GUINT64_FORMAT " bytes",
		     vr_page_tracker_idle_bytes(pt, 0, 16 * PAGE, 1));
	runs = vr_page_tracker_idle_ranges(pt, 1);
	cr_expect_eq(runs->len, 0, "no page should be in an idle run, got %u runs", runs->len);
}

/* ---- against the simulator ---- */

TestSuite(page_tracker_sim, .description = "the baseline is exact on the simulated guest");

#define SIM_GUEST	(32 * MIB)
#define SIM_MIN_IDLE_US (5 * US_PER_S)

struct sim_case {
	char script[16]; /* a built-in, or "" for the mixed script below */
	uint64_t interval_us;
};

ParameterizedTestParameters(page_tracker_sim, idle_bytes_match_the_truth)
{
	static struct sim_case cases[] = {
		{ "", 500000 },		 { "", 1000000 },     { "", 5000000 },
		{ "zipf", 1000000 },	 { "scan", 500000 },  { "scan-fast", 1000000 },
		{ "shifting", 1000000 }, { "demo", 2500000 },
	};

	return cr_make_param_array(struct sim_case, cases, G_N_ELEMENTS(cases));
}

/* Phases of 3 s (not a multiple of 5 s: the window spans phase boundaries). */
static void load_script(struct vr_sim *sim, const char *name)
{
	const uint64_t pages = SIM_GUEST / PAGE, phase_us = 3 * US_PER_S;
	g_autoptr(GError) err = NULL;

	if (name[0]) {
		cr_assert(vr_sim_load_builtin(sim, name, phase_us, &err), "'%s' should load: %s",
			  name, err ? err->message : "");
		return;
	}
	{
		struct vr_sim_set a[] = {
			{ .kind = VR_SIM_SET_HOT, .start = 0, .end = pages / 8 * PAGE, .hz = 0.7 },
			{ .kind = VR_SIM_SET_ZIPF,
			  .start = pages / 4 * PAGE,
			  .end = pages / 2 * PAGE,
			  .zipf_s = 1.2,
			  .zipf_total_hz = 3000 },
		};
		struct vr_sim_set b[] = {
			{ .kind = VR_SIM_SET_SCAN,
			  .start = pages / 2 * PAGE,
			  .end = SIM_GUEST,
			  .hz = 3,
			  .scan_window_bytes = MIB,
			  .scan_speed_bps = 2 * MIB },
			{ .kind = VR_SIM_SET_HOT, .start = 0, .end = pages / 16 * PAGE, .hz = 0.05 },
		};

		cr_assert(vr_sim_add_phase(sim, "a", phase_us, a, G_N_ELEMENTS(a), &err),
			  "phase a: %s", err ? err->message : "");
		cr_assert(vr_sim_add_phase(sim, "b", phase_us, b, G_N_ELEMENTS(b), &err),
			  "phase b: %s", err ? err->message : "");
		cr_assert(vr_sim_add_phase(sim, "idle", 2 * phase_us, NULL, 0, &err), "idle: %s",
			  err ? err->message : "");
	}
}

/*
 * Scanning every interval that divides 5 s, a page is idle >= 5 s exactly when
 * the simulator says it was not accessed in (t - 5 s, t].
 */
ParameterizedTest(struct sim_case *c, page_tracker_sim, idle_bytes_match_the_truth)
{
	g_autoptr(vr_sim) sim = vr_sim_new(SIM_GUEST, 3, NULL);
	struct vr_sim_access *sa = NULL;
	g_autoptr(vr_page_tracker) pt = NULL;
	struct vr_range ram = { 0, SIM_GUEST };
	const uint64_t end_us = 30 * US_PER_S;
	uint64_t nr_scans = 0, min_idle = G_MAXUINT64, max_idle = 0;

	cr_assert_not_null(sim, "a 32 MiB guest should be created");
	load_script(sim, c->script);
	sa = vr_sim_access_new(sim);
	pt = tracker_new_ok(&vr_sim_access_ops, sa, &ram, 1, c->interval_us);
	vr_page_tracker_start(pt, 0);
	for (uint64_t t = c->interval_us; t <= end_us; t += c->interval_us) {
		uint64_t found = vr_page_tracker_scan(pt, t);

		nr_scans++;
		cr_assert_eq(found * PAGE,
			     vr_sim_accessed_bytes(sim, 0, SIM_GUEST, t - c->interval_us, t),
			     "'%s', scan at %" G_GUINT64_FORMAT
			     " us: the pages found accessed should be "
			     "those the simulator accessed since the previous scan",
			     c->script, t);
		if (t >= SIM_MIN_IDLE_US) {
			uint64_t got =
				vr_page_tracker_idle_bytes(pt, 0, SIM_GUEST, SIM_MIN_IDLE_US);
			uint64_t want = SIM_GUEST - vr_sim_accessed_bytes(sim, 0, SIM_GUEST,
									  t - SIM_MIN_IDLE_US, t);

			cr_assert_eq(got, want,
				     "'%s', interval %" G_GUINT64_FORMAT
				     " us, at %" G_GUINT64_FORMAT " us: expected %" G_GUINT64_FORMAT
				     " bytes idle >= 5 s (not accessed in "
				     "the last 5 s), got %" G_GUINT64_FORMAT,
				     c->script, c->interval_us, t, want, got);
			min_idle = MIN(min_idle, got);
			max_idle = MAX(max_idle, got);
		}
	}
	cr_expect_eq(vr_sim_access_nr_checks(sa), nr_scans * (SIM_GUEST / PAGE),
		     "every scan should check every page: expected %" G_GUINT64_FORMAT
		     " checks, got %" G_GUINT64_FORMAT,
		     nr_scans * (SIM_GUEST / PAGE), vr_sim_access_nr_checks(sa));
	/* not vacuous: some pages idle, some not */
	cr_expect(
		max_idle > 0 && min_idle < SIM_GUEST,
		"'%s': expected some pages idle and some not, idle bytes ranged %" G_GUINT64_FORMAT
		"..%" G_GUINT64_FORMAT,
		c->script, min_idle, max_idle);
	vr_sim_access_ops.cleanup(sa);
}
