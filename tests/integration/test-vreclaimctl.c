// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The real vreclaimctl binary against fake-vreclaimd (the daemon's control
 * socket and metrics server in front of a fixed fake fleet of three
 * domains): the status table and --json, set (and its errors: exit 1 with
 * the message), pause/resume, metrics, an unknown domain, a socket nobody
 * listens on, usage errors (exit 2), bounded files and sizes, and the
 * metrics over HTTP.
 *
 * The binaries come from the VRECLAIMCTL and VR_FAKE_VRECLAIMD environment
 * variables (meson). vreclaimctl runs with LC_ALL=C, so sizes have a '.'.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <glib.h>
#include <json.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-fake-tree.h"

static char *tmp;
static char *sock;
static GPid fake_pid;
static guint metrics_port;

/* The fake dies with the test worker, even one that crashed. */
static void die_with_parent(gpointer data)
{
	(void)data;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static void setup(void)
{
	const char *fake = g_getenv("VR_FAKE_VRECLAIMD");
	g_autoptr(GError) err = NULL;
	int out_fd = -1;

	cr_assert_not_null(fake, "VR_FAKE_VRECLAIMD must name the fake-vreclaimd binary");
	cr_assert_not_null(g_getenv("VRECLAIMCTL"), "VRECLAIMCTL must name the vreclaimctl binary");
	tmp = tree_new();
	sock = g_build_filename(tmp, "run", "vreclaimd.sock", NULL);
	const char *argv[] = { fake, "--socket", sock, "--metrics", "127.0.0.1:0", NULL };
	cr_assert(g_spawn_async_with_pipes(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
					   die_with_parent, NULL, &fake_pid, NULL, &out_fd, NULL,
					   &err),
		  "cannot start fake-vreclaimd: %s", err ? err->message : "?");
	/* "ready PORT" once it listens. */
	char buf[64] = { 0 };
	gsize len = 0;
	while (!memchr(buf, '\n', len)) {
		struct pollfd pfd = { .fd = out_fd, .events = POLLIN };
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "fake-vreclaimd is not ready within 5 s");
		ssize_t n = read(out_fd, buf + len, sizeof(buf) - 1 - len);
		cr_assert_gt(n, 0, "fake-vreclaimd ended: %s", buf);
		len += (gsize)n;
	}
	close(out_fd);
	cr_assert_eq(sscanf(buf, "ready %u", &metrics_port), 1, "unexpected: %s", buf);
}

static void teardown(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGTERM);
		waitpid(fake_pid, NULL, 0);
		g_spawn_close_pid(fake_pid);
		fake_pid = 0;
	}
	tree_rm(tmp);
	g_free(tmp);
	g_free(sock);
}

TestSuite(vreclaimctl, .init = setup, .fini = teardown);

/**
 * struct run - what one vreclaimctl run did.
 * @out, @err:	its stdout and stderr.
 * @status:	its exit code (-1 when it did not exit).
 */
struct run {
	char *out;
	char *err;
	int status;
};

static void run_clear(struct run *r)
{
	g_free(r->out);
	g_free(r->err);
}

typedef struct run struct_run;
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(struct_run, run_clear)

/* Run vreclaimctl with the NULL-terminated @args. */
static struct run ctl(const char *const *args)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_auto(GStrv) env = g_get_environ();
	g_autoptr(GError) err = NULL;
	struct run r = { 0 };
	int wait_status = 0;

	g_ptr_array_add(argv, (char *)g_getenv("VRECLAIMCTL"));
	for (; *args; args++)
		g_ptr_array_add(argv, (char *)*args);
	g_ptr_array_add(argv, NULL);
	env = g_environ_setenv(env, "LC_ALL", "C", TRUE);
	cr_assert(g_spawn_sync(NULL, (char **)argv->pdata, env, G_SPAWN_DEFAULT, NULL, NULL, &r.out,
			       &r.err, &wait_status, &err),
		  "cannot run vreclaimctl: %s", err ? err->message : "?");
	r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
	return r;
}

static void expect_exit(const struct run *r, int status, const char *what)
{
	cr_assert_eq(r->status, status, "%s: expected exit %d, got %d\nstdout: %s\nstderr: %s",
		     what, status, r->status, r->out, r->err);
}

