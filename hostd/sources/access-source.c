/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The access source wrapper: state checks around the ops, and the check of
 * every picture a source gives. See access-source.h.
 */
#include "sources/access-source.h"

/* clang-format off */
G_DEFINE_QUARK(vr-access-source-error-quark, vr_access_source_error)
/* clang-format on */

struct vr_access_source {
	const struct vr_access_source_ops *ops;
	void *priv;
	gboolean started;
};

struct vr_access_source *vr_access_source_new(const struct vr_access_source_ops *ops, void *priv)
{
	struct vr_access_source *src = g_new0(struct vr_access_source, 1);

	src->ops = ops;
	src->priv = priv;
	return src;
}

const struct vr_access_source_ops *vr_access_source_get_ops(const struct vr_access_source *src)
{
	return src->ops;
}

void *vr_access_source_get_priv(const struct vr_access_source *src)
{
	return src->priv;
}

const char *vr_access_source_name(const struct vr_access_source *src)
{
	return src->ops->name;
}

gboolean vr_access_source_is_started(const struct vr_access_source *src)
{
	return src->started;
}

gboolean vr_access_source_start(struct vr_access_source *src, GError **error)
{
	if (src->started) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_STATE,
			    "access source %s is already started", src->ops->name);
		return FALSE;
	}
	if (!src->ops->start(src->priv, error)) {
		g_prefix_error(error, "access source %s: ", src->ops->name);
		return FALSE;
	}
	src->started = TRUE;
	return TRUE;
}

gboolean vr_access_source_get_regions(struct vr_access_source *src, struct vr_proto_regions *out,
				      GError **error)
{
	vr_proto_regions_clear(out);
	if (!src->started) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_STATE,
			    "access source %s is not started: no regions to read", src->ops->name);
		return FALSE;
	}
	if (!src->ops->get_regions(src->priv, out, error) ||
	    !vr_access_source_check_regions(out, error)) {
		vr_proto_regions_clear(out);
		g_prefix_error(error, "access source %s: ", src->ops->name);
		return FALSE;
	}
	return TRUE;
}

void vr_access_source_stop(struct vr_access_source *src)
{
	if (!src->started)
		return;
	src->ops->stop(src->priv);
	src->started = FALSE;
}

void vr_access_source_free(struct vr_access_source *src)
{
	if (!src)
		return;
	vr_access_source_stop(src);
	src->ops->free(src->priv);
	g_free(src);
}

gboolean vr_access_source_check_regions(const struct vr_proto_regions *r, GError **error)
{
	guint n = r->regions ? r->regions->len : 0;
	uint64_t max_nr_accesses;

	if (r->sample_interval_us == 0 || r->aggr_interval_us < r->sample_interval_us) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
			    "the picture's intervals are invalid: sample %" G_GUINT64_FORMAT
			    " us, aggregation %" G_GUINT64_FORMAT
			    " us (sample must be > 0 and <= aggregation)",
			    (guint64)r->sample_interval_us, (guint64)r->aggr_interval_us);
		return FALSE;
	}
	if (n > VR_PROTO_MAX_REGIONS) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
			    "the picture has %u regions, more than %d", n, VR_PROTO_MAX_REGIONS);
		return FALSE;
	}
	max_nr_accesses = r->aggr_interval_us / r->sample_interval_us;
	for (guint i = 0; i < n; i++) {
		const struct vr_agent_region *reg =
			&g_array_index(r->regions, struct vr_agent_region, i);

		if (reg->start >= reg->end) {
			g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
				    "region %u is empty: start 0x%" G_GINT64_MODIFIER
				    "x >= end 0x%" G_GINT64_MODIFIER "x",
				    i, (guint64)reg->start, (guint64)reg->end);
			return FALSE;
		}
		if (i > 0 &&
		    reg->start < g_array_index(r->regions, struct vr_agent_region, i - 1).end) {
			g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
				    "region %u (start 0x%" G_GINT64_MODIFIER
				    "x) overlaps or precedes region %u: regions must be sorted "
				    "and disjoint",
				    i, (guint64)reg->start, i - 1);
			return FALSE;
		}
		if (reg->nr_accesses > max_nr_accesses) {
			g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
				    "region %u has nr_accesses %u, more than aggregation / "
				    "sample = %" G_GUINT64_FORMAT,
				    i, reg->nr_accesses, (guint64)max_nr_accesses);
			return FALSE;
		}
	}
	return TRUE;
}
