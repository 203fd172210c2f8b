// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target proto-request: what vreclaim-agent reads from the host, the
 * requests of the agent protocol (common/protocol.c,
 * vr_proto_decode_request()), cut into lines by the reader as the agent
 * cuts its channel.
 *
 * Checks: an error is in VR_PROTO_ERROR; a request accepted encodes again
 * (vr_proto_encode_request()) unless its policy, written out with its
 * defaults, no longer fits a line; and that line decodes to a request that
 * encodes to the very same line.
 */
#include <string.h>

#include "proto-reader.h"

static void check_request(const char *line, gsize len)
{
	g_auto(vr_proto_request) req = { 0 };
	g_auto(vr_proto_request) again = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *encoded = NULL;
	g_autofree char *reencoded = NULL;

	if (!vr_proto_decode_request(line, len, &req, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_PROTO_ERROR,
			      "a refusal outside VR_PROTO_ERROR: %s",
			      error ? error->message : "(none)");
		return;
	}
	encoded = vr_proto_encode_request(&req, &error);
	if (!encoded) {
		VR_FUZZ_CHECK(g_error_matches(error, VR_PROTO_ERROR, VR_PROTO_ERROR_TOO_LONG),
			      "an accepted %s request does not encode: %s",
			      vr_proto_command_name(req.command), error->message);
		return;
	}
	VR_FUZZ_CHECK(strlen(encoded) <= VR_PROTO_MAX_LINE, "an encoded line of %zu bytes",
		      strlen(encoded));
	VR_FUZZ_CHECK(vr_proto_decode_request(encoded, strlen(encoded), &again, &error),
		      "the encoded request does not decode: %s: %s", error->message, encoded);
	VR_FUZZ_CHECK(again.id == req.id && again.command == req.command,
		      "the round trip changed the id or the command: %s", encoded);
	reencoded = vr_proto_encode_request(&again, &error);
	VR_FUZZ_CHECK(reencoded && !strcmp(reencoded, encoded),
		      "the round trip changed the request:\n%s%s", encoded,
		      reencoded ? reencoded : error->message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	vr_fuzz_proto_lines(data, size, check_request);
	return 0;
}
