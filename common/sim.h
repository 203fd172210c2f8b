/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A simulated guest: guest-physical memory of any size (1 TiB and more, with
 * nothing allocated per page) whose access pattern is a script of phases.
 *
 * The model. Within a phase each page is covered by zero or more access sets.
 * A set makes each of its pages accessed periodically, with a period given by
 * the set and a phase offset that is a hash of (seed, phase, set, page): so
 * whether a page was accessed in any interval (t0, t1] is a pure function,
 * answered in O(1) per set, and identical for the engine's sampling, the
 * page-granular baseline and the truth used in accuracy measurements.
 *
 * Kinds of sets:
 * - hot:  every page of [start, end) accessed @hz times a second;
 * - zipf: page of rank i (1 = first page) accessed
 *	   total_hz * i^-s / H(N, s) times a second (H the generalized harmonic
 *	   number over the N pages of the set);
 * - scan: a window of @scan_window_bytes slides through [start, end) at
 *	   @scan_speed_bps bytes a second (wrapping); pages inside the window are
 *	   accessed @hz times a second, others not at all.
 * A phase with no sets is idle. After the last phase the script starts over.
 */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "monitor.h"

#define VR_SIM_ERROR (vr_sim_error_quark())
GQuark vr_sim_error_quark(void);

/**
 * enum vr_sim_error - error codes in the VR_SIM_ERROR domain.
 * @VR_SIM_ERROR_INVALID: a size, phase or set is out of range.
 * @VR_SIM_ERROR_UNKNOWN_SCRIPT: no built-in script has that name.
 */
enum vr_sim_error {
	VR_SIM_ERROR_INVALID,
	VR_SIM_ERROR_UNKNOWN_SCRIPT,
};

enum vr_sim_set_kind {
	VR_SIM_SET_HOT,
	VR_SIM_SET_ZIPF,
	VR_SIM_SET_SCAN,
};

/**
 * struct vr_sim_set - pages accessed in a pattern during one phase.
 * @kind:	the pattern (see the file comment).
 * @start:	first byte, page-aligned, guest-physical.
 * @end:	one past the last byte, page-aligned, <= the guest size.
 * @hz:		hot and scan: accesses per second of each page (of each page in
 *		the window for scan); > 0.
 * @zipf_s:	zipf: the exponent, > 0 (1.0 is classic zipf).
 * @zipf_total_hz: zipf: page accesses per second over the whole set, > 0.
 * @scan_window_bytes: scan: window size, page-aligned, 0 < size <= set size.
 * @scan_speed_bps: scan: bytes per second the window moves, > 0.
 */
struct vr_sim_set {
	enum vr_sim_set_kind kind;
	uint64_t start;
	uint64_t end;
	double hz;
	double zipf_s;
	double zipf_total_hz;
	uint64_t scan_window_bytes;
	uint64_t scan_speed_bps;
};

struct vr_sim;
typedef struct vr_sim vr_sim;

/**
 * vr_sim_new() - a simulated guest of @size_bytes (page-aligned, > 0) with
 * an empty script (idle forever) and accesses seeded by @seed.
 * Return: owned by the caller (vr_sim_free()).
 */
struct vr_sim *vr_sim_new(uint64_t size_bytes, uint64_t seed, GError **error);
void vr_sim_free(struct vr_sim *sim);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_sim, vr_sim_free)

/**
 * vr_sim_add_phase() - append a phase of @duration_us (> 0) with @nr @sets
 * (copied). @name is for reports, may be NULL. Nothing changes on error.
 */
gboolean vr_sim_add_phase(struct vr_sim *sim, const char *name, uint64_t duration_us,
			  const struct vr_sim_set *sets, size_t nr, GError **error);

/**
 * vr_sim_load_builtin() - append the phases of the built-in script @name,
 * scaled to the guest size: "clustered", "scattered", "zipf", "shifting",
 * "scan", "scan-fast", "demo", "matrix". Each phase lasts @phase_us.
 * "matrix" (the reclaim benchmark's workload, docs/simulate.md) also sets the
 * workload's memory (vr_sim_set_workload_ranges()).
 */
gboolean vr_sim_load_builtin(struct vr_sim *sim, const char *name, uint64_t phase_us,
			     GError **error);

/**
 * vr_sim_load_json() - append the phases of the workload document @text
 * (@len bytes, or NUL-terminated when @len < 0; docs/simulate.md, "Workload
 * files"), and set the workload's memory when the document gives it. All or
 * nothing: on error @sim is unchanged, and the message (VR_SIM_ERROR_INVALID)
 * starts with the JSON path of the problem, or with "line L, column C" for
 * a syntax error.
 */
