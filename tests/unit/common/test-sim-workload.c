/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of workload files (common/sim-workload.c, vr_sim_load_json()):
 * a full document against the same script built with vr_sim_add_phase(),
 * size suffixes, every kind of error with its JSON path, and atomicity.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "sim.h"
#include "test-sim-helpers.h"

/* ---- helpers ---- */

static void load_ok(struct vr_sim *sim, const char *doc)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_sim_load_json(sim, doc, -1, &err), "loading should succeed, got: %s\n%s",
		  err ? err->message : "FALSE without an error", doc);
	cr_assert_null(err);
}

/* Loading @doc fails with a message starting with @prefix. */
static void load_fails(struct vr_sim *sim, const char *doc, const char *prefix)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_sim_load_json(sim, doc, -1, &err), "loading should fail:\n%s", doc);
	cr_assert_not_null(err, "a failure should set the error");
	cr_assert(g_error_matches(err, VR_SIM_ERROR, VR_SIM_ERROR_INVALID),
		  "wrong error domain or code: %s", err->message);
	cr_assert(g_str_has_prefix(err->message, prefix),
		  "the message should start with '%s', got '%s'", prefix, err->message);
}

/* ---- a full document ---- */

static const char full_doc[] =
	"{\n"
	"  \"workload\": [ { \"start\": 0, \"end\": \"6G\" }, { \"start\": \"7G\", \"end\": "
	"8589934592 } ],\n"
	"  \"phases\": [\n"
	"    { \"name\": \"warm\", \"duration_s\": 60,\n"
	"      \"sets\": [ { \"kind\": \"hot\", \"start\": 0, \"end\": \"1G\", \"hz\": 1000 } ] },\n"
	"    { \"name\": \"zipf\", \"duration_us\": 30000000,\n"
	"      \"sets\": [ { \"kind\": \"zipf\", \"start\": \"2G\", \"end\": \"3G\", \"s\": 1.0, "
	"\"total_hz\": 1e7 } ] },\n"
	"    { \"name\": \"scan\", \"duration_s\": 0.5,\n"
	"      \"sets\": [ { \"kind\": \"scan\", \"start\": \"4G\", \"end\": \"5G\", \"hz\": 500, "
	"\"window\": \"64M\", \"speed_bps\": \"256M\" },\n"
	"                { \"kind\": \"hot\", \"start\": \"5G\", \"end\": 5637144576, \"hz\": 2.5 } "
	"] },\n"
	"    { \"duration_s\": 10, \"sets\": [] }\n"
	"  ]\n"
	"}\n";

/* The same script, built by hand. */
static struct vr_sim *full_expected(uint64_t seed)
{
	struct vr_sim *sim = sim_new_ok(8 * GIB, seed);
	struct vr_sim_set warm = { .kind = VR_SIM_SET_HOT, .start = 0, .end = GIB, .hz = 1000 };
	struct vr_sim_set zipf = { .kind = VR_SIM_SET_ZIPF,
				   .start = 2 * GIB,
				   .end = 3 * GIB,
				   .zipf_s = 1.0,
				   .zipf_total_hz = 1e7 };
	struct vr_sim_set scan[] = {
		{ .kind = VR_SIM_SET_SCAN,
		  .start = 4 * GIB,
		  .end = 5 * GIB,
		  .hz = 500,
		  .scan_window_bytes = 64 * MIB,
		  .scan_speed_bps = 256 * MIB },
		{ .kind = VR_SIM_SET_HOT, .start = 5 * GIB, .end = 5 * GIB + 256 * MIB, .hz = 2.5 },
	};
	struct vr_range workload[] = { { 0, 6 * GIB }, { 7 * GIB, 8 * GIB } };

