/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host's swap fills up under host-pageout, for real: a child process
 * stands in for QEMU with 64 MiB of anonymous memory, every page filled with
 * a pattern from its index, all of it cold in a scripted access picture. The
 * host gets a deliberately small temporary swap file (24 MiB: host-pageout
 * keeps max(SwapTotal / 64, 16 MiB) free for the kernel, so 8 MiB of room),
 * and vreclaimd's own step, vr_host_reclaim_step_in_swap() with the host's
 * /proc/meminfo as the daemon reads it, pages the child out:
 *
 * - it pages out no more than the swap's room (8 MiB of the 64 MiB), then
 *   stops: the next steps report swap_full and do nothing at all (no picture
 *   read, no process_madvise(), the child's resident and swapped bytes
 *   unchanged), and vr_host_swap_full_reason() - the domain's last error in
 *   `vreclaimctl status` - gives the figures;
 * - a second swap file (40 MiB) makes room: the next step resumes and pages
 *   out up to the new room, and the domain's wait reason is gone;
 * - only resident pages are advised: the first 8 MiB, in swap already but
 *   still cold in the picture, are skipped (pagemap), so after every step the
 *   bytes advised - what the quota is charged and the domain counts as
 *   reclaimed - are what left the child's memory, within ADVISED_SLACK_BYTES;
 * - every page of the child reads back as written (swap-in from both files);
 *
 * Each step is accounted as vreclaimd's act_host_pageout() does it
 * (vr_domain_account_host_pageout() on a struct vr_domain).
 * - both swap files are off and removed on every path (a skip, a failure,
 *   a run killed earlier: test-swap.h), and /proc/swaps is as before.
 *
 * Needs root (swapon, CAP_SYS_NICE) and a host without swap of its own (the
 * room must be the test's alone): otherwise skipped, saying why (exit 77).
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>

#include <errno.h>
#include <glib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "actions/host-pageout.h"
#include "domain.h"
#include "host-watermarks.h"
#include "procfs-text.h"
#include "qmp/ram-map.h"
#include "test-script-source.h"
#include "test-stand-in.h"

#define PAGE 4096ULL
#define MIB  (1ULL << 20)
/* The child's memory, all of it cold. */
#define GUEST_BYTES (64 * MIB)
/* The first swap file: 8 MiB of room beyond the 16 MiB reserve. */
#define SWAP1_BYTES (24 * MIB)
/* The second: 40 MiB more room. */
#define SWAP2_BYTES (40 * MIB)
/* What the kernel may keep or bring back meanwhile. */
#define SLACK_BYTES (2 * MIB)
/* How much more may be advised than leaves memory: pages the kernel could
 * not isolate at that moment (the child is idle, so few if any). Before
 * pagemap was read, the 8 MiB in swap were advised again on resuming. */
#define ADVISED_SLACK_BYTES (256 * 1024ULL)
/* Steps that may still find a little room while the first fills (pages the
 * kernel could not page out leave their slots free). */
#define MAX_FILL_STEPS 4

#define GUEST_NAME "guest-with-small-swap"

/* The second swap file (the first is test-stand-in.h's `swap`). */
static struct test_swap swap2;

/* In the child: its buffer, for the verification. */
static char *child_buffer;

static uint64_t child_verify_pages(const void *arg)
{
	(void)arg;
	return stand_in_pattern((uint64_t *)child_buffer, 0, GUEST_BYTES / PAGE, TRUE);
}

/* The child's body: one buffer of GUEST_BYTES between PROT_NONE pages (a
 * mapping of its own for smaps), 4 KiB pages. Reports its address, or 0. */
static void child_body(int in, int out, const void *arg)
{
	uint64_t addr = 0;
	char *raw;

	(void)arg;
	raw = mmap(NULL, GUEST_BYTES + 2 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw != MAP_FAILED && mprotect(raw, PAGE, PROT_NONE) == 0 &&
	    mprotect(raw + PAGE + GUEST_BYTES, PAGE, PROT_NONE) == 0 &&
	    madvise(raw + PAGE, GUEST_BYTES, MADV_NOHUGEPAGE) == 0) {
		child_buffer = raw + PAGE;
		stand_in_pattern((uint64_t *)child_buffer, 0, GUEST_BYTES / PAGE, FALSE);
		addr = (uint64_t)(uintptr_t)child_buffer;
	}
	if (write(out, &addr, sizeof(addr)) != sizeof(addr) || !addr)
		_exit(1);
	stand_in_serve(in, out, child_verify_pages, NULL);
}

static void setup(void)
{
	script_log.starts = script_log.stops = script_log.frees = script_log.reads = 0;
	swap2 = (struct test_swap){ 0 };
	stand_in_setup();
}

static void teardown(void)
{
	test_swap_off(&swap2);
	stand_in_teardown();
}

/* What left the child's memory from @before to @after (its Rss fall). */
static uint64_t left_memory(const struct vr_range_usage *before, const struct vr_range_usage *after)
{
	return before->rss_bytes > after->rss_bytes ? before->rss_bytes - after->rss_bytes : 0;
}

/* The bytes advised are what left memory, within ADVISED_SLACK_BYTES. */
static void expect_advised_left(uint64_t advised, const struct vr_range_usage *before,
				const struct vr_range_usage *after, const char *what)
{
	uint64_t left = left_memory(before, after);

	cr_log_info("%s: advised %" G_GUINT64_FORMAT " KiB, left memory %" G_GUINT64_FORMAT " KiB",
		    what, (guint64)advised / 1024, (guint64)left / 1024);
	cr_assert_leq(advised, left + ADVISED_SLACK_BYTES,
		      "%s: %" G_GUINT64_FORMAT " bytes advised but only %" G_GUINT64_FORMAT
		      " left memory (rss %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT ")",
		      what, (guint64)advised, (guint64)left, (guint64)before->rss_bytes,
		      (guint64)after->rss_bytes);
}

