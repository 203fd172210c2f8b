/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the simulated reclaim (common/sim-actuator.h) and what it
 * stands on: next-access times of the simulated guest against a brute-force
 * walk with vr_sim_page_accessed(), the workload's memory, pageout and
 * refaults, the time-averaged saving, the modeled cost read through the
 * reclaim's clock, the metrics, the "matrix" script, and the actuator driven
 * by the engine's time quota.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "monitor.h"
#include "policy.h"
#include "rng.h"
#include "scheme.h"
#include "sim-actuator.h"
#include "sim-run.h"
#include "sim.h"
#include "test-sim-helpers.h"

/* ---- helpers ---- */

static void add_phase_ok(struct vr_sim *sim, uint64_t duration_us, const struct vr_sim_set *sets,
			 size_t nr)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_sim_add_phase(sim, NULL, duration_us, sets, nr, &err),
		  "adding a phase should succeed, got: %s", err ? err->message : "no error");
}

static struct vr_sim_set hot_pages(uint64_t first, uint64_t end, double hz)
{
	return (struct vr_sim_set){
		.kind = VR_SIM_SET_HOT, .start = first * PAGE, .end = end * PAGE, .hz = hz
	};
}

static struct vr_sim_reclaim *reclaim_new_ok(const struct vr_sim *sim, uint64_t res_first,
					     uint64_t res_end, uint64_t start_us, uint64_t end_us,
					     const struct vr_sim_reclaim_params *params)
{
	g_autoptr(GError) err = NULL;
	struct vr_range resident = { res_first * PAGE, res_end * PAGE };
	struct vr_sim_reclaim *r = vr_sim_reclaim_new(sim, &resident, res_end > res_first, start_us,
						      end_us, params, &err);

	cr_assert_not_null(r, "vr_sim_reclaim_new should succeed, got: %s",
			   err ? err->message : "NULL without an error");
	return r;
}

static uint64_t apply_ok(struct vr_sim_reclaim *r, enum vr_action action, uint64_t first,
			 uint64_t end)
{
	g_autoptr(GError) err = NULL;
	uint64_t done = G_MAXUINT64;
	struct vr_scheme s = { .action = action };

	cr_assert(vr_sim_actuator_ops.apply(r, NULL, &s, first * PAGE, end * PAGE, &done, &err),
		  "apply(%s) should succeed, got: %s", vr_action_name(action),
		  err ? err->message : "no error");
	return done;
}

/*
 * The first access after @t, found by walking (t, t + horizon] with
 * vr_sim_page_accessed() in steps of @step, then bisecting the step that
 * holds it down to the us. G_MAXUINT64 when none within @horizon.
 */
static uint64_t brute_next_access(const struct vr_sim *sim, uint64_t addr, uint64_t t,
				  uint64_t step, uint64_t horizon)
{
	for (uint64_t a = t; a < t + horizon; a += step) {
		uint64_t lo = a, hi = a + step; /* no access in (t, lo]; one in (t, hi] */

		if (!vr_sim_page_accessed(sim, addr, a, hi))
			continue;
		while (hi - lo > 1) {
			uint64_t mid = lo + (hi - lo) / 2;

			if (vr_sim_page_accessed(sim, addr, a, mid))
				hi = mid;
			else
				lo = mid;
		}
		return hi;
	}
	return G_MAXUINT64;
}

/* Checks vr_sim_next_access_us() at @n random (page, time) points of
 * [0, @pages) x [0, @t_max) against the brute-force walk. */
static void check_next_access(const struct vr_sim *sim, uint64_t pages, uint64_t t_max,
			      uint64_t step, unsigned n, const char *what)
{
	struct vr_rng rng;
	uint64_t horizon = 2 * vr_sim_script_duration_us(sim) + step;
	unsigned found = 0;

	vr_rng_seed(&rng, 42);
	for (unsigned i = 0; i < n; i++) {
		uint64_t addr = vr_rng_below(&rng, pages) * PAGE + vr_rng_below(&rng, PAGE);
		uint64_t t = vr_rng_below(&rng, t_max);
		uint64_t got = vr_sim_next_access_us(sim, addr, t);
		uint64_t want = brute_next_access(sim, addr, t, step, horizon);

		cr_assert_eq(got, want,
			     "%s: page %" G_GUINT64_FORMAT " after t = %" G_GUINT64_FORMAT
			     " us: next access expected at %" G_GUINT64_FORMAT
			     " (brute force), got %" G_GUINT64_FORMAT,
			     what, addr / PAGE, t, want, got);
		found += got != G_MAXUINT64;
		if (got != G_MAXUINT64) {
			cr_assert(got > t, "%s: the next access must follow t", what);
			cr_assert(vr_sim_page_accessed(sim, addr, t, got) &&
					  !vr_sim_page_accessed(sim, addr, t, got - 1),
				  "%s: page %" G_GUINT64_FORMAT ": (t, next] must hold the first "
				  "access exactly",
				  what, addr / PAGE);
		}
	}
	cr_assert(found > n / 4, "%s: expected most points to have a next access, got %u of %u",
		  what, found, n);
}

/* ---- vr_sim_next_access_us ---- */

TestSuite(next_access, .description = "vr_sim_next_access_us() against a brute-force walk");

