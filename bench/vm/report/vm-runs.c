/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * runs.csv read and validated; the derived columns of results.csv.
 */
#include "vm-runs.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "vm-stats.h"

/* clang-format off */
G_DEFINE_QUARK(vm-runs-error-quark, vm_runs_error)
/* clang-format on */

const char *const vm_col_names[VM_NR_COLS] = {
	[VM_COL_WORKLOAD] = "workload",
	[VM_COL_CONFIG] = "config",
	[VM_COL_RUN] = "run",
	[VM_COL_ACCEL] = "accel",
	[VM_COL_GUEST_MEM_BYTES] = "guest_mem_bytes",
	[VM_COL_WINDOW_S] = "window_s",
	[VM_COL_RSS_START_BYTES] = "rss_start_bytes",
	[VM_COL_RSS_AVG_BYTES] = "rss_avg_bytes",
	[VM_COL_RSS_END_BYTES] = "rss_end_bytes",
	[VM_COL_GUEST_RECLAIMED_BYTES] = "guest_reclaimed_bytes",
	[VM_COL_ZRAM_KEPT_BYTES] = "zram_kept_bytes",
	[VM_COL_GUEST_NET_FREED_BYTES] = "guest_net_freed_bytes",
	[VM_COL_HOST_RETURNED_BYTES] = "host_returned_bytes",
	[VM_COL_THROUGHPUT_OPS_PER_S] = "throughput_ops_per_s",
	[VM_COL_LATENCY_P99_US] = "latency_p99_us",
	[VM_COL_AGENT_CPU_S] = "agent_cpu_s",
	[VM_COL_KDAMOND_CPU_S] = "kdamond_cpu_s",
	[VM_COL_BASELINE_CPU_S] = "baseline_cpu_s",
	[VM_COL_VRECLAIMD_CPU_S] = "vreclaimd_cpu_s",
	[VM_COL_RECLAIMER_CPU_S] = "reclaimer_cpu_s",
	[VM_COL_PSWPIN_PAGES] = "pswpin_pages",
	[VM_COL_WORKINGSET_REFAULT_ANON_PAGES] = "workingset_refault_anon_pages",
	[VM_COL_WORKINGSET_REFAULT_FILE_PAGES] = "workingset_refault_file_pages",
	[VM_COL_PSI_SOME_US] = "psi_some_us",
	[VM_COL_PSI_FULL_US] = "psi_full_us",
	[VM_COL_DATA_CHECK] = "data_check",
};

const char *const vm_derived_names[VM_NR_DERIVED] = {
	[VM_DER_MEMORY_SAVING_AVG_PCT] = "memory_saving_avg_pct",
	[VM_DER_MEMORY_SAVING_END_PCT] = "memory_saving_end_pct",
	[VM_DER_SLOWDOWN_PCT] = "slowdown_pct",
	[VM_DER_P99_INCREASE_PCT] = "p99_increase_pct",
	[VM_DER_RECLAIMER_CPU_PCT] = "reclaimer_cpu_pct",
	[VM_DER_RETURN_EFFICIENCY_PCT] = "return_efficiency_pct",
	[VM_DER_REFAULTS_PAGES] = "refaults_pages",
};

/* ---- reading ---- */

static void run_free(struct vm_run *run)
{
	for (int c = 0; c < VM_NR_COLS; c++)
		g_free(run->fields[c]);
	g_free(run);
}

void vm_runs_free(struct vm_runs *runs)
{
	if (!runs)
		return;
	g_free(runs->path);
	g_ptr_array_unref(runs->runs);
	g_ptr_array_unref(runs->workloads);
	g_free(runs);
}

/* Names become folder names (series/WORKLOAD/CONFIG) and plot labels. */
static bool is_name(const char *s)
{
	if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (const char *p = s; *p; p++)
		if (!g_ascii_isalnum(*p) && *p != '.' && *p != '_' && *p != '-')
			return false;
	return true;
}

