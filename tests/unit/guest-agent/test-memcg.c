/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the memcg backend (guest-agent/memcg.c): cgroup v2
 * memory.reclaim in chunks sized by the scheme's quota, the PSI brake,
 * watermarks, pause/resume, explicit reclaim requests and errors.
 *
 * The rig: a fake tree in a temporary folder (proc/meminfo,
 * proc/pressure/memory, cgroup/memory.reclaim) and the backend's test hooks:
 * every memory.reclaim write is recorded (so tests assert the exact
 * sequence), costs a modelled time on a fake monotonic clock (ns per MiB
 * asked, which sets the measured throughput) and CPU time, and can be
 * answered EAGAIN or another errno. A few tests use the real write path
 * (a regular file, /dev/full for ENOSPC).
 *
 * Units: sizes in bytes (MiB = 2^20), times in us unless a name says
 * otherwise. Each test runs in its own process, so the rig is a global.
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include "backend.h"
#include "memcg.h"
#include "picture-region.h"
#include "policy.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define PG  ((uint64_t)VR_PAGE_SIZE)
#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define MS  1000ULL    /* us per ms */
#define S   1000000ULL /* us per s */

/* ------------------------------------------------------------------------- */
/* The rig                                                                   */
/* ------------------------------------------------------------------------- */

struct rig {
	char *root;
	char *sysfs, *procfs, *cgroup;
	struct vr_agent_paths paths;
	gpointer backend;
	GArray *writes;	     /* uint64_t: the bytes of each write, in order */
	uint64_t clock_ns;   /* the fake monotonic clock */
	uint64_t ns_per_mib; /* what a write costs on it, per MiB asked */
	uint64_t cpu_ns;     /* the fake thread CPU clock */
	uint64_t cpu_ns_per_write;
	guint fail_from;  /* 1-based index of the first failing write; 0: none */
	guint fail_until; /* ... and of the last (0: all after fail_from) */
	int fail_errno;
};

static struct rig R;

static gboolean fake_write(void *data, const char *path, const char *value, int *errno_out,
			   GError **error)
{
	struct rig *r = data;
	guint64 bytes = 0;
	guint n;

	cr_assert(g_ascii_string_to_unsigned(value, 10, 1, G_MAXUINT64, &bytes, NULL),
		  "memory.reclaim got '%s', not a positive decimal byte count", value);
	cr_assert(g_str_has_suffix(path, "/cgroup/memory.reclaim"),
		  "the write should go to the cgroup root's memory.reclaim, went to %s", path);
	g_array_append_val(r->writes, bytes);
	n = r->writes->len;
	r->clock_ns += bytes * r->ns_per_mib / MIB;
	r->cpu_ns += r->cpu_ns_per_write;
	*errno_out = 0;
	if (r->fail_from && n >= r->fail_from && (!r->fail_until || n <= r->fail_until)) {
		*errno_out = r->fail_errno;
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "%s refused '%s': %s", path,
			    value, g_strerror(r->fail_errno));
		return FALSE;
	}
	return TRUE;
}

static uint64_t fake_now_ns(void *data)
{
	return ((struct rig *)data)->clock_ns;
}

static uint64_t fake_cpu_ns(void *data)
{
	return ((struct rig *)data)->cpu_ns;
}

/* MemFree at @per_mille of a 1000000 kB MemTotal. */
static void set_free_rate(uint64_t per_mille)
{
	g_autofree char *text = g_strdup_printf("MemTotal: 1000000 kB\n"
						"MemFree: %" PRIu64 " kB\n"
						"MemAvailable: 900000 kB\n"
						"SwapTotal: 0 kB\n"
						"SwapFree: 0 kB\n",
						per_mille * 1000);

	tree_put(R.procfs, "meminfo", text);
}

static void set_psi_some_us(uint64_t total_us)
{
	g_autofree char *text =
		g_strdup_printf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n"
				"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
				total_us);

	tree_put(R.procfs, "pressure/memory", text);
}

/* A fake tree (with memory PSI when @with_psi) and an open backend with the
 * hooks on. Writes are nearly free (1 us per MiB) unless a test says so. */
static void rig_init(bool with_psi)
{
	g_autoptr(GError) error = NULL;
	struct vr_memcg_hooks hooks = {
		.write = fake_write,
		.now_ns = fake_now_ns,
		.cpu_ns = fake_cpu_ns,
		.data = &R,
	};

	memset(&R, 0, sizeof(R));
	R.root = tree_new();
	R.sysfs = g_build_filename(R.root, "sys", NULL);
	R.procfs = g_build_filename(R.root, "proc", NULL);
	R.cgroup = g_build_filename(R.root, "cgroup", NULL);
	R.paths = (struct vr_agent_paths){ R.sysfs, R.procfs, R.cgroup };
	R.writes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	R.ns_per_mib = 1000;
	tree_mkdir(R.sysfs, ".");
	tree_put(R.cgroup, "memory.reclaim", "");
	set_free_rate(300);
	if (with_psi)
		set_psi_some_us(1000);
	R.backend = vr_backend_memcg.open(&R.paths, &error);
	cr_assert_not_null(R.backend, "the backend should open on the fake tree: %s",
			   error ? error->message : "");
	vr_memcg_set_hooks(R.backend, &hooks);
}

