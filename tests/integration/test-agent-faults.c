/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fault injection on the guest side (issue 16): the real vreclaimd with a
 * few QEMUs given by --qmp, each one tests/integration/fake-qemu process
 * (VR_FAKE_QEMU) with its agent port, one of whose agents misbehaves
 * (fake-qemu --agent-fault) while an honest domain beside it reclaims as it
 * should: its agent reports every tick and claims 1 MiB more reclaimed a
 * report while its policy holds a share, and its process releases as much of
 * its resident memory (--resident-mib), so the host sees what it claims.
 * Each fake is its own process: the fleet credit weighs each QEMU's
 * resident size.
 *
 * - liar: its agent says all of its memory is cold and none of it free, and
 *   claims 256 MiB reclaimed a report (1.25 GiB/s for a 512 MiB guest)
 *   while its resident size does not fall. Within the credit's judgements
 *   (30 and 40 s) its credit falls to the floor (credit-floor = 25, so that
 *   the test needs two judgements, not the default's three), the honest
 *   domain keeps full credit and gets most of the fleet quota; the liar's
 *   reclaimed counter never passes what a 512 MiB guest can have reclaimed
 *   (its memory + the time x 512 MiB/s, common/guest-bounds.h), and the
 *   claims beyond it are counted as rejected.
 * - flood: once its hello is answered, its agent sends by connection in
 *   turn 200 lines that are not JSON, a 256 KiB line, 200 reports that
 *   claim twice the guest's memory, 200 valid reports a tick. Each
 *   connection is closed, the daemon reconnects with its back-off (a
 *   handful of connections in the watch); the log holds a few lines per
 *   connection, not one per bad line; the guest-caused counters
 *   (rejected, log suppressed; in `vreclaimctl metrics` too) move; the
 *   honest domain is asked for its picture at its usual cadence and
 *   `vreclaimctl status --json` answers within a second throughout.
 * - drop: one agent drops its connection mid-reclaim (2 s after its first
 *   share) and its socket is gone for 3 s, another's never comes back. The
 *   status shows both without their agent and without a share; the first is
 *   taken back (agent connected, its reclaim counted on from where it was;
 *   when it came back as a new agent, paused with its counters from 0, it
 *   is resumed and given a share again); no domain's reclaimed counter ever
 *   goes back; the honest domain is served at its cadence throughout.
 *
 * Criterion re-executes the binary for each test: no pointers in
 * parameters.
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

/* The daemon's tick, ms. */
#define INTERVAL_MS 200
/* How long the daemon gets to start and take every QEMU, ms. */
#define DAEMON_WAIT_MS 15000
/* One control request's reply, ms. */
#define CALL_TIMEOUT_MS 5000
/* `vreclaimctl status` answers within this while an agent floods, ms. */
#define STATUS_PROMPT_MS 1000
/* The fleet quota: 64 MiB a 1 s window. */
#define QUOTA_MIB 64
/* The liar's credit falls to this floor, per-mille (credit-floor = 25). */
#define CREDIT_FLOOR_PERMILLE 250
/* The liar gets there in two judgements (30, 40 s after its first share)
 * and some slack for a loaded machine, ms. */
#define LIAR_WAIT_MS 60000
/* Each fake guest's memory (fake-qemu's default for one QEMU), bytes. */
#define GUEST_MIB 512
#define MIB	  ((uint64_t)1 << 20)
/* How long the flood is watched, ms. */
#define FLOOD_WATCH_MS 10000
/* The honest domain's cadence is counted over spans of this, ms: it must
 * get half of the ticks' pictures in each at least. */
#define CADENCE_SPAN_MS 2000
/* How long the drop test waits for what it expects, ms. */
#define DROP_WAIT_MS 20000
/* The agent that never comes back stays so for this at least, ms. */
#define GONE_WATCH_MS 5000

/**
 * struct fake - one fake QEMU and its agent.
 * @name, @uuid:	its domain.
 * @socket:		its QMP socket (its agent's: @socket.agent).
 * @record:		its QMP commands and agent requests, one a line.
 * @agent_record:	its agent's policies, reports and faults.
 * @pid:		its process, 0 when not running.
 */
struct fake {
	const char *name;
	const char *uuid;
	char *socket;
	char *record;
	char *agent_record;
	GPid pid;
};

static struct fake fakes[] = {
	{ .name = "honest", .uuid = "0a9e7f3c-1d2b-4c5e-8f60-7a8b9c0d1e21" },
	{ .name = "faulty", .uuid = "0a9e7f3c-1d2b-4c5e-8f60-7a8b9c0d1e22" },
	{ .name = "gone", .uuid = "0a9e7f3c-1d2b-4c5e-8f60-7a8b9c0d1e23" },
};
#define HONEST (&fakes[0])
#define FAULTY (&fakes[1])
#define GONE   (&fakes[2])

static char *dir;
static char *socket_path;
static char *log_path;
static char *log_text;
static GPid daemon_pid;
static gint64 daemon_started_us;

static const char *daemon_log(void)
{
	g_clear_pointer(&log_text, g_free);
	if (!g_file_get_contents(log_path, &log_text, NULL, NULL))
		log_text = g_strdup("(no log)");
	return log_text;
}

static void setup(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;

	dir = g_dir_make_tmp("vr-agent-faults-XXXXXX", &error);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", error ? error->message : "?");
	socket_path = g_build_filename(dir, "ctl.sock", NULL);
	log_path = g_build_filename(dir, "daemon.log", NULL);
	for (guint i = 0; i < G_N_ELEMENTS(fakes); i++) {
		g_autofree char *sock = g_strdup_printf("%s.sock", fakes[i].name);
		g_autofree char *rec = g_strdup_printf("%s.txt", fakes[i].name);
		g_autofree char *arec = g_strdup_printf("%s-agent.txt", fakes[i].name);

		fakes[i].socket = g_build_filename(dir, sock, NULL);
		fakes[i].record = g_build_filename(dir, rec, NULL);
		fakes[i].agent_record = g_build_filename(dir, arec, NULL);
	}
	tree_mkdir(dir, "policies");
	text = g_strdup_printf("[daemon]\n"
			       "connect = test:///default\n"
			       "policy-dir = %s/policies\n"
			       "state-dir = %s/state\n"
			       "control-socket = %s\n"
			       "interval-ms = %d\n"
			       "[host]\n"
			       "watermark-metric = none\n"
			       "[fleet]\n"
			       "quota-size = %dMiB\n"
			       "quota-reset-interval-ms = 1000\n"
			       "credit-floor = %u\n",
			       dir, dir, socket_path, INTERVAL_MS, QUOTA_MIB,
			       CREDIT_FLOOR_PERMILLE / 10);
	tree_put(dir, "vreclaimd.conf", text);
}

static void teardown(void)
{
	test_stop_pid(&daemon_pid, SIGTERM);
	for (guint i = 0; i < G_N_ELEMENTS(fakes); i++) {
		test_stop_pid(&fakes[i].pid, SIGKILL);
		g_clear_pointer(&fakes[i].socket, g_free);
		g_clear_pointer(&fakes[i].record, g_free);
		g_clear_pointer(&fakes[i].agent_record, g_free);
	}
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&log_path, g_free);
	g_clear_pointer(&log_text, g_free);
}

