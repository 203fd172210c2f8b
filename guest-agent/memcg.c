// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The memcg backend: cgroup v2 memory.reclaim sized by libvrcore's quota
 * arithmetic, memory PSI as the brake. See memcg.h for what it honours of a
 * policy and what its stats mean.
 *
 * Each tick: acquire (the watermark metric when due, the PSI stall), decide
 * (vr_watermarks_next_state(), vr_quota_window_due()/_start(),
 * vr_quota_budget_left(), vr_memcg_chunk_bytes(), the brake), act (one
 * memory.reclaim write).
 */
#define _POSIX_C_SOURCE 200809L

#include "memcg.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "compact.h"
#include "kernel-file.h"
#include "meminfo.h"
#include "psi.h"
#include "quota-budget.h"

/**
 * enum window_stop - why the current window does no more.
 * @STOP_NONE:	  it goes on.
 * @STOP_BUDGET:  its budget is used up.
 * @STOP_EAGAIN:  memory.reclaim found less to reclaim than asked.
 * @STOP_PSI:	  the PSI brake.
 * @STOP_ERROR:	  a write failed (logged); the next window tries again.
 */
enum window_stop {
	STOP_NONE,
	STOP_BUDGET,
	STOP_EAGAIN,
	STOP_PSI,
	STOP_ERROR,
};

/**
 * struct memcg - the backend's state.
 * @sysfs, @procfs, @cgroup: owned copies of the paths given to open.
 * @paths:	points at them.
 * @reclaim_path: @cgroup/memory.reclaim.
 * @hooks:	test replacements of the edges.
 * @has_psi:	memory PSI was readable at open.
 * @has_scheme:	a policy with a scheme was applied.
 * @scheme_name: that scheme's name (owned).
 * @quota:	its quota, with VR_MEMCG_DEFAULT_* when it sets none; the
 *		private part is this backend's window and throughput state.
 * @wmarks:	its watermarks (user fields only).
 * @brake_us:	the PSI brake of its windows, us of stall.
 * @wm_active, @wm_checked, @wm_next_check_us: watermark state.
 * @paused:	pause() was called.
 * @stop:	why the current window does no more.
 * @psi_at_start_us, @psi_at_start_known: PSI "some" total when the current
 *		window began.
 * @refaults_at_start_bytes, @refaults_at_start_known: vmstat's refaults when
 *		the current window began (read only for a refault_bytes goal).
 * @written:	bytes and time (total_charged_sz, total_charged_ns) of every
 *		write that succeeded, window or request alike: the throughput
 *		that sizes chunks. (The quota's own throughput counts a window's
 *		bytes only when it closes, as DAMOS does, so it lags within a
 *		window.)
 * @stats:	cumulative stats (reclaimer_cpu_us from @cpu_ns).
 * @cpu_ns:	thread CPU time spent in writes, ns.
 * @warned:	failure messages already logged at warning level (a set of
 *		owned strings, at most VR_MEMCG_MAX_WARNED), so that a failure
 *		that repeats every tick is logged once.
 */
struct memcg {
	char *sysfs;
	char *procfs;
	char *cgroup;
	struct vr_agent_paths paths;
	char *reclaim_path;
	struct vr_memcg_hooks hooks;
	bool has_psi;

	bool has_scheme;
	char *scheme_name;
	struct vr_quota quota;
	struct vr_watermarks wmarks;
	uint64_t brake_us;
	bool wm_active;
	bool wm_checked;
	uint64_t wm_next_check_us;
	bool paused;

	enum window_stop stop;
	uint64_t psi_at_start_us;
	bool psi_at_start_known;
	uint64_t refaults_at_start_bytes;
	bool refaults_at_start_known;

	struct vr_quota written;
	struct vr_backend_stats stats;
	uint64_t cpu_ns;
	GHashTable *warned;
};

/* Distinct failures logged at warning level; later ones go to debug. */
#define VR_MEMCG_MAX_WARNED 32

/* ---- pure decisions ---- */