static void rig_fini(void)
{
	if (R.backend)
		vr_backend_memcg.close(R.backend);
	g_array_unref(R.writes);
	tree_rm(R.root);
	g_free(R.root);
	g_free(R.sysfs);
	g_free(R.procfs);
	g_free(R.cgroup);
	memset(&R, 0, sizeof(R));
}

static void rig_init_psi(void)
{
	rig_init(true);
}

/* The default policy with its one pageout scheme given @quota's limits and
 * no watermarks. Return: owned. */
static struct vr_policy *policy_with_quota(const struct vr_quota *quota)
{
	g_autoptr(GError) error = NULL;
	struct vr_policy *p = vr_policy_new_profile(NULL, &error);
	struct vr_scheme *s;

	cr_assert_not_null(p, "the default profile: %s", error ? error->message : "");
	s = g_ptr_array_index(p->schemes, 0);
	s->quota = *quota;
	s->wmarks.metric = VR_WMARK_NONE;
	return p;
}

static void apply_ok(const struct vr_policy *p)
{
	g_autoptr(GError) error = NULL;

	cr_assert(vr_backend_memcg.apply_policy(R.backend, p, &error),
		  "the policy should apply: %s", error ? error->message : "");
}

static void apply_quota(const struct vr_quota *quota)
{
	g_autoptr(vr_policy) p = policy_with_quota(quota);

	apply_ok(p);
}

static uint64_t tick(uint64_t now_us)
{
	return vr_backend_memcg.tick(R.backend, now_us);
}

static struct vr_backend_stats stats(void)
{
	struct vr_backend_stats st;
	g_autoptr(GError) error = NULL;

	cr_assert(vr_backend_memcg.read_stats(R.backend, &st, &error), "read_stats");
	return st;
}

/* Asserts that the writes since index @from are exactly @expect (bytes). */
static void assert_writes(const char *what, guint from, const uint64_t *expect, guint nr)
{
	g_autoptr(GString) got = g_string_new(NULL);

	for (guint i = from; i < R.writes->len; i++)
		g_string_append_printf(got, " %" PRIu64, g_array_index(R.writes, uint64_t, i));
	cr_assert_eq(R.writes->len - from, nr, "%s: expected %u writes, got%s", what, nr, got->str);
	for (guint i = 0; i < nr; i++)
		cr_assert_eq(g_array_index(R.writes, uint64_t, from + i), expect[i],
			     "%s: write %u should ask %" PRIu64 " bytes; writes:%s", what, i,
			     expect[i], got->str);
}

/* Ticks at @now_us, then every chunk gap, until the backend waits longer
 * (the window stopped); returns the time of the last tick. */
static uint64_t run_window(uint64_t now_us)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t delay = tick(now_us);

		if (delay != VR_MEMCG_CHUNK_GAP_US)
			return now_us;
		now_us += delay;
	}
	cr_assert_fail("the window never stopped");
	return now_us;
}

/* ------------------------------------------------------------------------- */
/* Pure decisions                                                            */
/* ------------------------------------------------------------------------- */

struct chunk_case {
	char name[48];
	uint64_t budget_left;
	uint64_t throughput_bpms;
	uint64_t expect;
};

static struct chunk_case chunk_cases[] = {
	{ "default throughput: the largest", UINT64_MAX, 4 * MIB, 8 * MIB },
	{ "slow guest: the smallest", UINT64_MAX, 100 * KIB, 2 * MIB },
	{ "nothing measured (0): the smallest", UINT64_MAX, 0, 2 * MIB },
	{ "10 ms at 500 KiB/ms, in pages", UINT64_MAX, 500 * KIB, 5000 * KIB },
	{ "10 ms at 300000 B/ms, pages down", UINT64_MAX, 300000, 3000000 / PG *PG },
	{ "huge throughput", UINT64_MAX, UINT64_MAX, 8 * MIB },
	{ "budget below a chunk", 3 * MIB + 100, 4 * MIB, 3 * MIB },
	{ "budget of one page", PG, 4 * MIB, PG },
	{ "budget below a page", PG - 1, 4 * MIB, 0 },
	{ "no budget", 0, 4 * MIB, 0 },
};

ParameterizedTestParameters(memcg_pure, chunk_bytes)
{
	return cr_make_param_array(struct chunk_case, chunk_cases, G_N_ELEMENTS(chunk_cases));
}

ParameterizedTest(struct chunk_case *c, memcg_pure, chunk_bytes)
{
	uint64_t got = vr_memcg_chunk_bytes(c->budget_left, c->throughput_bpms);

	cr_assert_eq(got, c->expect, "%s: expected %" PRIu64 " bytes, got %" PRIu64, c->name,
		     c->expect, got);
}

