/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the monitoring engine (common/monitor.c): region-based
 * sampling with adaptive regions, SEMANTICS.md §1.
 *
 * Laid out like the kernel's mm/damon/tests/core-kunit.h: small tables of
 * regions before and after each building block (merge, age, split, range
 * update), with ASCII pictures; then the whole engine driven by a tiny fake
 * access source whose answers are a pure function of the address (and of the
 * time, for noisy sources), so every run is reproducible.
 *
 * Units: addresses and sizes in tables are in pages (P(n) = n * 4096 bytes)
 * unless a field says bytes; times in us.
 *
 * Criterion runs every test in its own re-executed process, where static data
 * lives at other addresses: parameter structs hold no pointers (fixed arrays
 * and names only).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "monitor.h"
#include "rng.h"
#include "test-messages.h"

#define PG	     ((uint64_t)VR_PAGE_SIZE)
#define P(n)	     ((uint64_t)(n)*PG)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- */
/* The fake access source                                                    */
/* ------------------------------------------------------------------------- */

enum fake_mode {
	FAKE_NEVER,  /* no page is ever accessed */
	FAKE_ALWAYS, /* every page is accessed in every interval */
	FAKE_HOT,    /* pages in hot intervals, with a per-interval probability */
};

/* [start, end) in bytes is accessed with probability @pct % per check. */
struct fake_hot {
	uint64_t start;
	uint64_t end;
	uint32_t pct;
};

#define FAKE_MAX_HOT	8
#define FAKE_MAX_RANGES 8
#define FAKE_MAX_SCRIPT 8

struct fake_ranges {
	size_t nr;
	struct vr_range r[FAKE_MAX_RANGES];
};

/*
 * struct fake_src - the ops_data of the fake source.
 *
 * check() answers from @mode; in FAKE_HOT mode from @hot until @switch_us,
 * from @hot2 afterwards (a phase change), with a noise that is a hash of
 * (@noise, page, time). update() answers @script[n % @nr_script] on its n-th
 * call (the target's current ranges when @nr_script is 0) and fails while
 * @fail_update is set.
 */
struct fake_src {
	enum fake_mode mode;
	size_t nr_hot;
	struct fake_hot hot[FAKE_MAX_HOT];
	size_t nr_hot2;
	struct fake_hot hot2[FAKE_MAX_HOT];
	uint64_t switch_us;
	uint64_t noise;

	size_t nr_script;
	struct fake_ranges script[FAKE_MAX_SCRIPT];
	bool fail_update;
	size_t applied; /* index of the script entry last applied */

	/* what the engine did to us */
	unsigned nr_update;
	unsigned nr_prepare;
	unsigned nr_check;
	unsigned nr_cleanup;
	uint64_t nr_checked; /* regions passed to check() */
	uint64_t last_check_us;
	unsigned bad_sampling_addr; /* @sampling_addr outside its region */
};

static uint64_t fake_ranges_size(const struct fake_ranges *fr)
{
	uint64_t sz = 0;

	for (size_t k = 0; k < fr->nr; k++)
		sz += fr->r[k].end - fr->r[k].start;
	return sz;
}

static bool fake_accessed(const struct fake_src *f, uint64_t addr, uint64_t now_us)
{
	const struct fake_hot *hot = f->hot;
	size_t nr = f->nr_hot;

	switch (f->mode) {
	case FAKE_NEVER:
		return false;
	case FAKE_ALWAYS:
		return true;
	case FAKE_HOT:
		break;
	}
	if (f->switch_us && now_us >= f->switch_us) {
		hot = f->hot2;
		nr = f->nr_hot2;
	}
	for (size_t i = 0; i < nr; i++) {
		if (addr < hot[i].start || addr >= hot[i].end)
			continue;
		uint64_t h = vr_hash64(f->noise ^ vr_hash64(addr / PG) ^ vr_hash64(now_us * 8 + i));
		if (h % 100 < hot[i].pct)
			return true;
	}
	return false;
}

static gboolean fake_update(void *data, const struct vr_target *t, GArray *ranges, GError **error)
{
	struct fake_src *f = data;

	f->nr_update++;
	cr_assert_eq(ranges->len, 0, "update() should get an empty ranges array, got %u entries",
		     ranges->len);
	if (f->fail_update) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_SOURCE,
			    "fake source: update of target %" PRIu64 " failed", t->id);
		return FALSE;
	}
	if (!f->nr_script) {
		/* re-read: the same ranges again */
		g_array_append_vals(ranges, t->ranges->data, t->ranges->len);
		return TRUE;
	}
	f->applied = (f->nr_update - 1) % f->nr_script;
	g_array_append_vals(ranges, f->script[f->applied].r, f->script[f->applied].nr);
	return TRUE;
}

static void fake_count_bad_samples(struct fake_src *f, const struct vr_region *regions, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (regions[i].sampling_addr < regions[i].start ||
		    regions[i].sampling_addr >= regions[i].end)
			f->bad_sampling_addr++;
}

static void fake_prepare(void *data, const struct vr_target *t, struct vr_region *regions,
			 size_t nr, uint64_t now_us)
{
	struct fake_src *f = data;

	(void)t;
	(void)now_us;
	f->nr_prepare++;
	fake_count_bad_samples(f, regions, nr);
}

static void fake_check(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
		       uint64_t now_us)
{
	struct fake_src *f = data;

	(void)t;
	f->nr_check++;
	f->nr_checked += nr;
	f->last_check_us = now_us;
	/* before the first prepare() there is no sample to look at */
	if (f->nr_prepare)
		fake_count_bad_samples(f, regions, nr);
	for (size_t i = 0; i < nr; i++)
		regions[i].accessed = fake_accessed(f, regions[i].sampling_addr, now_us);
}

static void fake_cleanup(void *data)
{
	struct fake_src *f = data;

	f->nr_cleanup++;
}

static const struct vr_access_ops fake_ops = {
	.name = "fake",
	.update = fake_update,
	.prepare = fake_prepare,
	.check = fake_check,
	.cleanup = fake_cleanup,
};

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

/* A region in a table: [s, e) in pages and its counters. */
struct rs {
	uint32_t s, e;
	uint32_t nr, last, age;
	bool fresh; /* expected only: new part, any number of regions, counters 0 */
};

/* A range in a table, in pages. */
struct pr {
	uint64_t s, e;
};

#define MAXR 12
#define R(s, e, nr, last, age)                                                                     \
	{                                                                                          \
		(s), (e), (nr), (last), (age), false                                               \
	}

static struct vr_region region_from_spec(const struct rs *rs)
{
	return (struct vr_region){
		.start = P(rs->s),
		.end = P(rs->e),
		.sampling_addr = P(rs->s),
		.nr_accesses = rs->nr,
		.last_nr_accesses = rs->last,
		.age = rs->age,
	};
}

/*
 * A target built by hand for the building blocks: @nr regions from @rs, its
 * ranges the union of the regions (touching regions share a range).
 */
static struct vr_target *target_from_specs(uint64_t id, const struct rs *rs, unsigned nr)
{
	struct vr_target *t = g_new0(struct vr_target, 1);

	t->id = id;
	t->ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	t->regions = g_array_new(FALSE, FALSE, sizeof(struct vr_region));
	for (unsigned i = 0; i < nr; i++) {
		struct vr_region r = region_from_spec(&rs[i]);

		g_array_append_val(t->regions, r);
		if (t->ranges->len &&
		    g_array_index(t->ranges, struct vr_range, t->ranges->len - 1).end == r.start) {
			g_array_index(t->ranges, struct vr_range, t->ranges->len - 1).end = r.end;
		} else {
			struct vr_range range = { r.start, r.end };

			g_array_append_val(t->ranges, range);
		}
	}
	return t;
}

static void target_free(struct vr_target *t)
{
	g_array_unref(t->ranges);
	g_array_unref(t->regions);
	g_free(t);
}

/* Replace the regions of a context's target (which must cover its ranges). */
static void target_load_specs(struct vr_target *t, const struct rs *rs, unsigned nr)
{
	g_array_set_size(t->regions, 0);
	for (unsigned i = 0; i < nr; i++) {
		struct vr_region r = region_from_spec(&rs[i]);

		g_array_append_val(t->regions, r);
	}
}

static void assert_monitor_error(const GError *err, int code, const char *words, const char *what)
{
	cr_assert_not_null(err, "%s: expected a VR_MONITOR_ERROR (code %d), got no error", what,
			   code);
	cr_assert_eq(err->domain, VR_MONITOR_ERROR,
		     "%s: expected the VR_MONITOR_ERROR domain, got %s (%s)", what,
		     g_quark_to_string(err->domain), err->message);
	cr_assert_eq(err->code, code, "%s: expected error code %d, got %d (%s)", what, code,
		     err->code, err->message);
	if (words)
		cr_assert(msg_has_any(err->message, words),
			  "%s: expected the message to name '%s', got '%s'", what, words,
			  err->message);
}

/* Ranges merged where they touch: what the regions must tile exactly. */
static GArray *ranges_union(const GArray *ranges)
{
	GArray *u = g_array_new(FALSE, FALSE, sizeof(struct vr_range));

	for (guint i = 0; i < ranges->len; i++) {
		struct vr_range r = g_array_index(ranges, struct vr_range, i);

		if (u->len && g_array_index(u, struct vr_range, u->len - 1).end == r.start)
			g_array_index(u, struct vr_range, u->len - 1).end = r.end;
		else
			g_array_append_val(u, r);
	}
	return u;
}

/*
 * The invariants of a target at any time outside the engine's own calls:
 * ranges sorted, disjoint, page-aligned, non-empty; regions sorted,
 * non-overlapping, page-aligned, non-empty, tiling exactly the ranges (no
 * region outside them, none crossing a hole, no part of a range uncovered).
 */
static void assert_target_invariants(const struct vr_target *t, const char *when)
{
	const GArray *ranges = t->ranges;

	for (guint i = 0; i < ranges->len; i++) {
		const struct vr_range *r = &g_array_index(ranges, struct vr_range, i);

		cr_assert(r->start % PG == 0 && r->end % PG == 0 && r->start < r->end,
			  "%s: target %" PRIu64 " range %u [%#" PRIx64 ", %#" PRIx64
			  ") should be page-aligned and non-empty",
			  when, t->id, i, r->start, r->end);
		if (i)
			cr_assert(g_array_index(ranges, struct vr_range, i - 1).end <= r->start,
				  "%s: target %" PRIu64 " ranges should be sorted and disjoint, "
				  "range %u starts at %#" PRIx64
				  " before the previous end %#" PRIx64,
				  when, t->id, i, r->start,
				  g_array_index(ranges, struct vr_range, i - 1).end);
	}

	g_autoptr(GArray) u = ranges_union(ranges);
	guint j = 0;
	uint64_t expect = u->len ? g_array_index(u, struct vr_range, 0).start : 0;

	if (!u->len)
		cr_assert_eq(vr_target_nr_regions(t), 0,
			     "%s: target %" PRIu64 " has no range, expected no region, got %u",
			     when, t->id, vr_target_nr_regions(t));
	for (guint i = 0; i < vr_target_nr_regions(t); i++) {
		const struct vr_region *r = vr_target_region(t, i);

		cr_assert(r->start % PG == 0 && r->end % PG == 0,
			  "%s: target %" PRIu64 " region %u [%#" PRIx64 ", %#" PRIx64
			  ") should be page-aligned",
			  when, t->id, i, r->start, r->end);
		cr_assert(r->start < r->end,
			  "%s: target %" PRIu64 " region %u [%#" PRIx64 ", %#" PRIx64
			  ") should be non-empty",
			  when, t->id, i, r->start, r->end);
		if (i)
			cr_assert(vr_target_region(t, i - 1)->end <= r->start,
				  "%s: target %" PRIu64
				  " regions should be sorted and not overlap: "
				  "region %u [%#" PRIx64 ", %#" PRIx64
				  ") after one ending at %#" PRIx64,
				  when, t->id, i, r->start, r->end,
				  vr_target_region(t, i - 1)->end);
		if (expect == g_array_index(u, struct vr_range, j).end && j + 1 < u->len) {
			j++;
			expect = g_array_index(u, struct vr_range, j).start;
		}
		cr_assert_eq(r->start, expect,
			     "%s: target %" PRIu64 " region %u should start at %#" PRIx64
			     " (regions tile the ranges exactly), got [%#" PRIx64 ", %#" PRIx64 ")",
			     when, t->id, i, expect, r->start, r->end);
		cr_assert(r->end <= g_array_index(u, struct vr_range, j).end,
			  "%s: target %" PRIu64 " region %u [%#" PRIx64 ", %#" PRIx64
			  ") should end within its range [%#" PRIx64 ", %#" PRIx64 ") (no region "
			  "crosses a hole or leaves the ranges)",
			  when, t->id, i, r->start, r->end,
			  g_array_index(u, struct vr_range, j).start,
			  g_array_index(u, struct vr_range, j).end);
		expect = r->end;
	}
	if (u->len)
		cr_assert(j + 1 == u->len && expect == g_array_index(u, struct vr_range, j).end,
			  "%s: target %" PRIu64 " regions should cover every range up to %#" PRIx64
			  ", they stop at %#" PRIx64 " in range %u of %u",
			  when, t->id, g_array_index(u, struct vr_range, u->len - 1).end, expect, j,
			  u->len);
}

static void assert_ctx_invariants(const struct vr_ctx *ctx, const char *when)
{
	guint total = 0;

	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		assert_target_invariants(vr_ctx_target(ctx, i), when);
		total += vr_target_nr_regions(vr_ctx_target(ctx, i));
	}
	cr_assert_eq(vr_ctx_nr_regions(ctx), total,
		     "%s: vr_ctx_nr_regions() should be the sum over targets, %u, got %u", when,
		     total, vr_ctx_nr_regions(ctx));
}

static void assert_nr_regions_within(const struct vr_ctx *ctx, const char *when)
{
	const struct vr_monitor_attrs *a = vr_ctx_attrs(ctx);
	guint n = vr_ctx_nr_regions(ctx);

	cr_assert(n >= a->min_nr_regions && n <= a->max_nr_regions,
		  "%s: expected a region count within [min_nr_regions %u, max_nr_regions %u], "
		  "got %u",
		  when, a->min_nr_regions, a->max_nr_regions, n);
}

static struct vr_ctx *ctx_new_with(struct fake_src *f, uint64_t seed,
				   const struct vr_monitor_attrs *attrs)
{
	g_autoptr(GError) err = NULL;
	struct vr_ctx *ctx = vr_ctx_new(&fake_ops, f, seed);

	cr_assert_not_null(ctx, "vr_ctx_new() should return a context");
	cr_assert(vr_ctx_set_attrs(ctx, attrs, &err), "valid attrs should be accepted: %s",
		  err ? err->message : "?");
	return ctx;
}

