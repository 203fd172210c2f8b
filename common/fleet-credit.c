/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's fleet credit from the RSS it released per share granted: see
 * fleet-credit.h.
 */
#include "fleet-credit.h"

#include <string.h>

#include "guest-bounds.h"

/* The fleet quota's window when the caller gives none, us. */
#define CREDIT_DEFAULT_SHARE_WINDOW_US 1000000U

void vr_fleet_credit_init(struct vr_fleet_credit *c)
{
	memset(c, 0, sizeof(*c));
	c->credit_permille = VR_FLEET_CREDIT_FULL_PERMILLE;
}

static struct vr_fleet_credit_window *window_slot(struct vr_fleet_credit *c, int64_t nr)
{
	return &c->windows[nr % VR_FLEET_CREDIT_HORIZON_WINDOWS];
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

/* Start over at @now_us: window 0 opens with @rss_bytes; the credit stays. */
static void credit_restart(struct vr_fleet_credit *c, int64_t now_us, uint64_t rss_bytes)
{
	memset(c->windows, 0, sizeof(c->windows));
	c->started = true;
	c->origin_us = now_us;
	c->last_us = now_us;
	window_open(c, 0, rss_bytes);
}

/* Window @end_nr ended with the RSS at @rss_end_bytes: judge the horizon
 * that ends with it. Return: whether it was judged. */
static bool credit_judge(struct vr_fleet_credit *c, int64_t end_nr, uint64_t rss_end_bytes)
{
	int64_t oldest_nr = end_nr - (VR_FLEET_CREDIT_HORIZON_WINDOWS - 1);
	const struct vr_fleet_credit_window *oldest = window_get(c, oldest_nr);
	uint64_t granted = 0, released;

	if (!oldest || !oldest->granted_bytes)
		return false;
	for (int64_t nr = oldest_nr; nr <= end_nr; nr++) {
		const struct vr_fleet_credit_window *w = window_get(c, nr);

		if (w)
			granted = vr_u64_add_sat(granted, w->granted_bytes);
	}
	if (granted < VR_FLEET_CREDIT_MIN_GRANT_BYTES)
		return false;
	released = oldest->rss_start_bytes > rss_end_bytes ?
			   oldest->rss_start_bytes - rss_end_bytes :
			   0;
	c->granted_bytes = granted;
	c->released_bytes = released;
	c->judgements++;
	if (released >= granted / VR_FLEET_CREDIT_RETURN_DIVISOR) {
		c->credit_permille = c->credit_permille >= VR_FLEET_CREDIT_FULL_PERMILLE / 2 ?
					     VR_FLEET_CREDIT_FULL_PERMILLE :
					     c->credit_permille * 2;
	} else {
		c->failed++;
		c->credit_permille = c->credit_permille / 2 <= VR_FLEET_CREDIT_FLOOR_PERMILLE ?
					     VR_FLEET_CREDIT_FLOOR_PERMILLE :
					     c->credit_permille / 2;
	}
	return true;
}

bool vr_fleet_credit_update(struct vr_fleet_credit *c, int64_t now_us, uint64_t rss_bytes,
			    uint64_t share_bytes, uint64_t share_window_us)
{
	uint64_t window_us = share_window_us ? share_window_us : CREDIT_DEFAULT_SHARE_WINDOW_US;
	int64_t last_nr, now_nr;
	uint64_t elapsed_us;
	unsigned __int128 grant;
	struct vr_fleet_credit_window *cur;
	bool judged = false;

	if (c->credit_permille < VR_FLEET_CREDIT_FLOOR_PERMILLE ||
	    c->credit_permille > VR_FLEET_CREDIT_FULL_PERMILLE)
		c->credit_permille = VR_FLEET_CREDIT_FULL_PERMILLE; /* not set up: full */
	if (!c->started || now_us < c->last_us) {
		credit_restart(c, now_us, rss_bytes);
		return false;
	}
	elapsed_us = (uint64_t)now_us - (uint64_t)c->last_us;
	if (elapsed_us > (uint64_t)VR_FLEET_CREDIT_WINDOW_US)
		elapsed_us = (uint64_t)VR_FLEET_CREDIT_WINDOW_US;
	grant = (unsigned __int128)share_bytes * elapsed_us / window_us;
	last_nr = (int64_t)(((uint64_t)c->last_us - (uint64_t)c->origin_us) /
			    (uint64_t)VR_FLEET_CREDIT_WINDOW_US);
	now_nr = (int64_t)(((uint64_t)now_us - (uint64_t)c->origin_us) /
			   (uint64_t)VR_FLEET_CREDIT_WINDOW_US);
	cur = window_slot(c, last_nr);
	if (cur->used && cur->nr == last_nr)
		cur->granted_bytes = vr_u64_add_sat(
			cur->granted_bytes, grant > UINT64_MAX ? UINT64_MAX : (uint64_t)grant);
	if (now_nr > last_nr) {
		judged = credit_judge(c, last_nr, rss_bytes);
		window_open(c, now_nr, rss_bytes);
	}
	c->last_us = now_us;
	return judged;
}
