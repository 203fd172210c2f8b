/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvirt's QEMU monitor passthrough as a vr_qemu_monitor transport: see
 * qemu-passthrough.h.
 */
#include "libvirt/qemu-passthrough.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <stdlib.h>

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