static struct vr_target *ctx_add(struct vr_ctx *ctx, uint64_t id, const struct vr_range *r,
				 size_t nr)
{
	g_autoptr(GError) err = NULL;
	struct vr_target *t = vr_ctx_add_target(ctx, id, r, nr, &err);

	cr_assert_not_null(t, "target %" PRIu64 " with valid ranges should be added: %s", id,
			   err ? err->message : "?");
	return t;
}

static void ctx_start(struct vr_ctx *ctx, uint64_t now_us)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_ctx_start(ctx, now_us, &err), "vr_ctx_start() should succeed: %s",
		  err ? err->message : "?");
}

/* One tick at the time the context asks for; returns that time. */
static uint64_t ctx_step(struct vr_ctx *ctx)
{
	g_autoptr(GError) err = NULL;
	uint64_t now = vr_ctx_next_tick_us(ctx);

	cr_assert(vr_ctx_tick(ctx, now, &err), "vr_ctx_tick(%" PRIu64 ") should succeed: %s", now,
		  err ? err->message : "?");
	return now;
}

static struct vr_monitor_attrs attrs_make(uint64_t sample_us, uint32_t max_nr_accesses,
					  uint64_t ops_update_us, uint32_t min_nr, uint32_t max_nr)
{
	return (struct vr_monitor_attrs){
		.sample_interval_us = sample_us,
		.aggr_interval_us = sample_us * max_nr_accesses,
		.ops_update_interval_us = ops_update_us,
		.min_nr_regions = min_nr,
		.max_nr_regions = max_nr,
	};
}

static GArray *regions_copy(const struct vr_target *t)
{
	GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_region), t->regions->len);

	g_array_append_vals(a, t->regions->data, t->regions->len);
	return a;
}

static GArray *ranges_copy(const struct vr_target *t)
{
	GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_range), t->ranges->len);

	g_array_append_vals(a, t->ranges->data, t->ranges->len);
	return a;
}

static bool arrays_equal(const GArray *a, const GArray *b, size_t elt)
{
	return a->len == b->len && !memcmp(a->data, b->data, (size_t)a->len * elt);
}

/* Regions equal in bounds and counters (sampling addresses ignored). */
static bool regions_equal(const GArray *a, const GArray *b)
{
	if (a->len != b->len)
		return false;
	for (guint i = 0; i < a->len; i++) {
		const struct vr_region *x = &g_array_index(a, struct vr_region, i);
		const struct vr_region *y = &g_array_index(b, struct vr_region, i);

		if (x->start != y->start || x->end != y->end || x->nr_accesses != y->nr_accesses ||
		    x->last_nr_accesses != y->last_nr_accesses || x->age != y->age)
			return false;
	}
	return true;
}

/*
 * Compare @t's regions with @want. A "fresh" entry of @want is a part that no
 * old region covered: one or more regions tiling it, with counters 0.
 */
static void assert_regions_match(const struct vr_target *t, const struct rs *want, unsigned nr,
				 const char *when)
{
	guint j = 0;
	guint n = vr_target_nr_regions(t);

	for (unsigned i = 0; i < nr; i++) {
		const struct rs *w = &want[i];

		if (!w->fresh) {
			cr_assert(j < n,
				  "%s: expected region [%u, %u) (pages), got only %u regions", when,
				  w->s, w->e, n);
			const struct vr_region *r = vr_target_region(t, j++);

			cr_assert(r->start == P(w->s) && r->end == P(w->e),
				  "%s: expected region %u at pages [%u, %u), got [%" PRIu64
				  ", %" PRIu64 ")",
				  when, j - 1, w->s, w->e, r->start / PG, r->end / PG);
			cr_assert(r->nr_accesses == w->nr && r->last_nr_accesses == w->last &&
					  r->age == w->age,
				  "%s: region [%u, %u) expected nr_accesses %u, last_nr_accesses "
				  "%u, age %u; got %u, %u, %u",
				  when, w->s, w->e, w->nr, w->last, w->age, r->nr_accesses,
				  r->last_nr_accesses, r->age);
			continue;
		}
		uint64_t pos = P(w->s);

		while (pos < P(w->e)) {
			cr_assert(j < n,
				  "%s: expected fresh regions over pages [%u, %u), regions end at "
				  "page %" PRIu64,
				  when, w->s, w->e, pos / PG);
			const struct vr_region *r = vr_target_region(t, j++);

			cr_assert(r->start == pos && r->end <= P(w->e),
				  "%s: expected a fresh region from page %" PRIu64
				  " within [%u, %u), "
				  "got [%" PRIu64 ", %" PRIu64 ")",
				  when, pos / PG, w->s, w->e, r->start / PG, r->end / PG);
			cr_assert(r->nr_accesses == 0 && r->last_nr_accesses == 0 && r->age == 0,
				  "%s: fresh region [%" PRIu64 ", %" PRIu64 ") expected counters "
				  "0/0/0, got nr_accesses %u, last %u, age %u",
				  when, r->start / PG, r->end / PG, r->nr_accesses,
				  r->last_nr_accesses, r->age);
			pos = r->end;
		}
	}
	cr_assert_eq(j, n, "%s: expected %u regions, got %u", when, j, n);
}

/* ------------------------------------------------------------------------- */
/* Attributes validation                                                     */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_attrs, .description = "vr_monitor_attrs_validate() and vr_ctx_set_attrs()");

struct attrs_case {
	char name[64];
	struct vr_monitor_attrs attrs;
	char field[48]; /* '|'-separated: the error message names one of them */
};

#define A(s, a, o, mi, ma)                                                                         \
	{                                                                                          \
		.sample_interval_us = (s), .aggr_interval_us = (a), .ops_update_interval_us = (o), \
		.min_nr_regions = (mi), .max_nr_regions = (ma)                                     \
	}

static struct attrs_case bad_attrs[] = {
	{ "min_nr_regions 2 (< 3)", A(5000, 100000, 1000000, 2, 1000), "min_nr_regions" },
	{ "min_nr_regions 0", A(5000, 100000, 1000000, 0, 1000), "min_nr_regions" },
	{ "max_nr_regions < min", A(5000, 100000, 1000000, 10, 9), "max_nr_regions" },
	{ "aggr < sample", A(5000, 4000, 1000000, 10, 1000), "aggr_interval" },
	{ "aggr not a multiple of sample", A(5000, 12000, 1000000, 10, 1000), "aggr_interval" },
	{ "zero sample_interval", A(0, 100000, 1000000, 10, 1000), "sample_interval" },
	{ "zero aggr_interval", A(5000, 0, 1000000, 10, 1000), "aggr_interval" },
	{ "ops_update not a multiple", A(5000, 100000, 1000001, 10, 1000), "ops_update_interval" },
	{ "ops_update below sample", A(5000, 100000, 2500, 10, 1000), "ops_update_interval" },
	{ "max_nr_accesses 2^16 + 1", A(1, 65537, 0, 10, 1000), "aggr_interval|max_nr_accesses" },
	{ "aggr above an hour", A(1000000, 3601000000ULL, 0, 10, 1000), "aggr_interval" },
};

static struct attrs_case good_attrs[] = {
	{ "the defaults", A(5000, 100000, 1000000, 10, 1000), "" },
	{ "ops_update 0 (never)", A(5000, 100000, 0, 10, 1000), "" },
	{ "min == max == 3", A(5000, 100000, 1000000, 3, 3), "" },
	{ "aggr == sample", A(5000, 5000, 5000, 3, 10), "" },
	{ "max_nr_accesses 2^16", A(1, 65536, 0, 10, 1000), "" },
	{ "aggr of an hour", A(1000000, 3600000000ULL, 0, 10, 1000), "" },
};

ParameterizedTestParameters(monitor_attrs, validate_refuses)
{
	return cr_make_param_array(struct attrs_case, bad_attrs, ARRAY_LEN(bad_attrs));
}

ParameterizedTest(struct attrs_case *c, monitor_attrs, validate_refuses)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_monitor_attrs_validate(&c->attrs, &err),
		      "%s: expected vr_monitor_attrs_validate() to refuse", c->name);
	assert_monitor_error(err, VR_MONITOR_ERROR_INVALID_ATTR, c->field, c->name);
}

ParameterizedTestParameters(monitor_attrs, validate_accepts)
{
	return cr_make_param_array(struct attrs_case, good_attrs, ARRAY_LEN(good_attrs));
}

ParameterizedTest(struct attrs_case *c, monitor_attrs, validate_accepts)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_monitor_attrs_validate(&c->attrs, &err),
		  "%s: expected valid attributes, got '%s'", c->name, err ? err->message : "?");
	cr_assert_null(err, "%s: no error expected on success", c->name);
}

Test(monitor_attrs, defaults_are_the_published_ones)
{
	struct fake_src f = { 0 };
	g_autoptr(vr_ctx) ctx = vr_ctx_new(&fake_ops, &f, 1);
	const struct vr_monitor_attrs *a = vr_ctx_attrs(ctx);
	struct vr_monitor_attrs d = VR_MONITOR_ATTRS_DEFAULT;

	cr_assert(a->sample_interval_us == 5000 && a->aggr_interval_us == 100000 &&
			  a->ops_update_interval_us == 1000000 && a->min_nr_regions == 10 &&
			  a->max_nr_regions == 1000,
		  "a new context should have 5 ms / 100 ms / 1 s / 10..1000, got %" PRIu64
		  " / %" PRIu64 " / %" PRIu64 " / %u..%u",
		  a->sample_interval_us, a->aggr_interval_us, a->ops_update_interval_us,
		  a->min_nr_regions, a->max_nr_regions);
	cr_assert(!memcmp(a, &d, sizeof(d)), "VR_MONITOR_ATTRS_DEFAULT should match a new context");
	cr_assert_eq(vr_monitor_attrs_max_nr_accesses(a), 20,
		     "max_nr_accesses of the defaults: expected 100 ms / 5 ms = 20, got %u",
		     vr_monitor_attrs_max_nr_accesses(a));
}

ParameterizedTestParameters(monitor_attrs, set_attrs_refuses_and_changes_nothing)
{
	return cr_make_param_array(struct attrs_case, bad_attrs, ARRAY_LEN(bad_attrs));
}

ParameterizedTest(struct attrs_case *c, monitor_attrs, set_attrs_refuses_and_changes_nothing)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs before = attrs_make(1000, 10, 30000, 4, 77);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &before);
	struct vr_range r = { 0, P(64) };

	cr_assert_not(vr_ctx_set_attrs(ctx, &c->attrs, &err),
		      "%s: expected vr_ctx_set_attrs() to refuse", c->name);
	assert_monitor_error(err, VR_MONITOR_ERROR_INVALID_ATTR, c->field, c->name);
	cr_assert(!memcmp(vr_ctx_attrs(ctx), &before, sizeof(before)),
		  "%s: expected the attributes unchanged after a refused set", c->name);

	/* and while running */
	g_clear_error(&err);
	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	ctx_step(ctx);
	cr_assert_not(vr_ctx_set_attrs(ctx, &c->attrs, &err),
		      "%s: expected vr_ctx_set_attrs() to refuse while running", c->name);
	assert_monitor_error(err, VR_MONITOR_ERROR_INVALID_ATTR, c->field, c->name);
	cr_assert(!memcmp(vr_ctx_attrs(ctx), &before, sizeof(before)),
		  "%s: expected the attributes unchanged after a refused set while running",
		  c->name);
}

/* A target may never have more ranges than max_nr_regions: lowering it below is refused. */
Test(monitor_attrs, set_attrs_refuses_max_below_a_targets_ranges)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs before = attrs_make(1000, 10, 0, 3, 100);
	struct vr_monitor_attrs lower = attrs_make(1000, 10, 0, 3, 4);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &before);
	const struct vr_range r[] = {
		{ 0, P(1) }, { P(2), P(3) }, { P(4), P(5) }, { P(6), P(7) }, { P(8), P(9) }
	};

	ctx_add(ctx, 1, r, 5);
	cr_assert_not(vr_ctx_set_attrs(ctx, &lower, &err),
		      "max_nr_regions 4 with a 5-range target should be refused");
	cr_assert_not_null(err, "a refused set should set the error");
	cr_assert_eq(err->domain, VR_MONITOR_ERROR, "expected the VR_MONITOR_ERROR domain");
	cr_assert(msg_has_any(err->message, "max_nr_regions"),
		  "expected the message to name max_nr_regions, got '%s'", err->message);
	cr_assert(!memcmp(vr_ctx_attrs(ctx), &before, sizeof(before)),
		  "expected the attributes unchanged after a refused set");
}

Test(monitor_attrs, set_attrs_applies_valid)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { 0 };
	g_autoptr(vr_ctx) ctx = vr_ctx_new(&fake_ops, &f, 1);
	struct vr_monitor_attrs a = attrs_make(2000, 25, 0, 5, 50);

	cr_assert(vr_ctx_set_attrs(ctx, &a, &err), "valid attrs should be accepted: %s",
		  err ? err->message : "?");
	cr_assert(!memcmp(vr_ctx_attrs(ctx), &a, sizeof(a)),
		  "vr_ctx_attrs() should return the attributes just set");
}

/* ------------------------------------------------------------------------- */
/* Range validation                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_ranges, .description = "target ranges: validation and updates");

struct range_err_case {
	char name[64];
	uint32_t max_nr_regions;
	unsigned nr;
	struct vr_range r[10]; /* bytes */
	char words[64];	       /* the message names one of these */
	int index[2];	       /* ... and one of these range indexes (-1: none) */
};

static struct range_err_case bad_ranges[] = {
	{ "unaligned start", 100, 2, { { 0, P(1) }, { P(4) + 8, P(8) } }, "align|page", { 1, -1 } },
	{ "unaligned end",
	  100,
	  3,
	  { { 0, P(1) }, { P(2), P(3) }, { P(4), P(8) + 100 } },
	  "align|page",
	  { 2, -1 } },
	{ "unaligned third of five",
	  100,
	  5,
	  { { 0, P(1) }, { P(2), P(3) }, { P(4), P(5) }, { P(6) + 1, P(7) }, { P(9), P(10) } },
	  "align|page",
	  { 3, -1 } },
	{ "empty range", 100, 2, { { 0, P(1) }, { P(4), P(4) } }, "empty|start|end", { 1, -1 } },
	{ "inverted range",
	  100,
	  2,
	  { { P(5), P(4) }, { P(8), P(9) } },
	  "empty|start|end|invert",
	  { 0, -1 } },
	{ "overlap, sorted", 100, 2, { { 0, P(4) }, { P(3), P(8) } }, "overlap", { 0, 1 } },
	{ "overlap, unsorted",
	  100,
	  3,
	  { { P(10), P(20) }, { 0, P(4) }, { P(15), P(30) } },
	  "overlap",
	  { 0, 2 } },
	{ "duplicate", 100, 2, { { P(2), P(4) }, { P(2), P(4) } }, "overlap", { 0, 1 } },
	{ "contained, unsorted", 100, 2, { { P(2), P(3) }, { 0, P(10) } }, "overlap", { 0, 1 } },
	{ "more ranges than max_nr_regions",
	  4,
	  5,
	  { { 0, P(1) }, { P(2), P(3) }, { P(4), P(5) }, { P(6), P(7) }, { P(8), P(9) } },
	  "max_nr_regions|too many",
	  { -1, -1 } },
};

