/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the nested-VM benchmark's report (bench/vm/report): the
 * statistics (median, min, max), the derived columns of results.csv against
 * hand-computed values (tests/data/bench-vm/derived.csv), the exact report.md
 * of a small input (report-small.csv -> report-small.md), workloads without a
 * `none` baseline, every class of invalid runs.csv (the message names the
 * line and the column), and vm_report_write() in a temporary folder, with
 * and without gnuplot.
 *
 * The hand computation of derived.csv: w1's baseline is the median of its
 * three `none` runs (rss_avg 1.1e6, rss_end 9e5, throughput 100, p99 50);
 * w3's of two (rss_avg (2000 + 4000) / 2 = 3000, throughput 110, p99 0 so no
 * p99 increase); w2 has none.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "test-fake-tree.h"
#include "test-messages.h"
#include "vm-report.h"
#include "vm-runs.h"
#include "vm-stats.h"

#define DATA_DIR VR_TEST_DATA_DIR "/bench-vm"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static char *read_data(const char *name)
{
	g_autofree char *path = g_build_filename(DATA_DIR, name, NULL);
	g_autoptr(GError) err = NULL;
	char *text = NULL;

	cr_assert(g_file_get_contents(path, &text, NULL, &err), "cannot read %s: %s", path,
		  err ? err->message : "?");
	return text;
}

static struct vm_runs *load_data(const char *name)
{
	g_autofree char *path = g_build_filename(DATA_DIR, name, NULL);
	g_autoptr(GError) err = NULL;
	struct vm_runs *runs = vm_runs_load(path, &err);

	cr_assert_not_null(runs, "%s should be valid: %s", name, err ? err->message : "?");
	return runs;
}

static const struct vm_run *find_run(const struct vm_runs *runs, const char *workload,
				     const char *config, int n)
{
	for (guint i = 0; i < runs->runs->len; i++) {
		const struct vm_run *r = g_ptr_array_index(runs->runs, i);

		if (!strcmp(r->fields[VM_COL_WORKLOAD], workload) &&
		    !strcmp(r->fields[VM_COL_CONFIG], config) && r->values[VM_COL_RUN] == n)
			return r;
	}
	cr_assert_fail("no run %d of %s/%s", n, workload, config);
	return NULL;
}

/* Equal within 1e-9, or both NAN (empty). */
static void assert_value(double got, double want, const char *what)
{
	if (isnan(want))
		cr_assert(isnan(got), "%s: expected empty, got %.12g", what, got);
	else
		cr_assert(fabs(got - want) < 1e-9, "%s: expected %.12g, got %.12g", what, want,
			  got);
}

/* ------------------------------------------------------------------------- */
/* Statistics                                                                */
/* ------------------------------------------------------------------------- */

Test(vm_stats, odd_count_is_the_middle_value)
{
	const double v[] = { 3, 1, 2 };

	cr_assert_eq(vm_stats_median(v, 3), 2);
	cr_assert_eq(vm_stats_min(v, 3), 1);
	cr_assert_eq(vm_stats_max(v, 3), 3);
}

Test(vm_stats, even_count_is_the_mean_of_the_two_middle_ones)
{
	const double v[] = { 4, 1, 3, 2 };
	const double w[] = { 10, 20 };

	cr_assert_eq(vm_stats_median(v, 4), 2.5, "median of 1..4: got %g", vm_stats_median(v, 4));
	cr_assert_eq(vm_stats_median(w, 2), 15);
}

Test(vm_stats, one_value)
{
	const double v[] = { 7.5 };
	struct vm_stats st = vm_stats_summarize(v, 1);

	cr_assert_eq(st.n, 1);
	cr_assert_eq(st.median, 7.5);
	cr_assert_eq(st.min, 7.5);
	cr_assert_eq(st.max, 7.5);
}

Test(vm_stats, unsorted_and_negative_values, .description = "the input is not modified")
{
	double v[] = { 9, -3, 5, 0, -1 };
	const double copy[] = { 9, -3, 5, 0, -1 };

	cr_assert_eq(vm_stats_median(v, 5), 0);
	cr_assert_eq(vm_stats_min(v, 5), -3);
	cr_assert_eq(vm_stats_max(v, 5), 9);
	cr_assert_arr_eq(v, copy, sizeof(v), "vm_stats_median() must sort a copy");
}

