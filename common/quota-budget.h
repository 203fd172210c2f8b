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
 * one definition of a quota. No I/O, no clock: the caller passes the time
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

#include <stdbool.h>
#include <stdint.h>

#include "scheme.h"

/* Throughput assumed before any action was measured, bytes per ms:
 * 4 MiB/ms, DAMON's own assumption (SEMANTICS.md §2.1). */
#define VR_DEFAULT_THROUGHPUT_BPMS (4ULL << 20)

/* The goal tuner's unit: 10000 basis points = the goal is met; the tuner's
 * input is kept in 1/10000 bytes. */
#define VR_GOAL_BP 10000ULL

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
