/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the pageout plan (common/pageout-plan.c): which
 * guest-physical ranges the host pages out from a picture under a pageout
 * scheme and a quota. Coldest first, ties by address, trimmed to pages, cut
 * at the quota; the same selection as the fleet's histogram; the pictures
 * and schemes it refuses.
 *
 * Pure: struct literals in, ranges out. Sizes in MiB (2^20 bytes) unless a
 * name says otherwise, times in us. Every picture has a 5 ms sampling and a
 * 100 ms aggregation interval, so nr_accesses go up to 20 and an age of 10
 * is 1 s. Parameter structs hold no pointers (Criterion re-executes the
 * binary for each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fleet-quota.h"
#include "pageout-plan.h"
#include "picture-region.h"
#include "picture.h"
#include "test-messages.h"

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define MS  1000ULL    /* us per ms */
#define S   1000000ULL /* us per s */

#define SAMPLE_US (5 * MS)
#define AGGR_US	  (100 * MS)

/*
 * Age-only cold scores under reclaim_scheme() (SEMANTICS.md §2.2) of a
 * region with 0 accesses: age (aggregation intervals) -> seconds -> bit
 * length L -> (32 - L) * 100 / 64 -> * 99 / 100 -> 99 - that.
 */
#define AGE_5S	  50   /* L = 3:  55 */
#define AGE_10S	  100  /* L = 4:  57 */
#define AGE_20S	  200  /* L = 5:  58 */
#define AGE_600S  6000 /* L = 10: 66 */
#define AGE_YOUNG 20   /* 2 s: below the scheme's 5 s */

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

/* The published DAMON_RECLAIM scheme: unused (0 accesses) for at least 5 s,
 * scored by age alone. */
static struct vr_scheme *reclaim_scheme(void)
{
	struct vr_scheme *s = vr_scheme_new("damon-reclaim", VR_ACTION_PAGEOUT);

	s->pattern.max_nr_accesses = 0;
	s->pattern.min_age_us = 5 * S;
	s->quota.weight_age = 1;
	return s;
}

/* A picture of @nr @regions with the file's intervals; free with
 * vr_proto_regions_clear() (g_auto(vr_proto_regions)). */
static struct vr_proto_regions picture(const struct vr_picture_region *regions, guint nr)
{
	struct vr_proto_regions p = {
		.sample_interval_us = SAMPLE_US,
		.aggr_interval_us = AGGR_US,
		.regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region)),
	};

	g_array_append_vals(p.regions, regions, nr);
	return p;
}

/* vr_pageout_plan() that must succeed: the plan (owned). */
static GArray *plan_ok(const struct vr_proto_regions *pic, const struct vr_scheme *s,
		       uint64_t guest_bytes, uint64_t quota, const char *what)
{
	g_autoptr(GError) err = NULL;
	GArray *ranges = NULL;

	cr_assert(vr_pageout_plan(pic, s, guest_bytes, quota, &ranges, &err),
		  "%s: the plan should succeed: %s", what, err ? err->message : "?");
	cr_assert_not_null(ranges, "%s: a plan comes with an array", what);
	return ranges;
}

static const struct vr_pageout_range *range_at(const GArray *a, guint i)
{
	return &g_array_index(a, struct vr_pageout_range, i);
}

/* @got is exactly the @nr ranges of @want, in order. */
static void assert_plan(const GArray *got, const struct vr_pageout_range *want, guint nr,
			const char *what)
{
	for (guint i = 0; i < MIN(got->len, nr); i++) {
		const struct vr_pageout_range *g = range_at(got, i);

		cr_assert(g->start == want[i].start && g->end == want[i].end &&
				  g->score == want[i].score,
			  "%s: range %u should be [0x%" PRIx64 ", 0x%" PRIx64 ") score %u, got "
			  "[0x%" PRIx64 ", 0x%" PRIx64 ") score %u",
			  what, i, want[i].start, want[i].end, want[i].score, g->start, g->end,
			  g->score);
	}
	cr_assert_eq(got->len, nr, "%s: expected %u ranges, got %u", what, nr, got->len);
}

