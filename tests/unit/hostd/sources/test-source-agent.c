/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the "agent" access source (hostd/sources/source-agent.c): the
 * picture is the last one the guest agent sent over a real session
 * (hostd/agent/agent-session.c) with a fake agent, a unix socket server in a
 * temporary folder that runs on the test's own main loop (the thread-default
 * context the session runs on too).
 *
 * The fake agent answers hello, and get-regions with the picture the test
 * set, an error reply, or a line that breaks the protocol. It can hold its
 * get-regions replies back until the test releases them one by one, so a
 * test decides exactly when a reply reaches the source (after a forget, a
 * stop, a free of the source or of the session).
 *
 * A reply reached the session when its count of lines read went up: the
 * session hands a line to its call in the same dispatch that counts it.
 *
 * Criterion runs every test in its own process: parameter structs hold no
 * pointers (fixed arrays only).
 */
#define _GNU_SOURCE /* accept4 in test-fake-agent.h */

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "agent/agent-session.h"
#include "protocol.h"
#include "sources/access-source.h"
#include "test-access-source.h"
#include "test-fake-agent.h"
#include "test-messages.h"

/* Under AddressSanitizer each test ends with a leak check of its own
 * (end_test()): the report LeakSanitizer makes when a worker exits comes
 * after Criterion has counted the test as passed, and an assertion in a
 * .fini does not fail the test either. */
#if defined(__SANITIZE_ADDRESS__)
#define SRCAG_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SRCAG_LEAK_CHECK 1
#endif
#endif
#ifdef SRCAG_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

#define MIB		(1024ULL * 1024)
#define GIB		(1024ULL * MIB)
#define GUEST_MEM	GIB
#define DOMAIN		"srcag-vm"
#define WAIT_MS		3000 /* the most a test waits for one event */
#define CALL_TIMEOUT_MS 2500 /* longer than any hold of a reply in these tests */
#define QUIET_MS	100  /* how long "nothing more happens" is watched */

/* ---- the fake agent ---- */

/* How the fake agent answers get-regions. */
enum regions_mode {
	REGIONS_PICTURE,	/* fa->regions with fa->sample_us / fa->aggr_us */
	REGIONS_ERROR,		/* an error reply: the agent refuses */
	REGIONS_OVERLAP,	/* a line whose two regions overlap */
	REGIONS_UNSORTED,	/* a line whose regions go backwards */
	REGIONS_HOT_ABOVE_AGGR, /* nr_accesses above aggr / sample */
	REGIONS_SAMPLE_ZERO,	/* sample_interval_us 0 */
};

#define AGENT_ERROR_DESC "DAMON is not running in the guest"

/**
 * struct fake_agent - the guest agent these tests play, on the shared
 * transport (test-fake-agent.h).
 * @srv:		the socket server.
 * @mode:		how get-regions is answered.
 * @sample_us, @aggr_us, @regions: the picture of REGIONS_PICTURE.
 * @hold:		keep get-regions replies in @held until released.
 * @held:		the held reply lines (char *), oldest first.
 * @cold_cap:	its hello has the "cold-histogram" capability.
 * @hist:	what it answers get-cold-histogram with.
 */
struct fake_agent {
	struct fake_agent_server srv;
	enum regions_mode mode;
	uint64_t sample_us;
	uint64_t aggr_us;
	GArray *regions;
	gboolean hold;
	GPtrArray *held;
	gboolean cold_cap;
	struct vr_proto_cold_hist hist;
};

static struct fake_agent *fa;

/* Write @line on the connection, if there still is one (the session may
 * have dropped it: the line is then lost). */
static void fake_write(const char *line)
{
	if (fa->srv.fd >= 0)
		fake_server_send(&fa->srv, line);
}

/* A reply to request @id that breaks the rules of a picture, as a raw line. */
static char *fake_bad_regions_line(uint32_t id, enum regions_mode mode)
{
	const char *ret = NULL;

	switch (mode) {
	case REGIONS_OVERLAP:
		ret = "{\"sample_interval_us\":5000,\"aggr_interval_us\":100000,\"regions\":["
		      "{\"start\":0,\"end\":8192,\"nr_accesses\":1,\"age\":2},"
		      "{\"start\":4096,\"end\":16384,\"nr_accesses\":0,\"age\":3}]}";
		break;
	case REGIONS_UNSORTED:
		ret = "{\"sample_interval_us\":5000,\"aggr_interval_us\":100000,\"regions\":["
		      "{\"start\":65536,\"end\":131072,\"nr_accesses\":1,\"age\":2},"
		      "{\"start\":0,\"end\":4096,\"nr_accesses\":0,\"age\":3}]}";
		break;
	case REGIONS_HOT_ABOVE_AGGR:
		ret = "{\"sample_interval_us\":5000,\"aggr_interval_us\":100000,\"regions\":["
		      "{\"start\":0,\"end\":4096,\"nr_accesses\":21,\"age\":0}]}";
		break;
	case REGIONS_SAMPLE_ZERO:
		ret = "{\"sample_interval_us\":0,\"aggr_interval_us\":100000,\"regions\":["
		      "{\"start\":0,\"end\":4096,\"nr_accesses\":0,\"age\":0}]}";
		break;
	default:
		cr_assert_fail("not a bad picture mode: %d", mode);
	}
	return g_strdup_printf("{\"vreclaim\":1,\"id\":%u,\"return\":%s}\n", id, ret);
}

