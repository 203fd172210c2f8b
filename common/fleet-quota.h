/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fleet quota: how many bytes each domain gives in a window when the
 * host needs memory (ARCHITECTURE.md, data flow 3).
 *
 * Two pure steps, no I/O and no clock:
 *
 * 1. vr_fleet_cold_histogram(): from a guest agent's region picture (untrusted:
 *    validated and bounded) and the domain's pageout scheme, the bytes the
 *    scheme would select per cold score (SEMANTICS.md §2.2), 0..VR_MAX_SCORE.
 * 2. vr_fleet_distribute(): DAMOS prioritization across domains. The fleet
 *    quota of the window goes to the coldest eligible bytes fleet-wide, with
 *    each domain's priority moving its scores down, never taking a domain
 *    below its guaranteed memory.
 *
 * The daemon then hands each domain its share as the quota of the agent's
 * scheme for the window; the agent picks the regions itself.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor.h"
#include "policy.h"
#include "scheme.h"

#define VR_FLEET_ERROR (vr_fleet_error_quark())
GQuark vr_fleet_error_quark(void);

/**
 * enum vr_fleet_error - error codes in the VR_FLEET_ERROR domain.
 * @VR_FLEET_ERROR_PICTURE: a guest's cold histogram cannot be true (more bytes
 *	than the guest has); the message names the bucket or the sum. (A region
 *	picture's rules are vr_picture_check()'s, VR_PICTURE_ERROR.)
 * @VR_FLEET_ERROR_INVALID: the caller's data is out of range (a priority above
 *	VR_FLEET_MAX_PRIORITY, a scheme without a cold score).
 */
enum vr_fleet_error {
	VR_FLEET_ERROR_PICTURE,
	VR_FLEET_ERROR_INVALID,
};

/* Priorities go from 0 (gives first) to this (gives last). */
#define VR_FLEET_MAX_PRIORITY 100U

/* Adjusted scores go from 0 to this: VR_MAX_SCORE + VR_FLEET_MAX_PRIORITY. */
#define VR_FLEET_MAX_ADJUSTED_SCORE (VR_MAX_SCORE + VR_FLEET_MAX_PRIORITY)

struct vr_picture_region;

/**
 * vr_fleet_region_score() - does @scheme select the picture region @region,
 * and with which cold score?
 * @region:	one region of a picture that passed vr_picture_check().
 * @attrs:	the picture's intervals (sample_interval_us, aggr_interval_us;
 *		the other fields are not read).
 * @scheme:	a pageout or cold scheme: its access pattern selects
 *		(vr_access_pattern_match()), its quota weights score
 *		(vr_cold_score()). Borrowed.
 * @score:	out, when selected: the cold score, 0..VR_MAX_SCORE.
 *
 * The one selection rule of a picture under a scheme, shared by
 * vr_fleet_cold_histogram() and vr_pageout_plan() so that both see the same
 * bytes. Pure.
 *
 * Return: TRUE with *@score when the pattern selects the region; FALSE
 * (*@score untouched) otherwise.
 */
gboolean vr_fleet_region_score(const struct vr_picture_region *region,
			       const struct vr_monitor_attrs *attrs, const struct vr_scheme *scheme,
			       uint32_t *score);

