/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two halves of an agent session share (not an interface for
 * anyone else): the session's state and the connection's functions.
 *
 * The layers, each using only the ones below it:
 * - agent-session.c: the session (its public functions, the calls: ids,
 *   deadlines, late replies; what the agent sends: hello, replies and their
 *   checks, reports, invalid lines).
 * - agent-session-conn.c: the connection (socket, event-hub watch, connect
 *   and reconnect with backoff, output queue, input limits, lines) and the
 *   session's reference count and log. It tells the session above what
 *   happened through struct session_conn_ops.
 * - agent-session-limits.c: the limits and the checks of what an agent
 *   claims (pure, public in agent-session.h).
 */
#pragma once

#include "agent/agent-session.h"
#include "event-hub.h"
#include "ratelimit.h"

struct vr_agent_session;

/**
 * struct session_conn_ops - what the connection tells the session above it
 * (set by vr_agent_session_new()). Each is called with a reference held;
 * after it, the connection checks session_gone() before going on.
 * @connected:	the socket is connected and read (STATE_HELLO): say hello.
 * @line:	the agent sent @line of @len bytes (NUL-terminated, no
 *		newline) on connection @gen, within the input limits.
 * @down:	the connection went down (already torn down, the reconnect
 *		scheduled): fail the calls in flight with @message.
 */
struct session_conn_ops {
	void (*connected)(struct vr_agent_session *s);
	void (*line)(struct vr_agent_session *s, const char *line, gsize len, uint64_t gen);
	void (*down)(struct vr_agent_session *s, const char *message);
};

enum session_state {
	STATE_WAITING,
	STATE_CONNECTING,
	STATE_HELLO,
	STATE_UP,
};

/* The kinds of warnings, each rate-limited on its own. */
enum warn_kind {
	WARN_INVALID, /* a line that broke the protocol */
	WARN_STRAY,   /* a reply to no request */
	WARN_NO_ID,   /* an error reply without an id */
	WARN_LIE,     /* a claim beyond the guest's memory */
	WARN_RESTART, /* the agent's counters went back (a message, not a warning) */
	NR_WARN_KINDS,
};

/**
 * struct session_call - a request in flight.
 * @s:		its session.
 * @id:		its id.
 * @command:	what it asked.
 * @timeout_ms:	its timeout, ms.
 * @deadline_us: when it times out (monotonic); the session's one deadline
 *		timer watches every call's.
 * @hello:	the session's own hello (no @cb).
 * @cb, @user_data: the caller's.
 */
struct session_call {
	struct vr_agent_session *s;
	uint32_t id;
	enum vr_proto_command command;
	guint timeout_ms;
	gint64 deadline_us;
	gboolean hello;
	vr_agent_session_reply_cb cb;
	gpointer user_data;
};

/**
 * struct late_call - a request that ended without its reply.
 * @id:		its id.
 * @command:	what it asked (the decoder needs it to validate the reply).
 */
struct late_call {
	uint32_t id;
	enum vr_proto_command command;
};

/**
 * struct vr_agent_session - see agent-session.h.
 * @ref:	references: the owner's (until vr_agent_session_free()) and
 *		one per running dispatch.
 * @closed:	vr_agent_session_free() was called.
 * @domain, @path, @limits, @ops, @user_data: as given.
 * @hub:	the event hub of the main context the session was made in (a
 *		reference).
 * @conn_ops:	what the connection tells the session (agent-session.c).
 * @state:	see enum session_state.
 * @conn_gen:	bumped each time a connection is torn down.
 * @fd:		the socket, -1 when none.
 * @watch:	watches @fd while it is open: for the connect (CONNECTING,
 *		output), then for input, and for output too while @out holds
 *		bytes the socket did not take.
 * @retry:	the reconnect timer (WAITING).
 * @deadline:	the timer of the calls' deadlines, at the first one; NULL
 *		when no call is in flight. One for all the calls, re-armed
 *		only when it fires or the last call ends.
 * @out:	bytes queued for the agent.
 * @reader:	cuts the input into lines; NULL when not connected.
 * @line_bucket, @byte_bucket: the input rate limits.
 * @refused_here: messages refused on this connection.
 * @timeouts_in_row: requests that timed out since the last reply.
 * @stalled:	the last request timed out and no reply came since, on this
 *		connection or an earlier one (vr_agent_session_stalled()).
 * @up_since_us: when the session went up (monotonic).
 * @backoff_ms:	the next wait before reconnecting.
 * @hello:	the agent's hello while UP.
 * @calls:	id -> struct session_call *, the requests in flight.
 * @next_id:	the next request id to try.
 * @late:	struct late_call ring of @late_cap; @late_next is where the next
 *		one goes.
 * @lookup_missed: set by session_lookup() when an id is not in flight.
 * @have_stats, @last_stats: the last stats seen (reports, get-stats).
 * @have_seq, @last_seq: the last report's number.
 * @counters:	see struct vr_agent_session_counters.
 * @last_error:	see vr_agent_session_last_error().
 * @warn_limits: the rate limit of the messages of each kind.
 */
