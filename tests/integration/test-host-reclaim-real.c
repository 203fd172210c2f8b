/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host-reclaim for real (hostd/actions/host-pageout.c): a child process stands in
 * for QEMU. It maps 64 MiB of anonymous memory, fills every page with a
 * pattern from the page's index and sends the parent the address. The test
 * makes a RAM map saying guest-physical [0, 64 MiB) is that buffer, and an
 * access source of its own (a scripted picture) in which the first half is
 * hot and the second half cold. With a temporary swap file,
 * vr_host_reclaim_step() pages out the cold half (or its coldest part, up to
 * the quota): smaps shows the cold half leave memory and the hot half stay,
 * pagemap shows which pages left, and the child then reads every page back
 * and checks it.
 *
 * The buffer is one range of addresses but two mappings for smaps: the hot
 * half is MADV_DONTFORK, which splits the mapping without changing how it
 * pages; a PROT_NONE page on either side keeps other mappings from merging.
 *
 * Also, without swap or root: what vr_host_reclaim_new() checks and owns,
 * the errors of each stage naming the guest, and a QEMU process that exits.
 *
 * The swap cases need root (swapon, CAP_SYS_NICE) and are skipped, saying
 * why, when the machine cannot. The swap file is turned off and removed in
 * every path, and the tests check that /proc/swaps is as before.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test-messages.h"
#include "actions/host-pageout.h"
#include "fleet-quota.h"
#include "picture-region.h"
#include "picture.h"
#include "process-pageout.h"
#include "qmp/ram-map.h"
#include "sources/access-source.h"
#include "test-script-source.h"
#include "test-stand-in.h"

#define PAGE 4096ULL
#define MIB  (1ULL << 20)
#define GIB  (1ULL << 30)
/* Each half of the child's memory (guest-physical [0, HALF) hot, the rest
 * cold). */
#define HALF_BYTES  (32 * MIB)
#define GUEST_BYTES (2 * HALF_BYTES)
/* The swap file: the cold half and room to spare. */
#define SWAP_BYTES (96 * MIB)
/* What the kernel may keep or bring back meanwhile: 1/16 of a half. */
#define SLACK_BYTES (HALF_BYTES / 16)

#define GUEST_NAME "guest-under-test"

/* ------------------------------------------------------------------------- */
/* The child: QEMU's stand-in                                                */
/* ------------------------------------------------------------------------- */

/**
 * struct child_report - what the child sends after filling its memory.
 * @base:	the host address of its GUEST_BYTES buffer.
 * @status:	0, or why it could not set up (errno).
 */
struct child_report {
	uint64_t base;
	int32_t status;
};

static void child_fail(int out)
{
	struct child_report r = { .status = errno ? errno : EIO };

	(void)!write(out, &r, sizeof(r));
	_exit(1);
}

/* In the child: the address of its buffer, for the verification. */
static char *child_buffer;

/* In the child: the pages of its buffer that differ from the pattern. */
static uint64_t child_verify_pages(const void *arg)
{
	(void)arg;
	return stand_in_pattern((uint64_t *)child_buffer, 0, GUEST_BYTES / PAGE, TRUE);
}

/* The child's body: one buffer of GUEST_BYTES between PROT_NONE pages, the
 * hot half a mapping of its own (MADV_DONTFORK). */
