/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of compaction after reclaim (guest-agent/compact.c): the pure
 * decision on struct literals, the act on a fake procfs in a temporary
 * folder. Times in us, sizes in bytes.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <string.h>

#include "compact.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define MIB (1ULL << 20)
#define S   (1000000ULL)

/* One decision: the state, now, the backend's cumulative sz_applied. */
struct should_case {
	char name[56];
	bool tried;
	uint64_t last_us;
	uint64_t sz_applied_at_last;
	uint64_t now_us;
	uint64_t sz_applied;
	bool expect;
};

static struct should_case should_cases[] = {
	{ "first, enough reclaimed", false, 0, 0, 1, 16 * MIB, true },
	{ "first, a byte short", false, 0, 0, 1, 16 * MIB - 1, false },
	{ "first, nothing reclaimed", false, 0, 0, 100 * S, 0, false },
	{ "enough, interval passed", true, 10 * S, 100 * MIB, 15 * S, 116 * MIB, true },
	{ "enough, 1 us too early", true, 10 * S, 100 * MIB, 15 * S - 1, 200 * MIB, false },
	{ "interval passed, not enough", true, 10 * S, 100 * MIB, 60 * S, 115 * MIB, false },
	{ "counter went back: counts from 0", true, 0, 500 * MIB, 60 * S, 20 * MIB, true },
	{ "counter went back, little", true, 0, 500 * MIB, 60 * S, 10 * MIB, false },
	{ "clock before the last attempt", true, 10 * S, 0, 5 * S, 100 * MIB, false },
};

ParameterizedTestParameters(compact, should)
{
	return cr_make_param_array(struct should_case, should_cases, G_N_ELEMENTS(should_cases));
}

ParameterizedTest(struct should_case *c, compact, should)
{
	struct vr_compact_state s = {
		.tried = c->tried,
		.last_us = c->last_us,
		.sz_applied_at_last = c->sz_applied_at_last,
	};

	cr_assert_eq(vr_compact_should(&s, c->now_us, c->sz_applied), c->expect, "%s: expected %s",
		     c->name, c->expect ? "compact" : "wait");
}

Test(compact, done_remembers_the_attempt)
{
	struct vr_compact_state s = { 0 };

	cr_assert(vr_compact_should(&s, 3 * S, 20 * MIB), "20 MiB reclaimed: compact");
	vr_compact_done(&s, 3 * S, 20 * MIB);
	cr_assert(s.tried && s.last_us == 3 * S && s.sz_applied_at_last == 20 * MIB,
		  "the attempt should be remembered");
	cr_assert_not(vr_compact_should(&s, 9 * S, 30 * MIB), "10 MiB since: wait");
	cr_assert_not(vr_compact_should(&s, 4 * S, 60 * MIB), "40 MiB but 1 s since: wait");
	cr_assert(vr_compact_should(&s, 8 * S, 60 * MIB), "40 MiB and 5 s since: compact");
}

Test(compact, writes_one_to_compact_memory)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	g_autofree char *written = NULL;

	tree_put(root, "sys/vm/compact_memory", "");
	cr_assert(vr_compact_memory(&paths, &error), "compaction should work: %s",
		  error ? error->message : "");
	written = tree_get(root, "sys/vm/compact_memory");
	cr_assert_str_eq(written, "1", "expected '1' written, got '%s'", written);
	tree_rm(root);
}

Test(compact, errors_name_the_file)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;

	cr_assert_not(vr_compact_memory(&paths, &error), "no compact_memory: should fail");
	cr_assert(strstr(error->message, root) && strstr(error->message, "sys/vm/compact_memory"),
		  "the error should name the path, got: %s", error->message);
	g_clear_error(&error);
	if (g_file_test("/dev/full", G_FILE_TEST_EXISTS)) {
		tree_mkdir(root, "sys/vm");
		tree_symlink(root, "sys/vm/compact_memory", "/dev/full");
		cr_assert_not(vr_compact_memory(&paths, &error), "a refusing file: should fail");
		cr_assert(strstr(error->message, "compact_memory") &&
				  msg_has_any(error->message, "space"),
			  "the error should name the file and why, got: %s", error->message);
	}
	tree_rm(root);
}