TestSuite(agent_faults, .init = setup, .fini = teardown,
	  .description = "vreclaimd with an agent that lies, floods or drops its connection");

/* Start @f reporting every tick, with @extra (NULL-terminated) after the
 * common options. */
static void start_fake(struct fake *f, const char *const *extra)
{
	g_autofree char *fake_log = g_strdup_printf("%s/%s-qemu.log", dir, f->name);
	g_autoptr(GPtrArray) args = g_ptr_array_new();
	const char *common[] = { "--socket",
				 f->socket,
				 "--name",
				 f->name,
				 "--uuid",
				 f->uuid,
				 "--record",
				 f->record,
				 "--agent",
				 "--agent-record",
				 f->agent_record,
				 "--report-ms",
				 G_STRINGIFY(INTERVAL_MS) };

	for (guint i = 0; i < G_N_ELEMENTS(common); i++)
		g_ptr_array_add(args, (gpointer)common[i]);
	for (guint i = 0; extra[i]; i++)
		g_ptr_array_add(args, (gpointer)extra[i]);
	g_ptr_array_add(args, NULL);
	f->pid = test_fake_qemu_start((const char *const *)args->pdata, fake_log);
}

/* The honest domain: 1 MiB claimed a report, released from its 320 MiB
 * resident memory (64 s at 5 MiB/s: its RSS does not refill within a
 * test). Well above what the fake's own memory grows by under
 * AddressSanitizer (its quarantine keeps what it frees): 256 KiB a report
 * did not show there. */
