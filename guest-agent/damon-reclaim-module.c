// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The `damon-reclaim-module` backend: the kernel's own DAMON_RECLAIM module,
 * driven through its parameters (<sysfs>/module/damon_reclaim/parameters/,
 * Documentation/admin-guide/mm/damon/reclaim.rst of Linux). The kernel
 * baseline that vreclaim is compared with.
 *
 * The module runs one fixed scheme: pageout of regions of at least one page
 * with no access for min_age or longer, under a quota with age-first
 * prioritization and free-memory watermarks. The policy's first pageout
 * scheme gives its parameters; what the module cannot express is refused
 * (another access pattern, a free_mem_rate goal) rather than silently
 * dropped. Its other schemes are ignored (with a message).
 *
 * Limits of the module, by design of the kernel:
 * - it monitors ONE physical range: this backend gives it the largest System
 *   RAM range of /proc/iomem (what the module itself picks by default);
 *   guest RAM in the other ranges (e.g. above 4 GiB when the largest is
 *   below the PCI hole) is not reclaimed;
 * - its watermarks always use free_mem_rate: a policy with metric `none`
 *   becomes high 1000, mid 999, low 0, i.e. always active in practice (the
 *   scheme would rest only with more than 99.9% of memory free);
 * - no mainline kernel up to 6.12 exposes the quota weights (the module uses
 *   size 0, nr_accesses 0, age 1); when parameters named quota_weight_sz,
 *   quota_weight_nr_accesses and quota_weight_age exist they are written,
 *   otherwise other policy weights are noted in the log and not applied;
 * - goals: some_mem_psi_us becomes quota_mem_pressure_us (the target);
 *   user_input becomes quota_autotune_feedback, the module's feedback whose
 *   target is fixed at 10000, so current / target is scaled to it; the
 *   files exist since Linux 6.9;
 * - it excludes DAMON sysfs kdamonds (EBUSY): probe() and open() refuse
 *   while one runs.
 * Parameters written while the module is enabled take effect only with
 * commit_inputs=Y, which the kernel resets to N once it re-read them (and
 * the module disables itself if it finds them invalid: tick() reports it).
 * The 6.12 guest kernel of ENVIRONMENT.md monitors but never acts with this
 * module; the driver is still exact so that a fixed kernel is measured
 * right.
 */
#include <string.h>

#include "backend.h"
#include "damon-sysfs.h"
#include "iomem.h"
#include "kernel-file.h"

#define PARAMS_DIR "module/damon_reclaim/parameters"

/* Watermarks that keep the scheme active: free_mem_rate never exceeds 1000
 * and never drops below 0, and an active scheme stays active up to high. */
#define ALWAYS_HIGH 1000
#define ALWAYS_MID  999
#define ALWAYS_LOW  0
/* Watermark check interval for metric none when the policy gives none: the
 * module's default, 5 s. */
#define DEFAULT_WMARKS_INTERVAL_US (5 * G_USEC_PER_SEC)

/* quota_autotune_feedback's fixed target (reclaim.c: the goal is 10,000). */
#define FEEDBACK_TARGET 10000

/* Weights the module uses when it has no weight parameters. */
#define MODULE_WEIGHT_SZ	  0
#define MODULE_WEIGHT_NR_ACCESSES 0
#define MODULE_WEIGHT_AGE	  1

#define MODULE_TICK_US	(10 * G_USEC_PER_SEC)
#define RECLAIM_POLL_US (100 * G_TIME_SPAN_MILLISECOND)

/**
 * struct module_params - the module's input parameters, in its units.
 * @min_age_us:		min_age.
 * @quota_ms, @quota_sz_bytes, @quota_reset_interval_ms: quota_ms, quota_sz,
 *			quota_reset_interval_ms.
 * @weight_sz, @weight_nr_accesses, @weight_age: the policy's weights (written
 *			only where the kernel has the files).
 * @wmarks_interval_us, @wmarks_high, @wmarks_mid, @wmarks_low: wmarks_*.
 * @sample_interval_us, @aggr_interval_us: sample_interval, aggr_interval.
 * @min_nr_regions, @max_nr_regions: min_nr_regions, max_nr_regions.
 * @region_start, @region_end: monitor_region_start/end, [start, end) bytes.
 * @quota_mem_pressure_us: 0 = no PSI goal.
 * @quota_autotune_feedback: 0 = no user feedback goal.
 */
