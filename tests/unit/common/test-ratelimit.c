/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the log rate limit (common/ratelimit.c) and of the bounds on
 * what a guest claims (common/guest-bounds.c): pure, times in us.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>

#include "guest-bounds.h"
#include "ratelimit.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define S   1000000LL /* us per s */

TestSuite(ratelimit, .description = "vr_ratelimit_pass()");

/*
 * 3 per 10 s, one event a second:
 *
 *   t (s)   0 1 2 3 4 5 6 7 8 9 | 10     11
 *   passes  y y y n n n n n n n | y (7)  y (0)
 */
Test(ratelimit, lets_the_burst_through_then_counts_the_rest)
{
	struct vr_ratelimit rl;
	uint64_t suppressed = 99;
	guint passed = 0;

	vr_ratelimit_init(&rl, 10 * S, 3);
	for (int t = 0; t < 10; t++) {
		bool pass = vr_ratelimit_pass(&rl, t * S, &suppressed);

		cr_assert_eq(pass, t < 3, "t=%d s: expected %s", t, t < 3 ? "a pass" : "held back");
		cr_assert_eq(suppressed, 0, "t=%d s: nothing held back before it", t);
		passed += pass;
	}
	cr_assert_eq(passed, 3, "expected 3 of 10 through, got %u", passed);
	cr_assert_eq(rl.suppressed_total, 7, "expected 7 held back, got %" G_GUINT64_FORMAT,
		     rl.suppressed_total);
	cr_assert(vr_ratelimit_pass(&rl, 10 * S, &suppressed), "a new interval lets one through");
	cr_assert_eq(
		suppressed, 7,
		"the first message of the interval says 7 were held back, got %" G_GUINT64_FORMAT,
		suppressed);
	cr_assert(vr_ratelimit_pass(&rl, 11 * S, &suppressed));
	cr_assert_eq(suppressed, 0, "the count starts over once said");
	cr_assert_eq(rl.suppressed_total, 7, "the total stays for the metrics");
}

Test(ratelimit, a_flood_logs_the_burst_per_interval)
{
	struct vr_ratelimit rl;
	uint64_t suppressed, said = 0;
	guint passed = 0;

	/* 100000 lines in 40 s (a garbage flood): 1 per 10 s. */
	vr_ratelimit_init(&rl, 10 * S, 1);
	for (int64_t i = 0; i < 100000; i++) {
		if (vr_ratelimit_pass(&rl, i * 400, &suppressed)) {
			passed++;
			said += suppressed;
		}
	}
	cr_assert_eq(passed, 4, "expected 4 messages in 40 s, got %u", passed);
	cr_assert_eq(rl.suppressed_total, 100000 - 4,
		     "every other line is counted, got %" G_GUINT64_FORMAT, rl.suppressed_total);
	cr_assert_eq(
		said, 3 * 24999,
		"the 2nd to 4th messages say what the 3 intervals before held back, got %" G_GUINT64_FORMAT,
		said);
}

Test(ratelimit, a_clock_that_goes_back_starts_a_new_interval)
{
	struct vr_ratelimit rl;
	uint64_t suppressed;

	vr_ratelimit_init(&rl, 10 * S, 1);
	cr_assert(vr_ratelimit_pass(&rl, 100 * S, NULL));
	cr_assert_not(vr_ratelimit_pass(&rl, 101 * S, NULL));
	cr_assert(vr_ratelimit_pass(&rl, 5 * S, &suppressed),
		  "a time before the interval must not hold messages back for 95 s");
	cr_assert_eq(suppressed, 1);
}

Test(ratelimit, zero_burst_and_interval_are_read_as_one)
{
	struct vr_ratelimit rl;

	vr_ratelimit_init(&rl, 0, 0);
	cr_assert(vr_ratelimit_pass(&rl, 0, NULL));
	cr_assert_not(vr_ratelimit_pass(&rl, 0, NULL), "one per microsecond");
	cr_assert(vr_ratelimit_pass(&rl, 1, NULL));
}

TestSuite(guest_bounds, .description = "vr_reclaim_bound_check(), vr_u64_add_sat()");

Test(guest_bounds, a_guest_gives_at_most_its_memory_at_once)
{
	struct vr_reclaim_bound b = { 0 };

	cr_assert_not(vr_reclaim_bound_check(&b, 512 * MIB + 1, 512 * MIB, 0),
		      "more than the guest's memory at once cannot be true");
	cr_assert(vr_reclaim_bound_check(&b, 512 * MIB, 512 * MIB, 0),
		  "a refused claim takes nothing: all of the memory still fits");
	cr_assert_not(vr_reclaim_bound_check(&b, 1, 512 * MIB, 0), "and then nothing more");
}

/* A 512 MiB guest reclaims at most 512 MiB/s (VR_GUEST_RECLAIM_TURNOVER_S). */
Test(guest_bounds, then_at_most_the_rate)
{
	struct vr_reclaim_bound b = { 0 };

	cr_assert_eq(vr_guest_max_reclaim_rate(512 * MIB), 512 * MIB);
	cr_assert(vr_reclaim_bound_check(&b, 512 * MIB, 512 * MIB, 0));
	cr_assert_not(vr_reclaim_bound_check(&b, 256 * MIB + 1, 512 * MIB, S / 2),
		      "half a second refills half of it");
	cr_assert(vr_reclaim_bound_check(&b, 256 * MIB, 512 * MIB, S / 2));
	cr_assert(vr_reclaim_bound_check(&b, 512 * MIB, 512 * MIB, 3600 * S),
		  "an hour later: the whole memory, no more");
	cr_assert_not(vr_reclaim_bound_check(&b, 1, 512 * MIB, 3600 * S));
}

/* Issue 16: an agent reporting 1 TiB reclaimed made a 512 MiB guest show
 * 5 TiB in 6 s. Reports every 100 ms, each claiming as much as it dares. */
Test(guest_bounds, one_tib_in_six_seconds_is_refused)
{
	struct vr_reclaim_bound b = { 0 };
	uint64_t counted = 0;

	cr_assert_not(vr_reclaim_bound_check(&b, 1ULL << 40, 512 * MIB, 0));
	for (int64_t t = 0; t <= 6 * S; t += S / 10)
		if (vr_reclaim_bound_check(&b, 64 * MIB, 512 * MIB, t))
			counted += 64 * MIB;
	cr_assert_leq(counted, 512 * MIB + 6 * 512 * MIB,
		      "at most the memory and 6 s at 512 MiB/s, got %" G_GUINT64_FORMAT " MiB",
		      counted / MIB);
}

Test(guest_bounds, a_large_guest_is_bounded_by_the_fastest_rate)
{
	cr_assert_eq(vr_guest_max_reclaim_rate(1ULL << 40), VR_GUEST_MAX_RECLAIM_BYTES_PER_S);
	cr_assert_eq(vr_guest_max_reclaim_rate(0), VR_GUEST_MAX_RECLAIM_BYTES_PER_S,
		     "an unknown size: the fastest rate");
	cr_assert_eq(vr_guest_max_reclaim_rate(4096), MIB, "at least 1 MiB/s");
}

Test(guest_bounds, sums_saturate_instead_of_wrapping)
{
	cr_assert_eq(vr_u64_add_sat(UINT64_MAX - 5, 100), UINT64_MAX);
	cr_assert_eq(vr_u64_add_sat(UINT64_MAX, UINT64_MAX), UINT64_MAX);
	cr_assert_eq(vr_u64_add_sat(1ULL << 63, (1ULL << 63) - 1), UINT64_MAX);
	cr_assert_eq(vr_u64_add_sat(2, 3), 5);
}
