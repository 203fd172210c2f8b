/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's libvirt connection, libvirt's thread's half (see
 * libvirt-conn.h and libvirt-conn-private.h): libvirt's event loop, the
 * connection (struct lv_thread) and its callbacks, which post libvirt's
 * events to the main context, and the jobs the main context's half
 * (libvirt-conn.c) submits to libvirt-worker.c's thread. Everything here
 * but the loop's registration runs on libvirt's thread or in libvirt's
 * callbacks.
 */
#define _GNU_SOURCE
#include "libvirt/libvirt-conn-private.h"

#include <libvirt/virterror.h>
#include <stdlib.h>

/* clang-format off */
G_DEFINE_QUARK(vreclaim-libvirt-error-quark, vr_libvirt_error)
/* clang-format on */

/* ---- the domains' records ------------------------------------------------- */

struct vr_libvirt_domain *vr_libvirt_domain_copy(const struct vr_libvirt_domain *d)
{
	struct vr_libvirt_domain *c = g_new0(struct vr_libvirt_domain, 1);

	*c = *d;
	c->name = g_strdup(d->name);
	c->xml = g_strdup(d->xml);
	c->metadata = g_strdup(d->metadata);
	return c;
}

void vr_libvirt_domain_free(struct vr_libvirt_domain *d)
{
	if (!d)
		return;
	g_free(d->name);
	g_free(d->xml);
	g_free(d->metadata);
	g_free(d);
}

/* libvirt's keepalive: a ping after this many seconds of silence, the
 * connection declared dead after this many unanswered ones (a hung libvirtd
 * is noticed within about 20 s; requests time out well before that). */
#define VR_LIBVIRT_KEEPALIVE_INTERVAL_S 5
#define VR_LIBVIRT_KEEPALIVE_COUNT	3

/* ---- libvirt's event loop ----------------------------------------------- */

/*
 * libvirt's default event implementation (libvirt >= 6.1) is built on GLib
 * and attaches its watches and timers to the global default GMainContext:
 * registered once, before the first connection, they are dispatched by the
 * daemon's own GMainLoop, on the main thread. None of them waits for
 * libvirtd: the socket is read and written without blocking, and a call in
 * progress on libvirt's thread does its own I/O.
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

void vr_libvirt_loop_register(void)
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

/**
 * struct lv_thread - libvirt's thread's half: the connection. Touched only
 * by the jobs (on libvirt's thread), and freed there.
 * @uri:	what it connects to.
 * @link:	a reference, lent to libvirt's callbacks.
 * @hook:	for tests: run before each job's libvirt calls.
 * @hook_data:	for @hook.
 * @conn:	the connection, NULL when none is open.
 * @cb_lifecycle, @cb_reboot, @cb_metadata: libvirt's ids of our domain
 *		event callbacks, -1 when not registered.
 * @close_cb_registered: whether our close callback is.
 */
struct lv_thread {
	char *uri;
	struct vr_libvirt_link *link;
	vr_libvirt_hook_fn hook;
	gpointer hook_data;
	virConnectPtr conn;
	int cb_lifecycle;
	int cb_reboot;
	int cb_metadata;
	gboolean close_cb_registered;
};

/* ---- events: libvirt's callbacks -> the main context ---------------------- */

static void lv_event_free(gpointer data)
{
	struct lv_event *ev = data;

	link_unref(ev->link);
	g_free(ev->reason);
	g_free(ev->name);
	g_free(ev);
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
	g_source_set_callback(src, link->dispatch, ev, lv_event_free);
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

/* ---- libvirt's thread: the connection ------------------------------------ */

static void lv_set_error(GError **error, const char *what)
{
	virErrorPtr err = virGetLastError();
	int code = err ? err->code : VIR_ERR_INTERNAL_ERROR;

	g_set_error(error, VR_LIBVIRT_ERROR,
		    code == VIR_ERR_NO_DOMAIN ? VR_LIBVIRT_ERROR_NO_DOMAIN :
						VR_LIBVIRT_ERROR_FAILED,
		    "%s: %s", what, virGetLastErrorMessage());
}

static int ts_register(struct lv_thread *ts, int id, virConnectDomainEventGenericCallback cb)
{
	int ret = virConnectDomainEventRegisterAny(ts->conn, NULL, id, cb, link_ref(ts->link),
						   link_unref);
	if (ret < 0) {
		g_warning("cannot follow libvirt's domain events (%d) on %s: %s", id, ts->uri,
			  virGetLastErrorMessage());
		link_unref(ts->link);
	}
	return ret;
}

static void ts_disconnect(struct lv_thread *ts)
{
	if (!ts->conn)
		return;
	int *ids[] = { &ts->cb_lifecycle, &ts->cb_reboot, &ts->cb_metadata };
	for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
		if (*ids[i] >= 0)
			virConnectDomainEventDeregisterAny(ts->conn, *ids[i]);
		*ids[i] = -1;
	}
	if (ts->close_cb_registered)
		virConnectUnregisterCloseCallback(ts->conn, on_close);
	ts->close_cb_registered = FALSE;
	virConnectClose(g_steal_pointer(&ts->conn));
}

