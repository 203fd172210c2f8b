/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the fleet quota (common/fleet-quota.c): the cold-byte
 * histogram a domain's agent picture gives under its pageout scheme (and the
 * pictures it refuses: the guest is untrusted), and the window's quota shared
 * across domains by adjusted cold score, priority and guaranteed memory.
 *
 * Everything is pure: struct literals in, numbers out. Tables in comments
 * picture the domains; sizes in MiB (2^20 bytes) unless a name says
 * otherwise, times in us. Parameter structs hold no pointers (Criterion
 * re-executes the binary for each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "fleet-quota.h"
#include "picture-region.h"
#include "picture.h"
#include "test-messages.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define MS  1000ULL    /* us per ms */
#define S   1000000ULL /* us per s */

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

static GArray *picture(const struct vr_picture_region *regions, guint nr)
{
	GArray *a = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));

	g_array_append_vals(a, regions, nr);
	return a;
}

static uint64_t sum(const uint64_t *v, size_t nr)
{
	uint64_t total = 0;

	for (size_t i = 0; i < nr; i++)
		total += v[i];
	return total;
}

/* Distributes @quota over @nr @d, asserting success. */
static void distribute_ok(const struct vr_fleet_domain *d, size_t nr, uint64_t quota,
			  uint64_t *shares)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_fleet_distribute(d, nr, quota, shares, &err), "distribute failed: %s",
		  err ? err->message : "?");
}

static void assert_shares(const uint64_t *got, const uint64_t *want, size_t nr, const char *what)
{
	for (size_t i = 0; i < nr; i++)
		cr_assert_eq(got[i], want[i],
			     "%s: domain %zu should give %" PRIu64
			     " bytes (%.3f MiB), gives %" PRIu64 " (%.3f MiB)",
			     what, i, want[i], (double)want[i] / MIB, got[i], (double)got[i] / MIB);
}

/* ------------------------------------------------------------------------- */
/* The histogram of a picture                                                */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_histogram, .description = "vr_fleet_cold_histogram()");

/*
 * 5 ms / 100 ms pictures; the scheme takes 0 accesses and age >= 5 s.
 * Age-only cold scores (SEMANTICS.md §2.2): age_s -> bit length L ->
 * age_sub = (32 - L) * 100 / 64 -> hot = age_sub * 99 / 100 -> 99 - hot.
 *
 *   region  [start, end)          nr_acc  age          selected?      score
 *   0       [0, 4M)                0      100 (10 s)   yes            L=4:  57
 *   1       [4M, 8M)               3      100          no (accessed)
 *   2       [8M, 16M)              0       20 (2 s)    no (too young)
 *   3       [16M, 32M)             0     6000 (600 s)  yes            L=10: 66
 *   4       [1G, 1G + 2M)          0       50 (5 s)    yes            L=3:  55
 *
 * The hole between 32 MiB and 1 GiB is the PCI hole: addresses may exceed
 * the guest's size, only the bytes covered count (34 of 64 MiB).
 */
Test(fleet_histogram, counts_only_what_the_scheme_selects)
{
	const struct vr_picture_region regions[] = {
		{ 0, 4 * MIB, 0, 100 },	       { 4 * MIB, 8 * MIB, 3, 100 },
		{ 8 * MIB, 16 * MIB, 0, 20 },  { 16 * MIB, 32 * MIB, 0, 6000 },
		{ GIB, GIB + 2 * MIB, 0, 50 },
	};
	g_autoptr(GArray) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GError) err = NULL;
	uint64_t hist[VR_MAX_SCORE + 1];

	cr_assert(vr_fleet_cold_histogram(pic, 5 * MS, 100 * MS, s, 64 * MIB, hist, &err),
		  "a consistent picture should be accepted: %s", err ? err->message : "?");
	cr_assert_eq(hist[57], 4 * MIB, "10 s idle: 4 MiB at score 57, got %" PRIu64, hist[57]);
	cr_assert_eq(hist[66], 16 * MIB, "600 s idle: 16 MiB at score 66, got %" PRIu64, hist[66]);
	cr_assert_eq(hist[55], 2 * MIB, "5 s idle: 2 MiB at score 55, got %" PRIu64, hist[55]);
	cr_assert_eq(sum(hist, VR_MAX_SCORE + 1), 22 * MIB,
		     "the hot and the young regions are not eligible: 22 MiB in all, got %" PRIu64,
		     sum(hist, VR_MAX_SCORE + 1));
}

Test(fleet_histogram, no_weights_put_everything_at_one_score)
{
	/* All weights 0: "without prioritization", every region scores 99 - 0. */
	const struct vr_picture_region regions[] = {
		{ 0, 4 * MIB, 0, 60 },
		{ 4 * MIB, 12 * MIB, 0, 60000 },
	};
	g_autoptr(GArray) pic = picture(regions, G_N_ELEMENTS(regions));
	g_autoptr(vr_scheme) s = reclaim_scheme();
	uint64_t hist[VR_MAX_SCORE + 1];

	s->quota.weight_age = 0;
	cr_assert(vr_fleet_cold_histogram(pic, 5 * MS, 100 * MS, s, 64 * MIB, hist, NULL));
	cr_assert_eq(hist[VR_MAX_SCORE], 12 * MIB, "expected all 12 MiB at score 99, got %" PRIu64,
		     hist[VR_MAX_SCORE]);
}

