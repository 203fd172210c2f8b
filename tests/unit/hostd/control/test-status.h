/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon status (hostd/domain-status.h) that the control socket's and
 * the metrics' tests serve: every member set, so that encoders and
 * renderers have something to show.
 */
#pragma once

#include <glib.h>
#include <string.h>

#include "domain-status.h"

/* @d as a daemon up for 1 h 2 min 3.999 s (the metrics show 3723 s). */
static inline void daemon_fill(struct vr_daemon_status *d)
{
	memset(d, 0, sizeof(*d));
	g_strlcpy(d->version, "0.1.0", sizeof(d->version));
	d->uptime_ms = 3723999;
	g_strlcpy(d->libvirt_uri, "qemu:///system", sizeof(d->libvirt_uri));
	d->libvirt_connected = TRUE;
	d->libvirt_degraded = TRUE;
	g_strlcpy(d->libvirt_degraded_reason, "libvirt did not answer list-domains within 5 s",
		  sizeof(d->libvirt_degraded_reason));
	d->libvirt_stalls = 3;
	d->host_needs_memory = TRUE;
	d->free_mem_rate_permille = 62;
	g_strlcpy(d->host_memory_state, "below-mid", sizeof(d->host_memory_state));
	d->fleet_quota_bytes = 256 * (1ULL << 20);
	d->reloads = 2;
	d->ticks = 3600;
}
