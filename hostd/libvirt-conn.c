/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's libvirt connection: events from libvirt's loop thread handed
 * to the main context, reconnection with backoff, and the reads of running
 * domains (see libvirt-conn.h).
 */
#define _GNU_SOURCE
#include "libvirt-conn.h"

#include <errno.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vreclaim-libvirt-error-quark, vr_libvirt_error)
/* clang-format on */

/* libvirt's keepalive: a ping after this many seconds of silence, the
 * connection declared dead after this many unanswered ones (a hung libvirtd
 * is noticed within about 15 s). */
#define VR_LIBVIRT_KEEPALIVE_INTERVAL_S 5
#define VR_LIBVIRT_KEEPALIVE_COUNT	3

/* ---- libvirt's event loop ----------------------------------------------- */

/*
 * libvirt's default event implementation (libvirt >= 6.1) is built on GLib
 * and runs in the thread-default GMainContext: registered once, before the
 * first connection, its watches and timers are dispatched by the daemon's
 * own GMainLoop, on the main thread. (A thread of ours calling
 * virEventRunDefaultImpl() would iterate the daemon's context concurrently
 * with the main loop.)
 */
static GMutex loop_lock;
static gboolean loop_registered;

static void quiet_libvirt_error(void *opaque, virErrorPtr err)
{
	(void)opaque;
	/* Errors are read with virGetLastErrorMessage() where they happen;
	 * libvirt's default handler would print them on stderr as well. */
	g_debug("libvirt: %s", err && err->message ? err->message : "(no message)");
}

static void loop_register(void)
{
	g_mutex_lock(&loop_lock);
	if (!loop_registered) {
		virSetErrorFunc(NULL, quiet_libvirt_error);
		if (virEventRegisterDefaultImpl() < 0)
			g_warning("cannot register libvirt's event loop: %s",
				  virGetLastErrorMessage());
		loop_registered = TRUE;
	}
	g_mutex_unlock(&loop_lock);
}

/* ---- the object ----------------------------------------------------------- */

/*
 * What libvirt's callbacks hold: a reference-counted link to the object,
 * cleared (on the main context) when the object is freed, so a callback
 * queued before that finds nothing to call.
 */
struct vr_libvirt_link {
	struct vr_libvirt *lv; /* main context only */
	GMainContext *ctx;
};

struct vr_libvirt {
	char *uri;
	guint reconnect_max_ms;
	const struct vr_libvirt_ops *ops;
	gpointer user_data;
	struct vr_libvirt_link *link;

	virConnectPtr conn;
	int cb_lifecycle;
	int cb_reboot;
	int cb_metadata;
	gboolean close_cb_registered;

	guint reconnect_source;
	guint reconnect_delay_ms;
	guint nr_connects;
};

static struct vr_libvirt_link *link_ref(struct vr_libvirt_link *link)
{
	return g_atomic_rc_box_acquire(link);
}

static void link_clear(struct vr_libvirt_link *link)
{
	g_main_context_unref(link->ctx);
}

static void link_unref(void *link)
{
	g_atomic_rc_box_release_full(link, (GDestroyNotify)link_clear);
}

/* An event on its way from libvirt's thread to the main context. */
struct lv_event {
	struct vr_libvirt_link *link;
	gboolean closed;
	char *reason;
	char uuid[VIR_UUID_STRING_BUFLEN];
	char *name;
	enum vr_libvirt_change change;
};

static void lv_event_free(gpointer data)
{
	struct lv_event *ev = data;

	link_unref(ev->link);
	g_free(ev->reason);
	g_free(ev->name);
	g_free(ev);
}

static void lv_disconnect(struct vr_libvirt *lv);
static void lv_schedule_reconnect(struct vr_libvirt *lv);

static gboolean lv_event_dispatch(gpointer data)
{
	struct lv_event *ev = data;
	struct vr_libvirt *lv = ev->link->lv;

	if (!lv)
		return G_SOURCE_REMOVE;
	if (ev->closed) {
		if (!lv->conn)
			return G_SOURCE_REMOVE;
		g_warning("lost the connection to libvirt (%s): %s", lv->uri, ev->reason);
		lv_disconnect(lv);
		lv_schedule_reconnect(lv);
		if (lv->ops->disconnected)
			lv->ops->disconnected(ev->reason, lv->user_data);
		return G_SOURCE_REMOVE;
	}
	if (lv->ops->domain_changed)
		lv->ops->domain_changed(ev->uuid, ev->name, ev->change, lv->user_data);
	return G_SOURCE_REMOVE;
}

