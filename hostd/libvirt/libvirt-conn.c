/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's libvirt connection: events from libvirt's loop handed to the
 * main context, every call to libvirtd on libvirt's thread
 * (libvirt-worker.h), reconnection with backoff, and the degraded state of
 * a libvirtd that stops answering (see libvirt-conn.h).
 *
 * Two halves: struct vr_libvirt is the main context's (connected or not,
 * the reconnect and probe timers, the requests not answered yet); struct
 * lv_thread is libvirt's thread's (the connection and its callbacks). They
 * talk through jobs one way and results and events the other way.
 */
#define _GNU_SOURCE
#include "libvirt/libvirt-conn.h"

#include <errno.h>
#include <libvirt/virterror.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vreclaim-libvirt-error-quark, vr_libvirt_error)
/* clang-format on */

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

/* ---- the two halves ----------------------------------------------------- */

/*
 * What libvirt's callbacks hold: a reference-counted link to the object,
 * cleared (on the main context) when the object is freed, so a callback
 * queued before that finds nothing to call.
 */
struct vr_libvirt_link {
	struct vr_libvirt *lv; /* main context only */
	GMainContext *ctx;
};

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

/**
 * struct vr_libvirt - the main context's half.
 * @uri:		what it connects to.
 * @reconnect_max_ms:	the backoff's cap.
 * @ops, @user_data:	the daemon's.
 * @link:		the link libvirt's callbacks post through (a reference).
 * @worker:		libvirt's thread.
 * @connected:		a connection is up, as far as the main context knows.
 * @connecting:		a connect job is outstanding.
 * @reconnect_source:	the next connection attempt, 0 when none is due.
 * @reconnect_delay_ms: the delay of the next one.
 * @nr_connects:	connections made.
 * @probe_source:	the probe timer (every VR_LIBVIRT_HEARTBEAT_MS, every
 *			VR_LIBVIRT_PROBE_INTERVAL_MS while degraded), 0 before
 *			vr_libvirt_start().
 * @probing:		a probe job is outstanding.
 * @requests:		the requests not answered yet (struct lv_request *).
 */
