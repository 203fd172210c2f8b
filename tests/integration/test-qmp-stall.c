/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The real vreclaimd with two QEMUs given by --qmp, one of which stalls:
 * nothing that QEMU does may block the daemon's main loop.
 *
 * Each QEMU is tests/integration/fake-qemu (VR_FAKE_QEMU), a process on its
 * own QMP socket with a balloon and no agent; the daemon manages both with
 * the balloon action and asks each for query-balloon every tick (200 ms).
 * Once both are managed, the test makes one stall (its stall file: "never"
 * answers no command, "slow" answers a byte per second) and, for 4 s,
 * checks that `vreclaimctl status` (the real binary, VRECLAIMCTL) answers
 * within 1 s each time, that the stalled domain is shown degraded with the
 * reason within its 2 s deadline plus two ticks, in the status, the table
 * and the metrics, and that the other QEMU is still asked every tick. Then
 * the stall ends and the domain recovers.
 *
 * libvirt is the in-process test driver (test:///default): its domain is of
 * type test, never managed. Criterion re-executes the binary for each test:
 * parameter structs hold no pointers.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-fake-tree.h"
#include "control/control-client.h"
#include "test-fake-qemu.h"

/* How long the daemon gets to start and find its QEMUs, ms. */
#define DAEMON_WAIT_MS 10000
/* Between two polls, us. */
#define POLL_US (20 * 1000)
/* One control request's reply, ms: far beyond what the test allows. */
#define CALL_TIMEOUT_MS 10000
/* The longest `vreclaimctl status` may take while a QEMU stalls, ms. */
#define STATUS_MAX_MS 1000
/* How long a QEMU stalls while the test watches, ms. */
#define STALL_WATCH_MS 4000
/* The daemon's tick, ms, and its QMP deadline (VR_DOMAIN_QMP_TIMEOUT_MS). */
#define INTERVAL_MS	200
#define QMP_DEADLINE_MS 2000
/* When the stalled domain must show degraded at the latest, ms after the
 * stall began: its deadline, two ticks, and room for a loaded machine. */
#define DEGRADED_WITHIN_MS (QMP_DEADLINE_MS + 2 * INTERVAL_MS + 1000)

/**
 * struct fake - one fake QEMU.
 * @name, @uuid: what it says of itself.
 * @socket, @record, @stall: its QMP socket, record file and stall file.
 * @pid:	its process, 0 when none runs.
 */
struct fake {
	const char *name;
	const char *uuid;
	char *socket;
	char *record;
	char *stall;
	GPid pid;
};

static struct fake fakes[] = {
	{ .name = "stalls", .uuid = "1b2a3c4d-0000-4000-8000-000000000001" },
	{ .name = "serves", .uuid = "1b2a3c4d-0000-4000-8000-000000000002" },
};
#define STALLS (&fakes[0])
#define SERVES (&fakes[1])

static char *dir;
static char *config_path;
static char *socket_path;
static char *log_path;
static char *log_text;
static GPid daemon_pid;

static const char *daemon_log(void)
{
	g_clear_pointer(&log_text, g_free);
	if (!g_file_get_contents(log_path, &log_text, NULL, NULL))
		log_text = g_strdup("(no log)");
	return log_text;
}

static void start_fake(struct fake *f)
{
	g_autofree char *fake_log = g_build_filename(dir, "fake-qemu.log", NULL);
	const char *args[] = { "--socket", f->socket, "--name",	      f->name,	"--uuid", f->uuid,
			       "--record", f->record, "--stall-file", f->stall, NULL };

	f->pid = test_fake_qemu_start(args, fake_log);
}

/* How many times @f was sent @command so far. */
static guint fake_count(const struct fake *f, const char *command)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint n = 0;

	if (!g_file_get_contents(f->record, &text, NULL, NULL))
		return 0;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++)
		if (!strcmp(lines[i], command))
			n++;
	return n;
}

static void setup(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	dir = g_dir_make_tmp("vr-qmp-stall-XXXXXX", &error);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", error ? error->message : "?");
	config_path = g_build_filename(dir, "vreclaimd.conf", NULL);
	socket_path = g_build_filename(dir, "ctl.sock", NULL);
	log_path = g_build_filename(dir, "daemon.log", NULL);
	tree_mkdir(dir, "policies");
	for (guint i = 0; i < G_N_ELEMENTS(fakes); i++) {
		struct fake *f = &fakes[i];
		g_autofree char *sub = g_build_filename(dir, f->name, NULL);

		tree_mkdir(dir, f->name);
		f->socket = g_build_filename(sub, "qmp.sock", NULL);
		f->record = g_build_filename(sub, "commands.txt", NULL);
		f->stall = g_build_filename(sub, "stall", NULL);
	}
	text = g_strdup_printf("[daemon]\n"
			       "connect = test:///default\n"
			       "policy-dir = %s/policies\n"
			       "state-dir = %s/state\n"
			       "control-socket = %s\n"
			       "interval-ms = %d\n"
			       "[host]\n"
			       "watermark-metric = none\n"
			       "[fleet]\n"
			       "default-actions = balloon\n",
			       dir, dir, socket_path, INTERVAL_MS);
	tree_put(dir, "vreclaimd.conf", text);
}

