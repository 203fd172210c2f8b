/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The thread that makes vreclaimd's libvirt calls, so that a libvirtd that
 * stops answering cannot block the daemon's main loop.
 *
 * Every libvirt call that may talk to libvirtd (opening the connection,
 * registering for events, listing domains, reading their XML and metadata,
 * writing metadata, looking a domain up) blocks until libvirtd answers,
 * and a stopped libvirtd never does: a connection that is already open is
 * declared dead by libvirt's keepalive after about 20 s, virConnectOpen()
 * waits for ever. The worker runs such calls as jobs on its own thread, one
 * at a time and in order, and hands each result back to the main context
 * (a queue of the job pool, job-pool.h, on a pool of one thread).
 *
 * Deadlines: a job is answered within the worker's timeout of its
 * submission or of the thread's last sign of life, whichever is later (a
 * job started or finished, or vr_libvirt_worker_progress() between two
 * libvirt calls of a long job): a healthy libvirt working through a long
 * queue, or a listing of a thousand domains, never times out; a libvirt
 * call that takes longer than the timeout does. A job not done by its
 * deadline is answered at once on the main context with
 * VR_LIBVIRT_WORKER_ERROR_TIMEOUT and marked cancelled: a job that has not
 * started yet is skipped by the thread, one that runs finishes in its own
 * time and its result is dropped. The worker is then *stalled* ("libvirt
 * did not answer list-domains within 5 s", naming the job that holds the
 * thread); a job answered in time ends the stall. The owner hears of both
 * transitions (struct vr_libvirt_worker_ops), to mark the connection
 * degraded in the status and to probe libvirt until it answers.
 *
 * Order: done callbacks run in the order the jobs were submitted, whether a
 * job was answered or timed out (one thread runs the jobs in order, and
 * jobs time out from the oldest), except a BUSY refusal, answered at once.
 *
 * Ownership: the submitter copies a job's inputs into its data, the job
 * writes its outputs there, and the done callback reads them; with a
 * TIMEOUT error the job may still be running, so the done callback must
 * read the inputs only. The thread data given to vr_libvirt_worker_new()
 * (the libvirt connection) is the thread's alone and is freed on it.
 */
#pragma once

#include <glib.h>

#define VR_LIBVIRT_WORKER_ERROR (vr_libvirt_worker_error_quark())
GQuark vr_libvirt_worker_error_quark(void);

/**
 * enum vr_libvirt_worker_error - error codes of VR_LIBVIRT_WORKER_ERROR.
 * @VR_LIBVIRT_WORKER_ERROR_TIMEOUT: the job was not done within the
 *				     worker's timeout.
 * @VR_LIBVIRT_WORKER_ERROR_BUSY:    too many jobs wait already
 *				     (VR_LIBVIRT_WORKER_MAX_QUEUED).
 */
enum vr_libvirt_worker_error {
	VR_LIBVIRT_WORKER_ERROR_TIMEOUT,
	VR_LIBVIRT_WORKER_ERROR_BUSY,
};

/* Jobs waiting or running at most: the daemon keeps a few outstanding (one
 * listing, one probe, a lookup per domain, one per domain event or
 * vreclaimctl set); more means libvirt stopped answering long ago. */
#define VR_LIBVIRT_WORKER_MAX_QUEUED 1024

/* How long vr_libvirt_worker_free() waits for the thread to finish its job
 * and exit, ms; a thread blocked in libvirt for longer is left to finish on
 * its own (logged). */
#define VR_LIBVIRT_WORKER_JOIN_MS 2000

struct vr_libvirt_worker;
typedef struct vr_libvirt_worker vr_libvirt_worker;

/**
 * vr_libvirt_job_fn - a job's work, on the worker thread.
 * @thread_data: the worker's thread data (vr_libvirt_worker_new()).
 * @data:	 the job's data: inputs copied in by the submitter, outputs
 *		 written here for the done callback.
 * Return: TRUE, or FALSE with @error (handed to the done callback).
 */
typedef gboolean (*vr_libvirt_job_fn)(gpointer thread_data, gpointer data, GError **error);

