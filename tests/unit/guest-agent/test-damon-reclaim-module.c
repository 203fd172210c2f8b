/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the `damon-reclaim-module` backend
 * (guest-agent/damon-reclaim-module.c) against a fake
 * /sys/module/damon_reclaim/parameters in a temporary folder: the exact
 * parameters written for both DAMON_RECLAIM profiles, commit_inputs when the
 * module is enabled already, what the module cannot express, who holds
 * DAMON, stats, pause/resume, and the extra reclaim.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "policy.h"
#include "test-fake-tree.h"
#include "test-messages.h"
#include "test-policy-helpers.h"

#define MIB (1ULL << 20)

#define SYS		 "sys"
#define PROC		 "proc"
#define PARAMS		 SYS "/module/damon_reclaim/parameters"
#define KDS		 SYS "/kernel/mm/damon/admin/kdamonds"
#define LRU_SORT_ENABLED SYS "/module/damon_lru_sort/parameters/enabled"

#define KDAMOND_PID "5151"

/* RAM: 2 GiB below the PCI hole, 6 GiB above 4 GiB (the largest). */
static const char guest_iomem[] = "00000000-00000fff : Reserved\n"
				  "00001000-0009fbff : System RAM\n"
				  "00100000-7ffdffff : System RAM\n"
				  "  1b000000-1c001fff : Kernel code\n"
				  "80000000-afffffff : PCI Bus 0000:00\n"
				  "100000000-27fffffff : System RAM\n";

static char *root;
static char *sysfs_dir;
static char *procfs_dir;
static char *cgroup_dir;
static struct vr_agent_paths paths;

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The input parameters of a 6.12 module (written by the backend). */
static const char *const input_params[] = {
	"min_age",
	"quota_ms",
	"quota_sz",
	"quota_reset_interval_ms",
	"quota_mem_pressure_us",
	"quota_autotune_feedback",
	"wmarks_interval",
	"wmarks_high",
	"wmarks_mid",
	"wmarks_low",
	"sample_interval",
	"aggr_interval",
	"min_nr_regions",
	"max_nr_regions",
	"monitor_region_start",
	"monitor_region_end",
	"skip_anon",
	"commit_inputs",
	NULL,
};

static void put_param(const char *name, const char *value)
{
	g_autofree char *rel = g_build_filename(PARAMS, name, NULL);

	tree_put(root, rel, value);
}

static void make_module_tree(void)
{
	for (const char *const *n = input_params; *n; n++)
		put_param(*n, "");
	put_param("enabled", "N");
	put_param("kdamond_pid", "-1\n");
	put_param("nr_reclaim_tried_regions", "0\n");
	put_param("bytes_reclaim_tried_regions", "0\n");
	put_param("nr_reclaimed_regions", "0\n");
	put_param("bytes_reclaimed_regions", "0\n");
	put_param("nr_quota_exceeds", "0\n");
	tree_put(root, KDS "/nr_kdamonds", "0\n");
	tree_put(root, PROC "/iomem", guest_iomem);
	tree_put(root, PROC "/" KDAMOND_PID "/stat",
		 KDAMOND_PID " (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 30 20 0 0 20 0 1 0 100 "
			     "0 0\n");
}

static void setup(void)
{
	root = tree_new();
	sysfs_dir = g_build_filename(root, SYS, NULL);
	procfs_dir = g_build_filename(root, PROC, NULL);
	cgroup_dir = g_build_filename(root, "cgroup", NULL);
	paths = (struct vr_agent_paths){ sysfs_dir, procfs_dir, cgroup_dir };
	make_module_tree();
}

static void teardown(void)
{
	tree_rm(root);
	g_free(root);
	g_free(sysfs_dir);
	g_free(procfs_dir);
	g_free(cgroup_dir);
}

TestSuite(damon_reclaim_module, .init = setup, .fini = teardown);

static const struct vr_backend_ops *const ops = &vr_backend_damon_reclaim_module;

