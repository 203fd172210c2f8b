// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target proto-message: what vreclaimd (and `vreclaimctl agent`) read
 * from a guest's agent, the replies, error replies and reports of the agent
 * protocol (common/protocol.c, vr_proto_decode_message()), cut into lines by
 * the reader as the host cuts its channel.
 *
 * The request a reply answers is found from its id: id N (1..1000) is the
 * command (N - 1) % 7 in the order of enum vr_proto_command (1 hello, 2
 * set-policy, 3 reclaim, 4 get-stats, 5 get-regions, 6 pause, 7 resume, 8
 * hello again...); id 1001..1100 is get-cold-histogram (added after the
 * corpus was seeded, so the old seeds keep their meaning); any other id is
 * no request waiting.
 *
 * Checks: an error is in VR_PROTO_ERROR; a message accepted is one the
 * agent's encoders write as a message of the same kind (not a "failed"
 * error reply: the host would take what the agent refuses to send), which
 * decodes again and encodes to the very same line.
 */
#include <string.h>

#include "proto-reader.h"

/* Ids above this have no request waiting; above the first, get-cold-histogram. */
#define FUZZ_MAX_WAITING_ID   1000
#define FUZZ_MAX_COLD_HIST_ID 1100

static gboolean lookup(uint32_t id, enum vr_proto_command *command, gpointer user)
{
	(void)user;
	if (id == 0 || id > FUZZ_MAX_COLD_HIST_ID)
		return FALSE;
	if (id > FUZZ_MAX_WAITING_ID) {
		*command = VR_PROTO_GET_COLD_HIST;
		return TRUE;
	}
	*command = (enum vr_proto_command)((id - 1) % (VR_PROTO_RESUME + 1));
	return TRUE;
}

/* The line the agent's encoders write for @m. */
static char *encode(const struct vr_proto_message *m)
{
	switch (m->kind) {
	case VR_PROTO_MESSAGE_ERROR:
		return vr_proto_encode_error(m->id, m->error.cls, m->error.desc);
	case VR_PROTO_MESSAGE_REPORT:
		return vr_proto_encode_report(m->seq, &m->stats);
	case VR_PROTO_MESSAGE_REPLY:
		break;
	}
	switch (m->command) {
	case VR_PROTO_HELLO:
		return vr_proto_encode_hello(m->id, &m->hello);
	case VR_PROTO_GET_STATS:
		return vr_proto_encode_stats(m->id, &m->stats);
	case VR_PROTO_GET_REGIONS:
		return vr_proto_encode_regions(m->id, &m->regions);
	case VR_PROTO_GET_COLD_HIST:
		return vr_proto_encode_cold_hist(m->id, &m->cold_hist);
	case VR_PROTO_RECLAIM:
		return vr_proto_encode_reclaim_result(m->id, &m->reclaim);
	case VR_PROTO_SET_POLICY:
	case VR_PROTO_PAUSE:
	case VR_PROTO_RESUME:
		break;
	}
	return vr_proto_encode_empty(m->id);
}

static void check_message(const char *line, gsize len)
{
	g_auto(vr_proto_message) msg = { 0 };
	g_auto(vr_proto_message) again = { 0 };
	g_autoptr(GError) error = NULL;
	g_autofree char *encoded = NULL;
	g_autofree char *reencoded = NULL;

	if (!vr_proto_decode_message(line, len, lookup, NULL, &msg, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_PROTO_ERROR,
			      "a refusal outside VR_PROTO_ERROR: %s",
			      error ? error->message : "(none)");
		return;
	}
	if (msg.kind == VR_PROTO_MESSAGE_REPLY && msg.command == VR_PROTO_GET_REGIONS &&
	    msg.regions.regions)
		VR_FUZZ_CHECK(msg.regions.regions->len <= VR_PROTO_MAX_REGIONS, "%u regions",
			      msg.regions.regions->len);
	encoded = encode(&msg);
	VR_FUZZ_CHECK(strlen(encoded) <= VR_PROTO_MAX_LINE, "an encoded line of %zu bytes",
		      strlen(encoded));
	VR_FUZZ_CHECK(vr_proto_decode_message(encoded, strlen(encoded), lookup, NULL, &again,
					      &error),
		      "the encoded message does not decode: %s: %s", error->message, encoded);
	VR_FUZZ_CHECK(again.kind == msg.kind && again.id == msg.id,
		      "what the host accepted the agent encodes otherwise:\n%.*s\n%s", (int)len,
		      line, encoded);
	reencoded = encode(&again);
	VR_FUZZ_CHECK(!strcmp(reencoded, encoded), "the round trip changed the message:\n%s%s",
		      encoded, reencoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	vr_fuzz_proto_lines(data, size, check_message);
	return 0;
}
