// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target agent-procfs: the guest kernel's texts that only
 * vreclaim-agent reads, with the pure parsers its readers call on them:
 * /proc/iomem (kernel/iomem.c, vr_iomem_parse_system_ram()),
 * /proc/meminfo's SwapCached and /proc/vmstat (guest-agent/compact.c,
 * vr_compact_parse_swap_cached(), vr_vmstat_reclaim_parse()) and
 * /proc/PID/stat of a kdamond (kernel/damon-sysfs-status.c through
 * common/procfs-text.c's vr_proc_stat_parse()). /proc/meminfo and /proc/pressure/memory
 * (meminfo.c, psi.c) go through common/procfs-text.c: target procfs-text.
 * Every parser gets every input.
 *
 * Checks: iomem's ranges are page-aligned, not empty and sorted by start
 * (vr_iomem_largest() picks one of them); vmstat's byte counts are whole
 * pages.
 */
#include "compact.h"
#include "damon-sysfs.h"
#include "fuzz.h"
#include "iomem.h"
#include "monitor.h"
#include "procfs-text.h"

static void check_iomem(const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GArray) ranges = vr_iomem_parse_system_ram(text, &error);

	if (!ranges) {
		VR_FUZZ_CHECK(error, "no ranges and no error");
		return;
	}
	VR_FUZZ_CHECK(ranges->len > 0, "an empty list of System RAM");
	for (guint i = 0; i < ranges->len; i++) {
		const struct vr_range *r = &g_array_index(ranges, struct vr_range, i);

		VR_FUZZ_CHECK(r->start < r->end && r->start % VR_PAGE_SIZE == 0 &&
				      r->end % VR_PAGE_SIZE == 0,
			      "range %u is empty or not page-aligned", i);
		if (i > 0)
			VR_FUZZ_CHECK(g_array_index(ranges, struct vr_range, i - 1).start <=
					      r->start,
				      "ranges %u and %u are out of order", i - 1, i);
	}
	VR_FUZZ_CHECK(vr_iomem_largest(ranges) < ranges->len, "the largest is no range");
}

static void check_vmstat(const char *text)
{
	g_autoptr(GError) error = NULL;
	struct vr_vmstat_reclaim v = { 0 };
	uint64_t swap_cached = 0;

	if (vr_vmstat_reclaim_parse(text, &v, &error))
		VR_FUZZ_CHECK(v.pswpout_bytes % 4096 == 0 && v.pgsteal_anon_bytes % 4096 == 0 &&
				      v.pgsteal_file_bytes % 4096 == 0 &&
				      v.refault_bytes % 4096 == 0,
			      "vmstat counters that are no whole pages");
	else
		VR_FUZZ_CHECK(error, "a vmstat refusal without an error");
	g_clear_error(&error);
	if (!vr_compact_parse_swap_cached(text, &swap_cached, &error))
		VR_FUZZ_CHECK(error, "a SwapCached refusal without an error");
}

static void check_stat(const char *text)
{
	/* USER_HZ, and 1 Hz to check the conversion at its extremes. */
	static const uint64_t ticks_per_s[] = { 100, 1 };

	for (guint i = 0; i < G_N_ELEMENTS(ticks_per_s); i++) {
		g_autoptr(GError) error = NULL;
		struct vr_proc_stat st;

		if (!vr_proc_stat_parse(text, "stat", ticks_per_s[i], &st, &error))
			VR_FUZZ_CHECK(error, "a stat refusal without an error");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = vr_fuzz_strdup(data, size);

	check_iomem(text);
	check_vmstat(text);
	check_stat(text);
	return 0;
}
