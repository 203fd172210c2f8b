/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * process-pageout: page out, from the host, the memory of a QEMU process that
 * backs cold guest memory, with process_madvise(pidfd, ranges,
 * MADV_PAGEOUT) through a pidfd; and the resident and swapped bytes of an
 * address range of a process, from /proc/<pid>/smaps, to see the effect.
 *
 * Which ranges are cold is decided elsewhere; vr_ram_map_translate()
 * (hostd/qmp/ram-map.h) turns guest ranges into the host ranges taken here.
 *
 * Requirements:
 * - Host swap. MADV_PAGEOUT reclaims anonymous memory (which guest RAM is)
 *   only to swap; without a swap device (or with a cgroup whose
 *   memory.swap.max is 0) the kernel still accepts the advice and counts
 *   the bytes as advised, but the pages stay resident: vr_host_pageout()
 *   reports the advised bytes while the range's resident bytes
 *   (vr_smaps_read_range_usage()) do not fall and its swapped bytes stay 0.
 *   File-backed guest RAM (memory-backend-file on a disk file, not
 *   hugetlbfs) is written back to its file instead.
 * - Where the memory goes. The pages leave the process at once (its Rss
 *   falls, its Swap rises), but their clean copies stay in the swap cache
 *   until the kernel reclaims them, which it does first when memory runs
 *   short: host MemFree and MemAvailable rise only then. Measured on Linux
 *   6.18 with 32 MiB paged out and no memory pressure: SwapCached held the
 *   32 MiB 2 s later and MemFree had not risen.
 * - Privileges. The caller needs PTRACE_MODE_READ access to the target
 *   (same user, or CAP_SYS_PTRACE) and CAP_SYS_NICE: in practice root,
 *   which the daemon is. Without them the kernel answers EACCES or EPERM.
 * - Linux 5.10 or later (process_madvise; pidfd_open is 5.3). Guest RAM
 *   that is locked (QEMU -overcommit mem-lock=on), on hugetlbfs or a PFN
 *   mapping cannot be paged out: the kernel answers EINVAL.
 */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "resident-runs.h"

#define VR_HOST_PAGEOUT_ERROR (vr_host_pageout_error_quark())
GQuark vr_host_pageout_error_quark(void);

/**
 * enum vr_host_pageout_error - error codes in the VR_HOST_PAGEOUT_ERROR
 * domain. Every message names what failed (the pid, the pidfd, the range).
 * @VR_HOST_PAGEOUT_ERROR_INVALID:	 bad input: a pid <= 0, a range that is
 *					 not page-aligned or wraps around, or
 *					 one the kernel refuses (EINVAL: locked,
 *					 hugetlbfs or PFN-mapped memory).
 * @VR_HOST_PAGEOUT_ERROR_GONE:		 the process does not exist or has
 *					 exited (ESRCH).
 * @VR_HOST_PAGEOUT_ERROR_PERMISSION:	 the caller lacks PTRACE_MODE_READ on
 *					 the target or CAP_SYS_NICE (EPERM,
 *					 EACCES).
 * @VR_HOST_PAGEOUT_ERROR_UNSUPPORTED:	 the kernel lacks the system call
 *					 (ENOSYS).
 * @VR_HOST_PAGEOUT_ERROR_UNMAPPED:	 a range is not (wholly) mapped in the
 *					 process, or the kernel is out of
 *					 memory (ENOMEM).
 * @VR_HOST_PAGEOUT_ERROR_BAD_PIDFD:	 the pidfd is not an open pidfd
 *					 (EBADF).
 * @VR_HOST_PAGEOUT_ERROR_FAILED:	 anything else (the message has errno's
 *					 text), and smaps that cannot be read or
 *					 parsed.
 */
enum vr_host_pageout_error {
	VR_HOST_PAGEOUT_ERROR_INVALID,
	VR_HOST_PAGEOUT_ERROR_GONE,
	VR_HOST_PAGEOUT_ERROR_PERMISSION,
	VR_HOST_PAGEOUT_ERROR_UNSUPPORTED,
	VR_HOST_PAGEOUT_ERROR_UNMAPPED,
	VR_HOST_PAGEOUT_ERROR_BAD_PIDFD,
	VR_HOST_PAGEOUT_ERROR_FAILED,
};

/*
 * Most ranges one process_madvise() call takes: the kernel's UIO_MAXIOV
 * (IOV_MAX in <limits.h>); more is EINVAL.
 */
