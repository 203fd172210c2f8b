/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The balloon action's policy: deflation floors, the take within the share,
 * and the domain's offer to the fleet. See balloon.h.
 */
#include "balloon.h"

/* clang-format off */
G_DEFINE_QUARK(vr-balloon-error-quark, vr_balloon_error)
/* clang-format on */

static const char *const reason_names[] = {
	[VR_BALLOON_HOLD] = "hold",
	[VR_BALLOON_INFLATE] = "inflate",
	[VR_BALLOON_DEFLATE_GUARANTEED] = "deflate-guaranteed",
	[VR_BALLOON_DEFLATE_GUEST] = "deflate-guest",
	[VR_BALLOON_DEFLATE_HOST] = "deflate-host",
};

const char *vr_balloon_reason_name(enum vr_balloon_reason reason)
{
	return (guint)reason < G_N_ELEMENTS(reason_names) ? reason_names[reason] : "unknown";
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return b > G_MAXUINT64 - a ? G_MAXUINT64 : a + b;
}

static uint64_t sub_floor0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static gboolean invalid(GError **error, const char *field, uint64_t value, const char *allowed)
{
	g_set_error(error, VR_BALLOON_ERROR, VR_BALLOON_ERROR_INVALID,
		    "balloon: %s = %" G_GUINT64_FORMAT ": %s", field, value, allowed);
	return FALSE;
}

static gboolean validate(const struct vr_balloon_input *in, GError **error)
{
	if (in->guest_bytes == 0)
		return invalid(error, "guest_bytes", 0, "a guest has memory: it must be above 0");
	if (in->actual_bytes > in->guest_bytes)
		return invalid(error, "actual_bytes", in->actual_bytes,
			       "it must be at most guest_bytes");
	if (in->guest_avail_known && in->guest_avail_bytes > in->guest_bytes)
		return invalid(error, "guest_avail_bytes", in->guest_avail_bytes,
			       "it must be at most guest_bytes");
	if (in->guaranteed_bytes > in->guest_bytes)
		return invalid(error, "guaranteed_bytes", in->guaranteed_bytes,
			       "it must be at most guest_bytes");
	return TRUE;
}

/*
 * Raises *@target to @floor when it is higher, with @why as the reason: the
 * floors are offered in order of precedence, so a tie keeps the earlier one.
 */
static void raise_floor(uint64_t floor, enum vr_balloon_reason why, uint64_t *target,
			enum vr_balloon_reason *reason)
{
	if (floor > *target) {
		*target = floor;
		*reason = why;
	}
}

/* Memory the guest does not use beyond its reserve; 0 when unknown. */
static uint64_t room_bytes(const struct vr_balloon_input *in)
{
	if (!in->guest_avail_known)
		return 0;
	return sub_floor0(in->guest_avail_bytes, in->reserve_bytes);
}

static uint64_t round_granule(uint64_t bytes)
{
	return bytes & ~(VR_BALLOON_GRANULE_BYTES - 1);
}

gboolean vr_balloon_decide(const struct vr_balloon_input *in, uint64_t *target_bytes,
			   enum vr_balloon_reason *reason, GError **error)
{
	enum vr_balloon_reason why = VR_BALLOON_HOLD;
	uint64_t target = in->actual_bytes;

	if (!validate(in, error))
		return FALSE;

	raise_floor(in->guaranteed_bytes, VR_BALLOON_DEFLATE_GUARANTEED, &target, &why);
	if (in->guest_avail_known && in->guest_avail_bytes < in->reserve_bytes) {
		uint64_t missing = in->reserve_bytes - in->guest_avail_bytes;

		raise_floor(MIN(in->guest_bytes, add_sat(in->actual_bytes, missing)),
			    VR_BALLOON_DEFLATE_GUEST, &target, &why);
	}
	if (!in->host_needs_memory) {
		uint64_t step = in->deflate_step_bytes;

		raise_floor(step ? MIN(in->guest_bytes, add_sat(in->actual_bytes, step)) :
				   in->guest_bytes,
			    VR_BALLOON_DEFLATE_HOST, &target, &why);
	}

	if (why == VR_BALLOON_HOLD && in->host_needs_memory) {
		/* The offer is whole granules, so is the smaller of it and the share. */
		uint64_t take = round_granule(MIN(in->share_bytes, vr_balloon_offer_bytes(in)));

		if (take) {
			target = in->actual_bytes - take;
			why = VR_BALLOON_INFLATE;
		}
	}

	*target_bytes = target;
	if (reason)
		*reason = why;
	return TRUE;
}

uint64_t vr_balloon_offer_bytes(const struct vr_balloon_input *in)
{
	uint64_t room = room_bytes(in);

	return round_granule(MIN(room, sub_floor0(in->actual_bytes, in->guaranteed_bytes)));
}
