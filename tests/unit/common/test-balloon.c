/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the balloon action's policy (common/balloon.c): the target of
 * a guest's balloon for one window (the deflation floors: guaranteed memory,
 * the guest's reserve, the host no longer needing memory; the take within the
 * share, the room and the guaranteed memory, in whole MiB), the input it
 * refuses, and the domain's offer to the fleet.
 *
 * Pure functions on struct literals. Sizes in MiB (2^20 bytes) unless a name
 * says otherwise. Parameter structs hold no pointers (Criterion re-executes
 * the binary for each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>

#include "balloon.h"
#include "test-messages.h"

#define MIB  (1ULL << 20)
#define M(x) ((uint64_t)(x)*MIB)

/*
 * An input, in the order of struct vr_balloon_input: guest, actual, whether
 * the guest's available memory is known, available, guaranteed, share,
 * whether the host needs memory, reserve, deflate step. All in bytes.
 */
#define IN(guest, actual, known, avail, guaranteed, share, needs, reserve, step)                   \
	{                                                                                          \
		.guest_bytes = (guest), .actual_bytes = (actual), .guest_avail_known = (known),    \
		.guest_avail_bytes = (avail), .guaranteed_bytes = (guaranteed),                    \
		.share_bytes = (share), .host_needs_memory = (needs), .reserve_bytes = (reserve),  \
		.deflate_step_bytes = (step)                                                       \
	}

/* Most rows: a 4 GiB guest, 1 GiB guaranteed, a 256 MiB reserve. */
#define GUEST	    M(4096)
#define GUAR	    M(1024)
#define RESERVE	    M(256)
#define NEEDS	    true
#define NO_NEED	    false
#define KNOWN	    true
#define UNKNOWN	    false
#define ALL_AT_ONCE 0

TestSuite(balloon, .description = "vr_balloon_decide(), vr_balloon_offer_bytes()");

/* Decides @in, asserting that it is accepted. */
static uint64_t decide_ok(const struct vr_balloon_input *in, enum vr_balloon_reason *reason,
			  const char *what)
{
	g_autoptr(GError) err = NULL;
	uint64_t target = 0;

	cr_assert(vr_balloon_decide(in, &target, reason, &err), "%s: should be accepted: %s", what,
		  err ? err->message : "?");
	return target;
}

/* ------------------------------------------------------------------------- */
/* The target                                                                */
/* ------------------------------------------------------------------------- */

/*
 * Where the target may go, for a 4 GiB guest with 1 GiB guaranteed:
 *
 *   0        guaranteed         used + reserve        actual           guest
 *   |------------|------------------|--------------------|----------------|
 *     never here       never inflated into   <- take: min(share, room,     ->
 *     (deflate to it)  (deflate to it)          actual - guaranteed)   deflate-host
 *                                               in whole MiB           step by step
 *
 * room = available - reserve (0 when available is unknown). Each row: the
 * input, the expected target and reason.
 */
struct decide_case {
	char name[96];
	struct vr_balloon_input in;
	uint64_t want_target;
	enum vr_balloon_reason want_reason;
};

static struct decide_case decide_cases[] = {
	/* 1. Guaranteed memory. */
	{ "below guaranteed: up to it, though the host needs memory",
	  IN(GUEST, M(512), KNOWN, M(400), GUAR, M(1000), NEEDS, RESERVE, 0), GUAR,
	  VR_BALLOON_DEFLATE_GUARANTEED },
	{ "1 byte below guaranteed: up to it",
	  IN(GUEST, GUAR - 1, KNOWN, M(400), GUAR, M(1000), NEEDS, RESERVE, 0), GUAR,
	  VR_BALLOON_DEFLATE_GUARANTEED },
	{ "at guaranteed: nothing to take, holds",
	  IN(GUEST, GUAR, KNOWN, M(1000), GUAR, M(100), NEEDS, RESERVE, 0), GUAR, VR_BALLOON_HOLD },
	{ "below guaranteed, guest short by more: the guest's floor is higher",
	  IN(GUEST, M(800), KNOWN, 0, GUAR, 0, NEEDS, RESERVE, 0), M(800 + 256),
	  VR_BALLOON_DEFLATE_GUEST },
	{ "below guaranteed, guest short by less: guaranteed is higher",
	  IN(GUEST, M(800), KNOWN, M(200), GUAR, 0, NEEDS, RESERVE, 0), GUAR,
	  VR_BALLOON_DEFLATE_GUARANTEED },
	{ "below guaranteed, host step smaller: guaranteed",
	  IN(GUEST, M(512), KNOWN, M(400), GUAR, 0, NO_NEED, RESERVE, M(256)), GUAR,
	  VR_BALLOON_DEFLATE_GUARANTEED },
	{ "below guaranteed, host step larger: the step",
	  IN(GUEST, M(512), KNOWN, M(400), GUAR, 0, NO_NEED, RESERVE, M(1024)), M(1536),
	  VR_BALLOON_DEFLATE_HOST },
	{ "below guaranteed, host step to exactly guaranteed: the tie is guaranteed",
	  IN(GUEST, M(512), KNOWN, M(400), GUAR, 0, NO_NEED, RESERVE, M(512)), GUAR,
	  VR_BALLOON_DEFLATE_GUARANTEED },
	{ "guaranteed is the whole guest: back to full",
	  IN(GUEST, M(3000), KNOWN, M(400), GUEST, M(100), NEEDS, RESERVE, 0), GUEST,
	  VR_BALLOON_DEFLATE_GUARANTEED },

	/* 2. The guest's reserve. */
	{ "available below reserve: the guest gets back what it misses",
	  IN(GUEST, M(3000), KNOWN, M(100), GUAR, M(500), NEEDS, RESERVE, 0), M(3000 + 156),
	  VR_BALLOON_DEFLATE_GUEST },
	{ "available 1 byte below reserve: 1 byte back, not rounded",
	  IN(GUEST, M(3000), KNOWN, RESERVE - 1, GUAR, M(500), NEEDS, RESERVE, 0), M(3000) + 1,
	  VR_BALLOON_DEFLATE_GUEST },
	{ "available exactly at reserve: no room, holds",
	  IN(GUEST, M(3000), KNOWN, RESERVE, GUAR, M(500), NEEDS, RESERVE, 0), M(3000),
	  VR_BALLOON_HOLD },
	{ "missing more than the balloon holds: back to full",
	  IN(GUEST, M(4000), KNOWN, 0, GUAR, M(500), NEEDS, RESERVE, 0), GUEST,
	  VR_BALLOON_DEFLATE_GUEST },
	{ "short but the balloon is empty: nothing to give back, holds",
	  IN(GUEST, GUEST, KNOWN, 0, GUAR, M(500), NEEDS, RESERVE, 0), GUEST, VR_BALLOON_HOLD },
	{ "short, host no longer needs memory, step smaller: all it misses at once",
	  IN(GUEST, M(3000), KNOWN, M(100), GUAR, 0, NO_NEED, RESERVE, M(64)), M(3000 + 156),
	  VR_BALLOON_DEFLATE_GUEST },
	{ "short, host no longer needs memory, step 0: the host gives more",
	  IN(GUEST, M(3000), KNOWN, M(100), GUAR, 0, NO_NEED, RESERVE, ALL_AT_ONCE), GUEST,
	  VR_BALLOON_DEFLATE_HOST },
	{ "short, available unknown: cannot see it, holds without inflating",
	  IN(GUEST, M(3000), UNKNOWN, 0, GUAR, M(500), NEEDS, RESERVE, 0), M(3000),
	  VR_BALLOON_HOLD },
	{ "short, reserve larger than 2^64 - actual: saturates at the guest",
	  IN(UINT64_MAX, UINT64_MAX - MIB, KNOWN, 0, GUAR, 0, NEEDS, UINT64_MAX, 0), UINT64_MAX,
	  VR_BALLOON_DEFLATE_GUEST },

	/* 3. The host no longer needs memory. */
	{ "host no longer needs memory, step 0: all at once",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(500), NO_NEED, RESERVE, ALL_AT_ONCE), GUEST,
	  VR_BALLOON_DEFLATE_HOST },
	{ "host no longer needs memory, step 256: one step, share ignored",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(500), NO_NEED, RESERVE, M(256)), M(3000 + 256),
	  VR_BALLOON_DEFLATE_HOST },
	{ "host no longer needs memory, step beyond the guest: to full",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, 0, NO_NEED, RESERVE, M(2048)), GUEST,
	  VR_BALLOON_DEFLATE_HOST },
	{ "host no longer needs memory, 1 byte left: to full",
	  IN(GUEST, GUEST - 1, KNOWN, M(1000), GUAR, 0, NO_NEED, RESERVE, M(256)), GUEST,
	  VR_BALLOON_DEFLATE_HOST },
	{ "host no longer needs memory, available unknown: deflates all the same",
	  IN(GUEST, M(3000), UNKNOWN, 0, GUAR, 0, NO_NEED, RESERVE, M(256)), M(3000 + 256),
	  VR_BALLOON_DEFLATE_HOST },
	{ "host no longer needs memory, balloon empty: holds",
	  IN(GUEST, GUEST, KNOWN, M(1000), GUAR, M(500), NO_NEED, RESERVE, ALL_AT_ONCE), GUEST,
	  VR_BALLOON_HOLD },
	{ "host no longer needs memory, step 2^64 - 1: saturates at the guest",
	  IN(UINT64_MAX, UINT64_MAX / 2, KNOWN, M(1000), GUAR, 0, NO_NEED, RESERVE, UINT64_MAX),
	  UINT64_MAX, VR_BALLOON_DEFLATE_HOST },

	/* 4. Inflation within the share. */
	{ "share within the room: takes the share",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(100), NEEDS, RESERVE, 0), M(2900),
	  VR_BALLOON_INFLATE },
	{ "share larger than the room: takes the room",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(2000), NEEDS, RESERVE, 0), M(3000 - 744),
	  VR_BALLOON_INFLATE },
	{ "share exactly the room: takes it all",
	  IN(GUEST, M(3000), KNOWN, M(356), GUAR, M(100), NEEDS, RESERVE, 0), M(2900),
	  VR_BALLOON_INFLATE },
	{ "share larger than actual - guaranteed: stops at guaranteed",
	  IN(GUEST, M(1200), KNOWN, M(1000), GUAR, M(500), NEEDS, RESERVE, 0), GUAR,
	  VR_BALLOON_INFLATE },
	{ "share of 2^64 - 1 on a guest with everything free: the room",
	  IN(GUEST, GUEST, KNOWN, GUEST, 0, UINT64_MAX, NEEDS, RESERVE, 0), RESERVE,
	  VR_BALLOON_INFLATE },
	{ "reserve 0: takes all the available memory",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(2000), NEEDS, 0, 0), M(2000),
	  VR_BALLOON_INFLATE },
	{ "share 100 MiB + 4095 bytes: takes 100 MiB",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(100) + 4095, NEEDS, RESERVE, 0), M(2900),
	  VR_BALLOON_INFLATE },
	{ "share 1 byte short of 1 MiB: rounds to 0, holds",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, MIB - 1, NEEDS, RESERVE, 0), M(3000),
	  VR_BALLOON_HOLD },
	{ "share exactly 1 MiB: takes 1 MiB",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, MIB, NEEDS, RESERVE, 0), M(2999),
	  VR_BALLOON_INFLATE },
	{ "room 10 MiB + 123 bytes: takes 10 MiB",
	  IN(GUEST, M(3000), KNOWN, M(266) + 123, GUAR, M(500), NEEDS, RESERVE, 0), M(2990),
	  VR_BALLOON_INFLATE },
	{ "room below 1 MiB: holds",
	  IN(GUEST, M(3000), KNOWN, RESERVE + MIB - 1, GUAR, M(500), NEEDS, RESERVE, 0), M(3000),
	  VR_BALLOON_HOLD },
	{ "actual - guaranteed 76 MiB - 1 byte: takes 75 MiB",
	  IN(GUEST, M(1100), KNOWN, M(1000), GUAR + 1, M(500), NEEDS, RESERVE, 0), M(1025),
	  VR_BALLOON_INFLATE },
	{ "actual not MiB-aligned: the take is whole MiB, the target keeps the odd bytes",
	  IN(GUEST, M(3000) + 4096, KNOWN, M(1000), GUAR, M(100), NEEDS, RESERVE, 0),
	  M(2900) + 4096, VR_BALLOON_INFLATE },
	{ "available above actual (stale stats): still never below guaranteed",
	  IN(GUEST, M(1100), KNOWN, GUEST, GUAR, UINT64_MAX, NEEDS, RESERVE, 0), GUAR,
	  VR_BALLOON_INFLATE },

	/* 5. Holds. */
	{ "available unknown: never inflates blind",
	  IN(GUEST, M(3000), UNKNOWN, M(1000), GUAR, M(500), NEEDS, RESERVE, 0), M(3000),
	  VR_BALLOON_HOLD },
	{ "share 0: takes nothing", IN(GUEST, M(3000), KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0),
	  M(3000), VR_BALLOON_HOLD },
	{ "balloon empty, host needs memory, share 0: holds",
	  IN(GUEST, GUEST, KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0), GUEST, VR_BALLOON_HOLD },
	{ "nothing guaranteed, actual 0, host needs memory: holds at 0",
	  IN(GUEST, 0, KNOWN, 0, 0, M(500), NEEDS, 0, 0), 0, VR_BALLOON_HOLD },
};

