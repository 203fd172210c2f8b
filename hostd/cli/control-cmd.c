// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaimctl status/set/pause/resume/metrics: see control-cmd.h.
 */
#include "cli/control-cmd.h"

#include <stdio.h>
#include <string.h>

#include "cli/exit-codes.h"
#include "control/control-client.h"
#include "json-doc.h"
#include "text-escape.h"

/* How long a command waits for vreclaimd's reply, ms: it answers from its
 * main loop at once; a daemon that does not within this is stuck. */
#define VRCTL_CONTROL_TIMEOUT_MS 30000

/* Columns of the status table are this many spaces apart, as virsh's. */
#define VRCTL_COLUMN_GAP 3

char *vrctl_control_format_size(guint64 bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	guint u = 0;

	if (bytes < 1024)
		return g_strdup_printf("%" G_GUINT64_FORMAT " B", bytes);
	v /= 1024;
	while (v >= 1024 && u + 1 < G_N_ELEMENTS(units)) {
		v /= 1024;
		u++;
	}
	return g_strdup_printf("%.2f %s", v, units[u]);
}

/* "3d 4h 5m", "4h 5m", "5m 6s", "6s". */
static char *format_uptime(guint64 ms)
{
	guint64 s = ms / 1000;

	if (s >= 86400)
		return g_strdup_printf("%" G_GUINT64_FORMAT "d %" G_GUINT64_FORMAT
				       "h %" G_GUINT64_FORMAT "m",
				       s / 86400, s % 86400 / 3600, s % 3600 / 60);
	if (s >= 3600)
		return g_strdup_printf("%" G_GUINT64_FORMAT "h %" G_GUINT64_FORMAT "m", s / 3600,
				       s % 3600 / 60);
	if (s >= 60)
		return g_strdup_printf("%" G_GUINT64_FORMAT "m %" G_GUINT64_FORMAT "s", s / 60,
				       s % 60);
	return g_strdup_printf("%" G_GUINT64_FORMAT "s", s);
}

static void print_daemon(const struct vr_daemon_status *d)
{
	g_autofree char *version = vr_text_escape(d->version, -1);
	g_autofree char *uri = vr_text_escape(d->libvirt_uri, -1);
	g_autofree char *uptime = format_uptime(d->uptime_ms);
	g_autofree char *quota = vrctl_control_format_size(d->fleet_quota_bytes);
	g_autofree char *state = vr_text_escape(d->host_memory_state, -1);

	g_print("%-19s %s, up %s\n", "vreclaimd:", version, uptime);
	g_print("%-19s %s (%s)\n", "libvirt:", *uri ? uri : "-",
		d->libvirt_connected ? "connected" : "NOT connected");
	if (d->libvirt_degraded) {
		g_autofree char *why = vr_text_escape(d->libvirt_degraded_reason, -1);
		g_print("%-19s %s\n", "libvirt DEGRADED:", why);
	}
	g_print("%-19s %s (free memory %u.%u%%, %s)\n",
		"host needs memory:", d->host_needs_memory ? "yes" : "no",
		d->free_mem_rate_permille / 10, d->free_mem_rate_permille % 10, state);
	g_print("%-19s %s\n", "fleet quota:", quota);
}

#define NR_COLUMNS 10

static const char *const column_names[NR_COLUMNS] = {
	"NAME",	  "MANAGED",   "POLICY",	"PRIO",		  "AGENT",
	"ACTION", "RECLAIMED", "RSS NOW/START", "QUOTA-EXCEEDED", "LAST ERROR",
};

/* The cells of @d's row, owned. */
static void domain_row(const struct vr_domain_status *d, char **cells)
{
	g_autofree char *reason = vr_text_escape(d->reason, -1);
	g_autofree char *backend = vr_text_escape(d->agent_backend, -1);
	g_autofree char *rss = vrctl_control_format_size(d->rss_bytes);
	g_autofree char *rss_start = vrctl_control_format_size(d->rss_start_bytes);

	cells[0] = vr_text_escape(d->name, -1);
	cells[1] = d->managed && d->degraded ? g_strdup("yes, degraded") :
		   d->managed		     ? g_strdup("yes") :
		   *reason		     ? g_strdup_printf("no: %s", reason) :
					       g_strdup("no");
	cells[2] = *d->policy ? vr_text_escape(d->policy, -1) : g_strdup("-");
	cells[3] = g_strdup_printf("%u", d->priority);
	cells[4] = d->agent_state == VR_AGENT_STATE_CONNECTED && *backend ?
			   g_strdup_printf("connected (%s)", backend) :
			   g_strdup(vr_agent_state_name(d->agent_state));
	cells[5] = g_strdup(d->paused ? "paused" : vr_domain_action_name(d->action));
	cells[6] = vrctl_control_format_size(d->reclaimed_bytes);
	cells[7] = g_strdup_printf("%s / %s", rss, rss_start);
	cells[8] = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)d->qt_exceeds);
	/* A stalled QEMU says why first: nothing else works until it answers. */
	cells[9] = d->degraded	  ? vr_text_escape(d->degraded_reason, -1) :
		   *d->last_error ? vr_text_escape(d->last_error, -1) :
				    g_strdup("-");
}

