/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A QEMU monitor's worker: the QEMU monitors' policy over the job pool
 * (job-pool.h) that runs the jobs, answers them on the main context and
 * watches them. See monitor-worker.h.
 *
 * What is the monitors' here: one pool for every worker of the process,
 * WORKER_POOL_THREADS threads (a thread per domain was a thousand idle
 * threads and 30 MiB for a thousand domains), one more for each job the
 * watchdog found stalled while it still runs, so that stalled QEMUs hold
 * their own threads and the others are served as usual (libvirt's
 * passthrough has no timeout: its command may hold a thread for as long as
 * libvirt waits); one job at a time per worker; the monitor as the queue's
 * thread data, wrapped to time each command, freed on a pool thread; the
 * watchdog's rule (a *command* past the monitor's timeout is a stall, the
 * job goes on), and what a result says of QEMU (worker_judge()).
 */
#include "qmp/monitor-worker.h"

#include <gio/gio.h>
#include <string.h>

#include "job-pool.h"

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
 * struct mw_job - one job: the pool's part and the monitors'.
 * @base:	the pool's part (first: job-pool.c hands it back).
 * @run, @done:	as submitted.
 * @slowest_us, @slowest: its longest command and that command's name (set
 *		on the pool thread before the job goes back).
 * @stall_counted: the watchdog found it stalled and counted it in the
 *		pool's threads. Main context only.
 */
struct mw_job {
	struct vr_job base;
	vr_monitor_job_fn run;
	vr_monitor_done_fn done;
	gint64 slowest_us;
	char slowest[WORKER_COMMAND_SIZE];
	gboolean stall_counted;
};

/**
 * struct tracked - the tracking transport around the worker's monitor: each
 * command's start and end, for the watchdog.
 * @inner:	the monitor it wraps, owned.
 * @lock:	guards @command_since_us and @command.
 * @command_since_us: monotonic time the running command was sent, 0 when
 *		none runs (between commands, between jobs). Under @lock.
 * @command:	its name. Under @lock.
 * @slowest_us, @slowest: the longest command of the running job and its
 *		name. The running job's thread only.
 *
 * Freed with the monitor, on a pool thread, after vr_monitor_worker_free():
 * the main context reads it (under @lock) only before.
 */
struct tracked {
	struct vr_qemu_monitor *inner;
	GMutex lock;
	gint64 command_since_us;
	char command[WORKER_COMMAND_SIZE];
	gint64 slowest_us;
	char slowest[WORKER_COMMAND_SIZE];
};

/**
 * struct vr_monitor_worker - the main context's handle on a worker.
 * @queue:	its jobs, on the process's pool.
 * @tracked:	the state of its monitor's tracking transport (borrowed: the
 *		queue's thread data owns it).
 * @name:	what it serves, for the log.
 * @timeout_ms:	each command's deadline, ms (the monitor's timeout_ms).
 * @what:	the outstanding job's @what, NULL when none is.
 */
struct vr_monitor_worker {
	struct vr_job_queue *queue;
	struct tracked *tracked;
	char *name;
	guint timeout_ms;
	const char *what;
};

/* ---- the pool --------------------------------------------------------- */

/* The pool of every worker of the process, made at the first worker. */
G_LOCK_DEFINE_STATIC(pool);
static struct vr_job_pool *pool;

static struct vr_job_pool *pool_get(GError **error)
{
	struct vr_job_pool *p;

	G_LOCK(pool);
	if (!pool)
		pool = vr_job_pool_new(NULL, WORKER_POOL_THREADS, error); /* pool-vreclaimd */
	p = pool;
	G_UNLOCK(pool);
	return p;
}

/* ---- the tracked monitor ------------------------------------------------- */

static gint64 track_begin(struct tracked *t, const char *command)
{
	/* Never 0: that means "no command runs". */
	gint64 now = MAX(g_get_monotonic_time(), 1);

	g_mutex_lock(&t->lock);
	t->command_since_us = now;
	g_strlcpy(t->command, command, sizeof(t->command));
	g_mutex_unlock(&t->lock);
	return now;
}

static void track_end(struct tracked *t, const char *command, gint64 since_us)
{
	gint64 took_us = g_get_monotonic_time() - since_us;

	g_mutex_lock(&t->lock);
	t->command_since_us = 0;
	t->command[0] = '\0';
	g_mutex_unlock(&t->lock);
	if (took_us > t->slowest_us) {
		t->slowest_us = took_us;
		g_strlcpy(t->slowest, command, sizeof(t->slowest));
	}
}

