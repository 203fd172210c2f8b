/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The real vreclaimd against libvirt's test driver, driven over its control
 * socket with the control client (hostd/control/control-client.h): domain discovery
 * and metadata handling as the daemon reports them.
 *
 * Each test writes a node file (test:///ABSOLUTE/PATH/node.xml: a <node>
 * whose <domain type='test'> elements all start running) into a temporary
 * folder, with a domain without metadata, valid ones, a disabled one and one
 * domain per kind of invalid metadata that can reach the daemon through
 * libvirt (libvirt parses the node file and hands the element back with our
 * namespace stripped, so text that is not XML never gets that far), then
 * starts vreclaimd on a config there. The test driver's domains have type
 * 'test': no domain is ever managed, and the reason in `vreclaimctl status`
 * says which check stopped it: the metadata first (not opted in, disabled,
 * invalid metadata naming the element and value), then the domain's type.
 *
 * Also: manage = all, SIGHUP with an invalid config (refused, the old one
 * stays), with valid ones (applied) and with a new connect URI (the old
 * connection's domains go, the new one's come), `set` written through
 * libvirt and read back by the daemon, refused settings that change nothing,
 * pause of an unknown domain, and SIGTERM (exit status 0, control socket
 * removed).
 *
 * Suite vreclaimd_qmp: a QEMU without libvirt given by --qmp, played by
 * tests/integration/fake-qemu (VR_FAKE_QEMU; it listens itself, so the
 * socket's peer credentials name it): found by the probe and managed with the
 * config's [fleet] defaults (the balloon, which without an agent never
 * inflates), set in the daemon only (all or nothing), dropped when its
 * process dies; and a socket nothing listens on yet, taken when the QEMU
 * comes (the daemon tries again every 5 s).
 *
 * The daemon binary comes from the VRECLAIMD environment variable (meson),
 * the fake QEMU's from VR_FAKE_QEMU.
 * Its stdout and stderr go to daemon.log in the test's folder; a failing
 * assertion about the daemon prints that log. Criterion re-executes the
 * binary for each test: parameter structs hold no pointers.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-fake-tree.h"
#include "control/control-client.h"
#include "libvirt/domain-xml.h"
#include "test-fake-qemu.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* How long the daemon gets to listen, answer, apply a reload or stop, ms. */
#define DAEMON_WAIT_MS 10000
/* Between two polls, us. */
#define POLL_US (20 * 1000)
/* One control request's reply, ms. */
#define CALL_TIMEOUT_MS 5000

/* The metadata element as it sits in the node file: prefix vr bound to ours. */
#define VR_OPEN	 "<vr:domain xmlns:vr='" VR_DOMAIN_XML_NS "'>"
#define VR_CLOSE "</vr:domain>"

/* The reason of a domain that got past every metadata check: its type. */
#define TYPE_REASON  "is of type 'test' (vreclaim manages qemu and kvm domains)"
#define NOT_OPTED_IN "not opted in (no vreclaim metadata; the daemon manages opt-in domains only)"
#define DISABLED     "disabled by its metadata (enable is no)"

/* The fake QEMU of the --qmp tests: what it says of itself. */
#define FAKE_NAME	  "fake-qemu"
#define FAKE_UUID	  "9a7e3c51-2f04-4b8d-b6e1-73c0d5a2e4f8"
#define FAKE_MEMORY_MIB	  512
#define FAKE_MEMORY_BYTES ((uint64_t)FAKE_MEMORY_MIB << 20)

/**
 * struct dom_case - one test domain.
 * @name:	its libvirt name.
 * @metadata:	the whole <metadata> child as written in the node file; empty
 *		for a domain without metadata.
 * @reason:	a fragment the daemon's reason must hold (with manage =
 *		opt-in). For invalid metadata: the parser's message, after
 *		"invalid metadata: " (see tests/unit/hostd/libvirt/test-domain-xml.c).
 */
struct dom_case {
	char name[40];
	char metadata[240];
	char reason[200];
};

/* Domains whose metadata is absent, valid or disabled. */
static struct dom_case plain_cases[] = {
	{ "plain", "", NOT_OPTED_IN },
	{ "valid",
	  VR_OPEN "<vr:priority>70</vr:priority><vr:guaranteed unit='MiB'>512"
		  "</vr:guaranteed><vr:actions>agent-reclaim</vr:actions>" VR_CLOSE,
	  "domain valid " TYPE_REASON },
	/* An empty element manages with every default. */
	{ "valid-empty", VR_OPEN VR_CLOSE, "domain valid-empty " TYPE_REASON },
	/* The type is checked before the policy file is looked for. */
	{ "valid-absent-policy", VR_OPEN "<vr:policy>absent</vr:policy>" VR_CLOSE,
	  "domain valid-absent-policy " TYPE_REASON },
	{ "disabled", VR_OPEN "<vr:enable>no</vr:enable><vr:priority>90</vr:priority>" VR_CLOSE,
	  DISABLED },
};

