/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Our own QMP client over a unix socket: the message checks shared with the
 * libvirt transport, line framing, the greeting and capabilities
 * negotiation, commands with ids, and the event queue. See qmp.h.
 */
#define _GNU_SOURCE

#include "qmp/qmp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* clang-format off */
G_DEFINE_QUARK(vr-qmp-error-quark, vr_qmp_error)
/* clang-format on */

/* Bytes taken from the socket per recv(). */
#define VR_QMP_READ_CHUNK_BYTES 65536

/* What a message's "timestamp" may hold: microseconds below one second. */
#define VR_QMP_USEC_PER_SEC 1000000

/**
 * struct vr_qmp - one connection to a QEMU monitor.
 * @fd:		the socket (non-blocking).
 * @path:	its path, for messages.
 * @next_id:	the "id" of the next command.
 * @in:		bytes received and not yet taken as lines.
 * @scanned:	how many bytes of @in hold no newline (where to look next).
 * @events:	queued event messages (json_object *), oldest first.
 * @events_dropped: events dropped from a full queue.
 * @broken:	the reason the client needs a new connection, or NULL.
 * @version:	QEMU's version from the greeting.
 * @peer_pid:	the process that listens on the socket (SO_PEERCRED at
 *		connect), 0 if unknown.
 */
struct vr_qmp {
	int fd;
	char *path;
	gint64 next_id;
	GString *in;
	gsize scanned;
	GQueue events;
	guint64 events_dropped;
	char *broken;
	struct vr_qmp_version version;
	pid_t peer_pid;
};

char *vr_qmp_printable(const char *text, gsize max_bytes)
{
	g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);
	GString *out = g_string_new(NULL);

	for (const char *p = valid; *p; p = g_utf8_next_char(p)) {
		gsize clen = (gsize)(g_utf8_next_char(p) - p);

		if (out->len + clen > max_bytes) {
			g_string_append(out, "...");
			break;
		}
		if (g_unichar_iscntrl(g_utf8_get_char(p)))
			g_string_append_c(out, '?');
		else
			g_string_append_len(out, p, (gssize)clen);
	}
	return g_string_free(out, FALSE);
}

static json_object *member(json_object *obj, const char *name)
{
	json_object *v = NULL;

	if (!json_object_object_get_ex(obj, name, &v))
		return NULL;
	return v;
}

static gboolean protocol_error(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean protocol_error(GError **error, const char *fmt, ...)
{
	g_autofree char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL, msg);
	return FALSE;
}

/* A member that must be there with type @type; @path names it. */
static json_object *need(json_object *obj, const char *name, json_type type, const char *what,
			 const char *path, GError **error)
{
	json_object *v = member(obj, name);

	if (!v) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL, "%s has no %s%s", what,
			    path, name);
		return NULL;
	}
	if (!json_object_is_type(v, type)) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
			    "%s: %s%s must be %s (got %s)", what, path, name,
			    type == json_type_object ? "an object" :
			    type == json_type_array  ? "an array" :
			    type == json_type_string ? "a string" :
			    type == json_type_int    ? "an integer" :
						       "another type",
			    vr_json_describe(v));
		return NULL;
	}
	return v;
}

static gboolean check_version_number(json_object *qemu, const char *name, guint *out,
				     GError **error)
{
	json_object *v =
		need(qemu, name, json_type_int, "QEMU's greeting", "QMP.version.qemu.", error);
	int64_t n;

	if (!v)
		return FALSE;
	n = json_object_get_int64(v);
	if (n < 0 || n > G_MAXINT) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
			    "QEMU's greeting: QMP.version.qemu.%s is out of range (got %s)", name,
			    vr_json_describe(v));
		return FALSE;
	}
	*out = (guint)n;
	return TRUE;
}

/* {"QMP": {"version": {"qemu": {major, minor, micro}, "package": "..."},
 *  "capabilities": ["oob", ...]}} */