static void child_body(int in, int out, const void *arg)
{
	struct child_report r = { 0 };
	char *raw, *base;

	(void)arg;
	raw = mmap(NULL, GUEST_BYTES + 2 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		child_fail(out);
	base = raw + PAGE;
	if (mprotect(raw, PAGE, PROT_NONE) != 0 ||
	    mprotect(base + GUEST_BYTES, PAGE, PROT_NONE) != 0 ||
	    madvise(base, GUEST_BYTES, MADV_NOHUGEPAGE) != 0 ||
	    madvise(base, HALF_BYTES, MADV_DONTFORK) != 0)
		child_fail(out);
	stand_in_pattern((uint64_t *)base, 0, GUEST_BYTES / PAGE, FALSE);
	child_buffer = base;
	r.base = (uint64_t)(uintptr_t)base;
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	stand_in_serve(in, out, child_verify_pages, NULL);
}

/* Start the child: the host address of its buffer. */
static uint64_t child_start(void)
{
	struct child_report r;

	stand_in_start(child_body, NULL, &r, sizeof(r));
	cr_assert_eq(r.status, 0, "the child could not set up its memory: %s",
		     g_strerror(r.status));
	cr_assert(r.base % PAGE == 0, "the child's buffer is not page-aligned");
	return r.base;
}

/* ------------------------------------------------------------------------- */
/* Looking at the child's memory                                             */
/* ------------------------------------------------------------------------- */

/* Bytes of the child's [@start, @end) whose pages are in swap (pagemap bit
 * 62: the page table holds a swap entry). */
static uint64_t swapped_bytes(uint64_t start, uint64_t end)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/pagemap", (int)stand_in_pid);
	g_autofree uint64_t *entries = NULL;
	uint64_t nr = (end - start) / PAGE, bytes = 0;
	ssize_t got;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, g_strerror(errno));
	entries = g_new(uint64_t, nr);
	got = pread(fd, entries, nr * sizeof(*entries), (off_t)(start / PAGE * sizeof(*entries)));
	close(fd);
	cr_assert_eq(got, (ssize_t)(nr * sizeof(*entries)), "read %s: %s", path,
		     got < 0 ? g_strerror(errno) : "short read");
	for (uint64_t i = 0; i < nr; i++)
		bytes += (entries[i] >> 62 & 1) ? PAGE : 0;
	return bytes;
}

static void setup(void)
{
	script_log.starts = script_log.stops = script_log.frees = script_log.reads = 0;
	stand_in_setup();
}

/* A reclaim of the child's buffer as guest-physical [0, GUEST_BYTES). */
static struct vr_host_reclaim *reclaim_of_child(uint64_t base, struct vr_access_source *src)
{
	const struct vr_ram_range map[] = { { .gpa = 0, .hva = base, .size = GUEST_BYTES } };
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim *hr;

	hr = vr_host_reclaim_new(GUEST_NAME, stand_in_pid, map, G_N_ELEMENTS(map), GUEST_BYTES, src,
				 &err);
	cr_assert_not_null(hr, "vr_host_reclaim_new: %s", err ? err->message : "");
	return hr;
}

/* ------------------------------------------------------------------------- */
/* Paging out for real                                                       */
/* ------------------------------------------------------------------------- */

/* Swap for the paging cases, root for all (CAP_SYS_NICE). */
TestSuite(host_reclaim_real, .init = setup, .fini = stand_in_teardown);

/*
 * The picture (guest-physical, MiB; hot: 20 of 20 samples; scores under the
 * reclaim scheme):
 *
 *   [0, 32)     hot                        not selected
 *   [32, 48)    0 accesses for 10 s        score 57
 *   [48, 64)    0 accesses for 600 s       score 66  (the coldest)
 *
 * The plan reaches past the quota (VR_HOST_RECLAIM_SCAN_BYTES) to skip what
 * is in swap already: it holds the whole cold half, [48, 64) then [32, 48),
 * two host ranges (adjacent, but in the wrong order to merge). Each row: a
 * quota, the resident bytes advised, in how many runs, and the
 * guest-physical bytes that must leave memory in each of [32, 48) and
 * [48, 64).
 */
struct real_case {
	char name[56];
	uint64_t quota;
	uint64_t want_advised;
	guint want_runs;
	uint64_t want_out_warm; /* of [32, 48) */
	uint64_t want_out_cold; /* of [48, 64) */
};

static struct real_case real_cases[] = {
	/* the runs follow the plan: [48, 64) then [32, 48) */
	{ "no quota: the whole cold half", G_MAXUINT64, HALF_BYTES, 2, 16 * MIB, 16 * MIB },
	{ "a quota of 8 MiB: the coldest 8 MiB", 8 * MIB, 8 * MIB, 1, 0, 8 * MIB },
	{ "20 MiB + 100 bytes: the coldest, then 4 MiB more", 20 * MIB + 100, 20 * MIB, 2, 4 * MIB,
	  16 * MIB },
};

ParameterizedTestParameters(host_reclaim_real, cold_half_leaves_memory)
{
	return cr_make_param_array(struct real_case, real_cases, G_N_ELEMENTS(real_cases));
}

