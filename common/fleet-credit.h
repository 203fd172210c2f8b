/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's fleet credit: how much of the fleet quota it is trusted with,
 * from what it actually gave back (issue 16).
 *
 * A domain's share of the fleet quota comes from its agent's picture, which
 * the guest writes: an agent that calls all its memory cold would get the
 * whole quota and give nothing. The host measures what a share bought: the
 * resident size (RSS) of the domain's QEMU process. Over the recent windows
 * (a horizon) three numbers are compared:
 *
 *  - granted: the share the host gave it, times the time it held it;
 *  - claimed: what its agent says its policy reclaimed (sz_applied plus the
 *    swap cache it released), bounded by granted, counted a window late so
 *    that free page reporting had the time to hand it to the host. Not what
 *    it tried: DAMOS charges what it tries, free memory included, and an
 *    honest TCG guest tried its whole share (791 MiB tried for 30 MiB
 *    reclaimed in one measure) as a liar would say it did;
 *  - released: how far its RSS fell.
 *
 * A domain that claims almost nothing of its grant and whose RSS does not
 * fall is idle, not lying: its share is cut to the floor while it stays so
 * (the others get what it leaves) and its trust is not touched. One that claims too little to be
 * weighed against the RSS's 2 MiB steps is slow: nothing changes. Otherwise
 * it gave back when its RSS fell by a part of what it claimed, over the
 * horizon or, for a slow guest that gives back in bursts, over a longer
 * one: a guest that says it reclaimed X while its RSS does not fall by
 * X / 16 lies. A domain that does not give back loses trust, window after
 * window, down to a floor; one that gives back gets it back.
 * vr_fleet_distribute() serves the domains of full credit first (struct
 * vr_fleet_domain, @credit_permille).
 *
 * Every guest number is bounded by what the host knows before it counts: the
 * claim by the grant; what a domain may offer by its RSS
 * (vr_fleet_credit_offer_bound()).
 *
 * Pure, like the rest of common/: the caller passes the time, the RSS it
 * read, the share it granted and the agent's counter (snapshots in, a
 * credit out).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "scheme.h"

/* Full credit, per-mille: the domain is served as if there were no credit. */
#define VR_FLEET_CREDIT_FULL_PERMILLE 1000U

/*
 * The lowest credit, per-mille: 1/8. A domain at the floor still gets an
 * eighth of what it would get before the others are served, so that it can
 * show it gives back again (a domain with no share shows nothing).
 */
#define VR_FLEET_CREDIT_FLOOR_PERMILLE 125U

/*
 * A credit window, us: 10 s. What a share buys shows in the RSS late: the
 * guest's DAMON pages out over its quota window, free page reporting hands
 * the freed 2 MiB blocks to the host about 2 s after they are free, and a
 * TCG guest pages out a few MiB per second (tests/e2e/libvirt-fleet).
 */
#define VR_FLEET_CREDIT_WINDOW_US ((int64_t)10 * 1000 * 1000)

/*
 * The windows a judgement looks at: 3 (30 s). Its oldest must have had a
 * grant, so what a grant buys has at least two whole windows (20 s) to show
 * in the RSS before the domain is judged on it.
 */
#define VR_FLEET_CREDIT_HORIZON_WINDOWS 3

/*
 * The windows a horizon that failed is judged again over: 9 (90 s). A slow
 * guest gives back in bursts: in tests/e2e/libvirt-fleet an honest TCG
 * guest's RSS stayed flat for 33 s while its agent reclaimed 50 MiB, then
 * fell 6 and 38 MiB within 7 s (its free memory compacted into 2 MiB
 * blocks that free page reporting takes). A liar fails both.
 */
#define VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS 9

/*
 * A domain gives back when the RSS it released over a horizon is at least
 * the bytes it claimed reclaimed in it (all but its newest window) divided
 * by this: 16 (6%). What a guest reclaims reaches the host only as whole
 * free 2 MiB blocks: in tests/e2e/libvirt-fleet an honest TCG guest's RSS
 * fell by 90% of what it reclaimed in its first wave and 12% later, when
 * its free memory was fragmented (the measured figures are in
 * tests/unit/common/test-fleet-credit.c); a liar's does not fall.
 */
