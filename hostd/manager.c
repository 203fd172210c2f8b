/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's manager (see manager.h): its life (new, start, reload, free),
 * the order of its tick (manager-domains.c's --qmp attach and drop around
 * fleet-round.c's steps), and the control socket's operations.
 */
#include "manager.h"

#include <string.h>

#include "manager-private.h"

#ifndef VRD_VERSION
#define VRD_VERSION "unknown"
#endif

/* ---- the tick --------------------------------------------------------------- */

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

/* The tick: the --qmp sockets attached, then the fleet round (acquire ->
 * decide -> act -> save), the domains whose QEMU is gone dropped after
 * acquire. */
static gboolean tick(gpointer data)
{
	struct vr_manager *m = data;
	g_autoptr(GPtrArray) doms = NULL;
	g_autoptr(GPtrArray) gone = g_ptr_array_new();
	guint status_period;

	m->ticks++;
	vr_manager_attach_qmp_all(m);
	doms = managed_domains(m);
	status_period = vr_fleet_round_acquire(m, doms, gone);
	for (guint i = 0; i < gone->len; i++) {
		g_ptr_array_remove(doms, g_ptr_array_index(gone, i));
		vr_manager_drop_domain(m, g_ptr_array_index(gone, i), "its QEMU process exited");
	}
	vr_fleet_round_acquire_pictures(m, doms);
	vr_fleet_round_decide(m, doms, status_period);
	vr_fleet_round_act(m, doms);
	vr_fleet_round_save_states(m, doms, FALSE);
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
	vr_manager_commit_domain(m, d, tuning, &info);
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
	struct vr_manager_lv_call *c = user_data;

	(void)error; /* written all the same: the metadata event applies it */
	if (ld && g_hash_table_contains(c->m->env.domains, c->uuid))
		vr_manager_refresh_domain(c->m, ld);
	vr_control_call_finish(g_steal_pointer(&c->call), NULL);
}

static void ctl_set_written(const GError *error, gpointer user_data)
{
	struct vr_manager_lv_call *c = user_data;
	struct vr_domain *d = g_hash_table_lookup(c->m->env.domains, c->uuid);
	struct vr_manager_lv_call *next;

	if (error) {
		vr_control_call_finish(g_steal_pointer(&c->call), error);
		return;
	}
	g_message("%s: metadata set by vreclaimctl", d ? d->name : c->uuid);
	/* Apply it now; libvirt's metadata event applies it once more. */
	next = vr_manager_lv_call_new(c->m, c->uuid);
	next->call = g_steal_pointer(&c->call);
	vr_libvirt_get_running(c->m->env.lv, c->uuid, ctl_set_reread, next,
			       vr_manager_lv_call_free);
}

/* set, second step: what its metadata says now, with @c's settings applied,
 * written back. */
static void ctl_set_read(const struct vr_libvirt_domain *ld, const GError *error,
			 gpointer user_data)
{
	struct vr_manager_lv_call *c = user_data;
	struct vr_manager *m = c->m;
	g_autoptr(vr_domain_tuning) tuning = NULL;
	g_autoptr(GError) local = NULL;
	g_autofree char *xml = NULL;
	struct vr_manager_lv_call *next;

	if (error || !ld) {
		struct vr_domain *d = g_hash_table_lookup(m->env.domains, c->uuid);
		if (!error)
			local = g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN,
					    "domain '%s' is not running", d ? d->name : c->uuid);
		vr_control_call_finish(g_steal_pointer(&c->call), error ? error : local);
		return;
	}
	/* Start from what its metadata says now (defaults when it has none or
	 * it is invalid: set then writes a whole valid element). An element
	 * that does not parse was written to opt in (an element enables unless
	 * it says no); a domain without one stays managed or not as the manage
	 * mode has it, until a setting says enable. */
	if (ld->metadata)
		tuning = vr_domain_tuning_parse(ld->metadata, &local);
	g_clear_error(&local);
	if (!tuning) {
		tuning = vr_domain_tuning_new();
		tuning->enable = ld->metadata || m->env.config->manage == VR_MANAGE_ALL;
	}
	if (!tuning_apply_settings(m, tuning, (const char *const *)c->settings, &local)) {
		vr_control_call_finish(g_steal_pointer(&c->call), local);
		return;
	}
	xml = vr_domain_tuning_to_xml(tuning);
	next = vr_manager_lv_call_new(m, c->uuid);
	next->call = g_steal_pointer(&c->call);
	vr_libvirt_set_metadata(m->env.lv, c->uuid, xml, ctl_set_written, next,
				vr_manager_lv_call_free);
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
	struct vr_manager_lv_call *c;

	if (d && d->qmp_path)
		ctl_set_qmp(m, d, settings, &error);
	if (!d || d->qmp_path) {
		vr_control_call_finish(call, error);
		return;
	}
	c = vr_manager_lv_call_new(m, d->uuid);
	c->call = call;
	c->settings = g_strdupv((char **)settings);
	vr_libvirt_get_running(m->env.lv, d->uuid, ctl_set_read, c, vr_manager_lv_call_free);
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

/* Puts the command line's values over those of @config, the one loaded at
 * start or by a reload. */
static void apply_command_line(const struct vr_manager *m, struct vr_daemon_config *config)
{
	if (m->connect_override) {
		g_free(config->connect_uri);
		config->connect_uri = g_strdup(m->connect_override);
	}
	if (m->control_socket_override) {
		g_free(config->control_socket);
		config->control_socket = g_strdup(m->control_socket_override);
	}
}

struct vr_manager *vr_manager_new(struct vr_daemon_config *config, const char *config_path,
				  const struct vr_manager_paths *paths, GError **error)
{
	g_autoptr(vr_daemon_config) owned = config;
	g_autoptr(vr_manager) m = g_new0(struct vr_manager, 1);
	g_autofree char *path = NULL;
	g_autoptr(GError) local = NULL;

	m->connect_override = g_strdup(paths ? paths->connect_uri : NULL);
	m->control_socket_override = g_strdup(paths ? paths->control_socket : NULL);
	apply_command_line(m, owned);
	m->env.config = g_steal_pointer(&owned);
	m->config_path = g_strdup(config_path);
	m->env.procfs = g_strdup(paths && paths->procfs ? paths->procfs : "/proc");
	m->env.sysfs = g_strdup(paths && paths->sysfs ? paths->sysfs : "/sys");
	m->qmp = g_array_new(FALSE, TRUE, sizeof(struct vr_manager_qmp_socket));
	for (guint i = 0; paths && paths->qmp_sockets && paths->qmp_sockets[i]; i++) {
		struct vr_manager_qmp_socket q = { .path = g_strdup(paths->qmp_sockets[i]),
						   .manager = m };
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
				   (guint)m->env.config->reconnect_max_ms, &vr_manager_libvirt_ops,
				   m);
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
	if (!next)
		return FALSE;
	apply_command_line(m, next);
	if (!vr_daemon_config_control_rules(next, &rules, error))
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
					   (guint)m->env.config->reconnect_max_ms,
					   &vr_manager_libvirt_ops, m);
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
			vr_manager_refresh_domain(m, g_ptr_array_index(views, i));
		if (vr_libvirt_is_connected(m->env.lv))
			vr_manager_refresh_all(m);
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

		vr_fleet_round_save_states(m, doms, TRUE); /* a clean exit: the latest */
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
		struct vr_manager_qmp_socket *q =
			&g_array_index(m->qmp, struct vr_manager_qmp_socket, i);
		vr_monitor_worker_free(q->probe);
		g_free(q->path);
		g_free(q->last_error);
	}
	if (m->qmp)
		g_array_free(m->qmp, TRUE);
	g_free(m->env.procfs);
	g_free(m->env.sysfs);
	g_free(m->run_dir_override);
	g_free(m->connect_override);
	g_free(m->control_socket_override);
	g_free(m->run_dir);
	g_free(m);
}
