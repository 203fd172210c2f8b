/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's fleet round (manager-private.h), each tick, systemd-oomd's
 * shape: acquire a snapshot (the host's memory and pressure, each QEMU's
 * resident size, in one batch of /proc reads) -> decide with pure policy
 * (the host's watermarks, the fleet quota's shares: common/host-watermarks.h,
 * common/fleet-quota.h; each domain's offer from its action) -> act (each
 * domain's action, one window: actions/action.h), then the domains' state
 * saved for a restart (hostd/state-dir.h). Also what the round reads of each
 * domain's QEMU process, and its state restored when it is first known.
 */
#include <string.h>

#include "actions/action.h"
#include "fleet-quota.h"
#include "manager-private.h"
#include "procfs-text.h"
#include "state-dir.h"

/* State files written per tick at most (vr_domain_state_needs_save()'s "in
 * turn"; a pause or resume goes at once): each is a file created and
 * renamed. Up to 100 domains that change every 5 s this is never reached;
 * 1000 changing domains are each written every 50 s or so. */
#define VR_MANAGER_STATE_SAVES_PER_TICK 20U

/* ---- state across restarts (hostd/state-dir.h) ---------------------------- */

static uint64_t window_len_us(const struct vr_manager *m)
{
	return m->env.config->fleet_quota_reset_interval_ms * 1000;
}

/*
 * @d's QEMU process is known (d->pid): learn its incarnation, and, the first
 * time, take what the previous vreclaimd saved of it. A file that does not
 * parse, or is of another QEMU, is logged and ignored: the domain starts
 * afresh, as without a file.
 */
static void domain_restore_state(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	struct vr_qemu_incarnation qemu;
	struct vr_domain_state st;
	gboolean first = !d->qemu_known;

	if (!vr_qemu_incarnation_read(m->env.procfs, d->pid, &qemu, &error)) {
		g_debug("%s: %s", d->name, error->message);
		return;
	}
	d->qemu = qemu;
	d->qemu_known = TRUE;
	if (!first)
		return; /* a new QEMU of a domain we had: its stats go on */
	if (!vr_state_dir_load(m->env.config->state_dir, d->uuid, &st, &error)) {
		if (!g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
			g_warning("%s: its saved state is ignored: %s", d->name, error->message);
		return;
	}
	if (!vr_domain_state_check(&st, d->uuid, &qemu, &error)) {
		g_message("%s: its saved state is ignored: %s", d->name, error->message);
		return;
	}
	vr_domain_state_apply(d, &st, window_len_us(m), g_get_monotonic_time());
	g_message("%s: state restored: reclaimed %" G_GUINT64_FORMAT " bytes%s%s", d->name,
		  d->reclaimed_bytes, d->user_paused ? ", paused" : "",
		  d->window_hold_until_us ? ", its share of the current quota window granted" : "");
}

/* Write @d's state file as @st (at @now_us). */
static void domain_save_state(struct vr_manager *m, struct vr_domain *d,
			      const struct vr_domain_state *st, gint64 now_us)
{
	g_autoptr(GError) error = NULL;

	if (!vr_state_dir_prepare(m->env.config->state_dir, &error) ||
	    !vr_state_dir_save(m->env.config->state_dir, st, &error)) {
		if (!m->state_dir_failed)
			g_warning("%s: cannot save its state (vreclaimd keeps going; a restart "
				  "starts its statistics afresh): %s",
				  d->name, error->message);
		m->state_dir_failed = TRUE;
		return;
	}
	m->state_dir_failed = FALSE;
	g_free(d->state_saved);
	d->state_saved = g_memdup2(st, sizeof(*st));
	d->state_saved_us = now_us;
}

/*
 * Write the state files of @doms (the managed domains, by name) that
 * changed (vr_domain_state_needs_save()): a pause or resume at once, the
 * others in turn, at most VR_MANAGER_STATE_SAVES_PER_TICK a tick, from where
 * the last tick's ran out. @force (a clean exit): every one that differs.
 */
void vr_fleet_round_save_states(struct vr_manager *m, GPtrArray *doms, gboolean force)
{
	gint64 now = g_get_monotonic_time();
	guint budget = VR_MANAGER_STATE_SAVES_PER_TICK;
	guint n = doms->len, start = n ? m->state_cursor % n : 0;
	gboolean cursor_set = FALSE;

	for (guint k = 0; k < n; k++) {
		guint i = (start + k) % n;
		struct vr_domain *d = g_ptr_array_index(doms, i);
		struct vr_domain_state st;
		enum vr_domain_state_save save;

		if (!d->qemu_known || !d->managed)
			continue;
		vr_domain_state_fill(d, &st);
		save = vr_domain_state_needs_save(d->state_saved, &st,
						  force ? G_MAXINT64 : now - d->state_saved_us);
		if (save == VR_DOMAIN_STATE_SAVE_NO)
			continue;
		if (save == VR_DOMAIN_STATE_SAVE_IN_TURN && !force && !budget) {
			if (!cursor_set)
				m->state_cursor = i; /* first in line next tick */
			cursor_set = TRUE;
			continue;
		}
		if (save == VR_DOMAIN_STATE_SAVE_IN_TURN && budget)
			budget--;
		domain_save_state(m, d, &st, now);
	}
}

/* Read @d's QEMU process @pid's status each tick (its resident size). */
void vr_fleet_round_watch(struct vr_manager *m, struct vr_domain *d, pid_t pid)
{
	g_autoptr(GError) error = NULL;

	if (pid == d->pid && d->status_read_set)
		return;
	if (d->status_read_set)
		vr_read_batch_remove(m->reads, d->status_read);
	d->status_read_set = FALSE;
	g_autofree char *path = g_strdup_printf("%s/%d/status", m->env.procfs, (int)pid);
	d->status_read = vr_read_batch_add(m->reads, path, &error);
	if (error) {
		g_warning("%s: %s", d->name, error->message);
		return;
	}
	d->status_read_set = TRUE;
	d->pid = pid;
	d->rss_start_bytes = 0;
	domain_restore_state(m, d);
}

/* A libvirt domain's QEMU process, from libvirt's pid file. */
void vr_fleet_round_watch_pid(struct vr_manager *m, struct vr_domain *d)
{
	g_autoptr(GError) error = NULL;
	pid_t pid = 0;

	if (d->qmp_path || !m->run_dir)
		return;
	if (!vr_libvirt_qemu_pid(m->run_dir, m->env.procfs, d->name, &pid, &error)) {
		g_debug("%s: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return;
	}
	vr_fleet_round_watch(m, d, pid);
}

/* ---- acquire -> decide -> act ------------------------------------------------ */

static void acquire_host(struct vr_manager *m)
{
	const GError *file_error = NULL;
	gsize len = 0;
	struct vr_meminfo mi;
	struct vr_psi_memory psi = { 0 };
	g_autoptr(GError) error = NULL;
	const char *text = vr_read_batch_text(m->reads, m->meminfo_read, &len, &file_error);

	if (!text || !vr_meminfo_parse(text, &mi, &error)) {
		g_warning("cannot read the host's memory: %s",
			  file_error ? file_error->message : error->message);
		m->host_known = FALSE;
		return;
	}
	m->host.mem_total_bytes = mi.mem_total_bytes;
	m->host.mem_available_bytes = mi.mem_available_bytes;
	m->host.swap_total_bytes = mi.swap_total_bytes;
	m->host.swap_free_bytes = mi.swap_free_bytes;
	text = vr_read_batch_text(m->reads, m->psi_read, &len, &file_error);
	if (text && vr_psi_parse(text, &psi, NULL)) {
		m->host.psi_some_avg10_bp = psi.some.avg10_bp;
		m->host.psi_full_avg10_bp = psi.full.avg10_bp;
	}
	m->host_known = TRUE;
}

/* Return: FALSE when @d's QEMU process is gone. */
static gboolean acquire_domain(struct vr_manager *m, struct vr_domain *d)
{
	const GError *file_error = NULL;
	gsize len = 0;
	struct vr_proc_status st;
	g_autoptr(GError) error = NULL;

	if (!d->status_read_set)
		return TRUE;
	const char *text = vr_read_batch_text(m->reads, d->status_read, &len, &file_error);
	if (!text || !vr_proc_status_parse(text, vr_read_batch_path(m->reads, d->status_read), &st,
					   &error)) {
		/* The QEMU process is gone; libvirt's stop event follows. */
		g_debug("%s: %s", d->name, file_error ? file_error->message : error->message);
		vr_read_batch_remove(m->reads, d->status_read);
		d->status_read_set = FALSE;
		d->pid = 0;
		return FALSE;
	}
	d->rss_bytes = st.vm_rss_bytes;
	d->swap_bytes = st.vm_swap_bytes;
	if (!d->rss_start_bytes)
		d->rss_start_bytes = st.vm_rss_bytes;
	return TRUE;
}

/* What the actions are told this tick (the act step adds its own). */
static void action_ctx(const struct vr_manager *m, struct vr_action_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->config = m->env.config;
	ctx->host = &m->host;
	ctx->host_known = m->host_known;
	ctx->host_needs_memory = m->host_needs_memory;
	ctx->ticks = m->ticks;
}

/* What @d offers the fleet this window, by its action (->offer). */
static gboolean domain_offer(const struct vr_action_ctx *ctx, struct vr_domain *d,
			     struct vr_fleet_domain *fd)
{
	return d->action_ops && d->action_ops->offer(d, ctx, fd);
}

/* Whether the host needs memory, by its watermarks. Return: TRUE when that
 * changed. */
static gboolean decide_host(struct vr_manager *m)
{
	gboolean needed = m->host_needs_memory;

	if (m->host_known)
		needed = vr_host_needs_memory(&m->env.config->host_wmarks, &m->host, needed);
	m->host_state = m->host_known ? vr_host_memory_state(&m->env.config->host_wmarks, &m->host,
							     needed) :
					VR_HOST_MEMORY_UNKNOWN;
	if (needed == m->host_needs_memory)
		return FALSE;
	g_message("the host %s memory (free rate %u per-mille)",
		  needed ? "needs" : "no longer needs", vr_host_free_mem_rate(&m->host));
	m->host_needs_memory = needed;
	return TRUE;
}

/* Each domain's offer and credit, and its share of the fleet quota. */
static void decide_fleet(struct vr_manager *m, GPtrArray *doms)
{
	g_autofree struct vr_fleet_domain *fleet =
		g_new0(struct vr_fleet_domain, MAX(doms->len, 1));
	g_autofree uint64_t *shares = g_new0(uint64_t, MAX(doms->len, 1));
	g_autoptr(GError) error = NULL;
	gboolean needed = m->host_needs_memory;
	int64_t now_us = g_get_monotonic_time();
	struct vr_action_ctx ctx;

	action_ctx(m, &ctx);

	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		struct vr_fleet_domain *fd = &fleet[i];
		fd->name = d->name;
		fd->priority = d->tuning->priority;
		fd->rss_bytes = d->rss_bytes;
		fd->guaranteed_bytes = d->tuning->guaranteed_bytes;
		/* What its last share bought (before the new one is written),
		 * bound by the config's floor. */
		fd->credit_permille =
			MAX(vr_domain_update_credit(
				    d, now_us, m->env.config->fleet_quota_reset_interval_ms * 1000),
			    m->env.config->fleet_credit_floor_bp / 10);
		/* Offers are made whether or not the host needs memory: the
		 * status shows them, and the holds are ready when it does. */
		fd->eligible = !d->user_paused && d->rss_bytes > 0 && domain_offer(&ctx, d, fd);
		if (!fd->eligible)
			vr_fleet_offer_hold_reset(&d->offer_hold);
	}
	uint64_t quota = m->env.config->fleet_quota_bytes ? m->env.config->fleet_quota_bytes :
							    G_MAXUINT64;
	if (!vr_fleet_distribute(fleet, doms->len, needed ? quota : 0, shares, &error)) {
		g_warning("cannot share the fleet quota: %s", error->message);
		memset(shares, 0, sizeof(*shares) * doms->len);
	}
	for (guint i = 0; i < doms->len; i++)
		((struct vr_domain *)g_ptr_array_index(doms, i))->share_bytes = shares[i];
}

/* Is @d's status (the @i-th managed domain) read this tick, one in
 * @period? At once when it was never read. */
static gboolean status_due(const struct vr_manager *m, const struct vr_domain *d, guint i,
			   guint period)
{
	return !d->rss_bytes || (m->ticks + i) % period == 0;
}

guint vr_fleet_round_acquire(struct vr_manager *m, GPtrArray *doms, GPtrArray *gone)
{
	g_autoptr(GError) error = NULL;
	guint status_period;

	/* Each domain's status every status_period ticks, in turn (every tick
	 * up to 100 domains), and at once when it was never read. */
	status_period = vr_fleet_status_period_ticks(m->env.config->interval_ms, doms->len);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);

		if (d->status_read_set)
			vr_read_batch_set_skip(m->reads, d->status_read,
					       !status_due(m, d, i, status_period));
	}
	if (!vr_read_batch_run(m->reads, &error))
		g_warning("cannot read procfs: %s", error->message);
	acquire_host(m);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		/* Timed only when it works: the clock is a system call, two per
		 * domain of a large fleet each tick were a cost of their own. */
		if (d->status_read_set && !status_due(m, d, i, status_period))
			continue;
		uint64_t t0 = vr_thread_cpu_us();
		if (!d->status_read_set)
			vr_fleet_round_watch_pid(m, d);
		/* libvirt says when its domains stop; a --qmp QEMU is gone when
		 * its process is. */
		if (status_due(m, d, i, status_period) && !acquire_domain(m, d) && d->qmp_path)
			g_ptr_array_add(gone, d);
		d->cpu_us += vr_thread_cpu_us() - t0;
	}
	return status_period;
}

