/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict JSON documents for the project's readers (the policy file, workload
 * files): json-c's strict tokener, then a second walk over the text for what
 * json-c lets through, and JSON paths ("schemes[1].quota.ms") for messages.
 * Pure: text in.
 */
#pragma once

#include <glib.h>
#include <json.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_object, json_object_put)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_tokener, json_tokener_free)

/* How messages name the document itself, where the path is empty. */
#define VR_JSON_ROOT_NAME "document"

/**
 * struct vr_json_errors - the GError a reader reports its document's
 * problems with.
 * @domain:	  the reader's error domain.
 * @syntax_code:  for text that is not JSON.
 * @invalid_code: for JSON the reader refuses (here: a member given twice).
 */
struct vr_json_errors {
	GQuark domain;
	int syntax_code;
	int invalid_code;
};

/**
 * vr_json_doc_parse() - parse @len bytes of @text (-1: NUL-terminated).
 * @errs:	  how to report problems.
 * @root:	  the document's root, owned by the caller (NULL for `null`).
 * @big_integers: if not NULL, gets JSON path -> literal for each integer
 *		  beyond 64 bits (json-c saturates them).
 *
 * Refuses, with "line L, column C (offset O): ..." (from 1, in bytes):
 * anything json-c's strict mode refuses, data after the document, and
 * single-quoted strings; with "<path>: member given twice": a member given
 * twice in one object (json-c keeps the last).
 */
gboolean vr_json_doc_parse(const char *text, gssize len, const struct vr_json_errors *errs,
			   struct json_object **root, GHashTable *big_integers, GError **error);

/** vr_json_path_member() - "@parent.@name" (just @name at the root); owned. */
char *vr_json_path_member(const char *parent, const char *name);

/** vr_json_path_index() - "@parent[@i]"; owned. */
char *vr_json_path_index(const char *parent, guint i);

/**
 * vr_json_set_error() - set @error to "<path>: <message>" in @domain with
 * @code (the path "document" where @path is empty). Return: FALSE, for
 * `return vr_json_set_error(...)`.
 */
gboolean vr_json_set_error(GError **error, GQuark domain, int code, const char *path,
			   const char *fmt, ...) G_GNUC_PRINTF(5, 6);

/**
 * vr_json_describe() - what @v is, for "expected X (got Y)": numbers show
 * their text ("-1", "1.5"), other values their type ("a string").
 */
const char *vr_json_describe(struct json_object *v);
