/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A QEMU monitor's worker: its jobs run on a thread of the process's pool,
 * results are handed back to the main context as idle sources, and a
 * watchdog watches the command that runs. See monitor-worker.h.
 *
 * Three parties share struct worker_core: the main context (through the
 * handle, struct vr_monitor_worker), the pool thread that runs the worker's
 * job, and each job on its way back. It is reference-counted, and its
 * members say who may touch them; the handle is the main context's alone.
 *
 * The pool: WORKER_POOL_THREADS threads for every worker of the process
 * (a thread per domain was a thousand idle threads and 30 MiB for a
 * thousand domains), one more for each job the watchdog found stalled
 * while it still runs, so that stalled QEMUs hold their own threads and the
 * others are served as usual (libvirt's passthrough has no timeout: its
 * command may hold a thread for as long as libvirt waits).
 */
#include "qmp/monitor-worker.h"

#include <gio/gio.h>
#include <string.h>

/* The longest command name kept for the watchdog's message, bytes with the
 * NUL: QMP's names are short words ("query-memory-size-summary"). */
#define WORKER_COMMAND_SIZE 64

/* What the watchdog calls the wait for a new connection's greeting and
 * capabilities negotiation (vr_qemu_monitor_connect()). */
#define WORKER_CONNECT "(connect)"

/* The pool's threads while no job is stalled: jobs last milliseconds, and
 * a domain has at most one outstanding. */
#define WORKER_POOL_THREADS 4

/**
 * struct worker_core - what the main context and the pool threads share.
 * @mon:	the monitor jobs run on: the worker's monitor wrapped by
 *		tracked_ops. Touched only by the thread that runs the worker's
 *		job (one at a time), and freed on a pool thread: after the job
 *		that runs when the worker is freed, else by a quit job.
 * @ctx:	where results go (a reference).
 * @lock:	guards @command_since_us, @command, @running and @closing.
 * @command_since_us: monotonic time the running command was sent, 0 when
 *		none runs (between commands, between jobs). Under @lock.
 * @command:	its name. Under @lock.
 * @running:	a job was submitted and has not finished its run. Under @lock.
 * @closing:	vr_monitor_worker_free() was called. Under @lock.
 * @slowest_us, @slowest: the longest command of the running job and its
 *		name. The running job's thread only.
 * @owner:	the handle, NULL once vr_monitor_worker_free() let it go.
 *		Main context only.
 * @stall_counted: the job outstanding was found stalled and counted in the
 *		pool's stalled jobs. Main context only.
 */
struct worker_core {
	struct vr_qemu_monitor *mon;
	GMainContext *ctx;
	GMutex lock;
	gint64 command_since_us;
	char command[WORKER_COMMAND_SIZE];
	gboolean running;
	gboolean closing;
	gint64 slowest_us;
	char slowest[WORKER_COMMAND_SIZE];
	struct vr_monitor_worker *owner;
	gboolean stall_counted;
};

/**
 * struct job - one job, from vr_monitor_worker_submit() to its done callback.
 * @core:	a reference.
 * @quit:	the worker's last job: it frees the monitor.
 * @what:	what it does, for the log (static).
 * @run, @done, @data, @free_data, @user_data: as submitted.
 * @error:	what @run failed with, NULL on success.
 * @slowest_us, @slowest: its longest command and that command's name.
 */
struct job {
	struct worker_core *core;
	gboolean quit;
	const char *what;
	vr_monitor_job_fn run;
	vr_monitor_done_fn done;
	gpointer data;
	GDestroyNotify free_data;
	gpointer user_data;
	GError *error;
	gint64 slowest_us;
	char slowest[WORKER_COMMAND_SIZE];
};

/**
 * struct vr_monitor_worker - the main context's handle on a worker.
 * @core:	the shared part (a reference).
 * @name:	what it serves, for the log.
 * @timeout_ms:	each command's deadline, ms (the monitor's timeout_ms).
 * @busy:	a job is outstanding.
 * @what:	the outstanding job's @what.
 * @watchdog:	the timer that checks the running command (attached to the
 *		core's context), NULL when none is armed.
 * @stall_reason: why the worker is stalled, NULL when it is not.
 * @stalled_since_us: when it stalled (monotonic).
 * @stalls:	how many times it stalled.
 */
