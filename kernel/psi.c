/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's reader of memory pressure stall information: see psi.h.
 */
#include "psi.h"

#include "kernel-file.h"

/* A PSI file is two lines of about 60 bytes. */
#define VR_PSI_MAX_BYTES 4096

gboolean vr_psi_read_memory(const struct vr_agent_paths *paths, struct vr_psi_memory *out,
			    GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "pressure", "memory", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) parse_error = NULL;

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
	if (!vr_psi_parse(text, out, &parse_error)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID, "%s: %s", path,
			    parse_error->message);
		return FALSE;
	}
	return TRUE;
}