static void assert_range_error(const GError *err, const struct range_err_case *c, const char *fn)
{
	char what[128];

	snprintf(what, sizeof(what), "%s (%s)", c->name, fn);
	assert_monitor_error(err, VR_MONITOR_ERROR_INVALID_RANGE, c->words, what);
	if (c->index[0] >= 0)
		cr_assert(msg_names_number(err->message, c->index[0]) ||
				  (c->index[1] >= 0 && msg_names_number(err->message, c->index[1])),
			  "%s: expected the message to name the offending index %d%s, got '%s'",
			  what, c->index[0], c->index[1] >= 0 ? " (or the other one)" : "",
			  err->message);
}

ParameterizedTestParameters(monitor_ranges, validate_refuses)
{
	return cr_make_param_array(struct range_err_case, bad_ranges, ARRAY_LEN(bad_ranges));
}

ParameterizedTest(struct range_err_case *c, monitor_ranges, validate_refuses)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_ranges_validate(c->r, c->nr, c->max_nr_regions, &err),
		      "%s: expected vr_ranges_validate() to refuse", c->name);
	assert_range_error(err, c, "vr_ranges_validate");
}

ParameterizedTestParameters(monitor_ranges, add_target_refuses_and_changes_nothing)
{
	return cr_make_param_array(struct range_err_case, bad_ranges, ARRAY_LEN(bad_ranges));
}

ParameterizedTest(struct range_err_case *c, monitor_ranges, add_target_refuses_and_changes_nothing)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, c->max_nr_regions);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range ok = { P(1000), P(1100) };
	struct vr_target *t0 = ctx_add(ctx, 7, &ok, 1);

	cr_assert_null(vr_ctx_add_target(ctx, 8, c->r, c->nr, &err),
		       "%s: expected vr_ctx_add_target() to refuse (return NULL)", c->name);
	assert_range_error(err, c, "vr_ctx_add_target");
	cr_assert_eq(vr_ctx_nr_targets(ctx), 1,
		     "%s: expected the target count unchanged (1) after a refused add, got %u",
		     c->name, vr_ctx_nr_targets(ctx));
	cr_assert(vr_ctx_target(ctx, 0) == t0 && t0->id == 7 && t0->ranges->len == 1 &&
			  g_array_index(t0->ranges, struct vr_range, 0).start == ok.start &&
			  g_array_index(t0->ranges, struct vr_range, 0).end == ok.end,
		  "%s: expected the existing target unchanged", c->name);

	/* also refused once running, with the regions left alone */
	ctx_start(ctx, 0);
	g_autoptr(GArray) regions = regions_copy(t0);

	g_clear_error(&err);
	cr_assert_null(vr_ctx_add_target(ctx, 9, c->r, c->nr, &err),
		       "%s: expected vr_ctx_add_target() to refuse while running", c->name);
	assert_range_error(err, c, "vr_ctx_add_target, running");
	cr_assert_eq(vr_ctx_nr_targets(ctx), 1, "%s: expected the target count to stay 1, got %u",
		     c->name, vr_ctx_nr_targets(ctx));
	cr_assert(regions_equal(regions, t0->regions),
		  "%s: expected the regions unchanged after a refused add", c->name);
}

ParameterizedTestParameters(monitor_ranges, set_ranges_refuses_and_changes_nothing)
{
	return cr_make_param_array(struct range_err_case, bad_ranges, ARRAY_LEN(bad_ranges));
}

ParameterizedTest(struct range_err_case *c, monitor_ranges, set_ranges_refuses_and_changes_nothing)
{
	g_autoptr(GError) err = NULL;
	/*
	 *  before   |A 0..4 nr3|B 4..8 nr5|     |C 10..12 nr1|
	 *  after a refused update: the same
	 */
	static const struct rs before[] = { R(0, 4, 3, 2, 1), R(4, 8, 5, 5, 9),
					    R(10, 12, 1, 0, 2) };
	struct vr_target *t = target_from_specs(1, before, ARRAY_LEN(before));
	g_autoptr(GArray) ranges = ranges_copy(t);
	g_autoptr(GArray) regions = regions_copy(t);

	cr_assert_not(vr_target_set_ranges(t, c->r, c->nr, c->max_nr_regions, &err),
		      "%s: expected vr_target_set_ranges() to refuse", c->name);
	assert_range_error(err, c, "vr_target_set_ranges");
	cr_assert(arrays_equal(ranges, t->ranges, sizeof(struct vr_range)),
		  "%s: expected the ranges unchanged after a refused update", c->name);
	cr_assert(regions_equal(regions, t->regions),
		  "%s: expected the regions unchanged after a refused update", c->name);
	target_free(t);
}

Test(monitor_ranges, validate_accepts_unsorted_touching_and_max)
{
	g_autoptr(GError) err = NULL;
	const struct vr_range touching[] = { { 0, P(4) }, { P(4), P(8) } };
	const struct vr_range unsorted[] = { { P(20), P(30) }, { 0, P(4) }, { P(8), P(9) } };
	const struct vr_range four[] = {
		{ 0, P(1) }, { P(2), P(3) }, { P(4), P(5) }, { P(6), P(7) }
	};

	cr_assert(vr_ranges_validate(touching, 2, 100, &err),
		  "touching ranges do not overlap and should be accepted: %s",
		  err ? err->message : "?");
	cr_assert(vr_ranges_validate(unsorted, 3, 100, &err),
		  "ranges need not be sorted: expected acceptance, got %s",
		  err ? err->message : "?");
	cr_assert(vr_ranges_validate(four, 4, 4, &err),
		  "exactly max_nr_regions ranges should be accepted: %s", err ? err->message : "?");
}

Test(monitor_ranges, add_target_sorts_ranges)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	const struct vr_range unsorted[] = { { P(20), P(30) }, { 0, P(4) }, { P(8), P(9) } };
	struct vr_target *t = ctx_add(ctx, 3, unsorted, 3);

	cr_assert_eq(t->id, 3, "the target should keep its id 3, got %" PRIu64, t->id);
	cr_assert_eq(t->ranges->len, 3, "expected 3 ranges, got %u", t->ranges->len);
	cr_assert(g_array_index(t->ranges, struct vr_range, 0).start == 0 &&
			  g_array_index(t->ranges, struct vr_range, 1).start == P(8) &&
			  g_array_index(t->ranges, struct vr_range, 2).start == P(20),
		  "expected the target's ranges sorted by address");
	cr_assert_eq(vr_target_size(t), P(15), "expected a target size of 15 pages, got %" PRIu64,
		     vr_target_size(t));
	ctx_start(ctx, 0);
	assert_ctx_invariants(ctx, "after start with unsorted ranges");
}

/*
 * vr_target_set_ranges(): regions that intersect a new range are trimmed to it
 * and keep their counters; uncovered parts of new ranges get fresh regions
 * (counters 0, shown as "new"); regions outside every new range are dropped.
 */
struct set_ranges_case {
	char name[64];
	unsigned nr_before;
	struct rs before[MAXR];
	unsigned nr_ranges;
	struct vr_range ranges[MAXR]; /* bytes, in the order given */
	unsigned nr_after;
	struct rs after[MAXR];
};

#define FRESH(s, e)                                                                                \
	{                                                                                          \
		(s), (e), 0, 0, 0, true                                                            \
	}

static struct set_ranges_case set_ranges_cases[] = {
	/*
	 * ranges   [0     4)          ->  [0               8)
	 * before   |A 5/3/7|
	 * after    |A 5/3/7|  new     |
	 */
	{ "grow to the right",
	  1,
	  { R(0, 4, 5, 3, 7) },
	  1,
	  { { 0, P(8) } },
	  2,
	  { R(0, 4, 5, 3, 7), FRESH(4, 8) } },
	/*
	 * ranges          [4     8)   ->  [0               8)
	 * before          |A 5/3/7|
	 * after    | new  |A 5/3/7|
	 */
	{ "grow to the left",
	  1,
	  { R(4, 8, 5, 3, 7) },
	  1,
	  { { 0, P(8) } },
	  2,
	  { FRESH(0, 4), R(4, 8, 5, 3, 7) } },
	/*
	 * ranges       [2         6)      ->  [0                  8)
	 * before       |A 1/2/3|B 4/5/6|
	 * after    |new|A 1/2/3|B 4/5/6|new|
	 */
	{ "grow on both sides",
	  2,
	  { R(2, 4, 1, 2, 3), R(4, 6, 4, 5, 6) },
	  1,
	  { { 0, P(8) } },
	  4,
	  { FRESH(0, 2), R(2, 4, 1, 2, 3), R(4, 6, 4, 5, 6), FRESH(6, 8) } },
	/*
	 * ranges   [0               8)    ->      [2      6)
	 * before   |A 0..4 5/5/2|B 4..8 9/1/4|
	 * after           |A 2..4 |B 4..6|        (trimmed, counters kept)
	 */
	{ "shrink both ends",
	  2,
	  { R(0, 4, 5, 5, 2), R(4, 8, 9, 1, 4) },
	  1,
	  { { P(2), P(6) } },
	  2,
	  { R(2, 4, 5, 5, 2), R(4, 6, 9, 1, 4) } },
	/*
	 * ranges   [0               8)    ->  [0   3)
	 * before   |A 0..4 5/5/2|B 4..8 9/1/4|
	 * after    |A 0..3|                   (B outside: dropped)
	 */
	{ "shrink drops a region",
	  2,
	  { R(0, 4, 5, 5, 2), R(4, 8, 9, 1, 4) },
	  1,
	  { { 0, P(3) } },
	  1,
	  { R(0, 3, 5, 5, 2) } },
	/*
	 * ranges   [0                 8)  ->  [0   3)   [5   8)
	 * before   |A 0..8 7/4/2         |
	 * after    |A 0..3 |  (hole)  |A 5..8|   (both keep 7/4/2)
	 */
	{ "punch a hole in a region",
	  1,
	  { R(0, 8, 7, 4, 2) },
	  2,
	  { { 0, P(3) }, { P(5), P(8) } },
	  2,
	  { R(0, 3, 7, 4, 2), R(5, 8, 7, 4, 2) } },
	/*
	 * ranges   [0               8)    ->  [0      4)[5   8)
	 * before   |A 0..4 1/1/1|B 4..8 2/2/2|
	 * after    |A 0..4 1/1/1|   |B 5..8|
	 */
	{ "hole at a region boundary",
	  2,
	  { R(0, 4, 1, 1, 1), R(4, 8, 2, 2, 2) },
	  2,
	  { { 0, P(4) }, { P(5), P(8) } },
	  2,
	  { R(0, 4, 1, 1, 1), R(5, 8, 2, 2, 2) } },
	/*
	 * ranges   [0   4)            ->               [10   14)
	 * before   |A 3/3/3|
	 * after                                        |  new  |
	 */
	{ "move away", 1, { R(0, 4, 3, 3, 3) }, 1, { { P(10), P(14) } }, 1, { FRESH(10, 14) } },
	/*
	 * ranges   [0   4)            ->  [0   4)      [10  12)
	 * before   |A 3/3/3|
	 * after    |A 3/3/3|              | new |
	 */
	{ "add a range",
	  1,
	  { R(0, 4, 3, 3, 3) },
	  2,
	  { { P(10), P(12) }, { 0, P(4) } },
	  2,
	  { R(0, 4, 3, 3, 3), FRESH(10, 12) } },
	/*
	 * ranges   [0   4)   [6   10)     ->  [0               10)
	 * before   |A 1/0/5| |B 2/0/6|
	 * after    |A 1/0/5|new|B 2/0/6|      (the hole is filled)
	 */
	{ "fill a hole",
	  2,
	  { R(0, 4, 1, 0, 5), R(6, 10, 2, 0, 6) },
	  1,
	  { { 0, P(10) } },
	  3,
	  { R(0, 4, 1, 0, 5), FRESH(4, 6), R(6, 10, 2, 0, 6) } },
	/*
	 * ranges   [0   4)    [10   14)   ->  given unsorted: [10 12) [0 2)
	 * before   |A 1/2/3|  |B 4/5/6|
	 * after    |A 0..2|   |B 10..12|
	 */
	{ "shrink two, given unsorted",
	  2,
	  { R(0, 4, 1, 2, 3), R(10, 14, 4, 5, 6) },
	  2,
	  { { P(10), P(12) }, { 0, P(2) } },
	  2,
	  { R(0, 2, 1, 2, 3), R(10, 12, 4, 5, 6) } },
	/*
	 * ranges   [0                    12)  ->  [1 2)   [5      11)
	 * before   |A 0..3 1/1/1|B 3..6 2/2/2|C 6..12 3/3/3|
	 * after     |A 1..2|      |B 5..6|C 6..11|
	 */
	{ "several regions, two new ranges",
	  3,
	  { R(0, 3, 1, 1, 1), R(3, 6, 2, 2, 2), R(6, 12, 3, 3, 3) },
	  2,
	  { { P(1), P(2) }, { P(5), P(11) } },
	  3,
	  { R(1, 2, 1, 1, 1), R(5, 6, 2, 2, 2), R(6, 11, 3, 3, 3) } },
};

ParameterizedTestParameters(monitor_ranges, set_ranges_table)
{
	return cr_make_param_array(struct set_ranges_case, set_ranges_cases,
				   ARRAY_LEN(set_ranges_cases));
}

ParameterizedTest(struct set_ranges_case *c, monitor_ranges, set_ranges_table)
{
	g_autoptr(GError) err = NULL;
	struct vr_target *t = target_from_specs(1, c->before, c->nr_before);

	cr_assert(vr_target_set_ranges(t, c->ranges, c->nr_ranges, 100, &err),
		  "%s: expected the new ranges to be accepted: %s", c->name,
		  err ? err->message : "?");
	assert_target_invariants(t, c->name);
	assert_regions_match(t, c->after, c->nr_after, c->name);

	/* the stored ranges are the new ones, sorted */
	cr_assert_eq(t->ranges->len, c->nr_ranges, "%s: expected %u ranges, got %u", c->name,
		     c->nr_ranges, t->ranges->len);
	for (unsigned i = 0; i < c->nr_ranges; i++) {
		bool found = false;

		for (guint k = 0; k < t->ranges->len; k++) {
			const struct vr_range *r = &g_array_index(t->ranges, struct vr_range, k);

			found |= r->start == c->ranges[i].start && r->end == c->ranges[i].end;
		}
		cr_assert(found, "%s: expected new range %u [%#" PRIx64 ", %#" PRIx64 ") stored",
			  c->name, i, c->ranges[i].start, c->ranges[i].end);
	}
	target_free(t);
}

