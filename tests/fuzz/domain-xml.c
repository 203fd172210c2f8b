// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target domain-xml: what vreclaimd reads from libvirt about a domain
 * (hostd/libvirt/domain-xml.c): the domain XML (vr_domain_xml_parse(), of
 * virDomainGetXMLDesc()) and our metadata element in it
 * (vr_domain_tuning_parse(), which whoever may edit the domain writes). Both
 * parsers get every input.
 *
 * Checks: a tuning accepted is written out (vr_domain_tuning_to_xml()) as
 * an element that parses back to an equal tuning (domain-xml.h promises
 * it), and applied to the default policy (vr_domain_tuning_policy()) gives
 * a policy or an error; a domain accepted has a name, a type, a UUID of 36
 * characters and, when it gives one, an absolute agent socket path.
 */
#include <string.h>

#include "fuzz.h"
#include "libvirt/domain-xml.h"
#include "policy.h"

static void check_tuning(const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_parse(text, &error);
	g_autoptr(vr_domain_tuning) again = NULL;
	g_autoptr(vr_policy) base = NULL;
	g_autoptr(vr_policy) policy = NULL;
	g_autofree char *xml = NULL;

	if (!t) {
		VR_FUZZ_CHECK(error && error->domain == VR_DOMAIN_XML_ERROR,
			      "a refusal outside VR_DOMAIN_XML_ERROR: %s",
			      error ? error->message : "(none)");
		return;
	}
	xml = vr_domain_tuning_to_xml(t);
	again = vr_domain_tuning_parse(xml, &error);
	VR_FUZZ_CHECK(again, "the tuning written out does not parse: %s: %s", error->message, xml);
	VR_FUZZ_CHECK(vr_domain_tuning_equal(t, again), "the round trip changed the tuning: %s",
		      xml);

	base = vr_policy_new_profile(NULL, &error);
	VR_FUZZ_CHECK(base, "no default policy: %s", error->message);
	policy = vr_domain_tuning_policy(t, base, &error);
	VR_FUZZ_CHECK(policy || error, "no policy and no error");
}

static void check_domain(const char *text)
{
	g_autoptr(GError) error = NULL;
	g_auto(vr_domain_info) info = { .id = -1 };

	if (!vr_domain_xml_parse(text, &info, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_DOMAIN_XML_ERROR,
			      "a refusal outside VR_DOMAIN_XML_ERROR: %s",
			      error ? error->message : "(none)");
		return;
	}
	VR_FUZZ_CHECK(info.name && info.type && strlen(info.uuid) == VR_DOMAIN_UUID_STRING_LEN,
		      "a domain without a name, a type or a whole UUID");
	VR_FUZZ_CHECK(!info.agent_socket_path || info.agent_socket_path[0] == '/',
		      "a relative agent socket path: %s", info.agent_socket_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = vr_fuzz_strdup(data, size);

	check_tuning(text);
	check_domain(text);
	return 0;
}
