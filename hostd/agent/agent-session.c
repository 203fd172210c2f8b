/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's asynchronous session with one guest agent: see
 * agent-session.h.
 *
 * States: WAITING (a reconnect timer runs, or nothing when freed) ->
 * CONNECTING (a non-blocking connect in progress) -> HELLO (connected, hello
 * sent) -> UP. Each of the last three falls back to WAITING when something
 * fails; session_disconnect() then bumps @conn_gen, so code that called out
 * to the daemon can see that the connection it was reading is gone.
 *
 * Lifetime: the watch and timers hold a plain pointer to the session and
 * every callback holds a reference while it runs, so vr_agent_session_free()
 * from inside a callback marks the session closed, tears everything down, and
 * leaves the memory to the last reference. After every callback the code
 * checks that the session is still open and on the same connection before
 * going on.
 *
 * The socket's watch and the timers live in the event hub of the main context
 * that was the thread default when the session was made (event-hub.h): a
 * fleet of a thousand sessions is one main-loop source, not two thousand,
 * each walked and polled at every wakeup.
 */
#define _GNU_SOURCE /* SOCK_NONBLOCK, SOCK_CLOEXEC, MSG_NOSIGNAL */

#include "agent/agent-session.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "event-hub.h"
#include "fleet-quota.h"
#include "guest-bounds.h"
#include "picture.h"
#include "ratelimit.h"

/* clang-format off */
G_DEFINE_QUARK(vr-agent-session-error-quark, vr_agent_session_error)
/* clang-format on */

/* Bytes read per wakeup: a quarter of the longest line. */
#define SESSION_READ_CHUNK 16384

/* Bytes queued for the agent at most: the agent reads what it is sent
 * unless the channel is stuck; 16 lines of the largest size fit. */
#define SESSION_MAX_OUT_BYTES (16 * VR_PROTO_MAX_LINE)

/* Messages of one kind logged per warn_interval_ms (enum warn_kind); the
 * others are counted and the next one logged says how many. */
#define SESSION_LOG_BURST 1

/* Bytes of a line shown in a debug message; the rest is cut. */
#define SESSION_DEBUG_LINE_BYTES 4096

/* The ids of requests that ended without their reply (timeout, the session
 * went down) that are remembered, so that their late replies are dropped
 * quietly: this many times max_pending. */
#define SESSION_LATE_PER_PENDING 2

/* Defaults of struct vr_agent_session_limits (their reasons are in the header). */
#define DEFAULT_MAX_PENDING	    16
#define DEFAULT_HELLO_TIMEOUT_MS    5000
#define DEFAULT_MAX_TIMEOUTS_IN_ROW 3
#define DEFAULT_LINES_PER_S	    50
#define DEFAULT_BURST_LINES	    100
#define DEFAULT_BYTES_PER_S	    (1024 * 1024)
#define DEFAULT_BURST_BYTES	    (4 * 1024 * 1024)
#define DEFAULT_MAX_REFUSED	    16
#define DEFAULT_BACKOFF_INITIAL_MS  500
#define DEFAULT_BACKOFF_MAX_MS	    30000
#define DEFAULT_STABLE_MS	    10000
#define DEFAULT_WARN_INTERVAL_MS    10000
#define LIMIT_MAX_PENDING	    1024

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

static void session_connect(struct vr_agent_session *s);

/* ---- pure checks ---- */

void vr_token_bucket_init(struct vr_token_bucket *b, double rate_per_s, double burst, gint64 now_us)
{
	b->rate_per_s = rate_per_s;
	b->burst = burst;
	b->tokens = burst;
	b->last_us = now_us;
}

gboolean vr_token_bucket_take(struct vr_token_bucket *b, double n, gint64 now_us)
{
	if (now_us > b->last_us) {
		double add = (double)(now_us - b->last_us) * b->rate_per_s / 1e6;

		b->tokens = MIN(b->burst, b->tokens + add);
		b->last_us = now_us;
	}
	if (b->tokens < n)
		return FALSE;
	b->tokens -= n;
	return TRUE;
}

gboolean vr_agent_session_check_regions(const struct vr_agent_session_limits *limits,
					const struct vr_proto_regions *regions, GError **error)
{
	const struct vr_picture_bound bound = {
		.mem_bytes = limits->guest_mem_bytes,
		.phys_end_bytes = limits->guest_phys_end_bytes ? limits->guest_phys_end_bytes :
								 limits->guest_mem_bytes,
	};
	g_autoptr(GError) local = NULL;

	if (vr_picture_check(regions->regions, regions->sample_interval_us,
			     regions->aggr_interval_us, &bound, &local))
		return TRUE;
	g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_LIE,
		    "the agent claims a picture that cannot be true: %s", local->message);
	return FALSE;
}

