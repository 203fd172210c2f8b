// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaim-agent as a process, over its unix socket, on a fake guest: the
 * memcg backend on a fake cgroup and procfs tree (no DAMON in the tree, so
 * "auto" picks memcg, as in a guest kernel without DAMON). What the host
 * sees: hello, stats (reportable free memory with a reporting balloon in
 * the tree), policies, pause/resume, reclaim, reports; malformed
 * and hostile lines get error replies and the agent keeps serving; a host
 * that goes away and comes back is served again; SIGTERM ends it cleanly.
 *
 * The agent binary comes from the VR_AGENT environment variable (meson).
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-fake-tree.h"
#include "agent/agent-client.h"
#include "protocol.h"

static char *root; /* the fake guest: sys/, proc/, cgroup/ */
static char *socket_path;
static GPid agent_pid;
static char *log_path; /* the agent's stderr when set, else the test's */

/* Free blocks of order 9 and up: 3 of 2^9 pages and 126 of 2^10, 130560
 * pages; of order 10 and up 129024 pages. */
static const char fake_buddyinfo[] =
	"Node 0, zone      DMA      1      0      1      0      2      1      1      0      1      1      3 \n"
	"Node 0, zone    DMA32    325    284    178    112     52     23     13      7      4      2    123 \n";

static void fake_guest(void)
{
	root = tree_new();
	tree_put(root, "proc/meminfo",
		 "MemTotal:        1000000 kB\nMemFree:          600000 kB\n"
		 "MemAvailable:     700000 kB\nSwapTotal:        524288 kB\n"
		 "SwapFree:         524288 kB\n");
	tree_put(root, "proc/pressure/memory",
		 "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	tree_put(root, "proc/sys/kernel/osrelease", "6.12.0-fake\n");
	tree_put(root, "proc/vmstat",
		 "nr_free_pages 150000\npswpin 7\npswpout 1000\n"
		 "pgsteal_kswapd 900\npgsteal_file 500\n");
	tree_put(root, "proc/sys/vm/compact_memory", "");
	tree_put(root, "proc/buddyinfo", fake_buddyinfo);
	tree_put(root, "cgroup/memory.reclaim", "");
	tree_mkdir(root, "sys/bus/virtio/devices");
	socket_path = g_build_filename(root, "agent.sock", NULL);
}

/* The agent dies with the test worker, even one that crashed before its
 * teardown could stop it. */
static void die_with_parent(gpointer data)
{
	(void)data;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (log_path) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0)
			dup2(fd, STDERR_FILENO);
	}
}

/* Start the agent with @extra arguments and wait for its socket. */
static void start_agent(const char *const *extra)
{
	const char *agent = g_getenv("VR_AGENT");
	cr_assert_not_null(agent, "VR_AGENT must name the vreclaim-agent binary");
	g_autofree char *sysfs = g_build_filename(root, "sys", NULL);
	g_autofree char *procfs = g_build_filename(root, "proc", NULL);
	g_autofree char *cgroup = g_build_filename(root, "cgroup", NULL);
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_ptr_array_add(argv, (char *)agent);
	g_ptr_array_add(argv, (char *)"--socket");
	g_ptr_array_add(argv, socket_path);
	g_ptr_array_add(argv, (char *)"--sysfs-root");
	g_ptr_array_add(argv, sysfs);
	g_ptr_array_add(argv, (char *)"--procfs-root");
	g_ptr_array_add(argv, procfs);
	g_ptr_array_add(argv, (char *)"--cgroup-root");
	g_ptr_array_add(argv, cgroup);
	for (; extra && *extra; extra++)
		g_ptr_array_add(argv, (char *)*extra);
	g_ptr_array_add(argv, NULL);
	g_autoptr(GError) error = NULL;
	cr_assert(g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				die_with_parent, NULL, &agent_pid, &error),
		  "cannot start the agent: %s", error ? error->message : "?");
	/* The socket file appears at bind(), a moment before listen(): wait
	 * until a connection is taken (and close it: the agent serves the next). */
	bool listening = false;
	for (int i = 0; i < 500 && !listening; i++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		g_strlcpy(sa.sun_path, socket_path, sizeof(sa.sun_path));
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		cr_assert(fd >= 0);
		listening = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (!listening)
			g_usleep(10000);
	}
	cr_assert(listening, "the agent never listened on %s", socket_path);
}

