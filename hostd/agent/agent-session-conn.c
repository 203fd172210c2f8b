/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's session with one guest agent (see agent-session.h): the
 * connection, below the session's calls (agent-session.c). The socket and its
 * event-hub watch, the non-blocking connect and the reconnect with backoff,
 * the output queue, the input limits and the cutting into lines; and the
 * session's reference count and log, which both layers use. What happened is
 * told to the layer above through struct session_conn_ops
 * (agent-session-private.h).
 *
 * States: WAITING (a reconnect timer runs, or nothing when freed) ->
 * CONNECTING (a non-blocking connect in progress) -> HELLO (connected, hello
 * sent) -> UP. Each of the last three falls back to WAITING when something
 * fails; session_disconnect() then bumps @conn_gen, so code that called out
 * to the daemon can see that the connection it was reading is gone.
 *
 * The socket's watch and the timers live in the event hub of the main context
 * that was the thread default when the session was made (event-hub.h): a
 * fleet of a thousand sessions is one main-loop source, not two thousand,
 * each walked and polled at every wakeup.
 */
#define _GNU_SOURCE /* SOCK_NONBLOCK, SOCK_CLOEXEC, MSG_NOSIGNAL */

#include "agent/agent-session-private.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "guest-bounds.h"

/* Bytes read per wakeup: a quarter of the longest line. */
#define SESSION_READ_CHUNK 16384

/* Bytes of a line shown in a debug message; the rest is cut. */
#define SESSION_DEBUG_LINE_BYTES 4096

/* ---- the reference count and the log ---- */

struct vr_agent_session *session_ref(struct vr_agent_session *s)
{
	s->ref++;
	return s;
}

static void session_finalize(struct vr_agent_session *s)
{
	g_hash_table_destroy(s->calls); /* empty: free() failed every call */
	g_string_free(s->out, TRUE);
	vr_proto_reader_free(s->reader);
	vr_event_hub_unref(s->hub);
	g_free(s->late);
	g_free(s->last_error);
	g_free(s->domain);
	g_free(s->path);
	g_free(s);
}

void session_unref(struct vr_agent_session *s)
{
	if (--s->ref == 0)
		session_finalize(s);
}

gboolean session_gone(const struct vr_agent_session *s, uint64_t gen)
{
	return s->closed || s->conn_gen != gen;
}

void session_timer_clear(struct vr_hub_timer **t)
{
	vr_hub_timer_cancel(*t);
	*t = NULL;
}

/* @text made fit for a log: valid UTF-8 with control characters as '?'.
 * The decoder's messages never quote the guest's strings; this keeps it so
 * whatever a later message quotes. Owned. */
static char *text_clean(const char *text)
{
	char *clean = g_utf8_make_valid(text, -1);

	for (char *p = clean; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return clean;
}

GError *session_error(const struct vr_agent_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_autofree char *clean = text_clean(text);
	return g_error_new(VR_AGENT_SESSION_ERROR, code, "domain %s: %s", s->domain, clean);
}

void session_set_last_error(struct vr_agent_session *s, const char *message)
{
	g_free(s->last_error);
	s->last_error = g_strdup(message);
}

/* A message of @kind at @level, unless one was logged less than
 * warn_interval_ms ago: the guest decides how often these happen. */
void session_log_limited(struct vr_agent_session *s, enum warn_kind kind, GLogLevelFlags level,
			 const char *message)
{
	uint64_t suppressed = 0;

	if (!vr_ratelimit_pass(&s->warn_limits[kind], g_get_monotonic_time(), &suppressed)) {
		s->counters.log_suppressed = vr_u64_add_sat(s->counters.log_suppressed, 1);
		return;
	}
	if (suppressed)
		g_log(G_LOG_DOMAIN, level,
		      "%s (and %" G_GUINT64_FORMAT " more like it, not logged)", message,
		      suppressed);
	else
		g_log(G_LOG_DOMAIN, level, "%s", message);
}

void session_warn(struct vr_agent_session *s, enum warn_kind kind, const char *message)
{
	session_log_limited(s, kind, G_LOG_LEVEL_WARNING, message);
}

/* The raw line at debug level, escaped (a guest's bytes never reach a log
 * as they are) and cut to SESSION_DEBUG_LINE_BYTES. */
void session_debug_line(const struct vr_agent_session *s, const char *dir, const char *line,
			gsize len)
{
	if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN))
		return;
	gsize shown = MIN(len, SESSION_DEBUG_LINE_BYTES);
	g_autofree char *copy = g_strndup(line, shown);
	g_autofree char *escaped = g_strescape(copy, NULL);
	g_debug("domain %s: %s %s%s", s->domain, dir, escaped, shown < len ? "..." : "");
}
/* ---- connection ---- */

void session_disconnect(struct vr_agent_session *s)
{
	g_clear_pointer(&s->watch, vr_hub_watch_remove);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	g_string_truncate(s->out, 0);
	g_clear_pointer(&s->reader, vr_proto_reader_free);
	memset(&s->hello, 0, sizeof(s->hello));
	s->state = STATE_WAITING;
	s->conn_gen++;
}

