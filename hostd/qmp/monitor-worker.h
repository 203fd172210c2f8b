/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * QEMU monitor commands off the main loop, so that nothing QEMU does can
 * block the daemon.
 *
 * Every call on a vr_qemu_monitor blocks until QEMU answers (our own client
 * up to its timeout; libvirt's virDomainQemuMonitorCommand for as long as it
 * takes). A worker owns one domain's monitor and runs that domain's monitor
 * jobs (the probe of a --qmp QEMU, the balloon's query and target, the RAM
 * map) on a thread of a pool that every worker of the process shares, one
 * at a time (a queue of the job pool, job-pool.h); each job's result is
 * handed back to the main context, where the daemon applies it. A domain has at most one job outstanding: the tick
 * asks vr_monitor_worker_is_busy() and queues nothing more while QEMU has
 * not answered (no pile-up). The pool has a few threads, and one more for
 * each job the watchdog found stalled while it runs: stalled QEMUs cannot
 * take the threads of the others.
 *
 * Ownership: the submitter copies a job's inputs into its data, the job
 * writes its outputs there, and the main context reads them only in the
 * job's done callback; the pool thread touches nothing else (domain
 * structs are main-loop-only). The monitor is the worker's jobs' from
 * vr_monitor_worker_new() on, used by one pool thread at a time.
 *
 * Deadlines: each command has @mon->timeout_ms. Our own client fails a
 * command past it by itself (VR_QMP_ERROR_TIMEOUT); libvirt's cannot be
 * interrupted, so a watchdog on the main context checks the command that
 * runs and, once it has run longer than the timeout, marks the worker
 * *stalled* ("the QEMU monitor did not answer query-balloon within 2 s"):
 * `vreclaimctl status` shows the domain degraded, with that reason. A job
 * whose commands all got an answer in time ends the stall (QEMU answers
 * again). Both transitions are logged here.
 *
 * Lifetime: vr_monitor_worker_free() returns at once, whatever its job is
 * doing; from then on no callback is called (a late result is dropped, with
 * its data freed), and a pool thread frees the monitor after the job that
 * runs (bounded by the timeout for our own client, by libvirt for its
 * passthrough), or at once when none does.
 */
#pragma once

#include <glib.h>

#include "qmp/qemu-monitor.h"

struct vr_monitor_worker;
typedef struct vr_monitor_worker vr_monitor_worker;

/**
 * vr_monitor_job_fn - a job's work, on a pool thread.
 * @mon:	the worker's monitor (the job may run several commands; each
 *		waits up to @mon->timeout_ms).
 * @data:	the job's data: inputs copied in by the submitter, outputs
 *		written here for the done callback.
 * Return: TRUE, or FALSE with @error (handed to the done callback).
 */
typedef gboolean (*vr_monitor_job_fn)(struct vr_qemu_monitor *mon, gpointer data, GError **error);

/**
 * vr_monitor_done_fn - a job's result, on the main context.
 * @w:		the worker (the callback may free it).
 * @data:	the job's data as the job left it (freed after the callback).
 * @error:	NULL when the job returned TRUE, else its error (borrowed).
 * @user_data:	the submitter's.
 */
typedef void (*vr_monitor_done_fn)(struct vr_monitor_worker *w, gpointer data, const GError *error,
				   gpointer user_data);

/**
 * vr_monitor_worker_new() - a worker for @mon (owned from here on, on
 * failure too), delivering results to the calling thread's default
 * GMainContext.
 * @name:	what the worker serves, for the log ("a domain name", "QMP
 *		socket PATH"); copied.
 * Return: owned, or NULL with @error when the pool's threads cannot be
 * made (the first worker makes them).
 */
struct vr_monitor_worker *vr_monitor_worker_new(const char *name, struct vr_qemu_monitor *mon,
						GError **error);

/**
 * vr_monitor_worker_submit() - queue a job: @run on a pool thread, then
 * @done on the main context (unless the worker is freed first).
 * @what:	what the job does, for the log ("balloon", "probe"); static.
 * @data:	the job's data, owned from here on; freed with @free_data
 *		(may be NULL) on whatever thread holds it last.
 * @user_data:	for @done.
 *
 * Only one job at a time: call it only when vr_monitor_worker_is_busy() is
 * FALSE.
 * Return: TRUE; FALSE (and @data freed) when a job is outstanding.
 */
gboolean vr_monitor_worker_submit(struct vr_monitor_worker *w, const char *what,
				  vr_monitor_job_fn run, vr_monitor_done_fn done, gpointer data,
				  GDestroyNotify free_data, gpointer user_data);

/**
 * vr_monitor_worker_is_busy() - whether a job is outstanding (queued,
 * running, or its result not yet delivered).
 */
gboolean vr_monitor_worker_is_busy(const struct vr_monitor_worker *w);

/**
 * vr_monitor_worker_stall_reason() - why the worker is stalled ("the QEMU
 * monitor did not answer query-balloon within 2 s"), or NULL when it is not:
 * the domain is degraded while this is not NULL. Borrowed: valid until the
 * next main-loop iteration.
 */
const char *vr_monitor_worker_stall_reason(const struct vr_monitor_worker *w);

/** vr_monitor_worker_get_stalls() - how many times the worker stalled. */
guint64 vr_monitor_worker_get_stalls(const struct vr_monitor_worker *w);

/** vr_monitor_worker_set_name() - rename @w in its log lines (copied). */
void vr_monitor_worker_set_name(struct vr_monitor_worker *w, const char *name);

/**
 * vr_monitor_worker_free() - let the worker go without waiting (NULL is
 * fine): no callback runs after this; a pool thread frees the monitor once
 * the job that runs returns.
 */
void vr_monitor_worker_free(struct vr_monitor_worker *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_monitor_worker, vr_monitor_worker_free)
