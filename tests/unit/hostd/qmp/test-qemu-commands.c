/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the QEMU commands (hostd/qmp/qemu-commands.c): the parsers on
 * what QEMU 7.2 really printed (tests/data/qemu/, fed with LF and with the
 * CRLF HMP sends) and on bad text, each error naming the line or member;
 * then the commands over a fake monitor (a struct vr_qemu_monitor_ops with
 * canned answers, as libvirt's mock monitor) that answers query-memdev,
 * `info mtree -f` and `gpa2hva` from those fixtures.
 *
 * Criterion runs every test in its own process: parameter structs hold no
 * pointers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "qmp/qemu-commands.h"
#include "test-messages.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIB	     (1024ULL * 1024)
#define GIB	     (1024 * MIB)

/* A fixture of tests/data/qemu: owned text. */
static char *fixture(const char *name)
{
	g_autofree char *path = g_build_filename(VR_TEST_DATA_DIR, "qemu", name, NULL);
	g_autoptr(GError) err = NULL;
	char *text = NULL;

	cr_assert(g_file_get_contents(path, &text, NULL, &err), "cannot read the fixture %s: %s",
		  name, err ? err->message : "?");
	return text;
}

/* @text with every LF as CRLF, as HMP prints it: owned. */
static char *crlf(const char *text)
{
	GString *s = g_string_new(text);

	g_string_replace(s, "\n", "\r\n", 0);
	return g_string_free(s, FALSE);
}

static json_object *json(const char *text)
{
	json_object *v = json_tokener_parse(text);

	cr_assert_not_null(v, "bad JSON in the test: %s", text);
	return v;
}

#define assert_invalid(err, words, what)                                                           \
	assert_error(err, VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_INVALID, words, what)

/* ---- QMP answers ---- */

TestSuite(qemu_parse_json, .description = "balloon, memory size, memdev");

Test(qemu_parse_json, balloon_actual)
{
	g_autoptr(json_object) ok = json("{\"actual\": 268435456}");
	g_autoptr(json_object) big = json("{\"actual\": 18446744073709551615}");
	g_autoptr(GError) err = NULL;
	uint64_t bytes = 0;

	cr_assert(vr_qemu_parse_balloon(ok, &bytes, &err), "%s", err ? err->message : "?");
	cr_expect_eq(bytes, 256 * MIB);
	cr_assert(vr_qemu_parse_balloon(big, &bytes, &err), "%s", err ? err->message : "?");
	cr_expect_eq(bytes, UINT64_MAX, "a size up to 2^64-1 is taken whole");
}

/**
 * struct bad_json_case - a bad answer (' for ") to @command and what the
 * message must say.
 */
struct bad_json_case {
	char name[48];
	char command[32];
	char answer[160];
	char words[64];
};

static const struct bad_json_case bad_answers[] = {
	{ "balloon no actual", "query-balloon", "{}", "actual" },
	{ "balloon actual a string", "query-balloon", "{'actual': '1'}", "actual;an integer" },
	{ "balloon actual negative", "query-balloon", "{'actual': -4096}", "actual;negative" },
	{ "balloon actual a float", "query-balloon", "{'actual': 1.5}", "actual;an integer" },
	{ "balloon answer an array", "query-balloon", "[]", "not an object" },
	{ "size no base", "query-memory-size-summary", "{'plugged-memory': 0}", "base-memory" },
	{ "size plugged negative", "query-memory-size-summary",
	  "{'base-memory': 1, 'plugged-memory': -1}", "plugged-memory;negative" },
	{ "size sum beyond 64 bits", "query-memory-size-summary",
	  "{'base-memory': 18446744073709551615, 'plugged-memory': 1}", "exceeds 64 bits" },
	{ "memdev not an array", "query-memdev", "{'id': 'pc.ram'}", "not an array" },
	{ "memdev entry not an object", "query-memdev", "['pc.ram']", "[0];an object" },
	{ "memdev id not a string", "query-memdev", "[{'id': 'a'}, {'id': 7}]", "[1].id;a string" },
};

ParameterizedTestParameters(qemu_parse_json, bad_answer)
{
	return cr_make_param_array(struct bad_json_case, bad_answers, ARRAY_LEN(bad_answers));
}

ParameterizedTest(const struct bad_json_case *c, qemu_parse_json, bad_answer)
{
	g_autofree char *text = g_strdup(c->answer);
	g_autoptr(json_object) ret = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GPtrArray) ids = NULL;
	uint64_t bytes = 0;
	gboolean ok;

	for (char *p = text; *p; p++)
		if (*p == '\'')
			*p = '"';
	ret = json(text);
	if (!strcmp(c->command, "query-balloon"))
		ok = vr_qemu_parse_balloon(ret, &bytes, &err);
	else if (!strcmp(c->command, "query-memdev"))
		ok = vr_qemu_parse_memdev_ids(ret, &ids, &err);
	else
		ok = vr_qemu_parse_memory_size_summary(ret, &bytes, &err);
	cr_assert_not(ok, "%s: accepted", c->name);
	assert_invalid(err, c->words, c->name);
	cr_expect(msg_has_any(err->message, c->command), "%s: the message should name %s: %s",
		  c->name, c->command, err->message);
}

