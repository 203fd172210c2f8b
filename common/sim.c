/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulated guest: phases of access sets over a guest-physical address
 * space, answered analytically (see sim.h for the model).
 */
#include "sim.h"

#include <math.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK(vr-sim-error-quark, vr_sim_error)
/* clang-format on */

#define US_PER_S 1e6

/* Exact harmonic sums up to this many ranks, an integral beyond. */
#define ZIPF_EXACT_RANKS 1000000ULL

/**
 * struct sim_set - a set compiled for fast queries.
 * @def:	as given.
 * @period_us:	hot, scan: time between two accesses of a page.
 * @zipf_norm:	zipf: accesses per second of rank 1 (total_hz / H(N, s)).
 * @salt:	mixed into the hash that gives each page its access offset.
 */
struct sim_set {
	struct vr_sim_set def;
	double period_us;
	double zipf_norm;
	uint64_t salt;
};

/**
 * struct sim_segment - a maximal address interval covered by the same sets.
 * @first, @nr:	the covering sets, as indices in the phase's @seg_sets.
 */
struct sim_segment {
	uint64_t start;
	uint64_t end;
	guint first;
	guint nr;
};

struct sim_phase {
	char *name;
	uint64_t start_us; /* offset in one pass of the script */
	uint64_t duration_us;
	GArray *sets;	  /* struct sim_set */
	GArray *segments; /* struct sim_segment, sorted, disjoint */
	GArray *seg_sets; /* guint indices into @sets */
};

struct vr_sim {
	uint64_t size;
	uint64_t seed;
	GPtrArray *phases; /* struct sim_phase * */
	uint64_t duration_us;
	GArray *workload; /* struct vr_range, sorted: the workload's memory */
};

/* One phase's share of a query interval, relative to the phase's start. */
struct sim_piece {
	const struct sim_phase *phase;
	double a_us; /* accesses strictly after a_us ... */
	double b_us; /* ... and at or before b_us count */
};

static void phase_free(gpointer p)
{
	struct sim_phase *ph = p;

	g_free(ph->name);
	g_array_unref(ph->sets);
	g_array_unref(ph->segments);
	g_array_unref(ph->seg_sets);
	g_free(ph);
}

struct vr_sim *vr_sim_new(uint64_t size_bytes, uint64_t seed, GError **error)
{
	struct vr_sim *sim;

	if (size_bytes == 0 || size_bytes % VR_PAGE_SIZE) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "guest size %" G_GUINT64_FORMAT
			    " bytes: must be a non-zero multiple of the page size (%llu)",
			    size_bytes, VR_PAGE_SIZE);
		return NULL;
	}
	sim = g_new0(struct vr_sim, 1);
	sim->size = size_bytes;
	sim->seed = seed;
	sim->phases = g_ptr_array_new_with_free_func(phase_free);
	sim->workload = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	g_array_append_val(sim->workload, ((struct vr_range){ 0, size_bytes }));
	return sim;
}

void vr_sim_free(struct vr_sim *sim)
{
	if (!sim)
		return;
	g_ptr_array_unref(sim->phases);
	g_array_unref(sim->workload);
	g_free(sim);
}

uint64_t vr_sim_size(const struct vr_sim *sim)
{
	return sim->size;
}

guint vr_sim_nr_phases(const struct vr_sim *sim)
{
	return sim->phases->len;
}

uint64_t vr_sim_script_duration_us(const struct vr_sim *sim)
{
	return sim->duration_us;
}

/* H(n, s) = sum_{i=1..n} i^-s */
static double harmonic(uint64_t n, double s)
{
	uint64_t exact = MIN(n, ZIPF_EXACT_RANKS);
	double h = 0;

	/* smallest terms first, for accuracy */
	for (uint64_t i = exact; i >= 1; i--)
		h += pow((double)i, -s);
	if (n > exact) {
		double lo = (double)exact + 0.5, hi = (double)n + 0.5;

		h += s == 1.0 ? log(hi / lo) : (pow(hi, 1 - s) - pow(lo, 1 - s)) / (1 - s);
	}
	return h;
}

