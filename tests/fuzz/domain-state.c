// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target domain-state: vreclaimd's state file (common/domain-state.c
 * vr_domain_state_parse()), which it reads from its state folder at each
 * start: a file a crash, a full disk or a hand could have left in any shape.
 *
 * Checks: an error is VR_DOMAIN_STATE_ERROR_INVALID and leaves the output
 * alone; what is accepted keeps the header's bounds (a pid > 0, a credit of
 * 125..1000, a lowercase UUID) and round-trips: written out again
 * (vr_domain_state_to_text()) it parses to the same state.
 */
#include <stddef.h>
#include <string.h>

#include "domain-state.h"
#include "fuzz.h"

#define UNTOUCHED 0xa5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autoptr(GError) error = NULL;
	struct vr_domain_state st, again;

	memset(&st, UNTOUCHED, sizeof(st));
	if (!vr_domain_state_parse((const char *)data, size, &st, &error)) {
		VR_FUZZ_CHECK(g_error_matches(error, VR_DOMAIN_STATE_ERROR,
					      VR_DOMAIN_STATE_ERROR_INVALID),
			      "the parse failed otherwise: %s", error ? error->message : "(none)");
		for (size_t i = 0; i < sizeof(st); i++)
			VR_FUZZ_CHECK(((const uint8_t *)&st)[i] == UNTOUCHED,
				      "a failed parse wrote");
		return 0;
	}
	VR_FUZZ_CHECK(st.qemu.pid > 0, "a pid of %d accepted", (int)st.qemu.pid);
	VR_FUZZ_CHECK(st.credit_permille >= 125 && st.credit_permille <= 1000,
		      "a credit of %u accepted", st.credit_permille);
	VR_FUZZ_CHECK(st.trust_permille >= 125 && st.trust_permille <= 1000,
		      "a trust of %u accepted", st.trust_permille);
	VR_FUZZ_CHECK(strlen(st.uuid) == 36, "a UUID of %zu characters accepted", strlen(st.uuid));
	g_autofree char *text = vr_domain_state_to_text(&st);
	g_autoptr(GError) back = NULL;
	VR_FUZZ_CHECK(vr_domain_state_parse(text, strlen(text), &again, &back),
		      "what was accepted does not parse back: %s", back ? back->message : "");
	VR_FUZZ_CHECK(
		!strcmp(again.uuid, st.uuid) && !strcmp(again.name, st.name) &&
			again.qemu.pid == st.qemu.pid &&
			again.qemu.start_time_us == st.qemu.start_time_us &&
			again.reclaimed_bytes == st.reclaimed_bytes &&
			again.rejected_reports == st.rejected_reports &&
			again.rss_start_bytes == st.rss_start_bytes && again.paused == st.paused &&
			again.credit_permille == st.credit_permille &&
			again.trust_permille == st.trust_permille &&
			again.agent_uptime_ms == st.agent_uptime_ms &&
			again.agent_sz_applied_bytes == st.agent_sz_applied_bytes &&
			again.agent_swap_cache_release_bytes == st.agent_swap_cache_release_bytes &&
			again.window.start_us == st.window.start_us &&
			again.window.share_bytes == st.window.share_bytes &&
			again.window.charged_bytes == st.window.charged_bytes,
		"the round trip changed the state");
	return 0;
}
