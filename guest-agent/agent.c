// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaim-agent: reclaims cold memory inside a Linux guest so that free page
 * reporting hands it back to the host (ARCHITECTURE.md, "The guest agent").
 *
 * main() is thin, as in systemd-oomd: arguments, the backend probe, the
 * channel, one GMainLoop. The agent runs the in-guest scheme by itself with
 * the last policy it was given (the built-in default profile until then), so
 * the guest keeps reclaiming sensibly when the host side is away. Requests
 * are served by server.c, which calls back here only through struct
 * vr_agent_ops (server.h); the periodic work (backend ticks, compaction,
 * reports) lives here.
 */
#define _POSIX_C_SOURCE 200809L

#include "server.h"

#include <glib-unix.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "kernel-file.h"
#include "text-escape.h"
#include "user-file.h"

/* Every log line goes through vr_text_escape(): what a local client or the
 * host sends may be quoted in a warning, and a control character in it must
 * not forge a line or drive a terminal. */
static struct vr_log_escape log_escape = { .next = g_log_writer_default };

/* Default period of the unsolicited reports, ms: often enough for a host
 * that shares a fleet quota every few seconds, rare enough to cost nothing. */
#define VR_AGENT_DEFAULT_REPORT_MS 10000

/* How often the agent looks at what its backend reclaimed (to compact after
 * reclaim), us, when the backend itself asks for nothing sooner. */
#define VR_AGENT_MAX_TICK_US 1000000

/* The default virtio-serial port name (libvirt channel target name). */
#define VR_AGENT_DEFAULT_PORT "org.vreclaim.agent.0"

static const struct vr_backend_ops *const all_backends[] = {
	&vr_backend_damon,
	&vr_backend_memcg,
	&vr_backend_damon_reclaim_module,
};

/* The monotonic clock, us. */
static uint64_t agent_now_us(void)
{
	return (uint64_t)g_get_monotonic_time();
}

/* ---- periodic work ---- */

/* After reclaim took enough out of memory, compact so that the freed pages
 * form blocks of the reporting order that free page reporting hands to the
 * host. The kernel's vmstat says how much was reclaimed, cheaply (compact.h). */
static void agent_maybe_compact(struct vr_agent *agent, uint64_t now_us)
{
	struct vr_vmstat_reclaim vmstat;
	uint64_t reclaimed, swapped_out;
	g_autoptr(GError) error = NULL;
	if (!vr_vmstat_reclaim_read(&agent->paths, &vmstat, &error)) {
		g_debug("%s", error->message);
		return;
	}
	reclaimed = vr_vmstat_reclaimed_bytes(&vmstat);
	if (!vr_compact_should(&agent->compact, now_us, reclaimed))
		return;
	/* What pageout wrote to swap but left resident goes first, so that the
	 * compaction below sees it free: no more than was written out since
	 * the last release. */
	uint64_t released = 0;
	swapped_out = vmstat.pswpout_bytes - MIN(vmstat.pswpout_bytes, agent->pswpout_at_release);
	if (!vr_compact_release_swap_cache(&agent->paths, swapped_out, &released, &error)) {
		g_debug("%s", error->message);
		g_clear_error(&error);
	} else {
		agent->pswpout_at_release = vmstat.pswpout_bytes;
		agent->swap_cache_release_bytes += released;
		if (released)
			g_debug("the swap-cache release reclaimed %" G_GUINT64_FORMAT " bytes",
				(guint64)released);
	}
	if (agent->no_compaction) {
		vr_compact_done(&agent->compact, now_us, reclaimed);
		return;
	}
	gboolean ok = vr_compact_memory(&agent->paths, &error);
	vr_compact_done(&agent->compact, now_us, reclaimed);
	if (!ok) {
		g_warning("compaction after reclaim failed: %s", error->message);
		return;
	}
	agent->nr_compactions++;
	g_debug("compacted memory after %" G_GUINT64_FORMAT " bytes reclaimed since boot",
		(guint64)reclaimed);
}

