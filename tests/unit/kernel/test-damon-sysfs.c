/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the DAMON sysfs layer (kernel/damon-sysfs.c, the tree
 * writer, and kernel/damon-sysfs-status.c, the status reader) and of the
 * `damon` backend over it (guest-agent/damon.c), against a fake sysfs and
 * procfs tree in a temporary folder; never the machine's own
 * /sys/kernel/mm/damon.
 *
 * The fake tree is what real sysfs looks like after the nr_* writes: the
 * folders exist with empty files. A step's writes are checked exactly with
 * snapshots (every file written, its value, nothing else), and the order of
 * the writes with inotify (IN_CLOSE_WRITE events come in write order).
 *
 * The pure parts are tested on struct literals and the built-in profiles:
 * policy -> config conversion, merging of regions.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "damon-sysfs.h"
#include "iomem.h"
#include "policy.h"
#include "test-fake-tree.h"
#include "test-messages.h"
#include "test-policy-helpers.h"

#define GIB    (1ULL << 30)
#define MIB    (1ULL << 20)
#define KIB    (1ULL << 10)
#define U64MAX "18446744073709551615"
#define U32MAX "4294967295"

/* Layout of the fake tree. */
#define SYS		 "sys"
#define PROC		 "proc"
#define ADMIN		 SYS "/kernel/mm/damon/admin"
#define KDS		 ADMIN "/kdamonds"
#define KD0		 KDS "/0"
#define CTX0		 KD0 "/contexts/0"
#define SCHEMES		 CTX0 "/schemes"
#define RECLAIM_ENABLED	 SYS "/module/damon_reclaim/parameters/enabled"
#define LRU_SORT_ENABLED SYS "/module/damon_lru_sort/parameters/enabled"

/* The kdamond's pid in the fake tree, and its CPU time in clock ticks. */
#define KDAMOND_PID   "4242"
#define KDAMOND_UTIME 150
#define KDAMOND_STIME 50

/* A q35 guest: 3 System RAM ranges (below 1 MiB, below the PCI hole, above
 * 4 GiB) with nested entries. */
static const char guest_iomem[] = "00000000-00000fff : Reserved\n"
				  "00001000-0009fbff : System RAM\n"
				  "000a0000-000bffff : PCI Bus 0000:00\n"
				  "00100000-7ffdffff : System RAM\n"
				  "  1b000000-1c001fff : Kernel code\n"
				  "7ffe0000-7fffffff : Reserved\n"
				  "80000000-afffffff : PCI Bus 0000:00\n"
				  "100000000-27fffffff : System RAM\n";
#define NR_GUEST_RANGES 3

static char *root;
static char *sysfs_dir;
static char *procfs_dir;
static char *cgroup_dir;
static struct vr_agent_paths paths;

/**
 * struct skel - what the fake DAMON tree holds.
 * @nr_regions:	 target region folders.
 * @nr_schemes:	 scheme folders.
 * @nr_goals:	 goal folders per scheme.
 * @goals:	 quotas/goals/ exists (Linux 6.8+).
 * @goal_metric: goals/G/target_metric exists (6.9+).
 * @filters:	 filters/ exists (6.3+).
 * @nr_filters:	 filter folders per scheme.
 */
struct skel {
	guint nr_regions;
	guint nr_schemes;
	guint nr_goals;
	guint nr_filters;
	bool goals;
	bool goal_metric;
	bool filters;
};

static const struct skel skel_6_12 = {
	.nr_regions = NR_GUEST_RANGES,
	.nr_schemes = 2,
	.goals = true,
	.goal_metric = true,
	.filters = true,
};

static void make_scheme(guint s, const struct skel *k)
{
	g_autofree char *dir = g_strdup_printf(SCHEMES "/%u", s);
	g_autofree char *ap = g_build_filename(dir, "access_pattern", NULL);
	g_autofree char *q = g_build_filename(dir, "quotas", NULL);

	tree_put_empty(root, dir, TREE_NAMES("action", "apply_interval_us", "target_nid"));
	for (guint i = 0; i < 3; i++) {
		static const char *const kinds[] = { "sz", "nr_accesses", "age" };
		g_autofree char *kd = g_build_filename(ap, kinds[i], NULL);

		tree_put_empty(root, kd, TREE_NAMES("min", "max"));
	}
	tree_put_empty(root, q, TREE_NAMES("ms", "bytes", "reset_interval_ms", "effective_bytes"));
	{
		g_autofree char *w = g_build_filename(q, "weights", NULL);

		tree_put_empty(root, w,
			       TREE_NAMES("sz_permil", "nr_accesses_permil", "age_permil"));
	}
	if (k->goals) {
		g_autofree char *g = g_build_filename(q, "goals", NULL);

		tree_put_empty(root, g, TREE_NAMES("nr_goals"));
		for (guint i = 0; i < k->nr_goals; i++) {
			g_autofree char *gd = g_strdup_printf("%s/%u", g, i);

			tree_put_empty(root, gd, TREE_NAMES("target_value", "current_value"));
			if (k->goal_metric)
				tree_put_empty(root, gd, TREE_NAMES("target_metric"));
		}
	}
	{
		g_autofree char *w = g_build_filename(dir, "watermarks", NULL);

		tree_put_empty(root, w, TREE_NAMES("metric", "interval_us", "high", "mid", "low"));
	}
	if (k->filters) {
		g_autofree char *f = g_build_filename(dir, "filters", NULL);

		tree_put_empty(root, f, TREE_NAMES("nr_filters"));
		for (guint i = 0; i < k->nr_filters; i++) {
			g_autofree char *fd = g_strdup_printf("%s/%u", f, i);

			tree_put_empty(root, fd, TREE_NAMES("type", "matching", "memcg_path"));
		}
	}
	{
		static const char *const stats[] = { "nr_tried", "sz_tried", "nr_applied",
						     "sz_applied", "qt_exceeds" };

		for (guint i = 0; i < G_N_ELEMENTS(stats); i++) {
			g_autofree char *rel = g_strdup_printf("%s/stats/%s", dir, stats[i]);

			tree_put(root, rel, "0\n");
		}
	}
	{
		g_autofree char *rel = g_build_filename(dir, "tried_regions", "total_bytes", NULL);

		tree_put(root, rel, "0\n");
	}
}

/* A fake DAMON tree as sysfs shows it after the nr_* writes, plus procfs. */
static void make_tree(const struct skel *k)
{
	tree_put_kdamond0(root, KDS, KDAMOND_PID "\n");
	for (guint i = 0; i < k->nr_regions; i++) {
		g_autofree char *rd = g_strdup_printf(CTX0 "/targets/0/regions/%u", i);

		tree_put_empty(root, rd, TREE_NAMES("start", "end"));
	}
	tree_put_empty(root, SCHEMES, TREE_NAMES("nr_schemes"));
	for (guint s = 0; s < k->nr_schemes; s++)
		make_scheme(s, k);
	tree_put(root, RECLAIM_ENABLED, "N\n");
	tree_put(root, PROC "/iomem", guest_iomem);
	tree_put(root, PROC "/sys/kernel/osrelease", "6.12.9+deb12-cloud-amd64\n");
	{
		g_autofree char *stat = g_strdup_printf(
			KDAMOND_PID " (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 %d %d 0 0 20 0 1 0 "
				    "100 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 "
				    "17 1 0 0 0 0 0\n",
			KDAMOND_UTIME, KDAMOND_STIME);

		tree_put(root, PROC "/" KDAMOND_PID "/stat", stat);
	}
}

static void setup(void)
{
	root = tree_new();
	sysfs_dir = g_build_filename(root, SYS, NULL);
	procfs_dir = g_build_filename(root, PROC, NULL);
	cgroup_dir = g_build_filename(root, "cgroup", NULL);
	paths = (struct vr_agent_paths){ sysfs_dir, procfs_dir, cgroup_dir };
}

static void teardown(void)
{
	tree_rm(root);
	g_free(root);
	g_free(sysfs_dir);
	g_free(procfs_dir);
	g_free(cgroup_dir);
}

TestSuite(damon_config);
TestSuite(damon_sysfs, .init = setup, .fini = teardown);
TestSuite(damon_merge);
TestSuite(damon_backend, .init = setup, .fini = teardown);

/* ---- helpers ---- */

static struct vr_scheme *policy_scheme(const struct vr_policy *p, guint i)
{
	cr_assert_lt(i, p->schemes->len);
	return g_ptr_array_index(p->schemes, i);
}

static GArray *guest_ranges(void)
{
	g_autoptr(GError) err = NULL;
	GArray *r = vr_iomem_parse_system_ram(guest_iomem, &err);

	cr_assert_not_null(r, "%s", err ? err->message : "");
	cr_assert_eq(r->len, NR_GUEST_RANGES);
	return r;
}

static struct vr_damon_config *config_ok(const struct vr_policy *p,
					 const struct vr_damon_caps *caps)
{
	g_autoptr(GArray) r = guest_ranges();
	g_autoptr(GError) err = NULL;
	struct vr_damon_config *cfg =
		vr_damon_config_from_policy(p, (struct vr_range *)r->data, r->len, caps, &err);

	cr_assert_not_null(cfg, "the policy should convert: %s", err ? err->message : "");
	return cfg;
}

static void config_fails(const struct vr_policy *p, const struct vr_damon_caps *caps,
			 const char *words, const char *what)
{
	g_autoptr(GArray) r = guest_ranges();
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_damon_config) cfg =
		vr_damon_config_from_policy(p, (struct vr_range *)r->data, r->len, caps, &err);

	cr_assert_null(cfg, "%s: expected an error", what);
	cr_assert_not_null(err, "%s: expected an error set", what);
	cr_assert_eq(err->domain, VR_AGENT_ERROR);
	cr_assert_eq(err->code, VR_AGENT_ERROR_INVALID, "%s: expected INVALID, got %d: %s", what,
		     err->code, err->message);
	cr_assert(msg_has_any(err->message, words), "%s: the message should name %s: %s", what,
		  words, err->message);
}

static void expect_error(const GError *err, int code, const char *words, const char *what)
{
	cr_assert_not_null(err, "%s: expected an error", what);
	cr_assert_eq(err->domain, VR_AGENT_ERROR, "%s: wrong domain (%s)", what, err->message);
	cr_assert_eq(err->code, code, "%s: expected code %d, got %d: %s", what, code, err->code,
		     err->message);
	cr_assert(msg_has_any(err->message, words), "%s: the message should say %s: %s", what,
		  words, err->message);
}

/* ---- policy -> config (pure) ---- */

Test(damon_config, profile_2021)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *st, *po;

	cr_expect_eq(cfg->sample_us, 5000);
	cr_expect_eq(cfg->aggr_us, 100000);
	cr_expect_eq(cfg->update_us, 1000000);
	cr_expect_eq(cfg->min_nr_regions, 10);
	cr_expect_eq(cfg->max_nr_regions, 1000);
	cr_assert_eq(cfg->regions->len, NR_GUEST_RANGES, "every RAM range is a target region");
	cr_expect_eq(g_array_index(cfg->regions, struct vr_range, 2).start, 4 * GIB);
	cr_expect_eq(g_array_index(cfg->regions, struct vr_range, 2).end, 10 * GIB);
	cr_assert_eq(cfg->schemes->len, 2, "the stat scheme and the policy's one");

	st = vr_damon_config_scheme(cfg, VR_DAMON_STAT_SCHEME);
	cr_expect_str_eq(st->action, "stat");
	cr_expect_eq(st->policy_index, -1);
	cr_expect_eq(st->sz_min_bytes, 0);
	cr_expect_eq(st->sz_max_bytes, G_MAXUINT64);
	cr_expect_eq(st->nr_accesses_min, 0);
	cr_expect_eq(st->nr_accesses_max, G_MAXUINT32);
	cr_expect_eq(st->age_min_aggrs, 0);
	cr_expect_eq(st->age_max_aggrs, G_MAXUINT32);
	cr_expect_eq(st->quota_ms, 0);
	cr_expect_eq(st->quota_bytes, 0);
	cr_expect_eq(st->nr_goals, 0);
	cr_expect_str_eq(st->wmarks_metric, "free_mem_rate",
			 "the stat scheme rests with the first");
	cr_expect_eq(st->wmarks_interval_us, 5000000);
	cr_expect_eq(st->wmarks_high, 500);
	cr_expect_eq(st->wmarks_mid, 400);
	cr_expect_eq(st->wmarks_low, 200);

	po = vr_damon_config_scheme(cfg, 1);
	cr_expect_str_eq(po->action, "pageout");
	cr_expect_eq(po->policy_index, 0);
	cr_expect_eq(po->sz_min_bytes, 4096);
	cr_expect_eq(po->sz_max_bytes, G_MAXUINT64);
	cr_expect_eq(po->nr_accesses_min, 0);
	cr_expect_eq(po->nr_accesses_max, 0);
	cr_expect_eq(po->age_min_aggrs, 50, "5 s / 100 ms = 50 aggregation intervals, got %" PRIu64,
		     po->age_min_aggrs);
	cr_expect_eq(po->age_max_aggrs, G_MAXUINT32, "unbounded age is capped to 2^32-1");
	cr_expect_eq(po->quota_ms, 100);
	cr_expect_eq(po->quota_bytes, GIB);
	cr_expect_eq(po->quota_reset_interval_ms, 1000);
	cr_expect_eq(po->weight_sz_permil, 0);
	cr_expect_eq(po->weight_nr_accesses_permil, 0);
	cr_expect_eq(po->weight_age_permil, 1);
	cr_expect_str_eq(po->wmarks_metric, "free_mem_rate");
	cr_expect_eq(po->wmarks_interval_us, 5000000);
	cr_expect_eq(po->wmarks_high, 500);
	cr_expect_eq(po->wmarks_mid, 400);
	cr_expect_eq(po->wmarks_low, 200);
}

