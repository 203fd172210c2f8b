// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory pressure stall information: see psi.h.
 */
#include "psi.h"

#include <string.h>

#include "kernel-file.h"

/* A PSI file is two lines of about 60 bytes. */
#define VR_PSI_MAX_BYTES 4096

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

static gboolean parse_line(const char *line, const char *kind, struct vr_psi_line *out,
			   GError **error)
{
	static const char *const avg_names[] = { "avg10", "avg60", "avg300" };
	g_auto(GStrv) tokens = g_strsplit(line, " ", -1);
	uint32_t *avgs[] = { &out->avg10_bp, &out->avg60_bp, &out->avg300_bp };
	guint64 total;
	const char *v;

	if (g_strv_length(tokens) != 5 || strcmp(tokens[0], kind) != 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "expected a '%s avg10=.. avg60=.. avg300=.. total=..' line, got '%s'",
			    kind, line);
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(avg_names); i++) {
		v = field_value(tokens[1 + i], avg_names[i]);
		if (!v || !parse_percent_bp(v, avgs[i])) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "'%s' line: expected %s=<percent>, got '%s'", kind,
				    avg_names[i], tokens[1 + i]);
			return FALSE;
		}
	}
	v = field_value(tokens[4], "total");
	if (!v || !g_ascii_isdigit(*v) ||
	    !g_ascii_string_to_unsigned(v, 10, 0, G_MAXUINT64, &total, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
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
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "expected a 'some' and a 'full' line, got %u lines", nr);
		return FALSE;
	}
	if (!parse_line(lines[0], "some", &m.some, error) ||
	    !parse_line(lines[1], "full", &m.full, error))
		return FALSE;
	*out = m;
	return TRUE;
}

gboolean vr_psi_read_memory(const struct vr_agent_paths *paths, struct vr_psi_memory *out,
			    GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "pressure", "memory", NULL);
	g_autofree char *text = NULL;

	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no memory pressure information: %s does not exist (a kernel without "
			    "CONFIG_PSI, or booted with psi=0)",
			    path);
		return FALSE;
	}
	text = vr_kfile_read(path, VR_PSI_MAX_BYTES, error);
	if (!text)
		return FALSE;
	if (!vr_psi_parse(text, out, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}
