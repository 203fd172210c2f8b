// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A kernel's DAMON through sysfs: see damon-sysfs.h.
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
	const uint64_t page = 4096;
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

/* kdamonds/<k>/<rest> under the admin folder: owned. */
static char *kdamond_path(const struct vr_agent_paths *paths, guint k, const char *rest)
{
	char num[16];

	g_snprintf(num, sizeof(num), "%u", k);
	return g_build_filename(paths->sysfs, VR_DAMON_ADMIN_DIR, "kdamonds", num, rest, NULL);
}

/* @dir/<i>: owned. */
static char *sub_index(const char *dir, guint i)
{
	char num[16];

	g_snprintf(num, sizeof(num), "%u", i);
	return g_build_filename(dir, num, NULL);
}

static gboolean put(const char *dir, const char *name, const char *value, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return vr_kfile_write(path, value, error);
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

static char *read_trimmed(const char *path, GError **error)
{
	char *line = vr_kfile_read_line(path, error);

	return line ? g_strstrip(line) : NULL;
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

/* ---- reading back ---- */

static gboolean get_u64(const char *dir, const char *name, uint64_t *out, GError **error)
{
	g_autofree char *path = g_build_filename(dir, name, NULL);

	return vr_kfile_read_u64(path, out, error);
}

gboolean vr_damon_sysfs_read_stats(const struct vr_agent_paths *paths, struct vr_scheme_stats *out,
				   guint nr, GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	g_autofree char *schemes = kdamond_path(paths, 0, "contexts/0/schemes");

	if (!put(kd, "state", "update_schemes_stats", error)) {
		g_prefix_error(error, "cannot read DAMON scheme stats: ");
		return FALSE;
	}
	for (guint i = 0; i < nr; i++) {
		g_autofree char *sdir = sub_index(schemes, i);
		g_autofree char *stats = g_build_filename(sdir, "stats", NULL);
		struct vr_scheme_stats st = { 0 };

		if (!get_u64(stats, "nr_tried", &st.nr_tried, error) ||
		    !get_u64(stats, "sz_tried", &st.sz_tried, error) ||
		    !get_u64(stats, "nr_applied", &st.nr_applied, error) ||
		    !get_u64(stats, "sz_applied", &st.sz_applied, error) ||
		    !get_u64(stats, "qt_exceeds", &st.qt_exceeds, error))
			return FALSE;
		out[i] = st;
	}
	return TRUE;
}

/* A tried region and the folder it came from (for messages). */
struct tried_region {
	struct vr_agent_region r;
	uint64_t dir_index;
};

static gint tried_cmp(gconstpointer a, gconstpointer b)
{
	const struct tried_region *ta = a, *tb = b;

	return ta->r.start < tb->r.start ? -1 : ta->r.start > tb->r.start;
}

static gboolean read_one_tried(const char *rdir, uint64_t index, struct tried_region *out,
			       GError **error)
{
	uint64_t start, end, nr_accesses, age;

	if (!get_u64(rdir, "start", &start, error) || !get_u64(rdir, "end", &end, error) ||
	    !get_u64(rdir, "nr_accesses", &nr_accesses, error) ||
	    !get_u64(rdir, "age", &age, error))
		return FALSE;
	if (start >= end) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s: empty region: start %" G_GUINT64_FORMAT
			    " >= end %" G_GUINT64_FORMAT,
			    rdir, (guint64)start, (guint64)end);
		return FALSE;
	}
	if (nr_accesses > G_MAXUINT32 || age > G_MAXUINT32) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s: nr_accesses %" G_GUINT64_FORMAT " or age %" G_GUINT64_FORMAT
			    " is out of the kernel's range",
			    rdir, (guint64)nr_accesses, (guint64)age);
		return FALSE;
	}
	*out = (struct tried_region){
		.r = { .start = start,
		       .end = end,
		       .nr_accesses = (uint32_t)nr_accesses,
		       .age = (uint32_t)age },
		.dir_index = index,
	};
	return TRUE;
}

