/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Jobs off the main loop: a pool of threads, queues of jobs run in order on
 * them, answers handed back to the main context as idle sources, and a
 * watchdog on the oldest job not answered. See job-pool.h.
 *
 * Three parties share a queue's struct vr_job_queue_core: the main context
 * (through the handle, struct vr_job_queue), the pool thread that runs the
 * queue's jobs, and each job on its way back. A job is shared by the main
 * context, which may answer it at its deadline, and the thread. Both are
 * reference-counted; their members say who may touch them.
 *
 * A queue is *scheduled* on the pool (one task of the GThreadPool) while it
 * has jobs to run: the thread that takes it runs its jobs one after the
 * other until none is left, so a queue's jobs never run side by side and
 * run in order. The thread that finds a freed queue empty frees its thread
 * data.
 */
#include "job-pool.h"

#include <gio/gio.h>
#include <sys/prctl.h>

/**
 * struct vr_job_pool - threads that run queues' jobs.
 * @threads:	the GThreadPool; its tasks are scheduled queues.
 * @name:	the threads' name, NULL for GLib's.
 * @base:	threads while none is held.
 * @lock:	guards @extra.
 * @extra:	threads more than @base (vr_job_pool_add_threads()).
 */
struct vr_job_pool {
	GThreadPool *threads;
	char *name;
	guint base;
	GMutex lock;
	gint extra;
};

/**
 * struct vr_job_queue_core - what the main context and the thread share.
 * @pool:	the threads (not a reference: it outlives the queue's jobs);
 *		main context only.
 * @thread_name: the pool's threads' name (owned, may be NULL): the threads do not touch
 *		@pool, which may be freed while one still runs the queue.
 * @ops:	the owner's policy (static).
 * @ctx:	where answers go (a reference).
 * @thread_data, @free_thread_data: the jobs' thread data and how to free
 *		it; touched by the thread that runs the queue only.
 * @lock:	guards the members below it.
 * @exited_cond: signalled when @exited is set.
 * @jobs:	jobs to run (struct vr_job *, a reference each), in order.
 * @scheduled:	the queue is a task of the pool, or a thread runs it.
 * @closing:	vr_job_queue_free() was called.
 * @exited:	the thread data was freed: the queue's threads are done.
 * @running:	the @what of the job that runs (static), NULL between jobs.
 * @progress_us: the last sign of life (monotonic): a job started or
 *		finished, or vr_job_queue_progress().
 * @owner:	the handle, NULL once vr_job_queue_free() let it go. Main
 *		context only.
 */
struct vr_job_queue_core {
	struct vr_job_pool *pool;
	char *thread_name;
	const struct vr_job_queue_ops *ops;
	GMainContext *ctx;
	gpointer thread_data;
	GDestroyNotify free_thread_data;
	GMutex lock;
	GCond exited_cond;
	GQueue jobs;
	gboolean scheduled;
	gboolean closing;
	gboolean exited;
	const char *running;
	gint64 progress_us;
	struct vr_job_queue *owner;
};

/**
 * struct vr_job_queue - the main context's handle.
 * @core:	the shared part (a reference).
 * @timeout_ms:	the deadline, ms.
 * @owner:	the owner's, for the ops.
 * @pending:	jobs not answered (struct vr_job *, a reference each), in
 *		submission order.
 * @watchdog:	the timer on the head of @pending, NULL when none is armed.
 * @resting:	@overdue said to look again only after the next answer.
 * @freed:	set to TRUE by vr_job_queue_free() while a done callback runs
 *		(NULL otherwise): the caller stops there.
 * @stall_reason: why it is stalled, NULL when it is not.
 * @stalled_since_us: when it stalled (monotonic).
 * @stalls:	how many times it stalled.
 */
struct vr_job_queue {
	struct vr_job_queue_core *core;
	guint timeout_ms;
	gpointer owner;
	GQueue pending;
	GSource *watchdog;
	gboolean resting;
	gboolean *freed;
	char *stall_reason;
	gint64 stalled_since_us;
	guint64 stalls;
};