Test(damon_config, profile_6_12)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-6.12");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *po = vr_damon_config_scheme(cfg, 1);

	cr_expect_eq(po->age_min_aggrs, 1200, "120 s / 100 ms, got %" PRIu64, po->age_min_aggrs);
	cr_expect_eq(po->quota_ms, 10);
	cr_expect_eq(po->quota_bytes, 128 * MIB);
	cr_expect_eq(po->quota_reset_interval_ms, 1000);
}

Test(damon_config, profile_page_level)
{
	g_autoptr(vr_policy) p = profile("page-level");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *po = vr_damon_config_scheme(cfg, 1);

	cr_expect_eq(po->nr_accesses_max, 4, "warm regions too, got %" PRIu64, po->nr_accesses_max);
	cr_expect_eq(po->age_min_aggrs, 0, "any age, got %" PRIu64, po->age_min_aggrs);
	cr_expect_eq(po->weight_nr_accesses_permil, 1);
	cr_expect_eq(po->weight_age_permil, 1);
	cr_assert_eq(po->nr_filters, 1, "one filter, got %u", po->nr_filters);
	cr_expect_str_eq(po->filters[0].type, "young");
	cr_expect(po->filters[0].matching, "young pages are taken out of the pageout");
	cr_expect_eq(vr_damon_config_scheme(cfg, 0)->nr_filters, 0, "the stat scheme sees all");
}

Test(damon_config, filters_need_a_kernel_with_filters)
{
	g_autoptr(vr_policy) p = profile("page-level");
	const struct vr_damon_caps caps = { .has_goals = false, .has_filters = false };

	config_fails(p, &caps, "filters", "filters on a 6.2 kernel");
}

Test(damon_config, ages_follow_the_aggregation_interval)
{
	g_autoptr(vr_policy) p = parse(
		"{\"monitoring\": {\"sample_interval_us\": 10000, \"aggr_interval_us\": 200000},"
		" \"schemes\": [{\"name\": \"c\", \"action\": \"cold\", \"pattern\": {"
		"  \"min_nr_accesses\": 1, \"max_nr_accesses\": 3,"
		"  \"min_age_us\": 1000000, \"max_age_us\": 10100000,"
		"  \"min_size\": 8192, \"max_size\": 1048576}}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *s = vr_damon_config_scheme(cfg, 1);

	cr_expect_eq(cfg->sample_us, 10000);
	cr_expect_eq(cfg->aggr_us, 200000);
	cr_expect_str_eq(s->action, "cold");
	cr_expect_eq(s->age_min_aggrs, 5);
	cr_expect_eq(s->age_max_aggrs, 50, "10.1 s / 200 ms truncates to 50");
	cr_expect_eq(s->nr_accesses_min, 1);
	cr_expect_eq(s->nr_accesses_max, 3);
	cr_expect_eq(s->sz_min_bytes, 8192);
	cr_expect_eq(s->sz_max_bytes, MIB);
}

Test(damon_config, struct_literal_policy)
{
	struct vr_scheme *hot = vr_scheme_new("hot", VR_ACTION_HUGEPAGE);
	struct vr_policy p = {
		.profile = NULL,
		.attrs = { .sample_interval_us = 1000,
			   .aggr_interval_us = 20000,
			   .ops_update_interval_us = 0,
			   .min_nr_regions = 3,
			   .max_nr_regions = 50 },
		.schemes = g_ptr_array_new_with_free_func((GDestroyNotify)vr_scheme_free),
	};
	const struct vr_range ram[] = { { 0x100000, 0x40000000 } };
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(GError) err = NULL;
	g_autoptr(vr_damon_config) cfg = NULL;
	const struct vr_damon_scheme *s;

	hot->pattern = (struct vr_access_pattern){
		.min_sz_bytes = 2 * MIB,
		.max_sz_bytes = GIB,
		.min_nr_accesses = 5,
		.max_nr_accesses = 20,
		.min_age_us = 0,
		.max_age_us = 1000000,
	};
	hot->quota = (struct vr_quota){ .sz = 64 * MIB,
					.reset_interval_ms = 500,
					.weight_nr_accesses = 1 };
	g_ptr_array_add(p.schemes, hot);
	cfg = vr_damon_config_from_policy(&p, ram, 1, &caps, &err);
	cr_assert_not_null(cfg, "%s", err ? err->message : "");
	cr_expect_eq(cfg->sample_us, 1000);
	cr_expect_eq(cfg->aggr_us, 20000);
	cr_expect_eq(cfg->update_us, 0);
	cr_expect_eq(cfg->min_nr_regions, 3);
	cr_expect_eq(cfg->max_nr_regions, 50);
	s = vr_damon_config_scheme(cfg, 1);
	cr_expect_str_eq(s->action, "hugepage");
	cr_expect_eq(s->sz_min_bytes, 2 * MIB);
	cr_expect_eq(s->sz_max_bytes, GIB);
	cr_expect_eq(s->nr_accesses_min, 5);
	cr_expect_eq(s->nr_accesses_max, 20);
	cr_expect_eq(s->age_min_aggrs, 0);
	cr_expect_eq(s->age_max_aggrs, 50, "1 s / 20 ms");
	cr_expect_eq(s->quota_ms, 0);
	cr_expect_eq(s->quota_bytes, 64 * MIB);
	cr_expect_eq(s->quota_reset_interval_ms, 500);
	cr_expect_eq(s->weight_nr_accesses_permil, 1);
	cr_expect_str_eq(s->wmarks_metric, "none");
	g_ptr_array_unref(p.schemes);
}

Test(damon_config, watermarks_none)
{
	g_autoptr(vr_policy) p = parse("{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": "
				       "\"pageout\", \"watermarks\": {\"metric\": \"none\"}}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);

	cr_expect_str_eq(vr_damon_config_scheme(cfg, 0)->wmarks_metric, "none");
	cr_expect_str_eq(vr_damon_config_scheme(cfg, 1)->wmarks_metric, "none");
}

Test(damon_config, no_scheme_is_monitoring_only)
{
	g_autoptr(vr_policy) p = parse("{\"schemes\": []}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);

	cr_assert_eq(cfg->schemes->len, 1, "only the stat scheme");
	cr_expect_str_eq(vr_damon_config_scheme(cfg, 0)->wmarks_metric, "none",
			 "always active without a scheme to follow");
}

Test(damon_config, stat_scheme_follows_the_first_scheme)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"a\", \"action\": \"cold\", \"watermarks\": {"
		"\"metric\": \"free_mem_rate\", \"interval_us\": 7, \"high\": 900, \"mid\": 800,"
		" \"low\": 100}}, {\"name\": \"b\", \"action\": \"pageout\"}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *st = vr_damon_config_scheme(cfg, 0);

	cr_assert_eq(cfg->schemes->len, 3);
	cr_expect_eq(st->wmarks_interval_us, 7);
	cr_expect_eq(st->wmarks_high, 900);
	cr_expect_eq(st->wmarks_mid, 800);
	cr_expect_eq(st->wmarks_low, 100);
	cr_expect_eq(vr_damon_config_scheme(cfg, 2)->policy_index, 1);
	cr_expect_str_eq(vr_damon_config_scheme(cfg, 2)->wmarks_metric, "none");
}

Test(damon_config, goals_on_6_12)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"goals\": [{\"metric\": \"user_input\", \"target\": 10000},"
		" {\"metric\": \"some_mem_psi_us\", \"target\": 1000}]}}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	const struct vr_damon_scheme *s;

	policy_scheme(p, 0)->quota.goals[0].current = 5000;
	cfg = config_ok(p, &caps);
	s = vr_damon_config_scheme(cfg, 1);
	cr_assert_eq(s->nr_goals, 2);
	cr_expect_str_eq(s->goals[0].target_metric, "user_input");
	cr_expect_eq(s->goals[0].target_value, 10000);
	cr_expect_eq(s->goals[0].current_value, 5000);
	cr_expect_str_eq(s->goals[1].target_metric, "some_mem_psi_us");
	cr_expect_eq(s->goals[1].target_value, 1000);
	cr_expect_eq(vr_damon_config_scheme(cfg, 0)->nr_goals, 0);
}

Test(damon_config, goals_need_a_kernel_with_goals)
{
	g_autoptr(vr_policy)
		p = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			  "{\"goals\": [{\"metric\": \"user_input\", \"target\": 10000}]}}]}");
	const struct vr_damon_caps caps = { .has_goals = false, .has_filters = true };

	config_fails(p, &caps, "goals", "goals on a 6.7 kernel");
}

Test(damon_config, psi_goal_needs_goal_metrics)
{
	g_autoptr(vr_policy)
		psi = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			    "{\"goals\": [{\"metric\": \"some_mem_psi_us\", \"target\": 100}]}}]}");
	g_autoptr(vr_policy)
		user = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			     "{\"goals\": [{\"metric\": \"user_input\", \"target\": 100}]}}]}");
	const struct vr_damon_caps caps_6_8 = { .has_goals = true, .has_goal_metric = false };
	g_autoptr(vr_damon_config) cfg = NULL;

	config_fails(psi, &caps_6_8, "some_mem_psi_us", "a PSI goal on 6.8");
	cfg = config_ok(user, &caps_6_8);
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->nr_goals, 1, "user_input works on 6.8");
}

Test(damon_config, free_mem_rate_goal_is_refused_by_name)
{
	g_autoptr(vr_policy)
		p = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			  "{\"goals\": [{\"metric\": \"free_mem_rate\", \"target\": 300}]}}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;

	config_fails(p, &caps, "free_mem_rate", "a free_mem_rate goal");
}

/* A refault_bytes goal has no kernel metric: it goes as user_input (on 6.8
 * too), and its value is the agent's to feed, never the policy's. */
Test(damon_config, refault_goal_goes_as_user_input)
{
	g_autoptr(vr_policy)
		p = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			  "{\"goals\": [{\"metric\": \"refault_bytes\", \"target\": 1048576},"
			  " {\"metric\": \"user_input\", \"target\": 100}]}}]}");
	const struct vr_damon_caps caps_6_8 = { .has_goals = true, .has_goal_metric = false };
	g_autoptr(vr_damon_config) cfg = NULL;
	const struct vr_damon_scheme *s;

	policy_scheme(p, 0)->quota.goals[0].current = 77;
	policy_scheme(p, 0)->quota.goals[1].current = 55;
	cfg = config_ok(p, &caps_6_8);
	s = vr_damon_config_scheme(cfg, 1);
	cr_assert_eq(s->nr_goals, 2);
	cr_expect_str_eq(s->goals[0].target_metric, "user_input");
	cr_expect_eq(s->goals[0].target_value, 1048576);
	cr_expect_eq(s->goals[0].current_value, 0, "fed by the agent, not taken from the policy");
	cr_expect(s->goals[0].refault_bytes);
	cr_expect_not(s->goals[1].refault_bytes, "a plain user_input goal is not fed");
	cr_expect_eq(s->goals[1].current_value, 55);
}

Test(damon_config, refault_goal_is_fed_per_window)
{
	g_autoptr(vr_policy)
		p = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			  "{\"reset_interval_ms\": 2000, \"goals\": ["
			  " {\"metric\": \"user_input\", \"target\": 100},"
			  " {\"metric\": \"refault_bytes\", \"target\": 1048576}]}}]}");
	g_autoptr(vr_policy) plain = profile("page-level");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL, none = NULL;
	const struct vr_damon_scheme *s;

	policy_scheme(p, 0)->quota.goals[0].current = 55;
	cfg = config_ok(p, &caps);
	s = vr_damon_config_scheme(cfg, 1);
	cr_assert(vr_damon_config_feed_refaults(cfg, 10 * MIB, 5 * G_USEC_PER_SEC));
	cr_expect_eq(s->goals[1].current_value, 4 * MIB,
		     "10 MiB in 5 s is 4 MiB per 2 s window, got %" PRIu64,
		     s->goals[1].current_value);
	cr_expect_eq(s->goals[0].current_value, 55, "the user_input goal is left alone");
	cr_assert(vr_damon_config_feed_refaults(cfg, 3 * MIB, 0));
	cr_expect_eq(s->goals[1].current_value, 4 * MIB, "no time elapsed: nothing to feed");
	cr_assert(vr_damon_config_feed_refaults(cfg, G_MAXUINT64, 1));
	cr_expect_eq(s->goals[1].current_value, G_MAXUINT64, "saturates");
	none = config_ok(plain, &caps);
	cr_expect_not(vr_damon_config_feed_refaults(none, 10 * MIB, G_USEC_PER_SEC),
		      "no refault goal: nothing to commit");
	cr_expect(vr_damon_config_has_refault_goals(cfg));
	cr_expect_not(vr_damon_config_has_refault_goals(none));
}

Test(damon_config, weights_are_scaled_only_when_too_large)
{
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": ["
		"{\"name\": \"a\", \"action\": \"pageout\", \"quota\": {\"weights\": {\"sz\": 1,"
		" \"nr_accesses\": 2, \"age\": 3}}},"
		"{\"name\": \"b\", \"action\": \"pageout\", \"quota\": {\"weights\": {\"sz\": 0,"
		" \"nr_accesses\": 5000, \"age\": 20000}}},"
		"{\"name\": \"c\", \"action\": \"pageout\", \"quota\": {\"weights\": {\"sz\": 1,"
		" \"nr_accesses\": 0, \"age\": 1000000}}}]}");
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	const struct vr_damon_scheme *a = vr_damon_config_scheme(cfg, 1);
	const struct vr_damon_scheme *b = vr_damon_config_scheme(cfg, 2);
	const struct vr_damon_scheme *c = vr_damon_config_scheme(cfg, 3);

	cr_expect(a->weight_sz_permil == 1 && a->weight_nr_accesses_permil == 2 &&
			  a->weight_age_permil == 3,
		  "small weights are kept as they are");
	cr_expect(b->weight_sz_permil == 0 && b->weight_nr_accesses_permil == 250 &&
			  b->weight_age_permil == 1000,
		  "scaled to the largest = 1000: got %u/%u/%u", b->weight_sz_permil,
		  b->weight_nr_accesses_permil, b->weight_age_permil);
	cr_expect(c->weight_sz_permil == 1 && c->weight_nr_accesses_permil == 0 &&
			  c->weight_age_permil == 1000,
		  "a non-zero weight stays non-zero: got %u/%u/%u", c->weight_sz_permil,
		  c->weight_nr_accesses_permil, c->weight_age_permil);
}

