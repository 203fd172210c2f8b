/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * monitor-scale: CPU cost of monitoring per simulated second, region engine
 * against the page-granular baseline, for simulated guests of growing size.
 *
 * cpu_fraction is CPU seconds (tracker plus access source) per simulated
 * second. The engine runs --engine-s simulated seconds of the "scattered"
 * pattern at every size, with 10, 100 and 1000 as min_nr_regions. The baseline scans every page every sample
 * interval; where a whole simulated second does not fit in --baseline-cpu-s
 * of CPU it checks as many pages as fit and extrapolates from the cost per
 * page (extrapolated = 1).
 */
#include <math.h>

#include "bench-util.h"
#include "monitor.h"
#include "page-tracker.h"
#include "sim.h"

#define US_PER_S ((uint64_t)1000000)

static const double sizes_gib[] = { 1, 16, 256, 1024 };

/* The engine runs with max_nr_regions 1000 and each of these floors: 10 is
 * the default (the pattern decides the count), 1000 forces the most regions. */
static const uint32_t min_nr_regions[] = { 10, 100, 1000 };

struct options {
	double engine_s;
	double baseline_cpu_s;
	gint64 seed;
	char *csv;
};

struct result {
	double cpu_fraction;
	double regions; /* mean region count at aggregations; pages for the baseline */
	bool extrapolated;
};

static void count_regions(const struct vr_ctx *ctx, uint64_t now_us G_GNUC_UNUSED, void *user_data)
{
	double *acc = user_data;

	acc[0] += vr_ctx_nr_regions(ctx);
	acc[1] += 1;
}

static struct vr_sim *make_sim(double gib, gint64 seed, GError **error)
{
	g_autoptr(vr_sim) sim = vr_sim_new((uint64_t)(gib * GIB), (uint64_t)seed, error);

	if (!sim || !vr_sim_load_builtin(sim, "scattered", 30 * US_PER_S, error))
		return NULL;
	return g_steal_pointer(&sim);
}

static gboolean run_engine(const struct options *opt, double gib, uint32_t min_regions,
			   struct result *res, GError **error)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_sim) sim = make_sim(gib, opt->seed, error);
	g_autoptr(vr_ctx) ctx = NULL;
	uint64_t end_us = (uint64_t)(opt->engine_s * US_PER_S);
	double regions[2] = { 0, 0 };
	struct vr_range ram;
	double cpu;

	if (!sim)
		return FALSE;
	ram = (struct vr_range){ 0, vr_sim_size(sim) };
	ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(sim), (uint64_t)opt->seed);
	attrs.min_nr_regions = min_regions;
	if (!vr_ctx_set_attrs(ctx, &attrs, error) || !vr_ctx_add_target(ctx, 0, &ram, 1, error))
		return FALSE;
	vr_ctx_add_listener(ctx, count_regions, regions);
	cpu = bench_cpu_seconds();
	if (!vr_ctx_start(ctx, 0, error))
		return FALSE;
	while (vr_ctx_next_tick_us(ctx) <= end_us)
		if (!vr_ctx_tick(ctx, vr_ctx_next_tick_us(ctx), error))
			return FALSE;
	cpu = bench_cpu_seconds() - cpu;
	res->cpu_fraction = cpu / opt->engine_s;
	res->regions = regions[1] ? regions[0] / regions[1] : 0;
	res->extrapolated = false;
	return TRUE;
}

static gboolean run_baseline(const struct options *opt, double gib, struct result *res,
			     GError **error)
{
	g_autoptr(vr_sim) sim = make_sim(gib, opt->seed, error);
	g_autoptr(vr_page_tracker) pt = NULL;
	g_autofree struct vr_sim_access *sa = NULL;
	uint64_t interval_us = VR_MONITOR_ATTRS_DEFAULT.sample_interval_us;
	uint64_t scans_per_s = US_PER_S / interval_us;
	uint64_t pages_per_s, checked = 0;
	struct vr_range ram;
	double cpu, spent = 0;

	if (!sim)
		return FALSE;
	ram = (struct vr_range){ 0, vr_sim_size(sim) };
	sa = vr_sim_access_new(sim);
	pt = vr_page_tracker_new(&vr_sim_access_ops, sa, &ram, 1, interval_us, error);
	if (!pt)
		return FALSE;
	pages_per_s = vr_page_tracker_nr_pages(pt) * scans_per_s;
	vr_page_tracker_start(pt, 0);
	/* one sample interval after another, in chunks, until a simulated
	 * second is done or the CPU budget is spent */
	cpu = bench_cpu_seconds();
	for (uint64_t t = interval_us; checked < pages_per_s && spent < opt->baseline_cpu_s;) {
		checked += vr_page_tracker_scan_part(pt, t, 1 << 20);
		if (checked % vr_page_tracker_nr_pages(pt) == 0)
			t += interval_us;
		spent = bench_cpu_seconds() - cpu;
	}
	res->cpu_fraction = spent / (double)checked * (double)pages_per_s;
	res->regions = (double)vr_page_tracker_nr_pages(pt);
	res->extrapolated = checked < pages_per_s;
	return TRUE;
}

