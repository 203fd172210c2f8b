/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Faults of the host side, with fake peers (fast and deterministic): the
 * real vreclaimd with one QEMU given by --qmp, played by
 * tests/integration/fake-qemu (VR_FAKE_QEMU) with its agent port (--agent),
 * whose agent reports 1 MiB more reclaimed every 200 ms while its policy
 * holds a share, and records each policy and report with the time
 * (--report-ms 200 --applied-kib-per-report 1024 --agent-record), and
 * releases as much of its 128 MiB resident (--resident-mib): the host
 * offers its share against that resident size and its fleet credit (on by
 * default) sees the claimed reclaim given back.
 *
 * Suite restart: vreclaimd is SIGKILLed and started again on its state
 * folder ([daemon] state-dir):
 * - the domain's statistics continue: `status` shows at least what it
 *   showed before the kill (no reset) and no more than the agent reclaimed
 *   in all (no doubling: the new daemon counts from the agent's counters as
 *   the old one saved them);
 * - a `vreclaimctl pause` holds across the restart;
 * - no double reclaim: a restarted daemon sends the agent no policy with a
 *   share before the quota window the previous one granted ends;
 * - a corrupt state file, and one of an earlier QEMU, are logged with the
 *   domain's name and ignored: the domain starts afresh, the daemon runs.
 *
 * Suite reboot: the agent starts over on the same connection, as after a
 * guest reboot (paused, its own policy): within a few ticks the daemon
 * resumes it and sends its policy again, and counts its new reclaim.
 *
 * Suite watermark: the host's free memory (a fake /proc/meminfo through the
 * daemon's hidden --procfs; the QEMU's own /proc entry is a symbolic link to
 * the real one) falls through the low watermark while the domain reclaims:
 * within one tick the agent gets a policy without a share (the 15 s that a
 * smaller share otherwise waits do not apply), and the status says the host
 * no longer needs memory.
 *
 * Suite watermark_real: the same with the machine's own /proc/meminfo (no
 * --procfs): watermarks reloaded by SIGHUP put its real free memory rate
 * below low (the agent gets a policy without a share within one tick;
 * status and metrics say below-low), back between low and mid (reclaim
 * resumes) and above high (stops again, saying above-high).
 *
 * Criterion re-executes the binary for each test: no pointers in
 * parameters.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>

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
#include "domain-state.h"
#include "test-fake-qemu.h"

/* How long the daemon gets to start and find its QEMU, ms. */
#define DAEMON_WAIT_MS 10000
/* Between two polls, us. */
#define POLL_US (20 * 1000)
/* One control request's reply, ms. */
#define CALL_TIMEOUT_MS 5000
/* The daemon's tick, ms. */
#define INTERVAL_MS 200
/* A changed state is saved 5 s after the last save at most
 * (VR_DOMAIN_STATE_SAVE_PERIOD_US), ms. */
#define SAVE_PERIOD_MS 5000

#define FAKE_NAME "restart-me"
#define FAKE_UUID "5e1f0c3a-7b2d-4e8f-9a61-0c2d4b6f8e10"
#define MIB	  (1ULL << 20)

static char *dir;
static char *config_path;
static char *socket_path;
static char *log_path;
static char *log_text;
static char *qmp_path;
static char *agent_record;
static char *state_dir;
static char *state_file;
static char *procfs; /* the watermark suite's fake /proc, else NULL */
static GPid daemon_pid;
static GPid fake_pid;

static const char *daemon_log(void)
{
	g_clear_pointer(&log_text, g_free);
	if (!g_file_get_contents(log_path, &log_text, NULL, NULL))
		log_text = g_strdup("(no log)");
	return log_text;
}

/* The config: the tick, the fleet window, the [host] section's lines. */
static void write_config_host(guint window_ms, const char *host)
{
	g_autofree char *text = g_strdup_printf("[daemon]\n"
						"connect = test:///default\n"
						"policy-dir = %s/policies\n"
						"state-dir = %s\n"
						"control-socket = %s\n"
						"interval-ms = %d\n"
						"[host]\n"
						"%s"
						"[fleet]\n"
						"quota-size = 64MiB\n"
						"quota-reset-interval-ms = %u\n",
						dir, state_dir, socket_path, INTERVAL_MS, host,
						window_ms);
	tree_put(dir, "vreclaimd.conf", text);
}

