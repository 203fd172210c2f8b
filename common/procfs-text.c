/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of procfs texts ("Name: N kB" lists, /proc/meminfo, memory PSI):
 * see procfs-text.h.
 */
#include "procfs-text.h"

#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-procfs-text-error-quark, vr_procfs_text_error)
/* clang-format on */

/* "<spaces><digits> kB" -> bytes; FALSE when malformed or too large. */
static gboolean parse_kb(const char *value, uint64_t *bytes)
{
	const char *p = value;
	guint64 kb = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!g_ascii_isdigit(*p))
		return FALSE;
	for (; g_ascii_isdigit(*p); p++) {
		guint d = (guint)(*p - '0');

		if (kb > (G_MAXUINT64 - d) / 10)
			return FALSE;
		kb = kb * 10 + d;
	}
	if (strcmp(p, " kB") != 0)
		return FALSE;
	if (kb > G_MAXUINT64 / 1024)
		return FALSE;
	*bytes = kb * 1024;
	return TRUE;
}

/* One line: when it is one of @fields, store its value in @values. */
static gboolean parse_kb_line(const char *line, const struct vr_kb_field *fields, guint nr_fields,
			      uint64_t *values, guint32 *seen, GError **error)
{
	const char *colon = strchr(line, ':');

	if (!colon)
		return TRUE; /* not a field we read (an empty last line) */
	for (guint i = 0; i < nr_fields; i++) {
		size_t len = strlen(fields[i].name);

		if ((size_t)(colon - line) != len || strncmp(line, fields[i].name, len) != 0)
			continue;
		if (*seen & (1u << i)) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "%s appears twice", fields[i].name);
			return FALSE;
		}
		if (!parse_kb(colon + 1, &values[i])) {
			g_autofree char *held = g_strstrip(g_strdup(colon + 1));

			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "%s holds '%s', not a number of kB", fields[i].name, held);
			return FALSE;
		}
		*seen |= 1u << i;
		return TRUE;
	}
	return TRUE;
}

gboolean vr_kb_fields_parse(const char *text, const struct vr_kb_field *fields, guint nr_fields,
			    void *out, GError **error)
{
	g_auto(GStrv) lines = NULL;
	uint64_t values[VR_KB_FIELDS_MAX] = { 0 };
	guint32 seen = 0;

	g_return_val_if_fail(nr_fields <= VR_KB_FIELDS_MAX, FALSE);
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++)
		if (!parse_kb_line(*l, fields, nr_fields, values, &seen, error))
			return FALSE;
	for (guint i = 0; i < nr_fields; i++) {
		if (!(seen & (1u << i))) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "no %s field", fields[i].name);
			return FALSE;
		}
	}
	for (guint i = 0; i < nr_fields; i++)
		memcpy((char *)out + fields[i].offset, &values[i], sizeof(values[i]));
	return TRUE;
}

/* ---- /proc/meminfo ---- */

static const struct vr_kb_field meminfo_fields[] = {
	{ "MemTotal", offsetof(struct vr_meminfo, mem_total_bytes) },
	{ "MemFree", offsetof(struct vr_meminfo, mem_free_bytes) },
	{ "MemAvailable", offsetof(struct vr_meminfo, mem_available_bytes) },
	{ "SwapTotal", offsetof(struct vr_meminfo, swap_total_bytes) },
	{ "SwapFree", offsetof(struct vr_meminfo, swap_free_bytes) },
};

gboolean vr_meminfo_parse(const char *text, struct vr_meminfo *out, GError **error)
{
	struct vr_meminfo m = { 0 };

	if (!vr_kb_fields_parse(text, meminfo_fields, G_N_ELEMENTS(meminfo_fields), &m, error))
		return FALSE;
	if (m.mem_total_bytes == 0) {
		g_set_error_literal(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "MemTotal is 0 kB");
		return FALSE;
	}
	if (m.mem_free_bytes > m.mem_total_bytes) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "MemFree (%" G_GUINT64_FORMAT
			    " kB) exceeds MemTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.mem_free_bytes / 1024),
			    (guint64)(m.mem_total_bytes / 1024));
		return FALSE;
	}
	if (m.swap_free_bytes > m.swap_total_bytes) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "SwapFree (%" G_GUINT64_FORMAT
			    " kB) exceeds SwapTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.swap_free_bytes / 1024),
			    (guint64)(m.swap_total_bytes / 1024));
		return FALSE;
	}
	*out = m;
	return TRUE;
}

