/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "sim" access source: a simulated guest of libvrcore (common/sim.h)
 * watched by libvrcore's own monitoring context through the engine's "sim"
 * access ops, so that vreclaimd can run a fake domain for tests and demos
 * and report its regions the way the other sources do. Time comes from the
 * injected clock: each get-regions runs the monitor up to its now. See
 * access-source.h.
 */
#include "damon-sysfs.h" /* vr_damon_regions_merge() */
#include "sim.h"
#include "sources/access-source.h"

/**
 * struct sim_source - the source's private data.
 * @sim:	the simulated guest (owned).
 * @ctx:	the monitoring context while started, NULL when stopped (owned;
 *		it borrows @sim).
 * @attrs:	the monitoring attributes.
 * @clock:	the injected clock (its data borrowed).
 * @seed:	seed of the monitor's random choices.
 * @has_epoch:	whether @epoch_ns is set (at the first start).
 * @epoch_ns:	clock time of the guest's time 0, in ns.
 * @picture:	the last aggregated snapshot (struct vr_picture_region; owned);
 *		empty until the first aggregation after a start.
 */
struct sim_source {
	struct vr_sim *sim;
	struct vr_ctx *ctx;
	struct vr_monitor_attrs attrs;
	struct vr_clock clock;
	uint64_t seed;
	gboolean has_epoch;
	uint64_t epoch_ns;
	GArray *picture;
};

/* The guest's time as of the clock's now, in us (0 before the first start,
 * and while the clock reads before the epoch). */
static uint64_t sim_now_us(const struct sim_source *ss)
{
	uint64_t now_ns;

	if (!ss->has_epoch)
		return 0;
	now_ns = ss->clock.now_ns(ss->clock.data);
	return now_ns > ss->epoch_ns ? (now_ns - ss->epoch_ns) / 1000 : 0;
}

/* Listener: keep the aggregated regions of the guest's target. */
static void take_snapshot(const struct vr_ctx *ctx, uint64_t now_us G_GNUC_UNUSED, void *user_data)
{
	struct sim_source *ss = user_data;
	const struct vr_target *t = vr_ctx_target(ctx, 0);

	g_array_set_size(ss->picture, 0);
	for (guint i = 0; i < vr_target_nr_regions(t); i++) {
		const struct vr_region *r = vr_target_region(t, i);
		struct vr_picture_region a = {
			.start = r->start,
			.end = r->end,
			.nr_accesses = r->nr_accesses,
			.age = r->age,
		};

		g_array_append_val(ss->picture, a);
	}
}

static gboolean sim_start(void *priv, GError **error)
{
	struct sim_source *ss = priv;
	g_autoptr(vr_ctx) ctx = NULL;
	g_autoptr(GError) local = NULL;
	struct vr_range ram = { .start = 0, .end = vr_sim_size(ss->sim) };

	if (!ss->has_epoch) {
		ss->epoch_ns = ss->clock.now_ns(ss->clock.data);
		ss->has_epoch = TRUE;
	}
	ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(ss->sim), ss->seed);
	if (!vr_ctx_set_attrs(ctx, &ss->attrs, &local) ||
	    !vr_ctx_add_target(ctx, 0, &ram, 1, &local) ||
	    !vr_ctx_start(ctx, sim_now_us(ss), &local)) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_FAILED,
			    "cannot start monitoring the simulated guest: %s", local->message);
		return FALSE;
	}
	vr_ctx_add_listener(ctx, take_snapshot, ss);
	g_array_set_size(ss->picture, 0);
	ss->ctx = g_steal_pointer(&ctx);
	return TRUE;
}

/* Run the monitor up to @now_us: every sampling step due, at most
 * VR_SIM_SOURCE_MAX_CATCHUP_US of them (a longer gap is skipped with one
 * late step). */
