/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QEMU monitor of a libvirt domain: a transport of vr_qemu_monitor
 * (qmp/qemu-monitor.h) over libvirt's QEMU monitor passthrough,
 * virDomainQemuMonitorCommand. QEMU's replies are checked as our own QMP
 * client checks them (vr_qmp_parse_message()).
 */
#pragma once

#include <libvirt/libvirt.h>

#include "qmp/qemu-monitor.h"

/**
 * vr_qemu_monitor_new_libvirt() - a monitor over libvirt's
 * virDomainQemuMonitorCommand for @dom (the monitor takes its own reference
 * with virDomainRef()).
 *
 * The timeout of vr_qemu_monitor_execute() cannot apply here:
 * virDomainQemuMonitorCommand has none (libvirt waits for the domain's job
 * lock, up to 30 s, then for QEMU for as long as it takes). The daemon
 * therefore calls it from the domain's worker only, whose watchdog
 * marks the domain degraded once a command runs past the monitor's
 * @timeout_ms (qmp/monitor-worker.h). libvirt's connection is thread-safe, and
 * the monitor's own domain reference keeps it alive. libvirt's failures become VR_QEMU_MONITOR_ERROR_LIBVIRT naming
 * the domain; libvirt also reports them to its error handler (by default on
 * stderr: the daemon sets virSetErrorFunc()).
 * Return: owned monitor.
 */
struct vr_qemu_monitor *vr_qemu_monitor_new_libvirt(virDomainPtr dom);
