// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target control-reply: what vreclaimctl reads from vreclaimd's
 * control socket, a reply line (hostd/control/control.c: the replies to status,
 * metrics, and set, pause and resume, error replies among them). Each
 * decoder gets every input.
 *
 * Checks: a refusal or an error reply is in VR_CONTROL_ERROR; a status
 * accepted is encoded by the daemon's encoder (vr_control_encode_status())
 * as a line that decodes again and encodes to the very same line; the same
 * for metrics.
 */
#include <string.h>

#include "control/control.h"
#include "fuzz.h"

static void check_refusal(const GError *error, const char *decoder)
{
	VR_FUZZ_CHECK(error && error->domain == VR_CONTROL_ERROR, "%s failed otherwise: %s",
		      decoder, error ? error->message : "(none)");
}

static void check_status(const char *line, gsize len)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) domains = NULL;
	g_autoptr(GPtrArray) domains_again = NULL;
	struct vr_daemon_status daemon = { 0 };
	struct vr_daemon_status daemon_again = { 0 };
	g_autofree char *encoded = NULL;
	g_autofree char *reencoded = NULL;

	if (!vr_control_decode_status_reply(line, len, &domains, &daemon, &error)) {
		check_refusal(error, "vr_control_decode_status_reply");
		return;
	}
	encoded = vr_control_encode_status(domains, &daemon);
	VR_FUZZ_CHECK(vr_control_decode_status_reply(encoded, strlen(encoded), &domains_again,
						     &daemon_again, &error),
		      "the status encoded does not decode: %s", error->message);
	reencoded = vr_control_encode_status(domains_again, &daemon_again);
	VR_FUZZ_CHECK(!strcmp(encoded, reencoded), "the round trip changed the status:\n%s%s",
		      encoded, reencoded);
}

static void check_metrics(const char *line, gsize len)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *text = NULL;
	g_autofree char *text_again = NULL;
	g_autofree char *encoded = NULL;

	if (!vr_control_decode_metrics_reply(line, len, &text, &error)) {
		check_refusal(error, "vr_control_decode_metrics_reply");
		return;
	}
	encoded = vr_control_encode_metrics(text);
	VR_FUZZ_CHECK(vr_control_decode_metrics_reply(encoded, strlen(encoded), &text_again,
						      &error),
		      "the metrics encoded do not decode: %s", error->message);
	VR_FUZZ_CHECK(!strcmp(text, text_again), "the round trip changed the metrics");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	g_autoptr(GError) error = NULL;

	check_status(line, size);
	check_metrics(line, size);
	if (!vr_control_decode_empty_reply(line, size, &error))
		check_refusal(error, "vr_control_decode_empty_reply");
	return 0;
}