struct module_params {
	uint64_t min_age_us;
	uint64_t quota_ms;
	uint64_t quota_sz_bytes;
	uint64_t quota_reset_interval_ms;
	uint32_t weight_sz;
	uint32_t weight_nr_accesses;
	uint32_t weight_age;
	uint64_t wmarks_interval_us;
	uint64_t wmarks_high;
	uint64_t wmarks_mid;
	uint64_t wmarks_low;
	uint64_t sample_interval_us;
	uint64_t aggr_interval_us;
	uint64_t min_nr_regions;
	uint64_t max_nr_regions;
	uint64_t region_start;
	uint64_t region_end;
	uint64_t quota_mem_pressure_us;
	uint64_t quota_autotune_feedback;
};

/**
 * struct module_backend - the backend's state.
 * @sysfs, @procfs, @cgroup, @paths: owned copies of the paths and views.
 * @params:	the last parameters applied (valid when @have_params).
 * @have_params: apply_policy() succeeded once.
 * @enabled:	this backend enabled the module (or took it over) and has not
 *		disabled it.
 * @paused:	pause() was called and resume() not yet.
 * @base:	stats of runs that ended (the module restarts its counters).
 */
struct module_backend {
	char *sysfs;
	char *procfs;
	char *cgroup;
	struct vr_agent_paths paths;
	struct module_params params;
	gboolean have_params;
	gboolean enabled;
	gboolean paused;
	struct vr_backend_stats base;
};

static char *param_path(const struct vr_agent_paths *paths, const char *name)
{
	return g_build_filename(paths->sysfs, PARAMS_DIR, name, NULL);
}

static gboolean param_exists(const struct vr_agent_paths *paths, const char *name)
{
	g_autofree char *path = param_path(paths, name);

	return g_file_test(path, G_FILE_TEST_EXISTS);
}

static gboolean put(const struct vr_agent_paths *paths, const char *name, const char *value,
		    GError **error)
{
	g_autofree char *path = param_path(paths, name);

	return vr_kfile_write(path, value, error);
}

static gboolean put_u64(const struct vr_agent_paths *paths, const char *name, uint64_t value,
			GError **error)
{
	g_autofree char *path = param_path(paths, name);

	return vr_kfile_write_u64(path, value, error);
}

static gboolean get_u64(const struct vr_agent_paths *paths, const char *name, uint64_t *value,
			GError **error)
{
	g_autofree char *path = param_path(paths, name);

	return vr_kfile_read_u64(path, value, error);
}

/* ---- who holds DAMON ---- */

static gboolean check_free(const struct vr_agent_paths *paths, GError **error)
{
	int kdamond = -1;

	if (!vr_damon_sysfs_running_kdamond(paths, &kdamond, error))
		return FALSE;
	if (kdamond >= 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_BUSY,
			    "DAMON is busy: DAMON sysfs kdamond %d is running, and it excludes the "
			    "DAMON_RECLAIM module; stop it first (echo off > "
			    "%s/" VR_DAMON_ADMIN_DIR "/kdamonds/%d/state)",
			    kdamond, paths->sysfs, kdamond);
		return FALSE;
	}
	if (vr_damon_module_enabled(paths, "damon_lru_sort")) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_BUSY,
				    "DAMON is busy: the DAMON_LRU_SORT module is enabled, and it "
				    "excludes DAMON_RECLAIM; disable it first");
		return FALSE;
	}
	return TRUE;
}

static gboolean module_probe(const struct vr_agent_paths *paths, GError **error)
{
	if (!param_exists(paths, "enabled")) {
		g_autofree char *path = param_path(paths, "enabled");

		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no DAMON_RECLAIM module: %s does not exist (needs a kernel with "
			    "CONFIG_DAMON_RECLAIM)",
			    path);
		return FALSE;
	}
	return check_free(paths, error);
}

static gpointer module_open(const struct vr_agent_paths *paths, GError **error)
{
	struct module_backend *b;

	if (!module_probe(paths, error))
		return NULL;
	b = g_new0(struct module_backend, 1);
	b->sysfs = g_strdup(paths->sysfs);
	b->procfs = g_strdup(paths->procfs);
	b->cgroup = g_strdup(paths->cgroup);
	b->paths = (struct vr_agent_paths){ b->sysfs, b->procfs, b->cgroup };
	return b;
}

/* ---- policy -> parameters ---- */

