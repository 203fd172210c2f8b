/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the host daemon's procfs parsers (common/procfs-text.c):
 * /proc/<pid>/status, smaps_rollup and stat, on the fixtures under
 * tests/data/procfs, on bad texts (tables) and on this process's own files;
 * and of the host's /proc/meminfo and /proc/pressure/memory fixtures through
 * the shared parsers (common/procfs-text.c). Parameter structs hold no
 * pointers (Criterion re-executes the binary for each test).
 */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glib.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "procfs-text.h"
#include "test-messages.h"

#define KIB 1024ULL

/* The kernel's procfs: these tests read this process's own files there. */
#define PROCFS_ROOT "/proc"

/* The fixture tests/data/procfs/@name: owned text. */
static char *fixture(const char *name)
{
	g_autofree char *path = g_build_filename(VR_TEST_DATA_DIR, "procfs", name, NULL);
	g_autoptr(GError) error = NULL;
	char *text = NULL;

	cr_assert(g_file_get_contents(path, &text, NULL, &error), "cannot read the fixture %s: %s",
		  path, error ? error->message : "?");
	return text;
}

/* Does @error say the text is invalid, naming @path and one of @names? */
static void expect_invalid(const GError *error, const char *path, const char *names,
			   const char *what)
{
	cr_assert_not_null(error, "%s: expected an error", what);
	cr_assert(g_error_matches(error, VR_PROCFS_TEXT_ERROR, VR_PROCFS_TEXT_ERROR_INVALID),
		  "%s: expected VR_PROCFS_TEXT_ERROR_INVALID, got: %s", what, error->message);
	cr_assert(strstr(error->message, path), "%s: the error should name the file %s, got: %s",
		  what, path, error->message);
	cr_assert(msg_has_any(error->message, names), "%s: the error should name %s, got: %s", what,
		  names, error->message);
}

/* ---- /proc/<pid>/status ---- */

TestSuite(proc_status, .description = "/proc/<pid>/status");

Test(proc_status, parses_a_qemu_process)
{
	g_autofree char *text = fixture("qemu-status");
	g_autoptr(GError) error = NULL;
	struct vr_proc_status st;

	cr_assert(vr_proc_status_parse(text, "qemu-status", &st, &error),
		  "the fixture should parse: %s", error ? error->message : "");
	cr_assert_eq(st.vm_rss_bytes, 534112 * KIB, "VmRSS: expected 534112 kB, got %" PRIu64,
		     st.vm_rss_bytes);
	cr_assert_eq(st.vm_swap_bytes, 20480 * KIB, "VmSwap: expected 20480 kB, got %" PRIu64,
		     st.vm_swap_bytes);
}

Test(proc_status, vm_size_of_a_qemu_process)
{
	g_autofree char *text = fixture("qemu-status");
	g_autofree char *kthread = fixture("kthread-status");
	g_autoptr(GError) error = NULL;
	uint64_t bytes = 1;

	cr_assert(vr_proc_status_vm_size_parse(text, "qemu-status", &bytes, &error),
		  "the fixture should parse: %s", error ? error->message : "");
	cr_assert_eq(bytes, 2987880 * KIB, "VmSize: expected 2987880 kB, got %" PRIu64, bytes);
	bytes = 77;
	cr_assert_not(vr_proc_status_vm_size_parse(kthread, "kthread-status", &bytes, &error),
		      "a kernel thread has no VmSize");
	expect_invalid(error, "kthread-status", "VmSize", "kernel thread");
	cr_assert_eq(bytes, 77, "a failed parse must leave the output alone");
}

Test(proc_status, a_kernel_thread_has_no_memory_fields)
{
	g_autofree char *text = fixture("kthread-status");
	g_autoptr(GError) error = NULL;
	struct vr_proc_status st = { .vm_rss_bytes = 77 };

	cr_assert_not(vr_proc_status_parse(text, "kthread-status", &st, &error),
		      "a kernel thread's status has no VmRSS: should be rejected");
	expect_invalid(error, "kthread-status", "VmRSS", "kernel thread");
	cr_assert_eq(st.vm_rss_bytes, 77, "a failed parse must leave the output alone");
}

