/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The access source wrapper: state checks around the ops, and the check of
 * every picture a source gives. See access-source.h.
 */
#include "sources/access-source.h"

#include "picture.h"

/* The picture rules bound the regions as the protocol does. */
G_STATIC_ASSERT(VR_PICTURE_MAX_REGIONS == VR_PROTO_MAX_REGIONS);

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
	g_autoptr(GError) local = NULL;

	vr_proto_regions_clear(out);
	if (!src->started) {
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_STATE,
			    "access source %s is not started: no regions to read", src->ops->name);
		return FALSE;
	}
	if (!src->ops->get_regions(src->priv, out, error)) {
		vr_proto_regions_clear(out);
		g_prefix_error(error, "access source %s: ", src->ops->name);
		return FALSE;
	}
	if (!vr_picture_check(out->regions, out->sample_interval_us, out->aggr_interval_us, NULL,
			      &local)) {
		vr_proto_regions_clear(out);
		g_set_error(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_INVALID,
			    "access source %s: %s", src->ops->name, local->message);
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