Test(fleet_histogram, empty_picture_and_exact_fit)
{
	const struct vr_picture_region whole[] = { { 0, 64 * MIB, 0, 1000 } };
	g_autoptr(GArray) empty = picture(NULL, 0);
	g_autoptr(GArray) pic = picture(whole, 1);
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GError) err = NULL;
	uint64_t hist[VR_MAX_SCORE + 1];

	memset(hist, 0xab, sizeof(hist));
	cr_assert(vr_fleet_cold_histogram(empty, 5 * MS, 100 * MS, s, 64 * MIB, hist, NULL));
	cr_assert_eq(sum(hist, VR_MAX_SCORE + 1), 0, "no regions: an all-zero histogram");
	cr_assert(vr_fleet_cold_histogram(NULL, 5 * MS, 100 * MS, s, 64 * MIB, hist, NULL),
		  "no picture array at all is an empty picture");
	cr_assert(vr_fleet_cold_histogram(pic, 5 * MS, 100 * MS, s, 64 * MIB, hist, &err),
		  "a picture of exactly the guest's size should be accepted: %s",
		  err ? err->message : "?");
	cr_assert_eq(sum(hist, VR_MAX_SCORE + 1), 64 * MIB, "the whole guest is cold");
}

Test(fleet_histogram, refuses_schemes_without_a_cold_score)
{
	g_autoptr(vr_scheme) s = vr_scheme_new("thp", VR_ACTION_HUGEPAGE);
	g_autoptr(GError) err = NULL;
	uint64_t hist[VR_MAX_SCORE + 1];

	cr_assert_not(vr_fleet_cold_histogram(NULL, 5 * MS, 100 * MS, s, GIB, hist, &err),
		      "a hugepage scheme has no cold score");
	cr_assert(g_error_matches(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID),
		  "expected VR_FLEET_ERROR_INVALID");
	cr_assert(msg_has_any(err->message, "hugepage") && msg_has_any(err->message, "thp"),
		  "the message should name the scheme and its action: %s", err->message);
}

/*
 * Pictures a guest could lie with. Each row: up to three regions (MiB), the
 * intervals, the guest's size, and words the message must hold.
 */
struct lie_case {
	char name[48];
	struct vr_picture_region regions[3];
	guint nr;
	uint64_t sample_us;
	uint64_t aggr_us;
	uint64_t guest_bytes;
	char words[64]; /* '|'-separated alternatives, all case-insensitive */
	long number;	/* a number the message must name, -1 for none */
};

static struct lie_case lie_cases[] = {
	{ "more memory than the guest has",
	  { { 0, 48 * MIB, 0, 100 }, { 4 * GIB, 4 * GIB + 32 * MIB, 0, 100 } },
	  2,
	  5 * MS,
	  100 * MS,
	  64 * MIB,
	  "more than the guest",
	  64 * 1048576L },
	{ "one region larger than the guest",
	  { { 0, 2 * GIB, 0, 100 } },
	  1,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "more than the guest",
	  1073741824L },
	{ "unsorted",
	  { { 8 * MIB, 12 * MIB, 0, 100 }, { 0, 4 * MIB, 0, 100 } },
	  2,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "sorted",
	  1 },
	{ "overlapping",
	  { { 0, 8 * MIB, 0, 100 }, { 4 * MIB, 12 * MIB, 0, 100 } },
	  2,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "overlap",
	  1 },
	{ "overlapping the same range twice",
	  { { 0, 8 * MIB, 0, 100 }, { 0, 8 * MIB, 0, 100 } },
	  2,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "overlap",
	  1 },
	{ "empty region",
	  { { 0, 4 * MIB, 0, 100 }, { 4 * MIB, 4 * MIB, 0, 100 } },
	  2,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "empty",
	  1 },
	{ "more accesses than samples",
	  { { 0, 4 * MIB, 21, 100 } },
	  1,
	  5 * MS,
	  100 * MS,
	  GIB,
	  "nr_accesses",
	  21 },
	{ "sample interval 0",
	  { { 0, 4 * MIB, 0, 100 } },
	  1,
	  0,
	  100 * MS,
	  GIB,
	  "sample_interval_us",
	  0 },
	{ "aggregation below sampling",
	  { { 0, 4 * MIB, 0, 100 } },
	  1,
	  5 * MS,
	  4 * MS,
	  GIB,
	  "aggr_interval_us",
	  4000 },
	{ "aggregation above an hour",
	  { { 0, 4 * MIB, 0, 100 } },
	  1,
	  5 * MS,
	  3601 * S,
	  GIB,
	  "aggr_interval_us",
	  3601000000L },
	{ "too many samples per aggregation",
	  { { 0, 4 * MIB, 0, 100 } },
	  1,
	  1,
	  100 * MS,
	  GIB,
	  "sample_interval_us",
	  100000 },
};