ParameterizedTestParameters(balloon, decide)
{
	return cr_make_param_array(struct decide_case, decide_cases, G_N_ELEMENTS(decide_cases));
}

ParameterizedTest(struct decide_case *c, balloon, decide)
{
	enum vr_balloon_reason reason = (enum vr_balloon_reason) - 1;
	uint64_t target = decide_ok(&c->in, &reason, c->name);
	uint64_t without_reason = decide_ok(&c->in, NULL, c->name);

	cr_assert_eq(target, c->want_target,
		     "%s: expected target %" PRIu64 " (%.3f MiB), got %" PRIu64 " (%.3f MiB)",
		     c->name, c->want_target, (double)c->want_target / MIB, target,
		     (double)target / MIB);
	cr_assert_eq(reason, c->want_reason, "%s: expected %s, got %s", c->name,
		     vr_balloon_reason_name(c->want_reason), vr_balloon_reason_name(reason));
	cr_assert_eq(without_reason, target, "%s: a NULL reason must not change the target",
		     c->name);
}

/*
 * Every combination of a grid of inputs (4 GiB guest), checked against what
 * the policy promises whatever the row:
 * - the target is from guaranteed to the guest's size;
 * - the reason says which way the balloon moves (HOLD: not at all);
 * - a guest short of memory gets back what it misses at once (up to full);
 * - no inflation when the host does not need memory or the guest's available
 *   memory is unknown; otherwise at most the share and the room, whole MiB;
 * - a share of exactly vr_balloon_offer_bytes() is taken in full.
 */