Test(vm_stats, empty_values_are_ignored)
{
	const double odd[] = { NAN, 5, NAN, 1, 3 };
	const double even[] = { 20, NAN, 10 };
	const double first_nan[] = { NAN, 8, 4 };
	struct vm_stats st = vm_stats_summarize(odd, 5);

	cr_assert_eq(st.n, 3);
	cr_assert_eq(st.median, 3, "median of 1, 3, 5 and two empty: got %g", st.median);
	cr_assert_eq(st.min, 1);
	cr_assert_eq(st.max, 5);
	cr_assert_eq(vm_stats_median(even, 3), 15, "median of 10, 20 and one empty: got %g",
		     vm_stats_median(even, 3));
	cr_assert_eq(vm_stats_min(first_nan, 3), 4);
	cr_assert_eq(vm_stats_max(first_nan, 3), 8);
}

Test(vm_stats, nothing_measured_is_nan)
{
	const double v[] = { NAN, NAN };
	struct vm_stats st = vm_stats_summarize(v, 2);

	cr_assert_eq(st.n, 0);
	cr_assert(isnan(st.median) && isnan(st.min) && isnan(st.max));
	cr_assert(isnan(vm_stats_median(NULL, 0)));
	cr_assert(isnan(vm_stats_min(NULL, 0)));
	cr_assert(isnan(vm_stats_max(NULL, 0)));
	cr_assert_eq(vm_stats_count(NULL, 0), 0);
}

/* ------------------------------------------------------------------------- */
/* Derived columns                                                           */
/* ------------------------------------------------------------------------- */

/* Expected derived columns of a run of derived.csv, in enum vm_derived order;
 * NAN: empty. */
struct derived_case {
	char workload[8];
	char config[24];
	int run;
	double want[VM_NR_DERIVED];
};

#define E NAN

static const struct derived_case derived_cases[] = {
	/* saving avg, saving end, slowdown, p99 +, cpu, return, refaults */
	{ "w1", "none", 1, { 100.0 / 11, 0, 0, 0, 0, E, 0 } },
	{ "w1", "none", 2, { -100.0 / 11, -100.0 / 9, -10, -20, 0, E, E } },
	{ "w1", "none", 3, { 0, 100.0 / 9, 10, 20, 0, E, E } },
	{ "w1", "vreclaim-agent", 1, { 50, 50, 5, 10, 5, 75, 60 } },
	/* net freed 0: no return efficiency; only pswpin measured: 5 */
	{ "w1", "vreclaim-agent", 2, { 40, 20, 20, 50, 1, E, 5 } },
	/* no window, no rss_end, no throughput, no p99; net freed < 0 */
	{ "w1", "vreclaim-agent", 3, { 0, E, E, E, E, E, E } },
	/* no `none` config: only the columns of the run itself */
	{ "w2", "vreclaim-agent", 1, { E, E, E, E, 5, E, E } },
	/* baseline of two runs; its p99 is 0: no increase */
	{ "w3", "none", 1, { 100.0 / 3, E, 100.0 / 11, E, E, E, E } },
	{ "w3", "memory-reclaim", 1, { 50, E, 10, E, E, E, E } },
};

ParameterizedTestParameters(vm_derived, against_hand_computed_values)
{
	return cr_make_param_array(struct derived_case, derived_cases, G_N_ELEMENTS(derived_cases));
}

ParameterizedTest(const struct derived_case *c, vm_derived, against_hand_computed_values)
{
	g_autoptr(vm_runs) runs = load_data("derived.csv");
	const struct vm_run *r = find_run(runs, c->workload, c->config, c->run);

	for (int d = 0; d < VM_NR_DERIVED; d++) {
		g_autofree char *what = g_strdup_printf("%s/%s run %d: %s", c->workload, c->config,
							c->run, vm_derived_names[d]);

		assert_value(r->derived[d], c->want[d], what);
	}
}