#define VR_FLEET_CREDIT_CLAIM_DIVISOR 16U

/*
 * A horizon in which the domain claimed less than its grant divided by this,
 * and its RSS fell by less than VR_FLEET_CREDIT_MIN_CLAIM_BYTES, finds it
 * idle: 256. An honest TCG guest under a loaded host claimed 1.2% of its
 * grant (30 MiB reclaimed over 80 s of 32 MiB/s); one that claims nothing
 * (or sends no counters) is not lying, but its share is wasted. The RSS
 * counts too: in tests/e2e/libvirt-fleet an honest guest's counter said
 * 1.3 MiB in the first 20 s of its grant while its RSS fell 92 MiB (its
 * agent's stats came late).
 */
#define VR_FLEET_CREDIT_IDLE_DIVISOR 256U

/*
 * A claim smaller than this is not weighed against the RSS: 8 MiB (its
 * sixteenth is half a 2 MiB reporting block, and the QEMU's own memory
 * grows by a few MiB a minute). Below it over the long horizon too, the
 * domain is slow: its credit stays.
 */
#define VR_FLEET_CREDIT_MIN_CLAIM_BYTES ((uint64_t)8 << 20)

/*
 * A horizon with fewer granted bytes than this says nothing (no judgement,
 * the credit stays): 16 MiB, eight 2 MiB blocks of free page reporting.
 */
#define VR_FLEET_CREDIT_MIN_GRANT_BYTES ((uint64_t)16 << 20)

/**
 * enum vr_fleet_credit_verdict - what a judgement found.
 * @VR_FLEET_CREDIT_IDLE:	it claimed less than its grant /
 *				VR_FLEET_CREDIT_IDLE_DIVISOR and its RSS did
 *				not fall: its credit is the floor while it is
 *				idle, its trust stays.
 * @VR_FLEET_CREDIT_SLOW:	it claimed too little to be weighed: nothing
 *				changes.
 * @VR_FLEET_CREDIT_GAVE_BACK:	its RSS fell by what it claimed asks: trust
 *				doubles.
 * @VR_FLEET_CREDIT_HELD_BACK:	it did not, over either horizon: trust
 *				halves.
 */
enum vr_fleet_credit_verdict {
	VR_FLEET_CREDIT_IDLE,
	VR_FLEET_CREDIT_SLOW,
	VR_FLEET_CREDIT_GAVE_BACK,
	VR_FLEET_CREDIT_HELD_BACK,
};

/**
 * struct vr_fleet_credit_sample - one observation of a domain.
 * @rss_bytes:		its QEMU process's resident size now, as the host
 *			reads it, bytes.
 * @share_bytes:	the share of the fleet quota it held since the last
 *			observation, bytes per @share_window_us.
 * @share_window_us:	the fleet quota's window, us (0 is read as 1 s).
 * @agent_known:	whether its agent's counter below is known now (a
 *			connected agent sent stats).
 * @reclaimed_bytes:	its agent's counter of bytes its policy reclaimed
 *			(@sz_applied plus @swap_cache_release_bytes of struct
 *			vr_agent_stats), as the guest reports it: cumulative
 *			since the agent started.
 */
struct vr_fleet_credit_sample {
	uint64_t rss_bytes;
	uint64_t share_bytes;
	uint64_t share_window_us;
	bool agent_known;
	uint64_t reclaimed_bytes;
};

/**
 * struct vr_fleet_credit_window - one credit window of a domain.
 * @nr:			the window's number since the credit started.
 * @granted_bytes:	the share granted in it, bytes (saturating).
 * @reclaimed_bytes:	what its agent's reclaimed counter grew by in it,
 *			bytes (saturating; as reported, bounded at judgement).
 * @rss_start_bytes:	the domain's RSS when it started, bytes.
 * @used:		whether the slot holds a window.
 */
struct vr_fleet_credit_window {
	int64_t nr;
	uint64_t granted_bytes;
	uint64_t reclaimed_bytes;
	uint64_t rss_start_bytes;
	bool used;
};

