// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fake-vreclaimd: the control socket and the metrics server of vreclaimd
 * (hostd/control/control.c, hostd/control/metrics.c) in front of a fixed fake fleet, for
 * test-vreclaimctl. It knows three domains (web1, db1, win10); `set` takes
 * priority=0..100 and policy=NAME, `pause`/`resume` flip their paused flags.
 *
 *   fake-vreclaimd --socket PATH [--mode OCTAL] [--metrics ADDRESS:PORT]
 *
 * Once it listens it prints "ready PORT" (the metrics port, 0 without
 * --metrics) on stdout; SIGTERM or SIGINT end it.
 */
#include <glib-unix.h>
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "control/control.h"
#include "control/metrics.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

static GPtrArray *fleet;

static void fleet_init(void)
{
	struct vr_domain_status *web = vr_domain_status_new();
	struct vr_domain_status *db = vr_domain_status_new();
	struct vr_domain_status *win = vr_domain_status_new();

	fleet = vr_domain_status_array_new();
	g_strlcpy(web->name, "web1", sizeof(web->name));
	g_strlcpy(web->uuid, "8f0c5d9e-3b1a-4c2d-9e8f-0123456789ab", sizeof(web->uuid));
	web->managed = TRUE;
	g_strlcpy(web->policy, "default", sizeof(web->policy));
	web->priority = 50;
	web->agent_state = VR_AGENT_STATE_CONNECTED;
	g_strlcpy(web->agent_version, "0.1.0", sizeof(web->agent_version));
	g_strlcpy(web->agent_backend, "damon", sizeof(web->agent_backend));
	web->action = VR_DOMAIN_ACTION_AGENT_RECLAIM;
	web->share_bytes = 64 * MIB;
	web->reclaimed_bytes = GIB;
	web->rss_start_bytes = 2 * GIB + 512 * MIB;
	web->rss_bytes = GIB + 512 * MIB;
	web->qt_exceeds = 3;
	web->cold_bytes = 700 * MIB;
	web->daemon_cpu_us = 1250000;

	g_strlcpy(db->name, "db1", sizeof(db->name));
	db->managed = TRUE;
	g_strlcpy(db->policy, "db", sizeof(db->policy));
	db->priority = 90;
	db->agent_state = VR_AGENT_STATE_CONNECTING;
	db->rss_start_bytes = 4 * GIB;
	db->rss_bytes = 4 * GIB;
	g_strlcpy(db->last_error, "agent: no hello yet", sizeof(db->last_error));

	g_strlcpy(win->name, "win10", sizeof(win->name));
	g_strlcpy(win->reason, "not a QEMU domain", sizeof(win->reason));
	win->rss_bytes = 2 * GIB;

	g_ptr_array_add(fleet, web);
	g_ptr_array_add(fleet, db);
	g_ptr_array_add(fleet, win);
}

static struct vr_domain_status *find(const char *name, GError **error)
{
	for (guint i = 0; i < fleet->len; i++) {
		struct vr_domain_status *d = g_ptr_array_index(fleet, i);

		if (!strcmp(d->name, name))
			return d;
	}
	g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN, "domain '%s' is not known",
		    name);
	return NULL;
}

static gboolean fake_status(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			    GError **error)
{
	(void)user;
	(void)error;
	*domains = vr_domain_status_array_new();
	for (guint i = 0; i < fleet->len; i++) {
		struct vr_domain_status *copy = vr_domain_status_new();

		memcpy(copy, g_ptr_array_index(fleet, i), sizeof(*copy));
		g_ptr_array_add(*domains, copy);
	}
	memset(daemon, 0, sizeof(*daemon));
	g_strlcpy(daemon->version, "0.1.0", sizeof(daemon->version));
	daemon->uptime_ms = 3723000;
	g_strlcpy(daemon->libvirt_uri, "qemu:///system", sizeof(daemon->libvirt_uri));
	daemon->libvirt_connected = TRUE;
	daemon->host_needs_memory = TRUE;
	daemon->free_mem_rate_permille = 62;
	g_strlcpy(daemon->host_memory_state, "below-mid", sizeof(daemon->host_memory_state));
	daemon->fleet_quota_bytes = 256 * MIB;
	daemon->reloads = 1;
	daemon->ticks = 3723;
	return TRUE;
}