static const struct vr_scheme *first_pageout(const struct vr_policy *policy, guint *index)
{
	for (guint i = 0; policy->schemes && i < policy->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(policy->schemes, i);

		if (s->action == VR_ACTION_PAGEOUT) {
			*index = i;
			return s;
		}
	}
	return NULL;
}

/* The module's fixed pattern: >= 1 page, nr_accesses 0..0, age unbounded. */
static gboolean check_pattern(const struct vr_scheme *s, guint i,
			      const struct vr_monitor_attrs *attrs, GError **error)
{
	const struct vr_access_pattern *p = &s->pattern;
	const char *what = NULL;

	if (p->min_sz_bytes > VR_PAGE_SIZE || p->max_sz_bytes != G_MAXUINT64)
		what = "pattern size (the module takes every region of at least one page)";
	else if (p->min_nr_accesses != 0 || p->max_nr_accesses != 0)
		what = "pattern nr_accesses (the module takes 0..0)";
	else if (p->max_age_us / attrs->aggr_interval_us < G_MAXUINT32)
		what = "pattern max_age_us (the module has no maximum age)";
	if (!what)
		return TRUE;
	g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
		    "schemes[%u] '%s': the DAMON_RECLAIM module cannot express its %s", i, s->name,
		    what);
	return FALSE;
}

static gboolean convert_goals(const struct vr_scheme *s, guint i, struct module_params *mp,
			      GError **error)
{
	for (guint g = 0; g < s->quota.nr_goals && g < VR_MAX_QUOTA_GOALS; g++) {
		const struct vr_quota_goal *goal = &s->quota.goals[g];
		uint64_t *slot;
		uint64_t value;

		switch (goal->metric) {
		case VR_GOAL_SOME_MEM_PSI_US:
			slot = &mp->quota_mem_pressure_us;
			value = goal->target;
			break;
		case VR_GOAL_USER_INPUT:
			slot = &mp->quota_autotune_feedback;
			/* 0 would switch the feedback off: keep it at least 1 */
			value = goal->current / goal->target * FEEDBACK_TARGET +
				goal->current % goal->target * FEEDBACK_TARGET / goal->target;
			value = MAX(value, 1);
			break;
		default:
			g_set_error(
				error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				"schemes[%u] '%s': quota.goals[%u]: the DAMON_RECLAIM module has "
				"no goal metric %s (it has some_mem_psi_us and user_input)",
				i, s->name, g, vr_goal_metric_name(goal->metric));
			return FALSE;
		}
		if (*slot) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "schemes[%u] '%s': quota.goals[%u]: the DAMON_RECLAIM module "
				    "takes one %s goal",
				    i, s->name, g, vr_goal_metric_name(goal->metric));
			return FALSE;
		}
		*slot = value;
	}
	return TRUE;
}

static gboolean params_from_policy(const struct vr_policy *policy, const GArray *ram,
				   struct module_params *mp, GError **error)
{
	const struct vr_monitor_attrs *attrs = &policy->attrs;
	const struct vr_range *largest;
	const struct vr_scheme *s;
	g_autoptr(GError) local = NULL;
	guint index = 0;

	if (!vr_monitor_attrs_validate(attrs, &local)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "monitoring: %s",
			    local->message);
		return FALSE;
	}
	s = first_pageout(policy, &index);
	if (!s) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "the DAMON_RECLAIM module runs one pageout scheme, and the "
				    "policy has none");
		return FALSE;
	}
	if (!vr_scheme_validate(s, &local)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "schemes[%u]: %s", index,
			    local->message);
		return FALSE;
	}
	if (!check_pattern(s, index, attrs, error))
		return FALSE;
	largest = &g_array_index(ram, struct vr_range, vr_iomem_largest(ram));
	*mp = (struct module_params){
		.min_age_us = s->pattern.min_age_us,
		.quota_ms = s->quota.ms,
		.quota_sz_bytes = s->quota.sz,
		.quota_reset_interval_ms = s->quota.reset_interval_ms,
		.weight_sz = s->quota.weight_sz,
		.weight_nr_accesses = s->quota.weight_nr_accesses,
		.weight_age = s->quota.weight_age,
		.wmarks_interval_us = s->wmarks.interval_us,
		.wmarks_high = s->wmarks.high,
		.wmarks_mid = s->wmarks.mid,
		.wmarks_low = s->wmarks.low,
		.sample_interval_us = attrs->sample_interval_us,
		.aggr_interval_us = attrs->aggr_interval_us,
		.min_nr_regions = attrs->min_nr_regions,
		.max_nr_regions = attrs->max_nr_regions,
		.region_start = largest->start,
		.region_end = largest->end,
	};
	if (s->wmarks.metric == VR_WMARK_NONE) {
		mp->wmarks_high = ALWAYS_HIGH;
		mp->wmarks_mid = ALWAYS_MID;
		mp->wmarks_low = ALWAYS_LOW;
		if (!mp->wmarks_interval_us)
			mp->wmarks_interval_us = DEFAULT_WMARKS_INTERVAL_US;
	}
	if (!convert_goals(s, index, mp, error))
		return FALSE;
	if (policy->schemes->len > 1)
		g_message("damon-reclaim-module: runs schemes[%u] '%s' only; the policy's %u "
			  "other scheme(s) are ignored",
			  index, s->name, policy->schemes->len - 1);
	return TRUE;
}

