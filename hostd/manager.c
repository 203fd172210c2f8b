/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's manager (see manager.h): domains from libvirt, the tick
 * (acquire -> decide -> act), and the control socket's operations.
 */
#define _GNU_SOURCE
#include "manager.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "domain.h"
#include "fleet-quota.h"
#include "host-watermarks.h"
#include "libvirt-conn.h"
#include "metrics.h"
#include "procfs.h"
#include "read-batch.h"

#ifndef VRD_VERSION
#define VRD_VERSION "unknown"
#endif

/* Time allowed for an agent's get-regions, set-policy, pause or resume when
 * the config does not say, ms. */
#define VR_MANAGER_AGENT_TIMEOUT_MS 5000

/* A new share is sent to the agent only when it differs from the last one
 * sent by more than this part (per-mille): a quota rewritten every second
 * would cost the guest a DAMON commit each time for nothing. */
#define VR_MANAGER_SHARE_HYSTERESIS_PERMILLE 250

/* A share that falls to 0 is sent only after it stayed 0 this long, us: a
 * domain's eligible cold bytes come and go as the agent pages out (DAMON
 * resets the age of what it tried), and each change costs a commit. */
#define VR_MANAGER_SHARE_HOLD_US (30 * G_USEC_PER_SEC)

/* A smaller share is sent at most this often per domain, us (a larger one
 * at once: the host needs the memory). Each costs the guest a DAMON commit,
 * and a scheme rewritten every few seconds frees little. */
#define VR_MANAGER_SHARE_MIN_PERIOD_US (15 * G_USEC_PER_SEC)

struct vr_manager {
	struct vr_daemon_config *config;
	char *config_path;
	char *procfs;
	char *run_dir_override;
	char *run_dir;

	struct vr_libvirt *lv;
	GHashTable *domains; /* uuid -> struct vr_domain * */

	struct vr_read_batch *reads;
	guint meminfo_read;
	guint psi_read;
	struct vr_host_snapshot host;
	gboolean host_known;
	gboolean host_needs_memory;

	struct vr_control_server *control;
	struct vr_metrics_server *metrics;

	guint tick_source;
	uint64_t ticks;
	uint64_t reloads;
	gint64 started_us;
};

/* The calling thread's CPU time, us: what the daemon spends per domain. */
static uint64_t thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * G_USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- agent sessions ------------------------------------------------------- */

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
	d->agent_paused = TRUE;
	d->agent_pause_pending = FALSE;
	d->picture_pending = FALSE;
}

static void agent_down(struct vr_agent_session *s, const GError *error, gpointer user_data)
{
	struct vr_domain *d = user_data;

	(void)s;
	g_message("%s: agent down: %s", d->name, error ? error->message : "closed");
	d->has_picture = FALSE;
	d->picture_pending = FALSE;
	d->agent_pause_pending = FALSE;
}

static void agent_report(struct vr_agent_session *s, const struct vr_agent_stats *stats,
			 uint64_t seq, gpointer user_data)
{
	struct vr_domain *d = user_data;
	uint64_t t0 = thread_cpu_us();

	(void)s;
	(void)seq;
	vr_domain_account_stats(d, stats, FALSE);
	d->cpu_us += thread_cpu_us() - t0;
}

static void agent_restarted(struct vr_agent_session *s, const struct vr_agent_stats *last,
			    const struct vr_agent_stats *now, gpointer user_data)
{
	struct vr_domain *d = user_data;

	(void)s;
	(void)last;
	g_message("%s: the agent started over (its counters went back)", d->name);
	vr_domain_account_stats(d, now, TRUE);
}

static const struct vr_agent_session_ops agent_ops = {
	.up = agent_up,
	.down = agent_down,
	.report = agent_report,
	.restarted = agent_restarted,
};

/*
 * A reply callback's link to its domain: the domain may be dropped while the
 * call is pending (vr_agent_session_free() then calls back with an error or
 * not at all), so replies find it again by UUID.
 */
struct call_ctx {
	struct vr_manager *m;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	enum vr_proto_command command;
	uint64_t share_bytes;
	guint generation;
	gboolean pause;
};

static struct call_ctx *call_ctx_new(struct vr_manager *m, const struct vr_domain *d,
				     enum vr_proto_command command)
{
	struct call_ctx *c = g_new0(struct call_ctx, 1);

	c->m = m;
	g_strlcpy(c->uuid, d->uuid, sizeof(c->uuid));
	c->command = command;
	return c;
}

