/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the fleet credit (common/fleet-credit.c) and of the fleet
 * quota shared with it (vr_fleet_distribute()): a domain whose agent claims
 * cold memory and whose RSS does not fall loses its share to the domains
 * that give back, an idle one leaves its share to the others, and an honest
 * slow guest keeps full credit (issue 16).
 *
 * Pure: the tests play the daemon's tick (1 s) with a fleet quota window of
 * 1 s; sizes in MiB, times in us.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "fleet-credit.h"
#include "fleet-quota.h"
#include "protocol.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define S   1000000LL /* us per s */

#define FULL  VR_FLEET_CREDIT_FULL_PERMILLE
#define FLOOR VR_FLEET_CREDIT_FLOOR_PERMILLE

/*
 * A domain's profile at t s: its RSS, and its agent's cumulative reclaimed
 * counter, or none (@agent_known false).
 */
struct profile_point {
	uint64_t rss_bytes;
	bool agent_known;
	uint64_t reclaimed_bytes;
};

typedef struct profile_point (*profile_fn)(int64_t t_s);

/* A domain's credit after @seconds ticks of 1 s holding @share_mib per 1 s
 * window, its RSS and counter from @at(t). Records the credit after each
 * second. */
static void play(struct vr_fleet_credit *c, int64_t from_s, int64_t seconds, uint64_t share_mib,
		 profile_fn at, uint32_t *credit_at)
{
	for (int64_t t = from_s; t < from_s + seconds; t++) {
		struct profile_point p = at(t);
		struct vr_fleet_credit_sample s = {
			.rss_bytes = p.rss_bytes,
			.share_bytes = share_mib * MIB,
			.share_window_us = S,
			.agent_known = p.agent_known,
			.reclaimed_bytes = p.reclaimed_bytes,
		};

		vr_fleet_credit_update(c, t * S, &s);
		if (credit_at)
			credit_at[t - from_s] = c->credit_permille;
	}
}

/* The liar of issue 16: its agent says all its memory is cold and that it
 * reclaimed its whole 32 MiB/s share; its RSS never falls. */
static struct profile_point liar_claims_all(int64_t t)
{
	return (struct profile_point){ .rss_bytes = 2 * GIB,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)t * 32 * MIB };
}

/* A cannier one claims what an honest slow guest claims: 1 MiB/s. */
static struct profile_point liar_claims_little(int64_t t)
{
	return (struct profile_point){ .rss_bytes = 2 * GIB,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)t * MIB };
}

/* A liar that claims more than it was granted (4 GiB/s). */
static struct profile_point liar_inflates(int64_t t)
{
	return (struct profile_point){ .rss_bytes = 2 * GIB,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)t * 4 * GIB };
}

/* One that claims nothing, or sends no counters at all. */
static struct profile_point liar_claims_nothing(int64_t t)
{
	(void)t;
	return (struct profile_point){ .rss_bytes = 2 * GIB, .agent_known = true };
}

static struct profile_point liar_silent(int64_t t)
{
	(void)t;
	return (struct profile_point){ .rss_bytes = 2 * GIB };
}

TestSuite(fleet_credit, .description = "vr_fleet_credit_update()");

/*
 * Each liar that claims reclaim at a 32 MiB/s share loses its credit within
 * five windows. The first judgement is 30 s after its first grant (its
 * oldest window must have had one), then one a window:
 *
 *   t (s)    0..29   30    40    50 ...
 *   credit   1.000  0.500 0.250 0.125 (the floor, and no lower)
 */
static void assert_liar_falls(profile_fn liar, const char *what)
{
	struct vr_fleet_credit c;
	uint32_t credit[120];

	vr_fleet_credit_init(&c);
	cr_assert_eq(c.credit_permille, FULL, "a new domain has full credit");
	play(&c, 0, 120, 32, liar, credit);
	cr_assert_eq(credit[29], FULL, "%s: not judged before 30 s: got %u", what, credit[29]);
	cr_assert_eq(credit[30], 500, "%s: halved at 30 s: got %u", what, credit[30]);
	cr_assert_eq(credit[40], 250, "%s: halved at 40 s: got %u", what, credit[40]);
	cr_assert_eq(credit[50], FLOOR, "%s: at the floor after 5 windows (50 s): got %u", what,
		     credit[50]);
	cr_assert_eq(credit[119], FLOOR, "%s: never below the floor: got %u", what, credit[119]);
	cr_assert_eq(c.released_bytes, 0);
	cr_assert_geq(c.granted_bytes, 30 * 32 * MIB - 32 * MIB,
		      "%s: the horizon granted 30 s of 32 MiB, got %" G_GUINT64_FORMAT " MiB", what,
		      c.granted_bytes / MIB);
	cr_assert_eq(c.failed, c.judgements, "%s: every judgement failed", what);
	cr_assert_eq(c.verdict, VR_FLEET_CREDIT_HELD_BACK, "%s", what);
	cr_assert_eq(c.idle_judgements, 0, "%s: it claimed: not idle", what);
}

