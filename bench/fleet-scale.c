/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fleet-scale: what the real vreclaimd costs per managed domain, at 10, 100
 * and 1000 simulated domains (--domains).
 *
 * Each fleet is one tests/integration/fake-qemu process (--fake-qemu) that
 * plays every domain: a QMP socket and an agent socket per domain, the agent
 * answering get-cold-histogram with the histogram of a picture of --regions
 * regions (get-regions with the whole picture with --pictures, as agents
 * before the cold-histogram capability), reports at the
 * interval set-policy asks (every tick up to 100 domains). vreclaimd (--vreclaimd) gets one --qmp per domain, a config with the
 * host always needing memory (watermark-metric none: shares go out, the
 * whole decide path runs) and --interval-ms. Once every domain is managed,
 * its agent connected and asked for its picture, the bench waits --warmup
 * ticks, then reads vreclaimd's CPU time (utime + stime of /proc/PID/stat,
 * every thread) and resident size over --ticks ticks. It also counts the
 * get-regions the fleet answered in that window, per domain per tick: 1
 * means vreclaimd kept up with every domain every tick.
 *
 * The figures need a quiet machine: run it alone (other load steals the
 * CPU it measures and delays the ticks). A fleet of 1000 takes about 4000
 * file descriptors in the fake and 3000 in vreclaimd: the bench raises
 * RLIMIT_NOFILE (soft and hard: root) for both, which inherit it.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"
#include "control/control-client.h"

/* How long a fleet gets to come up: every domain managed and asked, ms per
 * domain, plus a floor. */
#define UP_MS_PER_DOMAIN 50
#define UP_MIN_MS	 20000

/* One control request, ms. */
#define CALL_TIMEOUT_MS 30000

struct options {
	char *domains;
	gint interval_ms;
	gint warmup;
	gint ticks;
	gint regions;
	char *vreclaimd;
	char *fake_qemu;
	char *csv;
	gboolean keep;
	gboolean pictures;
	char *state_parent;
};

/**
 * struct result - one fleet's figures.
 * @domains:		its size.
 * @up_s:		from vreclaimd's start to every domain served, s.
 * @window_s:		the measured window, s (wall clock).
 * @cpu_s:		vreclaimd's CPU time in the window, s.
 * @cpu_pct:		of one CPU: @cpu_s / @window_s * 100.
 * @cpu_pct_domain:	@cpu_pct per domain.
 * @us_domain_tick:	CPU us per domain per tick.
 * @rss_kib, @rss_kib_domain: vreclaimd's resident size at the end, and per
 *			domain.
 * @threads:		vreclaimd's threads at the end.
 * @regions_per_tick:	get-regions answered per domain per tick.
 * @ticks_ratio:	ticks vreclaimd ran in the window per tick due (1: it
 *			kept its interval).
 * @fake_cpu_pct:	the fake fleet's CPU, % of one CPU (the other side of
 *			every socket; on 2 cores it competes with vreclaimd).
 */
struct result {
	guint domains;
	double up_s;
	double window_s;
	double cpu_s;
	double cpu_pct;
	double cpu_pct_domain;
	double us_domain_tick;
	uint64_t rss_kib;
	double rss_kib_domain;
	guint threads;
	double regions_per_tick;
	double ticks_ratio;
	double fake_cpu_pct;
};

/**
 * struct fleet - one run's processes and files.
 * @dir:	its temporary folder (owned).
 * @fake, @daemon: their processes, 0 when none runs.
 */
struct fleet {
	char *dir;
	char *state_dir;
	GPid fake;
	GPid daemon;
};

