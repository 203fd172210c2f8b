/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `vreclaimctl simulate`: runs a policy against the simulated guest and the
 * simulated reclaim (common/sim-run.h) and prints the published table's
 * columns; with --matrix, the published table's seven rows on the same
 * workload and seed, the CSV, the benchmark goals and the published figures
 * (docs/simulate.md). The edge: reads the policy file, measures the engine's
 * CPU time (CLOCK_THREAD_CPUTIME_ID), writes the CSV; the rows run in
 * parallel, one thread each, up to the number of CPUs.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "cli/simulate.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/exit-codes.h"
#include "policy.h"
#include "sim-run.h"
#include "user-file.h"

#define GIB	 (1ULL << 30)
#define US_PER_S 1000000.0

/* The largest guest --size-gib takes, GiB: the simulation keeps a few words
 * for every 4 KiB page of the guest (the reclaim model's next access and
 * resident tree, the access tracker's last sight), about 2 GiB of memory
 * at 256 GiB; beyond, g_malloc() would abort where it cannot. */
#define SIM_MAX_SIZE_GIB 256

#define CSV_HEADER "quota,prioritization,memory_saving,reclaimer_cpu,slowdown"

/**
 * struct options - the command line.
 * @policy:	 policy file, or NULL for the default profile.
 * @workload:	 built-in script name, or a workload file.
 * @workload_file: @workload names a file (is_workload_file()).
 * @size_gib, @seconds, @phase_s, @seed: the guest, the run, the script.
 * @matrix:	 run the published table's rows.
 * @csv:	 where to write the matrix's CSV.
 * @refault_penalty_us, @pageout_gibps: the cost model.
 */
struct options {
	char *policy;
	char *workload;
	gboolean workload_file;
	double size_gib;
	double seconds;
	double phase_s;
	gint64 seed;
	gboolean matrix;
	char *csv;
	gint64 refault_penalty_us;
	double pageout_gibps;
};

static void options_clear(struct options *o)
{
	g_free(o->policy);
	g_free(o->workload);
	g_free(o->csv);
}

/* The published DAMON_RECLAIM figures (SEMANTICS.md §4), in the matrix's row
 * order: saving, CPU, slowdown, in percent. */
static const double published[][3] = {
	{ 47.16, 11.62, 5.40 }, { 4.55, 1.78, 2.51 }, { 40.84, 5.70, 4.53 },
	{ 48.42, 10.92, 4.69 }, { 0.77, 1.37, 1.84 }, { 40.34, 5.16, 3.38 },
	{ 47.99, 10.41, 5.10 },
};

/* ---- the edge: the CPU clock ---- */

static uint64_t thread_cpu_ns(void *data G_GNUC_UNUSED)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- one run ---- */

/**
 * struct job - one run, possibly in a worker thread.
 * @cfg:	what to run.
 * @policy:	the policy (borrowed; read only).
 * @row:	the matrix row to apply, or NULL for the policy as given.
 * @result:	filled by the run.
 * @schemes:	the schemes at the end of the run (struct vr_scheme *, owned).
 * @active:	each scheme's activation at the end (gboolean).
 * @error:	set when the run failed.
 */
struct job {
	struct vr_sim_run_config cfg;
	const struct vr_policy *policy;
	const struct vr_sim_matrix_row *row;
	struct vr_sim_result result;
	GPtrArray *schemes;
	GArray *active;
	GError *error;
};

static void job_run(struct job *job)
{
	g_autoptr(vr_sim_run) run = vr_sim_run_new(&job->cfg, job->policy, &job->error);
	struct vr_ctx *ctx;

	if (!run)
		return;
	ctx = vr_sim_run_ctx(run);
	if (job->row && !vr_sim_matrix_adjust(ctx, job->row, &job->error))
		return;
	if (!vr_sim_run_run(run, &job->error))
		return;
	vr_sim_run_result(run, &job->result);
	job->schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	job->active = g_array_new(FALSE, FALSE, sizeof(gboolean));
	for (guint i = 0; i < vr_ctx_nr_schemes(ctx); i++) {
		gboolean active = vr_ctx_scheme_active(ctx, i);

		g_ptr_array_add(job->schemes, vr_scheme_copy(vr_ctx_scheme(ctx, i)));
		g_array_append_val(job->active, active);
	}
}

static void job_clear(struct job *job)
{
	if (job->schemes)
		g_ptr_array_unref(job->schemes);
	if (job->active)
		g_array_unref(job->active);
	g_clear_error(&job->error);
}

