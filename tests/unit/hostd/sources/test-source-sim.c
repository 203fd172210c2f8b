/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the "sim" access source (hostd/sources/source-sim.c) on a fake
 * clock that the tests move: the picture is valid, the same for the same
 * seed, and shows the simulated guest's hot set as accessed regions. Also
 * the wrapper's check of every picture (vr_picture_check(), common/picture.h).
 *
 * The guest of most tests (1 GiB, one phase forever):
 *
 *   0        256M  320M                                   1G
 *   |  idle  |#hot#|                 idle                 |
 *             1000 Hz per page: every 5 ms sample sees it
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "picture.h"
#include "sim.h"
#include "sources/access-source.h"
#include "test-access-source.h"
#include "test-messages.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

#define HOT_START (256 * MIB)
#define HOT_END	  (320 * MIB)

static const char hot_doc[] =
	"{ \"phases\": [ { \"name\": \"hot\", \"duration_s\": 600, \"sets\": [ "
	"{ \"kind\": \"hot\", \"start\": \"256M\", \"end\": \"320M\", "
	"\"hz\": 1000 } ] } ] }";

/* ---- a clock the test moves ---- */

struct fake_clock {
	uint64_t now_ns;
};

static uint64_t fake_now_ns(void *data)
{
	return ((struct fake_clock *)data)->now_ns;
}

static void advance_ms(struct fake_clock *fc, uint64_t ms)
{
	fc->now_ns += ms * 1000000;
}

TestSuite(sim_source);
TestSuite(sim_source_args);
TestSuite(picture_rules);

/* ---- helpers ---- */

static struct vr_sim_source_config hot_config(uint64_t seed)
{
	return (struct vr_sim_source_config){
		.size_bytes = GIB,
		.workload_json = hot_doc,
		.seed = seed,
	};
}

static struct vr_access_source *new_sim(const struct vr_sim_source_config *cfg,
					const struct vr_monitor_attrs *attrs, struct fake_clock *fc)
{
	const struct vr_clock clock = { .now_ns = fake_now_ns, .data = fc };
	g_autoptr(GError) err = NULL;
	struct vr_access_source *src = vr_access_source_new_sim(cfg, attrs, &clock, &err);

	cr_assert_not_null(src, "the sim source should be created, got: %s",
			   err ? err->message : "NULL without an error");
	cr_assert_str_eq(vr_access_source_name(src), "sim");
	return src;
}

static void regions_ok(struct vr_access_source *src, struct vr_proto_regions *pic)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_get_regions(src, pic, &err), "get-regions should succeed: %s",
		  err ? err->message : "FALSE without an error");
	cr_assert_not_null(pic->regions, "a picture always has a regions array");
}

static const struct vr_picture_region *region(const struct vr_proto_regions *p, guint i)
{
	return &g_array_index(p->regions, struct vr_picture_region, i);
}

/* ---- the picture ---- */

Test(sim_source, the_picture_covers_the_guest_and_follows_the_rules)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(1);
	struct fake_clock fc = { .now_ns = 123456789 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;
	uint64_t next = 0;

	start_ok(src);
	advance_ms(&fc, 2000);
	regions_ok(src, &pic);
	cr_expect_eq(pic.sample_interval_us, 5000);
	cr_expect_eq(pic.aggr_interval_us, 100000);
	cr_assert_gt(pic.regions->len, 0, "after 2 s there is an aggregated picture");
	cr_assert(vr_picture_check(pic.regions, pic.sample_interval_us, pic.aggr_interval_us, NULL,
				   &err),
		  "%s", err ? err->message : "");
	for (guint i = 0; i < pic.regions->len; i++) {
		cr_assert_eq(region(&pic, i)->start, next,
			     "region %u: expected to start where the previous ended (0x%" PRIx64
			     "), got 0x%" PRIx64,
			     i, next, region(&pic, i)->start);
		next = region(&pic, i)->end;
	}
	cr_expect_eq(next, GIB, "the regions cover the whole guest, up to 0x%" PRIx64, next);
	cr_expect_eq(vr_access_source_sim_now_us(src), 2000000, "the guest's time is 2 s");
}

