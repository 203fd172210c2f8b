/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the RAM map (hostd/qmp/ram-map.c), both directions: guest
 * ranges to page-aligned host ranges for host-pageout (holes, partial
 * pages, ranges across map entries, invalid maps and ranges), and a
 * host-virtual picture of the QEMU process to guest-physical regions for
 * host-damon (aliases, parts outside RAM). Pure: no process is touched.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "qmp/ram-map.h"
#include "test-messages.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
/* A host address where QEMU could have mapped guest RAM. */
#define H	0x7f0000000000ULL
#define PAGE	VR_PAGE_SIZE
#define HVA_LOW H

TestSuite(ram_map);
TestSuite(ram_map_to_guest);

/* ---- helpers ---- */

static uint64_t iov_start(const struct iovec *v)
{
	return (uint64_t)(uintptr_t)v->iov_base;
}

/* ---- guest to host: vr_ram_map_translate() ---- */

/**
 * struct host_want - one expected host range.
 * @start:	host address.
 * @len:	bytes.
 */
struct host_want {
	uint64_t start;
	uint64_t len;
};

struct translate_case {
	char name[64];
	struct vr_ram_range map[3];
	guint nr_map;
	struct vr_range guest[4];
	guint nr_guest;
	struct host_want want[4];
	guint nr_want;
};

/* A q35 guest with 6 GiB: 2 GiB below the PCI hole, 4 GiB above 4 GiB, one
 * RAM block in QEMU, so the host side is contiguous across the hole:
 *
 *   gpa  0 ........ 2G  (hole)  4G ..................... 8G
 *   hva  H ........ H+2G        H+2G ................... H+6G
 */
#define Q35_MAP                                                                                    \
	.map = { { .gpa = 0, .hva = H, .size = 2 * GIB },                                          \
		 { .gpa = 4 * GIB, .hva = H + 2 * GIB, .size = 4 * GIB } },                        \
	.nr_map = 2