/* Stop the agent by its pid; return its exit status. */
static int stop_agent(void)
{
	int status = -1;
	if (agent_pid > 0) {
		kill(agent_pid, SIGTERM);
		waitpid(agent_pid, &status, 0);
		g_spawn_close_pid(agent_pid);
		agent_pid = 0;
	}
	return status;
}

static void setup(void)
{
	fake_guest();
	start_agent(NULL);
}

static void teardown(void)
{
	stop_agent();
	tree_rm(root);
	g_free(root);
	g_free(socket_path);
	g_clear_pointer(&log_path, g_free);
}

TestSuite(agent, .init = setup, .fini = teardown);

static struct vr_agent_client *connect_agent(void)
{
	g_autoptr(GError) error = NULL;
	struct vr_agent_client *c = vr_agent_client_connect(socket_path, &error);
	cr_assert_not_null(c, "connect: %s", error ? error->message : "?");
	return c;
}

/* One call that must succeed with a reply (not an error reply). */
static void call_ok(struct vr_agent_client *c, struct vr_proto_request *req,
		    struct vr_proto_message *reply)
{
	g_autoptr(GError) error = NULL;
	cr_assert(vr_agent_client_call(c, req, 5000, reply, NULL, &error), "%s: %s",
		  vr_proto_command_name(req->command), error ? error->message : "?");
	cr_assert_eq(reply->kind, VR_PROTO_MESSAGE_REPLY, "%s got an error reply: %s",
		     vr_proto_command_name(req->command),
		     reply->kind == VR_PROTO_MESSAGE_ERROR ? reply->error.desc : "?");
}

static struct vr_agent_stats get_stats(struct vr_agent_client *c)
{
	struct vr_proto_request req = { .command = VR_PROTO_GET_STATS };
	g_auto(vr_proto_message) reply = { 0 };
	call_ok(c, &req, &reply);
	return reply.stats;
}

/* A raw line in, the raw reply line out (for what the client refuses to send). */
static char *raw_exchange(int fd, const char *line, gsize len)
{
	gsize off = 0;
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);
		cr_assert_gt(n, 0, "write: %s", g_strerror(errno));
		off += (gsize)n;
	}
	GString *in = g_string_new(NULL);
	while (!strchr(in->str, '\n')) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "no reply within 5 s to: %.60s", line);
		char buf[4096];
		ssize_t n = read(fd, buf, sizeof(buf));
		cr_assert_gt(n, 0, "the agent closed the channel");
		g_string_append_len(in, buf, n);
	}
	return g_string_free(in, FALSE);
}

static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_strlcpy(sa.sun_path, socket_path, sizeof(sa.sun_path));
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s",
		  g_strerror(errno));
	return fd;
}

/* Decode @reply as an error reply and check its class and id. */
static void expect_error(const char *reply, enum vr_proto_error_class cls, uint32_t id,
			 const char *desc_part)
{
	g_auto(vr_proto_message) m = { 0 };
	g_autoptr(GError) error = NULL;
	cr_assert(vr_proto_decode_message(reply, strlen(reply), NULL, NULL, &m, &error),
		  "the agent's reply does not decode: %s (%s)", error ? error->message : "?",
		  reply);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_ERROR, "expected an error reply, got: %s", reply);
	cr_assert_eq(m.error.cls, cls, "expected class %s, got: %s", vr_proto_error_class_name(cls),
		     reply);
	cr_assert_eq(m.id, id, "expected id %u, got: %s", id, reply);
	if (desc_part)
		cr_assert(strstr(m.error.desc, desc_part), "expected '%s' in: %s", desc_part,
			  m.error.desc);
}

