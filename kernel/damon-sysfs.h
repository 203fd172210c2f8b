/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A kernel's DAMON through its sysfs interface
 * (<sysfs>/kernel/mm/damon/admin, Documentation/admin-guide/mm/damon/usage.rst
 * of Linux): one kdamond (kdamonds/0) with one context and one target. The
 * guest agent runs a paddr context whose target is every System RAM range of
 * the guest; the host daemon runs a vaddr context whose target is a QEMU
 * process (pid_target), to see how the guest's RAM is accessed from outside.
 * Part of the vrkernel library, which both link.
 *
 * Three layers, each testable alone:
 *   1. struct vr_damon_config: what will be written, in sysfs units, built
 *      from a policy by a pure function (vr_damon_config_from_policy());
 *   2. the writer (vr_damon_sysfs_start(), vr_damon_sysfs_commit(), ...;
 *      damon-sysfs.c, with the probes and who holds DAMON) and the status
 *      readers (stats, tried regions, kdamond CPU time;
 *      damon-sysfs-status.c), all under the sysfs and procfs roots of
 *      struct vr_agent_paths;
 *   3. pure helpers: the policy turned into a config (damon-sysfs.c) and
 *      for what comes back (merging regions, /proc/PID/stat;
 *      damon-sysfs-status.c).
 *
 * The scheme list always starts with one `stat` scheme that matches every
 * region (index VR_DAMON_STAT_SCHEME); the policy's schemes follow in order.
 * Its tried regions are the whole access picture (get-regions). It comes
 * first so that a policy that adds or drops schemes changes only the tail of
 * the list: the kernel's online commit matches schemes by index and keeps
 * their stats.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernel-file.h"
#include "monitor.h"
#include "picture-region.h"
#include "policy.h"
#include "scheme.h"

/* DAMON's sysfs folder under the sysfs mount point. */
#define VR_DAMON_ADMIN_DIR "kernel/mm/damon/admin"

/* Unbounded maxima in sysfs units: sizes are unsigned long bytes; the kernel
 * keeps nr_accesses and age (aggregation intervals) in unsigned ints. */
#define VR_DAMON_SZ_UNBOUNDED	       G_MAXUINT64
#define VR_DAMON_NR_ACCESSES_UNBOUNDED G_MAXUINT32
#define VR_DAMON_AGE_UNBOUNDED	       G_MAXUINT32

/* Index of the stat scheme (the access picture) in the scheme list. */
#define VR_DAMON_STAT_SCHEME 0

/* Largest weight written to a quotas/weights/ *_permil file; larger policy
 * weights are scaled down together (the kernel multiplies them by subscores
 * of up to 100 in unsigned ints). */
#define VR_DAMON_WEIGHT_MAX_PERMIL 1000

/* Most tried regions read back from one scheme: DAMON keeps at most
 * max_nr_regions, which the policy bounds far below this. */
#define VR_DAMON_MAX_TRIED_REGIONS (1U << 16)

/**
 * enum vr_damon_ops - the operations set of a context (its `operations`
 * file), i.e. which address space it monitors.
 * @VR_DAMON_OPS_PADDR:	physical memory; the target is a list of address
 *			ranges (the guest agent: the guest's System RAM).
 * @VR_DAMON_OPS_VADDR:	the virtual memory of one process, named by the
 *			target's pid_target (the host: a QEMU process). The
 *			kernel chooses and updates the monitored ranges itself
 *			(the mappings around the two biggest unmapped gaps) at
 *			every ops update, so regions written for it only seed
 *			the first interval.
 */
enum vr_damon_ops {
	VR_DAMON_OPS_PADDR,
	VR_DAMON_OPS_VADDR,
};

/** vr_damon_ops_name() - "paddr" or "vaddr", as the sysfs files spell them. */
const char *vr_damon_ops_name(enum vr_damon_ops ops);

