/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAMOS: schemes, quotas, prioritization, watermarks and quota goals
 * (SEMANTICS.md §2).
 */
#include "scheme.h"

#include <string.h>

#include "ctx-private.h"
#include "quota-budget.h"

/* clang-format off */
G_DEFINE_QUARK(vr-scheme-error-quark, vr_scheme_error)
/* clang-format on */

static const char *const action_names[VR_NR_ACTIONS] = {
	[VR_ACTION_PAGEOUT] = "pageout",       [VR_ACTION_COLD] = "cold",
	[VR_ACTION_WILLNEED] = "willneed",     [VR_ACTION_HUGEPAGE] = "hugepage",
	[VR_ACTION_NOHUGEPAGE] = "nohugepage", [VR_ACTION_STAT] = "stat",
};

static const char *const goal_metric_names[] = {
	[VR_GOAL_USER_INPUT] = "user_input",
	[VR_GOAL_SOME_MEM_PSI_US] = "some_mem_psi_us",
	[VR_GOAL_FREE_MEM_RATE] = "free_mem_rate",
	[VR_GOAL_REFAULT_BYTES] = "refault_bytes",
};

static const char *const wmark_metric_names[] = {
	[VR_WMARK_NONE] = "none",
	[VR_WMARK_FREE_MEM_RATE] = "free_mem_rate",
};

static const char *const charge_basis_names[] = {
	[VR_CHARGE_RESIDENT] = "resident",
	[VR_CHARGE_SIZE] = "size",
};

static const char *const filter_type_names[] = {
	[VR_FILTER_ANON] = "anon",
	[VR_FILTER_YOUNG] = "young",
};

static gboolean name_lookup(const char *const *names, guint nr, const char *name, int *value)
{
	for (guint i = 0; i < nr; i++) {
		if (g_strcmp0(names[i], name) == 0) {
			*value = (int)i;
			return TRUE;
		}
	}
	return FALSE;
}

const char *vr_action_name(enum vr_action action)
{
	return (guint)action < G_N_ELEMENTS(action_names) ? action_names[action] : "unknown";
}

gboolean vr_action_from_name(const char *name, enum vr_action *action)
{
	int v;

	if (!name_lookup(action_names, G_N_ELEMENTS(action_names), name, &v))
		return FALSE;
	*action = (enum vr_action)v;
	return TRUE;
}

const char *vr_goal_metric_name(enum vr_goal_metric metric)
{
	return (guint)metric < G_N_ELEMENTS(goal_metric_names) ? goal_metric_names[metric] :
								 "unknown";
}

gboolean vr_goal_metric_from_name(const char *name, enum vr_goal_metric *metric)
{
	int v;

	if (!name_lookup(goal_metric_names, G_N_ELEMENTS(goal_metric_names), name, &v))
		return FALSE;
	*metric = (enum vr_goal_metric)v;
	return TRUE;
}

const char *vr_wmark_metric_name(enum vr_wmark_metric metric)
{
	return (guint)metric < G_N_ELEMENTS(wmark_metric_names) ? wmark_metric_names[metric] :
								  "unknown";
}

gboolean vr_wmark_metric_from_name(const char *name, enum vr_wmark_metric *metric)
{
	int v;

	if (!name_lookup(wmark_metric_names, G_N_ELEMENTS(wmark_metric_names), name, &v))
		return FALSE;
	*metric = (enum vr_wmark_metric)v;
	return TRUE;
}

const char *vr_charge_basis_name(enum vr_charge_basis basis)
{
	return (guint)basis < G_N_ELEMENTS(charge_basis_names) ? charge_basis_names[basis] :
								 "unknown";
}

gboolean vr_charge_basis_from_name(const char *name, enum vr_charge_basis *basis)
{
	int v;

	if (!name_lookup(charge_basis_names, G_N_ELEMENTS(charge_basis_names), name, &v))
		return FALSE;
	*basis = (enum vr_charge_basis)v;
	return TRUE;
}