/* ---- the pool ----------------------------------------------------------- */

static void queue_run(gpointer data, gpointer unused);

struct vr_job_pool *vr_job_pool_new(const char *thread_name, guint threads, GError **error)
{
	struct vr_job_pool *pool;

	g_return_val_if_fail(threads >= 1, NULL);

	pool = g_new0(struct vr_job_pool, 1);
	pool->name = g_strdup(thread_name);
	pool->base = threads;
	g_mutex_init(&pool->lock);
	pool->threads = g_thread_pool_new(queue_run, NULL, (gint)threads, TRUE, error);
	if (!pool->threads) {
		g_mutex_clear(&pool->lock);
		g_free(pool->name);
		g_free(pool);
		return NULL;
	}
	return pool;
}

void vr_job_pool_add_threads(struct vr_job_pool *pool, gint delta)
{
	g_mutex_lock(&pool->lock);
	pool->extra += delta;
	g_thread_pool_set_max_threads(pool->threads, (gint)pool->base + MAX(pool->extra, 0), NULL);
	g_mutex_unlock(&pool->lock);
}

void vr_job_pool_free(struct vr_job_pool *pool, gboolean wait)
{
	if (!pool)
		return;
	/* Not wait: the threads end after their work and the last frees the
	 * GThreadPool; queue_run() touches nothing of @pool (its cores hold a
	 * copy of the name). */
	g_thread_pool_free(pool->threads, FALSE, wait);
	g_mutex_clear(&pool->lock);
	g_free(pool->name);
	g_free(pool);
}

/* ---- reference counting ------------------------------------------------- */

static struct vr_job_queue_core *core_ref(struct vr_job_queue_core *core)
{
	return g_atomic_rc_box_acquire(core);
}

static void core_clear(gpointer data)
{
	struct vr_job_queue_core *core = data;

	g_free(core->thread_name);
	g_main_context_unref(core->ctx);
	g_mutex_clear(&core->lock);
	g_cond_clear(&core->exited_cond);
}

static void core_unref(struct vr_job_queue_core *core)
{
	g_atomic_rc_box_release_full(core, core_clear);
}

static struct vr_job *job_ref(struct vr_job *job)
{
	g_atomic_int_inc(&job->ref);
	return job;
}

static void job_unref(gpointer data)
{
	struct vr_job *job = data;
	struct vr_job_queue_core *core = job->queue_core;

	if (!g_atomic_int_dec_and_test(&job->ref))
		return;
	if (job->free_data)
		job->free_data(job->data);
	g_clear_error(&job->error);
	if (core->ops->free_job)
		core->ops->free_job(job);
	else
		g_free(job);
	core_unref(core);
}

void vr_job_init(struct vr_job *job, const char *what, gpointer data, GDestroyNotify free_data,
		 gpointer user_data)
{
	job->what = what;
	job->data = data;
	job->free_data = free_data;
	job->user_data = user_data;
}

char *vr_job_format_ms(guint ms)
{
	if (ms % 1000 == 0)
		return g_strdup_printf("%u s", ms / 1000);
	return g_strdup_printf("%u ms", ms);
}

/* ---- answers (main context) ---------------------------------------------- */

/* Take @job out of the pending jobs: it is answered. The caller holds its
 * own reference. */
static void job_settle(struct vr_job_queue *q, struct vr_job *job)
{
	job->answered = TRUE;
	if (g_queue_remove(&q->pending, job))
		job_unref(job);
}

/* Call @job's done callback. Return: FALSE when it freed @q. */
static gboolean job_call_done(struct vr_job_queue *q, struct vr_job *job, const GError *error)
{
	gboolean freed = FALSE;

	q->freed = &freed;
	q->core->ops->done(job, error, q->owner);
	if (!freed)
		q->freed = NULL;
	return !freed;
}

static gboolean watchdog_fire(gpointer data);

