/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-pageout action (actions/action.h), for a guest without an agent:
 * the host-side reclaim (picture -> plan -> RAM map -> process_madvise, see
 * host-pageout.h), and the action's operations on a domain: its offer from
 * the host's access picture, one window of pageout per act step, the guest's
 * RAM map asked of QEMU on the domain's monitor worker first.
 */
#define _GNU_SOURCE

#include "actions/host-pageout.h"

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "actions/action.h"
#include "domain.h"
#include "fleet-quota.h"
#include "pageout-plan.h"
#include "process-pageout.h"
#include "protocol.h"
#include "qmp/qemu-commands.h"
#include "resident-runs.h"

/* clang-format off */
G_DEFINE_QUARK(vr-host-reclaim-error-quark, vr_host_reclaim_error)
/* clang-format on */

struct vr_host_reclaim {
	char *name;
	pid_t pid;
	int pidfd;
	int pagemap_fd;
	struct vr_ram_range *map;
	guint nr_map;
	uint64_t guest_memory_bytes;
	struct vr_access_source *source;
	struct vr_proto_regions picture;
	gboolean have_picture;
};

/* Checks the arguments of vr_host_reclaim_new() that need no system call. */
static gboolean check_args(const struct vr_ram_range *map, guint nr_map,
			   uint64_t guest_memory_bytes, const struct vr_access_source *source,
			   GError **error)
{
	if (!source) {
		g_set_error_literal(error, VR_HOST_RECLAIM_ERROR, VR_HOST_RECLAIM_ERROR_INVALID,
				    "no access source given");
		return FALSE;
	}
	if (guest_memory_bytes == 0) {
		g_set_error_literal(error, VR_HOST_RECLAIM_ERROR, VR_HOST_RECLAIM_ERROR_INVALID,
				    "the guest's memory size is 0 bytes: it must be above 0");
		return FALSE;
	}
	return vr_ram_map_validate(map, nr_map, error);
}

struct vr_host_reclaim *vr_host_reclaim_new(const char *name, pid_t pid,
					    const struct vr_ram_range *map, guint nr_map,
					    uint64_t guest_memory_bytes,
					    struct vr_access_source *source, GError **error)
{
	g_autoptr(vr_access_source) src = source;
	g_autoptr(vr_host_reclaim) hr = NULL;
	const char *who = name ? name : "?";
	int pidfd;

	if (!check_args(map, nr_map, guest_memory_bytes, src, error)) {
		g_prefix_error(error, "guest %s: ", who);
		return NULL;
	}
	pidfd = vr_pidfd_open(pid, error);
	if (pidfd < 0) {
		g_prefix_error(error, "guest %s: the QEMU process: ", who);
		return NULL;
	}
	hr = g_new0(struct vr_host_reclaim, 1);
	hr->name = g_strdup(who);
	hr->pid = pid;
	hr->pidfd = pidfd;
	hr->pagemap_fd = vr_pagemap_open(pid, pidfd, error);
	if (hr->pagemap_fd < 0) {
		g_prefix_error(error, "guest %s: the QEMU process: ", who);
		return NULL;
	}
	hr->map = g_memdup2(map, (gsize)nr_map * sizeof(*map));
	hr->nr_map = nr_map;
	hr->guest_memory_bytes = guest_memory_bytes;
	if (!vr_access_source_is_started(src) && !vr_access_source_start(src, error)) {
		g_prefix_error(error, "guest %s: starting the access source: ", who);
		return NULL;
	}
	hr->source = g_steal_pointer(&src);
	return g_steal_pointer(&hr);
}

const char *vr_host_reclaim_name(const struct vr_host_reclaim *hr)
{
	return hr->name;
}

/* The guest ranges of @plan (struct vr_pageout_range) as struct vr_range,
 * in the plan's order: what vr_ram_map_translate() takes. */
static struct vr_range *plan_to_guest_ranges(const GArray *plan)
{
	struct vr_range *guest = g_new(struct vr_range, MAX(plan->len, 1));