Test(agent, hello_names_the_memcg_backend_and_the_missing_reporting)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_proto_request req = { .command = VR_PROTO_HELLO };
	g_auto(vr_proto_message) reply = { 0 };
	call_ok(c, &req, &reply);
	cr_expect_eq(reply.hello.version, VR_PROTO_VERSION);
	cr_expect_str_eq(reply.hello.kernel, "6.12.0-fake");
	cr_expect_str_eq(reply.hello.backend, "memcg");
	cr_expect_eq(reply.hello.nr_backends, 1, "only memcg probes usable in this tree");
	cr_expect_not(reply.hello.free_page_reporting);
}

Test(agent, stats_come_from_the_guest_meminfo)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_expect_str_eq(s.backend, "memcg");
	cr_expect_eq(s.mem_total_bytes, 1000000ULL * 1024);
	cr_expect_eq(s.mem_free_bytes, 600000ULL * 1024);
	cr_expect_eq(s.swap_total_bytes, 524288ULL * 1024);
	cr_expect_not(s.paused);
}

/* Give the fake guest a virtio balloon that negotiated free page reporting
 * (feature bit 5), reporting at order @order, and restart the agent with
 * @extra arguments: it probes for reporting at start. */
static void restart_with_reporting(const char *order, const char *const *extra)
{
	char features[66];

	memset(features, '0', 64);
	features[5] = features[32] = '1';
	features[64] = '\n';
	features[65] = '\0';
	stop_agent();
	tree_put(root, "sys/bus/virtio/devices/virtio0/device", "0x0005\n");
	tree_put(root, "sys/bus/virtio/devices/virtio0/features", features);
	tree_symlink(root, "sys/bus/virtio/devices/virtio0/driver",
		     "../../../../bus/virtio/drivers/virtio_balloon");
	tree_put(root, "sys/module/page_reporting/parameters/page_reporting_order", order);
	start_agent(extra);
}

Test(agent, no_reportable_free_bytes_without_free_page_reporting)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);

	cr_expect_not(s.free_page_reporting, "the tree has no balloon");
	cr_expect_not(
		s.has_reportable_free_bytes,
		"no reporting: nothing is handed to the host, so no figure (got %" G_GUINT64_FORMAT
		")",
		s.reportable_free_bytes);
}

Test(agent, reportable_free_bytes_count_the_blocks_of_the_reporting_order)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	restart_with_reporting("9\n", NULL);
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_assert(s.free_page_reporting, "the fake balloon reports");
	cr_assert(s.has_reportable_free_bytes, "reporting is on at order 9: expected the member");
	cr_expect_eq(s.reportable_free_bytes, 130560 * page,
		     "blocks of order 9 and 10: expected %" G_GUINT64_FORMAT
		     ", got %" G_GUINT64_FORMAT,
		     130560 * page, s.reportable_free_bytes);
	/* A gauge: each stats read reads buddyinfo again. */
	tree_put(root, "proc/buddyinfo", "Node 0, zone Normal 5 0 0 0 0 0 0 0 0 2 1\n");
	s = get_stats(c);
	cr_expect_eq(s.reportable_free_bytes, (2 * 512 + 1024) * page,
		     "after the guest's free memory changed, got %" G_GUINT64_FORMAT,
		     s.reportable_free_bytes);
}

Test(agent, reportable_free_bytes_follow_the_reporting_order_set)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	restart_with_reporting("9\n", (const char *const[]){ "--reporting-order", "10", NULL });
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_assert(s.has_reportable_free_bytes, "reporting is on at order 10: expected the member");
	cr_expect_eq(s.reportable_free_bytes, 129024 * page,
		     "only the blocks of order 10: expected %" G_GUINT64_FORMAT
		     ", got %" G_GUINT64_FORMAT,
		     129024 * page, s.reportable_free_bytes);
}

