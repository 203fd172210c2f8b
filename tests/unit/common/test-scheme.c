/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the DAMOS scheme engine (common/scheme.c), SEMANTICS.md §2:
 * patterns, actions and stats, quotas (time -> size conversion, charge
 * windows, the split at the quota boundary, the resume point),
 * prioritization (score functions, histogram, min_score), watermarks and
 * quota goals, and runtime updates of a context's schemes.
 *
 * Two levels:
 * - unit: a context is started, then its target's regions are overwritten by
 *   hand (struct rs tables, pictured in ASCII) and vr_ctx_apply_schemes() is
 *   called at chosen times;
 * - engine: the whole context is driven with vr_ctx_tick() (watermarks pause
 *   sampling, schemes run at every aggregation).
 *
 * Fakes: an access source (accessed when the sampled page lies in a hot
 * range), an actuator that logs every apply(start, end, action) and can
 * report a fraction of the bytes or fail, a clock the actuator advances by a
 * modeled cost per page (so time quotas bite without any real time), and a
 * metric provider that returns scripted values or fails.
 *
 * Units: addresses and sizes in tables are in pages (P(n) = n * 4096 bytes);
 * times in us unless a name says otherwise. Parameter structs hold no
 * pointers (Criterion re-executes the binary for each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctx-private.h"
#include "monitor.h"
#include "scheme.h"
#include "test-messages.h"

#define PG	     ((uint64_t)VR_PAGE_SIZE)
#define P(n)	     ((uint64_t)(n)*PG)
#define MIB	     (1ULL << 20)
#define MS(n)	     ((uint64_t)(n)*1000) /* ms -> us */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- */
/* Fakes                                                                     */
/* ------------------------------------------------------------------------- */

/* The access source: a sampled page in [hot_start, hot_end) is accessed. */
struct fake_src {
	uint64_t hot_start;
	uint64_t hot_end;
	unsigned nr_prepare;
	unsigned nr_check;
};

static void src_prepare(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
			uint64_t now_us)
{
	struct fake_src *f = data;

	(void)t;
	(void)regions;
	(void)nr;
	(void)now_us;
	f->nr_prepare++;
}

static void src_check(void *data, const struct vr_target *t, struct vr_region *regions, size_t nr,
		      uint64_t now_us)
{
	struct fake_src *f = data;

	(void)t;
	(void)now_us;
	f->nr_check++;
	for (size_t i = 0; i < nr; i++)
		regions[i].accessed = regions[i].sampling_addr >= f->hot_start &&
				      regions[i].sampling_addr < f->hot_end;
}

static const struct vr_access_ops src_ops = {
	.name = "fake",
	.prepare = src_prepare,
	.check = src_check,
};

/* The clock: only the actuator moves it. */
struct fake_clock {
	uint64_t ns;
};

static uint64_t clock_now_ns(void *data)
{
	return ((struct fake_clock *)data)->ns;
}

/* One apply() call as the actuator saw it. */
struct act_call {
	uint64_t target_id;
	enum vr_action action;
	guint nr_filters;
	uint64_t start;
	uint64_t end;
};

/*
 * The actuator: logs every call in @calls, advances @clock by
 * @cost_ns_per_page per page of the call, reports @done_pct % of the bytes
 * done, or fails while @fail is set. Every page is resident but those of
 * the first FAKE_PAGES set in @nonresident (so by default a region's
 * resident bytes are its size, and quotas charge as DAMOS does).
 */
#define FAKE_PAGES 64
struct fake_act {
	GArray *calls;
	struct fake_clock *clock;
	uint64_t cost_ns_per_page;
	uint32_t done_pct;
	bool fail;
	bool nonresident[FAKE_PAGES];
	unsigned nr_resident_calls;
	unsigned nr_cleanup;
};

static gboolean act_apply(void *data, const struct vr_target *t, const struct vr_scheme *s,
			  uint64_t start, uint64_t end, uint64_t *bytes_done, GError **error)
{
	struct fake_act *a = data;
	enum vr_action action = s->action;
	struct act_call c = { t->id, action, s->nr_filters, start, end };

	cr_assert(start < end && start % PG == 0 && end % PG == 0,
		  "apply() expected a non-empty page-aligned range, got [%#" PRIx64 ", %#" PRIx64
		  ")",
		  start, end);
	cr_assert(action != VR_ACTION_STAT, "apply() should never be called for a stat scheme");
	g_array_append_val(a->calls, c);
	a->clock->ns += (end - start) / PG * a->cost_ns_per_page;
	if (a->fail) {
		g_set_error(error, g_quark_from_static_string("fake-actuator"), 1,
			    "fake actuator: failed");
		return FALSE;
	}
	*bytes_done = (end - start) * a->done_pct / 100;
	return TRUE;
}

static uint64_t act_resident(void *data, const struct vr_target *t, uint64_t start, uint64_t end,
			     uint64_t limit, uint64_t *stop)
{
	struct fake_act *a = data;
	uint64_t found = 0, want = limit / PG * PG;

	(void)t;
	cr_assert(start < end && start % PG == 0 && end % PG == 0 && limit >= PG,
		  "resident() expected a non-empty page-aligned range and a limit of a page or "
		  "more, got [%#" PRIx64 ", %#" PRIx64 ") limit %" PRIu64,
		  start, end, limit);
	a->nr_resident_calls++;
	for (uint64_t addr = start; addr < end; addr += PG) {
		if (addr / PG < FAKE_PAGES && a->nonresident[addr / PG])
			continue;
		if (found == want)
			return found; /* more than the limit: stop where it was reached */
		found += PG;
		if (found == want)
			*stop = addr + PG;
	}
	*stop = end;
	return found;
}

static void act_cleanup(void *data)
{
	((struct fake_act *)data)->nr_cleanup++;
}

static const struct vr_actuator_ops act_ops = {
	.name = "fake",
	.apply = act_apply,
	.resident = act_resident,
	.cleanup = act_cleanup,
};

/* The same actuator, unable to count resident memory. */
static const struct vr_actuator_ops act_ops_no_resident = {
	.name = "fake-no-resident",
	.apply = act_apply,
	.cleanup = act_cleanup,
};

#define METRIC_MAX_SCRIPT 16

/*
 * The metric provider: the n-th call returns script[min(n, nr_script - 1)];
 * without a script, @value[kind] (or fails while @fail is set).
 */
struct fake_metric {
	size_t nr_script;
	struct {
		uint64_t value;
		bool fail;
	} script[METRIC_MAX_SCRIPT];
	uint64_t value[2];
	bool fail;
	unsigned nr_calls[2]; /* per kind */
	int last_metric[2];
	unsigned nr_cleanup;
};

static gboolean metric_get(void *data, enum vr_metric_kind kind, int metric, uint64_t *value,
			   GError **error)
{
	struct fake_metric *m = data;
	unsigned n = m->nr_calls[VR_METRIC_WMARK] + m->nr_calls[VR_METRIC_GOAL];
	bool fail = m->fail;
	uint64_t v = m->value[kind];

	m->nr_calls[kind]++;
	m->last_metric[kind] = metric;
	if (m->nr_script) {
		size_t i = MIN((size_t)n, m->nr_script - 1);

		fail = m->script[i].fail;
		v = m->script[i].value;
	}
	if (fail) {
		g_set_error(error, g_quark_from_static_string("fake-metric"), 1,
			    "fake metric: cannot read");
		return FALSE;
	}
	*value = v;
	return TRUE;
}

static void metric_cleanup(void *data)
{
	((struct fake_metric *)data)->nr_cleanup++;
}

static const struct vr_metric_ops metric_ops = {
	.get = metric_get,
	.cleanup = metric_cleanup,
};

/* ------------------------------------------------------------------------- */
/* The rig: a context wired to the fakes                                     */
/* ------------------------------------------------------------------------- */

struct rig {
	struct fake_src src;
	struct fake_clock clock;
	struct fake_act act;
	struct fake_metric metric;
	struct vr_ctx *ctx;
};

static void rig_init(struct rig *g, const struct vr_monitor_attrs *attrs)
{
	g_autoptr(GError) err = NULL;
	struct vr_clock clock = { clock_now_ns, &g->clock };

	memset(g, 0, sizeof(*g));
	g->act.calls = g_array_new(FALSE, FALSE, sizeof(struct act_call));
	g->act.clock = &g->clock;
	g->act.done_pct = 100;
	g->ctx = vr_ctx_new(&src_ops, &g->src, 1);
	cr_assert(vr_ctx_set_attrs(g->ctx, attrs, &err), "the test's attrs should be valid: %s",
		  err ? err->message : "?");
	vr_ctx_set_actuator(g->ctx, &act_ops, &g->act);
	vr_ctx_set_metrics(g->ctx, &metric_ops, &g->metric);
	vr_ctx_set_clock(g->ctx, &clock);
}

static void rig_fini(struct rig *g)
{
	vr_ctx_free(g->ctx);
	cr_assert_eq(g->act.nr_cleanup, 1, "freeing the context should release the actuator once");
	cr_assert_eq(g->metric.nr_cleanup, 1,
		     "freeing the context should release the metric provider once");
	g_array_unref(g->act.calls);
}

static void rig_add_target(struct rig *g, uint64_t id, uint64_t start_pg, uint64_t end_pg)
{
	g_autoptr(GError) err = NULL;
	struct vr_range r = { P(start_pg), P(end_pg) };

	cr_assert_not_null(vr_ctx_add_target(g->ctx, id, &r, 1, &err),
			   "target %" PRIu64 " should be added: %s", id, err ? err->message : "?");
}

static void rig_start(struct rig *g, uint64_t now_us)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_ctx_start(g->ctx, now_us, &err), "vr_ctx_start() should succeed: %s",
		  err ? err->message : "?");
}

/* The small test attributes: 1 ms samples, 10 per aggregation. */
static struct vr_monitor_attrs small_attrs(void)
{
	return (struct vr_monitor_attrs){
		.sample_interval_us = 1000,
		.aggr_interval_us = 10000,
		.ops_update_interval_us = 0,
		.min_nr_regions = 10,
		.max_nr_regions = 100,
	};
}

/* A region in a table: [s, e) in pages, nr_accesses (= last) and age. */
struct rs {
	uint32_t s, e;
	uint32_t nr, age;
};

#define R(s, e, nr, age)                                                                           \
	{                                                                                          \
		(s), (e), (nr), (age)                                                              \
	}
#define MAXR 12

/* Replace target @ti's regions with @nr regions from @rs (they must tile the ranges). */
static void rig_load(struct rig *g, guint ti, const struct rs *rs, unsigned nr)
{
	struct vr_target *t = vr_ctx_target(g->ctx, ti);
	uint64_t total = 0;

	g_array_set_size(t->regions, nr);
	for (unsigned i = 0; i < nr; i++) {
		*vr_target_region(t, i) = (struct vr_region){
			.start = P(rs[i].s),
			.end = P(rs[i].e),
			.sampling_addr = P(rs[i].s),
			.nr_accesses = rs[i].nr,
			.last_nr_accesses = rs[i].nr,
			.age = rs[i].age,
		};
		total += P(rs[i].e) - P(rs[i].s);
		if (i)
			cr_assert(rs[i - 1].e == rs[i].s, "test bug: regions should be contiguous");
	}
	cr_assert_eq(total, vr_target_size(t), "test bug: the regions should cover the target");
}

/* Expect target @ti's regions to be @want (bounds and ages). */
static void assert_regions(struct rig *g, guint ti, const struct rs *want, unsigned nr,
			   const char *when)
{
	const struct vr_target *t = vr_ctx_target(g->ctx, ti);

	cr_assert_eq(vr_target_nr_regions(t), nr, "%s: target %u expected %u regions, got %u", when,
		     ti, nr, vr_target_nr_regions(t));
	for (unsigned i = 0; i < nr; i++) {
		const struct vr_region *r = vr_target_region(t, i);

		cr_assert(r->start == P(want[i].s) && r->end == P(want[i].e),
			  "%s: target %u region %u expected pages [%u, %u), got [%" PRIu64
			  ", %" PRIu64 ")",
			  when, ti, i, want[i].s, want[i].e, r->start / PG, r->end / PG);
		cr_assert(r->nr_accesses == want[i].nr && r->age == want[i].age,
			  "%s: region [%u, %u) expected nr_accesses %u and age %u, got %u and %u",
			  when, want[i].s, want[i].e, want[i].nr, want[i].age, r->nr_accesses,
			  r->age);
	}
}

/* An expected actuator call: target id, [s, e) in pages. */
struct cs {
	uint64_t tid;
	uint32_t s, e;
};

static char *calls_str(const GArray *calls)
{
	GString *s = g_string_new("[");

	for (guint i = 0; i < calls->len; i++) {
		const struct act_call *c = &g_array_index(calls, struct act_call, i);

		g_string_append_printf(s, "%s(t%" PRIu64 " %s %" PRIu64 "-%" PRIu64 ")",
				       i ? " " : "", c->target_id, vr_action_name(c->action),
				       c->start / PG, c->end / PG);
	}
	g_string_append(s, "]");
	return g_string_free(s, FALSE);
}

/* Expect exactly @want as the actuator's calls since the last check, then forget them. */
static void assert_calls(struct rig *g, const struct cs *want, unsigned nr, const char *when)
{
	g_autofree char *got = calls_str(g->act.calls);

	cr_assert_eq(g->act.calls->len, nr, "%s: expected %u apply() calls, got %u: %s", when, nr,
		     g->act.calls->len, got);
	for (unsigned i = 0; i < nr; i++) {
		const struct act_call *c = &g_array_index(g->act.calls, struct act_call, i);

		cr_assert(c->target_id == want[i].tid && c->start == P(want[i].s) &&
				  c->end == P(want[i].e),
			  "%s: call %u expected (t%" PRIu64 " %u-%u) (pages), got %s", when, i,
			  want[i].tid, want[i].s, want[i].e, got);
	}
	g_array_set_size(g->act.calls, 0);
}

