/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt worker thread: a job queue, a deadline per job on the main
 * context, results handed back as idle sources. See libvirt-worker.h.
 *
 * Three parties share struct lw_core: the main context (through the
 * handle, struct vr_libvirt_worker), the thread, and each job on its way
 * back. A job (struct lw_job) is shared by the main context, which answers
 * it at its deadline if the thread has not, and the thread. Both are
 * reference-counted; their members say who may touch them.
 *
 * One watchdog timer per worker looks at the oldest job not answered (the
 * head of the pending queue): its deadline is the worker's timeout after
 * its submission or after the thread's last sign of life (a job started or
 * finished, or vr_libvirt_worker_progress()), whichever is later. Jobs are
 * answered from the head only, so in order.
 */
#include "libvirt/libvirt-worker.h"

#include <gio/gio.h>

/* clang-format off */
G_DEFINE_QUARK(vreclaim-libvirt-worker-error-quark, vr_libvirt_worker_error)
/* clang-format on */

/**
 * struct lw_core - what the main context and the thread share.
 * @jobs:	queued jobs (struct lw_job *, a reference each), in order; a
 *		job with @quit set ends the thread. Thread-safe.
 * @thread_data: the jobs' thread data; the thread's alone, freed by it.
 * @free_thread_data: how.
 * @ctx:	where results go (a reference).
 * @lock:	guards @running, @progress_us and @exited.
 * @exited_cond: signalled when @exited is set.
 * @running:	what the running job does (static), NULL between jobs.
 * @progress_us: the thread's last sign of life (monotonic): a job started
 *		or finished, or a job said it got an answer.
 * @exited:	the thread is done (it touches nothing any more).
 * @owner:	the handle, NULL once vr_libvirt_worker_free() let it go.
 *		Main context only.
 */
struct lw_core {
	GAsyncQueue *jobs;
	gpointer thread_data;
	GDestroyNotify free_thread_data;
	GMainContext *ctx;
	GMutex lock;
	GCond exited_cond;
	const char *running;
	gint64 progress_us;
	gboolean exited;
	struct vr_libvirt_worker *owner;
};

/**
 * struct lw_job - one job, from vr_libvirt_worker_submit() to its answer.
 * @core:	a reference (NULL for the quit job).
 * @quit:	the thread's last job.
 * @what:	what it does (static).
 * @run, @done, @data, @free_data, @user_data: as submitted.
 * @error:	what @run failed with (set by the thread before it posts
 *		the job back).
 * @cancelled:	atomic: the main context answered it already (deadline,
 *		or the worker was freed): the thread skips it if it has not
 *		started it.
 * @answered:	its done callback ran, or never will. Main context only.
 * @submitted_us: when it was submitted (monotonic).
 */
struct lw_job {
	struct lw_core *core;
	gboolean quit;
	const char *what;
	vr_libvirt_job_fn run;
	vr_libvirt_done_fn done;
	gpointer data;
	GDestroyNotify free_data;
	gpointer user_data;
	GError *error;
	gint cancelled;
	gboolean answered;
	gint64 submitted_us;
};

/**
 * struct vr_libvirt_worker - the main context's handle.
 * @core:	the shared part (a reference).
 * @thread:	the thread (a reference until joined or let go).
 * @name:	what it serves, for the log.
 * @timeout_ms:	each job's deadline, ms.
 * @ops, @user_data: the owner's.
 * @pending:	jobs not answered yet (struct lw_job *, a reference each), in
 *		submission order.
 * @watchdog:	the timer on the head of @pending, NULL when none is armed.
 * @freed:	set to TRUE by vr_libvirt_worker_free() while a done
 *		callback runs (NULL otherwise): the caller stops there.
 * @stall_reason: why it is stalled, NULL when it is not.
 * @stalled_since_us: when it stalled (monotonic).
 * @stalls:	how many times it stalled.
 * @timeouts:	how many jobs timed out.
 */
struct vr_libvirt_worker {
	struct lw_core *core;
	GThread *thread;
	char *name;
	guint timeout_ms;
	const struct vr_libvirt_worker_ops *ops;
	gpointer user_data;
	GQueue pending;
	GSource *watchdog;
	gboolean *freed;
	char *stall_reason;
	gint64 stalled_since_us;
	guint64 stalls;
	guint64 timeouts;
};

/* ---- reference counting ---------------------------------------------------- */

static void core_clear(gpointer data)
{
	struct lw_core *core = data;

	g_async_queue_unref(core->jobs);
	g_main_context_unref(core->ctx);
	g_mutex_clear(&core->lock);
	g_cond_clear(&core->exited_cond);
}

