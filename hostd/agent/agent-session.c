/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's asynchronous session with one guest agent (see
 * agent-session.h): the session and its calls. Its public functions, request
 * ids, the calls in flight and their one deadline timer, the ids of calls
 * that ended without their reply (so that a late reply is dropped quietly),
 * and what the agent sends: the answer to hello, replies matched to their
 * calls and checked for claims that cannot be true, reports, invalid lines.
 * The connection they travel on is agent-session-conn.c's, below this
 * (agent-session-private.h); the limits are agent-session-limits.c's.
 *
 * Lifetime: the watch and timers hold a plain pointer to the session and
 * every callback holds a reference while it runs, so vr_agent_session_free()
 * from inside a callback marks the session closed, tears everything down, and
 * leaves the memory to the last reference. After every callback the code
 * checks that the session is still open and on the same connection before
 * going on.
 */
#include "agent/agent-session-private.h"

#include <inttypes.h>
#include <string.h>
#include <sys/un.h>

#include "guest-bounds.h"

/* Bytes queued for the agent at most: the agent reads what it is sent
 * unless the channel is stuck; 16 lines of the largest size fit. */
#define SESSION_MAX_OUT_BYTES (16 * VR_PROTO_MAX_LINE)

/* Messages of one kind logged per warn_interval_ms (enum warn_kind); the
 * others are counted and the next one logged says how many. */
#define SESSION_LOG_BURST 1

/* The ids of requests that ended without their reply (timeout, the session
 * went down) that are remembered, so that their late replies are dropped
 * quietly: this many times max_pending. */
#define SESSION_LATE_PER_PENDING 2

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
		session_timer_clear(&s->deadline); /* nothing left to time out */
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
static void session_on_deadline(gpointer data);

/* Arm the deadline timer for @deadline_us unless it fires before. */
static void session_arm_deadline(struct vr_agent_session *s, gint64 deadline_us)
{
	if (s->deadline && vr_hub_timer_due(s->deadline) <= deadline_us)
		return;
	session_timer_clear(&s->deadline);
	s->deadline = vr_event_hub_add_timer(s->hub, deadline_us, session_on_deadline, s);
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

/* The connection is up: say hello (connected(), struct session_conn_ops). */
static void session_say_hello(struct vr_agent_session *s)
{
	struct vr_proto_request req = { .command = VR_PROTO_HELLO };
	g_autoptr(GError) error = NULL;

	if (!session_send(s, &req, s->limits.hello_timeout_ms, TRUE, NULL, NULL, &error))
		session_down(s, VR_AGENT_SESSION_ERROR_CLOSED, "cannot send hello: %s",
			     error->message); /* cannot happen: an empty queue, a valid request */
}

/* The connection went down (down(), struct session_conn_ops): the calls in
 * flight fail, their ids remembered so that late replies are dropped. */
static void session_conn_down(struct vr_agent_session *s, const char *message)
{
	calls_fail_all(s, VR_AGENT_SESSION_ERROR_DOWN, message, TRUE, FALSE);
}

static const struct session_conn_ops session_conn_ops = {
	.connected = session_say_hello,
	.line = session_on_line,
	.down = session_conn_down,
};

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
	s->conn_ops = &session_conn_ops;
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
	session_timer_clear(&s->retry);
	session_timer_clear(&s->deadline);
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
	session_timer_clear(&s->retry);
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