static char *fake_regions_reply(uint32_t id)
{
	switch (fa->mode) {
	case REGIONS_PICTURE: {
		struct vr_proto_regions r = {
			.sample_interval_us = fa->sample_us,
			.aggr_interval_us = fa->aggr_us,
			.regions = fa->regions,
		};
		return vr_proto_encode_regions(id, &r);
	}
	case REGIONS_ERROR:
		return vr_proto_encode_error(id, VR_PROTO_ERROR_FAILED, AGENT_ERROR_DESC);
	default:
		return fake_bad_regions_line(id, fa->mode);
	}
}

static void fake_on_request(struct fake_agent_server *srv, const struct vr_proto_request *req)
{
	char *reply;

	(void)srv;
	if (req->command == VR_PROTO_HELLO) {
		const struct vr_proto_hello hello = {
			.version = 1,
			.agent = "srcag-fake",
			.kernel = "6.12.0-srcag",
			.backends = { "damon" },
			.nr_backends = 1,
			.backend = "damon",
			.cold_histogram = fa->cold_cap,
		};
		reply = vr_proto_encode_hello(req->id, &hello);
	} else if (req->command == VR_PROTO_GET_COLD_HIST) {
		reply = vr_proto_encode_cold_hist(req->id, &fa->hist);
	} else if (req->command == VR_PROTO_GET_REGIONS) {
		reply = fake_regions_reply(req->id);
		if (fa->hold) {
			g_ptr_array_add(fa->held, reply);
			return;
		}
	} else {
		reply = vr_proto_encode_empty(req->id);
	}
	fake_write(reply);
	g_free(reply);
}

/* Held replies belong to the old connection's requests. */
static void fake_on_accept(struct fake_agent_server *srv)
{
	(void)srv;
	g_ptr_array_set_size(fa->held, 0);
}

static void fake_new(void)
{
	fa = g_new0(struct fake_agent, 1);
	fake_server_init(&fa->srv, "vr-srcag-XXXXXX", fake_on_request);
	fa->srv.on_accept = fake_on_accept;
	fa->sample_us = 5000;
	fa->aggr_us = 100000;
	fa->regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	fa->held = g_ptr_array_new_with_free_func(g_free);
}

static void fake_free(void)
{
	if (!fa)
		return;
	fake_server_clear(&fa->srv);
	g_ptr_array_unref(fa->held);
	g_array_unref(fa->regions);
	g_clear_pointer(&fa, g_free);
}

/* The picture of REGIONS_PICTURE: @n regions of @regs. */
static void fake_set_picture(uint64_t sample_us, uint64_t aggr_us,
			     const struct vr_picture_region *regs, guint n)
{
	fa->mode = REGIONS_PICTURE;
	fa->sample_us = sample_us;
	fa->aggr_us = aggr_us;
	g_array_set_size(fa->regions, 0);
	g_array_append_vals(fa->regions, regs, n);
}

/* ---- the session and the source ---- */

static struct vr_agent_session *session;
static struct vr_access_source *src;

static uint64_t session_lines(void)
{
	struct vr_agent_session_counters c;

	vr_agent_session_counters(session, &c);
	return c.lines_in;
}

static gboolean session_up(gconstpointer arg)
{
	(void)arg;
	return vr_agent_session_is_up(session);
}

static gboolean lines_reached(gconstpointer arg)
{
	return session_lines() >= *(const uint64_t *)arg;
}

static gboolean regions_requests_reached(gconstpointer arg)
{
	return fa->srv.requests[VR_PROTO_GET_REGIONS] >= *(const guint *)arg;
}

static void session_start(void)
{
	struct vr_agent_session_limits l;
	g_autoptr(GError) err = NULL;

	vr_agent_session_limits_init(&l, GUEST_MEM);
	l.hello_timeout_ms = 2000;
	l.backoff_initial_ms = 20;
	l.backoff_max_ms = 100;
	session = vr_agent_session_new(DOMAIN, fa->srv.path, &l, NULL, NULL, &err);
	cr_assert_not_null(session, "expected a session, got: %s", err ? err->message : "NULL");
}

static void wait_session_up(void)
{
	cr_assert(fake_loop_run_until(session_up, NULL, WAIT_MS),
		  "expected the session to come up; last error: %s",
		  vr_agent_session_last_error(session) ? vr_agent_session_last_error(session) :
							 "none");
}

/* A stopped agent source on the session, with @timeout_ms per call. */
static struct vr_access_source *agent_source_new(guint timeout_ms)
{
	g_autoptr(GError) err = NULL;
	struct vr_access_source *s = vr_access_source_new_agent(session, timeout_ms, &err);

	cr_assert_not_null(s, "expected an agent source, got: %s", err ? err->message : "NULL");
	cr_assert_str_eq(vr_access_source_name(s), "agent");
	cr_assert_not(vr_access_source_is_started(s), "a new source should be stopped");
	return s;
}

static void refresh_ok(struct vr_access_source *s, const char *what)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_agent_refresh(s, &err), "%s: expected refresh to work, got: %s",
		  what, err ? err->message : "FALSE without an error");
	cr_assert_null(err, "%s: refresh returned TRUE with an error", what);
}