static void teardown(void)
{
	test_stop_pid(&daemon_pid, SIGTERM);
	for (guint i = 0; i < G_N_ELEMENTS(fakes); i++) {
		test_stop_pid(&fakes[i].pid, SIGTERM);
		g_clear_pointer(&fakes[i].socket, g_free);
		g_clear_pointer(&fakes[i].record, g_free);
		g_clear_pointer(&fakes[i].stall, g_free);
	}
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
	g_clear_pointer(&config_path, g_free);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&log_path, g_free);
	g_clear_pointer(&log_text, g_free);
}

TestSuite(qmp_stall, .init = setup, .fini = teardown,
	  .description = "vreclaimd with one stalled QEMU among two");

/* The status's entry of @name (a copy), or FALSE when it lists none. */
static bool status_of(const char *name, struct vr_domain_status *out)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	cr_assert_not_null(c, "expected to reach the daemon: %s\nits log:\n%s", error->message,
			   daemon_log());
	cr_assert(vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, &error),
		  "expected a status: %s\nits log:\n%s", error ? error->message : "?",
		  daemon_log());
	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);
		if (!strcmp(st->name, name)) {
			*out = *st;
			return true;
		}
	}
	return false;
}

static void spawn_daemon(void)
{
	const char *binary = g_getenv("VRECLAIMD");
	g_autoptr(GError) error = NULL;
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	cr_assert_not_null(binary, "VRECLAIMD must name the vreclaimd binary");
	const char *argv[] = { binary,	       "--config", config_path,	   "--qmp",
			       STALLS->socket, "--qmp",	   SERVES->socket, NULL };
	cr_assert(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				test_child_setup, log_path, &daemon_pid, &error),
		  "cannot start vreclaimd: %s", error ? error->message : "?");
	/* Both QEMUs found, managed, and asked by the balloon action. */
	for (;;) {
		struct vr_domain_status a, b;
		g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, NULL);

		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		if (c && status_of(STALLS->name, &a) && status_of(SERVES->name, &b) && a.managed &&
		    b.managed && fake_count(STALLS, "query-balloon") >= 2 &&
		    fake_count(SERVES, "query-balloon") >= 2)
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected both fake QEMUs managed within %d ms; the log:\n%s",
			  DAEMON_WAIT_MS, daemon_log());
		g_usleep(POLL_US);
	}
}

/**
 * struct ctl_run - one run of vreclaimctl.
 * @out:	its stdout (owned).
 * @status:	its wait status.
 * @took_ms:	how long it took, ms.
 */
struct ctl_run {
	char *out;
	int status;
	gint64 took_ms;
};

/* Run `vreclaimctl --socket SOCK @args...`. */
static struct ctl_run ctl(const char *cmd, const char *opt)
{
	const char *binary = g_getenv("VRECLAIMCTL");
	const char *argv[] = { binary, "--socket", socket_path, cmd, opt, NULL };
	g_autoptr(GError) error = NULL;
	g_autofree char *err = NULL;
	struct ctl_run r = { 0 };
	gint64 t0 = g_get_monotonic_time();

	cr_assert_not_null(binary, "VRECLAIMCTL must name the vreclaimctl binary");
	cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &err,
			       &r.status, &error),
		  "cannot run vreclaimctl: %s", error ? error->message : "?");
	r.took_ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		  "vreclaimctl %s failed (wait status %#x): %s", cmd, r.status, err);
	return r;
}

/**
 * struct stall_case - how the QEMU stalls.
 * @mode:	what its stall file says: "never" or "slow".
 * @reason:	a fragment the degraded reason holds.
 */
struct stall_case {
	char mode[8];
	char reason[64];
};

static struct stall_case stall_cases[] = {
	{ "never", "within 2 s" },
	{ "slow", "within 2 s" },
};

ParameterizedTestParameters(qmp_stall, one_stalled_qemu_blocks_no_one)
{
	return cr_make_param_array(struct stall_case, stall_cases, G_N_ELEMENTS(stall_cases));
}

