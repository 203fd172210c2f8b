/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAMOS: access-pattern-driven actions (SEMANTICS.md §2).
 *
 * A scheme is an access pattern, an action, a quota (with prioritization and
 * goals), watermarks and stats. The schemes of a monitoring context are
 * applied once per aggregation interval, to every region of every target,
 * after the merge and before listeners see the snapshot. Actions go through
 * an actuator (struct vr_actuator_ops); the time each application takes is
 * read from an injected clock (struct vr_clock); watermark metrics come from
 * a provider (struct vr_metric_ops). Pure: no I/O of its own.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "monitor.h"
#include "quota-budget.h"

#define VR_SCHEME_ERROR (vr_scheme_error_quark())
GQuark vr_scheme_error_quark(void);

/**
 * enum vr_scheme_error - error codes in the VR_SCHEME_ERROR domain.
 * @VR_SCHEME_ERROR_INVALID: a scheme field is out of range (the message names
 *	it, e.g. "schemes[1] 'cold': quota.reset_interval_ms = 0: ...").
 * @VR_SCHEME_ERROR_METRIC: the metric provider failed.
 */
enum vr_scheme_error {
	VR_SCHEME_ERROR_INVALID,
	VR_SCHEME_ERROR_METRIC,
};

/**
 * enum vr_action - what a scheme does to the regions it selects.
 * @VR_ACTION_PAGEOUT:	reclaim (page out) the region's memory.
 * @VR_ACTION_COLD:	deprioritize it (move to the inactive LRU).
 * @VR_ACTION_WILLNEED:	prefetch it.
 * @VR_ACTION_HUGEPAGE:	back it with huge pages.
 * @VR_ACTION_NOHUGEPAGE: back it with base pages.
 * @VR_ACTION_STAT:	only count it (no action, no age reset).
 */
enum vr_action {
	VR_ACTION_PAGEOUT,
	VR_ACTION_COLD,
	VR_ACTION_WILLNEED,
	VR_ACTION_HUGEPAGE,
	VR_ACTION_NOHUGEPAGE,
	VR_ACTION_STAT,
};
#define VR_NR_ACTIONS (VR_ACTION_STAT + 1)

/** vr_action_name() - "pageout", "cold", "willneed", "hugepage", "nohugepage", "stat". */
const char *vr_action_name(enum vr_action action);

/** vr_action_from_name() - parse a name of vr_action_name(); FALSE if unknown. */
gboolean vr_action_from_name(const char *name, enum vr_action *action);

/**
 * struct vr_access_pattern - which regions a scheme selects; every bound is
 * inclusive, in the units users speak.
 * @min_sz_bytes, @max_sz_bytes:	region size.
 * @min_nr_accesses, @max_nr_accesses:	accesses seen per aggregation
 *					interval (0..max_nr_accesses).
 * @min_age_us, @max_age_us:		age as time; the engine converts with
 *					age = age_us / aggr_interval_us
 *					(truncated) when it matches.
 */
struct vr_access_pattern {
	uint64_t min_sz_bytes;
	uint64_t max_sz_bytes;
	uint32_t min_nr_accesses;
	uint32_t max_nr_accesses;
	uint64_t min_age_us;
	uint64_t max_age_us;
};

/**
 * vr_access_pattern_match() - does @r match @p under @attrs?
 */
bool vr_access_pattern_match(const struct vr_access_pattern *p, const struct vr_region *r,
			     const struct vr_monitor_attrs *attrs);

/* The quota's types (struct vr_quota, its goals and charge basis) and its
 * arithmetic are in quota-budget.h; their names in text are here. */

/** vr_goal_metric_name() - "user_input", "some_mem_psi_us", "free_mem_rate",
 * "refault_bytes". */
const char *vr_goal_metric_name(enum vr_goal_metric metric);
gboolean vr_goal_metric_from_name(const char *name, enum vr_goal_metric *metric);

/** vr_charge_basis_name() - "resident", "size". */
const char *vr_charge_basis_name(enum vr_charge_basis basis);
gboolean vr_charge_basis_from_name(const char *name, enum vr_charge_basis *basis);

/**
 * enum vr_wmark_metric - what watermarks compare.
 * @VR_WMARK_NONE:	 no metric: the scheme is always active.
 * @VR_WMARK_FREE_MEM_RATE: free memory per thousand of total.
 */
enum vr_wmark_metric {
	VR_WMARK_NONE,
	VR_WMARK_FREE_MEM_RATE,
};

const char *vr_wmark_metric_name(enum vr_wmark_metric metric);
gboolean vr_wmark_metric_from_name(const char *name, enum vr_wmark_metric *metric);

/**
 * struct vr_watermarks - automatic activation of a scheme (SEMANTICS.md §2.3).
 * @metric:	 what is compared.
 * @interval_us: how often the metric is read, in us.
 * @high, @mid, @low: thresholds in the metric's unit, high >= mid >= low.
 *
 * metric > high or < low: deactivate; inactive and mid <= metric <= high:
 * stay inactive; otherwise activate.
 */