uint64_t vr_meminfo_free_mem_rate(const struct vr_meminfo *m)
{
	if (!m->mem_total_bytes)
		return 0;
	return (uint64_t)((unsigned __int128)m->mem_free_bytes * 1000 / m->mem_total_bytes);
}

/* ---- /proc/pressure/memory ---- */

/* "12.34" (at most two decimals, at most 100) -> 1234 basis points. */
static gboolean parse_percent_bp(const char *s, uint32_t *bp)
{
	guint64 whole;
	uint32_t frac = 0;
	const char *dot = strchr(s, '.');
	g_autofree char *int_part = dot ? g_strndup(s, (gsize)(dot - s)) : g_strdup(s);

	if (!*int_part || !g_ascii_isdigit(int_part[0]) ||
	    !g_ascii_string_to_unsigned(int_part, 10, 0, 100, &whole, NULL))
		return FALSE;
	if (dot) {
		size_t n = strlen(dot + 1);

		if (n < 1 || n > 2)
			return FALSE;
		for (size_t i = 0; i < n; i++) {
			if (!g_ascii_isdigit(dot[1 + i]))
				return FALSE;
			frac = frac * 10 + (uint32_t)(dot[1 + i] - '0');
		}
		if (n == 1)
			frac *= 10;
	}
	if (whole * 100 + frac > 10000)
		return FALSE;
	*bp = (uint32_t)(whole * 100 + frac);
	return TRUE;
}

/* "name=value" with the expected @name; returns the value or NULL. */
static const char *field_value(const char *token, const char *name)
{
	size_t len = strlen(name);

	if (strncmp(token, name, len) != 0 || token[len] != '=')
		return NULL;
	return token + len + 1;
}

static gboolean parse_psi_line(const char *line, const char *kind, struct vr_psi_line *out,
			       GError **error)
{
	static const char *const avg_names[] = { "avg10", "avg60", "avg300" };
	g_auto(GStrv) tokens = g_strsplit(line, " ", -1);
	uint32_t *avgs[] = { &out->avg10_bp, &out->avg60_bp, &out->avg300_bp };
	guint64 total;
	const char *v;

	if (g_strv_length(tokens) != 5 || strcmp(tokens[0], kind) != 0) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "expected a '%s avg10=.. avg60=.. avg300=.. total=..' line, got '%s'",
			    kind, line);
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(avg_names); i++) {
		v = field_value(tokens[1 + i], avg_names[i]);
		if (!v || !parse_percent_bp(v, avgs[i])) {
			g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
				    "'%s' line: expected %s=<percent>, got '%s'", kind,
				    avg_names[i], tokens[1 + i]);
			return FALSE;
		}
	}
	v = field_value(tokens[4], "total");
	if (!v || !g_ascii_isdigit(*v) ||
	    !g_ascii_string_to_unsigned(v, 10, 0, G_MAXUINT64, &total, NULL)) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "'%s' line: expected total=<us>, got '%s'", kind, tokens[4]);
		return FALSE;
	}
	out->total_us = total;
	return TRUE;
}

gboolean vr_psi_parse(const char *text, struct vr_psi_memory *out, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	guint nr = g_strv_length(lines);
	struct vr_psi_memory m = { 0 };

	/* a trailing newline leaves one empty string at the end */
	if (nr && !*lines[nr - 1])
		nr--;
	if (nr != 2) {
		g_set_error(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID,
			    "expected a 'some' and a 'full' line, got %u lines", nr);
		return FALSE;
	}
	if (!parse_psi_line(lines[0], "some", &m.some, error) ||
	    !parse_psi_line(lines[1], "full", &m.full, error))
		return FALSE;
	*out = m;
	return TRUE;
}