Test(sim_source, the_hot_set_shows_as_accessed_regions)
{
	/* at most 500 regions, so the picture is the monitor's own, unmerged */
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(7);
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = NULL;
	g_auto(vr_proto_regions) pic = { 0 };
	uint64_t hot_seen = 0, cold_seen = 0;

	attrs.max_nr_regions = 500;
	src = new_sim(&cfg, &attrs, &fc);
	start_ok(src);
	advance_ms(&fc, 3000);
	regions_ok(src, &pic);
	for (guint i = 0; i < pic.regions->len; i++) {
		const struct vr_picture_region *r = region(&pic, i);
		uint64_t in_start = MAX(r->start, HOT_START), in_end = MIN(r->end, HOT_END);
		uint64_t in_hot = in_end > in_start ? in_end - in_start : 0;

		if (in_hot == 0)
			cr_expect_eq(r->nr_accesses, 0,
				     "region [0x%" PRIx64 ", 0x%" PRIx64
				     ") is all idle memory: expected 0 accesses, got %u",
				     r->start, r->end, r->nr_accesses);
		if (r->nr_accesses > 0) {
			hot_seen += in_hot;
			cold_seen += (r->end - r->start) - in_hot;
		}
	}
	cr_expect_geq(hot_seen, (HOT_END - HOT_START) * 9 / 10,
		      "at least 90%% of the hot set should be in accessed regions, got %" PRIu64
		      " of %llu bytes",
		      hot_seen, HOT_END - HOT_START);
	cr_expect_leq(cold_seen, (HOT_END - HOT_START) / 5,
		      "accessed regions should hold little idle memory, got %" PRIu64 " bytes",
		      cold_seen);
}

static void picture_at(uint64_t seed, uint64_t ms, GArray **out)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = {
		.size_bytes = 4 * GIB,
		.workload = "shifting",
		.phase_us = 1000000,
		.seed = seed,
	};
	struct fake_clock fc = { .now_ns = 5 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	g_auto(vr_proto_regions) pic = { 0 };

	start_ok(src);
	for (uint64_t t = 0; t < ms; t += 250) {
		advance_ms(&fc, 250);
		vr_proto_regions_clear(&pic);
		regions_ok(src, &pic);
	}
	*out = g_steal_pointer(&pic.regions);
}

static gboolean same_regions(const GArray *a, const GArray *b)
{
	return a->len == b->len &&
	       memcmp(a->data, b->data, (size_t)a->len * sizeof(struct vr_picture_region)) == 0;
}

Test(sim_source, the_same_seed_gives_the_same_picture)
{
	g_autoptr(GArray) a = NULL, b = NULL, c = NULL;

	picture_at(42, 2500, &a);
	picture_at(42, 2500, &b);
	picture_at(43, 2500, &c);
	cr_assert_gt(a->len, 0, "a picture after 2.5 s");
	cr_expect(same_regions(a, b),
		  "two runs with seed 42 should give the same %u regions (got "
		  "%u and %u)",
		  a->len, a->len, b->len);
	cr_expect_not(same_regions(a, c), "seed 43 should give another picture");
}

Test(sim_source, empty_until_the_first_aggregation)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(1);
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	g_auto(vr_proto_regions) pic = { 0 };

	start_ok(src);
	advance_ms(&fc, 99);
	regions_ok(src, &pic);
	cr_expect_eq(pic.regions->len, 0, "no aggregation in 99 ms: expected no regions, got %u",
		     pic.regions->len);
	advance_ms(&fc, 10);
	regions_ok(src, &pic);
	cr_expect_gt(pic.regions->len, 0, "after 109 ms the first window is aggregated");
}