Test(memcg_pure, psi_brake)
{
	struct vr_quota one_s = { .sz = MIB, .reset_interval_ms = 1000 };
	struct vr_quota tenth = { .sz = MIB, .reset_interval_ms = 100 };
	struct vr_quota goals = { .sz = MIB, .reset_interval_ms = 1000, .nr_goals = 3 };

	goals.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 5000, 0 };
	goals.goals[1] = (struct vr_quota_goal){ VR_GOAL_USER_INPUT, 10, 0 };
	goals.goals[2] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 3000, 0 };
	cr_assert_eq(vr_memcg_psi_brake_us(&one_s), 10000, "1%% of 1 s is 10000 us, got %" PRIu64,
		     vr_memcg_psi_brake_us(&one_s));
	cr_assert_eq(vr_memcg_psi_brake_us(&tenth), 1000, "1%% of 100 ms is 1000 us");
	cr_assert_eq(vr_memcg_psi_brake_us(&goals), 3000,
		     "the smallest some_mem_psi_us target, got %" PRIu64,
		     vr_memcg_psi_brake_us(&goals));
}

/* ------------------------------------------------------------------------- */
/* Probe and open                                                            */
/* ------------------------------------------------------------------------- */

Test(memcg_probe, needs_memory_reclaim)
{
	g_autofree char *root = tree_new();
	struct vr_agent_paths paths = { root, root, root };
	g_autoptr(GError) error = NULL;

	cr_assert_not(vr_backend_memcg.probe(&paths, &error), "no memory.reclaim: unusable");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED),
		  "expected VR_AGENT_ERROR_UNSUPPORTED");
	cr_assert(strstr(error->message, root) && strstr(error->message, "memory.reclaim"),
		  "the error should name the path, got: %s", error->message);
	g_clear_error(&error);
	cr_assert_null(vr_backend_memcg.open(&paths, &error), "open should fail the same way");
	cr_assert(strstr(error->message, "memory.reclaim"), "open's error: %s", error->message);
	g_clear_error(&error);
	tree_put(root, "memory.reclaim", "");
	cr_assert(vr_backend_memcg.probe(&paths, &error), "with the file: usable (%s)",
		  error ? error->message : "");
	cr_assert_str_eq(vr_backend_memcg.name, "memcg", "the backend's name");
	tree_rm(root);
}

/* ------------------------------------------------------------------------- */
/* Windows and budgets                                                       */
/* ------------------------------------------------------------------------- */

TestSuite(memcg_window, .init = rig_init_psi, .fini = rig_fini);

Test(memcg_window, size_quota_per_window)
{
	/* 20 MiB per 1 s: 8 + 8 + 4 MiB, then wait for the next window */
	static const uint64_t window[] = { 8 * MIB, 8 * MIB, 4 * MIB };
	struct vr_quota q = { .sz = 20 * MIB, .reset_interval_ms = 1000 };
	struct vr_backend_stats st;
	uint64_t t, delay;

	apply_quota(&q);
	cr_assert_eq(tick(0), VR_MEMCG_CHUNK_GAP_US, "a chunk with budget left: the chunk gap");
	cr_assert_eq(tick(1 * MS), VR_MEMCG_CHUNK_GAP_US, "second chunk");
	delay = tick(2 * MS);
	cr_assert_eq(delay, 998 * MS,
		     "the budget is used: wait for the window's end (998 ms), got %" PRIu64, delay);
	assert_writes("first window", 0, window, 3);
	cr_assert_eq(tick(500 * MS), 500 * MS, "mid-window: nothing, wait the rest");
	assert_writes("still the first window", 0, window, 3);
	st = stats();
	cr_assert_eq(st.qt_exceeds, 0, "exceeded windows count when they close");

	t = run_window(1 * S);
	assert_writes("second window", 3, window, 3);
	cr_assert_eq(t, 1 * S + 2 * MS, "three ticks in the second window");
	st = stats();
	cr_assert_eq(st.qt_exceeds, 1, "the first window used its budget: 1, got %" PRIu64,
		     st.qt_exceeds);
	cr_assert(st.nr_tried == 6 && st.sz_tried == 40 * MIB && st.nr_applied == 6 &&
			  st.sz_applied == 40 * MIB,
		  "tried/applied: expected 6 writes of 40 MiB, got %" PRIu64 "/%" PRIu64 " %" PRIu64
		  "/%" PRIu64,
		  st.nr_tried, st.sz_tried, st.nr_applied, st.sz_applied);
}

Test(memcg_window, time_quota_through_measured_throughput)
{
	/*
	 * 10 ms per window, writes cost 1 ms per MiB (1 MiB/ms). The first
	 * window assumes 4 MiB/ms: 40 MiB = 5 x 8 MiB. The second one knows
	 * 40 MiB took 40 ms: 10 MiB = 8 + 2 MiB (chunks: 10 ms at 1 MiB/ms,
	 * capped at 8 MiB).
	 */
	static const uint64_t first[] = { 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB };
	static const uint64_t second[] = { 8 * MIB, 2 * MIB };
	struct vr_quota q = { .ms = 10, .reset_interval_ms = 1000 };

	R.ns_per_mib = 1000000;
	apply_quota(&q);
	run_window(0);
	assert_writes("first window at the assumed 4 MiB/ms", 0, first, 5);
	run_window(1 * S);
	assert_writes("second window at the measured 1 MiB/ms", 5, second, 2);
}

