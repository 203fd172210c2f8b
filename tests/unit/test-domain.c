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

/**
 * struct report - one agent report and what the domain counts after it.
 * @uptime_ms, @reclaimed_mib, @sz_applied_mib: the report's stats.
 * @restarted:	the report is the first of a new agent.
 * @want_mib:	the domain's reclaimed bytes after it, MiB.
 * @why:	what the step shows.
 */
struct report {
	uint64_t uptime_ms, reclaimed_mib, sz_applied_mib;
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
			.reclaimed_bytes = r->reclaimed_mib * MIB,
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
		{ 1000, 100, 10, FALSE, 0, "the agent ran before vreclaimd took the domain" },
		{ 2000, 130, 11, FALSE, 30, "after the guest reclaimed 30 MiB more" },
		{ 3000, 130, 11, FALSE, 30, "a report without progress" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

/* What the demo saw with a swap disk: DAMON counts 4 MiB applied while the
 * guest wrote 190 MiB to swap and freed it. */
Test(domain_account, counts_the_guest_kernels_reclaim_not_damons_sz_applied)
{
	const struct report reports[] = {
		{ 1000, 0, 0, FALSE, 0, "the baseline" },
		{ 30000, 190, 4, FALSE, 190,
		  "after 190 MiB reclaimed, 4 MiB of it counted by DAMON" },
		{ 40000, 190, 50, FALSE, 190, "DAMON's count catching up adds nothing" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

Test(domain_account, an_agent_restart_counts_its_new_counters_whole)
{
	const struct report reports[] = {
		{ 1000, 10, 1, FALSE, 0, "the baseline" },
		{ 9000, 50, 5, FALSE, 40, "before the restart" },
		{ 500, 7, 1, TRUE, 47, "the new agent's 7 MiB added whole" },
		{ 1500, 9, 1, FALSE, 49, "then counted from the new agent's counters" },
	};

	account(reports, G_N_ELEMENTS(reports));
}

Test(domain_account, a_counter_that_goes_back_without_a_restart_adds_nothing)
{
	const struct report reports[] = {
		{ 1000, 100, 1, FALSE, 0, "the baseline" },
		{ 2000, 60, 1, FALSE, 0, "a lower count is no reclaim" },
		{ 3000, 70, 1, FALSE, 10, "counted again from the lower count" },
	};

	account(reports, G_N_ELEMENTS(reports));
}
