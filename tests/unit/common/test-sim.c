/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the simulated guest (common/sim.h): validation, the access
 * model of each kind of set, the script's phases and repetition, the
 * built-in scripts and the "sim" access source.
 *
 * Random inputs come from a vr_rng with a fixed seed, so every run checks the
 * same cases.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"
#include "sim.h"
#include "test-sim-helpers.h"

/* ---- helpers ---- */

static void add_phase_ok(struct vr_sim *sim, const char *name, uint64_t duration_us,
			 const struct vr_sim_set *sets, size_t nr)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_sim_add_phase(sim, name, duration_us, sets, nr, &err),
		  "adding phase '%s' should succeed, got: %s", name ? name : "(null)",
		  err ? err->message : "FALSE without an error");
}

static struct vr_sim_set hot_pages(uint64_t first_page, uint64_t end_page, double hz)
{
	return (struct vr_sim_set){
		.kind = VR_SIM_SET_HOT, .start = first_page * PAGE, .end = end_page * PAGE, .hz = hz
	};
}

static struct vr_sim_set zipf_pages(uint64_t first_page, uint64_t end_page, double s,
				    double total_hz)
{
	return (struct vr_sim_set){ .kind = VR_SIM_SET_ZIPF,
				    .start = first_page * PAGE,
				    .end = end_page * PAGE,
				    .zipf_s = s,
				    .zipf_total_hz = total_hz };
}

static struct vr_sim_set scan_pages(uint64_t first_page, uint64_t end_page, double hz,
				    uint64_t window_pages, uint64_t speed_bps)
{
	return (struct vr_sim_set){ .kind = VR_SIM_SET_SCAN,
				    .start = first_page * PAGE,
				    .end = end_page * PAGE,
				    .hz = hz,
				    .scan_window_bytes = window_pages * PAGE,
				    .scan_speed_bps = speed_bps };
}

static bool close_rel(double got, double want, double tol)
{
	return fabs(got - want) <= tol * fabs(want);
}

/* Bytes of the pages in [start, end) (page-aligned) accessed in (t0, t1], page by page. */
static uint64_t accessed_bytes_by_page(const struct vr_sim *sim, uint64_t start, uint64_t end,
				       uint64_t t0, uint64_t t1)
{
	uint64_t bytes = 0;

	for (uint64_t a = start; a < end; a += PAGE)
		if (vr_sim_page_accessed(sim, a, t0, t1))
			bytes += PAGE;
	return bytes;
}

/* ---- vr_sim_new and vr_sim_add_phase validation ---- */

TestSuite(sim_new, .description = "guest creation and phase validation");

Test(sim_new, refuses_zero_or_unaligned_size)
{
	static const uint64_t sizes[] = { 0, 1, PAGE - 1, PAGE + 1, MIB + 512, TIB - 1 };

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		g_autoptr(GError) err = NULL;
		struct vr_sim *sim = vr_sim_new(sizes[i], 1, &err);

		cr_expect_null(sim, "size %" G_GUINT64_FORMAT ": expected NULL", sizes[i]);
		vr_sim_free(sim);
		cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID),
			  "size %" G_GUINT64_FORMAT ": expected VR_SIM_ERROR_INVALID, got %s",
			  sizes[i], err ? err->message : "no error");
		cr_expect(strstr(err->message, "page size"),
			  "size %" G_GUINT64_FORMAT
			  ": the message should name the page size, got '%s'",
			  sizes[i], err->message);
	}
}

Test(sim_new, new_guest_is_idle_forever)
{
	g_autoptr(vr_sim) sim = sim_new_ok(TIB, 7);
	uint64_t start = 123;
	const char *name = "untouched";

	cr_expect_eq(vr_sim_size(sim), TIB, "size: expected 1 TiB, got %" G_GUINT64_FORMAT,
		     vr_sim_size(sim));
	cr_expect_eq(vr_sim_nr_phases(sim), 0, "a new guest should have no phases");
	cr_expect_eq(vr_sim_script_duration_us(sim), 0, "an empty script lasts 0 us");
	cr_expect_eq(vr_sim_phase_at(sim, 5000, &name, &start), -1,
		     "phase_at on an empty script: expected -1");
	cr_expect_eq(vr_sim_hot_bytes(sim, 5000), 0, "an empty script has no hot bytes");
	cr_expect_eq(vr_sim_hottest_page(sim, 5000), G_MAXUINT64,
		     "an empty script has no hottest page: expected G_MAXUINT64");
	cr_expect_eq(vr_sim_page_hz(sim, 0, 5000), 0.0, "an empty script accesses nothing");
	cr_expect_not(vr_sim_page_accessed(sim, 0, 0, 1000000000),
		      "an empty script accesses nothing");
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, 64 * MIB, 0, 1000000000), 0,
		     "an empty script accesses nothing");
}

/*
 * Parameters are copied into Criterion's test workers, which do not share the
 * address space of the runner: strings are arrays, not pointers.
 */
struct invalid_set_case {
	char what[40];
	struct vr_sim_set set;
	char msg_part[48]; /* the message must contain this */
};

/* Guest of 256 pages (1 MiB). */
#define VAL_GUEST (256 * PAGE)

ParameterizedTestParameters(sim_new, refuses_invalid_set)
{
	static struct invalid_set_case cases[] = {
		{ "start unaligned",
		  { .kind = VR_SIM_SET_HOT, .start = 100, .end = 16 * PAGE, .hz = 10 },
		  "multiples of the page size" },
		{ "end unaligned",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = 16 * PAGE + 1, .hz = 10 },
		  "multiples of the page size" },
		{ "empty",
		  { .kind = VR_SIM_SET_HOT, .start = 16 * PAGE, .end = 16 * PAGE, .hz = 10 },
		  "non-empty range inside the guest" },
		{ "end below start",
		  { .kind = VR_SIM_SET_HOT, .start = 32 * PAGE, .end = 16 * PAGE, .hz = 10 },
		  "non-empty range inside the guest" },
		{ "beyond the guest's end",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = VAL_GUEST + PAGE, .hz = 10 },
		  "non-empty range inside the guest" },
		{ "entirely beyond the guest's end",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = VAL_GUEST,
		    .end = VAL_GUEST + PAGE,
		    .zipf_s = 1,
		    .zipf_total_hz = 10 },
		  "non-empty range inside the guest" },
		{ "hot hz 0",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = PAGE, .hz = 0 },
		  "hz must be a positive number" },
		{ "hot hz negative",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = PAGE, .hz = -1 },
		  "hz must be a positive number" },
		{ "hot hz NaN",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = PAGE, .hz = NAN },
		  "hz must be a positive number" },
		{ "hot hz infinite",
		  { .kind = VR_SIM_SET_HOT, .start = 0, .end = PAGE, .hz = INFINITY },
		  "hz must be a positive number" },
		{ "scan hz 0",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = 0,
		    .scan_window_bytes = PAGE,
		    .scan_speed_bps = PAGE },
		  "hz must be a positive number" },
		{ "scan hz NaN",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = NAN,
		    .scan_window_bytes = PAGE,
		    .scan_speed_bps = PAGE },
		  "hz must be a positive number" },
		{ "zipf_s 0",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = 0,
		    .zipf_total_hz = 10 },
		  "zipf_s must be a positive number" },
		{ "zipf_s negative",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = -1,
		    .zipf_total_hz = 10 },
		  "zipf_s must be a positive number" },
		{ "zipf_s NaN",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = NAN,
		    .zipf_total_hz = 10 },
		  "zipf_s must be a positive number" },
		{ "zipf_total_hz 0",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = 1,
		    .zipf_total_hz = 0 },
		  "zipf_total_hz must be a positive number" },
		{ "zipf_total_hz negative",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = 1,
		    .zipf_total_hz = -5 },
		  "zipf_total_hz must be a positive number" },
		{ "zipf_total_hz NaN",
		  { .kind = VR_SIM_SET_ZIPF,
		    .start = 0,
		    .end = PAGE,
		    .zipf_s = 1,
		    .zipf_total_hz = NAN },
		  "zipf_total_hz must be a positive number" },
		{ "scan window 0",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = 10,
		    .scan_window_bytes = 0,
		    .scan_speed_bps = PAGE },
		  "scan_window_bytes" },
		{ "scan window unaligned",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = 10,
		    .scan_window_bytes = PAGE + 1,
		    .scan_speed_bps = PAGE },
		  "scan_window_bytes" },
		{ "scan window bigger than the set",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = 10,
		    .scan_window_bytes = 17 * PAGE,
		    .scan_speed_bps = PAGE },
		  "scan_window_bytes" },
		{ "scan speed 0",
		  { .kind = VR_SIM_SET_SCAN,
		    .start = 0,
		    .end = 16 * PAGE,
		    .hz = 10,
		    .scan_window_bytes = PAGE,
		    .scan_speed_bps = 0 },
		  "scan_speed_bps" },
		{ "unknown kind",
		  { .kind = (enum vr_sim_set_kind)7, .start = 0, .end = PAGE, .hz = 10 },
		  "unknown kind" },
	};

	return cr_make_param_array(struct invalid_set_case, cases, G_N_ELEMENTS(cases));
}