static void pool_run(gpointer data, gpointer user_data G_GNUC_UNUSED)
{
	job_run(data);
}

/* Runs @nr @jobs, in parallel up to the number of CPUs. */
static void jobs_run(struct job *jobs, size_t nr)
{
	guint threads = MIN((guint)nr, g_get_num_processors());
	GThreadPool *pool;

	if (threads <= 1) {
		for (size_t i = 0; i < nr; i++)
			job_run(&jobs[i]);
		return;
	}
	pool = g_thread_pool_new(pool_run, NULL, (gint)threads, TRUE, NULL);
	for (size_t i = 0; i < nr; i++)
		g_thread_pool_push(pool, &jobs[i], NULL);
	g_thread_pool_free(pool, FALSE, TRUE); /* waits for every job */
}

/* ---- printing ---- */

static char *quota_label(uint64_t ms, bool csv)
{
	if (ms == 0)
		return g_strdup("none");
	return csv ? g_strdup_printf("%" G_GUINT64_FORMAT, ms) :
		     g_strdup_printf("%" G_GUINT64_FORMAT " ms/s", ms);
}

static void print_header(const struct options *o, const struct vr_policy *policy,
			 const struct vr_sim_result *r)
{
	g_autofree char *phases = o->workload_file ?
					  g_strdup("phases from the file") :
					  g_strdup_printf("phases of %.4g s", o->phase_s);

	g_print("workload %s'%s' on a %.4g GiB simulated guest (workload memory %.2f GiB), "
		"%s, seed %" G_GINT64_FORMAT ", %.4g s simulated\n",
		o->workload_file ? "file " : "", o->workload, o->size_gib,
		(double)r->workload_bytes / GIB, phases, o->seed, o->seconds);
	g_print("policy: %s (profile %s); pageout %.4g GiB/s, refault penalty %" G_GINT64_FORMAT
		" us\n",
		o->policy ? o->policy : "the default", policy->profile, o->pageout_gibps,
		o->refault_penalty_us);
}

#define TABLE_FMT "%-16s %-14s %13s %13s %9s %11s %11s %9s %10s\n"

static void print_table_head(void)
{
	g_print(TABLE_FMT, "quota", "prioritization", "memory_saving", "reclaimer_cpu", "slowdown",
		"engine_cpu", "pageout_cpu", "refaults", "paged_GiB");
}

static void print_table_row(const char *quota, const char *prio, const struct vr_sim_result *r)
{
	g_autofree char *saving = g_strdup_printf("%.2f%%", r->memory_saving_pct);
	g_autofree char *cpu = g_strdup_printf("%.2f%%", r->reclaimer_cpu_pct);
	g_autofree char *slow = g_strdup_printf("%.2f%%", r->slowdown_pct);
	g_autofree char *engine = g_strdup_printf("%.3f%%", r->engine_cpu_pct);
	g_autofree char *pageout = g_strdup_printf("%.3f%%", r->actuator_cpu_pct);
	g_autofree char *refaults = g_strdup_printf("%" G_GUINT64_FORMAT, r->reclaim.refaults);
	g_autofree char *paged =
		g_strdup_printf("%.2f", (double)r->reclaim.pageout_bytes / (double)GIB);

	g_print(TABLE_FMT, quota, prio, saving, cpu, slow, engine, pageout, refaults, paged);
}

static void print_schemes(const struct job *job)
{
	g_print("\n%-16s %-8s %-6s %10s %12s %10s %12s %10s\n", "scheme", "action", "active",
		"nr_tried", "GiB_tried", "nr_applied", "GiB_applied", "qt_exceeds");
	for (guint i = 0; i < job->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(job->schemes, i);
		const struct vr_scheme_stats *st = &s->stats;

		g_print("%-16s %-8s %-6s %10" G_GUINT64_FORMAT " %12.3f %10" G_GUINT64_FORMAT
			" %12.3f %10" G_GUINT64_FORMAT "\n",
			s->name, vr_action_name(s->action),
			g_array_index(job->active, gboolean, i) ? "yes" : "no", st->nr_tried,
			(double)st->sz_tried / GIB, st->nr_applied, (double)st->sz_applied / GIB,
			st->qt_exceeds);
	}
}

