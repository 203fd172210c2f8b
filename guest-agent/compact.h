/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compaction after reclaim. Free page reporting hands the host only free
 * blocks of the reporting order (2 MiB with the 6.12 guest kernel): 4 KiB
 * pages freed by reclaim here and there stay in the guest until compaction
 * moves the live pages around them and the free ones form whole blocks.
 * Writing "1" to /proc/sys/vm/compact_memory compacts every zone once.
 *
 * The decision is pure (vr_compact_should()); the act is vr_compact_memory();
 * the caller notes each attempt with vr_compact_done():
 *
 *   if (vr_compact_should(&state, now_us, reclaimed)) {
 *           vr_compact_memory(paths, &error);
 *           vr_compact_done(&state, now_us, reclaimed);
 *   }
 *
 * The agent's "reclaimed" is the kernel's own count, vr_vmstat_reclaimed_bytes()
 * (vmstat), not the backend's stats: refreshing DAMON's scheme stats blocks
 * until the kdamond answers, up to a watermark interval (5 s) while the
 * scheme rests, and the agent looks every second.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/*
 * Bytes reclaimed since the last compaction before another one is worth it:
 * 16 MiB, eight blocks of the 2 MiB reporting order. A compaction scans all
 * of the guest's memory, so its cost grows with the guest, not with what was
 * freed; below a few reporting blocks the host gets back less than the
 * guest spends.
 */
#define VR_COMPACT_MIN_BYTES (16ULL << 20)

/*
 * Least time between two compactions, us: 5 s. Free page reporting waits
 * 2 s after free blocks pile up before it reports them; compacting more
 * often than the host can be told about the result only burns guest CPU.
 */
#define VR_COMPACT_MIN_INTERVAL_US (5ULL * G_USEC_PER_SEC)

/**
 * struct vr_compact_state - what the decision remembers (zero-initialised:
 * never compacted).
 * @tried:		a compaction was attempted at least once.
 * @last_us:		when the last one was attempted (monotonic us).
 * @sz_applied_at_last:	the backend's cumulative reclaimed bytes
 *			(struct vr_backend_stats.sz_applied) at that time.
 */
struct vr_compact_state {
	bool tried;
	uint64_t last_us;
	uint64_t sz_applied_at_last;
};

/**
 * vr_compact_should() - compact now? TRUE when at least
 * VR_COMPACT_MIN_BYTES were reclaimed since the last attempt (@sz_applied,
 * the backend's cumulative reclaimed bytes, minus what it was then; a
 * counter that went back, e.g. a reopened backend, counts from 0) and, after
 * a first attempt, at least VR_COMPACT_MIN_INTERVAL_US passed since it.
 * Pure.
 */
bool vr_compact_should(const struct vr_compact_state *state, uint64_t now_us, uint64_t sz_applied);

/**
 * vr_compact_done() - note an attempt at @now_us with the backend's
 * cumulative reclaimed bytes @sz_applied, whether it succeeded or not (a
 * failing compaction is not retried at every tick).
 */
void vr_compact_done(struct vr_compact_state *state, uint64_t now_us, uint64_t sz_applied);

/**
 * vr_compact_memory() - compact all zones: write "1" to
 * @paths->procfs/sys/vm/compact_memory. Blocks while the kernel compacts.
 * Errors name the file (a kernel without CONFIG_COMPACTION has none).
 */
gboolean vr_compact_memory(const struct vr_agent_paths *paths, GError **error);

/*
 * Most bytes of swap cache released in one go, through the root cgroup's
 * memory.reclaim: 256 MiB, a few hundred ms of a TCG vCPU at most.
 */
#define VR_COMPACT_SWAP_CACHE_MAX_BYTES (256ULL << 20)

/**
 * vr_compact_parse_swap_cached() - the SwapCached bytes of /proc/meminfo's
 * text @meminfo. Pure. Return: FALSE with @error when the line is missing or
 * malformed.
 */