/*
 * The bad set is the second set of the second phase: the message names both,
 * and the script keeps its one good phase.
 */
ParameterizedTest(struct invalid_set_case *c, sim_new, refuses_invalid_set)
{
	g_autoptr(vr_sim) sim = sim_new_ok(VAL_GUEST, 1);
	g_autoptr(GError) err = NULL;
	struct vr_sim_set good = hot_pages(0, 8, 100);
	struct vr_sim_set sets[2] = { good, c->set };

	add_phase_ok(sim, "good", 1000, &good, 1);
	cr_assert_not(vr_sim_add_phase(sim, "bad", 2000, sets, 2, &err),
		      "%s: vr_sim_add_phase should refuse the set", c->what);
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID),
		  "%s: expected VR_SIM_ERROR_INVALID, got %s", c->what,
		  err ? err->message : "no error");
	cr_expect(strstr(err->message, c->msg_part),
		  "%s: the message should contain '%s', got '%s'", c->what, c->msg_part,
		  err->message);
	cr_expect(strstr(err->message, "phase 1") && strstr(err->message, "sets[1]"),
		  "%s: the message should name phase 1 and sets[1], got '%s'", c->what,
		  err->message);
	cr_expect_eq(vr_sim_nr_phases(sim), 1,
		     "%s: a refused phase must not be added (got %u phases)", c->what,
		     vr_sim_nr_phases(sim));
	cr_expect_eq(vr_sim_script_duration_us(sim), 1000,
		     "%s: the script duration must stay 1000 us, got %" G_GUINT64_FORMAT, c->what,
		     vr_sim_script_duration_us(sim));
	cr_expect_eq(vr_sim_phase_at(sim, 1500, NULL, NULL), 0,
		     "%s: the script must still be its one good phase", c->what);
}

Test(sim_new, refuses_zero_duration)
{
	g_autoptr(vr_sim) sim = sim_new_ok(VAL_GUEST, 1);
	g_autoptr(GError) err = NULL;
	struct vr_sim_set good = hot_pages(0, 8, 100);

	add_phase_ok(sim, "good", 1000, &good, 1);
	cr_assert_not(vr_sim_add_phase(sim, "zero", 0, &good, 1, &err),
		      "a phase of 0 us should be refused");
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID),
		  "expected VR_SIM_ERROR_INVALID, got %s", err ? err->message : "no error");
	cr_expect(strstr(err->message, "duration"),
		  "the message should name the duration, got '%s'", err->message);
	cr_expect_eq(vr_sim_nr_phases(sim), 1, "expected 1 phase after the refusal, got %u",
		     vr_sim_nr_phases(sim));
	cr_expect_eq(vr_sim_script_duration_us(sim), 1000,
		     "expected the duration to stay 1000 us, got %" G_GUINT64_FORMAT,
		     vr_sim_script_duration_us(sim));

	/* an idle phase (no sets) is valid */
	add_phase_ok(sim, "idle", 500, NULL, 0);
	cr_expect_eq(vr_sim_script_duration_us(sim), 1500,
		     "expected 1500 us after an idle phase of 500 us, got %" G_GUINT64_FORMAT,
		     vr_sim_script_duration_us(sim));
}

Test(sim_new, unknown_builtin_is_refused)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB, 1);
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_sim_load_builtin(sim, "no-such-script", 1000000, &err),
		      "loading an unknown built-in should fail");
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_UNKNOWN_SCRIPT),
		  "expected VR_SIM_ERROR_UNKNOWN_SCRIPT, got %s", err ? err->message : "no error");
	cr_expect(strstr(err->message, "no-such-script"),
		  "the message should name the script, got '%s'", err->message);
	cr_expect_eq(vr_sim_nr_phases(sim), 0, "the script must stay empty");

	g_clear_error(&err);
	cr_assert_not(vr_sim_load_builtin(sim, "clustered", 0, &err),
		      "a built-in with phases of 0 us should fail");
	cr_expect(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID),
		  "phase_us 0: expected VR_SIM_ERROR_INVALID, got %s",
		  err ? err->message : "no error");
	cr_expect_eq(vr_sim_nr_phases(sim), 0, "phase_us 0: the script must stay empty");
}

/* ---- hot sets ---- */

TestSuite(sim_hot, .description = "hot sets: periodic accesses with a per-page offset");

/* Guest of 2048 pages, a hot set on pages [16, 1040). */
#define HOT_GUEST (2048 * PAGE)
#define HOT_FIRST 16
#define HOT_END	  1040

struct hot_period_case {
	double hz;
	uint64_t period_us;
};

ParameterizedTestParameters(sim_hot, accessed_in_every_interval_of_a_period)
{
	static struct hot_period_case cases[] = {
		{ 100, 10000 },
		{ 1000, 1000 },
		{ 2, 500000 },
		{ 20000, 50 },
	};

	return cr_make_param_array(struct hot_period_case, cases, G_N_ELEMENTS(cases));
}

/*
 * The phase lasts a whole number of periods, so the trains continue across
 * the script's wrap-around: every interval of a period or more, anywhere in
 * the first few passes, holds an access of every page of the set.
 */
ParameterizedTest(struct hot_period_case *c, sim_hot, accessed_in_every_interval_of_a_period)
{
	g_autoptr(vr_sim) sim = sim_new_ok(HOT_GUEST, 11);
	struct vr_sim_set set = hot_pages(HOT_FIRST, HOT_END, c->hz);
	uint64_t duration = 100 * c->period_us;
	struct vr_rng rng;

	vr_rng_seed(&rng, 1);
	add_phase_ok(sim, "hot", duration, &set, 1);
	for (uint64_t p = HOT_FIRST; p < HOT_END; p++) {
		for (int k = 0; k < 4; k++) {
			uint64_t t0 = vr_rng_below(&rng, 3 * duration);
			uint64_t len = k == 0 ? c->period_us :
						c->period_us + vr_rng_below(&rng, c->period_us);

			cr_assert(vr_sim_page_accessed(sim, p * PAGE, t0, t0 + len),
				  "hz %g: page %" G_GUINT64_FORMAT " should be accessed in every "
				  "interval of %" G_GUINT64_FORMAT
				  " us >= one period, not in (%" G_GUINT64_FORMAT
				  ", %" G_GUINT64_FORMAT "]",
				  c->hz, p, len, t0, t0 + len);
		}
		/* the interval ending exactly at the wrap, and one across it */
		cr_assert(vr_sim_page_accessed(sim, p * PAGE, duration - c->period_us, duration),
			  "hz %g: page %" G_GUINT64_FORMAT
			  " not accessed in the last period of the pass",
			  c->hz, p);
		cr_assert(vr_sim_page_accessed(sim, p * PAGE, duration - c->period_us / 2,
					       duration + c->period_us / 2 + 1),
			  "hz %g: page %" G_GUINT64_FORMAT
			  " not accessed in a period across the wrap",
			  c->hz, p);
	}
}

/*
 * Each page's offset is uniform in the period, so an interval of a fraction
 * f of the period holds an access with probability f.
 */