uint64_t vr_memcg_chunk_bytes(uint64_t budget_left_bytes, uint64_t throughput_bpms)
{
	uint64_t chunk = throughput_bpms > UINT64_MAX / VR_MEMCG_CHUNK_TARGET_MS ?
				 UINT64_MAX :
				 throughput_bpms * VR_MEMCG_CHUNK_TARGET_MS;

	chunk = CLAMP(chunk, VR_MEMCG_CHUNK_MIN_BYTES, VR_MEMCG_CHUNK_MAX_BYTES);
	chunk = MIN(chunk, budget_left_bytes);
	return chunk / VR_PAGE_SIZE * VR_PAGE_SIZE;
}

uint64_t vr_memcg_psi_brake_us(const struct vr_quota *q)
{
	uint64_t brake_us = UINT64_MAX;

	for (guint i = 0; i < q->nr_goals && i < VR_MAX_QUOTA_GOALS; i++)
		if (q->goals[i].metric == VR_GOAL_SOME_MEM_PSI_US)
			brake_us = MIN(brake_us, q->goals[i].target);
	if (brake_us != UINT64_MAX)
		return brake_us;
	/* per mille of the window: ms * 1000 us/ms * per_mille / 1000 */
	return q->reset_interval_ms > UINT64_MAX / VR_MEMCG_PSI_BRAKE_PER_MILLE ?
		       UINT64_MAX :
		       q->reset_interval_ms * VR_MEMCG_PSI_BRAKE_PER_MILLE;
}

/* ---- the edges ---- */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(const struct memcg *m)
{
	return m->hooks.now_ns ? m->hooks.now_ns(m->hooks.data) : clock_ns(CLOCK_MONOTONIC);
}

