/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * report.md, results.csv and the plots of the nested-VM benchmark.
 */
#include "vm-report.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm-stats.h"

#define MIB (1024.0 * 1024.0)

/* The quota matrix's configs: vreclaim-agent-q{none,NNms}[-prio]. */
#define QUOTA_PREFIX "vreclaim-agent-q"

/* The plots: their file names in OUT, and their data and scripts in OUT/plots. */
#define PLOT_SAVING "saving-vs-slowdown"
#define PLOT_RSS    "rss-over-time"

/* ---- report.md ---- */

/*
 * One cell: the median, then "(min..max)" when there are two runs or more;
 * "-" when no run has the value. @suffix follows the median only.
 */
static char *cell(const GPtrArray *sel, bool derived, int idx, double scale, int decimals,
		  const char *suffix)
{
	g_autofree double *v = g_new(double, sel->len + 1);
	struct vm_stats st;
	g_autofree char *med = NULL;
	g_autofree char *lo = NULL;
	g_autofree char *hi = NULL;

	for (guint i = 0; i < sel->len; i++) {
		const struct vm_run *run = g_ptr_array_index(sel, i);

		v[i] = (derived ? run->derived[idx] : run->values[idx]) * scale;
	}
	st = vm_stats_summarize(v, sel->len);
	if (st.n == 0)
		return g_strdup("-");
	med = vm_format_number(st.median, decimals);
	if (st.n == 1)
		return g_strdup_printf("%s%s", med, suffix);
	lo = vm_format_number(st.min, decimals);
	hi = vm_format_number(st.max, decimals);
	return g_strdup_printf("%s%s (%s..%s)", med, suffix, lo, hi);
}

static void append_baseline_note(GString *md, const struct vm_baseline *b)
{
	g_autofree char *rss = NULL;
	g_autofree char *tput = NULL;

	if (b->nr_runs == 0) {
		g_string_append(md, "No baseline run: this workload has no `" VM_BASELINE_CONFIG
				    "` config, so the comparative columns are empty.\n\n");
		return;
	}
	rss = isnan(b->rss_avg_bytes) ? g_strdup("-") : vm_format_number(b->rss_avg_bytes / MIB, 1);
	tput = isnan(b->throughput_ops_per_s) ? g_strdup("-") :
						vm_format_number(b->throughput_ops_per_s, 1);
	g_string_append_printf(md,
			       "Baseline: `" VM_BASELINE_CONFIG "`, median of %u run%s: RSS avg %s "
			       "MiB, throughput %s ops/s.\n\n",
			       b->nr_runs, b->nr_runs == 1 ? "" : "s", rss, tput);
}