/* In vreclaimd: its output to its log; it dies with the bench. */
static void child_setup(gpointer data)
{
	int fd = open(data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* In the fake: only its stderr to the log (its stdout says "ready"). */
static void fake_setup(gpointer data)
{
	int fd = open(data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0)
		dup2(fd, STDERR_FILENO);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void stop(GPid *pid, int sig)
{
	if (*pid <= 0)
		return;
	kill(*pid, sig);
	for (int i = 0; i < 500; i++) {
		if (waitpid(*pid, NULL, WNOHANG) == *pid)
			goto reaped;
		g_usleep(10000);
	}
	kill(*pid, SIGKILL);
	waitpid(*pid, NULL, 0);
reaped:
	g_spawn_close_pid(*pid);
	*pid = 0;
}

static void remove_tree(char **dir, gboolean keep)
{
	if (*dir && !keep) {
		const char *argv[] = { "rm", "-rf", "--one-file-system", *dir, NULL };

		g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
			     NULL, NULL);
	} else if (*dir) {
		g_print("  (kept %s)\n", *dir);
	}
	g_clear_pointer(dir, g_free);
}

static void fleet_clear(struct fleet *f, gboolean keep)
{
	stop(&f->daemon, SIGTERM);
	stop(&f->fake, SIGKILL);
	remove_tree(&f->state_dir, keep);
	remove_tree(&f->dir, keep);
}

/* RLIMIT_NOFILE, soft and hard, to at least @need: the children inherit it. */
static gboolean raise_nofile(rlim_t need, GError **error)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
		return TRUE;
	rl.rlim_cur = need;
	rl.rlim_max = MAX(rl.rlim_max, need);
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
			    "a fleet needs %llu file descriptors and RLIMIT_NOFILE cannot be "
			    "raised that far (%s): run as root or raise the hard limit",
			    (unsigned long long)need, g_strerror(errno));
		return FALSE;
	}
	return TRUE;
}

/* A number from the fake's --stats file, or 0. */
static uint64_t fake_stat(const struct fleet *f, const char *name)
{
	g_autofree char *path = g_build_filename(f->dir, "fake-stats", NULL);
	g_autofree char *text = NULL;
	g_autofree char *key = g_strdup_printf("\n%s ", name);
	g_autofree char *all = NULL;
	const char *p;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	all = g_strconcat("\n", text, NULL);
	p = strstr(all, key);
	return p ? g_ascii_strtoull(p + strlen(key), NULL, 10) : 0;
}

/* vreclaimd's CPU time (utime + stime), s, and threads, from /proc/PID/stat. */
static gboolean proc_cpu(GPid pid, double *cpu_s, guint *threads, GError **error)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
	g_autofree char *text = NULL;
	g_auto(GStrv) f = NULL;
	const char *p;

	if (!g_file_get_contents(path, &text, NULL, error))
		return FALSE;
	/* Fields after the command's ")": state is field 3; utime 14, stime 15,
	 * num_threads 20. */
	p = strrchr(text, ')');
	if (!p) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: no ')'", path);
		return FALSE;
	}
	f = g_strsplit(p + 2, " ", -1);
	if (g_strv_length(f) < 18) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: too few fields", path);
		return FALSE;
	}
	*cpu_s = (double)(g_ascii_strtoull(f[11], NULL, 10) + g_ascii_strtoull(f[12], NULL, 10)) /
		 (double)sysconf(_SC_CLK_TCK);
	*threads = (guint)g_ascii_strtoull(f[17], NULL, 10);
	return TRUE;
}

static uint64_t proc_rss_kib(GPid pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
	g_autofree char *text = NULL;
	const char *p;

	if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strstr(text, "VmRSS:")))
		return 0;
	return g_ascii_strtoull(p + 6, NULL, 10);
}

