/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the host <-> agent wire protocol (common/protocol.c,
 * docs/protocol.md): round trips of every request, reply, error and report;
 * the exact wire form of a few; every kind of malformed or hostile line with
 * its error class, the id the error is addressed to, and the member the
 * message names; the encoders' refusals; the line reader; and a
 * deterministic mutation run that checks that whatever a decoder accepts,
 * the encoders write back and the decoders read again.
 *
 * Lines in this file are written with ' for " (dq() swaps them back), so they
 * read like JSON. Most malformed cases are a valid template line with one
 * member replaced ("patched") by a raw JSON text, or removed.
 *
 * Criterion runs every test in its own re-executed process, where static data
 * lives at other addresses: parameter structs hold no pointers (fixed arrays
 * only).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json-doc.h" /* json-c and its g_autoptr */
#include "picture.h"
#include "protocol.h"
#include "test-messages.h"
#include "test-quotes.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NO_ERROR     (-1)

/* ---- helpers ---- */

static void assert_proto_error(const GError *err, int cls, const char *want, const char *what)
{
	cr_assert_not_null(err, "%s: expected a %s error, got none", what,
			   vr_proto_error_class_name((enum vr_proto_error_class)cls));
	cr_assert_eq(err->domain, VR_PROTO_ERROR,
		     "%s: expected the VR_PROTO_ERROR domain, got %s (%s)", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, cls, "%s: expected class %s, got %s (%s)", what,
		     vr_proto_error_class_name((enum vr_proto_error_class)cls),
		     vr_proto_error_class_name((enum vr_proto_error_class)err->code), err->message);
	cr_assert(msg_has_all(err->message, want),
		  "%s: expected the message to mention '%s', got '%s'", what, want, err->message);
}

/* The command the host's pending request has, for vr_proto_decode_message(). */
struct pending {
	uint32_t id;
	enum vr_proto_command command;
};

static gboolean lookup_pending(uint32_t id, enum vr_proto_command *command, gpointer user_data)
{
	const struct pending *p = user_data;

	if (id != p->id)
		return FALSE;
	*command = p->command;
	return TRUE;
}

/* Any id is a request of the command *@user_data. */
static gboolean lookup_any(uint32_t id, enum vr_proto_command *command, gpointer user_data)
{
	(void)id;
	*command = *(const enum vr_proto_command *)user_data;
	return TRUE;
}

static void decode_request_ok(const char *line, struct vr_proto_request *req, const char *what)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_proto_decode_request(line, strlen(line), req, &err),
		  "%s: expected the request to decode:\n%s\ngot: %s", what, line,
		  err ? err->message : "FALSE without an error");
	cr_assert_null(err, "%s: no error expected on success", what);
}

static void decode_message_ok(const char *line, uint32_t id, enum vr_proto_command command,
			      struct vr_proto_message *msg, const char *what)
{
	struct pending p = { id, command };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_proto_decode_message(line, strlen(line), lookup_pending, &p, msg, &err),
		  "%s: expected the message to decode:\n%s\ngot: %s", what, line,
		  err ? err->message : "FALSE without an error");
	cr_assert_null(err, "%s: no error expected on success", what);
}

static void assert_line(const char *line, const char *what)
{
	size_t n;

	cr_assert_not_null(line, "%s: expected a line, got NULL", what);
	n = strlen(line);
	cr_assert(n >= 2 && line[n - 1] == '\n', "%s: expected a newline-terminated line: '%s'",
		  what, line);
	cr_assert_null(memchr(line, '\n', n - 1), "%s: a newline inside the line: '%s'", what,
		       line);
	cr_assert_leq(n, VR_PROTO_MAX_LINE, "%s: the line has %zu bytes, above %d", what, n,
		      VR_PROTO_MAX_LINE);
}

#define EQ(what, field, got, want)                                                                 \
	cr_assert_eq((uint64_t)(got), (uint64_t)(want),                                            \
		     "%s: %s: expected %" PRIu64 ", got %" PRIu64, what, field, (uint64_t)(want),  \
		     (uint64_t)(got))

#define STR_EQ(what, field, got, want)                                                             \
	cr_assert_str_eq(got, want, "%s: %s: expected '%s', got '%s'", what, field, want, got)

static void assert_hello_equal(const struct vr_proto_hello *got, const struct vr_proto_hello *want,
			       const char *what)
{
	EQ(what, "version", got->version, want->version);
	STR_EQ(what, "agent", got->agent, want->agent);
	STR_EQ(what, "kernel", got->kernel, want->kernel);
	EQ(what, "nr_backends", got->nr_backends, want->nr_backends);
	for (guint i = 0; i < want->nr_backends; i++)
		STR_EQ(what, "backends[]", got->backends[i], want->backends[i]);
	STR_EQ(what, "backend", got->backend, want->backend);
	EQ(what, "free_page_reporting", !!got->free_page_reporting, !!want->free_page_reporting);
	EQ(what, "has_reporting_order", !!got->has_reporting_order, !!want->has_reporting_order);
	if (want->has_reporting_order)
		EQ(what, "reporting_order", got->reporting_order, want->reporting_order);
	EQ(what, "cold_histogram", !!got->cold_histogram, !!want->cold_histogram);
}

static void assert_stats_equal(const struct vr_agent_stats *got, const struct vr_agent_stats *want,
			       const char *what)
{
	STR_EQ(what, "backend", got->backend, want->backend);
	EQ(what, "paused", !!got->paused, !!want->paused);
	EQ(what, "uptime_ms", got->uptime_ms, want->uptime_ms);
	EQ(what, "nr_tried", got->nr_tried, want->nr_tried);
	EQ(what, "sz_tried", got->sz_tried, want->sz_tried);
	EQ(what, "nr_applied", got->nr_applied, want->nr_applied);
	EQ(what, "sz_applied", got->sz_applied, want->sz_applied);
	EQ(what, "qt_exceeds", got->qt_exceeds, want->qt_exceeds);
	EQ(what, "reclaimer_cpu_us", got->reclaimer_cpu_us, want->reclaimer_cpu_us);
	EQ(what, "agent_cpu_us", got->agent_cpu_us, want->agent_cpu_us);
	EQ(what, "compactions", got->compactions, want->compactions);
	EQ(what, "reclaimed_bytes", got->reclaimed_bytes, want->reclaimed_bytes);
	EQ(what, "mem_total_bytes", got->mem_total_bytes, want->mem_total_bytes);
	EQ(what, "mem_free_bytes", got->mem_free_bytes, want->mem_free_bytes);
	EQ(what, "swap_total_bytes", got->swap_total_bytes, want->swap_total_bytes);
	EQ(what, "swap_free_bytes", got->swap_free_bytes, want->swap_free_bytes);
	EQ(what, "swap_cache_release_bytes", got->swap_cache_release_bytes,
	   want->swap_cache_release_bytes);
	EQ(what, "has_reportable_free_bytes", !!got->has_reportable_free_bytes,
	   !!want->has_reportable_free_bytes);
	EQ(what, "reportable_free_bytes", got->reportable_free_bytes,
	   want->has_reportable_free_bytes ? want->reportable_free_bytes : 0);
	EQ(what, "free_page_reporting", !!got->free_page_reporting, !!want->free_page_reporting);
}

static void assert_regions_equal(const struct vr_proto_regions *got,
				 const struct vr_proto_regions *want, const char *what)
{
	guint n = want->regions ? want->regions->len : 0;

	EQ(what, "sample_interval_us", got->sample_interval_us, want->sample_interval_us);
	EQ(what, "aggr_interval_us", got->aggr_interval_us, want->aggr_interval_us);
	cr_assert_not_null(got->regions, "%s: a decoded reply always has an array", what);
	EQ(what, "number of regions", got->regions->len, n);
	for (guint i = 0; i < n; i++) {
		const struct vr_picture_region *g =
			&g_array_index(got->regions, struct vr_picture_region, i);
		const struct vr_picture_region *w =
			&g_array_index(want->regions, struct vr_picture_region, i);

		EQ(what, "regions[].start", g->start, w->start);
		EQ(what, "regions[].end", g->end, w->end);
		EQ(what, "regions[].nr_accesses", g->nr_accesses, w->nr_accesses);
		EQ(what, "regions[].age", g->age, w->age);
	}
}

static struct vr_proto_hello sample_hello(void)
{
	struct vr_proto_hello h = {
		.version = 1,
		.nr_backends = 2,
		.free_page_reporting = TRUE,
		.has_reporting_order = TRUE,
		.reporting_order = 9,
	};

	g_strlcpy(h.agent, "0.1.0", sizeof(h.agent));
	g_strlcpy(h.kernel, "6.1.0-13-amd64", sizeof(h.kernel));
	g_strlcpy(h.backends[0], "damon", sizeof(h.backends[0]));
	g_strlcpy(h.backends[1], "memcg", sizeof(h.backends[1]));
	g_strlcpy(h.backend, "damon", sizeof(h.backend));
	return h;
}

static struct vr_agent_stats sample_stats(void)
{
	struct vr_agent_stats s = {
		.paused = FALSE,
		.uptime_ms = 3600000,
		.nr_tried = 120,
		.sz_tried = 512ULL << 20,
		.nr_applied = 100,
		.sz_applied = 400ULL << 20,
		.qt_exceeds = 7,
		.reclaimer_cpu_us = 1500000,
		.agent_cpu_us = 250000,
		.compactions = 3,
		.reclaimed_bytes = 600ULL << 20,
		.mem_total_bytes = 4ULL << 30,
		.mem_free_bytes = 1ULL << 30,
		.swap_total_bytes = 1ULL << 30,
		.swap_free_bytes = 900ULL << 20,
		.swap_cache_release_bytes = 24ULL << 20,
		.has_reportable_free_bytes = TRUE,
		.reportable_free_bytes = 512ULL << 20,
		.free_page_reporting = TRUE,
	};

	g_strlcpy(s.backend, "damon", sizeof(s.backend));
	return s;
}

/* ---- names ---- */

TestSuite(proto_names, .description = "command and error class names");

Test(proto_names, commands_round_trip)
{
	static const char *const names[] = { "hello",	    "set-policy", "reclaim", "get-stats",
					     "get-regions", "pause",	  "resume" };

	for (guint i = 0; i < ARRAY_LEN(names); i++) {
		enum vr_proto_command c;

		cr_assert_str_eq(vr_proto_command_name((enum vr_proto_command)i), names[i],
				 "command %u: expected '%s'", i, names[i]);
		cr_assert(vr_proto_command_from_name(names[i], &c), "'%s' should parse", names[i]);
		cr_assert_eq(c, (enum vr_proto_command)i, "'%s': expected %u, got %d", names[i], i,
			     c);
	}
	cr_assert_str_eq(vr_proto_command_name((enum vr_proto_command)99), "unknown");
	cr_assert_not(vr_proto_command_from_name("Hello", &(enum vr_proto_command){ 0 }),
		      "names are case-sensitive");
	cr_assert_not(vr_proto_command_from_name(NULL, &(enum vr_proto_command){ 0 }));
}

Test(proto_names, error_classes_round_trip)
{
	static const char *const names[] = {
		"syntax",	    "too-long", "bad-version", "unknown-command",
		"invalid-argument", "failed",	"busy"
	};

	for (guint i = 0; i < ARRAY_LEN(names); i++) {
		enum vr_proto_error_class c;

		cr_assert_str_eq(vr_proto_error_class_name((enum vr_proto_error_class)i), names[i],
				 "class %u: expected '%s'", i, names[i]);
		cr_assert(vr_proto_error_class_from_name(names[i], &c), "'%s' should parse",
			  names[i]);
		cr_assert_eq(c, (enum vr_proto_error_class)i);
	}
	cr_assert_str_eq(vr_proto_error_class_name((enum vr_proto_error_class) - 1), "unknown");
	cr_assert_not(vr_proto_error_class_from_name("oops", &(enum vr_proto_error_class){ 0 }));
}

/* ---- requests: round trips ---- */

TestSuite(proto_request, .description = "requests: encode, decode, refuse");

/**
 * struct req_case - a request to send and read back.
 * @a, @b: reclaim: bytes, deadline_ms; get-regions: max; set-policy: the
 *	report interval (with @has_interval).
 * @policy: set-policy: the policy document (' for "), or a profile name.
 */
struct req_case {
	char name[64];
	int command;
	uint32_t id;
	uint64_t a, b;
	int has_interval;
	char policy[256];
};

static struct req_case req_cases[] = {
	{ "hello", VR_PROTO_HELLO, 1 },
	{ "get-stats", VR_PROTO_GET_STATS, 2 },
	{ "pause", VR_PROTO_PAUSE, 3 },
	{ "resume, the largest id", VR_PROTO_RESUME, UINT32_MAX },
	{ "reclaim, smallest", VR_PROTO_RECLAIM, 5, 4096, 1 },
	{ "reclaim, largest", VR_PROTO_RECLAIM, 6, 1ULL << 50, 600000 },
	{ "get-regions, max 1", VR_PROTO_GET_REGIONS, 7, 1 },
	{ "get-regions, max 512", VR_PROTO_GET_REGIONS, 8, 512 },
	{ "set-policy, the default profile", VR_PROTO_SET_POLICY, 9, 0, 0, 0, "{}" },
	{ "set-policy, reports off", VR_PROTO_SET_POLICY, 10, 0, 0, 1,
	  "{'profile':'damon-reclaim-6.12'}" },
	{ "set-policy, reports every hour", VR_PROTO_SET_POLICY, 11, 3600000, 0, 1,
	  "{'profile':'damon-reclaim-6.12','schemes':[{'name':'damon-reclaim','action':'pageout',"
	  "'quota':{'ms':20,'goals':[{'metric':'some_mem_psi_us','target':1000}]}},"
	  "{'name':'cold','action':'cold','pattern':{'min_age_us':60000000}}]}" },
	{ "set-policy, reports every 100 ms", VR_PROTO_SET_POLICY, 12, 100, 0, 1, "{}" },
};

