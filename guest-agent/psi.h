/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory pressure stall information (/proc/pressure/memory, PSI):
 *
 *   some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=4567
 *
 * "some": share of time at least one task stalled on memory; "full": all
 * non-idle tasks at once. The agent brakes reclaim when "some" grows too
 * fast and feeds the some_mem_psi_us quota goal with it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "backend.h"

/**
 * struct vr_psi_line - one line of a PSI file.
 * @avg10_bp, @avg60_bp, @avg300_bp: stalled share of the last 10, 60 and
 *		300 s in basis points of time (the kernel's percentages with
 *		two decimals, times 100: "12.34" -> 1234; 0..10000).
 * @total_us:	cumulative stall time since boot, us.
 */
struct vr_psi_line {
	uint32_t avg10_bp;
	uint32_t avg60_bp;
	uint32_t avg300_bp;
	uint64_t total_us;
};

/**
 * struct vr_psi_memory - /proc/pressure/memory.
 * @some: at least one task stalled.
 * @full: every non-idle task stalled.
 */
struct vr_psi_memory {
	struct vr_psi_line some;
	struct vr_psi_line full;
};

/**
 * vr_psi_parse() - parse the text of a memory PSI file: exactly a "some"
 * line then a "full" line, each "avg10=A avg60=A avg300=A total=N" with A
 * a percentage with at most two decimals (at most 100) and N a decimal
 * count. Pure. Return: FALSE with @error (VR_AGENT_ERROR_INVALID, naming
 * the line and field) otherwise.
 */
gboolean vr_psi_parse(const char *text, struct vr_psi_memory *out, GError **error);

/**
 * vr_psi_read_memory() - read and parse @paths->procfs/pressure/memory.
 * Errors: VR_AGENT_ERROR_UNSUPPORTED when the file does not exist (a kernel
 * without CONFIG_PSI, or booted with psi=0); others name the file.
 */
gboolean vr_psi_read_memory(const struct vr_agent_paths *paths, struct vr_psi_memory *out,
			    GError **error);
