// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The agent's request server: one request line in, one reply line out
 * (docs/protocol.md). Decoding and encoding are libvrcore's (protocol.c);
 * this file maps each command onto the backend. What it needs from the
 * agent's main file it calls through struct vr_agent_ops (server.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server.h"

#include "fleet-quota.h"
#include "meminfo.h"

/* The agent's clock, us (struct vr_agent_ops::now_us). */
static uint64_t server_now_us(struct vr_agent *agent)
{
	return agent->agent_ops->now_us(agent->agent_data);
}

static uint64_t agent_cpu_us(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * G_USEC_PER_SEC +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The page size of the guest kernel, bytes: what /proc/buddyinfo counts in. */
static uint64_t page_size(void)
{
	long size = sysconf(_SC_PAGESIZE);

	return size > 0 ? (uint64_t)size : 4096;
}

/* The stats' reportable_free_bytes: known only while free page reporting
 * is active at a known order; a buddyinfo that cannot be read leaves it
 * out of the stats, and the rest stands. */
static void agent_read_reportable_free(struct vr_agent *agent, struct vr_agent_stats *out)
{
	g_autoptr(GError) error = NULL;
	uint64_t bytes;

	if (!agent->fpr.active || agent->fpr.order < 0)
		return;
	if (!vr_reportable_free_read(&agent->paths, (guint)agent->fpr.order, page_size(), &bytes,
				     &error)) {
		g_debug("reportable free memory unknown: %s", error->message);
		return;
	}
	out->has_reportable_free_bytes = TRUE;
	out->reportable_free_bytes = MIN(bytes, VR_PROTO_MAX_INT);
}

void vr_agent_read_stats(struct vr_agent *agent, struct vr_agent_stats *out)
{
	memset(out, 0, sizeof(*out));
	g_strlcpy(out->backend, agent->ops->name, sizeof(out->backend));
	out->paused = agent->paused;
	out->uptime_ms = (server_now_us(agent) - agent->started_us) / 1000;
	out->agent_cpu_us = agent_cpu_us();
	out->compactions = agent->nr_compactions;
	struct vr_vmstat_reclaim vmstat;
	g_autoptr(GError) vmstat_error = NULL;
	if (vr_vmstat_reclaim_read(&agent->paths, &vmstat, &vmstat_error)) {
		uint64_t reclaimed = vr_vmstat_reclaimed_bytes(&vmstat);
		reclaimed -= MIN(reclaimed, agent->reclaimed_at_start);
		agent->reclaimed_bytes =
			MAX(agent->reclaimed_bytes, MIN(reclaimed, VR_PROTO_MAX_INT));
	} else {
		g_debug("%s", vmstat_error->message);
	}
	out->reclaimed_bytes = agent->reclaimed_bytes;
	out->swap_cache_release_bytes = MIN(agent->swap_cache_release_bytes, VR_PROTO_MAX_INT);
	out->free_page_reporting = agent->fpr.active;

	g_autoptr(GError) error = NULL;
	struct vr_backend_stats st = { 0 };
	if (agent->ops->read_stats(agent->backend, &st, &error)) {
		out->nr_tried = st.nr_tried;
		out->sz_tried = st.sz_tried;
		/* The kernel counts separately what it tried and what it did;
		 * keep the protocol's rule (applied <= tried) even if a counter
		 * lags the other. */
		out->nr_applied = MIN(st.nr_applied, st.nr_tried);
		out->sz_applied = MIN(st.sz_applied, st.sz_tried);
		out->qt_exceeds = st.qt_exceeds;
		out->reclaimer_cpu_us = st.reclaimer_cpu_us;
	} else {
		g_debug("reading %s stats: %s", agent->ops->name, error->message);
		g_clear_error(&error);
	}
	struct vr_meminfo mi = { 0 };
	if (vr_meminfo_read(&agent->paths, &mi, &error)) {
		out->mem_total_bytes = mi.mem_total_bytes;
		out->mem_free_bytes = MIN(mi.mem_free_bytes, mi.mem_total_bytes);
		out->swap_total_bytes = mi.swap_total_bytes;
		out->swap_free_bytes = MIN(mi.swap_free_bytes, mi.swap_total_bytes);
	} else {
		g_debug("%s", error->message);
	}
	agent_read_reportable_free(agent, out);
}

static char *serve_hello(struct vr_agent *agent, uint32_t id)
{
	struct vr_proto_hello hello = {
		.version = VR_PROTO_VERSION,
		.free_page_reporting = agent->fpr.active,
		.has_reporting_order = agent->fpr.order >= 0,
		.reporting_order = agent->fpr.order >= 0 ? (guint)agent->fpr.order : 0,
		.cold_histogram = TRUE,
	};
	g_strlcpy(hello.agent, VR_AGENT_VERSION, sizeof(hello.agent));
	g_strlcpy(hello.kernel, agent->kernel_release, sizeof(hello.kernel));
	g_strlcpy(hello.backend, agent->ops->name, sizeof(hello.backend));
	for (guint i = 0; i < agent->backends->len && i < VR_PROTO_MAX_BACKENDS; i++)
		g_strlcpy(hello.backends[hello.nr_backends++], agent->backends->pdata[i],
			  sizeof(hello.backends[0]));
	return vr_proto_encode_hello(id, &hello);
}

/* Start the backend on agent->policy, or give it that policy. */
static gboolean agent_apply(struct vr_agent *agent, GError **error)
{
	if (!agent->ops->apply_policy(agent->backend, agent->policy, error))
		return FALSE;
	agent->applied = true;
	agent->started = true;
	return TRUE;
}

static char *serve_set_policy(struct vr_agent *agent, struct vr_proto_request *req)
{
	struct vr_proto_set_policy_args *args = &req->set_policy;
	g_autoptr(GError) error = NULL;
	if (!agent->paused) {
		/* All or nothing: the backend keeps the old scheme on error. */
		if (!agent->ops->apply_policy(agent->backend, args->policy, &error)) {
			vr_agent_warn_host(agent, "set-policy refused: %s", error->message);
			return vr_proto_encode_gerror(req->id, error);
		}
		agent->applied = true;
		agent->started = true;
	} else {
		agent->applied = false; /* resume applies it */
	}
	vr_policy_free(agent->policy);
	agent->policy = g_steal_pointer(&args->policy);
	if (args->histogram_policy) {
		vr_policy_free(agent->hist_policy);
		agent->hist_policy = g_steal_pointer(&args->histogram_policy);
		agent->hist_generation = args->generation;
	}
	if (args->has_report_interval)
		agent->agent_ops->set_report_interval(agent->agent_data, args->report_interval_ms);
	g_message("new policy (profile %s, %u schemes)%s", agent->policy->profile,
		  agent->policy->schemes->len, agent->paused ? ", applied on resume" : "");
	return vr_proto_encode_empty(req->id);
}

static char *serve_reclaim(struct vr_agent *agent, struct vr_proto_request *req)
{
	g_autoptr(GError) error = NULL;
	if (agent->paused) {
		g_set_error(&error, VR_PROTO_ERROR, VR_PROTO_ERROR_FAILED,
			    "the agent is paused: resume it first");
		return vr_proto_encode_gerror(req->id, error);
	}
	uint64_t start = server_now_us(agent);
	struct vr_proto_reclaim_result res = { 0 };
	if (!agent->ops->reclaim(agent->backend, req->reclaim.bytes, req->reclaim.deadline_ms,
				 &res.reclaimed_bytes, &error)) {
		vr_agent_warn_host(agent, "reclaim of %" G_GUINT64_FORMAT " bytes failed: %s",
				   (guint64)req->reclaim.bytes, error->message);
		return vr_proto_encode_gerror(req->id, error);
	}
	res.elapsed_ms = (server_now_us(agent) - start) / 1000;
	g_message("reclaimed %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
		  " bytes in %" G_GUINT64_FORMAT " ms",
		  (guint64)res.reclaimed_bytes, (guint64)req->reclaim.bytes,
		  (guint64)res.elapsed_ms);
	return vr_proto_encode_reclaim_result(req->id, &res);
}

static char *serve_get_regions(struct vr_agent *agent, uint32_t id, guint max)
{
	g_auto(vr_proto_regions) regions = {
		.sample_interval_us = agent->policy->attrs.sample_interval_us,
		.aggr_interval_us = agent->policy->attrs.aggr_interval_us,
		.regions = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region)),
	};
	g_autoptr(GError) error = NULL;
	if (!agent->ops->read_regions(agent->backend, max, regions.regions, &error))
		return vr_proto_encode_gerror(id, error);
	return vr_proto_encode_regions(id, &regions);
}