static const uint64_t grid_actual[] = {
	0, M(512), GUAR, GUAR + 1, M(3000) + 4096, GUEST - 1, GUEST
};
static const uint64_t grid_avail[] = { 0, RESERVE - 1, RESERVE, RESERVE + 1, M(1000) + 77, GUEST };
static const uint64_t grid_guaranteed[] = { 0, GUAR, GUAR + 1, GUEST };
static const uint64_t grid_share[] = { 0, 1, MIB, M(100) + 5, GUEST, UINT64_MAX };
static const uint64_t grid_reserve[] = { 0, RESERVE };
static const uint64_t grid_step[] = { ALL_AT_ONCE, M(64), UINT64_MAX };

static void check_invariants(const struct vr_balloon_input *in, const char *what)
{
	enum vr_balloon_reason reason;
	uint64_t target = decide_ok(in, &reason, what);
	const char *name = vr_balloon_reason_name(reason);

	cr_assert(target >= in->guaranteed_bytes && target <= in->guest_bytes,
		  "%s: target %" PRIu64 " out of [guaranteed, guest]", what, target);
	switch (reason) {
	case VR_BALLOON_HOLD:
		cr_assert_eq(target, in->actual_bytes, "%s: %s must keep actual", what, name);
		break;
	case VR_BALLOON_INFLATE:
		cr_assert_lt(target, in->actual_bytes, "%s: %s must go below actual", what, name);
		break;
	default:
		cr_assert_gt(target, in->actual_bytes, "%s: %s must go above actual", what, name);
		break;
	}
	if (in->guest_avail_known && in->guest_avail_bytes < in->reserve_bytes) {
		uint64_t missing = in->reserve_bytes - in->guest_avail_bytes;

		cr_assert_geq(target, MIN(in->guest_bytes, in->actual_bytes + missing),
			      "%s: a guest short of %" PRIu64 " bytes gets them back at once (%s)",
			      what, missing, name);
	}
	if (target < in->actual_bytes) {
		uint64_t take = in->actual_bytes - target;

		cr_assert(in->host_needs_memory && in->guest_avail_known,
			  "%s: inflates without the host needing it or seeing the guest", what);
		cr_assert_leq(take, in->share_bytes, "%s: takes more than the share", what);
		cr_assert(in->guest_avail_bytes >= in->reserve_bytes &&
				  take <= in->guest_avail_bytes - in->reserve_bytes,
			  "%s: takes %" PRIu64 " bytes, into the reserve", what, take);
		cr_assert_eq(take % MIB, 0, "%s: takes %" PRIu64 " bytes, not whole MiB", what,
			     take);
	}
	if (!in->host_needs_memory && in->actual_bytes < in->guest_bytes)
		cr_assert_gt(target, in->actual_bytes,
			     "%s: the host no longer needs memory: the balloon must deflate", what);
}

