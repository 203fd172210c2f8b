/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A policy run against a simulated guest with the simulated reclaim, and the
 * published table's rows (see sim-run.h).
 */
#include "sim-run.h"

#define US_PER_S 1000000.0

/**
 * struct vr_sim_run - one run.
 * @cfg:	as given (@workload and @workload_json copied into the fields
 *		of the same names).
 * @sim:	the guest.
 * @reclaim:	the simulated reclaim (borrowed by @ctx: freed after it).
 * @ctx:	the monitoring context.
 * @ran:	vr_sim_run_run() was called.
 * @engine_cpu_ns: measured engine CPU time.
 */
struct vr_sim_run {
	struct vr_sim_run_config cfg;
	char *workload;
	char *workload_json;
	struct vr_sim *sim;
	struct vr_sim_reclaim *reclaim;
	struct vr_ctx *ctx;
	bool ran;
	uint64_t engine_cpu_ns;
};

void vr_sim_run_free(struct vr_sim_run *run)
{
	if (!run)
		return;
	/* the context first: it borrows the reclaim, which borrows the sim */
	vr_ctx_free(run->ctx);
	vr_sim_reclaim_free(run->reclaim);
	vr_sim_free(run->sim);
	g_free(run->workload);
	g_free(run->workload_json);
	g_free(run);
}

struct vr_sim_run *vr_sim_run_new(const struct vr_sim_run_config *cfg,
				  const struct vr_policy *policy, GError **error)
{
	g_autoptr(vr_sim_run) run = g_new0(struct vr_sim_run, 1);
	const struct vr_range *workload;
	struct vr_range ram;
	struct vr_clock clock;
	size_t nr;

	run->cfg = *cfg;
	run->workload = g_strdup(cfg->workload);
	run->cfg.workload = run->workload;
	run->workload_json = g_strdup(cfg->workload_json);
	run->cfg.workload_json = run->workload_json;
	if (cfg->duration_us == 0) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "duration: must be positive");
		return NULL;
	}
	run->sim = vr_sim_new(cfg->size_bytes, cfg->seed, error);
	if (!run->sim)
		return NULL;
	if (cfg->workload_json ?
		    !vr_sim_load_json(run->sim, cfg->workload_json, -1, error) :
		    !vr_sim_load_builtin(run->sim, cfg->workload, cfg->phase_us, error)) {
		g_prefix_error(error, "workload '%s': ", cfg->workload);
		return NULL;
	}
	workload = vr_sim_workload_ranges(run->sim, &nr);
	run->reclaim = vr_sim_reclaim_new(run->sim, workload, nr, 0, cfg->duration_us,
					  &cfg->reclaim, error);
	if (!run->reclaim)
		return NULL;
	if (cfg->cpu_clock.now_ns)
		vr_sim_reclaim_set_cpu_clock(run->reclaim, &cfg->cpu_clock);

	run->ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(run->sim), cfg->seed);
	ram = (struct vr_range){ 0, vr_sim_size(run->sim) };
	if (!vr_ctx_add_target(run->ctx, 0, &ram, 1, error))
		return NULL;
	if (!vr_policy_apply(policy, run->ctx, error)) {
		g_prefix_error(error, "policy: ");
		return NULL;
	}
	vr_ctx_set_actuator(run->ctx, &vr_sim_actuator_ops, run->reclaim);
	vr_ctx_set_metrics(run->ctx, &vr_sim_metric_ops, run->reclaim);
	clock = vr_sim_reclaim_clock(run->reclaim);
	vr_ctx_set_clock(run->ctx, &clock);
	return g_steal_pointer(&run);
}

struct vr_ctx *vr_sim_run_ctx(struct vr_sim_run *run)
{
	return run->ctx;
}

const struct vr_sim *vr_sim_run_sim(const struct vr_sim_run *run)
{
	return run->sim;
}

const struct vr_sim_reclaim *vr_sim_run_reclaim(const struct vr_sim_run *run)
{
	return run->reclaim;
}

static uint64_t cpu_now_ns(const struct vr_sim_run *run)
{
	const struct vr_clock *c = &run->cfg.cpu_clock;

	return c->now_ns ? c->now_ns(c->data) : 0;
}

