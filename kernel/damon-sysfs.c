// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A kernel's DAMON through sysfs (damon-sysfs.h), the tree writer: a
 * policy turned into what is written (pure), the kdamond's contexts,
 * targets, schemes, quotas, goals, filters and watermarks written, commit,
 * on and off; who holds DAMON, and what the kernel offers (probing). What a
 * running kdamond reports (scheme stats, tried regions, its CPU time) is
 * read back by damon-sysfs-status.c.
 *
 * Facts of the kernel interface this file relies on (Linux 6.12):
 * - writing N to a nr_* file (re)creates the folders 0..N-1 below it with
 *   default values, so it comes before every file inside them;
 * - a new scheme's access_pattern minima and maxima are all 0: a maximum not
 *   written leaves the scheme matching nothing;
 * - writes to kdamonds/K/state are commands: "on", "off", "commit",
 *   "update_schemes_stats", "update_schemes_tried_regions",
 *   "clear_schemes_tried_regions"; reading it says "on" or "off";
 * - a sysfs kdamond and the DAMON_RECLAIM (or DAMON_LRU_SORT) module exclude
 *   each other: the loser's write fails with EBUSY.
 */
#define _POSIX_C_SOURCE 200809L

#include "damon-sysfs.h"

#include <string.h>
#include <unistd.h>

#include "damon-sysfs-private.h"
#include "kernel-file.h"

/* Tried regions of a stat scheme have no quota; the kernel ignores the reset
 * interval of a scheme without one. */
#define STAT_QUOTA_RESET_INTERVAL_MS 0

/* nr_kdamonds values above this are treated as garbage rather than walked. */
#define MAX_KDAMONDS 1024

/* ---- policy -> config (pure) ---- */

static struct vr_damon_scheme stat_scheme(const struct vr_scheme *first)
{
	struct vr_damon_scheme s = {
		.action = vr_action_name(VR_ACTION_STAT),
		.policy_index = -1,
		.sz_min_bytes = 0,
		.sz_max_bytes = VR_DAMON_SZ_UNBOUNDED,
		.nr_accesses_min = 0,
		.nr_accesses_max = VR_DAMON_NR_ACCESSES_UNBOUNDED,
		.age_min_aggrs = 0,
		.age_max_aggrs = VR_DAMON_AGE_UNBOUNDED,
		.quota_reset_interval_ms = STAT_QUOTA_RESET_INTERVAL_MS,
		.wmarks_metric = vr_wmark_metric_name(VR_WMARK_NONE),
	};

	if (first) {
		s.wmarks_metric = vr_wmark_metric_name(first->wmarks.metric);
		s.wmarks_interval_us = first->wmarks.interval_us;
		s.wmarks_high = first->wmarks.high;
		s.wmarks_mid = first->wmarks.mid;
		s.wmarks_low = first->wmarks.low;
	}
	return s;
}

static uint64_t age_to_aggrs(uint64_t age_us, uint64_t aggr_us)
{
	uint64_t aggrs = age_us / aggr_us;

	return MIN(aggrs, (uint64_t)VR_DAMON_AGE_UNBOUNDED);
}

/* One weight scaled by @largest -> VR_DAMON_WEIGHT_MAX_PERMIL. */
static uint32_t scale_weight(uint32_t w, uint32_t largest)
{
	uint64_t scaled;

	if (largest <= VR_DAMON_WEIGHT_MAX_PERMIL)
		return w;
	scaled = (uint64_t)w * VR_DAMON_WEIGHT_MAX_PERMIL / largest;
	return w && !scaled ? 1 : (uint32_t)scaled;
}