	cr_assert(vr_sim_add_phase(sim, "warm", 60 * US_PER_S, &warm, 1, NULL));
	cr_assert(vr_sim_add_phase(sim, "zipf", 30 * US_PER_S, &zipf, 1, NULL));
	cr_assert(vr_sim_add_phase(sim, "scan", US_PER_S / 2, scan, 2, NULL));
	cr_assert(vr_sim_add_phase(sim, "phase-3", 10 * US_PER_S, NULL, 0, NULL));
	cr_assert(vr_sim_set_workload_ranges(sim, workload, 2, NULL));
	return sim;
}

TestSuite(workload_file, .description = "workload files: vr_sim_load_json()");

Test(workload_file, full_document_loads_the_phases)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * GIB, 7);
	g_autoptr(vr_sim) want = full_expected(7);
	const char *names[] = { "warm", "zipf", "scan", "phase-3" };
	const uint64_t starts[] = { 0, 60 * US_PER_S, 90 * US_PER_S, 90 * US_PER_S + US_PER_S / 2 };
	const uint64_t hot[] = { GIB, GIB, GIB + 256 * MIB, 0 };
	const uint64_t addrs[] = { 0,	    GIB - PAGE,		 GIB,
				   2 * GIB, 2 * GIB + PAGE,	 3 * GIB - PAGE,
				   4 * GIB, 4 * GIB + 63 * MIB,	 4 * GIB + 64 * MIB,
				   5 * GIB, 5 * GIB + 256 * MIB, 8 * GIB - PAGE };

	load_ok(sim, full_doc);
	cr_assert_eq(vr_sim_nr_phases(sim), 4);
	cr_assert_eq(vr_sim_script_duration_us(sim), 100 * US_PER_S + US_PER_S / 2);
	cr_assert_eq(vr_sim_workload_bytes(sim), 7 * GIB);
	for (guint p = 0; p < 4; p++) {
		uint64_t t = starts[p] + 1000;
		const char *name = NULL;
		uint64_t start = 0;

		cr_assert_eq(vr_sim_phase_at(sim, t, &name, &start), (int)p);
		cr_assert_str_eq(name, names[p]);
		cr_assert_eq(start, starts[p]);
		cr_assert_eq(vr_sim_hot_bytes(sim, t), hot[p],
			     "phase %u: hot bytes %" G_GUINT64_FORMAT, p, vr_sim_hot_bytes(sim, t));
		for (guint a = 0; a < G_N_ELEMENTS(addrs); a++)
			cr_assert_eq(vr_sim_page_hz(sim, addrs[a], t),
				     vr_sim_page_hz(want, addrs[a], t),
				     "phase %u, address 0x%" G_GINT64_MODIFIER "x", p, addrs[a]);
		/* the same accesses, seeded the same */
		for (guint a = 0; a < G_N_ELEMENTS(addrs); a++)
			cr_assert_eq(vr_sim_page_accessed(sim, addrs[a], starts[p], t + 100000),
				     vr_sim_page_accessed(want, addrs[a], starts[p], t + 100000));
	}
	/* a few exact rates */
	cr_assert_float_eq(vr_sim_page_hz(sim, 0, 1000), 1000.0, 1e-9);
	cr_assert_float_eq(vr_sim_page_hz(sim, GIB, 1000), 0.0, 1e-9);
	/* the scan window starts at the set's start and moves at 256 MiB/s */
	cr_assert_float_eq(vr_sim_page_hz(sim, 4 * GIB + MIB, starts[2] + 1000), 500.0, 1e-9);
	cr_assert_float_eq(vr_sim_page_hz(sim, 4 * GIB + 128 * MIB, starts[2] + 1000), 0.0, 1e-9);
	cr_assert_float_eq(vr_sim_page_hz(sim, 5 * GIB, starts[2] + 1000), 2.5, 1e-9);
	cr_assert(vr_sim_page_hz(sim, 2 * GIB, starts[1] + 1000) >
		  vr_sim_page_hz(sim, 3 * GIB - PAGE, starts[1] + 1000));
}