Test(next_access, hot_set_within_and_across_phases)
{
	g_autoptr(vr_sim) sim = sim_new_ok(256 * PAGE, 3);
	struct vr_sim_set a[] = { hot_pages(0, 64, 50), hot_pages(32, 96, 7) };
	struct vr_sim_set b[] = { hot_pages(64, 128, 20) };

	add_phase_ok(sim, 300000, a, G_N_ELEMENTS(a));
	add_phase_ok(sim, 200000, NULL, 0); /* idle */
	add_phase_ok(sim, 250000, b, G_N_ELEMENTS(b));
	/* times over three passes: wraps the script; pages 128.. never accessed */
	check_next_access(sim, 160, 3 * vr_sim_script_duration_us(sim), 1000, 400, "hot");
	/* exactly at, just before and just after phase boundaries and the wrap */
	static const uint64_t bounds[] = { 0, 300000, 500000, 750000, 1050000, 1500000 };

	for (size_t i = 0; i < G_N_ELEMENTS(bounds); i++) {
		for (uint64_t t = bounds[i] ? bounds[i] - 1 : 0; t <= bounds[i] + 1; t++) {
			for (uint64_t p = 0; p < 128; p += 7) {
				uint64_t got = vr_sim_next_access_us(sim, p * PAGE, t);
				uint64_t want = brute_next_access(
					sim, p * PAGE, t, 1000, 2 * vr_sim_script_duration_us(sim));

				cr_assert_eq(
					got, want,
					"page %" G_GUINT64_FORMAT " after t = %" G_GUINT64_FORMAT
					": expected %" G_GUINT64_FORMAT ", got %" G_GUINT64_FORMAT,
					p, t, want, got);
			}
		}
	}
}

Test(next_access, zipf_set_head_and_tail)
{
	g_autoptr(vr_sim) sim = sim_new_ok(512 * PAGE, 5);
	struct vr_sim_set z = { .kind = VR_SIM_SET_ZIPF,
				.start = 0,
				.end = 256 * PAGE,
				.zipf_s = 1.0,
				.zipf_total_hz = 2000 };
	struct vr_sim_set z2 = z;

	z2.start = 128 * PAGE;
	z2.end = 384 * PAGE;
	z2.zipf_s = 1.5;
	add_phase_ok(sim, 700000, &z, 1);
	add_phase_ok(sim, 500000, &z2, 1);
	check_next_access(sim, 400, 2 * vr_sim_script_duration_us(sim), 2000, 300, "zipf");
}

Test(next_access, scan_set_windows)
{
	g_autoptr(vr_sim) sim = sim_new_ok(512 * PAGE, 9);
	struct vr_sim_set scans[] = {
		/* a window of 8 pages over 256 pages at 128 pages a second */
		{ .kind = VR_SIM_SET_SCAN,
		  .start = 0,
		  .end = 256 * PAGE,
		  .hz = 100,
		  .scan_window_bytes = 8 * PAGE,
		  .scan_speed_bps = 128 * PAGE },
		/* a window that a page passes in less than the period: misses */
		{ .kind = VR_SIM_SET_SCAN,
		  .start = 256 * PAGE,
		  .end = 320 * PAGE,
		  .hz = 3,
		  .scan_window_bytes = 2 * PAGE,
		  .scan_speed_bps = 64 * PAGE },
	};

	add_phase_ok(sim, 1500000, scans, G_N_ELEMENTS(scans));
	add_phase_ok(sim, 400000, NULL, 0);
	check_next_access(sim, 320, 2 * vr_sim_script_duration_us(sim), 2000, 300, "scan");
}

Test(next_access, across_the_script_wrap)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 11);
	struct vr_sim_set a = hot_pages(0, 16, 1); /* once a second, phase 0 only */
	uint64_t pass, t, next, first;

	add_phase_ok(sim, 2 * US_PER_S, &a, 1);
	add_phase_ok(sim, 3 * US_PER_S, NULL, 0);
	pass = vr_sim_script_duration_us(sim);
	/* from inside the idle phase the next access is in the next pass ... */
	for (uint64_t p = 0; p < 16; p++) {
		t = 2 * US_PER_S + 500000;
		next = vr_sim_next_access_us(sim, p * PAGE, t);
		first = vr_sim_next_access_us(sim, p * PAGE, 0);
		cr_assert(next > pass && next <= pass + 2 * US_PER_S,
			  "page %" G_GUINT64_FORMAT ": next access expected in the next pass's "
			  "first phase, got %" G_GUINT64_FORMAT,
			  p, next);
		/* ... and the same offset as in the first pass */
		cr_assert_eq(next, first + pass,
			     "page %" G_GUINT64_FORMAT ": every pass repeats the same accesses", p);
	}
	/* a page of no set is never accessed */
	cr_assert_eq(vr_sim_next_access_us(sim, 40 * PAGE, 0), G_MAXUINT64,
		     "a page outside every set: expected G_MAXUINT64");
}

Test(next_access, empty_script_never)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 1);

	cr_assert_eq(vr_sim_next_access_us(sim, 0, 0), G_MAXUINT64,
		     "an empty script never accesses anything");
}

/* ---- the workload's memory ---- */

TestSuite(workload, .description = "the workload's memory of a simulated guest");

Test(workload, defaults_to_the_whole_guest)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 1);
	size_t nr = 0;
	const struct vr_range *r = vr_sim_workload_ranges(sim, &nr);

	cr_assert_eq(nr, 1, "one range expected, got %zu", nr);
	cr_assert(r[0].start == 0 && r[0].end == 64 * PAGE, "expected [0, guest size)");
	cr_assert_eq(vr_sim_workload_bytes(sim), 64 * PAGE);
}

