/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's manager (see manager.h): domains from libvirt, the tick
 * (acquire -> decide -> act), and the control socket's operations.
 */
#define _GNU_SOURCE
#include "manager.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "balloon.h"
#include "control/control.h"
#include "control/metrics.h"
#include "domain.h"
#include "fleet-quota.h"
#include "host-watermarks.h"
#include "libvirt/libvirt-conn.h"
#include "libvirt/qemu-passthrough.h"
#include "procfs-text.h"
#include "qmp/qemu-commands.h"
#include "qmp/qmp-domain.h"
#include "read-batch.h"
#include "state-dir.h"

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

/* A smaller share (0 too) is sent at most this often per domain, us (a
 * larger one at once: the host needs the memory). Each costs the guest a
 * DAMON commit, and a scheme rewritten every few seconds frees little. */
#define VR_MANAGER_SHARE_MIN_PERIOD_US (15 * G_USEC_PER_SEC)

/* A --qmp socket without a QEMU behind it (or one that could not be
 * probed) is tried again this often, us. */
#define VR_MANAGER_QMP_RETRY_US (5 * G_USEC_PER_SEC)

/* Time QEMU has to answer each QMP command, ms, through our own client
 * (--qmp) and libvirt's passthrough alike: QMP queries answer in
 * milliseconds. A command past it marks the domain degraded; the command
 * runs on the domain's monitor worker, so the main loop never waits for it
 * (monitor-worker.h). */
#define VR_MANAGER_QMP_TIMEOUT_MS 2000

/* State files written per tick at most (vr_domain_state_needs_save()'s "in
 * turn"; a pause or resume goes at once): each is a file created and
 * renamed. Up to 100 domains that change every 5 s this is never reached;
 * 1000 changing domains are each written every 50 s or so. */
#define VR_MANAGER_STATE_SAVES_PER_TICK 20U

/* G_DEFINE_QUARK's name has dashes: clang-format would split them. */
/* clang-format off */
G_DEFINE_QUARK(vr-manager-error-quark, vr_manager_error)
/* clang-format on */

/*
 * A --qmp socket: the QEMU behind it becomes a domain when it answers the
 * probe, and is tried again after VR_MANAGER_QMP_RETRY_US while it does not.
 */
struct qmp_socket {
	char *path;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1]; /* its domain's; "" when none */
	gint64 next_try_us;
	char *last_error; /* logged once per new error */
	/* The monitor worker running the probe, NULL when none runs; it
	 * becomes the domain's when the probe succeeds. */
	struct vr_monitor_worker *probe;
	struct vr_manager *manager;
};

struct vr_manager {
	struct vr_daemon_config *config;
	char *config_path;
	char *procfs;
	char *sysfs;
	GArray *qmp; /* struct qmp_socket */
	char *run_dir_override;
	char *run_dir;

	struct vr_libvirt *lv;
	GHashTable *domains; /* uuid -> struct vr_domain * */
	/* libvirt's answers come later (libvirt-conn.h): a listing is asked
	 * once at a time, a domain's lookup for its QEMU monitor too. */
	gboolean listing;
	GHashTable *lookups; /* uuids (owned) whose lookup is outstanding */
	/* What libvirt last said of each of its domains (uuid -> struct
	 * vr_libvirt_domain *, owned): a reload applies the new config to
	 * them at once, whether libvirt answers or not. */
	GHashTable *views;

	struct vr_read_batch *reads;
	guint meminfo_read;
	guint psi_read;
	struct vr_host_snapshot host;
	gboolean host_known;
	gboolean host_needs_memory;
	enum vr_host_memory_state host_state; /* why, in status and metrics */

	struct vr_control_server *control;
	struct vr_metrics_server *metrics;

	guint tick_source;
	guint state_cursor;	   /* the domain (by name) whose turn to save is next */
	gboolean state_dir_failed; /* its last error was logged */
	uint64_t ticks;
	/* This tick: refresh a domain's picture every picture_period ticks,
	 * in turn by its place act_index among the managed domains (the
	 * config's pictures-per-tick). */
	guint picture_period;
	guint act_index;
	/* This tick: the report interval asked of the agents, ms, by the
	 * fleet's size (vr_fleet_report_interval_ms()). */
	uint64_t report_interval_ms;
	/* The fleet's last decision: its tick and how many domains it shared
	 * the quota among; decide_now asks for one at the next tick. */
	uint64_t decided_tick;
	guint decided_domains;
	gboolean decide_now;
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

static guint agent_timeout_ms(const struct vr_manager *m)
{
	return m->config->agent_timeout_ms ? (guint)m->config->agent_timeout_ms :
					     VR_MANAGER_AGENT_TIMEOUT_MS;
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
	uint64_t t0 = thread_cpu_us();

	(void)s;
	g_debug("%s: report %" G_GUINT64_FORMAT ": reclaimed %" G_GUINT64_FORMAT
		" bytes in the guest (its reclaimer tried %" G_GUINT64_FORMAT
		", applied %" G_GUINT64_FORMAT "), quota exceeded %" G_GUINT64_FORMAT
		" times, guest free %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " bytes",
		d->name, seq, stats->reclaimed_bytes, stats->sz_tried, stats->sz_applied,
		stats->qt_exceeds, stats->mem_free_bytes, stats->mem_total_bytes);
	vr_domain_account_stats(d, stats, FALSE);
	d->cpu_us += thread_cpu_us() - t0;
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
	gboolean quiet; /* a resync after an agent restart: no message */
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
	d->cpu_us += thread_cpu_us() - t0;
}

static void domain_call(struct vr_manager *m, struct vr_domain *d, struct vr_proto_request *req,
			struct call_ctx *c)
{
	g_autoptr(GError) error = NULL;