/* The first pageout scheme's quota and prioritization, as the table says them. */
static void policy_labels(const struct vr_policy *p, char **quota, char **prio)
{
	for (guint i = 0; i < p->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(p->schemes, i);
		const struct vr_quota *q = &s->quota;

		if (s->action != VR_ACTION_PAGEOUT)
			continue;
		g_autofree char *ms = quota_label(q->ms, false);

		*quota = q->sz ? g_strdup_printf("%s+%" G_GUINT64_FORMAT "MiB", ms, q->sz >> 20) :
				 g_steal_pointer(&ms);
		*prio = g_strdup(vr_quota_is_set(q) && (q->weight_sz || q->weight_nr_accesses ||
							q->weight_age) ?
					 "Y" :
					 "N");
		return;
	}
	*quota = g_strdup("-");
	*prio = g_strdup("-");
}

/* ---- the matrix's goals ---- */

static void print_goal(bool met, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void print_goal(bool met, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *text = NULL;

	va_start(ap, fmt);
	text = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_print("  [%s] %s\n", met ? "met" : "NOT MET", text);
}

/* Rows: 0 none/N, 1 10/N, 2 50/N, 3 200/N, 4 10/Y, 5 50/Y, 6 200/Y. */
static void print_goals(const struct job *jobs)
{
	const struct vr_sim_result *none = &jobs[0].result, *n50 = &jobs[2].result,
				   *y50 = &jobs[5].result;
	double keep = none->memory_saving_pct > 0 ?
			      100 * y50->memory_saving_pct / none->memory_saving_pct :
			      0;
	double slow = none->slowdown_pct > 0 ? 100 * y50->slowdown_pct / none->slowdown_pct :
					       (y50->slowdown_pct > 0 ? INFINITY : 0);
	bool grows[2];

	for (int p = 0; p < 2; p++) {
		const struct vr_sim_result *a = &jobs[1 + 3 * p].result,
					   *b = &jobs[2 + 3 * p].result,
					   *c = &jobs[3 + 3 * p].result;

		grows[p] = a->reclaimer_cpu_pct < b->reclaimer_cpu_pct &&
			   b->reclaimer_cpu_pct < c->reclaimer_cpu_pct;
	}
	g_print("\ngoals (same workload and seed):\n");
	print_goal(y50->slowdown_pct < n50->slowdown_pct,
		   "slowdown at 50 ms/s lower with prioritization: %.2f%% with, %.2f%% without",
		   y50->slowdown_pct, n50->slowdown_pct);
	print_goal(keep >= 85 && slow <= 50,
		   "50 ms/s with prioritization keeps >= 85%% of the unlimited saving (%.1f%%) at "
		   "<= half of its slowdown (%.1f%%)",
		   keep, slow);
	print_goal(grows[0] && grows[1],
		   "reclaimer CPU grows with the quota: without prioritization %.2f%% < %.2f%% < "
		   "%.2f%%, with %.2f%% < %.2f%% < %.2f%% (10 < 50 < 200 ms/s)",
		   jobs[1].result.reclaimer_cpu_pct, jobs[2].result.reclaimer_cpu_pct,
		   jobs[3].result.reclaimer_cpu_pct, jobs[4].result.reclaimer_cpu_pct,
		   jobs[5].result.reclaimer_cpu_pct, jobs[6].result.reclaimer_cpu_pct);
}

static gboolean write_csv(const char *path, const char *text, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(path);

	if (g_mkdir_with_parents(dir, 0755) < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", dir,
			    g_strerror(errno));
		return FALSE;
	}
	return g_file_set_contents(path, text, -1, error);
}

