/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU monitor interface and its two transports: our own QMP client
 * (reconnecting once when it finds the connection broken) and libvirt's
 * QEMU monitor passthrough. See qemu-monitor.h.
 */
#include "qmp/qemu-monitor.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
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

/* --- libvirt ------------------------------------------------------------- */

/**
 * struct libvirt_transport - the state of the libvirt transport.
 * @dom:	the domain (our own reference).
 * @name:	its name, for messages.
 */
struct libvirt_transport {
	virDomainPtr dom;
	char *name;
};

static gboolean libvirt_transport_execute(void *priv, const char *command, json_object *args,
					  guint timeout_ms, json_object **ret, GError **error)
{
	struct libvirt_transport *t = priv;
	g_autoptr(json_object) cmd = json_object_new_object();
	g_autoptr(json_object) reply = NULL;
	enum vr_qmp_message_kind kind;
	char *result = NULL; /* libvirt's: free(), not g_free() */
	gboolean ok;

	/* libvirt has no timeout for this call: the caller's worker watches
	 * the deadline (qemu-monitor.h). */
	(void)timeout_ms;
	/* No "id": libvirt adds its own and refuses one given twice. */
	json_object_object_add(cmd, "execute", json_object_new_string(command));
	if (args)
		json_object_object_add(cmd, "arguments", json_object_get(args));
	g_debug("QMP domain %s -> %s", t->name, json_object_to_json_string_ext(cmd, 0));
	if (virDomainQemuMonitorCommand(t->dom,
					json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN),
					&result, 0) < 0) {
		g_set_error(error, VR_QEMU_MONITOR_ERROR, VR_QEMU_MONITOR_ERROR_LIBVIRT,
			    "libvirt cannot pass %s to the QEMU monitor of domain %s: %s", command,
			    t->name, virGetLastErrorMessage());
		free(result);
		return FALSE;
	}
	if (!result) {
		g_set_error(error, VR_QEMU_MONITOR_ERROR, VR_QEMU_MONITOR_ERROR_LIBVIRT,
			    "libvirt gave no reply to %s from the QEMU monitor of domain %s",
			    command, t->name);
		return FALSE;
	}
	g_debug("QMP domain %s <- %s", t->name, result);
	ok = vr_qmp_parse_message(result, -1, &kind, &reply, error);
	free(result);
	if (!ok) {
		g_prefix_error(error, "the QEMU of domain %s answered %s with ", t->name, command);
		return FALSE;
	}
	if (kind != VR_QMP_MESSAGE_RETURN && kind != VR_QMP_MESSAGE_ERROR) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
			    "the QEMU of domain %s answered %s with a message that is no reply",
			    t->name, command);
		return FALSE;
	}
	return vr_qmp_reply_result(reply, command, ret, error);
}

static void libvirt_transport_free(void *priv)
{
	struct libvirt_transport *t = priv;

	virDomainFree(t->dom);
	g_free(t->name);
	g_free(t);
}

static const struct vr_qemu_monitor_ops libvirt_transport_ops = {
	.name = "libvirt",
	.execute = libvirt_transport_execute,
	.free = libvirt_transport_free,
};

struct vr_qemu_monitor *vr_qemu_monitor_new_libvirt(virDomainPtr dom)
{
	struct libvirt_transport *t;

	g_return_val_if_fail(dom != NULL, NULL);
	if (virDomainRef(dom) < 0)
		g_return_val_if_reached(NULL);
	t = g_new0(struct libvirt_transport, 1);
	t->dom = dom;
	t->name = g_strdup(virDomainGetName(dom) ? virDomainGetName(dom) : "(unnamed)");
	return vr_qemu_monitor_new(&libvirt_transport_ops, t, t->name);
}