Test(fleet_credit, a_liar_that_claims_reclaim_falls_to_the_floor_in_five_windows)
{
	assert_liar_falls(liar_claims_all, "claims all");
}

/* 1 MiB/s: 20 MiB claimed per horizon, 80 MiB over the long one; nothing
 * released. */
Test(fleet_credit, a_liar_that_claims_as_little_as_a_slow_guest_falls_too)
{
	assert_liar_falls(liar_claims_little, "claims little");
}

Test(fleet_credit, a_claim_beyond_the_grant_is_bounded_by_it)
{
	struct vr_fleet_credit c;

	assert_liar_falls(liar_inflates, "inflates");
	vr_fleet_credit_init(&c);
	play(&c, 0, 31, 32, liar_inflates, NULL);
	cr_assert_eq(c.judgements, 1);
	cr_assert_eq(c.claimed_bytes, c.granted_bytes,
		     "claimed bounded by the grant: %" G_GUINT64_FORMAT " MiB",
		     c.claimed_bytes / MIB);
}

/* A domain that claims nothing, or says nothing, is idle: at the floor from
 * its first judgement while it stays so, without a failure. */
static void assert_idle(profile_fn idle, const char *what)
{
	struct vr_fleet_credit c;
	uint32_t credit[90];

	vr_fleet_credit_init(&c);
	play(&c, 0, 90, 32, idle, credit);
	cr_assert_eq(credit[29], FULL, "%s: got %u", what, credit[29]);
	cr_assert_eq(credit[30], FLOOR, "%s: idle at the first judgement: got %u", what,
		     credit[30]);
	cr_assert_eq(credit[89], FLOOR, "%s: got %u", what, credit[89]);
	cr_assert_eq(c.failed, 0, "%s: idle is no failure", what);
	cr_assert_eq(c.verdict, VR_FLEET_CREDIT_IDLE, "%s", what);
	cr_assert_eq(c.trust_permille, FULL, "%s: its trust stays", what);
}

Test(fleet_credit, a_domain_that_claims_nothing_is_idle)
{
	assert_idle(liar_claims_nothing, "claims nothing");
	assert_idle(liar_silent, "no counters");
}

/*
 * An honest slow TCG guest, as measured in tests/e2e/libvirt-fleet (its
 * low-priority domain at a 32 MiB/s share; vreclaimd -v, its agent's
 * reclaimed bytes every 6 s and the guest-RAM RSS every 2 s, plus the 120
 * MiB of the QEMU's own memory, growing by about 1 MiB a minute):
 *
 *   t (s)          0    6   12   27   33   39   45   51   57   80
 *   reclaimed MiB  0    -    -  144  148  180  194  198  226  240
 *   guest RAM MiB 360  250  226  226  226  226  220  182  182  162 (at 78)
 *
 * The first wave reached the host at once (110 MiB at 6 s, 90% of what it
 * reclaimed); then its RSS stayed flat for 33 s while it reclaimed 50 MiB
 * more (its freed pages scattered), and fell in bursts of 6, 38 and 20 MiB
 * as the agent's compactions made whole 2 MiB blocks.
 */
static const struct {
	int64_t t;
	uint64_t reclaimed_mib;
	uint64_t ram_mib;
} tcg_lo[] = {
	{ 0, 0, 360 },	  { 4, 20, 360 },   { 6, 40, 250 },   { 12, 70, 226 },
	{ 27, 144, 226 }, { 33, 148, 226 }, { 39, 180, 226 }, { 44, 192, 226 },
	{ 45, 194, 220 }, { 51, 198, 220 }, { 52, 199, 182 }, { 57, 226, 182 },
	{ 77, 239, 182 }, { 78, 239, 162 }, { 80, 240, 162 }, { 200, 252, 162 },
};

static uint64_t interpolate(int64_t t, size_t field)
{
	size_t n = G_N_ELEMENTS(tcg_lo);

	for (size_t i = 1; i < n; i++) {
		if (t > tcg_lo[i].t)
			continue;
		/* The RSS steps (a burst); the counter grows linearly. */
		if (field == 1)
			return t == tcg_lo[i].t ? tcg_lo[i].ram_mib : tcg_lo[i - 1].ram_mib;
		return tcg_lo[i - 1].reclaimed_mib +
		       (tcg_lo[i].reclaimed_mib - tcg_lo[i - 1].reclaimed_mib) *
			       (uint64_t)(t - tcg_lo[i - 1].t) /
			       (uint64_t)(tcg_lo[i].t - tcg_lo[i - 1].t);
	}
	return field == 1 ? tcg_lo[n - 1].ram_mib : tcg_lo[n - 1].reclaimed_mib;
}

