/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the procfs parsers of /proc/meminfo and /proc/pressure/memory
 * (common/procfs-text.c) and of the agent's readers of them
 * (guest-agent/meminfo.c, guest-agent/psi.c). Parsers are tested on text;
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