gboolean vr_agent_session_check_cold_hist(const struct vr_agent_session_limits *limits,
					  const struct vr_proto_cold_hist *hist, GError **error)
{
	g_autoptr(GError) local = NULL;

	if (vr_fleet_check_cold_histogram(hist->bytes, limits->guest_mem_bytes, &local))
		return TRUE;
	g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_LIE, "%s",
		    local->message);
	return FALSE;
}

gboolean vr_agent_session_check_stats(const struct vr_agent_session_limits *limits,
				      const struct vr_agent_stats *stats, GError **error)
{
	if (stats->mem_total_bytes > limits->guest_mem_bytes) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_LIE,
			    "the agent claims %" PRIu64 " bytes of memory, the guest has %" PRIu64,
			    stats->mem_total_bytes, limits->guest_mem_bytes);
		return FALSE;
	}
	if (stats->reportable_free_bytes > stats->mem_total_bytes) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_LIE,
			    "the agent claims %" PRIu64
			    " bytes of reportable free memory, more than its %" PRIu64
			    " bytes of memory",
			    stats->reportable_free_bytes, stats->mem_total_bytes);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_agent_stats_went_back(const struct vr_agent_stats *last,
				  const struct vr_agent_stats *now)
{
	return now->uptime_ms < last->uptime_ms || now->nr_tried < last->nr_tried ||
	       now->sz_tried < last->sz_tried || now->nr_applied < last->nr_applied ||
	       now->sz_applied < last->sz_applied || now->qt_exceeds < last->qt_exceeds ||
	       now->agent_cpu_us < last->agent_cpu_us || now->compactions < last->compactions ||
	       now->reclaimed_bytes < last->reclaimed_bytes ||
	       now->swap_cache_release_bytes < last->swap_cache_release_bytes;
}

/* ---- limits ---- */

void vr_agent_session_limits_init(struct vr_agent_session_limits *limits, uint64_t guest_mem_bytes)
{
	*limits = (struct vr_agent_session_limits){
		.guest_mem_bytes = guest_mem_bytes,
		.guest_phys_end_bytes = 0,
		.max_pending = DEFAULT_MAX_PENDING,
		.hello_timeout_ms = DEFAULT_HELLO_TIMEOUT_MS,
		.max_timeouts_in_row = DEFAULT_MAX_TIMEOUTS_IN_ROW,
		.lines_per_s = DEFAULT_LINES_PER_S,
		.burst_lines = DEFAULT_BURST_LINES,
		.bytes_per_s = DEFAULT_BYTES_PER_S,
		.burst_bytes = DEFAULT_BURST_BYTES,
		.max_refused = DEFAULT_MAX_REFUSED,
		.backoff_initial_ms = DEFAULT_BACKOFF_INITIAL_MS,
		.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS,
		.stable_ms = DEFAULT_STABLE_MS,
		.warn_interval_ms = DEFAULT_WARN_INTERVAL_MS,
	};
}

static gboolean limit_in(uint64_t value, uint64_t min, uint64_t max, const char *name,
			 GError **error)
{
	if (value >= min && value <= max)
		return TRUE;
	g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_INVALID,
		    "limits.%s: expected %" PRIu64 "..%" PRIu64 " (got %" PRIu64 ")", name, min,
		    max, value);
	return FALSE;
}

