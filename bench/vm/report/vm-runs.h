/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The runs of the nested-VM benchmark (bench/vm/run): runs.csv read and
 * validated, and the columns derived from it against each workload's `none`
 * config (results.csv).
 *
 * runs.csv has one row per run under a fixed header (vm_col_names, in that
 * order); an empty field is a measure that was not taken. Every number is
 * checked, every row must have passed its data check ("ok"), and a problem
 * is an error naming the file, the line and the column.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

#define VM_RUNS_ERROR (vm_runs_error_quark())
GQuark vm_runs_error_quark(void);

/**
 * enum vm_runs_error - error codes in the VM_RUNS_ERROR domain.
 * @VM_RUNS_ERROR_INVALID: runs.csv is not what the harness writes (the
 *	message names the file, the line and the column).
 */
enum vm_runs_error {
	VM_RUNS_ERROR_INVALID,
};

/**
 * enum vm_col - the columns of runs.csv, in file order.
 *
 * Units are in the names: bytes, seconds (_s), microseconds (_us), pages.
 * workload, config, accel and data_check are text; run is an integer from
 * 1; the rest are numbers (decimal, may be empty).
 */
enum vm_col {
	VM_COL_WORKLOAD,
	VM_COL_CONFIG,
	VM_COL_RUN,
	VM_COL_ACCEL,
	VM_COL_GUEST_MEM_BYTES,
	VM_COL_WINDOW_S,
	VM_COL_RSS_START_BYTES,
	VM_COL_RSS_AVG_BYTES,
	VM_COL_RSS_END_BYTES,
	VM_COL_GUEST_RECLAIMED_BYTES,
	VM_COL_ZRAM_KEPT_BYTES,
	VM_COL_GUEST_NET_FREED_BYTES,
	VM_COL_HOST_RETURNED_BYTES,
	VM_COL_THROUGHPUT_OPS_PER_S,
	VM_COL_LATENCY_P99_US,
	VM_COL_AGENT_CPU_S,
	VM_COL_KDAMOND_CPU_S,
	VM_COL_BASELINE_CPU_S,
	VM_COL_VRECLAIMD_CPU_S,
	VM_COL_RECLAIMER_CPU_S,
	VM_COL_PSWPIN_PAGES,
	VM_COL_WORKINGSET_REFAULT_ANON_PAGES,
	VM_COL_WORKINGSET_REFAULT_FILE_PAGES,
	VM_COL_PSI_SOME_US,
	VM_COL_PSI_FULL_US,
	VM_COL_DATA_CHECK,
	VM_NR_COLS
};

/**
 * enum vm_derived - the columns results.csv adds after those of runs.csv.
 * @VM_DER_MEMORY_SAVING_AVG_PCT: (none.rss_avg - rss_avg) / none.rss_avg, %.
 * @VM_DER_MEMORY_SAVING_END_PCT: the same with rss_end, %.
 * @VM_DER_SLOWDOWN_PCT: (none.throughput - throughput) / none.throughput, %.
 * @VM_DER_P99_INCREASE_PCT: (p99 - none.p99) / none.p99, %.
 * @VM_DER_RECLAIMER_CPU_PCT: reclaimer_cpu_s / window_s, % of one CPU.
 * @VM_DER_RETURN_EFFICIENCY_PCT: host_returned / guest_net_freed, %; empty
 *	when guest_net_freed is empty or <= 0.
 * @VM_DER_REFAULTS_PAGES: pswpin + workingset_refault_anon +
 *	workingset_refault_file; an empty one counts 0, empty when all three
 *	are.
 * @VM_NR_DERIVED: how many there are.
 *
 * "none.X" is the median of X over the runs of the workload's `none` config;
 * without such runs (or with that median empty or 0) the comparative
 * columns (the first four) are empty.
 */
enum vm_derived {
	VM_DER_MEMORY_SAVING_AVG_PCT,
	VM_DER_MEMORY_SAVING_END_PCT,
	VM_DER_SLOWDOWN_PCT,
	VM_DER_P99_INCREASE_PCT,
	VM_DER_RECLAIMER_CPU_PCT,
	VM_DER_RETURN_EFFICIENCY_PCT,
	VM_DER_REFAULTS_PAGES,
	VM_NR_DERIVED
};

/* The header names of runs.csv (VM_NR_COLS) and of the derived columns
 * (VM_NR_DERIVED), in file order. */
