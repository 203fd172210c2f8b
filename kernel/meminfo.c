/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's reader of /proc/meminfo: see meminfo.h.
 */
#include "meminfo.h"

#include "kernel-file.h"

/* /proc/meminfo is about 1.5 KiB; leave room for kernels with more fields. */
#define VR_MEMINFO_MAX_BYTES (64 * 1024)

gboolean vr_meminfo_read(const struct vr_agent_paths *paths, struct vr_meminfo *out, GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "meminfo", NULL);
	g_autofree char *text = vr_kfile_read(path, VR_MEMINFO_MAX_BYTES, error);
	g_autoptr(GError) parse_error = NULL;

	if (!text)
		return FALSE;
	if (!vr_meminfo_parse(text, out, &parse_error)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "%s: %s", path,
			    parse_error->message);
		return FALSE;
	}
	return TRUE;
}
