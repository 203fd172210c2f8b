/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU monitor interface and its transport over our own QMP client
 * (reconnecting once when it finds the connection broken); libvirt's QEMU
 * monitor passthrough is libvirt/qemu-passthrough.c. See qemu-monitor.h.
 */
#include "qmp/qemu-monitor.h"

#include <stdlib.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-qemu-monitor-error-quark, vr_qemu_monitor_error)
/* clang-format on */

struct vr_qemu_monitor *vr_qemu_monitor_new(const struct vr_qemu_monitor_ops *ops, void *priv,
					    const char *target)
{
	struct vr_qemu_monitor *mon = g_new0(struct vr_qemu_monitor, 1);

	mon->ops = ops;
	mon->priv = priv;
	mon->target = g_strdup(target);
	mon->timeout_ms = VR_QEMU_MONITOR_DEFAULT_TIMEOUT_MS;
	return mon;
}

gboolean vr_qemu_monitor_execute(struct vr_qemu_monitor *mon, const char *command,
				 json_object *args, guint timeout_ms, json_object **ret,
				 GError **error)
{
	g_return_val_if_fail(mon && command && *command, FALSE);
	g_return_val_if_fail(!args || json_object_is_type(args, json_type_object), FALSE);

	return mon->ops->execute(mon->priv, command, args, timeout_ms, ret, error);
}

void vr_qemu_monitor_free(struct vr_qemu_monitor *mon)
{
	if (!mon)
		return;
	if (mon->ops->free)
		mon->ops->free(mon->priv);
	g_free(mon->target);
	g_free(mon);
}

/* --- our own QMP client -------------------------------------------------- */

/**
 * struct qmp_transport - the state of the own-client transport.
 * @path:	QEMU's QMP socket.
 * @qmp:	the connection, NULL before the first connect and after a
 *		failed reconnect.
 * @connected_once: whether a connection was made before (a new one is a
 *		reconnect, logged as such).
 */
struct qmp_transport {
	char *path;
	struct vr_qmp *qmp;
	gboolean connected_once;
};

static gboolean qmp_transport_connect(void *priv, guint timeout_ms, GError **error)
{
	struct qmp_transport *t = priv;
	g_autoptr(GError) why = NULL;

	/* vr_qmp_poll() sends nothing: a connection found bad here cannot have
	 * run a command that is about to be sent, so a new one may. */
	if (t->qmp && vr_qmp_poll(t->qmp, &why))
		return TRUE;
	if (t->connected_once)
		g_info("reconnecting to QEMU's monitor at %s: %s", t->path,
		       why ? why->message : "the last attempt failed");
	else
		g_debug("connecting to QEMU's monitor at %s", t->path);
	g_clear_pointer(&t->qmp, vr_qmp_free);
	t->qmp = vr_qmp_connect(t->path, timeout_ms, error);
	if (!t->qmp)
		return FALSE;
	t->connected_once = TRUE;
	return TRUE;
}

static gboolean qmp_transport_execute(void *priv, const char *command, json_object *args,
				      guint timeout_ms, json_object **ret, GError **error)
{
	struct qmp_transport *t = priv;

	if (!qmp_transport_connect(t, timeout_ms, error)) {
		g_prefix_error(error, "cannot run %s: ", command);
		return FALSE;
	}
	return vr_qmp_execute(t->qmp, command, args, timeout_ms, ret, error);
}

static pid_t qmp_transport_peer_pid(void *priv)
{
	struct qmp_transport *t = priv;

	return t->qmp ? vr_qmp_get_peer_pid(t->qmp) : 0;
}

static void qmp_transport_free(void *priv)
{
	struct qmp_transport *t = priv;

	vr_qmp_free(t->qmp);
	g_free(t->path);
	g_free(t);
}

static const struct vr_qemu_monitor_ops qmp_transport_ops = {
	.name = "qmp",
	.execute = qmp_transport_execute,
	.connect = qmp_transport_connect,
	.peer_pid = qmp_transport_peer_pid,
	.free = qmp_transport_free,
};

struct vr_qemu_monitor *vr_qemu_monitor_new_qmp_unconnected(const char *path, guint timeout_ms)
{
	struct qmp_transport *t;
	struct vr_qemu_monitor *mon;

	g_return_val_if_fail(path != NULL, NULL);
	t = g_new0(struct qmp_transport, 1);
	t->path = g_strdup(path);
	mon = vr_qemu_monitor_new(&qmp_transport_ops, t, path);
	mon->timeout_ms = timeout_ms;
	return mon;
}

struct vr_qemu_monitor *vr_qemu_monitor_new_qmp(const char *path, guint timeout_ms, GError **error)
{
	g_autoptr(vr_qemu_monitor) mon = vr_qemu_monitor_new_qmp_unconnected(path, timeout_ms);

	if (!vr_qemu_monitor_connect(mon, error))
		return NULL;
	return g_steal_pointer(&mon);
}

gboolean vr_qemu_monitor_connect(struct vr_qemu_monitor *mon, GError **error)
{
	g_return_val_if_fail(mon != NULL, FALSE);
	return !mon->ops->connect || mon->ops->connect(mon->priv, mon->timeout_ms, error);
}

pid_t vr_qemu_monitor_get_peer_pid(struct vr_qemu_monitor *mon)
{
	g_return_val_if_fail(mon != NULL, 0);
	return mon->ops->peer_pid ? mon->ops->peer_pid(mon->priv) : 0;
}
