/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The real vreclaimd with a fleet of QEMUs given by repeated --qmp: every
 * one is found, managed with agent-reclaim, its agent connected and asked
 * for its picture every tick.
 *
 * The fleet is one tests/integration/fake-qemu process (VR_FAKE_QEMU,
 * --fleet --agent): FLEET_SIZE domains, each a QMP socket and an agent
 * socket answered as a guest agent would, each recording what it was asked
 * in its own record file. The host always needs memory (watermark-metric
 * none), so the fleet quota is shared out and each agent gets its policy.
 * The test reads each domain's record file: get-regions, hello and
 * set-policy for every one, and get-regions going on while it watches (a
 * domain the daemon forgot would stop); with pictures-per-tick below the
 * fleet's size, the pictures asked in turn. Agents with the
 * "cold-histogram" capability send the histogram instead of the picture;
 * older ones (fake-qemu --no-cold-histogram) their picture. bench/fleet-scale measures the same
 * at 100 and 1000 domains.
 *
 * libvirt is the in-process test driver (test:///default): its domain is of
 * type test, never managed.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-fake-tree.h"
#include "control/control-client.h"
#include "test-fake-qemu.h"

/* Domains in the fleet. */
#define FLEET_SIZE 20
/* The daemon's tick, ms. */
#define INTERVAL_MS 200
/* How long the fleet gets to be found and served, ms. */
#define DAEMON_WAIT_MS 20000
/* How long the test watches the served fleet, ms. */
#define WATCH_MS 2000
/* Between two polls, us. */
#define POLL_US (50 * 1000)
/* One control request's reply, ms. */
#define CALL_TIMEOUT_MS 5000

static char *dir;
static char *socket_path;
static char *log_path;
static char *log_text;
static GPid daemon_pid;
static GPid fake_pid;
/* RLIMIT_NOFILE of the daemon (soft and hard), 0 to leave it. */
static rlim_t daemon_nofile;

static const char *daemon_log(void)
{
	g_clear_pointer(&log_text, g_free);
	if (!g_file_get_contents(log_path, &log_text, NULL, NULL))
		log_text = g_strdup("(no log)");
	return log_text;
}

/* In vreclaimd: its output to the log file, daemon_nofile; it dies with
 * the test worker. */
static void daemon_setup(gpointer data)
{
	struct rlimit rl = { daemon_nofile, daemon_nofile };

	if (daemon_nofile)
		setrlimit(RLIMIT_NOFILE, &rl);
	test_child_setup(data);
}

/* Domain @i's name and record file (owned), as fake-qemu --fleet names them. */
static char *domain_name(guint i)
{
	return g_strdup_printf("fleet-%04u", i);
}

static char *domain_file(guint i, const char *file)
{
	g_autofree char *name = domain_name(i);

	return g_build_filename(dir, "fleet", name, file, NULL);
}

/* The commands domain @i was sent, one a line, in order ("agent:NAME" for
 * its agent's); an empty list before its record exists. */
static GStrv record_lines(guint i)
{
	g_autofree char *path = domain_file(i, "commands.txt");
	g_autofree char *text = NULL;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		return g_new0(char *, 1);
	return g_strsplit(text, "\n", -1);
}

/* How many times domain @i was sent @command. */
static guint count(guint i, const char *command)
{
	g_auto(GStrv) lines = record_lines(i);
	guint n = 0;

	for (guint j = 0; lines[j]; j++)
		n += !strcmp(lines[j], command);
	return n;
}

/* The line of domain @i's record where @command was first sent, from 0;
 * G_MAXUINT when it never was. */
static guint first_sent(guint i, const char *command)
{
	g_auto(GStrv) lines = record_lines(i);

	for (guint j = 0; lines[j]; j++)
		if (!strcmp(lines[j], command))
			return j;
	return G_MAXUINT;
}

/* The pictures domain @i's agent sent: get-regions, or get-cold-histogram
 * (fake-qemu's agent has that capability). */
static guint pictures(guint i)
{
	return count(i, "agent:get-regions") + count(i, "agent:get-cold-histogram");
}

/* The fleet's fake QEMU; @extra: one more argument, or NULL. */
static void start_fake_with(const char *extra)
{
	g_autofree char *fleet = g_build_filename(dir, "fleet", NULL);
	g_autofree char *log = g_build_filename(dir, "fake-qemu.log", NULL);
	g_autofree char *count_arg = g_strdup_printf("%d", FLEET_SIZE);
	const char *args[] = { "--fleet",   fleet, "--count", count_arg, "--agent",
			       "--regions", "300", extra,     NULL };

	fake_pid = test_fake_qemu_start(args, log);
}

static void start_fake(void)
{
	start_fake_with(NULL);
}

/* Start vreclaimd on the fleet, with @fleet_lines in its config's [fleet]. */
static void start_daemon_with(const char *fleet_lines)
{
	const char *binary = g_getenv("VRECLAIMD");
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) error = NULL;
	g_autofree char *config = g_build_filename(dir, "vreclaimd.conf", NULL);
	g_autofree char *text = g_strdup_printf("[daemon]\n"
						"connect = test:///default\n"
						"policy-dir = %s/policies\n"
						"state-dir = %s/state\n"
						"control-socket = %s\n"
						"interval-ms = %d\n"
						"[host]\n"
						"watermark-metric = none\n"
						"[fleet]\n"
						"%s",
						dir, dir, socket_path, INTERVAL_MS, fleet_lines);

	cr_assert_not_null(binary, "VRECLAIMD must name the vreclaimd binary");
	tree_put(dir, "vreclaimd.conf", text);
	g_ptr_array_add(argv, g_strdup(binary));
	g_ptr_array_add(argv, g_strdup("--config"));
	g_ptr_array_add(argv, g_strdup(config));
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_ptr_array_add(argv, g_strdup("--qmp"));
		g_ptr_array_add(argv, domain_file(i, "qmp.sock"));
	}
	g_ptr_array_add(argv, NULL);
	cr_assert(g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				daemon_setup, log_path, &daemon_pid, &error),
		  "cannot start vreclaimd: %s", error ? error->message : "?");
}

