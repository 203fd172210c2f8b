/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * monitor-accuracy: how well the region engine finds the cold memory of a
 * simulated guest, against the simulator's truth and the page-granular
 * baseline.
 *
 * For each built-in pattern, at the end of every phase: the cold set found is
 * the regions with 0 accesses in the last window and an age of at least
 * --cold-s; the truth is the pages not accessed during the last --cold-s
 * seconds. Precision and recall are in bytes. hottest_found: the single
 * hottest page lies in a region with the highest nr_accesses of the snapshot.
 * The table shows every phase end; the CSV has one row per pattern and
 * tracker with precision and recall over the bytes of all phase ends together
 * (hottest_found: 1 when found at every phase end). A hottest page that ties
 * with others (a uniformly hot set) counts as found when a hottest region
 * holds any page of the top rate.
 */
#include <math.h>
#include <stdlib.h>

#include "bench-util.h"
#include "monitor.h"
#include "page-tracker.h"
#include "sim.h"

/* The patterns with goals (precision >= 0.95, recall >= 0.90). */
#define DEFAULT_PATTERNS "clustered,scattered,zipf,shifting,scan"

struct options {
	double size_gib;
	double phase_s;
	double cold_s;
	gint64 seed;
	double baseline_interval_s;
	gboolean no_baseline;
	char *patterns;
	char *csv;
};

/**
 * struct score - accuracy at one phase end.
 * @found:	bytes the tracker calls cold.
 * @found_true:	of those, bytes that are cold in truth.
 * @truth:	bytes cold in truth.
 */
struct score {
	uint64_t found;
	uint64_t found_true;
	uint64_t truth;
	bool hottest_found;
};

static double precision(const struct score *s)
{
	return s->found ? (double)s->found_true / (double)s->found : 1.0;
}

static double recall(const struct score *s)
{
	return s->truth ? (double)s->found_true / (double)s->truth : 1.0;
}

/**
 * struct run - one pattern being measured by the engine.
 * @phase_ends:	scores at each phase end, in order (struct score).
 */
struct run {
	const struct options *opt;
	const struct vr_sim *sim;
	uint64_t cold_us;
	GArray *phase_ends;
};

static uint64_t truth_cold(const struct vr_sim *sim, uint64_t start, uint64_t end, uint64_t t_us,
			   uint64_t cold_us)
{
	return (end - start) - vr_sim_accessed_bytes(sim, start, end, t_us - cold_us, t_us);
}

/* Does region @r hold a page accessed @hz times a second (the top rate)? */
static bool holds_rate(const struct vr_sim *sim, const struct vr_region *r, double hz,
		       uint64_t t_us)
{
	for (uint64_t addr = r->start; hz > 0 && addr < r->end; addr += VR_PAGE_SIZE)
		if (vr_sim_page_hz(sim, addr, t_us) >= hz)
			return true;
	return false;
}

/* Listener: scores the snapshot taken at a phase end. */
static void on_aggregate(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	struct run *run = user_data;
	uint64_t aggr_us = vr_ctx_attrs(ctx)->aggr_interval_us;
	uint64_t phase_start, hottest;
	double top_hz;
	struct score score = { 0 };
	uint32_t max_nr = 0;

	vr_sim_phase_at(run->sim, now_us, NULL, &phase_start);
	if (now_us != phase_start || now_us < run->cold_us)
		return;
	hottest = vr_sim_hottest_page(run->sim, now_us - 1);
	top_hz = hottest == G_MAXUINT64 ? 0 : vr_sim_page_hz(run->sim, hottest, now_us - 1);
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < vr_target_nr_regions(t); j++)
			max_nr = MAX(max_nr, vr_target_region(t, j)->nr_accesses);
	}
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < vr_target_nr_regions(t); j++) {
			const struct vr_region *r = vr_target_region(t, j);

			if (max_nr > 0 && r->nr_accesses == max_nr && !score.hottest_found)
				score.hottest_found = holds_rate(run->sim, r, top_hz, now_us - 1);
			if (r->nr_accesses || (uint64_t)r->age * aggr_us < run->cold_us)
				continue;
			score.found += vr_region_size(r);
			score.found_true +=
				truth_cold(run->sim, r->start, r->end, now_us, run->cold_us);
		}
	}
	score.truth = truth_cold(run->sim, 0, vr_sim_size(run->sim), now_us, run->cold_us);
	g_array_append_val(run->phase_ends, score);
}

static struct vr_sim *make_sim(const struct options *opt, const char *pattern, GError **error)
{
	uint64_t size = (uint64_t)(opt->size_gib * GIB) / VR_PAGE_SIZE * VR_PAGE_SIZE;
	g_autoptr(vr_sim) sim = vr_sim_new(size, (uint64_t)opt->seed, error);