ParameterizedTest(struct real_case *c, host_reclaim_real, cold_half_leaves_memory)
{
	const struct vr_picture_region picture[] = {
		{ 0, HALF_BYTES, 20, 6000 },
		{ HALF_BYTES, HALF_BYTES + 16 * MIB, 0, 100 },
		{ HALF_BYTES + 16 * MIB, GUEST_BYTES, 0, 6000 },
	};
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim_result res;
	struct vr_range_usage cold0, hot0, cold1, hot1;
	uint64_t base, warm_out, cold_out, hot_out;
	char *why;

	why = test_swap_on(&swap, SWAP_BYTES);
	if (why)
		stand_in_skip(g_strdup_printf("%s: no swap for the test: %s", c->name, why));
	cr_assert(test_swap_listed(swap.file), "%s: /proc/swaps lists %s", c->name, swap.file);

	base = child_start();
	hr = reclaim_of_child(base, script_new(picture, G_N_ELEMENTS(picture)));
	cold0 = stand_in_usage(base + HALF_BYTES, HALF_BYTES, "cold");
	hot0 = stand_in_usage(base, HALF_BYTES, "hot");
	cr_assert_geq(cold0.rss_bytes, HALF_BYTES - SLACK_BYTES,
		      "%s: the cold half is resident before (%" G_GUINT64_FORMAT " bytes)", c->name,
		      (guint64)cold0.rss_bytes);

	cr_assert(vr_host_reclaim_step(hr, scheme, c->quota, &res, &err), "%s: step: %s", c->name,
		  err ? err->message : "");
	cr_log_info("%s: %u regions, planned %" G_GUINT64_FORMAT
		    " in %u ranges, advised %" G_GUINT64_FORMAT,
		    c->name, res.picture_regions, (guint64)res.planned_bytes, res.ranges,
		    (guint64)res.advised_bytes);
	cr_assert_eq(res.picture_regions, 3, "%s: the picture has 3 regions", c->name);
	cr_assert_eq(res.planned_bytes, HALF_BYTES,
		     "%s: the plan holds the cold half, got %" G_GUINT64_FORMAT, c->name,
		     (guint64)res.planned_bytes);
	cr_assert_eq(res.ranges, 2, "%s: %u host ranges, expected 2", c->name, res.ranges);
	cr_assert_eq(res.runs, c->want_runs, "%s: %u resident runs, expected %u", c->name, res.runs,
		     c->want_runs);
	cr_assert(res.resident_bytes == c->want_advised && res.swapped_bytes == 0,
		  "%s: %" G_GUINT64_FORMAT " resident bytes found, %" G_GUINT64_FORMAT
		  " in swap: expected %" G_GUINT64_FORMAT " and none",
		  c->name, (guint64)res.resident_bytes, (guint64)res.swapped_bytes,
		  (guint64)c->want_advised);
	cr_assert_eq(res.advised_bytes, c->want_advised,
		     "%s: advised %" G_GUINT64_FORMAT " bytes, expected %" G_GUINT64_FORMAT,
		     c->name, (guint64)res.advised_bytes, (guint64)c->want_advised);
	cr_assert_leq(res.advised_bytes, c->quota, "%s: never more than the quota", c->name);

	/* smaps: the cold half's resident bytes fall by what was paged out,
	 * not more; the hot half stays */
	cold1 = stand_in_usage(base + HALF_BYTES, HALF_BYTES, "cold");
	hot1 = stand_in_usage(base, HALF_BYTES, "hot");
	stand_in_expect_halves(c->name, &cold0, &cold1, &hot0, &hot1, c->want_advised, SLACK_BYTES);
	cr_assert_geq(cold1.rss_bytes + c->want_advised, cold0.rss_bytes,
		      "%s: no more than the quota leaves: %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT,
		      c->name, (guint64)cold0.rss_bytes, (guint64)cold1.rss_bytes);

	/* pagemap: coldest first, page by page */
	hot_out = swapped_bytes(base, base + HALF_BYTES);
	warm_out = swapped_bytes(base + HALF_BYTES, base + HALF_BYTES + 16 * MIB);
	cold_out = swapped_bytes(base + HALF_BYTES + 16 * MIB, base + GUEST_BYTES);
	cr_log_info("%s: in swap: hot %" G_GUINT64_FORMAT " KiB, 10 s idle %" G_GUINT64_FORMAT
		    " KiB, 600 s idle %" G_GUINT64_FORMAT " KiB",
		    c->name, (guint64)hot_out / 1024, (guint64)warm_out / 1024,
		    (guint64)cold_out / 1024);
	cr_assert_eq(hot_out, 0, "%s: no hot page in swap", c->name);
	cr_assert(cold_out <= c->want_out_cold && cold_out + SLACK_BYTES >= c->want_out_cold,
		  "%s: %" G_GUINT64_FORMAT " bytes of the coldest quarter should be in swap, "
		  "found %" G_GUINT64_FORMAT,
		  c->name, (guint64)c->want_out_cold, (guint64)cold_out);
	cr_assert(warm_out <= c->want_out_warm && warm_out + SLACK_BYTES >= c->want_out_warm,
		  "%s: %" G_GUINT64_FORMAT " bytes of the less cold quarter should be in swap, "
		  "found %" G_GUINT64_FORMAT,
		  c->name, (guint64)c->want_out_warm, (guint64)warm_out);
	if (c->want_out_warm && c->want_out_warm < 16 * MIB)
		cr_assert_eq(swapped_bytes(base + HALF_BYTES + c->want_out_warm,
					   base + HALF_BYTES + 16 * MIB),
			     0, "%s: the cut range keeps its lower part", c->name);

	cr_assert_eq(stand_in_verify(), 0, "%s: every page reads back as written", c->name);
	g_clear_pointer(&hr, vr_host_reclaim_free);
	cr_assert_eq(script_log.stops, 1, "%s: freeing the reclaim stops the source", c->name);
	cr_assert_eq(script_log.frees, 1, "%s: and frees it", c->name);
	stand_in_stop(FALSE);
	test_swap_off(&swap);
	stand_in_expect_no_swap_left();
}

