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
 * talk through jobs one way and results and events the other way; this
 * file is the main context's half and the object, libvirt-jobs.c the
 * thread's.
 */
#define _GNU_SOURCE
#include "libvirt/libvirt-conn-private.h"

#include <errno.h>
#include <string.h>

/* ---- the main context's half ---------------------------------------------- */

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
	vr_libvirt_worker_submit(lv->worker, "connect", vr_libvirt_job_connect, connect_done,
				 g_new0(struct lv_job, 1), vr_libvirt_job_free, lv);
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
	vr_libvirt_worker_submit(lv->worker, "disconnect", vr_libvirt_job_disconnect, NULL,
				 g_new0(struct lv_job, 1), vr_libvirt_job_free, lv);
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
		vr_libvirt_worker_submit(lv->worker, "probe", vr_libvirt_job_probe, probe_done,
					 g_new0(struct lv_job, 1), vr_libvirt_job_free, lv);
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
	lv->link->dispatch = lv_event_dispatch;
	vr_libvirt_loop_register();

	ts = vr_libvirt_thread_new(lv->uri, lv->link, hook, hook_data);
	name = g_strdup_printf("libvirt at %s", lv->uri);
	lv->worker = vr_libvirt_worker_new(name, timeout_ms, ts, vr_libvirt_thread_free,
					   &worker_ops, lv, &error);
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
	vr_libvirt_worker_submit(lv->worker, what, run, request_done, j, vr_libvirt_job_free, lv);
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
	lv_request(lv, req, "list-domains", vr_libvirt_job_list, job_for(NULL));
}

void vr_libvirt_get_running(struct vr_libvirt *lv, const char *uuid, vr_libvirt_domain_fn done,
			    gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_GET, user_data, destroy);

	req->done.domain = done;
	lv_request(lv, req, "get-domain", vr_libvirt_job_get, job_for(uuid));
}

void vr_libvirt_set_metadata(struct vr_libvirt *lv, const char *uuid, const char *metadata,
			     vr_libvirt_result_fn done, gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_SET_METADATA, user_data, destroy);
	struct lv_job *j = job_for(uuid);

	req->done.result = done;
	j->metadata = g_strdup(metadata);
	lv_request(lv, req, "set-metadata", vr_libvirt_job_set_metadata, j);
}

void vr_libvirt_lookup(struct vr_libvirt *lv, const char *uuid, vr_libvirt_lookup_fn done,
		       gpointer user_data, GDestroyNotify destroy)
{
	struct lv_request *req = request_new(LV_LOOKUP, user_data, destroy);

	req->done.lookup = done;
	lv_request(lv, req, "lookup-domain", vr_libvirt_job_lookup, job_for(uuid));
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