static uint64_t cpu_ns(const struct memcg *m)
{
	return m->hooks.cpu_ns ? m->hooks.cpu_ns(m->hooks.data) : clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Logs @error at warning level the first time, at debug level after. */
static void note_failure(struct memcg *m, const GError *error)
{
	if (g_hash_table_contains(m->warned, error->message) ||
	    g_hash_table_size(m->warned) >= VR_MEMCG_MAX_WARNED) {
		g_debug("memcg: %s", error->message);
		return;
	}
	g_warning("memcg: %s", error->message);
	g_hash_table_add(m->warned, g_strdup(error->message));
}

/**
 * enum write_result - how a memory.reclaim write went.
 * @WRITE_DONE:	 the kernel reclaimed what was asked.
 * @WRITE_LESS:	 EAGAIN: it reclaimed less (an unknown part).
 * @WRITE_FAILED: any other failure (@error set).
 */
enum write_result {
	WRITE_DONE,
	WRITE_LESS,
	WRITE_FAILED,
};

/*
 * Asks memory.reclaim for @bytes, timing it; counts the stats. *@took_ns is
 * the write's wall time. @error is set only for WRITE_FAILED.
 */
static enum write_result reclaim_chunk(struct memcg *m, uint64_t bytes, uint64_t *took_ns,
				       GError **error)
{
	char value[32];
	int err = 0;
	uint64_t begin_ns, begin_cpu_ns, end_cpu_ns;
	g_autoptr(GError) local = NULL;
	gboolean ok;

	g_snprintf(value, sizeof(value), "%" G_GUINT64_FORMAT, (guint64)bytes);
	begin_cpu_ns = cpu_ns(m);
	begin_ns = now_ns(m);
	if (m->hooks.write)
		ok = m->hooks.write(m->hooks.data, m->reclaim_path, value, &err, &local);
	else
		ok = vr_kfile_write_errno(m->reclaim_path, value, &err, &local);
	*took_ns = now_ns(m) - begin_ns;
	end_cpu_ns = cpu_ns(m);
	m->cpu_ns += end_cpu_ns >= begin_cpu_ns ? end_cpu_ns - begin_cpu_ns : 0;
	m->stats.reclaimer_cpu_us = m->cpu_ns / 1000;
	m->stats.nr_tried++;
	m->stats.sz_tried += bytes;
	if (ok) {
		m->stats.nr_applied++;
		m->stats.sz_applied += bytes;
		vr_quota_measure(&m->written, bytes, *took_ns);
		return WRITE_DONE;
	}
	if (err == EAGAIN)
		return WRITE_LESS;
	if (!local)
		g_set_error(&local, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "%s refused '%s'",
			    m->reclaim_path, value);
	g_propagate_error(error, g_steal_pointer(&local));
	return WRITE_FAILED;
}

/* The PSI "some" total, us; FALSE when unknown (no PSI, or a failed read,
 * logged). */
static bool read_psi_some(struct memcg *m, uint64_t *total_us)
{
	struct vr_psi_memory psi;
	g_autoptr(GError) error = NULL;

	if (!m->has_psi)
		return false;
	if (!vr_psi_read_memory(&m->paths, &psi, &error)) {
		note_failure(m, error);
		return false;
	}
	*total_us = psi.some.total_us;
	return true;
}

/* ---- the windows ---- */

/* Is the scheme active by its watermarks at @now_us? Reads the metric when
 * a check is due; a failed read keeps the state (logged). */
static bool watermarks_active(struct memcg *m, uint64_t now_us)
{
	struct vr_meminfo mi;
	g_autoptr(GError) error = NULL;

	if (m->wmarks.metric == VR_WMARK_NONE)
		return true;
	if (m->wm_checked && now_us < m->wm_next_check_us)
		return m->wm_active;
	m->wm_checked = true;
	m->wm_next_check_us = now_us + m->wmarks.interval_us;
	if (!vr_meminfo_read(&m->paths, &mi, &error)) {
		g_prefix_error(&error, "watermarks: ");
		note_failure(m, error);
		return m->wm_active;
	}
	m->wm_active =
		vr_watermarks_next_state(&m->wmarks, m->wm_active, vr_meminfo_free_mem_rate(&mi));
	return m->wm_active;
}

/* The refaults total, bytes, when the scheme has a refault_bytes goal;
 * FALSE when it has none or vmstat cannot be read (logged). */
static bool read_refaults(struct memcg *m, uint64_t *total_bytes)
{
	struct vr_vmstat_reclaim vmstat;
	g_autoptr(GError) error = NULL;
	bool wanted = false;

	for (guint i = 0; i < m->quota.nr_goals && i < VR_MAX_QUOTA_GOALS; i++)
		wanted |= m->quota.goals[i].metric == VR_GOAL_REFAULT_BYTES;
	if (!wanted)
		return false;
	if (!vr_vmstat_reclaim_read(&m->paths, &vmstat, &error)) {
		note_failure(m, error);
		return false;
	}
	*total_bytes = vmstat.refault_bytes;
	return true;
}

/* Sets @current to the growth of a counter since the window began (0 when
 * it went back); keeps it when either end is unknown. */
static void window_delta(uint64_t *current, bool start_known, uint64_t start, bool now_known,
			 uint64_t now)
{
	if (start_known && now_known)
		*current = now >= start ? now - start : 0;
}

/* Measures the goals of the closing window: stall and refaults during it,
 * free memory now; user_input goals keep the value the policy gave. */
static void measure_goals(struct memcg *m, bool psi_known, uint64_t psi_now_us, bool refaults_known,
			  uint64_t refaults_now_bytes)
{
	struct vr_quota *q = &m->quota;

	for (guint i = 0; i < q->nr_goals && i < VR_MAX_QUOTA_GOALS; i++) {
		struct vr_quota_goal *g = &q->goals[i];
		struct vr_meminfo mi;
		g_autoptr(GError) error = NULL;

		switch (g->metric) {
		case VR_GOAL_SOME_MEM_PSI_US:
			window_delta(&g->current, m->psi_at_start_known, m->psi_at_start_us,
				     psi_known, psi_now_us);
			break;
		case VR_GOAL_REFAULT_BYTES:
			window_delta(&g->current, m->refaults_at_start_known,
				     m->refaults_at_start_bytes, refaults_known,
				     refaults_now_bytes);
			break;
		case VR_GOAL_FREE_MEM_RATE:
			if (vr_meminfo_read(&m->paths, &mi, &error))
				g->current = vr_meminfo_free_mem_rate(&mi);
			else
				note_failure(m, error);
			break;
		case VR_GOAL_USER_INPUT:
			break;
		}
	}
}

static void window_begin(struct memcg *m, uint64_t now_us)
{
	uint64_t psi_now_us = 0, refaults_now_bytes = 0;
	bool psi_known = read_psi_some(m, &psi_now_us);
	bool refaults_known = read_refaults(m, &refaults_now_bytes);

	measure_goals(m, psi_known, psi_now_us, refaults_known, refaults_now_bytes);
	if (vr_quota_window_start(&m->quota, now_us))
		m->stats.qt_exceeds++;
	m->psi_at_start_us = psi_now_us;
	m->psi_at_start_known = psi_known;
	m->refaults_at_start_bytes = refaults_now_bytes;
	m->refaults_at_start_known = refaults_known;
	m->stop = STOP_NONE;
}

/* Did the stall grow past the brake since the window began? */
static bool brake_engaged(struct memcg *m)
{
	uint64_t psi_now_us;

	if (!m->psi_at_start_known || !read_psi_some(m, &psi_now_us))
		return false;
	return psi_now_us > m->psi_at_start_us && psi_now_us - m->psi_at_start_us > m->brake_us;
}

/* Delay until the current window ends or the watermarks are due, us. */
static uint64_t wait_us(const struct memcg *m, uint64_t now_us)
{
	uint64_t length_us = m->quota.reset_interval_ms > UINT64_MAX / 1000 ?
				     UINT64_MAX :
				     m->quota.reset_interval_ms * 1000;
	uint64_t end_us = m->quota.charged_from_us > UINT64_MAX - length_us ?
				  UINT64_MAX :
				  m->quota.charged_from_us + length_us;

	if (m->wmarks.metric != VR_WMARK_NONE)
		end_us = MIN(end_us, m->wm_next_check_us);
	return end_us > now_us ? end_us - now_us : 0;
}

static const char *stop_name(enum window_stop stop)
{
	switch (stop) {
	case STOP_NONE:
		return "none";
	case STOP_BUDGET:
		return "budget used";
	case STOP_EAGAIN:
		return "nothing more to reclaim (EAGAIN)";
	case STOP_PSI:
		return "memory pressure brake";
	case STOP_ERROR:
		return "write failed";
	}
	return "?";
}

static void window_stop(struct memcg *m, enum window_stop stop)
{
	m->stop = stop;
	g_debug("memcg: window stopped: %s after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
		" bytes",
		stop_name(stop), (guint64)m->quota.charged_sz, (guint64)m->quota.esz);
}

static uint64_t memcg_tick(gpointer backend, uint64_t now_us)
{
	struct memcg *m = backend;
	g_autoptr(GError) error = NULL;
	uint64_t chunk, took_ns;

	if (!m->has_scheme || m->paused)
		return VR_MEMCG_IDLE_TICK_US;
	if (!watermarks_active(m, now_us))
		return m->wm_next_check_us > now_us ? m->wm_next_check_us - now_us : 0;
	if (vr_quota_window_due(&m->quota, now_us))
		window_begin(m, now_us);
	if (m->stop != STOP_NONE)
		return wait_us(m, now_us);
	chunk = vr_memcg_chunk_bytes(vr_quota_budget_left(&m->quota),
				     vr_quota_throughput_bpms(&m->written));
	if (!chunk) {
		window_stop(m, STOP_BUDGET);
		return wait_us(m, now_us);
	}
	if (brake_engaged(m)) {
		window_stop(m, STOP_PSI);
		return wait_us(m, now_us);
	}
	switch (reclaim_chunk(m, chunk, &took_ns, &error)) {
	case WRITE_DONE:
		vr_quota_charge(&m->quota, chunk, took_ns);
		if (vr_quota_budget_left(&m->quota) < VR_PAGE_SIZE) {
			window_stop(m, STOP_BUDGET);
			return wait_us(m, now_us);
		}
		return VR_MEMCG_CHUNK_GAP_US;
	case WRITE_LESS:
		vr_quota_charge(&m->quota, chunk, took_ns);
		window_stop(m, STOP_EAGAIN);
		return wait_us(m, now_us);
	case WRITE_FAILED:
		break;
	}
	note_failure(m, error);
	window_stop(m, STOP_ERROR);
	return wait_us(m, now_us);
}

/* ---- the ops ---- */

static gboolean memcg_probe(const struct vr_agent_paths *paths, GError **error)
{
	g_autofree char *path = g_build_filename(paths->cgroup, "memory.reclaim", NULL);

	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no %s: needs cgroup v2 mounted at %s with the memory controller "
			    "(Linux 5.19 or later has memory.reclaim)",
			    path, paths->cgroup);
		return FALSE;
	}
	return TRUE;
}

