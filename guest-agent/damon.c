// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The `damon` backend: the in-guest scheme runs in the guest kernel's own
 * DAMON, configured through sysfs (damon-sysfs.h). One kdamond (kdamonds/0),
 * one paddr context over every System RAM range of /proc/iomem, one `stat`
 * scheme for the access picture followed by the policy's schemes.
 *
 * Lifecycle: the first apply_policy() starts the kdamond; later ones commit
 * the new configuration online (stats are kept by the kernel). pause() turns
 * it off, resume() starts it again with the last configuration. Scheme stats
 * and the kdamond's CPU time restart with every start, so the backend adds
 * what a run counted to a base before it stops it: read_stats() stays
 * cumulative since open().
 *
 * Size quotas that charge resident memory (the policy's default) are raised
 * by the guest's free memory (vr_damon_config_charge_resident(): the kernel
 * charges free memory too, and first) when the policy is applied and, every
 * RESIDENT_QUOTA_PERIOD_US while the kdamond takes commits, again when the
 * free memory moved the quota by more than a quarter; for a period after the
 * guest freed more than the resident quotas allow, they go to the kernel as
 * they are (vr_damon_config_over_budget()).
 *
 * A refault_bytes goal goes to the kernel as a user_input goal: every
 * RESIDENT_QUOTA_PERIOD_US the backend feeds it the guest's refaults (vmstat
 * workingset_refault_*) of the period, per quota window, while the kdamond
 * is sure to serve the update (takes_goals()).
 *
 * reclaim() is a bounded boost, not a second mechanism: the first pageout
 * scheme's size quota is raised by the bytes asked for (committed online),
 * its sz_applied is polled until it grew by that much or the deadline
 * passed, and the quota is restored. It reclaims only what the scheme's
 * pattern selects (cold memory) and only while its watermarks keep it
 * active; a time quota still applies; an unlimited size quota stays
 * unlimited. The answer is what the kernel counted as applied meanwhile.
 */
#include <string.h>

#include "backend.h"
#include "compact.h"
#include "damon-sysfs.h"
#include "iomem.h"
#include "meminfo.h"

/* The kdamond's counters are refreshed at most this often, us: a refresh
 * waits for the kdamond's next aggregation, and reports, get-stats and the
 * host may ask many times a second. */
#define STATS_REFRESH_US G_USEC_PER_SEC

/* Ticks check that nobody stopped the kdamond behind our back. */
#define DAMON_TICK_US (10 * G_USEC_PER_SEC)

/* How often resident size quotas follow the guest's free memory and are
 * checked against what it freed, us: a fleet share is a per-second rate,
 * and a guest frees most of its cold memory within tens of seconds. */
#define RESIDENT_QUOTA_PERIOD_US (5 * G_USEC_PER_SEC)

/* How often reclaim() reads the pageout scheme's stats: one default
 * aggregation interval, the kernel's own pace for applying schemes. */
#define RECLAIM_POLL_US (100 * G_TIME_SPAN_MILLISECOND)

/**
 * struct damon_backend - the damon backend's state.
 * @sysfs, @procfs, @cgroup: owned copies of the paths given to open().
 * @paths:	views of them.
 * @caps:	what this kernel's DAMON sysfs offers, read at open().
 * @config:	the last configuration applied (running, or to resume with);
 *		NULL before the first apply_policy().
 * @running:	kdamond 0 runs because this backend started it.
 * @paused:	pause() was called and resume() not yet.
 * @touched:	this backend wrote nr_kdamonds: close() releases the folders.
 * @base:	stats and CPU time of the runs that ended (see above).
 * @cur, @have_cur, @cur_at_us: the running kdamond's counters as last
 *		refreshed, and when (monotonic us).
 * @raise_at_us: when the next period starts: resident quotas raised,
 *		refault goals fed (monotonic us).
 * @freed_at_us, @freed_bytes, @refault_bytes: when the last period started
 *		(monotonic us), and the guest's vmstat pgsteal and refaults then
 *		(bytes).
 */
