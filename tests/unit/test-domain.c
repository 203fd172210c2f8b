/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of a managed domain's accounting (hostd/domain.c): what the
 * agent's stats add to the bytes reclaimed from the domain. The figure is
 * what the agent's policy freed: DAMON's sz_applied plus the swap cache the
 * agent freed after those pageouts' writes (swap_cache_release_bytes), not
 * the guest's whole vmstat count (reclaimed_bytes), which the guest's own
 * kswapd feeds too.
 *
 * Everything is pure: struct literals in, numbers out; sizes in MiB.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>

#include "domain.h"
#include "protocol.h"

#define MIB (1ULL << 20)

/**
 * struct report - one agent report and what the domain counts after it.
 * @uptime_ms, @sz_applied_mib, @released_mib, @vmstat_mib: the report's
 *		stats (sz_applied, swap_cache_release_bytes, reclaimed_bytes).
 * @restarted:	the report is the first of a new agent.
 * @want_mib:	the domain's reclaimed bytes after it, MiB.
 * @why:	what the step shows.
 */
struct report {
	uint64_t uptime_ms, sz_applied_mib, released_mib, vmstat_mib;
	gboolean restarted;
	uint64_t want_mib;
	const char *why;
};

/* Feeds @n @reports to a new domain, checking its count after each. */
static void account(const struct report *reports, size_t n)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");

	for (size_t i = 0; i < n; i++) {
		const struct report *r = &reports[i];
		struct vr_agent_stats s = {
			.backend = "damon",
			.uptime_ms = r->uptime_ms,
			.sz_tried = 4 * r->sz_applied_mib * MIB,
			.sz_applied = r->sz_applied_mib * MIB,
			.swap_cache_release_bytes = r->released_mib * MIB,
			.reclaimed_bytes = r->vmstat_mib * MIB,
			.mem_total_bytes = 1024 * MIB,
		};

		vr_domain_account_stats(d, &s, r->restarted);
		cr_assert(d->has_stats, "report %zu: expected the stats kept", i);
		cr_assert_eq(d->reclaimed_bytes, r->want_mib * MIB,
			     "report %zu, %s: expected %" G_GUINT64_FORMAT
			     " MiB reclaimed, got %" G_GUINT64_FORMAT " bytes",
			     i, r->why, r->want_mib, d->reclaimed_bytes);
	}
}

TestSuite(domain_account, .description = "vr_domain_account_stats()");

