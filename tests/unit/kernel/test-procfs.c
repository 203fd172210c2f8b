/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the procfs parsers of /proc/meminfo, /proc/pressure/memory
 * and /proc/buddyinfo (common/procfs-text.c) and of the agent's readers of
 * them (kernel/meminfo.c, kernel/psi.c,
 * guest-agent/free-page-reporting.c). Parsers are tested on text;
 * readers on a fake procfs in a temporary folder. Parameter structs hold no
 * pointers (Criterion re-executes the binary for each test).
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include "backend.h"
#include "free-page-reporting.h"
#include "meminfo.h"
#include "psi.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define KIB 1024ULL

/* A /proc/meminfo as a 6.12 guest prints it (abridged). */
static const char good_meminfo[] = "MemTotal:        1004000 kB\n"
				   "MemFree:          251000 kB\n"
				   "MemAvailable:     600000 kB\n"
				   "Buffers:            1234 kB\n"
				   "Cached:           300000 kB\n"
				   "SwapCached:            0 kB\n"
				   "SwapTotal:        524284 kB\n"
				   "SwapFree:         524000 kB\n"
				   "HugePages_Total:       0\n"
				   "Hugepagesize:       2048 kB\n";

TestSuite(meminfo, .description = "/proc/meminfo");

Test(meminfo, parses_the_fields_in_bytes)
{
	g_autoptr(GError) error = NULL;
	struct vr_meminfo m;

	cr_assert(vr_meminfo_parse(good_meminfo, &m, &error), "a good meminfo should parse: %s",
		  error ? error->message : "");
	cr_assert_eq(m.mem_total_bytes, 1004000 * KIB, "MemTotal");
	cr_assert_eq(m.mem_free_bytes, 251000 * KIB, "MemFree");
	cr_assert_eq(m.mem_available_bytes, 600000 * KIB, "MemAvailable");
	cr_assert_eq(m.swap_total_bytes, 524284 * KIB, "SwapTotal");
	cr_assert_eq(m.swap_free_bytes, 524000 * KIB, "SwapFree");
	cr_assert_eq(vr_meminfo_free_mem_rate(&m), 250,
		     "251000 of 1004000 kB free is 250 per thousand (truncated), got %" PRIu64,
		     vr_meminfo_free_mem_rate(&m));
}

/* Bad texts: each must fail with a message naming @field. */
struct bad_meminfo {
	char name[40];
	char text[320];
	char field[32];
};

#define BASE_NO_FREE "MemTotal: 1000 kB\nMemAvailable: 500 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"

static struct bad_meminfo bad_meminfos[] = {
	{ "missing field", "MemTotal: 1000 kB\nMemFree: 1 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
	  "MemAvailable" },
	{ "repeated field", BASE_NO_FREE "MemFree: 1 kB\nMemFree: 2 kB\n", "MemFree" },
	{ "not a number", BASE_NO_FREE "MemFree: abc kB\n", "MemFree" },
	{ "no unit", BASE_NO_FREE "MemFree: 12\n", "MemFree" },
	{ "other unit", BASE_NO_FREE "MemFree: 12 MB\n", "MemFree" },
	{ "negative", BASE_NO_FREE "MemFree: -12 kB\n", "MemFree" },
	{ "too large for bytes", BASE_NO_FREE "MemFree: 18014398509481984 kB\n", "MemFree" },
	{ "too large for 64 bits", BASE_NO_FREE "MemFree: 99999999999999999999 kB\n", "MemFree" },
	{ "empty", "", "MemTotal" },
	{ "total 0",
	  "MemTotal: 0 kB\nMemFree: 0 kB\nMemAvailable: 0 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
	  "MemTotal" },
	{ "free above total",
	  "MemTotal: 10 kB\nMemFree: 11 kB\nMemAvailable: 0 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
	  "MemFree" },
	{ "swap free above total",
	  "MemTotal: 10 kB\nMemFree: 1 kB\nMemAvailable: 0 kB\nSwapTotal: 0 kB\nSwapFree: 4 kB\n",
	  "SwapFree" },
};

ParameterizedTestParameters(meminfo, rejects)
{
	return cr_make_param_array(struct bad_meminfo, bad_meminfos, G_N_ELEMENTS(bad_meminfos));
}