/* With the share set to the offer: the offer is taken in full, no more. */
static void check_offer_taken(struct vr_balloon_input in, const char *what)
{
	uint64_t offer = vr_balloon_offer_bytes(&in);
	enum vr_balloon_reason reason;
	uint64_t target;

	if (!in.host_needs_memory)
		return;
	in.share_bytes = offer;
	target = decide_ok(&in, &reason, what);
	if (reason != VR_BALLOON_HOLD && reason != VR_BALLOON_INFLATE)
		return; /* a deflation: the fleet's share does not apply */
	cr_assert_eq(in.actual_bytes - target, offer,
		     "%s: a share of exactly the offer (%" PRIu64
		     ") should be taken, took %" PRIu64,
		     what, offer, in.actual_bytes - target);
}

/* Picks grid[*index % nr] and leaves the rest of *@index for the next field. */
static uint64_t pick(const uint64_t *grid, guint nr, guint *index)
{
	uint64_t v = grid[*index % nr];

	*index /= nr;
	return v;
}

#define PICK(grid, index) pick(grid, G_N_ELEMENTS(grid), index)

Test(balloon, invariants_over_a_grid)
{
	static const uint64_t no_yes[] = { 0, 1 };
	const guint nr = G_N_ELEMENTS(grid_actual) * 2 * G_N_ELEMENTS(grid_avail) *
			 G_N_ELEMENTS(grid_guaranteed) * G_N_ELEMENTS(grid_share) * 2 *
			 G_N_ELEMENTS(grid_reserve) * G_N_ELEMENTS(grid_step);

	for (guint i = 0; i < nr; i++) {
		guint index = i;
		struct vr_balloon_input in = { .guest_bytes = GUEST };
		char what[200];

		in.actual_bytes = PICK(grid_actual, &index);
		in.guest_avail_known = PICK(no_yes, &index);
		in.guest_avail_bytes = PICK(grid_avail, &index);
		in.guaranteed_bytes = PICK(grid_guaranteed, &index);
		in.share_bytes = PICK(grid_share, &index);
		in.host_needs_memory = PICK(no_yes, &index);
		in.reserve_bytes = PICK(grid_reserve, &index);
		in.deflate_step_bytes = PICK(grid_step, &index);
		cr_assert_eq(index, 0, "row %u: the grid has %u rows", i, nr);
		g_snprintf(what, sizeof(what),
			   "row %u: actual %" PRIu64 " avail %s%" PRIu64 " guaranteed %" PRIu64
			   " share %" PRIu64 " host %s reserve %" PRIu64 " step %" PRIu64,
			   i, in.actual_bytes, in.guest_avail_known ? "" : "(unknown) ",
			   in.guest_avail_bytes, in.guaranteed_bytes, in.share_bytes,
			   in.host_needs_memory ? "needs" : "does not need", in.reserve_bytes,
			   in.deflate_step_bytes);
		check_invariants(&in, what);
		check_offer_taken(in, what);
	}
}