static void lv_post(struct vr_libvirt_link *link, struct lv_event *ev)
{
	/* Always through an idle source, never at once (nor with
	 * g_main_context_invoke(), which may run it at once): the daemon's
	 * reaction must not run inside libvirt's callback, where closing the
	 * connection deadlocks on libvirt's own locks. */
	g_autoptr(GSource) src = g_idle_source_new();

	ev->link = link_ref(link);
	g_source_set_priority(src, G_PRIORITY_DEFAULT);
	g_source_set_callback(src, lv_event_dispatch, ev, lv_event_free);
	g_source_attach(src, link->ctx);
}

static void lv_post_domain(void *opaque, virDomainPtr dom, enum vr_libvirt_change change)
{
	struct lv_event *ev = g_new0(struct lv_event, 1);

	if (virDomainGetUUIDString(dom, ev->uuid) < 0) {
		g_free(ev);
		return;
	}
	ev->name = g_strdup(virDomainGetName(dom));
	ev->change = change;
	lv_post(opaque, ev);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
	(void)conn;
	(void)detail;
	switch (event) {
	case VIR_DOMAIN_EVENT_STARTED:
	case VIR_DOMAIN_EVENT_RESUMED:
		lv_post_domain(opaque, dom, VR_LIBVIRT_STARTED);
		break;
	case VIR_DOMAIN_EVENT_STOPPED:
	case VIR_DOMAIN_EVENT_CRASHED:
		lv_post_domain(opaque, dom, VR_LIBVIRT_STOPPED);
		break;
	default:
		break;
	}
	return 0;
}

static int on_reboot(virConnectPtr conn, virDomainPtr dom, void *opaque)
{
	(void)conn;
	lv_post_domain(opaque, dom, VR_LIBVIRT_REBOOTED);
	return 0;
}

static int on_metadata(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
		       void *opaque)
{
	(void)conn;
	if (type == VIR_DOMAIN_METADATA_ELEMENT && g_strcmp0(nsuri, VR_LIBVIRT_METADATA_NS) == 0)
		lv_post_domain(opaque, dom, VR_LIBVIRT_METADATA);
	return 0;
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	struct lv_event *ev = g_new0(struct lv_event, 1);

	(void)conn;
	ev->closed = TRUE;
	switch (reason) {
	case VIR_CONNECT_CLOSE_REASON_EOF:
		ev->reason = g_strdup("libvirtd closed the connection");
		break;
	case VIR_CONNECT_CLOSE_REASON_KEEPALIVE:
		ev->reason = g_strdup("libvirtd stopped answering keepalives");
		break;
	case VIR_CONNECT_CLOSE_REASON_CLIENT:
		ev->reason = g_strdup("the connection was closed");
		break;
	default:
		ev->reason = g_strdup("the connection broke");
		break;
	}
	lv_post(opaque, ev);
}

struct vr_libvirt *vr_libvirt_new(const char *uri, guint reconnect_max_ms,
				  const struct vr_libvirt_ops *ops, gpointer user_data)
{
	struct vr_libvirt *lv = g_new0(struct vr_libvirt, 1);

	lv->uri = g_strdup(uri ? uri : "qemu:///system");
	lv->reconnect_max_ms = MAX(reconnect_max_ms, VR_LIBVIRT_RECONNECT_MIN_MS);
	lv->reconnect_delay_ms = VR_LIBVIRT_RECONNECT_MIN_MS;
	lv->ops = ops;
	lv->user_data = user_data;
	lv->cb_lifecycle = lv->cb_reboot = lv->cb_metadata = -1;
	lv->link = g_atomic_rc_box_new0(struct vr_libvirt_link);
	lv->link->lv = lv;
	lv->link->ctx = g_main_context_ref_thread_default();
	loop_register();
	return lv;
}

static int lv_register(struct vr_libvirt *lv, int id, virConnectDomainEventGenericCallback cb)
{
	int ret = virConnectDomainEventRegisterAny(lv->conn, NULL, id, cb, link_ref(lv->link),
						   link_unref);
	if (ret < 0) {
		g_warning("cannot follow libvirt's domain events (%d) on %s: %s", id, lv->uri,
			  virGetLastErrorMessage());
		link_unref(lv->link);
	}
	return ret;
}

