/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the "host-damon" access source (hostd/sources/source-host-damon.c)
 * against a fake sysfs and procfs tree in a temporary folder; never the
 * machine's own /sys/kernel/mm/damon.
 *
 * The fake tree is what DAMON sysfs looks like after the nr_* writes (the
 * folders exist, their files empty), a QEMU process folder in procfs, and
 * tried regions written by the test as the kernel would list them. A start's
 * writes are checked exactly with snapshots; the picture is checked region
 * by region against the RAM map:
 *
 *   host-virtual (QEMU process)           guest-physical
 *   0x5555_5555_4000 heap        ----->   dropped
 *   0x7f00_0000_0000 +2 GiB RAM  ----->   [0, 2 GiB)
 *   0x7f00_8000_0000 +1 GiB RAM  ----->   [4 GiB, 5 GiB)
 *   0x7ffd_0000_0000 stack       ----->   dropped
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "qmp/ram-map.h"
#include "sources/access-source.h"
#include "test-access-source.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define MIB    (1ULL << 20)
#define GIB    (1ULL << 30)
#define U64MAX "18446744073709551615"
#define U32MAX "4294967295"

/* Layout of the fake tree. */
#define SYS		"sys"
#define PROC		"proc"
#define KDS		SYS "/kernel/mm/damon/admin/kdamonds"
#define KD0		KDS "/0"
#define CTX0		KD0 "/contexts/0"
#define SCHEME0		CTX0 "/schemes/0"
#define TRIED		SCHEME0 "/tried_regions"
#define RECLAIM_ENABLED SYS "/module/damon_reclaim/parameters/enabled"

/* The QEMU process of the tests. */
#define QEMU_PID     4321
#define QEMU_PID_STR "4321"

/* Where the guest's RAM lives in the QEMU process (see the file comment). */
#define HVA_LOW	 0x7f0000000000ULL
#define HVA_HIGH (HVA_LOW + 2 * GIB)
#define HVA_END	 (HVA_HIGH + GIB)

static char *root;
static char *sysfs_dir;
static char *procfs_dir;

/* Scheme 0's folder as a 6.12 kernel shows it after nr_schemes 1. */
static void make_scheme0(void)
{
	tree_put_empty(root, SCHEME0, TREE_NAMES("action", "apply_interval_us", "target_nid"));
	tree_put_empty(root, SCHEME0 "/access_pattern/sz", TREE_NAMES("min", "max"));
	tree_put_empty(root, SCHEME0 "/access_pattern/nr_accesses", TREE_NAMES("min", "max"));
	tree_put_empty(root, SCHEME0 "/access_pattern/age", TREE_NAMES("min", "max"));
	tree_put_empty(root, SCHEME0 "/quotas",
		       TREE_NAMES("ms", "bytes", "reset_interval_ms", "effective_bytes"));
	tree_put_empty(root, SCHEME0 "/quotas/weights",
		       TREE_NAMES("sz_permil", "nr_accesses_permil", "age_permil"));
	tree_put_empty(root, SCHEME0 "/quotas/goals", TREE_NAMES("nr_goals"));
	tree_put_empty(root, SCHEME0 "/watermarks",
		       TREE_NAMES("metric", "interval_us", "high", "mid", "low"));
	tree_put_empty(root, SCHEME0 "/filters", TREE_NAMES("nr_filters"));
	tree_put(root, TRIED "/total_bytes", "0\n");
}

/* A fake host: DAMON sysfs with vaddr, nothing running, QEMU_PID alive. */
static void make_tree(void)
{
	tree_put_kdamond0(root, KDS, "-1\n");
	tree_put_empty(root, CTX0 "/schemes", TREE_NAMES("nr_schemes"));
	make_scheme0();
	tree_put(root, RECLAIM_ENABLED, "N\n");
	tree_put(root, PROC "/sys/kernel/osrelease", "6.12.9+deb12-cloud-amd64\n");
	tree_put(root, PROC "/" QEMU_PID_STR "/stat",
		 QEMU_PID_STR " (qemu-system-x86) S 1 0 0 0 -1 0 0 0 0 0 10 5 0 0 20 0 4 0\n");
}