static void print_matrix(const struct options *o, const struct vr_policy *policy,
			 const struct vr_sim_matrix_row *rows, const struct job *jobs, size_t nr,
			 GString *csv)
{
	g_print("== the simulated DAMOS matrix (the published table's rows, SEMANTICS.md §4)\n");
	print_header(o, policy, &jobs[0].result);
	g_print("every pageout scheme in every row: quota ms per row, sz 0, no goals; "
		"prioritization N = weights 0,0,0, Y = the policy's; watermarks off (metric "
		"none): the matrix compares quotas and prioritization\n\n");
	print_table_head();
	for (size_t i = 0; i < nr; i++) {
		g_autofree char *quota = quota_label(rows[i].quota_ms, false);
		g_autofree char *csv_quota = quota_label(rows[i].quota_ms, true);
		const struct vr_sim_result *r = &jobs[i].result;
		const char *prio = rows[i].prioritization ? "Y" : "N";

		print_table_row(quota, prio, r);
		g_string_append_printf(csv, "%s,%s,%.2f,%.2f,%.2f\n", csv_quota, prio,
				       r->memory_saving_pct, r->reclaimer_cpu_pct, r->slowdown_pct);
	}
	g_print("(memory saved: time-averaged, over the workload's memory; reclaimer CPU: engine "
		"(measured) + pageout (modeled), over one CPU; slowdown: refault penalties over "
		"the simulated time)\n");
	g_print("\n%s", csv->str);
	print_goals(jobs);

	g_print("\npublished (DAMON_RECLAIM, 24 PARSEC3/SPLASH-2X workloads, 130 GiB VM, zram) "
		"next to the measured, percent:\n");
	g_print("%-16s %-14s %17s %17s %17s\n", "quota", "prioritization", "saving pub/ours",
		"cpu pub/ours", "slowdown pub/ours");
	for (size_t i = 0; i < nr; i++) {
		g_autofree char *quota = quota_label(rows[i].quota_ms, false);
		const struct vr_sim_result *r = &jobs[i].result;
		g_autofree char *a =
			g_strdup_printf("%.2f / %.2f", published[i][0], r->memory_saving_pct);
		g_autofree char *b =
			g_strdup_printf("%.2f / %.2f", published[i][1], r->reclaimer_cpu_pct);
		g_autofree char *c =
			g_strdup_printf("%.2f / %.2f", published[i][2], r->slowdown_pct);

		g_print("%-16s %-14s %17s %17s %17s\n", quota, rows[i].prioritization ? "Y" : "N",
			a, b, c);
	}
}

static int run_matrix(const struct options *o, const struct vr_sim_run_config *cfg,
		      const struct vr_policy *policy)
{
	size_t nr;
	const struct vr_sim_matrix_row *rows = vr_sim_matrix_rows(&nr);
	g_autofree struct job *jobs = g_new0(struct job, nr);
	g_autoptr(GString) csv = g_string_new(CSV_HEADER "\n");
	g_autoptr(GError) error = NULL;
	int ret = VRCTL_EXIT_OK;

	G_STATIC_ASSERT(G_N_ELEMENTS(published) == 7);
	g_assert(nr == G_N_ELEMENTS(published));
	for (size_t i = 0; i < nr; i++)
		jobs[i] = (struct job){ .cfg = *cfg, .policy = policy, .row = &rows[i] };
	jobs_run(jobs, nr);
	for (size_t i = 0; i < nr && ret == VRCTL_EXIT_OK; i++) {
		if (jobs[i].error) {
			g_printerr("vreclaimctl: simulate: %s\n", jobs[i].error->message);
			ret = VRCTL_EXIT_ERROR;
		}
	}
	if (ret == VRCTL_EXIT_OK) {
		print_matrix(o, policy, rows, jobs, nr, csv);
		if (o->csv && !write_csv(o->csv, csv->str, &error)) {
			g_printerr("vreclaimctl: %s\n", error->message);
			ret = VRCTL_EXIT_ERROR;
		}
	}
	for (size_t i = 0; i < nr; i++)
		job_clear(&jobs[i]);
	return ret;
}

static int run_single(const struct options *o, const struct vr_sim_run_config *cfg,
		      const struct vr_policy *policy)
{
	struct job job = { .cfg = *cfg, .policy = policy };
	g_autofree char *quota = NULL, *prio = NULL;
	const struct vr_sim_result *r = &job.result;
	int ret = VRCTL_EXIT_OK;

	job_run(&job);
	if (job.error) {
		g_printerr("vreclaimctl: simulate: %s\n", job.error->message);
		job_clear(&job);
		return VRCTL_EXIT_ERROR;
	}
	print_header(o, policy, r);
	g_print("\n");
	policy_labels(policy, &quota, &prio);
	print_table_head();
	print_table_row(quota, prio, r);
	g_print("\nmemory saved %.3f GiB on average of %.2f GiB; %" G_GUINT64_FORMAT
		" refaults cost the workload %.3f s of %.4g s; pageout %.3f s (modeled), engine "
		"%.3f s (measured)\n",
		r->memory_saving_pct / 100 * (double)r->workload_bytes / GIB,
		(double)r->workload_bytes / GIB, r->reclaim.refaults,
		(double)r->reclaim.refault_penalty_us / US_PER_S, (double)r->duration_us / US_PER_S,
		(double)r->reclaim.actuator_ns / 1e9, (double)r->engine_cpu_ns / 1e9);
	print_schemes(&job);
	job_clear(&job);
	return ret;
}

