/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host-reclaim: the host-pageout action of a guest without an agent. Each
 * step reads the guest's access picture from a host access source, plans the
 * coldest guest memory within the window's quota (vr_pageout_plan(),
 * common/pageout-plan.h), translates the plan through the guest's RAM map to
 * host ranges of the QEMU process (vr_ram_map_translate()) and pages them out
 * with process_madvise(MADV_PAGEOUT) through a pidfd (vr_host_pageout()),
 * only the pages of those ranges that are resident (their /proc/<pid>/pagemap
 * entries, vr_pagemap_read_resident(), common/resident-runs.h):
 *
 *   access source --picture--> plan --guest ranges--> RAM map
 *       --host iovecs--> pagemap --resident runs-->
 *       process_madvise(pidfd, MADV_PAGEOUT)
 *
 * Memory already in swap looks cold to every access source, so plans keep
 * choosing it; the kernel would accept it and count it as advised though
 * nothing leaves memory. It is skipped instead and the quota goes to
 * resident pages: the plan may reach past the quota (up to
 * VR_HOST_RECLAIM_SCAN_BYTES) to find them, coldest first.
 *
 * The requirements are host-pageout's (kernel/process-pageout.h): host swap, root,
 * Linux 5.10 or later, guest RAM that is neither locked nor on hugetlbfs.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

#include "host-watermarks.h"
#include "qmp/ram-map.h"
#include "scheme.h"
#include "sources/access-source.h"

#define VR_HOST_RECLAIM_ERROR (vr_host_reclaim_error_quark())
GQuark vr_host_reclaim_error_quark(void);

/**
 * enum vr_host_reclaim_error - error codes in the VR_HOST_RECLAIM_ERROR
 * domain (an argument of vr_host_reclaim_new(); the errors of a step keep
 * the domain and code of the stage that failed).
 * @VR_HOST_RECLAIM_ERROR_INVALID: an argument is out of range; the message
 *				   names the guest and the argument.
 */
enum vr_host_reclaim_error {
	VR_HOST_RECLAIM_ERROR_INVALID,
};

/*
 * How far a step's plan may reach, bytes: a quota of q plans max(q, this)
 * of the coldest memory, and the quota is then spent on the resident pages
 * of it, in plan order. Its pagemap is at most 2 MiB (8 bytes a page), read
 * only until the quota is found. When more than this of the coldest memory
 * is in swap already, a step finds less than its quota.
 */
#define VR_HOST_RECLAIM_SCAN_BYTES (1ULL << 30)

/**
 * struct vr_host_reclaim - one agent-less guest's host-side reclaim. Opaque.
 *
 * It owns: its name (a copy, for messages), a started access source giving
 * the guest's picture in guest-physical addresses, a copy of the guest's RAM
 * map, a pidfd of the QEMU process (vr_pidfd_open(): it keeps naming that
 * process even when its pid is reused), its pagemap file (vr_pagemap_open(),
 * bound to that process's memory) and the guest's memory size. Not
 * thread-safe: one thread steps it.
 */
struct vr_host_reclaim;
typedef struct vr_host_reclaim vr_host_reclaim;

/**
 * vr_host_reclaim_new() - the host-side reclaim of a guest.
 * @name:		the guest's name, for messages; copied. NULL reads as
 *			"?".
 * @pid:		the QEMU process, > 0.
 * @map, @nr_map:	the guest's RAM map (struct vr_ram_range, as
 *			vr_ram_map_validate() wants it, at most
 *			VR_RAM_MAP_MAX_ENTRIES entries); copied.
 * @guest_memory_bytes:	the guest's memory size, bytes, > 0: a picture may
 *			cover at most this many bytes.
 * @source:		the guest's access source; owned from here on, on
 *			failure too (then freed). Started here when it is not
 *			started yet.
 *
 * Checks the arguments, opens the pidfd and the pagemap, then starts @source
 * if needed.
 *
 * Return: the reclaim, owned by the caller (vr_host_reclaim_free()); or NULL
 * with @error prefixed by "guest NAME: ": VR_HOST_RECLAIM_ERROR_INVALID for
 * no source or a memory size of 0, VR_RAM_MAP_ERROR_INVALID for a bad map,
 * VR_HOST_PAGEOUT_ERROR_* from vr_pidfd_open() or vr_pagemap_open() (GONE
 * when the process does not exist), or the source's error when it does not start.
 */
struct vr_host_reclaim *vr_host_reclaim_new(const char *name, pid_t pid,
					    const struct vr_ram_range *map, guint nr_map,
					    uint64_t guest_memory_bytes,
					    struct vr_access_source *source, GError **error);

/**
 * struct vr_host_reclaim_result - what one step did.
 * @picture_regions:	regions in the picture read.
 * @planned_bytes:	guest-physical bytes the plan chose (whole pages, at
 *			most max(quota, VR_HOST_RECLAIM_SCAN_BYTES); 0 for a
 *			quota of 0).
 * @ranges:		host ranges (struct iovec) the plan translated to; the
 *			parts of the plan outside guest RAM (holes in the RAM
 *			map) have none.
 * @resident_bytes:	bytes of those ranges found resident in pagemap and
 *			taken, in plan order, at most the quota.
 * @swapped_bytes:	bytes of them found in swap already, skipped.
 * @absent_bytes:	bytes of them neither resident nor in swap (never
 *			touched), skipped.
 *			The last two count only the pages looked at before
 *			the quota was found.
 * @runs:		resident runs (host ranges) advised.
 * @advised_bytes:	bytes process_madvise(MADV_PAGEOUT) accepted: resident
 *			bytes only, at most @resident_bytes and the quota. What
 *			the quota is charged and vreclaimd counts as reclaimed.
 *			Set on failure too: what was advised before the range
 *			that failed.
 * @swap_room_bytes:	vr_host_reclaim_step_in_swap() only: the room the
 *			host's swap had (vr_host_pageout_room()), bytes; the
 *			step's quota was cut to it.
 * @swap_full:		vr_host_reclaim_step_in_swap() only: there was no
 *			room, so the step did nothing at all (no picture read,
 *			no process_madvise()).
 */