Test(agent, an_unreadable_buddyinfo_leaves_the_member_out_and_the_stats_whole)
{
	restart_with_reporting("9\n", NULL);
	g_autoptr(vr_agent_client) c = connect_agent();
	tree_put(root, "proc/buddyinfo", "Node 0, zone Normal 1 x\n");
	struct vr_agent_stats s = get_stats(c);
	cr_expect_not(s.has_reportable_free_bytes, "a malformed buddyinfo: no member");
	cr_expect_eq(s.mem_total_bytes, 1000000ULL * 1024, "the rest of the stats stand");
	tree_unlink(root, "proc/buddyinfo");
	s = get_stats(c);
	cr_expect_not(s.has_reportable_free_bytes, "no buddyinfo: no member");
	cr_expect(s.free_page_reporting, "reporting is still on");
	cr_expect_eq(s.mem_free_bytes, 600000ULL * 1024, "the rest of the stats stand");
}

Test(agent, malformed_lines_get_error_replies_and_the_agent_keeps_serving)
{
	int fd = raw_connect();
	static const struct {
		const char *line;
		enum vr_proto_error_class cls;
		uint32_t id;
		const char *desc_part;
	} cases[] = {
		{ "this is not json\n", VR_PROTO_ERROR_SYNTAX, 0, NULL },
		{ "[1,2]\n", VR_PROTO_ERROR_SYNTAX, 0, NULL },
		{ "{\"vreclaim\":1,\"id\":7,\"command\":\"hel\n", VR_PROTO_ERROR_SYNTAX, 0, NULL },
		{ "{\"vreclaim\":2,\"id\":3,\"command\":\"hello\"}\n", VR_PROTO_ERROR_BAD_VERSION,
		  3, NULL },
		{ "{\"id\":4,\"command\":\"hello\"}\n", VR_PROTO_ERROR_BAD_VERSION, 4, NULL },
		{ "{\"vreclaim\":1,\"id\":5,\"command\":\"format-disk\"}\n",
		  VR_PROTO_ERROR_UNKNOWN_COMMAND, 5, "format-disk" },
		{ "{\"vreclaim\":1,\"id\":6,\"command\":\"reclaim\",\"arguments\":{\"bytes\":\"lots\","
		  "\"deadline_ms\":100}}\n",
		  VR_PROTO_ERROR_INVALID_ARGUMENT, 6, "arguments.bytes" },
		{ "{\"vreclaim\":1,\"id\":8,\"command\":\"set-policy\",\"arguments\":{\"policy\":"
		  "{\"monitoring\":{\"min_nr_regions\":1}}}}\n",
		  VR_PROTO_ERROR_INVALID_ARGUMENT, 8, "arguments.policy" },
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree char *reply = raw_exchange(fd, cases[i].line, strlen(cases[i].line));
		expect_error(reply, cases[i].cls, cases[i].id, cases[i].desc_part);
	}
	/* A line longer than the protocol allows, then a good one. */
	g_autofree char *big = g_malloc(VR_PROTO_MAX_LINE + 100);
	memset(big, 'x', VR_PROTO_MAX_LINE + 99);
	big[VR_PROTO_MAX_LINE + 99] = '\n';
	g_autofree char *too_long = raw_exchange(fd, big, VR_PROTO_MAX_LINE + 100);
	expect_error(too_long, VR_PROTO_ERROR_TOO_LONG, 0, NULL);
	const char hello[] = "{\"vreclaim\":1,\"id\":9,\"command\":\"hello\"}\n";
	g_autofree char *ok = raw_exchange(fd, hello, strlen(hello));
	cr_expect(strstr(ok, "\"id\":9") && strstr(ok, "\"return\""),
		  "hello after the garbage was not served: %s", ok);
	close(fd);
}

/*
 * A host (or a local client of the socket) sending garbage: every line gets
 * its error reply, but the agent logs at most 3 warnings per 10 s about them
 * (VR_AGENT_HOST_LOG_BURST), the next one saying how many were held back;
 * it logged one per line before (190 MB in 40 s, issue 16).
 */