/* get-cold-histogram: the picture get-regions would send, turned into the
 * fleet's histogram under the histogram policy's pageout scheme with the
 * host's own rule (vr_fleet_cold_histogram()). The agent trusts its own
 * picture: its memory bound is the protocol's; the host checks the guest's. */
static char *serve_get_cold_hist(struct vr_agent *agent, uint32_t id)
{
	g_autoptr(GArray) regions = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	const struct vr_scheme *s = vr_fleet_pageout_scheme(agent->hist_policy);
	struct vr_proto_cold_hist hist = {
		.generation = agent->hist_generation,
		.sample_interval_us = agent->policy->attrs.sample_interval_us,
		.aggr_interval_us = agent->policy->attrs.aggr_interval_us,
	};
	g_autoptr(GError) error = NULL;

	if (!s) {
		g_set_error(&error, VR_PROTO_ERROR, VR_PROTO_ERROR_FAILED,
			    agent->hist_policy ? "the histogram policy has no pageout scheme" :
						 "no set-policy gave a histogram policy yet");
		return vr_proto_encode_gerror(id, error);
	}
	if (!agent->ops->read_regions(agent->backend, VR_PROTO_MAX_REGIONS, regions, &error) ||
	    !vr_fleet_cold_histogram(regions, hist.sample_interval_us, hist.aggr_interval_us, s,
				     VR_PROTO_MAX_INT, hist.bytes, &error))
		return vr_proto_encode_gerror(id, error);
	hist.nr_regions = regions->len;
	return vr_proto_encode_cold_hist(id, &hist);
}

