/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the access picture's rules (common/picture.c): a valid
 * picture passes, and each rule broken once is refused with its own error
 * code and a message naming the rule and the region.
 *
 * Pure: struct literals in. Every picture has a 5 ms sampling and a 100 ms
 * aggregation interval (nr_accesses up to 20) unless a case says otherwise;
 * the guest has 1 GiB of memory whose RAM ends at 4 GiB (a hole below). The
 * parameter structs hold no pointers (Criterion re-executes the binary for
 * each test).
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <stdint.h>

#include "picture-region.h"
#include "picture.h"
#include "test-messages.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

#define SAMPLE_US 5000ULL
#define AGGR_US	  100000ULL

static const struct vr_picture_bound guest = { .mem_bytes = GIB, .phys_end_bytes = 4 * GIB };

static GArray *regions_of(const struct vr_picture_region *r, guint nr)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));

	g_array_append_vals(a, r, nr);
	return a;
}

TestSuite(picture, .description = "vr_picture_check()");

/* Every rule at its edge, and still valid: around the hole, all of memory,
 * nr_accesses at aggr / sample, adjacent regions. */
Test(picture, a_valid_picture_passes)
{
	const struct vr_picture_region r[] = {
		{ 0, 512 * MIB, 20, 0 },
		{ 512 * MIB, 768 * MIB, 0, G_MAXUINT32 },
		{ 4 * GIB - 256 * MIB, 4 * GIB, 3, 7 },
	};
	g_autoptr(GArray) pic = regions_of(r, G_N_ELEMENTS(r));
	g_autoptr(GError) err = NULL;

	cr_assert(vr_picture_check(pic, SAMPLE_US, AGGR_US, &guest, &err), "%s",
		  err ? err->message : "");
	cr_assert(vr_picture_check(NULL, SAMPLE_US, AGGR_US, &guest, NULL), "no regions pass");
	cr_assert(vr_picture_check(pic, 1, VR_PICTURE_MAX_NR_ACCESSES, &guest, NULL),
		  "the most samples per aggregation pass");
	cr_assert(vr_picture_check(pic, SAMPLE_US, SAMPLE_US, NULL, NULL) == FALSE,
		  "nr_accesses 20 is above 1 sample per aggregation");
}

/* Without a bound only the picture's own rules apply: a picture larger than
 * any guest passes. */
Test(picture, no_bound_checks_no_guest)
{
	const struct vr_picture_region r[] = { { 0, 64 * GIB, 0, 0 } };
	g_autoptr(GArray) pic = regions_of(r, G_N_ELEMENTS(r));
	g_autoptr(GError) err = NULL;

	cr_assert(vr_picture_check(pic, SAMPLE_US, AGGR_US, NULL, &err), "%s",
		  err ? err->message : "");
	cr_assert_not(vr_picture_check(pic, SAMPLE_US, AGGR_US, &guest, NULL));
}

/* A bound without a physical end checks the size only: a region above the
 * memory size (RAM above a hole) passes. */
Test(picture, no_phys_end_checks_size_only)
{
	const struct vr_picture_region r[] = { { 5 * GIB, 5 * GIB + 4096, 0, 0 } };
	const struct vr_picture_bound size_only = { .mem_bytes = GIB };
	g_autoptr(GArray) pic = regions_of(r, G_N_ELEMENTS(r));
	g_autoptr(GError) err = NULL;

	cr_assert(vr_picture_check(pic, SAMPLE_US, AGGR_US, &size_only, &err), "%s",
		  err ? err->message : "");
}

/**
 * struct rule_case - a picture that breaks one rule.
 * @name:	the rule.
 * @sample_us, @aggr_us: its intervals.
 * @regions:	its regions, @nr of them.
 * @code:	the error code the rule has.
 * @at:		the region at fault vr_picture_check_at() names
 *		(VR_PICTURE_NO_REGION for a rule of the whole picture).
 * @words:	what the message must say (msg_has_all()).
 * @number:	a number the message must name, decimal; -1 for none.
 */
struct rule_case {
	char name[40];
	uint64_t sample_us;
	uint64_t aggr_us;
	struct vr_picture_region regions[3];
	guint nr;
	int code;
	guint at;
	char words[64];
	long number;
};