static gboolean advance(struct sim_source *ss, uint64_t now_us, GError **error)
{
	g_autoptr(GError) local = NULL;
	uint64_t next = vr_ctx_next_tick_us(ss->ctx);
	gboolean ok = TRUE;

	if (now_us > next && now_us - next > VR_SIM_SOURCE_MAX_CATCHUP_US)
		ok = vr_ctx_tick(ss->ctx, now_us - VR_SIM_SOURCE_MAX_CATCHUP_US, &local);
	while (ok && (next = vr_ctx_next_tick_us(ss->ctx)) <= now_us)
		ok = vr_ctx_tick(ss->ctx, next, &local);
	if (!ok)
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_FAILED,
			    "monitoring the simulated guest at %" G_GUINT64_FORMAT " us: %s",
			    (guint64)next, local->message);
	return ok;
}

static gboolean sim_get_regions(void *priv, struct vr_proto_regions *out, GError **error)
{
	struct sim_source *ss = priv;

	if (!advance(ss, sim_now_us(ss), error))
		return FALSE;
	out->sample_interval_us = ss->attrs.sample_interval_us;
	out->aggr_interval_us = ss->attrs.aggr_interval_us;
	out->regions = g_array_copy(ss->picture);
	vr_damon_regions_merge(out->regions, VR_PROTO_MAX_REGIONS);
	return TRUE;
}

static void sim_stop(void *priv)
{
	struct sim_source *ss = priv;

	g_clear_pointer(&ss->ctx, vr_ctx_free);
	g_array_set_size(ss->picture, 0);
}

static void sim_free(void *priv)
{
	struct sim_source *ss = priv;

	/* the context borrows the guest: it goes first */
	g_clear_pointer(&ss->ctx, vr_ctx_free);
	vr_sim_free(ss->sim);
	g_array_unref(ss->picture);
	g_free(ss);
}

static const struct vr_access_source_ops sim_ops = {
	.name = "sim",
	.start = sim_start,
	.get_regions = sim_get_regions,
	.stop = sim_stop,
	.free = sim_free,
};

/* @local as an INVALID error of this source, prefixed with @what. */
static void invalid_from(GError **error, const GError *local, const char *what)
{
	g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID, "sim: %s: %s",
		    what, local->message);
}

struct vr_access_source *vr_access_source_new_sim(const struct vr_sim_source_config *cfg,
						  const struct vr_monitor_attrs *attrs,
						  const struct vr_clock *clock, GError **error)
{
	g_autoptr(vr_sim) sim = NULL;
	g_autoptr(GError) local = NULL;
	struct sim_source *ss;

	if (!cfg || !attrs || !clock || !clock->now_ns) {
		g_set_error_literal(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
				    "sim: needs a guest, monitoring attributes and a clock "
				    "(now_ns)");
		return NULL;
	}
	if (!cfg->workload_json && !cfg->workload) {
		g_set_error_literal(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
				    "sim: no workload: give a built-in script name or a workload "
				    "document");
		return NULL;
	}
	if (!vr_monitor_attrs_validate(attrs, &local)) {
		invalid_from(error, local, "monitoring attributes");
		return NULL;
	}
	sim = vr_sim_new(cfg->size_bytes, cfg->seed, &local);
	if (!sim) {
		invalid_from(error, local, "simulated guest");
		return NULL;
	}
	if (cfg->workload_json ? !vr_sim_load_json(sim, cfg->workload_json, -1, &local) :
				 !vr_sim_load_builtin(sim, cfg->workload, cfg->phase_us, &local)) {
		g_autofree char *what = g_strdup_printf(
			"workload '%s'", cfg->workload ? cfg->workload : "(document)");

		invalid_from(error, local, what);
		return NULL;
	}

	ss = g_new0(struct sim_source, 1);
	ss->sim = g_steal_pointer(&sim);
	ss->attrs = *attrs;
	ss->clock = *clock;
	ss->seed = cfg->seed;
	ss->picture = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	return vr_access_source_new(&sim_ops, ss);
}

const struct vr_sim *vr_access_source_sim_guest(const struct vr_access_source *src)
{
	const struct sim_source *ss;

	if (vr_access_source_get_ops(src) != &sim_ops)
		return NULL;
	ss = vr_access_source_get_priv(src);
	return ss->sim;
}

uint64_t vr_access_source_sim_now_us(const struct vr_access_source *src)
{
	if (vr_access_source_get_ops(src) != &sim_ops)
		return 0;
	return sim_now_us(vr_access_source_get_priv(src));
}
