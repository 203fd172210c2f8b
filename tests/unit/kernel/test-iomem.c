/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the /proc/iomem parser (kernel/iomem.c): a QEMU guest's
 * map with RAM below the PCI hole and above 4 GiB, nested children, other
 * top-level entries, page alignment inward, the zeroed map a non-root reader
 * gets, empty and garbage input, and the file-reading wrapper.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "iomem.h"
#include "kernel-file.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define GIB (1ULL << 30)

/* /proc/iomem of a q35 guest with 6 GiB: 2 GiB below the hole, 4 GiB above. */
static const char q35_iomem[] = "00000000-00000fff : Reserved\n"
				"00001000-0009fbff : System RAM\n"
				"0009fc00-0009ffff : Reserved\n"
				"000a0000-000bffff : PCI Bus 0000:00\n"
				"000c0000-000c99ff : Video ROM\n"
				"000f0000-000fffff : Reserved\n"
				"  000f0000-000fffff : System ROM\n"
				"00100000-7ffdffff : System RAM\n"
				"  1b000000-1c001fff : Kernel code\n"
				"  1c200000-1c8cbfff : Kernel rodata\n"
				"  1ca00000-1cd3a4ff : Kernel data\n"
				"7ffe0000-7fffffff : Reserved\n"
				"80000000-afffffff : PCI Bus 0000:00\n"
				"b0000000-bfffffff : PCI MMCONFIG 0000 [bus 00-ff]\n"
				"  b0000000-bfffffff : Reserved\n"
				"fed00000-fed003ff : HPET 0\n"
				"  fed00000-fed003ff : PNP0103:00\n"
				"100000000-27fffffff : System RAM\n"
				"280000000-a7fffffff : PCI Bus 0000:00\n";

static GArray *parse_ok(const char *text)
{
	g_autoptr(GError) err = NULL;
	GArray *r = vr_iomem_parse_system_ram(text, &err);

	cr_assert_not_null(r, "expected the text to parse, got: %s", err ? err->message : "?");
	cr_assert_null(err);
	return r;
}

static void parse_fails(const char *text, const char *words, const char *what)
{
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) r = vr_iomem_parse_system_ram(text, &err);

	cr_assert_null(r, "%s: expected an error", what);
	cr_assert_not_null(err, "%s: expected an error set", what);
	cr_assert_eq(err->domain, VR_AGENT_ERROR, "%s: wrong domain", what);
	cr_assert_eq(err->code, VR_AGENT_ERROR_INVALID, "%s: expected VR_AGENT_ERROR_INVALID",
		     what);
	cr_assert(msg_has_any(err->message, words), "%s: the message should say %s: %s", what,
		  words, err->message);
}

static void expect_range(const GArray *r, guint i, uint64_t start, uint64_t end)
{
	const struct vr_range *got;

	cr_assert_lt(i, r->len, "expected at least %u ranges, got %u", i + 1, r->len);
	got = &g_array_index(r, struct vr_range, i);
	cr_expect_eq(got->start, start,
		     "range %u: start 0x%" G_GINT64_MODIFIER "x, expected 0x%" G_GINT64_MODIFIER
		     "x",
		     i, (guint64)got->start, (guint64)start);
	cr_expect_eq(got->end, end,
		     "range %u: end 0x%" G_GINT64_MODIFIER "x, expected 0x%" G_GINT64_MODIFIER "x",
		     i, (guint64)got->end, (guint64)end);
}

Test(iomem, q35_guest_has_ram_below_and_above_4g)
{
	g_autoptr(GArray) r = parse_ok(q35_iomem);

	cr_assert_eq(r->len, 3, "expected the 3 top-level System RAM ranges, got %u", r->len);
	/* 0x9fbff inclusive -> 0x9fc00 exclusive, page-aligned down to 0x9f000 */
	expect_range(r, 0, 0x1000, 0x9f000);
	expect_range(r, 1, 0x100000, 0x7ffe0000);
	expect_range(r, 2, 4 * GIB, 0x280000000ULL);
}

Test(iomem, nested_children_are_ignored_at_any_depth)
{
	const char *text = "00100000-3fffffff : System RAM\n"
			   "  00100000-001fffff : System RAM\n"
			   "    00100000-0010ffff : System RAM\n"
			   "      00100000-00100fff : Kernel code\n"
			   "40000000-4fffffff : Reserved\n"
			   "  40000000-4fffffff : System RAM\n"
			   "\t50000000-5fffffff : System RAM\n";
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 1, "only the top-level System RAM counts, got %u ranges", r->len);
	expect_range(r, 0, 0x100000, 0x40000000);
}

Test(iomem, other_top_level_entries_are_ignored)
{
	const char *text = "00000000-00000fff : Reserved\n"
			   "000a0000-000bffff : PCI Bus 0000:00\n"
			   "00100000-0fffffff : System RAM\n"
			   "10000000-1fffffff : Persistent Memory\n"
			   "20000000-2fffffff : System RAM (kmem)\n"
			   "30000000-3fffffff : Soft Reserved\n";
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 1, "expected 1 range, got %u", r->len);
	expect_range(r, 0, 0x100000, 0x10000000);
}