static struct rule_case rule_cases[] = {
	{ "sample interval 0",
	  0,
	  AGGR_US,
	  { { 0, 4096, 0, 0 } },
	  1,
	  VR_PICTURE_ERROR_INTERVALS,
	  VR_PICTURE_NO_REGION,
	  "sample_interval_us",
	  0 },
	{ "aggregation below sampling",
	  SAMPLE_US,
	  4000,
	  { { 0, 4096, 0, 0 } },
	  1,
	  VR_PICTURE_ERROR_INTERVALS,
	  VR_PICTURE_NO_REGION,
	  "aggregation;aggr_interval_us",
	  4000 },
	{ "aggregation above an hour",
	  SAMPLE_US,
	  3601000000ULL,
	  { { 0, 4096, 0, 0 } },
	  1,
	  VR_PICTURE_ERROR_INTERVALS,
	  VR_PICTURE_NO_REGION,
	  "aggr_interval_us",
	  3601000000L },
	{ "too many samples per aggregation",
	  1,
	  VR_PICTURE_MAX_NR_ACCESSES + 1,
	  { { 0, 4096, 0, 0 } },
	  1,
	  VR_PICTURE_ERROR_INTERVALS,
	  VR_PICTURE_NO_REGION,
	  "sample_interval_us",
	  VR_PICTURE_MAX_NR_ACCESSES + 1 },
	{ "empty region",
	  SAMPLE_US,
	  AGGR_US,
	  { { 0, 4096, 0, 0 }, { 8192, 8192, 0, 0 } },
	  2,
	  VR_PICTURE_ERROR_EMPTY,
	  1,
	  "region 1;empty",
	  -1 },
	{ "unsorted",
	  SAMPLE_US,
	  AGGR_US,
	  { { 8192, 12288, 0, 0 }, { 0, 4096, 0, 0 } },
	  2,
	  VR_PICTURE_ERROR_ORDER,
	  1,
	  "region 1;sorted",
	  -1 },
	{ "overlapping",
	  SAMPLE_US,
	  AGGR_US,
	  { { 0, 4096, 0, 0 }, { 8192, 16384, 0, 0 }, { 12288, 20480, 0, 0 } },
	  3,
	  VR_PICTURE_ERROR_ORDER,
	  2,
	  "region 2;overlap",
	  -1 },
	{ "more accesses than samples",
	  SAMPLE_US,
	  AGGR_US,
	  { { 0, 4096, 0, 0 }, { 4096, 8192, 21, 0 } },
	  2,
	  VR_PICTURE_ERROR_ACCESSES,
	  1,
	  "region 1;nr_accesses 21",
	  20 },
	{ "beyond the physical end",
	  SAMPLE_US,
	  AGGR_US,
	  { { 0, 4096, 0, 0 }, { 4 * GIB - 4096, 4 * GIB + 4096, 0, 0 } },
	  2,
	  VR_PICTURE_ERROR_BEYOND,
	  1,
	  "region 1;beyond",
	  (long)(4 * GIB + 4096) },
	{ "more bytes than the guest has",
	  SAMPLE_US,
	  AGGR_US,
	  { { 0, 768 * MIB, 0, 0 }, { 3 * GIB, 3 * GIB + 512 * MIB, 0, 0 } },
	  2,
	  VR_PICTURE_ERROR_TOO_LARGE,
	  1,
	  "regions 0..1;more than the guest",
	  (long)(1280 * MIB) },
};

ParameterizedTestParameters(picture, refused)
{
	return cr_make_param_array(struct rule_case, rule_cases, G_N_ELEMENTS(rule_cases));
}

ParameterizedTest(struct rule_case *c, picture, refused)
{
	g_autoptr(GArray) pic = regions_of(c->regions, c->nr);
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_picture_check(pic, c->sample_us, c->aggr_us, &guest, &err),
		      "%s: the picture should be refused", c->name);
	cr_assert_not_null(err, "%s: no error set", c->name);
	cr_assert(g_error_matches(err, VR_PICTURE_ERROR, c->code),
		  "%s: expected VR_PICTURE_ERROR code %d, got %s %d: %s", c->name, c->code,
		  g_quark_to_string(err->domain), err->code, err->message);
	cr_assert(msg_has_all(err->message, c->words), "%s: the message should say %s: %s", c->name,
		  c->words, err->message);
	if (c->number >= 0)
		cr_assert(msg_names_number(err->message, c->number),
			  "%s: the message should name %ld: %s", c->name, c->number, err->message);
}