Test(sim_hot, short_intervals_hit_in_proportion)
{
	static const struct {
		uint64_t divisor;
		double fraction;
	} cases[] = { { 10, 0.1 }, { 2, 0.5 }, { 4, 0.25 } };
	g_autoptr(vr_sim) sim = sim_new_ok(HOT_GUEST, 12);
	const uint64_t period = 10000; /* 100 Hz */
	struct vr_sim_set set = hot_pages(0, 2048, 100);
	struct vr_rng rng;

	vr_rng_seed(&rng, 2);
	add_phase_ok(sim, "hot", 1000 * period, &set, 1);
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t len = period / cases[i].divisor;
		guint hits = 0, n = 0;

		for (int round = 0; round < 4; round++) {
			for (uint64_t p = 0; p < 2048; p++, n++) {
				uint64_t t0 = vr_rng_below(&rng, 900 * period);

				hits += vr_sim_page_accessed(sim, p * PAGE, t0, t0 + len);
			}
		}
		cr_expect(fabs((double)hits / n - cases[i].fraction) < 0.02,
			  "intervals of 1/%" G_GUINT64_FORMAT
			  " period: expected about %.0f%% accessed, got %.2f%% (%u of %u)",
			  cases[i].divisor, 100 * cases[i].fraction, 100.0 * hits / n, hits, n);
	}
}

Test(sim_hot, pages_outside_every_set_never_accessed)
{
	g_autoptr(vr_sim) sim = sim_new_ok(HOT_GUEST, 13);
	struct vr_sim_set set = hot_pages(HOT_FIRST, HOT_END, 1000);
	const uint64_t d = 100000;

	add_phase_ok(sim, "hot", d, &set, 1);
	for (uint64_t p = 0; p < 2048; p++) {
		if (p >= HOT_FIRST && p < HOT_END)
			continue;
		cr_assert_not(vr_sim_page_accessed(sim, p * PAGE, 0, 10 * d),
			      "page %" G_GUINT64_FORMAT
			      " is in no set: it should never be accessed",
			      p);
		cr_assert_eq(vr_sim_page_hz(sim, p * PAGE, d / 2), 0.0,
			     "page %" G_GUINT64_FORMAT " is in no set: its rate should be 0", p);
	}
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, HOT_FIRST * PAGE, 0, 10 * d), 0,
		     "no byte below the set should be accessed");
	cr_expect_eq(vr_sim_accessed_bytes(sim, HOT_END * PAGE, HOT_GUEST, 0, 10 * d), 0,
		     "no byte above the set should be accessed");
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, HOT_GUEST, 0, 10 * d),
		     (HOT_END - HOT_FIRST) * PAGE,
		     "over 10 phases every page of the set and none other should be accessed");
	cr_expect_eq(vr_sim_page_hz(sim, HOT_FIRST * PAGE, d / 2), 1000.0,
		     "a page of the set should be accessed 1000 times a second");
}

Test(sim_hot, idle_phase_accesses_nothing)
{
	g_autoptr(vr_sim) sim = sim_new_ok(HOT_GUEST, 14);
	struct vr_sim_set set = hot_pages(0, 2048, 1000);
	const uint64_t d = 100000, pass = 2 * d;

	add_phase_ok(sim, "hot", d, &set, 1);
	add_phase_ok(sim, "idle", d, NULL, 0);
	for (uint64_t k = 0; k < 3; k++) {
		uint64_t t0 = k * pass + d, t1 = t0 + d;

		cr_expect_eq(vr_sim_accessed_bytes(sim, 0, HOT_GUEST, t0, t1), 0,
			     "pass %" G_GUINT64_FORMAT ": the idle phase (%" G_GUINT64_FORMAT
			     ", %" G_GUINT64_FORMAT "] should access nothing",
			     k, t0, t1);
		for (uint64_t p = 0; p < 2048; p += 7)
			cr_assert_not(vr_sim_page_accessed(sim, p * PAGE, t0, t1),
				      "page %" G_GUINT64_FORMAT " accessed in the idle phase", p);
		cr_expect_eq(vr_sim_hot_bytes(sim, t0 + 1), 0, "an idle phase has no hot bytes");
		cr_expect_eq(vr_sim_hottest_page(sim, t0 + 1), G_MAXUINT64,
			     "an idle phase has no hottest page");
		cr_expect_eq(vr_sim_accessed_bytes(sim, 0, HOT_GUEST, k * pass, k * pass + d),
			     HOT_GUEST,
			     "pass %" G_GUINT64_FORMAT ": the hot phase should access every page",
			     k);
	}
}

Test(sim_hot, empty_or_reversed_interval_accesses_nothing)
{
	g_autoptr(vr_sim) sim = sim_new_ok(HOT_GUEST, 15);
	struct vr_sim_set set = hot_pages(0, 2048, 1e6); /* an access every us */

	add_phase_ok(sim, "hot", 1000000, &set, 1);
	for (uint64_t p = 0; p < 2048; p += 13) {
		cr_assert_not(vr_sim_page_accessed(sim, p * PAGE, 5000, 5000),
			      "(t, t] is empty: page %" G_GUINT64_FORMAT
			      " cannot be accessed in it",
			      p);
		cr_assert_not(vr_sim_page_accessed(sim, p * PAGE, 6000, 5000),
			      "(t0, t1] with t1 < t0 is empty: page %" G_GUINT64_FORMAT, p);
	}
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, HOT_GUEST, 5000, 5000), 0,
		     "accessed bytes in an empty interval should be 0");
}

/* ---- accessed bytes against the per-page truth ---- */

TestSuite(sim_bytes, .description = "vr_sim_accessed_bytes() against vr_sim_page_accessed()");

/* Guest of 1024 pages; phases a (30 ms), b (20 ms), c (25 ms), idle (10 ms). */
#define MIX_GUEST (1024 * PAGE)
#define MIX_PASS  85000ULL

static struct vr_sim *mixed_sim_new(uint64_t seed)
{
	struct vr_sim *sim = sim_new_ok(MIX_GUEST, seed);
	struct vr_sim_set a[] = { hot_pages(0, 256, 50), zipf_pages(128, 640, 1.2, 20000) };
	struct vr_sim_set b[] = { scan_pages(512, 1024, 2000, 64, 100 * MIB),
				  hot_pages(700, 720, 300) };
	struct vr_sim_set c[] = { hot_pages(900, 1000, 80), hot_pages(950, 1024, 20) };

	add_phase_ok(sim, "a", 30000, a, G_N_ELEMENTS(a));
	add_phase_ok(sim, "b", 20000, b, G_N_ELEMENTS(b));
	add_phase_ok(sim, "c", 25000, c, G_N_ELEMENTS(c));
	add_phase_ok(sim, "idle", 10000, NULL, 0);
	return sim;
}

Test(sim_bytes, equals_sum_of_page_answers)
{
	g_autoptr(vr_sim) sim = mixed_sim_new(21);
	/* intervals across a phase boundary and the wrap-around of the script */
	static const uint64_t fixed[][2] = {
		{ 25000, 35000 },
		{ 29999, 30001 },
		{ 45000, 55000 },
		{ 0, MIX_PASS },
		{ 70000, 80000 },
		{ 80000, MIX_PASS + 5000 },
		{ MIX_PASS - 1, MIX_PASS + 1 },
		{ MIX_PASS - 20000, MIX_PASS + 40000 },
		{ 3 * MIX_PASS + 10000, 3 * MIX_PASS + 60000 },
		{ 1000000 * MIX_PASS + 29000, 1000000 * MIX_PASS + 31000 },
	};
	uint64_t total = 0, max = 0;
	struct vr_rng rng;

	vr_rng_seed(&rng, 3);
	for (guint i = 0; i < G_N_ELEMENTS(fixed) + 300; i++) {
		uint64_t t0, t1, start, end, got, want;

		if (i < G_N_ELEMENTS(fixed)) {
			t0 = fixed[i][0];
			t1 = fixed[i][1];
			start = 0;
			end = MIX_GUEST;
		} else {
			uint64_t a = vr_rng_below(&rng, 1024), b = vr_rng_below(&rng, 1024);

			t0 = vr_rng_below(&rng, 4 * MIX_PASS);
			t1 = t0 + vr_rng_below(&rng, 40000);
			start = MIN(a, b) * PAGE;
			end = (MAX(a, b) + 1) * PAGE;
		}
		got = vr_sim_accessed_bytes(sim, start, end, t0, t1);
		want = accessed_bytes_by_page(sim, start, end, t0, t1);
		cr_assert_eq(got, want,
			     "[0x%" G_GINT64_MODIFIER "x, 0x%" G_GINT64_MODIFIER
			     "x) in (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			     "]: expected %" G_GUINT64_FORMAT
			     " bytes (the sum of the pages), got %" G_GUINT64_FORMAT,
			     start, end, t0, t1, want, got);
		total += got;
		max += end - start;
	}
	/* not vacuous: some pages accessed, some not */
	cr_expect(total > 0 && total < max,
		  "expected some but not all bytes accessed over all cases, got %" G_GUINT64_FORMAT
		  " of %" G_GUINT64_FORMAT,
		  total, max);
}

