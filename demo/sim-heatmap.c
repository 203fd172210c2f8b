/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vr-sim-demo: the monitoring engine watching a simulated guest whose hot set
 * changes. Once per simulated second it prints a one-line heatmap of the
 * guest-physical address space (one column per slice, darker = more accesses
 * in the last aggregation window), the working-set size the engine found
 * (bytes of regions with accesses in that window) and the true one (bytes
 * the simulator's current phase accesses).
 */
#include <stdio.h>

#include "monitor.h"
#include "sim.h"

#define GIB	 (1ULL << 30)
#define US_PER_S ((uint64_t)1000000)

/* From no access (blank) to an access in every sample. */
static const char ramp[] = " .:-=+*#%@";

struct demo {
	const struct vr_sim *sim;
	guint width;
	double *heat;	/* per column: sum of nr_accesses * bytes */
	double *weight; /* per column: bytes */
};

static void print_heatmap(const struct vr_ctx *ctx, uint64_t now_us, void *user_data)
{
	struct demo *d = user_data;
	uint64_t size = vr_sim_size(d->sim);
	uint32_t max_nr = vr_monitor_attrs_max_nr_accesses(vr_ctx_attrs(ctx));
	uint64_t wss = 0;
	const char *phase = "";
	g_autoptr(GString) line = g_string_new(NULL);

	if (now_us % US_PER_S)
		return;
	for (guint c = 0; c < d->width; c++)
		d->heat[c] = d->weight[c] = 0;
	for (guint i = 0; i < vr_ctx_nr_targets(ctx); i++) {
		const struct vr_target *t = vr_ctx_target(ctx, i);

		for (guint j = 0; j < vr_target_nr_regions(t); j++) {
			const struct vr_region *r = vr_target_region(t, j);
			guint first = (guint)((double)r->start / size * d->width);
			guint last = (guint)((double)(r->end - 1) / size * d->width);

			if (r->nr_accesses)
				wss += vr_region_size(r);
			for (guint c = first; c <= last && c < d->width; c++) {
				uint64_t lo = MAX(r->start, size / d->width * c);
				uint64_t hi = MIN(r->end, size / d->width * (c + 1));
				double bytes = hi > lo ? (double)(hi - lo) : 0;

				d->heat[c] += bytes * r->nr_accesses;
				d->weight[c] += bytes;
			}
		}
	}
	for (guint c = 0; c < d->width; c++) {
		double level = d->weight[c] ? d->heat[c] / d->weight[c] / max_nr : 0;
		guint idx = level > 0 ? 1 + (guint)(level * (sizeof(ramp) - 3) + 0.5) : 0;

		g_string_append_c(line, ramp[MIN(idx, sizeof(ramp) - 2)]);
	}
	vr_sim_phase_at(d->sim, now_us - 1, &phase, NULL);
	printf("%4" G_GUINT64_FORMAT
	       "s |%s| wss found %6.2f GiB, true %6.2f GiB, %4u regions  %s\n",
	       now_us / US_PER_S, line->str, (double)wss / GIB,
	       (double)vr_sim_hot_bytes(d->sim, now_us - 1) / GIB, vr_ctx_nr_regions(ctx), phase);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double size_gib = 64, phase_s = 10, seconds = 40;
	gint64 seed = 1;
	gint width = 64;
	GOptionEntry entries[] = {
		{ "size-gib", 0, 0, G_OPTION_ARG_DOUBLE, &size_gib, "Guest size (default 64)",
		  "GIB" },
		{ "phase-s", 0, 0, G_OPTION_ARG_DOUBLE, &phase_s, "Phase length (default 10)",
		  "S" },
		{ "seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "Simulated time (default 40)",
		  "S" },
		{ "width", 0, 0, G_OPTION_ARG_INT, &width, "Heatmap columns (default 64)", "N" },
		{ "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed (default 1)", "N" },
		{ NULL },
	};
	g_autoptr(GOptionContext) octx = g_option_context_new("- the monitor on a simulated guest");
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_sim) sim = NULL;
	g_autoptr(vr_ctx) ctx = NULL;
	g_autofree double *heat = NULL, *weight = NULL;
	struct demo d;
	struct vr_range ram;
	uint64_t end_us;

	g_option_context_add_main_entries(octx, entries, NULL);
	if (!g_option_context_parse(octx, &argc, &argv, &error)) {
		g_printerr("vr-sim-demo: %s\n", error->message);
		return 2;
	}
	if (!(size_gib > 0) || !(phase_s >= 1) || !(seconds >= 1) || width < 8 || width > 1024) {
		g_printerr("vr-sim-demo: need --size-gib > 0, --phase-s >= 1, --seconds >= 1 and "
			   "--width in [8, 1024]\n");
		return 2;
	}
	sim = vr_sim_new((uint64_t)(size_gib * GIB) / VR_PAGE_SIZE * VR_PAGE_SIZE, (uint64_t)seed,
			 &error);
	if (!sim || !vr_sim_load_builtin(sim, "demo", (uint64_t)(phase_s * US_PER_S), &error)) {
		g_printerr("vr-sim-demo: %s\n", error->message);
		return 1;
	}
	heat = g_new0(double, width);
	weight = g_new0(double, width);
	d = (struct demo){ .sim = sim, .width = (guint)width, .heat = heat, .weight = weight };
	ram = (struct vr_range){ 0, vr_sim_size(sim) };
	ctx = vr_ctx_new(&vr_sim_access_ops, vr_sim_access_new(sim), (uint64_t)seed);
	vr_ctx_add_listener(ctx, print_heatmap, &d);
	if (!vr_ctx_add_target(ctx, 0, &ram, 1, &error) || !vr_ctx_start(ctx, 0, &error)) {
		g_printerr("vr-sim-demo: %s\n", error->message);
		return 1;
	}
	printf("simulated guest: %.0f GiB, phases of %.0f s (boot, moved, grown, quiet); sample "
	       "5 ms, aggr 100 ms, regions 10..1000\n"
	       "heatmap: %d columns of %.2f GiB each, ' ' no access .. '@' accessed in every "
	       "sample\n",
	       size_gib, phase_s, width, size_gib / width);
	end_us = (uint64_t)(seconds * US_PER_S);
	while (vr_ctx_next_tick_us(ctx) <= end_us) {
		if (!vr_ctx_tick(ctx, vr_ctx_next_tick_us(ctx), &error)) {
			g_printerr("vr-sim-demo: %s\n", error->message);
			return 1;
		}
	}
	return 0;
}