static gboolean set_validate(const struct vr_sim *sim, const struct vr_sim_set *s, size_t i,
			     GError **error)
{
	const char *why = NULL;

	if (s->start % VR_PAGE_SIZE || s->end % VR_PAGE_SIZE)
		why = "start and end must be multiples of the page size";
	else if (s->end <= s->start || s->end > sim->size)
		why = "must be a non-empty range inside the guest";
	else if ((s->kind == VR_SIM_SET_HOT || s->kind == VR_SIM_SET_SCAN) &&
		 !(isfinite(s->hz) && s->hz > 0))
		why = "hz must be a positive number";
	else if (s->kind == VR_SIM_SET_ZIPF && !(isfinite(s->zipf_s) && s->zipf_s > 0))
		why = "zipf_s must be a positive number";
	else if (s->kind == VR_SIM_SET_ZIPF &&
		 !(isfinite(s->zipf_total_hz) && s->zipf_total_hz > 0))
		why = "zipf_total_hz must be a positive number";
	else if (s->kind == VR_SIM_SET_SCAN &&
		 (s->scan_window_bytes == 0 || s->scan_window_bytes % VR_PAGE_SIZE ||
		  s->scan_window_bytes > s->end - s->start))
		why = "scan_window_bytes must be page-aligned, non-zero and at most the set's size";
	else if (s->kind == VR_SIM_SET_SCAN && s->scan_speed_bps == 0)
		why = "scan_speed_bps must be positive";
	else if (s->kind > VR_SIM_SET_SCAN)
		why = "unknown kind";
	if (why) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "sets[%zu] [0x%" G_GINT64_MODIFIER "x, 0x%" G_GINT64_MODIFIER "x): %s",
			    i, s->start, s->end, why);
		return FALSE;
	}
	return TRUE;
}

static gint u64_cmp(gconstpointer a, gconstpointer b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Cuts the address space at every set boundary and lists the covering sets. */
static void phase_build_segments(struct sim_phase *ph)
{
	g_autoptr(GArray) cuts = g_array_new(FALSE, FALSE, sizeof(uint64_t));

	for (guint i = 0; i < ph->sets->len; i++) {
		const struct sim_set *s = &g_array_index(ph->sets, struct sim_set, i);

		g_array_append_val(cuts, s->def.start);
		g_array_append_val(cuts, s->def.end);
	}
	g_array_sort(cuts, u64_cmp);
	for (guint c = 0; c + 1 < cuts->len; c++) {
		struct sim_segment seg = {
			.start = g_array_index(cuts, uint64_t, c),
			.end = g_array_index(cuts, uint64_t, c + 1),
			.first = ph->seg_sets->len,
		};

		if (seg.start == seg.end)
			continue;
		for (guint i = 0; i < ph->sets->len; i++) {
			const struct sim_set *s = &g_array_index(ph->sets, struct sim_set, i);

			if (s->def.start <= seg.start && s->def.end >= seg.end) {
				g_array_append_val(ph->seg_sets, i);
				seg.nr++;
			}
		}
		if (seg.nr)
			g_array_append_val(ph->segments, seg);
	}
}

gboolean vr_sim_add_phase(struct vr_sim *sim, const char *name, uint64_t duration_us,
			  const struct vr_sim_set *sets, size_t nr, GError **error)
{
	struct sim_phase *ph;

	if (duration_us == 0) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "phase %u: duration must be positive", sim->phases->len);
		return FALSE;
	}
	for (size_t i = 0; i < nr; i++) {
		if (!set_validate(sim, &sets[i], i, error)) {
			g_prefix_error(error, "phase %u: ", sim->phases->len);
			return FALSE;
		}
	}

	ph = g_new0(struct sim_phase, 1);
	ph->name = g_strdup(name ? name : "");
	ph->start_us = sim->duration_us;
	ph->duration_us = duration_us;
	ph->sets = g_array_new(FALSE, TRUE, sizeof(struct sim_set));
	ph->segments = g_array_new(FALSE, FALSE, sizeof(struct sim_segment));
	ph->seg_sets = g_array_new(FALSE, FALSE, sizeof(guint));
	for (size_t i = 0; i < nr; i++) {
		struct sim_set s = { .def = sets[i] };

		s.salt = vr_hash64(sim->seed ^ vr_hash64(((uint64_t)sim->phases->len << 32) | i));
		if (s.def.kind == VR_SIM_SET_ZIPF)
			s.zipf_norm =
				s.def.zipf_total_hz /
				harmonic((s.def.end - s.def.start) / VR_PAGE_SIZE, s.def.zipf_s);
		else
			s.period_us = US_PER_S / s.def.hz;
		g_array_append_val(ph->sets, s);
	}
	phase_build_segments(ph);
	g_ptr_array_add(sim->phases, ph);
	sim->duration_us += duration_us;
	return TRUE;
}