/* ------------------------------------------------------------------------- */
/* Input that cannot be                                                      */
/* ------------------------------------------------------------------------- */

/* Each row: an input to refuse, the field the message names and its value. */
struct invalid_case {
	char name[64];
	struct vr_balloon_input in;
	char field[32];
	long value;
};

static struct invalid_case invalid_cases[] = {
	{ "a guest of 0 bytes", IN(0, 0, KNOWN, 0, 0, 0, NEEDS, 0, 0), "guest_bytes", 0 },
	{ "actual above the guest", IN(GUEST, GUEST + 1, KNOWN, 0, GUAR, 0, NEEDS, RESERVE, 0),
	  "actual_bytes", (long)(GUEST + 1) },
	{ "available above the guest",
	  IN(GUEST, M(3000), KNOWN, M(5000), GUAR, 0, NEEDS, RESERVE, 0), "guest_avail_bytes",
	  (long)M(5000) },
	{ "guaranteed above the guest",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUEST + MIB, 0, NEEDS, RESERVE, 0), "guaranteed_bytes",
	  (long)(GUEST + MIB) },
};

ParameterizedTestParameters(balloon, invalid)
{
	return cr_make_param_array(struct invalid_case, invalid_cases, G_N_ELEMENTS(invalid_cases));
}