struct vr_watermarks {
	enum vr_wmark_metric metric;
	uint64_t interval_us;
	uint64_t high;
	uint64_t mid;
	uint64_t low;
	/* private: */
	bool activated;
	bool checked; /* the metric was read at least once */
	uint64_t next_check_us;
};

/**
 * vr_watermarks_next_state() - the watermark rule as a pure function: is the
 * scheme active after reading @metric_value, given it was @active?
 */
bool vr_watermarks_next_state(const struct vr_watermarks *w, bool active, uint64_t metric_value);

/**
 * enum vr_filter_type - what a scheme filter tests, page by page.
 * @VR_FILTER_ANON:	the page is anonymous (not page cache).
 * @VR_FILTER_YOUNG:	the page was accessed since it was last checked: its
 *			page table accessed bit, which the check clears (so a
 *			page passes a young filter once it has not been
 *			accessed for one whole period between two checks).
 *
 * DAMOS filters of the same names (Linux 6.3+, young 6.10+).
 */
enum vr_filter_type {
	VR_FILTER_ANON,
	VR_FILTER_YOUNG,
};

/** vr_filter_type_name() - "anon", "young". */
const char *vr_filter_type_name(enum vr_filter_type type);
gboolean vr_filter_type_from_name(const char *name, enum vr_filter_type *type);

/**
 * struct vr_scheme_filter - a page-level check under a scheme's region-level
 * choice: the regions the pattern selects are acted on page by page, and the
 * pages a filter takes out are left alone (DAMOS filters).
 * @type:	what is tested.
 * @matching:	true: the pages of @type are taken out (e.g. young pages are
 *		not paged out); false: the pages not of @type are.
 */
struct vr_scheme_filter {
	enum vr_filter_type type;
	bool matching;
};

#define VR_MAX_SCHEME_FILTERS 4

/**
 * vr_scheme_filters_pass() - is a page of the given kinds (@anon, @young) left
 * to the action by @nr @filters? It is when no filter takes it out. Pure.
 */
bool vr_scheme_filters_pass(const struct vr_scheme_filter *filters, guint nr, bool anon,
			    bool young);

/**
 * struct vr_scheme_stats - what a scheme did since it was created.
 * @nr_tried, @sz_tried:	regions and bytes the action was tried on.
 * @nr_applied, @sz_applied:	regions and bytes the actuator reported done.
 * @qt_exceeds:			windows that ended with the quota used up.
 */
struct vr_scheme_stats {
	uint64_t nr_tried;
	uint64_t sz_tried;
	uint64_t nr_applied;
	uint64_t sz_applied;
	uint64_t qt_exceeds;
};

/**
 * struct vr_scheme - one scheme.
 * @name:	unique within its context (runtime updates match by name);
 *		owned (g_free).
 * @pattern:	regions it selects.
 * @action:	what it does to them.
 * @quota:	speed limit and prioritization.
 * @wmarks:	automatic activation.
 * @filters, @nr_filters: page-level checks within the regions it selects,
 *		in order; none: every page of a selected region is acted on.
 * @stats:	counters (kept across runtime updates).
 */
struct vr_scheme {
	char *name;
	struct vr_access_pattern pattern;
	enum vr_action action;
	struct vr_quota quota;
	struct vr_watermarks wmarks;
	struct vr_scheme_filter filters[VR_MAX_SCHEME_FILTERS];
	guint nr_filters;
	struct vr_scheme_stats stats;
};

/**
 * vr_scheme_new() - a scheme named @name with @action, matching everything,
 * no quota, watermark metric none. Return: owned by the caller.
 */
struct vr_scheme *vr_scheme_new(const char *name, enum vr_action action);
struct vr_scheme *vr_scheme_copy(const struct vr_scheme *s);
void vr_scheme_free(struct vr_scheme *s);
typedef struct vr_scheme vr_scheme;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_scheme, vr_scheme_free)

/**
 * vr_scheme_validate() - check @s's user fields, naming the first bad one:
 * empty name, min > max in the pattern, a quota (ms or sz or goals) with
 * reset_interval_ms 0, a goal target of 0, watermarks with interval 0 or not
 * high >= mid >= low (when the metric is not none), more than
 * VR_MAX_SCHEME_FILTERS filters or an unknown filter type.
 */
gboolean vr_scheme_validate(const struct vr_scheme *s, GError **error);

/* ---- score functions (SEMANTICS.md §2.2) ---- */

#define VR_MAX_SCORE 99

/**
 * vr_hot_score() - hotness of @r in [0, 99] from its frequency and age with
 * @q's weights (integer arithmetic, truncating, as the specification says).
 */
uint32_t vr_hot_score(const struct vr_region *r, const struct vr_monitor_attrs *attrs,
		      const struct vr_quota *q);

/**
 * vr_cold_score() - 99 - vr_hot_score(): the pageout (and cold) priority.
 */
uint32_t vr_cold_score(const struct vr_region *r, const struct vr_monitor_attrs *attrs,
		       const struct vr_quota *q);

