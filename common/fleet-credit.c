/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's fleet credit from the RSS it released per share it used and
 * per reclaim it claimed: see fleet-credit.h.
 */
#include "fleet-credit.h"

#include <string.h>

#include <glib.h>

#include "guest-bounds.h"
#include "protocol.h"

/* The fleet quota's window when the caller gives none, us. */
#define CREDIT_DEFAULT_SHARE_WINDOW_US 1000000U

void vr_fleet_credit_init(struct vr_fleet_credit *c)
{
	memset(c, 0, sizeof(*c));
	c->credit_permille = VR_FLEET_CREDIT_FULL_PERMILLE;
	c->trust_permille = VR_FLEET_CREDIT_FULL_PERMILLE;
}

static struct vr_fleet_credit_window *window_slot(struct vr_fleet_credit *c, int64_t nr)
{
	return &c->windows[nr % VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS];
}

/* Window @nr if the ring still holds it, else NULL. */
static const struct vr_fleet_credit_window *window_get(struct vr_fleet_credit *c, int64_t nr)
{
	const struct vr_fleet_credit_window *w;

	if (nr < 0)
		return NULL;
	w = window_slot(c, nr);
	return w->used && w->nr == nr ? w : NULL;
}

static void window_open(struct vr_fleet_credit *c, int64_t nr, uint64_t rss_bytes)
{
	*window_slot(c, nr) = (struct vr_fleet_credit_window){
		.nr = nr,
		.rss_start_bytes = rss_bytes,
		.used = true,
	};
}

/* Start over at @now_us: window 0 opens with @s's RSS; the credit stays. */
static void credit_restart(struct vr_fleet_credit *c, int64_t now_us,
			   const struct vr_fleet_credit_sample *s)
{
	memset(c->windows, 0, sizeof(c->windows));
	c->started = true;
	c->origin_us = now_us;
	c->last_us = now_us;
	c->counters_known = s->agent_known;
	c->last_reclaimed_bytes = s->agent_known ? s->reclaimed_bytes : 0;
	window_open(c, 0, s->rss_bytes);
}

/* How far a cumulative counter grew from @last to @now: all of @now when it
 * went back (an agent that started again counts from 0). */
static uint64_t counter_growth(uint64_t last, uint64_t now)
{
	return now >= last ? now - last : now;
}

static uint32_t trust_after(uint32_t trust, bool gave_back)
{
	if (gave_back)
		return trust >= VR_FLEET_CREDIT_FULL_PERMILLE / 2 ? VR_FLEET_CREDIT_FULL_PERMILLE :
								    trust * 2;
	return trust / 2 <= VR_FLEET_CREDIT_FLOOR_PERMILLE ? VR_FLEET_CREDIT_FLOOR_PERMILLE :
							     trust / 2;
}

/* What a span of windows granted, what the agent claimed of it (bounded by
 * the grant) and what the RSS released. */
struct credit_span {
	uint64_t granted;
	uint64_t claimed;
	uint64_t released;
};

/* The span of windows @first_nr..@end_nr (present ones), window @end_nr
 * ending with the RSS at @rss_end_bytes; @first_nr must be present. The
 * claim of the newest window is left out: what it reclaimed has not had
 * the time to reach the host. */
static struct credit_span span_of(struct vr_fleet_credit *c, int64_t first_nr, int64_t end_nr,
				  uint64_t rss_end_bytes)
{
	const struct vr_fleet_credit_window *first = window_get(c, first_nr);
	struct credit_span sp = { 0 };

	for (int64_t nr = first_nr; nr <= end_nr; nr++) {
		const struct vr_fleet_credit_window *w = window_get(c, nr);

		if (!w)
			continue;
		sp.granted = vr_u64_add_sat(sp.granted, w->granted_bytes);
		if (nr < end_nr)
			sp.claimed = vr_u64_add_sat(sp.claimed, w->reclaimed_bytes);
	}
	/* The guest's number, bounded by the host's: it cannot have reclaimed
	 * more than it was granted. */
	if (sp.claimed > sp.granted)
		sp.claimed = sp.granted;
	sp.released =
		first->rss_start_bytes > rss_end_bytes ? first->rss_start_bytes - rss_end_bytes : 0;
	return sp;
}