static void print_row(FILE *csv, const char *tracker, double gib, const struct result *r)
{
	g_print("%-13s %8.0f %12.6f %14.0f %12s\n", tracker, gib, r->cpu_fraction, r->regions,
		r->extrapolated ? "yes" : "no");
	if (csv)
		fprintf(csv, "%s,%.0f,%.8f,%.0f,%d\n", tracker, gib, r->cpu_fraction, r->regions,
			r->extrapolated);
}

int main(int argc, char **argv)
{
	struct options opt = { .engine_s = 60, .baseline_cpu_s = 5, .seed = 1 };
	GOptionEntry entries[] = {
		{ "engine-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt.engine_s,
		  "Simulated seconds of engine monitoring per size (default 60)", "S" },
		{ "baseline-cpu-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt.baseline_cpu_s,
		  "CPU budget of the baseline per size before extrapolating (default 5)", "S" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &opt.seed, "Seed (default 1)", "N" },
		{ "csv", 0, 0, G_OPTION_ARG_FILENAME, &opt.csv, "Write the CSV here", "FILE" },
		{ NULL },
	};
	g_autoptr(GOptionContext) octx = g_option_context_new("- CPU cost of monitoring");
	g_autoptr(GError) error = NULL;
	struct result engine[G_N_ELEMENTS(sizes_gib)][G_N_ELEMENTS(min_nr_regions)];
	struct result baseline[G_N_ELEMENTS(sizes_gib)];
	FILE *csv = NULL;
	double max_engine = 0, worst_growth = 0;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("monitor-scale: %s\n", error->message);
		return 2;
	}
	if (!(opt.engine_s >= 1) || !(opt.baseline_cpu_s > 0)) {
		g_printerr("monitor-scale: need --engine-s >= 1 and --baseline-cpu-s > 0\n");
		return 2;
	}
	if (opt.csv) {
		csv = bench_csv_open(opt.csv, "tracker,mem_gib,cpu_fraction,regions,extrapolated",
				     &error);
		if (!csv) {
			g_printerr("monitor-scale: %s\n", error->message);
			return 1;
		}
	}
	g_print("monitor-scale: 'scattered' pattern, sample 5 ms, aggr 100 ms, regions 10..1000, "
		"seed %" G_GINT64_FORMAT "\n",
		opt.seed);
	g_print("cpu_fraction = CPU seconds (tracker + access source) per simulated second\n\n");
	g_print("%-13s %8s %12s %14s %12s\n", "tracker", "mem_gib", "cpu_fraction", "regions/pages",
		"extrapolated");
	for (guint i = 0; i < G_N_ELEMENTS(sizes_gib); i++) {
		for (guint j = 0; j < G_N_ELEMENTS(min_nr_regions); j++) {
			if (!run_engine(&opt, sizes_gib[i], min_nr_regions[j], &engine[i][j],
					&error)) {
				g_printerr("monitor-scale: %.0f GiB: %s\n", sizes_gib[i],
					   error->message);
				return 1;
			}
			print_row(csv, "engine", sizes_gib[i], &engine[i][j]);
			max_engine = MAX(max_engine, engine[i][j].cpu_fraction);
		}
		if (!run_baseline(&opt, sizes_gib[i], &baseline[i], &error)) {
			g_printerr("monitor-scale: %.0f GiB: %s\n", sizes_gib[i], error->message);
			return 1;
		}
		print_row(csv, "page-baseline", sizes_gib[i], &baseline[i]);
	}
	for (guint j = 0; j < G_N_ELEMENTS(min_nr_regions); j++)
		worst_growth =
			MAX(worst_growth, engine[3][j].cpu_fraction / engine[0][j].cpu_fraction);
	g_print("\ngoals:\n");
	g_print("  engine at 1 TiB / engine at 1 GiB = %.3f with the default regions, %.3f at "
		"worst (goal <= 1.2)\n",
		engine[3][0].cpu_fraction / engine[0][0].cpu_fraction, worst_growth);
	g_print("  engine, highest cpu_fraction = %.4f%% of one CPU (goal < 1%%)\n",
		max_engine * 100);
	g_print("  baseline / engine at 16 GiB = %.0fx with the default regions, %.0fx with 1000 "
		"(goal >= 100x)\n",
		baseline[1].cpu_fraction / engine[1][0].cpu_fraction,
		baseline[1].cpu_fraction / engine[1][2].cpu_fraction);
	if (csv && fclose(csv) != 0) {
		g_printerr("monitor-scale: writing %s failed\n", opt.csv);
		return 1;
	}
	g_free(opt.csv);
	return 0;
}
