/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two halves of vreclaimd's libvirt connection share, and nothing
 * else includes: the link libvirt's callbacks post through, the events they
 * post, the jobs' data and the jobs themselves. libvirt-conn.c is the main
 * context's half (struct vr_libvirt: connected or not, the reconnect and
 * probe timers, the requests); libvirt-jobs.c is libvirt's thread's half
 * (struct lv_thread: the connection and its callbacks, the jobs run on
 * libvirt-worker.c's thread).
 */
#pragma once

#include "libvirt/libvirt-conn.h"

struct lv_request;
struct lv_thread;

/*
 * What libvirt's callbacks hold: a reference-counted link to the object,
 * cleared (on the main context) when the object is freed, so a callback
 * queued before that finds nothing to call. @dispatch runs each event
 * (struct lv_event, freed by the source) on @ctx: the main context's half's,
 * given so that libvirt's thread's half does not call into it.
 */
struct vr_libvirt_link {
	struct vr_libvirt *lv; /* main context only */
	GMainContext *ctx;
	GSourceFunc dispatch;
};

static inline struct vr_libvirt_link *link_ref(struct vr_libvirt_link *link)
{
	return g_atomic_rc_box_acquire(link);
}

static inline void link_clear(struct vr_libvirt_link *link)
{
	g_main_context_unref(link->ctx);
}

/* Drops a reference to @link (a void * for libvirt's free callbacks). */
static inline void link_unref(void *link)
{
	g_atomic_rc_box_release_full(link, (GDestroyNotify)link_clear);
}

/* An event on its way from libvirt's callbacks to the main context. */
struct lv_event {
	struct vr_libvirt_link *link;
	gboolean closed;
	char *reason;
	char uuid[VIR_UUID_STRING_BUFLEN];
	char *name;
	enum vr_libvirt_change change;
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

/**
 * vr_libvirt_loop_register() - register libvirt's default event loop (on
 * the default GMainContext) and quiet libvirt's error printing, once per
 * process; before the first connection.
 */
void vr_libvirt_loop_register(void);

/**
 * vr_libvirt_thread_new() - libvirt's thread's half, not connected yet.
 * @uri:       what it connects to (copied).
 * @link:      the link its callbacks post through (a reference is taken).
 * @hook:      for tests: run before each job's libvirt calls, or NULL.
 * @hook_data: for @hook.
 *
 * Return: owned; give it to the worker, which frees it with
 * vr_libvirt_thread_free() on its thread.
 */
struct lv_thread *vr_libvirt_thread_new(const char *uri, struct vr_libvirt_link *link,
					vr_libvirt_hook_fn hook, gpointer hook_data);

/**
 * vr_libvirt_thread_free() - close the connection of @data (struct
 * lv_thread) and free it; on libvirt's thread.
 */
void vr_libvirt_thread_free(gpointer data);

/** vr_libvirt_job_free() - free @data, a struct lv_job, and its outputs. */
void vr_libvirt_job_free(gpointer data);

/*
 * The jobs (vr_libvirt_job_fn, on libvirt's thread; @thread_data is the
 * struct lv_thread, @data a struct lv_job):
 * connect:	 open the connection unless one is alive (->already), with
 *		 keepalive and the event callbacks;
 * disconnect:	 let a connection libvirt closed go, unless a new one is up;
 * probe:	 whether libvirtd answers (a call there and back);
 * list:	 the running domains (->list);
 * get:		 domain ->uuid if running (->domain, NULL when not);
 * set_metadata: write ->metadata into domain ->uuid (live, and config when
 *		 persistent);
 * lookup:	 domain ->uuid (->dom, a reference).
 */
gboolean vr_libvirt_job_connect(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_disconnect(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_probe(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_list(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_get(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_set_metadata(gpointer thread_data, gpointer data, GError **error);
gboolean vr_libvirt_job_lookup(gpointer thread_data, gpointer data, GError **error);