static void assert_stats(const struct vr_scheme *s, uint64_t nr_tried, uint64_t sz_tried,
			 uint64_t nr_applied, uint64_t sz_applied, uint64_t qt_exceeds,
			 const char *when)
{
	const struct vr_scheme_stats *st = &s->stats;

	cr_assert(st->nr_tried == nr_tried && st->sz_tried == sz_tried &&
			  st->nr_applied == nr_applied && st->sz_applied == sz_applied &&
			  st->qt_exceeds == qt_exceeds,
		  "%s: scheme '%s' expected stats tried %" PRIu64 " regions / %" PRIu64
		  " pages, applied %" PRIu64 " / %" PRIu64 " pages, qt_exceeds %" PRIu64
		  "; got %" PRIu64 " / %" PRIu64 ", %" PRIu64 " / %" PRIu64 ", %" PRIu64,
		  when, s->name, nr_tried, sz_tried / PG, nr_applied, sz_applied / PG, qt_exceeds,
		  st->nr_tried, st->sz_tried / PG, st->nr_applied, st->sz_applied / PG,
		  st->qt_exceeds);
}

static void rig_set_schemes(struct rig *g, struct vr_scheme *const *s, size_t nr)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_ctx_set_schemes(g->ctx, s, nr, &err), "the schemes should be accepted: %s",
		  err ? err->message : "?");
}

/* Install @s as the only scheme; return the context's copy. */
static struct vr_scheme *rig_set_scheme(struct rig *g, const struct vr_scheme *s)
{
	struct vr_scheme *list[] = { (struct vr_scheme *)s };

	rig_set_schemes(g, list, 1);
	return vr_ctx_scheme(g->ctx, 0);
}

/*
 * The usual unit-level rig: default attributes (aggr 100 ms, max_nr_accesses
 * 20), one target (id 1) over pages [0, @pages), started at 0.
 */
static void rig_unit(struct rig *g, uint32_t pages)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;

	rig_init(g, &attrs);
	rig_add_target(g, 1, 0, pages);
	rig_start(g, 0);
}

/* ------------------------------------------------------------------------- */
/* Names                                                                     */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_names, .description = "action and metric names, both ways");

Test(scheme_names, actions_round_trip)
{
	static const char *const want[VR_NR_ACTIONS] = {
		[VR_ACTION_PAGEOUT] = "pageout",       [VR_ACTION_COLD] = "cold",
		[VR_ACTION_WILLNEED] = "willneed",     [VR_ACTION_HUGEPAGE] = "hugepage",
		[VR_ACTION_NOHUGEPAGE] = "nohugepage", [VR_ACTION_STAT] = "stat",
	};

	for (int a = 0; a < VR_NR_ACTIONS; a++) {
		enum vr_action back = VR_ACTION_STAT;

		cr_assert_str_eq(vr_action_name((enum vr_action)a), want[a],
				 "action %d: expected the name '%s', got '%s'", a, want[a],
				 vr_action_name((enum vr_action)a));
		cr_assert(vr_action_from_name(want[a], &back) && back == (enum vr_action)a,
			  "'%s' should parse back to action %d, got %d", want[a], a, back);
	}
}

Test(scheme_names, metrics_round_trip)
{
	static const char *const goals[] = {
		[VR_GOAL_USER_INPUT] = "user_input",
		[VR_GOAL_SOME_MEM_PSI_US] = "some_mem_psi_us",
		[VR_GOAL_FREE_MEM_RATE] = "free_mem_rate",
		[VR_GOAL_REFAULT_BYTES] = "refault_bytes",
	};
	static const char *const wmarks[] = {
		[VR_WMARK_NONE] = "none",
		[VR_WMARK_FREE_MEM_RATE] = "free_mem_rate",
	};

	for (int m = 0; m < (int)ARRAY_LEN(goals); m++) {
		enum vr_goal_metric back = VR_GOAL_REFAULT_BYTES + 1;

		cr_assert_str_eq(vr_goal_metric_name((enum vr_goal_metric)m), goals[m],
				 "goal metric %d: expected '%s'", m, goals[m]);
		cr_assert(vr_goal_metric_from_name(goals[m], &back) &&
				  back == (enum vr_goal_metric)m,
			  "'%s' should parse back to goal metric %d, got %d", goals[m], m, back);
	}
	for (int m = 0; m < (int)ARRAY_LEN(wmarks); m++) {
		enum vr_wmark_metric back = VR_WMARK_FREE_MEM_RATE + 1;

		cr_assert_str_eq(vr_wmark_metric_name((enum vr_wmark_metric)m), wmarks[m],
				 "watermark metric %d: expected '%s'", m, wmarks[m]);
		cr_assert(vr_wmark_metric_from_name(wmarks[m], &back) &&
				  back == (enum vr_wmark_metric)m,
			  "'%s' should parse back to watermark metric %d, got %d", wmarks[m], m,
			  back);
	}
}

Test(scheme_names, unknown_names_are_refused_and_leave_the_output)
{
	static const char *const bad[] = { "",	   "PAGEOUT",  "page-out", "pageout ",
					   "none", "free_mem", "user",	   "lru_prio" };

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		enum vr_action a = VR_ACTION_COLD;

		cr_assert_not(vr_action_from_name(bad[i], &a), "'%s' is no action name", bad[i]);
		cr_assert_eq(a, VR_ACTION_COLD, "a refused name should not change the output");
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		enum vr_goal_metric gm = VR_GOAL_SOME_MEM_PSI_US;
		enum vr_wmark_metric wm = VR_WMARK_FREE_MEM_RATE;
		bool is_wmark = !strcmp(bad[i], "none");

		cr_assert_not(vr_goal_metric_from_name(bad[i], &gm), "'%s' is no goal metric",
			      bad[i]);
		cr_assert_eq(gm, VR_GOAL_SOME_MEM_PSI_US, "a refused name should not change it");
		cr_assert_eq(vr_wmark_metric_from_name(bad[i], &wm), is_wmark,
			     "'%s' %s a watermark metric", bad[i], is_wmark ? "is" : "is not");
	}
}

/* ------------------------------------------------------------------------- */
/* Validation                                                                */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_validate, .description = "vr_scheme_validate(): the first bad field is named");

enum mutation {
	M_NONE,
	M_EMPTY_NAME,
	M_SZ_MIN_GT_MAX,
	M_NR_MIN_GT_MAX,
	M_AGE_MIN_GT_MAX,
	M_SZ_QUOTA_NO_RESET,
	M_MS_QUOTA_NO_RESET,
	M_GOAL_NO_RESET,
	M_GOAL_TARGET_0,
	M_WM_HIGH_LT_MID,
	M_WM_MID_LT_LOW,
	M_WM_INTERVAL_0,
	M_TOO_MANY_FILTERS,
	M_FILTER_TYPE_UNKNOWN,
	/* valid ones */
	M_NO_QUOTA_NO_RESET,
	M_WM_NONE_INTERVAL_0,
	M_WM_ALL_EQUAL,
	M_PATTERN_EQUAL_BOUNDS,
	M_MAX_FILTERS,
};

struct validate_case {
	char name[64];
	enum mutation m;
	char field[48]; /* '|'-separated; "" = valid */
};

static void mutate(struct vr_scheme *s, enum mutation m)
{
	struct vr_watermarks wm = {
		.metric = VR_WMARK_FREE_MEM_RATE,
		.interval_us = 5000000,
		.high = 500,
		.mid = 400,
		.low = 200,
	};

	switch (m) {
	case M_NONE:
		break;
	case M_EMPTY_NAME:
		g_free(s->name);
		s->name = g_strdup("");
		break;
	case M_SZ_MIN_GT_MAX:
		s->pattern.min_sz_bytes = P(2);
		s->pattern.max_sz_bytes = P(2) - 1;
		break;
	case M_NR_MIN_GT_MAX:
		s->pattern.min_nr_accesses = 3;
		s->pattern.max_nr_accesses = 2;
		break;
	case M_AGE_MIN_GT_MAX:
		s->pattern.min_age_us = 1000001;
		s->pattern.max_age_us = 1000000;
		break;
	case M_SZ_QUOTA_NO_RESET:
		s->quota.sz = P(1);
		s->quota.reset_interval_ms = 0;
		break;
	case M_MS_QUOTA_NO_RESET:
		s->quota.ms = 10;
		s->quota.reset_interval_ms = 0;
		break;
	case M_GOAL_NO_RESET:
		s->quota.nr_goals = 1;
		s->quota.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, 0 };
		s->quota.reset_interval_ms = 0;
		break;
	case M_GOAL_TARGET_0:
		s->quota.nr_goals = 2;
		s->quota.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, 0 };
		s->quota.goals[1] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 0, 0 };
		break;
	case M_WM_HIGH_LT_MID:
		wm.high = 399;
		s->wmarks = wm;
		break;
	case M_WM_MID_LT_LOW:
		wm.low = 401;
		s->wmarks = wm;
		break;
	case M_WM_INTERVAL_0:
		wm.interval_us = 0;
		s->wmarks = wm;
		break;
	case M_TOO_MANY_FILTERS:
		s->nr_filters = VR_MAX_SCHEME_FILTERS + 1;
		break;
	case M_FILTER_TYPE_UNKNOWN:
		s->nr_filters = 2;
		s->filters[1].type = (enum vr_filter_type)7;
		break;
	case M_MAX_FILTERS:
		s->nr_filters = VR_MAX_SCHEME_FILTERS;
		break;
	case M_NO_QUOTA_NO_RESET:
		s->quota.reset_interval_ms = 0;
		break;
	case M_WM_NONE_INTERVAL_0:
		s->wmarks.metric = VR_WMARK_NONE;
		s->wmarks.interval_us = 0;
		s->wmarks.high = 1;
		s->wmarks.mid = 2;
		s->wmarks.low = 3;
		break;
	case M_WM_ALL_EQUAL:
		wm.high = wm.mid = wm.low = 300;
		s->wmarks = wm;
		break;
	case M_PATTERN_EQUAL_BOUNDS:
		s->pattern = (struct vr_access_pattern){ P(1), P(1), 0, 0, 500, 500 };
		break;
	}
}

static struct validate_case bad_schemes[] = {
	{ "empty name", M_EMPTY_NAME, "name" },
	{ "min_sz > max_sz", M_SZ_MIN_GT_MAX, "min_sz" },
	{ "min_nr_accesses > max", M_NR_MIN_GT_MAX, "nr_accesses" },
	{ "min_age > max_age", M_AGE_MIN_GT_MAX, "age" },
	{ "sz quota, reset_interval 0", M_SZ_QUOTA_NO_RESET, "reset_interval" },
	{ "ms quota, reset_interval 0", M_MS_QUOTA_NO_RESET, "reset_interval" },
	{ "goals only, reset_interval 0", M_GOAL_NO_RESET, "reset_interval" },
	{ "goal target 0", M_GOAL_TARGET_0, "target" },
	{ "watermarks high < mid", M_WM_HIGH_LT_MID, "high|mid" },
	{ "watermarks mid < low", M_WM_MID_LT_LOW, "mid|low" },
	{ "watermarks interval 0", M_WM_INTERVAL_0, "interval" },
	{ "more filters than the most", M_TOO_MANY_FILTERS, "filters" },
	{ "unknown filter type", M_FILTER_TYPE_UNKNOWN, "filters[1].type" },
};

static struct validate_case good_schemes[] = {
	{ "vr_scheme_new() defaults", M_NONE, "" },
	{ "no quota, reset_interval 0", M_NO_QUOTA_NO_RESET, "" },
	{ "metric none ignores the rest", M_WM_NONE_INTERVAL_0, "" },
	{ "high == mid == low", M_WM_ALL_EQUAL, "" },
	{ "min == max everywhere", M_PATTERN_EQUAL_BOUNDS, "" },
	{ "as many filters as allowed", M_MAX_FILTERS, "" },
};

ParameterizedTestParameters(scheme_validate, refuses)
{
	return cr_make_param_array(struct validate_case, bad_schemes, ARRAY_LEN(bad_schemes));
}

ParameterizedTest(struct validate_case *c, scheme_validate, refuses)
{
	g_autoptr(vr_scheme) s = vr_scheme_new("cold", VR_ACTION_PAGEOUT);
	g_autoptr(GError) err = NULL;

	mutate(s, c->m);
	cr_assert_not(vr_scheme_validate(s, &err), "%s: expected vr_scheme_validate() to refuse",
		      c->name);
	cr_assert_not_null(err, "%s: a refusal should come with an error", c->name);
	cr_assert(err->domain == VR_SCHEME_ERROR && err->code == VR_SCHEME_ERROR_INVALID,
		  "%s: expected VR_SCHEME_ERROR_INVALID, got %s/%d (%s)", c->name,
		  g_quark_to_string(err->domain), err->code, err->message);
	cr_assert(msg_has_any(err->message, c->field),
		  "%s: expected the message to name '%s', got '%s'", c->name, c->field,
		  err->message);
}

ParameterizedTestParameters(scheme_validate, accepts)
{
	return cr_make_param_array(struct validate_case, good_schemes, ARRAY_LEN(good_schemes));
}

ParameterizedTest(struct validate_case *c, scheme_validate, accepts)
{
	g_autoptr(vr_scheme) s = vr_scheme_new("cold", VR_ACTION_PAGEOUT);
	g_autoptr(GError) err = NULL;

	mutate(s, c->m);
	cr_assert(vr_scheme_validate(s, &err), "%s: expected the scheme to be valid, got '%s'",
		  c->name, err ? err->message : "?");
}

Test(scheme_validate, new_scheme_matches_everything_without_quota)
{
	g_autoptr(vr_scheme) s = vr_scheme_new("all", VR_ACTION_STAT);
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	struct vr_region r = { .start = 0, .end = P(1) << 20, .nr_accesses = 20, .age = 1000000 };

	cr_assert_str_eq(s->name, "all");
	cr_assert_eq(s->action, VR_ACTION_STAT);
	cr_assert_not(vr_quota_is_set(&s->quota), "a new scheme should have no quota");
	cr_assert_eq(s->wmarks.metric, VR_WMARK_NONE, "a new scheme's watermark metric is none");
	cr_assert(vr_access_pattern_match(&s->pattern, &r, &attrs),
		  "a new scheme should match a huge, hot, old region");
	r = (struct vr_region){ .start = 0, .end = P(1) };
	cr_assert(vr_access_pattern_match(&s->pattern, &r, &attrs),
		  "a new scheme should match a one-page, idle, young region");
}

/* ------------------------------------------------------------------------- */
/* Access patterns                                                           */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_pattern, .description = "vr_access_pattern_match(): inclusive bounds");

struct match_case {
	char name[64];
	struct vr_access_pattern p;
	uint32_t pages, nr, age;
	bool match;
};

/*
 * With aggr_interval 100 ms: min_age_us 250000 -> 2 intervals (2.5 truncated),
 * max_age_us 1099999 -> 10 (10.99999 truncated).
 */
