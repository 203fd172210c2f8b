// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `vreclaimctl agent`: see agent-cmd.h.
 */
#include "cli/agent-cmd.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent-client.h"
#include "cli/exit-codes.h"
#include "protocol.h"
#include "text-escape.h"
#include "user-file.h"

/* How long a request waits for its reply by default, s: the agent answers
 * within milliseconds, but a virtio-serial agent reopens its port up to a
 * second after the previous client left. */
#define VRCTL_AGENT_DEFAULT_TIMEOUT_S 10

/* Wait before the one retry of a request whose channel closed, ms: longer
 * than the agent's port reopen period (500 ms). */
#define VRCTL_AGENT_RETRY_MS 1000

static const char agent_usage[] =
	"Commands:\n"
	"  hello                         what the agent is and can do\n"
	"  get-stats                     the agent's counters and the guest's memory\n"
	"  get-regions [MAX]             the guest's access picture (at most MAX regions)\n"
	"  get-cold-histogram            the picture's cold bytes per score (agents with the\n"
	"                                cold-histogram capability, after a host's set-policy)\n"
	"  set-policy FILE [REPORT_MS]   run the policy in FILE (docs/policy.md)\n"
	"  reclaim SIZE [DEADLINE_MS]    reclaim SIZE bytes now (suffixes K, M, G, T: KiB, MiB,\n"
	"                                GiB, TiB; either case)\n"
	"  pause | resume                stop / restart reclaim in the guest\n"
	"  watch [COUNT]                 print the agent's reports as they come";

/* "512M" -> bytes; plain numbers are bytes. */
static gboolean parse_size(const char *text, uint64_t *out, GError **error)
{
	g_autofree char *copy = g_strdup(text);
	gsize len = strlen(copy);
	unsigned shift = 0;
	if (len > 1) {
		switch (g_ascii_toupper(copy[len - 1])) {
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		default:
			break;
		}
		if (shift)
			copy[len - 1] = '\0';
	}
	guint64 v;
	if (!g_ascii_string_to_unsigned(copy, 10, 0, G_MAXUINT64 >> shift, &v, NULL)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "'%s' is not a size (bytes, or a number with K, M, G or T)", text);
		return FALSE;
	}
	*out = (uint64_t)v << shift;
	return TRUE;
}

static gboolean parse_u64(const char *what, const char *text, uint64_t max, uint64_t *out,
			  GError **error)
{
	guint64 v;
	if (!g_ascii_string_to_unsigned(text, 10, 0, max, &v, NULL)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s: expected a number in 0..%" G_GUINT64_FORMAT ", got '%s'", what,
			    (guint64)max, text);
		return FALSE;
	}
	*out = v;
	return TRUE;
}