static void append_config_table(GString *md, const struct vm_runs *runs, const char *workload)
{
	g_autoptr(GPtrArray) configs = vm_runs_configs(runs, workload);

	g_string_append(md,
			"| config | runs | memory saving (avg) | memory saving (end) | slowdown | "
			"p99 increase | reclaimer CPU | return efficiency | refaults | guest PSI "
			"some (ms) |\n"
			"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (guint i = 0; i < configs->len; i++) {
		const char *config = g_ptr_array_index(configs, i);
		g_autoptr(GPtrArray) sel = vm_runs_select(runs, workload, config);
		g_autofree char *c1 = cell(sel, true, VM_DER_MEMORY_SAVING_AVG_PCT, 1, 1, "%");
		g_autofree char *c2 = cell(sel, true, VM_DER_MEMORY_SAVING_END_PCT, 1, 1, "%");
		g_autofree char *c3 = cell(sel, true, VM_DER_SLOWDOWN_PCT, 1, 1, "%");
		g_autofree char *c4 = cell(sel, true, VM_DER_P99_INCREASE_PCT, 1, 1, "%");
		g_autofree char *c5 = cell(sel, true, VM_DER_RECLAIMER_CPU_PCT, 1, 2, "%");
		g_autofree char *c6 = cell(sel, true, VM_DER_RETURN_EFFICIENCY_PCT, 1, 1, "%");
		g_autofree char *c7 = cell(sel, true, VM_DER_REFAULTS_PAGES, 1, 0, "");
		g_autofree char *c8 = cell(sel, false, VM_COL_PSI_SOME_US, 1e-3, 1, "");

		g_string_append_printf(md, "| %s | %u | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				       config, sel->len, c1, c2, c3, c4, c5, c6, c7, c8);
	}
	g_string_append_c(md, '\n');
}

/**
 * struct quota_row - a config of the quota matrix.
 * @config:	its name (not owned).
 * @quota_ms:	the time quota, ms per second; 0: none.
 * @prio:	with prioritization.
 */
struct quota_row {
	const char *config;
	guint64 quota_ms;
	bool prio;
};

/* vreclaim-agent-q{none,NNms}[-prio] -> @row; false for any other name. */
static bool parse_quota_config(const char *config, struct quota_row *row)
{
	g_autofree char *rest = NULL;
	size_t len;

	if (!g_str_has_prefix(config, QUOTA_PREFIX))
		return false;
	rest = g_strdup(config + strlen(QUOTA_PREFIX));
	row->config = config;
	row->prio = g_str_has_suffix(rest, "-prio");
	if (row->prio)
		rest[strlen(rest) - strlen("-prio")] = '\0';
	if (strcmp(rest, "none") == 0) {
		row->quota_ms = 0;
		return true;
	}
	len = strlen(rest);
	if (len < 3 || strcmp(rest + len - 2, "ms") != 0)
		return false;
	rest[len - 2] = '\0';
	return g_ascii_string_to_unsigned(rest, 10, 1, G_MAXUINT32, &row->quota_ms, NULL);
}

/* The published table's order: without prioritization first, then quota
 * none, then growing quotas. */
static gint cmp_quota_row(gconstpointer a, gconstpointer b)
{
	const struct quota_row *x = a;
	const struct quota_row *y = b;

	if (x->prio != y->prio)
		return x->prio ? 1 : -1;
	return (x->quota_ms > y->quota_ms) - (x->quota_ms < y->quota_ms);
}

static void append_quota_table(GString *md, const struct vm_runs *runs, const char *workload,
			       const struct vm_baseline *b)
{
	g_autoptr(GPtrArray) configs = vm_runs_configs(runs, workload);
	g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(struct quota_row));

	for (guint i = 0; i < configs->len; i++) {
		struct quota_row row;

		if (parse_quota_config(g_ptr_array_index(configs, i), &row))
			g_array_append_val(rows, row);
	}
	if (rows->len == 0)
		return;
	g_array_sort(rows, cmp_quota_row);
	g_string_append(md,
			"Quota matrix (vreclaim-agent-q*), in the shape of the published "
			"DAMON_RECLAIM table:\n\n"
			"| time quota | prioritization | memory saving | reclaimer CPU | workload "
			"slowdown |\n"
			"| --- | --- | ---: | ---: | ---: |\n");
	for (guint i = 0; i < rows->len; i++) {
		const struct quota_row *row = &g_array_index(rows, struct quota_row, i);
		g_autoptr(GPtrArray) sel = vm_runs_select(runs, workload, row->config);
		g_autofree char *quota =
			row->quota_ms ?
				g_strdup_printf("%" G_GUINT64_FORMAT " ms/s", row->quota_ms) :
				g_strdup("none");
		g_autofree char *saving = cell(sel, true, VM_DER_MEMORY_SAVING_AVG_PCT, 1, 1, "%");
		g_autofree char *cpu = cell(sel, true, VM_DER_RECLAIMER_CPU_PCT, 1, 2, "%");
		g_autofree char *slow = cell(sel, true, VM_DER_SLOWDOWN_PCT, 1, 1, "%");

		g_string_append_printf(md, "| %s | %s | %s | %s | %s |\n", quota,
				       row->prio ? "Y" : "N", saving, cpu, slow);
	}
	g_string_append_c(md, '\n');
	append_baseline_note(md, b);
}