/**
 * vr_libvirt_done_fn - a job's result, on the main context.
 * @w:		the worker.
 * @data:	the job's data (freed after the callback; with a TIMEOUT
 *		error only its inputs may be read).
 * @error:	NULL when the job returned TRUE, else its error, or a
 *		VR_LIBVIRT_WORKER_ERROR one (borrowed).
 * @user_data:	the submitter's.
 */
typedef void (*vr_libvirt_done_fn)(struct vr_libvirt_worker *w, gpointer data, const GError *error,
				   gpointer user_data);

/**
 * struct vr_libvirt_worker_ops - what the owner hears, on the main context.
 * @stalled:	a job ran past its deadline: @reason says which ("libvirt
 *		did not answer list-domains within 5 s").
 * @recovered:	a job was answered within its deadline after a stall;
 *		@stalled_us is how long the stall lasted, us.
 */
struct vr_libvirt_worker_ops {
	void (*stalled)(const char *reason, gpointer user_data);
	void (*recovered)(gint64 stalled_us, gpointer user_data);
};

/**
 * vr_libvirt_worker_new() - a worker thread, delivering results to the
 * calling thread's default GMainContext.
 * @name:	what it serves, for the log ("libvirt at qemu:///system").
 * @timeout_ms:	how long a job may wait without the thread showing life,
 *		ms (>= 1): see "Deadlines" above.
 * @thread_data: passed to every job; owned from here on (on failure too)
 *		and freed with @free_thread_data on the thread when it exits.
 * @ops:	the owner's callbacks (may be NULL); must outlive the worker.
 * @user_data:	for @ops.
 * Return: owned, or NULL with @error when no thread can be made.
 */
struct vr_libvirt_worker *vr_libvirt_worker_new(const char *name, guint timeout_ms,
						gpointer thread_data,
						GDestroyNotify free_thread_data,
						const struct vr_libvirt_worker_ops *ops,
						gpointer user_data, GError **error);

/**
 * vr_libvirt_worker_submit() - queue a job: @run on the worker thread, then
 * @done on the main context, exactly once and never from within this call
 * (unless the worker is freed first: then no callback runs). @done may
 * free the worker.
 * @what:	what the job does, for the log and the errors ("list-domains");
 *		static.
 * @data:	the job's data, owned from here on; freed with @free_data (may
 *		be NULL) on whichever thread holds it last.
 * @user_data:	for @done.
 */
void vr_libvirt_worker_submit(struct vr_libvirt_worker *w, const char *what, vr_libvirt_job_fn run,
			      vr_libvirt_done_fn done, gpointer data, GDestroyNotify free_data,
			      gpointer user_data);

/**
 * vr_libvirt_worker_progress() - on the worker thread, from within a job:
 * libvirt answered a call, so the job's deadline (and the queued jobs')
 * starts again from now. A job making many calls (a listing) calls it
 * between them.
 */
void vr_libvirt_worker_progress(void);

/** vr_libvirt_worker_pending() - jobs submitted whose done callback has not run. */
guint vr_libvirt_worker_pending(const struct vr_libvirt_worker *w);

/**
 * vr_libvirt_worker_stall_reason() - why the worker is stalled, or NULL when
 * it is not. Borrowed: valid until the next main-loop iteration.
 */
const char *vr_libvirt_worker_stall_reason(const struct vr_libvirt_worker *w);

/** vr_libvirt_worker_get_stalls() - how many times the worker stalled. */
guint64 vr_libvirt_worker_get_stalls(const struct vr_libvirt_worker *w);

/** vr_libvirt_worker_get_timeouts() - how many jobs timed out. */
guint64 vr_libvirt_worker_get_timeouts(const struct vr_libvirt_worker *w);

/**
 * vr_libvirt_worker_free() - stop the worker (NULL is fine): no callback
 * runs from here on (the jobs still queued are dropped with their data);
 * the thread finishes its current job, frees its thread data and exits.
 * Waits for that up to VR_LIBVIRT_WORKER_JOIN_MS, then lets the thread
 * finish on its own (a libvirtd that never answers), with a warning.
 * Return: whether the thread exited in time.
 */
gboolean vr_libvirt_worker_free(struct vr_libvirt_worker *w);

static inline void vr_libvirt_worker_free_void(struct vr_libvirt_worker *w)
{
	vr_libvirt_worker_free(w);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_libvirt_worker, vr_libvirt_worker_free_void)