Test(sim_bytes, any_address_in_a_page_answers_for_the_page)
{
	g_autoptr(vr_sim) sim = mixed_sim_new(22);
	struct vr_rng rng;

	vr_rng_seed(&rng, 4);
	for (int i = 0; i < 2000; i++) {
		uint64_t page = vr_rng_below(&rng, 1024) * PAGE;
		uint64_t off = vr_rng_below(&rng, PAGE);
		uint64_t t0 = vr_rng_below(&rng, 3 * MIX_PASS), t1 = t0 + vr_rng_below(&rng, 5000);

		cr_assert_eq(vr_sim_page_accessed(sim, page + off, t0, t1),
			     vr_sim_page_accessed(sim, page, t0, t1),
			     "address 0x%" G_GINT64_MODIFIER
			     "x should answer as its page 0x%" G_GINT64_MODIFIER "x",
			     page + off, page);
		cr_assert_eq(vr_sim_page_hz(sim, page + off, t0), vr_sim_page_hz(sim, page, t0),
			     "address 0x%" G_GINT64_MODIFIER "x should have the rate of its page",
			     page + off);
	}
}

/* A range ending inside a page counts the accessed page's bytes below the end. */
Test(sim_bytes, range_ending_inside_a_page)
{
	g_autoptr(vr_sim) sim = mixed_sim_new(24);
	struct vr_rng rng;

	vr_rng_seed(&rng, 9);
	for (int i = 0; i < 300; i++) {
		uint64_t first = vr_rng_below(&rng, 1000), last = first + vr_rng_below(&rng, 24);
		uint64_t tail = 1 + vr_rng_below(&rng, PAGE - 1);
		uint64_t t0 = vr_rng_below(&rng, 3 * MIX_PASS), t1 = t0 + vr_rng_below(&rng, 20000);
		uint64_t end = last * PAGE + tail;
		uint64_t want = accessed_bytes_by_page(sim, first * PAGE, last * PAGE, t0, t1) +
				(vr_sim_page_accessed(sim, last * PAGE, t0, t1) ? tail : 0);
		uint64_t got = vr_sim_accessed_bytes(sim, first * PAGE, end, t0, t1);

		cr_assert_eq(got, want,
			     "[0x%" G_GINT64_MODIFIER "x, 0x%" G_GINT64_MODIFIER
			     "x) in (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			     "]: expected %" G_GUINT64_FORMAT
			     " bytes (whole pages, plus %" G_GUINT64_FORMAT
			     " of the last if accessed), got %" G_GUINT64_FORMAT,
			     first * PAGE, end, t0, t1, want, tail, got);
	}
}

/* Accessed in the union of two adjacent intervals iff in one of them. */
Test(sim_bytes, adjacent_intervals_add_up)
{
	g_autoptr(vr_sim) sim = mixed_sim_new(23);
	struct vr_rng rng;

	vr_rng_seed(&rng, 5);
	for (int i = 0; i < 5000; i++) {
		uint64_t page = vr_rng_below(&rng, 1024) * PAGE;
		uint64_t t0 = vr_rng_below(&rng, 3 * MIX_PASS);
		uint64_t t1 = t0 + vr_rng_below(&rng, 20000), t2 = t1 + vr_rng_below(&rng, 20000);
		bool both = vr_sim_page_accessed(sim, page, t0, t2);
		bool either = vr_sim_page_accessed(sim, page, t0, t1) ||
			      vr_sim_page_accessed(sim, page, t1, t2);

		cr_assert_eq(both, either,
			     "page 0x%" G_GINT64_MODIFIER "x: accessed in (%" G_GUINT64_FORMAT
			     ", %" G_GUINT64_FORMAT
			     "] is %d but in (t0, t1] or (t1, t2] (t1 = %" G_GUINT64_FORMAT
			     ") is %d",
			     page, t0, t2, both, t1, either);
	}
}

/*
 * An interval over more than 64 phases: page 0 is hot (10 kHz) only in the
 * last phase, after 64 idle phases of 1 us.
 *
 * (A regression test: the sim once cut (t0, t1] into at most 64 phase pieces
 * and dropped the rest.)
 */
Test(sim_bytes, interval_over_more_than_64_phases)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 25);
	struct vr_sim_set set = hot_pages(0, 256, 10000);

	for (int i = 0; i < 64; i++)
		add_phase_ok(sim, "idle", 1, NULL, 0);
	add_phase_ok(sim, "hot", 1000, &set, 1);
	cr_expect(vr_sim_page_accessed(sim, 0, 63, 1064),
		  "page 0 is accessed every 100 us in (64, 1064]: accessed in (63, 1064]");
	cr_expect(vr_sim_page_accessed(sim, 0, 0, 1064),
		  "page 0 is accessed every 100 us in (64, 1064]: accessed in (0, 1064] too");
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, MIB, 0, 1064), MIB,
		     "every page is accessed in the hot phase, got %" G_GUINT64_FORMAT " bytes",
		     vr_sim_accessed_bytes(sim, 0, MIB, 0, 1064));
}

/*
 * A scan whose window passes each page 1000 times a second, with accesses
 * rarer than the passes (7.3 Hz in a stay of 15.6 us): over 2 s a page is
 * accessed iff it is accessed in one of the 50 ms pieces of those 2 s.
 *
 * (A regression test: the sim once looked at a page's first 64 stays in the
 * window only, and missed accesses in later passes.)
 */
Test(sim_scan, interval_over_more_than_64_passes)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 26);
	struct vr_sim_set set = scan_pages(0, 64, 7.3, 1, 64 * PAGE * 1000);
	const uint64_t d = 2 * US_PER_S, piece = 50000;

	add_phase_ok(sim, "scan", 100 * US_PER_S, &set, 1);
	for (uint64_t p = 0; p < 64; p++) {
		bool any = false;

		for (uint64_t t = 0; t < d; t += piece)
			any |= vr_sim_page_accessed(sim, p * PAGE, t, t + piece);
		cr_expect_eq(vr_sim_page_accessed(sim, p * PAGE, 0, d), any,
			     "page %" G_GUINT64_FORMAT ": accessed in (0, 2 s] should be %d, as in "
			     "the union of its 50 ms pieces",
			     p, any);
	}
}

/* ---- determinism ---- */

TestSuite(sim_seed, .description = "answers are a pure function of the seed");

Test(sim_seed, same_seed_same_answers_other_seed_other_offsets)
{
	g_autoptr(vr_sim) a = mixed_sim_new(99);
	g_autoptr(vr_sim) b = mixed_sim_new(99);
	g_autoptr(vr_sim) c = mixed_sim_new(100);
	guint differ = 0, n = 0;
	struct vr_rng rng;

	vr_rng_seed(&rng, 6);
	for (uint64_t p = 0; p < 1024; p++) {
		for (int k = 0; k < 4; k++, n++) {
			/* short intervals: whether they hold an access depends on the offset */
			uint64_t t0 = vr_rng_below(&rng, 3 * MIX_PASS), t1 = t0 + 500;
			bool in_a = vr_sim_page_accessed(a, p * PAGE, t0, t1);

			cr_assert_eq(in_a, vr_sim_page_accessed(b, p * PAGE, t0, t1),
				     "same seed: page %" G_GUINT64_FORMAT " in (%" G_GUINT64_FORMAT
				     ", %" G_GUINT64_FORMAT "] should get the same answer",
				     p, t0, t1);
			differ += in_a != vr_sim_page_accessed(c, p * PAGE, t0, t1);
		}
	}
	cr_expect_eq(vr_sim_accessed_bytes(a, 0, MIX_GUEST, 1234, 5678),
		     vr_sim_accessed_bytes(b, 0, MIX_GUEST, 1234, 5678),
		     "same seed: accessed bytes should be equal");
	cr_expect(differ > n / 100,
		  "another seed should move the pages' offsets: expected some of %u answers to "
		  "differ, %u did",
		  n, differ);
}

