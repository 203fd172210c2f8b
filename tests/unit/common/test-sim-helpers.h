/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Units and a constructor shared by the tests of the simulated guest.
 */
#pragma once

#include <criterion/criterion.h>
#include <glib.h>

#include "sim.h"

#define PAGE	 VR_PAGE_SIZE
#define MIB	 (1ULL << 20)
#define GIB	 (1ULL << 30)
#define TIB	 (1ULL << 40)
#define US_PER_S 1000000ULL

/* A simulated guest of @size bytes that the test expects to be valid. */
static inline struct vr_sim *sim_new_ok(uint64_t size, uint64_t seed)
{
	g_autoptr(GError) err = NULL;
	struct vr_sim *sim = vr_sim_new(size, seed, &err);

	cr_assert_not_null(sim, "vr_sim_new(%" G_GUINT64_FORMAT ") should succeed, got: %s", size,
			   err ? err->message : "NULL without an error");
	return sim;
}