static void memcg_close(gpointer backend)
{
	struct memcg *m = backend;

	if (!m)
		return;
	g_free(m->sysfs);
	g_free(m->procfs);
	g_free(m->cgroup);
	g_free(m->reclaim_path);
	g_free(m->scheme_name);
	g_hash_table_unref(m->warned);
	g_free(m);
}

static gpointer memcg_open(const struct vr_agent_paths *paths, GError **error)
{
	struct memcg *m;
	struct vr_psi_memory psi;
	g_autoptr(GError) psi_error = NULL;

	if (!memcg_probe(paths, error))
		return NULL;
	m = g_new0(struct memcg, 1);
	m->sysfs = g_strdup(paths->sysfs);
	m->procfs = g_strdup(paths->procfs);
	m->cgroup = g_strdup(paths->cgroup);
	m->paths = (struct vr_agent_paths){ m->sysfs, m->procfs, m->cgroup };
	m->reclaim_path = g_build_filename(m->cgroup, "memory.reclaim", NULL);
	m->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	m->has_psi = vr_psi_read_memory(&m->paths, &psi, &psi_error);
	if (!m->has_psi)
		g_message("memcg: reclaiming without the memory pressure brake: %s",
			  psi_error->message);
	return m;
}

/* The first scheme, after checking that every one pages out; NULL with no
 * scheme (and no error). */
