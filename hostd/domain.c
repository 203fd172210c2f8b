/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One domain's state in vreclaimd (see domain.h): managed or why not, its
 * tuning and policy, and its totals.
 */
#include "domain.h"

#include <string.h>

struct vr_domain *vr_domain_new(const char *uuid, const char *name)
{
	struct vr_domain *d = g_new0(struct vr_domain, 1);

	g_strlcpy(d->uuid, uuid, sizeof(d->uuid));
	d->name = g_strdup(name);
	d->reason = g_strdup("not read yet");
	d->policy_name = g_strdup("");
	return d;
}

static void domain_drop_management(struct vr_domain *d)
{
	g_clear_pointer(&d->host_reclaim, vr_host_reclaim_free);
	g_clear_pointer(&d->source, vr_access_source_free);
	g_clear_pointer(&d->session, vr_agent_session_free);
	g_clear_pointer(&d->tuning, vr_domain_tuning_free);
	g_clear_pointer(&d->policy, vr_policy_free);
	d->share_bytes = 0;
	d->policy_sent = FALSE;
	d->sent_share_bytes = 0;
	d->cold_bytes = 0;
	vr_fleet_offer_hold_reset(&d->offer_hold);
	d->agent_pause_pending = FALSE;
	d->action = VR_ACTIVE_ACTION_NONE;
	d->balloon_target_bytes = 0;
}

void vr_domain_free(struct vr_domain *d)
{
	if (!d)
		return;
	domain_drop_management(d);
	vr_domain_info_clear(&d->info);
	vr_monitor_worker_free(d->monitor);
	g_free(d->qmp_path);
	g_free(d->name);
	g_free(d->reason);
	g_free(d->policy_name);
	g_free(d->last_error);
	g_free(d);
}

void vr_domain_set_unmanaged(struct vr_domain *d, const char *reason, ...)
{
	va_list ap;

	domain_drop_management(d);
	d->managed = FALSE;
	g_free(d->reason);
	va_start(ap, reason);
	d->reason = g_strdup_vprintf(reason, ap);
	va_end(ap);
}

void vr_domain_set_error(struct vr_domain *d, const char *message)
{
	g_free(d->last_error);
	d->last_error = g_strdup(message);
}

struct vr_domain_tuning *vr_domain_tuning_default(const struct vr_daemon_config *config)
{
	struct vr_domain_tuning *tuning = vr_domain_tuning_new();

	tuning->enable = TRUE;
	tuning->priority = config->default_priority;
	tuning->actions = config->default_actions;
	return tuning;
}

struct vr_domain_tuning *vr_domain_tuning_for(const struct vr_libvirt_domain *ld,
					      const struct vr_daemon_config *config, char **reason)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_domain_tuning) tuning = NULL;

	*reason = NULL;
	if (!ld->metadata) {
		if (config->manage != VR_MANAGE_ALL) {
			*reason = g_strdup("not opted in (no vreclaim metadata; the daemon manages "
					   "opt-in domains only)");
			return NULL;
		}
		return vr_domain_tuning_default(config);
	}
	tuning = vr_domain_tuning_parse(ld->metadata, &error);
	if (!tuning) {
		*reason = g_strdup_printf("invalid metadata: %s", error->message);
		return NULL;
	}
	if (!tuning->enable) {
		*reason = g_strdup("disabled by its metadata (enable is no)");
		return NULL;
	}
	return g_steal_pointer(&tuning);
}

struct vr_policy *vr_domain_policy_for(const struct vr_domain_tuning *tuning,
				       const struct vr_daemon_config *config, GError **error)
{
	g_autoptr(vr_policy) base = NULL;
	struct vr_policy *policy;

	if (tuning->policy)
		base = vr_daemon_config_load_policy(config, tuning->policy, error);
	else
		base = vr_policy_new_profile(NULL, error);
	if (!base)
		return NULL;
	policy = vr_domain_tuning_policy(tuning, base, error);
	if (!policy)
		g_prefix_error(error, "policy '%s': ", tuning->policy ? tuning->policy : "default");
	return policy;
}

struct vr_policy *vr_domain_agent_policy(const struct vr_domain *d, uint64_t share_bytes,
					 uint64_t reset_interval_ms)
{
	struct vr_policy *p = vr_policy_copy(d->policy);

	for (guint i = 0; i < p->schemes->len; i++) {
		struct vr_scheme *s = g_ptr_array_index(p->schemes, i);
		if (s->action != VR_ACTION_PAGEOUT)
			continue;
		if (share_bytes == 0) {
			s->pattern.min_age_us = s->pattern.max_age_us;
			continue;
		}
		if (s->quota.sz == 0 || s->quota.sz > share_bytes) {
			/* The fleet's window becomes the scheme's: a share is
			 * bytes per fleet window. */
			s->quota.sz = share_bytes;
			s->quota.reset_interval_ms = reset_interval_ms;
		}
	}
	return p;
}