void vr_libvirt_thread_free(gpointer data)
{
	struct lv_thread *ts = data;

	ts_disconnect(ts);
	link_unref(ts->link);
	g_free(ts->uri);
	g_free(ts);
}

struct lv_thread *vr_libvirt_thread_new(const char *uri, struct vr_libvirt_link *link,
					vr_libvirt_hook_fn hook, gpointer hook_data)
{
	struct lv_thread *ts = g_new0(struct lv_thread, 1);

	ts->uri = g_strdup(uri);
	ts->link = link_ref(link);
	ts->hook = hook;
	ts->hook_data = hook_data;
	ts->cb_lifecycle = ts->cb_reboot = ts->cb_metadata = -1;
	return ts;
}

static void ts_hook(struct lv_thread *ts, const char *what)
{
	if (ts->hook)
		ts->hook(what, ts->hook_data);
}

static gboolean ts_check_up(struct lv_thread *ts, GError **error)
{
	if (ts->conn)
		return TRUE;
	g_set_error(error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_DOWN,
		    "not connected to libvirt at %s", ts->uri);
	return FALSE;
}

/* ---- the jobs (libvirt's thread) ----------------------------------------- */

void vr_libvirt_job_free(gpointer data)
{
	struct lv_job *j = data;

	g_free(j->metadata);
	if (j->list)
		g_ptr_array_unref(j->list);
	vr_libvirt_domain_free(j->domain);
	if (j->dom)
		virDomainFree(j->dom);
	g_free(j);
}

gboolean vr_libvirt_job_connect(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;

	ts_hook(ts, "connect");
	if (ts->conn && virConnectIsAlive(ts->conn) == 1) {
		/* A connection opened after its request timed out. */
		j->already = TRUE;
		return TRUE;
	}
	ts_disconnect(ts);
	ts->conn = virConnectOpen(ts->uri);
	if (!ts->conn) {
		g_set_error(error, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_DOWN,
			    "cannot connect to libvirt at %s: %s", ts->uri,
			    virGetLastErrorMessage());
		return FALSE;
	}
	if (virConnectSetKeepAlive(ts->conn, VR_LIBVIRT_KEEPALIVE_INTERVAL_S,
				   VR_LIBVIRT_KEEPALIVE_COUNT) < 0)
		g_debug("libvirt at %s does not do keepalive: %s", ts->uri,
			virGetLastErrorMessage());
	/* The link is lent, not given (no free function): some drivers (test)
	 * never call it; ts_disconnect() unregisters before the link goes. */
	if (virConnectRegisterCloseCallback(ts->conn, on_close, ts->link, NULL) < 0) {
		g_debug("libvirt at %s has no close callback: %s", ts->uri,
			virGetLastErrorMessage());
	} else {
		ts->close_cb_registered = TRUE;
	}
	ts->cb_lifecycle = ts_register(ts, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
				       VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle));
	ts->cb_reboot =
		ts_register(ts, VIR_DOMAIN_EVENT_ID_REBOOT, VIR_DOMAIN_EVENT_CALLBACK(on_reboot));
	ts->cb_metadata = ts_register(ts, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
				      VIR_DOMAIN_EVENT_CALLBACK(on_metadata));
	return TRUE;
}

/* A connection libvirt closed (its close callback): let it go, unless a
 * new one is up already. */
