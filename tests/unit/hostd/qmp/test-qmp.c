/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the QMP client (hostd/qmp/qmp.c) and the QEMU monitor transports
 * (hostd/qmp/qemu-monitor.c, hostd/libvirt/qemu-passthrough.c), against a fake QMP server: a thread on a unix
 * socket in a temporary folder that plays a script per test (accept, send
 * lines, expect commands, sleep, close), over tests/lib/fake-qmp.h's socket,
 * framing and greeting; the scripts and their faults are this file's. Covered: greeting and
 * capabilities; a plain reply; an error reply; events before the reply
 * (queued in order, bounded); a reply with a foreign id; a slow reply
 * (TIMEOUT, then CLOSED); garbage, a non-object, an oversized line, a bad
 * greeting, a refused qmp_capabilities, a server closing mid-line; the
 * monitor's reconnects; the libvirt transport on libvirt's test driver
 * (which has no QEMU monitor).
 *
 * Script lines write ' for " (dq() swaps them back), so they read like
 * JSON; "%ID%" in a line sent is replaced by the id of the last command
 * received. Criterion runs every test in its own process: parameter structs
 * hold no pointers.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <unistd.h>

#include "fake-qmp.h"
#include "libvirt/qemu-passthrough.h"
#include "qmp/qemu-monitor.h"
#include "qmp/qmp.h"
#include "test-messages.h"
#include "test-quotes.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* How long the fake server waits for the client, ms: far beyond any test. */
#define FAKE_WAIT_MS 5000

#define RETURN_EMPTY "{'return': {}, 'id': %ID%}\n"

/**
 * enum step_kind - what the fake server does next.
 * @STEP_ACCEPT:   take the next connection (closing the current one).
 * @STEP_SEND:	   send @text (after dq() and %ID%).
 * @STEP_RECV:	   read one line: a command whose "execute" is @text.
 * @STEP_SLEEP:	   wait @ms.
 * @STEP_CLOSE:	   close the current connection.
 * @STEP_UNLISTEN: close the listening socket and remove its file.
 * @STEP_SEND_HUGE: send a reply line longer than VR_QMP_MAX_LINE_BYTES.
 * @STEP_END:	   the end of the script.
 */
enum step_kind {
	STEP_ACCEPT,
	STEP_SEND,
	STEP_RECV,
	STEP_SLEEP,
	STEP_CLOSE,
	STEP_UNLISTEN,
	STEP_SEND_HUGE,
	STEP_END,
};

struct step {
	enum step_kind kind;
	const char *text;
	guint ms;
};

#define HANDSHAKE                                                                                  \
	{ STEP_ACCEPT }, { STEP_SEND, FAKE_QMP_GREETING }, { STEP_RECV, "qmp_capabilities" },      \
	{                                                                                          \
		STEP_SEND, RETURN_EMPTY                                                            \
	}

/**
 * struct scripted_qmp - the fake server of one test.
 * @sock:	 its temporary folder, socket path and listening socket.
 * @fd:		 the current connection.
 * @in:		 bytes received and not yet taken as lines.
 * @script:	 the steps; @progress counts those done.
 * @last_id:	 the "id" of the last command received, as JSON text.
 * @received:	 every command line received (char *).
 * @failure:	 what went wrong on the server's side, or NULL.
 */
struct scripted_qmp {
	struct fake_qmp_socket sock;
	int fd;
	GString *in;
	const struct step *script;
	GThread *thread;
	gint progress;
	char *last_id;
	GPtrArray *received;
	GMutex lock;
	char *failure;
};

static struct scripted_qmp fake;

static gboolean fake_fail(const char *what)
{
	g_mutex_lock(&fake.lock);
	if (!fake.failure)
		fake.failure = g_strdup(what);
	g_mutex_unlock(&fake.lock);
	return FALSE;
}

static gboolean fake_send_all(const char *buf, gsize len)
{
	return fake_qmp_send_all(fake.fd, buf, len, FAKE_WAIT_MS);
}

static gboolean fake_recv(const char *command)
{
	struct fake_qmp_command cmd;
	g_autofree char *line = NULL;
	gboolean ok;

	switch (fake_qmp_read_line(fake.fd, fake.in, FAKE_WAIT_MS, &line)) {
	case FAKE_QMP_READ_TIMEOUT:
		return fake_fail("no command came");
	case FAKE_QMP_READ_CLOSED:
		return fake_fail("the client closed before sending a command");
	case FAKE_QMP_READ_LINE:
		break;
	}
	ok = fake_qmp_command_parse(&cmd, line) && !strcmp(cmd.execute, command);
	if (ok) {
		g_mutex_lock(&fake.lock);
		g_free(fake.last_id);
		fake.last_id = g_strdup(cmd.id ? json_object_to_json_string(cmd.id) : "null");
		g_ptr_array_add(fake.received, g_steal_pointer(&line));
		g_mutex_unlock(&fake.lock);
	}
	fake_qmp_command_clear(&cmd);
	return ok || fake_fail(line);
}

