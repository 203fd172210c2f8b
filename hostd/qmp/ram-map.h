/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a guest's RAM lives in its QEMU process: the map from
 * guest-physical to host-virtual addresses, and the translations through it
 * both ways. QMP fills it in (qemu-commands.c: RAM ranges of the flat memory
 * view, gpa2hva for each); host-pageout translates guest ranges to host
 * ranges through it (vr_ram_map_translate()), the host-damon source a
 * picture of the QEMU process's memory to guest-physical regions
 * (vr_ram_map_to_guest()). One validator for every map. Pure.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "monitor.h" /* struct vr_range */
#include "picture-region.h"

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

#define VR_RAM_MAP_ERROR (vr_ram_map_error_quark())
GQuark vr_ram_map_error_quark(void);

/**
 * enum vr_ram_map_error - error codes in the VR_RAM_MAP_ERROR domain.
 * @VR_RAM_MAP_ERROR_INVALID: a map or a guest range is malformed; the message
 *			      names the entry and what is wrong with it.
 */
enum vr_ram_map_error {
	VR_RAM_MAP_ERROR_INVALID,
};

/* The most entries a RAM map may have: QEMU maps a guest's RAM in a handful
 * (below and above the PCI hole, hot-plugged DIMMs); the bound keeps a
 * hostile map cheap to refuse. */
#define VR_RAM_MAP_MAX_ENTRIES 1024

/**
 * vr_ram_map_validate() - check that @map (@nr entries) is a usable map:
 * at least one entry and at most VR_RAM_MAP_MAX_ENTRIES, every size > 0,
 * neither [gpa, gpa + size) nor [hva, hva + size) wraps around the 64-bit
 * address space, and no two entries share a guest-physical byte. The
 * entries may come in any order (the translations sort what they need);
 * host ranges may be adjacent (QEMU maps RAM below and above the PCI hole
 * from one block) or shared (an alias). Pure.
 * Return: FALSE with @error (VR_RAM_MAP_ERROR_INVALID, naming the entry by
 * its index in @map) when one of those does not hold.
 */
gboolean vr_ram_map_validate(const struct vr_ram_range *map, guint nr, GError **error);

/**
 * vr_ram_map_translate() - the host-virtual ranges of the QEMU process that
 * back the guest-physical ranges @guest (@nr_guest struct vr_range, each
 * [start, end) in bytes, typically the cold regions a guest agent reported).
 * @map, @nr_map:	the RAM map, in any order; validated here
 *			(vr_ram_map_validate()).
 * @guest, @nr_guest:	the guest ranges, in the order they should be acted
 *			on; an empty one (start == end) is skipped; they need
 *			not be aligned. Untrusted: checked, never trusted.
 * @host_ranges:	set to a new array of struct iovec (iov_base the host
 *			address, iov_len its length in bytes), owned by the
 *			caller, ready for vr_host_pageout(); unchanged on
 *			failure.
 *
 * Each guest range is split across the map entries it overlaps; the parts
 * that no entry covers (holes: MMIO, the PCI hole, ranges beyond the RAM)
 * are dropped. Consecutive pieces that are contiguous in the host are
 * merged, then every host range is shrunk inward to whole pages
 * (VR_PAGE_SIZE), so no byte outside the guest ranges is ever
 * included; a range left empty is dropped. The output keeps the order of
 * @guest. Overlapping guest ranges give overlapping host ranges: pass
 * disjoint ones. Pure.
 *
 * Return: TRUE with @host_ranges (possibly empty); FALSE with @error
 * (VR_RAM_MAP_ERROR_INVALID) when the map is invalid or a guest range ends
 * before it starts (the message names its index and addresses).
 */
gboolean vr_ram_map_translate(const struct vr_ram_range *map, guint nr_map,
			      const struct vr_range *guest, guint nr_guest, GArray **host_ranges,
			      GError **error);

/**
 * vr_ram_map_to_guest() - a picture of a QEMU process's memory (host-virtual
 * addresses) as guest-physical regions: the other direction of
 * vr_ram_map_translate().
 * @map, @nr_map:	the RAM map, valid (vr_ram_map_validate()).
 * @hva_regions:	struct vr_picture_region in the process's host-virtual
 *			addresses, sorted by start and disjoint (a DAMON
 *			vaddr picture).
 * @max_nr_accesses:	each region's nr_accesses is capped to this.
 * @out:		struct vr_picture_region; the guest regions are appended,
 *			sorted by guest-physical address among themselves,
 *			not merged.
 *
 * The parts outside guest RAM are dropped (the process's heap, libraries,
 * stacks); a region spanning several map entries is split at their
 * boundaries; a host range mapped at two guest addresses (an alias) appears
 * at both. Pure; O((n + m) log n + output) for n regions and m entries.
 */
void vr_ram_map_to_guest(const struct vr_ram_range *map, guint nr_map, const GArray *hva_regions,
			 uint32_t max_nr_accesses, GArray *out);
