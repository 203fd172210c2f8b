/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's metrics in the Prometheus text exposition format (version
 * 0.0.4): rendered from the status snapshots of domain-status.h (pure), and
 * served by a small HTTP/1.0 server for `GET /metrics` on a loopback address
 * (docs/vreclaimctl.md lists the metrics).
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>

#include "domain-status.h"

#define VR_METRICS_ERROR (vr_metrics_error_quark())
GQuark vr_metrics_error_quark(void);

/**
 * enum vr_metrics_error - the exporter's failures.
 * @VR_METRICS_ERROR_ADDRESS:	the listen address is malformed or not loopback.
 * @VR_METRICS_ERROR_IO:	the socket cannot be made, bound or listened on.
 */
enum vr_metrics_error {
	VR_METRICS_ERROR_ADDRESS,
	VR_METRICS_ERROR_IO,
};

/* The Content-Type of the text exposition format. */
#define VR_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/**
 * vr_metrics_escape_label() - @value as a label value goes between its
 * quotes: '\' as "\\", '"' as "\"", newline as "\n"; invalid UTF-8 replaced
 * by U+FFFD. Owned.
 */
char *vr_metrics_escape_label(const char *value);

/**
 * vr_metrics_render() - the exposition text of @daemon and @domains (struct
 * vr_domain_status *, in their order): each metric family once, with its
 * # HELP and # TYPE lines, then one sample per domain labelled
 * domain="<name>". Counters end in _total; the CPU time is in seconds with
 * six decimals. Owned, '\n'-terminated.
 */
char *vr_metrics_render(const GPtrArray *domains, const struct vr_daemon_status *daemon);

/**
 * vr_metrics_parse_address() - "127.0.0.1:PORT" or "[::1]:PORT" (any
 * loopback address, PORT 0..65535; 0 picks a free port) as a socket
 * address (owned). Refuses, naming @text: host names, addresses that are not
 * loopback (the exporter has no authentication), a missing or bad port.
 */
GSocketAddress *vr_metrics_parse_address(const char *text, GError **error);

/* A request's maximum size, request line and headers, bytes: more is
 * answered 431. */
#define VR_METRICS_MAX_REQUEST_BYTES 8192

/* The time a client has for its request and for reading the reply, ms (0 in
 * vr_metrics_server_new() picks it): a slow client is closed after it. */
#define VR_METRICS_DEFAULT_TIMEOUT_MS 5000

/* Connections served at once; one more is answered 503 and closed. */
#define VR_METRICS_MAX_CONNECTIONS 8

struct vr_metrics_server;
typedef struct vr_metrics_server vr_metrics_server;

/**
 * vr_metrics_server_new() - serve `GET /metrics` (and HEAD) over HTTP/1.0
 * on the loopback @address (vr_metrics_parse_address()), on the default
 * GMainContext. Other paths get 404, other methods 405, a malformed request
 * 400, a request above VR_METRICS_MAX_REQUEST_BYTES 431, a failed @status
 * 500; every connection is closed after its reply.
 * @timeout_ms:	each connection's time for its whole exchange, ms (0:
 *		VR_METRICS_DEFAULT_TIMEOUT_MS).
 * @status:	asked for the snapshots at every request.
 * @user:	passed to @status.
 * Return: owned server, or NULL with @error naming @address.
 */
struct vr_metrics_server *vr_metrics_server_new(const char *address, guint timeout_ms,
						vr_status_fn status, gpointer user, GError **error);

/** vr_metrics_server_get_port() - the TCP port it listens on (the chosen one for port 0). */
guint16 vr_metrics_server_get_port(const struct vr_metrics_server *s);

/** vr_metrics_server_free() - close every connection and the listening socket. */
void vr_metrics_server_free(struct vr_metrics_server *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_metrics_server, vr_metrics_server_free)