static void core_unref(struct lw_core *core)
{
	g_atomic_rc_box_release_full(core, core_clear);
}

static void job_clear(gpointer data)
{
	struct lw_job *job = data;

	if (job->free_data)
		job->free_data(job->data);
	g_clear_error(&job->error);
	if (job->core)
		core_unref(job->core);
}

static struct lw_job *job_ref(struct lw_job *job)
{
	return g_atomic_rc_box_acquire(job);
}

static void job_unref(gpointer job)
{
	g_atomic_rc_box_release_full(job, job_clear);
}

/* ---- stalls (main context) ------------------------------------------------ */

/* @ms as "5 s" when whole seconds, else "1500 ms" (owned). */
static char *format_ms(guint ms)
{
	if (ms % 1000 == 0)
		return g_strdup_printf("%u s", ms / 1000);
	return g_strdup_printf("%u ms", ms);
}

static void worker_stall(struct vr_libvirt_worker *w, const char *what)
{
	g_autofree char *limit = NULL;

	if (w->stall_reason)
		return;
	limit = format_ms(w->timeout_ms);
	w->stall_reason = g_strdup_printf("libvirt did not answer %s within %s", what, limit);
	w->stalls++;
	w->stalled_since_us = g_get_monotonic_time();
	g_warning("%s: %s: degraded until it answers (the domains it knows are served as usual)",
		  w->name, w->stall_reason);
	if (w->ops && w->ops->stalled)
		w->ops->stalled(w->stall_reason, w->user_data);
}

static void worker_recover(struct vr_libvirt_worker *w)
{
	gint64 stalled_us;

	if (!w->stall_reason)
		return;
	stalled_us = g_get_monotonic_time() - w->stalled_since_us;
	g_message("%s: libvirt answers again (degraded for %.1f s)", w->name,
		  (double)stalled_us / G_USEC_PER_SEC);
	g_clear_pointer(&w->stall_reason, g_free);
	if (w->ops && w->ops->recovered)
		w->ops->recovered(stalled_us, w->user_data);
}

/* ---- answers (main context) ------------------------------------------------ */

/* Take @job out of the pending jobs: it is answered. The caller holds its
 * own reference. */
static void job_settle(struct vr_libvirt_worker *w, struct lw_job *job)
{
	job->answered = TRUE;
	if (g_queue_remove(&w->pending, job))
		job_unref(job);
}

/* Call @job's done callback. Return: FALSE when it freed @w. */
static gboolean job_call_done(struct vr_libvirt_worker *w, struct lw_job *job, const GError *error)
{
	gboolean freed = FALSE;

	if (!job->done)
		return TRUE;
	w->freed = &freed;
	job->done(w, job->data, error, job->user_data);
	if (!freed)
		w->freed = NULL;
	return !freed;
}

static gboolean watchdog_fire(gpointer data);

static void watchdog_stop(struct vr_libvirt_worker *w)
{
	if (!w->watchdog)
		return;
	g_source_destroy(w->watchdog);
	g_clear_pointer(&w->watchdog, g_source_unref);
}

/* When the head of the pending jobs times out (monotonic, us), 0 when none
 * is pending: the timeout after its submission or after the thread's last
 * sign of life, whichever is later. */
static gint64 head_deadline_us(struct vr_libvirt_worker *w)
{
	struct lw_job *head = g_queue_peek_head(&w->pending);
	gint64 progress_us;

	if (!head)
		return 0;
	g_mutex_lock(&w->core->lock);
	progress_us = w->core->progress_us;
	g_mutex_unlock(&w->core->lock);
	return MAX(head->submitted_us, progress_us) + (gint64)w->timeout_ms * 1000;
}

/* Arm the watchdog for the head of the pending jobs (none when none is). */
static void watchdog_arm(struct vr_libvirt_worker *w)
{
	gint64 deadline_us = head_deadline_us(w);
	gint64 wait_ms;

	watchdog_stop(w);
	if (!deadline_us)
		return;
	wait_ms = (deadline_us - g_get_monotonic_time() + 999) / 1000;
	w->watchdog = g_timeout_source_new((guint)CLAMP(wait_ms, 1, G_MAXINT));
	g_source_set_callback(w->watchdog, watchdog_fire, w, NULL);
	g_source_attach(w->watchdog, w->core->ctx);
}

/* Answer the head of the pending jobs with a timeout. Return: FALSE when
 * its callback freed @w. */
