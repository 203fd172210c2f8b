/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of vreclaimd's session with a guest agent
 * (hostd/agent/agent-session.c): the pure checks (token bucket, lies about the
 * guest's memory, agent restarts, limits) on struct literals, and the session
 * against a fake agent: a unix socket server in a temporary folder, driven
 * from the test's own main loop (the thread-default context the session runs
 * on too), answering like the real agent unless a test makes it stay silent,
 * answer late, or send canned or hostile lines.
 *
 * Timeouts and backoffs are tens of milliseconds, so the suite runs in
 * seconds; tests that measure a wait check its lower bound only (a loaded
 * machine makes waits longer, never shorter).
 *
 * Criterion runs every test in its own process: parameter structs hold no
 * pointers (fixed arrays only).
 */
#define _GNU_SOURCE /* accept4 in test-fake-agent.h */

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include "agent/agent-session.h"
#include "protocol.h"
#include "test-fake-agent.h"
#include "test-messages.h"

#define MIB		(1024ULL * 1024)
#define GIB		(1024ULL * MIB)
#define GUEST_MEM	GIB
#define DOMAIN		"test-vm"
#define NR_COMMANDS	FAKE_AGENT_NR_COMMANDS
#define MAX_ACCEPTS	16
#define WAIT_MS		3000 /* the most any test waits for an event */
#define CALL_TIMEOUT_MS 2000
/* Waits are measured from ops->down, which runs after the session armed its
 * reconnect timer (a few ms on a loaded machine): the slack allowed, us. */
#define WAIT_SLACK_US 20000

/* ---- the fake agent ---- */

/**
 * struct fake_agent - the guest agent these tests play, on the shared
 * transport (test-fake-agent.h).
 * @srv:		the socket server.
 * @accept_us:		when each connection was taken (monotonic).
 * @silent:		bit (1 << command): never answer it.
 * @delay_ms:		answer this command this late.
 * @canned:		answer this command with this line instead ("@ID@" in it
 *			becomes the request's id).
 * @stats, @regions:	what get-stats and get-regions return.
 * @close_after_hello:	close the connection right after answering hello.
 */
struct fake_agent {
	struct fake_agent_server srv;
	gint64 accept_us[MAX_ACCEPTS];
	guint silent;
	guint delay_ms[NR_COMMANDS];
	const char *canned[NR_COMMANDS];
	struct vr_agent_stats stats;
	GArray *regions;
	gboolean close_after_hello;
};

static struct fake_agent *fa;

static void fake_send(const char *text)
{
	fake_server_send(&fa->srv, text);
}

static gboolean fake_on_delayed(gpointer data)
{
	g_autofree char *line = data;

	if (fa->srv.fd >= 0)
		fake_send(line);
	return G_SOURCE_REMOVE;
}

/* The answer the real agent would give to @req. */
static char *fake_answer(const struct vr_proto_request *req)
{
	if (fa->canned[req->command]) {
		GString *line = g_string_new(fa->canned[req->command]);
		g_autofree char *id = g_strdup_printf("%u", req->id);

		g_string_replace(line, "@ID@", id, 0);
		return g_string_free(line, FALSE);
	}
	switch (req->command) {
	case VR_PROTO_HELLO: {
		struct vr_proto_hello hello = {
			.version = 1,
			.agent = "fake-0.1",
			.kernel = "6.12.0-test",
			.backends = { "damon" },
			.nr_backends = 1,
			.backend = "damon",
			.free_page_reporting = TRUE,
		};
		return vr_proto_encode_hello(req->id, &hello);
	}
	case VR_PROTO_GET_STATS:
		return vr_proto_encode_stats(req->id, &fa->stats);
	case VR_PROTO_GET_REGIONS: {
		struct vr_proto_regions regions = {
			.sample_interval_us = 5000,
			.aggr_interval_us = 100000,
			.regions = fa->regions,
		};
		return vr_proto_encode_regions(req->id, &regions);
	}
	case VR_PROTO_RECLAIM:
		return vr_proto_encode_error(req->id, VR_PROTO_ERROR_BUSY,
					     "the kernel's DAMON is in use");
	default:
		return vr_proto_encode_empty(req->id);
	}
}

static void fake_on_request(struct fake_agent_server *srv, const struct vr_proto_request *req)
{
	if (fa->silent & (1u << req->command))
		return;
	char *answer = fake_answer(req);
	if (fa->delay_ms[req->command]) {
		g_timeout_add(fa->delay_ms[req->command], fake_on_delayed, answer);
		return;
	}
	fake_send(answer);
	g_free(answer);
	if (req->command == VR_PROTO_HELLO && fa->close_after_hello)
		fake_server_close_conn(srv);
}

static void fake_on_accept(struct fake_agent_server *srv)
{
	if (srv->accepts <= MAX_ACCEPTS)
		fa->accept_us[srv->accepts - 1] = g_get_monotonic_time();
}

static void fake_new(void)
{
	fa = g_new0(struct fake_agent, 1);
	fake_server_init(&fa->srv, "vr-session-XXXXXX", fake_on_request);
	fa->srv.on_accept = fake_on_accept;
	fa->regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	fa->stats = (struct vr_agent_stats){
		.backend = "damon",
		.uptime_ms = 1000,
		.nr_tried = 10,
		.sz_tried = 40 * MIB,
		.nr_applied = 5,
		.sz_applied = 20 * MIB,
		.mem_total_bytes = 900 * MIB,
		.mem_free_bytes = 300 * MIB,
		.free_page_reporting = TRUE,
	};
}

static void fake_free(void)
{
	if (!fa)
		return;
	fake_server_clear(&fa->srv);
	g_array_unref(fa->regions);
	g_clear_pointer(&fa, g_free);
}

/* ---- the daemon's side: what the session told it ---- */

static struct {
	guint ups;
	guint downs;
	guint reports;
	guint restarts;
	GError *down_error;
	gint64 down_us[MAX_ACCEPTS];
	uint64_t seqs[256];
	struct vr_agent_stats restart_last;
	struct vr_agent_stats restart_now;
	char hello_agent[VR_PROTO_MAX_AGENT_LEN + 1];
	gboolean free_in_up;
} ev;

static struct vr_agent_session *session;

static void on_up(struct vr_agent_session *s, const struct vr_proto_hello *hello, gpointer data)
{
	(void)data;
	cr_assert_eq(s, session, "ops->up got another session");
	cr_assert(vr_agent_session_is_up(s), "ops->up: expected the session to be up already");
	g_strlcpy(ev.hello_agent, hello->agent, sizeof(ev.hello_agent));
	ev.ups++;
	if (ev.free_in_up)
		g_clear_pointer(&session, vr_agent_session_free);
}

static void on_down(struct vr_agent_session *s, const GError *error, gpointer data)
{
	(void)s;
	(void)data;
	cr_assert_not_null(error, "ops->down without an error");
	if (ev.downs < MAX_ACCEPTS)
		ev.down_us[ev.downs] = g_get_monotonic_time();
	ev.downs++;
	g_clear_error(&ev.down_error);
	ev.down_error = g_error_copy(error);
}