gboolean vr_agent_session_limits_check(const struct vr_agent_session_limits *l, GError **error)
{
	if (l->guest_phys_end_bytes && l->guest_phys_end_bytes < l->guest_mem_bytes) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_INVALID,
			    "limits.guest_phys_end_bytes: expected 0 or at least guest_mem_bytes "
			    "(%" PRIu64 ") (got %" PRIu64 ")",
			    l->guest_mem_bytes, l->guest_phys_end_bytes);
		return FALSE;
	}
	return limit_in(l->guest_mem_bytes, 1, VR_PROTO_MAX_INT, "guest_mem_bytes", error) &&
	       limit_in(l->guest_phys_end_bytes, 0, VR_PROTO_MAX_INT, "guest_phys_end_bytes",
			error) &&
	       limit_in(l->max_pending, 1, LIMIT_MAX_PENDING, "max_pending", error) &&
	       limit_in(l->hello_timeout_ms, 1, G_MAXUINT, "hello_timeout_ms", error) &&
	       limit_in(l->max_timeouts_in_row, 1, G_MAXUINT, "max_timeouts_in_row", error) &&
	       limit_in(l->lines_per_s, 1, G_MAXUINT, "lines_per_s", error) &&
	       limit_in(l->burst_lines, 1, G_MAXUINT, "burst_lines", error) &&
	       limit_in(l->bytes_per_s, 1, G_MAXUINT, "bytes_per_s", error) &&
	       limit_in(l->burst_bytes, VR_PROTO_MAX_LINE, G_MAXUINT, "burst_bytes", error) &&
	       limit_in(l->backoff_initial_ms, 1, G_MAXUINT, "backoff_initial_ms", error) &&
	       limit_in(l->backoff_max_ms, l->backoff_initial_ms, G_MAXUINT, "backoff_max_ms",
			error);
}

/* ---- small helpers ---- */

static struct vr_agent_session *session_ref(struct vr_agent_session *s)
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

static void session_unref(struct vr_agent_session *s)
{
	if (--s->ref == 0)
		session_finalize(s);
}

/* Did a callback free the session or tear down connection @gen? */
static gboolean session_gone(const struct vr_agent_session *s, uint64_t gen)
{
	return s->closed || s->conn_gen != gen;
}

static void timer_clear(struct vr_hub_timer **t)
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

/* A GError of the session's domain whose message starts with the domain's name. */
G_GNUC_PRINTF(3, 4)
static GError *session_error(const struct vr_agent_session *s, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_autofree char *clean = text_clean(text);
	return g_error_new(VR_AGENT_SESSION_ERROR, code, "domain %s: %s", s->domain, clean);
}

static void session_set_last_error(struct vr_agent_session *s, const char *message)
{
	g_free(s->last_error);
	s->last_error = g_strdup(message);
}

/* A message of @kind at @level, unless one was logged less than
 * warn_interval_ms ago: the guest decides how often these happen. */
static void session_log_limited(struct vr_agent_session *s, enum warn_kind kind,
				GLogLevelFlags level, const char *message)
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

static void session_warn(struct vr_agent_session *s, enum warn_kind kind, const char *message)
{
	session_log_limited(s, kind, G_LOG_LEVEL_WARNING, message);
}

/* The raw line at debug level, escaped (a guest's bytes never reach a log
 * as they are) and cut to SESSION_DEBUG_LINE_BYTES. */
static void session_debug_line(const struct vr_agent_session *s, const char *dir, const char *line,
			       gsize len)
{
	if (g_log_writer_default_would_drop(G_LOG_LEVEL_DEBUG, G_LOG_DOMAIN))
		return;
	gsize shown = MIN(len, SESSION_DEBUG_LINE_BYTES);
	g_autofree char *copy = g_strndup(line, shown);
	g_autofree char *escaped = g_strescape(copy, NULL);
	g_debug("domain %s: %s %s%s", s->domain, dir, escaped, shown < len ? "..." : "");
}

/* ---- requests in flight ---- */

static void late_add(struct vr_agent_session *s, uint32_t id, enum vr_proto_command command)
{
	s->late[s->late_next] = (struct late_call){ .id = id, .command = command };
	s->late_next = (s->late_next + 1) % s->late_cap;
}

/* Find (and forget) late request @id. */
static gboolean late_take(struct vr_agent_session *s, uint32_t id, enum vr_proto_command *command)
{
	for (guint i = 0; i < s->late_cap; i++) {
		if (s->late[i].id == id) {
			if (command)
				*command = s->late[i].command;
			s->late[i].id = 0;
			return TRUE;
		}
	}
	return FALSE;
}

static gboolean late_find(const struct vr_agent_session *s, uint32_t id,
			  enum vr_proto_command *command)
{
	for (guint i = 0; i < s->late_cap; i++) {
		if (id && s->late[i].id == id) {
			*command = s->late[i].command;
			return TRUE;
		}
	}
	return FALSE;
}

/* vr_proto_command_lookup for the decoder: requests in flight, then late ones. */
static gboolean session_lookup(uint32_t id, enum vr_proto_command *command, gpointer data)
{
	struct vr_agent_session *s = data;
	struct session_call *call = g_hash_table_lookup(s->calls, GUINT_TO_POINTER(id));

	if (call) {
		*command = call->command;
		return TRUE;
	}
	if (late_find(s, id, command))
		return TRUE;
	s->lookup_missed = TRUE;
	return FALSE;
}