	for (guint i = 0; i < plan->len; i++) {
		const struct vr_pageout_range *r = &g_array_index(plan, struct vr_pageout_range, i);

		guest[i] = (struct vr_range){ .start = r->start, .end = r->end };
	}
	return guest;
}

/* The runs of @runs (struct vr_range, host-virtual) as struct iovec: what
 * vr_host_pageout() takes. */
static struct iovec *runs_to_iovecs(const GArray *runs)
{
	struct iovec *v = g_new(struct iovec, MAX(runs->len, 1));

	for (guint i = 0; i < runs->len; i++) {
		const struct vr_range *r = &g_array_index(runs, struct vr_range, i);

		v[i] = (struct iovec){ .iov_base = (void *)(uintptr_t)r->start,
				       .iov_len = (size_t)(r->end - r->start) };
	}
	return v;
}

void vr_host_reclaim_forget_picture(struct vr_host_reclaim *hr)
{
	vr_proto_regions_clear(&hr->picture);
	hr->have_picture = FALSE;
}

gboolean vr_host_reclaim_acquire(struct vr_host_reclaim *hr, GError **error)
{
	g_return_val_if_fail(hr != NULL, FALSE);
	vr_host_reclaim_forget_picture(hr);
	hr->have_picture = vr_access_source_get_regions(hr->source, &hr->picture, error);
	if (!hr->have_picture)
		g_prefix_error(error, "guest %s: reading the access picture: ", hr->name);
	return hr->have_picture;
}

gboolean vr_host_reclaim_step(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
			      uint64_t quota_bytes, struct vr_host_reclaim_result *result,
			      GError **error)
{
	g_auto(vr_proto_regions) picture = { 0 };
	g_autoptr(GArray) plan = NULL;
	g_autoptr(GArray) host = NULL;
	g_autofree struct vr_range *guest = NULL;
	g_autofree struct iovec *runs = NULL;
	struct vr_resident_runs rr = { 0 };
	struct vr_host_reclaim_result res = { 0 };
	uint64_t plan_bytes;
	gboolean ok = FALSE;

	g_return_val_if_fail(hr != NULL && scheme != NULL, FALSE);
	if (!hr->have_picture && !vr_host_reclaim_acquire(hr, error))
		goto out;
	/* The step takes the picture: the next one reads a new one. */
	picture = hr->picture;
	hr->picture = (struct vr_proto_regions){ 0 };
	hr->have_picture = FALSE;
	res.picture_regions = picture.regions ? picture.regions->len : 0;
	/* Reach past the quota for resident pages beyond those in swap. */
	plan_bytes = quota_bytes ? MAX(quota_bytes, VR_HOST_RECLAIM_SCAN_BYTES) : 0;
	if (!vr_pageout_plan(&picture, scheme, hr->guest_memory_bytes, plan_bytes, &plan, error)) {
		g_prefix_error(error, "guest %s: planning the pageout: ", hr->name);
		goto out;
	}
	res.planned_bytes = vr_pageout_plan_bytes(plan);
	if (plan->len == 0) {
		ok = TRUE;
		goto out;
	}
	guest = plan_to_guest_ranges(plan);
	if (!vr_ram_map_translate(hr->map, hr->nr_map, guest, plan->len, &host, error)) {
		g_prefix_error(error, "guest %s: translating the plan to host ranges: ", hr->name);
		goto out;
	}
	res.ranges = host->len;
	vr_resident_runs_init(&rr, quota_bytes);
	if (!vr_pagemap_read_resident(hr->pagemap_fd, hr->pid,
				      (const struct iovec *)(void *)host->data, host->len, &rr,
				      error)) {
		g_prefix_error(error, "guest %s: finding the resident pages: ", hr->name);
		goto out;
	}
	res.resident_bytes = rr.resident_bytes;
	res.swapped_bytes = rr.swapped_bytes;
	res.absent_bytes = rr.absent_bytes;
	res.runs = rr.runs->len;
	if (!rr.runs->len) {
		ok = TRUE;
		goto out;
	}
	runs = runs_to_iovecs(rr.runs);
	if (!vr_host_pageout(hr->pidfd, runs, rr.runs->len, quota_bytes, &res.advised_bytes,
			     error)) {
		g_prefix_error(error, "guest %s: paging out (QEMU pid %d): ", hr->name,
			       (int)hr->pid);
		goto out;
	}
	ok = TRUE;
out:
	vr_resident_runs_clear(&rr);
	if (result)
		*result = res;
	return ok;
}