Test(memcg_window, slow_writes_make_small_chunks)
{
	/* 100 KiB/ms measured: chunks of the 2 MiB minimum */
	static const uint64_t expect[] = { 8 * MIB, 2 * MIB, 2 * MIB };
	struct vr_quota q = { .sz = 12 * MIB, .reset_interval_ms = 1000 };

	R.ns_per_mib = 10240000; /* 10.24 ms per MiB */
	apply_quota(&q);
	run_window(0);
	assert_writes("8 MiB at the assumed speed, then 2 MiB chunks", 0, expect, 3);
}

Test(memcg_window, no_quota_gets_the_default_cap)
{
	struct vr_quota none = { 0 };
	uint64_t total = 0;

	apply_quota(&none);
	run_window(0);
	for (guint i = 0; i < R.writes->len; i++)
		total += g_array_index(R.writes, uint64_t, i);
	cr_assert_eq(
		total, VR_MEMCG_DEFAULT_SZ_BYTES,
		"a scheme without quota should reclaim the default cap per window, got %" PRIu64,
		total);
	cr_assert_eq(tick(10 * MS), VR_MEMCG_DEFAULT_WINDOW_MS * MS - 10 * MS,
		     "then wait for the default window's end");
}

Test(memcg_window, eagain_ends_the_window)
{
	static const uint64_t expect[] = { 8 * MIB, 8 * MIB };
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000 };
	struct vr_backend_stats st;

	R.fail_from = 2;
	R.fail_until = 2;
	R.fail_errno = EAGAIN;
	apply_quota(&q);
	cr_assert_eq(tick(0), VR_MEMCG_CHUNK_GAP_US, "first chunk");
	cr_assert_eq(tick(1 * MS), 999 * MS, "EAGAIN: wait for the next window");
	cr_assert_eq(tick(2 * MS), 998 * MS, "still waiting");
	assert_writes("until EAGAIN", 0, expect, 2);
	st = stats();
	cr_assert(st.nr_tried == 2 && st.sz_tried == 16 * MIB,
		  "both writes were tried: got %" PRIu64 " / %" PRIu64, st.nr_tried, st.sz_tried);
	cr_assert(st.nr_applied == 1 && st.sz_applied == 8 * MIB,
		  "an EAGAIN write counts 0 applied: got %" PRIu64 " / %" PRIu64, st.nr_applied,
		  st.sz_applied);
	tick(1 * S);
	cr_assert_eq(R.writes->len, 3, "the next window reclaims again");
	cr_assert_eq(stats().qt_exceeds, 0, "a window ended by EAGAIN did not use its budget");
}

Test(memcg_window, other_errors_end_the_window_and_retry_next)
{
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000 };

	R.fail_from = 1;
	R.fail_errno = EINVAL;
	apply_quota(&q);
	cr_assert_eq(tick(0), 1 * S, "a failed write: wait for the next window");
	cr_assert_eq(tick(1 * MS), 999 * MS, "no retry within the window");
	cr_assert_eq(R.writes->len, 1, "one write tried");
	R.fail_from = 0;
	cr_assert_eq(tick(1 * S), VR_MEMCG_CHUNK_GAP_US, "the next window works");
	cr_assert_eq(R.writes->len, 2, "and writes");
}

Test(memcg_window, cpu_time_of_the_writes)
{
	struct vr_quota q = { .sz = 24 * MIB, .reset_interval_ms = 1000 };

	R.cpu_ns_per_write = 2500;
	apply_quota(&q);
	run_window(0);
	cr_assert_eq(R.writes->len, 3, "three writes");
	cr_assert_eq(stats().reclaimer_cpu_us, 7, "3 x 2.5 us of thread CPU, got %" PRIu64,
		     stats().reclaimer_cpu_us);
}

Test(memcg_window, read_regions_appends_none)
{
	g_autoptr(GArray) regions = g_array_new(FALSE, FALSE, sizeof(struct vr_picture_region));
	g_autoptr(GError) error = NULL;

	cr_assert(vr_backend_memcg.read_regions(R.backend, 10, regions, &error), "read_regions");
	cr_assert_eq(regions->len, 0, "no access picture without DAMON");
}

/* ------------------------------------------------------------------------- */
/* The PSI brake and the goal                                                */
/* ------------------------------------------------------------------------- */

TestSuite(memcg_psi, .init = rig_init_psi, .fini = rig_fini);