	if (!sim || !vr_sim_load_builtin(sim, pattern, (uint64_t)(opt->phase_s * 1e6), error))
		return NULL;
	return g_steal_pointer(&sim);
}

static GArray *run_engine(const struct options *opt, const char *pattern, GError **error)
{
	g_autoptr(vr_sim) sim = make_sim(opt, pattern, error);
	g_autoptr(vr_ctx) ctx = NULL;
	g_autoptr(GArray) ends = g_array_new(FALSE, FALSE, sizeof(struct score));
	struct run run = { .opt = opt,
			   .cold_us = (uint64_t)(opt->cold_s * 1e6),
			   .phase_ends = ends };
	struct vr_range ram;
	uint64_t end_us;

	if (!sim)
		return NULL;
	run.sim = sim;
	ram = (struct vr_range){ 0, vr_sim_size(sim) };
	ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(sim), (uint64_t)opt->seed);
	if (!vr_ctx_add_target(ctx, 0, &ram, 1, error))
		return NULL;
	vr_ctx_add_listener(ctx, on_aggregate, &run);
	if (!vr_ctx_start(ctx, 0, error))
		return NULL;
	end_us = vr_sim_script_duration_us(sim);
	while (vr_ctx_next_tick_us(ctx) <= end_us)
		if (!vr_ctx_tick(ctx, vr_ctx_next_tick_us(ctx), error))
			return NULL;
	return g_steal_pointer(&ends);
}

static GArray *run_baseline(const struct options *opt, const char *pattern, GError **error)
{
	g_autoptr(vr_sim) sim = make_sim(opt, pattern, error);
	g_autoptr(vr_page_tracker) pt = NULL;
	g_autoptr(GArray) ends = g_array_new(FALSE, FALSE, sizeof(struct score));
	g_autofree struct vr_sim_access *sa = NULL;
	uint64_t interval_us = (uint64_t)(opt->baseline_interval_s * 1e6);
	uint64_t cold_us = (uint64_t)(opt->cold_s * 1e6);
	uint64_t phase_us = (uint64_t)(opt->phase_s * 1e6);
	struct vr_range ram;

	if (!sim)
		return NULL;
	ram = (struct vr_range){ 0, vr_sim_size(sim) };
	sa = vr_sim_access_new(sim);
	pt = vr_page_tracker_new(&vr_sim_access_ops, sa, &ram, 1, interval_us, error);
	if (!pt)
		return NULL;
	vr_page_tracker_start(pt, 0);
	for (uint64_t t = interval_us; t <= vr_sim_script_duration_us(sim); t += interval_us) {
		struct score score = { 0 };
		uint64_t hottest;

		vr_page_tracker_scan(pt, t);
		if (t % phase_us)
			continue;
		/* every page is its own region: the idle ones are the cold set */
		g_autoptr(GArray) idle = vr_page_tracker_idle_ranges(pt, cold_us);

		for (guint i = 0; i < idle->len; i++) {
			const struct vr_range *r = &g_array_index(idle, struct vr_range, i);

			score.found += r->end - r->start;
			score.found_true += truth_cold(sim, r->start, r->end, t, cold_us);
		}
		score.truth = truth_cold(sim, 0, ram.end, t, cold_us);
		/* the baseline ranks pages only by "accessed in the last scan" */
		hottest = vr_sim_hottest_page(sim, t - 1);
		score.hottest_found = hottest != G_MAXUINT64 &&
				      vr_page_tracker_idle_bytes(pt, hottest,
								 hottest + VR_PAGE_SIZE,
								 interval_us) == 0;
		g_array_append_val(ends, score);
	}
	return g_steal_pointer(&ends);
}

static void report(FILE *csv, const char *pattern, const char *tracker, const GArray *ends)
{
	struct score all = { .hottest_found = ends->len > 0 };

	for (guint i = 0; i < ends->len; i++) {
		const struct score *s = &g_array_index(ends, struct score, i);

		g_print("%-10s %-13s %5u %9.2f %9.2f %9.2f %9.4f %9.4f %s\n", pattern, tracker,
			i + 1, (double)s->found / GIB, (double)s->found_true / GIB,
			(double)s->truth / GIB, precision(s), recall(s),
			s->hottest_found ? "yes" : "no");
		all.found += s->found;
		all.found_true += s->found_true;
		all.truth += s->truth;
		all.hottest_found = all.hottest_found && s->hottest_found;
	}
	g_print("%-10s %-13s %5s %9.2f %9.2f %9.2f %9.4f %9.4f %s\n", pattern, tracker, "all",
		(double)all.found / GIB, (double)all.found_true / GIB, (double)all.truth / GIB,
		precision(&all), recall(&all), all.hottest_found ? "yes" : "no");
	if (csv)
		fprintf(csv, "%s,%s,%.4f,%.4f,%d\n", pattern, tracker, precision(&all),
			recall(&all), all.hottest_found);
}

