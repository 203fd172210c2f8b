/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the fleet credit (common/fleet-credit.c) and of the fleet
 * quota shared with it (vr_fleet_distribute()): a domain whose agent claims
 * cold memory and whose RSS does not fall loses its share to the domains
 * that give back (issue 16).
 *
 * Pure: the tests play the daemon's tick (1 s) with a fleet quota window of
 * 1 s; sizes in MiB, times in us.
 */
#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "fleet-credit.h"
#include "fleet-quota.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define S   1000000LL /* us per s */

#define FULL  VR_FLEET_CREDIT_FULL_PERMILLE
#define FLOOR VR_FLEET_CREDIT_FLOOR_PERMILLE

/* A domain's credit after @seconds ticks of 1 s holding @share_mib per 1 s
 * window, its RSS from @rss_at(t). Records the credit after each second. */
static void play(struct vr_fleet_credit *c, int64_t from_s, int64_t seconds, uint64_t share_mib,
		 uint64_t (*rss_at)(int64_t t_s), uint32_t *credit_at)
{
	for (int64_t t = from_s; t < from_s + seconds; t++) {
		vr_fleet_credit_update(c, t * S, rss_at(t), share_mib * MIB, S);
		if (credit_at)
			credit_at[t - from_s] = c->credit_permille;
	}
}

static uint64_t rss_flat(int64_t t)
{
	(void)t;
	return 2 * GIB;
}

/* An honest guest at a 32 MiB/s share: 1 MiB of RSS back per second (3%). */
static uint64_t rss_falls(int64_t t)
{
	return 2 * GIB - (uint64_t)t * MIB;
}

TestSuite(fleet_credit, .description = "vr_fleet_credit_update()");

/*
 * The liar: a 32 MiB/s share, its RSS flat. The first judgement is 30 s
 * after its first grant (its oldest window must have had one), then one a
 * window:
 *
 *   t (s)    0..29   30    40    50 ...
 *   credit   1.000  0.500 0.250 0.125 (the floor, and no lower)
 */
Test(fleet_credit, a_domain_that_releases_nothing_falls_to_the_floor_in_five_windows)
{
	struct vr_fleet_credit c;
	uint32_t credit[90];

	vr_fleet_credit_init(&c);
	cr_assert_eq(c.credit_permille, FULL, "a new domain has full credit");
	play(&c, 0, 90, 32, rss_flat, credit);
	cr_assert_eq(credit[29], FULL, "not judged before 30 s: got %u", credit[29]);
	cr_assert_eq(credit[30], 500, "halved at 30 s: got %u", credit[30]);
	cr_assert_eq(credit[40], 250, "halved at 40 s: got %u", credit[40]);
	cr_assert_eq(credit[50], FLOOR, "at the floor after 5 windows (50 s): got %u", credit[50]);
	cr_assert_eq(credit[89], FLOOR, "never below the floor: got %u", credit[89]);
	cr_assert_eq(c.released_bytes, 0);
	cr_assert_geq(c.granted_bytes, 30 * 32 * MIB - 32 * MIB,
		      "the horizon granted 30 s of 32 MiB, got %" G_GUINT64_FORMAT " MiB",
		      c.granted_bytes / MIB);
	cr_assert_eq(c.failed, c.judgements, "every judgement failed");
}

Test(fleet_credit, a_domain_that_gives_back_keeps_full_credit)
{
	struct vr_fleet_credit c;
	uint32_t credit[120];

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 32, rss_falls, credit);
	for (int t = 0; t < 120; t++)
		cr_assert_eq(credit[t], FULL, "t=%d s: expected full credit, got %u", t, credit[t]);
	cr_assert_geq(c.judgements, 8, "judged every window from 30 s");
	cr_assert_eq(c.failed, 0);
	cr_assert_geq(c.released_bytes, 29 * MIB);
}

/* The release shows late (DAMON's minimum age, free page reporting): nothing
 * for the first 15 s, then 2 MiB/s. */
static uint64_t rss_falls_late(int64_t t)
{
	return t < 15 ? 2 * GIB : 2 * GIB - (uint64_t)(t - 15) * 2 * MIB;
}