static gboolean fake_step(const struct step *s)
{
	switch (s->kind) {
	case STEP_ACCEPT:
		if (fake.fd >= 0)
			close(fake.fd);
		g_string_truncate(fake.in, 0);
		fake.fd = fake_qmp_accept(fake.sock.listen_fd, FAKE_WAIT_MS);
		return fake.fd >= 0 || fake_fail("no connection came");
	case STEP_SEND: {
		g_autofree char *text = dq(s->text);
		GString *line = g_string_new(text);
		gboolean ok;

		g_mutex_lock(&fake.lock);
		g_string_replace(line, "%ID%", fake.last_id ? fake.last_id : "null", 0);
		g_mutex_unlock(&fake.lock);
		ok = fake_send_all(line->str, line->len);
		g_string_free(line, TRUE);
		return ok || fake_fail("the client did not take a line");
	}
	case STEP_RECV:
		return fake_recv(s->text);
	case STEP_SLEEP:
		g_usleep((gulong)s->ms * 1000);
		return TRUE;
	case STEP_CLOSE:
		if (fake.fd >= 0)
			close(fake.fd);
		fake.fd = -1;
		return TRUE;
	case STEP_UNLISTEN:
		close(fake.sock.listen_fd);
		fake.sock.listen_fd = -1;
		g_unlink(fake.sock.path);
		return TRUE;
	case STEP_SEND_HUGE: {
		GString *line = g_string_new("{\"return\": \"");
		gsize n = VR_QMP_MAX_LINE_BYTES + 16;

		while (n--)
			g_string_append_c(line, 'x');
		g_string_append(line, "\"}\n");
		/* The client stops reading at the bound: what it leaves is no failure. */
		fake_send_all(line->str, line->len);
		g_string_free(line, TRUE);
		return TRUE;
	}
	case STEP_END:
		break;
	}
	return FALSE;
}

static gpointer fake_run(gpointer data)
{
	(void)data;
	for (const struct step *s = fake.script; s->kind != STEP_END; s++) {
		if (!fake_step(s))
			break;
		g_atomic_int_inc(&fake.progress);
	}
	return NULL;
}

/* Start the fake server on @script. */
static void fake_start(const struct step *script)
{
	fake.script = script;
	fake.thread = g_thread_new("fake-qmp", fake_run, NULL);
}

static guint script_len(const struct step *script)
{
	guint n = 0;

	while (script[n].kind != STEP_END)
		n++;
	return n;
}

/* Wait until the server has done its first @steps steps. */
static void fake_wait_progress(guint steps)
{
	for (int i = 0; i < FAKE_WAIT_MS / 5 && (guint)g_atomic_int_get(&fake.progress) < steps;
	     i++)
		g_usleep(5000);
	cr_assert_geq((guint)g_atomic_int_get(&fake.progress), steps,
		      "the fake server did only %d of its first %u steps (%s)",
		      g_atomic_int_get(&fake.progress), steps,
		      fake.failure ? fake.failure : "no failure");
}

/* Wait for the whole script and check the server saw what it expected. */
static void fake_finish(void)
{
	guint n = script_len(fake.script);

	g_thread_join(g_steal_pointer(&fake.thread));
	cr_assert_null(fake.failure, "the fake server failed: %s", fake.failure);
	cr_assert_eq((guint)g_atomic_int_get(&fake.progress), n,
		     "the fake server did %d of %u steps", g_atomic_int_get(&fake.progress), n);
}

static void fake_setup(void)
{
	g_autoptr(GError) err = NULL;

	memset(&fake, 0, sizeof(fake));
	g_mutex_init(&fake.lock);
	fake.fd = -1;
	fake.in = g_string_new(NULL);
	fake.received = g_ptr_array_new_with_free_func(g_free);
	cr_assert(fake_qmp_socket_open(&fake.sock, "vr-qmp-XXXXXX", &err), "%s",
		  err ? err->message : "?");
}

static void fake_teardown(void)
{
	if (fake.thread)
		g_thread_join(fake.thread);
	if (fake.fd >= 0)
		close(fake.fd);
	fake_qmp_socket_close(&fake.sock);
	g_free(fake.last_id);
	g_free(fake.failure);
	g_ptr_array_unref(fake.received);
	g_string_free(fake.in, TRUE);
	g_mutex_clear(&fake.lock);
}

/* The @i-th command line the server received. */
static const char *received(guint i)
{
	cr_assert_lt(i, fake.received->len, "expected at least %u commands, the server got %u",
		     i + 1, fake.received->len);
	return g_ptr_array_index(fake.received, i);
}

/* Start the fake server on @script and connect to it: the client (owned). */
static struct vr_qmp *start_and_connect(const struct step *script)
{
	g_autoptr(GError) err = NULL;
	struct vr_qmp *qmp;