static gboolean head_time_out(struct vr_libvirt_worker *w)
{
	struct lw_job *job = job_ref(g_queue_peek_head(&w->pending));
	g_autoptr(GError) error = NULL;
	g_autofree char *limit = format_ms(w->timeout_ms);
	const char *running;
	gboolean alive;

	g_atomic_int_set(&job->cancelled, 1);
	job_settle(w, job);
	w->timeouts++;
	g_mutex_lock(&job->core->lock);
	running = job->core->running;
	g_mutex_unlock(&job->core->lock);
	/* The job that holds the thread is the one libvirt does not answer;
	 * this one may only have waited behind it. */
	worker_stall(w, running ? running : job->what);
	g_set_error(&error, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_TIMEOUT,
		    "libvirt did not answer %s within %s", job->what, limit);
	alive = job_call_done(w, job, error);
	job_unref(job);
	return alive;
}

static gboolean watchdog_fire(gpointer data)
{
	struct vr_libvirt_worker *w = data;

	/* This source ends here; GLib holds it until the dispatch returns. */
	g_clear_pointer(&w->watchdog, g_source_unref);
	for (;;) {
		gint64 deadline_us = head_deadline_us(w);

		if (!deadline_us || g_get_monotonic_time() < deadline_us)
			break;
		if (!head_time_out(w))
			return G_SOURCE_REMOVE; /* freed */
	}
	watchdog_arm(w);
	return G_SOURCE_REMOVE;
}

/* The thread finished @data (or a submission failed at once). */
static gboolean job_deliver(gpointer data)
{
	struct lw_job *job = data;
	struct vr_libvirt_worker *w = job->core->owner;

	if (!w || job->answered) {
		g_debug("libvirt answered %s after its deadline: the result is dropped", job->what);
		return G_SOURCE_REMOVE;
	}
	job_ref(job);
	job_settle(w, job);
	if (!g_error_matches(job->error, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_BUSY))
		worker_recover(w);
	if (job_call_done(w, job, job->error))
		watchdog_arm(w); /* for the next job, from this sign of life */
	job_unref(job);
	return G_SOURCE_REMOVE;
}

/* Hand @job (a reference, given) to the main context. */
static void job_post(struct lw_job *job)
{
	/* An idle source, never g_main_context_invoke(): that could run the
	 * callback on this thread when the context is free. */
	GSource *src = g_idle_source_new();

	g_source_set_priority(src, G_PRIORITY_DEFAULT);
	g_source_set_callback(src, job_deliver, job, job_unref);
	g_source_attach(src, job->core->ctx);
	g_source_unref(src);
}

/* ---- the thread ------------------------------------------------------------ */

/* The worker whose thread this is, for vr_libvirt_worker_progress(). */
static __thread struct lw_core *thread_core;

static void core_set_running(struct lw_core *core, const char *what)
{
	g_mutex_lock(&core->lock);
	core->running = what;
	core->progress_us = g_get_monotonic_time();
	g_mutex_unlock(&core->lock);
}

void vr_libvirt_worker_progress(void)
{
	struct lw_core *core = thread_core;

	g_return_if_fail(core != NULL);
	g_mutex_lock(&core->lock);
	core->progress_us = g_get_monotonic_time();
	g_mutex_unlock(&core->lock);
}

static gpointer worker_main(gpointer data)
{
	struct lw_core *core = data;

	thread_core = core;
	for (;;) {
		struct lw_job *job = g_async_queue_pop(core->jobs);

		if (job->quit) {
			job_unref(job);
			break;
		}
		if (g_atomic_int_get(&job->cancelled)) {
			job_unref(job);
			continue;
		}
		core_set_running(core, job->what);
		if (!job->run(core->thread_data, job->data, &job->error) && !job->error)
			g_set_error(&job->error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "libvirt: %s failed without saying why", job->what);
		core_set_running(core, NULL);
		job_post(job);
	}
	/* The connection was this thread's: it closes here (closing talks to
	 * libvirtd). */
	if (core->free_thread_data)
		core->free_thread_data(core->thread_data);
	core->thread_data = NULL;
	g_mutex_lock(&core->lock);
	core->exited = TRUE;
	g_cond_signal(&core->exited_cond);
	g_mutex_unlock(&core->lock);
	core_unref(core);
	return NULL;
}

/* ---- the handle ------------------------------------------------------------ */