/* The config: the tick, the fleet window, the watermarks' metric. */
static void write_config(guint window_ms, const char *metric)
{
	g_autofree char *host = g_strdup_printf("watermark-metric = %s\n", metric);

	write_config_host(window_ms, host);
}

/* The config with free_mem_rate watermarks @high/@mid/@low, per-mille. */
static void write_config_wmarks(guint high, guint mid, guint low)
{
	g_autofree char *host = g_strdup_printf("watermark-metric = free_mem_rate\n"
						"watermark-high = %u\n"
						"watermark-mid = %u\n"
						"watermark-low = %u\n",
						high, mid, low);

	write_config_host(1000, host);
}

static void setup(void)
{
	g_autoptr(GError) error = NULL;

	dir = g_dir_make_tmp("vr-restart-XXXXXX", &error);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", error ? error->message : "?");
	config_path = g_build_filename(dir, "vreclaimd.conf", NULL);
	socket_path = g_build_filename(dir, "ctl.sock", NULL);
	log_path = g_build_filename(dir, "daemon.log", NULL);
	qmp_path = g_build_filename(dir, "qmp.sock", NULL);
	agent_record = g_build_filename(dir, "agent.txt", NULL);
	state_dir = g_build_filename(dir, "state", NULL);
	state_file = g_build_filename(state_dir, FAKE_UUID ".state", NULL);
	tree_mkdir(dir, "policies");
	write_config(1000, "none");
}

static void teardown(void)
{
	test_stop_pid(&daemon_pid, SIGTERM);
	test_stop_pid(&fake_pid, SIGTERM);
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
	g_clear_pointer(&config_path, g_free);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&log_path, g_free);
	g_clear_pointer(&log_text, g_free);
	g_clear_pointer(&qmp_path, g_free);
	g_clear_pointer(&agent_record, g_free);
	g_clear_pointer(&state_dir, g_free);
	g_clear_pointer(&state_file, g_free);
	g_clear_pointer(&procfs, g_free);
}

TestSuite(restart, .init = setup, .fini = teardown,
	  .description = "vreclaimd SIGKILLed and started again on its state");

/* Start the fake QEMU and its agent (its socket: qmp.sock.agent): see the
 * file's comment. */
static void start_fake(void)
{
	g_autofree char *fake_log = g_build_filename(dir, "fake-qemu.log", NULL);
	g_autofree char *record = g_build_filename(dir, "qmp.txt", NULL);
	const char *args[] = { "--socket",
			       qmp_path,
			       "--name",
			       FAKE_NAME,
			       "--uuid",
			       FAKE_UUID,
			       "--record",
			       record,
			       "--agent",
			       "--report-ms",
			       G_STRINGIFY(INTERVAL_MS),
			       "--applied-kib-per-report",
			       "1024",
			       "--resident-mib",
			       "128",
			       "--agent-record",
			       agent_record,
			       NULL };

	fake_pid = test_fake_qemu_start(args, fake_log);
}

/* The status's entry of the fake domain into @out (FALSE: none yet);
 * @daemon_out (may be NULL) gets the daemon's part. */
static bool status_of(struct vr_domain_status *out, struct vr_daemon_status *daemon_out)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	if (!c)
		return false;
	cr_assert(vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, &error),
		  "expected a status: %s\nits log:\n%s", error ? error->message : "?",
		  daemon_log());
	if (daemon_out)
		*daemon_out = d;
	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);
		if (!strcmp(st->name, FAKE_NAME)) {
			*out = *st;
			return true;
		}
	}
	return false;
}

