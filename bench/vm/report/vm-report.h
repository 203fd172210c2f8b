/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The nested-VM benchmark's report (vm-report): from runs.csv, results.csv
 * (every run with its derived columns), report.md (per workload, each
 * config's median and min..max over its runs; the quota matrix in the
 * published DAMON_RECLAIM table's shape) and two gnuplot plots.
 *
 * OUT is the harness's output folder: OUT/runs.csv, and per run the RSS time
 * series OUT/series/WORKLOAD/CONFIG/run-N.csv (header `t_s,rss_bytes`).
 * Written: OUT/results.csv, OUT/report.md, OUT/saving-vs-slowdown.png,
 * OUT/rss-over-time.png, and the plots' data and gnuplot scripts in
 * OUT/plots/ (redraw with `cd OUT && gnuplot plots/NAME.gp`).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "vm-runs.h"

/**
 * struct vm_report_options - what vm_report_write() does.
 * @out_dir:	 the output folder (OUT); must exist.
 * @runs_path:	 runs.csv; NULL: OUT/runs.csv.
 * @plots:	 draw the plots (false: --no-plots).
 * @rss_workload: the workload of rss-over-time.png; NULL: the first one
 *		 (in runs.csv's order) that has series files.
 * @gnuplot:	 the gnuplot program (a name looked up in PATH, or a path);
 *		 NULL: "gnuplot".
 */
struct vm_report_options {
	const char *out_dir;
	const char *runs_path;
	bool plots;
	const char *rss_workload;
	const char *gnuplot;
};

/**
 * struct vm_report_plots - the plots drawn, for report.md's links.
 * @saving_vs_slowdown: saving-vs-slowdown.png was drawn.
 * @rss_workload:	the workload rss-over-time.png shows; NULL when it
 *			was not drawn.
 */
struct vm_report_plots {
	bool saving_vs_slowdown;
	const char *rss_workload;
};

/**
 * vm_report_markdown() - report.md for @runs.
 * @runs:	the runs with their derived columns.
 * @plots:	the plots to link (NULL: none).
 *
 * Deterministic: the same runs give the same bytes (no time, no path of the
 * machine). Workloads and configs in first-seen order.
 *
 * Return: the text (caller frees).
 */
char *vm_report_markdown(const struct vm_runs *runs, const struct vm_report_plots *plots);

/**
 * vm_report_write() - read runs.csv and write everything into OUT.
 * @o:		what to do.
 * @lines:	gets one line (char *, owned by the array: create it with
 *		g_free as its free function) per file written and one per
 *		plot skipped, in order, for the user.
 * @error:	runs.csv cannot be read or is invalid (VM_RUNS_ERROR: nothing
 *		is written then), @o->rss_workload is not in it, or a file
 *		cannot be written.
 *
 * results.csv and report.md are written to temporary files and renamed once
 * both are complete. A plot that cannot be drawn (no gnuplot, gnuplot
 * failed, nothing to plot) is skipped with a line in @lines, not an error.
 *
 * Return: TRUE when results.csv and report.md were written.
 */
gboolean vm_report_write(const struct vm_report_options *o, GPtrArray *lines, GError **error);