static gpointer open_ok(void)
{
	g_autoptr(GError) err = NULL;
	gpointer b;

	cr_assert(ops->probe(&paths, &err), "probe: %s", err ? err->message : "");
	b = ops->open(&paths, &err);
	cr_assert_not_null(b, "open: %s", err ? err->message : "");
	return b;
}

static void apply_ok(gpointer b, const struct vr_policy *p)
{
	g_autoptr(GError) err = NULL;

	cr_assert(ops->apply_policy(b, p, &err), "apply_policy: %s", err ? err->message : "");
}

static void expect_error(const GError *err, int code, const char *words, const char *what)
{
	cr_assert_not_null(err, "%s: expected an error", what);
	cr_assert_eq(err->domain, VR_AGENT_ERROR, "%s: wrong domain: %s", what, err->message);
	cr_assert_eq(err->code, code, "%s: expected code %d, got %d: %s", what, code, err->code,
		     err->message);
	cr_assert(msg_has_any(err->message, words), "%s: the message should say %s: %s", what,
		  words, err->message);
}

#define P(name) PARAMS "/" name

/* What both profiles write alike. */
#define COMMON_WRITES                                                                              \
	{ P("quota_reset_interval_ms"), "1000" }, { P("quota_mem_pressure_us"), "0" },             \
		{ P("quota_autotune_feedback"), "0" }, { P("wmarks_interval"), "5000000" },        \
		{ P("wmarks_high"), "500" }, { P("wmarks_mid"), "400" },                           \
		{ P("wmarks_low"), "200" }, { P("sample_interval"), "5000" },                      \
		{ P("aggr_interval"), "100000" }, { P("min_nr_regions"), "10" },                   \
		{ P("max_nr_regions"), "1000" }, { P("monitor_region_start"), "4294967296" },      \
		{ P("monitor_region_end"), "10737418240" },                                        \
	{                                                                                          \
		P("skip_anon"), "N"                                                                \
	}

static void apply_and_expect(const char *profile_name, const struct expect_file *want, size_t nr)
{
	g_autoptr(vr_policy) p = profile(profile_name);
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;
	gpointer b = open_ok();

	before = tree_snapshot(root);
	apply_ok(b, p);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	expect_exact_changes(changes, want, nr);
	ops->close(b);
}

Test(damon_reclaim_module, exact_parameters_2021)
{
	const struct expect_file want[] = {
		{ P("min_age"), "5000000" },	 { P("quota_ms"), "100" },
		{ P("quota_sz"), "1073741824" }, COMMON_WRITES,
		{ P("enabled"), "Y" },
	};

	apply_and_expect("damon-reclaim-2021", want, G_N_ELEMENTS(want));
}

Test(damon_reclaim_module, exact_parameters_6_12)
{
	const struct expect_file want[] = {
		{ P("min_age"), "120000000" },	{ P("quota_ms"), "10" },
		{ P("quota_sz"), "134217728" }, COMMON_WRITES,
		{ P("enabled"), "Y" },
	};

	apply_and_expect("damon-reclaim-6.12", want, G_N_ELEMENTS(want));
}

Test(damon_reclaim_module, enabled_module_gets_commit_inputs)
{
	const struct expect_file want[] = {
		{ P("min_age"), "5000000" },	 { P("quota_ms"), "100" },
		{ P("quota_sz"), "1073741824" }, COMMON_WRITES,
		{ P("commit_inputs"), "Y" },
	};

	put_param("enabled", "Y\n");
	apply_and_expect("damon-reclaim-2021", want, G_N_ELEMENTS(want));
}