static void make_request(const struct req_case *c, struct vr_proto_request *req)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *doc = NULL;

	*req = (struct vr_proto_request){ .id = c->id,
					  .command = (enum vr_proto_command)c->command };
	switch (req->command) {
	case VR_PROTO_RECLAIM:
		req->reclaim.bytes = c->a;
		req->reclaim.deadline_ms = c->b;
		break;
	case VR_PROTO_GET_REGIONS:
		req->get_regions.max = (guint)c->a;
		break;
	case VR_PROTO_SET_POLICY:
		doc = dq(c->policy);
		req->set_policy.policy = vr_policy_parse(doc, -1, &err);
		cr_assert_not_null(req->set_policy.policy, "%s: the test's policy: %s", c->name,
				   err ? err->message : "?");
		req->set_policy.has_report_interval = c->has_interval;
		req->set_policy.report_interval_ms = c->a;
		break;
	default:
		break;
	}
}

ParameterizedTestParameters(proto_request, round_trip)
{
	return cr_make_param_array(struct req_case, req_cases, ARRAY_LEN(req_cases));
}

ParameterizedTest(struct req_case *c, proto_request, round_trip)
{
	g_auto(vr_proto_request) req = { 0 };
	g_auto(vr_proto_request) got = { 0 };
	g_autoptr(GError) err = NULL;
	g_autofree char *line = NULL;

	make_request(c, &req);
	line = vr_proto_encode_request(&req, &err);
	cr_assert_not_null(line, "%s: expected the request to encode, got: %s", c->name,
			   err ? err->message : "NULL without an error");
	assert_line(line, c->name);
	decode_request_ok(line, &got, c->name);
	EQ(c->name, "id", got.id, req.id);
	cr_assert_eq(got.command, req.command, "%s: command: expected %s, got %s", c->name,
		     vr_proto_command_name(req.command), vr_proto_command_name(got.command));
	switch (req.command) {
	case VR_PROTO_RECLAIM:
		EQ(c->name, "bytes", got.reclaim.bytes, req.reclaim.bytes);
		EQ(c->name, "deadline_ms", got.reclaim.deadline_ms, req.reclaim.deadline_ms);
		break;
	case VR_PROTO_GET_REGIONS:
		EQ(c->name, "max", got.get_regions.max, req.get_regions.max);
		break;
	case VR_PROTO_SET_POLICY: {
		g_autofree char *want = vr_policy_to_json(req.set_policy.policy);
		g_autofree char *have = NULL;

		cr_assert_not_null(got.set_policy.policy, "%s: no policy decoded", c->name);
		have = vr_policy_to_json(got.set_policy.policy);
		cr_assert_str_eq(have, want, "%s: the policy changed on the way:\n%s\nvs\n%s",
				 c->name, have, want);
		EQ(c->name, "has_report_interval", !!got.set_policy.has_report_interval,
		   !!req.set_policy.has_report_interval);
		if (req.set_policy.has_report_interval)
			EQ(c->name, "report_interval_ms", got.set_policy.report_interval_ms,
			   req.set_policy.report_interval_ms);
		break;
	}
	default:
		break;
	}
}

Test(proto_request, wire_form)
{
	struct vr_proto_request reclaim = { .id = 7,
					    .command = VR_PROTO_RECLAIM,
					    .reclaim = { .bytes = 1048576, .deadline_ms = 500 } };
	struct vr_proto_request hello = { .id = 1, .command = VR_PROTO_HELLO };
	struct vr_proto_request regions = { .id = 4294967295U,
					    .command = VR_PROTO_GET_REGIONS,
					    .get_regions = { .max = 16 } };
	g_autofree char *l1 = vr_proto_encode_request(&reclaim, NULL);
	g_autofree char *l2 = vr_proto_encode_request(&hello, NULL);
	g_autofree char *l3 = vr_proto_encode_request(&regions, NULL);
	g_autofree char *w1 = dq("{'vreclaim':1,'id':7,'command':'reclaim','arguments':"
				 "{'bytes':1048576,'deadline_ms':500}}\n");
	g_autofree char *w2 = dq("{'vreclaim':1,'id':1,'command':'hello'}\n");
	g_autofree char *w3 = dq("{'vreclaim':1,'id':4294967295,'command':'get-regions',"
				 "'arguments':{'max':16}}\n");

	cr_assert_str_eq(l1, w1);
	cr_assert_str_eq(l2, w2, "a command without arguments has no arguments member");
	cr_assert_str_eq(l3, w3);
}

/* Lines the agent accepts, and what it reads from them. */
Test(proto_request, accepts_what_the_spec_allows)
{
	static const struct {
		const char *name;
		const char *line;
		enum vr_proto_command command;
		guint max;
	} cases[] = {
		{ "no arguments member", "{'vreclaim':1,'id':1,'command':'hello'}",
		  VR_PROTO_HELLO },
		{ "empty arguments", "{'vreclaim':1,'id':1,'command':'pause','arguments':{}}",
		  VR_PROTO_PAUSE },
		{ "members in another order", "{'command':'resume','id':1,'vreclaim':1}",
		  VR_PROTO_RESUME },
		{ "unknown top-level members are ignored",
		  "{'vreclaim':1,'id':1,'command':'get-stats','trace':{'x':[1,2]},'v2':null}",
		  VR_PROTO_GET_STATS },
		{ "get-regions without max: 512", "{'vreclaim':1,'id':1,'command':'get-regions'}",
		  VR_PROTO_GET_REGIONS, 512 },
		{ "spaces, a newline at the end",
		  "  { 'vreclaim' : 1 , 'id' : 1 , 'command' : 'get-regions' , "
		  "'arguments' : { 'max' : 3 } }  \n",
		  VR_PROTO_GET_REGIONS, 3 },
		{ "CRLF at the end", "{'vreclaim':1,'id':1,'command':'hello'}\r\n",
		  VR_PROTO_HELLO },
	};

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *line = dq(cases[i].line);
		g_auto(vr_proto_request) req = { 0 };

		decode_request_ok(line, &req, cases[i].name);
		EQ(cases[i].name, "id", req.id, 1);
		cr_assert_eq(req.command, cases[i].command, "%s: command: got %s", cases[i].name,
			     vr_proto_command_name(req.command));
		if (cases[i].max)
			EQ(cases[i].name, "max", req.get_regions.max, cases[i].max);
	}
}

/* ---- malformed and hostile lines ---- */

/* The templates that patch cases start from (' for "). */
enum template {
	REQ_HELLO,
	REQ_RECLAIM,
	REQ_REGIONS,
	REQ_POLICY,
	REP_HELLO,
	REP_STATS,
	REP_REGIONS,
	REP_RECLAIM,
	REP_PAUSE,
	REP_ERROR,
	REPORT,
	NR_TEMPLATES,
};

#define STATS_MEMBERS                                                                              \
	"'backend':'damon','paused':false,'uptime_ms':1,'nr_tried':2,'sz_tried':8192,"             \
	"'nr_applied':1,'sz_applied':4096,'qt_exceeds':0,'reclaimer_cpu_us':5,'agent_cpu_us':6,"   \
	"'compactions':0,'reclaimed_bytes':12288,'mem_total_bytes':1000,'mem_free_bytes':500,"     \
	"'swap_total_bytes':0,'swap_free_bytes':0,'free_page_reporting':true"

static const struct {
	const char *line;
	gboolean request;
	enum vr_proto_command command; /* of the reply's request */
} templates[NR_TEMPLATES] = {
	[REQ_HELLO] = { "{'vreclaim':1,'id':7,'command':'hello'}", TRUE },
	[REQ_RECLAIM] = { "{'vreclaim':1,'id':7,'command':'reclaim','arguments':"
			  "{'bytes':1048576,'deadline_ms':500}}",
			  TRUE },
	[REQ_REGIONS] = { "{'vreclaim':1,'id':7,'command':'get-regions','arguments':{'max':100}}",
			  TRUE },
	[REQ_POLICY] = { "{'vreclaim':1,'id':7,'command':'set-policy','arguments':"
			 "{'policy':{'profile':'damon-reclaim-6.12'},'report_interval_ms':1000}}",
			 TRUE },
	[REP_HELLO] = { "{'vreclaim':1,'id':7,'return':{'version':1,'agent':'0.1.0',"
			"'kernel':'6.1.0-13-amd64','backends':['damon','memcg'],'backend':'damon',"
			"'free_page_reporting':true,'reporting_order':9}}",
			FALSE, VR_PROTO_HELLO },
	[REP_STATS] = { "{'vreclaim':1,'id':7,'return':{" STATS_MEMBERS "}}", FALSE,
			VR_PROTO_GET_STATS },
	[REP_REGIONS] = { "{'vreclaim':1,'id':7,'return':{'sample_interval_us':5000,"
			  "'aggr_interval_us':100000,'regions':[{'start':0,'end':4096,"
			  "'nr_accesses':20,'age':3},{'start':8192,'end':16384,'nr_accesses':0,"
			  "'age':0}]}}",
			  FALSE, VR_PROTO_GET_REGIONS },
	[REP_RECLAIM] = { "{'vreclaim':1,'id':7,'return':{'reclaimed_bytes':1048576,"
			  "'elapsed_ms':12}}",
			  FALSE, VR_PROTO_RECLAIM },
	[REP_PAUSE] = { "{'vreclaim':1,'id':7,'return':{}}", FALSE, VR_PROTO_PAUSE },
	[REP_ERROR] = { "{'vreclaim':1,'id':7,'error':{'class':'busy','desc':'DAMON is in use.'}}",
			FALSE },
	[REPORT] = { "{'vreclaim':1,'report':{" STATS_MEMBERS ",'seq':41}}", FALSE },
};

/* One step of a JSON path: a member name, or an array index when @name is NULL. */
struct step {
	char *name;
	guint index;
};

static void step_clear(gpointer p)
{
	g_free(((struct step *)p)->name);
}

static GArray *path_steps(const char *path)
{
	GArray *steps = g_array_new(FALSE, TRUE, sizeof(struct step));
	const char *p = path;

	g_array_set_clear_func(steps, step_clear);
	while (*p) {
		struct step s = { 0 };

		if (*p == '.') {
			p++;
		} else if (*p == '[') {
			s.index = (guint)strtoul(p + 1, (char **)&p, 10);
			p++; /* ']' */
			g_array_append_val(steps, s);
		} else {
			size_t n = strcspn(p, ".[");

			s.name = g_strndup(p, n);
			g_array_append_val(steps, s);
			p += n;
		}
	}
	return steps;
}

/**
 * patched() - template @t with the member at @path set to the raw JSON text
 * @value (added when missing), or removed when @value is "" (' for " in
 * @value). Owned, no newline.
 */