Test(qemu_parse_json, memory_size_is_base_plus_plugged)
{
	g_autoptr(json_object) pc = json("{\"base-memory\": 268435456, \"plugged-memory\": 0}");
	g_autoptr(json_object)
		plugged = json("{\"base-memory\": 4294967296, \"plugged-memory\": 1073741824}");
	g_autoptr(json_object) none = json("{\"base-memory\": 4294967296}");
	g_autoptr(GError) err = NULL;
	uint64_t bytes = 0;

	cr_assert(vr_qemu_parse_memory_size_summary(pc, &bytes, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(bytes, 256 * MIB);
	cr_assert(vr_qemu_parse_memory_size_summary(plugged, &bytes, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(bytes, 5 * GIB);
	cr_assert(vr_qemu_parse_memory_size_summary(none, &bytes, &err),
		  "plugged-memory is optional: %s", err ? err->message : "?");
	cr_expect_eq(bytes, 4 * GIB);
}

Test(qemu_parse_json, memdev_ids_from_qemu)
{
	g_autofree char *pc_text = fixture("query-memdev-pc.json");
	g_autofree char *numa_text = fixture("query-memdev-pc-numa.json");
	g_autoptr(json_object) pc = json(pc_text);
	g_autoptr(json_object) numa = json(numa_text);
	g_autoptr(json_object) no_id = json("[{\"size\": 1}]");
	g_autoptr(GPtrArray) ids = NULL;
	g_autoptr(GPtrArray) numa_ids = NULL;
	g_autoptr(GPtrArray) none = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qemu_parse_memdev_ids(pc, &ids, &err), "%s", err ? err->message : "?");
	cr_assert_eq(ids->len, 1);
	cr_expect_str_eq(g_ptr_array_index(ids, 0), "pc.ram");
	cr_assert(vr_qemu_parse_memdev_ids(numa, &numa_ids, &err), "%s", err ? err->message : "?");
	cr_assert_eq(numa_ids->len, 2, "expected ram-node0 and ram-node1, got %u", numa_ids->len);
	cr_expect_str_eq(g_ptr_array_index(numa_ids, 0), "ram-node1");
	cr_expect_str_eq(g_ptr_array_index(numa_ids, 1), "ram-node0");
	cr_assert(vr_qemu_parse_memdev_ids(no_id, &none, &err), "%s", err ? err->message : "?");
	cr_expect_eq(none->len, 0, "a backend without an id is skipped");
}

Test(qemu_parse_json, memdev_count_is_bounded)
{
	g_autoptr(json_object) many = json_object_new_array();
	g_autoptr(GPtrArray) ids = NULL;
	g_autoptr(GError) err = NULL;

	for (int i = 0; i <= VR_QEMU_MAX_MEMDEVS; i++)
		json_object_array_add(many, json_object_new_object());
	cr_assert_not(vr_qemu_parse_memdev_ids(many, &ids, &err));
	assert_invalid(err, "more than", "too many backends");
}

/* ---- info mtree -f ---- */

TestSuite(qemu_mtree, .description = "the RAM ranges of info mtree -f");

/**
 * struct mtree_case - a fixture and the RAM ranges of its "memory" view.
 */
struct mtree_case {
	char file[48];
	guint nr;
	struct {
		uint64_t gpa;
		uint64_t size;
		uint64_t offset;
		char region[16];
	} want[6];
};

static const struct mtree_case mtree_cases[] = {
	{ "info-mtree-pc.txt",
	  2,
	  { { 0, 0xc0000, 0, "pc.ram" }, { 0x100000, 0xff00000, 0x100000, "pc.ram" } } },
	{ "info-mtree-pc-kvm.txt",
	  2,
	  { { 0, 0xc0000, 0, "pc.ram" }, { 0x100000, 0xff00000, 0x100000, "pc.ram" } } },
	{ "info-mtree-q35-4g.txt",
	  3,
	  { { 0, 0xc0000, 0, "pc.ram" },
	    { 0x100000, 0x7ff00000, 0x100000, "pc.ram" },
	    { 0x100000000ULL, 0x80000000, 0x80000000, "pc.ram" } } },
	{ "info-mtree-pc-vga-running.txt",
	  5,
	  { { 0, 0xa0000, 0, "pc.ram" },
	    { 0xca000, 0x3000, 0xca000, "pc.ram" },
	    { 0xe8000, 0x8000, 0xe8000, "pc.ram" },
	    { 0x100000, 0xff00000, 0x100000, "pc.ram" },
	    { 0xfd000000, 0x1000000, 0, "vga.vram" } } },
	{ "info-mtree-pc-numa.txt",
	  3,
	  { { 0, 0xc0000, 0, "ram-node0" },
	    { 0x100000, 0xff00000, 0x100000, "ram-node0" },
	    { 0x10000000, 0x10000000, 0, "ram-node1" } } },
};

static void check_mtree(const struct mtree_case *c, const char *text, const char *how)
{
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qemu_parse_mtree_ram(text, &ranges, &err), "%s (%s): %s", c->file, how,
		  err ? err->message : "?");
	cr_assert_eq(ranges->len, c->nr, "%s (%s): expected %u RAM ranges, got %u", c->file, how,
		     c->nr, ranges->len);
	for (guint i = 0; i < c->nr; i++) {
		const struct vr_qemu_mtree_range *r =
			&g_array_index(ranges, struct vr_qemu_mtree_range, i);

		cr_expect_eq(r->gpa, c->want[i].gpa, "%s (%s) range %u: gpa 0x%" PRIx64, c->file,
			     how, i, r->gpa);
		cr_expect_eq(r->size, c->want[i].size, "%s (%s) range %u: size 0x%" PRIx64, c->file,
			     how, i, r->size);
		cr_expect_eq(r->offset, c->want[i].offset, "%s (%s) range %u: offset 0x%" PRIx64,
			     c->file, how, i, r->offset);
		cr_expect_str_eq(r->region, c->want[i].region, "%s (%s) range %u: region %s",
				 c->file, how, i, r->region);
	}
}

ParameterizedTestParameters(qemu_mtree, fixtures)
{
	return cr_make_param_array(struct mtree_case, mtree_cases, ARRAY_LEN(mtree_cases));
}

ParameterizedTest(const struct mtree_case *c, qemu_mtree, fixtures)
{
	g_autofree char *text = fixture(c->file);
	g_autofree char *as_sent = crlf(text);

	check_mtree(c, text, "LF");
	check_mtree(c, as_sent, "CRLF");
}

Test(qemu_mtree, region_names_with_spaces_offsets_and_accelerators)
{
	const char *text =
		"FlatView #0\n"
		" AS \"memory\", root: system\n"
		" Root memory region: system\n"
		"  0000000000000000-0000000000000fff (prio 0, ram): odd @name "
		"@0000000000001000 KVM\n"
		"  0000000000001000-0000000000001fff (prio 0, ram): two words KVM\n"
		"  0000000000002000-0000000000002fff (prio -1, ram): with @ at\n"
		"  0000000000003000-0000000000003fff (prio 0, nv-ram): pmem\n"
		"  0000000000004000-0000000000004fff (prio 0, ramd): 0000:01:00.0 BAR 0\n"
		"  0000000000005000-0000000000005fff (prio 0, romd): pflash\n"
		"  0000000000006000-0000000000006fff (prio 0, rom): pc.bios\n"
		"  0000000000007000-0000000000007fff (prio 0, i/o): hpet\n";
	static const char *const names[] = { "odd @name", "two words", "with @ at" };
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qemu_parse_mtree_ram(text, &ranges, &err), "%s", err ? err->message : "?");
	cr_assert_eq(ranges->len, 3, "only type ram is RAM, got %u ranges", ranges->len);
	for (guint i = 0; i < 3; i++)
		cr_expect_str_eq(g_array_index(ranges, struct vr_qemu_mtree_range, i).region,
				 names[i]);
	cr_expect_eq(g_array_index(ranges, struct vr_qemu_mtree_range, 0).offset, 0x1000);
	cr_expect_eq(g_array_index(ranges, struct vr_qemu_mtree_range, 2).offset, 0);
}

Test(qemu_mtree, empty_memory_view_has_no_ranges)
{
	const char *text = "FlatView #0\n AS \"memory\", root: system\n Root memory region: "
			   "system\n  No rendered FlatView\n\n";
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_qemu_parse_mtree_ram(text, &ranges, &err), "%s", err ? err->message : "?");
	cr_expect_eq(ranges->len, 0);
}