/* Wait until the session has read line number @lines. */
static void wait_lines(uint64_t lines, const char *what)
{
	cr_assert(fake_loop_run_until(lines_reached, &lines, WAIT_MS),
		  "%s: expected the session to read the reply (%" G_GUINT64_FORMAT
		  " lines, it has %" G_GUINT64_FORMAT ")",
		  what, lines, session_lines());
}

/* Wait until get-regions number @n reached the fake agent. */
static void wait_requests(guint n, const char *what)
{
	cr_assert(fake_loop_run_until(regions_requests_reached, &n, WAIT_MS),
		  "%s: expected get-regions number %u to reach the agent (it got %u)", what, n,
		  fa->srv.requests[VR_PROTO_GET_REGIONS]);
}

/* Refresh and wait until the reply reached the session (and the source). */
static void refresh_and_wait(struct vr_access_source *s, const char *what)
{
	uint64_t lines = session_lines();

	refresh_ok(s, what);
	wait_lines(lines + 1, what);
}

/* Send held reply @i (0: the oldest) and wait until the session read it. */
static void release_nth_and_wait(guint i, const char *what)
{
	uint64_t lines = session_lines();

	cr_assert_gt(fa->held->len, i, "%s: the agent holds no reply %u to release", what, i);
	char *line = g_ptr_array_steal_index(fa->held, i);
	fake_write(line);
	g_free(line);
	wait_lines(lines + 1, what);
}

static void release_and_wait(const char *what)
{
	release_nth_and_wait(0, what);
}

/* The source's picture is @n regions of @want with these intervals. */
static void expect_picture(struct vr_access_source *s, uint64_t sample_us, uint64_t aggr_us,
			   const struct vr_picture_region *want, guint n, const char *what)
{
	g_auto(vr_proto_regions) got = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_agent_has_picture(s), "%s: expected a picture", what);
	cr_assert(vr_access_source_get_regions(s, &got, &err),
		  "%s: expected get_regions to work, got: %s", what,
		  err ? err->message : "FALSE without an error");
	cr_assert_eq(got.sample_interval_us, sample_us, "%s: sample interval %" G_GUINT64_FORMAT,
		     what, got.sample_interval_us);
	cr_assert_eq(got.aggr_interval_us, aggr_us, "%s: aggregation interval %" G_GUINT64_FORMAT,
		     what, got.aggr_interval_us);
	guint nr = got.regions ? got.regions->len : 0;
	cr_assert_eq(nr, n, "%s: expected %u regions, got %u", what, n, nr);
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *r =
			&g_array_index(got.regions, struct vr_picture_region, i);

		cr_assert(r->start == want[i].start && r->end == want[i].end &&
				  r->nr_accesses == want[i].nr_accesses && r->age == want[i].age,
			  "%s: region %u is [%#" G_GINT64_MODIFIER "x, %#" G_GINT64_MODIFIER
			  "x) nr %u age %u, expected [%#" G_GINT64_MODIFIER
			  "x, %#" G_GINT64_MODIFIER "x) nr %u age %u",
			  what, i, (guint64)r->start, (guint64)r->end, r->nr_accesses, r->age,
			  (guint64)want[i].start, (guint64)want[i].end, want[i].nr_accesses,
			  want[i].age);
	}
}

/* The source holds no picture: get_regions says so (STATE, naming the domain). */
static void expect_no_picture(struct vr_access_source *s, const char *what)
{
	g_auto(vr_proto_regions) got = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_access_source_agent_has_picture(s), "%s: expected no picture", what);
	cr_assert_not(vr_access_source_get_regions(s, &got, &err),
		      "%s: expected get_regions to fail without a picture", what);
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, DOMAIN ";no picture", what);
	cr_assert_null(got.regions, "%s: a failed get_regions should leave no regions", what);
	cr_assert_eq(got.sample_interval_us, 0, "%s: a failed get_regions should clear", what);
}

/* Pictures of the tests; nr_accesses <= aggr / sample of each. */
static const struct vr_picture_region picture_a[] = {
	{ .start = 0, .end = 64 * MIB, .nr_accesses = 0, .age = 40 },
	{ .start = 64 * MIB, .end = 96 * MIB, .nr_accesses = 17, .age = 3 },
	{ .start = 512 * MIB, .end = 516 * MIB + 4096, .nr_accesses = 20, .age = 0 },
};

static const struct vr_picture_region picture_b[] = {
	{ .start = 4096, .end = 2 * MIB, .nr_accesses = 9, .age = 1 },
	{ .start = 900 * MIB, .end = GIB, .nr_accesses = 1, .age = 77 },
};

static const struct vr_picture_region picture_c[] = {
	{ .start = 128 * MIB, .end = 256 * MIB, .nr_accesses = 5, .age = 12 },
};

static void setup(void)
{
	fake_new();
	fake_server_listen(&fa->srv);
	session_start();
	wait_session_up();
}

/* A session whose socket is not there (yet): it is never up. */
static void setup_no_agent(void)
{
	fake_new();
	session_start();
}

static void free_all(void)
{
	g_clear_pointer(&src, vr_access_source_free);
	g_clear_pointer(&session, vr_agent_session_free);
	fake_free();
}

/* What a test that got to its end calls last: everything freed (the
 * source first, as the daemon does), then, under AddressSanitizer, nothing
 * may be left unreachable. */
static void end_test(void)
{
	free_all();
#ifdef SRCAG_LEAK_CHECK
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,
		     "LeakSanitizer found memory leaked by the test (its report is above)");
