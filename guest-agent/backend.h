/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A reclaim backend of vreclaim-agent: the mechanism that runs the in-guest
 * scheme. One backend per file, each behind one struct vr_backend_ops, like
 * the kernel's struct damon_operations:
 *
 *   damon.c                - guest kernel DAMON through sysfs (paddr, DAMOS
 *                            pageout with the policy's pattern, quota,
 *                            weights and watermarks)
 *   damon-reclaim-module.c - the DAMON_RECLAIM module's parameters (the
 *                            kernel's own baseline)
 *   memcg.c                - cgroup v2 memory.reclaim sized by libvrcore's
 *                            quota logic, memory PSI as the brake
 *
 * Every path to the kernel comes from struct vr_agent_paths, so tests run the
 * backends against fake trees in a temporary folder.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "kernel-file.h" /* struct vr_agent_paths, VR_AGENT_ERROR */
#include "picture-region.h"
#include "policy.h"

/**
 * struct vr_backend_stats - what a backend did since it was opened.
 * @nr_tried, @sz_tried:	regions and bytes the reclaim was tried on.
 * @nr_applied, @sz_applied:	regions and bytes actually reclaimed.
 * @qt_exceeds:			quota windows that ended with the quota used up.
 * @reclaimer_cpu_us:		CPU time of the kernel or agent thread that
 *				reclaims (kdamond for damon), in microseconds;
 *				0 when unknown.
 */
struct vr_backend_stats {
	uint64_t nr_tried;
	uint64_t sz_tried;
	uint64_t nr_applied;
	uint64_t sz_applied;
	uint64_t qt_exceeds;
	uint64_t reclaimer_cpu_us;
};

/**
 * vr_backend_stats_add() - add @s to @to, counter by counter: a backend whose
 * kernel counters restart with every run keeps its cumulative stats so.
 */
void vr_backend_stats_add(struct vr_backend_stats *to, const struct vr_backend_stats *s);

/**
 * struct vr_backend_ops - one reclaim backend.
 * @name:	the name users give with --backend and see in hello.
 * @probe:	is the backend usable on this kernel? FALSE with @error saying
 *		why not (e.g. "no DAMON sysfs at /sys/kernel/mm/damon/admin").
 * @open:	a new backend state; nothing is started yet. Owned by the
 *		caller, freed with @close.
 * @apply_policy: start the in-guest scheme with @policy, or update the
 *		running one; all or nothing: on error the previous scheme keeps
 *		running unchanged. @policy is borrowed.
 * @pause, @resume: stop reclaiming / start again with the last policy.
 * @reclaim:	reclaim up to @bytes now, within @deadline_ms; sets
 *		*@reclaimed to the bytes reclaimed. May block up to the deadline.
 * @tick:	periodic work at @now_us (monotonic); returns the delay in
 *		microseconds until the backend wants its next tick.
 * @read_stats:	cumulative stats.
 * @read_regions: append at most @max struct vr_picture_region to @out,
 *		guest-physical order; a backend without a picture appends none.
 * @close:	stop everything the backend started and free it.
 */
struct vr_backend_ops {
	const char *name;
	gboolean (*probe)(const struct vr_agent_paths *paths, GError **error);
	gpointer (*open)(const struct vr_agent_paths *paths, GError **error);
	gboolean (*apply_policy)(gpointer backend, const struct vr_policy *policy, GError **error);
	gboolean (*pause)(gpointer backend, GError **error);
	gboolean (*resume)(gpointer backend, GError **error);
	gboolean (*reclaim)(gpointer backend, uint64_t bytes, uint64_t deadline_ms,
			    uint64_t *reclaimed, GError **error);
	uint64_t (*tick)(gpointer backend, uint64_t now_us);
	gboolean (*read_stats)(gpointer backend, struct vr_backend_stats *out, GError **error);
	gboolean (*read_regions)(gpointer backend, guint max, GArray *out, GError **error);
	void (*close)(gpointer backend);
};

extern const struct vr_backend_ops vr_backend_damon;
extern const struct vr_backend_ops vr_backend_damon_reclaim_module;
extern const struct vr_backend_ops vr_backend_memcg;
