/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of vreclaimd's control socket (hostd/control/control.c,
 * hostd/control/control-client.c): the wire format of requests (good ones, every
 * kind of malformed one with the member its message names, the encoder's
 * refusals) and of replies (status round trips, error replies, replies that
 * do not decode); one line served against fake daemon ops; and the server
 * itself in a temporary folder: the socket's mode and folder, stale and
 * live sockets at its path, garbage and oversized lines, two clients, a
 * client that vanishes mid-line, a client that half-closes, too many
 * clients; roles (who is admin, read-only or refused, from the peer's
 * credentials), the idle timeout and the clients per user; and the
 * blocking client against it.
 *
 * Clients of another user: as root, a child process drops to OTHER_ID (and
 * the supplementary groups a test asks for), connects, and hands the socket
 * back (SO_PEERCRED keeps the credentials of connect()); as any other user,
 * the test's own user is "another user" to a server whose owner is set to
 * someone else. Tests that need supplementary groups need root and skip
 * otherwise.
 *
 * The server suites run the server's main loop in the test's thread
 * (pump()), with raw non-blocking client sockets; the client suite runs it
 * in a second thread, as the blocking client needs.
 *
 * Lines in this file are written with ' for " (dq() swaps them back).
 * Parameter structs hold no pointers (Criterion re-executes the test
 * binary, where static data lives at other addresses).
 */
#define _GNU_SOURCE /* setgroups */

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <grp.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control/control-client.h"
#include "control/control.h"
#include "control/metrics.h"
#include "json-doc.h"
#include "test-fake-tree.h"
#include "test-messages.h"
#include "test-quotes.h"
#include "test-status.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static void expect_error(const GError *err, int code, const char *want, const char *what)
{
	cr_assert_not_null(err, "%s: expected a %s error, got none", what,
			   vr_control_error_class_name((enum vr_control_error)code));
	cr_assert_eq(err->domain, VR_CONTROL_ERROR, "%s: expected VR_CONTROL_ERROR, got %s (%s)",
		     what, g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected class %s, got %s (%s)", what,
		     vr_control_error_class_name((enum vr_control_error)code),
		     vr_control_error_class_name((enum vr_control_error)err->code), err->message);
	cr_assert(msg_has_all(err->message, want), "%s: expected the message to mention '%s': %s",
		  what, want, err->message);
}

/* A small fleet: a managed domain, and one whose name needs escaping. */
static GPtrArray *fleet_new(void)
{
	GPtrArray *fleet = vr_domain_status_array_new();
	struct vr_domain_status *a = vr_domain_status_new();
	struct vr_domain_status *b = vr_domain_status_new();

	g_strlcpy(a->name, "web1", sizeof(a->name));
	g_strlcpy(a->uuid, "8f0c5d9e-3b1a-4c2d-9e8f-0123456789ab", sizeof(a->uuid));
	a->managed = TRUE;
	g_strlcpy(a->policy, "damon-reclaim-2021", sizeof(a->policy));
	a->priority = 80;
	a->guaranteed_bytes = 512 * MIB;
	a->agent_state = VR_AGENT_STATE_CONNECTED;
	g_strlcpy(a->agent_version, "0.1.0", sizeof(a->agent_version));
	g_strlcpy(a->agent_backend, "damon", sizeof(a->agent_backend));
	a->action = VR_DOMAIN_ACTION_AGENT_RECLAIM;
	a->share_bytes = 64 * MIB;
	a->reclaimed_bytes = GIB;
	a->rss_start_bytes = 2 * GIB + 512 * MIB;
	a->rss_bytes = GIB + 512 * MIB;
	a->swap_bytes = 3 * MIB;
	a->reportable_free_bytes = 300 * MIB;
	a->qt_exceeds = 3;
	a->cold_bytes = 700 * MIB;
	a->daemon_cpu_us = 1250000;
	g_strlcpy(b->name, "db \"main\"\\2", sizeof(b->name));
	g_strlcpy(b->reason, "not opted in", sizeof(b->reason));
	b->agent_state = VR_AGENT_STATE_FAILED;
	b->paused = TRUE;
	b->rss_bytes = 4 * GIB;
	g_strlcpy(b->last_error, "agent: connection refused\non two lines", sizeof(b->last_error));
	g_ptr_array_add(fleet, a);
	g_ptr_array_add(fleet, b);
	return fleet;
}

/* ---- fake daemon ops ---- */

/**
 * struct fake - what the fake daemon saw and how it answers.
 * @lock:	the ops may run in the client suite's server thread.
 * @nr_set, @nr_pause: calls of each op.
 * @last_domain: the domain of the last set or pause ("*" for every domain).
 * @last_settings: the settings of the last set, joined by '|'.
 * @last_pause:	the last pause op's @pause.
 * @fail_status: status fails (with a GIO error: a "failed" reply).
 */
struct fake {
	GMutex lock;
	int nr_set, nr_pause;
	char last_domain[VR_DOMAIN_NAME_SIZE];
	char last_settings[1024];
	gboolean last_pause;
	gboolean fail_status;
};

static struct fake F;

static gboolean fake_known(const char *domain, GError **error)
{
	if (!strcmp(domain, "web1") || !strcmp(domain, "db \"main\"\\2"))
		return TRUE;
	g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN, "domain '%s' is not known",
		    domain);
	return FALSE;
}

static gboolean fake_status(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			    GError **error)
{
	(void)user;
	if (F.fail_status) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "libvirt is away");
		return FALSE;
	}
	*domains = fleet_new();
	daemon_fill(daemon);
	return TRUE;
}

static gboolean fake_set(gpointer user, const char *domain, const char *const *settings,
			 GError **error)
{
	(void)user;
	g_mutex_lock(&F.lock);
	F.nr_set++;
	g_strlcpy(F.last_domain, domain, sizeof(F.last_domain));
	g_autofree char *joined = g_strjoinv("|", (char **)settings);
	g_strlcpy(F.last_settings, joined, sizeof(F.last_settings));
	g_mutex_unlock(&F.lock);
	if (!fake_known(domain, error))
		return FALSE;
	for (; *settings; settings++)
		if (!g_str_has_prefix(*settings, "priority=") &&
		    !g_str_has_prefix(*settings, "policy=")) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
				    "unknown setting '%s'", *settings);
			return FALSE;
		}
	return TRUE;
}

static gboolean fake_pause(gpointer user, const char *domain, gboolean pause, GError **error)
{
	(void)user;
	g_mutex_lock(&F.lock);
	F.nr_pause++;
	g_strlcpy(F.last_domain, domain ? domain : "*", sizeof(F.last_domain));
	F.last_pause = pause;
	g_mutex_unlock(&F.lock);
	return !domain || fake_known(domain, error);
}

static const struct vr_control_ops fake_ops = {
	.status = fake_status,
	.set = fake_set,
	.pause = fake_pause,
};

/* ------------------------------------------------------------------------- */
/* Requests: good ones                                                       */
/* ------------------------------------------------------------------------- */

struct good_case {
	char name[48];
	char line[256];
	int command;
	bool has_domain;
	char domain[32];
	char settings[128]; /* joined by '|'; "" for none */
};

static struct good_case good_cases[] = {
	{ "status", "{'command':'status'}", VR_CONTROL_STATUS, false, "", "" },
	{ "metrics", "{'command':'metrics'}", VR_CONTROL_METRICS, false, "", "" },
	{ "pause all", "{'command':'pause'}", VR_CONTROL_PAUSE, false, "", "" },
	{ "resume one", "{'command':'resume','domain':'web1'}", VR_CONTROL_RESUME, true, "web1",
	  "" },
	{ "set", "{'command':'set','domain':'web1','settings':['priority=80','guaranteed=1G']}",
	  VR_CONTROL_SET, true, "web1", "priority=80|guaranteed=1G" },
	{ "set, members in another order",
	  "{'settings':['policy='],'domain':'db \\'main\\'','command':'set'}", VR_CONTROL_SET, true,
	  "db \"main\"", "policy=" },
	{ "a unicode name", "{'command':'pause','domain':'caf\\u00e9'}", VR_CONTROL_PAUSE, true,
	  "caf\xc3\xa9", "" },
	{ "spaces, a CR and the newline", "  { 'command' : 'status' }\r\n", VR_CONTROL_STATUS,
	  false, "", "" },
};

ParameterizedTestParameters(wire, decodes_good_requests)
{
	return cr_make_param_array(struct good_case, good_cases, G_N_ELEMENTS(good_cases));
}

