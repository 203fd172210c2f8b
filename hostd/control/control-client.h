/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking client of vreclaimd's control socket (control.h), for
 * vreclaimctl and tests: connect, send one request, read its reply line
 * (at most VR_CONTROL_MAX_REPLY_BYTES) within a timeout, decode it.
 *
 * Errors: the client's own failures are VR_CONTROL_CLIENT_ERROR; an error
 * reply of the daemon, or a reply that does not decode, is VR_CONTROL_ERROR
 * with the reply's class as the code (control.h).
 */
#pragma once

#include <glib.h>

#include "control/control.h"
#include "domain-status.h"
#include "unix-socket.h"

#define VR_CONTROL_CLIENT_ERROR (vr_control_client_error_quark())
GQuark vr_control_client_error_quark(void);

/**
 * enum vr_control_client_error - the client's own failures (the codes of
 * its connection, unix-socket.h).
 * @VR_CONTROL_CLIENT_ERROR_CONNECT: the socket cannot be reached; the
 *				     message is "failed to connect to vreclaimd
 *				     at '<path>': <reason>".
 * @VR_CONTROL_CLIENT_ERROR_CLOSED:  the daemon closed the connection or it
 *				     broke.
 * @VR_CONTROL_CLIENT_ERROR_TIMEOUT: no reply in time.
 */
enum vr_control_client_error {
	VR_CONTROL_CLIENT_ERROR_CONNECT = VR_UNIX_SOCKET_ERROR_CONNECT,
	VR_CONTROL_CLIENT_ERROR_CLOSED = VR_UNIX_SOCKET_ERROR_CLOSED,
	VR_CONTROL_CLIENT_ERROR_TIMEOUT = VR_UNIX_SOCKET_ERROR_TIMEOUT,
};

struct vr_control_client;
typedef struct vr_control_client vr_control_client;

/**
 * vr_control_client_connect() - connect to vreclaimd's control socket @path.
 * Return: owned client, or NULL with @error (CONNECT) naming @path.
 */
struct vr_control_client *vr_control_client_connect(const char *path, GError **error);

/**
 * vr_control_client_call() - send @req and wait up to @timeout_ms for the
 * reply line.
 * Return: the reply line, owned, '\n' removed; NULL with @error when it
 * cannot be sent, does not come in time, or is longer than
 * VR_CONTROL_MAX_REPLY_BYTES. The line is not decoded.
 */
char *vr_control_client_call(struct vr_control_client *c, const struct vr_control_request *req,
			     guint timeout_ms, GError **error);

/**
 * vr_control_client_status() - every domain's and the daemon's status.
 * @domains:	set to a new array that owns its struct vr_domain_status *.
 * @daemon:	filled in.
 * @raw:	when not NULL, set to the reply line (owned).
 */
gboolean vr_control_client_status(struct vr_control_client *c, guint timeout_ms,
				  GPtrArray **domains, struct vr_daemon_status *daemon, char **raw,
				  GError **error);

/**
 * vr_control_client_set() - apply @settings ("KEY=VALUE", NULL-terminated)
 * to @domain.
 */
gboolean vr_control_client_set(struct vr_control_client *c, const char *domain,
			       const char *const *settings, guint timeout_ms, GError **error);

/**
 * vr_control_client_pause() - pause (@pause TRUE) or resume reclaim for
 * @domain, or for every domain when @domain is NULL.
 */
gboolean vr_control_client_pause(struct vr_control_client *c, const char *domain, gboolean pause,
				 guint timeout_ms, GError **error);

/** vr_control_client_metrics() - the Prometheus text (owned), or NULL with @error. */
char *vr_control_client_metrics(struct vr_control_client *c, guint timeout_ms, GError **error);

/** vr_control_client_free() - close the connection and free @c (NULL is fine). */
void vr_control_client_free(struct vr_control_client *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_control_client, vr_control_client_free)