struct damon_backend {
	char *sysfs;
	char *procfs;
	char *cgroup;
	struct vr_agent_paths paths;
	struct vr_damon_caps caps;
	struct vr_damon_config *config;
	gboolean running;
	gboolean paused;
	gboolean touched;
	struct vr_backend_stats base;
	struct vr_backend_stats cur;
	gboolean have_cur;
	uint64_t cur_at_us;
	uint64_t raise_at_us;
	uint64_t freed_at_us;
	uint64_t freed_bytes;
	uint64_t refault_bytes;
};

static gboolean damon_probe(const struct vr_agent_paths *paths, GError **error)
{
	return vr_damon_sysfs_probe(paths, error) && vr_damon_sysfs_check_free(paths, FALSE, error);
}

static gpointer damon_open(const struct vr_agent_paths *paths, GError **error)
{
	struct damon_backend *b;

	if (!vr_damon_sysfs_probe(paths, error))
		return NULL;
	b = g_new0(struct damon_backend, 1);
	b->sysfs = g_strdup(paths->sysfs);
	b->procfs = g_strdup(paths->procfs);
	b->cgroup = g_strdup(paths->cgroup);
	b->paths = (struct vr_agent_paths){ b->sysfs, b->procfs, b->cgroup };
	vr_damon_sysfs_detect_caps(&b->paths, &b->caps);
	g_debug("damon: goals %s, goal metrics %s, filters %s", b->caps.has_goals ? "yes" : "no",
		b->caps.has_goal_metric ? "yes" : "no", b->caps.has_filters ? "yes" : "no");
	return b;
}

static void replace_config(struct damon_backend *b, struct vr_damon_config *cfg)
{
	vr_damon_config_free(b->config);
	b->config = cfg;
}

/* Check nobody else holds DAMON, then start kdamond 0 with @cfg. */
static gboolean start_kdamond(struct damon_backend *b, const struct vr_damon_config *cfg,
			      GError **error)
{
	if (!vr_damon_sysfs_check_free(&b->paths, FALSE, error))
		return FALSE;
	if (!vr_damon_sysfs_start(&b->paths, cfg, &b->caps, error))
		return FALSE;
	b->touched = TRUE;
	b->running = TRUE;
	return TRUE;
}

static gboolean stop_kdamond(struct damon_backend *b, GError **error);

/*
 * Can @cfg's kdamond be deactivated by its watermarks? Only when every
 * scheme waits on a watermark metric: one scheme without keeps it active.
 */
static gboolean may_be_deactivated(const struct vr_damon_config *cfg)
{
	for (guint i = 0; i < cfg->schemes->len; i++) {
		const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);
		if (!s->wmarks_metric || strcmp(s->wmarks_metric, "none") == 0)
			return FALSE;
	}
	return TRUE;
}

/*
 * Move the running kdamond from b->config to @cfg. Online (state "commit")
 * when it cannot be deactivated; otherwise by a restart (off, then on with
 * @cfg). Linux 6.12's DAMON sysfs takes a commit only after an aggregation,
 * and a kdamond its watermarks deactivated aggregates nothing until they
 * activate it: the write of "commit" blocked the agent for minutes in a
 * guest with enough free memory. "off" is served at once. A restart starts
 * the regions' ages over; the run's stats are kept (stop_kdamond()).
 */
static gboolean update_kdamond(struct damon_backend *b, const struct vr_damon_config *cfg,
			       GError **error)
{
	if (!may_be_deactivated(b->config))
		return vr_damon_sysfs_commit(&b->paths, cfg, &b->caps, error);
	g_debug("damon: the running schemes may be deactivated by their watermarks: "
		"restarting the kdamond instead of a commit");
	return stop_kdamond(b, error) && start_kdamond(b, cfg, error);
}

/*
 * struct period - what the guest did since the last period started.
 * @known:	vmstat was read (the rest is 0 otherwise).
 * @elapsed_us:	the period's length; 0 for the first.
 * @freed_bytes, @refault_bytes: vmstat pgsteal and refaults meanwhile.
 */
struct period {
	gboolean known;
	uint64_t elapsed_us;
	uint64_t freed_bytes;
	uint64_t refault_bytes;
};

