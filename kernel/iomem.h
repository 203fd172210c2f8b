/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest's RAM as the kernel lists it in /proc/iomem: the top-level
 * "System RAM" entries. A guest has several (below the PCI hole and above
 * 4 GiB); every one becomes a DAMON target region, where the kernel's own
 * DAMON_RECLAIM default takes only the largest.
 *
 * Parsing is a pure function on the text; vr_iomem_read_system_ram() reads
 * the file under an injectable procfs root.
 */
#pragma once

#include <glib.h>

#include "monitor.h"

/**
 * vr_iomem_parse_system_ram() - the top-level "System RAM" ranges of the
 * /proc/iomem text @text.
 *
 * A line is "START-END : NAME" with START and END in hexadecimal, END
 * inclusive; nested entries (children such as "Kernel code") are indented
 * and ignored, as are other names (Reserved, PCI Bus, ...) and lines that do
 * not parse. Each range becomes [START, END + 1) shrunk inward to page
 * boundaries (VR_PAGE_SIZE); a range left empty by that is dropped.
 *
 * Errors (VR_AGENT_ERROR_INVALID): no System RAM range at all, or every
 * address is 0 (the file was read without root, which the kernel answers with
 * zeroed addresses).
 *
 * Return: a new array of struct vr_range, sorted by start, owned by the
 * caller; NULL with @error on failure.
 */
GArray *vr_iomem_parse_system_ram(const char *text, GError **error);

/**
 * vr_iomem_read_system_ram() - vr_iomem_parse_system_ram() of
 * "@procfs/iomem". Errors name the file. Return: as the parser.
 */
GArray *vr_iomem_read_system_ram(const char *procfs, GError **error);

/**
 * vr_iomem_largest() - index of the largest range of @ranges (struct
 * vr_range), the lowest one on a tie; @ranges must not be empty.
 */
guint vr_iomem_largest(const GArray *ranges);