/**
 * vr_scheme_score() - the score of @r for @s's action: cold-first for
 * pageout and cold, hot-first for hugepage and willneed, 0 for the others.
 */
uint32_t vr_scheme_score(const struct vr_scheme *s, const struct vr_region *r,
			 const struct vr_monitor_attrs *attrs);

/**
 * vr_min_score() - the prioritization threshold: walking @hist (bytes per
 * score, VR_MAX_SCORE + 1 entries) from the highest score down, the first
 * score at which the accumulated bytes reach @esz, or 0.
 */
uint32_t vr_min_score(const uint64_t *hist, uint64_t esz);

/* ---- the engine's edges ---- */

/**
 * struct vr_clock - the injected clock for measuring action time.
 * @now_ns: monotonic time in ns.
 */
struct vr_clock {
	uint64_t (*now_ns)(void *data);
	void *data;
};

/**
 * struct vr_actuator_ops - where actions are carried out.
 * @name:	for logs, e.g. "sim", "agent", "host-pageout".
 * @apply:	apply @s's action to [@start, @end) of target @t, to the pages
 *		@s's filters leave to it (vr_scheme_filters_pass()); report the
 *		bytes actually done in @bytes_done (0..end-start). @s is
 *		borrowed for the call. FALSE with @error on failure (the engine
 *		logs nothing: it counts the region as tried and not applied,
 *		and goes on).
 * @resident:	optional; how much of [@start, @end) of @t an action could
 *		free: the resident bytes not yet paged out, in whole pages,
 *		counted from @start. Returns min(those bytes, @limit) and
 *		sets @stop to @end when the range holds @limit bytes or
 *		fewer, else to the end of the page that reached @limit.
 *		Quotas that charge VR_CHARGE_RESIDENT charge this; without
 *		it they charge the region's size.
 * @cleanup:	optional; releases @data when the context is freed.
 */
struct vr_actuator_ops {
	const char *name;
	gboolean (*apply)(void *data, const struct vr_target *t, const struct vr_scheme *s,
			  uint64_t start, uint64_t end, uint64_t *bytes_done, GError **error);
	uint64_t (*resident)(void *data, const struct vr_target *t, uint64_t start, uint64_t end,
			     uint64_t limit, uint64_t *stop);
	void (*cleanup)(void *data);
};

/**
 * struct vr_metric_ops - where watermark and goal metrics come from.
 * @get: the current value of @metric (a enum vr_wmark_metric or
 *	 enum vr_goal_metric value, per @kind) in its unit.
 */
enum vr_metric_kind {
	VR_METRIC_WMARK,
	VR_METRIC_GOAL,
};
struct vr_metric_ops {
	gboolean (*get)(void *data, enum vr_metric_kind kind, int metric, uint64_t *value,
			GError **error);
	void (*cleanup)(void *data);
};

/**
 * vr_ctx_set_actuator() - where @ctx's schemes act; @data released with
 * @ops->cleanup when replaced or when the context is freed.
 */
void vr_ctx_set_actuator(struct vr_ctx *ctx, const struct vr_actuator_ops *ops, void *data);

/**
 * vr_ctx_set_metrics() - where @ctx's watermarks and goals read metrics.
 * Without a provider, a watermark metric other than none fails the tick.
 */
void vr_ctx_set_metrics(struct vr_ctx *ctx, const struct vr_metric_ops *ops, void *data);

/**
 * vr_ctx_set_clock() - the clock that measures action time (default: a clock
 * that never moves, so only a set clock makes time quotas bite).
 */
void vr_ctx_set_clock(struct vr_ctx *ctx, const struct vr_clock *clock);

/**
 * vr_ctx_set_schemes() - validate @nr @schemes (copied) and make them the
 * context's schemes, atomically: on error nothing changes. A new scheme whose
 * name matches a current one keeps that one's stats, quota charge state,
 * resume point and watermark state (DAMON_RECLAIM's commit_inputs).
 * Names must be unique.
 */
gboolean vr_ctx_set_schemes(struct vr_ctx *ctx, struct vr_scheme *const *schemes, size_t nr,
			    GError **error);

guint vr_ctx_nr_schemes(const struct vr_ctx *ctx);

/**
 * vr_ctx_scheme() - the @i-th scheme, owned by @ctx (valid until the next
 * vr_ctx_set_schemes()).
 */
struct vr_scheme *vr_ctx_scheme(const struct vr_ctx *ctx, guint i);

/**
 * vr_ctx_scheme_active() - is the @i-th scheme active by its watermarks?
 */
bool vr_ctx_scheme_active(const struct vr_ctx *ctx, guint i);

/**
 * vr_ctx_monitoring_paused() - TRUE when the context has schemes and every
 * one is inactive: no access check runs until a watermark check
 * re-activates one.
 */
bool vr_ctx_monitoring_paused(const struct vr_ctx *ctx);

/**
 * vr_ctx_apply_schemes() - one apply pass at @now_us over the current
 * regions (called by the engine at every aggregation; exposed for tests).
 */
void vr_ctx_apply_schemes(struct vr_ctx *ctx, uint64_t now_us);