static void watchdog_stop(struct vr_job_queue *q)
{
	if (!q->watchdog)
		return;
	g_source_destroy(q->watchdog);
	g_clear_pointer(&q->watchdog, g_source_unref);
}

static void watchdog_arm_ms(struct vr_job_queue *q, gint64 wait_ms)
{
	watchdog_stop(q);
	q->watchdog = g_timeout_source_new((guint)CLAMP(wait_ms, 1, G_MAXINT));
	g_source_set_callback(q->watchdog, watchdog_fire, q, NULL);
	g_source_attach(q->watchdog, q->core->ctx);
}

/* When the head of the pending jobs is due (monotonic, us), 0 when none is
 * pending: the timeout after its submission or after the last sign of life,
 * whichever is later. */
static gint64 head_deadline_us(struct vr_job_queue *q)
{
	struct vr_job *head = g_queue_peek_head(&q->pending);
	gint64 progress_us;

	if (!head)
		return 0;
	g_mutex_lock(&q->core->lock);
	progress_us = q->core->progress_us;
	g_mutex_unlock(&q->core->lock);
	return MAX(head->submitted_us, progress_us) + (gint64)q->timeout_ms * 1000;
}

/* Arm the watchdog for the head of the pending jobs (none when none is). */
static void watchdog_arm(struct vr_job_queue *q)
{
	gint64 deadline_us = head_deadline_us(q);

	watchdog_stop(q);
	if (deadline_us)
		watchdog_arm_ms(q, (deadline_us - g_get_monotonic_time() + 999) / 1000);
}

/* Answer the head of the pending jobs with @error. Return: FALSE when its
 * callback freed @q. */
static gboolean head_answer(struct vr_job_queue *q, struct vr_job *head, const GError *error)
{
	struct vr_job *job = job_ref(head);
	gboolean alive;

	g_atomic_int_set(&job->cancelled, 1);
	job_settle(q, job);
	alive = job_call_done(q, job, error);
	job_unref(job);
	return alive;
}

static gboolean watchdog_fire(gpointer data)
{
	struct vr_job_queue *q = data;

	/* This source ends here; GLib holds it until the dispatch returns. */
	g_clear_pointer(&q->watchdog, g_source_unref);
	for (;;) {
		gint64 deadline_us = head_deadline_us(q);
		struct vr_job *head = g_queue_peek_head(&q->pending);
		g_autoptr(GError) answer = NULL;
		const char *running;
		guint again_ms;

		if (!deadline_us)
			return G_SOURCE_REMOVE;
		if (g_get_monotonic_time() < deadline_us)
			break;
		g_mutex_lock(&q->core->lock);
		running = q->core->running;
		g_mutex_unlock(&q->core->lock);
		again_ms = q->core->ops->overdue(head, running, q->owner, &answer);
		if (answer) {
			if (!head_answer(q, head, answer))
				return G_SOURCE_REMOVE; /* freed */
			continue;
		}
		if (again_ms)
			watchdog_arm_ms(q, again_ms);
		else
			q->resting = TRUE;
		return G_SOURCE_REMOVE;
	}
	watchdog_arm(q);
	return G_SOURCE_REMOVE;
}

/* The thread finished @data (or a refusal comes back). */
static gboolean job_deliver(gpointer data)
{
	struct vr_job *job = data;
	struct vr_job_queue *q = job->queue_core->owner;

	if (job->ran && job->queue_core->ops->returned)
		job->queue_core->ops->returned(job);
	if (!q || job->answered) {
		g_debug("%s was answered after its deadline or its queue went: the result is dropped",
			job->what);
		return G_SOURCE_REMOVE;
	}
	job_ref(job);
	job_settle(q, job);
	watchdog_stop(q);
	q->resting = FALSE;
	if (job_call_done(q, job, job->error) && !q->watchdog)
		watchdog_arm(q); /* for the next job, from this sign of life */
	job_unref(job);
	return G_SOURCE_REMOVE;
}