static char *patched(enum template t, const char *path, const char *value)
{
	g_autofree char *text = dq(templates[t].line);
	g_autofree char *raw = dq(value);
	g_autoptr(json_object) root = json_tokener_parse(text);
	g_autoptr(GArray) steps = path_steps(path);
	struct json_object *parent = root;
	struct step *last;
	g_autoptr(GString) out = NULL;
	const char *mark = "\"@@VALUE@@\"";
	char *at;

	cr_assert_not_null(root, "template %d is not JSON", t);
	if (!*path)
		return g_steal_pointer(&raw);
	for (guint i = 0; i + 1 < steps->len; i++) {
		struct step *s = &g_array_index(steps, struct step, i);

		parent = s->name ? json_object_object_get(parent, s->name) :
				   json_object_array_get_idx(parent, s->index);
		cr_assert_not_null(parent, "path '%s' does not exist in template %d", path, t);
	}
	last = &g_array_index(steps, struct step, steps->len - 1);
	if (!*raw && last->name)
		json_object_object_del(parent, last->name);
	else if (!*raw)
		json_object_array_del_idx(parent, last->index, 1);
	else if (last->name)
		json_object_object_add(parent, last->name, json_object_new_string("@@VALUE@@"));
	else
		json_object_array_put_idx(parent, last->index, json_object_new_string("@@VALUE@@"));
	out = g_string_new(json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	at = strstr(out->str, mark);
	if (at) {
		gsize pos = (gsize)(at - out->str);

		g_string_erase(out, (gssize)pos, (gssize)strlen(mark));
		g_string_insert(out, (gssize)pos, raw);
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/**
 * struct patch_case - a template with one member replaced.
 * @path:	the member ("" : @value is the whole line).
 * @value:	raw JSON (' for "), "" to remove the member.
 * @cls:	the class expected, NO_ERROR when the line is fine.
 * @id:		the id the error must be addressed to (0: none could be read).
 * @want:	what the message must name: ';'-separated groups of
 *		'|'-separated alternatives.
 */
struct patch_case {
	char name[72];
	int tmpl;
	char path[48];
	char value[200];
	int cls;
	uint32_t id;
	char want[96];
};

#define SYN VR_PROTO_ERROR_SYNTAX
#define VER VR_PROTO_ERROR_BAD_VERSION
#define UNK VR_PROTO_ERROR_UNKNOWN_COMMAND
#define INV VR_PROTO_ERROR_INVALID_ARGUMENT

/* Requests the agent refuses (and a few it accepts). */
static struct patch_case request_cases[] = {
	/* syntax: the id cannot be read */
	{ "truncated JSON", REQ_HELLO, "", "{'vreclaim':1,'id':7,'command':'hel", SYN, 0,
	  "end|unexpected" },
	{ "truncated after a member", REQ_HELLO, "", "{'vreclaim':1,'id':7", SYN, 0, "end" },
	{ "not JSON", REQ_HELLO, "", "hello", SYN, 0, "" },
	{ "an array", REQ_HELLO, "", "[1,2]", SYN, 0, "object;array" },
	{ "a number", REQ_HELLO, "", "42", SYN, 0, "object;42" },
	{ "a string", REQ_HELLO, "", "'hello'", SYN, 0, "object;string" },
	{ "null", REQ_HELLO, "", "null", SYN, 0, "object;null" },
	{ "an empty line", REQ_HELLO, "", "", SYN, 0, "end|empty" },
	{ "two objects on a line", REQ_HELLO, "", "{'vreclaim':1,'id':7,'command':'hello'}{}", SYN,
	  0, "offset 39" },
	{ "a trailing comma", REQ_HELLO, "", "{'vreclaim':1,'id':7,'command':'hello',}", SYN, 0,
	  "" },
	{ "nested 17 deep", REQ_HELLO, "x", "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]", SYN, 0,
	  "nested;16" },
	{ "nested deep inside a string is fine", REQ_HELLO, "x", "'[[[[[[[[[[[[[[[[[[[[[[[['",
	  NO_ERROR },
	{ "a member given twice", REQ_HELLO, "", "{'vreclaim':1,'id':7,'id':8,'command':'hello'}",
	  INV, 0, "id;twice" },
	/* the version */
	{ "no version", REQ_HELLO, "vreclaim", "", VER, 7, "vreclaim;missing" },
	{ "version 0", REQ_HELLO, "vreclaim", "0", VER, 7, "vreclaim;0" },
	{ "version 2", REQ_HELLO, "vreclaim", "2", VER, 7, "vreclaim;2" },
	{ "version '1'", REQ_HELLO, "vreclaim", "'1'", VER, 7, "vreclaim;string" },
	{ "version 1.0", REQ_HELLO, "vreclaim", "1.0", VER, 7, "vreclaim;1.0" },
	{ "version true", REQ_HELLO, "vreclaim", "true", VER, 7, "vreclaim;boolean" },
	{ "version 2^64 + 1", REQ_HELLO, "vreclaim", "18446744073709551617", VER, 7,
	  "vreclaim;18446744073709551617" },
	{ "version 2 and no id: the version first", REQ_HELLO, "",
	  "{'vreclaim':2,'command':'hello'}", VER, 0, "vreclaim;2" },
	/* the id */
	{ "no id", REQ_HELLO, "id", "", INV, 0, "id;missing" },
	{ "id 0", REQ_HELLO, "id", "0", INV, 0, "id;1..4294967295;got 0" },
	{ "id 2^32", REQ_HELLO, "id", "4294967296", INV, 0, "id;4294967296" },
	{ "id -1", REQ_HELLO, "id", "-1", INV, 0, "id;-1" },
	{ "id '7'", REQ_HELLO, "id", "'7'", INV, 0, "id;string" },
	{ "id 7.5", REQ_HELLO, "id", "7.5", INV, 0, "id;7.5" },
	{ "id null", REQ_HELLO, "id", "null", INV, 0, "id;null" },
	{ "id 2^70", REQ_HELLO, "id", "1180591620717411303424", INV, 0,
	  "id;1180591620717411303424" },
	/* the command */
	{ "no command", REQ_HELLO, "command", "", INV, 7, "command;missing" },
	{ "command 5", REQ_HELLO, "command", "5", INV, 7, "command;string" },
	{ "unknown command", REQ_HELLO, "command", "'frobnicate'", UNK, 7,
	  "frobnicate;hello;get-regions" },
	{ "command in capitals", REQ_HELLO, "command", "'HELLO'", UNK, 7, "HELLO" },
	{ "arguments an array", REQ_HELLO, "arguments", "[]", INV, 7, "arguments;object" },
	{ "arguments null", REQ_HELLO, "arguments", "null", INV, 7, "arguments;null" },
	{ "an argument to hello", REQ_HELLO, "arguments", "{'verbose':true}", INV, 7,
	  "arguments.verbose;no arguments" },
	/* reclaim */
	{ "unknown argument", REQ_RECLAIM, "arguments.byts", "4096", INV, 7,
	  "arguments.byts;unknown;bytes, deadline_ms" },
	{ "no bytes", REQ_RECLAIM, "arguments.bytes", "", INV, 7, "arguments.bytes;missing" },
	{ "no deadline", REQ_RECLAIM, "arguments.deadline_ms", "", INV, 7,
	  "arguments.deadline_ms;missing" },
	{ "bytes a string", REQ_RECLAIM, "arguments.bytes", "'4096'", INV, 7,
	  "arguments.bytes;4096..1125899906842624;string" },
	{ "bytes a double", REQ_RECLAIM, "arguments.bytes", "4096.0", INV, 7,
	  "arguments.bytes;4096.0" },
	{ "bytes in exponent form", REQ_RECLAIM, "arguments.bytes", "4e3", INV, 7,
	  "arguments.bytes;4e3" },
	{ "bytes negative", REQ_RECLAIM, "arguments.bytes", "-4096", INV, 7,
	  "arguments.bytes;-4096" },
	{ "bytes a boolean", REQ_RECLAIM, "arguments.bytes", "true", INV, 7,
	  "arguments.bytes;boolean" },
	{ "bytes null", REQ_RECLAIM, "arguments.bytes", "null", INV, 7, "arguments.bytes;null" },
	{ "bytes an object", REQ_RECLAIM, "arguments.bytes", "{}", INV, 7,
	  "arguments.bytes;object" },
	{ "bytes below a page", REQ_RECLAIM, "arguments.bytes", "4095", INV, 7,
	  "arguments.bytes;4096..1125899906842624;4095" },
	{ "bytes above 2^50", REQ_RECLAIM, "arguments.bytes", "1125899906842625", INV, 7,
	  "arguments.bytes;1125899906842625" },
	{ "bytes 2^64 - 1", REQ_RECLAIM, "arguments.bytes", "18446744073709551615", INV, 7,
	  "arguments.bytes;18446744073709551615" },
	{ "bytes beyond 64 bits", REQ_RECLAIM, "arguments.bytes", "99999999999999999999999", INV, 7,
	  "arguments.bytes;99999999999999999999999" },
	{ "deadline 0", REQ_RECLAIM, "arguments.deadline_ms", "0", INV, 7,
	  "arguments.deadline_ms;1..600000;got 0" },
	{ "deadline above 10 min", REQ_RECLAIM, "arguments.deadline_ms", "600001", INV, 7,
	  "arguments.deadline_ms;600001" },
	{ "bytes 2^50 is fine", REQ_RECLAIM, "arguments.bytes", "1125899906842624", NO_ERROR },
	/* get-regions */
	{ "max 0", REQ_REGIONS, "arguments.max", "0", INV, 7, "arguments.max;1..512;got 0" },
	{ "max 513", REQ_REGIONS, "arguments.max", "513", INV, 7, "arguments.max;513" },
	{ "max '1'", REQ_REGIONS, "arguments.max", "'1'", INV, 7, "arguments.max;string" },
	{ "an unknown argument to get-regions", REQ_REGIONS, "arguments.start", "0", INV, 7,
	  "arguments.start;max" },
	/* set-policy */
	{ "no policy", REQ_POLICY, "arguments.policy", "", INV, 7, "arguments.policy;missing" },
	{ "policy an array", REQ_POLICY, "arguments.policy", "[]", INV, 7,
	  "arguments.policy;object;array" },
	{ "policy a string", REQ_POLICY, "arguments.policy", "'{}'", INV, 7,
	  "arguments.policy;object;string" },
	{ "an unknown policy member", REQ_POLICY, "arguments.policy.bogus", "1", INV, 7,
	  "arguments.policy: bogus;unknown" },
	{ "an unknown profile", REQ_POLICY, "arguments.policy.profile", "'nope'", INV, 7,
	  "arguments.policy: profile;nope" },
	{ "schemes not an array", REQ_POLICY, "arguments.policy.schemes", "5", INV, 7,
	  "arguments.policy: schemes;array" },
	{ "a bad quota", REQ_POLICY, "arguments.policy.schemes",
	  "[{'name':'x','action':'pageout','quota':{'ms':-1}}]", INV, 7,
	  "arguments.policy: schemes[0].quota.ms;-1" },
	{ "a policy integer beyond 64 bits", REQ_POLICY, "arguments.policy.monitoring",
	  "{'min_nr_regions':123456789012345678901234567890}", INV, 7,
	  "arguments.policy;monitoring.min_nr_regions;123456789012345678901234567890" },
	{ "a policy max_size of 2^64 - 1 is fine", REQ_POLICY, "arguments.policy.schemes",
	  "[{'name':'x','action':'pageout','pattern':{'max_size':18446744073709551615}}]",
	  NO_ERROR },
	{ "report interval 50", REQ_POLICY, "arguments.report_interval_ms", "50", INV, 7,
	  "arguments.report_interval_ms;0 or an integer in 100..3600000;50" },
	{ "report interval above an hour", REQ_POLICY, "arguments.report_interval_ms", "3600001",
	  INV, 7, "arguments.report_interval_ms;3600001" },
	{ "report interval -1", REQ_POLICY, "arguments.report_interval_ms", "-1", INV, 7,
	  "arguments.report_interval_ms;-1" },
	{ "report interval '100'", REQ_POLICY, "arguments.report_interval_ms", "'100'", INV, 7,
	  "arguments.report_interval_ms;string" },
	{ "report interval 1.5", REQ_POLICY, "arguments.report_interval_ms", "1.5", INV, 7,
	  "arguments.report_interval_ms;1.5" },
	{ "report interval 0 is fine", REQ_POLICY, "arguments.report_interval_ms", "0", NO_ERROR },
	{ "no report interval is fine", REQ_POLICY, "arguments.report_interval_ms", "", NO_ERROR },
	{ "an unknown set-policy argument", REQ_POLICY, "arguments.interval", "5", INV, 7,
	  "arguments.interval;policy, report_interval_ms" },
};

/* Agent lines the host refuses (and a few it accepts). */
static struct patch_case message_cases[] = {
	/* the envelope */
	{ "truncated", REP_PAUSE, "", "{'vreclaim':1,'id':7,'return':{", SYN, 0, "end" },
	{ "an array", REP_PAUSE, "", "[{'vreclaim':1}]", SYN, 0, "object" },
	{ "no version", REP_PAUSE, "vreclaim", "", VER, 7, "vreclaim;missing" },
	{ "version 2", REP_PAUSE, "vreclaim", "2", VER, 7, "vreclaim;2" },
	{ "version '1'", REP_PAUSE, "vreclaim", "'1'", VER, 7, "vreclaim;string" },
	{ "none of return, error, report", REP_PAUSE, "return", "", INV, 7,
	  "return;error;report;none" },
	{ "return and error", REP_PAUSE, "error", "{'class':'busy','desc':'x'}", INV, 7,
	  "return and error" },
	{ "a reply to no request", REP_PAUSE, "id", "8", INV, 8, "id;8;no request" },
	{ "a reply without id", REP_PAUSE, "id", "", INV, 0, "id;missing" },
	{ "a reply with id null", REP_PAUSE, "id", "null", INV, 0, "id;null" },
	{ "a reply with id 0", REP_PAUSE, "id", "0", INV, 0, "id;got 0" },
	{ "pause returns an array", REP_PAUSE, "return", "[]", INV, 7, "return;object" },
	{ "pause returns members: ignored", REP_PAUSE, "return", "{'later':1}", NO_ERROR },
	{ "unknown top-level members: ignored", REP_PAUSE, "trace", "{'a':[1]}", NO_ERROR },
	/* hello */
	{ "version 0", REP_HELLO, "return.version", "0", INV, 7, "return.version;0" },
	{ "version 2 is fine (the highest spoken)", REP_HELLO, "return.version", "2", NO_ERROR },
	{ "no kernel", REP_HELLO, "return.kernel", "", INV, 7, "return.kernel;missing" },
	{ "agent a number", REP_HELLO, "return.agent", "1", INV, 7, "return.agent;string" },
	{ "agent of 65 bytes", REP_HELLO, "return.agent",
	  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", INV, 7,
	  "return.agent;64;65" },
	{ "agent of 64 bytes is fine", REP_HELLO, "return.agent",
	  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", NO_ERROR },
	{ "agent empty", REP_HELLO, "return.agent", "''", INV, 7, "return.agent;empty" },
	{ "agent with a control character", REP_HELLO, "return.agent", "'0.1\\u001b[31m'", INV, 7,
	  "return.agent;control" },
	{ "agent with a NUL", REP_HELLO, "return.agent", "'0.1\\u0000x'", INV, 7,
	  "return.agent;NUL" },
	{ "agent with a bidi override", REP_HELLO, "return.agent", "'0.1\\u202egpj.exe'", INV, 7,
	  "return.agent;format;U+202E" },
	{ "agent in UTF-8 is fine", REP_HELLO, "return.agent", "'0.1-\\u00e9t\\u00e9'", NO_ERROR },
	{ "kernel of 129 bytes", REP_HELLO, "return.kernel",
	  "'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
	  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk'",
	  INV, 7, "return.kernel;128;129" },
	{ "backends not an array", REP_HELLO, "return.backends", "'damon'", INV, 7,
	  "return.backends;array" },
	{ "no backends", REP_HELLO, "return.backends", "[]", INV, 7, "return.backends;1..8;got 0" },
	{ "9 backends", REP_HELLO, "return.backends", "['a','b','c','d','e','f','g','h','i']", INV,
	  7, "return.backends;1..8;got 9" },
	{ "a backend name of 33 bytes", REP_HELLO, "return.backends[1]",
	  "'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'", INV, 7, "return.backends[1];32;33" },
	{ "a backend name in capitals", REP_HELLO, "return.backends[1]", "'MEMCG'", INV, 7,
	  "return.backends[1];MEMCG;name" },
	{ "a backend listed twice", REP_HELLO, "return.backends[1]", "'damon'", INV, 7,
	  "return.backends[1];twice" },
	{ "a backend a number", REP_HELLO, "return.backends[0]", "1", INV, 7,
	  "return.backends[0];string" },
	{ "the backend in use is not available", REP_HELLO, "return.backend", "'ksm'", INV, 7,
	  "return.backend;ksm" },
	{ "backend none is fine", REP_HELLO, "return.backend", "'none'", NO_ERROR },
	{ "free_page_reporting 'yes'", REP_HELLO, "return.free_page_reporting", "'yes'", INV, 7,
	  "return.free_page_reporting;boolean;string" },
	{ "free_page_reporting 1", REP_HELLO, "return.free_page_reporting", "1", INV, 7,
	  "return.free_page_reporting;boolean" },
	{ "reporting_order 21", REP_HELLO, "return.reporting_order", "21", INV, 7,
	  "return.reporting_order;0..20;21" },
	{ "reporting_order null", REP_HELLO, "return.reporting_order", "null", INV, 7,
	  "return.reporting_order;null" },
	{ "no reporting_order is fine", REP_HELLO, "return.reporting_order", "", NO_ERROR },
	{ "hello returns more: ignored", REP_HELLO, "return.features", "['x']", NO_ERROR },
	/* stats */
	{ "mem_free above mem_total", REP_STATS, "return.mem_free_bytes", "1001", INV, 7,
	  "return.mem_free_bytes;1001;mem_total_bytes;1000" },
	{ "swap_free above swap_total", REP_STATS, "return.swap_free_bytes", "1", INV, 7,
	  "return.swap_free_bytes;swap_total_bytes" },
	{ "nr_applied above nr_tried", REP_STATS, "return.nr_applied", "3", INV, 7,
	  "return.nr_applied;nr_tried" },
	{ "sz_applied above sz_tried", REP_STATS, "return.sz_applied", "8193", INV, 7,
	  "return.sz_applied;sz_tried" },
	{ "uptime negative", REP_STATS, "return.uptime_ms", "-1", INV, 7, "return.uptime_ms;-1" },
	{ "uptime a double", REP_STATS, "return.uptime_ms", "1.5", INV, 7, "return.uptime_ms;1.5" },
	{ "uptime a string", REP_STATS, "return.uptime_ms", "'1'", INV, 7,
	  "return.uptime_ms;string" },
	{ "uptime above INT64_MAX", REP_STATS, "return.uptime_ms", "9223372036854775808", INV, 7,
	  "return.uptime_ms;0..9223372036854775807;9223372036854775808" },
	{ "uptime INT64_MAX is fine", REP_STATS, "return.uptime_ms", "9223372036854775807",
	  NO_ERROR },
	{ "no compactions", REP_STATS, "return.compactions", "", INV, 7,
	  "return.compactions;missing" },
	{ "no reclaimed_bytes", REP_STATS, "return.reclaimed_bytes", "", INV, 7,
	  "return.reclaimed_bytes;missing" },
	{ "swap_cache_release_bytes negative", REP_STATS, "return.swap_cache_release_bytes", "-1",
	  INV, 7, "return.swap_cache_release_bytes;-1" },
	{ "swap_cache_release_bytes a string", REP_STATS, "return.swap_cache_release_bytes", "'1'",
	  INV, 7, "return.swap_cache_release_bytes;string" },
	{ "swap_cache_release_bytes given", REP_STATS, "return.swap_cache_release_bytes", "4096",
	  NO_ERROR },
	{ "reportable_free_bytes negative", REP_STATS, "return.reportable_free_bytes", "-1", INV, 7,
	  "return.reportable_free_bytes;-1" },
	{ "reportable_free_bytes a fraction", REP_STATS, "return.reportable_free_bytes",
	  "2097152.5", INV, 7, "return.reportable_free_bytes;2097152.5" },
	{ "reportable_free_bytes a string", REP_STATS, "return.reportable_free_bytes", "'2097152'",
	  INV, 7, "return.reportable_free_bytes;string" },
	{ "reportable_free_bytes null", REP_STATS, "return.reportable_free_bytes", "null", INV, 7,
	  "return.reportable_free_bytes;null" },
	{ "reportable_free_bytes above INT64_MAX", REP_STATS, "return.reportable_free_bytes",
	  "9223372036854775808", INV, 7, "return.reportable_free_bytes;9223372036854775808" },
	{ "reportable_free_bytes given", REP_STATS, "return.reportable_free_bytes", "2097152",
	  NO_ERROR },
	{ "report reportable_free_bytes negative", REPORT, "report.reportable_free_bytes", "-4096",
	  INV, 0, "report.reportable_free_bytes;-4096" },
	{ "reclaimed_bytes negative", REP_STATS, "return.reclaimed_bytes", "-4096", INV, 7,
	  "return.reclaimed_bytes;-4096" },
	{ "reclaimed_bytes above INT64_MAX", REP_STATS, "return.reclaimed_bytes",
	  "9223372036854775808", INV, 7, "return.reclaimed_bytes;9223372036854775808" },
	{ "paused 0", REP_STATS, "return.paused", "0", INV, 7, "return.paused;boolean" },
	{ "backend a number", REP_STATS, "return.backend", "5", INV, 7, "return.backend;string" },
	{ "backend with a space", REP_STATS, "return.backend", "'dam on'", INV, 7,
	  "return.backend;name" },
	{ "stats an array", REP_STATS, "return", "[]", INV, 7, "return;object" },
	{ "stats with more members: ignored", REP_STATS, "return.thp_collapsed", "5", NO_ERROR },
	/* regions */
	{ "start == end", REP_REGIONS, "return.regions[0].end", "0", INV, 7,
	  "return.regions[0].end;empty;above its start" },
	{ "start > end", REP_REGIONS, "return.regions[1].end", "4096", INV, 7,
	  "return.regions[1].end;empty;above its start" },
	{ "overlapping", REP_REGIONS, "return.regions[1].start", "2048", INV, 7,
	  "return.regions[1].start;overlap" },
	{ "unsorted", REP_REGIONS, "return.regions[1]",
	  "{'start':0,'end':4096,'nr_accesses':0,'age':0}", INV, 7,
	  "return.regions[1].start;sorted" },
	{ "adjacent is fine", REP_REGIONS, "return.regions[1].start", "4096", NO_ERROR },
	{ "nr_accesses above aggr/sample", REP_REGIONS, "return.regions[0].nr_accesses", "21", INV,
	  7, "return.regions[0].nr_accesses;21;20" },
	{ "nr_accesses 2^32", REP_REGIONS, "return.regions[0].nr_accesses", "4294967296", INV, 7,
	  "return.regions[0].nr_accesses;4294967295" },
	{ "age 2^32", REP_REGIONS, "return.regions[0].age", "4294967296", INV, 7,
	  "return.regions[0].age;0..4294967295;4294967296" },
	{ "age 2^32 - 1 is fine", REP_REGIONS, "return.regions[0].age", "4294967295", NO_ERROR },
	{ "start negative", REP_REGIONS, "return.regions[0].start", "-4096", INV, 7,
	  "return.regions[0].start;-4096" },
	{ "end above INT64_MAX", REP_REGIONS, "return.regions[1].end", "9223372036854775808", INV,
	  7, "return.regions[1].end;9223372036854775808" },
	{ "a region without age", REP_REGIONS, "return.regions[1].age", "", INV, 7,
	  "return.regions[1].age;missing" },
	{ "a region a number", REP_REGIONS, "return.regions[0]", "5", INV, 7,
	  "return.regions[0];object" },
	{ "regions an object", REP_REGIONS, "return.regions", "{}", INV, 7,
	  "return.regions;array" },
	{ "no regions is fine", REP_REGIONS, "return.regions", "[]", NO_ERROR },
	{ "sample interval 0", REP_REGIONS, "return.sample_interval_us", "0", INV, 7,
	  "return.sample_interval_us;is 0;above 0" },
	{ "aggr below sample", REP_REGIONS, "return.aggr_interval_us", "4999", INV, 7,
	  "return.aggr_interval_us;4999;5000" },
	/* the picture's bounds (common/picture.h), below the wire's integers */
	{ "aggr above an hour", REP_REGIONS, "return.aggr_interval_us", "3600000001", INV, 7,
	  "return.aggr_interval_us;3600000001;3600000000" },
	{ "aggr of 65537 samples", REP_REGIONS, "return.aggr_interval_us", "327685000", INV, 7,
	  "return.aggr_interval_us;65537;65536" },
	{ "aggr of 65536 samples is fine", REP_REGIONS, "return.aggr_interval_us", "327680000",
	  NO_ERROR },
	{ "regions with more members: ignored", REP_REGIONS, "return.regions[0].node", "1",
	  NO_ERROR },
	/* The decoder reads regions without their paths while all is well;
	 * when something is wrong, the message still names the member. */
	{ "end beyond 64 bits", REP_REGIONS, "return.regions[1].end", "99999999999999999999999",
	  INV, 7, "return.regions[1].end;99999999999999999999999" },
	{ "a big integer elsewhere: the regions still read", REP_REGIONS, "return.later",
	  "99999999999999999999999", NO_ERROR },
	{ "a region member given twice", REP_REGIONS, "return.regions[1]",
	  "{'start':8192,'end':16384,'nr_accesses':0,'age':0,'age':1}", INV, 0,
	  "return.regions[1].age;twice" },
	{ "a member given twice among 20", REP_REGIONS, "return.regions[1]",
	  "{'start':8192,'end':16384,'nr_accesses':0,'age':0,'a':0,'b':0,'c':0,'d':0,'e':0,"
	  "'f':0,'g':0,'h':0,'i':0,'j':0,'k':0,'l':0,'m':0,'n':0,'o':0,'p':0,'f':1}",
	  INV, 0, "return.regions[1].f;twice" },
	/* reclaim */
	{ "reclaimed negative", REP_RECLAIM, "return.reclaimed_bytes", "-1", INV, 7,
	  "return.reclaimed_bytes;-1" },
	{ "no elapsed_ms", REP_RECLAIM, "return.elapsed_ms", "", INV, 7,
	  "return.elapsed_ms;missing" },
	/* errors */
	{ "error class a number", REP_ERROR, "error.class", "5", INV, 7, "error.class;string" },
	{ "error without desc", REP_ERROR, "error.desc", "", INV, 7, "error.desc;missing" },
	{ "error desc empty", REP_ERROR, "error.desc", "''", INV, 7, "error.desc;empty" },
	{ "error desc with a newline", REP_ERROR, "error.desc", "'a\\nb'", INV, 7,
	  "error.desc;control" },
	{ "error not an object", REP_ERROR, "error", "'busy'", INV, 7, "error;object" },
	{ "error without id", REP_ERROR, "id", "", INV, 0, "id;missing" },
	{ "error with id 0", REP_ERROR, "id", "0", INV, 0, "id;got 0" },
	{ "error with id null is fine", REP_ERROR, "id", "null", NO_ERROR },
	{ "error of an unknown id is fine", REP_ERROR, "id", "12345", NO_ERROR },
	{ "an unknown class is fine", REP_ERROR, "error.class", "'rate-limited'", NO_ERROR },
	/* reports */
	{ "report without seq", REPORT, "report.seq", "", INV, 0, "report.seq;missing" },
	{ "report seq -1", REPORT, "report.seq", "-1", INV, 0, "report.seq;-1" },
	{ "report mem_free above mem_total", REPORT, "report.mem_free_bytes", "2000", INV, 0,
	  "report.mem_free_bytes;mem_total_bytes" },
	{ "report not an object", REPORT, "report", "[]", INV, 0, "report;object" },
	{ "report and return", REPORT, "return", "{}", INV, 0, "return and report" },
	{ "a report with an id: ignored", REPORT, "id", "3", NO_ERROR },
};

static void run_patch_case(const struct patch_case *c)
{
	g_autofree char *line = patched((enum template)c->tmpl, c->path, c->value);
	g_autoptr(GError) err = NULL;
	gboolean ok;
	uint32_t id;

	if (templates[c->tmpl].request) {
		g_auto(vr_proto_request) req = { 0 };

		ok = vr_proto_decode_request(line, strlen(line), &req, &err);
		id = req.id;
		if (!ok)
			cr_assert_null(req.set_policy.policy, "%s: a policy left behind", c->name);
	} else {
		struct pending p = { 7, templates[c->tmpl].command };
		g_auto(vr_proto_message) msg = { 0 };

		ok = vr_proto_decode_message(line, strlen(line), lookup_pending, &p, &msg, &err);
		id = msg.id;
	}
	if (c->cls == NO_ERROR) {
		cr_assert(ok, "%s: expected the line to decode:\n%s\ngot: %s", c->name, line,
			  err ? err->message : "FALSE without an error");
		return;
	}
	cr_assert_not(ok, "%s: expected the line to be refused:\n%s", c->name, line);
	assert_proto_error(err, c->cls, c->want, c->name);
	cr_assert_eq(id, c->id, "%s: the error should go to id %u, got %u (%s)", c->name, c->id, id,
		     err->message);
}

ParameterizedTestParameters(proto_request, malformed)
{
	return cr_make_param_array(struct patch_case, request_cases, ARRAY_LEN(request_cases));
}

ParameterizedTest(struct patch_case *c, proto_request, malformed)
{
	run_patch_case(c);
}

/* A line that is too long is refused before it is parsed; one that just fits is read. */
Test(proto_request, line_length_limit)
{
	const char *head = "{\"vreclaim\":1,\"id\":9,\"command\":\"hello\"";
	g_autoptr(GString) fits = g_string_new(head);
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_request) req = { 0 };

	/* 65535 bytes and the newline: exactly the limit. */
	while (fits->len < VR_PROTO_MAX_LINE - 2)
		g_string_append_c(fits, ' ');
	g_string_append(fits, "}\n");
	cr_assert_eq(fits->len, VR_PROTO_MAX_LINE);
	decode_request_ok(fits->str, &req, "a line of 65536 bytes");
	cr_assert(vr_proto_decode_request(fits->str, fits->len - 1, &req, &err),
		  "without its newline too");

	/* One byte more. */
	g_string_insert_c(fits, 1, ' ');
	cr_assert_not(vr_proto_decode_request(fits->str, fits->len, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_TOO_LONG, "65537;65536", "a line of 65537 bytes");
	cr_assert_eq(req.id, 0, "the id of a line too long is not read");
	g_clear_error(&err);
	cr_assert_not(vr_proto_decode_request(fits->str, fits->len - 1, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_TOO_LONG, "65536", "without its newline");
}

Test(proto_request, embedded_nul_and_newline)
{
	static const char nul[] = "{\"vreclaim\":1,\"id\":1,\"command\":\"he\0llo\"}";
	static const char nl[] = "{\"vreclaim\":1,\n\"id\":1,\"command\":\"hello\"}";
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_request) req = { 0 };

	cr_assert_not(vr_proto_decode_request(nul, sizeof(nul) - 1, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_SYNTAX, "NUL;34", "a NUL byte");
	g_clear_error(&err);
	cr_assert_not(vr_proto_decode_request(nl, sizeof(nl) - 1, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_SYNTAX, "newline;14", "a newline inside");
}

Test(proto_request, hostile_nesting_is_cheap_to_refuse)
{
	g_autoptr(GString)
		s = g_string_new("{\"vreclaim\":1,\"id\":1,\"command\":\"hello\",\"x\":");
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_request) req = { 0 };

	while (s->len < VR_PROTO_MAX_LINE - 2)
		g_string_append_c(s, '[');
	cr_assert_not(vr_proto_decode_request(s->str, s->len, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_SYNTAX, "nested;16", "65000 open brackets");
}

/* The host's encoder refuses what the agent would refuse. */
Test(proto_request, encode_refuses_invalid_requests)
{
	g_autoptr(vr_policy) policy = vr_policy_new_profile(NULL, NULL);
	const struct {
		const char *name;
		struct vr_proto_request req;
		int cls;
		const char *want;
	} cases[] = {
		{ "id 0", { .id = 0, .command = VR_PROTO_HELLO }, INV, "id;got 0" },
		{ "command 99", { .id = 1, .command = (enum vr_proto_command)99 }, UNK, "99" },
		{ "bytes 0",
		  { .id = 1, .command = VR_PROTO_RECLAIM, .reclaim = { 0, 10 } },
		  INV,
		  "arguments.bytes;got 0" },
		{ "bytes 2^50 + 1",
		  { .id = 1, .command = VR_PROTO_RECLAIM, .reclaim = { (1ULL << 50) + 1, 10 } },
		  INV,
		  "arguments.bytes;1125899906842625" },
		{ "deadline 0",
		  { .id = 1, .command = VR_PROTO_RECLAIM, .reclaim = { 4096, 0 } },
		  INV,
		  "arguments.deadline_ms" },
		{ "max 0",
		  { .id = 1, .command = VR_PROTO_GET_REGIONS, .get_regions = { 0 } },
		  INV,
		  "arguments.max;got 0" },
		{ "max 513",
		  { .id = 1, .command = VR_PROTO_GET_REGIONS, .get_regions = { 513 } },
		  INV,
		  "arguments.max;513" },
		{ "no policy",
		  { .id = 1, .command = VR_PROTO_SET_POLICY, .set_policy = { NULL } },
		  INV,
		  "arguments.policy;missing" },
		{ "report interval 99",
		  { .id = 1, .command = VR_PROTO_SET_POLICY, .set_policy = { policy, TRUE, 99 } },
		  INV,
		  "arguments.report_interval_ms;99" },
	};

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autoptr(GError) err = NULL;
		g_autofree char *line = vr_proto_encode_request(&cases[i].req, &err);

		cr_assert_null(line, "%s: expected no line, got %s", cases[i].name, line);
		assert_proto_error(err, cases[i].cls, cases[i].want, cases[i].name);
	}
}

Test(proto_request, encode_refuses_a_policy_too_big_for_a_line)
{
	g_auto(vr_proto_request) req = { .id = 1, .command = VR_PROTO_SET_POLICY };
	g_autoptr(GError) err = NULL;
	g_autofree char *line = NULL;
	struct vr_scheme *base;

	req.set_policy.policy = vr_policy_new_profile(NULL, NULL);
	base = g_ptr_array_index(req.set_policy.policy->schemes, 0);
	for (guint i = 0; i < 200; i++) {
		struct vr_scheme *s = vr_scheme_copy(base);

		g_free(s->name);
		s->name = g_strdup_printf("scheme-%u", i);
		g_ptr_array_add(req.set_policy.policy->schemes, s);
	}
	line = vr_proto_encode_request(&req, &err);
	cr_assert_null(line, "expected no line for 201 schemes");
	assert_proto_error(err, VR_PROTO_ERROR_TOO_LONG, "set-policy;65536", "201 schemes");
}

/* ---- replies, errors and reports: round trips ---- */

TestSuite(proto_reply, .description = "agent->host messages: encode, decode, refuse");

Test(proto_reply, hello_round_trips)
{
	struct vr_proto_hello full = sample_hello();
	struct vr_proto_hello largest = { .version = 1, .nr_backends = VR_PROTO_MAX_BACKENDS };
	struct vr_proto_hello minimal = { .version = 1, .nr_backends = 1 };
	const struct vr_proto_hello *cases[] = { &full, &largest, &minimal };

	memset(largest.agent, 'a', VR_PROTO_MAX_AGENT_LEN);
	/* Quotes and backslashes are escaped, UTF-8 passes as is. */
	memset(largest.kernel, '"', VR_PROTO_MAX_KERNEL_LEN - 4);
	memcpy(largest.kernel + VR_PROTO_MAX_KERNEL_LEN - 4, "\\\xc3\xa9/", 4);
	for (guint i = 0; i < VR_PROTO_MAX_BACKENDS; i++) {
		memset(largest.backends[i], 'a' + i, VR_PROTO_MAX_BACKEND_LEN);
	}
	memcpy(largest.backend, largest.backends[7], sizeof(largest.backend));
	largest.has_reporting_order = TRUE;
	largest.reporting_order = VR_PROTO_MAX_REPORTING_ORDER;
	g_strlcpy(minimal.agent, "1", sizeof(minimal.agent));
	g_strlcpy(minimal.kernel, "6", sizeof(minimal.kernel));
	g_strlcpy(minimal.backends[0], "memcg", sizeof(minimal.backends[0]));
	g_strlcpy(minimal.backend, "none", sizeof(minimal.backend));

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *what = g_strdup_printf("hello case %u", i);
		g_autofree char *line = vr_proto_encode_hello(42, cases[i]);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, what);
		decode_message_ok(line, 42, VR_PROTO_HELLO, &msg, what);
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY, "%s: expected a reply: %s", what,
			     line);
		EQ(what, "id", msg.id, 42);
		cr_assert_eq(msg.command, VR_PROTO_HELLO);
		assert_hello_equal(&msg.hello, cases[i], what);
	}
}

Test(proto_reply, stats_and_report_round_trip)
{
	struct vr_agent_stats s = sample_stats();
	struct vr_agent_stats top = { .free_page_reporting = FALSE, .paused = TRUE };
	const uint64_t seqs[] = { 0, 1, VR_PROTO_MAX_INT };

	g_strlcpy(top.backend, "none", sizeof(top.backend));
	top.uptime_ms = top.nr_tried = top.sz_tried = top.nr_applied = top.sz_applied =
		top.qt_exceeds = top.reclaimer_cpu_us = top.agent_cpu_us = top.compactions =
			top.reclaimed_bytes = top.mem_total_bytes = top.mem_free_bytes =
				top.swap_total_bytes = top.swap_free_bytes = VR_PROTO_MAX_INT;

	for (guint i = 0; i < 2; i++) {
		const struct vr_agent_stats *want = i ? &top : &s;
		g_autofree char *line = vr_proto_encode_stats(3, want);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, "stats");
		decode_message_ok(line, 3, VR_PROTO_GET_STATS, &msg, "stats");
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY, "expected a reply: %s", line);
		assert_stats_equal(&msg.stats, want, "get-stats");
	}
	for (guint i = 0; i < ARRAY_LEN(seqs); i++) {
		g_autofree char *line = vr_proto_encode_report(seqs[i], &s);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, "report");
		/* No request is pending: a report needs none. */
		decode_message_ok(line, 0, VR_PROTO_HELLO, &msg, "report");
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPORT, "expected a report: %s", line);
		EQ("report", "id", msg.id, 0);
		EQ("report", "seq", msg.seq, seqs[i]);
		assert_stats_equal(&msg.stats, &s, "report");
	}
}