Test(memcg_psi, brake_stops_the_window)
{
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000 };

	apply_quota(&q); /* brake: 1% of 1 s = 10000 us of stall */
	cr_assert_eq(tick(0), VR_MEMCG_CHUNK_GAP_US, "first chunk");
	set_psi_some_us(1000 + 10000); /* exactly the brake: goes on */
	cr_assert_eq(tick(1 * MS), VR_MEMCG_CHUNK_GAP_US, "a stall of exactly the brake is fine");
	set_psi_some_us(1000 + 10001);
	cr_assert_eq(tick(2 * MS), 998 * MS, "over the brake: wait for the next window");
	cr_assert_eq(R.writes->len, 2, "no write once braked");
	set_psi_some_us(1000 + 10002);
	tick(3 * MS);
	cr_assert_eq(R.writes->len, 2, "still braked in the same window");
	cr_assert_eq(tick(1 * S), VR_MEMCG_CHUNK_GAP_US, "the next window starts over");
	cr_assert_eq(R.writes->len, 3, "and writes (the stall is counted from its start)");
	cr_assert_eq(stats().qt_exceeds, 0, "a braked window did not use its budget");
}

/* A some_mem_psi_us goal of @target_us per window, sz 64 MiB. */
static void apply_psi_goal(uint64_t target_us)
{
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000, .nr_goals = 1 };

	q.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, target_us, 0 };
	apply_quota(&q);
}

/* Runs windows @first..@last (1 s each, window w starts at (w - 1) s) with
 * no stall; each must write its whole esz, 2^w bytes (at least a page). */
static void run_growing_windows(guint first, guint last)
{
	for (guint w = first; w <= last; w++) {
		guint before = R.writes->len;
		uint64_t expect = MAX(1ULL << w, PG), total = 0;

		run_window((w - 1) * S);
		for (guint i = before; i < R.writes->len; i++)
			total += g_array_index(R.writes, uint64_t, i);
		cr_assert_eq(total, expect,
			     "window %u: the tuner's esz is %" PRIu64 ", got %" PRIu64
			     " in %u writes",
			     w, expect, total, R.writes->len - before);
	}
}

Test(memcg_psi, goal_feeds_the_quota_tuner)
{
	/*
	 * The tuner starts at 1 byte and doubles while the stall stays under
	 * the goal: esz is a page until 2^12 bytes, then 8 KiB, 16 KiB, ...
	 * A window that stalls twice the goal drops it to its minimum: a page.
	 */
	apply_psi_goal(5000);
	run_growing_windows(1, 16);
	set_psi_some_us(1000 + 10000); /* during window 16 */
	run_window(16 * S);
	cr_assert_eq(g_array_index(R.writes, uint64_t, 16), PG,
		     "window 17 after a stall of twice the goal: one page, got %" PRIu64,
		     g_array_index(R.writes, uint64_t, 16));
	run_window(17 * S);
	cr_assert_eq(g_array_index(R.writes, uint64_t, 17), PG,
		     "window 18, no stall: the tuner grows again from its minimum (2 bytes)");
}

Test(memcg_psi, goal_target_is_the_brake)
{
	guint before;

	/* grow to 2^26 = 64 MiB (the sz cap): 8 chunks of 8 MiB per window */
	apply_psi_goal(5000);
	run_growing_windows(1, 25);
	before = R.writes->len;
	cr_assert_eq(tick(25 * S), VR_MEMCG_CHUNK_GAP_US, "window 26: first chunk");
	cr_assert_eq(g_array_index(R.writes, uint64_t, before), 8 * MIB, "a whole chunk");
	set_psi_some_us(1000 + 5000);
	cr_assert_eq(tick(25 * S + 1 * MS), VR_MEMCG_CHUNK_GAP_US, "5000 us: at the goal, goes on");
	set_psi_some_us(1000 + 5001);
	cr_assert_eq(tick(25 * S + 2 * MS), 998 * MS, "5001 us: over the goal, braked");
	cr_assert_eq(R.writes->len - before, 2, "two chunks before the brake");
}

/* /proc/vmstat with @pages refaulted (split between anon and file). */
static void set_refaulted_pages(uint64_t pages)
{
	g_autofree char *text = g_strdup_printf("pswpout 0\nworkingset_refault_anon %" PRIu64
						"\nworkingset_refault_file %" PRIu64 "\n",
						pages / 2, pages - pages / 2);

	tree_put(R.procfs, "vmstat", text);
}

Test(memcg_psi, refault_goal_feeds_the_quota_tuner)
{
	/* a refault_bytes goal of 64 pages per window, with a PSI goal that
	 * never fires: the tuner follows the higher score, the refaults */
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000, .nr_goals = 2 };

	q.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 1000000, 0 };
	q.goals[1] = (struct vr_quota_goal){ VR_GOAL_REFAULT_BYTES, 64 * PG, 0 };
	set_refaulted_pages(1000);
	apply_quota(&q);
	run_growing_windows(1, 16);
	set_refaulted_pages(1000 + 128); /* twice the goal during window 16 */
	run_window(16 * S);
	cr_assert_eq(g_array_index(R.writes, uint64_t, 16), PG,
		     "window 17 after refaults of twice the goal: one page, got %" PRIu64,
		     g_array_index(R.writes, uint64_t, 16));
}