/* ---- how much reclaim took out of memory (vmstat) ---- */

Test(compact, reclaimed_bytes_are_pages_swapped_out_plus_page_cache_reclaimed)
{
	struct vr_vmstat_reclaim v;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_vmstat_reclaim_parse("nr_free_pages 1000\npswpin 7\npswpout 100\n"
					  "pgsteal_anon 100\npgsteal_file 28\n",
					  &v, &err),
		  "%s", err ? err->message : "");
	cr_expect_eq(vr_vmstat_reclaimed_bytes(&v), 128 * 4096,
		     "pswpout + pgsteal_file pages, not pgsteal_anon");
}

Test(compact, refaults_are_anonymous_plus_file_pages_read_back)
{
	struct vr_vmstat_reclaim v;
	g_autoptr(GError) err = NULL;

	cr_assert(
		vr_vmstat_reclaim_parse("workingset_refault_anon 30\nworkingset_nodes 99\n"
					"workingset_refault_file 12\nworkingset_activate_anon 5\n",
					&v, &err),
		"%s", err ? err->message : "");
	cr_expect_eq(v.refault_bytes, 42 * 4096,
		     "refault_anon + refault_file pages, got %" G_GUINT64_FORMAT, v.refault_bytes);
}

Test(compact, reclaimed_bytes_without_the_counters_are_zero)
{
	struct vr_vmstat_reclaim v = { 1, 1, 1 };
	g_autoptr(GError) err = NULL;

	cr_assert(vr_vmstat_reclaim_parse("nr_free_pages 1000\n", &v, &err));
	cr_expect_eq(vr_vmstat_reclaimed_bytes(&v), 0);
}

Test(compact, a_garbled_counter_is_named)
{
	struct vr_vmstat_reclaim v;
	g_autoptr(GError) err = NULL;

	cr_expect_not(vr_vmstat_reclaim_parse("pswpout lots\n", &v, &err));
	cr_assert_not_null(err);
	cr_expect(strstr(err->message, "pswpout"), "%s", err->message);
}

/* ---- releasing what pageout left in the swap cache ---- */

#define MEMINFO_WITH_SWAP_CACHE(kb)                                                                \
	"MemTotal:        1000000 kB\nMemFree:          500000 kB\nSwapCached:      " kb " kB\n"

/* One ask: SwapCached, written to swap since the last release, the ask. */
struct ask_case {
	char name[48];
	uint64_t swap_cached;
	uint64_t swapped_out;
	uint64_t expect;
};

static struct ask_case ask_cases[] = {
	{ "all of the swap cache", 24 * MIB, 100 * MIB, 24 * MIB },
	{ "no more than was written out", 100 * MIB, 40 * MIB, 40 * MIB },
	{ "little swap cache: nothing", 16 * MIB - 1, 100 * MIB, 0 },
	{ "little written out: nothing", 100 * MIB, 16 * MIB - 1, 0 },
	{ "exactly the least", 16 * MIB, 16 * MIB, 16 * MIB },
	{ "capped at the most", 4000 * MIB, 4000 * MIB, VR_COMPACT_SWAP_CACHE_MAX_BYTES },
};

ParameterizedTestParameters(compact, swap_cache_ask)
{
	return cr_make_param_array(struct ask_case, ask_cases, G_N_ELEMENTS(ask_cases));
}

ParameterizedTest(struct ask_case *c, compact, swap_cache_ask)
{
	uint64_t got = vr_compact_swap_cache_ask(c->swap_cached, c->swapped_out);

	cr_assert_eq(got, c->expect, "%s: expected %" G_GUINT64_FORMAT ", got %" G_GUINT64_FORMAT,
		     c->name, c->expect, got);
}

#define VMSTAT "pswpout 1000\npgsteal_anon 300\npgsteal_file 200\n"