static struct profile_point honest_tcg(int64_t t)
{
	return (struct profile_point){
		.rss_bytes = (interpolate(t, 1) + 120) * MIB + (uint64_t)t * MIB / 60,
		.agent_known = true,
		.reclaimed_bytes = interpolate(t, 0) * MIB,
	};
}

Test(fleet_credit, an_honest_slow_tcg_guest_keeps_full_credit)
{
	struct vr_fleet_credit c;
	uint32_t credit[200];
	vr_fleet_credit_init(&c);
	for (int64_t t = 0; t < 200; t++) {
		play(&c, t, 1, 32, honest_tcg, &credit[t]);
		/* While it reclaims (to 100 s: the claim of 80..100 s is
		 * judged at 110 s) it keeps full credit. */
		if (t < 110)
			cr_assert_eq(
				credit[t], FULL,
				"t=%d s: expected full credit, got %u (claimed %" G_GUINT64_FORMAT
				" MiB, released %" G_GUINT64_FORMAT " MiB)",
				(int)t, credit[t], c.claimed_bytes / MIB, c.released_bytes / MIB);
		cr_assert_eq(c.trust_permille, FULL, "t=%d s: its trust: %u", (int)t,
			     c.trust_permille);
	}
	cr_assert_eq(c.failed, 0);
	/* Then it has nothing left to give (0.1 MiB/s claimed of 32): idle, its
	 * share goes to the others. */
	cr_assert_eq(c.verdict, VR_FLEET_CREDIT_IDLE);
	cr_assert_eq(credit[199], FLOOR);
}

/* tests/e2e/libvirt-fleet, another run: the low-priority domain's counter
 * said 1.3 MiB for the first 25 s of its grant while its RSS fell 92 MiB
 * (from 20 s), then 58 MiB at 27 s and 159 at 38 s: its stats came late.
 * Not idle: the host saw its memory come back. */
static struct profile_point late_stats(int64_t t)
{
	uint64_t ram = t < 20 ? 360 : t < 38 ? 266 : 234;
	uint64_t claimed_kib = t < 25 ? (uint64_t)t * 1024 / 20 :
			       t < 27 ? 58 * 1024 :
			       t < 38 ? 159 * 1024 :
					242 * 1024;

	return (struct profile_point){ .rss_bytes = (ram + 120) * MIB,
				       .agent_known = true,
				       .reclaimed_bytes = claimed_kib * 1024 };
}

Test(fleet_credit, late_stats_with_a_falling_rss_are_not_idle)
{
	struct vr_fleet_credit c;
	uint32_t credit[60];

	vr_fleet_credit_init(&c);
	play(&c, 0, 60, 32, late_stats, credit);
	for (int t = 0; t < 60; t++)
		cr_assert_eq(credit[t], FULL, "t=%d s: got %u (verdict %d)", t, credit[t],
			     (int)c.verdict);
	cr_assert_eq(c.idle_judgements, 0);
	cr_assert_eq(c.failed, 0);
}

/* It says it reclaimed 4 MiB/s; its RSS falls by @release_permille of that. */
static uint32_t release_permille;

static struct profile_point honest_fraction(int64_t t)
{
	return (struct profile_point){ .rss_bytes = 2 * GIB -
						    (uint64_t)t * 4 * MIB * release_permille / 1000,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)t * 4 * MIB };
}

/* Over a horizon it claims 20 s of 4 MiB/s (80 MiB): it must release 1/16
 * of that, 5 MiB, in the 30 s, i.e. 1/24 of what it claims per second. */
Test(fleet_credit, a_claim_must_show_in_the_rss)
{
	struct vr_fleet_credit c;

	release_permille = 1000 / 24 + 1;
	vr_fleet_credit_init(&c);
	play(&c, 0, 90, 32, honest_fraction, NULL);
	cr_assert_eq(c.credit_permille, FULL, "releasing 1/24 per second gives back: got %u",
		     c.credit_permille);
	release_permille = 1000 / 24 - 2;
	vr_fleet_credit_init(&c);
	play(&c, 0, 90, 32, honest_fraction, NULL);
	cr_assert_eq(c.credit_permille, FLOOR, "releasing less does not: got %u",
		     c.credit_permille);
}

/* It claims 0.25 MiB/s: 5 MiB per horizon, 20 MiB over the long one, and
 * releases a 2 MiB block every 40 s. Too little to judge on the horizon,
 * enough over the long one, which it passes; with nothing released it would
 * not. */