static gboolean start_fake(const struct options *opt, struct fleet *f, guint n, GError **error)
{
	g_autofree char *fleet_dir = g_build_filename(f->dir, "fleet", NULL);
	g_autofree char *stats = g_build_filename(f->dir, "fake-stats", NULL);
	g_autofree char *log = g_build_filename(f->dir, "fake-qemu.log", NULL);
	g_autofree char *count = g_strdup_printf("%u", n);
	g_autofree char *regions = g_strdup_printf("%d", opt->regions);
	const char *argv[] = { opt->fake_qemu, "--fleet",   fleet_dir, "--count", count,
			       "--agent",      "--regions", regions,   "--stats", stats,
			       "--no-record",  NULL,	    NULL };
	char line[16] = "";
	gsize have = 0;
	int out = -1;

	if (opt->pictures)
		argv[G_N_ELEMENTS(argv) - 2] = "--no-cold-histogram";
	if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				      fake_setup, log, &f->fake, NULL, &out, NULL, error))
		return FALSE;
	while (have < sizeof(line) - 1 && !strchr(line, '\n')) {
		ssize_t r = read(out, line + have, sizeof(line) - 1 - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (gsize)r;
	}
	close(out);
	if (strcmp(line, "ready\n") != 0) {
		g_autofree char *text = NULL;

		g_file_get_contents(log, &text, NULL, NULL);
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
			    "fake-qemu did not come up: %s", text ? text : "(no output)");
		return FALSE;
	}
	return TRUE;
}

/* vreclaimd's state folder: a temporary folder in --state-parent (tmpfs, as
 * its default /run/vreclaim/state is), else in the fleet's folder. */
static gboolean make_state_dir(const struct options *opt, struct fleet *f, GError **error)
{
	g_autofree char *tmpl = NULL;

	if (!opt->state_parent || !*opt->state_parent) {
		f->state_dir = g_build_filename(f->dir, "state", NULL);
		return TRUE;
	}
	tmpl = g_build_filename(opt->state_parent, "vr-fleet-state-XXXXXX", NULL);
	if (!g_mkdtemp_full(tmpl, 0700)) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
			    "--state-parent %s: cannot make a folder there: %s", opt->state_parent,
			    g_strerror(errno));
		return FALSE;
	}
	f->state_dir = g_steal_pointer(&tmpl);
	return TRUE;
}

static gboolean start_daemon(const struct options *opt, struct fleet *f, guint n, GError **error)
{
	g_autofree char *config = g_build_filename(f->dir, "vreclaimd.conf", NULL);
	g_autofree char *policies = g_build_filename(f->dir, "policies", NULL);
	g_autofree char *ctl = g_build_filename(f->dir, "ctl.sock", NULL);
	g_autofree char *log = g_build_filename(f->dir, "vreclaimd.log", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);

	if (g_mkdir_with_parents(policies, 0700) < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno), "%s: %s", policies,
			    g_strerror(errno));
		return FALSE;
	}
	text = g_strdup_printf("[daemon]\n"
			       "connect = test:///default\n"
			       "policy-dir = %s\n"
			       "state-dir = %s\n"
			       "control-socket = %s\n"
			       "interval-ms = %d\n"
			       "[host]\n"
			       "watermark-metric = none\n",
			       policies, f->state_dir, ctl, opt->interval_ms);
	if (!g_file_set_contents(config, text, -1, error))
		return FALSE;
	g_ptr_array_add(argv, g_strdup(opt->vreclaimd));
	g_ptr_array_add(argv, g_strdup("--config"));
	g_ptr_array_add(argv, g_strdup(config));
	for (guint i = 0; i < n; i++) {
		g_ptr_array_add(argv, g_strdup("--qmp"));
		g_ptr_array_add(argv, g_strdup_printf("%s/fleet/fleet-%04u/qmp.sock", f->dir, i));
	}
	g_ptr_array_add(argv, NULL);
	return g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
			     child_setup, log, &f->daemon, error);
}

/* The daemon's tick count, 0 when it does not answer. */
static uint64_t daemon_ticks(const struct fleet *f)
{
	g_autofree char *ctl = g_build_filename(f->dir, "ctl.sock", NULL);
	g_autoptr(vr_control_client) c = vr_control_client_connect(ctl, NULL);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	if (!c || !vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, NULL))
		return 0;
	return d.ticks;
}