static void on_agent_reply(struct vr_agent_session *s, struct vr_proto_message *reply,
			   const GError *error, gpointer user_data)
{
	g_autofree struct call_ctx *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->m->domains, c->uuid);
	uint64_t t0 = thread_cpu_us();

	(void)s;
	if (!d || !d->session)
		return;
	if (c->command == VR_PROTO_GET_REGIONS)
		d->picture_pending = FALSE;
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
	case VR_PROTO_GET_REGIONS:
		vr_proto_regions_clear(&d->picture);
		d->picture = reply->regions;
		memset(&reply->regions, 0, sizeof(reply->regions));
		d->has_picture = TRUE;
		break;
	case VR_PROTO_SET_POLICY:
		g_debug("%s: the agent runs a quota of %" G_GUINT64_FORMAT " bytes per window",
			d->name, c->share_bytes);
		break;
	case VR_PROTO_PAUSE:
	case VR_PROTO_RESUME:
		g_message("%s: agent %s", d->name, c->pause ? "paused" : "resumed");
		break;
	default:
		break;
	}
	d->cpu_us += thread_cpu_us() - t0;
}

static void domain_call(struct vr_manager *m, struct vr_domain *d, struct vr_proto_request *req,
			struct call_ctx *c)
{
	g_autoptr(GError) error = NULL;
	guint timeout = m->config->agent_timeout_ms ? (guint)m->config->agent_timeout_ms :
						      VR_MANAGER_AGENT_TIMEOUT_MS;

