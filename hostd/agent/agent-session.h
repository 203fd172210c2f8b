/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's asynchronous session with one domain's guest agent, over the
 * host end of the agent's virtio-serial channel (the unix socket libvirt or
 * QEMU listens on). It runs on the thread-default GMainContext of the thread
 * that creates it: it connects without blocking, says hello, keeps the
 * session up, sends requests and matches their replies, hands on the agent's
 * reports, and reconnects with exponential backoff when the session goes
 * down (the socket closes or is not there yet, a line breaks the rules, a
 * limit is hit, requests keep going unanswered).
 *
 * The guest is untrusted. Every line passes vr_proto_decode_message(), and
 * the session enforces per-domain limits on top (struct
 * vr_agent_session_limits): a line and byte rate, the line length (through
 * struct vr_proto_reader), the requests in flight, replies to no request,
 * and what the guest can truthfully claim about its memory. A guest address
 * the agent sends (get-regions) is information for the policy engine only:
 * the daemon never acts on a guest address an agent sends, and the bound
 * checks here only refuse claims that cannot be true.
 *
 * Log messages all carry the domain name: g_debug() for the raw lines,
 * g_message() when the session goes up or down, g_warning() for a refused
 * message, at most one warning per kind per warn_interval_ms (a hostile
 * guest cannot flood the host's log).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "protocol.h"

#define VR_AGENT_SESSION_ERROR (vr_agent_session_error_quark())
GQuark vr_agent_session_error_quark(void);

/**
 * enum vr_agent_session_error - why a session went down, why a call failed.
 * @VR_AGENT_SESSION_ERROR_INVALID:	vr_agent_session_new() got a bad
 *					argument (the message names it).
 * @VR_AGENT_SESSION_ERROR_CONNECT:	the socket cannot be reached (not
 *					there yet, refused).
 * @VR_AGENT_SESSION_ERROR_CLOSED:	the channel closed or broke.
 * @VR_AGENT_SESSION_ERROR_PROTOCOL:	a line broke the protocol (not JSON,
 *					too long, invalid member; the agent
 *					refused hello).
 * @VR_AGENT_SESSION_ERROR_FLOOD:	the agent sent more lines or bytes
 *					than the rate limit allows.
 * @VR_AGENT_SESSION_ERROR_REFUSED:	too many refused messages (replies
 *					to no request, lies) in one connection.
 * @VR_AGENT_SESSION_ERROR_UNANSWERED:	hello, or max_timeouts_in_row
 *					requests in a row, went unanswered.
 * @VR_AGENT_SESSION_ERROR_TIMEOUT:	(a call) no reply within its timeout.
 * @VR_AGENT_SESSION_ERROR_DOWN:	(a call) the session is not up, or
 *					went down while the call was pending;
 *					the message says why.
 * @VR_AGENT_SESSION_ERROR_BUSY:	(a call) max_pending requests are in
 *					flight already.
 * @VR_AGENT_SESSION_ERROR_LIE:		(a call, a report) the agent claims
 *					more memory than the guest has.
 * @VR_AGENT_SESSION_ERROR_CANCELLED:	(a call) vr_agent_session_free()
 *					ended the session.
 */
enum vr_agent_session_error {
	VR_AGENT_SESSION_ERROR_INVALID,
	VR_AGENT_SESSION_ERROR_CONNECT,
	VR_AGENT_SESSION_ERROR_CLOSED,
	VR_AGENT_SESSION_ERROR_PROTOCOL,
	VR_AGENT_SESSION_ERROR_FLOOD,
	VR_AGENT_SESSION_ERROR_REFUSED,
	VR_AGENT_SESSION_ERROR_UNANSWERED,
	VR_AGENT_SESSION_ERROR_TIMEOUT,
	VR_AGENT_SESSION_ERROR_DOWN,
	VR_AGENT_SESSION_ERROR_BUSY,
	VR_AGENT_SESSION_ERROR_LIE,
	VR_AGENT_SESSION_ERROR_CANCELLED,
};

/**
 * struct vr_agent_session_limits - what the session allows one domain's
 * agent; fill with vr_agent_session_limits_init() and change what differs.
 * @guest_mem_bytes:	the guest's memory (the domain XML's <memory>), bytes,
 *			> 0. get-regions whose regions sum to more, and stats
 *			whose mem_total_bytes is larger, are refused as lies.
 * @guest_phys_end_bytes: the end of the guest's physical RAM (the highest
 *			gpa + size of its RAM ranges, struct vr_ram_range), bytes;
 *			a region ending beyond it is a lie. 0: @guest_mem_bytes,
 *			right for a guest whose RAM has no hole below it; an x86
 *			guest with RAM above the PCI hole (more than about 3 GiB)
 *			needs the real end.
 * @max_pending:	requests in flight at most, 1..1024 (default 16; hello
 *			counts); more are refused at once.
 * @hello_timeout_ms:	time for the agent to answer hello after a connect,
 *			ms (default 5000: the agent reopens its port every 500 ms,
 *			and a QEMU that dropped a killed host may not pass data
 *			for a while); then the session reconnects.
 * @max_timeouts_in_row: requests timing out in a row that restart the
 *			session (default 3: a new connection clears a channel
 *			that carries nothing any more); >= 1.
 * @lines_per_s, @burst_lines: the line rate, a token bucket (default 50 lines/s,
 *			burst 100: an agent sends a report at most every 100 ms
 *			and one line per request); beyond it the session goes
 *			down ("the agent floods the channel").
 * @bytes_per_s, @burst_bytes: the same for bytes (default 1 MiB/s, burst 4 MiB;
 *			@burst_bytes >= VR_PROTO_MAX_LINE): blank lines, which
 *			the line reader skips, still cost bytes.
 * @max_refused:	refused messages (replies to no request, error replies
 *			without an id, lies) one connection may send; one more
 *			brings the session down (default 16).
 * @backoff_initial_ms, @backoff_max_ms: the wait before reconnecting, ms: it
 *			starts at the initial one (default 500) and doubles up to
 *			the cap (default 30000) each time the session goes down
 *			or a connect fails.
 * @stable_ms:		a session that stayed up this long, ms, starts its
 *			next wait at @backoff_initial_ms again (default 10000);
 *			one that flaps keeps doubling.
 * @warn_interval_ms:	at most one warning per kind per this time, ms
 *			(default 10000); the others are counted and the next
 *			warning says how many were suppressed. The message that
 *			the agent restarted (its counters went back, which a
 *			guest can fake at will) is limited the same way.
 */
struct vr_agent_session_limits {
	uint64_t guest_mem_bytes;
	uint64_t guest_phys_end_bytes;
	guint max_pending;
	guint hello_timeout_ms;
	guint max_timeouts_in_row;
	guint lines_per_s;
	guint burst_lines;
	guint bytes_per_s;
	guint burst_bytes;
	guint max_refused;
	guint backoff_initial_ms;
	guint backoff_max_ms;
	guint stable_ms;
	guint warn_interval_ms;
};

/**
 * vr_agent_session_limits_init() - fill @limits with the defaults above for a
 * guest of @guest_mem_bytes.
 */
void vr_agent_session_limits_init(struct vr_agent_session_limits *limits, uint64_t guest_mem_bytes);

/**
 * vr_agent_session_limits_check() - whether @limits are usable.
 * Return: TRUE, or FALSE with @error (VR_AGENT_SESSION_ERROR_INVALID) naming
 * the member and its allowed range.
 */
gboolean vr_agent_session_limits_check(const struct vr_agent_session_limits *limits,
				       GError **error);

/**
 * struct vr_agent_session_counters - cumulative over the session's life,
 * for the daemon's status.
 * @lines_in, @bytes_in: lines and bytes received (blank lines count as bytes).
 * @refused:		messages refused: lines that broke the rules, replies
 *			to no request, error replies without an id, lies.
 * @refused_stray:	of @refused, replies to no request in flight.
 * @refused_lies:	of @refused, claims beyond the guest's memory.
 * @late_replies:	replies to requests that had timed out or were failed
 *			when the session went down (dropped, not refused).
 * @timeouts:		requests that timed out (hello included).
 * @connects:		connections made (the socket accepted).
 * @reconnects:		of @connects, those after the first.
 * @connect_failures:	connect attempts that failed.
 * @ups, @downs:	times the session went up, and down again.
 * @reports:		reports passed to ops->report.
 * @reports_lost:	reports missing from the sequence (gaps in seq).
 * @agent_restarts:	times the agent's counters went back (it restarted).
 * @log_suppressed:	messages about the agent held back by the rate limit
 *			(warn_interval_ms): refused messages, restarts.
 */
struct vr_agent_session_counters {
	uint64_t lines_in;
	uint64_t bytes_in;
	uint64_t refused;
	uint64_t refused_stray;
	uint64_t refused_lies;
	uint64_t late_replies;
	uint64_t timeouts;
	uint64_t connects;
	uint64_t reconnects;
	uint64_t connect_failures;
	uint64_t ups;
	uint64_t downs;
	uint64_t reports;
	uint64_t reports_lost;
	uint64_t agent_restarts;
	uint64_t log_suppressed;
};

struct vr_agent_session;
typedef struct vr_agent_session vr_agent_session;

/**
 * struct vr_agent_session_ops - what the session tells the daemon; all run
 * from the session's main context, any may be NULL. A callback may call
 * vr_agent_session_call(), and vr_agent_session_free() (nothing of the
 * session runs after that).
 * @up:		hello was answered and validated: the session is up. @hello
 *		is borrowed for the call.
 * @down:	the session, which was up, went down; @error names why (codes
 *		CLOSED, PROTOCOL, FLOOD, REFUSED, UNANSWERED). Pending calls
 *		have been failed before. A reconnect is scheduled. Failures
 *		before the session came up (connect, hello) call nothing: see
 *		vr_agent_session_last_error(). @up and @down alternate.
 * @report:	a valid report numbered @seq; @stats is borrowed.
 * @restarted:	the agent's cumulative counters went back (uptime, tried,
 *		applied, ...) or its report numbers started over: it restarted.
 *		@last are the last stats seen from the previous run, @now the
 *		first of the new one, so the daemon can keep its totals. Called
 *		before the report or reply that carries @now.
 */
struct vr_agent_session_ops {
	void (*up)(struct vr_agent_session *s, const struct vr_proto_hello *hello,
		   gpointer user_data);
	void (*down)(struct vr_agent_session *s, const GError *error, gpointer user_data);
	void (*report)(struct vr_agent_session *s, const struct vr_agent_stats *stats, uint64_t seq,
		       gpointer user_data);
	void (*restarted)(struct vr_agent_session *s, const struct vr_agent_stats *last,
			  const struct vr_agent_stats *now, gpointer user_data);
};

/**
 * vr_agent_session_reply_cb - the end of one call; called exactly once for
 * every call vr_agent_session_call() accepted.
 * @reply:	the validated reply, REPLY or ERROR kind (an error reply is the
 *		agent's refusal: see @reply->error), or NULL with @error. Owned by
 *		the session; the callback may move members out of it (e.g. take
 *		@reply->regions.regions and set it to NULL).
 * @error:	NULL with @reply, or why there is none: TIMEOUT, DOWN,
 *		LIE (the reply claims more than the guest has), PROTOCOL (the
 *		reply to this request broke the rules: the session goes down
 *		next), CANCELLED (vr_agent_session_free()).
 */
typedef void (*vr_agent_session_reply_cb)(struct vr_agent_session *s,
					  struct vr_proto_message *reply, const GError *error,
					  gpointer user_data);

/**
 * vr_agent_session_new() - start the session with the agent of @domain at
 * the unix socket @path, on the thread-default main context. It connects at
 * once (a missing socket is not an error: libvirt creates it when the domain
 * starts; it is tried again with backoff) and says hello when connected. No
 * callback runs before this returns.
 * @domain:	the domain's name, for logs and messages; copied.
 * @path:	the socket; copied.
 * @limits:	copied.
 * @ops:	copied; @user_data is passed to each.
 * Return: owned session (free with vr_agent_session_free()), or NULL with
 * @error (INVALID) for an empty name, a path too long for a unix socket,
 * or @limits that vr_agent_session_limits_check() refuses.
 */
struct vr_agent_session *vr_agent_session_new(const char *domain, const char *path,
					      const struct vr_agent_session_limits *limits,
					      const struct vr_agent_session_ops *ops,
					      gpointer user_data, GError **error);

/**
 * vr_agent_session_free() - close the channel and stop everything. Calls
 * still pending are called back now, before this returns, with CANCELLED
 * (so their user_data can be released); ops->down is not called. Calls
 * made from those callbacks are refused. Nothing is called back after this
 * returns. May be called from the session's own callbacks.
 */
void vr_agent_session_free(struct vr_agent_session *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_agent_session, vr_agent_session_free)

/**
 * vr_agent_session_call() - send @req and call @cb with its reply, or with
 * an error after @timeout_ms.
 * @req:	the request; its id is chosen here (written back to @req->id).
 *		Not kept: the caller still owns and clears it.
 * @timeout_ms:	time for the reply, ms, >= 1. A reply that comes later is
 *		dropped. max_timeouts_in_row timeouts in a row restart the
 *		session (a reply, even a late one, resets the count).
 * Return: TRUE when the call is under way (@cb will be called exactly once,
 * never before this returns); FALSE with @error, and @cb never called, when
 * it is refused at once: DOWN (the session is not up), BUSY (max_pending
 * requests in flight), CANCELLED (the session is being freed), or a
 * VR_PROTO_ERROR for a request the agent would refuse.
 */
gboolean vr_agent_session_call(struct vr_agent_session *s, struct vr_proto_request *req,
			       guint timeout_ms, vr_agent_session_reply_cb cb, gpointer user_data,
			       GError **error);

/**
 * vr_agent_session_kick() - while waiting to reconnect, try now (e.g. libvirt
 * says the domain started); the backoff is kept. Does nothing otherwise.
 */
void vr_agent_session_kick(struct vr_agent_session *s);

/** vr_agent_session_is_up() - whether the agent answered hello on this connection (FALSE for NULL). */
gboolean vr_agent_session_is_up(const struct vr_agent_session *s);

/**
 * vr_agent_session_stalled() - whether the agent's last request (hello
 * included, on this connection or an earlier one) timed out and nothing was
 * answered since: an agent, or its QEMU, that stalls. FALSE for NULL, and
 * again with the agent's next reply.
 */
gboolean vr_agent_session_stalled(const struct vr_agent_session *s);

/** vr_agent_session_hello() - the agent's hello while up (borrowed), else NULL. */
const struct vr_proto_hello *vr_agent_session_hello(const struct vr_agent_session *s);

/** vr_agent_session_domain() - the domain's name (borrowed). */
const char *vr_agent_session_domain(const struct vr_agent_session *s);

/** vr_agent_session_counters() - a copy of the counters into @out. */
void vr_agent_session_counters(const struct vr_agent_session *s,
			       struct vr_agent_session_counters *out);

/**
 * vr_agent_session_last_error() - the last failure (connect, down, refused
 * message), one sentence naming the domain; NULL when there was none.
 * Borrowed until the next dispatch of the session.
 */
const char *vr_agent_session_last_error(const struct vr_agent_session *s);

/* ---- pure checks (no I/O), used by the session and its tests ---- */

/**
 * struct vr_token_bucket - a rate limit: @rate_per_s tokens a second, at most
 * @burst of them saved up. Starts full.
 * @rate_per_s:	tokens added per second.
 * @burst:	tokens held at most.
 * private: @tokens, @last_us.
 */
struct vr_token_bucket {
	double rate_per_s;
	double burst;
	/* private: */
	double tokens;
	gint64 last_us;
};

/** vr_token_bucket_init() - a full bucket at time @now_us (monotonic, us). */
void vr_token_bucket_init(struct vr_token_bucket *b, double rate_per_s, double burst,
			  gint64 now_us);

/**
 * vr_token_bucket_take() - take @n tokens at @now_us (a clock that goes
 * back adds nothing). Return: FALSE, taking nothing, when fewer are left.
 */
gboolean vr_token_bucket_take(struct vr_token_bucket *b, double n, gint64 now_us);

/**
 * vr_agent_session_check_regions() - whether the get-regions reply @regions
 * can be true of a guest with @limits: the picture's rules
 * (vr_picture_check(), common/picture.h) with the guest's bound: no region
 * ends beyond @limits->guest_phys_end_bytes (or guest_mem_bytes) and they
 * sum to at most @limits->guest_mem_bytes. Return: TRUE, or FALSE with
 * @error (LIE) naming the rule and the region, e.g. "the agent claims a
 * picture that cannot be true: the picture's regions 0..3 cover 9663676416
 * bytes, more than the guest's 8589934592 bytes of memory".
 */
gboolean vr_agent_session_check_regions(const struct vr_agent_session_limits *limits,
					const struct vr_proto_regions *regions, GError **error);

/**
 * vr_agent_session_check_cold_hist() - whether the get-cold-histogram reply
 * @hist can be true of a guest with @limits: each bucket and their sum at
 * most @limits->guest_mem_bytes (vr_fleet_check_cold_histogram()).
 * Return: TRUE, or FALSE with @error (LIE) naming the numbers.
 */
gboolean vr_agent_session_check_cold_hist(const struct vr_agent_session_limits *limits,
					  const struct vr_proto_cold_hist *hist, GError **error);

/**
 * vr_agent_session_check_stats() - whether @stats can be true of a guest
 * with @limits: mem_total_bytes at most guest_mem_bytes, and
 * reportable_free_bytes at most mem_total_bytes (its reclaimed bytes are
 * bounded by the daemon, which knows the time: vr_domain_account_stats()).
 * Return: TRUE, or FALSE with @error (LIE) naming both numbers.
 */
gboolean vr_agent_session_check_stats(const struct vr_agent_session_limits *limits,
				      const struct vr_agent_stats *stats, GError **error);

/**
 * vr_agent_stats_went_back() - whether a cumulative counter of @now is below
 * the same one of @last (uptime_ms, nr/sz_tried, nr/sz_applied, qt_exceeds,
 * agent_cpu_us, compactions): the agent restarted in between.
 * reclaimer_cpu_us is not one (it restarts with the backend).
 */
gboolean vr_agent_stats_went_back(const struct vr_agent_stats *last,
				  const struct vr_agent_stats *now);