Test(domain_account, first_report_is_a_baseline_then_deltas_count)
{
	const struct report reports[] = {
		{ 1000, 10, 90, 100, FALSE, 0, "the agent ran before vreclaimd took the domain" },
		{ 2000, 20, 110, 130, FALSE, 30, "after the policy freed 30 MiB more" },
		{ 3000, 20, 110, 130, FALSE, 30, "a report without progress" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

/* What the demo saw with a swap disk: DAMON counts 4 MiB applied while its
 * pageouts wrote 190 MiB to swap, which the agent's release then freed. */
Test(domain_account, counts_the_policys_pageouts_and_their_swap_cache)
{
	const struct report reports[] = {
		{ 1000, 0, 0, 0, FALSE, 0, "the baseline" },
		{ 30000, 4, 186, 190, FALSE, 190,
		  "4 MiB counted by DAMON, 186 freed from the swap cache after their writes" },
		{ 40000, 50, 186, 236, FALSE, 236, "more pageout adds" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

/* The guest's own kswapd reclaims too: its share of vmstat is not what the
 * domain gave on the policy's behalf. */
Test(domain_account, the_guests_own_reclaim_does_not_count)
{
	const struct report reports[] = {
		{ 1000, 0, 0, 0, FALSE, 0, "the baseline" },
		{ 2000, 8, 0, 300, FALSE, 8, "kswapd reclaimed 292 MiB under pressure" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

Test(domain_account, an_agent_restart_counts_its_new_counters_whole)
{
	const struct report reports[] = {
		{ 1000, 1, 9, 10, FALSE, 0, "the baseline" },
		{ 9000, 5, 45, 50, FALSE, 40, "before the restart" },
		{ 500, 1, 6, 7, TRUE, 47, "the new agent's 7 MiB added whole" },
		{ 1500, 1, 8, 9, FALSE, 49, "then counted from the new agent's counters" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

Test(domain_account, a_counter_that_goes_back_without_a_restart_adds_nothing)
{
	const struct report reports[] = {
		{ 1000, 1, 99, 100, FALSE, 0, "the baseline" },
		{ 2000, 1, 59, 60, FALSE, 0, "a lower count is no reclaim" },
		{ 3000, 1, 69, 70, FALSE, 10, "counted again from the lower count" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

/* ---- the fleet share as a quota the guest kernel charges by size ---- */

/**
 * struct charge_step - one report of the pageout schemes' counters and the
 * freed share the domain keeps after it.
 * @tried_mib, @applied_mib:	cumulative sz_tried, sz_applied.
 * @restarted:	the report is the first of a new agent.
 * @want_permille: freed_permille after it.
 * @why:	what the step shows.
 */
struct charge_step {
	uint64_t tried_mib, applied_mib;
	gboolean restarted;
	guint want_permille;
	const char *why;
};

static void charge_steps(const struct charge_step *steps, size_t n)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000002", "db1");

	cr_assert_eq(d->freed_permille, 1000, "a new domain frees all it is charged");
	for (size_t i = 0; i < n; i++) {
		struct vr_agent_stats s = {
			.backend = "damon",
			.uptime_ms = 1000 * (i + 1),
			.sz_tried = steps[i].tried_mib * MIB,
			.sz_applied = steps[i].applied_mib * MIB,
			.mem_total_bytes = 1024 * MIB,
		};

		vr_domain_account_stats(d, &s, steps[i].restarted);
		cr_assert_eq(d->freed_permille, steps[i].want_permille,
			     "step %zu, %s: expected %u per mille freed, got %u", i, steps[i].why,
			     steps[i].want_permille, d->freed_permille);
	}
}

TestSuite(domain_charge, .description = "the fleet share through a quota charged by size");

Test(domain_charge, freed_share_follows_what_the_schemes_freed)
{
	const struct charge_step steps[] = {
		{ 100, 100, FALSE, 1000, "the first report is a baseline" },
		{ 164, 164, FALSE, 1000, "64 MiB charged, 64 freed" },
		{ 228, 180, FALSE, 625, "64 charged, 16 freed: (1000 + 250) / 2" },
		{ 292, 180, FALSE, 313, "64 charged on free memory, nothing freed: halved" },
		{ 294, 180, FALSE, 313, "2 MiB charged is too little to say" },
		{ 358, 244, FALSE, 641, "64 of the 66 MiB charged since the last update freed" },
		{ 10, 10, TRUE, 1000, "a new agent starts over" },
		{ 5, 5, FALSE, 1000, "counters that went back say nothing" },
	};

	charge_steps(steps, G_N_ELEMENTS(steps));
}

Test(domain_charge, a_guest_reporting_more_freed_than_tried_counts_as_all)
{
	const struct charge_step steps[] = {
		{ 100, 0, FALSE, 1000, "baseline" },
		{ 132, 0, FALSE, 500, "32 charged, none freed" },
		{ 164, 1000, FALSE, 750, "1000 MiB 'freed' of 32 charged counts as 32" },
	};

	charge_steps(steps, G_N_ELEMENTS(steps));
}

Test(domain_charge, quota_is_the_share_over_the_freed_fraction)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000003", "web2");
	static const struct {
		guint permille;
		uint64_t share, want;
	} cases[] = {
		{ 1000, 64 * MIB, 64 * MIB },
		{ 500, 64 * MIB, 128 * MIB },
		{ 250, 64 * MIB, 256 * MIB },
		{ 62, 64 * MIB, 64 * MIB * VR_DOMAIN_CHARGE_MAX_FACTOR },
		{ 1, 64 * MIB, 64 * MIB * VR_DOMAIN_CHARGE_MAX_FACTOR },
		{ 250, 0, 0 },
		{ 500, G_MAXUINT64 / 2, G_MAXUINT64 },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		d->freed_permille = cases[i].permille;
		cr_assert_eq(vr_domain_agent_quota_bytes(d, cases[i].share), cases[i].want,
			     "case %u: %u per mille freed, share %" G_GUINT64_FORMAT
			     ": expected %" G_GUINT64_FORMAT ", got %" G_GUINT64_FORMAT,
			     i, cases[i].permille, cases[i].share, cases[i].want,
			     vr_domain_agent_quota_bytes(d, cases[i].share));
	}
}

Test(domain_charge, the_agent_policy_cuts_resident_charged_schemes_to_the_quota)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000004", "web3");
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) p = NULL;
	struct vr_scheme *by_size;

	d->policy = vr_policy_new_profile(NULL, &error);
	cr_assert_not_null(d->policy, "%s", error ? error->message : "?");
	/* A second pageout scheme that charges as DAMOS does. */
	by_size = vr_scheme_copy(g_ptr_array_index(d->policy->schemes, 0));
	g_free(by_size->name);
	by_size->name = g_strdup("by-size");
	by_size->quota.charge = VR_CHARGE_SIZE;
	g_ptr_array_add(d->policy->schemes, by_size);
	d->freed_permille = 250;

	p = vr_domain_agent_policy(d, 32 * MIB, 1000);
	const struct vr_scheme *s0 = g_ptr_array_index(p->schemes, 0);
	const struct vr_scheme *s1 = g_ptr_array_index(p->schemes, 1);
	cr_assert_eq(s0->quota.sz, 128 * MIB,
		     "charge resident: 32 MiB to free at a quarter freed is a 128 MiB quota, "
		     "got %" G_GUINT64_FORMAT,
		     s0->quota.sz);
	cr_assert_eq(s1->quota.sz, 32 * MIB,
		     "charge size: the share itself, got %" G_GUINT64_FORMAT, s1->quota.sz);
	cr_assert_eq(s0->quota.reset_interval_ms, 1000);

	/* A profile quota below the cut stays. */
	d->freed_permille = 1;
	g_clear_pointer(&p, vr_policy_free);
	p = vr_domain_agent_policy(d, 512 * MIB, 1000);
	s0 = g_ptr_array_index(p->schemes, 0);
	cr_assert_eq(
		s0->quota.sz, 1024 * MIB,
		"the profile's own 1 GiB is below 16 x 512 MiB and stays, got %" G_GUINT64_FORMAT,
		s0->quota.sz);
}

/* DAMON counts a pageout whose swap write is in flight as not applied; the
 * agent frees that swap cache later: it is freed all the same. */
Test(domain_charge, the_released_swap_cache_counts_as_freed)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000005", "web4");
	struct vr_agent_stats s = { .backend = "damon",
				    .uptime_ms = 1000,
				    .mem_total_bytes = 1024 * MIB };

	vr_domain_account_stats(d, &s, FALSE);
	s.uptime_ms = 2000;
	s.sz_tried = 64 * MIB;
	s.sz_applied = 4 * MIB;
	s.swap_cache_release_bytes = 60 * MIB;
	vr_domain_account_stats(d, &s, FALSE);
	cr_assert_eq(d->freed_permille, 1000,
		     "4 MiB applied and 60 released of 64 charged is all freed, got %u",
		     d->freed_permille);
	cr_assert_eq(d->reclaimed_bytes, 64 * MIB);
}