Test(workload, set_sorts_and_validates)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 1);
	struct vr_range ranges[] = { { 32 * PAGE, 40 * PAGE }, { 0, 8 * PAGE } };
	struct vr_range beyond = { 60 * PAGE, 65 * PAGE };
	struct vr_range unaligned = { 1, PAGE };
	g_autoptr(GError) err = NULL;
	const struct vr_range *r;
	size_t nr;

	cr_assert(vr_sim_set_workload_ranges(sim, ranges, 2, NULL));
	r = vr_sim_workload_ranges(sim, &nr);
	cr_assert(nr == 2 && r[0].start == 0 && r[1].start == 32 * PAGE, "expected sorted ranges");
	cr_assert_eq(vr_sim_workload_bytes(sim), 16 * PAGE);
	cr_assert_not(vr_sim_set_workload_ranges(sim, &beyond, 1, &err));
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID));
	g_clear_error(&err);
	cr_assert_not(vr_sim_set_workload_ranges(sim, &unaligned, 1, &err));
	cr_assert_not(vr_sim_set_workload_ranges(sim, ranges, 0, NULL));
	cr_assert_eq(vr_sim_workload_bytes(sim), 16 * PAGE, "a refused set changes nothing");
}

/* ---- pageout and refaults ---- */

TestSuite(pageout, .description = "pageout, residency and refaults");

Test(pageout, counts_only_resident_pages)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 1);
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_sim_reclaim_stats st;

	/* idle script: nothing is ever accessed; pages 0..31 resident */
	r = reclaim_new_ok(sim, 0, 32, 0, 10 * US_PER_S, NULL);
	cr_assert_eq(vr_sim_reclaim_resident_bytes(r), 32 * PAGE);
	cr_assert(vr_sim_reclaim_page_resident(r, 5 * PAGE));
	cr_assert_not(vr_sim_reclaim_page_resident(r, 40 * PAGE),
		      "a page outside the workload was never touched: not resident");

	vr_sim_reclaim_set_now(r, US_PER_S);
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 16, 48), 16 * PAGE,
		     "only the 16 resident pages of [16, 48) are paged out");
	cr_assert_not(vr_sim_reclaim_page_resident(r, 20 * PAGE));
	cr_assert(vr_sim_reclaim_page_resident(r, 15 * PAGE));
	cr_assert_eq(vr_sim_reclaim_resident_bytes(r), 16 * PAGE);
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 0, 64), 16 * PAGE,
		     "paging out again: only the 16 still resident");
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 0, 64), 0, "nothing left to page out");
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.pageout_bytes, 32 * PAGE);
	cr_assert_eq(st.nr_pageouts, 32);
	cr_assert_eq(st.refaults, 0, "an idle workload never refaults");
	cr_assert_eq(st.refault_penalty_us, 0);
}

Test(pageout, refault_makes_the_page_resident_and_costs_the_penalty)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * PAGE, 2);
	struct vr_sim_set set = hot_pages(0, 8, 2); /* every 0.5 s */
	struct vr_sim_reclaim_params params = { .pageout_bps = GIB, .refault_penalty_us = 70 };
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_sim_reclaim_stats st;
	uint64_t t = 3 * US_PER_S + 123, next;

	add_phase_ok(sim, 10 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 64, 0, 10 * US_PER_S, &params);
	next = vr_sim_next_access_us(sim, 3 * PAGE, t);
	cr_assert(next > t && next <= t + US_PER_S / 2, "a 2 Hz page is accessed within 0.5 s");

	vr_sim_reclaim_set_now(r, t);
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 3, 4), PAGE);
	vr_sim_reclaim_set_now(r, next - 1);
	cr_assert_not(vr_sim_reclaim_page_resident(r, 3 * PAGE),
		      "non-resident until its next access");
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 3, 4), 0, "already non-resident: nothing");
	vr_sim_reclaim_set_now(r, next);
	cr_assert(vr_sim_reclaim_page_resident(r, 3 * PAGE), "resident again at the refault");
	cr_assert_eq(vr_sim_reclaim_resident_bytes(r), 64 * PAGE);

	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.refaults, 1);
	cr_assert_eq(st.refault_penalty_us, 70);
	cr_assert_eq(st.nonresident_page_us, next - t,
		     "non-resident from the pageout to the refault: %" G_GUINT64_FORMAT
		     " us expected, got %" G_GUINT64_FORMAT,
		     next - t, st.nonresident_page_us);

	/* paged out again after the refault: a second episode */
	vr_sim_reclaim_set_now(r, next + 10);
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 3, 4), PAGE, "resident again: paged out");
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.refaults, 2);
	cr_assert_eq(st.refault_penalty_us, 140);
}

Test(pageout, refault_after_the_end_is_not_counted)
{
	g_autoptr(vr_sim) sim = sim_new_ok(16 * PAGE, 4);
	struct vr_sim_set set = hot_pages(0, 16, 0.1); /* every 10 s */
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_sim_reclaim_stats st;
	uint64_t end = US_PER_S / 100, expect_us = 0, expect_refaults = 0;

	add_phase_ok(sim, 100 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 16, 0, end, NULL);
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 0, 16), 16 * PAGE);
	for (uint64_t p = 0; p < 16; p++) {
		uint64_t next = vr_sim_next_access_us(sim, p * PAGE, 0);

		expect_refaults += next <= end;
		expect_us += MIN(next, end);
	}
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.refaults, expect_refaults);
	cr_assert_eq(st.nonresident_page_us, expect_us, "non-resident time stops at the run's end");
}

