/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent-reclaim action (actions/action.h): the guest's agent reclaims in
 * the guest. Its offer is the cold histogram of the agent's access picture
 * (sent by an agent with the "cold-histogram" capability, else computed
 * here from the picture); its act step sends the agent the domain's policy
 * with every pageout scheme cut to the domain's share of the fleet quota
 * (vr_domain_agent_policy()) and resumes or pauses it; its acquire step asks
 * for the next picture in turn.
 */
#include "actions/action.h"

#include <string.h>

#include "domain.h"
#include "fleet-quota.h"

/* A new share is sent to the agent only when it differs from the last one
 * sent by more than this part (per-mille): a quota rewritten every second
 * would cost the guest a DAMON commit each time for nothing. */
#define VR_AGENT_RECLAIM_SHARE_HYSTERESIS_PERMILLE 250

/* A smaller share (0 too) is sent at most this often per domain, us (a
 * larger one at once: the host needs the memory). Each costs the guest a
 * DAMON commit, and a scheme rewritten every few seconds frees little. */
#define VR_AGENT_RECLAIM_SHARE_MIN_PERIOD_US (15 * G_USEC_PER_SEC)

/*
 * @d's histogram from its agent's get-cold-histogram reply @ch, into
 * @d->hist.bytes and .regions: refused (rate-limited, as a picture is) when
 * it claims more than the guest has (the session checked it against its
 * limits; this checks the domain's size now) or names a policy generation
 * vreclaimd never sent. One of an older generation was computed before the
 * agent had the current policy: not used, quietly, until the next one.
 */
static gboolean domain_take_cold_hist(struct vr_domain *d, const struct vr_proto_cold_hist *ch)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *msg = NULL;

	if (ch->generation < d->policy_generation) {
		g_debug("%s: cold histogram of policy generation %" G_GUINT64_FORMAT
			", the policy is at %u: asking for the next one",
			d->name, (guint64)ch->generation, d->policy_generation);
		/* Not waiting for its turn (pictures-per-tick): the new policy
		 * went, or goes this tick, before this request on the channel. */
		if (!vr_access_source_agent_refresh(d->source, &error))
			g_debug("%s: %s", d->name, error->message);
		return FALSE;
	}
	if (ch->generation > d->policy_generation)
		g_set_error(&error, VR_FLEET_ERROR, VR_FLEET_ERROR_PICTURE,
			    "it names policy generation %" G_GUINT64_FORMAT ", vreclaimd's is %u",
			    (guint64)ch->generation, d->policy_generation);
	else if (vr_fleet_check_cold_histogram(ch->bytes, d->info.memory_bytes, &error)) {
		memcpy(d->hist.bytes, ch->bytes, sizeof(d->hist.bytes));
		d->hist.regions = (guint)ch->nr_regions;
		return TRUE;
	}
	msg = g_strdup_printf("agent cold histogram refused: %s", error->message);
	vr_domain_reject(d, g_get_monotonic_time(), msg); /* rate-limited */
	vr_domain_set_error(d, msg);
	vr_access_source_agent_forget(d->source);
	return FALSE;
}

/*
 * The bytes the fleet may ask @d for: the eligible cold bytes of its picture,
 * less the part that is free memory. Free guest-physical memory is never
 * accessed, so a paddr picture shows it as cold like the rest; it is not the
 * agent's to give (free page reporting already gave it back). Which regions
 * are free the picture does not say, so each score's bytes are scaled by the
 * guest's used fraction (MemTotal - MemFree) / MemTotal from its agent's
 * stats: as a guest gives memory back, what the fleet asks of it shrinks.
 */
