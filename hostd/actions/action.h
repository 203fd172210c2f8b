/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An action: what vreclaimd does to a managed domain to take memory from it,
 * behind a small vtable that the manager's fleet round calls per domain
 * (hostd/fleet-round.c): in its decide step, what the domain offers the
 * fleet (->offer); in its act step, one window of the action (->act). One
 * file per action:
 *
 *   agent-reclaim.c  the domain's policy, its pageout schemes cut to its
 *                    share of the fleet quota, sent to the guest's agent
 *   balloon.c        QEMU's balloon target (common/balloon.h decides it)
 *   host-pageout.c   the coldest guest memory by the host's access picture,
 *                    paged out of the QEMU process
 *
 * An action reaches its domain through hostd/domain.h only (the agent's
 * calls, the QEMU monitor): the domain holds the action's state, the action
 * never the manager.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "config.h"
#include "domain-status.h"
#include "host-watermarks.h"

struct vr_domain;
struct vr_fleet_domain;

/**
 * struct vr_action_ctx - what the fleet round tells an action this tick;
 * borrowed for the call.
 * @config:		the daemon's config (the fleet quota and its window,
 *			the host's access source).
 * @host:		the host's memory and pressure as acquired this tick;
 *			valid when @host_known.
 * @host_known:		whether @host was read this tick.
 * @host_needs_memory:	whether the host needs memory (its watermarks).
 * @ticks:		the manager's tick count.
 * @act_index:		the domain's place among the managed domains, by name
 *			(acquire and act).
 * @picture_period:	a domain's picture is refreshed every this many ticks,
 *			in turn by @act_index (the config's pictures-per-tick).
 * @report_interval_ms:	the report interval asked of the agents, ms, by the
 *			fleet's size (vr_fleet_report_interval_ms()).
 *
 * @picture_period and @report_interval_ms are set for acquire and act.
 */
struct vr_action_ctx {
	const struct vr_daemon_config *config;
	const struct vr_host_snapshot *host;
	gboolean host_known;
	gboolean host_needs_memory;
	uint64_t ticks;
	guint act_index;
	guint picture_period;
	uint64_t report_interval_ms;
};

/**
 * struct vr_action_ops - one action's operations.
 * @action:	which action it is (the name status shows).
 * @acquire:	acquire: read the domain's access picture for this tick, or
 *		ask the agent for one (it answers in a later tick), before
 *		the decide step reads it; NULL for none.
 * @offer:	decide: fill @fd->hist_bytes with the bytes per cold score the
 *		domain offers the fleet this window (and set the domain's
 *		cold_bytes). Return: FALSE when it offers nothing (no picture
 *		yet, nothing to take, an error kept as the domain's last one).
 * @act:	act: one window of the action on the domain, up to its share
 *		(struct vr_domain @share_bytes); what runs on QEMU or the agent
 *		is applied when they answer.
 * @stop:	drop the state the action keeps on the domain (its action
 *		changes, or it is no longer managed); NULL for none.
 */
struct vr_action_ops {
	enum vr_domain_action action;
	void (*acquire)(struct vr_domain *d, const struct vr_action_ctx *ctx);
	gboolean (*offer)(struct vr_domain *d, const struct vr_action_ctx *ctx,
			  struct vr_fleet_domain *fd);
	void (*act)(struct vr_domain *d, const struct vr_action_ctx *ctx);
	void (*stop)(struct vr_domain *d);
};

/* The actions (agent-reclaim.c, balloon.c, host-pageout.c). */
extern const struct vr_action_ops vr_action_agent_reclaim;
extern const struct vr_action_ops vr_action_balloon;
extern const struct vr_action_ops vr_action_host_pageout;

/**
 * vr_action_ops_get() - the operations of @action; NULL for
 * VR_DOMAIN_ACTION_NONE (or a value out of the enum).
 */
const struct vr_action_ops *vr_action_ops_get(enum vr_domain_action action);

/**
 * vr_action_window_len_us() - the fleet quota's window (the config's
 * quota-reset-interval-ms), us: what a share is per.
 */
static inline uint64_t vr_action_window_len_us(const struct vr_action_ctx *ctx)
{
	return ctx->config->fleet_quota_reset_interval_ms * 1000;
}