/* ---- writing ---- */

static gboolean write_weights(const struct vr_agent_paths *paths, const struct module_params *mp,
			      GError **error)
{
	if (!param_exists(paths, "quota_weight_sz")) {
		if (mp->weight_sz != MODULE_WEIGHT_SZ ||
		    mp->weight_nr_accesses != MODULE_WEIGHT_NR_ACCESSES ||
		    (mp->weight_age == 0) != (MODULE_WEIGHT_AGE == 0))
			g_message("damon-reclaim-module: this kernel's module has no weight "
				  "parameters: it prioritizes by age alone, not by the policy's "
				  "weights %u/%u/%u",
				  mp->weight_sz, mp->weight_nr_accesses, mp->weight_age);
		return TRUE;
	}
	return put_u64(paths, "quota_weight_sz", mp->weight_sz, error) &&
	       put_u64(paths, "quota_weight_nr_accesses", mp->weight_nr_accesses, error) &&
	       put_u64(paths, "quota_weight_age", mp->weight_age, error);
}

static gboolean write_goals(const struct vr_agent_paths *paths, const struct module_params *mp,
			    GError **error)
{
	static const struct {
		const char *name;
		size_t offset;
	} goals[] = {
		{ "quota_mem_pressure_us",
		  G_STRUCT_OFFSET(struct module_params, quota_mem_pressure_us) },
		{ "quota_autotune_feedback",
		  G_STRUCT_OFFSET(struct module_params, quota_autotune_feedback) },
	};

	for (guint i = 0; i < G_N_ELEMENTS(goals); i++) {
		uint64_t v = G_STRUCT_MEMBER(uint64_t, mp, goals[i].offset);

		if (!param_exists(paths, goals[i].name)) {
			if (!v)
				continue;
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
				    "this kernel's DAMON_RECLAIM module has no %s parameter (quota "
				    "goals need Linux 6.9 or later)",
				    goals[i].name);
			return FALSE;
		}
		if (!put_u64(paths, goals[i].name, v, error))
			return FALSE;
	}
	return TRUE;
}

/* Every input parameter but enabled and commit_inputs. */
static gboolean write_params(const struct vr_agent_paths *paths, const struct module_params *mp,
			     GError **error)
{
	return put_u64(paths, "min_age", mp->min_age_us, error) &&
	       put_u64(paths, "quota_ms", mp->quota_ms, error) &&
	       put_u64(paths, "quota_sz", mp->quota_sz_bytes, error) &&
	       put_u64(paths, "quota_reset_interval_ms", mp->quota_reset_interval_ms, error) &&
	       write_weights(paths, mp, error) && write_goals(paths, mp, error) &&
	       put_u64(paths, "wmarks_interval", mp->wmarks_interval_us, error) &&
	       put_u64(paths, "wmarks_high", mp->wmarks_high, error) &&
	       put_u64(paths, "wmarks_mid", mp->wmarks_mid, error) &&
	       put_u64(paths, "wmarks_low", mp->wmarks_low, error) &&
	       put_u64(paths, "sample_interval", mp->sample_interval_us, error) &&
	       put_u64(paths, "aggr_interval", mp->aggr_interval_us, error) &&
	       put_u64(paths, "min_nr_regions", mp->min_nr_regions, error) &&
	       put_u64(paths, "max_nr_regions", mp->max_nr_regions, error) &&
	       put_u64(paths, "monitor_region_start", mp->region_start, error) &&
	       put_u64(paths, "monitor_region_end", mp->region_end, error) &&
	       (!param_exists(paths, "skip_anon") || put(paths, "skip_anon", "N", error));
}