static gboolean convert_goals(const struct vr_scheme *ps, guint i, const struct vr_damon_caps *caps,
			      struct vr_damon_scheme *out, GError **error)
{
	for (guint g = 0; g < ps->quota.nr_goals && g < VR_MAX_QUOTA_GOALS; g++) {
		const struct vr_quota_goal *goal = &ps->quota.goals[g];
		const char *metric = vr_goal_metric_name(goal->metric);

		if (!caps->has_goals) {
			g_set_error(
				error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				"schemes[%u] '%s': quota.goals[%u] (%s): this kernel's DAMON has "
				"no quota goals (quotas/goals/, Linux 6.8 or later)",
				i, ps->name, g, metric);
			return FALSE;
		}
		switch (goal->metric) {
		case VR_GOAL_USER_INPUT:
			break;
		case VR_GOAL_REFAULT_BYTES:
			/* no kernel metric: user_input, fed by the agent */
			metric = vr_goal_metric_name(VR_GOAL_USER_INPUT);
			break;
		case VR_GOAL_SOME_MEM_PSI_US:
			if (caps->has_goal_metric)
				break;
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "schemes[%u] '%s': quota.goals[%u]: this kernel's DAMON has no "
				    "goal metric %s (goals/G/target_metric, Linux 6.9 or later); "
				    "it offers user_input only",
				    i, ps->name, g, metric);
			return FALSE;
		default:
			g_set_error(
				error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				"schemes[%u] '%s': quota.goals[%u]: DAMON has no goal metric %s "
				"(it offers user_input, refault_bytes%s)",
				i, ps->name, g, metric,
				caps->has_goal_metric ? ", some_mem_psi_us" : "");
			return FALSE;
		}
		out->goals[g] = (struct vr_damon_goal){
			.target_metric = metric,
			.target_value = goal->target,
			.current_value = goal->metric == VR_GOAL_REFAULT_BYTES ? 0 : goal->current,
			.refault_bytes = goal->metric == VR_GOAL_REFAULT_BYTES,
		};
		out->nr_goals = g + 1;
	}
	return TRUE;
}

static gboolean convert_filters(const struct vr_scheme *ps, guint i,
				const struct vr_damon_caps *caps, struct vr_damon_scheme *out,
				GError **error)
{
	if (ps->nr_filters > 0 && !caps->has_filters) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "schemes[%u] '%s': filters: this kernel's DAMON has no scheme filters "
			    "(schemes/S/filters/, Linux 6.3 or later)",
			    i, ps->name);
		return FALSE;
	}
	for (guint f = 0; f < ps->nr_filters && f < VR_MAX_SCHEME_FILTERS; f++)
		out->filters[f] = (struct vr_damon_filter){
			.type = vr_filter_type_name(ps->filters[f].type),
			.matching = ps->filters[f].matching,
		};
	out->nr_filters = MIN(ps->nr_filters, VR_MAX_SCHEME_FILTERS);
	return TRUE;
}

static gboolean convert_scheme(const struct vr_scheme *ps, guint i,
			       const struct vr_monitor_attrs *attrs,
			       const struct vr_damon_caps *caps, struct vr_damon_scheme *out,
			       GError **error)
{
	const struct vr_quota *q = &ps->quota;
	uint32_t largest = MAX(MAX(q->weight_sz, q->weight_nr_accesses), q->weight_age);
	g_autoptr(GError) local = NULL;

	if (!vr_scheme_validate(ps, &local)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "schemes[%u]: %s", i,
			    local->message);
		return FALSE;
	}
	*out = (struct vr_damon_scheme){
		.action = vr_action_name(ps->action),
		.policy_index = (int)i,
		.sz_min_bytes = ps->pattern.min_sz_bytes,
		.sz_max_bytes = ps->pattern.max_sz_bytes,
		.nr_accesses_min = ps->pattern.min_nr_accesses,
		.nr_accesses_max = MIN(ps->pattern.max_nr_accesses, VR_DAMON_NR_ACCESSES_UNBOUNDED),
		.age_min_aggrs = age_to_aggrs(ps->pattern.min_age_us, attrs->aggr_interval_us),
		.age_max_aggrs = age_to_aggrs(ps->pattern.max_age_us, attrs->aggr_interval_us),
		.quota_ms = q->ms,
		.quota_bytes = q->sz,
		.quota_reset_interval_ms = q->reset_interval_ms,
		.resident_quota_bytes = q->charge == VR_CHARGE_RESIDENT ? q->sz : 0,
		.weight_sz_permil = scale_weight(q->weight_sz, largest),
		.weight_nr_accesses_permil = scale_weight(q->weight_nr_accesses, largest),
		.weight_age_permil = scale_weight(q->weight_age, largest),
		.wmarks_metric = vr_wmark_metric_name(ps->wmarks.metric),
		.wmarks_interval_us = ps->wmarks.interval_us,
		.wmarks_high = ps->wmarks.high,
		.wmarks_mid = ps->wmarks.mid,
		.wmarks_low = ps->wmarks.low,
	};
	return convert_goals(ps, i, caps, out, error) && convert_filters(ps, i, caps, out, error);
}

