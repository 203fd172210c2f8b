/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The limits a session holds a guest's agent to (see agent-session.h):
 * struct vr_agent_session_limits, the input rate's token bucket, and the
 * checks of what an agent claims about its guest (regions, stats, cold
 * histogram) against what the host knows. Pure: no I/O, the time is passed.
 */
#include "agent/agent-session.h"

#include <inttypes.h>

#include "fleet-quota.h"
#include "guest-bounds.h"
#include "picture.h"

/* The session's error domain, here at the bottom of the session's files:
 * the connection and the calls both use it. */
/* clang-format off */
G_DEFINE_QUARK(vr-agent-session-error-quark, vr_agent_session_error)
/* clang-format on */

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
