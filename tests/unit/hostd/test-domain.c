/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of a managed domain's accounting (hostd/domain.c): what the
 * agent's stats add to the bytes reclaimed from the domain. The figure is
 * what the agent's policy freed: DAMON's sz_applied plus the swap cache the
 * agent freed after those pageouts' writes (swap_cache_release_bytes), not
 * the guest's whole vmstat count (reclaimed_bytes), which the guest's own
 * kswapd feeds too. And what of the stats the status shows
 * (vr_domain_fill_status()).
 *
 * Everything is pure: struct literals in, numbers out; sizes in MiB.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "domain-status.h"
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

TestSuite(domain_status, .description = "vr_domain_fill_status()");

/* reportable_free_bytes is a gauge of the guest now: the last stats of an
 * agent that is not connected (here: no session at all) do not show. */
Test(domain_status, reportable_free_bytes_only_from_a_connected_agent)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000001", "web1");
	struct vr_agent_stats s = {
		.backend = "damon",
		.mem_total_bytes = 1024 * MIB,
		.has_reportable_free_bytes = TRUE,
		.reportable_free_bytes = 300 * MIB,
		.qt_exceeds = 4,
	};
	struct vr_domain_status st;

	vr_domain_account_stats(d, &s, FALSE);
	vr_domain_fill_status(d, &st);
	cr_assert_eq(st.qt_exceeds, 4, "the stats are kept (qt_exceeds shows)");
	cr_assert_eq(st.reportable_free_bytes, 0,
		     "no agent connected: expected 0 (not known), got %" G_GUINT64_FORMAT,
		     st.reportable_free_bytes);
}

/* ------------------------------------------------------------------------- */
/* What a lying agent can claim (issue 16)                                   */
/* ------------------------------------------------------------------------- */

#define S 1000000LL /* us per s */

TestSuite(domain_bounds, .description = "vr_domain_account_stats_at(): the bounds");

static struct vr_domain *guest_512m(void)
{
	struct vr_domain *d = vr_domain_new("00000000-0000-0000-0000-000000000002", "liar");

	d->info.memory_bytes = 512 * MIB;
	return d;
}

static struct vr_agent_stats applied(uint64_t bytes)
{
	return (struct vr_agent_stats){
		.backend = "damon",
		.sz_tried = bytes,
		.sz_applied = bytes,
		.mem_total_bytes = 512 * MIB,
	};
}

Test(domain_bounds, reclaimed_beyond_the_guests_memory_is_rejected_and_counted)
{
	g_autoptr(vr_domain) d = guest_512m();
	struct vr_agent_stats s = applied(0);
	struct vr_domain_status st;

	cr_assert(vr_domain_account_stats_at(d, &s, FALSE, 0), "the baseline");
	s = applied(1ULL << 40);
	cr_assert_not(vr_domain_account_stats_at(d, &s, FALSE, 1 * S),
		      "1 TiB reclaimed by a 512 MiB guest in 1 s cannot be true");
	cr_assert_eq(d->reclaimed_bytes, 0, "nothing counted, got %" G_GUINT64_FORMAT,
		     d->reclaimed_bytes);
	cr_assert_eq(d->rejected_reports, 1);
	s = applied((1ULL << 40) + 10 * MIB);
	cr_assert(vr_domain_account_stats_at(d, &s, FALSE, 2 * S),
		  "the lie is the base of the next increase, which is believable");
	cr_assert_eq(d->reclaimed_bytes, 10 * MIB, "got %" G_GUINT64_FORMAT, d->reclaimed_bytes);
	vr_domain_fill_status(d, &st);
	cr_assert_eq(st.agent_rejected_reports, 1, "the status counts it");
}

/* Faked restarts: each report's counters "start over" at 512 MiB, every
 * 100 ms for 6 s (the 5 TiB of issue 16 came this way). */
Test(domain_bounds, faked_restarts_count_no_more_than_memory_and_rate_allow)
{
	g_autoptr(vr_domain) d = guest_512m();
	struct vr_agent_stats s = applied(0);

	vr_domain_account_stats_at(d, &s, FALSE, 0);
	for (int64_t t = S / 10; t <= 6 * S; t += S / 10) {
		s = applied(t % (S / 5) ? 512 * MIB : 511 * MIB);
		vr_domain_account_stats_at(d, &s, TRUE, t);
	}
	cr_assert_leq(d->reclaimed_bytes, 512 * MIB + 6 * 512 * MIB,
		      "at most the memory plus 6 s at 512 MiB/s, got %" G_GUINT64_FORMAT " MiB",
		      d->reclaimed_bytes / MIB);
	cr_assert_geq(d->rejected_reports, 40,
		      "most of the 60 claims rejected, got %" G_GUINT64_FORMAT,
		      d->rejected_reports);
}