/* ---- queries ---- */

static const struct sim_phase *phase_get(const struct vr_sim *sim, guint i)
{
	return g_ptr_array_index(sim->phases, i);
}

/* The phase running at @t_us and the absolute time it started. */
static const struct sim_phase *phase_at(const struct vr_sim *sim, uint64_t t_us, uint64_t *start_us)
{
	uint64_t pass_start, offset;
	guint lo = 0, hi;

	if (!sim->phases->len)
		return NULL;
	offset = t_us % sim->duration_us;
	pass_start = t_us - offset;
	hi = sim->phases->len;
	while (hi - lo > 1) {
		guint mid = (lo + hi) / 2;

		if (phase_get(sim, mid)->start_us <= offset)
			lo = mid;
		else
			hi = mid;
	}
	*start_us = pass_start + phase_get(sim, lo)->start_us;
	return phase_get(sim, lo);
}

int vr_sim_phase_at(const struct vr_sim *sim, uint64_t t_us, const char **name, uint64_t *start_us)
{
	uint64_t start;
	const struct sim_phase *ph = phase_at(sim, t_us, &start);

	if (!ph)
		return -1;
	if (name)
		*name = ph->name;
	if (start_us)
		*start_us = start;
	for (guint i = 0; i < sim->phases->len; i++)
		if (phase_get(sim, i) == ph)
			return (int)i;
	g_assert_not_reached();
}

/**
 * struct sim_pieces - (t0, t1] cut at phase boundaries.
 * @v, @n:	the pieces; @v points into @stack or to @heap.
 *
 * The script repeats and a phase's accesses are the same in every pass
 * (offsets are relative to the phase's start), so an interval of two passes
 * or more is answered by one whole pass: at most 2 * nr_phases + 1 pieces.
 */
struct sim_pieces {
	struct sim_piece stack[16];
	struct sim_piece *heap;
	struct sim_piece *v;
	guint n;
};

static void pieces_init(struct sim_pieces *p, const struct vr_sim *sim, uint64_t t0_us,
			uint64_t t1_us)
{
	guint max = 2 * sim->phases->len + 1;
	uint64_t cur = t0_us;

	p->heap = NULL;
	p->v = p->stack;
	p->n = 0;
	if (max > G_N_ELEMENTS(p->stack))
		p->v = p->heap = g_new(struct sim_piece, max);
	if (sim->duration_us && t1_us > t0_us && t1_us - t0_us >= 2 * sim->duration_us) {
		/* a whole pass lies inside: it alone decides */
		cur = (t0_us + sim->duration_us - 1) / sim->duration_us * sim->duration_us;
		t1_us = cur + sim->duration_us;
	}
	while (cur < t1_us && p->n < max) {
		uint64_t start;
		const struct sim_phase *ph = phase_at(sim, cur, &start);
		uint64_t end;

		if (!ph)
			break;
		end = MIN(start + ph->duration_us, t1_us);
		p->v[p->n++] = (struct sim_piece){
			.phase = ph,
			.a_us = (double)(cur - start),
			.b_us = (double)(end - start),
		};
		cur = end;
	}
}

static void pieces_clear(struct sim_pieces *p)
{
	g_free(p->heap);
}

static const struct sim_segment *segment_find(const struct sim_phase *ph, uint64_t addr)
{
	guint lo = 0, hi = ph->segments->len;

	while (lo < hi) {
		guint mid = (lo + hi) / 2;
		const struct sim_segment *seg =
			&g_array_index(ph->segments, struct sim_segment, mid);

		if (seg->end <= addr)
			lo = mid + 1;
		else if (seg->start > addr)
			hi = mid;
		else
			return seg;
	}
	return NULL;
}