#endif
}

/* After a test that failed before its end. */
static void teardown(void)
{
	free_all();
}

/* The agent has the "cold-histogram" capability. */
static void setup_cold(void)
{
	fake_new();
	fa->cold_cap = TRUE;
	fa->hist = (struct vr_proto_cold_hist){
		.generation = 4,
		.sample_interval_us = 5000,
		.aggr_interval_us = 100000,
		.nr_regions = 3,
	};
	fa->hist.bytes[VR_MAX_SCORE] = 64 * MIB;
	fa->hist.bytes[10] = 8 * MIB;
	fake_server_listen(&fa->srv);
	session_start();
	wait_session_up();
}

TestSuite(agent_source, .init = setup, .fini = teardown);
TestSuite(agent_source_cold, .init = setup_cold, .fini = teardown);
TestSuite(agent_source_down, .init = setup_no_agent, .fini = teardown);

/* ---- 1. arguments ---- */

Test(agent_source_down, new_without_session_refused)
{
	g_autoptr(GError) err = NULL;

	src = vr_access_source_new_agent(NULL, 1000, &err);
	cr_assert_null(src, "expected no source without a session");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_INVALID, "session", "no session");
	end_test();
}

Test(agent_source_down, new_with_timeout_0_refused)
{
	g_autoptr(GError) err = NULL;

	src = vr_access_source_new_agent(session, 0, &err);
	cr_assert_null(src, "expected no source with a timeout of 0");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_INVALID, "timeout", "timeout 0");
	end_test();
}

Test(agent_source_down, new_with_timeout_1_is_fine)
{
	src = agent_source_new(1);
	cr_assert_not(vr_access_source_agent_has_picture(src), "a new source has no picture");
	end_test();
}

/* ---- 2. no picture before the first reply ---- */

Test(agent_source, no_picture_before_the_first_reply)
{
	g_auto(vr_proto_regions) got = { 0 };
	g_autoptr(GError) err = NULL;

	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	cr_assert_not(vr_access_source_get_regions(src, &got, &err),
		      "expected get_regions to fail before start");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, "not started", "before start");
	start_ok(src);
	expect_no_picture(src, "started, nothing asked");

	fa->hold = TRUE;
	refresh_ok(src, "first refresh");
	wait_requests(1, "first refresh");
	expect_no_picture(src, "request under way, no reply yet");
	end_test();
}

/* ---- 3. the agent's picture, as a copy ---- */

Test(agent_source, refresh_gives_the_agents_picture)
{
	g_auto(vr_proto_regions) first = { 0 };
	g_autoptr(GError) err = NULL;

	fake_set_picture(2000, 40000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	refresh_and_wait(src, "refresh");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1, "expected one get-regions");
	expect_picture(src, 2000, 40000, picture_a, G_N_ELEMENTS(picture_a), "the reply");

	/* The caller's copy is its own: changing it changes nothing kept. */
	cr_assert(vr_access_source_get_regions(src, &first, &err), "get_regions: %s",
		  err ? err->message : "?");
	g_array_index(first.regions, struct vr_picture_region, 0).nr_accesses = 19;
	g_array_index(first.regions, struct vr_picture_region, 1).end = 100 * MIB;
	g_array_remove_index(first.regions, 2);
	first.sample_interval_us = 1;
	expect_picture(src, 2000, 40000, picture_a, G_N_ELEMENTS(picture_a),
		       "after the first copy was changed");

	/* And the kept one is not handed out twice. */
	g_auto(vr_proto_regions) second = { 0 };
	g_auto(vr_proto_regions) third = { 0 };
	cr_assert(vr_access_source_get_regions(src, &second, &err), "second copy");
	cr_assert(vr_access_source_get_regions(src, &third, &err), "third copy");
	cr_assert_neq(second.regions, third.regions, "two copies share one array");
	end_test();
}

/* An empty picture (the agent sees no regions yet) is a picture too. */
Test(agent_source, empty_picture_is_a_picture)
{
	fake_set_picture(5000, 5000, NULL, 0);
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	refresh_and_wait(src, "refresh");
	expect_picture(src, 5000, 5000, NULL, 0, "an empty picture");
	end_test();
}

/* ---- 4. one request at a time ---- */

Test(agent_source, refresh_while_pending_sends_nothing)
{
	fake_set_picture(5000, 100000, picture_b, G_N_ELEMENTS(picture_b));
	fa->hold = TRUE;
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	refresh_ok(src, "first refresh");
	refresh_ok(src, "second refresh, at once");
	wait_requests(1, "first refresh");
	refresh_ok(src, "third refresh, the request at the agent");
	fake_loop_spin_ms(QUIET_MS);
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1,
		     "expected one get-regions while one is under way, the agent got %u",
		     fa->srv.requests[VR_PROTO_GET_REGIONS]);

	release_and_wait("the reply");
	expect_picture(src, 5000, 100000, picture_b, G_N_ELEMENTS(picture_b), "the reply");

	/* The reply ended the request: the next refresh asks again. */
	refresh_ok(src, "refresh after the reply");
	wait_requests(2, "refresh after the reply");
	end_test();
}

/* ---- 5. a later picture replaces the earlier; failures keep it ---- */