/* Domains whose metadata the daemon must refuse, one per kind of mistake. */
static struct dom_case invalid_cases[] = {
	{ "inv-unknown-element", VR_OPEN "<vr:colour>red</vr:colour>" VR_CLOSE,
	  "unknown element <colour> in <domain> (expected enable, policy, priority, "
	  "guaranteed, actions, scheme)" },
	{ "inv-unknown-in-scheme",
	  VR_OPEN "<vr:scheme><vr:priority>1</vr:priority></vr:scheme>" VR_CLOSE,
	  "unknown element <priority> in <scheme> (expected min-age, quota-time, quota-size, "
	  "max-accesses)" },
	{ "inv-bad-priority", VR_OPEN "<vr:priority>101</vr:priority>" VR_CLOSE,
	  "<priority>: '101' is out of range (expected an integer from 0 to 100)" },
	{ "inv-priority-fraction", VR_OPEN "<vr:priority>1.5</vr:priority>" VR_CLOSE,
	  "<priority>: '1.5' is not a whole number" },
	{ "inv-bad-unit", VR_OPEN "<vr:guaranteed unit='XB'>1</vr:guaranteed>" VR_CLOSE,
	  "<guaranteed>: unknown unit 'XB' (expected b, bytes, KiB" },
	{ "inv-wrong-namespace", VR_OPEN "<o:priority xmlns:o='urn:o'>1</o:priority>" VR_CLOSE,
	  "<o:priority> is in the namespace 'urn:o' (expected " VR_DOMAIN_XML_NS ")" },
	{ "inv-duplicate",
	  VR_OPEN "<vr:priority>1</vr:priority><vr:priority>2</vr:priority>" VR_CLOSE,
	  "<priority> is given twice" },
	{ "inv-policy-slash", VR_OPEN "<vr:policy>a/b</vr:policy>" VR_CLOSE,
	  "<policy>: policy name 'a/b' has the character '/'" },
	{ "inv-policy-dot", VR_OPEN "<vr:policy>../etc/passwd</vr:policy>" VR_CLOSE,
	  "<policy>: policy name '../etc/passwd' starts with '.'" },
	{ "inv-policy-empty", VR_OPEN "<vr:policy/>" VR_CLOSE, "<policy>: the value is empty" },
	{ "inv-enable-maybe", VR_OPEN "<vr:enable>maybe</vr:enable>" VR_CLOSE,
	  "<enable>: 'maybe' is not allowed (expected yes or no)" },
	{ "inv-unknown-action", VR_OPEN "<vr:actions>teleport</vr:actions>" VR_CLOSE,
	  "<actions>: unknown action 'teleport' (expected one or more of agent-reclaim" },
	{ "inv-unknown-attribute", VR_OPEN "<vr:priority unit='ms'>1</vr:priority>" VR_CLOSE,
	  "<priority>: unknown attribute 'unit' (allowed: none)" },
	{ "inv-min-age-range",
	  VR_OPEN "<vr:scheme><vr:min-age unit='h'>721</vr:min-age></vr:scheme>" VR_CLOSE,
	  "<min-age>: '721 h' is out of range (expected a time up to 30 days)" },
	{ "inv-max-accesses",
	  VR_OPEN "<vr:scheme><vr:max-accesses>65537</vr:max-accesses></vr:scheme>" VR_CLOSE,
	  "<max-accesses>: '65537' is out of range (expected an integer from 0 to 65536)" },
	{ "inv-text", VR_OPEN "yes" VR_CLOSE, "<domain>: unexpected text 'yes'" },
	{ "inv-root", "<vr:vreclaim xmlns:vr='" VR_DOMAIN_XML_NS "'/>",
	  "the root element is <vreclaim> (expected <domain>)" },
};

static char *dir;	  /* the test's temporary folder */
static char *node_path;	  /* dir/node.xml */
static char *config_path; /* dir/vreclaimd.conf */
static char *socket_path; /* dir/ctl.sock */
static char *log_path;	  /* dir/daemon.log */
static char *log_text;	  /* its text as daemon_log() last read it */
static GPid daemon_pid;
/* The control socket the config file names: socket_path when NULL (the
 * test of the command line's values gives the file another). */
static const char *file_socket_path;

/* ---- files ---- */

static void node_add(GString *xml, const struct dom_case *c, guint index)
{
	g_string_append_printf(xml,
			       "  <domain type='test'>\n"
			       "    <name>%s</name>\n"
			       "    <uuid>6f1c0000-0000-4000-8000-%012x</uuid>\n"
			       "    <memory unit='MiB'>256</memory>\n"
			       "    <os><type>hvm</type></os>\n",
			       c->name, index + 1);
	if (c->metadata[0])
		g_string_append_printf(xml, "    <metadata>%s</metadata>\n", c->metadata);
	g_string_append(xml, "  </domain>\n");
}

/* The node file with every domain of both tables. */
static void write_node(void)
{
	g_autoptr(GString) xml = g_string_new("<node>\n");
	guint index = 0;

	for (guint i = 0; i < ARRAY_LEN(plain_cases); i++)
		node_add(xml, &plain_cases[i], index++);
	for (guint i = 0; i < ARRAY_LEN(invalid_cases); i++)
		node_add(xml, &invalid_cases[i], index++);
	g_string_append(xml, "</node>\n");
	tree_put(dir, "node.xml", xml->str);
}

/* The daemon's config: libvirt's test driver on the node file @node, @manage
 * ("opt-in", "all"), @extra lines at the end of [daemon] and @fleet lines in
 * [fleet] (NULL: no such group). */
static void write_config_fleet(const char *node, const char *manage, const char *extra,
			       const char *fleet)
{
	g_autofree char *policies = g_build_filename(dir, "policies", NULL);
	g_autofree char *text = g_strdup_printf("[daemon]\n"
						"connect = test://%s\n"
						"manage = %s\n"
						"policy-dir = %s\n"
						"state-dir = %s/state\n"
						"control-socket = %s\n"
						"interval-ms = 200\n"
						"%s"
						"[host]\n"
						"watermark-metric = none\n"
						"%s%s",
						node, manage, policies, dir,
						file_socket_path ? file_socket_path : socket_path,
						extra ? extra : "", fleet ? "[fleet]\n" : "",
						fleet ? fleet : "");

	tree_put(dir, "vreclaimd.conf", text);
}

/* The config on @node without [fleet]. */
static void write_config_node(const char *node, const char *manage, const char *extra)
{
	write_config_fleet(node, manage, extra, NULL);
}

/* The config on the node file of every test domain. */
static void write_config(const char *manage, const char *extra)
{
	write_config_node(node_path, manage, extra);
}

/* The daemon's output so far; valid until the next call (a failed assertion
 * leaves the test at once: the text is freed in the teardown). */
static const char *daemon_log(void)
{
	g_clear_pointer(&log_text, g_free);
	if (!g_file_get_contents(log_path, &log_text, NULL, NULL))
		log_text = g_strdup("(no log)");
	return log_text;
}

/* ---- the daemon ---- */

/* In the child: its output to the log file, and it dies with the test
 * worker, even one that crashed before its teardown could stop it. */