/**
 * struct vr_fleet_credit - one domain's fleet credit.
 * @credit_permille:	the part of its share it is trusted with now,
 *			VR_FLEET_CREDIT_FLOOR_PERMILLE..
 *			VR_FLEET_CREDIT_FULL_PERMILLE: @trust_permille, or the
 *			floor while it is idle.
 * @trust_permille:	what its judgements made of it: halved when it did
 *			not give back, doubled when it did.
 * @verdict:		what the last judgement found (meaningful once
 *			@judgements > 0).
 * @granted_bytes:	bytes granted over the horizon of the last judgement.
 * @claimed_bytes:	bytes its agent claimed reclaimed over it (but its
 *			newest window), bounded by @granted_bytes.
 * @released_bytes:	RSS released over it, bytes (0 when the RSS grew).
 * @long_claimed_bytes, @long_released_bytes: the same over the long horizon
 *			when the last judgement looked at it, else 0.
 * @judgements:		windows judged (idle and slow ones included).
 * @failed:		of @judgements, those in which the domain did not
 *			give back.
 * @idle_judgements:	of @judgements, those that found it idle.
 *
 * Plain data: embed it; set it up with vr_fleet_credit_init().
 */
struct vr_fleet_credit {
	uint32_t credit_permille;
	uint32_t trust_permille;
	enum vr_fleet_credit_verdict verdict;
	uint64_t granted_bytes;
	uint64_t claimed_bytes;
	uint64_t released_bytes;
	uint64_t long_claimed_bytes;
	uint64_t long_released_bytes;
	uint64_t judgements;
	uint64_t failed;
	uint64_t idle_judgements;
	/* private: */
	bool started;
	bool counters_known;
	int64_t origin_us;
	int64_t last_us;
	uint64_t last_reclaimed_bytes;
	struct vr_fleet_credit_window windows[VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS];
};

/** vr_fleet_credit_init() - full credit, nothing seen yet. */
void vr_fleet_credit_init(struct vr_fleet_credit *c);

/**
 * vr_fleet_credit_update() - one observation of a domain.
 * @c:		its credit; updated.
 * @now_us:	monotonic time, us. A time before the last one (a clock that
 *		went back) forgets the windows (the credit stays).
 * @s:		what the host measured and what the agent says now.
 *
 * The time since the last observation (at most a credit window) at
 * @s->share_bytes per @s->share_window_us is granted to the current window,
 * and the growth of the agent's counter since it was last known is added to
 * it (a counter that went back is an agent that started again: counted from
 * 0; the first known value is a baseline). Windows are
 * VR_FLEET_CREDIT_WINDOW_US long from the first observation; when one ends,
 * the last VR_FLEET_CREDIT_HORIZON_WINDOWS windows are judged if the oldest
 * of them had a grant and they granted at least
 * VR_FLEET_CREDIT_MIN_GRANT_BYTES (claimed = min(reclaimed in all but the
 * newest window, granted)):
 *
 *  - claimed < granted / VR_FLEET_CREDIT_IDLE_DIVISOR and its RSS fell by
 *    less than VR_FLEET_CREDIT_MIN_CLAIM_BYTES: idle;
 *    @c->credit_permille is the floor until a horizon finds it busy again;
 *    the trust stays;
 *  - it gave back when claimed >= VR_FLEET_CREDIT_MIN_CLAIM_BYTES and its
 *    RSS fell from the oldest window's start to now by claimed /
 *    VR_FLEET_CREDIT_CLAIM_DIVISOR, or else the same holds over the long
 *    horizon (up to VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS windows back, not
 *    across a gap): its trust doubles (up to full);
 *  - slow when both claims are under VR_FLEET_CREDIT_MIN_CLAIM_BYTES:
 *    nothing changes;
 *  - otherwise it held back: its trust halves (down to the floor).
 *
 * So a domain that claims nothing is at the floor 30 s after its first
 * grant, one that claims reclaim and gives nothing falls to it in three
 * judged windows (30, 40, 50 s); one that gives back gets full credit again
 * within three. Pure; O(long horizon).
 *
 * Return: true when a window was judged (the credit may have changed).
 */
bool vr_fleet_credit_update(struct vr_fleet_credit *c, int64_t now_us,
			    const struct vr_fleet_credit_sample *s);