static struct translate_case translate_cases[] = {
	{ .name = "inside one entry",
	  Q35_MAP,
	  .guest = { { 0x100000, 0x200000 } },
	  .nr_guest = 1,
	  .want = { { H + 0x100000, MIB } },
	  .nr_want = 1 },
	/* [1G ........ 2G) hole [4G ........ 5G)  ->  host H+1G .. H+3G, one range */
	{ .name = "over the hole, contiguous host: one range",
	  Q35_MAP,
	  .guest = { { 1 * GIB, 5 * GIB } },
	  .nr_guest = 1,
	  .want = { { H + GIB, 2 * GIB } },
	  .nr_want = 1 },
	{ .name = "only the hole: nothing",
	  Q35_MAP,
	  .guest = { { 2 * GIB, 4 * GIB } },
	  .nr_guest = 1,
	  .nr_want = 0 },
	{ .name = "beyond the RAM is dropped",
	  Q35_MAP,
	  .guest = { { 7 * GIB, 12 * GIB } },
	  .nr_guest = 1,
	  .want = { { H + 5 * GIB, GIB } },
	  .nr_want = 1 },
	/* two RAM blocks: host not contiguous, two ranges */
	{ .name = "over a hole, separate host blocks",
	  .map = { { .gpa = 0, .hva = H, .size = 2 * GIB },
		   { .gpa = 4 * GIB, .hva = 2 * H, .size = 2 * GIB } },
	  .nr_map = 2,
	  .guest = { { 2 * GIB - 8 * PAGE, 4 * GIB + 4 * PAGE } },
	  .nr_guest = 1,
	  .want = { { H + 2 * GIB - 8 * PAGE, 8 * PAGE }, { 2 * H, 4 * PAGE } },
	  .nr_want = 2 },
	/* |..xx|xxxx|xxxx|xxx.|  ->  the 2 whole pages in the middle */
	{ .name = "partial pages shrink inward",
	  Q35_MAP,
	  .guest = { { 0x1800, 0x4800 } },
	  .nr_guest = 1,
	  .want = { { H + 0x2000, 0x2000 } },
	  .nr_want = 1 },
	{ .name = "less than a page: nothing",
	  Q35_MAP,
	  .guest = { { 0x1800, 0x2700 } },
	  .nr_guest = 1,
	  .nr_want = 0 },
	{ .name = "two pieces of one page in two entries: nothing",
	  .map = { { .gpa = 0, .hva = H, .size = 0x1800 },
		   { .gpa = 0x1800, .hva = 2 * H + 0x800, .size = 0x800 } },
	  .nr_map = 2,
	  .guest = { { 0x1000, 0x2000 } },
	  .nr_guest = 1,
	  .nr_want = 0 },
	/* entries split mid-page but contiguous in the host: merged first, so
	 * the page across the boundary is kept */
	{ .name = "entries split mid-page, contiguous host",
	  .map = { { .gpa = 0, .hva = H, .size = 0x1800 },
		   { .gpa = 0x1800, .hva = H + 0x1800, .size = 0x2800 } },
	  .nr_map = 2,
	  .guest = { { 0, 0x4000 } },
	  .nr_guest = 1,
	  .want = { { H, 0x4000 } },
	  .nr_want = 1 },
	{ .name = "host address not page-aligned",
	  .map = { { .gpa = 0, .hva = H + 0x800, .size = 0x10000 } },
	  .nr_map = 1,
	  .guest = { { 0, 0x10000 } },
	  .nr_guest = 1,
	  .want = { { H + 0x1000, 0xf000 } },
	  .nr_want = 1 },
	{ .name = "no guest range", Q35_MAP, .nr_guest = 0, .nr_want = 0 },
	{ .name = "an empty guest range is skipped",
	  Q35_MAP,
	  .guest = { { 0x1000, 0x1000 }, { 0x3000, 0x4000 } },
	  .nr_guest = 2,
	  .want = { { H + 0x3000, 0x1000 } },
	  .nr_want = 1 },
	{ .name = "consecutive guest ranges merge",
	  Q35_MAP,
	  .guest = { { 0, 0x1000 }, { 0x1000, 0x3000 }, { 0x3000, 0x3800 } },
	  .nr_guest = 3,
	  .want = { { H, 0x3000 } },
	  .nr_want = 1 },
	{ .name = "the order of the guest ranges is kept",
	  Q35_MAP,
	  .guest = { { 4 * GIB, 4 * GIB + 0x2000 }, { 0x10000, 0x11000 }, { 0, 0x1000 } },
	  .nr_guest = 3,
	  .want = { { H + 2 * GIB, 0x2000 }, { H + 0x10000, 0x1000 }, { H, 0x1000 } },
	  .nr_want = 3 },
	{ .name = "a guest range over three entries and two holes",
	  .map = { { .gpa = 0x10000, .hva = H, .size = 0x2000 },
		   { .gpa = 0x20000, .hva = H + 0x10000, .size = 0x2000 },
		   { .gpa = 0x30000, .hva = H + 0x12000, .size = 0x2000 } },
	  .nr_map = 3,
	  .guest = { { 0, 0x40000 } },
	  .nr_guest = 1,
	  .want = { { H, 0x2000 }, { H + 0x10000, 0x4000 } },
	  .nr_want = 2 },
	{ .name = "to the end of the address space",
	  .map = { { .gpa = 0, .hva = G_MAXUINT64 - 0x2fff, .size = 0x2fff } },
	  .nr_map = 1,
	  .guest = { { 0, 0x2fff } },
	  .nr_guest = 1,
	  .want = { { G_MAXUINT64 - 0x2fff, 0x2000 } },
	  .nr_want = 1 },
};

ParameterizedTestParameters(ram_map, translate)
{
	return cr_make_param_array(struct translate_case, translate_cases,
				   G_N_ELEMENTS(translate_cases));
}