static gint range_cmp(gconstpointer a, gconstpointer b)
{
	const struct vr_range *ra = a, *rb = b;

	return ra->start < rb->start ? -1 : ra->start > rb->start;
}

const char *vr_damon_ops_name(enum vr_damon_ops ops)
{
	return ops == VR_DAMON_OPS_VADDR ? "vaddr" : "paddr";
}

/* The config of @attrs over @ops' target, without schemes yet (an empty
 * array). paddr needs ranges; vaddr a pid. */
static struct vr_damon_config *config_base(const struct vr_monitor_attrs *attrs,
					   enum vr_damon_ops ops, int64_t pid,
					   const struct vr_range *ranges, size_t nr_ranges,
					   GError **error)
{
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GError) local = NULL;

	if (!vr_monitor_attrs_validate(attrs, &local)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "monitoring: %s",
			    local->message);
		return NULL;
	}
	if (ops == VR_DAMON_OPS_PADDR && nr_ranges == 0) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "no RAM range to monitor");
		return NULL;
	}
	if (ops == VR_DAMON_OPS_VADDR && pid <= 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "vaddr monitoring needs the pid of a process (got %" G_GINT64_FORMAT
			    ")",
			    (gint64)pid);
		return NULL;
	}
	if (nr_ranges > 0 &&
	    !vr_ranges_validate(ranges, nr_ranges, attrs->max_nr_regions, &local)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s ranges as DAMON target regions: %s",
			    ops == VR_DAMON_OPS_PADDR ? "RAM" : "address", local->message);
		return NULL;
	}

	cfg = g_new0(struct vr_damon_config, 1);
	cfg->ops = ops;
	cfg->pid_target = ops == VR_DAMON_OPS_VADDR ? pid : 0;
	cfg->sample_us = attrs->sample_interval_us;
	cfg->aggr_us = attrs->aggr_interval_us;
	cfg->update_us = attrs->ops_update_interval_us;
	cfg->min_nr_regions = attrs->min_nr_regions;
	cfg->max_nr_regions = attrs->max_nr_regions;
	cfg->regions = g_array_sized_new(FALSE, FALSE, sizeof(struct vr_range), (guint)nr_ranges);
	if (nr_ranges > 0)
		g_array_append_vals(cfg->regions, ranges, (guint)nr_ranges);
	g_array_sort(cfg->regions, range_cmp);
	cfg->schemes = g_array_new(FALSE, FALSE, sizeof(struct vr_damon_scheme));
	return g_steal_pointer(&cfg);
}

struct vr_damon_config *vr_damon_config_from_policy(const struct vr_policy *policy,
						    const struct vr_range *ranges, size_t nr_ranges,
						    const struct vr_damon_caps *caps,
						    GError **error)
{
	const struct vr_monitor_attrs *attrs = &policy->attrs;
	g_autoptr(vr_damon_config)
		cfg = config_base(attrs, VR_DAMON_OPS_PADDR, 0, ranges, nr_ranges, error);
	guint nr_schemes = policy->schemes ? policy->schemes->len : 0;
	struct vr_damon_scheme s;

	if (!cfg)
		return NULL;
	s = stat_scheme(nr_schemes ? g_ptr_array_index(policy->schemes, 0) : NULL);
	g_array_append_val(cfg->schemes, s);
	for (guint i = 0; i < nr_schemes; i++) {
		if (!convert_scheme(g_ptr_array_index(policy->schemes, i), i, attrs, caps, &s,
				    error))
			return NULL;
		g_array_append_val(cfg->schemes, s);
	}
	return g_steal_pointer(&cfg);
}

uint64_t vr_damon_resident_quota_bytes(uint64_t resident_bytes, uint64_t free_bytes)
{
	const uint64_t page = VR_PAGE_SIZE;
	const uint64_t max = resident_bytes > G_MAXUINT64 / VR_DAMON_RESIDENT_QUOTA_MAX_SCALE ?
				     G_MAXUINT64 :
				     resident_bytes * VR_DAMON_RESIDENT_QUOTA_MAX_SCALE;
	uint64_t want;

	if (resident_bytes == 0)
		return 0;
	want = free_bytes > G_MAXUINT64 - resident_bytes ? G_MAXUINT64 :
							   resident_bytes + free_bytes;
	if (want >= max)
		return max;
	return MAX(want / page * page, resident_bytes);
}

