/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One way to run QMP commands on a guest's QEMU, whatever carries them: an
 * ops vtable (as mm/damon's struct damon_operations) with two transports,
 * our own QMP client on a socket (qmp.h) for QEMU started without libvirt,
 * and libvirt's virDomainQemuMonitorCommand for libvirt domains
 * (libvirt/qemu-passthrough.h). Both check
 * QEMU's reply the same way (vr_qmp_parse_message()), so a refused command
 * is VR_QMP_ERROR_COMMAND on either.
 *
 * Not thread-safe: one thread at a time per monitor. Every call blocks until
 * QEMU answers or the timeout passes, so vreclaimd never calls them on its
 * main loop: a monitor belongs to one domain's worker, whose jobs run on a
 * pool thread one at a time (monitor-worker.h), which hands the results back.
 */
#pragma once

#include <glib.h>
#include <json.h>

#include "qmp/qmp.h"

#define VR_QEMU_MONITOR_ERROR (vr_qemu_monitor_error_quark())
GQuark vr_qemu_monitor_error_quark(void);

/**
 * enum vr_qemu_monitor_error - failures of a transport itself (QEMU's
 * refusals and bad replies are VR_QMP_ERROR on every transport).
 * @VR_QEMU_MONITOR_ERROR_LIBVIRT: libvirt could not pass the command on;
 *				   the message names the domain and quotes
 *				   libvirt's reason.
 */
enum vr_qemu_monitor_error {
	VR_QEMU_MONITOR_ERROR_LIBVIRT,
};

/* The timeout the command helpers (qemu-commands.h) use unless the monitor
 * was made with another, ms: QMP queries answer in well under a second, and
 * the daemon must not hang on a stuck QEMU. */
#define VR_QEMU_MONITOR_DEFAULT_TIMEOUT_MS 5000

/**
 * struct vr_qemu_monitor_ops - a transport.
 * @name:	what it is ("qmp", "libvirt"), for messages.
 * @execute:	run @command with @args (borrowed, NULL for none) and give
 *		its "return" member in @ret (owned; @ret may be NULL);
 *		@timeout_ms bounds the wait where the transport can.
 *		FALSE with @error otherwise.
 * @connect:	optional: make sure the transport has a working connection,
 *		within @timeout_ms (the own client connects, or reconnects
 *		when its connection broke); NULL for transports without a
 *		connection of their own (vr_qemu_monitor_connect() is then
 *		TRUE).
 * @peer_pid:	optional: the process at the other end of the connection,
 *		0 when unknown (vr_qemu_monitor_get_peer_pid()); NULL: 0.
 * @free:	free @priv.
 */
struct vr_qemu_monitor_ops {
	const char *name;
	gboolean (*execute)(void *priv, const char *command, json_object *args, guint timeout_ms,
			    json_object **ret, GError **error);
	gboolean (*connect)(void *priv, guint timeout_ms, GError **error);
	pid_t (*peer_pid)(void *priv);
	void (*free)(void *priv);
};

/**
 * struct vr_qemu_monitor - a QEMU monitor behind some transport.
 * @ops:	the transport.
 * @target:	what it talks to, for messages: the socket path or the
 *		libvirt domain's name.
 * @timeout_ms: the timeout the command helpers pass to
 *		vr_qemu_monitor_execute(), ms (VR_QEMU_MONITOR_DEFAULT_TIMEOUT_MS
 *		unless set otherwise; may be changed by the owner).
 *
 * private:
 * @priv:	the transport's state, owned.
 */
struct vr_qemu_monitor {
	const struct vr_qemu_monitor_ops *ops;
	char *target;
	guint timeout_ms;
	/* private: */
	void *priv;
};
typedef struct vr_qemu_monitor vr_qemu_monitor;

/**
 * vr_qemu_monitor_new() - a monitor over the transport @ops with its state
 * @priv (ownership passes to the monitor). For other transports, and for
 * tests that answer with canned replies.
 * @target:	what it talks to, for messages (copied).
 */
struct vr_qemu_monitor *vr_qemu_monitor_new(const struct vr_qemu_monitor_ops *ops, void *priv,
					    const char *target);

/**
 * vr_qemu_monitor_new_qmp() - a monitor over our own QMP client, connected
 * to the socket @path within @timeout_ms (also the monitor's @timeout_ms).
 *
 * When the connection is found broken or closed before a command (an
 * earlier timeout, QEMU dropped it), the monitor reconnects once, then sends
 * the command; a command that fails once sent is not repeated (QEMU may
 * have run it), the next one reconnects.
 * Return: owned monitor, or NULL with @error (vr_qmp_connect()).
 */
struct vr_qemu_monitor *vr_qemu_monitor_new_qmp(const char *path, guint timeout_ms, GError **error);

/**
 * vr_qemu_monitor_new_qmp_unconnected() - vr_qemu_monitor_new_qmp() that
 * does not connect yet: the first vr_qemu_monitor_connect() or command
 * does, on the thread that uses the monitor (a worker's, so that a QEMU that
 * greets slowly blocks no one else).
 * Return: owned monitor.
 */
struct vr_qemu_monitor *vr_qemu_monitor_new_qmp_unconnected(const char *path, guint timeout_ms);

/**
 * vr_qemu_monitor_execute() - run @command with @args (borrowed, NULL for
 * none), waiting up to @timeout_ms (own QMP client only).
 * @ret:	when not NULL, the reply's "return" member (owned).
 * Return: TRUE, or FALSE with @error: VR_QMP_ERROR_COMMAND when QEMU refused
 * @command ("QEMU refused <command>: <class>: <desc>"), VR_QMP_ERROR for
 * other failures of the QMP client (naming its socket; after a timeout the
 * next call reconnects), VR_QEMU_MONITOR_ERROR_LIBVIRT naming the domain.
 */
gboolean vr_qemu_monitor_execute(struct vr_qemu_monitor *mon, const char *command,
				 json_object *args, guint timeout_ms, json_object **ret,
				 GError **error);

/**
 * vr_qemu_monitor_connect() - make sure @mon has a working connection,
 * within @mon->timeout_ms: the own client connects (or reconnects when its
 * connection broke); other transports have nothing to do.
 * Return: TRUE, or FALSE with @error (vr_qmp_connect()'s).
 */
gboolean vr_qemu_monitor_connect(struct vr_qemu_monitor *mon, GError **error);

/**
 * vr_qemu_monitor_get_peer_pid() - the QEMU process behind a monitor of
 * vr_qemu_monitor_new_qmp(): vr_qmp_get_peer_pid() of its current
 * connection (after a reconnect, of the new one: possibly another QEMU on
 * the same path); the transport's @peer_pid op.
 * Return: the pid; 0 when unknown, when not connected, and for transports
 * without the op (libvirt knows its QEMU's pid itself).
 */
pid_t vr_qemu_monitor_get_peer_pid(struct vr_qemu_monitor *mon);

/** vr_qemu_monitor_free() - free @mon and its transport (NULL is fine). */
void vr_qemu_monitor_free(struct vr_qemu_monitor *mon);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_qemu_monitor, vr_qemu_monitor_free)