/* The context of the acquire and act steps: action_ctx()'s, and the pace of
 * the pictures and reports for a fleet of @nr_domains. */
static void round_ctx(struct vr_manager *m, guint nr_domains, struct vr_action_ctx *ctx)
{
	guint budget = MAX(m->env.config->fleet_pictures_per_tick, 1);

	action_ctx(m, ctx);
	/* A domain's picture is refreshed every picture_period ticks, in turn
	 * by its place among the managed domains (pictures-per-tick). */
	ctx->picture_period = MAX(1, (nr_domains + budget - 1) / budget);
	ctx->report_interval_ms =
		vr_fleet_report_interval_ms(m->env.config->interval_ms, nr_domains);
}

void vr_fleet_round_acquire_pictures(struct vr_manager *m, GPtrArray *doms)
{
	struct vr_action_ctx ctx;

	round_ctx(m, doms->len, &ctx);
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);

		ctx.act_index = i;
		if (d->action_ops && d->action_ops->acquire)
			d->action_ops->acquire(d, &ctx);
	}
}

void vr_fleet_round_decide(struct vr_manager *m, GPtrArray *doms, guint status_period)
{
	/* Each tick in a fleet whose agents report each tick; in a larger one
	 * once per status period (its inputs, the agents' reports and the
	 * QEMUs' RSS, change no faster), and at once when the host's need
	 * changed, a domain came or went, or vreclaimctl asked. */
	if (decide_host(m) || m->decide_now || doms->len != m->decided_domains ||
	    m->ticks - m->decided_tick >= status_period) {
		decide_fleet(m, doms);
		m->decided_tick = m->ticks;
		m->decided_domains = doms->len;
		m->decide_now = FALSE;
	}
}

void vr_fleet_round_act(struct vr_manager *m, GPtrArray *doms)
{
	struct vr_action_ctx ctx;

	round_ctx(m, doms->len, &ctx);
	/* One clock reading between two domains ends the one and starts the
	 * next. */
	uint64_t t0 = vr_thread_cpu_us();
	for (guint i = 0; i < doms->len; i++) {
		struct vr_domain *d = g_ptr_array_index(doms, i);
		ctx.act_index = i;
		if (d->action_ops)
			d->action_ops->act(d, &ctx);
		uint64_t t1 = vr_thread_cpu_us();
		d->cpu_us += t1 - t0;
		t0 = t1;
	}
}