gboolean vr_damon_config_charge_resident(struct vr_damon_config *cfg, uint64_t free_bytes,
					 gboolean hold)
{
	gboolean moved = FALSE;

	for (guint i = 0; i < cfg->schemes->len; i++) {
		struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);
		uint64_t want, diff;

		if (!s->resident_quota_bytes)
			continue;
		want = hold ? s->resident_quota_bytes :
			      vr_damon_resident_quota_bytes(s->resident_quota_bytes, free_bytes);
		diff = want > s->quota_bytes ? want - s->quota_bytes : s->quota_bytes - want;
		if (diff > s->quota_bytes / 4)
			moved = TRUE;
		s->quota_bytes = want;
	}
	return moved;
}

gboolean vr_damon_config_over_budget(const struct vr_damon_config *cfg, uint64_t freed_bytes,
				     uint64_t elapsed_us)
{
	unsigned __int128 budget = 0;
	gboolean resident = FALSE;

	for (guint i = 0; i < cfg->schemes->len; i++) {
		const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);

		if (!s->resident_quota_bytes || !s->quota_reset_interval_ms)
			continue;
		resident = TRUE;
		budget += (unsigned __int128)s->resident_quota_bytes * elapsed_us /
			  ((unsigned __int128)s->quota_reset_interval_ms * 1000);
	}
	return resident && freed_bytes > budget;
}

gboolean vr_damon_config_has_refault_goals(const struct vr_damon_config *cfg)
{
	for (guint i = 0; i < cfg->schemes->len; i++) {
		const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);

		for (guint g = 0; g < s->nr_goals && g < VR_MAX_QUOTA_GOALS; g++)
			if (s->goals[g].refault_bytes)
				return TRUE;
	}
	return FALSE;
}

gboolean vr_damon_config_feed_refaults(struct vr_damon_config *cfg, uint64_t refault_bytes,
				       uint64_t elapsed_us)
{
	for (guint i = 0; elapsed_us && i < cfg->schemes->len; i++) {
		struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);
		unsigned __int128 per_window =
			(unsigned __int128)refault_bytes * s->quota_reset_interval_ms * 1000;

		for (guint g = 0; g < s->nr_goals && g < VR_MAX_QUOTA_GOALS; g++)
			if (s->goals[g].refault_bytes)
				s->goals[g].current_value =
					(uint64_t)MIN(per_window / elapsed_us, G_MAXUINT64);
	}
	return vr_damon_config_has_refault_goals(cfg);
}

struct vr_damon_config *vr_damon_config_new_monitor(const struct vr_monitor_attrs *attrs,
						    enum vr_damon_ops ops, int64_t pid,
						    const struct vr_range *ranges, size_t nr_ranges,
						    GError **error)
{
	g_autoptr(vr_damon_config) cfg = config_base(attrs, ops, pid, ranges, nr_ranges, error);
	struct vr_damon_scheme s;

	if (!cfg)
		return NULL;
	s = stat_scheme(NULL);
	g_array_append_val(cfg->schemes, s);
	return g_steal_pointer(&cfg);
}

struct vr_damon_config *vr_damon_config_copy(const struct vr_damon_config *cfg)
{
	struct vr_damon_config *c = g_memdup2(cfg, sizeof(*cfg));

	c->regions = g_array_copy(cfg->regions);
	c->schemes = g_array_copy(cfg->schemes);
	return c;
}

void vr_damon_config_free(struct vr_damon_config *cfg)
{
	if (!cfg)
		return;
	if (cfg->regions)
		g_array_unref(cfg->regions);
	if (cfg->schemes)
		g_array_unref(cfg->schemes);
	g_free(cfg);
}

/* ---- paths and small writes ---- */

/* <sysfs>/kernel/mm/damon/admin/<rest...>: owned. */
static char *admin_path(const struct vr_agent_paths *paths, const char *rest)
{
	return g_build_filename(paths->sysfs, VR_DAMON_ADMIN_DIR, rest, NULL);
}

static gboolean put_u64(const char *dir, const char *name, uint64_t value, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return vr_kfile_write_u64(path, value, error);
}

/**
 * put_pair() - write a lower and an upper bound (min/max, start/end) in an
 * order in which each write leaves lower <= upper: the upper one first when
 * the new lower one is above the current upper one (which a new folder has
 * at 0), else the lower one first. An unreadable upper file counts as 0.
 */