Test(domain_bounds, totals_saturate_instead_of_wrapping)
{
	g_autoptr(vr_domain) d = guest_512m();
	struct vr_agent_stats s = applied(0);

	vr_domain_account_stats_at(d, &s, FALSE, 0);
	d->reclaimed_bytes = UINT64_MAX - 10 * MIB;
	s = applied(20 * MIB);
	cr_assert(vr_domain_account_stats_at(d, &s, FALSE, S));
	cr_assert_eq(d->reclaimed_bytes, UINT64_MAX, "saturated, not wrapped to %" G_GUINT64_FORMAT,
		     d->reclaimed_bytes);
	vr_domain_add_reclaimed(d, 1);
	cr_assert_eq(d->reclaimed_bytes, UINT64_MAX, "the host's own additions saturate too");
	/* The largest counters the protocol allows do not wrap either. */
	s.sz_applied = s.sz_tried = s.swap_cache_release_bytes = INT64_MAX;
	cr_assert_not(vr_domain_account_stats_at(d, &s, TRUE, 2 * S),
		      "2^64 - 2 bytes since a restart is beyond the bound");
}

TestSuite(domain_credit, .description = "vr_domain_update_credit()");

/* Without an agent session it claims nothing: idle, its share cut to the
 * floor (its trust stays). */
Test(domain_credit, an_agent_domain_that_claims_nothing_is_cut_to_the_floor)
{
	g_autoptr(vr_domain) d = guest_512m();

	d->action = VR_DOMAIN_ACTION_AGENT_RECLAIM;
	d->rss_bytes = 512 * MIB;
	d->share_bytes = 32 * MIB;
	for (int64_t t = 0; t < 60; t++)
		vr_domain_update_credit(d, t * S, S);
	cr_assert_eq(d->credit.credit_permille, VR_FLEET_CREDIT_FLOOR_PERMILLE, "got %u",
		     d->credit.credit_permille);
	cr_assert_eq(d->credit.verdict, VR_FLEET_CREDIT_IDLE);
	cr_assert_eq(d->credit.trust_permille, VR_FLEET_CREDIT_FULL_PERMILLE);
	d->action = VR_DOMAIN_ACTION_BALLOON;
	cr_assert_eq(vr_domain_update_credit(d, 60 * S, S), VR_FLEET_CREDIT_FULL_PERMILLE,
		     "the balloon is the host's own doing: full credit");
}

TestSuite(domain_host_pageout, .description = "vr_domain_account_host_pageout()");

/* A full swap makes the domain wait, saying why; room ends the wait, and
 * only resident bytes advised are charged and counted. */
Test(domain_host_pageout, a_full_swap_waits_and_room_ends_the_wait)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000002", "nosw");
	const struct vr_host_snapshot full = { .mem_total_bytes = 1024 * MIB,
					       .swap_total_bytes = 24 * MIB,
					       .swap_free_bytes = 16 * MIB };
	const struct vr_host_snapshot room = { .mem_total_bytes = 1024 * MIB,
					       .swap_total_bytes = 64 * MIB,
					       .swap_free_bytes = 56 * MIB };
	struct vr_host_reclaim_result res = { .swap_full = TRUE };

	vr_domain_account_host_pageout(d, &res, &full);
	cr_assert(d->last_error && strstr(d->last_error, "host-pageout waits") &&
			  strstr(d->last_error, "swap is full"),
		  "the full swap is the last error: %s", d->last_error ? d->last_error : "(none)");
	cr_assert_eq(d->reclaimed_bytes, 0);
	cr_assert_eq(d->window.charged_bytes, 0);

	res = (struct vr_host_reclaim_result){ .swap_room_bytes = 40 * MIB,
					       .planned_bytes = 40 * MIB,
					       .resident_bytes = 32 * MIB,
					       .swapped_bytes = 8 * MIB,
					       .advised_bytes = 32 * MIB };
	vr_domain_account_host_pageout(d, &res, &room);
	cr_assert_null(d->last_error, "room ends the wait: %s", d->last_error);
	cr_assert_eq(d->reclaimed_bytes, 32 * MIB,
		     "the resident bytes advised count, not the plan");
	cr_assert_eq(d->window.charged_bytes, 32 * MIB, "and are charged");
}

Test(domain_host_pageout, an_error_is_not_a_wait)
{
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-000000000003", "err");
	const struct vr_host_snapshot room = { .mem_total_bytes = 1024 * MIB,
					       .swap_total_bytes = 64 * MIB,
					       .swap_free_bytes = 56 * MIB };
	const struct vr_host_reclaim_result res = { .advised_bytes = 4 * MIB };

	vr_domain_set_error(d, "guest err: paging out: gone");
	vr_domain_account_host_pageout(d, &res, &room);
	cr_assert_str_eq(d->last_error, "guest err: paging out: gone", "an error stays");
	vr_domain_wait(d, "host-pageout waits: the host has no swap");
	vr_domain_set_error(d, "something failed");
	vr_domain_end_wait(d);
	cr_assert_str_eq(d->last_error, "something failed", "an error replacing a wait stays");
}