/* reportable_free_bytes is on the wire exactly when it is known, and the
 * decoder says whether it was there: absent is not 0. */
Test(proto_reply, reportable_free_bytes_only_when_known)
{
	struct vr_agent_stats known = sample_stats();
	struct vr_agent_stats zero = sample_stats();
	struct vr_agent_stats unknown = sample_stats();
	const struct {
		const struct vr_agent_stats *stats;
		const char *what;
		gboolean on_wire;
	} cases[] = {
		{ &known, "known", TRUE },
		{ &zero, "known to be 0", TRUE },
		{ &unknown, "unknown", FALSE },
	};

	zero.reportable_free_bytes = 0;
	unknown.has_reportable_free_bytes = FALSE;
	unknown.reportable_free_bytes = 0;
	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *stats = vr_proto_encode_stats(3, cases[i].stats);
		g_autofree char *report = vr_proto_encode_report(5, cases[i].stats);
		const char *lines[] = { stats, report };

		for (guint j = 0; j < ARRAY_LEN(lines); j++) {
			g_auto(vr_proto_message) msg = { 0 };

			assert_line(lines[j], cases[i].what);
			cr_assert_eq(strstr(lines[j], "\"reportable_free_bytes\":") != NULL,
				     cases[i].on_wire, "%s: the member %s be on the wire: %s",
				     cases[i].what, cases[i].on_wire ? "should" : "should not",
				     lines[j]);
			decode_message_ok(lines[j], j ? 0 : 3, VR_PROTO_GET_STATS, &msg,
					  cases[i].what);
			assert_stats_equal(&msg.stats, cases[i].stats, cases[i].what);
		}
	}
}