ParameterizedTest(struct invalid_case *c, balloon, invalid)
{
	g_autoptr(GError) err = NULL;
	enum vr_balloon_reason reason = VR_BALLOON_INFLATE;
	uint64_t target = 12345;

	cr_assert_not(vr_balloon_decide(&c->in, &target, &reason, &err), "%s: should be refused",
		      c->name);
	assert_error(err, VR_BALLOON_ERROR, VR_BALLOON_ERROR_INVALID, c->field, c->name);
	cr_assert(msg_names_number(err->message, c->value), "%s: the message should name %ld: %s",
		  c->name, c->value, err->message);
	cr_assert(target == 12345 && reason == VR_BALLOON_INFLATE,
		  "%s: the outputs must be left untouched on error", c->name);
	cr_assert_not(vr_balloon_decide(&c->in, &target, NULL, NULL),
		      "%s: refused as well without an error location", c->name);
}

Test(balloon, unknown_available_is_not_checked)
{
	/* Not known: the value is ignored, even one above the guest's size. */
	const struct vr_balloon_input in =
		IN(GUEST, M(3000), UNKNOWN, M(5000), GUAR, M(100), NEEDS, RESERVE, 0);
	enum vr_balloon_reason reason;
	uint64_t target = decide_ok(&in, &reason, "unknown available above the guest");

	cr_assert(target == M(3000) && reason == VR_BALLOON_HOLD,
		  "unknown available: holds at actual, got %" PRIu64 " (%s)", target,
		  vr_balloon_reason_name(reason));
}

