/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "sim" access source: answers the engine's checks from a simulated
 * guest. Making a page old costs nothing here; a check asks the simulator
 * whether the page was accessed between the prepare and the check.
 */
#include "sim.h"

/**
 * struct vr_sim_access - data of the sim access source.
 * @sim:	the simulated guest (borrowed).
 * @prepared_at_us: time of the last prepare(): checks cover (then, now].
 * @nr_checks:	pages checked so far.
 */
struct vr_sim_access {
	const struct vr_sim *sim;
	uint64_t prepared_at_us;
	uint64_t nr_checks;
};

struct vr_sim_access *vr_sim_access_new(const struct vr_sim *sim)
{
	struct vr_sim_access *sa = g_new0(struct vr_sim_access, 1);

	sa->sim = sim;
	return sa;
}

uint64_t vr_sim_access_nr_checks(const struct vr_sim_access *sa)
{
	return sa->nr_checks;
}

static gboolean sim_update(void *data, const struct vr_target *t G_GNUC_UNUSED, GArray *ranges,
			   GError **error G_GNUC_UNUSED)
{
	struct vr_sim_access *sa = data;
	struct vr_range ram = { .start = 0, .end = vr_sim_size(sa->sim) };

	g_array_append_val(ranges, ram);
	return TRUE;
}

static void sim_prepare(void *data, const struct vr_target *t G_GNUC_UNUSED,
			struct vr_region *regions G_GNUC_UNUSED, size_t nr G_GNUC_UNUSED,
			uint64_t now_us)
{
	struct vr_sim_access *sa = data;

	sa->prepared_at_us = now_us;
}

static void sim_check(void *data, const struct vr_target *t G_GNUC_UNUSED,
		      struct vr_region *regions, size_t nr, uint64_t now_us)
{
	struct vr_sim_access *sa = data;

	for (size_t i = 0; i < nr; i++)
		regions[i].accessed = vr_sim_page_accessed(sa->sim, regions[i].sampling_addr,
							   sa->prepared_at_us, now_us);
	sa->nr_checks += nr;
}

const struct vr_access_ops vr_sim_access_ops = {
	.name = "sim",
	.update = sim_update,
	.prepare = sim_prepare,
	.check = sim_check,
	.cleanup = g_free,
};
