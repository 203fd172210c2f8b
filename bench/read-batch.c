/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * read-batch: what one tick's procfs reads cost the host daemon, io_uring
 * against pread(2) (kernel/read-batch.c).
 *
 * For N = 1, 8, 32 and 128 "domains" (child processes that sleep), a batch
 * holds each child's status, smaps_rollup and stat, plus the host's meminfo
 * and pressure/memory once: 3N + 2 files. Each method reads the batch
 * --rounds times; per round it reports wall-clock us, CPU us of the whole
 * process (io_uring's worker threads included) and system calls (as the
 * batch counts them: pread(2) or io_uring_enter(2)). After the rounds every
 * file's text is checked to parse. The children are stopped by pid.
 */
#define _GNU_SOURCE /* prctl() */

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "procfs-text.h"
#include "read-batch.h"

static const guint nr_domains[] = { 1, 8, 32, 128 };

/* The per-domain files, in the order they are added. */
static const char *const domain_files[] = { "status", "smaps_rollup", "stat" };

struct options {
	gint rounds;
	char *procfs;
	char *csv;
};

/**
 * struct result - one method at one size.
 * @wall_us:	 wall-clock time per round, us.
 * @cpu_us:	 CPU time of the process per round, us.
 * @syscalls:	 system calls per round.
 */
struct result {
	double wall_us;
	double cpu_us;
	double syscalls;
};

/* CPU time of the whole process (all its threads), seconds. */
static double process_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fork @n children that sleep until killed; their pids go to @pids. */
static gboolean start_children(guint n, GArray *pids, GError **error)
{
	for (guint i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
				    "fork failed after %u children: %s", i, g_strerror(errno));
			return FALSE;
		}
		if (pid == 0) {
			/* die with the benchmark, whatever happens to it */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		g_array_append_val(pids, pid);
	}
	return TRUE;
}

static void stop_children(GArray *pids)
{
	for (guint i = 0; i < pids->len; i++)
		kill(g_array_index(pids, pid_t, i), SIGKILL);
	for (guint i = 0; i < pids->len; i++)
		waitpid(g_array_index(pids, pid_t, i), NULL, 0);
	g_array_set_size(pids, 0);
}

/* A batch of the children's files and the host's two. */
static struct vr_read_batch *batch_new(const struct options *opt, gboolean use_uring, GArray *pids,
				       GError **error)
{
	g_autoptr(vr_read_batch) b = vr_read_batch_new(use_uring, error);
	g_autofree char *meminfo = g_build_filename(opt->procfs, "meminfo", NULL);
	g_autofree char *psi = g_build_filename(opt->procfs, "pressure", "memory", NULL);

	if (!b)
		return NULL;
	for (guint i = 0; i < pids->len; i++) {
		g_autofree char *pid = g_strdup_printf("%d", (int)g_array_index(pids, pid_t, i));

		for (guint j = 0; j < G_N_ELEMENTS(domain_files); j++) {
			g_autofree char *path =
				g_build_filename(opt->procfs, pid, domain_files[j], NULL);

			if (!vr_read_batch_add(b, path, error))
				return NULL;
		}
	}
	if (!vr_read_batch_add(b, meminfo, error) || !vr_read_batch_add(b, psi, error))
		return NULL;
	return g_steal_pointer(&b);
}

/* Every file of @b read and parsed in the last run. Ids are 1.. in the
 * order batch_new() added them. */
static gboolean check_texts(struct vr_read_batch *b, guint nr_children, GError **error)
{
	long ticks = sysconf(_SC_CLK_TCK);
	guint id = 1;

	for (guint i = 0; i < nr_children; i++, id += G_N_ELEMENTS(domain_files)) {
		struct vr_proc_status st;
		struct vr_smaps_rollup r;
		struct vr_proc_stat s;
		const GError *fe = NULL;

		for (guint j = 0; j < G_N_ELEMENTS(domain_files); j++) {
			if (!vr_read_batch_text(b, id + j, NULL, &fe)) {
				g_propagate_error(error, g_error_copy(fe));
				return FALSE;
			}
		}
		if (!vr_proc_status_parse(vr_read_batch_text(b, id, NULL, NULL),
					  vr_read_batch_path(b, id), &st, error) ||
		    !vr_smaps_rollup_parse(vr_read_batch_text(b, id + 1, NULL, NULL),
					   vr_read_batch_path(b, id + 1), &r, error) ||
		    !vr_proc_stat_parse(vr_read_batch_text(b, id + 2, NULL, NULL),
					vr_read_batch_path(b, id + 2), (uint64_t)ticks, &s, error))
			return FALSE;
	}
	for (guint j = 0; j < 2; j++, id++) {
		struct vr_meminfo m;
		struct vr_psi_memory p;
		const GError *fe = NULL;
		const char *text = vr_read_batch_text(b, id, NULL, &fe);

		if (!text) {
			g_propagate_error(error, g_error_copy(fe));
			return FALSE;
		}
		if (j == 0 ? !vr_meminfo_parse(text, &m, error) : !vr_psi_parse(text, &p, error)) {
			g_prefix_error(error, "%s: ", vr_read_batch_path(b, id));
			return FALSE;
		}
	}
	return TRUE;
}