/**
 * struct vr_damon_caps - what this kernel's DAMON sysfs offers beyond the
 * 5.18 basics.
 * @has_goals:		quotas/goals/ exists (Linux 6.8+).
 * @has_goal_metric:	goals/G/target_metric exists (6.9+): metrics
 *			user_input and some_mem_psi_us; without it every goal
 *			is user_input.
 * @has_filters:	schemes/S/filters/ exists (6.3+).
 */
struct vr_damon_caps {
	bool has_goals;
	bool has_goal_metric;
	bool has_filters;
};

/* Linux 6.12, the documented guest kernel: goals with metrics, filters. */
#define VR_DAMON_CAPS_6_12                                                                         \
	((struct vr_damon_caps){ .has_goals = true, .has_goal_metric = true, .has_filters = true })

/**
 * struct vr_damon_goal - one quotas/goals/G directory.
 * @target_metric:	"user_input" or "some_mem_psi_us" (static string).
 * @target_value:	the value to reach, in the metric's unit.
 * @current_value:	the last value fed in (user_input only; the kernel
 *			measures some_mem_psi_us itself).
 * @refault_bytes:	the policy's refault_bytes goal, which the kernel does
 *			not measure: it goes as user_input, and the agent feeds
 *			@current_value (vr_damon_config_feed_refaults()).
 */
struct vr_damon_goal {
	const char *target_metric;
	uint64_t target_value;
	uint64_t current_value;
	bool refault_bytes;
};

/**
 * struct vr_damon_filter - one filters/F directory.
 * @type:	"anon" or "young" (static string).
 * @matching:	its matching file: Y takes the pages of @type out of the
 *		action, N the others.
 */
struct vr_damon_filter {
	const char *type;
	bool matching;
};

/**
 * struct vr_damon_scheme - one schemes/S directory, in sysfs units.
 * @action:		"pageout", "cold", ..., "stat" (static string).
 * @policy_index:	the policy scheme it comes from, -1 for the stat scheme.
 * @sz_min_bytes, @sz_max_bytes: access_pattern/sz/{min,max}.
 * @nr_accesses_min, @nr_accesses_max: access_pattern/nr_accesses/{min,max},
 *			accesses per aggregation interval.
 * @age_min_aggrs, @age_max_aggrs: access_pattern/age/{min,max}, in
 *			aggregation intervals (<= VR_DAMON_AGE_UNBOUNDED).
 * @quota_ms, @quota_bytes, @quota_reset_interval_ms: quotas/{ms,bytes,
 *			reset_interval_ms}; 0 ms and 0 bytes = no quota.
 * @resident_quota_bytes: the policy's size quota when that quota charges
 *			resident memory (VR_CHARGE_RESIDENT), else 0: what
 *			vr_damon_config_charge_resident() raises @quota_bytes
 *			from; @quota_bytes is this until it does.
 * @weight_sz_permil, @weight_nr_accesses_permil, @weight_age_permil:
 *			quotas/weights/ (relative weights, each <=
 *			VR_DAMON_WEIGHT_MAX_PERMIL).
 * @goals, @nr_goals:	quotas/goals/.
 * @wmarks_metric:	watermarks/metric, "none" or "free_mem_rate" (static).
 * @wmarks_interval_us, @wmarks_high, @wmarks_mid, @wmarks_low: watermarks/
 *			(thresholds in per-thousand of total memory).
 * @filters, @nr_filters: filters/ (written only where the kernel has them;
 *			a policy with filters on a kernel without is an error).
 */