const char *vr_filter_type_name(enum vr_filter_type type)
{
	return (guint)type < G_N_ELEMENTS(filter_type_names) ? filter_type_names[type] : "unknown";
}

gboolean vr_filter_type_from_name(const char *name, enum vr_filter_type *type)
{
	int v;

	if (!name_lookup(filter_type_names, G_N_ELEMENTS(filter_type_names), name, &v))
		return FALSE;
	*type = (enum vr_filter_type)v;
	return TRUE;
}

bool vr_scheme_filters_pass(const struct vr_scheme_filter *filters, guint nr, bool anon, bool young)
{
	for (guint i = 0; i < nr; i++) {
		bool is = filters[i].type == VR_FILTER_ANON ? anon : young;

		if (is == filters[i].matching)
			return false;
	}
	return true;
}

/* ---- patterns and scores ---- */

bool vr_access_pattern_match(const struct vr_access_pattern *p, const struct vr_region *r,
			     const struct vr_monitor_attrs *attrs)
{
	uint64_t sz = vr_region_size(r);

	return sz >= p->min_sz_bytes && sz <= p->max_sz_bytes &&
	       r->nr_accesses >= p->min_nr_accesses && r->nr_accesses <= p->max_nr_accesses &&
	       r->age >= p->min_age_us / attrs->aggr_interval_us &&
	       r->age <= p->max_age_us / attrs->aggr_interval_us;
}