ParameterizedTestParameters(fleet_histogram, lying_pictures)
{
	return cr_make_param_array(struct lie_case, lie_cases, G_N_ELEMENTS(lie_cases));
}

ParameterizedTest(struct lie_case *c, fleet_histogram, lying_pictures)
{
	g_autoptr(GArray) pic = picture(c->regions, c->nr);
	g_autoptr(vr_scheme) s = reclaim_scheme();
	g_autoptr(GError) err = NULL;
	uint64_t hist[VR_MAX_SCORE + 1];

	memset(hist, 0xab, sizeof(hist));
	cr_assert_not(vr_fleet_cold_histogram(pic, c->sample_us, c->aggr_us, s, c->guest_bytes,
					      hist, &err),
		      "%s: the picture should be refused", c->name);
	cr_assert(err->domain == VR_PICTURE_ERROR, "%s: expected VR_PICTURE_ERROR, got %s", c->name,
		  err->message);
	cr_assert(msg_has_any(err->message, c->words), "%s: the message should say %s: %s", c->name,
		  c->words, err->message);
	if (c->number >= 0)
		cr_assert(msg_names_number(err->message, c->number),
			  "%s: the message should name %ld: %s", c->name, c->number, err->message);
	cr_assert_eq(sum(hist, VR_MAX_SCORE + 1), 0,
		     "%s: a refused picture leaves an all-zero histogram", c->name);
}

/* ------------------------------------------------------------------------- */
/* Priority and the adjusted score                                           */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_priority, .description = "vr_fleet_adjusted_score(), vr_fleet_available_bytes()");

Test(fleet_priority, shift_keeps_each_domains_order)
{
	cr_assert_eq(vr_fleet_adjusted_score(99, 0), 199, "coldest, least important: the top");
	cr_assert_eq(vr_fleet_adjusted_score(0, 100), 0, "hottest, most important: the bottom");
	cr_assert_eq(vr_fleet_adjusted_score(70, 50), 120, "70 + 100 - 50");
	for (uint32_t p = 0; p <= VR_FLEET_MAX_PRIORITY; p += 10) {
		for (uint32_t s = 1; s <= VR_MAX_SCORE; s++)
			cr_assert_gt(vr_fleet_adjusted_score(s, p),
				     vr_fleet_adjusted_score(s - 1, p),
				     "priority %u: score %u must still rank above %u", p, s, s - 1);
	}
}

Test(fleet_priority, available_is_cold_bytes_capped_by_guarantee)
{
	struct vr_fleet_domain cold_capped = {
		.rss_bytes = 100 * MIB,
		.guaranteed_bytes = 90 * MIB,
		.hist_bytes = { [60] = 30 * MIB },
		.eligible = true,
	};
	struct vr_fleet_domain few_cold = {
		.rss_bytes = GIB,
		.hist_bytes = { [60] = 30 * MIB, [80] = 2 * MIB },
		.eligible = true,
	};
	struct vr_fleet_domain under = {
		.rss_bytes = 80 * MIB,
		.guaranteed_bytes = 90 * MIB,
		.hist_bytes = { [60] = 30 * MIB },
		.eligible = true,
	};
	struct vr_fleet_domain paused = { .rss_bytes = GIB, .hist_bytes = { [99] = GIB } };

	cr_assert_eq(vr_fleet_available_bytes(&cold_capped), 10 * MIB, "rss - guaranteed = 10 MiB");
	cr_assert_eq(vr_fleet_available_bytes(&few_cold), 32 * MIB, "only 32 MiB are cold");
	cr_assert_eq(vr_fleet_available_bytes(&under), 0, "rss below guaranteed gives nothing");
	cr_assert_eq(vr_fleet_available_bytes(&paused), 0, "an ineligible domain gives nothing");
}

/* ------------------------------------------------------------------------- */
/* Sharing the quota                                                         */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_distribute, .description = "vr_fleet_distribute()");

/*
 *   domain  prio  rss    guaranteed  cold bytes        quota 30 MiB
 *   a       50    1 GiB  0           [70] 40 MiB   ->  10 MiB
 *   b       50    1 GiB  0           [70] 40 MiB   ->  10 MiB
 *   c       50    1 GiB  0           [70] 40 MiB   ->  10 MiB
 */