/* ---- zipf ---- */

TestSuite(sim_zipf, .description = "zipf sets: rate of rank i = total_hz * i^-s / H(N, s)");

/* H(n, s), summed here independently of the simulator, smallest terms first. */
static double harmonic_exact(uint64_t n, double s)
{
	double h = 0;

	for (uint64_t i = n; i >= 1; i--)
		h += pow((double)i, -s);
	return h;
}

struct zipf_case {
	uint64_t guest_bytes;
	uint64_t first_page;
	uint64_t nr_pages;
	double s;
	double total_hz;
	double tol; /* relative, for rank 1 and for the sum of the rates */
};

ParameterizedTestParameters(sim_zipf, rates)
{
	static struct zipf_case cases[] = {
		/* N <= 10^6: the simulator sums H exactly */
		{ 1000 * PAGE, 0, 1000, 1.0, 5000, 1e-6 },
		{ 1024 * PAGE, 24, 1000, 1.5, 123456, 1e-6 },
		{ 1024 * PAGE, 10, 1000, 0.5, 777, 1e-6 },
		{ 1024 * PAGE, 1, 1000, 2.0, 1e6, 1e-6 },
		/*
		 * 8 GiB of pages (2^21 > 10^6): the tail of H is an integral.
		 * The midpoint rule over ranks > 10^6 is good to ~1e-12;
		 * 1e-6 still catches a tail off by 1% (~5e-4 here).
		 */
		{ 8 * GIB, 0, 8 * GIB / PAGE, 0.5, 2.4e6, 1e-6 },
		{ 8 * GIB, 0, 8 * GIB / PAGE, 1.0, 2.4e6, 1e-6 },
		{ 8 * GIB, 0, 8 * GIB / PAGE, 1.5, 2.4e6, 1e-6 },
	};

	return cr_make_param_array(struct zipf_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct zipf_case *c, sim_zipf, rates)
{
	g_autoptr(vr_sim) sim = sim_new_ok(c->guest_bytes, 31);
	struct vr_sim_set set =
		zipf_pages(c->first_page, c->first_page + c->nr_pages, c->s, c->total_hz);
	const uint64_t t = 500;
	double h = harmonic_exact(c->nr_pages, c->s);
	double rank1 = c->total_hz / h;
	double got1, prev = INFINITY, sum = 0;

	add_phase_ok(sim, "zipf", 1000, &set, 1);
	got1 = vr_sim_page_hz(sim, c->first_page * PAGE, t);
	cr_expect(close_rel(got1, rank1, c->tol),
		  "s %g, N %" G_GUINT64_FORMAT
		  ": rank 1 should have total_hz / H(N, s) = %.9g Hz, got %.9g",
		  c->s, c->nr_pages, rank1, got1);
	if (c->first_page)
		cr_expect_eq(vr_sim_page_hz(sim, (c->first_page - 1) * PAGE, t), 0.0,
			     "the page before the set should have rate 0");
	for (uint64_t i = 1; i <= c->nr_pages; i++) {
		double hz = vr_sim_page_hz(sim, (c->first_page + i - 1) * PAGE, t);

		if (!(hz < prev)) /* checked this way to fail only once */
			cr_assert_fail(
				"s %g: the rate should fall with the rank, rank %" G_GUINT64_FORMAT
				" has %.9g Hz after %.9g",
				c->s, i, hz, prev);
		if (i <= 1000 && !close_rel(hz, got1 * pow((double)i, -c->s), 1e-9))
			cr_assert_fail("s %g: rank %" G_GUINT64_FORMAT
				       " should have rank 1's rate * i^-s = %.9g Hz, got %.9g",
				       c->s, i, got1 * pow((double)i, -c->s), hz);
		prev = hz;
		sum += hz;
	}
	cr_expect(close_rel(sum, c->total_hz, c->tol),
		  "s %g, N %" G_GUINT64_FORMAT ": the rates should sum to total_hz %.9g, got %.9g",
		  c->s, c->nr_pages, c->total_hz, sum);
	cr_expect_eq(vr_sim_hottest_page(sim, t), c->first_page * PAGE,
		     "the hottest page should be rank 1, at 0x%" G_GINT64_MODIFIER
		     "x, got 0x%" G_GINT64_MODIFIER "x",
		     c->first_page * PAGE, vr_sim_hottest_page(sim, t));
}

/* Rank 1 of a zipf set, accessed thousands of times a second, is seen in every ms. */
Test(sim_zipf, head_accessed_often_tail_rarely)
{
	g_autoptr(vr_sim) sim = sim_new_ok(1024 * PAGE, 32);
	struct vr_sim_set set = zipf_pages(0, 1024, 1.0, 1e5);
	const uint64_t d = 10 * US_PER_S;
	guint tail_hits = 0;

	add_phase_ok(sim, "zipf", d, &set, 1);
	/* rank 1: 1e5 / H(1024, 1) ~ 13300 Hz, a period of ~75 us */
	for (uint64_t t = 0; t < 100000; t += 1000)
		cr_assert(vr_sim_page_accessed(sim, 0, t, t + 1000),
			  "rank 1 should be accessed in (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			  "]",
			  t, t + 1000);
	/* rank > 900: about 13 Hz, so seen in under 2% of 1 ms intervals */
	for (uint64_t p = 900; p < 1024; p++)
		for (uint64_t t = 0; t < 100000; t += 1000)
			tail_hits += vr_sim_page_accessed(sim, p * PAGE, t, t + 1000);
	cr_expect(tail_hits < 124 * 100 / 50,
		  "the tail should be seen in under 2%% of 1 ms intervals, got %u of %d", tail_hits,
		  124 * 100);
}

/* ---- scan ---- */

TestSuite(sim_scan, .description = "scan sets: a window sliding through the set");

/*
 * Guest of 512 pages; phase 0 idle for 7 ms, phase 1 a scan over pages
 * [64, 320) (1 MiB) with a 16-page window moving 512 bytes a us (so the
 * window's lead is a whole number of bytes at every us and the expected
 * windows are exact), each page in the window accessed every 10 us.
 */
#define SCAN_GUEST    (512 * PAGE)
#define SCAN_FIRST    64ULL
#define SCAN_END      320ULL
#define SCAN_LEN      ((SCAN_END - SCAN_FIRST) * PAGE)
#define SCAN_WIN      (16 * PAGE)
#define SCAN_V	      512ULL /* bytes per us */
#define SCAN_HZ	      100000.0
#define SCAN_IDLE_US  7000ULL
#define SCAN_PHASE_US 20000ULL

static struct vr_sim *scan_sim_new(void)
{
	struct vr_sim *sim = sim_new_ok(SCAN_GUEST, 41);
	struct vr_sim_set set =
		scan_pages(SCAN_FIRST, SCAN_END, SCAN_HZ, SCAN_WIN / PAGE, SCAN_V * US_PER_S);

	add_phase_ok(sim, "idle", SCAN_IDLE_US, NULL, 0);
	add_phase_ok(sim, "scan", SCAN_PHASE_US, &set, 1);
	return sim;
}

/* Where page @p sits behind the window's lead at phase-relative @t: in [0, len). */
static uint64_t scan_behind_lead(uint64_t p, uint64_t t)
{
	uint64_t lead = SCAN_V * t % SCAN_LEN;

	return ((p - SCAN_FIRST) * PAGE + SCAN_LEN - lead) % SCAN_LEN;
}