Test(pageout, time_averaged_saving_by_hand)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 1);
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_sim_reclaim_stats st;

	/*
	 * Idle workload, run [0, 1000) us, all 8 pages resident.
	 *
	 *   t=0      t=250             t=600            t=1000
	 *   |--------|-----------------|----------------|
	 *   pages 0,1 out at 250: 2 x 750 = 1500 page-us
	 *   pages 2..5 out at 600:       4 x 400 = 1600 page-us
	 *
	 * time average: 3100 page-us / 1000 us = 3.1 pages.
	 */
	r = reclaim_new_ok(sim, 0, 8, 0, 1000, NULL);
	vr_sim_reclaim_set_now(r, 250);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 2);
	vr_sim_reclaim_set_now(r, 600);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 6);
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.nonresident_page_us, 3100);
	cr_assert_float_eq(vr_sim_reclaim_saved_bytes(r), 3.1 * PAGE, 1e-9,
			   "expected 3.1 pages saved on average, got %f bytes",
			   vr_sim_reclaim_saved_bytes(r));
}

/* Pageout of [first, end) by a scheme with the one filter @type/@matching. */
static uint64_t apply_filtered_ok(struct vr_sim_reclaim *r, enum vr_filter_type type, bool matching,
				  uint64_t first, uint64_t end)
{
	g_autoptr(GError) err = NULL;
	uint64_t done = G_MAXUINT64;
	struct vr_scheme s = { .action = VR_ACTION_PAGEOUT, .nr_filters = 1 };

	s.filters[0] = (struct vr_scheme_filter){ .type = type, .matching = matching };
	cr_assert(vr_sim_actuator_ops.apply(r, NULL, &s, first * PAGE, end * PAGE, &done, &err),
		  "a filtered pageout should succeed, got: %s", err ? err->message : "no error");
	return done;
}

/* Pages 0, 10, 20 and 30 of 40 hot (accessed 1000 times a second), the
 * others never: hot and cold pages interleaved one in ten. */
static struct vr_sim *interleaved_sim(void)
{
	struct vr_sim *sim = sim_new_ok(40 * PAGE, 1);
	struct vr_sim_set sets[4];

	for (guint i = 0; i < G_N_ELEMENTS(sets); i++)
		sets[i] = hot_pages(10 * i, 10 * i + 1, 1000);
	add_phase_ok(sim, 100 * US_PER_S, sets, G_N_ELEMENTS(sets));
	return sim;
}

Test(pageout, young_filter_leaves_the_accessed_pages_of_a_region)
{
	g_autoptr(vr_sim) sim = interleaved_sim();
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 40, 0, 100 * US_PER_S, NULL);

	vr_sim_reclaim_set_now(r, US_PER_S);
	cr_assert_eq(apply_filtered_ok(r, VR_FILTER_YOUNG, true, 0, 40), 36 * PAGE,
		     "the 36 cold pages go, the 4 accessed since the start stay");
	for (uint64_t p = 0; p < 40; p += 10)
		cr_assert(vr_sim_reclaim_page_resident(r, p * PAGE), "hot page %u stays",
			  (unsigned)p);
	cr_assert_not(vr_sim_reclaim_page_resident(r, 5 * PAGE));
	/* The check cleared their accessed bits: a second one at the same time
	 * finds them old, as the kernel's would. */
	cr_assert_eq(apply_filtered_ok(r, VR_FILTER_YOUNG, true, 0, 40), 4 * PAGE,
		     "no access since the last check: the hot pages are old and go too");
	cr_assert_eq(vr_sim_reclaim_resident_bytes(r), 0);
}

Test(pageout, young_filter_not_matching_takes_only_the_accessed_pages)
{
	g_autoptr(vr_sim) sim = interleaved_sim();
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 40, 0, 100 * US_PER_S, NULL);

	vr_sim_reclaim_set_now(r, US_PER_S);
	cr_assert_eq(apply_filtered_ok(r, VR_FILTER_YOUNG, false, 0, 40), 4 * PAGE,
		     "matching false takes out the old pages: only the 4 hot ones go");
	cr_assert_not(vr_sim_reclaim_page_resident(r, 10 * PAGE));
	cr_assert(vr_sim_reclaim_page_resident(r, 11 * PAGE));
}

Test(pageout, anon_filter_takes_out_every_simulated_page)
{
	g_autoptr(vr_sim) sim = interleaved_sim();
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 40, 0, 100 * US_PER_S, NULL);

	vr_sim_reclaim_set_now(r, US_PER_S);
	cr_assert_eq(apply_filtered_ok(r, VR_FILTER_ANON, true, 0, 40), 0,
		     "simulated memory is all anonymous: a matching anon filter leaves it all");
	cr_assert_eq(apply_filtered_ok(r, VR_FILTER_ANON, false, 0, 40), 40 * PAGE,
		     "and a non-matching one leaves none of it");
}

Test(pageout, other_actions)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 1);
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 8, 0, 1000, NULL);
	struct vr_clock clock = vr_sim_reclaim_clock(r);

	cr_assert_eq(apply_ok(r, VR_ACTION_COLD, 0, 4), 4 * PAGE, "cold: a no-op, all done");
	cr_assert_eq(apply_ok(r, VR_ACTION_WILLNEED, 0, 4), 0, "willneed is not simulated");
	cr_assert_eq(apply_ok(r, VR_ACTION_HUGEPAGE, 0, 4), 0);
	cr_assert_eq(apply_ok(r, VR_ACTION_NOHUGEPAGE, 0, 4), 0);
	cr_assert_eq(vr_sim_reclaim_resident_bytes(r), 8 * PAGE, "nothing changes residency");
	cr_assert_eq(clock.now_ns(clock.data), 0, "and nothing costs time");
}