/* Start vreclaimd; wait until it manages the fake with its agent up. */
static void spawn_daemon(void)
{
	const char *binary = g_getenv("VRECLAIMD");
	g_autoptr(GError) error = NULL;
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	const char *argv[] = { binary,	"--config", config_path,
			       "--qmp", qmp_path,   procfs ? "--procfs" : NULL,
			       procfs,	NULL };

	cr_assert_not_null(binary, "VRECLAIMD must name the vreclaimd binary");
	cr_assert(g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				test_child_setup, log_path, &daemon_pid, &error),
		  "cannot start vreclaimd: %s", error ? error->message : "?");
	for (;;) {
		struct vr_domain_status st;

		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		if (status_of(&st, NULL) && st.managed &&
		    st.agent_state == VR_AGENT_STATE_CONNECTED)
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %s managed with its agent up within %d ms; the log:\n%s",
			  FAKE_NAME, DAEMON_WAIT_MS, daemon_log());
		g_usleep(POLL_US);
	}
}

/* SIGKILL: no clean exit, nothing saved at the end. */
static void kill_daemon(void)
{
	cr_assert_eq(kill(daemon_pid, SIGKILL), 0);
	waitpid(daemon_pid, NULL, 0);
	g_spawn_close_pid(daemon_pid);
	daemon_pid = 0;
}

/* The fake domain's status; fails when it is not listed. */
static struct vr_domain_status status_now(void)
{
	struct vr_domain_status st;

	cr_assert(status_of(&st, NULL), "expected %s in the status; the log:\n%s", FAKE_NAME,
		  daemon_log());
	return st;
}

/* Wait up to @ms until the status shows at least @bytes reclaimed. */
static uint64_t wait_reclaimed(uint64_t bytes, int ms)
{
	gint64 deadline = g_get_monotonic_time() + ms * 1000LL;

	for (;;) {
		struct vr_domain_status st = status_now();

		if (st.reclaimed_bytes >= bytes)
			return st.reclaimed_bytes;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %" G_GUINT64_FORMAT " bytes reclaimed within %d ms, the status "
			  "shows %" G_GUINT64_FORMAT "; the log:\n%s",
			  bytes, ms, st.reclaimed_bytes, daemon_log());
		g_usleep(POLL_US);
	}
}

/* The saved state, or FALSE when the file is missing or does not parse. */
static bool saved_state(struct vr_domain_state *out)
{
	g_autofree char *text = NULL;
	gsize len = 0;

	return g_file_get_contents(state_file, &text, &len, NULL) &&
	       vr_domain_state_parse(text, len, out, NULL);
}

/* Wait up to @ms for a saved state that @pred accepts. */
static struct vr_domain_state wait_saved(bool (*pred)(const struct vr_domain_state *), int ms,
					 const char *what)
{
	gint64 deadline = g_get_monotonic_time() + ms * 1000LL;
	struct vr_domain_state st;

	for (;;) {
		if (saved_state(&st) && pred(&st))
			return st;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %s saved in %s within %d ms; the log:\n%s", what, state_file,
			  ms, daemon_log());
		g_usleep(POLL_US);
	}
}

/**
 * struct agent_line - one line of the fake agent's record.
 * @us:		when, monotonic us.
 * @policy:	a set-policy.
 * @report:	a report.
 * @resume:	a resume.
 * @value:	the policy's share, or the report's sz_applied, bytes.
 */
struct agent_line {
	gint64 us;
	bool policy;
	bool report;
	bool resume;
	uint64_t value;
};

/* The fake agent's record. Return: owned array of struct agent_line. */
static GArray *agent_lines(void)
{
	GArray *out = g_array_new(FALSE, FALSE, sizeof(struct agent_line));
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents(agent_record, &text, NULL, NULL))
		return out;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char what[16];
		struct agent_line l;
		long long us;
		unsigned long long v;

		if (sscanf(lines[i], "%lld %15s %llu", &us, what, &v) != 3)
			continue;
		l.us = us;
		l.policy = !strcmp(what, "set-policy");
		l.report = !strcmp(what, "report");
		l.resume = !strcmp(what, "resume");
		l.value = v;
		g_array_append_val(out, l);
	}
	return out;
}

/* The agent's own count of what it reclaimed: its last report's. */
static uint64_t agent_reclaimed(void)
{
	g_autoptr(GArray) lines = agent_lines();
	uint64_t last = 0;

	for (guint i = 0; i < lines->len; i++)
		if (g_array_index(lines, struct agent_line, i).report)
			last = g_array_index(lines, struct agent_line, i).value;
	return last;
}