static bool slow_releases;

static struct profile_point slow_claims(int64_t t)
{
	return (struct profile_point){
		.rss_bytes = 2 * GIB - (slow_releases ? (uint64_t)(t / 40) * 2 * MIB : 0),
		.agent_known = true,
		.reclaimed_bytes = (uint64_t)t * MIB / 4
	};
}

Test(fleet_credit, a_small_claim_is_judged_over_the_long_horizon)
{
	struct vr_fleet_credit c;
	uint32_t credit[150];

	slow_releases = true;
	vr_fleet_credit_init(&c);
	play(&c, 0, 150, 32, slow_claims, credit);
	cr_assert_eq(credit[30], FULL, "slow: nothing to judge at 30 s: got %u", credit[30]);
	cr_assert_eq(c.credit_permille, FULL, "got %u", c.credit_permille);
	cr_assert_eq(c.failed, 0);
	slow_releases = false;
	vr_fleet_credit_init(&c);
	play(&c, 0, 150, 32, slow_claims, credit);
	cr_assert_eq(credit[30], FULL, "slow: got %u", credit[30]);
	cr_assert_eq(c.credit_permille, FLOOR, "20 MiB claimed over 90 s, nothing given: got %u",
		     c.credit_permille);
}

/* It claims nothing for a minute (idle), then works and gives back: full at
 * its next judgement, not three later. */
static struct profile_point idle_then_busy(int64_t t)
{
	if (t < 60)
		return (struct profile_point){ .rss_bytes = 2 * GIB, .agent_known = true };
	return (struct profile_point){ .rss_bytes = 2 * GIB - (uint64_t)(t - 60) * 2 * MIB,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)(t - 60) * 4 * MIB };
}

Test(fleet_credit, an_idle_domain_gets_its_share_back_when_it_works)
{
	struct vr_fleet_credit c;
	uint32_t credit[120];

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 32, idle_then_busy, credit);
	cr_assert_eq(credit[30], FLOOR, "idle: got %u", credit[30]);
	cr_assert_eq(credit[59], FLOOR, "got %u", credit[59]);
	cr_assert_eq(credit[80], FULL, "busy and giving back: full at once, got %u", credit[80]);
	cr_assert_eq(c.failed, 0, "idle is no failure");
	cr_assert_geq(c.idle_judgements, 3);
}

/* A liar for a minute (at the floor), then it gives back: full credit again
 * three windows later (doubling each window). */
static struct profile_point gives_after_60(int64_t t)
{
	struct profile_point p = liar_claims_all(t);

	if (t >= 60)
		p.rss_bytes = 2 * GIB - (uint64_t)(t - 60) * 32 * MIB;
	return p;
}

Test(fleet_credit, the_credit_comes_back_when_it_gives_back)
{
	struct vr_fleet_credit c;
	uint32_t credit[120];

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 32, gives_after_60, credit);
	cr_assert_eq(credit[59], FLOOR, "got %u", credit[59]);
	cr_assert_eq(credit[60], FLOOR, "the release is not seen yet: %u", credit[60]);
	cr_assert_eq(credit[70], 250, "doubled at 70 s: got %u", credit[70]);
	cr_assert_eq(credit[80], 500, "got %u", credit[80]);
	cr_assert_eq(credit[90], FULL, "got %u", credit[90]);
}

/* An RSS that grows while the domain claims reclaim: its reclaim is undone
 * (the guest touches the memory back in) or it gives nothing. */
static struct profile_point rss_grows(int64_t t)
{
	return (struct profile_point){ .rss_bytes = GIB + (uint64_t)t * 8 * MIB,
				       .agent_known = true,
				       .reclaimed_bytes = (uint64_t)t * 4 * MIB };
}

Test(fleet_credit, an_rss_that_grows_gives_nothing)
{
	struct vr_fleet_credit c;

	vr_fleet_credit_init(&c);
	play(&c, 0, 60, 32, rss_grows, NULL);
	cr_assert_eq(c.credit_permille, FLOOR, "got %u", c.credit_permille);
	cr_assert_eq(c.released_bytes, 0);
}

Test(fleet_credit, no_share_or_a_small_one_is_no_evidence)
{
	struct vr_fleet_credit c;
	struct vr_fleet_credit_sample s = { .rss_bytes = 2 * GIB, .share_window_us = S };

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 0, liar_silent, NULL);
	cr_assert_eq(c.judgements, 0, "no grant, no judgement");
	cr_assert_eq(c.credit_permille, FULL);
	/* 30 s of 256 KiB/s: 7.5 MiB, under VR_FLEET_CREDIT_MIN_GRANT_BYTES. */
	s.share_bytes = 256 * 1024;
	for (int64_t t = 120; t < 240; t++)
		vr_fleet_credit_update(&c, t * S, &s);
	cr_assert_eq(c.judgements, 0, "too small a grant to judge");
	cr_assert_eq(c.credit_permille, FULL);
}

