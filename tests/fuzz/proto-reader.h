/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two protocol targets cut their input into lines as the agent and the
 * host cut their channel's bytes: through struct vr_proto_reader, fed in
 * reads of at most VR_FUZZ_READ_BYTES.
 */
#pragma once

#include "fuzz.h"
#include "protocol.h"

/* One read(2) of the channel, bytes: what the daemons read at once. */
#define VR_FUZZ_READ_BYTES 4096

/*
 * vr_fuzz_proto_lines() - feed @data to a reader and call @fn on each line
 * (NUL-terminated, @len bytes; it may hold NULs) as soon as it is complete.
 * Checks the reader's promises: no line over VR_PROTO_MAX_LINE - 1 bytes, an
 * error only for a line too long, and at most VR_PROTO_MAX_LINE - 1 bytes of
 * an unfinished line held once every line was taken.
 */
static inline void vr_fuzz_proto_lines(const uint8_t *data, size_t size,
				       void (*fn)(const char *line, gsize len))
{
	g_autoptr(vr_proto_reader) r = vr_proto_reader_new();

	for (size_t off = 0; off < size; off += VR_FUZZ_READ_BYTES) {
		size_t n = MIN(size - off, (size_t)VR_FUZZ_READ_BYTES);

		vr_proto_reader_feed(r, data + off, n);
		for (;;) {
			g_autoptr(GError) error = NULL;
			g_autofree char *line = NULL;
			gsize len = 0;

			if (!vr_proto_reader_next(r, &line, &len, &error)) {
				VR_FUZZ_CHECK(g_error_matches(error, VR_PROTO_ERROR,
							      VR_PROTO_ERROR_TOO_LONG),
					      "the reader failed otherwise: %s", error->message);
				continue;
			}
			if (!line)
				break;
			VR_FUZZ_CHECK(len < VR_PROTO_MAX_LINE, "a line of %zu bytes", len);
			fn(line, len);
		}
		VR_FUZZ_CHECK(vr_proto_reader_buffered(r) < VR_PROTO_MAX_LINE,
			      "%zu bytes held after every line was taken",
			      vr_proto_reader_buffered(r));
	}
}
