/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /proc/meminfo: the few fields the agent decides with (free memory for the
 * watermarks, swap for reports), parsed strictly: a field that is missing,
 * repeated, not "<digits> kB" or too large is an error naming it.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "backend.h"

/**
 * struct vr_meminfo - a snapshot of /proc/meminfo, in bytes.
 * @mem_total_bytes:	 MemTotal (> 0).
 * @mem_free_bytes:	 MemFree (<= MemTotal).
 * @mem_available_bytes: MemAvailable (the kernel's estimate of what can be
 *			 allocated without swapping).
 * @swap_total_bytes:	 SwapTotal.
 * @swap_free_bytes:	 SwapFree (<= SwapTotal).
 */
struct vr_meminfo {
	uint64_t mem_total_bytes;
	uint64_t mem_free_bytes;
	uint64_t mem_available_bytes;
	uint64_t swap_total_bytes;
	uint64_t swap_free_bytes;
};

/**
 * vr_meminfo_parse() - parse the text of /proc/meminfo. Each of MemTotal,
 * MemFree, MemAvailable, SwapTotal and SwapFree must appear exactly once as
 * "Name:<spaces><digits> kB"; other lines are ignored. Pure.
 * Return: FALSE with @error (VR_AGENT_ERROR_INVALID, naming the field and
 * what it held) when a field is missing, repeated, malformed, overflows
 * bytes, MemTotal is 0, or a free amount exceeds its total.
 */
gboolean vr_meminfo_parse(const char *text, struct vr_meminfo *out, GError **error);

/**
 * vr_meminfo_read() - read and parse @paths->procfs/meminfo. Errors name the
 * file.
 */
gboolean vr_meminfo_read(const struct vr_agent_paths *paths, struct vr_meminfo *out,
			 GError **error);

/**
 * vr_meminfo_free_mem_rate() - free memory per thousand of total, DAMON's
 * watermark metric: MemFree * 1000 / MemTotal (truncated); 0 when MemTotal
 * is 0.
 */
uint64_t vr_meminfo_free_mem_rate(const struct vr_meminfo *m);
