/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of a managed domain's accounting (hostd/domain.c): what the
 * agent's stats add to the bytes reclaimed from the domain. The figure is
 * the guest kernel's own count of reclaimed bytes (reclaimed_bytes), not
 * DAMON's sz_applied, which misses every page whose swap write was still in
 * flight when the pageout scheme tried it.
 *
 * Everything is pure: struct literals in, numbers out; sizes in MiB.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>

#include "domain.h"
#include "protocol.h"

#define MIB (1ULL << 20)

static struct vr_agent_stats stats_at(uint64_t uptime_ms, uint64_t reclaimed_mib,
				      uint64_t sz_applied_mib)
{
	return (struct vr_agent_stats){
		.backend = "damon",
		.uptime_ms = uptime_ms,
		.sz_tried = 4 * sz_applied_mib * MIB,
		.sz_applied = sz_applied_mib * MIB,
		.reclaimed_bytes = reclaimed_mib * MIB,
		.mem_total_bytes = 1024 * MIB,
	};
}

static void expect_reclaimed(const struct vr_domain *d, uint64_t want_mib, const char *what)
{
	cr_assert_eq(d->reclaimed_bytes, want_mib * MIB,
		     "%s: expected %" G_GUINT64_FORMAT " MiB reclaimed, got %" G_GUINT64_FORMAT
		     " bytes",
		     what, want_mib, d->reclaimed_bytes);
}

TestSuite(domain_account, .description = "vr_domain_account_stats()");

Test(domain_account, first_report_is_a_baseline_then_deltas_count)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");
	struct vr_agent_stats s = stats_at(1000, 100, 10);

	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 0, "the agent ran before vreclaimd took the domain");
	cr_assert(d->has_stats, "expected the stats kept");
	s = stats_at(2000, 130, 11);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 30, "after the guest reclaimed 30 MiB more");
	s = stats_at(3000, 130, 11);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 30, "a report without progress");
}

Test(domain_account, counts_the_guest_kernels_reclaim_not_damons_sz_applied)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000002", "web2");
	struct vr_agent_stats s = stats_at(1000, 0, 0);

	vr_domain_account_stats(d, &s, FALSE);
	/* What the demo saw with a swap disk: DAMON counts 4 MiB
	 * applied while the guest wrote 190 MiB to swap and freed it. */
	s = stats_at(30000, 190, 4);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 190, "after 190 MiB reclaimed, 4 MiB of it counted by DAMON");
	s = stats_at(40000, 190, 50);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 190, "DAMON's count catching up adds nothing");
}

Test(domain_account, an_agent_restart_counts_its_new_counters_whole)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000003", "web3");
	struct vr_agent_stats s = stats_at(1000, 10, 1);

	vr_domain_account_stats(d, &s, FALSE);
	s = stats_at(9000, 50, 5);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 40, "before the restart");
	s = stats_at(500, 7, 1);
	vr_domain_account_stats(d, &s, TRUE);
	expect_reclaimed(d, 47, "the new agent's 7 MiB added whole");
	s = stats_at(1500, 9, 1);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 49, "then counted from the new agent's counters");
}

Test(domain_account, a_counter_that_goes_back_without_a_restart_adds_nothing)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000004", "web4");
	struct vr_agent_stats s = stats_at(1000, 100, 1);

	vr_domain_account_stats(d, &s, FALSE);
	s = stats_at(2000, 60, 1);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 0, "a lower count is no reclaim");
	s = stats_at(3000, 70, 1);
	vr_domain_account_stats(d, &s, FALSE);
	expect_reclaimed(d, 10, "counted again from the lower count");
}