gboolean vr_host_reclaim_step_in_swap(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
				      uint64_t quota_bytes, const struct vr_host_snapshot *host,
				      struct vr_host_reclaim_result *result, GError **error)
{
	uint64_t room;
	gboolean ok;

	g_return_val_if_fail(hr != NULL && scheme != NULL && host != NULL, FALSE);
	room = vr_host_pageout_room(host);
	if (!room) {
		if (result)
			*result = (struct vr_host_reclaim_result){ .swap_full = TRUE };
		return TRUE;
	}
	ok = vr_host_reclaim_step(hr, scheme, MIN(quota_bytes, room), result, error);
	if (result)
		result->swap_room_bytes = room;
	return ok;
}

gboolean vr_host_reclaim_cold_histogram(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
					uint64_t *hist_bytes, GError **error)
{
	const struct vr_proto_regions *picture;

	g_return_val_if_fail(hr != NULL && scheme != NULL && hist_bytes != NULL, FALSE);
	memset(hist_bytes, 0, (VR_MAX_SCORE + 1) * sizeof(*hist_bytes));
	if (!hr->have_picture && !vr_host_reclaim_acquire(hr, error))
		return FALSE;
	picture = &hr->picture;
	if (!vr_fleet_cold_histogram(picture->regions, picture->sample_interval_us,
				     picture->aggr_interval_us, scheme, hr->guest_memory_bytes,
				     hist_bytes, error)) {
		g_prefix_error(error, "guest %s: the cold histogram: ", hr->name);
		return FALSE;
	}
	return TRUE;
}

void vr_host_reclaim_free(struct vr_host_reclaim *hr)
{
	if (!hr)
		return;
	vr_access_source_free(hr->source);
	vr_proto_regions_clear(&hr->picture);
	if (hr->pidfd >= 0)
		close(hr->pidfd);
	if (hr->pagemap_fd >= 0)
		close(hr->pagemap_fd);
	g_free(hr->map);
	g_free(hr->name);
	g_free(hr);
}

/* ---- the action (actions/action.h) ---------------------------------------- */

/**
 * struct ram_map_job - the host-pageout action's QEMU half: where the
 * guest's RAM lives in the QEMU process (vr_qemu_guest_ram_map()).
 * @pid:	the QEMU process it was asked for (in).
 * @map:	struct vr_ram_range (out).
 */
struct ram_map_job {
	pid_t pid;
	GArray *map;
};

static void ram_map_job_free(gpointer data)
{
	struct ram_map_job *j = data;

	if (j->map)
		g_array_unref(j->map);
	g_free(j);
}

static gboolean ram_map_job_run(struct vr_qemu_monitor *mon, gpointer data, GError **error)
{
	struct ram_map_job *j = data;

	return vr_qemu_guest_ram_map(mon, &j->map, error);
}

/*
 * The rest of the host-pageout action's state for @d, from its guest RAM
 * @map: the host-damon access source on its QEMU process, and a pidfd.
 */
static gboolean domain_finish_host_reclaim(struct vr_domain *d, GArray *map, GError **error)
{
	g_autoptr(vr_access_source) source = NULL;
	struct vr_monitor_attrs attrs = d->policy->attrs;

	source = vr_access_source_new_host_damon(d->env->sysfs, d->env->procfs, d->pid, map, &attrs,
						 error);
	if (!source)
		return FALSE;
	d->host_reclaim = vr_host_reclaim_new(d->name, d->pid,
					      &g_array_index(map, struct vr_ram_range, 0), map->len,
					      d->info.memory_bytes, g_steal_pointer(&source),
					      error);
	return d->host_reclaim != NULL;
}