struct vr_monitor_worker {
	struct worker_core *core;
	char *name;
	guint timeout_ms;
	gboolean busy;
	const char *what;
	GSource *watchdog;
	char *stall_reason;
	gint64 stalled_since_us;
	guint64 stalls;
};

/* ---- the shared part ---------------------------------------------------- */

static void core_clear(gpointer data)
{
	struct worker_core *core = data;

	vr_qemu_monitor_free(core->mon); /* NULL but when the pool refused it */
	g_main_context_unref(core->ctx);
	g_mutex_clear(&core->lock);
}

static struct worker_core *core_ref(struct worker_core *core)
{
	return g_atomic_rc_box_acquire(core);
}

static void core_unref(struct worker_core *core)
{
	g_atomic_rc_box_release_full(core, core_clear);
}

static void job_free(gpointer data)
{
	struct job *job = data;

	if (job->free_data)
		job->free_data(job->data);
	g_clear_error(&job->error);
	if (job->core)
		core_unref(job->core);
	g_free(job);
}

/* ---- the pool --------------------------------------------------------- */

/* The pool of every worker of the process, made at the first worker, and
 * the jobs that hold one of its threads stalled (pool_count_stall()). */
G_LOCK_DEFINE_STATIC(pool);
static GThreadPool *pool;
static guint pool_stalled;

static void pool_run(gpointer data, gpointer unused);

static GThreadPool *pool_get(GError **error)
{
	GThreadPool *p;

	G_LOCK(pool);
	if (!pool)
		pool = g_thread_pool_new(pool_run, NULL, WORKER_POOL_THREADS, TRUE, error);
	p = pool;
	G_UNLOCK(pool);
	return p;
}

/* A job found stalled holds a thread until it ends (@stalled): one thread
 * more meanwhile, and one less when it ended. */
static void pool_count_stall(gboolean stalled)
{
	G_LOCK(pool);
	pool_stalled = stalled ? pool_stalled + 1 : pool_stalled - 1;
	g_thread_pool_set_max_threads(pool, (gint)(WORKER_POOL_THREADS + pool_stalled), NULL);
	G_UNLOCK(pool);
}

/* ---- the tracked monitor: each command's start and end, for the watchdog -- */

/**
 * struct tracked - the state of the tracking transport.
 * @core:	the worker it reports to (not a reference: the monitor is
 *		freed before the core, see worker_core's @mon).
 * @inner:	the monitor it wraps, owned.
 */
struct tracked {
	struct worker_core *core;
	struct vr_qemu_monitor *inner;
};

static gint64 track_begin(struct worker_core *core, const char *command)
{
	/* Never 0: that means "no command runs". */
	gint64 now = MAX(g_get_monotonic_time(), 1);

	g_mutex_lock(&core->lock);
	core->command_since_us = now;
	g_strlcpy(core->command, command, sizeof(core->command));
	g_mutex_unlock(&core->lock);
	return now;
}

static void track_end(struct worker_core *core, const char *command, gint64 since_us)
{
	gint64 took_us = g_get_monotonic_time() - since_us;

	g_mutex_lock(&core->lock);
	core->command_since_us = 0;
	core->command[0] = '\0';
	g_mutex_unlock(&core->lock);
	if (took_us > core->slowest_us) {
		core->slowest_us = took_us;
		g_strlcpy(core->slowest, command, sizeof(core->slowest));
	}
}

static gboolean tracked_execute(void *priv, const char *command, json_object *args,
				guint timeout_ms, json_object **ret, GError **error)
{
	struct tracked *t = priv;
	gint64 since_us = track_begin(t->core, command);
	gboolean ok = vr_qemu_monitor_execute(t->inner, command, args, timeout_ms, ret, error);

	track_end(t->core, command, since_us);
	return ok;
}

