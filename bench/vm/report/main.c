/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vm-report: the nested-VM benchmark's report from the harness's runs.csv
 * (bench/vm/run): results.csv, report.md and the plots (vm-report.h).
 *
 *   vm-report --out OUT [--runs OUT/runs.csv] [--no-plots] [--rss-workload NAME]
 *
 * Exit codes: 0 written; 1 runs.csv is invalid or a file cannot be read or
 * written (nothing written for an invalid runs.csv); 2 a bad command line.
 */
#include <stdlib.h>

#include "vm-report.h"

int main(int argc, char **argv)
{
	g_autofree char *out = NULL;
	g_autofree char *runs = NULL;
	g_autofree char *rss_workload = NULL;
	gboolean no_plots = FALSE;
	const GOptionEntry entries[] = {
		{ "out", 'o', 0, G_OPTION_ARG_FILENAME, &out,
		  "the harness's output folder (required)", "OUT" },
		{ "runs", 0, 0, G_OPTION_ARG_FILENAME, &runs, "runs.csv (default OUT/runs.csv)",
		  "FILE" },
		{ "no-plots", 0, 0, G_OPTION_ARG_NONE, &no_plots, "do not draw the plots", NULL },
		{ "rss-workload", 0, 0, G_OPTION_ARG_STRING, &rss_workload,
		  "the workload of rss-over-time.png (default: the first one with series files)",
		  "NAME" },
		{ NULL },
	};
	g_autoptr(GOptionContext)
		ctx = g_option_context_new("- results.csv, report.md and plots from runs.csv");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	struct vm_report_options o = { 0 };
	gboolean ok;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc > 1 || !out) {
		g_autofree char *help = g_option_context_get_help(ctx, TRUE, NULL);

		g_printerr("vm-report: %s\n%s",
			   error    ? error->message :
			   argc > 1 ? "unexpected arguments" :
				      "--out OUT is required",
			   help);
		return 2;
	}
	o.out_dir = out;
	o.runs_path = runs;
	o.plots = !no_plots;
	o.rss_workload = rss_workload;
	ok = vm_report_write(&o, lines, &error);
	for (guint i = 0; i < lines->len; i++)
		g_print("%s\n", (const char *)g_ptr_array_index(lines, i));
	if (!ok) {
		g_printerr("vm-report: %s\n", error->message);
		return g_error_matches(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE) ? 2 : 1;
	}
	return 0;
}