Test(iomem, ranges_shrink_inward_to_pages)
{
	const char *text = "00001234-00005fff : System RAM\n"  /* start rounds up */
			   "00010000-00013ffe : System RAM\n"  /* end rounds down */
			   "00020800-00021fff : System RAM\n"  /* both */
			   "00030001-00030ffe : System RAM\n"; /* less than a page: dropped */
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 3, "expected 3 ranges, got %u", r->len);
	expect_range(r, 0, 0x2000, 0x6000);
	expect_range(r, 1, 0x10000, 0x13000);
	expect_range(r, 2, 0x21000, 0x22000);
}

Test(iomem, range_to_the_end_of_the_address_space)
{
	g_autoptr(GArray) r = parse_ok("fffffffffff00000-ffffffffffffffff : System RAM\n");

	cr_assert_eq(r->len, 1);
	expect_range(r, 0, 0xfffffffffff00000ULL, 0xfffffffffffff000ULL);
}

Test(iomem, output_is_sorted_by_start)
{
	const char *text = "100000000-17fffffff : System RAM\n"
			   "00100000-0fffffff : System RAM\n";
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 2);
	expect_range(r, 0, 0x100000, 0x10000000);
	expect_range(r, 1, 4 * GIB, 6 * GIB);
}

Test(iomem, crlf_and_spacing_variants)
{
	const char *text = "00100000-0fffffff : System RAM\r\n"
			   "10000000-1fffffff:System RAM\n"
			   "20000000-2fffffff   :   System RAM   \n";
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 3, "expected 3 ranges, got %u", r->len);
	expect_range(r, 2, 0x20000000, 0x30000000);
}

Test(iomem, all_zero_addresses_mean_not_root)
{
	const char *text = "00000000-00000000 : Reserved\n"
			   "00000000-00000000 : System RAM\n"
			   "  00000000-00000000 : Kernel code\n"
			   "00000000-00000000 : System RAM\n"
			   "00000000-00000000 : PCI Bus 0000:00\n";

	parse_fails(text, "root", "a map read without root");
}

Test(iomem, empty_text)
{
	parse_fails("", "no top-level System RAM", "empty text");
	parse_fails("\n\n", "no top-level System RAM", "blank lines");
}

Test(iomem, no_system_ram)
{
	parse_fails("00000000-00000fff : Reserved\n000a0000-000bffff : PCI Bus 0000:00\n",
		    "no top-level System RAM", "a map without RAM");
}

Test(iomem, ram_smaller_than_a_page)
{
	parse_fails("00001001-00001ffe : System RAM\n", "whole page", "sub-page RAM");
}

Test(iomem, garbage_lines_are_skipped)
{
	const char *text = "hello world\n"
			   "zzzz-1000 : System RAM\n"
			   "1000-zz : System RAM\n"
			   "3000-1000 : System RAM\n"
			   "00100000-001fffff System RAM\n"
			   "-00100000 : System RAM\n"
			   "00200000- : System RAM\n"
			   "00100000-0fffffff : System RAM\n"
			   "\x01\x02\xff garbage\n";
	g_autoptr(GArray) r = parse_ok(text);

	cr_assert_eq(r->len, 1, "only the valid line counts, got %u ranges", r->len);
	expect_range(r, 0, 0x100000, 0x10000000);
}

Test(iomem, only_garbage)
{
	parse_fails("this is not iomem\nat all\n", "no top-level System RAM", "garbage only");
}

Test(iomem, largest_range)
{
	g_autoptr(GArray) r = parse_ok(q35_iomem);

	cr_assert_eq(vr_iomem_largest(r), 2, "the 4 GiB range above 4 GiB is the largest");
}

Test(iomem, largest_range_tie_takes_the_lowest)
{
	g_autoptr(GArray) r = parse_ok("00100000-001fffff : System RAM\n"
				       "00300000-003fffff : System RAM\n");

	cr_assert_eq(vr_iomem_largest(r), 0);
}

Test(iomem, reads_the_file_under_procfs)
{
	g_autofree char *root = tree_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) r = NULL;

	tree_put(root, "iomem", q35_iomem);
	r = vr_iomem_read_system_ram(root, &err);
	cr_assert_not_null(r, "%s", err ? err->message : "?");
	cr_assert_eq(r->len, 3);
	tree_rm(root);
}

Test(iomem, missing_file_is_named)
{
	g_autofree char *root = tree_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) r = vr_iomem_read_system_ram(root, &err);

	cr_assert_null(r);
	cr_assert_not_null(err);
	cr_assert(msg_has_any(err->message, "iomem"), "the message names the file: %s",
		  err->message);
	tree_rm(root);
}

Test(iomem, parse_error_names_the_file)
{
	g_autofree char *root = tree_new();
	g_autoptr(GError) err = NULL;
	g_autoptr(GArray) r = NULL;

	tree_put(root, "iomem", "00000000-00000000 : System RAM\n");
	r = vr_iomem_read_system_ram(root, &err);
	cr_assert_null(r);
	cr_assert(msg_has_any(err->message, "iomem") && msg_has_any(err->message, "root"),
		  "the message names the file and the cause: %s", err->message);
	tree_rm(root);
}