ParameterizedTest(struct bad_meminfo *c, meminfo, rejects)
{
	g_autoptr(GError) error = NULL;
	struct vr_meminfo m = { .mem_total_bytes = 77 };

	cr_assert_not(vr_meminfo_parse(c->text, &m, &error), "%s: should be rejected", c->name);
	cr_assert(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		  "%s: expected VR_PROCFS_TEXT_ERROR_INVALID", c->name);
	cr_assert(msg_has_any(error->message, c->field), "%s: the error should name %s, got: %s",
		  c->name, c->field, error->message);
	cr_assert_eq(m.mem_total_bytes, 77, "%s: a failed parse must leave the output alone",
		     c->name);
}

Test(meminfo, free_mem_rate_per_thousand)
{
	struct vr_meminfo quarter = { .mem_total_bytes = 4000, .mem_free_bytes = 1000 };
	struct vr_meminfo truncated = { .mem_total_bytes = 3000, .mem_free_bytes = 2999 };
	struct vr_meminfo huge = { .mem_total_bytes = UINT64_MAX, .mem_free_bytes = UINT64_MAX };
	struct vr_meminfo empty = { 0 };

	cr_assert_eq(vr_meminfo_free_mem_rate(&quarter), 250, "1000 of 4000 is 250");
	cr_assert_eq(vr_meminfo_free_mem_rate(&truncated), 999, "2999 of 3000 truncates to 999");
	cr_assert_eq(vr_meminfo_free_mem_rate(&huge), 1000, "no overflow at 2^64 bytes");
	cr_assert_eq(vr_meminfo_free_mem_rate(&empty), 0, "total 0: rate 0, no division");
}

Test(meminfo, reads_from_procfs)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	struct vr_meminfo m;

	tree_put(root, "meminfo", good_meminfo);
	cr_assert(vr_meminfo_read(&paths, &m, &error), "reading should work: %s",
		  error ? error->message : "");
	cr_assert_eq(m.mem_free_bytes, 251000 * KIB, "MemFree from the file");
	tree_put(root, "meminfo", "MemTotal: 1 kB\n");
	cr_assert_not(vr_meminfo_read(&paths, &m, &error), "a bad file should fail");
	cr_assert(strstr(error->message, "meminfo") && msg_has_any(error->message, "MemFree"),
		  "the error should name the file and the field, got: %s", error->message);
	g_clear_error(&error);
	tree_unlink(root, "meminfo");
	cr_assert_not(vr_meminfo_read(&paths, &m, &error), "a missing file should fail");
	cr_assert(strstr(error->message, root) && strstr(error->message, "meminfo"),
		  "the error should name the path, got: %s", error->message);
	tree_rm(root);
}

/* ---- PSI ---- */

static const char good_psi[] = "some avg10=1.23 avg60=0.50 avg300=100.00 total=123456\n"
			       "full avg10=0.00 avg60=0.1 avg300=7 total=42\n";

TestSuite(psi, .description = "/proc/pressure/memory");

Test(psi, parses_both_lines)
{
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory p;

	cr_assert(vr_psi_parse(good_psi, &p, &error), "a good PSI file should parse: %s",
		  error ? error->message : "");
	cr_assert(p.some.avg10_bp == 123 && p.some.avg60_bp == 50 && p.some.avg300_bp == 10000,
		  "some averages in basis points: expected 123/50/10000, got %u/%u/%u",
		  p.some.avg10_bp, p.some.avg60_bp, p.some.avg300_bp);
	cr_assert_eq(p.some.total_us, 123456, "some total");
	cr_assert(p.full.avg10_bp == 0 && p.full.avg60_bp == 10 && p.full.avg300_bp == 700,
		  "full averages: expected 0/10/700, got %u/%u/%u", p.full.avg10_bp,
		  p.full.avg60_bp, p.full.avg300_bp);
	cr_assert_eq(p.full.total_us, 42, "full total");
}

struct bad_psi {
	char name[40];
	char text[200];
	char names[32]; /* '|'-separated words the message must name one of */
};

#define FULL_OK "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
#define SOME_OK "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

