/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitoring context's life and its tick (SEMANTICS.md §1, §2): a
 * context is created, given targets, started, then ticked, and every tick
 * samples the regions; once per aggregation interval it merges them, applies
 * the schemes (scheme.c), shows the snapshot to the listeners and splits the
 * regions again. It sits above both the monitor (monitor.c: regions,
 * targets, attributes) and the schemes (scheme.c), which never call it.
 */
#include "monitor.h"

#include "ctx-private.h"
#include "scheme.h"

/* ---- creation, targets, release ---- */

static struct vr_target *target_new(uint64_t id)
{
	struct vr_target *t = g_new0(struct vr_target, 1);

	t->id = id;
	t->ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	t->regions = g_array_new(FALSE, FALSE, sizeof(struct vr_region));
	return t;
}

static void target_free(gpointer p)
{
	struct vr_target *t = p;

	g_array_unref(t->ranges);
	g_array_unref(t->regions);
	g_free(t);
}

struct vr_ctx *vr_ctx_new(const struct vr_access_ops *ops, void *ops_data, uint64_t seed)
{
	struct vr_ctx *ctx = g_new0(struct vr_ctx, 1);

	ctx->attrs = VR_MONITOR_ATTRS_DEFAULT;
	ctx->ops = ops;
	ctx->ops_data = ops_data;
	ctx->targets = g_ptr_array_new_with_free_func(target_free);
	ctx->listeners = g_array_new(FALSE, FALSE, sizeof(struct vr_listener));
	ctx->schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free);
	vr_rng_seed(&ctx->rng, seed);
	return ctx;
}

void vr_ctx_free(struct vr_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->ops && ctx->ops->cleanup)
		ctx->ops->cleanup(ctx->ops_data);
	vr_ctx_free_schemes(ctx);
	g_ptr_array_unref(ctx->targets);
	g_array_unref(ctx->listeners);
	g_free(ctx);
}

/* ---- the tick ---- */

/* The initial layout of one target: min_nr_regions even pieces. */
static void target_lay_out(struct vr_target *t, uint32_t min_nr_regions)
{
	uint64_t sz_piece = vr_target_size(t) / min_nr_regions / VR_PAGE_SIZE * VR_PAGE_SIZE;

	vr_target_split_evenly(t, MAX(sz_piece, VR_PAGE_SIZE));
}

struct vr_target *vr_ctx_add_target(struct vr_ctx *ctx, uint64_t id, const struct vr_range *ranges,
				    size_t nr, GError **error)
{
	struct vr_target *t = target_new(id);

	if (!vr_target_set_ranges(t, ranges, nr, ctx->attrs.max_nr_regions, error)) {
		target_free(t);
		return NULL;
	}
	if (ctx->started)
		target_lay_out(t, ctx->attrs.min_nr_regions);
	g_ptr_array_add(ctx->targets, t);
	return t;
}

static gboolean ctx_update_ranges(struct vr_ctx *ctx, GError **error)
{
	g_autoptr(GArray) ranges = NULL;

	if (!ctx->ops->update)
		return TRUE;
	ranges = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		g_array_set_size(ranges, 0);
		if (!ctx->ops->update(ctx->ops_data, t, ranges, error) ||
		    !vr_target_set_ranges(t, (const struct vr_range *)(void *)ranges->data,
					  ranges->len, ctx->attrs.max_nr_regions, error)) {
			g_prefix_error(error,
				       "%s: updating the ranges of target %" G_GUINT64_FORMAT ": ",
				       ctx->ops->name, t->id);
			return FALSE;
		}
	}
	return TRUE;
}

static void ctx_prepare(struct vr_ctx *ctx, uint64_t now_us)
{
	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		if (!t->regions->len)
			continue;
		for (guint j = 0; j < t->regions->len; j++) {
			struct vr_region *r = vr_target_region(t, j);
			uint64_t pages = vr_region_size(r) / VR_PAGE_SIZE;

			r->sampling_addr = r->start + vr_rng_below(&ctx->rng, pages) * VR_PAGE_SIZE;
			r->accessed = false;
		}
		ctx->ops->prepare(ctx->ops_data, t, &g_array_index(t->regions, struct vr_region, 0),
				  t->regions->len, now_us);
	}
	ctx->prepared = true;
}