	if (!vr_agent_session_call(d->session, req, agent_timeout_ms(m), on_agent_reply, c,
				   &error)) {
		g_autofree char *msg = g_strdup_printf(
			"agent %s: %s", vr_proto_command_name(c->command), error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		if (c->command == VR_PROTO_PAUSE || c->command == VR_PROTO_RESUME)
			d->agent_pause_pending = FALSE;
		g_free(c);
	}
}

/* ---- state across restarts (hostd/state-dir.h) ---------------------------- */

static uint64_t window_len_us(const struct vr_manager *m)
{
	return m->config->fleet_quota_reset_interval_ms * 1000;
}

/*
 * @d's QEMU process is known (d->pid): learn its incarnation, and, the first
 * time, take what the previous vreclaimd saved of it. A file that does not
 * parse, or is of another QEMU, is logged and ignored: the domain starts
 * afresh, as without a file.
 */
static void domain_restore_state(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	struct vr_qemu_incarnation qemu;
	struct vr_domain_state st;
	gboolean first = !d->qemu_known;

	if (!vr_qemu_incarnation_read(m->procfs, d->pid, &qemu, &error)) {
		g_debug("%s: %s", d->name, error->message);
		return;
	}
	d->qemu = qemu;
	d->qemu_known = TRUE;
	if (!first)
		return; /* a new QEMU of a domain we had: its stats go on */
	if (!vr_state_dir_load(m->config->state_dir, d->uuid, &st, &error)) {
		if (!g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
			g_warning("%s: its saved state is ignored: %s", d->name, error->message);
		return;
	}
	if (!vr_domain_state_check(&st, d->uuid, &qemu, &error)) {
		g_message("%s: its saved state is ignored: %s", d->name, error->message);
		return;
	}
	vr_domain_state_apply(d, &st, window_len_us(m), g_get_monotonic_time());
	g_message("%s: state restored: reclaimed %" G_GUINT64_FORMAT " bytes%s%s", d->name,
		  d->reclaimed_bytes, d->user_paused ? ", paused" : "",
		  d->window_hold_until_us ? ", its share of the current quota window granted" : "");
}

/* Write @d's state file as @st (at @now_us). */
static void domain_save_state(struct vr_manager *m, struct vr_domain *d,
			      const struct vr_domain_state *st, gint64 now_us)
{
	g_autoptr(GError) error = NULL;

	if (!vr_state_dir_prepare(m->config->state_dir, &error) ||
	    !vr_state_dir_save(m->config->state_dir, st, &error)) {
		if (!m->state_dir_failed)
			g_warning("%s: cannot save its state (vreclaimd keeps going; a restart "
				  "starts its statistics afresh): %s",
				  d->name, error->message);
		m->state_dir_failed = TRUE;
		return;
	}
	m->state_dir_failed = FALSE;
	g_free(d->state_saved);
	d->state_saved = g_memdup2(st, sizeof(*st));
	d->state_saved_us = now_us;
}

/*
 * Write the state files of @doms (the managed domains, by name) that
 * changed (vr_domain_state_needs_save()): a pause or resume at once, the
 * others in turn, at most VR_MANAGER_STATE_SAVES_PER_TICK a tick, from where
 * the last tick's ran out. @force (a clean exit): every one that differs.
 */
static void manager_save_states(struct vr_manager *m, GPtrArray *doms, gboolean force)
{
	gint64 now = g_get_monotonic_time();
	guint budget = VR_MANAGER_STATE_SAVES_PER_TICK;
	guint n = doms->len, start = n ? m->state_cursor % n : 0;
	gboolean cursor_set = FALSE;

	for (guint k = 0; k < n; k++) {
		guint i = (start + k) % n;
		struct vr_domain *d = g_ptr_array_index(doms, i);
		struct vr_domain_state st;
		enum vr_domain_state_save save;

		if (!d->qemu_known || !d->managed)
			continue;
		vr_domain_state_fill(d, &st);
		save = vr_domain_state_needs_save(d->state_saved, &st,
						  force ? G_MAXINT64 : now - d->state_saved_us);
		if (save == VR_DOMAIN_STATE_SAVE_NO)
			continue;
		if (save == VR_DOMAIN_STATE_SAVE_IN_TURN && !force && !budget) {
			if (!cursor_set)
				m->state_cursor = i; /* first in line next tick */
			cursor_set = TRUE;
			continue;
		}
		if (save == VR_DOMAIN_STATE_SAVE_IN_TURN && budget)
			budget--;
		domain_save_state(m, d, &st, now);
	}
}

/* ---- domains from libvirt -------------------------------------------------- */

/* Read @d's QEMU process @pid's status each tick (its resident size). */
static void domain_watch(struct vr_manager *m, struct vr_domain *d, pid_t pid)
{
	g_autoptr(GError) error = NULL;

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
	domain_restore_state(m, d);
}

/* A libvirt domain's QEMU process, from libvirt's pid file. */
static void domain_watch_pid(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	pid_t pid = 0;

	if (d->qmp_path || !m->run_dir)
		return;
	if (!vr_libvirt_qemu_pid(m->run_dir, m->procfs, d->name, &pid, &error)) {
		g_debug("%s: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return;
	}
	domain_watch(m, d, pid);
}

static void manager_drop_domain(struct vr_manager *m, struct vr_domain *d, const char *why)
{
	g_message("%s: %s; vreclaimd lets it go (reclaimed %" G_GUINT64_FORMAT " bytes)", d->name,
		  why, d->reclaimed_bytes);
	if (d->status_read_set)
		vr_read_batch_remove(m->reads, d->status_read);
	g_hash_table_remove(m->views, d->uuid);
	/* Its QEMU is gone: so is what its state file was about. */
	if (d->qemu_known) {
		g_autoptr(GError) error = NULL;
		if (!vr_state_dir_remove(m->config->state_dir, d->uuid, &error))
			g_warning("%s: %s", d->name, error->message);
	}
	g_hash_table_remove(m->domains, d->uuid);
}

/*
 * The action @tuning allows that @d can run, or NONE with *@why (owned):
 * agent-reclaim when it has an agent channel, else the balloon when it has
 * one, else host-pageout when this host has an access source for it.
 */
static enum vr_active_action choose_action(const struct vr_domain_tuning *tuning,
					   const struct vr_domain_info *info, char **why)
{
	guint a = tuning->actions;
	g_autoptr(GString) missing = g_string_new(NULL);

	if ((a & VR_DOMAIN_ACTION_AGENT_RECLAIM) && info->agent_socket_path)
		return VR_ACTIVE_ACTION_AGENT_RECLAIM;
	if ((a & VR_DOMAIN_ACTION_BALLOON) && info->memballoon_model &&
	    strcmp(info->memballoon_model, "none") != 0)
		return VR_ACTIVE_ACTION_BALLOON;
	if (a & VR_DOMAIN_ACTION_HOST_PAGEOUT)
		return VR_ACTIVE_ACTION_HOST_PAGEOUT;
	if (a & VR_DOMAIN_ACTION_AGENT_RECLAIM)
		g_string_append_printf(missing, "no agent channel (a unix channel named %s)",
				       VR_DOMAIN_AGENT_CHANNEL);
	if (a & VR_DOMAIN_ACTION_BALLOON)
		g_string_append_printf(missing, "%sno balloon device", missing->len ? ", " : "");
	*why = g_string_free(g_steal_pointer(&missing), FALSE);
	return VR_ACTIVE_ACTION_NONE;
}

/**
 * struct lv_call - what a libvirt request of the manager carries to its
 * answer: the domain is found again by @uuid (it may have gone meanwhile).
 * @m:		the manager (it outlives its libvirt connection).
 * @uuid:	the domain's.
 * @change:	for a domain event: what happened.
 * @call:	for vreclaimctl set: the control client's call, answered
 *		once (NULL then).
 * @settings:	for vreclaimctl set: what to apply.
 */
struct lv_call {
	struct vr_manager *m;
	char uuid[VR_DOMAIN_UUID_STRING_LEN + 1];
	enum vr_libvirt_change change;
	struct vr_control_call *call;
	char **settings;
};

static struct lv_call *lv_call_new(struct vr_manager *m, const char *uuid)
{
	struct lv_call *c = g_new0(struct lv_call, 1);

	c->m = m;
	g_strlcpy(c->uuid, uuid, sizeof(c->uuid));
	return c;
}

static void lv_call_free(gpointer data)
{
	struct lv_call *c = data;

	if (c->call) {
		g_autoptr(GError) gone = g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
						     "vreclaimd let its libvirt connection go");
		vr_control_call_finish(c->call, gone);
	}
	g_strfreev(c->settings);
	g_free(c);
}

static void monitor_lookup_over(gpointer data)
{
	struct lv_call *c = data;

	g_hash_table_remove(c->m->lookups, c->uuid);
	lv_call_free(c);
}

static void monitor_lookup_done(virDomainPtr dom, const GError *error, gpointer user_data)
{
	struct lv_call *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->m->domains, c->uuid);
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
	mon->timeout_ms = VR_MANAGER_QMP_TIMEOUT_MS;
	d->monitor = vr_monitor_worker_new(d->name, mon, &local);
	if (!d->monitor)
		vr_domain_set_error(d, local->message);
}

/*
 * @d's QEMU monitor worker, made on first use: a --qmp QEMU has one from its
 * probe; a libvirt domain's monitor goes through libvirt's passthrough, with
 * the same deadline as our own client. Its domain is looked up on
 * libvirt's thread: FALSE without @error while that is outstanding (the
 * next window uses it).
 */
static gboolean domain_monitor(struct vr_manager *m, struct vr_domain *d, GError **error)
{
	if (d->monitor)
		return TRUE;
	if (!m->lv) {
		g_set_error(error, VR_MANAGER_ERROR, VR_MANAGER_ERROR_NOT_LIBVIRT,
			    "no QEMU monitor: vreclaimd has no libvirt connection");
		return FALSE;
	}
	if (!g_hash_table_contains(m->lookups, d->uuid)) {
		g_hash_table_add(m->lookups, g_strdup(d->uuid));
		vr_libvirt_lookup(m->lv, d->uuid, monitor_lookup_done, lv_call_new(m, d->uuid),
				  monitor_lookup_over);
	}
	return FALSE;
}

/*
 * After a monitor job of @d failed with @error: a libvirt monitor whose
 * libvirt failed is made again next time (it holds its domain reference on
 * the connection of its day, which a reconnect to libvirtd replaced).
 */
static void domain_monitor_failed(struct vr_domain *d, const GError *error)
{
	if (!d->qmp_path && error && error->domain == VR_QEMU_MONITOR_ERROR)
		g_clear_pointer(&d->monitor, vr_monitor_worker_free);
}

/**
 * struct ram_map_job - the host-pageout action's QEMU half: where the
 * guest's RAM lives in the QEMU process (vr_qemu_guest_ram_map()).
 * @pid:	the QEMU process it was asked for (in).
 * @map:	struct vr_ram_range (out).
 */
struct ram_map_job {
	pid_t pid;
	GArray *map;
};

static void ram_map_job_free(gpointer data)
{
	struct ram_map_job *j = data;

	if (j->map)
		g_array_unref(j->map);
	g_free(j);
}

static gboolean ram_map_job_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct ram_map_job *j = data;