static gboolean measure(const struct options *opt, gboolean use_uring, GArray *pids,
			struct result *res, GError **error)
{
	g_autoptr(vr_read_batch) b = batch_new(opt, use_uring, pids, error);
	struct vr_read_batch_stats before, after;
	gint64 wall;
	double cpu;

	if (!b)
		return FALSE;
	if (use_uring && !vr_read_batch_uses_uring(b)) {
		g_set_error_literal(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS,
				    "io_uring is not available on this machine");
		return FALSE;
	}
	/* one round to warm up (io_uring starts its worker threads) */
	if (!vr_read_batch_run(b, error))
		return FALSE;
	vr_read_batch_get_stats(b, &before);
	wall = g_get_monotonic_time();
	cpu = process_cpu_seconds();
	for (gint r = 0; r < opt->rounds; r++)
		if (!vr_read_batch_run(b, error))
			return FALSE;
	cpu = process_cpu_seconds() - cpu;
	wall = g_get_monotonic_time() - wall;
	vr_read_batch_get_stats(b, &after);
	if (!check_texts(b, pids->len, error))
		return FALSE;
	res->wall_us = (double)wall / opt->rounds;
	res->cpu_us = cpu * 1e6 / opt->rounds;
	res->syscalls = (double)(after.nr_syscalls - before.nr_syscalls) / opt->rounds;
	return TRUE;
}

static void print_row(FILE *csv, guint domains, guint files, const char *method, gint rounds,
		      const struct result *r)
{
	g_print("%8u %6u %-7s %14.1f %13.1f %18.2f\n", domains, files, method, r->wall_us,
		r->cpu_us, r->syscalls);
	if (csv)
		fprintf(csv, "%u,%u,%s,%d,%.2f,%.2f,%.3f\n", domains, files, method, rounds,
			r->wall_us, r->cpu_us, r->syscalls);
}

static gboolean run_size(const struct options *opt, guint n, FILE *csv, GError **error)
{
	g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
	struct result uring, plain;
	gboolean ok;

	ok = start_children(n, pids, error) && measure(opt, TRUE, pids, &uring, error) &&
	     measure(opt, FALSE, pids, &plain, error);
	stop_children(pids);
	if (!ok) {
		g_prefix_error(error, "%u domains: ", n);
		return FALSE;
	}
	print_row(csv, n, 3 * n + 2, "uring", opt->rounds, &uring);
	print_row(csv, n, 3 * n + 2, "pread", opt->rounds, &plain);
	return TRUE;
}

int main(int argc, char **argv)
{
	struct options opt = { .rounds = 200 };
	GOptionEntry entries[] = {
		{ "rounds", 0, 0, G_OPTION_ARG_INT, &opt.rounds,
		  "Timed rounds per method and size (default 200)", "R" },
		{ "procfs", 0, 0, G_OPTION_ARG_FILENAME, &opt.procfs,
		  "procfs mount point (default /proc)", "DIR" },
		{ "csv", 0, 0, G_OPTION_ARG_FILENAME, &opt.csv, "Write the CSV here", "FILE" },
		{ NULL },
	};
	g_autoptr(GOptionContext) octx = g_option_context_new("- procfs reads, io_uring vs pread");
	g_autoptr(GError) error = NULL;
	FILE *csv = NULL;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("read-batch: %s\n", error->message);
		return 2;
	}
	if (opt.rounds < 1) {
		g_printerr("read-batch: need --rounds >= 1\n");
		return 2;
	}
	if (!opt.procfs)
		opt.procfs = g_strdup("/proc");
	if (opt.csv) {
		csv = bench_csv_open(opt.csv,
				     "domains,files,method,rounds,wall_us_per_round,"
				     "cpu_us_per_round,syscalls_per_round",
				     &error);
		if (!csv) {
			g_printerr("read-batch: %s\n", error->message);
			return 1;
		}
	}
	g_print("read-batch: per domain status + smaps_rollup + stat, plus meminfo and "
		"pressure/memory; %d rounds each\n",
		opt.rounds);
	g_print("cpu = CPU time of the whole process (io_uring workers included); syscalls "
		"as the batch counts them\n\n");
	g_print("%8s %6s %-7s %14s %13s %18s\n", "domains", "files", "method", "wall_us/round",
		"cpu_us/round", "syscalls/round");
	for (guint i = 0; i < G_N_ELEMENTS(nr_domains); i++) {
		if (!run_size(&opt, nr_domains[i], csv, &error)) {
			g_printerr("read-batch: %s\n", error->message);
			if (csv)
				fclose(csv);
			return 1;
		}
	}
	if (csv && fclose(csv) != 0) {
		g_printerr("read-batch: writing %s failed\n", opt.csv);
		return 1;
	}
	g_free(opt.procfs);
	g_free(opt.csv);
	return 0;
}