/* A second step plans the coldest memory again, though it is in swap since
 * the first: pagemap shows it there, it is skipped, and the quota goes to
 * the next coldest resident pages. What is advised is what leaves memory. */
Test(host_reclaim_real, a_second_step_skips_what_is_in_swap, .timeout = 60)
{
	const struct vr_picture_region picture[] = {
		{ 0, HALF_BYTES, 20, 6000 },
		{ HALF_BYTES, HALF_BYTES + 16 * MIB, 0, 100 },
		{ HALF_BYTES + 16 * MIB, GUEST_BYTES, 0, 6000 },
	};
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim_result res;
	struct vr_range_usage u0, u1, u2;
	uint64_t base, left;
	char *why;

	why = test_swap_on(&swap, SWAP_BYTES);
	if (why)
		stand_in_skip(g_strdup_printf("no swap for the test: %s", why));
	base = child_start();
	hr = reclaim_of_child(base, script_new(picture, G_N_ELEMENTS(picture)));
	u0 = stand_in_usage(base, GUEST_BYTES, "child's");

	/* 1: the coldest 8 MiB, [48, 56) */
	cr_assert(vr_host_reclaim_step(hr, scheme, 8 * MIB, &res, &err), "step 1: %s",
		  err ? err->message : "");
	cr_assert_eq(res.advised_bytes, 8 * MIB, "step 1 advises 8 MiB");
	u1 = stand_in_usage(base, GUEST_BYTES, "child's");

	/* 2: planned from [48, 64) again; [48, 56) is in swap */
	cr_assert(vr_host_reclaim_step(hr, scheme, 8 * MIB, &res, &err), "step 2: %s",
		  err ? err->message : "");
	u2 = stand_in_usage(base, GUEST_BYTES, "child's");
	left = u1.rss_bytes > u2.rss_bytes ? u1.rss_bytes - u2.rss_bytes : 0;
	cr_log_info("step 2: planned %" G_GUINT64_FORMAT " KiB, %" G_GUINT64_FORMAT
		    " KiB skipped in swap, advised %" G_GUINT64_FORMAT
		    " KiB; rss %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
		    " KiB (%" G_GUINT64_FORMAT " KiB left memory)",
		    (guint64)res.planned_bytes / 1024, (guint64)res.swapped_bytes / 1024,
		    (guint64)res.advised_bytes / 1024, (guint64)u1.rss_bytes / 1024,
		    (guint64)u2.rss_bytes / 1024, (guint64)left / 1024);
	cr_assert(res.swapped_bytes <= 8 * MIB && res.swapped_bytes + SLACK_BYTES >= 8 * MIB,
		  "the 8 MiB in swap are skipped, got %" G_GUINT64_FORMAT,
		  (guint64)res.swapped_bytes);
	cr_assert_eq(res.advised_bytes, 8 * MIB, "the quota goes to resident pages");
	cr_assert_leq(res.advised_bytes, left + 256 * 1024,
		      "advised %" G_GUINT64_FORMAT " bytes, only %" G_GUINT64_FORMAT " left memory",
		      (guint64)res.advised_bytes, (guint64)left);
	cr_assert_geq(swapped_bytes(base + HALF_BYTES + 24 * MIB, base + GUEST_BYTES) + SLACK_BYTES,
		      8 * MIB, "[56, 64) went to swap");
	cr_assert_eq(swapped_bytes(base + HALF_BYTES, base + HALF_BYTES + 16 * MIB), 0,
		     "the less cold quarter stays");
	cr_assert_leq(u0.rss_bytes - u2.rss_bytes, 16 * MIB + SLACK_BYTES,
		      "no more than the two quotas left");

	cr_assert_eq(stand_in_verify(), 0, "every page reads back as written");
	g_clear_pointer(&hr, vr_host_reclaim_free);
	stand_in_stop(FALSE);
	test_swap_off(&swap);
	stand_in_expect_no_swap_left();
}