Test(damon_reclaim_module, second_apply_commits)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	g_autoptr(vr_policy) p612 = profile("damon-reclaim-6.12");
	gpointer b = open_ok();

	apply_ok(b, p);
	tree_expect(root, P("enabled"), "Y");
	tree_truncate_all(root, NAMES(P("enabled"), P("kdamond_pid"), P("nr_reclaim_tried_regions"),
				      P("bytes_reclaim_tried_regions"), P("nr_reclaimed_regions"),
				      P("bytes_reclaimed_regions"), P("nr_quota_exceeds"),
				      KDS "/nr_kdamonds", PROC "/iomem"));
	apply_ok(b, p612);
	tree_expect(root, P("commit_inputs"), "Y");
	tree_expect(root, P("min_age"), "120000000");
	tree_expect(root, P("enabled"), "Y");
	ops->close(b);
	tree_expect(root, P("enabled"), "N");
}

Test(damon_reclaim_module, watermarks_none_stay_active)
{
	g_autoptr(vr_policy) p = parse("{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": "
				       "\"pageout\", \"watermarks\": {\"metric\": \"none\"}}]}");
	gpointer b = open_ok();

	apply_ok(b, p);
	tree_expect(root, P("wmarks_high"), "1000");
	tree_expect(root, P("wmarks_mid"), "999");
	tree_expect(root, P("wmarks_low"), "0");
	tree_expect(root, P("wmarks_interval"), "5000000");
	ops->close(b);
}

Test(damon_reclaim_module, the_largest_ram_range_is_monitored)
{
	g_autoptr(vr_policy) p = profile(NULL);
	gpointer b;

	tree_put(root, PROC "/iomem",
		 "00100000-bfffffff : System RAM\n100000000-13fffffff : System RAM\n");
	b = open_ok();
	apply_ok(b, p);
	tree_expect(root, P("monitor_region_start"), "1048576");
	tree_expect(root, P("monitor_region_end"), "3221225472");
	ops->close(b);
}

Test(damon_reclaim_module, weights_written_where_the_kernel_has_them)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"weights\": {\"sz\": 1, \"nr_accesses\": 2, \"age\": 3}}}]}");
	g_autoptr(vr_policy) q = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"weights\": {\"sz\": 1, \"nr_accesses\": 2, \"age\": 3}}}]}");
	gpointer b = open_ok();

	/* without weight parameters: noted, not an error */
	apply_ok(b, q);
	ops->close(b);
	put_param("quota_weight_sz", "");
	put_param("quota_weight_nr_accesses", "");
	put_param("quota_weight_age", "");
	put_param("enabled", "N");
	b = open_ok();
	apply_ok(b, p);
	tree_expect(root, P("quota_weight_sz"), "1");
	tree_expect(root, P("quota_weight_nr_accesses"), "2");
	tree_expect(root, P("quota_weight_age"), "3");
	ops->close(b);
}

Test(damon_reclaim_module, goals_become_module_parameters)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"goals\": [{\"metric\": \"some_mem_psi_us\", \"target\": 1000},"
		" {\"metric\": \"user_input\", \"target\": 200}]}}]}");
	struct vr_scheme *s = g_ptr_array_index(p->schemes, 0);
	gpointer b = open_ok();

	s->quota.goals[1].current = 100; /* half way: 5000 of the module's 10000 */
	apply_ok(b, p);
	tree_expect(root, P("quota_mem_pressure_us"), "1000");
	tree_expect(root, P("quota_autotune_feedback"), "5000");
	ops->close(b);
}

Test(damon_reclaim_module, free_mem_rate_goal_is_refused)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"goals\": [{\"metric\": \"free_mem_rate\", \"target\": 300}]}}]}");
	g_autoptr(GError) err = NULL;
	gpointer b = open_ok();

	cr_assert_not(ops->apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "free_mem_rate", "a free_mem_rate goal");
	tree_expect(root, P("enabled"), "N");
	ops->close(b);
}

