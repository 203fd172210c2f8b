/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading and writing the kernel's small text files (sysfs, procfs, cgroupfs)
 * with errors that name the file and the value. Every read is bounded.
 *
 * Also what every reader of libvrkernel shares: where the kernel's files are
 * (struct vr_agent_paths: mount points a test points at a fake tree) and the
 * error domain the readers report in (VR_AGENT_ERROR).
 */
#pragma once

#include <glib.h>
#include <stdint.h>

/**
 * struct vr_agent_paths - where the agent (and the host's DAMON source) finds
 * the kernel's files.
 * @sysfs:	sysfs mount point ("/sys").
 * @procfs:	procfs mount point ("/proc").
 * @cgroup:	cgroup v2 mount point ("/sys/fs/cgroup").
 * All owned by whoever owns the struct; never NULL.
 */
struct vr_agent_paths {
	const char *sysfs;
	const char *procfs;
	const char *cgroup;
};

#define VR_AGENT_ERROR (vr_agent_error_quark())
GQuark vr_agent_error_quark(void);

/**
 * enum vr_agent_error - error codes in the VR_AGENT_ERROR domain, the
 * domain of libvrkernel's readers and of the agent's backends.
 * @VR_AGENT_ERROR_UNSUPPORTED:	the kernel lacks what the backend needs.
 * @VR_AGENT_ERROR_IO:		a kernel file is missing or refused a value;
 *				the message names the file and the value.
 * @VR_AGENT_ERROR_INVALID:	the kernel returned something unparsable, or
 *				the policy cannot be expressed by the backend.
 * @VR_AGENT_ERROR_BUSY:	another user holds the mechanism (EBUSY).
 */
enum vr_agent_error {
	VR_AGENT_ERROR_UNSUPPORTED,
	VR_AGENT_ERROR_IO,
	VR_AGENT_ERROR_INVALID,
	VR_AGENT_ERROR_BUSY,
};

/* Largest file vr_kfile_read() returns whole, bytes; /proc/iomem and a
 * tried_regions listing stay far below this. */
#define VR_KFILE_MAX_BYTES (1024 * 1024)

/**
 * vr_kfile_write() - write @value to the file @path, as one write(2) the way
 * `echo VALUE > FILE` does (O_TRUNC: ignored by sysfs, and it makes a plain
 * file in a test's fake tree hold exactly the last value). Errors: VR_AGENT_ERROR_IO naming @path, @value and
 * the errno text; VR_AGENT_ERROR_BUSY when the kernel answers EBUSY.
 */
gboolean vr_kfile_write(const char *path, const char *value, GError **error);

/**
 * vr_kfile_write_errno() - vr_kfile_write() that also tells why a write
 * failed: *@errno_out (when not NULL) is the errno of the failed open(2) or
 * write(2), and 0 on success or on a short write. For files whose errno
 * carries meaning, e.g. EAGAIN from memory.reclaim ("could not reclaim all
 * of it").
 */
gboolean vr_kfile_write_errno(const char *path, const char *value, int *errno_out, GError **error);

/** vr_kfile_write_u64() - vr_kfile_write() of @value in decimal. */
gboolean vr_kfile_write_u64(const char *path, uint64_t value, GError **error);

/**
 * vr_kfile_read() - the contents of @path, at most @max_bytes (<=
 * VR_KFILE_MAX_BYTES); a longer file is an error. Return: owned string, or
 * NULL with @error naming @path.
 */
char *vr_kfile_read(const char *path, gsize max_bytes, GError **error);

/**
 * vr_kfile_read_u64() - read @path as one decimal unsigned number with
 * optional surrounding whitespace. Errors name @path and what it held.
 */
gboolean vr_kfile_read_u64(const char *path, uint64_t *out, GError **error);

/**
 * vr_kfile_read_line() - the first line of @path without its newline
 * (bounded to 4 KiB). Return: owned string or NULL with @error.
 */
char *vr_kfile_read_line(const char *path, GError **error);