#define PAT                                                                                        \
	{                                                                                          \
		P(2), P(8), 1, 5, 250000, 1099999                                                  \
	}

static struct match_case match_cases[] = {
	{ "every lower bound", PAT, 2, 1, 2, true },
	{ "every upper bound", PAT, 8, 5, 10, true },
	{ "in the middle", PAT, 5, 3, 6, true },
	{ "size one page below", PAT, 1, 3, 6, false },
	{ "size one page above", PAT, 9, 3, 6, false },
	{ "nr_accesses one below", PAT, 5, 0, 6, false },
	{ "nr_accesses one above", PAT, 5, 6, 6, false },
	{ "age one below (1 < 250000/100000 = 2)", PAT, 5, 3, 1, false },
	{ "age one above (11 > 1099999/100000 = 10)", PAT, 5, 3, 11, false },
	{ "min age in us below 300 ms still age 2", PAT, 5, 3, 2, true },
	{ "exact byte bounds", { P(3), P(3), 0, 0, 0, 0 }, 3, 0, 0, true },
	{ "min_sz one byte above the size", { P(3) + 1, P(9), 0, 9, 0, 1000000 }, 3, 0, 0, false },
	{ "max_sz one byte below the size", { 0, P(3) - 1, 0, 9, 0, 1000000 }, 3, 0, 0, false },
	{ "max_age_us below one interval -> age 0 only",
	  { 0, P(9), 0, 9, 0, 99999 },
	  3,
	  0,
	  1,
	  false },
	{ "max_age_us below one interval, age 0", { 0, P(9), 0, 9, 0, 99999 }, 3, 0, 0, true },
};

ParameterizedTestParameters(scheme_pattern, match_table)
{
	return cr_make_param_array(struct match_case, match_cases, ARRAY_LEN(match_cases));
}

ParameterizedTest(struct match_case *c, scheme_pattern, match_table)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	struct vr_region r = {
		.start = P(16),
		.end = P(16 + c->pages),
		.nr_accesses = c->nr,
		.last_nr_accesses = c->nr,
		.age = c->age,
	};

	cr_assert_eq(vr_access_pattern_match(&c->p, &r, &attrs), c->match,
		     "%s: region of %u pages, nr_accesses %u, age %u: expected %s", c->name,
		     c->pages, c->nr, c->age, c->match ? "a match" : "no match");
}

/* ------------------------------------------------------------------------- */
/* Scores and min_score                                                      */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_score, .description = "score functions and the prioritization threshold");

struct score_case {
	char name[48];
	uint64_t sample_us, aggr_us;
	uint32_t w_freq, w_age;
	uint32_t nr, age;
	uint32_t cold;
};

/*
 * Default attrs unless said: sample 5 ms, aggr 100 ms, max_nr_accesses 20, so
 * freq = nr * 100 / 20 = 5 * nr and age_s = age / 10.
 * age_sub = (age_log + 32) * 100 / 64, age_log negated when freq == 0;
 * hot = (w_freq * freq + w_age * age_sub) / (w_freq + w_age), * 99 / 100;
 * cold = 99 - hot.
 */
#define DEF 5000, 100000
static struct score_case cold_cases[] = {
	/* weights (0, 0, 1): age only (DAMON_RECLAIM) */
	/* freq 0, age_s 0, log 0: sub 32*100/64 = 50, hot 50*99/100 = 49, cold 50 */
	{ "age: idle, age 0", DEF, 0, 1, 0, 0, 50 },
	/* age_s 0 (0.9 s): same as age 0 */
	{ "age: idle, 0.9 s", DEF, 0, 1, 0, 9, 50 },
	/* age_s 1, log -1: sub 31*100/64 = 48, hot 47, cold 52 */
	{ "age: idle, 1 s", DEF, 0, 1, 0, 10, 52 },
	/* age_s 2, log -2: sub 30*100/64 = 46, hot 45, cold 54 */
	{ "age: idle, 2 s", DEF, 0, 1, 0, 20, 54 },
	/* age_s 3 (3.9 s), log -2: cold 54 */
	{ "age: idle, 3.9 s", DEF, 0, 1, 0, 39, 54 },
	/* age_s 4, log -3: sub 29*100/64 = 45, hot 44, cold 55 */
	{ "age: idle, 4 s", DEF, 0, 1, 0, 40, 55 },
	/* age_s 7, log -3: cold 55 */
	{ "age: idle, 7.9 s", DEF, 0, 1, 0, 79, 55 },
	/* age_s 8, log -4: sub 28*100/64 = 43, hot 42, cold 57 */
	{ "age: idle, 8 s", DEF, 0, 1, 0, 80, 57 },
	/* freq 100, log 0: sub 50, hot 49, cold 50 (as young as idle age 0) */
	{ "age: max freq, age 0", DEF, 0, 1, 20, 0, 50 },
	/* freq 100, log +1: sub 33*100/64 = 51, hot 51*99/100 = 50, cold 49 */
	{ "age: max freq, 1 s", DEF, 0, 1, 20, 10, 49 },
	/* freq 100, log +4: sub 36*100/64 = 56, hot 55, cold 44 */
	{ "age: max freq, 8 s", DEF, 0, 1, 20, 80, 44 },
	/* freq 5, log +3: sub 35*100/64 = 54, hot 53, cold 46 */
	{ "age: nr 1, 4 s", DEF, 0, 1, 1, 40, 46 },
	/*
	 * aggr 10 s (max_nr_accesses 2000): age 2^31 -> age_s 2^31 * 10 > 2^34,
	 * bit length 35 capped at 32. Idle: log -32, sub 0, hot 0, cold 99
	 * (uncapped: sub (-3)*100/64 = -4, hot -3, cold 102: out of range).
	 */
	{ "age: idle, 2^34 s (capped)", 5000, 10000000, 0, 1, 0, 1u << 31, 99 },
	/* max freq: log +32, sub 100, hot 99, cold 0 (uncapped: sub 104, cold -3) */
	{ "age: max freq, 2^34 s (capped)", 5000, 10000000, 0, 1, 2000, 1u << 31, 0 },

	/* weights (0, 1, 0): frequency only */
	/* freq 0: hot 0, cold 99 whatever the age */
	{ "freq: idle, age 0", DEF, 1, 0, 0, 0, 99 },
	{ "freq: idle, 8 s", DEF, 1, 0, 0, 80, 99 },
	/* freq 5: hot 5*99/100 = 4, cold 95 */
	{ "freq: nr 1", DEF, 1, 0, 1, 40, 95 },
	/* freq 15: hot 14, cold 85 */
	{ "freq: nr 3", DEF, 1, 0, 3, 0, 85 },
	/* freq 50: hot 49, cold 50 */
	{ "freq: nr 10", DEF, 1, 0, 10, 80, 50 },
	/* freq 100: hot 99, cold 0 */
	{ "freq: max", DEF, 1, 0, 20, 0, 0 },
	/* nr above max_nr_accesses counts as max */
	{ "freq: nr above max", DEF, 1, 0, 25, 0, 0 },

	/* weights (0, 1, 1) */
	/* freq 0, sub 50: hot 50/2 = 25, 25*99/100 = 24, cold 75 */
	{ "both: idle, age 0", DEF, 1, 1, 0, 0, 75 },
	/* freq 0, log -4, sub 43: hot 43/2 = 21, 20, cold 79 */
	{ "both: idle, 8 s", DEF, 1, 1, 0, 80, 79 },
	/* freq 100, sub 50: hot 150/2 = 75, 74, cold 25 */
	{ "both: max freq, age 0", DEF, 1, 1, 20, 0, 25 },
	/* freq 50, log +4, sub 56: hot 106/2 = 53, 52, cold 47 */
	{ "both: nr 10, 8 s", DEF, 1, 1, 10, 80, 47 },
	/* freq 15, log +2, sub 34*100/64 = 53: hot 68/2 = 34, 33, cold 66 */
	{ "both: nr 3, 2 s", DEF, 1, 1, 3, 20, 66 },

	/* weights (0, 0, 0): no prioritization, every region scores the same */
	{ "none: idle, age 0", DEF, 0, 0, 0, 0, 99 },
	{ "none: idle, 8 s", DEF, 0, 0, 0, 80, 99 },
	{ "none: max freq, 8 s", DEF, 0, 0, 20, 80, 99 },
	{ "none: idle, 2^34 s", 5000, 10000000, 0, 0, 0, 1u << 31, 99 },
};

ParameterizedTestParameters(scheme_score, cold_score_table)
{
	return cr_make_param_array(struct score_case, cold_cases, ARRAY_LEN(cold_cases));
}

ParameterizedTest(struct score_case *c, scheme_score, cold_score_table)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	struct vr_quota q = { .weight_nr_accesses = c->w_freq, .weight_age = c->w_age };
	struct vr_region r = { .start = 0, .end = P(4), .nr_accesses = c->nr, .age = c->age };
	uint32_t cold, hot;

	attrs.sample_interval_us = c->sample_us;
	attrs.aggr_interval_us = c->aggr_us;
	cold = vr_cold_score(&r, &attrs, &q);
	hot = vr_hot_score(&r, &attrs, &q);
	cr_assert_eq(cold, c->cold,
		     "%s: weights (0, %u, %u), nr_accesses %u, age %u: expected cold score %u, "
		     "got %u",
		     c->name, c->w_freq, c->w_age, c->nr, c->age, c->cold, cold);
	cr_assert_eq(hot + cold, VR_MAX_SCORE, "%s: hot %u + cold %u should be 99", c->name, hot,
		     cold);
}

Test(scheme_score, scheme_score_follows_the_action)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/* weights (0, 1, 1): hot = max freq, age 0 (hot 74); cold = idle, 8 s (hot 20) */
	struct vr_region hot = { .start = 0, .end = P(1), .nr_accesses = 20, .age = 0 };
	struct vr_region cold = { .start = P(1), .end = P(2), .nr_accesses = 0, .age = 80 };
	static const struct {
		enum vr_action action;
		uint32_t hot, cold;
	} want[] = {
		{ VR_ACTION_PAGEOUT, 25, 79 },	{ VR_ACTION_COLD, 25, 79 },
		{ VR_ACTION_HUGEPAGE, 74, 20 }, { VR_ACTION_WILLNEED, 74, 20 },
		{ VR_ACTION_NOHUGEPAGE, 0, 0 }, { VR_ACTION_STAT, 0, 0 },
	};

	s->quota.weight_nr_accesses = 1;
	s->quota.weight_age = 1;
	cr_assert_eq(vr_hot_score(&hot, &attrs, &s->quota), 74);
	cr_assert_eq(vr_hot_score(&cold, &attrs, &s->quota), 20);
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		s->action = want[i].action;
		cr_assert(vr_scheme_score(s, &hot, &attrs) == want[i].hot &&
				  vr_scheme_score(s, &cold, &attrs) == want[i].cold,
			  "%s: expected scores hot region %u, cold region %u; got %u, %u",
			  vr_action_name(want[i].action), want[i].hot, want[i].cold,
			  vr_scheme_score(s, &hot, &attrs), vr_scheme_score(s, &cold, &attrs));
	}
}

#define MAX_BINS 6

struct min_score_case {
	char name[48];
	unsigned nr;
	struct {
		uint32_t score;
		uint64_t bytes;
	} bins[MAX_BINS];
	uint64_t esz;
	uint32_t want;
};

/* hist: 99 -> 4p, 50 -> 4p, 10 -> 4p (12p in all) */
#define H3                                                                                         \
	3,                                                                                         \
	{                                                                                          \
		{ 99, P(4) }, { 50, P(4) },                                                        \
		{                                                                                  \
			10, P(4)                                                                   \
		}                                                                                  \
	}

static struct min_score_case min_score_cases[] = {
	/* walking down: 99: 4p >= 3p */
	{ "reached in the top bin", H3, P(3), 99 },
	/* 99: 4p >= 4p (reaching is enough) */
	{ "exactly the top bin", H3, P(4), 99 },
	/* 99: 4p < 4p+1; 50: 8p >= 4p+1 */
	{ "one byte more goes down a bin", H3, P(4) + 1, 50 },
	/* 50: 8p >= 8p */
	{ "exactly two bins", H3, P(8), 50 },
	/* 10: 12p >= 12p */
	{ "exactly everything", H3, P(12), 10 },
	/* never reached: 0 */
	{ "esz larger than everything", H3, P(12) + 1, 0 },
	{ "esz huge", H3, UINT64_MAX, 0 },
	/* 0 bytes already reach 0 at the top */
	{ "esz 0", H3, 0, 99 },
	{ "empty histogram", 0, { { 0, 0 } }, P(1), 0 },
	{ "empty histogram, esz 0", 0, { { 0, 0 } }, 0, 99 },
	/* all bytes at score 0: the walk ends at 0 */
	{ "everything at score 0", 1, { { 0, P(10) } }, P(5), 0 },
	/* 70: 1p, 69: 2p, 68: 3p >= 3p */
	{ "adjacent bins", 4, { { 70, P(1) }, { 69, P(1) }, { 68, P(1) }, { 1, P(9) } }, P(3), 68 },
	{ "lowest non-zero bin", 2, { { 70, P(1) }, { 1, P(9) } }, P(10), 1 },
};

ParameterizedTestParameters(scheme_score, min_score_table)
{
	return cr_make_param_array(struct min_score_case, min_score_cases,
				   ARRAY_LEN(min_score_cases));
}

ParameterizedTest(struct min_score_case *c, scheme_score, min_score_table)
{
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };
	uint32_t got;

	for (unsigned i = 0; i < c->nr; i++)
		hist[c->bins[i].score] += c->bins[i].bytes;
	got = vr_min_score(hist, c->esz);
	cr_assert_eq(got, c->want, "%s: esz %" PRIu64 " bytes: expected min_score %u, got %u",
		     c->name, c->esz, c->want, got);
}

/* ------------------------------------------------------------------------- */
/* Actions, stats and ages                                                   */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_action, .description = "actions, stats and the age reset");