/* One row: a space, the cells padded to @widths (the last one not). */
static void print_row(char *const *cells, const glong *widths)
{
	GString *line = g_string_new(" ");

	for (guint i = 0; i < NR_COLUMNS; i++) {
		g_string_append(line, cells[i]);
		if (i + 1 == NR_COLUMNS)
			break;
		for (glong pad = widths[i] - g_utf8_strlen(cells[i], -1) + VRCTL_COLUMN_GAP;
		     pad > 0; pad--)
			g_string_append_c(line, ' ');
	}
	g_print("%s\n", line->str);
	g_string_free(line, TRUE);
}

/* The table of the domains, virsh list style. */
static void print_domains(const GPtrArray *domains)
{
	g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	glong widths[NR_COLUMNS];
	glong total = 1;

	for (guint i = 0; i < NR_COLUMNS; i++)
		widths[i] = g_utf8_strlen(column_names[i], -1);
	for (guint r = 0; r < domains->len; r++) {
		char **cells = g_new0(char *, NR_COLUMNS + 1);

		domain_row(g_ptr_array_index(domains, r), cells);
		for (guint i = 0; i < NR_COLUMNS; i++)
			widths[i] = MAX(widths[i], g_utf8_strlen(cells[i], -1));
		g_ptr_array_add(rows, cells);
	}
	for (guint i = 0; i < NR_COLUMNS; i++)
		total += widths[i] + (i + 1 < NR_COLUMNS ? VRCTL_COLUMN_GAP : 0);
	print_row((char *const *)column_names, widths);
	for (glong i = 0; i < total; i++)
		g_print("-");
	g_print("\n");
	for (guint r = 0; r < rows->len; r++)
		print_row(g_ptr_array_index(rows, r), widths);
}