	if (!vr_agent_session_call(d->session, req, timeout, on_agent_reply, c, &error)) {
		g_autofree char *msg = g_strdup_printf(
			"agent %s: %s", vr_proto_command_name(c->command), error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		if (c->command == VR_PROTO_GET_REGIONS)
			d->picture_pending = FALSE;
		if (c->command == VR_PROTO_PAUSE || c->command == VR_PROTO_RESUME)
			d->agent_pause_pending = FALSE;
		g_free(c);
	}
}

/* ---- domains from libvirt -------------------------------------------------- */

static void domain_watch_pid(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	pid_t pid = 0;

	if (!m->run_dir)
		return;
	if (!vr_libvirt_qemu_pid(m->run_dir, m->procfs, d->name, &pid, &error)) {
		g_debug("%s: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return;
	}
	if (pid == d->pid && d->status_read_set)
		return;
	if (d->status_read_set)
		vr_read_batch_remove(m->reads, d->status_read);
	d->status_read_set = FALSE;
	g_autofree char *path = g_strdup_printf("%s/%d/status", m->procfs, (int)pid);
	d->status_read = vr_read_batch_add(m->reads, path, &error);
	if (error) {
		g_warning("%s: %s", d->name, error->message);
		return;
	}
	d->status_read_set = TRUE;
	d->pid = pid;
	d->rss_start_bytes = 0;
}

static void manager_drop_domain(struct vr_manager *m, struct vr_domain *d, const char *why)
{
	g_message("%s: %s; vreclaimd lets it go (reclaimed %" G_GUINT64_FORMAT " bytes)", d->name,
		  why, d->reclaimed_bytes);
	if (d->status_read_set)
		vr_read_batch_remove(m->reads, d->status_read);
	g_hash_table_remove(m->domains, d->uuid);
}

/*
 * Bring domain @ld's state up to date: managed or why not, tuning, policy,
 * agent session. Nothing is half-applied: a new tuning or policy replaces
 * the old one only when both are valid; otherwise the domain is unmanaged
 * with the reason.
 */
static void manager_refresh_domain(struct vr_manager *m, const struct vr_libvirt_domain *ld)
{
	struct vr_domain *d = g_hash_table_lookup(m->domains, ld->uuid);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_domain_tuning) tuning = NULL;
	g_autoptr(vr_policy) policy = NULL;
	g_autofree char *reason = NULL;
	gboolean was_managed;

	if (!d) {
		d = vr_domain_new(ld->uuid, ld->name);
		d->manager = m;
		g_hash_table_insert(m->domains, d->uuid, d);
		g_message("%s: found (uuid %s)", d->name, d->uuid);
	} else if (g_strcmp0(d->name, ld->name) != 0) {
		g_free(d->name);
		d->name = g_strdup(ld->name);
	}
	was_managed = d->managed;

	if (!vr_domain_xml_parse(ld->xml, &info, &error) &&
	    !g_error_matches(error, VR_DOMAIN_XML_ERROR, VR_DOMAIN_XML_ERROR_UNSUPPORTED)) {
		vr_domain_set_unmanaged(d, "cannot read its domain XML: %s", error->message);
		g_warning("%s: %s", d->name, d->reason);
		return;
	}
	/* The metadata first: an operator who wrote it wants to hear what is
	 * wrong with it whatever else keeps the domain unmanaged. */
	tuning = vr_domain_tuning_for(ld, m->config, &reason);
	if (!tuning) {
		if (!d->reason || strcmp(d->reason, reason) != 0 || was_managed)
			g_message("%s: not managed: %s", d->name, reason);
		vr_domain_set_unmanaged(d, "%s", reason);
		return;
	}
	if (error) {
		/* Not a QEMU domain (vr_domain_xml_parse() says which type). */
		vr_domain_set_unmanaged(d, "%s", error->message);
		return;
	}
	if (!(tuning->actions & VR_DOMAIN_ACTION_AGENT_RECLAIM)) {
		vr_domain_set_unmanaged(
			d, "its actions (%s) need a host access source this host lacks",
			vr_domain_actions_to_string(tuning->actions));
		return;
	}
	if (!info.agent_socket_path) {
		vr_domain_set_unmanaged(d, "no agent channel (a unix channel named %s)",
					VR_DOMAIN_AGENT_CHANNEL);
		return;
	}
	policy = vr_domain_policy_for(tuning, m->config, &error);
	if (!policy) {
		g_warning("%s: not managed: %s", d->name, error->message);
		vr_domain_set_unmanaged(d, "%s", error->message);
		return;
	}

	/* Commit: everything is valid. */
	if (!d->tuning || !vr_domain_tuning_equal(d->tuning, tuning) || !d->policy) {
		g_autofree char *a = vr_domain_actions_to_string(tuning->actions);
		g_message("%s: managed: policy %s, priority %u, guaranteed %" G_GUINT64_FORMAT
			  " bytes, actions %s",
			  d->name, tuning->policy ? tuning->policy : "default", tuning->priority,
			  tuning->guaranteed_bytes, a);
		d->policy_generation++;
	} else {
		g_autofree char *old = vr_policy_to_json(d->policy);
		g_autofree char *new = vr_policy_to_json(policy);
		if (strcmp(old, new) != 0)
			d->policy_generation++;
	}
	g_clear_pointer(&d->tuning, vr_domain_tuning_free);
	d->tuning = g_steal_pointer(&tuning);
	g_clear_pointer(&d->policy, vr_policy_free);
	d->policy = g_steal_pointer(&policy);
	g_free(d->policy_name);
	d->policy_name = g_strdup(d->tuning->policy ? d->tuning->policy : "default");
	g_clear_pointer(&d->reason, g_free);
	d->managed = TRUE;

	if (d->session && g_strcmp0(d->info.agent_socket_path, info.agent_socket_path) != 0)
		g_clear_pointer(&d->session, vr_agent_session_free);
	vr_domain_info_clear(&d->info);
	d->info = info;
	memset(&info, 0, sizeof(info));
	if (!d->session) {
		struct vr_agent_session_limits limits;
		vr_agent_session_limits_init(&limits, d->info.memory_bytes);
		d->session = vr_agent_session_new(d->name, d->info.agent_socket_path, &limits,
						  &agent_ops, d, &error);
		if (!d->session) {
			vr_domain_set_unmanaged(d, "%s", error->message);
			return;
		}
	}
	domain_watch_pid(m, d);
}

static void manager_refresh_all(struct vr_manager *m)
{
	g_autoptr(GPtrArray) list = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

	if (!vr_libvirt_list_running(m->lv, &list, &error)) {
		g_warning("%s", error->message);
		return;
	}
	for (guint i = 0; i < list->len; i++) {
		const struct vr_libvirt_domain *ld = g_ptr_array_index(list, i);
		manager_refresh_domain(m, ld);
		g_hash_table_add(seen, (gpointer)ld->uuid);
	}
	GHashTableIter it;
	gpointer key, value;
	g_autoptr(GPtrArray) gone = g_ptr_array_new();
	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, &key, &value))
		if (!g_hash_table_contains(seen, key))
			g_ptr_array_add(gone, value);
	for (guint i = 0; i < gone->len; i++)
		manager_drop_domain(m, g_ptr_array_index(gone, i), "no longer running");
}

static void lv_connected(gpointer user_data)
{
	manager_refresh_all(user_data);
}