static gboolean tracked_connect(void *priv, guint timeout_ms, GError **error)
{
	struct tracked *t = priv;
	gint64 since_us = track_begin(t->core, WORKER_CONNECT);
	gboolean ok;

	t->inner->timeout_ms = timeout_ms;
	ok = vr_qemu_monitor_connect(t->inner, error);
	track_end(t->core, WORKER_CONNECT, since_us);
	return ok;
}

static pid_t tracked_peer_pid(void *priv)
{
	struct tracked *t = priv;

	return vr_qemu_monitor_get_peer_pid(t->inner);
}

static void tracked_free(void *priv)
{
	struct tracked *t = priv;

	vr_qemu_monitor_free(t->inner);
	g_free(t);
}

static const struct vr_qemu_monitor_ops tracked_ops = {
	.name = "tracked",
	.execute = tracked_execute,
	.connect = tracked_connect,
	.peer_pid = tracked_peer_pid,
	.free = tracked_free,
};

/* ---- stalls --------------------------------------------------------------- */

/* @ms as "2 s" when whole seconds, else "1500 ms" (owned). */
static char *format_ms(guint ms)
{
	if (ms % 1000 == 0)
		return g_strdup_printf("%u s", ms / 1000);
	return g_strdup_printf("%u ms", ms);
}

/* The reason of a stall on @command (WORKER_CONNECT for the greeting). */
static char *no_answer_reason(const struct vr_monitor_worker *w, const char *command)
{
	g_autofree char *limit = format_ms(w->timeout_ms);

	if (!strcmp(command, WORKER_CONNECT))
		return g_strdup_printf("the QEMU monitor did not greet within %s", limit);
	return g_strdup_printf("the QEMU monitor did not answer %s within %s", command, limit);
}

/* Stalled because of @reason_owned; a stall keeps its first reason. */
static void worker_stall(struct vr_monitor_worker *w, char *reason_owned)
{
	g_autofree char *reason = reason_owned;

	if (w->stall_reason) {
		g_debug("%s: still degraded: %s", w->name, reason);
		return;
	}
	w->stalls++;
	w->stalled_since_us = g_get_monotonic_time();
	g_warning("%s: %s: degraded until it answers (the other domains are served as usual)",
		  w->name, reason);
	w->stall_reason = g_steal_pointer(&reason);
}

static void worker_recover(struct vr_monitor_worker *w)
{
	if (!w->stall_reason)
		return;
	g_message("%s: the QEMU monitor answers again (degraded for %.1f s)", w->name,
		  (double)(g_get_monotonic_time() - w->stalled_since_us) / G_USEC_PER_SEC);
	g_clear_pointer(&w->stall_reason, g_free);
}

/* Whether @error says QEMU could not be reached at all (no socket, a closed
 * connection, libvirt failing): no sign of a stall, nor of an answer. */
static gboolean error_is_unreachable(const GError *error)
{
	return g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT) ||
	       g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED) ||
	       (error && error->domain == VR_QEMU_MONITOR_ERROR);
}

/*
 * What the finished @job says of QEMU: a timeout or a command slower than
 * the deadline is a stall (kept until a job is answered in time: a QEMU
 * that answers late stays degraded); a job whose commands were all answered
 * in time, well or with a refusal, ends one.
 */
static void worker_judge(struct vr_monitor_worker *w, const struct job *job)
{
	gint64 timeout_us = (gint64)w->timeout_ms * 1000;

	if (g_error_matches(job->error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT)) {
		/* The command that timed out is the slowest: the watchdog's
		 * words, whichever of the two saw it first. */
		g_debug("%s: %s", w->name, job->error->message);
		worker_stall(w, no_answer_reason(w, job->slowest[0] ? job->slowest : job->what));
	} else if (job->slowest_us > timeout_us) {
		if (!w->stall_reason) {
			g_autofree char *limit = format_ms(w->timeout_ms);
			worker_stall(w, g_strdup_printf("the QEMU monitor answered %s only after "
							"%.1f s (deadline %s)",
							job->slowest,
							(double)job->slowest_us / G_USEC_PER_SEC,
							limit));
		}
	} else if (!error_is_unreachable(job->error)) {
		worker_recover(w);
	}
}