Test(vm_derived, baselines_are_medians)
{
	g_autoptr(vm_runs) runs = load_data("derived.csv");
	struct vm_baseline w1 = vm_runs_baseline(runs, "w1");
	struct vm_baseline w2 = vm_runs_baseline(runs, "w2");
	struct vm_baseline w3 = vm_runs_baseline(runs, "w3");

	cr_assert_eq(w1.nr_runs, 3);
	assert_value(w1.rss_avg_bytes, 1100000, "w1 rss_avg");
	assert_value(w1.rss_end_bytes, 900000, "w1 rss_end");
	assert_value(w1.throughput_ops_per_s, 100, "w1 throughput");
	assert_value(w1.latency_p99_us, 50, "w1 p99");
	cr_assert_eq(w2.nr_runs, 0);
	cr_assert(isnan(w2.rss_avg_bytes) && isnan(w2.throughput_ops_per_s));
	cr_assert_eq(w3.nr_runs, 2);
	assert_value(w3.rss_avg_bytes, 3000, "w3 rss_avg (even count)");
	assert_value(w3.throughput_ops_per_s, 110, "w3 throughput (even count)");
	cr_assert(isnan(w3.rss_end_bytes), "w3 has no rss_end");
}

Test(vm_derived, results_csv_keeps_every_field_and_appends_the_derived_ones)
{
	g_autoptr(vm_runs) runs = load_data("derived.csv");
	g_autofree char *input = read_data("derived.csv");
	g_autofree char *csv = vm_runs_results_csv(runs);
	g_auto(GStrv) in_lines = g_strsplit(input, "\n", -1);
	g_auto(GStrv) out_lines = g_strsplit(csv, "\n", -1);
	const char *tail[] = {
		",memory_saving_avg_pct,memory_saving_end_pct,slowdown_pct,p99_increase_pct,"
		"reclaimer_cpu_pct,return_efficiency_pct,refaults_pages",
		",9.09,0.00,0.00,0.00,0.00,,0",
		",-9.09,-11.11,-10.00,-20.00,0.00,,",
		",0.00,11.11,10.00,20.00,0.00,,",
		",50.00,50.00,5.00,10.00,5.00,75.00,60",
		",40.00,20.00,20.00,50.00,1.00,,5",
		",0.00,,,,,,",
		",,,,,5.00,,",
		",33.33,,9.09,,,,",
		",-33.33,,-9.09,,,,",
		",50.00,,10.00,,,,",
	};

	cr_assert_eq(g_strv_length(out_lines), g_strv_length(in_lines),
		     "one line per line of runs.csv:\n%s", csv);
	cr_assert_eq(g_strv_length(out_lines), G_N_ELEMENTS(tail) + 1, "and a final newline");
	for (guint i = 0; i < G_N_ELEMENTS(tail); i++) {
		g_autofree char *want = g_strconcat(in_lines[i], tail[i], NULL);

		cr_assert_str_eq(out_lines[i], want, "results.csv line %u:\n got %s\nwant %s",
				 i + 1, out_lines[i], want);
	}
}

Test(vm_derived, number_format_has_no_negative_zero)
{
	g_autofree char *a = vm_format_number(-0.001, 2);
	g_autofree char *b = vm_format_number(-0.006, 2);
	g_autofree char *c = vm_format_number(NAN, 2);
	g_autofree char *d = vm_format_number(1234.5, 0);

	cr_assert_str_eq(a, "0.00");
	cr_assert_str_eq(b, "-0.01");
	cr_assert_str_eq(c, "");
	cr_assert_str_eq(d, "1234", "round half to even: %s", d);
}

/* ------------------------------------------------------------------------- */
/* report.md                                                                 */
/* ------------------------------------------------------------------------- */

Test(vm_report, markdown_is_exactly_the_expected_file)
{
	g_autoptr(vm_runs) runs = load_data("report-small.csv");
	g_autofree char *want = read_data("report-small.md");
	g_autofree char *got = vm_report_markdown(runs, NULL);
	g_autofree char *again = vm_report_markdown(runs, NULL);

	cr_assert_str_eq(got, want,
			 "report.md differs from tests/data/bench-vm/report-small.md; got:\n%s",
			 got);
	cr_assert_str_eq(got, again, "the same input must give the same bytes");
}