/* How many domains the daemon manages with their agent connected. */
static guint served(const struct fleet *f, GError **error)
{
	g_autofree char *ctl = g_build_filename(f->dir, "ctl.sock", NULL);
	g_autoptr(vr_control_client) c = vr_control_client_connect(ctl, NULL);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;
	guint n = 0;

	if (!c || !vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, error))
		return 0;
	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);

		n += st->managed && st->agent_state == VR_AGENT_STATE_CONNECTED;
	}
	return n;
}

static gboolean run_fleet(const struct options *opt, guint n, struct result *res, GError **error)
{
	struct fleet f = { 0 };
	gint64 t0, deadline, w0, w1;
	double cpu0, cpu1, fake0, fake1;
	uint64_t regions0, regions1, ticks0, ticks1;
	guint threads, fake_threads;
	gboolean ok = FALSE;

	memset(res, 0, sizeof(*res));
	res->domains = n;
	f.dir = g_dir_make_tmp("vr-fleet-scale-XXXXXX", error);
	if (f.dir && !make_state_dir(opt, &f, error))
		goto out;
	if (!f.dir || !start_fake(opt, &f, n, error) || !start_daemon(opt, &f, n, error))
		goto out;
	t0 = g_get_monotonic_time();
	deadline = t0 + (gint64)MAX(UP_MIN_MS, UP_MS_PER_DOMAIN * n) * 1000;
	for (;;) {
		g_autoptr(GError) err = NULL;

		if (waitpid(f.daemon, NULL, WNOHANG) == f.daemon) {
			f.daemon = 0;
			g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
				    "vreclaimd exited; see %s/vreclaimd.log (--keep)", f.dir);
			goto out;
		}
		if (served(&f, &err) == n && fake_stat(&f, "domains-with-regions") == n)
			break;
		if (g_get_monotonic_time() > deadline) {
			g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
				    "%u domains not all served within %d s (%u managed with their "
				    "agent, %" G_GUINT64_FORMAT " asked for regions)",
				    n, (int)((deadline - t0) / G_USEC_PER_SEC), served(&f, NULL),
				    fake_stat(&f, "domains-with-regions"));
			goto out;
		}
		g_usleep(200 * 1000);
	}
	res->up_s = (double)(g_get_monotonic_time() - t0) / G_USEC_PER_SEC;
	g_usleep((gulong)opt->warmup * (gulong)opt->interval_ms * 1000);
	/* The fake writes its counters every second: the window is read at
	 * fresh ones. */
	g_usleep(1100 * 1000);
	regions0 = (fake_stat(&f, "agent:get-regions") + fake_stat(&f, "agent:get-cold-histogram"));
	ticks0 = daemon_ticks(&f);
	w0 = g_get_monotonic_time();
	if (!proc_cpu(f.daemon, &cpu0, &threads, error) ||
	    !proc_cpu(f.fake, &fake0, &fake_threads, error))
		goto out;
	g_usleep((gulong)opt->ticks * (gulong)opt->interval_ms * 1000);
	if (!proc_cpu(f.daemon, &cpu1, &threads, error) ||
	    !proc_cpu(f.fake, &fake1, &fake_threads, error))
		goto out;
	w1 = g_get_monotonic_time();
	ticks1 = daemon_ticks(&f);
	res->rss_kib = proc_rss_kib(f.daemon);
	g_usleep(1100 * 1000);
	regions1 = (fake_stat(&f, "agent:get-regions") + fake_stat(&f, "agent:get-cold-histogram"));
	res->window_s = (double)(w1 - w0) / G_USEC_PER_SEC;
	res->cpu_s = cpu1 - cpu0;
	res->cpu_pct = res->cpu_s / res->window_s * 100;
	res->cpu_pct_domain = res->cpu_pct / n;
	res->us_domain_tick = res->cpu_s * 1e6 / ((double)n * opt->ticks);
	res->rss_kib_domain = (double)res->rss_kib / n;
	res->threads = threads;
	/* The counters' window is the CPU one shifted by up to a second. */
	res->regions_per_tick = (double)(regions1 - regions0) / ((double)n * opt->ticks);
	res->ticks_ratio = (double)(ticks1 - ticks0) / (res->window_s * 1000 / opt->interval_ms);
	res->fake_cpu_pct = (fake1 - fake0) / res->window_s * 100;
	ok = TRUE;