Test(sim_scan, rate_is_hz_inside_the_window_and_0_outside)
{
	g_autoptr(vr_sim) sim = scan_sim_new();
	/* phase-relative times; 1950 and 2040 put the window across the set's end */
	static const uint64_t times[] = { 0,	1,    7,    8,	  100,	1000,  1919, 1950,
					  2040, 2047, 2048, 2049, 5000, 12345, 19999 };
	const uint64_t pass = SCAN_IDLE_US + SCAN_PHASE_US;

	for (size_t i = 0; i < G_N_ELEMENTS(times); i++) {
		for (uint64_t rep = 0; rep < 2; rep++) {
			uint64_t t = rep * pass + SCAN_IDLE_US + times[i];
			guint inside = 0;

			for (uint64_t p = 0; p < 512; p++) {
				bool in_set = p >= SCAN_FIRST && p < SCAN_END;
				bool in_win = in_set && scan_behind_lead(p, times[i]) < SCAN_WIN;
				double hz = vr_sim_page_hz(sim, p * PAGE, t);

				cr_assert_eq(hz, in_win ? SCAN_HZ : 0.0,
					     "phase time %" G_GUINT64_FORMAT
					     " us (window lead 0x%" G_GINT64_MODIFIER
					     "x into the set): page %" G_GUINT64_FORMAT
					     " is %s the window, expected %g Hz, got %g",
					     times[i], SCAN_V * times[i] % SCAN_LEN, p,
					     in_win ? "inside" : "outside", in_win ? SCAN_HZ : 0.0,
					     hz);
				inside += in_win;
			}
			cr_assert_eq(
				inside, SCAN_WIN / PAGE,
				"the window should hold %llu whole pages at lead 0x%" G_GINT64_MODIFIER
				"x, %u did",
				SCAN_WIN / PAGE, SCAN_V * times[i] % SCAN_LEN, inside);
		}
	}
	/* the window starts at the set's start when the phase starts */
	cr_expect_eq(vr_sim_page_hz(sim, SCAN_FIRST * PAGE, SCAN_IDLE_US), SCAN_HZ,
		     "at the phase's start the window should cover the set's first page");
	cr_expect_eq(vr_sim_page_hz(sim, SCAN_FIRST * PAGE, SCAN_IDLE_US / 2), 0.0,
		     "in the idle phase nothing is accessed");
	cr_expect_eq(vr_sim_hot_bytes(sim, SCAN_IDLE_US + 10), SCAN_LEN,
		     "a scan set's hot bytes are the whole set");
}

/*
 * Over (a, b], the window sweeps [v a, v b + w) behind the set's start
 * (mod len). A page whose whole stay in the window (w / v = 128 us, 12.8
 * periods) falls in (a, b] is accessed; a page more than a page away from the
 * swept range is not.
 */
Test(sim_scan, accessed_where_the_window_passed_only)
{
	g_autoptr(vr_sim) sim = scan_sim_new();
	static const uint64_t lens[] = { 300, 1000, 1700 };
	guint nr_passed = 0, nr_far = 0;
	struct vr_rng rng;

	vr_rng_seed(&rng, 7);
	for (int i = 0; i < 60; i++) {
		uint64_t len = lens[i % G_N_ELEMENTS(lens)];
		uint64_t a = vr_rng_below(&rng, SCAN_PHASE_US - len), b = a + len;
		uint64_t swept = SCAN_V * (b - a) + SCAN_WIN; /* < SCAN_LEN */
		uint64_t base = (i % 3) * (SCAN_IDLE_US + SCAN_PHASE_US) + SCAN_IDLE_US;

		for (uint64_t p = 0; p < 512; p++) {
			bool got = vr_sim_page_accessed(sim, p * PAGE, base + a, base + b);
			uint64_t d;

			if (p < SCAN_FIRST || p >= SCAN_END) {
				cr_assert_not(got,
					      "page %" G_GUINT64_FORMAT " is outside the scan set",
					      p);
				continue;
			}
			d = scan_behind_lead(p, a);
			if (d >= SCAN_WIN && d <= SCAN_V * (b - a)) {
				nr_passed++;
				cr_assert(got,
					  "phase time (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
					  "]: the window passed over page %" G_GUINT64_FORMAT
					  " (0x%" G_GINT64_MODIFIER
					  "x ahead of its lead), it should be accessed",
					  a, b, p, d);
			} else if (d >= swept + PAGE && d <= SCAN_LEN - PAGE) {
				nr_far++;
				cr_assert_not(
					got,
					"phase time (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
					"]: page %" G_GUINT64_FORMAT " (0x%" G_GINT64_MODIFIER
					"x ahead of the lead) is far from the window, it should not "
					"be accessed",
					a, b, p, d);
			}
		}
	}
	cr_expect(nr_passed > 1000 && nr_far > 1000,
		  "both kinds of pages should be checked many times: %u passed, %u far", nr_passed,
		  nr_far);
}

/* Over a whole pass of the window every page of the set is accessed. */
Test(sim_scan, whole_pass_accesses_the_whole_set)
{
	g_autoptr(vr_sim) sim = scan_sim_new();
	uint64_t pass_us = SCAN_LEN / SCAN_V; /* 2048 us */

	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, SCAN_GUEST, SCAN_IDLE_US,
					   SCAN_IDLE_US + pass_us + 200),
		     SCAN_LEN,
		     "a whole pass of the window (plus its stay) should access the whole set");
	cr_expect_eq(vr_sim_accessed_bytes(sim, 0, SCAN_GUEST, 0, SCAN_IDLE_US), 0,
		     "nothing is accessed in the idle phase");
}

/* ---- phases ---- */

TestSuite(sim_script, .description = "phases and the repetition of the script");

struct phase_at_case {
	uint64_t t_us;
	int index;
	char name[8];
	uint64_t start_us;
};

/* Phases a (100 us), b (200 us), c (300 us): a pass of 600 us. */
ParameterizedTestParameters(sim_script, phase_at)
{
	static struct phase_at_case cases[] = {
		{ 0, 0, "a", 0 },
		{ 99, 0, "a", 0 },
		{ 100, 1, "b", 100 },
		{ 299, 1, "b", 100 },
		{ 300, 2, "c", 300 },
		{ 599, 2, "c", 300 },
		{ 600, 0, "a", 600 },
		{ 700, 1, "b", 700 },
		{ 1234, 0, "a", 1200 },
		{ 1799, 2, "c", 1500 },
		{ 600000000450ULL, 2, "c", 600000000300ULL },
		{ G_MAXUINT64, 0, "a", G_MAXUINT64 - G_MAXUINT64 % 600 }, /* offset 15 */
	};

	return cr_make_param_array(struct phase_at_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct phase_at_case *c, sim_script, phase_at)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 51);
	struct vr_sim_set set = hot_pages(0, 1, 10);
	const char *name = NULL;
	uint64_t start = 1;
	int got;

	add_phase_ok(sim, "a", 100, &set, 1);
	add_phase_ok(sim, "b", 200, NULL, 0);
	add_phase_ok(sim, "c", 300, &set, 1);
	cr_assert_eq(vr_sim_nr_phases(sim), 3, "expected 3 phases");
	cr_assert_eq(vr_sim_script_duration_us(sim), 600, "expected a pass of 600 us");
	got = vr_sim_phase_at(sim, c->t_us, &name, &start);
	cr_expect_eq(got, c->index, "t %" G_GUINT64_FORMAT ": expected phase %d, got %d", c->t_us,
		     c->index, got);
	cr_expect_str_eq(name, c->name, "t %" G_GUINT64_FORMAT ": expected phase '%s', got '%s'",
			 c->t_us, c->name, name);
	cr_expect_eq(start, c->start_us,
		     "t %" G_GUINT64_FORMAT
		     ": expected the phase to have started at %" G_GUINT64_FORMAT
		     ", got %" G_GUINT64_FORMAT,
		     c->t_us, c->start_us, start);
	cr_expect_eq(vr_sim_phase_at(sim, c->t_us, NULL, NULL), c->index,
		     "name and start are optional");
}

Test(sim_script, unnamed_phase_has_an_empty_name)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 52);
	const char *name = NULL;

	add_phase_ok(sim, NULL, 100, NULL, 0);
	cr_assert_eq(vr_sim_phase_at(sim, 50, &name, NULL), 0, "expected phase 0");
	cr_expect_str_eq(name, "", "a phase added without a name should be named \"\"");
}

Test(sim_script, hot_bytes_count_overlaps_once)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 53);
	struct vr_sim_set sets[] = { hot_pages(0, 10, 10), hot_pages(5, 20, 10),
				     zipf_pages(100, 110, 1, 10), hot_pages(110, 111, 10) };

	add_phase_ok(sim, "p", 100, sets, G_N_ELEMENTS(sets));
	cr_expect_eq(
		vr_sim_hot_bytes(sim, 50), 31 * PAGE,
		"sets over pages [0, 10), [5, 20), [100, 110), [110, 111) cover 31 pages, got %" G_GUINT64_FORMAT
		" bytes",
		vr_sim_hot_bytes(sim, 50));
}