static gboolean check_greeting(json_object *msg, struct vr_qmp_version *version, GError **error)
{
	const char *what = "QEMU's greeting";
	json_object *qmp = need(msg, "QMP", json_type_object, what, "", error);
	json_object *v, *qemu, *caps, *package;
	struct vr_qmp_version got = { 0 };

	if (!qmp)
		return FALSE;
	if (!(v = need(qmp, "version", json_type_object, what, "QMP.", error)))
		return FALSE;
	if (!(qemu = need(v, "qemu", json_type_object, what, "QMP.version.", error)))
		return FALSE;
	if (!check_version_number(qemu, "major", &got.major, error) ||
	    !check_version_number(qemu, "minor", &got.minor, error) ||
	    !check_version_number(qemu, "micro", &got.micro, error))
		return FALSE;
	package = member(v, "package");
	if (package && !need(v, "package", json_type_string, what, "QMP.version.", error))
		return FALSE;
	if (!(caps = need(qmp, "capabilities", json_type_array, what, "QMP.", error)))
		return FALSE;
	for (size_t i = 0; i < json_object_array_length(caps); i++) {
		json_object *c = json_object_array_get_idx(caps, i);

		if (!json_object_is_type(c, json_type_string)) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
				    "%s: QMP.capabilities[%zu] must be a string (got %s)", what, i,
				    vr_json_describe(c));
			return FALSE;
		}
	}
	if (version)
		*version = got;
	return TRUE;
}

static gboolean check_error(json_object *msg, GError **error)
{
	const char *what = "QEMU's error reply";
	json_object *e = need(msg, "error", json_type_object, what, "", error);

	return e && need(e, "class", json_type_string, what, "error.", error) &&
	       need(e, "desc", json_type_string, what, "error.", error);
}

static gboolean check_event(json_object *msg, GError **error)
{
	const char *what = "QEMU's event";
	json_object *name = need(msg, "event", json_type_string, what, "", error);
	json_object *ts, *sec, *usec, *data;

	if (!name)
		return FALSE;
	if (!*json_object_get_string(name))
		return protocol_error(error, "%s: event must name the event (got \"\")", what);
	if (!(ts = need(msg, "timestamp", json_type_object, what, "", error)))
		return FALSE;
	if (!(sec = need(ts, "seconds", json_type_int, what, "timestamp.", error)) ||
	    !(usec = need(ts, "microseconds", json_type_int, what, "timestamp.", error)))
		return FALSE;
	/* QEMU stamps events it emits before the clock is read with -1, -1. */
	if (json_object_get_int64(usec) >= VR_QMP_USEC_PER_SEC ||
	    json_object_get_int64(usec) < -1 || json_object_get_int64(sec) < -1)
		return protocol_error(error, "%s: timestamp %s.%s is out of range", what,
				      json_object_to_json_string(sec),
				      json_object_to_json_string(usec));
	data = member(msg, "data");
	if (data && !json_object_is_type(data, json_type_object))
		return protocol_error(error, "%s: data must be an object (got %s)", what,
				      vr_json_describe(data));
	return TRUE;
}