/* Build the request of the command line @argv (argv[0] is the command). */
static gboolean build_request(int argc, char **argv, struct vr_proto_request *req, GError **error)
{
	const char *name = argv[0];
	if (!vr_proto_command_from_name(name, &req->command)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "unknown agent command '%s'", name);
		return FALSE;
	}
	int max_args = 0;
	switch (req->command) {
	case VR_PROTO_SET_POLICY: {
		max_args = 2;
		if (argc < 2) {
			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				    "set-policy: a policy FILE is needed");
			return FALSE;
		}
		g_autofree char *text = NULL;
		gsize len = 0;
		text = vr_user_file_read(argv[1], VR_USER_FILE_POLICY_MAX_BYTES, &len, error);
		if (!text)
			return FALSE;
		req->set_policy.policy = vr_policy_parse(text, (gssize)len, error);
		if (!req->set_policy.policy) {
			g_prefix_error(error, "%s: ", argv[1]);
			return FALSE;
		}
		if (argc > 2) {
			req->set_policy.has_report_interval = TRUE;
			if (!parse_u64("REPORT_MS", argv[2], VR_PROTO_REPORT_INTERVAL_MAX_MS,
				       &req->set_policy.report_interval_ms, error))
				return FALSE;
		}
		break;
	}
	case VR_PROTO_RECLAIM:
		max_args = 2;
		if (argc < 2) {
			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				    "reclaim: a SIZE is needed");
			return FALSE;
		}
		if (!parse_size(argv[1], &req->reclaim.bytes, error))
			return FALSE;
		req->reclaim.deadline_ms = 10000;
		if (argc > 2 && !parse_u64("DEADLINE_MS", argv[2], VR_PROTO_RECLAIM_MAX_DEADLINE_MS,
					   &req->reclaim.deadline_ms, error))
			return FALSE;
		break;
	case VR_PROTO_GET_REGIONS: {
		max_args = 1;
		req->get_regions.max = VR_PROTO_MAX_REGIONS;
		uint64_t max = 0;
		if (argc > 1) {
			if (!parse_u64("MAX", argv[1], VR_PROTO_MAX_REGIONS, &max, error))
				return FALSE;
			req->get_regions.max = (guint)max;
		}
		break;
	}
	default:
		break;
	}
	if (argc - 1 > max_args) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "%s: unexpected argument '%s'", name, argv[max_args + 1]);
		return FALSE;
	}
	return TRUE;
}

/* "error: [WHAT: ]MESSAGE" on stderr; the message may quote the guest, so it
 * is escaped (text-escape.h). */
static void print_error(const char *what, const GError *error)
{
	g_autofree char *msg = vr_text_escape(error->message, -1);
	g_autofree char *shown = what ? vr_text_escape(what, -1) : NULL;

	if (shown)
		g_printerr("error: %s: %s\n", shown, msg);
	else
		g_printerr("error: %s\n", msg);
}

/* One "LABEL: VALUE" row whose value comes from the guest, escaped
 * (text-escape.h). */
static void print_guest_row(const char *label, const char *guest)
{
	g_autofree char *safe = vr_text_escape(guest, -1);

	g_print("%-20s %s\n", label, safe);
}

static void print_stats(const struct vr_agent_stats *s)
{
	print_guest_row("backend:", s->backend);
	g_print("%-20s %s\n", "paused:", s->paused ? "yes" : "no");
	g_print("%-20s %s\n",
		"free page reporting:", s->free_page_reporting ? "active" : "NOT active");
#define ROW(field) g_print("%-20s %" G_GUINT64_FORMAT "\n", #field ":", (guint64)s->field)
	ROW(uptime_ms);
	ROW(nr_tried);
	ROW(sz_tried);
	ROW(nr_applied);
	ROW(sz_applied);
	ROW(qt_exceeds);
	ROW(reclaimer_cpu_us);
	ROW(agent_cpu_us);
	ROW(compactions);
	ROW(reclaimed_bytes);
	ROW(swap_cache_release_bytes);
	if (s->has_reportable_free_bytes)
		ROW(reportable_free_bytes);
	ROW(mem_total_bytes);
	ROW(mem_free_bytes);
	ROW(swap_total_bytes);
	ROW(swap_free_bytes);
#undef ROW
}