Test(vm_report, markdown_links_the_plots_drawn)
{
	g_autoptr(vm_runs) runs = load_data("report-small.csv");
	struct vm_report_plots both = { true, "sqlite-oltp" };
	struct vm_report_plots rss_only = { false, "sqlite-oltp" };
	g_autofree char *with = vm_report_markdown(runs, &both);
	g_autofree char *one = vm_report_markdown(runs, &rss_only);
	g_autofree char *none = vm_report_markdown(runs, NULL);

	cr_assert(strstr(with, "## Plots\n"));
	cr_assert(strstr(with, "(saving-vs-slowdown.png)"));
	cr_assert(strstr(with, "sqlite-oltp, run 1 of each config](rss-over-time.png)"));
	cr_assert_null(strstr(one, "saving-vs-slowdown.png"));
	cr_assert(strstr(one, "(rss-over-time.png)"));
	cr_assert_null(strstr(none, "## Plots"));
	cr_assert_null(strstr(none, ".png"));
}

Test(vm_report, workload_without_baseline)
{
	g_autoptr(vm_runs) runs = load_data("derived.csv");
	g_autofree char *md = vm_report_markdown(runs, NULL);
	const char *w2 = strstr(md, "## w2\n");
	const char *w3 = strstr(md, "## w3\n");
	g_autofree char *section = NULL;

	cr_assert(w2 && w3 && w2 < w3, "a section per workload in first-seen order:\n%s", md);
	section = g_strndup(w2, (gsize)(w3 - w2));
	cr_assert(strstr(section, "| vreclaim-agent | 1 | - | - | - | - | 5.00% | - | - | - |\n"),
		  "comparative cells empty, the run's own CPU kept:\n%s", section);
	cr_assert(strstr(section, "No baseline run"), "%s", section);
	cr_assert_null(strstr(section, "Baseline:"));
	cr_assert(strstr(md, "Baseline: `none`, median of 3 runs: RSS avg 1.0 MiB, throughput "
			     "100.0 ops/s."),
		  "w1's note:\n%s", md);
}

/* ------------------------------------------------------------------------- */
/* Invalid runs.csv                                                          */
/* ------------------------------------------------------------------------- */

#define HEADER                                                                                     \
	"workload,config,run,accel,guest_mem_bytes,window_s,rss_start_bytes,rss_avg_bytes,"        \
	"rss_end_bytes,guest_reclaimed_bytes,zram_kept_bytes,guest_net_freed_bytes,"               \
	"host_returned_bytes,throughput_ops_per_s,latency_p99_us,agent_cpu_s,kdamond_cpu_s,"       \
	"baseline_cpu_s,vreclaimd_cpu_s,reclaimer_cpu_s,pswpin_pages,"                             \
	"workingset_refault_anon_pages,workingset_refault_file_pages,psi_some_us,psi_full_us,"     \
	"data_check\n"
#define ROW_FMT "w,none,%s,%s,1073741824,60,700,%s,600,,,,,%s,100,,,,,,,,,,,%s\n"

/**
 * struct bad_case - one invalid runs.csv.
 * @what:	the case.
 * @text:	the whole file.
 * @want:	';'-separated words the message must have (msg_has_all()).
 */
struct bad_case {
	char what[48];
	char text[1024];
	char want[96];
};

static struct bad_case bad_cases[16];

/* A file of the header and two rows; the second (line 3) gets @run, @accel,
 * @rss_avg, @tput and @check (the first row is valid). */
static void bad_rows(struct bad_case *c, const char *what, const char *run, const char *accel,
		     const char *rss_avg, const char *tput, const char *check, const char *want)
{
	g_autofree char *good = g_strdup_printf(ROW_FMT, "1", "tcg", "650", "100", "ok");
	g_autofree char *bad = g_strdup_printf(ROW_FMT, run, accel, rss_avg, tput, check);

	g_strlcpy(c->what, what, sizeof(c->what));
	g_snprintf(c->text, sizeof(c->text), HEADER "%s%s", good, bad);
	g_strlcpy(c->want, want, sizeof(c->want));
}

static void bad_text(struct bad_case *c, const char *what, const char *text, const char *want)
{
	g_strlcpy(c->what, what, sizeof(c->what));
	g_strlcpy(c->text, text, sizeof(c->text));
	g_strlcpy(c->want, want, sizeof(c->want));
}

