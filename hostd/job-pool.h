/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Jobs off the main loop: the base that vreclaimd's blocking calls share
 * (libvirt's, in libvirt/libvirt-worker.c, and the QEMU monitors', in
 * qmp/monitor-worker.c), so that a peer that stops answering cannot block
 * the daemon's main loop.
 *
 * Two parts, like a workqueue and its work items:
 * - a *pool* (struct vr_job_pool): threads that run jobs; a few shared by
 *   many queues (the QEMU monitors) or one of a queue's own (libvirt), and
 *   more for a while when the owner says some are held (a stalled job);
 * - a *queue* (struct vr_job_queue): one owner's jobs, run one at a time and
 *   in submission order on the pool's threads, each answered on the main
 *   context that made the queue (its done callback), in the same order. The
 *   queue owns a *thread data* (a connection, a monitor) that only its jobs
 *   use, and frees it on a pool thread (closing it may block).
 *
 * What the owner decides (struct vr_job_queue_ops): what a job does and
 * what its answer means, and what to do with a job past its deadline. The
 * deadline of the oldest job not answered is the queue's timeout after its
 * submission or after the queue's last sign of life (a job started or
 * finished, or vr_job_queue_progress() from within a job), whichever is
 * later; the queue's watchdog asks the owner then (@overdue), who answers it
 * with an error at once (its result, when it comes, is dropped) or looks
 * again later. The stall state (why, since when, how many times) is kept
 * here; what it means, and its log lines, are the owner's.
 *
 * Threads: vr_job_queue_*() but vr_job_queue_progress() are called on the
 * main context only (the thread whose default context was current at
 * vr_job_queue_new()); the ops' @run on a pool thread, every other op on the
 * main context.
 *
 * Ownership: a job (struct vr_job, embedded first in the owner's own job
 * struct) is the queue's from submission on; its data is freed with it, on
 * whichever thread holds it last. With an answer given at the deadline the
 * job may still run: the done callback reads the data's inputs only.
 */
#pragma once

#include <glib.h>

struct vr_job_pool;
struct vr_job_queue;

/**
 * struct vr_job - one job, from submission to its answer; embedded as the
 * first member of the owner's job struct (the owner's callbacks get it back
 * with a cast).
 * @what:	what it does, for the log and the errors ("list-domains");
 *		static.
 * @data:	the job's data: inputs copied in by the submitter, outputs
 *		written by @run, read by the done callback.
 * @free_data:	frees @data (may be NULL), on whichever thread holds the job
 *		last.
 * @user_data:	the submitter's, for the done callback.
 * @error:	what the run failed with, set on the pool thread before the
 *		job goes back to the main context; NULL on success.
 * @submitted_us: when it was submitted (monotonic, us).
 *
 * The members below are job-pool.c's.
 * @ref:	references (atomic): the main context's pending list, the
 *		thread's queue or the answer on its way back.
 * @cancelled:	answered already by the main context (atomic): the thread
 *		skips it if it has not started it.
 * @ran:	the thread ran it (set before it goes back).
 * @answered:	its done callback ran or never will. Main context only.
 * @queue_core: the queue's shared part (a reference).
 */
struct vr_job {
	const char *what;
	gpointer data;
	GDestroyNotify free_data;
	gpointer user_data;
	GError *error;
	gint64 submitted_us;

	gint ref;
	gint cancelled;
	gboolean ran;
	gboolean answered;
	struct vr_job_queue_core *queue_core;
};

/**
 * struct vr_job_queue_ops - the owner's policy; static, outlives the queue.
 * @run:	the job's work, on a pool thread, with the queue's thread
 *		data. Return: TRUE, or FALSE with @error.
 * @returned:	(optional) the thread finished @job, on the main context,
 *		before its answer, even when the queue was freed meanwhile (the
 *		answer is dropped then): for what the owner counts per pool.
 * @done:	the job's answer, on the main context: @error is the run's
 *		(NULL on success) or the one @overdue gave (borrowed); @owner
 *		is the queue's. It may free the queue.
 * @overdue:	the oldest job not answered, @head, passed its deadline (main
 *		context); @running is the @what of the job the thread runs
 *		(static), NULL between jobs. Set
 *		@answer to answer @head with it now (the next head is asked in
 *		turn), or return in how many ms to look again; 0: not before
 *		the next answer.
 * @free_job:	(optional) frees the owner's job struct around @job once the
 *		queue let it go (@data and @error are freed already); any
 *		thread. g_free() when NULL.
 */
struct vr_job_queue_ops {
	gboolean (*run)(struct vr_job *job, gpointer thread_data, GError **error);
	void (*returned)(struct vr_job *job);
	void (*done)(struct vr_job *job, const GError *error, gpointer owner);
	guint (*overdue)(struct vr_job *head, const char *running, gpointer owner, GError **answer);
	void (*free_job)(struct vr_job *job);
};