struct vr_host_reclaim_result {
	guint picture_regions;
	uint64_t planned_bytes;
	guint ranges;
	uint64_t resident_bytes;
	uint64_t swapped_bytes;
	uint64_t absent_bytes;
	guint runs;
	uint64_t advised_bytes;
	uint64_t swap_room_bytes;
	gboolean swap_full;
};

/**
 * vr_host_reclaim_acquire() - read the guest's access picture for this tick
 * (vr_access_source_get_regions()) and keep it: the cold histogram and the
 * step that follow use it, so a tick reads the picture once. A picture kept
 * from before is dropped first, also on failure.
 * Return: FALSE with @error prefixed by "guest NAME: reading the access
 * picture: ".
 */
gboolean vr_host_reclaim_acquire(struct vr_host_reclaim *hr, GError **error);

/**
 * vr_host_reclaim_forget_picture() - drop the picture kept by
 * vr_host_reclaim_acquire() or the cold histogram, if any: a tick that
 * acquires none must not leave the next offer a picture of an older tick.
 */
void vr_host_reclaim_forget_picture(struct vr_host_reclaim *hr);

/**
 * vr_host_reclaim_step() - page out the guest's coldest memory, once.
 * @hr:		the guest.
 * @scheme:	its pageout scheme (its pattern selects, its weights score:
 *		see vr_pageout_plan()). Borrowed.
 * @quota_bytes: the most bytes to page out in this step: 0 pages out
 *		nothing, G_MAXUINT64 means no limit.
 * @result:	out: what the step did; zeroed first, filled as the stages
 *		go (so on failure it tells how far the step got). May be NULL.
 *
 * Uses the picture vr_host_reclaim_acquire() kept, or acquires one when none
 * is kept, and drops it (the next step reads a new one); plans
 * (vr_pageout_plan(), up to max(@quota_bytes, VR_HOST_RECLAIM_SCAN_BYTES)),
 * translates the plan to host ranges in the plan's order, coldest first
 * (vr_ram_map_translate()), finds their resident pages up to @quota_bytes
 * (vr_pagemap_read_resident()) and pages those out (vr_host_pageout()). An
 * empty plan or no resident page skips the later stages: a QEMU process
 * that is gone is then noticed at the next step with something to page out.
 *
 * Return: TRUE when every stage succeeded. FALSE with @error prefixed by
 * "guest NAME: " and the stage ("reading the access picture", "planning the
 * pageout", "translating the plan to host ranges", "finding the resident
 * pages", "paging out"), keeping
 * the stage's domain and code: e.g. VR_HOST_PAGEOUT_ERROR_GONE when the QEMU
 * process has exited, VR_FLEET_ERROR_INVALID for a scheme that is not
 * pageout.
 */
gboolean vr_host_reclaim_step(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
			      uint64_t quota_bytes, struct vr_host_reclaim_result *result,
			      GError **error);

/**
 * vr_host_reclaim_step_in_swap() - vr_host_reclaim_step() within the room
 * the host's swap has left: the host-pageout action's step in vreclaimd.
 * @host:	the host now (its SwapTotal and SwapFree, from /proc/meminfo).
 *		Borrowed.
 *
 * The quota is cut to vr_host_pageout_room() of @host (@result's
 * swap_room_bytes): MADV_PAGEOUT into a full swap is accepted by the kernel
 * and frees nothing. With no room the step does nothing at all and sets
 * @result's swap_full; vr_host_swap_full_reason() says so for the operator.
 * Return: as vr_host_reclaim_step(); TRUE when the swap is full.
 */
gboolean vr_host_reclaim_step_in_swap(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
				      uint64_t quota_bytes, const struct vr_host_snapshot *host,
				      struct vr_host_reclaim_result *result, GError **error);

/**
 * vr_host_reclaim_cold_histogram() - the guest's eligible cold bytes per
 * cold score under @scheme (vr_fleet_cold_histogram()) from the picture
 * vr_host_reclaim_acquire() kept (acquired here when none is, and kept for
 * the step), for the fleet quota (vr_fleet_domain.hist_bytes).
 * @hist_bytes:	out, VR_MAX_SCORE + 1 entries; all zero on error.
 * Return: FALSE with @error prefixed by "guest NAME: " and the stage.
 */
gboolean vr_host_reclaim_cold_histogram(struct vr_host_reclaim *hr, const struct vr_scheme *scheme,
					uint64_t *hist_bytes, GError **error);

/** vr_host_reclaim_name() - @hr's name (borrowed, lives as long as @hr). */
const char *vr_host_reclaim_name(const struct vr_host_reclaim *hr);

/**
 * vr_host_reclaim_free() - stop and free the access source, close the
 * pidfd, free @hr. NULL is fine.
 */
void vr_host_reclaim_free(struct vr_host_reclaim *hr);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_host_reclaim, vr_host_reclaim_free)