/* ------------------------------------------------------------------------- */
/* Merge and age                                                             */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_merge, .description = "ages, merge walks and the threshold doubling");

struct merge_case {
	char name[64];
	uint32_t thres;
	uint64_t sz_limit; /* bytes */
	unsigned nr_before;
	struct rs before[MAXR];
	unsigned nr_after;
	struct rs after[MAXR];
};

static struct merge_case merge_cases[] = {
	/*
	 * before  |A 1p nr10|B 3p nr2              |
	 * after   |A+B 4p nr (10*1 + 2*3)/4 = 4     |
	 *          last (5*1 + 5*3)/4 = 5, age (1*1 + 3*3)/4 = 2 (2.5 truncated)
	 */
	{ "weighted average, 1p and 3p",
	  8,
	  P(4),
	  2,
	  { R(0, 1, 10, 5, 1), R(1, 4, 2, 5, 3) },
	  1,
	  { R(0, 4, 4, 5, 2) } },
	/*
	 * before  |A 1p nr10 last9 age7|B 3p nr3 last0 age2|
	 * after   |nr 19/4 = 4 (4.75), last 9/4 = 2 (2.25), age 13/4 = 3 (3.25)|
	 */
	{ "weighted averages truncate",
	  7,
	  P(4),
	  2,
	  { R(0, 1, 10, 9, 7), R(1, 4, 3, 0, 2) },
	  1,
	  { R(0, 4, 4, 2, 3) } },
	/*
	 * before  |A 2p nr5|B 2p nr8|   thres 3: |5 - 8| = 3 <= 3
	 * after   |A+B nr 26/4 = 6    |
	 */
	{ "difference == thres merges",
	  3,
	  P(100),
	  2,
	  { R(0, 2, 5, 5, 0), R(2, 4, 8, 8, 0) },
	  1,
	  { R(0, 4, 6, 6, 0) } },
	/*
	 * before  |A nr5|B nr9|   thres 3: |5 - 9| = 4 > 3
	 * after   |A nr5|B nr9|
	 */
	{ "difference > thres stays",
	  3,
	  P(100),
	  2,
	  { R(0, 2, 5, 5, 1), R(2, 4, 9, 9, 1) },
	  2,
	  { R(0, 2, 5, 5, 1), R(2, 4, 9, 9, 1) } },
	/*
	 * before  |A nr5|  hole  |B nr5|
	 * after   |A nr5|        |B nr5|   (not adjacent)
	 */
	{ "a hole blocks the merge",
	  100,
	  P(100),
	  2,
	  { R(0, 2, 5, 5, 1), R(3, 5, 5, 5, 1) },
	  2,
	  { R(0, 2, 5, 5, 1), R(3, 5, 5, 5, 1) } },
	/*
	 * before  |A 2p|B 2p|   sz_limit 4p: merged 4p <= 4p
	 * after   |A+B 4p   |
	 */
	{ "merged size == sz_limit merges",
	  0,
	  P(4),
	  2,
	  { R(0, 2, 5, 5, 1), R(2, 4, 5, 5, 1) },
	  1,
	  { R(0, 4, 5, 5, 1) } },
	/*
	 * before  |A 2p|B 2p|   sz_limit 4p - 1 byte
	 * after   |A 2p|B 2p|
	 */
	{ "merged size > sz_limit stays",
	  0,
	  P(4) - 1,
	  2,
	  { R(0, 2, 5, 5, 1), R(2, 4, 5, 5, 1) },
	  2,
	  { R(0, 2, 5, 5, 1), R(2, 4, 5, 5, 1) } },
	/*
	 * before  |A 1p nr4|B 1p nr6|C 2p nr9|D 4p nr7  |
	 * one walk, thres 5:
	 *         A+B = 2p nr5, +C = 4p nr7, +D = 8p nr7 (no truncation on the way)
	 * after   |A+B+C+D 8p nr7                       |
	 */
	{ "chain of four in one walk",
	  5,
	  P(8),
	  4,
	  { R(0, 1, 4, 4, 4), R(1, 2, 6, 6, 6), R(2, 4, 9, 9, 9), R(4, 8, 7, 7, 7) },
	  1,
	  { R(0, 8, 7, 7, 7) } },
	/*
	 * before  |1p|1p|1p|1p|1p|   all nr3, sz_limit 2p
	 * after   |  2p |  2p |1p|
	 */
	{ "chain cut by sz_limit",
	  1,
	  P(2),
	  5,
	  { R(0, 1, 3, 3, 1), R(1, 2, 3, 3, 1), R(2, 3, 3, 3, 1), R(3, 4, 3, 3, 1),
	    R(4, 5, 3, 3, 1) },
	  3,
	  { R(0, 2, 3, 3, 1), R(2, 4, 3, 3, 1), R(4, 5, 3, 3, 1) } },
	/*
	 * before  |nr0|nr1|nr10|nr10|nr0|   thres 1
	 * after   |nr 0  | nr10    |nr0|   ((0 + 1)/2 = 0)
	 */
	{ "hot run between cold ones",
	  1,
	  P(100),
	  5,
	  { R(0, 1, 0, 0, 2), R(1, 2, 1, 1, 2), R(2, 3, 10, 10, 2), R(3, 4, 10, 10, 2),
	    R(4, 5, 0, 0, 2) },
	  3,
	  { R(0, 2, 0, 0, 2), R(2, 4, 10, 10, 2), R(4, 5, 0, 0, 2) } },
	/*
	 * before  |A nr3|B nr3|C nr4|  thres 0: only equal counts merge
	 * after   |A+B nr3    |C nr4|
	 */
	{ "thres 0 merges equal counts only",
	  0,
	  P(100),
	  3,
	  { R(0, 1, 3, 3, 0), R(1, 2, 3, 3, 0), R(2, 3, 4, 4, 0) },
	  2,
	  { R(0, 2, 3, 3, 0), R(2, 3, 4, 4, 0) } },
	/*
	 * before  |A|B| hole |C|D| hole |E|     all nr2
	 * after   |A+B| hole |C+D| hole |E|
	 */
	{ "runs separated by holes",
	  0,
	  P(100),
	  5,
	  { R(0, 1, 2, 2, 0), R(1, 2, 2, 2, 0), R(4, 5, 2, 2, 0), R(5, 7, 2, 2, 0),
	    R(9, 10, 2, 2, 0) },
	  3,
	  { R(0, 2, 2, 2, 0), R(4, 7, 2, 2, 0), R(9, 10, 2, 2, 0) } },
};

ParameterizedTestParameters(monitor_merge, merge_walk_table)
{
	return cr_make_param_array(struct merge_case, merge_cases, ARRAY_LEN(merge_cases));
}

ParameterizedTest(struct merge_case *c, monitor_merge, merge_walk_table)
{
	struct vr_target *t = target_from_specs(1, c->before, c->nr_before);

	vr_target_merge_regions(t, c->thres, c->sz_limit);
	assert_target_invariants(t, c->name);
	assert_regions_match(t, c->after, c->nr_after, c->name);
	target_free(t);
}

/* vr_target_update_ages(): 0 when |nr_accesses - last_nr_accesses| > thres, else +1. */
struct age_case {
	char name[48];
	uint32_t thres;
	unsigned nr;
	struct rs before[MAXR];
	uint32_t age_after[MAXR];
};

static struct age_case age_cases[] = {
	/*
	 *             nr:last  |5:5|7:5|8:5|2:5|3:5|0:0|0:20|
	 * thres 2     age      | 3 | 3 | 3 | 9 | 9 | 0 | 100|
	 *                  ->  | 4 | 4 | 0 | 0 |10 | 1 |  0 |
	 */
	{ "thres 2",
	  2,
	  7,
	  { R(0, 1, 5, 5, 3), R(1, 2, 7, 5, 3), R(2, 3, 8, 5, 3), R(3, 4, 2, 5, 9),
	    R(4, 5, 3, 5, 9), R(5, 6, 0, 0, 0), R(6, 7, 0, 20, 100) },
	  { 4, 4, 0, 0, 10, 1, 0 } },
	{ "thres 0", 0, 3, { R(0, 1, 5, 5, 1), R(1, 2, 6, 5, 1), R(2, 3, 4, 5, 1) }, { 2, 0, 0 } },
	{ "thres 20, full swing",
	  20,
	  3,
	  { R(0, 1, 0, 20, 6), R(1, 2, 20, 0, 6), R(3, 4, 21, 0, 6) },
	  { 7, 7, 0 } },
};

ParameterizedTestParameters(monitor_merge, update_ages_table)
{
	return cr_make_param_array(struct age_case, age_cases, ARRAY_LEN(age_cases));
}

ParameterizedTest(struct age_case *c, monitor_merge, update_ages_table)
{
	struct vr_target *t = target_from_specs(1, c->before, c->nr);

	vr_target_update_ages(t, c->thres);
	cr_assert_eq(vr_target_nr_regions(t), c->nr,
		     "%s: ages must not merge or split regions: expected %u, got %u", c->name,
		     c->nr, vr_target_nr_regions(t));
	for (unsigned i = 0; i < c->nr; i++) {
		const struct vr_region *r = vr_target_region(t, i);

		cr_assert_eq(r->age, c->age_after[i],
			     "%s: region %u (nr %u, last %u, age %u): expected age %u, got %u",
			     c->name, i, c->before[i].nr, c->before[i].last, c->before[i].age,
			     c->age_after[i], r->age);
		cr_assert(r->nr_accesses == c->before[i].nr &&
				  r->last_nr_accesses == c->before[i].last,
			  "%s: region %u: ages must leave the counters alone", c->name, i);
	}
	target_free(t);
}

/*
 * A context over two targets of 4 one-page regions each, for
 * vr_ctx_merge_regions() with hand-set counters.
 *
 *   target 1  [0   4)      target 2  [100   104)
 */
static struct vr_ctx *two_target_ctx(struct fake_src *f, uint32_t max_nr_accesses, uint32_t min_nr,
				     uint32_t max_nr)
{
	struct vr_monitor_attrs a = attrs_make(1000, max_nr_accesses, 0, min_nr, max_nr);
	struct vr_ctx *ctx = ctx_new_with(f, 1, &a);
	struct vr_range r1 = { 0, P(4) }, r2 = { P(100), P(104) };

	ctx_add(ctx, 1, &r1, 1);
	ctx_add(ctx, 2, &r2, 1);
	ctx_start(ctx, 0);
	return ctx;
}

struct first_thres_case {
	char name[48];
	uint32_t max_nr_accesses;
	uint32_t nr1[4], nr2[4];
	uint32_t thres;
};

static struct first_thres_case first_thres_cases[] = {
	{ "all idle: at least 1", 20, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, 1 },
	{ "m 9: 9/10 = 0 -> 1", 20, { 0, 9, 0, 0 }, { 0, 0, 0, 0 }, 1 },
	{ "m 10", 20, { 0, 0, 10, 0 }, { 0, 0, 0, 0 }, 1 },
	{ "m 19", 20, { 0, 0, 0, 19 }, { 0, 5, 0, 0 }, 1 },
	{ "m 20", 20, { 20, 0, 0, 0 }, { 0, 0, 0, 0 }, 2 },
	{ "m 39 in the second target", 40, { 1, 2, 3, 4 }, { 0, 39, 0, 0 }, 3 },
	{ "m 100 of 100", 100, { 100, 0, 100, 0 }, { 0, 0, 0, 0 }, 10 },
	{ "m 55 of 100", 100, { 0, 0, 0, 0 }, { 12, 55, 54, 0 }, 5 },
};

ParameterizedTestParameters(monitor_merge, first_threshold)
{
	return cr_make_param_array(struct first_thres_case, first_thres_cases,
				   ARRAY_LEN(first_thres_cases));
}

ParameterizedTest(struct first_thres_case *c, monitor_merge, first_threshold)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	g_autoptr(vr_ctx) ctx = two_target_ctx(&f, c->max_nr_accesses, 3, 100);
	struct rs r1[4], r2[4];

	for (unsigned i = 0; i < 4; i++) {
		r1[i] = (struct rs){ i, i + 1, c->nr1[i], c->nr1[i], 0, false };
		r2[i] = (struct rs){ 100 + i, 101 + i, c->nr2[i], c->nr2[i], 0, false };
	}
	target_load_specs(vr_ctx_target(ctx, 0), r1, 4);
	target_load_specs(vr_ctx_target(ctx, 1), r2, 4);

	uint32_t thres = vr_ctx_merge_regions(ctx);

	cr_assert_eq(thres, c->thres,
		     "%s: expected the first threshold max(1, m / 10) = %u, got %u", c->name,
		     c->thres, thres);
	assert_ctx_invariants(ctx, c->name);
}

Test(monitor_merge, ctx_merge_ages_with_first_threshold)
{
	/*
	 * 4 pages, min_nr_regions 3: sz_limit = 4p / 3 < 2p, so nothing merges.
	 * m = 20 -> thres 2.
	 *
	 *   nr:last  |20:20|0:2 |0:3 |20:20|
	 *   age      |  5  | 5  | 5  |  5  |
	 *   after    |  6  | 6  | 0  |  6  |   (|0 - 2| = 2 <= 2, |0 - 3| = 3 > 2)
	 */
	static const struct rs before[] = {
		R(0, 1, 20, 20, 5),
		R(1, 2, 0, 2, 5),
		R(2, 3, 0, 3, 5),
		R(3, 4, 20, 20, 5),
	};
	static const struct rs after[] = {
		R(0, 1, 20, 20, 6),
		R(1, 2, 0, 2, 6),
		R(2, 3, 0, 3, 0),
		R(3, 4, 20, 20, 6),
	};
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(4) };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);

	ctx_start(ctx, 0);
	target_load_specs(t, before, ARRAY_LEN(before));
	cr_assert_lt(vr_ctx_sz_limit(ctx), P(2), "sz_limit of 4 pages / 3 should be below 2 pages");
	cr_assert_eq(vr_ctx_merge_regions(ctx), 2, "m = 20: expected the first threshold 2");
	assert_regions_match(t, after, ARRAY_LEN(after), "ages with the first threshold");
}