/* The QEMU process exits: the next step fails, naming the guest and the
 * stage. Before it is reaped (a zombie has no memory) and after (the pidfd
 * still names it; its pid may be reused). No swap needed. */
struct exit_case {
	char name[32];
	gboolean reap;
};

static struct exit_case exit_cases[] = {
	{ "exited, not reaped", FALSE },
	{ "exited and reaped", TRUE },
};

ParameterizedTestParameters(host_reclaim_real, qemu_exits)
{
	return cr_make_param_array(struct exit_case, exit_cases, G_N_ELEMENTS(exit_cases));
}

ParameterizedTest(struct exit_case *c, host_reclaim_real, qemu_exits)
{
	const struct vr_picture_region picture[] = {
		{ 0, HALF_BYTES, 20, 6000 },
		{ HALF_BYTES, GUEST_BYTES, 0, 6000 },
	};
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim_result res;
	uint64_t base;

	if (geteuid() != 0)
		stand_in_skip(g_strdup("process_madvise on another process needs CAP_SYS_NICE: "
				       "run as root"));
	base = child_start();
	hr = reclaim_of_child(base, script_new(picture, G_N_ELEMENTS(picture)));
	cr_assert(vr_host_reclaim_step(hr, scheme, 4 * MIB, &res, &err),
		  "%s: a step while the child lives: %s", c->name, err ? err->message : "");
	cr_assert_eq(res.advised_bytes, 4 * MIB, "%s: 4 MiB advised", c->name);

	stand_in_exit_unreaped();
	if (c->reap)
		stand_in_stop(FALSE);
	cr_assert_not(vr_host_reclaim_step(hr, scheme, 4 * MIB, &res, &err),
		      "%s: a step after the child exited should fail", c->name);
	/* its pagemap is at end of file: it is noticed before process_madvise() */
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE,
		     GUEST_NAME ";finding the resident pages;pagemap;exited", c->name);
	cr_assert_eq(res.planned_bytes, HALF_BYTES, "%s: the plan was made", c->name);
	cr_assert_eq(res.advised_bytes, 0, "%s: nothing advised", c->name);
}

/* ------------------------------------------------------------------------- */
/* What needs neither swap nor root                                          */
/* ------------------------------------------------------------------------- */

TestSuite(host_reclaim, .init = setup, .fini = stand_in_teardown);