Test(agent, garbage_is_answered_line_by_line_but_logged_rate_limited)
{
	const char garbage[] = "this is not json\n";
	const guint nr = 1000;

	stop_agent();
	log_path = g_build_filename(root, "agent.log", NULL);
	start_agent(NULL);
	int fd = raw_connect();
	g_autoptr(GString) flood = g_string_new(NULL);
	for (guint i = 0; i < nr; i++)
		g_string_append(flood, garbage);
	for (gsize off = 0; off < flood->len;) {
		ssize_t n = write(fd, flood->str + off, flood->len - off);
		cr_assert_gt(n, 0, "write: %s", g_strerror(errno));
		off += (gsize)n;
	}
	guint replies = 0;
	while (replies < nr) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[65536];
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "no reply within 5 s after %u replies",
			     replies);
		ssize_t n = read(fd, buf, sizeof(buf));
		cr_assert_gt(n, 0, "the agent closed the channel after %u replies", replies);
		for (ssize_t i = 0; i < n; i++)
			replies += buf[i] == '\n';
	}
	cr_assert_eq(replies, nr, "expected one error reply per line");
	const char hello[] = "{\"vreclaim\":1,\"id\":9,\"command\":\"hello\"}\n";
	g_autofree char *ok = raw_exchange(fd, hello, strlen(hello));
	cr_assert(strstr(ok, "\"id\":9") && strstr(ok, "\"return\""),
		  "hello after the garbage was not served: %s", ok);
	close(fd);

	g_autofree char *text = NULL;
	cr_assert(g_file_get_contents(log_path, &text, NULL, NULL), "no agent log at %s", log_path);
	guint warnings = 0;
	for (const char *p = text; (p = strstr(p, "bad request from the host")); p++)
		warnings++;
	cr_assert_geq(warnings, 1, "expected the first bad line logged:\n%s", text);
	cr_assert_leq(warnings, 3, "expected at most 3 warnings for %u bad lines, got %u:\n%.2000s",
		      nr, warnings, text);
}

Test(agent, an_invalid_policy_changes_nothing)
{
	int fd = raw_connect();
	const char bad[] =
		"{\"vreclaim\":1,\"id\":1,\"command\":\"set-policy\",\"arguments\":"
		"{\"policy\":{\"schemes\":[{\"name\":\"x\",\"action\":\"explode\"}]}}}\n";
	g_autofree char *reply = raw_exchange(fd, bad, strlen(bad));
	expect_error(reply, VR_PROTO_ERROR_INVALID_ARGUMENT, 1, "action");
	close(fd);
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_expect_not(s.paused, "the agent still runs its policy");
}

Test(agent, a_host_that_goes_away_and_comes_back_is_served)
{
	for (int i = 0; i < 3; i++) {
		g_autoptr(vr_agent_client) c = connect_agent();
		struct vr_agent_stats s = get_stats(c);
		cr_expect_str_eq(s.backend, "memcg", "connection %d", i);
	}
	/* A half line left by a host that went away does not spoil the next. */
	int fd = raw_connect();
	cr_assert_eq(write(fd, "{\"vreclaim\":1,\"id\":1,", 21), 21);
	close(fd);
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_expect_str_eq(s.backend, "memcg");
}

Test(agent, a_new_connection_replaces_the_old_one)
{
	g_autoptr(vr_agent_client) first = connect_agent();
	(void)get_stats(first);
	g_autoptr(vr_agent_client) second = connect_agent();
	(void)get_stats(second);
	struct vr_proto_request req = { .command = VR_PROTO_GET_STATS };
	g_auto(vr_proto_message) reply = { 0 };
	g_autoptr(GError) error = NULL;
	cr_expect_not(vr_agent_client_call(first, &req, 2000, &reply, NULL, &error),
		      "the replaced connection still got a reply");
}

/* A host that left a half line and is replaced while its stream is still
 * open (no end of stream read): the new host's first line is read whole. */
