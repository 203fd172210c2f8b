/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of the procfs texts that the guest agent and the host daemon
 * read: lists of "Name: N kB" fields (/proc/meminfo, /proc/<pid>/status,
 * /proc/<pid>/smaps_rollup), /proc/meminfo itself, memory pressure stall
 * information (/proc/pressure/memory), the free blocks of the buddy
 * allocator (/proc/buddyinfo), and the per-process files the host daemon
 * reads for each domain's QEMU process (and for itself): /proc/<pid>/status
 * (resident and swapped-out memory), /proc/<pid>/smaps_rollup (resident,
 * anonymous and swapped-out memory, summed over all mappings) and
 * /proc/<pid>/stat (CPU time and start time), whose texts come from a
 * struct vr_read_batch (kernel/read-batch.h). Text in, struct out: no I/O. Each
 * parser is strict: a field that is missing, repeated, malformed or too
 * large is an error naming it, and a failed parse leaves the output alone.
 */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#define VR_PROCFS_TEXT_ERROR (vr_procfs_text_error_quark())
GQuark vr_procfs_text_error_quark(void);

/**
 * enum vr_procfs_text_error - error codes in the VR_PROCFS_TEXT_ERROR domain.
 * @VR_PROCFS_TEXT_ERROR_INVALID: the text does not parse; the message names
 *				  the field or line and what it held.
 */
enum vr_procfs_text_error {
	VR_PROCFS_TEXT_ERROR_INVALID,
};

/* Most fields one vr_kb_fields_parse() call can look for. */
#define VR_KB_FIELDS_MAX 32

/**
 * struct vr_kb_field - one "Name: N kB" field a parser needs.
 * @name:	the name before the colon ("VmRSS").
 * @offset:	offsetof() the uint64_t member, in bytes, that receives it.
 */
struct vr_kb_field {
	const char *name;
	size_t offset;
};

/**
 * vr_kb_fields_parse() - find each of @fields (at most VR_KB_FIELDS_MAX) in
 * @text exactly once as a line "Name:<spaces or tabs><digits> kB" and store
 * its value in bytes at @out + offset. Lines with other names are ignored.
 * Pure.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID, naming the field
 * and what it held) when a field is missing, repeated, not a number of kB or
 * too large for 64 bits of bytes; @out is then unchanged.
 */
gboolean vr_kb_fields_parse(const char *text, const struct vr_kb_field *fields, guint nr_fields,
			    void *out, GError **error);

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
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID, naming the field
 * and what it held) when a field is missing, repeated, malformed, overflows
 * bytes, MemTotal is 0, or a free amount exceeds its total.
 */
gboolean vr_meminfo_parse(const char *text, struct vr_meminfo *out, GError **error);

/**
 * vr_meminfo_free_mem_rate() - free memory per thousand of total, DAMON's
 * watermark metric: MemFree * 1000 / MemTotal (truncated); 0 when MemTotal
 * is 0.
 */
uint64_t vr_meminfo_free_mem_rate(const struct vr_meminfo *m);

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
 * struct vr_psi_memory - /proc/pressure/memory:
 *
 *   some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=4567
 *
 * @some: at least one task stalled on memory.
 * @full: every non-idle task stalled at once.
 */
struct vr_psi_memory {
	struct vr_psi_line some;
	struct vr_psi_line full;
};

/**
 * vr_psi_parse() - parse the text of a memory PSI file: exactly a "some"
 * line then a "full" line, each "avg10=A avg60=A avg300=A total=N" with A
 * a percentage with at most two decimals (at most 100) and N a decimal
 * count. Pure. Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID,
 * naming the line and field) otherwise.
 */
gboolean vr_psi_parse(const char *text, struct vr_psi_memory *out, GError **error);

/* Most orders (counts) a /proc/buddyinfo line may have: MAX_PAGE_ORDER + 1,
 * which is 11 on x86 and at most 16 on any kernel. */
#define VR_BUDDYINFO_MAX_ORDERS 16

/* Most lines vr_buddyinfo_parse() takes: one per zone of each NUMA node. */
#define VR_BUDDYINFO_MAX_LINES 1024