static void print_reply(const struct vr_proto_message *m)
{
	switch (m->command) {
	case VR_PROTO_HELLO: {
		const struct vr_proto_hello *h = &m->hello;
		g_print("%-20s %u\n", "protocol:", h->version);
		print_guest_row("agent:", h->agent);
		print_guest_row("kernel:", h->kernel);
		print_guest_row("backend:", h->backend);
		g_print("%-20s", "backends:");
		for (guint i = 0; i < h->nr_backends; i++) {
			g_autofree char *name = vr_text_escape(h->backends[i], -1);

			g_print(" %s", name);
		}
		g_print("\n%-20s %s\n",
			"free page reporting:", h->free_page_reporting ? "active" : "NOT active");
		if (h->has_reporting_order)
			g_print("%-20s %u\n", "reporting order:", h->reporting_order);
		g_print("%-20s %s\n",
			"capabilities:", h->cold_histogram ? VR_PROTO_CAP_COLD_HISTOGRAM : "none");
		break;
	}
	case VR_PROTO_GET_COLD_HIST: {
		const struct vr_proto_cold_hist *c = &m->cold_hist;

		g_print("generation %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
			" regions, sample %" G_GUINT64_FORMAT " us, aggregation %" G_GUINT64_FORMAT
			" us\n",
			(guint64)c->generation, (guint64)c->nr_regions,
			(guint64)c->sample_interval_us, (guint64)c->aggr_interval_us);
		for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++)
			if (c->bytes[i])
				g_print("score %2u: %" G_GUINT64_FORMAT " bytes\n", i,
					(guint64)c->bytes[i]);
		break;
	}
	case VR_PROTO_GET_STATS:
		print_stats(&m->stats);
		break;
	case VR_PROTO_GET_REGIONS: {
		const struct vr_proto_regions *r = &m->regions;
		g_print("sample %" G_GUINT64_FORMAT " us, aggregation %" G_GUINT64_FORMAT " us\n",
			(guint64)r->sample_interval_us, (guint64)r->aggr_interval_us);
		g_print("%-18s %-18s %10s %11s %8s\n", "start", "end", "size", "nr_accesses",
			"age");
		for (guint i = 0; r->regions && i < r->regions->len; i++) {
			const struct vr_picture_region *g =
				&g_array_index(r->regions, struct vr_picture_region, i);
			g_autofree char *size =
				g_format_size_full(g->end - g->start, G_FORMAT_SIZE_IEC_UNITS);
			g_print("0x%016" G_GINT64_MODIFIER "x 0x%016" G_GINT64_MODIFIER
				"x %10s %11u %8u\n",
				(guint64)g->start, (guint64)g->end, size, g->nr_accesses, g->age);
		}
		break;
	}
	case VR_PROTO_RECLAIM:
		g_print("reclaimed %" G_GUINT64_FORMAT " bytes in %" G_GUINT64_FORMAT " ms\n",
			(guint64)m->reclaim.reclaimed_bytes, (guint64)m->reclaim.elapsed_ms);
		break;
	case VR_PROTO_SET_POLICY:
		g_print("policy set\n");
		break;
	case VR_PROTO_PAUSE:
		g_print("agent paused\n");
		break;
	case VR_PROTO_RESUME:
		g_print("agent resumed\n");
		break;
	}
}

static int agent_watch(struct vr_agent_client *client, int argc, char **argv, gboolean json,
		       guint timeout_ms)
{
	uint64_t count = 0;
	g_autoptr(GError) error = NULL;
	if (argc > 2) {
		g_printerr("error: watch: unexpected argument '%s'\n", argv[2]);
		return VRCTL_EXIT_USAGE;
	}
	if (argc > 1 && !parse_u64("COUNT", argv[1], G_MAXUINT32, &count, &error)) {
		print_error("watch", error);
		return VRCTL_EXIT_USAGE;
	}
	for (uint64_t i = 0; count == 0 || i < count; i++) {
		g_auto(vr_proto_message) m = { 0 };
		g_autofree char *raw = NULL;
		if (!vr_agent_client_next_report(client, timeout_ms, &m, &raw, &error)) {
			print_error(NULL, error);
			return VRCTL_EXIT_ERROR;
		}
		if (json) {
			g_print("%s\n", raw);
		} else {
			g_print("report %" G_GUINT64_FORMAT "\n", (guint64)m.seq);
			print_stats(&m.stats);
		}
	}
	return VRCTL_EXIT_OK;
}

