/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsers of the per-process procfs files the host daemon reads for each
 * domain's QEMU process (and for itself): /proc/<pid>/status (resident and
 * swapped-out memory), /proc/<pid>/smaps_rollup (resident, anonymous and
 * swapped-out memory, summed over all mappings) and /proc/<pid>/stat (CPU
 * time and start time). The host's /proc/meminfo and /proc/pressure/memory
 * parse with common/procfs-text.h.
 *
 * Text in, struct out: the texts come from a struct vr_read_batch. Each
 * parser is strict and bounded: a field that is missing, repeated, malformed
 * or too large is an error (VR_PROCFS_TEXT_ERROR_INVALID) whose message
 * starts with the file's path and names the field; a failed parse leaves the
 * output alone.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "procfs-text.h"

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