gboolean vr_qmp_parse_message(const char *text, gssize len, enum vr_qmp_message_kind *kind,
			      json_object **msg, GError **error)
{
	struct vr_json_errors qmp_errs = { .domain = VR_QMP_ERROR,
					   .syntax_code = VR_QMP_ERROR_PROTOCOL,
					   .invalid_code = VR_QMP_ERROR_PROTOCOL };
	static const char *const kinds[] = { "QMP", "return", "error", "event" };
	g_autoptr(json_object) doc = NULL;
	gsize n = len < 0 ? strlen(text) : (gsize)len;
	int found = -1;

	if (n > VR_QMP_MAX_LINE_BYTES)
		return protocol_error(error, "a message of %zu bytes is longer than %u bytes", n,
				      VR_QMP_MAX_LINE_BYTES);
	if (!vr_json_doc_parse(text, (gssize)n, &qmp_errs, &doc, NULL, error)) {
		g_autofree char *quote = vr_qmp_printable(text, VR_QMP_MAX_QUOTE_BYTES);

		g_prefix_error(error, "a message that is not JSON (%s): ", quote);
		return FALSE;
	}
	if (!json_object_is_type(doc, json_type_object)) {
		g_autofree char *quote = vr_qmp_printable(text, VR_QMP_MAX_QUOTE_BYTES);

		return protocol_error(error, "a message that is not a JSON object (got %s): %s",
				      doc ? vr_json_describe(doc) : "null", quote);
	}
	for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
		if (!json_object_object_get_ex(doc, kinds[i], NULL))
			continue;
		if (found >= 0)
			return protocol_error(
				error, "a message with both \"%s\" and \"%s\": one kind only",
				kinds[found], kinds[i]);
		found = (int)i;
	}
	if (found < 0) {
		g_autofree char *quote = vr_qmp_printable(text, VR_QMP_MAX_QUOTE_BYTES);

		return protocol_error(error,
				      "a message that is none of greeting (\"QMP\"), \"return\", "
				      "\"error\", \"event\": %s",
				      quote);
	}
	switch ((enum vr_qmp_message_kind)found) {
	case VR_QMP_MESSAGE_GREETING:
		if (!check_greeting(doc, NULL, error))
			return FALSE;
		break;
	case VR_QMP_MESSAGE_RETURN:
		break;
	case VR_QMP_MESSAGE_ERROR:
		if (!check_error(doc, error))
			return FALSE;
		break;
	case VR_QMP_MESSAGE_EVENT:
		if (!check_event(doc, error))
			return FALSE;
		break;
	}
	*kind = (enum vr_qmp_message_kind)found;
	*msg = g_steal_pointer(&doc);
	return TRUE;
}

gboolean vr_qmp_reply_result(json_object *reply, const char *command, json_object **ret,
			     GError **error)
{
	json_object *r = NULL;
	json_object *e = NULL;

	if (json_object_object_get_ex(reply, "return", &r)) {
		if (ret)
			*ret = json_object_get(r);
		return TRUE;
	}
	if (json_object_object_get_ex(reply, "error", &e) && check_error(reply, error)) {
		g_autofree char *cls = vr_qmp_printable(json_object_get_string(member(e, "class")),
							VR_QMP_MAX_QUOTE_BYTES);
		g_autofree char *desc = vr_qmp_printable(json_object_get_string(member(e, "desc")),
							 VR_QMP_MAX_QUOTE_BYTES);

		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_COMMAND, "QEMU refused %s: %s: %s",
			    command, cls, desc);
		return FALSE;
	}
	if (!e)
		protocol_error(error, "the reply to %s has neither \"return\" nor \"error\"",
			       command);
	return FALSE;
}

/* --- the connection ------------------------------------------------------ */

/* Mark @qmp broken by @error (which is kept: it is the caller's too). */
static gboolean qmp_break(struct vr_qmp *qmp, GError **error)
{
	if (!qmp->broken)
		qmp->broken = g_strdup(error && *error ? (*error)->message : "an earlier failure");
	return FALSE;
}

static gboolean qmp_check_usable(struct vr_qmp *qmp, GError **error)
{
	if (!qmp->broken)
		return TRUE;
	g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED,
		    "QEMU's monitor at %s failed earlier (%s) and needs a new connection",
		    qmp->path, qmp->broken);
	return FALSE;
}

/* Milliseconds from now to @deadline_us for poll(), rounded up; 0 once past. */
static int poll_ms_until(gint64 deadline_us)
{
	gint64 left_us = deadline_us - g_get_monotonic_time();

	if (left_us <= 0)
		return 0;
	return (int)MIN((left_us + 999) / 1000, G_MAXINT);
}

/**
 * qmp_read_line() - the next line from QEMU, waiting until @deadline_us
 * (monotonic; 0: take only what is there).
 * @line:	the line without its newline (owned), or NULL when none came
 *		in time.
 * Return: FALSE with @error when the connection closed, failed or sent an
 * oversized line.
 */