	return vr_qemu_guest_ram_map(mon, &j->map, error);
}

/*
 * The rest of the host-pageout action's state for @d, from its guest RAM
 * @map: the host-damon access source on its QEMU process, and a pidfd.
 */
static gboolean domain_finish_host_reclaim(struct vr_manager *m, struct vr_domain *d, GArray *map,
					   GError **error)
{
	g_autoptr(vr_access_source) source = NULL;
	struct vr_monitor_attrs attrs = d->policy->attrs;

	source = vr_access_source_new_host_damon(m->sysfs, m->procfs, d->pid, map, &attrs, error);
	if (!source)
		return FALSE;
	d->host_reclaim = vr_host_reclaim_new(d->name, d->pid,
					      &g_array_index(map, struct vr_ram_range, 0), map->len,
					      d->info.memory_bytes, g_steal_pointer(&source),
					      error);
	return d->host_reclaim != NULL;
}

static void ram_map_job_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			     gpointer user_data)
{
	struct ram_map_job *j = data;
	struct vr_domain *d = user_data;
	g_autoptr(GError) local = NULL;
	const char *why;

	(void)w;
	/* What changed while QEMU was asked wins. */
	if (!d->managed || d->action != VR_ACTIVE_ACTION_HOST_PAGEOUT || d->host_reclaim ||
	    d->pid != j->pid)
		return;
	if (!error && domain_finish_host_reclaim(d->manager, d, j->map, &local))
		return;
	if (error && (error->domain == VR_QEMU_MONITOR_ERROR ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT) ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED) ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT))) {
		/* QEMU did not answer (or libvirt failed): ask again next
		 * window; the monitor's worker says whether it is degraded. */
		g_autofree char *msg = g_strdup_printf("host-pageout: %s", error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		domain_monitor_failed(d, error);
		return;
	}
	why = error ? error->message : local->message;
	g_warning("%s: not managed: host-pageout: %s", d->name, why);
	vr_domain_set_unmanaged(d, "host-pageout: %s", why);
}

/*
 * Start the host-pageout action's state for @d: its guest RAM map is asked
 * of QEMU on the monitor's worker, the rest follows when it comes
 * (ram_map_job_done()). FALSE with @error when this host or this QEMU
 * cannot give it.
 */