ParameterizedTest(struct translate_case *c, ram_map, translate)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) host = NULL;

	cr_assert(vr_ram_map_translate(c->map, c->nr_map, c->guest, c->nr_guest, &host, &err),
		  "%s: expected a translation, got: %s", c->name, err ? err->message : "?");
	cr_assert_eq(host->len, c->nr_want, "%s: expected %u host ranges, got %u", c->name,
		     c->nr_want, host->len);
	for (guint i = 0; i < host->len; i++) {
		const struct iovec *v = &g_array_index(host, struct iovec, i);

		cr_expect_eq(iov_start(v), c->want[i].start,
			     "%s: range %u starts at 0x%" G_GINT64_MODIFIER
			     "x, expected 0x%" G_GINT64_MODIFIER "x",
			     c->name, i, (guint64)iov_start(v), (guint64)c->want[i].start);
		cr_expect_eq(v->iov_len, c->want[i].len,
			     "%s: range %u has %zu bytes, expected %" G_GUINT64_FORMAT, c->name, i,
			     v->iov_len, (guint64)c->want[i].len);
	}
}

struct bad_map_case {
	char name[64];
	struct vr_ram_range map[3];
	guint nr_map;
	char words[64];
	int entry; /* the entry the message must name, -1 for none */
};

static struct bad_map_case bad_map_cases[] = {
	{ .name = "empty map", .nr_map = 0, .words = "no entry", .entry = -1 },
	{ .name = "size 0",
	  .map = { { 0, H, 0x1000 }, { 0x1000, H + 0x1000, 0 } },
	  .nr_map = 2,
	  .words = "size 0",
	  .entry = 1 },
	{ .name = "gpa wraps",
	  .map = { { G_MAXUINT64 - 0xfff, H, 0x2000 } },
	  .nr_map = 1,
	  .words = "gpa",
	  .entry = 0 },
	{ .name = "hva wraps",
	  .map = { { 0, 0x1000, 0x1000 }, { 0x2000, G_MAXUINT64 - 0xfff, 0x2000 } },
	  .nr_map = 2,
	  .words = "hva",
	  .entry = 1 },
	{ .name = "overlap out of order",
	  .map = { { 0x10000, H, 0x1000 },
		   { 0x20000, H + 0x1000, 0x1000 },
		   { 0xf000, H + 0x2000, 0x2000 } },
	  .nr_map = 3,
	  .words = "2 and 0",
	  .entry = 2 },
	{ .name = "overlap",
	  .map = { { 0, H, 0x3000 }, { 0x2000, 2 * H, 0x1000 } },
	  .nr_map = 2,
	  .words = "overlap",
	  .entry = 1 },
};

ParameterizedTestParameters(ram_map, invalid_map)
{
	return cr_make_param_array(struct bad_map_case, bad_map_cases, G_N_ELEMENTS(bad_map_cases));
}

ParameterizedTest(struct bad_map_case *c, ram_map, invalid_map)
{
	struct vr_range guest = { 0, 0x1000 };
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;
	GArray *host = NULL;

	cr_assert_not(vr_ram_map_validate(c->map, c->nr_map, &err), "%s: expected invalid",
		      c->name);
	assert_error(err, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID, c->words, c->name);
	if (c->entry >= 0)
		cr_assert(msg_names_number(err->message, c->entry),
			  "%s: the message should name entry %d: %s", c->name, c->entry,
			  err->message);
	if (strstr(c->name, "wraps"))
		cr_assert(msg_has_any(err->message, "wraps"), "%s: should say it wraps: %s",
			  c->name, err->message);
	/* translate refuses the same map and leaves its output alone */
	cr_assert_not(vr_ram_map_translate(c->map, c->nr_map, &guest, 1, &host, &err2),
		      "%s: translate should refuse the map", c->name);
	cr_assert_null(host, "%s: no output on failure", c->name);
	cr_assert_str_eq(err2->message, err->message, "%s: the same message", c->name);
}