static void lv_disconnected(const char *reason, gpointer user_data)
{
	(void)user_data;
	/* The domains keep running and their agents' channels belong to QEMU,
	 * not libvirtd: the sessions and every domain's stats stay. */
	g_message("libvirt is away (%s): the domains keep their state until it is back", reason);
}

static void lv_domain_changed(const char *uuid, const char *name, enum vr_libvirt_change change,
			      gpointer user_data)
{
	struct vr_manager *m = user_data;
	struct vr_domain *d = g_hash_table_lookup(m->domains, uuid);
	g_autoptr(vr_libvirt_domain) ld = NULL;
	g_autoptr(GError) error = NULL;

	if (change == VR_LIBVIRT_STOPPED) {
		if (d)
			manager_drop_domain(m, d, "stopped");
		return;
	}
	if (change == VR_LIBVIRT_REBOOTED && d)
		g_message("%s: the guest rebooted", d->name);
	if (!vr_libvirt_get_running(m->lv, uuid, &ld, &error)) {
		g_warning("%s: %s", name, error->message);
		return;
	}
	if (!ld) {
		if (d)
			manager_drop_domain(m, d, "no longer running");
		return;
	}
	manager_refresh_domain(m, ld);
}

static const struct vr_libvirt_ops libvirt_ops = {
	.connected = lv_connected,
	.disconnected = lv_disconnected,
	.domain_changed = lv_domain_changed,
};

/* ---- the tick: acquire -> decide -> act ------------------------------------ */

static void acquire_host(struct vr_manager *m)
{
	const GError *file_error = NULL;
	gsize len = 0;
	struct vr_meminfo mi;
	struct vr_psi_memory psi = { 0 };
	g_autoptr(GError) error = NULL;
	const char *text = vr_read_batch_text(m->reads, m->meminfo_read, &len, &file_error);

	if (!text || !vr_meminfo_parse(text, &mi, &error)) {
		g_warning("cannot read the host's memory: %s",
			  file_error ? file_error->message : error->message);
		m->host_known = FALSE;
		return;
	}
	m->host.mem_total_bytes = mi.mem_total_bytes;
	m->host.mem_available_bytes = mi.mem_available_bytes;
	text = vr_read_batch_text(m->reads, m->psi_read, &len, &file_error);
	if (text && vr_psi_parse(text, &psi, NULL)) {
		m->host.psi_some_avg10_bp = psi.some.avg10_bp;
		m->host.psi_full_avg10_bp = psi.full.avg10_bp;
	}
	m->host_known = TRUE;
}

static void acquire_domain(struct vr_manager *m, struct vr_domain *d)
{
	const GError *file_error = NULL;
	gsize len = 0;
	struct vr_proc_status st;
	g_autoptr(GError) error = NULL;

	if (!d->status_read_set)
		return;
	const char *text = vr_read_batch_text(m->reads, d->status_read, &len, &file_error);
	if (!text || !vr_proc_status_parse(text, vr_read_batch_path(m->reads, d->status_read), &st,
					   &error)) {
		/* The QEMU process is gone; libvirt's stop event follows. */
		g_debug("%s: %s", d->name, file_error ? file_error->message : error->message);
		vr_read_batch_remove(m->reads, d->status_read);
		d->status_read_set = FALSE;
		d->pid = 0;
		return;
	}
	d->rss_bytes = st.vm_rss_bytes;
	d->swap_bytes = st.vm_swap_bytes;
	if (!d->rss_start_bytes)
		d->rss_start_bytes = st.vm_rss_bytes;
}

