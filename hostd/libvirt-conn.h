/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's connection to libvirt: it opens the URI, follows domain events
 * (lifecycle, reboot, metadata changes) and the connection's own death, and
 * reconnects with exponential backoff when libvirtd goes away.
 *
 * libvirt's event loop is GLib's: registered once, it runs in the daemon's
 * own GMainLoop. Every libvirt callback only copies what it got and queues
 * it as an idle source, so the daemon's ops never run inside libvirt's
 * callbacks (where closing the connection would deadlock on libvirt's
 * locks). The libvirt calls made from the main loop (listing domains,
 * reading their XML and metadata) are blocking: libvirt bounds them with its
 * own keepalive.
 */
#pragma once

#include <glib.h>
#include <libvirt/libvirt.h>

#define VR_LIBVIRT_ERROR (vr_libvirt_error_quark())
GQuark vr_libvirt_error_quark(void);

/**
 * enum vr_libvirt_error - error codes of VR_LIBVIRT_ERROR.
 * @VR_LIBVIRT_ERROR_DOWN:	there is no connection to libvirt right now.
 * @VR_LIBVIRT_ERROR_NO_DOMAIN:	the domain does not exist (any more).
 * @VR_LIBVIRT_ERROR_FAILED:	libvirt refused or failed; the message is its own.
 */
enum vr_libvirt_error {
	VR_LIBVIRT_ERROR_DOWN,
	VR_LIBVIRT_ERROR_NO_DOMAIN,
	VR_LIBVIRT_ERROR_FAILED,
};

/* vreclaim's metadata namespace and the key (prefix) it is written with. */
#define VR_LIBVIRT_METADATA_NS	"http://vreclaim.org/xmlns/domain/1"
#define VR_LIBVIRT_METADATA_KEY "vreclaim"

/* The first reconnect attempt comes this long after libvirt went away, in ms;
 * each failed attempt doubles it up to the configured cap. */
#define VR_LIBVIRT_RECONNECT_MIN_MS 500

/**
 * struct vr_libvirt_domain - what vreclaimd reads of one running domain.
 * @name:	its name; owned.
 * @uuid:	its UUID as text.
 * @id:		libvirt's id of the running domain.
 * @persistent:	whether it has a persistent config (metadata is then
 *		written to both the live and the persistent definition).
 * @xml:	the live domain XML (virDomainGetXMLDesc); owned.
 * @metadata:	the vreclaim metadata element, or NULL when the domain has
 *		none; owned.
 */
struct vr_libvirt_domain {
	char *name;
	char uuid[VIR_UUID_STRING_BUFLEN];
	int id;
	gboolean persistent;
	char *xml;
	char *metadata;
};

typedef struct vr_libvirt_domain vr_libvirt_domain;
void vr_libvirt_domain_free(struct vr_libvirt_domain *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_libvirt_domain, vr_libvirt_domain_free)

/**
 * enum vr_libvirt_change - what happened to a domain, as far as vreclaimd
 * cares.
 * @VR_LIBVIRT_STARTED:	 it started, resumed, or came in by migration.
 * @VR_LIBVIRT_STOPPED:	 it shut down, was destroyed, crashed, or migrated away.
 * @VR_LIBVIRT_REBOOTED: the guest rebooted (its agent starts over).
 * @VR_LIBVIRT_METADATA: its metadata changed (virsh metadata --set, ...).
 */
enum vr_libvirt_change {
	VR_LIBVIRT_STARTED,
	VR_LIBVIRT_STOPPED,
	VR_LIBVIRT_REBOOTED,
	VR_LIBVIRT_METADATA,
};

/**
 * struct vr_libvirt_ops - the daemon's side; each runs on the main context.
 * @connected:	  a connection is up (the first or after a reconnect): the
 *		  daemon lists the domains again.
 * @disconnected: the connection is gone (@reason says why); reconnection
 *		  is already scheduled.
 * @domain_changed: a domain event (@uuid, @name).
 */
struct vr_libvirt_ops {
	void (*connected)(gpointer user_data);
	void (*disconnected)(const char *reason, gpointer user_data);
	void (*domain_changed)(const char *uuid, const char *name, enum vr_libvirt_change change,
			       gpointer user_data);
};

struct vr_libvirt;
typedef struct vr_libvirt vr_libvirt;

/**
 * vr_libvirt_new() - prepare a connection to @uri (NULL: qemu:///system)
 * whose reconnect delay doubles up to @reconnect_max_ms. Nothing is opened
 * until vr_libvirt_start(). @ops and @user_data must outlive the object.
 * Return: owned.
 */
struct vr_libvirt *vr_libvirt_new(const char *uri, guint reconnect_max_ms,
				  const struct vr_libvirt_ops *ops, gpointer user_data);

/**
 * vr_libvirt_start() - connect now; on failure log it and retry with
 * backoff. Return: whether the first attempt connected.
 */
gboolean vr_libvirt_start(struct vr_libvirt *lv);

/** vr_libvirt_is_connected() - whether a connection is up. */
gboolean vr_libvirt_is_connected(const struct vr_libvirt *lv);

/** vr_libvirt_uri() - the URI it connects to. */
const char *vr_libvirt_uri(const struct vr_libvirt *lv);

/** vr_libvirt_reconnects() - connections made after the first one. */
guint vr_libvirt_reconnects(const struct vr_libvirt *lv);

/**
 * vr_libvirt_list_running() - every running domain with its live XML and
 * metadata.
 * @out:	a new array of struct vr_libvirt_domain * (owned, with a free
 *		function). A domain that stops while being read is left out.
 */
gboolean vr_libvirt_list_running(struct vr_libvirt *lv, GPtrArray **out, GError **error);

/**
 * vr_libvirt_get_running() - the running domain @uuid, as in
 * vr_libvirt_list_running(). Return: TRUE with *@out NULL when it is not
 * running (or unknown); FALSE with @error when libvirt failed.
 */
gboolean vr_libvirt_get_running(struct vr_libvirt *lv, const char *uuid,
				struct vr_libvirt_domain **out, GError **error);

/**
 * vr_libvirt_set_metadata() - write @metadata (our element, as
 * vr_domain_tuning_to_xml() makes it) into domain @uuid's live definition,
 * and into its persistent one when it has one.
 */
gboolean vr_libvirt_set_metadata(struct vr_libvirt *lv, const char *uuid, const char *metadata,
				 GError **error);

/**
 * vr_libvirt_lookup() - a new reference to domain @uuid, for QMP through
 * libvirt (virDomainFree() it). Return: NULL with @error when unknown or down.
 */
virDomainPtr vr_libvirt_lookup(struct vr_libvirt *lv, const char *uuid, GError **error);

/**
 * vr_libvirt_qemu_pid() - the pid of the QEMU process of running domain
 * @name, from libvirt's pid file under @run_dir (the QEMU driver's state
 * folder, e.g. /run/libvirt/qemu), checked against /proc/PID/cmdline under
 * @procfs (its "-name guest=NAME" must match: never a stale pid).
 */
gboolean vr_libvirt_qemu_pid(const char *run_dir, const char *procfs, const char *name, pid_t *pid,
			     GError **error);

/**
 * vr_libvirt_run_dir() - the QEMU driver's state folder for @uri:
 * /run/libvirt/qemu for qemu:///system, $XDG_RUNTIME_DIR/libvirt/qemu/run
 * for qemu:///session, NULL for other drivers. Return: owned.
 */
char *vr_libvirt_run_dir(const char *uri);

void vr_libvirt_free(struct vr_libvirt *lv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_libvirt, vr_libvirt_free)
