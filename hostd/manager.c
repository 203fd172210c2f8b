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

#include "actions/action.h"
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

/* A --qmp socket without a QEMU behind it (or one that could not be
 * probed) is tried again this often, us. */
#define VR_MANAGER_QMP_RETRY_US (5 * G_USEC_PER_SEC)

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
	/* the config, the proc and sys mounts, the libvirt connection, the
	 * domains by UUID and their outstanding monitor lookups: what the
	 * domains' own I/O shares (hostd/domain.h) */
	struct vr_domain_env env;
	char *config_path;
	GArray *qmp; /* struct qmp_socket */
	char *run_dir_override;
	char *run_dir;

	/* libvirt's answers come later (libvirt-conn.h): a listing is asked
	 * once at a time (a domain's lookup for its QEMU monitor too: @env). */
	gboolean listing;
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
	/* The fleet's last decision: its tick and how many domains it shared
	 * the quota among; decide_now asks for one at the next tick. */
	uint64_t decided_tick;
	guint decided_domains;
	gboolean decide_now;
	uint64_t reloads;
	gint64 started_us;
};

/* ---- state across restarts (hostd/state-dir.h) ---------------------------- */

static uint64_t window_len_us(const struct vr_manager *m)
{
	return m->env.config->fleet_quota_reset_interval_ms * 1000;
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

	if (!vr_qemu_incarnation_read(m->env.procfs, d->pid, &qemu, &error)) {
		g_debug("%s: %s", d->name, error->message);
		return;
	}
	d->qemu = qemu;
	d->qemu_known = TRUE;
	if (!first)
		return; /* a new QEMU of a domain we had: its stats go on */
	if (!vr_state_dir_load(m->env.config->state_dir, d->uuid, &st, &error)) {
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

	if (!vr_state_dir_prepare(m->env.config->state_dir, &error) ||
	    !vr_state_dir_save(m->env.config->state_dir, st, &error)) {
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
	g_autofree char *path = g_strdup_printf("%s/%d/status", m->env.procfs, (int)pid);
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
	if (!vr_libvirt_qemu_pid(m->run_dir, m->env.procfs, d->name, &pid, &error)) {
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
		if (!vr_state_dir_remove(m->env.config->state_dir, d->uuid, &error))
			g_warning("%s: %s", d->name, error->message);
	}
	g_hash_table_remove(m->env.domains, d->uuid);
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
	policy = vr_domain_policy_for(tuning, m->env.config, &error);
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
	/* Another action drops what the old one kept (its stop operation). */
	vr_domain_set_action(d, vr_action_ops_get(action));
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
	if (!d->session && d->info.agent_socket_path && !vr_domain_open_session(d, &error)) {
		vr_domain_set_unmanaged(d, "%s", error->message);
		return;
	}
	if (d->action == VR_ACTIVE_ACTION_AGENT_RECLAIM && !d->source) {
		d->source = vr_access_source_new_agent(d->session, vr_domain_agent_timeout_ms(d),
						       &error);
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
	struct vr_domain *d = g_hash_table_lookup(m->env.domains, ld->uuid);
	g_auto(vr_domain_info) info = { 0 };
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_domain_tuning) tuning = NULL;
	g_autofree char *reason = NULL;
	gboolean was_managed;

	if (!d) {
		d = vr_domain_new(ld->uuid, ld->name);
		d->env = &m->env;
		g_hash_table_insert(m->env.domains, d->uuid, d);
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
	tuning = vr_domain_tuning_for(ld, m->env.config, &reason);
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
	g_hash_table_iter_init(&it, m->env.domains);
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
	vr_libvirt_list_running(m->env.lv, refresh_all_done, m, refresh_all_over);
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
	struct vr_domain *d = g_hash_table_lookup(m->env.domains, c->uuid);

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
	struct vr_domain *d = g_hash_table_lookup(m->env.domains, uuid);
	struct lv_call *c;

	(void)name;
	if (change == VR_LIBVIRT_REBOOTED && d)
		g_message("%s: the guest rebooted", d->name);
	c = lv_call_new(m, uuid);
	c->change = change;
	vr_libvirt_get_running(m->env.lv, uuid, domain_changed_done, c, lv_call_free);
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
	g_autofree char *proc_dir = g_strdup_printf("%s/%d", m->env.procfs, (int)qi->pid);
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
	if (g_hash_table_contains(m->env.domains, qi->uuid)) {
		g_set_error(&error, VR_MANAGER_ERROR, VR_MANAGER_ERROR_UNSUPPORTED,
			    "its QEMU (%s) has the UUID %s of a domain vreclaimd manages already",
			    qi->name, qi->uuid);
		qmp_socket_failed(q, error);
		return;
	}
	g_clear_pointer(&q->last_error, g_free);
	g_strlcpy(q->uuid, qi->uuid, sizeof(q->uuid));
	d = vr_domain_new(qi->uuid, qi->name);
	d->env = &m->env;
	d->qmp_path = g_strdup(q->path);
	d->monitor = g_steal_pointer(&owned);
	vr_monitor_worker_set_name(d->monitor, d->name);
	g_hash_table_insert(m->env.domains, d->uuid, d);
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
	manager_commit_domain(m, d, vr_domain_tuning_default(m->env.config), &info);
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
		name, vr_qemu_monitor_new_qmp_unconnected(q->path, VR_DOMAIN_QMP_TIMEOUT_MS),
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
		struct vr_domain *d = q->uuid[0] ? g_hash_table_lookup(m->env.domains, q->uuid) :
						   NULL;
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

/* What the actions are told this tick (the act step adds its own). */
static void action_ctx(const struct vr_manager *m, struct vr_action_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->config = m->env.config;
	ctx->host = &m->host;
	ctx->host_known = m->host_known;
	ctx->host_needs_memory = m->host_needs_memory;
	ctx->ticks = m->ticks;
}

/* What @d offers the fleet this window, by its action (->offer). */
static gboolean domain_offer(const struct vr_action_ctx *ctx, struct vr_domain *d,
			     struct vr_fleet_domain *fd)
{
	return d->action_ops && d->action_ops->offer(d, ctx, fd);
}

/* Whether the host needs memory, by its watermarks. Return: TRUE when that
 * changed. */
static gboolean decide_host(struct vr_manager *m)
{
	gboolean needed = m->host_needs_memory;

	if (m->host_known)
		needed = vr_host_needs_memory(&m->env.config->host_wmarks, &m->host, needed);
	m->host_state = m->host_known ? vr_host_memory_state(&m->env.config->host_wmarks, &m->host,
							     needed) :
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
	struct vr_action_ctx ctx;

	action_ctx(m, &ctx);

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
				    d, now_us, m->env.config->fleet_quota_reset_interval_ms * 1000),
			    m->env.config->fleet_credit_floor_bp / 10);
		/* Offers are made whether or not the host needs memory: the
		 * status shows them, and the holds are ready when it does. */
		fd->eligible = !d->user_paused && d->rss_bytes > 0 && domain_offer(&ctx, d, fd);
		if (!fd->eligible)
			vr_fleet_offer_hold_reset(&d->offer_hold);
	}
	uint64_t quota = m->env.config->fleet_quota_bytes ? m->env.config->fleet_quota_bytes :
							    G_MAXUINT64;
	if (!vr_fleet_distribute(fleet, doms->len, needed ? quota : 0, shares, &error)) {
		g_warning("cannot share the fleet quota: %s", error->message);
		memset(shares, 0, sizeof(*shares) * doms->len);
	}
	for (guint i = 0; i < doms->len; i++)
		((struct vr_domain *)g_ptr_array_index(doms, i))->share_bytes = shares[i];
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

	g_hash_table_iter_init(&it, m->env.domains);
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
	struct vr_action_ctx ctx;
	guint budget, status_period;

	m->ticks++;
	manager_attach_qmp_all(m);
	doms = managed_domains(m);
	/* acquire: each domain's status every status_period ticks, in turn
	 * (every tick up to 100 domains), and at once when it was never read */
	status_period = vr_fleet_status_period_ticks(m->env.config->interval_ms, doms->len);
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
		uint64_t t0 = vr_thread_cpu_us();
		if (!d->status_read_set)
			domain_watch_pid(m, d);
		/* libvirt says when its domains stop; a --qmp QEMU is gone when
		 * its process is. */
		if (status_due(m, d, i, status_period) && !acquire_domain(m, d) && d->qmp_path)
			g_ptr_array_add(gone, d);
		d->cpu_us += vr_thread_cpu_us() - t0;
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
	action_ctx(m, &ctx);
	budget = MAX(m->env.config->fleet_pictures_per_tick, 1);
	/* A domain's picture is refreshed every picture_period ticks, in turn
	 * by its place among the managed domains (pictures-per-tick). */
	ctx.picture_period = MAX(1, (doms->len + budget - 1) / budget);
	ctx.report_interval_ms = vr_fleet_report_interval_ms(m->env.config->interval_ms, doms->len);
	/* One clock reading between two domains ends the one and starts the
	 * next. */
	uint64_t t0 = vr_thread_cpu_us();
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		ctx.act_index = i;
		if (d->action_ops)
			d->action_ops->act(d, &ctx);
		uint64_t t1 = vr_thread_cpu_us();
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
	g_hash_table_iter_init(&it, m->env.domains);
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
	g_strlcpy(daemon->libvirt_uri, vr_libvirt_uri(m->env.lv), sizeof(daemon->libvirt_uri));
	daemon->libvirt_connected = vr_libvirt_is_connected(m->env.lv);
	if (vr_libvirt_degraded_reason(m->env.lv)) {
		daemon->libvirt_degraded = TRUE;
		g_strlcpy(daemon->libvirt_degraded_reason, vr_libvirt_degraded_reason(m->env.lv),
			  sizeof(daemon->libvirt_degraded_reason));
	}
	daemon->libvirt_stalls = vr_libvirt_stalls(m->env.lv);
	daemon->host_needs_memory = m->host_needs_memory;
	daemon->free_mem_rate_permille = m->host_known ? vr_host_free_mem_rate(&m->host) : 0;
	g_strlcpy(daemon->host_memory_state, vr_host_memory_state_name(m->host_state),
		  sizeof(daemon->host_memory_state));
	daemon->fleet_quota_bytes = m->env.config->fleet_quota_bytes;
	daemon->reloads = m->reloads;
	daemon->ticks = m->ticks;
	*domains = g_steal_pointer(&out);
	return TRUE;
}

static struct vr_domain *find_domain(struct vr_manager *m, const char *name, GError **error)
{
	GHashTableIter it;
	gpointer value;

	g_hash_table_iter_init(&it, m->env.domains);
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
	    (tuning->enable && !(policy = vr_domain_policy_for(tuning, m->env.config, &local)))) {
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
							 vr_domain_tuning_default(m->env.config);

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
	if (ld && g_hash_table_contains(c->m->env.domains, c->uuid))
		manager_refresh_domain(c->m, ld);
	vr_control_call_finish(g_steal_pointer(&c->call), NULL);
}

static void ctl_set_written(const GError *error, gpointer user_data)
{
	struct lv_call *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->m->env.domains, c->uuid);
	struct lv_call *next;

	if (error) {
		vr_control_call_finish(g_steal_pointer(&c->call), error);
		return;
	}
	g_message("%s: metadata set by vreclaimctl", d ? d->name : c->uuid);
	/* Apply it now; libvirt's metadata event applies it once more. */
	next = lv_call_new(c->m, c->uuid);
	next->call = g_steal_pointer(&c->call);
	vr_libvirt_get_running(c->m->env.lv, c->uuid, ctl_set_reread, next, lv_call_free);
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
		struct vr_domain *d = g_hash_table_lookup(m->env.domains, c->uuid);
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
	vr_libvirt_set_metadata(m->env.lv, c->uuid, xml, ctl_set_written, next, lv_call_free);
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
	vr_libvirt_get_running(m->env.lv, d->uuid, ctl_set_read, c, lv_call_free);
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
	g_hash_table_iter_init(&it, m->env.domains);
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

	m->env.config = g_steal_pointer(&owned);
	m->config_path = g_strdup(config_path);
	m->env.procfs = g_strdup(paths && paths->procfs ? paths->procfs : "/proc");
	m->env.sysfs = g_strdup(paths && paths->sysfs ? paths->sysfs : "/sys");
	m->qmp = g_array_new(FALSE, TRUE, sizeof(struct qmp_socket));
	for (guint i = 0; paths && paths->qmp_sockets && paths->qmp_sockets[i]; i++) {
		struct qmp_socket q = { .path = g_strdup(paths->qmp_sockets[i]), .manager = m };
		g_array_append_val(m->qmp, q);
	}
	/* m->qmp is not resized from here on: probes keep pointers to its
	 * elements. */
	m->run_dir_override = g_strdup(paths ? paths->run_dir : NULL);
	m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
					   vr_libvirt_run_dir(m->env.config->connect_uri);
	m->env.domains = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					       (GDestroyNotify)vr_domain_free);
	m->env.lookups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	m->views = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
					 (GDestroyNotify)vr_libvirt_domain_free);
	m->reads = vr_read_batch_new(TRUE, error);
	if (!m->reads)
		return NULL;
	path = g_strdup_printf("%s/meminfo", m->env.procfs);
	m->meminfo_read = vr_read_batch_add(m->reads, path, &local);
	if (local) {
		g_propagate_error(error, g_steal_pointer(&local));
		return NULL;
	}
	g_free(path);
	path = g_strdup_printf("%s/pressure/memory", m->env.procfs);
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
	if (!open_servers(m, m->env.config, &m->control, &m->metrics, error))
		return FALSE;
	g_message("control socket %s", m->env.config->control_socket);
	m->env.lv = vr_libvirt_new(m->env.config->connect_uri,
				   (guint)m->env.config->reconnect_max_ms, &libvirt_ops, m);
	vr_libvirt_start(m->env.lv);
	m->tick_source = g_timeout_add((guint)m->env.config->interval_ms, tick, m);
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
	servers_changed = g_strcmp0(next->control_socket, m->env.config->control_socket) != 0 ||
			  next->control_socket_mode != m->env.config->control_socket_mode ||
			  g_strcmp0(next->metrics_host, m->env.config->metrics_host) != 0 ||
			  next->metrics_port != m->env.config->metrics_port;
	if (servers_changed) {
		/* The old listeners go first so the same path or port can be
		 * taken again; if the new ones fail, the old ones come back. */
		g_clear_pointer(&m->control, vr_control_server_free);
		g_clear_pointer(&m->metrics, vr_metrics_server_free);
		if (!open_servers(m, next, &control, &metrics, error)) {
			g_autoptr(GError) again = NULL;
			if (!open_servers(m, m->env.config, &m->control, &m->metrics, &again))
				g_warning("cannot reopen the control socket: %s", again->message);
			return FALSE;
		}
		m->control = g_steal_pointer(&control);
		m->metrics = g_steal_pointer(&metrics);
	} else if (m->control && !vr_control_server_set_rules(m->control, &rules, error)) {
		return FALSE;
	}
	uri_changed = g_strcmp0(next->connect_uri, m->env.config->connect_uri) != 0;
	vr_daemon_config_free(m->env.config);
	m->env.config = g_steal_pointer(&next);
	m->reloads++;
	if (m->tick_source) {
		g_source_remove(m->tick_source);
		m->tick_source = g_timeout_add((guint)m->env.config->interval_ms, tick, m);
	}
	if (uri_changed) {
		g_hash_table_foreach_remove(m->env.domains, domain_is_libvirt, NULL);
		g_hash_table_remove_all(m->views);
		g_clear_pointer(&m->env.lv, vr_libvirt_free);
		g_free(m->run_dir);
		m->run_dir = m->run_dir_override ? g_strdup(m->run_dir_override) :
						   vr_libvirt_run_dir(m->env.config->connect_uri);
		m->env.lv = vr_libvirt_new(m->env.config->connect_uri,
					   (guint)m->env.config->reconnect_max_ms, &libvirt_ops, m);
		vr_libvirt_start(m->env.lv);
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
		if (vr_libvirt_is_connected(m->env.lv))
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
	if (m->env.domains) {
		g_autoptr(GPtrArray) doms = managed_domains(m);

		manager_save_states(m, doms, TRUE); /* a clean exit: the latest */
		g_hash_table_destroy(m->env.domains);
	}
	g_clear_pointer(&m->env.lv, vr_libvirt_free);
	if (m->env.lookups)
		g_hash_table_destroy(m->env.lookups);
	if (m->views)
		g_hash_table_destroy(m->views);
	g_clear_pointer(&m->control, vr_control_server_free);
	g_clear_pointer(&m->metrics, vr_metrics_server_free);
	g_clear_pointer(&m->reads, vr_read_batch_free);
	vr_daemon_config_free(m->env.config);
	g_free(m->config_path);
	for (guint i = 0; m->qmp && i < m->qmp->len; i++) {
		struct qmp_socket *q = &g_array_index(m->qmp, struct qmp_socket, i);
		vr_monitor_worker_free(q->probe);
		g_free(q->path);
		g_free(q->last_error);
	}
	if (m->qmp)
		g_array_free(m->qmp, TRUE);
	g_free(m->env.procfs);
	g_free(m->env.sysfs);
	g_free(m->run_dir_override);
	g_free(m->run_dir);
	g_free(m);
}