Test(pageout, refuses_bad_parameters)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 1);
	struct vr_sim_reclaim_params zero = { .pageout_bps = 0 };
	struct vr_range beyond = { 0, 9 * PAGE };
	g_autoptr(GError) err = NULL;

	cr_assert_null(vr_sim_reclaim_new(sim, NULL, 0, 0, 1000, &zero, &err));
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID));
	g_clear_error(&err);
	cr_assert_null(vr_sim_reclaim_new(sim, NULL, 0, 1000, 1000, NULL, &err),
		       "an empty run is refused");
	g_clear_error(&err);
	cr_assert_null(vr_sim_reclaim_new(sim, &beyond, 1, 0, 1000, NULL, &err),
		       "resident ranges beyond the guest are refused");
}

Test(pageout, untouched_pages_become_resident_at_first_access)
{
	g_autoptr(vr_sim) sim = sim_new_ok(32 * PAGE, 6);
	struct vr_sim_set set = hot_pages(16, 24, 5);
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_sim_reclaim_stats st;
	uint64_t first;

	add_phase_ok(sim, 10 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 8, 0, 10 * US_PER_S, NULL);
	first = vr_sim_next_access_us(sim, 20 * PAGE, 0);
	vr_sim_reclaim_set_now(r, first - 1);
	cr_assert_not(vr_sim_reclaim_page_resident(r, 20 * PAGE));
	cr_assert_eq(apply_ok(r, VR_ACTION_PAGEOUT, 20, 21), 0, "not resident yet: nothing");
	vr_sim_reclaim_set_now(r, first);
	cr_assert(vr_sim_reclaim_page_resident(r, 20 * PAGE), "resident from its first access");
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.refaults, 0, "a first access is not a refault");
}

/* ---- the cost model and the clock ---- */

/* ---- what a quota is charged: the resident pages of a range ---- */

TestSuite(resident, .description = "the actuator's count of resident memory (quota charge)");

/* The resident pages of [@first, @end) up to @limit of them, and where the
 * count stops: @end when the range holds @limit or fewer, else the page
 * after the one that reached @limit; by walking. */
static uint64_t brute_resident(const struct vr_sim_reclaim *r, uint64_t first, uint64_t end,
			       uint64_t limit, uint64_t *stop)
{
	uint64_t found = 0;

	*stop = end;
	for (uint64_t p = first; p < end; p++) {
		if (!vr_sim_reclaim_page_resident(r, p * PAGE))
			continue;
		if (found == limit) /* one more than the limit: stop after the limit's page */
			return found;
		if (++found == limit)
			*stop = p + 1;
	}
	*stop = end;
	return found;
}

Test(resident, counts_as_a_page_walk_through_pageouts_and_refaults)
{
	/* pages 0..127 resident at the start, 32..95 read at 4 Hz (they
	 * refault after a pageout), 128..255 never touched */
	g_autoptr(vr_sim) sim = sim_new_ok(256 * PAGE, 3);
	struct vr_sim_set set = hot_pages(32, 96, 4);
	g_autoptr(vr_sim_reclaim) r = NULL;
	struct vr_rng rng;
	unsigned nr_partial = 0, nr_stopped = 0;

	add_phase_ok(sim, 10 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 128, 0, 10 * US_PER_S, NULL);
	vr_rng_seed(&rng, 7);
	for (unsigned step = 0; step < 400; step++) {
		uint64_t a = vr_rng_below(&rng, 256), b = vr_rng_below(&rng, 256);
		uint64_t first = MIN(a, b), end = MAX(a, b) + 1;
		uint64_t limit = 1 + vr_rng_below(&rng, 96);
		uint64_t stop = 0, want_stop, got, want;

		vr_sim_reclaim_set_now(r, (step + 1) * US_PER_S / 50);
		got = vr_sim_actuator_ops.resident(r, NULL, first * PAGE, end * PAGE, limit * PAGE,
						   &stop);
		want = brute_resident(r, first, end, limit, &want_stop);
		cr_assert(got == want * PAGE && stop == want_stop * PAGE,
			  "step %u: pages [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			  ") up to %" G_GUINT64_FORMAT " pages: expected %" G_GUINT64_FORMAT
			  " pages up to page %" G_GUINT64_FORMAT ", got %" G_GUINT64_FORMAT
			  " up to %" G_GUINT64_FORMAT,
			  step, first, end, limit, want, want_stop, got / PAGE, stop / PAGE);
		nr_stopped += want == limit && want_stop < end;
		if (step % 3 == 0) {
			nr_partial += want > 0 && want < end - first;
			apply_ok(r, VR_ACTION_PAGEOUT, first, end);
		}
	}
	cr_assert(nr_stopped > 20 && nr_partial > 20,
		  "test bug: the walk should meet ranges cut short by the limit (%u) and ranges "
		  "partly resident (%u)",
		  nr_stopped, nr_partial);
	cr_assert_eq(vr_sim_actuator_ops.resident(r, NULL, 0, 256 * PAGE, G_MAXUINT64,
						  &(uint64_t){ 0 }),
		     vr_sim_reclaim_resident_bytes(r),
		     "the whole guest's count should be the resident bytes");
}

TestSuite(cost, .description = "modeled pageout time, read through the reclaim's clock");