/* The first segment of @ph that ends above @addr, or NULL. */
static const struct sim_segment *segment_from(const struct sim_phase *ph, uint64_t addr)
{
	guint lo = 0, hi = ph->segments->len;

	while (lo < hi) {
		guint mid = (lo + hi) / 2;

		if (g_array_index(ph->segments, struct sim_segment, mid).end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ph->segments->len ? &g_array_index(ph->segments, struct sim_segment, lo) : NULL;
}

/* Where in [0, 1) the page's access train starts, as a fraction of a period. */
static double page_phase(const struct sim_set *s, uint64_t addr)
{
	return (double)(vr_hash64(s->salt ^ (addr / VR_PAGE_SIZE)) >> 11) * 0x1.0p-53;
}

/* Accesses per second of one page of a zipf set. */
static double zipf_hz(const struct sim_set *s, uint64_t addr)
{
	double rank = (double)((addr - s->def.start) / VR_PAGE_SIZE + 1);

	return s->zipf_norm * (s->def.zipf_s == 1.0 ? 1 / rank : pow(rank, -s->def.zipf_s));
}

/* The first access of the train off + j * period (j >= 0) in (a, b], or
 * INFINITY. Whether a page was accessed in (a, b] is whether this is finite. */
static double train_first(double off, double period, double a, double b)
{
	double first;

	if (b <= a)
		return INFINITY;
	if (off > a)
		first = off;
	else
		first = off + (floor((a - off) / period) + 1) * period;
	return first <= b ? first : INFINITY;
}

/*
 * The first access of page @addr of scan set @s in (a, b]: the train inside
 * each pass of the window over the page. The window covers [v*t, v*t + w)
 * (mod len): the page is inside it during t in ((x + k*len - w) / v,
 * (x + k*len) / v], for k >= 0. When a stay lasts a period or more, the
 * first whole pass holds an access, so the walk is short.
 */
static double scan_first(const struct sim_set *s, uint64_t addr, double a, double b)
{
	double len = (double)(s->def.end - s->def.start);
	double x = (double)(addr - s->def.start);
	double w = (double)s->def.scan_window_bytes;
	double v = (double)s->def.scan_speed_bps / US_PER_S;
	double off = page_phase(s, addr) * s->period_us;

	for (double k = MAX(0, floor((a * v - x) / len)); (x + k * len - w) / v < b; k++) {
		double lo = MAX(a, (x + k * len - w) / v), hi = MIN(b, (x + k * len) / v);
		double first = train_first(off, s->period_us, lo, hi);

		if (isfinite(first))
			return first;
	}
	return INFINITY;
}

static double set_first(const struct sim_set *s, uint64_t addr, double a, double b)
{
	switch (s->def.kind) {
	case VR_SIM_SET_HOT:
		return train_first(page_phase(s, addr) * s->period_us, s->period_us, a, b);
	case VR_SIM_SET_ZIPF: {
		double period = US_PER_S / zipf_hz(s, addr);

		return train_first(page_phase(s, addr) * period, period, a, b);
	}
	case VR_SIM_SET_SCAN:
		return scan_first(s, addr, a, b);
	}
	return INFINITY;
}

/* The first access of page @addr in (a, b] of phase @ph (phase-relative us). */
static double phase_first(const struct sim_phase *ph, uint64_t addr, double a, double b)
{
	const struct sim_segment *seg = segment_find(ph, addr);
	double first = INFINITY;

	for (guint i = 0; seg && i < seg->nr; i++) {
		guint idx = g_array_index(ph->seg_sets, guint, seg->first + i);

		first = MIN(first,
			    set_first(&g_array_index(ph->sets, struct sim_set, idx), addr, a, b));
	}
	return first;
}

static bool piece_hits(const struct sim_piece *p, uint64_t addr)
{
	return isfinite(phase_first(p->phase, addr, p->a_us, p->b_us));
}

bool vr_sim_page_accessed(const struct vr_sim *sim, uint64_t addr, uint64_t t0_us, uint64_t t1_us)
{
	struct sim_pieces pieces;
	bool hit = false;

	pieces_init(&pieces, sim, t0_us, t1_us);
	addr -= addr % VR_PAGE_SIZE;
	for (guint i = 0; i < pieces.n && !hit; i++)
		hit = piece_hits(&pieces.v[i], addr);
	pieces_clear(&pieces);
	return hit;
}

uint64_t vr_sim_accessed_bytes(const struct vr_sim *sim, uint64_t start, uint64_t end,
			       uint64_t t0_us, uint64_t t1_us)
{
	struct sim_pieces pieces;
	uint64_t addr = start - start % VR_PAGE_SIZE;
	uint64_t bytes = 0;

	pieces_init(&pieces, sim, t0_us, t1_us);

	while (addr < end) {
		uint64_t next = end; /* where the next covered page may start */
		bool covered = false, hit = false;

		for (guint i = 0; i < pieces.n; i++) {
			const struct sim_segment *seg = segment_from(pieces.v[i].phase, addr);

			if (!seg)
				continue;
			if (seg->start <= addr)
				covered = true;
			else
				next = MIN(next, seg->start);
		}
		if (!covered) {
			addr = next;
			continue;
		}
		for (guint i = 0; i < pieces.n && !hit; i++)
			hit = piece_hits(&pieces.v[i], addr);
		if (hit)
			bytes += MIN(addr + VR_PAGE_SIZE, end) - MAX(addr, start);
		addr += VR_PAGE_SIZE;
	}
	pieces_clear(&pieces);
	return bytes;
}

uint64_t vr_sim_hot_bytes(const struct vr_sim *sim, uint64_t t_us)
{
	uint64_t start, bytes = 0;
	const struct sim_phase *ph = phase_at(sim, t_us, &start);

	if (!ph)
		return 0;
	for (guint i = 0; i < ph->segments->len; i++) {
		const struct sim_segment *seg = &g_array_index(ph->segments, struct sim_segment, i);

		bytes += seg->end - seg->start;
	}
	return bytes;
}

/* Is page @addr inside scan set @s's window at phase-relative time @t? */
static bool scan_in_window(const struct sim_set *s, uint64_t addr, double t)
{
	double len = (double)(s->def.end - s->def.start);
	double lead = fmod((double)s->def.scan_speed_bps / US_PER_S * t, len);
	double x = (double)(addr - s->def.start);

	return fmod(x - lead + len, len) < (double)s->def.scan_window_bytes;
}

static double phase_page_hz(const struct sim_phase *ph, uint64_t addr, double t)
{
	const struct sim_segment *seg = segment_find(ph, addr);
	double hz = 0;

	for (guint i = 0; seg && i < seg->nr; i++) {
		guint idx = g_array_index(ph->seg_sets, guint, seg->first + i);
		const struct sim_set *s = &g_array_index(ph->sets, struct sim_set, idx);

		switch (s->def.kind) {
		case VR_SIM_SET_HOT:
			hz += s->def.hz;
			break;
		case VR_SIM_SET_ZIPF:
			hz += zipf_hz(s, addr);
			break;
		case VR_SIM_SET_SCAN:
			if (scan_in_window(s, addr, t))
				hz += s->def.hz;
			break;
		}
	}
	return hz;
}

double vr_sim_page_hz(const struct vr_sim *sim, uint64_t addr, uint64_t t_us)
{
	uint64_t start;
	const struct sim_phase *ph = phase_at(sim, t_us, &start);

	return ph ? phase_page_hz(ph, addr - addr % VR_PAGE_SIZE, (double)(t_us - start)) : 0;
}

uint64_t vr_sim_hottest_page(const struct vr_sim *sim, uint64_t t_us)
{
	uint64_t start, best = G_MAXUINT64;
	const struct sim_phase *ph = phase_at(sim, t_us, &start);
	double t, best_hz = 0;

	if (!ph)
		return best;
	t = (double)(t_us - start);
	/*
	 * Rates are constant within a segment but for zipf (falling with the
	 * rank: highest at the segment's start) and scan (inside the window):
	 * so the candidates are segment starts and the first page of each
	 * scan window.
	 */
	for (guint i = 0; i < ph->segments->len + ph->sets->len; i++) {
		uint64_t addr;
		double hz;

		if (i < ph->segments->len) {
			addr = g_array_index(ph->segments, struct sim_segment, i).start;
		} else {
			const struct sim_set *s =
				&g_array_index(ph->sets, struct sim_set, i - ph->segments->len);
			double len = (double)(s->def.end - s->def.start);
			double lead = fmod((double)s->def.scan_speed_bps / US_PER_S * t, len);

			if (s->def.kind != VR_SIM_SET_SCAN)
				continue;
			addr = s->def.start + (uint64_t)lead;
			addr -= addr % VR_PAGE_SIZE;
			if (!scan_in_window(s, addr, t))
				addr += VR_PAGE_SIZE;
			if (addr >= s->def.end)
				addr = s->def.start;
		}
		hz = phase_page_hz(ph, addr, t);
		if (hz > best_hz || (hz == best_hz && hz > 0 && addr < best)) {
			best_hz = hz;
			best = addr;
		}
	}
	return best;
}

/* ---- next access and the workload's memory (for the simulated reclaim) ---- */

uint64_t vr_sim_next_access_us(const struct vr_sim *sim, uint64_t addr, uint64_t t_us)
{
	uint64_t start;
	const struct sim_phase *ph = phase_at(sim, t_us, &start);
	guint idx = 0;
	double a;

	if (!ph)
		return G_MAXUINT64;
	while (phase_get(sim, idx) != ph)
		idx++;
	addr -= addr % VR_PAGE_SIZE;
	a = (double)(t_us - start);
	/*
	 * The rest of this phase, then one whole pass (which ends with this
	 * phase again, for the accesses before @t_us in it): every pass
	 * repeats the same accesses, so a page not accessed in them never is.
	 */
	for (guint n = 0; n <= sim->phases->len; n++) {
		double first = phase_first(ph, addr, a, (double)ph->duration_us);

		if (isfinite(first)) {
			/* the smallest whole us T with the access in (t, T] */
			double t = ceil(first);

			return t >= (double)(G_MAXUINT64 - start) ? G_MAXUINT64 :
								    start + (uint64_t)t;
		}
		start += ph->duration_us;
		idx = (idx + 1) % sim->phases->len;
		ph = phase_get(sim, idx);
		a = 0;
	}
	return G_MAXUINT64;
}

gboolean vr_sim_set_workload_ranges(struct vr_sim *sim, const struct vr_range *ranges, size_t nr,
				    GError **error)
{
	g_autoptr(GError) local = NULL;

	if (nr == 0) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
			    "workload ranges: at least one range is needed");
		return FALSE;
	}
	if (!vr_ranges_validate(ranges, nr, G_MAXUINT32, &local)) {
		g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID, "workload %s",
			    local->message);
		return FALSE;
	}
	for (size_t i = 0; i < nr; i++) {
		if (ranges[i].end > sim->size) {
			g_set_error(error, VR_SIM_ERROR, VR_SIM_ERROR_INVALID,
				    "workload ranges[%zu] [0x%" G_GINT64_MODIFIER
				    "x, 0x%" G_GINT64_MODIFIER "x): beyond the guest's end",
				    i, ranges[i].start, ranges[i].end);
			return FALSE;
		}
	}
	g_array_set_size(sim->workload, 0);
	g_array_append_vals(sim->workload, ranges, (guint)nr);
	g_array_sort(sim->workload, u64_cmp); /* by start: disjoint ranges */
	return TRUE;
}

const struct vr_range *vr_sim_workload_ranges(const struct vr_sim *sim, size_t *nr)
{
	*nr = sim->workload->len;
	return (const struct vr_range *)(void *)sim->workload->data;
}

uint64_t vr_sim_workload_bytes(const struct vr_sim *sim)
{
	uint64_t bytes = 0;

	for (guint i = 0; i < sim->workload->len; i++) {
		const struct vr_range *r = &g_array_index(sim->workload, struct vr_range, i);

		bytes += r->end - r->start;
	}
	return bytes;
}
