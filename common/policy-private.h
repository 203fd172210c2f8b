/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy document's internals, shared by policy.c (the profiles, the
 * rules and their application), policy-fields.c (each object's members),
 * policy-parse.c (reading a document) and policy-write.c (writing one), and
 * nothing else. Reading and writing call down into the other two, which
 * call neither.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "json-doc.h"
#include "policy.h"

/* Sets @error to "<path>: <message>" (VR_POLICY_ERROR_INVALID). Return: FALSE. */
#define vr_policy_invalid(error, path, ...)                                                        \
	vr_json_set_error(error, VR_POLICY_ERROR, VR_POLICY_ERROR_INVALID, path, __VA_ARGS__)

/* ---- the engine's validators, their messages in JSON paths (policy.c) ---- */

/**
 * vr_policy_validate_attrs() - vr_monitor_attrs_validate() of @attrs, its
 * message naming "monitoring.<member>" as the document spells it.
 */
gboolean vr_policy_validate_attrs(const struct vr_monitor_attrs *attrs, GError **error);

/**
 * vr_policy_validate_scheme() - vr_scheme_validate() of @s, the scheme at
 * JSON path @path, its message naming the members as the document spells
 * them.
 */
gboolean vr_policy_validate_scheme(const struct vr_scheme *s, const char *path, GError **error);

/**
 * vr_policy_check_unique_name() - is @name used by one of the first @nr
 * @schemes? FALSE with an error at @path if so.
 */
gboolean vr_policy_check_unique_name(struct vr_scheme *const *schemes, guint nr, const char *name,
				     const char *path, GError **error);

/* ---- each object's members (policy-fields.c) ---- */

/**
 * enum vr_policy_int_kind - the C type of an integer member.
 * @VR_POLICY_INT_U32:	uint32_t.
 * @VR_POLICY_INT_U64:	uint64_t.
 */
enum vr_policy_int_kind {
	VR_POLICY_INT_U32,
	VR_POLICY_INT_U64,
};

/**
 * struct vr_policy_int_field - an integer member of a document object.
 * @name:	its name in the document.
 * @offset:	where it lives in the C struct the object is read into.
 * @kind:	the C type there (its maximum is the member's).
 * @min:	the smallest value the member takes alone (the validators
 *		check the rules between members).
 */
struct vr_policy_int_field {
	const char *name;
	size_t offset;
	enum vr_policy_int_kind kind;
	uint64_t min;
};

/**
 * struct vr_policy_object_desc - the members an object of the document may
 * have.
 * @others:	NULL-terminated: members read by hand (strings, nested
 *		objects and arrays), listed first in messages.
 * @ints:	integer members, read from the table; @nr_ints entries.
 */
struct vr_policy_object_desc {
	const char *const *others;
	const struct vr_policy_int_field *ints;
	size_t nr_ints;
};

/* The objects of a document: the document itself, "monitoring", a scheme,
 * its "pattern", "quota", "quota.weights", a quota goal, "watermarks" and a
 * filter. */
extern const struct vr_policy_object_desc vr_policy_document_desc;
extern const struct vr_policy_object_desc vr_policy_monitoring_desc;
extern const struct vr_policy_object_desc vr_policy_scheme_desc;
extern const struct vr_policy_object_desc vr_policy_pattern_desc;
extern const struct vr_policy_object_desc vr_policy_quota_desc;
extern const struct vr_policy_object_desc vr_policy_weights_desc;
extern const struct vr_policy_object_desc vr_policy_goal_desc;
extern const struct vr_policy_object_desc vr_policy_wmarks_desc;
extern const struct vr_policy_object_desc vr_policy_filter_desc;

/** vr_policy_int_kind_max() - the largest value of @kind. */
uint64_t vr_policy_int_kind_max(enum vr_policy_int_kind kind);

/** vr_policy_field_get() - the value of @f in the struct at @base. */
uint64_t vr_policy_field_get(const struct vr_policy_int_field *f, const void *base);

/** vr_policy_field_set() - set @f in the struct at @base to @value (fits @f's kind). */
void vr_policy_field_set(const struct vr_policy_int_field *f, void *base, uint64_t value);

/** vr_policy_desc_has() - may an object of @d have a member @name? */
gboolean vr_policy_desc_has(const struct vr_policy_object_desc *d, const char *name);

/** vr_policy_desc_names() - the member names of @d, ", "-separated (free it). */
char *vr_policy_desc_names(const struct vr_policy_object_desc *d);