static gboolean qmp_read_line(struct vr_qmp *qmp, gint64 deadline_us, char **line, GError **error)
{
	*line = NULL;
	for (;;) {
		char *start = qmp->in->str;
		char *nl = memchr(start + qmp->scanned, '\n', qmp->in->len - qmp->scanned);
		char buf[VR_QMP_READ_CHUNK_BYTES];
		struct pollfd pfd = { .fd = qmp->fd, .events = POLLIN };
		ssize_t n;
		int rc;

		if (nl) {
			gsize len = (gsize)(nl - start);

			if (len > VR_QMP_MAX_LINE_BYTES)
				break;
			*line = g_strndup(start, len);
			g_string_erase(qmp->in, 0, (gssize)len + 1);
			qmp->scanned = 0;
			return TRUE;
		}
		qmp->scanned = qmp->in->len;
		if (qmp->in->len > VR_QMP_MAX_LINE_BYTES)
			break;
		rc = poll(&pfd, 1, deadline_us ? poll_ms_until(deadline_us) : 0);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED,
				    "waiting for QEMU's monitor at %s: %s", qmp->path,
				    g_strerror(errno));
			return FALSE;
		}
		if (rc == 0) {
			if (!deadline_us || g_get_monotonic_time() >= deadline_us)
				return TRUE;
			continue;
		}
		n = recv(qmp->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED,
				    "reading from QEMU's monitor at %s: %s", qmp->path,
				    g_strerror(errno));
			return FALSE;
		}
		if (n == 0) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED,
				    "QEMU closed its monitor at %s%s", qmp->path,
				    qmp->in->len ? " in the middle of a line" : "");
			return FALSE;
		}
		g_string_append_len(qmp->in, buf, n);
	}
	g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
		    "QEMU's monitor at %s sent a line longer than %u bytes", qmp->path,
		    VR_QMP_MAX_LINE_BYTES);
	return FALSE;
}

static gboolean qmp_write_all(struct vr_qmp *qmp, const char *buf, gsize len, gint64 deadline_us,
			      const char *command, GError **error)
{
	while (len) {
		/* MSG_NOSIGNAL: a QEMU that went away is an error, not SIGPIPE. */
		ssize_t n = send(qmp->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd pfd = { .fd = qmp->fd, .events = POLLOUT };
		int rc;

		if (n > 0) {
			buf += n;
			len -= (gsize)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED,
				    "sending %s to QEMU's monitor at %s: %s", command, qmp->path,
				    g_strerror(errno));
			return FALSE;
		}
		rc = poll(&pfd, 1, poll_ms_until(deadline_us));
		if (rc == 0 && g_get_monotonic_time() >= deadline_us) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT,
				    "QEMU's monitor at %s did not take %s in time", qmp->path,
				    command);
			return FALSE;
		}
	}
	return TRUE;
}

static void qmp_queue_event(struct vr_qmp *qmp, json_object *event)
{
	if (g_queue_get_length(&qmp->events) >= VR_QMP_MAX_EVENTS) {
		json_object_put(g_queue_pop_head(&qmp->events));
		qmp->events_dropped++;
	}
	g_queue_push_tail(&qmp->events, event);
}

/* Whether @reply carries the id @id (ours are integers). */
static gboolean reply_has_id(json_object *reply, gint64 id)
{
	json_object *v = member(reply, "id");

	return v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) == id;
}

/**
 * qmp_next_message() - read and check the next message before @deadline_us
 * (0: only what is there). Events are queued here and not returned.
 * @kind, @msg:	the message (owned), or @msg NULL when none came in time.
 * Return: FALSE with @error (prefixed with the socket) on a bad or closed
 * connection.
 */
static gboolean qmp_next_message(struct vr_qmp *qmp, gint64 deadline_us,
				 enum vr_qmp_message_kind *kind, json_object **msg, GError **error)
{
	*msg = NULL;
	for (;;) {
		g_autofree char *line = NULL;
		g_autoptr(json_object) m = NULL;

		if (!qmp_read_line(qmp, deadline_us, &line, error))
			return FALSE;
		if (!line)
			return TRUE;
		g_debug("QMP %s <- %s", qmp->path, line);
		if (!vr_qmp_parse_message(line, -1, kind, &m, error)) {
			g_prefix_error(error, "QEMU's monitor at %s sent ", qmp->path);
			return FALSE;
		}
		if (*kind == VR_QMP_MESSAGE_EVENT) {
			qmp_queue_event(qmp, g_steal_pointer(&m));
			continue;
		}
		*msg = g_steal_pointer(&m);
		return TRUE;
	}
}