static void start_honest(void)
{
	const char *extra[] = { "--applied-kib-per-report", "1024", "--resident-mib", "320", NULL };

	start_fake(HONEST, extra);
}

/* The status's entry of @name into @out (FALSE: not listed, or no control
 * socket yet); fails when the daemon does not answer. */
static bool status_of(const char *name, struct vr_domain_status *out)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	if (!c)
		return false; /* not listening yet */
	cr_assert(vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, &error),
		  "expected a status: %s\nthe log:\n%s", error ? error->message : "?",
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

/* @name's status; fails when it is not listed. */
static struct vr_domain_status status_now(const char *name)
{
	struct vr_domain_status st;

	cr_assert(status_of(name, &st), "expected %s in the status; the log:\n%s", name,
		  daemon_log());
	return st;
}

static bool served(const struct vr_domain_status *st)
{
	return st->managed && st->action == VR_DOMAIN_ACTION_AGENT_RECLAIM &&
	       st->agent_state == VR_AGENT_STATE_CONNECTED;
}

static void assert_daemon_runs(void)
{
	cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
		  daemon_log());
}

/* Start vreclaimd on the first @nr fakes. */
static void spawn_daemon(guint nr)
{
	const char *binary = g_getenv("VRECLAIMD");
	g_autofree char *config = g_build_filename(dir, "vreclaimd.conf", NULL);
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;

	cr_assert_not_null(binary, "VRECLAIMD must name the vreclaimd binary");
	g_ptr_array_add(argv, (gpointer)binary);
	g_ptr_array_add(argv, (gpointer) "--config");
	g_ptr_array_add(argv, config);
	for (guint i = 0; i < nr; i++) {
		g_ptr_array_add(argv, (gpointer) "--qmp");
		g_ptr_array_add(argv, fakes[i].socket);
	}
	g_ptr_array_add(argv, NULL);
	daemon_started_us = g_get_monotonic_time();
	cr_assert(g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				test_child_setup, log_path, &daemon_pid, &error),
		  "cannot start vreclaimd: %s", error ? error->message : "?");
}

/* Wait until @f is managed with its agent connected. */
static void wait_served(const struct fake *f)
{
	gint64 deadline = daemon_started_us + DAEMON_WAIT_MS * 1000LL;

	for (;;) {
		struct vr_domain_status st;

		assert_daemon_runs();
		if (status_of(f->name, &st) && served(&st))
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %s managed with its agent up within %d ms; the log:\n%s",
			  f->name, DAEMON_WAIT_MS, daemon_log());
		g_usleep(50 * 1000);
	}
}

/* How many lines of @f's record are @what. */
static guint count(const struct fake *f, const char *what)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint n = 0;

	if (!g_file_get_contents(f->record, &text, NULL, NULL))
		return 0;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++)
		n += !strcmp(lines[i], what);
	return n;
}

/* The pictures @f's agent sent: get-regions, or get-cold-histogram from an
 * agent with that capability (fake-qemu's by default). */
static guint pictures(const struct fake *f)
{
	return count(f, "agent:get-regions") + count(f, "agent:get-cold-histogram");
}