Test(fleet_distribute, equal_domains_split_evenly)
{
	struct vr_fleet_domain d[3];
	uint64_t shares[3];
	const uint64_t want[3] = { 10 * MIB, 10 * MIB, 10 * MIB };

	for (int i = 0; i < 3; i++)
		d[i] = (struct vr_fleet_domain){ .priority = 50,
						 .rss_bytes = GIB,
						 .hist_bytes = { [70] = 40 * MIB },
						 .eligible = true };
	distribute_ok(d, 3, 30 * MIB, shares);
	assert_shares(shares, want, 3, "equal domains");
}

/*
 * The quota does not divide by three: 10 bytes over three equal offers of 7.
 * Each gets floor(10 * 7 / 21) = 3; the byte left over goes to the largest
 * remainder, all equal, so to the lowest index.
 *
 *   domain  cold bytes      quota 10 B
 *   a       [70] 7 B    ->  4 B
 *   b       [70] 7 B    ->  3 B
 *   c       [70] 7 B    ->  3 B
 */
Test(fleet_distribute, rounding_never_exceeds_the_quota)
{
	struct vr_fleet_domain d[3];
	uint64_t shares[3];
	const uint64_t want[3] = { 4, 3, 3 };

	for (int i = 0; i < 3; i++)
		d[i] = (struct vr_fleet_domain){ .priority = 50,
						 .rss_bytes = GIB,
						 .hist_bytes = { [70] = 7 },
						 .eligible = true };
	distribute_ok(d, 3, 10, shares);
	assert_shares(shares, want, 3, "10 bytes over three");
	cr_assert_eq(sum(shares, 3), 10, "the shares add up to the quota exactly");
}

/*
 * At the threshold score the rest is split in proportion to the bytes there;
 * above it everything is taken.
 *
 *   domain  prio  cold bytes                  quota 35 MiB
 *   a       50    [90] 10 MiB, [60] 30 MiB -> 10 (score 90) + 5 (score 60) = 15 MiB
 *   b       50    [80] 20 MiB              -> 20 MiB (score 80)
 *
 *   domain  prio  cold bytes                  quota 20 MiB
 *   c       50    [70] 30 MiB              -> 15 MiB  (30 of 40 MiB at score 70)
 *   d       50    [70] 10 MiB              ->  5 MiB
 */
Test(fleet_distribute, coldest_first_fleet_wide_then_proportional)
{
	struct vr_fleet_domain ab[] = {
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [90] = 10 * MIB, [60] = 30 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [80] = 20 * MIB },
		  .eligible = true },
	};
	struct vr_fleet_domain cd[] = {
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 30 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 10 * MIB },
		  .eligible = true },
	};
	uint64_t shares[2];
	const uint64_t want_ab[2] = { 15 * MIB, 20 * MIB };
	const uint64_t want_cd[2] = { 15 * MIB, 5 * MIB };

	distribute_ok(ab, 2, 35 * MIB, shares);
	assert_shares(shares, want_ab, 2, "coldest first");
	distribute_ok(cd, 2, 20 * MIB, shares);
	assert_shares(shares, want_cd, 2, "proportional at the threshold");
}

/*
 * The important domain gives later. Equal coldness, priorities 0 and 100:
 *
 *   domain  prio  cold bytes      adjusted   quota 50 MiB
 *   a       0     [70] 40 MiB     170     -> 40 MiB (all of it, first)
 *   b       100   [70] 40 MiB      70     -> 10 MiB (the rest)
 *
 * A small difference blends with coldness: b (priority 50) is colder by 10
 * points but 10 points more important than a (40), so they tie at 130 and
 * split in proportion; c (priority 60) loses 10 more and gives nothing.
 *
 *   domain  prio  cold bytes      adjusted   quota 30 MiB
 *   a       40    [70] 20 MiB     130     -> 10 MiB
 *   b       50    [80] 40 MiB     130     -> 20 MiB
 *   c       60    [80] 40 MiB     120     ->  0
 */
Test(fleet_distribute, priority_makes_the_important_give_later)
{
	struct vr_fleet_domain far[] = {
		{ .priority = 0,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 40 * MIB },
		  .eligible = true },
		{ .priority = 100,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 40 * MIB },
		  .eligible = true },
	};
	struct vr_fleet_domain near[] = {
		{ .priority = 40,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 20 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [80] = 40 * MIB },
		  .eligible = true },
		{ .priority = 60,
		  .rss_bytes = GIB,
		  .hist_bytes = { [80] = 40 * MIB },
		  .eligible = true },
	};
	uint64_t shares[3];
	const uint64_t want_far[2] = { 40 * MIB, 10 * MIB };
	const uint64_t want_near[3] = { 10 * MIB, 20 * MIB, 0 };

	distribute_ok(far, 2, 50 * MIB, shares);
	assert_shares(shares, want_far, 2, "priorities 0 and 100");
	distribute_ok(near, 3, 30 * MIB, shares);
	assert_shares(shares, want_near, 3, "priorities 40, 50 and 60");
}