static void ram_map_job_done(struct vr_monitor_worker *w, gpointer data, const GError *error,
			     gpointer user_data)
{
	struct ram_map_job *j = data;
	struct vr_domain *d = user_data;
	g_autoptr(GError) local = NULL;
	const char *why;

	(void)w;
	/* What changed while QEMU was asked wins. */
	if (!d->managed || d->action != VR_DOMAIN_ACTION_HOST_PAGEOUT || d->host_reclaim ||
	    d->pid != j->pid)
		return;
	if (!error && domain_finish_host_reclaim(d, j->map, &local))
		return;
	if (error && (error->domain == VR_QEMU_MONITOR_ERROR ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_TIMEOUT) ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CLOSED) ||
		      g_error_matches(error, VR_QMP_ERROR, VR_QMP_ERROR_CONNECT))) {
		/* QEMU did not answer (or libvirt failed): ask again next
		 * window; the monitor's worker says whether it is degraded. */
		g_autofree char *msg = g_strdup_printf("host-pageout: %s", error->message);
		g_debug("%s: %s", d->name, msg);
		vr_domain_set_error(d, msg);
		vr_domain_monitor_failed(d, error);
		return;
	}
	why = error ? error->message : local->message;
	g_warning("%s: not managed: host-pageout: %s", d->name, why);
	vr_domain_set_unmanaged(d, "host-pageout: %s", why);
}

/*
 * Start the host-pageout action's state for @d: its guest RAM map is asked
 * of QEMU on the monitor's worker, the rest follows when it comes
 * (ram_map_job_done()). FALSE with @error when this host or this QEMU
 * cannot give it.
 */
static gboolean domain_start_host_reclaim(struct vr_domain *d, const struct vr_action_ctx *ctx,
					  GError **error)
{
	g_autoptr(GError) local = NULL;
	struct ram_map_job *j;

	if (ctx->config->host_access_source == VR_HOST_ACCESS_SOURCE_NONE) {
		g_set_error(error, VR_DOMAIN_ERROR, VR_DOMAIN_ERROR_UNSUPPORTED,
			    "host-pageout needs a host access source, and the config's "
			    "access-source is none");
		return FALSE;
	}
	if (d->pid <= 0) {
		g_set_error(error, VR_DOMAIN_ERROR, VR_DOMAIN_ERROR_UNSUPPORTED,
			    "host-pageout: its QEMU process is not known yet");
		return FALSE;
	}
	if (!vr_domain_monitor(d, &local)) {
		if (!local)
			return TRUE; /* its domain is being looked up */
		g_propagate_error(error, g_steal_pointer(&local));
		return FALSE;
	}
	if (vr_monitor_worker_is_busy(d->monitor))
		return TRUE; /* asked already */
	j = g_new0(struct ram_map_job, 1);
	j->pid = d->pid;
	vr_monitor_worker_submit(d->monitor, "ram-map", ram_map_job_run, ram_map_job_done, j,
				 ram_map_job_free, d);
	return TRUE;
}

/*
 * The host-pageout action, one window: the coldest guest memory by the
 * host's access picture, paged out of the QEMU process up to the share.
 */