/* Of @f's agent record, the lines "US @what VALUE": how many (and *@sum of
 * their values, may be NULL). */
static guint agent_count(const struct fake *f, const char *what, uint64_t *sum)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint n = 0;

	if (sum)
		*sum = 0;
	if (!g_file_get_contents(f->agent_record, &text, NULL, NULL))
		return 0;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char kind[16];
		long long us;
		unsigned long long v;

		if (sscanf(lines[i], "%lld %15s %llu", &us, kind, &v) != 3 || strcmp(kind, what))
			continue;
		n++;
		if (sum)
			*sum += v;
	}
	return n;
}

/* Whether @f's agent record has a line @then with a value of @least at
 * least after its first line @first. */
static bool agent_after(const struct fake *f, const char *first, const char *then, uint64_t least)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	bool seen = false;

	if (!g_file_get_contents(f->agent_record, &text, NULL, NULL))
		return false;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		char kind[16];
		long long us;
		unsigned long long v;

		if (sscanf(lines[i], "%lld %15s %llu", &us, kind, &v) != 3)
			continue;
		if (!strcmp(kind, first))
			seen = true;
		else if (seen && !strcmp(kind, then) && v >= least)
			return true;
	}
	return false;
}

/* Lines of the daemon's log that name @name. */
static guint log_lines_naming(const char *name)
{
	g_auto(GStrv) lines = g_strsplit(daemon_log(), "\n", -1);
	g_autofree char *word = g_strdup_printf("%s:", name);
	g_autofree char *domain_word = g_strdup_printf("domain %s", name);
	guint n = 0;

	for (guint i = 0; lines[i]; i++)
		n += strstr(lines[i], word) || strstr(lines[i], domain_word);
	return n;
}

/**
 * struct ctl_run - one run of vreclaimctl.
 * @out:	its stdout (owned).
 * @took_ms:	how long it took, ms.
 */
struct ctl_run {
	char *out;
	gint64 took_ms;
};

/* Run `vreclaimctl --socket SOCK @cmd [@opt]`; fails unless it exits 0. */
static struct ctl_run ctl(const char *cmd, const char *opt)
{
	const char *binary = g_getenv("VRECLAIMCTL");
	const char *argv[] = { binary, "--socket", socket_path, cmd, opt, NULL };
	g_autoptr(GError) error = NULL;
	g_autofree char *err = NULL;
	struct ctl_run r = { 0 };
	gint64 t0 = g_get_monotonic_time();
	int status = 0;

	cr_assert_not_null(binary, "VRECLAIMCTL must name the vreclaimctl binary");
	cr_assert(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &err,
			       &status, &error),
		  "cannot run vreclaimctl: %s", error ? error->message : "?");
	r.took_ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "vreclaimctl %s failed (wait status %#x): %s", cmd, status, err);
	return r;
}

/* The value of @metric{domain="@name"} in a Prometheus text, -1 if absent. */
static double metric_of(const char *text, const char *metric, const char *name)
{
	g_autofree char *key = g_strdup_printf("%s{domain=\"%s\"} ", metric, name);
	const char *at = strstr(text, key);

	return at ? g_ascii_strtod(at + strlen(key), NULL) : -1;
}

/* The most a guest of GUEST_MIB can have reclaimed @us after the daemon
 * started: its memory, then its memory a second (common/guest-bounds.h). */
static uint64_t reclaim_bound(gint64 us)
{
	return GUEST_MIB * MIB + (uint64_t)((double)GUEST_MIB * MIB * (double)us / G_USEC_PER_SEC);
}

