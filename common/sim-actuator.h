/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated reclaim: an actuator (struct vr_actuator_ops), a clock
 * (struct vr_clock) and a metric provider (struct vr_metric_ops) over a
 * simulated guest (sim.h), so that schemes can be run and measured without a
 * machine (docs/simulate.md).
 *
 * The model. Each page of the guest is resident or not. The workload's memory
 * is resident at the start, every other page becomes resident at its first
 * access. `pageout` makes the resident pages of a range non-resident and
 * costs modeled time per byte (zram-like, 1 GiB/s by default), read by the
 * engine through the reclaim's clock, so that time quotas bite as they would
 * on a machine. The next access to a non-resident page is a refault: the page
 * is resident again from that time and the workload pays a penalty (50 us by
 * default, a zram swap-in). Accesses themselves do not change: the workload
 * runs its script whatever is resident (the penalty is accounted, not
 * simulated as lost time).
 *
 * Since the workload's accesses are known in advance
 * (vr_sim_next_access_us()), everything a pageout causes up to the end of the
 * run (non-resident time, refault, penalty) is accounted when the page is
 * paged out: at the end of the run the totals are exact.
 *
 * Pure: no I/O, no clock of its own (the runner tells it the time).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "monitor.h"
#include "scheme.h"
#include "sim.h"

/* Modeled pageout throughput: about what zram compresses, 1 GiB/s
 * (~1 ns per byte, ~4 us per page). */
#define VR_SIM_PAGEOUT_BPS_DEFAULT (1ULL << 30)
/* Cost of one refault to the workload: a zram swap-in, 50 us. */
#define VR_SIM_REFAULT_PENALTY_US_DEFAULT 50ULL

/**
 * struct vr_sim_reclaim_params - the cost model.
 * @pageout_bps:	modeled pageout throughput, in bytes per second (> 0):
 *			paging out N resident bytes advances the reclaim's clock
 *			by N * 1e9 / @pageout_bps ns.
 * @refault_penalty_us:	time a refault costs the workload, in us.
 */
struct vr_sim_reclaim_params {
	uint64_t pageout_bps;
	uint64_t refault_penalty_us;
};

#define VR_SIM_RECLAIM_PARAMS_DEFAULT                                                              \
	((struct vr_sim_reclaim_params){                                                           \
		.pageout_bps = VR_SIM_PAGEOUT_BPS_DEFAULT,                                         \
		.refault_penalty_us = VR_SIM_REFAULT_PENALTY_US_DEFAULT,                           \
	})

/**
 * struct vr_sim_reclaim_stats - what the simulated reclaim did and caused.
 * @pageout_bytes:	resident bytes paged out (what `pageout` reported done).
 * @nr_pageouts:	pages paged out (@pageout_bytes / page size).
 * @refaults:		paged-out pages accessed again before the run's end.
 * @refault_penalty_us:	@refaults * the penalty: the workload's lost time.
 * @nonresident_page_us: non-resident time caused by pageouts, summed over
 *			pages, in page * us, each up to its refault or the run's
 *			end (so: the time integral of the bytes saved, in pages).
 * @actuator_ns:	modeled time of the pageouts, in ns.
 * @sim_cpu_ns:		time the simulation's own bookkeeping took inside
 *			apply(), as read from the CPU clock given with
 *			vr_sim_reclaim_set_cpu_clock() (0 without one): not a
 *			reclaimer cost, for the runner to subtract.
 *
 * Refaults and non-resident time are accounted at pageout time for the whole
 * run: exact once the run has reached its end.
 */
struct vr_sim_reclaim_stats {
	uint64_t pageout_bytes;
	uint64_t nr_pageouts;
	uint64_t refaults;
	uint64_t refault_penalty_us;
	uint64_t nonresident_page_us;
	uint64_t actuator_ns;
	uint64_t sim_cpu_ns;
};

struct vr_sim_reclaim;
typedef struct vr_sim_reclaim vr_sim_reclaim;