static struct bad_psi bad_psis[] = {
	{ "empty", "", "line" },
	{ "some only", SOME_OK, "line" },
	{ "three lines", SOME_OK FULL_OK FULL_OK, "line" },
	{ "swapped", FULL_OK SOME_OK, "some" },
	{ "avg not a number", "some avg10=abc avg60=0.00 avg300=0.00 total=0\n" FULL_OK, "avg10" },
	{ "avg above 100", "some avg10=100.01 avg60=0.00 avg300=0.00 total=0\n" FULL_OK, "avg10" },
	{ "avg three decimals", "some avg10=1.234 avg60=0.00 avg300=0.00 total=0\n" FULL_OK,
	  "avg10" },
	{ "avg no decimals after dot", "some avg10=1. avg60=0.00 avg300=0.00 total=0\n" FULL_OK,
	  "avg10" },
	{ "fields out of order", "some avg60=0.00 avg10=0.00 avg300=0.00 total=0\n" FULL_OK,
	  "avg10" },
	{ "negative total", SOME_OK "full avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", "total" },
	{ "no total", "some avg10=0.00 avg60=0.00 avg300=0.00\n" FULL_OK, "some" },
	{ "extra field", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 x=1\n" FULL_OK, "some" },
};

ParameterizedTestParameters(psi, rejects)
{
	return cr_make_param_array(struct bad_psi, bad_psis, G_N_ELEMENTS(bad_psis));
}

ParameterizedTest(struct bad_psi *c, psi, rejects)
{
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory p = { .some.total_us = 77 };

	cr_assert_not(vr_psi_parse(c->text, &p, &error), "%s: should be rejected", c->name);
	cr_assert(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		  "%s: expected VR_PROCFS_TEXT_ERROR_INVALID", c->name);
	cr_assert(msg_has_any(error->message, c->names), "%s: the error should name %s, got: %s",
		  c->name, c->names, error->message);
	cr_assert_eq(p.some.total_us, 77, "%s: a failed parse must leave the output alone",
		     c->name);
}

Test(psi, missing_file_is_unsupported)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory p;

	cr_assert_not(vr_psi_read_memory(&paths, &p, &error), "no file: should fail");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED),
		  "no file: expected VR_AGENT_ERROR_UNSUPPORTED, got: %s", error->message);
	cr_assert(strstr(error->message, "pressure/memory") && msg_has_any(error->message, "PSI"),
		  "the error should name the file and PSI, got: %s", error->message);
	tree_rm(root);
}

Test(psi, reads_from_procfs)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory p;

	tree_put(root, "pressure/memory", good_psi);
	cr_assert(vr_psi_read_memory(&paths, &p, &error), "reading should work: %s",
		  error ? error->message : "");
	cr_assert_eq(p.some.total_us, 123456, "some total from the file");
	tree_put(root, "pressure/memory", "garbage\n");
	cr_assert_not(vr_psi_read_memory(&paths, &p, &error), "garbage should fail");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID) &&
			  strstr(error->message, "pressure/memory"),
		  "expected an invalid error naming the file, got: %s", error->message);
	tree_rm(root);
}

/* ---- /proc/buddyinfo ---- */

#define MIB (1024 * KIB)

/* A /proc/buddyinfo of a two-node guest as the kernel prints it (a space
 * after the last count), 11 orders. Free bytes with 4 KiB pages: orders
 * 0..10 1938 MiB + 208 KiB, orders 9..10 1714 MiB, order 10 alone 1504 MiB. */
static const char good_buddyinfo[] =
	"Node 0, zone      DMA      1      0      1      0      2      1      1      0      1      1      3 \n"
	"Node 0, zone    DMA32    325    284    178    112     52     23     13      7      4      2    123 \n"
	"Node 0, zone   Normal   1024    512    256    128     64     32     16      8      4      2     50 \n"
	"Node 1, zone   Normal     10     20     30     40     50     60     70     80     90    100    200 \n";

TestSuite(buddyinfo, .description = "/proc/buddyinfo");

/* vr_buddyinfo_parse() that must succeed. */
static uint64_t buddy_ok(const char *text, guint min_order, uint64_t page_size)
{
	g_autoptr(GError) error = NULL;
	uint64_t bytes = 77;

	cr_assert(vr_buddyinfo_parse(text, min_order, page_size, &bytes, &error),
		  "order %u: a good buddyinfo should parse: %s", min_order,
		  error ? error->message : "");
	return bytes;
}