ParameterizedTest(struct good_case *c, wire, decodes_good_requests)
{
	g_autofree char *line = dq(c->line);
	g_auto(vr_control_request) req = { 0 };
	g_auto(vr_control_request) again = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_decode_request(line, strlen(line), &req, &err),
		  "%s: expected it to decode: %s", c->name, err ? err->message : "?");
	cr_assert_eq(req.command, c->command, "%s: expected command %s, got %s", c->name,
		     vr_control_command_name(c->command), vr_control_command_name(req.command));
	cr_assert_eq(req.has_domain, c->has_domain, "%s: has_domain", c->name);
	cr_assert_str_eq(req.domain, c->domain, "%s: expected domain '%s', got '%s'", c->name,
			 c->domain, req.domain);
	g_autofree char *joined = req.settings ? g_strjoinv("|", req.settings) : g_strdup("");
	cr_assert_str_eq(joined, c->settings, "%s: expected settings '%s', got '%s'", c->name,
			 c->settings, joined);

	/* What decodes encodes, and decodes to the same again. */
	g_autofree char *encoded = vr_control_encode_request(&req, &err);
	cr_assert_not_null(encoded, "%s: encode: %s", c->name, err ? err->message : "?");
	cr_assert(g_str_has_suffix(encoded, "\n") && !strchr(encoded, '\n')[1], "%s: one line: %s",
		  c->name, encoded);
	cr_assert(vr_control_decode_request(encoded, strlen(encoded), &again, &err),
		  "%s: the encoded line does not decode: %s", c->name, encoded);
	cr_assert_eq(again.command, req.command);
	cr_assert_str_eq(again.domain, req.domain);
	g_autofree char *joined2 = again.settings ? g_strjoinv("|", again.settings) : g_strdup("");
	cr_assert_str_eq(joined2, joined);
}

Test(wire, encodes_requests_exactly)
{
	char *settings[] = { (char *)"priority=80", (char *)"guaranteed=1G", NULL };
	struct vr_control_request set = { .command = VR_CONTROL_SET, .has_domain = TRUE };
	struct vr_control_request all = { .command = VR_CONTROL_RESUME };
	g_autoptr(GError) err = NULL;

	g_strlcpy(set.domain, "web \"1\"", sizeof(set.domain));
	set.settings = settings;
	g_autofree char *a = vr_control_encode_request(&set, &err);
	g_autofree char *want_a = dq("{'command':'set','domain':'web \\'1\\'','settings':"
				     "['priority=80','guaranteed=1G']}\n");
	cr_assert_str_eq(a, want_a, "expected %s got %s", want_a, a);
	g_autofree char *b = vr_control_encode_request(&all, &err);
	g_autofree char *want_b = dq("{'command':'resume'}\n");
	cr_assert_str_eq(b, want_b, "expected %s got %s", want_b, b);
}

/* ------------------------------------------------------------------------- */
/* Requests: every malformed kind                                            */
/* ------------------------------------------------------------------------- */

struct bad_case {
	char name[64];
	char line[400];
	char want[96]; /* ';'-separated groups of '|'-separated words */
};

static struct bad_case bad_cases[] = {
	{ "not JSON", "status please", "not JSON" },
	{ "an empty line", "", "not JSON" },
	{ "cut short", "{'command':'sta", "not JSON" },
	{ "data after the object", "{'command':'status'} {}", "not JSON" },
	{ "an array", "['status']", "expected a JSON object" },
	{ "a string", "'status'", "expected a JSON object" },
	{ "null", "null", "expected a JSON object" },
	{ "a newline inside", "{'command':\n'status'}", "newline" },
	{ "no command", "{}", "command: missing" },
	{ "command: a number", "{'command':5}", "command: expected a string;5" },
	{ "command: null", "{'command':null}", "command: expected a string;null" },
	{ "command: unknown", "{'command':'reboot'}", "command: unknown command 'reboot'" },
	{ "command: case matters", "{'command':'STATUS'}", "unknown command 'STATUS'" },
	{ "command given twice", "{'command':'status','command':'pause'}", "command;twice" },
	{ "status with a domain", "{'command':'status','domain':'web1'}",
	  "domain: unknown member;status" },
	{ "metrics with settings", "{'command':'metrics','settings':['a=b']}",
	  "settings: unknown member" },
	{ "an unknown member", "{'command':'pause','force':true}",
	  "force: unknown member;pause takes domain" },
	{ "pause with settings", "{'command':'pause','settings':['a=b']}",
	  "settings: unknown member" },
	{ "domain: a number", "{'command':'pause','domain':5}", "domain: expected a string" },
	{ "domain: null", "{'command':'resume','domain':null}", "domain: expected a string;null" },
	{ "domain: empty", "{'command':'pause','domain':''}", "domain: expected a non-empty" },
	{ "domain: a NUL", "{'command':'pause','domain':'a\\u0000b'}", "domain;NUL" },
	{ "domain: a newline", "{'command':'pause','domain':'a\\nb'}", "domain;control" },
	{ "domain: a bidi override", "{'command':'pause','domain':'a\\u202eb'}", "domain;format" },
	{ "domain: not UTF-8", "{'command':'pause','domain':'a\xff'}", "domain|UTF-8|JSON" },
	{ "set without a domain", "{'command':'set','settings':['priority=1']}",
	  "domain: missing" },
	{ "set without settings", "{'command':'set','domain':'web1'}", "settings: missing" },
	{ "settings: a string", "{'command':'set','domain':'web1','settings':'priority=1'}",
	  "settings: expected an array" },
	{ "settings: none", "{'command':'set','domain':'web1','settings':[]}",
	  "settings: expected 1..32;got 0" },
	{ "settings: a number", "{'command':'set','domain':'web1','settings':[80]}",
	  "settings[0]: expected a string" },
	{ "a setting without =", "{'command':'set','domain':'web1','settings':['a=1','priority']}",
	  "settings[1]: 'priority' is not KEY=VALUE" },
	{ "a setting without KEY", "{'command':'set','domain':'web1','settings':['=80']}",
	  "settings[0];no KEY" },
	{ "a setting with a bad KEY",
	  "{'command':'set','domain':'web1','settings':['Prio rity=1']}",
	  "settings[0];'Prio rity' is not a setting name" },
	{ "a setting twice",
	  "{'command':'set','domain':'web1','settings':['priority=1','policy=x','priority=2']}",
	  "settings[2];'priority=2' is set twice" },
	{ "a setting with a control character",
	  "{'command':'set','domain':'web1','settings':['policy=a\\tb']}", "settings[0];control" },
	{ "deep nesting",
	  "{'command':[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]"
	  "]]]]]]]]]]]]]]]}",
	  "not JSON|expected a string" },
};

ParameterizedTestParameters(wire, refuses_malformed_requests)
{
	return cr_make_param_array(struct bad_case, bad_cases, G_N_ELEMENTS(bad_cases));
}

ParameterizedTest(struct bad_case *c, wire, refuses_malformed_requests)
{
	g_autofree char *line = dq(c->line);
	g_auto(vr_control_request) req = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_control_decode_request(line, strlen(line), &req, &err),
		      "%s: expected a refusal: %s", c->name, line);
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, c->want, c->name);
	cr_assert_null(req.settings, "%s: a refused request holds nothing", c->name);

	/* The server answers the same line with that error, in one line. */
	g_autofree char *reply = vr_control_handle_line(&fake_ops, NULL, line, strlen(line));
	g_autoptr(GError) rerr = NULL;
	cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &rerr));
	expect_error(rerr, VR_CONTROL_ERROR_INVALID_ARGUMENT, c->want, c->name);
	cr_assert_eq(F.nr_set + F.nr_pause, 0, "%s: a refused request reached the daemon", c->name);
}