static void child_setup(gpointer data)
{
	int fd = open(data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* Whether the daemon has exited: then it is reaped, daemon_pid is 0 and
 * *@status (when not NULL) holds its wait status. */
static bool daemon_exited(int *status)
{
	if (daemon_pid <= 0 || waitpid(daemon_pid, status, WNOHANG) != daemon_pid)
		return false;
	g_spawn_close_pid(daemon_pid);
	daemon_pid = 0;
	return true;
}

/* The daemon's status: the domains (owned array), *@daemon filled in. */
static GPtrArray *status(struct vr_daemon_status *daemon)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);
	GPtrArray *domains = NULL;
	struct vr_daemon_status d;

	cr_assert_not_null(c, "expected to reach the daemon: %s\nits log:\n%s", error->message,
			   daemon_log());
	cr_assert(vr_control_client_status(c, CALL_TIMEOUT_MS, &domains, daemon ? daemon : &d, NULL,
					   &error),
		  "expected a status: %s\nits log:\n%s", error ? error->message : "?",
		  daemon_log());
	return domains;
}

/* The domains of @doms that come from the node file: all but the fake QEMU. */
static guint node_domains(GPtrArray *doms)
{
	guint n = 0;

	for (guint i = 0; i < doms->len; i++)
		if (strcmp(((struct vr_domain_status *)g_ptr_array_index(doms, i))->name,
			   FAKE_NAME) != 0)
			n++;
	return n;
}

/* Start vreclaimd on the config as written, with `--qmp @qmp` when @qmp is
 * not NULL; wait (up to DAEMON_WAIT_MS) for its control socket and a status
 * listing every domain of the node file. */
static void spawn_daemon_with(const char *const *extra)
{
	const char *binary = g_getenv("VRECLAIMD");
	g_autoptr(GError) error = NULL;
	guint want = ARRAY_LEN(plain_cases) + ARRAY_LEN(invalid_cases);
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	int wstatus = 0;

	cr_assert_not_null(binary, "VRECLAIMD must name the vreclaimd binary");
	g_autoptr(GPtrArray) argv = g_ptr_array_new();

	g_ptr_array_add(argv, (char *)binary);
	g_ptr_array_add(argv, (char *)"--config");
	g_ptr_array_add(argv, config_path);
	for (guint i = 0; extra && extra[i]; i++)
		g_ptr_array_add(argv, (char *)extra[i]);
	g_ptr_array_add(argv, NULL);
	cr_assert(g_spawn_async(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
				child_setup, log_path, &daemon_pid, &error),
		  "cannot start vreclaimd: %s", error ? error->message : "?");

	for (;;) {
		g_autoptr(vr_control_client) c = NULL;

		cr_assert(!daemon_exited(&wstatus),
			  "vreclaimd exited at start (wait status %#x); its log:\n%s", wstatus,
			  daemon_log());
		c = vr_control_client_connect(socket_path, NULL);
		if (c) {
			g_autoptr(GPtrArray) doms = NULL;
			struct vr_daemon_status d;

			if (vr_control_client_status(c, CALL_TIMEOUT_MS, &doms, &d, NULL, NULL) &&
			    d.libvirt_connected && node_domains(doms) == want)
				return;
		}
		cr_assert(g_get_monotonic_time() < deadline,
			  "vreclaimd did not list the %u domains within %d ms; its log:\n%s", want,
			  DAEMON_WAIT_MS, daemon_log());
		g_usleep(POLL_US);
	}
}

/* spawn_daemon_with() --qmp @qmp, or nothing more when @qmp is NULL. */
static void spawn_daemon(const char *qmp)
{
	const char *const extra[] = { qmp ? "--qmp" : NULL, qmp, NULL };

	spawn_daemon_with(extra);
}

/* Start vreclaimd on the config written with @manage (spawn_daemon()). */
static void start_daemon(const char *manage)
{
	write_config(manage, NULL);
	spawn_daemon(NULL);
}

/* Wait up to DAEMON_WAIT_MS for the daemon to exit; its wait status, or -1. */
static int wait_exit(void)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	int wstatus = 0;

	while (!daemon_exited(&wstatus)) {
		if (g_get_monotonic_time() >= deadline)
			return -1;
		g_usleep(POLL_US);
	}
	return wstatus;
}

/* Stop the daemon by its pid: SIGTERM, SIGKILL when it does not stop. */
static void stop_daemon(void)
{
	if (daemon_pid <= 0)
		return;
	kill(daemon_pid, SIGTERM);
	if (wait_exit() != -1)
		return;
	kill(daemon_pid, SIGKILL);
	waitpid(daemon_pid, NULL, 0);
	g_spawn_close_pid(daemon_pid);
	daemon_pid = 0;
}

static void setup(void)
{
	g_autoptr(GError) error = NULL;

	dir = g_dir_make_tmp("vr-vreclaimd-XXXXXX", &error);
	cr_assert_not_null(dir, "cannot make a temporary folder: %s", error ? error->message : "?");
	node_path = g_build_filename(dir, "node.xml", NULL);
	config_path = g_build_filename(dir, "vreclaimd.conf", NULL);
	socket_path = g_build_filename(dir, "ctl.sock", NULL);
	log_path = g_build_filename(dir, "daemon.log", NULL);
	tree_mkdir(dir, "policies");
	write_node();
}

static void teardown(void)
{
	stop_daemon();
	if (dir)
		tree_rm(dir);
	g_clear_pointer(&dir, g_free);
	g_clear_pointer(&node_path, g_free);
	g_clear_pointer(&config_path, g_free);
	g_clear_pointer(&socket_path, g_free);
	g_clear_pointer(&log_path, g_free);
	g_clear_pointer(&log_text, g_free);
}

TestSuite(vreclaimd, .init = setup, .fini = teardown,
	  .description = "the real vreclaimd against libvirt's test driver");

/* ---- checks ---- */

static const struct vr_domain_status *find(GPtrArray *doms, const char *name)
{
	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);
		if (!strcmp(st->name, name))
			return st;
	}
	cr_assert_fail("expected domain '%s' in the status (%u domains)", name, doms->len);
	return NULL;
}