struct vr_damon_scheme {
	const char *action;
	int policy_index;
	uint64_t sz_min_bytes;
	uint64_t sz_max_bytes;
	uint64_t nr_accesses_min;
	uint64_t nr_accesses_max;
	uint64_t age_min_aggrs;
	uint64_t age_max_aggrs;
	uint64_t quota_ms;
	uint64_t quota_bytes;
	uint64_t quota_reset_interval_ms;
	uint64_t resident_quota_bytes;
	uint32_t weight_sz_permil;
	uint32_t weight_nr_accesses_permil;
	uint32_t weight_age_permil;
	struct vr_damon_goal goals[VR_MAX_QUOTA_GOALS];
	guint nr_goals;
	const char *wmarks_metric;
	uint64_t wmarks_interval_us;
	uint64_t wmarks_high;
	uint64_t wmarks_mid;
	uint64_t wmarks_low;
	struct vr_damon_filter filters[VR_MAX_SCHEME_FILTERS];
	guint nr_filters;
};

/**
 * struct vr_damon_config - everything written for kdamond 0, in sysfs units.
 * @ops:	the context's operations set (0, the default: paddr).
 * @pid_target:	vaddr: the process monitored (targets/0/pid_target), > 0;
 *		paddr: unused (the file is not written).
 * @sample_us, @aggr_us, @update_us: monitoring_attrs/intervals/, in us.
 * @min_nr_regions, @max_nr_regions: monitoring_attrs/nr_regions/.
 * @regions:	the target's regions (struct vr_range, [start, end) bytes,
 *		sorted); owned. paddr: at least one; vaddr: may be empty (the
 *		kernel picks the process's mappings).
 * @schemes:	struct vr_damon_scheme; [VR_DAMON_STAT_SCHEME] is the stat
 *		scheme, the policy's schemes follow; owned.
 */
struct vr_damon_config {
	enum vr_damon_ops ops;
	int64_t pid_target;
	uint64_t sample_us;
	uint64_t aggr_us;
	uint64_t update_us;
	uint64_t min_nr_regions;
	uint64_t max_nr_regions;
	GArray *regions;
	GArray *schemes;
};

typedef struct vr_damon_config vr_damon_config;

/**
 * vr_damon_config_from_policy() - the DAMON configuration that runs @policy
 * over @nr_ranges @ranges (struct vr_range: the guest's System RAM) on a
 * kernel with @caps. Pure.
 *
 * Conversions: ages in us become aggregation intervals (truncated, capped to
 * VR_DAMON_AGE_UNBOUNDED); every access-pattern minimum and maximum is set
 * (a new sysfs scheme has 0 for all of them and would match nothing);
 * weights are written as they are when each is <= VR_DAMON_WEIGHT_MAX_PERMIL,
 * otherwise scaled together so the largest is that (a non-zero weight stays
 * >= 1); goals need @caps->has_goals, and a metric the kernel lacks is an
 * error naming it (free_mem_rate always; some_mem_psi_us without
 * @caps->has_goal_metric); filters need @caps->has_filters (the young type
 * needs Linux 6.10: an older kernel refuses the write, naming the file). The
 * stat scheme matches everything, has no quota, and takes the first policy
 * scheme's watermarks (metric none when the policy has no scheme), so that
 * when every scheme rests the kdamond stops sampling.
 *
 * Errors (VR_AGENT_ERROR_INVALID): the policy's own validation, no range,
 * more ranges than max_nr_regions, an unsupported goal.
 * Return: owned by the caller, or NULL with @error.
 */
struct vr_damon_config *vr_damon_config_from_policy(const struct vr_policy *policy,
						    const struct vr_range *ranges, size_t nr_ranges,
						    const struct vr_damon_caps *caps,
						    GError **error);

/*
 * At most this many times a scheme's resident quota goes to the kernel
 * (vr_damon_resident_quota_bytes()): the fleet's shares stay in proportion,
 * and a guest that is nearly all free pages out at a bounded rate.
 */
#define VR_DAMON_RESIDENT_QUOTA_MAX_SCALE 16

