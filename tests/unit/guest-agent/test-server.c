// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the agent's request server (guest-agent/server.c), driven
 * through its public API (server.h) with a fake struct vr_agent_ops (a
 * clock the test moves, the report interval and the reply lines recorded)
 * and a fake reclaim backend that records what it was asked; /proc/meminfo
 * is a fake tree in a temporary folder. Replies are read back with the
 * host's decoder (vr_proto_decode_message()), so a reply the host could not
 * read fails too. Times in us, sizes in bytes.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <glib.h>
#include <string.h>

#include "protocol.h"
#include "server.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define MIB (1ULL << 20)

/* ---- the fake backend: counts calls, answers what the test set ---- */

static struct {
	guint applied, paused, resumed, reclaims;
	uint64_t reclaim_bytes;	  /* the last reclaim's request */
	uint64_t reclaim_took_us; /* the fake clock moves by this during reclaim */
	gboolean fail_apply;	  /* apply_policy fails */
	struct vr_backend_stats stats;
} be;

static uint64_t fake_now;

static gboolean be_apply(gpointer b, const struct vr_policy *p, GError **error)
{
	(void)b;
	(void)p;
	if (be.fail_apply) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "fake backend: scheme refused");
		return FALSE;
	}
	be.applied++;
	return TRUE;
}

static gboolean be_pause(gpointer b, GError **error)
{
	(void)b;
	(void)error;
	be.paused++;
	return TRUE;
}

static gboolean be_resume(gpointer b, GError **error)
{
	(void)b;
	(void)error;
	be.resumed++;
	return TRUE;
}

static gboolean be_reclaim(gpointer b, uint64_t bytes, uint64_t deadline_ms, uint64_t *reclaimed,
			   GError **error)
{
	(void)b;
	(void)deadline_ms;
	(void)error;
	be.reclaims++;
	be.reclaim_bytes = bytes;
	fake_now += be.reclaim_took_us;
	*reclaimed = bytes / 2;
	return TRUE;
}

static gboolean be_read_stats(gpointer b, struct vr_backend_stats *out, GError **error)
{
	(void)b;
	(void)error;
	*out = be.stats;
	return TRUE;
}

static const struct vr_backend_ops fake_backend = {
	.name = "fake",
	.apply_policy = be_apply,
	.pause = be_pause,
	.resume = be_resume,
	.reclaim = be_reclaim,
	.read_stats = be_read_stats,
};

/* ---- the fake agent main (struct vr_agent_ops) ---- */

static struct {
	gpointer user_data; /* what each call got: must be agent_data */
	guint report_calls;
	uint64_t report_ms;
	GPtrArray *sent; /* owned copies of the reply lines */
} mainf;

static uint64_t ops_now_us(gpointer user_data)
{
	mainf.user_data = user_data;
	return fake_now;
}

static void ops_set_report_interval(gpointer user_data, uint64_t interval_ms)
{
	mainf.user_data = user_data;
	mainf.report_calls++;
	mainf.report_ms = interval_ms;
}

static void ops_send(gpointer user_data, const char *line, gsize len)
{
	mainf.user_data = user_data;
	cr_assert_eq(strlen(line), len, "send: the length is the line's");
	g_ptr_array_add(mainf.sent, g_strndup(line, len));
}

static const struct vr_agent_ops fake_ops = {
	.now_us = ops_now_us,
	.set_report_interval = ops_set_report_interval,
	.send = ops_send,
};

static int the_main; /* its address is the agent_data */
static char *root;
static char *procfs;
static struct vr_agent agent;

static void setup(void)
{
	memset(&be, 0, sizeof(be));
	memset(&mainf, 0, sizeof(mainf));
	mainf.sent = g_ptr_array_new_with_free_func(g_free);
	fake_now = 5000000;
	root = tree_new();
	tree_put(root, "proc/meminfo",
		 "MemTotal:        4194304 kB\nMemFree:         1048576 kB\n"
		 "MemAvailable:    2097152 kB\n"
		 "SwapTotal:       1048576 kB\nSwapFree:         524288 kB\n");
	procfs = g_build_filename(root, "proc", NULL);

	g_autoptr(GError) err = NULL;
	memset(&agent, 0, sizeof(agent));
	agent.paths = (struct vr_agent_paths){ .sysfs = root, .procfs = procfs, .cgroup = root };
	agent.ops = &fake_backend;
	agent.backends = g_ptr_array_new();
	g_ptr_array_add(agent.backends, (gpointer) "fake");
	agent.policy = vr_policy_new_profile(NULL, &err);
	cr_assert_not_null(agent.policy, "%s", err ? err->message : "?");
	agent.kernel_release = g_strdup("6.8.0-test");
	agent.started_us = 2000000;
	agent.fpr.order = -1;
	agent.reader = vr_proto_reader_new();
	vr_ratelimit_init(&agent.host_log, VR_AGENT_HOST_LOG_INTERVAL_US, VR_AGENT_HOST_LOG_BURST);
	agent.agent_ops = &fake_ops;
	agent.agent_data = &the_main;
}