gboolean vr_libvirt_job_disconnect(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;

	(void)data;
	(void)error;
	if (ts->conn && virConnectIsAlive(ts->conn) != 1)
		ts_disconnect(ts);
	return TRUE;
}

/* Whether libvirtd answers: a call that goes to it and back. */
gboolean vr_libvirt_job_probe(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	unsigned long version = 0;

	(void)data;
	ts_hook(ts, "probe");
	if (ts->conn && virConnectGetLibVersion(ts->conn, &version) < 0) {
		lv_set_error(error, "libvirt does not answer");
		return FALSE;
	}
	return TRUE;
}

/* Reads @dom; NULL with @error when it stopped meanwhile or libvirt failed. */
static struct vr_libvirt_domain *ts_read_domain(virDomainPtr dom, GError **error)
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

gboolean vr_libvirt_job_list(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;
	virDomainPtr *doms = NULL;
	g_autoptr(GPtrArray)
		list = g_ptr_array_new_with_free_func((GDestroyNotify)vr_libvirt_domain_free);

	ts_hook(ts, "list-domains");
	if (!ts_check_up(ts, error))
		return FALSE;
	int n = virConnectListAllDomains(ts->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		lv_set_error(error, "cannot list the running domains");
		return FALSE;
	}
	for (int i = 0; i < n; i++) {
		g_autoptr(GError) local = NULL;
		struct vr_libvirt_domain *d = ts_read_domain(doms[i], &local);
		if (d)
			g_ptr_array_add(list, d);
		else if (virDomainIsActive(doms[i]) == 1)
			g_warning("%s", local->message);
		virDomainFree(doms[i]);
		vr_libvirt_worker_progress(); /* libvirt answers: more time */
	}
	free(doms);
	j->list = g_steal_pointer(&list);
	return TRUE;
}

/* Domain @uuid, NULL with @error when unknown (VR_LIBVIRT_ERROR_NO_DOMAIN) or down. */
static virDomainPtr ts_lookup(struct lv_thread *ts, const char *uuid, GError **error)
{
	if (!ts_check_up(ts, error))
		return NULL;
	virDomainPtr dom = virDomainLookupByUUIDString(ts->conn, uuid);
	if (!dom) {
		g_autofree char *what = g_strdup_printf("no domain with UUID %s", uuid);
		lv_set_error(error, what);
	}
	return dom;
}

gboolean vr_libvirt_job_get(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;
	g_autoptr(GError) local = NULL;
	virDomainPtr dom;

	ts_hook(ts, "get-domain");
	dom = ts_lookup(ts, j->uuid, &local);
	if (!dom) {
		if (g_error_matches(local, VR_LIBVIRT_ERROR, VR_LIBVIRT_ERROR_NO_DOMAIN))
			return TRUE;
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (virDomainIsActive(dom) == 1) {
		j->domain = ts_read_domain(dom, &local);
		if (!j->domain && virDomainIsActive(dom) == 1) {
			virDomainFree(dom);
			g_propagate_error(error, g_steal_pointer(&local));
			return FALSE;
		}
	}
	virDomainFree(dom);
	return TRUE;
}

gboolean vr_libvirt_job_set_metadata(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;
	virDomainPtr dom;

	ts_hook(ts, "set-metadata");
	dom = ts_lookup(ts, j->uuid, error);
	if (!dom)
		return FALSE;
	unsigned int flags = VIR_DOMAIN_AFFECT_LIVE;
	if (virDomainIsPersistent(dom) == 1)
		flags |= VIR_DOMAIN_AFFECT_CONFIG;
	int ret = virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, j->metadata,
				       VR_LIBVIRT_METADATA_KEY, VR_LIBVIRT_METADATA_NS, flags);
	if (ret < 0) {
		g_autofree char *what = g_strdup_printf("cannot write the metadata of domain '%s'",
							virDomainGetName(dom));
		lv_set_error(error, what);
	}
	virDomainFree(dom);
	return ret == 0;
}

gboolean vr_libvirt_job_lookup(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;

	ts_hook(ts, "lookup-domain");
	j->dom = ts_lookup(ts, j->uuid, error);
	return j->dom != NULL;
}