/* Bit length of @x: 0 for 0, 1 for 1, 2 for 2..3, ... */
static int bit_length(uint64_t x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

uint32_t vr_hot_score(const struct vr_region *r, const struct vr_monitor_attrs *attrs,
		      const struct vr_quota *q)
{
	uint64_t max_nr = vr_monitor_attrs_max_nr_accesses(attrs);
	int64_t freq = (int64_t)(MIN(r->nr_accesses, max_nr) * 100 / max_nr);
	uint64_t age_s = (uint64_t)r->age * attrs->aggr_interval_us / 1000000;
	int64_t age_log = MIN(bit_length(age_s), 32);
	int64_t age_sub, hot;
	int64_t w_freq = q->weight_nr_accesses, w_age = q->weight_age;

	if (freq == 0)
		age_log = -age_log; /* old and unused: cold */
	age_sub = (age_log + 32) * 100 / 64;
	hot = w_freq + w_age ? (w_freq * freq + w_age * age_sub) / (w_freq + w_age) : 0;
	return (uint32_t)(hot * VR_MAX_SCORE / 100);
}

uint32_t vr_cold_score(const struct vr_region *r, const struct vr_monitor_attrs *attrs,
		       const struct vr_quota *q)
{
	return VR_MAX_SCORE - vr_hot_score(r, attrs, q);
}

uint32_t vr_scheme_score(const struct vr_scheme *s, const struct vr_region *r,
			 const struct vr_monitor_attrs *attrs)
{
	switch (s->action) {
	case VR_ACTION_PAGEOUT:
	case VR_ACTION_COLD:
		return vr_cold_score(r, attrs, &s->quota);
	case VR_ACTION_HUGEPAGE:
	case VR_ACTION_WILLNEED:
		return vr_hot_score(r, attrs, &s->quota);
	case VR_ACTION_NOHUGEPAGE:
	case VR_ACTION_STAT:
		break;
	}
	return 0;
}

uint32_t vr_min_score(const uint64_t *hist, uint64_t esz)
{
	uint64_t cumulated = 0;
	uint32_t score;

	for (score = VR_MAX_SCORE; score > 0; score--) {
		cumulated += hist[score];
		if (cumulated >= esz)
			break;
	}
	return score;
}

/* ---- schemes ---- */

bool vr_watermarks_next_state(const struct vr_watermarks *w, bool active, uint64_t value)
{
	if (w->metric == VR_WMARK_NONE)
		return true;
	if (value > w->high || value < w->low)
		return false;
	if (!active && value >= w->mid)
		return false;
	return true;
}

struct vr_scheme *vr_scheme_new(const char *name, enum vr_action action)
{
	struct vr_scheme *s = g_new0(struct vr_scheme, 1);

	s->name = g_strdup(name);
	s->action = action;
	s->pattern = (struct vr_access_pattern){
		.max_sz_bytes = G_MAXUINT64,
		.max_nr_accesses = G_MAXUINT32,
		.max_age_us = G_MAXUINT64,
	};
	s->quota.reset_interval_ms = 1000;
	s->wmarks = (struct vr_watermarks){ .metric = VR_WMARK_NONE, .activated = true };
	return s;
}

struct vr_scheme *vr_scheme_copy(const struct vr_scheme *s)
{
	struct vr_scheme *c = g_memdup2(s, sizeof(*s));

	c->name = g_strdup(s->name);
	return c;
}

void vr_scheme_free(struct vr_scheme *s)
{
	if (!s)
		return;
	g_free(s->name);
	g_free(s);
}

#define SCHEME_INVALID(error, s, ...)                                                              \
	(g_set_error(error, VR_SCHEME_ERROR, VR_SCHEME_ERROR_INVALID, __VA_ARGS__),                \
	 g_prefix_error(error, "scheme '%s': ", (s)->name ? (s)->name : ""), FALSE)

gboolean vr_scheme_validate(const struct vr_scheme *s, GError **error)
{
	const struct vr_access_pattern *p = &s->pattern;
	const struct vr_quota *q = &s->quota;
	const struct vr_watermarks *w = &s->wmarks;

	if (!s->name || !*s->name)
		return SCHEME_INVALID(error, s, "name: must not be empty");
	if ((guint)s->action >= VR_NR_ACTIONS)
		return SCHEME_INVALID(error, s, "action: unknown action %d", s->action);
	if (p->min_sz_bytes > p->max_sz_bytes)
		return SCHEME_INVALID(error, s,
				      "pattern.min_sz_bytes (%" G_GUINT64_FORMAT
				      ") is above pattern.max_sz_bytes (%" G_GUINT64_FORMAT ")",
				      p->min_sz_bytes, p->max_sz_bytes);
	if (p->min_nr_accesses > p->max_nr_accesses)
		return SCHEME_INVALID(
			error, s,
			"pattern.min_nr_accesses (%u) is above pattern.max_nr_accesses "
			"(%u)",
			p->min_nr_accesses, p->max_nr_accesses);
	if (p->min_age_us > p->max_age_us)
		return SCHEME_INVALID(error, s,
				      "pattern.min_age_us (%" G_GUINT64_FORMAT
				      ") is above pattern.max_age_us (%" G_GUINT64_FORMAT ")",
				      p->min_age_us, p->max_age_us);
	if (vr_quota_is_set(q) && q->reset_interval_ms == 0)
		return SCHEME_INVALID(
			error, s,
			"quota.reset_interval_ms = 0: must be at least 1 when a quota "
			"is set");
	if (q->nr_goals > VR_MAX_QUOTA_GOALS)
		return SCHEME_INVALID(error, s, "quota.goals: at most %d goals",
				      VR_MAX_QUOTA_GOALS);
	for (guint i = 0; i < q->nr_goals; i++) {
		if ((guint)q->goals[i].metric >= G_N_ELEMENTS(goal_metric_names))
			return SCHEME_INVALID(error, s, "quota.goals[%u].metric: unknown metric",
					      i);
		if (q->goals[i].target == 0)
			return SCHEME_INVALID(error, s,
					      "quota.goals[%u].target = 0: must be positive", i);
	}
	if ((guint)q->charge >= G_N_ELEMENTS(charge_basis_names))
		return SCHEME_INVALID(error, s, "quota.charge: unknown charge basis %d", q->charge);
	if (s->nr_filters > VR_MAX_SCHEME_FILTERS)
		return SCHEME_INVALID(error, s, "filters: at most %d filters",
				      VR_MAX_SCHEME_FILTERS);
	for (guint i = 0; i < s->nr_filters; i++)
		if ((guint)s->filters[i].type >= G_N_ELEMENTS(filter_type_names))
			return SCHEME_INVALID(error, s, "filters[%u].type: unknown filter type %d",
					      i, s->filters[i].type);
	if ((guint)w->metric >= G_N_ELEMENTS(wmark_metric_names))
		return SCHEME_INVALID(error, s, "watermarks.metric: unknown metric");
	if (w->metric != VR_WMARK_NONE) {
		if (w->interval_us == 0)
			return SCHEME_INVALID(error, s,
					      "watermarks.interval_us = 0: must be at least 1");
		if (!(w->high >= w->mid && w->mid >= w->low))
			return SCHEME_INVALID(
				error, s,
				"watermarks: need high >= mid >= low (got %" G_GUINT64_FORMAT
				", %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ")",
				w->high, w->mid, w->low);
	}
	return TRUE;
}