Test(agent_source, later_picture_replaces_the_earlier)
{
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	refresh_and_wait(src, "picture a");
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), "picture a");

	fake_set_picture(1000, 9000, picture_b, G_N_ELEMENTS(picture_b));
	refresh_and_wait(src, "picture b");
	expect_picture(src, 1000, 9000, picture_b, G_N_ELEMENTS(picture_b), "picture b");

	fake_set_picture(5000, 100000, NULL, 0);
	refresh_and_wait(src, "an empty picture");
	expect_picture(src, 5000, 100000, NULL, 0, "an empty picture replaces b");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 3, "expected three get-regions");
	end_test();
}

/* Each picture that arrives has a new serial (what the daemon keeps its
 * histogram by); none without a picture. */
Test(agent_source, each_picture_has_a_new_serial)
{
	uint64_t first, second;

	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	cr_assert_eq(vr_access_source_agent_picture_serial(src), 0, "no picture: serial 0");
	cr_assert_eq(vr_access_source_agent_picture_serial(NULL), 0, "NULL: serial 0");
	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	refresh_and_wait(src, "picture a");
	first = vr_access_source_agent_picture_serial(src);
	cr_assert_neq(first, 0, "a picture has a serial");
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), "picture a");
	cr_assert_eq(vr_access_source_agent_picture_serial(src), first,
		     "reading the picture does not change its serial");
	/* The same picture again is a new arrival. */
	refresh_and_wait(src, "picture a again");
	second = vr_access_source_agent_picture_serial(src);
	cr_assert_gt(second, first, "a new picture, a new serial");
	vr_access_source_agent_forget(src);
	cr_assert_eq(vr_access_source_agent_picture_serial(src), 0, "forgotten: serial 0");
	refresh_and_wait(src, "after forget");
	cr_assert_gt(vr_access_source_agent_picture_serial(src), second,
		     "the next picture after a forget has a serial never seen");
	end_test();
}

static struct {
	guint warnings;
	bool named;
} logs;

static void on_log(const char *log_domain, GLogLevelFlags level, const char *message, gpointer data)
{
	(void)log_domain;
	(void)data;
	if (!(level & G_LOG_LEVEL_WARNING) || !strstr(message, "get-regions"))
		return;
	logs.warnings++;
	if (strstr(message, DOMAIN) && strstr(message, AGENT_ERROR_DESC))
		logs.named = true;
}

Test(agent_source, error_reply_keeps_the_picture)
{
	g_log_set_handler("vreclaim-host", G_LOG_LEVEL_WARNING, on_log, NULL);
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	refresh_and_wait(src, "picture a");

	fa->mode = REGIONS_ERROR;
	refresh_and_wait(src, "the agent's error");
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a),
		       "after an error reply");
	cr_assert_eq(logs.warnings, 1, "expected one warning for the error reply, got %u",
		     logs.warnings);
	cr_assert(logs.named, "expected the warning to name the domain and the agent's reason");

	/* The error ended the request: the next refresh asks again and works. */
	fake_set_picture(5000, 100000, picture_c, G_N_ELEMENTS(picture_c));
	refresh_and_wait(src, "picture c");
	expect_picture(src, 5000, 100000, picture_c, G_N_ELEMENTS(picture_c), "picture c");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 3, "expected three get-regions");
	end_test();
}

/* An error reply before any picture: still none. */
Test(agent_source, error_reply_before_any_picture)
{
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	fa->mode = REGIONS_ERROR;
	refresh_and_wait(src, "the agent's error");
	expect_no_picture(src, "after an error reply");
	end_test();
}

/* A timed-out request keeps the picture and lets the next refresh ask
 * again; its late reply is not taken. */
Test(agent_source, timeout_keeps_the_picture)
{
	src = agent_source_new(50);
	start_ok(src);
	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	refresh_and_wait(src, "picture a");

	fake_set_picture(5000, 100000, picture_b, G_N_ELEMENTS(picture_b));
	fa->hold = TRUE;
	refresh_ok(src, "held refresh");
	wait_requests(2, "held refresh");
	fake_loop_spin_ms(150); /* past the call's timeout */
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), "after a timeout");

	fake_set_picture(5000, 100000, picture_c, G_N_ELEMENTS(picture_c));
	refresh_ok(src, "refresh after the timeout");
	wait_requests(3, "refresh after the timeout");
	release_and_wait("the late reply (b)");
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a),
		       "a late reply is not taken");
	release_and_wait("the reply (c)");
	expect_picture(src, 5000, 100000, picture_c, G_N_ELEMENTS(picture_c), "picture c");
	end_test();
}

/* ---- 6. forget and stop drop a pending reply ---- */

enum drop_how {
	DROP_FORGET,	       /* forget() */
	DROP_STOP_START,       /* stop and start before the reply */
	DROP_STOP_REPLY_START, /* stop, the reply comes while stopped, start */
};

struct drop_case {
	char name[56];
	enum drop_how how;
	bool had_picture;
	bool new_reply_first; /* the new request's reply overtakes the old one's */
};

static struct drop_case drop_cases[] = {
	{ "forget, no picture yet", DROP_FORGET, false, false },
	{ "forget, with a picture", DROP_FORGET, true, false },
	{ "forget, the new reply first", DROP_FORGET, true, true },
	{ "stop and start, no picture yet", DROP_STOP_START, false, false },
	{ "stop and start, with a picture", DROP_STOP_START, true, false },
	{ "stop and start, the new reply first", DROP_STOP_START, false, true },
	{ "reply while stopped", DROP_STOP_REPLY_START, false, false },
	{ "reply while stopped, with a picture", DROP_STOP_REPLY_START, true, false },
};