static const struct vr_scheme *domain_pageout_scheme(const struct vr_domain *d)
{
	for (guint i = 0; i < d->policy->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(d->policy->schemes, i);
		if (s->action == VR_ACTION_PAGEOUT)
			return s;
	}
	return NULL;
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
	g_autoptr(GError) error = NULL;
	const struct vr_scheme *s = domain_pageout_scheme(d);
	uint64_t eligible = 0;
	double used = 1.0;

	if (!s || !d->has_picture)
		return FALSE;
	if (!vr_fleet_cold_histogram(d->picture.regions, d->picture.sample_interval_us,
				     d->picture.aggr_interval_us, s, d->info.memory_bytes,
				     fd->hist_bytes, &error)) {
		g_autofree char *msg = g_strdup_printf("agent picture refused: %s", error->message);
		g_warning("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		d->has_picture = FALSE;
		return FALSE;
	}
	if (d->has_stats && d->stats.mem_total_bytes > 0)
		used = (double)(d->stats.mem_total_bytes - d->stats.mem_free_bytes) /
		       (double)d->stats.mem_total_bytes;
	d->cold_bytes = 0;
	for (guint score = 0; score <= VR_MAX_SCORE; score++) {
		eligible += fd->hist_bytes[score];
		fd->hist_bytes[score] = (uint64_t)((double)fd->hist_bytes[score] * used);
		d->cold_bytes += fd->hist_bytes[score];
	}
	g_debug("%s: picture of %u regions: %" G_GUINT64_FORMAT
		" bytes cold enough, %" G_GUINT64_FORMAT
		" of them counted (%.0f%% of the guest is in use)",
		d->name, d->picture.regions ? d->picture.regions->len : 0, eligible, d->cold_bytes,
		used * 100);
	return TRUE;
}

static void decide(struct vr_manager *m, GPtrArray *doms)
{
	g_autofree struct vr_fleet_domain *fleet =
		g_new0(struct vr_fleet_domain, MAX(doms->len, 1));
	g_autofree uint64_t *shares = g_new0(uint64_t, MAX(doms->len, 1));
	g_autoptr(GError) error = NULL;
	gboolean needed = m->host_needs_memory;

	if (m->host_known)
		needed = vr_host_needs_memory(&m->config->host_wmarks, &m->host, needed);
	if (needed != m->host_needs_memory)
		g_message("the host %s memory (free rate %u per-mille)",
			  needed ? "needs" : "no longer needs", vr_host_free_mem_rate(&m->host));
	m->host_needs_memory = needed;

	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		struct vr_fleet_domain *fd = &fleet[i];
		fd->name = d->name;
		fd->priority = d->tuning->priority;
		fd->rss_bytes = d->rss_bytes;
		fd->guaranteed_bytes = d->tuning->guaranteed_bytes;
		fd->eligible = needed && !d->user_paused && d->rss_bytes > 0 &&
			       vr_agent_session_is_up(d->session) && decide_domain_hist(d, fd);
	}
	uint64_t quota = m->config->fleet_quota_bytes ? m->config->fleet_quota_bytes : G_MAXUINT64;
	if (!vr_fleet_distribute(fleet, doms->len, needed ? quota : 0, shares, &error)) {
		g_warning("cannot share the fleet quota: %s", error->message);
		memset(shares, 0, sizeof(*shares) * doms->len);
	}
	for (guint i = 0; i < doms->len; i++)
		((struct vr_domain *)g_ptr_array_index(doms, i))->share_bytes = shares[i];
}

static gboolean share_changed(uint64_t sent, uint64_t now)
{
	uint64_t diff = sent > now ? sent - now : now - sent;

	if (!sent || !now)
		return sent != now;
	return diff * 1000 > sent * VR_MANAGER_SHARE_HYSTERESIS_PERMILLE;
}

static void act_domain(struct vr_manager *m, struct vr_domain *d)
{
	if (!vr_agent_session_is_up(d->session))
		return;
	/* The agent always runs the domain's policy, cut to its share; a share
	 * of 0 keeps it monitoring only. Only vreclaimctl pause pauses it. */
	gint64 now = g_get_monotonic_time();
	gboolean hold;

	if (d->share_bytes > 0)
		d->share_nonzero_us = now;
	hold = d->policy_sent && ((d->share_bytes == 0 && d->sent_share_bytes > 0 &&
				   now - d->share_nonzero_us < VR_MANAGER_SHARE_HOLD_US) ||
				  (d->share_bytes < d->sent_share_bytes &&
				   now - d->sent_us < VR_MANAGER_SHARE_MIN_PERIOD_US));
	if (!d->policy_sent || d->sent_generation != d->policy_generation ||
	    (!hold && share_changed(d->sent_share_bytes, d->share_bytes))) {
		g_auto(vr_proto_request) req = { .command = VR_PROTO_SET_POLICY };
		struct call_ctx *c = call_ctx_new(m, d, VR_PROTO_SET_POLICY);
		req.set_policy.policy = vr_domain_agent_policy(
			d, d->share_bytes, m->config->fleet_quota_reset_interval_ms);
		req.set_policy.has_report_interval = TRUE;
		req.set_policy.report_interval_ms = CLAMP(m->config->interval_ms,
							  VR_PROTO_REPORT_INTERVAL_MIN_MS,
							  VR_PROTO_REPORT_INTERVAL_MAX_MS);
		c->share_bytes = d->share_bytes;
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
		domain_call(m, d, &req, c);
	}
	if (d->user_paused != d->agent_paused && !d->agent_pause_pending) {
		gboolean pause = d->user_paused;
		g_auto(vr_proto_request)
			req = { .command = pause ? VR_PROTO_PAUSE : VR_PROTO_RESUME };
		struct call_ctx *c = call_ctx_new(m, d, req.command);
		c->pause = pause;
		d->agent_paused = pause;
		d->agent_pause_pending = TRUE;
		domain_call(m, d, &req, c);
	}
	if (!d->picture_pending && !d->agent_paused) {
		g_auto(vr_proto_request) req = { .command = VR_PROTO_GET_REGIONS };
		req.get_regions.max = VR_PROTO_MAX_REGIONS;
		d->picture_pending = TRUE;
		domain_call(m, d, &req, call_ctx_new(m, d, VR_PROTO_GET_REGIONS));
	}
}