/*
 * More regions than max_nr_regions: the walk repeats with the threshold
 * doubled until the count fits.
 *
 * 60 one-page regions, nr alternating 20/0, max_nr_accesses 20, min 3 (sz_limit
 * 20 pages), max 10. Walks at thres 2, 4, 8, 16 merge nothing (|20 - 0| = 20);
 * the walk at 32 (16 / 2 < 20) merges up to sz_limit:
 *
 *   before  |20|0|20|0|...............................|0|   60 x 1p
 *   after   |      20p      |      20p      |      20p      |
 */
Test(monitor_merge, repeat_walks_bring_count_down)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 3, 10);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(60) };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);
	struct rs before[60];

	for (unsigned i = 0; i < 60; i++)
		before[i] = (struct rs){ i, i + 1, i % 2 ? 0 : 20, i % 2 ? 0 : 20, 2, false };
	ctx_start(ctx, 0);
	target_load_specs(t, before, 60);
	cr_assert_eq(vr_ctx_sz_limit(ctx), P(20), "sz_limit: expected 60p / 3 = 20p, got %" PRIu64,
		     vr_ctx_sz_limit(ctx));

	cr_assert_eq(vr_ctx_merge_regions(ctx), 2, "m = 20: expected the first threshold 2");
	assert_target_invariants(t, "after repeated walks");
	cr_assert_eq(vr_target_nr_regions(t), 3,
		     "expected the doubling walks to merge 60 regions into 3 of 20 pages, got %u",
		     vr_target_nr_regions(t));
	for (unsigned i = 0; i < 3; i++) {
		const struct vr_region *m = vr_target_region(t, i);

		cr_assert(m->start == P(20 * i) && m->end == P(20 * (i + 1)),
			  "merged region %u: expected pages [%u, %u), got [%" PRIu64 ", %" PRIu64
			  ")",
			  i, 20 * i, 20 * (i + 1), m->start / PG, m->end / PG);
		cr_assert_eq(m->age, 3,
			     "merged region %u: expected age 2 + 1 = 3 (aged once), got %u", i,
			     m->age);
		cr_assert_leq(m->nr_accesses, 20,
			      "merged nr_accesses must stay within 0..20, got %u", m->nr_accesses);
	}
}

/*
 * The doubling goes up to the first threshold >= max_nr_accesses: with
 * max_nr_accesses 16, walks run at 1, 2, 4, 8 and 16 (8 / 2 < 16); |16 - 0| =
 * 16 merges at thres 16. Only then 32 / 2 >= 16 stops the loop.
 */
Test(monitor_merge, doubling_reaches_max_nr_accesses)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 16, 0, 3, 10);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(60) };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);
	struct rs before[60];

	for (unsigned i = 0; i < 60; i++)
		before[i] = (struct rs){ i, i + 1, i % 2 ? 0 : 16, i % 2 ? 0 : 16, 0, false };
	ctx_start(ctx, 0);
	target_load_specs(t, before, 60);
	cr_assert_eq(vr_ctx_merge_regions(ctx), 1, "m = 16: expected the first threshold 1");
	assert_target_invariants(t, "after doubling to 16");
	cr_assert_eq(vr_target_nr_regions(t), 3,
		     "expected a walk at thres 16 (16 / 2 < max_nr_accesses 16) to merge "
		     "|16 - 0| neighbours into 3 regions of 20 pages, got %u regions",
		     vr_target_nr_regions(t));
}

/*
 * The stop rule. 12 one-page regions, min 7 (sz_limit = 12p / 7 < 2p: no merge
 * is possible at any threshold), max 8 (the count, 12, stays above it).
 * The loop must stop once thres / 2 >= max_nr_accesses and age every region
 * exactly once.
 *
 *   before  |20|0|20|0|20|0|20|0|20|0|20|0|   age 4
 *   after   |20|0|20|0|20|0|20|0|20|0|20|0|   age 5
 */
Test(monitor_merge, stop_rule_terminates_and_ages_once)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 7, 8);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(12) };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);
	struct rs before[12], after[12];

	for (unsigned i = 0; i < 12; i++) {
		uint32_t nr = i % 2 ? 0 : 20;

		before[i] = (struct rs){ i, i + 1, nr, nr, 4, false };
		after[i] = (struct rs){ i, i + 1, nr, nr, 5, false };
	}
	ctx_start(ctx, 0);
	target_load_specs(t, before, 12);
	cr_assert_lt(vr_ctx_sz_limit(ctx), P(2), "sz_limit 12p / 7 should be below 2 pages");

	cr_assert_eq(vr_ctx_merge_regions(ctx), 2, "m = 20: expected the first threshold 2");
	assert_regions_match(t, after, 12,
			     "stop rule: nothing merges, every age incremented exactly once");
	cr_assert_eq(vr_ctx_nr_regions(ctx), 12,
		     "the count stays above max_nr_regions when nothing can merge: expected 12");
}

/* Two targets share the count: 6 + 6 one-page regions, same stop rule. */
Test(monitor_merge, stop_rule_over_targets)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 7, 8);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r1 = { 0, P(6) }, r2 = { P(50), P(56) };
	struct vr_target *t1 = ctx_add(ctx, 1, &r1, 1);
	struct vr_target *t2 = ctx_add(ctx, 2, &r2, 1);
	struct rs b1[6], b2[6], a1[6], a2[6];

	for (unsigned i = 0; i < 6; i++) {
		uint32_t nr = i % 2 ? 10 : 0;

		b1[i] = (struct rs){ i, i + 1, nr, nr, 0, false };
		a1[i] = (struct rs){ i, i + 1, nr, nr, 1, false };
		b2[i] = (struct rs){ 50 + i, 51 + i, nr, 0, 3, false };
		a2[i] = (struct rs){ 50 + i, 51 + i, nr, 0, nr ? 0 : 4, false };
	}
	ctx_start(ctx, 0);
	target_load_specs(t1, b1, 6);
	target_load_specs(t2, b2, 6);
	cr_assert_eq(vr_ctx_merge_regions(ctx), 1, "m = 10: expected the first threshold 1");
	assert_regions_match(t1, a1, 6, "target 1: no merge, aged once");
	assert_regions_match(t2, a2, 6, "target 2: no merge, ages reset where |10 - 0| > 1");
}

/* ------------------------------------------------------------------------- */
/* Split                                                                     */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_split, .description = "split points and the split rule");

struct split_case {
	char name[48];
	unsigned nr_pieces;
	unsigned nr;
	struct rs before[MAXR];
};

#define MIXED_REGIONS                                                                              \
	{                                                                                          \
		R(0, 1, 1, 1, 1), R(1, 11, 2, 2, 2), R(20, 120, 3, 3, 3), R(200, 201, 4, 4, 4),    \
			R(300, 2300, 5, 5, 5)                                                      \
	}

static struct split_case split_cases[] = {
	/* |1p| never splits */
	{ "one page, 2 pieces", 2, 1, { R(0, 1, 3, 2, 1) } },
	{ "one page, 3 pieces", 3, 1, { R(7, 8, 3, 2, 1) } },
	/* |2p| -> |1p|1p| (the only cut in [10%, 90%]) */
	{ "two pages, 2 pieces", 2, 1, { R(0, 2, 4, 4, 4) } },
	{ "two pages, 3 pieces", 3, 1, { R(0, 2, 4, 4, 4) } },
	/* |3p| -> |1p|1p|1p| */
	{ "three pages, 3 pieces", 3, 1, { R(10, 13, 1, 2, 3) } },
	{ "ten pages, 2 pieces", 2, 1, { R(0, 10, 9, 8, 7) } },
	{ "ten pages, 3 pieces", 3, 1, { R(0, 10, 9, 8, 7) } },
	{ "1000 pages, 2 pieces", 2, 1, { R(5000, 6000, 11, 12, 13) } },
	{ "1000 pages, 3 pieces", 3, 1, { R(5000, 6000, 11, 12, 13) } },
	/*
	 * |1p|10p|  hole  |100p|  |1p|  |2000p|   each split on its own
	 */
	{ "mixed with holes, 2 pieces", 2, 5, MIXED_REGIONS },
	{ "mixed with holes, 3 pieces", 3, 5, MIXED_REGIONS },
};

/* Pieces a region of @pages pages must become; lenient only for 2 pages in 3. */
static void expected_pieces(uint64_t pages, unsigned nr_pieces, unsigned *lo, unsigned *hi)
{
	if (pages == 1) {
		*lo = *hi = 1;
	} else if (pages < nr_pieces) {
		*lo = 1;
		*hi = (unsigned)pages;
	} else {
		*lo = *hi = nr_pieces;
	}
}

ParameterizedTestParameters(monitor_split, split_regions_table)
{
	return cr_make_param_array(struct split_case, split_cases, ARRAY_LEN(split_cases));
}

/*
 * Every cut point c of a region [s, e) of size S: page-aligned and
 * 10% * S <= c - s <= 90% * S; pieces tile [s, e) and copy the counters.
 * Over 200 seeds.
 */
ParameterizedTest(struct split_case *c, monitor_split, split_regions_table)
{
	uint64_t first_cut_seen[2] = { 0, 0 };

	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct vr_target *t = target_from_specs(1, c->before, c->nr);
		struct vr_rng rng;
		guint j = 0;
		char when[96];

		snprintf(when, sizeof(when), "%s, seed %" PRIu64, c->name, seed);
		vr_rng_seed(&rng, seed);
		vr_target_split_regions(t, c->nr_pieces, &rng);
		assert_target_invariants(t, when);

		for (unsigned i = 0; i < c->nr; i++) {
			const struct rs *b = &c->before[i];
			uint64_t s = P(b->s), e = P(b->e), size = e - s;
			unsigned pieces = 0, lo, hi;

			while (j < vr_target_nr_regions(t) && vr_target_region(t, j)->start < e) {
				const struct vr_region *r = vr_target_region(t, j);

				cr_assert(r->start >= s && r->end <= e,
					  "%s: piece [%" PRIu64 ", %" PRIu64 ") should lie in its "
					  "region [%u, %u) (pages)",
					  when, r->start / PG, r->end / PG, b->s, b->e);
				cr_assert(r->nr_accesses == b->nr &&
						  r->last_nr_accesses == b->last &&
						  r->age == b->age,
					  "%s: piece [%" PRIu64 ", %" PRIu64 ") should copy nr %u, "
					  "last %u, age %u; got %u, %u, %u",
					  when, r->start / PG, r->end / PG, b->nr, b->last, b->age,
					  r->nr_accesses, r->last_nr_accesses, r->age);
				if (r->end < e) {
					uint64_t off = r->end - s;

					cr_assert(off % PG == 0,
						  "%s: cut at +%#" PRIx64 " should be page-aligned",
						  when, off);
					cr_assert(
						off * 10 >= size && off * 10 <= size * 9,
						"%s: cut at +%" PRIu64 " pages of a %" PRIu64
						"-page region should lie within [10%%, 90%%] of it",
						when, off / PG, size / PG);
					if (pieces == 0 && first_cut_seen[0] != off) {
						if (!first_cut_seen[0])
							first_cut_seen[0] = off;
						else
							first_cut_seen[1] = off;
					}
				}
				pieces++;
				j++;
			}
			expected_pieces(size / PG, c->nr_pieces, &lo, &hi);
			if (lo == hi)
				cr_assert_eq(pieces, lo,
					     "%s: a %" PRIu64
					     "-page region split into %u should give "
					     "exactly %u pieces, got %u",
					     when, size / PG, c->nr_pieces, lo, pieces);
			else
				cr_assert(pieces >= lo && pieces <= hi,
					  "%s: a %" PRIu64 "-page region split into %u should give "
					  "%u..%u pieces, got %u",
					  when, size / PG, c->nr_pieces, lo, hi, pieces);
		}
		cr_assert_eq(j, vr_target_nr_regions(t), "%s: stray regions after the split", when);
		target_free(t);
	}
	/* regions of 10+ pages have several legal cut points: the choice is random */
	for (unsigned i = 0; i < c->nr; i++)
		if (c->before[i].e - c->before[i].s >= 10)
			cr_assert(first_cut_seen[1] != 0,
				  "%s: expected random cut points to differ over 200 seeds",
				  c->name);
}

Test(monitor_split, region_count_after_split)
{
	/* 1 + 2 + 2 + 1 + 2 = 8 into two; 1 + 3 + 3 + 1 + 3 = 11 into three */
	static const struct rs mixed[5] = MIXED_REGIONS;
	struct vr_rng rng;

	vr_rng_seed(&rng, 99);
	struct vr_target *t = target_from_specs(1, mixed, 5);

	vr_target_split_regions(t, 2, &rng);
	cr_assert_eq(vr_target_nr_regions(t), 8,
		     "5 regions (two of one page) split in 2: expected 8 regions, got %u",
		     vr_target_nr_regions(t));
	target_free(t);

	t = target_from_specs(1, mixed, 5);
	vr_target_split_regions(t, 3, &rng);
	cr_assert_eq(vr_target_nr_regions(t), 11,
		     "5 regions (two of one page) split in 3: expected 11 regions, got %u",
		     vr_target_nr_regions(t));
	target_free(t);
}

/*
 * vr_ctx_split_regions(): 4 regions of 100 pages.
 *
 *   |  100p  |  100p  |  100p  |  100p  |
 *
 * 1st call: split into 2 when 4 < max / 2 (the first split never has a
 * previous count to compare with).
 * Then the pieces are merged back to the same 4 regions (as a merge that
 * undoes the split would) and the 2nd call sees the count unchanged since the
 * previous split: 3 pieces when 4 < max / 3, else 2.
 * 3rd call right after: the count changed (no longer 4): 2 pieces if below
 * max / 2.
 */
struct ctx_split_case {
	char name[48];
	uint32_t max_nr_regions;
	unsigned after1, after2;
};

static struct ctx_split_case ctx_split_cases[] = {
	{ "max 8: 4 == 8/2, no split", 8, 4, 4 },    { "max 9: 4 == 9/2, no split", 9, 4, 4 },
	{ "max 10: 2 pieces; 4 >= 10/3", 10, 8, 8 }, { "max 12: 4 == 12/3, still 2", 12, 8, 8 },
	{ "max 15: 4 < 15/3, 3 pieces", 15, 8, 12 }, { "max 1000", 1000, 8, 12 },
};

ParameterizedTestParameters(monitor_split, ctx_split_rule)
{
	return cr_make_param_array(struct ctx_split_case, ctx_split_cases,
				   ARRAY_LEN(ctx_split_cases));
}