/* A map of this test process's own memory: steps whose plan stays in holes
 * or is empty never call the kernel. */
static const struct vr_ram_range self_map[] = {
	{ .gpa = 0, .hva = 0x7f0000000000ULL, .size = GUEST_BYTES },
};

static struct vr_host_reclaim *reclaim_of_self(struct vr_access_source *src, GError **error)
{
	return vr_host_reclaim_new(GUEST_NAME, getpid(), self_map, G_N_ELEMENTS(self_map), GIB, src,
				   error);
}

Test(host_reclaim, new_starts_the_source_and_free_stops_it)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim *hr;

	hr = reclaim_of_self(script_new(picture, 1), &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");
	cr_assert_str_eq(vr_host_reclaim_name(hr), GUEST_NAME);
	cr_assert_eq(script_log.starts, 1, "the stopped source was started");
	vr_host_reclaim_free(hr);
	cr_assert_eq(script_log.stops, 1, "free stops the source");
	cr_assert_eq(script_log.frees, 1, "and frees it");
	vr_host_reclaim_free(NULL);
}

Test(host_reclaim, a_started_source_is_not_started_again)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	struct vr_access_source *src = script_new(picture, 1);
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_access_source_start(src, &err), "start: %s", err ? err->message : "");
	hr = reclaim_of_self(src, &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");
	cr_assert_eq(script_log.starts, 1, "started once, by the test");
}

/*
 * What vr_host_reclaim_new() refuses; the source is freed every time. Each
 * row: the argument spoiled, the error, words of its message.
 */
enum spoil {
	SPOIL_START,
	SPOIL_MAP_EMPTY,
	SPOIL_MAP_OVERLAP,
	SPOIL_MEMORY,
	SPOIL_PID,
	SPOIL_GONE,
	SPOIL_NO_SOURCE,
};

struct new_case {
	char name[40];
	enum spoil spoil;
	int code;   /* in the domain below */
	int domain; /* 0 host-reclaim, 1 ram map, 2 host-pageout, 3 access source */
	char words[96];
};

static struct new_case new_cases[] = {
	{ "the source does not start", SPOIL_START, VR_ACCESS_SOURCE_ERROR_BUSY, 3,
	  GUEST_NAME ";starting the access source;refuses to start" },
	{ "an empty RAM map", SPOIL_MAP_EMPTY, VR_RAM_MAP_ERROR_INVALID, 1,
	  GUEST_NAME ";no entry" },
	{ "an overlapping RAM map", SPOIL_MAP_OVERLAP, VR_RAM_MAP_ERROR_INVALID, 1,
	  GUEST_NAME ";entries 1 and 0;overlap" },
	{ "no guest memory", SPOIL_MEMORY, VR_HOST_RECLAIM_ERROR_INVALID, 0,
	  GUEST_NAME ";memory size" },
	{ "pid 0", SPOIL_PID, VR_HOST_PAGEOUT_ERROR_INVALID, 2, GUEST_NAME ";pid 0" },
	{ "a process that is gone", SPOIL_GONE, VR_HOST_PAGEOUT_ERROR_GONE, 2,
	  GUEST_NAME ";QEMU process;exited" },
	{ "no source", SPOIL_NO_SOURCE, VR_HOST_RECLAIM_ERROR_INVALID, 0,
	  GUEST_NAME ";no access source" },
};

ParameterizedTestParameters(host_reclaim, new_refuses)
{
	return cr_make_param_array(struct new_case, new_cases, G_N_ELEMENTS(new_cases));
}

