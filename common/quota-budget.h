/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The quota arithmetic of DAMOS (SEMANTICS.md §2.1) as pure functions on a
 * struct vr_quota: charge windows, the time quota turned into bytes through
 * the measured throughput, the goal tuner's input, and how many bytes the
 * current window may still take.
 *
 * The scheme engine (scheme.c) walks regions with it; a reclaim mechanism
 * without regions (the guest agent's memcg backend, which writes byte counts
 * to memory.reclaim) sizes its writes with the same functions, so both obey
 * one definition of a quota. It sits below the schemes (scheme.h includes
 * it) and calls nothing of theirs. No I/O, no clock: the caller passes the time
 * and the measured durations, and fills the goals' current values before a
 * window starts.
 *
 * A window's life:
 *
 *   if (vr_quota_window_due(q, now_us)) {
 *           q->goals[i].current = ...;            (measured goals)
 *           if (vr_quota_window_start(q, now_us))
 *                   stats.qt_exceeds++;           (the closing one was used up)
 *   }
 *   while (vr_quota_budget_left(q) >= some bytes) {
 *           act, timing it;
 *           vr_quota_charge(q, bytes, ns);
 *   }
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "monitor.h" /* VR_PAGE_SIZE: the effective quota is in whole pages */

/* Throughput assumed before any action was measured, bytes per ms:
 * 4 MiB/ms, DAMON's own assumption (SEMANTICS.md §2.1). */
#define VR_DEFAULT_THROUGHPUT_BPMS (4ULL << 20)

/* The goal tuner's unit: 10000 basis points = the goal is met; the tuner's
 * input is kept in 1/10000 bytes. */
#define VR_GOAL_BP 10000ULL

/**
 * enum vr_goal_metric - what a quota goal measures.
 * @VR_GOAL_USER_INPUT:		a value the user (or a daemon) feeds in.
 * @VR_GOAL_SOME_MEM_PSI_US:	memory pressure stall (PSI "some") in us per
 *				quota window.
 * @VR_GOAL_FREE_MEM_RATE:	free memory per thousand of total.
 * @VR_GOAL_REFAULT_BYTES:	bytes read back after reclaim (workingset
 *				refaults: pages the workload touched again
 *				after they were paged out or dropped) per
 *				quota window: the churn a reclaimer causes,
 *				the brake's second signal beside memory PSI.
 */
enum vr_goal_metric {
	VR_GOAL_USER_INPUT,
	VR_GOAL_SOME_MEM_PSI_US,
	VR_GOAL_FREE_MEM_RATE,
	VR_GOAL_REFAULT_BYTES,
};

/**
 * struct vr_quota_goal - a feedback target for a scheme's quota.
 * @metric:	 what is measured.
 * @target:	 the value to reach (> 0), in the metric's unit.
 * @current:	 the last measured value: for user_input, set by the caller
 *		 through vr_ctx_scheme(); for the others, read from the metric
 *		 provider at the start of each charge window.
 */
struct vr_quota_goal {
	enum vr_goal_metric metric;
	uint64_t target;
	uint64_t current;
};

#define VR_MAX_QUOTA_GOALS 4

/**
 * enum vr_charge_basis - what a quota is charged for a region it acts on.
 * @VR_CHARGE_RESIDENT:	what the action could free in the region: its
 *			resident memory, not yet paged out, as the actuator
 *			counts it (struct vr_actuator_ops.resident). Free,
 *			never touched and paged-out memory costs nothing, so
 *			a window's quota goes to memory that gives something
 *			back. The region's size where the actuator cannot count.
 * @VR_CHARGE_SIZE:	the region's whole size, as DAMOS charges
 *			(SEMANTICS.md §2.1).
 */
enum vr_charge_basis {
	VR_CHARGE_RESIDENT,
	VR_CHARGE_SIZE,
};

/**
 * struct vr_quota - how much a scheme may do per window, and in what order.
 * @ms:			action time allowed per window, in ms; 0 = unlimited.
 * @sz:			bytes allowed per window; 0 = unlimited.
 * @reset_interval_ms:	length of a charge window, in ms (> 0 when a quota is
 *			set).
 * @weight_sz, @weight_nr_accesses, @weight_age: prioritization weights of the
 *			score functions (SEMANTICS.md §2.2); all 0 = every region
 *			scores the same ("without prioritization").
 * @goals, @nr_goals:	quota goals; with goals the feedback tuner sets the
 *			effective size, within @ms's and @sz's limits.
 * @charge:		what a region costs the window (enum vr_charge_basis;
 *			new schemes: VR_CHARGE_RESIDENT).
 *
 * The state below "private" belongs to the engine; it survives a runtime
 * update of the scheme (vr_ctx_set_schemes()).
 */