static void session_on_retry(gpointer data)
{
	struct vr_agent_session *s = session_ref(data);

	s->retry = NULL; /* it fired */
	session_connect(s);
	session_unref(s);
}

/* Wait backoff_ms, then connect again; the next wait doubles up to the cap. */
static guint session_schedule_retry(struct vr_agent_session *s)
{
	guint wait_ms = s->backoff_ms;

	session_timer_clear(&s->retry);
	s->retry = vr_event_hub_add_timer(s->hub, g_get_monotonic_time() + (gint64)wait_ms * 1000,
					  session_on_retry, s);
	s->backoff_ms = (guint)MIN((uint64_t)wait_ms * 2, s->limits.backoff_max_ms);
	return wait_ms;
}

void session_down(struct vr_agent_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_autofree char *why = text_clean(text);
	gboolean was_up = s->state == STATE_UP;
	gint64 now_us = g_get_monotonic_time();
	g_autoptr(GError) error = session_error(s, code, "%s", why);

	session_disconnect(s);
	if (was_up && now_us - s->up_since_us >= (gint64)s->limits.stable_ms * 1000)
		s->backoff_ms = s->limits.backoff_initial_ms;
	guint wait_ms = session_schedule_retry(s);
	session_set_last_error(s, error->message);
	if (was_up) {
		s->counters.downs++;
		g_message("domain %s: the session with the agent went down: %s; reconnecting in %u "
			  "ms",
			  s->domain, why, wait_ms);
	} else {
		g_message("domain %s: no session with the agent: %s; reconnecting in %u ms",
			  s->domain, why, wait_ms);
	}
	g_autofree char *call_message = g_strdup_printf(
		"domain %s: the session with the agent went down before the reply: %s", s->domain,
		why);
	s->conn_ops->down(s, call_message);
	if (was_up && !s->closed && s->ops.down)
		s->ops.down(s, error, s->user_data);
}

void session_refuse(struct vr_agent_session *s, enum warn_kind kind, const GError *why)
{
	s->counters.refused++;
	if (kind == WARN_STRAY)
		s->counters.refused_stray++;
	if (kind == WARN_LIE)
		s->counters.refused_lies++;
	session_set_last_error(s, why->message);
	session_warn(s, kind, why->message);
	if (++s->refused_here > s->limits.max_refused)
		session_down(s, VR_AGENT_SESSION_ERROR_REFUSED,
			     "the agent sent %u refused messages on this connection, more than "
			     "the %u allowed (the last: %s)",
			     s->refused_here, s->limits.max_refused, why->message);
}

/* Whether the watch waits for room to write the rest of @out. */
static gboolean session_waits_output(const struct vr_agent_session *s)
{
	return (vr_hub_watch_condition(s->watch) & G_IO_OUT) != 0;
}

/* Wait for input, and for output too when @output (connected only). */
static void session_watch_output(struct vr_agent_session *s, gboolean output)
{
	vr_hub_watch_set_condition(s->watch, G_IO_IN | (output ? G_IO_OUT : 0));
}

static void session_flush(struct vr_agent_session *s)
{
	while (s->out->len) {
		ssize_t n = send(s->fd, s->out->str, s->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* the watch calls again */
		if (n <= 0) {
			int e = n < 0 ? errno : EPIPE;
			session_down(s, VR_AGENT_SESSION_ERROR_CLOSED,
				     "writing to the agent's channel %s: %s", s->path,
				     g_strerror(e));
			return;
		}
		g_string_erase(s->out, 0, n);
	}
	session_watch_output(s, FALSE);
}
/*
 * Send what @out holds now, without blocking, and watch for output only
 * when some is left: most lines go at once, and waiting for output first
 * cost a main context wakeup per line. An error is left to the watch
 * (session_flush() then takes the session down), so that no callback runs
 * inside vr_agent_session_call().
 */
void session_send_now(struct vr_agent_session *s)
{
	while (s->out->len && !session_waits_output(s)) {
		ssize_t n = send(s->fd, s->out->str, s->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		g_string_erase(s->out, 0, n);
	}
	if (s->out->len)
		session_watch_output(s, TRUE);
}
/* The socket is connected: start reading and say hello. */
static void session_connected(struct vr_agent_session *s)
{
	gint64 now_us = g_get_monotonic_time();

	s->counters.connects++;
	if (s->counters.connects > 1)
		s->counters.reconnects++;
	s->state = STATE_HELLO;
	s->reader = vr_proto_reader_new();
	vr_token_bucket_init(&s->line_bucket, s->limits.lines_per_s, s->limits.burst_lines, now_us);
	vr_token_bucket_init(&s->byte_bucket, s->limits.bytes_per_s, s->limits.burst_bytes, now_us);
	s->refused_here = 0;
	s->timeouts_in_row = 0;
	session_watch_output(s, FALSE);
	g_debug("domain %s: connected to %s, saying hello", s->domain, s->path);
	s->conn_ops->connected(s);
}

static void session_connect_failed(struct vr_agent_session *s, int errnum)
{
	g_autoptr(GError) error = session_error(s, VR_AGENT_SESSION_ERROR_CONNECT,
						"cannot connect to the agent's channel %s: %s",
						s->path, g_strerror(errnum));
	guint wait_ms;

	s->counters.connect_failures++;
	wait_ms = session_schedule_retry(s);
	/* The same failure again (the domain is still off) is not news. */
	if (g_strcmp0(s->last_error, error->message))
		g_message("%s; retrying in %u ms", error->message, wait_ms);
	else
		g_debug("%s; retrying in %u ms", error->message, wait_ms);
	session_set_last_error(s, error->message);
}

/* The non-blocking connect ended (the socket is writable). */
static void session_on_connect(struct vr_agent_session *s)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		session_disconnect(s);
		session_connect_failed(s, err);
	} else {
		session_connected(s);
	}
}