/* A number as the harness writes it: decimal, finite, the whole field. */
static bool parse_number(const char *s, double *out)
{
	char *end = NULL;
	double v;

	if (!*s || g_ascii_isspace(*s))
		return false;
	v = g_ascii_strtod(s, &end);
	if (*end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

static gboolean fail(GError **error, const char *path, guint line, int col, const char *fmt, ...)
	G_GNUC_PRINTF(5, 6);

/* "PATH: line L, column C (name): MESSAGE"; @col -1: no column. */
static gboolean fail(GError **error, const char *path, guint line, int col, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	if (col < 0)
		g_set_error(error, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID, "%s: line %u: %s", path,
			    line, msg);
	else
		g_set_error(error, VM_RUNS_ERROR, VM_RUNS_ERROR_INVALID,
			    "%s: line %u, column %d (%s): %s", path, line, col + 1,
			    col < VM_NR_COLS ? vm_col_names[col] : "beyond the last", msg);
	return FALSE;
}

static gboolean check_header(const char *path, char **fields, guint nr, GError **error)
{
	for (guint c = 0; c < nr && c < VM_NR_COLS; c++)
		if (strcmp(fields[c], vm_col_names[c]) != 0)
			return fail(error, path, 1, (int)c,
				    "the header has '%s' here, expected '%s' (not the header "
				    "bench/vm/run writes)",
				    fields[c], vm_col_names[c]);
	if (nr != VM_NR_COLS)
		return fail(error, path, 1, (int)MIN(nr, VM_NR_COLS),
			    "the header has %u columns, expected %d", nr, VM_NR_COLS);
	return TRUE;
}

static gboolean check_field(const char *path, guint line, int c, const char *f, struct vm_run *run,
			    GError **error)
{
	run->values[c] = NAN;
	switch (c) {
	case VM_COL_WORKLOAD:
	case VM_COL_CONFIG:
		if (!is_name(f))
			return fail(error, path, line, c,
				    "'%s' is not a name (letters, digits, '.', '_', '-')", f);
		return TRUE;
	case VM_COL_ACCEL:
		if (strcmp(f, "tcg") != 0 && strcmp(f, "kvm") != 0)
			return fail(error, path, line, c, "'%s' is neither tcg nor kvm", f);
		return TRUE;
	case VM_COL_DATA_CHECK:
		if (strcmp(f, "ok") != 0)
			return fail(error, path, line, c,
				    "'%s': the run's data check did not pass (expected 'ok')", f);
		return TRUE;
	case VM_COL_RUN: {
		guint64 n;

		if (!g_ascii_string_to_unsigned(f, 10, 1, G_MAXUINT32, &n, NULL))
			return fail(error, path, line, c, "'%s' is not a run number (1, 2, ...)",
				    f);
		run->values[c] = (double)n;
		return TRUE;
	}
	default:
		if (*f && !parse_number(f, &run->values[c]))
			return fail(error, path, line, c, "'%s' is not a number", f);
		return TRUE;
	}
}

static gboolean parse_row(const char *path, guint line, char **fields, guint nr, struct vm_run *run,
			  GError **error)
{
	if (nr < VM_NR_COLS)
		return fail(error, path, line, (int)nr,
			    "missing: the row has %u fields, expected %d", nr, VM_NR_COLS);
	if (nr > VM_NR_COLS)
		return fail(error, path, line, VM_NR_COLS,
			    "one field too many or more: the row has %u fields, expected %d", nr,
			    VM_NR_COLS);
	run->line = line;
	for (int c = 0; c < VM_NR_COLS; c++) {
		run->fields[c] = g_strdup(fields[c]);
		if (!check_field(path, line, c, fields[c], run, error))
			return FALSE;
	}
	for (int d = 0; d < VM_NR_DERIVED; d++)
		run->derived[d] = NAN;
	return TRUE;
}

/* A run listed twice would count twice in every median. */
static gboolean check_unique(const char *path, const struct vm_runs *runs, const struct vm_run *run,
			     GError **error)
{
	for (guint i = 0; i < runs->runs->len; i++) {
		const struct vm_run *o = g_ptr_array_index(runs->runs, i);

		if (o != run && o->values[VM_COL_RUN] == run->values[VM_COL_RUN] &&
		    strcmp(o->fields[VM_COL_WORKLOAD], run->fields[VM_COL_WORKLOAD]) == 0 &&
		    strcmp(o->fields[VM_COL_CONFIG], run->fields[VM_COL_CONFIG]) == 0)
			return fail(error, path, run->line, VM_COL_RUN,
				    "run %s of %s/%s is already on line %u",
				    run->fields[VM_COL_RUN], run->fields[VM_COL_WORKLOAD],
				    run->fields[VM_COL_CONFIG], o->line);
	}
	return TRUE;
}

static bool has_string(const GPtrArray *a, const char *s)
{
	for (guint i = 0; i < a->len; i++)
		if (strcmp(g_ptr_array_index(a, i), s) == 0)
			return true;
	return false;
}

static void derive(struct vm_runs *runs);

struct vm_runs *vm_runs_parse(const char *path, const char *text, GError **error)
{
	g_autoptr(vm_runs) runs = g_new0(struct vm_runs, 1);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	bool have_header = false;

	runs->path = g_strdup(path);
	runs->runs = g_ptr_array_new_with_free_func((GDestroyNotify)run_free);
	runs->workloads = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; lines[i]; i++) {
		guint line = i + 1;
		char *l = lines[i];
		size_t len = strlen(l);
		g_auto(GStrv) fields = NULL;
		struct vm_run *run;

		if (len && l[len - 1] == '\r')
			l[len - 1] = '\0';
		if (!*l && line > 1)
			continue;
		fields = g_strsplit(l, ",", -1);
		if (line == 1) {
			if (!check_header(path, fields, g_strv_length(fields), error))
				return NULL;
			have_header = true;
			continue;
		}
		run = g_new0(struct vm_run, 1);
		g_ptr_array_add(runs->runs, run);
		if (!parse_row(path, line, fields, g_strv_length(fields), run, error) ||
		    !check_unique(path, runs, run, error)) {
			return NULL;
		}
	}
	if (!have_header) {
		fail(error, path, 1, -1, "empty: expected the header of runs.csv");
		return NULL;
	}
	for (guint i = 0; i < runs->runs->len; i++) {
		const struct vm_run *run = g_ptr_array_index(runs->runs, i);

		if (!has_string(runs->workloads, run->fields[VM_COL_WORKLOAD]))
			g_ptr_array_add(runs->workloads, g_strdup(run->fields[VM_COL_WORKLOAD]));
	}
	derive(runs);
	return g_steal_pointer(&runs);
}

struct vm_runs *vm_runs_load(const char *path, GError **error)
{
	g_autofree char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, error)) {
		g_prefix_error(error, "runs.csv: ");
		return NULL;
	}
	return vm_runs_parse(path, text, error);
}