static bool reclaimed_some(const struct vr_domain_state *st)
{
	return st->reclaimed_bytes >= 4 * MIB && st->agent_sz_applied_bytes > 0;
}

Test(restart, statistics_continue)
{
	struct vr_domain_state saved;
	uint64_t before, first = 0, agent;
	gint64 deadline;

	start_fake();
	spawn_daemon();
	wait_reclaimed(4 * MIB, 15000);
	saved = wait_saved(reclaimed_some, SAVE_PERIOD_MS + 3000, "4 MiB reclaimed");
	/* The agent goes on (1 MiB per 200 ms) after the last save: the kill
	 * loses what the daemon counted since, unless the new daemon counts
	 * from the agent's counters as saved. */
	g_usleep(2 * G_USEC_PER_SEC);
	before = status_now().reclaimed_bytes;
	cr_assert_geq(before, saved.reclaimed_bytes + 4 * MIB, "the agent did not go on");
	kill_daemon();

	spawn_daemon();
	cr_assert(strstr(daemon_log(), FAKE_NAME ": state restored"),
		  "expected the restart to restore the state; the log:\n%s", daemon_log());
	/* The first report after the restart: from the saved base. */
	deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	while (!first) {
		uint64_t now = status_now().reclaimed_bytes;

		cr_assert_geq(now, saved.reclaimed_bytes,
			      "the statistics went back from %" G_GUINT64_FORMAT
			      " (saved) to %" G_GUINT64_FORMAT "; the log:\n%s",
			      saved.reclaimed_bytes, now, daemon_log());
		if (now != saved.reclaimed_bytes)
			first = now;
		cr_assert(g_get_monotonic_time() < deadline, "no report counted; the log:\n%s",
			  daemon_log());
		g_usleep(POLL_US);
	}
	agent = agent_reclaimed();
	cr_log_info("reclaimed: %" G_GUINT64_FORMAT " saved, %" G_GUINT64_FORMAT
		    " before the kill, %" G_GUINT64_FORMAT " after the first report; the agent "
		    "counts %" G_GUINT64_FORMAT,
		    saved.reclaimed_bytes, before, first, agent);
	cr_assert_geq(first, before,
		      "the daemon counts %" G_GUINT64_FORMAT " bytes reclaimed after the restart, "
		      "less than the %" G_GUINT64_FORMAT " it showed before the kill; the log:\n%s",
		      first, before, daemon_log());
	cr_assert_leq(first, agent,
		      "the daemon counts %" G_GUINT64_FORMAT " bytes reclaimed, more than the "
		      "agent ever reclaimed (%" G_GUINT64_FORMAT "): counted twice; the log:\n%s",
		      first, agent, daemon_log());
	/* And it goes on counting. */
	wait_reclaimed(first + 2 * MIB, 8000);
}

Test(restart, pause_holds)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = NULL;
	struct vr_domain_status st;

	start_fake();
	spawn_daemon();
	c = vr_control_client_connect(socket_path, &error);
	cr_assert_not_null(c);
	cr_assert(vr_control_client_pause(c, FAKE_NAME, TRUE, CALL_TIMEOUT_MS, &error), "pause: %s",
		  error ? error->message : "?");
	struct vr_domain_state saved;
	gint64 deadline = g_get_monotonic_time() + (SAVE_PERIOD_MS + 3000) * 1000LL;
	while (!saved_state(&saved) || !saved.paused) {
		cr_assert(g_get_monotonic_time() < deadline, "expected paused=true saved; log:\n%s",
			  daemon_log());
		g_usleep(POLL_US);
	}
	kill_daemon();
	spawn_daemon();
	st = status_now();
	cr_assert(st.paused, "expected %s still paused after the restart; the log:\n%s", FAKE_NAME,
		  daemon_log());
}

/* Its window: a share held, begun within the last @since_ms. */
static gint64 window_start_us;

static bool new_window(const struct vr_domain_state *st)
{
	return st->window.share_bytes > 0 && st->window.start_us > window_start_us;
}