/* Tried region folder @index of scheme 0, as the kernel lists it. */
static void put_tried(guint index, uint64_t start, uint64_t end, uint32_t nr_accesses, uint32_t age)
{
	g_autofree char *dir = g_strdup_printf(TRIED "/%u", index);
	g_autofree char *rel = NULL;
	char num[32];
	const struct {
		const char *name;
		uint64_t value;
	} files[] = {
		{ "start", start }, { "end", end }, { "nr_accesses", nr_accesses }, { "age", age }
	};

	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		g_free(rel);
		rel = g_build_filename(dir, files[i].name, NULL);
		g_snprintf(num, sizeof(num), "%" G_GUINT64_FORMAT "\n", (guint64)files[i].value);
		tree_put(root, rel, num);
	}
}

static void setup(void)
{
	root = tree_new();
	sysfs_dir = g_build_filename(root, SYS, NULL);
	procfs_dir = g_build_filename(root, PROC, NULL);
}

static void teardown(void)
{
	tree_rm(root);
	g_free(root);
	g_free(sysfs_dir);
	g_free(procfs_dir);
}

TestSuite(host_damon, .init = setup, .fini = teardown);
TestSuite(host_damon_args, .init = setup, .fini = teardown);

/* ---- helpers ---- */

/* The RAM map of a q35 guest with 3 GiB: 2 GiB below the PCI hole, 1 GiB
 * above 4 GiB, both from one host mapping. */
static GArray *q35_map(void)
{
	static const struct vr_ram_range ranges[] = {
		{ .gpa = 0, .hva = HVA_LOW, .size = 2 * GIB },
		{ .gpa = 4 * GIB, .hva = HVA_HIGH, .size = GIB },
	};
	GArray *map = g_array_new(FALSE, FALSE, sizeof(struct vr_ram_range));

	g_array_append_vals(map, ranges, G_N_ELEMENTS(ranges));
	return map;
}

static struct vr_access_source *new_source(const struct vr_monitor_attrs *attrs)
{
	g_autoptr(GArray) map = q35_map();
	g_autoptr(GError) err = NULL;
	struct vr_access_source *src =
		vr_access_source_new_host_damon(sysfs_dir, procfs_dir, QEMU_PID, map, attrs, &err);

	cr_assert_not_null(src, "the source should be created, got: %s",
			   err ? err->message : "NULL without an error");
	cr_assert_str_eq(vr_access_source_name(src), "host-damon");
	return src;
}

/* make_tree(), and a source on it with the default attributes (at most 20
 * accesses per region), started. */
static struct vr_access_source *new_started_source(void)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	struct vr_access_source *src;

	make_tree();
	src = new_source(&attrs);
	start_ok(src);
	return src;
}

static void expect_region(const struct vr_proto_regions *p, guint i, uint64_t start, uint64_t end,
			  uint32_t nr_accesses, uint32_t age)
{
	const struct vr_picture_region *r;

	cr_assert_lt(i, p->regions->len, "expected at least %u regions, got %u", i + 1,
		     p->regions->len);
	r = &g_array_index(p->regions, struct vr_picture_region, i);
	cr_expect_eq(r->start, start, "region %u: expected start 0x%" PRIx64 ", got 0x%" PRIx64, i,
		     start, r->start);
	cr_expect_eq(r->end, end, "region %u: expected end 0x%" PRIx64 ", got 0x%" PRIx64, i, end,
		     r->end);
	cr_expect_eq(r->nr_accesses, nr_accesses, "region %u: expected nr_accesses %u, got %u", i,
		     nr_accesses, r->nr_accesses);
	cr_expect_eq(r->age, age, "region %u: expected age %u, got %u", i, age, r->age);
}

/* ---- start: what is written ---- */

