/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host-pageout for real: a child process stands in for QEMU. It maps 64 MiB
 * of anonymous memory as two 32 MiB halves split by a guard (so smaps counts
 * each half on its own), fills every page with a pattern from the page
 * index, and sends the parent the addresses. The parent turns on a
 * temporary swap file, translates the cold half through a RAM map, pages it
 * out with vr_pidfd_open() + vr_host_pageout(), and checks with smaps that
 * the cold half left memory while the hot half stayed; the child then reads
 * every page back (swap-in) and checks its contents.
 *
 * Cases: 4 KiB pages, transparent huge pages, a quota smaller than the cold
 * half, and no swap at all (advised, but still resident).
 *
 * Needs root (swapon, CAP_SYS_NICE); skipped, saying why, when the machine
 * cannot. The swap file is turned off and removed in every path, and the
 * tests check that /proc/swaps (`swapon --show`) is as before.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <glib.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process-pageout.h"
#include "qmp/ram-map.h"
#include "test-stand-in.h"

#define PAGE 4096ULL
#define MIB  (1ULL << 20)
/* Each half of the child's memory: 32 MiB (2 MiB-aligned, for THP). */
#define HALF_BYTES (32 * MIB)
/* Between the halves, PROT_NONE: splits the mapping, keeps THP alignment. */
#define GUARD_BYTES (2 * MIB)
/* The swap file: the cold half and room for THP clusters. */
#define SWAP_BYTES (128 * MIB)
/* What the kernel may keep or bring back meanwhile: 1/16 of a half. */
#define SLACK_BYTES (HALF_BYTES / 16)

/**
 * struct child_layout - what the child reports after filling its memory.
 * @cold, @hot:	the host addresses of the two halves (HALF_BYTES each).
 * @status:	0, or why the child could not set up (errno).
 */
struct child_layout {
	uint64_t cold;
	uint64_t hot;
	int32_t status;
};

/* In the child: its memory, for the verification. */
static struct child_layout child_memory;

/* In the child: the pages of both halves that differ from the pattern. */
static uint64_t child_verify_pages(const void *arg)
{
	(void)arg;
	return stand_in_pattern((uint64_t *)(uintptr_t)child_memory.cold, 0, HALF_BYTES / PAGE,
				TRUE) +
	       stand_in_pattern((uint64_t *)(uintptr_t)child_memory.hot, HALF_BYTES / PAGE,
				HALF_BYTES / PAGE, TRUE);
}