Test(restart, no_fresh_share_in_a_granted_window)
{
	const guint window_ms = 12000;
	struct vr_domain_state saved;
	gint64 restarted_us, window_end_us, first_share_us = 0;

	write_config(window_ms, "none");
	start_fake();
	spawn_daemon();
	wait_reclaimed(MIB, 10000);
	/* Kill right after a window begins and is saved: most of it is left. */
	for (;;) {
		saved = wait_saved(new_window, window_ms + SAVE_PERIOD_MS + 3000, "a new window");
		if (g_get_monotonic_time() - saved.window.start_us <
		    (SAVE_PERIOD_MS + 500) * 1000LL)
			break;
		window_start_us = saved.window.start_us;
	}
	kill_daemon();
	restarted_us = g_get_monotonic_time();
	window_end_us = saved.window.start_us + window_ms * 1000LL;
	cr_assert_gt(window_end_us - restarted_us, 3 * G_USEC_PER_SEC, "the test killed too late");
	spawn_daemon();

	/* The first policy with a share after the restart. */
	gint64 deadline = window_end_us + 8 * G_USEC_PER_SEC;
	while (!first_share_us) {
		g_autoptr(GArray) lines = agent_lines();

		for (guint i = 0; i < lines->len && !first_share_us; i++) {
			const struct agent_line *l = &g_array_index(lines, struct agent_line, i);
			if (l->policy && l->us > restarted_us && l->value > 0)
				first_share_us = l->us;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected a policy with a share once the window ended; the log:\n%s",
			  daemon_log());
		g_usleep(POLL_US);
	}
	cr_log_info("window %" G_GINT64_FORMAT " .. %" G_GINT64_FORMAT
		    " us; restarted at %" G_GINT64_FORMAT ", first share at %" G_GINT64_FORMAT,
		    saved.window.start_us, window_end_us, restarted_us, first_share_us);
	cr_assert_geq(first_share_us, window_end_us,
		      "the restarted daemon handed out a fresh share %.1f s before the window the "
		      "previous one granted ended; the log:\n%s",
		      (double)(window_end_us - first_share_us) / G_USEC_PER_SEC, daemon_log());
}

Test(restart, corrupt_state_ignored)
{
	tree_mkdir(dir, "state");
	tree_put(state_dir, FAKE_UUID ".state",
		 "[domain-state]\nversion=1\nreclaimed-bytes=lots\n");
	start_fake();
	spawn_daemon();
	wait_reclaimed(MIB, 10000);
	cr_assert(strstr(daemon_log(), FAKE_NAME ": its saved state is ignored: "),
		  "expected a warning naming the domain; the log:\n%s", daemon_log());
	cr_assert(strstr(daemon_log(), "reclaimed-bytes"), "expected the key named; the log:\n%s",
		  daemon_log());
	/* Replaced by a good one. */
	wait_saved(reclaimed_some, 15000, "a valid state");
}

Test(restart, earlier_qemu_starts_afresh)
{
	struct vr_domain_state st = {
		.uuid = FAKE_UUID,
		.name = FAKE_NAME,
		.qemu = { .pid = 1, .start_time_us = 0 },
		.reclaimed_bytes = 1ULL << 40,
		.credit_permille = 1000,
		.trust_permille = 1000,
	};
	g_autofree char *text = vr_domain_state_to_text(&st);

	tree_mkdir(dir, "state");
	tree_put(state_dir, FAKE_UUID ".state", text);
	start_fake();
	spawn_daemon();
	cr_assert(strstr(daemon_log(), "earlier QEMU process"),
		  "expected the stale state refused; the log:\n%s", daemon_log());
	cr_assert_lt(status_now().reclaimed_bytes, 1ULL << 40,
		     "the statistics of an earlier QEMU were taken");
}

/* ---- the guest reboots: a new agent on the same connection ---- */

TestSuite(reboot, .init = setup, .fini = teardown,
	  .description = "the agent starts over on the same connection");