/* End @call: out of the table, its callback called. (The deadline timer
 * finds no call of its deadline when it fires, and goes on to the next.) */
static void call_finish(struct vr_agent_session *s, struct session_call *call,
			struct vr_proto_message *reply, const GError *error)
{
	g_hash_table_steal(s->calls, GUINT_TO_POINTER(call->id));
	if (!g_hash_table_size(s->calls))
		timer_clear(&s->deadline); /* nothing left to time out */
	if (call->cb)
		call->cb(s, reply, error, call->user_data);
	g_free(call);
}

static gint compare_ids(gconstpointer a, gconstpointer b)
{
	uint32_t x = GPOINTER_TO_UINT(a), y = GPOINTER_TO_UINT(b);

	return x < y ? -1 : x > y;
}

/* Fail every call in flight with @code and @message, oldest first. A
 * callback that frees the session stops this; free() fails the rest.
 * @late: remember the ids, so that their replies are dropped quietly. */
static void calls_fail_all(struct vr_agent_session *s, int code, const char *message, gboolean late,
			   gboolean closing)
{
	GList *ids = g_list_sort(g_hash_table_get_keys(s->calls), compare_ids);

	for (GList *l = ids; l; l = l->next) {
		if (s->closed && !closing)
			break;
		struct session_call *call = g_hash_table_lookup(s->calls, l->data);
		if (!call)
			continue;
		if (late)
			late_add(s, call->id, call->command);
		g_autoptr(GError)
			error = g_error_new_literal(VR_AGENT_SESSION_ERROR, code, message);
		call_finish(s, call, NULL, error);
	}
	g_list_free(ids);
}

/* ---- connection ---- */

/* Close the connection (if any); the session is WAITING afterwards. */
static void session_disconnect(struct vr_agent_session *s)
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

	timer_clear(&s->retry);
	s->retry = vr_event_hub_add_timer(s->hub, g_get_monotonic_time() + (gint64)wait_ms * 1000,
					  session_on_retry, s);
	s->backoff_ms = (guint)MIN((uint64_t)wait_ms * 2, s->limits.backoff_max_ms);
	return wait_ms;
}

/* The session (or the attempt at one) went down because of @code and the
 * message: tear the connection down, schedule the reconnect, fail the calls
 * in flight, and tell the daemon when the session had been up. */
G_GNUC_PRINTF(3, 4)
static void session_down(struct vr_agent_session *s, int code, const char *fmt, ...)
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
	calls_fail_all(s, VR_AGENT_SESSION_ERROR_DOWN, call_message, TRUE, FALSE);
	if (was_up && !s->closed && s->ops.down)
		s->ops.down(s, error, s->user_data);
}

/* A message the session refuses (not the data of a call): counted, warned
 * about; one too many brings the session down. */
static void session_refuse(struct vr_agent_session *s, enum warn_kind kind, const GError *why)
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

static void session_on_deadline(gpointer data);

/* Arm the deadline timer for @deadline_us unless it fires before. */
static void session_arm_deadline(struct vr_agent_session *s, gint64 deadline_us)
{
	if (s->deadline && vr_hub_timer_due(s->deadline) <= deadline_us)
		return;
	timer_clear(&s->deadline);
	s->deadline = vr_event_hub_add_timer(s->hub, deadline_us, session_on_deadline, s);
}

/*
 * Send what @out holds now, without blocking, and watch for output only
 * when some is left: most lines go at once, and waiting for output first
 * cost a main context wakeup per line. An error is left to the watch
 * (session_flush() then takes the session down), so that no callback runs
 * inside vr_agent_session_call().
 */
static void session_send_now(struct vr_agent_session *s)
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

static uint32_t session_next_id(struct vr_agent_session *s)
{
	for (;;) {
		uint32_t id = s->next_id++;
		if (id && !g_hash_table_contains(s->calls, GUINT_TO_POINTER(id)))
			return id;
	}
}