	fake_start(script);
	qmp = vr_qmp_connect(fake.sock.path, 2000, &err);
	cr_assert_not_null(qmp, "expected to connect, got: %s", err ? err->message : "?");
	return qmp;
}

/* Run all of @script while connecting within @timeout_ms, which must fail:
 * its error (owned). */
static GError *connect_fails(const struct step *script, guint timeout_ms, const char *what)
{
	GError *err = NULL;
	g_autoptr(vr_qmp) qmp = NULL;

	fake_start(script);
	qmp = vr_qmp_connect(fake.sock.path, timeout_ms, &err);
	fake_finish();
	cr_assert_null(qmp, "%s: expected the connection to fail", what);
	return err;
}

/* Start the fake server on @script and a QEMU monitor on it with
 * @timeout_ms: the monitor (owned). */
static struct vr_qemu_monitor *start_monitor(const struct step *script, guint timeout_ms)
{
	g_autoptr(GError) err = NULL;
	struct vr_qemu_monitor *mon;

	fake_start(script);
	mon = vr_qemu_monitor_new_qmp(fake.sock.path, timeout_ms, &err);
	cr_assert_not_null(mon, "%s", err ? err->message : "?");
	return mon;
}

/* An event line: {"event": @name, "timestamp": ..., "data": {"n": @n}}. */
static char *event_line(const char *name, int n)
{
	return g_strdup_printf("{'event': '%s', 'data': {'n': %d}, 'timestamp': {'seconds': "
			       "1764770000, 'microseconds': %d}}\n",
			       name, n, n);
}

/* ---- the client ---- */

TestSuite(qmp, .init = fake_setup, .fini = fake_teardown);

Test(qmp, greeting_then_capabilities)
{
	static const struct step script[] = { HANDSHAKE, { STEP_END } };
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	struct vr_qmp_version v;

	fake_finish();
	v = vr_qmp_get_version(qmp);
	cr_expect(v.major == 7 && v.minor == 2 && v.micro == 22,
		  "expected QEMU 7.2.22 from the greeting, got %u.%u.%u", v.major, v.minor,
		  v.micro);
	cr_expect(strstr(received(0), "\"id\":"), "qmp_capabilities should carry an id: %s",
		  received(0));
	cr_expect_null(strstr(received(0), "arguments"),
		       "qmp_capabilities should enable nothing: %s", received(0));
	cr_expect_not(vr_qmp_is_broken(qmp), "a fresh client is not broken");
	cr_expect_str_eq(vr_qmp_get_path(qmp), fake.sock.path);
}

Test(qmp, plain_reply_with_arguments)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "balloon" },
		{ STEP_SEND, RETURN_EMPTY },
		{ STEP_RECV, "query-status" },
		{ STEP_SEND,
		  "{'return': {'status': 'prelaunch', 'running': false}, 'id': %ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(json_object) args = json_object_new_object();
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;
	json_object *status = NULL;

	json_object_object_add(args, "value", json_object_new_int64(1073741824));
	cr_assert(vr_qmp_execute(qmp, "balloon", args, 2000, NULL, &err), "balloon: %s",
		  err ? err->message : "?");
	cr_assert(vr_qmp_execute(qmp, "query-status", NULL, 2000, &ret, &err), "query-status: %s",
		  err ? err->message : "?");
	fake_finish();
	cr_assert(json_object_object_get_ex(ret, "status", &status),
		  "expected the \"return\" member, got %s", json_object_to_json_string(ret));
	cr_expect_str_eq(json_object_get_string(status), "prelaunch");
	cr_expect(strstr(received(1), "\"arguments\":{\"value\":1073741824}"),
		  "balloon should carry its arguments: %s", received(1));
	cr_expect_str_neq(received(1), received(2), "each command needs its own id");
}

Test(qmp, error_reply_names_class_and_desc)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-balloon" },
		{ STEP_SEND, "{'id': %ID%, 'error': {'class': 'DeviceNotActive', 'desc': 'No "
			     "balloon device has been activated'}}\n" },
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, "{'return': {}, 'id': %ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;
	json_object *ret = NULL;

	cr_assert_not(vr_qmp_execute(qmp, "query-balloon", NULL, 2000, &ret, &err));
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_COMMAND,
		     "QEMU refused query-balloon;DeviceNotActive;No balloon device", "error reply");
	cr_expect_null(ret, "no return value on an error reply");
	cr_expect_not(vr_qmp_is_broken(qmp), "a refused command leaves the client usable");
	cr_assert(vr_qmp_execute(qmp, "query-status", NULL, 2000, NULL, &err2),
		  "the next command should work: %s", err2 ? err2->message : "?");
	fake_finish();
}