/*
 * A domain never goes below its guaranteed memory; what it cannot give goes
 * to the next bytes of the walk.
 *
 *   domain  rss      guaranteed  cold bytes      quota 40 MiB
 *   a       100 MiB  90 MiB      [90] 50 MiB  -> 10 MiB (capped)
 *   b       1 GiB    0           [70] 50 MiB  -> 30 MiB (a's 30 go here)
 *   c       80 MiB   90 MiB      [99] 50 MiB  ->  0     (already below)
 */
Test(fleet_distribute, guaranteed_memory_caps)
{
	struct vr_fleet_domain d[] = {
		{ .priority = 50,
		  .rss_bytes = 100 * MIB,
		  .guaranteed_bytes = 90 * MIB,
		  .hist_bytes = { [90] = 50 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 50 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = 80 * MIB,
		  .guaranteed_bytes = 90 * MIB,
		  .hist_bytes = { [99] = 50 * MIB },
		  .eligible = true },
	};
	uint64_t shares[3];
	const uint64_t want[3] = { 10 * MIB, 30 * MIB, 0 };

	distribute_ok(d, 3, 40 * MIB, shares);
	assert_shares(shares, want, 3, "guaranteed caps");
}

/*
 * A cap reached at the threshold score: a's offer there is only what its cap
 * leaves, so the proportional split uses that, not its histogram.
 *
 *   domain  rss     guaranteed  cold bytes                 quota 16 MiB
 *   a       64 MiB  52 MiB      [90] 8 MiB, [70] 8 MiB  -> 8 + 2 (offers 4 at 70)
 *   b       1 GiB   0           [70] 12 MiB             -> 6     (offers 12 at 70)
 */
Test(fleet_distribute, cap_reached_at_the_threshold)
{
	struct vr_fleet_domain d[] = {
		{ .priority = 50,
		  .rss_bytes = 64 * MIB,
		  .guaranteed_bytes = 52 * MIB,
		  .hist_bytes = { [90] = 8 * MIB, [70] = 8 * MIB },
		  .eligible = true },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [70] = 12 * MIB },
		  .eligible = true },
	};
	uint64_t shares[2];
	const uint64_t want[2] = { 10 * MIB, 6 * MIB };

	distribute_ok(d, 2, 16 * MIB, shares);
	assert_shares(shares, want, 2, "cap at the threshold");
}

/*
 * A mixed fleet under a sweep of quotas: the shares always add up to
 * min(quota, available), none exceeds its domain's available bytes.
 *
 *   domain  prio  rss      guaranteed  cold bytes                    eligible  available
 *   a       0     300 MiB  100 MiB     [95] 50, [60] 100 MiB         yes       150 MiB
 *   b       30    200 MiB  150 MiB     [99] 80 MiB                   yes        50 MiB
 *   c       70    1 GiB    0           [55] 3 B, [75] 33 MiB + 1 B   yes        33 MiB + 4 B
 *   d       100   1 GiB    0           [99] 1 GiB                    no          0
 *   e       50    64 MiB   128 MiB     [80] 16 MiB                   yes         0
 */
Test(fleet_distribute, total_is_min_of_quota_and_available)
{
	const struct vr_fleet_domain d[] = {
		{ .name = "a",
		  .priority = 0,
		  .rss_bytes = 300 * MIB,
		  .guaranteed_bytes = 100 * MIB,
		  .hist_bytes = { [95] = 50 * MIB, [60] = 100 * MIB },
		  .eligible = true },
		{ .name = "b",
		  .priority = 30,
		  .rss_bytes = 200 * MIB,
		  .guaranteed_bytes = 150 * MIB,
		  .hist_bytes = { [99] = 80 * MIB },
		  .eligible = true },
		{ .name = "c",
		  .priority = 70,
		  .rss_bytes = GIB,
		  .hist_bytes = { [55] = 3, [75] = 33 * MIB + 1 },
		  .eligible = true },
		{ .name = "d", .priority = 100, .rss_bytes = GIB, .hist_bytes = { [99] = GIB } },
		{ .name = "e",
		  .priority = 50,
		  .rss_bytes = 64 * MIB,
		  .guaranteed_bytes = 128 * MIB,
		  .hist_bytes = { [80] = 16 * MIB },
		  .eligible = true },
	};
	const size_t n = G_N_ELEMENTS(d);
	uint64_t available = 0;
	const uint64_t quotas[] = {
		0,
		1,
		4096,
		7 * MIB + 3,
		50 * MIB,
		100 * MIB - 1,
		199 * MIB + 12345,
		233 * MIB + 3,
		233 * MIB + 4,
		233 * MIB + 5,
		GIB,
		G_MAXUINT64,
	};

	for (size_t i = 0; i < n; i++)
		available += vr_fleet_available_bytes(&d[i]);
	cr_assert_eq(available, 233 * MIB + 4,
		     "the table's available bytes: 150 + 50 + 33 MiB + 4");
	for (size_t q = 0; q < G_N_ELEMENTS(quotas); q++) {
		uint64_t shares[G_N_ELEMENTS(d)];

		distribute_ok(d, n, quotas[q], shares);
		cr_assert_eq(sum(shares, n), MIN(quotas[q], available),
			     "quota %" PRIu64 ": the shares should add up to %" PRIu64
			     ", got %" PRIu64,
			     quotas[q], MIN(quotas[q], available), sum(shares, n));
		for (size_t i = 0; i < n; i++)
			cr_assert_leq(shares[i], vr_fleet_available_bytes(&d[i]),
				      "quota %" PRIu64 ": %s gives %" PRIu64 ", more than it has",
				      quotas[q], d[i].name, shares[i]);
		cr_assert(shares[3] == 0 && shares[4] == 0,
			  "quota %" PRIu64 ": the ineligible and the capped domain give nothing",
			  quotas[q]);
	}
}