static gboolean agent_on_tick(gpointer data)
{
	struct vr_agent *agent = data;
	uint64_t now = agent_now_us();
	uint64_t delay_us = VR_AGENT_MAX_TICK_US;
	if (!agent->paused) {
		uint64_t want = agent->ops->tick(agent->backend, now);
		if (want < delay_us)
			delay_us = want;
		agent_maybe_compact(agent, now);
	}
	if (delay_us < 1000)
		delay_us = 1000;
	agent->tick_timer = g_timeout_add((guint)(delay_us / 1000), agent_on_tick, agent);
	return G_SOURCE_REMOVE;
}

static void agent_send(struct vr_agent *agent, const char *line)
{
	vr_channel_send(agent->channel, line, strlen(line));
}

static gboolean agent_on_report(gpointer data)
{
	struct vr_agent *agent = data;
	struct vr_agent_stats stats;
	vr_agent_read_stats(agent, &stats);
	g_autofree char *line = vr_proto_encode_report(agent->report_seq++, &stats);
	agent_send(agent, line);
	return G_SOURCE_CONTINUE;
}

/* (Re)arm the periodic reports every @interval_ms ms (0: none). */
static void agent_set_report_interval(struct vr_agent *agent, uint64_t interval_ms)
{
	if (agent->report_timer)
		g_source_remove(agent->report_timer);
	agent->report_timer = 0;
	agent->report_interval_ms = interval_ms;
	if (interval_ms)
		agent->report_timer = g_timeout_add((guint)interval_ms, agent_on_report, agent);
}

/* ---- the channel ---- */

static void agent_on_data(struct vr_channel *ch, const char *buf, gsize len, gpointer user)
{
	(void)ch;
	vr_agent_feed(user, buf, len);
}

static void agent_on_connected(struct vr_channel *ch, bool up, gpointer user)
{
	struct vr_agent *agent = user;
	(void)ch;
	/* A new host starts a new stream: drop any half line of the old one. */
	if (up) {
		vr_proto_reader_free(agent->reader);
		agent->reader = vr_proto_reader_new();
	}
}

/* ---- what the request server calls here (server.h) ---- */

static uint64_t ops_now_us(gpointer user_data)
{
	(void)user_data;
	return agent_now_us();
}

static void ops_set_report_interval(gpointer user_data, uint64_t interval_ms)
{
	agent_set_report_interval(user_data, interval_ms);
}

static void ops_send(gpointer user_data, const char *line, gsize len)
{
	struct vr_agent *agent = user_data;

	vr_channel_send(agent->channel, line, len);
}

static const struct vr_agent_ops agent_ops = {
	.now_us = ops_now_us,
	.set_report_interval = ops_set_report_interval,
	.send = ops_send,
};

/* ---- start-up ---- */

static gboolean agent_pick_backend(struct vr_agent *agent, const char *wanted, GError **error)
{
	agent->backends = g_ptr_array_new();
	g_autoptr(GString) why = g_string_new(NULL);
	for (guint i = 0; i < G_N_ELEMENTS(all_backends); i++) {
		const struct vr_backend_ops *ops = all_backends[i];
		g_autoptr(GError) local = NULL;
		if (!ops->probe(&agent->paths, &local)) {
			g_debug("backend %s unavailable: %s", ops->name, local->message);
			g_string_append_printf(why, "; %s: %s", ops->name, local->message);
			continue;
		}
		g_ptr_array_add(agent->backends, (gpointer)ops->name);
		/* "auto" takes the first usable one of damon, memcg: the module
		 * baseline is only ever chosen by name. */
		bool automatic = !strcmp(wanted, "auto") && ops != &vr_backend_damon_reclaim_module;
		if (!agent->ops && (automatic || !strcmp(wanted, ops->name)))
			agent->ops = ops;
	}
	if (agent->ops)
		return TRUE;
	bool known = !strcmp(wanted, "auto");
	for (guint i = 0; i < G_N_ELEMENTS(all_backends); i++)
		known = known || !strcmp(wanted, all_backends[i]->name);
	if (!known)
		g_set_error(
			error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			"--backend: unknown backend '%s' (auto, damon, memcg, damon-reclaim-module)",
			wanted);
	else
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no usable reclaim backend (%s)%s", wanted, why->str);
	return FALSE;
}