static gint domain_cmp_name(gconstpointer a, gconstpointer b)
{
	const struct vr_domain *da = *(struct vr_domain *const *)a;
	const struct vr_domain *db = *(struct vr_domain *const *)b;

	return g_strcmp0(da->name, db->name);
}

/* The managed domains, by name: the fleet's order is deterministic. */
static GPtrArray *managed_domains(struct vr_manager *m)
{
	GPtrArray *doms = g_ptr_array_new();
	GHashTableIter it;
	gpointer value;

	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, NULL, &value))
		if (((struct vr_domain *)value)->managed)
			g_ptr_array_add(doms, value);
	g_ptr_array_sort(doms, domain_cmp_name);
	return doms;
}

static gboolean tick(gpointer data)
{
	struct vr_manager *m = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) doms = managed_domains(m);

	m->ticks++;
	/* acquire */
	if (!vr_read_batch_run(m->reads, &error))
		g_warning("cannot read procfs: %s", error->message);
	acquire_host(m);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		uint64_t t0 = thread_cpu_us();
		if (!d->status_read_set)
			domain_watch_pid(m, d);
		acquire_domain(m, d);
		d->cpu_us += thread_cpu_us() - t0;
	}
	/* decide */
	decide(m, doms);
	/* act */
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		uint64_t t0 = thread_cpu_us();
		act_domain(m, d);
		d->cpu_us += thread_cpu_us() - t0;
	}
	return G_SOURCE_CONTINUE;
}

/* ---- the control socket --------------------------------------------------- */

static gboolean ctl_status(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			   GError **error)
{
	struct vr_manager *m = user;
	g_autoptr(GPtrArray) all = g_ptr_array_new();
	g_autoptr(GPtrArray) out = vr_domain_status_array_new();
	GHashTableIter it;
	gpointer value;

	(void)error;
	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, NULL, &value))
		g_ptr_array_add(all, value);
	g_ptr_array_sort(all, domain_cmp_name);
	for (guint i = 0; i < all->len; i++) {
		struct vr_domain_status *st = vr_domain_status_new();
		vr_domain_fill_status(g_ptr_array_index(all, i), st);
		g_ptr_array_add(out, st);
	}
	memset(daemon, 0, sizeof(*daemon));
	g_strlcpy(daemon->version, VRD_VERSION, sizeof(daemon->version));
	daemon->uptime_ms = (uint64_t)(g_get_monotonic_time() - m->started_us) / 1000;
	g_strlcpy(daemon->libvirt_uri, vr_libvirt_uri(m->lv), sizeof(daemon->libvirt_uri));
	daemon->libvirt_connected = vr_libvirt_is_connected(m->lv);
	daemon->host_needs_memory = m->host_needs_memory;
	daemon->free_mem_rate_permille = m->host_known ? vr_host_free_mem_rate(&m->host) : 0;
	daemon->fleet_quota_bytes = m->config->fleet_quota_bytes;
	daemon->reloads = m->reloads;
	daemon->ticks = m->ticks;
	*domains = g_steal_pointer(&out);
	return TRUE;
}

static struct vr_domain *find_domain(struct vr_manager *m, const char *name, GError **error)
{
	GHashTableIter it;
	gpointer value;

	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		struct vr_domain *d = value;
		if (g_strcmp0(d->name, name) == 0 || g_strcmp0(d->uuid, name) == 0)
			return d;
	}
	g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN,
		    "domain '%s' is not known to vreclaimd", name);
	return NULL;
}