/* Send @req (its id chosen here) and watch its deadline. */
static gboolean session_send(struct vr_agent_session *s, struct vr_proto_request *req,
			     guint timeout_ms, gboolean hello, vr_agent_session_reply_cb cb,
			     gpointer user_data, GError **error)
{
	req->id = session_next_id(s);
	g_autofree char *line = vr_proto_encode_request(req, error);
	if (!line) {
		g_prefix_error(error, "domain %s: %s request: ", s->domain,
			       vr_proto_command_name(req->command));
		return FALSE;
	}
	gsize len = strlen(line);
	if (s->out->len + len > SESSION_MAX_OUT_BYTES) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_BUSY,
			    "domain %s: the agent does not read its channel (%zu bytes queued)",
			    s->domain, s->out->len);
		return FALSE;
	}
	session_debug_line(s, "->", line, len - 1);
	g_string_append_len(s->out, line, (gssize)len);
	session_send_now(s);

	struct session_call *call = g_new0(struct session_call, 1);
	call->s = s;
	call->id = req->id;
	call->command = req->command;
	call->timeout_ms = timeout_ms;
	call->hello = hello;
	call->cb = cb;
	call->user_data = user_data;
	call->deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	g_hash_table_insert(s->calls, GUINT_TO_POINTER(call->id), call);
	session_arm_deadline(s, call->deadline_us);
	return TRUE;
}

/* The call in flight whose deadline comes first (the older on a tie), or
 * NULL; *@next_us: its deadline. */
static struct session_call *calls_first_deadline(struct vr_agent_session *s, gint64 *next_us)
{
	struct session_call *first = NULL;
	GHashTableIter it;
	gpointer value;

	g_hash_table_iter_init(&it, s->calls);
	while (g_hash_table_iter_next(&it, NULL, &value)) {
		struct session_call *call = value;

		if (!first || call->deadline_us < first->deadline_us ||
		    (call->deadline_us == first->deadline_us && call->id < first->id))
			first = call;
	}
	if (first)
		*next_us = first->deadline_us;
	return first;
}

/* @call's deadline passed. FALSE when the session went down. */
static gboolean session_call_timed_out(struct vr_agent_session *s, struct session_call *call)
{
	uint64_t gen = s->conn_gen;

	s->counters.timeouts++;
	s->stalled = TRUE;
	if (call->hello) {
		session_down(s, VR_AGENT_SESSION_ERROR_UNANSWERED,
			     "the agent did not answer hello within %u ms", call->timeout_ms);
		return FALSE;
	}
	late_add(s, call->id, call->command);
	s->timeouts_in_row++;
	g_autoptr(GError) error =
		session_error(s, VR_AGENT_SESSION_ERROR_TIMEOUT,
			      "the agent did not answer %s (request %u) within %u ms",
			      vr_proto_command_name(call->command), call->id, call->timeout_ms);
	session_set_last_error(s, error->message);
	call_finish(s, call, NULL, error);
	if (session_gone(s, gen))
		return FALSE;
	if (s->timeouts_in_row >= s->limits.max_timeouts_in_row) {
		session_down(s, VR_AGENT_SESSION_ERROR_UNANSWERED,
			     "the agent did not answer %u requests in a row", s->timeouts_in_row);
		return FALSE;
	}
	return TRUE;
}

/* The deadline timer: time out the calls whose deadline passed, oldest
 * first, and arm it again for the next one. */