/**
 * vr_fleet_cold_histogram() - the eligible cold bytes of one domain, per cold
 * score.
 * @regions:		the agent's picture: struct vr_picture_region. Untrusted:
 *			checked with vr_picture_check() (common/picture.h).
 * @sample_interval_us:	the picture's sampling interval, us, > 0.
 * @aggr_interval_us:	its aggregation interval, us (the bounds of
 *			vr_picture_check()). The regions' nr_accesses count
 *			sampling intervals of it and their age counts
 *			aggregation intervals of it.
 * @scheme:		the domain's pageout (or cold) scheme: its access
 *			pattern selects the regions, its quota weights score
 *			them (vr_cold_score()). Borrowed.
 * @guest_memory_bytes:	the guest's memory size, bytes: the picture may cover
 *			at most this many bytes.
 * @hist_bytes:		out, VR_MAX_SCORE + 1 entries: bytes of the selected
 *			regions per cold score. Zeroed first; left all zero on
 *			error.
 *
 * Only the regions @scheme's pattern selects count (the bytes the agent could
 * page out); the others (hot, too young, wrong size) are not offered to the
 * fleet. Pure.
 *
 * Return: FALSE with @error: VR_PICTURE_ERROR (naming the rule, and the
 * region index and values) when the picture breaks a rule of
 * vr_picture_check() with the bound @guest_memory_bytes (a guest claiming
 * memory it does not have among them); VR_FLEET_ERROR_INVALID when
 * @scheme's action has no cold score.
 */
gboolean vr_fleet_cold_histogram(const GArray *regions, uint64_t sample_interval_us,
				 uint64_t aggr_interval_us, const struct vr_scheme *scheme,
				 uint64_t guest_memory_bytes, uint64_t *hist_bytes, GError **error);

/**
 * vr_fleet_pageout_scheme() - the scheme whose cold histogram the fleet
 * counts: @policy's first pageout scheme (borrowed), NULL when it has none.
 * The host (hostd/manager.c) and the agent (get-cold-histogram) both pick it
 * with this, so they use one rule.
 */
const struct vr_scheme *vr_fleet_pageout_scheme(const struct vr_policy *policy);

/**
 * vr_fleet_check_cold_histogram() - whether a histogram a guest's agent
 * computed (get-cold-histogram; untrusted) can be true of a guest of
 * @guest_memory_bytes: each of its VR_MAX_SCORE + 1 buckets and their sum at
 * most that (no overflow: the sum saturates).
 * Return: TRUE, or FALSE with @error (VR_FLEET_ERROR_PICTURE) naming the
 * bucket or the sum and the guest's size. Pure.
 */
gboolean vr_fleet_check_cold_histogram(const uint64_t *hist_bytes, uint64_t guest_memory_bytes,
				       GError **error);

/*
 * The shortest and longest time a domain's offer is held, us
 * (vr_fleet_offer_hold_us()).
 */
#define VR_FLEET_OFFER_HOLD_MIN_US ((uint64_t)30 * 1000 * 1000)
#define VR_FLEET_OFFER_HOLD_MAX_US ((uint64_t)600 * 1000 * 1000)

/* The hold is kept in this many slots of a hold's eighth each. */
#define VR_FLEET_OFFER_HOLD_SLOTS 8

/**
 * struct vr_fleet_offer_slot - the largest picture of one slot of time.
 * @hist_bytes:	its histogram, bytes per cold score.
 * @total_bytes: its sum, saturating.
 * @slot:	the slot's number: monotonic time / slot length.
 * @used:	whether the slot holds a picture.
 */
struct vr_fleet_offer_slot {
	uint64_t hist_bytes[VR_MAX_SCORE + 1];
	uint64_t total_bytes;
	int64_t slot;
	bool used;
};

/**
 * struct vr_fleet_offer_hold - the largest offer a domain showed lately.
 * @slots:	the largest picture of each of the last
 *		VR_FLEET_OFFER_HOLD_SLOTS slots, a ring indexed by slot number.
 *
 * Why: a DAMON picture loses its cold bytes in bursts that say nothing of the
 * guest's memory. DAMOS resets the age of every region it applied its action
 * to, whether or not anything was freed (free memory is tried and stays), and
 * DAMON resets the age of a region whose access count changed by more than
 * its merge threshold, which sampling noise does. Right after a domain's agent
 * used its share, its picture shows few bytes old enough: read as it is, the
 * fleet would ask the next domain in line, the important one, each time the
 * less important one did its job, and priorities would hardly matter (seen in
 * tests/e2e/libvirt-fleet: the domain of priority 70 gave 150 MiB, that of
 * priority 30 gave 44). The regions come back after the scheme's minimum age,
 * so a domain offers the largest picture it showed within the hold. Plain
 * data, no pointers: embed it in the domain's state; all zero is empty.
 */