Test(reboot, new_agent_resumed_and_given_the_policy)
{
	g_autofree char *restart = g_strconcat(agent_record, ".restart", NULL);
	gint64 restarted_us, resumed_us = 0, policy_us = 0;
	uint64_t before;

	start_fake();
	spawn_daemon();
	before = wait_reclaimed(4 * MIB, 15000);
	restarted_us = g_get_monotonic_time();
	tree_put(dir, "agent.txt.restart", "");
	gint64 deadline = restarted_us + 5 * G_USEC_PER_SEC;
	while (!resumed_us || !policy_us) {
		g_autoptr(GArray) lines = agent_lines();

		for (guint i = 0; i < lines->len; i++) {
			const struct agent_line *l = &g_array_index(lines, struct agent_line, i);
			if (l->us <= restarted_us)
				continue;
			if (l->resume && !resumed_us)
				resumed_us = l->us;
			if (l->policy && l->value > 0 && !policy_us)
				policy_us = l->us;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the new agent resumed and given a policy with a share within "
			  "5 s (resumed: %s, policy: %s); the log:\n%s",
			  resumed_us ? "yes" : "no", policy_us ? "yes" : "no", daemon_log());
		g_usleep(POLL_US);
	}
	cr_assert(!g_file_test(restart, G_FILE_TEST_EXISTS), "the fake did not restart");
	/* Its new reclaim counts on top of the old. */
	wait_reclaimed(before + 2 * MIB, 8000);
	cr_assert(!strstr(daemon_log(), "agent resumed again"),
		  "a resync is logged at debug level only");
}

/* ---- the host falls through the low watermark ---- */

/* The fake /proc/meminfo: MemAvailable at @permille of 16 GiB. Rewritten in
 * place at the same length (the daemon keeps its files open and reads them
 * again each tick, as /proc/meminfo is read). */
static void write_meminfo(guint permille)
{
	uint64_t total_kb = 16ULL << 20;
	g_autofree char *text = g_strdup_printf("MemTotal:       %12" G_GUINT64_FORMAT " kB\n"
						"MemFree:        %12" G_GUINT64_FORMAT " kB\n"
						"MemAvailable:   %12" G_GUINT64_FORMAT " kB\n"
						"SwapTotal:      %12d kB\n"
						"SwapFree:       %12d kB\n",
						(guint64)total_kb,
						(guint64)(total_kb * permille / 1000),
						(guint64)(total_kb * permille / 1000), 0, 0);
	g_autofree char *path = g_build_filename(procfs, "meminfo", NULL);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0, "open %s: %s", path, g_strerror(errno));
	cr_assert_eq(pwrite(fd, text, strlen(text), 0), (ssize_t)strlen(text));
	close(fd);
}