/* Whether @sp's RSS fell by what its claim asks. */
static bool span_gave_back(const struct credit_span *sp)
{
	return sp->released >= sp->claimed / VR_FLEET_CREDIT_CLAIM_DIVISOR;
}

/* The long horizon ending with window @end_nr: back from @oldest_nr to the
 * first window held, up to VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS, not across
 * a gap. Return: its first window. */
static int64_t long_first(struct vr_fleet_credit *c, int64_t oldest_nr, int64_t end_nr)
{
	int64_t first_nr = oldest_nr;

	while (first_nr > end_nr - (VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS - 1) &&
	       window_get(c, first_nr - 1))
		first_nr--;
	return first_nr;
}

/* Window @end_nr ended with the RSS at @rss_end_bytes: judge the horizon
 * that ends with it. Return: whether it was judged. */
static bool credit_judge(struct vr_fleet_credit *c, int64_t end_nr, uint64_t rss_end_bytes)
{
	int64_t oldest_nr = end_nr - (VR_FLEET_CREDIT_HORIZON_WINDOWS - 1);
	const struct vr_fleet_credit_window *oldest = window_get(c, oldest_nr);
	int64_t first_nr;
	struct credit_span sp, long_sp;
	bool gave_back;

	if (!oldest || !oldest->granted_bytes)
		return false;
	sp = span_of(c, oldest_nr, end_nr, rss_end_bytes);
	if (sp.granted < VR_FLEET_CREDIT_MIN_GRANT_BYTES)
		return false;
	c->granted_bytes = sp.granted;
	c->claimed_bytes = sp.claimed;
	c->released_bytes = sp.released;
	c->long_claimed_bytes = c->long_released_bytes = 0;
	c->judgements++;
	c->verdict = VR_FLEET_CREDIT_IDLE;
	if (sp.claimed < sp.granted / VR_FLEET_CREDIT_IDLE_DIVISOR &&
	    sp.released < VR_FLEET_CREDIT_MIN_CLAIM_BYTES) {
		/* Idle: no evidence either way; the share it leaves goes to
		 * the others while it stays so. An RSS that fell is no idle
		 * domain, whatever its agent says (or says late). */
		c->idle_judgements++;
		c->credit_permille = VR_FLEET_CREDIT_FLOOR_PERMILLE;
		return true;
	}
	gave_back = sp.claimed >= VR_FLEET_CREDIT_MIN_CLAIM_BYTES && span_gave_back(&sp);
	if (!gave_back) {
		/* Too small a claim, or a release not seen yet: a slow
		 * guest claims little and gives back in bursts (as its free
		 * memory compacts into blocks free page reporting takes).
		 * Judged over the long horizon. */
		first_nr = long_first(c, oldest_nr, end_nr);
		long_sp = first_nr < oldest_nr ? span_of(c, first_nr, end_nr, rss_end_bytes) : sp;
		c->long_claimed_bytes = long_sp.claimed;
		c->long_released_bytes = long_sp.released;
		if (long_sp.claimed < VR_FLEET_CREDIT_MIN_CLAIM_BYTES &&
		    sp.claimed < VR_FLEET_CREDIT_MIN_CLAIM_BYTES) {
			/* Slow: it claims too little to be judged on. */
			c->verdict = VR_FLEET_CREDIT_SLOW;
			c->credit_permille = c->trust_permille;
			return true;
		}
		gave_back = long_sp.claimed >= VR_FLEET_CREDIT_MIN_CLAIM_BYTES &&
			    span_gave_back(&long_sp);
	}
	c->verdict = gave_back ? VR_FLEET_CREDIT_GAVE_BACK : VR_FLEET_CREDIT_HELD_BACK;
	if (!gave_back)
		c->failed++;
	c->trust_permille = trust_after(c->trust_permille, gave_back);
	c->credit_permille = c->trust_permille;
	return true;
}