ParameterizedTestParameters(agent_source, pending_reply_dropped)
{
	return cr_make_param_array(struct drop_case, drop_cases, G_N_ELEMENTS(drop_cases));
}

ParameterizedTest(struct drop_case *c, agent_source, pending_reply_dropped)
{
	guint asked = 0;

	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	if (c->had_picture) {
		fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
		refresh_and_wait(src, c->name);
		asked++;
	}
	fake_set_picture(5000, 100000, picture_b, G_N_ELEMENTS(picture_b));
	fa->hold = TRUE;
	refresh_ok(src, c->name);
	wait_requests(++asked, c->name);

	switch (c->how) {
	case DROP_FORGET:
		vr_access_source_agent_forget(src);
		cr_assert(vr_access_source_is_started(src), "%s: forget does not stop", c->name);
		break;
	case DROP_STOP_START:
		vr_access_source_stop(src);
		start_ok(src);
		break;
	case DROP_STOP_REPLY_START:
		vr_access_source_stop(src);
		cr_assert_not(vr_access_source_agent_has_picture(src),
			      "%s: a stopped source keeps no picture", c->name);
		release_and_wait(c->name);
		cr_assert_not(vr_access_source_agent_has_picture(src),
			      "%s: a reply to a stopped source is not kept", c->name);
		start_ok(src);
		break;
	}
	expect_no_picture(src, c->name);

	/* A new request goes out at once (the old one no longer counts), and
	 * only its reply is taken, whichever of the two comes first. */
	fake_set_picture(5000, 100000, picture_c, G_N_ELEMENTS(picture_c));
	refresh_ok(src, c->name);
	wait_requests(++asked, c->name);
	if (c->how == DROP_STOP_REPLY_START) {
		release_and_wait(c->name);
	} else if (c->new_reply_first) {
		release_nth_and_wait(1, c->name);
		expect_picture(src, 5000, 100000, picture_c, G_N_ELEMENTS(picture_c), c->name);
		release_and_wait(c->name); /* the old reply, late */
	} else {
		release_and_wait(c->name);
		expect_no_picture(src, c->name);
		release_and_wait(c->name);
	}
	expect_picture(src, 5000, 100000, picture_c, G_N_ELEMENTS(picture_c), c->name);
	end_test();
}

/* ---- 7. the source freed with a request under way ---- */

Test(agent_source, free_pending_then_reply)
{
	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	refresh_and_wait(src, "picture a");
	fa->hold = TRUE;
	refresh_ok(src, "held refresh");
	wait_requests(2, "held refresh");
	g_clear_pointer(&src, vr_access_source_free);

	release_and_wait("the reply after the free");
	fake_loop_spin_ms(QUIET_MS);
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	end_test();
}

Test(agent_source, free_pending_then_session_freed)
{
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	fa->hold = TRUE;
	refresh_ok(src, "held refresh");
	wait_requests(1, "held refresh");
	g_clear_pointer(&src, vr_access_source_free);
	g_clear_pointer(&session, vr_agent_session_free); /* cancels the call */
	fake_loop_spin_ms(QUIET_MS);
	end_test();
}

Test(agent_source, free_stopped_pending_then_timeout)
{
	src = agent_source_new(30);
	start_ok(src);
	fa->hold = TRUE;
	refresh_ok(src, "held refresh");
	wait_requests(1, "held refresh");
	vr_access_source_stop(src);
	g_clear_pointer(&src, vr_access_source_free);
	fake_loop_spin_ms(QUIET_MS); /* the call times out on the freed source */
	cr_assert(vr_agent_session_is_up(session), "expected the session to stay up");
	end_test();
}

/* ---- 8. the session freed first ---- */

struct order_case {
	char name[48];
	bool had_picture;
	bool pending;
};

static struct order_case order_cases[] = {
	{ "pending, no picture", false, true },
	{ "pending, with a picture", true, true },
	{ "nothing pending, with a picture", true, false },
};

ParameterizedTestParameters(agent_source, session_freed_first)
{
	return cr_make_param_array(struct order_case, order_cases, G_N_ELEMENTS(order_cases));
}

ParameterizedTest(struct order_case *c, agent_source, session_freed_first)
{
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	if (c->had_picture) {
		fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
		refresh_and_wait(src, c->name);
	}
	if (c->pending) {
		fa->hold = TRUE;
		refresh_ok(src, c->name);
		wait_requests(c->had_picture ? 2 : 1, c->name);
	}
	g_clear_pointer(&session, vr_agent_session_free);
	/* The cancelled call is no picture and takes none away. */
	cr_assert_eq(vr_access_source_agent_has_picture(src), c->had_picture,
		     "%s: expected the picture %s after the session's end", c->name,
		     c->had_picture ? "kept" : "still missing");
	fake_loop_spin_ms(QUIET_MS);
	vr_access_source_stop(src);
	g_clear_pointer(&src, vr_access_source_free);
	end_test();
}

/* ---- 9. pictures that break the rules ---- */

