/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memcg backend (vr_backend_memcg, "memcg"): guest-wide proactive
 * reclaim through cgroup v2 memory.reclaim at the cgroup root, for guest
 * kernels without DAMON.
 *
 * What it honours of a policy: the first scheme's quota (sz bytes and ms of
 * reclaim time per reset_interval_ms window, and its goals) and watermarks
 * (free_mem_rate from /proc/meminfo, vr_watermarks_next_state()), with
 * libvrcore's quota arithmetic (quota-budget.h): the time quota becomes
 * bytes through the measured throughput of the memory.reclaim writes, as
 * DAMOS turns it into bytes through its measured action time.
 *
 * What it cannot honour: the access pattern and the filters.
 * memory.reclaim takes whatever the kernel's LRU lists (MGLRU on the 6.12
 * guest) deem coldest, passing over recently referenced pages itself, and
 * goes on into warmer pages as long as it is asked for more; there is no
 * age, access count, address or page kind to select by. The pattern and
 * the filters are ignored, every
 * scheme must have the action pageout (any other action fails
 * apply_policy() with VR_AGENT_ERROR_INVALID naming the scheme), and only
 * the first scheme sizes the reclaim (later ones are accepted and ignored,
 * with a message). A policy without schemes reclaims nothing.
 *
 * Each window, reclaim goes in chunks (vr_memcg_chunk_bytes(), sized from
 * the throughput of the writes so far), one memory.reclaim write per tick,
 * each timed with CLOCK_MONOTONIC (the quota's measured action time, and
 * the chunks' throughput) and the thread's CPU clock (reclaimer_cpu_us: the
 * kernel reclaims in the writer's context). A write blocks while the kernel
 * reclaims; between writes the agent's main loop runs. The window stops
 * when
 *   - its budget (vr_quota_budget_left()) is used up,
 *   - memory.reclaim answers EAGAIN (the kernel found less to reclaim than
 *     asked: nothing cold is left), or
 *   - memory PSI "some" stall grew more than the brake
 *     (vr_memcg_psi_brake_us()) since the window began: the workload is
 *     waiting on memory, so reclaim stops until the next window.
 * With a some_mem_psi_us quota goal, each window's stall also feeds the
 * quota tuner (vr_feedback_next()), as in today's DAMON_RECLAIM; a
 * free_mem_rate goal is fed from /proc/meminfo.
 *
 * Explicit requests (reclaim op) run chunks until the bytes, the deadline
 * or EAGAIN, also while paused, outside the windows' quota and without the
 * brake: the host asked for them.
 *
 * Stats: nr_tried/sz_tried count the writes and the bytes they asked for;
 * nr_applied/sz_applied the writes that succeeded and their bytes. A write
 * answered EAGAIN reclaimed an unknown part of what it asked and counts 0
 * bytes applied: sz_applied is a lower bound, off by at most one chunk per
 * window (measuring the part with a MemFree delta would be noisier than the
 * error: other tasks allocate and free meanwhile). qt_exceeds counts
 * windows whose budget was used up (counted when the window closes, as in
 * DAMOS). read_regions appends none: without DAMON there is no access
 * picture.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "backend.h"
#include "scheme.h"

/* Chunk bounds, bytes: at least 2 MiB per write (one block of the reporting
 * order; smaller writes cost a syscall and an LRU walk setup each), at most
 * 8 MiB (so a write at the kernel's fastest returns within a few ms and the
 * PSI brake is looked at often). */
#define VR_MEMCG_CHUNK_MIN_BYTES (2ULL << 20)
#define VR_MEMCG_CHUNK_MAX_BYTES (8ULL << 20)

/* What a chunk aims to take at the measured throughput, ms: short enough
 * that the agent's main loop and the brake are never far away. */
#define VR_MEMCG_CHUNK_TARGET_MS 10

/*
 * The cap of a scheme without any quota, bytes per window: 128 MiB per
 * VR_MEMCG_DEFAULT_WINDOW_MS, today's DAMON_RECLAIM size quota. DAMOS
 * without a quota acts only on regions its pattern selects; memory.reclaim
 * has no pattern and would go on into warm pages until EAGAIN, so an
 * unlimited scheme gets this cap instead.
 */
#define VR_MEMCG_DEFAULT_SZ_BYTES (128ULL << 20)
/* The window of a scheme without any quota, ms. */
#define VR_MEMCG_DEFAULT_WINDOW_MS 1000

/*
 * The PSI brake without a some_mem_psi_us goal: stop a window once memory
 * stall ("some") grew by more than 1% of the window's length (10 ms per
 * 1 s window). The stall is the whole guest's: refaults and swap-ins of
 * pages reclaim took too early show up in it, so this much means reclaim is
 * taking pages the workload still needs.
 */
#define VR_MEMCG_PSI_BRAKE_PER_MILLE 10

/* Delay between two chunks of a window, us: a breath for the main loop and
 * the workload. */
#define VR_MEMCG_CHUNK_GAP_US 1000

/* Tick delay with nothing to do (paused, no scheme), us. */
#define VR_MEMCG_IDLE_TICK_US (1ULL * G_USEC_PER_SEC)

/**
 * vr_memcg_chunk_bytes() - the size of the next memory.reclaim write, bytes:
 * what @throughput_bpms (bytes per ms, measured) reclaims in
 * VR_MEMCG_CHUNK_TARGET_MS, clamped to [VR_MEMCG_CHUNK_MIN_BYTES,
 * VR_MEMCG_CHUNK_MAX_BYTES], then at most @budget_left_bytes, in whole
 * pages. Return: 0 when less than a page is left. Pure.
 */
uint64_t vr_memcg_chunk_bytes(uint64_t budget_left_bytes, uint64_t throughput_bpms);

/**
 * vr_memcg_psi_brake_us() - the PSI brake of a window of quota @q, us of
 * "some" stall: the smallest target of @q's some_mem_psi_us goals, or
 * VR_MEMCG_PSI_BRAKE_PER_MILLE of the window (reset_interval_ms) without
 * such a goal. Pure.
 */
uint64_t vr_memcg_psi_brake_us(const struct vr_quota *q);

/**
 * struct vr_memcg_hooks - for tests: replaces the backend's edges. Any NULL
 * member keeps the real one.
 * @write:	instead of vr_kfile_write_errno() for memory.reclaim (same
 *		contract: *errno_out is EAGAIN when the kernel reclaimed less).
 * @now_ns:	instead of CLOCK_MONOTONIC, ns (times writes and deadlines).
 * @cpu_ns:	instead of CLOCK_THREAD_CPUTIME_ID, ns.
 * @data:	passed to each.
 */
struct vr_memcg_hooks {
	gboolean (*write)(void *data, const char *path, const char *value, int *errno_out,
			  GError **error);
	uint64_t (*now_ns)(void *data);
	uint64_t (*cpu_ns)(void *data);
	void *data;
};

/**
 * vr_memcg_set_hooks() - make the memcg backend @backend (from
 * vr_backend_memcg.open) use @hooks (copied). For tests.
 */
void vr_memcg_set_hooks(gpointer backend, const struct vr_memcg_hooks *hooks);