static void start_daemon(void)
{
	start_daemon_with("");
}

static void setup(void)
{
	g_autoptr(GError) error = NULL;

	dir = g_dir_make_tmp("vr-qmp-fleet-XXXXXX", &error);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", error ? error->message : "?");
	socket_path = g_build_filename(dir, "ctl.sock", NULL);
	log_path = g_build_filename(dir, "daemon.log", NULL);
	tree_mkdir(dir, "policies");
}

static void teardown(void)
{
	test_stop_pid(&daemon_pid, SIGTERM);
	test_stop_pid(&fake_pid, SIGKILL);
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&log_path, g_free);
	g_clear_pointer(&log_text, g_free);
}

TestSuite(qmp_fleet, .init = setup, .fini = teardown,
	  .description = "vreclaimd with a fleet of QEMUs given by --qmp");

/* The daemon's status: how many fleet domains it manages with agent-reclaim
 * and their agent connected; *@names gets the others' names and why. */
static guint served(GString *others)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;
	guint n = 0;

	if (!c || !vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, &error)) {
		g_string_append_printf(others, "(no status: %s)", error->message);
		return 0;
	}
	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);

		if (!g_str_has_prefix(st->name, "fleet-"))
			continue;
		if (st->managed && st->action == VR_DOMAIN_ACTION_AGENT_RECLAIM &&
		    st->agent_state == VR_AGENT_STATE_CONNECTED)
			n++;
		else
			g_string_append_printf(others, "%s (managed %d, action %s, agent %s: %s) ",
					       st->name, st->managed,
					       vr_domain_action_name(st->action),
					       vr_agent_state_name(st->agent_state), st->reason);
	}
	return n;
}

/* The fewest get-regions any domain got, and which one. */
static guint least_regions(guint *which)
{
	guint least = G_MAXUINT;

	for (guint i = 0; i < FLEET_SIZE; i++) {
		guint n = pictures(i);

		if (n < least) {
			least = n;
			*which = i;
		}
	}
	return least;
}