Test(fleet_credit, a_clock_that_goes_back_forgets_the_windows_not_the_credit)
{
	struct vr_fleet_credit c;
	struct vr_fleet_credit_sample s = { .rss_bytes = 2 * GIB,
					    .share_bytes = 32 * MIB,
					    .share_window_us = S,
					    .agent_known = true };

	vr_fleet_credit_init(&c);
	play(&c, 100, 60, 32, liar_claims_all, NULL);
	cr_assert_eq(c.credit_permille, FLOOR);
	vr_fleet_credit_update(&c, 5 * S, &s);
	cr_assert_eq(c.credit_permille, FLOOR, "the credit stays");
	/* 29 s later nothing is judged yet: the windows started over. */
	uint64_t judged = c.judgements;
	for (int64_t t = 6; t < 35; t++) {
		s.rss_bytes = 2 * GIB - (uint64_t)t * MIB;
		vr_fleet_credit_update(&c, t * S, &s);
	}
	cr_assert_eq(c.judgements, judged, "no judgement before the horizon is full again");
}

Test(fleet_credit, a_long_gap_grants_at_most_one_window)
{
	struct vr_fleet_credit c;
	struct vr_fleet_credit_sample s = { .rss_bytes = 2 * GIB,
					    .share_bytes = GIB,
					    .share_window_us = S };

	vr_fleet_credit_init(&c);
	vr_fleet_credit_update(&c, 0, &s);
	/* The daemon stalled for an hour: that is not an hour of grants, and
	 * the windows in between are empty (no judgement). */
	cr_assert_not(vr_fleet_credit_update(&c, 3600 * S, &s));
	cr_assert_eq(c.credit_permille, FULL);
	cr_assert_eq(c.judgements, 0);
}

/* An agent whose session was down for 10 s: what it reclaimed meanwhile is
 * counted when it is back; one that starts again counts from 0, not a
 * counter gone back by gigabytes. */
static struct profile_point agent_away(int64_t t)
{
	struct profile_point p = { .rss_bytes = 2 * GIB - (uint64_t)t * MIB,
				   .agent_known = t < 10 || t >= 20,
				   .reclaimed_bytes = (uint64_t)t * 4 * MIB };

	if (t >= 25) /* restarted at 25 s */
		p.reclaimed_bytes = (uint64_t)(t - 25) * 4 * MIB;
	return p;
}

Test(fleet_credit, counters_across_an_agent_away_or_restarted)
{
	struct vr_fleet_credit c;

	vr_fleet_credit_init(&c);
	play(&c, 0, 31, 32, agent_away, NULL);
	cr_assert_eq(c.judgements, 1);
	/* All but the newest window (0..19 s): 20 s of 4 MiB/s, the 10 s away
	 * included. */
	cr_assert_eq(c.claimed_bytes, 80 * MIB, "got %" G_GUINT64_FORMAT " MiB",
		     c.claimed_bytes / MIB);
	play(&c, 31, 10, 32, agent_away, NULL);
	/* 10..39 s but the newest: the growth seen from 10 to 30 s (the last
	 * sample of a window closes it), less the second of the restart. */
	cr_assert_eq(c.claimed_bytes, 80 * MIB, "got %" G_GUINT64_FORMAT " MiB",
		     c.claimed_bytes / MIB);
	cr_assert_eq(c.credit_permille, FULL);
}

/* ------------------------------------------------------------------------- */
/* What a domain may offer                                                   */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_credit_offer, .description = "vr_fleet_credit_offer_bound(), _bound_offer()");

Test(fleet_credit_offer, the_rss_less_the_resident_free_memory)
{
	/* 300 MiB resident; the guest has 500 MiB free, 450 of it reported. */
	cr_assert_eq(vr_fleet_credit_offer_bound(300 * MIB, true, 500 * MIB, 450 * MIB), 250 * MIB);
	cr_assert_eq(vr_fleet_credit_offer_bound(300 * MIB, false, 500 * MIB, 0), 300 * MIB,
		     "no guest numbers: the RSS");
	cr_assert_eq(vr_fleet_credit_offer_bound(300 * MIB, true, 0, 0), 300 * MIB,
		     "MemFree 0 (a liar): no more than the RSS");
	cr_assert_eq(vr_fleet_credit_offer_bound(300 * MIB, true, 10 * MIB, 20 * MIB), 300 * MIB,
		     "more reportable than free: nothing resident");
	cr_assert_eq(vr_fleet_credit_offer_bound(100 * MIB, true, 400 * MIB, 0), 0,
		     "more free than resident: nothing");
}