static void ctx_check(struct vr_ctx *ctx, uint64_t now_us)
{
	uint32_t max_nr_accesses = vr_monitor_attrs_max_nr_accesses(&ctx->attrs);

	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		if (!t->regions->len)
			continue;
		ctx->ops->check(ctx->ops_data, t, &g_array_index(t->regions, struct vr_region, 0),
				t->regions->len, now_us);
		for (guint j = 0; j < t->regions->len; j++) {
			struct vr_region *r = vr_target_region(t, j);

			if (r->accessed && r->nr_accesses < max_nr_accesses)
				r->nr_accesses++;
		}
	}
	ctx->prepared = false;
	ctx->nr_samples++;
}

gboolean vr_ctx_start(struct vr_ctx *ctx, uint64_t now_us, GError **error)
{
	if (ctx->started) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_STATE,
			    "the monitoring context is already running");
		return FALSE;
	}
	if (!ctx_update_ranges(ctx, error))
		return FALSE;
	for (guint i = 0; i < ctx->targets->len; i++)
		target_lay_out(vr_ctx_target(ctx, i), ctx->attrs.min_nr_regions);
	ctx->started = true;
	ctx->nr_samples = 0;
	ctx->since_update_us = 0;
	ctx_prepare(ctx, now_us);
	ctx->next_tick_us = now_us + ctx->attrs.sample_interval_us;
	return TRUE;
}

static void ctx_aggregate(struct vr_ctx *ctx, uint64_t now_us)
{
	vr_ctx_merge_regions(ctx);
	vr_ctx_apply_schemes(ctx, now_us);
	for (guint i = 0; i < ctx->listeners->len; i++) {
		const struct vr_listener *l = &g_array_index(ctx->listeners, struct vr_listener, i);

		l->fn(ctx, now_us, l->user_data);
	}
	for (guint i = 0; i < ctx->targets->len; i++) {
		struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < t->regions->len; j++) {
			struct vr_region *r = vr_target_region(t, j);

			r->last_nr_accesses = r->nr_accesses;
			r->nr_accesses = 0;
		}
	}
	vr_ctx_split_regions(ctx);
	ctx->nr_aggregations++;
	ctx->nr_samples = 0;
}

gboolean vr_ctx_tick(struct vr_ctx *ctx, uint64_t now_us, GError **error)
{
	gboolean ok = TRUE;

	if (!ctx->started) {
		g_set_error(error, VR_MONITOR_ERROR, VR_MONITOR_ERROR_STATE,
			    "the monitoring context is not started");
		return FALSE;
	}
	if (now_us < ctx->next_tick_us)
		return TRUE;

	ok = vr_ctx_update_watermarks(ctx, now_us, error);
	if (vr_ctx_monitoring_paused(ctx)) {
		/* no scheme is active: no sampling at all until a watermark
		 * check activates one (the samples prepared are dropped) */
		ctx->prepared = false;
		ctx->next_tick_us = MAX(vr_ctx_next_watermark_check_us(ctx), now_us + 1);
		return ok;
	}
	if (ctx->prepared)
		ctx_check(ctx, now_us);
	if (ctx->nr_samples >= vr_monitor_attrs_max_nr_accesses(&ctx->attrs))
		ctx_aggregate(ctx, now_us);

	ctx->since_update_us += ctx->attrs.sample_interval_us;
	if (ctx->attrs.ops_update_interval_us &&
	    ctx->since_update_us >= ctx->attrs.ops_update_interval_us) {
		ctx->since_update_us = 0;
		/* regions stay consistent on failure: sample them anyway */
		if (!ctx_update_ranges(ctx, ok ? error : NULL))
			ok = FALSE;
	}
	ctx_prepare(ctx, now_us);
	ctx->next_tick_us = now_us + ctx->attrs.sample_interval_us;
	return ok;
}