static gboolean domain_start_host_reclaim(struct vr_manager *m, struct vr_domain *d, GError **error)
{
	g_autoptr(GError) local = NULL;
	struct ram_map_job *j;

	if (m->config->host_access_source == VR_HOST_ACCESS_SOURCE_NONE) {
		g_set_error(error, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED,
			    "host-pageout needs a host access source, and the config's "
			    "access-source is none");
		return FALSE;
	}
	if (d->pid <= 0) {
		g_set_error(error, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED,
			    "host-pageout: its QEMU process is not known yet");
		return FALSE;
	}
	if (!domain_monitor(m, d, &local)) {
		if (!local)
			return TRUE; /* its domain is being looked up */
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (vr_monitor_worker_is_busy(d->monitor))
		return TRUE; /* asked already */
	j = g_new0(struct ram_map_job, 1);
	j->pid = d->pid;
	vr_monitor_worker_submit(d->monitor, "ram-map", ram_map_job_run, ram_map_job_done, j,
				 ram_map_job_free, d);
	return TRUE;
}

/*
 * Make @d managed with @tuning (owned) and @info (moved out) when its action
 * and policy are valid; otherwise unmanaged with the reason. Nothing is
 * half-applied: the old tuning and policy stay until the new ones are valid.
 */
static void manager_commit_domain(struct vr_manager *m, struct vr_domain *d,
				  struct vr_domain_tuning *tuning_in, struct vr_domain_info *info)
{
	g_autoptr(vr_domain_tuning) tuning = tuning_in;
	g_autoptr(vr_policy) policy = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *why = NULL;
	enum vr_active_action action = choose_action(tuning, info, &why);

	if (action == VR_ACTIVE_ACTION_NONE) {
		g_autofree char *a = vr_domain_actions_to_string(tuning->actions);
		vr_domain_set_unmanaged(d, "its actions (%s) cannot run: %s", a, why);
		return;
	}
	policy = vr_domain_policy_for(tuning, m->config, &error);
	if (!policy) {
		g_warning("%s: not managed: %s", d->name, error->message);
		vr_domain_set_unmanaged(d, "%s", error->message);
		return;
	}

	/* Commit: everything is valid. */
	if (!d->tuning || !vr_domain_tuning_equal(d->tuning, tuning) || !d->policy ||
	    d->action != action) {
		g_autofree char *a = vr_domain_actions_to_string(tuning->actions);
		m->decide_now = TRUE; /* the new tuning counts from the next tick */
		g_message("%s: managed: policy %s, priority %u, guaranteed %" G_GUINT64_FORMAT
			  " bytes, actions %s: %s",
			  d->name, tuning->policy ? tuning->policy : "default", tuning->priority,
			  tuning->guaranteed_bytes, a, vr_active_action_name(action));
		d->policy_generation++;
	} else {
		g_autofree char *old = vr_policy_to_json(d->policy);
		g_autofree char *new = vr_policy_to_json(policy);
		if (strcmp(old, new) != 0)
			d->policy_generation++;
	}
	if (d->action != action) {
		g_clear_pointer(&d->host_reclaim, vr_host_reclaim_free);
		g_clear_pointer(&d->source, vr_access_source_free);
		d->balloon_target_bytes = 0;
	}
	d->action = action;
	g_clear_pointer(&d->tuning, vr_domain_tuning_free);
	d->tuning = g_steal_pointer(&tuning);
	g_clear_pointer(&d->policy, vr_policy_free);
	d->policy = g_steal_pointer(&policy);
	g_free(d->policy_name);
	d->policy_name = g_strdup(d->tuning->policy ? d->tuning->policy : "default");
	g_clear_pointer(&d->reason, g_free);
	d->managed = TRUE;

	if (d->session && g_strcmp0(d->info.agent_socket_path, info->agent_socket_path) != 0) {
		g_clear_pointer(&d->source, vr_access_source_free);
		g_clear_pointer(&d->session, vr_agent_session_free);
	}
	vr_domain_info_clear(&d->info);
	d->info = *info;
	memset(info, 0, sizeof(*info));
	/* An agent gives agent-reclaim its picture, and the balloon its view
	 * of the guest (its stats). */
	if (!d->session && d->info.agent_socket_path) {
		struct vr_agent_session_limits limits;
		vr_agent_session_limits_init(&limits, d->info.memory_bytes);
		d->session = vr_agent_session_new(d->name, d->info.agent_socket_path, &limits,
						  &agent_ops, d, &error);
		if (!d->session) {
			vr_domain_set_unmanaged(d, "%s", error->message);
			return;
		}
	}
	if (d->action == VR_ACTIVE_ACTION_AGENT_RECLAIM && !d->source) {
		d->source = vr_access_source_new_agent(d->session, agent_timeout_ms(m), &error);
		if (!d->source || !vr_access_source_start(d->source, &error)) {
			vr_domain_set_unmanaged(d, "%s", error->message);
			return;
		}
		/* The fleet needs only the picture's cold histogram: an agent
		 * that can compute it sends that instead (docs/protocol.md). */
		vr_access_source_agent_set_histogram(d->source, TRUE);
	}
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
	if (g_hash_table_lookup(m->views, ld->uuid) != ld) {
		struct vr_libvirt_domain *view = vr_libvirt_domain_copy(ld);
		g_hash_table_replace(m->views, view->uuid, view);
	}

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
	manager_commit_domain(m, d, g_steal_pointer(&tuning), &info);
	if (d->managed)
		domain_watch_pid(m, d);
}

static void refresh_all_over(gpointer data)
{
	struct vr_manager *m = data;

	m->listing = FALSE;
}

static void refresh_all_done(GPtrArray *list, const GError *error, gpointer user_data)
{
	struct vr_manager *m = user_data;
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

	if (!list) {
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
		if (!g_hash_table_contains(seen, key) && !((struct vr_domain *)value)->qmp_path)
			g_ptr_array_add(gone, value);
	for (guint i = 0; i < gone->len; i++)
		manager_drop_domain(m, g_ptr_array_index(gone, i), "no longer running");
}

/* List every running domain again, on libvirt's thread; the domains are
 * brought up to date when the listing comes. One listing at a time: a
 * listing asked while one is outstanding is that one. */
static void manager_refresh_all(struct vr_manager *m)
{
	if (m->listing)
		return;
	m->listing = TRUE;
	vr_libvirt_list_running(m->lv, refresh_all_done, m, refresh_all_over);
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

static void domain_changed_done(const struct vr_libvirt_domain *ld, const GError *error,
				gpointer user_data)
{
	struct lv_call *c = user_data;
	struct vr_manager *m = c->m;
	struct vr_domain *d = g_hash_table_lookup(m->domains, c->uuid);

	if (error) {
		/* A domain that stopped is let go whatever libvirt says now. */
		if (d && c->change == VR_LIBVIRT_STOPPED)
			manager_drop_domain(m, d, "stopped");
		else
			g_warning("%s: %s", d ? d->name : c->uuid, error->message);
		return;
	}
	if (!ld) {
		if (d)
			manager_drop_domain(m, d,
					    c->change == VR_LIBVIRT_STOPPED ? "stopped" :
									      "no longer running");
		return;
	}
	manager_refresh_domain(m, ld);
}

/*
 * A domain event: the domain is read again on libvirt's thread, a stopped
 * one too, so that the answers apply in the order of the events (libvirt's
 * thread answers in order: an older read cannot bring back a domain that
 * stopped since).
 */
static void lv_domain_changed(const char *uuid, const char *name, enum vr_libvirt_change change,
			      gpointer user_data)
{
	struct vr_manager *m = user_data;
	struct vr_domain *d = g_hash_table_lookup(m->domains, uuid);
	struct lv_call *c;

	(void)name;
	if (change == VR_LIBVIRT_REBOOTED && d)
		g_message("%s: the guest rebooted", d->name);
	c = lv_call_new(m, uuid);
	c->change = change;
	vr_libvirt_get_running(m->lv, uuid, domain_changed_done, c, lv_call_free);
}

static const struct vr_libvirt_ops libvirt_ops = {
	.connected = lv_connected,
	.disconnected = lv_disconnected,
	.domain_changed = lv_domain_changed,
};

/* ---- QEMU processes given by --qmp ------------------------------------------ */

static void qmp_socket_failed(struct qmp_socket *q, const GError *error)
{
	if (g_strcmp0(q->last_error, error->message) != 0)
		g_message("QMP socket %s: %s; trying again every %d s", q->path, error->message,
			  (int)(VR_MANAGER_QMP_RETRY_US / G_USEC_PER_SEC));
	g_free(q->last_error);
	q->last_error = g_strdup(error->message);
	q->next_try_us = g_get_monotonic_time() + VR_MANAGER_QMP_RETRY_US;
}

/* Check @qi, what the QEMU behind @qmp_path claimed, against the host's own
 * view (vr_qmp_domain_check_memory(), vr_qmp_domain_check_agent_socket()):
 * FALSE with @error when its memory claim is refused; an agent socket that
 * is refused only drops the agent (logged), the balloon still serves. */
static gboolean qmp_claims_hold(struct vr_manager *m, const char *qmp_path,
				struct vr_qmp_domain_info *qi, GError **error)
{
	g_autofree char *proc_dir = g_strdup_printf("%s/%d", m->procfs, (int)qi->pid);
	g_autofree char *status_path = g_build_filename(proc_dir, "status", NULL);
	g_autofree char *qmp_dir = g_path_get_dirname(qmp_path);
	g_autofree char *status = NULL;
	g_autofree char *agent_real = NULL;
	g_autofree char *qmp_dir_real = NULL;
	g_autoptr(GError) local = NULL;
	struct stat proc_st, agent_st;
	uint64_t vm_size;

	if (!g_file_get_contents(status_path, &status, NULL, error) ||
	    !vr_proc_status_vm_size_parse(status, status_path, &vm_size, error) ||
	    !vr_qmp_domain_check_memory(qi->memory_bytes, vm_size, error))
		return FALSE;
	if (!qi->agent_socket_path)
		return TRUE;
	if (stat(proc_dir, &proc_st) < 0)
		g_set_error(&local, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED, "%s: %s",
			    proc_dir, g_strerror(errno));
	else if (!(agent_real = realpath(qi->agent_socket_path, NULL)) ||
		 !(qmp_dir_real = realpath(qmp_dir, NULL)) || lstat(agent_real, &agent_st) < 0)
		g_set_error(&local, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED,
			    "cannot resolve the agent socket or the QMP socket's folder: %s",
			    g_strerror(errno));
	else
		vr_qmp_domain_check_agent_socket(agent_real, qmp_dir_real,
						 S_ISSOCK(agent_st.st_mode), agent_st.st_uid,
						 proc_st.st_uid, &local);
	if (local) {
		g_warning("%s: not connecting to the agent socket QEMU names: %s", qi->name,
			  local->message);
		g_clear_pointer(&qi->agent_socket_path, g_free);
	}
	return TRUE;
}

/*
 * Take the QEMU behind --qmp socket @q as a domain, from what its probe
 * found (@qi): check its claims, then manage it with the config's defaults
 * (a QEMU without libvirt has no metadata). The probe's monitor worker
 * @worker (owned) becomes the domain's: QEMU takes one QMP client at a time.
 */
static void manager_attach_qmp(struct vr_manager *m, struct qmp_socket *q,
			       struct vr_qmp_domain_info *qi, struct vr_monitor_worker *worker)
{
	g_autoptr(vr_monitor_worker) owned = worker;
	g_autoptr(GError) error = NULL;
	struct vr_domain_info info = { 0 };
	struct vr_domain *d;

	if (!qmp_claims_hold(m, q->path, qi, &error)) {
		qmp_socket_failed(q, error);
		return;
	}
	if (g_hash_table_contains(m->domains, qi->uuid)) {
		g_set_error(&error, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED,
			    "its QEMU (%s) has the UUID %s of a domain vreclaimd manages already",
			    qi->name, qi->uuid);
		qmp_socket_failed(q, error);
		return;
	}
	g_clear_pointer(&q->last_error, g_free);
	g_strlcpy(q->uuid, qi->uuid, sizeof(q->uuid));
	d = vr_domain_new(qi->uuid, qi->name);
	d->manager = m;
	d->qmp_path = g_strdup(q->path);
	d->monitor = g_steal_pointer(&owned);
	vr_monitor_worker_set_name(d->monitor, d->name);
	g_hash_table_insert(m->domains, d->uuid, d);
	g_message("%s: found at QMP socket %s (uuid %s, QEMU process %d)", d->name, q->path,
		  d->uuid, (int)qi->pid);

	info.name = g_strdup(qi->name);
	g_strlcpy(info.uuid, qi->uuid, sizeof(info.uuid));
	info.type = g_strdup("qemu");
	info.id = -1;
	info.memory_bytes = qi->memory_bytes;
	info.current_memory_bytes = qi->memory_bytes;
	info.agent_channel = qi->agent_socket_path != NULL;
	info.agent_socket_path = g_steal_pointer(&qi->agent_socket_path);
	info.memballoon_model = qi->has_balloon ? g_strdup("virtio") : NULL;
	manager_commit_domain(m, d, vr_domain_tuning_default(m->config), &info);
	vr_domain_info_clear(&info);
	domain_watch(m, d, qi->pid);
}

/**
 * struct probe_job - the probe of a --qmp QEMU, on its monitor worker:
 * connect, then name, UUID, process, memory, agent channel, balloon
 * (vr_qmp_domain_probe()).
 * @path:	its QMP socket, a copy (in).
 * @qi:		what the QEMU says of itself (out).
 */
struct probe_job {
	char *path;
	struct vr_qmp_domain_info qi;
};

static void probe_job_free(gpointer data)
{
	struct probe_job *j = data;

	g_free(j->path);
	vr_qmp_domain_info_clear(&j->qi);
	g_free(j);
}

static gboolean probe_job_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct probe_job *j = data;

	return vr_qemu_monitor_connect(mon, error) &&
	       vr_qmp_domain_probe(mon, j->path, vr_qemu_monitor_get_peer_pid(mon), &j->qi, error);
}

static void probe_job_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			   gpointer user_data)
{
	struct probe_job *j = data;
	struct qmp_socket *q = user_data;
	/* A failed probe lets the connection go, as QEMU takes one client. */
	g_autoptr(vr_monitor_worker) worker = g_steal_pointer(&q->probe);

	g_warn_if_fail(worker == w);
	if (error) {
		qmp_socket_failed(q, error);
		return;
	}
	manager_attach_qmp(q->manager, q, &j->qi, g_steal_pointer(&worker));
}

/* Probe the QEMU behind @q on a new monitor worker (probe_job_done() takes
 * it from there). */
static void manager_probe_qmp(struct qmp_socket *q)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *name = g_strdup_printf("QMP socket %s", q->path);
	struct probe_job *j;

	q->probe = vr_monitor_worker_new(
		name, vr_qemu_monitor_new_qmp_unconnected(q->path, VR_MANAGER_QMP_TIMEOUT_MS),
		&error);
	if (!q->probe) {
		qmp_socket_failed(q, error);
		return;
	}
	j = g_new0(struct probe_job, 1);
	j->path = g_strdup(q->path);
	vr_monitor_worker_submit(q->probe, "probe", probe_job_run, probe_job_done, j,
				 probe_job_free, q);
}

/* Probe the --qmp sockets without a domain (nor a probe running) whose
 * time has come. */
