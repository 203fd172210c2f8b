/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimctl: the command-line client of vreclaim: `simulate`
 * (docs/simulate.md), `agent` (docs/agent.md), and the commands of the
 * running vreclaimd over its control socket: `status`, `set`, `pause`,
 * `resume`, `metrics` (docs/vreclaimctl.md).
 */
#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cli/agent-cmd.h"
#include "cli/control-cmd.h"
#include "cli/exit-codes.h"
#include "cli/simulate.h"
#include "control/control.h"

/* A command runs either on its own (@main) or against the running
 * vreclaimd (@control_main, given the --socket before the command). */
static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
	int (*control_main)(const char *socket_path, int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "status", NULL, vrctl_control_main,
	  "every domain vreclaimd knows, and what it does to them (--json)" },
	{ "set", NULL, vrctl_control_main, "change a domain's settings: set DOMAIN KEY=VALUE..." },
	{ "pause", NULL, vrctl_control_main, "stop reclaiming from a domain, or from all" },
	{ "resume", NULL, vrctl_control_main, "reclaim again from a domain, or from all" },
	{ "metrics", NULL, vrctl_control_main, "vreclaimd's metrics (Prometheus text format)" },
	{ "simulate", vrctl_simulate_main, NULL,
	  "run a policy against a simulated guest (--matrix: the published table)" },
	{ "agent", vrctl_agent_main, NULL, "talk to one guest's agent over its channel socket" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: vreclaimctl [--socket PATH] COMMAND [OPTION...]\n\nCommands:\n");
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\n--socket PATH: vreclaimd's control socket (default %s).\n"
		"'vreclaimctl COMMAND --help' describes a command's options.\n",
		VR_CONTROL_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	const char *socket_path = NULL;

	setlocale(LC_ALL, "");
	/* The one option before the command: vreclaimd's control socket. */
	if (argc > 1 && g_str_has_prefix(argv[1], "--socket=")) {
		socket_path = argv[1] + strlen("--socket=");
		argc--;
		argv++;
	} else if (argc > 1 && (!strcmp(argv[1], "--socket") || !strcmp(argv[1], "-s"))) {
		if (argc < 3) {
			g_printerr("error: --socket: a PATH is needed\n");
			return VRCTL_EXIT_USAGE;
		}
		socket_path = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2) {
		g_printerr("error: no command given\n");
		usage(stderr);
		return VRCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return VRCTL_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		g_print("vreclaimctl %s\n", VRCTL_VERSION);
		return VRCTL_EXIT_OK;
	}
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		if (commands[i].control_main)
			return commands[i].control_main(socket_path, argc - 1, argv + 1);
		if (socket_path) {
			g_printerr("error: --socket before the command names vreclaimd's socket; "
				   "'%s' does not talk to vreclaimd (give its options after it)\n",
				   commands[i].name);
			return VRCTL_EXIT_USAGE;
		}
		return commands[i].main(argc - 1, argv + 1);
	}
	g_printerr("error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return VRCTL_EXIT_USAGE;
}