/**
 * vr_damon_resident_quota_bytes() - the size quota DAMOS needs so that a
 * scheme frees about @resident_bytes per window in a guest with @free_bytes
 * free. DAMOS charges a region's whole size, free pages included (a page it
 * paged out is a free page too), and its cold-first prioritization ranks a
 * region nobody accessed (free memory) before any region with an access,
 * however young: each window the quota goes to the free memory first. So
 * the quota is @resident_bytes + @free_bytes, at most
 * VR_DAMON_RESIDENT_QUOTA_MAX_SCALE times @resident_bytes, rounded down to
 * whole 4 KiB pages but never below @resident_bytes, saturating. 0 stays 0
 * (no size quota). Pure.
 */
uint64_t vr_damon_resident_quota_bytes(uint64_t resident_bytes, uint64_t free_bytes);

/**
 * vr_damon_config_charge_resident() - set the quota_bytes of every scheme of
 * @cfg that has a resident_quota_bytes: vr_damon_resident_quota_bytes() for
 * a guest with @free_bytes free, or the resident quota itself when @hold
 * (the guest freed more than the quotas allow: vr_damon_config_over_budget()).
 * Pure.
 * Return: TRUE when one of them moved by more than a quarter of its old
 * value: worth committing to a running kdamond.
 */
gboolean vr_damon_config_charge_resident(struct vr_damon_config *cfg, uint64_t free_bytes,
					 gboolean hold);

/**
 * vr_damon_config_over_budget() - did the guest free more in @elapsed_us
 * than @cfg's resident quotas allow? @freed_bytes (what the guest's reclaim
 * freed meanwhile: vmstat's pgsteal) against the sum of each resident
 * quota times the windows (quota_reset_interval_ms) in @elapsed_us. FALSE
 * without a resident quota. Pure.
 */
gboolean vr_damon_config_over_budget(const struct vr_damon_config *cfg, uint64_t freed_bytes,
				     uint64_t elapsed_us);

/**
 * vr_damon_config_has_refault_goals() - does a scheme of @cfg have a
 * refault_bytes goal, whose current value the agent feeds? Pure.
 */
gboolean vr_damon_config_has_refault_goals(const struct vr_damon_config *cfg);

/**
 * vr_damon_config_feed_refaults() - set the current value of every
 * refault_bytes goal of @cfg to the refaults of the last @elapsed_us
 * (@refault_bytes, vmstat's workingset refaults) per quota window of its
 * scheme, saturating. Nothing changes when @elapsed_us is 0. Pure.
 * Return: TRUE when @cfg has such a goal: worth committing its goals to a
 * running kdamond (vr_damon_sysfs_commit_goals()).
 */
gboolean vr_damon_config_feed_refaults(struct vr_damon_config *cfg, uint64_t refault_bytes,
				       uint64_t elapsed_us);

/**
 * vr_damon_config_new_monitor() - a configuration that only monitors: @attrs
 * and the stat scheme alone (everything matches, no quota, watermark metric
 * none), whose tried regions are the access picture. Pure.
 * @ops:	the address space: paddr needs @nr_ranges >= 1; vaddr needs
 *		@pid > 0 and takes @ranges (may be none) as initial regions.
 * @pid:	vaddr: the process to monitor; ignored for paddr.
 * @ranges, @nr_ranges: target regions (struct vr_range), validated as for
 *		vr_damon_config_from_policy().
 *
 * Errors (VR_AGENT_ERROR_INVALID): invalid @attrs (naming the attribute), no
 * range for paddr, a pid <= 0 for vaddr, invalid ranges.
 * Return: owned by the caller, or NULL with @error.
 */
struct vr_damon_config *vr_damon_config_new_monitor(const struct vr_monitor_attrs *attrs,
						    enum vr_damon_ops ops, int64_t pid,
						    const struct vr_range *ranges, size_t nr_ranges,
						    GError **error);

/** vr_damon_config_copy() - a deep copy of @cfg, owned by the caller. */
struct vr_damon_config *vr_damon_config_copy(const struct vr_damon_config *cfg);