Test(cost, clock_advances_by_bytes_over_rate)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB + 64 * PAGE, 1);
	/* 1000 pages a second: 1 ms per page */
	struct vr_sim_reclaim_params slow = { .pageout_bps = 1000 * PAGE };
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 64, 0, 1000, &slow);
	g_autoptr(vr_sim_reclaim) d = NULL;
	struct vr_clock clock = vr_sim_reclaim_clock(r), dclock;
	struct vr_sim_reclaim_stats st;

	cr_assert_eq(clock.now_ns(clock.data), 0);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 3);
	cr_assert_eq(clock.now_ns(clock.data), 3000000, "3 pages at 1 ms each: 3e6 ns");
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 3);
	cr_assert_eq(clock.now_ns(clock.data), 3000000, "nothing resident: no time");
	apply_ok(r, VR_ACTION_PAGEOUT, 3, 10);
	cr_assert_eq(clock.now_ns(clock.data), 10000000);
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.actuator_ns, 10000000);

	/* the default: 1 GiB/s, so 1 GiB takes 1 s */
	d = reclaim_new_ok(sim, 0, GIB / PAGE, 0, 1000, NULL);
	dclock = vr_sim_reclaim_clock(d);
	apply_ok(d, VR_ACTION_PAGEOUT, 0, GIB / PAGE);
	cr_assert_eq(dclock.now_ns(dclock.data), 1000000000ULL, "1 GiB at 1 GiB/s: 1 s");
}

static uint64_t fake_cpu_ns;

static uint64_t fake_cpu(void *data G_GNUC_UNUSED)
{
	return fake_cpu_ns += 7;
}

Test(cost, cpu_clock_measures_the_bookkeeping)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 1);
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 8, 0, 1000, NULL);
	struct vr_clock cpu = { .now_ns = fake_cpu };
	struct vr_sim_reclaim_stats st;

	vr_sim_reclaim_set_cpu_clock(r, &cpu);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 8);
	apply_ok(r, VR_ACTION_COLD, 0, 8);
	vr_sim_reclaim_get_stats(r, &st);
	cr_assert_eq(st.sim_cpu_ns, 14, "two applies, 7 ns each by the fake clock");
}

/* A pageout scheme under a time quota, applied by the engine: the quota must
 * bite through the modeled time. */
Test(cost, time_quota_bites_through_the_clock)
{
	const uint64_t pages = 16384; /* 64 MiB, all resident, never accessed */
	g_autoptr(vr_sim) sim = sim_new_ok(pages * PAGE, 1);
	/* 1000 pages a second: 4096 bytes per ms */
	struct vr_sim_reclaim_params slow = { .pageout_bps = 1000 * PAGE };
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, pages, 0, 100 * US_PER_S, &slow);
	g_autoptr(vr_ctx) ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(sim), 1);
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	struct vr_range ram = { 0, pages * PAGE };
	struct vr_clock clock = vr_sim_reclaim_clock(r);
	struct vr_scheme *const schemes[] = { s };
	uint64_t paged[5] = { 0 };
	g_autoptr(GError) err = NULL;

	s->quota.ms = 10; /* per 1 s window */
	s->quota.reset_interval_ms = 1000;
	cr_assert(vr_ctx_add_target(ctx, 0, &ram, 1, &err));
	cr_assert(vr_ctx_set_schemes(ctx, schemes, 1, &err), "%s", err ? err->message : "");
	vr_ctx_set_actuator(ctx, &vr_sim_actuator_ops, r);
	vr_ctx_set_clock(ctx, &clock);
	cr_assert(vr_ctx_start(ctx, 0, &err));
	for (unsigned w = 0; w < G_N_ELEMENTS(paged); w++) {
		struct vr_sim_reclaim_stats st;

		vr_sim_reclaim_set_now(r, w * US_PER_S);
		vr_ctx_apply_schemes(ctx, w * US_PER_S);
		vr_sim_reclaim_get_stats(r, &st);
		paged[w] = st.pageout_bytes;
	}
	/* window 0: nothing measured yet, the assumed 4 MiB/ms: 40 MiB */
	cr_assert_eq(paged[0], 40 * MIB,
		     "first window: 4 MiB/ms * 10 ms = 40 MiB expected, got %" G_GUINT64_FORMAT,
		     paged[0]);
	/* then the modeled 4096 bytes/ms: 10 ms is 10 pages a window */
	for (unsigned w = 1; w < G_N_ELEMENTS(paged); w++)
		cr_assert_eq(paged[w] - paged[w - 1], 10 * PAGE,
			     "window %u: 10 pages expected from the modeled throughput, got "
			     "%" G_GUINT64_FORMAT " bytes",
			     w, paged[w] - paged[w - 1]);
}

/* ---- metrics ---- */

TestSuite(metrics, .description = "the simulated guest's metrics");

Test(metrics, free_mem_rate)
{
	g_autoptr(vr_sim) sim = sim_new_ok(10 * PAGE, 1);
	g_autoptr(vr_sim_reclaim) r = reclaim_new_ok(sim, 0, 6, 0, 1000, NULL);
	uint64_t v = 0;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_WMARK, VR_WMARK_FREE_MEM_RATE, &v, &err));
	cr_assert_eq(v, 400,
		     "6 of 10 pages resident: 400 per thousand free, got %" G_GUINT64_FORMAT, v);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 2);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_FREE_MEM_RATE, &v, &err));
	cr_assert_eq(v, 600, "2 paged out: 600 expected, got %" G_GUINT64_FORMAT, v);
	cr_assert_not(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_USER_INPUT, &v, &err),
		      "user_input is not a metric of the guest");
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID));
}

