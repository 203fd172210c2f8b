/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the quota arithmetic (common/quota-budget.c), SEMANTICS.md
 * §2.1: the measured throughput, the effective size of a window from sz, ms
 * and the goal tuner, charge windows, and the budget left. Pure functions on
 * struct literals; times in us unless a name says otherwise.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>

#include "quota-budget.h"

#define PG  ((uint64_t)VR_PAGE_SIZE)
#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

TestSuite(quota_throughput, .description = "vr_quota_throughput_bpms()");

Test(quota_throughput, default_before_anything_was_measured)
{
	struct vr_quota q = { .ms = 10, .total_charged_sz = 123 * MIB };

	cr_assert_eq(vr_quota_throughput_bpms(&q), VR_DEFAULT_THROUGHPUT_BPMS,
		     "with no measured time the throughput should be 4 MiB/ms, got %" PRIu64,
		     vr_quota_throughput_bpms(&q));
}

Test(quota_throughput, bytes_over_time)
{
	/* 100 MiB in 100 ms -> 1 MiB/ms */
	struct vr_quota q = { .total_charged_sz = 100 * MIB, .total_charged_ns = 100000000 };

	cr_assert_eq(vr_quota_throughput_bpms(&q), MIB, "expected 1 MiB/ms, got %" PRIu64,
		     vr_quota_throughput_bpms(&q));
}

Test(quota_throughput, saturates)
{
	struct vr_quota q = { .total_charged_sz = UINT64_MAX, .total_charged_ns = 1 };

	cr_assert_eq(vr_quota_throughput_bpms(&q), UINT64_MAX,
		     "a throughput beyond 64 bits should saturate");
}

/*
 * The effective size of a window. Each row: the quota's limits and state,
 * and the esz expected.
 */
struct esz_case {
	char name[48];
	uint64_t ms;
	uint64_t sz;
	uint64_t total_charged_sz;
	uint64_t total_charged_ns;
	guint nr_goals;
	uint64_t esz_bp;
	uint64_t expect;
};

static struct esz_case esz_cases[] = {
	{ "no quota: unlimited", 0, 0, 0, 0, 0, 0, 0 },
	{ "sz only", 0, 10 * MIB, 0, 0, 0, 0, 10 * MIB },
	{ "sz rounded down to pages", 0, 10000, 0, 0, 0, 0, 2 * PG },
	{ "sz below a page: one page", 0, 100, 0, 0, 0, 0, PG },
	{ "ms, default 4 MiB/ms", 10, 0, 0, 0, 0, 0, 40 * MIB },
	{ "ms, measured 1 MiB/ms", 10, 0, 100 * MIB, 100000000, 0, 0, 10 * MIB },
	{ "ms, measured 1 KiB/ms: one page", 1, 0, 1 * MIB, 1024000000, 0, 0, PG },
	{ "ms and a smaller sz", 10, 5 * MIB, 0, 0, 0, 0, 5 * MIB },
	{ "ms and a larger sz", 100, GIB, 0, 0, 0, 0, 400 * MIB },
	{ "ms overflowing: sz caps", UINT64_MAX, 3 * MIB, 0, 0, 0, 0, 3 * MIB },
	{ "goal alone", 0, 0, 0, 0, 1, 20 * MIB * 10000, 20 * MIB },
	{ "goal capped by sz", 0, 8 * MIB, 0, 0, 1, 20 * MIB * 10000, 8 * MIB },
	{ "goal capped by ms", 1, GIB, 0, 0, 1, 20 * MIB * 10000, 4 * MIB },
	{ "goal below ms", 10, GIB, 0, 0, 1, 6 * MIB * 10000, 6 * MIB },
};

ParameterizedTestParameters(quota_esz, table)
{
	return cr_make_param_array(struct esz_case, esz_cases, G_N_ELEMENTS(esz_cases));
}

ParameterizedTest(struct esz_case *c, quota_esz, table)
{
	struct vr_quota q = {
		.ms = c->ms,
		.sz = c->sz,
		.reset_interval_ms = 1000,
		.total_charged_sz = c->total_charged_sz,
		.total_charged_ns = c->total_charged_ns,
		.nr_goals = c->nr_goals,
		.esz_bp = c->esz_bp,
	};

	if (c->nr_goals)
		q.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, 0 };
	cr_assert_eq(vr_quota_effective_sz(&q), c->expect,
		     "%s: expected esz %" PRIu64 ", got %" PRIu64, c->name, c->expect,
		     vr_quota_effective_sz(&q));
}

TestSuite(quota_goals, .description = "vr_quota_goals_score_bp()");

Test(quota_goals, highest_current_over_target)
{
	struct vr_quota q = { .sz = MIB, .reset_interval_ms = 1000, .nr_goals = 3 };

	q.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 1000, 500 }; /* 5000 */
	q.goals[1] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, 150 };	   /* 15000 */
	q.goals[2] = (struct vr_quota_goal){ VR_GOAL_FREE_MEM_RATE, 400, 100 };	   /* 2500 */
	cr_assert_eq(vr_quota_goals_score_bp(&q), 15000, "expected 15000 bp, got %" PRIu64,
		     vr_quota_goals_score_bp(&q));
}