Test(agent, a_replaced_connection_leaves_no_half_line)
{
	int fd = raw_connect();
	cr_assert_eq(write(fd, "{\"vreclaim\":1,\"id\":1,", 21), 21);
	g_usleep(200 * 1000); /* the agent reads the half line */
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);
	cr_expect_str_eq(s.backend, "memcg");
	close(fd);
}

Test(agent, pause_and_resume_show_in_the_stats)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_proto_request pause = { .command = VR_PROTO_PAUSE };
	g_auto(vr_proto_message) r1 = { 0 };
	call_ok(c, &pause, &r1);
	cr_expect(get_stats(c).paused);
	struct vr_proto_request reclaim = {
		.command = VR_PROTO_RECLAIM,
		.reclaim = { .bytes = 1 << 20, .deadline_ms = 1000 },
	};
	g_auto(vr_proto_message) r2 = { 0 };
	g_autoptr(GError) error = NULL;
	cr_assert(vr_agent_client_call(c, &reclaim, 5000, &r2, NULL, &error));
	cr_expect_eq(r2.kind, VR_PROTO_MESSAGE_ERROR, "a paused agent must refuse to reclaim");
	struct vr_proto_request resume = { .command = VR_PROTO_RESUME };
	g_auto(vr_proto_message) r3 = { 0 };
	call_ok(c, &resume, &r3);
	cr_expect_not(get_stats(c).paused);
}

Test(agent, reclaim_writes_memory_reclaim_and_counts_it)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats before = get_stats(c);
	struct vr_proto_request req = {
		.command = VR_PROTO_RECLAIM,
		.reclaim = { .bytes = 4 << 20, .deadline_ms = 2000 },
	};
	g_auto(vr_proto_message) reply = { 0 };
	call_ok(c, &req, &reply);
	cr_expect_eq(reply.reclaim.reclaimed_bytes, 4 << 20,
		     "a fake memory.reclaim takes every write: all 4 MiB count");
	g_autofree char *written = tree_get(root, "cgroup/memory.reclaim");
	cr_expect(written[0] >= '1' && written[0] <= '9', "memory.reclaim holds '%s'", written);
	struct vr_agent_stats after = get_stats(c);
	cr_expect_geq(after.sz_applied - before.sz_applied, 4 << 20);
}

Test(agent, stats_count_what_the_guest_kernel_reclaimed_since_the_agent_started)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_agent_stats s = get_stats(c);

	cr_expect_eq(
		s.reclaimed_bytes, 0,
		"what the guest reclaimed before the agent started counts not: got %" G_GUINT64_FORMAT,
		s.reclaimed_bytes);
	/* 10 MiB written to swap, 1 MiB of page cache reclaimed; the
	 * kswapd/direct split of pgsteal counts only through pgsteal_file. */
	tree_put(root, "proc/vmstat",
		 "nr_free_pages 152816\npswpin 7\npswpout 3560\n"
		 "pgsteal_kswapd 9000\npgsteal_file 756\n");
	s = get_stats(c);
	cr_expect_eq(s.reclaimed_bytes, 11 << 20,
		     "expected 11 MiB reclaimed, got %" G_GUINT64_FORMAT, s.reclaimed_bytes);
	tree_put(root, "proc/vmstat", "pswpout 3560\npgsteal_file notanumber\n");
	s = get_stats(c);
	cr_expect_eq(s.reclaimed_bytes, 11 << 20,
		     "an unreadable vmstat keeps the last count (a lower one would look like a "
		     "restart to the host), got %" G_GUINT64_FORMAT,
		     s.reclaimed_bytes);
	tree_put(root, "proc/vmstat", "pswpout 3000\npgsteal_file 500\n");
	s = get_stats(c);
	cr_expect_eq(s.reclaimed_bytes, 11 << 20,
		     "a lower vmstat count keeps the last one, got %" G_GUINT64_FORMAT,
		     s.reclaimed_bytes);
}