static gboolean decide_domain_hist(struct vr_domain *d, struct vr_fleet_domain *fd)
{
	const struct vr_scheme *s = vr_fleet_pageout_scheme(d->policy);
	struct vr_domain_hist *h = &d->hist;
	uint64_t eligible = 0, cut, serial;
	double used = 1.0;

	if (!s || !d->source || !vr_agent_session_is_up(d->session))
		return FALSE;
	/* The histogram of a picture is computed once: pictures come every
	 * few ticks (pictures-per-tick), this runs every tick. */
	serial = vr_access_source_agent_picture_serial(d->source);
	if (!serial || !h->valid || h->picture_serial != serial ||
	    h->policy_generation != d->policy_generation ||
	    h->memory_bytes != d->info.memory_bytes) {
		g_autoptr(GError) error = NULL;
		g_auto(vr_proto_regions) picture = { 0 };
		struct vr_proto_cold_hist ch;

		h->valid = FALSE;
		/* An agent with the capability sends the histogram itself. */
		if (vr_access_source_agent_wants_histogram(d->source) &&
		    vr_access_source_agent_cold_hist(d->source, &ch)) {
			if (!domain_take_cold_hist(d, &ch))
				return FALSE;
			goto valid;
		}
		if (!vr_access_source_get_regions(d->source, &picture, &error)) {
			if (!g_error_matches(error, VR_ACCESS_SOURCE_ERROR,
					     VR_ACCESS_SOURCE_ERROR_STATE)) {
				g_warning("%s: %s", d->name, error->message);
				vr_domain_set_error(d, error->message);
			}
			return FALSE;
		}
		if (!vr_fleet_cold_histogram(picture.regions, picture.sample_interval_us,
					     picture.aggr_interval_us, s, d->info.memory_bytes,
					     h->bytes, &error)) {
			g_autofree char *msg = g_strdup_printf("%s picture refused: %s",
							       vr_access_source_name(d->source),
							       error->message);
			vr_domain_reject(d, g_get_monotonic_time(), msg); /* rate-limited */
			vr_domain_set_error(d, msg);
			vr_access_source_agent_forget(d->source);
			return FALSE;
		}
		h->regions = picture.regions ? picture.regions->len : 0;
valid:
		h->valid = TRUE;
		h->picture_serial = serial;
		h->policy_generation = d->policy_generation;
		h->memory_bytes = d->info.memory_bytes;
	}
	memcpy(fd->hist_bytes, h->bytes, sizeof(fd->hist_bytes));
	if (d->has_stats && d->stats.mem_total_bytes > 0)
		used = (double)(d->stats.mem_total_bytes - d->stats.mem_free_bytes) /
		       (double)d->stats.mem_total_bytes;
	d->cold_bytes = 0;
	for (guint score = 0; score <= VR_MAX_SCORE; score++) {
		eligible += fd->hist_bytes[score];
		fd->hist_bytes[score] = (uint64_t)((double)fd->hist_bytes[score] * used);
	}
	/* No more than the host can get back from it: its RSS less the free
	 * memory its guest says is still resident (the guest can only lower
	 * it). */
	cut = vr_fleet_credit_bound_offer(
		fd->hist_bytes,
		vr_fleet_credit_offer_bound(d->rss_bytes, d->has_stats, d->stats.mem_free_bytes,
					    d->stats.reportable_free_bytes));
	for (guint score = 0; score <= VR_MAX_SCORE; score++)
		d->cold_bytes += fd->hist_bytes[score];
	g_debug("%s: picture of %u regions: %" G_GUINT64_FORMAT
		" bytes cold enough, %" G_GUINT64_FORMAT
		" of them counted (%.0f%% of the guest is in use; %" G_GUINT64_FORMAT
		" beyond what its RSS can give)",
		d->name, h->regions, eligible, d->cold_bytes, used * 100, cut);
	return TRUE;
}

static gboolean share_changed(uint64_t sent, uint64_t now)
{
	uint64_t diff = sent > now ? sent - now : now - sent;

	if (!sent || !now)
		return sent != now;
	return diff * 1000 > sent * VR_AGENT_RECLAIM_SHARE_HYSTERESIS_PERMILLE;
}