Test(agent_faults, liar_loses_its_share, .timeout = 150)
{
	const char *liar[] = {
		"--agent-fault", "lie", "--applied-kib-per-report", "262144", "--resident-mib",
		"128",		 NULL
	};
	gint64 deadline, floor_us = 0;
	struct vr_domain_status h, l;
	uint64_t honest_sum = 0, liar_sum = 0, honest_reclaimed;
	uint64_t honest_trusted = 0, liar_trusted = 0;
	guint samples = 0, trusted_samples = 0, liar_credit = 1000;

	start_honest();
	start_fake(FAULTY, liar);
	spawn_daemon(2);
	wait_served(HONEST);
	wait_served(FAULTY);
	honest_reclaimed = status_now(HONEST->name).reclaimed_bytes;

	/* Two judgements: the liar falls to the floor; the honest domain
	 * keeps full credit; the liar's counter within the bound all along. */
	deadline = daemon_started_us + LIAR_WAIT_MS * 1000LL;
	for (;;) {
		gint64 now;

		assert_daemon_runs();
		l = status_now(FAULTY->name);
		now = g_get_monotonic_time();
		h = status_now(HONEST->name);
		cr_assert_leq(l.reclaimed_bytes, reclaim_bound(now - daemon_started_us),
			      "expected the liar's reclaimed counter within what a %d MiB guest "
			      "can have reclaimed in %" G_GINT64_FORMAT " ms (%" G_GUINT64_FORMAT
			      " bytes), it shows %" G_GUINT64_FORMAT,
			      GUEST_MIB, (now - daemon_started_us) / 1000,
			      reclaim_bound(now - daemon_started_us), l.reclaimed_bytes);
		cr_assert_eq(h.credit_permille, 1000,
			     "expected the honest domain at full credit, it has %u; the log:\n%s",
			     h.credit_permille, daemon_log());
		cr_assert_leq(l.credit_permille, liar_credit,
			      "expected the liar's credit never to rise (%u, then %u)", liar_credit,
			      l.credit_permille);
		liar_credit = l.credit_permille;
		if (liar_credit == 1000) {
			/* Before its first judgement: trusted as the other. */
			honest_trusted += h.share_bytes;
			liar_trusted += l.share_bytes;
			trusted_samples++;
		}
		if (liar_credit == CREDIT_FLOOR_PERMILLE) {
			floor_us = now;
			break;
		}
		cr_assert(now < deadline,
			  "expected the liar's credit at the floor (%u) within %d ms of the "
			  "daemon's start, it has %u; the log:\n%s",
			  CREDIT_FLOOR_PERMILLE, LIAR_WAIT_MS, liar_credit, daemon_log());
		g_usleep(500 * 1000);
	}
	cr_log_info("the liar's credit at the floor %" G_GINT64_FORMAT
		    " ms after the daemon started",
		    (floor_us - daemon_started_us) / 1000);
	cr_log_info("the liar's counter: %" G_GUINT64_FORMAT " MiB (the bound: %" G_GUINT64_FORMAT
		    " MiB), %" G_GUINT64_FORMAT " stats rejected; shares while trusted, over %u "
		    "samples: honest %" G_GUINT64_FORMAT " MiB, liar %" G_GUINT64_FORMAT
		    " MiB on average",
		    l.reclaimed_bytes / MIB, reclaim_bound(floor_us - daemon_started_us) / MIB,
		    l.agent_rejected_reports, trusted_samples,
		    honest_trusted / MAX(trusted_samples, 1) / MIB,
		    liar_trusted / MAX(trusted_samples, 1) / MIB);
	cr_assert_gt(l.agent_rejected_reports, 0,
		     "expected the liar's impossible claims counted as rejected");
	cr_assert_gt(liar_trusted, 0, "expected the liar a share while it was trusted");

	/* Three fleet windows: the honest domain gets most of the quota. */
	for (gint64 end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC; g_get_monotonic_time() < end;
	     samples++) {
		h = status_now(HONEST->name);
		l = status_now(FAULTY->name);
		cr_assert_eq(l.credit_permille, CREDIT_FLOOR_PERMILLE,
			     "expected the liar to stay at the floor, it has %u",
			     l.credit_permille);
		honest_sum += h.share_bytes;
		liar_sum += l.share_bytes;
		g_usleep(250 * 1000);
	}
	cr_log_info("shares over %u samples: honest %" G_GUINT64_FORMAT
		    " MiB, liar %" G_GUINT64_FORMAT " MiB on average",
		    samples, honest_sum / samples / MIB, liar_sum / samples / MIB);
	cr_assert_geq(
		honest_sum, 2 * liar_sum,
		"expected the honest domain to get most of the quota: on average %" G_GUINT64_FORMAT
		" bytes, the liar %" G_GUINT64_FORMAT,
		honest_sum / samples, liar_sum / samples);
	cr_assert_gt(honest_sum, 0, "expected the honest domain a share");
	cr_assert_leq(liar_sum / samples, liar_trusted / trusted_samples / 2,
		      "expected the liar's share to fall: %" G_GUINT64_FORMAT
		      " bytes on average while trusted, %" G_GUINT64_FORMAT " at the floor",
		      liar_trusted / trusted_samples, liar_sum / samples);
	cr_assert_gt(h.reclaimed_bytes, honest_reclaimed,
		     "expected the honest domain's reclaim to go on");
	assert_daemon_runs();
}