/* ---- the watchdog (main context) --------------------------------------- */

static gboolean watchdog_fire(gpointer data);

static void watchdog_stop(struct vr_monitor_worker *w)
{
	if (!w->watchdog)
		return;
	g_source_destroy(w->watchdog);
	g_clear_pointer(&w->watchdog, g_source_unref);
}

static void watchdog_arm(struct vr_monitor_worker *w, guint ms)
{
	watchdog_stop(w);
	w->watchdog = g_timeout_source_new(MAX(ms, 1));
	g_source_set_callback(w->watchdog, watchdog_fire, w, NULL);
	g_source_attach(w->watchdog, w->core->ctx);
}

/*
 * The running command has had its time: a stall. Else come back when it
 * will have (or a deadline later when none runs: between two commands, or
 * before the first).
 */
static gboolean watchdog_fire(gpointer data)
{
	struct vr_monitor_worker *w = data;
	gint64 timeout_us = (gint64)w->timeout_ms * 1000;
	gint64 now = g_get_monotonic_time();
	char command[WORKER_COMMAND_SIZE];
	gint64 since_us;

	/* This source ends here; GLib holds it until the dispatch returns. */
	g_clear_pointer(&w->watchdog, g_source_unref);
	g_mutex_lock(&w->core->lock);
	since_us = w->core->command_since_us;
	g_strlcpy(command, w->core->command, sizeof(command));
	g_mutex_unlock(&w->core->lock);
	if (since_us && now - since_us >= timeout_us) {
		if (!w->core->stall_counted) {
			w->core->stall_counted = TRUE;
			pool_count_stall(TRUE);
		}
		worker_stall(w, no_answer_reason(w, command));
		return G_SOURCE_REMOVE; /* the result says the rest */
	}
	watchdog_arm(w, since_us ? (guint)((since_us + timeout_us - now + 999) / 1000) :
				   w->timeout_ms);
	return G_SOURCE_REMOVE;
}

/* ---- results (main context) ------------------------------------------------ */

static gboolean job_deliver(gpointer data)
{
	struct job *job = data;
	struct vr_monitor_worker *w = job->core->owner;

	if (job->core->stall_counted) {
		job->core->stall_counted = FALSE;
		pool_count_stall(FALSE);
	}
	if (!w) {
		g_debug("a result of the QEMU monitor (%s) came after its domain went: dropped",
			job->what);
		return G_SOURCE_REMOVE;
	}
	w->busy = FALSE;
	w->what = NULL;
	watchdog_stop(w);
	worker_judge(w, job);
	/* Last: the callback may free @w. */
	if (job->done)
		job->done(w, job->data, job->error, job->user_data);
	return G_SOURCE_REMOVE;
}

/* ---- the pool's threads --------------------------------------------------- */

static void pool_run(gpointer data, gpointer unused)
{
	struct job *job = data;
	struct worker_core *core = job->core;
	gboolean closing;
	GSource *src;

	(void)unused;
	if (job->quit) {
		/* Not on the main loop: closing libvirt's domain reference may
		 * talk to libvirtd. */
		g_clear_pointer(&core->mon, vr_qemu_monitor_free);
		job_free(job);
		return;
	}
	core->slowest_us = 0;
	core->slowest[0] = '\0';
	if (!job->run(core->mon, job->data, &job->error) && !job->error)
		g_set_error(&job->error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "the QEMU monitor job %s failed without saying why", job->what);
	job->slowest_us = core->slowest_us;
	g_strlcpy(job->slowest, core->slowest, sizeof(job->slowest));
	g_mutex_lock(&core->lock);
	core->running = FALSE;
	closing = core->closing;
	g_mutex_unlock(&core->lock);
	/* The worker was freed while this job ran: no quit job comes. */
	if (closing)
		g_clear_pointer(&core->mon, vr_qemu_monitor_free);
	/* An idle source, never g_main_context_invoke(): that could run the
	 * callback on this thread when the context is free. */
	src = g_idle_source_new();
	g_source_set_priority(src, G_PRIORITY_DEFAULT);
	g_source_set_callback(src, job_deliver, job, job_free);
	g_source_attach(src, core->ctx);
	g_source_unref(src);
}

