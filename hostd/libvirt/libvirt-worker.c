/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt worker thread: libvirt's policy over the job pool (job-pool.h)
 * that runs the jobs, answers them on the main context and watches their
 * deadlines. See libvirt-worker.h.
 *
 * What is libvirt's here: a pool of one thread of its own (libvirt's calls
 * are made on one thread, in order), the connection as the queue's thread
 * data (closed on that thread), a job past its deadline answered at once
 * with VR_LIBVIRT_WORKER_ERROR_TIMEOUT (libvirt's calls cannot be
 * interrupted), a bound on the jobs waiting, the stall's words and the
 * owner's callbacks, and a join bounded by VR_LIBVIRT_WORKER_JOIN_MS.
 */
#include "libvirt/libvirt-worker.h"

#include <gio/gio.h>

#include "job-pool.h"

/* clang-format off */
G_DEFINE_QUARK(vreclaim-libvirt-worker-error-quark, vr_libvirt_worker_error)
/* clang-format on */

/**
 * struct lw_job - one job: the pool's part and libvirt's callbacks.
 * @base:	the pool's part (first: job-pool.c hands it back).
 * @run, @done:	as submitted.
 */
struct lw_job {
	struct vr_job base;
	vr_libvirt_job_fn run;
	vr_libvirt_done_fn done;
};

/**
 * struct vr_libvirt_worker - the main context's handle.
 * @pool:	the thread (a pool of one).
 * @queue:	the jobs on it.
 * @name:	what it serves, for the log.
 * @timeout_ms:	each job's deadline, ms.
 * @ops, @user_data: the owner's.
 * @timeouts:	how many jobs timed out.
 */
struct vr_libvirt_worker {
	struct vr_job_pool *pool;
	struct vr_job_queue *queue;
	char *name;
	guint timeout_ms;
	const struct vr_libvirt_worker_ops *ops;
	gpointer user_data;
	guint64 timeouts;
};

/* ---- the policy, for the job pool ------------------------------------------ */

static gboolean lw_run(struct vr_job *job, gpointer thread_data, GError **error)
{
	struct lw_job *j = (struct lw_job *)job;

	if (j->run(thread_data, job->data, error))
		return TRUE;
	if (error && !*error)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "libvirt: %s failed without saying why", job->what);
	return FALSE;
}

static void worker_recover(struct vr_libvirt_worker *w)
{
	gint64 stalled_us;

	if (!vr_job_queue_recover(w->queue, &stalled_us))
		return;
	g_message("%s: libvirt answers again (degraded for %.1f s)", w->name,
		  (double)stalled_us / G_USEC_PER_SEC);
	if (w->ops && w->ops->recovered)
		w->ops->recovered(stalled_us, w->user_data);
}

static void lw_done(struct vr_job *job, const GError *error, gpointer owner)
{
	struct lw_job *j = (struct lw_job *)job;
	struct vr_libvirt_worker *w = owner;

	/* An answer in time ends a stall (a refusal is no answer of
	 * libvirt's; a timeout was counted in lw_overdue()). */
	if (!g_error_matches(error, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_BUSY) &&
	    !g_error_matches(error, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_TIMEOUT))
		worker_recover(w);
	if (j->done)
		j->done(w, job->data, error, job->user_data);
}

static void worker_stall(struct vr_libvirt_worker *w, const char *what)
{
	g_autofree char *limit = NULL;
	const char *reason;

	if (vr_job_queue_stall_reason(w->queue))
		return;
	limit = vr_job_format_ms(w->timeout_ms);
	vr_job_queue_stall(w->queue,
			   g_strdup_printf("libvirt did not answer %s within %s", what, limit));
	reason = vr_job_queue_stall_reason(w->queue);
	g_warning("%s: %s: degraded until it answers (the domains it knows are served as usual)",
		  w->name, reason);
	if (w->ops && w->ops->stalled)
		w->ops->stalled(reason, w->user_data);
}