Test(fleet_distribute, zero_quota_no_domains_all_ineligible)
{
	struct vr_fleet_domain d[2] = {
		{ .priority = 50, .rss_bytes = GIB, .hist_bytes = { [99] = GIB }, .eligible = true },
		{ .priority = 50, .rss_bytes = GIB, .hist_bytes = { [99] = GIB }, .eligible = true },
	};
	uint64_t shares[2] = { 7, 7 };

	distribute_ok(d, 2, 0, shares);
	cr_assert(shares[0] == 0 && shares[1] == 0, "a zero quota takes nothing");
	distribute_ok(NULL, 0, GIB, NULL);
	d[0].eligible = d[1].eligible = false;
	shares[0] = shares[1] = 7;
	distribute_ok(d, 2, GIB, shares);
	cr_assert(shares[0] == 0 && shares[1] == 0,
		  "ineligible domains (paused, no agent, no picture) give nothing");
}

Test(fleet_distribute, deterministic)
{
	struct vr_fleet_domain d[4];
	uint64_t first[4], again[4];

	for (int i = 0; i < 4; i++) {
		d[i] = (struct vr_fleet_domain){ .priority = (uint32_t)(i * 20),
						 .rss_bytes = GIB,
						 .eligible = true };
		d[i].hist_bytes[60 + i * 10] = 12345 + (uint64_t)i;
	}
	distribute_ok(d, 4, 20000, first);
	distribute_ok(d, 4, 20000, again);
	assert_shares(again, first, 4, "the same inputs twice");
}

Test(fleet_distribute, refuses_a_priority_out_of_range)
{
	struct vr_fleet_domain d[2] = {
		{ .name = "web", .priority = 50, .rss_bytes = GIB, .eligible = true },
		{ .name = "db", .priority = 101, .rss_bytes = GIB, .eligible = true },
	};
	uint64_t shares[2] = { 7, 7 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_fleet_distribute(d, 2, GIB, shares, &err), "priority 101 is refused");
	cr_assert(g_error_matches(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID),
		  "expected VR_FLEET_ERROR_INVALID");
	cr_assert(msg_has_any(err->message, "'db'") && msg_names_number(err->message, 101) &&
			  msg_names_number(err->message, 100),
		  "the message should name the domain, its priority and the bound: %s",
		  err->message);
	cr_assert(shares[0] == 0 && shares[1] == 0, "on error every share is 0");
}

/*
 * From pictures to shares: two guests with the same scheme, one idle for
 * long, one recently idle; the fleet takes the long-idle memory first.
 *
 *   guest  region                 age      score   quota 24 MiB
 *   old    [0, 32M) 0 accesses    600 s    66   -> 24 MiB
 *   new    [0, 32M) 0 accesses     10 s    57   ->  0
 */
Test(fleet_distribute, from_pictures)
{
	const struct vr_picture_region old_r[] = { { 0, 32 * MIB, 0, 6000 } };
	const struct vr_picture_region new_r[] = { { 0, 32 * MIB, 0, 100 } };
	g_autoptr(GArray) old_pic = picture(old_r, 1);
	g_autoptr(GArray) new_pic = picture(new_r, 1);
	g_autoptr(vr_scheme) s = reclaim_scheme();
	struct vr_fleet_domain d[2] = {
		{ .name = "old", .priority = 50, .rss_bytes = GIB, .eligible = true },
		{ .name = "new", .priority = 50, .rss_bytes = GIB, .eligible = true },
	};
	uint64_t shares[2];
	const uint64_t want[2] = { 24 * MIB, 0 };

	cr_assert(
		vr_fleet_cold_histogram(old_pic, 5 * MS, 100 * MS, s, GIB, d[0].hist_bytes, NULL));
	cr_assert(
		vr_fleet_cold_histogram(new_pic, 5 * MS, 100 * MS, s, GIB, d[1].hist_bytes, NULL));
	distribute_ok(d, 2, 24 * MIB, shares);
	assert_shares(shares, want, 2, "the longer idle guest first");
}

/* ------------------------------------------------------------------------- */
/* The offer hold                                                            */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_offer_hold,
	  .description = "vr_fleet_offer_hold_update(), vr_fleet_offer_hold_us()");