static void manager_attach_qmp_all(struct vr_manager *m)
{
	gint64 now = g_get_monotonic_time();

	for (guint i = 0; i < m->qmp->len; i++) {
		struct qmp_socket *q = &g_array_index(m->qmp, struct qmp_socket, i);
		struct vr_domain *d = q->uuid[0] ? g_hash_table_lookup(m->domains, q->uuid) : NULL;
		if (d && !d->managed && (d->pid <= 0 || (kill(d->pid, 0) < 0 && errno == ESRCH)))
			manager_drop_domain(m, d, "its QEMU process exited");
		else if (d)
			continue;
		q->uuid[0] = '\0';
		if (!q->probe && now >= q->next_try_us)
			manager_probe_qmp(q);
	}
}

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
	m->host.swap_total_bytes = mi.swap_total_bytes;
	m->host.swap_free_bytes = mi.swap_free_bytes;
	text = vr_read_batch_text(m->reads, m->psi_read, &len, &file_error);
	if (text && vr_psi_parse(text, &psi, NULL)) {
		m->host.psi_some_avg10_bp = psi.some.avg10_bp;
		m->host.psi_full_avg10_bp = psi.full.avg10_bp;
	}
	m->host_known = TRUE;
}

/* Return: FALSE when @d's QEMU process is gone. */
static gboolean acquire_domain(struct vr_manager *m, struct vr_domain *d)
{
	const GError *file_error = NULL;
	gsize len = 0;
	struct vr_proc_status st;
	g_autoptr(GError) error = NULL;

	if (!d->status_read_set)
		return TRUE;
	const char *text = vr_read_batch_text(m->reads, d->status_read, &len, &file_error);
	if (!text || !vr_proc_status_parse(text, vr_read_batch_path(m->reads, d->status_read), &st,
					   &error)) {
		/* The QEMU process is gone; libvirt's stop event follows. */
		g_debug("%s: %s", d->name, file_error ? file_error->message : error->message);
		vr_read_batch_remove(m->reads, d->status_read);
		d->status_read_set = FALSE;
		d->pid = 0;
		return FALSE;
	}
	d->rss_bytes = st.vm_rss_bytes;
	d->swap_bytes = st.vm_swap_bytes;
	if (!d->rss_start_bytes)
		d->rss_start_bytes = st.vm_rss_bytes;
	return TRUE;
}

