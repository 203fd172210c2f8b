/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's request server (server.c): the bytes the host sends in, one
 * reply line out per request line (docs/protocol.md), each command mapped
 * onto the reclaim backend. What it needs from the agent's main file (the
 * clock, the report timer, the channel) it calls through struct
 * vr_agent_ops, which main fills: includes point one way (agent.c uses this
 * header; server.c never calls into agent.c), and a test drives the server
 * with a fake table (tests/unit/guest-agent/test-server.c).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "agent.h"

/**
 * struct vr_agent_ops - what the request server needs from the agent's main.
 * @now_us:		the monotonic clock, us (uptime, reclaim's elapsed
 *			time, the host warnings' rate limit).
 * @set_report_interval: (re)arm the periodic reports every @interval_ms ms
 *			(0: none); a set-policy's report_interval_ms.
 * @send:		send one reply @line of @len bytes (newline included)
 *			to the host; the server keeps ownership of @line.
 *
 * Each gets the agent's struct vr_agent::agent_data as @user_data. All three
 * are required.
 */
struct vr_agent_ops {
	uint64_t (*now_us)(gpointer user_data);
	void (*set_report_interval)(gpointer user_data, uint64_t interval_ms);
	void (*send)(gpointer user_data, const char *line, gsize len);
};

/**
 * vr_agent_warn_host() - a warning about what the host sent (printf
 * @format), within @agent->host_log's rate limit.
 */
void vr_agent_warn_host(struct vr_agent *agent, const char *format, ...) G_GNUC_PRINTF(2, 3);

/**
 * vr_agent_handle_line() - serve one request line from the host: decode it,
 * act, and return the reply line (owned, newline-terminated). Malformed,
 * unknown or failing requests get an error reply; nothing is ever fatal.
 */
char *vr_agent_handle_line(struct vr_agent *agent, const char *line, gsize len);

/**
 * vr_agent_feed() - serve @len bytes the host sent (@buf, any framing):
 * every complete line in @agent->reader's buffer is answered through
 * @agent->agent_ops->send, in order; a line longer than VR_PROTO_MAX_LINE
 * is answered with a too-long error (id 0) and the stream goes on with the
 * next line. A partial line stays buffered for the next call.
 */
void vr_agent_feed(struct vr_agent *agent, const char *buf, gsize len);

/**
 * vr_agent_read_stats() - the STATS object of get-stats and reports, into
 * @out (all fields set; what cannot be read is left 0 and logged at debug).
 */
void vr_agent_read_stats(struct vr_agent *agent, struct vr_agent_stats *out);