char *vm_report_markdown(const struct vm_runs *runs, const struct vm_report_plots *plots)
{
	GString *md = g_string_new(NULL);

	g_string_append(
		md,
		"# vreclaim nested-VM benchmark\n\n"
		"Each cell: the median over the config's runs, then (min..max) when there are "
		"two runs or more; \"-\" where nothing was measured. Memory saving: the QEMU "
		"process's guest-RAM RSS (average over the measured window, and at its end) below "
		"the workload's `none` config (the median of its runs); slowdown: throughput below "
		"`none`; p99 increase: p99 latency above `none`; reclaimer CPU: the reclaimer's CPU "
		"time over the window, in percent of one CPU; return efficiency: bytes the host got "
		"back over the bytes the guest freed (net); refaults: pswpin and workingset "
		"refaults (anon, file), pages; guest PSI some: the guest's memory pressure stall "
		"time (some), ms.\n\n");
	if (runs->workloads->len == 0)
		g_string_append(md, "No runs.\n\n");
	for (guint w = 0; w < runs->workloads->len; w++) {
		const char *workload = g_ptr_array_index(runs->workloads, w);
		struct vm_baseline b = vm_runs_baseline(runs, workload);

		g_string_append_printf(md, "## %s\n\n", workload);
		append_config_table(md, runs, workload);
		append_baseline_note(md, &b);
		append_quota_table(md, runs, workload, &b);
	}
	if (plots && (plots->saving_vs_slowdown || plots->rss_workload)) {
		g_string_append(md, "## Plots\n\n");
		if (plots->saving_vs_slowdown)
			g_string_append(md, "![memory saving against slowdown, medians with "
					    "min..max](" PLOT_SAVING ".png)\n\n");
		if (plots->rss_workload)
			g_string_append_printf(md,
					       "![guest-RAM RSS over time, %s, run 1 of each "
					       "config](" PLOT_RSS ".png)\n\n",
					       plots->rss_workload);
	}
	/* One newline at the end of the file. */
	g_string_truncate(md, md->len - 1);
	return g_string_free(md, FALSE);
}

/* ---- plots ---- */

/* The terminal: pngcairo where gnuplot has it, else png; names as written
 * (no enhanced text: '_' is no subscript). */
static const char gnuplot_terminal[] =
	"if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
	"\tset terminal pngcairo size 1000,700 font \"sans,10\" noenhanced\n"
	"} else {\n"
	"\tset terminal png size 1000,700 noenhanced\n"
	"}\n";