/* vr_qmp_execute() with an absolute deadline (monotonic, us). */
static gboolean qmp_execute_until(struct vr_qmp *qmp, const char *command, json_object *args,
				  gint64 deadline_us, guint timeout_ms, json_object **ret,
				  GError **error)
{
	g_autoptr(json_object) cmd = json_object_new_object();
	g_autofree char *text = NULL;
	gint64 id = qmp->next_id++;

	json_object_object_add(cmd, "execute", json_object_new_string(command));
	if (args)
		json_object_object_add(cmd, "arguments", json_object_get(args));
	json_object_object_add(cmd, "id", json_object_new_int64(id));
	text = g_strconcat(json_object_to_json_string_ext(cmd, JSON_C_TO_STRING_PLAIN), "\n", NULL);
	g_debug("QMP %s -> %s", qmp->path, json_object_to_json_string_ext(cmd, 0));
	if (!qmp_write_all(qmp, text, strlen(text), deadline_us, command, error))
		return qmp_break(qmp, error);
	for (;;) {
		enum vr_qmp_message_kind kind;
		g_autoptr(json_object) msg = NULL;

		if (!qmp_next_message(qmp, deadline_us, &kind, &msg, error))
			return qmp_break(qmp, error);
		if (!msg) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT,
				    "QEMU's monitor at %s did not answer %s within %u ms",
				    qmp->path, command, timeout_ms);
			return qmp_break(qmp, error);
		}
		if (kind == VR_QMP_MESSAGE_GREETING) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
				    "QEMU's monitor at %s greeted again while %s was running",
				    qmp->path, command);
			return qmp_break(qmp, error);
		}
		if (!reply_has_id(msg, id)) {
			g_debug("QMP %s: dropping a reply that is not to %s (id %" G_GINT64_FORMAT
				")",
				qmp->path, command, id);
			continue;
		}
		return vr_qmp_reply_result(msg, command, ret, error);
	}
}

gboolean vr_qmp_execute(struct vr_qmp *qmp, const char *command, json_object *args,
			guint timeout_ms, json_object **ret, GError **error)
{
	g_return_val_if_fail(qmp && command && *command, FALSE);
	g_return_val_if_fail(!args || json_object_is_type(args, json_type_object), FALSE);

	if (!qmp_check_usable(qmp, error))
		return FALSE;
	return qmp_execute_until(qmp, command, args,
				 g_get_monotonic_time() + (gint64)timeout_ms * 1000, timeout_ms,
				 ret, error);
}

gboolean vr_qmp_poll(struct vr_qmp *qmp, GError **error)
{
	if (!qmp_check_usable(qmp, error))
		return FALSE;
	for (;;) {
		enum vr_qmp_message_kind kind;
		g_autoptr(json_object) msg = NULL;

		if (!qmp_next_message(qmp, 0, &kind, &msg, error))
			return qmp_break(qmp, error);
		if (!msg)
			return TRUE;
		if (kind == VR_QMP_MESSAGE_GREETING) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
				    "QEMU's monitor at %s greeted again", qmp->path);
			return qmp_break(qmp, error);
		}
		g_debug("QMP %s: dropping a reply no command waits for", qmp->path);
	}
}