Test(qmp, events_before_the_reply_are_queued_in_order)
{
	g_autofree char *e1 = event_line("RESUME", 1);
	g_autofree char *e2 = event_line("BALLOON_CHANGE", 2);
	g_autofree char *e3 = event_line("STOP", 3);
	const struct step script[] = {
		HANDSHAKE,	   { STEP_RECV, "cont" },	{ STEP_SEND, e1 },
		{ STEP_SEND, e2 }, { STEP_SEND, RETURN_EMPTY }, { STEP_SEND, e3 },
		{ STEP_END },
	};
	static const char *const want[] = { "RESUME", "BALLOON_CHANGE", "STOP" };
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qmp_execute(qmp, "cont", NULL, 2000, NULL, &err), "cont: %s",
		  err ? err->message : "?");
	fake_finish();
	for (guint i = 0; i < ARRAY_LEN(want); i++) {
		g_autoptr(json_object) ev = NULL;
		json_object *name = NULL, *data = NULL, *n = NULL;

		/* The third comes after the reply: next_event reads it. */
		cr_assert(vr_qmp_next_event(qmp, 2000, &ev, &err), "event %u: %s", i,
			  err ? err->message : "?");
		cr_assert_not_null(ev, "expected event %u (%s), got none", i, want[i]);
		cr_assert(json_object_object_get_ex(ev, "event", &name) &&
			  json_object_object_get_ex(ev, "data", &data) &&
			  json_object_object_get_ex(data, "n", &n));
		cr_expect_str_eq(json_object_get_string(name), want[i], "event %u out of order", i);
		cr_expect_eq(json_object_get_int(n), (int)i + 1);
	}
	{
		g_autoptr(json_object) none = NULL;

		cr_assert(vr_qmp_next_event(qmp, 0, &none, &err), "%s", err ? err->message : "?");
		cr_expect_null(none, "expected no more events, got %s",
			       json_object_to_json_string(none));
	}
	cr_expect_eq(vr_qmp_events_dropped(qmp), 0);
}

Test(qmp, event_queue_is_bounded_and_drops_the_oldest)
{
	enum {
		SENT = VR_QMP_MAX_EVENTS + 6
	};
	g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
	g_autofree struct step *script = g_new0(struct step, SENT + 8);
	const struct step head[] = { HANDSHAKE, { STEP_RECV, "cont" } };
	g_autoptr(vr_qmp) qmp = NULL;
	g_autoptr(GError) err = NULL;
	guint n = 0, got = 0;

	for (guint i = 0; i < ARRAY_LEN(head); i++)
		script[n++] = head[i];
	for (int i = 0; i < SENT; i++) {
		g_ptr_array_add(lines, event_line("BALLOON_CHANGE", i));
		script[n++] = (struct step){ STEP_SEND, g_ptr_array_index(lines, i) };
	}
	script[n++] = (struct step){ STEP_SEND, RETURN_EMPTY };
	script[n] = (struct step){ STEP_END };
	qmp = start_and_connect(script);
	cr_assert(vr_qmp_execute(qmp, "cont", NULL, 2000, NULL, &err), "cont: %s",
		  err ? err->message : "?");
	fake_finish();
	cr_expect_eq(vr_qmp_events_dropped(qmp), SENT - VR_QMP_MAX_EVENTS,
		     "expected %d events dropped, got %" G_GUINT64_FORMAT, SENT - VR_QMP_MAX_EVENTS,
		     vr_qmp_events_dropped(qmp));
	for (;;) {
		g_autoptr(json_object) ev = NULL;
		json_object *data = NULL, *num = NULL;

		cr_assert(vr_qmp_next_event(qmp, 0, &ev, &err), "%s", err ? err->message : "?");
		if (!ev)
			break;
		cr_assert(json_object_object_get_ex(ev, "data", &data) &&
			  json_object_object_get_ex(data, "n", &num));
		cr_expect_eq(json_object_get_int(num), (int)(SENT - VR_QMP_MAX_EVENTS + got),
			     "event %u: expected the newest %d kept in order", got,
			     VR_QMP_MAX_EVENTS);
		got++;
	}
	cr_expect_eq(got, VR_QMP_MAX_EVENTS, "expected %d events kept, got %u", VR_QMP_MAX_EVENTS,
		     got);
}

Test(qmp, reply_with_a_foreign_id_is_dropped)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, "{'return': {'status': 'stale'}, 'id': 9999}\n" },
		{ STEP_SEND, "{'return': {'status': 'stale'}}\n" },
		{ STEP_SEND, "{'return': {'status': 'ours'}, 'id': %ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;
	json_object *status = NULL;

	cr_assert(vr_qmp_execute(qmp, "query-status", NULL, 2000, &ret, &err), "%s",
		  err ? err->message : "?");
	fake_finish();
	cr_assert(json_object_object_get_ex(ret, "status", &status));
	cr_expect_str_eq(json_object_get_string(status), "ours",
			 "expected the reply with our id, got %s", json_object_to_json_string(ret));
}