Test(proto_reply, reportable_free_bytes_decodes_with_its_flag)
{
	g_autofree char *with = patched(REP_STATS, "return.reportable_free_bytes", "2097152");
	g_autofree char *without = patched(REP_STATS, "return.thp_collapsed", "5");
	g_auto(vr_proto_message) m1 = { 0 };
	/* A decoder must clear what a message held before, not keep it. */
	g_auto(vr_proto_message) m2 = {
		.stats = { .has_reportable_free_bytes = TRUE, .reportable_free_bytes = 99 },
	};

	decode_message_ok(with, 7, VR_PROTO_GET_STATS, &m1, "with the member");
	cr_assert(m1.stats.has_reportable_free_bytes, "given: expected the flag set");
	cr_assert_eq(m1.stats.reportable_free_bytes, 2097152,
		     "given: expected 2097152, got %" G_GUINT64_FORMAT,
		     (guint64)m1.stats.reportable_free_bytes);
	decode_message_ok(without, 7, VR_PROTO_GET_STATS, &m2, "without the member");
	cr_assert_not(m2.stats.has_reportable_free_bytes, "absent: expected the flag clear");
	cr_assert_eq(m2.stats.reportable_free_bytes, 0, "absent: expected 0");
}

static struct vr_proto_regions regions_of(uint64_t sample, uint64_t aggr,
					  const struct vr_picture_region *r, guint n)
{
	struct vr_proto_regions out = { sample, aggr, NULL };

	out.regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	g_array_append_vals(out.regions, r, n);
	return out;
}

Test(proto_reply, regions_round_trip)
{
	/*
	 * [0, 4K) [4K, 12K)   [1M, 2M)      three regions, adjacent and apart
	 *  nr 20    nr 0        nr 7
	 */
	static const struct vr_picture_region three[] = {
		{ 0, 4096, 20, 3 },
		{ 4096, 12288, 0, 0 },
		{ 1 << 20, 2 << 20, 7, UINT32_MAX },
	};
	g_auto(vr_proto_regions) some = regions_of(5000, 100000, three, ARRAY_LEN(three));
	g_auto(vr_proto_regions) none = regions_of(1, 1, NULL, 0);
	struct vr_proto_regions null_array = { 5000, 100000, NULL };
	const struct vr_proto_regions *cases[] = { &some, &none, &null_array };

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *what = g_strdup_printf("regions case %u", i);
		g_autofree char *line = vr_proto_encode_regions(9, cases[i]);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, what);
		decode_message_ok(line, 9, VR_PROTO_GET_REGIONS, &msg, what);
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY, "%s: expected a reply: %s", what,
			     line);
		assert_regions_equal(&msg.regions, cases[i], what);
	}
}

/* 512 regions of the widest numbers still fit in one line: the widest a
 * picture allows (common/picture.h), an hour's aggregation of 65536 samples. */
Test(proto_reply, the_largest_regions_reply_fits_a_line)
{
	g_auto(vr_proto_regions) r = {
		.sample_interval_us = VR_PICTURE_MAX_AGGR_INTERVAL_US / VR_PICTURE_MAX_NR_ACCESSES,
		.aggr_interval_us = VR_PICTURE_MAX_AGGR_INTERVAL_US,
	};
	g_autofree char *line = NULL;
	g_auto(vr_proto_message) msg = { 0 };
	const uint64_t base = VR_PROTO_MAX_INT - (uint64_t)VR_PROTO_MAX_REGIONS * 2 * 4096;

	r.regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	for (guint i = 0; i < VR_PROTO_MAX_REGIONS; i++) {
		struct vr_picture_region reg = {
			.start = base + (uint64_t)i * 2 * 4096,
			.end = base + (uint64_t)i * 2 * 4096 + 4096,
			.nr_accesses = (uint32_t)(r.aggr_interval_us / r.sample_interval_us),
			.age = UINT32_MAX,
		};

		g_array_append_val(r.regions, reg);
	}
	line = vr_proto_encode_regions(UINT32_MAX, &r);
	assert_line(line, "512 widest regions");
	cr_assert_gt(strlen(line), 45000, "the numbers should be wide (%zu bytes)", strlen(line));
	decode_message_ok(line, UINT32_MAX, VR_PROTO_GET_REGIONS, &msg, "512 widest regions");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY, "expected a reply, got: %.200s", line);
	assert_regions_equal(&msg.regions, &r, "512 widest regions");
}