Test(scheme_action, every_action_but_stat_resets_the_age)
{
	for (int a = 0; a < VR_NR_ACTIONS; a++) {
		struct rig g;
		g_autoptr(vr_scheme) s = vr_scheme_new("s", (enum vr_action)a);
		/*
		 * |A 4p nr0 age7|B 4p nr5 age9|   pattern nr 0..0: only A matches
		 */
		static const struct rs before[] = { R(0, 4, 0, 7), R(4, 8, 5, 9) };
		bool stat = a == VR_ACTION_STAT;
		struct rs after[] = { R(0, 4, 0, stat ? 7 : 0), R(4, 8, 5, 9) };
		const struct cs calls[] = { { 1, 0, 4 } };
		const struct vr_scheme *cs;

		rig_unit(&g, 8);
		rig_load(&g, 0, before, 2);
		s->pattern.max_nr_accesses = 0;
		cs = rig_set_scheme(&g, s);
		vr_ctx_apply_schemes(g.ctx, MS(100));
		assert_regions(&g, 0, after, 2, vr_action_name((enum vr_action)a));
		if (!stat)
			cr_assert_eq(g_array_index(g.act.calls, struct act_call, 0).action, a,
				     "the actuator should get the scheme's action");
		assert_calls(&g, calls, stat ? 0 : 1, vr_action_name((enum vr_action)a));
		assert_stats(cs, 1, P(4), stat ? 0 : 1, stat ? 0 : P(4), 0,
			     vr_action_name((enum vr_action)a));
		rig_fini(&g);
	}
}

Test(scheme_action, actuator_gets_the_scheme)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("huge", VR_ACTION_HUGEPAGE);

	s->filters[0] = (struct vr_scheme_filter){ .type = VR_FILTER_YOUNG, .matching = true };
	s->filters[1] = (struct vr_scheme_filter){ .type = VR_FILTER_ANON, .matching = false };
	s->nr_filters = 2;
	rig_unit(&g, 4);
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_gt(g.act.calls->len, 0, "the scheme should act");
	for (guint i = 0; i < g.act.calls->len; i++) {
		const struct act_call *c = &g_array_index(g.act.calls, struct act_call, i);

		cr_assert(c->action == VR_ACTION_HUGEPAGE && c->target_id == 1,
			  "call %u: expected hugepage on target 1, got %s on %" PRIu64, i,
			  vr_action_name(c->action), c->target_id);
		cr_assert_eq(c->nr_filters, 2, "call %u: the actuator should see both filters", i);
	}
	rig_fini(&g);
}

TestSuite(scheme_filters, .description = "vr_scheme_filters_pass(): which pages a filter "
					 "takes out");

Test(scheme_filters, pass_table)
{
	const struct vr_scheme_filter young_out = { VR_FILTER_YOUNG, true };
	const struct vr_scheme_filter old_out = { VR_FILTER_YOUNG, false };
	const struct vr_scheme_filter anon_out = { VR_FILTER_ANON, true };
	const struct vr_scheme_filter both[] = { young_out, anon_out };

	cr_assert(vr_scheme_filters_pass(NULL, 0, true, true), "no filter: every page passes");
	cr_assert_not(vr_scheme_filters_pass(&young_out, 1, false, true),
		      "a matching young filter takes a young page out");
	cr_assert(vr_scheme_filters_pass(&young_out, 1, false, false), "and leaves an old one");
	cr_assert(vr_scheme_filters_pass(&old_out, 1, true, true),
		  "a non-matching one leaves a young page");
	cr_assert_not(vr_scheme_filters_pass(&old_out, 1, true, false), "and takes an old one out");
	cr_assert_not(vr_scheme_filters_pass(both, 2, true, false),
		      "an old anonymous page is taken out by the anon filter");
	cr_assert_not(vr_scheme_filters_pass(both, 2, false, true),
		      "a young file page by the young filter");
	cr_assert(vr_scheme_filters_pass(both, 2, false, false), "an old file page passes both");
}

Test(scheme_names, filter_types_round_trip)
{
	static const char *const names[] = { "anon", "young" };

	for (guint i = 0; i < ARRAY_LEN(names); i++) {
		enum vr_filter_type t = (enum vr_filter_type)99;

		cr_assert(vr_filter_type_from_name(names[i], &t), "'%s' is a filter type",
			  names[i]);
		cr_assert_str_eq(vr_filter_type_name(t), names[i]);
	}
	cr_assert_str_eq(vr_filter_type_name((enum vr_filter_type)9), "unknown");
	{
		enum vr_filter_type t = VR_FILTER_ANON;

		cr_assert_not(vr_filter_type_from_name("memcg", &t),
			      "memcg filters are not supported");
		cr_assert_eq(t, VR_FILTER_ANON, "a refused name leaves the output");
	}
}

struct result_case {
	char name[32];
	uint32_t done_pct;
	bool fail;
	uint64_t nr_applied, sz_applied; /* over 3 regions of 4 pages */
};

static struct result_case result_cases[] = {
	{ "all done", 100, false, 3, P(12) },
	{ "half done", 50, false, 3, P(6) },
	{ "nothing done", 0, false, 0, 0 },
	{ "failed", 100, true, 0, 0 },
};

ParameterizedTestParameters(scheme_action, actuator_results_in_stats)
{
	return cr_make_param_array(struct result_case, result_cases, ARRAY_LEN(result_cases));
}

/*
 * |A 4p|B 4p|C 4p|  all tried; the actuator reports a part or fails; the
 * walk goes on after a failure, and the quota is charged with what was tried.
 */
ParameterizedTest(struct result_case *c, scheme_action, actuator_results_in_stats)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	static const struct rs before[] = { R(0, 4, 0, 3), R(4, 8, 0, 3), R(8, 12, 0, 3) };
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 8, 12 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 3);
	g.act.done_pct = c->done_pct;
	g.act.fail = c->fail;
	s->quota.sz = P(100);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 3, c->name);
	assert_stats(cs, 3, P(12), c->nr_applied, c->sz_applied, 0, c->name);
	cr_assert_eq(cs->quota.charged_sz, P(12),
		     "%s: the quota should be charged with the 12 pages tried, got %" PRIu64,
		     c->name, cs->quota.charged_sz);
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* Quotas: the split at the boundary and charge windows                      */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_quota, .description = "size and time quotas, charge windows");

Test(scheme_quota, split_at_the_quota_boundary)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 10p, everything matches, weights 0 (address order):
	 *
	 * before  |A 4p age5 |B 4p age5 |C 4p age5 |
	 * applied |A 4p      |B 4p      |C1 2p|         4 + 4 + 2 = 10p
	 * after   |A age0    |B age0    |C1 0|C2 5|     C split at 10p
	 */
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5) };
	static const struct rs after[] = { R(0, 4, 0, 0), R(4, 8, 0, 0), R(8, 10, 0, 0),
					   R(10, 12, 0, 5) };
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 8, 10 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 3);
	s->quota.sz = P(10);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 3, "sz quota 10p over 3x4p");
	assert_regions(&g, 0, after, 4, "sz quota 10p over 3x4p");
	assert_stats(cs, 3, P(10), 3, P(10), 0, "sz quota 10p over 3x4p");
	cr_assert_eq(cs->quota.esz, P(10), "esz should be sz, 10p, got %" PRIu64, cs->quota.esz);
	cr_assert_eq(cs->quota.charged_sz, cs->quota.esz,
		     "charged_sz should reach esz (10p), got %" PRIu64, cs->quota.charged_sz);

	/* the same window again: the quota is used up, nothing is tried */
	vr_ctx_apply_schemes(g.ctx, MS(999));
	assert_calls(&g, NULL, 0, "second pass in a used-up window");
	assert_stats(cs, 3, P(10), 3, P(10), 0, "second pass in a used-up window");
	rig_fini(&g);
}

Test(scheme_quota, nothing_applied_when_less_than_a_page_remains)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 2.5 pages:
	 * before  |A 4p       |B 4p       |
	 * A: 0 + 4p > 2.5p: split at align_down(2.5p) = 2p, apply A1
	 * A2: 2p + 2p > 2.5p: align_down(0.5p) = 0: nothing more
	 * after   |A1 2p|A2 2p|B 4p       |
	 */
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5) };
	static const struct rs after[] = { R(0, 2, 0, 0), R(2, 4, 0, 5), R(4, 8, 0, 5) };
	static const struct cs calls[] = { { 1, 0, 2 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 8);
	rig_load(&g, 0, before, 2);
	s->quota.sz = P(2) + PG / 2;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 1, "sz quota 2.5p");
	assert_regions(&g, 0, after, 3, "sz quota 2.5p");
	assert_stats(cs, 1, P(2), 1, P(2), 0, "sz quota 2.5p");
	cr_assert_eq(cs->quota.charged_sz, P(2), "charged_sz should be 2 pages, got %" PRIu64,
		     cs->quota.charged_sz);
	rig_fini(&g);
}

struct esz_case {
	char name[64];
	uint64_t ms, sz;
	uint64_t total_sz, total_ns; /* what earlier windows charged and measured */
	uint64_t esz;
};

static struct esz_case esz_cases[] = {
	{ "sz only", 0, P(10), 0, 0, P(10) },
	{ "sz only, not page-aligned", 0, P(2) + 100, 0, 0, P(2) + 100 },
	/* before any measurement: 4 MiB/ms * 2 ms */
	{ "ms only, nothing measured", 2, 0, 0, 0, 8 * MIB },
	{ "ms 2 and sz 1 MiB: min", 2, MIB, 0, 0, MIB },
	{ "ms 2 and sz 100 MiB: min", 2, 100 * MIB, 0, 0, 8 * MIB },
	/* 8 MiB in 6144000 ns: 8388608e6 / 6144000 = 1365333 B/ms (.33 cut), * 2 */
	{ "ms 2, measured", 2, 0, 8 * MIB, 6144000, 2730666 },
	/* 1e6 B in 3e6 ns: 333333 B/ms, * 3 = 999999 */
	{ "ms 3, measured, truncated", 3, 0, 1000000, 3000000, 999999 },
	{ "ms 3 measured, sz smaller", 3, 999998, 1000000, 3000000, 999998 },
	/* one page in 1 s: 4 B/ms * 1 ms = 4 bytes -> at least a page */
	{ "ms 1, very slow: a page", 1, 0, PG, 1000000000, PG },
	/* 1 byte in 1000 s: throughput 0 -> at least a page */
	{ "ms 1, throughput 0: a page", 1, 0, 1, 1000000000000ULL, PG },
	{ "sz half a page: a page", 0, PG / 2, 0, 0, PG },
	{ "sz one byte: a page", 0, 1, 0, 0, PG },
};

ParameterizedTestParameters(scheme_quota, effective_size_table)
{
	return cr_make_param_array(struct esz_case, esz_cases, ARRAY_LEN(esz_cases));
}

/*
 * The first window's esz from what was charged and measured before (written
 * into the scheme's private state): esz = throughput * ms, min sz, >= a page.
 */
/* The effective size is kept in whole pages, at least one. */
static uint64_t whole_pages(uint64_t esz)
{
	return MAX(esz / PG * PG, PG);
}

ParameterizedTest(struct esz_case *c, scheme_quota, effective_size_table)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_STAT);
	struct vr_scheme *cs;

	rig_unit(&g, 4);
	s->quota.ms = c->ms;
	s->quota.sz = c->sz;
	cs = rig_set_scheme(&g, s);
	cs->quota.total_charged_sz = c->total_sz;
	cs->quota.total_charged_ns = c->total_ns;
	vr_ctx_apply_schemes(g.ctx, 0);
	/* the table holds the formula's value; esz is that in whole pages */
	cr_assert_eq(cs->quota.esz, whole_pages(c->esz),
		     "%s: ms %" PRIu64 ", sz %" PRIu64 ", %" PRIu64 " B in %" PRIu64
		     " ns: expected esz %" PRIu64 " in whole pages (%" PRIu64 "), got %" PRIu64,
		     c->name, c->ms, c->sz, c->total_sz, c->total_ns, c->esz, whole_pages(c->esz),
		     cs->quota.esz);
	rig_fini(&g);
}

Test(scheme_quota, windows_reset_and_count_exceeds)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 4p per 100 ms window:
	 * |A 4p|B 4p|C 4p|
	 *  w1    w2   w3     one region per window, resume point after each
	 */
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5) };
	static const struct cs a[] = { { 1, 0, 4 } }, b[] = { { 1, 4, 8 } }, c[] = { { 1, 8, 12 } };
	const struct vr_scheme *cs;
	const struct vr_quota *q;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 3);
	s->quota.sz = P(4);
	s->quota.reset_interval_ms = 100;
	cs = rig_set_scheme(&g, s);
	q = &cs->quota;

	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, a, 1, "window 1");
	cr_assert(q->charged_from_us == MS(1000) && q->charged_sz == P(4) &&
			  q->total_charged_sz == 0 && cs->stats.qt_exceeds == 0,
		  "window 1: expected charged_from 1000 ms, charged 4p, total 0, qt_exceeds 0; "
		  "got %" PRIu64 " us, %" PRIu64 ", %" PRIu64 ", %" PRIu64,
		  q->charged_from_us, q->charged_sz, q->total_charged_sz, cs->stats.qt_exceeds);

	/* 1 us before the window ends: still window 1, used up */
	vr_ctx_apply_schemes(g.ctx, MS(1100) - 1);
	assert_calls(&g, NULL, 0, "end of window 1");
	cr_assert_eq(cs->stats.qt_exceeds, 0, "window 1 is not over yet");

	/* now >= charged_from + reset_interval: window 2, window 1 used it all */
	vr_ctx_apply_schemes(g.ctx, MS(1100));
	assert_calls(&g, b, 1, "window 2");
	cr_assert(q->charged_from_us == MS(1100) && q->charged_sz == P(4) &&
			  q->total_charged_sz == P(4) && cs->stats.qt_exceeds == 1,
		  "window 2: expected charged_from 1100 ms, charged 4p, total 4p, qt_exceeds 1; "
		  "got %" PRIu64 " us, %" PRIu64 ", %" PRIu64 ", %" PRIu64,
		  q->charged_from_us, q->charged_sz, q->total_charged_sz, cs->stats.qt_exceeds);

	/* late: window 3 starts at the pass time, not at 1200 ms */
	vr_ctx_apply_schemes(g.ctx, MS(1250));
	assert_calls(&g, c, 1, "window 3");
	cr_assert(q->charged_from_us == MS(1250) && q->total_charged_sz == P(8) &&
			  cs->stats.qt_exceeds == 2,
		  "window 3: expected charged_from 1250 ms, total 8p, qt_exceeds 2; got %" PRIu64
		  " us, %" PRIu64 ", %" PRIu64,
		  q->charged_from_us, q->total_charged_sz, cs->stats.qt_exceeds);

	/*
	 * A quota bigger than everything (100p): windows 4 and 5 charge at most
	 * the 12 pages there are, so from window 5 on no exceed is counted, and
	 * total_charged_sz grows by each closing window's charge.
	 */
	vr_ctx_scheme(g.ctx, 0)->quota.sz = P(100);
	for (int w = 4; w <= 6; w++) {
		uint64_t closing = q->charged_sz, total = q->total_charged_sz;

		vr_ctx_apply_schemes(g.ctx, MS(1250) + MS(100) * (uint64_t)(w - 3));
		cr_assert_eq(q->total_charged_sz, total + closing,
			     "window %d: total_charged_sz should grow by the closing window's "
			     "%" PRIu64 " bytes: expected %" PRIu64 ", got %" PRIu64,
			     w, closing, total + closing, q->total_charged_sz);
		cr_assert(q->esz == P(100) && q->charged_sz <= P(12),
			  "window %d: expected esz 100p and at most 12p charged, got %" PRIu64
			  " and %" PRIu64,
			  w, q->esz, q->charged_sz);
		cr_assert_eq(cs->stats.qt_exceeds, 3,
			     "window %d: only windows 1-3 used their whole quota, expected "
			     "qt_exceeds 3, got %" PRIu64,
			     w, cs->stats.qt_exceeds);
	}
	rig_fini(&g);
}