Test(wire, refuses_what_is_too_long)
{
	g_auto(vr_control_request) req = { 0 };
	g_autoptr(GError) err = NULL;

	/* A name of 256 bytes: one more than the status holds. */
	g_autofree char *name = g_strnfill(VR_DOMAIN_NAME_SIZE, 'n');
	g_autofree char *l1 = g_strdup_printf("{\"command\":\"pause\",\"domain\":\"%s\"}", name);
	cr_assert_not(vr_control_decode_request(l1, strlen(l1), &req, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "domain;longer than 255", "long name");
	g_clear_error(&err);

	/* A setting of 256 bytes. */
	g_autofree char *value = g_strnfill(VR_CONTROL_MAX_SETTING_LEN - 1, 'v');
	g_autofree char *l2 = g_strdup_printf(
		"{\"command\":\"set\",\"domain\":\"web1\",\"settings\":[\"p=%s\"]}", value);
	cr_assert_not(vr_control_decode_request(l2, strlen(l2), &req, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "settings[0];255", "long setting");
	g_clear_error(&err);

	/* 33 settings. */
	GString *l3 = g_string_new("{\"command\":\"set\",\"domain\":\"web1\",\"settings\":[");
	for (int i = 0; i <= VR_CONTROL_MAX_SETTINGS; i++)
		g_string_append_printf(l3, "%s\"k%d=1\"", i ? "," : "", i);
	g_string_append(l3, "]}");
	cr_assert_not(vr_control_decode_request(l3->str, l3->len, &req, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "settings;1..32;33", "33 settings");
	g_string_free(l3, TRUE);
	g_clear_error(&err);

	/* A line of 64 KiB and more. */
	gsize n = VR_CONTROL_MAX_REQUEST_BYTES + 10;
	g_autofree char *big = g_malloc(n + 1);
	memset(big, ' ', n);
	memcpy(big, "{\"command\":\"status\"}", 20);
	big[n] = '\0';
	cr_assert_not(vr_control_decode_request(big, n, &req, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "above the limit;65536", "64 KiB");
}

struct refusal_case {
	char name[48];
	int command;
	bool has_domain;
	char domain[16];
	char settings[64]; /* '|'-joined; "-" for none */
	char want[64];
};

static struct refusal_case refusal_cases[] = {
	{ "set without a domain", VR_CONTROL_SET, false, "", "priority=1", "domain: missing" },
	{ "set without settings", VR_CONTROL_SET, true, "web1", "-", "settings;got none" },
	{ "set with a bad setting", VR_CONTROL_SET, true, "web1", "priority", "not KEY=VALUE" },
	{ "status with a domain", VR_CONTROL_STATUS, true, "web1", "-", "status takes no domain" },
	{ "pause with settings", VR_CONTROL_PAUSE, false, "", "a=1", "pause takes no settings" },
	{ "an empty domain", VR_CONTROL_PAUSE, true, "", "-", "domain;non-empty" },
	{ "an unknown command", 42, false, "", "-", "command;unknown" },
};

ParameterizedTestParameters(wire, encoder_refuses_what_the_server_would)
{
	return cr_make_param_array(struct refusal_case, refusal_cases, G_N_ELEMENTS(refusal_cases));
}

ParameterizedTest(struct refusal_case *c, wire, encoder_refuses_what_the_server_would)
{
	struct vr_control_request req = { .command = (enum vr_control_command)c->command,
					  .has_domain = c->has_domain };
	g_auto(GStrv) settings = strcmp(c->settings, "-") ? g_strsplit(c->settings, "|", -1) : NULL;
	g_autoptr(GError) err = NULL;

	g_strlcpy(req.domain, c->domain, sizeof(req.domain));
	req.settings = settings;
	g_autofree char *line = vr_control_encode_request(&req, &err);
	cr_assert_null(line, "%s: expected a refusal, got %s", c->name, line);
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, c->want, c->name);
}

/* ------------------------------------------------------------------------- */
/* Replies                                                                   */
/* ------------------------------------------------------------------------- */

Test(wire, status_round_trips)
{
	g_autoptr(GPtrArray) fleet = fleet_new();
	g_autoptr(GPtrArray) back = NULL;
	struct vr_daemon_status d, d2;
	g_autoptr(GError) err = NULL;

	daemon_fill(&d);
	g_autofree char *line = vr_control_encode_status(fleet, &d);
	cr_assert(g_str_has_suffix(line, "\n") && !strchr(line, '\n')[1], "one line: %s", line);
	cr_assert(strstr(line, "\"name\":\"db \\\"main\\\"\\\\2\""), "the name, escaped: %s", line);
	cr_assert(strstr(line, "\"agent_state\":\"connected\"") &&
			  strstr(line, "\"action\":\"agent-reclaim\""),
		  "enums by name: %s", line);
	cr_assert(strstr(line, "\"reportable_free_bytes\":314572800,"), "reportable free: %s",
		  line);
	cr_assert(vr_control_decode_status_reply(line, strlen(line), &back, &d2, &err),
		  "decode: %s", err ? err->message : "?");
	cr_assert_eq(memcmp(&d, &d2, sizeof(d)), 0, "the daemon's status changed on the way");
	cr_assert_eq(back->len, fleet->len);
	for (guint i = 0; i < fleet->len; i++)
		cr_assert_eq(memcmp(g_ptr_array_index(fleet, i), g_ptr_array_index(back, i),
				    sizeof(struct vr_domain_status)),
			     0, "domain %u changed on the way", i);
}

Test(wire, encodes_replies_exactly)
{
	g_autofree char *empty = vr_control_encode_empty();
	cr_assert_str_eq(empty, "{\"return\":{}}\n");
	g_autofree char *metrics = vr_control_encode_metrics("a 1\nb{x=\"y\"} 2\n");
	cr_assert_str_eq(metrics, "{\"return\":{\"text\":\"a 1\\nb{x=\\\"y\\\"} 2\\n\"}}\n");
	g_autoptr(GError) e1 = g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_NO_DOMAIN,
					   "domain 'x' is not known");
	g_autofree char *l1 = vr_control_encode_error(e1);
	cr_assert_str_eq(l1, "{\"error\":{\"class\":\"no-domain\",\"desc\":\"domain 'x' is not "
			     "known\"}}\n");
	g_autoptr(GError) e2 = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "gone");
	g_autofree char *l2 = vr_control_encode_error(e2);
	cr_assert_str_eq(l2, "{\"error\":{\"class\":\"failed\",\"desc\":\"gone\"}}\n",
			 "an error of another domain is 'failed': %s", l2);
	/* A long description is cut, at a character boundary. */
	g_autofree char *longer = g_strnfill(3000, 'x');
	g_autoptr(GError) e3 = g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, "%s", longer);
	g_autofree char *l3 = vr_control_encode_error(e3);
	g_autoptr(GError) back = NULL;
	cr_assert_not(vr_control_decode_empty_reply(l3, strlen(l3), &back));
	cr_assert_eq(strlen(back->message), VR_CONTROL_MAX_DESC_LEN,
		     "expected the description cut to %d bytes, got %zu", VR_CONTROL_MAX_DESC_LEN,
		     strlen(back->message));
	cr_assert(g_str_has_suffix(back->message, "..."));
}

struct reply_case {
	char name[48];
	char line[200];
	int code;
	char want[96];
};

static struct reply_case reply_cases[] = {
	{ "garbage", "ok", VR_CONTROL_ERROR_FAILED, "reply is invalid;not JSON" },
	{ "an array", "[]", VR_CONTROL_ERROR_FAILED, "reply is invalid;object" },
	{ "neither", "{}", VR_CONTROL_ERROR_FAILED, "neither return nor error" },
	{ "return: not an object", "{'return':5}", VR_CONTROL_ERROR_FAILED,
	  "return: expected an object" },
	{ "no-domain", "{'error':{'class':'no-domain','desc':'domain x is not known'}}",
	  VR_CONTROL_ERROR_NO_DOMAIN, "domain x is not known" },
	{ "invalid-argument", "{'error':{'class':'invalid-argument','desc':'priority: 101'}}",
	  VR_CONTROL_ERROR_INVALID_ARGUMENT, "priority: 101" },
	{ "a class from the future", "{'error':{'class':'busy','desc':'later'}}",
	  VR_CONTROL_ERROR_FAILED, "later" },
	{ "error: a string", "{'error':'bad'}", VR_CONTROL_ERROR_FAILED,
	  "reply is invalid;class and a desc" },
	{ "error: no desc", "{'error':{'class':'failed'}}", VR_CONTROL_ERROR_FAILED,
	  "reply is invalid" },
};

ParameterizedTestParameters(wire, decodes_error_and_broken_replies)
{
	return cr_make_param_array(struct reply_case, reply_cases, G_N_ELEMENTS(reply_cases));
}

ParameterizedTest(struct reply_case *c, wire, decodes_error_and_broken_replies)
{
	g_autofree char *line = dq(c->line);
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_control_decode_empty_reply(line, strlen(line), &err),
		      "%s: expected an error", c->name);
	expect_error(err, c->code, c->want, c->name);
}

/* One member of a good status reply replaced by @value (JSON), or removed. */
struct status_patch_case {
	char name[48];
	char object[16]; /* "daemon", "domain0", "return" */
	char member[24];
	char value[64]; /* JSON text; "" removes the member */
	char want[96];
};

static struct status_patch_case status_patch_cases[] = {
	{ "no daemon", "return", "daemon", "", "return.daemon: missing" },
	{ "no domains", "return", "domains", "", "return.domains: missing" },
	{ "domains: an object", "return", "domains", "{}", "return.domains: expected an array" },
	{ "daemon: a number", "return", "daemon", "1", "return.daemon: expected an object" },
	{ "no ticks", "daemon", "ticks", "", "return.daemon.ticks: missing" },
	{ "permille above 1000", "daemon", "free_mem_rate_permille", "1001",
	  "return.daemon.free_mem_rate_permille;0..1000;1001" },
	{ "a negative size", "domain0", "rss_bytes", "-1", "return.domains[0].rss_bytes;-1" },
	{ "a size beyond 64 bits", "domain0", "rss_bytes", "4242424242",
	  "return.domains[0].rss_bytes" },
	{ "a fraction", "domain0", "cold_bytes", "1.5", "return.domains[0].cold_bytes;1.5" },
	{ "reportable free negative", "domain0", "reportable_free_bytes", "-1",
	  "return.domains[0].reportable_free_bytes;-1" },
	{ "no reportable free", "domain0", "reportable_free_bytes", "",
	  "return.domains[0].reportable_free_bytes: missing" },
	{ "priority above 100", "domain0", "priority", "101", "return.domains[0].priority;0..100" },
	{ "managed: a string", "domain0", "managed", "'yes'",
	  "return.domains[0].managed: expected a boolean" },
	{ "an unknown agent state", "domain0", "agent_state", "'sleeping'",
	  "return.domains[0].agent_state" },
	{ "an unknown action", "domain0", "action", "'explode'", "return.domains[0].action" },
	{ "an empty name", "domain0", "name", "''", "return.domains[0].name;non-empty" },
	{ "a uuid too long", "domain0", "uuid", "'0123456789012345678901234567890123456'",
	  "return.domains[0].uuid;longer than 36" },
	{ "no name", "domain0", "name", "", "return.domains[0].name: missing" },
};