/* ---- selections ---- */

GPtrArray *vm_runs_configs(const struct vm_runs *runs, const char *workload)
{
	GPtrArray *configs = g_ptr_array_new();

	for (guint i = 0; i < runs->runs->len; i++) {
		struct vm_run *run = g_ptr_array_index(runs->runs, i);

		if (strcmp(run->fields[VM_COL_WORKLOAD], workload) == 0 &&
		    !has_string(configs, run->fields[VM_COL_CONFIG]))
			g_ptr_array_add(configs, run->fields[VM_COL_CONFIG]);
	}
	return configs;
}

GPtrArray *vm_runs_select(const struct vm_runs *runs, const char *workload, const char *config)
{
	GPtrArray *sel = g_ptr_array_new();

	for (guint i = 0; i < runs->runs->len; i++) {
		struct vm_run *run = g_ptr_array_index(runs->runs, i);

		if (strcmp(run->fields[VM_COL_WORKLOAD], workload) == 0 &&
		    strcmp(run->fields[VM_COL_CONFIG], config) == 0)
			g_ptr_array_add(sel, run);
	}
	return sel;
}

/* Median of column @c over @sel (struct vm_run *). */
static double median_of(const GPtrArray *sel, int c)
{
	g_autofree double *v = g_new(double, sel->len + 1);

	for (guint i = 0; i < sel->len; i++)
		v[i] = ((const struct vm_run *)g_ptr_array_index(sel, i))->values[c];
	return vm_stats_median(v, sel->len);
}

struct vm_baseline vm_runs_baseline(const struct vm_runs *runs, const char *workload)
{
	g_autoptr(GPtrArray) sel = vm_runs_select(runs, workload, VM_BASELINE_CONFIG);

	return (struct vm_baseline){
		.nr_runs = sel->len,
		.rss_avg_bytes = median_of(sel, VM_COL_RSS_AVG_BYTES),
		.rss_end_bytes = median_of(sel, VM_COL_RSS_END_BYTES),
		.throughput_ops_per_s = median_of(sel, VM_COL_THROUGHPUT_OPS_PER_S),
		.latency_p99_us = median_of(sel, VM_COL_LATENCY_P99_US),
	};
}

/* ---- the derived columns ---- */

/* (a - b) / base * 100; NAN when anything is missing or the base is 0. */
static double pct_change(double a, double b, double base)
{
	if (isnan(a) || isnan(b) || isnan(base) || base == 0)
		return NAN;
	return (a - b) / base * 100;
}