/* ------------------------------------------------------------------------- */
/* Plans                                                                     */
/* ------------------------------------------------------------------------- */

TestSuite(pageout_plan, .description = "vr_pageout_plan()");

/*
 * One picture, a quota and the plan it gives. @min_sz sets the scheme's
 * min_sz_bytes; @no_weights sets every weight to 0 (all regions score 99);
 * @guest_bytes 0 means 1 GiB.
 */
struct plan_case {
	char name[56];
	struct vr_picture_region regions[6];
	guint nr;
	uint64_t min_sz;
	bool no_weights;
	uint64_t guest_bytes;
	uint64_t quota;
	struct vr_pageout_range want[6];
	guint nr_want;
};

/*
 * The picture of the first cases:
 *
 *   region  [start, end)    nr_acc  age         selected?        score
 *   0       [0, 4M)          0      10 s        yes              57
 *   1       [4M, 8M)         3      10 s        no (accessed)
 *   2       [8M, 16M)        0      2 s         no (too young)
 *   3       [16M, 32M)       0      600 s       yes              66
 *   4       [32M, 34M)       0      5 s         yes              55
 *
 * Coldest first: 3 (16 MiB), 0 (4 MiB), 4 (2 MiB): 22 MiB selected.
 */
#define MIXED_REGIONS                                                                              \
	{                                                                                          \
		{ 0, 4 * MIB, 0, AGE_10S }, { 4 * MIB, 8 * MIB, 3, AGE_10S },                      \
			{ 8 * MIB, 16 * MIB, 0, AGE_YOUNG }, { 16 * MIB, 32 * MIB, 0, AGE_600S },  \
		{                                                                                  \
			32 * MIB, 34 * MIB, 0, AGE_5S                                              \
		}                                                                                  \
	}