Test(proto_reply, reclaim_and_empty_round_trip)
{
	const struct vr_proto_reclaim_result res = { .reclaimed_bytes = 123 << 20,
						     .elapsed_ms = 250 };
	const enum vr_proto_command empties[] = { VR_PROTO_SET_POLICY, VR_PROTO_PAUSE,
						  VR_PROTO_RESUME };
	g_autofree char *line = vr_proto_encode_reclaim_result(5, &res);
	g_autofree char *want = dq("{'vreclaim':1,'id':5,'return':{'reclaimed_bytes':128974848,"
				   "'elapsed_ms':250}}\n");
	g_auto(vr_proto_message) msg = { 0 };

	cr_assert_str_eq(line, want);
	decode_message_ok(line, 5, VR_PROTO_RECLAIM, &msg, "reclaim");
	EQ("reclaim", "reclaimed_bytes", msg.reclaim.reclaimed_bytes, res.reclaimed_bytes);
	EQ("reclaim", "elapsed_ms", msg.reclaim.elapsed_ms, res.elapsed_ms);
	for (guint i = 0; i < ARRAY_LEN(empties); i++) {
		g_autofree char *l = vr_proto_encode_empty(6);
		g_autofree char *w = dq("{'vreclaim':1,'id':6,'return':{}}\n");
		g_auto(vr_proto_message) m = { 0 };

		cr_assert_str_eq(l, w);
		decode_message_ok(l, 6, empties[i], &m, vr_proto_command_name(empties[i]));
		cr_assert_eq(m.kind, VR_PROTO_MESSAGE_REPLY);
		cr_assert_eq(m.command, empties[i]);
	}
}

Test(proto_reply, wire_forms)
{
	struct vr_agent_stats s = sample_stats();
	struct vr_proto_hello h = sample_hello();
	g_autofree char *report = vr_proto_encode_report(41, &s);
	g_autofree char *hello = vr_proto_encode_hello(1, &h);
	g_autofree char *err = vr_proto_encode_error(0, VR_PROTO_ERROR_SYNTAX, "line 1: oops");
	g_autofree char *want_report = dq(
		"{'vreclaim':1,'report':{'backend':'damon','paused':false,'uptime_ms':3600000,"
		"'nr_tried':120,'sz_tried':536870912,'nr_applied':100,'sz_applied':419430400,"
		"'qt_exceeds':7,'reclaimer_cpu_us':1500000,'agent_cpu_us':250000,"
		"'compactions':3,'reclaimed_bytes':629145600,'mem_total_bytes':4294967296,'mem_free_bytes':1073741824,"
		"'swap_total_bytes':1073741824,'swap_free_bytes':943718400,"
		"'swap_cache_release_bytes':25165824,'reportable_free_bytes':536870912,"
		"'free_page_reporting':true,'seq':41}}\n");
	g_autofree char *want_hello = dq("{'vreclaim':1,'id':1,'return':{'version':1,"
					 "'agent':'0.1.0','kernel':'6.1.0-13-amd64',"
					 "'backends':['damon','memcg'],'backend':'damon',"
					 "'free_page_reporting':true,'reporting_order':9}}\n");
	g_autofree char *want_err =
		dq("{'vreclaim':1,'id':null,'error':{'class':'syntax','desc':'line 1: oops'}}\n");

	cr_assert_str_eq(report, want_report);
	cr_assert_str_eq(hello, want_hello);
	cr_assert_str_eq(err, want_err);
}

Test(proto_reply, errors_round_trip_with_every_class)
{
	for (int cls = VR_PROTO_ERROR_SYNTAX; cls <= VR_PROTO_ERROR_BUSY; cls++) {
		const char *name = vr_proto_error_class_name((enum vr_proto_error_class)cls);
		g_autofree char *desc =
			g_strdup_printf("Something about %s: \"quoted\" \\ é.", name);
		g_autofree char *line = vr_proto_encode_error((uint32_t)cls + 1,
							      (enum vr_proto_error_class)cls, desc);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, name);
		/* An error may answer an id the host does not know (any more). */
		decode_message_ok(line, 1000, VR_PROTO_HELLO, &msg, name);
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR, "%s: expected an error: %s", name,
			     line);
		EQ(name, "id", msg.id, cls + 1);
		cr_assert_eq((int)msg.error.cls, cls, "%s: got class %s", name,
			     vr_proto_error_class_name(msg.error.cls));
		cr_assert_str_eq(msg.error.desc, desc);
	}
}

Test(proto_reply, error_descriptions_are_cleaned)
{
	g_autoptr(GString) longer = g_string_new(NULL);
	const struct {
		const char *name;
		const char *desc;
		const char *want;
	} cases[] = {
		{ "control characters", "a\nb\tc\x1b[0m", "a b c [0m" },
		{ "a bidi override", "x\xe2\x80\xaey", "x y" },
		{ "invalid UTF-8", "caf\xc3 ok", "caf\xef\xbf\xbd ok" },
		{ "none", NULL, "The agent is busy." },
		{ "empty", "", "The agent is busy." },
	};

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *line =
			vr_proto_encode_error(1, VR_PROTO_ERROR_BUSY, cases[i].desc);
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(line, cases[i].name);
		decode_message_ok(line, 1, VR_PROTO_HELLO, &msg, cases[i].name);
		cr_assert_str_eq(msg.error.desc, cases[i].want, "%s: got '%s'", cases[i].name,
				 msg.error.desc);
	}
	/* 2000 two-byte characters: cut at a character boundary, with "...". */
	for (guint i = 0; i < 2000; i++)
		g_string_append(longer, "\xc3\xa9");
	{
		g_autofree char *line = vr_proto_encode_error(1, 99, longer->str);
		g_auto(vr_proto_message) msg = { 0 };
		size_t n;

		assert_line(line, "a long desc");
		decode_message_ok(line, 1, VR_PROTO_HELLO, &msg, "a long desc");
		cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_FAILED, "class 99 is sent as failed");
		n = strlen(msg.error.desc);
		cr_assert_leq(n, VR_PROTO_MAX_DESC_LEN, "%zu bytes", n);
		cr_assert_geq(n, VR_PROTO_MAX_DESC_LEN - 4, "%zu bytes", n);
		cr_assert(g_str_has_suffix(msg.error.desc, "..."), "cut descs end in ...");
		cr_assert(g_utf8_validate(msg.error.desc, -1, NULL));
	}
}

Test(proto_reply, gerror_gives_its_class)
{
	g_autoptr(GError) proto = g_error_new(VR_PROTO_ERROR, VR_PROTO_ERROR_BUSY, "held by x");
	g_autoptr(GError) other = g_error_new(G_FILE_ERROR, G_FILE_ERROR_NOENT, "no such file");
	g_autofree char *l1 = vr_proto_encode_gerror(4, proto);
	g_autofree char *l2 = vr_proto_encode_gerror(4, other);
	g_autofree char *l3 = vr_proto_encode_gerror(4, NULL);
	g_autofree char *w1 =
		dq("{'vreclaim':1,'id':4,'error':{'class':'busy','desc':'held by x'}}\n");
	g_autofree char *w2 =
		dq("{'vreclaim':1,'id':4,'error':{'class':'failed','desc':'no such file'}}\n");
	g_autofree char *w3 = dq(
		"{'vreclaim':1,'id':4,'error':{'class':'failed','desc':'The request failed.'}}\n");

	cr_assert_str_eq(l1, w1);
	cr_assert_str_eq(l2, w2);
	cr_assert_str_eq(l3, w3);
}

/* The agent's request decode errors, answered: the host reads them back. */
Test(proto_reply, a_decode_error_answers_its_request)
{
	const char *line = "{\"vreclaim\":1,\"id\":77,\"command\":\"reclaim\",\"arguments\":"
			   "{\"bytes\":1}}";
	g_auto(vr_proto_request) req = { 0 };
	g_autoptr(GError) err = NULL;
	g_autofree char *reply = NULL;
	g_auto(vr_proto_message) msg = { 0 };

	cr_assert_not(vr_proto_decode_request(line, strlen(line), &req, &err));
	reply = vr_proto_encode_gerror(req.id, err);
	decode_message_ok(reply, 77, VR_PROTO_RECLAIM, &msg, "the error reply");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR);
	EQ("error reply", "id", msg.id, 77);
	cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_INVALID_ARGUMENT);
	cr_assert_str_eq(msg.error.desc,
			 "arguments.bytes: expected an integer in 4096..1125899906842624 (got 1)");
}

/* The agent's encoders send "failed" instead of a reply the host would refuse. */
Test(proto_reply, encoders_replace_invalid_results_by_failed)
{
	struct vr_proto_hello no_backends = sample_hello();
	struct vr_proto_hello not_terminated = sample_hello();
	struct vr_agent_stats more_free = sample_stats();
	struct vr_agent_stats huge = sample_stats();
	struct vr_proto_reclaim_result res = { .reclaimed_bytes = UINT64_MAX };
	static const struct vr_picture_region unsorted[] = { { 8192, 12288, 0, 0 },
							     { 0, 4096, 0, 0 } };
	g_auto(vr_proto_regions) bad_regions = regions_of(5000, 100000, unsorted, 2);
	g_auto(vr_proto_regions) too_many = regions_of(5000, 100000, NULL, 0);
	g_auto(vr_proto_regions) two_hours = regions_of(1000000, 7200000000ULL, unsorted + 1, 1);
	struct {
		const char *name;
		char *line;
		uint32_t id;
		const char *want;
	} cases[] = {
		{ "no backends", NULL, 1, "return.backends;got 0" },
		{ "an agent string filling its array", NULL, 1, "return.agent;64" },
		{ "mem_free above mem_total", NULL, 1, "return.mem_free_bytes" },
		{ "uptime above INT64_MAX", NULL, 1, "return.uptime_ms" },
		{ "unsorted regions", NULL, 1, "return.regions[1].start" },
		{ "513 regions", NULL, 1, "return.regions;512;513" },
		{ "a picture aggregated over two hours", NULL, 1,
		  "return.aggr_interval_us;7200000000;3600000000" },
		{ "reclaimed above INT64_MAX", NULL, 1, "return.reclaimed_bytes" },
		{ "a reply to id 0", NULL, 0, "id;got 0" },
		{ "a report of bad stats", NULL, 0, "report.mem_free_bytes" },
		{ "a report seq above INT64_MAX", NULL, 0, "report.seq" },
	};

	no_backends.nr_backends = 0;
	memset(not_terminated.agent, 'x', sizeof(not_terminated.agent));
	more_free.mem_free_bytes = more_free.mem_total_bytes + 1;
	huge.uptime_ms = VR_PROTO_MAX_INT + 1;
	for (guint i = 0; i < VR_PROTO_MAX_REGIONS + 1; i++) {
		struct vr_picture_region r = { (uint64_t)i * 4096, (uint64_t)i * 4096 + 4096, 0,
					       0 };

		g_array_append_val(too_many.regions, r);
	}
	cases[0].line = vr_proto_encode_hello(1, &no_backends);
	cases[1].line = vr_proto_encode_hello(1, &not_terminated);
	cases[2].line = vr_proto_encode_stats(1, &more_free);
	cases[3].line = vr_proto_encode_stats(1, &huge);
	cases[4].line = vr_proto_encode_regions(1, &bad_regions);
	cases[5].line = vr_proto_encode_regions(1, &too_many);
	cases[6].line = vr_proto_encode_regions(1, &two_hours);
	cases[7].line = vr_proto_encode_reclaim_result(1, &res);
	cases[8].line = vr_proto_encode_empty(0);
	cases[9].line = vr_proto_encode_report(1, &more_free);
	cases[10].line = vr_proto_encode_report(VR_PROTO_MAX_INT + 1, &more_free);

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_auto(vr_proto_message) msg = { 0 };

		assert_line(cases[i].line, cases[i].name);
		decode_message_ok(cases[i].line, 1, VR_PROTO_HELLO, &msg, cases[i].name);
		cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR, "%s: expected an error, got %s",
			     cases[i].name, cases[i].line);
		EQ(cases[i].name, "id", msg.id, cases[i].id);
		cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_FAILED, "%s: class %s", cases[i].name,
			     vr_proto_error_class_name(msg.error.cls));
		cr_assert(msg_has_all(msg.error.desc, cases[i].want),
			  "%s: expected the desc to mention '%s', got '%s'", cases[i].name,
			  cases[i].want, msg.error.desc);
		g_free(cases[i].line);
	}
}

ParameterizedTestParameters(proto_reply, hostile)
{
	return cr_make_param_array(struct patch_case, message_cases, ARRAY_LEN(message_cases));
}

ParameterizedTest(struct patch_case *c, proto_reply, hostile)
{
	run_patch_case(c);
}

Test(proto_reply, unknown_classes_read_as_failed)
{
	g_autofree char *line = patched(REP_ERROR, "error.class", "'rate-limited'");
	g_auto(vr_proto_message) msg = { 0 };

	decode_message_ok(line, 7, VR_PROTO_HELLO, &msg, "class rate-limited");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR);
	cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_FAILED);
	cr_assert_str_eq(msg.error.desc, "DAMON is in use.");
}

/* Counts are checked before anything is allocated for them. */
Test(proto_reply, too_many_regions)
{
	g_autoptr(GString)
		s = g_string_new("{\"vreclaim\":1,\"id\":7,\"return\":{\"sample_interval_us\":1,"
				 "\"aggr_interval_us\":1,\"regions\":[");
	g_autoptr(GError) err = NULL;
	struct pending p = { 7, VR_PROTO_GET_REGIONS };
	g_auto(vr_proto_message) msg = { 0 };

	for (guint i = 0; i < 20000; i++)
		g_string_append(s, i ? ",0" : "0");
	g_string_append(s, "]}}");
	cr_assert_not(vr_proto_decode_message(s->str, s->len, lookup_pending, &p, &msg, &err));
	assert_proto_error(err, INV, "return.regions;512;20000", "20000 regions");
	cr_assert_eq(msg.id, 7, "the error is about request 7");
	cr_assert_null(msg.regions.regions, "nothing is left to free");
}