/* The numbered folders of @dir into @regions (struct tried_region), sorted. */
static gboolean read_tried_dir(const char *dir, GArray *regions, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autoptr(GDir) d = g_dir_open(dir, 0, &local);
	const char *name;

	if (!d) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot list %s: %s", dir,
			    local->message);
		return FALSE;
	}
	while ((name = g_dir_read_name(d))) {
		g_autofree char *rdir = NULL;
		struct tried_region t;
		guint64 index;

		if (!g_ascii_string_to_unsigned(name, 10, 0, G_MAXUINT32, &index, NULL))
			continue; /* total_bytes */
		if (regions->len >= VR_DAMON_MAX_TRIED_REGIONS) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "%s holds more than %u regions", dir,
				    VR_DAMON_MAX_TRIED_REGIONS);
			return FALSE;
		}
		rdir = g_build_filename(dir, name, NULL);
		if (!read_one_tried(rdir, index, &t, error))
			return FALSE;
		g_array_append_val(regions, t);
	}
	g_array_sort(regions, tried_cmp);
	/*
	 * A listing made while the kdamond splits and merges regions (a policy
	 * commit, an ops update) can hold a region twice, in two shapes (seen
	 * on 6.12). The kernel is not lying: the part already listed wins, the
	 * rest of the later region stays.
	 */
	for (guint i = 1; i < regions->len;) {
		const struct tried_region *a = &g_array_index(regions, struct tried_region, i - 1);
		struct tried_region *b = &g_array_index(regions, struct tried_region, i);

		if (b->r.start >= a->r.end) {
			i++;
			continue;
		}
		g_debug("%s: regions %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT
			" overlap: the later one is cut",
			dir, (guint64)a->dir_index, (guint64)b->dir_index);
		if (b->r.end <= a->r.end) {
			g_array_remove_index(regions, i);
		} else {
			b->r.start = a->r.end;
			i++;
		}
	}
	return TRUE;
}

gboolean vr_damon_sysfs_read_tried_regions(const struct vr_agent_paths *paths, guint scheme,
					   guint max, GArray *out, GError **error)
{
	g_autofree char *kd = kdamond_path(paths, 0, NULL);
	g_autofree char *schemes = kdamond_path(paths, 0, "contexts/0/schemes");
	g_autofree char *sdir = sub_index(schemes, scheme);
	g_autofree char *dir = g_build_filename(sdir, "tried_regions", NULL);
	g_autoptr(GArray) tried = g_array_new(FALSE, FALSE, sizeof(struct tried_region));
	g_autoptr(GArray) regions = g_array_new(FALSE, FALSE, sizeof(struct vr_agent_region));
	g_autoptr(GError) clear_error = NULL;
	gboolean ok;

	if (!put(kd, "state", "update_schemes_tried_regions", error)) {
		g_prefix_error(error, "cannot read DAMON's regions: ");
		return FALSE;
	}
	ok = read_tried_dir(dir, tried, error);
	/* Clear also after a failed read: the listing costs kernel memory. */
	if (!put(kd, "state", "clear_schemes_tried_regions", ok ? error : &clear_error)) {
		if (!ok)
			g_debug("after a failed read: %s", clear_error->message);
		ok = FALSE;
	}
	if (!ok) {
		g_prefix_error(error, "cannot read DAMON's regions: ");
		return FALSE;
	}
	for (guint i = 0; i < tried->len; i++)
		g_array_append_val(regions, g_array_index(tried, struct tried_region, i).r);
	vr_damon_regions_merge(regions, max);
	g_array_append_vals(out, regions->data, regions->len);
	return TRUE;
}

/* ---- merging regions (pure) ---- */

#define NONE G_MAXUINT

/**
 * struct group - regions merged so far, in a doubly linked list in address
 * order.
 * @start, @end:	its range (covers the holes between its parts).
 * @bytes:		bytes of its parts (holes excluded): the weight.
 * @acc_sum, @age_sum:	nr_accesses and age times bytes, summed over parts.
 * @prev, @next:	neighbours' indices, NONE at the ends.
 * @version:		bumped by every merge into it (stale heap entries).
 * @alive:		FALSE once merged into its left neighbour.
 */
struct group {
	uint64_t start;
	uint64_t end;
	double bytes;
	double acc_sum;
	double age_sum;
	guint prev;
	guint next;
	guint version;
	bool alive;
};

/**
 * struct candidate - a possible merge of group @left with its right
 * neighbour @right, with its cost in order of importance.
 */