Test(qmp, slow_reply_times_out_then_the_client_is_closed)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SLEEP, NULL, 800 },
		{ STEP_SEND, RETURN_EMPTY },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;
	gint64 t0, took_us;

	t0 = g_get_monotonic_time();
	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 100, NULL, &err));
	took_us = g_get_monotonic_time() - t0;
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT, "query-status;100 ms", "slow reply");
	cr_expect(took_us >= 100000 && took_us < 700000,
		  "expected to give up after about 100 ms, took %" G_GINT64_FORMAT " us", took_us);
	cr_expect(vr_qmp_is_broken(qmp), "a timeout breaks the client");
	t0 = g_get_monotonic_time();
	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 2000, NULL, &err2));
	assert_error(err2, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED, "needs a new connection;query-status",
		     "after a timeout");
	cr_expect_lt(g_get_monotonic_time() - t0, 50000, "a broken client fails at once");
	fake_finish();
}

/**
 * struct bad_line_case - QEMU answers a command with @line (' for ").
 * @words:	';'-separated groups of '|'-separated words the message needs.
 */
struct bad_line_case {
	char name[48];
	char line[200];
	char words[96];
};

static const struct bad_line_case bad_lines[] = {
	{ "garbage", "this is not JSON\n", "not JSON;this is not JSON" },
	{ "array", "[1, 2, 3]\n", "not a JSON object;an array" },
	{ "string", "'return'\n", "not a JSON object;a string" },
	{ "number", "42\n", "not a JSON object" },
	{ "empty line", "\n", "not JSON" },
	{ "no known kind", "{'foo': 1, 'id': %ID%}\n", "none of;foo" },
	{ "two kinds", "{'return': {}, 'error': {'class': 'x', 'desc': 'y'}, 'id': %ID%}\n",
	  "both;return;error" },
	{ "error without desc", "{'error': {'class': 'GenericError'}, 'id': %ID%}\n",
	  "error.desc" },
	{ "error class not a string", "{'error': {'class': 1, 'desc': 'd'}, 'id': %ID%}\n",
	  "error.class;a string" },
	{ "error not an object", "{'error': 'bad', 'id': %ID%}\n", "error;an object" },
	{ "event without timestamp", "{'event': 'STOP'}\n", "timestamp" },
	{ "event with bad microseconds",
	  "{'event': 'STOP', 'timestamp': {'seconds': 1, 'microseconds': 1000000}}\n",
	  "timestamp;out of range" },
	{ "event with string data",
	  "{'event': 'STOP', 'data': 'x', 'timestamp': {'seconds': 1, 'microseconds': 0}}\n",
	  "data;an object" },
	{ "event with no name", "{'event': '', 'timestamp': {'seconds': 1, 'microseconds': 0}}\n",
	  "event;name" },
	{ "second greeting", FAKE_QMP_GREETING, "greeted again" },
	{ "member given twice", "{'return': {}, 'return': 1, 'id': %ID%}\n", "twice" },
};

ParameterizedTestParameters(qmp, bad_line_breaks_the_client)
{
	return cr_make_param_array(struct bad_line_case, bad_lines, ARRAY_LEN(bad_lines));
}

ParameterizedTest(const struct bad_line_case *c, qmp, bad_line_breaks_the_client)
{
	const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, c->line },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;

	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 2000, NULL, &err), "%s: accepted",
		      c->name);
	fake_finish();
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL, c->words, c->name);
	cr_expect(msg_has_any(err->message, fake.sock.path),
		  "%s: the message should name the socket: %s", c->name, err->message);
	cr_expect(vr_qmp_is_broken(qmp), "%s: a protocol error breaks the client", c->name);
	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 2000, NULL, &err2));
	assert_error(err2, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED, "needs a new connection", c->name);
}

Test(qmp, oversized_line_is_refused)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND_HUGE },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;
	g_autofree char *bound = g_strdup_printf("%u", VR_QMP_MAX_LINE_BYTES);

	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 5000, NULL, &err));
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_PROTOCOL, "longer than", "oversized line");
	cr_expect(msg_has_any(err->message, bound), "the message should give the bound %s: %s",
		  bound, err->message);
	cr_expect(vr_qmp_is_broken(qmp));
	vr_qmp_free(g_steal_pointer(&qmp)); /* lets the server's send end */
	fake_finish();
}

Test(qmp, server_closing_mid_line_is_closed)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, "{'return': {'stat" },
		{ STEP_CLOSE },
		{ STEP_END },
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_qmp_execute(qmp, "query-status", NULL, 2000, NULL, &err));
	fake_finish();
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED, "closed;middle of a line",
		     "closing mid-line");
	cr_expect(vr_qmp_is_broken(qmp));
}

Test(qmp, idle_close_is_seen_by_poll_without_sending)
{
	static const struct step script[] = { HANDSHAKE, { STEP_CLOSE }, { STEP_END } };
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(GError) err = NULL;

	fake_finish();
	cr_assert_not(vr_qmp_poll(qmp, &err), "poll should see the closed connection");
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED, "closed", "idle close");
	cr_expect(vr_qmp_is_broken(qmp));
}