Test(fleet_credit, a_late_release_is_not_held_against_it)
{
	struct vr_fleet_credit c;

	vr_fleet_credit_init(&c);
	play(&c, 0, 60, 32, rss_falls_late, NULL);
	cr_assert_eq(c.credit_permille, FULL, "got %u", c.credit_permille);
}

/* A liar for a minute (at the floor), then it gives back: full credit again
 * three windows later (doubling each window). */
static uint64_t rss_gives_after_60(int64_t t)
{
	return t < 60 ? 2 * GIB : 2 * GIB - (uint64_t)(t - 60) * 4 * MIB;
}

Test(fleet_credit, the_credit_comes_back_when_it_gives_back)
{
	struct vr_fleet_credit c;
	uint32_t credit[120];

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 32, rss_gives_after_60, credit);
	cr_assert_eq(credit[59], FLOOR, "got %u", credit[59]);
	cr_assert_eq(credit[60], FLOOR, "the release is not seen yet: %u", credit[60]);
	cr_assert_eq(credit[70], 250, "doubled at 70 s: got %u", credit[70]);
	cr_assert_eq(credit[80], 500, "got %u", credit[80]);
	cr_assert_eq(credit[90], FULL, "got %u", credit[90]);
}

/* An RSS that grows while the domain holds a share: its reclaim is undone
 * (the guest touches the memory back in) or it gives nothing. */
static uint64_t rss_grows(int64_t t)
{
	return GIB + (uint64_t)t * 8 * MIB;
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

	vr_fleet_credit_init(&c);
	play(&c, 0, 120, 0, rss_flat, NULL);
	cr_assert_eq(c.judgements, 0, "no grant, no judgement");
	cr_assert_eq(c.credit_permille, FULL);
	/* 30 s of 256 KiB/s: 7.5 MiB, under VR_FLEET_CREDIT_MIN_GRANT_BYTES. */
	for (int64_t t = 120; t < 240; t++)
		vr_fleet_credit_update(&c, t * S, 2 * GIB, 256 * 1024, S);
	cr_assert_eq(c.judgements, 0, "too small a grant to judge");
	cr_assert_eq(c.credit_permille, FULL);
}

Test(fleet_credit, a_clock_that_goes_back_forgets_the_windows_not_the_credit)
{
	struct vr_fleet_credit c;

	vr_fleet_credit_init(&c);
	play(&c, 100, 60, 32, rss_flat, NULL);
	cr_assert_eq(c.credit_permille, FLOOR);
	vr_fleet_credit_update(&c, 5 * S, 2 * GIB, 32 * MIB, S);
	cr_assert_eq(c.credit_permille, FLOOR, "the credit stays");
	/* 29 s later nothing is judged yet: the windows started over. */
	uint64_t judged = c.judgements;
	for (int64_t t = 6; t < 35; t++)
		vr_fleet_credit_update(&c, t * S, 2 * GIB - (uint64_t)t * MIB, 32 * MIB, S);
	cr_assert_eq(c.judgements, judged, "no judgement before the horizon is full again");
}

Test(fleet_credit, a_long_gap_grants_at_most_one_window)
{
	struct vr_fleet_credit c;

	vr_fleet_credit_init(&c);
	vr_fleet_credit_update(&c, 0, 2 * GIB, GIB, S);
	/* The daemon stalled for an hour: that is not an hour of grants, and
	 * the windows in between are empty (no judgement). */
	cr_assert_not(vr_fleet_credit_update(&c, 3600 * S, 2 * GIB, GIB, S));
	cr_assert_eq(c.credit_permille, FULL);
	cr_assert_eq(c.judgements, 0);
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

	d[0].hist_bytes[99] = 4 * GIB;
	d[1].hist_bytes[80] = GIB;
	vr_fleet_credit_init(&credit[0]);
	vr_fleet_credit_init(&credit[1]);
	for (int64_t t = 0; t < 120; t++) {
		/* What the last shares bought: nothing from the liar. */
		d[1].rss_bytes -= shares[1] / 16;
		for (int i = 0; i < 2; i++) {
			vr_fleet_credit_update(&credit[i], t * S, d[i].rss_bytes, shares[i], S);
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