Test(proto_reply, an_error_desc_too_long)
{
	g_autoptr(GString) desc = g_string_new(NULL);
	g_autofree char *line = NULL;
	g_autoptr(GError) err = NULL;
	struct pending p = { 7, VR_PROTO_HELLO };
	g_auto(vr_proto_message) msg = { 0 };

	for (guint i = 0; i < VR_PROTO_MAX_DESC_LEN + 1; i++)
		g_string_append_c(desc, 'd');
	line = g_strdup_printf("{\"vreclaim\":1,\"id\":7,\"error\":{\"class\":\"busy\","
			       "\"desc\":\"%s\"}}",
			       desc->str);
	cr_assert_not(vr_proto_decode_message(line, strlen(line), lookup_pending, &p, &msg, &err));
	assert_proto_error(err, INV, "error.desc;1024;1025", "a desc of 1025 bytes");
	cr_assert_eq(msg.id, 7);
}

/* ---- the line reader ---- */

TestSuite(proto_reader, .description = "vr_proto_reader: bytes in, lines out");

/* All the lines @r has now, joined with '|'; a too-long line reads "<too-long>". */
static char *take_all(struct vr_proto_reader *r)
{
	GString *out = g_string_new(NULL);

	for (;;) {
		g_autoptr(GError) err = NULL;
		g_autofree char *line = NULL;
		gsize len;

		if (!vr_proto_reader_next(r, &line, &len, &err)) {
			assert_proto_error(err, VR_PROTO_ERROR_TOO_LONG, "65536;skipped",
					   "the reader");
			cr_assert_null(line);
			g_string_append_printf(out, "%s<too-long>", out->len ? "|" : "");
			continue;
		}
		if (!line)
			break;
		cr_assert_eq(strlen(line), len, "the line's length: %zu vs %zu", strlen(line), len);
		g_string_append_printf(out, "%s%s", out->len ? "|" : "", line);
	}
	return g_string_free(out, FALSE);
}

Test(proto_reader, several_lines_in_one_feed)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	const char *data = "{\"a\":1}\n{\"b\":2}\n{\"c\"";
	g_autofree char *got = NULL;
	g_autofree char *rest = NULL;

	vr_proto_reader_feed(r, data, strlen(data));
	got = take_all(r);
	cr_assert_str_eq(got, "{\"a\":1}|{\"b\":2}");
	cr_assert_eq(vr_proto_reader_buffered(r), 4, "the unfinished line stays: %zu",
		     vr_proto_reader_buffered(r));
	vr_proto_reader_feed(r, ":3}\n", 4);
	rest = take_all(r);
	cr_assert_str_eq(rest, "{\"c\":3}");
	cr_assert_eq(vr_proto_reader_buffered(r), 0);
}

Test(proto_reader, byte_by_byte)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	struct vr_proto_request reqs[] = {
		{ .id = 1, .command = VR_PROTO_HELLO },
		{ .id = 2, .command = VR_PROTO_RECLAIM, .reclaim = { 1 << 20, 100 } },
		{ .id = 3, .command = VR_PROTO_GET_REGIONS, .get_regions = { 64 } },
	};
	g_autoptr(GString) stream = g_string_new(NULL);
	guint got = 0;

	for (guint i = 0; i < ARRAY_LEN(reqs); i++) {
		g_autofree char *line = vr_proto_encode_request(&reqs[i], NULL);

		g_string_append(stream, line);
	}
	for (gsize i = 0; i < stream->len; i++) {
		g_autofree char *line = NULL;
		gsize len;

		vr_proto_reader_feed(r, stream->str + i, 1);
		cr_assert(vr_proto_reader_next(r, &line, &len, NULL));
		if (line) {
			g_auto(vr_proto_request) req = { 0 };

			cr_assert_eq(stream->str[i], '\n', "a line only at a newline (byte %zu)",
				     i);
			decode_request_ok(line, &req, "a line fed byte by byte");
			EQ("byte by byte", "id", req.id, reqs[got].id);
			cr_assert_eq(req.command, reqs[got].command);
			got++;
		}
	}
	cr_assert_eq(got, ARRAY_LEN(reqs), "expected %zu lines, got %u", ARRAY_LEN(reqs), got);
}

Test(proto_reader, empty_lines_are_skipped_and_crlf_is_tolerated)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	const char *data = "\n\r\n  \t\n{\"a\":1}\r\n\n{\"b\":2}\n \r\n";
	g_autofree char *got = NULL;
	g_autofree char *line = NULL;
	g_auto(vr_proto_request) req = { 0 };
	const char *crlf = "{\"vreclaim\":1,\"id\":5,\"command\":\"pause\"}\r\n";

	vr_proto_reader_feed(r, data, strlen(data));
	got = take_all(r);
	cr_assert_str_eq(got, "{\"a\":1}|{\"b\":2}", "got '%s'", got);

	/* A CRLF line decodes like an LF line. */
	vr_proto_reader_feed(r, crlf, strlen(crlf));
	cr_assert(vr_proto_reader_next(r, &line, &(gsize){ 0 }, NULL));
	cr_assert_not_null(line);
	cr_assert_eq(line[strlen(line) - 1], '}', "the CR is dropped: '%s'", line);
	decode_request_ok(line, &req, "a CRLF line");
	cr_assert_eq(req.command, VR_PROTO_PAUSE);
}

Test(proto_reader, a_line_too_long_is_one_error_then_reading_goes_on)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	g_autofree char *big = g_malloc(70000);
	g_autofree char *got = NULL;

	memset(big, 'x', 70000);
	vr_proto_reader_feed(r, "{\"a\":1}\n", 8);
	vr_proto_reader_feed(r, big, 70000);
	vr_proto_reader_feed(r, "\n{\"b\":2}\n", 9);
	got = take_all(r);
	cr_assert_str_eq(got, "{\"a\":1}|<too-long>|{\"b\":2}", "got '%.100s'", got);
	cr_assert_eq(vr_proto_reader_buffered(r), 0);
}

/* The error comes as soon as the line cannot fit, not at its newline. */
Test(proto_reader, a_line_too_long_is_reported_early_and_memory_stays_bounded)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	char chunk[4096];
	guint errors = 0;
	g_autofree char *after = NULL;

	memset(chunk, 'y', sizeof(chunk));
	for (guint i = 0; i < 2560; i++) { /* 10 MiB without a newline */
		g_autofree char *line = NULL;
		g_autoptr(GError) err = NULL;
		gsize len;

		vr_proto_reader_feed(r, chunk, sizeof(chunk));
		cr_assert_leq(vr_proto_reader_buffered(r), VR_PROTO_MAX_LINE - 1,
			      "after %u KiB: %zu bytes held", (i + 1) * 4,
			      vr_proto_reader_buffered(r));
		if (!vr_proto_reader_next(r, &line, &len, &err)) {
			errors++;
			cr_assert_eq(i, VR_PROTO_MAX_LINE / sizeof(chunk) - 1,
				     "the error at %u KiB, expected it at 64 KiB", (i + 1) * 4);
		}
		cr_assert_null(line);
	}
	cr_assert_eq(errors, 1, "one error for one line, got %u", errors);
	vr_proto_reader_feed(r, "yyy\nok\n", 7);
	after = take_all(r);
	cr_assert_str_eq(after, "ok", "the rest of the long line is dropped: '%s'", after);
}

Test(proto_reader, the_limit_counts_the_newline_and_cr)
{
	const struct {
		const char *name;
		gsize content; /* bytes before the line end */
		const char *end;
		gboolean fits;
	} cases[] = {
		{ "65535 + LF", VR_PROTO_MAX_LINE - 1, "\n", TRUE },
		{ "65536 + LF", VR_PROTO_MAX_LINE, "\n", FALSE },
		{ "65534 + CRLF", VR_PROTO_MAX_LINE - 2, "\r\n", TRUE },
		{ "65535 + CRLF", VR_PROTO_MAX_LINE - 1, "\r\n", FALSE },
	};

	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
		g_autofree char *data = g_malloc(cases[i].content);
		g_autofree char *line = NULL;
		g_autoptr(GError) err = NULL;
		gsize len = 0;
		gboolean ok;

		memset(data, 'z', cases[i].content);
		vr_proto_reader_feed(r, data, cases[i].content);
		vr_proto_reader_feed(r, cases[i].end, strlen(cases[i].end));
		ok = vr_proto_reader_next(r, &line, &len, &err);
		cr_assert_eq(ok && line, cases[i].fits, "%s: expected %s", cases[i].name,
			     cases[i].fits ? "a line" : "an error");
		if (cases[i].fits)
			EQ(cases[i].name, "length", len, VR_PROTO_MAX_LINE - strlen(cases[i].end));
		else
			assert_proto_error(err, VR_PROTO_ERROR_TOO_LONG, "65536", cases[i].name);
	}
}

Test(proto_reader, nul_bytes_pass_through_to_the_decoder)
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();
	static const char data[] = "{\"vreclaim\":1,\0\"id\":1}\n";
	g_autofree char *line = NULL;
	g_autoptr(GError) err = NULL;
	g_auto(vr_proto_request) req = { 0 };
	gsize len;

	vr_proto_reader_feed(r, data, sizeof(data) - 1);
	cr_assert(vr_proto_reader_next(r, &line, &len, NULL));
	cr_assert_eq(len, sizeof(data) - 2, "the line keeps its NUL: %zu bytes", len);
	cr_assert_not(vr_proto_decode_request(line, len, &req, &err));
	assert_proto_error(err, VR_PROTO_ERROR_SYNTAX, "NUL", "a NUL byte");
}

/* ---- mutations ---- */

TestSuite(proto_mutations, .description = "whatever decodes, encodes back and decodes again");

/* Re-encode what the agent read, and read it again. */
static void check_request_again(const struct vr_proto_request *req, const char *line)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *again = vr_proto_encode_request(req, &err);
	g_auto(vr_proto_request) back = { 0 };

	cr_assert_not_null(again, "decoded but cannot be encoded: %s\n%s", err ? err->message : "?",
			   line);
	decode_request_ok(again, &back, line);
	cr_assert_eq(back.id, req->id);
	cr_assert_eq(back.command, req->command);
}

static char *encode_message(const struct vr_proto_message *m)
{
	switch (m->kind) {
	case VR_PROTO_MESSAGE_REPORT:
		return vr_proto_encode_report(m->seq, &m->stats);
	case VR_PROTO_MESSAGE_ERROR:
		return vr_proto_encode_error(m->id, m->error.cls, m->error.desc);
	case VR_PROTO_MESSAGE_REPLY:
		break;
	}
	switch (m->command) {
	case VR_PROTO_HELLO:
		return vr_proto_encode_hello(m->id, &m->hello);
	case VR_PROTO_GET_STATS:
		return vr_proto_encode_stats(m->id, &m->stats);
	case VR_PROTO_GET_REGIONS:
		return vr_proto_encode_regions(m->id, &m->regions);
	case VR_PROTO_GET_COLD_HIST:
		return vr_proto_encode_cold_hist(m->id, &m->cold_hist);
	case VR_PROTO_RECLAIM:
		return vr_proto_encode_reclaim_result(m->id, &m->reclaim);
	default:
		return vr_proto_encode_empty(m->id);
	}
}

static void check_message_again(const struct vr_proto_message *m, enum vr_proto_command command,
				const char *line)
{
	g_autofree char *again = encode_message(m);
	g_auto(vr_proto_message) back = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_proto_decode_message(again, strlen(again), lookup_any, &command, &back, &err),
		  "re-encoded line refused: %s\n%s\nfrom %s", err ? err->message : "?", again,
		  line);
	cr_assert_eq(back.kind, m->kind, "the kind changed: %s\nfrom %s", again, line);
	if (m->kind == VR_PROTO_MESSAGE_ERROR) {
		cr_assert_eq(back.error.cls, m->error.cls);
		cr_assert_str_eq(back.error.desc, m->error.desc);
	}
}

static void mutate(GRand *rand, GString *s)
{
	static const char alphabet[] = "{}[]\",:0123456789-.eE+ tfnul\\u'x\xc3\xff\t";
	guint n = (guint)g_rand_int_range(rand, 1, 4);

	for (guint k = 0; k < n && s->len > 0; k++) {
		gsize at = (gsize)g_rand_int_range(rand, 0, (gint32)s->len);
		char c = alphabet[g_rand_int_range(rand, 0, (gint32)sizeof(alphabet) - 1)];
		char *digit = strpbrk(s->str + at, "0123456789");

		switch (g_rand_int_range(rand, 0, 8)) {
		case 5:
		case 6: /* another number: mostly valid JSON, often out of range */
			if (digit)
				*digit = (char)('0' + g_rand_int_range(rand, 0, 10));
			break;
		case 7:
			if (digit)
				g_string_insert_c(s, digit - s->str,
						  (char)('0' + g_rand_int_range(rand, 0, 10)));
			break;
		case 0:
			s->str[at] = c;
			break;
		case 1:
			g_string_erase(s, (gssize)at, 1);
			break;
		case 2:
			g_string_insert_c(s, (gssize)at, c);
			break;
		case 3:
			g_string_truncate(s, at);
			break;
		case 4: { /* repeat a piece: deeper nesting, more members */
			gsize len = MIN((gsize)g_rand_int_range(rand, 1, 40), s->len - at);
			g_autofree char *piece = g_strndup(s->str + at, len);

			g_string_insert(s, (gssize)at, piece);
			break;
		}
		}
	}
}

Test(proto_mutations, decoders_agree_with_encoders)
{
	g_autoptr(GRand) rand = g_rand_new_with_seed(20240611);
	guint accepted = 0;

	for (guint round = 0; round < 4000; round++) {
		enum template t = (enum template)(round % NR_TEMPLATES);
		g_autofree char *base = dq(templates[t].line);
		g_autoptr(GString) s = g_string_new(base);
		g_autoptr(GError) err = NULL;

		mutate(rand, s);
		if (templates[t].request) {
			g_auto(vr_proto_request) req = { 0 };

			if (vr_proto_decode_request(s->str, s->len, &req, &err)) {
				check_request_again(&req, s->str);
				accepted++;
			}
		} else {
			enum vr_proto_command command = templates[t].command;
			g_auto(vr_proto_message) msg = { 0 };

			if (vr_proto_decode_message(s->str, s->len, lookup_any, &command, &msg,
						    &err)) {
				check_message_again(&msg, command, s->str);
				accepted++;
			}
		}
		if (err) {
			cr_assert_eq(err->domain, VR_PROTO_ERROR, "%s", err->message);
			cr_assert(err->code >= VR_PROTO_ERROR_SYNTAX &&
					  err->code <= VR_PROTO_ERROR_INVALID_ARGUMENT,
				  "decoders use syntax..invalid-argument, got %d", err->code);
			cr_assert(*err->message, "an empty message");
		}
	}
	cr_assert_gt(accepted, 400, "the mutations should leave some lines valid (%u)", accepted);
}