struct vr_fleet_offer_hold {
	struct vr_fleet_offer_slot slots[VR_FLEET_OFFER_HOLD_SLOTS];
};

/**
 * vr_fleet_offer_hold_us() - how long a domain's offer under @scheme is held,
 * us: twice the scheme's minimum age (a region DAMOS tried is eligible again
 * after one), within VR_FLEET_OFFER_HOLD_MIN_US..VR_FLEET_OFFER_HOLD_MAX_US.
 * @scheme:	the domain's pageout scheme; borrowed.
 */
uint64_t vr_fleet_offer_hold_us(const struct vr_scheme *scheme);

/**
 * vr_fleet_offer_hold_update() - a domain's offer this window: the largest of
 * its pictures within the hold.
 * @hold:	the domain's hold; updated.
 * @hist_bytes:	in: this window's histogram, VR_MAX_SCORE + 1 entries;
 *		out: the offer, the histogram of largest total among this
 *		window's and those @hold keeps from the last @hold_us (ties:
 *		the newest).
 * @now_us:	monotonic time of this window, us, >= 0.
 * @hold_us:	how long an offer is held, us (vr_fleet_offer_hold_us()).
 *
 * Time is cut in slots of @hold_us / VR_FLEET_OFFER_HOLD_SLOTS; @hold keeps
 * the largest picture of each of the last VR_FLEET_OFFER_HOLD_SLOTS slots,
 * this window's included, so a picture is held from @hold_us less a slot to
 * @hold_us. A time before one already seen (a clock going back) empties the
 * hold first. The offer is always a picture the domain really showed, never a
 * mix. Pure; O(VR_FLEET_OFFER_HOLD_SLOTS * scores).
 *
 * Return: TRUE when the offer is a held picture, FALSE when it is this
 * window's.
 */
gboolean vr_fleet_offer_hold_update(struct vr_fleet_offer_hold *hold, uint64_t *hist_bytes,
				    int64_t now_us, uint64_t hold_us);

/**
 * vr_fleet_offer_hold_reset() - forget what @hold keeps: the domain's next
 * histogram is its offer. For a domain that stopped offering (paused, its
 * agent gone, its picture refused).
 */
void vr_fleet_offer_hold_reset(struct vr_fleet_offer_hold *hold);

/**
 * struct vr_fleet_domain - one domain as the fleet quota sees it in a window.
 * @name:		for error messages; borrowed, may be NULL.
 * @priority:		0..VR_FLEET_MAX_PRIORITY; higher = more important =
 *			gives later (see vr_fleet_adjusted_score()).
 * @rss_bytes:		memory the domain holds on the host now, bytes.
 * @guaranteed_bytes:	memory the domain keeps whatever happens, bytes: its
 *			share is at most max(0, @rss_bytes - @guaranteed_bytes).
 * @hist_bytes:		eligible cold bytes per cold score
 *			(vr_fleet_cold_histogram()).
 * @eligible:		false for a domain that cannot give this window
 *			(paused, no agent, no picture yet): its share is 0.
 * @credit_permille:	its fleet credit (struct vr_fleet_credit),
 *			0..VR_FLEET_CREDIT_FULL_PERMILLE (more is read as
 *			full): how much of min(quota, its available bytes) it
 *			is trusted with before the others are served (see
 *			vr_fleet_distribute()). Full for a domain the host
 *			has no reason to doubt.
 */
struct vr_fleet_domain {
	const char *name;
	uint32_t priority;
	uint64_t rss_bytes;
	uint64_t guaranteed_bytes;
	uint64_t hist_bytes[VR_MAX_SCORE + 1];
	bool eligible;
	uint32_t credit_permille;
};