struct vr_libvirt_worker *vr_libvirt_worker_new(const char *name, guint timeout_ms,
						gpointer thread_data,
						GDestroyNotify free_thread_data,
						const struct vr_libvirt_worker_ops *ops,
						gpointer user_data, GError **error)
{
	struct lw_core *core;
	struct vr_libvirt_worker *w;

	g_return_val_if_fail(name != NULL, NULL);

	core = g_atomic_rc_box_new0(struct lw_core);
	core->jobs = g_async_queue_new();
	core->thread_data = thread_data;
	core->free_thread_data = free_thread_data;
	core->ctx = g_main_context_ref_thread_default();
	g_mutex_init(&core->lock);
	g_cond_init(&core->exited_cond);

	w = g_new0(struct vr_libvirt_worker, 1);
	w->core = core;
	w->name = g_strdup(name);
	w->timeout_ms = MAX(timeout_ms, 1);
	w->ops = ops;
	w->user_data = user_data;
	g_queue_init(&w->pending);
	core->owner = w;

	/* 15 characters at most: Linux cuts thread names there. */
	w->thread =
		g_thread_try_new("vr-libvirt", worker_main, g_atomic_rc_box_acquire(core), error);
	if (!w->thread) {
		g_prefix_error(error, "%s: cannot start libvirt's thread: ", name);
		core_unref(core); /* the thread's */
		if (free_thread_data)
			free_thread_data(thread_data);
		core->owner = NULL;
		core_unref(core);
		g_free(w->name);
		g_free(w);
		return NULL;
	}
	return w;
}

void vr_libvirt_worker_submit(struct vr_libvirt_worker *w, const char *what, vr_libvirt_job_fn run,
			      vr_libvirt_done_fn done, gpointer data, GDestroyNotify free_data,
			      gpointer user_data)
{
	struct lw_job *job;

	g_return_if_fail(w != NULL && what != NULL && run != NULL);

	job = g_atomic_rc_box_new0(struct lw_job);
	job->core = g_atomic_rc_box_acquire(w->core);
	job->what = what;
	job->run = run;
	job->done = done;
	job->data = data;
	job->free_data = free_data;
	job->user_data = user_data;
	job->submitted_us = g_get_monotonic_time();
	if (w->pending.length >= VR_LIBVIRT_WORKER_MAX_QUEUED) {
		/* Answered from the main loop, never from here, and out of
		 * order: it never waits. */
		g_set_error(&job->error, VR_LIBVIRT_WORKER_ERROR, VR_LIBVIRT_WORKER_ERROR_BUSY,
			    "libvirt has %u requests waiting already: no %s now", w->pending.length,
			    what);
		g_atomic_int_set(&job->cancelled, 1);
		job_post(job);
		return;
	}
	g_queue_push_tail(&w->pending, job_ref(job)); /* the main context's */
	if (!w->watchdog)
		watchdog_arm(w);
	g_async_queue_push(w->core->jobs, job); /* the thread's reference */
}

guint vr_libvirt_worker_pending(const struct vr_libvirt_worker *w)
{
	return w->pending.length;
}

const char *vr_libvirt_worker_stall_reason(const struct vr_libvirt_worker *w)
{
	return w->stall_reason;
}

guint64 vr_libvirt_worker_get_stalls(const struct vr_libvirt_worker *w)
{
	return w->stalls;
}

guint64 vr_libvirt_worker_get_timeouts(const struct vr_libvirt_worker *w)
{
	return w->timeouts;
}

gboolean vr_libvirt_worker_free(struct vr_libvirt_worker *w)
{
	struct lw_core *core;
	struct lw_job *quit, *job;
	gint64 until;
	gboolean exited;

	if (!w)
		return TRUE;
	core = w->core;
	core->owner = NULL;
	if (w->freed)
		*w->freed = TRUE; /* from within a done callback */
	watchdog_stop(w);
	while ((job = g_queue_pop_head(&w->pending))) {
		g_atomic_int_set(&job->cancelled, 1);
		job->answered = TRUE;
		job_unref(job);
	}
	quit = g_atomic_rc_box_new0(struct lw_job);
	quit->quit = TRUE;
	quit->what = "quit";
	g_async_queue_push(core->jobs, quit);

	until = g_get_monotonic_time() + VR_LIBVIRT_WORKER_JOIN_MS * G_TIME_SPAN_MILLISECOND;
	g_mutex_lock(&core->lock);
	while (!core->exited)
		if (!g_cond_wait_until(&core->exited_cond, &core->lock, until))
			break;
	exited = core->exited;
	g_mutex_unlock(&core->lock);
	if (exited) {
		g_thread_join(w->thread);
	} else {
		g_warning("%s: libvirt's thread is still blocked in libvirt after %d ms: it "
			  "finishes on its own",
			  w->name, VR_LIBVIRT_WORKER_JOIN_MS);
		g_thread_unref(w->thread);
	}
	core_unref(core);
	g_free(w->stall_reason);
	g_free(w->name);
	g_free(w);
	return exited;
}
