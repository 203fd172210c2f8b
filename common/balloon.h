/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The balloon action's policy: the target of a QEMU guest's virtio balloon
 * for one quota window.
 *
 * vreclaimd takes memory from a guest by inflating its balloon: QMP
 * `balloon` with a target (the guest's memory minus what the balloon should
 * hold); `query-balloon` says where it is now ("actual"). The daemon reads
 * that, the guest agent's MemAvailable, the domain's share of the fleet quota
 * and whether the host needs memory at the edge, and asks vr_balloon_decide(),
 * which is pure: no I/O, no clock.
 *
 * The target never goes below the domain's guaranteed memory, nor into
 * memory the guest uses (it keeps its used memory plus a reserve); a guest
 * short of memory gets it back at once; once the host no longer needs memory,
 * the balloon deflates step by step back to the guest's full size.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#define VR_BALLOON_ERROR (vr_balloon_error_quark())
GQuark vr_balloon_error_quark(void);

/**
 * enum vr_balloon_error - error codes in the VR_BALLOON_ERROR domain.
 * @VR_BALLOON_ERROR_INVALID: the input cannot be (the message names the field
 *	and its value).
 */
enum vr_balloon_error {
	VR_BALLOON_ERROR_INVALID,
};

/*
 * The balloon takes whole MiB: the bytes taken in a window are rounded down
 * to a multiple of this, so QEMU is not asked for odd sizes (it balloons in
 * 4 KiB pages) and a window never takes a few stray bytes.
 */
#define VR_BALLOON_GRANULE_BYTES (1ULL << 20)

/**
 * struct vr_balloon_input - what the balloon action decides from, one window.
 * @guest_bytes:	the guest's memory size (the largest balloon target:
 *			an empty balloon), bytes; > 0.
 * @actual_bytes:	the balloon's current "actual" from QEMU's
 *			query-balloon (@guest_bytes minus what the balloon
 *			holds), bytes; at most @guest_bytes.
 * @guest_avail_known:	whether @guest_avail_bytes is known (the guest agent
 *			sent its memory stats).
 * @guest_avail_bytes:	memory available in the guest now (its MemAvailable),
 *			bytes; at most @guest_bytes. Ignored unless
 *			@guest_avail_known.
 * @guaranteed_bytes:	the domain's guaranteed memory, bytes: the target
 *			never goes below it. At most @guest_bytes.
 * @share_bytes:	the domain's share of the fleet quota this window
 *			(vr_fleet_distribute()), bytes: the most the balloon
 *			takes this window (0: it takes nothing).
 * @host_needs_memory:	whether the host needs memory now
 *			(vr_host_needs_memory()).
 * @reserve_bytes:	memory the guest always keeps available on top of
 *			what it uses, bytes: the balloon takes only from
 *			MemAvailable beyond it, and gives back at once what
 *			the guest misses of it.
 * @deflate_step_bytes:	the most bytes given back to the guest per window
 *			once the host no longer needs memory (0: all at once).
 */
struct vr_balloon_input {
	uint64_t guest_bytes;
	uint64_t actual_bytes;
	bool guest_avail_known;
	uint64_t guest_avail_bytes;
	uint64_t guaranteed_bytes;
	uint64_t share_bytes;
	bool host_needs_memory;
	uint64_t reserve_bytes;
	uint64_t deflate_step_bytes;
};

/**
 * enum vr_balloon_reason - why the target is what it is.
 * @VR_BALLOON_HOLD:		no change: the target is the current actual.
 * @VR_BALLOON_INFLATE:		the balloon takes memory, within the share
 *				(target below actual).
 * @VR_BALLOON_DEFLATE_GUARANTEED: actual is below the guaranteed memory: the
 *				target is the guaranteed memory.
 * @VR_BALLOON_DEFLATE_GUEST:	the guest's available memory fell below the
 *				reserve: it gets back what it misses.
 * @VR_BALLOON_DEFLATE_HOST:	the host no longer needs memory: the balloon
 *				gives back up to a step.
 *
 * A DEFLATE reason always comes with a target above actual, INFLATE with one
 * below, HOLD with the target equal to actual.
 */