static char *serve_pause(struct vr_agent *agent, uint32_t id)
{
	g_autoptr(GError) error = NULL;
	if (!agent->paused && agent->started && !agent->ops->pause(agent->backend, &error))
		return vr_proto_encode_gerror(id, error);
	if (!agent->paused)
		g_message("paused by the host");
	agent->paused = true;
	return vr_proto_encode_empty(id);
}

static char *serve_resume(struct vr_agent *agent, uint32_t id)
{
	g_autoptr(GError) error = NULL;
	if (!agent->paused)
		return vr_proto_encode_empty(id);
	/* A backend never started (--paused), or given a new policy while
	 * paused, applies it; otherwise it restarts with what it had. */
	gboolean ok;
	if (!agent->started)
		ok = agent_apply(agent, &error);
	else
		ok = agent->ops->resume(agent->backend, &error) &&
		     (agent->applied || agent_apply(agent, &error));
	if (!ok) {
		vr_agent_warn_host(agent, "resume failed: %s", error->message);
		return vr_proto_encode_gerror(id, error);
	}
	agent->paused = false;
	g_message("resumed by the host");
	return vr_proto_encode_empty(id);
}

void vr_agent_warn_host(struct vr_agent *agent, const char *format, ...)
{
	uint64_t suppressed = 0;
	va_list ap;

	if (!vr_ratelimit_pass(&agent->host_log, (int64_t)server_now_us(agent), &suppressed))
		return;
	va_start(ap, format);
	g_autofree char *message = g_strdup_vprintf(format, ap);
	va_end(ap);
	if (suppressed)
		g_warning("%s (and %" G_GUINT64_FORMAT
			  " more warnings about what the host sent, not logged)",
			  message, (guint64)suppressed);
	else
		g_warning("%s", message);
}

char *vr_agent_handle_line(struct vr_agent *agent, const char *line, gsize len)
{
	g_auto(vr_proto_request) req = { 0 };
	g_autoptr(GError) error = NULL;
	if (!vr_proto_decode_request(line, len, &req, &error)) {
		vr_agent_warn_host(agent, "bad request from the host: %s", error->message);
		return vr_proto_encode_gerror(req.id, error);
	}
	g_debug("request %u: %s", req.id, vr_proto_command_name(req.command));
	switch (req.command) {
	case VR_PROTO_HELLO:
		return serve_hello(agent, req.id);
	case VR_PROTO_SET_POLICY:
		return serve_set_policy(agent, &req);
	case VR_PROTO_RECLAIM:
		return serve_reclaim(agent, &req);
	case VR_PROTO_GET_STATS: {
		struct vr_agent_stats stats;
		vr_agent_read_stats(agent, &stats);
		return vr_proto_encode_stats(req.id, &stats);
	}
	case VR_PROTO_GET_REGIONS:
		return serve_get_regions(agent, req.id, req.get_regions.max);
	case VR_PROTO_GET_COLD_HIST:
		return serve_get_cold_hist(agent, req.id);
	case VR_PROTO_PAUSE:
		return serve_pause(agent, req.id);
	case VR_PROTO_RESUME:
		return serve_resume(agent, req.id);
	}
	return vr_proto_encode_error(req.id, VR_PROTO_ERROR_UNKNOWN_COMMAND, NULL);
}

void vr_agent_feed(struct vr_agent *agent, const char *buf, gsize len)
{
	vr_proto_reader_feed(agent->reader, buf, len);
	for (;;) {
		g_autoptr(GError) error = NULL;
		g_autofree char *line = NULL;
		g_autofree char *reply = NULL;
		gsize line_len = 0;

		if (!vr_proto_reader_next(agent->reader, &line, &line_len, &error)) {
			/* A line too long to read: answer it, go on with the next. */
			vr_agent_warn_host(agent, "from the host: %s", error->message);
			reply = vr_proto_encode_gerror(0, error);
		} else if (!line) {
			break; /* no complete line left */
		} else {
			reply = vr_agent_handle_line(agent, line, line_len);
		}
		agent->agent_ops->send(agent->agent_data, reply, strlen(reply));
	}
}
