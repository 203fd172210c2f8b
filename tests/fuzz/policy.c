// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target policy: a policy document (common/policy.c,
 * vr_policy_parse()), what an operator's policy file and a set-policy
 * request carry.
 *
 * Checks: an error is in VR_POLICY_ERROR; a policy accepted is written out
 * (vr_policy_to_json()) as a document that parses back to a policy written
 * out the very same way, and its copy (vr_policy_copy()) too.
 */
#include <string.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) policy = vr_policy_parse((const char *)data, (gssize)size, &error);
	g_autoptr(vr_policy) again = NULL;
	g_autoptr(vr_policy) copy = NULL;
	g_autofree char *json = NULL;
	g_autofree char *json_again = NULL;
	g_autofree char *json_copy = NULL;

	if (!policy) {
		VR_FUZZ_CHECK(error && error->domain == VR_POLICY_ERROR,
			      "a refusal outside VR_POLICY_ERROR: %s",
			      error ? error->message : "(none)");
		return 0;
	}
	json = vr_policy_to_json(policy);
	again = vr_policy_parse(json, -1, &error);
	VR_FUZZ_CHECK(again, "the policy written out does not parse: %s: %s", error->message, json);
	json_again = vr_policy_to_json(again);
	VR_FUZZ_CHECK(!strcmp(json, json_again), "the round trip changed the policy:\n%s\n%s", json,
		      json_again);
	copy = vr_policy_copy(policy);
	json_copy = vr_policy_to_json(copy);
	VR_FUZZ_CHECK(!strcmp(json, json_copy), "the copy differs:\n%s\n%s", json, json_copy);
	return 0;
}