/**
 * run_params() - make the module run @mp: written, then enabled=Y, or
 * commit_inputs=Y when it is enabled already. A failure before the last
 * write leaves the module as it was (a running module ignores parameters
 * until commit_inputs).
 */
static gboolean run_params(struct module_backend *b, const struct module_params *mp, GError **error)
{
	gboolean enabled = vr_damon_module_enabled(&b->paths, "damon_reclaim");

	if (!enabled && !check_free(&b->paths, error))
		return FALSE;
	if (!write_params(&b->paths, mp, error) ||
	    !put(&b->paths, enabled ? "commit_inputs" : "enabled", "Y", error)) {
		g_prefix_error(error, "DAMON_RECLAIM: ");
		return FALSE;
	}
	b->enabled = TRUE;
	return TRUE;
}

static gboolean module_apply_policy(gpointer backend, const struct vr_policy *policy,
				    GError **error)
{
	struct module_backend *b = backend;
	g_autoptr(GArray) ram = NULL;
	struct module_params mp;

	ram = vr_iomem_read_system_ram(b->paths.procfs, error);
	if (!ram) {
		g_prefix_error(error, "cannot find the guest's RAM: ");
		return FALSE;
	}
	if (!params_from_policy(policy, ram, &mp, error)) {
		g_prefix_error(error, "the policy cannot run on the DAMON_RECLAIM module: ");
		return FALSE;
	}
	if (!b->paused && !run_params(b, &mp, error))
		return FALSE;
	b->params = mp;
	b->have_params = TRUE;
	return TRUE;
}

/* ---- stats ---- */