/* A histogram of @cold MiB at score 90 and @cool MiB at score 60. */
static void offer(uint64_t *hist, uint64_t cold, uint64_t cool)
{
	memset(hist, 0, sizeof(uint64_t) * (VR_MAX_SCORE + 1));
	hist[90] = cold * MIB;
	hist[60] = cool * MIB;
}

/*
 * A domain's agent pages out its share and its picture loses the bytes it
 * tried (DAMOS reset their age): the offer stays the largest picture of the
 * hold, a larger one replaces it at once. A hold of 80 s: slots of 10 s, a
 * picture is held for 70 to 80 s.
 *
 *   t (s)   slot   picture (90, 60)   offer       why
 *   0       0      (64, 32)           (64, 32)    nothing held
 *   1       0      (0, 8)             (64, 32)    smaller, held
 *   69      6      (4, 4)             (64, 32)    slot 0 is in the window 0..6
 *   79      7      (4, 4)             (64, 32)    and in 0..7
 *   80      8      (4, 4)             (4, 4)      window 1..8: slot 0 is out
 *   81      8      (0, 0)             (4, 4)      the slot keeps its largest
 *   82      8      (8, 0)             (8, 0)      not smaller (8 >= 8): taken
 */
Test(fleet_offer_hold, keeps_the_largest_picture_of_the_hold)
{
	struct vr_fleet_offer_hold hold = { 0 };
	uint64_t hist[VR_MAX_SCORE + 1];
	const uint64_t hold_us = 80 * S;

	offer(hist, 64, 32);
	cr_assert_not(vr_fleet_offer_hold_update(&hold, hist, 0, hold_us), "nothing held yet");
	cr_assert(hist[90] == 64 * MIB && hist[60] == 32 * MIB, "the first picture is the offer");

	offer(hist, 0, 8);
	cr_assert(vr_fleet_offer_hold_update(&hold, hist, 1 * S, hold_us), "smaller: held");
	cr_assert(hist[90] == 64 * MIB && hist[60] == 32 * MIB, "the held picture is the offer");

	for (uint64_t t = 69; t <= 79; t += 10) {
		offer(hist, 4, 4);
		cr_assert(vr_fleet_offer_hold_update(&hold, hist, (int64_t)(t * S), hold_us),
			  "t=%" PRIu64 " s: still within the hold", t);
		cr_assert(hist[90] == 64 * MIB && hist[60] == 32 * MIB);
	}

	offer(hist, 4, 4);
	cr_assert_not(vr_fleet_offer_hold_update(&hold, hist, 80 * S, hold_us),
		      "the picture of t=0 is out of the window at 80 s");
	cr_assert(hist[90] == 4 * MIB && hist[60] == 4 * MIB, "this window's picture is the offer");

	offer(hist, 0, 0);
	cr_assert(vr_fleet_offer_hold_update(&hold, hist, 81 * S, hold_us));
	cr_assert(hist[90] == 4 * MIB && hist[60] == 4 * MIB);

	offer(hist, 8, 0);
	cr_assert_not(vr_fleet_offer_hold_update(&hold, hist, 82 * S, hold_us),
		      "as large as the held one: taken");
	cr_assert(hist[90] == 8 * MIB && hist[60] == 0, "the offer is the new picture, not a mix");
}

/*
 * A sliding maximum, not one peak: when the largest picture leaves the
 * window, the next largest in it is the offer. Hold 80 s, slots of 10 s.
 *
 *   t (s)   slot   picture   offer   window
 *   0       0      64        64      0..0
 *   30      3      32        64      0..3
 *   50      5      0         64      0..5
 *   85      8      1         32      1..8: slot 3's
 *   115     11     2         2       4..11: slot 5 had 0
 */
Test(fleet_offer_hold, the_next_largest_follows_when_the_largest_expires)
{
	const struct {
		uint64_t t_s, picture_mib, offer_mib;
	} steps[] = {
		{ 0, 64, 64 }, { 30, 32, 64 }, { 50, 0, 64 }, { 85, 1, 32 }, { 115, 2, 2 },
	};
	struct vr_fleet_offer_hold hold = { 0 };
	uint64_t hist[VR_MAX_SCORE + 1];

	for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
		offer(hist, steps[i].picture_mib, 0);
		vr_fleet_offer_hold_update(&hold, hist, (int64_t)(steps[i].t_s * S), 80 * S);
		cr_assert(hist[90] == steps[i].offer_mib * MIB,
			  "t=%" PRIu64 " s: offer %" PRIu64 " MiB, expected %" PRIu64, steps[i].t_s,
			  hist[90] / MIB, steps[i].offer_mib);
	}
}

