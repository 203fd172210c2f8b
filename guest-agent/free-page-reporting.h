/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Is free page reporting active in this guest? Memory the agent reclaims
 * only reaches the host when the guest's virtio balloon driver reports free
 * blocks to QEMU (-device virtio-balloon-pci,free-page-reporting=on, libvirt
 * <memballoon model='virtio' freePageReporting='on'/>). It is active when a
 * virtio device in sysfs bus/virtio/devices/
 *   - has device id 0x0005 (`device`, a virtio balloon),
 *   - is bound to the virtio_balloon driver (the `driver` symlink), and
 *   - negotiated VIRTIO_BALLOON_F_REPORTING: `features` is a string of '0'
 *     and '1' with character i for feature bit i, and bit 5 is '1'.
 * The kernel's reporting order (page_reporting's `page_reporting_order`
 * module parameter) tells the size of the blocks it reports.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/* VIRTIO_ID_BALLOON, the balloon's virtio device id. */
#define VR_VIRTIO_ID_BALLOON 5
/* VIRTIO_BALLOON_F_REPORTING, the free page reporting feature bit. */
#define VR_VIRTIO_BALLOON_F_REPORTING 5
/* Orders above this are not real block sizes (the kernel's MAX_PAGE_ORDER
 * is at most 15); page_reporting_order reads 4294967295 (-1 as unsigned)
 * until a reporting device registered. */
#define VR_FPR_MAX_ORDER 20

/* Room for the reasons of a few devices, bytes with the NUL. */
#define VR_FPR_REASON_LEN 512
/* A virtio device's name in sysfs, "virtio<N>", bytes with the NUL. */
#define VR_FPR_DEVICE_LEN 32

/**
 * struct vr_free_page_reporting - what the probe found; plain data, nothing
 * to free.
 * @active:	a virtio balloon bound to virtio_balloon negotiated free page
 *		reporting.
 * @order:	the page order reported blocks have (9 = 2 MiB with 4 KiB
 *		pages), from page_reporting_order; -1 when unknown (no such
 *		parameter, unreadable, or not set yet).
 * @device:	the balloon that reports (e.g. "virtio3"); "" when none.
 * @reason:	why reporting is not active, one sentence per balloon device
 *		or about their absence, joined with "; " (cut at
 *		VR_FPR_REASON_LEN - 1 bytes); "" when active.
 */
struct vr_free_page_reporting {
	bool active;
	int order;
	char device[VR_FPR_DEVICE_LEN];
	char reason[VR_FPR_REASON_LEN];
};

/**
 * vr_free_page_reporting_probe() - look at @paths->sysfs for a reporting
 * balloon and the reporting order; fill @out. Never fails: anything missing
 * or unreadable is a reason in @out. Return: @out->active.
 */
bool vr_free_page_reporting_probe(const struct vr_agent_paths *paths,
				  struct vr_free_page_reporting *out);

/* The largest order page_reporting_order takes: MAX_PAGE_ORDER, 10 on x86
 * and on arm64 with 4 KiB pages (the kernel refuses more). */
#define VR_FPR_SET_MAX_ORDER 10

/**
 * vr_free_page_reporting_set_order() - make free page reporting hand the host
 * free blocks of @order pages and larger (2^@order * 4 KiB): write it to
 * @paths->sysfs/module/page_reporting/parameters/page_reporting_order, which
 * the kernel reads at every reporting pass. A lower order returns memory that
 * reclaim freed here and there without waiting for compaction to make whole
 * 2 MiB blocks of it, at the cost of more, smaller reports (one madvise
 * call each in QEMU) and of splitting the host's huge pages.
 * @previous:	the order before, -1 when it could not be read (to restore).
 * Errors: VR_AGENT_ERROR_INVALID for @order outside 0..VR_FPR_SET_MAX_ORDER,
 * VR_AGENT_ERROR_UNSUPPORTED without the parameter, VR_AGENT_ERROR_IO when
 * the write is refused (naming the file and the value).
 */
gboolean vr_free_page_reporting_set_order(const struct vr_agent_paths *paths, int order,
					  int *previous, GError **error);

/* Most bytes of /proc/buddyinfo read: about 100 bytes a zone, and even
 * VR_BUDDYINFO_MAX_LINES lines of 16 counts of 20 digits fit. */
#define VR_BUDDYINFO_MAX_BYTES (512 * 1024)

/**
 * vr_reportable_free_read() - the guest's free memory that free page
 * reporting hands (or has handed) to the host: the bytes in free buddy
 * blocks of @order pages and larger, summed over the nodes and zones of
 * @paths->procfs/buddyinfo (vr_buddyinfo_parse()). Free memory in smaller
 * blocks never reaches the host.
 * @order:	the reporting order (struct vr_free_page_reporting.order).
 * @page_size:	the guest kernel's page size, bytes (> 0).
 * @bytes:	set to that memory, bytes.
 * Return: FALSE with @error naming the file: the reading error, or
 * VR_AGENT_ERROR_INVALID with the parser's message (the line and the
 * token); @bytes is then unchanged.
 */
gboolean vr_reportable_free_read(const struct vr_agent_paths *paths, guint order,
				 uint64_t page_size, uint64_t *bytes, GError **error);

/**
 * vr_kernel_release() - the running kernel's release (`uname -r`), the
 * first line of @paths->procfs/sys/kernel/osrelease without surrounding
 * whitespace; "unknown" when it cannot be read or is empty. Return: owned
 * string (g_free).
 */
char *vr_kernel_release(const struct vr_agent_paths *paths);