Test(workload_file, appends_to_the_existing_script)
{
	g_autoptr(vr_sim) sim = sim_new_ok(8 * GIB, 1);

	cr_assert(vr_sim_load_builtin(sim, "clustered", 5 * US_PER_S, NULL));
	load_ok(sim, "{\"phases\": [{\"name\": \"x\", \"duration_us\": 7, \"sets\": []}]}");
	cr_assert_eq(vr_sim_nr_phases(sim), 5);
	cr_assert_eq(vr_sim_script_duration_us(sim), 20 * US_PER_S + 7);
	/* no "workload": the workload's memory stays the whole guest */
	cr_assert_eq(vr_sim_workload_bytes(sim), 8 * GIB);
}

Test(workload_file, empty_sets_make_an_idle_phase)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB, 1);

	load_ok(sim, "{\"phases\": [{\"duration_s\": 1, \"sets\": []}]}");
	cr_assert_eq(vr_sim_nr_phases(sim), 1);
	cr_assert_eq(vr_sim_hot_bytes(sim, 10), 0);
	cr_assert_eq(vr_sim_hottest_page(sim, 10), G_MAXUINT64);
	cr_assert_eq(vr_sim_next_access_us(sim, 0, 0), G_MAXUINT64);
}

Test(workload_file, length_limits_the_text)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB, 1);
	const char doc[] = "{\"phases\": [{\"duration_s\": 1, \"sets\": []}]}garbage";
	g_autoptr(GError) err = NULL;

	cr_assert(vr_sim_load_json(sim, doc, (gssize)(strlen(doc) - strlen("garbage")), &err),
		  "got: %s", err ? err->message : "");
	cr_assert_eq(vr_sim_nr_phases(sim), 1);
}

/* ---- sizes ---- */

struct size_case {
	char text[32];
	uint64_t bytes;
};

ParameterizedTestParameters(workload_file, size_suffixes)
{
	static struct size_case cases[] = {
		{ "\"4K\"", 4ULL << 10 },
		{ "\"512M\"", 512 * MIB },
		{ "\"1G\"", GIB },
		{ "\"64G\"", 64 * GIB },
		{ "\"1T\"", 1ULL << 40 },
		{ "\"8192\"", 8192 },
		{ "4096", 4096 },
		{ "\"2P\"", 2ULL << 50 },
		{ "\"0000012K\"", 12ULL << 10 },
	};

	return cr_make_param_array(struct size_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct size_case *c, workload_file, size_suffixes)
{
	g_autoptr(vr_sim) sim = sim_new_ok(4ULL << 50, 1);
	g_autofree char *doc = g_strdup_printf(
		"{\"phases\": [{\"duration_s\": 1, \"sets\": [{\"kind\": \"hot\", \"start\": 0, "
		"\"end\": %s, \"hz\": 1}]}]}",
		c->text);

	load_ok(sim, doc);
	cr_assert_eq(vr_sim_hot_bytes(sim, 0), c->bytes, "%s: %" G_GUINT64_FORMAT, c->text,
		     vr_sim_hot_bytes(sim, 0));
}

struct bad_size_case {
	char text[48];
};

ParameterizedTestParameters(workload_file, bad_sizes)
{
	static struct bad_size_case cases[] = {
		{ "\"1.5G\"" }, { "\"1g\"" },	  { "\"1GB\"" },
		{ "\"G\"" },	{ "\"\"" },	  { "\"-4K\"" },
		{ "\" 4K\"" },	{ "\"4K \"" },	  { "-4096" },
		{ "4096.0" },	{ "true" },	  { "null" },
		{ "[4096]" },	{ "\"16384P\"" }, { "\"99999999999999999999\"" },
	};

	return cr_make_param_array(struct bad_size_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct bad_size_case *c, workload_file, bad_sizes)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB, 1);
	g_autofree char *doc = g_strdup_printf(
		"{\"phases\": [{\"duration_s\": 1, \"sets\": [{\"kind\": \"hot\", \"start\": 0, "
		"\"end\": %s, \"hz\": 1}]}]}",
		c->text);

	load_fails(sim, doc, "phases[0].sets[0].end: expected a size");
	cr_assert_eq(vr_sim_nr_phases(sim), 0);
}