/* Make the fake guest's vmstat say that 20 MiB more went to swap, then
 * wait up to 3 s (three agent ticks) for the agent's stats to count @want compactions. */
static uint64_t compactions_after_reclaim(struct vr_agent_client *c, uint64_t want)
{
	struct vr_agent_stats s;

	tree_put(root, "proc/vmstat",
		 "nr_free_pages 150000\npswpin 7\npswpout 6120\n"
		 "pgsteal_kswapd 900\npgsteal_file 500\n");
	for (int i = 0; i < 30; i++) {
		s = get_stats(c);
		if (s.compactions >= want)
			break;
		g_usleep(100000);
	}
	return s.compactions;
}

Test(agent, compacts_memory_after_enough_reclaim)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	g_autofree char *written = NULL;

	cr_assert_eq(compactions_after_reclaim(c, 1), 1, "20 MiB reclaimed: one compaction");
	written = tree_get(root, "proc/sys/vm/compact_memory");
	cr_expect_str_eq(written, "1", "compact_memory written");
}

static void setup_no_compaction(void)
{
	static const char *const extra[] = { "--no-compaction", NULL };

	fake_guest();
	start_agent(extra);
}

/* Its own suite: the agent suite's setup would start a second agent. */
Test(agent_no_compaction, leaves_compact_memory_alone, .init = setup_no_compaction,
     .fini = teardown)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	g_autofree char *written = NULL;

	cr_expect_eq(compactions_after_reclaim(c, 1), 0, "--no-compaction: no compaction");
	written = tree_get(root, "proc/sys/vm/compact_memory");
	cr_expect_str_eq(written, "", "compact_memory never written");
}

Test(agent, reports_come_at_the_interval_set_by_the_policy)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	struct vr_proto_request req = { .command = VR_PROTO_SET_POLICY };
	g_autoptr(GError) error = NULL;
	req.set_policy.policy = vr_policy_new_profile(NULL, &error);
	req.set_policy.has_report_interval = TRUE;
	req.set_policy.report_interval_ms = 100;
	g_auto(vr_proto_message) reply = { 0 };
	call_ok(c, &req, &reply);
	vr_proto_request_clear(&req);
	uint64_t last = 0;
	for (int i = 0; i < 3; i++) {
		g_auto(vr_proto_message) report = { 0 };
		cr_assert(vr_agent_client_next_report(c, 3000, &report, NULL, &error),
			  "report %d: %s", i, error ? error->message : "?");
		cr_expect_str_eq(report.stats.backend, "memcg");
		if (i)
			cr_expect_gt(report.seq, last, "report numbers grow");
		last = report.seq;
	}
}

Test(agent, sigterm_ends_it_cleanly_and_removes_the_socket)
{
	cr_expect_eq(stop_agent(), 0, "exit status after SIGTERM");
	cr_expect_not(g_file_test(socket_path, G_FILE_TEST_EXISTS), "the socket stays behind");
}

/* Command-line errors: exit 2 (usage) or 1 (nothing usable), one clear line. */
static void expect_agent_fails(const char *const *args, int want_status, const char *want_msg)
{
	const char *agent = g_getenv("VR_AGENT");
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_ptr_array_add(argv, (char *)agent);
	for (; *args; args++)
		g_ptr_array_add(argv, (char *)*args);
	g_ptr_array_add(argv, NULL);
	g_autofree char *err = NULL;
	int status = 0;
	g_autoptr(GError) error = NULL;
	cr_assert(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
			       NULL, NULL, &err, &status, &error));
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == want_status,
		  "expected exit %d, got status %d (%s)", want_status, status, err);
	cr_expect(strstr(err, want_msg), "expected '%s' in: %s", want_msg, err);
}