int vrctl_agent_main(int argc, char **argv)
{
	g_autofree char *socket_path = NULL;
	gint timeout_s = VRCTL_AGENT_DEFAULT_TIMEOUT_S;
	gboolean json = FALSE;
	const GOptionEntry entries[] = {
		{ "socket", 's', 0, G_OPTION_ARG_FILENAME, &socket_path,
		  "the host end of the agent's channel (a unix socket)", "PATH" },
		{ "timeout", 't', 0, G_OPTION_ARG_INT, &timeout_s,
		  "seconds to wait for the reply (default 10; reclaim adds its deadline)", "S" },
		{ "json", 'j', 0, G_OPTION_ARG_NONE, &json, "print the agent's reply line as JSON",
		  NULL },
		{ NULL }
	};
	g_autoptr(GError) error = NULL;
	g_autoptr(GOptionContext) octx = g_option_context_new("COMMAND [ARG...]");
	g_option_context_set_summary(octx, "Talk to one guest's vreclaim-agent.");
	g_option_context_set_description(octx, agent_usage);
	g_option_context_add_main_entries(octx, entries, NULL);
	g_option_context_set_strict_posix(octx, TRUE); /* options before the command */
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		print_error(NULL, error);
		return VRCTL_EXIT_USAGE;
	}
	if (argc < 2) {
		g_printerr("error: no agent command given\n%s\n", agent_usage);
		return VRCTL_EXIT_USAGE;
	}
	if (!socket_path) {
		g_printerr("error: --socket PATH is needed: the host end of the agent's channel\n");
		return VRCTL_EXIT_USAGE;
	}
	if (timeout_s <= 0 || timeout_s > 3600) {
		g_printerr("error: --timeout: expected 1..3600 seconds, got %d\n", timeout_s);
		return VRCTL_EXIT_USAGE;
	}
	guint timeout_ms = (guint)timeout_s * 1000;

	g_auto(vr_proto_request) req = { 0 };
	gboolean watch = !strcmp(argv[1], "watch");
	if (!watch && !build_request(argc - 1, argv + 1, &req, &error)) {
		print_error(NULL, error);
		return VRCTL_EXIT_USAGE;
	}
	g_autoptr(vr_agent_client) client = vr_agent_client_connect(socket_path, &error);
	if (!client) {
		print_error(NULL, error);
		return VRCTL_EXIT_ERROR;
	}
	if (watch)
		return agent_watch(client, argc - 1, argv + 1, json, timeout_ms);
	if (req.command == VR_PROTO_RECLAIM)
		timeout_ms += (guint)req.reclaim.deadline_ms;

	g_auto(vr_proto_message) reply = { 0 };
	g_autofree char *raw = NULL;
	gboolean ok = vr_agent_client_call(client, &req, timeout_ms, &reply, &raw, &error);
	/* QEMU drops a host that connects while the guest side is closing its
	 * port after the previous host left (the agent reopens it at once):
	 * one more try, for every request but reclaim, which is not repeated
	 * blindly. */
	if (!ok && req.command != VR_PROTO_RECLAIM &&
	    g_error_matches(error, VR_AGENT_CLIENT_ERROR, VR_AGENT_CLIENT_ERROR_CLOSED)) {
		g_debug("%s; trying once more", error->message);
		g_clear_error(&error);
		g_clear_pointer(&client, vr_agent_client_free);
		g_usleep(VRCTL_AGENT_RETRY_MS * 1000);
		client = vr_agent_client_connect(socket_path, &error);
		ok = client && vr_agent_client_call(client, &req, timeout_ms, &reply, &raw, &error);
	}
	if (!ok) {
		print_error(argv[1], error);
		return VRCTL_EXIT_ERROR;
	}
	if (reply.kind == VR_PROTO_MESSAGE_ERROR) {
		g_autofree char *desc = vr_text_escape(reply.error.desc, -1);

		g_printerr("error: %s: the agent refused (%s): %s\n", argv[1],
			   vr_proto_error_class_name(reply.error.cls), desc);
		return VRCTL_EXIT_ERROR;
	}
	if (json)
		g_print("%s\n", raw);
	else
		print_reply(&reply);
	return VRCTL_EXIT_OK;
}