static void lv_disconnect(struct vr_libvirt *lv)
{
	if (!lv->conn)
		return;
	int *ids[] = { &lv->cb_lifecycle, &lv->cb_reboot, &lv->cb_metadata };
	for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
		if (*ids[i] >= 0)
			virConnectDomainEventDeregisterAny(lv->conn, *ids[i]);
		*ids[i] = -1;
	}
	if (lv->close_cb_registered)
		virConnectUnregisterCloseCallback(lv->conn, on_close);
	lv->close_cb_registered = FALSE;
	virConnectClose(g_steal_pointer(&lv->conn));
}

static gboolean lv_connect(struct vr_libvirt *lv)
{
	lv->conn = virConnectOpen(lv->uri);
	if (!lv->conn) {
		g_message("cannot connect to libvirt at %s: %s (next attempt in %u ms)", lv->uri,
			  virGetLastErrorMessage(), lv->reconnect_delay_ms);
		return FALSE;
	}
	if (virConnectSetKeepAlive(lv->conn, VR_LIBVIRT_KEEPALIVE_INTERVAL_S,
				   VR_LIBVIRT_KEEPALIVE_COUNT) < 0)
		g_debug("libvirt at %s does not do keepalive: %s", lv->uri,
			virGetLastErrorMessage());
	/* The link is lent, not given (no free function): some drivers (test)
	 * never call it; lv_disconnect() unregisters before the link goes. */
	if (virConnectRegisterCloseCallback(lv->conn, on_close, lv->link, NULL) < 0) {
		g_debug("libvirt at %s has no close callback: %s", lv->uri,
			virGetLastErrorMessage());
	} else {
		lv->close_cb_registered = TRUE;
	}
	lv->cb_lifecycle = lv_register(lv, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
				       VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle));
	lv->cb_reboot =
		lv_register(lv, VIR_DOMAIN_EVENT_ID_REBOOT, VIR_DOMAIN_EVENT_CALLBACK(on_reboot));
	lv->cb_metadata = lv_register(lv, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
				      VIR_DOMAIN_EVENT_CALLBACK(on_metadata));
	g_message("connected to libvirt at %s%s", lv->uri, lv->nr_connects > 0 ? " again" : "");
	lv->nr_connects++;
	lv->reconnect_delay_ms = VR_LIBVIRT_RECONNECT_MIN_MS;
	return TRUE;
}

static gboolean lv_reconnect_cb(gpointer data)
{
	struct vr_libvirt *lv = data;

	lv->reconnect_source = 0;
	if (lv_connect(lv)) {
		if (lv->ops->connected)
			lv->ops->connected(lv->user_data);
		return G_SOURCE_REMOVE;
	}
	lv->reconnect_delay_ms = MIN(lv->reconnect_delay_ms * 2, lv->reconnect_max_ms);
	lv_schedule_reconnect(lv);
	return G_SOURCE_REMOVE;
}

static void lv_schedule_reconnect(struct vr_libvirt *lv)
{
	if (lv->reconnect_source)
		return;
	lv->reconnect_source = g_timeout_add(lv->reconnect_delay_ms, lv_reconnect_cb, lv);
}

gboolean vr_libvirt_start(struct vr_libvirt *lv)
{
	if (lv->conn)
		return TRUE;
	if (lv_connect(lv)) {
		if (lv->ops->connected)
			lv->ops->connected(lv->user_data);
		return TRUE;
	}
	lv_schedule_reconnect(lv);
	return FALSE;
}

gboolean vr_libvirt_is_connected(const struct vr_libvirt *lv)
{
	return lv->conn != NULL;
}

const char *vr_libvirt_uri(const struct vr_libvirt *lv)
{
	return lv->uri;
}

guint vr_libvirt_reconnects(const struct vr_libvirt *lv)
{
	return lv->nr_connects > 0 ? lv->nr_connects - 1 : 0;
}

void vr_libvirt_free(struct vr_libvirt *lv)
{
	if (!lv)
		return;
	if (lv->reconnect_source)
		g_source_remove(lv->reconnect_source);
	lv_disconnect(lv);
	lv->link->lv = NULL;
	link_unref(lv->link);
	g_free(lv->uri);
	g_free(lv);
}