ParameterizedTestParameters(wire, refuses_broken_status_replies)
{
	return cr_make_param_array(struct status_patch_case, status_patch_cases,
				   G_N_ELEMENTS(status_patch_cases));
}

ParameterizedTest(struct status_patch_case *c, wire, refuses_broken_status_replies)
{
	g_autoptr(GPtrArray) fleet = fleet_new();
	struct vr_daemon_status d;
	g_autoptr(GPtrArray) back = NULL;
	g_autoptr(GError) err = NULL;

	daemon_fill(&d);
	g_autofree char *good = vr_control_encode_status(fleet, &d);
	g_autoptr(json_object) root = json_tokener_parse(good);
	struct json_object *ret = json_object_object_get(root, "return");
	struct json_object *obj = ret;
	if (!strcmp(c->object, "daemon"))
		obj = json_object_object_get(ret, "daemon");
	else if (!strcmp(c->object, "domain0"))
		obj = json_object_array_get_idx(json_object_object_get(ret, "domains"), 0);
	json_object_object_del(obj, c->member);
	if (*c->value) {
		g_autofree char *value = dq(c->value);
		json_object_object_add(obj, c->member, json_tokener_parse(value));
	}
	g_autofree char *line =
		g_strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	/* json-c cannot hold 2^64: put the literal in the text. */
	if (!strcmp(c->value, "4242424242")) {
		g_autofree char *old = line;
		g_auto(GStrv) parts = g_strsplit(old, "4242424242", 2);
		line = g_strjoinv("18446744073709551616", parts);
	}
	cr_assert_not(vr_control_decode_status_reply(line, strlen(line), &back, &d, &err),
		      "%s: expected a refusal: %s", c->name, line);
	expect_error(err, VR_CONTROL_ERROR_FAILED, c->want, c->name);
	cr_assert(msg_has_any(err->message, "reply is invalid"), "%s: %s", c->name, err->message);
	cr_assert_null(back, "%s: nothing is returned on a refusal", c->name);
}

Test(wire, status_reply_ignores_members_it_does_not_know)
{
	const char *line = "{\"return\":{\"daemon\":{\"version\":\"9\",\"uptime_ms\":1,"
			   "\"libvirt_uri\":\"\",\"libvirt_connected\":false,"
			   "\"libvirt_degraded\":false,\"libvirt_degraded_reason\":\"\","
			   "\"libvirt_stalls\":0,"
			   "\"host_needs_memory\":false,\"free_mem_rate_permille\":0,"
			   "\"host_memory_state\":\"unknown\","
			   "\"fleet_quota_bytes\":0,\"reloads\":0,\"ticks\":0,\"new\":[1]},"
			   "\"domains\":[],\"later\":true}}";
	g_autoptr(GPtrArray) back = NULL;
	struct vr_daemon_status d;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_decode_status_reply(line, strlen(line), &back, &d, &err), "%s",
		  err ? err->message : "?");
	cr_assert_eq(back->len, 0);
	cr_assert_str_eq(d.version, "9");
}

/* ------------------------------------------------------------------------- */
/* One line served against the fake daemon                                   */
/* ------------------------------------------------------------------------- */

static void fake_reset(void)
{
	memset(&F, 0, sizeof(F));
	g_mutex_init(&F.lock);
}

TestSuite(wire, .init = fake_reset);
TestSuite(handle, .init = fake_reset);

static char *handle(const char *line)
{
	g_autofree char *l = dq(line);

	return vr_control_handle_line(&fake_ops, NULL, l, strlen(l));
}

Test(handle, status_and_metrics_come_from_the_daemon)
{
	g_autofree char *reply = handle("{'command':'status'}");
	g_autoptr(GPtrArray) domains = NULL;
	struct vr_daemon_status d;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_decode_status_reply(reply, strlen(reply), &domains, &d, &err), "%s",
		  err ? err->message : reply);
	cr_assert_eq(domains->len, 2);
	cr_assert_str_eq(((struct vr_domain_status *)domains->pdata[0])->name, "web1");
	cr_assert_eq(d.ticks, 3600);

	g_autofree char *mreply = handle("{'command':'metrics'}");
	g_autofree char *text = NULL;
	cr_assert(vr_control_decode_metrics_reply(mreply, strlen(mreply), &text, &err), "%s",
		  err ? err->message : mreply);
	g_autofree char *want = vr_metrics_render(domains, &d);
	cr_assert_str_eq(text, want, "the metrics command returns vr_metrics_render()'s text");
}

Test(handle, set_passes_the_settings_in_order)
{
	g_autofree char *reply =
		handle("{'command':'set','domain':'web1','settings':['priority=80','policy=x.y']}");
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_decode_empty_reply(reply, strlen(reply), &err), "%s", reply);
	cr_assert_eq(F.nr_set, 1);
	cr_assert_str_eq(F.last_domain, "web1");
	cr_assert_str_eq(F.last_settings, "priority=80|policy=x.y");
}

struct op_error_case {
	char name[48];
	char line[128];
	int code;
	char want[64];
};

static struct op_error_case op_error_cases[] = {
	{ "set: an unknown domain", "{'command':'set','domain':'db1','settings':['priority=1']}",
	  VR_CONTROL_ERROR_NO_DOMAIN, "domain 'db1' is not known" },
	{ "set: a refused setting", "{'command':'set','domain':'web1','settings':['colour=red']}",
	  VR_CONTROL_ERROR_INVALID_ARGUMENT, "unknown setting 'colour=red'" },
	{ "pause: an unknown domain", "{'command':'pause','domain':'db1'}",
	  VR_CONTROL_ERROR_NO_DOMAIN, "db1" },
};

ParameterizedTestParameters(handle, op_errors_keep_their_class)
{
	return cr_make_param_array(struct op_error_case, op_error_cases,
				   G_N_ELEMENTS(op_error_cases));
}

ParameterizedTest(struct op_error_case *c, handle, op_errors_keep_their_class)
{
	g_autofree char *reply = handle(c->line);
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &err),
		      "%s: expected an error reply, got %s", c->name, reply);
	expect_error(err, c->code, c->want, c->name);
}

Test(handle, pause_and_resume_every_domain)
{
	g_autofree char *r1 = handle("{'command':'pause'}");
	cr_assert_str_eq(r1, "{\"return\":{}}\n");
	cr_assert_str_eq(F.last_domain, "*", "pause without a domain passes NULL");
	cr_assert(F.last_pause);
	g_autofree char *r2 = handle("{'command':'resume','domain':'web1'}");
	cr_assert_str_eq(r2, "{\"return\":{}}\n");
	cr_assert_str_eq(F.last_domain, "web1");
	cr_assert_not(F.last_pause);
}

Test(handle, a_failed_status_is_a_failed_reply)
{
	F.fail_status = TRUE;
	g_autofree char *reply = handle("{'command':'status'}");
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &err));
	expect_error(err, VR_CONTROL_ERROR_FAILED, "libvirt is away", "status");
}

Test(handle, missing_ops_are_failed_replies)
{
	const struct vr_control_ops none = { 0 };
	const char *lines[] = { "{\"command\":\"status\"}",
				"{\"command\":\"set\",\"domain\":\"a\",\"settings\":[\"a=1\"]}",
				"{\"command\":\"pause\"}" };

	for (guint i = 0; i < G_N_ELEMENTS(lines); i++) {
		g_autofree char *reply =
			vr_control_handle_line(&none, NULL, lines[i], strlen(lines[i]));
		g_autoptr(GError) err = NULL;

		cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &err));
		expect_error(err, VR_CONTROL_ERROR_FAILED, "this daemon", lines[i]);
	}
}

/* ------------------------------------------------------------------------- */
/* The server, its main loop pumped by the test                              */
/* ------------------------------------------------------------------------- */

static char *tmp;
static char *sock_path;
static struct vr_control_server *server;

static struct vr_control_rules rules;

static void server_setup(void)
{
	fake_reset();
	tmp = tree_new();
	sock_path = g_build_filename(tmp, "run", "vreclaim", "vreclaimd.sock", NULL);
	vr_control_rules_init(&rules);
}

static void server_teardown(void)
{
	g_clear_pointer(&server, vr_control_server_free);
	/* Sources the server left would fire in the next test's loop. */
	while (g_main_context_iteration(NULL, FALSE))
		;
	tree_rm(tmp);
	g_free(tmp);
	g_free(sock_path);
}

TestSuite(server, .init = server_setup, .fini = server_teardown);