Test(damon_config, ranges_are_checked)
{
	g_autoptr(vr_policy) p = profile(NULL);
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	const struct vr_range overlap[] = { { 0x1000, 0x3000 }, { 0x2000, 0x4000 } };
	const struct vr_range unsorted[] = { { 0x10000, 0x20000 }, { 0x1000, 0x2000 } };
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL;
	g_autoptr(vr_damon_config) none = vr_damon_config_from_policy(p, NULL, 0, &caps, &e1);
	g_autoptr(vr_damon_config) over = vr_damon_config_from_policy(p, overlap, 2, &caps, &e2);
	g_autoptr(vr_damon_config) sorted = vr_damon_config_from_policy(p, unsorted, 2, &caps, &e3);
	g_autoptr(GArray) many = g_array_new(FALSE, FALSE, sizeof(struct vr_range));
	g_autoptr(vr_damon_config) too_many = NULL;

	cr_assert_null(none);
	expect_error(e1, VR_AGENT_ERROR_INVALID, "no RAM range", "no range");
	cr_assert_null(over);
	expect_error(e2, VR_AGENT_ERROR_INVALID, "overlap", "overlapping ranges");
	cr_assert_not_null(sorted, "%s", e3 ? e3->message : "");
	cr_expect_eq(g_array_index(sorted->regions, struct vr_range, 0).start, 0x1000,
		     "target regions are written sorted");
	for (guint i = 0; i < 1001; i++) {
		struct vr_range r = { (uint64_t)i * 0x2000, (uint64_t)i * 0x2000 + 0x1000 };

		g_array_append_val(many, r);
	}
	too_many = vr_damon_config_from_policy(p, (struct vr_range *)many->data, many->len, &caps,
					       &e4);
	cr_assert_null(too_many);
	expect_error(e4, VR_AGENT_ERROR_INVALID, "1000|1001|too many|at most", "1001 ranges");
}

/* The host's configuration: vaddr of one process, the stat scheme alone. */
Test(damon_config, monitor_only_vaddr)
{
	const struct vr_monitor_attrs attrs = VR_MONITOR_ATTRS_DEFAULT;
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;
	g_autoptr(vr_damon_config)
		cfg = vr_damon_config_new_monitor(&attrs, VR_DAMON_OPS_VADDR, 4321, NULL, 0, &e1);
	g_autoptr(vr_damon_config)
		no_pid = vr_damon_config_new_monitor(&attrs, VR_DAMON_OPS_VADDR, 0, NULL, 0, &e2);
	g_autoptr(vr_damon_config) no_range =
		vr_damon_config_new_monitor(&attrs, VR_DAMON_OPS_PADDR, 4321, NULL, 0, &e3);
	const struct vr_damon_scheme *st;

	cr_assert_not_null(cfg, "%s", e1 ? e1->message : "");
	cr_expect_eq(cfg->ops, VR_DAMON_OPS_VADDR);
	cr_expect_str_eq(vr_damon_ops_name(cfg->ops), "vaddr");
	cr_expect_eq(cfg->pid_target, 4321);
	cr_expect_eq(cfg->regions->len, 0, "the kernel picks a process's ranges");
	cr_assert_eq(cfg->schemes->len, 1, "the stat scheme alone");
	st = vr_damon_config_scheme(cfg, VR_DAMON_STAT_SCHEME);
	cr_expect_str_eq(st->action, "stat");
	cr_expect_eq(st->nr_accesses_max, G_MAXUINT32);
	cr_expect_str_eq(st->wmarks_metric, "none", "nothing to rest for");
	cr_assert_null(no_pid);
	expect_error(e2, VR_AGENT_ERROR_INVALID, "pid", "vaddr without a pid");
	cr_assert_null(no_range);
	expect_error(e3, VR_AGENT_ERROR_INVALID, "no RAM range", "paddr without a range");
}

Test(damon_config, invalid_policy_is_refused)
{
	g_autoptr(vr_policy) p = profile(NULL);
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;

	p->attrs.aggr_interval_us = 7000; /* not a multiple of 5 ms */
	config_fails(p, &caps, "monitoring", "an invalid monitoring attribute");
}

Test(damon_config, resident_quota_follows_free_memory)
{
	const uint64_t share = 64 * MIB;
	const uint64_t cap = share * VR_DAMON_RESIDENT_QUOTA_MAX_SCALE;

	cr_expect_eq(vr_damon_resident_quota_bytes(share, 0), share,
		     "nothing free: the kernel's charge is the resident one");
	cr_expect_eq(vr_damon_resident_quota_bytes(share, 300 * MIB), 364 * MIB,
		     "the free memory goes first, the share after it");
	cr_expect_eq(vr_damon_resident_quota_bytes(share, cap - share), cap);
	cr_expect_eq(vr_damon_resident_quota_bytes(share, 4 * GIB), cap,
		     "much free memory: at most the cap");
	cr_expect_eq(vr_damon_resident_quota_bytes(0, GIB), 0, "no size quota stays none");
	cr_expect_eq(vr_damon_resident_quota_bytes(10000, 5000), 12288,
		     "whole pages (15000 -> 12288)");
	cr_expect_eq(vr_damon_resident_quota_bytes(10000, 1000), 10000,
		     "whole pages, never below the share");
	cr_expect_eq(vr_damon_resident_quota_bytes(G_MAXUINT64 / 2, G_MAXUINT64), G_MAXUINT64,
		     "saturates");
}

Test(damon_config, only_resident_quotas_are_raised)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	g_autoptr(vr_damon_config) cfg = NULL;
	struct vr_scheme *sized = vr_scheme_copy(policy_scheme(p, 0));
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;

	g_free(sized->name);
	sized->name = g_strdup("sized");
	sized->quota.charge = VR_CHARGE_SIZE;
	g_ptr_array_add(p->schemes, sized);
	cfg = config_ok(p, &caps);
	cr_assert_eq(cfg->schemes->len, 3);
	cr_expect_eq(vr_damon_config_scheme(cfg, 0)->resident_quota_bytes, 0, "the stat scheme");
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->resident_quota_bytes, GIB);
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->quota_bytes, GIB, "as given until raised");
	cr_expect_eq(vr_damon_config_scheme(cfg, 2)->resident_quota_bytes, 0,
		     "a size-charged quota is the kernel's own");

	cr_expect(vr_damon_config_charge_resident(cfg, 3 * GIB, FALSE), "1 -> 4 GiB is a move");
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->quota_bytes, 4 * GIB);
	cr_expect_eq(vr_damon_config_scheme(cfg, 2)->quota_bytes, GIB);
	cr_expect_eq(vr_damon_config_scheme(cfg, 0)->quota_bytes, 0);
	cr_expect_not(vr_damon_config_charge_resident(cfg, 3 * GIB, FALSE),
		      "the same free memory moves nothing");
	cr_expect_not(vr_damon_config_charge_resident(cfg, 3 * GIB + 512 * MIB, FALSE),
		      "4 -> 4.5 GiB is within a quarter");
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->quota_bytes, 4 * GIB + 512 * MIB, "still set");
	cr_expect(vr_damon_config_charge_resident(cfg, 3 * GIB, TRUE),
		  "held: back to the resident quota");
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->quota_bytes, GIB);
	cr_expect_eq(vr_damon_config_scheme(cfg, 2)->quota_bytes, GIB);
}

Test(damon_config, budget_of_the_resident_quotas)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	g_autoptr(vr_damon_config) cfg = NULL;
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	const uint64_t s5 = 5 * G_USEC_PER_SEC;

	policy_scheme(p, 0)->quota.sz = 64 * MIB; /* per 1000 ms */
	cfg = config_ok(p, &caps);
	cr_expect_not(vr_damon_config_over_budget(cfg, 320 * MIB, s5), "5 windows of 64 MiB");
	cr_expect(vr_damon_config_over_budget(cfg, 320 * MIB + 1, s5));
	cr_expect(vr_damon_config_over_budget(cfg, 1, 0), "no time, no budget");
	policy_scheme(p, 0)->quota.reset_interval_ms = 2000;
	g_clear_pointer(&cfg, vr_damon_config_free);
	cfg = config_ok(p, &caps);
	cr_expect_not(vr_damon_config_over_budget(cfg, 160 * MIB, s5), "2.5 windows");
	cr_expect(vr_damon_config_over_budget(cfg, 161 * MIB, s5));
	policy_scheme(p, 0)->quota.charge = VR_CHARGE_SIZE;
	g_clear_pointer(&cfg, vr_damon_config_free);
	cfg = config_ok(p, &caps);
	cr_expect_not(vr_damon_config_over_budget(cfg, G_MAXUINT64, s5),
		      "no resident quota: never over");
}

Test(damon_config, copy_is_deep)
{
	g_autoptr(vr_policy) p = profile(NULL);
	const struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = config_ok(p, &caps);
	g_autoptr(vr_damon_config) c = vr_damon_config_copy(cfg);

	vr_damon_config_scheme(c, 1)->quota_bytes = 1;
	g_array_index(c->regions, struct vr_range, 0).start = 0;
	cr_expect_eq(vr_damon_config_scheme(cfg, 1)->quota_bytes, GIB);
	cr_expect_eq(g_array_index(cfg->regions, struct vr_range, 0).start, 0x1000);
}

/* ---- writing ---- */

/**
 * struct expect_params - what differs between the expected write sets.
 * @age_min, @quota_ms, @quota_bytes: the pageout scheme's.
 * @fresh:	a start (nr_kdamonds and nr_contexts are written).
 * @state:	the command written to kdamonds/0/state.
 * @wmarks_none: the schemes' watermarks/metric is "none" (the profile's
 *		thresholds are still written); else "free_mem_rate".
 */
struct expect_params {
	const char *age_min;
	const char *quota_ms;
	const char *quota_bytes;
	bool fresh;
	const char *state;
	bool wmarks_none;
};

static void put_expected(GHashTable *t, const char *rel, const char *value)
{
	g_hash_table_insert(t, g_strdup(rel), g_strdup(value));
}

static void expect_scheme(GHashTable *t, guint i, const char *action, const char *sz_min,
			  const char *nr_max, const char *age_min, const char *ms,
			  const char *bytes, const char *reset, const char *w_age)
{
	static const struct {
		const char *rel;
		const char *value;
	} wm[] = {
		{ "watermarks/metric", "free_mem_rate" },
		{ "watermarks/interval_us", "5000000" },
		{ "watermarks/high", "500" },
		{ "watermarks/mid", "400" },
		{ "watermarks/low", "200" },
		{ "quotas/goals/nr_goals", "0" },
		{ "filters/nr_filters", "0" },
		{ "access_pattern/sz/max", U64MAX },
		{ "access_pattern/nr_accesses/min", "0" },
		{ "access_pattern/age/max", U32MAX },
		{ "quotas/weights/sz_permil", "0" },
		{ "quotas/weights/nr_accesses_permil", "0" },
	};
	const struct {
		const char *rel;
		const char *value;
	} own[] = {
		{ "action", action },
		{ "access_pattern/sz/min", sz_min },
		{ "access_pattern/nr_accesses/max", nr_max },
		{ "access_pattern/age/min", age_min },
		{ "quotas/ms", ms },
		{ "quotas/bytes", bytes },
		{ "quotas/reset_interval_ms", reset },
		{ "quotas/weights/age_permil", w_age },
	};

	for (guint k = 0; k < G_N_ELEMENTS(wm); k++) {
		g_autofree char *rel = g_strdup_printf(SCHEMES "/%u/%s", i, wm[k].rel);

		put_expected(t, rel, wm[k].value);
	}
	for (guint k = 0; k < G_N_ELEMENTS(own); k++) {
		g_autofree char *rel = g_strdup_printf(SCHEMES "/%u/%s", i, own[k].rel);

		put_expected(t, rel, own[k].value);
	}
}

/* Every file a start or commit of a DAMON_RECLAIM profile writes, exactly. */
static GHashTable *expected_writes(const struct expect_params *p)
{
	GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

	if (p->fresh) {
		put_expected(t, KDS "/nr_kdamonds", "1");
		put_expected(t, KD0 "/contexts/nr_contexts", "1");
	}
	put_expected(t, CTX0 "/operations", "paddr");
	put_expected(t, CTX0 "/monitoring_attrs/intervals/sample_us", "5000");
	put_expected(t, CTX0 "/monitoring_attrs/intervals/aggr_us", "100000");
	put_expected(t, CTX0 "/monitoring_attrs/intervals/update_us", "1000000");
	put_expected(t, CTX0 "/monitoring_attrs/nr_regions/min", "10");
	put_expected(t, CTX0 "/monitoring_attrs/nr_regions/max", "1000");
	put_expected(t, CTX0 "/targets/nr_targets", "1");
	put_expected(t, CTX0 "/targets/0/regions/nr_regions", "3");
	put_expected(t, CTX0 "/targets/0/regions/0/start", "4096");
	put_expected(t, CTX0 "/targets/0/regions/0/end", "651264");
	put_expected(t, CTX0 "/targets/0/regions/1/start", "1048576");
	put_expected(t, CTX0 "/targets/0/regions/1/end", "2147352576");
	put_expected(t, CTX0 "/targets/0/regions/2/start", "4294967296");
	put_expected(t, CTX0 "/targets/0/regions/2/end", "10737418240");
	put_expected(t, SCHEMES "/nr_schemes", "2");
	/* the stat scheme: everything matches, no quota */
	expect_scheme(t, 0, "stat", "0", U32MAX, "0", "0", "0", "0", "0");
	expect_scheme(t, 1, "pageout", "4096", "0", p->age_min, p->quota_ms, p->quota_bytes, "1000",
		      "1");
	if (p->wmarks_none) {
		/* the stat scheme follows the pageout one */
		put_expected(t, SCHEMES "/0/watermarks/metric", "none");
		put_expected(t, SCHEMES "/1/watermarks/metric", "none");
	}
	put_expected(t, KD0 "/state", p->state);
	return t;
}