/* ---- the command ---- */

static struct vr_policy *load_policy(const char *path, GError **error)
{
	g_autofree char *text = NULL;
	gsize len;

	if (!path)
		return vr_policy_new_profile(NULL, error);
	text = vr_user_file_read(path, VR_USER_FILE_POLICY_MAX_BYTES, &len, error);
	if (!text)
		return NULL;
	return vr_policy_parse(text, (gssize)len, error);
}

/*
 * Does --workload @arg name a workload file? A built-in name never does
 * (write ./NAME for a file of that name); otherwise an existing file, or an
 * argument with a '/' or ending in .json (so a missing file says so).
 */
static gboolean is_workload_file(const char *arg)
{
	if (g_strv_contains(vr_sim_builtin_names(), arg))
		return FALSE;
	return strchr(arg, '/') || g_str_has_suffix(arg, ".json") ||
	       g_file_test(arg, G_FILE_TEST_EXISTS);
}

/*
 * The workload file @path's text, checked on a guest of @size_bytes: the run
 * loads it again (vr_sim_run_config.workload_json), so its errors come out
 * here, at the edge, naming the file.
 */
static char *load_workload_file(const char *path, uint64_t size_bytes, uint64_t seed,
				GError **error)
{
	g_autofree char *text = NULL;
	g_autoptr(vr_sim) sim = NULL;
	gsize len;

	text = vr_user_file_read(path, VR_USER_FILE_WORKLOAD_MAX_BYTES, &len, error);
	if (!text)
		return NULL;
	if (strlen(text) != len) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "the file contains a NUL character");
		return NULL;
	}
	sim = vr_sim_new(size_bytes, seed, error);
	if (!sim || !vr_sim_load_json(sim, text, (gssize)len, error))
		return NULL;
	return g_steal_pointer(&text);
}