static void host_pageout_act(struct vr_domain *d, const struct vr_action_ctx *ctx)
{
	g_autoptr(GError) error = NULL;
	struct vr_host_reclaim_result result = { 0 };
	const struct vr_scheme *s = vr_fleet_pageout_scheme(d->policy);
	gboolean ok;

	if (!d->host_reclaim) {
		if (d->pid <= 0)
			return; /* its QEMU process is not known yet */
		if (!domain_start_host_reclaim(d, ctx, &error)) {
			g_warning("%s: not managed: host-pageout: %s", d->name, error->message);
			vr_domain_set_unmanaged(d, "host-pageout: %s", error->message);
		}
		return; /* QEMU's worker brings the RAM map: it acts from then on */
	}
	if (!s || d->share_bytes == 0 || d->user_paused)
		return;
	/* The share is per window (quota-reset-interval-ms), which may last
	 * several ticks: what the window took already counts, a window the
	 * previous vreclaimd began too (restored). */
	vr_share_window_roll(&d->window, d->share_bytes, g_get_monotonic_time(),
			     vr_action_window_len_us(ctx));
	uint64_t left = vr_share_window_left(&d->window, d->share_bytes);
	if (!left)
		return;
	/* Never more than the host's swap can take. */
	ok = vr_host_reclaim_step_in_swap(d->host_reclaim, s, left, ctx->host, &result, &error);
	/* Charged and counted: the resident bytes advised, failed step or not
	 * (what was advised before a failure left memory too). */
	vr_domain_account_host_pageout(d, &result, ctx->host);
	if (!ok) {
		g_warning("%s: host-pageout: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return;
	}
	g_debug("%s: host-pageout: %" G_GUINT64_FORMAT " resident bytes advised in %u runs; "
		"%" G_GUINT64_FORMAT " planned, %" G_GUINT64_FORMAT " skipped in swap",
		d->name, result.advised_bytes, result.runs, result.planned_bytes,
		result.swapped_bytes);
}

/* The host's picture of the guest, read once a tick for the offer and the
 * step: here when the step will use it (a share, not paused); else the
 * offer reads it if the decide step runs this tick
 * (vr_host_reclaim_cold_histogram() acquires when none is kept), and
 * nothing is read when neither runs. A failure is the domain's last error; the offer and the step then
 * try again. */
static void host_pageout_acquire(struct vr_domain *d, const struct vr_action_ctx *ctx)
{
	g_autoptr(GError) error = NULL;

	(void)ctx;
	if (!d->host_reclaim)
		return;
	if (d->share_bytes == 0 || d->user_paused) {
		/* No step this tick: an offer reads its own picture. */
		vr_host_reclaim_forget_picture(d->host_reclaim);
		return;
	}
	if (!vr_host_reclaim_acquire(d->host_reclaim, &error)) {
		g_debug("%s: host-pageout: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
	}
}

/* The host's offer: the cold histogram of the host's access picture of the
 * guest, held (vr_domain_hold_offer()); nothing while the host's swap is
 * full (the quota goes to others). */
static gboolean host_pageout_offer(struct vr_domain *d, const struct vr_action_ctx *ctx,
				   struct vr_fleet_domain *fd)
{
	g_autoptr(GError) error = NULL;
	const struct vr_scheme *s = vr_fleet_pageout_scheme(d->policy);

	if (!s || !d->host_reclaim)
		return FALSE;
	/* A full host swap takes nothing: the quota goes to others. */
	if (ctx->host_known) {
		gboolean full = !vr_host_pageout_room(ctx->host);

		vr_domain_wait_for_swap(d, ctx->host, full);
		if (full)
			return FALSE;
	}
	if (!vr_host_reclaim_cold_histogram(d->host_reclaim, s, fd->hist_bytes, &error)) {
		g_warning("%s: %s", d->name, error->message);
		vr_domain_set_error(d, error->message);
		return FALSE;
	}
	d->cold_bytes = 0;
	for (guint score = 0; score <= VR_MAX_SCORE; score++)
		d->cold_bytes += fd->hist_bytes[score];
	vr_domain_hold_offer(d, s, fd);
	return TRUE;
}

/* The reclaim's state goes: its access source, its RAM map, its pidfd. */
static void host_pageout_stop(struct vr_domain *d)
{
	g_clear_pointer(&d->host_reclaim, vr_host_reclaim_free);
}

const struct vr_action_ops vr_action_host_pageout = {
	.action = VR_DOMAIN_ACTION_HOST_PAGEOUT,
	.acquire = host_pageout_acquire,
	.offer = host_pageout_offer,
	.act = host_pageout_act,
	.stop = host_pageout_stop,
};