struct vr_libvirt {
	char *uri;
	guint reconnect_max_ms;
	const struct vr_libvirt_ops *ops;
	gpointer user_data;
	struct vr_libvirt_link *link;
	struct vr_libvirt_worker *worker;
	gboolean connected;
	gboolean connecting;
	guint reconnect_source;
	guint reconnect_delay_ms;
	guint nr_connects;
	guint probe_source;
	gboolean probing;
	GQueue requests;
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

/* ---- events: libvirt's callbacks -> the main context ---------------------- */

/* An event on its way from libvirt's callbacks to the main context. */
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

static void lv_lost(struct vr_libvirt *lv, const char *reason);

static gboolean lv_event_dispatch(gpointer data)
{
	struct lv_event *ev = data;
	struct vr_libvirt *lv = ev->link->lv;

	if (!lv)
		return G_SOURCE_REMOVE;
	if (ev->closed) {
		lv_lost(lv, ev->reason);
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

static void ts_free(gpointer data)
{
	struct lv_thread *ts = data;

	ts_disconnect(ts);
	link_unref(ts->link);
	g_free(ts->uri);
	g_free(ts);
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

/**
 * enum lv_kind - what a request asks, and which callback answers it.
 */
enum lv_kind {
	LV_CONNECT,
	LV_DISCONNECT,
	LV_PROBE,
	LV_LIST,
	LV_GET,
	LV_SET_METADATA,
	LV_LOOKUP,
};

/**
 * struct lv_request - a request not answered yet: the main context's side
 * (the caller's callback and data). Main context only.
 */
struct lv_request {
	enum lv_kind kind;
	union {
		vr_libvirt_list_fn list;
		vr_libvirt_domain_fn domain;
		vr_libvirt_result_fn result;
		vr_libvirt_lookup_fn lookup;
	} done;
	gpointer user_data;
	GDestroyNotify destroy;
};

/**
 * struct lv_job - a job's data: inputs, outputs.
 * @req:	its request (main context only; NULL for the object's own
 *		jobs: connect, disconnect, probe).
 * @uuid:	the domain (in).
 * @metadata:	what to write (in).
 * @already:	connect: the connection was up already (out).
 * @list:	list (out).
 * @domain:	get (out), NULL when not running.
 * @dom:	lookup (out), a reference.
 */
struct lv_job {
	struct lv_request *req;
	char uuid[VIR_UUID_STRING_BUFLEN];
	char *metadata;
	gboolean already;
	GPtrArray *list;
	struct vr_libvirt_domain *domain;
	virDomainPtr dom;
};

static void lv_job_free(gpointer data)
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

static gboolean job_connect(gpointer thread_data, gpointer data, GError **error)
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
static gboolean job_disconnect(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;

	(void)data;
	(void)error;
	if (ts->conn && virConnectIsAlive(ts->conn) != 1)
		ts_disconnect(ts);
	return TRUE;
}

/* Whether libvirtd answers: a call that goes to it and back. */
static gboolean job_probe(gpointer thread_data, gpointer data, GError **error)
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

static gboolean job_list(gpointer thread_data, gpointer data, GError **error)
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

static gboolean job_get(gpointer thread_data, gpointer data, GError **error)
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

static gboolean job_set_metadata(gpointer thread_data, gpointer data, GError **error)
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

static gboolean job_lookup(gpointer thread_data, gpointer data, GError **error)
{
	struct lv_thread *ts = thread_data;
	struct lv_job *j = data;

	ts_hook(ts, "lookup-domain");
	j->dom = ts_lookup(ts, j->uuid, error);
	return j->dom != NULL;
}

/* ---- the main context: connecting, reconnecting, probing ----------------- */

static void lv_schedule_reconnect(struct vr_libvirt *lv);

static void connect_done(struct vr_libvirt_worker *w, gpointer data, const GError *error,
			 gpointer user_data)
{
	struct vr_libvirt *lv = user_data;
	struct lv_job *j = data;

	(void)w;
	lv->connecting = FALSE;
	if (error) {
		g_message("%s (next attempt in %u ms)", error->message, lv->reconnect_delay_ms);
		lv_schedule_reconnect(lv);
		lv->reconnect_delay_ms = MIN(lv->reconnect_delay_ms * 2, lv->reconnect_max_ms);
		return;
	}
	if (lv->connected)
		return;
	g_message("connected to libvirt at %s%s", lv->uri,
		  lv->nr_connects > 0 || j->already ? " again" : "");
	lv->connected = TRUE;
	lv->nr_connects++;
	lv->reconnect_delay_ms = VR_LIBVIRT_RECONNECT_MIN_MS;
	if (lv->ops->connected)
		lv->ops->connected(lv->user_data);
}

static void lv_connect(struct vr_libvirt *lv)
{
	if (lv->connecting || lv->connected)
		return;
	lv->connecting = TRUE;
	vr_libvirt_worker_submit(lv->worker, "connect", job_connect, connect_done,
				 g_new0(struct lv_job, 1), lv_job_free, lv);
}

static gboolean lv_reconnect_cb(gpointer data)
{
	struct vr_libvirt *lv = data;

	lv->reconnect_source = 0;
	lv_connect(lv);
	return G_SOURCE_REMOVE;
}

static void lv_schedule_reconnect(struct vr_libvirt *lv)
{
	if (lv->reconnect_source)
		return;
	lv->reconnect_source = g_timeout_add(lv->reconnect_delay_ms, lv_reconnect_cb, lv);
}

/* libvirt closed the connection (@reason): close it on the thread and
 * connect again. */
static void lv_lost(struct vr_libvirt *lv, const char *reason)
{
	vr_libvirt_worker_submit(lv->worker, "disconnect", job_disconnect, NULL,
				 g_new0(struct lv_job, 1), lv_job_free, lv);
	if (!lv->connected)
		return;
	g_warning("lost the connection to libvirt (%s): %s", lv->uri, reason);
	lv->connected = FALSE;
	lv_schedule_reconnect(lv);
	if (lv->ops->disconnected)
		lv->ops->disconnected(reason, lv->user_data);
}

static void probe_done(struct vr_libvirt_worker *w, gpointer data, const GError *error,
		       gpointer user_data)
{
	struct vr_libvirt *lv = user_data;

	(void)w;
	(void)data;
	lv->probing = FALSE;
	if (error)
		g_debug("probing libvirt at %s: %s", lv->uri, error->message);
}

static gboolean probe_tick(gpointer data)
{
	struct vr_libvirt *lv = data;

	if (!lv->probing) {
		lv->probing = TRUE;
		vr_libvirt_worker_submit(lv->worker, "probe", job_probe, probe_done,
					 g_new0(struct lv_job, 1), lv_job_free, lv);
	}
	return G_SOURCE_CONTINUE;
}

/* Probe libvirt every @ms from now on. */
static void lv_arm_probe(struct vr_libvirt *lv, guint ms)
{
	if (lv->probe_source)
		g_source_remove(lv->probe_source);
	lv->probe_source = g_timeout_add(ms, probe_tick, lv);
}

static void on_stalled(const char *reason, gpointer user_data)
{
	struct vr_libvirt *lv = user_data;

	(void)reason;
	lv_arm_probe(lv, VR_LIBVIRT_PROBE_INTERVAL_MS);
}

static void on_recovered(gint64 stalled_us, gpointer user_data)
{
	struct vr_libvirt *lv = user_data;

	(void)stalled_us;
	lv_arm_probe(lv, VR_LIBVIRT_HEARTBEAT_MS);
	/* What happened meanwhile (events lost, requests dropped) is read
	 * anew. */
	if (lv->connected && lv->ops->connected)
		lv->ops->connected(lv->user_data);
}

static const struct vr_libvirt_worker_ops worker_ops = {
	.stalled = on_stalled,
	.recovered = on_recovered,
};

/* ---- the object ------------------------------------------------------------ */

struct vr_libvirt *vr_libvirt_new_full(const char *uri, guint reconnect_max_ms, guint timeout_ms,
				       vr_libvirt_hook_fn hook, gpointer hook_data,
				       const struct vr_libvirt_ops *ops, gpointer user_data)
{
	struct vr_libvirt *lv = g_new0(struct vr_libvirt, 1);
	g_autoptr(GError) error = NULL;
	g_autofree char *name = NULL;
	struct lv_thread *ts;

	lv->uri = g_strdup(uri ? uri : "qemu:///system");
	lv->reconnect_max_ms = MAX(reconnect_max_ms, VR_LIBVIRT_RECONNECT_MIN_MS);
	lv->reconnect_delay_ms = VR_LIBVIRT_RECONNECT_MIN_MS;
	lv->ops = ops;
	lv->user_data = user_data;
	g_queue_init(&lv->requests);
	lv->link = g_atomic_rc_box_new0(struct vr_libvirt_link);
	lv->link->lv = lv;
	lv->link->ctx = g_main_context_ref_thread_default();
	loop_register();

	ts = g_new0(struct lv_thread, 1);
	ts->uri = g_strdup(lv->uri);
	ts->link = link_ref(lv->link);
	ts->hook = hook;
	ts->hook_data = hook_data;
	ts->cb_lifecycle = ts->cb_reboot = ts->cb_metadata = -1;
	name = g_strdup_printf("libvirt at %s", lv->uri);
	lv->worker = vr_libvirt_worker_new(name, timeout_ms, ts, ts_free, &worker_ops, lv, &error);
	if (!lv->worker) /* as g_thread_new() does: a daemon that cannot make a thread */
		g_error("%s", error->message);
	return lv;
}

struct vr_libvirt *vr_libvirt_new(const char *uri, guint reconnect_max_ms,
				  const struct vr_libvirt_ops *ops, gpointer user_data)
{
	return vr_libvirt_new_full(uri, reconnect_max_ms, VR_LIBVIRT_REQUEST_TIMEOUT_MS, NULL, NULL,
				   ops, user_data);
}

void vr_libvirt_start(struct vr_libvirt *lv)
{
	lv_connect(lv);
	if (!lv->probe_source)
		lv_arm_probe(lv, VR_LIBVIRT_HEARTBEAT_MS);
}

gboolean vr_libvirt_is_connected(const struct vr_libvirt *lv)
{
	return lv->connected;
}

const char *vr_libvirt_degraded_reason(const struct vr_libvirt *lv)
{
	return vr_libvirt_worker_stall_reason(lv->worker);
}

guint64 vr_libvirt_stalls(const struct vr_libvirt *lv)
{
	return vr_libvirt_worker_get_stalls(lv->worker);
}

guint64 vr_libvirt_timeouts(const struct vr_libvirt *lv)
{
	return vr_libvirt_worker_get_timeouts(lv->worker);
}

const char *vr_libvirt_uri(const struct vr_libvirt *lv)
{
	return lv->uri;
}

guint vr_libvirt_reconnects(const struct vr_libvirt *lv)
{
	return lv->nr_connects > 0 ? lv->nr_connects - 1 : 0;
}

static void request_free(struct lv_request *req)
{
	if (req->destroy)
		req->destroy(req->user_data);
	g_free(req);
}

void vr_libvirt_free(struct vr_libvirt *lv)
{
	struct lv_request *req;

	if (!lv)
		return;
	if (lv->reconnect_source)
		g_source_remove(lv->reconnect_source);
	if (lv->probe_source)
		g_source_remove(lv->probe_source);
	lv->link->lv = NULL;
	/* The connection closes on the thread, as it exits. */
	vr_libvirt_worker_free(lv->worker);
	while ((req = g_queue_pop_head(&lv->requests)))
		request_free(req);
	link_unref(lv->link);
	g_free(lv->uri);
	g_free(lv);
}

/* ---- the requests ------------------------------------------------------------ */

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

static void request_done(struct vr_libvirt_worker *w, gpointer data, const GError *error,
			 gpointer user_data)
{
	struct vr_libvirt *lv = user_data;
	struct lv_job *j = data;
	struct lv_request *req = j->req;

	(void)w;
	g_queue_remove(&lv->requests, req);
	switch (req->kind) {
	case LV_LIST:
		req->done.list(error ? NULL : j->list, error, req->user_data);
		break;
	case LV_GET:
		req->done.domain(error ? NULL : j->domain, error, req->user_data);
		break;
	case LV_SET_METADATA:
		req->done.result(error, req->user_data);
		break;
	case LV_LOOKUP:
		req->done.lookup(error ? NULL : j->dom, error, req->user_data);
		break;
	default:
		g_assert_not_reached();
	}
	request_free(req);
}

/* Queue @req (owned) with @j (owned) as its job's data. */
static void lv_request(struct vr_libvirt *lv, struct lv_request *req, const char *what,
		       vr_libvirt_job_fn run, struct lv_job *j)
{
	j->req = req;
	g_queue_push_tail(&lv->requests, req);
	vr_libvirt_worker_submit(lv->worker, what, run, request_done, j, lv_job_free, lv);
}

static struct lv_request *request_new(enum lv_kind kind, gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = g_new0(struct lv_request, 1);

	req->kind = kind;
	req->user_data = user_data;
	req->destroy = destroy;
	return req;
}

static struct lv_job *job_for(const char *uuid)
{
	struct lv_job *j = g_new0(struct lv_job, 1);

	if (uuid)
		g_strlcpy(j->uuid, uuid, sizeof(j->uuid));
	return j;
}

void vr_libvirt_list_running(struct vr_libvirt *lv, vr_libvirt_list_fn done, gpointer user_data,
			     GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_LIST, user_data, destroy);

	req->done.list = done;
	lv_request(lv, req, "list-domains", job_list, job_for(NULL));
}

void vr_libvirt_get_running(struct vr_libvirt *lv, const char *uuid, vr_libvirt_domain_fn done,
			    gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_GET, user_data, destroy);

	req->done.domain = done;
	lv_request(lv, req, "get-domain", job_get, job_for(uuid));
}

void vr_libvirt_set_metadata(struct vr_libvirt *lv, const char *uuid, const char *metadata,
			     vr_libvirt_result_fn done, gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_SET_METADATA, user_data, destroy);
	struct lv_job *j = job_for(uuid);

	req->done.result = done;
	j->metadata = g_strdup(metadata);
	lv_request(lv, req, "set-metadata", job_set_metadata, j);
}

void vr_libvirt_lookup(struct vr_libvirt *lv, const char *uuid, vr_libvirt_lookup_fn done,
		       gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_LOOKUP, user_data, destroy);

	req->done.lookup = done;
	lv_request(lv, req, "lookup-domain", job_lookup, job_for(uuid));
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