/* @name is unmanaged and its reason holds @fragment. */
static void expect_reason(GPtrArray *doms, const char *name, const char *fragment)
{
	const struct vr_domain_status *st = find(doms, name);

	cr_assert(!st->managed, "%s: expected unmanaged (a test-driver domain)", name);
	cr_assert(strstr(st->reason, fragment), "%s: expected the reason to hold '%s', got '%s'",
		  name, fragment, st->reason);
}

/* The fresh status: @name's reason holds @fragment. */
static void expect_status_reason(const char *name, const char *fragment)
{
	g_autoptr(GPtrArray) doms = status(NULL);

	expect_reason(doms, name, fragment);
}

/* The reason of an invalid-metadata domain: "invalid metadata: " + @message. */
static void expect_invalid(GPtrArray *doms, const struct dom_case *c)
{
	const struct vr_domain_status *st = find(doms, c->name);

	expect_reason(doms, c->name, c->reason);
	cr_assert(g_str_has_prefix(st->reason, "invalid metadata: "),
		  "%s: expected the reason to start with 'invalid metadata: ', got '%s'", c->name,
		  st->reason);
}

/* Wait up to DAEMON_WAIT_MS for the daemon's log to hold @text. */
static void wait_log(const char *text)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	for (;;) {
		const char *log = daemon_log();
		if (strstr(log, text))
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the daemon to log '%s' within %d ms; its log:\n%s", text,
			  DAEMON_WAIT_MS, log);
		g_usleep(POLL_US);
	}
}

/* Send SIGHUP; wait up to DAEMON_WAIT_MS until the status counts @reloads. */
static void reload_and_wait(uint64_t reloads)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	cr_assert_eq(kill(daemon_pid, SIGHUP), 0, "kill(SIGHUP): %s", g_strerror(errno));
	for (;;) {
		struct vr_daemon_status d;
		g_autoptr(GPtrArray) doms = status(&d);
		if (d.reloads == reloads)
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %" G_GUINT64_FORMAT " reloads within %d ms, the daemon counts "
			  "%" G_GUINT64_FORMAT "; its log:\n%s",
			  reloads, DAEMON_WAIT_MS, d.reloads, daemon_log());
		g_usleep(POLL_US);
	}
}

static void set_ok(const char *domain, const char *const *settings)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);

	cr_assert_not_null(c, "connect: %s", error ? error->message : "?");
	cr_assert(vr_control_client_set(c, domain, settings, CALL_TIMEOUT_MS, &error),
		  "expected set %s %s to be applied, got: %s\nthe daemon's log:\n%s", domain,
		  settings[0], error ? error->message : "?", daemon_log());
}

/* set must be refused with @code and a message holding @fragment. Return:
 * the message, owned. */
static char *set_refused(const char *domain, const char *const *settings, int code,
			 const char *fragment)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = vr_control_client_connect(socket_path, &error);

	cr_assert_not_null(c, "connect: %s", error ? error->message : "?");
	cr_assert(!vr_control_client_set(c, domain, settings, CALL_TIMEOUT_MS, &error),
		  "expected set %s %s to be refused", domain, settings[0]);
	cr_assert(g_error_matches(error, VR_CONTROL_ERROR, code),
		  "set %s %s: expected the control error %s, got %s %d: %s", domain, settings[0],
		  vr_control_error_class_name(code), g_quark_to_string(error->domain), error->code,
		  error->message);
	cr_assert(strstr(error->message, fragment),
		  "set %s %s: expected the message to hold '%s', got '%s'", domain, settings[0],
		  fragment, error->message);
	return g_strdup(error->message);
}

/* ---- discovery and metadata ---- */

Test(vreclaimd, lists_every_running_domain)
{
	struct vr_daemon_status d;
	g_autoptr(GPtrArray) doms = NULL;
	g_autofree char *uri = g_strdup_printf("test://%s", node_path);

	start_daemon("opt-in");
	doms = status(&d);
	cr_assert_eq(doms->len, ARRAY_LEN(plain_cases) + ARRAY_LEN(invalid_cases),
		     "expected every domain of the node file, got %u", doms->len);
	cr_assert_str_eq(d.libvirt_uri, uri, "expected the config's URI, got '%s'", d.libvirt_uri);
	cr_assert(d.libvirt_connected, "expected the daemon connected to libvirt");
	cr_assert_eq(d.reloads, 0, "expected no reload yet, got %" G_GUINT64_FORMAT, d.reloads);
	for (guint i = 1; i < doms->len; i++) {
		const struct vr_domain_status *a = g_ptr_array_index(doms, i - 1);
		const struct vr_domain_status *b = g_ptr_array_index(doms, i);
		cr_assert_lt(strcmp(a->name, b->name), 0,
			     "expected the domains sorted by name: '%s' before '%s'", a->name,
			     b->name);
	}
	for (guint i = 0; i < ARRAY_LEN(plain_cases); i++) {
		const struct vr_domain_status *st = find(doms, plain_cases[i].name);
		g_autofree char *uuid = g_strdup_printf("6f1c0000-0000-4000-8000-%012x", i + 1);
		cr_assert_str_eq(st->uuid, uuid, "%s: expected uuid %s, got %s", st->name, uuid,
				 st->uuid);
		cr_assert_eq(st->agent_state, VR_AGENT_STATE_NONE,
			     "%s: expected no agent session for an unmanaged domain", st->name);
		cr_assert_eq(st->action, VR_DOMAIN_ACTION_NONE, "%s: expected no action", st->name);
	}
}

Test(vreclaimd, opt_in_reasons)
{
	g_autoptr(GPtrArray) doms = NULL;

	start_daemon("opt-in");
	doms = status(NULL);
	for (guint i = 0; i < ARRAY_LEN(plain_cases); i++)
		expect_reason(doms, plain_cases[i].name, plain_cases[i].reason);
}

ParameterizedTestParameters(vreclaimd, invalid_metadata)
{
	return cr_make_param_array(struct dom_case, invalid_cases, ARRAY_LEN(invalid_cases));
}