static struct plan_case plan_cases[] = {
	{ .name = "coldest first, hot and young regions skipped",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = G_MAXUINT64,
	  .want = { { 16 * MIB, 32 * MIB, 66 }, { 0, 4 * MIB, 57 }, { 32 * MIB, 34 * MIB, 55 } },
	  .nr_want = 3 },
	{ .name = "quota cut inside the second range",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 18 * MIB,
	  .want = { { 16 * MIB, 32 * MIB, 66 }, { 0, 2 * MIB, 57 } },
	  .nr_want = 2 },
	{ .name = "quota not a page multiple: rounded down",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 18 * MIB + 4095,
	  .want = { { 16 * MIB, 32 * MIB, 66 }, { 0, 2 * MIB, 57 } },
	  .nr_want = 2 },
	{ .name = "quota cut inside the first range",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 5 * MIB + 12 * KIB,
	  .want = { { 16 * MIB, 21 * MIB + 12 * KIB, 66 } },
	  .nr_want = 1 },
	{ .name = "quota ending exactly at a range's end",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 20 * MIB,
	  .want = { { 16 * MIB, 32 * MIB, 66 }, { 0, 4 * MIB, 57 } },
	  .nr_want = 2 },
	{ .name = "quota of one page",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 4 * KIB,
	  .want = { { 16 * MIB, 16 * MIB + 4 * KIB, 66 } },
	  .nr_want = 1 },
	{ .name = "quota below a page: nothing",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 4095,
	  .nr_want = 0 },
	{ .name = "quota 0: nothing", .regions = MIXED_REGIONS, .nr = 5, .quota = 0, .nr_want = 0 },
	{ .name = "quota above what is selected: all of it",
	  .regions = MIXED_REGIONS,
	  .nr = 5,
	  .quota = 23 * MIB,
	  .want = { { 16 * MIB, 32 * MIB, 66 }, { 0, 4 * MIB, 57 }, { 32 * MIB, 34 * MIB, 55 } },
	  .nr_want = 3 },
	/*
	 * Equal scores go by address: 66, 57, 66, 57, 58 gives the two 66s in
	 * address order, then the 58, then the two 57s in address order.
	 */
	{ .name = "ties by address, lower first",
	  .regions = { { 0, 4 * MIB, 0, AGE_10S },
		       { 4 * MIB, 8 * MIB, 0, AGE_600S },
		       { 8 * MIB, 12 * MIB, 0, AGE_10S },
		       { 12 * MIB, 16 * MIB, 0, AGE_600S },
		       { 16 * MIB, 20 * MIB, 0, AGE_20S } },
	  .nr = 5,
	  .quota = G_MAXUINT64,
	  .want = { { 4 * MIB, 8 * MIB, 66 },
		    { 12 * MIB, 16 * MIB, 66 },
		    { 16 * MIB, 20 * MIB, 58 },
		    { 0, 4 * MIB, 57 },
		    { 8 * MIB, 12 * MIB, 57 } },
	  .nr_want = 5 },
	{ .name = "ties cut by the quota keep the lower address",
	  .regions = { { 0, 4 * MIB, 0, AGE_600S }, { 8 * MIB, 12 * MIB, 0, AGE_600S } },
	  .nr = 2,
	  .quota = 6 * MIB,
	  .want = { { 0, 4 * MIB, 66 }, { 8 * MIB, 10 * MIB, 66 } },
	  .nr_want = 2 },
	{ .name = "no weights: every region scores 99, address order",
	  .regions = { { 0, 4 * MIB, 0, AGE_10S }, { 4 * MIB, 8 * MIB, 0, AGE_600S } },
	  .nr = 2,
	  .no_weights = true,
	  .quota = G_MAXUINT64,
	  .want = { { 0, 4 * MIB, 99 }, { 4 * MIB, 8 * MIB, 99 } },
	  .nr_want = 2 },
	/*
	 * Trimming: start up, end down to 4 KiB pages, after selection.
	 *   [0x1800, 0x5800)   -> [0x2000, 0x5000)
	 *   [0x6001, 0x7000)   -> empty (start rounds up to the end): dropped
	 *   [0x8000, 0x8fff)   -> empty (end rounds down to the start): dropped
	 *   [0x9800, 0xa800)   -> empty (no whole page inside): dropped
	 *   [0x10000, 0x13000) -> as is
	 */
	{ .name = "trimmed to whole pages, empty ones dropped",
	  .regions = { { 0x1800, 0x5800, 0, AGE_600S },
		       { 0x6001, 0x7000, 0, AGE_600S },
		       { 0x8000, 0x8fff, 0, AGE_600S },
		       { 0x9800, 0xa800, 0, AGE_600S },
		       { 0x10000, 0x13000, 0, AGE_600S } },
	  .nr = 5,
	  .quota = G_MAXUINT64,
	  .want = { { 0x2000, 0x5000, 66 }, { 0x10000, 0x13000, 66 } },
	  .nr_want = 2 },
	{ .name = "the quota counts trimmed bytes",
	  .regions = { { 0x1800, 0x5800, 0, AGE_600S }, { 0x10000, 0x13000, 0, AGE_600S } },
	  .nr = 2,
	  .quota = 0x4000,
	  .want = { { 0x2000, 0x5000, 66 }, { 0x10000, 0x11000, 66 } },
	  .nr_want = 2 },
	{ .name = "trimmed at the top of the address space",
	  .regions = { { G_MAXUINT64 - 0x27ff, G_MAXUINT64, 0, AGE_600S } },
	  .nr = 1,
	  .guest_bytes = G_MAXUINT64,
	  .quota = G_MAXUINT64,
	  .want = { { G_MAXUINT64 - 0x1fff, G_MAXUINT64 - 0xfff, 66 } },
	  .nr_want = 1 },
	{ .name = "a region too small for the pattern is skipped",
	  .regions = { { 0, 1 * MIB, 0, AGE_600S }, { 1 * MIB, 4 * MIB, 0, AGE_10S } },
	  .nr = 2,
	  .min_sz = 2 * MIB,
	  .quota = G_MAXUINT64,
	  .want = { { 1 * MIB, 4 * MIB, 57 } },
	  .nr_want = 1 },
	{ .name = "only hot and young regions: an empty plan",
	  .regions = { { 0, 4 * MIB, 20, AGE_600S }, { 4 * MIB, 8 * MIB, 0, AGE_YOUNG } },
	  .nr = 2,
	  .quota = G_MAXUINT64,
	  .nr_want = 0 },
	{ .name = "an empty picture: an empty plan", .nr = 0, .quota = G_MAXUINT64, .nr_want = 0 },
};