Test(scheme_quota, time_quota_from_measured_throughput)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * ms quota 2 per 1 s window; the actuator takes 1000 ns per page.
	 * |A 4096p      |B 4096p      |C 4096p      |D 4096p      |   (64 MiB)
	 * w1: esz = 4 MiB/ms * 2 = 8 MiB = 2048p: A split, [0, 2048p) applied
	 *     in 2048 * 1000 ns
	 * w2: throughput = 8388608 * 1e6 / 2048000 = 4096000 B/ms,
	 *     esz = 8192000 B = 2000p: [2048p, 4048p) from the resume point
	 * w3: throughput (8388608 + 8192000) * 1e6 / 4048000 ns = 4096000 again
	 */
	static const struct rs before[] = { R(0, 4096, 0, 5), R(4096, 8192, 0, 5),
					    R(8192, 12288, 0, 5), R(12288, 16384, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 2048 } }, w2[] = { { 1, 2048, 4048 } },
			       w3[] = { { 1, 4048, 4096 }, { 1, 4096, 6048 } };
	const struct vr_scheme *cs;
	const struct vr_quota *q;

	rig_unit(&g, 16384);
	rig_load(&g, 0, before, 4);
	g.act.cost_ns_per_page = 1000;
	s->quota.ms = 2;
	cs = rig_set_scheme(&g, s);
	q = &cs->quota;

	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(q->esz, 8 * MIB, "window 1: before any measurement esz = 4 MiB/ms * 2 ms");
	assert_calls(&g, w1, 1, "window 1");
	cr_assert_eq(q->total_charged_ns, 2048000,
		     "window 1: 2048 pages at 1000 ns measured as 2048000 ns, got %" PRIu64,
		     q->total_charged_ns);

	vr_ctx_apply_schemes(g.ctx, MS(1000));
	cr_assert_eq(q->esz, 8192000, "window 2: esz = 4096000 B/ms * 2 ms, got %" PRIu64, q->esz);
	assert_calls(&g, w2, 1, "window 2");
	cr_assert_eq(cs->stats.qt_exceeds, 1, "window 1 used its whole quota");

	vr_ctx_apply_schemes(g.ctx, MS(2000));
	cr_assert_eq(q->esz, 8192000, "window 3: same throughput, same esz, got %" PRIu64, q->esz);
	assert_calls(&g, w3, 2, "window 3");
	cr_assert(q->total_charged_sz == 8 * MIB + 8192000 &&
			  q->total_charged_ns == 4048000 + 2000000,
		  "window 3: expected %" PRIu64 " B and %" PRIu64 " ns, got %" PRIu64
		  " and %" PRIu64,
		  (uint64_t)(8 * MIB + 8192000), (uint64_t)6048000, q->total_charged_sz,
		  q->total_charged_ns);

	rig_fini(&g);
}

Test(scheme_quota, slower_actuator_shrinks_the_time_quota)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	const struct vr_scheme *cs;
	/*
	 * ms 2. w1: 2048p at 1000 ns (2048000 ns). w2 at 3000 ns per page:
	 * 2000p take 6000000 ns. w3: (8388608 + 8192000) B * 1e6 / 8048000 ns
	 * = 2060214 B/ms (.8 cut), esz = 4120428 B.
	 */
	static const struct rs before[] = { R(0, 8192, 0, 5), R(8192, 16384, 0, 5) };

	rig_unit(&g, 16384);
	rig_load(&g, 0, before, 2);
	g.act.cost_ns_per_page = 1000;
	s->quota.ms = 2;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	g.act.cost_ns_per_page = 3000;
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	cr_assert_eq(cs->quota.total_charged_ns, 8048000);
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	cr_assert_eq(cs->quota.esz, whole_pages(4120428),
		     "window 3: expected esz 2 * (16580608e6 / 8048000) = 4120428 in whole pages, "
		     "got %" PRIu64,
		     cs->quota.esz);
	rig_fini(&g);
}

Test(scheme_quota, tiny_time_quota_never_stalls)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * ms 1, the actuator takes 1 s per page.
	 * w1: esz 4 MiB = 1024p, applied in 1024 s.
	 * w2: throughput 4194304e6 / 1024e9 = 4 B/ms, esz 4 B -> one page.
	 * w3..: still 4 B/ms -> one page per window, never 0.
	 */
	static const struct rs before[] = { R(0, 2048, 0, 5) };
	const struct vr_scheme *cs;

	rig_unit(&g, 2048);
	rig_load(&g, 0, before, 1);
	g.act.cost_ns_per_page = 1000000000;
	s->quota.ms = 1;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(cs->quota.esz, 4 * MIB);
	cr_assert_eq(g.act.calls->len, 1);
	for (int w = 2; w <= 5; w++) {
		char when[32];
		const struct cs want[] = { { 1, 1024 + (w - 2), 1024 + (w - 1) } };

		snprintf(when, sizeof(when), "window %d", w);
		g_array_set_size(g.act.calls, 0);
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)(w - 1));
		cr_assert_eq(cs->quota.esz, PG,
			     "%s: esz should be one page (never below), got %" PRIu64, when,
			     cs->quota.esz);
		assert_calls(&g, want, 1, when);
	}
	rig_fini(&g);
}

/* Mark pages [@from, @to) of the fake actuator non-resident. */
static void rig_nonresident(struct rig *g, uint32_t from, uint32_t to)
{
	for (uint32_t p = from; p < to; p++)
		g->act.nonresident[p] = true;
}

struct charge_case {
	char name[48];
	enum vr_charge_basis charge;
	unsigned nr_calls;
	struct cs calls[3];
};

static struct charge_case charge_cases[] = {
	/* A and B are paged out already: they cost nothing, C takes the 4p */
	{ "resident", VR_CHARGE_RESIDENT, 3, { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 8, 12 } } },
	/* DAMOS: A's size uses up the window, C is never reached */
	{ "size", VR_CHARGE_SIZE, 1, { { 1, 0, 4 } } },
};

ParameterizedTestParameters(scheme_quota, paged_out_memory_is_charged_by_the_basis)
{
	return cr_make_param_array(struct charge_case, charge_cases, ARRAY_LEN(charge_cases));
}

/*
 * sz quota 4p; pages 0..7 are not resident:
 *
 * before |A 4p age5 paged out|B 4p age5 paged out|C 4p age5 resident|
 */
ParameterizedTest(struct charge_case *c, scheme_quota, paged_out_memory_is_charged_by_the_basis)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5) };
	struct vr_scheme *cs;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 3);
	rig_nonresident(&g, 0, 8);
	s->quota.sz = P(4);
	s->quota.charge = c->charge;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, c->calls, c->nr_calls, c->name);
	cr_assert_eq(cs->quota.charged_sz, P(4),
		     "%s: the window's 4 pages should be charged, got %" PRIu64 " pages", c->name,
		     cs->quota.charged_sz / PG);
	cr_assert(cs->quota.resume_set && cs->quota.resume_addr == P(c->calls[c->nr_calls - 1].e),
		  "%s: the next window should resume after page %u, got %s %" PRIu64, c->name,
		  c->calls[c->nr_calls - 1].e, cs->quota.resume_set ? "page" : "no resume point",
		  cs->quota.resume_addr / PG);
	rig_fini(&g);
}

Test(scheme_quota, resident_charge_splits_where_the_window_ends)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 4p; pages 0-2 and 6 are not resident: the 4 resident pages
	 * 3, 4, 5 and 7 end at page 8, where the region is split.
	 *
	 * before |A 12p age5                          |
	 * after  |A1 8p age0 (4p charged)  |A2 4p age5|
	 */
	static const struct rs before[] = { R(0, 12, 0, 5) };
	static const struct rs after[] = { R(0, 8, 0, 0), R(8, 12, 0, 5) };
	static const struct cs calls[] = { { 1, 0, 8 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 1);
	rig_nonresident(&g, 0, 3);
	rig_nonresident(&g, 6, 7);
	s->quota.sz = P(4);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 1, "4p of resident memory in a 12p region");
	assert_regions(&g, 0, after, 2, "4p of resident memory in a 12p region");
	assert_stats(cs, 1, P(8), 1, P(8), 0, "4p of resident memory in a 12p region");
	cr_assert_eq(cs->quota.charged_sz, P(4), "4 resident pages should be charged, got %" PRIu64,
		     cs->quota.charged_sz / PG);
	rig_fini(&g);
}

Test(scheme_quota, free_memory_never_uses_up_the_quota)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/* nothing resident: every pass walks all of it, no window is ever used up */
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5) };
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 8);
	rig_load(&g, 0, before, 2);
	rig_nonresident(&g, 0, 8);
	s->quota.sz = P(1);
	cs = rig_set_scheme(&g, s);
	for (unsigned w = 0; w < 3; w++) {
		vr_ctx_apply_schemes(g.ctx, MS(1000) * w);
		assert_calls(&g, calls, 2, "free memory under a 1p quota");
		cr_assert_eq(cs->quota.charged_sz, 0,
			     "window %u: free memory should charge nothing, got %" PRIu64 " pages",
			     w, cs->quota.charged_sz / PG);
	}
	cr_assert_eq(cs->stats.qt_exceeds, 0, "no window should count as exceeded, got %" PRIu64,
		     cs->stats.qt_exceeds);
	rig_fini(&g);
}

Test(scheme_quota, size_charge_when_the_actuator_cannot_count)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5) };
	static const struct cs calls[] = { { 1, 0, 4 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 12);
	vr_ctx_set_actuator(g.ctx, &act_ops_no_resident, &g.act);
	cr_assert_eq(g.act.nr_cleanup, 1, "the replaced actuator should be released");
	g.act.nr_cleanup = 0;
	rig_load(&g, 0, before, 3);
	rig_nonresident(&g, 0, 8);
	s->quota.sz = P(4);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 1, "resident charge without a count");
	cr_assert_eq(cs->quota.charged_sz, P(4),
		     "A's size should be charged, got %" PRIu64 " pages",
		     cs->quota.charged_sz / PG);
	cr_assert_eq(g.act.nr_resident_calls, 0, "test bug: the actuator should not be asked");
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* The resume point                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_resume, .description = "where the next window continues");

Test(scheme_resume, continues_after_the_last_region)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 4p per window:
	 * |A 2p|B 2p|C 2p|D 2p|E 2p|F 2p|
	 *  w1   w1   w2   w2   w3   w3
	 */
	static const struct rs before[] = { R(0, 2, 0, 5), R(2, 4, 0, 5),  R(4, 6, 0, 5),
					    R(6, 8, 0, 5), R(8, 10, 0, 5), R(10, 12, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 2 }, { 1, 2, 4 } },
			       w2[] = { { 1, 4, 6 }, { 1, 6, 8 } },
			       w3[] = { { 1, 8, 10 }, { 1, 10, 12 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 6);
	s->quota.sz = P(4);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 2, "window 1");
	cr_assert(cs->quota.resume_set && cs->quota.resume_target == 0 &&
			  cs->quota.resume_addr == P(4),
		  "window 1: the resume point should be target 0, page 4, got %s %u %" PRIu64,
		  cs->quota.resume_set ? "set" : "unset", cs->quota.resume_target,
		  cs->quota.resume_addr / PG);
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, w2, 2, "window 2 resumes at page 4");
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	assert_calls(&g, w3, 2, "window 3 resumes at page 8");
	assert_stats(cs, 6, P(12), 6, P(12), 2, "after 3 windows");
	rig_fini(&g);
}

Test(scheme_resume, straddling_region_is_split_there)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * w1, sz quota 4p:   |A 2p|B 2p|C 2p|D 2p|E 4p     |   resume at page 4
	 * between windows B and C merge (age 5):
	 *                    |A 2p|BC 4p    |D 2p|E 4p     |
	 * w2: BC straddles page 4: split there, |B 2p| skipped, |C 2p| applied,
	 *     then D; the quota (4p) is used up at page 8.
	 * after              |A|B|C|D|E|
	 */
	static const struct rs before[] = { R(0, 2, 0, 5), R(2, 4, 0, 5), R(4, 6, 0, 5),
					    R(6, 8, 0, 5), R(8, 12, 0, 5) };
	static const struct rs merged[] = { R(0, 2, 0, 0), R(2, 6, 0, 5), R(6, 8, 0, 5),
					    R(8, 12, 0, 5) };
	static const struct rs after[] = { R(0, 2, 0, 0), R(2, 4, 0, 5), R(4, 6, 0, 0),
					   R(6, 8, 0, 0), R(8, 12, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 2 }, { 1, 2, 4 } },
			       w2[] = { { 1, 4, 6 }, { 1, 6, 8 } };

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 5);
	s->quota.sz = P(4);
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 2, "window 1");
	rig_load(&g, 0, merged, 4);
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, w2, 2, "window 2 after the merge");
	assert_regions(&g, 0, after, 5, "window 2 after the merge");
	rig_fini(&g);
}

