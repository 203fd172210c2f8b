/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking client for one guest agent, over the host end of its channel
 * (the unix socket QEMU or libvirt gives the virtio-serial port). It sends a
 * request, reads lines until the reply with the request's id, and keeps the
 * reports that arrive meanwhile. Everything from the agent is decoded and
 * validated by vr_proto_decode_message(): the guest is untrusted.
 */
#pragma once

#include <glib.h>

#include "protocol.h"
#include "unix-socket.h"

#define VR_AGENT_CLIENT_ERROR (vr_agent_client_error_quark())
GQuark vr_agent_client_error_quark(void);

/**
 * enum vr_agent_client_error - the client's own failures, the codes of its
 * connection (unix-socket.h); a reply the agent gets wrong is a
 * VR_PROTO_ERROR.
 * @VR_AGENT_CLIENT_ERROR_CONNECT: the socket cannot be reached.
 * @VR_AGENT_CLIENT_ERROR_CLOSED:  the channel closed or broke.
 * @VR_AGENT_CLIENT_ERROR_TIMEOUT: no reply in time.
 */
enum vr_agent_client_error {
	VR_AGENT_CLIENT_ERROR_CONNECT = VR_UNIX_SOCKET_ERROR_CONNECT,
	VR_AGENT_CLIENT_ERROR_CLOSED = VR_UNIX_SOCKET_ERROR_CLOSED,
	VR_AGENT_CLIENT_ERROR_TIMEOUT = VR_UNIX_SOCKET_ERROR_TIMEOUT,
};

struct vr_agent_client;
typedef struct vr_agent_client vr_agent_client;

/**
 * vr_agent_client_connect() - connect to the agent's channel socket @path.
 * Return: owned client, or NULL with @error naming @path.
 */
struct vr_agent_client *vr_agent_client_connect(const char *path, GError **error);

/**
 * vr_agent_client_call() - send @req (its id is chosen here) and wait up to
 * @timeout_ms for its reply.
 * @reply:	the validated reply (REPLY or ERROR kind); clear it with
 *		vr_proto_message_clear().
 * @raw:	when not NULL, set to the reply line as received (owned).
 * Return: TRUE when a reply (or an error reply) came; FALSE with @error on a
 * timeout, a closed channel, or a line that does not decode.
 */
gboolean vr_agent_client_call(struct vr_agent_client *c, struct vr_proto_request *req,
			      guint timeout_ms, struct vr_proto_message *reply, char **raw,
			      GError **error);

/**
 * vr_agent_client_next_report() - wait up to @timeout_ms for the next
 * report (reports received during calls come first).
 * Return: TRUE with @report (REPORT kind) and, when @raw is not NULL, the
 * line; FALSE with @error on a timeout or a closed channel.
 */
gboolean vr_agent_client_next_report(struct vr_agent_client *c, guint timeout_ms,
				     struct vr_proto_message *report, char **raw, GError **error);

void vr_agent_client_free(struct vr_agent_client *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_agent_client, vr_agent_client_free)