static void on_report(struct vr_agent_session *s, const struct vr_agent_stats *stats, uint64_t seq,
		      gpointer data)
{
	(void)s;
	(void)stats;
	(void)data;
	if (ev.reports < G_N_ELEMENTS(ev.seqs))
		ev.seqs[ev.reports] = seq;
	ev.reports++;
}

static void on_restarted(struct vr_agent_session *s, const struct vr_agent_stats *last,
			 const struct vr_agent_stats *now, gpointer data)
{
	(void)s;
	(void)data;
	ev.restart_last = *last;
	ev.restart_now = *now;
	ev.restarts++;
}

static const struct vr_agent_session_ops test_ops = {
	.up = on_up,
	.down = on_down,
	.report = on_report,
	.restarted = on_restarted,
};

/**
 * struct call_result - what a call's callback got.
 * @count:	times it was called (must end at 1).
 * @reply:	the reply, moved out of the session's message (@has_reply).
 * @error:	the error otherwise.
 * @free_session: free the session from inside the callback.
 */
struct call_result {
	guint count;
	gboolean has_reply;
	struct vr_proto_message reply;
	GError *error;
	gboolean free_session;
};

static void call_result_clear(struct call_result *r)
{
	if (r->has_reply)
		vr_proto_message_clear(&r->reply);
	g_clear_error(&r->error);
}

static void on_reply(struct vr_agent_session *s, struct vr_proto_message *reply,
		     const GError *error, gpointer data)
{
	struct call_result *r = data;

	(void)s;
	r->count++;
	cr_assert((reply == NULL) != (error == NULL),
		  "a reply callback gets exactly one of a reply and an error");
	if (reply) {
		r->reply = *reply;
		memset(reply, 0, sizeof(*reply)); /* moved: the session may clear it */
		r->has_reply = TRUE;
	} else {
		g_clear_error(&r->error);
		r->error = g_error_copy(error);
	}
	if (r->free_session)
		g_clear_pointer(&session, vr_agent_session_free);
}

/* ---- the main loop ---- */

static gboolean count_reached(gconstpointer arg)
{
	const guint *const *pair = arg;

	return *pair[0] >= *pair[1];
}

/* Run the main loop until *@counter reaches @want or @ms pass. */
static bool wait_count(const guint *counter, guint want, guint ms)
{
	const guint *pair[] = { counter, &want };

	return fake_loop_run_until(count_reached, pair, ms);
}

static struct vr_agent_session_limits test_limits(void)
{
	struct vr_agent_session_limits l;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	l.hello_timeout_ms = 1000;
	l.backoff_initial_ms = 50;
	l.backoff_max_ms = 400;
	return l;
}

static struct vr_agent_session *session_new_ok(const struct vr_agent_session_limits *l)
{
	g_autoptr(GError) err = NULL;
	struct vr_agent_session *s =
		vr_agent_session_new(DOMAIN, fa->srv.path, l, &test_ops, NULL, &err);

	cr_assert_not_null(s, "expected a session, got: %s", err ? err->message : "NULL");
	return s;
}

/* A session with @l that is up. */
static void start_session(const struct vr_agent_session_limits *l)
{
	session = session_new_ok(l);
	cr_assert(wait_count(&ev.ups, 1, WAIT_MS),
		  "expected the session to come up; last error: %s",
		  vr_agent_session_last_error(session) ? vr_agent_session_last_error(session) :
							 "none");
}

static void call_ok(enum vr_proto_command command, guint timeout_ms, struct call_result *r)
{
	struct vr_proto_request req = { .command = command };
	g_autoptr(GError) err = NULL;

	if (command == VR_PROTO_RECLAIM)
		req.reclaim = (struct vr_proto_reclaim_args){ .bytes = 4096, .deadline_ms = 100 };
	if (command == VR_PROTO_GET_REGIONS)
		req.get_regions.max = VR_PROTO_MAX_REGIONS;
	cr_assert(vr_agent_session_call(session, &req, timeout_ms, on_reply, r, &err),
		  "expected the %s call to be accepted, got: %s", vr_proto_command_name(command),
		  err ? err->message : "?");
	cr_assert_neq(req.id, 0, "expected the call to choose an id");
}

static struct vr_agent_session_counters counters(void)
{
	struct vr_agent_session_counters c;

	vr_agent_session_counters(session, &c);
	return c;
}

static void assert_session_error(const GError *err, int code, const char *want, const char *what)
{
	cr_assert_not_null(err, "%s: expected an error, got none", what);
	cr_assert_eq(err->domain, VR_AGENT_SESSION_ERROR,
		     "%s: expected the session's error domain, got %s (%s)", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected code %d, got %d (%s)", what, code, err->code,
		     err->message);
	cr_assert(msg_has_any(err->message, DOMAIN),
		  "%s: expected the message to name the domain: %s", what, err->message);
	cr_assert(msg_has_any(err->message, want), "%s: expected the message to mention '%s': %s",
		  what, want, err->message);
}

static void setup(void)
{
	memset(&ev, 0, sizeof(ev));
	fake_new();
	fake_server_listen(&fa->srv);
}

static void setup_no_socket(void)
{
	memset(&ev, 0, sizeof(ev));
	fake_new();
}

static void teardown(void)
{
	g_clear_pointer(&session, vr_agent_session_free);
	fake_free();
	g_clear_error(&ev.down_error);
}

TestSuite(session, .init = setup, .fini = teardown);

/* ---- pure: the token bucket ---- */

Test(session_pure, token_bucket_burst_then_rate)
{
	struct vr_token_bucket b;
	gint64 t0 = 1000000;

	vr_token_bucket_init(&b, 50, 100, t0);
	for (int i = 0; i < 100; i++)
		cr_assert(vr_token_bucket_take(&b, 1, t0), "expected token %d of the burst of 100",
			  i);
	cr_assert_not(vr_token_bucket_take(&b, 1, t0), "expected the 101st line to be refused");
	/* 50/s: one token every 20 ms. */
	cr_assert_not(vr_token_bucket_take(&b, 1, t0 + 19000), "expected no token after 19 ms");
	cr_assert(vr_token_bucket_take(&b, 1, t0 + 20000), "expected a token after 20 ms");
	cr_assert_not(vr_token_bucket_take(&b, 1, t0 + 20000), "expected one token only");
	/* A clock that goes back adds nothing. */
	cr_assert_not(vr_token_bucket_take(&b, 1, t0), "expected nothing from a clock going back");
	/* A long pause refills only up to the burst. */
	cr_assert(vr_token_bucket_take(&b, 100, t0 + 3600 * 1000000LL),
		  "expected a full bucket after an hour");
	cr_assert_not(vr_token_bucket_take(&b, 1, t0 + 3600 * 1000000LL),
		      "expected the bucket to hold the burst at most");
}

/* ---- pure and session: lies about the guest's memory ---- */

/* get-regions of a GUEST_MEM guest whose RAM ends at @phys_end (0: at GUEST_MEM). */
struct regions_case {
	char name[56];
	uint64_t phys_end;
	guint nr;
	struct vr_picture_region regions[3];
	bool lie;
	uint64_t want_number; /* in the message of a lie */
};