ParameterizedTest(struct ctx_split_case *c, monitor_split, ctx_split_rule)
{
	static const struct rs four[] = {
		R(0, 100, 1, 1, 1),
		R(100, 200, 2, 2, 2),
		R(200, 300, 3, 3, 3),
		R(300, 400, 4, 4, 4),
	};
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, c->max_nr_regions);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 5, &a);
	struct vr_range r = { 0, P(400) };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);

	ctx_start(ctx, 0);
	target_load_specs(t, four, 4);

	vr_ctx_split_regions(ctx);
	assert_ctx_invariants(ctx, c->name);
	cr_assert_eq(vr_ctx_nr_regions(ctx), c->after1,
		     "%s: first split of 4 regions: expected %u regions, got %u", c->name,
		     c->after1, vr_ctx_nr_regions(ctx));

	/* undo the split: merge the pieces of each 100-page region back */
	vr_target_merge_regions(t, UINT32_MAX, P(100));
	cr_assert_eq(vr_ctx_nr_regions(ctx), 4, "%s: expected the pieces merged back to 4",
		     c->name);

	vr_ctx_split_regions(ctx);
	assert_ctx_invariants(ctx, c->name);
	cr_assert_eq(vr_ctx_nr_regions(ctx), c->after2,
		     "%s: second split, count 4 unchanged since the previous split: expected %u "
		     "regions, got %u",
		     c->name, c->after2, vr_ctx_nr_regions(ctx));

	/* every region of 2+ pages into 2 if below max / 2 (the count changed) */
	unsigned n2 = vr_ctx_nr_regions(ctx), after3 = 0;

	for (guint k = 0; k < vr_target_nr_regions(t); k++)
		after3 += vr_region_size(vr_target_region(t, k)) >= P(2) ? 2 : 1;
	if (n2 >= c->max_nr_regions / 2)
		after3 = n2;
	vr_ctx_split_regions(ctx);
	assert_ctx_invariants(ctx, c->name);
	cr_assert_eq(vr_ctx_nr_regions(ctx), after3,
		     "%s: third split, right after the second (count %u, changed): expected %u "
		     "regions, got %u",
		     c->name, n2, after3, vr_ctx_nr_regions(ctx));
}

/* ------------------------------------------------------------------------- */
/* Initial layout                                                            */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_layout, .description = "initial regions from vr_ctx_start()");

struct layout_case {
	char name[48];
	uint32_t min_nr_regions;
	unsigned nr_targets;
	struct {
		unsigned nr;
		struct pr r[4];
	} t[3];
};

static struct layout_case layout_cases[] = {
	/* |                 1000p                  |  -> 10 x 100p */
	{ "1000 pages, min 10", 10, 1, { { 1, { { 0, 1000 } } } } },
	/* 1003p / 10 = 100.3p: pieces of at most 100p */
	{ "1003 pages, min 10", 10, 1, { { 1, { { 0, 1003 } } } } },
	/* |100p|  hole  |50p|  -> each at most 15p */
	{ "two ranges with a hole", 10, 1, { { 2, { { 0, 100 }, { 200, 250 } } } } },
	/* |1p| |1p| |10p|  min 3: each at most 4p */
	{ "tiny ranges", 3, 1, { { 3, { { 0, 1 }, { 10, 11 }, { 20, 30 } } } } },
	/* 7p / 3 = 2.33p */
	{ "7 pages, min 3", 3, 1, { { 1, { { 0, 7 } } } } },
	/* two targets share min_nr_regions: 256p / 8 = 32p */
	{ "two targets", 8, 2, { { 1, { { 0, 64 } } }, { 1, { { 0, 192 } } } } },
	/* 1 GiB at 4 GiB */
	{ "1 GiB at 4 GiB", 10, 1, { { 1, { { 1048576, 1310720 } } } } },
	/* fewer pages than min_nr_regions: one region per page */
	{ "5 pages, min 10", 10, 1, { { 1, { { 0, 5 } } } } },
	{ "three targets, holes",
	  16,
	  3,
	  { { 2, { { 0, 33 }, { 40, 41 } } },
	    { 3, { { 1000, 1100 }, { 1200, 1213 }, { 2000, 2001 } } },
	    { 1, { { 7, 907 } } } } },
};

static struct vr_ctx *layout_ctx(const struct layout_case *c, struct fake_src *f)
{
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, c->min_nr_regions, 1000);
	struct vr_ctx *ctx = ctx_new_with(f, 3, &a);

	for (unsigned i = 0; i < c->nr_targets; i++) {
		struct vr_range r[4];

		for (unsigned k = 0; k < c->t[i].nr; k++)
			r[k] = (struct vr_range){ P(c->t[i].r[k].s), P(c->t[i].r[k].e) };
		ctx_add(ctx, i + 1, r, c->t[i].nr);
	}
	ctx_start(ctx, 0);
	return ctx;
}

ParameterizedTestParameters(monitor_layout, start_layout)
{
	return cr_make_param_array(struct layout_case, layout_cases, ARRAY_LEN(layout_cases));
}

ParameterizedTest(struct layout_case *c, monitor_layout, start_layout)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	g_autoptr(vr_ctx) ctx = layout_ctx(c, &f);

	assert_ctx_invariants(ctx, c->name);
	cr_assert_eq(vr_ctx_nr_targets(ctx), c->nr_targets, "%s: expected %u targets", c->name,
		     c->nr_targets);
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);
		uint64_t size = vr_target_size(t);
		uint64_t cap = MAX(size / c->min_nr_regions, PG);
		uint64_t want = MIN((uint64_t)c->min_nr_regions, size / PG);

		cr_assert_geq(vr_target_nr_regions(t), want,
			      "%s: target %u: expected at least %" PRIu64 " regions "
			      "(min_nr_regions %u, %" PRIu64 " pages), got %u",
			      c->name, i, want, c->min_nr_regions, size / PG,
			      vr_target_nr_regions(t));
		for (guint k = 0; k < vr_target_nr_regions(t); k++)
			cr_assert_leq(vr_region_size(vr_target_region(t, k)), cap,
				      "%s: target %u region %u: expected at most target_size / "
				      "min_nr_regions = %" PRIu64 " bytes, got %" PRIu64,
				      c->name, i, k, cap, vr_region_size(vr_target_region(t, k)));
	}
	cr_assert_eq(f.nr_update, c->nr_targets,
		     "%s: vr_ctx_start() should call update() once per target (%u), got %u",
		     c->name, c->nr_targets, f.nr_update);
}

Test(monitor_layout, one_region_per_range_before_start)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 10, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	const struct vr_range r[] = { { P(50), P(80) }, { 0, P(10) }, { P(10), P(12) } };
	struct vr_target *t = ctx_add(ctx, 1, r, 3);

	assert_target_invariants(t, "before start");
	cr_assert_eq(vr_target_nr_regions(t), 3,
		     "before vr_ctx_start() a target should have one region per range (3), got %u",
		     vr_target_nr_regions(t));
	cr_assert_eq(f.nr_update, 0, "update() is called by vr_ctx_start(), not before");
}

ParameterizedTestParameters(monitor_layout, start_layout_even_per_range)
{
	return cr_make_param_array(struct layout_case, layout_cases, ARRAY_LEN(layout_cases));
}

/* "evenly sized per range": within a range the pieces differ by at most a page */
ParameterizedTest(struct layout_case *c, monitor_layout, start_layout_even_per_range)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	g_autoptr(vr_ctx) ctx = layout_ctx(c, &f);

	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint k = 0; k < t->ranges->len; k++) {
			const struct vr_range *rg = &g_array_index(t->ranges, struct vr_range, k);
			uint64_t lo = UINT64_MAX, hi = 0;

			for (guint j = 0; j < vr_target_nr_regions(t); j++) {
				const struct vr_region *r = vr_target_region(t, j);

				if (r->start < rg->start || r->end > rg->end)
					continue;
				lo = MIN(lo, vr_region_size(r));
				hi = MAX(hi, vr_region_size(r));
			}
			cr_assert_leq(hi - lo, PG,
				      "%s: target %u range %u: expected evenly sized pieces "
				      "(within a page), got %" PRIu64 "..%" PRIu64 " pages",
				      c->name, i, k, lo / PG, hi / PG);
		}
	}
}

Test(monitor_layout, start_applies_update_first)
{
	/*
	 * added with [0, 8p); update() at start changes it to [0, 4p) + [100p, 160p):
	 * the initial regions cover the updated ranges.
	 */
	struct fake_src f = { .mode = FAKE_NEVER, .nr_script = 1 };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 8, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(8) };

	f.script[0] = (struct fake_ranges){ 2, { { 0, P(4) }, { P(100), P(160) } } };
	struct vr_target *t = ctx_add(ctx, 1, &r, 1);

	ctx_start(ctx, 0);
	cr_assert_eq(f.nr_update, 1, "vr_ctx_start() should call update() once, got %u",
		     f.nr_update);
	assert_ctx_invariants(ctx, "after start with updated ranges");
	cr_assert_eq(t->ranges->len, 2, "expected the 2 ranges given by update(), got %u",
		     t->ranges->len);
	cr_assert_eq(vr_target_size(t), P(64), "expected the updated 64 pages, got %" PRIu64,
		     vr_target_size(t) / PG);
	cr_assert_geq(vr_ctx_nr_regions(ctx), 8, "expected at least min_nr_regions 8, got %u",
		      vr_ctx_nr_regions(ctx));
	for (guint k = 0; k < vr_target_nr_regions(t); k++)
		cr_assert_leq(vr_region_size(vr_target_region(t, k)), P(8),
			      "region %u: expected at most 64p / 8 = 8 pages of the updated ranges",
			      k);
}

Test(monitor_layout, target_added_while_running_gets_regions)
{
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 4, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r1 = { 0, P(64) };
	const struct vr_range r2[] = { { P(1000), P(1032) }, { P(2000), P(2004) } };

	ctx_add(ctx, 1, &r1, 1);
	ctx_start(ctx, 0);
	for (int i = 0; i < 25; i++)
		ctx_step(ctx);

	struct vr_target *t2 = ctx_add(ctx, 2, r2, 2);

	cr_assert_geq(vr_target_nr_regions(t2), 2,
		      "a target added while running should get its regions at once");
	assert_ctx_invariants(ctx, "right after adding a target while running");
	for (int i = 0; i < 25; i++) {
		ctx_step(ctx);
		assert_ctx_invariants(ctx, "ticking with a target added while running");
	}
}

Test(monitor_layout, sz_limit)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 7, 8);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(12) };
	struct vr_range r2 = { P(100), P(102) };

	ctx_add(ctx, 1, &r, 1);
	cr_assert_eq(vr_ctx_sz_limit(ctx), P(12) / 7,
		     "sz_limit: expected total / min_nr_regions = %" PRIu64 ", got %" PRIu64,
		     P(12) / 7, vr_ctx_sz_limit(ctx));
	ctx_add(ctx, 2, &r2, 1);
	cr_assert_eq(vr_ctx_sz_limit(ctx), P(14) / 7,
		     "sz_limit over two targets: expected 14p / 7 = 2p, got %" PRIu64,
		     vr_ctx_sz_limit(ctx));

	struct vr_monitor_attrs b = attrs_make(1000, 10, 0, 100, 200);
	g_autoptr(vr_ctx) small = ctx_new_with(&f, 1, &b);
	struct vr_range r3 = { 0, P(5) };

	ctx_add(small, 1, &r3, 1);
	cr_assert_eq(vr_ctx_sz_limit(small), PG,
		     "sz_limit of 5 pages / 100 should be raised to one page, got %" PRIu64,
		     vr_ctx_sz_limit(small));
}

/* ------------------------------------------------------------------------- */
/* Ticks, listeners, counters                                                */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_tick, .description = "vr_ctx_tick(): state, timing, listeners, counters");

Test(monitor_tick, tick_before_start_fails)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(64) };

	ctx_add(ctx, 1, &r, 1);
	cr_assert_not(vr_ctx_tick(ctx, 1000000, &err), "a tick before vr_ctx_start() should fail");
	assert_monitor_error(err, VR_MONITOR_ERROR_STATE, NULL, "tick before start");
	cr_assert(f.nr_check == 0 && f.nr_prepare == 0,
		  "a refused tick should not touch the source (check %u, prepare %u)", f.nr_check,
		  f.nr_prepare);
}

Test(monitor_tick, early_tick_does_nothing)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(64) };

	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 5000000);
	for (int i = 0; i < 3; i++)
		ctx_step(ctx);

	uint64_t next = vr_ctx_next_tick_us(ctx);
	unsigned checks = f.nr_check, prepares = f.nr_prepare;
	uint64_t aggrs = vr_ctx_nr_aggregations(ctx);
	g_autoptr(GArray) regions = regions_copy(vr_ctx_target(ctx, 0));

	cr_assert(vr_ctx_tick(ctx, next - 1, &err), "an early tick should succeed (doing nothing)");
	cr_assert_eq(f.nr_check, checks, "an early tick should not check: %u check calls, got %u",
		     checks, f.nr_check);
	cr_assert_eq(f.nr_prepare, prepares, "an early tick should not prepare: %u, got %u",
		     prepares, f.nr_prepare);
	cr_assert_eq(vr_ctx_next_tick_us(ctx), next,
		     "an early tick should not move the next tick (%" PRIu64 ")", next);
	cr_assert_eq(vr_ctx_nr_aggregations(ctx), aggrs, "an early tick should not aggregate");
	cr_assert(regions_equal(regions, vr_ctx_target(ctx, 0)->regions),
		  "an early tick should leave the regions alone");
}

Test(monitor_tick, late_tick_runs_one_step)
{
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(64) };
	g_autoptr(GError) err = NULL;

	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	ctx_step(ctx);
	ctx_step(ctx);

	unsigned before = f.nr_check;

	ctx_step(ctx);
	unsigned per_step = f.nr_check - before;

	cr_assert_gt(per_step, 0, "a due tick should call check()");
	before = f.nr_check;

	uint64_t late = vr_ctx_next_tick_us(ctx) + 7 * 1000;

	cr_assert(vr_ctx_tick(ctx, late, &err), "a late tick should succeed: %s",
		  err ? err->message : "?");
	cr_assert_eq(f.nr_check - before, per_step,
		     "a tick 7 samples late should run one step (%u check calls), got %u", per_step,
		     f.nr_check - before);
	cr_assert_gt(vr_ctx_next_tick_us(ctx), late,
		     "after a late tick the next one should be in the future of %" PRIu64, late);
}

struct listen_log {
	unsigned calls;
	uint64_t nows[16];
	unsigned at_tick[16];
	const unsigned *tick_no;  /* the test's tick counter */
	const uint64_t *tick_now; /* the time of the tick in progress */
	int tag;
	int seen_tag;
};