Test(host_damon, start_writes_a_vaddr_kdamond_with_one_stat_scheme)
{
	const struct vr_monitor_attrs attrs = {
		.sample_interval_us = 10000,
		.aggr_interval_us = 200000,
		.ops_update_interval_us = 2000000,
		.min_nr_regions = 20,
		.max_nr_regions = 800,
	};
	static const struct expect_file want[] = {
		{ KDS "/nr_kdamonds", "1" },
		{ KD0 "/contexts/nr_contexts", "1" },
		{ CTX0 "/operations", "vaddr" },
		{ CTX0 "/monitoring_attrs/intervals/sample_us", "10000" },
		{ CTX0 "/monitoring_attrs/intervals/aggr_us", "200000" },
		{ CTX0 "/monitoring_attrs/intervals/update_us", "2000000" },
		{ CTX0 "/monitoring_attrs/nr_regions/min", "20" },
		{ CTX0 "/monitoring_attrs/nr_regions/max", "800" },
		{ CTX0 "/targets/nr_targets", "1" },
		{ CTX0 "/targets/0/pid_target", QEMU_PID_STR },
		{ CTX0 "/targets/0/regions/nr_regions", "0" },
		{ CTX0 "/schemes/nr_schemes", "1" },
		{ SCHEME0 "/action", "stat" },
		{ SCHEME0 "/access_pattern/sz/min", "0" },
		{ SCHEME0 "/access_pattern/sz/max", U64MAX },
		{ SCHEME0 "/access_pattern/nr_accesses/min", "0" },
		{ SCHEME0 "/access_pattern/nr_accesses/max", U32MAX },
		{ SCHEME0 "/access_pattern/age/min", "0" },
		{ SCHEME0 "/access_pattern/age/max", U32MAX },
		{ SCHEME0 "/quotas/ms", "0" },
		{ SCHEME0 "/quotas/bytes", "0" },
		{ SCHEME0 "/quotas/reset_interval_ms", "0" },
		{ SCHEME0 "/quotas/weights/sz_permil", "0" },
		{ SCHEME0 "/quotas/weights/nr_accesses_permil", "0" },
		{ SCHEME0 "/quotas/weights/age_permil", "0" },
		{ SCHEME0 "/quotas/goals/nr_goals", "0" },
		{ SCHEME0 "/watermarks/metric", "none" },
		{ SCHEME0 "/watermarks/interval_us", "0" },
		{ SCHEME0 "/watermarks/high", "0" },
		{ SCHEME0 "/watermarks/mid", "0" },
		{ SCHEME0 "/watermarks/low", "0" },
		{ SCHEME0 "/filters/nr_filters", "0" },
		{ KD0 "/state", "on" },
	};
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;

	make_tree();
	src = new_source(&attrs);
	before = tree_snapshot(root);
	start_ok(src);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	expect_exact_changes(changes, want, G_N_ELEMENTS(want));
}