out:
	fleet_clear(&f, opt->keep);
	return ok;
}

static void print_row(FILE *csv, const struct result *r)
{
	g_print("%7u %6.1f %8.3f %8.3f %10.4f %12.1f %9.1f %10.1f %7u %12.2f %6.2f %7.1f\n",
		r->domains, r->up_s, r->cpu_s, r->cpu_pct, r->cpu_pct_domain, r->us_domain_tick,
		(double)r->rss_kib / 1024, r->rss_kib_domain, r->threads, r->regions_per_tick,
		r->ticks_ratio, r->fake_cpu_pct);
	if (csv)
		fprintf(csv,
			"%u,%.2f,%.3f,%.4f,%.3f,%.5f,%.2f,%" G_GUINT64_FORMAT
			",%.2f,%u,%.3f,%.3f,%.3f\n",
			r->domains, r->up_s, r->window_s, r->cpu_s, r->cpu_pct, r->cpu_pct_domain,
			r->us_domain_tick, r->rss_kib, r->rss_kib_domain, r->threads,
			r->regions_per_tick, r->ticks_ratio, r->fake_cpu_pct);
}

int main(int argc, char **argv)
{
	struct options opt = {
		.interval_ms = 1000,
		.warmup = 5,
		.ticks = 30,
		.regions = 300,
	};
	GOptionEntry entries[] = {
		{ "domains", 0, 0, G_OPTION_ARG_STRING, &opt.domains,
		  "fleet sizes, comma-separated (default 10,100,1000)", "N,..." },
		{ "interval-ms", 0, 0, G_OPTION_ARG_INT, &opt.interval_ms,
		  "vreclaimd's tick, ms (default 1000, its default)", "MS" },
		{ "warmup", 0, 0, G_OPTION_ARG_INT, &opt.warmup,
		  "ticks after every domain is served before measuring (default 5)", "N" },
		{ "ticks", 0, 0, G_OPTION_ARG_INT, &opt.ticks, "ticks measured (default 30)", "N" },
		{ "regions", 0, 0, G_OPTION_ARG_INT, &opt.regions,
		  "regions in each agent's picture (default 300)", "N" },
		{ "vreclaimd", 0, 0, G_OPTION_ARG_FILENAME, &opt.vreclaimd, "the vreclaimd binary",
		  "PATH" },
		{ "fake-qemu", 0, 0, G_OPTION_ARG_FILENAME, &opt.fake_qemu,
		  "the fake-qemu binary (tests/integration/fake-qemu.c)", "PATH" },
		{ "csv", 0, 0, G_OPTION_ARG_FILENAME, &opt.csv, "write the results here", "FILE" },
		{ "pictures", 0, 0, G_OPTION_ARG_NONE, &opt.pictures,
		  "agents without the cold-histogram capability: whole pictures (get-regions), as "
		  "before it",
		  NULL },
		{ "state-parent", 0, 0, G_OPTION_ARG_FILENAME, &opt.state_parent,
		  "make vreclaimd's state folder in DIR, '' for the fleet's own folder (default "
		  "/dev/shm when it is a folder: tmpfs, as the default state-dir under /run)",
		  "DIR" },
		{ "keep", 0, 0, G_OPTION_ARG_NONE, &opt.keep,
		  "keep each fleet's folder (logs, config)", NULL },
		{ NULL, 0, 0, 0, NULL, NULL, NULL },
	};
	g_autoptr(GOptionContext) octx = g_option_context_new("- vreclaimd's cost per domain");
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) sizes = NULL;
	g_autoptr(GArray) results = g_array_new(FALSE, TRUE, sizeof(struct result));
	FILE *csv = NULL;
	guint largest = 0;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("fleet-scale: %s\n", error->message);
		return 2;
	}
	if (!opt.vreclaimd || !opt.fake_qemu) {
		g_printerr("fleet-scale: --vreclaimd and --fake-qemu are needed (make bench-fleet "
			   "gives them)\n");
		return 2;
	}
	if (opt.interval_ms < 100 || opt.warmup < 0 || opt.ticks < 1 || opt.regions < 1 ||
	    opt.regions > 512) {
		g_printerr("fleet-scale: need --interval-ms >= 100, --warmup >= 0, --ticks >= 1, "
			   "--regions 1..512\n");
		return 2;
	}
	if (!opt.state_parent && g_file_test("/dev/shm", G_FILE_TEST_IS_DIR))
		opt.state_parent = g_strdup("/dev/shm");
	sizes = g_strsplit(opt.domains ? opt.domains : "10,100,1000", ",", -1);
	for (guint i = 0; sizes[i]; i++) {
		guint64 n = 0;

		if (!g_ascii_string_to_unsigned(sizes[i], 10, 1, 10000, &n, NULL)) {
			g_printerr("fleet-scale: --domains: '%s' is not a number from 1 to 10000\n",
				   sizes[i]);
			return 2;
		}
		largest = MAX(largest, (guint)n);
	}
	/* The fake: 4 a domain; vreclaimd: 3 a domain; both with room. */
	if (!raise_nofile((rlim_t)largest * 5 + 1024, &error)) {
		g_printerr("fleet-scale: %s\n", error->message);
		return 1;
	}
	if (opt.csv) {
		csv = bench_csv_open(opt.csv,
				     "domains,up_s,window_s,cpu_s,cpu_pct,cpu_pct_per_domain,"
				     "cpu_us_per_domain_tick,rss_kib,rss_kib_per_domain,threads,"
				     "get_regions_per_domain_tick,ticks_ratio,fake_cpu_pct",
				     &error);
		if (!csv) {
			g_printerr("fleet-scale: %s\n", error->message);
			return 1;
		}
	}
	g_print("fleet-scale: vreclaimd managing fake QEMUs with agents (--qmp), tick %d ms, %d "
		"warm-up ticks, %d measured, %d regions a picture\n",
		opt.interval_ms, opt.warmup, opt.ticks, opt.regions);
	g_print("state files in %s\n", opt.state_parent && *opt.state_parent ?
					       opt.state_parent :
					       "each fleet's temporary folder");
	g_print("cpu = utime + stime of every vreclaimd thread over the window; run it alone\n\n");
	g_print("%7s %6s %8s %8s %10s %12s %9s %10s %7s %12s %6s %7s\n", "domains", "up_s", "cpu_s",
		"cpu_%", "%/domain", "us/dom/tick", "rss_mib", "kib/domain", "threads",
		"regions/tick", "ticks", "fake_%");
	for (guint i = 0; sizes[i]; i++) {
		struct result r;

		if (!run_fleet(&opt, (guint)g_ascii_strtoull(sizes[i], NULL, 10), &r, &error)) {
			g_printerr("fleet-scale: %s domains: %s\n", sizes[i], error->message);
			return 1;
		}
		print_row(csv, &r);
		g_array_append_val(results, r);
	}
	g_print("\ngoals (issue 16):\n");
	for (guint i = 0; i < results->len; i++) {
		const struct result *r = &g_array_index(results, struct result, i);

		if (r->domains == 100)
			g_print("  100 domains: %.4f%% of one CPU per domain (goal < 0.1%%): %s\n",
				r->cpu_pct_domain, r->cpu_pct_domain < 0.1 ? "met" : "MISSED");
		if (r->domains == 1000)
			g_print("  1000 domains: %.3f%% of one CPU in total (goal <= 2%%): %s\n",
				r->cpu_pct, r->cpu_pct <= 2 ? "met" : "MISSED");
	}
	if (csv && fclose(csv) != 0) {
		g_printerr("fleet-scale: writing %s failed\n", opt.csv);
		return 1;
	}
	return 0;
}