/* ---- errors ---- */

struct error_case {
	char doc[400];
	char prefix[120];
};

/* A valid phase, for documents whose error is elsewhere. */
#define OK_PHASE                                                                                   \
	"{\"duration_s\": 1, \"sets\": [{\"kind\": \"hot\", \"start\": 0, \"end\": \"4K\", \"hz\": 1}]}"
#define ONE_SET(set) "{\"phases\": [" OK_PHASE ", {\"duration_s\": 1, \"sets\": [" set "]}]}"
#define HOT(rest)    "{\"kind\": \"hot\", \"start\": 0, \"end\": \"1M\"" rest "}"

ParameterizedTestParameters(workload_file, errors)
{
	static struct error_case cases[] = {
		/* syntax */
		{ "{\"phases\": [}", "line 1, column 13 (offset 12): " },
		{ "{\n  \"phases\": [\n    {,\n", "line 3, column 6 (offset 21): " },
		{ "{\"phases\": []",
		  "line 1, column 14 (offset 13): unexpected end of the document" },
		{ "{\"phases\": [" OK_PHASE "]} x", "line 1, column 94 (offset 93): " },
		{ "{'phases': []}",
		  "line 1, column 2 (offset 1): strings must be in double quotes" },
		{ "", "line 1, column 1 (offset 0): unexpected end of the document" },
		{ "{\"phases\": [" OK_PHASE "], \"phases\": []}", "phases: member given twice" },
		{ "{\"phases\": [{\"duration_s\": 1, \"duration_s\": 2, \"sets\": []}]}",
		  "phases[0].duration_s: member given twice" },
		/* the top level */
		{ "[]", "document: expected an object (got an array)" },
		{ "42", "document: expected an object (got 42)" },
		{ "null", "document: expected an object (got null)" },
		{ "{}", "phases: missing" },
		{ "{\"workload\": [{\"start\": 0, \"end\": \"4K\"}]}", "phases: missing" },
		{ "{\"phases\": []}", "phases: at least one phase is needed" },
		{ "{\"phases\": {}}", "phases: expected an array (got an object)" },
		/* unknown members, at each level */
		{ "{\"phases\": [" OK_PHASE "], \"extra\": 1}",
		  "extra: unknown member (expected one of workload, phases)" },
		{ "{\"phases\": [{\"duration_s\": 1, \"sets\": [], \"repeat\": 2}]}",
		  "phases[0].repeat: unknown member (expected one of name, duration_s, duration_us, sets)" },
		{ ONE_SET(HOT(", \"hz\": 1, \"window\": \"4K\"")),
		  "phases[1].sets[0].window: unknown member for a hot set (expected one of kind, start, end, hz)" },
		{ ONE_SET("{\"kind\": \"zipf\", \"start\": 0, \"end\": \"1M\", \"s\": 1, \"total_hz\": 1, \"hz\": 1}"),
		  "phases[1].sets[0].hz: unknown member for a zipf set (expected one of kind, start, end, s, total_hz)" },
		{ "{\"workload\": [{\"start\": 0, \"end\": \"4K\", \"size\": 1}], \"phases\": [" OK_PHASE
		  "]}",
		  "workload[0].size: unknown member (expected one of start, end)" },
		/* wrong types */
		{ "{\"phases\": [1]}", "phases[0]: expected an object (got 1)" },
		{ "{\"phases\": [{\"duration_s\": 1, \"sets\": {}}]}",
		  "phases[0].sets: expected an array (got an object)" },
		{ "{\"phases\": [{\"duration_s\": 1, \"sets\": [\"hot\"]}]}",
		  "phases[0].sets[0]: expected an object (got a string)" },
		{ "{\"phases\": [{\"name\": 3, \"duration_s\": 1, \"sets\": []}]}",
		  "phases[0].name: expected a string (got 3)" },
		{ ONE_SET("{\"kind\": 1, \"start\": 0, \"end\": \"1M\", \"hz\": 1}"),
		  "phases[1].sets[0].kind: expected a string" },
		{ ONE_SET(HOT(", \"hz\": \"1000\"")),
		  "phases[1].sets[0].hz: expected a positive number (got a string)" },
		{ ONE_SET("{\"kind\": \"hot\", \"start\": true, \"end\": \"1M\", \"hz\": 1}"),
		  "phases[1].sets[0].start: expected a size" },
		{ "{\"workload\": {}, \"phases\": [" OK_PHASE "]}",
		  "workload: expected an array (got an object)" },
		{ "{\"workload\": [], \"phases\": [" OK_PHASE "]}",
		  "workload: at least one range is needed" },
		{ "{\"workload\": [[0, 4096]], \"phases\": [" OK_PHASE "]}",
		  "workload[0]: expected an object (got an array)" },
		/* numbers out of range */
		{ ONE_SET(HOT(", \"hz\": -5")),
		  "phases[1].sets[0].hz: expected a positive number (got -5)" },
		{ ONE_SET(HOT(", \"hz\": 0")),
		  "phases[1].sets[0].hz: expected a positive number (got 0)" },
		{ ONE_SET(HOT(", \"hz\": 0.0")),
		  "phases[1].sets[0].hz: expected a positive number (got 0.0)" },
		{ ONE_SET("{\"kind\": \"zipf\", \"start\": 0, \"end\": \"1M\", \"s\": -1, \"total_hz\": 1}"),
		  "phases[1].sets[0].s: expected a positive number (got -1)" },
		{ ONE_SET("{\"kind\": \"zipf\", \"start\": 0, \"end\": \"1M\", \"s\": 1, \"total_hz\": 0}"),
		  "phases[1].sets[0].total_hz: expected a positive number (got 0)" },
		{ ONE_SET("{\"kind\": \"scan\", \"start\": 0, \"end\": \"1M\", \"hz\": 1, \"window\": \"4K\", \"speed_bps\": 0}"),
		  "phases[1].sets[0] [0x0, 0x100000): scan_speed_bps must be positive" },
		/* kinds and required members */
		{ "{\"phases\": [{\"duration_s\": 1, \"sets\": [" HOT(", \"hz\": 1") ", " HOT(
			  ", \"hz\": 1") ", {\"kind\": \"burst\"}]}]}",
		  "phases[0].sets[2].kind: unknown kind 'burst' (expected hot, zipf or scan)" },
		{ ONE_SET("{\"start\": 0, \"end\": \"1M\", \"hz\": 1}"),
		  "phases[1].sets[0].kind: missing" },
		{ ONE_SET(HOT("")),
		  "phases[1].sets[0].hz: missing (a hot set needs start, end and hz)" },
		{ ONE_SET("{\"kind\": \"scan\", \"start\": 0, \"end\": \"1M\", \"hz\": 1, \"window\": \"4K\"}"),
		  "phases[1].sets[0].speed_bps: missing" },
		{ "{\"phases\": [{\"sets\": []}]}", "phases[0].duration_s: missing" },
		{ "{\"phases\": [{\"duration_s\": 1}]}", "phases[0].sets: missing" },
		{ "{\"phases\": [{\"duration_s\": 1, \"duration_us\": 1, \"sets\": []}]}",
		  "phases[0].duration_us: give duration_s or duration_us, not both" },
		{ "{\"phases\": [{\"duration_s\": 0, \"sets\": []}]}",
		  "phases[0].duration_s: expected a positive number (got 0)" },
		{ "{\"phases\": [{\"duration_s\": 1e-9, \"sets\": []}]}",
		  "phases[0].duration_s: 1e-9 is below the minimum" },
		{ "{\"phases\": [{\"duration_us\": 1.5, \"sets\": []}]}",
		  "phases[0].duration_us: expected a positive integer (got 1.5)" },
		{ "{\"phases\": [{\"duration_us\": -1, \"sets\": []}]}",
		  "phases[0].duration_us: expected a positive integer (got -1)" },
		/* the guest's own checks, at the phase's path */
		{ ONE_SET("{\"kind\": \"hot\", \"start\": 0, \"end\": \"2G\", \"hz\": 1}"),
		  "phases[1].sets[0] [0x0, 0x80000000): must be a non-empty range inside the guest" },
		{ ONE_SET("{\"kind\": \"hot\", \"start\": 100, \"end\": \"1M\", \"hz\": 1}"),
		  "phases[1].sets[0] [0x64, 0x100000): start and end must be multiples of the page size" },
		{ ONE_SET("{\"kind\": \"hot\", \"start\": \"1M\", \"end\": \"1M\", \"hz\": 1}"),
		  "phases[1].sets[0] [0x100000, 0x100000): must be a non-empty range inside the guest" },
		{ ONE_SET("{\"kind\": \"scan\", \"start\": 0, \"end\": \"1M\", \"hz\": 1, \"window\": \"2M\", \"speed_bps\": 1}"),
		  "phases[1].sets[0] [0x0, 0x100000): scan_window_bytes must be" },
		{ "{\"workload\": [{\"start\": 0, \"end\": \"2G\"}], \"phases\": [" OK_PHASE "]}",
		  "workload: ranges[0] [0x0, 0x80000000): beyond the guest's end" },
		{ "{\"workload\": [{\"start\": 0, \"end\": \"8K\"}, {\"start\": \"4K\", \"end\": \"12K\"}], \"phases\": [" OK_PHASE
		  "]}",
		  "workload: " },
	};

	return cr_make_param_array(struct error_case, cases, G_N_ELEMENTS(cases));
}