ParameterizedTest(struct dom_case *c, vreclaimd, invalid_metadata)
{
	g_autoptr(GPtrArray) doms = NULL;
	g_autofree char *logged = NULL;

	start_daemon("opt-in");
	doms = status(NULL);
	expect_invalid(doms, c);
	/* ... and the same sentence in the log, with the domain's name. */
	logged = g_strdup_printf("%s: not managed: invalid metadata: %s", c->name, c->reason);
	wait_log(logged);
}

Test(vreclaimd, manage_all)
{
	g_autoptr(GPtrArray) doms = NULL;

	start_daemon("all");
	doms = status(NULL);
	/* No metadata now passes the metadata check: the type stops it. */
	expect_reason(doms, "plain", "domain plain " TYPE_REASON);
	/* The metadata still decides for the others. */
	expect_reason(doms, "disabled", DISABLED);
	expect_reason(doms, "valid", "domain valid " TYPE_REASON);
	for (guint i = 0; i < ARRAY_LEN(invalid_cases); i++)
		expect_invalid(doms, &invalid_cases[i]);
}

/* ---- reload ---- */

Test(vreclaimd, reload)
{
	struct vr_daemon_status d;

	start_daemon("opt-in");

	/* An invalid file (manage = all, and an unknown key) changes nothing. */
	write_config("all", "colour = blue\n");
	cr_assert_eq(kill(daemon_pid, SIGHUP), 0, "kill(SIGHUP): %s", g_strerror(errno));
	wait_log("reload refused");
	wait_log("colour");
	{
		g_autoptr(GPtrArray) doms = status(&d);
		cr_assert_eq(d.reloads, 0,
			     "expected the refused reload not to count, got %" G_GUINT64_FORMAT,
			     d.reloads);
		expect_reason(doms, "plain", NOT_OPTED_IN);
		expect_reason(doms, "disabled", DISABLED);
	}

	/* A valid one applies as a whole. */
	write_config("all", NULL);
	reload_and_wait(1);
	{
		g_autoptr(GPtrArray) doms = status(NULL);
		expect_reason(doms, "plain", "domain plain " TYPE_REASON);
		expect_reason(doms, "disabled", DISABLED);
		expect_invalid(doms, &invalid_cases[0]);
	}

	/* Back to opt-in: the reasons of opt-in come back. */
	write_config("opt-in", NULL);
	reload_and_wait(2);
	{
		g_autoptr(GPtrArray) doms = status(&d);
		for (guint i = 0; i < ARRAY_LEN(plain_cases); i++)
			expect_reason(doms, plain_cases[i].name, plain_cases[i].reason);
		cr_assert(d.libvirt_connected, "expected the connection kept over reloads");
	}
	cr_assert(!daemon_exited(NULL), "expected the daemon to keep running over reloads");
}

/* A second node file, dir/other.xml, with one disabled domain "other";
 * returns its path (owned). */
static char *write_other_node(void)
{
	struct dom_case other = { "other", VR_OPEN "<vr:enable>no</vr:enable>" VR_CLOSE, DISABLED };
	g_autoptr(GString) xml = g_string_new("<node>\n");

	node_add(xml, &other, 0x99);
	g_string_append(xml, "</node>\n");
	tree_put(dir, "other.xml", xml->str);
	return g_build_filename(dir, "other.xml", NULL);
}

/* A new connect URI: the old connection's domains go, the new one's come. */
Test(vreclaimd, reload_new_uri)
{
	g_autofree char *other_path = write_other_node();
	g_autofree char *uri = g_strdup_printf("test://%s", other_path);
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	start_daemon("opt-in");

	write_config_node(other_path, "opt-in", NULL);
	reload_and_wait(1);
	doms = status(&d);
	cr_assert_str_eq(d.libvirt_uri, uri, "expected the new URI, got '%s'", d.libvirt_uri);
	/* The new connection opens on libvirt's thread: soon, not at once. */
	for (gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;
	     !d.libvirt_connected || doms->len != 1;) {
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected the daemon connected to the new URI with its one domain "
			  "within %d ms (connected: %d, %u domains); its log:\n%s",
			  DAEMON_WAIT_MS, d.libvirt_connected, doms->len, daemon_log());
		g_usleep(POLL_US);
		g_clear_pointer(&doms, g_ptr_array_unref);
		doms = status(&d);
	}
	cr_assert_eq(doms->len, 1, "expected only the new node's domain, got %u domains",
		     doms->len);
	expect_reason(doms, "other", DISABLED);
}

/* --connect and --control-socket win over the file's keys at every reload
 * too, not only at start. */
Test(vreclaimd, reload_keeps_command_line)
{
	g_autofree char *other_path = write_other_node();
	g_autofree char *file_socket = g_build_filename(dir, "file.sock", NULL);
	g_autofree char *node_uri = g_strdup_printf("test://%s", node_path);
	const char *const args[] = { "--connect", node_uri, "--control-socket", socket_path, NULL };
	g_autoptr(GPtrArray) doms = NULL;
	struct vr_daemon_status d;

	/* The file names another node and another socket. */
	file_socket_path = file_socket;
	write_config_node(other_path, "opt-in", NULL);
	spawn_daemon_with(args);

	reload_and_wait(1);
	doms = status(&d);
	cr_assert_str_eq(d.libvirt_uri, node_uri, "expected the command line's URI kept, got '%s'",
			 d.libvirt_uri);
	cr_assert(!g_file_test(file_socket, G_FILE_TEST_EXISTS),
		  "expected no control socket at the file's path %s", file_socket);
	expect_reason(doms, "plain", NOT_OPTED_IN);
	file_socket_path = NULL;
}

/* ---- set, pause ---- */