ParameterizedTestParameters(pageout_plan, plans)
{
	return cr_make_param_array(struct plan_case, plan_cases, G_N_ELEMENTS(plan_cases));
}

ParameterizedTest(struct plan_case *c, pageout_plan, plans)
{
	g_auto(vr_proto_regions) pic = picture(c->regions, c->nr);
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GArray) got = NULL;
	uint64_t guest = c->guest_bytes ? c->guest_bytes : GIB;
	uint64_t want_bytes = 0;

	s->pattern.min_sz_bytes = c->min_sz;
	if (c->no_weights)
		s->quota.weight_age = 0;
	got = plan_ok(&pic, s, guest, c->quota, c->name);
	assert_plan(got, c->want, c->nr_want, c->name);
	for (guint i = 0; i < c->nr_want; i++)
		want_bytes += c->want[i].end - c->want[i].start;
	cr_assert_eq(vr_pageout_plan_bytes(got), want_bytes,
		     "%s: vr_pageout_plan_bytes() should be %" PRIu64 ", got %" PRIu64, c->name,
		     want_bytes, vr_pageout_plan_bytes(got));
	cr_assert_leq(vr_pageout_plan_bytes(got), c->quota, "%s: never more than the quota",
		      c->name);
}

/*
 * The plan selects what the fleet's histogram counts: with no quota and a
 * page-aligned picture, the plan's bytes per score are the histogram.
 */
Test(pageout_plan, selects_what_the_histogram_counts)
{
	const struct vr_picture_region regions[] = {
		{ 0, 4 * MIB, 0, AGE_10S },	     { 4 * MIB, 8 * MIB, 3, AGE_600S },
		{ 8 * MIB, 16 * MIB, 0, AGE_YOUNG }, { 16 * MIB, 32 * MIB, 0, AGE_600S },
		{ 32 * MIB, 34 * MIB, 0, AGE_5S },   { 40 * MIB, 41 * MIB, 0, AGE_20S },
		{ GIB, GIB + 8 * MIB, 0, AGE_600S },
	};
	g_auto(vr_proto_regions) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GArray) plan = NULL;
	uint64_t hist[VR_MAX_SCORE + 1], from_plan[VR_MAX_SCORE + 1] = { 0 };

	plan = plan_ok(&pic, s, GIB, G_MAXUINT64, "the whole picture");
	cr_assert(vr_fleet_cold_histogram(pic.regions, SAMPLE_US, AGGR_US, s, GIB, hist, NULL));
	for (guint i = 0; i < plan->len; i++)
		from_plan[range_at(plan, i)->score] +=
			range_at(plan, i)->end - range_at(plan, i)->start;
	for (guint score = 0; score <= VR_MAX_SCORE; score++)
		cr_assert_eq(from_plan[score], hist[score],
			     "score %u: the plan has %" PRIu64 " bytes, the histogram %" PRIu64,
			     score, from_plan[score], hist[score]);
}

/*
 * Any quota: the plan holds min(quota, selected) rounded down to pages, and
 * is the unlimited plan cut at that many bytes (a prefix, its last range
 * shortened from the top).
 */