#define VR_HOST_PAGEOUT_MAX_IOVECS 1024

/*
 * Most bytes one process_madvise() call is given, 1 GiB: the kernel
 * silently truncates a call's ranges to MAX_RW_COUNT (2 GiB - 4 KiB), and
 * a bounded call keeps each step short. More is done in more calls.
 */
#define VR_HOST_PAGEOUT_MAX_CALL_BYTES (1ULL << 30)

/**
 * vr_pidfd_open() - a pidfd for the process @pid (pidfd_open(2)).
 * A pidfd keeps naming that process even when it exits and its pid is
 * reused: open it once per QEMU process and use it for every pageout.
 * Return: the pidfd (close it with close(2)), or -1 with @error
 * (VR_HOST_PAGEOUT_ERROR_*, naming @pid): INVALID for @pid <= 0, GONE for
 * no such process (ESRCH), UNSUPPORTED for a kernel before 5.3 (ENOSYS),
 * PERMISSION (EPERM), FAILED otherwise (e.g. EMFILE).
 */
int vr_pidfd_open(pid_t pid, GError **error);

/**
 * vr_process_madvise_fn - the process_madvise(2) system call, as
 * vr_host_pageout_with() calls it: returns the bytes advised, or -1 with
 * errno set. @data is the caller's.
 */
typedef ssize_t (*vr_process_madvise_fn)(int pidfd, const struct iovec *iov, size_t nr_iov,
					 int advice, unsigned int flags, void *data);

/**
 * vr_host_pageout() - page out the host ranges @ranges (@nr struct iovec,
 * iov_base a host-virtual address of the process, iov_len bytes; e.g. from
 * vr_ram_map_translate()) of the process @pidfd with MADV_PAGEOUT, in the
 * order given, stopping after @max_bytes.
 * @pidfd:	  from vr_pidfd_open().
 * @ranges, @nr: each page-aligned (VR_PAGE_SIZE) in address
 *		  and length, not wrapping around; empty ones are skipped.
 * @max_bytes:	  the quota of this call, bytes: at most this many are
 *		  advised (rounded down to whole pages); 0 advises nothing,
 *		  G_MAXUINT64 means no cap.
 * @advised_bytes: set, on success and on failure, to the bytes the kernel
 *		  accepted: on failure, those before the range that failed.
 *
 * The ranges go to the kernel in calls of at most VR_HOST_PAGEOUT_MAX_IOVECS
 * ranges and VR_HOST_PAGEOUT_MAX_CALL_BYTES bytes. The kernel advises ranges
 * in order and stops at the first that fails, returning the bytes it did
 * (a partial return); the next call then starts right after those bytes, so
 * a range that really fails fails at the start of that call, which reports
 * its errno. A call interrupted by a signal (EINTR) is repeated.
 *
 * The advice is a request: a page the process touches meanwhile, one that
 * is shared with another process, or (without swap) anonymous memory stays
 * resident and is still counted as advised. See the requirements at the top
 * of process-pageout.h.
 *
 * Return: TRUE when every range up to @max_bytes was advised; FALSE with
 * @error (VR_HOST_PAGEOUT_ERROR_*, naming the pidfd and, for a range, its
 * address) otherwise: nothing after the failed range is advised.
 */
gboolean vr_host_pageout(int pidfd, const struct iovec *ranges, guint nr, uint64_t max_bytes,
			 uint64_t *advised_bytes, GError **error);

/**
 * vr_host_pageout_with() - vr_host_pageout() through @madvise_fn (called
 * with @data) instead of the system call: for tests that count the calls or
 * play a kernel's partial returns and errors.
 */
gboolean vr_host_pageout_with(vr_process_madvise_fn madvise_fn, void *data, int pidfd,
			      const struct iovec *ranges, guint nr, uint64_t max_bytes,
			      uint64_t *advised_bytes, GError **error);

/**
 * struct vr_range_usage - how much of a process's address range is in
 * memory, from /proc/<pid>/smaps.
 * @vma_bytes:	 total size of the mappings (VMAs) that overlap the range.
 *		 smaps counts per mapping: when this is larger than the range,
 *		 the figures below include the parts of those mappings outside
 *		 it (for QEMU, guest RAM is usually one mapping per RAM block).
 * @rss_bytes:	 resident (Rss) bytes of those mappings.
 * @swap_bytes:	 their swapped-out (Swap) bytes.
 * @nr_vmas:	 how many mappings overlap the range.
 */