/* All settings are checked before any is applied. */
static gboolean fake_set(gpointer user, const char *domain, const char *const *settings,
			 GError **error)
{
	struct vr_domain_status *d = find(domain, error);
	struct vr_domain_status next;

	(void)user;
	if (!d)
		return FALSE;
	next = *d;
	for (; *settings; settings++) {
		const char *value = strchr(*settings, '=') + 1;
		guint64 v;

		if (g_str_has_prefix(*settings, "priority=")) {
			if (!g_ascii_string_to_unsigned(value, 10, 0, VR_STATUS_PRIORITY_MAX, &v,
							NULL)) {
				g_set_error(error, VR_CONTROL_ERROR,
					    VR_CONTROL_ERROR_INVALID_ARGUMENT,
					    "priority: expected 0..100, got '%s'", value);
				return FALSE;
			}
			next.priority = (guint)v;
		} else if (g_str_has_prefix(*settings, "policy=")) {
			g_strlcpy(next.policy, value, sizeof(next.policy));
		} else {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
				    "unknown setting '%.*s' (known: priority, policy)",
				    (int)(value - 1 - *settings), *settings);
			return FALSE;
		}
	}
	*d = next;
	return TRUE;
}

static gboolean fake_pause(gpointer user, const char *domain, gboolean pause, GError **error)
{
	(void)user;
	if (domain) {
		struct vr_domain_status *d = find(domain, error);

		if (!d)
			return FALSE;
		d->paused = pause;
		return TRUE;
	}
	for (guint i = 0; i < fleet->len; i++)
		((struct vr_domain_status *)g_ptr_array_index(fleet, i))->paused = pause;
	return TRUE;
}

static const struct vr_control_ops ops = {
	.status = fake_status,
	.set = fake_set,
	.pause = fake_pause,
};

static gboolean on_signal(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
	g_autofree char *socket_path = NULL;
	g_autofree char *metrics = NULL;
	g_autofree char *mode_text = NULL;
	const GOptionEntry entries[] = {
		{ "socket", 0, 0, G_OPTION_ARG_FILENAME, &socket_path, "control socket", "PATH" },
		{ "mode", 0, 0, G_OPTION_ARG_STRING, &mode_text, "its mode (octal)", "MODE" },
		{ "metrics", 0, 0, G_OPTION_ARG_STRING, &metrics, "metrics address", "ADDR" },
		{ NULL }
	};
	g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
	g_autoptr(GError) error = NULL;
	guint64 mode = VR_CONTROL_DEFAULT_MODE;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error) || !socket_path ||
	    (mode_text && !g_ascii_string_to_unsigned(mode_text, 8, 0, 0777, &mode, &error))) {
		g_printerr("fake-vreclaimd: %s\n", error ? error->message : "--socket is needed");
		return 2;
	}
	fleet_init();
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	g_autoptr(vr_control_server)
		control = vr_control_server_new(socket_path, (guint)mode, NULL, &ops, NULL, &error);
	if (!control) {
		g_printerr("fake-vreclaimd: %s\n", error->message);
		return 1;
	}
	g_autoptr(vr_metrics_server) exporter = NULL;
	if (metrics) {
		exporter = vr_metrics_server_new(metrics, 0, fake_status, NULL, &error);
		if (!exporter) {
			g_printerr("fake-vreclaimd: %s\n", error->message);
			return 1;
		}
	}
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	printf("ready %u\n", exporter ? vr_metrics_server_get_port(exporter) : 0);
	fflush(stdout);
	g_main_loop_run(loop);
	g_ptr_array_unref(fleet);
	return 0;
}