Test(qmp, poll_queues_events_and_drops_stray_replies)
{
	g_autofree char *e1 = event_line("SHUTDOWN", 1);
	const struct step script[] = { HANDSHAKE,
				       { STEP_SEND, "{'return': {}, 'id': 77}\n" },
				       { STEP_SEND, e1 },
				       { STEP_END } };
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(json_object) ev = NULL;
	g_autoptr(GError) err = NULL;

	fake_finish();
	g_usleep(50000); /* the lines are in the socket */
	cr_assert(vr_qmp_poll(qmp, &err), "poll: %s", err ? err->message : "?");
	cr_assert(vr_qmp_next_event(qmp, 0, &ev, &err), "%s", err ? err->message : "?");
	cr_assert_not_null(ev, "poll should have queued the event");
	cr_expect_not(vr_qmp_is_broken(qmp));
}

Test(qmp, next_event_waits_for_one)
{
	g_autofree char *e1 = event_line("RESET", 1);
	const struct step script[] = {
		HANDSHAKE, { STEP_SLEEP, NULL, 100 }, { STEP_SEND, e1 }, { STEP_END }
	};
	g_autoptr(vr_qmp) qmp = start_and_connect(script);
	g_autoptr(json_object) ev = NULL;
	g_autoptr(json_object) none = NULL;
	g_autoptr(GError) err = NULL;
	gint64 t0;

	cr_assert(vr_qmp_next_event(qmp, 2000, &ev, &err), "%s", err ? err->message : "?");
	cr_assert_not_null(ev, "expected the event sent after 100 ms");
	fake_finish();
	t0 = g_get_monotonic_time();
	cr_assert(vr_qmp_next_event(qmp, 50, &none, &err), "%s", err ? err->message : "?");
	cr_expect_null(none);
	cr_expect_geq(g_get_monotonic_time() - t0, 50000, "expected to wait 50 ms for an event");
	cr_expect_not(vr_qmp_is_broken(qmp), "no event in time does not break the client");
}

/**
 * struct bad_greeting_case - QEMU greets with @greeting (' for ").
 * @code:	the vr_qmp_error expected.
 */
struct bad_greeting_case {
	char name[48];
	char greeting[240];
	int code;
	char words[96];
};

static const struct bad_greeting_case bad_greetings[] = {
	{ "not JSON", "QEMU 7.2 monitor - type 'help'\n", VR_QMP_ERROR_PROTOCOL, "not JSON" },
	{ "a reply instead", "{'return': {}}\n", VR_QMP_ERROR_PROTOCOL, "greeting" },
	{ "no version", "{'QMP': {'capabilities': []}}\n", VR_QMP_ERROR_PROTOCOL, "QMP.version" },
	{ "version not an object", "{'QMP': {'version': 7, 'capabilities': []}}\n",
	  VR_QMP_ERROR_PROTOCOL, "QMP.version;an object" },
	{ "major a string",
	  "{'QMP': {'version': {'qemu': {'major': '7', 'minor': 2, 'micro': 0}}, "
	  "'capabilities': []}}\n",
	  VR_QMP_ERROR_PROTOCOL, "QMP.version.qemu.major;an integer" },
	{ "negative minor",
	  "{'QMP': {'version': {'qemu': {'major': 7, 'minor': -2, 'micro': 0}}, "
	  "'capabilities': []}}\n",
	  VR_QMP_ERROR_PROTOCOL, "minor;out of range" },
	{ "capabilities not an array",
	  "{'QMP': {'version': {'qemu': {'major': 7, 'minor': 2, 'micro': 0}}, "
	  "'capabilities': 'oob'}}\n",
	  VR_QMP_ERROR_PROTOCOL, "QMP.capabilities;an array" },
	{ "capability not a string",
	  "{'QMP': {'version': {'qemu': {'major': 7, 'minor': 2, 'micro': 0}}, "
	  "'capabilities': [1]}}\n",
	  VR_QMP_ERROR_PROTOCOL, "capabilities[0]" },
	{ "package not a string",
	  "{'QMP': {'version': {'qemu': {'major': 7, 'minor': 2, 'micro': 0}, 'package': 1}, "
	  "'capabilities': []}}\n",
	  VR_QMP_ERROR_PROTOCOL, "package;a string" },
};

ParameterizedTestParameters(qmp, bad_greeting)
{
	return cr_make_param_array(struct bad_greeting_case, bad_greetings,
				   ARRAY_LEN(bad_greetings));
}

ParameterizedTest(const struct bad_greeting_case *c, qmp, bad_greeting)
{
	const struct step script[] = { { STEP_ACCEPT }, { STEP_SEND, c->greeting }, { STEP_END } };
	g_autoptr(GError) err = connect_fails(script, 2000, c->name);

	assert_error(err, VR_QMP_ERROR, c->code, c->words, c->name);
	cr_expect(msg_has_any(err->message, fake.sock.path),
		  "%s: the message should name the socket: %s", c->name, err->message);
}