Test(compact, vmstat_reclaim_counters)
{
	g_autoptr(GError) err = NULL;
	struct vr_vmstat_reclaim v;

	cr_assert(vr_vmstat_reclaim_parse("nr_free_pages 1\n" VMSTAT "pswpin 9\n", &v, &err));
	cr_expect_eq(v.pswpout_bytes, 1000 * 4096);
	cr_expect_eq(v.pgsteal_anon_bytes, 300 * 4096);
	cr_expect_eq(v.pgsteal_file_bytes, 200 * 4096);
	cr_expect_eq(vr_vmstat_reclaimed_bytes(&v), 1200 * 4096, "pswpout + pgsteal_file");
	cr_expect_eq(vr_vmstat_stolen_bytes(&v), 500 * 4096, "pgsteal_anon + pgsteal_file");
}

Test(compact, swap_cache_is_released_through_the_root_memory_reclaim)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	g_autofree char *written = NULL;
	uint64_t released = 1;

	tree_put(root, "meminfo", MEMINFO_WITH_SWAP_CACHE("24000"));
	tree_put(root, "vmstat", VMSTAT);
	tree_put(root, "memory.reclaim", "");
	cr_assert(vr_compact_release_swap_cache(&paths, 100 * MIB, &released, &error), "%s",
		  error ? error->message : "");
	written = tree_get(root, "memory.reclaim");
	cr_expect_str_eq(written, "24576000", "all of SwapCached asked for, got '%s'", written);
	cr_expect_eq(released, 0,
		     "what was freed is measured, and a fake vmstat that does not move says 0");
	tree_rm(root);
}

Test(compact, little_swap_cache_is_left_alone_and_the_ask_bounded)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	g_autofree char *written = NULL;
	uint64_t released = 1;

	tree_put(root, "meminfo", MEMINFO_WITH_SWAP_CACHE("16000"));
	tree_put(root, "vmstat", VMSTAT);
	tree_put(root, "memory.reclaim", "untouched");
	cr_assert(vr_compact_release_swap_cache(&paths, 100 * MIB, &released, &error), "%s",
		  error ? error->message : "");
	cr_expect_eq(released, 0, "below VR_COMPACT_MIN_BYTES nothing is asked");
	written = tree_get(root, "memory.reclaim");
	cr_expect_str_eq(written, "untouched", "memory.reclaim must not be written");

	tree_put(root, "meminfo", MEMINFO_WITH_SWAP_CACHE("4000000"));
	cr_assert(vr_compact_release_swap_cache(&paths, 20 * MIB, &released, &error), "%s",
		  error ? error->message : "");
	g_free(written);
	written = tree_get(root, "memory.reclaim");
	cr_expect_str_eq(written, "20971520", "no more than was written to swap, got '%s'",
			 written);
	tree_rm(root);
}

Test(compact, swap_cache_errors_name_the_field_and_the_file)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;
	uint64_t released = 1;

	tree_put(root, "meminfo", "MemTotal:        1000000 kB\n");
	tree_put(root, "vmstat", VMSTAT);
	cr_assert_not(vr_compact_release_swap_cache(&paths, 100 * MIB, &released, &error));
	cr_expect(strstr(error->message, "SwapCached"), "should name SwapCached: %s",
		  error->message);
	g_clear_error(&error);

	tree_put(root, "meminfo", MEMINFO_WITH_SWAP_CACHE("64000"));
	cr_assert_not(vr_compact_release_swap_cache(&paths, 100 * MIB, &released, &error),
		      "no memory.reclaim: should fail");
	cr_expect(strstr(error->message, "memory.reclaim"), "should name the file: %s",
		  error->message);
	cr_expect_eq(released, 0);
	g_clear_error(&error);

	tree_put(root, "memory.reclaim", "");
	tree_unlink(root, "vmstat");
	cr_assert_not(vr_compact_release_swap_cache(&paths, 100 * MIB, &released, &error),
		      "no vmstat: what was freed cannot be measured");
	cr_expect(strstr(error->message, "vmstat"), "should name the file: %s", error->message);
	cr_expect_eq(released, 0);
	tree_rm(root);
}