Test(scheme_resume, across_targets)
{
	struct rig g;
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 4p:
	 * target 10: |A 4p  |B 4p  |        target 11: |C 4p  |D 4p  |
	 *             w1      w2                        w3      w4      w6
	 * w2 ends at the end of target 10's last region: w3 goes on in target 11.
	 * w3 leaves the resume point in target 11: w4 skips all of target 10.
	 * w4 ends at the end of everything: no region lies after the resume
	 * point, so w5 starts over at the lowest address at once (no window is
	 * wasted), and w6 goes on after it.
	 */
	static const struct rs t0[] = { R(0, 4, 0, 5), R(4, 8, 0, 5) };
	static const struct rs t1[] = { R(100, 104, 0, 5), R(104, 108, 0, 5) };
	static const struct cs w1[] = { { 10, 0, 4 } }, w2[] = { { 10, 4, 8 } },
			       w3[] = { { 11, 100, 104 } }, w4[] = { { 11, 104, 108 } },
			       w5[] = { { 10, 0, 4 } }, w6[] = { { 10, 4, 8 } };
	const struct vr_scheme *cs;

	rig_init(&g, &attrs);
	rig_add_target(&g, 10, 0, 8);
	rig_add_target(&g, 11, 100, 108);
	rig_start(&g, 0);
	rig_load(&g, 0, t0, 2);
	rig_load(&g, 1, t1, 2);
	s->quota.sz = P(4);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 1, "window 1");
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, w2, 1, "window 2: rest of target 10");
	cr_assert(cs->quota.resume_target == 0 && cs->quota.resume_addr == P(8),
		  "window 2: resume point expected at target 0 page 8");
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	assert_calls(&g, w3, 1, "window 3: continues in target 11");
	cr_assert(cs->quota.resume_set && cs->quota.resume_target == 1 &&
			  cs->quota.resume_addr == P(104),
		  "window 3: resume point expected at target 1 page 104, got %u %" PRIu64,
		  cs->quota.resume_target, cs->quota.resume_addr / PG);
	vr_ctx_apply_schemes(g.ctx, MS(3000));
	assert_calls(&g, w4, 1, "window 4: target 10 skipped");
	vr_ctx_apply_schemes(g.ctx, MS(4000));
	assert_calls(&g, w5, 1, "window 5: nothing after the resume point, starts over");
	vr_ctx_apply_schemes(g.ctx, MS(5000));
	assert_calls(&g, w6, 1, "window 6: goes on after window 5");
	rig_fini(&g);
}

/*
 * A time quota rarely gives a page-aligned size: the effective size is kept
 * in whole pages, so each window still uses its quota up, counts as exceeded
 * and goes on where the previous one stopped.
 *
 * ms 2, 3000 ns per page, |A 8192p|B 8192p|:
 * w1: esz 4 MiB/ms * 2 = 2048p: [0, 2048)
 * w2: 8 MiB in 6144000 ns = 1365333 B/ms * 2 = 2730666 B = 666p (+2730 B):
 *     [2048, 2714)
 * w3: the same throughput: [2714, 3380); two windows exceeded so far
 */
Test(scheme_resume, time_quota_in_whole_pages_resumes)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	static const struct rs before[] = { R(0, 8192, 0, 5), R(8192, 16384, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 2048 } }, w2[] = { { 1, 2048, 2714 } },
			       w3[] = { { 1, 2714, 3380 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 16384);
	rig_load(&g, 0, before, 2);
	g.act.cost_ns_per_page = 3000;
	s->quota.ms = 2;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 1, "window 1");
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, w2, 1, "window 2");
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	assert_calls(&g, w3, 1, "window 3");
	cr_assert_eq(cs->stats.qt_exceeds, 2, "windows 1 and 2 used their quota up: got %" PRIu64,
		     cs->stats.qt_exceeds);
	rig_fini(&g);
}

/*
 * A resume point belongs to a quota window: once the quota is removed at
 * runtime, the next pass walks everything from the lowest address.
 */
Test(scheme_resume, dropped_with_the_quota)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 4 } },
			       all[] = { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 8, 12 } };

	rig_unit(&g, 12);
	rig_load(&g, 0, before, 3);
	s->quota.sz = P(4);
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 1, "with the quota");
	s->quota.sz = 0;
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, all, 3, "without the quota");
	rig_fini(&g);
}

Test(scheme_resume, non_matching_regions_before_the_point_are_not_revisited)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("s", VR_ACTION_PAGEOUT);
	/*
	 * sz quota 2p, pattern nr 0..0:
	 * |A 2p nr0|B 2p nr3|C 2p nr0|D 2p nr0|
	 * w1: A (resume at 2p). w2: B does not match, C applied.
	 * w3: D. A is idle again but before the resume point.
	 */
	static const struct rs before[] = { R(0, 2, 0, 5), R(2, 4, 3, 5), R(4, 6, 0, 5),
					    R(6, 8, 0, 5) };
	static const struct cs w1[] = { { 1, 0, 2 } }, w2[] = { { 1, 4, 6 } },
			       w3[] = { { 1, 6, 8 } };

	rig_unit(&g, 8);
	rig_load(&g, 0, before, 4);
	s->pattern.max_nr_accesses = 0;
	s->quota.sz = P(2);
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, w1, 1, "window 1");
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	assert_calls(&g, w2, 1, "window 2");
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	assert_calls(&g, w3, 1, "window 3");
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* Prioritization end to end                                                 */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_priority, .description = "the quota goes to the best-scoring regions first");

/*
 * pattern nr 0..0 (idle), sz quota 8p:
 *          |A 4p age1s|B 4p age8s|C 4p age0|D 4p age4s|E 4p nr5 age20s|
 * cold (age only)  52       57       50       55        (no match)
 */
static const struct rs prio_regions[] = { R(0, 4, 0, 10), R(4, 8, 0, 80), R(8, 12, 0, 0),
					  R(12, 16, 0, 40), R(16, 20, 5, 200) };

Test(scheme_priority, oldest_idle_regions_first)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	/* hist 57: 4p, 55: 4p -> 8p reached at 55: B and D, in address order */
	static const struct cs calls[] = { { 1, 4, 8 }, { 1, 12, 16 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 20);
	rig_load(&g, 0, prio_regions, 5);
	s->pattern.max_nr_accesses = 0;
	s->quota.sz = P(8);
	s->quota.weight_age = 1;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(cs->quota.min_score, 55, "expected min_score 55, got %u", cs->quota.min_score);
	assert_calls(&g, calls, 2, "age-only weights, 8p of 16p idle");
	assert_stats(cs, 2, P(8), 2, P(8), 0, "age-only weights");
	rig_fini(&g);
}

Test(scheme_priority, paged_out_regions_weigh_nothing)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	/*
	 * prio_regions with B (the oldest) paged out already: hist 57: 0,
	 * 55: 4p, 52: 4p -> 8p reached at 52: A, B and D in address order,
	 * B charges nothing, A and D 4p each.
	 */
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 12, 16 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 20);
	rig_load(&g, 0, prio_regions, 5);
	rig_nonresident(&g, 4, 8);
	s->pattern.max_nr_accesses = 0;
	s->quota.sz = P(8);
	s->quota.weight_age = 1;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(cs->quota.min_score, 52, "expected min_score 52, got %u", cs->quota.min_score);
	assert_calls(&g, calls, 3, "age-only weights, the oldest region paged out");
	cr_assert_eq(cs->quota.charged_sz, P(8), "8 pages should be charged, got %" PRIu64,
		     cs->quota.charged_sz / PG);
	rig_fini(&g);
}

Test(scheme_priority, no_weights_means_address_order)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	/* every idle region scores 99: hist 99: 16p -> min_score 99, A then B */
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 20);
	rig_load(&g, 0, prio_regions, 5);
	s->pattern.max_nr_accesses = 0;
	s->quota.sz = P(8);
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(cs->quota.min_score, 99, "expected min_score 99, got %u", cs->quota.min_score);
	assert_calls(&g, calls, 2, "weights 0, 8p of 16p idle");
	rig_fini(&g);
}

Test(scheme_priority, hugepage_hottest_first)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("thp", VR_ACTION_HUGEPAGE);
	/*
	 * weights (0, 1, 0), sz quota 8p:
	 *        |A nr2|B nr18|C nr10|D nr0|
	 * hot      9     89     49     0       -> B and C
	 */
	static const struct rs regions[] = { R(0, 4, 2, 0), R(4, 8, 18, 0), R(8, 12, 10, 0),
					     R(12, 16, 0, 0) };
	static const struct cs calls[] = { { 1, 4, 8 }, { 1, 8, 12 } };
	const struct vr_scheme *cs;

	rig_unit(&g, 16);
	rig_load(&g, 0, regions, 4);
	s->quota.sz = P(8);
	s->quota.weight_nr_accesses = 1;
	cs = rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert_eq(cs->quota.min_score, 49, "expected min_score 49, got %u", cs->quota.min_score);
	assert_calls(&g, calls, 2, "hugepage, frequency weights");
	rig_fini(&g);
}

Test(scheme_priority, no_quota_no_prioritization)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	static const struct cs calls[] = { { 1, 0, 4 }, { 1, 4, 8 }, { 1, 8, 12 }, { 1, 12, 16 } };

	rig_unit(&g, 20);
	rig_load(&g, 0, prio_regions, 5);
	s->pattern.max_nr_accesses = 0;
	s->quota.weight_age = 1;
	rig_set_scheme(&g, s);
	vr_ctx_apply_schemes(g.ctx, 0);
	assert_calls(&g, calls, 4, "no quota: every idle region");
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* Watermarks                                                                */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_wmarks, .description = "watermarks and paused monitoring");

struct wm_case {
	char name[48];
	enum vr_wmark_metric metric;
	bool active;
	uint64_t value;
	bool next;
};

/* high 500, mid 400, low 200 */
static struct wm_case wm_cases[] = {
	{ "above high, active", VR_WMARK_FREE_MEM_RATE, true, 600, false },
	{ "above high, inactive", VR_WMARK_FREE_MEM_RATE, false, 600, false },
	{ "high + 1, active", VR_WMARK_FREE_MEM_RATE, true, 501, false },
	{ "== high, active (not above)", VR_WMARK_FREE_MEM_RATE, true, 500, true },
	{ "== high, inactive (stays)", VR_WMARK_FREE_MEM_RATE, false, 500, false },
	{ "mid..high, active", VR_WMARK_FREE_MEM_RATE, true, 450, true },
	{ "mid..high, inactive", VR_WMARK_FREE_MEM_RATE, false, 450, false },
	{ "== mid, inactive (stays)", VR_WMARK_FREE_MEM_RATE, false, 400, false },
	{ "== mid, active", VR_WMARK_FREE_MEM_RATE, true, 400, true },
	{ "mid - 1, inactive (activates)", VR_WMARK_FREE_MEM_RATE, false, 399, true },
	{ "low..mid, inactive", VR_WMARK_FREE_MEM_RATE, false, 300, true },
	{ "low..mid, active", VR_WMARK_FREE_MEM_RATE, true, 300, true },
	{ "== low, inactive (not below)", VR_WMARK_FREE_MEM_RATE, false, 200, true },
	{ "== low, active", VR_WMARK_FREE_MEM_RATE, true, 200, true },
	{ "low - 1, active", VR_WMARK_FREE_MEM_RATE, true, 199, false },
	{ "low - 1, inactive", VR_WMARK_FREE_MEM_RATE, false, 199, false },
	{ "0, active", VR_WMARK_FREE_MEM_RATE, true, 0, false },
	{ "metric none, inactive, above high", VR_WMARK_NONE, false, 900, true },
	{ "metric none, active, below low", VR_WMARK_NONE, true, 0, true },
	{ "metric none, inactive, mid..high", VR_WMARK_NONE, false, 450, true },
};

ParameterizedTestParameters(scheme_wmarks, next_state_table)
{
	return cr_make_param_array(struct wm_case, wm_cases, ARRAY_LEN(wm_cases));
}

ParameterizedTest(struct wm_case *c, scheme_wmarks, next_state_table)
{
	struct vr_watermarks w = {
		.metric = c->metric,
		.interval_us = 1000,
		.high = 500,
		.mid = 400,
		.low = 200,
	};

	cr_assert_eq(vr_watermarks_next_state(&w, c->active, c->value), c->next,
		     "%s: metric %" PRIu64 " while %s: expected %s", c->name, c->value,
		     c->active ? "active" : "inactive", c->next ? "active" : "inactive");
}

/*
 * The engine rig for watermarks: small attrs, one target of 64 pages, one
 * stat scheme with free_mem_rate watermarks 500/400/200 checked every 50 ms.
 */
#define WM_INTERVAL_US 50000

static void rig_wmarks(struct rig *g, uint64_t metric)
{
	struct vr_monitor_attrs attrs = small_attrs();
	g_autoptr(vr_scheme) s = vr_scheme_new("w", VR_ACTION_STAT);

	rig_init(g, &attrs);
	rig_add_target(g, 1, 0, 64);
	s->wmarks = (struct vr_watermarks){
		.metric = VR_WMARK_FREE_MEM_RATE,
		.interval_us = WM_INTERVAL_US,
		.high = 500,
		.mid = 400,
		.low = 200,
	};
	rig_set_scheme(g, s);
	g->metric.value[VR_METRIC_WMARK] = metric;
	rig_start(g, 0);
	g->src.nr_prepare = 0;
	g->src.nr_check = 0;
}

/* One tick when the context asks; returns its time. */
static uint64_t step(struct rig *g, bool ok)
{
	g_autoptr(GError) err = NULL;
	uint64_t now = vr_ctx_next_tick_us(g->ctx);
	gboolean r = vr_ctx_tick(g->ctx, now, &err);

	cr_assert_eq(r, ok, "vr_ctx_tick(%" PRIu64 ") expected %s, got %s (%s)", now,
		     ok ? "success" : "failure", r ? "success" : "failure",
		     err ? err->message : "no error");
	return now;
}