static void session_on_deadline(gpointer data)
{
	struct vr_agent_session *s = session_ref(data);
	struct session_call *call;
	gint64 next_us = 0;

	s->deadline = NULL; /* it fired */
	while ((call = calls_first_deadline(s, &next_us))) {
		if (next_us > g_get_monotonic_time()) {
			session_arm_deadline(s, next_us);
			break;
		}
		if (!session_call_timed_out(s, call) || s->closed)
			break;
	}
	session_unref(s);
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

	struct vr_proto_request req = { .command = VR_PROTO_HELLO };
	g_autoptr(GError) error = NULL;
	if (!session_send(s, &req, s->limits.hello_timeout_ms, TRUE, NULL, NULL, &error))
		session_down(s, VR_AGENT_SESSION_ERROR_CLOSED, "cannot send hello: %s",
			     error->message); /* cannot happen: an empty queue, a valid request */
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

/* One non-blocking connect attempt. */
static void session_connect(struct vr_agent_session *s)
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

/* ---- what the agent sends ---- */

/* Stats seen (report or get-stats): tell the daemon when the agent restarted.
 * @seq: the report's number, or NULL for get-stats. Return: FALSE when a
 * callback freed the session or ended the connection @gen. */
static gboolean session_stats_seen(struct vr_agent_session *s, const struct vr_agent_stats *stats,
				   const uint64_t *seq, uint64_t gen)
{
	gboolean restarted = FALSE;

	if (seq && s->have_seq) {
		/* Saturating: a guest that fakes restarts picks the numbers. */
		if (*seq < s->last_seq) {
			restarted = TRUE;
			s->counters.reports_lost = vr_u64_add_sat(
				s->counters.reports_lost, *seq); /* 0..seq-1 of the new run */
		} else if (*seq > s->last_seq + 1) {
			s->counters.reports_lost =
				vr_u64_add_sat(s->counters.reports_lost, *seq - s->last_seq - 1);
		}
	}
	if (s->have_stats && vr_agent_stats_went_back(&s->last_stats, stats))
		restarted = TRUE;
	struct vr_agent_stats last = s->last_stats;
	s->last_stats = *stats;
	s->have_stats = TRUE;
	if (seq) {
		s->last_seq = *seq;
		s->have_seq = TRUE;
	} else if (restarted) {
		s->have_seq = FALSE; /* the new run's numbers are not known yet */
	}
	if (!restarted)
		return TRUE;
	s->counters.agent_restarts++;
	g_autofree char *message =
		g_strdup_printf("domain %s: the agent restarted (its uptime went from %" PRIu64
				" to %" PRIu64 " ms)",
				s->domain, last.uptime_ms, stats->uptime_ms);
	session_log_limited(s, WARN_RESTART, G_LOG_LEVEL_MESSAGE, message);
	if (s->ops.restarted)
		s->ops.restarted(s, &last, stats, s->user_data);
	return !session_gone(s, gen);
}

static void session_on_report(struct vr_agent_session *s, struct vr_proto_message *msg,
			      uint64_t gen)
{
	g_autoptr(GError) local = NULL;

	if (s->state != STATE_UP) {
		g_debug("domain %s: report %" PRIu64 " before hello was answered: dropped",
			s->domain, msg->seq);
		return;
	}
	if (!vr_agent_session_check_stats(&s->limits, &msg->stats, &local)) {
		g_autoptr(GError) error = session_error(s, VR_AGENT_SESSION_ERROR_LIE,
							"report %" PRIu64 " refused: %s", msg->seq,
							local->message);
		session_refuse(s, WARN_LIE, error);
		return;
	}
	if (!session_stats_seen(s, &msg->stats, &msg->seq, gen))
		return;
	s->counters.reports++;
	if (s->ops.report)
		s->ops.report(s, &msg->stats, msg->seq, s->user_data);
}

static void session_on_hello(struct vr_agent_session *s, struct session_call *call,
			     struct vr_proto_message *msg)
{
	call_finish(s, call, NULL, NULL);
	if (msg->kind == VR_PROTO_MESSAGE_ERROR) {
		session_down(s, VR_AGENT_SESSION_ERROR_PROTOCOL, "the agent refused hello (%s): %s",
			     vr_proto_error_class_name(msg->error.cls), msg->error.desc);
		return;
	}
	s->hello = msg->hello;
	s->state = STATE_UP;
	s->up_since_us = g_get_monotonic_time();
	s->counters.ups++;
	g_message("domain %s: the session with the agent is up (agent %s, protocol %u, kernel %s, "
		  "backend %s, free page reporting %s)",
		  s->domain, s->hello.agent, s->hello.version, s->hello.kernel, s->hello.backend,
		  s->hello.free_page_reporting ? "on" : "off");
	if (s->ops.up)
		s->ops.up(s, &s->hello, s->user_data);
}

/* The claims of a reply to @command that cannot be true. */
static gboolean session_check_reply(const struct vr_agent_session *s,
				    const struct vr_proto_message *msg, GError **error)
{
	if (msg->kind != VR_PROTO_MESSAGE_REPLY)
		return TRUE;
	if (msg->command == VR_PROTO_GET_REGIONS)
		return vr_agent_session_check_regions(&s->limits, &msg->regions, error);
	if (msg->command == VR_PROTO_GET_STATS)
		return vr_agent_session_check_stats(&s->limits, &msg->stats, error);
	if (msg->command == VR_PROTO_GET_COLD_HIST)
		return vr_agent_session_check_cold_hist(&s->limits, &msg->cold_hist, error);
	return TRUE;
}

static void session_on_reply(struct vr_agent_session *s, struct vr_proto_message *msg, uint64_t gen)
{
	g_autoptr(GError) local = NULL;

	if (msg->kind == VR_PROTO_MESSAGE_ERROR && msg->id == 0) {
		g_autoptr(GError) error =
			session_error(s, VR_AGENT_SESSION_ERROR_PROTOCOL,
				      "the agent could not read a request of ours (%s): %s",
				      vr_proto_error_class_name(msg->error.cls), msg->error.desc);
		session_refuse(s, WARN_NO_ID, error);
		return;
	}
	struct session_call *call = g_hash_table_lookup(s->calls, GUINT_TO_POINTER(msg->id));
	if (!call) {
		enum vr_proto_command command;
		if (late_take(s, msg->id, &command)) {
			s->counters.late_replies++;
			s->timeouts_in_row = 0;
			s->stalled = FALSE;
			g_debug("domain %s: the late reply to %s (request %u) dropped", s->domain,
				vr_proto_command_name(command), msg->id);
			return;
		}
		g_autoptr(GError) error = session_error(
			s, VR_AGENT_SESSION_ERROR_PROTOCOL,
			"the agent answered request %u, which is not in flight", msg->id);
		session_refuse(s, WARN_STRAY, error);
		return;
	}
	s->timeouts_in_row = 0;
	s->stalled = FALSE;
	if (call->hello) {
		session_on_hello(s, call, msg);
		return;
	}
	if (!session_check_reply(s, msg, &local)) {
		g_autoptr(GError) error = session_error(s, VR_AGENT_SESSION_ERROR_LIE,
							"the reply to %s (request %u) refused: %s",
							vr_proto_command_name(call->command),
							call->id, local->message);
		call_finish(s, call, NULL, error);
		if (!session_gone(s, gen))
			session_refuse(s, WARN_LIE, error);
		return;
	}
	if (msg->kind == VR_PROTO_MESSAGE_REPLY && msg->command == VR_PROTO_GET_STATS &&
	    !session_stats_seen(s, &msg->stats, NULL, gen)) {
		/* A callback freed the session: free() failed the call already. */
		return;
	}
	call_finish(s, call, msg, NULL);
}

/* A line that broke the protocol: the call it answers (if any) gets the
 * error, then the session goes down. */
static void session_on_invalid(struct vr_agent_session *s, uint32_t id, const GError *why,
			       uint64_t gen)
{
	struct session_call *call = id ? g_hash_table_lookup(s->calls, GUINT_TO_POINTER(id)) : NULL;

	s->counters.refused++;
	g_autoptr(GError) error = session_error(s, VR_AGENT_SESSION_ERROR_PROTOCOL,
						"the agent sent an invalid line: %s", why->message);
	session_warn(s, WARN_INVALID, error->message);
	if (call && !call->hello) {
		g_autoptr(GError) call_error =
			session_error(s, VR_AGENT_SESSION_ERROR_PROTOCOL,
				      "the reply to %s (request %u) is invalid: %s",
				      vr_proto_command_name(call->command), call->id, why->message);
		call_finish(s, call, NULL, call_error);
		if (session_gone(s, gen))
			return;
	}
	session_down(s, VR_AGENT_SESSION_ERROR_PROTOCOL, "the agent sent an invalid line: %s",
		     why->message);
}

static void session_on_line(struct vr_agent_session *s, const char *line, gsize len, uint64_t gen)
{
	g_auto(vr_proto_message) msg = { 0 };
	g_autoptr(GError) local = NULL;

	session_debug_line(s, "<-", line, len);
	s->lookup_missed = FALSE;
	if (!vr_proto_decode_message(line, len, session_lookup, s, &msg, &local)) {
		if (s->lookup_missed) {
			g_autoptr(GError) error = session_error(
				s, VR_AGENT_SESSION_ERROR_PROTOCOL,
				"the agent answered request %u, which is not in flight", msg.id);
			session_refuse(s, WARN_STRAY, error);
			return;
		}
		session_on_invalid(s, msg.id, local, gen);
		return;
	}
	if (msg.kind == VR_PROTO_MESSAGE_REPORT)
		session_on_report(s, &msg, gen);
	else
		session_on_reply(s, &msg, gen);
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
		session_on_line(s, line, len, gen);
		if (session_gone(s, gen))
			return;
	}
}