/* The honest domain's pictures over the last span; fails when fewer than
 * half of the span's ticks asked for one. */
static guint check_cadence(guint *before, gint64 *span_start)
{
	guint now = pictures(HONEST);
	gint64 t = g_get_monotonic_time();

	if (t - *span_start < CADENCE_SPAN_MS * 1000LL)
		return now;
	cr_assert_geq(now - *before, CADENCE_SPAN_MS / INTERVAL_MS / 2,
		      "expected the honest domain asked for its picture about every %d ms, it "
		      "got %u in %" G_GINT64_FORMAT " ms; the log:\n%s",
		      INTERVAL_MS, now - *before, (t - *span_start) / 1000, daemon_log());
	*before = now;
	*span_start = t;
	return now;
}

Test(agent_faults, flood_is_cut_off, .timeout = 90)
{
	const char *flood[] = { "--agent-fault", "flood", NULL };
	gint64 t0, span_start, slowest_ms = 0, deadline;
	guint before, statuses = 0, connects, lines, bursts;
	uint64_t sent = 0, honest_reclaimed;
	struct vr_domain_status f, h;
	struct ctl_run m;

	start_honest();
	start_fake(FAULTY, flood);
	spawn_daemon(2);
	wait_served(HONEST);
	deadline = daemon_started_us + DAEMON_WAIT_MS * 1000LL;
	while (!agent_count(FAULTY, "flood", NULL)) {
		assert_daemon_runs();
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the flooding agent connected and flooding; the log:\n%s",
			  daemon_log());
		g_usleep(50 * 1000);
	}
	honest_reclaimed = status_now(HONEST->name).reclaimed_bytes;

	/* The flood: status prompt, the honest domain at its cadence. */
	t0 = span_start = g_get_monotonic_time();
	before = pictures(HONEST);
	while (g_get_monotonic_time() - t0 < FLOOD_WATCH_MS * 1000LL) {
		struct ctl_run r = ctl("status", "--json");

		slowest_ms = MAX(slowest_ms, r.took_ms);
		cr_assert_lt(r.took_ms, STATUS_PROMPT_MS,
			     "expected vreclaimctl status within %d ms while an agent floods, it "
			     "took %" G_GINT64_FORMAT " ms",
			     STATUS_PROMPT_MS, r.took_ms);
		cr_assert(strstr(r.out, "\"honest\""), "expected the honest domain in:\n%s", r.out);
		g_free(r.out);
		statuses++;
		check_cadence(&before, &span_start);
		assert_daemon_runs();
		g_usleep(200 * 1000);
	}

	/* Closed and retried with back-off, a few log lines a connection. */
	connects = count(FAULTY, "agent:hello");
	bursts = agent_count(FAULTY, "flood", &sent);
	lines = log_lines_naming(FAULTY->name);
	cr_log_info("flood: %u statuses, the slowest %" G_GINT64_FORMAT " ms; %u connections, %u "
		    "bursts, %" G_GUINT64_FORMAT " bad lines sent, %u log lines",
		    statuses, slowest_ms, connects, bursts, sent, lines);
	cr_assert_geq(connects, 4,
		      "expected the daemon to have come back to the agent (all four kinds of "
		      "flood), it connected %u times; the log:\n%s",
		      connects, daemon_log());
	cr_assert_leq(connects, 8,
		      "expected the daemon to reconnect with a back-off (0.5, 1, 2, 4 s...), it "
		      "connected %u times in %d ms",
		      connects, FLOOD_WATCH_MS);
	cr_assert_geq(sent, 600, "expected the agent to have sent hundreds of bad lines");
	cr_assert_leq(lines, 6 * connects + 10,
		      "expected a few log lines a connection (%u connections), not one a bad "
		      "line (%" G_GUINT64_FORMAT "): %u lines; the log:\n%s",
		      connects, sent, lines, daemon_log());

	/* The guest-caused counters moved, in the status and the metrics. */
	f = status_now(FAULTY->name);
	cr_assert_gt(f.agent_rejected_reports, 0,
		     "expected the reports beyond the guest's memory counted as rejected");
	cr_assert_gt(f.agent_log_suppressed, 0,
		     "expected messages about the agent held back by the rate limit");
	m = ctl("metrics", NULL);
	cr_assert_gt(metric_of(m.out, "vreclaim_domain_agent_log_suppressed_total", FAULTY->name),
		     0, "expected the suppressed messages in the metrics:\n%s", m.out);
	cr_assert_gt(metric_of(m.out, "vreclaim_domain_agent_rejected_reports_total", FAULTY->name),
		     0, "expected the rejected reports in the metrics:\n%s", m.out);
	g_free(m.out);

	h = status_now(HONEST->name);
	cr_assert(served(&h), "expected the honest domain served");
	cr_assert_gt(h.reclaimed_bytes, honest_reclaimed,
		     "expected the honest domain's reclaim to go on");
	assert_daemon_runs();
}