static gboolean write_file(const char *path, const char *text, GPtrArray *lines, GError **error)
{
	if (!g_file_set_contents(path, text, -1, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	g_ptr_array_add(lines, g_strdup_printf("wrote %s", path));
	return TRUE;
}

/* Run gnuplot on OUT/plots/NAME.gp in OUT. FALSE with a line in @lines when
 * it fails (the PNG is removed then). */
static bool run_gnuplot(const char *gnuplot, const char *out_dir, const char *name,
			GPtrArray *lines)
{
	g_autofree char *script = g_strdup_printf("plots/%s.gp", name);
	g_autofree char *png = g_strdup_printf("%s.png", name);
	g_autofree char *png_path = g_build_filename(out_dir, png, NULL);
	const char *argv[] = { gnuplot, script, NULL };
	g_autofree char *out = NULL;
	g_autofree char *err = NULL;
	g_autoptr(GError) error = NULL;
	int status;

	if (!g_spawn_sync(out_dir, (char **)argv, NULL, G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL,
			  &out, &err, &status, &error) ||
	    !g_spawn_check_wait_status(status, &error)) {
		g_strstrip(err ? err : (err = g_strdup("")));
		g_ptr_array_add(lines, g_strdup_printf("%s not drawn: gnuplot: %s%s%s", png_path,
						       error->message, *err ? ": " : "", err));
		g_unlink(png_path);
		return false;
	}
	g_ptr_array_add(lines, g_strdup_printf("wrote %s", png_path));
	return true;
}

/* saving-vs-slowdown: one data block per workload (gnuplot `index`), one line
 * per config with both medians. FALSE when no config has both. */
static bool saving_plot_files(const struct vm_runs *runs, GString *dat, GString *gp)
{
	guint blocks = 0;

	g_string_append(dat,
			"# saving-vs-slowdown.png: per workload (one gnuplot index each), per "
			"config: slowdown_pct median min max, memory_saving_avg_pct median min "
			"max, config\n");
	g_string_append_printf(
		gp,
		"# vm-report: memory saving against slowdown. Redraw: cd OUT && "
		"gnuplot plots/" PLOT_SAVING ".gp\n%s"
		"set output \"" PLOT_SAVING ".png\"\n"
		"set title \"Memory saving against workload slowdown (medians of the "
		"runs; bars: min..max)\"\n"
		"set xlabel \"workload slowdown (%%): throughput below the none config\"\n"
		"set ylabel \"memory saving (%%): average guest-RAM RSS below the none "
		"config\"\n"
		"set grid\nset xzeroaxis\nset yzeroaxis\nset offsets graph 0.05, graph "
		"0.2, graph 0.05, graph 0.05\n"
		"set key below height 1\n"
		"plot ",
		gnuplot_terminal);
	for (guint w = 0; w < runs->workloads->len; w++) {
		const char *workload = g_ptr_array_index(runs->workloads, w);
		g_autoptr(GPtrArray) configs = vm_runs_configs(runs, workload);
		guint points = 0;

		for (guint i = 0; i < configs->len; i++) {
			const char *config = g_ptr_array_index(configs, i);
			g_autoptr(GPtrArray) sel = vm_runs_select(runs, workload, config);
			g_autofree double *x = g_new(double, sel->len + 1);
			g_autofree double *y = g_new(double, sel->len + 1);
			struct vm_stats sx;
			struct vm_stats sy;

			for (guint r = 0; r < sel->len; r++) {
				const struct vm_run *run = g_ptr_array_index(sel, r);

				x[r] = run->derived[VM_DER_SLOWDOWN_PCT];
				y[r] = run->derived[VM_DER_MEMORY_SAVING_AVG_PCT];
			}
			sx = vm_stats_summarize(x, sel->len);
			sy = vm_stats_summarize(y, sel->len);
			if (sx.n == 0 || sy.n == 0)
				continue;
			if (points++ == 0)
				g_string_append_printf(dat, "%s# %s\n", blocks ? "\n\n" : "",
						       workload);
			g_string_append_printf(dat, "%.4f %.4f %.4f %.4f %.4f %.4f %s\n", sx.median,
					       sx.min, sx.max, sy.median, sy.min, sy.max, config);
		}
		if (points == 0)
			continue;
		g_string_append_printf(
			gp,
			"%s\"plots/" PLOT_SAVING ".dat\" index %u using 1:4:2:3:5:6 "
			"with xyerrorbars pt 7 ps 1.2 lc %u title \"%s\", \\\n"
			"\t\"\" index %u using 1:4:7 with labels left offset 0.8,0.6 "
			"tc lt %u notitle",
			blocks ? ", \\\n\t" : "", blocks, blocks + 1, workload, blocks, blocks + 1);
		blocks++;
	}
	g_string_append_c(gp, '\n');
	return blocks > 0;
}

/* A series file (t_s,rss_bytes) as "t_s rss_mib" lines onto @dat. */
static gboolean read_series(const char *path, GString *dat, GError **error)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents(path, &text, NULL, error))
		return FALSE;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char *l = g_strstrip(lines[i]);
		g_auto(GStrv) f = NULL;
		char *end_t = NULL;
		char *end_r = NULL;
		double t;
		double rss;

		if (i == 0) {
			if (strcmp(l, "t_s,rss_bytes") != 0) {
				g_set_error(error, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID,
					    "line 1: header '%s', expected 't_s,rss_bytes'", l);
				return FALSE;
			}
			continue;
		}
		if (!*l)
			continue;
		f = g_strsplit(l, ",", -1);
		if (g_strv_length(f) != 2) {
			g_set_error(error, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID,
				    "line %u: %u fields, expected 2", i + 1, g_strv_length(f));
			return FALSE;
		}
		t = g_ascii_strtod(f[0], &end_t);
		rss = g_ascii_strtod(f[1], &end_r);
		if (!*f[0] || !*f[1] || *end_t || *end_r || !isfinite(t) || !isfinite(rss)) {
			g_set_error(error, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID,
				    "line %u: '%s' is not two numbers", i + 1, l);
			return FALSE;
		}
		g_string_append_printf(dat, "%.3f %.3f\n", t, rss / MIB);
	}
	return TRUE;
}

/* The series file of @config's first run (the lowest run number) that has
 * one; NULL when none has. */
static char *series_path(const struct vm_runs *runs, const char *out_dir, const char *workload,
			 const char *config)
{
	g_autoptr(GPtrArray) sel = vm_runs_select(runs, workload, config);
	char *best = NULL;
	double best_run = INFINITY;

	for (guint i = 0; i < sel->len; i++) {
		const struct vm_run *run = g_ptr_array_index(sel, i);
		g_autofree char *name = g_strdup_printf("run-%s.csv", run->fields[VM_COL_RUN]);
		g_autofree char *p =
			g_build_filename(out_dir, "series", workload, config, name, NULL);

		if (run->values[VM_COL_RUN] < best_run && g_file_test(p, G_FILE_TEST_IS_REGULAR)) {
			g_free(best);
			best = g_steal_pointer(&p);
			best_run = run->values[VM_COL_RUN];
		}
	}
	return best;
}