struct bad_case {
	char name[48];
	enum regions_mode mode; /* REGIONS_PICTURE: bad_regions below, a lie */
	guint nr;
	struct vr_picture_region bad_regions[2];
	bool had_picture;
	bool session_down; /* the line breaks the protocol: the session goes down */
};

static struct bad_case bad_cases[] = {
	{ "overlapping regions", REGIONS_OVERLAP, 0, { { 0 } }, false, true },
	{ "overlapping regions, with a picture", REGIONS_OVERLAP, 0, { { 0 } }, true, true },
	{ "unsorted regions", REGIONS_UNSORTED, 0, { { 0 } }, true, true },
	{ "nr_accesses above aggr / sample", REGIONS_HOT_ABOVE_AGGR, 0, { { 0 } }, true, true },
	{ "sample interval 0", REGIONS_SAMPLE_ZERO, 0, { { 0 } }, false, true },
	{ "a region beyond the guest's memory",
	  REGIONS_PICTURE,
	  1,
	  { { 0, 2 * GIB, 0, 0 } },
	  false,
	  false },
	{ "more memory than the guest has, with a picture",
	  REGIONS_PICTURE,
	  2,
	  { { 0, 512 * MIB, 1, 0 }, { 512 * MIB, GIB + 4096, 0, 0 } },
	  true,
	  false },
};

ParameterizedTestParameters(agent_source, bad_picture_refused)
{
	return cr_make_param_array(struct bad_case, bad_cases, G_N_ELEMENTS(bad_cases));
}

ParameterizedTest(struct bad_case *c, agent_source, bad_picture_refused)
{
	struct vr_agent_session_counters before, after;

	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	if (c->had_picture) {
		fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
		refresh_and_wait(src, c->name);
	}
	if (c->mode == REGIONS_PICTURE)
		fake_set_picture(5000, 100000, c->bad_regions, c->nr);
	else
		fa->mode = c->mode;
	vr_agent_session_counters(session, &before);
	refresh_and_wait(src, c->name);
	vr_agent_session_counters(session, &after);
	cr_assert_eq(after.refused, before.refused + 1,
		     "%s: expected the session to refuse the reply", c->name);
	if (!c->session_down)
		cr_assert_eq(after.refused_lies, before.refused_lies + 1,
			     "%s: expected the reply refused as a lie", c->name);

	if (c->had_picture)
		expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), c->name);
	else
		expect_no_picture(src, c->name);

	/* The source is not stuck: once the session is up again, the next
	 * good picture is taken. */
	if (c->session_down)
		wait_session_up();
	fake_set_picture(5000, 100000, picture_c, G_N_ELEMENTS(picture_c));
	refresh_and_wait(src, c->name);
	expect_picture(src, 5000, 100000, picture_c, G_N_ELEMENTS(picture_c), c->name);
	end_test();
}

/* ---- 10. refresh where it does not fit ---- */

static uint64_t zero_ns(void *data)
{
	(void)data;
	return 0;
}

Test(agent_source, refresh_on_a_sim_source)
{
	const struct vr_sim_source_config cfg = {
		.size_bytes = 64 * MIB,
		.workload = "clustered",
		.phase_us = 1000000,
		.seed = 1,
	};
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_clock clock = { .now_ns = zero_ns };
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err_stopped = NULL;

	src = vr_access_source_new_sim(&cfg, &attrs, &clock, &err);
	cr_assert_not_null(src, "expected a sim source, got: %s", err ? err->message : "?");
	cr_assert_not(vr_access_source_agent_refresh(src, &err_stopped),
		      "expected refresh of a stopped sim source to fail");
	expect_error(err_stopped, VR_ACCESS_SOURCE_ERROR_STATE, "agent", "stopped sim source");
	start_ok(src);
	cr_assert_not(vr_access_source_agent_refresh(src, &err),
		      "expected refresh of a sim source to fail");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, "not an agent", "sim source");
	cr_assert_not(vr_access_source_agent_has_picture(src), "a sim source has no agent picture");
	vr_access_source_agent_forget(src); /* nothing */
	cr_assert(vr_access_source_is_started(src), "forget must not touch a sim source");
	fake_loop_spin_ms(QUIET_MS);
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 0, "expected no get-regions sent");
	end_test();
}

Test(agent_source, null_source)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_access_source_agent_refresh(NULL, &err), "refresh(NULL) must fail");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, NULL, "NULL source");
	cr_assert_not(vr_access_source_agent_has_picture(NULL), "NULL has no picture");
	vr_access_source_agent_forget(NULL);
	end_test();
}

Test(agent_source, refresh_when_stopped)
{
	g_autoptr(GError) never_started = NULL;
	g_autoptr(GError) stopped = NULL;

	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	cr_assert_not(vr_access_source_agent_refresh(src, &never_started),
		      "expected refresh before start to fail");
	expect_error(never_started, VR_ACCESS_SOURCE_ERROR_STATE, "not started", "never started");

	start_ok(src);
	refresh_and_wait(src, "started");
	vr_access_source_stop(src);
	cr_assert_not(vr_access_source_agent_has_picture(src), "stop forgets the picture");
	cr_assert_not(vr_access_source_agent_refresh(src, &stopped),
		      "expected refresh after stop to fail");
	expect_error(stopped, VR_ACCESS_SOURCE_ERROR_STATE, "not started", "stopped");
	fake_loop_spin_ms(QUIET_MS);
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1,
		     "expected only the started source's get-regions");
	end_test();
}