struct vr_range_usage {
	uint64_t vma_bytes;
	uint64_t rss_bytes;
	uint64_t swap_bytes;
	guint nr_vmas;
};

/**
 * vr_smaps_parse_range_usage() - the usage of [@start, @end) (bytes) from
 * the text @text of a /proc/<pid>/smaps. A mapping counts when it overlaps
 * the range; its "Rss:" and "Swap:" lines (in kB) are added up. Pure.
 * Return: FALSE with @error (VR_HOST_PAGEOUT_ERROR_INVALID for
 * @end <= @start; VR_HOST_PAGEOUT_ERROR_FAILED naming the line for a
 * mapping line or a field that does not parse, a value that overflows, or
 * a mapping without Rss or Swap); @usage is then unchanged.
 */
gboolean vr_smaps_parse_range_usage(const char *text, uint64_t start, uint64_t end,
				    struct vr_range_usage *usage, GError **error);

/**
 * vr_smaps_read_range_usage() - vr_smaps_parse_range_usage() of
 * "@procfs/@pid/smaps", read a line at a time (memory does not grow with
 * the number of mappings). Reading smaps walks the page tables of every
 * mapping of the process, so its cost grows with the process's memory: do
 * not poll it often. Errors name the file; a process that is gone is
 * VR_HOST_PAGEOUT_ERROR_GONE.
 */
gboolean vr_smaps_read_range_usage(const char *procfs, pid_t pid, uint64_t start, uint64_t end,
				   struct vr_range_usage *usage, GError **error);

/*
 * Most pagemap entries one read takes (8 bytes each: 32 KiB, 16 MiB of
 * address space): the reader's memory stays bounded whatever the plan.
 */
#define VR_PAGEMAP_CHUNK_ENTRIES 4096U

/**
 * vr_pagemap_open() - open /proc/@pid/pagemap for reading, and check that
 * @pid still is the process @pidfd names (a pid reused between
 * vr_pidfd_open() and here is caught: the pidfd's process must be alive
 * once the file is open). The file stays bound to that process's memory:
 * once it exits, reads return end of file.
 * Return: the file descriptor (close it with close(2)), or -1 with @error
 * naming the pid: GONE (the process has exited), PERMISSION (EACCES, EPERM:
 * PTRACE_MODE_READ is needed), FAILED otherwise.
 */
int vr_pagemap_open(pid_t pid, int pidfd, GError **error);

/**
 * vr_pread_fn - pread(2) as vr_pagemap_read_resident_with() calls it:
 * returns the bytes read, 0 at end of file, or -1 with errno set. @data is
 * the caller's.
 */
typedef ssize_t (*vr_pread_fn)(int fd, void *buf, size_t count, off_t offset, void *data);

/**
 * vr_pagemap_read_resident() - find the resident pages of @ranges (@nr
 * struct iovec of host-virtual addresses of the process @pid, page-aligned
 * in address and length; empty ones skipped), in the order given, from its
 * pagemap file @fd (vr_pagemap_open()), into @rr
 * (vr_resident_runs_add()).
 * @pid:	the process, for messages.
 *
 * Only the entries of @ranges are read, in chunks of at most
 * VR_PAGEMAP_CHUNK_ENTRIES entries, and reading stops as soon as @rr is full
 * (vr_resident_runs_full()): at most one chunk more than the pages looked
 * at. A short read that ends on a whole entry is continued; one that ends
 * inside an entry is an error. A read interrupted by a signal (EINTR) is
 * repeated.
 *
 * Return: TRUE; FALSE with @error naming @pid and the range being read
 * (VR_HOST_PAGEOUT_ERROR_*): INVALID for a range that is not page-aligned
 * or wraps around, or an entry resident-runs refuses; GONE for end of file
 * (the process has exited: its memory is gone) or ESRCH; PERMISSION for
 * EPERM or EACCES; FAILED for a partial entry or any other error. @rr then
 * holds what was found before.
 */
gboolean vr_pagemap_read_resident(int fd, pid_t pid, const struct iovec *ranges, guint nr,
				  struct vr_resident_runs *rr, GError **error);

/**
 * vr_pagemap_read_resident_with() - vr_pagemap_read_resident() through
 * @pread_fn (called with @data) instead of pread(2): for tests that play
 * short reads, end of file and errors.
 */
gboolean vr_pagemap_read_resident_with(vr_pread_fn pread_fn, void *data, int fd, pid_t pid,
				       const struct iovec *ranges, guint nr,
				       struct vr_resident_runs *rr, GError **error);