static bool has_series(const struct vm_runs *runs, const char *out_dir, const char *workload)
{
	g_autoptr(GPtrArray) configs = vm_runs_configs(runs, workload);

	for (guint i = 0; i < configs->len; i++) {
		g_autofree char *p =
			series_path(runs, out_dir, workload, g_ptr_array_index(configs, i));

		if (p)
			return true;
	}
	return false;
}

/* rss-over-time: one data block per config of @workload. FALSE when no
 * config has a readable series (each unreadable one gets a line). */
static bool rss_plot_files(const struct vm_runs *runs, const char *out_dir, const char *workload,
			   GString *dat, GString *gp, GPtrArray *lines)
{
	g_autoptr(GPtrArray) configs = vm_runs_configs(runs, workload);
	guint blocks = 0;

	g_string_append_printf(dat,
			       "# rss-over-time.png: workload %s, per config (one gnuplot index "
			       "each) the first run's series: t_s rss_mib\n",
			       workload);
	g_string_append_printf(gp,
			       "# vm-report: guest-RAM RSS over time. Redraw: cd OUT && gnuplot "
			       "plots/" PLOT_RSS ".gp\n%s"
			       "set output \"" PLOT_RSS ".png\"\n"
			       "set title \"Guest-RAM RSS of the QEMU process over time: %s, run 1 "
			       "of each config\"\n"
			       "set xlabel \"time since the run's start (s)\"\n"
			       "set ylabel \"guest-RAM RSS (MiB)\"\n"
			       "set yrange [0:*]\nset grid\nset key below height 1\n"
			       "plot ",
			       gnuplot_terminal, workload);
	for (guint i = 0; i < configs->len; i++) {
		const char *config = g_ptr_array_index(configs, i);
		g_autofree char *path = series_path(runs, out_dir, workload, config);
		g_autoptr(GString) block = g_string_new(NULL);
		g_autoptr(GError) error = NULL;

		if (!path)
			continue;
		if (!read_series(path, block, &error)) {
			g_ptr_array_add(lines,
					g_strdup_printf("%s left out of " PLOT_RSS ".png: %s", path,
							error->message));
			continue;
		}
		g_string_append_printf(dat, "%s# %s: %s\n%s", blocks ? "\n\n" : "", config,
				       strrchr(path, '/') + 1, block->str);
		g_string_append_printf(gp,
				       "%s\"plots/" PLOT_RSS ".dat\" index %u using 1:2 with lines "
				       "lw 2 title \"%s\"",
				       blocks ? ", \\\n\t" : "", blocks, config);
		blocks++;
	}
	g_string_append_c(gp, '\n');
	return blocks > 0;
}

/* Data, script and PNG of one plot; FALSE when a file cannot be written. */
static gboolean draw(const struct vm_report_options *o, const char *gnuplot, const char *name,
		     const GString *dat, const GString *gp, bool *drawn, GPtrArray *lines,
		     GError **error)
{
	g_autofree char *dat_name = g_strdup_printf("%s.dat", name);
	g_autofree char *gp_name = g_strdup_printf("%s.gp", name);
	g_autofree char *dat_path = g_build_filename(o->out_dir, "plots", dat_name, NULL);
	g_autofree char *gp_path = g_build_filename(o->out_dir, "plots", gp_name, NULL);

	if (!write_file(dat_path, dat->str, lines, error) ||
	    !write_file(gp_path, gp->str, lines, error))
		return FALSE;
	*drawn = gnuplot && run_gnuplot(gnuplot, o->out_dir, name, lines);
	return TRUE;
}

static gboolean draw_plots(const struct vm_report_options *o, const struct vm_runs *runs,
			   struct vm_report_plots *plots, GPtrArray *lines, GError **error)
{
	g_autofree char *plot_dir = g_build_filename(o->out_dir, "plots", NULL);
	g_autofree char *gnuplot = g_find_program_in_path(o->gnuplot ? o->gnuplot : "gnuplot");
	g_autoptr(GString) dat = g_string_new(NULL);
	g_autoptr(GString) gp = g_string_new(NULL);
	const char *rss_workload = o->rss_workload;
	const char *const pngs[] = { PLOT_SAVING ".png", PLOT_RSS ".png" };
	bool drawn = false;