extern const char *const vm_col_names[VM_NR_COLS];
extern const char *const vm_derived_names[VM_NR_DERIVED];

/* The config that is every workload's baseline. */
#define VM_BASELINE_CONFIG "none"

/**
 * struct vm_run - one row of runs.csv and its derived columns.
 * @line:	its line in the file (1 is the header).
 * @fields:	the fields as read (owned; "" when empty).
 * @values:	the numeric columns' values; NAN for an empty field and for
 *		the text columns.
 * @derived:	the derived columns (enum vm_derived); NAN when empty.
 */
struct vm_run {
	guint line;
	char *fields[VM_NR_COLS];
	double values[VM_NR_COLS];
	double derived[VM_NR_DERIVED];
};

/**
 * struct vm_baseline - a workload's `none` config, medians over its runs.
 * @nr_runs:		how many `none` runs the workload has (0: no baseline).
 * @rss_avg_bytes:	median rss_avg_bytes (NAN: not measured).
 * @rss_end_bytes:	median rss_end_bytes.
 * @throughput_ops_per_s: median throughput_ops_per_s.
 * @latency_p99_us:	median latency_p99_us.
 */
struct vm_baseline {
	guint nr_runs;
	double rss_avg_bytes;
	double rss_end_bytes;
	double throughput_ops_per_s;
	double latency_p99_us;
};

/**
 * struct vm_runs - runs.csv, validated, with its derived columns.
 * @path:	the file's name as given (owned), for messages.
 * @runs:	struct vm_run * in file order (owned).
 * @workloads:	the workloads' names in first-seen order (char *, owned).
 */
struct vm_runs {
	char *path;
	GPtrArray *runs;
	GPtrArray *workloads;
};

/**
 * vm_runs_parse() - validate runs.csv's @text and derive its columns.
 * @path:	the file's name, for messages (copied).
 * @text:	the whole file, NUL-terminated.
 * @error:	VM_RUNS_ERROR_INVALID naming "@path: line L, column C (name)"
 *		for a wrong header, a wrong number of fields, a field that is
 *		not a number (or not a name, a run number, tcg or kvm), a
 *		data_check other than "ok", a run listed twice.
 *
 * Blank lines are skipped; a trailing '\r' (CRLF files) is dropped.
 *
 * Return: the runs (free with vm_runs_free()), or NULL with @error.
 */
struct vm_runs *vm_runs_parse(const char *path, const char *text, GError **error);

/**
 * vm_runs_load() - read the file at @path and vm_runs_parse() it.
 * @path:	runs.csv.
 * @error:	the file cannot be read, or as vm_runs_parse().
 *
 * Return: the runs (free with vm_runs_free()), or NULL with @error.
 */
struct vm_runs *vm_runs_load(const char *path, GError **error);

/**
 * vm_runs_free() - free @runs and everything it holds (NULL is fine).
 */
void vm_runs_free(struct vm_runs *runs);
typedef struct vm_runs vm_runs;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vm_runs, vm_runs_free)

/**
 * vm_runs_baseline() - the `none` config of @workload, medians of its runs.
 * @runs:	the runs.
 * @workload:	the workload's name.
 *
 * Return: the baseline; nr_runs 0 (and every value NAN) when @workload has
 * no `none` run.
 */
struct vm_baseline vm_runs_baseline(const struct vm_runs *runs, const char *workload);

/**
 * vm_runs_configs() - the configs of @workload in first-seen order.
 *
 * Return: a new array of names (not owned by it: they belong to @runs).
 */
GPtrArray *vm_runs_configs(const struct vm_runs *runs, const char *workload);

/**
 * vm_runs_select() - the runs of @config of @workload in file order.
 *
 * Return: a new array of struct vm_run * (owned by @runs, not by it).
 */
GPtrArray *vm_runs_select(const struct vm_runs *runs, const char *workload, const char *config);

/**
 * vm_runs_results_csv() - results.csv: runs.csv's header and fields as read,
 * then the derived columns (percentages with 2 decimals, pages as integers,
 * empty when not computed).
 *
 * Return: the text (caller frees).
 */
char *vm_runs_results_csv(const struct vm_runs *runs);

/**
 * vm_format_number() - @v with @decimals decimals in the C locale, "-0" made
 * "0" (so a rounding to zero prints the same on either side).
 *
 * Return: the text (caller frees); "" for NAN.
 */
char *vm_format_number(double v, int decimals);