#define VIEW "FlatView #0\n AS \"memory\", root: system\n Root memory region: system\n"
#define RAM0 "  0000000000000000-000000000009ffff (prio 0, ram): pc.ram\n"

/**
 * struct bad_mtree_case - @text (after the 3 header lines of VIEW where
 * @in_view) is refused with a message naming @line and saying @words.
 */
struct bad_mtree_case {
	char name[48];
	bool in_view;
	char text[300];
	guint line;
	char words[80];
};

static const struct bad_mtree_case bad_mtrees[] = {
	{ "not hex", true, "  00000000000zzzzz-000000000009ffff (prio 0, ram): pc.ram\n", 4,
	  "hexadecimal" },
	{ "17 digits", true, "  00000000000000000-000000000009ffff (prio 0, ram): pc.ram\n", 4,
	  "hexadecimal" },
	{ "end before start", true, "  0000000000010000-000000000000ffff (prio 0, ram): pc.ram\n",
	  4, "ends before it starts" },
	{ "no prio", true, "  0000000000000000-000000000009ffff (ram): pc.ram\n", 4, "prio" },
	{ "prio not a number", true, "  0000000000000000-000000000009ffff (prio x, ram): pc.ram\n",
	  4, "priority" },
	{ "no type", true, "  0000000000000000-000000000009ffff (prio 0, ): pc.ram\n", 4,
	  "region type" },
	{ "unclosed", true, "  0000000000000000-000000000009ffff (prio 0, ram pc.ram\n", 4,
	  "region type" },
	{ "no name", true, "  0000000000000000-000000000009ffff (prio 0, ram): \n", 4, "no name" },
	{ "control character", true,
	  "  0000000000000000-000000000009ffff (prio 0, ram): pc\x01ram\n", 4,
	  "control character" },
	{ "overlap", true,
	  RAM0 "  0000000000090000-00000000000fffff (prio 0, ram): pc.ram @0000000000090000\n", 5,
	  "overlaps" },
	{ "out of order", true, "  0000000000100000-00000000001fffff (prio 0, ram): a\n" RAM0, 5,
	  "overlaps or precedes" },
	{ "offset wraps", true,
	  "  0000000000000000-00000000000fffff (prio 0, ram): pc.ram @ffffffffffffffff\n", 4,
	  "wraps" },
	{ "whole address space", true,
	  "  0000000000000000-ffffffffffffffff (prio 0, ram): everything\n", 4, "whole" },
	{ "not a range", true, RAM0 "garbage\n", 5, "expected a range" },
	{ "deeper indent", true, RAM0 "   0000000000100000-00000000001fffff (prio 0, ram): a\n", 5,
	  "expected a range" },
	{ "second memory view", true, RAM0 "\nFlatView #1\n AS \"memory\", root: system\n", 7,
	  "second FlatView" },
};