/* ---- hottest page ---- */

TestSuite(sim_hottest, .description = "vr_sim_hottest_page()");

Test(sim_hottest, hotter_subset_wins)
{
	static const struct {
		uint64_t first, end; /* the hotter subset, in pages, inside [0, 64) */
	} cases[] = { { 16, 20 }, { 0, 4 }, { 60, 64 }, { 33, 34 } };

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(vr_sim) sim = sim_new_ok(MIB, 61);
		struct vr_sim_set sets[] = { hot_pages(0, 64, 100),
					     hot_pages(cases[i].first, cases[i].end, 500) };

		add_phase_ok(sim, "p", 1000, sets, G_N_ELEMENTS(sets));
		cr_expect_eq(
			vr_sim_hottest_page(sim, 10), cases[i].first * PAGE,
			"hotter pages [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			") inside a hot set: expected their first page, got 0x%" G_GINT64_MODIFIER
			"x",
			cases[i].first, cases[i].end, vr_sim_hottest_page(sim, 10));
		cr_expect_eq(vr_sim_page_hz(sim, cases[i].first * PAGE, 10), 600.0,
			     "the rates of overlapping sets add up");
	}
}

Test(sim_hottest, ties_go_to_the_lowest_address)
{
	g_autoptr(vr_sim) sim = sim_new_ok(MIB, 62);
	struct vr_sim_set sets[] = { hot_pages(100, 110, 300), hot_pages(10, 20, 300) };

	add_phase_ok(sim, "p", 1000, sets, G_N_ELEMENTS(sets));
	cr_expect_eq(vr_sim_hottest_page(sim, 10), 10 * PAGE,
		     "two sets at the same rate: expected page 10, got 0x%" G_GINT64_MODIFIER "x",
		     vr_sim_hottest_page(sim, 10));
}

Test(sim_hottest, zipf_rank_1_and_idle)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * MIB, 63);
	struct vr_sim_set zipf = zipf_pages(0, 64 * MIB / PAGE, 1.5, 1e5);
	struct vr_sim_set zipf_hi = zipf_pages(1000, 2000, 1.0, 10);

	add_phase_ok(sim, "zipf", 1000, &zipf, 1);
	add_phase_ok(sim, "idle", 1000, NULL, 0);
	add_phase_ok(sim, "zipf-high", 1000, &zipf_hi, 1);
	cr_expect_eq(vr_sim_hottest_page(sim, 500), 0,
		     "zipf from address 0: expected rank 1 at 0, got 0x%" G_GINT64_MODIFIER "x",
		     vr_sim_hottest_page(sim, 500));
	cr_expect_eq(vr_sim_hottest_page(sim, 1500), G_MAXUINT64,
		     "idle phase: expected G_MAXUINT64, got 0x%" G_GINT64_MODIFIER "x",
		     vr_sim_hottest_page(sim, 1500));
	cr_expect_eq(vr_sim_hottest_page(sim, 2500), 1000 * PAGE,
		     "zipf from page 1000: expected rank 1 at page 1000, got 0x%" G_GINT64_MODIFIER
		     "x",
		     vr_sim_hottest_page(sim, 2500));
	cr_expect_eq(vr_sim_hottest_page(sim, 3500), 0,
		     "second pass: expected rank 1 at 0 again, got 0x%" G_GINT64_MODIFIER "x",
		     vr_sim_hottest_page(sim, 3500));
}

Test(sim_hottest, scan_window_first_page)
{
	g_autoptr(vr_sim) sim = scan_sim_new();
	static const uint64_t times[] = { 0, 9, 100, 1000, 1919, 1950, 2040, 2047, 5000 };

	for (size_t i = 0; i < G_N_ELEMENTS(times); i++) {
		uint64_t t = SCAN_IDLE_US + times[i];
		uint64_t want = G_MAXUINT64;

		/* the lowest page inside the window (the set's start when it wraps) */
		for (uint64_t p = SCAN_FIRST; p < SCAN_END && want == G_MAXUINT64; p++)
			if (scan_behind_lead(p, times[i]) < SCAN_WIN)
				want = p * PAGE;
		cr_expect_eq(vr_sim_hottest_page(sim, t), want,
			     "phase time %" G_GUINT64_FORMAT
			     ": expected the lowest page of the window "
			     "0x%" G_GINT64_MODIFIER "x, got 0x%" G_GINT64_MODIFIER "x",
			     times[i], want, vr_sim_hottest_page(sim, t));
	}
}

/* ---- built-in scripts ---- */

TestSuite(sim_builtin, .description = "built-in scripts, scaled to the guest size");

/* Resident set size in bytes, or 0 when unknown. */
static uint64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size = 0, resident = 0;
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	return n == 2 ? resident * 4096ULL : 0;
}

struct builtin_expect {
	const char *name;
	guint nr_phases;
	uint64_t hot_permille[4]; /* per phase */
	guint nr_sets[4];	  /* per phase, for the rounding tolerance */
};

static const struct builtin_expect builtin_expects[] = {
	{ "clustered", 4, { 100, 100, 100, 100 }, { 1, 1, 1, 1 } },
	{ "scattered", 4, { 100, 100, 100, 100 }, { 10, 10, 10, 10 } },
	{ "zipf", 4, { 1000, 1000, 1000, 1000 }, { 1, 1, 1, 1 } },
	{ "shifting", 4, { 100, 100, 100, 100 }, { 1, 1, 1, 1 } },
	{ "scan", 4, { 250, 250, 250, 250 }, { 2, 2, 2, 2 } },
	{ "scan-fast", 4, { 250, 250, 250, 250 }, { 2, 2, 2, 2 } },
	{ "demo", 4, { 125, 150, 275, 25 }, { 1, 2, 2, 1 } },
	{ "matrix", 4, { 75, 75, 75, 75 }, { 1, 1, 1, 1 } },
};

Test(sim_builtin, names_are_listed)
{
	const char *const *names = vr_sim_builtin_names();
	guint n = 0;

	for (; names[n]; n++) {
		bool known = false;

		for (size_t i = 0; i < G_N_ELEMENTS(builtin_expects); i++)
			known |= strcmp(names[n], builtin_expects[i].name) == 0;
		cr_expect(known, "built-in '%s' has no expectations in this test", names[n]);
	}
	cr_expect_eq(n, G_N_ELEMENTS(builtin_expects),
		     "expected %zu built-in scripts (those of sim.h), got %u",
		     G_N_ELEMENTS(builtin_expects), n);
}

ParameterizedTestParameters(sim_builtin, load_at_any_size)
{
	static uint64_t sizes[] = { GIB, 64 * GIB, TIB };

	return cr_make_param_array(uint64_t, sizes, G_N_ELEMENTS(sizes));
}

/*
 * Every built-in loads at every size with nothing allocated per page (a
 * per-page bit for 1 TiB would be 32 MiB), its phases cover the documented
 * share of the guest, and queries stay cheap (a 64 MiB walk, point queries).
 */