/* Hand @job (a reference, given) to the main context. */
static void job_post(struct vr_job *job)
{
	/* An idle source, never g_main_context_invoke(): that could run the
	 * callback on this thread when the context is free. */
	GSource *src = g_idle_source_new();

	g_source_set_priority(src, G_PRIORITY_DEFAULT);
	g_source_set_callback(src, job_deliver, job, job_unref);
	g_source_attach(src, job->queue_core->ctx);
	g_source_unref(src);
}

/* ---- the pool's threads ---------------------------------------------------- */

/* The queue whose job this thread runs, for vr_job_queue_progress(). */
static __thread struct vr_job_queue_core *thread_core;

static void core_set_running(struct vr_job_queue_core *core, const char *what)
{
	g_mutex_lock(&core->lock);
	core->running = what;
	core->progress_us = g_get_monotonic_time();
	g_mutex_unlock(&core->lock);
}

void vr_job_queue_progress(void)
{
	struct vr_job_queue_core *core = thread_core;

	g_return_if_fail(core != NULL);
	g_mutex_lock(&core->lock);
	core->progress_us = g_get_monotonic_time();
	g_mutex_unlock(&core->lock);
}

/* Free the thread data of a freed queue (on this thread: closing it may
 * block), and say so. */
static void core_exit(struct vr_job_queue_core *core)
{
	if (core->free_thread_data)
		core->free_thread_data(core->thread_data);
	core->thread_data = NULL;
	g_mutex_lock(&core->lock);
	core->exited = TRUE;
	g_cond_signal(&core->exited_cond);
	g_mutex_unlock(&core->lock);
}

/* A pool thread: run @data's (a scheduled queue, a reference) jobs until
 * none is left. */
static void queue_run(gpointer data, gpointer unused)
{
	struct vr_job_queue_core *core = data;

	(void)unused;
	if (core->thread_name)
		prctl(PR_SET_NAME, core->thread_name, 0, 0, 0);
	thread_core = core;
	for (;;) {
		struct vr_job *job;
		gboolean closing;

		g_mutex_lock(&core->lock);
		job = g_queue_pop_head(&core->jobs);
		closing = core->closing;
		if (!job)
			core->scheduled = FALSE;
		g_mutex_unlock(&core->lock);
		if (!job) {
			if (closing)
				core_exit(core);
			break;
		}
		if (g_atomic_int_get(&job->cancelled)) {
			job_unref(job);
			continue;
		}
		core_set_running(core, job->what);
		if (!core->ops->run(job, core->thread_data, &job->error) && !job->error)
			g_set_error(&job->error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "%s failed without saying why", job->what);
		core_set_running(core, NULL);
		job->ran = TRUE;
		job_post(job);
	}
	thread_core = NULL;
	core_unref(core);
}

/* Make @core a task of its pool unless it is one. Under @core->lock. */
static void core_schedule_locked(struct vr_job_queue_core *core)
{
	if (core->scheduled)
		return;
	core->scheduled = TRUE;
	/* Exclusive threads exist already: the push cannot fail. */
	g_thread_pool_push(core->pool->threads, core_ref(core), NULL);
}

/* ---- the handle ---------------------------------------------------------- */

struct vr_job_queue *vr_job_queue_new(struct vr_job_pool *pool, guint timeout_ms,
				      gpointer thread_data, GDestroyNotify free_thread_data,
				      const struct vr_job_queue_ops *ops, gpointer owner)
{
	struct vr_job_queue_core *core;
	struct vr_job_queue *q;

	g_return_val_if_fail(pool != NULL && ops != NULL && ops->run && ops->done && ops->overdue,
			     NULL);

	core = g_atomic_rc_box_new0(struct vr_job_queue_core);
	core->pool = pool;
	core->thread_name = g_strdup(pool->name);
	core->ops = ops;
	core->ctx = g_main_context_ref_thread_default();
	core->thread_data = thread_data;
	core->free_thread_data = free_thread_data;
	g_mutex_init(&core->lock);
	g_cond_init(&core->exited_cond);
	g_queue_init(&core->jobs);

	q = g_new0(struct vr_job_queue, 1);
	q->core = core;
	q->timeout_ms = MAX(timeout_ms, 1);
	q->owner = owner;
	g_queue_init(&q->pending);
	core->owner = q;
	return q;
}