static void agent_reclaim_act(struct vr_domain *d, const struct vr_action_ctx *ctx)
{
	if (!vr_agent_session_is_up(d->session))
		return;
	/* The agent always runs the domain's policy, cut to its share; a share
	 * of 0 keeps it monitoring only. Only vreclaimctl pause pauses it. */
	gint64 now = g_get_monotonic_time();
	gboolean hold;

	hold = d->policy_sent && d->share_bytes < d->sent_share_bytes &&
	       now - d->sent_us < VR_AGENT_RECLAIM_SHARE_MIN_PERIOD_US;
	/* A smaller share waits, unless the host no longer needs memory
	 * (above the high watermark, or below the low one, where the kernel's
	 * own reclaim takes over): then reclaim stops within the tick. */
	hold = hold && ctx->host_needs_memory;
	/* The previous vreclaimd granted this domain a share in the window
	 * that still runs, and its agent kept that policy: a new one (a DAMOS
	 * commit) could start it a fresh window. Until the window ends, only
	 * a share of 0 goes out. */
	if (d->window_hold_until_us && now >= d->window_hold_until_us)
		d->window_hold_until_us = 0;
	gboolean window_hold = d->window_hold_until_us && d->share_bytes > 0;
	if (!window_hold &&
	    (!d->policy_sent || d->agent_resync || d->sent_generation != d->policy_generation ||
	     d->sent_report_interval_ms != ctx->report_interval_ms ||
	     (!hold && share_changed(d->sent_share_bytes, d->share_bytes)))) {
		g_auto(vr_proto_request) req = { .command = VR_PROTO_SET_POLICY };
		req.set_policy.policy = vr_domain_agent_policy(
			d, d->share_bytes, ctx->config->fleet_quota_reset_interval_ms);
		req.set_policy.has_report_interval = TRUE;
		req.set_policy.report_interval_ms = ctx->report_interval_ms;
		/* An agent that sends cold histograms computes them under the
		 * domain's own policy (the share changes the one it runs), named
		 * by its generation; sent again when it changes, and to an agent
		 * that came back. */
		if (vr_access_source_agent_wants_histogram(d->source) && d->policy_generation &&
		    (!d->policy_sent || d->agent_resync ||
		     d->hist_sent_generation != d->policy_generation)) {
			req.set_policy.generation = d->policy_generation;
			req.set_policy.histogram_policy = vr_policy_copy(d->policy);
			d->hist_sent_generation = d->policy_generation;
		}
		if (!d->policy_sent || (d->sent_share_bytes == 0) != (d->share_bytes == 0)) {
			if (d->share_bytes)
				g_message("%s: reclaims: %" G_GUINT64_FORMAT
					  " bytes per window of the fleet quota",
					  d->name, d->share_bytes);
			else
				g_message(
					"%s: no share of the fleet quota: its agent monitors only",
					d->name);
		}
		g_debug("%s: share %" G_GUINT64_FORMAT " bytes per window (was %" G_GUINT64_FORMAT
			")",
			d->name, d->share_bytes, d->sent_share_bytes);
		d->policy_sent = TRUE;
		d->sent_us = now;
		d->sent_share_bytes = d->share_bytes;
		d->sent_generation = d->policy_generation;
		d->sent_report_interval_ms = ctx->report_interval_ms;
		vr_domain_agent_call(d, &req, d->share_bytes);
	}
	vr_domain_agent_set_paused(d, d->user_paused);
	if (!window_hold)
		d->agent_resync = FALSE; /* the policy went out with it */
	/* The window its agent spends its share in (what a restart restores). */
	if (d->policy_sent && !d->agent_paused)
		vr_share_window_roll(&d->window, d->sent_share_bytes, now,
				     vr_action_window_len_us(ctx));
}

/*
 * The agent's picture (or its histogram), asked for before the decide step:
 * at once by a domain without one, by the others in turn, at most
 * pictures-per-tick of them each tick. The agent answers in a later tick, so
 * the decide step reads the last picture that arrived. Not before the
 * domain's policy went to the agent (the act step sends it), nor while the
 * agent is paused.
 */
static void agent_reclaim_acquire(struct vr_domain *d, const struct vr_action_ctx *ctx)
{
	g_autoptr(GError) error = NULL;

	if (!d->source || !vr_agent_session_is_up(d->session) || !d->policy_sent || d->agent_paused)
		return;
	if (vr_access_source_agent_has_picture(d->source) &&
	    (ctx->ticks + ctx->act_index) % ctx->picture_period != 0)
		return;
	if (!vr_access_source_agent_refresh(d->source, &error)) {
		g_debug("%s: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
	}
}

/* The agent's offer: its picture's cold histogram, held (vr_domain_hold_offer()). */
static gboolean agent_reclaim_offer(struct vr_domain *d, const struct vr_action_ctx *ctx,
				    struct vr_fleet_domain *fd)
{
	(void)ctx;
	if (!decide_domain_hist(d, fd))
		return FALSE;
	vr_domain_hold_offer(d, vr_fleet_pageout_scheme(d->policy), fd);
	return TRUE;
}

/* The agent's access source goes with the action (its session stays: the
 * balloon reads the guest's free memory through it). */
static void agent_reclaim_stop(struct vr_domain *d)
{
	g_clear_pointer(&d->source, vr_access_source_free);
}

const struct vr_action_ops vr_action_agent_reclaim = {
	.action = VR_DOMAIN_ACTION_AGENT_RECLAIM,
	.acquire = agent_reclaim_acquire,
	.offer = agent_reclaim_offer,
	.act = agent_reclaim_act,
	.stop = agent_reclaim_stop,
};
