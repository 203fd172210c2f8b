// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target control-request: what vreclaimd reads on its control socket
 * from a local client, one request per line (hostd/control/control.c,
 * vr_control_decode_request()), and the settings of a set request as the
 * daemon applies them to a domain's tuning (hostd/libvirt/domain-xml.c,
 * vr_domain_tuning_set_args(), what manager.c calls).
 *
 * Checks: a refusal is VR_CONTROL_ERROR_INVALID_ARGUMENT; a request
 * accepted encodes again (vr_control_encode_request()) to a line that
 * decodes to a request that encodes to the very same line; a set that
 * fails leaves the tuning unchanged (all or nothing), and one that
 * succeeds gives a tuning whose metadata element parses back to it.
 */
#include <string.h>

#include "control/control.h"
#include "fuzz.h"
#include "libvirt/domain-xml.h"

/* Lines (requests) taken from one input. */
#define FUZZ_MAX_LINES 16

static void check_settings(const char *const *settings)
{
	g_autoptr(vr_domain_tuning) t = vr_domain_tuning_new();
	g_autoptr(vr_domain_tuning) before = vr_domain_tuning_copy(t);
	g_autoptr(vr_domain_tuning) again = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree char *xml = NULL;

	if (!vr_domain_tuning_set_args(t, settings, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_DOMAIN_XML_ERROR,
			      "a setting refused otherwise: %s", error ? error->message : "(none)");
		VR_FUZZ_CHECK(vr_domain_tuning_equal(t, before),
			      "a refused set changed the tuning");
		return;
	}
	xml = vr_domain_tuning_to_xml(t);
	again = vr_domain_tuning_parse(xml, &error);
	VR_FUZZ_CHECK(again, "the tuning set does not parse back: %s: %s", error->message, xml);
	VR_FUZZ_CHECK(vr_domain_tuning_equal(t, again), "the tuning set reads back otherwise: %s",
		      xml);
}

static void check_line(const char *line, gsize len)
{
	g_auto(vr_control_request) req = { 0 };
	g_auto(vr_control_request) again = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *encoded = NULL;
	g_autofree char *reencoded = NULL;

	if (!vr_control_decode_request(line, len, &req, &error)) {
		VR_FUZZ_CHECK(g_error_matches(error, VR_CONTROL_ERROR,
					      VR_CONTROL_ERROR_INVALID_ARGUMENT),
			      "a refusal that is no invalid-argument: %s",
			      error ? error->message : "(none)");
		return;
	}
	encoded = vr_control_encode_request(&req, &error);
	VR_FUZZ_CHECK(encoded, "an accepted request does not encode: %s", error->message);
	VR_FUZZ_CHECK(vr_control_decode_request(encoded, strlen(encoded), &again, &error),
		      "the encoded request does not decode: %s: %s", error->message, encoded);
	reencoded = vr_control_encode_request(&again, &error);
	VR_FUZZ_CHECK(reencoded && !strcmp(encoded, reencoded),
		      "the round trip changed the request:\n%s%s", encoded,
		      reencoded ? reencoded : error->message);
	if (req.command == VR_CONTROL_SET)
		check_settings((const char *const *)req.settings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t start = 0;
	guint nr = 0;

	/* The server's lines: up to each '\n', the newline handed over too
	 * (the decoder allows it), the bytes themselves, NULs and all. */
	for (size_t i = 0; i < size && nr < FUZZ_MAX_LINES; i++) {
		if (data[i] != '\n' && i + 1 < size)
			continue;
		check_line((const char *)data + start, i + 1 - start);
		start = i + 1;
		nr++;
	}
	return 0;
}
