/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's connection to libvirt: it opens the URI, follows domain events
 * (lifecycle, reboot, metadata changes) and the connection's own death, and
 * reconnects with exponential backoff when libvirtd goes away.
 *
 * Nothing here blocks the daemon's main loop. Every libvirt call that may
 * talk to libvirtd (opening and closing the connection, registering for
 * events, listing domains, reading their XML and metadata, writing
 * metadata, looking a domain up) runs on libvirt's own thread
 * (libvirt-worker.h), which owns the connection; the requests below return
 * at once and their answer comes later on the main context, a TIMEOUT
 * error when libvirtd stays silent for VR_LIBVIRT_REQUEST_TIMEOUT_MS
 * (libvirt-worker.h, "Deadlines"). libvirt is probed every VR_LIBVIRT_HEARTBEAT_MS (a
 * call to libvirtd and back), so that a libvirtd that stops answering is
 * seen even when the daemon has nothing to ask. A request or probe past
 * its deadline marks the connection *degraded*
 * (vr_libvirt_degraded_reason()) and libvirt is probed every
 * VR_LIBVIRT_PROBE_INTERVAL_MS until it answers again; then the daemon
 * hears connected() again and lists the domains anew.
 *
 * libvirt's event loop is GLib's: registered once, its watches and timers
 * are attached to the global default GMainContext, and so run in the
 * daemon's own GMainLoop. They never wait for libvirtd (reading and
 * writing the socket is non-blocking, keepalive pings are queued), and
 * every callback of ours only copies what it got and queues it as an idle
 * source, so the daemon's ops never run inside libvirt's callbacks (where
 * closing the connection would deadlock on libvirt's locks).
 */
#pragma once

#include <glib.h>
#include <libvirt/libvirt.h>

#include "libvirt/libvirt-worker.h"

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
/** vr_libvirt_domain_copy() - a deep copy of @d. Return: owned. */
struct vr_libvirt_domain *vr_libvirt_domain_copy(const struct vr_libvirt_domain *d);
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
 * @connected:	  a connection is up (the first, after a reconnect, or
 *		  after libvirt was degraded and answers again): the daemon
 *		  lists the domains again.
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

/* How long a request may wait while libvirt answers nothing on libvirt's
 * thread, ms (from the request, or from libvirt's last answer): one call
 * takes milliseconds; one that takes seconds is stuck (a stopped or
 * overloaded libvirtd). */
#define VR_LIBVIRT_REQUEST_TIMEOUT_MS 5000

/* libvirt is asked this often whether it answers, ms (a cheap call to
 * libvirtd and back, at most one outstanding): a libvirtd that stops shows
 * degraded within this plus VR_LIBVIRT_REQUEST_TIMEOUT_MS. */
#define VR_LIBVIRT_HEARTBEAT_MS 5000

/* While degraded, libvirt is asked this often whether it answers again, ms. */
#define VR_LIBVIRT_PROBE_INTERVAL_MS 1000

struct vr_libvirt;
typedef struct vr_libvirt vr_libvirt;

/**
 * vr_libvirt_hook_fn - for tests: runs on libvirt's thread before each
 * request's libvirt calls (it may block, as a stopped libvirtd would).
 * @what:	the request ("connect", "list-domains", ...); static.
 */
typedef void (*vr_libvirt_hook_fn)(const char *what, gpointer hook_data);

/**
 * vr_libvirt_new() - prepare a connection to @uri (NULL: qemu:///system)
 * whose reconnect delay doubles up to @reconnect_max_ms, with libvirt's
 * thread started and nothing opened until vr_libvirt_start(). @ops and
 * @user_data must outlive the object.
 * Return: owned.
 */
struct vr_libvirt *vr_libvirt_new(const char *uri, guint reconnect_max_ms,
				  const struct vr_libvirt_ops *ops, gpointer user_data);

/**
 * vr_libvirt_new_full() - vr_libvirt_new() with each request's deadline
 * @timeout_ms instead of VR_LIBVIRT_REQUEST_TIMEOUT_MS, and @hook (may be
 * NULL) run with @hook_data before each request on libvirt's thread: for
 * tests. @hook_data must outlive the object.
 */
struct vr_libvirt *vr_libvirt_new_full(const char *uri, guint reconnect_max_ms, guint timeout_ms,
				       vr_libvirt_hook_fn hook, gpointer hook_data,
				       const struct vr_libvirt_ops *ops, gpointer user_data);

/**
 * vr_libvirt_start() - connect, on libvirt's thread: connected() follows
 * when it did; on failure it is logged and tried again with backoff.
 */
void vr_libvirt_start(struct vr_libvirt *lv);

/** vr_libvirt_is_connected() - whether a connection is up. */
gboolean vr_libvirt_is_connected(const struct vr_libvirt *lv);

/**
 * vr_libvirt_degraded_reason() - why the connection is degraded ("libvirt
 * did not answer list-domains within 5 s"), NULL when libvirt answers in
 * time. Borrowed: valid until the next main-loop iteration.
 */
const char *vr_libvirt_degraded_reason(const struct vr_libvirt *lv);

/** vr_libvirt_stalls() - how many times libvirt stopped answering in time. */
guint64 vr_libvirt_stalls(const struct vr_libvirt *lv);

/** vr_libvirt_timeouts() - requests that got no answer within their deadline. */
guint64 vr_libvirt_timeouts(const struct vr_libvirt *lv);

/** vr_libvirt_uri() - the URI it connects to. */
const char *vr_libvirt_uri(const struct vr_libvirt *lv);

/** vr_libvirt_reconnects() - connections made after the first one. */
guint vr_libvirt_reconnects(const struct vr_libvirt *lv);

/*
 * The requests. Each returns at once; its callback runs later on the main
 * context, exactly once, unless the object is freed first. Either way
 * @destroy (may be NULL) is called on @user_data on the main context after
 * the callback, or in vr_libvirt_free(). Results are borrowed: valid
 * during the callback. @error is NULL on success; VR_LIBVIRT_ERROR_DOWN
 * when there is no connection, VR_LIBVIRT_WORKER_ERROR_TIMEOUT when libvirt
 * did not answer in time.
 */

/**
 * vr_libvirt_list_fn - the answer to vr_libvirt_list_running().
 * @domains:	struct vr_libvirt_domain *, every running domain with its
 *		live XML and metadata (a domain that stops while being read is
 *		left out); NULL with @error.
 */
typedef void (*vr_libvirt_list_fn)(GPtrArray *domains, const GError *error, gpointer user_data);

/**
 * vr_libvirt_domain_fn - the answer to vr_libvirt_get_running().
 * @domain:	the domain as in a listing, or NULL when it is not running
 *		(or unknown), or with @error.
 */
typedef void (*vr_libvirt_domain_fn)(const struct vr_libvirt_domain *domain, const GError *error,
				     gpointer user_data);

/** vr_libvirt_result_fn - the answer to vr_libvirt_set_metadata(). */
typedef void (*vr_libvirt_result_fn)(const GError *error, gpointer user_data);

/**
 * vr_libvirt_lookup_fn - the answer to vr_libvirt_lookup().
 * @dom:	the domain (take a reference with virDomainRef() to keep it),
 *		NULL with @error when it is unknown.
 */
typedef void (*vr_libvirt_lookup_fn)(virDomainPtr dom, const GError *error, gpointer user_data);

/** vr_libvirt_list_running() - every running domain with its XML and metadata. */
void vr_libvirt_list_running(struct vr_libvirt *lv, vr_libvirt_list_fn done, gpointer user_data,
			     GDestroyNotify destroy);

/** vr_libvirt_get_running() - the running domain @uuid (copied), as in a listing. */
void vr_libvirt_get_running(struct vr_libvirt *lv, const char *uuid, vr_libvirt_domain_fn done,
			    gpointer user_data, GDestroyNotify destroy);

/**
 * vr_libvirt_set_metadata() - write @metadata (our element, as
 * vr_domain_tuning_to_xml() makes it; copied) into domain @uuid's live
 * definition, and into its persistent one when it has one. A TIMEOUT error
 * means libvirt may still write it.
 */
void vr_libvirt_set_metadata(struct vr_libvirt *lv, const char *uuid, const char *metadata,
			     vr_libvirt_result_fn done, gpointer user_data, GDestroyNotify destroy);

/**
 * vr_libvirt_lookup() - domain @uuid, for QMP through libvirt (the monitor
 * takes its own reference).
 */
void vr_libvirt_lookup(struct vr_libvirt *lv, const char *uuid, vr_libvirt_lookup_fn done,
		       gpointer user_data, GDestroyNotify destroy);

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

/**
 * vr_libvirt_free() - close the connection on libvirt's thread and stop it
 * (NULL is fine); no callback runs from here on, the requests' @destroy
 * run here. Waits for the thread up to VR_LIBVIRT_WORKER_JOIN_MS: a thread
 * blocked in a libvirtd that never answers is left to finish on its own.
 */
void vr_libvirt_free(struct vr_libvirt *lv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_libvirt, vr_libvirt_free)