Test(pageout_plan, every_quota_is_a_prefix_of_the_full_plan)
{
	const struct vr_picture_region regions[] = {
		{ 0x1800, 3 * MIB + 0x123, 0, AGE_10S },
		{ 4 * MIB, 8 * MIB, 0, AGE_600S },
		{ 8 * MIB, 9 * MIB, 0, AGE_5S },
		{ 12 * MIB, 13 * MIB + 0x800, 0, AGE_600S },
	};
	g_auto(vr_proto_regions) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GArray) full = plan_ok(&pic, s, GIB, G_MAXUINT64, "no quota");
	uint64_t selected = vr_pageout_plan_bytes(full);

	cr_assert_eq(selected % VR_PAGE_SIZE, 0, "whole pages");
	for (uint64_t quota = 0; quota <= selected + 3 * MIB; quota += 77777) {
		g_autofree char *what = g_strdup_printf("quota %" PRIu64, quota);
		g_autoptr(GArray) got = plan_ok(&pic, s, GIB, quota, what);
		uint64_t want = MIN(quota, selected);

		want -= want % VR_PAGE_SIZE;
		cr_assert_eq(vr_pageout_plan_bytes(got), want,
			     "%s: the plan should hold %" PRIu64 " bytes, holds %" PRIu64, what,
			     want, vr_pageout_plan_bytes(got));
		cr_assert_leq(got->len, full->len, "%s: no more ranges than the full plan", what);
		for (guint i = 0; i < got->len; i++) {
			const struct vr_pageout_range *g = range_at(got, i), *f = range_at(full, i);
			bool last = i + 1 == got->len;

			cr_assert(g->start == f->start && g->score == f->score &&
					  (last ? g->end <= f->end : g->end == f->end),
				  "%s: range %u [0x%" PRIx64 ", 0x%" PRIx64
				  ") is not the full plan's [0x%" PRIx64 ", 0x%" PRIx64 ")%s",
				  what, i, g->start, g->end, f->start, f->end,
				  last ? " cut from the top" : "");
			cr_assert(g->end > g->start && g->start % VR_PAGE_SIZE == 0 &&
					  g->end % VR_PAGE_SIZE == 0,
				  "%s: range %u is not whole non-empty pages", what, i);
		}
	}
}

Test(pageout_plan, no_regions_array_is_an_empty_picture)
{
	const struct vr_proto_regions pic = { .sample_interval_us = SAMPLE_US,
					      .aggr_interval_us = AGGR_US };
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GArray) got = plan_ok(&pic, s, GIB, G_MAXUINT64, "no regions array");

	cr_assert_eq(got->len, 0, "an empty plan");
	cr_assert_eq(vr_pageout_plan_bytes(NULL), 0, "no plan holds 0 bytes");
}

/* ------------------------------------------------------------------------- */
/* Refused pictures and schemes                                              */
/* ------------------------------------------------------------------------- */

/*
 * Pictures that break the rules. Each row: up to three regions, the
 * intervals, the guest's size, words the message must hold, and a number it
 * must name (the region index, or the bad value; -1 for none).
 */
struct refused_case {
	char name[48];
	struct vr_picture_region regions[3];
	guint nr;
	uint64_t sample_us;
	uint64_t aggr_us;
	uint64_t guest_bytes;
	char words[64]; /* ';'-separated groups of '|'-separated alternatives */
	long number;
};

static struct refused_case refused_cases[] = {
	{ "empty region",
	  { { 0, 4 * MIB, 0, AGE_600S }, { 4 * MIB, 4 * MIB, 0, AGE_600S } },
	  2,
	  SAMPLE_US,
	  AGGR_US,
	  GIB,
	  "region 1;empty",
	  1 },
	{ "end below start",
	  { { 8 * MIB, 4 * MIB, 0, AGE_600S } },
	  1,
	  SAMPLE_US,
	  AGGR_US,
	  GIB,
	  "region 0;empty",
	  0 },
	{ "out of order",
	  { { 0, 4 * MIB, 0, AGE_600S },
	    { 16 * MIB, 20 * MIB, 0, AGE_600S },
	    { 8 * MIB, 12 * MIB, 0, AGE_600S } },
	  3,
	  SAMPLE_US,
	  AGGR_US,
	  GIB,
	  "region 2;sorted",
	  2 },
	{ "overlapping",
	  { { 0, 8 * MIB, 0, AGE_600S }, { 4 * MIB, 12 * MIB, 0, AGE_600S } },
	  2,
	  SAMPLE_US,
	  AGGR_US,
	  GIB,
	  "region 1;overlap",
	  1 },
	{ "more accesses than samples",
	  { { 0, 4 * MIB, 0, AGE_600S }, { 4 * MIB, 8 * MIB, 21, AGE_600S } },
	  2,
	  SAMPLE_US,
	  AGGR_US,
	  GIB,
	  "region 1;nr_accesses",
	  21 },
	{ "more memory than the guest has",
	  { { 0, 48 * MIB, 0, AGE_600S }, { GIB, GIB + 32 * MIB, 0, AGE_600S } },
	  2,
	  SAMPLE_US,
	  AGGR_US,
	  64 * MIB,
	  "regions 0..1;more than the guest",
	  64 * 1048576L },
	{ "sample interval 0",
	  { { 0, 4 * MIB, 0, AGE_600S } },
	  1,
	  0,
	  AGGR_US,
	  GIB,
	  "sample_interval_us",
	  0 },
	{ "aggregation below sampling",
	  { { 0, 4 * MIB, 0, AGE_600S } },
	  1,
	  SAMPLE_US,
	  4 * MS,
	  GIB,
	  "aggr_interval_us",
	  4000 },
};