static gboolean usage_error(GOptionContext *octx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean usage_error(GOptionContext *octx, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *msg = NULL;
	g_autofree char *help = g_option_context_get_help(octx, TRUE, NULL);

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_printerr("error: %s\n%s", msg, help);
	return FALSE;
}

static gboolean check_options(GOptionContext *octx, const struct options *o, int argc, char **argv)
{
	if (argc > 1)
		return usage_error(octx, "unexpected argument '%s'", argv[1]);
	if (!o->workload_file && !g_strv_contains(vr_sim_builtin_names(), o->workload)) {
		g_autofree char *names = g_strjoinv(", ", (char **)vr_sim_builtin_names());

		return usage_error(octx,
				   "--workload: unknown workload '%s' (built-in: %s; or a workload "
				   "file, docs/simulate.md)",
				   o->workload, names);
	}
	if (!(o->size_gib > 0 && o->size_gib <= SIM_MAX_SIZE_GIB))
		return usage_error(octx,
				   "--size-gib: expected a positive size of at most %d GiB (the "
				   "simulation keeps state for every page of the guest), got %g",
				   SIM_MAX_SIZE_GIB, o->size_gib);
	if (!(o->seconds > 0 && o->seconds <= 1e7))
		return usage_error(octx, "--seconds: expected a positive duration, got %g",
				   o->seconds);
	if (!(o->phase_s > 0 && o->phase_s <= 1e7))
		return usage_error(octx, "--phase-s: expected a positive duration, got %g",
				   o->phase_s);
	if (o->seed < 0)
		return usage_error(octx, "--seed: expected a non-negative integer");
	if (o->refault_penalty_us < 0)
		return usage_error(octx, "--refault-penalty-us: expected a non-negative integer");
	if (!(o->pageout_gibps > 0 && o->pageout_gibps < 1e6))
		return usage_error(octx, "--pageout-gibps: expected a positive rate, got %g",
				   o->pageout_gibps);
	if (o->csv && !o->matrix)
		return usage_error(octx, "--csv needs --matrix");
	return TRUE;
}

int vrctl_simulate_main(int argc, char **argv)
{
	struct options o = {
		.size_gib = 8,
		.seconds = 300,
		.phase_s = 60,
		.seed = 1,
		.refault_penalty_us = VR_SIM_REFAULT_PENALTY_US_DEFAULT,
		.pageout_gibps = (double)VR_SIM_PAGEOUT_BPS_DEFAULT / GIB,
	};
	GOptionEntry entries[] = {
		{ "policy", 0, 0, G_OPTION_ARG_FILENAME, &o.policy,
		  "Policy file (JSON, docs/policy.md); default: the default profile", "FILE" },
		{ "workload", 0, 0, G_OPTION_ARG_STRING, &o.workload,
		  "Built-in workload script (default matrix), or a workload file (JSON, "
		  "docs/simulate.md)",
		  "NAME|FILE" },
		{ "size-gib", 0, 0, G_OPTION_ARG_DOUBLE, &o.size_gib,
		  "Simulated guest size in GiB (default 8)", "GIB" },
		{ "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o.seconds,
		  "Simulated time in seconds (default 300)", "S" },
		{ "phase-s", 0, 0, G_OPTION_ARG_DOUBLE, &o.phase_s,
		  "Length of each phase of a built-in workload in seconds (default 60)", "S" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &o.seed, "Seed (default 1)", "N" },
		{ "matrix", 0, 0, G_OPTION_ARG_NONE, &o.matrix,
		  "Run the published table's seven rows (quota x prioritization)", NULL },
		{ "csv", 0, 0, G_OPTION_ARG_FILENAME, &o.csv, "With --matrix: write the CSV here",
		  "FILE" },
		{ "refault-penalty-us", 0, 0, G_OPTION_ARG_INT64, &o.refault_penalty_us,
		  "Cost of a refault to the workload in us (default 50: a zram swap-in)", "US" },
		{ "pageout-gibps", 0, 0, G_OPTION_ARG_DOUBLE, &o.pageout_gibps,
		  "Modeled pageout throughput in GiB/s (default 1: zram-like)", "GIBPS" },
		{ NULL },
	};
	g_autoptr(GOptionContext)
		octx = g_option_context_new("- run a policy against a simulated guest");
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) policy = NULL;
	g_autofree char *workload_json = NULL;
	struct vr_sim_run_config cfg = VR_SIM_RUN_CONFIG_DEFAULT;
	int ret;

	g_set_prgname("vreclaimctl simulate");
	g_option_context_add_main_entries(octx, entries, NULL);
	g_option_context_set_description(
		octx, "Prints memory saving, reclaimer CPU and workload slowdown, the published "
		      "DAMON_RECLAIM table's columns.\nSee docs/simulate.md.\n");
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		usage_error(octx, "%s", error->message);
		options_clear(&o);
		return VRCTL_EXIT_USAGE;
	}
	if (!o.workload)
		o.workload = g_strdup("matrix");
	o.workload_file = is_workload_file(o.workload);
	if (!check_options(octx, &o, argc, argv)) {
		options_clear(&o);
		return VRCTL_EXIT_USAGE;
	}
	policy = load_policy(o.policy, &error);
	if (!policy) {
		g_printerr("vreclaimctl: %s: %s\n", o.policy ? o.policy : "default policy",
			   error->message);
		options_clear(&o);
		return VRCTL_EXIT_ERROR;
	}

	cfg.size_bytes = (uint64_t)(o.size_gib * GIB) / VR_PAGE_SIZE * VR_PAGE_SIZE;
	if (o.workload_file) {
		workload_json =
			load_workload_file(o.workload, cfg.size_bytes, (uint64_t)o.seed, &error);
		if (!workload_json) {
			g_printerr("vreclaimctl: %s: %s\n", o.workload, error->message);
			options_clear(&o);
			return VRCTL_EXIT_ERROR;
		}
	}
	cfg.workload = o.workload;
	cfg.workload_json = workload_json;
	cfg.phase_us = (uint64_t)llround(o.phase_s * US_PER_S);
	cfg.seed = (uint64_t)o.seed;
	cfg.duration_us = (uint64_t)llround(o.seconds * US_PER_S);
	cfg.reclaim.pageout_bps = (uint64_t)llround(o.pageout_gibps * GIB);
	cfg.reclaim.refault_penalty_us = (uint64_t)o.refault_penalty_us;
	cfg.cpu_clock = (struct vr_clock){ .now_ns = thread_cpu_ns };
	g_debug("guest %" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " us, policy %s",
		cfg.size_bytes, cfg.duration_us, policy->profile);

	ret = o.matrix ? run_matrix(&o, &cfg, policy) : run_single(&o, &cfg, policy);
	options_clear(&o);
	return ret;
}