static void start_server(guint mode)
{
	g_autoptr(GError) err = NULL;

	server = vr_control_server_new(sock_path, mode, &rules, &fake_ops, NULL, &err);
	cr_assert_not_null(server, "cannot start the server: %s", err ? err->message : "?");
}

/* Run the main loop for about @ms. */
static void pump_ms(guint ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000;

	while (g_get_monotonic_time() < end)
		if (!g_main_context_iteration(NULL, FALSE))
			g_usleep(1000);
}

/* A non-blocking client socket connected to the server. */
static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	g_strlcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	cr_assert(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect: %s",
		  g_strerror(errno));
	pump_ms(5); /* the server accepts */
	return fd;
}

/* Send all of @len bytes of @buf, letting the server read meanwhile. */
static void send_all(int fd, const char *buf, gsize len)
{
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			cr_assert_lt(g_get_monotonic_time(), end, "the server stopped reading");
			g_main_context_iteration(NULL, FALSE);
			continue;
		}
		cr_assert_gt(n, 0, "send: %s", g_strerror(errno));
		buf += n;
		len -= (gsize)n;
	}
}

/* The next reply line on @fd, or NULL when the server closed it; 5 s at most. */
static char *read_line(int fd)
{
	GString *in = g_string_new(NULL);
	gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

	while (!strchr(in->str, '\n')) {
		char c;
		ssize_t n = recv(fd, &c, 1, 0);

		if (n == 0) {
			cr_assert_eq(in->len, 0, "the server closed mid-line: %s", in->str);
			g_string_free(in, TRUE);
			return NULL;
		}
		if (n < 0) {
			cr_assert(errno == EAGAIN, "recv: %s", g_strerror(errno));
			cr_assert_lt(g_get_monotonic_time(), end, "no reply within 5 s");
			if (!g_main_context_iteration(NULL, FALSE))
				g_usleep(500);
			continue;
		}
		g_string_append_c(in, c);
	}
	return g_string_free(in, FALSE);
}

/* Send @line (with ' for ") and return the reply line. */
static char *exchange(int fd, const char *line)
{
	g_autofree char *l = dq(line);

	send_all(fd, l, strlen(l));
	char *reply = read_line(fd);
	cr_assert_not_null(reply, "the server closed instead of answering %s", l);
	return reply;
}

static void expect_status_reply(const char *reply)
{
	g_autoptr(GPtrArray) domains = NULL;
	struct vr_daemon_status d;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_decode_status_reply(reply, strlen(reply), &domains, &d, &err),
		  "expected a status reply: %s (%s)", reply, err ? err->message : "?");
	cr_assert_eq(domains->len, 2);
}

static void expect_error_reply(const char *reply, int code, const char *want)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &err),
		      "expected an error reply: %s", reply);
	expect_error(err, code, want, reply);
}

Test(server, creates_its_folder_and_a_0600_socket)
{
	struct stat st, dir;
	g_autofree char *folder = g_path_get_dirname(sock_path);

	start_server(VR_CONTROL_DEFAULT_MODE);
	cr_assert_eq(lstat(sock_path, &st), 0, "no socket at %s", sock_path);
	cr_assert(S_ISSOCK(st.st_mode), "%s is not a socket", sock_path);
	cr_assert_eq(st.st_mode & 07777, 0600, "expected mode 0600, got %04o", st.st_mode & 07777);
	cr_assert_eq(stat(folder, &dir), 0);
	cr_assert_eq(dir.st_mode & 07777, 0755, "expected the folder 0755, got %04o",
		     dir.st_mode & 07777);
	g_clear_pointer(&server, vr_control_server_free);
	cr_assert_not(g_file_test(sock_path, G_FILE_TEST_EXISTS), "the socket stays behind");
}

Test(server, takes_the_mode_it_is_given)
{
	struct stat st;

	start_server(0660);
	cr_assert_eq(lstat(sock_path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0660, "expected mode 0660, got %04o", st.st_mode & 07777);
}

Test(server, refuses_a_bad_mode_or_path)
{
	g_autoptr(GError) err = NULL;

	cr_assert_null(vr_control_server_new(sock_path, 01777, NULL, &fake_ops, NULL, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "control socket;mode;1777", "mode");
	g_clear_error(&err);
	g_autofree char *name = g_strnfill(120, 's');
	g_autofree char *long_path = g_build_filename(tmp, name, NULL);
	cr_assert_null(vr_control_server_new(long_path, 0600, NULL, &fake_ops, NULL, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "longer than 107", "long path");
}

Test(server, replaces_a_stale_socket_but_not_a_live_one_or_a_file)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_autofree char *folder = g_path_get_dirname(sock_path);
	g_autoptr(GError) err = NULL;

	/* A socket file nobody listens on: what a daemon that died leaves. */
	cr_assert_eq(g_mkdir_with_parents(folder, 0755), 0);
	g_strlcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	int stale = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(stale);
	start_server(0600);

	/* A second server on the same path finds the first listening. */
	cr_assert_null(vr_control_server_new(sock_path, 0600, NULL, &fake_ops, NULL, &err));
	expect_error(err, VR_CONTROL_ERROR_FAILED, "another process listens;running already",
		     "live socket");
	cr_assert(g_file_test(sock_path, G_FILE_TEST_EXISTS), "the live socket was removed");
	g_clear_error(&err);
	int fd = raw_connect();
	g_autofree char *reply = exchange(fd, "{'command':'status'}\n");
	expect_status_reply(reply);
	close(fd);

	/* A file of another kind is not ours to remove. */
	g_clear_pointer(&server, vr_control_server_free);
	cr_assert(g_file_set_contents(sock_path, "keep me", -1, NULL));
	cr_assert_null(vr_control_server_new(sock_path, 0600, NULL, &fake_ops, NULL, &err));
	expect_error(err, VR_CONTROL_ERROR_FAILED, "is not a socket", "a file");
	tree_expect(tmp, "run/vreclaim/vreclaimd.sock", "keep me");
}

Test(server, answers_garbage_and_goes_on)
{
	start_server(0600);
	int fd = raw_connect();
	g_autofree char *r1 = exchange(fd, "garbage\n");
	expect_error_reply(r1, VR_CONTROL_ERROR_INVALID_ARGUMENT, "not JSON");
	g_autofree char *r2 = exchange(fd, "{'command':'status','domain':'web1'}\n");
	expect_error_reply(r2, VR_CONTROL_ERROR_INVALID_ARGUMENT, "domain: unknown member");
	/* Binary junk with a NUL. */
	send_all(fd, "\x01\x00\xff\n", 4);
	g_autofree char *r3 = read_line(fd);
	expect_error_reply(r3, VR_CONTROL_ERROR_INVALID_ARGUMENT, "NUL");
	g_autofree char *r4 = exchange(fd, "{'command':'status'}\n");
	expect_status_reply(r4);
	/* Blank lines are skipped; two requests in one write get two replies, in order. */
	g_autofree char *r5 = exchange(fd, "\n\n{'command':'pause'}\n{'command':'status'}\n");
	cr_assert_str_eq(r5, "{\"return\":{}}\n");
	g_autofree char *r6 = read_line(fd);
	expect_status_reply(r6);
	close(fd);
}

Test(server, answers_an_oversized_line_and_goes_on)
{
	start_server(0600);
	int fd = raw_connect();
	gsize n = VR_CONTROL_MAX_REQUEST_BYTES * 3;
	g_autofree char *big = g_malloc(n);

	memset(big, 'x', n - 1);
	big[n - 1] = '\n';
	send_all(fd, big, n);
	g_autofree char *r1 = read_line(fd);
	expect_error_reply(r1, VR_CONTROL_ERROR_INVALID_ARGUMENT, "longer than 65536");
	g_autofree char *r2 = exchange(fd, "{'command':'status'}\n");
	expect_status_reply(r2);
	close(fd);
}

Test(server, serves_two_clients_at_once)
{
	start_server(0600);
	int a = raw_connect();
	int b = raw_connect();

	/* A sends half a request; B is served meanwhile; then A is. */
	send_all(a, "{\"command\":", 11);
	pump_ms(20);
	g_autofree char *rb = exchange(b, "{'command':'resume','domain':'web1'}\n");
	cr_assert_str_eq(rb, "{\"return\":{}}\n");
	g_autofree char *ra = exchange(a, "'status'}\n");
	expect_status_reply(ra);
	cr_assert_eq(vr_control_server_nr_clients(server), 2);
	close(a);
	close(b);
}

Test(server, a_client_that_vanishes_mid_line_disturbs_nobody)
{
	start_server(0600);
	int a = raw_connect();
	int b = raw_connect();

	send_all(a, "{\"command\":\"pause\",\"dom", 23);
	pump_ms(10);
	close(a);
	pump_ms(20);
	cr_assert_eq(F.nr_pause, 0, "half a request was served");
	cr_assert_eq(vr_control_server_nr_clients(server), 1, "the vanished client is not closed");
	g_autofree char *rb = exchange(b, "{'command':'status'}\n");
	expect_status_reply(rb);
	/* One that vanishes before reading its reply, too. */
	int c = raw_connect();
	send_all(c, "{\"command\":\"status\"}\n", 21);
	close(c);
	pump_ms(20);
	cr_assert_eq(vr_control_server_nr_clients(server), 1);
	g_autofree char *rb2 = exchange(b, "{'command':'status'}\n");
	expect_status_reply(rb2);
	close(b);
	pump_ms(20);
	cr_assert_eq(vr_control_server_nr_clients(server), 0);
}

Test(server, a_client_that_half_closes_gets_its_replies)
{
	start_server(0600);
	int fd = raw_connect();

	send_all(fd, "{\"command\":\"status\"}\n{\"command\":\"pause\"}\n", 42);
	shutdown(fd, SHUT_WR);
	g_autofree char *r1 = read_line(fd);
	expect_status_reply(r1);
	g_autofree char *r2 = read_line(fd);
	cr_assert_str_eq(r2, "{\"return\":{}}\n");
	g_autofree char *end = read_line(fd);
	cr_assert_null(end, "expected the server to close after the last reply");
	close(fd);
}

/* ---- set answered later (set_async) ---- */

/* The calls set_async left open, in order, with their domains. */
static GPtrArray *open_calls;
static GPtrArray *open_domains;

static void fake_set_async(gpointer user, const char *domain, const char *const *settings,
			   struct vr_control_call *call)
{
	(void)user;
	(void)settings;
	if (!strcmp(domain, "now")) { /* answered from within: allowed too */
		vr_control_call_finish(call, NULL);
		return;
	}
	g_ptr_array_add(open_calls, call);
	g_ptr_array_add(open_domains, g_strdup(domain));
}

static const struct vr_control_ops async_ops = {
	.status = fake_status,
	.set = fake_set,
	.pause = fake_pause,
	.set_async = fake_set_async,
};

static void start_async_server(void)
{
	g_autoptr(GError) err = NULL;

	open_calls = g_ptr_array_new();
	open_domains = g_ptr_array_new_with_free_func(g_free);
	server = vr_control_server_new(sock_path, 0600, &rules, &async_ops, NULL, &err);
	cr_assert_not_null(server, "cannot start the server: %s", err ? err->message : "?");
}

/* Whether @fd has a byte to read now. */
static gboolean readable(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_PEEK) > 0;
}

Test(server, a_set_answered_later_holds_only_its_own_client)
{
	start_async_server();
	int a = raw_connect();
	int b = raw_connect();

	/* A's set waits for the daemon; its next request waits behind it. */
	g_autofree char *set = dq("{'command':'set','domain':'web1','settings':['priority=80']}\n"
				  "{'command':'pause','domain':'web1'}\n");
	send_all(a, set, strlen(set));
	pump_ms(20);
	cr_assert_eq(open_calls->len, 1, "expected the set handed to set_async");
	cr_assert_str_eq(g_ptr_array_index(open_domains, 0), "web1");
	cr_assert_eq(F.nr_set, 0, "the synchronous set must not be called");
	cr_assert_not(readable(a), "A got a reply before its set was answered");
	cr_assert_eq(F.nr_pause, 0, "A's next request ran before its set was answered");

	/* B is served meanwhile, a set answered at once too. */
	g_autofree char *rb = exchange(b, "{'command':'status'}\n");
	expect_status_reply(rb);
	g_autofree char *rb2 =
		exchange(b, "{'command':'set','domain':'now','settings':['priority=1']}\n");
	cr_assert_str_eq(rb2, "{\"return\":{}}\n");

	/* The daemon answers A's set with an error: A gets it, then its pause. */
	g_autoptr(GError) late = g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
					     "libvirt did not answer set-metadata within 5 s");
	vr_control_call_finish(g_ptr_array_index(open_calls, 0), late);
	g_autofree char *ra = read_line(a);
	expect_error_reply(ra, VR_CONTROL_ERROR_FAILED, "set-metadata within 5 s");
	g_autofree char *ra2 = read_line(a);
	cr_assert_str_eq(ra2, "{\"return\":{}}\n");
	cr_assert_eq(F.nr_pause, 1);
	close(a);
	close(b);
	g_ptr_array_unref(open_calls);
	g_ptr_array_unref(open_domains);
}