/* ---- the context's schemes ---- */

static void release_actuator(struct vr_ctx *ctx)
{
	if (ctx->actuator && ctx->actuator->cleanup)
		ctx->actuator->cleanup(ctx->actuator_data);
	ctx->actuator = NULL;
	ctx->actuator_data = NULL;
}

static void release_metrics(struct vr_ctx *ctx)
{
	if (ctx->metrics && ctx->metrics->cleanup)
		ctx->metrics->cleanup(ctx->metrics_data);
	ctx->metrics = NULL;
	ctx->metrics_data = NULL;
}

void vr_ctx_free_schemes(struct vr_ctx *ctx)
{
	release_actuator(ctx);
	release_metrics(ctx);
	g_ptr_array_unref(ctx->schemes);
}

void vr_ctx_set_actuator(struct vr_ctx *ctx, const struct vr_actuator_ops *ops, void *data)
{
	release_actuator(ctx);
	ctx->actuator = ops;
	ctx->actuator_data = data;
}

void vr_ctx_set_metrics(struct vr_ctx *ctx, const struct vr_metric_ops *ops, void *data)
{
	release_metrics(ctx);
	ctx->metrics = ops;
	ctx->metrics_data = data;
}

void vr_ctx_set_clock(struct vr_ctx *ctx, const struct vr_clock *clock)
{
	ctx->clock = *clock;
}

guint vr_ctx_nr_schemes(const struct vr_ctx *ctx)
{
	return ctx->schemes->len;
}

struct vr_scheme *vr_ctx_scheme(const struct vr_ctx *ctx, guint i)
{
	return g_ptr_array_index(ctx->schemes, i);
}

static struct vr_scheme *scheme_by_name(const struct vr_ctx *ctx, const char *name)
{
	for (guint i = 0; i < ctx->schemes->len; i++)
		if (g_strcmp0(vr_ctx_scheme(ctx, i)->name, name) == 0)
			return vr_ctx_scheme(ctx, i);
	return NULL;
}

/* Carries what a scheme learnt and did over to its new version. */
static void inherit_state(struct vr_scheme *s, const struct vr_scheme *old)
{
	struct vr_quota *q = &s->quota;
	const struct vr_quota *oq = &old->quota;

	s->stats = old->stats;
	q->total_charged_sz = oq->total_charged_sz;
	q->total_charged_ns = oq->total_charged_ns;
	q->esz = oq->esz;
	q->esz_bp = oq->esz_bp;
	q->charged_sz = oq->charged_sz;
	q->charged_from_us = oq->charged_from_us;
	q->window_started = oq->window_started;
	q->resume_set = oq->resume_set;
	q->resume_target = oq->resume_target;
	q->resume_addr = oq->resume_addr;
	q->min_score = oq->min_score;
	s->wmarks.activated = old->wmarks.activated;
	s->wmarks.checked = old->wmarks.checked;
	s->wmarks.next_check_us = old->wmarks.next_check_us;
}