Test(buddyinfo, sums_the_blocks_of_the_order_and_larger_over_nodes_and_zones)
{
	static const struct {
		guint min_order;
		uint64_t page_size, want;
		const char *why;
	} cases[] = {
		{ 0, 4096, 2032353280, "every free page of every zone and node" },
		{ 9, 4096, 1797259264, "105 blocks of 2 MiB and 376 of 4 MiB" },
		{ 10, 4096, 1577058304, "376 blocks of 4 MiB" },
		{ 11, 4096, 0, "order 11 is above the 11 counts (0..10): nothing" },
		{ 16, 4096, 0, "far above the counts: nothing" },
		{ G_MAXUINT, 4096, 0, "the largest order: nothing, no overflow of the shift" },
		{ 0, 65536, 32517652480, "64 KiB pages: 16 times as much" },
		{ 9, 65536, 28756148224, "64 KiB pages, order 9 and up" },
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		uint64_t got = buddy_ok(good_buddyinfo, cases[i].min_order, cases[i].page_size);

		cr_assert_eq(got, cases[i].want,
			     "order %u, %" PRIu64 "-byte pages (%s): expected %" PRIu64
			     ", got %" PRIu64,
			     cases[i].min_order, cases[i].page_size, cases[i].why, cases[i].want,
			     got);
	}
}

Test(buddyinfo, takes_zones_of_other_widths_tabs_and_no_last_newline)
{
	/* 16 counts (MAX_PAGE_ORDER 15), then a zone with 3: order 2 counts 1
	 * block of 16 KiB from the first and 4 from the second (80 KiB); order
	 * 15 one block of 128 MiB. */
	const char text[] = "Node 0, zone Normal 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 1\n"
			    "Node\t12,\tzone\tMovable_2\t7 0 4";

	cr_assert_eq(buddy_ok(text, 2, 4096), 16 * KIB + 128 * MIB + 4 * 16 * KIB,
		     "order 2 and up of both zones");
	cr_assert_eq(buddy_ok(text, 3, 4096), 128 * MIB, "order 3 and up: the 128 MiB block");
	cr_assert_eq(buddy_ok(text, 0, 4096), 7 * 4 * KIB + 16 * KIB + 128 * MIB + 4 * 16 * KIB,
		     "every order of both zones");
	cr_assert_eq(buddy_ok("Node 0, zone DMA 0\n", 0, 4096), 0, "no free memory is 0 bytes");
}

/* Bad texts: each must fail with a message naming every ';'-group of @words. */
struct bad_buddyinfo {
	char name[48];
	char text[400];
	guint min_order;
	char words[64];
};

#define GOOD_LINE "Node 0, zone DMA 1 2 3\n"
#define COUNTS_16 "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"

static struct bad_buddyinfo bad_buddyinfos[] = {
	{ "empty", "", 9, "empty" },
	{ "only a newline", "\n", 9, "line 1;empty" },
	{ "an empty line inside", GOOD_LINE "\n" GOOD_LINE, 9, "line 2;empty" },
	{ "no Node", "zone DMA 1 2 3\n", 9, "line 1;'zone'" },
	{ "Node misspelt on line 2", GOOD_LINE "Nod 0, zone DMA 1\n", 9, "line 2;'Nod'" },
	{ "node in lower case", "node 0, zone DMA 1\n", 9, "line 1;'node'" },
	{ "no comma after the node", "Node 0 zone DMA 1\n", 9, "line 1;comma;'0'" },
	{ "node not a number", "Node x, zone DMA 1\n", 9, "line 1;'x,'" },
	{ "node negative", "Node -1, zone DMA 1\n", 9, "line 1;'-1,'" },
	{ "only Node", "Node\n", 9, "line 1;node number" },
	{ "no zone keyword", "Node 0, zon DMA 1\n", 9, "line 1;'zon'" },
	{ "no zone name", "Node 0, zone\n", 9, "line 1;zone name" },
	{ "zone name a number", "Node 0, zone 5 1 2\n", 9, "line 1;zone name;'5'" },
	{ "no counts", "Node 0, zone DMA\n", 9, "line 1;DMA;0 counts" },
	{ "17 counts", "Node 0, zone DMA " COUNTS_16 " 1\n", 9, "line 1;17 counts;1..16" },
	{ "a count not a number", "Node 0, zone DMA 1 x 3\n", 9, "line 1;order 1;'x'" },
	{ "a count negative", GOOD_LINE "Node 0, zone DMA32 1 2 -3\n", 0,
	  "line 2;DMA32;order 2;'-3'" },
	{ "a count with a plus", "Node 0, zone DMA +1\n", 0, "line 1;order 0;'+1'" },
	{ "a count in hex", "Node 0, zone DMA 0x10\n", 0, "line 1;'0x10'" },
	{ "a count with a fraction", "Node 0, zone DMA 1.5\n", 0, "line 1;'1.5'" },
	{ "a count glued to a word", "Node 0, zone DMA 12kB\n", 0, "line 1;'12kB'" },
	{ "a count beyond 64 bits", "Node 0, zone DMA 18446744073709551616\n", 0,
	  "line 1;order 0;18446744073709551616;64 bits" },
	{ "beyond 64 bits below min_order: still checked",
	  "Node 0, zone DMA 99999999999999999999 0\n", 9, "line 1;99999999999999999999;64 bits" },
	{ "a count whose bytes overflow", "Node 0, zone DMA 0 4503599627370496\n", 0,
	  "line 1;order 1;4503599627370496;64 bits" },
	{ "a sum that overflows",
	  "Node 0, zone DMA 2251799813685248\nNode 0, zone DMA32 "
	  "2251799813685248\n",
	  0, "line 2;DMA32;64 bits" },
};