static gboolean ctl_set(gpointer user, const char *domain, const char *const *settings,
			GError **error)
{
	struct vr_manager *m = user;
	g_autoptr(vr_libvirt_domain) ld = NULL;
	g_autoptr(vr_domain_tuning) tuning = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *xml = NULL;
	struct vr_domain *d = find_domain(m, domain, error);

	if (!d)
		return FALSE;
	if (!vr_libvirt_get_running(m->lv, d->uuid, &ld, error))
		return FALSE;
	if (!ld) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN,
			    "domain '%s' is not running", domain);
		return FALSE;
	}
	/* Start from what its metadata says now (defaults when it has none or
	 * it is invalid: set then writes a whole valid element). */
	if (ld->metadata)
		tuning = vr_domain_tuning_parse(ld->metadata, &local);
	if (!tuning) {
		tuning = vr_domain_tuning_new();
		tuning->enable = TRUE;
	}
	if (!vr_domain_tuning_set_args(tuning, settings, &local)) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT, "%s",
			    local->message);
		return FALSE;
	}
	if (tuning->enable) {
		g_autoptr(vr_policy) policy = vr_domain_policy_for(tuning, m->config, &local);
		if (!policy) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
				    "%s", local->message);
			return FALSE;
		}
	}
	xml = vr_domain_tuning_to_xml(tuning);
	if (!vr_libvirt_set_metadata(m->lv, d->uuid, xml, error))
		return FALSE;
	g_message("%s: metadata set by vreclaimctl", d->name);
	/* Apply it now; libvirt's metadata event applies it once more. */
	g_clear_pointer(&ld, vr_libvirt_domain_free);
	if (vr_libvirt_get_running(m->lv, d->uuid, &ld, NULL) && ld)
		manager_refresh_domain(m, ld);
	return TRUE;
}

static gboolean ctl_pause(gpointer user, const char *domain, gboolean pause, GError **error)
{
	struct vr_manager *m = user;
	GHashTableIter it;
	gpointer value;

	if (domain) {
		struct vr_domain *d = find_domain(m, domain, error);
		if (!d)
			return FALSE;
		d->user_paused = pause;
		g_message("%s: %s by vreclaimctl", d->name, pause ? "paused" : "resumed");
		return TRUE;
	}
	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, NULL, &value))
		((struct vr_domain *)value)->user_paused = pause;
	g_message("every domain %s by vreclaimctl", pause ? "paused" : "resumed");
	return TRUE;
}

static const struct vr_control_ops control_ops = {
	.status = ctl_status,
	.set = ctl_set,
	.pause = ctl_pause,
};

/* ---- life cycle ----------------------------------------------------------- */

struct vr_manager *vr_manager_new(struct vr_daemon_config *config, const char *config_path,
				  const struct vr_manager_paths *paths, GError **error)
{
	g_autoptr(vr_daemon_config) owned = config;
	g_autoptr(vr_manager) m = g_new0(struct vr_manager, 1);
	g_autofree char *path = NULL;
	g_autoptr(GError) local = NULL;

	m->config = g_steal_pointer(&owned);
	m->config_path = g_strdup(config_path);
	m->procfs = g_strdup(paths && paths->procfs ? paths->procfs : "/proc");
	m->run_dir_override = g_strdup(paths ? paths->run_dir : NULL);
	m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
					   vr_libvirt_run_dir(m->config->connect_uri);
	m->domains = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					   (GDestroyNotify)vr_domain_free);
	m->reads = vr_read_batch_new(TRUE, error);
	if (!m->reads)
		return NULL;
	path = g_strdup_printf("%s/meminfo", m->procfs);
	m->meminfo_read = vr_read_batch_add(m->reads, path, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	g_free(path);
	path = g_strdup_printf("%s/pressure/memory", m->procfs);
	m->psi_read = vr_read_batch_add(m->reads, path, NULL);
	m->host_needs_memory = FALSE;
	m->started_us = g_get_monotonic_time();
	return g_steal_pointer(&m);
}

static char *metrics_address(const struct vr_daemon_config *c)
{
	if (!c->metrics_host || !*c->metrics_host)
		return NULL;
	if (strchr(c->metrics_host, ':'))
		return g_strdup_printf("[%s]:%u", c->metrics_host, c->metrics_port);
	return g_strdup_printf("%s:%u", c->metrics_host, c->metrics_port);
}