Test(host_damon, stop_turns_the_kdamond_off_and_removes_it)
{
	g_autoptr(vr_access_source) src = new_started_source();

	vr_access_source_stop(src);
	cr_assert_not(vr_access_source_is_started(src));
	tree_expect(root, KD0 "/state", "off");
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

Test(host_damon, free_stops_a_running_source)
{
	struct vr_access_source *src = new_started_source();

	vr_access_source_free(src);
	tree_expect(root, KD0 "/state", "off");
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

/* ---- the picture ---- */

Test(host_damon, tried_regions_become_guest_physical_regions)
{
	g_autoptr(vr_access_source) src = new_started_source();
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;

	/* listed out of order, as folder names may come */
	put_tried(3, HVA_HIGH - MIB, HVA_HIGH + MIB, 25, 1);	  /* spans both RAM ranges */
	put_tried(0, 0x555555554000ULL, 0x555555600000ULL, 7, 9); /* QEMU's heap */
	put_tried(1, HVA_LOW, HVA_LOW + GIB, 0, 10);
	put_tried(2, HVA_LOW + GIB, HVA_HIGH - MIB, 5, 3);
	put_tried(4, HVA_HIGH + MIB, HVA_END + 2 * MIB, 2, 4);	   /* runs past the RAM */
	put_tried(5, 0x7ffd00000000ULL, 0x7ffd00021000ULL, 20, 2); /* a stack */

	cr_assert(vr_access_source_get_regions(src, &pic, &err), "get-regions should succeed: %s",
		  err ? err->message : "");
	cr_expect_eq(pic.sample_interval_us, 5000);
	cr_expect_eq(pic.aggr_interval_us, 100000);
	cr_assert_eq(pic.regions->len, 5,
		     "heap and stack dropped, one region split at 2 GiB: expected 5, got %u",
		     pic.regions->len);
	expect_region(&pic, 0, 0, GIB, 0, 10);
	expect_region(&pic, 1, GIB, 2 * GIB - MIB, 5, 3);
	/* nr_accesses 25 is capped to aggr / sample = 20 */
	expect_region(&pic, 2, 2 * GIB - MIB, 2 * GIB, 20, 1);
	expect_region(&pic, 3, 4 * GIB, 4 * GIB + MIB, 20, 1);
	expect_region(&pic, 4, 4 * GIB + MIB, 5 * GIB, 2, 4);
	tree_expect_last_write(root, KD0 "/state", "clear_schemes_tried_regions");
}

Test(host_damon, nothing_in_ram_gives_an_empty_picture)
{
	g_autoptr(vr_access_source) src = new_started_source();
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;

	put_tried(0, 0x555555554000ULL, 0x555555600000ULL, 7, 9);
	cr_assert(vr_access_source_get_regions(src, &pic, &err), "%s", err ? err->message : "");
	cr_expect_eq(pic.regions ? pic.regions->len : 0, 0,
		     "a region outside guest RAM must not appear");
}

Test(host_damon, many_regions_are_merged_to_the_protocol_limit)
{
	enum {
		NR = VR_PROTO_MAX_REGIONS + 88
	};
	const uint64_t piece = 2 * MIB;
	g_autoptr(vr_access_source) src = new_started_source();
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;
	uint64_t covered = 0;

	for (guint i = 0; i < NR; i++)
		put_tried(i, HVA_LOW + i * piece, HVA_LOW + (i + 1) * piece, i % 2 ? 20 : 0, i % 7);
	cr_assert(vr_access_source_get_regions(src, &pic, &err), "%s", err ? err->message : "");
	cr_assert_leq(pic.regions->len, VR_PROTO_MAX_REGIONS, "expected at most %d regions, got %u",
		      VR_PROTO_MAX_REGIONS, pic.regions->len);
	cr_assert_geq(pic.regions->len, VR_PROTO_MAX_REGIONS - 1,
		      "merging should stop at the limit, got %u", pic.regions->len);
	for (guint i = 0; i < pic.regions->len; i++) {
		const struct vr_picture_region *r =
			&g_array_index(pic.regions, struct vr_picture_region, i);

		covered += r->end - r->start;
	}
	cr_expect_eq(covered, NR * piece, "the merged regions cover what DAMON listed: %" PRIu64,
		     covered);
}

/* ---- errors ---- */

Test(host_damon, busy_when_another_kdamond_runs)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;

	make_tree();
	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KD0 "/state", "on\n");
	tree_put(root, KD0 "/pid", "777\n");
	src = new_source(&attrs);
	before = tree_snapshot(root);
	cr_assert_not(vr_access_source_start(src, &err), "a running kdamond must be refused");
	expect_error(err, VR_ACCESS_SOURCE_ERROR_BUSY, "busy", "another kdamond");
	cr_expect(msg_has_any(err->message, "kdamond 0"), "the kdamond is named: %s", err->message);
	cr_expect(msg_names_number(err->message, 777), "its pid is named: %s", err->message);
	cr_expect(msg_names_number(err->message, QEMU_PID), "the QEMU process is named: %s",
		  err->message);
	cr_expect_not(vr_access_source_is_started(src));
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	cr_expect_eq(g_hash_table_size(changes), 0, "a busy DAMON must not be touched");
}

Test(host_damon, busy_when_damon_reclaim_is_enabled)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;

	make_tree();
	tree_put(root, RECLAIM_ENABLED, "Y\n");
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_start(src, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_BUSY, "DAMON_RECLAIM", "DAMON_RECLAIM enabled");
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

Test(host_damon, no_vaddr_is_unsupported)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;

	make_tree();
	tree_put(root, CTX0 "/avail_operations", "paddr\n");
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_start(src, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_UNSUPPORTED, "vaddr", "no vaddr");
}

Test(host_damon, no_damon_sysfs_is_unsupported)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;

	tree_mkdir(root, SYS);
	tree_mkdir(root, PROC "/" QEMU_PID_STR);
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_start(src, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_UNSUPPORTED, "nr_kdamonds", "no DAMON sysfs");
}

Test(host_damon, a_missing_process_is_refused)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;
	g_autofree char *dir = g_build_filename(root, PROC, QEMU_PID_STR, NULL);

	make_tree();
	tree_rm(dir);
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_start(src, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_FAILED, "does not exist", "no such process");
	cr_expect(msg_names_number(err->message, QEMU_PID), "the pid is named: %s", err->message);
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

Test(host_damon, a_refused_write_names_the_file_and_leaves_nothing_running)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_autoptr(GError) err = NULL;

	make_tree();
	tree_unlink(root, CTX0 "/targets/0/pid_target");
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_start(src, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_FAILED, "targets/0/pid_target",
		     "pid_target missing");
	cr_expect(msg_names_number(err->message, QEMU_PID), "the value is named: %s", err->message);
	cr_expect_not(vr_access_source_is_started(src));
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