/* ------------------------------------------------------------------------- */
/* The offer to the fleet                                                    */
/* ------------------------------------------------------------------------- */

struct offer_case {
	char name[80];
	struct vr_balloon_input in;
	uint64_t want;
};

static struct offer_case offer_cases[] = {
	{ "available unknown: nothing",
	  IN(GUEST, M(3000), UNKNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0), 0 },
	{ "available - reserve", IN(GUEST, M(3000), KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0),
	  M(744) },
	{ "the share and the host's need do not matter",
	  IN(GUEST, M(3000), KNOWN, M(1000), GUAR, M(5), NO_NEED, RESERVE, 0), M(744) },
	{ "available exactly at reserve: nothing",
	  IN(GUEST, M(3000), KNOWN, RESERVE, GUAR, 0, NEEDS, RESERVE, 0), 0 },
	{ "available below reserve: nothing",
	  IN(GUEST, M(3000), KNOWN, M(100), GUAR, 0, NEEDS, RESERVE, 0), 0 },
	{ "capped by actual - guaranteed",
	  IN(GUEST, M(1200), KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0), M(176) },
	{ "actual at guaranteed: nothing",
	  IN(GUEST, GUAR, KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0), 0 },
	{ "actual below guaranteed: nothing",
	  IN(GUEST, M(512), KNOWN, M(1000), GUAR, 0, NEEDS, RESERVE, 0), 0 },
	{ "room 10 MiB + 123 bytes: 10 MiB",
	  IN(GUEST, M(3000), KNOWN, M(266) + 123, GUAR, 0, NEEDS, RESERVE, 0), M(10) },
	{ "actual - guaranteed 76 MiB - 1 byte: 75 MiB",
	  IN(GUEST, M(1100), KNOWN, M(1000), GUAR + 1, 0, NEEDS, RESERVE, 0), M(75) },
	{ "reserve 0, everything free, nothing guaranteed: the whole guest",
	  IN(GUEST, GUEST, KNOWN, GUEST, 0, 0, NEEDS, 0, 0), GUEST },
};

ParameterizedTestParameters(balloon, offer)
{
	return cr_make_param_array(struct offer_case, offer_cases, G_N_ELEMENTS(offer_cases));
}

ParameterizedTest(struct offer_case *c, balloon, offer)
{
	uint64_t got = vr_balloon_offer_bytes(&c->in);

	cr_assert_eq(got, c->want,
		     "%s: expected %" PRIu64 " (%.3f MiB), got %" PRIu64 " (%.3f MiB)", c->name,
		     c->want, (double)c->want / MIB, got, (double)got / MIB);
}

/* ------------------------------------------------------------------------- */
/* Names                                                                     */
/* ------------------------------------------------------------------------- */

Test(balloon, reason_names)
{
	static const struct {
		enum vr_balloon_reason reason;
		const char *name;
	} names[] = {
		{ VR_BALLOON_HOLD, "hold" },
		{ VR_BALLOON_INFLATE, "inflate" },
		{ VR_BALLOON_DEFLATE_GUARANTEED, "deflate-guaranteed" },
		{ VR_BALLOON_DEFLATE_GUEST, "deflate-guest" },
		{ VR_BALLOON_DEFLATE_HOST, "deflate-host" },
		{ (enum vr_balloon_reason)99, "unknown" },
		{ (enum vr_balloon_reason) - 1, "unknown" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(names); i++)
		cr_assert_str_eq(vr_balloon_reason_name(names[i].reason), names[i].name,
				 "reason %d should be named %s, got %s", (int)names[i].reason,
				 names[i].name, vr_balloon_reason_name(names[i].reason));
}