/* Fill in the job's part that is job-pool.c's: a reference, given. */
static void job_start(struct vr_job_queue *q, struct vr_job *job)
{
	job->ref = 1;
	job->queue_core = core_ref(q->core);
	job->submitted_us = g_get_monotonic_time();
}

void vr_job_queue_submit(struct vr_job_queue *q, struct vr_job *job)
{
	g_return_if_fail(q != NULL && job != NULL && job->what != NULL);

	job_start(q, job);
	g_queue_push_tail(&q->pending, job_ref(job)); /* the main context's */
	if (!q->watchdog && !q->resting)
		watchdog_arm(q);
	g_mutex_lock(&q->core->lock);
	g_queue_push_tail(&q->core->jobs, job); /* the thread's */
	core_schedule_locked(q->core);
	g_mutex_unlock(&q->core->lock);
}

void vr_job_queue_refuse(struct vr_job_queue *q, struct vr_job *job, const GError *error)
{
	g_return_if_fail(q != NULL && job != NULL && error != NULL);

	job_start(q, job);
	job->error = g_error_copy(error);
	g_atomic_int_set(&job->cancelled, 1);
	job_post(job);
}

guint vr_job_queue_pending(const struct vr_job_queue *q)
{
	return q->pending.length;
}

gboolean vr_job_queue_stall(struct vr_job_queue *q, char *reason)
{
	if (q->stall_reason) {
		g_free(reason);
		return FALSE;
	}
	q->stall_reason = reason;
	q->stalls++;
	q->stalled_since_us = g_get_monotonic_time();
	return TRUE;
}

gboolean vr_job_queue_recover(struct vr_job_queue *q, gint64 *stalled_us)
{
	if (!q->stall_reason)
		return FALSE;
	if (stalled_us)
		*stalled_us = g_get_monotonic_time() - q->stalled_since_us;
	g_clear_pointer(&q->stall_reason, g_free);
	return TRUE;
}

const char *vr_job_queue_stall_reason(const struct vr_job_queue *q)
{
	return q->stall_reason;
}

guint64 vr_job_queue_get_stalls(const struct vr_job_queue *q)
{
	return q->stalls;
}

gboolean vr_job_queue_free(struct vr_job_queue *q, guint wait_ms)
{
	struct vr_job_queue_core *core;
	GQueue dropped = G_QUEUE_INIT;
	struct vr_job *job;
	gboolean exited;

	if (!q)
		return TRUE;
	core = q->core;
	core->owner = NULL;
	if (q->freed)
		*q->freed = TRUE; /* from within a done callback */
	watchdog_stop(q);
	while ((job = g_queue_pop_head(&q->pending))) {
		g_atomic_int_set(&job->cancelled, 1);
		job->answered = TRUE;
		job_unref(job);
	}
	g_mutex_lock(&core->lock);
	core->closing = TRUE;
	dropped = core->jobs;
	g_queue_init(&core->jobs);
	core_schedule_locked(core); /* unless it runs: to free the thread data */
	g_mutex_unlock(&core->lock);
	while ((job = g_queue_pop_head(&dropped)))
		job_unref(job);

	g_mutex_lock(&core->lock);
	if (wait_ms) {
		gint64 until = g_get_monotonic_time() + (gint64)wait_ms * G_TIME_SPAN_MILLISECOND;

		while (!core->exited)
			if (!g_cond_wait_until(&core->exited_cond, &core->lock, until))
				break;
	}
	exited = core->exited;
	g_mutex_unlock(&core->lock);

	core_unref(core);
	g_free(q->stall_reason);
	g_free(q);
	return exited;
}