Test(fleet_credit_offer, the_least_cold_bytes_go_first)
{
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };

	hist[VR_MAX_SCORE] = 100 * MIB;
	hist[50] = 30 * MIB;
	hist[10] = 20 * MIB;
	cr_assert_eq(vr_fleet_credit_bound_offer(hist, 500 * MIB), 0, "within the bound");
	cr_assert_eq(vr_fleet_credit_bound_offer(hist, 110 * MIB), 40 * MIB);
	cr_assert_eq(hist[10], 0);
	cr_assert_eq(hist[50], 10 * MIB);
	cr_assert_eq(hist[VR_MAX_SCORE], 100 * MIB, "the coldest stay");
	cr_assert_eq(vr_fleet_credit_bound_offer(hist, 0), 110 * MIB);
	cr_assert_eq(hist[VR_MAX_SCORE], 0);
}

/* ------------------------------------------------------------------------- */
/* The fleet quota with credit                                               */
/* ------------------------------------------------------------------------- */

TestSuite(fleet_distribute_credit, .description = "vr_fleet_distribute() with credit");

static void distribute_ok(const struct vr_fleet_domain *d, size_t nr, uint64_t quota,
			  uint64_t *shares)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_fleet_distribute(d, nr, quota, shares, &err), "distribute failed: %s",
		  err ? err->message : "?");
}

/*
 *   domain  priority  offer (score)    credit   quota 80 MiB
 *   honest  50        100 MiB (99)     1.000    first walk: all it offers
 *   liar    50        100 MiB (99)     0.125    first walk: up to 10 MiB
 *
 * Both offer at the same score: the threshold splits 80 MiB in proportion
 * to what each may give there, 100:10.
 */
Test(fleet_distribute_credit, a_domain_gets_at_most_its_credits_part_first)
{
	struct vr_fleet_domain d[2] = {
		{ .name = "honest",
		  .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [99] = 100 * MIB },
		  .eligible = true,
		  .credit_permille = FULL },
		{ .name = "liar",
		  .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [99] = 100 * MIB },
		  .eligible = true,
		  .credit_permille = FLOOR },
	};
	uint64_t shares[2];

	distribute_ok(d, 2, 80 * MIB, shares);
	cr_assert_eq(shares[0] + shares[1], 80 * MIB, "the whole quota is shared");
	cr_assert_leq(shares[1], 10 * MIB,
		      "the liar: at most 1/8 of 80 MiB, got %" G_GUINT64_FORMAT, shares[1]);
	cr_assert_eq(shares[0], 80 * MIB * 10 / 11 + 1,
		     "the honest domain: 10/11 (and the rounding's byte), got %" G_GUINT64_FORMAT,
		     shares[0]);
}

/* What the others cannot take comes back to the domain of little credit. */
Test(fleet_distribute_credit, the_rest_goes_to_whoever_can_still_give)
{
	struct vr_fleet_domain d[2] = {
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [80] = 30 * MIB },
		  .eligible = true,
		  .credit_permille = FULL },
		{ .priority = 50,
		  .rss_bytes = GIB,
		  .hist_bytes = { [99] = 100 * MIB, [60] = 100 * MIB },
		  .eligible = true,
		  .credit_permille = FLOOR },
	};
	uint64_t shares[2];

	distribute_ok(d, 2, 120 * MIB, shares);
	cr_assert_eq(shares[0], 30 * MIB, "all the honest domain offers");
	cr_assert_eq(shares[1], 90 * MIB, "the rest of the quota, got %" G_GUINT64_FORMAT " MiB",
		     shares[1] / MIB);
	distribute_ok(d, 2, GIB, shares);
	cr_assert_eq(shares[1], 200 * MIB, "no more than it offers, whatever its credit");
}

/* Full credit everywhere, or none anywhere: the shares as without credit. */
Test(fleet_distribute_credit, equal_full_or_zero_credit_changes_nothing)
{
	struct vr_fleet_domain d[3];
	uint64_t full[3], zero[3];

	for (int i = 0; i < 3; i++) {
		d[i] = (struct vr_fleet_domain){ .priority = (uint32_t)(20 + 30 * i),
						 .rss_bytes = GIB,
						 .guaranteed_bytes = 900 * MIB,
						 .eligible = true,
						 .credit_permille = FULL };
		d[i].hist_bytes[90] = 70 * MIB;
		d[i].hist_bytes[70] = 33 * MIB + (uint64_t)i;
	}
	distribute_ok(d, 3, 150 * MIB + 7, full);
	for (int i = 0; i < 3; i++)
		d[i].credit_permille = 0;
	distribute_ok(d, 3, 150 * MIB + 7, zero);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(full[i], zero[i],
			     "domain %d: %" G_GUINT64_FORMAT " against %" G_GUINT64_FORMAT, i,
			     full[i], zero[i]);
}