struct vr_quota {
	uint64_t ms;
	uint64_t sz;
	uint64_t reset_interval_ms;
	uint32_t weight_sz;
	uint32_t weight_nr_accesses;
	uint32_t weight_age;
	struct vr_quota_goal goals[VR_MAX_QUOTA_GOALS];
	guint nr_goals;
	enum vr_charge_basis charge;
	/* private: */
	uint64_t total_charged_sz; /* bytes charged in closed windows */
	uint64_t total_charged_ns; /* time measured over all applications */
	uint64_t esz;		   /* effective size quota of this window */
	uint64_t esz_bp;	   /* goal tuner's input, in 1/10000 bytes */
	uint64_t charged_sz;	   /* bytes charged in this window */
	uint64_t charged_from_us;  /* when this window started */
	bool window_started;
	bool resume_set;      /* a resume point is remembered */
	guint resume_target;  /* its target's index */
	uint64_t resume_addr; /* its address */
	uint32_t min_score;   /* this pass's prioritization threshold */
};

/**
 * vr_quota_is_set() - does @q limit anything (ms, sz or goals)?
 */
bool vr_quota_is_set(const struct vr_quota *q);

/**
 * vr_feedback_next() - the goal tuner: the next effective size input (in
 * 1/10000 bytes) from the last one and @score_bp = current / target in basis
 * points (10000 = met). Below 10000 it grows in proportion to the distance,
 * above it shrinks; at 20000 or more it drops to its minimum (10000).
 */
uint64_t vr_feedback_next(uint64_t last_bp, uint64_t score_bp);

/**
 * vr_quota_throughput_bpms() - the measured action throughput of @q, bytes
 * per ms: total_charged_sz * 1e6 / total_charged_ns, or
 * VR_DEFAULT_THROUGHPUT_BPMS while nothing was measured (total_charged_ns
 * 0). Saturates at UINT64_MAX.
 */
uint64_t vr_quota_throughput_bpms(const struct vr_quota *q);

/**
 * vr_quota_goals_score_bp() - how far @q's goals are from their targets:
 * the highest current / target over the goals, in basis points (10000 =
 * met); 0 without goals. Reads only the goals' current values, which the
 * caller measured.
 */
uint64_t vr_quota_goals_score_bp(const struct vr_quota *q);

/**
 * vr_quota_effective_sz() - the effective size quota (bytes) of a window
 * that starts now, from @q's limits and state: the goal tuner's input
 * (esz_bp / 10000, when @q has goals), capped by ms * throughput (when ms is
 * set) and by sz (when set); rounded down to whole pages and never below one
 * page. Return: 0 when @q sets no quota at all (unlimited).
 */
uint64_t vr_quota_effective_sz(const struct vr_quota *q);

/**
 * vr_quota_window_due() - must a new charge window start at @now_us (us,
 * monotonic)? TRUE before the first window and once reset_interval_ms has
 * passed since the current one began.
 */
bool vr_quota_window_due(const struct vr_quota *q, uint64_t now_us);

/**
 * vr_quota_window_start() - close @q's current window and open one at
 * @now_us: the closing window's charge joins total_charged_sz, the charge
 * restarts at 0, the goal tuner moves once (vr_feedback_next() with
 * vr_quota_goals_score_bp(), when @q has goals) and esz is recomputed with
 * vr_quota_effective_sz(). The caller sets the measured goals' current values
 * first. Return: TRUE when the closing window had used its whole quota (the
 * caller's qt_exceeds stat); FALSE for the very first window.
 */
bool vr_quota_window_start(struct vr_quota *q, uint64_t now_us);

/**
 * vr_quota_budget_left() - bytes the current window of @q may still charge:
 * esz - charged_sz (0 when used up), UINT64_MAX when @q sets no quota.
 */
uint64_t vr_quota_budget_left(const struct vr_quota *q);

/**
 * vr_quota_charge() - an action of @sz_bytes that took @ns (ns) was done in
 * the current window: @sz_bytes is charged to the window and @ns joins the
 * measured time (total_charged_ns). The bytes join the throughput's byte
 * count when the window closes, as in DAMOS.
 */
void vr_quota_charge(struct vr_quota *q, uint64_t sz_bytes, uint64_t ns);

/**
 * vr_quota_measure() - an action of @sz_bytes that took @ns (ns) was done
 * outside the quota (e.g. an explicit reclaim request): it teaches the
 * throughput (total_charged_sz and total_charged_ns at once) without
 * charging the window.
 */
void vr_quota_measure(struct vr_quota *q, uint64_t sz_bytes, uint64_t ns);