static const struct vr_scheme *domain_pageout_scheme(const struct vr_domain *d)
{
	return vr_fleet_pageout_scheme(d->policy);
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

static gboolean decide_domain_hist(struct vr_domain *d, struct vr_fleet_domain *fd)
{
	const struct vr_scheme *s = domain_pageout_scheme(d);
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

/* @d's offer this window under its pageout scheme @s: @fd's histogram, or the
 * larger one @d showed within the hold (struct vr_fleet_offer_hold says why a
 * DAMON picture alone would not do). */
static void hold_domain_offer(struct vr_domain *d, const struct vr_scheme *s,
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

/* What the guest keeps free beyond its use when the balloon takes memory:
 * a twentieth of it, at least this, bytes. */
#define VR_MANAGER_BALLOON_MIN_RESERVE_BYTES (64ULL << 20)

/* The balloon action's view of @d this window (vr_balloon_decide()). The
 * guest's free memory comes from its agent's stats (MemFree: page cache is
 * not counted, so the balloon never squeezes the guest's cache); without an
 * agent it is unknown, and the balloon only gives memory back. */
static void balloon_input(const struct vr_manager *m, const struct vr_domain *d,
			  struct vr_balloon_input *in)
{
	memset(in, 0, sizeof(*in));
	in->guest_bytes = d->info.memory_bytes;
	in->actual_bytes = MIN(d->balloon_actual_bytes, d->info.memory_bytes);
	in->guest_avail_known = d->has_stats && vr_agent_session_is_up(d->session);
	in->guest_avail_bytes = MIN(d->stats.mem_free_bytes, d->info.memory_bytes);
	in->guaranteed_bytes = MIN(d->tuning->guaranteed_bytes, d->info.memory_bytes);
	in->share_bytes = d->share_bytes;
	in->host_needs_memory = m->host_needs_memory;
	in->reserve_bytes = MAX(d->info.memory_bytes / 20, VR_MANAGER_BALLOON_MIN_RESERVE_BYTES);
	in->deflate_step_bytes = m->config->fleet_quota_bytes;
}

/* What @d offers the fleet this window: its histogram of cold bytes (fd).
 * The balloon takes free guest memory, which is as cold as memory gets. */
static gboolean decide_domain_offer(struct vr_manager *m, struct vr_domain *d,
				    struct vr_fleet_domain *fd)
{
	g_autoptr(GError) error = NULL;
	struct vr_balloon_input in;
	const struct vr_scheme *s;

	switch (d->action) {
	case VR_ACTIVE_ACTION_AGENT_RECLAIM:
		if (!decide_domain_hist(d, fd))
			return FALSE;
		hold_domain_offer(d, domain_pageout_scheme(d), fd);
		return TRUE;
	case VR_ACTIVE_ACTION_BALLOON:
		if (!d->balloon_actual_bytes)
			return FALSE;
		balloon_input(m, d, &in);
		memset(fd->hist_bytes, 0, sizeof(fd->hist_bytes));
		fd->hist_bytes[VR_MAX_SCORE] = vr_balloon_offer_bytes(&in);
		d->cold_bytes = fd->hist_bytes[VR_MAX_SCORE];
		return TRUE;
	case VR_ACTIVE_ACTION_HOST_PAGEOUT:
		s = domain_pageout_scheme(d);
		if (!s || !d->host_reclaim)
			return FALSE;
		/* A full host swap takes nothing: the quota goes to others. */
		if (m->host_known) {
			gboolean full = !vr_host_pageout_room(&m->host);

			vr_domain_wait_for_swap(d, &m->host, full);
			if (full)
				return FALSE;
		}
		if (!vr_host_reclaim_cold_histogram(d->host_reclaim, s, fd->hist_bytes, &error)) {
			g_warning("%s: %s", d->name, error->message);
			vr_domain_set_error(d, error->message);
			return FALSE;
		}
		d->cold_bytes = 0;
		for (guint score = 0; score <= VR_MAX_SCORE; score++)
			d->cold_bytes += fd->hist_bytes[score];
		hold_domain_offer(d, s, fd);
		return TRUE;
	case VR_ACTIVE_ACTION_NONE:
		break;
	}
	return FALSE;
}

/* Whether the host needs memory, by its watermarks. Return: TRUE when that
 * changed. */
static gboolean decide_host(struct vr_manager *m)
{
	gboolean needed = m->host_needs_memory;

	if (m->host_known)
		needed = vr_host_needs_memory(&m->config->host_wmarks, &m->host, needed);
	m->host_state = m->host_known ?
				vr_host_memory_state(&m->config->host_wmarks, &m->host, needed) :
				VR_HOST_MEMORY_UNKNOWN;
	if (needed == m->host_needs_memory)
		return FALSE;
	g_message("the host %s memory (free rate %u per-mille)",
		  needed ? "needs" : "no longer needs", vr_host_free_mem_rate(&m->host));
	m->host_needs_memory = needed;
	return TRUE;
}

/* Each domain's offer and credit, and its share of the fleet quota. */
static void decide_fleet(struct vr_manager *m, GPtrArray *doms)
{
	g_autofree struct vr_fleet_domain *fleet =
		g_new0(struct vr_fleet_domain, MAX(doms->len, 1));
	g_autofree uint64_t *shares = g_new0(uint64_t, MAX(doms->len, 1));
	g_autoptr(GError) error = NULL;
	gboolean needed = m->host_needs_memory;
	int64_t now_us = g_get_monotonic_time();

	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		struct vr_fleet_domain *fd = &fleet[i];
		fd->name = d->name;
		fd->priority = d->tuning->priority;
		fd->rss_bytes = d->rss_bytes;
		fd->guaranteed_bytes = d->tuning->guaranteed_bytes;
		/* What its last share bought (before the new one is written),
		 * bound by the config's floor. */
		fd->credit_permille =
			MAX(vr_domain_update_credit(
				    d, now_us, m->config->fleet_quota_reset_interval_ms * 1000),
			    m->config->fleet_credit_floor_bp / 10);
		/* Offers are made whether or not the host needs memory: the
		 * status shows them, and the holds are ready when it does. */
		fd->eligible = !d->user_paused && d->rss_bytes > 0 && decide_domain_offer(m, d, fd);
		if (!fd->eligible)
			vr_fleet_offer_hold_reset(&d->offer_hold);
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

/* Pause (@pause) or resume @d's agent unless it is so or a call is under way. */
static void agent_set_paused(struct vr_manager *m, struct vr_domain *d, gboolean pause)
{
	if (pause == d->agent_paused || d->agent_pause_pending ||
	    !vr_agent_session_is_up(d->session))
		return;
	g_auto(vr_proto_request) req = { .command = pause ? VR_PROTO_PAUSE : VR_PROTO_RESUME };
	struct call_ctx *c = call_ctx_new(m, d, req.command);
	c->pause = pause;
	c->quiet = d->agent_resync;
	d->agent_paused = pause;
	d->agent_pause_pending = TRUE;
	domain_call(m, d, &req, c);
}

static void act_agent_reclaim(struct vr_manager *m, struct vr_domain *d)
{
	if (!vr_agent_session_is_up(d->session))
		return;
	/* The agent always runs the domain's policy, cut to its share; a share
	 * of 0 keeps it monitoring only. Only vreclaimctl pause pauses it. */
	gint64 now = g_get_monotonic_time();
	gboolean hold;

	hold = d->policy_sent && d->share_bytes < d->sent_share_bytes &&
	       now - d->sent_us < VR_MANAGER_SHARE_MIN_PERIOD_US;
	/* A smaller share waits, unless the host no longer needs memory
	 * (above the high watermark, or below the low one, where the kernel's
	 * own reclaim takes over): then reclaim stops within the tick. */
	hold = hold && m->host_needs_memory;
	/* The previous vreclaimd granted this domain a share in the window
	 * that still runs, and its agent kept that policy: a new one (a DAMOS
	 * commit) could start it a fresh window. Until the window ends, only
	 * a share of 0 goes out. */
	if (d->window_hold_until_us && now >= d->window_hold_until_us)
		d->window_hold_until_us = 0;
	gboolean window_hold = d->window_hold_until_us && d->share_bytes > 0;
	if (!window_hold &&
	    (!d->policy_sent || d->agent_resync || d->sent_generation != d->policy_generation ||
	     d->sent_report_interval_ms != m->report_interval_ms ||
	     (!hold && share_changed(d->sent_share_bytes, d->share_bytes)))) {
		g_auto(vr_proto_request) req = { .command = VR_PROTO_SET_POLICY };
		struct call_ctx *c = call_ctx_new(m, d, VR_PROTO_SET_POLICY);
		req.set_policy.policy = vr_domain_agent_policy(
			d, d->share_bytes, m->config->fleet_quota_reset_interval_ms);
		req.set_policy.has_report_interval = TRUE;
		req.set_policy.report_interval_ms = m->report_interval_ms;
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
		d->sent_report_interval_ms = m->report_interval_ms;
		domain_call(m, d, &req, c);
	}
	agent_set_paused(m, d, d->user_paused);
	if (!window_hold)
		d->agent_resync = FALSE; /* the policy went out with it */
	/* The window its agent spends its share in (what a restart restores). */
	if (d->policy_sent && !d->agent_paused)
		vr_share_window_roll(&d->window, d->sent_share_bytes, now, window_len_us(m));
	/* A domain without a picture asks for one at once; the others in
	 * turn, at most pictures-per-tick of them each tick. */
	if (!d->agent_paused && (!vr_access_source_agent_has_picture(d->source) ||
				 (m->ticks + m->act_index) % m->picture_period == 0)) {
		g_autoptr(GError) error = NULL;
		if (!vr_access_source_agent_refresh(d->source, &error)) {
			g_debug("%s: %s", d->name, error->message);
			vr_domain_set_error(d, error->message);
		}
	}
}

/**
 * struct balloon_job - the balloon action's QEMU half, one window, on the
 * domain's monitor worker: QEMU's balloon as it is, the target the policy
 * gives (pure: vr_balloon_decide()), and that target set when it differs
 * from the last one.
 * @in:		the policy's input from the domain, copied (in); its
 *		@actual_bytes is replaced by what QEMU says now.
 * @decide:	whether to decide and set a target (not while paused) (in).
 * @last_target_bytes: the target set last, bytes; not set again (in).
 * @actual_bytes: query-balloon's "actual", bytes (out).
 * @queried:	whether @actual_bytes is known (out).
 * @target_bytes, @reason: the policy's answer (out).
 * @set:	whether QEMU was asked for @target_bytes (out).
 * @stage:	what it did last: "query", "decide" or "set" (out).
 */
struct balloon_job {
	struct vr_balloon_input in;
	gboolean decide;
	uint64_t last_target_bytes;
	uint64_t actual_bytes;
	gboolean queried;
	uint64_t target_bytes;
	enum vr_balloon_reason reason;
	gboolean set;
	const char *stage;
};

static gboolean balloon_job_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct balloon_job *j = data;

	j->stage = "query";
	if (!vr_qemu_query_balloon(mon, &j->actual_bytes, error))
		return FALSE;
	j->queried = TRUE;
	if (!j->decide)
		return TRUE;
	j->stage = "decide";
	j->in.actual_bytes = MIN(j->actual_bytes, j->in.guest_bytes);
	if (!vr_balloon_decide(&j->in, &j->target_bytes, &j->reason, error))
		return FALSE;
	if (j->reason == VR_BALLOON_HOLD || j->target_bytes == j->last_target_bytes)
		return TRUE;
	j->stage = "set";
	if (!vr_qemu_set_balloon(mon, j->target_bytes, error))
		return FALSE;
	j->set = TRUE;
	return TRUE;
}

static void balloon_job_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			     gpointer user_data)
{
	struct balloon_job *j = data;
	struct vr_domain *d = user_data;

	(void)w;
	if (j->queried)
		d->balloon_actual_bytes = j->actual_bytes;
	if (error) {
		g_autofree char *msg = g_strdup_printf("balloon: %s", error->message);

		/* A guest without a balloon driver yet fails every query. */
		if (!strcmp(j->stage, "query"))
			g_debug("%s: %s", d->name, msg);
		else
			g_warning("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		domain_monitor_failed(d, error);
		return;
	}
	if (!j->set || !d->managed || d->action != VR_ACTIVE_ACTION_BALLOON)
		return;
	g_message("%s: balloon target %" G_GUINT64_FORMAT " MiB (was %" G_GUINT64_FORMAT
		  " MiB): %s",
		  d->name, j->target_bytes >> 20, j->actual_bytes >> 20,
		  vr_balloon_reason_name(j->reason));
	if (j->target_bytes < j->actual_bytes)
		vr_domain_add_reclaimed(d, j->actual_bytes - j->target_bytes);
	d->balloon_target_bytes = j->target_bytes;
}

/*
 * The balloon action, one window: the agent's half here (pause, stats), the
 * QEMU half on the monitor's worker (struct balloon_job), applied when QEMU
 * has answered. A domain whose QEMU has not answered the last window's job
 * gets no new one (nothing piles up behind a stalled QEMU).
 */
static void act_balloon(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	struct balloon_job *j;

	if (vr_agent_session_is_up(d->session)) {
		/* The agent reclaims nothing of its own while the balloon acts
		 * (paused), and tells the guest's free memory, fresh for the
		 * next window. */
		agent_set_paused(m, d, TRUE);
		g_auto(vr_proto_request) req = { .command = VR_PROTO_GET_STATS };
		domain_call(m, d, &req, call_ctx_new(m, d, VR_PROTO_GET_STATS));
	}
	if (!domain_monitor(m, d, &error)) {
		if (!error)
			return; /* its domain is being looked up */
		g_autofree char *msg = g_strdup_printf("balloon: %s", error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		return;
	}
	if (vr_monitor_worker_is_busy(d->monitor))
		return;
	j = g_new0(struct balloon_job, 1);
	balloon_input(m, d, &j->in);
	j->decide = !d->user_paused;
	j->last_target_bytes = d->balloon_target_bytes;
	j->stage = "query";
	vr_monitor_worker_submit(d->monitor, "balloon", balloon_job_run, balloon_job_done, j,
				 g_free, d);
}

/*
 * The host-pageout action, one window: the coldest guest memory by the
 * host's access picture, paged out of the QEMU process up to the share.
 */
static void act_host_pageout(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	struct vr_host_reclaim_result result = { 0 };
	const struct vr_scheme *s = domain_pageout_scheme(d);
	gboolean ok;

	if (!d->host_reclaim) {
		if (d->pid <= 0)
			return; /* its QEMU process is not known yet */
		if (!domain_start_host_reclaim(m, d, &error)) {
			g_warning("%s: not managed: host-pageout: %s", d->name, error->message);
			vr_domain_set_unmanaged(d, "host-pageout: %s", error->message);
		}
		return; /* QEMU's worker brings the RAM map: it acts from then on */
	}
	if (!s || d->share_bytes == 0 || d->user_paused)
		return;
	/* The share is per window (quota-reset-interval-ms), which may last
	 * several ticks: what the window took already counts, a window the
	 * previous vreclaimd began too (restored). */
	vr_share_window_roll(&d->window, d->share_bytes, g_get_monotonic_time(), window_len_us(m));
	uint64_t left = vr_share_window_left(&d->window, d->share_bytes);
	if (!left)
		return;
	/* Never more than the host's swap can take. */
	ok = vr_host_reclaim_step_in_swap(d->host_reclaim, s, left, &m->host, &result, &error);
	/* Charged and counted: the resident bytes advised, failed step or not
	 * (what was advised before a failure left memory too). */
	vr_domain_account_host_pageout(d, &result, &m->host);
	if (!ok) {
		g_warning("%s: host-pageout: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return;
	}
	g_debug("%s: host-pageout: %" G_GUINT64_FORMAT " resident bytes advised in %u runs; "
		"%" G_GUINT64_FORMAT " planned, %" G_GUINT64_FORMAT " skipped in swap",
		d->name, result.advised_bytes, result.runs, result.planned_bytes,
		result.swapped_bytes);
}

static void act_domain(struct vr_manager *m, struct vr_domain *d)
{
	switch (d->action) {
	case VR_ACTIVE_ACTION_AGENT_RECLAIM:
		act_agent_reclaim(m, d);
		break;
	case VR_ACTIVE_ACTION_BALLOON:
		act_balloon(m, d);
		break;
	case VR_ACTIVE_ACTION_HOST_PAGEOUT:
		act_host_pageout(m, d);
		break;
	case VR_ACTIVE_ACTION_NONE:
		break;
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

/* Is @d's status (the @i-th managed domain) read this tick, one in
 * @period? At once when it was never read. */
static gboolean status_due(const struct vr_manager *m, const struct vr_domain *d, guint i,
			   guint period)
{
	return !d->rss_bytes || (m->ticks + i) % period == 0;
}

static gboolean tick(gpointer data)
{
	struct vr_manager *m = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) doms = NULL;
	g_autoptr(GPtrArray) gone = g_ptr_array_new();
	guint budget, status_period;

	m->ticks++;
	manager_attach_qmp_all(m);
	doms = managed_domains(m);
	/* acquire: each domain's status every status_period ticks, in turn
	 * (every tick up to 100 domains), and at once when it was never read */
	status_period = vr_fleet_status_period_ticks(m->config->interval_ms, doms->len);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);

		if (d->status_read_set)
			vr_read_batch_set_skip(m->reads, d->status_read,
					       !status_due(m, d, i, status_period));
	}
	if (!vr_read_batch_run(m->reads, &error))
		g_warning("cannot read procfs: %s", error->message);
	acquire_host(m);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		/* Timed only when it works: the clock is a system call, two per
		 * domain of a large fleet each tick were a cost of their own. */
		if (d->status_read_set && !status_due(m, d, i, status_period))
			continue;
		uint64_t t0 = thread_cpu_us();
		if (!d->status_read_set)
			domain_watch_pid(m, d);
		/* libvirt says when its domains stop; a --qmp QEMU is gone when
		 * its process is. */
		if (status_due(m, d, i, status_period) && !acquire_domain(m, d) && d->qmp_path)
			g_ptr_array_add(gone, d);
		d->cpu_us += thread_cpu_us() - t0;
	}
	for (guint i = 0; i < gone->len; i++) {
		g_ptr_array_remove(doms, g_ptr_array_index(gone, i));
		manager_drop_domain(m, g_ptr_array_index(gone, i), "its QEMU process exited");
	}
	/* decide: each tick in a fleet whose agents report each tick; in a
	 * larger one once per status period (its inputs, the agents' reports
	 * and the QEMUs' RSS, change no faster), and at once when the host's
	 * need changed, a domain came or went, or vreclaimctl asked. */
	if (decide_host(m) || m->decide_now || doms->len != m->decided_domains ||
	    m->ticks - m->decided_tick >= status_period) {
		decide_fleet(m, doms);
		m->decided_tick = m->ticks;
		m->decided_domains = doms->len;
		m->decide_now = FALSE;
	}
	/* act */
	budget = MAX(m->config->fleet_pictures_per_tick, 1);
	m->picture_period = MAX(1, (doms->len + budget - 1) / budget);
	m->report_interval_ms = vr_fleet_report_interval_ms(m->config->interval_ms, doms->len);
	/* One clock reading between two domains ends the one and starts the
	 * next. */
	uint64_t t0 = thread_cpu_us();
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		m->act_index = i;
		act_domain(m, d);
		uint64_t t1 = thread_cpu_us();
		d->cpu_us += t1 - t0;
		t0 = t1;
	}
	manager_save_states(m, doms, FALSE);
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
	if (vr_libvirt_degraded_reason(m->lv)) {
		daemon->libvirt_degraded = TRUE;
		g_strlcpy(daemon->libvirt_degraded_reason, vr_libvirt_degraded_reason(m->lv),
			  sizeof(daemon->libvirt_degraded_reason));
	}
	daemon->libvirt_stalls = vr_libvirt_stalls(m->lv);
	daemon->host_needs_memory = m->host_needs_memory;
	daemon->free_mem_rate_permille = m->host_known ? vr_host_free_mem_rate(&m->host) : 0;
	g_strlcpy(daemon->host_memory_state, vr_host_memory_state_name(m->host_state),
		  sizeof(daemon->host_memory_state));
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

/*
 * Apply vreclaimctl's @settings to @tuning, and check that the policy an
 * enabled tuning asks for loads. FALSE with VR_CONTROL_ERROR_INVALID_ARGUMENT
 * naming the setting or the policy; @tuning is then half-set: drop it.
 */
static gboolean tuning_apply_settings(struct vr_manager *m, struct vr_domain_tuning *tuning,
				      const char *const *settings, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(vr_policy) policy = NULL;

	if (!vr_domain_tuning_set_args(tuning, settings, &local) ||
	    (tuning->enable && !(policy = vr_domain_policy_for(tuning, m->config, &local)))) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT, "%s",
			    local->message);
		return FALSE;
	}
	return TRUE;
}

/* A copy of @info (its strings too). */
static void domain_info_copy(const struct vr_domain_info *info, struct vr_domain_info *out)
{
	*out = *info;
	out->name = g_strdup(info->name);
	out->type = g_strdup(info->type);
	out->agent_socket_path = g_strdup(info->agent_socket_path);
	out->memballoon_model = g_strdup(info->memballoon_model);
}

/* Commit @tuning (owned) for --qmp domain @d, whose QEMU is as it was. */
static void manager_retune_qmp(struct vr_manager *m, struct vr_domain *d,
			       struct vr_domain_tuning *tuning)
{
	struct vr_domain_info info;

	domain_info_copy(&d->info, &info);
	manager_commit_domain(m, d, tuning, &info);
	vr_domain_info_clear(&info);
}

/*
 * set for a --qmp QEMU: it has no metadata to write, so the settings change
 * its tuning in the daemon only, until the daemon restarts (or the QEMU
 * does). Refused as a whole when one setting or the policy is invalid.
 */
static gboolean ctl_set_qmp(struct vr_manager *m, struct vr_domain *d, const char *const *settings,
			    GError **error)
{
	g_autoptr(vr_domain_tuning) tuning = d->tuning ? vr_domain_tuning_copy(d->tuning) :
							 vr_domain_tuning_default(m->config);

	if (!tuning_apply_settings(m, tuning, settings, error))
		return FALSE;
	if (tuning->enable) {
		g_message("%s: tuning set by vreclaimctl (until vreclaimd restarts: a QEMU "
			  "without libvirt has no metadata)",
			  d->name);
		manager_retune_qmp(m, d, g_steal_pointer(&tuning));
	} else {
		g_message("%s: disabled by vreclaimctl", d->name);
		vr_domain_set_unmanaged(d, "disabled by vreclaimctl set (enable=no)");
		d->tuning = g_steal_pointer(&tuning);
	}
	return TRUE;
}

/* set, last step: the domain as libvirt has it now, applied before the
 * client hears that its set is done. */
static void ctl_set_reread(const struct vr_libvirt_domain *ld, const GError *error,
			   gpointer user_data)
{
	struct lv_call *c = user_data;

	(void)error; /* written all the same: the metadata event applies it */
	if (ld && g_hash_table_contains(c->m->domains, c->uuid))
		manager_refresh_domain(c->m, ld);
	vr_control_call_finish(g_steal_pointer(&c->call), NULL);
}

static void ctl_set_written(const GError *error, gpointer user_data)
{
	struct lv_call *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->m->domains, c->uuid);
	struct lv_call *next;

	if (error) {
		vr_control_call_finish(g_steal_pointer(&c->call), error);
		return;
	}
	g_message("%s: metadata set by vreclaimctl", d ? d->name : c->uuid);
	/* Apply it now; libvirt's metadata event applies it once more. */
	next = lv_call_new(c->m, c->uuid);
	next->call = g_steal_pointer(&c->call);
	vr_libvirt_get_running(c->m->lv, c->uuid, ctl_set_reread, next, lv_call_free);
}