/* Ends the current period at @now_us and starts the next one. */
static struct period next_period(struct damon_backend *b, uint64_t now_us)
{
	g_autoptr(GError) local = NULL;
	struct vr_vmstat_reclaim vmstat;
	struct period p = { 0 };
	uint64_t freed;

	if (!vr_vmstat_reclaim_read(&b->paths, &vmstat, &local)) {
		g_debug("damon: %s", local->message);
		return p;
	}
	freed = vr_vmstat_stolen_bytes(&vmstat);
	p.known = TRUE;
	if (b->freed_at_us) {
		p.elapsed_us = now_us - MIN(now_us, b->freed_at_us);
		p.freed_bytes = freed - MIN(freed, b->freed_bytes);
		p.refault_bytes =
			vmstat.refault_bytes - MIN(vmstat.refault_bytes, b->refault_bytes);
	}
	b->freed_at_us = now_us;
	b->freed_bytes = freed;
	b->refault_bytes = vmstat.refault_bytes;
	return p;
}

/* Did the guest free more in @p than the resident quotas of @cfg allow? */
static gboolean over_budget(const struct vr_damon_config *cfg, const struct period *p)
{
	return p->known && p->elapsed_us &&
	       vr_damon_config_over_budget(cfg, p->freed_bytes, p->elapsed_us);
}

/* Raise @cfg's resident quotas by the guest's free memory now (@hold: keep
 * them as they are). TRUE when one moved by more than a quarter; FALSE too
 * when meminfo cannot be read (the quotas then stay the policy's sizes). */
static gboolean charge_resident(struct damon_backend *b, struct vr_damon_config *cfg, gboolean hold)
{
	g_autoptr(GError) local = NULL;
	struct vr_meminfo mi;

	if (!vr_meminfo_read(&b->paths, &mi, &local)) {
		g_debug("damon: resident quotas stay as the policy gives them: %s", local->message);
		return FALSE;
	}
	return vr_damon_config_charge_resident(cfg, mi.mem_free_bytes, hold);
}

static gboolean damon_apply_policy(gpointer backend, const struct vr_policy *policy, GError **error)
{
	struct damon_backend *b = backend;
	g_autoptr(GArray) ram = NULL;
	g_autoptr(vr_damon_config) cfg = NULL;

	/* Everything is built and checked before the first write. */
	ram = vr_iomem_read_system_ram(b->paths.procfs, error);
	if (!ram) {
		g_prefix_error(error, "cannot find the guest's RAM: ");
		return FALSE;
	}
	cfg = vr_damon_config_from_policy(policy, (const struct vr_range *)ram->data, ram->len,
					  &b->caps, error);
	if (!cfg) {
		g_prefix_error(error, "the policy cannot run on DAMON: ");
		return FALSE;
	}
	charge_resident(b, cfg, FALSE);
	next_period(b, (uint64_t)g_get_monotonic_time()); /* a new period */
	if (b->paused) {
		/* resume() starts with it */
		replace_config(b, g_steal_pointer(&cfg));
		return TRUE;
	}
	if (b->running) {
		if (!update_kdamond(b, cfg, error))
			return FALSE;
	} else if (!start_kdamond(b, cfg, error)) {
		return FALSE;
	}
	replace_config(b, g_steal_pointer(&cfg));
	return TRUE;
}

/* Is scheme @i of @cfg one of the policy's pageout schemes? */
static gboolean is_pageout(const struct vr_damon_config *cfg, guint i)
{
	const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, i);

	return s->policy_index >= 0 && strcmp(s->action, vr_action_name(VR_ACTION_PAGEOUT)) == 0;
}