static gboolean put_pair(const char *dir, const char *lo_name, uint64_t lo, const char *hi_name,
			 uint64_t hi, GError **error)
{
	g_autofree char *hi_path = g_build_filename(dir, hi_name, NULL);
	uint64_t cur_hi = 0;

	if (!vr_kfile_read_u64(hi_path, &cur_hi, NULL))
		cur_hi = 0;
	if (lo > cur_hi)
		return put_u64(dir, hi_name, hi, error) && put_u64(dir, lo_name, lo, error);
	return put_u64(dir, lo_name, lo, error) && put_u64(dir, hi_name, hi, error);
}

/* ---- writing a configuration ---- */

static gboolean write_goals(const char *quotas, const struct vr_damon_scheme *s,
			    const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *goals = g_build_filename(quotas, "goals", NULL);

	if (!caps->has_goals)
		return TRUE;
	if (!put_u64(goals, "nr_goals", s->nr_goals, error))
		return FALSE;
	for (guint g = 0; g < s->nr_goals; g++) {
		g_autofree char *gdir = sub_index(goals, g);
		const struct vr_damon_goal *goal = &s->goals[g];

		if ((caps->has_goal_metric &&
		     !put(gdir, "target_metric", goal->target_metric, error)) ||
		    !put_u64(gdir, "target_value", goal->target_value, error) ||
		    !put_u64(gdir, "current_value", goal->current_value, error))
			return FALSE;
	}
	return TRUE;
}

static gboolean write_filters(const char *sdir, const struct vr_damon_scheme *s,
			      const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *filters = g_build_filename(sdir, "filters", NULL);

	if (!caps->has_filters)
		return TRUE;
	if (!put_u64(filters, "nr_filters", s->nr_filters, error))
		return FALSE;
	for (guint f = 0; f < s->nr_filters; f++) {
		g_autofree char *fdir = sub_index(filters, f);

		if (!put(fdir, "type", s->filters[f].type, error) ||
		    !put(fdir, "matching", s->filters[f].matching ? "Y" : "N", error))
			return FALSE;
	}
	return TRUE;
}

static gboolean write_scheme(const char *sdir, const struct vr_damon_scheme *s,
			     const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *sz = g_build_filename(sdir, "access_pattern", "sz", NULL);
	g_autofree char *nr = g_build_filename(sdir, "access_pattern", "nr_accesses", NULL);
	g_autofree char *age = g_build_filename(sdir, "access_pattern", "age", NULL);
	g_autofree char *quotas = g_build_filename(sdir, "quotas", NULL);
	g_autofree char *weights = g_build_filename(quotas, "weights", NULL);
	g_autofree char *wmarks = g_build_filename(sdir, "watermarks", NULL);

	return put(sdir, "action", s->action, error) &&
	       put_pair(sz, "min", s->sz_min_bytes, "max", s->sz_max_bytes, error) &&
	       put_pair(nr, "min", s->nr_accesses_min, "max", s->nr_accesses_max, error) &&
	       put_pair(age, "min", s->age_min_aggrs, "max", s->age_max_aggrs, error) &&
	       put_u64(quotas, "ms", s->quota_ms, error) &&
	       put_u64(quotas, "bytes", s->quota_bytes, error) &&
	       put_u64(quotas, "reset_interval_ms", s->quota_reset_interval_ms, error) &&
	       put_u64(weights, "sz_permil", s->weight_sz_permil, error) &&
	       put_u64(weights, "nr_accesses_permil", s->weight_nr_accesses_permil, error) &&
	       put_u64(weights, "age_permil", s->weight_age_permil, error) &&
	       write_goals(quotas, s, caps, error) &&
	       put(wmarks, "metric", s->wmarks_metric, error) &&
	       put_u64(wmarks, "interval_us", s->wmarks_interval_us, error) &&
	       put_u64(wmarks, "high", s->wmarks_high, error) &&
	       put_u64(wmarks, "mid", s->wmarks_mid, error) &&
	       put_u64(wmarks, "low", s->wmarks_low, error) && write_filters(sdir, s, caps, error);
}