static struct regions_case regions_cases[] = {
	{ "honest: all of memory", 0, 1, { { 0, GIB, 0, 0 } }, false, 0 },
	{ "honest: around the hole",
	  4 * GIB,
	  2,
	  { { 0, 512 * MIB, 3, 1 }, { 3 * GIB, 3 * GIB + 512 * MIB, 0, 9 } },
	  false,
	  0 },
	{ "honest: no regions", 0, 0, { { 0 } }, false, 0 },
	{ "a region beyond memory", 0, 1, { { 0, 2 * GIB, 0, 0 } }, true, 2 * GIB },
	{ "the last region a byte beyond",
	  0,
	  2,
	  { { 0, 4096, 0, 0 }, { GIB - 4096, GIB + 1, 0, 0 } },
	  true,
	  GIB + 1 },
	{ "beyond the physical end",
	  4 * GIB,
	  1,
	  { { 4 * GIB - 4096, 4 * GIB + 4096, 0, 0 } },
	  true,
	  4 * GIB + 4096 },
	{ "regions summing above memory",
	  4 * GIB,
	  2,
	  { { 0, 768 * MIB, 0, 0 }, { 3 * GIB, 3 * GIB + 512 * MIB, 0, 0 } },
	  true,
	  1280 * MIB },
};

ParameterizedTestParameters(session_pure, check_regions)
{
	return cr_make_param_array(struct regions_case, regions_cases, G_N_ELEMENTS(regions_cases));
}

static void regions_of_case(const struct regions_case *c, GArray *out)
{
	g_array_set_size(out, 0);
	g_array_append_vals(out, c->regions, c->nr);
}

ParameterizedTest(struct regions_case *c, session_pure, check_regions)
{
	struct vr_agent_session_limits l;
	g_autoptr(GArray) arr = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	struct vr_proto_regions r = { .sample_interval_us = 5000, .aggr_interval_us = 100000 };
	g_autoptr(GError) err = NULL;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	l.guest_phys_end_bytes = c->phys_end;
	regions_of_case(c, arr);
	r.regions = arr;
	gboolean ok = vr_agent_session_check_regions(&l, &r, &err);
	if (!c->lie) {
		cr_assert(ok, "%s: expected the regions to pass, got: %s", c->name,
			  err ? err->message : "?");
		return;
	}
	cr_assert_not(ok, "%s: expected the regions to be refused as a lie", c->name);
	cr_assert_eq(err->code, VR_AGENT_SESSION_ERROR_LIE, "%s: expected a LIE error", c->name);
	cr_assert(msg_names_number(err->message, (long)c->want_number),
		  "%s: expected the message to name %" PRIu64 ": %s", c->name, c->want_number,
		  err->message);
}

ParameterizedTestParameters(session, lying_regions)
{
	return cr_make_param_array(struct regions_case, regions_cases, G_N_ELEMENTS(regions_cases));
}

/* The session gives the call an error, not the data, counts the lie, stays up. */
ParameterizedTest(struct regions_case *c, session, lying_regions)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r = { 0 };

	l.guest_phys_end_bytes = c->phys_end;
	regions_of_case(c, fa->regions);
	start_session(&l);
	call_ok(VR_PROTO_GET_REGIONS, CALL_TIMEOUT_MS, &r);
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "%s: expected the call to end", c->name);
	if (!c->lie) {
		cr_assert(r.has_reply, "%s: expected the regions, got: %s", c->name,
			  r.error ? r.error->message : "?");
		guint nr = r.reply.regions.regions ? r.reply.regions.regions->len : 0;
		cr_assert_eq(nr, c->nr, "%s: expected %u regions, got %u", c->name, c->nr, nr);
		cr_assert_eq(counters().refused_lies, 0, "%s: expected no lie counted", c->name);
	} else {
		assert_session_error(r.error, VR_AGENT_SESSION_ERROR_LIE, "claims", c->name);
		cr_assert(msg_names_number(r.error->message, (long)c->want_number),
			  "%s: expected the message to name %" PRIu64 ": %s", c->name,
			  c->want_number, r.error->message);
		cr_assert_eq(counters().refused_lies, 1, "%s: expected the lie counted", c->name);
		cr_assert_eq(counters().refused, 1, "%s: expected one refused message", c->name);
	}
	cr_assert(vr_agent_session_is_up(session), "%s: expected the session to stay up", c->name);
	cr_assert_eq(r.count, 1, "%s: expected one callback", c->name);
	call_result_clear(&r);
}

Test(session_pure, check_stats)
{
	struct vr_agent_session_limits l;
	struct vr_agent_stats st = { .mem_total_bytes = GUEST_MEM };
	g_autoptr(GError) err = NULL;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	cr_assert(vr_agent_session_check_stats(&l, &st, &err), "expected all of memory to pass");
	st.mem_total_bytes = GUEST_MEM + 1;
	cr_assert_not(vr_agent_session_check_stats(&l, &st, &err),
		      "expected a byte more than the guest has to be a lie");
	cr_assert(msg_names_number(err->message, (long)(GUEST_MEM + 1)) &&
			  msg_names_number(err->message, (long)GUEST_MEM),
		  "expected the message to name both numbers: %s", err->message);
	g_clear_error(&err);
	st.mem_total_bytes = GUEST_MEM / 2;
	st.has_reportable_free_bytes = TRUE;
	st.reportable_free_bytes = GUEST_MEM / 2 + 4096;
	cr_assert_not(vr_agent_session_check_stats(&l, &st, &err),
		      "expected more reportable free memory than memory to be a lie");
	cr_assert(msg_names_number(err->message, (long)(GUEST_MEM / 2 + 4096)),
		  "expected the message to name the claim: %s", err->message);
}

Test(session, lying_stats)
{
	struct call_result r = { 0 };
	struct vr_agent_session_limits l = test_limits();

	fa->stats.mem_total_bytes = 2 * GIB;
	fa->stats.mem_free_bytes = GIB;
	start_session(&l);
	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &r);
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "expected the get-stats call to end");
	assert_session_error(r.error, VR_AGENT_SESSION_ERROR_LIE, "2147483648", "get-stats");
	cr_assert(msg_names_number(r.error->message, (long)GUEST_MEM),
		  "expected the guest's size in the message: %s", r.error->message);

	/* The same claim in a report: not passed on, counted. */
	g_autofree char *report = vr_proto_encode_report(0, &fa->stats);
	fake_send(report);
	fake_loop_spin_ms(100);
	cr_assert_eq(ev.reports, 0, "expected the lying report not to reach the daemon");
	cr_assert_eq(counters().refused_lies, 2, "expected two lies counted, got %" PRIu64,
		     counters().refused_lies);
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	call_result_clear(&r);
}

/* ---- pure: agent restarts ---- */