Test(vreclaimd, set_through_libvirt)
{
	const char *const opt_in[] = { "priority=80", "enable=yes", NULL };
	const char *const disable[] = { "enable=no", NULL };
	const char *const fix[] = { "priority=80", NULL };
	const char *const reenable[] = { "enable=yes", NULL };

	start_daemon("opt-in");

	/* A setting on a domain without metadata does not opt it in: the
	 * element written says no. */
	set_ok("plain", fix);
	expect_status_reason("plain", DISABLED);

	/* A domain opts in: the metadata the daemon wrote through libvirt is
	 * read back, and the type stops it now. */
	set_ok("plain", opt_in);
	expect_status_reason("plain", "domain plain " TYPE_REASON);

	/* A valid one opts out, and in again. */
	set_ok("valid", disable);
	expect_status_reason("valid", DISABLED);
	set_ok("valid", reenable);
	expect_status_reason("valid", "domain valid " TYPE_REASON);

	/* Invalid metadata is replaced by a whole valid element. */
	set_ok("inv-bad-priority", fix);
	expect_status_reason("inv-bad-priority", "domain inv-bad-priority " TYPE_REASON);

	/* The others are untouched. */
	expect_status_reason("disabled", DISABLED);
	expect_status_reason("inv-duplicate", "invalid metadata: <priority> is given twice");
}

/* Under manage = all, a setting keeps a domain without metadata managed. */
Test(vreclaimd, set_under_manage_all)
{
	const char *const fix[] = { "priority=80", NULL };

	start_daemon("all");
	expect_status_reason("plain", "domain plain " TYPE_REASON);
	set_ok("plain", fix);
	expect_status_reason("plain", "domain plain " TYPE_REASON);
}

Test(vreclaimd, set_refused)
{
	const char *const bad_priority[] = { "enable=no", "priority=500", NULL };
	const char *const absent_policy[] = { "enable=no", "policy=absent", NULL };
	const char *const absent_policy_on[] = { "enable=yes", "policy=absent", NULL };
	const char *const bad_key[] = { "colour=blue", NULL };
	const char *const any[] = { "priority=80", NULL };
	g_autofree char *priority_msg = NULL;
	g_autofree char *policy_msg = NULL;
	g_autofree char *key_msg = NULL;
	g_autofree char *domain_msg = NULL;

	start_daemon("opt-in");

	/* All or nothing: enable=no with a bad priority leaves it enabled. */
	priority_msg =
		set_refused("valid", bad_priority, VR_CONTROL_ERROR_INVALID_ARGUMENT, "priority");
	cr_assert(strstr(priority_msg, "500"),
		  "expected the message to name the value 500, got '%s'", priority_msg);
	expect_status_reason("valid", "domain valid " TYPE_REASON);

	/* A policy file that does not exist is refused when it would apply... */
	policy_msg =
		set_refused("plain", absent_policy_on, VR_CONTROL_ERROR_INVALID_ARGUMENT, "absent");
	expect_status_reason("plain", NOT_OPTED_IN);
	/* ... and recorded while the domain stays disabled. */
	set_ok("plain", absent_policy);
	expect_status_reason("plain", DISABLED);

	key_msg = set_refused("valid", bad_key, VR_CONTROL_ERROR_INVALID_ARGUMENT, "colour");
	expect_status_reason("valid", "domain valid " TYPE_REASON);

	domain_msg =
		set_refused("no-such-domain", any, VR_CONTROL_ERROR_NO_DOMAIN, "'no-such-domain'");
}

Test(vreclaimd, pause)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_control_client) c = NULL;

	start_daemon("opt-in");
	c = vr_control_client_connect(socket_path, &error);
	cr_assert_not_null(c, "connect: %s", error ? error->message : "?");

	cr_assert(!vr_control_client_pause(c, "no-such-domain", TRUE, CALL_TIMEOUT_MS, &error),
		  "expected pause of an unknown domain to be refused");
	cr_assert(g_error_matches(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN),
		  "expected the no-domain error, got %s %d: %s", g_quark_to_string(error->domain),
		  error->code, error->message);
	cr_assert(strstr(error->message, "domain 'no-such-domain' is not known to vreclaimd"),
		  "expected the message to name the domain, got '%s'", error->message);
	g_clear_error(&error);

	/* The connection goes on; a known domain is paused. */
	cr_assert(vr_control_client_pause(c, "valid", TRUE, CALL_TIMEOUT_MS, &error),
		  "pause valid: %s", error ? error->message : "?");
	{
		g_autoptr(GPtrArray) doms = status(NULL);
		cr_assert(find(doms, "valid")->paused, "expected 'valid' paused");
		cr_assert(!find(doms, "plain")->paused, "expected 'plain' not paused");
	}
}

/* ---- stop ---- */

Test(vreclaimd, sigterm)
{
	int wstatus;

	start_daemon("opt-in");
	cr_assert(g_file_test(socket_path, G_FILE_TEST_EXISTS), "expected the control socket");
	cr_assert_eq(kill(daemon_pid, SIGTERM), 0, "kill(SIGTERM): %s", g_strerror(errno));
	wstatus = wait_exit();
	cr_assert_neq(wstatus, -1, "expected vreclaimd to stop within %d ms of SIGTERM",
		      DAEMON_WAIT_MS);
	cr_assert(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
		  "expected exit status 0 after SIGTERM, got wait status %#x; its log:\n%s",
		  wstatus, daemon_log());
	cr_assert(!g_file_test(socket_path, G_FILE_TEST_EXISTS),
		  "expected the control socket %s removed at exit", socket_path);
}

/* ---- a QEMU without libvirt (--qmp) ---- */

/*
 * The fake QEMU is tests/integration/fake-qemu, a child process of the test:
 * it listens on its QMP socket itself, so the socket's peer credentials
 * (SO_PEERCRED) name it and the daemon reads its /proc/PID. It speaks QMP as
 * QEMU 7.2 does (a greeting, capabilities negotiation first, "\r\n" after
 * each message, the command's "id" in its reply), serves one client at a
 * time and takes the next one when that one goes. It has a balloon and no
 * agent port (no --agent). Each command's name is appended to a record file
 * that the test reads.
 */

static pid_t fake_pid; /* the fake QEMU, 0 when none runs */
/* The fake QEMU claims twice the memory its process maps (VmSize), where a
 * QEMU maps all of its guest's RAM; set before start_fake_qemu(). */
static bool fake_lies_about_memory;
static char *qmp_path;	  /* dir/qemu.qmp, its QMP socket */
static char *record_path; /* dir/qmp-commands.txt, one command a line */

