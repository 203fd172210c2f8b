/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policies for the agent's backend tests: a built-in profile or a parsed
 * document, asserted to exist. Owned by the caller (vr_policy_free()).
 */
#pragma once

#include <criterion/criterion.h>

#include <glib.h>

#include "policy.h"

/* The built-in profile @name (NULL: the default). */
static inline struct vr_policy *profile(const char *name)
{
	g_autoptr(GError) err = NULL;
	struct vr_policy *p = vr_policy_new_profile(name, &err);

	cr_assert_not_null(p, "profile %s: %s", name ? name : "(default)", err ? err->message : "");
	return p;
}

/* The policy document @json, which must be valid. */
static inline struct vr_policy *parse(const char *json)
{
	g_autoptr(GError) err = NULL;
	struct vr_policy *p = vr_policy_parse(json, -1, &err);

	cr_assert_not_null(p, "policy should parse: %s\n%s", err ? err->message : "", json);
	return p;
}
