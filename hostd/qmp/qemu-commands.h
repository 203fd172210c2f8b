/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU commands vreclaimd uses, on top of vr_qemu_monitor: the balloon
 * (query-balloon, balloon), the guest's RAM size
 * (query-memory-size-summary), and where guest RAM lives in the QEMU
 * process (HMP `info mtree -f` and `gpa2hva` through human-monitor-command,
 * with query-memdev to tell guest RAM from RAM-backed device memory).
 *
 * Each command is a thin call plus a pure parser of QEMU's answer; the
 * parsers take text or JSON, so tests feed them captured outputs. QEMU is
 * untrusted: every answer is bounded and checked, and errors name the line
 * or member that was wrong.
 */
#pragma once

#include <glib.h>
#include <json.h>
#include <stdint.h>

#include "qmp/qemu-monitor.h"
#include "qmp/ram-map.h"

#define VR_QEMU_COMMANDS_ERROR (vr_qemu_commands_error_quark())
GQuark vr_qemu_commands_error_quark(void);

/**
 * enum vr_qemu_commands_error - failures of the helpers themselves (the
 * monitor's own are VR_QMP_ERROR / VR_QEMU_MONITOR_ERROR).
 * @VR_QEMU_COMMANDS_ERROR_INVALID:  QEMU's answer is malformed, out of
 *				     bounds or inconsistent.
 * @VR_QEMU_COMMANDS_ERROR_ARGUMENT: the caller asked for something QEMU
 *				     cannot take (a balloon target of 0).
 */
enum vr_qemu_commands_error {
	VR_QEMU_COMMANDS_ERROR_INVALID,
	VR_QEMU_COMMANDS_ERROR_ARGUMENT,
};

/* The longest HMP output taken, bytes (as the QMP line bound: `info mtree
 * -f` of a guest with many devices is tens of KiB). */
#define VR_QEMU_HMP_MAX_OUTPUT_BYTES (1024 * 1024)

/* The most RAM ranges a guest's memory map may have: a PC guest has 2 to
 * 6 (below the PCI hole, above 4 GiB, the BIOS shadow pieces), plus one per
 * memory device; more is a broken or hostile QEMU. */
#define VR_QEMU_RAM_MAP_MAX_RANGES 256

/* The most memory backends taken from query-memdev. */
#define VR_QEMU_MAX_MEMDEVS 256

/**
 * struct vr_qemu_mtree_range - one RAM range of the flat view of the
 * guest-physical address space ("memory"), from `info mtree -f`.
 * @gpa:	its first guest-physical address, bytes.
 * @size:	its length, bytes.
 * @offset:	where @gpa falls in its memory region, bytes (the "@..."
 *		of the line; 0 without one).
 * @region:	the memory region's name ("pc.ram", a backend's id), owned
 *		(the array frees it).
 */
struct vr_qemu_mtree_range {
	uint64_t gpa;
	uint64_t size;
	uint64_t offset;
	char *region;
};

/* --- pure parsers ---------------------------------------------------------- */

/**
 * vr_qemu_parse_balloon() - @ret of query-balloon: {"actual": bytes}.
 * Return: FALSE with VR_QEMU_COMMANDS_ERROR_INVALID naming the member.
 */
gboolean vr_qemu_parse_balloon(json_object *ret, uint64_t *actual_bytes, GError **error);

/**
 * vr_qemu_parse_memory_size_summary() - @ret of query-memory-size-summary:
 * {"base-memory": bytes, "plugged-memory": bytes (optional)}.
 * @bytes:	their sum, the guest's RAM.
 */
gboolean vr_qemu_parse_memory_size_summary(json_object *ret, uint64_t *bytes, GError **error);

/**
 * vr_qemu_parse_memdev_ids() - the ids of the memory backends in @ret of
 * query-memdev (an array of objects; backends without an id are skipped).
 * @ids:	owned array of owned strings.
 */
gboolean vr_qemu_parse_memdev_ids(json_object *ret, GPtrArray **ids, GError **error);

