// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target qemu-hmp: the text QEMU prints, as vreclaimd reads it:
 * `info mtree -f` (hostd/qmp/qemu-commands.c, vr_qemu_parse_mtree_ram()),
 * `gpa2hva` (vr_qemu_parse_gpa2hva()) and the "filename" query-chardev
 * gives of a chardev (hostd/qmp/qmp-domain.c, vr_qmp_parse_chardev_filename()).
 * Target qmp reaches the same parsers through JSON; here the text comes
 * raw, so the corpora are QEMU's outputs as captured (tests/data/qemu).
 * Every parser gets every input.
 *
 * Checks: mtree's RAM ranges are at most VR_QEMU_RAM_MAP_MAX_RANGES, not
 * empty, sorted by guest address and apart, each with its region's name;
 * gpa2hva's address is not 0; a chardev's socket path is absolute and fits
 * a sockaddr_un.
 */
#include <string.h>

#include "fuzz.h"
#include "qmp/qemu-commands.h"
#include "qmp/qmp-domain.h"

static void check_mtree(const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GArray) ranges = NULL;

	if (!vr_qemu_parse_mtree_ram(text, &ranges, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_QEMU_COMMANDS_ERROR,
			      "mtree refused otherwise: %s", error ? error->message : "(none)");
		return;
	}
	VR_FUZZ_CHECK(ranges->len <= VR_QEMU_RAM_MAP_MAX_RANGES, "%u RAM ranges", ranges->len);
	for (guint i = 0; i < ranges->len; i++) {
		const struct vr_qemu_mtree_range *r =
			&g_array_index(ranges, struct vr_qemu_mtree_range, i);

		VR_FUZZ_CHECK(r->size > 0 && r->region && *r->region,
			      "range %u is empty or has no region", i);
		VR_FUZZ_CHECK(r->gpa + (r->size - 1) >= r->gpa, "range %u wraps", i);
		if (i > 0) {
			const struct vr_qemu_mtree_range *p =
				&g_array_index(ranges, struct vr_qemu_mtree_range, i - 1);

			VR_FUZZ_CHECK(p->gpa + (p->size - 1) < r->gpa,
				      "ranges %u and %u overlap or are out of order", i - 1, i);
		}
	}
}

static void check_gpa2hva(const char *text)
{
	/* Where the captured outputs ask, with and without a region. */
	static const struct {
		uint64_t gpa;
		const char *region;
	} asks[] = { { 0x100000, "pc.ram" }, { 0x100000000, NULL }, { 0xfd000000, "vga.vram" } };

	for (guint i = 0; i < G_N_ELEMENTS(asks); i++) {
		g_autoptr(GError) error = NULL;
		uint64_t hva = 0;

		if (vr_qemu_parse_gpa2hva(text, asks[i].gpa, asks[i].region, &hva, &error))
			VR_FUZZ_CHECK(hva != 0, "a host-virtual address of 0");
		else
			VR_FUZZ_CHECK(error && error->domain == VR_QEMU_COMMANDS_ERROR,
				      "gpa2hva refused otherwise: %s",
				      error ? error->message : "(none)");
	}
}

static void check_chardev(const char *text)
{
	g_autoptr(GError) error = NULL;
	g_autofree char *path = NULL;

	if (!vr_qmp_parse_chardev_filename("charchannel0", text, &path, &error)) {
		VR_FUZZ_CHECK(error && error->domain == VR_QMP_DOMAIN_ERROR,
			      "the chardev refused otherwise: %s",
			      error ? error->message : "(none)");
		return;
	}
	VR_FUZZ_CHECK(path && path[0] == '/' && strlen(path) <= 107,
		      "a socket path that is relative or too long");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = vr_fuzz_strdup(data, size);

	check_mtree(text);
	check_gpa2hva(text);
	check_chardev(text);
	return 0;
}