ParameterizedTest(uint64_t *size, sim_builtin, load_at_any_size)
{
	const uint64_t phase_us = 2 * US_PER_S;
	const uint64_t slack = 16 * MIB;
	uint64_t rss0 = rss_bytes();
	g_autoptr(GPtrArray) sims = g_ptr_array_new_with_free_func((GDestroyNotify)vr_sim_free);

	for (size_t b = 0; b < G_N_ELEMENTS(builtin_expects); b++) {
		const struct builtin_expect *e = &builtin_expects[b];
		struct vr_sim *sim = sim_new_ok(*size, 71);
		g_autoptr(GError) err = NULL;
		uint64_t prev_hottest = G_MAXUINT64;

		g_ptr_array_add(sims, sim);
		cr_assert(vr_sim_load_builtin(sim, e->name, phase_us, &err),
			  "'%s' at %" G_GUINT64_FORMAT " bytes should load, got: %s", e->name,
			  *size, err ? err->message : "FALSE without an error");
		cr_assert_eq(vr_sim_nr_phases(sim), e->nr_phases,
			     "'%s': expected %u phases, got %u", e->name, e->nr_phases,
			     vr_sim_nr_phases(sim));
		cr_expect_eq(vr_sim_script_duration_us(sim), e->nr_phases * phase_us,
			     "'%s': expected a pass of %u phases of %" G_GUINT64_FORMAT " us",
			     e->name, e->nr_phases, phase_us);
		for (guint p = 0; p < e->nr_phases; p++) {
			uint64_t t = p * phase_us + phase_us / 2;
			uint64_t want =
				(uint64_t)((unsigned __int128)*size * e->hot_permille[p] / 1000);
			uint64_t got = vr_sim_hot_bytes(sim, t);
			uint64_t tol = 2 * e->nr_sets[p] * PAGE;
			uint64_t hottest = vr_sim_hottest_page(sim, t);

			cr_expect(got + tol >= want && got <= want + tol,
				  "'%s' at %" G_GUINT64_FORMAT
				  " bytes, phase %u: expected %" G_GUINT64_FORMAT
				  "/1000 of the guest hot (%" G_GUINT64_FORMAT
				  " bytes, +- %" G_GUINT64_FORMAT "), got %" G_GUINT64_FORMAT,
				  e->name, *size, p, e->hot_permille[p], want, tol, got);
			cr_assert_lt(hottest, *size,
				     "'%s' phase %u: the hottest page should be in the guest",
				     e->name, p);
			cr_expect_gt(vr_sim_page_hz(sim, hottest, t), 0.0,
				     "'%s' phase %u: the hottest page should be accessed", e->name,
				     p);
			cr_expect(vr_sim_page_accessed(sim, hottest, t - 100000, t),
				  "'%s' phase %u: the hottest page should be accessed in 100 ms",
				  e->name, p);
			/* a cheap walk: 64 MiB from the hottest page */
			cr_expect_gt(
				vr_sim_accessed_bytes(sim, hottest, MIN(hottest + 64 * MIB, *size),
						      t - 100000, t),
				0,
				"'%s' phase %u: bytes around the hottest page should be accessed",
				e->name, p);
			if (strcmp(e->name, "shifting") == 0) {
				cr_expect_neq(hottest, prev_hottest,
					      "'shifting' phase %u: the hot range should move", p);
				prev_hottest = hottest;
			}
		}
	}
	if (rss0 == 0)
		cr_skip_test("/proc/self/statm unavailable: cannot check memory use");
	cr_expect_lt(rss_bytes(), rss0 + slack,
		     "loading %zu built-ins at %" G_GUINT64_FORMAT
		     " bytes should allocate nothing per page: "
		     "resident memory grew from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
		     " bytes",
		     G_N_ELEMENTS(builtin_expects), *size, rss0, rss_bytes());
}

/* The documented layouts at 1 GiB (0.1% of the guest is 1 MiB, so permille is exact). */
Test(sim_builtin, layouts)
{
	g_autoptr(vr_sim) clustered = sim_new_ok(1000 * MIB, 72);
	g_autoptr(vr_sim) shifting = sim_new_ok(1000 * MIB, 72);
	const uint64_t ph = US_PER_S;

	cr_assert(vr_sim_load_builtin(clustered, "clustered", ph, NULL), "'clustered' should load");
	cr_assert(vr_sim_load_builtin(shifting, "shifting", ph, NULL), "'shifting' should load");
	for (guint p = 0; p < 4; p++) {
		uint64_t t = p * ph + ph / 2;
		uint64_t first = (100 + 200 * p) * MIB;

		cr_expect_eq(
			vr_sim_hottest_page(clustered, t), 300 * MIB,
			"'clustered' phase %u: the hot range should start at 30%% of the guest", p);
		cr_expect_eq(vr_sim_hottest_page(shifting, t), first,
			     "'shifting' phase %u: the hot range should start at %u%% of the guest",
			     p, 10 + 20 * p);
		cr_expect_eq(vr_sim_page_hz(shifting, first - PAGE, t), 0.0,
			     "'shifting' phase %u: the page before the hot range should be cold",
			     p);
		cr_expect_gt(vr_sim_page_hz(shifting, first + 100 * MIB - PAGE, t), 0.0,
			     "'shifting' phase %u: the hot range should be 10%% of the guest", p);
		cr_expect_eq(vr_sim_page_hz(shifting, first + 100 * MIB, t), 0.0,
			     "'shifting' phase %u: the hot range should end at %u%% of the guest",
			     p, 20 + 20 * p);
	}
}

/* ---- the "sim" access source ---- */

TestSuite(sim_access, .description = "the sim access source (vr_sim_access_ops)");

Test(sim_access, update_gives_the_whole_guest)
{
	g_autoptr(vr_sim) sim = sim_new_ok(64 * MIB, 81);
	struct vr_sim_access *sa = vr_sim_access_new(sim);
	g_autoptr(GArray) ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	g_autoptr(GError) err = NULL;
	struct vr_target t = { .id = 1 };

	cr_expect_str_eq(vr_sim_access_ops.name, "sim", "the source should be named \"sim\"");
	cr_assert_not_null(vr_sim_access_ops.update, "the sim source should have update()");
	cr_assert(vr_sim_access_ops.update(sa, &t, ranges, &err), "update() should succeed: %s",
		  err ? err->message : "");
	cr_assert_eq(ranges->len, 1, "update() should append one range, got %u", ranges->len);
	cr_expect_eq(g_array_index(ranges, struct vr_range, 0).start, 0,
		     "the range should start at 0");
	cr_expect_eq(g_array_index(ranges, struct vr_range, 0).end, 64 * MIB,
		     "the range should end at the guest size");
	cr_expect_eq(vr_sim_access_nr_checks(sa), 0, "no page checked yet");
	vr_sim_access_ops.cleanup(sa);
}

Test(sim_access, check_answers_for_prepare_to_check)
{
	g_autoptr(vr_sim) sim = mixed_sim_new(82);
	struct vr_sim_access *sa = vr_sim_access_new(sim);
	struct vr_region regions[300];
	struct vr_target t = { .id = 1 };
	uint64_t checks = 0, nr_accessed = 0;
	struct vr_rng rng;

	vr_rng_seed(&rng, 8);
	for (int round = 0; round < 40; round++) {
		uint64_t t0 = vr_rng_below(&rng, 3 * MIX_PASS);
		uint64_t t1 = t0 + vr_rng_below(&rng, 10000);
		size_t nr = 1 + vr_rng_below(&rng, G_N_ELEMENTS(regions));

		for (size_t i = 0; i < nr; i++) {
			uint64_t first = vr_rng_below(&rng, 1000),
				 pages = 1 + vr_rng_below(&rng, 24);

			regions[i] = (struct vr_region){
				.start = first * PAGE,
				.end = (first + pages) * PAGE,
				.sampling_addr = (first + vr_rng_below(&rng, pages)) * PAGE,
			};
		}
		vr_sim_access_ops.prepare(sa, &t, regions, nr, t0);
		/* the answer must be written either way */
		for (size_t i = 0; i < nr; i++)
			regions[i].accessed = i % 2;
		vr_sim_access_ops.check(sa, &t, regions, nr, t1);
		checks += nr;
		for (size_t i = 0; i < nr; i++) {
			bool want = vr_sim_page_accessed(sim, regions[i].sampling_addr, t0, t1);

			cr_assert_eq(regions[i].accessed, want,
				     "round %d, region %zu: page 0x%" G_GINT64_MODIFIER
				     "x in (%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
				     "]: expected accessed = %d",
				     round, i, regions[i].sampling_addr, t0, t1, want);
			nr_accessed += want;
		}
		cr_assert_eq(vr_sim_access_nr_checks(sa), checks,
			     "expected %" G_GUINT64_FORMAT " pages checked, got %" G_GUINT64_FORMAT,
			     checks, vr_sim_access_nr_checks(sa));
	}
	cr_expect(nr_accessed > 0 && nr_accessed < checks,
		  "expected some pages accessed and some not, got %" G_GUINT64_FORMAT
		  " of %" G_GUINT64_FORMAT,
		  nr_accessed, checks);
	vr_sim_access_ops.cleanup(sa);
}