/* Start the fake QEMU (tests/integration/fake-qemu, VR_FAKE_QEMU) on
 * qmp_path; return once it listens. It listens itself, so the socket's peer
 * credentials name its process, fake_pid. */
static void start_fake_qemu(void)
{
	g_autofree char *fake_log = g_build_filename(dir, "fake-qemu.log", NULL);
	const char *args[] = { "--socket",
			       qmp_path,
			       "--name",
			       FAKE_NAME,
			       "--uuid",
			       FAKE_UUID,
			       "--record",
			       record_path,
			       "--memory-mib",
			       G_STRINGIFY(FAKE_MEMORY_MIB),
			       fake_lies_about_memory ? "--lie-about-memory" : NULL,
			       NULL };

	cr_assert_eq(fake_pid, 0, "the fake QEMU runs already");
	fake_pid = test_fake_qemu_start(args, fake_log);
}

/* SIGKILL the fake QEMU and reap it; its wait status, or -1 when none ran. */
static int kill_fake_qemu(void)
{
	int wstatus = 0;

	if (fake_pid <= 0)
		return -1;
	kill(fake_pid, SIGKILL);
	while (waitpid(fake_pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	fake_pid = 0;
	return wstatus;
}

/* How many times the fake QEMU was sent @command so far. */
static guint fake_count(const char *command)
{
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;
	guint n = 0;

	if (!g_file_get_contents(record_path, &text, NULL, NULL))
		return 0;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i]; i++)
		if (!strcmp(lines[i], command))
			n++;
	return n;
}

static void qmp_setup(void)
{
	setup();
	qmp_path = g_build_filename(dir, "qemu.qmp", NULL);
	record_path = g_build_filename(dir, "qmp-commands.txt", NULL);
	/* The fake QEMU's defaults: the balloon, a priority that is not the
	 * built-in one (50), so that the status shows the config's. */
	write_config_fleet(node_path, "opt-in", NULL,
			   "default-actions = balloon\n"
			   "default-priority = 30\n");
}

static void qmp_teardown(void)
{
	stop_daemon();
	kill_fake_qemu();
	g_clear_pointer(&qmp_path, g_free);
	g_clear_pointer(&record_path, g_free);
	teardown();
}

TestSuite(vreclaimd_qmp, .init = qmp_setup, .fini = qmp_teardown,
	  .description = "the real vreclaimd with a fake QEMU given by --qmp");

/* The fresh status's entry for @name (owned copy), or NULL when it lists none. */
static struct vr_domain_status *status_of(const char *name)
{
	g_autoptr(GPtrArray) doms = status(NULL);

	for (guint i = 0; i < doms->len; i++) {
		const struct vr_domain_status *st = g_ptr_array_index(doms, i);
		if (!strcmp(st->name, name)) {
			struct vr_domain_status *copy = vr_domain_status_new();
			*copy = *st;
			return copy;
		}
	}
	return NULL;
}

/* Wait up to @ms for the status to list the fake QEMU managed with its
 * resident size known; return its entry (owned). */
static struct vr_domain_status *wait_fake_managed(int ms)
{
	gint64 deadline = g_get_monotonic_time() + ms * 1000LL;

	for (;;) {
		struct vr_domain_status *st = status_of(FAKE_NAME);

		cr_assert(!daemon_exited(NULL), "vreclaimd exited; its log:\n%s", daemon_log());
		if (st && st->managed && st->rss_bytes > 0)
			return st;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %s managed with its resident size within %d ms, the status "
			  "says %s (managed %d, rss %" G_GUINT64_FORMAT
			  " bytes, reason '%s'); its log:\n%s",
			  FAKE_NAME, ms, st ? "so" : "no such domain", st ? st->managed : 0,
			  st ? st->rss_bytes : 0, st ? st->reason : "", daemon_log());
		vr_domain_status_free(st);
		g_usleep(POLL_US);
	}
}

/* The status's entry of the fake QEMU as a domain vreclaimd manages with
 * the balloon and without an agent. */
static void expect_fake_entry(const struct vr_domain_status *st, guint priority)
{
	cr_assert_str_eq(st->uuid, FAKE_UUID, "expected the UUID from query-uuid, got %s",
			 st->uuid);
	cr_assert(st->managed, "expected %s managed, reason '%s'", st->name, st->reason);
	cr_assert_str_empty(st->reason, "expected no reason for a managed domain, got '%s'",
			    st->reason);
	cr_assert_str_eq(st->policy, "default", "expected the default policy, got '%s'",
			 st->policy);
	cr_assert_eq(st->priority, priority, "expected priority %u, got %u", priority,
		     st->priority);
	cr_assert_eq(st->agent_state, VR_AGENT_STATE_NONE,
		     "expected no agent session (no agent port), got %s",
		     vr_agent_state_name(st->agent_state));
	/* Without an agent the guest's free memory is unknown: the balloon
	 * stays as it is (actual = the whole guest), so nothing acts. */
	cr_assert_eq(st->action, VR_DOMAIN_ACTION_NONE,
		     "expected no action (a blind balloon never inflates), got %s",
		     vr_domain_action_name(st->action));
	cr_assert_eq(st->reclaimed_bytes, 0, "expected nothing reclaimed, got %" G_GUINT64_FORMAT,
		     st->reclaimed_bytes);
	cr_assert_gt(st->rss_bytes, 0, "expected the fake QEMU's resident size from its /proc");
	cr_assert_lt(st->rss_bytes, FAKE_MEMORY_BYTES,
		     "expected the fake QEMU's own resident size, got %" G_GUINT64_FORMAT " bytes",
		     st->rss_bytes);
}

/* Wait up to DAEMON_WAIT_MS until the fake QEMU has answered query-balloon
 * @n times: the balloon action's ticks after the probe's. */
static void wait_query_balloon(guint n)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	while (fake_count("query-balloon") < n) {
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %u query-balloon within %d ms, the fake QEMU got %u; the "
			  "daemon's log:\n%s",
			  n, DAEMON_WAIT_MS, fake_count("query-balloon"), daemon_log());
		g_usleep(POLL_US);
	}
}

