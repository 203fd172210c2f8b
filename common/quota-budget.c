/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The quota arithmetic of DAMOS: see quota-budget.h.
 */
#include "quota-budget.h"

#include <glib.h>

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

bool vr_quota_is_set(const struct vr_quota *q)
{
	return q->ms || q->sz || q->nr_goals;
}

uint64_t vr_feedback_next(uint64_t last_bp, uint64_t score_bp)
{
	const uint64_t min_input = VR_GOAL_BP;
	uint64_t diff, compensation;
	bool over = score_bp > VR_GOAL_BP;

	if (score_bp == VR_GOAL_BP)
		return last_bp;
	if (score_bp >= 2 * VR_GOAL_BP)
		return min_input;
	diff = over ? score_bp - VR_GOAL_BP : VR_GOAL_BP - score_bp;
	compensation = (uint64_t)((unsigned __int128)last_bp * diff / VR_GOAL_BP);
	if (over)
		return last_bp - compensation > min_input ? last_bp - compensation : min_input;
	return last_bp > G_MAXUINT64 - compensation ? G_MAXUINT64 : last_bp + compensation;
}

uint64_t vr_quota_throughput_bpms(const struct vr_quota *q)
{
	unsigned __int128 bpms;

	if (!q->total_charged_ns)
		return VR_DEFAULT_THROUGHPUT_BPMS;
	bpms = (unsigned __int128)q->total_charged_sz * 1000000 / q->total_charged_ns;
	return bpms > UINT64_MAX ? UINT64_MAX : (uint64_t)bpms;
}

uint64_t vr_quota_goals_score_bp(const struct vr_quota *q)
{
	uint64_t best = 0;

	for (guint i = 0; i < q->nr_goals && i < VR_MAX_QUOTA_GOALS; i++) {
		const struct vr_quota_goal *g = &q->goals[i];
		unsigned __int128 score;

		if (!g->target)
			continue; /* validation rejects it; never divide by it */
		score = (unsigned __int128)g->current * VR_GOAL_BP / g->target;
		best = MAX(best, score > UINT64_MAX ? UINT64_MAX : (uint64_t)score);
	}
	return best;
}

uint64_t vr_quota_effective_sz(const struct vr_quota *q)
{
	uint64_t esz = 0;

	if (!vr_quota_is_set(q))
		return 0;
	if (q->nr_goals)
		esz = q->esz_bp / VR_GOAL_BP;
	if (q->ms) {
		uint64_t throughput = vr_quota_throughput_bpms(q);
		uint64_t by_time = throughput > UINT64_MAX / q->ms ? UINT64_MAX :
								     throughput * q->ms;

		esz = esz ? MIN(esz, by_time) : by_time;
	}
	if (q->sz && (esz == 0 || q->sz < esz))
		esz = q->sz;
	/*
	 * Whole pages, so that a window can use its quota up exactly (and then
	 * count as exceeded and remember where it stopped), and never below a
	 * page: an application is needed to measure the throughput again.
	 */
	return MAX(esz / VR_PAGE_SIZE * VR_PAGE_SIZE, VR_PAGE_SIZE);
}

bool vr_quota_window_due(const struct vr_quota *q, uint64_t now_us)
{
	uint64_t length_us = q->reset_interval_ms > UINT64_MAX / 1000 ? UINT64_MAX :
									q->reset_interval_ms * 1000;

	return !q->window_started || now_us >= add_sat(q->charged_from_us, length_us);
}

bool vr_quota_window_start(struct vr_quota *q, uint64_t now_us)
{
	bool exceeded = q->window_started && q->charged_sz >= q->esz;

	q->total_charged_sz = add_sat(q->total_charged_sz, q->charged_sz);
	q->charged_from_us = now_us;
	q->charged_sz = 0;
	q->window_started = true;
	if (q->nr_goals)
		q->esz_bp =
			vr_feedback_next(MAX(q->esz_bp, VR_GOAL_BP), vr_quota_goals_score_bp(q));
	q->esz = vr_quota_effective_sz(q);
	return exceeded;
}

uint64_t vr_quota_budget_left(const struct vr_quota *q)
{
	if (!vr_quota_is_set(q))
		return UINT64_MAX;
	return q->charged_sz >= q->esz ? 0 : q->esz - q->charged_sz;
}

void vr_quota_charge(struct vr_quota *q, uint64_t sz_bytes, uint64_t ns)
{
	q->charged_sz = add_sat(q->charged_sz, sz_bytes);
	q->total_charged_ns = add_sat(q->total_charged_ns, ns);
}

void vr_quota_measure(struct vr_quota *q, uint64_t sz_bytes, uint64_t ns)
{
	q->total_charged_sz = add_sat(q->total_charged_sz, sz_bytes);
	q->total_charged_ns = add_sat(q->total_charged_ns, ns);
}
