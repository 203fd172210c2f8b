/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scripted access source for the host-reclaim tests
 * (test-host-reclaim-real.c, test-host-swap-full-real.c): it gives the same
 * picture every time and logs what it was asked (script_log), and can be
 * told to fail its start or its reads. Also the published DAMON_RECLAIM
 * scheme the tests plan with. One test per process (Criterion forks a worker
 * per test): the log is a static variable. Include it in one file only.
 */
#pragma once

#include <criterion/criterion.h>

#include <glib.h>

#include "picture-region.h"
#include "scheme.h"
#include "sources/access-source.h"

/* The picture's intervals: 5 ms / 100 ms, so an age of 6000 is 600 s. */
#define SCRIPT_SAMPLE_US (5 * 1000ULL)
#define SCRIPT_AGGR_US	 (100 * 1000ULL)

/* ------------------------------------------------------------------------- */
/* The scripted access source                                                */
/* ------------------------------------------------------------------------- */

/* What the scripted source was asked to do: the source is freed inside
 * vr_host_reclaim_free(), so this lives outside it. One test per process. */
static struct {
	int starts;
	int stops;
	int frees;
	int reads;
} script_log;

/**
 * struct script - a scripted source's private data.
 * @regions:	the picture it gives every time (struct vr_picture_region).
 * @fail_start, @fail_read: fail start or get-regions, for the error cases.
 */
struct script {
	GArray *regions;
	gboolean fail_start;
	gboolean fail_read;
};

static gboolean script_start(void *priv, GError **error)
{
	struct script *s = priv;

	if (s->fail_start) {
		g_set_error_literal(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_BUSY,
				    "the script refuses to start");
		return FALSE;
	}
	script_log.starts++;
	return TRUE;
}

static gboolean script_get_regions(void *priv, struct vr_proto_regions *out, GError **error)
{
	struct script *s = priv;

	if (s->fail_read) {
		g_set_error_literal(error, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_FAILED,
				    "the script has no picture today");
		return FALSE;
	}
	script_log.reads++;
	out->sample_interval_us = SCRIPT_SAMPLE_US;
	out->aggr_interval_us = SCRIPT_AGGR_US;
	out->regions = g_array_copy(s->regions);
	return TRUE;
}

static void script_stop(void *priv)
{
	(void)priv;
	script_log.stops++;
}

static void script_free(void *priv)
{
	struct script *s = priv;

	g_array_unref(s->regions);
	g_free(s);
	script_log.frees++;
}

static const struct vr_access_source_ops script_ops = {
	.name = "script",
	.start = script_start,
	.get_regions = script_get_regions,
	.stop = script_stop,
	.free = script_free,
};

/* A stopped scripted source giving the @nr @regions. */
static inline struct vr_access_source *script_new(const struct vr_picture_region *regions, guint nr)
{
	struct script *s = g_new0(struct script, 1);

	s->regions = g_array_new(FALSE, TRUE, sizeof(struct vr_picture_region));
	g_array_append_vals(s->regions, regions, nr);
	return vr_access_source_new(&script_ops, s);
}

static inline struct script *script_of(struct vr_access_source *src)
{
	return vr_access_source_get_priv(src);
}

/* The published DAMON_RECLAIM scheme: 0 accesses for at least 5 s, scored
 * by age alone. */
static inline struct vr_scheme *reclaim_scheme(void)
{
	struct vr_scheme *s = vr_scheme_new("damon-reclaim", VR_ACTION_PAGEOUT);

	s->pattern.max_nr_accesses = 0;
	s->pattern.min_age_us = 5 * G_USEC_PER_SEC;
	s->quota.weight_age = 1;
	return s;
}
