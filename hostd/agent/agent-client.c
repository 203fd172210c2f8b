/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking guest agent client: see agent-client.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "agent/agent-client.h"

#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-agent-client-error-quark, vr_agent_client_error)
/* clang-format on */

/* Reports kept while waiting for a reply; older ones are dropped (an agent
 * that floods reports must not make the host grow). */
#define VR_AGENT_CLIENT_MAX_REPORTS 64

struct vr_agent_client {
	struct vr_unix_socket sock; /* errors in VR_AGENT_CLIENT_ERROR */
	uint32_t next_id;
	enum vr_proto_command pending_command;
	uint32_t pending_id;
	struct vr_proto_reader *reader;
	GQueue reports; /* char * lines, validated */
};

struct vr_agent_client *vr_agent_client_connect(const char *path, GError **error)
{
	g_autofree char *peer = g_strdup_printf("the agent at %s", path);
	struct vr_unix_socket sock;

	if (!vr_unix_socket_connect(&sock, path, peer, VR_AGENT_CLIENT_ERROR, error))
		return NULL;
	struct vr_agent_client *c = g_new0(struct vr_agent_client, 1);
	c->sock = sock;
	c->next_id = 1;
	c->reader = vr_proto_reader_new();
	g_queue_init(&c->reports);
	return c;
}

void vr_agent_client_free(struct vr_agent_client *c)
{
	if (!c)
		return;
	vr_unix_socket_close(&c->sock);
	vr_proto_reader_free(c->reader);
	g_queue_clear_full(&c->reports, g_free);
	g_free(c);
}

static gboolean client_lookup(uint32_t id, enum vr_proto_command *command, gpointer data)
{
	struct vr_agent_client *c = data;
	if (!c->pending_id || id != c->pending_id)
		return FALSE;
	*command = c->pending_command;
	return TRUE;
}

/* The next line from the agent within @deadline_us (monotonic). */
static char *client_read_line(struct vr_agent_client *c, gint64 deadline_us, gsize *len,
			      GError **error)
{
	for (;;) {
		char *line = NULL;
		if (!vr_proto_reader_next(c->reader, &line, len, error))
			return NULL;
		if (line)
			return line;
		char buf[16384];
		gsize n = vr_unix_socket_read(&c->sock, deadline_us, buf, sizeof(buf), error);
		if (!n)
			return NULL;
		vr_proto_reader_feed(c->reader, buf, n);
	}
}

static void client_keep_report(struct vr_agent_client *c, char *line)
{
	if (g_queue_get_length(&c->reports) >= VR_AGENT_CLIENT_MAX_REPORTS)
		g_free(g_queue_pop_head(&c->reports));
	g_queue_push_tail(&c->reports, line);
}

gboolean vr_agent_client_call(struct vr_agent_client *c, struct vr_proto_request *req,
			      guint timeout_ms, struct vr_proto_message *reply, char **raw,
			      GError **error)
{
	req->id = c->next_id++;
	if (c->next_id == 0)
		c->next_id = 1;
	g_autofree char *line = vr_proto_encode_request(req, error);
	if (!line)
		return FALSE;
	if (!vr_unix_socket_write_all(&c->sock, line, strlen(line), error))
		return FALSE;
	c->pending_id = req->id;
	c->pending_command = req->command;
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	for (;;) {
		gsize len = 0;
		g_autofree char *in = client_read_line(c, deadline, &len, error);
		if (!in)
			break;
		g_auto(vr_proto_message) msg = { 0 };
		g_autoptr(GError) local = NULL;
		if (!vr_proto_decode_message(in, len, client_lookup, c, &msg, &local)) {
			/* A bad line that names our request ends it; other bad
			 * lines (a garbled report) are skipped. */
			if (msg.id == req->id) {
				g_propagate_prefixed_error(error, g_steal_pointer(&local),
							   "the agent's reply is invalid: ");
				break;
			}
			g_debug("skipping an invalid line from the agent: %s", local->message);
			continue;
		}
		if (msg.kind == VR_PROTO_MESSAGE_REPORT) {
			client_keep_report(c, g_steal_pointer(&in));
			continue;
		}
		if (msg.id != req->id && !(msg.kind == VR_PROTO_MESSAGE_ERROR && msg.id == 0)) {
			g_debug("skipping a reply to request %u", msg.id);
			continue;
		}
		*reply = msg;
		memset(&msg, 0, sizeof(msg));
		if (raw)
			*raw = g_steal_pointer(&in);
		c->pending_id = 0;
		return TRUE;
	}
	c->pending_id = 0;
	return FALSE;
}

gboolean vr_agent_client_next_report(struct vr_agent_client *c, guint timeout_ms,
				     struct vr_proto_message *report, char **raw, GError **error)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	for (;;) {
		g_autofree char *line = g_queue_pop_head(&c->reports);
		gsize len = line ? strlen(line) : 0;
		if (!line) {
			line = client_read_line(c, deadline, &len, error);
			if (!line)
				return FALSE;
		}
		g_auto(vr_proto_message) msg = { 0 };
		g_autoptr(GError) local = NULL;
		if (!vr_proto_decode_message(line, len, client_lookup, c, &msg, &local)) {
			g_debug("skipping an invalid line from the agent: %s", local->message);
			continue;
		}
		if (msg.kind != VR_PROTO_MESSAGE_REPORT)
			continue;
		*report = msg;
		memset(&msg, 0, sizeof(msg));
		if (raw)
			*raw = g_steal_pointer(&line);
		return TRUE;
	}
}