/* ---- public ---- */

struct vr_agent_session *vr_agent_session_new(const char *domain, const char *path,
					      const struct vr_agent_session_limits *limits,
					      const struct vr_agent_session_ops *ops,
					      gpointer user_data, GError **error)
{
	struct sockaddr_un sa;

	g_return_val_if_fail(limits != NULL, NULL);
	if (!domain || !*domain) {
		g_set_error_literal(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_INVALID,
				    "the domain name is empty");
		return NULL;
	}
	if (!path || !*path || strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_INVALID,
			    "domain %s: the agent's socket path must have 1..%zu bytes (got %zu)",
			    domain, sizeof(sa.sun_path) - 1, path ? strlen(path) : 0);
		return NULL;
	}
	if (!vr_agent_session_limits_check(limits, error)) {
		g_prefix_error(error, "domain %s: ", domain);
		return NULL;
	}

	struct vr_event_hub *hub =
		vr_event_hub_ref_for_context(g_main_context_get_thread_default(), error);
	if (!hub) {
		g_prefix_error(error, "domain %s: ", domain);
		return NULL;
	}

	struct vr_agent_session *s = g_new0(struct vr_agent_session, 1);
	s->ref = 1;
	s->hub = hub;
	s->domain = g_strdup(domain);
	s->path = g_strdup(path);
	s->limits = *limits;
	if (ops)
		s->ops = *ops;
	s->user_data = user_data;
	s->fd = -1;
	s->out = g_string_new(NULL);
	s->calls = g_hash_table_new(g_direct_hash, g_direct_equal);
	s->next_id = 1;
	s->late_cap = limits->max_pending * SESSION_LATE_PER_PENDING;
	s->late = g_new0(struct late_call, s->late_cap);
	s->backoff_ms = limits->backoff_initial_ms;
	for (guint k = 0; k < NR_WARN_KINDS; k++)
		vr_ratelimit_init(&s->warn_limits[k], (uint64_t)limits->warn_interval_ms * 1000,
				  SESSION_LOG_BURST);
	session_connect(s);
	return s;
}