/* What the running kdamond counted: pageout schemes summed, its CPU time. */
static gboolean read_current(struct damon_backend *b, struct vr_backend_stats *out, GError **error)
{
	guint nr = b->config->schemes->len;
	g_autofree struct vr_scheme_stats *stats = g_new0(struct vr_scheme_stats, nr);
	int64_t pid = -1;

	*out = (struct vr_backend_stats){ 0 };
	if (!vr_damon_sysfs_read_stats(&b->paths, stats, nr, error))
		return FALSE;
	for (guint i = 0; i < nr; i++) {
		if (!is_pageout(b->config, i))
			continue;
		out->nr_tried += stats[i].nr_tried;
		out->sz_tried += stats[i].sz_tried;
		out->nr_applied += stats[i].nr_applied;
		out->sz_applied += stats[i].sz_applied;
		out->qt_exceeds += stats[i].qt_exceeds;
	}
	if (!vr_damon_sysfs_kdamond_pid(&b->paths, &pid, error) ||
	    !vr_proc_pid_cpu_us(b->paths.procfs, pid, &out->reclaimer_cpu_us, error)) {
		g_prefix_error(error, "kdamond CPU time: ");
		return FALSE;
	}
	return TRUE;
}

/* Stop the kdamond we run, keeping what it counted in the base. */
static gboolean stop_kdamond(struct damon_backend *b, GError **error)
{
	struct vr_backend_stats last;
	g_autoptr(GError) local = NULL;

	if (!b->running)
		return TRUE;
	if (read_current(b, &last, &local))
		vr_backend_stats_add(&b->base, &last);
	else
		g_warning("damon: the stats of the run being stopped are lost: %s", local->message);
	if (!vr_damon_sysfs_stop(&b->paths, error))
		return FALSE;
	b->running = FALSE;
	b->have_cur = FALSE;
	return TRUE;
}

static gboolean damon_pause(gpointer backend, GError **error)
{
	struct damon_backend *b = backend;

	if (b->paused)
		return TRUE;
	if (!stop_kdamond(b, error))
		return FALSE;
	b->paused = TRUE;
	return TRUE;
}

static gboolean damon_resume(gpointer backend, GError **error)
{
	struct damon_backend *b = backend;

	if (!b->paused)
		return TRUE;
	if (b->config && !b->running && !start_kdamond(b, b->config, error)) {
		g_prefix_error(error, "cannot resume: ");
		return FALSE;
	}
	b->paused = FALSE;
	return TRUE;
}

static gboolean read_sz_applied(struct damon_backend *b, guint scheme, uint64_t *sz, GError **error)
{
	g_autofree struct vr_scheme_stats *stats = g_new0(struct vr_scheme_stats, scheme + 1);

	if (!vr_damon_sysfs_read_stats(&b->paths, stats, scheme + 1, error))
		return FALSE;
	*sz = stats[scheme].sz_applied;
	return TRUE;
}

static gboolean damon_reclaim(gpointer backend, uint64_t bytes, uint64_t deadline_ms,
			      uint64_t *reclaimed, GError **error)
{
	struct damon_backend *b = backend;
	const gint64 deadline = g_get_monotonic_time() +
				(gint64)MIN(deadline_ms, G_MAXINT32) * G_TIME_SPAN_MILLISECOND;
	g_autoptr(vr_damon_config) boosted = NULL;
	g_autoptr(GError) poll_error = NULL;
	uint64_t first = 0, now_applied = 0;
	struct vr_damon_scheme *s;
	guint idx = 0;

	*reclaimed = 0;
	if (!b->running || !b->config) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    b->paused ? "DAMON is paused: no extra reclaim" :
						"DAMON is not running (no policy applied yet)");
		return FALSE;
	}
	while (idx < b->config->schemes->len && !is_pageout(b->config, idx))
		idx++;
	if (idx == b->config->schemes->len) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "the policy has no pageout scheme to reclaim with");
		return FALSE;
	}
	if (!read_sz_applied(b, idx, &first, error))
		return FALSE;
	s = vr_damon_config_scheme(b->config, idx);
	if (bytes && s->quota_bytes && may_be_deactivated(b->config)) {
		/* Raising the quota takes a commit, which a kdamond its
		 * watermarks deactivated does not serve (update_kdamond()),
		 * and such a kdamond pages out nothing anyway. */
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "the running schemes wait on their watermarks: no extra "
				    "reclaim through DAMON (use a policy with watermarks none)");
		return FALSE;
	}
	if (bytes && s->quota_bytes) {
		boosted = vr_damon_config_copy(b->config);
		s = vr_damon_config_scheme(boosted, idx);
		s->quota_bytes = s->quota_bytes > G_MAXUINT64 - bytes ? G_MAXUINT64 :
									s->quota_bytes + bytes;
		if (!vr_damon_sysfs_commit(&b->paths, boosted, &b->caps, error)) {
			g_prefix_error(error, "cannot raise the quota for the extra reclaim: ");
			return FALSE;
		}
	}
	for (;;) {
		gint64 now;

		if (!read_sz_applied(b, idx, &now_applied, &poll_error))
			break;
		*reclaimed = now_applied > first ? now_applied - first : 0;
		now = g_get_monotonic_time();
		if (*reclaimed >= bytes || now >= deadline)
			break;
		g_usleep((gulong)MIN(RECLAIM_POLL_US, deadline - now));
	}
	if (boosted && !vr_damon_sysfs_commit(&b->paths, b->config, &b->caps, error)) {
		g_prefix_error(error, "cannot restore the quota after the extra reclaim: ");
		return FALSE;
	}
	if (poll_error) {
		g_propagate_prefixed_error(error, g_steal_pointer(&poll_error), "extra reclaim: ");
		return FALSE;
	}
	return TRUE;
}