static gboolean read_current(struct module_backend *b, struct vr_backend_stats *out, GError **error)
{
	g_autofree char *pid_path = param_path(&b->paths, "kdamond_pid");
	g_autofree char *pid_text = NULL;
	gint64 pid = -1;

	*out = (struct vr_backend_stats){ 0 };
	if (!get_u64(&b->paths, "nr_reclaim_tried_regions", &out->nr_tried, error) ||
	    !get_u64(&b->paths, "bytes_reclaim_tried_regions", &out->sz_tried, error) ||
	    !get_u64(&b->paths, "nr_reclaimed_regions", &out->nr_applied, error) ||
	    !get_u64(&b->paths, "bytes_reclaimed_regions", &out->sz_applied, error) ||
	    !get_u64(&b->paths, "nr_quota_exceeds", &out->qt_exceeds, error))
		return FALSE;
	pid_text = vr_kfile_read_line(pid_path, error);
	if (!pid_text)
		return FALSE;
	g_strstrip(pid_text);
	if (!g_ascii_string_to_signed(pid_text, 10, -1, G_MAXINT64, &pid, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s holds '%s', not a pid", pid_path, pid_text);
		return FALSE;
	}
	if (!vr_proc_pid_cpu_us(b->paths.procfs, pid, &out->reclaimer_cpu_us, error)) {
		g_prefix_error(error, "kdamond CPU time: ");
		return FALSE;
	}
	return TRUE;
}

static gboolean module_read_stats(gpointer backend, struct vr_backend_stats *out, GError **error)
{
	struct module_backend *b = backend;
	struct vr_backend_stats cur;

	*out = b->base;
	if (!b->enabled)
		return TRUE;
	if (!read_current(b, &cur, error))
		return FALSE;
	vr_backend_stats_add(out, &cur);
	return TRUE;
}

/* ---- lifecycle ---- */

static gboolean disable(struct module_backend *b, GError **error)
{
	struct vr_backend_stats last;
	g_autoptr(GError) local = NULL;

	if (!b->enabled)
		return TRUE;
	if (read_current(b, &last, &local))
		vr_backend_stats_add(&b->base, &last);
	else
		g_warning("damon-reclaim-module: the stats of the run being stopped are lost: %s",
			  local->message);
	if (!put(&b->paths, "enabled", "N", error)) {
		g_prefix_error(error, "cannot disable DAMON_RECLAIM: ");
		return FALSE;
	}
	b->enabled = FALSE;
	return TRUE;
}

static gboolean module_pause(gpointer backend, GError **error)
{
	struct module_backend *b = backend;

	if (b->paused)
		return TRUE;
	if (!disable(b, error))
		return FALSE;
	b->paused = TRUE;
	return TRUE;
}

static gboolean module_resume(gpointer backend, GError **error)
{
	struct module_backend *b = backend;

	if (!b->paused)
		return TRUE;
	if (b->have_params && !run_params(b, &b->params, error)) {
		g_prefix_error(error, "cannot resume: ");
		return FALSE;
	}
	b->paused = FALSE;
	return TRUE;
}

/* quota_sz = @quota_sz_bytes, then commit_inputs. */
static gboolean commit_quota(struct module_backend *b, uint64_t quota_sz_bytes, GError **error)
{
	return put_u64(&b->paths, "quota_sz", quota_sz_bytes, error) &&
	       put(&b->paths, "commit_inputs", "Y", error);
}

/* The same bounded boost as the damon backend (damon.c): quota_sz raised by
 * @bytes, bytes_reclaimed_regions polled, quota_sz restored. */
static gboolean module_reclaim(gpointer backend, uint64_t bytes, uint64_t deadline_ms,
			       uint64_t *reclaimed, GError **error)
{
	struct module_backend *b = backend;
	const gint64 deadline = g_get_monotonic_time() +
				(gint64)MIN(deadline_ms, G_MAXINT32) * G_TIME_SPAN_MILLISECOND;
	const uint64_t quota = b->params.quota_sz_bytes;
	gboolean boosted = bytes && quota;
	g_autoptr(GError) poll_error = NULL;
	uint64_t first = 0, now_applied = 0;

	*reclaimed = 0;
	if (!b->enabled || !b->have_params) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    b->paused ?
					    "DAMON_RECLAIM is paused: no extra reclaim" :
					    "DAMON_RECLAIM is not running (no policy applied yet)");
		return FALSE;
	}
	if (!get_u64(&b->paths, "bytes_reclaimed_regions", &first, error))
		return FALSE;
	if (boosted &&
	    !commit_quota(b, quota > G_MAXUINT64 - bytes ? G_MAXUINT64 : quota + bytes, error)) {
		g_prefix_error(error, "cannot raise the quota for the extra reclaim: ");
		return FALSE;
	}
	for (;;) {
		gint64 now;

		if (!get_u64(&b->paths, "bytes_reclaimed_regions", &now_applied, &poll_error))
			break;
		*reclaimed = now_applied > first ? now_applied - first : 0;
		now = g_get_monotonic_time();
		if (*reclaimed >= bytes || now >= deadline)
			break;
		g_usleep((gulong)MIN(RECLAIM_POLL_US, deadline - now));
	}
	if (boosted && !commit_quota(b, quota, error)) {
		g_prefix_error(error, "cannot restore the quota after the extra reclaim: ");
		return FALSE;
	}
	if (poll_error) {
		g_propagate_prefixed_error(error, g_steal_pointer(&poll_error), "extra reclaim: ");
		return FALSE;
	}
	return TRUE;
}

static uint64_t module_tick(gpointer backend, uint64_t now_us)
{
	struct module_backend *b = backend;

	(void)now_us;
	if (b->enabled && !vr_damon_module_enabled(&b->paths, "damon_reclaim")) {
		/* It disables itself when commit_inputs finds invalid inputs. */
		g_warning("damon-reclaim-module: DAMON_RECLAIM was disabled (by someone else, or "
			  "by itself after invalid inputs); reclaim is off until the next policy");
		b->enabled = FALSE;
	}
	return MODULE_TICK_US;
}

static gboolean module_read_regions(gpointer backend, guint max, GArray *out, GError **error)
{
	/* The module publishes no regions. */
	(void)backend;
	(void)max;
	(void)out;
	(void)error;
	return TRUE;
}

static void module_close(gpointer backend)
{
	struct module_backend *b = backend;
	g_autoptr(GError) local = NULL;

	if (!b)
		return;
	if (!disable(b, &local))
		g_warning("damon-reclaim-module: %s", local->message);
	g_free(b->sysfs);
	g_free(b->procfs);
	g_free(b->cgroup);
	g_free(b);
}

const struct vr_backend_ops vr_backend_damon_reclaim_module = {
	.name = "damon-reclaim-module",
	.probe = module_probe,
	.open = module_open,
	.apply_policy = module_apply_policy,
	.pause = module_pause,
	.resume = module_resume,
	.reclaim = module_reclaim,
	.tick = module_tick,
	.read_stats = module_read_stats,
	.read_regions = module_read_regions,
	.close = module_close,
};