/* set, second step: what its metadata says now, with @c's settings applied,
 * written back. */
static void ctl_set_read(const struct vr_libvirt_domain *ld, const GError *error,
			 gpointer user_data)
{
	struct lv_call *c = user_data;
	struct vr_manager *m = c->m;
	g_autoptr(vr_domain_tuning) tuning = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *xml = NULL;
	struct lv_call *next;

	if (error || !ld) {
		struct vr_domain *d = g_hash_table_lookup(m->domains, c->uuid);
		if (!error)
			local = g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN,
					    "domain '%s' is not running", d ? d->name : c->uuid);
		vr_control_call_finish(g_steal_pointer(&c->call), error ? error : local);
		return;
	}
	/* Start from what its metadata says now (defaults when it has none or
	 * it is invalid: set then writes a whole valid element). */
	if (ld->metadata)
		tuning = vr_domain_tuning_parse(ld->metadata, &local);
	g_clear_error(&local);
	if (!tuning) {
		tuning = vr_domain_tuning_new();
		tuning->enable = TRUE;
	}
	if (!tuning_apply_settings(m, tuning, (const char *const *)c->settings, &local)) {
		vr_control_call_finish(g_steal_pointer(&c->call), local);
		return;
	}
	xml = vr_domain_tuning_to_xml(tuning);
	next = lv_call_new(m, c->uuid);
	next->call = g_steal_pointer(&c->call);
	vr_libvirt_set_metadata(m->lv, c->uuid, xml, ctl_set_written, next, lv_call_free);
}

