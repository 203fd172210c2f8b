// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target config: vreclaimd's configuration file (hostd/config.c,
 * vr_daemon_config_parse()), a key file an operator writes.
 *
 * Checks: a refusal is in VR_CONFIG_ERROR and starts with the file's name;
 * a config accepted is written out (vr_daemon_config_to_string()) as a key
 * file that parses back to a config written out the very same way
 * (config.h promises it).
 */
#include <string.h>

#include "config.h"
#include "fuzz.h"

#define FUZZ_FILE_NAME "fuzz.conf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_daemon_config) config =
		vr_daemon_config_parse((const char *)data, (gssize)size, FUZZ_FILE_NAME, &error);
	g_autoptr(vr_daemon_config) again = NULL;
	g_autofree char *text = NULL;
	g_autofree char *text_again = NULL;

	if (!config) {
		VR_FUZZ_CHECK(error && error->domain == VR_CONFIG_ERROR,
			      "a refusal outside VR_CONFIG_ERROR: %s",
			      error ? error->message : "(none)");
		VR_FUZZ_CHECK(g_str_has_prefix(error->message, FUZZ_FILE_NAME ": "),
			      "a message that does not name the file: %s", error->message);
		return 0;
	}
	text = vr_daemon_config_to_string(config);
	again = vr_daemon_config_parse(text, -1, FUZZ_FILE_NAME, &error);
	VR_FUZZ_CHECK(again, "the config written out does not parse: %s:\n%s", error->message,
		      text);
	text_again = vr_daemon_config_to_string(again);
	VR_FUZZ_CHECK(!strcmp(text, text_again), "the round trip changed the config:\n%s\n%s", text,
		      text_again);
	return 0;
}
