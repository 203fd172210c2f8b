// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target host-procfs: the per-process procfs texts vreclaimd reads of
 * each domain's QEMU (common/procfs-text.c): /proc/<pid>/status
 * (vr_proc_status_parse(), vr_proc_status_vm_size_parse()),
 * /proc/<pid>/smaps_rollup (vr_smaps_rollup_parse()) and /proc/<pid>/stat
 * (vr_proc_stat_parse(), whose command name QEMU's user chooses), and
 * /proc/<pid>/smaps (kernel/process-pageout.c, vr_smaps_parse_range_usage()).
 * Every parser gets every input.
 *
 * Checks: an error is VR_PROCFS_TEXT_ERROR_INVALID, names the file and
 * leaves the output alone; sizes accepted are whole kB.
 */
#include <string.h>

#include "fuzz.h"
#include "process-pageout.h"
#include "procfs-text.h"

#define UNTOUCHED 0x5a
#define FUZZ_PATH "/proc/4242/file"

static gboolean untouched(const void *p, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (((const uint8_t *)p)[i] != UNTOUCHED)
			return FALSE;
	return TRUE;
}

/* A failed parse: the right error, naming the file, nothing written. */
static void check_refusal(const GError *error, const void *out, size_t size, const char *parser)
{
	VR_FUZZ_CHECK(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		      "%s failed otherwise: %s", parser, error ? error->message : "(none)");
	VR_FUZZ_CHECK(strstr(error->message, FUZZ_PATH), "%s: a message without the path: %s",
		      parser, error->message);
	VR_FUZZ_CHECK(untouched(out, size), "a failed %s wrote", parser);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = vr_fuzz_strdup(data, size);
	struct vr_proc_status status;
	struct vr_smaps_rollup rollup;
	struct vr_proc_stat proc_stat;
	uint64_t vm_size;
	GError *error = NULL;

	memset(&status, UNTOUCHED, sizeof(status));
	if (vr_proc_status_parse(text, FUZZ_PATH, &status, &error))
		VR_FUZZ_CHECK(status.vm_rss_bytes % 1024 == 0 && status.vm_swap_bytes % 1024 == 0,
			      "status sizes that are no whole kB");
	else
		check_refusal(error, &status, sizeof(status), "vr_proc_status_parse");
	g_clear_error(&error);

	memset(&vm_size, UNTOUCHED, sizeof(vm_size));
	if (vr_proc_status_vm_size_parse(text, FUZZ_PATH, &vm_size, &error))
		VR_FUZZ_CHECK(vm_size % 1024 == 0, "a VmSize that is no whole kB");
	else
		check_refusal(error, &vm_size, sizeof(vm_size), "vr_proc_status_vm_size_parse");
	g_clear_error(&error);

	memset(&rollup, UNTOUCHED, sizeof(rollup));
	if (vr_smaps_rollup_parse(text, FUZZ_PATH, &rollup, &error))
		VR_FUZZ_CHECK(rollup.rss_bytes % 1024 == 0 && rollup.anonymous_bytes % 1024 == 0 &&
				      rollup.swap_bytes % 1024 == 0,
			      "smaps_rollup sizes that are no whole kB");
	else
		check_refusal(error, &rollup, sizeof(rollup), "vr_smaps_rollup_parse");
	g_clear_error(&error);

	/* USER_HZ, and the bounds of the tick rate. */
	static const uint64_t ticks_per_s[] = { 100, 1, 1000000 };
	for (guint i = 0; i < G_N_ELEMENTS(ticks_per_s); i++) {
		memset(&proc_stat, UNTOUCHED, sizeof(proc_stat));
		if (!vr_proc_stat_parse(text, FUZZ_PATH, ticks_per_s[i], &proc_stat, &error))
			check_refusal(error, &proc_stat, sizeof(proc_stat), "vr_proc_stat_parse");
		g_clear_error(&error);
	}

	/* The whole address space, and a range of a typical guest's RAM. */
	static const uint64_t ranges[][2] = { { 0, G_MAXUINT64 },
					      { 0x7f0000000000, 0x7f0040000000 } };
	for (guint i = 0; i < G_N_ELEMENTS(ranges); i++) {
		struct vr_range_usage usage;

		memset(&usage, UNTOUCHED, sizeof(usage));
		if (!vr_smaps_parse_range_usage(text, ranges[i][0], ranges[i][1], &usage, &error)) {
			VR_FUZZ_CHECK(error && error->domain == VR_HOST_PAGEOUT_ERROR,
				      "vr_smaps_parse_range_usage failed otherwise: %s",
				      error ? error->message : "(none)");
			VR_FUZZ_CHECK(untouched(&usage, sizeof(usage)),
				      "a failed vr_smaps_parse_range_usage wrote");
		}
		g_clear_error(&error);
	}
	return 0;
}