/**
 * vr_fleet_adjusted_score() - where bytes of cold score @score (0..VR_MAX_SCORE)
 * of a domain with @priority (0..VR_FLEET_MAX_PRIORITY) rank fleet-wide:
 * @score + VR_FLEET_MAX_PRIORITY - @priority, 0..VR_FLEET_MAX_ADJUSTED_SCORE.
 * Higher goes first.
 *
 * Why a shift and not a scale (score * (100 - priority) / 100): a shift keeps
 * every domain's own order intact (its coldest bytes still rank above its
 * less cold ones, whatever its priority), which is the order its agent will
 * reclaim in; a scale would fold distinct scores of an important domain into
 * one. With age-only weights the cold score of unused memory grows by about
 * 1.5 per doubling of idle time (SEMANTICS.md §2.2), so one priority point is
 * worth about two-thirds of a doubling: a domain 10 points more important
 * gives a region only once it has been idle about 90 times longer than one of
 * the less important domain. Unused memory the default scheme selects scores
 * about 55..99, so a priority difference of 50 or more orders the domains
 * strictly: the important one gives only what is left.
 */
uint32_t vr_fleet_adjusted_score(uint32_t score, uint32_t priority);

/**
 * vr_fleet_available_bytes() - what @d could give at most this window, bytes:
 * 0 when it is not eligible, otherwise the smaller of its eligible cold bytes
 * (the sum of its histogram, saturating) and max(0, rss - guaranteed).
 */
uint64_t vr_fleet_available_bytes(const struct vr_fleet_domain *d);

/**
 * vr_fleet_distribute() - share @quota_bytes among @nr @domains.
 * @domains:	the domains; borrowed. May be NULL when @nr is 0.
 * @nr:		how many.
 * @quota_bytes: the fleet quota of this window, bytes (0: nothing is taken;
 *		G_MAXUINT64 for no limit).
 * @shares_bytes: out, @nr entries: each domain's share of the window, bytes.
 *		All 0 on error.
 *
 * DAMOS prioritization over the domains' merged histograms: every eligible
 * domain's bytes of cold score s rank at vr_fleet_adjusted_score(s, priority).
 * Walking adjusted scores from the highest down, the fleet takes all bytes of
 * a score while the quota lasts. At the score where the rest of the quota no
 * longer covers them all (the threshold), the rest is split among the domains
 * in proportion to their bytes there (whole bytes, rounding down, the bytes
 * left over by rounding going one each to the largest remainders, ties to the
 * lower index), and the walk stops. A domain never gives more than
 * max(0, rss - guaranteed): once it reaches that it offers nothing more, and
 * what it could not give goes to the next bytes in the walk. Ineligible
 * domains get 0.
 *
 * The fleet credit makes it two walks. In the first, a domain below full
 * credit gives at most credit_permille / 1000 of min(@quota_bytes, its
 * available bytes) (rounded down; a domain of full credit is not limited);
 * what it could not give goes to the next bytes in the walk, so the
 * domains that give back are served first. The second walk, over what the
 * first left of every domain's histogram, shares the rest of the quota as
 * before: a domain with little credit still gets what no one else can take.
 * When every domain has full credit the first walk is the whole
 * distribution, and when every one has 0 the second is: both as without
 * credit.
 *
 * So: the sum of the shares is exactly min(@quota_bytes, the sum of
 * vr_fleet_available_bytes()); each share is at most the domain's available
 * bytes; equal domains get equal shares (to a byte); the result depends only
 * on the inputs and their order. O(nr * adjusted scores).
 *
 * Return: FALSE with @error (VR_FLEET_ERROR_INVALID, naming the domain) when
 * a priority is above VR_FLEET_MAX_PRIORITY.
 */
gboolean vr_fleet_distribute(const struct vr_fleet_domain *domains, size_t nr, uint64_t quota_bytes,
			     uint64_t *shares_bytes, GError **error);