/* Opens what @c asks for into *@control and *@metrics; nothing on error. */
static gboolean open_servers(struct vr_manager *m, const struct vr_daemon_config *c,
			     struct vr_control_server **control, struct vr_metrics_server **metrics,
			     GError **error)
{
	g_autoptr(vr_control_server) ctl = NULL;
	g_autoptr(vr_metrics_server) met = NULL;
	g_autofree char *address = metrics_address(c);

	ctl = vr_control_server_new(c->control_socket, c->control_socket_mode, &control_ops, m,
				    error);
	if (!ctl)
		return FALSE;
	if (address) {
		met = vr_metrics_server_new(address, 0, ctl_status, m, error);
		if (!met)
			return FALSE;
		g_message("metrics on http://%s/metrics", address);
	}
	*control = g_steal_pointer(&ctl);
	*metrics = g_steal_pointer(&met);
	return TRUE;
}

gboolean vr_manager_start(struct vr_manager *m, GError **error)
{
	if (!open_servers(m, m->config, &m->control, &m->metrics, error))
		return FALSE;
	g_message("control socket %s", m->config->control_socket);
	m->lv = vr_libvirt_new(m->config->connect_uri, (guint)m->config->reconnect_max_ms,
			       &libvirt_ops, m);
	vr_libvirt_start(m->lv);
	m->tick_source = g_timeout_add((guint)m->config->interval_ms, tick, m);
	return TRUE;
}

gboolean vr_manager_reload(struct vr_manager *m, GError **error)
{
	g_autoptr(vr_daemon_config) next = NULL;
	g_autoptr(vr_control_server) control = NULL;
	g_autoptr(vr_metrics_server) metrics = NULL;
	gboolean servers_changed, uri_changed;

	if (!m->config_path) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
			    "no config file to reload (vreclaimd runs on built-in defaults)");
		return FALSE;
	}
	next = vr_daemon_config_load(m->config_path, error);
	if (!next)
		return FALSE;
	servers_changed = g_strcmp0(next->control_socket, m->config->control_socket) != 0 ||
			  next->control_socket_mode != m->config->control_socket_mode ||
			  g_strcmp0(next->metrics_host, m->config->metrics_host) != 0 ||
			  next->metrics_port != m->config->metrics_port;
	if (servers_changed) {
		/* The old listeners go first so the same path or port can be
		 * taken again; if the new ones fail, the old ones come back. */
		g_clear_pointer(&m->control, vr_control_server_free);
		g_clear_pointer(&m->metrics, vr_metrics_server_free);
		if (!open_servers(m, next, &control, &metrics, error)) {
			g_autoptr(GError) again = NULL;
			if (!open_servers(m, m->config, &m->control, &m->metrics, &again))
				g_warning("cannot reopen the control socket: %s", again->message);
			return FALSE;
		}
		m->control = g_steal_pointer(&control);
		m->metrics = g_steal_pointer(&metrics);
	}
	uri_changed = g_strcmp0(next->connect_uri, m->config->connect_uri) != 0;
	vr_daemon_config_free(m->config);
	m->config = g_steal_pointer(&next);
	m->reloads++;
	if (m->tick_source) {
		g_source_remove(m->tick_source);
		m->tick_source = g_timeout_add((guint)m->config->interval_ms, tick, m);
	}
	if (uri_changed) {
		g_hash_table_remove_all(m->domains);
		g_clear_pointer(&m->lv, vr_libvirt_free);
		g_free(m->run_dir);
		m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
						   vr_libvirt_run_dir(m->config->connect_uri);
		m->lv = vr_libvirt_new(m->config->connect_uri, (guint)m->config->reconnect_max_ms,
				       &libvirt_ops, m);
		vr_libvirt_start(m->lv);
	} else if (vr_libvirt_is_connected(m->lv)) {
		/* Policies and the manage mode may have changed. */
		manager_refresh_all(m);
	}
	g_message("configuration reloaded from %s", m->config_path);
	return TRUE;
}

void vr_manager_free(struct vr_manager *m)
{
	if (!m)
		return;
	if (m->tick_source)
		g_source_remove(m->tick_source);
	if (m->domains)
		g_hash_table_destroy(m->domains);
	g_clear_pointer(&m->lv, vr_libvirt_free);
	g_clear_pointer(&m->control, vr_control_server_free);
	g_clear_pointer(&m->metrics, vr_metrics_server_free);
	g_clear_pointer(&m->reads, vr_read_batch_free);
	vr_daemon_config_free(m->config);
	g_free(m->config_path);
	g_free(m->procfs);
	g_free(m->run_dir_override);
	g_free(m->run_dir);
	g_free(m);
}