/*
 * set: a --qmp QEMU's in the daemon; a libvirt domain's in its metadata,
 * read and written on libvirt's thread (the client waits, the main loop
 * does not): answered when libvirt wrote it, or with libvirt's error or
 * its timeout.
 */
static void ctl_set_async(gpointer user, const char *domain, const char *const *settings,
			  struct vr_control_call *call)
{
	struct vr_manager *m = user;
	g_autoptr(GError) error = NULL;
	struct vr_domain *d = find_domain(m, domain, &error);
	struct lv_call *c;

	if (d && d->qmp_path)
		ctl_set_qmp(m, d, settings, &error);
	if (!d || d->qmp_path) {
		vr_control_call_finish(call, error);
		return;
	}
	c = lv_call_new(m, d->uuid);
	c->call = call;
	c->settings = g_strdupv((char **)settings);
	vr_libvirt_get_running(m->lv, d->uuid, ctl_set_read, c, lv_call_free);
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
		m->decide_now = TRUE;
		g_message("%s: %s by vreclaimctl", d->name, pause ? "paused" : "resumed");
		return TRUE;
	}
	g_hash_table_iter_init(&it, m->domains);
	while (g_hash_table_iter_next(&it, NULL, &value))
		((struct vr_domain *)value)->user_paused = pause;
	m->decide_now = TRUE;
	g_message("every domain %s by vreclaimctl", pause ? "paused" : "resumed");
	return TRUE;
}

static const struct vr_control_ops control_ops = {
	.status = ctl_status,
	.pause = ctl_pause,
	.set_async = ctl_set_async,
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
	m->sysfs = g_strdup(paths && paths->sysfs ? paths->sysfs : "/sys");
	m->qmp = g_array_new(FALSE, TRUE, sizeof(struct qmp_socket));
	for (guint i = 0; paths && paths->qmp_sockets && paths->qmp_sockets[i]; i++) {
		struct qmp_socket q = { .path = g_strdup(paths->qmp_sockets[i]), .manager = m };
		g_array_append_val(m->qmp, q);
	}
	/* m->qmp is not resized from here on: probes keep pointers to its
	 * elements. */
	m->run_dir_override = g_strdup(paths ? paths->run_dir : NULL);
	m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
					   vr_libvirt_run_dir(m->config->connect_uri);
	m->domains = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					   (GDestroyNotify)vr_domain_free);
	m->lookups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	m->views = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					 (GDestroyNotify)vr_libvirt_domain_free);
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

/* Opens what @c asks for into *@control and *@metrics; nothing on error.
 * The control socket's roles and limits are @c's, resolved (user and group
 * names to ids) now. */
static gboolean open_servers(struct vr_manager *m, const struct vr_daemon_config *c,
			     struct vr_control_server **control, struct vr_metrics_server **metrics,
			     GError **error)
{
	g_autoptr(vr_control_server) ctl = NULL;
	g_autoptr(vr_metrics_server) met = NULL;
	g_autofree char *address = metrics_address(c);
	struct vr_control_rules rules;

	if (!vr_daemon_config_control_rules(c, &rules, error))
		return FALSE;
	ctl = vr_control_server_new(c->control_socket, c->control_socket_mode, &rules, &control_ops,
				    m, error);
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

static gboolean domain_is_libvirt(gpointer key, gpointer value, gpointer user_data)
{
	(void)key;
	(void)user_data;
	return ((struct vr_domain *)value)->qmp_path == NULL;
}

gboolean vr_manager_reload(struct vr_manager *m, GError **error)
{
	g_autoptr(vr_daemon_config) next = NULL;
	g_autoptr(vr_control_server) control = NULL;
	g_autoptr(vr_metrics_server) metrics = NULL;
	struct vr_control_rules rules;
	gboolean servers_changed, uri_changed;

	if (!m->config_path) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
			    "no config file to reload (vreclaimd runs on built-in defaults)");
		return FALSE;
	}
	next = vr_daemon_config_load(m->config_path, error);
	if (!next || !vr_daemon_config_control_rules(next, &rules, error))
		return FALSE;
	m->decide_now = TRUE;
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
	} else if (m->control && !vr_control_server_set_rules(m->control, &rules, error)) {
		return FALSE;
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
		g_hash_table_foreach_remove(m->domains, domain_is_libvirt, NULL);
		g_hash_table_remove_all(m->views);
		g_clear_pointer(&m->lv, vr_libvirt_free);
		g_free(m->run_dir);
		m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
						   vr_libvirt_run_dir(m->config->connect_uri);
		m->lv = vr_libvirt_new(m->config->connect_uri, (guint)m->config->reconnect_max_ms,
				       &libvirt_ops, m);
		vr_libvirt_start(m->lv);
	} else {
		/* Policies and the manage mode may have changed: applied now to
		 * what libvirt last said of each domain, then to a new listing. */
		g_autoptr(GPtrArray) views =
			g_ptr_array_new_with_free_func((GDestroyNotify)vr_libvirt_domain_free);
		GHashTableIter it;
		gpointer view;
		g_hash_table_iter_init(&it, m->views);
		while (g_hash_table_iter_next(&it, NULL, &view))
			g_ptr_array_add(views, vr_libvirt_domain_copy(view));
		for (guint i = 0; i < views->len; i++)
			manager_refresh_domain(m, g_ptr_array_index(views, i));
		if (vr_libvirt_is_connected(m->lv))
			manager_refresh_all(m);
	}
	/* A --qmp QEMU keeps its tuning; its policy file may have changed. */
	g_autoptr(GPtrArray) doms = managed_domains(m);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		if (d->qmp_path)
			manager_retune_qmp(m, d, vr_domain_tuning_copy(d->tuning));
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
	if (m->domains) {
		g_autoptr(GPtrArray) doms = managed_domains(m);

		manager_save_states(m, doms, TRUE); /* a clean exit: the latest */
		g_hash_table_destroy(m->domains);
	}
	g_clear_pointer(&m->lv, vr_libvirt_free);
	if (m->lookups)
		g_hash_table_destroy(m->lookups);
	if (m->views)
		g_hash_table_destroy(m->views);
	g_clear_pointer(&m->control, vr_control_server_free);
	g_clear_pointer(&m->metrics, vr_metrics_server_free);
	g_clear_pointer(&m->reads, vr_read_batch_free);
	vr_daemon_config_free(m->config);
	g_free(m->config_path);
	for (guint i = 0; m->qmp && i < m->qmp->len; i++) {
		struct qmp_socket *q = &g_array_index(m->qmp, struct qmp_socket, i);
		vr_monitor_worker_free(q->probe);
		g_free(q->path);
		g_free(q->last_error);
	}
	if (m->qmp)
		g_array_free(m->qmp, TRUE);
	g_free(m->procfs);
	g_free(m->sysfs);
	g_free(m->run_dir_override);
	g_free(m->run_dir);
	g_free(m);
}