gboolean vr_ctx_set_schemes(struct vr_ctx *ctx, struct vr_scheme *const *schemes, size_t nr,
			    GError **error)
{
	g_autoptr(GPtrArray) next = NULL;

	for (size_t i = 0; i < nr; i++) {
		if (!vr_scheme_validate(schemes[i], error)) {
			g_prefix_error(error, "schemes[%zu]: ", i);
			return FALSE;
		}
		for (size_t j = 0; j < i; j++) {
			if (g_strcmp0(schemes[i]->name, schemes[j]->name) == 0) {
				g_set_error(
					error, VR_SCHEME_ERROR, VR_SCHEME_ERROR_INVALID,
					"schemes[%zu]: name '%s' is already used by schemes[%zu]",
					i, schemes[i]->name, j);
				return FALSE;
			}
		}
	}
	next = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	for (size_t i = 0; i < nr; i++) {
		struct vr_scheme *s = vr_scheme_copy(schemes[i]);
		const struct vr_scheme *old = scheme_by_name(ctx, s->name);

		if (old) {
			inherit_state(s, old);
		} else {
			/* a new scheme: fresh state whatever the caller's copy held */
			memset(&s->stats, 0, sizeof(s->stats));
			inherit_state(s, &(struct vr_scheme){
						 .wmarks = { .activated = s->wmarks.metric ==
									  VR_WMARK_NONE },
					 });
		}
		g_ptr_array_add(next, s);
	}
	g_ptr_array_unref(ctx->schemes);
	ctx->schemes = g_steal_pointer(&next);
	return TRUE;
}

bool vr_ctx_scheme_active(const struct vr_ctx *ctx, guint i)
{
	const struct vr_scheme *s = vr_ctx_scheme(ctx, i);

	return s->wmarks.metric == VR_WMARK_NONE || s->wmarks.activated;
}

bool vr_ctx_monitoring_paused(const struct vr_ctx *ctx)
{
	if (!ctx->schemes->len)
		return false;
	for (guint i = 0; i < ctx->schemes->len; i++)
		if (vr_ctx_scheme_active(ctx, i))
			return false;
	return true;
}

