/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Built-in access scripts of the simulated guest, scaled to its size. They
 * are the workloads of the accuracy benchmark and the demo; their parameters
 * are printed by those tools and documented in docs/monitoring.md.
 */
#include "sim.h"

#define GIB (1ULL << 30)

/* Access frequency of a page in a hot set: seen in every sample at the
 * default 5 ms sampling interval, as hot pages are. */
#define HOT_HZ 1000.0

/* Zipf: page accesses per second per GiB of guest, and the exponent. The
 * head (rank 1 at address 0) is hot; the tail's rare accesses land on pages
 * spread over the whole guest: about 3% of it is touched every 5 s. */
#define ZIPF_HZ_PER_GIB 300000.0
#define ZIPF_S		1.5

/* @permille of the guest size, page-aligned. */
static uint64_t at(uint64_t size, uint64_t permille)
{
	uint64_t x = (uint64_t)((unsigned __int128)size * permille / 1000);

	return x - x % VR_PAGE_SIZE;
}

static struct vr_sim_set hot(uint64_t start, uint64_t end, double hz)
{
	return (struct vr_sim_set){ .kind = VR_SIM_SET_HOT, .start = start, .end = end, .hz = hz };
}

static gboolean add_phases(struct vr_sim *sim, const char *name, guint nr_phases, uint64_t phase_us,
			   const struct vr_sim_set *sets, size_t nr, GError **error)
{
	for (guint i = 0; i < nr_phases; i++) {
		g_autofree char *phase_name = g_strdup_printf("%s-%u", name, i);

		if (!vr_sim_add_phase(sim, phase_name, phase_us, sets, nr, error))
			return FALSE;
	}
	return TRUE;
}

/* One 10% hot range. */
static gboolean load_clustered(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_sim_set set = hot(at(s, 300), at(s, 400), HOT_HZ);

	return add_phases(sim, "clustered", 4, phase_us, &set, 1, error);
}

/* Ten hot ranges of 1% each, spread over the guest. */
static gboolean load_scattered(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_sim_set sets[10];

	for (guint i = 0; i < G_N_ELEMENTS(sets); i++)
		sets[i] = hot(at(s, 100 * i + 40), at(s, 100 * i + 50), HOT_HZ);
	return add_phases(sim, "scattered", 4, phase_us, sets, G_N_ELEMENTS(sets), error);
}

/* Zipf-distributed accesses over the whole guest, rank 1 at address 0. */
static gboolean load_zipf(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_sim_set set = {
		.kind = VR_SIM_SET_ZIPF,
		.start = 0,
		.end = s,
		.zipf_s = ZIPF_S,
		.zipf_total_hz = ZIPF_HZ_PER_GIB * (double)s / GIB,
	};

	return add_phases(sim, "zipf", 4, phase_us, &set, 1, error);
}

/* A 10% hot range that moves by 20% of the guest each phase. */
static gboolean load_shifting(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);

	for (guint i = 0; i < 4; i++) {
		g_autofree char *name = g_strdup_printf("shifting-%u", i);
		struct vr_sim_set set = hot(at(s, 100 + 200 * i), at(s, 200 + 200 * i), HOT_HZ);

		if (!vr_sim_add_phase(sim, name, phase_us, &set, 1, error))
			return FALSE;
	}
	return TRUE;
}

/*
 * A sequential scan over 20% of the guest plus a 5% hot range. The scan's
 * window is 1/256 of the guest (64 MiB of 16 GiB) and moves @speed_div-th of
 * the guest a second: "scan" 1/256 (one pass over the range in 51.2 s),
 * "scan-fast" 1/64 (12.8 s).
 */
static gboolean load_scan_at(struct vr_sim *sim, const char *name, uint64_t speed_div,
			     uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_sim_set sets[] = {
		{
			.kind = VR_SIM_SET_SCAN,
			.start = at(s, 500),
			.end = at(s, 700),
			.hz = HOT_HZ,
			.scan_window_bytes =
				MAX(at(s, 1000) / 256 / VR_PAGE_SIZE, 1) * VR_PAGE_SIZE,
			.scan_speed_bps = MAX(s / speed_div, VR_PAGE_SIZE),
		},
		hot(at(s, 100), at(s, 150), HOT_HZ),
	};

	return add_phases(sim, name, 4, phase_us, sets, G_N_ELEMENTS(sets), error);
}

static gboolean load_scan(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	return load_scan_at(sim, "scan", 256, phase_us, error);
}

static gboolean load_scan_fast(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	return load_scan_at(sim, "scan-fast", 64, phase_us, error);
}

/* The demo: a working set that moves, grows and shrinks, with a warm set
 * (25 Hz: seen in about one sample in eight) beside it for a while. */