/* Wait up to DAEMON_WAIT_MS for the status to list no fake QEMU. */
static void wait_fake_gone(void)
{
	gint64 deadline = g_get_monotonic_time() + DAEMON_WAIT_MS * 1000LL;

	for (;;) {
		g_autoptr(vr_domain_status) st = status_of(FAKE_NAME);

		cr_assert(!daemon_exited(NULL), "vreclaimd exited; its log:\n%s", daemon_log());
		if (!st)
			return;
		cr_assert(g_get_monotonic_time() < deadline,
			  "expected %s gone from the status within %d ms of its QEMU's exit; its "
			  "log:\n%s",
			  FAKE_NAME, DAEMON_WAIT_MS, daemon_log());
		g_usleep(POLL_US);
	}
}

Test(vreclaimd_qmp, found_set_and_gone)
{
	const char *const priority_80[] = { "priority=80", NULL };
	const char *const priority_500[] = { "priority=500", NULL };
	g_autoptr(vr_domain_status) st = NULL;
	g_autofree char *found = NULL;
	g_autofree char *msg = NULL;
	int wstatus;

	start_fake_qemu();
	spawn_daemon(qmp_path);

	/* Found through the probe, its process from the socket's peer. */
	st = wait_fake_managed(DAEMON_WAIT_MS);
	found = g_strdup_printf(FAKE_NAME ": found at QMP socket %s (uuid " FAKE_UUID
					  ", QEMU process %d)",
				qmp_path, (int)fake_pid);
	wait_log(found);
	expect_fake_entry(st, 30);
	cr_assert_eq(fake_count("qmp_capabilities"), 1,
		     "expected one connection that negotiated once, got %u",
		     fake_count("qmp_capabilities"));

	/* The balloon action asks QEMU every tick and never sets a target. */
	wait_query_balloon(4);
	cr_assert_eq(fake_count("balloon"), 0,
		     "expected no balloon command (no agent: the guest's free memory is "
		     "unknown), the fake QEMU got %u; the daemon's log:\n%s",
		     fake_count("balloon"), daemon_log());
	cr_assert_eq(fake_count("qom-get"), 0, "expected no qom-get: there is no serial port");
	g_clear_pointer(&st, vr_domain_status_free);
	st = status_of(FAKE_NAME);
	cr_assert_not_null(st, "expected %s still listed", FAKE_NAME);
	expect_fake_entry(st, 30);

	/* set changes the tuning in the daemon... */
	set_ok(FAKE_NAME, priority_80);
	g_clear_pointer(&st, vr_domain_status_free);
	st = status_of(FAKE_NAME);
	cr_assert_not_null(st, "expected %s still listed after set", FAKE_NAME);
	expect_fake_entry(st, 80);

	/* ... all or nothing. */
	msg = set_refused(FAKE_NAME, priority_500, VR_CONTROL_ERROR_INVALID_ARGUMENT, "priority");
	cr_assert(strstr(msg, "500"), "expected the message to name the value 500, got '%s'", msg);
	g_clear_pointer(&st, vr_domain_status_free);
	st = status_of(FAKE_NAME);
	cr_assert_not_null(st, "expected %s still listed after a refused set", FAKE_NAME);
	expect_fake_entry(st, 80);

	/* Its QEMU dies: the domain goes, the daemon stays. */
	wstatus = kill_fake_qemu();
	cr_assert(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL,
		  "expected the fake QEMU alive until killed, got wait status %#x", wstatus);
	wait_fake_gone();
	wait_log(FAKE_NAME ": its QEMU process exited");
	cr_assert(!daemon_exited(NULL), "expected vreclaimd to keep running; its log:\n%s",
		  daemon_log());
	{
		struct vr_daemon_status d;
		g_autoptr(GPtrArray) doms = status(&d);
		cr_assert_eq(node_domains(doms), ARRAY_LEN(plain_cases) + ARRAY_LEN(invalid_cases),
			     "expected the node's domains kept, got %u", node_domains(doms));
		cr_assert(d.libvirt_connected, "expected the libvirt connection kept");
	}
}

/* A QEMU that claims more guest memory than its process maps is not taken
 * (it would size every decision for the domain), and the daemon says why. */
Test(vreclaimd_qmp, memory_beyond_its_mapping_is_refused)
{
	g_autoptr(vr_domain_status) st = NULL;

	fake_lies_about_memory = true;
	start_fake_qemu();
	spawn_daemon(qmp_path);
	wait_log("its process maps only");
	wait_log("trying again every 5 s");
	st = status_of(FAKE_NAME);
	cr_assert_null(st, "expected no %s: its QEMU claims more memory than it maps; the log:\n%s",
		       FAKE_NAME, daemon_log());
	cr_assert(!daemon_exited(NULL), "expected vreclaimd to keep running; its log:\n%s",
		  daemon_log());
}

Test(vreclaimd_qmp, socket_without_qemu)
{
	g_autoptr(vr_domain_status) st = NULL;
	g_autofree char *failed = NULL;
	g_autofree char *found = NULL;
	gint64 t0;

	spawn_daemon(qmp_path);

	/* Nothing listens: the log names the socket, and no domain. */
	failed = g_strdup_printf("QMP socket %s: ", qmp_path);
	wait_log(failed);
	wait_log("trying again every 5 s");
	st = status_of(FAKE_NAME);
	cr_assert_null(st, "expected no %s while nothing listens on %s", FAKE_NAME, qmp_path);
	cr_assert(!daemon_exited(NULL), "expected vreclaimd to run without its QEMU; its log:\n%s",
		  daemon_log());

	/* The QEMU comes: the next try (every 5 s) finds it. */
	start_fake_qemu();
	t0 = g_get_monotonic_time();
	st = wait_fake_managed(DAEMON_WAIT_MS);
	cr_log_info("the fake QEMU was found %" G_GINT64_FORMAT " ms after it listened",
		    (g_get_monotonic_time() - t0) / 1000);
	expect_fake_entry(st, 30);
	found = g_strdup_printf(FAKE_NAME ": found at QMP socket %s (uuid " FAKE_UUID
					  ", QEMU process %d)",
				qmp_path, (int)fake_pid);
	wait_log(found);
}