Test(sim_source, many_regions_are_merged_to_the_protocol_limit)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = {
		.size_bytes = 8 * GIB,
		.workload = "scattered",
		.phase_us = 60000000,
		.seed = 3,
	};
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = NULL;
	g_auto(vr_proto_regions) pic = { 0 };

	attrs.min_nr_regions = 600;
	attrs.max_nr_regions = 2000;
	src = new_sim(&cfg, &attrs, &fc);
	start_ok(src);
	advance_ms(&fc, 300);
	regions_ok(src, &pic);
	cr_expect_leq(pic.regions->len, VR_PROTO_MAX_REGIONS,
		      "at least 600 monitor regions must be merged to %d, got %u",
		      VR_PROTO_MAX_REGIONS, pic.regions->len);
	cr_expect_geq(pic.regions->len, VR_PROTO_MAX_REGIONS - 1,
		      "merging stops at the limit, got %u", pic.regions->len);
}

Test(sim_source, a_long_gap_is_skipped_not_replayed)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(1);
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	g_auto(vr_proto_regions) pic = { 0 };
	gint64 t0 = g_get_monotonic_time();

	start_ok(src);
	fc.now_ns = 24ULL * 3600 * 1000000000; /* a day later */
	regions_ok(src, &pic);
	cr_expect_gt(pic.regions->len, 0, "the last 10 s were sampled");
	cr_expect_eq(vr_access_source_sim_now_us(src), 24ULL * 3600 * 1000000);
	/* a day of 5 ms samples replayed would take minutes */
	cr_expect_lt(g_get_monotonic_time() - t0, 30 * G_USEC_PER_SEC,
		     "one get-regions should sample at most %llu us of the gap",
		     VR_SIM_SOURCE_MAX_CATCHUP_US);
}

Test(sim_source, the_guest_runs_on_while_stopped)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(1);
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;

	cr_expect_eq(vr_access_source_sim_now_us(src), 0, "no time before the first start");
	start_ok(src);
	advance_ms(&fc, 500);
	regions_ok(src, &pic);
	cr_assert_gt(pic.regions->len, 0);
	vr_access_source_stop(src);
	cr_assert_not(vr_access_source_get_regions(src, &pic, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, "not started", "get-regions when stopped");
	advance_ms(&fc, 1000);
	start_ok(src);
	cr_expect_eq(vr_access_source_sim_now_us(src), 1500000, "the guest's time ran on");
	regions_ok(src, &pic);
	cr_expect_eq(pic.regions->len, 0, "a restarted monitor has no picture yet");
	advance_ms(&fc, 200);
	regions_ok(src, &pic);
	cr_expect_gt(pic.regions->len, 0, "and a picture after its first window");
}

Test(sim_source, the_guest_is_reachable_only_from_a_sim_source)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = hot_config(1);
	struct fake_clock fc = { 0 };
	g_autoptr(vr_access_source) src = new_sim(&cfg, &attrs, &fc);
	const struct vr_ram_range ram = { .gpa = 0, .hva = 1ULL << 40, .size = GIB };
	g_autoptr(GArray) map = g_array_new(FALSE, FALSE, sizeof(struct vr_ram_range));
	g_autoptr(vr_access_source) other = NULL;
	g_autoptr(GError) err = NULL;
	const struct vr_sim *sim = vr_access_source_sim_guest(src);

	cr_assert_not_null(sim);
	cr_expect_eq(vr_sim_size(sim), GIB);
	cr_expect_eq(vr_sim_hot_bytes(sim, 0), HOT_END - HOT_START,
		     "the guest is the one of the document");
	g_array_append_val(map, ram);
	other = vr_access_source_new_host_damon("sys", "proc", 1234, map, &attrs, &err);
	cr_assert_not_null(other, "%s", err ? err->message : "");
	cr_expect_null(vr_access_source_sim_guest(other), "a host-damon source has no sim guest");
	cr_expect_eq(vr_access_source_sim_now_us(other), 0);
}

/* ---- bad arguments ---- */