static void teardown(void)
{
	g_clear_pointer(&agent.reader, vr_proto_reader_free);
	g_clear_pointer(&agent.policy, vr_policy_free);
	g_clear_pointer(&agent.hist_policy, vr_policy_free);
	g_clear_pointer(&agent.backends, g_ptr_array_unref);
	g_clear_pointer(&agent.kernel_release, g_free);
	g_clear_pointer(&mainf.sent, g_ptr_array_unref);
	tree_rm(root);
	g_clear_pointer(&root, g_free);
	g_clear_pointer(&procfs, g_free);
}

TestSuite(agent_server, .init = setup, .fini = teardown);

/* ---- helpers ---- */

/* The reply lines are read as the host reads them: every id the test uses
 * is that request's command, given in @user_data. */
static gboolean lookup_command(uint32_t id, enum vr_proto_command *command, gpointer user_data)
{
	(void)id;
	*command = (enum vr_proto_command)GPOINTER_TO_INT(user_data);
	return TRUE;
}

/* Decode @line (a reply to a @command request) into @out; fail the test on
 * a line the host would refuse. */
static void decode(const char *line, enum vr_proto_command command, struct vr_proto_message *out)
{
	g_autoptr(GError) err = NULL;

	cr_assert(g_str_has_suffix(line, "\n"), "a reply line ends with its newline: %s", line);
	cr_assert(vr_proto_decode_message(line, strlen(line), lookup_command,
					  GINT_TO_POINTER(command), out, &err),
		  "the host cannot read the reply %s: %s", line, err->message);
}

/* The request line of @req. */
static char *request_line(const struct vr_proto_request *req)
{
	g_autoptr(GError) err = NULL;
	char *line = vr_proto_encode_request(req, &err);

	cr_assert_not_null(line, "%s", err ? err->message : "?");
	return line;
}

/* Serve @req through vr_agent_handle_line(), decode its reply into @out. */
static void serve(const struct vr_proto_request *req, struct vr_proto_message *out)
{
	g_autofree char *line = request_line(req);
	g_autofree char *reply = vr_agent_handle_line(&agent, line, strlen(line));

	cr_assert_not_null(reply);
	decode(reply, req->command, out);
	cr_assert_eq(out->id, req->id, "the reply carries the request's id %u: %s", req->id, reply);
}

/* ---- requests answered through the backend and the ops ---- */

Test(agent_server, hello_names_the_agent)
{
	g_auto(vr_proto_message) m = { 0 };
	struct vr_proto_request req = { .id = 7, .command = VR_PROTO_HELLO };

	serve(&req, &m);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(m.hello.version, VR_PROTO_VERSION);
	cr_assert_str_eq(m.hello.backend, "fake");
	cr_assert_str_eq(m.hello.kernel, "6.8.0-test");
	cr_assert_eq(m.hello.nr_backends, 1);
	cr_assert_str_eq(m.hello.backends[0], "fake");
	cr_assert_not(m.hello.free_page_reporting);
	cr_assert_not(m.hello.has_reporting_order);
}

Test(agent_server, set_policy_applies_and_rearms_reports)
{
	g_auto(vr_proto_message) m = { 0 };
	g_autoptr(GError) err = NULL;
	struct vr_proto_request req = {
		.id = 2,
		.command = VR_PROTO_SET_POLICY,
		.set_policy = { .has_report_interval = TRUE, .report_interval_ms = 2500 },
	};

	req.set_policy.policy = vr_policy_new_profile(NULL, &err);
	cr_assert_not_null(req.set_policy.policy);
	serve(&req, &m);
	vr_policy_free(req.set_policy.policy);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(be.applied, 1, "the backend was given the policy");
	cr_assert(agent.applied && agent.started);
	cr_assert_eq(mainf.report_calls, 1, "the report timer re-armed through the ops");
	cr_assert_eq(mainf.report_ms, 2500);
	cr_assert_eq(mainf.user_data, &the_main, "the ops get the agent's agent_data");
}