Test(ram_map, valid_maps)
{
	const struct vr_ram_range adjacent[] = { { 0, H, 0x1000 }, { 0x1000, H + 0x1000, 0x1000 } };
	const struct vr_ram_range top[] = { { G_MAXUINT64 - 0x1000, H, 0x1000 } };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_ram_map_validate(adjacent, 2, &err), "adjacent entries are valid: %s",
		  err ? err->message : "");
	cr_assert(vr_ram_map_validate(top, 1, &err), "an entry ending at 2^64 - 1 is valid: %s",
		  err ? err->message : "");
}

Test(ram_map, more_entries_than_the_bound)
{
	g_autofree struct vr_ram_range *map =
		g_new0(struct vr_ram_range, VR_RAM_MAP_MAX_ENTRIES + 1);
	g_autoptr(GError) err = NULL;

	for (guint i = 0; i <= VR_RAM_MAP_MAX_ENTRIES; i++)
		map[i] = (struct vr_ram_range){ .gpa = i * MIB, .hva = H + i * MIB, .size = MIB };
	cr_assert(vr_ram_map_validate(map, VR_RAM_MAP_MAX_ENTRIES, &err),
		  "%d entries are allowed: %s", VR_RAM_MAP_MAX_ENTRIES, err ? err->message : "");
	cr_assert_not(vr_ram_map_validate(map, VR_RAM_MAP_MAX_ENTRIES + 1, &err),
		      "one more is refused");
	assert_error(err, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID, "more than", "too many");
	cr_assert(msg_names_number(err->message, VR_RAM_MAP_MAX_ENTRIES + 1),
		  "the message names the count: %s", err->message);
}

/* The map in another order translates to the same host ranges. */
Test(ram_map, an_unsorted_map_translates_as_the_sorted_one)
{
	const struct vr_ram_range sorted[] = { { 0, H, 0x2000 }, { 0x10000, 2 * H, 0x3000 } };
	const struct vr_ram_range unsorted[] = { sorted[1], sorted[0] };
	const struct vr_range guest[] = { { 0x11000, 0x13000 }, { 0x1000, 0x2000 } };
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) a = NULL;
	g_autoptr(GArray) b = NULL;

	cr_assert(vr_ram_map_validate(unsorted, 2, &err), "an unsorted map is valid: %s",
		  err ? err->message : "");
	cr_assert(vr_ram_map_translate(sorted, 2, guest, 2, &a, &err), "%s",
		  err ? err->message : "");
	cr_assert(vr_ram_map_translate(unsorted, 2, guest, 2, &b, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(a->len, 2, "expected 2 host ranges, got %u", a->len);
	cr_assert_eq(b->len, a->len, "the same number of host ranges");
	for (guint i = 0; i < a->len; i++) {
		const struct iovec *x = &g_array_index(a, struct iovec, i);
		const struct iovec *y = &g_array_index(b, struct iovec, i);

		cr_expect(x->iov_base == y->iov_base && x->iov_len == y->iov_len,
			  "host range %u: 0x%" PRIx64 "+%zu sorted, 0x%" PRIx64 "+%zu unsorted", i,
			  iov_start(x), x->iov_len, iov_start(y), y->iov_len);
	}
	cr_expect_eq(iov_start(&g_array_index(a, struct iovec, 0)), 2 * H + 0x1000,
		     "the guest ranges' order is kept: the one at 0x11000 first");
}

Test(ram_map, guest_range_ending_before_it_starts)
{
	const struct vr_ram_range map[] = { { 0, H, 0x100000 } };
	const struct vr_range guest[] = { { 0, 0x1000 }, { 0x5000, 0x3000 } };
	g_autoptr(GError) err = NULL;
	GArray *host = NULL;

	cr_assert_not(vr_ram_map_translate(map, 1, guest, 2, &host, &err),
		      "an inverted guest range is an error");
	assert_error(err, VR_RAM_MAP_ERROR, VR_RAM_MAP_ERROR_INVALID, "ends before it starts",
		     "inverted range");
	cr_assert(msg_names_number(err->message, 1) && strstr(err->message, "0x5000"),
		  "the message should name range 1 and its start: %s", err->message);
	cr_assert_null(host, "no output on failure");
}

/* ---- host to guest: vr_ram_map_to_guest() ---- */

static GArray *regions_of(const struct vr_picture_region *r, size_t nr)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));

	g_array_append_vals(a, r, (guint)nr);
	return a;
}