/**
 * vr_fleet_credit_offer_bound() - the most a domain can give back, bytes:
 * what the host can still get from it.
 * @rss_bytes:		its QEMU process's resident size, bytes (the host's
 *			own measure).
 * @agent_known:	whether the guest's numbers below are known.
 * @mem_free_bytes:	the guest's free memory, bytes, as it says.
 * @reportable_free_bytes: of it, the part in blocks free page reporting
 *			hands to the host, bytes, as it says (already gone
 *			from @rss_bytes, or soon).
 *
 * @rss_bytes less the guest's free memory that is still resident (free
 * minus reportable): reclaiming free memory gives the host nothing. The
 * guest's numbers can only lower the bound below @rss_bytes, so a guest
 * that lies about them (MemFree 0) gets no more than its RSS.
 */
uint64_t vr_fleet_credit_offer_bound(uint64_t rss_bytes, bool agent_known, uint64_t mem_free_bytes,
				     uint64_t reportable_free_bytes);

/**
 * vr_fleet_credit_bound_offer() - cut an offer (a histogram of cold bytes by
 * score, as in struct vr_fleet_domain) to @bound_bytes in all, dropping the
 * least cold bytes first (the coldest are what a share reclaims first).
 * @hist_bytes:	VR_MAX_SCORE + 1 counts, bytes; updated.
 * @bound_bytes: the most the histogram may hold in all, bytes.
 *
 * Return: the bytes cut.
 */
uint64_t vr_fleet_credit_bound_offer(uint64_t *hist_bytes, uint64_t bound_bytes);

/*
 * The reports a fleet's agents send per tick, at most about: 100. A report
 * is one decoded JSON line; a host of up to this many domains gets one from
 * each every tick, a larger fleet asks its agents to report less often.
 */
#define VR_FLEET_REPORTS_PER_TICK 100U

/*
 * The longest report interval a fleet asks of its agents, ms: 5 s, half a
 * credit window (VR_FLEET_CREDIT_WINDOW_US), so the credit still sees a
 * domain's counters at least twice per window. The stats' other consumers
 * (the guest's free memory for the offer's bound and the used fraction)
 * move slowly; the balloon action asks for fresh stats itself each tick.
 */
#define VR_FLEET_REPORT_INTERVAL_MAX_MS ((uint64_t)VR_FLEET_CREDIT_WINDOW_US / 2000)

/**
 * vr_fleet_report_interval_ms() - the report interval the host asks of each
 * agent of a fleet of @domains, ms (set-policy's report_interval_ms).
 * @tick_ms:	the host's tick, ms (> 0).
 * @domains:	the domains of the fleet.
 *
 * Every tick up to VR_FLEET_REPORTS_PER_TICK domains; beyond, every 2, 4,
 * 8... ticks, the fewest that keep the fleet's reports per tick within
 * VR_FLEET_REPORTS_PER_TICK (powers of two: the interval, which goes out
 * with each agent's policy, changes only when the fleet doubles), but never
 * beyond VR_FLEET_REPORT_INTERVAL_MAX_MS unless the tick itself is longer.
 * Always within the protocol's VR_PROTO_REPORT_INTERVAL_MIN_MS..MAX_MS
 * (100 ms..1 h), which the agent checks again. Pure.
 */
uint64_t vr_fleet_report_interval_ms(uint64_t tick_ms, unsigned int domains);

/**
 * vr_fleet_status_period_ticks() - every how many ticks the host reads each
 * domain's QEMU status (its RSS) in a fleet of @domains: as often as the
 * domain's agent reports (vr_fleet_report_interval_ms() over @tick_ms,
 * rounded down), since what the RSS is weighed with (the agent's stats and
 * counters, in the offer's bound and the credit) is as old. 1 (every tick)
 * up to VR_FLEET_REPORTS_PER_TICK domains. Pure.
 * @tick_ms:	the host's tick, ms.
 * @domains:	the domains of the fleet.
 *
 * Return: ticks, >= 1.
 */
unsigned int vr_fleet_status_period_ticks(uint64_t tick_ms, unsigned int domains);