/*
 * Issue 16's capture, closed loop: a liar (its agent calls 4 GiB cold, its
 * RSS never falls) and an honest domain (1 GiB cold, a bit less cold; it
 * gives back 1/16 of its share), a 64 MiB fleet quota per 1 s window.
 * Without credit the liar takes the whole quota for ever. With it, the
 * liar's credit falls to the floor and the honest domain gets 7/8 of the
 * quota.
 */
Test(fleet_distribute_credit, a_liar_loses_the_fleet_quota_to_the_honest_domain)
{
	struct vr_fleet_domain d[2] = {
		{ .name = "liar", .priority = 50, .rss_bytes = 4 * GIB, .eligible = true },
		{ .name = "honest", .priority = 50, .rss_bytes = 2 * GIB, .eligible = true },
	};
	struct vr_fleet_credit credit[2];
	uint64_t shares[2] = { 0, 0 };
	uint64_t first_liar = 0, first_honest = 0;
	uint64_t reclaimed[2] = { 0, 0 };

	d[0].hist_bytes[99] = 4 * GIB;
	d[1].hist_bytes[80] = GIB;
	vr_fleet_credit_init(&credit[0]);
	vr_fleet_credit_init(&credit[1]);
	for (int64_t t = 0; t < 120; t++) {
		/* What the last shares bought: nothing from the liar, which
		 * says it reclaimed all of its share; the honest domain says
		 * it reclaimed 1/8 and gives half of that back. */
		d[1].rss_bytes -= shares[1] / 16;
		reclaimed[0] += shares[0];
		reclaimed[1] += shares[1] / 8;
		for (int i = 0; i < 2; i++) {
			struct vr_fleet_credit_sample s = { .rss_bytes = d[i].rss_bytes,
							    .share_bytes = shares[i],
							    .share_window_us = S,
							    .agent_known = true,
							    .reclaimed_bytes = reclaimed[i] };

			vr_fleet_credit_update(&credit[i], t * S, &s);
			d[i].credit_permille = credit[i].credit_permille;
		}
		distribute_ok(d, 2, 64 * MIB, shares);
		if (t == 0) {
			first_liar = shares[0];
			first_honest = shares[1];
		}
	}
	cr_assert_eq(first_liar, 64 * MIB, "at first the liar takes the whole quota");
	cr_assert_eq(first_honest, 0, "and the honest domain gets nothing");
	cr_assert_eq(credit[0].credit_permille, FLOOR, "the liar's credit: %u",
		     credit[0].credit_permille);
	cr_assert_eq(credit[1].credit_permille, FULL, "the honest domain's credit: %u",
		     credit[1].credit_permille);
	cr_assert_eq(shares[0], 8 * MIB, "the liar: 1/8 of the quota, got %" G_GUINT64_FORMAT,
		     shares[0]);
	cr_assert_eq(shares[1], 56 * MIB, "the honest domain: the rest, got %" G_GUINT64_FORMAT,
		     shares[1]);
}

/*
 * tests/e2e/libvirt-fleet's step 1, closed loop: the low-priority domain
 * (30) is the honest slow TCG guest above, the high-priority one (70)
 * offers as much, a 32 MiB quota per 1 s window. The first signal (the RSS
 * against 1/128 of the share over 30 s) cut the low-priority domain in its
 * flat 33 s and gave its share to the high-priority one: the priorities
 * turned around. Here the low-priority domain keeps the whole quota while
 * it reclaims.
 */
Test(fleet_distribute_credit, an_honest_slow_guest_keeps_its_place_in_line)
{
	struct vr_fleet_domain d[2] = {
		{ .name = "lo", .priority = 30, .rss_bytes = 480 * MIB, .eligible = true },
		{ .name = "hi", .priority = 70, .rss_bytes = 480 * MIB, .eligible = true },
	};
	struct vr_fleet_credit credit[2];
	uint64_t shares[2] = { 0, 0 };

	d[0].hist_bytes[90] = 200 * MIB;
	d[1].hist_bytes[90] = 200 * MIB;
	vr_fleet_credit_init(&credit[0]);
	vr_fleet_credit_init(&credit[1]);
	for (int64_t t = 0; t < 110; t++) {
		struct profile_point p = honest_tcg(t);
		struct vr_fleet_credit_sample s[2] = {
			{ .rss_bytes = p.rss_bytes,
			  .share_bytes = shares[0],
			  .share_window_us = S,
			  .agent_known = true,
			  .reclaimed_bytes = p.reclaimed_bytes },
			{ .rss_bytes = 480 * MIB,
			  .share_bytes = shares[1],
			  .share_window_us = S,
			  .agent_known = true },
		};

		for (int i = 0; i < 2; i++) {
			vr_fleet_credit_update(&credit[i], t * S, &s[i]);
			d[i].credit_permille = credit[i].credit_permille;
		}
		distribute_ok(d, 2, 32 * MIB, shares);
		cr_assert_eq(shares[0], 32 * MIB,
			     "t=%d s: lo's share %" G_GUINT64_FORMAT " (credit %u)", (int)t,
			     shares[0], credit[0].credit_permille);
		cr_assert_eq(shares[1], 0, "t=%d s: hi's share %" G_GUINT64_FORMAT, (int)t,
			     shares[1]);
	}
	cr_assert_geq(credit[0].judgements, 7);
}