/* ---- reading domains ------------------------------------------------------ */

void vr_libvirt_domain_free(struct vr_libvirt_domain *d)
{
	if (!d)
		return;
	g_free(d->name);
	g_free(d->xml);
	g_free(d->metadata);
	g_free(d);
}

static gboolean lv_check_up(struct vr_libvirt *lv, GError **error)
{
	if (lv->conn)
		return TRUE;
	g_set_error(error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_DOWN,
		    "not connected to libvirt at %s", lv->uri);
	return FALSE;
}

static void lv_set_error(GError **error, const char *what)
{
	virErrorPtr err = virGetLastError();
	int code = err ? err->code : VIR_ERR_INTERNAL_ERROR;

	g_set_error(error, VR_LIBVIRT_ERROR,
		    code == VIR_ERR_NO_DOMAIN ? VR_LIBVIRT_ERROR_NO_DOMAIN :
						VR_LIBVIRT_ERROR_FAILED,
		    "%s: %s", what, virGetLastErrorMessage());
}

/* Reads @dom; NULL with @error when it stopped meanwhile or libvirt failed. */
static struct vr_libvirt_domain *lv_read_domain(virDomainPtr dom, GError **error)
{
	g_autoptr(vr_libvirt_domain) d = g_new0(struct vr_libvirt_domain, 1);
	const char *name = virDomainGetName(dom);

	d->name = g_strdup(name ? name : "");
	if (virDomainGetUUIDString(dom, d->uuid) < 0) {
		lv_set_error(error, "cannot read a domain's UUID");
		return NULL;
	}
	d->id = virDomainGetID(dom);
	d->persistent = virDomainIsPersistent(dom) == 1;
	d->xml = virDomainGetXMLDesc(dom, 0);
	if (!d->xml) {
		g_autofree char *what =
			g_strdup_printf("cannot read the XML of domain '%s'", d->name);
		lv_set_error(error, what);
		return NULL;
	}
	d->metadata = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VR_LIBVIRT_METADATA_NS,
					   VIR_DOMAIN_AFFECT_LIVE);
	if (!d->metadata) {
		virErrorPtr err = virGetLastError();
		if (!err || err->code != VIR_ERR_NO_DOMAIN_METADATA) {
			g_autofree char *what =
				g_strdup_printf("cannot read the metadata of domain '%s'", d->name);
			lv_set_error(error, what);
			return NULL;
		}
	}
	return g_steal_pointer(&d);
}

gboolean vr_libvirt_list_running(struct vr_libvirt *lv, GPtrArray **out, GError **error)
{
	virDomainPtr *doms = NULL;
	g_autoptr(GPtrArray)
		list = g_ptr_array_new_with_free_func((GDestroyNotify)vr_libvirt_domain_free);

	if (!lv_check_up(lv, error))
		return FALSE;
	int n = virConnectListAllDomains(lv->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		lv_set_error(error, "cannot list the running domains");
		return FALSE;
	}
	for (int i = 0; i < n; i++) {
		g_autoptr(GError) local = NULL;
		struct vr_libvirt_domain *d = lv_read_domain(doms[i], &local);
		if (d)
			g_ptr_array_add(list, d);
		else if (virDomainIsActive(doms[i]) == 1)
			g_warning("%s", local->message);
		virDomainFree(doms[i]);
	}
	free(doms);
	*out = g_steal_pointer(&list);
	return TRUE;
}

virDomainPtr vr_libvirt_lookup(struct vr_libvirt *lv, const char *uuid, GError **error)
{
	if (!lv_check_up(lv, error))
		return NULL;
	virDomainPtr dom = virDomainLookupByUUIDString(lv->conn, uuid);
	if (!dom) {
		g_autofree char *what = g_strdup_printf("no domain with UUID %s", uuid);
		lv_set_error(error, what);
	}
	return dom;
}

gboolean vr_libvirt_get_running(struct vr_libvirt *lv, const char *uuid,
				struct vr_libvirt_domain **out, GError **error)
{
	g_autoptr(GError) local = NULL;