enum stats_field {
	SF_NONE,
	SF_UPTIME,
	SF_NR_TRIED,
	SF_SZ_TRIED,
	SF_NR_APPLIED,
	SF_SZ_APPLIED,
	SF_QT_EXCEEDS,
	SF_RECLAIMER_CPU,
	SF_AGENT_CPU,
	SF_COMPACTIONS,
	SF_RECLAIMED,
};

/* base_stats with @field set to @value. */
struct went_back_case {
	char name[40];
	enum stats_field field;
	uint64_t value;
	bool went_back;
};

static const struct vr_agent_stats base_stats = {
	.uptime_ms = 5000,
	.nr_tried = 10,
	.sz_tried = 100,
	.nr_applied = 5,
	.sz_applied = 50,
	.qt_exceeds = 3,
	.reclaimer_cpu_us = 700,
	.agent_cpu_us = 900,
	.compactions = 2,
	.reclaimed_bytes = 8 * MIB,
	.mem_total_bytes = GIB,
};

static struct went_back_case went_back_cases[] = {
	{ "the same", SF_NONE, 0, false },
	{ "uptime grew", SF_UPTIME, 6000, false },
	{ "sz_applied grew", SF_SZ_APPLIED, 60, false },
	{ "reclaimer cpu went back (new backend)", SF_RECLAIMER_CPU, 0, false },
	{ "uptime went back", SF_UPTIME, 4999, true },
	{ "nr_tried went back", SF_NR_TRIED, 9, true },
	{ "sz_tried went back", SF_SZ_TRIED, 99, true },
	{ "nr_applied went back", SF_NR_APPLIED, 4, true },
	{ "sz_applied went back", SF_SZ_APPLIED, 49, true },
	{ "qt_exceeds went back", SF_QT_EXCEEDS, 2, true },
	{ "agent cpu went back", SF_AGENT_CPU, 899, true },
	{ "compactions went back", SF_COMPACTIONS, 1, true },
	{ "reclaimed bytes grew", SF_RECLAIMED, 9 * MIB, false },
	{ "reclaimed bytes went back", SF_RECLAIMED, 8 * MIB - 4096, true },
};

ParameterizedTestParameters(session_pure, went_back)
{
	return cr_make_param_array(struct went_back_case, went_back_cases,
				   G_N_ELEMENTS(went_back_cases));
}

ParameterizedTest(struct went_back_case *c, session_pure, went_back)
{
	struct vr_agent_stats now = base_stats;
	uint64_t *fields[] = {
		[SF_NONE] = NULL,
		[SF_UPTIME] = &now.uptime_ms,
		[SF_NR_TRIED] = &now.nr_tried,
		[SF_SZ_TRIED] = &now.sz_tried,
		[SF_NR_APPLIED] = &now.nr_applied,
		[SF_SZ_APPLIED] = &now.sz_applied,
		[SF_QT_EXCEEDS] = &now.qt_exceeds,
		[SF_RECLAIMER_CPU] = &now.reclaimer_cpu_us,
		[SF_AGENT_CPU] = &now.agent_cpu_us,
		[SF_COMPACTIONS] = &now.compactions,
		[SF_RECLAIMED] = &now.reclaimed_bytes,
	};

	if (fields[c->field])
		*fields[c->field] = c->value;
	cr_assert_eq(vr_agent_stats_went_back(&base_stats, &now), c->went_back, "%s: expected %s",
		     c->name, c->went_back ? "a restart" : "no restart");
}

/* ---- pure: limits ---- */

enum limit_field {
	LF_GUEST_MEM,
	LF_PHYS_END,
	LF_MAX_PENDING,
	LF_HELLO_TIMEOUT,
	LF_TIMEOUTS_IN_ROW,
	LF_LINES_PER_S,
	LF_BURST_BYTES,
	LF_BACKOFF_MAX,
};

struct limits_case {
	char name[40];
	enum limit_field field;
	uint64_t value;
	char want[40];
};

static struct limits_case limits_cases[] = {
	{ "no guest memory", LF_GUEST_MEM, 0, "guest_mem_bytes" },
	{ "physical end below memory", LF_PHYS_END, GIB - 1, "guest_phys_end_bytes" },
	{ "no pending request", LF_MAX_PENDING, 0, "max_pending" },
	{ "too many pending", LF_MAX_PENDING, 1025, "max_pending" },
	{ "no hello time", LF_HELLO_TIMEOUT, 0, "hello_timeout_ms" },
	{ "no timeouts in a row", LF_TIMEOUTS_IN_ROW, 0, "max_timeouts_in_row" },
	{ "no line rate", LF_LINES_PER_S, 0, "lines_per_s" },
	{ "byte burst below a line", LF_BURST_BYTES, VR_PROTO_MAX_LINE - 1, "burst_bytes" },
	{ "backoff cap below start", LF_BACKOFF_MAX, 10, "backoff_max_ms" },
};

ParameterizedTestParameters(session_pure, limits_refused)
{
	return cr_make_param_array(struct limits_case, limits_cases, G_N_ELEMENTS(limits_cases));
}

ParameterizedTest(struct limits_case *c, session_pure, limits_refused)
{
	struct vr_agent_session_limits l;
	g_autoptr(GError) err = NULL;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	cr_assert(vr_agent_session_limits_check(&l, NULL), "expected the defaults to pass");
	switch (c->field) {
	case LF_GUEST_MEM:
		l.guest_mem_bytes = c->value;
		break;
	case LF_PHYS_END:
		l.guest_phys_end_bytes = c->value;
		break;
	case LF_MAX_PENDING:
		l.max_pending = (guint)c->value;
		break;
	case LF_HELLO_TIMEOUT:
		l.hello_timeout_ms = (guint)c->value;
		break;
	case LF_TIMEOUTS_IN_ROW:
		l.max_timeouts_in_row = (guint)c->value;
		break;
	case LF_LINES_PER_S:
		l.lines_per_s = (guint)c->value;
		break;
	case LF_BURST_BYTES:
		l.burst_bytes = (guint)c->value;
		break;
	case LF_BACKOFF_MAX:
		l.backoff_max_ms = (guint)c->value;
		break;
	}
	cr_assert_not(vr_agent_session_limits_check(&l, &err), "%s: expected the limits refused",
		      c->name);
	cr_assert(msg_has_any(err->message, c->want), "%s: expected the message to name %s: %s",
		  c->name, c->want, err->message);

	/* vr_agent_session_new() refuses them too, naming the domain. */
	g_clear_error(&err);
	cr_assert_null(vr_agent_session_new(DOMAIN, "agent.sock", &l, &test_ops, NULL, &err),
		       "%s: expected no session", c->name);
	cr_assert(msg_has_any(err->message, DOMAIN) && msg_has_any(err->message, c->want),
		  "%s: expected the domain and %s in: %s", c->name, c->want, err->message);
}

Test(session_pure, path_too_long)
{
	struct vr_agent_session_limits l;
	g_autofree char *path = g_strnfill(200, 'a');
	g_autoptr(GError) err = NULL;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	cr_assert_null(vr_agent_session_new(DOMAIN, path, &l, &test_ops, NULL, &err),
		       "expected a 200-byte socket path to be refused");
	cr_assert_eq(err->code, VR_AGENT_SESSION_ERROR_INVALID, "expected INVALID: %s",
		     err->message);
	cr_assert(msg_names_number(err->message, 200), "expected the length in: %s", err->message);
}