/* ---- the handle ------------------------------------------------------------- */

struct vr_monitor_worker *vr_monitor_worker_new(const char *name, struct vr_qemu_monitor *mon,
						GError **error)
{
	struct worker_core *core;
	struct vr_monitor_worker *w;
	struct tracked *t;

	g_return_val_if_fail(name != NULL && mon != NULL, NULL);

	core = g_atomic_rc_box_new0(struct worker_core);
	core->ctx = g_main_context_ref_thread_default();
	g_mutex_init(&core->lock);
	t = g_new0(struct tracked, 1);
	t->core = core;
	t->inner = mon;
	core->mon = vr_qemu_monitor_new(&tracked_ops, t, mon->target);
	core->mon->timeout_ms = mon->timeout_ms;
	if (!pool_get(error)) {
		g_prefix_error(error, "%s: cannot start the QEMU monitors' threads: ", name);
		core_unref(core);
		return NULL;
	}

	w = g_new0(struct vr_monitor_worker, 1);
	w->core = core;
	w->name = g_strdup(name);
	w->timeout_ms = MAX(mon->timeout_ms, 1);
	core->owner = w;
	return w;
}

gboolean vr_monitor_worker_submit(struct vr_monitor_worker *w, const char *what,
				  vr_monitor_job_fn run, vr_monitor_done_fn done, gpointer data,
				  GDestroyNotify free_data, gpointer user_data)
{
	struct job *job;

	g_return_val_if_fail(w != NULL && what != NULL && run != NULL, FALSE);

	if (w->busy) {
		g_debug("%s: the QEMU monitor is still busy with %s: no %s now", w->name, w->what,
			what);
		if (free_data)
			free_data(data);
		return FALSE;
	}
	job = g_new0(struct job, 1);
	job->core = core_ref(w->core);
	job->what = what;
	job->run = run;
	job->done = done;
	job->data = data;
	job->free_data = free_data;
	job->user_data = user_data;
	w->busy = TRUE;
	w->what = what;
	g_mutex_lock(&w->core->lock);
	w->core->running = TRUE;
	g_mutex_unlock(&w->core->lock);
	watchdog_arm(w, w->timeout_ms);
	g_thread_pool_push(pool, job, NULL); /* exclusive: its threads exist */
	return TRUE;
}

gboolean vr_monitor_worker_is_busy(const struct vr_monitor_worker *w)
{
	return w->busy;
}

const char *vr_monitor_worker_stall_reason(const struct vr_monitor_worker *w)
{
	return w->stall_reason;
}

guint64 vr_monitor_worker_get_stalls(const struct vr_monitor_worker *w)
{
	return w->stalls;
}

void vr_monitor_worker_set_name(struct vr_monitor_worker *w, const char *name)
{
	g_free(w->name);
	w->name = g_strdup(name);
}

void vr_monitor_worker_free(struct vr_monitor_worker *w)
{
	gboolean idle;

	if (!w)
		return;
	watchdog_stop(w);
	w->core->owner = NULL;
	/* The monitor is freed on a pool thread: by the job that runs, or by a
	 * quit job when none does. */
	g_mutex_lock(&w->core->lock);
	w->core->closing = TRUE;
	idle = !w->core->running;
	g_mutex_unlock(&w->core->lock);
	if (idle) {
		struct job *quit = g_new0(struct job, 1);
		quit->core = core_ref(w->core);
		quit->quit = TRUE;
		quit->what = "quit";
		g_thread_pool_push(pool, quit, NULL);
	}
	core_unref(w->core);
	g_free(w->stall_reason);
	g_free(w->name);
	g_free(w);
}