Test(metrics, psi_counts_refaults_since_the_last_read)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 3);
	struct vr_sim_set set = hot_pages(0, 8, 10);
	g_autoptr(vr_sim_reclaim) r = NULL;
	uint64_t v = 1;

	add_phase_ok(sim, 10 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 8, 0, 10 * US_PER_S, NULL);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 8);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_SOME_MEM_PSI_US, &v, NULL));
	cr_assert_eq(v, 0, "no refault has happened yet");
	vr_sim_reclaim_set_now(r, US_PER_S); /* every 10 Hz page was accessed */
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_SOME_MEM_PSI_US, &v, NULL));
	cr_assert_eq(v, 8 * VR_SIM_REFAULT_PENALTY_US_DEFAULT,
		     "8 refaults of 50 us, got %" G_GUINT64_FORMAT, v);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_SOME_MEM_PSI_US, &v, NULL));
	cr_assert_eq(v, 0, "none since the last read");
}

Test(metrics, refault_bytes_count_apart_from_psi)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * PAGE, 3);
	struct vr_sim_set set = hot_pages(0, 8, 10);
	g_autoptr(vr_sim_reclaim) r = NULL;
	uint64_t v = 1;

	add_phase_ok(sim, 10 * US_PER_S, &set, 1);
	r = reclaim_new_ok(sim, 0, 8, 0, 10 * US_PER_S, NULL);
	apply_ok(r, VR_ACTION_PAGEOUT, 0, 8);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_REFAULT_BYTES, &v, NULL));
	cr_assert_eq(v, 0, "no refault has happened yet");
	vr_sim_reclaim_set_now(r, US_PER_S);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_SOME_MEM_PSI_US, &v, NULL));
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_REFAULT_BYTES, &v, NULL));
	cr_assert_eq(
		v, 8 * PAGE,
		"a read of the PSI metric must not consume the refaults: 8 pages, got %" G_GUINT64_FORMAT,
		v);
	cr_assert(vr_sim_metric_ops.get(r, VR_METRIC_GOAL, VR_GOAL_REFAULT_BYTES, &v, NULL));
	cr_assert_eq(v, 0, "none since the last read");
}

/* ---- the matrix script ---- */

TestSuite(matrix, .description = "the reclaim benchmark's built-in workload");

Test(matrix, hot_set_is_a_tenth_of_the_workload_and_moves)
{
	const uint64_t size = 8 * GIB, phase = 60 * US_PER_S;
	g_autoptr(vr_sim) sim = sim_new_ok(size, 1);
	g_autoptr(GError) err = NULL;
	uint64_t workload, prev_hottest = G_MAXUINT64;
	const struct vr_range *w;
	size_t nr;

	cr_assert(vr_sim_load_builtin(sim, "matrix", phase, &err), "%s", err ? err->message : "");
	cr_assert_eq(vr_sim_nr_phases(sim), 4);
	w = vr_sim_workload_ranges(sim, &nr);
	workload = vr_sim_workload_bytes(sim);
	cr_assert(nr == 1 && w[0].start == 0 && w[0].end == 6 * GIB,
		  "the workload's memory is [0, 6 GiB) of 8 GiB");
	for (unsigned k = 0; k < 4; k++) {
		uint64_t t = k * phase + phase / 2;
		uint64_t hot = vr_sim_hot_bytes(sim, t);
		uint64_t hottest = vr_sim_hottest_page(sim, t);

		cr_assert(hot <= workload / 10 && workload / 10 - hot < PAGE,
			  "phase %u: hot bytes %" G_GUINT64_FORMAT
			  " expected 10%% of the workload's %" G_GUINT64_FORMAT " within a page",
			  k, hot, workload);
		cr_assert(hottest < w[0].end && hottest + hot <= w[0].end,
			  "phase %u: the hot set lies in the workload's memory", k);
		cr_assert_neq(hottest, prev_hottest, "phase %u: the hot set moves", k);
		cr_assert_eq(hottest, (size * 1875 * k / 10000) / PAGE * PAGE,
			     "phase %u: the hot set starts at k * 0.1875 of the guest", k);
		cr_assert(vr_sim_page_hz(sim, hottest + hot, t) == 0.0,
			  "phase %u: nothing after the hot set is accessed", k);
		prev_hottest = hottest;
	}
}

/* ---- the runner and the matrix's rows ---- */

TestSuite(run, .description = "a policy run against the simulated guest (sim-run.h)");

static struct vr_sim_run_config small_config(void)
{
	struct vr_sim_run_config cfg = VR_SIM_RUN_CONFIG_DEFAULT;

	cfg.size_bytes = 64 * MIB;
	cfg.phase_us = 5 * US_PER_S;
	cfg.duration_us = 20 * US_PER_S;
	return cfg;
}

static void run_ok(const struct vr_sim_matrix_row *row, struct vr_sim_result *res)
{
	struct vr_sim_run_config cfg = small_config();
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_policy) policy = vr_policy_new_profile(NULL, &err);
	g_autoptr(vr_sim_run) run = NULL;

	cr_assert_not_null(policy, "%s", err ? err->message : "");
	run = vr_sim_run_new(&cfg, policy, &err);
	cr_assert_not_null(run, "vr_sim_run_new: %s", err ? err->message : "");
	if (row)
		cr_assert(vr_sim_matrix_adjust(vr_sim_run_ctx(run), row, &err), "%s",
			  err ? err->message : "");
	cr_assert(vr_sim_run_run(run, &err), "vr_sim_run_run: %s", err ? err->message : "");
	vr_sim_run_result(run, res);
	cr_assert_float_eq(res->memory_saving_pct,
			   100.0 * vr_sim_reclaim_saved_bytes(vr_sim_run_reclaim(run)) /
				   (double)res->workload_bytes,
			   1e-9,
			   "saving = time-averaged non-resident bytes / the workload's memory");
	cr_assert_not(vr_sim_run_run(run, NULL), "a run runs once");
}