Test(qmp, refused_capabilities)
{
	static const struct step script[] = {
		{ STEP_ACCEPT },
		{ STEP_SEND, FAKE_QMP_GREETING },
		{ STEP_RECV, "qmp_capabilities" },
		{ STEP_SEND, "{'error': {'class': 'CommandNotFound', 'desc': 'Capabilities "
			     "negotiation is already complete'}, 'id': %ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(GError) err = connect_fails(script, 2000, "capabilities");

	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_COMMAND,
		     "refused qmp_capabilities;CommandNotFound;already complete", "capabilities");
}

Test(qmp, closed_before_the_greeting)
{
	static const struct step script[] = { { STEP_ACCEPT }, { STEP_CLOSE }, { STEP_END } };
	g_autoptr(GError) err = connect_fails(script, 2000, "no greeting");

	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED, "closed", "no greeting");
}

Test(qmp, no_greeting_in_time)
{
	static const struct step script[] = { { STEP_ACCEPT },
					      { STEP_SLEEP, NULL, 300 },
					      { STEP_END } };
	g_autoptr(GError) err = connect_fails(script, 100, "slow greeting");

	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT, "no greeting;100 ms",
		     "slow greeting");
}

Test(qmp, no_socket)
{
	g_autofree char *path = g_build_filename(fake.sock.dir, "missing.sock", NULL);
	g_autoptr(vr_qmp) qmp = NULL;
	g_autoptr(GError) err = NULL;

	qmp = vr_qmp_connect(path, 500, &err);
	cr_assert_null(qmp);
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT, "missing.sock;no such file",
		     "missing socket");
}

/* ---- messages, without a socket ---- */

TestSuite(qmp_message, .description = "vr_qmp_parse_message and vr_qmp_reply_result");

Test(qmp_message, libvirt_style_reply_with_a_string_id)
{
	g_autoptr(json_object) msg = NULL;
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;
	enum vr_qmp_message_kind kind;
	const char *text = "{\"return\":{\"actual\":1073741824},\"id\":\"libvirt-42\"}";

	cr_assert(vr_qmp_parse_message(text, -1, &kind, &msg, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(kind, VR_QMP_MESSAGE_RETURN);
	cr_assert(vr_qmp_reply_result(msg, "query-balloon", &ret, &err), "%s",
		  err ? err->message : "?");
	cr_expect(json_object_is_type(ret, json_type_object), "expected the return object");
}

Test(qmp_message, null_return_is_a_reply)
{
	g_autoptr(json_object) msg = NULL;
	g_autoptr(GError) err = NULL;
	enum vr_qmp_message_kind kind;
	json_object *ret = (json_object *)&kind; /* must be overwritten */

	cr_assert(vr_qmp_parse_message("{\"return\": null, \"id\": 3}", -1, &kind, &msg, &err),
		  "%s", err ? err->message : "?");
	cr_expect_eq(kind, VR_QMP_MESSAGE_RETURN, "a null \"return\" is still a reply");
	cr_assert(vr_qmp_reply_result(msg, "x", &ret, &err), "%s", err ? err->message : "?");
	cr_expect_null(ret);
}

Test(qmp_message, error_text_from_qemu_is_made_printable_and_bounded)
{
	g_autoptr(json_object) msg = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) perr = NULL;
	enum vr_qmp_message_kind kind;
	GString *text = g_string_new("{\"error\": {\"class\": \"Generic\\u001b[31mError\", "
				     "\"desc\": \"");

	for (int i = 0; i < 2000; i++)
		g_string_append_c(text, 'd');
	g_string_append(text, "\"}}");
	cr_assert(vr_qmp_parse_message(text->str, -1, &kind, &msg, &perr), "%s",
		  perr ? perr->message : "?");
	g_string_free(text, TRUE);
	cr_assert_not(vr_qmp_reply_result(msg, "stop", NULL, &err));
	cr_expect_null(strchr(err->message, '\x1b'), "control characters must not pass: %s",
		       err->message);
	cr_expect(strstr(err->message, "Generic?[31mError"),
		  "expected the class, made printable: %s", err->message);
	cr_expect_lt(strlen(err->message), 2 * VR_QMP_MAX_QUOTE_BYTES + 64,
		     "QEMU's text should be cut, got %zu bytes", strlen(err->message));
	cr_expect(strstr(err->message, "..."), "a cut text should say so: %.80s", err->message);
}

Test(qmp_message, printable_keeps_utf8_and_replaces_invalid_bytes)
{
	g_autofree char *a = vr_qmp_printable("caf\xc3\xa9\n", 64);
	g_autofree char *b = vr_qmp_printable("a\xff"
					      "b",
					      64);
	g_autofree char *c = vr_qmp_printable("\xc3\xa9\xc3\xa9", 3);

	cr_expect_str_eq(a, "caf\xc3\xa9?");
	cr_expect(g_utf8_validate(b, -1, NULL), "expected valid UTF-8: %s", b);
	cr_expect(b[0] == 'a' && b[strlen(b) - 1] == 'b', "expected the valid bytes kept: %s", b);
	cr_expect_str_eq(c, "\xc3\xa9...", "a cut must not split a character");
}

/* ---- the QEMU monitor over the own client ---- */

TestSuite(qemu_monitor, .init = fake_setup, .fini = fake_teardown);

Test(qemu_monitor, executes_over_qmp)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-memory-size-summary" },
		{ STEP_SEND, "{'return': {'base-memory': 268435456, 'plugged-memory': 0}, 'id': "
			     "%ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(vr_qemu_monitor) mon = start_monitor(script, 1500);
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;

	cr_expect_str_eq(mon->ops->name, "qmp");
	cr_expect_str_eq(mon->target, fake.sock.path);
	cr_expect_eq(mon->timeout_ms, 1500, "the monitor keeps the timeout it was made with");
	cr_assert(vr_qemu_monitor_execute(mon, "query-memory-size-summary", NULL, 2000, &ret, &err),
		  "%s", err ? err->message : "?");
	fake_finish();
	cr_expect(json_object_is_type(ret, json_type_object));
}

Test(qemu_monitor, reconnects_once_after_a_timeout)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SLEEP, NULL, 300 },
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, "{'return': {'status': 'running'}, 'id': %ID%}\n" },
		{ STEP_END },
	};
	g_autoptr(vr_qemu_monitor) mon = start_monitor(script, 2000);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;

	cr_assert_not(vr_qemu_monitor_execute(mon, "query-status", NULL, 100, NULL, &err));
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT, "query-status", "first call");
	cr_assert(vr_qemu_monitor_execute(mon, "query-status", NULL, 2000, NULL, &err2),
		  "the monitor should reconnect: %s", err2 ? err2->message : "?");
	fake_finish();
}

