/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy: monitoring attributes and named schemes, as one JSON document
 * (docs/policy.md). Parsing is pure (text in, struct out); reading the file
 * is the caller's business.
 *
 * Defaults are the published DAMON_RECLAIM values (SEMANTICS.md §3), profile
 * "damon-reclaim-2021"; "damon-reclaim-6.12" has today's kernel values. A
 * document may name a profile and override any field of it.
 */
#pragma once

#include <glib.h>

#include "monitor.h"
#include "scheme.h"

#define VR_POLICY_ERROR (vr_policy_error_quark())
GQuark vr_policy_error_quark(void);

/**
 * enum vr_policy_error - error codes in the VR_POLICY_ERROR domain.
 * @VR_POLICY_ERROR_SYNTAX:  the text is not JSON (the message gives where).
 * @VR_POLICY_ERROR_INVALID: a field is missing, of the wrong type, unknown or
 *	out of range; the message starts with its JSON path, e.g.
 *	"schemes[1].quota.ms: expected a non-negative integer".
 */
enum vr_policy_error {
	VR_POLICY_ERROR_SYNTAX,
	VR_POLICY_ERROR_INVALID,
};

/**
 * struct vr_policy - a parsed, validated policy.
 * @profile:	the profile it started from; owned.
 * @attrs:	monitoring attributes (validated).
 * @schemes:	struct vr_scheme *, owned, validated, names unique.
 */
struct vr_policy {
	char *profile;
	struct vr_monitor_attrs attrs;
	GPtrArray *schemes;
};

typedef struct vr_policy vr_policy;

/**
 * vr_policy_new_profile() - the built-in policy @profile (NULL: the default,
 * "damon-reclaim-2021"). Return: owned by the caller, or NULL with @error for
 * an unknown name.
 */
struct vr_policy *vr_policy_new_profile(const char *profile, GError **error);

/**
 * vr_policy_profile_names() - NULL-terminated list of the built-in profiles.
 */
const char *const *vr_policy_profile_names(void);

/**
 * vr_policy_parse() - parse and validate the JSON document @text (@len bytes,
 * or -1 for NUL-terminated). Return: a new policy, or NULL with @error whose
 * message names the JSON path of the first problem.
 */
struct vr_policy *vr_policy_parse(const char *text, gssize len, GError **error);

/**
 * vr_policy_to_json() - the policy as a JSON document that vr_policy_parse()
 * reads back to the same policy. Return: owned string.
 */
char *vr_policy_to_json(const struct vr_policy *p);

/**
 * vr_policy_apply() - make @ctx's attributes and schemes those of @p,
 * atomically: on error nothing changes. Schemes keep their state by name
 * (vr_ctx_set_schemes()).
 */
gboolean vr_policy_apply(const struct vr_policy *p, struct vr_ctx *ctx, GError **error);

/**
 * vr_policy_copy() - a deep copy of @p (its schemes copied with
 * vr_scheme_copy()). Return: owned by the caller.
 */
struct vr_policy *vr_policy_copy(const struct vr_policy *p);

void vr_policy_free(struct vr_policy *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_policy, vr_policy_free)
