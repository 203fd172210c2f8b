/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One domain's state in vreclaimd (see domain.h): managed or why not, its
 * tuning and policy, and its totals.
 */
#include "domain.h"

#include <string.h>

#include "actions/action.h"
#include "libvirt/qemu-passthrough.h"

/* G_DEFINE_QUARK's name has dashes: clang-format would split them. */
/* clang-format off */
G_DEFINE_QUARK(vr-domain-error-quark, vr_domain_error)
/* clang-format on */

struct vr_domain *vr_domain_new(const char *uuid, const char *name)
{
	struct vr_domain *d = g_new0(struct vr_domain, 1);

	g_strlcpy(d->uuid, uuid, sizeof(d->uuid));
	d->name = g_strdup(name);
	d->reason = g_strdup("not read yet");
	d->policy_name = g_strdup("");
	vr_ratelimit_init(&d->reject_log, VR_DOMAIN_REJECT_LOG_INTERVAL_US,
			  VR_DOMAIN_REJECT_LOG_BURST);
	vr_fleet_credit_init(&d->credit);
	return d;
}

static void domain_drop_management(struct vr_domain *d)
{
	vr_domain_set_action(d, NULL);
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
	g_free(d->state_saved);
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

void vr_domain_set_action(struct vr_domain *d, const struct vr_action_ops *ops)
{
	if (d->action_ops != ops && d->action_ops && d->action_ops->stop)
		d->action_ops->stop(d);
	d->action_ops = ops;
	d->action = ops ? ops->action : VR_DOMAIN_ACTION_NONE;
}

void vr_domain_set_error(struct vr_domain *d, const char *message)
{
	g_free(d->last_error);
	d->last_error = g_strdup(message);
	d->last_error_is_wait = FALSE;
}

void vr_domain_wait(struct vr_domain *d, const char *why)
{
	vr_domain_set_error(d, why);
	d->last_error_is_wait = TRUE;
}

void vr_domain_end_wait(struct vr_domain *d)
{
	if (d->last_error_is_wait)
		vr_domain_set_error(d, NULL);
}

void vr_domain_wait_for_swap(struct vr_domain *d, const struct vr_host_snapshot *host,
			     gboolean full)
{
	g_autofree char *why = NULL;

	if (!full) {
		vr_domain_end_wait(d);
		return;
	}
	why = vr_host_swap_full_reason(host);
	vr_domain_wait(d, why);
}

void vr_domain_account_host_pageout(struct vr_domain *d, const struct vr_host_reclaim_result *res,
				    const struct vr_host_snapshot *host)
{
	vr_domain_wait_for_swap(d, host, res->swap_full);
	if (res->swap_full)
		return;
	vr_share_window_charge(&d->window, res->advised_bytes);
	vr_domain_add_reclaimed(d, res->advised_bytes);
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
	return vr_u64_add_sat(stats->sz_applied, stats->swap_cache_release_bytes);
}

void vr_domain_reject(struct vr_domain *d, int64_t now_us, const char *message)
{
	uint64_t suppressed = 0;

	d->rejected_reports = vr_u64_add_sat(d->rejected_reports, 1);
	if (!vr_ratelimit_pass(&d->reject_log, now_us, &suppressed))
		return;
	if (suppressed)
		g_warning("%s: %s (and %" G_GUINT64_FORMAT " more rejected, not logged)", d->name,
			  message, suppressed);
	else
		g_warning("%s: %s", d->name, message);
}

gboolean vr_domain_account_stats_at(struct vr_domain *d, const struct vr_agent_stats *stats,
				    gboolean restarted, int64_t now_us)
{
	uint64_t now = policy_reclaimed_bytes(stats);
	uint64_t last = policy_reclaimed_bytes(&d->stats);
	uint64_t added = 0;
	gboolean ok = TRUE;

	/* Counters of a new agent start at 0: all it reports is new. A first
	 * report counts whole too only if the agent started after vreclaimd
	 * took the domain; otherwise it is a baseline, or, after vreclaimd
	 * restarted with the domain's state, counts from the agent's counters
	 * as the previous vreclaimd last saw them (whole when the agent
	 * restarted meanwhile: its counters or uptime went back). */
	if (!d->has_stats && d->has_stats_base) {
		uint64_t base = policy_reclaimed_bytes(&d->stats_base);

		if (vr_agent_stats_went_back(&d->stats_base, stats) || now < base)
			added = now;
		else
			added = now - base;
		d->has_stats_base = FALSE;
	} else if (restarted) {
		added = now;
	} else if (d->has_stats && now >= last) {
		added = now - last;
	}
	if (!vr_reclaim_bound_check(&d->reclaim_bound, added, d->info.memory_bytes, now_us)) {
		g_autofree char *msg = g_strdup_printf(
			"the agent's stats rejected: they claim %" G_GUINT64_FORMAT
			" bytes reclaimed%s, more than a guest of %" G_GUINT64_FORMAT
			" bytes can have reclaimed by now (%" G_GUINT64_FORMAT
			" bytes); not counted",
			added, restarted ? " since the agent started" : " more",
			d->info.memory_bytes, d->reclaim_bound.allowance_bytes);

		ok = FALSE;
		vr_domain_reject(d, now_us, msg);
	} else {
		d->reclaimed_bytes = vr_u64_add_sat(d->reclaimed_bytes, added);
	}
	d->stats = *stats;
	d->has_stats = TRUE;
	return ok;
}

void vr_domain_account_stats(struct vr_domain *d, const struct vr_agent_stats *stats,
			     gboolean restarted)
{
	vr_domain_account_stats_at(d, stats, restarted, g_get_monotonic_time());
}

void vr_domain_add_reclaimed(struct vr_domain *d, uint64_t bytes)
{
	d->reclaimed_bytes = vr_u64_add_sat(d->reclaimed_bytes, bytes);
}

static const char *credit_verdict_name(enum vr_fleet_credit_verdict verdict)
{
	switch (verdict) {
	case VR_FLEET_CREDIT_IDLE:
		return "idle: its share goes to the others while it is";
	case VR_FLEET_CREDIT_SLOW:
		return "slow: too small a claim to judge";
	case VR_FLEET_CREDIT_GAVE_BACK:
		return "it gives back";
	case VR_FLEET_CREDIT_HELD_BACK:
		return "it does not give back what it claims";
	}
	return "?";
}

uint32_t vr_domain_update_credit(struct vr_domain *d, int64_t now_us, uint64_t share_window_us)
{
	uint32_t before = d->credit.credit_permille;
	struct vr_fleet_credit_sample s = {
		.rss_bytes = d->rss_bytes,
		.share_bytes = d->share_bytes,
		.share_window_us = share_window_us,
		.agent_known = d->has_stats && d->session && vr_agent_session_is_up(d->session),
		.reclaimed_bytes = policy_reclaimed_bytes(&d->stats),
	};

	if (d->action != VR_DOMAIN_ACTION_AGENT_RECLAIM) {
		vr_fleet_credit_init(&d->credit);
		return d->credit.credit_permille;
	}
	if (!d->rss_bytes)
		return d->credit.credit_permille; /* its QEMU process is not read yet */
	if (vr_fleet_credit_update(&d->credit, now_us, &s) && d->credit.credit_permille != before)
		g_debug("%s: fleet credit %u.%03u -> %u.%03u (%s): over the last %d s it was granted %" G_GUINT64_FORMAT
			" bytes, its agent claimed %" G_GUINT64_FORMAT
			" reclaimed and its RSS fell %" G_GUINT64_FORMAT
			" bytes (over %d s: %" G_GUINT64_FORMAT " claimed, %" G_GUINT64_FORMAT
			" fell); it gives back at 1/%u of its claim, is idle under 1/%u of its grant",
			d->name, before / 1000, before % 1000, d->credit.credit_permille / 1000,
			d->credit.credit_permille % 1000, credit_verdict_name(d->credit.verdict),
			(int)(VR_FLEET_CREDIT_HORIZON_WINDOWS * VR_FLEET_CREDIT_WINDOW_US /
			      G_USEC_PER_SEC),
			d->credit.granted_bytes, d->credit.claimed_bytes, d->credit.released_bytes,
			(int)(VR_FLEET_CREDIT_LONG_HORIZON_WINDOWS * VR_FLEET_CREDIT_WINDOW_US /
			      G_USEC_PER_SEC),
			d->credit.long_claimed_bytes, d->credit.long_released_bytes,
			VR_FLEET_CREDIT_CLAIM_DIVISOR, VR_FLEET_CREDIT_IDLE_DIVISOR);
	return d->credit.credit_permille;
}

gboolean vr_domain_acting(const struct vr_domain *d)
{
	if (!d->managed || d->user_paused)
		return FALSE;
	switch (d->action) {
	case VR_DOMAIN_ACTION_AGENT_RECLAIM:
		return d->session && vr_agent_session_is_up(d->session) && !d->agent_paused &&
		       d->policy_sent && d->sent_share_bytes > 0;
	case VR_DOMAIN_ACTION_BALLOON:
		return d->balloon_actual_bytes > 0 &&
		       d->balloon_actual_bytes < d->info.memory_bytes;
	case VR_DOMAIN_ACTION_HOST_PAGEOUT:
		return d->share_bytes > 0;
	case VR_DOMAIN_ACTION_NONE:
		break;
	}
	return FALSE;
}

void vr_domain_state_fill(const struct vr_domain *d, struct vr_domain_state *out)
{
	const struct vr_agent_stats *agent = d->has_stats      ? &d->stats :
					     d->has_stats_base ? &d->stats_base :
								 NULL;

	memset(out, 0, sizeof(*out));
	g_strlcpy(out->uuid, d->uuid, sizeof(out->uuid));
	g_strlcpy(out->name, d->name, sizeof(out->name));
	out->qemu = d->qemu;
	out->reclaimed_bytes = d->reclaimed_bytes;
	out->rejected_reports = d->rejected_reports;
	out->rss_start_bytes = d->rss_start_bytes;
	out->paused = d->user_paused;
	out->credit_permille = d->credit.credit_permille;
	out->trust_permille = d->credit.trust_permille;
	if (agent) {
		out->agent_uptime_ms = agent->uptime_ms;
		out->agent_sz_applied_bytes = agent->sz_applied;
		out->agent_swap_cache_release_bytes = agent->swap_cache_release_bytes;
	}
	out->window = d->window;
}

void vr_domain_state_apply(struct vr_domain *d, const struct vr_domain_state *st,
			   uint64_t window_len_us, int64_t now_us)
{
	d->reclaimed_bytes = st->reclaimed_bytes;
	d->rejected_reports = st->rejected_reports;
	if (st->rss_start_bytes)
		d->rss_start_bytes = st->rss_start_bytes;
	d->user_paused = st->paused;
	vr_fleet_credit_init(&d->credit);
	/* What its judgements made of it; its windows (granted, claimed,
	 * RSS) start afresh: judged again after a horizon of windows. */
	d->credit.credit_permille = st->credit_permille;
	d->credit.trust_permille = st->trust_permille;
	/* Only an agent that reported has counters to count from. */
	memset(&d->stats_base, 0, sizeof(d->stats_base));
	d->has_stats_base = !d->has_stats && (st->agent_uptime_ms || st->agent_sz_applied_bytes ||
					      st->agent_swap_cache_release_bytes);
	d->stats_base.uptime_ms = st->agent_uptime_ms;
	d->stats_base.sz_applied = st->agent_sz_applied_bytes;
	d->stats_base.swap_cache_release_bytes = st->agent_swap_cache_release_bytes;
	d->window_hold_until_us = 0;
	memset(&d->window, 0, sizeof(d->window));
	if (vr_share_window_open(&st->window, now_us, window_len_us)) {
		d->window = st->window;
		d->window_hold_until_us = st->window.start_us + (int64_t)window_len_us;
	}
	d->restored = TRUE;
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
	out->action = vr_domain_acting(d) ? d->action : VR_DOMAIN_ACTION_NONE;
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
	out->credit_permille = d->credit.credit_permille;
	out->agent_rejected_reports = d->rejected_reports;
	out->agent_log_suppressed = d->reject_log.suppressed_total;
	if (d->session) {
		struct vr_agent_session_counters c;

		vr_agent_session_counters(d->session, &c);
		out->agent_rejected_reports =
			vr_u64_add_sat(out->agent_rejected_reports, c.refused_lies);
		out->agent_log_suppressed =
			vr_u64_add_sat(out->agent_log_suppressed, c.log_suppressed);
	}
	/* Only a managed domain asks its QEMU anything. */
	if (d->managed && d->monitor && vr_monitor_worker_stall_reason(d->monitor)) {
		out->degraded = TRUE;
		g_strlcpy(out->degraded_reason, vr_monitor_worker_stall_reason(d->monitor),
			  sizeof(out->degraded_reason));
	} else if (d->managed && vr_agent_session_stalled(d->session)) {
		/* The same for the agent's socket peer: its guest (or QEMU)
		 * does not answer, and vreclaimd serves the others. */
		const char *why = vr_agent_session_last_error(d->session);

		out->degraded = TRUE;
		g_snprintf(out->degraded_reason, sizeof(out->degraded_reason),
			   "its agent does not answer: %s", why ? why : "a request timed out");
	}
	if (d->last_error)
		g_strlcpy(out->last_error, d->last_error, sizeof(out->last_error));
	else if (d->session && vr_agent_session_last_error(d->session))
		g_strlcpy(out->last_error, vr_agent_session_last_error(d->session),
			  sizeof(out->last_error));
}

/* ---- the agent's session and calls ----------------------------------------- */

guint vr_domain_agent_timeout_ms(const struct vr_domain *d)
{
	return d->env && d->env->config->agent_timeout_ms ?
		       (guint)d->env->config->agent_timeout_ms :
		       VR_DOMAIN_AGENT_TIMEOUT_MS;
}

static void agent_up(struct vr_agent_session *s, const struct vr_proto_hello *hello,
		     gpointer user_data)
{
	struct vr_domain *d = user_data;

	(void)s;
	g_message("%s: agent %s up (backend %s, free page reporting %s)", d->name, hello->agent,
		  hello->backend, hello->free_page_reporting ? "active" : "OFF");
	if (!hello->free_page_reporting)
		vr_domain_set_error(d, "the guest has no free page reporting: what its agent "
				       "reclaims stays with the guest");
	/* A new agent (or a new connection) knows nothing we sent before;
	 * it may have started --paused: resume it (a no-op if it runs). */
	d->policy_sent = FALSE;
	d->agent_resync = FALSE;
	d->agent_paused = TRUE;
	d->agent_pause_pending = FALSE;
	vr_access_source_agent_forget(d->source);
}

static void agent_down(struct vr_agent_session *s, const GError *error, gpointer user_data)
{
	struct vr_domain *d = user_data;

	(void)s;
	g_message("%s: agent down: %s", d->name, error ? error->message : "closed");
	vr_access_source_agent_forget(d->source);
	d->agent_pause_pending = FALSE;
}

static void agent_report(struct vr_agent_session *s, const struct vr_agent_stats *stats,
			 uint64_t seq, gpointer user_data)
{
	struct vr_domain *d = user_data;
	uint64_t t0 = vr_thread_cpu_us();

	(void)s;
	g_debug("%s: report %" G_GUINT64_FORMAT ": reclaimed %" G_GUINT64_FORMAT
		" bytes in the guest (its reclaimer tried %" G_GUINT64_FORMAT
		", applied %" G_GUINT64_FORMAT "), quota exceeded %" G_GUINT64_FORMAT
		" times, guest free %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes",
		d->name, seq, stats->reclaimed_bytes, stats->sz_tried, stats->sz_applied,
		stats->qt_exceeds, stats->mem_free_bytes, stats->mem_total_bytes);
	vr_domain_account_stats(d, stats, FALSE);
	d->cpu_us += vr_thread_cpu_us() - t0;
}

static void agent_restarted(struct vr_agent_session *s, const struct vr_agent_stats *last,
			    const struct vr_agent_stats *now, gpointer user_data)
{
	struct vr_domain *d = user_data;

	(void)s;
	(void)last;
	/* The session logged it, rate-limited: a guest can fake restarts. */
	g_debug("%s: the agent started over (its counters went back)", d->name);
	vr_domain_account_stats(d, now, TRUE);
	/* A new agent on the same connection (the guest rebooted): it runs
	 * its own policy, maybe paused, and knows nothing we sent. As when an
	 * agent comes up, it gets our policy and pause state again, quietly:
	 * a guest that fakes restarts would otherwise log a line per tick. */
	d->agent_resync = TRUE;
	d->agent_paused = !d->user_paused;
	d->agent_pause_pending = FALSE;
	vr_access_source_agent_forget(d->source);
}

static const struct vr_agent_session_ops agent_ops = {
	.up = agent_up,
	.down = agent_down,
	.report = agent_report,
	.restarted = agent_restarted,
};

gboolean vr_domain_open_session(struct vr_domain *d, GError **error)
{
	struct vr_agent_session_limits limits;

	vr_agent_session_limits_init(&limits, d->info.memory_bytes);
	d->session = vr_agent_session_new(d->name, d->info.agent_socket_path, &limits, &agent_ops,
					  d, error);
	return d->session != NULL;
}

/*
 * A reply callback's link to its domain: the domain may be dropped while the
 * call is pending (vr_agent_session_free() then calls back with an error or
 * not at all), so replies find it again by UUID.
 */
struct call_ctx {
	struct vr_domain_env *env;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	enum vr_proto_command command;
	uint64_t share_bytes;
	gboolean pause;
	gboolean quiet; /* a resync after an agent restart: no message */
};

static struct call_ctx *call_ctx_new(const struct vr_domain *d, enum vr_proto_command command)
{
	struct call_ctx *c = g_new0(struct call_ctx, 1);

	c->env = d->env;
	g_strlcpy(c->uuid, d->uuid, sizeof(c->uuid));
	c->command = command;
	return c;
}

static void on_agent_reply(struct vr_agent_session *s, struct vr_proto_message *reply,
			   const GError *error, gpointer user_data)
{
	g_autofree struct call_ctx *c = user_data;
	struct vr_domain *d = c->env ? g_hash_table_lookup(c->env->domains, c->uuid) : NULL;
	uint64_t t0 = vr_thread_cpu_us();

	(void)s;
	if (!d || !d->session)
		return;
	if (c->command == VR_PROTO_PAUSE || c->command == VR_PROTO_RESUME)
		d->agent_pause_pending = FALSE;
	if (error || reply->kind == VR_PROTO_MESSAGE_ERROR) {
		g_autofree char *msg = g_strdup_printf("agent %s: %s",
						       vr_proto_command_name(c->command),
						       error ? error->message : reply->error.desc);
		g_warning("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		if (c->command == VR_PROTO_SET_POLICY)
			d->policy_sent = FALSE; /* send it again next tick */
		if (c->command == VR_PROTO_PAUSE || c->command == VR_PROTO_RESUME)
			d->agent_paused = !c->pause; /* not done: try again */
		return;
	}
	switch (c->command) {
	case VR_PROTO_GET_STATS:
		vr_domain_account_stats(d, &reply->stats, FALSE);
		break;
	case VR_PROTO_SET_POLICY:
		g_debug("%s: the agent runs a quota of %" G_GUINT64_FORMAT " bytes per window",
			d->name, c->share_bytes);
		break;
	case VR_PROTO_PAUSE:
	case VR_PROTO_RESUME:
		if (c->quiet)
			g_debug("%s: agent %s again", d->name, c->pause ? "paused" : "resumed");
		else
			g_message("%s: agent %s", d->name, c->pause ? "paused" : "resumed");
		break;
	default:
		break;
	}
	d->cpu_us += vr_thread_cpu_us() - t0;
}

static void domain_call(struct vr_domain *d, struct vr_proto_request *req, struct call_ctx *c)
{
	g_autoptr(GError) error = NULL;

	if (!vr_agent_session_call(d->session, req, vr_domain_agent_timeout_ms(d), on_agent_reply,
				   c, &error)) {
		g_autofree char *msg = g_strdup_printf(
			"agent %s: %s", vr_proto_command_name(c->command), error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		if (c->command == VR_PROTO_PAUSE || c->command == VR_PROTO_RESUME)
			d->agent_pause_pending = FALSE;
		g_free(c);
	}
}

void vr_domain_agent_call(struct vr_domain *d, struct vr_proto_request *req, uint64_t share_bytes)
{
	struct call_ctx *c = call_ctx_new(d, req->command);

	c->share_bytes = share_bytes;
	domain_call(d, req, c);
}

void vr_domain_agent_set_paused(struct vr_domain *d, gboolean pause)
{
	if (pause == d->agent_paused || d->agent_pause_pending ||
	    !vr_agent_session_is_up(d->session))
		return;
	g_auto(vr_proto_request) req = { .command = pause ? VR_PROTO_PAUSE : VR_PROTO_RESUME };
	struct call_ctx *c = call_ctx_new(d, req.command);
	c->pause = pause;
	c->quiet = d->agent_resync;
	d->agent_paused = pause;
	d->agent_pause_pending = TRUE;
	domain_call(d, &req, c);
}

/* ---- the QEMU monitor ------------------------------------------------------ */

/* A libvirt lookup for @uuid's monitor: the domain is found again by UUID
 * when libvirt answers (it may have gone meanwhile). */
struct monitor_lookup {
	struct vr_domain_env *env;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
};

static void monitor_lookup_over(gpointer data)
{
	struct monitor_lookup *c = data;

	g_hash_table_remove(c->env->lookups, c->uuid);
	g_free(c);
}

static void monitor_lookup_done(virDomainPtr dom, const GError *error, gpointer user_data)
{
	struct monitor_lookup *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->env->domains, c->uuid);
	g_autoptr(GError) local = NULL;
	struct vr_qemu_monitor *mon;

	if (!d || d->monitor || d->qmp_path)
		return;
	if (!dom) {
		g_autofree char *msg = g_strdup_printf("QEMU monitor: %s", error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		return;
	}
	mon = vr_qemu_monitor_new_libvirt(dom);
	mon->timeout_ms = VR_DOMAIN_QMP_TIMEOUT_MS;
	d->monitor = vr_monitor_worker_new(d->name, mon, &local);
	if (!d->monitor)
		vr_domain_set_error(d, local->message);
}

gboolean vr_domain_monitor(struct vr_domain *d, GError **error)
{
	struct monitor_lookup *c;

	if (d->monitor)
		return TRUE;
	if (!d->env || !d->env->lv) {
		g_set_error(error, VR_DOMAIN_ERROR, VR_DOMAIN_ERROR_NOT_LIBVIRT,
			    "no QEMU monitor: vreclaimd has no libvirt connection");
		return FALSE;
	}
	if (!g_hash_table_contains(d->env->lookups, d->uuid)) {
		g_hash_table_add(d->env->lookups, g_strdup(d->uuid));
		c = g_new0(struct monitor_lookup, 1);
		c->env = d->env;
		g_strlcpy(c->uuid, d->uuid, sizeof(c->uuid));
		vr_libvirt_lookup(d->env->lv, d->uuid, monitor_lookup_done, c, monitor_lookup_over);
	}
	return FALSE;
}

void vr_domain_monitor_failed(struct vr_domain *d, const GError *error)
{
	if (!d->qmp_path && error && error->domain == VR_QEMU_MONITOR_ERROR)
		g_clear_pointer(&d->monitor, vr_monitor_worker_free);
}

/* ---- the fleet's view ------------------------------------------------------ */

void vr_domain_hold_offer(struct vr_domain *d, const struct vr_scheme *s,
			  struct vr_fleet_domain *fd)
{
	uint64_t hold_us = vr_fleet_offer_hold_us(s);
	uint64_t offer_bytes = 0;

	if (!vr_fleet_offer_hold_update(&d->offer_hold, fd->hist_bytes, g_get_monotonic_time(),
					hold_us))
		return;
	for (guint score = 0; score <= VR_MAX_SCORE; score++)
		offer_bytes += fd->hist_bytes[score];
	g_debug("%s: offers %" G_GUINT64_FORMAT
		" bytes, its largest picture of the last %" G_GUINT64_FORMAT " s",
		d->name, offer_bytes, hold_us / G_USEC_PER_SEC);
}