Test(qmp_fleet, every_domain_served)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	guint before[FLEET_SIZE], which = 0, least;

	start_fake();
	start_daemon();

	/* Every domain found, managed with agent-reclaim, its agent up and
	 * asked for its picture. */
	for (;;) {
		g_autoptr(GString) others = g_string_new(NULL);
		guint n;

		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		n = served(others);
		if (n == FLEET_SIZE && least_regions(&which) > 0)
			break;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the %d domains managed with their agent and asked for "
			  "regions within %d ms: %u are; not: %s; fewest get-regions: %u (%s); "
			  "the log:\n%s",
			  FLEET_SIZE, DAEMON_WAIT_MS, n, others->str, least_regions(&which),
			  domain_name(which), daemon_log());
		g_usleep(POLL_US);
	}
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_autofree char *name = domain_name(i);

		cr_assert_eq(count(i, "agent:hello"), 1,
			     "expected one agent hello for %s (one session), got %u", name,
			     count(i, "agent:hello"));
		cr_assert_geq(count(i, "agent:set-policy"), 1,
			      "expected %s's agent given its policy", name);
		/* The acquire step asks for a picture once the act step sent
		 * the policy it is to be computed under, never before. */
		cr_assert_lt(first_sent(i, "agent:set-policy"),
			     first_sent(i, "agent:get-cold-histogram"),
			     "expected %s's agent given its policy before it was asked for a "
			     "picture (lines %u and %u of its record)",
			     name, first_sent(i, "agent:set-policy"),
			     first_sent(i, "agent:get-cold-histogram"));
		cr_assert_eq(count(i, "qmp_capabilities"), 1,
			     "expected one QMP connection for %s, got %u", name,
			     count(i, "qmp_capabilities"));
		before[i] = pictures(i);
	}

	/* Served every tick while the test watches: each domain's pictures go
	 * on (half of the ticks at least, for a loaded machine). */
	g_usleep(WATCH_MS * 1000);
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_autofree char *name = domain_name(i);
		guint got = pictures(i) - before[i];

		cr_assert_geq(got, WATCH_MS / INTERVAL_MS / 2,
			      "expected %s asked for its picture about every %d ms, it got %u "
			      "get-regions in %d ms; the log:\n%s",
			      name, INTERVAL_MS, got, WATCH_MS, daemon_log());
	}
	least = least_regions(&which);
	cr_log_info("%d domains served; the fewest get-regions: %u", FLEET_SIZE, least);
	cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "expected vreclaimd running");
}

/* With fewer pictures a tick than domains (pictures-per-tick = 5 for 20
 * domains), each domain's picture is asked for in turn, every 4 ticks: every
 * domain still served, none asked every tick, the fleet about 5 a tick. */
Test(qmp_fleet, pictures_in_turn)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	guint before[FLEET_SIZE], which = 0, total = 0;
	const guint period = FLEET_SIZE / 5, ticks = WATCH_MS / INTERVAL_MS;

	start_fake();
	start_daemon_with("pictures-per-tick = 5\n");
	for (;;) {
		g_autoptr(GString) others = g_string_new(NULL);

		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		if (served(others) == FLEET_SIZE && least_regions(&which) > 0)
			break;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the %d domains served within %d ms; not: %s; the log:\n%s",
			  FLEET_SIZE, DAEMON_WAIT_MS, others->str, daemon_log());
		g_usleep(POLL_US);
	}
	for (guint i = 0; i < FLEET_SIZE; i++)
		before[i] = pictures(i);
	g_usleep(WATCH_MS * 1000);
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_autofree char *name = domain_name(i);
		guint got = pictures(i) - before[i];

		cr_assert_geq(
			got, 1,
			"expected %s asked for its picture in %d ms, it was not; the log:\n%s",
			name, WATCH_MS, daemon_log());
		/* Every 4th tick, and a tick or two of slack. */
		cr_assert_leq(got, ticks / period + 2,
			      "expected %s asked about every %u ticks, it got %u get-regions in %u "
			      "ticks",
			      name, period, got, ticks);
		total += got;
	}
	cr_log_info("%u get-regions in %u ticks for %d domains, 5 a tick at most", total, ticks,
		    FLEET_SIZE);
	cr_assert_leq(total, 5 * (ticks + 2),
		      "expected at most 5 pictures a tick, got %u in %u ticks", total, ticks);
}

/* A fleet beyond the daemon's RLIMIT_NOFILE: it says so at the start, with
 * the fix, and keeps running and serving the domains it could take. */