/* The head job passed its deadline: answer it with a timeout now. */
static guint lw_overdue(struct vr_job *head, const char *running, gpointer owner, GError **answer)
{
	struct vr_libvirt_worker *w = owner;
	g_autofree char *limit = vr_job_format_ms(w->timeout_ms);

	w->timeouts++;
	/* The job that holds the thread is the one libvirt does not answer;
	 * this one may only have waited behind it. */
	worker_stall(w, running ? running : head->what);
	g_set_error(answer, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_TIMEOUT,
		    "libvirt did not answer %s within %s", head->what, limit);
	return 0;
}

static const struct vr_job_queue_ops lw_queue_ops = {
	.run = lw_run,
	.done = lw_done,
	.overdue = lw_overdue,
};

/* ---- the handle ------------------------------------------------------------ */

void vr_libvirt_worker_progress(void)
{
	vr_job_queue_progress();
}

struct vr_libvirt_worker *vr_libvirt_worker_new(const char *name, guint timeout_ms,
						gpointer thread_data,
						GDestroyNotify free_thread_data,
						const struct vr_libvirt_worker_ops *ops,
						gpointer user_data, GError **error)
{
	struct vr_libvirt_worker *w;
	struct vr_job_pool *pool;

	g_return_val_if_fail(name != NULL, NULL);

	/* 15 characters at most: Linux cuts thread names there. */
	pool = vr_job_pool_new("vr-libvirt", 1, error);
	if (!pool) {
		g_prefix_error(error, "%s: cannot start libvirt's thread: ", name);
		if (free_thread_data)
			free_thread_data(thread_data);
		return NULL;
	}
	w = g_new0(struct vr_libvirt_worker, 1);
	w->pool = pool;
	w->name = g_strdup(name);
	w->timeout_ms = MAX(timeout_ms, 1);
	w->ops = ops;
	w->user_data = user_data;
	w->queue = vr_job_queue_new(pool, w->timeout_ms, thread_data, free_thread_data,
				    &lw_queue_ops, w);
	return w;
}

void vr_libvirt_worker_submit(struct vr_libvirt_worker *w, const char *what, vr_libvirt_job_fn run,
			      vr_libvirt_done_fn done, gpointer data, GDestroyNotify free_data,
			      gpointer user_data)
{
	struct lw_job *job;
	guint pending;

	g_return_if_fail(w != NULL && what != NULL && run != NULL);

	job = g_new0(struct lw_job, 1);
	vr_job_init(&job->base, what, data, free_data, user_data);
	job->run = run;
	job->done = done;
	pending = vr_job_queue_pending(w->queue);
	if (pending >= VR_LIBVIRT_WORKER_MAX_QUEUED) {
		g_autoptr(GError)
			busy = g_error_new(VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_BUSY,
					   "libvirt has %u requests waiting already: no %s now",
					   pending, what);

		/* Answered from the main loop, never from here, and out of
		 * order: it never waits. */
		vr_job_queue_refuse(w->queue, &job->base, busy);
		return;
	}
	vr_job_queue_submit(w->queue, &job->base);
}

guint vr_libvirt_worker_pending(const struct vr_libvirt_worker *w)
{
	return vr_job_queue_pending(w->queue);
}

const char *vr_libvirt_worker_stall_reason(const struct vr_libvirt_worker *w)
{
	return vr_job_queue_stall_reason(w->queue);
}

guint64 vr_libvirt_worker_get_stalls(const struct vr_libvirt_worker *w)
{
	return vr_job_queue_get_stalls(w->queue);
}

guint64 vr_libvirt_worker_get_timeouts(const struct vr_libvirt_worker *w)
{
	return w->timeouts;
}

gboolean vr_libvirt_worker_free(struct vr_libvirt_worker *w)
{
	gboolean exited;

	if (!w)
		return TRUE;
	/* The connection closes on the thread (closing talks to libvirtd). */
	exited = vr_job_queue_free(w->queue, VR_LIBVIRT_WORKER_JOIN_MS);
	if (!exited)
		g_warning("%s: libvirt's thread is still blocked in libvirt after %d ms: it "
			  "finishes on its own",
			  w->name, VR_LIBVIRT_WORKER_JOIN_MS);
	vr_job_pool_free(w->pool, exited);
	g_free(w->name);
	g_free(w);
	return exited;
}