void vr_agent_session_free(struct vr_agent_session *s)
{
	if (!s || s->closed)
		return;
	s->closed = TRUE;
	session_disconnect(s);
	timer_clear(&s->retry);
	timer_clear(&s->deadline);
	g_autofree char *message =
		g_strdup_printf("domain %s: the session with the agent was freed", s->domain);
	calls_fail_all(s, VR_AGENT_SESSION_ERROR_CANCELLED, message, FALSE, TRUE);
	session_unref(s);
}

gboolean vr_agent_session_call(struct vr_agent_session *s, struct vr_proto_request *req,
			       guint timeout_ms, vr_agent_session_reply_cb cb, gpointer user_data,
			       GError **error)
{
	g_return_val_if_fail(s != NULL && req != NULL && cb != NULL, FALSE);

	if (s->closed) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_CANCELLED,
			    "domain %s: the session with the agent is being freed", s->domain);
		return FALSE;
	}
	if (s->state != STATE_UP) {
		static const char *const states[] = {
			[STATE_WAITING] = "waiting to reconnect",
			[STATE_CONNECTING] = "connecting",
			[STATE_HELLO] = "waiting for the answer to hello",
		};
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_DOWN,
			    "domain %s: the session with the agent is not up (%s)", s->domain,
			    states[s->state]);
		return FALSE;
	}
	if (timeout_ms == 0) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_INVALID,
			    "domain %s: a call's timeout must be at least 1 ms", s->domain);
		return FALSE;
	}
	if (g_hash_table_size(s->calls) >= s->limits.max_pending) {
		g_set_error(error, VR_AGENT_SESSION_ERROR, VR_AGENT_SESSION_ERROR_BUSY,
			    "domain %s: %u requests to the agent are in flight, the most allowed "
			    "(max_pending)",
			    s->domain, g_hash_table_size(s->calls));
		return FALSE;
	}
	return session_send(s, req, timeout_ms, FALSE, cb, user_data, error);
}

void vr_agent_session_kick(struct vr_agent_session *s)
{
	if (s->closed || s->state != STATE_WAITING || !s->retry)
		return;
	timer_clear(&s->retry);
	session_connect(s);
}

gboolean vr_agent_session_is_up(const struct vr_agent_session *s)
{
	return s && s->state == STATE_UP;
}

const struct vr_proto_hello *vr_agent_session_hello(const struct vr_agent_session *s)
{
	return s->state == STATE_UP ? &s->hello : NULL;
}

const char *vr_agent_session_domain(const struct vr_agent_session *s)
{
	return s->domain;
}

void vr_agent_session_counters(const struct vr_agent_session *s,
			       struct vr_agent_session_counters *out)
{
	*out = s->counters;
}

gboolean vr_agent_session_stalled(const struct vr_agent_session *s)
{
	return s && s->stalled;
}

const char *vr_agent_session_last_error(const struct vr_agent_session *s)
{
	return s->last_error;
}