static const char expected_table[] =
	"vreclaimd:          0.1.0, up 1h 2m\n"
	"libvirt:            qemu:///system (connected)\n"
	"host needs memory:  yes (free memory 6.2%, below-mid)\n"
	"fleet quota:        256.00 MiB\n"
	"\n"
	" NAME    MANAGED                 POLICY    PRIO   AGENT               ACTION          "
	"RECLAIMED   RSS NOW/START         QUOTA-EXCEEDED   LAST ERROR\n"
	"--------------------------------------------------------------------------------------"
	"----------------------------------------------------------------------\n"
	" web1    yes                     default   50     connected (damon)   agent-reclaim   "
	"1.00 GiB    1.50 GiB / 2.50 GiB   3                -\n"
	" db1     yes                     db        90     connecting          none            "
	"0 B         4.00 GiB / 4.00 GiB   0                agent: no hello yet\n"
	" win10   no: not a QEMU domain   -         0      none                none            "
	"0 B         2.00 GiB / 0 B        0                -\n";

Test(vreclaimctl, status_prints_the_table)
{
	const char *const args[] = { "--socket", sock, "status", NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 0, "status");
	cr_assert_str_eq(r.out, expected_table, "expected:\n%s\ngot:\n%s", expected_table, r.out);
	cr_assert_str_empty(r.err, "status wrote to stderr: %s", r.err);
}

Test(vreclaimctl, status_json_is_the_daemon_reply)
{
	const char *const args[] = { "status", "--json", "--socket", sock, NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 0, "status --json");
	struct json_object *root = json_tokener_parse(r.out);
	cr_assert_not_null(root, "not JSON: %s", r.out);
	struct json_object *domains = json_object_object_get(root, "domains");
	struct json_object *daemon = json_object_object_get(root, "daemon");
	cr_assert_eq(json_object_array_length(domains), 3, "%s", r.out);
	struct json_object *web = json_object_array_get_idx(domains, 0);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(web, "name")), "web1");
	cr_assert_eq(json_object_get_uint64(json_object_object_get(web, "rss_bytes")),
		     (1ULL << 30) + (512ULL << 20));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(web, "agent_state")),
			 "connected");
	cr_assert_eq(json_object_get_int(json_object_object_get(daemon, "ticks")), 3723);
	json_object_put(root);
}

/* The priority of @domain in `status --json`. */
static int priority_of(const char *domain)
{
	const char *const args[] = { "--socket", sock, "status", "--json", NULL };
	g_auto(struct_run) r = ctl(args);
	int prio = -1;

	expect_exit(&r, 0, "status --json");
	struct json_object *root = json_tokener_parse(r.out);
	struct json_object *domains = json_object_object_get(root, "domains");
	for (size_t i = 0; i < json_object_array_length(domains); i++) {
		struct json_object *d = json_object_array_get_idx(domains, i);
		if (!strcmp(json_object_get_string(json_object_object_get(d, "name")), domain))
			prio = json_object_get_int(json_object_object_get(d, "priority"));
	}
	json_object_put(root);
	return prio;
}

Test(vreclaimctl, set_changes_a_domain)
{
	const char *const args[] = { "--socket",    sock,	"set", "web1",
				     "priority=80", "policy=x", NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 0, "set");
	cr_assert_str_eq(r.out, "Domain 'web1' updated\n");
	cr_assert_eq(priority_of("web1"), 80);
}

struct fail_case {
	const char *args[8];
	int status;
	const char *err;
};

/* Each case: exit status and the exact stderr. */
static void expect_failures(const struct fail_case *cases, guint n)
{
	for (guint i = 0; i < n; i++) {
		g_autoptr(GPtrArray) argv = g_ptr_array_new();
		g_autofree char *what = NULL;

		for (const char *const *a = cases[i].args; *a; a++)
			g_ptr_array_add(argv, (char *)(strcmp(*a, "SOCK") ? *a : sock));
		g_ptr_array_add(argv, NULL);
		what = g_strjoinv(" ", (char **)argv->pdata);
		g_auto(struct_run) r = ctl((const char *const *)argv->pdata);
		expect_exit(&r, cases[i].status, what);
		cr_assert_str_empty(r.out, "%s: nothing on stdout, got: %s", what, r.out);
		cr_assert(g_str_has_prefix(r.err, cases[i].err),
			  "%s: expected stderr '%s', got '%s'", what, cases[i].err, r.err);
	}
}