/**
 * vr_buddyinfo_parse() - the free memory in free blocks of @min_order pages
 * and larger, from the text of /proc/buddyinfo:
 *
 *   Node 0, zone      DMA      1      0      1      0      2      1 ...
 *   Node 0, zone    DMA32    325    284    178    112     52     23 ...
 *
 * Each line is "Node N, zone NAME" (N decimal, NAME a letter then letters,
 * digits or '_') then 1..VR_BUDDYINFO_MAX_ORDERS decimal counts separated
 * by spaces or tabs: count i is the number of free blocks of 2^i pages in
 * that zone. At most VR_BUDDYINFO_MAX_LINES lines; a last newline is
 * optional. Every count is checked, whatever @min_order; a @min_order above
 * the counts of a line counts nothing of it. Pure.
 * @text:	the file's text.
 * @min_order:	the smallest block order counted (free page reporting's
 *		page_reporting_order).
 * @page_size:	the kernel's page size, bytes (> 0).
 * @free_bytes:	set to the sum over all nodes and zones of count i times
 *		2^i pages of @page_size bytes, for each i >= @min_order.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID, naming the line
 * number and what it held) when the text is empty, has too many lines, a
 * line is malformed, has no or too many counts, a count is not decimal or
 * does not fit 64 bits, or the sum does not fit 64 bits of bytes (an error,
 * not a saturation: no machine has that much memory, so the text is
 * corrupt); @free_bytes is then unchanged.
 */
gboolean vr_buddyinfo_parse(const char *text, guint min_order, uint64_t page_size,
			    uint64_t *free_bytes, GError **error);

/**
 * struct vr_proc_status - from /proc/<pid>/status.
 * @vm_rss_bytes:  VmRSS: resident memory (anonymous, file and shmem).
 * @vm_swap_bytes: VmSwap: anonymous memory swapped out.
 */
struct vr_proc_status {
	uint64_t vm_rss_bytes;
	uint64_t vm_swap_bytes;
};

/**
 * vr_proc_status_parse() - parse the text of /proc/<pid>/status: VmRSS and
 * VmSwap must each appear exactly once as "Name:<blanks><digits> kB". A
 * kernel thread or an exited (zombie) process has neither.
 * @path:	the file's path, for messages only.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID naming @path and
 * the field) otherwise.
 */
gboolean vr_proc_status_parse(const char *text, const char *path, struct vr_proc_status *out,
			      GError **error);

/**
 * vr_proc_status_vm_size_parse() - the VmSize (virtual memory size) of the
 * text of /proc/<pid>/status, in bytes; it must appear exactly once as
 * "VmSize:<blanks><digits> kB" (a kernel thread has none). A QEMU process
 * maps all of its guest's RAM, so it bounds what QEMU may claim.
 * @path:	the file's path, for messages only.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID naming @path and
 * the field) otherwise.
 */
gboolean vr_proc_status_vm_size_parse(const char *text, const char *path, uint64_t *bytes,
				      GError **error);

/**
 * struct vr_smaps_rollup - from /proc/<pid>/smaps_rollup, summed over all
 * the process's mappings.
 * @rss_bytes:	     Rss: resident memory.
 * @anonymous_bytes: Anonymous: resident anonymous memory (a QEMU process's
 *		     guest RAM is mostly this).
 * @swap_bytes:	     Swap: anonymous memory swapped out.
 */
struct vr_smaps_rollup {
	uint64_t rss_bytes;
	uint64_t anonymous_bytes;
	uint64_t swap_bytes;
};

/**
 * vr_smaps_rollup_parse() - parse the text of /proc/<pid>/smaps_rollup: a
 * first line ending in "[rollup]", then Rss, Anonymous and Swap each exactly
 * once as "Name:<blanks><digits> kB".
 * @path:	the file's path, for messages only.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID naming @path and
 * the field or the header) otherwise.
 */
gboolean vr_smaps_rollup_parse(const char *text, const char *path, struct vr_smaps_rollup *out,
			       GError **error);

/**
 * struct vr_proc_stat - from /proc/<pid>/stat.
 * @pid:	   field 1, the process id.
 * @cpu_us:	   utime + stime (fields 14 and 15): CPU time the process has
 *		   used in user and kernel mode, us.
 * @start_time_us: starttime (field 22): when the process started, us after
 *		   boot. With @pid it names a process: a pid reused by another
 *		   process has another start time.
 */
struct vr_proc_stat {
	uint32_t pid;
	uint64_t cpu_us;
	uint64_t start_time_us;
};

/**
 * vr_proc_stat_parse() - parse the text of /proc/<pid>/stat: one line
 * "pid (comm) state f4 ... f52". The command name (at most 64 bytes) may
 * hold spaces, ')' and even newlines: it ends at the last ')'. The state is one letter; every
 * field after it is a decimal number (some may be negative) separated by
 * single spaces; utime, stime and starttime are unsigned.
 * @ticks_per_s: the clock tick of those fields (sysconf(_SC_CLK_TCK), 100
 *		 on Linux), 1..1000000.
 * @path:	the file's path, for messages only.
 * Return: FALSE with @error (VR_PROCFS_TEXT_ERROR_INVALID naming @path and
 * the field) when the line is malformed, has fewer than 22 fields, or a
 * value overflows 64 bits of microseconds.
 */
gboolean vr_proc_stat_parse(const char *text, const char *path, uint64_t ticks_per_s,
			    struct vr_proc_stat *out, GError **error);