ParameterizedTestParameters(qemu_mtree, bad_text)
{
	return cr_make_param_array(struct bad_mtree_case, bad_mtrees, ARRAY_LEN(bad_mtrees));
}

ParameterizedTest(const struct bad_mtree_case *c, qemu_mtree, bad_text)
{
	g_autofree char *text = g_strconcat(c->in_view ? VIEW : "", c->text, NULL);
	g_autofree char *line = g_strdup_printf("line %u ", c->line);
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_qemu_parse_mtree_ram(text, &ranges, &err), "%s: accepted", c->name);
	assert_invalid(err, c->words, c->name);
	cr_expect(msg_has_any(err->message, line), "%s: the message should name %s: %s", c->name,
		  line, err->message);
	cr_expect_null(strchr(err->message, '\x01'), "%s: control characters must not pass",
		       c->name);
}

Test(qemu_mtree, no_memory_view)
{
	static const char *const texts[] = {
		"unknown command: 'info'\r\n",
		"FlatView #0\n AS \"I/O\", root: io\n Root memory region: io\n",
		"",
	};

	for (guint i = 0; i < ARRAY_LEN(texts); i++) {
		g_autoptr(GArray) ranges = NULL;
		g_autoptr(GError) err = NULL;

		cr_assert_not(vr_qemu_parse_mtree_ram(texts[i], &ranges, &err), "text %u accepted",
			      i);
		assert_invalid(err, "no FlatView of address space \"memory\"", texts[i]);
	}
}

Test(qemu_mtree, ram_ranges_are_bounded)
{
	GString *text = g_string_new(VIEW);
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	for (guint i = 0; i <= VR_QEMU_RAM_MAP_MAX_RANGES; i++)
		g_string_append_printf(text,
				       "  %016" PRIx64 "-%016" PRIx64 " (prio 0, ram): pc.ram\n",
				       (uint64_t)i * 0x2000, (uint64_t)i * 0x2000 + 0xfff);
	cr_assert_not(vr_qemu_parse_mtree_ram(text->str, &ranges, &err));
	g_string_free(text, TRUE);
	assert_invalid(err, "more than 256 RAM ranges;line 260", "too many ranges");
}