/**
 * vr_job_pool_new() - threads that run queues' jobs.
 * @thread_name: the threads' name (15 characters at most: Linux cuts there);
 *		copied. NULL: GLib's ("pool-" and the program's name).
 * @threads:	how many threads (>= 1), made now and kept.
 * Return: owned, or NULL with @error when the threads cannot be made.
 */
struct vr_job_pool *vr_job_pool_new(const char *thread_name, guint threads, GError **error);

/**
 * vr_job_pool_add_threads() - @delta threads more (or fewer, < 0) than
 * vr_job_pool_new()'s, for as long as the owner knows some are held by
 * stalled jobs. Thread-safe.
 */
void vr_job_pool_add_threads(struct vr_job_pool *pool, gint delta);

/**
 * vr_job_pool_free() - end the pool's threads (NULL is fine), once every
 * queue on it was freed. @wait: wait for its threads to finish their work;
 * else they finish on their own and the pool is freed with the last.
 */
void vr_job_pool_free(struct vr_job_pool *pool, gboolean wait);

/**
 * vr_job_init() - fill in a job before vr_job_queue_submit() or
 * vr_job_queue_refuse(); members as in struct vr_job (the rest zeroed).
 * @job:	the first member of the owner's job struct, zeroed.
 */
void vr_job_init(struct vr_job *job, const char *what, gpointer data, GDestroyNotify free_data,
		 gpointer user_data);

/**
 * vr_job_queue_new() - a queue of jobs on @pool, answered on the calling
 * thread's default GMainContext.
 * @pool:	its threads; must outlive the queue's last job (free it after
 *		vr_job_queue_free()).
 * @timeout_ms: the deadline after a job's submission or the last sign of
 *		life, ms (>= 1).
 * @thread_data: passed to every job's @run; owned from here on and freed
 *		with @free_thread_data on a pool thread at vr_job_queue_free().
 * @ops:	the owner's policy; static.
 * @owner:	passed to @ops' done and overdue.
 * Return: owned (never NULL).
 */
struct vr_job_queue *vr_job_queue_new(struct vr_job_pool *pool, guint timeout_ms,
				      gpointer thread_data, GDestroyNotify free_thread_data,
				      const struct vr_job_queue_ops *ops, gpointer owner);

/**
 * vr_job_queue_submit() - queue @job (vr_job_init()), owned from here on:
 * @ops.run on a pool thread, then @ops.done on the main context, exactly
 * once and never from within this call (unless the queue is freed first:
 * then no callback runs).
 */
void vr_job_queue_submit(struct vr_job_queue *q, struct vr_job *job);

/**
 * vr_job_queue_refuse() - answer @job (vr_job_init(), owned from here on)
 * with @error (copied) from the main loop, without running it and out of
 * order (it never waits behind the others).
 */
void vr_job_queue_refuse(struct vr_job_queue *q, struct vr_job *job, const GError *error);

/**
 * vr_job_queue_progress() - on a pool thread, from within a job: a sign of
 * life (the peer answered a call), so the deadlines start again from now. A
 * job making many calls (a listing) calls it between them.
 */
void vr_job_queue_progress(void);

/** vr_job_queue_pending() - jobs submitted whose done callback has not run. */
guint vr_job_queue_pending(const struct vr_job_queue *q);

/**
 * vr_job_queue_stall() - the owner found the queue stalled because of
 * @reason (owned from here on). A stall keeps its first reason.
 * Return: TRUE when this starts a stall (counted), FALSE when one went on
 * already (@reason freed).
 */
gboolean vr_job_queue_stall(struct vr_job_queue *q, char *reason);

/**
 * vr_job_queue_recover() - the owner found the peer answering again.
 * @stalled_us:	(out, may be NULL) how long the stall lasted, us.
 * Return: TRUE when this ends a stall.
 */
gboolean vr_job_queue_recover(struct vr_job_queue *q, gint64 *stalled_us);

/**
 * vr_job_queue_stall_reason() - why the queue is stalled, or NULL when it
 * is not. Borrowed: valid until the next main-loop iteration.
 */
const char *vr_job_queue_stall_reason(const struct vr_job_queue *q);

/** vr_job_queue_get_stalls() - how many times the queue stalled. */
guint64 vr_job_queue_get_stalls(const struct vr_job_queue *q);

/**
 * vr_job_queue_free() - stop the queue (NULL is fine): no callback runs
 * from here on (but @ops.returned); the jobs not started are dropped with
 * their data; a pool thread frees the thread data once the running job
 * returns, or at once when none runs.
 * @wait_ms:	how long to wait for that, ms (0: not at all).
 * Return: whether the thread data was freed within @wait_ms.
 */
gboolean vr_job_queue_free(struct vr_job_queue *q, guint wait_ms);

/* "5 s" when @ms is whole seconds, else "1500 ms" (owned): for messages. */
char *vr_job_format_ms(guint ms);