Test(quota_goals, none_and_zero_target)
{
	struct vr_quota none = { 0 };
	struct vr_quota zero = { .nr_goals = 1 };

	zero.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 0, 7 };
	cr_assert_eq(vr_quota_goals_score_bp(&none), 0, "no goals: score 0");
	cr_assert_eq(vr_quota_goals_score_bp(&zero), 0, "a target of 0 is skipped, not divided by");
}

TestSuite(quota_window, .description = "charge windows");

Test(quota_window, due_before_the_first_and_after_the_interval)
{
	struct vr_quota q = { .sz = MIB, .reset_interval_ms = 100 };

	cr_assert(vr_quota_window_due(&q, 0), "the first window is due at once");
	cr_assert_not(vr_quota_window_start(&q, 5000), "the first window closes nothing");
	cr_assert_not(vr_quota_window_due(&q, 5000 + 99999), "not due 1 us before its end");
	cr_assert(vr_quota_window_due(&q, 5000 + 100000), "due when reset_interval_ms passed");
}

Test(quota_window, start_closes_and_counts_an_exceeded_window)
{
	struct vr_quota q = { .sz = 4 * MIB, .reset_interval_ms = 1000 };

	vr_quota_window_start(&q, 0);
	cr_assert_eq(q.esz, 4 * MIB, "esz should be sz, got %" PRIu64, q.esz);
	cr_assert_eq(vr_quota_budget_left(&q), 4 * MIB, "a new window has its whole budget");
	vr_quota_charge(&q, 3 * MIB, 1000000);
	cr_assert_eq(vr_quota_budget_left(&q), MIB, "expected 1 MiB left, got %" PRIu64,
		     vr_quota_budget_left(&q));
	vr_quota_charge(&q, 2 * MIB, 1000000); /* over by 1 MiB */
	cr_assert_eq(vr_quota_budget_left(&q), 0, "an overcharged window has nothing left");
	cr_assert(vr_quota_window_start(&q, 1000000),
		  "the closing window used its quota: it should count as exceeded");
	cr_assert(q.total_charged_sz == 5 * MIB && q.total_charged_ns == 2000000,
		  "totals should be 5 MiB and 2 ms, got %" PRIu64 " and %" PRIu64,
		  q.total_charged_sz, q.total_charged_ns);
	cr_assert(q.charged_sz == 0 && q.charged_from_us == 1000000,
		  "the new window starts empty at 1 s");
	vr_quota_charge(&q, MIB, 0);
	cr_assert_not(vr_quota_window_start(&q, 2000000),
		      "a window that used 1 of 4 MiB is not exceeded");
}

Test(quota_window, time_quota_follows_the_measured_throughput)
{
	/* 10 ms per window; the first window assumes 4 MiB/ms */
	struct vr_quota q = { .ms = 10, .reset_interval_ms = 1000 };

	vr_quota_window_start(&q, 0);
	cr_assert_eq(q.esz, 40 * MIB, "expected 40 MiB, got %" PRIu64, q.esz);
	/* 8 MiB took 4 ms: 2 MiB/ms -> 20 MiB next window */
	vr_quota_charge(&q, 8 * MIB, 4000000);
	vr_quota_window_start(&q, 1000000);
	cr_assert_eq(q.esz, 20 * MIB, "expected 20 MiB at 2 MiB/ms, got %" PRIu64, q.esz);
}

Test(quota_window, goal_tuner_moves_once_per_window)
{
	/* user_input goal 0 of 100: score 0, the tuner doubles its input */
	struct vr_quota q = { .sz = GIB, .reset_interval_ms = 1000, .nr_goals = 1 };

	q.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, 0 };
	vr_quota_window_start(&q, 0);
	cr_assert_eq(q.esz_bp, 2 * VR_GOAL_BP, "expected 20000, got %" PRIu64, q.esz_bp);
	cr_assert_eq(q.esz, PG, "a tiny tuned quota is still a page");
	q.esz_bp = 8 * MIB * VR_GOAL_BP;
	q.goals[0].current = 150; /* 1.5x the target: shrink by half of it */
	vr_quota_window_start(&q, 1000000);
	cr_assert_eq(q.esz, 4 * MIB, "expected 4 MiB after shrinking 8 MiB by 50%%, got %" PRIu64,
		     q.esz);
}

Test(quota_window, unlimited_has_no_budget_limit)
{
	struct vr_quota q = { 0 };

	cr_assert_eq(vr_quota_budget_left(&q), UINT64_MAX, "no quota: unlimited budget");
	vr_quota_window_start(&q, 0);
	cr_assert_eq(q.esz, 0, "no quota: esz 0 (unlimited)");
}

Test(quota_window, measure_teaches_throughput_without_charging)
{
	struct vr_quota q = { .ms = 10, .reset_interval_ms = 1000 };

	vr_quota_window_start(&q, 0);
	vr_quota_measure(&q, 10 * MIB, 10000000); /* 1 MiB/ms */
	cr_assert_eq(q.charged_sz, 0, "a measured action is not charged to the window");
	cr_assert_eq(vr_quota_throughput_bpms(&q), MIB, "expected 1 MiB/ms, got %" PRIu64,
		     vr_quota_throughput_bpms(&q));
	cr_assert_not(vr_quota_window_start(&q, 1000000), "nothing was charged: not exceeded");
	cr_assert_eq(q.esz, 10 * MIB, "expected 10 MiB at 1 MiB/ms, got %" PRIu64, q.esz);
}
