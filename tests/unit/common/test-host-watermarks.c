/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the host watermarks (common/host-watermarks.c): the free
 * memory rate, DAMON's hysteresis on it (SEMANTICS.md §2.3) with the answer
 * of the previous window as the state, the PSI override, and validation.
 * Pure functions on struct literals; memory in MiB (2^20 bytes), PSI in
 * basis points of time (1000 bp = 10%).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>

#include "host-watermarks.h"
#include "test-messages.h"

#define MIB (1ULL << 20)

/* The published DAMON_RECLAIM watermarks, per-mille: 500 / 400 / 200. */
#define DAMON_WMARKS(some_bp, full_bp)                                                             \
	{                                                                                          \
		VR_WMARK_FREE_MEM_RATE, 500, 400, 200, some_bp, full_bp                            \
	}
#define NO_METRIC(some_bp, full_bp)                                                                \
	{                                                                                          \
		VR_WMARK_NONE, 500, 400, 200, some_bp, full_bp                                     \
	}

TestSuite(host_watermarks, .description = "vr_host_needs_memory() and its helpers");

/*
 * Each row: the watermarks, the host (1000 MiB total, so MiB available =
 * free_mem_rate), the previous answer and the expected one.
 *
 *   free_mem_rate   0 ... 199 | 200 ... 399 | 400 ... 500 | 501 ... 1000
 *   was not needed     no     |    yes      |     no      |     no
 *   was needed         no     |    yes      |    yes      |     no
 */
struct needs_case {
	char name[64];
	struct vr_host_watermarks wm;
	uint64_t available_mib;
	uint32_t some_bp;
	uint32_t full_bp;
	bool was_needed;
	bool expect;
};

static struct needs_case needs_cases[] = {
	{ "metric none: always (a 95% free host)", NO_METRIC(0, 0), 950, 0, 0, false, true },
	{ "metric none: always (no memory free)", NO_METRIC(0, 0), 0, 0, 0, true, true },
	{ "95% free: no", DAMON_WMARKS(0, 0), 950, 0, 0, false, false },
	{ "95% free, was needed: stops above high", DAMON_WMARKS(0, 0), 950, 0, 0, true, false },
	{ "50.1% free, was needed: stops above high", DAMON_WMARKS(0, 0), 501, 0, 0, true, false },
	{ "50% free, was needed: goes on up to high", DAMON_WMARKS(0, 0), 500, 0, 0, true, true },
	{ "45% free, not needed: waits for mid", DAMON_WMARKS(0, 0), 450, 0, 0, false, false },
	{ "45% free, was needed: goes on", DAMON_WMARKS(0, 0), 450, 0, 0, true, true },
	{ "40% free (mid), not needed: still waits", DAMON_WMARKS(0, 0), 400, 0, 0, false, false },
	{ "39.9% free, not needed: starts", DAMON_WMARKS(0, 0), 399, 0, 0, false, true },
	{ "30% free: needed", DAMON_WMARKS(0, 0), 300, 0, 0, false, true },
	{ "20% free (low): still needed", DAMON_WMARKS(0, 0), 200, 0, 0, true, true },
	{ "19.9% free: steps aside for the kernel", DAMON_WMARKS(0, 0), 199, 0, 0, true, false },
	{ "PSI some at its threshold overrides 95% free", DAMON_WMARKS(1000, 0), 950, 1000, 0,
	  false, true },
	{ "PSI some just below its threshold", DAMON_WMARKS(1000, 0), 950, 999, 0, false, false },
	{ "PSI some overrides below low", DAMON_WMARKS(1000, 0), 100, 2500, 0, false, true },
	{ "PSI full at its threshold", DAMON_WMARKS(0, 500), 950, 0, 500, false, true },
	{ "PSI full below its threshold", DAMON_WMARKS(0, 500), 950, 9999, 499, false, false },
	{ "PSI thresholds off: full pressure ignored", DAMON_WMARKS(0, 0), 950, 10000, 10000, true,
	  false },
};

ParameterizedTestParameters(host_watermarks, needs_memory)
{
	return cr_make_param_array(struct needs_case, needs_cases, G_N_ELEMENTS(needs_cases));
}

ParameterizedTest(struct needs_case *c, host_watermarks, needs_memory)
{
	const struct vr_host_snapshot snap = {
		.mem_total_bytes = 1000 * MIB,
		.mem_available_bytes = c->available_mib * MIB,
		.psi_some_avg10_bp = c->some_bp,
		.psi_full_avg10_bp = c->full_bp,
	};

	cr_assert(vr_host_watermarks_validate(&c->wm, NULL), "%s: the row's watermarks are valid",
		  c->name);
	cr_assert_eq(vr_host_needs_memory(&c->wm, &snap, c->was_needed), c->expect,
		     "%s: expected %s", c->name, c->expect ? "needed" : "not needed");
}

