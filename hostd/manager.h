/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's manager: the domains it knows, and its tick, in the shape of
 * systemd-oomd's: acquire a snapshot (host memory and pressure, each QEMU's
 * resident size, the agents' access pictures) -> decide with pure policy
 * (host watermarks, the fleet quota's shares: common/host-watermarks.h,
 * common/fleet-quota.h) -> act (each agent's quota, pause and resume).
 *
 * Everything runs on the thread-default GMainContext; libvirt's events, the
 * agents' replies and the control socket's requests arrive there too.
 */
#pragma once

#include <glib.h>

#include "config.h"

struct vr_manager;
typedef struct vr_manager vr_manager;

/**
 * struct vr_manager_paths - where the manager reads the host, injectable for
 * tests.
 * @procfs:	the proc mount ("/proc").
 * @sysfs:	the sysfs mount ("/sys"), for the host-damon access source.
 * @run_dir:	libvirt's QEMU state folder with NAME.pid files; NULL: the
 *		one of the connection's URI (vr_libvirt_run_dir()).
 * @qmp_sockets: QMP sockets of QEMU processes run without libvirt
 *		(--qmp), NULL-terminated; NULL for none. Copied.
 * @connect_uri, @control_socket: the command line's values of the config's
 *		keys "connect" and "control-socket" (--connect,
 *		--control-socket), which win over the file's at start and at
 *		every reload; NULL: the file's. Copied.
 */
struct vr_manager_paths {
	const char *procfs;
	const char *sysfs;
	const char *run_dir;
	const char *const *qmp_sockets;
	const char *connect_uri;
	const char *control_socket;
};

#define VR_MANAGER_ERROR (vr_manager_error_quark())
GQuark vr_manager_error_quark(void);

/**
 * enum vr_manager_error - errors of the manager's own (VR_MANAGER_ERROR).
 * @VR_MANAGER_ERROR_UNSUPPORTED: a --qmp QEMU cannot be taken as a domain
 *				  (the message says why). A domain's own errors
 *				  and its actions' are VR_DOMAIN_ERROR's
 *				  (domain.h).
 */
enum vr_manager_error {
	VR_MANAGER_ERROR_UNSUPPORTED,
};

/**
 * vr_manager_new() - a manager running @config (ownership taken), which was
 * loaded from @config_path (NULL: built-in defaults; SIGHUP reloads it).
 * Return: owned, or NULL with @error.
 */
struct vr_manager *vr_manager_new(struct vr_daemon_config *config, const char *config_path,
				  const struct vr_manager_paths *paths, GError **error);

/**
 * vr_manager_start() - open the control socket (and the metrics listener),
 * connect to libvirt (retrying in the background when it is down) and start
 * ticking. Return: FALSE with @error when the control socket or the metrics
 * listener cannot be opened.
 */
gboolean vr_manager_start(struct vr_manager *m, GError **error);

/**
 * vr_manager_reload() - read the config file again and apply it as a whole;
 * on any error nothing changes (the error says why).
 */
gboolean vr_manager_reload(struct vr_manager *m, GError **error);

void vr_manager_free(struct vr_manager *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_manager, vr_manager_free)
