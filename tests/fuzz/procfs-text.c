// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target procfs-text: the procfs texts both vreclaim-agent (of its
 * guest's kernel) and vreclaimd (of the host's) read, common/procfs-text.c:
 * /proc/meminfo (vr_meminfo_parse(), which the agent's meminfo.c and
 * vreclaimd call on the file's text), /proc/pressure/memory (vr_psi_parse(),
 * the agent's psi.c), /proc/buddyinfo (vr_buddyinfo_parse()) and the
 * "Name: N kB" lists under them (vr_kb_fields_parse()). Every parser gets
 * every input: each refuses the others' texts, and a mutation of one format
 * is tried on all.
 *
 * Checks: an error is VR_PROCFS_TEXT_ERROR_INVALID and leaves the output
 * alone (the headers promise it); what is accepted keeps the header's
 * invariants (free <= total, percentages <= 100 %).
 */
#include <stddef.h>
#include <string.h>

#include "fuzz.h"
#include "procfs-text.h"

/* A pattern no parser writes, to see that a failed parse left the output alone. */
#define UNTOUCHED 0xa5

static gboolean untouched(const void *p, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (((const uint8_t *)p)[i] != UNTOUCHED)
			return FALSE;
	return TRUE;
}

static void check_error(const GError *error, const char *parser)
{
	VR_FUZZ_CHECK(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		      "%s failed otherwise: %s", parser, error ? error->message : "(none)");
}

static void check_meminfo(const char *text)
{
	g_autoptr(GError) error = NULL;
	struct vr_meminfo m;

	memset(&m, UNTOUCHED, sizeof(m));
	if (!vr_meminfo_parse(text, &m, &error)) {
		check_error(error, "vr_meminfo_parse");
		VR_FUZZ_CHECK(untouched(&m, sizeof(m)), "a failed meminfo parse wrote");
		return;
	}
	VR_FUZZ_CHECK(m.mem_total_bytes > 0 && m.mem_free_bytes <= m.mem_total_bytes &&
			      m.swap_free_bytes <= m.swap_total_bytes,
		      "meminfo out of its invariants");
	VR_FUZZ_CHECK(vr_meminfo_free_mem_rate(&m) <= 1000, "a free memory rate above 1000");
}

static void check_psi_line(const struct vr_psi_line *l)
{
	VR_FUZZ_CHECK(l->avg10_bp <= 10000 && l->avg60_bp <= 10000 && l->avg300_bp <= 10000,
		      "a PSI average above 100 %%");
}

static void check_psi(const char *text)
{
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory psi;

	memset(&psi, UNTOUCHED, sizeof(psi));
	if (!vr_psi_parse(text, &psi, &error)) {
		check_error(error, "vr_psi_parse");
		VR_FUZZ_CHECK(untouched(&psi, sizeof(psi)), "a failed PSI parse wrote");
		return;
	}
	check_psi_line(&psi.some);
	check_psi_line(&psi.full);
}

static void check_buddyinfo(const char *text)
{
	/* The orders free page reporting reports at (pageblock_order is 9 on
	 * x86), the smallest, and one beyond every line's counts. */
	static const guint orders[] = { 0, 9, VR_BUDDYINFO_MAX_ORDERS + 1 };
	uint64_t previous = 0;

	for (guint i = 0; i < G_N_ELEMENTS(orders); i++) {
		g_autoptr(GError) error = NULL;
		uint64_t free_bytes;

		memset(&free_bytes, UNTOUCHED, sizeof(free_bytes));
		if (!vr_buddyinfo_parse(text, orders[i], 4096, &free_bytes, &error)) {
			check_error(error, "vr_buddyinfo_parse");
			VR_FUZZ_CHECK(untouched(&free_bytes, sizeof(free_bytes)),
				      "a failed buddyinfo parse wrote");
			/* Every count is checked whatever the order. */
			VR_FUZZ_CHECK(i == 0, "buddyinfo refused at order %u only", orders[i]);
			return;
		}
		/* Fewer orders counted, no more memory. */
		VR_FUZZ_CHECK(i == 0 || free_bytes <= previous, "more free memory at order %u",
			      orders[i]);
		previous = free_bytes;
	}
	VR_FUZZ_CHECK(previous == 0, "memory counted above every line's orders");
}

struct status_fields {
	uint64_t vm_rss;
	uint64_t vm_swap;
	uint64_t rss_anon;
};

static void check_kb_fields(const char *text)
{
	static const struct vr_kb_field fields[] = {
		{ "VmRSS", offsetof(struct status_fields, vm_rss) },
		{ "VmSwap", offsetof(struct status_fields, vm_swap) },
		{ "RssAnon", offsetof(struct status_fields, rss_anon) },
	};
	g_autoptr(GError) error = NULL;
	struct status_fields out;

	memset(&out, UNTOUCHED, sizeof(out));
	if (!vr_kb_fields_parse(text, fields, G_N_ELEMENTS(fields), &out, &error)) {
		check_error(error, "vr_kb_fields_parse");
		VR_FUZZ_CHECK(untouched(&out, sizeof(out)), "a failed kB fields parse wrote");
		return;
	}
	VR_FUZZ_CHECK(out.vm_rss % 1024 == 0 && out.vm_swap % 1024 == 0 && out.rss_anon % 1024 == 0,
		      "kB fields that are no whole kB");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = vr_fuzz_strdup(data, size);

	check_meminfo(text);
	check_psi(text);
	check_buddyinfo(text);
	check_kb_fields(text);
	return 0;
}