Test(scheme_wmarks, paused_monitoring_samples_nothing)
{
	struct rig g;
	uint64_t now = 0, expect = 1000;
	unsigned nr_ticks = 0;

	rig_wmarks(&g, 900); /* free memory above high: no need to reclaim */
	while (vr_ctx_next_tick_us(g.ctx) < MS(500)) {
		now = step(&g, true);
		cr_assert_eq(now, expect,
			     "while paused, ticks should come at each watermark check: expected "
			     "%" PRIu64 " us, got %" PRIu64,
			     expect, now);
		expect += WM_INTERVAL_US;
		nr_ticks++;
	}
	cr_assert_eq(nr_ticks, 10, "expected 10 watermark checks in 500 ms, got %u", nr_ticks);
	cr_assert(vr_ctx_monitoring_paused(g.ctx) && !vr_ctx_scheme_active(g.ctx, 0),
		  "metric 900 > high: the scheme should be inactive and monitoring paused");
	cr_assert(g.src.nr_check == 0 && g.src.nr_prepare == 0,
		  "while paused no access check should run: got %u check(), %u prepare()",
		  g.src.nr_check, g.src.nr_prepare);
	cr_assert_eq(g.metric.nr_calls[VR_METRIC_WMARK], 10,
		     "one metric read per check, expected 10, got %u",
		     g.metric.nr_calls[VR_METRIC_WMARK]);
	cr_assert_eq(g.metric.last_metric[VR_METRIC_WMARK], VR_WMARK_FREE_MEM_RATE);
	cr_assert_eq(vr_ctx_nr_aggregations(g.ctx), 0, "no aggregation while paused");

	/* between mid and high while inactive: stays inactive */
	g.metric.value[VR_METRIC_WMARK] = 450;
	now = step(&g, true);
	cr_assert_eq(now, MS(501));
	cr_assert(vr_ctx_monitoring_paused(g.ctx), "450 (mid..high) keeps an inactive scheme off");

	/* between low and mid: activates at the next check, sampling resumes */
	g.metric.value[VR_METRIC_WMARK] = 300;
	now = step(&g, true);
	cr_assert_eq(now, MS(551), "the next check should come 50 ms later");
	cr_assert(!vr_ctx_monitoring_paused(g.ctx) && vr_ctx_scheme_active(g.ctx, 0),
		  "300 (low..mid) should activate the scheme");
	cr_assert(g.src.nr_prepare == 1 && g.src.nr_check == 0,
		  "the activating tick should prepare samples (got %u prepare(), %u check())",
		  g.src.nr_prepare, g.src.nr_check);
	now = step(&g, true);
	cr_assert_eq(now, MS(552), "sampling resumes at the sampling interval");
	cr_assert_eq(g.src.nr_check, 1, "the next tick should check the samples, got %u check()",
		     g.src.nr_check);

	/* active: runs aggregations and the stat scheme; checks go on every 50 ms */
	while (vr_ctx_next_tick_us(g.ctx) < MS(601))
		step(&g, true);
	cr_assert_gt(vr_ctx_scheme(g.ctx, 0)->stats.nr_tried, 0,
		     "the active stat scheme should have tried regions");
	cr_assert_eq(g.metric.nr_calls[VR_METRIC_WMARK], 12);

	/* above high again: deactivated at 601 ms, sampling stops */
	g.metric.value[VR_METRIC_WMARK] = 600;
	now = step(&g, true);
	cr_assert_eq(now, MS(601));
	cr_assert(vr_ctx_monitoring_paused(g.ctx), "600 > high should pause monitoring");
	unsigned checks = g.src.nr_check, prepares = g.src.nr_prepare;

	while (vr_ctx_next_tick_us(g.ctx) < MS(1000))
		step(&g, true);
	cr_assert(g.src.nr_check == checks && g.src.nr_prepare == prepares,
		  "paused again: expected no more check()/prepare(), got %u/%u more",
		  g.src.nr_check - checks, g.src.nr_prepare - prepares);
	rig_fini(&g);
}

Test(scheme_wmarks, metric_failure_keeps_the_state)
{
	struct rig g;
	g_autoptr(GError) err = NULL;
	uint64_t now;

	rig_wmarks(&g, 300);
	step(&g, true); /* 1 ms: activates */
	cr_assert(vr_ctx_scheme_active(g.ctx, 0), "300 should activate the scheme");

	/* active, then the provider fails: stays active, sampling goes on */
	g.metric.fail = true;
	while (vr_ctx_next_tick_us(g.ctx) < MS(51))
		step(&g, true);
	unsigned checks = g.src.nr_check;

	now = vr_ctx_next_tick_us(g.ctx);
	cr_assert_eq(now, MS(51));
	cr_assert_not(vr_ctx_tick(g.ctx, now, &err), "a metric failure should fail the tick");
	cr_assert_not_null(err, "the failed tick should report an error");
	cr_assert(msg_has_any(err->message, "'w'") && msg_has_any(err->message, "watermark"),
		  "the error should name the scheme and its watermarks, got '%s'", err->message);
	cr_assert(vr_ctx_scheme_active(g.ctx, 0), "a failed read keeps the scheme active");
	cr_assert_eq(g.src.nr_check, checks + 1, "sampling should go on after a failed read");
	g_clear_error(&err);

	/* the provider works again: 600 deactivates at the next check (101 ms) */
	g.metric.fail = false;
	g.metric.value[VR_METRIC_WMARK] = 600;
	while (vr_ctx_next_tick_us(g.ctx) <= MS(101))
		step(&g, true);
	cr_assert(vr_ctx_monitoring_paused(g.ctx), "600 should deactivate the scheme");

	/* inactive, then a failure: stays inactive */
	g.metric.fail = true;
	g.metric.value[VR_METRIC_WMARK] = 300;
	now = step(&g, false);
	cr_assert_eq(now, MS(151));
	cr_assert(vr_ctx_monitoring_paused(g.ctx), "a failed read keeps the scheme inactive");
	g.metric.fail = false;
	now = step(&g, true);
	cr_assert_eq(now, MS(201), "the check after a failure comes one interval later");
	cr_assert(vr_ctx_scheme_active(g.ctx, 0), "a good read of 300 activates it");
	rig_fini(&g);
}

Test(scheme_wmarks, no_provider_fails_the_tick)
{
	struct rig g;
	g_autoptr(GError) err = NULL;

	rig_wmarks(&g, 300);
	vr_ctx_set_metrics(g.ctx, NULL, NULL);
	cr_assert_eq(g.metric.nr_cleanup, 1, "replacing the provider should release the old one");
	cr_assert_not(vr_ctx_tick(g.ctx, vr_ctx_next_tick_us(g.ctx), &err),
		      "a watermark metric without a provider should fail the tick");
	cr_assert(err && err->domain == VR_SCHEME_ERROR && err->code == VR_SCHEME_ERROR_METRIC,
		  "expected VR_SCHEME_ERROR_METRIC, got %s", err ? err->message : "no error");
	rig_fini(&g);
}

Test(scheme_wmarks, metric_none_never_pauses)
{
	struct rig g;
	struct vr_monitor_attrs attrs = small_attrs();
	g_autoptr(vr_scheme) s = vr_scheme_new("always", VR_ACTION_STAT);

	rig_init(&g, &attrs);
	rig_add_target(&g, 1, 0, 64);
	rig_set_scheme(&g, s);
	rig_start(&g, 0);
	for (int i = 0; i < 30; i++)
		step(&g, true);
	cr_assert_not(vr_ctx_monitoring_paused(g.ctx), "metric none is always active");
	cr_assert_eq(g.metric.nr_calls[VR_METRIC_WMARK], 0, "metric none reads nothing");
	cr_assert_eq(g.src.nr_check, 30, "every tick should check samples, got %u", g.src.nr_check);
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* Quota goals                                                               */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_goals, .description = "the feedback tuner of quota goals");

struct fb_case {
	char name[48];
	uint64_t last, score, next;
};

static struct fb_case fb_cases[] = {
	{ "met: unchanged", 1000000, 10000, 1000000 },
	/* 5000: diff 5000, compensation 1e6 * 5000 / 10000 = 5e5 */
	{ "half met: +50%", 1000000, 5000, 1500000 },
	{ "nothing: +100%", 1000000, 0, 2000000 },
	/* 9999: compensation 1e6 * 1 / 10000 = 100 */
	{ "just below: +0.01%", 1000000, 9999, 1000100 },
	{ "1.5x: -50%", 1000000, 15000, 500000 },
	/* 15000 from 15000: 15000 - 7500 = 7500 < 10000 */
	{ "-50% floors at 10000", 15000, 15000, 10000 },
	/* 19999: 1e6 - 999900 = 100 -> 10000 */
	{ "just below 2x: floor", 1000000, 19999, 10000 },
	{ "2x: minimum", 1000000, 20000, 10000 },
	{ "10x: minimum", UINT64_MAX, 100000, 10000 },
	/* (2^64 - 1) * 5000 / 10000 = 2^63 - 1 without overflow */
	{ "huge, 1.5x", UINT64_MAX, 15000, 1ULL << 63 },
	{ "huge, +50% saturates", UINT64_MAX, 5000, UINT64_MAX },
	{ "huge, +100% saturates", UINT64_MAX - 1, 0, UINT64_MAX },
	{ "3/4 of max, +50% saturates", UINT64_MAX / 4 * 3, 5000, UINT64_MAX },
};

ParameterizedTestParameters(scheme_goals, feedback_table)
{
	return cr_make_param_array(struct fb_case, fb_cases, ARRAY_LEN(fb_cases));
}

ParameterizedTest(struct fb_case *c, scheme_goals, feedback_table)
{
	uint64_t got = vr_feedback_next(c->last, c->score);

	cr_assert_eq(got, c->next,
		     "%s: last %" PRIu64 ", score %" PRIu64 " bp: expected %" PRIu64
		     ", got %" PRIu64,
		     c->name, c->last, c->score, c->next, got);
}

/*
 * A pageout scheme over 2048 pages with a user_input goal (target 100) and
 * the given ms/sz limits; passes at every 1 s window.
 */
static struct vr_scheme *rig_goal(struct rig *g, uint64_t ms, uint64_t sz, uint64_t current)
{
	g_autoptr(vr_scheme) s = vr_scheme_new("goal", VR_ACTION_PAGEOUT);

	rig_unit(g, 2048);
	s->quota.ms = ms;
	s->quota.sz = sz;
	s->quota.nr_goals = 1;
	s->quota.goals[0] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 100, current };
	return rig_set_scheme(g, s);
}

/* The expected esz from the tuner's input and the limits. */
static uint64_t expect_esz(uint64_t bp, uint64_t cap)
{
	return MAX(MIN(bp / 10000, cap) / PG * PG, PG);
}

Test(scheme_goals, esz_grows_then_shrinks_within_sz)
{
	struct rig g;
	const uint64_t sz = P(64);
	struct vr_scheme *cs = rig_goal(&g, 0, sz, 10); /* 10 / 100: score 1000 bp */
	uint64_t bp = 10000;
	int w = 0;

	/* under target: +90% per window (bp += bp * 9000 / 10000) until sz caps it */
	for (; w < 30; w++) {
		bp += bp * 9000 / 10000;
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
		cr_assert(cs->quota.esz_bp == bp && cs->quota.esz == expect_esz(bp, sz),
			  "window %d under target: expected esz_bp %" PRIu64 ", esz %" PRIu64
			  "; got %" PRIu64 ", %" PRIu64,
			  w, bp, expect_esz(bp, sz), cs->quota.esz_bp, cs->quota.esz);
		cr_assert_leq(cs->quota.esz, sz, "esz should never exceed sz");
	}
	cr_assert_eq(cs->quota.esz, sz, "after 30 windows of growth esz should be capped at sz");

	/* over target (150 / 100): -50% per window, down to the page floor */
	cs->quota.goals[0].current = 150;
	for (int k = 0; k < 60; k++, w++) {
		uint64_t prev = cs->quota.esz;

		bp = MAX(bp - bp * 5000 / 10000, 10000);
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
		cr_assert(cs->quota.esz_bp == bp && cs->quota.esz == expect_esz(bp, sz),
			  "window %d over target: expected esz_bp %" PRIu64 ", esz %" PRIu64
			  "; got %" PRIu64 ", %" PRIu64,
			  w, bp, expect_esz(bp, sz), cs->quota.esz_bp, cs->quota.esz);
		cr_assert_leq(cs->quota.esz, prev, "over target esz should not grow");
	}
	cr_assert_eq(cs->quota.esz, PG, "esz should shrink to one page, never below");

	/* far over target (3x): straight to the minimum */
	cs->quota.goals[0].current = 10;
	for (int k = 0; k < 5; k++, w++)
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
	cr_assert_gt(cs->quota.esz_bp, 10000, "under target again: esz_bp should grow");
	cs->quota.goals[0].current = 300;
	vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
	cr_assert(cs->quota.esz_bp == 10000 && cs->quota.esz == PG,
		  "score 30000 bp: expected esz_bp 10000 and esz one page, got %" PRIu64
		  ", %" PRIu64,
		  cs->quota.esz_bp, cs->quota.esz);
	rig_fini(&g);
}

Test(scheme_goals, esz_within_the_time_quota)
{
	struct rig g;
	/* ms 1, no sz, 0 / 100: doubling; the clock never moves: 4 MiB/ms */
	struct vr_scheme *cs = rig_goal(&g, 1, 0, 0);
	uint64_t bp = 10000;

	for (int w = 0; w < 30; w++) {
		bp *= 2;
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
		cr_assert_eq(cs->quota.esz, expect_esz(bp, 4 * MIB),
			     "window %d: expected esz %" PRIu64 ", got %" PRIu64, w,
			     expect_esz(bp, 4 * MIB), cs->quota.esz);
	}
	cr_assert_eq(cs->quota.esz, 4 * MIB, "esz should be capped by 4 MiB/ms * 1 ms");
	rig_fini(&g);
}

Test(scheme_goals, esz_within_the_measured_time_quota)
{
	struct rig g;
	/*
	 * ms 1, 2000 ns per page: throughput 4096e6 / 2000 = 2048000 B/ms
	 * after the first window, so esz <= 2048000 B (500 pages).
	 */
	struct vr_scheme *cs = rig_goal(&g, 1, 0, 0);
	uint64_t bp = 10000;

	g.act.cost_ns_per_page = 2000;
	for (int w = 0; w < 30; w++) {
		bp *= 2;
		vr_ctx_apply_schemes(g.ctx, MS(1000) * (uint64_t)w);
		uint64_t cap = w ? 2048000 : 4 * MIB;

		cr_assert_eq(cs->quota.esz, expect_esz(bp, cap),
			     "window %d: expected esz %" PRIu64 ", got %" PRIu64, w,
			     expect_esz(bp, cap), cs->quota.esz);
	}
	cr_assert_eq(cs->quota.esz, 2048000, "esz should be capped by the measured throughput");
	rig_fini(&g);
}

