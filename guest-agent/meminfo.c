// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * /proc/meminfo: see meminfo.h.
 */
#include "meminfo.h"

#include <stddef.h>
#include <string.h>

#include "kernel-file.h"

/* /proc/meminfo is about 1.5 KiB; leave room for kernels with more fields. */
#define VR_MEMINFO_MAX_BYTES (64 * 1024)

/* The fields we need and where they go in struct vr_meminfo. */
struct field {
	const char *name;
	size_t offset;
};

static const struct field fields[] = {
	{ "MemTotal", offsetof(struct vr_meminfo, mem_total_bytes) },
	{ "MemFree", offsetof(struct vr_meminfo, mem_free_bytes) },
	{ "MemAvailable", offsetof(struct vr_meminfo, mem_available_bytes) },
	{ "SwapTotal", offsetof(struct vr_meminfo, swap_total_bytes) },
	{ "SwapFree", offsetof(struct vr_meminfo, swap_free_bytes) },
};

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

static gboolean parse_line(const char *line, struct vr_meminfo *out, guint *seen, GError **error)
{
	const char *colon = strchr(line, ':');

	if (!colon)
		return TRUE; /* not a field we read (an empty last line) */
	for (guint i = 0; i < G_N_ELEMENTS(fields); i++) {
		const struct field *f = &fields[i];
		uint64_t bytes;

		if ((size_t)(colon - line) != strlen(f->name) ||
		    strncmp(line, f->name, strlen(f->name)) != 0)
			continue;
		if (*seen & (1u << i)) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "%s appears twice", f->name);
			return FALSE;
		}
		if (!parse_kb(colon + 1, &bytes)) {
			g_autofree char *held = g_strstrip(g_strdup(colon + 1));

			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "%s holds '%s', not a number of kB", f->name, held);
			return FALSE;
		}
		*seen |= 1u << i;
		memcpy((char *)out + f->offset, &bytes, sizeof(bytes));
		return TRUE;
	}
	return TRUE;
}

gboolean vr_meminfo_parse(const char *text, struct vr_meminfo *out, GError **error)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	struct vr_meminfo m = { 0 };
	guint seen = 0;

	for (char **l = lines; *l; l++)
		if (!parse_line(*l, &m, &seen, error))
			return FALSE;
	for (guint i = 0; i < G_N_ELEMENTS(fields); i++) {
		if (!(seen & (1u << i))) {
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "no %s field",
				    fields[i].name);
			return FALSE;
		}
	}
	if (m.mem_total_bytes == 0) {
		g_set_error_literal(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "MemTotal is 0 kB");
		return FALSE;
	}
	if (m.mem_free_bytes > m.mem_total_bytes) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "MemFree (%" G_GUINT64_FORMAT
			    " kB) exceeds MemTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.mem_free_bytes / 1024),
			    (guint64)(m.mem_total_bytes / 1024));
		return FALSE;
	}
	if (m.swap_free_bytes > m.swap_total_bytes) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "SwapFree (%" G_GUINT64_FORMAT
			    " kB) exceeds SwapTotal (%" G_GUINT64_FORMAT " kB)",
			    (guint64)(m.swap_free_bytes / 1024),
			    (guint64)(m.swap_total_bytes / 1024));
		return FALSE;
	}
	*out = m;
	return TRUE;
}

gboolean vr_meminfo_read(const struct vr_agent_paths *paths, struct vr_meminfo *out, GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "meminfo", NULL);
	g_autofree char *text = vr_kfile_read(path, VR_MEMINFO_MAX_BYTES, error);

	if (!text)
		return FALSE;
	if (!vr_meminfo_parse(text, out, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

uint64_t vr_meminfo_free_mem_rate(const struct vr_meminfo *m)
{
	if (!m->mem_total_bytes)
		return 0;
	return (uint64_t)((unsigned __int128)m->mem_free_bytes * 1000 / m->mem_total_bytes);
}