/**
 * struct watch - what the drop test saw of a domain.
 * @reclaimed:	its reclaimed counter at the last look.
 * @down_us:	when it was first seen without its agent after its drop, 0
 *		before.
 * @back_us:	when it was seen with its agent again after that, 0 before.
 * @at_drop:	its reclaimed counter when seen down.
 */
struct watch {
	uint64_t reclaimed;
	gint64 down_us;
	gint64 back_us;
	uint64_t at_drop;
};

/* Look at @f's status: its counter never goes back; down and back noted. */
static void look(const struct fake *f, struct watch *w, struct vr_domain_status *st)
{
	*st = status_now(f->name);
	cr_assert_geq(st->reclaimed_bytes, w->reclaimed,
		      "expected %s's reclaimed counter never to go back: %" G_GUINT64_FORMAT
		      " then %" G_GUINT64_FORMAT "; the log:\n%s",
		      f->name, w->reclaimed, st->reclaimed_bytes, daemon_log());
	w->reclaimed = st->reclaimed_bytes;
	if (f == HONEST || !agent_count(f, "dropped", NULL))
		return;
	if (!w->down_us && st->agent_state != VR_AGENT_STATE_CONNECTED) {
		w->down_us = g_get_monotonic_time();
		w->at_drop = st->reclaimed_bytes;
	}
	if (w->down_us && !w->back_us && served(st))
		w->back_us = g_get_monotonic_time();
}

/**
 * struct drop_case - how the dropped agent comes back.
 * @restarted:	as a new agent (a guest that rebooted meanwhile: counters
 *		from 0, paused), or as it left.
 */
struct drop_case {
	bool restarted;
};

static struct drop_case drop_cases[] = {
	{ .restarted = false },
	{ .restarted = true },
};

ParameterizedTestParameters(agent_faults, dropped_agent_taken_back)
{
	return cr_make_param_array(struct drop_case, drop_cases, G_N_ELEMENTS(drop_cases));
}