static void rig_init_no_psi(void)
{
	rig_init(false);
}

TestSuite(memcg_no_psi, .init = rig_init_no_psi, .fini = rig_fini);

Test(memcg_no_psi, goal_is_unsupported)
{
	struct vr_quota q = { .sz = MIB, .reset_interval_ms = 1000, .nr_goals = 1 };
	g_autoptr(vr_policy) p = NULL;
	g_autoptr(GError) error = NULL;

	q.goals[0] = (struct vr_quota_goal){ VR_GOAL_SOME_MEM_PSI_US, 5000, 0 };
	p = policy_with_quota(&q);
	cr_assert_not(vr_backend_memcg.apply_policy(R.backend, p, &error),
		      "a PSI goal without PSI cannot be honoured");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED) &&
			  strstr(error->message, "damon-reclaim") &&
			  strstr(error->message, "pressure/memory"),
		  "expected an unsupported error naming the scheme and the file, got: %s",
		  error->message);
}

Test(memcg_no_psi, no_brake)
{
	struct vr_quota q = { .sz = 24 * MIB, .reset_interval_ms = 1000 };

	apply_quota(&q);
	run_window(0);
	cr_assert_eq(R.writes->len, 3, "without PSI the window runs to its budget");
}

/* ------------------------------------------------------------------------- */
/* Watermarks, pause and resume, policies                                    */
/* ------------------------------------------------------------------------- */

TestSuite(memcg_control, .init = rig_init_psi, .fini = rig_fini);

Test(memcg_control, watermarks_gate)
{
	/* the profile's watermarks: every 5 s, high 500, mid 400, low 200 */
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) p = vr_policy_new_profile(NULL, &error);
	struct vr_scheme *s = g_ptr_array_index(p->schemes, 0);

	s->quota = (struct vr_quota){ .sz = 8 * MIB, .reset_interval_ms = 1000 };
	set_free_rate(450); /* between mid and high, inactive: stays inactive */
	apply_ok(p);
	cr_assert_eq(tick(0), 5 * S, "inactive: wait for the next check (5 s)");
	cr_assert_eq(tick(1 * S), 4 * S, "no check before its time");
	cr_assert_eq(R.writes->len, 0, "no reclaim while inactive");
	set_free_rate(300); /* between low and mid: active */
	cr_assert_eq(tick(5 * S), 1 * S, "active: a window of 8 MiB, one chunk, wait 1 s");
	cr_assert_eq(R.writes->len, 1, "reclaims once active");
	set_free_rate(450); /* active stays active up to high */
	tick(10 * S);
	cr_assert_eq(R.writes->len, 2, "still active at 450 (<= high)");
	set_free_rate(501); /* above high: no need */
	cr_assert_eq(tick(15 * S), 5 * S, "above high: inactive");
	cr_assert_eq(R.writes->len, 2, "no reclaim above high");
	set_free_rate(300);
	tick(20 * S);
	cr_assert_eq(R.writes->len, 3, "active again");
	set_free_rate(199); /* below low: step aside for the kernel */
	tick(25 * S);
	cr_assert_eq(R.writes->len, 3, "no reclaim below low");
}

Test(memcg_control, watermarks_cut_a_window_short)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) p = vr_policy_new_profile(NULL, &error);
	struct vr_scheme *s = g_ptr_array_index(p->schemes, 0);

	s->quota = (struct vr_quota){ .sz = 64 * MIB, .reset_interval_ms = 10000 };
	s->wmarks.interval_us = 2 * MS;
	apply_ok(p); /* free rate 300: active */
	cr_assert_eq(tick(0), VR_MEMCG_CHUNK_GAP_US, "first chunk");
	cr_assert_eq(tick(1 * MS), VR_MEMCG_CHUNK_GAP_US, "second chunk");
	set_free_rate(600);
	cr_assert_eq(tick(2 * MS), 2 * MS, "the check at 2 ms deactivates");
	cr_assert_eq(R.writes->len, 2, "two chunks before");
}

Test(memcg_control, pause_and_resume)
{
	struct vr_quota q = { .sz = 64 * MIB, .reset_interval_ms = 1000 };
	g_autoptr(GError) error = NULL;

	apply_quota(&q);
	tick(0);
	cr_assert(vr_backend_memcg.pause(R.backend, &error), "pause");
	cr_assert_eq(tick(1 * MS), VR_MEMCG_IDLE_TICK_US, "paused: idle");
	tick(2 * S);
	cr_assert_eq(R.writes->len, 1, "no reclaim while paused");
	cr_assert(vr_backend_memcg.resume(R.backend, &error), "resume");
	cr_assert_eq(tick(2 * S), VR_MEMCG_CHUNK_GAP_US, "resumed: a new window reclaims");
	cr_assert_eq(R.writes->len, 2, "one more write");
}

