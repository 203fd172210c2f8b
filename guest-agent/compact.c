// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compaction after reclaim: see compact.h.
 */
#include "compact.h"
#include "procfs-text.h"

#include <errno.h>

#include <string.h>

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

gboolean vr_compact_parse_swap_cached(const char *meminfo, uint64_t *bytes, GError **error)
{
	static const struct vr_kb_field field = { "SwapCached", 0 };

	return vr_kb_fields_parse(meminfo, &field, 1, bytes, error);
}

uint64_t vr_compact_swap_cache_ask(uint64_t swap_cached, uint64_t swapped_out)
{
	uint64_t ask = MIN(MIN(swap_cached, swapped_out), VR_COMPACT_SWAP_CACHE_MAX_BYTES);

	return ask < VR_COMPACT_MIN_BYTES ? 0 : ask;
}

gboolean vr_compact_release_swap_cache(const struct vr_agent_paths *paths, uint64_t swapped_out,
				       uint64_t *released, GError **error)
{
	g_autofree char *meminfo_path = g_build_filename(paths->procfs, "meminfo", NULL);
	g_autofree char *reclaim_path = g_build_filename(paths->cgroup, "memory.reclaim", NULL);
	g_autofree char *meminfo = NULL;
	g_autofree char *value = NULL;
	struct vr_vmstat_reclaim before, after;
	uint64_t cached = 0, ask;
	int err = 0;

	*released = 0;
	meminfo = vr_kfile_read(meminfo_path, 64 * 1024, error);
	if (!meminfo || !vr_compact_parse_swap_cached(meminfo, &cached, error)) {
		g_prefix_error(error, "releasing the swap cache: ");
		return FALSE;
	}
	ask = vr_compact_swap_cache_ask(cached, swapped_out);
	if (!ask)
		return TRUE;
	if (!vr_vmstat_reclaim_read(paths, &before, error)) {
		g_prefix_error(error, "releasing the swap cache: ");
		return FALSE;
	}
	value = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)ask);
	if (!vr_kfile_write_errno(reclaim_path, value, &err, error)) {
		if (err != EAGAIN) {
			g_prefix_error(error, "releasing the swap cache: ");
			return FALSE;
		}
		/* Less than asked was reclaimable: that is fine. */
		g_clear_error(error);
	}
	if (!vr_vmstat_reclaim_read(paths, &after, error)) {
		g_prefix_error(error, "releasing the swap cache: ");
		return FALSE;
	}
	*released = vr_vmstat_stolen_bytes(&after) -
		    MIN(vr_vmstat_stolen_bytes(&after), vr_vmstat_stolen_bytes(&before));
	return TRUE;
}

gboolean vr_vmstat_reclaim_parse(const char *vmstat, struct vr_vmstat_reclaim *out, GError **error)
{
	static const char *const counters[] = { "pswpout", "pgsteal_anon", "pgsteal_file",
						"workingset_refault_anon",
						"workingset_refault_file" };
	uint64_t pages[G_N_ELEMENTS(counters)] = { 0 };
	g_auto(GStrv) lines = g_strsplit(vmstat, "\n", -1);
	for (guint i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit(lines[i], " ", 2);
		if (!f[0] || !f[1])
			continue;
		for (guint c = 0; c < G_N_ELEMENTS(counters); c++) {
			if (strcmp(f[0], counters[c]) != 0)
				continue;
			guint64 v;
			if (!g_ascii_string_to_unsigned(g_strstrip(f[1]), 10, 0,
							G_MAXUINT64 / 4096 / 4, &v, NULL)) {
				g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
					    "vmstat: %s is '%s', not a page count", f[0], f[1]);
				return FALSE;
			}
			pages[c] = v;
		}
	}
	*out = (struct vr_vmstat_reclaim){
		.pswpout_bytes = pages[0] * 4096,
		.pgsteal_anon_bytes = pages[1] * 4096,
		.pgsteal_file_bytes = pages[2] * 4096,
		.refault_bytes = (pages[3] + pages[4]) * 4096,
	};
	return TRUE;
}

gboolean vr_vmstat_reclaim_read(const struct vr_agent_paths *paths, struct vr_vmstat_reclaim *out,
				GError **error)
{
	g_autofree char *path = g_build_filename(paths->procfs, "vmstat", NULL);
	g_autofree char *text = vr_kfile_read(path, 64 * 1024, error);
	if (!text)
		return FALSE;
	if (!vr_vmstat_reclaim_parse(text, out, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

uint64_t vr_vmstat_reclaimed_bytes(const struct vr_vmstat_reclaim *v)
{
	return v->pswpout_bytes + v->pgsteal_file_bytes;
}

uint64_t vr_vmstat_stolen_bytes(const struct vr_vmstat_reclaim *v)
{
	return v->pgsteal_anon_bytes + v->pgsteal_file_bytes;
}