static const struct vr_scheme *pick_scheme(const struct memcg *m, const struct vr_policy *policy,
					   GError **error)
{
	const struct vr_scheme *first = NULL;

	for (guint i = 0; policy->schemes && i < policy->schemes->len; i++) {
		const struct vr_scheme *s = g_ptr_array_index(policy->schemes, i);

		if (s->action != VR_ACTION_PAGEOUT) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "scheme '%s': action '%s' cannot be done by the memcg backend "
				    "(memory.reclaim only pages out)",
				    s->name, vr_action_name(s->action));
			return NULL;
		}
		if (!first)
			first = s;
	}
	if (!first)
		return NULL;
	if (!vr_scheme_validate(first, error)) {
		g_prefix_error(error, "scheme '%s': ", first->name);
		return NULL;
	}
	for (guint i = 0; i < first->quota.nr_goals; i++) {
		if (first->quota.goals[i].metric == VR_GOAL_SOME_MEM_PSI_US && !m->has_psi) {
			g_set_error(
				error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
				"scheme '%s': the some_mem_psi_us goal needs memory PSI, and %s/"
				"pressure/memory cannot be read",
				first->name, m->procfs);
			return NULL;
		}
	}
	return first;
}

/* @s's quota as this backend runs it: the default cap when it sets none. */
static struct vr_quota effective_quota(const struct vr_scheme *s)
{
	struct vr_quota q = s->quota;

	if (!vr_quota_is_set(&q)) {
		q.sz = VR_MEMCG_DEFAULT_SZ_BYTES;
		if (!q.reset_interval_ms)
			q.reset_interval_ms = VR_MEMCG_DEFAULT_WINDOW_MS;
	}
	return q;
}

static gboolean memcg_apply_policy(gpointer backend, const struct vr_policy *policy, GError **error)
{
	struct memcg *m = backend;
	const struct vr_scheme *s;
	struct vr_quota q;
	const struct vr_quota *old = &m->quota;
	bool same;
	g_autoptr(GError) local = NULL;

	s = pick_scheme(m, policy, &local);
	if (local) {
		g_propagate_prefixed_error(error, g_steal_pointer(&local), "memcg backend: ");
		return FALSE;
	}
	if (!s) {
		g_message("memcg: the policy has no scheme: nothing to reclaim");
		m->has_scheme = false;
		g_clear_pointer(&m->scheme_name, g_free);
		return TRUE;
	}
	if (policy->schemes->len > 1)
		g_message("memcg: only scheme '%s' sizes the reclaim; the %u others are ignored "
			  "(memory.reclaim has no access pattern to tell them apart)",
			  s->name, policy->schemes->len - 1);

	/* commit: the measured throughput always stays (it is the guest's);
	 * the window goes on only for the same scheme, as in DAMOS */
	same = m->has_scheme && g_strcmp0(m->scheme_name, s->name) == 0;
	q = effective_quota(s);
	q.total_charged_sz = old->total_charged_sz;
	q.total_charged_ns = old->total_charged_ns;
	q.esz = same ? old->esz : 0;
	q.esz_bp = same ? old->esz_bp : 0;
	q.charged_sz = same ? old->charged_sz : 0;
	q.charged_from_us = same ? old->charged_from_us : 0;
	q.window_started = same && old->window_started;
	q.resume_set = false;
	q.min_score = 0;
	m->quota = q;
	m->brake_us = vr_memcg_psi_brake_us(&m->quota);
	m->wmarks = s->wmarks;
	if (!same) {
		m->wm_active = m->wmarks.metric == VR_WMARK_NONE;
		m->wm_checked = false;
		m->stop = STOP_NONE;
	}
	g_free(m->scheme_name);
	m->scheme_name = g_strdup(s->name);
	m->has_scheme = true;
	return TRUE;
}

