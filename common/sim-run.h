/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A policy run against a simulated guest with the simulated reclaim
 * (docs/simulate.md): builds the guest from a built-in script or a workload
 * document, a monitoring context with the "sim" access source, the policy's
 * attributes and schemes, the simulated actuator, clock and metrics; runs
 * it; and reports memory saving, reclaimer CPU and workload slowdown, the
 * published table's columns (SEMANTICS.md §4). Also the published table's seven rows ("the matrix").
 *
 * Pure: the only time measured is through the CPU clock the caller injects.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "monitor.h"
#include "policy.h"
#include "scheme.h"
#include "sim-actuator.h"
#include "sim.h"

/**
 * struct vr_sim_run_config - what to run.
 * @size_bytes:	 guest size, page-aligned (the matrix: 8 GiB).
 * @workload:	 built-in script name (vr_sim_builtin_names()); with
 *		 @workload_json, only the document's name in messages.
 * @workload_json: a workload document (vr_sim_load_json()) to use instead of
 *		 the built-in script, or NULL.
 * @phase_us:	 length of each of the built-in script's phases, in us
 *		 (matrix: 60 s); a workload document gives its own.
 * @seed:	 seed of the workload's accesses and of the engine's choices.
 * @duration_us: simulated time of the run, from 0, in us (matrix: 300 s).
 * @reclaim:	 the cost model of the simulated reclaim.
 * @cpu_clock:	 optional (now_ns NULL: not measured): the CPU time of the
 *		 thread that calls vr_sim_run_run(), in ns; the engine's CPU
 *		 time is measured with it around the tick loop, minus the
 *		 simulation's own bookkeeping.
 */
struct vr_sim_run_config {
	uint64_t size_bytes;
	const char *workload;
	const char *workload_json;
	uint64_t phase_us;
	uint64_t seed;
	uint64_t duration_us;
	struct vr_sim_reclaim_params reclaim;
	struct vr_clock cpu_clock;
};

/* The matrix's fixed workload: 8 GiB guest, "matrix" script, 60 s phases,
 * seed 1, 5 simulated minutes, the default cost model. */
#define VR_SIM_RUN_CONFIG_DEFAULT                                                                  \
	((struct vr_sim_run_config){                                                               \
		.size_bytes = 8ULL << 30,                                                          \
		.workload = "matrix",                                                              \
		.phase_us = 60ULL * 1000000,                                                       \
		.seed = 1,                                                                         \
		.duration_us = 300ULL * 1000000,                                                   \
		.reclaim = VR_SIM_RECLAIM_PARAMS_DEFAULT,                                          \
	})

/**
 * struct vr_sim_result - what a run measured.
 * @duration_us:	simulated time.
 * @guest_bytes, @workload_bytes: sizes of the guest and of the workload's
 *			memory (resident at the start).
 * @reclaim:		the simulated reclaim's totals.
 * @engine_cpu_ns:	measured CPU time of the engine's ticks (0 when not
 *			measured).
 * @memory_saving_pct:	time-averaged non-resident bytes over the workload's
 *			memory, in percent.
 * @engine_cpu_pct, @actuator_cpu_pct: @engine_cpu_ns and the modeled pageout
 *			time over the simulated time, in percent of one CPU.
 * @reclaimer_cpu_pct:	their sum.
 * @slowdown_pct:	refault penalty time over the simulated time, percent.
 */
struct vr_sim_result {
	uint64_t duration_us;
	uint64_t guest_bytes;
	uint64_t workload_bytes;
	struct vr_sim_reclaim_stats reclaim;
	uint64_t engine_cpu_ns;
	double memory_saving_pct;
	double engine_cpu_pct;
	double actuator_cpu_pct;
	double reclaimer_cpu_pct;
	double slowdown_pct;
};

struct vr_sim_run;
typedef struct vr_sim_run vr_sim_run;

/**
 * vr_sim_run_new() - set up a run of @policy (borrowed; applied at once)
 * under @cfg (copied; its strings too). The context is not started: its
 * schemes may still be changed (vr_sim_run_ctx(), vr_sim_matrix_adjust()).
 * Return: owned by the caller, or NULL with @error.
 */
struct vr_sim_run *vr_sim_run_new(const struct vr_sim_run_config *cfg,
				  const struct vr_policy *policy, GError **error);
void vr_sim_run_free(struct vr_sim_run *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_sim_run, vr_sim_run_free)

/** vr_sim_run_ctx() - the run's monitoring context (owned by the run). */
struct vr_ctx *vr_sim_run_ctx(struct vr_sim_run *run);

/** vr_sim_run_sim() - the run's simulated guest (owned by the run). */
const struct vr_sim *vr_sim_run_sim(const struct vr_sim_run *run);

/** vr_sim_run_reclaim() - the run's simulated reclaim (owned by the run). */
const struct vr_sim_reclaim *vr_sim_run_reclaim(const struct vr_sim_run *run);

/**
 * vr_sim_run_run() - start the context at 0 and tick it at
 * vr_ctx_next_tick_us() until the configured duration. Once only.
 */
gboolean vr_sim_run_run(struct vr_sim_run *run, GError **error);

/** vr_sim_run_result() - the measurements (complete after vr_sim_run_run()). */
void vr_sim_run_result(const struct vr_sim_run *run, struct vr_sim_result *result);

/**
 * struct vr_sim_matrix_row - one row of the published table (SEMANTICS.md §4).
 * @quota_ms:	   time quota per 1 s window, in ms; 0 = no quota.
 * @prioritization: false: every pageout scheme's weights are 0 (all regions
 *		   score the same); true: the policy's weights.
 */
struct vr_sim_matrix_row {
	uint64_t quota_ms;
	bool prioritization;
};

/**
 * vr_sim_matrix_rows() - the published table's seven rows, in its order:
 * none/no, 10/no, 50/no, 200/no, 10/yes, 50/yes, 200/yes. @nr gets 7.
 */
const struct vr_sim_matrix_row *vr_sim_matrix_rows(size_t *nr);

/**
 * vr_sim_matrix_adjust() - make every pageout scheme of @ctx follow @row:
 * quota ms = @row->quota_ms and sz = 0 (a time quota alone, as in the
 * published table), no quota goals, weights 0 without prioritization and the
 * scheme's own with it (age-only 0, 0, 1 when those are all 0), watermark
 * metric none (the matrix compares quotas and prioritization, not
 * activation). Other schemes are left as they are.
 */
gboolean vr_sim_matrix_adjust(struct vr_ctx *ctx, const struct vr_sim_matrix_row *row,
			      GError **error);
