/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimctl: the command-line client of vreclaim: `simulate`
 * (docs/simulate.md) and `agent` (docs/agent.md); it grows with vreclaimd.
 */
#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "agent-cmd.h"
#include "simulate.h"

static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "simulate", vrctl_simulate_main,
	  "run a policy against a simulated guest (--matrix: the published table)" },
	{ "agent", vrctl_agent_main, "talk to one guest's agent over its channel socket" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: vreclaimctl COMMAND [OPTION...]\n\nCommands:\n");
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'vreclaimctl COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
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
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].main(argc - 1, argv + 1);
	g_printerr("error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return VRCTL_EXIT_USAGE;
}