static void watermark_setup(void)
{
	setup();
	procfs = g_build_filename(dir, "proc", NULL);
	tree_mkdir(dir, "proc");
	tree_mkdir(dir, "proc/pressure");
	tree_put(procfs, "pressure/memory",
		 "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	write_config(1000, "free_mem_rate");
}

TestSuite(watermark, .init = watermark_setup, .fini = teardown,
	  .description = "the host's free memory falls through the low watermark");

Test(watermark, reclaim_stops_within_one_tick)
{
	struct vr_domain_status st;
	struct vr_daemon_status d;
	g_autofree char *link = NULL;
	g_autofree char *target = NULL;
	gint64 fell_us, stop_us = 0;

	/* Between low (200) and mid (400): the host needs memory. */
	write_meminfo(300);
	start_fake();
	link = g_strdup_printf("%s/%d", procfs, (int)fake_pid);
	target = g_strdup_printf("/proc/%d", (int)fake_pid);
	cr_assert_eq(symlink(target, link), 0, "symlink: %s", g_strerror(errno));
	spawn_daemon();
	wait_reclaimed(2 * MIB, 15000);
	cr_assert(status_of(&st, &d) && d.host_needs_memory && st.share_bytes > 0,
		  "expected a share while the host needs memory; the log:\n%s", daemon_log());

	/* Below the low watermark: the kernel's own reclaim takes over. */
	write_meminfo(100);
	fell_us = g_get_monotonic_time();
	gint64 deadline = fell_us + 5 * G_USEC_PER_SEC;
	while (!stop_us) {
		g_autoptr(GArray) lines = agent_lines();

		for (guint i = 0; i < lines->len && !stop_us; i++) {
			const struct agent_line *l = &g_array_index(lines, struct agent_line, i);
			if (l->policy && l->us > fell_us && l->value == 0)
				stop_us = l->us;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the agent told to stop reclaiming within 5 s of the host "
			  "falling below the low watermark; the log:\n%s",
			  daemon_log());
		g_usleep(POLL_US);
	}
	cr_log_info("reclaim stopped %" G_GINT64_FORMAT " ms after the fall (tick %d ms)",
		    (stop_us - fell_us) / 1000, INTERVAL_MS);
	/* One tick, and room for a loaded machine (a smaller share would
	 * otherwise wait up to 15 s). */
	cr_assert_leq(stop_us - fell_us, (INTERVAL_MS + 800) * 1000LL,
		      "reclaim stopped %" G_GINT64_FORMAT " ms after the host fell below its low "
		      "watermark: more than one tick (%d ms) and the slack (800 ms)",
		      (stop_us - fell_us) / 1000, INTERVAL_MS);
	cr_assert(status_of(&st, &d) && !d.host_needs_memory && st.share_bytes == 0,
		  "expected no share and the host not needing memory; the log:\n%s", daemon_log());
}

/* ---- the real host falls through the low watermark ---- */

TestSuite(watermark_real, .init = setup, .fini = teardown,
	  .description = "the real host's free memory below a reloaded low watermark");

/* SIGHUP; wait until the status counts @reloads. Return: when it was sent. */
static gint64 reload_and_wait(uint64_t reloads)
{
	gint64 sent = g_get_monotonic_time();
	gint64 deadline = sent + DAEMON_WAIT_MS * 1000LL;
	struct vr_domain_status st;
	struct vr_daemon_status d;

	cr_assert_eq(kill(daemon_pid, SIGHUP), 0, "kill(SIGHUP): %s", g_strerror(errno));
	while (!status_of(&st, &d) || d.reloads < reloads) {
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected reload %" G_GUINT64_FORMAT " within %d ms; the log:\n%s",
			  reloads, DAEMON_WAIT_MS, daemon_log());
		g_usleep(POLL_US);
	}
	return sent;
}

/* Wait up to @ms for a policy after @since_us whose share is 0 (@zero) or
 * not: when the agent got it, monotonic us. */
static gint64 wait_policy(gint64 since_us, bool zero, int ms, const char *what)
{
	gint64 deadline = g_get_monotonic_time() + ms * 1000LL;

	for (;;) {
		g_autoptr(GArray) lines = agent_lines();

		for (guint i = 0; i < lines->len; i++) {
			const struct agent_line *l = &g_array_index(lines, struct agent_line, i);
			if (l->policy && l->us > since_us && (l->value == 0) == zero)
				return l->us;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the agent %s within %d ms; the log:\n%s", what, ms,
			  daemon_log());
		g_usleep(POLL_US);
	}
}

/* The daemon's status now, and the fake domain's. */
static struct vr_daemon_status daemon_now(struct vr_domain_status *st)
{
	struct vr_daemon_status d;

	cr_assert(status_of(st, &d), "expected %s in the status; the log:\n%s", FAKE_NAME,
		  daemon_log());
	return d;
}

/* The metrics as `vreclaimctl metrics` gets them. */
static char *metrics_now(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	char *text;

	cr_assert_not_null(c, "connect: %s", error ? error->message : "?");
	text = vr_control_client_metrics(c, CALL_TIMEOUT_MS, &error);
	cr_assert_not_null(text, "metrics: %s", error ? error->message : "?");
	return text;
}

/*
 * No fake /proc: vreclaimd reads the machine's own /proc/meminfo. The
 * watermarks are reloaded (SIGHUP) around the machine's real free memory
 * rate R (0 < R < 1000 on any host that runs this):
 *   high 1000 mid 1000 low 0:	  R < mid, the host needs memory (below-mid)
 *   high 1000 mid 1000 low 1000: R < low, vreclaim steps aside (below-low)
 *   back to low 0:		  needs memory again: reclaim resumes
 *   high 0 mid 0 low 0:	  R > high, enough memory (above-high)
 */