static struct vr_policy *agent_load_policy(const char *file, GError **error)
{
	if (!file)
		return vr_policy_new_profile(NULL, error);
	g_autofree char *text = NULL;
	gsize len = 0;
	text = vr_user_file_read(file, VR_USER_FILE_POLICY_MAX_BYTES, &len, error);
	if (!text)
		return NULL;
	struct vr_policy *p = vr_policy_parse(text, (gssize)len, error);
	if (!p)
		g_prefix_error(error, "%s: ", file);
	return p;
}

static void agent_probe_fpr(struct vr_agent *agent)
{
	vr_free_page_reporting_probe(&agent->paths, &agent->fpr);
	if (agent->fpr.active) {
		g_message("free page reporting is active (order %d)", agent->fpr.order);
		return;
	}
	/* Loud, and once: without reporting, memory freed in the guest stays
	 * with the guest, and in-guest reclaim saves the host nothing. */
	g_warning("FREE PAGE REPORTING IS NOT ACTIVE (%s): memory this agent reclaims stays in "
		  "the guest and the host gets nothing back; give the guest a virtio balloon "
		  "with free-page-reporting=on",
		  agent->fpr.reason);
}

/* --reporting-order: set it for the agent's life (restored at exit). */
static gboolean agent_set_reporting_order(struct vr_agent *agent, int order, GError **error)
{
	int previous = -1;

	if (!vr_free_page_reporting_set_order(&agent->paths, order, &previous, error))
		return FALSE;
	agent->fpr_order_restore = previous;
	g_message("free page reporting order %d (was %d): blocks of %d KiB and larger go back "
		  "to the host",
		  order, previous, 4 << order);
	return TRUE;
}

static void agent_restore_reporting_order(struct vr_agent *agent)
{
	g_autoptr(GError) error = NULL;
	int ignored;

	if (agent->fpr_order_restore < 0)
		return;
	if (!vr_free_page_reporting_set_order(&agent->paths, agent->fpr_order_restore, &ignored,
					      &error))
		g_warning("the reporting order stays as the agent set it: %s", error->message);
	agent->fpr_order_restore = -1;
}

/* Undo what main() set up, whatever got that far: stop what the backend
 * started in the kernel (a guest without its agent must not keep a scheme
 * nobody watches), then free. */
static void agent_clear(struct vr_agent *agent)
{
	if (agent->tick_timer)
		g_source_remove(agent->tick_timer);
	agent->tick_timer = 0;
	agent_set_report_interval(agent, 0);
	g_clear_pointer(&agent->channel, vr_channel_free);
	if (agent->backend)
		agent->ops->close(agent->backend);
	agent->backend = NULL;
	g_clear_pointer(&agent->reader, vr_proto_reader_free);
	g_clear_pointer(&agent->policy, vr_policy_free);
	g_clear_pointer(&agent->hist_policy, vr_policy_free);
	g_clear_pointer(&agent->backends, g_ptr_array_unref);
	g_clear_pointer(&agent->kernel_release, g_free);
	agent_restore_reporting_order(agent);
}

typedef struct vr_agent vr_agent;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_agent, agent_clear)

