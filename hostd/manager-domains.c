/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's domain lifecycle (manager-private.h): domains discovered
 * through libvirt (a listing on connect, a read on each event) and --qmp
 * (a probe of each socket's QEMU, its claims checked), attached, committed
 * (managed with a valid tuning, policy and action, or why not), and dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "actions/action.h"
#include "manager-private.h"
#include "procfs-text.h"
#include "qmp/qmp-domain.h"
#include "state-dir.h"

/* A --qmp socket without a QEMU behind it (or one that could not be
 * probed) is tried again this often, us. */
#define VR_MANAGER_QMP_RETRY_US (5 * G_USEC_PER_SEC)

/* G_DEFINE_QUARK's name has dashes: clang-format would split them. */
/* clang-format off */
G_DEFINE_QUARK(vr-manager-error-quark, vr_manager_error)
/* clang-format on */

/* ---- domains from libvirt -------------------------------------------------- */

void vr_manager_drop_domain(struct vr_manager *m, struct vr_domain *d, const char *why)
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
static enum vr_domain_action choose_action(const struct vr_domain_tuning *tuning,
					   const struct vr_domain_info *info, char **why)
{
	guint a = tuning->actions;
	g_autoptr(GString) missing = g_string_new(NULL);

	if ((a & VR_DOMAIN_ACTION_AGENT_RECLAIM) && info->agent_socket_path)
		return VR_DOMAIN_ACTION_AGENT_RECLAIM;
	if ((a & VR_DOMAIN_ACTION_BALLOON) && info->memballoon_model &&
	    strcmp(info->memballoon_model, "none") != 0)
		return VR_DOMAIN_ACTION_BALLOON;
	if (a & VR_DOMAIN_ACTION_HOST_PAGEOUT)
		return VR_DOMAIN_ACTION_HOST_PAGEOUT;
	if (a & VR_DOMAIN_ACTION_AGENT_RECLAIM)
		g_string_append_printf(missing, "no agent channel (a unix channel named %s)",
				       VR_DOMAIN_AGENT_CHANNEL);
	if (a & VR_DOMAIN_ACTION_BALLOON)
		g_string_append_printf(missing, "%sno balloon device", missing->len ? ", " : "");
	*why = g_string_free(g_steal_pointer(&missing), FALSE);
	return VR_DOMAIN_ACTION_NONE;
}

struct vr_manager_lv_call *vr_manager_lv_call_new(struct vr_manager *m, const char *uuid)
{
	struct vr_manager_lv_call *c = g_new0(struct vr_manager_lv_call, 1);

	c->m = m;
	g_strlcpy(c->uuid, uuid, sizeof(c->uuid));
	return c;
}

void vr_manager_lv_call_free(gpointer data)
{
	struct vr_manager_lv_call *c = data;

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
void vr_manager_commit_domain(struct vr_manager *m, struct vr_domain *d,
			      struct vr_domain_tuning *tuning_in, struct vr_domain_info *info)
{
	g_autoptr(vr_domain_tuning) tuning = tuning_in;
	g_autoptr(vr_policy) policy = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *why = NULL;
	enum vr_domain_action action = choose_action(tuning, info, &why);

	if (action == VR_DOMAIN_ACTION_NONE) {
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
			  tuning->guaranteed_bytes, a, vr_domain_action_name(action));
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
	if (d->action == VR_DOMAIN_ACTION_AGENT_RECLAIM && !d->source) {
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
void vr_manager_refresh_domain(struct vr_manager *m, const struct vr_libvirt_domain *ld)
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
	vr_manager_commit_domain(m, d, g_steal_pointer(&tuning), &info);
	if (d->managed)
		vr_fleet_round_watch_pid(m, d);
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
		vr_manager_refresh_domain(m, ld);
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
		vr_manager_drop_domain(m, g_ptr_array_index(gone, i), "no longer running");
}

/* List every running domain again, on libvirt's thread; the domains are
 * brought up to date when the listing comes. One listing at a time: a
 * listing asked while one is outstanding is that one. */
void vr_manager_refresh_all(struct vr_manager *m)
{
	if (m->listing)
		return;
	m->listing = TRUE;
	vr_libvirt_list_running(m->env.lv, refresh_all_done, m, refresh_all_over);
}

static void lv_connected(gpointer user_data)
{
	vr_manager_refresh_all(user_data);
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
	struct vr_manager_lv_call *c = user_data;
	struct vr_manager *m = c->m;
	struct vr_domain *d = g_hash_table_lookup(m->env.domains, c->uuid);

	if (error) {
		/* A domain that stopped is let go whatever libvirt says now. */
		if (d && c->change == VR_LIBVIRT_STOPPED)
			vr_manager_drop_domain(m, d, "stopped");
		else
			g_warning("%s: %s", d ? d->name : c->uuid, error->message);
		return;
	}
	if (!ld) {
		if (d)
			vr_manager_drop_domain(
				m, d,
				c->change == VR_LIBVIRT_STOPPED ? "stopped" : "no longer running");
		return;
	}
	vr_manager_refresh_domain(m, ld);
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
	struct vr_manager_lv_call *c;

	(void)name;
	if (change == VR_LIBVIRT_REBOOTED && d)
		g_message("%s: the guest rebooted", d->name);
	c = vr_manager_lv_call_new(m, uuid);
	c->change = change;
	vr_libvirt_get_running(m->env.lv, uuid, domain_changed_done, c, vr_manager_lv_call_free);
}

const struct vr_libvirt_ops vr_manager_libvirt_ops = {
	.connected = lv_connected,
	.disconnected = lv_disconnected,
	.domain_changed = lv_domain_changed,
};

/* ---- QEMU processes given by --qmp ------------------------------------------ */

static void qmp_socket_failed(struct vr_manager_qmp_socket *q, const GError *error)
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
static void manager_attach_qmp(struct vr_manager *m, struct vr_manager_qmp_socket *q,
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
	vr_manager_commit_domain(m, d, vr_domain_tuning_default(m->env.config), &info);
	vr_domain_info_clear(&info);
	vr_fleet_round_watch(m, d, qi->pid);
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
	struct vr_manager_qmp_socket *q = user_data;
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
static void manager_probe_qmp(struct vr_manager_qmp_socket *q)
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
void vr_manager_attach_qmp_all(struct vr_manager *m)
{
	gint64 now = g_get_monotonic_time();

	for (guint i = 0; i < m->qmp->len; i++) {
		struct vr_manager_qmp_socket *q =
			&g_array_index(m->qmp, struct vr_manager_qmp_socket, i);
		struct vr_domain *d = q->uuid[0] ? g_hash_table_lookup(m->env.domains, q->uuid) :
						   NULL;
		if (d && !d->managed && (d->pid <= 0 || (kill(d->pid, 0) < 0 && errno == ESRCH)))
			vr_manager_drop_domain(m, d, "its QEMU process exited");
		else if (d)
			continue;
		q->uuid[0] = '\0';
		if (!q->probe && now >= q->next_try_us)
			manager_probe_qmp(q);
	}
}
