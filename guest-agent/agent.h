/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state of a running vreclaim-agent, shared by main and the periodic
 * work (agent.c) and the request server (server.c, server.h). Only types and
 * constants: nothing here is defined in a .c file, so that the server,
 * which the agent's library holds, never calls into the agent's main file;
 * what it needs from there it reaches through struct vr_agent_ops
 * (server.h).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "channel.h"
#include "compact.h"
#include "free-page-reporting.h"
#include "policy.h"
#include "protocol.h"
#include "ratelimit.h"

struct vr_agent_ops;

/**
 * struct vr_agent - one agent.
 * @paths:		kernel file roots (borrowed strings).
 * @ops, @backend:	the reclaim backend in use and its state (owned).
 * @backends:		names of the backends that probed usable (owned).
 * @hist_generation, @hist_policy: the last set-policy's generation and
 *			histogram policy (owned), which get-cold-histogram
 *			uses; 0 and NULL until a set-policy gives them.
 * @policy:		the last policy given (owned; the built-in default
 *			profile until the host sends one).
 * @paused:		reclaim paused by the host.
 * @applied:		the backend runs @policy (FALSE until the first
 *			successful apply, and after a set-policy while paused:
 *			resume applies it).
 * @started:		the backend was started at least once.
 * @started_us:		monotonic start time.
 * @reclaimed_at_start:	the guest's reclaimed bytes (vmstat, compact.h) at
 *			start: the stats' reclaimed_bytes count from it.
 * @pswpout_at_release: vmstat's bytes written to swap at the last swap-cache
 *			release (or at start): the next one releases no more
 *			than was written since.
 * @swap_cache_release_bytes: what the swap-cache releases reclaimed, in
 *			total (the stats' swap_cache_release_bytes).
 * @reclaimed_bytes:	the stats' reclaimed_bytes last read: kept when
 *			vmstat cannot be read, so that it never goes back (the
 *			host would take that for a restart).
 * @report_interval_ms:	periodic reports (0: none).
 * @report_seq:		sequence number of the next report.
 * @fpr:		free page reporting, as probed at start.
 * @fpr_order_restore:	the reporting order to put back at exit (the
 *			kernel's before --reporting-order), -1 for none.
 * @compact:		compaction state (compact.h).
 * @no_compaction:	--no-compaction: never compact after reclaim (the
 *			swap-cache release still runs).
 * @nr_compactions:	compactions done.
 * @channel, @reader:	the host channel and its line framing (owned).
 * @kernel_release:	uname release (owned).
 * @host_log:		the rate limit of warnings the host's lines cause
 *			(vr_agent_warn_host()).
 * @agent_ops, @agent_data: what the request server calls in the agent's
 *			main (the clock, the report timer, the channel) and
 *			its argument (both borrowed; server.h).
 */
struct vr_agent {
	struct vr_agent_paths paths;
	const struct vr_backend_ops *ops;
	gpointer backend;
	GPtrArray *backends;
	struct vr_policy *policy;
	uint64_t hist_generation;
	struct vr_policy *hist_policy;
	bool paused;
	bool applied;
	bool started;
	uint64_t started_us;
	uint64_t reclaimed_at_start;
	uint64_t pswpout_at_release;
	uint64_t swap_cache_release_bytes;
	uint64_t reclaimed_bytes;
	uint64_t report_interval_ms;
	guint report_timer;
	uint64_t report_seq;
	guint tick_timer;
	struct vr_free_page_reporting fpr;
	int fpr_order_restore;
	struct vr_compact_state compact;
	bool no_compaction;
	uint64_t nr_compactions;
	struct vr_channel *channel;
	struct vr_proto_reader *reader;
	char *kernel_release;
	struct vr_ratelimit host_log;
	const struct vr_agent_ops *agent_ops;
	gpointer agent_data;
};

/*
 * Warnings caused by what the host (or a local client of the agent's
 * socket) sends: at most VR_AGENT_HOST_LOG_BURST per
 * VR_AGENT_HOST_LOG_INTERVAL_US. A peer sending garbage made the agent log
 * one warning per line (190 MB in 40 s, issue 16); the others are counted
 * and the next warning logged says how many.
 */
#define VR_AGENT_HOST_LOG_BURST	      3
#define VR_AGENT_HOST_LOG_INTERVAL_US (10 * G_USEC_PER_SEC)