Test(vreclaimctl, set_errors_exit_1_with_the_reason)
{
	static const struct fail_case cases[] = {
		{ { "--socket", "SOCK", "set", "web1", "colour=red", NULL },
		  1,
		  "error: invalid argument: unknown setting 'colour' (known: priority, policy)\n" },
		{ { "--socket", "SOCK", "set", "web1", "priority=101", NULL },
		  1,
		  "error: invalid argument: priority: expected 0..100, got '101'\n" },
		{ { "--socket", "SOCK", "set", "web1", "priority=1", "priority=2", NULL },
		  1,
		  "error: invalid argument: settings[1]: 'priority=2' is set twice\n" },
		{ { "--socket", "SOCK", "set", "nosuch", "priority=1", NULL },
		  1,
		  "error: domain 'nosuch' is not known to vreclaimd\n" },
		{ { "--socket", "SOCK", "pause", "nosuch", NULL },
		  1,
		  "error: domain 'nosuch' is not known to vreclaimd\n" },
		{ { "--socket", "SOCK", "resume", "nosuch", NULL },
		  1,
		  "error: domain 'nosuch' is not known to vreclaimd\n" },
	};

	expect_failures(cases, G_N_ELEMENTS(cases));
	cr_assert_eq(priority_of("web1"), 50, "a refused set changed the domain");
}

Test(vreclaimctl, usage_errors_exit_2)
{
	static const struct fail_case cases[] = {
		{ { "--socket", "SOCK", "set", NULL }, 2, "error: set: expected set DOMAIN" },
		{ { "--socket", "SOCK", "set", "web1", NULL },
		  2,
		  "error: set: expected set DOMAIN" },
		{ { "--socket", "SOCK", "set", "web1", "priority", NULL },
		  2,
		  "error: set: 'priority' is not KEY=VALUE\n" },
		{ { "--socket", "SOCK", "set", "web1", "=80", NULL },
		  2,
		  "error: set: '=80' is not KEY=VALUE\n" },
		{ { "--socket", "SOCK", "pause", "a", "b", NULL },
		  2,
		  "error: pause: unexpected argument 'b'\n" },
		{ { "--socket", "SOCK", "status", "web1", NULL },
		  2,
		  "error: status: unexpected argument 'web1'\n" },
		{ { "--socket", "SOCK", "metrics", "--json", NULL }, 2, "error: metrics: " },
		{ { "--socket", "SOCK", "pause", "", NULL },
		  2,
		  "error: pause: the DOMAIN name is empty" },
		{ { "--socket", NULL }, 2, "error: --socket: a PATH is needed\n" },
		{ { "--socket", "SOCK", "simulate", NULL },
		  2,
		  "error: --socket before the command" },
		{ { "--socket", "SOCK", "frobnicate", NULL },
		  2,
		  "error: unknown command 'frobnicate'" },
	};

	expect_failures(cases, G_N_ELEMENTS(cases));
}

/* Issue 16, item 7: what a user names is read with a bound, and sizes that
 * would make vreclaimctl abort in g_malloc() are refused up front. */
Test(vreclaimctl, files_and_sizes_are_bounded)
{
	static const struct fail_case cases[] = {
		{ { "simulate", "--size-gib", "16384", NULL },
		  2,
		  "error: --size-gib: expected a positive size of at most 256 GiB" },
		{ { "simulate", "--size-gib", "0", NULL },
		  2,
		  "error: --size-gib: expected a positive size of at most 256 GiB" },
		{ { "simulate", "--size-gib", "256.5", NULL }, 2, "error: --size-gib: " },
		{ { "agent", "--socket", "SOCK", "set-policy", "/dev/zero", NULL },
		  2,
		  "error: /dev/zero is larger than the 1048576 bytes allowed\n" },
		{ { "simulate", "--policy", "/dev/zero", NULL },
		  1,
		  "vreclaimctl: /dev/zero: /dev/zero is larger than the 1048576 bytes allowed\n" },
	};

	if (!g_file_test("/dev/zero", G_FILE_TEST_EXISTS))
		cr_skip_test("this machine has no /dev/zero");
	expect_failures(cases, G_N_ELEMENTS(cases));
}