/*
 * One host range mapped twice (a RAM alias) appears at both guest addresses;
 * the map need not be sorted.
 *
 *   hva  [H, H+4M) acc 3          gpa [8G, 8G+4M) acc 3   (the second entry)
 *                          --->   gpa [1G, 1G+4M) acc 3   (the first entry)
 */
Test(ram_map_to_guest, an_alias_appears_at_both_addresses)
{
	const struct vr_ram_range map[] = {
		{ .gpa = 8 * GIB, .hva = HVA_LOW, .size = 4 * MIB },
		{ .gpa = GIB, .hva = HVA_LOW, .size = 4 * MIB },
	};
	const struct vr_picture_region in[] = { { HVA_LOW, HVA_LOW + 4 * MIB, 3, 6 } };
	g_autoptr(GArray) hva = regions_of(in, G_N_ELEMENTS(in));
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	const struct vr_picture_region *r;

	vr_ram_map_to_guest(map, G_N_ELEMENTS(map), hva, 20, out);
	cr_assert_eq(out->len, 2, "expected the region at both guest addresses, got %u", out->len);
	r = (const struct vr_picture_region *)out->data;
	cr_expect_eq(r[0].start, GIB, "sorted by guest address: 1 GiB first");
	cr_expect_eq(r[0].end, GIB + 4 * MIB);
	cr_expect_eq(r[1].start, 8 * GIB);
	cr_expect_eq(r[1].end, 8 * GIB + 4 * MIB);
	cr_expect(r[0].nr_accesses == 3 && r[1].nr_accesses == 3 && r[0].age == 6 && r[1].age == 6,
		  "both keep the region's counters");
}

/*
 * Small regions inside one RAM range, a region across a hole in the host
 * mapping, and nothing at all: only the parts inside RAM remain.
 *
 *   hva   [A, A+1M) [A+1M, A+3M)  hole  [B, B+1M)
 *   RAM   [A ......... A+2M)            [B ...)
 *   gpa   [0, 1M)   [1M, 2M)            [16M, 17M)
 */
Test(ram_map_to_guest, parts_outside_ram_are_dropped)
{
	const uint64_t a = HVA_LOW, b = HVA_LOW + GIB;
	const struct vr_ram_range map[] = {
		{ .gpa = 0, .hva = a, .size = 2 * MIB },
		{ .gpa = 16 * MIB, .hva = b, .size = 8 * MIB },
	};
	const struct vr_picture_region in[] = {
		{ a, a + MIB, 1, 1 },
		{ a + MIB, a + 3 * MIB, 2, 2 },
		{ b, b + MIB, 4, 4 },
	};
	g_autoptr(GArray) hva = regions_of(in, G_N_ELEMENTS(in));
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GArray) none = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	const struct vr_picture_region *r;

	vr_ram_map_to_guest(map, G_N_ELEMENTS(map), hva, 20, out);
	cr_assert_eq(out->len, 3, "expected 3 regions, got %u", out->len);
	r = (const struct vr_picture_region *)out->data;
	cr_expect(r[0].start == 0 && r[0].end == MIB && r[0].nr_accesses == 1, "first region");
	cr_expect(r[1].start == MIB && r[1].end == 2 * MIB && r[1].nr_accesses == 2,
		  "the second is cut at the end of RAM: [0x%" PRIx64 ", 0x%" PRIx64 ")", r[1].start,
		  r[1].end);
	cr_expect(r[2].start == 16 * MIB && r[2].end == 17 * MIB && r[2].nr_accesses == 4,
		  "the third maps to 16 MiB");
	vr_ram_map_to_guest(map, G_N_ELEMENTS(map), none, 20, out);
	cr_expect_eq(out->len, 3, "no regions in, nothing appended");
}