Test(memcg_control, resume_within_a_window_keeps_its_budget)
{
	struct vr_quota q = { .sz = 16 * MIB, .reset_interval_ms = 1000 };
	g_autoptr(GError) error = NULL;

	apply_quota(&q);
	tick(0);
	vr_backend_memcg.pause(R.backend, &error);
	vr_backend_memcg.resume(R.backend, &error);
	run_window(1 * MS);
	cr_assert_eq(R.writes->len, 2, "pause/resume does not refill the window: 8 + 8 MiB");
}

Test(memcg_control, idle_without_policy_or_scheme)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(vr_policy) p = vr_policy_new_profile(NULL, &error);

	cr_assert_eq(tick(0), VR_MEMCG_IDLE_TICK_US, "no policy yet: idle");
	g_ptr_array_set_size(p->schemes, 0);
	apply_ok(p);
	cr_assert_eq(tick(1 * S), VR_MEMCG_IDLE_TICK_US, "no scheme: idle");
	cr_assert_eq(R.writes->len, 0, "nothing reclaimed");
}

Test(memcg_control, rejects_actions_other_than_pageout)
{
	struct vr_quota q = { .sz = 8 * MIB, .reset_interval_ms = 1000 };
	g_autoptr(vr_policy) p = policy_with_quota(&q);
	g_autoptr(GError) error = NULL;

	g_ptr_array_add(p->schemes, vr_scheme_new("warm-up", VR_ACTION_WILLNEED));
	cr_assert_not(vr_backend_memcg.apply_policy(R.backend, p, &error),
		      "a willneed scheme cannot be done with memory.reclaim");
	cr_assert(g_error_matches(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID),
		  "expected VR_AGENT_ERROR_INVALID");
	cr_assert(strstr(error->message, "warm-up") && strstr(error->message, "willneed"),
		  "the error should name the scheme and its action, got: %s", error->message);
	cr_assert_eq(tick(0), VR_MEMCG_IDLE_TICK_US, "a refused policy changes nothing");
}

Test(memcg_control, a_refused_update_keeps_the_running_scheme)
{
	struct vr_quota q = { .sz = 8 * MIB, .reset_interval_ms = 1000 };
	g_autoptr(vr_policy) bad = policy_with_quota(&q);
	g_autoptr(GError) error = NULL;

	apply_quota(&q);
	((struct vr_scheme *)g_ptr_array_index(bad->schemes, 0))->action = VR_ACTION_COLD;
	cr_assert_not(vr_backend_memcg.apply_policy(R.backend, bad, &error), "cold is refused");
	cr_assert(strstr(error->message, "damon-reclaim") && strstr(error->message, "cold"),
		  "naming the scheme: %s", error->message);
	tick(0);
	cr_assert_eq(R.writes->len, 1, "the previous scheme still runs");
}

Test(memcg_control, an_update_of_the_same_scheme_keeps_its_window)
{
	struct vr_quota q = { .sz = 16 * MIB, .reset_interval_ms = 1000 };
	struct vr_quota bigger = { .sz = 64 * MIB, .reset_interval_ms = 1000 };

	apply_quota(&q);
	run_window(0);
	cr_assert_eq(R.writes->len, 2, "16 MiB: two chunks");
	apply_quota(&bigger);
	tick(500 * MS);
	cr_assert_eq(R.writes->len, 2, "the window's budget holds until it ends");
	run_window(1 * S);
	cr_assert_eq(R.writes->len, 10, "the next window has 64 MiB: eight chunks");
}

/* ------------------------------------------------------------------------- */
/* Explicit reclaim                                                          */
/* ------------------------------------------------------------------------- */

TestSuite(memcg_reclaim, .init = rig_init_psi, .fini = rig_fini);

static uint64_t reclaim_ok(uint64_t bytes, uint64_t deadline_ms)
{
	g_autoptr(GError) error = NULL;
	uint64_t done = 12345;

	cr_assert(vr_backend_memcg.reclaim(R.backend, bytes, deadline_ms, &done, &error),
		  "reclaim(%" PRIu64 ", %" PRIu64 " ms) should work: %s", bytes, deadline_ms,
		  error ? error->message : "");
	return done;
}

Test(memcg_reclaim, stops_at_bytes)
{
	static const uint64_t expect[] = { 8 * MIB, 8 * MIB, 4 * MIB };
	uint64_t done = reclaim_ok(20 * MIB, 1000);

	cr_assert_eq(done, 20 * MIB, "20 MiB asked, 20 MiB reclaimed, got %" PRIu64, done);
	assert_writes("20 MiB", 0, expect, 3);
	cr_assert_eq(stats().sz_applied, 20 * MIB, "counted in the stats");
}

Test(memcg_reclaim, whole_pages_only)
{
	static const uint64_t expect[] = { 8 * MIB };

	cr_assert_eq(reclaim_ok(8 * MIB + 100, 1000), 8 * MIB, "the sub-page rest is not asked");
	assert_writes("8 MiB + 100", 0, expect, 1);
}