Test(watermark_real, reclaim_stops_below_low_and_resumes, .timeout = 60)
{
	struct vr_domain_status st;
	struct vr_daemon_status d;
	g_autofree char *metrics = NULL;
	gint64 sent_us, stop_us, resume_us;
	uint64_t before;

	write_config_wmarks(1000, 1000, 0);
	start_fake();
	spawn_daemon();
	wait_reclaimed(2 * MIB, 15000);
	d = daemon_now(&st);
	cr_log_info("the host's real free memory rate: %u per-mille", d.free_mem_rate_permille);
	cr_assert(d.free_mem_rate_permille > 0 && d.free_mem_rate_permille < 1000,
		  "a real free rate strictly between 0 and 1000, got %u", d.free_mem_rate_permille);
	cr_assert(d.host_needs_memory && st.share_bytes > 0 &&
			  !strcmp(d.host_memory_state, "below-mid"),
		  "expected a share while the rate is below mid (state %s, share %" G_GUINT64_FORMAT
		  "); the log:\n%s",
		  d.host_memory_state, st.share_bytes, daemon_log());

	/* Below the low watermark: the kernel's own reclaim takes over. */
	write_config_wmarks(1000, 1000, 1000);
	sent_us = reload_and_wait(1);
	stop_us = wait_policy(sent_us, true, 5000,
			      "told to stop reclaiming once the host is below its low watermark");
	cr_log_info("reclaim stopped %" G_GINT64_FORMAT " ms after the reload (tick %d ms)",
		    (stop_us - sent_us) / 1000, INTERVAL_MS);
	cr_assert_leq(stop_us - sent_us, (INTERVAL_MS + 800) * 1000LL,
		      "reclaim stopped %" G_GINT64_FORMAT " ms after the reload that put the host "
		      "below its low watermark: more than one tick (%d ms) and the slack (800 ms)",
		      (stop_us - sent_us) / 1000, INTERVAL_MS);
	d = daemon_now(&st);
	cr_assert(!d.host_needs_memory && st.share_bytes == 0 &&
			  !strcmp(d.host_memory_state, "below-low"),
		  "expected no share and the status saying below-low, got state %s share "
		  "%" G_GUINT64_FORMAT "; the log:\n%s",
		  d.host_memory_state, st.share_bytes, daemon_log());
	metrics = metrics_now();
	cr_assert(strstr(metrics, "vreclaim_host_memory_state{state=\"below-low\"} 1\n") &&
			  strstr(metrics, "vreclaim_host_needs_memory 0\n"),
		  "expected the metrics to say below-low:\n%s", metrics);
	cr_assert(strstr(daemon_log(), "no longer needs memory"),
		  "expected the change logged; the log:\n%s", daemon_log());

	/* Back above low (and below mid): reclaim resumes. */
	before = status_now().reclaimed_bytes;
	write_config_wmarks(1000, 1000, 0);
	sent_us = reload_and_wait(2);
	resume_us = wait_policy(sent_us, false, 5000, "given a share again");
	cr_log_info("reclaim resumed %" G_GINT64_FORMAT " ms after the reload",
		    (resume_us - sent_us) / 1000);
	wait_reclaimed(before + 2 * MIB, 10000);
	d = daemon_now(&st);
	cr_assert(d.host_needs_memory && !strcmp(d.host_memory_state, "below-mid"),
		  "expected the host to need memory again, state %s", d.host_memory_state);

	/* Above high: enough memory, a different reason. */
	write_config_wmarks(0, 0, 0);
	sent_us = reload_and_wait(3);
	wait_policy(sent_us, true, 5000, "told to stop once the host is above its high watermark");
	d = daemon_now(&st);
	cr_assert(!d.host_needs_memory && st.share_bytes == 0 &&
			  !strcmp(d.host_memory_state, "above-high"),
		  "expected no share and the status saying above-high, got %s",
		  d.host_memory_state);
}