int main(int argc, char **argv)
{
	struct options opt = {
		.size_gib = 16,
		.phase_s = 30,
		.cold_s = 5,
		.seed = 1,
		.baseline_interval_s = 1,
	};
	GOptionEntry entries[] = {
		{ "size-gib", 0, 0, G_OPTION_ARG_DOUBLE, &opt.size_gib, "Guest size (default 16)",
		  "GIB" },
		{ "phase-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt.phase_s, "Phase length (default 30)",
		  "S" },
		{ "cold-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt.cold_s,
		  "Cold after this idle time (default 5)", "S" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &opt.seed, "Seed (default 1)", "N" },
		{ "baseline-interval-s", 0, 0, G_OPTION_ARG_DOUBLE, &opt.baseline_interval_s,
		  "Baseline scan interval (default 1)", "S" },
		{ "no-baseline", 0, 0, G_OPTION_ARG_NONE, &opt.no_baseline, "Skip the baseline",
		  NULL },
		{ "patterns", 0, 0, G_OPTION_ARG_STRING, &opt.patterns,
		  "Built-in scripts to run, comma-separated (default " DEFAULT_PATTERNS ")",
		  "LIST" },
		{ "csv", 0, 0, G_OPTION_ARG_FILENAME, &opt.csv, "Write the CSV here", "FILE" },
		{ NULL },
	};
	g_autoptr(GOptionContext) octx = g_option_context_new("- cold-set accuracy of the monitor");
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) patterns = NULL;
	FILE *csv = NULL;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("monitor-accuracy: %s\n", error->message);
		return 2;
	}
	if (!(opt.size_gib > 0) || !(opt.phase_s >= opt.cold_s) || !(opt.cold_s > 0) ||
	    !(opt.baseline_interval_s > 0) ||
	    fmod(opt.phase_s * 1e6, opt.baseline_interval_s * 1e6) != 0) {
		g_printerr("monitor-accuracy: need --size-gib > 0, --phase-s >= --cold-s > 0 and a "
			   "--baseline-interval-s that divides --phase-s\n");
		return 2;
	}
	patterns = g_strsplit(opt.patterns ? opt.patterns : DEFAULT_PATTERNS, ",", -1);
	for (guint i = 0; patterns[i]; i++) {
		if (!g_strv_contains(vr_sim_builtin_names(), patterns[i])) {
			g_printerr("monitor-accuracy: --patterns: unknown built-in script '%s'\n",
				   patterns[i]);
			return 2;
		}
	}
	if (opt.csv) {
		csv = bench_csv_open(opt.csv, "pattern,tracker,precision,recall,hottest_found",
				     &error);
		if (!csv) {
			g_printerr("monitor-accuracy: %s\n", error->message);
			return 1;
		}
	}
	g_print("monitor-accuracy: %.0f GiB simulated guest, phases of %.0f s, cold = idle >= %.0f s, "
		"seed %" G_GINT64_FORMAT "\n",
		opt.size_gib, opt.phase_s, opt.cold_s, opt.seed);
	g_print("engine: sample 5 ms, aggr 100 ms, regions 10..1000; page-baseline: every page every "
		"%.1f s\n\n",
		opt.baseline_interval_s);
	g_print("%-10s %-13s %5s %9s %9s %9s %9s %9s %s\n", "pattern", "tracker", "phase",
		"found_GiB", "right_GiB", "truth_GiB", "precision", "recall", "hottest");
	for (guint i = 0; patterns[i]; i++) {
		g_autoptr(GArray) engine = run_engine(&opt, patterns[i], &error);

		if (!engine) {
			g_printerr("monitor-accuracy: %s: %s\n", patterns[i], error->message);
			return 1;
		}
		report(csv, patterns[i], "engine", engine);
		if (!opt.no_baseline) {
			g_autoptr(GArray) base = run_baseline(&opt, patterns[i], &error);

			if (!base) {
				g_printerr("monitor-accuracy: %s: %s\n", patterns[i],
					   error->message);
				return 1;
			}
			report(csv, patterns[i], "page-baseline", base);
		}
	}
	if (csv && fclose(csv) != 0) {
		g_printerr("monitor-accuracy: writing %s failed\n", opt.csv);
		return 1;
	}
	g_free(opt.csv);
	g_free(opt.patterns);
	return 0;
}