static const struct expect_params start_2021 = {
	.age_min = "50",
	.quota_ms = "100",
	.quota_bytes = "1073741824",
	.fresh = true,
	.state = "on",
};

static struct vr_damon_config *tree_config(const char *profile_name,
					   const struct vr_damon_caps *caps)
{
	g_autoptr(vr_policy) p = profile(profile_name);

	return config_ok(p, caps);
}

static void start_ok(const struct vr_damon_config *cfg, const struct vr_damon_caps *caps)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_damon_sysfs_start(&paths, cfg, caps, &err), "start should succeed: %s",
		  err ? err->message : "");
}

Test(damon_sysfs, start_writes_exactly_the_configuration)
{
	struct vr_damon_caps caps;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL, want = NULL;

	make_tree(&skel_6_12);
	vr_damon_sysfs_detect_caps(&paths, &caps);
	cr_assert(caps.has_goals && caps.has_goal_metric && caps.has_filters);
	cfg = tree_config("damon-reclaim-2021", &caps);
	before = tree_snapshot(root);
	start_ok(cfg, &caps);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	want = expected_writes(&start_2021);
	expect_changes_equal(changes, want);
}

/* ---- write order, seen through inotify ---- */

struct watcher {
	int fd;
	GHashTable *dirs; /* wd -> relative folder */
};

static void watch_dirs(struct watcher *w, const char *rel)
{
	g_autofree char *path = g_build_filename(root, rel, NULL);
	GDir *d = g_dir_open(path, 0, NULL);
	const char *name;
	int wd;

	cr_assert_not_null(d);
	wd = inotify_add_watch(w->fd, path, IN_CLOSE_WRITE);
	cr_assert_geq(wd, 0, "cannot watch %s", path);
	g_hash_table_insert(w->dirs, GINT_TO_POINTER(wd), g_strdup(rel));
	while ((name = g_dir_read_name(d))) {
		g_autofree char *crel = g_build_filename(rel, name, NULL);
		g_autofree char *cpath = g_build_filename(root, crel, NULL);

		if (g_file_test(cpath, G_FILE_TEST_IS_DIR) &&
		    !g_file_test(cpath, G_FILE_TEST_IS_SYMLINK))
			watch_dirs(w, crel);
	}
	g_dir_close(d);
}

/* The files closed after writing since the watch began, in order (owned). */
static GPtrArray *written_in_order(struct watcher *w)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			const char *dir = g_hash_table_lookup(w->dirs, GINT_TO_POINTER(ev->wd));

			if (dir && ev->len)
				g_ptr_array_add(out, g_build_filename(dir, ev->name, NULL));
			p += sizeof(*ev) + ev->len;
		}
	}
	return out;
}

static int position(GPtrArray *order, const char *rel)
{
	for (guint i = 0; i < order->len; i++)
		if (strcmp(g_ptr_array_index(order, i), rel) == 0)
			return (int)i;
	return -1;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!g_ascii_isdigit(*s))
			return false;
	return true;
}

Test(damon_sysfs, start_writes_in_a_valid_order)
{
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GHashTable) dirs = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	g_autoptr(GPtrArray) order = NULL;
	struct watcher w = { .dirs = dirs };

	make_tree(&skel_6_12);
	cfg = tree_config("damon-reclaim-2021", &caps);
	w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(w.fd, 0);
	watch_dirs(&w, SYS);
	start_ok(cfg, &caps);
	order = written_in_order(&w);
	close(w.fd);

	cr_assert_gt(order->len, 50, "expected the whole configuration, saw %u writes", order->len);
	cr_expect_str_eq(g_ptr_array_index(order, order->len - 1), KD0 "/state",
			 "state 'on' is the last write");
	/* Every file below a numbered folder comes after the nr_* file that
	 * creates that folder: <dir>/nr_<dir> before <dir>/<N>/... */
	for (guint i = 0; i < order->len; i++) {
		const char *rel = g_ptr_array_index(order, i);
		g_auto(GStrv) parts = g_strsplit(rel, "/", -1);
		g_autoptr(GString) dir = g_string_new(NULL);

		for (guint j = 0; parts[j] && parts[j + 1]; j++) {
			if (j > 0 && all_digits(parts[j])) {
				g_autofree char *nr =
					g_strdup_printf("%s/nr_%s", dir->str, parts[j - 1]);
				int pos = position(order, nr);

				cr_expect(pos >= 0 && pos < (int)i, "%s was written before %s", rel,
					  nr);
			}
			g_string_append_printf(dir, "%s%s", j ? "/" : "", parts[j]);
		}
	}
	/* A new folder has every maximum at 0: a non-zero minimum is written
	 * after its maximum. */
	cr_expect_lt(position(order, SCHEMES "/1/access_pattern/age/max"),
		     position(order, SCHEMES "/1/access_pattern/age/min"));
	cr_expect_lt(position(order, SCHEMES "/1/access_pattern/sz/max"),
		     position(order, SCHEMES "/1/access_pattern/sz/min"));
	cr_expect_lt(position(order, CTX0 "/monitoring_attrs/nr_regions/max"),
		     position(order, CTX0 "/monitoring_attrs/nr_regions/min"));
	cr_expect_lt(position(order, CTX0 "/targets/0/regions/0/end"),
		     position(order, CTX0 "/targets/0/regions/0/start"));
}

Test(damon_sysfs, pair_order_follows_the_current_maximum)
{
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GHashTable) dirs = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	g_autoptr(GPtrArray) order = NULL;
	struct watcher w = { .dirs = dirs };

	make_tree(&skel_6_12);
	/* The kernel's defaults 10..1000 stay in place (the folder is not
	 * recreated); the new 10..500: min 10 <= the current max, so min first. */
	tree_put(root, CTX0 "/monitoring_attrs/nr_regions/min", "10\n");
	tree_put(root, CTX0 "/monitoring_attrs/nr_regions/max", "1000\n");
	cfg = tree_config("damon-reclaim-2021", &caps);
	cfg->max_nr_regions = 500;
	w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(w.fd, 0);
	watch_dirs(&w, SYS);
	start_ok(cfg, &caps);
	order = written_in_order(&w);
	close(w.fd);
	cr_expect_lt(position(order, CTX0 "/monitoring_attrs/nr_regions/min"),
		     position(order, CTX0 "/monitoring_attrs/nr_regions/max"),
		     "min first when it does not exceed the current max");
}

Test(damon_sysfs, commit_rewrites_the_context_and_commits)
{
	const struct expect_params commit_6_12 = {
		.age_min = "1200",
		.quota_ms = "10",
		.quota_bytes = "134217728",
		.fresh = false,
		.state = "commit",
	};
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) first = NULL, second = NULL;
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL, want = NULL;
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	first = tree_config("damon-reclaim-2021", &caps);
	second = tree_config("damon-reclaim-6.12", &caps);
	start_ok(first, &caps);
	/* empty the configuration files, so that each one written shows */
	tree_truncate_all(root, TREE_NAMES(KDS "/nr_kdamonds", KD0 "/contexts/nr_contexts",
					   KD0 "/pid", CTX0 "/avail_operations"));
	before = tree_snapshot(root);
	cr_assert(vr_damon_sysfs_commit(&paths, second, &caps, &err), "%s",
		  err ? err->message : "");
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	want = expected_writes(&commit_6_12);
	expect_changes_equal(changes, want);
}

Test(damon_sysfs, goals_are_written)
{
	const struct skel k = { .nr_regions = 3,
				.nr_schemes = 2,
				.nr_goals = 2,
				.goals = true,
				.goal_metric = true,
				.filters = true };
	g_autoptr(vr_policy) p = parse(
		"{\"schemes\": [{\"name\": \"damon-reclaim\", \"action\": \"pageout\", \"quota\": "
		"{\"goals\": [{\"metric\": \"user_input\", \"target\": 10000},"
		" {\"metric\": \"some_mem_psi_us\", \"target\": 1000}]}}]}");
	struct vr_damon_caps caps;
	g_autoptr(vr_damon_config) cfg = NULL;

	make_tree(&k);
	vr_damon_sysfs_detect_caps(&paths, &caps);
	policy_scheme(p, 0)->quota.goals[0].current = 7500;
	cfg = config_ok(p, &caps);
	start_ok(cfg, &caps);
	tree_expect(root, SCHEMES "/0/quotas/goals/nr_goals", "0");
	tree_expect(root, SCHEMES "/1/quotas/goals/nr_goals", "2");
	tree_expect(root, SCHEMES "/1/quotas/goals/0/target_metric", "user_input");
	tree_expect(root, SCHEMES "/1/quotas/goals/0/target_value", "10000");
	tree_expect(root, SCHEMES "/1/quotas/goals/0/current_value", "7500");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/target_metric", "some_mem_psi_us");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/target_value", "1000");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "0");
	tree_expect(root, KD0 "/state", "on");
}

Test(damon_sysfs, filters_are_written)
{
	const struct skel k = { .nr_regions = 3,
				.nr_schemes = 2,
				.nr_filters = 1,
				.goals = true,
				.goal_metric = true,
				.filters = true };
	struct vr_damon_caps caps;
	g_autoptr(vr_damon_config) cfg = NULL;

	make_tree(&k);
	vr_damon_sysfs_detect_caps(&paths, &caps);
	cfg = tree_config("page-level", &caps);
	start_ok(cfg, &caps);
	tree_expect(root, SCHEMES "/0/filters/nr_filters", "0");
	tree_expect(root, SCHEMES "/1/filters/nr_filters", "1");
	tree_expect(root, SCHEMES "/1/filters/0/type", "young");
	tree_expect(root, SCHEMES "/1/filters/0/matching", "Y");
	tree_expect(root, SCHEMES "/1/access_pattern/nr_accesses/max", "4");
	tree_expect(root, KD0 "/state", "on");
}

Test(damon_sysfs, older_kernel_without_goals_or_filters)
{
	const struct skel k = { .nr_regions = 3, .nr_schemes = 2 };
	struct vr_damon_caps caps;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL, want = NULL;
	GHashTableIter it;
	gpointer key;

	make_tree(&k);
	vr_damon_sysfs_detect_caps(&paths, &caps);
	cr_assert(!caps.has_goals && !caps.has_goal_metric && !caps.has_filters,
		  "the scheme folder says what the kernel has");
	cfg = tree_config("damon-reclaim-2021", &caps);
	before = tree_snapshot(root);
	start_ok(cfg, &caps);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	want = expected_writes(&start_2021);
	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (strstr(key, "/nr_goals") || strstr(key, "/nr_filters"))
			g_hash_table_iter_remove(&it);
	expect_changes_equal(changes, want);
}

Test(damon_sysfs, missing_file_names_it_and_starts_nothing)
{
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_unlink(root, SCHEMES "/1/quotas/bytes");
	cfg = tree_config("damon-reclaim-2021", &caps);
	cr_assert_not(vr_damon_sysfs_start(&paths, cfg, &caps, &err));
	expect_error(err, VR_AGENT_ERROR_IO, "schemes/1/quotas/bytes", "a missing file");
	cr_expect(msg_has_any(err->message, "1073741824"), "the value is named: %s", err->message);
	tree_expect(root, KD0 "/state", "");
	tree_expect_last_write(root, KDS "/nr_kdamonds", "0");
}

Test(damon_sysfs, refused_value_names_file_and_value)
{
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_symlink(root, SCHEMES "/1/watermarks/high", "/dev/full");
	cfg = tree_config("damon-reclaim-2021", &caps);
	cr_assert_not(vr_damon_sysfs_start(&paths, cfg, &caps, &err));
	expect_error(err, VR_AGENT_ERROR_IO, "schemes/1/watermarks/high", "a refused write");
	cr_expect(msg_names_number(err->message, 500), "the value is named: %s", err->message);
	cr_expect(msg_has_any(err->message, "space"), "the errno text is given: %s", err->message);
	tree_expect(root, KD0 "/state", "");
	tree_expect_last_write(root, KDS "/nr_kdamonds", "0");
}

Test(damon_sysfs, refused_start_is_reported)
{
	struct vr_damon_caps caps = VR_DAMON_CAPS_6_12;
	g_autoptr(vr_damon_config) cfg = NULL;
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_symlink(root, KD0 "/state", "/dev/full");
	cfg = tree_config("damon-reclaim-2021", &caps);
	cr_assert_not(vr_damon_sysfs_start(&paths, cfg, &caps, &err));
	expect_error(err, VR_AGENT_ERROR_IO, "state", "the kernel refusing 'on'");
	cr_expect(msg_has_any(err->message, "'on'"), "%s", err->message);
	tree_expect_last_write(root, KDS "/nr_kdamonds", "0");
}

Test(damon_sysfs, stop_and_release)
{
	g_autoptr(GError) err = NULL;
	gboolean off = FALSE;

	make_tree(&skel_6_12);
	tree_put(root, KD0 "/state", "on\n");
	tree_put(root, KDS "/nr_kdamonds", "1\n");
	cr_assert(vr_damon_sysfs_is_off(&paths, &off, &err));
	cr_expect_not(off);
	tree_put(root, KD0 "/state", "");
	cr_assert(vr_damon_sysfs_stop(&paths, &err), "%s", err ? err->message : "");
	tree_expect(root, KD0 "/state", "off");
	cr_assert(vr_damon_sysfs_is_off(&paths, &off, &err));
	cr_expect(off);
	cr_assert(vr_damon_sysfs_release(&paths, &err));
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

Test(damon_sysfs, stop_leaves_an_off_kdamond_alone)
{
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_put(root, KD0 "/state", "off\n");
	cr_assert(vr_damon_sysfs_stop(&paths, &err));
	tree_expect(root, KD0 "/state", "off\n");
}

/* ---- who holds DAMON ---- */

static void expect_busy(gboolean own, const char *words, const char *what)
{
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_damon_sysfs_check_free(&paths, own, &err), "%s: expected busy", what);
	expect_error(err, VR_AGENT_ERROR_BUSY, words, what);
}

