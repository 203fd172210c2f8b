// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Escaping text from outside for terminals and logs: see text-escape.h.
 */
#include "text-escape.h"

#include <string.h>

/* Is the character @c, valid UTF-8, one to write out? */
static gboolean char_is_unsafe(gunichar c)
{
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f))
		return TRUE;
	switch (g_unichar_type(c)) {
	case G_UNICODE_FORMAT:
	case G_UNICODE_LINE_SEPARATOR:
	case G_UNICODE_PARAGRAPH_SEPARATOR:
		return TRUE;
	default:
		return FALSE;
	}
}

/* The next character of @p (@end bounds it): its value, or (gunichar)-1 for
 * a byte that does not start valid UTF-8; *@size its length in bytes. */
static gunichar next_char(const char *p, const char *end, gsize *size)
{
	gunichar c;

	if ((guchar)*p < 0x80) {
		*size = 1;
		return (guchar)*p;
	}
	c = g_utf8_get_char_validated(p, end - p);
	if (c == (gunichar)-1 || c == (gunichar)-2) {
		*size = 1;
		return (gunichar)-1;
	}
	*size = (gsize)(g_utf8_next_char(p) - p);
	return c;
}

gboolean vr_text_is_safe(const char *text, gssize len)
{
	const char *end = text + (len < 0 ? strlen(text) : (gsize)len);

	for (const char *p = text; p < end;) {
		gsize size;
		gunichar c = next_char(p, end, &size);

		if (c == (gunichar)-1 || char_is_unsafe(c))
			return FALSE;
		p += size;
	}
	return TRUE;
}

char *vr_text_escape(const char *text, gssize len)
{
	gsize n = len < 0 ? strlen(text) : (gsize)len;
	const char *end = text + n;
	GString *out = g_string_sized_new(n + 1);

	for (const char *p = text; p < end;) {
		gsize size;
		gunichar c = next_char(p, end, &size);

		if (c == (gunichar)-1)
			g_string_append_printf(out, "\\x%02x", (guchar)*p);
		else if (c == '\n')
			g_string_append(out, "\\n");
		else if (c == '\r')
			g_string_append(out, "\\r");
		else if (c == '\t')
			g_string_append(out, "\\t");
		else if (c < 0x20 || c == 0x7f)
			g_string_append_printf(out, "\\x%02x", c);
		else if (char_is_unsafe(c))
			g_string_append_printf(out, "\\u{%04X}", c);
		else
			g_string_append_len(out, p, (gssize)size);
		p += size;
	}
	return g_string_free(out, FALSE);
}

GLogWriterOutput vr_log_writer_escape(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
				      gpointer user_data)
{
	const struct vr_log_escape *to = user_data;
	g_autofree GLogField *copy = NULL;
	g_autofree char *escaped = NULL;

	for (gsize i = 0; i < n_fields; i++) {
		const GLogField *f = &fields[i];

		if (strcmp(f->key, "MESSAGE") || !f->value || vr_text_is_safe(f->value, f->length))
			continue;
		escaped = vr_text_escape(f->value, f->length);
		copy = g_memdup2(fields, n_fields * sizeof(*fields));
		copy[i].value = escaped;
		copy[i].length = -1;
		break;
	}
	return to->next(level, copy ? copy : fields, n_fields, to->next_data);
}
