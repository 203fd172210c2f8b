/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host-reclaim: picture -> plan -> RAM map -> process_madvise for a guest
 * without an agent. See host-reclaim.h.
 */
#define _GNU_SOURCE

#include "actions/host-pageout.h"

#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fleet-quota.h"
#include "pageout-plan.h"
#include "process-pageout.h"
#include "protocol.h"
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
	if (nr_map > VR_HOST_DAMON_MAX_RAM_RANGES) {
		g_set_error(error, VR_HOST_RECLAIM_ERROR, VR_HOST_RECLAIM_ERROR_INVALID,
			    "the RAM map has %u entries, more than %d", nr_map,
			    VR_HOST_DAMON_MAX_RAM_RANGES);
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
	if (!vr_access_source_get_regions(hr->source, &picture, error)) {
		g_prefix_error(error, "guest %s: reading the access picture: ", hr->name);
		goto out;
	}
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
	g_auto(vr_proto_regions) picture = { 0 };

	g_return_val_if_fail(hr != NULL && scheme != NULL && hist_bytes != NULL, FALSE);
	memset(hist_bytes, 0, (VR_MAX_SCORE + 1) * sizeof(*hist_bytes));
	if (!vr_access_source_get_regions(hr->source, &picture, error)) {
		g_prefix_error(error, "guest %s: reading the access picture: ", hr->name);
		return FALSE;
	}
	if (!vr_fleet_cold_histogram(picture.regions, picture.sample_interval_us,
				     picture.aggr_interval_us, scheme, hr->guest_memory_bytes,
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
	if (hr->pidfd >= 0)
		close(hr->pidfd);
	if (hr->pagemap_fd >= 0)
		close(hr->pagemap_fd);
	g_free(hr->map);
	g_free(hr->name);
	g_free(hr);
}