ParameterizedTestParameters(vm_runs_invalid, names_line_and_column)
{
	g_autofree char *renamed = g_strdup(HEADER);
	g_autofree char *short_header = g_strdup(HEADER);
	g_autofree char *good = g_strdup_printf(ROW_FMT, "1", "tcg", "650", "100", "ok");
	g_autofree char *good2 = g_strdup_printf(ROW_FMT, "2", "tcg", "650", "100", "ok");
	g_autofree char *t = NULL;
	size_t n = 0;

	memcpy(strstr(renamed, ",run,") + 1, "ran", 3);
	*strstr(short_header, ",data_check") = '\0';
	strcat(short_header, "\n");

	t = g_strconcat(renamed, good, NULL);
	bad_text(&bad_cases[n++], "header: column renamed", t, "t.csv: line 1, column 3 (run)");
	g_free(t);
	t = g_strconcat(short_header, good, NULL);
	bad_text(&bad_cases[n++], "header: column missing", t, "line 1, column 26 (data_check)");
	bad_text(&bad_cases[n++], "empty file", "", "line 1;empty");
	g_free(t);
	t = g_strconcat(HEADER, good, "w,none,2,tcg\n", NULL);
	bad_text(&bad_cases[n++], "too few fields", t, "line 3, column 5;missing;4 fields");
	g_free(t);
	good2[strlen(good2) - 1] = '\0';
	t = g_strconcat(HEADER, good, good2, ",x\n", NULL);
	bad_text(&bad_cases[n++], "too many fields", t, "line 3, column 27;27 fields");
	g_free(t);
	bad_rows(&bad_cases[n++], "not a number", "2", "tcg", "650", "12x", "ok",
		 "line 3, column 14 (throughput_ops_per_s);'12x' is not a number");
	bad_rows(&bad_cases[n++], "not finite", "2", "tcg", "inf", "100", "ok",
		 "line 3, column 8 (rss_avg_bytes);not a number");
	bad_rows(&bad_cases[n++], "leading space", "2", "tcg", " 5", "100", "ok",
		 "line 3, column 8 (rss_avg_bytes)");
	bad_rows(&bad_cases[n++], "data check failed", "2", "tcg", "650", "100", "FAILED",
		 "line 3, column 26 (data_check);'FAILED'");
	bad_rows(&bad_cases[n++], "data check empty", "2", "tcg", "650", "100", "",
		 "line 3, column 26 (data_check)");
	bad_rows(&bad_cases[n++], "run 0", "0", "tcg", "650", "100", "ok",
		 "line 3, column 3 (run);run number");
	bad_rows(&bad_cases[n++], "run 1.5", "1.5", "tcg", "650", "100", "ok",
		 "line 3, column 3 (run)");
	bad_rows(&bad_cases[n++], "accel", "2", "xen", "650", "100", "ok",
		 "line 3, column 4 (accel);'xen'");
	bad_rows(&bad_cases[n++], "run listed twice", "1", "tcg", "650", "100", "ok",
		 "line 3, column 3 (run);already on line 2");
	t = g_strconcat(HEADER, "w/x", good + 1, NULL);
	bad_text(&bad_cases[n++], "workload not a name", t, "line 2, column 1 (workload);'w/x'");
	g_free(t);
	t = g_strconcat(HEADER, good, "\n\r\n", "w,,3", good + strlen("w,none,1"), NULL);
	bad_text(&bad_cases[n++], "config empty after blank lines", t, "line 5, column 2 (config)");
	cr_assert_eq(n, G_N_ELEMENTS(bad_cases));
	return cr_make_param_array(struct bad_case, bad_cases, n);
}

ParameterizedTest(const struct bad_case *c, vm_runs_invalid, names_line_and_column)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vm_runs) runs = NULL;

	cr_assert(c->what[0] && c->want[0], "the case table reached the test");
	runs = vm_runs_parse("t.csv", c->text, &err);
	cr_assert_null(runs, "%s: should be refused:\n%s", c->what, c->text);
	assert_error(err, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID, c->want, c->what);
	cr_assert(g_str_has_prefix(err->message, "t.csv: line "), "%s: names the file: %s", c->what,
		  err->message);
}