Test(vreclaimctl, pause_and_resume_show_in_the_status)
{
	const char *const pause_all[] = { "--socket", sock, "pause", NULL };
	g_auto(struct_run) r1 = ctl(pause_all);
	expect_exit(&r1, 0, "pause");
	cr_assert_str_eq(r1.out, "Reclaim paused for every domain\n");

	g_autofree char *opt = g_strdup_printf("--socket=%s", sock);
	const char *const resume_web[] = { opt, "resume", "web1", NULL };
	g_auto(struct_run) r2 = ctl(resume_web);
	expect_exit(&r2, 0, "resume web1");
	cr_assert_str_eq(r2.out, "Reclaim resumed for domain 'web1'\n");

	const char *const status[] = { "status", "-s", sock, NULL };
	g_auto(struct_run) r3 = ctl(status);
	expect_exit(&r3, 0, "status");
	cr_assert(strstr(r3.out, " web1    yes ") && strstr(r3.out, "agent-reclaim"),
		  "web1 resumed: %s", r3.out);
	cr_assert(strstr(r3.out, "connecting          paused"), "db1 paused: %s", r3.out);
}

Test(vreclaimctl, metrics_prints_the_prometheus_text)
{
	const char *const args[] = { "--socket", sock, "metrics", NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 0, "metrics");
	cr_assert(g_str_has_prefix(r.out, "# HELP vreclaim_up "), "%s", r.out);
	cr_assert(strstr(r.out, "\nvreclaim_domain_rss_bytes{domain=\"win10\"} 2147483648\n"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "\nvreclaim_domain_managed{domain=\"win10\"} 0\n"), "%s", r.out);
	cr_assert(g_str_has_suffix(r.out, "\n"));
}

Test(vreclaimctl, a_socket_nobody_listens_on_is_named)
{
	g_autofree char *missing = g_build_filename(tmp, "nobody.sock", NULL);
	const char *const args[] = { "--socket", missing, "status", NULL };
	g_auto(struct_run) r = ctl(args);
	g_autofree char *want = g_strdup_printf(
		"error: failed to connect to vreclaimd at '%s': No such file or directory\n",
		missing);

	expect_exit(&r, 1, "status on a missing socket");
	cr_assert_str_eq(r.err, want);

	/* A socket file left by a daemon that died. */
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_strlcpy(sa.sun_path, missing, sizeof(sa.sun_path));
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	const char *const args2[] = { "--socket", missing, "pause", "web1", NULL };
	g_auto(struct_run) r2 = ctl(args2);
	g_autofree char *want2 = g_strdup_printf(
		"error: failed to connect to vreclaimd at '%s': Connection refused\n", missing);
	expect_exit(&r2, 1, "pause on a stale socket");
	cr_assert_str_eq(r2.err, want2);
}

Test(vreclaimctl, the_default_socket_is_named)
{
	if (g_file_test("/run/vreclaim/vreclaimd.sock", G_FILE_TEST_EXISTS))
		cr_skip_test("a vreclaimd socket exists on this machine");
	const char *const args[] = { "status", NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 1, "status without --socket");
	cr_assert(g_str_has_prefix(r.err, "error: failed to connect to vreclaimd at "
					  "'/run/vreclaim/vreclaimd.sock': "),
		  "%s", r.err);
}

Test(vreclaimctl, help_lists_the_daemon_commands)
{
	const char *const args[] = { "--help", NULL };
	g_auto(struct_run) r = ctl(args);

	expect_exit(&r, 0, "--help");
	for (const char *const *c =
		     (const char *const[]){ "status", "set", "pause", "resume", "metrics", NULL };
	     *c; c++) {
		g_autofree char *line = g_strdup_printf("\n  %s ", *c);
		cr_assert(strstr(r.out, line), "--help does not list %s:\n%s", *c, r.out);
	}
	cr_assert(strstr(r.out, "[--socket PATH]"), "%s", r.out);
}

Test(vreclaimctl, metrics_over_http)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((guint16)metrics_port) };
	GString *in = g_string_new(NULL);
	char buf[4096];
	ssize_t n;

	cr_assert_neq(metrics_port, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s",
		     g_strerror(errno));
	const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	cr_assert_eq(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		g_string_append_len(in, buf, n);
	close(fd);
	cr_assert_eq(n, 0, "the response did not end: %s", g_strerror(errno));
	cr_assert(g_str_has_prefix(in->str, "HTTP/1.0 200 OK\r\n"), "%s", in->str);
	cr_assert(strstr(in->str, "\r\n\r\n# HELP vreclaim_up "), "%s", in->str);
	cr_assert(strstr(in->str, "vreclaim_domain_reclaimed_bytes_total{domain=\"web1\"} "
				  "1073741824\n"),
		  "%s", in->str);
	g_string_free(in, TRUE);
}