static void expect_free(gboolean own, const char *what)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_damon_sysfs_check_free(&paths, own, &err), "%s: expected free, got: %s", what,
		  err ? err->message : "");
}

Test(damon_sysfs, free_when_nothing_runs)
{
	make_tree(&skel_6_12);
	expect_free(FALSE, "no kdamond");
	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KD0 "/state", "off\n");
	expect_free(FALSE, "a stopped kdamond");
}

Test(damon_sysfs, busy_when_damon_reclaim_is_enabled)
{
	make_tree(&skel_6_12);
	tree_put(root, RECLAIM_ENABLED, "Y\n");
	expect_busy(FALSE, "DAMON_RECLAIM", "DAMON_RECLAIM enabled");
	expect_busy(TRUE, "DAMON_RECLAIM", "DAMON_RECLAIM enabled, own kdamond");
}

Test(damon_sysfs, busy_when_damon_lru_sort_is_enabled)
{
	make_tree(&skel_6_12);
	tree_put(root, LRU_SORT_ENABLED, "Y\n");
	expect_busy(FALSE, "DAMON_LRU_SORT", "DAMON_LRU_SORT enabled");
}

Test(damon_sysfs, busy_when_someone_elses_kdamond_runs)
{
	make_tree(&skel_6_12);
	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KD0 "/state", "on\n");
	tree_put(root, KD0 "/pid", "777\n");
	expect_busy(FALSE, "kdamond 0", "another kdamond 0");
	{
		g_autoptr(GError) err = NULL;

		cr_assert_not(vr_damon_sysfs_check_free(&paths, FALSE, &err));
		cr_expect(msg_names_number(err->message, 777), "the pid is named: %s",
			  err->message);
	}
	expect_free(TRUE, "our own kdamond 0");
}

Test(damon_sysfs, busy_when_another_kdamond_runs)
{
	make_tree(&skel_6_12);
	tree_put(root, KDS "/nr_kdamonds", "2\n");
	tree_put(root, KD0 "/state", "off\n");
	tree_put(root, KDS "/1/state", "on\n");
	tree_put(root, KDS "/1/pid", "778\n");
	expect_busy(TRUE, "kdamond 1", "kdamond 1 of someone else");
}

Test(damon_sysfs, no_damon_sysfs_is_unsupported)
{
	g_autoptr(GError) err = NULL, perr = NULL;

	tree_mkdir(root, SYS);
	cr_assert_not(vr_damon_sysfs_check_free(&paths, FALSE, &err));
	expect_error(err, VR_AGENT_ERROR_UNSUPPORTED, "nr_kdamonds", "no DAMON sysfs");
	cr_assert_not(vr_damon_sysfs_probe(&paths, &perr));
	expect_error(perr, VR_AGENT_ERROR_UNSUPPORTED, "DAMON", "probe without DAMON sysfs");
}

Test(damon_sysfs, running_kdamond_is_found)
{
	g_autoptr(GError) err = NULL;
	int k = 7;

	cr_assert(vr_damon_sysfs_running_kdamond(&paths, &k, &err), "no DAMON sysfs is fine");
	cr_expect_eq(k, -1);
	make_tree(&skel_6_12);
	tree_put(root, KDS "/nr_kdamonds", "2\n");
	tree_put(root, KD0 "/state", "off\n");
	tree_put(root, KDS "/1/state", "on\n");
	cr_assert(vr_damon_sysfs_running_kdamond(&paths, &k, &err));
	cr_expect_eq(k, 1);
}

Test(damon_sysfs, probe_needs_paddr)
{
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	cr_assert(vr_damon_sysfs_probe(&paths, &err), "%s", err ? err->message : "");
	tree_put(root, CTX0 "/avail_operations", "vaddr\nfvaddr\n");
	cr_assert_not(vr_damon_sysfs_probe(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_UNSUPPORTED, "paddr", "no paddr");
}

Test(damon_sysfs, probe_without_a_kdamond_folder)
{
	g_autoptr(GError) err = NULL;

	tree_put(root, KDS "/nr_kdamonds", "0\n");
	cr_assert(vr_damon_sysfs_probe(&paths, &err), "nr_kdamonds alone is enough: %s",
		  err ? err->message : "");
}

Test(damon_sysfs, caps_from_the_kernel_release)
{
	static const struct {
		const char *release;
		bool goals, metric, filters;
	} cases[] = {
		{ "6.12.9+deb12-cloud-amd64\n", true, true, true },
		{ "6.9.0\n", true, true, true },
		{ "6.8.12-arch1\n", true, false, true },
		{ "6.7.1\n", false, false, true },
		{ "6.2.0\n", false, false, false },
		{ "7.0.0\n", true, true, true },
	};

	tree_put(root, KDS "/nr_kdamonds", "0\n");
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		struct vr_damon_caps caps;

		tree_put(root, PROC "/sys/kernel/osrelease", cases[i].release);
		vr_damon_sysfs_detect_caps(&paths, &caps);
		cr_expect(caps.has_goals == cases[i].goals &&
				  caps.has_goal_metric == cases[i].metric &&
				  caps.has_filters == cases[i].filters,
			  "%s: got goals %d metric %d filters %d", cases[i].release, caps.has_goals,
			  caps.has_goal_metric, caps.has_filters);
	}
}

Test(damon_sysfs, caps_default_to_6_12_without_a_release)
{
	struct vr_damon_caps caps;

	vr_damon_sysfs_detect_caps(&paths, &caps);
	cr_expect(caps.has_goals && caps.has_goal_metric && caps.has_filters);
}

Test(damon_sysfs, caps_from_a_goal_folder)
{
	const struct skel k = { .nr_regions = 1, .nr_schemes = 1, .nr_goals = 1, .goals = true };
	struct vr_damon_caps caps;

	make_tree(&k);
	vr_damon_sysfs_detect_caps(&paths, &caps);
	cr_expect(caps.has_goals && !caps.has_goal_metric && !caps.has_filters,
		  "a 6.8-like tree: goals without target_metric, no filters");
}

/* ---- reading back ---- */

static void put_stats(guint scheme, const char *nr_tried, const char *sz_tried,
		      const char *nr_applied, const char *sz_applied, const char *qt_exceeds)
{
	const char *names[] = { "nr_tried", "sz_tried", "nr_applied", "sz_applied", "qt_exceeds" };
	const char *values[] = { nr_tried, sz_tried, nr_applied, sz_applied, qt_exceeds };

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree char *rel = g_strdup_printf(SCHEMES "/%u/stats/%s", scheme, names[i]);
		g_autofree char *v = g_strdup_printf("%s\n", values[i]);

		tree_put(root, rel, v);
	}
}

Test(damon_sysfs, stats_are_read_back)
{
	struct vr_scheme_stats st[2];
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	put_stats(0, "900", "9000000", "900", "9000000", "0");
	put_stats(1, "12", "1048576", "7", "524288", "3");
	cr_assert(vr_damon_sysfs_read_stats(&paths, st, 2, &err), "%s", err ? err->message : "");
	tree_expect(root, KD0 "/state", "update_schemes_stats");
	cr_expect_eq(st[0].nr_tried, 900);
	cr_expect_eq(st[1].nr_tried, 12);
	cr_expect_eq(st[1].sz_tried, MIB);
	cr_expect_eq(st[1].nr_applied, 7);
	cr_expect_eq(st[1].sz_applied, 512 * KIB);
	cr_expect_eq(st[1].qt_exceeds, 3);
}

Test(damon_sysfs, garbage_stats_name_the_file)
{
	struct vr_scheme_stats st[2];
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_put(root, SCHEMES "/1/stats/sz_applied", "many\n");
	cr_assert_not(vr_damon_sysfs_read_stats(&paths, st, 2, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "schemes/1/stats/sz_applied", "garbage stats");
	cr_expect(msg_has_any(err->message, "many"), "%s", err->message);
}

/* A tried region folder of @scheme. */
static void put_tried(guint scheme, guint dir, uint64_t start, uint64_t end, const char *nr,
		      const char *age)
{
	g_autofree char *base = g_strdup_printf(SCHEMES "/%u/tried_regions/%u", scheme, dir);
	g_autofree char *s = g_strdup_printf("%" PRIu64 "\n", start);
	g_autofree char *e = g_strdup_printf("%" PRIu64 "\n", end);
	g_autofree char *rs = g_build_filename(base, "start", NULL);
	g_autofree char *re = g_build_filename(base, "end", NULL);
	g_autofree char *rn = g_build_filename(base, "nr_accesses", NULL);
	g_autofree char *ra = g_build_filename(base, "age", NULL);
	g_autofree char *nv = g_strdup_printf("%s\n", nr);
	g_autofree char *av = g_strdup_printf("%s\n", age);

	tree_put(root, rs, s);
	tree_put(root, re, e);
	tree_put(root, rn, nv);
	tree_put(root, ra, av);
}

static void expect_region(const GArray *r, guint i, uint64_t start, uint64_t end, uint32_t nr,
			  uint32_t age)
{
	const struct vr_picture_region *g;

	cr_assert_lt(i, r->len, "expected at least %u regions, got %u", i + 1, r->len);
	g = &g_array_index(r, struct vr_picture_region, i);
	cr_expect(g->start == start && g->end == end && g->nr_accesses == nr && g->age == age,
		  "region %u: expected [%" PRIu64 ", %" PRIu64
		  ") nr_accesses %u age %u, got [%" PRIu64 ", %" PRIu64 ") %u %u",
		  i, start, end, nr, age, g->start, g->end, g->nr_accesses, g->age);
}

Test(damon_sysfs, tried_regions_are_read_sorted_and_cleared)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	/* folder numbers out of address order, more than 10 (listing order) */
	for (guint i = 0; i < 12; i++)
		put_tried(0, i, (uint64_t)(11 - i) * 0x1000, (uint64_t)(12 - i) * 0x1000,
			  i % 2 ? "3" : "0", "7");
	cr_assert(vr_damon_sysfs_read_tried_regions(&paths, VR_DAMON_STAT_SCHEME, 100, out, &err),
		  "%s", err ? err->message : "");
	cr_assert_eq(out->len, 12);
	for (guint i = 0; i < 12; i++)
		expect_region(out, i, (uint64_t)i * 0x1000, (uint64_t)(i + 1) * 0x1000,
			      (11 - i) % 2 ? 3 : 0, 7);
	tree_expect_last_write(root, KD0 "/state", "clear_schemes_tried_regions");
}

Test(damon_sysfs, more_tried_regions_than_max_are_merged)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	put_tried(0, 0, 0, 4 * KIB, "0", "10");
	put_tried(0, 1, 4 * KIB, 8 * KIB, "0", "12");
	put_tried(0, 2, 8 * KIB, 16 * KIB, "5", "1");
	put_tried(0, 3, 16 * KIB, 20 * KIB, "5", "1");
	put_tried(0, 4, 20 * KIB, 24 * KIB, "20", "3");
	put_tried(0, 5, 24 * KIB, 32 * KIB, "20", "3");
	cr_assert(vr_damon_sysfs_read_tried_regions(&paths, 0, 3, out, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(out->len, 3, "merged down to max, not truncated: got %u", out->len);
	expect_region(out, 0, 0, 8 * KIB, 0, 11);
	expect_region(out, 1, 8 * KIB, 20 * KIB, 5, 1);
	expect_region(out, 2, 20 * KIB, 32 * KIB, 20, 3);
}

Test(damon_sysfs, tried_regions_append_to_out)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	const struct vr_picture_region first = { 1, 2, 3, 4 };
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	g_array_append_val(out, first);
	put_tried(0, 0, 0x1000, 0x2000, "1", "1");
	cr_assert(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &err));
	cr_assert_eq(out->len, 2);
	expect_region(out, 0, 1, 2, 3, 4);
	expect_region(out, 1, 0x1000, 0x2000, 1, 1);
}

Test(damon_sysfs, garbage_in_a_tried_region_names_the_file)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	put_tried(0, 0, 0x1000, 0x2000, "1", "1");
	put_tried(0, 1, 0x2000, 0x3000, "lots", "1");
	cr_assert_not(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "tried_regions/1/nr_accesses", "garbage");
	cr_expect(msg_has_any(err->message, "lots"), "%s", err->message);
	cr_expect_eq(out->len, 0, "nothing appended on error");
	tree_expect_last_write(root, KD0 "/state", "clear_schemes_tried_regions");
}

Test(damon_sysfs, bad_tried_regions)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) e1 = NULL, e3 = NULL;

	make_tree(&skel_6_12);
	put_tried(0, 0, 0x2000, 0x2000, "1", "1");
	cr_assert_not(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &e1));
	expect_error(e1, VR_AGENT_ERROR_INVALID, "empty", "an empty region");

	put_tried(0, 0, 0x1000, 0x3000, "1", "1");
	put_tried(0, 1, 0x2000, 0x4000, "1", "1");
	tree_unlink(root, SCHEMES "/0/tried_regions/1/age");
	cr_assert_not(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &e3));
	expect_error(e3, VR_AGENT_ERROR_IO, "tried_regions/1/age", "a missing file");
}

/* A listing made while the kdamond reshapes its regions can hold a region
 * twice: the later one is cut to what the earlier one does not cover, and a
 * region wholly inside an earlier one goes. */
Test(damon_sysfs, overlapping_tried_regions_are_cut)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	put_tried(0, 0, 0x1000, 0x3000, "0", "5");
	put_tried(0, 1, 0x2000, 0x5000, "0", "5");
	put_tried(0, 2, 0x3000, 0x4000, "0", "5");
	cr_assert(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(out->len, 2, "two regions left (got %u)", out->len);
	const struct vr_picture_region *a = &g_array_index(out, struct vr_picture_region, 0);
	const struct vr_picture_region *b = &g_array_index(out, struct vr_picture_region, 1);
	cr_expect(a->start == 0x1000 && a->end == 0x3000, "the first stays whole");
	cr_expect(b->start == 0x3000 && b->end == 0x5000,
		  "the second is cut to [0x3000, 0x5000) (got [%#" G_GINT64_MODIFIER
		  "x, %#" G_GINT64_MODIFIER "x))",
		  b->start, b->end);
}

