// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compaction after reclaim: see compact.h.
 */
#include "compact.h"

#include "kernel-file.h"

bool vr_compact_should(const struct vr_compact_state *state, uint64_t now_us, uint64_t sz_applied)
{
	uint64_t since_bytes = sz_applied >= state->sz_applied_at_last ?
				       sz_applied - state->sz_applied_at_last :
				       sz_applied;

	if (since_bytes < VR_COMPACT_MIN_BYTES)
		return false;
	if (!state->tried)
		return true;
	return now_us >= state->last_us && now_us - state->last_us >= VR_COMPACT_MIN_INTERVAL_US;
}

void vr_compact_done(struct vr_compact_state *state, uint64_t now_us, uint64_t sz_applied)
{
	state->tried = true;
	state->last_us = now_us;
	state->sz_applied_at_last = sz_applied;
}

gboolean vr_compact_memory(const struct vr_agent_paths *paths, GError **error)
{
	g_autofree char *path =
		g_build_filename(paths->procfs, "sys", "vm", "compact_memory", NULL);

	if (!vr_kfile_write(path, "1", error)) {
		g_prefix_error(error, "compacting memory: ");
		return FALSE;
	}
	return TRUE;
}
