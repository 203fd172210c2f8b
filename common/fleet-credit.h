/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's fleet credit: how much of the fleet quota it is trusted with,
 * from what it actually gave back (issue 16).
 *
 * A domain's share of the fleet quota comes from its agent's picture, which
 * the guest writes: an agent that calls all its memory cold would get the
 * whole quota and give nothing. The host measures what a share bought: the
 * resident size (RSS) of the domain's QEMU process. Over the recent windows
 * the RSS a domain released is compared with the share it was granted; a
 * domain whose RSS does not fall loses credit, window after window, down to
 * a floor, and gets it back as soon as it gives back again.
 * vr_fleet_distribute() serves the domains of full credit first (struct
 * vr_fleet_domain, @credit_permille).
 *
 * Pure, like the rest of common/: the caller passes the time, the RSS it
 * read and the share it granted (snapshots in, a credit out).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Full credit, per-mille: the domain is served as if there were no credit. */
#define VR_FLEET_CREDIT_FULL_PERMILLE 1000U

/*
 * The lowest credit, per-mille: 1/8. A domain at the floor still gets an
 * eighth of what it would get before the others are served, so that it can
 * show it gives back again (a domain with no share shows nothing).
 */
#define VR_FLEET_CREDIT_FLOOR_PERMILLE 125U

/*
 * A credit window, us: 10 s. What a share buys shows in the RSS late: the
 * guest's DAMON pages out over its quota window, free page reporting hands
 * the freed 2 MiB blocks to the host about 2 s after they are free, and a
 * TCG guest pages out a few MiB per second (tests/e2e/libvirt-fleet).
 */
#define VR_FLEET_CREDIT_WINDOW_US ((int64_t)10 * 1000 * 1000)

/*
 * The windows a judgement looks at: 3 (30 s). Its oldest must have had a
 * grant, so what a grant buys has at least two whole windows (20 s) to show
 * in the RSS before the domain is judged on it.
 */
#define VR_FLEET_CREDIT_HORIZON_WINDOWS 3

/*
 * A domain gives back when the RSS it released over the horizon is at least
 * the bytes it was granted divided by this: 128 (0.8%). A share is what the
 * guest's DAMON may try, and it charges whole regions, free memory and pages
 * already on their way to swap included: an honest guest releases much less
 * than its share (a TCG guest in tests/e2e/libvirt-fleet released about 5%
 * of a 32 MiB/s share while it had cold memory: 200 MiB in 50-60 s, of which
 * 35-70% reached the host). A lying guest releases nothing; the divisor
 * leaves ten times the margin to an honest but slow guest.
 */
#define VR_FLEET_CREDIT_RETURN_DIVISOR 128U

/*
 * A horizon with fewer granted bytes than this says nothing (no judgement,
 * the credit stays): 16 MiB, eight 2 MiB blocks of free page reporting.
 */
#define VR_FLEET_CREDIT_MIN_GRANT_BYTES ((uint64_t)16 << 20)

/**
 * struct vr_fleet_credit_window - one credit window of a domain.
 * @nr:			the window's number since the credit started.
 * @granted_bytes:	the share granted in it, bytes (saturating).
 * @rss_start_bytes:	the domain's RSS when it started, bytes.
 * @used:		whether the slot holds a window.
 */
struct vr_fleet_credit_window {
	int64_t nr;
	uint64_t granted_bytes;
	uint64_t rss_start_bytes;
	bool used;
};

/**
 * struct vr_fleet_credit - one domain's fleet credit.
 * @credit_permille:	the credit, VR_FLEET_CREDIT_FLOOR_PERMILLE..
 *			VR_FLEET_CREDIT_FULL_PERMILLE.
 * @granted_bytes:	bytes granted over the horizon of the last
 *			judgement.
 * @released_bytes:	RSS released over the same horizon, bytes (0 when
 *			the RSS grew).
 * @judgements:		windows judged.
 * @failed:		of @judgements, those in which the domain did not
 *			give back.
 *
 * Plain data: embed it; set it up with vr_fleet_credit_init().
 */
struct vr_fleet_credit {
	uint32_t credit_permille;
	uint64_t granted_bytes;
	uint64_t released_bytes;
	uint64_t judgements;
	uint64_t failed;
	/* private: */
	bool started;
	int64_t origin_us;
	int64_t last_us;
	struct vr_fleet_credit_window windows[VR_FLEET_CREDIT_HORIZON_WINDOWS];
};

/** vr_fleet_credit_init() - full credit, nothing seen yet. */
void vr_fleet_credit_init(struct vr_fleet_credit *c);

/**
 * vr_fleet_credit_update() - one observation of a domain.
 * @c:			its credit; updated.
 * @now_us:		monotonic time, us. A time before the last one (a
 *			clock that went back) forgets the windows (the credit
 *			stays).
 * @rss_bytes:		its QEMU process's resident size now, as the host
 *			reads it, bytes.
 * @share_bytes:	the share of the fleet quota it held since the last
 *			observation, bytes per @share_window_us.
 * @share_window_us:	the fleet quota's window, us (0 is read as 1 s).
 *
 * The time since the last observation (at most a credit window) at
 * @share_bytes per @share_window_us is granted to the current window.
 * Windows are VR_FLEET_CREDIT_WINDOW_US long from the first observation;
 * when one ends, the credit is judged over the last
 * VR_FLEET_CREDIT_HORIZON_WINDOWS windows, if the oldest of them had a
 * grant and they granted at least VR_FLEET_CREDIT_MIN_GRANT_BYTES: the
 * domain gave back when its RSS fell from the oldest window's start to now
 * by at least the granted bytes / VR_FLEET_CREDIT_RETURN_DIVISOR. Then its
 * credit doubles (up to full); otherwise it halves (down to the floor). So a
 * domain that gives nothing falls from full credit to the floor in three
 * judged windows, the first judged 30 s after its first grant; one that
 * gives back gets full credit again within three. Pure; O(horizon).
 *
 * Return: true when a window was judged (the credit may have changed).
 */
bool vr_fleet_credit_update(struct vr_fleet_credit *c, int64_t now_us, uint64_t rss_bytes,
			    uint64_t share_bytes, uint64_t share_window_us);