static void log_listener(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	struct listen_log *l = user_data;

	(void)ctx;
	if (l->calls < ARRAY_LEN(l->nows)) {
		l->nows[l->calls] = now_us;
		l->at_tick[l->calls] = *l->tick_no;
	}
	l->seen_tag = l->tag;
	l->calls++;
	cr_assert_eq(now_us, *l->tick_now,
		     "the listener should get the tick's now_us %" PRIu64 ", got %" PRIu64,
		     *l->tick_now, now_us);
}

/*
 * Listeners: once per aggregation, i.e. every aggr_interval / sample_interval
 * ticks, at start + k * aggr_interval, with now_us passed through and each
 * listener's own user_data.
 */
Test(monitor_tick, listeners_once_per_aggregation)
{
	struct fake_src f = { .mode = FAKE_HOT, .nr_hot = 1, .hot = { { 0, P(16), 50 } } };
	struct vr_monitor_attrs a = VR_MONITOR_ATTRS_DEFAULT; /* 5 ms / 100 ms: 20 */
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(256) };
	const uint64_t t0 = 1000000;
	unsigned tick_no = 0;
	uint64_t tick_now = 0;
	struct listen_log l1 = { .tick_no = &tick_no, .tick_now = &tick_now, .tag = 1 };
	struct listen_log l2 = { .tick_no = &tick_no, .tick_now = &tick_now, .tag = 2 };

	ctx_add(ctx, 1, &r, 1);
	vr_ctx_add_listener(ctx, log_listener, &l1);
	vr_ctx_add_listener(ctx, log_listener, &l2);
	ctx_start(ctx, t0);
	cr_assert_eq(vr_ctx_nr_aggregations(ctx), 0, "no aggregation before the first tick");

	while (vr_ctx_next_tick_us(ctx) <= t0 + 5 * a.aggr_interval_us) {
		g_autoptr(GError) err = NULL;

		tick_now = vr_ctx_next_tick_us(ctx);
		tick_no++;
		cr_assert(vr_ctx_tick(ctx, tick_now, &err), "tick %u should succeed: %s", tick_no,
			  err ? err->message : "?");
		cr_assert_eq(vr_ctx_nr_aggregations(ctx), l1.calls,
			     "vr_ctx_nr_aggregations() should count the listener calls (%u), got "
			     "%" PRIu64,
			     l1.calls, vr_ctx_nr_aggregations(ctx));
		cr_assert_lt(tick_no, 1000, "the ticks should reach 5 aggregation intervals");
	}
	cr_assert_eq(l1.calls, 5, "5 aggregation intervals: expected 5 listener calls, got %u",
		     l1.calls);
	cr_assert_eq(l2.calls, 5, "the second listener: expected 5 calls too, got %u", l2.calls);
	cr_assert(l1.seen_tag == 1 && l2.seen_tag == 2, "each listener gets its own user_data");
	for (unsigned k = 0; k < 5; k++) {
		cr_assert_eq(l1.nows[k], t0 + (k + 1) * a.aggr_interval_us,
			     "aggregation %u: expected at start + %u * aggr_interval = %" PRIu64
			     ", got %" PRIu64,
			     k + 1, k + 1, t0 + (k + 1) * a.aggr_interval_us, l1.nows[k]);
		cr_assert_eq(l2.nows[k], l1.nows[k], "both listeners see the same now_us");
		if (k)
			cr_assert_eq(l1.at_tick[k] - l1.at_tick[k - 1], 20,
				     "expected aggr_interval / sample_interval = 20 ticks between "
				     "aggregations %u and %u, got %u",
				     k, k + 1, l1.at_tick[k] - l1.at_tick[k - 1]);
	}
}

struct counts_listener {
	unsigned calls;
	uint32_t max_nr_accesses;
	bool always;	   /* the source answers "accessed" every time */
	bool expect_age_k; /* the source never answers "accessed": age == k */
	bool check_bounds; /* the count stays in [min, max] from call 1 on */
};

static void counts_listen(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	struct counts_listener *l = user_data;
	char when[96];

	l->calls++;
	snprintf(when, sizeof(when), "aggregation %u (t=%" PRIu64 " us)", l->calls, now_us);
	assert_ctx_invariants(ctx, when);
	if (l->check_bounds)
		assert_nr_regions_within(ctx, when);
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint k = 0; k < vr_target_nr_regions(t); k++) {
			const struct vr_region *r = vr_target_region(t, k);

			cr_assert_leq(r->nr_accesses, l->max_nr_accesses,
				      "%s: region %u nr_accesses should not exceed "
				      "max_nr_accesses %u, got %u",
				      when, k, l->max_nr_accesses, r->nr_accesses);
			cr_assert_leq(r->last_nr_accesses, l->max_nr_accesses,
				      "%s: region %u last_nr_accesses should not exceed %u, got %u",
				      when, k, l->max_nr_accesses, r->last_nr_accesses);
			if (l->always && l->calls >= 2)
				cr_assert_eq(r->nr_accesses, l->max_nr_accesses,
					     "%s: every check hit: region %u expected nr_accesses "
					     "%u (one per sample of the window), got %u",
					     when, k, l->max_nr_accesses, r->nr_accesses);
			if (l->always && l->calls >= 3)
				cr_assert_eq(r->last_nr_accesses, l->max_nr_accesses,
					     "%s: region %u expected last_nr_accesses %u, got %u",
					     when, k, l->max_nr_accesses, r->last_nr_accesses);
			if (l->expect_age_k)
				cr_assert_eq(r->age, l->calls,
					     "%s: idle region %u should have aged exactly once per "
					     "aggregation: expected age %u, got %u",
					     when, k, l->calls, r->age);
			if (!l->always && l->expect_age_k)
				cr_assert_eq(r->nr_accesses, 0,
					     "%s: no access: expected nr_accesses 0, got %u", when,
					     r->nr_accesses);
		}
	}
}

static void run_aggregations(struct vr_ctx *ctx, unsigned n)
{
	uint64_t want = vr_ctx_nr_aggregations(ctx) + n;

	for (unsigned guard = 0; vr_ctx_nr_aggregations(ctx) < want; guard++) {
		cr_assert_lt(guard, 1000000, "the context should keep aggregating");
		ctx_step(ctx);
	}
}

Test(monitor_tick, nr_accesses_bounded_always_accessed)
{
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 5, 60);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	const struct vr_range r[] = { { 0, P(300) }, { P(400), P(500) } };
	struct counts_listener l = { .max_nr_accesses = 20, .always = true };

	ctx_add(ctx, 1, r, 2);
	vr_ctx_add_listener(ctx, counts_listen, &l);
	ctx_start(ctx, 0);
	run_aggregations(ctx, 12);
	cr_assert_eq(l.calls, 12, "expected 12 listener calls, got %u", l.calls);
}

/* nr_accesses stays within the current max_nr_accesses of the context. */
static void bound_listen(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	unsigned *calls = user_data;
	uint32_t mna = vr_monitor_attrs_max_nr_accesses(vr_ctx_attrs(ctx));

	(*calls)++;
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint k = 0; k < vr_target_nr_regions(t); k++)
			cr_assert_leq(vr_target_region(t, k)->nr_accesses, mna,
				      "aggregation %u (t=%" PRIu64 " us): region %u nr_accesses "
				      "should not exceed max_nr_accesses %u, got %u",
				      *calls, now_us, k, mna, vr_target_region(t, k)->nr_accesses);
	}
}

/*
 * The window shrinks mid-way (aggr 20 -> 10 samples after 15 samples of a
 * window, every check a hit): the window closes at once, and nr_accesses must
 * still not exceed the new max_nr_accesses.
 */
Test(monitor_tick, nr_accesses_bounded_when_window_shrinks)
{
	g_autoptr(GError) err = NULL;
	struct fake_src f = { .mode = FAKE_ALWAYS };
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 3, 100);
	struct vr_monitor_attrs b = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(64) };
	unsigned calls = 0;

	ctx_add(ctx, 1, &r, 1);
	vr_ctx_add_listener(ctx, bound_listen, &calls);
	ctx_start(ctx, 0);
	run_aggregations(ctx, 2);
	for (int i = 0; i < 15; i++)
		ctx_step(ctx);
	cr_assert_eq(calls, 2, "15 samples into the third window: expected 2 aggregations");
	cr_assert(vr_ctx_set_attrs(ctx, &b, &err), "a shorter window should be accepted: %s",
		  err ? err->message : "?");
	run_aggregations(ctx, 3);
	cr_assert_eq(calls, 5, "expected 5 aggregations, got %u", calls);
}

struct age_engine_case {
	char name[48];
	uint32_t pages, min_nr, max_nr, max_nr_accesses;
};

static struct age_engine_case age_engine_cases[] = {
	/* merges and splits at work: ages are averaged and copied, never re-aged */
	{ "1000 pages, 3..100", 1000, 3, 100, 20 },
	/*
	 * 12 pages, min 7, max 8: start lays 12 one-page regions (12p / 7 < 2p),
	 * more than max and unmergeable: every aggregation takes the repeat walks
	 * up to the stop rule, and must still age once.
	 */
	{ "12 pages, 7..8: repeat walks", 12, 7, 8, 20 },
	{ "64 pages, 3..3", 64, 3, 3, 10 },
};

ParameterizedTestParameters(monitor_tick, ages_once_per_aggregation)
{
	return cr_make_param_array(struct age_engine_case, age_engine_cases,
				   ARRAY_LEN(age_engine_cases));
}

ParameterizedTest(struct age_engine_case *c, monitor_tick, ages_once_per_aggregation)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, c->max_nr_accesses, 0, c->min_nr, c->max_nr);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 11, &a);
	struct vr_range r = { P(1000), P(1000 + c->pages) };
	struct counts_listener l = { .max_nr_accesses = c->max_nr_accesses, .expect_age_k = true };

	ctx_add(ctx, 1, &r, 1);
	vr_ctx_add_listener(ctx, counts_listen, &l);
	ctx_start(ctx, 0);
	run_aggregations(ctx, 15);
	cr_assert_eq(l.calls, 15, "%s: expected 15 listener calls, got %u", c->name, l.calls);
	if (c->pages == 12)
		cr_assert_eq(vr_ctx_nr_regions(ctx), 12,
			     "%s: unmergeable one-page regions: expected 12 to stay, got %u",
			     c->name, vr_ctx_nr_regions(ctx));
}

Test(monitor_tick, update_called_every_ops_update_interval)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 50000, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(64) };

	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	cr_assert_eq(f.nr_update, 1, "update() once at start, got %u", f.nr_update);
	while (vr_ctx_next_tick_us(ctx) <= 200000)
		ctx_step(ctx);
	cr_assert_eq(f.nr_update, 5,
		     "ops_update_interval 50 ms over 200 ms: expected 1 + 4 update() calls, got %u",
		     f.nr_update);

	struct fake_src g = { .mode = FAKE_NEVER };
	struct vr_monitor_attrs b = attrs_make(1000, 10, 0, 3, 100);
	g_autoptr(vr_ctx) never = ctx_new_with(&g, 1, &b);

	ctx_add(never, 1, &r, 1);
	ctx_start(never, 0);
	while (vr_ctx_next_tick_us(never) <= 200000)
		ctx_step(never);
	cr_assert_eq(g.nr_update, 1,
		     "ops_update_interval 0: expected update() at start only, got %u", g.nr_update);
}

Test(monitor_tick, update_failure_is_reported_and_harmless)
{
	struct fake_src f = { .mode = FAKE_HOT, .nr_hot = 1, .hot = { { 0, P(32), 80 } } };
	struct vr_monitor_attrs a = attrs_make(1000, 10, 5000, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(128) };
	bool failed = false;

	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	run_aggregations(ctx, 2);
	f.fail_update = true;
	for (int i = 0; i < 10 && !failed; i++) {
		g_autoptr(GError) err = NULL;

		if (!vr_ctx_tick(ctx, vr_ctx_next_tick_us(ctx), &err)) {
			failed = true;
			cr_assert_not_null(err, "a failed tick should set the error");
			cr_assert(err->domain == VR_MONITOR_ERROR &&
					  err->code == VR_MONITOR_ERROR_SOURCE,
				  "a failing update() should surface as VR_MONITOR_ERROR_SOURCE, "
				  "got %s %d: %s",
				  g_quark_to_string(err->domain), err->code, err->message);
		}
		assert_ctx_invariants(ctx, "around a failing update()");
	}
	cr_assert(failed, "an update() failure within 10 ticks (every 5) should fail the tick");
	f.fail_update = false;
	run_aggregations(ctx, 2);
	assert_ctx_invariants(ctx, "after update() works again");

	struct fake_src g = { .mode = FAKE_NEVER, .fail_update = true };
	g_autoptr(vr_ctx) ctx2 = ctx_new_with(&g, 1, &a);
	g_autoptr(GError) err = NULL;

	ctx_add(ctx2, 1, &r, 1);
	cr_assert_not(vr_ctx_start(ctx2, 0, &err), "vr_ctx_start() should fail when update() does");
	cr_assert_not_null(err, "a failed start should set the error");
}

/*
 * update() answering invalid ranges (overlapping): the tick reports the
 * validation error and the target keeps its old ranges and regions.
 */
Test(monitor_tick, invalid_ranges_from_update_keep_old_ones)
{
	struct fake_src f = {
		.mode = FAKE_HOT, .nr_hot = 1, .hot = { { 0, P(32), 80 } }, .nr_script = 2
	};
	struct vr_monitor_attrs a = attrs_make(1000, 10, 5000, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 1, &a);
	struct vr_range r = { 0, P(128) };
	struct vr_target *t;
	bool failed = false;

	f.script[0] = (struct fake_ranges){ 1, { { 0, P(128) } } };
	f.script[1] = (struct fake_ranges){ 2, { { 0, P(64) }, { P(32), P(96) } } };
	t = ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	for (int i = 0; i < 10 && !failed; i++) {
		g_autoptr(GError) err = NULL;
		g_autoptr(GArray) ranges = ranges_copy(t);

		if (!vr_ctx_tick(ctx, vr_ctx_next_tick_us(ctx), &err)) {
			failed = true;
			assert_monitor_error(err, VR_MONITOR_ERROR_INVALID_RANGE, "overlap",
					     "update() with overlapping ranges");
			cr_assert(arrays_equal(ranges, t->ranges, sizeof(struct vr_range)),
				  "after invalid ranges from update() the target should keep its "
				  "old ranges");
		}
		assert_ctx_invariants(ctx, "around invalid ranges from update()");
	}
	cr_assert(failed, "the second update() (tick 5) answers overlapping ranges: expected the "
			  "tick to fail");
}