/* Where the guest's free memory rate puts a scheme's watermarks: below
 * mid and not below low it is active (or activates at its next check),
 * above high or below low it rests; between mid and high it keeps what it
 * was. A scheme without a watermark metric is always active. */
enum wmark_zone {
	WMARK_ACTIVE,
	WMARK_EITHER,
	WMARK_RESTING
};

static enum wmark_zone wmark_zone(const struct vr_damon_scheme *s, uint64_t rate)
{
	if (!s->wmarks_metric || strcmp(s->wmarks_metric, "free_mem_rate") != 0)
		return WMARK_ACTIVE;
	if (rate > s->wmarks_high || rate < s->wmarks_low)
		return WMARK_RESTING;
	return rate > s->wmarks_mid ? WMARK_EITHER : WMARK_ACTIVE;
}

/* Is every scheme in @zone at the guest's free memory now? FALSE when
 * /proc/meminfo cannot be read. */
static gboolean all_schemes_in(struct damon_backend *b, enum wmark_zone zone)
{
	struct vr_meminfo mi;
	uint64_t rate;

	if (!vr_meminfo_read(&b->paths, &mi, NULL))
		return FALSE;
	rate = vr_meminfo_free_mem_rate(&mi);
	for (guint i = 0; i < b->config->schemes->len; i++)
		if (wmark_zone(vr_damon_config_scheme(b->config, i), rate) != zone)
			return FALSE;
	return TRUE;
}

/* Will the kdamond serve a goals update now? Yes when its watermarks cannot
 * deactivate it, or when every scheme is active for sure. */
static gboolean takes_goals(struct damon_backend *b)
{
	return !may_be_deactivated(b->config) || all_schemes_in(b, WMARK_ACTIVE);
}

/* Follow the guest's free memory with the resident quotas, by a commit:
 * only where a commit is served at once (update_kdamond()), since a
 * restart would start the regions' ages over. */
static void raise_resident_quotas(struct damon_backend *b, const struct period *p)
{
	g_autoptr(vr_damon_config) raised = NULL;
	g_autoptr(GError) local = NULL;
	gboolean hold;

	if (may_be_deactivated(b->config))
		return;
	hold = over_budget(b->config, p);
	raised = vr_damon_config_copy(b->config);
	if (!charge_resident(b, raised, hold))
		return;
	if (!vr_damon_sysfs_commit(&b->paths, raised, &b->caps, &local)) {
		g_warning("damon: cannot commit the resident quotas: %s", local->message);
		return;
	}
	g_debug("damon: resident quotas %s", hold ? "back to the policy's sizes: the guest "
						    "freed more than they allow" :
						    "raised by the guest's free memory");
	replace_config(b, g_steal_pointer(&raised));
}