static gboolean tracked_execute(void *priv, const char *command, json_object *args,
				guint timeout_ms, json_object **ret, GError **error)
{
	struct tracked *t = priv;
	gint64 since_us = track_begin(t, command);
	gboolean ok = vr_qemu_monitor_execute(t->inner, command, args, timeout_ms, ret, error);

	track_end(t, command, since_us);
	return ok;
}

static gboolean tracked_connect(void *priv, guint timeout_ms, GError **error)
{
	struct tracked *t = priv;
	gint64 since_us = track_begin(t, WORKER_CONNECT);
	gboolean ok;

	t->inner->timeout_ms = timeout_ms;
	ok = vr_qemu_monitor_connect(t->inner, error);
	track_end(t, WORKER_CONNECT, since_us);
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
	g_mutex_clear(&t->lock);
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

/* The reason of a stall on @command (WORKER_CONNECT for the greeting). */
static char *no_answer_reason(const struct vr_monitor_worker *w, const char *command)
{
	g_autofree char *limit = vr_job_format_ms(w->timeout_ms);

	if (!strcmp(command, WORKER_CONNECT))
		return g_strdup_printf("the QEMU monitor did not greet within %s", limit);
	return g_strdup_printf("the QEMU monitor did not answer %s within %s", command, limit);
}

/* Stalled because of @reason_owned; a stall keeps its first reason. */
static void worker_stall(struct vr_monitor_worker *w, char *reason_owned)
{
	g_autofree char *reason = reason_owned;

	if (vr_job_queue_stall_reason(w->queue)) {
		g_debug("%s: still degraded: %s", w->name, reason);
		return;
	}
	g_warning("%s: %s: degraded until it answers (the other domains are served as usual)",
		  w->name, reason);
	vr_job_queue_stall(w->queue, g_steal_pointer(&reason));
}

static void worker_recover(struct vr_monitor_worker *w)
{
	gint64 stalled_us;

	if (vr_job_queue_recover(w->queue, &stalled_us))
		g_message("%s: the QEMU monitor answers again (degraded for %.1f s)", w->name,
			  (double)stalled_us / G_USEC_PER_SEC);
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
static void worker_judge(struct vr_monitor_worker *w, const struct mw_job *job)
{
	gint64 timeout_us = (gint64)w->timeout_ms * 1000;
	const GError *error = job->base.error;

	if (g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT)) {
		/* The command that timed out is the slowest: the watchdog's
		 * words, whichever of the two saw it first. */
		g_debug("%s: %s", w->name, error->message);
		worker_stall(w,
			     no_answer_reason(w, job->slowest[0] ? job->slowest : job->base.what));
	} else if (job->slowest_us > timeout_us) {
		if (!vr_job_queue_stall_reason(w->queue)) {
			g_autofree char *limit = vr_job_format_ms(w->timeout_ms);
			worker_stall(w, g_strdup_printf("the QEMU monitor answered %s only after "
							"%.1f s (deadline %s)",
							job->slowest,
							(double)job->slowest_us / G_USEC_PER_SEC,
							limit));
		}
	} else if (!error_is_unreachable(error)) {
		worker_recover(w);
	}
}

/* ---- the policy, for the job pool ----------------------------------------- */

static gboolean mw_run(struct vr_job *job, gpointer thread_data, GError **error)
{
	struct mw_job *j = (struct mw_job *)job;
	struct vr_qemu_monitor *mon = thread_data;
	struct tracked *t = mon->priv;
	gboolean ok;

	t->slowest_us = 0;
	t->slowest[0] = '\0';
	ok = j->run(mon, job->data, error);
	if (!ok && error && !*error)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "the QEMU monitor job %s failed without saying why", job->what);
	j->slowest_us = t->slowest_us;
	g_strlcpy(j->slowest, t->slowest, sizeof(j->slowest));
	return ok;
}

/* The job's thread is free again: the pool has one fewer held. */
static void mw_returned(struct vr_job *job)
{
	struct mw_job *j = (struct mw_job *)job;

	if (j->stall_counted) {
		j->stall_counted = FALSE;
		vr_job_pool_add_threads(pool, -1);
	}
}

static void mw_done(struct vr_job *job, const GError *error, gpointer owner)
{
	struct mw_job *j = (struct mw_job *)job;
	struct vr_monitor_worker *w = owner;

	w->what = NULL;
	worker_judge(w, j);
	/* Last: the callback may free @w. */
	if (j->done)
		j->done(w, job->data, error, job->user_data);
}

/*
 * The job has had its time: if its running command has too, a stall (the
 * result says the rest), else come back when it will have (or a deadline
 * later when none runs: between two commands, or before the first).
 */