/* The "return" value of the status reply @raw, indented. */
static void print_json(const char *raw)
{
	g_autoptr(json_object) root = json_tokener_parse(raw);
	struct json_object *ret = NULL;

	if (root)
		json_object_object_get_ex(root, "return", &ret);
	g_print("%s\n", json_object_to_json_string_ext(
				ret, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
					     JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Say what went wrong, virsh-like. Return: VRCTL_EXIT_ERROR. */
static int report_error(const char *domain, const GError *error)
{
	g_autofree char *msg = vr_text_escape(error->message, -1);

	if (g_error_matches(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN) && domain) {
		g_autofree char *name = vr_text_escape(domain, -1);

		g_printerr("error: domain '%s' is not known to vreclaimd\n", name);
	} else if (g_error_matches(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT)) {
		g_printerr("error: invalid argument: %s\n", msg);
	} else {
		g_printerr("error: %s\n", msg);
	}
	return VRCTL_EXIT_ERROR;
}

static const char control_usage[] =
	"Commands of the running vreclaimd (over its control socket, default " VR_CONTROL_DEFAULT_SOCKET
	"):\n"
	"  status [--json]            every domain vreclaimd knows, and what it does to them\n"
	"  set DOMAIN KEY=VALUE...    change a domain's settings (e.g. priority=80)\n"
	"  pause [DOMAIN]             stop reclaiming from DOMAIN (default: every domain)\n"
	"  resume [DOMAIN]            reclaim again from DOMAIN (default: every domain)\n"
	"  metrics                    the metrics, in the Prometheus text format";

/* Each command: its arguments, its summary. */
static const struct {
	const char *name;
	const char *params;
	const char *summary;
	int min_args;
	int max_args;
} control_commands[] = {
	{ "status", "", "Show every domain vreclaimd knows and what it does to them.", 0, 0 },
	{ "set", "DOMAIN KEY=VALUE...", "Change settings of one domain.", 2,
	  1 + VR_CONTROL_MAX_SETTINGS },
	{ "pause", "[DOMAIN]", "Stop reclaiming from DOMAIN, or from every domain.", 0, 1 },
	{ "resume", "[DOMAIN]", "Reclaim again from DOMAIN, or from every domain.", 0, 1 },
	{ "metrics", "", "Print vreclaimd's metrics (Prometheus text format).", 0, 0 },
};

int vrctl_control_main(const char *socket_path, int argc, char **argv)
{
	g_autofree char *own_socket = NULL;
	gboolean json = FALSE;
	const GOptionEntry entries[] = {
		{ "socket", 's', 0, G_OPTION_ARG_FILENAME, &own_socket,
		  "vreclaimd's control socket (default " VR_CONTROL_DEFAULT_SOCKET ")", "PATH" },
		{ NULL }
	};
	const GOptionEntry json_entries[] = { { "json", 'j', 0, G_OPTION_ARG_NONE, &json,
						"print vreclaimd's status as JSON", NULL },
					      { NULL } };
	g_autoptr(GError) error = NULL;
	guint cmd = 0;

	while (cmd < G_N_ELEMENTS(control_commands) && strcmp(argv[0], control_commands[cmd].name))
		cmd++;
	g_return_val_if_fail(cmd < G_N_ELEMENTS(control_commands), VRCTL_EXIT_USAGE);
	const char *name = control_commands[cmd].name;
	g_autoptr(GOptionContext) octx = g_option_context_new(control_commands[cmd].params);
	g_option_context_set_summary(octx, control_commands[cmd].summary);
	g_option_context_set_description(octx, control_usage);
	g_option_context_add_main_entries(octx, entries, NULL);
	if (!strcmp(name, "status"))
		g_option_context_add_main_entries(octx, json_entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("error: %s: %s\n", name, error->message);
		return VRCTL_EXIT_USAGE;
	}
	int nargs = argc - 1;
	if (nargs > control_commands[cmd].max_args) {
		g_autofree char *arg = vr_text_escape(argv[control_commands[cmd].max_args + 1], -1);

		g_printerr("error: %s: unexpected argument '%s'\n", name, arg);
		return VRCTL_EXIT_USAGE;
	}
	if (nargs < control_commands[cmd].min_args) {
		g_printerr("error: %s: expected %s %s\n", name, name, control_commands[cmd].params);
		return VRCTL_EXIT_USAGE;
	}
	const char *domain = nargs > 0 ? argv[1] : NULL;
	if (domain && !*domain) {
		g_printerr("error: %s: the DOMAIN name is empty\n", name);
		return VRCTL_EXIT_USAGE;
	}
	for (int i = 2; !strcmp(name, "set") && i < argc; i++) {
		const char *eq = strchr(argv[i], '=');

		if (!eq || eq == argv[i]) {
			g_autofree char *arg = vr_text_escape(argv[i], -1);

			g_printerr("error: set: '%s' is not KEY=VALUE\n", arg);
			return VRCTL_EXIT_USAGE;
		}
	}

	const char *path = own_socket  ? own_socket :
			   socket_path ? socket_path :
					 VR_CONTROL_DEFAULT_SOCKET;
	g_autoptr(vr_control_client) client = vr_control_client_connect(path, &error);
	if (!client)
		return report_error(NULL, error);

	if (!strcmp(name, "status")) {
		g_autoptr(GPtrArray) domains = NULL;
		g_autofree char *raw = NULL;
		struct vr_daemon_status daemon = { 0 };

		if (!vr_control_client_status(client, VRCTL_CONTROL_TIMEOUT_MS, &domains, &daemon,
					      &raw, &error))
			return report_error(NULL, error);
		if (json) {
			print_json(raw);
		} else {
			print_daemon(&daemon);
			g_print("\n");
			print_domains(domains);
		}
	} else if (!strcmp(name, "set")) {
		g_autoptr(GPtrArray) settings = g_ptr_array_new();

		for (int i = 2; i < argc; i++)
			g_ptr_array_add(settings, argv[i]);
		g_ptr_array_add(settings, NULL);
		if (!vr_control_client_set(client, domain, (const char *const *)settings->pdata,
					   VRCTL_CONTROL_TIMEOUT_MS, &error))
			return report_error(domain, error);
		g_autofree char *shown = vr_text_escape(domain, -1);
		g_print("Domain '%s' updated\n", shown);
	} else if (!strcmp(name, "pause") || !strcmp(name, "resume")) {
		gboolean pause = !strcmp(name, "pause");

		if (!vr_control_client_pause(client, domain, pause, VRCTL_CONTROL_TIMEOUT_MS,
					     &error))
			return report_error(domain, error);
		g_autofree char *shown = domain ? vr_text_escape(domain, -1) : NULL;
		if (shown)
			g_print("Reclaim %s for domain '%s'\n", pause ? "paused" : "resumed",
				shown);
		else
			g_print("Reclaim %s for every domain\n", pause ? "paused" : "resumed");
	} else {
		g_autofree char *text =
			vr_control_client_metrics(client, VRCTL_CONTROL_TIMEOUT_MS, &error);

		if (!text)
			return report_error(NULL, error);
		fputs(text, stdout);
	}
	return VRCTL_EXIT_OK;
}