static double refaults(const double *v)
{
	const int cols[] = { VM_COL_PSWPIN_PAGES, VM_COL_WORKINGSET_REFAULT_ANON_PAGES,
			     VM_COL_WORKINGSET_REFAULT_FILE_PAGES };
	double sum = 0;
	bool any = false;

	for (size_t i = 0; i < G_N_ELEMENTS(cols); i++) {
		if (isnan(v[cols[i]]))
			continue;
		sum += v[cols[i]];
		any = true;
	}
	return any ? sum : NAN;
}

static void derive_run(struct vm_run *run, const struct vm_baseline *b)
{
	const double *v = run->values;
	double *d = run->derived;
	double window = v[VM_COL_WINDOW_S];
	double net = v[VM_COL_GUEST_NET_FREED_BYTES];

	d[VM_DER_MEMORY_SAVING_AVG_PCT] =
		pct_change(b->rss_avg_bytes, v[VM_COL_RSS_AVG_BYTES], b->rss_avg_bytes);
	d[VM_DER_MEMORY_SAVING_END_PCT] =
		pct_change(b->rss_end_bytes, v[VM_COL_RSS_END_BYTES], b->rss_end_bytes);
	d[VM_DER_SLOWDOWN_PCT] = pct_change(b->throughput_ops_per_s, v[VM_COL_THROUGHPUT_OPS_PER_S],
					    b->throughput_ops_per_s);
	d[VM_DER_P99_INCREASE_PCT] =
		pct_change(v[VM_COL_LATENCY_P99_US], b->latency_p99_us, b->latency_p99_us);
	d[VM_DER_RECLAIMER_CPU_PCT] =
		window > 0 ? pct_change(v[VM_COL_RECLAIMER_CPU_S], 0, window) : NAN;
	d[VM_DER_RETURN_EFFICIENCY_PCT] =
		net > 0 ? pct_change(v[VM_COL_HOST_RETURNED_BYTES], 0, net) : NAN;
	d[VM_DER_REFAULTS_PAGES] = refaults(v);
}

static void derive(struct vm_runs *runs)
{
	for (guint w = 0; w < runs->workloads->len; w++) {
		const char *workload = g_ptr_array_index(runs->workloads, w);
		struct vm_baseline b = vm_runs_baseline(runs, workload);

		for (guint i = 0; i < runs->runs->len; i++) {
			struct vm_run *run = g_ptr_array_index(runs->runs, i);

			if (strcmp(run->fields[VM_COL_WORKLOAD], workload) == 0)
				derive_run(run, &b);
		}
	}
}

/* ---- output ---- */

char *vm_format_number(double v, int decimals)
{
	char fmt[16];
	char buf[G_ASCII_DTOSTR_BUF_SIZE];
	const char *s;

	if (isnan(v))
		return g_strdup("");
	g_snprintf(fmt, sizeof(fmt), "%%.%df", decimals);
	g_ascii_formatd(buf, sizeof(buf), fmt, v);
	s = buf;
	/* "-0.00" -> "0.00": only zeros and a point after the sign. */
	if (s[0] == '-' && strspn(s + 1, "0.") == strlen(s + 1))
		s++;
	return g_strdup(s);
}

char *vm_runs_results_csv(const struct vm_runs *runs)
{
	GString *out = g_string_new(NULL);

	for (int c = 0; c < VM_NR_COLS; c++)
		g_string_append_printf(out, "%s%s", c ? "," : "", vm_col_names[c]);
	for (int d = 0; d < VM_NR_DERIVED; d++)
		g_string_append_printf(out, ",%s", vm_derived_names[d]);
	g_string_append_c(out, '\n');
	for (guint i = 0; i < runs->runs->len; i++) {
		const struct vm_run *run = g_ptr_array_index(runs->runs, i);

		for (int c = 0; c < VM_NR_COLS; c++)
			g_string_append_printf(out, "%s%s", c ? "," : "", run->fields[c]);
		for (int d = 0; d < VM_NR_DERIVED; d++) {
			g_autofree char *s = vm_format_number(run->derived[d],
							      d == VM_DER_REFAULTS_PAGES ? 0 : 2);

			g_string_append_printf(out, ",%s", s);
		}
		g_string_append_c(out, '\n');
	}
	return g_string_free(out, FALSE);
}