gboolean vr_sim_run_run(struct vr_sim_run *run, GError **error)
{
	uint64_t end_us = run->cfg.duration_us, begin_ns, sim_ns;
	struct vr_sim_reclaim_stats stats;

	if (run->ran) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_STATE,
			    "the simulated run has already run");
		return FALSE;
	}
	run->ran = true;
	vr_sim_reclaim_get_stats(run->reclaim, &stats);
	sim_ns = stats.sim_cpu_ns;
	begin_ns = cpu_now_ns(run);
	if (!vr_ctx_start(run->ctx, 0, error))
		return FALSE;
	while (vr_ctx_next_tick_us(run->ctx) <= end_us) {
		uint64_t now_us = vr_ctx_next_tick_us(run->ctx);

		vr_sim_reclaim_set_now(run->reclaim, now_us);
		if (!vr_ctx_tick(run->ctx, now_us, error)) {
			g_prefix_error(error, "at %.3f s: ", (double)now_us / US_PER_S);
			return FALSE;
		}
	}
	vr_sim_reclaim_set_now(run->reclaim, end_us);
	vr_sim_reclaim_get_stats(run->reclaim, &stats);
	if (run->cfg.cpu_clock.now_ns) {
		uint64_t loop_ns = cpu_now_ns(run) - begin_ns;

		sim_ns = stats.sim_cpu_ns - sim_ns;
		run->engine_cpu_ns = loop_ns > sim_ns ? loop_ns - sim_ns : 0;
	}
	return TRUE;
}

void vr_sim_run_result(const struct vr_sim_run *run, struct vr_sim_result *res)
{
	double duration_ns = (double)run->cfg.duration_us * 1000.0;

	*res = (struct vr_sim_result){
		.duration_us = run->cfg.duration_us,
		.guest_bytes = vr_sim_size(run->sim),
		.workload_bytes = vr_sim_workload_bytes(run->sim),
		.engine_cpu_ns = run->engine_cpu_ns,
	};
	vr_sim_reclaim_get_stats(run->reclaim, &res->reclaim);
	res->memory_saving_pct =
		100.0 * vr_sim_reclaim_saved_bytes(run->reclaim) / (double)res->workload_bytes;
	res->engine_cpu_pct = 100.0 * (double)res->engine_cpu_ns / duration_ns;
	res->actuator_cpu_pct = 100.0 * (double)res->reclaim.actuator_ns / duration_ns;
	res->reclaimer_cpu_pct = res->engine_cpu_pct + res->actuator_cpu_pct;
	res->slowdown_pct =
		100.0 * (double)res->reclaim.refault_penalty_us / (double)run->cfg.duration_us;
}

/* ---- the matrix ---- */

static const struct vr_sim_matrix_row matrix_rows[] = {
	{ 0, false }, { 10, false }, { 50, false }, { 200, false },
	{ 10, true }, { 50, true },  { 200, true },
};

const struct vr_sim_matrix_row *vr_sim_matrix_rows(size_t *nr)
{
	*nr = G_N_ELEMENTS(matrix_rows);
	return matrix_rows;
}

gboolean vr_sim_matrix_adjust(struct vr_ctx *ctx, const struct vr_sim_matrix_row *row,
			      GError **error)
{
	guint n = vr_ctx_nr_schemes(ctx);
	g_autoptr(GPtrArray)
		schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);

	for (guint i = 0; i < n; i++) {
		struct vr_scheme *s = vr_scheme_copy(vr_ctx_scheme(ctx, i));
		struct vr_quota *q = &s->quota;

		g_ptr_array_add(schemes, s);
		if (s->action != VR_ACTION_PAGEOUT)
			continue;
		q->ms = row->quota_ms;
		q->sz = 0;
		q->nr_goals = 0;
		if (q->reset_interval_ms == 0)
			q->reset_interval_ms = 1000;
		if (!row->prioritization) {
			q->weight_sz = q->weight_nr_accesses = q->weight_age = 0;
		} else if (!q->weight_sz && !q->weight_nr_accesses && !q->weight_age) {
			q->weight_age = 1; /* DAMON_RECLAIM's age-only */
		}
		s->wmarks.metric = VR_WMARK_NONE;
	}
	return vr_ctx_set_schemes(ctx, (struct vr_scheme *const *)schemes->pdata, schemes->len,
				  error);
}