ParameterizedTest(struct drop_case *dc, agent_faults, dropped_agent_taken_back, .timeout = 90)
{
	const char *back[] = { "--agent-fault",
			       "drop",
			       "--applied-kib-per-report",
			       "256",
			       "--resident-mib",
			       "64",
			       "--agent-away-ms",
			       "3000",
			       dc->restarted ? "--agent-back-restarted" : NULL,
			       NULL };
	const char *gone[] = { "--agent-fault",
			       "drop",
			       "--applied-kib-per-report",
			       "256",
			       "--resident-mib",
			       "64",
			       "--agent-away-ms",
			       "0",
			       NULL };
	struct watch wh = { 0 }, wb = { 0 }, wg = { 0 };
	struct vr_domain_status h, b, g;
	gint64 deadline, span_start;
	guint before;
	bool shown_unshared = false, gone_unshared = false;

	start_honest();
	start_fake(FAULTY, back);
	start_fake(GONE, gone);
	spawn_daemon(3);
	wait_served(HONEST);
	wait_served(FAULTY);
	wait_served(GONE);

	span_start = g_get_monotonic_time();
	before = pictures(HONEST);
	deadline = span_start + DROP_WAIT_MS * 1000LL;
	for (;;) {
		gint64 now = g_get_monotonic_time();

		assert_daemon_runs();
		look(HONEST, &wh, &h);
		look(FAULTY, &wb, &b);
		look(GONE, &wg, &g);
		cr_assert(served(&h), "expected the honest domain served throughout; the log:\n%s",
			  daemon_log());
		check_cadence(&before, &span_start);
		if (wb.down_us && !wb.back_us && !b.share_bytes)
			shown_unshared = true;
		if (wg.down_us) {
			cr_assert_neq(g.agent_state, VR_AGENT_STATE_CONNECTED,
				      "expected the agent that never comes back shown without it");
			gone_unshared |= !g.share_bytes;
		}
		if (wb.back_us && b.reclaimed_bytes > wb.at_drop && wg.down_us &&
		    now - wg.down_us >= GONE_WATCH_MS * 1000LL && gone_unshared)
			break;
		cr_assert(now < deadline,
			  "expected within %d ms: the dropped agent shown down (%s) and taken "
			  "back (%s) with its reclaim going on (%" G_GUINT64_FORMAT
			  " bytes at the drop, %" G_GUINT64_FORMAT " now), the other shown down "
			  "(%s) for %d ms without a share (%s); the log:\n%s",
			  DROP_WAIT_MS, wb.down_us ? "yes" : "no", wb.back_us ? "yes" : "no",
			  wb.at_drop, b.reclaimed_bytes, wg.down_us ? "yes" : "no", GONE_WATCH_MS,
			  gone_unshared ? "yes" : "no", daemon_log());
		g_usleep(100 * 1000);
	}
	cr_log_info("dropped agent (back %s): down for %" G_GINT64_FORMAT
		    " ms, reclaimed %" G_GUINT64_FORMAT " bytes at the drop, %" G_GUINT64_FORMAT
		    " now",
		    dc->restarted ? "restarted" : "as it left", (wb.back_us - wb.down_us) / 1000,
		    wb.at_drop, b.reclaimed_bytes);
	cr_assert(shown_unshared, "expected the dropped agent's domain shown without a share");
	if (dc->restarted)
		cr_assert(agent_after(FAULTY, "restarted", "resume", 0) &&
				  agent_after(FAULTY, "restarted", "set-policy", 1),
			  "expected the agent that came back restarted (paused, no policy) "
			  "resumed and given a share again; the log:\n%s",
			  daemon_log());
	cr_assert_eq(count(FAULTY, "agent:hello"), 2,
		     "expected one new session after the agent came back, got %u hellos",
		     count(FAULTY, "agent:hello") - 1);
	cr_assert_eq(count(GONE, "agent:hello"), 1,
		     "expected no session with the agent that never came back");
	cr_assert_gt(h.reclaimed_bytes, 0, "expected the honest domain's reclaim counted");
}