/* Feed the refault_bytes goals the refaults of @p, by a goals update. */
static void feed_refault_goals(struct damon_backend *b, const struct period *p)
{
	g_autoptr(vr_damon_config) fed = NULL;
	g_autoptr(GError) local = NULL;

	if (!p->known || !p->elapsed_us || !vr_damon_config_has_refault_goals(b->config) ||
	    !takes_goals(b))
		return;
	fed = vr_damon_config_copy(b->config);
	vr_damon_config_feed_refaults(fed, p->refault_bytes, p->elapsed_us);
	if (!vr_damon_sysfs_commit_goals(&b->paths, fed, &b->caps, &local)) {
		g_warning("damon: cannot feed the refault goals: %s", local->message);
		return;
	}
	g_debug("damon: refault goals fed %" G_GUINT64_FORMAT
		" bytes refaulted in %" G_GUINT64_FORMAT " ms",
		p->refault_bytes, p->elapsed_us / 1000);
	replace_config(b, g_steal_pointer(&fed));
}

static uint64_t damon_tick(gpointer backend, uint64_t now_us)
{
	struct damon_backend *b = backend;
	g_autoptr(GError) local = NULL;
	gboolean off = FALSE;

	if (!b->running)
		return DAMON_TICK_US;
	if (now_us >= b->raise_at_us) {
		struct period p = next_period(b, now_us);

		raise_resident_quotas(b, &p);
		feed_refault_goals(b, &p);
		b->raise_at_us = now_us + RESIDENT_QUOTA_PERIOD_US;
	}
	if (!vr_damon_sysfs_is_off(&b->paths, &off, &local)) {
		g_debug("damon: %s", local->message);
	} else if (off) {
		/* Its stats went with it; the next apply_policy() starts anew. */
		g_warning("damon: kdamond 0 was stopped by someone else; reclaim is off until "
			  "the next policy");
		b->running = FALSE;
	}
	return MIN(DAMON_TICK_US, b->raise_at_us - now_us);
}

/* Do all schemes rest on their watermarks for sure? Then the kdamond
 * answers a refresh only at its next watermark check (5 s by default), and
 * its counters do not move anyway. */
static gboolean all_resting(struct damon_backend *b)
{
	return all_schemes_in(b, WMARK_RESTING);
}

static gboolean damon_read_stats(gpointer backend, struct vr_backend_stats *out, GError **error)
{
	struct damon_backend *b = backend;
	uint64_t now = (uint64_t)g_get_monotonic_time();

	*out = b->base;
	if (!b->running)
		return TRUE;
	if (!b->have_cur || (now - b->cur_at_us >= STATS_REFRESH_US && !all_resting(b))) {
		if (!read_current(b, &b->cur, error))
			return FALSE;
		b->have_cur = TRUE;
		b->cur_at_us = now;
	}
	vr_backend_stats_add(out, &b->cur);
	return TRUE;
}

static gboolean damon_read_regions(gpointer backend, guint max, GArray *out, GError **error)
{
	struct damon_backend *b = backend;

	if (!b->running)
		return TRUE;
	return vr_damon_sysfs_read_tried_regions(&b->paths, VR_DAMON_STAT_SCHEME, max, out, error);
}

static void damon_close(gpointer backend)
{
	struct damon_backend *b = backend;
	g_autoptr(GError) local = NULL;

	if (!b)
		return;
	if (b->running && !vr_damon_sysfs_stop(&b->paths, &local)) {
		g_warning("damon: %s", local->message);
		g_clear_error(&local);
	}
	if (b->touched && !vr_damon_sysfs_release(&b->paths, &local))
		g_warning("damon: cannot release the kdamond folders: %s", local->message);
	vr_damon_config_free(b->config);
	g_free(b->sysfs);
	g_free(b->procfs);
	g_free(b->cgroup);
	g_free(b);
}

const struct vr_backend_ops vr_backend_damon = {
	.name = "damon",
	.probe = damon_probe,
	.open = damon_open,
	.apply_policy = damon_apply_policy,
	.pause = damon_pause,
	.resume = damon_resume,
	.reclaim = damon_reclaim,
	.tick = damon_tick,
	.read_stats = damon_read_stats,
	.read_regions = damon_read_regions,
	.close = damon_close,
};