struct vr_agent_session {
	guint ref;
	gboolean closed;
	char *domain;
	char *path;
	struct vr_agent_session_limits limits;
	struct vr_agent_session_ops ops;
	gpointer user_data;
	struct vr_event_hub *hub;

	const struct session_conn_ops *conn_ops;
	enum session_state state;
	uint64_t conn_gen;
	int fd;
	struct vr_hub_watch *watch;
	struct vr_hub_timer *retry;
	struct vr_hub_timer *deadline;
	GString *out;
	struct vr_proto_reader *reader;
	struct vr_token_bucket line_bucket;
	struct vr_token_bucket byte_bucket;
	guint refused_here;
	guint timeouts_in_row;
	gboolean stalled;
	gint64 up_since_us;
	guint backoff_ms;
	struct vr_proto_hello hello;

	GHashTable *calls;
	uint32_t next_id;
	struct late_call *late;
	guint late_cap;
	guint late_next;
	gboolean lookup_missed;

	gboolean have_stats;
	struct vr_agent_stats last_stats;
	gboolean have_seq;
	uint64_t last_seq;

	struct vr_agent_session_counters counters;
	char *last_error;
	struct vr_ratelimit warn_limits[NR_WARN_KINDS];
};

/* ---- agent-session-conn.c ---- */

/** session_ref() - one more reference to @s (a dispatch running). Return: @s. */
struct vr_agent_session *session_ref(struct vr_agent_session *s);

/** session_unref() - drop a reference; the last one frees @s. */
void session_unref(struct vr_agent_session *s);

/** session_gone() - did a callback free @s or tear down connection @gen? */
gboolean session_gone(const struct vr_agent_session *s, uint64_t gen);

/** session_timer_clear() - cancel *@t (NULL is fine) and set it to NULL. */
void session_timer_clear(struct vr_hub_timer **t);

/**
 * session_error() - a new GError of VR_AGENT_SESSION_ERROR with @code whose
 * message starts with "domain NAME: ", made fit for a log. Owned.
 */
G_GNUC_PRINTF(3, 4)
GError *session_error(const struct vr_agent_session *s, int code, const char *fmt, ...);

/** session_set_last_error() - vr_agent_session_last_error() is a copy of @message now. */
void session_set_last_error(struct vr_agent_session *s, const char *message);

/**
 * session_log_limited() - log @message at @level unless one of @kind was
 * logged less than warn_interval_ms ago (counted as suppressed then).
 */
void session_log_limited(struct vr_agent_session *s, enum warn_kind kind, GLogLevelFlags level,
			 const char *message);

/** session_warn() - session_log_limited() at warning level. */
void session_warn(struct vr_agent_session *s, enum warn_kind kind, const char *message);

/**
 * session_debug_line() - the raw line @line of @len bytes, sent (@dir "->")
 * or received ("<-"), at debug level, escaped and cut.
 */
void session_debug_line(const struct vr_agent_session *s, const char *dir, const char *line,
			gsize len);

/**
 * session_connect() - one non-blocking connect attempt to the agent's
 * socket; a failure schedules the next one.
 */
void session_connect(struct vr_agent_session *s);

/**
 * session_disconnect() - close the connection (if any): the session is
 * WAITING afterwards and @conn_gen bumped. No reconnect is scheduled.
 */
void session_disconnect(struct vr_agent_session *s);

/**
 * session_down() - the session (or the attempt at one) went down because of
 * @code and the message: tear the connection down, schedule the reconnect,
 * fail the calls in flight (@conn_ops->down), and tell the daemon when the
 * session had been up.
 */
G_GNUC_PRINTF(3, 4)
void session_down(struct vr_agent_session *s, int code, const char *fmt, ...);

/**
 * session_refuse() - a message the session refuses (not the data of a call):
 * counted, warned about as @kind; one too many on this connection brings
 * the session down.
 */
void session_refuse(struct vr_agent_session *s, enum warn_kind kind, const GError *why);

/**
 * session_send_now() - send what the output queue holds without blocking;
 * watch for output only when some is left (errors are the watch's).
 */
void session_send_now(struct vr_agent_session *s);
