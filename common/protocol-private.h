/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire protocol's internals, shared by protocol.c (the messages' names
 * and rules), protocol-decode.c and protocol-encode.c, and nothing else.
 * The codec calls down into the rules; the rules call neither half.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-doc.h"
#include "protocol.h"

/* Sets @error to "<path>: <message>" (INVALID_ARGUMENT). Return: FALSE. */
#define vr_proto_invalid(error, path, ...)                                                         \
	vr_json_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_INVALID_ARGUMENT, path, __VA_ARGS__)

/* ---- names ---- */

/* The wire names of enum vr_proto_error_class, enum vr_proto_command, and
 * the sentence of an error reply without a description, indexed by value;
 * the counts are the arrays' lengths. */
extern const char *const vr_proto_error_class_names[];
extern const char *const vr_proto_error_class_descs[];
extern const guint vr_proto_nr_error_classes;
extern const char *const vr_proto_command_names[];
extern const guint vr_proto_nr_commands;

/**
 * vr_proto_command_args() - the argument names @command takes,
 * NULL-terminated (static; an empty list for commands without arguments).
 */
const char *const *vr_proto_command_args(enum vr_proto_command command);

/* ---- checks of one value ---- */

/** vr_proto_in_range() - @v in [@min, @max], or 0 with @zero_ok? */
gboolean vr_proto_in_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok);

/**
 * vr_proto_range_error() - sets @error to "<path>: expected <range> (got
 * <got>)", the range as vr_proto_in_range() takes it. Return: FALSE.
 */
gboolean vr_proto_range_error(GError **error, const char *path, uint64_t min, uint64_t max,
			      gboolean zero_ok, const char *got);

/**
 * vr_proto_check_range() - @v in [@min, @max] (or 0 with @zero_ok); else
 * FALSE with vr_proto_range_error() at @path.
 */
gboolean vr_proto_check_range(uint64_t v, uint64_t min, uint64_t max, gboolean zero_ok,
			      const char *path, GError **error);

/**
 * vr_proto_is_unsafe_char() - a character that must not reach the host's
 * logs and terminals: control characters (C0, DEL, C1) and format
 * characters (bidi overrides, ...).
 */
gboolean vr_proto_is_unsafe_char(gunichar c);

/**
 * enum vr_proto_text_kind - what a string member may hold.
 * @VR_PROTO_TEXT_FREE:	any UTF-8 without control or format characters.
 * @VR_PROTO_TEXT_NAME:	[a-z0-9_-] only.
 */
enum vr_proto_text_kind {
	VR_PROTO_TEXT_FREE,
	VR_PROTO_TEXT_NAME,
};

/**
 * vr_proto_check_text() - the string in the @size bytes of @buf:
 * NUL-terminated there, not empty, of @kind. Errors name @path.
 */
gboolean vr_proto_check_text(const char *buf, gsize size, enum vr_proto_text_kind kind,
			     const char *path, GError **error);

/** vr_proto_check_text_member() - vr_proto_check_text() of member @name under @path. */
gboolean vr_proto_check_text_member(const char *buf, gsize size, enum vr_proto_text_kind kind,
				    const char *path, const char *name, GError **error);

/* vr_proto_check_text_member() of a char array @field. */
#define VR_PROTO_CHECK_TEXT(field, kind, path, name, error)                                        \
	vr_proto_check_text_member((field), sizeof(field), kind, path, name, error)

/* ---- the stats' integer members ---- */

/**
 * struct vr_proto_stats_field - an integer member of the STATS object.
 * @name:	its wire name.
 * @offset:	its offset in struct vr_agent_stats (a uint64_t).
 * @optional:	added after version 1 shipped, so absent reads as 0.
 * @has_offset:	for a member sent only when known, the offset of its
 *		presence flag (a gboolean has_<member>): absent from the wire
 *		when the flag is FALSE, and the decoder sets the flag to
 *		whether it was there; 0 for the others (offset 0 is backend,
 *		never a flag).
 */
struct vr_proto_stats_field {
	const char *name;
	size_t offset;
	bool optional;
	size_t has_offset;
};

/* The integer members, in wire order after backend and paused. */
extern const struct vr_proto_stats_field vr_proto_stats_fields[];
extern const guint vr_proto_nr_stats_fields;

/** vr_proto_stats_field_ptr() - where @f is in @s. */
uint64_t *vr_proto_stats_field_ptr(struct vr_agent_stats *s, const struct vr_proto_stats_field *f);

/** vr_proto_stats_field_get() - the value of @f in @s. */
uint64_t vr_proto_stats_field_get(const struct vr_agent_stats *s,
				  const struct vr_proto_stats_field *f);

/** vr_proto_stats_field_has() - the presence flag of @f in @s, or NULL for a member always sent. */
gboolean *vr_proto_stats_field_has(struct vr_agent_stats *s, const struct vr_proto_stats_field *f);

/** vr_proto_stats_field_sent() - is @f on the wire for @s? */
bool vr_proto_stats_field_sent(const struct vr_agent_stats *s,
			       const struct vr_proto_stats_field *f);

/* ---- the rules of each struct (both sides run them) ---- */

/*
 * Each validator checks a whole struct, as decoded or about to be encoded;
 * errors start with the JSON path of the member at fault under @path.
 */

/** vr_proto_hello_validate() - the rules of a hello reply. */
gboolean vr_proto_hello_validate(const struct vr_proto_hello *h, const char *path, GError **error);

/** vr_proto_stats_validate() - the rules of a STATS object. */
gboolean vr_proto_stats_validate(const struct vr_agent_stats *s, const char *path, GError **error);

/** vr_proto_regions_validate() - the rules of a get-regions reply: the
 * wire's (integers in range, at most VR_PROTO_MAX_REGIONS regions), then
 * the access picture's (vr_picture_check_at(), no guest bound), each error
 * under the path of the member at fault ("return.regions[3].end"). */
gboolean vr_proto_regions_validate(const struct vr_proto_regions *r, const char *path,
				   GError **error);

/** vr_proto_cold_hist_validate() - the rules of a get-cold-histogram reply. */
gboolean vr_proto_cold_hist_validate(const struct vr_proto_cold_hist *c, const char *path,
				     GError **error);

/** vr_proto_reclaim_result_validate() - the rules of a reclaim reply. */
gboolean vr_proto_reclaim_result_validate(const struct vr_proto_reclaim_result *r, const char *path,
					  GError **error);

/** vr_proto_request_args_validate() - the numbers of a request, as the agent checks them. */
gboolean vr_proto_request_args_validate(const struct vr_proto_request *req, GError **error);