static gboolean read_metric(struct vr_ctx *ctx, enum vr_metric_kind kind, int metric,
			    const char *name, uint64_t *value, GError **error)
{
	if (!ctx->metrics || !ctx->metrics->get) {
		g_set_error(error, VR_SCHEME_ERROR, VR_SCHEME_ERROR_METRIC,
			    "no metric provider for %s", name);
		return FALSE;
	}
	if (!ctx->metrics->get(ctx->metrics_data, kind, metric, value, error)) {
		g_prefix_error(error, "reading %s: ", name);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_ctx_update_watermarks(struct vr_ctx *ctx, uint64_t now_us, GError **error)
{
	gboolean ok = TRUE;

	for (guint i = 0; i < ctx->schemes->len; i++) {
		struct vr_scheme *s = vr_ctx_scheme(ctx, i);
		struct vr_watermarks *w = &s->wmarks;
		g_autoptr(GError) local = NULL;
		uint64_t value;

		if (w->metric == VR_WMARK_NONE || (w->checked && now_us < w->next_check_us))
			continue;
		w->next_check_us = now_us + w->interval_us;
		w->checked = true;
		if (!read_metric(ctx, VR_METRIC_WMARK, w->metric, vr_wmark_metric_name(w->metric),
				 &value, &local)) {
			/* keep the state; report the first failure */
			if (ok)
				g_propagate_prefixed_error(error, g_steal_pointer(&local),
							   "scheme '%s': watermarks: ", s->name);
			ok = FALSE;
			continue;
		}
		w->activated = vr_watermarks_next_state(w, w->activated, value);
	}
	return ok;
}

uint64_t vr_ctx_next_watermark_check_us(const struct vr_ctx *ctx)
{
	uint64_t next = G_MAXUINT64;

	for (guint i = 0; i < ctx->schemes->len; i++) {
		const struct vr_watermarks *w = &vr_ctx_scheme(ctx, i)->wmarks;

		if (w->metric != VR_WMARK_NONE)
			next = MIN(next, w->next_check_us);
	}
	return next;
}

/* ---- quotas ---- */

/* Reads the current values of @q's measured goals from the metric provider;
 * a failed read keeps the last value. */
static void read_goal_metrics(struct vr_ctx *ctx, struct vr_quota *q)
{
	for (guint i = 0; i < q->nr_goals; i++) {
		struct vr_quota_goal *g = &q->goals[i];
		uint64_t value;

		if (g->metric != VR_GOAL_USER_INPUT &&
		    read_metric(ctx, VR_METRIC_GOAL, g->metric, vr_goal_metric_name(g->metric),
				&value, NULL))
			g->current = value;
	}
}

/* Opens a new charge window when the current one is over (the arithmetic
 * is quota-budget.c's, shared with the guest agent's memcg backend). */
static void adjust_quota(struct vr_ctx *ctx, struct vr_scheme *s, uint64_t now_us)
{
	struct vr_quota *q = &s->quota;

	if (!vr_quota_window_due(q, now_us))
		return;
	read_goal_metrics(ctx, q);
	if (vr_quota_window_start(q, now_us))
		s->stats.qt_exceeds++;
}

/*
 * What acting on @r (of @t) charges @s's quota, at most @limit bytes (whole
 * pages, > 0): its resident bytes when the quota charges VR_CHARGE_RESIDENT
 * and the actuator can count them, its size otherwise. @stop gets where the
 * charge ends: @r's end when the whole region fits in @limit.
 */
static uint64_t region_charge(const struct vr_ctx *ctx, const struct vr_scheme *s,
			      const struct vr_target *t, const struct vr_region *r, uint64_t limit,
			      uint64_t *stop)
{
	uint64_t sz = vr_region_size(r);

	if (s->quota.charge == VR_CHARGE_RESIDENT && ctx->actuator && ctx->actuator->resident) {
		uint64_t charge = ctx->actuator->resident(ctx->actuator_data, t, r->start, r->end,
							  limit, stop);

		*stop = CLAMP(*stop / VR_PAGE_SIZE * VR_PAGE_SIZE, r->start, r->end);
		return MIN(charge, MIN(limit, sz));
	}
	*stop = sz > limit ? r->start + limit : r->end;
	return MIN(sz, limit);
}

/* Sets @s's min_score for this pass from the score histogram, each region
 * weighted by what acting on it would charge. */
static void prioritize(struct vr_ctx *ctx, struct vr_scheme *s)
{
	uint64_t hist[VR_MAX_SCORE + 1] = { 0 };

	for (guint i = 0; i < ctx->targets->len; i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < vr_target_nr_regions(t); j++) {
			const struct vr_region *r = vr_target_region(t, j);
			uint64_t stop;

			if (vr_access_pattern_match(&s->pattern, r, &ctx->attrs))
				hist[vr_scheme_score(s, r, &ctx->attrs)] +=
					region_charge(ctx, s, t, r, G_MAXUINT64, &stop);
		}
	}
	s->quota.min_score = vr_min_score(hist, s->quota.esz);
}

static uint64_t clock_now_ns(const struct vr_ctx *ctx)
{
	return ctx->clock.now_ns ? ctx->clock.now_ns(ctx->clock.data) : 0;
}

/* Applies @s to the @j-th region of target @i. Returns FALSE when the pass
 * of @s must stop (its quota is used up). */
static bool apply_region(struct vr_ctx *ctx, struct vr_scheme *s, guint i, guint j)
{
	struct vr_target *t = vr_ctx_target(ctx, i);
	struct vr_quota *q = &s->quota;
	bool limited = vr_quota_is_set(q);
	struct vr_region *r = vr_target_region(t, j);
	uint64_t sz, charge = 0, done = 0, begin_ns;

	if (!vr_access_pattern_match(&s->pattern, r, &ctx->attrs))
		return true;
	if (limited && vr_scheme_score(s, r, &ctx->attrs) < q->min_score)
		return true;
	if (limited) {
		uint64_t limit = vr_quota_budget_left(q) / VR_PAGE_SIZE * VR_PAGE_SIZE, stop;

		if (limit == 0)
			return false; /* less than a page left in this window */
		charge = region_charge(ctx, s, t, r, limit, &stop);
		if (stop < r->end) { /* the window ends inside the region: act up to there */
			if (stop == r->start)
				return false;
			vr_target_split_region_at(t, j, stop - r->start);
			r = vr_target_region(t, j);
		}
	}
	sz = vr_region_size(r);
	s->stats.nr_tried++;
	s->stats.sz_tried += sz;
	begin_ns = clock_now_ns(ctx);
	if (s->action != VR_ACTION_STAT && ctx->actuator &&
	    ctx->actuator->apply(ctx->actuator_data, t, s, r->start, r->end, &done, NULL)) {
		done = MIN(done, sz);
		s->stats.nr_applied += done > 0;
		s->stats.sz_applied += done;
	}
	if (s->action != VR_ACTION_STAT)
		r->age = 0;
	if (!limited)
		return true;
	vr_quota_charge(q, charge, clock_now_ns(ctx) - begin_ns);
	if (q->charged_sz < q->esz)
		return true;
	q->resume_set = true;
	q->resume_target = i;
	q->resume_addr = r->end;
	return false;
}

/*
 * Skips what was done before the resume point: returns FALSE for a region
 * wholly before it; splits one that straddles it (the walk goes on with the
 * right part, at the same index + 1, which the caller reaches next).
 */
static bool past_resume_point(struct vr_quota *q, struct vr_target *t, guint i, guint j)
{
	struct vr_region *r = vr_target_region(t, j);

	if (!q->resume_set)
		return true;
	if (i < q->resume_target || (i == q->resume_target && r->end <= q->resume_addr))
		return false;
	if (i == q->resume_target && r->start < q->resume_addr) {
		vr_target_split_region_at(t, j, q->resume_addr - r->start);
		q->resume_set = false;
		return false;
	}
	q->resume_set = false;
	return true;
}

/* Does any region lie at or after @q's resume point? If not (its target is
 * gone, or it is the end of the last region) the walk starts over at once. */
static bool resume_point_ahead(const struct vr_ctx *ctx, const struct vr_quota *q)
{
	for (guint i = q->resume_target; i < ctx->targets->len; i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);
		guint nr = vr_target_nr_regions(t);

		if (nr &&
		    (i > q->resume_target || vr_target_region(t, nr - 1)->end > q->resume_addr))
			return true;
	}
	return false;
}

static void apply_scheme(struct vr_ctx *ctx, struct vr_scheme *s, uint64_t now_us)
{
	struct vr_quota *q = &s->quota;

	if (vr_quota_is_set(q)) {
		adjust_quota(ctx, s, now_us);
		if (q->charged_sz >= q->esz)
			return;
		prioritize(ctx, s);
	}
	if (!vr_quota_is_set(q) || !resume_point_ahead(ctx, q))
		q->resume_set = false; /* no window to continue, or nothing after it */
	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < vr_target_nr_regions(t); j++) {
			if (!past_resume_point(q, t, i, j))
				continue;
			if (!apply_region(ctx, s, i, j))
				return;
		}
	}
	q->resume_set = false;
}

void vr_ctx_apply_schemes(struct vr_ctx *ctx, uint64_t now_us)
{
	for (guint k = 0; k < ctx->schemes->len; k++)
		if (vr_ctx_scheme_active(ctx, k))
			apply_scheme(ctx, vr_ctx_scheme(ctx, k), now_us);
}