ParameterizedTest(struct new_case *c, host_reclaim, new_refuses)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	const struct vr_ram_range overlapping[] = {
		{ .gpa = MIB, .hva = 0x7f0000000000ULL, .size = MIB },
		{ .gpa = 0, .hva = 0x7f0000100000ULL, .size = 2 * MIB },
	};
	const GQuark domains[] = { VR_HOST_RECLAIM_ERROR, VR_RAM_MAP_ERROR, VR_HOST_PAGEOUT_ERROR,
				   VR_ACCESS_SOURCE_ERROR };
	struct vr_access_source *src = script_new(picture, 1);
	const struct vr_ram_range *map = self_map;
	guint nr_map = G_N_ELEMENTS(self_map);
	uint64_t memory = GIB;
	g_autoptr(GError) err = NULL;
	pid_t pid = getpid();
	int status;

	switch (c->spoil) {
	case SPOIL_START:
		script_of(src)->fail_start = TRUE;
		break;
	case SPOIL_MAP_EMPTY:
		nr_map = 0;
		break;
	case SPOIL_MAP_OVERLAP:
		map = overlapping;
		nr_map = G_N_ELEMENTS(overlapping);
		break;
	case SPOIL_MEMORY:
		memory = 0;
		break;
	case SPOIL_PID:
		pid = 0;
		break;
	case SPOIL_GONE:
		/* a child that has exited and been reaped */
		pid = fork();
		cr_assert_geq(pid, 0, "fork: %s", g_strerror(errno));
		if (pid == 0)
			_exit(0);
		cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid: %s", g_strerror(errno));
		break;
	case SPOIL_NO_SOURCE:
		vr_access_source_free(src);
		src = NULL;
		break;
	}
	cr_assert_null(vr_host_reclaim_new(GUEST_NAME, pid, map, nr_map, memory, src, &err),
		       "%s: new should fail", c->name);
	assert_error(err, domains[c->domain], c->code, c->words, c->name);
	cr_assert_eq(script_log.frees, 1, "%s: the source is freed on failure", c->name);
}

/* The errors of each stage of a step name the guest and the stage, and the
 * result tells how far the step got. */
Test(host_reclaim, step_errors_name_the_guest_and_the_stage)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	const struct vr_picture_region too_big[] = { { 0, 2 * GIB, 0, 6000 } };
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_scheme) thp = vr_scheme_new("thp", VR_ACTION_HUGEPAGE);
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(vr_host_reclaim) big = NULL;
	struct vr_access_source *src = script_new(picture, 1);
	struct vr_host_reclaim_result res;
	g_autoptr(GError) err = NULL;

	hr = reclaim_of_self(src, &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");

	cr_assert_not(vr_host_reclaim_step(hr, thp, G_MAXUINT64, &res, &err));
	assert_error(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID,
		     GUEST_NAME ";planning the pageout;hugepage", "a hugepage scheme");
	cr_assert_eq(res.picture_regions, 1, "the picture was read");
	cr_assert_eq(res.planned_bytes, 0, "nothing planned");
	g_clear_error(&err);

	script_of(src)->fail_read = TRUE;
	cr_assert_not(vr_host_reclaim_step(hr, scheme, G_MAXUINT64, &res, &err));
	assert_error(err, VR_ACCESS_SOURCE_ERROR, VR_ACCESS_SOURCE_ERROR_FAILED,
		     GUEST_NAME ";reading the access picture;no picture today", "a failed read");
	cr_assert_eq(res.picture_regions, 0, "no picture");
	g_clear_error(&err);

	big = reclaim_of_self(script_new(too_big, 1), &err);
	cr_assert_not_null(big, "new: %s", err ? err->message : "");
	cr_assert_not(vr_host_reclaim_step(big, scheme, G_MAXUINT64, &res, &err));
	assert_error(err, VR_PICTURE_ERROR, VR_PICTURE_ERROR_TOO_LARGE,
		     GUEST_NAME ";planning the pageout;more than the guest", "2 GiB in 1 GiB");
}

/* Steps that need no system call: an empty plan, a quota of 0, and a plan
 * wholly in a hole of the RAM map (translated to no host range). */