gboolean vr_compact_parse_swap_cached(const char *meminfo, uint64_t *bytes, GError **error);

/**
 * vr_compact_swap_cache_ask() - how much the swap-cache release asks
 * memory.reclaim for: the SwapCached bytes (@swap_cached), at most what the
 * guest wrote to swap since the last release (@swapped_out: the pageout the
 * policy chose left them there, and no more is released than it wrote) and
 * at most VR_COMPACT_SWAP_CACHE_MAX_BYTES; 0 below VR_COMPACT_MIN_BYTES.
 * Pure.
 */
uint64_t vr_compact_swap_cache_ask(uint64_t swap_cached, uint64_t swapped_out);

/**
 * vr_compact_release_swap_cache() - free what pageout left in the swap
 * cache: the second half of the pageouts the policy chose, not a reclaim
 * of its own. DAMON's pageout (reclaim_pages()) writes cold anonymous pages
 * to swap, but a page still under writeback when that pass ends stays in the
 * swap cache, resident, until some later reclaim frees it; in a guest with
 * plenty of free memory nothing else reclaims, so the host never gets it
 * (measured in TCG guests: 70% of what DAMON wrote out stayed there). The
 * kernel puts such pages at the tail of the inactive list when their
 * writeback ends, so asking the root cgroup's memory.reclaim for
 * vr_compact_swap_cache_ask() bytes frees them first. The pages were charged
 * to the scheme's quota when its pageout tried them (DAMOS charges the
 * regions it tries), so this step charges nothing more.
 * @swapped_out: bytes the guest wrote to swap since the last release.
 * @released:	what the write actually reclaimed, measured: the growth of
 *		vmstat pgsteal_anon + pgsteal_file across it (0 when nothing was
 *		asked). The agent reports it per mechanism.
 * Return: FALSE with @error when meminfo or vmstat cannot be read or
 * memory.reclaim refuses the write for another reason than reclaiming less
 * than asked (EAGAIN).
 */
gboolean vr_compact_release_swap_cache(const struct vr_agent_paths *paths, uint64_t swapped_out,
				       uint64_t *released, GError **error);

/**
 * struct vr_vmstat_reclaim - reclaim counters of /proc/vmstat, in bytes
 * (pages times 4096) since boot.
 * @pswpout_bytes:	written to swap.
 * @pgsteal_anon_bytes:	anonymous pages reclaimed (freed), swap cache included.
 * @pgsteal_file_bytes:	page-cache pages reclaimed.
 * @refault_bytes:	reclaimed pages read back (workingset_refault_anon +
 *			workingset_refault_file).
 */
struct vr_vmstat_reclaim {
	uint64_t pswpout_bytes;
	uint64_t pgsteal_anon_bytes;
	uint64_t pgsteal_file_bytes;
	uint64_t refault_bytes;
};

/**
 * vr_vmstat_reclaim_parse() - the counters of the /proc/vmstat text @vmstat.
 * Missing counters count 0; a counter that is not a number is an error. Pure.
 */
gboolean vr_vmstat_reclaim_parse(const char *vmstat, struct vr_vmstat_reclaim *out, GError **error);

/** vr_vmstat_reclaim_read() - vr_vmstat_reclaim_parse() of @paths->procfs/vmstat. */
gboolean vr_vmstat_reclaim_read(const struct vr_agent_paths *paths, struct vr_vmstat_reclaim *out,
				GError **error);

/**
 * vr_vmstat_reclaimed_bytes() - the bytes reclaim has taken out of memory
 * since boot: pages swapped out (pswpout) plus page-cache pages reclaimed
 * (pgsteal_file).
 */
uint64_t vr_vmstat_reclaimed_bytes(const struct vr_vmstat_reclaim *v);

/** vr_vmstat_stolen_bytes() - pgsteal_anon + pgsteal_file: pages reclaim freed. */
uint64_t vr_vmstat_stolen_bytes(const struct vr_vmstat_reclaim *v);