Test(server, a_set_answered_after_its_client_left_goes_nowhere)
{
	start_async_server();
	int a = raw_connect();

	g_autofree char *set = dq("{'command':'set','domain':'web1','settings':['priority=80']}\n");
	send_all(a, set, strlen(set));
	shutdown(a, SHUT_WR); /* a half-close keeps the client until answered */
	pump_ms(20);
	cr_assert_eq(open_calls->len, 1);
	cr_assert_eq(vr_control_server_nr_clients(server), 1);
	vr_control_call_finish(g_ptr_array_index(open_calls, 0), NULL);
	g_autofree char *ra = read_line(a);
	cr_assert_str_eq(ra, "{\"return\":{}}\n");
	g_autofree char *end = read_line(a);
	cr_assert_null(end, "expected the server to close after the last reply");
	close(a);

	/* One that leaves for good before its answer. */
	int c = raw_connect();
	send_all(c, set, strlen(set));
	pump_ms(20);
	cr_assert_eq(open_calls->len, 2);
	close(c);
	pump_ms(20);
	/* Not read while its answer is due: it is closed when the answer
	 * cannot be written. */
	cr_assert_eq(vr_control_server_nr_clients(server), 1);
	vr_control_call_finish(g_ptr_array_index(open_calls, 1), NULL);
	pump_ms(20);
	cr_assert_eq(vr_control_server_nr_clients(server), 0);
	g_ptr_array_unref(open_calls);
	g_ptr_array_unref(open_domains);
}

Test(server, refuses_clients_beyond_its_limit)
{
	int fds[VR_CONTROL_MAX_CLIENTS];

	rules.max_clients_per_user = VR_CONTROL_MAX_CLIENTS;
	start_server(0600);
	for (int i = 0; i < VR_CONTROL_MAX_CLIENTS; i++)
		fds[i] = raw_connect();
	int extra = raw_connect();
	g_autofree char *refusal = read_line(extra);
	cr_assert_not_null(refusal, "the extra client got nothing");
	expect_error_reply(refusal, VR_CONTROL_ERROR_FAILED, "at most 16 clients");
	g_autofree char *end = read_line(extra);
	cr_assert_null(end, "the extra client is closed");
	close(extra);
	g_autofree char *ok = exchange(fds[0], "{'command':'status'}\n");
	expect_status_reply(ok);
	for (int i = 0; i < VR_CONTROL_MAX_CLIENTS; i++)
		close(fds[i]);
}

/* ------------------------------------------------------------------------- */
/* Roles, the idle timeout, clients per user                                 */
/* ------------------------------------------------------------------------- */

/* The user and group a root test's other client becomes. */
#define OTHER_ID 4242u
/* A supplementary group of that client, when a test gives it one. */
#define OTHER_GROUP 4343u

/* The uid of connect_other()'s clients. */
static uint32_t other_uid(void)
{
	return getuid() == 0 ? OTHER_ID : (uint32_t)getuid();
}

/* Rules in which other_uid() is nobody special: the owner is someone else. */
static void rules_for_other(void)
{
	vr_control_rules_init(&rules);
	rules.owner_uid = getuid() == 0 ? 0 : (uint32_t)getuid() + 1;
}

/* Start the server so that connect_other()'s clients can reach it. */
static void start_server_for_other(void)
{
	/* As root the client is OTHER_ID: it must write the socket (it reaches
	 * it from inside its folder); the rules, not the mode, are under test. */
	start_server(getuid() == 0 ? 0666 : 0600);
}

/* Receive the descriptor the child sends on @sock. */
static int recv_fd(int sock)
{
	char byte;
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	struct cmsghdr *cmsg;
	int fd;

	cr_assert_eq(recvmsg(sock, &msg, 0), 1, "the child sent no socket: %s", g_strerror(errno));
	cmsg = CMSG_FIRSTHDR(&msg);
	cr_assert(cmsg && cmsg->cmsg_type == SCM_RIGHTS, "the child sent no descriptor");
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
	return fd;
}

/* In the child: go into the socket's folder @dir (the folders above may be
 * closed to OTHER_ID), drop to OTHER_ID with @groups, connect to @base,
 * send the socket on @sock. Only async-signal-safe calls; exits. */
static void G_GNUC_NORETURN child_connect(int sock, const char *dir, const char *base,
					  const gid_t *groups, size_t nr_groups)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char byte = 'x';
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)
	};
	struct cmsghdr *cmsg;
	int fd;

	if (chdir(dir) < 0 || setgroups(nr_groups, groups) < 0 || setgid(OTHER_ID) < 0 ||
	    setuid(OTHER_ID) < 0)
		_exit(1);
	memcpy(sa.sun_path, base, strlen(base) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		_exit(2);
	memset(ctl, 0, sizeof(ctl));
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(fd));
	_exit(sendmsg(sock, &msg, 0) == 1 ? 0 : 3);
}