Test(agent, bad_arguments_are_named)
{
	g_autofree char *sysfs = g_build_filename(root, "sys", NULL);
	g_autofree char *procfs = g_build_filename(root, "proc", NULL);
	g_autofree char *cgroup = g_build_filename(root, "cgroup", NULL);
	g_autofree char *other = g_build_filename(root, "other.sock", NULL);
	const char *const bad_interval[] = { "--socket", other, "--report-interval", "5", NULL };
	expect_agent_fails(bad_interval, 2, "--report-interval");
	const char *const two_channels[] = { "--socket", other, "--vsock", "5", NULL };
	expect_agent_fails(two_channels, 2, "at most one of");
	const char *const peer_alone[] = { "--socket", other, "--vsock-peer", "2", NULL };
	expect_agent_fails(peer_alone, 2, "--vsock-peer goes with --vsock");
	const char *const bad_peer[] = { "--vsock", "5", "--vsock-peer", "hypervisor", NULL };
	expect_agent_fails(bad_peer, 2, "--vsock-peer: 'hypervisor' is not a vsock CID");
	const char *const endless_policy[] = { "--socket", other, "--policy", "/dev/zero", NULL };
	expect_agent_fails(endless_policy, 2, "/dev/zero is larger than the 1048576 bytes allowed");
	const char *const unknown_backend[] = {
		"--socket", other,	     "--sysfs-root", sysfs,	  "--procfs-root",
		procfs,	    "--cgroup-root", cgroup,	     "--backend", "zswap",
		NULL
	};
	expect_agent_fails(unknown_backend, 1, "unknown backend 'zswap'");
	const char *const no_damon[] = {
		"--socket", other,	     "--sysfs-root", sysfs,	  "--procfs-root",
		procfs,	    "--cgroup-root", cgroup,	     "--backend", "damon",
		NULL
	};
	expect_agent_fails(no_damon, 1, "damon");
	g_autofree char *policy = g_build_filename(root, "bad-policy.json", NULL);
	g_file_set_contents(policy, "{\"monitoring\": {\"aggr_interval_us\": 0}}", -1, NULL);
	const char *const bad_policy[] = { "--socket", other, "--policy", policy, NULL };
	expect_agent_fails(bad_policy, 2, "aggr_interval_us");
}

/* The agent has the "cold-histogram" capability: it computes the histogram
 * of its picture (none with memcg: all zero, 0 regions) under the histogram
 * policy of the last set-policy that gave one, tagged with its generation;
 * before one, it answers "failed". */
Test(agent, cold_histogram_under_the_generation_it_was_given)
{
	g_autoptr(vr_agent_client) c = connect_agent();
	g_auto(vr_proto_request) hello = { .command = VR_PROTO_HELLO };
	g_auto(vr_proto_request) get = { .command = VR_PROTO_GET_COLD_HIST };
	g_auto(vr_proto_request) again = { .command = VR_PROTO_GET_COLD_HIST };
	g_auto(vr_proto_request) set = { .command = VR_PROTO_SET_POLICY };
	g_auto(vr_proto_message) r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 };
	g_autoptr(GError) error = NULL;

	call_ok(c, &hello, &r1);
	cr_assert(r1.hello.cold_histogram, "expected the cold-histogram capability in hello");

	cr_assert(vr_agent_client_call(c, &get, 5000, &r2, NULL, &error), "%s",
		  error ? error->message : "?");
	cr_assert_eq(r2.kind, VR_PROTO_MESSAGE_ERROR, "expected no histogram before a policy");
	cr_assert_eq(r2.error.cls, VR_PROTO_ERROR_FAILED);
	cr_assert(strstr(r2.error.desc, "histogram policy"), "%s", r2.error.desc);

	set.set_policy.policy = vr_policy_new_profile(NULL, NULL);
	set.set_policy.histogram_policy = vr_policy_new_profile(NULL, NULL);
	set.set_policy.generation = 7;
	call_ok(c, &set, &r3);
	call_ok(c, &again, &r4);
	cr_assert_eq(r4.cold_hist.generation, 7);
	cr_assert_eq(r4.cold_hist.nr_regions, 0, "memcg has no picture");
	for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++)
		cr_assert_eq(r4.cold_hist.bytes[i], 0, "bucket %u of an empty picture", i);
}
