/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking client of vreclaimd's control socket: see control-client.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "control/control-client.h"

#include <string.h>

#include "unix-socket.h"

/* clang-format off */
G_DEFINE_QUARK(vr-control-client-error-quark, vr_control_client_error)
/* clang-format on */

/* Bytes read per wakeup. */
#define VR_CONTROL_CLIENT_READ_CHUNK 65536

struct vr_control_client {
	struct vr_unix_socket sock; /* errors in VR_CONTROL_CLIENT_ERROR */
	GString *in;		    /* bytes after the last reply line */
};

struct vr_control_client *vr_control_client_connect(const char *path, GError **error)
{
	g_autofree char *peer = g_strdup_printf("vreclaimd at '%s'", path);
	struct vr_unix_socket sock;

	if (!vr_unix_socket_connect(&sock, path, peer, VR_CONTROL_CLIENT_ERROR, error))
		return NULL;
	struct vr_control_client *c = g_new0(struct vr_control_client, 1);
	c->sock = sock;
	c->in = g_string_new(NULL);
	return c;
}

void vr_control_client_free(struct vr_control_client *c)
{
	if (!c)
		return;
	vr_unix_socket_close(&c->sock);
	g_string_free(c->in, TRUE);
	g_free(c);
}

/* The next line within @deadline_us (monotonic), without its '\n'. */
static char *client_read_line(struct vr_control_client *c, gint64 deadline_us, GError **error)
{
	gsize scanned = 0;

	for (;;) {
		const char *nl = memchr(c->in->str + scanned, '\n', c->in->len - scanned);

		if (nl) {
			gsize n = (gsize)(nl - c->in->str);
			char *line = g_strndup(c->in->str, n);

			g_string_erase(c->in, 0, (gssize)n + 1);
			return line;
		}
		scanned = c->in->len;
		if (c->in->len >= VR_CONTROL_MAX_REPLY_BYTES) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "vreclaimd's reply is longer than %d bytes",
				    VR_CONTROL_MAX_REPLY_BYTES);
			return NULL;
		}
		char buf[VR_CONTROL_CLIENT_READ_CHUNK];
		gsize n = vr_unix_socket_read(&c->sock, deadline_us, buf, sizeof(buf), error);
		if (!n)
			return NULL;
		g_string_append_len(c->in, buf, (gssize)n);
	}
}

char *vr_control_client_call(struct vr_control_client *c, const struct vr_control_request *req,
			     guint timeout_ms, GError **error)
{
	g_autofree char *line = vr_control_encode_request(req, error);
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

	if (!line || !vr_unix_socket_write_all(&c->sock, line, strlen(line), error))
		return NULL;
	g_debug("-> %s", line);
	char *reply = client_read_line(c, deadline, error);
	if (reply)
		g_debug("<- %.1024s", reply);
	return reply;
}

gboolean vr_control_client_status(struct vr_control_client *c, guint timeout_ms,
				  GPtrArray **domains, struct vr_daemon_status *daemon, char **raw,
				  GError **error)
{
	const struct vr_control_request req = { .command = VR_CONTROL_STATUS };
	g_autofree char *line = vr_control_client_call(c, &req, timeout_ms, error);

	if (!line || !vr_control_decode_status_reply(line, strlen(line), domains, daemon, error))
		return FALSE;
	if (raw)
		*raw = g_steal_pointer(&line);
	return TRUE;
}

/* @domain into @req (NULL: none). */
static gboolean request_domain(struct vr_control_request *req, const char *domain, GError **error)
{
	if (!domain)
		return TRUE;
	if (g_strlcpy(req->domain, domain, sizeof(req->domain)) >= sizeof(req->domain)) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "domain: the name is longer than %zu bytes", sizeof(req->domain) - 1);
		return FALSE;
	}
	req->has_domain = TRUE;
	return TRUE;
}

gboolean vr_control_client_set(struct vr_control_client *c, const char *domain,
			       const char *const *settings, guint timeout_ms, GError **error)
{
	g_auto(vr_control_request) req = { .command = VR_CONTROL_SET };
	g_autofree char *line = NULL;

	if (!request_domain(&req, domain, error))
		return FALSE;
	req.settings = g_strdupv((char **)settings);
	line = vr_control_client_call(c, &req, timeout_ms, error);
	return line && vr_control_decode_empty_reply(line, strlen(line), error);
}

gboolean vr_control_client_pause(struct vr_control_client *c, const char *domain, gboolean pause,
				 guint timeout_ms, GError **error)
{
	g_auto(vr_control_request)
		req = { .command = pause ? VR_CONTROL_PAUSE : VR_CONTROL_RESUME };
	g_autofree char *line = NULL;

	if (!request_domain(&req, domain, error))
		return FALSE;
	line = vr_control_client_call(c, &req, timeout_ms, error);
	return line && vr_control_decode_empty_reply(line, strlen(line), error);
}

char *vr_control_client_metrics(struct vr_control_client *c, guint timeout_ms, GError **error)
{
	const struct vr_control_request req = { .command = VR_CONTROL_METRICS };
	g_autofree char *line = vr_control_client_call(c, &req, timeout_ms, error);
	char *text = NULL;

	if (!line || !vr_control_decode_metrics_reply(line, strlen(line), &text, error))
		return NULL;
	return text;
}