	if (!gnuplot)
		g_ptr_array_add(lines,
				g_strdup_printf("plots not drawn: %s not found (install "
						"gnuplot-nox); their data and scripts go "
						"to %s",
						o->gnuplot ? o->gnuplot : "gnuplot", plot_dir));
	/* A PNG of an earlier report must not pass for this one's. */
	for (guint i = 0; i < G_N_ELEMENTS(pngs); i++) {
		g_autofree char *png = g_build_filename(o->out_dir, pngs[i], NULL);

		g_unlink(png);
	}
	if (g_mkdir_with_parents(plot_dir, 0755) != 0) {
		int e = errno;

		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", plot_dir,
			    g_strerror(e));
		return FALSE;
	}
	if (!saving_plot_files(runs, dat, gp)) {
		g_ptr_array_add(lines, g_strdup(PLOT_SAVING ".png not drawn: no config has both "
							    "a memory saving and a slowdown (no "
							    "`none` baseline?)"));
	} else {
		if (!draw(o, gnuplot, PLOT_SAVING, dat, gp, &drawn, lines, error))
			return FALSE;
		plots->saving_vs_slowdown = drawn;
	}

	for (guint w = 0; !rss_workload && w < runs->workloads->len; w++)
		if (has_series(runs, o->out_dir, g_ptr_array_index(runs->workloads, w)))
			rss_workload = g_ptr_array_index(runs->workloads, w);
	g_string_truncate(dat, 0);
	g_string_truncate(gp, 0);
	if (!rss_workload) {
		g_ptr_array_add(lines, g_strdup_printf(PLOT_RSS ".png not drawn: no series files "
								"(%s/series/WORKLOAD/CONFIG/"
								"run-N.csv)",
						       o->out_dir));
	} else if (!rss_plot_files(runs, o->out_dir, rss_workload, dat, gp, lines)) {
		g_ptr_array_add(lines, g_strdup_printf(PLOT_RSS ".png not drawn: no readable "
								"series file of workload %s",
						       rss_workload));
	} else {
		if (!draw(o, gnuplot, PLOT_RSS, dat, gp, &drawn, lines, error))
			return FALSE;
		plots->rss_workload = drawn ? rss_workload : NULL;
	}
	return TRUE;
}

/* ---- everything ---- */

static bool has_workload(const struct vm_runs *runs, const char *workload)
{
	for (guint i = 0; i < runs->workloads->len; i++)
		if (strcmp(g_ptr_array_index(runs->workloads, i), workload) == 0)
			return true;
	return false;
}

static gboolean rename_file(const char *from, const char *to, GError **error)
{
	if (g_rename(from, to) != 0) {
		int e = errno;

		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e),
			    "cannot rename %s to %s: %s", from, to, g_strerror(e));
		return FALSE;
	}
	return TRUE;
}

gboolean vm_report_write(const struct vm_report_options *o, GPtrArray *lines, GError **error)
{
	g_autofree char *runs_path = o->runs_path ? g_strdup(o->runs_path) :
						    g_build_filename(o->out_dir, "runs.csv", NULL);
	g_autofree char *results = g_build_filename(o->out_dir, "results.csv", NULL);
	g_autofree char *report = g_build_filename(o->out_dir, "report.md", NULL);
	g_autofree char *results_tmp = g_strconcat(results, ".tmp", NULL);
	g_autofree char *report_tmp = g_strconcat(report, ".tmp", NULL);
	g_autoptr(vm_runs) runs = vm_runs_load(runs_path, error);
	g_autofree char *csv = NULL;
	g_autofree char *md = NULL;
	struct vm_report_plots plots = { 0 };

	if (!runs)
		return FALSE;
	if (o->rss_workload && !has_workload(runs, o->rss_workload)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--rss-workload %s: no such workload in %s", o->rss_workload,
			    runs_path);
		return FALSE;
	}
	if (!g_file_test(o->out_dir, G_FILE_TEST_IS_DIR)) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s: no such folder",
			    o->out_dir);
		return FALSE;
	}
	if (o->plots) {
		if (!draw_plots(o, runs, &plots, lines, error))
			return FALSE;
	} else {
		g_ptr_array_add(lines, g_strdup("plots not drawn: --no-plots"));
	}
	csv = vm_runs_results_csv(runs);
	md = vm_report_markdown(runs, &plots);
	if (!g_file_set_contents(results_tmp, csv, -1, error) ||
	    !g_file_set_contents(report_tmp, md, -1, error)) {
		g_unlink(results_tmp);
		return FALSE;
	}
	if (!rename_file(results_tmp, results, error) || !rename_file(report_tmp, report, error))
		return FALSE;
	g_ptr_array_add(lines, g_strdup_printf("wrote %s", results));
	g_ptr_array_add(lines, g_strdup_printf("wrote %s", report));
	return TRUE;
}
