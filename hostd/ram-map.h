/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a guest's RAM lives in its QEMU process: the map from
 * guest-physical to host-virtual addresses. QMP fills it in (qemu-commands.c:
 * RAM ranges of the flat memory view, gpa2hva for each); host-pageout
 * translates guest ranges through it. Pure data.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

/**
 * struct vr_ram_range - one contiguous piece of guest RAM.
 * @gpa:	its first guest-physical address, bytes.
 * @hva:	the host-virtual address in the QEMU process that backs @gpa.
 * @size:	its length in bytes; [gpa, gpa + size) maps to
 *		[hva, hva + size) linearly.
 */
struct vr_ram_range {
	uint64_t gpa;
	uint64_t hva;
	uint64_t size;
};