ParameterizedTest(struct stall_case *sc, qmp_stall, one_stalled_qemu_blocks_no_one)
{
	struct vr_domain_status st;
	gint64 t0, degraded_after_ms = -1, slowest_ms = 0;
	guint serves_before, serves_after, statuses = 0;

	for (guint i = 0; i < G_N_ELEMENTS(fakes); i++)
		start_fake(&fakes[i]);
	spawn_daemon();
	cr_assert(status_of(STALLS->name, &st) && !st.degraded,
		  "expected %s not degraded before it stalls, reason '%s'", STALLS->name,
		  st.degraded_reason);

	/* The stall begins: for STALL_WATCH_MS, vreclaimctl status keeps its
	 * latency and the other QEMU is asked every tick. */
	tree_put(dir, "stalls/stall", sc->mode);
	serves_before = fake_count(SERVES, "query-balloon");
	t0 = g_get_monotonic_time();
	while (g_get_monotonic_time() - t0 < STALL_WATCH_MS * 1000LL) {
		struct ctl_run r = ctl("status", "--json");

		slowest_ms = MAX(slowest_ms, r.took_ms);
		cr_assert_leq(r.took_ms, STATUS_MAX_MS,
			      "expected vreclaimctl status within %d ms while %s stalls, it took "
			      "%" G_GINT64_FORMAT " ms; the log:\n%s",
			      STATUS_MAX_MS, STALLS->name, r.took_ms, daemon_log());
		statuses++;
		if (degraded_after_ms < 0 && strstr(r.out, "\"degraded\": true"))
			degraded_after_ms = (g_get_monotonic_time() - t0) / 1000;
		g_free(r.out);
		g_usleep(100 * 1000);
	}
	serves_after = fake_count(SERVES, "query-balloon");
	cr_log_info("%s stall: %u status calls, the slowest %" G_GINT64_FORMAT
		    " ms; degraded after %" G_GINT64_FORMAT " ms; the other QEMU asked %u times "
		    "in %d ms",
		    sc->mode, statuses, slowest_ms, degraded_after_ms, serves_after - serves_before,
		    STALL_WATCH_MS);

	/* The other QEMU was served on time: a query every tick, give or take
	 * a loaded machine (half of them). */
	cr_assert_geq(serves_after - serves_before, STALL_WATCH_MS / INTERVAL_MS / 2,
		      "expected %s asked about every %d ms while %s stalls, it got %u "
		      "query-balloon in %d ms; the log:\n%s",
		      SERVES->name, INTERVAL_MS, STALLS->name, serves_after - serves_before,
		      STALL_WATCH_MS, daemon_log());
	cr_assert(degraded_after_ms >= 0 && degraded_after_ms <= DEGRADED_WITHIN_MS,
		  "expected %s degraded within %d ms of its stall, got %" G_GINT64_FORMAT
		  " ms; the log:\n%s",
		  STALLS->name, DEGRADED_WITHIN_MS, degraded_after_ms, daemon_log());

	/* The status says which and why, the table and the metrics too. */
	cr_assert(status_of(STALLS->name, &st), "expected %s listed", STALLS->name);
	cr_assert(st.degraded && st.managed, "expected %s managed and degraded", STALLS->name);
	cr_assert(strstr(st.degraded_reason, "the QEMU monitor did not") &&
			  strstr(st.degraded_reason, sc->reason),
		  "expected the reason to say QEMU did not answer %s, got '%s'", sc->reason,
		  st.degraded_reason);
	cr_assert(status_of(SERVES->name, &st) && !st.degraded,
		  "expected %s not degraded, reason '%s'", SERVES->name, st.degraded_reason);
	{
		struct ctl_run r = ctl("status", NULL);
		g_autofree char *row = g_strdup_printf(" %s ", STALLS->name);
		const char *line = strstr(r.out, row);

		cr_assert(line && strstr(line, "yes, degraded") &&
				  strstr(line, "the QEMU monitor did not"),
			  "expected the table to show %s degraded with the reason:\n%s",
			  STALLS->name, r.out);
		g_free(r.out);
	}
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
		g_autofree char *metrics = NULL;
		g_autofree char *stalled =
			g_strdup_printf("vreclaim_domain_degraded{domain=\"%s\"} 1", STALLS->name);
		g_autofree char *fine =
			g_strdup_printf("vreclaim_domain_degraded{domain=\"%s\"} 0", SERVES->name);

		cr_assert_not_null(c, "expected to reach the daemon: %s", error->message);
		metrics = vr_control_client_metrics(c, CALL_TIMEOUT_MS, &error);
		cr_assert_not_null(metrics, "expected the metrics: %s", error->message);
		cr_assert(strstr(metrics, stalled) && strstr(metrics, fine),
			  "expected the degraded gauge 1 for %s and 0 for %s in:\n%s", STALLS->name,
			  SERVES->name, metrics);
	}

	/* QEMU answers again: the domain recovers. */
	cr_assert_eq(unlink(STALLS->stall), 0, "unlink: %s", g_strerror(errno));
	t0 = g_get_monotonic_time();
	for (;;) {
		cr_assert(status_of(STALLS->name, &st), "expected %s still listed; the log:\n%s",
			  STALLS->name, daemon_log());
		if (!st.degraded)
			break;
		cr_assert(g_get_monotonic_time() - t0 < DAEMON_WAIT_MS * 1000LL,
			  "expected %s to recover within %d ms of its QEMU answering again, "
			  "still '%s'; the log:\n%s",
			  STALLS->name, DAEMON_WAIT_MS, st.degraded_reason, daemon_log());
		g_usleep(POLL_US);
	}
	cr_assert(strstr(daemon_log(), "the QEMU monitor answers again"),
		  "expected the recovery logged; the log:\n%s", daemon_log());
	cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "expected vreclaimd running");
}
