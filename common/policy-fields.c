/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy document's objects and their members (docs/policy.md): for each
 * object, the members it may have, its integer members in a table (their
 * names, where they live in the C struct, their type and floor). The reader
 * (policy-parse.c) and the writer (policy-write.c) both go by these tables,
 * so what one writes the other reads.
 */
#include "policy.h"

#include <stddef.h>
#include <string.h>

#include "policy-private.h"

/* ---- integer fields, table-driven ---- */

#define FIELD(type, member, name, kind, min)                                                       \
	{                                                                                          \
		name, offsetof(type, member), kind, min                                            \
	}

/* vr_monitor_attrs_validate()'s floor, checked here to name it in the message. */
#define MIN_NR_REGIONS 3

static const struct vr_policy_int_field monitoring_fields[] = {
	FIELD(struct vr_monitor_attrs, sample_interval_us, "sample_interval_us", VR_POLICY_INT_U64,
	      1),
	FIELD(struct vr_monitor_attrs, aggr_interval_us, "aggr_interval_us", VR_POLICY_INT_U64, 1),
	FIELD(struct vr_monitor_attrs, ops_update_interval_us, "ops_update_interval_us",
	      VR_POLICY_INT_U64, 0),
	FIELD(struct vr_monitor_attrs, min_nr_regions, "min_nr_regions", VR_POLICY_INT_U32,
	      MIN_NR_REGIONS),
	FIELD(struct vr_monitor_attrs, max_nr_regions, "max_nr_regions", VR_POLICY_INT_U32,
	      MIN_NR_REGIONS),
};

static const struct vr_policy_int_field pattern_fields[] = {
	FIELD(struct vr_access_pattern, min_sz_bytes, "min_size", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_access_pattern, max_sz_bytes, "max_size", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_access_pattern, min_nr_accesses, "min_nr_accesses", VR_POLICY_INT_U32, 0),
	FIELD(struct vr_access_pattern, max_nr_accesses, "max_nr_accesses", VR_POLICY_INT_U32, 0),
	FIELD(struct vr_access_pattern, min_age_us, "min_age_us", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_access_pattern, max_age_us, "max_age_us", VR_POLICY_INT_U64, 0),
};

static const struct vr_policy_int_field quota_fields[] = {
	FIELD(struct vr_quota, ms, "ms", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_quota, sz, "sz", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_quota, reset_interval_ms, "reset_interval_ms", VR_POLICY_INT_U64, 0),
};

static const struct vr_policy_int_field weight_fields[] = {
	FIELD(struct vr_quota, weight_sz, "sz", VR_POLICY_INT_U32, 0),
	FIELD(struct vr_quota, weight_nr_accesses, "nr_accesses", VR_POLICY_INT_U32, 0),
	FIELD(struct vr_quota, weight_age, "age", VR_POLICY_INT_U32, 0),
};

static const struct vr_policy_int_field goal_fields[] = {
	FIELD(struct vr_quota_goal, target, "target", VR_POLICY_INT_U64, 0),
};

static const struct vr_policy_int_field wmark_fields[] = {
	FIELD(struct vr_watermarks, interval_us, "interval_us", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_watermarks, high, "high", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_watermarks, mid, "mid", VR_POLICY_INT_U64, 0),
	FIELD(struct vr_watermarks, low, "low", VR_POLICY_INT_U64, 0),
};

#define OTHERS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NO_OTHERS   ((const char *const[]){ NULL })
#define INTS(table) .ints = (table), .nr_ints = G_N_ELEMENTS(table)

const struct vr_policy_object_desc vr_policy_document_desc = {
	.others = OTHERS("profile", "monitoring", "schemes")
};
const struct vr_policy_object_desc vr_policy_monitoring_desc = { NO_OTHERS,
								 INTS(monitoring_fields) };
const struct vr_policy_object_desc vr_policy_scheme_desc = {
	.others = OTHERS("name", "action", "pattern", "quota", "watermarks", "filters"),
};
const struct vr_policy_object_desc vr_policy_pattern_desc = { NO_OTHERS, INTS(pattern_fields) };
const struct vr_policy_object_desc vr_policy_quota_desc = { OTHERS("weights", "goals", "charge"),
							    INTS(quota_fields) };
const struct vr_policy_object_desc vr_policy_weights_desc = { NO_OTHERS, INTS(weight_fields) };
const struct vr_policy_object_desc vr_policy_goal_desc = { OTHERS("metric"), INTS(goal_fields) };
const struct vr_policy_object_desc vr_policy_wmarks_desc = { OTHERS("metric"), INTS(wmark_fields) };
const struct vr_policy_object_desc vr_policy_filter_desc = { .others = OTHERS("type", "matching") };

uint64_t vr_policy_int_kind_max(enum vr_policy_int_kind kind)
{
	return kind == VR_POLICY_INT_U32 ? G_MAXUINT32 : G_MAXUINT64;
}

uint64_t vr_policy_field_get(const struct vr_policy_int_field *f, const void *base)
{
	const char *p = (const char *)base + f->offset;

	return f->kind == VR_POLICY_INT_U32 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

void vr_policy_field_set(const struct vr_policy_int_field *f, void *base, uint64_t value)
{
	char *p = (char *)base + f->offset;

	if (f->kind == VR_POLICY_INT_U32)
		*(uint32_t *)p = (uint32_t)value;
	else
		*(uint64_t *)p = value;
}

gboolean vr_policy_desc_has(const struct vr_policy_object_desc *d, const char *name)
{
	for (const char *const *o = d->others; *o; o++)
		if (strcmp(*o, name) == 0)
			return TRUE;
	for (size_t i = 0; i < d->nr_ints; i++)
		if (strcmp(d->ints[i].name, name) == 0)
			return TRUE;
	return FALSE;
}

char *vr_policy_desc_names(const struct vr_policy_object_desc *d)
{
	GString *s = g_string_new(NULL);

	for (const char *const *o = d->others; *o; o++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", *o);
	for (size_t i = 0; i < d->nr_ints; i++)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", d->ints[i].name);
	return g_string_free(s, FALSE);
}