/* vr_picture_check_at() is the same check, and names the region at fault:
 * the agent protocol builds its JSON path from it. */
ParameterizedTestParameters(picture, refused_at)
{
	return cr_make_param_array(struct rule_case, rule_cases, G_N_ELEMENTS(rule_cases));
}

ParameterizedTest(struct rule_case *c, picture, refused_at)
{
	g_autoptr(GArray) pic = regions_of(c->regions, c->nr);
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err_at = NULL;
	guint at = 12345;

	cr_assert_not(vr_picture_check(pic, c->sample_us, c->aggr_us, &guest, &err));
	cr_assert_not(vr_picture_check_at(pic, c->sample_us, c->aggr_us, &guest, &at, &err_at),
		      "%s: the picture should be refused", c->name);
	cr_assert(g_error_matches(err_at, VR_PICTURE_ERROR, c->code), "%s: code %d: %s", c->name,
		  err_at->code, err_at->message);
	cr_assert_str_eq(err_at->message, err->message, "%s: the two checks should agree", c->name);
	cr_assert_eq(at, c->at, "%s: expected region %u at fault, got %u", c->name, c->at, at);
}

/* A picture that passes leaves the index alone; NULL is allowed. */
Test(picture, check_at_leaves_the_index_of_a_valid_picture)
{
	const struct vr_picture_region r[] = { { 0, 4096, 20, 0 } };
	g_autoptr(GArray) pic = regions_of(r, G_N_ELEMENTS(r));
	guint at = 12345;

	cr_assert(vr_picture_check_at(pic, SAMPLE_US, AGGR_US, &guest, &at, NULL));
	cr_assert_eq(at, 12345, "the index was written: %u", at);
	cr_assert(vr_picture_check_at(pic, SAMPLE_US, AGGR_US, &guest, NULL, NULL));
}

/* At most VR_PICTURE_MAX_REGIONS regions: one more is refused, naming the
 * count and no one region. */
Test(picture, too_many_regions)
{
	g_autoptr(GArray) pic = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;
	guint at = 0;

	for (uint64_t i = 0; i <= VR_PICTURE_MAX_REGIONS; i++) {
		struct vr_picture_region r = { i * 4096, (i + 1) * 4096, 0, 0 };

		g_array_append_val(pic, r);
	}
	cr_assert_not(vr_picture_check(pic, SAMPLE_US, AGGR_US, &guest, &err));
	cr_assert(g_error_matches(err, VR_PICTURE_ERROR, VR_PICTURE_ERROR_TOO_MANY), "%s",
		  err->message);
	cr_assert(msg_names_number(err->message, VR_PICTURE_MAX_REGIONS + 1), "%s", err->message);
	cr_assert_not(vr_picture_check_at(pic, SAMPLE_US, AGGR_US, &guest, &at, NULL));
	cr_assert_eq(at, VR_PICTURE_NO_REGION, "too many regions is no one region's: %u", at);
	g_array_set_size(pic, VR_PICTURE_MAX_REGIONS);
	cr_assert(vr_picture_check(pic, SAMPLE_US, AGGR_US, &guest, NULL), "%d regions are fine",
		  VR_PICTURE_MAX_REGIONS);
}

/* The first broken rule in address order is the one reported: a later
 * region's rule does not hide an earlier one's. */
Test(picture, the_first_broken_rule_is_named)
{
	const struct vr_picture_region r[] = {
		{ 0, 4096, 99, 0 },
		{ 0, 4096, 0, 0 },
	};
	g_autoptr(GArray) pic = regions_of(r, G_N_ELEMENTS(r));
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_picture_check(pic, SAMPLE_US, AGGR_US, &guest, &err));
	cr_assert(g_error_matches(err, VR_PICTURE_ERROR, VR_PICTURE_ERROR_ACCESSES), "%s",
		  err->message);
	cr_assert(msg_has_all(err->message, "region 0"), "%s", err->message);
}