Test(qmp_fleet, too_few_file_descriptors_said_at_start)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	g_autofree char *want = g_strdup_printf("%d --qmp domains need about", FLEET_SIZE);

	daemon_nofile = 48;
	start_fake();
	start_daemon();
	while (!strstr(daemon_log(), "RLIMIT_NOFILE allows 48")) {
		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected a warning about RLIMIT_NOFILE 48; the log:\n%s", daemon_log());
		g_usleep(POLL_US);
	}
	cr_assert(strstr(daemon_log(), want) && strstr(daemon_log(), "LimitNOFILE="),
		  "expected the warning to say how many descriptors %d domains need and how to "
		  "raise the limit; the log:\n%s",
		  FLEET_SIZE, daemon_log());
	/* Some domains are taken; the daemon runs on. */
	for (;;) {
		guint served_any = 0;

		for (guint i = 0; i < FLEET_SIZE; i++)
			served_any += pictures(i) > 0;
		if (served_any)
			break;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected some domains served with the descriptors there are; the "
			  "log:\n%s",
			  daemon_log());
		g_usleep(POLL_US);
	}
	g_usleep(1000 * 1000);
	cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0,
		  "expected vreclaimd running; its log:\n%s", daemon_log());
}

/* The fleet's domains all served, their pictures (or histograms) asked for;
 * the daemon's status of each, by index, into @cold (cold bytes). */
static void wait_fleet_cold(uint64_t *cold)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	for (;;) {
		g_autoptr(GString) others = g_string_new(NULL);
		g_autoptr(GError) error = NULL;
		g_autoptr(vr_control_client) c = NULL;
		g_autoptr(GPtrArray) doms = NULL;
		struct vr_daemon_status d;
		guint which = 0, with_cold = 0;

		cr_assert(waitpid(daemon_pid, NULL, WNOHANG) == 0, "vreclaimd exited; its log:\n%s",
			  daemon_log());
		c = vr_control_client_connect(socket_path, &error);
		if (served(others) == FLEET_SIZE && least_regions(&which) > 0 && c &&
		    vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, &error)) {
			for (guint i = 0; i < doms->len; i++) {
				const struct vr_domain_status *st = g_ptr_array_index(doms, i);
				guint idx;

				if (sscanf(st->name, "fleet-%u", &idx) != 1 || idx >= FLEET_SIZE)
					continue;
				cold[idx] = st->cold_bytes;
				with_cold += st->cold_bytes > 0;
			}
			if (with_cold == FLEET_SIZE)
				return;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the %d domains served, each with cold bytes from its agent, "
			  "within %d ms; not served: %s; the log:\n%s",
			  FLEET_SIZE, DAEMON_WAIT_MS, others->str, daemon_log());
		g_usleep(POLL_US);
	}
}

/* With the capability, the fleet decision runs on the agents' histograms:
 * every domain's cold bytes come from get-cold-histogram, and no picture is
 * asked for. */
Test(qmp_fleet, capable_agents_send_histograms)
{
	uint64_t cold[FLEET_SIZE] = { 0 };

	start_fake();
	start_daemon();
	wait_fleet_cold(cold);
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_autofree char *name = domain_name(i);

		cr_assert_geq(count(i, "agent:get-cold-histogram"), 1,
			      "expected %s asked for its cold histogram", name);
		cr_assert_eq(count(i, "agent:get-regions"), 0,
			     "expected no picture asked of %s's capable agent, got %u", name,
			     count(i, "agent:get-regions"));
		cr_assert_gt(cold[i], 0, "expected cold bytes for %s", name);
	}
	cr_assert_null(strstr(daemon_log(), "refused"), "nothing refused expected; the log:\n%s",
		       daemon_log());
}

/* An agent from before the capability gets no generation in set-policy
 * (it would refuse it) and is asked for its picture, as before. */
Test(qmp_fleet, older_agents_send_pictures)
{
	uint64_t cold[FLEET_SIZE] = { 0 };

	start_fake_with("--no-cold-histogram");
	start_daemon();
	wait_fleet_cold(cold);
	for (guint i = 0; i < FLEET_SIZE; i++) {
		g_autofree char *name = domain_name(i);

		cr_assert_geq(count(i, "agent:get-regions"), 1, "expected %s asked for its picture",
			      name);
		cr_assert_eq(count(i, "agent:get-cold-histogram"), 0,
			     "expected no histogram asked of %s's older agent, got %u", name,
			     count(i, "agent:get-cold-histogram"));
		cr_assert_gt(cold[i], 0, "expected cold bytes for %s", name);
	}
	cr_assert_null(strstr(daemon_log(), "agent set-policy:"),
		       "expected set-policy accepted by the older agents; the log:\n%s",
		       daemon_log());
}