/* A non-blocking client socket of other_uid(), with @group as its one
 * supplementary group when @group is not 0 (root only: skips otherwise). */
static int connect_other(uint32_t group)
{
	const gid_t groups[1] = { group };
	g_autofree char *dir = g_path_get_dirname(sock_path);
	g_autofree char *base = g_path_get_basename(sock_path);
	int sv[2], status = 0, fd;
	pid_t pid;

	if (getuid() != 0) {
		if (group)
			cr_skip_test("a client with a supplementary group needs root (setgroups)");
		return raw_connect();
	}
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", g_strerror(errno));
	if (pid == 0)
		child_connect(sv[1], dir, base, groups, group ? 1 : 0);
	close(sv[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child could not connect as uid %u (status %d)", OTHER_ID, status);
	fd = recv_fd(sv[0]);
	close(sv[0]);
	cr_assert_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	pump_ms(5); /* the server accepts */
	return fd;
}

static void ids_set(struct vr_control_ids *ids, uint32_t id)
{
	ids->nr = 1;
	ids->id[0] = id;
}

/* Each row: a peer, the rules' lists (0: empty), the role it gets. */
struct role_case {
	char name[48];
	uint32_t uid, gid, group; /* group: its one supplementary group, 0 none */
	uint32_t admin_user, admin_group, ro_user, ro_group;
	int role;
};

static struct role_case role_cases[] = {
	{ "root", 0, 0, 0, 0, 0, 0, 0, VR_CONTROL_ROLE_ADMIN },
	{ "the owner", 500, 500, 0, 0, 0, 0, 0, VR_CONTROL_ROLE_ADMIN },
	{ "nobody listed", 1000, 1000, 0, 0, 0, 0, 0, VR_CONTROL_ROLE_NONE },
	{ "an admin user", 1000, 1000, 0, 1000, 0, 0, 0, VR_CONTROL_ROLE_ADMIN },
	{ "an admin group (primary)", 1000, 77, 0, 0, 77, 0, 0, VR_CONTROL_ROLE_ADMIN },
	{ "an admin group (supplementary)", 1000, 1000, 77, 0, 77, 0, 0, VR_CONTROL_ROLE_ADMIN },
	{ "a read-only user", 1000, 1000, 0, 0, 0, 1000, 0, VR_CONTROL_ROLE_READ_ONLY },
	{ "a read-only group", 1000, 1000, 88, 0, 0, 0, 88, VR_CONTROL_ROLE_READ_ONLY },
	{ "read-only and admin: admin", 1000, 1000, 88, 0, 88, 1000, 0, VR_CONTROL_ROLE_ADMIN },
	{ "another user listed", 1000, 1000, 0, 1001, 1002, 1003, 1004, VR_CONTROL_ROLE_NONE },
};

ParameterizedTestParameters(roles, from_the_credentials)
{
	return cr_make_param_array(struct role_case, role_cases, G_N_ELEMENTS(role_cases));
}

ParameterizedTest(struct role_case *c, roles, from_the_credentials)
{
	struct vr_control_rules r;
	const uint32_t groups[1] = { c->group };
	const struct vr_control_peer peer = {
		.pid = 1,
		.uid = c->uid,
		.gid = c->gid,
		.groups = groups,
		.nr_groups = c->group ? 1 : 0,
	};

	vr_control_rules_init(&r);
	r.owner_uid = 500;
	if (c->admin_user)
		ids_set(&r.admin_users, c->admin_user);
	if (c->admin_group)
		ids_set(&r.admin_groups, c->admin_group);
	if (c->ro_user)
		ids_set(&r.read_only_users, c->ro_user);
	if (c->ro_group)
		ids_set(&r.read_only_groups, c->ro_group);
	cr_assert_eq(vr_control_role_of(&r, &peer), c->role, "%s: expected the role %s, got %s",
		     c->name, vr_control_role_name((enum vr_control_role)c->role),
		     vr_control_role_name(vr_control_role_of(&r, &peer)));
}

Test(roles, commands_that_need_admin)
{
	cr_assert(vr_control_command_needs_admin(VR_CONTROL_SET));
	cr_assert(vr_control_command_needs_admin(VR_CONTROL_PAUSE));
	cr_assert(vr_control_command_needs_admin(VR_CONTROL_RESUME));
	cr_assert_not(vr_control_command_needs_admin(VR_CONTROL_STATUS));
	cr_assert_not(vr_control_command_needs_admin(VR_CONTROL_METRICS));
}

static char *handle_as(enum vr_control_role role, const char *line)
{
	g_autofree char *l = dq(line);

	return vr_control_handle_line_as(&fake_ops, NULL, role, l, strlen(l));
}

Test(handle, a_read_only_client_is_served_queries_and_refused_the_rest)
{
	const char *const refused[] = {
		"{'command':'set','domain':'web1','settings':['priority=1']}",
		"{'command':'pause'}",
		"{'command':'resume','domain':'web1'}",
	};
	const char *const names[] = { "set", "pause", "resume" };

	g_autofree char *status = handle_as(VR_CONTROL_ROLE_READ_ONLY, "{'command':'status'}");
	cr_assert(g_str_has_prefix(status, "{\"return\":{\"daemon\""), "status: %s", status);
	g_autofree char *metrics = handle_as(VR_CONTROL_ROLE_READ_ONLY, "{'command':'metrics'}");
	cr_assert(g_str_has_prefix(metrics, "{\"return\":{\"text\""), "metrics: %s", metrics);
	for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
		g_autofree char *reply = handle_as(VR_CONTROL_ROLE_READ_ONLY, refused[i]);
		g_autofree char *want =
			g_strdup_printf("permission denied: %s needs the admin role", names[i]);
		g_autoptr(GError) err = NULL;

		cr_assert_not(vr_control_decode_empty_reply(reply, strlen(reply), &err));
		expect_error(err, VR_CONTROL_ERROR_PERMISSION_DENIED, want, names[i]);
	}
	cr_assert_eq(F.nr_set + F.nr_pause, 0, "a refused command reached the daemon");
	/* No role: nothing at all. */
	g_autofree char *none = handle_as(VR_CONTROL_ROLE_NONE, "{'command':'status'}");
	g_autoptr(GError) err = NULL;
	cr_assert_not(vr_control_decode_empty_reply(none, strlen(none), &err));
	expect_error(err, VR_CONTROL_ERROR_PERMISSION_DENIED, "permission denied;has none",
		     "no role");
}

Test(server, refuses_a_user_with_no_role)
{
	rules_for_other();
	start_server_for_other();
	int fd = connect_other(0);
	g_autofree char *refusal = read_line(fd);
	g_autofree char *uid = g_strdup_printf("uid %u has no role", other_uid());

	cr_assert_not_null(refusal, "the refused client got nothing");
	expect_error_reply(refusal, VR_CONTROL_ERROR_PERMISSION_DENIED, uid);
	g_autofree char *end = read_line(fd);
	cr_assert_null(end, "the refused client is closed");
	cr_assert_eq(vr_control_server_nr_clients(server), 0);
	close(fd);
	/* The owner is served meanwhile (as root: root). */
	if (getuid() == 0) {
		int own = raw_connect();
		g_autofree char *ok = exchange(own, "{'command':'status'}\n");
		expect_status_reply(ok);
		close(own);
	}
}

Test(server, serves_a_read_only_user_its_queries_only)
{
	rules_for_other();
	ids_set(&rules.read_only_users, other_uid());
	start_server_for_other();
	int fd = connect_other(0);

	g_autofree char *r1 = exchange(fd, "{'command':'status'}\n");
	expect_status_reply(r1);
	g_autofree char *r2 =
		exchange(fd, "{'command':'set','domain':'web1','settings':['priority=1']}\n");
	expect_error_reply(r2, VR_CONTROL_ERROR_PERMISSION_DENIED,
			   "permission denied: set needs the admin role");
	g_autofree char *r3 = exchange(fd, "{'command':'pause','domain':'web1'}\n");
	expect_error_reply(r3, VR_CONTROL_ERROR_PERMISSION_DENIED,
			   "permission denied: pause needs the admin role");
	cr_assert_eq(F.nr_set + F.nr_pause, 0, "a refused command reached the daemon");

	/* Rules changed (a reload): the role is checked again per request. */
	struct vr_control_rules admin = rules;
	ids_set(&admin.admin_users, other_uid());
	cr_assert(vr_control_server_set_rules(server, &admin, NULL));
	g_autofree char *r4 = exchange(fd, "{'command':'pause','domain':'web1'}\n");
	cr_assert_str_eq(r4, "{\"return\":{}}\n");
	struct vr_control_rules nobody = rules;
	nobody.read_only_users.nr = 0;
	cr_assert(vr_control_server_set_rules(server, &nobody, NULL));
	g_autofree char *r5 = exchange(fd, "{'command':'status'}\n");
	expect_error_reply(r5, VR_CONTROL_ERROR_PERMISSION_DENIED, "permission denied");
	close(fd);
}

Test(server, roles_by_supplementary_group)
{
	rules_for_other();
	ids_set(&rules.read_only_groups, OTHER_GROUP);
	start_server_for_other();
	int fd = connect_other(OTHER_GROUP);

	g_autofree char *r1 = exchange(fd, "{'command':'status'}\n");
	expect_status_reply(r1);
	g_autofree char *r2 = exchange(fd, "{'command':'pause'}\n");
	expect_error_reply(r2, VR_CONTROL_ERROR_PERMISSION_DENIED, "pause needs the admin role");
	close(fd);

	struct vr_control_rules admin = rules;
	admin.read_only_groups.nr = 0;
	ids_set(&admin.admin_groups, OTHER_GROUP);
	cr_assert(vr_control_server_set_rules(server, &admin, NULL));
	int fd2 = connect_other(OTHER_GROUP);
	g_autofree char *r3 = exchange(fd2, "{'command':'pause'}\n");
	cr_assert_str_eq(r3, "{\"return\":{}}\n");
	close(fd2);
	/* Without the group: refused. */
	int fd3 = connect_other(0);
	g_autofree char *r4 = read_line(fd3);
	cr_assert_not_null(r4);
	expect_error_reply(r4, VR_CONTROL_ERROR_PERMISSION_DENIED, "has no role");
	close(fd3);
}

Test(server, closes_idle_clients_and_serves_the_next)
{
	int fds[VR_CONTROL_MAX_CLIENTS];

	rules.idle_timeout_ms = 200;
	rules.max_clients_per_user = VR_CONTROL_MAX_CLIENTS;
	start_server(0600);
	/* Idle clients hold every slot: the next one is refused... */
	for (int i = 0; i < VR_CONTROL_MAX_CLIENTS; i++)
		fds[i] = raw_connect();
	int extra = raw_connect();
	g_autofree char *busy = read_line(extra);
	cr_assert_not_null(busy);
	expect_error_reply(busy, VR_CONTROL_ERROR_FAILED, "at most 16 clients");
	close(extra);

	/* ... until their timeout; one that keeps asking stays. */
	for (int i = 0; i < 5; i++) {
		g_autofree char *ok = exchange(fds[0], "{'command':'status'}\n");
		expect_status_reply(ok);
		pump_ms(80);
	}
	cr_assert_eq(vr_control_server_nr_clients(server), 1,
		     "expected only the busy client left after 400 ms, got %u clients",
		     vr_control_server_nr_clients(server));
	g_autofree char *why = read_line(fds[1]);
	cr_assert_not_null(why, "the idle client was closed without a word");
	expect_error_reply(why, VR_CONTROL_ERROR_FAILED, "idle for 200 ms");
	g_autofree char *end = read_line(fds[1]);
	cr_assert_null(end, "the idle client is closed");

	/* A new client is served. */
	int next = raw_connect();
	g_autofree char *ok = exchange(next, "{'command':'status'}\n");
	expect_status_reply(ok);
	close(next);

	/* Silence closes the busy one too. */
	pump_ms(300);
	cr_assert_eq(vr_control_server_nr_clients(server), 0, "%u idle clients left open",
		     vr_control_server_nr_clients(server));
	for (int i = 0; i < VR_CONTROL_MAX_CLIENTS; i++)
		close(fds[i]);
}

Test(server, limits_the_clients_of_one_user)
{
	int fds[VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER];

	start_server(0600);
	for (guint i = 0; i < VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER; i++)
		fds[i] = raw_connect();
	int extra = raw_connect();
	g_autofree char *refusal = read_line(extra);
	cr_assert_not_null(refusal, "the extra client of the same user got nothing");
	expect_error_reply(refusal, VR_CONTROL_ERROR_FAILED, "at most 4 clients of one user");
	close(extra);
	close(fds[0]);
	pump_ms(20);
	int again = raw_connect();
	g_autofree char *ok = exchange(again, "{'command':'status'}\n");
	expect_status_reply(ok);
	close(again);
	for (guint i = 1; i < VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER; i++)
		close(fds[i]);
}

Test(server, refuses_rules_out_of_range)
{
	g_autoptr(GError) err = NULL;

	rules.idle_timeout_ms = 0;
	cr_assert_null(vr_control_server_new(sock_path, 0600, &rules, &fake_ops, NULL, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "idle timeout", "idle 0");
	g_clear_error(&err);
	vr_control_rules_init(&rules);
	start_server(0600);
	struct vr_control_rules bad = rules;
	bad.max_clients_per_user = VR_CONTROL_MAX_CLIENTS + 1;
	cr_assert_not(vr_control_server_set_rules(server, &bad, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "clients per user", "17 per user");
}

/* ------------------------------------------------------------------------- */
/* The blocking client, the server's loop in a thread                        */
/* ------------------------------------------------------------------------- */

static GMainLoop *loop;
static GThread *loop_thread;

static gpointer run_loop(gpointer data)
{
	(void)data;
	g_main_loop_run(loop);
	return NULL;
}

static void client_setup(void)
{
	server_setup();
	start_server(0600);
	loop = g_main_loop_new(NULL, FALSE);
	loop_thread = g_thread_new("server", run_loop, NULL);
}

/* Through the loop's own context: a quit sent before the thread entered
 * g_main_loop_run() would be lost (run sets the loop running again) and the
 * join would wait for ever; an idle source quits it whenever it runs. */
static gboolean quit_loop(gpointer data)
{
	g_main_loop_quit(data);
	return G_SOURCE_REMOVE;
}

static void client_teardown(void)
{
	g_idle_add(quit_loop, loop);
	g_thread_join(loop_thread);
	g_main_loop_unref(loop);
	server_teardown();
}

TestSuite(client, .init = client_setup, .fini = client_teardown);

static struct vr_control_client *client_connect(void)
{
	g_autoptr(GError) err = NULL;
	struct vr_control_client *c = vr_control_client_connect(sock_path, &err);

	cr_assert_not_null(c, "connect: %s", err ? err->message : "?");
	return c;
}

Test(client, reads_the_status_and_the_metrics)
{
	g_autoptr(vr_control_client) c = client_connect();
	g_autoptr(GPtrArray) domains = NULL;
	g_autofree char *raw = NULL;
	struct vr_daemon_status d;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_client_status(c, 5000, &domains, &d, &raw, &err), "%s",
		  err ? err->message : "?");
	cr_assert_eq(domains->len, 2);
	cr_assert_str_eq(d.libvirt_uri, "qemu:///system");
	cr_assert(g_str_has_prefix(raw, "{\"return\":{\"daemon\":"), "raw: %s", raw);
	g_autofree char *text = vr_control_client_metrics(c, 5000, &err);
	cr_assert_not_null(text, "%s", err ? err->message : "?");
	cr_assert(strstr(text, "vreclaim_domain_rss_bytes{domain=\"web1\"} 1610612736\n"),
		  "metrics: %s", text);
}

Test(client, set_and_pause_report_the_daemon_errors)
{
	g_autoptr(vr_control_client) c = client_connect();
	const char *const good[] = { "priority=80", NULL };
	const char *const bad[] = { "colour=red", NULL };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_control_client_set(c, "web1", good, 5000, &err), "%s",
		  err ? err->message : "?");
	cr_assert_not(vr_control_client_set(c, "db1", good, 5000, &err));
	expect_error(err, VR_CONTROL_ERROR_NO_DOMAIN, "db1", "unknown domain");
	g_clear_error(&err);
	cr_assert_not(vr_control_client_set(c, "web1", bad, 5000, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "colour=red", "bad setting");
	g_clear_error(&err);
	cr_assert(vr_control_client_pause(c, NULL, TRUE, 5000, &err));
	cr_assert(vr_control_client_pause(c, "web1", FALSE, 5000, &err));
	g_mutex_lock(&F.lock);
	cr_assert_eq(F.nr_pause, 2);
	cr_assert_str_eq(F.last_domain, "web1");
	g_mutex_unlock(&F.lock);
	/* The client refuses to send what the server would refuse. */
	const char *const malformed[] = { "priority", NULL };
	cr_assert_not(vr_control_client_set(c, "web1", malformed, 5000, &err));
	expect_error(err, VR_CONTROL_ERROR_INVALID_ARGUMENT, "not KEY=VALUE", "malformed");
	g_mutex_lock(&F.lock);
	cr_assert_eq(F.nr_set, 3, "the malformed set was sent");
	g_mutex_unlock(&F.lock);
}

Test(client, names_the_socket_it_cannot_reach)
{
	g_autofree char *missing = g_build_filename(tmp, "nobody.sock", NULL);
	g_autoptr(GError) err = NULL;

	cr_assert_null(vr_control_client_connect(missing, &err));
	cr_assert(g_error_matches(err, VR_CONTROL_CLIENT_ERROR, VR_CONTROL_CLIENT_ERROR_CONNECT));
	g_autofree char *want = g_strdup_printf("failed to connect to vreclaimd at '%s': %s",
						missing, g_strerror(ENOENT));
	cr_assert_str_eq(err->message, want);
}