gboolean vr_qmp_next_event(struct vr_qmp *qmp, guint timeout_ms, json_object **event,
			   GError **error)
{
	gint64 deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

	*event = g_queue_pop_head(&qmp->events);
	if (*event)
		return TRUE;
	if (!qmp_check_usable(qmp, error))
		return FALSE;
	while (!*event) {
		enum vr_qmp_message_kind kind;
		g_autoptr(json_object) msg = NULL;

		if (!qmp_next_message(qmp, timeout_ms ? deadline_us : 0, &kind, &msg, error))
			return qmp_break(qmp, error);
		*event = g_queue_pop_head(&qmp->events);
		if (!msg)
			return TRUE; /* time is up; the queue may have got one */
		if (kind == VR_QMP_MESSAGE_GREETING) {
			g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
				    "QEMU's monitor at %s greeted again", qmp->path);
			json_object_put(g_steal_pointer(event));
			return qmp_break(qmp, error);
		}
		g_debug("QMP %s: dropping a reply no command waits for", qmp->path);
	}
	return TRUE;
}

guint64 vr_qmp_events_dropped(const struct vr_qmp *qmp)
{
	return qmp->events_dropped;
}

gboolean vr_qmp_is_broken(const struct vr_qmp *qmp)
{
	return qmp->broken != NULL;
}

struct vr_qmp_version vr_qmp_get_version(const struct vr_qmp *qmp)
{
	return qmp->version;
}

const char *vr_qmp_get_path(const struct vr_qmp *qmp)
{
	return qmp->path;
}

pid_t vr_qmp_get_peer_pid(const struct vr_qmp *qmp)
{
	return qmp->peer_pid;
}

static void put_event(gpointer event)
{
	json_object_put(event);
}

void vr_qmp_free(struct vr_qmp *qmp)
{
	if (!qmp)
		return;
	if (qmp->fd >= 0)
		close(qmp->fd);
	g_free(qmp->path);
	g_string_free(qmp->in, TRUE);
	g_queue_clear_full(&qmp->events, put_event);
	g_free(qmp->broken);
	g_free(qmp);
}

/* A non-blocking socket connected to @path, or -1 with @error. */
static int qmp_socket(const char *path, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT,
			    "QEMU's monitor socket path %s is too long (at most %zu bytes)", path,
			    sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT,
			    "cannot connect to QEMU's monitor at %s: %s", path,
			    e == EAGAIN ? "it takes no more connections now" : g_strerror(e));
		return -1;
	}
	return fd;
}

/* The pid in the peer credentials of the connected socket @fd, 0 if none. */
static pid_t socket_peer_pid(int fd, const char *path)
{
	struct ucred cred = { 0 };
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred)) {
		g_debug("QMP %s: no peer credentials: %s", path, g_strerror(errno));
		return 0;
	}
	return cred.pid;
}

struct vr_qmp *vr_qmp_connect(const char *path, guint timeout_ms, GError **error)
{
	gint64 deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	g_autoptr(vr_qmp) qmp = NULL;
	g_autoptr(json_object) greeting = NULL;
	enum vr_qmp_message_kind kind;
	int fd;

	g_return_val_if_fail(path != NULL, NULL);

	fd = qmp_socket(path, error);
	if (fd < 0)
		return NULL;
	qmp = g_new0(struct vr_qmp, 1);
	qmp->fd = fd;
	qmp->path = g_strdup(path);
	qmp->peer_pid = socket_peer_pid(fd, path);
	qmp->next_id = 1;
	qmp->in = g_string_new(NULL);
	g_queue_init(&qmp->events);

	if (!qmp_next_message(qmp, deadline_us, &kind, &greeting, error))
		return NULL;
	if (!greeting) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT,
			    "QEMU's monitor at %s sent no greeting within %u ms (is another "
			    "client connected?)",
			    path, timeout_ms);
		return NULL;
	}
	if (kind != VR_QMP_MESSAGE_GREETING) {
		g_set_error(error, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL,
			    "QEMU's monitor at %s did not start with a greeting (\"QMP\")", path);
		return NULL;
	}
	if (!check_greeting(greeting, &qmp->version, error)) {
		g_prefix_error(error, "QEMU's monitor at %s: ", path);
		return NULL;
	}
	if (!qmp_execute_until(qmp, "qmp_capabilities", NULL, deadline_us, timeout_ms, NULL, error))
		return NULL;
	g_debug("QMP %s: connected to QEMU %u.%u.%u", path, qmp->version.major, qmp->version.minor,
		qmp->version.micro);
	return g_steal_pointer(&qmp);
}