static gboolean agent_on_signal(gpointer data)
{
	g_message("stopping on a signal");
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	g_autofree char *port = NULL;
	g_autofree char *socket_path = NULL;
	gint vsock_port = -1;
	g_autofree char *vsock_peer = NULL;
	guint vsock_peer_cid = VR_CHANNEL_VSOCK_HOST_CID;
	g_autofree char *backend = NULL;
	g_autofree char *policy_file = NULL;
	gint report_ms = VR_AGENT_DEFAULT_REPORT_MS;
	g_autofree char *sysfs = NULL;
	g_autofree char *procfs = NULL;
	g_autofree char *cgroup = NULL;
	g_autofree char *dev = NULL;
	gboolean start_paused = FALSE;
	gboolean no_compaction = FALSE;
	gint reporting_order = -1;
	gboolean verbose = FALSE;
	gboolean version = FALSE;
	const GOptionEntry entries[] = {
		{ "port", 'p', 0, G_OPTION_ARG_STRING, &port,
		  "virtio-serial port name (default " VR_AGENT_DEFAULT_PORT ")", "NAME" },
		{ "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path,
		  "listen on a unix socket instead of a virtio-serial port", "PATH" },
		{ "vsock", 0, 0, G_OPTION_ARG_INT, &vsock_port,
		  "listen on a vsock port instead of a virtio-serial port", "PORT" },
		{ "vsock-peer", 0, 0, G_OPTION_ARG_STRING, &vsock_peer,
		  "with --vsock, serve only this peer CID: host (2, the default), any, or a "
		  "number",
		  "CID" },
		{ "backend", 'b', 0, G_OPTION_ARG_STRING, &backend,
		  "auto (default), damon, memcg or damon-reclaim-module", "NAME" },
		{ "policy", 0, 0, G_OPTION_ARG_FILENAME, &policy_file,
		  "the policy to start with (JSON, docs/policy.md; default: the built-in profile)",
		  "FILE" },
		{ "report-interval", 0, 0, G_OPTION_ARG_INT, &report_ms,
		  "ms between unsolicited reports, 0 for none (default 10000)", "MS" },
		{ "paused", 0, 0, G_OPTION_ARG_NONE, &start_paused,
		  "start paused: reclaim only after a resume request", NULL },
		{ "no-compaction", 0, 0, G_OPTION_ARG_NONE, &no_compaction,
		  "never compact memory after reclaim (free page reporting then returns only "
		  "blocks that reclaim freed whole)",
		  NULL },
		{ "reporting-order", 0, 0, G_OPTION_ARG_INT, &reporting_order,
		  "free page reporting order while the agent runs, 0..10 (blocks of 4 KiB << "
		  "ORDER; default: the kernel's, 9 = 2 MiB on x86)",
		  "ORDER" },
		{ "sysfs-root", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &sysfs, NULL,
		  NULL },
		{ "procfs-root", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &procfs, NULL,
		  NULL },
		{ "cgroup-root", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &cgroup, NULL,
		  NULL },
		{ "dev-root", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &dev, NULL, NULL },
		{ "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "debug messages", NULL },
		{ "version", 0, 0, G_OPTION_ARG_NONE, &version, "print the version", NULL },
		{ NULL }
	};
	setlocale(LC_ALL, "");
	g_log_set_writer_func(vr_log_writer_escape, &log_escape, NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GOptionContext) octx = g_option_context_new(NULL);
	g_option_context_set_summary(octx, "Reclaims cold guest memory so that free page reporting "
					   "returns it to the host.");
	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("vreclaim-agent: %s\n", error->message);
		return 2;
	}
	if (version) {
		g_print("vreclaim-agent %s (protocol %d)\n", VR_AGENT_VERSION, VR_PROTO_VERSION);
		return 0;
	}
	if (argc > 1) {
		g_printerr("vreclaim-agent: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	if ((port != NULL) + (socket_path != NULL) + (vsock_port >= 0) > 1) {
		g_printerr("vreclaim-agent: give at most one of --port, --socket, --vsock\n");
		return 2;
	}
	if (vsock_peer && vsock_port < 0) {
		g_printerr("vreclaim-agent: --vsock-peer goes with --vsock PORT\n");
		return 2;
	}
	if (vsock_peer && !vr_channel_parse_vsock_peer(vsock_peer, &vsock_peer_cid, &error)) {
		g_printerr("vreclaim-agent: --vsock-peer: %s\n", error->message);
		return 2;
	}
	if (report_ms != 0 && (report_ms < 100 || report_ms > 3600000)) {
		g_printerr(
			"vreclaim-agent: --report-interval: expected 0 or 100..3600000 ms, got %d\n",
			report_ms);
		return 2;
	}
	if (reporting_order != -1 &&
	    (reporting_order < 0 || reporting_order > VR_FPR_SET_MAX_ORDER)) {
		g_printerr("vreclaim-agent: --reporting-order: expected 0..%d, got %d\n",
			   VR_FPR_SET_MAX_ORDER, reporting_order);
		return 2;
	}
	if (verbose)
		g_log_set_debug_enabled(TRUE);
	/* A host that closes its end while a reply is being written is an
	 * error of that write (EPIPE), not the end of the agent. */
	signal(SIGPIPE, SIG_IGN);

	g_auto(vr_agent) agent = {
		.paths = {
			.sysfs = sysfs ? sysfs : "/sys",
			.procfs = procfs ? procfs : "/proc",
			.cgroup = cgroup ? cgroup : "/sys/fs/cgroup",
		},
		.paused = start_paused,
		.no_compaction = no_compaction,
		.started_us = agent_now_us(),
		.fpr_order_restore = -1,
		.agent_ops = &agent_ops,
	};
	agent.agent_data = &agent;
	vr_ratelimit_init(&agent.host_log, VR_AGENT_HOST_LOG_INTERVAL_US, VR_AGENT_HOST_LOG_BURST);
	agent.kernel_release = vr_kernel_release(&agent.paths);
	struct vr_vmstat_reclaim vmstat;
	if (vr_vmstat_reclaim_read(&agent.paths, &vmstat, &error)) {
		agent.reclaimed_at_start = vr_vmstat_reclaimed_bytes(&vmstat);
		agent.pswpout_at_release = vmstat.pswpout_bytes;
	} else {
		/* The stats' reclaimed_bytes then count since boot. */
		g_warning("%s", error->message);
		g_clear_error(&error);
	}
	agent.policy = agent_load_policy(policy_file, &error);
	if (!agent.policy) {
		g_printerr("vreclaim-agent: %s\n", error->message);
		return 2;
	}
	if (!agent_pick_backend(&agent, backend ? backend : "auto", &error)) {
		g_printerr("vreclaim-agent: %s\n", error->message);
		return 1;
	}
	agent.backend = agent.ops->open(&agent.paths, &error);
	if (!agent.backend) {
		g_printerr("vreclaim-agent: backend %s: %s\n", agent.ops->name, error->message);
		return 1;
	}
	g_message("kernel %s, backend %s", agent.kernel_release, agent.ops->name);
	if (reporting_order >= 0 && !agent_set_reporting_order(&agent, reporting_order, &error)) {
		g_printerr("vreclaim-agent: --reporting-order: %s\n", error->message);
		return 1;
	}
	agent_probe_fpr(&agent);
	if (!agent.paused && agent.ops->apply_policy(agent.backend, agent.policy, &error)) {
		agent.applied = agent.started = true;
	} else if (!agent.paused) {
		/* The guest may still be serviceable once the host sends a
		 * policy that fits: keep running, paused. */
		g_warning("starting with the %s policy failed, waiting for the host: %s",
			  policy_file ? policy_file : "default", error->message);
		g_clear_error(&error);
		agent.paused = true;
	}

	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	agent.reader = vr_proto_reader_new();
	const struct vr_channel_address addr = {
		.kind = socket_path	? VR_CHANNEL_UNIX :
			vsock_port >= 0 ? VR_CHANNEL_VSOCK :
					  VR_CHANNEL_VIRTIO_PORT,
		.name = socket_path ? socket_path :
			port	    ? port :
				      VR_AGENT_DEFAULT_PORT,
		.vsock_port = vsock_port >= 0 ? (guint)vsock_port : 0,
		.vsock_peer_cid = vsock_peer_cid,
		.sysfs = agent.paths.sysfs,
		.dev = dev ? dev : "/dev",
	};
	const struct vr_channel_callbacks cb = {
		.data = agent_on_data,
		.connected = agent_on_connected,
	};
	/* Before the channel: a host (or a test) that sees the socket may
	 * signal the agent at once, and must get a clean stop. */
	g_unix_signal_add(SIGTERM, agent_on_signal, loop);
	g_unix_signal_add(SIGINT, agent_on_signal, loop);
	agent.channel = vr_channel_new(&addr, &cb, &agent, &error);
	int status = 0;
	if (!agent.channel) {
		g_printerr("vreclaim-agent: %s\n", error->message);
		status = 1;
	} else {
		g_message("serving the host on %s", vr_channel_describe(agent.channel));
		agent_set_report_interval(&agent, (uint64_t)report_ms);
		agent.tick_timer = g_idle_add(agent_on_tick, &agent);
		g_main_loop_run(loop);
	}

	return status;
}