ParameterizedTestParameters(buddyinfo, rejects)
{
	return cr_make_param_array(struct bad_buddyinfo, bad_buddyinfos,
				   G_N_ELEMENTS(bad_buddyinfos));
}

ParameterizedTest(struct bad_buddyinfo *c, buddyinfo, rejects)
{
	g_autoptr(GError) error = NULL;
	uint64_t bytes = 77;

	cr_assert_not(vr_buddyinfo_parse(c->text, c->min_order, 4096, &bytes, &error),
		      "%s: should be rejected", c->name);
	cr_assert(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		  "%s: expected VR_PROCFS_TEXT_ERROR_INVALID", c->name);
	cr_assert(msg_has_all(error->message, c->words), "%s: the error should name %s, got: %s",
		  c->name, c->words, error->message);
	cr_assert_eq(bytes, 77, "%s: a failed parse must leave the output alone", c->name);
}

Test(buddyinfo, takes_1024_lines_and_refuses_more)
{
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	uint64_t bytes = 77;

	for (guint i = 0; i < VR_BUDDYINFO_MAX_LINES; i++)
		g_string_append_printf(text, "Node %u, zone Normal 0 1\n", i);
	cr_assert_eq(buddy_ok(text->str, 1, 4096), VR_BUDDYINFO_MAX_LINES * 8 * KIB,
		     "1024 zones of one 8 KiB block each");
	g_string_append(text, "Node 1024, zone Normal 0 1");
	cr_assert_not(vr_buddyinfo_parse(text->str, 1, 4096, &bytes, &error),
		      "1025 lines should be refused");
	cr_assert(msg_has_all(error->message, "1024;lines"),
		  "the error should name the limit, got: %s", error->message);
	cr_assert_eq(bytes, 77, "a failed parse must leave the output alone");
}

Test(buddyinfo, reads_from_procfs)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	uint64_t bytes = 77;

	tree_put(root, "buddyinfo", good_buddyinfo);
	cr_assert(vr_reportable_free_read(&paths, 9, 4096, &bytes, &error),
		  "reading should work: %s", error ? error->message : "");
	cr_assert_eq(bytes, 1797259264, "order 9 and up from the file, got %" PRIu64, bytes);
	tree_put(root, "buddyinfo", GOOD_LINE "Node 0, zone DMA32 1 x\n");
	cr_assert_not(vr_reportable_free_read(&paths, 9, 4096, &bytes, &error),
		      "a bad file should fail");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID) &&
			  strstr(error->message, "buddyinfo") &&
			  msg_has_all(error->message, "line 2;'x'"),
		  "expected an invalid error naming the file, the line and the token, got: %s",
		  error->message);
	cr_assert_eq(bytes, 1797259264, "a failed read must leave the output alone");
	g_clear_error(&error);
	tree_unlink(root, "buddyinfo");
	cr_assert_not(vr_reportable_free_read(&paths, 9, 4096, &bytes, &error),
		      "a missing file should fail");
	cr_assert(strstr(error->message, root) && strstr(error->message, "buddyinfo"),
		  "the error should name the path, got: %s", error->message);
	tree_rm(root);
}