/* ---- the session with the fake agent ---- */

Test(session, hello_and_call)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r = { 0 };

	start_session(&l);
	cr_assert_str_eq(ev.hello_agent, "fake-0.1", "expected ops->up to get the agent's hello");
	cr_assert_not_null(vr_agent_session_hello(session), "expected the hello while up");
	cr_assert_str_eq(vr_agent_session_hello(session)->kernel, "6.12.0-test",
			 "expected the hello's kernel");
	cr_assert_str_eq(vr_agent_session_domain(session), DOMAIN, "expected the domain's name");

	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &r);
	cr_assert_eq(r.count, 0, "expected no callback before the call returns");
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "expected the get-stats reply");
	cr_assert(r.has_reply, "expected a reply, got: %s", r.error ? r.error->message : "?");
	cr_assert_eq(r.reply.kind, VR_PROTO_MESSAGE_REPLY, "expected a REPLY");
	cr_assert_eq(r.reply.command, VR_PROTO_GET_STATS, "expected the reply to get-stats");
	cr_assert_eq(r.reply.stats.sz_applied, 20 * MIB, "expected the agent's sz_applied");

	struct vr_agent_session_counters c = counters();
	cr_assert_eq(c.lines_in, 2, "expected 2 lines in (hello, get-stats), got %" PRIu64,
		     c.lines_in);
	cr_assert_gt(c.bytes_in, 100, "expected the bytes counted, got %" PRIu64, c.bytes_in);
	cr_assert_eq(c.connects, 1, "expected one connect");
	cr_assert_eq(c.reconnects, 0, "expected no reconnect");
	cr_assert_eq(c.ups, 1, "expected one up");
	cr_assert_eq(c.refused, 0, "expected nothing refused");
	cr_assert_eq(fa->srv.requests[VR_PROTO_HELLO], 1, "expected one hello sent");
	call_result_clear(&r);
}

Test(session, error_reply)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r = { 0 };

	start_session(&l);
	call_ok(VR_PROTO_RECLAIM, CALL_TIMEOUT_MS, &r);
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "expected the reclaim call to end");
	cr_assert(r.has_reply, "expected the error reply as a reply, got: %s",
		  r.error ? r.error->message : "?");
	cr_assert_eq(r.reply.kind, VR_PROTO_MESSAGE_ERROR, "expected an ERROR kind");
	cr_assert_eq(r.reply.error.cls, VR_PROTO_ERROR_BUSY, "expected class busy, got %s",
		     vr_proto_error_class_name(r.reply.error.cls));
	cr_assert_str_eq(r.reply.error.desc, "the kernel's DAMON is in use",
			 "expected the agent's description");
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	call_result_clear(&r);
}

Test(session, slow_reply_times_out_and_late_reply_dropped)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r = { 0 };

	fa->delay_ms[VR_PROTO_GET_STATS] = 300;
	start_session(&l);
	gint64 t0 = g_get_monotonic_time();
	call_ok(VR_PROTO_GET_STATS, 100, &r);
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "expected the call to time out");
	cr_assert_geq(g_get_monotonic_time() - t0, 100 * 1000, "expected the timeout after 100 ms");
	assert_session_error(r.error, VR_AGENT_SESSION_ERROR_TIMEOUT, "100 ms", "timeout");
	cr_assert(msg_has_any(r.error->message, "get-stats"), "expected the command named: %s",
		  r.error->message);
	cr_assert(vr_agent_session_stalled(session), "expected a timed-out agent shown stalled");

	fake_loop_spin_ms(400); /* the late reply arrives */
	cr_assert_not(vr_agent_session_stalled(session),
		      "expected its late reply to end the stall");
	struct vr_agent_session_counters c = counters();
	cr_assert_eq(r.count, 1, "expected the late reply not to call back again");
	cr_assert_eq(c.late_replies, 1, "expected one late reply, got %" PRIu64, c.late_replies);
	cr_assert_eq(c.timeouts, 1, "expected one timeout, got %" PRIu64, c.timeouts);
	cr_assert_eq(c.refused, 0, "expected a late reply not to count as refused");
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	call_result_clear(&r);
}

/* The session has one deadline timer for all its calls: a call with an
 * earlier deadline than those in flight still times out on time, and one
 * with a later deadline too once the earlier ones ended (answered or not). */
Test(session, each_call_times_out_at_its_own_deadline)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result a = { 0 }, b = { 0 }, c = { 0 };
	gint64 t0, b_ms, c_ms;

	fa->delay_ms[VR_PROTO_GET_STATS] = 150;
	fa->silent = 1u << VR_PROTO_GET_REGIONS;
	start_session(&l);
	t0 = g_get_monotonic_time();
	call_ok(VR_PROTO_GET_STATS, 2000, &a);	/* answered after 150 ms */
	call_ok(VR_PROTO_GET_REGIONS, 100, &b); /* unanswered, the earliest deadline */
	call_ok(VR_PROTO_GET_REGIONS, 400, &c); /* unanswered */
	cr_assert(wait_count(&b.count, 1, WAIT_MS), "expected the 100 ms call to time out");
	b_ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert(wait_count(&a.count, 1, WAIT_MS), "expected the get-stats reply");
	cr_assert(a.has_reply, "expected get-stats answered, got: %s",
		  a.error ? a.error->message : "?");
	cr_assert(wait_count(&c.count, 1, WAIT_MS), "expected the 400 ms call to time out");
	c_ms = (g_get_monotonic_time() - t0) / 1000;
	cr_assert(b_ms >= 100 && b_ms < 400,
		  "expected the 100 ms call to end after 100 ms, before the others' deadlines; "
		  "it ended after %" G_GINT64_FORMAT " ms",
		  b_ms);
	cr_assert(c_ms >= 400 && c_ms < 1500,
		  "expected the 400 ms call to end after 400 ms, long before the 2000 ms "
		  "deadline of the first call; it ended after %" G_GINT64_FORMAT " ms",
		  c_ms);
	assert_session_error(b.error, VR_AGENT_SESSION_ERROR_TIMEOUT, "100 ms", "call b");
	assert_session_error(c.error, VR_AGENT_SESSION_ERROR_TIMEOUT, "400 ms", "call c");
	cr_assert_eq(counters().timeouts, 2, "expected two timeouts");
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	call_result_clear(&a);
	call_result_clear(&b);
	call_result_clear(&c);
}

/* The case of a QEMU that passes nothing after a host was killed: requests
 * go unanswered; after 3 in a row the session reconnects. */