/* What the agent's policy freed: its schemes' pageouts as the backend counts
 * them, and the swap cache those pageouts left, freed after their writes. */
static uint64_t policy_reclaimed_bytes(const struct vr_agent_stats *stats)
{
	return stats->sz_applied + stats->swap_cache_release_bytes;
}

void vr_domain_account_stats(struct vr_domain *d, const struct vr_agent_stats *stats,
			     gboolean restarted)
{
	uint64_t now = policy_reclaimed_bytes(stats);
	uint64_t last = policy_reclaimed_bytes(&d->stats);

	if (restarted || !d->has_stats)
		/* Counters of a new agent start at 0: all it reports is new. A
		 * first report counts whole too only if the agent started
		 * after vreclaimd took the domain; otherwise it is a baseline. */
		d->reclaimed_bytes += restarted ? now : 0;
	else if (now >= last)
		d->reclaimed_bytes += now - last;
	d->stats = *stats;
	d->has_stats = TRUE;
}

gboolean vr_domain_acting(const struct vr_domain *d)
{
	if (!d->managed || d->user_paused)
		return FALSE;
	switch (d->action) {
	case VR_ACTIVE_ACTION_AGENT_RECLAIM:
		return d->session && vr_agent_session_is_up(d->session) && !d->agent_paused &&
		       d->policy_sent && d->sent_share_bytes > 0;
	case VR_ACTIVE_ACTION_BALLOON:
		return d->balloon_actual_bytes > 0 &&
		       d->balloon_actual_bytes < d->info.memory_bytes;
	case VR_ACTIVE_ACTION_HOST_PAGEOUT:
		return d->share_bytes > 0;
	case VR_ACTIVE_ACTION_NONE:
		break;
	}
	return FALSE;
}

void vr_domain_fill_status(const struct vr_domain *d, struct vr_domain_status *out)
{
	memset(out, 0, sizeof(*out));
	g_strlcpy(out->name, d->name, sizeof(out->name));
	g_strlcpy(out->uuid, d->uuid, sizeof(out->uuid));
	out->managed = d->managed;
	if (d->reason)
		g_strlcpy(out->reason, d->reason, sizeof(out->reason));
	g_strlcpy(out->policy, d->policy_name, sizeof(out->policy));
	if (d->tuning) {
		out->priority = d->tuning->priority;
		out->guaranteed_bytes = d->tuning->guaranteed_bytes;
	}
	if (!d->session) {
		out->agent_state = VR_AGENT_STATE_NONE;
	} else if (vr_agent_session_is_up(d->session)) {
		const struct vr_proto_hello *hello = vr_agent_session_hello(d->session);
		out->agent_state = VR_AGENT_STATE_CONNECTED;
		g_strlcpy(out->agent_version, hello->agent, sizeof(out->agent_version));
		g_strlcpy(out->agent_backend, hello->backend, sizeof(out->agent_backend));
	} else {
		out->agent_state = vr_agent_session_last_error(d->session) ?
					   VR_AGENT_STATE_FAILED :
					   VR_AGENT_STATE_CONNECTING;
	}
	out->action = vr_domain_acting(d) ? d->action : VR_ACTIVE_ACTION_NONE;
	out->paused = d->user_paused;
	out->share_bytes = d->share_bytes;
	out->reclaimed_bytes = d->reclaimed_bytes;
	out->rss_start_bytes = d->rss_start_bytes;
	out->rss_bytes = d->rss_bytes;
	out->swap_bytes = d->swap_bytes;
	/* A gauge: the last stats of an agent that is gone say nothing of now. */
	if (d->has_stats && d->stats.has_reportable_free_bytes && d->session &&
	    vr_agent_session_is_up(d->session))
		out->reportable_free_bytes = d->stats.reportable_free_bytes;
	out->qt_exceeds = d->has_stats ? d->stats.qt_exceeds : 0;
	out->cold_bytes = d->cold_bytes;
	out->daemon_cpu_us = d->cpu_us;
	/* Only a managed domain asks its QEMU anything. */
	if (d->managed && d->monitor && vr_monitor_worker_stall_reason(d->monitor)) {
		out->degraded = TRUE;
		g_strlcpy(out->degraded_reason, vr_monitor_worker_stall_reason(d->monitor),
			  sizeof(out->degraded_reason));
	}
	if (d->last_error)
		g_strlcpy(out->last_error, d->last_error, sizeof(out->last_error));
	else if (d->session && vr_agent_session_last_error(d->session))
		g_strlcpy(out->last_error, vr_agent_session_last_error(d->session),
			  sizeof(out->last_error));
}