static gboolean load_demo(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_sim_set boot[] = { hot(0, at(s, 125), 2 * HOT_HZ) };
	struct vr_sim_set moved[] = { hot(at(s, 250), at(s, 375), 2 * HOT_HZ),
				      hot(at(s, 600), at(s, 625), HOT_HZ / 40) };
	struct vr_sim_set grown[] = { hot(at(s, 250), at(s, 500), 2 * HOT_HZ),
				      hot(at(s, 600), at(s, 625), HOT_HZ / 40) };
	struct vr_sim_set quiet[] = { hot(at(s, 700), at(s, 725), 2 * HOT_HZ) };

	return vr_sim_add_phase(sim, "boot", phase_us, boot, G_N_ELEMENTS(boot), error) &&
	       vr_sim_add_phase(sim, "moved", phase_us, moved, G_N_ELEMENTS(moved), error) &&
	       vr_sim_add_phase(sim, "grown", phase_us, grown, G_N_ELEMENTS(grown), error) &&
	       vr_sim_add_phase(sim, "quiet", phase_us, quiet, G_N_ELEMENTS(quiet), error);
}

/*
 * The reclaim benchmark's workload (docs/simulate.md), fixed so that results
 * compare across versions: the workload's memory is the first 3/4 of the
 * guest, touched before the script starts (resident at time 0); its hot set,
 * 10% of that memory, moves to another place every phase, and accesses in it
 * are zipf-distributed (rank 1 at the set's start). The rest of the workload's
 * memory is not accessed again. Four phases, e.g. 60 s each.
 */
#define MATRIX_WORKLOAD_PERMILLE 750
/* Where the hot set starts in phase k, in 1/10000 of the guest. */
#define MATRIX_HOT_STEP_BP 1875
/* Zipf exponent: classic zipf. */
#define MATRIX_ZIPF_S 1.0
/*
 * Page accesses per second per GiB of hot set. With s = 1 over the 0.6 GiB
 * hot set of an 8 GiB guest: rank 1 is accessed ~480000 times a second, the
 * coldest page ~3 times; 15% of the pages 20 times a second or more (seen in
 * nearly every 100 ms aggregation window at 5 ms sampling), 39% less than 5
 * times (seen in fewer than 40% of the windows). So every page of the hot set
 * refaults soon after a pageout, and its tail sits at the monitor's detection
 * limit: regions of it can look idle for a while (docs/simulate.md).
 */
#define MATRIX_ZIPF_HZ_PER_GIB 1e7

static gboolean load_matrix(struct vr_sim *sim, uint64_t phase_us, GError **error)
{
	uint64_t s = vr_sim_size(sim);
	struct vr_range workload = { 0, at(s, MATRIX_WORKLOAD_PERMILLE) };
	uint64_t hot_sz = (workload.end / 10) / VR_PAGE_SIZE * VR_PAGE_SIZE;

	if (hot_sz == 0) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "matrix: a guest of %" G_GUINT64_FORMAT
			    " bytes is too small for a hot set",
			    s);
		return FALSE;
	}
	for (guint k = 0; k < 4; k++) {
		g_autofree char *name = g_strdup_printf("matrix-%u", k);
		uint64_t start = (uint64_t)((unsigned __int128)s * MATRIX_HOT_STEP_BP * k / 10000);
		struct vr_sim_set set = {
			.kind = VR_SIM_SET_ZIPF,
			.zipf_s = MATRIX_ZIPF_S,
			.zipf_total_hz = MATRIX_ZIPF_HZ_PER_GIB * (double)hot_sz / GIB,
		};

		set.start = start - start % VR_PAGE_SIZE;
		set.end = set.start + hot_sz;
		if (!vr_sim_add_phase(sim, name, phase_us, &set, 1, error))
			return FALSE;
	}
	return vr_sim_set_workload_ranges(sim, &workload, 1, error);
}

static const struct {
	const char *name;
	gboolean (*load)(struct vr_sim *sim, uint64_t phase_us, GError **error);
} builtins[] = {
	{ "clustered", load_clustered }, { "scattered", load_scattered },
	{ "zipf", load_zipf },		 { "shifting", load_shifting },
	{ "scan", load_scan },		 { "scan-fast", load_scan_fast },
	{ "demo", load_demo },		 { "matrix", load_matrix },
};

const char *const *vr_sim_builtin_names(void)
{
	static const char *names[G_N_ELEMENTS(builtins) + 1];

	for (guint i = 0; i < G_N_ELEMENTS(builtins); i++)
		names[i] = builtins[i].name;
	return names;
}

gboolean vr_sim_load_builtin(struct vr_sim *sim, const char *name, uint64_t phase_us,
			     GError **error)
{
	for (guint i = 0; i < G_N_ELEMENTS(builtins); i++)
		if (g_strcmp0(builtins[i].name, name) == 0)
			return builtins[i].load(sim, phase_us, error);
	g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_UNKNOWN_SCRIPT,
		    "unknown built-in script '%s'", name);
	return FALSE;
}