Test(vm_runs_valid, blank_lines_and_crlf)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *good = g_strdup_printf(ROW_FMT, "1", "kvm", "650", "100", "ok");
	g_autofree char *crlf = g_strdup(HEADER);
	g_autofree char *text = NULL;
	g_autoptr(vm_runs) runs = NULL;

	crlf[strlen(crlf) - 1] = '\0';
	text = g_strconcat(crlf, "\r\n\n", good, "\n", NULL);
	runs = vm_runs_parse("t.csv", text, &err);
	cr_assert_not_null(runs, "%s", err ? err->message : "?");
	cr_assert_eq(runs->runs->len, 1);
	cr_assert_eq(((struct vm_run *)g_ptr_array_index(runs->runs, 0))->line, 3);
}

Test(vm_runs_valid, header_only_is_no_runs)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(vm_runs) runs = vm_runs_parse("t.csv", HEADER, &err);
	g_autofree char *md = NULL;

	cr_assert_not_null(runs, "%s", err ? err->message : "?");
	cr_assert_eq(runs->runs->len, 0);
	md = vm_report_markdown(runs, NULL);
	cr_assert(strstr(md, "No runs."), "%s", md);
}

/* ------------------------------------------------------------------------- */
/* vm_report_write() in a temporary folder                                   */
/* ------------------------------------------------------------------------- */

static char *out_dir;

static void out_init(void)
{
	out_dir = tree_new();
}

static void out_fini(void)
{
	tree_rm(out_dir);
	g_free(out_dir);
}

static bool out_has(const char *rel)
{
	g_autofree char *p = g_build_filename(out_dir, rel, NULL);

	return g_file_test(p, G_FILE_TEST_EXISTS);
}

static char *out_read(const char *rel)
{
	g_autofree char *p = g_build_filename(out_dir, rel, NULL);
	char *text = NULL;

	cr_assert(g_file_get_contents(p, &text, NULL, NULL), "%s was not written", rel);
	return text;
}

/* Does a line of @lines contain every word of @words (';'-separated)? */
static bool lines_have(const GPtrArray *lines, const char *words)
{
	for (guint i = 0; i < lines->len; i++)
		if (msg_has_all(g_ptr_array_index(lines, i), words))
			return true;
	return false;
}

static void put_runs(const char *data_name)
{
	g_autofree char *text = read_data(data_name);

	tree_put(out_dir, "runs.csv", text);
}

/* Series of report-small.csv: run 1 of two configs; a broken one of a third. */
static void put_series(void)
{
	tree_put(out_dir, "series/memload-clustered-thp-off/none/run-1.csv",
		 "t_s,rss_bytes\n0,734003200\n1,734003200\n2,735051776\n");
	tree_put(out_dir, "series/memload-clustered-thp-off/vreclaim-agent-q10ms/run-1.csv",
		 "t_s,rss_bytes\r\n0,734003200\r\n1.5,629145600\r\n3,524288000\r\n");
	tree_put(out_dir, "series/memload-clustered-thp-off/vreclaim-agent-qnone/run-2.csv",
		 "t_s,rss_bytes\n0,abc\n");
}

TestSuite(vm_report_write, .init = out_init, .fini = out_fini);

Test(vm_report_write, invalid_input_writes_nothing)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	g_autofree char *text = read_data("report-small.csv");
	struct vm_report_options o = { .out_dir = out_dir, .plots = true };
	char *bad = strstr(text, ",ok\n");

	/* The first row's data check fails (line 2). */
	memcpy(bad, ",no\n", 4);
	tree_put(out_dir, "runs.csv", text);
	cr_assert_not(vm_report_write(&o, lines, &err));
	assert_error(err, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID, "runs.csv: line 2, column 26",
		     "data check");
	cr_assert_not(out_has("results.csv"));
	cr_assert_not(out_has("report.md"));
	cr_assert_not(out_has("plots"));
	cr_assert_not(out_has("saving-vs-slowdown.png"));
	cr_assert_eq(lines->len, 0);
}