Test(host_watermarks, hysteresis_over_a_sequence)
{
	/* Free memory falls, then recovers: starts below mid, stops above high. */
	const struct vr_host_watermarks wm = DAMON_WMARKS(0, 0);
	const uint64_t rate[] = { 600, 450, 400, 399, 300, 450, 500, 510, 450 };
	const bool want[] = { false, false, false, true, true, true, true, false, false };
	bool needed = false;

	for (guint i = 0; i < G_N_ELEMENTS(rate); i++) {
		const struct vr_host_snapshot snap = { .mem_total_bytes = 1000 * MIB,
						       .mem_available_bytes = rate[i] * MIB };

		needed = vr_host_needs_memory(&wm, &snap, needed);
		cr_assert_eq(needed, want[i], "step %u at %" PRIu64 " per-mille: expected %s", i,
			     rate[i], want[i] ? "needed" : "not needed");
	}
}

Test(host_watermarks, free_mem_rate)
{
	const struct vr_host_snapshot third = { .mem_total_bytes = 3 * MIB,
						.mem_available_bytes = MIB };
	const struct vr_host_snapshot over = { .mem_total_bytes = MIB,
					       .mem_available_bytes = 2 * MIB };
	const struct vr_host_snapshot zero = { .mem_total_bytes = 0, .mem_available_bytes = MIB };
	const struct vr_host_snapshot huge = { .mem_total_bytes = UINT64_MAX,
					       .mem_available_bytes = UINT64_MAX / 2 };

	cr_assert_eq(vr_host_free_mem_rate(&third), 333, "1/3 free is 333 per-mille (truncated)");
	cr_assert_eq(vr_host_free_mem_rate(&over), 1000,
		     "MemAvailable above MemTotal counts as all free");
	cr_assert_eq(vr_host_free_mem_rate(&zero), 0, "MemTotal 0: nothing is free");
	cr_assert_eq(vr_host_free_mem_rate(&huge), 499, "64-bit sizes must not overflow, got %u",
		     vr_host_free_mem_rate(&huge));
}

/* Each row: watermarks that do not validate, and the field the message names. */
struct invalid_case {
	char name[48];
	struct vr_host_watermarks wm;
	char field[32];
	long value;
};

static struct invalid_case invalid_cases[] = {
	{ "high above 1000", { VR_WMARK_FREE_MEM_RATE, 1001, 400, 200, 0, 0 }, "high", 1001 },
	{ "mid above high", { VR_WMARK_FREE_MEM_RATE, 500, 600, 200, 0, 0 }, "mid", 600 },
	{ "low above mid", { VR_WMARK_FREE_MEM_RATE, 500, 400, 450, 0, 0 }, "low", 450 },
	{ "psi some above 100%", { VR_WMARK_NONE, 500, 400, 200, 10001, 0 }, "psi_some", 10001 },
	{ "psi full above 100%", { VR_WMARK_NONE, 500, 400, 200, 0, 20000 }, "psi_full", 20000 },
	{ "unknown metric", { (enum vr_wmark_metric)7, 500, 400, 200, 0, 0 }, "metric", 7 },
};

ParameterizedTestParameters(host_watermarks, invalid)
{
	return cr_make_param_array(struct invalid_case, invalid_cases, G_N_ELEMENTS(invalid_cases));
}

ParameterizedTest(struct invalid_case *c, host_watermarks, invalid)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_host_watermarks_validate(&c->wm, &err), "%s: should be refused", c->name);
	cr_assert(g_error_matches(err, VR_HOST_WATERMARKS_ERROR, VR_HOST_WATERMARKS_ERROR_INVALID),
		  "%s: expected VR_HOST_WATERMARKS_ERROR_INVALID", c->name);
	cr_assert(msg_has_any(err->message, c->field) && msg_names_number(err->message, c->value),
		  "%s: the message should name %s = %ld: %s", c->name, c->field, c->value,
		  err->message);
}

Test(host_watermarks, metric_none_ignores_the_thresholds)
{
	const struct vr_host_watermarks wm = { VR_WMARK_NONE, 100, 900, 1000, 0, 0 };

	cr_assert(vr_host_watermarks_validate(&wm, NULL),
		  "with metric none the free-memory thresholds are not used, so not checked");
}

/* host-pageout's room in the host's swap: none without swap or when it is
 * full, and a reserve left for the kernel. */