/* Everything below kdamonds/0/contexts/0, nr_* files first. */
static gboolean write_context(const struct vr_agent_paths *paths, const struct vr_damon_config *cfg,
			      const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *ctx = kdamond_path(paths, 0, "contexts/0");
	g_autofree char *intervals = g_build_filename(ctx, "monitoring_attrs", "intervals", NULL);
	g_autofree char *nr_regions = g_build_filename(ctx, "monitoring_attrs", "nr_regions", NULL);
	g_autofree char *targets = g_build_filename(ctx, "targets", NULL);
	g_autofree char *target = g_build_filename(targets, "0", NULL);
	g_autofree char *regions = g_build_filename(target, "regions", NULL);
	g_autofree char *schemes = g_build_filename(ctx, "schemes", NULL);
	char pid[24];

	g_snprintf(pid, sizeof(pid), "%" G_GINT64_FORMAT, (gint64)cfg->pid_target);
	if (!put(ctx, "operations", vr_damon_ops_name(cfg->ops), error) ||
	    !put_u64(intervals, "sample_us", cfg->sample_us, error) ||
	    !put_u64(intervals, "aggr_us", cfg->aggr_us, error) ||
	    !put_u64(intervals, "update_us", cfg->update_us, error) ||
	    !put_pair(nr_regions, "min", cfg->min_nr_regions, "max", cfg->max_nr_regions, error) ||
	    !put_u64(targets, "nr_targets", 1, error) ||
	    (cfg->ops == VR_DAMON_OPS_VADDR && !put(target, "pid_target", pid, error)) ||
	    !put_u64(regions, "nr_regions", cfg->regions->len, error))
		return FALSE;
	for (guint i = 0; i < cfg->regions->len; i++) {
		const struct vr_range *r = &g_array_index(cfg->regions, struct vr_range, i);
		g_autofree char *rdir = sub_index(regions, i);

		if (!put_pair(rdir, "start", r->start, "end", r->end, error))
			return FALSE;
	}
	if (!put_u64(schemes, "nr_schemes", cfg->schemes->len, error))
		return FALSE;
	for (guint i = 0; i < cfg->schemes->len; i++) {
		g_autofree char *sdir = sub_index(schemes, i);

		if (!write_scheme(sdir, vr_damon_config_scheme(cfg, i), caps, error))
			return FALSE;
	}
	return TRUE;
}

gboolean vr_damon_sysfs_start(const struct vr_agent_paths *paths, const struct vr_damon_config *cfg,
			      const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *kdamonds = admin_path(paths, "kdamonds");
	g_autofree char *contexts = kdamond_path(paths, 0, "contexts");
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	g_autoptr(GError) cleanup = NULL;

	if (put_u64(kdamonds, "nr_kdamonds", 1, error) &&
	    put_u64(contexts, "nr_contexts", 1, error) && write_context(paths, cfg, caps, error) &&
	    put(kd, "state", "on", error))
		return TRUE;
	/* Nothing runs ("on" was refused or never written): drop the folders. */
	if (!vr_damon_sysfs_release(paths, &cleanup))
		g_debug("after a failed start: %s", cleanup->message);
	g_prefix_error(error, "cannot start DAMON (kdamond 0): ");
	return FALSE;
}

gboolean vr_damon_sysfs_commit(const struct vr_agent_paths *paths,
			       const struct vr_damon_config *cfg, const struct vr_damon_caps *caps,
			       GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);

	if (write_context(paths, cfg, caps, error) && put(kd, "state", "commit", error))
		return TRUE;
	g_prefix_error(error, "cannot update the running DAMON (kdamond 0 keeps its previous "
			      "configuration): ");
	return FALSE;
}

gboolean vr_damon_sysfs_commit_goals(const struct vr_agent_paths *paths,
				     const struct vr_damon_config *cfg,
				     const struct vr_damon_caps *caps, GError **error)
{
	g_autofree char *schemes = kdamond_path(paths, 0, "contexts/0/schemes");
	g_autofree char *kd = kdamond_path(paths, 0, NULL);

	for (guint i = 0; caps->has_goals && i < cfg->schemes->len; i++) {
		const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);
		g_autofree char *sdir = sub_index(schemes, i);
		g_autofree char *goals = g_build_filename(sdir, "quotas", "goals", NULL);

		for (guint g = 0; g < s->nr_goals; g++) {
			g_autofree char *gdir = sub_index(goals, g);

			if (!put_u64(gdir, "current_value", s->goals[g].current_value, error))
				goto failed;
		}
	}
	if (put(kd, "state", "commit_schemes_quota_goals", error))
		return TRUE;