/* The child's body: two halves split by a guard; @arg: gboolean, THP on. */
static void child_body(int in, int out, const void *arg)
{
	gboolean thp = *(const gboolean *)arg;
	size_t span = 2 * HALF_BYTES + GUARD_BYTES;
	struct child_layout l = { 0 };
	char *raw, *base;

	/* map 2 MiB more, keep a 2 MiB-aligned span */
	raw = mmap(NULL, span + 2 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (raw == MAP_FAILED) {
		l.status = errno;
		(void)!write(out, &l, sizeof(l));
		_exit(1);
	}
	base = (char *)(((uintptr_t)raw + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	munmap(base + span, (size_t)(raw + span + 2 * MIB - (base + span)));
	if (madvise(base, span, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 ||
	    mprotect(base + HALF_BYTES, GUARD_BYTES, PROT_NONE) != 0) {
		l.status = errno;
		(void)!write(out, &l, sizeof(l));
		_exit(1);
	}
	l.cold = (uint64_t)(uintptr_t)base;
	l.hot = l.cold + HALF_BYTES + GUARD_BYTES;
	child_memory = l;
	stand_in_pattern((uint64_t *)base, 0, HALF_BYTES / PAGE, FALSE);
	stand_in_pattern((uint64_t *)(uintptr_t)l.hot, HALF_BYTES / PAGE, HALF_BYTES / PAGE, FALSE);
	if (write(out, &l, sizeof(l)) != sizeof(l))
		_exit(1);
	stand_in_serve(in, out, child_verify_pages, NULL);
}

/* Start the child and read its layout. */
static struct child_layout child_start(gboolean thp)
{
	struct child_layout l;

	stand_in_start(child_body, &thp, &l, sizeof(l));
	cr_assert_eq(l.status, 0, "the child could not set up its memory: %s",
		     g_strerror(l.status));
	cr_assert(l.cold % (2 * MIB) == 0 && l.hot == l.cold + HALF_BYTES + GUARD_BYTES,
		  "the child's layout is off: cold 0x%" G_GINT64_MODIFIER
		  "x hot 0x%" G_GINT64_MODIFIER "x",
		  (guint64)l.cold, (guint64)l.hot);
	return l;
}

/* Are transparent huge pages off on this host? */
static gboolean thp_off(void)
{
	g_autofree char *text = NULL;

	return !g_file_get_contents("/sys/kernel/mm/transparent_hugepage/enabled", &text, NULL,
				    NULL) ||
	       strstr(text, "[never]") != NULL;
}

/* Page out guest range [0, HALF_BYTES) of a guest whose RAM is the child's
 * two halves (gpa 0: cold, gpa HALF_BYTES: hot), at most @max_bytes. */
static uint64_t page_out_cold_half(const struct child_layout *l, uint64_t max_bytes)
{
	const struct vr_ram_range map[] = {
		{ .gpa = 0, .hva = l->cold, .size = HALF_BYTES },
		{ .gpa = HALF_BYTES, .hva = l->hot, .size = HALF_BYTES },
	};
	const struct vr_range cold = { 0, HALF_BYTES };
	g_autoptr(GArray) host = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;
	gint64 t0;
	int pidfd;

	cr_assert(vr_ram_map_translate(map, G_N_ELEMENTS(map), &cold, 1, &host, &err),
		  "translate: %s", err ? err->message : "");
	cr_assert_eq(host->len, 1, "the cold half is one host range, got %u", host->len);
	cr_assert_eq((uint64_t)(uintptr_t)g_array_index(host, struct iovec, 0).iov_base, l->cold,
		     "the host range is the cold half");
	pidfd = vr_pidfd_open(stand_in_pid, &err);
	cr_assert_geq(pidfd, 0, "pidfd of the child: %s", err ? err->message : "");
	t0 = g_get_monotonic_time();
	cr_assert(vr_host_pageout(pidfd, (struct iovec *)host->data, host->len, max_bytes, &advised,
				  &err),
		  "page out the cold half: %s", err ? err->message : "");
	cr_log_info("paged out %" G_GUINT64_FORMAT " bytes in %" G_GINT64_FORMAT " us",
		    (guint64)advised, g_get_monotonic_time() - t0);
	close(pidfd);
	return advised;
}

TestSuite(pageout_swap, .init = stand_in_setup, .fini = stand_in_teardown);

struct real_case {
	char name[48];
	gboolean thp;
	uint64_t max_bytes;	 /* the quota */
	uint64_t want_out_bytes; /* how much of the cold half leaves memory */
};

static struct real_case real_cases[] = {
	{ "4 KiB pages, the whole cold half", FALSE, G_MAXUINT64, HALF_BYTES },
	{ "transparent huge pages, the whole cold half", TRUE, G_MAXUINT64, HALF_BYTES },
	{ "4 KiB pages, a quota of 8 MiB", FALSE, 8 * MIB, 8 * MIB },
};

ParameterizedTestParameters(pageout_swap, cold_half_leaves_memory)
{
	return cr_make_param_array(struct real_case, real_cases, G_N_ELEMENTS(real_cases));
}

ParameterizedTest(struct real_case *c, pageout_swap, cold_half_leaves_memory)
{
	struct vr_range_usage cold0, hot0, cold1, hot1, cold2;
	struct child_layout l;
	char *why;
	uint64_t advised;

	if (c->thp && thp_off())
		stand_in_skip(g_strdup_printf("%s: transparent huge pages are off on this host",
					      c->name));
	why = test_swap_on(&swap, SWAP_BYTES);
	if (why)
		stand_in_skip(g_strdup_printf("%s: no swap for the test: %s", c->name, why));
	cr_assert(test_swap_listed(swap.file), "%s: /proc/swaps lists %s", c->name, swap.file);

	l = child_start(c->thp);
	cold0 = stand_in_usage(l.cold, HALF_BYTES, "cold");
	hot0 = stand_in_usage(l.hot, HALF_BYTES, "hot");
	cr_assert_geq(cold0.rss_bytes, HALF_BYTES - SLACK_BYTES,
		      "%s: the cold half is resident before (%" G_GUINT64_FORMAT " bytes)", c->name,
		      (guint64)cold0.rss_bytes);

	advised = page_out_cold_half(&l, c->max_bytes);
	cr_assert_eq(advised, c->want_out_bytes,
		     "%s: expected %" G_GUINT64_FORMAT " bytes advised, got %" G_GUINT64_FORMAT,
		     c->name, (guint64)c->want_out_bytes, (guint64)advised);
	cold1 = stand_in_usage(l.cold, HALF_BYTES, "cold");
	hot1 = stand_in_usage(l.hot, HALF_BYTES, "hot");
	stand_in_expect_halves(c->name, &cold0, &cold1, &hot0, &hot1, c->want_out_bytes,
			       SLACK_BYTES);
	cr_assert_geq(cold1.swap_bytes, c->want_out_bytes - SLACK_BYTES,
		      "%s: the paged-out bytes are in swap, got %" G_GUINT64_FORMAT, c->name,
		      (guint64)cold1.swap_bytes);

	cr_assert_eq(stand_in_verify(), 0, "%s: every page reads back as written", c->name);
	cold2 = stand_in_usage(l.cold, HALF_BYTES, "cold");
	cr_assert_geq(cold2.rss_bytes, HALF_BYTES - SLACK_BYTES,
		      "%s: reading swapped the cold half back in (%" G_GUINT64_FORMAT " bytes)",
		      c->name, (guint64)cold2.rss_bytes);

	stand_in_stop(FALSE);
	test_swap_off(&swap);
	stand_in_expect_no_swap_left();
}

Test(pageout_swap, without_swap_advised_but_resident)
{
	struct vr_range_usage cold0, cold1;
	struct child_layout l;
	uint64_t advised;

	if (geteuid() != 0)
		stand_in_skip(g_strdup("process_madvise on another process needs CAP_SYS_NICE: "
				       "run as root"));
	if (swaps_before->len > 0)
		stand_in_skip(g_strdup_printf("this host has swap (%s): the case without swap "
					      "cannot be shown",
					      (const char *)g_ptr_array_index(swaps_before, 0)));
	l = child_start(FALSE);
	cold0 = stand_in_usage(l.cold, HALF_BYTES, "cold");
	advised = page_out_cold_half(&l, G_MAXUINT64);
	cr_assert_eq(advised, HALF_BYTES,
		     "the kernel counts the whole half as advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cold1 = stand_in_usage(l.cold, HALF_BYTES, "cold");
	cr_assert_geq(cold1.rss_bytes, cold0.rss_bytes - SLACK_BYTES,
		      "without swap, anonymous memory stays resident: %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT,
		      (guint64)cold0.rss_bytes, (guint64)cold1.rss_bytes);
	cr_assert_eq(cold1.swap_bytes, 0, "and nothing is in swap");
	cr_assert_eq(stand_in_verify(), 0, "every page reads back as written");
	stand_in_stop(FALSE);
	stand_in_expect_no_swap_left();
}