Test(qemu_monitor, reconnects_when_qemu_dropped_the_connection)
{
	static const struct step script[] = {
		HANDSHAKE,
		{ STEP_CLOSE },
		HANDSHAKE,
		{ STEP_RECV, "query-status" },
		{ STEP_SEND, RETURN_EMPTY },
		{ STEP_END },
	};
	g_autoptr(vr_qemu_monitor) mon = start_monitor(script, 2000);
	g_autoptr(GError) err = NULL;

	fake_wait_progress(5); /* the server closed the first connection */
	cr_assert(vr_qemu_monitor_execute(mon, "query-status", NULL, 2000, NULL, &err),
		  "the monitor should reconnect before sending: %s", err ? err->message : "?");
	fake_finish();
	cr_expect_eq(fake.received->len, 3,
		     "query-status should be sent once, on the new "
		     "connection (got %u commands)",
		     fake.received->len);
}

Test(qemu_monitor, failed_reconnect_names_the_socket)
{
	static const struct step script[] = {
		HANDSHAKE, { STEP_CLOSE }, { STEP_UNLISTEN }, { STEP_END }
	};
	g_autoptr(vr_qemu_monitor) mon = start_monitor(script, 2000);
	g_autoptr(GError) err = NULL;

	fake_finish();
	cr_assert_not(vr_qemu_monitor_execute(mon, "query-status", NULL, 500, NULL, &err));
	assert_error(err, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT, "query-status;qmp.sock",
		     "reconnect to nothing");
}

/* ---- the QEMU monitor over libvirt ---- */

static void quiet_libvirt(void *data, virErrorPtr e)
{
	(void)data;
	(void)e;
}

TestSuite(qemu_monitor_libvirt, .description = "libvirt's test:///default driver");

Test(qemu_monitor_libvirt, test_driver_has_no_qemu_monitor)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GError) err = NULL;
	virConnectPtr conn;
	virDomainPtr dom;

	virSetErrorFunc(NULL, quiet_libvirt);
	conn = virConnectOpen("test:///default");
	if (!conn)
		cr_skip_test("libvirt's test driver cannot be opened: %s",
			     virGetLastErrorMessage());
	dom = virDomainLookupByName(conn, "test");
	cr_assert_not_null(dom, "the test driver should have domain \"test\": %s",
			   virGetLastErrorMessage());
	mon = vr_qemu_monitor_new_libvirt(dom);
	virDomainFree(dom); /* the monitor holds its own reference */
	cr_assert_not_null(mon);
	cr_expect_str_eq(mon->ops->name, "libvirt");
	cr_expect_str_eq(mon->target, "test");
	cr_assert_not(vr_qemu_monitor_execute(mon, "query-status", NULL, 1000, NULL, &err));
	assert_error(err, VR_QEMU_MONITOR_ERROR, VR_QEMU_MONITOR_ERROR_LIBVIRT,
		     "domain test;query-status;not supported", "libvirt test driver");
	vr_qemu_monitor_free(g_steal_pointer(&mon));
	virConnectClose(conn);
}