/**
 * vr_qemu_parse_mtree_ram() - the RAM ranges of address space "memory" in
 * @text, the output of HMP `info mtree -f`.
 *
 * Only the FlatView listing ` AS "memory"` counts; in it, a line
 *   `  0000000000100000-000000000fffffff (prio 0, ram): pc.ram @0000000000100000 KVM`
 * is a range (inclusive end, an optional offset in its region, optional
 * accelerator names); only type `ram` is RAM (`rom`, `romd`, `ramd`,
 * `nv-ram`, `i/o` are not).
 * @ranges:	owned array of struct vr_qemu_mtree_range, by gpa (may be
 *		empty).
 * Return: FALSE with VR_QEMU_COMMANDS_ERROR_INVALID naming the line
 * ("line N: ...") for a range line that does not parse, ranges out of
 * order or overlapping, an offset that wraps, more than
 * VR_QEMU_RAM_MAP_MAX_RANGES RAM ranges, text over
 * VR_QEMU_HMP_MAX_OUTPUT_BYTES, or no FlatView of "memory" (or two).
 */
gboolean vr_qemu_parse_mtree_ram(const char *text, GArray **ranges, GError **error);

/**
 * vr_qemu_parse_gpa2hva() - the host-virtual address in @text, the output
 * of HMP `gpa2hva @gpa`:
 *   `Host virtual address for 0x100000 (pc.ram) is 0x7fa77ff00000`.
 * @region:	the memory region the answer must name, or NULL for any.
 * @hva:	the address (nonzero).
 * Return: FALSE with VR_QEMU_COMMANDS_ERROR_INVALID quoting QEMU's answer
 * ("No memory is mapped at address ...", another address or region).
 */
gboolean vr_qemu_parse_gpa2hva(const char *text, uint64_t gpa, const char *region, uint64_t *hva,
			       GError **error);

/* --- commands ---------------------------------------------------------------
 * Each waits up to @mon->timeout_ms per QMP command (own client). */

/**
 * vr_qemu_query_balloon() - the guest's current RAM as the balloon sees it
 * (QMP query-balloon "actual"), bytes. Fails with VR_QMP_ERROR_COMMAND
 * (class DeviceNotActive) when the guest has no balloon device.
 */
gboolean vr_qemu_query_balloon(struct vr_qemu_monitor *mon, uint64_t *actual_bytes, GError **error);

/**
 * vr_qemu_set_balloon() - ask the guest's balloon for @target_bytes of RAM
 * (QMP balloon "value"); the guest gets there later, or not.
 * Return: FALSE with VR_QEMU_COMMANDS_ERROR_ARGUMENT for 0 or a target
 * beyond INT64_MAX, or the monitor's error.
 */
gboolean vr_qemu_set_balloon(struct vr_qemu_monitor *mon, uint64_t target_bytes, GError **error);

/**
 * vr_qemu_query_ram_size() - the guest's RAM, bytes: base-memory plus
 * plugged-memory of QMP query-memory-size-summary.
 */
gboolean vr_qemu_query_ram_size(struct vr_qemu_monitor *mon, uint64_t *bytes, GError **error);

/**
 * vr_qemu_hmp() - run the HMP command @command_line through QMP
 * human-monitor-command.
 * @output:	what HMP printed (owned); HMP reports its own failures
 *		("unknown command: ...") there, not as errors.
 * Return: FALSE with the monitor's error, or VR_QEMU_COMMANDS_ERROR_INVALID
 * when the answer is no string or over VR_QEMU_HMP_MAX_OUTPUT_BYTES.
 */
gboolean vr_qemu_hmp(struct vr_qemu_monitor *mon, const char *command_line, char **output,
		     GError **error);

/**
 * vr_qemu_guest_ram_map() - where the guest's RAM lives in the QEMU process.
 *
 * The RAM ranges of `info mtree -f` (vr_qemu_parse_mtree_ram()) whose region
 * is a memory backend of query-memdev (by id, or by "/objects/<id>"; every
 * RAM range when QEMU lists no backend ids), so that RAM-backed device
 * memory (a VGA BAR's "vga.vram") is left out; then `gpa2hva` of each
 * range's start. Ranges of one region must agree (hva - offset is the
 * region's base).
 * @map:	owned array of struct vr_ram_range, sorted by gpa, checked by
 *		vr_ram_map_validate() (ram-map.h); every hva nonzero.
 * Return: FALSE with @error naming the command or the range, also when the
 * guest has no RAM range at all.
 */
gboolean vr_qemu_guest_ram_map(struct vr_qemu_monitor *mon, GArray **map, GError **error);