TestSuite(fleet_report_interval, .description = "vr_fleet_report_interval_ms()");

/* A report per domain every tick up to VR_FLEET_REPORTS_PER_TICK domains. */
Test(fleet_report_interval, a_small_fleet_reports_every_tick)
{
	const unsigned int sizes[] = { 0, 1, 10, 100 };

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		cr_assert_eq(vr_fleet_report_interval_ms(1000, sizes[i]), 1000, "%u domains",
			     sizes[i]);
		cr_assert_eq(vr_fleet_report_interval_ms(250, sizes[i]), 250, "%u domains",
			     sizes[i]);
	}
	cr_assert_eq(VR_FLEET_REPORTS_PER_TICK, 100);
}

/* Beyond, the fewest doubled ticks that keep the reports per tick within
 * the budget, up to the cap. */
Test(fleet_report_interval, a_large_fleet_reports_less_often)
{
	const struct {
		unsigned int domains;
		uint64_t tick_ms, want_ms;
	} cases[] = {
		{ 101, 1000, 2000 },	{ 200, 1000, 2000 }, { 201, 1000, 4000 },
		{ 400, 1000, 4000 },	{ 401, 1000, 5000 }, { 1000, 1000, 5000 },
		{ 100000, 1000, 5000 }, { 1000, 250, 4000 }, { 1000, 500, 5000 },
		{ 300, 100, 400 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t got = vr_fleet_report_interval_ms(cases[i].tick_ms, cases[i].domains);

		cr_assert_eq(got, cases[i].want_ms, "%u domains, tick %" PRIu64 " ms: %" PRIu64,
			     cases[i].domains, cases[i].tick_ms, got);
		/* The budget holds, or the cap was hit. */
		cr_assert(got >= VR_FLEET_REPORT_INTERVAL_MAX_MS ||
				  (uint64_t)cases[i].domains * cases[i].tick_ms <=
					  (uint64_t)VR_FLEET_REPORTS_PER_TICK * got,
			  "%u domains: %" PRIu64 " ms", cases[i].domains, got);
	}
	cr_assert_eq(VR_FLEET_REPORT_INTERVAL_MAX_MS, 5000);
}

/* Never shorter than the tick, always within what the protocol allows. */
Test(fleet_report_interval, bounded)
{
	cr_assert_eq(vr_fleet_report_interval_ms(10000, 1000), 10000, "a long tick stays");
	cr_assert_eq(vr_fleet_report_interval_ms(50, 1), VR_PROTO_REPORT_INTERVAL_MIN_MS);
	cr_assert_eq(vr_fleet_report_interval_ms(0, 1), VR_PROTO_REPORT_INTERVAL_MIN_MS);
	cr_assert_eq(vr_fleet_report_interval_ms(G_MAXUINT64, 5000),
		     VR_PROTO_REPORT_INTERVAL_MAX_MS);
	cr_assert_eq(vr_fleet_report_interval_ms(7200000, UINT32_MAX),
		     VR_PROTO_REPORT_INTERVAL_MAX_MS);
}

/* A domain's status is read as often as its agent reports. */
Test(fleet_report_interval, status_read_as_often_as_reports)
{
	const struct {
		unsigned int domains;
		uint64_t tick_ms;
		unsigned int want;
	} cases[] = {
		{ 1, 1000, 1 },	   { 100, 1000, 1 },  { 101, 1000, 2 },	  { 300, 1000, 4 },
		{ 1000, 1000, 5 }, { 1000, 250, 16 }, { 1000, 10000, 1 }, { 1000, 0, 100 },
		{ 10, 50, 1 },	   { 200, 50, 2 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		unsigned int got = vr_fleet_status_period_ticks(cases[i].tick_ms, cases[i].domains);

		cr_assert_eq(got, cases[i].want, "%u domains, tick %" PRIu64 " ms: %u",
			     cases[i].domains, cases[i].tick_ms, got);
	}
}