struct candidate {
	guint left;
	guint right;
	guint left_version;
	guint right_version;
	uint64_t gap;	      /* 1 when a hole separates them */
	uint64_t d_accesses;  /* nr_accesses difference */
	uint64_t d_age_log;   /* difference of bit lengths of the ages */
	uint64_t merged_size; /* bytes of the result */
};

static uint32_t group_accesses(const struct group *g)
{
	return (uint32_t)(g->acc_sum / g->bytes);
}

static uint32_t group_age(const struct group *g)
{
	return (uint32_t)(g->age_sum / g->bytes);
}

static uint64_t bit_length(uint32_t v)
{
	return v ? 32 - (uint64_t)__builtin_clz(v) : 0;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static struct candidate candidate_of(const struct group *groups, guint l)
{
	const struct group *a = &groups[l], *b = &groups[a->next];

	return (struct candidate){
		.left = l,
		.right = a->next,
		.left_version = a->version,
		.right_version = b->version,
		.gap = a->end != b->start,
		.d_accesses = absdiff(group_accesses(a), group_accesses(b)),
		.d_age_log = absdiff(bit_length(group_age(a)), bit_length(group_age(b))),
		.merged_size = (uint64_t)(a->bytes + b->bytes),
	};
}

static bool candidate_less(const struct candidate *x, const struct candidate *y)
{
	if (x->gap != y->gap)
		return x->gap < y->gap;
	if (x->d_accesses != y->d_accesses)
		return x->d_accesses < y->d_accesses;
	if (x->d_age_log != y->d_age_log)
		return x->d_age_log < y->d_age_log;
	if (x->merged_size != y->merged_size)
		return x->merged_size < y->merged_size;
	return x->left < y->left;
}

static void heap_push(GArray *heap, struct candidate c)
{
	guint i = heap->len;

	g_array_append_val(heap, c);
	while (i > 0) {
		guint parent = (i - 1) / 2;
		struct candidate *ci = &g_array_index(heap, struct candidate, i);
		struct candidate *cp = &g_array_index(heap, struct candidate, parent);
		struct candidate tmp;

		if (!candidate_less(ci, cp))
			break;
		tmp = *ci;
		*ci = *cp;
		*cp = tmp;
		i = parent;
	}
}

static struct candidate heap_pop(GArray *heap)
{
	struct candidate top = g_array_index(heap, struct candidate, 0);
	guint i = 0;

	g_array_index(heap, struct candidate, 0) =
		g_array_index(heap, struct candidate, heap->len - 1);
	g_array_set_size(heap, heap->len - 1);
	for (;;) {
		guint l = 2 * i + 1, r = l + 1, best = i;
		struct candidate tmp;

		if (l < heap->len && candidate_less(&g_array_index(heap, struct candidate, l),
						    &g_array_index(heap, struct candidate, best)))
			best = l;
		if (r < heap->len && candidate_less(&g_array_index(heap, struct candidate, r),
						    &g_array_index(heap, struct candidate, best)))
			best = r;
		if (best == i)
			break;
		tmp = g_array_index(heap, struct candidate, i);
		g_array_index(heap, struct candidate, i) =
			g_array_index(heap, struct candidate, best);
		g_array_index(heap, struct candidate, best) = tmp;
		i = best;
	}
	return top;
}

static bool candidate_valid(const struct group *groups, const struct candidate *c)
{
	const struct group *a = &groups[c->left], *b = &groups[c->right];

	return a->alive && b->alive && a->next == c->right && a->version == c->left_version &&
	       b->version == c->right_version;
}

void vr_damon_regions_merge(GArray *regions, guint max)
{
	guint n = regions->len, count = n;
	g_autofree struct group *groups = NULL;
	g_autoptr(GArray) heap = NULL;
	guint out = 0;

	if (n <= max)
		return;
	if (max == 0) {
		g_array_set_size(regions, 0);
		return;
	}
	groups = g_new0(struct group, n);
	heap = g_array_sized_new(FALSE, FALSE, sizeof(struct candidate), n);
	for (guint i = 0; i < n; i++) {
		const struct vr_agent_region *r =
			&g_array_index(regions, struct vr_agent_region, i);
		double bytes = (double)(r->end - r->start);

		groups[i] = (struct group){
			.start = r->start,
			.end = r->end,
			.bytes = bytes,
			.acc_sum = bytes * r->nr_accesses,
			.age_sum = bytes * r->age,
			.prev = i ? i - 1 : NONE,
			.next = i + 1 < n ? i + 1 : NONE,
			.alive = true,
		};
	}
	for (guint i = 0; i + 1 < n; i++)
		heap_push(heap, candidate_of(groups, i));
	while (count > max && heap->len > 0) {
		struct candidate c = heap_pop(heap);
		struct group *a = &groups[c.left], *b = &groups[c.right];

		if (!candidate_valid(groups, &c))
			continue;
		a->end = b->end;
		a->bytes += b->bytes;
		a->acc_sum += b->acc_sum;
		a->age_sum += b->age_sum;
		a->next = b->next;
		if (b->next != NONE)
			groups[b->next].prev = c.left;
		b->alive = false;
		a->version++;
		count--;
		if (a->prev != NONE)
			heap_push(heap, candidate_of(groups, a->prev));
		if (a->next != NONE)
			heap_push(heap, candidate_of(groups, c.left));
	}
	for (guint i = 0; i < n; i++) {
		const struct group *g = &groups[i];

		if (!g->alive)
			continue;
		g_array_index(regions, struct vr_agent_region, out++) = (struct vr_agent_region){
			.start = g->start,
			.end = g->end,
			.nr_accesses = group_accesses(g),
			.age = group_age(g),
		};
	}
	g_array_set_size(regions, out);
}

/* ---- kdamond CPU time ---- */

gboolean vr_damon_sysfs_kdamond_pid(const struct vr_agent_paths *paths, int64_t *pid,
				    GError **error)
{
	g_autofree char *path = kdamond_path(paths, 0, "pid");
	g_autofree char *text = read_trimmed(path, error);
	gint64 v;

	if (!text)
		return FALSE;
	if (!g_ascii_string_to_signed(text, 10, -1, G_MAXINT64, &v, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s holds '%s', not a pid", path, text);
		return FALSE;
	}
	*pid = v;
	return TRUE;
}

gboolean vr_proc_stat_parse_cpu_us(const char *text, uint64_t ticks_per_s, uint64_t *cpu_us,
				   GError **error)
{
	/* Fields after "pid (comm)": state is field 3, utime 14, stime 15. The
	 * command name may hold spaces and ')': the last ')' ends it. */
	enum {
		UTIME_FIELD = 14,
		STIME_FIELD = 15
	};
	const char *p = strrchr(text, ')');
	guint64 ticks[2];
	guint field = 2, found = 0;

	if (!p || ticks_per_s == 0) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "not a /proc/PID/stat line (no ')' after the command name)");
		return FALSE;
	}
	for (p++; *p && found < 2;) {
		const char *start;
		g_autofree char *token = NULL;

		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (++field < UTIME_FIELD)
			continue;
		token = g_strndup(start, (gsize)(p - start));
		if (!g_ascii_string_to_unsigned(token, 10, 0, G_MAXUINT64, &ticks[found], NULL))
			break;
		found++;
	}
	if (found < 2) {
		g_set_error_literal(
			error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			"/proc/PID/stat has no numeric utime and stime (fields 14 and 15)");
		return FALSE;
	}
	ticks[0] += ticks[1];
	*cpu_us = ticks[0] / ticks_per_s * G_USEC_PER_SEC +
		  ticks[0] % ticks_per_s * G_USEC_PER_SEC / ticks_per_s;
	return TRUE;
}

gboolean vr_proc_pid_cpu_us(const char *procfs, int64_t pid, uint64_t *cpu_us, GError **error)
{
	char num[24];
	g_autofree char *path = NULL;
	g_autofree char *text = NULL;
	long ticks = sysconf(_SC_CLK_TCK);

	*cpu_us = 0;
	if (pid <= 0)
		return TRUE;
	g_snprintf(num, sizeof(num), "%" G_GINT64_FORMAT, (gint64)pid);
	path = g_build_filename(procfs, num, "stat", NULL);
	text = vr_kfile_read(path, 4096, error);
	if (!text)
		return FALSE;
	if (!vr_proc_stat_parse_cpu_us(text, ticks > 0 ? (uint64_t)ticks : 100, cpu_us, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}