/** vr_damon_config_free() - free @cfg and its arrays (NULL is fine). */
void vr_damon_config_free(struct vr_damon_config *cfg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_damon_config, vr_damon_config_free)

/**
 * vr_damon_config_scheme() - the @i-th scheme of @cfg (borrowed).
 */
static inline struct vr_damon_scheme *vr_damon_config_scheme(const struct vr_damon_config *cfg,
							     guint i)
{
	return &g_array_index(cfg->schemes, struct vr_damon_scheme, i);
}

/* ---- the kernel side ---- */

/**
 * vr_damon_sysfs_probe_ops() - does the kernel have DAMON sysfs with the
 * operations set @ops? Checks admin/kdamonds/nr_kdamonds, and
 * avail_operations of context 0 when that file exists. FALSE with
 * VR_AGENT_ERROR_UNSUPPORTED naming what is missing. Only @paths->sysfs is
 * used.
 */
gboolean vr_damon_sysfs_probe_ops(const struct vr_agent_paths *paths, enum vr_damon_ops ops,
				  GError **error);

/** vr_damon_sysfs_probe() - vr_damon_sysfs_probe_ops() for paddr. */
gboolean vr_damon_sysfs_probe(const struct vr_agent_paths *paths, GError **error);

/**
 * vr_damon_sysfs_detect_caps() - fill @caps: from the files of scheme 0 when
 * its folder exists, otherwise from the kernel release
 * (@paths->procfs/sys/kernel/osrelease); a release that cannot be read
 * counts as 6.12 (the documented guest kernel).
 */
void vr_damon_sysfs_detect_caps(const struct vr_agent_paths *paths, struct vr_damon_caps *caps);

/**
 * vr_damon_sysfs_check_free() - may this program take kdamond 0?
 * @own_kdamond: kdamond 0 runs because this program started it.
 *
 * Busy (VR_AGENT_ERROR_BUSY, the message says who) when the DAMON_RECLAIM or
 * DAMON_LRU_SORT module is enabled (they and sysfs kdamonds exclude each
 * other), or when a kdamond listed in nr_kdamonds is "on" and is not ours.
 * VR_AGENT_ERROR_UNSUPPORTED when DAMON sysfs is missing.
 */
gboolean vr_damon_sysfs_check_free(const struct vr_agent_paths *paths, gboolean own_kdamond,
				   GError **error);

/**
 * vr_damon_sysfs_running_kdamond() - the first kdamond whose state is "on"
 * in *@kdamond, -1 when none is (or when DAMON sysfs is missing).
 */
gboolean vr_damon_sysfs_running_kdamond(const struct vr_agent_paths *paths, int *kdamond,
					GError **error);

/**
 * vr_damon_module_enabled() - is the DAMON module @module ("damon_reclaim",
 * "damon_lru_sort") enabled (its parameters/enabled reads Y)? FALSE when the
 * module or the file does not exist.
 */
gboolean vr_damon_module_enabled(const struct vr_agent_paths *paths, const char *module);

/**
 * vr_damon_sysfs_start() - write @cfg for kdamond 0 and turn it "on".
 *
 * Writes nr_kdamonds 1 and nr_contexts 1, then everything below them (each
 * nr_* file before the folders it creates; each min/max pair in an order in
 * which every write is valid; operations first, and for vaddr pid_target
 * right after nr_targets), then state "on". Does not check who holds
 * DAMON (vr_damon_sysfs_check_free()). On failure nothing runs: the kdamond
 * folders are released again (nr_kdamonds 0) and @error names the file and
 * the value refused.
 */
gboolean vr_damon_sysfs_start(const struct vr_agent_paths *paths, const struct vr_damon_config *cfg,
			      const struct vr_damon_caps *caps, GError **error);

/**
 * vr_damon_sysfs_commit() - update the running kdamond 0 to @cfg online:
 * the same writes as vr_damon_sysfs_start() below contexts/0 (nr_kdamonds
 * and nr_contexts untouched), then state "commit". When a write fails, the
 * kdamond keeps running its previous configuration (nothing is committed).
 */