Test(session, unanswered_requests_restart_the_session)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r[3] = { 0 };

	fa->silent = 1u << VR_PROTO_GET_STATS;
	start_session(&l);
	for (int i = 0; i < 3; i++)
		call_ok(VR_PROTO_GET_STATS, 50 + 10 * i, &r[i]);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_UNANSWERED, "3 requests",
			     "down");
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(r[i].count, 1, "expected call %d to end once", i);
		assert_session_error(r[i].error, VR_AGENT_SESSION_ERROR_TIMEOUT, "get-stats",
				     "call");
	}
	cr_assert(vr_agent_session_stalled(session),
		  "expected the session stalled after 3 timeouts");
	cr_assert(wait_count(&ev.ups, 2, WAIT_MS), "expected the session to reconnect and come up");
	cr_assert_not(vr_agent_session_stalled(session),
		      "expected hello's answer to end the stall");
	cr_assert_eq(fa->srv.accepts, 2, "expected a second connection, got %u", fa->srv.accepts);
	cr_assert_eq(counters().reconnects, 1, "expected one reconnect");
	for (int i = 0; i < 3; i++)
		call_result_clear(&r[i]);
}

Test(session, unanswered_hello_reconnects)
{
	struct vr_agent_session_limits l = test_limits();

	fa->silent = 1u << VR_PROTO_HELLO;
	l.hello_timeout_ms = 80;
	session = session_new_ok(&l);
	cr_assert(wait_count(&fa->srv.accepts, 3, WAIT_MS), "expected the session to try again");
	cr_assert_eq(ev.ups, 0, "expected the session never up");
	cr_assert_eq(ev.downs, 0, "expected no ops->down for a session that was never up");
	const char *last = vr_agent_session_last_error(session);
	cr_assert(last && msg_has_any(last, "hello") && msg_has_any(last, DOMAIN),
		  "expected the last error to name hello and the domain: %s", last ? last : "none");
	cr_assert_geq(counters().timeouts, 2, "expected the hello timeouts counted");
	cr_assert(vr_agent_session_stalled(session),
		  "expected an agent that never answers stalled");
	/* A call while not up is refused at once. */
	struct vr_proto_request req = { .command = VR_PROTO_GET_STATS };
	struct call_result r = { 0 };
	g_autoptr(GError) err = NULL;
	cr_assert_not(vr_agent_session_call(session, &req, 100, on_reply, &r, &err),
		      "expected a call to a session that is not up refused");
	assert_session_error(err, VR_AGENT_SESSION_ERROR_DOWN, "not up", "call while down");
	fake_loop_spin_ms(20);
	cr_assert_eq(r.count, 0, "expected no callback for a refused call");
}

Test(session, too_many_pending_refused_at_once)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r[3] = { 0 };
	struct vr_proto_request req = { .command = VR_PROTO_GET_STATS };
	g_autoptr(GError) err = NULL;

	l.max_pending = 2;
	fa->silent = 1u << VR_PROTO_GET_STATS;
	start_session(&l);
	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &r[0]);
	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &r[1]);
	cr_assert_not(vr_agent_session_call(session, &req, CALL_TIMEOUT_MS, on_reply, &r[2], &err),
		      "expected the third call refused with max_pending 2");
	assert_session_error(err, VR_AGENT_SESSION_ERROR_BUSY, "2 requests", "busy");
	fake_loop_spin_ms(20);
	cr_assert_eq(r[2].count, 0, "expected no callback for the refused call");
	/* free() ends the two others. */
	g_clear_pointer(&session, vr_agent_session_free);
	cr_assert_eq(r[0].count + r[1].count, 2, "expected both pending calls called back");
	for (int i = 0; i < 3; i++)
		call_result_clear(&r[i]);
}

/* Lines that break the protocol bring the session down, naming the problem. */
struct garbage_case {
	char name[40];
	char line[320]; /* '~' is sent as a NUL byte */
	char want[48];	/* '|'-separated alternatives */
};

static struct garbage_case garbage_cases[] = {
	{ "not JSON", "this is not json\n", "invalid line" },
	{ "an array", "[1,2,3]\n", "object" },
	{ "another version", "{\"vreclaim\":2,\"id\":1,\"return\":{}}\n", "vreclaim" },
	{ "no version", "{\"id\":1,\"return\":{}}\n", "vreclaim" },
	{ "an empty report", "{\"vreclaim\":1,\"report\":{}}\n", "report" },
	{ "two kinds",
	  "{\"vreclaim\":1,\"id\":1,\"return\":{},\"error\":{\"class\":\"busy\",\"desc\":\"x\"}}\n",
	  "exactly one" },
	{ "a NUL byte", "{\"vreclaim\":1,\"id\":1~,\"return\":{}}\n", "NUL" },
	{ "an escape in an error",
	  "{\"vreclaim\":1,\"id\":7,\"error\":{\"class\":\"busy\",\"desc\":\"\\u001b[2J\"}}\n",
	  "desc" },
};

ParameterizedTestParameters(session, garbage_lines)
{
	return cr_make_param_array(struct garbage_case, garbage_cases, G_N_ELEMENTS(garbage_cases));
}

ParameterizedTest(struct garbage_case *c, session, garbage_lines)
{
	struct vr_agent_session_limits l = test_limits();

	g_autofree char *line = g_strdup(c->line);
	gsize len = strlen(line);

	for (char *p = line; *p; p++)
		if (*p == '~')
			*p = '\0';
	start_session(&l);
	fake_server_send_len(&fa->srv, line, len);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "%s: expected the session to go down",
		  c->name);
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_PROTOCOL, c->want, c->name);
	cr_assert_eq(counters().refused, 1, "%s: expected the line counted as refused", c->name);
	cr_assert(wait_count(&ev.ups, 2, WAIT_MS), "%s: expected the session back up", c->name);
}

/* A reply to a pending call that breaks the rules: that call gets the
 * decoder's error (not a timeout), then the session goes down. */
Test(session, invalid_reply_fails_its_call)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r = { 0 };

	fa->canned[VR_PROTO_GET_STATS] =
		"{\"vreclaim\":1,\"id\":@ID@,\"return\":{\"backend\":\"damon\"}}\n";
	start_session(&l);
	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &r);
	cr_assert(wait_count(&r.count, 1, WAIT_MS), "expected the call to end");
	assert_session_error(r.error, VR_AGENT_SESSION_ERROR_PROTOCOL, "return.", "invalid reply");
	cr_assert(msg_has_any(r.error->message, "get-stats"), "expected the command named: %s",
		  r.error->message);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	call_result_clear(&r);
}

Test(session, oversized_line)
{
	struct vr_agent_session_limits l = test_limits();
	gsize len = VR_PROTO_MAX_LINE + 5000;
	g_autofree char *line = g_malloc(len);

	memset(line, 'x', len - 1);
	line[len - 1] = '\n';
	start_session(&l);
	fake_server_send_len(&fa->srv, line, len);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_PROTOCOL, "65536",
			     "oversized line");
}