failed:
	g_prefix_error(error, "cannot update the quota goals of the running DAMON: ");
	return FALSE;
}

gboolean vr_damon_sysfs_is_off(const struct vr_agent_paths *paths, gboolean *off, GError **error)
{
	g_autofree char *path = kdamond_path(paths, 0, "state");
	g_autofree char *state = read_trimmed(path, error);

	if (!state)
		return FALSE;
	*off = strcmp(state, "off") == 0;
	return TRUE;
}

gboolean vr_damon_sysfs_stop(const struct vr_agent_paths *paths, GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	gboolean off = FALSE;

	if (vr_damon_sysfs_is_off(paths, &off, NULL) && off)
		return TRUE;
	if (!put(kd, "state", "off", error)) {
		g_prefix_error(error, "cannot stop DAMON (kdamond 0): ");
		return FALSE;
	}
	return TRUE;
}

gboolean vr_damon_sysfs_release(const struct vr_agent_paths *paths, GError **error)
{
	g_autofree char *kdamonds = admin_path(paths, "kdamonds");

	return put_u64(kdamonds, "nr_kdamonds", 0, error);
}

/* ---- who holds DAMON ---- */

gboolean vr_damon_module_enabled(const struct vr_agent_paths *paths, const char *module)
{
	g_autofree char *path =
		g_build_filename(paths->sysfs, "module", module, "parameters", "enabled", NULL);
	g_autofree char *value = read_trimmed(path, NULL);

	return value && (value[0] == 'Y' || value[0] == 'y' || value[0] == '1');
}

static gboolean read_nr_kdamonds(const struct vr_agent_paths *paths, uint64_t *nr, GError **error)
{
	g_autofree char *path = admin_path(paths, "kdamonds/nr_kdamonds");

	if (!vr_kfile_read_u64(path, nr, error)) {
		g_prefix_error(error, "no usable DAMON sysfs interface: ");
		return FALSE;
	}
	*nr = MIN(*nr, (uint64_t)MAX_KDAMONDS);
	return TRUE;
}

gboolean vr_damon_sysfs_running_kdamond(const struct vr_agent_paths *paths, int *kdamond,
					GError **error)
{
	g_autofree char *nr_path = admin_path(paths, "kdamonds/nr_kdamonds");
	uint64_t nr = 0;

	*kdamond = -1;
	if (!g_file_test(nr_path, G_FILE_TEST_EXISTS))
		return TRUE;
	if (!read_nr_kdamonds(paths, &nr, error))
		return FALSE;
	for (guint k = 0; k < nr; k++) {
		g_autofree char *path = kdamond_path(paths, k, "state");
		g_autofree char *state = read_trimmed(path, error);

		if (!state)
			return FALSE;
		if (strcmp(state, "on") == 0) {
			*kdamond = (int)k;
			return TRUE;
		}
	}
	return TRUE;
}

static gboolean module_busy(const struct vr_agent_paths *paths, const char *module,
			    const char *label, GError **error)
{
	g_autofree char *path = NULL;

	if (!vr_damon_module_enabled(paths, module))
		return FALSE;
	path = g_build_filename(paths->sysfs, "module", module, "parameters", "enabled", NULL);
	g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_BUSY,
		    "DAMON is busy: the %s module is enabled (%s reads Y), and it excludes DAMON "
		    "sysfs kdamonds; disable it first (echo N > %s)",
		    label, path, path);
	return TRUE;
}

gboolean vr_damon_sysfs_check_free(const struct vr_agent_paths *paths, gboolean own_kdamond,
				   GError **error)
{
	g_autofree char *nr_path = admin_path(paths, "kdamonds/nr_kdamonds");
	uint64_t nr;

	if (module_busy(paths, "damon_reclaim", "DAMON_RECLAIM", error) ||
	    module_busy(paths, "damon_lru_sort", "DAMON_LRU_SORT", error))
		return FALSE;
	if (!g_file_test(nr_path, G_FILE_TEST_EXISTS)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no DAMON sysfs interface: %s does not exist", nr_path);
		return FALSE;
	}
	if (!read_nr_kdamonds(paths, &nr, error))
		return FALSE;
	for (guint k = 0; k < nr; k++) {
		g_autofree char *state_path = kdamond_path(paths, k, "state");
		g_autofree char *pid_path = kdamond_path(paths, k, "pid");
		g_autofree char *state = read_trimmed(state_path, error);
		g_autofree char *pid = NULL;

		if (!state)
			return FALSE;
		if (strcmp(state, "on") != 0 || (k == 0 && own_kdamond))
			continue;
		pid = read_trimmed(pid_path, NULL);
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_BUSY,
			    "DAMON is busy: kdamond %u (pid %s) is running and was not started by "
			    "this program; stop it first (echo off > %s)",
			    k, pid ? pid : "unknown", state_path);
		return FALSE;
	}
	return TRUE;
}