Test(host_damon, a_garbled_tried_region_names_the_file)
{
	g_autoptr(vr_access_source) src = new_started_source();
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;

	put_tried(0, HVA_LOW, HVA_LOW + GIB, 0, 10);
	put_tried(1, HVA_LOW + GIB, HVA_HIGH, 3, 1);
	tree_put(root, TRIED "/1/nr_accesses", "lots\n");
	cr_assert_not(vr_access_source_get_regions(src, &pic, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_FAILED, "tried_regions/1/nr_accesses",
		     "garbled nr_accesses");
	cr_expect(msg_has_any(err->message, "lots"), "what it held is named: %s", err->message);
	cr_expect_null(pic.regions, "no picture on error");
	tree_expect_last_write(root, KD0 "/state", "clear_schemes_tried_regions");
}

Test(host_damon, a_vanished_process_is_named)
{
	g_autoptr(vr_access_source) src = new_started_source();
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL;
	g_autofree char *proc_dir = g_build_filename(root, PROC, QEMU_PID_STR, NULL);
	g_autofree char *tried_dir = g_build_filename(root, TRIED, NULL);

	/* QEMU exits: the kdamond stops, and no listing can be had */
	tree_rm(proc_dir);
	tree_rm(tried_dir);
	cr_assert_not(vr_access_source_get_regions(src, &pic, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_FAILED, "exited", "QEMU gone");
	cr_expect(msg_names_number(err->message, QEMU_PID), "the pid is named: %s", err->message);
}

Test(host_damon, regions_need_a_started_source)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(vr_access_source) src = NULL;
	g_auto(vr_proto_regions) pic = { 0 };
	g_autoptr(GError) err = NULL, err2 = NULL;

	make_tree();
	src = new_source(&attrs);
	cr_assert_not(vr_access_source_get_regions(src, &pic, &err));
	expect_error(err, VR_ACCESS_SOURCE_ERROR_STATE, "not started", "get-regions first");
	start_ok(src);
	cr_assert_not(vr_access_source_start(src, &err2));
	expect_error(err2, VR_ACCESS_SOURCE_ERROR_STATE, "already started", "start twice");
}

/* ---- bad arguments ---- */

/**
 * struct arg_case - a constructor call that must fail.
 * @name:	what is wrong.
 * @pid:	the QEMU pid given.
 * @map:	the RAM map given, @nr_map ranges.
 * @sample_us: the sampling interval (the other attributes are the defaults).
 * @words:	what the message must say ('|'-separated alternatives).
 */
struct arg_case {
	char name[48];
	int pid;
	struct vr_ram_range map[3];
	guint nr_map;
	uint64_t sample_us;
	char words[48];
};

static struct arg_case arg_cases[] = {
	{ "pid 0", 0, { { 0, HVA_LOW, GIB } }, 1, 5000, "process id" },
	{ "negative pid", -5, { { 0, HVA_LOW, GIB } }, 1, 5000, "-5" },
	{ "empty map", QEMU_PID, { { 0 } }, 0, 5000, "empty" },
	{ "empty range",
	  QEMU_PID,
	  { { 0, HVA_LOW, GIB }, { 4 * GIB, HVA_HIGH, 0 } },
	  2,
	  5000,
	  "entry 1" },
	{ "gpa overlap",
	  QEMU_PID,
	  { { 0, HVA_LOW, 2 * GIB }, { 4 * GIB, HVA_HIGH, GIB }, { GIB, HVA_END, GIB } },
	  3,
	  5000,
	  "0 and 2" },
	{ "hva wraps", QEMU_PID, { { 0, G_MAXUINT64 - MIB, 2 * MIB } }, 1, 5000, "wraps" },
	{ "bad attributes", QEMU_PID, { { 0, HVA_LOW, GIB } }, 1, 0, "sample" },
};

ParameterizedTestParameters(host_damon_args, refused)
{
	return cr_make_param_array(struct arg_case, arg_cases, G_N_ELEMENTS(arg_cases));
}

ParameterizedTest(struct arg_case *c, host_damon_args, refused)
{
	struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(GArray) map = g_array_new(FALSE, FALSE, sizeof(struct vr_ram_range));
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_access_source) src = NULL;

	attrs.sample_interval_us = c->sample_us;
	g_array_append_vals(map, c->map, c->nr_map);
	src = vr_access_source_new_host_damon(sysfs_dir, procfs_dir, c->pid, map, &attrs, &err);
	cr_assert_null(src, "%s: expected the source to be refused", c->name);
	expect_error(err, VR_ACCESS_SOURCE_ERROR_INVALID, c->words, c->name);
}