Test(session, flood_drops_the_connection_and_backs_off)
{
	struct vr_agent_session_limits l = test_limits();
	GString *flood = g_string_new(NULL);

	l.burst_lines = 20;
	l.lines_per_s = 50;
	l.backoff_initial_ms = 200;
	start_session(&l);
	for (uint64_t seq = 0; seq < 60; seq++) {
		g_autofree char *report = vr_proto_encode_report(seq, &fa->stats);
		g_string_append(flood, report);
	}
	fake_server_send_len(&fa->srv, flood->str, flood->len);
	g_string_free(flood, TRUE);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_FLOOD, "floods", "flood");
	cr_assert_leq(ev.reports, 21, "expected at most the burst passed on, got %u", ev.reports);
	cr_assert_geq(ev.reports, 15, "expected the burst passed on, got %u", ev.reports);
	cr_assert(wait_count(&fa->srv.accepts, 2, WAIT_MS), "expected a reconnect");
	cr_assert_geq(fa->accept_us[1] - ev.down_us[0], 200 * 1000 - WAIT_SLACK_US,
		      "expected the reconnect to wait the backoff of 200 ms, it waited %" PRId64
		      " us",
		      fa->accept_us[1] - ev.down_us[0]);
}

Test(session, byte_flood_of_blank_lines)
{
	struct vr_agent_session_limits l = test_limits();
	gsize len = 3 * VR_PROTO_MAX_LINE;
	g_autofree char *blanks = g_malloc(len);

	l.bytes_per_s = 1000;
	l.burst_bytes = VR_PROTO_MAX_LINE;
	memset(blanks, '\n', len);
	start_session(&l);
	fake_server_send_len(&fa->srv, blanks, len);
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_FLOOD, "bytes/s", "byte flood");
}

Test(session, unknown_ids_counted_then_down)
{
	struct vr_agent_session_limits l = test_limits();

	l.max_refused = 3;
	start_session(&l);
	fake_send("{\"vreclaim\":1,\"id\":777,\"return\":{}}\n");
	fake_send("{\"vreclaim\":1,\"id\":778,\"error\":{\"class\":\"busy\",\"desc\":\"no\"}}\n");
	fake_send("{\"vreclaim\":1,\"id\":null,\"error\":{\"class\":\"syntax\",\"desc\":\"?\"}}\n");
	fake_loop_spin_ms(100);
	struct vr_agent_session_counters c = counters();
	cr_assert_eq(c.refused, 3, "expected 3 refused, got %" PRIu64, c.refused);
	cr_assert_eq(c.refused_stray, 2, "expected 2 replies to no request, got %" PRIu64,
		     c.refused_stray);
	cr_assert(vr_agent_session_is_up(session), "expected the session up within max_refused");
	cr_assert_eq(ev.downs, 0, "expected no down yet");
	const char *last = vr_agent_session_last_error(session);
	cr_assert(last && msg_has_any(last, "not in flight|could not read"),
		  "expected the last error to say what was refused: %s", last ? last : "none");

	fake_send("{\"vreclaim\":1,\"id\":779,\"return\":{}}\n");
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the session to go down");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_REFUSED, "refused",
			     "too many strays");
	cr_assert(msg_has_any(ev.down_error->message, "779"), "expected the last stray named: %s",
		  ev.down_error->message);
}

Test(session, peer_closing_reconnects_with_backoff)
{
	struct vr_agent_session_limits l = test_limits();

	l.backoff_initial_ms = 150;
	l.backoff_max_ms = 1000;
	fa->close_after_hello = TRUE;
	session = session_new_ok(&l);
	cr_assert(wait_count(&ev.downs, 3, WAIT_MS), "expected the session to go down 3 times");
	assert_session_error(ev.down_error, VR_AGENT_SESSION_ERROR_CLOSED, "closed", "closed");
	cr_assert_geq(fa->srv.accepts, 3, "expected 3 connections");
	/* Each session was up for less than stable_ms: the wait doubles. */
	gint64 wait1 = fa->accept_us[1] - ev.down_us[0];
	gint64 wait2 = fa->accept_us[2] - ev.down_us[1];
	cr_assert_geq(wait1, 150 * 1000 - WAIT_SLACK_US,
		      "expected the first wait of 150 ms, got %" PRId64 " us", wait1);
	cr_assert_geq(wait2, 300 * 1000 - WAIT_SLACK_US,
		      "expected the second wait of 300 ms, got %" PRId64 " us", wait2);
	cr_assert_eq(ev.ups, 3, "expected up and down to alternate (3 ups), got %u", ev.ups);
	cr_assert_eq(counters().downs, 3, "expected 3 downs counted");
}

Test(session, reports_gaps_and_agent_restart)
{
	struct vr_agent_session_limits l = test_limits();
	static const uint64_t seqs[] = { 0, 1, 4 };

	start_session(&l);
	for (guint i = 0; i < G_N_ELEMENTS(seqs); i++) {
		fa->stats.uptime_ms += 1000;
		fa->stats.sz_applied += MIB;
		g_autofree char *report = vr_proto_encode_report(seqs[i], &fa->stats);
		fake_send(report);
	}
	cr_assert(wait_count(&ev.reports, 3, WAIT_MS), "expected 3 reports");
	cr_assert_eq(ev.seqs[2], 4, "expected the seq passed on");
	cr_assert_eq(counters().reports_lost, 2, "expected reports 2 and 3 counted as lost");
	cr_assert_eq(ev.restarts, 0, "expected no restart yet");

	/* The agent restarts: its uptime and counters start over. */
	uint64_t last_uptime = fa->stats.uptime_ms;
	fa->stats.uptime_ms = 10;
	fa->stats.sz_applied = 0;
	fa->stats.nr_applied = 0;
	g_autofree char *report = vr_proto_encode_report(0, &fa->stats);
	fake_send(report);
	cr_assert(wait_count(&ev.reports, 4, WAIT_MS), "expected the 4th report");
	cr_assert_eq(ev.restarts, 1, "expected the restart told");
	cr_assert_eq(ev.restart_last.uptime_ms, last_uptime,
		     "expected the last stats of the old run (uptime %" PRIu64 "), got %" PRIu64,
		     last_uptime, ev.restart_last.uptime_ms);
	cr_assert_eq(ev.restart_now.uptime_ms, 10, "expected the new run's stats");
	cr_assert_eq(counters().agent_restarts, 1, "expected one restart counted");
	cr_assert_eq(counters().reports_lost, 2, "expected no loss from the restart at seq 0");
}

/* A guest fakes restarts at will (its counters going back): each is told to
 * the daemon, but the message is logged once per warn_interval_ms, the
 * others counted (issue 16). */
Test(session, faked_restarts_are_logged_rate_limited)
{
	struct vr_agent_session_limits l = test_limits();

	start_session(&l);
	for (guint i = 0; i < 20; i++) {
		fa->stats.uptime_ms = i % 2 ? 10 : 100000;
		g_autofree char *report = vr_proto_encode_report(i % 2 ? 0 : i, &fa->stats);
		fake_send(report);
	}
	cr_assert(wait_count(&ev.reports, 20, WAIT_MS), "expected 20 reports, got %u", ev.reports);
	cr_assert_eq(ev.restarts, 10, "expected every restart told, got %u", ev.restarts);
	cr_assert_eq(counters().agent_restarts, 10);
	cr_assert_eq(counters().log_suppressed, 9,
		     "expected 1 of 10 restart messages logged, 9 held back; got %" PRIu64,
		     counters().log_suppressed);
}