ParameterizedTest(struct error_case *c, workload_file, errors)
{
	g_autoptr(vr_sim) sim = sim_new_ok(GIB, 1);

	load_fails(sim, c->doc, c->prefix);
	cr_assert_eq(vr_sim_nr_phases(sim), 0, "nothing should have been added:\n%s", c->doc);
	cr_assert_eq(vr_sim_workload_bytes(sim), GIB);
}

/* ---- all or nothing ---- */

Test(workload_file, a_failing_document_changes_nothing)
{
	static const char *const docs[] = {
		/* the third phase is outside the guest: the first two are valid */
		"{\"phases\": [" OK_PHASE ", " OK_PHASE
		", {\"duration_s\": 1, \"sets\": [{\"kind\": \"hot\", \"start\": 0, \"end\": \"16G\", "
		"\"hz\": 1}]}]}",
		/* every phase is valid, the workload's memory is not */
		"{\"workload\": [{\"start\": 0, \"end\": \"9G\"}], \"phases\": [" OK_PHASE
		", " OK_PHASE "]}",
		/* the last phase does not read */
		"{\"workload\": [{\"start\": 0, \"end\": \"1G\"}], \"phases\": [" OK_PHASE ", 7]}",
	};
	g_autoptr(vr_sim) sim = sim_new_ok(8 * GIB, 1);
	struct vr_range ws = { GIB, 3 * GIB };

	cr_assert(vr_sim_load_builtin(sim, "demo", 10 * US_PER_S, NULL));
	cr_assert(vr_sim_set_workload_ranges(sim, &ws, 1, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
		g_autoptr(GError) err = NULL;
		const char *name = NULL;

		cr_assert_not(vr_sim_load_json(sim, docs[i], -1, &err), "document %u", i);
		cr_assert_eq(vr_sim_nr_phases(sim), 4, "document %u: %u phases", i,
			     vr_sim_nr_phases(sim));
		cr_assert_eq(vr_sim_script_duration_us(sim), 40 * US_PER_S);
		cr_assert_eq(vr_sim_workload_bytes(sim), 2 * GIB);
		cr_assert_eq(vr_sim_phase_at(sim, 35 * US_PER_S, &name, NULL), 3);
		cr_assert_str_eq(name, "quiet");
	}
}