/* The session refuses at once (not up): refresh fails with its error, and
 * nothing stays "under way": once the agent is there, refresh asks. */
Test(agent_source_down, refresh_while_the_session_is_down)
{
	g_autoptr(GError) err = NULL;

	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	cr_assert_not(vr_access_source_agent_refresh(src, &err),
		      "expected refresh to fail while the session is down");
	cr_assert_eq(err->domain, VR_AGENT_SESSION_ERROR, "expected the session's error: %s",
		     err->message);
	cr_assert_eq(err->code, VR_AGENT_SESSION_ERROR_DOWN, "expected DOWN: %s", err->message);
	cr_assert(msg_has_all(err->message, "get-regions;" DOMAIN),
		  "expected the message to name get-regions and the domain: %s", err->message);
	expect_no_picture(src, "session down");

	fake_set_picture(5000, 100000, picture_b, G_N_ELEMENTS(picture_b));
	fake_server_listen(&fa->srv);
	vr_agent_session_kick(session);
	wait_session_up();
	refresh_and_wait(src, "the agent is there");
	expect_picture(src, 5000, 100000, picture_b, G_N_ELEMENTS(picture_b), "the agent is there");
	end_test();
}

/* ---- the cold histogram ---- */

/* An agent without the capability is asked for its picture, however the
 * source is set. */
Test(agent_source, an_older_agent_is_asked_for_its_picture)
{
	struct vr_proto_cold_hist got;

	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	vr_access_source_agent_set_histogram(src, TRUE);
	cr_assert_not(vr_access_source_agent_wants_histogram(src),
		      "an agent without the capability cannot be asked for a histogram");
	refresh_and_wait(src, "refresh");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1, "expected one get-regions");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_COLD_HIST], 0, "expected no histogram asked");
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), "the picture");
	cr_assert_not(vr_access_source_agent_cold_hist(src, &got), "no histogram expected");
	end_test();
}

/* A capable agent gives its picture until the source asks for histograms,
 * then its histogram, kept and counted as a picture by the serial. */
Test(agent_source_cold, a_capable_agent_gives_its_histogram)
{
	struct vr_proto_cold_hist got;
	uint64_t serial;

	fake_set_picture(5000, 100000, picture_a, G_N_ELEMENTS(picture_a));
	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	cr_assert_not(vr_access_source_agent_wants_histogram(src), "pictures by default");
	refresh_and_wait(src, "picture");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1, "expected one get-regions");
	serial = vr_access_source_agent_picture_serial(src);

	vr_access_source_agent_set_histogram(src, TRUE);
	cr_assert(vr_access_source_agent_wants_histogram(src), "the agent has the capability");
	refresh_and_wait(src, "histogram");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_COLD_HIST], 1, "expected one histogram asked");
	cr_assert_eq(fa->srv.requests[VR_PROTO_GET_REGIONS], 1, "expected no more pictures");
	cr_assert(vr_access_source_agent_cold_hist(src, &got), "expected the histogram kept");
	cr_assert_eq(got.generation, 4);
	cr_assert_eq(got.nr_regions, 3);
	cr_assert_eq(got.bytes[VR_MAX_SCORE], 64 * MIB);
	cr_assert_eq(got.bytes[10], 8 * MIB);
	cr_assert_gt(vr_access_source_agent_picture_serial(src), serial,
		     "a histogram's arrival bumps the serial");
	/* The picture that came before stays available. */
	expect_picture(src, 5000, 100000, picture_a, G_N_ELEMENTS(picture_a), "the picture");

	vr_access_source_agent_forget(src);
	cr_assert_not(vr_access_source_agent_cold_hist(src, &got), "forget drops it");
	end_test();
}

/* A histogram of more bytes than the guest has is refused by the session:
 * one bucket, or the sum of buckets each within the guest. */
Test(agent_source_cold, a_histogram_beyond_the_guest_is_refused)
{
	struct vr_proto_cold_hist got;

	src = agent_source_new(CALL_TIMEOUT_MS);
	start_ok(src);
	vr_access_source_agent_set_histogram(src, TRUE);
	memset(fa->hist.bytes, 0, sizeof(fa->hist.bytes));
	fa->hist.bytes[0] = GUEST_MEM + 1;
	refresh_and_wait(src, "one bucket too big");
	cr_assert_not(vr_access_source_agent_cold_hist(src, &got),
		      "a bucket above the guest's memory was taken");
	cr_assert(vr_agent_session_last_error(session) &&
			  strstr(vr_agent_session_last_error(session), "bucket 0"),
		  "expected the session to name the bucket, got: %s",
		  vr_agent_session_last_error(session) ? vr_agent_session_last_error(session) :
							 "no error");

	fa->hist.bytes[0] = GUEST_MEM / 2;
	fa->hist.bytes[1] = GUEST_MEM / 2;
	fa->hist.bytes[2] = 4096;
	refresh_and_wait(src, "the sum too big");
	cr_assert_not(vr_access_source_agent_cold_hist(src, &got),
		      "buckets adding up above the guest's memory were taken");

	fa->hist.bytes[2] = 0;
	refresh_and_wait(src, "within the guest");
	cr_assert(vr_access_source_agent_cold_hist(src, &got), "a histogram within the guest");
	cr_assert_eq(got.bytes[0], GUEST_MEM / 2);
	end_test();
}