Test(fleet_offer_hold, reset_and_a_clock_going_back_take_the_picture)
{
	struct vr_fleet_offer_hold hold = { 0 };
	uint64_t hist[VR_MAX_SCORE + 1];

	offer(hist, 64, 0);
	vr_fleet_offer_hold_update(&hold, hist, 100 * S, 30 * S);
	vr_fleet_offer_hold_reset(&hold);
	offer(hist, 1, 0);
	cr_assert_not(vr_fleet_offer_hold_update(&hold, hist, 101 * S, 30 * S),
		      "after a reset the picture is the offer");
	cr_assert(hist[90] == 1 * MIB);

	offer(hist, 64, 0);
	vr_fleet_offer_hold_update(&hold, hist, 102 * S, 30 * S);
	offer(hist, 0, 0);
	cr_assert_not(vr_fleet_offer_hold_update(&hold, hist, 50 * S, 30 * S),
		      "a time before one already seen empties the hold");
	cr_assert(hist[90] == 0);
}

Test(fleet_offer_hold, saturates_the_total)
{
	struct vr_fleet_offer_hold hold = { 0 };
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };

	hist[99] = G_MAXUINT64;
	hist[98] = G_MAXUINT64;
	vr_fleet_offer_hold_update(&hold, hist, 0, 30 * S);
	offer(hist, 1, 0);
	cr_assert(vr_fleet_offer_hold_update(&hold, hist, 1 * S, 30 * S),
		  "a wrapped total would have let a small picture replace it");
	cr_assert(hist[99] == G_MAXUINT64 && hist[90] == 0);
}

/*
 *   scheme min_age     hold
 *   5 s                30 s (the floor)
 *   120 s              240 s
 *   1 hour, 2^64-1 us  600 s (the ceiling, no overflow)
 */
Test(fleet_offer_hold, lasts_twice_the_minimum_age_within_bounds)
{
	g_autoptr(vr_scheme) s = reclaim_scheme();
	const struct {
		uint64_t min_age_us, hold_us;
	} cases[] = {
		{ 5 * S, 30 * S },
		{ 120 * S, 240 * S },
		{ 3600 * S, 600 * S },
		{ G_MAXUINT64, 600 * S },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		s->pattern.min_age_us = cases[i].min_age_us;
		cr_assert(vr_fleet_offer_hold_us(s) == cases[i].hold_us,
			  "min_age %" PRIu64 " us: hold %" PRIu64 " us, expected %" PRIu64,
			  cases[i].min_age_us, vr_fleet_offer_hold_us(s), cases[i].hold_us);
	}
}

/* ---- a guest's own histogram (get-cold-histogram) ---- */

TestSuite(fleet_guest_histogram, .description = "vr_fleet_check_cold_histogram(), "
						"vr_fleet_pageout_scheme()");

Test(fleet_guest_histogram, bounded_by_the_guest)
{
	const uint64_t guest = 1ULL << 30;
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_fleet_check_cold_histogram(hist, guest, &err), "all zero");
	hist[VR_MAX_SCORE] = guest;
	cr_assert(vr_fleet_check_cold_histogram(hist, guest, &err), "all the guest in one bucket");
	hist[3] = 1;
	cr_assert_not(vr_fleet_check_cold_histogram(hist, guest, &err), "one byte more");
	cr_assert(err && strstr(err->message, "1073741825") && strstr(err->message, "1073741824"),
		  "the message names the sum and the guest: %s", err ? err->message : "none");
	g_clear_error(&err);
	memset(hist, 0, sizeof(hist));
	hist[42] = guest + 1;
	cr_assert_not(vr_fleet_check_cold_histogram(hist, guest, &err), "one bucket above");
	cr_assert(err && strstr(err->message, "bucket 42"), "names the bucket: %s",
		  err ? err->message : "none");
	g_clear_error(&err);
	/* Buckets that would wrap a 64-bit sum. */
	hist[42] = guest;
	for (guint s = 0; s <= VR_MAX_SCORE; s++)
		hist[s] = G_MAXUINT64 / 2;
	cr_assert_not(vr_fleet_check_cold_histogram(hist, G_MAXUINT64 / 2, &err),
		      "a sum that wraps is refused");
}

Test(fleet_guest_histogram, the_first_pageout_scheme)
{
	const char *doc = "{\"schemes\":[{\"name\":\"s\",\"action\":\"stat\"},"
			  "{\"name\":\"p1\",\"action\":\"pageout\"},"
			  "{\"name\":\"p2\",\"action\":\"pageout\"}]}";
	const char *none = "{\"schemes\":[{\"name\":\"s\",\"action\":\"stat\"}]}";
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) p = vr_policy_parse(doc, -1, &err);
	g_autoptr(vr_policy) q = vr_policy_parse(none, -1, &err);

	cr_assert_not_null(p, "%s", err ? err->message : "");
	cr_assert_not_null(q, "%s", err ? err->message : "");
	cr_assert_str_eq(vr_fleet_pageout_scheme(p)->name, "p1");
	cr_assert_null(vr_fleet_pageout_scheme(q));
	cr_assert_null(vr_fleet_pageout_scheme(NULL));
}