/**
 * vr_sim_reclaim_new() - the simulated reclaim of @sim (borrowed: it must
 * outlive the reclaim) for a run from @start_us to @end_us.
 * @resident, @nr:	the ranges resident at @start_us (usually the workload's
 *			memory, vr_sim_workload_ranges()); page-aligned, inside
 *			the guest. Every other page is resident from its first
 *			access after @start_us.
 * @params:		the cost model (NULL: VR_SIM_RECLAIM_PARAMS_DEFAULT).
 *
 * Keeps 16 bytes per page of the guest (4 MiB per GiB), and 16 more per
 * page that is waiting to come back.
 * Return: owned by the caller (vr_sim_reclaim_free()), or NULL with @error.
 */
struct vr_sim_reclaim *vr_sim_reclaim_new(const struct vr_sim *sim, const struct vr_range *resident,
					  size_t nr, uint64_t start_us, uint64_t end_us,
					  const struct vr_sim_reclaim_params *params,
					  GError **error);
void vr_sim_reclaim_free(struct vr_sim_reclaim *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_sim_reclaim, vr_sim_reclaim_free)

/**
 * vr_sim_reclaim_set_now() - the simulated time is now @now_us (never goes
 * back): pages whose refault time has come are resident again. The runner
 * calls it before every vr_ctx_tick(), whose schemes act at that time.
 */
void vr_sim_reclaim_set_now(struct vr_sim_reclaim *r, uint64_t now_us);

/**
 * vr_sim_reclaim_set_cpu_clock() - a clock (e.g. the thread's CPU time, read
 * by the caller) to measure the simulation's own work in apply() with, so
 * that the caller can tell it from the engine's (stats.sim_cpu_ns).
 */
void vr_sim_reclaim_set_cpu_clock(struct vr_sim_reclaim *r, const struct vr_clock *clock);

/**
 * vr_sim_reclaim_clock() - the clock that the engine must measure actions
 * with (vr_ctx_set_clock()): it reads the modeled pageout time, in ns.
 */
struct vr_clock vr_sim_reclaim_clock(struct vr_sim_reclaim *r);

/**
 * vr_sim_actuator_ops - the "sim" actuator; its data is a struct
 * vr_sim_reclaim, borrowed (no cleanup: the caller frees it after the
 * context). `pageout` pages out the resident pages of the range (bytes done:
 * those pages' bytes) at the time of the last vr_sim_reclaim_set_now();
 * `cold` changes nothing and reports the whole range done; the other actions
 * are not simulated (nothing done, no error). `resident` counts the resident
 * pages of a range at that time (what `pageout` would page out), in
 * O(log pages): a quota that charges VR_CHARGE_RESIDENT pays for those.
 */
extern const struct vr_actuator_ops vr_sim_actuator_ops;

/**
 * vr_sim_metric_ops - the simulated guest's metrics; data: a struct
 * vr_sim_reclaim, borrowed. free_mem_rate (watermarks and goals): free
 * memory per thousand of the guest, free = guest size - resident bytes now;
 * some_mem_psi_us (goals): refault penalty time of the refaults that
 * happened since the previous read of this metric; refault_bytes (goals):
 * those refaults' pages in bytes, since the previous read of this metric.
 */
extern const struct vr_metric_ops vr_sim_metric_ops;

/** vr_sim_reclaim_page_resident() - is the page holding @addr resident now? */
bool vr_sim_reclaim_page_resident(const struct vr_sim_reclaim *r, uint64_t addr);

/** vr_sim_reclaim_resident_bytes() - bytes of the guest resident now. */
uint64_t vr_sim_reclaim_resident_bytes(const struct vr_sim_reclaim *r);

/** vr_sim_reclaim_get_stats() - what the reclaim did and caused so far. */
void vr_sim_reclaim_get_stats(const struct vr_sim_reclaim *r, struct vr_sim_reclaim_stats *stats);

/**
 * vr_sim_reclaim_saved_bytes() - time-averaged non-resident bytes caused by
 * pageouts over the whole run: nonresident_page_us * page / (end - start).
 */
double vr_sim_reclaim_saved_bytes(const struct vr_sim_reclaim *r);