	*out = NULL;
	virDomainPtr dom = vr_libvirt_lookup(lv, uuid, &local);
	if (!dom) {
		if (g_error_matches(local, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_NO_DOMAIN))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (virDomainIsActive(dom) == 1) {
		*out = lv_read_domain(dom, &local);
		if (!*out && virDomainIsActive(dom) == 1) {
			virDomainFree(dom);
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	virDomainFree(dom);
	return TRUE;
}

gboolean vr_libvirt_set_metadata(struct vr_libvirt *lv, const char *uuid, const char *metadata,
				 GError **error)
{
	virDomainPtr dom = vr_libvirt_lookup(lv, uuid, error);
	if (!dom)
		return FALSE;
	unsigned int flags = VIR_DOMAIN_AFFECT_LIVE;
	if (virDomainIsPersistent(dom) == 1)
		flags |= VIR_DOMAIN_AFFECT_CONFIG;
	int ret = virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, metadata,
				       VR_LIBVIRT_METADATA_KEY, VR_LIBVIRT_METADATA_NS, flags);
	if (ret < 0) {
		g_autofree char *what = g_strdup_printf("cannot write the metadata of domain '%s'",
							virDomainGetName(dom));
		lv_set_error(error, what);
	}
	virDomainFree(dom);
	return ret == 0;
}

/* ---- the QEMU process ----------------------------------------------------- */

char *vr_libvirt_run_dir(const char *uri)
{
	if (!uri || g_str_has_prefix(uri, "qemu:///system") ||
	    g_str_has_prefix(uri, "qemu+unix:///system"))
		return g_strdup("/run/libvirt/qemu");
	if (g_str_has_prefix(uri, "qemu:///session") ||
	    g_str_has_prefix(uri, "qemu+unix:///session"))
		return g_build_filename(g_get_user_runtime_dir(), "libvirt", "qemu", "run", NULL);
	return NULL;
}

/* Whether the NUL-separated @cmdline names guest @name ("-name guest=NAME,..."). */
static gboolean cmdline_names_guest(const char *cmdline, gsize len, const char *name)
{
	g_autofree char *want = g_strdup_printf("guest=%s", name);
	gsize want_len = strlen(want);
	gboolean after_name = FALSE;

	for (gsize off = 0; off < len;) {
		const char *arg = cmdline + off;
		gsize arg_len = strnlen(arg, len - off);
		if (after_name) {
			/* libvirt doubles commas inside the name: compare up to the
			 * first single comma. */
			if (arg_len >= want_len && strncmp(arg, want, want_len) == 0 &&
			    (arg_len == want_len || arg[want_len] == ','))
				return TRUE;
			after_name = FALSE;
		}
		if (strcmp(arg, "-name") == 0)
			after_name = TRUE;
		off += arg_len + 1;
	}
	return FALSE;
}

gboolean vr_libvirt_qemu_pid(const char *run_dir, const char *procfs, const char *name, pid_t *pid,
			     GError **error)
{
	g_autofree char *pid_path = NULL;
	g_autofree char *text = NULL;
	g_autofree char *cmdline_path = NULL;
	g_autofree char *cmdline = NULL;
	gsize len = 0;
	char *end = NULL;

	pid_path = g_strdup_printf("%s/%s.pid", run_dir, name);
	if (!g_file_get_contents(pid_path, &text, &len, error)) {
		g_prefix_error(error, "cannot find the QEMU process of domain '%s': ", name);
		return FALSE;
	}
	errno = 0;
	gint64 value = g_ascii_strtoll(g_strstrip(text), &end, 10);
	if (errno || end == text || *end || value <= 1 || value > G_MAXINT32) {
		g_set_error(error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_FAILED,
			    "%s: expected a process id, got '%.32s'", pid_path, text);
		return FALSE;
	}
	cmdline_path = g_strdup_printf("%s/%" G_GINT64_FORMAT "/cmdline", procfs, value);
	if (!g_file_get_contents(cmdline_path, &cmdline, &len, error)) {
		g_prefix_error(error,
			       "the QEMU process %" G_GINT64_FORMAT " of domain '%s' is gone: ",
			       value, name);
		return FALSE;
	}
	if (!cmdline_names_guest(cmdline, len, name)) {
		g_set_error(error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_FAILED,
			    "process %" G_GINT64_FORMAT
			    " (from %s) is not the QEMU of domain '%s': a stale pid file",
			    value, pid_path, name);
		return FALSE;
	}
	*pid = (pid_t)value;
	return TRUE;
}
