/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the agent's vsock peer check (guest-agent/channel.c):
 * --vsock-peer's values, and which peers a channel serves. The accept path
 * itself needs a vsock transport, which the end-to-end tests have.
 *
 * Parameter structs hold no pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>

#include "backend.h"
#include "channel.h"
#include "test-messages.h"

struct peer_case {
	char text[24];
	bool ok;
	guint cid;
};

static struct peer_case peer_cases[] = {
	{ "host", true, 2 },	    { "2", true, 2 },	{ "any", true, 0xffffffffU },
	{ "3", true, 3 },	    { "0", true, 0 },	{ "4294967294", true, 4294967294U },
	{ "4294967295", false, 0 }, { "-1", false, 0 }, { "", false, 0 },
	{ "HOST", false, 0 },	    { "2x", false, 0 }, { " 2", false, 0 },
};

ParameterizedTestParameters(vsock_peer, parse)
{
	return cr_make_param_array(struct peer_case, peer_cases, G_N_ELEMENTS(peer_cases));
}

ParameterizedTest(struct peer_case *c, vsock_peer, parse)
{
	g_autoptr(GError) err = NULL;
	guint cid = 12345;
	gboolean ok = vr_channel_parse_vsock_peer(c->text, &cid, &err);

	cr_assert_eq(ok, c->ok, "'%s': expected %s", c->text, c->ok ? "a CID" : "an error");
	if (c->ok) {
		cr_assert_eq(cid, c->cid, "'%s': expected CID %u, got %u", c->text, c->cid, cid);
		return;
	}
	cr_assert(g_error_matches(err, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID), "%s",
		  err ? err->message : "no error");
	g_autofree char *quoted = g_strdup_printf("'%s'", c->text);
	cr_assert(msg_has_all(err->message, "host;any") && strstr(err->message, quoted),
		  "the message should quote the value and say what is allowed: %s", err->message);
}

Test(vsock_peer, only_the_peer_asked_for_is_served)
{
	cr_assert(vr_channel_vsock_peer_allowed(VR_CHANNEL_VSOCK_HOST_CID, 2));
	cr_assert_not(vr_channel_vsock_peer_allowed(VR_CHANNEL_VSOCK_HOST_CID, 3),
		      "another guest (CID 3) is refused by default");
	cr_assert_not(vr_channel_vsock_peer_allowed(VR_CHANNEL_VSOCK_HOST_CID, 1),
		      "this guest's own loopback (CID 1) is refused by default");
	cr_assert(vr_channel_vsock_peer_allowed(7, 7));
	cr_assert_not(vr_channel_vsock_peer_allowed(7, 2));
	cr_assert(vr_channel_vsock_peer_allowed(VR_CHANNEL_VSOCK_ANY_PEER, 3), "any: every peer");
}