gboolean vr_damon_sysfs_commit(const struct vr_agent_paths *paths,
			       const struct vr_damon_config *cfg, const struct vr_damon_caps *caps,
			       GError **error);

/**
 * vr_damon_sysfs_stop() - state "off" for kdamond 0, unless it already
 * reads "off".
 */
gboolean vr_damon_sysfs_stop(const struct vr_agent_paths *paths, GError **error);

/**
 * vr_damon_sysfs_commit_goals() - hand the running kdamond 0 the quota goals
 * of @cfg (the configuration it runs): every goal's current_value, then the
 * state command "commit_schemes_quota_goals", which updates the goals alone
 * (the kernel reads user_input goals' values only through it or a commit).
 * Errors: a write that fails (VR_AGENT_ERROR_IO).
 */
gboolean vr_damon_sysfs_commit_goals(const struct vr_agent_paths *paths,
				     const struct vr_damon_config *cfg,
				     const struct vr_damon_caps *caps, GError **error);

/**
 * vr_damon_sysfs_release() - nr_kdamonds 0: remove the kdamond folders
 * (kdamond 0 must be off).
 */
gboolean vr_damon_sysfs_release(const struct vr_agent_paths *paths, GError **error);

/**
 * vr_damon_sysfs_is_off() - does kdamond 0's state read "off"? (Anything
 * else counts as running: the file also echoes the last command written.)
 */
gboolean vr_damon_sysfs_is_off(const struct vr_agent_paths *paths, gboolean *off, GError **error);

/**
 * vr_damon_sysfs_read_stats() - state "update_schemes_stats", then the
 * stats/ files of schemes 0..@nr-1 into @out (@nr entries).
 */
gboolean vr_damon_sysfs_read_stats(const struct vr_agent_paths *paths, struct vr_scheme_stats *out,
				   guint nr, GError **error);

/**
 * vr_damon_sysfs_read_tried_regions() - the regions scheme @scheme tried in
 * the last apply pass: state "update_schemes_tried_regions", read
 * schemes/@scheme/tried_regions/N/{start,end,nr_accesses,age}, then state
 * "clear_schemes_tried_regions" (also after a failed read). Appends at most
 * @max struct vr_picture_region to @out, sorted by start; more regions are
 * merged with vr_damon_regions_merge(), never truncated. A number file that
 * does not hold a number, an empty or overlapping region, is an error
 * naming the file.
 */
gboolean vr_damon_sysfs_read_tried_regions(const struct vr_agent_paths *paths, guint scheme,
					   guint max, GArray *out, GError **error);

/**
 * vr_damon_regions_merge() - reduce the sorted, disjoint @regions (struct
 * vr_picture_region) to at most @max by merging neighbours, most alike first:
 * adjacent pairs before pairs across a hole (a merge across a hole covers
 * it, which only happens when the holes alone outnumber @max), then the
 * smallest nr_accesses difference, then the smallest age difference (in
 * powers of two), then the smallest merged size. A merged region's
 * nr_accesses and age are the size-weighted averages of its parts
 * (truncated). Pure; O(n log n).
 */
void vr_damon_regions_merge(GArray *regions, guint max);

/**
 * vr_damon_sysfs_kdamond_pid() - kdamond 0's pid (kdamonds/0/pid), -1 when
 * it is not running.
 */
gboolean vr_damon_sysfs_kdamond_pid(const struct vr_agent_paths *paths, int64_t *pid,
				    GError **error);

/**
 * vr_proc_pid_cpu_us() - CPU time of process @pid from @procfs/PID/stat, in
 * us (0 for @pid <= 0: nothing runs).
 */
gboolean vr_proc_pid_cpu_us(const char *procfs, int64_t pid, uint64_t *cpu_us, GError **error);