Test(host_watermarks, pageout_room)
{
	const uint64_t mib = 1ULL << 20;
	struct vr_host_snapshot none = { 0 };
	struct vr_host_snapshot full = { .swap_total_bytes = 4096 * mib, .swap_free_bytes = 0 };
	struct vr_host_snapshot almost = { .swap_total_bytes = 4096 * mib,
					   .swap_free_bytes = 64 * mib };
	struct vr_host_snapshot half = { .swap_total_bytes = 4096 * mib,
					 .swap_free_bytes = 2048 * mib };
	struct vr_host_snapshot small = { .swap_total_bytes = 256 * mib,
					  .swap_free_bytes = 256 * mib };
	struct vr_host_snapshot odd = { .swap_total_bytes = 256 * mib,
					.swap_free_bytes = 1024 * mib };

	cr_assert_eq(vr_host_pageout_room(&none), 0, "no swap: no room");
	cr_assert_eq(vr_host_pageout_room(&full), 0, "a full swap: no room");
	cr_assert_eq(vr_host_pageout_room(&almost), 0, "within the reserve (1/64): no room");
	cr_assert_eq(vr_host_pageout_room(&half), 2048 * mib - 64 * mib);
	cr_assert_eq(vr_host_pageout_room(&small), 256 * mib - 16 * mib,
		     "a reserve of 16 MiB at least");
	cr_assert_eq(vr_host_pageout_room(&odd), 256 * mib - 16 * mib,
		     "free beyond total counts as total");
}

/* What host-pageout says when the swap has no room: the figures, in KiB. */
Test(host_watermarks, swap_full_reason)
{
	struct vr_host_snapshot none = { 0 };
	struct vr_host_snapshot full = { .swap_total_bytes = 24 * MIB,
					 .swap_free_bytes = 15 * MIB };
	g_autofree char *no_swap = vr_host_swap_full_reason(&none);
	g_autofree char *is_full = vr_host_swap_full_reason(&full);

	cr_assert_str_eq(no_swap, "host-pageout waits: the host has no swap");
	cr_assert_str_eq(is_full,
			 "host-pageout waits: the host's swap is full (SwapFree 15360 of SwapTotal "
			 "24576 KiB, 16384 KiB of it kept free for the kernel)");
}

/*
 * Why the host needs memory or not, under DAMON's watermarks 500/400/200
 * (1000 MiB total, so MiB available = free_mem_rate): each row a rate, the
 * previous answer, and the state and the answer vr_host_needs_memory()
 * gives with it.
 */
struct state_case {
	uint32_t rate;
	bool was_needed;
	uint32_t psi_some_bp;
	bool metric_none;
	enum vr_host_memory_state want;
	const char *want_name;
};

static const struct state_case state_cases[] = {
	{ 199, true, 0, false, VR_HOST_MEMORY_BELOW_LOW, "below-low" },
	{ 0, false, 0, false, VR_HOST_MEMORY_BELOW_LOW, "below-low" },
	{ 200, false, 0, false, VR_HOST_MEMORY_BELOW_MID, "below-mid" },
	{ 399, true, 0, false, VR_HOST_MEMORY_BELOW_MID, "below-mid" },
	{ 400, true, 0, false, VR_HOST_MEMORY_UP_TO_HIGH, "up-to-high" },
	{ 500, true, 0, false, VR_HOST_MEMORY_UP_TO_HIGH, "up-to-high" },
	{ 400, false, 0, false, VR_HOST_MEMORY_ABOVE_MID, "above-mid" },
	{ 501, true, 0, false, VR_HOST_MEMORY_ABOVE_HIGH, "above-high" },
	{ 100, false, 1000, false, VR_HOST_MEMORY_PSI, "psi" },
	{ 900, false, 0, true, VR_HOST_MEMORY_ALWAYS, "always" },
};

Test(host_watermarks, memory_state_says_why)
{
	for (guint i = 0; i < G_N_ELEMENTS(state_cases); i++) {
		const struct state_case *c = &state_cases[i];
		struct vr_host_watermarks wm = DAMON_WMARKS(500, 0);
		struct vr_host_snapshot snap = { .mem_total_bytes = 1000 * MIB,
						 .mem_available_bytes = c->rate * MIB,
						 .psi_some_avg10_bp = c->psi_some_bp };
		bool needed;
		enum vr_host_memory_state got;

		if (c->metric_none)
			wm.metric = VR_WMARK_NONE;
		needed = vr_host_needs_memory(&wm, &snap, c->was_needed);
		got = vr_host_memory_state(&wm, &snap, needed);
		cr_assert_eq(got, c->want, "row %u (rate %u, was %s): state %s, expected %s", i,
			     c->rate, c->was_needed ? "needed" : "not needed",
			     vr_host_memory_state_name(got), c->want_name);
		cr_assert_str_eq(vr_host_memory_state_name(got), c->want_name, "row %u", i);
		cr_assert_eq(needed,
			     got == VR_HOST_MEMORY_ALWAYS || got == VR_HOST_MEMORY_PSI ||
				     got == VR_HOST_MEMORY_BELOW_MID ||
				     got == VR_HOST_MEMORY_UP_TO_HIGH,
			     "row %u: the state agrees with the answer", i);
	}
	cr_assert_str_eq(vr_host_memory_state_name(VR_HOST_MEMORY_UNKNOWN), "unknown");
	cr_assert_str_eq(vr_host_memory_state_name((enum vr_host_memory_state)99), "?");
}