Test(damon_sysfs, no_tried_regions)
{
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	cr_assert(vr_damon_sysfs_read_tried_regions(&paths, 0, 10, out, &err));
	cr_expect_eq(out->len, 0);
}

Test(damon_sysfs, kdamond_pid_and_cpu)
{
	g_autoptr(GError) err = NULL;
	int64_t pid = 0;
	uint64_t cpu_us = 0;
	long tck = sysconf(_SC_CLK_TCK);

	make_tree(&skel_6_12);
	cr_assert(vr_damon_sysfs_kdamond_pid(&paths, &pid, &err), "%s", err ? err->message : "");
	cr_expect_eq(pid, 4242);
	cr_assert(vr_proc_pid_cpu_us(procfs_dir, pid, &cpu_us, &err), "%s",
		  err ? err->message : "");
	cr_expect_eq(cpu_us, (uint64_t)(KDAMOND_UTIME + KDAMOND_STIME) * 1000000 / (uint64_t)tck);
	tree_put(root, KD0 "/pid", "-1\n");
	cr_assert(vr_damon_sysfs_kdamond_pid(&paths, &pid, &err));
	cr_expect_eq(pid, -1);
	cr_assert(vr_proc_pid_cpu_us(procfs_dir, pid, &cpu_us, &err));
	cr_expect_eq(cpu_us, 0, "no kdamond, no CPU time");
	tree_put(root, KD0 "/pid", "kdamond\n");
	cr_assert_not(vr_damon_sysfs_kdamond_pid(&paths, &pid, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "pid", "a garbage pid");
}

/* ---- merging (pure) ---- */

static GArray *regions_of(const struct vr_picture_region *r, guint n)
{
	GArray *a = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));

	g_array_append_vals(a, r, n);
	return a;
}

/*
 * |A 0 age10|B 0 age12|C 5 age1 .....|D 5|E 20 ...|F 20 ......|
 * max 3 -> |AB 0 age11 |CD 5 age1        |EF 20 age3            |
 * max 2 -> |ABCD 3 age5                   |EF 20 age3            |
 */
static const struct vr_picture_region six[] = {
	{ 0, 4 * KIB, 0, 10 },	      { 4 * KIB, 8 * KIB, 0, 12 },   { 8 * KIB, 16 * KIB, 5, 1 },
	{ 16 * KIB, 20 * KIB, 5, 1 }, { 20 * KIB, 24 * KIB, 20, 3 }, { 24 * KIB, 32 * KIB, 20, 3 },
};

Test(damon_merge, most_alike_neighbours_first)
{
	g_autoptr(GArray) a = regions_of(six, G_N_ELEMENTS(six));

	vr_damon_regions_merge(a, 3);
	cr_assert_eq(a->len, 3);
	expect_region(a, 0, 0, 8 * KIB, 0, 11);
	expect_region(a, 1, 8 * KIB, 20 * KIB, 5, 1);
	expect_region(a, 2, 20 * KIB, 32 * KIB, 20, 3);
}

Test(damon_merge, size_weighted_averages)
{
	g_autoptr(GArray) a = regions_of(six, G_N_ELEMENTS(six));

	vr_damon_regions_merge(a, 2);
	cr_assert_eq(a->len, 2);
	/* nr_accesses (0*8K + 5*12K) / 20K = 3; age (10*4K + 12*4K + 1*12K) / 20K = 5 */
	expect_region(a, 0, 0, 20 * KIB, 3, 5);
	expect_region(a, 1, 20 * KIB, 32 * KIB, 20, 3);
}

Test(damon_merge, holes_are_merged_over_last)
{
	/* |X 0|   hole   |Y 0|Z 9| */
	const struct vr_picture_region r[] = {
		{ 0, 4 * KIB, 0, 0 },
		{ 8 * KIB, 12 * KIB, 0, 0 },
		{ 12 * KIB, 16 * KIB, 9, 0 },
	};
	g_autoptr(GArray) a = regions_of(r, 3);
	g_autoptr(GArray) b = regions_of(r, 3);

	vr_damon_regions_merge(a, 2);
	cr_assert_eq(a->len, 2);
	expect_region(a, 0, 0, 4 * KIB, 0, 0);
	expect_region(a, 1, 8 * KIB, 16 * KIB, 4, 0);
	/* down to one, the hole is covered; its bytes do not weigh */
	vr_damon_regions_merge(b, 1);
	cr_assert_eq(b->len, 1);
	expect_region(b, 0, 0, 16 * KIB, 3, 0);
}

Test(damon_merge, nothing_to_merge)
{
	g_autoptr(GArray) a = regions_of(six, G_N_ELEMENTS(six));
	g_autoptr(GArray) b = regions_of(six, G_N_ELEMENTS(six));

	vr_damon_regions_merge(a, 6);
	cr_assert_eq(a->len, 6);
	vr_damon_regions_merge(b, 100);
	cr_assert_eq(b->len, 6);
	for (guint i = 0; i < 6; i++)
		expect_region(b, i, six[i].start, six[i].end, six[i].nr_accesses, six[i].age);
}

Test(damon_merge, max_zero_empties)
{
	g_autoptr(GArray) a = regions_of(six, G_N_ELEMENTS(six));

	vr_damon_regions_merge(a, 0);
	cr_expect_eq(a->len, 0);
}

Test(damon_merge, many_regions_stay_sorted_and_covering)
{
	const guint n = 20000;
	g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	uint64_t total_before = 0, total_after = 0, acc_before = 0;
	guint32 seed = 12345;

	for (guint i = 0; i < n; i++) {
		struct vr_picture_region r;

		seed = seed * 1103515245 + 12345;
		r.start = (uint64_t)i * 64 * KIB + (i % 97 == 0 ? 4 * KIB : 0);
		r.end = (uint64_t)(i + 1) * 64 * KIB;
		r.nr_accesses = (seed >> 16) % 21;
		r.age = (seed >> 8) % 1000;
		total_before += r.end - r.start;
		acc_before += (r.end - r.start) * r.nr_accesses;
		g_array_append_val(a, r);
	}
	vr_damon_regions_merge(a, 100);
	cr_assert_eq(a->len, 100);
	for (guint i = 0; i < a->len; i++) {
		const struct vr_picture_region *r = &g_array_index(a, struct vr_picture_region, i);

		cr_assert_lt(r->start, r->end);
		cr_assert_leq(r->nr_accesses, 20);
		if (i)
			cr_assert_geq(r->start,
				      g_array_index(a, struct vr_picture_region, i - 1).end);
		total_after += r->end - r->start;
	}
	cr_expect_eq(g_array_index(a, struct vr_picture_region, 0).start, 4 * KIB);
	cr_expect_eq(g_array_index(a, struct vr_picture_region, a->len - 1).end,
		     (uint64_t)n * 64 * KIB);
	cr_expect_geq(total_after, total_before, "merged regions cover every part");
	(void)acc_before;
}

/* ---- the damon backend (damon.c) ---- */

static gpointer open_backend(void)
{
	g_autoptr(GError) err = NULL;
	gpointer b;

	cr_assert(vr_backend_damon.probe(&paths, &err), "probe: %s", err ? err->message : "");
	b = vr_backend_damon.open(&paths, &err);
	cr_assert_not_null(b, "open: %s", err ? err->message : "");
	return b;
}

/* The built-in profile @name with every scheme's watermarks/metric "none":
 * its kdamond is never deactivated, so later policies are committed online. */
static struct vr_policy *profile_always_active(const char *name)
{
	struct vr_policy *p = profile(name);

	for (guint i = 0; i < p->schemes->len; i++)
		policy_scheme(p, i)->wmarks.metric = VR_WMARK_NONE;
	return p;
}

static void apply_ok(gpointer b, const struct vr_policy *p)
{
	g_autoptr(GError) err = NULL;

	cr_assert(vr_backend_damon.apply_policy(b, p, &err), "apply_policy: %s",
		  err ? err->message : "");
}

/* Empty everything below contexts/0 and the state: the next step's writes
 * show exactly. */
static void clear_written(void)
{
	tree_truncate_all(root,
			  TREE_NAMES(KDS "/nr_kdamonds", KD0 "/contexts/nr_contexts", KD0 "/pid",
				     CTX0 "/avail_operations", RECLAIM_ENABLED,
				     SCHEMES "/0/stats/nr_tried", SCHEMES "/0/stats/sz_tried",
				     SCHEMES "/0/stats/nr_applied", SCHEMES "/0/stats/sz_applied",
				     SCHEMES "/0/stats/qt_exceeds", SCHEMES "/1/stats/nr_tried",
				     SCHEMES "/1/stats/sz_tried", SCHEMES "/1/stats/nr_applied",
				     SCHEMES "/1/stats/sz_applied", SCHEMES "/1/stats/qt_exceeds",
				     PROC "/iomem", PROC "/sys/kernel/osrelease",
				     PROC "/" KDAMOND_PID "/stat"));
}

/* The writes of @step's apply of @p, exactly: @want. */
static void apply_writes(gpointer b, const struct vr_policy *p, const struct expect_params *want,
			 const char *step)
{
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL, expected = NULL;

	clear_written();
	before = tree_snapshot(root);
	apply_ok(b, p);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	expected = expected_writes(want);
	{
		const char *state = g_hash_table_lookup(changes, KD0 "/state");

		cr_expect_str_eq(state ? state : "(not written)", want->state,
				 "%s: state '%s', expected '%s'", step,
				 state ? state : "(not written)", want->state);
	}
	expect_changes_equal(changes, expected);
}

/* Whether a running kdamond takes a commit depends on its running
 * configuration, not on the new one: with watermarks none it always
 * aggregates, and serves the commit. */
Test(damon_backend, first_apply_starts_then_commits)
{
	g_autoptr(vr_policy) p2021 = profile_always_active("damon-reclaim-2021");
	g_autoptr(vr_policy) p612 = profile_always_active("damon-reclaim-6.12");
	g_autoptr(vr_policy) gated = profile("damon-reclaim-2021");
	const struct expect_params start_2021_none = {
		.age_min = "50",
		.quota_ms = "100",
		.quota_bytes = "1073741824",
		.fresh = true,
		.state = "on",
		.wmarks_none = true,
	};
	const struct expect_params commit_6_12_none = {
		.age_min = "1200",
		.quota_ms = "10",
		.quota_bytes = "134217728",
		.fresh = false,
		.state = "commit",
		.wmarks_none = true,
	};
	const struct expect_params commit_2021 = {
		.age_min = "50",
		.quota_ms = "100",
		.quota_bytes = "1073741824",
		.fresh = false,
		.state = "commit",
	};
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	apply_writes(b, p2021, &start_2021_none, "the first policy (a start)");
	apply_writes(b, p612, &commit_6_12_none, "the second policy (a commit)");
	apply_writes(b, gated, &commit_2021, "a watermark-gated policy over an active kdamond");

	clear_written();
	vr_backend_damon.close(b);
	tree_expect(root, KD0 "/state", "off");
	tree_expect(root, KDS "/nr_kdamonds", "0");
}

/**
 * struct checkpoint - a look at the tree in the middle of a restart. Before
 * it starts a kdamond, the backend checks that DAMON is free, and reads the
 * DAMON_RECLAIM module's `enabled`: made a FIFO, that read waits for
 * checkpoint_thread(), which notes what the tree holds then and answers "N".
 * @done:	set by the test once the step is over: the thread gives up.
 * @reached:	the backend read `enabled` during the step.
 * @state:	kdamonds/0/state at that moment.
 * @age_min:	the pageout scheme's access_pattern/age/min at that moment.
 */
struct checkpoint {
	gint done;
	gboolean reached;
	char state[32];
	char age_min[32];
};

#define CHECKPOINT_NEXT "enabled.next"

static gpointer checkpoint_thread(gpointer data)
{
	struct checkpoint *cp = data;
	g_autofree char *fifo = g_build_filename(root, RECLAIM_ENABLED, NULL);
	g_autofree char *next = g_build_filename(root, CHECKPOINT_NEXT, NULL);
	g_autofree char *state = NULL, *age_min = NULL;
	int fd = -1;

	/* Opening to write without waiting fails (ENXIO) until the backend
	 * opens the FIFO to read; its open then waits for this one. */
	while (fd < 0 && !g_atomic_int_get(&cp->done)) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			g_usleep(1000);
	}
	if (fd < 0)
		return NULL;
	state = tree_get(root, KD0 "/state");
	age_min = tree_get(root, SCHEMES "/1/access_pattern/age/min");
	g_strlcpy(cp->state, state ? state : "(missing)", sizeof(cp->state));
	g_strlcpy(cp->age_min, age_min ? age_min : "(missing)", sizeof(cp->age_min));
	cp->reached = TRUE;
	/* The backend waits for data or the end: it still has the FIFO open. */
	if (write(fd, "N\n", 2) != 2)
		cp->reached = FALSE;
	/* A later read finds a plain file; the renaming leaves open ends be. */
	if (rename(next, fifo) != 0)
		cp->reached = FALSE;
	close(fd);
	return NULL;
}

/* Make `enabled` the checkpoint's FIFO (after a snapshot: a snapshot would
 * wait on it) and start its thread. */
static GThread *checkpoint_start(struct checkpoint *cp)
{
	g_autofree char *fifo = g_build_filename(root, RECLAIM_ENABLED, NULL);

	*cp = (struct checkpoint){ 0 };
	tree_unlink(root, RECLAIM_ENABLED);
	cr_assert_eq(mkfifo(fifo, 0600), 0, "cannot make the FIFO %s", fifo);
	return g_thread_new("checkpoint", checkpoint_thread, cp);
}