/* Skip, saying @why (owned), with both swap files gone. */
static void skip(char *why)
{
	test_swap_off(&swap2);
	stand_in_skip(why);
}

/* The host now, as vreclaimd reads it: /proc/meminfo. */
static struct vr_host_snapshot host_now(void)
{
	g_autofree char *text = NULL;
	g_autoptr(GError) err = NULL;
	struct vr_meminfo mi;

	cr_assert(g_file_get_contents("/proc/meminfo", &text, NULL, &err), "read /proc/meminfo: %s",
		  err ? err->message : "");
	cr_assert(vr_meminfo_parse(text, &mi, &err), "parse /proc/meminfo: %s",
		  err ? err->message : "");
	return (struct vr_host_snapshot){
		.mem_total_bytes = mi.mem_total_bytes,
		.mem_available_bytes = mi.mem_available_bytes,
		.swap_total_bytes = mi.swap_total_bytes,
		.swap_free_bytes = mi.swap_free_bytes,
	};
}

/* The room must be the test's alone: skip when another swap came up (another
 * test on this machine turned its own on meanwhile). */
static void expect_only_our_swap(void)
{
	g_autoptr(GPtrArray) now = test_swap_list();

	for (guint i = 0; i < now->len; i++) {
		const char *f = g_ptr_array_index(now, i);

		if (g_strcmp0(f, swap.file) && g_strcmp0(f, swap2.file))
			skip(g_strdup_printf("another swap came up meanwhile (%s): the room is not "
					     "the test's alone",
					     f));
	}
}

/* One step of vreclaimd's host-pageout action, as act_host_pageout() does it
 * (a share of the whole guest each time, accounted on @d), logged. */
static struct vr_host_reclaim_result step(struct vr_host_reclaim *hr, struct vr_domain *d,
					  const struct vr_scheme *s, struct vr_host_snapshot *snap,
					  const char *what)
{
	struct vr_host_reclaim_result res;
	g_autoptr(GError) err = NULL;

	expect_only_our_swap();
	*snap = host_now();
	cr_assert(vr_host_reclaim_step_in_swap(hr, s, GUEST_BYTES, snap, &res, &err), "%s: %s",
		  what, err ? err->message : "");
	vr_domain_account_host_pageout(d, &res, snap);
	cr_log_info("%s: SwapTotal %" G_GUINT64_FORMAT " KiB SwapFree %" G_GUINT64_FORMAT
		    " KiB: room %" G_GUINT64_FORMAT " KiB, advised %" G_GUINT64_FORMAT
		    " KiB (%" G_GUINT64_FORMAT " KiB skipped in swap)%s",
		    what, (guint64)snap->swap_total_bytes / 1024,
		    (guint64)snap->swap_free_bytes / 1024, (guint64)res.swap_room_bytes / 1024,
		    (guint64)res.advised_bytes / 1024, (guint64)res.swapped_bytes / 1024,
		    res.swap_full ? ", swap full" : "");
	cr_assert_eq(res.advised_bytes, res.resident_bytes,
		     "%s: the resident bytes found are the bytes advised", what);
	return res;
}

TestSuite(host_swap_full, .init = setup, .fini = teardown,
	  .description = "host-pageout into a small swap file: stops when full, resumes");