static void session_read(struct vr_agent_session *s, GIOCondition cond);

/* The socket is ready: the connect ended, or room to write, or input. */
static void session_on_io(int fd, GIOCondition cond, gpointer data)
{
	struct vr_agent_session *s = session_ref(data);
	uint64_t gen = s->conn_gen;

	(void)fd;
	if (s->state == STATE_CONNECTING) {
		session_on_connect(s);
	} else {
		if (cond & G_IO_OUT)
			session_flush(s);
		if (!session_gone(s, gen) && (cond & (G_IO_IN | G_IO_HUP | G_IO_ERR)))
			session_read(s, cond);
	}
	session_unref(s);
}

/* Make @fd the session's socket and watch it for @cond. FALSE (the
 * descriptor closed) when epoll refuses it, which it does not for a socket. */
static gboolean session_set_socket(struct vr_agent_session *s, int fd, GIOCondition cond)
{
	g_autoptr(GError) error = NULL;

	s->watch = vr_event_hub_watch(s->hub, fd, cond, session_on_io, s, &error);
	if (!s->watch) {
		g_warning("domain %s: %s", s->domain, error->message);
		close(fd);
		return FALSE;
	}
	s->fd = fd;
	return TRUE;
}

void session_connect(struct vr_agent_session *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		session_connect_failed(s, errno);
		return;
	}
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1); /* length checked by _new() */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		if (session_set_socket(s, fd, G_IO_IN))
			session_connected(s);
		else
			session_connect_failed(s, EINVAL);
		return;
	}
	if (errno == EINPROGRESS) {
		if (session_set_socket(s, fd, G_IO_OUT))
			s->state = STATE_CONNECTING;
		else
			session_connect_failed(s, EINVAL);
		return;
	}
	/* EAGAIN on a unix socket: the listener's backlog is full; retry later. */
	int e = errno;
	close(fd);
	session_connect_failed(s, e);
}
static void session_read(struct vr_agent_session *s, GIOCondition cond)
{
	char buf[SESSION_READ_CHUNK];
	uint64_t gen = s->conn_gen;
	ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);
	int e = n < 0 ? errno : 0;
	gboolean nothing = n < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR);

	/* Nothing to read yet; but a hang-up with nothing to read would wake
	 * us again at once, for ever: that is the end. */
	if (nothing && !(cond & (G_IO_HUP | G_IO_ERR)))
		return;
	if (n <= 0) {
		if (n == 0 || nothing)
			session_down(s, VR_AGENT_SESSION_ERROR_CLOSED,
				     "the agent's channel closed");
		else
			session_down(s, VR_AGENT_SESSION_ERROR_CLOSED,
				     "reading the agent's channel: %s", g_strerror(e));
		return;
	}
	s->counters.bytes_in += (uint64_t)n;
	if (!vr_token_bucket_take(&s->byte_bucket, (double)n, g_get_monotonic_time())) {
		session_down(s, VR_AGENT_SESSION_ERROR_FLOOD,
			     "the agent floods the channel: more than %u bytes/s (burst %u)",
			     s->limits.bytes_per_s, s->limits.burst_bytes);
		return;
	}
	vr_proto_reader_feed(s->reader, buf, (gsize)n);
	for (;;) {
		g_autofree char *line = NULL;
		g_autoptr(GError) local = NULL;
		gsize len = 0;

		if (!vr_proto_reader_next(s->reader, &line, &len, &local)) {
			s->counters.refused++;
			session_down(s, VR_AGENT_SESSION_ERROR_PROTOCOL,
				     "the agent sent an invalid line: %s", local->message);
			return;
		}
		if (!line)
			return;
		s->counters.lines_in++;
		if (!vr_token_bucket_take(&s->line_bucket, 1, g_get_monotonic_time())) {
			session_down(
				s, VR_AGENT_SESSION_ERROR_FLOOD,
				"the agent floods the channel: more than %u lines/s (burst %u)",
				s->limits.lines_per_s, s->limits.burst_lines);
			return;
		}
		s->conn_ops->line(s, line, len, gen);
		if (session_gone(s, gen))
			return;
	}
}