enum vr_balloon_reason {
	VR_BALLOON_HOLD,
	VR_BALLOON_INFLATE,
	VR_BALLOON_DEFLATE_GUARANTEED,
	VR_BALLOON_DEFLATE_GUEST,
	VR_BALLOON_DEFLATE_HOST,
};

/**
 * vr_balloon_reason_name() - "hold", "inflate", "deflate-guaranteed",
 * "deflate-guest", "deflate-host"; "unknown" for any other value. Static
 * strings.
 */
const char *vr_balloon_reason_name(enum vr_balloon_reason reason);

/**
 * vr_balloon_decide() - the balloon target for this window.
 * @in:			the window's input; borrowed.
 * @target_bytes:	out: the balloon target to ask QEMU for, bytes,
 *			from @in->guaranteed_bytes to @in->guest_bytes.
 * @reason:		out: why (may be NULL).
 * @error:		return location for an error, or NULL.
 *
 * First, the deflations, each a floor under the target; when several apply,
 * the target is the highest floor and the reason the first of them in this
 * order that asks for it:
 *
 * 1. actual below guaranteed: at least the guaranteed memory
 *    (VR_BALLOON_DEFLATE_GUARANTEED).
 * 2. the guest's available memory known and below the reserve: at least
 *    actual + (reserve - available), at most @in->guest_bytes: the guest gets
 *    back what it misses at once, whatever the host needs
 *    (VR_BALLOON_DEFLATE_GUEST).
 * 3. the host does not need memory: at least actual + the deflate step, at
 *    most @in->guest_bytes; all of it with a step of 0
 *    (VR_BALLOON_DEFLATE_HOST).
 *
 * So a guest short of memory never gets less back than it would if it were
 * not (the floors combine rather than the first one winning). A floor only
 * counts when it is above actual.
 *
 * Otherwise, when the host needs memory and the share is above 0, the
 * balloon takes the smallest of the share, the room (available - reserve:
 * memory the guest does not use, beyond its reserve) and actual - guaranteed,
 * rounded down to whole VR_BALLOON_GRANULE_BYTES: target = actual - take
 * (VR_BALLOON_INFLATE). When the guest's available memory is not known the
 * room is 0: the balloon never inflates blind into a guest whose use it
 * cannot see. A take that rounds to 0 holds.
 *
 * Otherwise the target is actual (VR_BALLOON_HOLD). Sums saturate: no input
 * overflows. Pure.
 *
 * Return: TRUE with @target_bytes and @reason set; FALSE with @error
 * (VR_BALLOON_ERROR_INVALID, naming the field and its value) and the outputs
 * untouched for input that cannot be: @in->guest_bytes 0, actual, a known
 * available memory or the guaranteed memory above @in->guest_bytes.
 */
gboolean vr_balloon_decide(const struct vr_balloon_input *in, uint64_t *target_bytes,
			   enum vr_balloon_reason *reason, GError **error);

/**
 * vr_balloon_offer_bytes() - what the balloon could take from the domain this
 * window, bytes, for the fleet's distribution (vr_fleet_distribute()).
 * @in:	the window's input (@in->share_bytes and @in->host_needs_memory are
 *	not used); borrowed. Not validated: call vr_balloon_decide() too.
 *
 * 0 unless the guest's available memory is known; otherwise
 * max(0, available - reserve), capped by max(0, actual - guaranteed), rounded
 * down to whole VR_BALLOON_GRANULE_BYTES: a share of exactly the offer is then
 * taken in full by vr_balloon_decide() when the host needs memory and the
 * guest is not short.
 *
 * The fleet should rank these bytes as the coldest possible
 * (cold score VR_MAX_SCORE): memory available in the guest is memory it does
 * not use, colder than any idle page a scheme could select.
 */
uint64_t vr_balloon_offer_bytes(const struct vr_balloon_input *in);