Test(agent_server, set_policy_refused_keeps_the_old_one)
{
	g_auto(vr_proto_message) m = { 0 };
	g_autoptr(GError) err = NULL;
	const struct vr_policy *before = agent.policy;
	struct vr_proto_request req = {
		.id = 3,
		.command = VR_PROTO_SET_POLICY,
		.set_policy = { .has_report_interval = TRUE, .report_interval_ms = 2500 },
	};

	be.fail_apply = TRUE;
	req.set_policy.policy = vr_policy_new_profile(NULL, &err);
	serve(&req, &m);
	vr_policy_free(req.set_policy.policy);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_ERROR);
	cr_assert(msg_has_any(m.error.desc, "scheme refused"), "%s", m.error.desc);
	cr_assert_eq(agent.policy, before, "the old policy stays");
	cr_assert_eq(mainf.report_calls, 0, "no report re-arm on a refused policy");
}

Test(agent_server, reclaim_through_the_backend_timed_by_the_ops_clock)
{
	g_auto(vr_proto_message) m = { 0 };
	struct vr_proto_request req = {
		.id = 4,
		.command = VR_PROTO_RECLAIM,
		.reclaim = { .bytes = 64 * MIB, .deadline_ms = 1000 },
	};

	be.reclaim_took_us = 37000;
	serve(&req, &m);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(be.reclaims, 1);
	cr_assert_eq(be.reclaim_bytes, 64 * MIB);
	cr_assert_eq(m.reclaim.reclaimed_bytes, 32 * MIB);
	cr_assert_eq(m.reclaim.elapsed_ms, 37, "elapsed %" G_GUINT64_FORMAT " ms",
		     (guint64)m.reclaim.elapsed_ms);
}

Test(agent_server, reclaim_refused_while_paused)
{
	g_auto(vr_proto_message) m = { 0 };
	struct vr_proto_request req = {
		.id = 5,
		.command = VR_PROTO_RECLAIM,
		.reclaim = { .bytes = 64 * MIB, .deadline_ms = 1000 },
	};

	agent.paused = true;
	serve(&req, &m);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_ERROR);
	cr_assert_eq(m.error.cls, VR_PROTO_ERROR_FAILED);
	cr_assert(msg_has_any(m.error.desc, "paused"), "%s", m.error.desc);
	cr_assert_eq(be.reclaims, 0, "the backend was not asked");
}