/* End the checkpoint's thread; `enabled` is a plain file again. */
static void checkpoint_end(struct checkpoint *cp, GThread *t)
{
	g_atomic_int_set(&cp->done, 1);
	g_thread_join(t);
	if (!cp->reached) {
		tree_unlink(root, RECLAIM_ENABLED);
		tree_put(root, RECLAIM_ENABLED, "N\n");
	}
}

/* A kdamond its watermarks may deactivate does not serve a commit (it waits
 * for an aggregation): a new policy restarts it, off then on, and what the
 * first run counted is kept. The new policy's watermarks do not matter. */
Test(damon_backend, gated_kdamond_is_restarted_not_committed)
{
	g_autoptr(vr_policy) gated = profile("damon-reclaim-2021");
	g_autoptr(vr_policy) p612 = profile_always_active("damon-reclaim-6.12");
	const struct expect_params restart_6_12_none = {
		.age_min = "1200",
		.quota_ms = "10",
		.quota_bytes = "134217728",
		.fresh = false, /* nr_kdamonds and nr_contexts already hold 1 */
		.state = "on",
		.wmarks_none = true,
	};
	const uint64_t cpu_us = (uint64_t)(KDAMOND_UTIME + KDAMOND_STIME) * 1000000 /
				(uint64_t)sysconf(_SC_CLK_TCK);
	g_autoptr(GHashTable) dirs = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL, want = NULL;
	g_autoptr(GPtrArray) order = NULL;
	g_autoptr(GError) err = NULL;
	g_autofree char *next = NULL;
	struct watcher w = { .dirs = dirs };
	struct checkpoint cp;
	struct vr_backend_stats st;
	int first_cfg = -1, last_stop = -1, nr_after = 0, nr_kd;
	GThread *t;
	gpointer b;

	make_tree(&skel_6_12);
	put_stats(1, "12", "1048576", "7", "524288", "3"); /* the first run's */
	b = open_backend();
	apply_ok(b, gated);

	clear_written();
	tree_put(root, CHECKPOINT_NEXT, "N\n");
	before = tree_snapshot(root);
	t = checkpoint_start(&cp);
	w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(w.fd, 0);
	watch_dirs(&w, SYS);
	apply_ok(b, p612);
	order = written_in_order(&w);
	close(w.fd);
	checkpoint_end(&cp, t);
	next = g_build_filename(root, CHECKPOINT_NEXT, NULL);
	(void)remove(next);
	after = tree_snapshot(root);

	/* between the stop and the start: off, the new configuration not yet
	 * written */
	cr_expect(cp.reached, "no start: DAMON was never checked free during the apply");
	if (cp.reached) {
		cr_expect_str_eq(cp.state, "off", "the kdamond is off before the start, got '%s'",
				 cp.state);
		cr_expect_str_eq(cp.age_min, "",
				 "the new configuration comes after the stop, got '%s'",
				 cp.age_min);
	}
	/* in order: the stop's state writes, nr_kdamonds (a start), the
	 * configuration, state last */
	for (guint i = 0; i < order->len; i++) {
		const char *rel = g_ptr_array_index(order, i);

		if (first_cfg < 0 && g_str_has_prefix(rel, CTX0 "/"))
			first_cfg = (int)i;
		if (strcmp(rel, KD0 "/state") != 0)
			continue;
		if (first_cfg < 0)
			last_stop = (int)i;
		else
			nr_after++;
	}
	cr_assert_gt(order->len, 50, "expected the whole configuration, saw %u writes", order->len);
	cr_expect_str_eq(g_ptr_array_index(order, order->len - 1), KD0 "/state",
			 "state is the last write");
	cr_expect_eq(nr_after, 1, "one state write after the configuration (on), saw %d", nr_after);
	cr_expect_geq(last_stop, 0, "state is written (off) before the configuration");
	nr_kd = position(order, KDS "/nr_kdamonds");
	cr_expect(nr_kd > last_stop && nr_kd < first_cfg,
		  "nr_kdamonds (a start) between the stop and the configuration: %d, %d, %d",
		  last_stop, nr_kd, first_cfg);
	/* and exactly the new configuration, state "on": never "commit" */
	changes = tree_changes(before, after);
	want = expected_writes(&restart_6_12_none);
	expect_changes_equal(changes, want);
	tree_expect(root, KD0 "/state", "on");

	put_stats(1, "4", "65536", "2", "32768", "1"); /* the second run's */
	cr_assert(vr_backend_damon.read_stats(b, &st, &err), "%s", err ? err->message : "");
	cr_expect_eq(st.nr_tried, 16, "both runs' counters: got %" PRIu64, st.nr_tried);
	cr_expect_eq(st.sz_tried, MIB + 64 * KIB);
	cr_expect_eq(st.nr_applied, 9);
	cr_expect_eq(st.sz_applied, 512 * KIB + 32 * KIB);
	cr_expect_eq(st.qt_exceeds, 4);
	cr_expect_eq(st.reclaimer_cpu_us, 2 * cpu_us);
	vr_backend_damon.close(b);
}

static void put_meminfo(uint64_t total_kib, uint64_t free_kib)
{
	g_autofree char *text =
		g_strdup_printf("MemTotal:       %" PRIu64 " kB\nMemFree:        %" PRIu64
				" kB\nMemAvailable:   %" PRIu64 " kB\nSwapTotal:      0 kB\n"
				"SwapFree:       0 kB\n",
				total_kib, free_kib, free_kib);

	tree_put(root, PROC "/meminfo", text);
}

/* The pageout scheme's quotas/bytes: the size quota the kernel charges. */
static uint64_t pageout_quota_bytes(void)
{
	g_autofree char *text = tree_get(root, SCHEMES "/1/quotas/bytes");

	return g_ascii_strtoull(text, NULL, 10);
}

static void put_vmstat(uint64_t pgsteal_pages)
{
	g_autofree char *text = g_strdup_printf(
		"pswpout 0\npgsteal_anon %" PRIu64 "\npgsteal_file 0\n", pgsteal_pages);

	tree_put(root, PROC "/vmstat", text);
}

/* A fleet share charges resident memory: the kernel gets it plus the
 * guest's free memory, at the start and, by a commit, when the free memory
 * moved it by more than a quarter; a small move commits nothing; a period
 * in which the guest freed more than the share allows puts it back. */
Test(damon_backend, resident_quota_follows_free_memory)
{
	g_autoptr(vr_policy) p = profile_always_active("damon-reclaim-2021");
	const uint64_t total_kib = 4 * 1024 * 1024;
	const uint64_t t0 = G_MAXINT64 / 2, s1 = G_USEC_PER_SEC;
	const uint64_t mib_pages = MIB / 4096;
	gpointer b;

	policy_scheme(p, 0)->quota.sz = 64 * MIB;
	make_tree(&skel_6_12);
	put_meminfo(total_kib, 192 * 1024);
	put_vmstat(0);
	b = open_backend();
	apply_ok(b, p);
	cr_expect_eq(pageout_quota_bytes(), 256 * MIB, "64 MiB after the 192 MiB free");

	vr_backend_damon.tick(b, t0); /* the first budget period starts */
	tree_put(root, KD0 "/state", "");
	put_meminfo(total_kib, 448 * 1024);
	put_vmstat(100 * mib_pages);
	vr_backend_damon.tick(b, t0 + 10 * s1);
	tree_expect(root, KD0 "/state", "commit");
	cr_expect_eq(pageout_quota_bytes(), 512 * MIB, "100 of 640 MiB in 10 s: within budget");

	tree_put(root, KD0 "/state", "");
	put_meminfo(total_kib, 480 * 1024);
	vr_backend_damon.tick(b, t0 + 20 * s1);
	tree_expect(root, KD0 "/state", "");
	cr_expect_eq(pageout_quota_bytes(), 512 * MIB, "a move within a quarter commits nothing");

	put_meminfo(total_kib, 4 * 1024 * 1024);
	vr_backend_damon.tick(b, t0 + 21 * s1);
	tree_expect(root, KD0 "/state", "");
	cr_expect_eq(pageout_quota_bytes(), 512 * MIB, "not before the rescale period");

	put_vmstat(800 * mib_pages);
	vr_backend_damon.tick(b, t0 + 30 * s1);
	tree_expect(root, KD0 "/state", "commit");
	cr_expect_eq(pageout_quota_bytes(), 64 * MIB,
		     "700 MiB freed in 10 s is over 640: the policy's share");

	tree_put(root, KD0 "/state", "");
	vr_backend_damon.tick(b, t0 + 40 * s1);
	tree_expect(root, KD0 "/state", "commit");
	cr_expect_eq(pageout_quota_bytes(), 1024 * MIB,
		     "a period within budget: the cap, 16 x 64 MiB");
	vr_backend_damon.close(b);
}

static void put_refaults(uint64_t pgsteal_pages, uint64_t refault_pages)
{
	g_autofree char *text = g_strdup_printf("pswpout 0\npgsteal_anon %" PRIu64
						"\npgsteal_file 0\nworkingset_refault_anon %" PRIu64
						"\nworkingset_refault_file 0\n",
						pgsteal_pages, refault_pages);

	tree_put(root, PROC "/vmstat", text);
}

/* A 6.12 tree with room for the page-level scheme's goals and filter. */
static const struct skel skel_6_12_braked = {
	.nr_regions = NR_GUEST_RANGES,
	.nr_schemes = 2,
	.nr_goals = 2,
	.nr_filters = 1,
	.goals = true,
	.goal_metric = true,
	.filters = true,
};

/* The page-level profile with a PSI goal and a refault_bytes goal. */
static struct vr_policy *refault_braked(gboolean always_active)
{
	g_autoptr(vr_policy) p = always_active ? profile_always_active("page-level") :
						 profile("page-level");
	struct vr_quota *q = &policy_scheme(p, 0)->quota;

	q->goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 1667, 0 };
	q->goals[1] = (struct vr_quota_goal){ VR_GOAL_REFAULT_BYTES, MIB, 0 };
	q->nr_goals = 2;
	return g_steal_pointer(&p);
}

/* Each period feeds the refault goal the period's refaults per window, by
 * a goals update; the kernel measures the PSI goal itself. */
Test(damon_backend, refault_goal_is_fed_each_period)
{
	g_autoptr(vr_policy) p = refault_braked(TRUE);
	const uint64_t t0 = G_MAXINT64 / 2, s1 = G_USEC_PER_SEC;
	gpointer b;

	make_tree(&skel_6_12_braked);
	put_meminfo(4 * 1024 * 1024, 3 * 1024 * 1024);
	put_refaults(0, 1000);
	b = open_backend();
	apply_ok(b, p);
	tree_expect(root, SCHEMES "/1/quotas/goals/1/target_metric", "user_input");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/target_value", "1048576");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "0");
	vr_backend_damon.tick(b, t0); /* the first period starts */
	tree_put(root, KD0 "/state", "");
	put_refaults(0, 1000 + 5 * 512); /* 10 MiB in the period */
	vr_backend_damon.tick(b, t0 + 5 * s1);
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "2097152");
	tree_expect(root, SCHEMES "/1/quotas/goals/0/target_metric", "some_mem_psi_us");
	tree_expect(root, KD0 "/state", "commit_schemes_quota_goals");
	tree_put(root, KD0 "/state", "");
	vr_backend_damon.tick(b, t0 + 10 * s1);
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "0");
	tree_expect(root, KD0 "/state", "commit_schemes_quota_goals");
	vr_backend_damon.close(b);
}

/* Under watermarks the goals are fed only while the free memory keeps the
 * kdamond active (between low and mid): a deactivated one would hold the
 * update until it wakes. */
Test(damon_backend, refault_goal_waits_for_an_active_kdamond)
{
	g_autoptr(vr_policy) p = refault_braked(FALSE);
	const uint64_t t0 = G_MAXINT64 / 2, s1 = G_USEC_PER_SEC;
	const uint64_t total_kib = 1000 * 1024;
	gpointer b;

	make_tree(&skel_6_12_braked);
	put_meminfo(total_kib, 600 * 1024); /* 600 per mille: above high (500) */
	put_refaults(0, 0);
	b = open_backend();
	apply_ok(b, p);
	vr_backend_damon.tick(b, t0);
	tree_put(root, KD0 "/state", "");
	put_refaults(0, 2560);
	vr_backend_damon.tick(b, t0 + 5 * s1);
	tree_expect(root, KD0 "/state", "");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "0");
	put_meminfo(total_kib, 450 * 1024); /* between mid (400) and high */
	put_refaults(0, 5120);
	vr_backend_damon.tick(b, t0 + 10 * s1);
	tree_expect(root, KD0 "/state", "");
	put_meminfo(total_kib, 300 * 1024); /* between low (200) and mid */
	put_refaults(0, 7680);
	vr_backend_damon.tick(b, t0 + 15 * s1);
	tree_expect(root, KD0 "/state", "commit_schemes_quota_goals");
	tree_expect(root, SCHEMES "/1/quotas/goals/1/current_value", "2097152");
	vr_backend_damon.close(b);
}

/* A kdamond its watermarks may deactivate would not serve a commit: its
 * quota is raised when the policy is applied, and stays. */
Test(damon_backend, gated_quota_is_raised_only_when_applied)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	const uint64_t total_kib = 4 * 1024 * 1024;
	gpointer b;

	policy_scheme(p, 0)->quota.sz = 64 * MIB;
	make_tree(&skel_6_12);
	put_meminfo(total_kib, 64 * 1024);
	b = open_backend();
	apply_ok(b, p);
	cr_expect_eq(pageout_quota_bytes(), 128 * MIB);
	tree_put(root, KD0 "/state", "");
	put_meminfo(total_kib, 512 * 1024);
	vr_backend_damon.tick(b, G_MAXINT64 / 2);
	tree_expect(root, KD0 "/state", "");
	cr_expect_eq(pageout_quota_bytes(), 128 * MIB);
	vr_backend_damon.close(b);
}

Test(damon_backend, busy_apply_writes_nothing)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	tree_put(root, RECLAIM_ENABLED, "Y\n");
	before = tree_snapshot(root);
	cr_assert_not(vr_backend_damon.apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_BUSY, "DAMON_RECLAIM", "apply with the module enabled");
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	cr_expect_eq(g_hash_table_size(changes), 0, "nothing is written when busy");
	vr_backend_damon.close(b);
	tree_expect(root, KD0 "/state", "");
}