Test(host_reclaim, steps_with_nothing_to_page_out)
{
	const struct vr_picture_region picture[] = {
		{ 0, HALF_BYTES, 20, 6000 },	    /* hot */
		{ HALF_BYTES, GUEST_BYTES, 0, 20 }, /* too young */
		{ 512 * MIB, 516 * MIB, 0, 6000 },  /* cold, beyond the map */
	};
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim_result res;
	uint64_t hist[VR_MAX_SCORE + 1];

	hr = reclaim_of_self(script_new(picture, G_N_ELEMENTS(picture)), &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");

	cr_assert(vr_host_reclaim_step(hr, scheme, 0, &res, &err), "quota 0: %s",
		  err ? err->message : "");
	cr_assert(res.picture_regions == 3 && res.planned_bytes == 0 && res.ranges == 0 &&
			  res.advised_bytes == 0,
		  "quota 0: nothing planned or advised");

	cr_assert(vr_host_reclaim_step(hr, scheme, G_MAXUINT64, &res, &err), "hole: %s",
		  err ? err->message : "");
	cr_assert_eq(res.planned_bytes, 4 * MIB, "the cold 4 MiB are planned");
	cr_assert_eq(res.ranges, 0, "but no RAM backs them: no host range");
	cr_assert_eq(res.advised_bytes, 0, "nothing advised");

	cr_assert(vr_host_reclaim_cold_histogram(hr, scheme, hist, &err), "histogram: %s",
		  err ? err->message : "");
	cr_assert_eq(hist[66], 4 * MIB, "600 s idle: 4 MiB at score 66, got %" G_GUINT64_FORMAT,
		     (guint64)hist[66]);
	cr_assert_eq(script_log.reads, 3, "one picture per call");

	scheme->pattern.min_age_us = 3600ULL * G_USEC_PER_SEC; /* nothing is that old */
	cr_assert(vr_host_reclaim_step(hr, scheme, G_MAXUINT64, &res, &err), "empty plan: %s",
		  err ? err->message : "");
	cr_assert(res.planned_bytes == 0 && res.ranges == 0 && res.advised_bytes == 0,
		  "an empty plan advises nothing");
}

/* A tick reads the picture once: acquired, then the offer's histogram and
 * the step use it; the step takes it, so the next step reads a new one. */
Test(host_reclaim, one_picture_a_tick)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_host_reclaim_result res;
	uint64_t hist[VR_MAX_SCORE + 1];
	int before;

	hr = reclaim_of_self(script_new(picture, G_N_ELEMENTS(picture)), &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");
	before = script_log.reads;
	cr_assert(vr_host_reclaim_acquire(hr, &err), "acquire: %s", err ? err->message : "");
	cr_assert(vr_host_reclaim_cold_histogram(hr, scheme, hist, &err), "histogram: %s",
		  err ? err->message : "");
	cr_assert(vr_host_reclaim_step(hr, scheme, 0, &res, &err), "step: %s",
		  err ? err->message : "");
	cr_assert_eq(res.picture_regions, 1, "the step used the acquired picture");
	cr_assert_eq(script_log.reads - before, 1,
		     "acquire, histogram and step read the picture once, not %d times",
		     script_log.reads - before);
	cr_assert(vr_host_reclaim_step(hr, scheme, 0, &res, &err), "second step: %s",
		  err ? err->message : "");
	cr_assert_eq(script_log.reads - before, 2, "the next step reads a new picture");
	/* A picture an offer kept is dropped by a tick that acquires none. */
	cr_assert(vr_host_reclaim_cold_histogram(hr, scheme, hist, &err), "histogram: %s",
		  err ? err->message : "");
	cr_assert_eq(script_log.reads - before, 3, "the histogram read a picture");
	vr_host_reclaim_forget_picture(hr);
	cr_assert(vr_host_reclaim_cold_histogram(hr, scheme, hist, &err), "histogram: %s",
		  err ? err->message : "");
	cr_assert_eq(script_log.reads - before, 4, "a forgotten picture is read again");
}

Test(host_reclaim, histogram_errors_name_the_guest)
{
	const struct vr_picture_region picture[] = { { 0, HALF_BYTES, 0, 6000 } };
	g_autoptr(vr_scheme) thp = vr_scheme_new("thp", VR_ACTION_HUGEPAGE);
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t hist[VR_MAX_SCORE + 1];

	hr = reclaim_of_self(script_new(picture, 1), &err);
	cr_assert_not_null(hr, "new: %s", err ? err->message : "");
	cr_assert_not(vr_host_reclaim_cold_histogram(hr, thp, hist, &err));
	assert_error(err, VR_FLEET_ERROR, VR_FLEET_ERROR_INVALID, GUEST_NAME ";hugepage",
		     "a hugepage scheme");
	for (guint s = 0; s <= VR_MAX_SCORE; s++)
		cr_assert_eq(hist[s], 0, "all zero on error");
}