Test(run, results_are_consistent_and_deterministic)
{
	const struct vr_sim_matrix_row none = { 0, false };
	struct vr_sim_result a, b;

	run_ok(&none, &a);
	run_ok(&none, &b);
	cr_assert_eq(a.workload_bytes, 48 * MIB, "the matrix workload: 3/4 of the guest");
	cr_assert_eq(a.guest_bytes, 64 * MIB);
	cr_assert(a.reclaim.pageout_bytes > 0, "an unlimited scheme pages out the cold memory");
	cr_assert(a.memory_saving_pct > 0 && a.memory_saving_pct < 100,
		  "saving in (0, 100)%%, got %f", a.memory_saving_pct);
	cr_assert_float_eq(
		a.slowdown_pct,
		100.0 * (double)(a.reclaim.refaults * VR_SIM_REFAULT_PENALTY_US_DEFAULT) /
			(double)(20 * US_PER_S),
		1e-9, "slowdown = refaults * penalty / time");
	cr_assert_float_eq(a.actuator_cpu_pct, 100.0 * (double)a.reclaim.actuator_ns / 20e9, 1e-9);
	cr_assert_float_eq(a.reclaimer_cpu_pct, a.engine_cpu_pct + a.actuator_cpu_pct, 1e-9);
	cr_assert_eq(a.engine_cpu_ns, 0, "no CPU clock given: not measured");
	cr_assert(a.reclaim.refaults == b.reclaim.refaults &&
			  a.reclaim.nonresident_page_us == b.reclaim.nonresident_page_us &&
			  a.reclaim.pageout_bytes == b.reclaim.pageout_bytes,
		  "same workload and seed: same run");
}

Test(run, refuses_an_unknown_workload)
{
	struct vr_sim_run_config cfg = small_config();
	g_autoptr(vr_policy) policy = vr_policy_new_profile(NULL, NULL);
	g_autoptr(GError) err = NULL;

	cfg.workload = "nope";
	cr_assert_null(vr_sim_run_new(&cfg, policy, &err));
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_UNKNOWN_SCRIPT));
	cr_assert(strstr(err->message, "nope"), "the message names the workload: %s", err->message);
}

Test(run, matrix_rows_and_adjust)
{
	size_t nr;
	const struct vr_sim_matrix_row *rows = vr_sim_matrix_rows(&nr);
	static const uint64_t ms[] = { 0, 10, 50, 200, 10, 50, 200 };
	struct vr_sim_run_config cfg = small_config();
	g_autoptr(vr_policy) policy = vr_policy_new_profile(NULL, NULL);
	g_autoptr(vr_sim_run) run = vr_sim_run_new(&cfg, policy, NULL);
	g_autoptr(vr_scheme) stat = vr_scheme_new("count", VR_ACTION_STAT);
	struct vr_ctx *ctx = vr_sim_run_ctx(run);
	struct vr_scheme *schemes[2];
	const struct vr_scheme *s;

	cr_assert_eq(nr, 7);
	for (size_t i = 0; i < nr; i++) {
		cr_assert_eq(rows[i].quota_ms, ms[i], "row %zu: quota", i);
		cr_assert_eq(rows[i].prioritization, i >= 4, "row %zu: prioritization", i);
	}
	stat->quota.ms = 7;
	stat->wmarks = (struct vr_watermarks){
		.metric = VR_WMARK_FREE_MEM_RATE, .interval_us = 1000, .high = 9, .mid = 5, .low = 1
	};
	schemes[0] = vr_scheme_copy(vr_ctx_scheme(ctx, 0));
	schemes[1] = stat;
	cr_assert(vr_ctx_set_schemes(ctx, schemes, 2, NULL));
	vr_scheme_free(schemes[0]);

	cr_assert(vr_sim_matrix_adjust(ctx, &rows[2], NULL)); /* 50 ms/s, N */
	s = vr_ctx_scheme(ctx, 0);
	cr_assert(s->quota.ms == 50 && s->quota.sz == 0 && s->quota.nr_goals == 0);
	cr_assert(s->quota.weight_sz == 0 && s->quota.weight_nr_accesses == 0 &&
			  s->quota.weight_age == 0,
		  "without prioritization: weights 0");
	cr_assert_eq(s->wmarks.metric, VR_WMARK_NONE, "watermarks off");
	s = vr_ctx_scheme(ctx, 1);
	cr_assert(s->quota.ms == 7 && s->wmarks.metric == VR_WMARK_FREE_MEM_RATE,
		  "a scheme other than pageout is left alone");

	cr_assert(vr_sim_matrix_adjust(ctx, &rows[5], NULL)); /* 50 ms/s, Y */
	s = vr_ctx_scheme(ctx, 0);
	cr_assert(s->quota.weight_age == 1 && s->quota.weight_sz == 0 &&
			  s->quota.weight_nr_accesses == 0,
		  "with prioritization: age-only when the weights were all 0");
	cr_assert(vr_sim_matrix_adjust(ctx, &rows[0], NULL)); /* none */
	cr_assert_not(vr_quota_is_set(&vr_ctx_scheme(ctx, 0)->quota), "none: no quota");
}
