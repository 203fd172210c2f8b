/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitoring context's internals, shared by the files of the engine
 * (ctx.c, monitor.c, scheme.c) and nothing else. ctx.c, the context's life
 * and tick, calls down into monitor.c and scheme.c; scheme.c calls down into
 * monitor.c; monitor.c calls neither (it includes scheme.h through this
 * header only for the layout of struct vr_ctx).
 */
#pragma once

#include "monitor.h"
#include "scheme.h"

struct vr_listener {
	vr_listener_fn fn;
	void *user_data;
};

/**
 * struct vr_ctx - a monitoring context.
 * @attrs:	validated attributes.
 * @ops:	the access source (borrowed).
 * @ops_data:	the source's data (released through @ops->cleanup).
 * @targets:	struct vr_target *, owned.
 * @listeners:	struct vr_listener, called with every aggregated snapshot.
 * @rng:	the context's random choices (sampling addresses, split points).
 * @schemes:	struct vr_scheme *, owned, applied at every aggregation.
 * @actuator, @actuator_data: where schemes act (data released by cleanup).
 * @metrics, @metrics_data: where watermarks and goals read their metrics.
 * @clock:	measures the time of each action.
 */
struct vr_ctx {
	struct vr_monitor_attrs attrs;
	const struct vr_access_ops *ops;
	void *ops_data;
	GPtrArray *targets;
	GArray *listeners;
	struct vr_rng rng;
	GPtrArray *schemes;
	const struct vr_actuator_ops *actuator;
	void *actuator_data;
	const struct vr_metric_ops *metrics;
	void *metrics_data;
	struct vr_clock clock;
	/* private: */
	bool started;
	bool prepared;		  /* samples are prepared and not checked yet */
	uint64_t next_tick_us;	  /* when the next sample is due */
	uint32_t nr_samples;	  /* samples checked in the current window */
	uint64_t since_update_us; /* sampling time since the last ops update */
	uint64_t nr_aggregations;
	guint last_split_nr_regions;
};

/**
 * vr_target_split_region_at() - split the @i-th region of @t at @offset bytes
 * from its start (page-aligned, inside it); the new right part follows it and
 * copies its counters and age.
 */
void vr_target_split_region_at(struct vr_target *t, guint i, uint64_t offset);

/**
 * vr_ctx_update_watermarks() - read the metrics of the schemes whose
 * watermark check is due at @now_us and update their activation.
 */
gboolean vr_ctx_update_watermarks(struct vr_ctx *ctx, uint64_t now_us, GError **error);

/**
 * vr_ctx_next_watermark_check_us() - the earliest watermark check due.
 */
uint64_t vr_ctx_next_watermark_check_us(const struct vr_ctx *ctx);

/** vr_ctx_free_schemes() - release the scheme state of @ctx (at free). */
void vr_ctx_free_schemes(struct vr_ctx *ctx);