Test(damon_reclaim_module, goals_on_a_kernel_without_goal_parameters)
{
	g_autoptr(vr_policy) goal = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"goals\": [{\"metric\": \"some_mem_psi_us\", \"target\": 1000}]}}]}");
	g_autoptr(vr_policy) plain = profile(NULL);
	g_autoptr(GError) err = NULL;
	gpointer b;

	tree_unlink(root, P("quota_mem_pressure_us"));
	tree_unlink(root, P("quota_autotune_feedback"));
	b = open_ok();
	cr_assert_not(ops->apply_policy(b, goal, &err));
	expect_error(err, VR_AGENT_ERROR_UNSUPPORTED, "quota_mem_pressure_us", "a 6.8 module");
	tree_expect(root, P("enabled"), "N");
	apply_ok(b, plain);
	tree_expect(root, P("enabled"), "Y");
	ops->close(b);
}

Test(damon_reclaim_module, inexpressible_patterns_are_refused)
{
	static const char *const docs[] = {
		"{\"schemes\": [{\"name\": \"r\", \"action\": \"pageout\", \"pattern\": "
		"{\"max_nr_accesses\": 3}}]}",
		"{\"schemes\": [{\"name\": \"r\", \"action\": \"pageout\", \"pattern\": "
		"{\"min_size\": 2097152}}]}",
		"{\"schemes\": [{\"name\": \"r\", \"action\": \"pageout\", \"pattern\": "
		"{\"max_nr_accesses\": 0, \"max_age_us\": 60000000}}]}",
	};
	static const char *const words[] = { "nr_accesses", "size", "max_age" };
	gpointer b = open_ok();

	for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
		g_autoptr(vr_policy) p = parse(docs[i]);
		g_autoptr(GError) err = NULL;
		g_autoptr(GHashTable) before = tree_snapshot(root);
		g_autoptr(GHashTable) after = NULL, changes = NULL;

		cr_assert_not(ops->apply_policy(b, p, &err), "%s should be refused", docs[i]);
		expect_error(err, VR_AGENT_ERROR_INVALID, words[i], docs[i]);
		after = tree_snapshot(root);
		changes = tree_changes(before, after);
		cr_expect_eq(g_hash_table_size(changes), 0, "nothing is written for %s", docs[i]);
	}
	ops->close(b);
}

Test(damon_reclaim_module, a_policy_without_pageout_is_refused)
{
	g_autoptr(vr_policy) p = parse("{\"schemes\": [{\"name\": \"c\", \"action\": \"cold\"}]}");
	g_autoptr(GError) err = NULL;
	gpointer b = open_ok();

	cr_assert_not(ops->apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "pageout", "no pageout scheme");
	ops->close(b);
}

Test(damon_reclaim_module, stats_are_read)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	struct vr_backend_stats st;
	const uint64_t cpu_us = 50ULL * 1000000 / (uint64_t)sysconf(_SC_CLK_TCK);
	gpointer b = open_ok();

	put_param("nr_reclaim_tried_regions", "40\n");
	put_param("bytes_reclaim_tried_regions", "41943040\n");
	put_param("nr_reclaimed_regions", "30\n");
	put_param("bytes_reclaimed_regions", "31457280\n");
	put_param("nr_quota_exceeds", "2\n");
	put_param("kdamond_pid", KDAMOND_PID "\n");
	cr_assert(ops->read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 0, "nothing counted before the module runs for us");
	apply_ok(b, p);
	cr_assert(ops->read_stats(b, &st, &err), "%s", err ? err->message : "");
	cr_expect_eq(st.nr_tried, 40);
	cr_expect_eq(st.sz_tried, 40 * MIB);
	cr_expect_eq(st.nr_applied, 30);
	cr_expect_eq(st.sz_applied, 30 * MIB);
	cr_expect_eq(st.qt_exceeds, 2);
	cr_expect_eq(st.reclaimer_cpu_us, cpu_us);

	/* pause keeps the run's counts; resume adds the next run's */
	cr_assert(ops->pause(b, &err));
	tree_expect(root, P("enabled"), "N");
	cr_assert(ops->read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 30 * MIB);
	cr_assert(ops->resume(b, &err), "%s", err ? err->message : "");
	tree_expect(root, P("enabled"), "Y");
	cr_assert(ops->read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 60 * MIB);
	ops->close(b);
}