gboolean vr_sim_load_json(struct vr_sim *sim, const char *text, gssize len, GError **error);

/**
 * vr_sim_builtin_names() - NULL-terminated list of built-in script names.
 */
const char *const *vr_sim_builtin_names(void);

uint64_t vr_sim_size(const struct vr_sim *sim);
guint vr_sim_nr_phases(const struct vr_sim *sim);

/**
 * vr_sim_script_duration_us() - one pass over all phases, in us.
 */
uint64_t vr_sim_script_duration_us(const struct vr_sim *sim);

/**
 * vr_sim_phase_at() - index of the phase running at @t_us; its name in @name
 * (may be NULL) and the time it started (this pass) in @start_us (may be NULL).
 * Return: the phase index, or -1 when the script is empty.
 */
int vr_sim_phase_at(const struct vr_sim *sim, uint64_t t_us, const char **name, uint64_t *start_us);

/**
 * vr_sim_page_accessed() - was the page holding @addr accessed in
 * (@t0_us, @t1_us]? O(1) per set covering the page, O(log n) to find them.
 */
bool vr_sim_page_accessed(const struct vr_sim *sim, uint64_t addr, uint64_t t0_us, uint64_t t1_us);

/**
 * vr_sim_accessed_bytes() - bytes of the pages in [@start, @end) accessed in
 * (@t0_us, @t1_us]: the truth for accuracy measurements. Walks pages only
 * where some set may have touched them.
 */
uint64_t vr_sim_accessed_bytes(const struct vr_sim *sim, uint64_t start, uint64_t end,
			       uint64_t t0_us, uint64_t t1_us);

/**
 * vr_sim_hot_bytes() - bytes covered by any set of the phase running at
 * @t_us (the phase's working set).
 */
uint64_t vr_sim_hot_bytes(const struct vr_sim *sim, uint64_t t_us);

/**
 * vr_sim_page_hz() - accesses per second of the page holding @addr at @t_us.
 */
double vr_sim_page_hz(const struct vr_sim *sim, uint64_t addr, uint64_t t_us);

/**
 * vr_sim_hottest_page() - address of the page with the highest access rate
 * at @t_us (the lowest such address on ties); G_MAXUINT64 when idle.
 */
uint64_t vr_sim_hottest_page(const struct vr_sim *sim, uint64_t t_us);

/**
 * vr_sim_next_access_us() - the first access to the page holding @addr after
 * @t_us: the smallest whole T > @t_us such that vr_sim_page_accessed(@addr,
 * @t_us, T) is true, across phases and repetitions of the script.
 * Return: T, or G_MAXUINT64 when the page is never accessed again. O(1) per
 * set covering the page per phase (a scan set: per pass of its window), over
 * at most one pass of the script.
 */
uint64_t vr_sim_next_access_us(const struct vr_sim *sim, uint64_t addr, uint64_t t_us);

/**
 * vr_sim_set_workload_ranges() - declare the workload's memory: the @nr
 * @ranges (copied; page-aligned, disjoint, inside the guest) that the
 * workload has touched before the script starts, so they are resident at
 * time 0 (the simulated reclaim starts from them, and memory saving is
 * measured against their size). By default it is the whole guest; the
 * built-in "matrix" script sets its own. Nothing changes on error.
 */
gboolean vr_sim_set_workload_ranges(struct vr_sim *sim, const struct vr_range *ranges, size_t nr,
				    GError **error);

/**
 * vr_sim_workload_ranges() - the workload's memory, sorted; @nr gets the
 * count. Valid until the next vr_sim_set_workload_ranges().
 */
const struct vr_range *vr_sim_workload_ranges(const struct vr_sim *sim, size_t *nr);

/** vr_sim_workload_bytes() - the size of the workload's memory, in bytes. */
uint64_t vr_sim_workload_bytes(const struct vr_sim *sim);

/**
 * vr_sim_access_ops - the "sim" access source. Its data is a
 * struct vr_sim_access (vr_sim_access_new()); every target of the context is
 * read as this one simulated guest, whose RAM is [0, size).
 */
extern const struct vr_access_ops vr_sim_access_ops;

struct vr_sim_access;

/**
 * vr_sim_access_new() - access source data over @sim (borrowed: @sim must
 * outlive it). Freed by the ops' cleanup, i.e. with the context.
 */
struct vr_sim_access *vr_sim_access_new(const struct vr_sim *sim);

/**
 * vr_sim_access_nr_checks() - pages checked so far (a cost counter).
 */
uint64_t vr_sim_access_nr_checks(const struct vr_sim_access *sa);