/* free() with calls pending: each is called back once, with CANCELLED,
 * before free() returns; nothing is called afterwards. */
Test(session, free_with_pending_calls)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result r[2] = { 0 };

	fa->silent = 1u << VR_PROTO_GET_STATS;
	fa->delay_ms[VR_PROTO_GET_REGIONS] = 50;
	start_session(&l);
	call_ok(VR_PROTO_GET_STATS, 100, &r[0]);
	call_ok(VR_PROTO_GET_REGIONS, 100, &r[1]);
	g_clear_pointer(&session, vr_agent_session_free);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(r[i].count, 1, "expected call %d called back during free()", i);
		assert_session_error(r[i].error, VR_AGENT_SESSION_ERROR_CANCELLED, "freed", "free");
	}
	fake_loop_spin_ms(200); /* past the timeouts and the delayed reply */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(r[i].count, 1, "expected nothing after free() for call %d", i);
	cr_assert_eq(ev.downs, 0, "expected free() not to call ops->down");
	for (int i = 0; i < 2; i++)
		call_result_clear(&r[i]);
}

/* A reply callback frees the session: the other pending call is cancelled
 * inside that free(), and nothing runs afterwards (ASan checks the rest). */
Test(session, free_from_a_callback)
{
	struct vr_agent_session_limits l = test_limits();
	struct call_result first = { .free_session = TRUE }, second = { 0 };

	fa->silent = 1u << VR_PROTO_GET_STATS;
	fa->stats.uptime_ms = 1;
	start_session(&l);
	call_ok(VR_PROTO_RECLAIM, CALL_TIMEOUT_MS, &first);
	call_ok(VR_PROTO_GET_STATS, CALL_TIMEOUT_MS, &second);
	cr_assert(wait_count(&first.count, 1, WAIT_MS), "expected the reclaim reply");
	cr_assert_null(session, "expected the callback to have freed the session");
	cr_assert_eq(second.count, 1, "expected the other call cancelled by the free()");
	assert_session_error(second.error, VR_AGENT_SESSION_ERROR_CANCELLED, "freed", "second");
	fake_loop_spin_ms(100);
	cr_assert_eq(first.count + second.count, 2, "expected nothing more");
	call_result_clear(&first);
	call_result_clear(&second);
}

Test(session, free_from_ops_up)
{
	struct vr_agent_session_limits l = test_limits();

	ev.free_in_up = TRUE;
	session = session_new_ok(&l);
	cr_assert(wait_count(&ev.ups, 1, WAIT_MS), "expected the session up");
	cr_assert_null(session, "expected ops->up to have freed the session");
	/* A report after the free goes nowhere. */
	g_autofree char *report = vr_proto_encode_report(0, &fa->stats);
	if (fa->srv.fd >= 0)
		fake_send(report);
	fake_loop_spin_ms(100);
	cr_assert_eq(ev.reports, 0, "expected nothing after free()");
	cr_assert_eq(ev.downs, 0, "expected no ops->down after free()");
}

/* Warnings are rate-limited per kind; every message names the domain and
 * carries none of the guest's control characters. */
static struct {
	guint warnings;
	guint messages;
	bool control_char;
	bool no_domain;
} logs;

static void on_log(const char *log_domain, GLogLevelFlags level, const char *message, gpointer data)
{
	(void)log_domain;
	(void)data;
	if (level & G_LOG_LEVEL_WARNING)
		logs.warnings++;
	logs.messages++;
	for (const char *p = message; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			logs.control_char = true;
	if (!strstr(message, "domain " DOMAIN))
		logs.no_domain = true;
}

Test(session, warnings_rate_limited_and_clean)
{
	struct vr_agent_session_limits l = test_limits();

	g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
	g_log_set_handler("vreclaim-host", G_LOG_LEVEL_MASK, on_log, NULL);
	l.max_refused = 100;
	start_session(&l);
	for (int i = 0; i < 6; i++) {
		g_autofree char *stray =
			g_strdup_printf("{\"vreclaim\":1,\"id\":%d,\"return\":{}}\n", 900 + i);
		fake_send(stray);
	}
	/* A raw line with an escape sequence and a byte that is not UTF-8. */
	fake_send("{\"vreclaim\":1,\"junk\":\"\x1b[2J\xff\"}\n");
	cr_assert(wait_count(&ev.downs, 1, WAIT_MS), "expected the bad line to end the session");
	cr_assert_eq(counters().refused_stray, 6, "expected 6 strays counted");
	cr_assert_eq(logs.warnings, 2,
		     "expected one warning for the strays and one for the bad line, got %u",
		     logs.warnings);
	cr_assert_gt(logs.messages, 5, "expected debug and other messages captured");
	cr_assert_not(logs.control_char, "expected no control character in any log message");
	cr_assert_not(logs.no_domain, "expected every message to name the domain");
}

/* The socket does not exist yet; libvirt creates it when the domain starts. */
Test(session_later, socket_appears_later, .init = setup_no_socket, .fini = teardown)
{
	struct vr_agent_session_limits l = test_limits();
	struct vr_proto_request req = { .command = VR_PROTO_GET_STATS };
	struct call_result r = { 0 };
	g_autoptr(GError) err = NULL;

	l.backoff_initial_ms = 40;
	l.backoff_max_ms = 160;
	session = session_new_ok(&l);
	fake_loop_spin_ms(300);
	cr_assert_eq(ev.ups, 0, "expected no session without a socket");
	cr_assert_geq(counters().connect_failures, 3,
		      "expected connects retried with backoff, got %" PRIu64,
		      counters().connect_failures);
	const char *last = vr_agent_session_last_error(session);
	cr_assert(last && msg_has_any(last, fa->srv.path) && msg_has_any(last, DOMAIN),
		  "expected the last error to name the socket and the domain: %s",
		  last ? last : "none");
	cr_assert_not(vr_agent_session_call(session, &req, 100, on_reply, &r, &err),
		      "expected a call refused while there is no session");
	assert_session_error(err, VR_AGENT_SESSION_ERROR_DOWN, "not up", "no socket");

	fake_server_listen(&fa->srv);
	cr_assert(wait_count(&ev.ups, 1, WAIT_MS),
		  "expected the session up once the socket exists");
	cr_assert_eq(counters().connects, 1, "expected one connection");
}

Test(session_later, kick_connects_at_once, .init = setup_no_socket, .fini = teardown)
{
	struct vr_agent_session_limits l = test_limits();

	l.backoff_initial_ms = 10000;
	l.backoff_max_ms = 10000;
	session = session_new_ok(&l);
	fake_loop_spin_ms(50);
	cr_assert_eq(counters().connect_failures, 1, "expected one failed connect");
	fake_server_listen(&fa->srv);
	fake_loop_spin_ms(100);
	cr_assert_eq(ev.ups, 0, "expected the session still waiting its 10 s backoff");
	vr_agent_session_kick(session);
	cr_assert(wait_count(&ev.ups, 1, 1000), "expected the kick to connect at once");
}