static gboolean memcg_pause(gpointer backend, GError **error)
{
	struct memcg *m = backend;

	(void)error;
	m->paused = true;
	return TRUE;
}

static gboolean memcg_resume(gpointer backend, GError **error)
{
	struct memcg *m = backend;

	(void)error;
	m->paused = false;
	/* time passed: look at the watermarks again at the next tick */
	m->wm_checked = false;
	return TRUE;
}

/*
 * An explicit request: chunks until @bytes (whole pages: a remainder under a
 * page is not asked for), @deadline_ms (checked before each write; a write in
 * progress is not interrupted) or EAGAIN. It runs while paused, does not
 * charge the windows' quota and does not brake on PSI (the host asked), but
 * teaches the throughput.
 */
static gboolean memcg_reclaim(gpointer backend, uint64_t bytes, uint64_t deadline_ms,
			      uint64_t *reclaimed, GError **error)
{
	struct memcg *m = backend;
	uint64_t start_ns = now_ns(m);
	uint64_t deadline_ns = deadline_ms > UINT64_MAX / 1000000 ? UINT64_MAX :
								    deadline_ms * 1000000;

	*reclaimed = 0;
	while (*reclaimed < bytes && now_ns(m) - start_ns < deadline_ns) {
		uint64_t chunk = vr_memcg_chunk_bytes(bytes - *reclaimed,
						      vr_quota_throughput_bpms(&m->written));
		uint64_t took_ns;

		if (!chunk)
			break;
		switch (reclaim_chunk(m, chunk, &took_ns, error)) {
		case WRITE_DONE:
			vr_quota_measure(&m->quota, chunk, took_ns);
			*reclaimed += chunk;
			continue;
		case WRITE_LESS:
			vr_quota_measure(&m->quota, chunk, took_ns);
			return TRUE;
		case WRITE_FAILED:
			g_prefix_error(error,
				       "reclaiming %" G_GUINT64_FORMAT " bytes (%" G_GUINT64_FORMAT
				       " done): ",
				       (guint64)bytes, (guint64)*reclaimed);
			return FALSE;
		}
	}
	return TRUE;
}

static gboolean memcg_read_stats(gpointer backend, struct vr_backend_stats *out, GError **error)
{
	struct memcg *m = backend;

	(void)error;
	*out = m->stats;
	return TRUE;
}

static gboolean memcg_read_regions(gpointer backend, guint max, GArray *out, GError **error)
{
	(void)backend;
	(void)max;
	(void)out;
	(void)error;
	return TRUE; /* no access picture without DAMON */
}

void vr_memcg_set_hooks(gpointer backend, const struct vr_memcg_hooks *hooks)
{
	struct memcg *m = backend;

	m->hooks = *hooks;
}

const struct vr_backend_ops vr_backend_memcg = {
	.name = "memcg",
	.probe = memcg_probe,
	.open = memcg_open,
	.apply_policy = memcg_apply_policy,
	.pause = memcg_pause,
	.resume = memcg_resume,
	.reclaim = memcg_reclaim,
	.tick = memcg_tick,
	.read_stats = memcg_read_stats,
	.read_regions = memcg_read_regions,
	.close = memcg_close,
};