Test(agent_server, pause_then_resume_through_the_backend)
{
	g_auto(vr_proto_message) p = { 0 };
	g_auto(vr_proto_message) r = { 0 };
	struct vr_proto_request pause = { .id = 8, .command = VR_PROTO_PAUSE };
	struct vr_proto_request resume = { .id = 9, .command = VR_PROTO_RESUME };

	agent.started = agent.applied = true;
	serve(&pause, &p);
	cr_assert_eq(p.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert(agent.paused);
	cr_assert_eq(be.paused, 1);
	serve(&resume, &r);
	cr_assert_eq(r.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_not(agent.paused);
	cr_assert_eq(be.resumed, 1);
	cr_assert_eq(be.applied, 0, "a policy already applied is not applied again");
}

Test(agent_server, stats_from_the_backend_meminfo_and_the_ops_clock)
{
	g_auto(vr_proto_message) m = { 0 };
	struct vr_proto_request req = { .id = 6, .command = VR_PROTO_GET_STATS };

	be.stats = (struct vr_backend_stats){
		.nr_tried = 10,
		.sz_tried = 40 * MIB,
		.nr_applied = 12,
		.sz_applied = 8 * MIB,
	};
	fake_now = agent.started_us + 3000000;
	serve(&req, &m);
	cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_str_eq(m.stats.backend, "fake");
	cr_assert_eq(m.stats.uptime_ms, 3000);
	cr_assert_eq(m.stats.nr_tried, 10);
	cr_assert_eq(m.stats.nr_applied, 10, "applied is kept at most tried");
	cr_assert_eq(m.stats.sz_applied, 8 * MIB);
	cr_assert_eq(m.stats.mem_total_bytes, 4096 * MIB);
	cr_assert_eq(m.stats.swap_free_bytes, 512 * MIB);
}

/* ---- the byte stream: lines, malformed lines, a line over the limit ---- */

/* Feed @text, return how many replies it sent. */
static guint feed(const char *text, gsize len)
{
	guint before = mainf.sent->len;

	vr_agent_feed(&agent, text, len);
	return mainf.sent->len - before;
}

Test(agent_server, feed_answers_each_line_a_partial_one_waits)
{
	struct vr_proto_request h = { .id = 11, .command = VR_PROTO_HELLO };
	g_autofree char *line = request_line(&h);
	gsize half = strlen(line) / 2;
	g_autofree char *two = g_strconcat(line, line, NULL);

	cr_assert_eq(feed(line, half), 0, "half a line is not answered");
	cr_assert_eq(feed(line + half, strlen(line) - half), 1, "the rest completes it");
	cr_assert_eq(feed(two, strlen(two)), 2, "two lines in one read: two replies");
	for (guint i = 0; i < mainf.sent->len; i++) {
		g_auto(vr_proto_message) m = { 0 };

		decode(mainf.sent->pdata[i], VR_PROTO_HELLO, &m);
		cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
		cr_assert_eq(m.id, 11);
	}
	cr_assert_eq(mainf.user_data, &the_main);
}

Test(agent_server, malformed_line_refused_and_the_stream_goes_on)
{
	struct vr_proto_request h = { .id = 12, .command = VR_PROTO_HELLO };
	g_autofree char *hello = request_line(&h);
	const char *bad[] = {
		"this is not json\n",
		"{\"vreclaim\":1,\"id\":13,\"command\":\"format-disk\"}\n",
		"{\"vreclaim\":99,\"id\":14,\"command\":\"hello\"}\n",
	};
	const enum vr_proto_error_class want[] = {
		VR_PROTO_ERROR_SYNTAX,
		VR_PROTO_ERROR_UNKNOWN_COMMAND,
		VR_PROTO_ERROR_BAD_VERSION,
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_auto(vr_proto_message) m = { 0 };

		cr_assert_eq(feed(bad[i], strlen(bad[i])), 1, "one error reply to %s", bad[i]);
		decode(mainf.sent->pdata[mainf.sent->len - 1], VR_PROTO_HELLO, &m);
		cr_assert_eq(m.kind, VR_PROTO_MESSAGE_ERROR, "%s", bad[i]);
		cr_assert_eq(m.error.cls, want[i], "%s: class %s", bad[i],
			     vr_proto_error_class_name(m.error.cls));
		cr_assert_gt(strlen(m.error.desc), 0, "the error says what was wrong");
	}
	/* Kept: the next good line is served as usual. */
	g_auto(vr_proto_message) ok = { 0 };
	cr_assert_eq(feed(hello, strlen(hello)), 1);
	decode(mainf.sent->pdata[mainf.sent->len - 1], VR_PROTO_HELLO, &ok);
	cr_assert_eq(ok.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(ok.id, 12);
}

Test(agent_server, line_over_the_limit_refused_then_the_next_served)
{
	struct vr_proto_request h = { .id = 15, .command = VR_PROTO_HELLO };
	g_autofree char *hello = request_line(&h);
	gsize big = VR_PROTO_MAX_LINE + 100;
	g_autofree char *junk = g_malloc(big + 1);
	g_auto(vr_proto_message) err = { 0 };
	g_auto(vr_proto_message) ok = { 0 };

	memset(junk, 'x', big);
	junk[big] = '\n';
	cr_assert_eq(feed(junk, big + 1), 1, "one error for the long line");
	decode(mainf.sent->pdata[0], VR_PROTO_HELLO, &err);
	cr_assert_eq(err.kind, VR_PROTO_MESSAGE_ERROR);
	cr_assert_eq(err.id, 0, "no id could be read");
	cr_assert_eq(err.error.cls, VR_PROTO_ERROR_TOO_LONG);
	cr_assert(msg_names_number(err.error.desc, VR_PROTO_MAX_LINE), "%s", err.error.desc);
	cr_assert_lt(vr_proto_reader_buffered(agent.reader), (gsize)VR_PROTO_MAX_LINE,
		     "the long line's bytes are dropped");
	cr_assert_eq(feed(hello, strlen(hello)), 1);
	decode(mainf.sent->pdata[1], VR_PROTO_HELLO, &ok);
	cr_assert_eq(ok.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(ok.id, 15);
}