Test(monitor_tick, cleanup_called_once_on_free)
{
	struct fake_src f = { .mode = FAKE_NEVER };
	struct vr_ctx *ctx = vr_ctx_new(&fake_ops, &f, 1);
	struct vr_range r = { 0, P(16) };

	ctx_add(ctx, 1, &r, 1);
	ctx_start(ctx, 0);
	ctx_step(ctx);
	cr_assert_eq(f.nr_cleanup, 0, "cleanup() only when the context is freed");
	vr_ctx_free(ctx);
	cr_assert_eq(f.nr_cleanup, 1, "vr_ctx_free() should call cleanup() once, got %u",
		     f.nr_cleanup);
}

/* ------------------------------------------------------------------------- */
/* The engine on random inputs                                               */
/* ------------------------------------------------------------------------- */

TestSuite(monitor_engine, .description = "invariants of the whole engine");

struct inv_listener {
	unsigned calls;
	unsigned stable_after;
	uint32_t max_nr_accesses;
	uint64_t seed;
	const struct fake_src *f; /* when set: the ranges are its last script entry */
	uint32_t bound_max_from;  /* from this call on, count <= bound_max */
	uint32_t bound_max;
};

static void inv_listen(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	struct inv_listener *l = user_data;
	char when[128];

	l->calls++;
	snprintf(when, sizeof(when), "seed %" PRIu64 ", aggregation %u (t=%" PRIu64 " us)", l->seed,
		 l->calls, now_us);
	assert_ctx_invariants(ctx, when);
	if (l->calls > l->stable_after)
		assert_nr_regions_within(ctx, when);
	if (l->bound_max_from && l->calls >= l->bound_max_from)
		cr_assert_leq(vr_ctx_nr_regions(ctx), l->bound_max,
			      "%s: expected at most the new max_nr_regions %u after the change, "
			      "got %u",
			      when, l->bound_max, vr_ctx_nr_regions(ctx));
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint k = 0; k < vr_target_nr_regions(t); k++)
			cr_assert_leq(vr_target_region(t, k)->nr_accesses, l->max_nr_accesses,
				      "%s: nr_accesses should not exceed %u", when,
				      l->max_nr_accesses);
	}
	if (l->f && l->f->nr_script) {
		const struct fake_ranges *want = &l->f->script[l->f->applied];
		const struct vr_target *t = vr_ctx_target(ctx, 0);

		cr_assert_eq(t->ranges->len, want->nr,
			     "%s: expected the %zu ranges of script entry %zu, got %u", when,
			     want->nr, l->f->applied, t->ranges->len);
	}
}

struct random_case {
	uint64_t seed;
};

static struct random_case random_cases[] = {
	{ 1 }, { 2 }, { 3 }, { 42 }, { 1234 }, { 99991 }, { 0xdeadbeef }, { 7777777 },
};

/* Random page-aligned ranges with holes (sometimes touching), shuffled. */
static size_t random_ranges(struct vr_rng *rng, uint64_t base, struct vr_range *out, size_t max)
{
	size_t nr = 1 + vr_rng_below(rng, max);
	uint64_t at = base + P(vr_rng_below(rng, 1000));

	for (size_t i = 0; i < nr; i++) {
		uint64_t len = P(16 + vr_rng_below(rng, 3000));

		out[i] = (struct vr_range){ at, at + len };
		at += len + (vr_rng_below(rng, 4) ? P(vr_rng_below(rng, 500) + 1) : 0);
	}
	for (size_t i = nr; i > 1; i--) {
		size_t j = vr_rng_below(rng, i);
		struct vr_range tmp = out[i - 1];

		out[i - 1] = out[j];
		out[j] = tmp;
	}
	return nr;
}

/* 1..4 hot intervals, each starting inside a random range of a random target. */
static void random_hot(struct vr_rng *rng, struct vr_range ranges[][6], const size_t *nr_ranges,
		       unsigned nr_targets, struct fake_hot *hot, size_t *nr)
{
	static const uint32_t pcts[] = { 100, 90, 50, 10 };

	*nr = 1 + vr_rng_below(rng, 4);
	for (size_t i = 0; i < *nr; i++) {
		unsigned ti = vr_rng_below(rng, nr_targets);
		const struct vr_range *rg = &ranges[ti][vr_rng_below(rng, nr_ranges[ti])];
		uint64_t s = rg->start + P(vr_rng_below(rng, (rg->end - rg->start) / PG));
		uint64_t len = P(1 + vr_rng_below(rng, 2000));

		hot[i] = (struct fake_hot){ s, s + len, pcts[vr_rng_below(rng, ARRAY_LEN(pcts))] };
	}
}

ParameterizedTestParameters(monitor_engine, invariants_on_random_inputs)
{
	return cr_make_param_array(struct random_case, random_cases, ARRAY_LEN(random_cases));
}

/*
 * Several targets with random ranges and holes, a random hot set that changes
 * halfway: after every tick and in every aggregation the regions are sorted,
 * disjoint, aligned, non-empty and tile the ranges; from aggregation 50 on
 * their count lies in [min_nr_regions, max_nr_regions].
 */
ParameterizedTest(struct random_case *c, monitor_engine, invariants_on_random_inputs)
{
	static const uint32_t mnas[] = { 5, 10, 20, 25 };
	struct vr_rng rng;
	struct fake_src f = { .mode = FAKE_HOT, .noise = c->seed };
	struct vr_range ranges[3][6];
	size_t nr_ranges[3], total_ranges = 0;

	vr_rng_seed(&rng, c->seed);
	unsigned nr_targets = 1 + vr_rng_below(&rng, 3);
	uint32_t mna = mnas[vr_rng_below(&rng, ARRAY_LEN(mnas))];
	uint32_t min_nr = 3 + vr_rng_below(&rng, 10);

	for (unsigned i = 0; i < nr_targets; i++) {
		nr_ranges[i] = random_ranges(&rng, P((uint64_t)i << 20), ranges[i], 6);
		total_ranges += nr_ranges[i];
	}
	/* room for the greedy merge's worst case, see SEMANTICS.md §1 */
	uint32_t max_nr = 2 * min_nr + 3 * total_ranges + 4 + vr_rng_below(&rng, 150);
	struct vr_monitor_attrs a = attrs_make(1000, mna, 3 * mna * 1000, min_nr, max_nr);

	random_hot(&rng, ranges, nr_ranges, nr_targets, f.hot, &f.nr_hot);
	random_hot(&rng, ranges, nr_ranges, nr_targets, f.hot2, &f.nr_hot2);
	f.switch_us = 40 * a.aggr_interval_us;

	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, c->seed, &a);
	struct inv_listener l = { .stable_after = 50, .max_nr_accesses = mna, .seed = c->seed };

	for (unsigned i = 0; i < nr_targets; i++)
		ctx_add(ctx, 100 + i, ranges[i], nr_ranges[i]);
	vr_ctx_add_listener(ctx, inv_listen, &l);
	ctx_start(ctx, 0);
	assert_ctx_invariants(ctx, "after start");

	for (unsigned guard = 0; vr_ctx_nr_aggregations(ctx) < 80; guard++) {
		char when[96];

		cr_assert_lt(guard, 100000, "the context should keep aggregating");
		ctx_step(ctx);
		snprintf(when, sizeof(when), "seed %" PRIu64 ", after tick %u", c->seed, guard + 1);
		assert_ctx_invariants(ctx, when);
		if (l.calls > l.stable_after)
			assert_nr_regions_within(ctx, when);
	}
	cr_assert_eq(l.calls, 80, "seed %" PRIu64 ": expected 80 listener calls, got %u", c->seed,
		     l.calls);
	cr_assert_eq(f.bad_sampling_addr, 0,
		     "seed %" PRIu64 ": every sampling_addr should lie in its region, %u did not",
		     c->seed, f.bad_sampling_addr);
}

/*
 * Ranges changing between ticks (every 3 samples, so also mid-window):
 *
 *   script 0  [0                256)
 *   script 1  [0        128)     [192          320)
 *   script 2      [64 96) [100 110)              [300     400)
 *   script 3  [0                                             512)
 *   script 4                                           [400 401)  [1000 1004)
 *
 * After every tick and in every aggregation no region lies outside the
 * current ranges, and the ranges are covered exactly.
 */
Test(monitor_engine, range_updates_between_ticks)
{
	struct fake_src f = {
		.mode = FAKE_HOT,
		.nr_hot = 2,
		.hot = { { 0, P(100), 90 }, { P(300), P(420), 30 } },
		.nr_script = 5,
		.script = {
			{ 1, { { 0, P(256) } } },
			{ 2, { { P(192), P(320) }, { 0, P(128) } } },
			{ 3, { { P(64), P(96) }, { P(300), P(400) }, { P(100), P(110) } } },
			{ 1, { { 0, P(512) } } },
			{ 2, { { P(1000), P(1004) }, { P(400), P(401) } } },
		},
	};
	struct vr_monitor_attrs a = attrs_make(1000, 10, 3000, 3, 100);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 17, &a);
	struct vr_range r = { 0, P(256) };
	struct inv_listener l = {
		.stable_after = UINT32_MAX, .max_nr_accesses = 10, .seed = 17, .f = &f
	};

	ctx_add(ctx, 1, &r, 1);
	vr_ctx_add_listener(ctx, inv_listen, &l);
	ctx_start(ctx, 0);
	for (unsigned i = 0; i < 400; i++) {
		char when[64];

		ctx_step(ctx);
		snprintf(when, sizeof(when), "after tick %u (update %u)", i + 1, f.nr_update);
		assert_ctx_invariants(ctx, when);

		const struct fake_ranges *want = &f.script[f.applied];

		cr_assert_eq(vr_target_size(vr_ctx_target(ctx, 0)), fake_ranges_size(want),
			     "%s: the target should have the ranges of script entry %zu", when,
			     f.applied);
	}
	cr_assert_geq(f.nr_update, 100, "expected update() every 3 ticks, got %u calls",
		      f.nr_update);
	cr_assert_geq(l.calls, 39, "expected 40 aggregations over 400 ticks, got %u", l.calls);
	cr_assert_eq(f.bad_sampling_addr, 0,
		     "every sampling_addr should lie in its region, %u did not",
		     f.bad_sampling_addr);
}

/*
 * vr_ctx_set_attrs() while running lowers max_nr_regions: from the next
 * aggregation the repeat walks bring the count down to it.
 */
Test(monitor_engine, lower_max_while_running)
{
	struct fake_src f = {
		.mode = FAKE_HOT,
		.noise = 5,
		.nr_hot = 6,
		.hot = { { P(100), P(300), 100 },
			 { P(500), P(520), 50 },
			 { P(1000), P(1800), 20 },
			 { P(2000), P(2001), 100 },
			 { P(2500), P(3000), 70 },
			 { P(3500), P(4000), 5 } },
	};
	struct vr_monitor_attrs a = attrs_make(1000, 20, 0, 3, 500);
	g_autoptr(vr_ctx) ctx = ctx_new_with(&f, 23, &a);
	struct vr_range r = { 0, P(4096) };
	struct inv_listener l = { .stable_after = UINT32_MAX, .max_nr_accesses = 20, .seed = 23 };

	ctx_add(ctx, 1, &r, 1);
	vr_ctx_add_listener(ctx, inv_listen, &l);
	ctx_start(ctx, 0);
	run_aggregations(ctx, 30);

	g_autoptr(GError) err = NULL;
	struct vr_monitor_attrs b = attrs_make(1000, 20, 0, 3, 20);

	cr_assert(vr_ctx_set_attrs(ctx, &b, &err), "lowering max_nr_regions should be accepted: %s",
		  err ? err->message : "?");
	l.bound_max_from = l.calls + 1;
	l.bound_max = 20;
	run_aggregations(ctx, 10);
	cr_assert_leq(vr_ctx_nr_regions(ctx), 20,
		      "after the change the count should stay within 20, got %u",
		      vr_ctx_nr_regions(ctx));
}

/* ------------------------------------------------------------------------- */
/* Determinism                                                               */
/* ------------------------------------------------------------------------- */

static struct vr_ctx *determinism_ctx(struct fake_src *f, uint64_t seed)
{
	struct vr_monitor_attrs a = attrs_make(1000, 20, 20000, 10, 200);
	const struct vr_range r[] = {
		{ P(1) << 10, P(1) << 18 },
		{ P(1) << 19, (P(1) << 19) + P(4096) },
	};

	*f = (struct fake_src){
		.mode = FAKE_HOT,
		.noise = 77,
		.nr_hot = 3,
		.hot = { { P(1) << 12, P(1) << 14, 80 },
			 { P(100000), P(100100), 100 },
			 { P(1) << 19, (P(1) << 19) + P(100), 30 } },
	};

	struct vr_ctx *ctx = ctx_new_with(f, seed, &a);

	ctx_add(ctx, 1, r, 2);
	ctx_start(ctx, 0);
	for (int i = 0; i < 20 * 12 + 7; i++)
		ctx_step(ctx);
	return ctx;
}

Test(monitor_engine, deterministic_for_a_seed)
{
	struct fake_src f1, f2, f3;
	g_autoptr(vr_ctx) a = determinism_ctx(&f1, 4242);
	g_autoptr(vr_ctx) b = determinism_ctx(&f2, 4242);
	g_autoptr(vr_ctx) c = determinism_ctx(&f3, 4243);
	const GArray *ra = vr_ctx_target(a, 0)->regions;
	const GArray *rb = vr_ctx_target(b, 0)->regions;
	const GArray *rc = vr_ctx_target(c, 0)->regions;

	cr_assert_eq(ra->len, rb->len, "same seed: expected the same region count, got %u and %u",
		     ra->len, rb->len);
	for (guint i = 0; i < ra->len; i++) {
		const struct vr_region *x = &g_array_index(ra, struct vr_region, i);
		const struct vr_region *y = &g_array_index(rb, struct vr_region, i);

		cr_assert(x->start == y->start && x->end == y->end &&
				  x->nr_accesses == y->nr_accesses &&
				  x->last_nr_accesses == y->last_nr_accesses && x->age == y->age &&
				  x->sampling_addr == y->sampling_addr,
			  "same seed: region %u should be identical in both runs, got [%#" PRIx64
			  ", %#" PRIx64 ") nr %u age %u vs [%#" PRIx64 ", %#" PRIx64
			  ") nr %u age %u",
			  i, x->start, x->end, x->nr_accesses, x->age, y->start, y->end,
			  y->nr_accesses, y->age);
	}
	cr_assert(f1.nr_checked == f2.nr_checked,
		  "same seed: expected the same number of checks, got %" PRIu64 " and %" PRIu64,
		  f1.nr_checked, f2.nr_checked);
	/* 1 GiB of random split points: another seed cannot land on the same ones */
	cr_assert_not(regions_equal(ra, rc),
		      "a different seed should give a different region list (both %u regions)",
		      ra->len);
}
