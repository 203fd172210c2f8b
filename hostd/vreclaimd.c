/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd: the host daemon (docs/vreclaimd.md). A thin main in the style
 * of systemd-oomd: arguments, the config, the manager, one GMainLoop;
 * SIGHUP reloads the config, SIGTERM and SIGINT stop.
 */
#include <errno.h>
#include <glib-unix.h>
#include <glib.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "config.h"
#include "manager.h"
#include "text-escape.h"

/* Every log line goes through vr_text_escape(): domain names, libvirt's XML
 * and agents' strings reach the log, and a control character in them must
 * not forge a line or drive a terminal. */
static struct vr_log_escape log_escape = { .next = g_log_writer_default };

/* Exit codes: 0 after a clean stop, 1 when it cannot start, 2 for bad
 * arguments. */
enum {
	VRD_EXIT_OK = 0,
	VRD_EXIT_FAILED = 1,
	VRD_EXIT_USAGE = 2
};

/* File descriptors the daemon needs besides its domains' (logs, libvirt,
 * the control and metrics sockets and their clients, io_uring). */
#define VRD_FDS_BASE 64
/* And per --qmp domain: its QMP socket, its agent's, its /proc status, one
 * spare for a reconnect. */
#define VRD_FDS_PER_QMP 4

/*
 * Raise the soft RLIMIT_NOFILE to the hard one: a large fleet needs more
 * descriptors than the usual soft 1024 (about 4 per domain; bench/
 * fleet-scale runs 1000). When even the hard limit is short for the --qmp
 * domains given, say so at the start, with the fix, rather than let some of
 * them fail later with "Too many open files".
 */
static void raise_nofile(guint nr_qmp)
{
	struct rlimit rl;
	rlim_t need = VRD_FDS_BASE + (rlim_t)VRD_FDS_PER_QMP * nr_qmp;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		g_warning("cannot read RLIMIT_NOFILE: %s", g_strerror(errno));
		return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			g_warning("cannot raise RLIMIT_NOFILE from %llu to %llu: %s",
				  (unsigned long long)was, (unsigned long long)rl.rlim_max,
				  g_strerror(errno));
			rl.rlim_cur = was;
		}
	}
	g_debug("file descriptors: up to %llu (RLIMIT_NOFILE)", (unsigned long long)rl.rlim_cur);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		g_warning("%u --qmp domains need about %llu file descriptors and RLIMIT_NOFILE "
			  "allows %llu: some will fail with \"Too many open files\"; raise the "
			  "limit (LimitNOFILE= in the systemd unit, ulimit -n)",
			  nr_qmp, (unsigned long long)need, (unsigned long long)rl.rlim_cur);
}

static gboolean on_reload(gpointer data)
{
	g_autoptr(GError) error = NULL;

	if (!vr_manager_reload(data, &error))
		g_warning("reload refused, the running configuration stays: %s", error->message);
	return G_SOURCE_CONTINUE;
}

static gboolean on_stop(gpointer data)
{
	g_message("stopping");
	g_main_loop_quit(data);
	return G_SOURCE_CONTINUE;
}

int main(int argc, char **argv)
{
	g_autofree char *config_path = NULL;
	g_autofree char *connect_uri = NULL;
	g_autofree char *control_socket = NULL;
	g_autofree char *run_dir = NULL;
	g_autofree char *procfs = NULL;
	g_autofree char *sysfs = NULL;
	g_auto(GStrv) qmp_sockets = NULL;
	gboolean verbose = FALSE;
	gboolean version = FALSE;
	const GOptionEntry entries[] = {
		{ "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
		  "Read the configuration from FILE (default " VR_CONFIG_DEFAULT_PATH
		  ", built-in defaults when it does not exist)",
		  "FILE" },
		{ "connect", 0, 0, G_OPTION_ARG_STRING, &connect_uri,
		  "Connect to libvirt at URI (wins over the config's connect, reloads too)",
		  "URI" },
		{ "control-socket", 0, 0, G_OPTION_ARG_FILENAME, &control_socket,
		  "Serve vreclaimctl on PATH (wins over the config's control-socket, reloads too)",
		  "PATH" },
		{ "libvirt-run-dir", 0, 0, G_OPTION_ARG_FILENAME, &run_dir,
		  "libvirt's QEMU state folder with the NAME.pid files (default: the URI's)",
		  "DIR" },
		{ "qmp", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &qmp_sockets,
		  "Also manage the QEMU (run without libvirt) whose QMP socket is PATH; "
		  "repeatable",
		  "PATH" },
		{ "procfs", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &procfs,
		  "Read the host from this proc tree (tests)", "DIR" },
		{ "sysfs", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &sysfs,
		  "Use this sysfs tree for the host's DAMON (tests)", "DIR" },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log debug messages", NULL },
		{ "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit",
		  NULL },
		{ NULL },
	};
	g_autoptr(GOptionContext)
		ctx = g_option_context_new("- give the host the memory its guests do not use");
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_daemon_config) config = NULL;
	g_autoptr(vr_manager) manager = NULL;
	g_autoptr(GMainLoop) loop = NULL;
	struct vr_manager_paths paths = { 0 };

	setlocale(LC_ALL, "");
	g_log_set_writer_func(vr_log_writer_escape, &log_escape, NULL);
	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
		g_printerr("vreclaimd: %s\n", error->message);
		return VRD_EXIT_USAGE;
	}
	if (argc > 1) {
		g_printerr("vreclaimd: unexpected argument '%s'\n", argv[1]);
		return VRD_EXIT_USAGE;
	}
	if (version) {
		g_print("vreclaimd %s\n", VRD_VERSION);
		return VRD_EXIT_OK;
	}
	if (verbose)
		g_setenv("G_MESSAGES_DEBUG", "all", TRUE);

	if (config_path) {
		config = vr_daemon_config_load(config_path, &error);
	} else if (g_file_test(VR_CONFIG_DEFAULT_PATH, G_FILE_TEST_EXISTS)) {
		config_path = g_strdup(VR_CONFIG_DEFAULT_PATH);
		config = vr_daemon_config_load(config_path, &error);
	} else {
		config = vr_daemon_config_new_default();
	}
	if (!config) {
		g_printerr("vreclaimd: %s\n", error->message);
		return VRD_EXIT_FAILED;
	}
	for (guint i = 0; qmp_sockets && qmp_sockets[i]; i++) {
		if (!*qmp_sockets[i]) {
			g_printerr("vreclaimd: --qmp: expected the path of a QMP socket\n");
			return VRD_EXIT_USAGE;
		}
	}
	raise_nofile(qmp_sockets ? g_strv_length(qmp_sockets) : 0);
	paths.run_dir = run_dir;
	paths.procfs = procfs;
	paths.sysfs = sysfs;
	paths.qmp_sockets = (const char *const *)qmp_sockets;
	paths.connect_uri = connect_uri;
	paths.control_socket = control_socket;

	/* A control client that goes away must not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	loop = g_main_loop_new(NULL, FALSE);
	g_unix_signal_add(SIGTERM, on_stop, loop);
	g_unix_signal_add(SIGINT, on_stop, loop);

	manager = vr_manager_new(g_steal_pointer(&config), config_path, &paths, &error);
	if (!manager || !vr_manager_start(manager, &error)) {
		g_printerr("vreclaimd: %s\n", error->message);
		return VRD_EXIT_FAILED;
	}
	g_unix_signal_add(SIGHUP, on_reload, manager);
	g_message("vreclaimd %s started", VRD_VERSION);
	g_main_loop_run(loop);
	return VRD_EXIT_OK;
}