Test(proc_status, parses_this_process)
{
	g_autofree char *path = g_build_filename(PROCFS_ROOT, "self", "status", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;
	struct vr_proc_status st;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		cr_skip_test("no procfs at %s", PROCFS_ROOT);
	cr_assert(vr_proc_status_parse(text, path, &st, &error),
		  "this process's status should parse: %s", error ? error->message : "");
	cr_assert(st.vm_rss_bytes > 0, "a running process has a resident size");
}

/* A bad text and a word the message must hold ('|' separates choices). */
struct bad_text {
	char name[40];
	char text[400];
	char names[40];
};

#define STATUS_RSS "Name:\tqemu\nVmRSS:\t    1832 kB\n"

static struct bad_text bad_statuses[] = {
	{ "empty", "", "VmRSS" },
	{ "no VmSwap", STATUS_RSS, "VmSwap" },
	{ "VmRSS twice", STATUS_RSS "VmRSS:\t 1 kB\nVmSwap:\t0 kB\n", "VmRSS" },
	{ "VmRSS not a number", "VmRSS:\t abc kB\nVmSwap:\t0 kB\n", "VmRSS" },
	{ "VmSwap in MB", STATUS_RSS "VmSwap:\t 12 MB\n", "VmSwap" },
	{ "VmSwap negative", STATUS_RSS "VmSwap:\t -12 kB\n", "VmSwap" },
	{ "VmRSS too large", "VmRSS:\t 18014398509481984 kB\nVmSwap:\t0 kB\n", "VmRSS" },
};

ParameterizedTestParameters(proc_status, rejects)
{
	return cr_make_param_array(struct bad_text, bad_statuses, G_N_ELEMENTS(bad_statuses));
}

ParameterizedTest(struct bad_text *c, proc_status, rejects)
{
	g_autoptr(GError) error = NULL;
	struct vr_proc_status st = { .vm_swap_bytes = 77 };

	cr_assert_not(vr_proc_status_parse(c->text, "pid-status", &st, &error),
		      "%s: should be rejected", c->name);
	expect_invalid(error, "pid-status", c->names, c->name);
	cr_assert_eq(st.vm_swap_bytes, 77, "%s: a failed parse must leave the output alone",
		     c->name);
}

/* ---- /proc/<pid>/smaps_rollup ---- */

TestSuite(smaps_rollup, .description = "/proc/<pid>/smaps_rollup");

Test(smaps_rollup, parses_a_qemu_process)
{
	g_autofree char *text = fixture("qemu-smaps_rollup");
	g_autoptr(GError) error = NULL;
	struct vr_smaps_rollup r;

	cr_assert(vr_smaps_rollup_parse(text, "qemu-smaps_rollup", &r, &error),
		  "the fixture should parse: %s", error ? error->message : "");
	cr_assert_eq(r.rss_bytes, 534112 * KIB, "Rss: expected 534112 kB, got %" PRIu64,
		     r.rss_bytes);
	cr_assert_eq(r.anonymous_bytes, 510000 * KIB, "Anonymous: expected 510000 kB, got %" PRIu64,
		     r.anonymous_bytes);
	cr_assert_eq(r.swap_bytes, 20480 * KIB, "Swap: expected 20480 kB, got %" PRIu64,
		     r.swap_bytes);
}

Test(smaps_rollup, parses_this_process)
{
	g_autofree char *path = g_build_filename(PROCFS_ROOT, "self", "smaps_rollup", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;
	struct vr_smaps_rollup r;

	if (!g_file_get_contents(path, &text, NULL, NULL))
		cr_skip_test("no %s on this kernel", path);
	cr_assert(vr_smaps_rollup_parse(text, path, &r, &error),
		  "this process's smaps_rollup should parse: %s", error ? error->message : "");
	cr_assert(r.rss_bytes > 0 && r.anonymous_bytes <= r.rss_bytes,
		  "expected 0 < Anonymous <= Rss, got Rss %" PRIu64 " Anonymous %" PRIu64,
		  r.rss_bytes, r.anonymous_bytes);
}

#define ROLLUP_HEADER "5579607ac000-7ffd5e858000 ---p 00000000 00:00 0      [rollup]\n"

static struct bad_text bad_rollups[] = {
	{ "empty", "", "rollup" },
	{ "no header", "Rss: 1 kB\nAnonymous: 1 kB\nSwap: 0 kB\n", "rollup" },
	{ "no Anonymous", ROLLUP_HEADER "Rss: 1 kB\nSwap: 0 kB\n", "Anonymous" },
	{ "Swap twice", ROLLUP_HEADER "Rss: 1 kB\nAnonymous: 1 kB\nSwap: 0 kB\nSwap: 0 kB\n",
	  "Swap" },
	{ "Rss not a number", ROLLUP_HEADER "Rss: 1x kB\nAnonymous: 1 kB\nSwap: 0 kB\n", "Rss" },
	{ "Rss without unit", ROLLUP_HEADER "Rss: 1\nAnonymous: 1 kB\nSwap: 0 kB\n", "Rss" },
};

ParameterizedTestParameters(smaps_rollup, rejects)
{
	return cr_make_param_array(struct bad_text, bad_rollups, G_N_ELEMENTS(bad_rollups));
}

ParameterizedTest(struct bad_text *c, smaps_rollup, rejects)
{
	g_autoptr(GError) error = NULL;
	struct vr_smaps_rollup r = { .rss_bytes = 77 };

	cr_assert_not(vr_smaps_rollup_parse(c->text, "pid-smaps_rollup", &r, &error),
		      "%s: should be rejected", c->name);
	expect_invalid(error, "pid-smaps_rollup", c->names, c->name);
	cr_assert_eq(r.rss_bytes, 77, "%s: a failed parse must leave the output alone", c->name);
}

/* ---- /proc/<pid>/stat ---- */

TestSuite(proc_stat, .description = "/proc/<pid>/stat");

/* At 100 ticks a second a tick is 10000 us. */
#define US_PER_TICK 10000ULL

Test(proc_stat, parses_a_qemu_process)
{
	g_autofree char *text = fixture("qemu-stat");
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s;

	cr_assert(vr_proc_stat_parse(text, "qemu-stat", 100, &s, &error),
		  "the fixture should parse: %s", error ? error->message : "");
	cr_assert_eq(s.pid, 4242, "pid: expected 4242, got %u", s.pid);
	cr_assert_eq(s.cpu_us, (1234 + 567) * US_PER_TICK,
		     "cpu: utime 1234 + stime 567 ticks, expected %llu us, got %" PRIu64,
		     (1234 + 567) * US_PER_TICK, s.cpu_us);
	cr_assert_eq(s.start_time_us, 98765 * US_PER_TICK,
		     "starttime 98765 ticks: expected %llu us, got %" PRIu64, 98765 * US_PER_TICK,
		     s.start_time_us);
}

Test(proc_stat, comm_with_spaces_and_parentheses)
{
	g_autofree char *text = fixture("stat-comm-parens");
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s;

	cr_assert(vr_proc_stat_parse(text, "stat-comm-parens", 100, &s, &error),
		  "a comm 'a) (b c)' should parse: %s", error ? error->message : "");
	cr_assert_eq(s.pid, 77, "pid: expected 77, got %u", s.pid);
	cr_assert_eq(s.cpu_us, 400 * US_PER_TICK,
		     "the fields count from the last ')': expected utime 250 + stime 150 "
		     "ticks, got %" PRIu64 " us",
		     s.cpu_us);
	cr_assert_eq(s.start_time_us, 4000 * US_PER_TICK, "starttime 4000 ticks, got %" PRIu64,
		     s.start_time_us);
}

Test(proc_stat, a_newline_in_comm)
{
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s;
	const char text[] = "9 (x\n) y) S 1 9 9 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 55 0 0\n";

	cr_assert(vr_proc_stat_parse(text, "nl-stat", 1000, &s, &error),
		  "a comm holding a newline should parse: %s", error ? error->message : "");
	cr_assert(
		s.pid == 9 && s.cpu_us == 7000 && s.start_time_us == 55000,
		"expected pid 9, 7000 us of CPU and start 55000 us at 1000 ticks/s, got %u %" PRIu64
		" %" PRIu64,
		s.pid, s.cpu_us, s.start_time_us);
}

Test(proc_stat, parses_this_process)
{
	g_autofree char *path = g_build_filename(PROCFS_ROOT, "self", "stat", NULL);
	g_autofree char *text = NULL;
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s;
	long ticks = sysconf(_SC_CLK_TCK);

	if (!g_file_get_contents(path, &text, NULL, NULL))
		cr_skip_test("no procfs at %s", PROCFS_ROOT);
	cr_assert(vr_proc_stat_parse(text, path, (uint64_t)ticks, &s, &error),
		  "this process's stat should parse: %s", error ? error->message : "");
	cr_assert_eq(s.pid, (uint32_t)getpid(), "pid: expected %d, got %u", (int)getpid(), s.pid);
}

/* Fields 3..13, then utime and stime (14, 15), 16..21, starttime (22), and
 * the rest up to 52. */
#define STAT_HEAD "1 (a b) S 1 1 1 0 -1 4194304 0 0 0 0 "
#define STAT_MID  " 0 0 20 0 1 0 "
#define STAT_REST                                                                                  \
	" 0 0 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
#define STAT_OK(u, s, st) STAT_HEAD u " " s STAT_MID st STAT_REST

static struct bad_text bad_stats[] = {
	{ "empty", "", "comm" },
	{ "no comm", "1 S 1 1 1\n", "comm" },
	{ "comm not closed", "1 (abc S 1 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 7\n", "comm" },
	{ "pid not a number", "x (a) S 1 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 7\n", "pid" },
	{ "pid 0", "0 (a) S 1 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 7\n", "pid" },
	{ "too few fields", "1 (a) S 1 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0\n", "fields" },
	{ "utime not a number", STAT_OK("x", "6", "7"), "field 14" },
	{ "stime negative", STAT_OK("5", "-6", "7"), "stime" },
	{ "starttime too large", STAT_OK("5", "6", "99999999999999999999"), "starttime" },
	{ "cpu overflows", STAT_OK("18446744073709551615", "1", "7"), "utime + stime" },
	{ "cpu overflows us", STAT_OK("18446744073709551615", "0", "7"), "overflows" },
	{ "state two letters", "1 (a) SS 1 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 7\n",
	  "state" },
	{ "double space", "1 (a) S 1  1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 7\n", "field 5" },
	{ "two lines", STAT_OK("5", "6", "7") STAT_OK("5", "6", "7"), "field" },
	{ "comm too long",
	  "1 (aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) S 1 1 1 0 -1 0 0 0 "
	  "0 0 5 6 0 0 20 0 1 0 7\n",
	  "comm" },
};

ParameterizedTestParameters(proc_stat, rejects)
{
	return cr_make_param_array(struct bad_text, bad_stats, G_N_ELEMENTS(bad_stats));
}

ParameterizedTest(struct bad_text *c, proc_stat, rejects)
{
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s = { .cpu_us = 77 };

	cr_assert_not(vr_proc_stat_parse(c->text, "pid-stat", 100, &s, &error),
		      "%s: should be rejected", c->name);
	expect_invalid(error, "pid-stat", c->names, c->name);
	cr_assert_eq(s.cpu_us, 77, "%s: a failed parse must leave the output alone", c->name);
}

Test(proc_stat, rejects_a_bad_clock_tick)
{
	g_autoptr(GError) error = NULL;
	struct vr_proc_stat s;

	cr_assert_not(vr_proc_stat_parse(STAT_OK("5", "6", "7"), "pid-stat", 0, &s, &error),
		      "0 ticks a second should be rejected");
	expect_invalid(error, "pid-stat", "clock tick", "tick 0");
}

/* ---- the host's /proc/meminfo and /proc/pressure/memory ---- */

TestSuite(host_files, .description = "the host's meminfo and memory PSI");

Test(host_files, meminfo_fixture)
{
	g_autofree char *text = fixture("host-meminfo");
	g_autoptr(GError) error = NULL;
	struct vr_meminfo m;

	cr_assert(vr_meminfo_parse(text, &m, &error), "the host's meminfo should parse: %s",
		  error ? error->message : "");
	cr_assert_eq(m.mem_total_bytes, 24683664 * KIB, "MemTotal: expected 24683664 kB");
	cr_assert_eq(m.mem_free_bytes, 23452884 * KIB, "MemFree: expected 23452884 kB");
	cr_assert_eq(m.swap_total_bytes, 0, "SwapTotal: expected 0 (no swap)");
}

Test(host_files, pressure_fixture)
{
	g_autofree char *text = fixture("host-pressure-memory");
	g_autoptr(GError) error = NULL;
	struct vr_psi_memory p;

	cr_assert(vr_psi_parse(text, &p, &error), "the host's memory PSI should parse: %s",
		  error ? error->message : "");
	cr_assert(p.some.avg10_bp == 150 && p.some.total_us == 27834,
		  "some: expected avg10 150 bp and total 27834 us, got %u and %" PRIu64,
		  p.some.avg10_bp, p.some.total_us);
	cr_assert(p.full.avg300_bp == 5 && p.full.total_us == 27297,
		  "full: expected avg300 5 bp and total 27297 us, got %u and %" PRIu64,
		  p.full.avg300_bp, p.full.total_us);
}