static guint mw_overdue(struct vr_job *head, const char *running, gpointer owner, GError **answer)
{
	struct mw_job *j = (struct mw_job *)head;
	struct vr_monitor_worker *w = owner;
	struct tracked *t = w->tracked;
	gint64 timeout_us = (gint64)w->timeout_ms * 1000;
	gint64 now = g_get_monotonic_time();
	char command[WORKER_COMMAND_SIZE];
	gint64 since_us;

	(void)running;
	(void)answer; /* the job goes on: our client times out by itself */
	g_mutex_lock(&t->lock);
	since_us = t->command_since_us;
	g_strlcpy(command, t->command, sizeof(command));
	g_mutex_unlock(&t->lock);
	if (since_us && now - since_us >= timeout_us) {
		if (!j->stall_counted) {
			j->stall_counted = TRUE;
			vr_job_pool_add_threads(pool, 1);
		}
		worker_stall(w, no_answer_reason(w, command));
		return 0;
	}
	return since_us ? (guint)((since_us + timeout_us - now + 999) / 1000) : w->timeout_ms;
}

/* The queue's thread data: the tracked monitor, freed on a pool thread. */
static void mw_monitor_free(gpointer mon)
{
	vr_qemu_monitor_free(mon);
}

static const struct vr_job_queue_ops mw_queue_ops = {
	.run = mw_run,
	.returned = mw_returned,
	.done = mw_done,
	.overdue = mw_overdue,
};

/* ---- the handle ------------------------------------------------------------- */

struct vr_monitor_worker *vr_monitor_worker_new(const char *name, struct vr_qemu_monitor *mon,
						GError **error)
{
	struct vr_qemu_monitor *tracked_mon;
	struct vr_monitor_worker *w;
	struct vr_job_pool *p;
	struct tracked *t;

	g_return_val_if_fail(name != NULL && mon != NULL, NULL);

	t = g_new0(struct tracked, 1);
	t->inner = mon;
	g_mutex_init(&t->lock);
	tracked_mon = vr_qemu_monitor_new(&tracked_ops, t, mon->target);
	tracked_mon->timeout_ms = mon->timeout_ms;
	p = pool_get(error);
	if (!p) {
		g_prefix_error(error, "%s: cannot start the QEMU monitors' threads: ", name);
		vr_qemu_monitor_free(tracked_mon);
		return NULL;
	}

	w = g_new0(struct vr_monitor_worker, 1);
	w->tracked = t;
	w->name = g_strdup(name);
	w->timeout_ms = MAX(mon->timeout_ms, 1);
	/* Freed on a pool thread: closing libvirt's domain reference may talk
	 * to libvirtd. */
	w->queue =
		vr_job_queue_new(p, w->timeout_ms, tracked_mon, mw_monitor_free, &mw_queue_ops, w);
	return w;
}

gboolean vr_monitor_worker_submit(struct vr_monitor_worker *w, const char *what,
				  vr_monitor_job_fn run, vr_monitor_done_fn done, gpointer data,
				  GDestroyNotify free_data, gpointer user_data)
{
	struct mw_job *job;

	g_return_val_if_fail(w != NULL && what != NULL && run != NULL, FALSE);

	if (vr_monitor_worker_is_busy(w)) {
		g_debug("%s: the QEMU monitor is still busy with %s: no %s now", w->name, w->what,
			what);
		if (free_data)
			free_data(data);
		return FALSE;
	}
	job = g_new0(struct mw_job, 1);
	vr_job_init(&job->base, what, data, free_data, user_data);
	job->run = run;
	job->done = done;
	w->what = what;
	vr_job_queue_submit(w->queue, &job->base);
	return TRUE;
}

gboolean vr_monitor_worker_is_busy(const struct vr_monitor_worker *w)
{
	return vr_job_queue_pending(w->queue) > 0;
}

const char *vr_monitor_worker_stall_reason(const struct vr_monitor_worker *w)
{
	return vr_job_queue_stall_reason(w->queue);
}

guint64 vr_monitor_worker_get_stalls(const struct vr_monitor_worker *w)
{
	return vr_job_queue_get_stalls(w->queue);
}

void vr_monitor_worker_set_name(struct vr_monitor_worker *w, const char *name)
{
	g_free(w->name);
	w->name = g_strdup(name);
}

void vr_monitor_worker_free(struct vr_monitor_worker *w)
{
	if (!w)
		return;
	/* Returns at once: a pool thread frees the monitor after the job
	 * that runs, or now when none does. */
	vr_job_queue_free(w->queue, 0);
	g_free(w->name);
	g_free(w);
}