/* ---- probing ---- */

static gboolean has_word(const char *text, const char *word)
{
	g_auto(GStrv) words = g_strsplit_set(text, " \t\n", -1);

	for (char **w = words; *w; w++)
		if (strcmp(*w, word) == 0)
			return TRUE;
	return FALSE;
}

gboolean vr_damon_sysfs_probe(const struct vr_agent_paths *paths, GError **error)
{
	return vr_damon_sysfs_probe_ops(paths, VR_DAMON_OPS_PADDR, error);
}

gboolean vr_damon_sysfs_probe_ops(const struct vr_agent_paths *paths, enum vr_damon_ops ops,
				  GError **error)
{
	const char *name = vr_damon_ops_name(ops);
	g_autofree char *nr_path = admin_path(paths, "kdamonds/nr_kdamonds");
	g_autofree char *ops_path = kdamond_path(paths, 0, "contexts/0/avail_operations");
	g_autofree char *avail = NULL;

	if (!g_file_test(nr_path, G_FILE_TEST_EXISTS)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no DAMON sysfs interface: %s does not exist (needs a kernel with "
			    "CONFIG_DAMON_SYSFS, Linux 5.18 or later)",
			    nr_path);
		return FALSE;
	}
	if (!g_file_test(ops_path, G_FILE_TEST_EXISTS))
		return TRUE;
	avail = vr_kfile_read(ops_path, 4096, error);
	if (!avail)
		return FALSE;
	if (!has_word(avail, name)) {
		g_strstrip(avail);
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "this kernel's DAMON cannot monitor %s: %s lists no %s (it has '%s')",
			    ops == VR_DAMON_OPS_VADDR ? "a process's virtual memory" :
							"physical memory",
			    ops_path, name, avail);
		return FALSE;
	}
	return TRUE;
}

/* major * 1000 + minor of a release such as "6.12.9+deb12-cloud-amd64". */
static gboolean parse_release(const char *release, guint *version)
{
	guint64 major, minor;
	char *end;

	major = g_ascii_strtoull(release, &end, 10);
	if (end == release || *end != '.')
		return FALSE;
	release = end + 1;
	minor = g_ascii_strtoull(release, &end, 10);
	if (end == release || major > 1000 || minor > 999)
		return FALSE;
	*version = (guint)(major * 1000 + minor);
	return TRUE;
}

static gboolean exists(const char *dir, const char *rest)
{
	g_autofree char *path = g_build_filename(dir, rest, NULL);

	return g_file_test(path, G_FILE_TEST_EXISTS);
}

void vr_damon_sysfs_detect_caps(const struct vr_agent_paths *paths, struct vr_damon_caps *caps)
{
	g_autofree char *rel_path = g_build_filename(paths->procfs, "sys/kernel/osrelease", NULL);
	g_autofree char *release = read_trimmed(rel_path, NULL);
	g_autofree char *s0 = kdamond_path(paths, 0, "contexts/0/schemes/0");
	guint version;

	*caps = VR_DAMON_CAPS_6_12;
	if (release && parse_release(release, &version)) {
		caps->has_filters = version >= 6003;
		caps->has_goals = version >= 6008;
		caps->has_goal_metric = version >= 6009;
	}
	if (!exists(s0, "quotas"))
		return;
	/* A scheme folder exists: what it holds beats the release number. */
	caps->has_filters = exists(s0, "filters/nr_filters");
	caps->has_goals = exists(s0, "quotas/goals/nr_goals");
	if (!caps->has_goals)
		caps->has_goal_metric = false;
	else if (exists(s0, "quotas/goals/0"))
		caps->has_goal_metric = exists(s0, "quotas/goals/0/target_metric");
}