Test(qemu_mtree, output_size_is_bounded)
{
	GString *text = g_string_new(VIEW RAM0);
	g_autoptr(GArray) ranges = NULL;
	g_autoptr(GError) err = NULL;

	while (text->len <= VR_QEMU_HMP_MAX_OUTPUT_BYTES)
		g_string_append(text, "\n");
	cr_assert_not(vr_qemu_parse_mtree_ram(text->str, &ranges, &err));
	g_string_free(text, TRUE);
	assert_invalid(err, "more than;bytes", "oversized output");
}

/* ---- gpa2hva ---- */

TestSuite(qemu_gpa2hva, .description = "HMP gpa2hva answers");

Test(qemu_gpa2hva, answer_from_qemu)
{
	g_autofree char *text = fixture("gpa2hva-q35-4g-0x100000000.txt");
	g_autofree char *as_sent = crlf(text);
	g_autofree char *vram = fixture("gpa2hva-vga-vram.txt");
	g_autoptr(GError) err = NULL;
	uint64_t hva = 0;

	cr_assert(vr_qemu_parse_gpa2hva(text, 0x100000000ULL, "pc.ram", &hva, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(hva, 0x7f2743e00000ULL, "expected the captured address, got 0x%" PRIx64, hva);
	hva = 0;
	cr_assert(vr_qemu_parse_gpa2hva(as_sent, 0x100000000ULL, NULL, &hva, &err), "CRLF: %s",
		  err ? err->message : "?");
	cr_expect_eq(hva, 0x7f2743e00000ULL);
	cr_assert(vr_qemu_parse_gpa2hva(vram, 0xfd000000, "vga.vram", &hva, &err), "%s",
		  err ? err->message : "?");
	cr_expect_eq(hva, 0x7f7505000000ULL);
}

/**
 * struct bad_gpa2hva_case - @text (or the fixture @file) answering
 * `gpa2hva @gpa` for @region is refused, the message saying @words.
 */
struct bad_gpa2hva_case {
	char name[48];
	char file[48];
	char text[120];
	uint64_t gpa;
	char region[16];
	char words[80];
};

static const struct bad_gpa2hva_case bad_gpa2hvas[] = {
	{ "not RAM", "gpa2hva-not-ram.txt", "", 0xfec00000, "", "gpa2hva 0xfec00000;is not RAM" },
	{ "unmapped", "gpa2hva-unmapped.txt", "", 0x10000000, "",
	  "gpa2hva 0x10000000;No memory is mapped" },
	{ "another address", "", "Host virtual address for 0x1000 (pc.ram) is 0x7f0000001000\n",
	  0x2000, "pc.ram", "answered for 0x1000" },
	{ "another region", "", "Host virtual address for 0x2000 (pc.rom) is 0x7f0000001000\n",
	  0x2000, "pc.ram", "another region than pc.ram;pc.rom" },
	{ "null address", "", "Host virtual address for 0x2000 (pc.ram) is 0x0\n", 0x2000, "",
	  "is 0" },
	{ "nil", "", "Host virtual address for 0x2000 (pc.ram) is (nil)\n", 0x2000, "", "is 0x" },
	{ "trailing text", "", "Host virtual address for 0x2000 (pc.ram) is 0x7f00 and more\n",
	  0x2000, "", "hexadecimal" },
	{ "17 digits", "", "Host virtual address for 0x2000 (pc.ram) is 0x10000000000000000\n",
	  0x2000, "", "hexadecimal" },
	{ "unknown command", "", "unknown command: 'gpa2hva'\r\n", 0x2000, "", "unknown command" },
};

ParameterizedTestParameters(qemu_gpa2hva, bad_answer)
{
	return cr_make_param_array(struct bad_gpa2hva_case, bad_gpa2hvas, ARRAY_LEN(bad_gpa2hvas));
}

ParameterizedTest(const struct bad_gpa2hva_case *c, qemu_gpa2hva, bad_answer)
{
	g_autofree char *text = *c->file ? fixture(c->file) : g_strdup(c->text);
	g_autoptr(GError) err = NULL;
	uint64_t hva = 0;

	cr_assert_not(vr_qemu_parse_gpa2hva(text, c->gpa, *c->region ? c->region : NULL, &hva,
					    &err),
		      "%s: accepted", c->name);
	assert_invalid(err, c->words, c->name);
}

/* ---- the commands, over a fake monitor ---- */

/**
 * struct fake_mon - canned answers.
 * @memdev:	 the query-memdev answer (JSON text).
 * @mtree:	 the `info mtree -f` text (sent with CRLF).
 * @bases:	 region name -> its host address (uint64_t *): gpa2hva answers
 *		 base + offset, where the offset comes from @ranges.
 * @ranges:	 gpa, size, offset and region of each RAM range of @mtree.
 * @skew_gpa:	 a gpa whose gpa2hva answer is off by a page (0: none).
 * @commands:	 what was run (command, or "hmp: <command line>").
 * @last_args:	 the arguments of the last command, as JSON text.
 */
struct fake_mon {
	const char *memdev;
	char *mtree;
	const char *answer_override; /* the return of every command, if set */
	uint64_t skew_gpa;
	struct {
		uint64_t gpa, size, offset, base;
		const char *region;
	} ranges[6];
	guint nr_ranges;
	GPtrArray *commands;
	char *last_args;
};

static struct fake_mon fm;

static gboolean fake_execute(void *priv, const char *command, json_object *args, guint timeout_ms,
			     json_object **ret, GError **error)
{
	struct fake_mon *f = priv;
	json_object *cl = NULL;
	const char *line;
	uint64_t gpa = 0;

	(void)timeout_ms;
	(void)error;
	g_free(f->last_args);
	f->last_args = g_strdup(args ? json_object_to_json_string(args) : "");
	if (strcmp(command, "human-monitor-command")) {
		g_ptr_array_add(f->commands, g_strdup(command));
		if (ret)
			*ret = json_tokener_parse(
				f->answer_override		  ? f->answer_override :
				!strcmp(command, "query-memdev")  ? f->memdev :
				!strcmp(command, "query-balloon") ? "{\"actual\": 1073741824}" :
				!strcmp(command, "query-memory-size-summary") ?
								    "{\"base-memory\": 268435456}" :
								    "{}");
		return TRUE;
	}
	cr_assert(json_object_object_get_ex(args, "command-line", &cl));
	line = json_object_get_string(cl);
	g_ptr_array_add(f->commands, g_strdup_printf("hmp: %s", line));
	if (f->answer_override) {
		*ret = json_tokener_parse(f->answer_override);
		return TRUE;
	}
	if (!strcmp(line, "info mtree -f")) {
		g_autofree char *text = crlf(f->mtree);

		*ret = json_object_new_string(text);
		return TRUE;
	}
	cr_assert(sscanf(line, "gpa2hva 0x%" SCNx64, &gpa) == 1, "unexpected HMP command %s", line);
	for (guint i = 0; i < f->nr_ranges; i++) {
		if (gpa < f->ranges[i].gpa || gpa - f->ranges[i].gpa >= f->ranges[i].size)
			continue;
		uint64_t hva = f->ranges[i].base + f->ranges[i].offset + (gpa - f->ranges[i].gpa) +
			       (f->skew_gpa && gpa == f->skew_gpa ? 4096 : 0);
		g_autofree char *text = g_strdup_printf("Host virtual address for 0x%" PRIx64
							" (%s) is 0x%" PRIx64 "\r\n",
							gpa, f->ranges[i].region, hva);

		*ret = json_object_new_string(text);
		return TRUE;
	}
	{
		g_autofree char *text =
			g_strdup_printf("No memory is mapped at address 0x%" PRIx64 "\r\n", gpa);

		*ret = json_object_new_string(text);
	}
	return TRUE;
}

static const struct vr_qemu_monitor_ops fake_ops = {
	.name = "fake",
	.execute = fake_execute,
};

static struct vr_qemu_monitor *fake_monitor(void)
{
	return vr_qemu_monitor_new(&fake_ops, &fm, "fake-qemu");
}

static void fake_mon_setup(void)
{
	memset(&fm, 0, sizeof(fm));
	fm.commands = g_ptr_array_new_with_free_func(g_free);
}

static void fake_mon_teardown(void)
{
	g_ptr_array_unref(fm.commands);
	g_free(fm.mtree);
	g_free(fm.last_args);
}

#define PC_RAM_BASE   0x7f0000000000ULL
#define NODE0_BASE    0x7f1000000000ULL
#define NODE1_BASE    0x7f2000000000ULL
#define VGA_VRAM_BASE 0x7f3000000000ULL

/* The vga-running fixture: pc.ram in four pieces, and vga.vram. */
static void fake_vga_guest(const char *memdev)
{
	fm.memdev = memdev;
	fm.mtree = fixture("info-mtree-pc-vga-running.txt");
	fm.nr_ranges = 5;
	fm.ranges[0].gpa = 0, fm.ranges[0].size = 0xa0000, fm.ranges[0].offset = 0;
	fm.ranges[1].gpa = 0xca000, fm.ranges[1].size = 0x3000, fm.ranges[1].offset = 0xca000;
	fm.ranges[2].gpa = 0xe8000, fm.ranges[2].size = 0x8000, fm.ranges[2].offset = 0xe8000;
	fm.ranges[3].gpa = 0x100000, fm.ranges[3].size = 0xff00000, fm.ranges[3].offset = 0x100000;
	fm.ranges[4].gpa = 0xfd000000, fm.ranges[4].size = 0x1000000, fm.ranges[4].offset = 0;
	for (guint i = 0; i < 4; i++) {
		fm.ranges[i].region = "pc.ram";
		fm.ranges[i].base = PC_RAM_BASE;
	}
	fm.ranges[4].region = "vga.vram";
	fm.ranges[4].base = VGA_VRAM_BASE;
}

static uint64_t map_total(const GArray *map)
{
	uint64_t total = 0;

	for (guint i = 0; i < map->len; i++)
		total += g_array_index(map, struct vr_ram_range, i).size;
	return total;
}

static void expect_entry(const GArray *map, guint i, uint64_t gpa, uint64_t size, uint64_t hva)
{
	const struct vr_ram_range *r;

	cr_assert_lt(i, map->len, "expected at least %u entries, got %u", i + 1, map->len);
	r = &g_array_index(map, struct vr_ram_range, i);
	cr_expect(r->gpa == gpa && r->size == size && r->hva == hva,
		  "entry %u: expected gpa 0x%" PRIx64 " size 0x%" PRIx64 " hva 0x%" PRIx64
		  ", got gpa 0x%" PRIx64 " size 0x%" PRIx64 " hva 0x%" PRIx64,
		  i, gpa, size, hva, r->gpa, r->size, r->hva);
}

TestSuite(qemu_commands, .init = fake_mon_setup, .fini = fake_mon_teardown);

Test(qemu_commands, ram_map_of_a_running_pc_leaves_out_vga_vram)
{
	g_autofree char *memdev = fixture("query-memdev-pc.json");
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fake_vga_guest(memdev);
	mon = fake_monitor();
	cr_assert(vr_qemu_guest_ram_map(mon, &map, &err), "%s", err ? err->message : "?");
	cr_assert_eq(map->len, 4, "expected the 4 pieces of pc.ram, got %u", map->len);
	expect_entry(map, 0, 0, 0xa0000, PC_RAM_BASE);
	expect_entry(map, 1, 0xca000, 0x3000, PC_RAM_BASE + 0xca000);
	expect_entry(map, 2, 0xe8000, 0x8000, PC_RAM_BASE + 0xe8000);
	expect_entry(map, 3, 0x100000, 0xff00000, PC_RAM_BASE + 0x100000);
	cr_expect_eq(fm.commands->len, 6, "query-memdev, info mtree, 4 gpa2hva: got %u commands",
		     fm.commands->len);
	cr_expect_str_eq(g_ptr_array_index(fm.commands, 2), "hmp: gpa2hva 0x0");
	cr_expect_str_eq(g_ptr_array_index(fm.commands, 5), "hmp: gpa2hva 0x100000");
}

Test(qemu_commands, ram_map_without_backend_ids_takes_every_ram_range)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fake_vga_guest("[]");
	mon = fake_monitor();
	cr_assert(vr_qemu_guest_ram_map(mon, &map, &err), "%s", err ? err->message : "?");
	cr_assert_eq(map->len, 5, "expected pc.ram and vga.vram, got %u", map->len);
	expect_entry(map, 4, 0xfd000000, 0x1000000, VGA_VRAM_BASE);
}

Test(qemu_commands, ram_map_of_q35_splits_at_the_pci_hole)
{
	g_autofree char *memdev = g_strdup("[{\"id\": \"pc.ram\", \"size\": 4294967296}]");
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fm.memdev = memdev;
	fm.mtree = fixture("info-mtree-q35-4g.txt");
	fm.nr_ranges = 3;
	fm.ranges[0].gpa = 0, fm.ranges[0].size = 0xc0000, fm.ranges[0].offset = 0;
	fm.ranges[1].gpa = 0x100000, fm.ranges[1].size = 0x7ff00000, fm.ranges[1].offset = 0x100000;
	fm.ranges[2].gpa = 4 * GIB, fm.ranges[2].size = 2 * GIB, fm.ranges[2].offset = 2 * GIB;
	for (guint i = 0; i < 3; i++) {
		fm.ranges[i].region = "pc.ram";
		fm.ranges[i].base = PC_RAM_BASE;
	}
	mon = fake_monitor();
	cr_assert(vr_qemu_guest_ram_map(mon, &map, &err), "%s", err ? err->message : "?");
	cr_assert_eq(map->len, 3);
	expect_entry(map, 2, 4 * GIB, 2 * GIB, PC_RAM_BASE + 2 * GIB);
	cr_expect_eq(map_total(map), 4 * GIB - 0x40000,
		     "4 GiB less the 256 KiB the BIOS ROMs cover, got 0x%" PRIx64, map_total(map));
}

Test(qemu_commands, ram_map_of_two_numa_backends)
{
	g_autofree char *memdev = fixture("query-memdev-pc-numa.json");
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fm.memdev = memdev;
	fm.mtree = fixture("info-mtree-pc-numa.txt");
	fm.nr_ranges = 3;
	fm.ranges[0].gpa = 0, fm.ranges[0].size = 0xc0000, fm.ranges[0].offset = 0;
	fm.ranges[1].gpa = 0x100000, fm.ranges[1].size = 0xff00000, fm.ranges[1].offset = 0x100000;
	fm.ranges[2].gpa = 0x10000000, fm.ranges[2].size = 0x10000000, fm.ranges[2].offset = 0;
	fm.ranges[0].region = fm.ranges[1].region = "ram-node0";
	fm.ranges[0].base = fm.ranges[1].base = NODE0_BASE;
	fm.ranges[2].region = "ram-node1";
	fm.ranges[2].base = NODE1_BASE;
	mon = fake_monitor();
	cr_assert(vr_qemu_guest_ram_map(mon, &map, &err), "%s", err ? err->message : "?");
	cr_assert_eq(map->len, 3);
	expect_entry(map, 1, 0x100000, 0xff00000, NODE0_BASE + 0x100000);
	expect_entry(map, 2, 0x10000000, 0x10000000, NODE1_BASE);
}

Test(qemu_commands, ram_map_refuses_pieces_that_disagree)
{
	g_autofree char *memdev = fixture("query-memdev-pc.json");
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fake_vga_guest(memdev);
	fm.skew_gpa = 0x100000;
	mon = fake_monitor();
	cr_assert_not(vr_qemu_guest_ram_map(mon, &map, &err));
	assert_invalid(err, "disagree;pc.ram;0x100000", "skewed gpa2hva");
}

Test(qemu_commands, ram_map_refuses_a_gpa2hva_for_another_region)
{
	g_autofree char *memdev = fixture("query-memdev-pc.json");
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fake_vga_guest(memdev);
	fm.ranges[1].region = "pc.rom";
	mon = fake_monitor();
	cr_assert_not(vr_qemu_guest_ram_map(mon, &map, &err));
	assert_invalid(err, "gpa2hva 0xca000;another region;pc.rom", "wrong region");
}

Test(qemu_commands, ram_map_needs_ram_of_a_backend)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autoptr(GArray) map = NULL;
	g_autoptr(GError) err = NULL;

	fake_vga_guest("[{\"id\": \"mem0\", \"size\": 1}]");
	mon = fake_monitor();
	cr_assert_not(vr_qemu_guest_ram_map(mon, &map, &err));
	assert_invalid(err, "no RAM of a memory backend;5 RAM ranges", "no backend RAM");
}