/**
 * struct sim_arg_case - a sim source that must be refused.
 * @name:	what is wrong.
 * @size_bytes, @workload, @phase_us: the guest ("" workload: the document
 *		@doc instead; @doc "" too: neither).
 * @doc:	a workload document, or "".
 * @aggr_us:	the aggregation interval (other attributes are the defaults).
 * @no_clock:	give a clock without now_ns.
 * @words:	what the message must say.
 */
struct sim_arg_case {
	char name[40];
	uint64_t size_bytes;
	char workload[24];
	uint64_t phase_us;
	char doc[96];
	uint64_t aggr_us;
	bool no_clock;
	char words[40];
};

static struct sim_arg_case sim_arg_cases[] = {
	{ "size 0", 0, "demo", 1000000, "", 100000, false, "size" },
	{ "unaligned size", GIB + 1, "demo", 1000000, "", 100000, false, "size|align" },
	{ "unknown script", GIB, "no-such-script", 1000000, "", 100000, false, "no-such-script" },
	{ "no workload", GIB, "", 0, "", 100000, false, "no workload" },
	{ "bad document", GIB, "", 0, "{ \"phases\": 3 }", 100000, false, "phases" },
	{ "aggr below sample", GIB, "demo", 1000000, "", 1000, false, "aggr_interval_us" },
	{ "no clock", GIB, "demo", 1000000, "", 100000, true, "clock" },
};

ParameterizedTestParameters(sim_source_args, refused)
{
	return cr_make_param_array(struct sim_arg_case, sim_arg_cases, G_N_ELEMENTS(sim_arg_cases));
}

ParameterizedTest(struct sim_arg_case *c, sim_source_args, refused)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	const struct vr_sim_source_config cfg = {
		.size_bytes = c->size_bytes,
		.workload = c->workload[0] ? c->workload : NULL,
		.workload_json = c->doc[0] ? c->doc : NULL,
		.phase_us = c->phase_us,
		.seed = 1,
	};
	struct fake_clock fc = { 0 };
	const struct vr_clock clock = { .now_ns = c->no_clock ? NULL : fake_now_ns, .data = &fc };
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_access_source) src = NULL;

	attrs.aggr_interval_us = c->aggr_us;
	src = vr_access_source_new_sim(&cfg, &attrs, &clock, &err);
	cr_assert_null(src, "%s: expected the source to be refused", c->name);
	expect_error(err, VR_ACCESS_SOURCE_ERROR_INVALID, c->words, c->name);
}

/* ---- the wrapper's check of every picture ---- */

/* A source whose pictures break a rule: region 1 overlaps region 0. */
static gboolean bad_start(void *priv, GError **error)
{
	(void)priv;
	(void)error;
	return TRUE;
}

static gboolean bad_get_regions(void *priv, struct vr_proto_regions *out, GError **error)
{
	const struct vr_picture_region r[] = { { 0, 8192, 0, 0 }, { 4096, 12288, 0, 0 } };

	(void)priv;
	(void)error;
	out->sample_interval_us = 5000;
	out->aggr_interval_us = 100000;
	out->regions = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_array_append_vals(out->regions, r, G_N_ELEMENTS(r));
	return TRUE;
}

static void bad_stop(void *priv)
{
	(void)priv;
}

static const struct vr_access_source_ops bad_ops = {
	.name = "overlapping",
	.start = bad_start,
	.get_regions = bad_get_regions,
	.stop = bad_stop,
	.free = bad_stop,
};

/* The rules themselves are common/picture.c's (tests/unit/common/test-picture.c);
 * here the wrapper applies them to what a source gives, names the source and
 * leaves nothing behind. */
Test(picture_rules, a_source_breaking_a_rule_is_refused)
{
	g_autoptr(vr_access_source) src = vr_access_source_new(&bad_ops, NULL);
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_start(src, &err), "%s", err ? err->message : "");
	cr_assert_not(vr_access_source_get_regions(src, &pic, &err),
		      "an overlapping picture should be refused");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_INVALID, "overlapping;region 1;sorted",
		     "an overlapping picture");
	cr_assert_null(pic.regions, "the refused picture is cleared");
}