Test(vm_report_write, no_plots_writes_results_and_report)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	g_autoptr(vm_runs) runs = load_data("report-small.csv");
	g_autofree char *want_csv = vm_runs_results_csv(runs);
	g_autofree char *want_md = read_data("report-small.md");
	g_autofree char *csv = NULL;
	g_autofree char *md = NULL;
	struct vm_report_options o = { .out_dir = out_dir, .plots = false };

	put_runs("report-small.csv");
	cr_assert(vm_report_write(&o, lines, &err), "%s", err ? err->message : "?");
	csv = out_read("results.csv");
	md = out_read("report.md");
	cr_assert_str_eq(csv, want_csv);
	cr_assert_str_eq(md, want_md);
	cr_assert(lines_have(lines, "wrote;results.csv"));
	cr_assert(lines_have(lines, "wrote;report.md"));
	cr_assert(lines_have(lines, "not drawn;--no-plots"));
	cr_assert_not(out_has("plots"));
	cr_assert_not(out_has("results.csv.tmp"));
	cr_assert_not(out_has("report.md.tmp"));
}

Test(vm_report_write, unknown_rss_workload_is_a_usage_error)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	struct vm_report_options o = { .out_dir = out_dir, .plots = true, .rss_workload = "nope" };

	put_runs("report-small.csv");
	cr_assert_not(vm_report_write(&o, lines, &err));
	assert_error(err, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "--rss-workload nope",
		     "unknown workload");
	cr_assert_not(out_has("results.csv"));
}

Test(vm_report_write, without_gnuplot_the_plot_files_are_written_and_not_linked)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	g_autofree char *md = NULL;
	g_autofree char *gp = NULL;
	struct vm_report_options o = { .out_dir = out_dir,
				       .plots = true,
				       .gnuplot = "vr-no-such-gnuplot" };

	put_runs("report-small.csv");
	put_series();
	tree_put(out_dir, "rss-over-time.png", "an earlier report's");
	cr_assert(vm_report_write(&o, lines, &err), "%s", err ? err->message : "?");
	cr_assert(lines_have(lines, "vr-no-such-gnuplot not found"));
	cr_assert(out_has("plots/saving-vs-slowdown.dat"));
	cr_assert(out_has("plots/rss-over-time.gp"));
	cr_assert_not(out_has("saving-vs-slowdown.png"));
	cr_assert_not(out_has("rss-over-time.png"));
	md = out_read("report.md");
	cr_assert_null(strstr(md, ".png"), "no links to plots not drawn:\n%s", md);
	gp = out_read("plots/rss-over-time.gp");
	cr_assert(strstr(gp, "title \"vreclaim-agent-q10ms\""), "%s", gp);
}

/* The PNG signature: \x89 P N G \r \n \x1a \n. */
static bool is_png(const char *rel)
{
	g_autofree char *p = g_build_filename(out_dir, rel, NULL);
	g_autofree char *data = NULL;
	gsize len = 0;

	return g_file_get_contents(p, &data, &len, NULL) && len > 1000 &&
	       memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0;
}

Test(vm_report_write, with_gnuplot_draws_both_plots)
{
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) err = NULL;
	g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
	g_autofree char *md = NULL;
	g_autofree char *rss = NULL;
	g_autofree char *saving = NULL;
	struct vm_report_options o = { .out_dir = out_dir, .plots = true };

	if (!gnuplot)
		cr_skip_test("gnuplot is not installed");
	put_runs("report-small.csv");
	put_series();
	cr_assert(vm_report_write(&o, lines, &err), "%s", err ? err->message : "?");
	cr_assert(is_png("saving-vs-slowdown.png"), "saving-vs-slowdown.png is no PNG");
	cr_assert(is_png("rss-over-time.png"), "rss-over-time.png is no PNG");
	cr_assert(lines_have(lines, "wrote;saving-vs-slowdown.png"));
	cr_assert(lines_have(lines, "vreclaim-agent-qnone/run-2.csv left out;line 2"),
		  "the broken series is named");
	md = out_read("report.md");
	cr_assert(strstr(md, "(saving-vs-slowdown.png)"), "%s", md);
	cr_assert(strstr(md, "memload-clustered-thp-off, run 1 of each config](rss-over-time.png)"),
		  "%s", md);
	/* 629145600 bytes = 600 MiB; sqlite-oltp has no baseline: no point. */
	rss = out_read("plots/rss-over-time.dat");
	cr_assert(strstr(rss, "1.500 600.000\n"), "%s", rss);
	saving = out_read("plots/saving-vs-slowdown.dat");
	cr_assert(strstr(saving, " vreclaim-agent-q10ms\n"), "%s", saving);
	cr_assert_null(strstr(saving, "sqlite-oltp"), "%s", saving);
}