bool vr_fleet_credit_update(struct vr_fleet_credit *c, int64_t now_us,
			    const struct vr_fleet_credit_sample *s)
{
	uint64_t window_us = s->share_window_us ? s->share_window_us :
						  CREDIT_DEFAULT_SHARE_WINDOW_US;
	int64_t last_nr, now_nr;
	uint64_t elapsed_us;
	unsigned __int128 grant;
	struct vr_fleet_credit_window *cur;
	bool judged = false;

	if (c->trust_permille < VR_FLEET_CREDIT_FLOOR_PERMILLE ||
	    c->trust_permille > VR_FLEET_CREDIT_FULL_PERMILLE)
		vr_fleet_credit_init(c); /* not set up: full */
	if (!c->started || now_us < c->last_us) {
		credit_restart(c, now_us, s);
		return false;
	}
	elapsed_us = (uint64_t)now_us - (uint64_t)c->last_us;
	if (elapsed_us > (uint64_t)VR_FLEET_CREDIT_WINDOW_US)
		elapsed_us = (uint64_t)VR_FLEET_CREDIT_WINDOW_US;
	grant = (unsigned __int128)s->share_bytes * elapsed_us / window_us;
	last_nr = (int64_t)(((uint64_t)c->last_us - (uint64_t)c->origin_us) /
			    (uint64_t)VR_FLEET_CREDIT_WINDOW_US);
	now_nr = (int64_t)(((uint64_t)now_us - (uint64_t)c->origin_us) /
			   (uint64_t)VR_FLEET_CREDIT_WINDOW_US);
	cur = window_slot(c, last_nr);
	if (cur->used && cur->nr == last_nr)
		cur->granted_bytes = vr_u64_add_sat(
			cur->granted_bytes, grant > UINT64_MAX ? UINT64_MAX : (uint64_t)grant);
	if (s->agent_known) {
		/* The growth since the agent's counters were last known (its
		 * session may have been down meanwhile), to the window now. */
		if (c->counters_known && cur->used && cur->nr == last_nr)
			cur->reclaimed_bytes = vr_u64_add_sat(
				cur->reclaimed_bytes,
				counter_growth(c->last_reclaimed_bytes, s->reclaimed_bytes));
		c->counters_known = true;
		c->last_reclaimed_bytes = s->reclaimed_bytes;
	}
	if (now_nr > last_nr) {
		judged = credit_judge(c, last_nr, s->rss_bytes);
		window_open(c, now_nr, s->rss_bytes);
	}
	c->last_us = now_us;
	return judged;
}

uint64_t vr_fleet_credit_offer_bound(uint64_t rss_bytes, bool agent_known, uint64_t mem_free_bytes,
				     uint64_t reportable_free_bytes)
{
	uint64_t resident_free;

	if (!agent_known)
		return rss_bytes;
	resident_free =
		mem_free_bytes > reportable_free_bytes ? mem_free_bytes - reportable_free_bytes : 0;
	return rss_bytes > resident_free ? rss_bytes - resident_free : 0;
}

uint64_t vr_fleet_credit_bound_offer(uint64_t *hist_bytes, uint64_t bound_bytes)
{
	uint64_t total = 0, cut = 0;

	for (int score = 0; score <= VR_MAX_SCORE; score++)
		total = vr_u64_add_sat(total, hist_bytes[score]);
	for (int score = 0; score <= VR_MAX_SCORE && total > bound_bytes; score++) {
		uint64_t drop = hist_bytes[score] < total - bound_bytes ? hist_bytes[score] :
									  total - bound_bytes;

		hist_bytes[score] -= drop;
		total -= drop;
		cut += drop;
	}
	return cut;
}

uint64_t vr_fleet_report_interval_ms(uint64_t tick_ms, unsigned int domains)
{
	uint64_t ticks = 1, ms;

	/* 2^26 ticks cover any unsigned int of domains. */
	while ((uint64_t)domains > VR_FLEET_REPORTS_PER_TICK * ticks)
		ticks *= 2;
	ms = tick_ms > G_MAXUINT64 / ticks ? G_MAXUINT64 : tick_ms * ticks;
	ms = MIN(ms, MAX(VR_FLEET_REPORT_INTERVAL_MAX_MS, tick_ms));
	return CLAMP(ms, VR_PROTO_REPORT_INTERVAL_MIN_MS, VR_PROTO_REPORT_INTERVAL_MAX_MS);
}

unsigned int vr_fleet_status_period_ticks(uint64_t tick_ms, unsigned int domains)
{
	uint64_t ticks;

	if (domains <= VR_FLEET_REPORTS_PER_TICK)
		return 1;
	ticks = vr_fleet_report_interval_ms(tick_ms, domains) / MAX(tick_ms, 1);

	return (unsigned int)CLAMP(ticks, 1, G_MAXUINT);
}