Test(damon_backend, probe_reports_busy)
{
	g_autoptr(GError) err = NULL;

	make_tree(&skel_6_12);
	tree_put(root, KDS "/nr_kdamonds", "1\n");
	tree_put(root, KD0 "/state", "on\n");
	cr_assert_not(vr_backend_damon.probe(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_BUSY, "kdamond 0", "probe with a foreign kdamond");
}

Test(damon_backend, invalid_policy_writes_nothing)
{
	g_autoptr(vr_policy)
		p = parse("{\"schemes\": [{\"name\": \"x\", \"action\": \"pageout\", \"quota\": "
			  "{\"goals\": [{\"metric\": \"free_mem_rate\", \"target\": 300}]}}]}");
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	before = tree_snapshot(root);
	cr_assert_not(vr_backend_damon.apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_INVALID, "free_mem_rate", "an inexpressible policy");
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	cr_expect_eq(g_hash_table_size(changes), 0, "a policy refused changes nothing");
	vr_backend_damon.close(b);
}

Test(damon_backend, failed_first_start_leaves_nothing_running)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	tree_unlink(root, SCHEMES "/1/watermarks/low");
	cr_assert_not(vr_backend_damon.apply_policy(b, p, &err));
	expect_error(err, VR_AGENT_ERROR_IO, "schemes/1/watermarks/low", "a missing file");
	tree_expect(root, KD0 "/state", "");
	tree_expect_last_write(root, KDS "/nr_kdamonds", "0");
	/* the agent can try again once the tree is whole */
	tree_put(root, SCHEMES "/1/watermarks/low", "");
	apply_ok(b, p);
	tree_expect(root, KD0 "/state", "on");
	vr_backend_damon.close(b);
}

/* The running configuration (watermarks none) is never deactivated: a new one
 * is committed online, and that commit fails. */
Test(damon_backend, failed_commit_keeps_the_previous_configuration)
{
	g_autoptr(vr_policy) p = profile_always_active(NULL);
	g_autoptr(vr_policy) p612 = profile("damon-reclaim-6.12");
	g_autoptr(GError) err = NULL;
	struct vr_backend_stats st;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	apply_ok(b, p);
	clear_written();
	tree_symlink(root, SCHEMES "/1/quotas/ms", "/dev/full");
	cr_assert_not(vr_backend_damon.apply_policy(b, p612, &err));
	expect_error(err, VR_AGENT_ERROR_IO, "schemes/1/quotas/ms", "a refused commit");
	cr_expect(msg_has_any(err->message, "previous"), "%s", err->message);
	tree_expect(root, KD0 "/state", "");
	/* still running: stats are read from the kdamond */
	g_clear_error(&err);
	cr_assert(vr_backend_damon.read_stats(b, &st, &err), "%s", err ? err->message : "");
	tree_expect(root, KD0 "/state", "update_schemes_stats");
	tree_unlink(root, SCHEMES "/1/quotas/ms");
	tree_put(root, SCHEMES "/1/quotas/ms", "");
	vr_backend_damon.close(b);
}

Test(damon_backend, stats_sum_pageout_schemes_and_survive_pause)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) err = NULL;
	struct vr_backend_stats st;
	const uint64_t cpu_us = (uint64_t)(KDAMOND_UTIME + KDAMOND_STIME) * 1000000 /
				(uint64_t)sysconf(_SC_CLK_TCK);
	gpointer b;

	make_tree(&skel_6_12);
	put_stats(0, "900", "90000000", "900", "90000000", "0"); /* stat scheme: not counted */
	put_stats(1, "12", "1048576", "7", "524288", "3");
	b = open_backend();
	cr_assert(vr_backend_damon.read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 0, "nothing before the first policy");
	apply_ok(b, p);
	cr_assert(vr_backend_damon.read_stats(b, &st, &err), "%s", err ? err->message : "");
	cr_expect_eq(st.nr_tried, 12);
	cr_expect_eq(st.sz_tried, MIB);
	cr_expect_eq(st.nr_applied, 7);
	cr_expect_eq(st.sz_applied, 512 * KIB);
	cr_expect_eq(st.qt_exceeds, 3);
	cr_expect_eq(st.reclaimer_cpu_us, cpu_us);

	tree_put(root, KD0 "/state", "");
	cr_assert(vr_backend_damon.pause(b, &err), "%s", err ? err->message : "");
	tree_expect_last_write(root, KD0 "/state", "off");
	cr_assert(vr_backend_damon.read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 512 * KIB, "a paused backend keeps what the run counted");
	cr_expect_eq(st.reclaimer_cpu_us, cpu_us);

	tree_put(root, KD0 "/state", "");
	cr_assert(vr_backend_damon.resume(b, &err), "%s", err ? err->message : "");
	tree_expect(root, KD0 "/state", "on");
	cr_assert(vr_backend_damon.read_stats(b, &st, &err));
	cr_expect_eq(st.sz_applied, 1024 * KIB, "the new run adds to the old one");
	cr_expect_eq(st.nr_tried, 24);
	cr_expect_eq(st.reclaimer_cpu_us, 2 * cpu_us);
	vr_backend_damon.close(b);
}

Test(damon_backend, apply_while_paused_waits_for_resume)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(vr_policy) p612 = profile("damon-reclaim-6.12");
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	apply_ok(b, p);
	cr_assert(vr_backend_damon.pause(b, &err));
	before = tree_snapshot(root);
	apply_ok(b, p612);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	cr_expect_eq(g_hash_table_size(changes), 0, "nothing is written while paused");
	clear_written();
	cr_assert(vr_backend_damon.resume(b, &err), "%s", err ? err->message : "");
	tree_expect(root, KD0 "/state", "on");
	tree_expect(root, SCHEMES "/1/access_pattern/age/min", "1200");
	tree_expect(root, SCHEMES "/1/quotas/ms", "10");
	cr_assert(vr_backend_damon.resume(b, &err), "resume twice is fine");
	vr_backend_damon.close(b);
}

Test(damon_backend, regions_come_from_the_stat_scheme)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	put_tried(0, 0, 0x1000, 0x9f000, "0", "40");
	put_tried(0, 1, 0x100000, 0x7ffe0000, "2", "3");
	put_tried(1, 0, 0x1000, 0x9f000, "0", "40"); /* the pageout scheme's: not used */
	b = open_backend();
	cr_assert(vr_backend_damon.read_regions(b, 10, out, &err));
	cr_expect_eq(out->len, 0, "no picture before the first policy");
	apply_ok(b, p);
	cr_assert(vr_backend_damon.read_regions(b, 10, out, &err), "%s", err ? err->message : "");
	cr_assert_eq(out->len, 2);
	expect_region(out, 0, 0x1000, 0x9f000, 0, 40);
	expect_region(out, 1, 0x100000, 0x7ffe0000, 2, 3);
	g_array_set_size(out, 0);
	cr_assert(vr_backend_damon.read_regions(b, 1, out, &err));
	cr_assert_eq(out->len, 1, "bounded by max");
	vr_backend_damon.close(b);
}

Test(damon_backend, tick_notices_a_stopped_kdamond)
{
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) err = NULL;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	apply_ok(b, p);
	cr_expect_gt(vr_backend_damon.tick(b, 0), 0);
	tree_put(root, KD0 "/state", "off\n");
	cr_expect_gt(vr_backend_damon.tick(b, 1), 0);
	put_tried(0, 0, 0x1000, 0x2000, "0", "1");
	cr_assert(vr_backend_damon.read_regions(b, 10, out, &err));
	cr_expect_eq(out->len, 0, "a stopped kdamond has no picture");
	tree_put(root, KD0 "/state", "");
	apply_ok(b, p);
	tree_expect(root, KD0 "/state", "on");
	vr_backend_damon.close(b);
}

/**
 * struct bump - a thread that plays the kernel during reclaim(): it waits
 * (5 s at most) for the backend to change the quota it found, notes the
 * new one, then raises sz_applied.
 */
struct bump {
	char quota_seen[32];
	uint64_t new_sz_applied;
};

static gpointer bump_thread(gpointer data)
{
	struct bump *bp = data;
	g_autofree char *path = g_build_filename(root, SCHEMES "/1/stats/sz_applied", NULL);
	g_autofree char *value = g_strdup_printf("%" PRIu64 "\n", bp->new_sz_applied);
	g_autofree char *first = tree_get(root, SCHEMES "/1/quotas/bytes");
	const gint64 give_up = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
	char *quota = NULL;

	/* waiting a fixed time raced with a slow start of reclaim() */
	for (;;) {
		quota = tree_get(root, SCHEMES "/1/quotas/bytes");
		if ((quota && *quota && g_strcmp0(quota, first) != 0) ||
		    g_get_monotonic_time() >= give_up)
			break;
		g_free(quota);
		g_usleep(10 * 1000);
	}
	g_strlcpy(bp->quota_seen, quota ? quota : "", sizeof(bp->quota_seen));
	g_free(quota);
	g_file_set_contents(path, value, -1, NULL);
	return NULL;
}

Test(damon_backend, reclaim_boosts_the_quota_and_restores_it)
{
	g_autoptr(vr_policy) p = profile_always_active(NULL);
	g_autoptr(GError) err = NULL;
	struct bump bp = { .new_sz_applied = 1000000 + 2 * MIB };
	uint64_t reclaimed = 0;
	GThread *t;
	gpointer b;

	make_tree(&skel_6_12);
	put_stats(1, "1", "1000000", "1", "1000000", "0");
	b = open_backend();
	apply_ok(b, p);
	t = g_thread_new("bump", bump_thread, &bp);
	cr_assert(vr_backend_damon.reclaim(b, MIB, 10000, &reclaimed, &err), "%s",
		  err ? err->message : "");
	g_thread_join(t);
	cr_expect_str_eq(bp.quota_seen, "1074790400", "1 GiB + 1 MiB while reclaiming, got '%s'",
			 bp.quota_seen);
	cr_expect_eq(reclaimed, 2 * MIB, "what the kernel applied meanwhile: %" PRIu64, reclaimed);
	tree_expect(root, SCHEMES "/1/quotas/bytes", "1073741824");
	tree_expect_last_write(root, KD0 "/state", "commit");
	vr_backend_damon.close(b);
}

Test(damon_backend, reclaim_stops_at_the_deadline)
{
	g_autoptr(vr_policy) p = profile_always_active(NULL);
	g_autoptr(GError) err = NULL;
	uint64_t reclaimed = 1;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	apply_ok(b, p);
	cr_assert(vr_backend_damon.reclaim(b, MIB, 0, &reclaimed, &err), "%s",
		  err ? err->message : "");
	cr_expect_eq(reclaimed, 0);
	tree_expect(root, SCHEMES "/1/quotas/bytes", "1073741824");
	vr_backend_damon.close(b);
}

/* Raising the quota takes a commit, which a kdamond its watermarks may
 * deactivate does not serve: refused, nothing committed. */
Test(damon_backend, reclaim_is_refused_while_watermarks_may_deactivate)
{
	g_autoptr(vr_policy) p = profile("damon-reclaim-2021");
	g_autoptr(GHashTable) before = NULL, after = NULL, changes = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t reclaimed = 1;
	GHashTableIter it;
	gpointer k, v;
	gpointer b;

	make_tree(&skel_6_12);
	put_stats(1, "1", "1000000", "1", "1000000", "0");
	b = open_backend();
	apply_ok(b, p);
	clear_written();
	before = tree_snapshot(root);
	cr_assert_not(vr_backend_damon.reclaim(b, MIB, 0, &reclaimed, &err),
		      "reclaim through watermark-gated schemes should be refused");
	expect_error(err, VR_AGENT_ERROR_INVALID, "watermarks", "reclaim with gated schemes");
	cr_expect_eq(reclaimed, 0);
	after = tree_snapshot(root);
	changes = tree_changes(before, after);
	/* at most the stats refresh that reads where sz_applied starts: no
	 * quota, no commit */
	g_hash_table_iter_init(&it, changes);
	while (g_hash_table_iter_next(&it, &k, &v))
		cr_expect(strcmp(k, KD0 "/state") == 0 && strcmp(v, "update_schemes_stats") == 0,
			  "unexpected write: %s = '%s'", (const char *)k, (const char *)v);
	vr_backend_damon.close(b);
}

Test(damon_backend, reclaim_needs_a_running_pageout_scheme)
{
	g_autoptr(vr_policy)
		cold = parse("{\"schemes\": [{\"name\": \"c\", \"action\": \"cold\"}]}");
	g_autoptr(vr_policy) p = profile(NULL);
	g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;
	uint64_t reclaimed;
	gpointer b;

	make_tree(&skel_6_12);
	b = open_backend();
	cr_assert_not(vr_backend_damon.reclaim(b, MIB, 0, &reclaimed, &e1));
	expect_error(e1, VR_AGENT_ERROR_INVALID, "not running", "before any policy");
	apply_ok(b, cold);
	cr_assert_not(vr_backend_damon.reclaim(b, MIB, 0, &reclaimed, &e2));
	expect_error(e2, VR_AGENT_ERROR_INVALID, "pageout", "without a pageout scheme");
	apply_ok(b, p);
	cr_assert(vr_backend_damon.pause(b, NULL));
	cr_assert_not(vr_backend_damon.reclaim(b, MIB, 0, &reclaimed, &e3));
	expect_error(e3, VR_AGENT_ERROR_INVALID, "paused", "while paused");
	vr_backend_damon.close(b);
}

Test(damon_backend, open_without_damon_fails)
{
	g_autoptr(GError) err = NULL;

	tree_mkdir(root, SYS);
	cr_assert_null(vr_backend_damon.open(&paths, &err));
	expect_error(err, VR_AGENT_ERROR_UNSUPPORTED, "DAMON", "open without DAMON");
	cr_expect_str_eq(vr_backend_damon.name, "damon");
}