Test(qemu_commands, hmp_answer_must_be_a_string)
{
	g_autoptr(vr_qemu_monitor) mon = NULL;
	g_autofree char *out = NULL;
	g_autoptr(GError) err = NULL;

	fm.answer_override = "{\"not\": \"text\"}";
	mon = fake_monitor();
	cr_assert_not(vr_qemu_hmp(mon, "info mtree -f", &out, &err));
	assert_invalid(err, "HMP info mtree -f;not a string", "HMP object answer");
}

Test(qemu_commands, balloon_and_ram_size)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autoptr(GError) err = NULL;
	uint64_t actual = 0, ram = 0;

	cr_assert(vr_qemu_query_balloon(mon, &actual, &err), "%s", err ? err->message : "?");
	cr_expect_eq(actual, GIB);
	cr_assert(vr_qemu_query_ram_size(mon, &ram, &err), "%s", err ? err->message : "?");
	cr_expect_eq(ram, 256 * MIB);
	cr_assert(vr_qemu_set_balloon(mon, 512 * MIB, &err), "%s", err ? err->message : "?");
	cr_expect_str_eq(g_ptr_array_index(fm.commands, 2), "balloon");
	cr_expect(strstr(fm.last_args, "\"value\": 536870912") ||
			  strstr(fm.last_args, "\"value\":536870912"),
		  "balloon should carry value 536870912: %s", fm.last_args);
}

Test(qemu_commands, balloon_target_must_fit_qemu)
{
	g_autoptr(vr_qemu_monitor) mon = fake_monitor();
	g_autoptr(GError) err = NULL;
	g_autoptr(GError) err2 = NULL;

	cr_assert_not(vr_qemu_set_balloon(mon, 0, &err));
	assert_error(err, VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_ARGUMENT,
		     "balloon target 0", "target 0");
	cr_assert_not(vr_qemu_set_balloon(mon, (uint64_t)INT64_MAX + 1, &err2));
	assert_error(err2, VR_QEMU_COMMANDS_ERROR, VR_QEMU_COMMANDS_ERROR_ARGUMENT,
		     "9223372036854775808", "target beyond int64");
	cr_expect_eq(fm.commands->len, 0, "nothing should reach QEMU");
}