Test(damon_reclaim_module, garbage_stats_name_the_file)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	struct vr_backend_stats st;
	gpointer b = open_ok();

	apply_ok(b, p);
	put_param("bytes_reclaimed_regions", "a lot\n");
	cr_assert_not(ops->read_stats(b, &st, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "bytes_reclaimed_regions", "garbage stats");
	put_param("bytes_reclaimed_regions", "0\n");
	ops->close(b);
}

Test(damon_reclaim_module, busy_while_a_sysfs_kdamond_runs)
{
	g_autoptr(GError) err = NULL, oerr = NULL;

	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KDS "/0/state", "on\n");
	cr_assert_not(ops->probe(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_BUSY, "kdamond 0", "probe with a sysfs kdamond");
	cr_assert_null(ops->open(&paths, &oerr));
	expect_error(oerr, VR_AGENT_ERROR_BUSY, "DAMON_RECLAIM", "open with a sysfs kdamond");
}

Test(damon_reclaim_module, busy_while_lru_sort_runs)
{
	g_autoptr(GError) err = NULL;

	tree_put(root, LRU_SORT_ENABLED, "Y\n");
	cr_assert_not(ops->probe(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_BUSY, "DAMON_LRU_SORT", "probe with LRU_SORT on");
}

Test(damon_reclaim_module, apply_checks_again_for_a_sysfs_kdamond)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	gpointer b = open_ok();

	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KDS "/0/state", "on\n");
	cr_assert_not(ops->apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_BUSY, "kdamond 0", "apply with a sysfs kdamond");
	tree_expect(root, P("enabled"), "N");
	ops->close(b);
}

Test(damon_reclaim_module, no_module)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *params = g_build_filename(root, PARAMS, NULL);

	tree_rm(params);
	cr_assert_not(ops->probe(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_UNSUPPORTED, "DAMON_RECLAIM", "no module");
	cr_expect_str_eq(ops->name, "damon-reclaim-module");
}

Test(damon_reclaim_module, tick_notices_the_module_disabled_itself)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	struct vr_backend_stats st;
	gpointer b = open_ok();

	apply_ok(b, p);
	cr_expect_gt(ops->tick(b, 0), 0);
	put_param("enabled", "N\n");
	put_param("bytes_reclaimed_regions", "4096\n");
	cr_expect_gt(ops->tick(b, 1), 0);
	cr_assert(ops->read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 0, "a disabled module is not read");
	ops->close(b);
}

Test(damon_reclaim_module, no_regions)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;
	gpointer b = open_ok();

	apply_ok(b, p);
	cr_assert(ops->read_regions(b, 100, out, &err));
	cr_expect_eq(out->len, 0, "the module publishes no regions");
	ops->close(b);
}

Test(damon_reclaim_module, reclaim_boosts_and_restores_quota_sz)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	uint64_t reclaimed = 1;
	gpointer b = open_ok();

	apply_ok(b, p);
	cr_assert(ops->reclaim(b, MIB, 0, &reclaimed, &err), "%s", err ? err->message : "");
	cr_expect_eq(reclaimed, 0, "this fake module reclaims nothing");
	tree_expect(root, P("quota_sz"), "1073741824");
	tree_expect(root, P("commit_inputs"), "Y");
	ops->close(b);
}

Test(damon_reclaim_module, reclaim_needs_the_module_running)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) e1 = NULL, e2 = NULL;
	uint64_t reclaimed;
	gpointer b = open_ok();

	cr_assert_not(ops->reclaim(b, MIB, 0, &reclaimed, &e1));
	expect_error(e1, VR_AGENT_ERROR_INVALID, "not running", "before a policy");
	apply_ok(b, p);
	cr_assert(ops->pause(b, NULL));
	cr_assert_not(ops->reclaim(b, MIB, 0, &reclaimed, &e2));
	expect_error(e2, VR_AGENT_ERROR_INVALID, "paused", "while paused");
	ops->close(b);
}