ParameterizedTestParameters(pageout_plan, refused_pictures)
{
	return cr_make_param_array(struct refused_case, refused_cases, G_N_ELEMENTS(refused_cases));
}

ParameterizedTest(struct refused_case *c, pageout_plan, refused_pictures)
{
	g_auto(vr_proto_regions) pic = picture(c->regions, c->nr);
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) before = g_array_new(FALSE, FALSE, 1);
	GArray *ranges = before; /* not NULL: the call must reset it */

	pic.sample_interval_us = c->sample_us;
	pic.aggr_interval_us = c->aggr_us;
	cr_assert_not(vr_pageout_plan(&pic, s, c->guest_bytes, G_MAXUINT64, &ranges, &err),
		      "%s: the picture should be refused", c->name);
	cr_assert_null(ranges, "%s: no plan on error", c->name);
	cr_assert_not_null(err, "%s: expected an error", c->name);
	assert_error(err, VR_PICTURE_ERROR, err->code, c->words, c->name);
	if (c->number >= 0)
		cr_assert(msg_names_number(err->message, c->number),
			  "%s: the message should name %ld: %s", c->name, c->number, err->message);
}

struct action_case {
	enum vr_action action;
};

static struct action_case action_cases[] = {
	{ VR_ACTION_COLD },	  { VR_ACTION_WILLNEED }, { VR_ACTION_HUGEPAGE },
	{ VR_ACTION_NOHUGEPAGE }, { VR_ACTION_STAT },
};

ParameterizedTestParameters(pageout_plan, refuses_schemes_that_are_not_pageout)
{
	return cr_make_param_array(struct action_case, action_cases, G_N_ELEMENTS(action_cases));
}

ParameterizedTest(struct action_case *c, pageout_plan, refuses_schemes_that_are_not_pageout)
{
	const struct vr_picture_region regions[] = { { 0, 4 * MIB, 0, AGE_600S } };
	g_auto(vr_proto_regions) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GError) err = NULL;
	g_autofree char *words = NULL;
	GArray *ranges = NULL;

	s->action = c->action;
	words = g_strdup_printf("damon-reclaim;%s;pageout", vr_action_name(c->action));
	cr_assert_not(vr_pageout_plan(&pic, s, GIB, G_MAXUINT64, &ranges, &err),
		      "a %s scheme should be refused", vr_action_name(c->action));
	cr_assert_null(ranges, "no plan on error");
	assert_error(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID, words, vr_action_name(c->action));
}

/* The scheme is refused before the picture is looked at. */
Test(pageout_plan, a_bad_scheme_is_named_before_a_bad_picture)
{
	const struct vr_picture_region regions[] = { { 8 * MIB, 4 * MIB, 0, AGE_600S } };
	g_auto(vr_proto_regions) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = vr_scheme_new("thp", VR_ACTION_HUGEPAGE);
	g_autoptr(GError) err = NULL;
	GArray *ranges = NULL;

	cr_assert_not(vr_pageout_plan(&pic, s, GIB, G_MAXUINT64, &ranges, &err));
	assert_error(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID, "thp;hugepage", "thp scheme");
}
