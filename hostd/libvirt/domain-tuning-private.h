/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table of the metadata's settings and the reading of their values,
 * shared by domain-tuning.c (the settings, `vreclaimctl set`, the writing)
 * and domain-xml.c (the reading of the metadata element). Nothing else
 * includes it.
 */
#pragma once

#include "libvirt/domain-xml.h"

/* The elements of the metadata, in document order. */
enum vr_tuning_field {
	F_DOMAIN,
	F_ENABLE,
	F_POLICY,
	F_PRIORITY,
	F_GUARANTEED,
	F_ACTIONS,
	F_SCHEME,
	F_MIN_AGE,
	F_QUOTA_TIME,
	F_QUOTA_SIZE,
	F_MAX_ACCESSES,
	NR_FIELDS,
	F_NONE = NR_FIELDS,
};

enum vr_tuning_kind {
	K_CONTAINER, /* holds elements, no text */
	K_YESNO,
	K_NAME,
	K_UINT,
	K_SIZE, /* bytes; unit= as libvirt's <memory>, default bytes */
	K_TIME, /* unit= us (min-age only), ms (default), s, min, h */
	K_ACTIONS,
};

/**
 * struct vr_tuning_field_desc - one element of the metadata.
 * @name:	 the element's (and vr_domain_tuning_set()'s key's) name.
 * @parent:	 the element it sits in; F_NONE for the root.
 * @kind:	 what its text holds.
 * @max:	 the largest value: K_UINT as is, K_SIZE in bytes, K_TIME in us.
 * @time_unit_us: K_TIME: the unit the value is stored in, in us.
 * @expected:	 what is allowed, for messages.
 */
struct vr_tuning_field_desc {
	const char *name;
	enum vr_tuning_field parent;
	enum vr_tuning_kind kind;
	uint64_t max;
	uint64_t time_unit_us;
	const char *expected;
};

/* The settings, indexed by enum vr_tuning_field (domain-tuning.c). */
extern const struct vr_tuning_field_desc vr_tuning_fields[NR_FIELDS];

/**
 * vr_tuning_field_lookup() - the field named @name inside @parent.
 * @name:   an element's local name.
 * @parent: the enclosing field, F_NONE for the root.
 *
 * Return: the field, or F_NONE when @parent holds no such element.
 */
enum vr_tuning_field vr_tuning_field_lookup(const char *name, enum vr_tuning_field parent);

/**
 * vr_tuning_field_children() - the names of the elements @parent may hold,
 * comma-separated, for messages.
 * @parent: a container field, or F_NONE for the root.
 *
 * Return: owned by the caller.
 */
char *vr_tuning_field_children(enum vr_tuning_field parent);

/**
 * vr_tuning_field_set() - set field @f of @t from the text @value.
 * @t:	   the tuning to change (its callers pass a copy and keep it on success).
 * @f:	   a field other than a container.
 * @what:  the setting's name in messages ("<priority>" or "priority").
 * @value: the text as given.
 * @unit:  the XML's unit attribute, or NULL (ignored when @cli).
 * @cli:   from the command line: a unit is a suffix of @value, actions may
 *	   be separated by commas.
 * @error: VR_DOMAIN_XML_ERROR_INVALID naming what was wrong.
 *
 * Return: TRUE when set.
 */
gboolean vr_tuning_field_set(struct vr_domain_tuning *t, enum vr_tuning_field f, const char *what,
			     const char *value, const char *unit, gboolean cli, GError **error);

/**
 * vr_tuning_parse_digits() - read the decimal number @s (digits only).
 * @s:	      NUL-terminated text.
 * @out:      the number, when TRUE.
 * @overflow: set TRUE when the digits do not fit in 64 bits.
 *
 * Return: TRUE for a non-empty string of digits that fits.
 */
gboolean vr_tuning_parse_digits(const char *s, uint64_t *out, gboolean *overflow);

/* The size units vr_tuning_size_unit_scale() knows, for messages. */
#define VR_TUNING_SIZE_UNITS_EXPECTED                                                              \
	"b, bytes, KiB, MiB, GiB, TiB, PiB, EiB (or K, M, G, T, P, E), KB, MB, GB, TB, PB, EB"

/**
 * vr_tuning_size_unit_scale() - the scale of a size unit, as libvirt reads
 * unit= on <memory>: b/byte/bytes; k m g t p e (any case) alone or followed
 * by "iB" is a power of 1024, followed by "B" a power of 1000.
 * @unit:  the unit's name.
 * @scale: bytes per unit, when TRUE.
 *
 * Return: FALSE for an unknown unit.
 */
gboolean vr_tuning_size_unit_scale(const char *unit, uint64_t *scale);

/**
 * vr_domain_xml_set_error() - set @error in VR_DOMAIN_XML_ERROR with @code
 * and the printf-style message @fmt (domain-tuning.c, with the
 * error domain).
 *
 * Return: FALSE, for `return vr_domain_xml_set_error(...)`.
 */
gboolean vr_domain_xml_set_error(GError **error, int code, const char *fmt, ...)
	G_GNUC_PRINTF(3, 4);