/* ---- the cold histogram (capability "cold-histogram") ---- */

TestSuite(proto_cold_hist, .description = "get-cold-histogram, its capability and generation");

/* A get-cold-histogram reply: @nr buckets of @fill bytes, bucket @at (when
 * < @nr; G_MAXUINT for none) of @at_value (a JSON literal), the other members as given. */
static char *cold_line(const char *generation, const char *nr_regions, guint nr, uint64_t fill,
		       guint at, const char *at_value)
{
	GString *s = g_string_new(NULL);

	g_string_append_printf(s,
			       "{\"vreclaim\":1,\"id\":9,\"return\":{\"generation\":%s,"
			       "\"sample_interval_us\":5000,\"aggr_interval_us\":100000,"
			       "\"nr_regions\":%s,\"bytes\":[",
			       generation, nr_regions);
	for (guint i = 0; i < nr; i++) {
		if (i)
			g_string_append_c(s, ',');
		if (i == at)
			g_string_append(s, at_value);
		else
			g_string_append_printf(s, "%" PRIu64, fill);
	}
	g_string_append(s, "]}}");
	return g_string_free(s, FALSE);
}

static void decode_cold_refused(const char *line, const char *want, const char *what)
{
	struct pending p = { 9, VR_PROTO_GET_COLD_HIST };
	g_auto(vr_proto_message) msg = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_proto_decode_message(line, strlen(line), lookup_pending, &p, &msg, &err),
		      "%s: expected a refusal of %s", what, line);
	assert_proto_error(err, VR_PROTO_ERROR_INVALID_ARGUMENT, want, what);
	EQ(what, "id", msg.id, 9);
}

Test(proto_cold_hist, reply_round_trips)
{
	struct vr_proto_cold_hist want = {
		.generation = 3,
		.sample_interval_us = 5000,
		.aggr_interval_us = 100000,
		.nr_regions = VR_PROTO_MAX_REGIONS,
	};
	g_auto(vr_proto_message) msg = { 0 };
	g_autofree char *line = NULL;

	for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++)
		want.bytes[i] = (uint64_t)i * 4096 * 1021;
	/* The last bucket takes what is left of the bound. */
	want.bytes[VR_MAX_SCORE] =
		VR_PROTO_MAX_INT - (uint64_t)VR_MAX_SCORE * (VR_MAX_SCORE - 1) / 2 * 4096 * 1021;
	line = vr_proto_encode_cold_hist(9, &want);
	assert_line(line, "cold histogram");
	cr_assert(strstr(line, "\"return\":{\"generation\":3,") != NULL, "wire form: %s", line);
	decode_message_ok(line, 9, VR_PROTO_GET_COLD_HIST, &msg, "cold histogram");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_REPLY);
	cr_assert_eq(msg.command, VR_PROTO_GET_COLD_HIST);
	EQ("cold histogram", "generation", msg.cold_hist.generation, want.generation);
	EQ("cold histogram", "sample", msg.cold_hist.sample_interval_us, want.sample_interval_us);
	EQ("cold histogram", "aggr", msg.cold_hist.aggr_interval_us, want.aggr_interval_us);
	EQ("cold histogram", "nr_regions", msg.cold_hist.nr_regions, want.nr_regions);
	for (guint i = 0; i < VR_PROTO_COLD_HIST_BUCKETS; i++)
		cr_assert_eq(msg.cold_hist.bytes[i], want.bytes[i],
			     "bucket %u: %" PRIu64 " != %" PRIu64, i, msg.cold_hist.bytes[i],
			     want.bytes[i]);
}

Test(proto_cold_hist, refuses_what_a_guest_cannot_mean)
{
	const guint n = VR_PROTO_COLD_HIST_BUCKETS;
	g_autofree char *ok = cold_line("1", "300", n, 4096, G_MAXUINT, NULL);
	g_autofree char *few = cold_line("1", "300", n - 1, 4096, G_MAXUINT, NULL);
	g_autofree char *many = cold_line("1", "300", n + 1, 4096, G_MAXUINT, NULL);
	g_autofree char *neg = cold_line("1", "300", n, 4096, 5, "-1");
	g_autofree char *frac = cold_line("1", "300", n, 4096, 5, "1.5");
	g_autofree char *big = cold_line("1", "300", n, 4096, 5, "9223372036854775808");
	g_autofree char *sum = cold_line("1", "300", n, 4096, 7, "9223372036854775807");
	g_autofree char *gen0 = cold_line("0", "300", n, 4096, G_MAXUINT, NULL);
	g_autofree char *regs = cold_line("1", "513", n, 4096, G_MAXUINT, NULL);
	g_auto(vr_proto_message) msg = { 0 };

	decode_message_ok(ok, 9, VR_PROTO_GET_COLD_HIST, &msg, "a valid histogram");
	decode_cold_refused(few, "return.bytes", "99 buckets");
	decode_cold_refused(many, "return.bytes", "101 buckets");
	decode_cold_refused(neg, "return.bytes[5]", "a negative bucket");
	decode_cold_refused(frac, "return.bytes[5]", "a fraction");
	decode_cold_refused(big, "return.bytes[5]", "a bucket beyond INT64_MAX");
	decode_cold_refused(sum, "add up", "buckets whose sum is beyond INT64_MAX");
	decode_cold_refused(gen0, "return.generation", "generation 0");
	decode_cold_refused(regs, "return.nr_regions", "513 regions");
	decode_cold_refused("{\"vreclaim\":1,\"id\":9,\"return\":{\"generation\":1,"
			    "\"sample_interval_us\":5000,\"aggr_interval_us\":100000,"
			    "\"nr_regions\":1}}",
			    "return.bytes", "no buckets");
	{
		/* The intervals as a picture's: aggregation at least sampling. */
		g_auto(GStrv) parts = g_strsplit(ok, "\"aggr_interval_us\":100000", 2);
		g_autofree char *short_aggr = g_strjoinv("\"aggr_interval_us\":10", parts);

		decode_cold_refused(short_aggr, "return.aggr_interval_us", "aggr below sample");
	}
}

Test(proto_cold_hist, the_encoder_sends_failed_for_an_invalid_histogram)
{
	struct vr_proto_cold_hist bad = { .generation = 1,
					  .sample_interval_us = 1,
					  .aggr_interval_us = 1 };
	g_auto(vr_proto_message) msg = { 0 };
	g_autofree char *line = NULL;

	bad.bytes[0] = VR_PROTO_MAX_INT;
	bad.bytes[1] = 1;
	line = vr_proto_encode_cold_hist(4, &bad);
	decode_message_ok(line, 4, VR_PROTO_GET_COLD_HIST, &msg, "invalid histogram");
	cr_assert_eq(msg.kind, VR_PROTO_MESSAGE_ERROR, "expected an error reply: %s", line);
	cr_assert_eq(msg.error.cls, VR_PROTO_ERROR_FAILED);
	cr_assert(strstr(msg.error.desc, "return.bytes[1]") != NULL, "%s", msg.error.desc);
}

Test(proto_cold_hist, hello_capability)
{
	struct vr_proto_hello h = sample_hello();
	const char *base = "{\"vreclaim\":1,\"id\":1,\"return\":{\"version\":1,\"agent\":\"a\","
			   "\"kernel\":\"k\",\"backends\":[\"damon\"],\"backend\":\"damon\","
			   "\"free_page_reporting\":true";
	static const struct {
		const char *caps;
		gboolean ok, cold;
		const char *want;
	} cases[] = {
		{ "", TRUE, FALSE, NULL },
		{ ",\"capabilities\":[]", TRUE, FALSE, NULL },
		{ ",\"capabilities\":[\"cold-histogram\"]", TRUE, TRUE, NULL },
		{ ",\"capabilities\":[\"from-the-future\",\"cold-histogram\"]", TRUE, TRUE, NULL },
		{ ",\"capabilities\":[\"from-the-future\"]", TRUE, FALSE, NULL },
		{ ",\"capabilities\":\"cold-histogram\"", FALSE, FALSE, "return.capabilities" },
		{ ",\"capabilities\":[\"cold-histogram\",\"cold-histogram\"]", FALSE, FALSE,
		  "return.capabilities[1]" },
		{ ",\"capabilities\":[\"Cold\"]", FALSE, FALSE, "return.capabilities[0]" },
		{ ",\"capabilities\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]",
		  FALSE, FALSE, "at most 8" },
	};

	for (guint i = 0; i < 2; i++) {
		g_autofree char *line = NULL;
		g_auto(vr_proto_message) msg = { 0 };

		h.cold_histogram = i;
		line = vr_proto_encode_hello(1, &h);
		cr_assert_eq(strstr(line, "\"capabilities\":[\"cold-histogram\"]") != NULL, !!i,
			     "capability %u on the wire: %s", i, line);
		decode_message_ok(line, 1, VR_PROTO_HELLO, &msg, "hello");
		assert_hello_equal(&msg.hello, &h, "hello with and without the capability");
	}
	for (guint i = 0; i < ARRAY_LEN(cases); i++) {
		g_autofree char *line = g_strdup_printf("%s%s}}", base, cases[i].caps);
		struct pending p = { 1, VR_PROTO_HELLO };
		g_auto(vr_proto_message) msg = { 0 };
		g_autoptr(GError) err = NULL;
		gboolean ok =
			vr_proto_decode_message(line, strlen(line), lookup_pending, &p, &msg, &err);

		cr_assert_eq(ok, cases[i].ok, "%s: expected %s, got %s", line,
			     cases[i].ok ? "accepted" : "refused", err ? err->message : "accepted");
		if (ok)
			cr_assert_eq(!!msg.hello.cold_histogram, cases[i].cold, "%s", line);
		else
			assert_proto_error(err, VR_PROTO_ERROR_INVALID_ARGUMENT, cases[i].want,
					   line);
	}
}

Test(proto_cold_hist, set_policy_generation_and_request)
{
	g_auto(vr_proto_request) req = { .id = 5, .command = VR_PROTO_SET_POLICY };
	g_auto(vr_proto_request) back = { 0 };
	g_auto(vr_proto_request) get = { .id = 6, .command = VR_PROTO_GET_COLD_HIST };
	g_auto(vr_proto_request) get_back = { 0 };
	g_autoptr(GError) err = NULL;
	g_autofree char *line = NULL, *get_line = NULL;

	req.set_policy.policy = vr_policy_new_profile(NULL, NULL);
	req.set_policy.generation = 12;
	/* Without its policy, a generation is refused. */
	line = vr_proto_encode_request(&req, &err);
	cr_assert_null(line, "a generation without a histogram policy was encoded");
	assert_proto_error(err, VR_PROTO_ERROR_INVALID_ARGUMENT, "arguments.generation",
			   "generation alone");
	g_clear_error(&err);
	req.set_policy.histogram_policy = vr_policy_new_profile(NULL, NULL);
	line = vr_proto_encode_request(&req, &err);
	cr_assert_not_null(line, "%s", err ? err->message : "");
	cr_assert(strstr(line, "\"generation\":12,\"histogram_policy\":{") != NULL, "%s", line);
	decode_request_ok(line, &back, "set-policy with a generation");
	EQ("set-policy", "generation", back.set_policy.generation, 12);
	cr_assert_not_null(back.set_policy.histogram_policy);
	{
		g_autofree char *a = vr_policy_to_json(back.set_policy.histogram_policy);
		g_autofree char *b = vr_policy_to_json(req.set_policy.histogram_policy);

		cr_assert_str_eq(a, b);
	}

	/* The agent refuses one without the other, and generation 0. */
	static const char *const refused[][2] = {
		{ "{\"vreclaim\":1,\"id\":2,\"command\":\"set-policy\",\"arguments\":{\"policy\":{},"
		  "\"generation\":3}}",
		  "arguments.generation" },
		{ "{\"vreclaim\":1,\"id\":2,\"command\":\"set-policy\",\"arguments\":{\"policy\":{},"
		  "\"histogram_policy\":{}}}",
		  "arguments.generation" },
		{ "{\"vreclaim\":1,\"id\":2,\"command\":\"set-policy\",\"arguments\":{\"policy\":{},"
		  "\"generation\":0,\"histogram_policy\":{}}}",
		  "arguments.generation" },
		{ "{\"vreclaim\":1,\"id\":2,\"command\":\"set-policy\",\"arguments\":{\"policy\":{},"
		  "\"generation\":1,\"histogram_policy\":{\"schemes\":7}}}",
		  "arguments.histogram_policy" },
		{ "{\"vreclaim\":1,\"id\":2,\"command\":\"get-cold-histogram\",\"arguments\":{"
		  "\"max\":3}}",
		  "arguments" },
	};
	for (guint i = 0; i < ARRAY_LEN(refused); i++) {
		g_auto(vr_proto_request) r = { 0 };
		g_autoptr(GError) e = NULL;

		cr_assert_not(vr_proto_decode_request(refused[i][0], strlen(refused[i][0]), &r, &e),
			      "accepted: %s", refused[i][0]);
		assert_proto_error(e, VR_PROTO_ERROR_INVALID_ARGUMENT, refused[i][1],
				   refused[i][0]);
		EQ(refused[i][0], "id", r.id, 2);
	}

	get_line = vr_proto_encode_request(&get, &err);
	cr_assert_not_null(get_line);
	cr_assert_str_eq(get_line,
			 "{\"vreclaim\":1,\"id\":6,\"command\":\"get-cold-histogram\"}\n");
	decode_request_ok(get_line, &get_back, "get-cold-histogram");
	cr_assert_eq(get_back.command, VR_PROTO_GET_COLD_HIST);
}