Test(scheme_goals, provider_metric_is_read_each_window)
{
	struct rig g;
	g_autoptr(vr_scheme) s = vr_scheme_new("psi", VR_ACTION_PAGEOUT);
	struct vr_scheme *cs;

	rig_unit(&g, 64);
	s->quota.sz = P(1000);
	s->quota.nr_goals = 1;
	s->quota.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 1000, 0 };
	cs = rig_set_scheme(&g, s);
	g.metric.value[VR_METRIC_GOAL] = 500; /* 500 / 1000: +50% */
	vr_ctx_apply_schemes(g.ctx, 0);
	cr_assert(g.metric.nr_calls[VR_METRIC_GOAL] == 1 &&
			  g.metric.last_metric[VR_METRIC_GOAL] == VR_GOAL_SOME_MEM_PSI_US,
		  "the window start should read some_mem_psi_us once as a goal metric");
	cr_assert(cs->quota.goals[0].current == 500 && cs->quota.esz_bp == 15000,
		  "expected current 500 and esz_bp 15000, got %" PRIu64 ", %" PRIu64,
		  cs->quota.goals[0].current, cs->quota.esz_bp);
	vr_ctx_apply_schemes(g.ctx, MS(500));
	cr_assert_eq(g.metric.nr_calls[VR_METRIC_GOAL], 1, "read once per window, not per pass");
	g.metric.fail = true; /* keeps the last value: +50% again */
	vr_ctx_apply_schemes(g.ctx, MS(1000));
	cr_assert(cs->quota.goals[0].current == 500 && cs->quota.esz_bp == 22500,
		  "a failed read should keep current 500: expected esz_bp 22500, got %" PRIu64
		  ", %" PRIu64,
		  cs->quota.goals[0].current, cs->quota.esz_bp);
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* Runtime updates                                                           */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_update, .description = "vr_ctx_set_schemes(): atomic, state kept by name");

static struct vr_scheme *find_scheme(struct rig *g, const char *name)
{
	for (guint i = 0; i < vr_ctx_nr_schemes(g->ctx); i++)
		if (!strcmp(vr_ctx_scheme(g->ctx, i)->name, name))
			return vr_ctx_scheme(g->ctx, i);
	return NULL;
}

/*
 * "a": pageout, sz quota 4p, watermarks 500/400/200 every 10 s (metric 300);
 * "b": stat. |A 4p|B 4p|C 4p|D 4p|, the actuator takes 1000 ns per page.
 * Two windows: "a" applies A, then B; its resume point is page 8.
 */
static void rig_update(struct rig *g)
{
	g_autoptr(vr_scheme) a = vr_scheme_new("a", VR_ACTION_PAGEOUT);
	g_autoptr(vr_scheme) b = vr_scheme_new("b", VR_ACTION_STAT);
	g_autoptr(GError) err = NULL;
	struct vr_scheme *list[] = { a, b };
	static const struct rs before[] = { R(0, 4, 0, 5), R(4, 8, 0, 5), R(8, 12, 0, 5),
					    R(12, 16, 0, 5) };

	rig_unit(g, 16);
	rig_load(g, 0, before, 4);
	g->act.cost_ns_per_page = 1000;
	a->quota.sz = P(4);
	a->wmarks = (struct vr_watermarks){ .metric = VR_WMARK_FREE_MEM_RATE,
					    .interval_us = 10000000,
					    .high = 500,
					    .mid = 400,
					    .low = 200 };
	rig_set_schemes(g, list, 2);
	g->metric.value[VR_METRIC_WMARK] = 300;
	cr_assert(vr_ctx_update_watermarks(g->ctx, 0, &err), "watermark update: %s",
		  err ? err->message : "?");
	cr_assert(vr_ctx_scheme_active(g->ctx, 0), "'a' should be active at 300");
	vr_ctx_apply_schemes(g->ctx, 0);
	vr_ctx_apply_schemes(g->ctx, MS(1000));
	g_array_set_size(g->act.calls, 0);
}

Test(scheme_update, same_name_keeps_state)
{
	struct rig g;
	g_autoptr(vr_scheme) a2 = vr_scheme_new("a", VR_ACTION_PAGEOUT);
	g_autoptr(vr_scheme) c = vr_scheme_new("c", VR_ACTION_STAT);
	struct vr_scheme *list[] = { a2, c };
	struct vr_scheme old;
	const struct vr_scheme *na, *nc;
	static const struct cs w3[] = { { 1, 8, 12 }, { 1, 12, 16 } };

	rig_update(&g);
	old = *find_scheme(&g, "a");
	cr_assert(old.stats.nr_tried == 2 && old.quota.total_charged_sz == P(4) &&
			  old.quota.total_charged_ns == 8000 && old.quota.charged_sz == P(4) &&
			  old.quota.resume_set && old.quota.resume_addr == P(8) &&
			  old.wmarks.activated && old.wmarks.checked,
		  "test bug: 'a' should have run two windows");

	/* new pattern and quota for "a"; "b" removed; "c" new, with junk state */
	a2->pattern.min_sz_bytes = P(2);
	a2->quota.sz = P(8);
	a2->quota.weight_age = 1;
	a2->wmarks = (struct vr_watermarks){ .metric = VR_WMARK_FREE_MEM_RATE,
					     .interval_us = 20000000,
					     .high = 600,
					     .mid = 400,
					     .low = 100 };
	c->stats = (struct vr_scheme_stats){ 7, 7, 7, 7, 7 };
	c->quota.charged_sz = 123;
	c->quota.resume_set = true;
	c->quota.total_charged_ns = 99;
	rig_set_schemes(&g, list, 2);

	cr_assert_eq(vr_ctx_nr_schemes(g.ctx), 2, "expected 2 schemes after the update");
	cr_assert_null(find_scheme(&g, "b"), "the removed scheme 'b' should be gone");
	na = vr_ctx_scheme(g.ctx, 0);
	nc = vr_ctx_scheme(g.ctx, 1);
	cr_assert_str_eq(na->name, "a", "the order of the new list should be kept");
	cr_assert_str_eq(nc->name, "c");
	cr_assert(na->pattern.min_sz_bytes == P(2) && na->quota.sz == P(8) &&
			  na->quota.weight_age == 1 && na->wmarks.high == 600 &&
			  na->wmarks.interval_us == 20000000,
		  "'a' should take the new user fields");
	cr_assert(!memcmp(&na->stats, &old.stats, sizeof(old.stats)),
		  "'a' should keep its stats (nr_tried %" PRIu64 " -> %" PRIu64 ")",
		  old.stats.nr_tried, na->stats.nr_tried);
	cr_assert(na->quota.charged_sz == old.quota.charged_sz &&
			  na->quota.charged_from_us == old.quota.charged_from_us &&
			  na->quota.total_charged_sz == old.quota.total_charged_sz &&
			  na->quota.total_charged_ns == old.quota.total_charged_ns,
		  "'a' should keep its charge state");
	cr_assert(na->quota.resume_set && na->quota.resume_target == 0 &&
			  na->quota.resume_addr == P(8),
		  "'a' should keep its resume point (page 8)");
	cr_assert(na->wmarks.activated == old.wmarks.activated &&
			  na->wmarks.checked == old.wmarks.checked &&
			  na->wmarks.next_check_us == old.wmarks.next_check_us,
		  "'a' should keep its watermark state");
	cr_assert(nc->stats.nr_tried == 0 && nc->stats.sz_tried == 0 && nc->stats.nr_applied == 0 &&
			  nc->stats.sz_applied == 0 && nc->stats.qt_exceeds == 0,
		  "new scheme 'c' should start with zero stats");
	cr_assert(nc->quota.charged_sz == 0 && !nc->quota.resume_set &&
			  nc->quota.total_charged_ns == 0 && nc->quota.total_charged_sz == 0,
		  "new scheme 'c' should start with a fresh quota state");

	/* the work goes on: window 3 of "a" (8p now) resumes at page 8 */
	vr_ctx_apply_schemes(g.ctx, MS(2000));
	assert_calls(&g, w3, 2, "window 3 after the update");
	cr_assert_eq(vr_ctx_scheme(g.ctx, 0)->stats.qt_exceeds, 2,
		     "windows 1 and 2 both used their 4p");

	/* "b" comes back: a new scheme, from zero */
	g_autoptr(vr_scheme) b = vr_scheme_new("b", VR_ACTION_STAT);
	struct vr_scheme *list2[] = { a2, b };

	rig_set_schemes(&g, list2, 2);
	cr_assert_eq(find_scheme(&g, "b")->stats.nr_tried, 0, "a re-added 'b' starts from zero");
	rig_fini(&g);
}

struct bad_list_case {
	char name[48];
	unsigned bad_index;
	enum mutation m; /* applied to the scheme at @bad_index, unless @dup */
	bool dup;	 /* @bad_index reuses the name of index 0 */
	char words[32];
};

static struct bad_list_case bad_lists[] = {
	{ "duplicate name", 1, M_NONE, true, "'x'" },
	{ "duplicate name at 2", 2, M_NONE, true, "'x'" },
	{ "invalid pattern at 1", 1, M_NR_MIN_GT_MAX, false, "nr_accesses" },
	{ "invalid quota at 2", 2, M_SZ_QUOTA_NO_RESET, false, "reset_interval" },
	{ "empty name at 0", 0, M_EMPTY_NAME, false, "name" },
	{ "invalid watermarks at 1", 1, M_WM_HIGH_LT_MID, false, "high|mid" },
};

ParameterizedTestParameters(scheme_update, invalid_list_changes_nothing)
{
	return cr_make_param_array(struct bad_list_case, bad_lists, ARRAY_LEN(bad_lists));
}

ParameterizedTest(struct bad_list_case *c, scheme_update, invalid_list_changes_nothing)
{
	struct rig g;
	g_autoptr(GError) err = NULL;
	struct vr_scheme *s[3];
	struct vr_scheme *before0, *before1;
	struct vr_scheme_stats stats0;
	const char *names[] = { "x", "y", "z" };

	rig_update(&g);
	before0 = vr_ctx_scheme(g.ctx, 0);
	before1 = vr_ctx_scheme(g.ctx, 1);
	stats0 = before0->stats;
	for (int i = 0; i < 3; i++)
		s[i] = vr_scheme_new(c->dup && (unsigned)i == c->bad_index ? "x" : names[i],
				     VR_ACTION_COLD);
	if (!c->dup)
		mutate(s[c->bad_index], c->m);

	cr_assert_not(vr_ctx_set_schemes(g.ctx, s, 3, &err), "%s: the list should be refused",
		      c->name);
	cr_assert(err && err->domain == VR_SCHEME_ERROR && err->code == VR_SCHEME_ERROR_INVALID,
		  "%s: expected VR_SCHEME_ERROR_INVALID, got %s", c->name,
		  err ? err->message : "no error");
	cr_assert(msg_names_number(err->message, c->bad_index),
		  "%s: the error should name index %u, got '%s'", c->name, c->bad_index,
		  err->message);
	cr_assert(msg_has_any(err->message, c->words), "%s: the error should name '%s', got '%s'",
		  c->name, c->words, err->message);
	cr_assert(vr_ctx_nr_schemes(g.ctx) == 2 && vr_ctx_scheme(g.ctx, 0) == before0 &&
			  vr_ctx_scheme(g.ctx, 1) == before1 &&
			  !memcmp(&before0->stats, &stats0, sizeof(stats0)) &&
			  !strcmp(before0->name, "a"),
		  "%s: a refused list should change nothing", c->name);
	for (int i = 0; i < 3; i++)
		vr_scheme_free(s[i]);
	rig_fini(&g);
}

Test(scheme_update, empty_list_removes_everything)
{
	struct rig g;

	rig_update(&g);
	rig_set_schemes(&g, NULL, 0);
	cr_assert_eq(vr_ctx_nr_schemes(g.ctx), 0);
	cr_assert_not(vr_ctx_monitoring_paused(g.ctx), "no scheme: monitoring is not paused");
	vr_ctx_apply_schemes(g.ctx, MS(5000));
	assert_calls(&g, NULL, 0, "no scheme");
	rig_fini(&g);
}

/* ------------------------------------------------------------------------- */
/* The whole engine                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(scheme_engine, .description = "schemes driven by vr_ctx_tick()");

Test(scheme_engine, reclaim_cold_memory_within_the_quota)
{
	struct rig g;
	struct vr_monitor_attrs attrs = small_attrs();
	g_autoptr(vr_scheme) s = vr_scheme_new("reclaim", VR_ACTION_PAGEOUT);
	const struct vr_scheme *cs;
	uint64_t window_from = UINT64_MAX, window_sum = 0, total = 0, nr_calls = 0;

	/*
	 * target [0, 64p), pages [0, 16p) accessed at every check.
	 * pageout idle (nr 0) regions at least 3 aggregations old (30 ms),
	 * sz quota 8p per 50 ms, age-only weights.
	 */
	rig_init(&g, &attrs);
	g.src.hot_start = 0;
	g.src.hot_end = P(16);
	rig_add_target(&g, 1, 0, 64);
	s->pattern.max_nr_accesses = 0;
	s->pattern.min_age_us = 30000;
	s->quota.sz = P(8);
	s->quota.reset_interval_ms = 50;
	s->quota.weight_age = 1;
	cs = rig_set_scheme(&g, s);
	rig_start(&g, 0);
	while (vr_ctx_next_tick_us(g.ctx) <= MS(1000)) {
		uint64_t now = step(&g, true);

		if (cs->quota.window_started && cs->quota.charged_from_us != window_from) {
			window_from = cs->quota.charged_from_us;
			window_sum = 0;
		}
		for (guint i = 0; i < g.act.calls->len; i++) {
			const struct act_call *c = &g_array_index(g.act.calls, struct act_call, i);

			cr_assert(c->action == VR_ACTION_PAGEOUT && c->target_id == 1);
			cr_assert_not(c->end <= P(16),
				      "at %" PRIu64 " us: pages [%" PRIu64 ", %" PRIu64
				      ") are accessed at every check and should never be paged out",
				      now, c->start / PG, c->end / PG);
			window_sum += c->end - c->start;
			total += c->end - c->start;
			nr_calls++;
		}
		g_array_set_size(g.act.calls, 0);
		cr_assert_leq(window_sum, P(8),
			      "at %" PRIu64 " us: the window from %" PRIu64 " us paged out %" PRIu64
			      " pages, more than its 8-page quota",
			      now, window_from, window_sum / PG);
	}
	cr_assert_eq(vr_ctx_nr_aggregations(g.ctx), 100, "1 s of 10 ms aggregations");
	cr_assert_gt(total, P(8), "idle memory should have been paged out, got %" PRIu64 " pages",
		     total / PG);
	assert_stats(cs, nr_calls, total, nr_calls, total, cs->stats.qt_exceeds, "after 1 s");
	cr_assert_gt(cs->stats.qt_exceeds, 0, "the 8-page quota should have been used up");
	rig_fini(&g);
}