Test(host_swap_full, stops_when_full_and_resumes_with_room, .timeout = 60)
{
	const struct vr_picture_region picture[] = { { 0, GUEST_BYTES, 0, 6000 } };
	g_autoptr(vr_scheme) scheme = reclaim_scheme();
	g_autoptr(vr_host_reclaim) hr = NULL;
	g_autoptr(vr_domain) d = vr_domain_new("00000000-0000-0000-0000-00000000005a", GUEST_NAME);
	g_autoptr(GError) err = NULL;
	g_autofree char *why_full = NULL;
	struct vr_host_reclaim_result res = { 0 };
	struct vr_host_snapshot snap;
	struct vr_range_usage u0, u1, u2, u3;
	uint64_t base = 0, room1, out1 = 0, reads;
	char *why;

	if (geteuid() != 0)
		skip(g_strdup("swapon and process_madvise on another process need root"));
	if (swaps_before->len > 0)
		skip(g_strdup_printf("this host has swap (%s): the room would not be the test's "
				     "alone",
				     (const char *)g_ptr_array_index(swaps_before, 0)));
	why = test_swap_on(&swap, SWAP1_BYTES);
	if (why)
		skip(g_strdup_printf("no swap for the test: %s", why));
	cr_assert(test_swap_listed(swap.file), "/proc/swaps lists %s", swap.file);

	stand_in_start(child_body, NULL, &base, sizeof(base));
	cr_assert_neq(base, 0, "the child could not set up its memory");
	{
		const struct vr_ram_range map[] = { { .gpa = 0, .hva = base, .size = GUEST_BYTES } };

		hr = vr_host_reclaim_new(GUEST_NAME, stand_in_pid, map, 1, GUEST_BYTES,
					 script_new(picture, 1), &err);
		cr_assert_not_null(hr, "vr_host_reclaim_new: %s", err ? err->message : "");
	}
	u0 = stand_in_usage(base, GUEST_BYTES, "child's");
	cr_assert_geq(u0.rss_bytes, GUEST_BYTES - SLACK_BYTES, "the child is resident before");

	/* 1. A small swap: no more than its room leaves memory. */
	snap = host_now();
	room1 = vr_host_pageout_room(&snap);
	cr_assert(room1 > 0 && room1 <= SWAP1_BYTES - VR_HOST_SWAP_RESERVE_MIN_BYTES,
		  "a %" G_GUINT64_FORMAT
		  " MiB swap file leaves host-pageout at most %" G_GUINT64_FORMAT
		  " MiB of room, got %" G_GUINT64_FORMAT " bytes",
		  SWAP1_BYTES / MIB, (SWAP1_BYTES - VR_HOST_SWAP_RESERVE_MIN_BYTES) / MIB,
		  (guint64)room1);
	for (int i = 0; i < MAX_FILL_STEPS && !res.swap_full; i++) {
		res = step(hr, d, scheme, &snap, "filling the small swap");
		if (res.swap_full)
			break;
		cr_assert_gt(res.swap_room_bytes, 0, "a step that ran had room");
		cr_assert_leq(res.advised_bytes, res.swap_room_bytes,
			      "never more than the room (%" G_GUINT64_FORMAT " bytes) is advised, "
			      "got %" G_GUINT64_FORMAT,
			      (guint64)res.swap_room_bytes, (guint64)res.advised_bytes);
		out1 += res.advised_bytes;
	}
	cr_assert(res.swap_full,
		  "the swap is full within %d steps (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
		  " bytes of room advised)",
		  MAX_FILL_STEPS, (guint64)out1, (guint64)room1);
	cr_assert_leq(out1, room1, "the steps together took no more than the first room");
	cr_assert_geq(out1 + SLACK_BYTES, room1,
		      "the steps took the room (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
		      " bytes)",
		      (guint64)out1, (guint64)room1);
	u1 = stand_in_usage(base, GUEST_BYTES, "child's");
	cr_log_info("after the small swap filled: rss %" G_GUINT64_FORMAT
		    " KiB, swap %" G_GUINT64_FORMAT " KiB",
		    (guint64)u1.rss_bytes / 1024, (guint64)u1.swap_bytes / 1024);
	cr_assert_geq(u1.swap_bytes + SLACK_BYTES, out1, "what was advised is in swap");
	cr_assert_leq(u1.swap_bytes, SWAP1_BYTES, "no more is in swap than the swap holds");
	cr_assert_geq(u1.rss_bytes, GUEST_BYTES - out1 - SLACK_BYTES,
		      "the rest stays resident: %" G_GUINT64_FORMAT " bytes",
		      (guint64)u1.rss_bytes);
	expect_advised_left(out1, &u0, &u1, "the small swap");
	cr_assert_eq(d->reclaimed_bytes, out1, "the domain counts what was advised");

	/* 2. Full: the next steps do nothing at all, and say why. */
	reads = (uint64_t)script_log.reads;
	for (int i = 0; i < 3; i++) {
		res = step(hr, d, scheme, &snap, "with the swap full");
		cr_assert(
			res.swap_full && res.advised_bytes == 0 && res.planned_bytes == 0 &&
				res.picture_regions == 0,
			"a full swap: no picture, no plan, nothing advised (room %" G_GUINT64_FORMAT
			", advised %" G_GUINT64_FORMAT ")",
			(guint64)res.swap_room_bytes, (guint64)res.advised_bytes);
	}
	cr_assert_eq((uint64_t)script_log.reads, reads,
		     "no picture was read while the swap is full");
	u2 = stand_in_usage(base, GUEST_BYTES, "child's");
	cr_assert(u2.swap_bytes <= u1.swap_bytes && u2.rss_bytes + SLACK_BYTES >= u1.rss_bytes,
		  "nothing more left memory: swap %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
		  ", rss %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
		  (guint64)u1.swap_bytes, (guint64)u2.swap_bytes, (guint64)u1.rss_bytes,
		  (guint64)u2.rss_bytes);
	why_full = vr_host_swap_full_reason(&snap);
	cr_log_info("the operator sees: %s", why_full);
	cr_assert(strstr(why_full, "swap is full") && strstr(why_full, "SwapTotal") &&
			  strstr(why_full, "KiB"),
		  "the reason names the full swap and its figures: %s", why_full);
	cr_assert_str_eq(d->last_error ? d->last_error : "(none)", why_full,
			 "the domain's last error says why it waits");
	cr_assert_eq(d->reclaimed_bytes, out1, "a full swap counts nothing");

	/* 3. A second swap file: host-pageout resumes up to the new room. */
	why = test_swap_on(&swap2, SWAP2_BYTES);
	if (why)
		skip(g_strdup_printf("no second swap for the test: %s", why));
	res = step(hr, d, scheme, &snap, "after a second swap file");
	cr_assert_not(res.swap_full, "the second swap file makes room");
	cr_assert_gt(res.swap_room_bytes, SWAP2_BYTES / 2,
		     "room of about %" G_GUINT64_FORMAT " MiB, got %" G_GUINT64_FORMAT " bytes",
		     SWAP2_BYTES / MIB, (guint64)res.swap_room_bytes);
	cr_assert_gt(res.advised_bytes, 0, "the step resumes");
	cr_assert_leq(res.advised_bytes, res.swap_room_bytes, "within the new room");
	cr_assert_null(d->last_error, "room ends the wait: the swap-full reason is gone (%s)",
		       d->last_error ? d->last_error : "");
	/* The picture still shows the first pages cold (paged-out memory is not
	 * accessed), so the plan takes them again: pagemap shows them in swap
	 * and they are skipped, the quota going to resident pages. */
	cr_assert_geq(res.swapped_bytes + SLACK_BYTES, u2.swap_bytes,
		      "the pages in swap are skipped: %" G_GUINT64_FORMAT
		      " bytes of %" G_GUINT64_FORMAT,
		      (guint64)res.swapped_bytes, (guint64)u2.swap_bytes);
	u3 = stand_in_usage(base, GUEST_BYTES, "child's");
	cr_log_info("after the second swap file: rss %" G_GUINT64_FORMAT
		    " KiB, swap %" G_GUINT64_FORMAT " KiB",
		    (guint64)u3.rss_bytes / 1024, (guint64)u3.swap_bytes / 1024);
	expect_advised_left(res.advised_bytes, &u2, &u3, "the second swap file");
	expect_advised_left(d->reclaimed_bytes, &u0, &u3, "all steps (the domain's reclaimed)");
	cr_assert_geq(u3.swap_bytes + SLACK_BYTES, u2.swap_bytes + res.advised_bytes,
		      "the pages advised are in swap: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
		      " bytes (%" G_GUINT64_FORMAT " advised)",
		      (guint64)u2.swap_bytes, (guint64)u3.swap_bytes, (guint64)res.advised_bytes);
	cr_assert_geq(u3.swap_bytes, u2.swap_bytes + SWAP2_BYTES / 2,
		      "more left memory once there was room: swap %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT " bytes",
		      (guint64)u2.swap_bytes, (guint64)u3.swap_bytes);
	cr_assert_leq(u3.swap_bytes, u2.swap_bytes + res.swap_room_bytes,
		      "no more than the new room left memory");

	/* 4. Intact, and both swap files gone. */
	cr_assert_eq(stand_in_verify(), 0, "every page reads back as written");
	g_clear_pointer(&hr, vr_host_reclaim_free);
	stand_in_stop(FALSE);
	test_swap_off(&swap2);
	test_swap_off(&swap);
	stand_in_expect_no_swap_left();
}