Test(memcg_reclaim, stops_at_the_deadline)
{
	/* 1 ms per MiB: 8 MiB (8 ms), 8 MiB (16 ms >= 10 ms): stop */
	static const uint64_t expect[] = { 8 * MIB, 8 * MIB };

	R.ns_per_mib = 1000000;
	cr_assert_eq(reclaim_ok(100 * MIB, 10), 16 * MIB, "two chunks before the deadline");
	assert_writes("deadline 10 ms", 0, expect, 2);
	cr_assert_eq(reclaim_ok(100 * MIB, 0), 0, "a deadline of 0 ms leaves no time");
	cr_assert_eq(R.writes->len, 2, "no write with no time");
}

Test(memcg_reclaim, stops_at_eagain)
{
	struct vr_backend_stats st;

	R.fail_from = 3;
	R.fail_errno = EAGAIN;
	cr_assert_eq(reclaim_ok(100 * MIB, 1000), 16 * MIB,
		     "two chunks reclaimed; the EAGAIN one counts 0");
	cr_assert_eq(R.writes->len, 3, "no write after EAGAIN");
	st = stats();
	cr_assert(st.nr_tried == 3 && st.nr_applied == 2 && st.sz_applied == 16 * MIB,
		  "stats: 3 tried, 2 applied, 16 MiB");
}

Test(memcg_reclaim, runs_while_paused_and_outside_the_quota)
{
	struct vr_quota q = { .sz = 8 * MIB, .reset_interval_ms = 1000 };
	g_autoptr(GError) error = NULL;

	apply_quota(&q);
	vr_backend_memcg.pause(R.backend, &error);
	cr_assert_eq(reclaim_ok(16 * MIB, 1000), 16 * MIB, "an explicit request runs when paused");
	vr_backend_memcg.resume(R.backend, &error);
	tick(0);
	cr_assert_eq(R.writes->len, 3, "and leaves the window's budget alone");
	cr_assert_eq(g_array_index(R.writes, uint64_t, 2), 8 * MIB, "the window's 8 MiB");
}

Test(memcg_reclaim, other_errors_name_the_file)
{
	g_autoptr(GError) error = NULL;
	uint64_t done = 0;

	R.fail_from = 2;
	R.fail_errno = EINVAL;
	cr_assert_not(vr_backend_memcg.reclaim(R.backend, 100 * MIB, 1000, &done, &error),
		      "a refused write fails the request");
	cr_assert_eq(done, 8 * MIB, "what was done before is reported");
	cr_assert(strstr(error->message, "memory.reclaim") && strstr(error->message, R.cgroup),
		  "the error should name the file, got: %s", error->message);
}

/* ------------------------------------------------------------------------- */
/* The real write path                                                       */
/* ------------------------------------------------------------------------- */

TestSuite(memcg_real, .init = rig_init_psi, .fini = rig_fini);

/* The rig's hooks without the write hook: vr_kfile_write_errno() writes. */
static void real_writes(void)
{
	struct vr_memcg_hooks hooks = { .now_ns = fake_now_ns, .cpu_ns = fake_cpu_ns, .data = &R };

	vr_memcg_set_hooks(R.backend, &hooks);
}

Test(memcg_real, writes_the_byte_count)
{
	struct vr_quota q = { .sz = 12 * MIB, .reset_interval_ms = 1000 };
	g_autofree char *first = NULL;
	g_autofree char *second = NULL;

	real_writes();
	apply_quota(&q);
	tick(0);
	first = tree_get(R.cgroup, "memory.reclaim");
	cr_assert_str_eq(first, "8388608", "the first chunk in decimal bytes");
	tree_put(R.cgroup, "memory.reclaim", "");
	tick(1 * MS);
	second = tree_get(R.cgroup, "memory.reclaim");
	cr_assert_str_eq(second, "4194304", "the rest of the budget");
}

Test(memcg_real, enospc_names_the_file)
{
	g_autoptr(GError) error = NULL;
	uint64_t done = 1;

	if (!g_file_test("/dev/full", G_FILE_TEST_EXISTS))
		cr_skip_test("no /dev/full here");
	real_writes();
	tree_unlink(R.cgroup, "memory.reclaim");
	tree_symlink(R.cgroup, "memory.reclaim", "/dev/full");
	cr_assert_not(vr_backend_memcg.reclaim(R.backend, 4 * MIB, 1000, &done, &error),
		      "ENOSPC fails the request");
	cr_assert_eq(done, 0, "nothing reclaimed");
	cr_assert(strstr(error->message, "memory.reclaim") && strstr(error->message, R.cgroup) &&
			  msg_has_any(error->message, "space"),
		  "the error should name the file and the reason, got: %s", error->message);
}

Test(memcg_real, a_missing_file_names_it)
{
	g_autoptr(GError) error = NULL;
	uint64_t done = 1;

	real_writes();
	tree_unlink(R.cgroup, "memory.reclaim");
	cr_assert_not(vr_backend_memcg.reclaim(R.backend, 4 * MIB, 1000, &done, &error),
		      "a missing file fails the request");
	cr_assert(strstr(error->message, "memory.reclaim") && strstr(error->message, R.cgroup),
		  "the error should name the file, got: %s", error->message);
}
