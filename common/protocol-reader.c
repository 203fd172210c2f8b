/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire protocol's line reader (struct vr_proto_reader, protocol.h): the
 * byte stream a daemon reads from its channel, cut into lines of at most
 * VR_PROTO_MAX_LINE bytes; a longer line is dropped up to its newline and
 * reported as too long. Knows nothing of JSON.
 */
#include "protocol.h"

#include <string.h>

/* ---- the line reader ---- */

/**
 * struct reader_line - a line waiting in a struct vr_proto_reader.
 * @line:	the line, NUL-terminated; NULL for a line that was too long.
 * @len:	its length in bytes.
 */
struct reader_line {
	char *line;
	gsize len;
};

/**
 * struct vr_proto_reader - see protocol.h.
 * @partial:	the unfinished line: at most VR_PROTO_MAX_LINE - 1 bytes.
 * @discarding:	the unfinished line is too long: drop bytes up to its newline.
 * @lines:	struct reader_line *, complete lines not taken yet, in order.
 * @queued_bytes: the bytes of @lines.
 */
struct vr_proto_reader {
	GByteArray *partial;
	gboolean discarding;
	GQueue lines;
	gsize queued_bytes;
};

static void reader_line_free(gpointer p)
{
	struct reader_line *l = p;

	g_free(l->line);
	g_free(l);
}

struct vr_proto_reader *vr_proto_reader_new(void)
{
	struct vr_proto_reader *r = g_new0(struct vr_proto_reader, 1);

	r->partial = g_byte_array_new();
	g_queue_init(&r->lines);
	return r;
}

void vr_proto_reader_free(struct vr_proto_reader *r)
{
	if (!r)
		return;
	g_byte_array_unref(r->partial);
	g_queue_clear_full(&r->lines, reader_line_free);
	g_free(r);
}

static void reader_queue(struct vr_proto_reader *r, char *line, gsize len)
{
	struct reader_line *l = g_new(struct reader_line, 1);

	l->line = line;
	l->len = len;
	r->queued_bytes += len;
	g_queue_push_tail(&r->lines, l);
}

/* The unfinished line got its newline: queue it unless it is blank. */
static void reader_finish_line(struct vr_proto_reader *r)
{
	const guint8 *data = r->partial->data;
	gsize n = r->partial->len;
	gboolean blank = TRUE;
	char *line;

	if (n > 0 && data[n - 1] == '\r')
		n--;
	for (gsize i = 0; i < n && blank; i++)
		blank = data[i] == ' ' || data[i] == '\t' || data[i] == '\r';
	if (!blank) {
		line = g_malloc(n + 1);
		memcpy(line, data, n);
		line[n] = '\0';
		reader_queue(r, line, n);
	}
	g_byte_array_set_size(r->partial, 0);
}

void vr_proto_reader_feed(struct vr_proto_reader *r, const void *data, gsize len)
{
	const guint8 *p = data;

	while (len > 0) {
		const guint8 *nl = memchr(p, '\n', len);
		gsize n = nl ? (gsize)(nl - p) : len;

		if (!r->discarding && r->partial->len + n > VR_PROTO_MAX_LINE - 1) {
			/* The line cannot fit with its newline: say so once, drop it. */
			g_byte_array_set_size(r->partial, 0);
			r->discarding = TRUE;
			reader_queue(r, NULL, 0);
		}
		if (!r->discarding)
			g_byte_array_append(r->partial, p, (guint)n);
		if (!nl)
			break;
		if (r->discarding)
			r->discarding = FALSE;
		else
			reader_finish_line(r);
		p = nl + 1;
		len -= n + 1;
	}
}

gboolean vr_proto_reader_next(struct vr_proto_reader *r, char **line, gsize *len, GError **error)
{
	struct reader_line *l = g_queue_pop_head(&r->lines);

	*line = NULL;
	*len = 0;
	if (!l)
		return TRUE;
	if (!l->line) {
		g_free(l);
		g_set_error(error, VR_PROTO_ERROR, VR_PROTO_ERROR_TOO_LONG,
			    "a line is longer than %d bytes with its newline; it was skipped",
			    VR_PROTO_MAX_LINE);
		return FALSE;
	}
	r->queued_bytes -= l->len;
	*line = l->line;
	*len = l->len;
	g_free(l);
	return TRUE;
}

gsize vr_proto_reader_buffered(const struct vr_proto_reader *r)
{
	return r->partial->len + r->queued_bytes;
}
