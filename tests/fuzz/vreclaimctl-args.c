// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target vreclaimctl-args: the command lines of vreclaimctl's commands
 * for the running vreclaimd (hostd/cli/control-cmd.c, vrctl_control_main():
 * status, set, pause, resume, metrics with their options and arguments).
 *
 * The input is the command line, one argument per line: the first line
 * picks the command (any text: it is matched against the five names, the
 * first one when none matches), the others are its arguments. The socket is
 * always one in a folder that does not exist, so a command line that parses
 * ends at the connection, quickly, and nothing reaches a real vreclaimd:
 * arguments that would name another socket (--socket, -s) or ask for help
 * (GOption prints it and exits) are dropped. `vreclaimctl agent` and
 * `simulate` are left out: they read files and connect to sockets their
 * arguments name, or run simulations.
 *
 * Checks: the exit code is a VRCTL_EXIT_* one, and never success (there is
 * no vreclaimd to talk to).
 */
#include <string.h>

#include "cli/control-cmd.h"
#include "cli/exit-codes.h"
#include "fuzz.h"

/* Arguments taken from one input: a set with every setting fits. */
#define FUZZ_MAX_ARGS 40

/* A socket in a folder that does not exist: connecting fails at once. */
#define FUZZ_SOCKET "/nonexistent/vreclaim-fuzz/vreclaimd.sock"

static const char *const commands[] = { "status", "set", "pause", "resume", "metrics" };

/* Would GOption read @arg as --socket, -s or a help option? */
static gboolean is_refused(const char *arg)
{
	if (g_str_has_prefix(arg, "--"))
		return g_str_has_prefix(arg, "--s") || g_str_has_prefix(arg, "--h");
	/* A group of short options ("-jh") or one with its value ("-s/x"). */
	return arg[0] == '-' && strpbrk(arg + 1, "sh?") != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_auto(GStrv) lines = vr_fuzz_split(data, size, FUZZ_MAX_ARGS);
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	const char *command = commands[0];
	int code;

	for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
		if (!strcmp(lines[0], commands[i]))
			command = commands[i];
	g_ptr_array_add(argv, (gpointer)command);
	for (char **l = lines + 1; *l; l++) {
		if (is_refused(*l))
			return 0;
		g_ptr_array_add(argv, *l);
	}
	g_ptr_array_add(argv, NULL);
	/* vrctl_control_main() takes its arguments as main() gets them: GOption
	 * may reorder and remove pointers of the vector, never free them. */
	code = vrctl_control_main(FUZZ_SOCKET, (int)argv->len - 1, (char **)argv->pdata);
	VR_FUZZ_CHECK(code == VRCTL_EXIT_ERROR || code == VRCTL_EXIT_USAGE,
		      "vreclaimctl %s exited %d without a vreclaimd", command, code);
	return 0;
}
