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

#include "host-pageout.h"
#include "ram-map.h"
#include "test-swap.h"

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

static struct test_swap swap;
static pid_t child_pid;
static int to_child = -1, from_child = -1;
static GPtrArray *swaps_before;

/* The pattern of 8-byte word @w of page @page: not zero, not the same in
 * two words, so zswap or zram cannot store a page as one value. */
static uint64_t pattern(uint64_t page, uint64_t w)
{
	uint64_t x = (page << 9 | w) + 0x9e3779b97f4a7c15ULL;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Fill (or, with @check, count the pages that differ from) the pattern of
 * the @nr_pages pages at @p, numbered from @first_page. */
static uint64_t fill_or_check(uint64_t *p, uint64_t first_page, uint64_t nr_pages, gboolean check)
{
	uint64_t bad = 0;

	for (uint64_t pg = 0; pg < nr_pages; pg++) {
		uint64_t *words = p + pg * (PAGE / 8);
		gboolean ok = TRUE;

		for (uint64_t w = 0; w < PAGE / 8; w++) {
			uint64_t want = pattern(first_page + pg, w);

			if (!check)
				words[w] = want;
			else if (words[w] != want)
				ok = FALSE;
		}
		bad += !ok;
	}
	return bad;
}

static void child_main(int in, int out, gboolean thp)
{
	size_t span = 2 * HALF_BYTES + GUARD_BYTES;
	struct child_layout l = { 0 };
	char *raw, *base;
	uint64_t bad;
	char cmd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
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
	fill_or_check((uint64_t *)base, 0, HALF_BYTES / PAGE, FALSE);
	fill_or_check((uint64_t *)(base + HALF_BYTES + GUARD_BYTES), HALF_BYTES / PAGE,
		      HALF_BYTES / PAGE, FALSE);
	if (write(out, &l, sizeof(l)) != sizeof(l))
		_exit(1);
	/* 'v': verify every page (reading the cold half swaps it in) */
	while (read(in, &cmd, 1) == 1) {
		if (cmd != 'v')
			continue;
		bad = fill_or_check((uint64_t *)base, 0, HALF_BYTES / PAGE, TRUE) +
		      fill_or_check((uint64_t *)(uintptr_t)l.hot, HALF_BYTES / PAGE,
				    HALF_BYTES / PAGE, TRUE);
		if (write(out, &bad, sizeof(bad)) != sizeof(bad))
			_exit(1);
	}
	_exit(0);
}

/* Start the child and read its layout. */
static struct child_layout child_start(gboolean thp)
{
	struct child_layout l;
	int down[2], up[2];

	cr_assert_eq(pipe2(down, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	cr_assert_eq(pipe2(up, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	child_pid = fork();
	cr_assert_geq(child_pid, 0, "fork: %s", g_strerror(errno));
	if (child_pid == 0) {
		close(down[1]);
		close(up[0]);
		child_main(down[0], up[1], thp);
	}
	close(down[0]);
	close(up[1]);
	to_child = down[1];
	from_child = up[0];
	cr_assert_eq(read(from_child, &l, sizeof(l)), (ssize_t)sizeof(l),
		     "the child did not report its memory");
	cr_assert_eq(l.status, 0, "the child could not set up its memory: %s",
		     g_strerror(l.status));
	cr_assert(l.cold % (2 * MIB) == 0 && l.hot == l.cold + HALF_BYTES + GUARD_BYTES,
		  "the child's layout is off: cold 0x%" G_GINT64_MODIFIER
		  "x hot 0x%" G_GINT64_MODIFIER "x",
		  (guint64)l.cold, (guint64)l.hot);
	return l;
}

/* Ask the child to verify every page: the number of bad pages. */
static uint64_t child_verify(void)
{
	uint64_t bad = G_MAXUINT64;

	cr_assert_eq(write(to_child, "v", 1), 1, "cannot ask the child to verify");
	cr_assert_eq(read(from_child, &bad, sizeof(bad)), (ssize_t)sizeof(bad),
		     "the child did not answer (it died?)");
	return bad;
}

/* Let the child exit and reap it; kill it when @kill_it. Idempotent. */
static void child_stop(gboolean kill_it)
{
	int status;

	if (to_child >= 0)
		close(to_child);
	if (from_child >= 0)
		close(from_child);
	to_child = from_child = -1;
	if (child_pid > 0) {
		if (kill_it)
			kill(child_pid, SIGKILL);
		waitpid(child_pid, &status, 0);
		child_pid = 0;
	}
}

static void setup(void)
{
	swap = (struct test_swap){ 0 };
	/* a run killed before its cleanup would look like "swap left behind" */
	if (geteuid() == 0)
		test_swap_reap_stale();
	swaps_before = test_swap_list();
}

static void teardown(void)
{
	child_stop(TRUE);
	test_swap_off(&swap);
	g_clear_pointer(&swaps_before, g_ptr_array_unref);
}

/*
 * Skip, saying @why (owned, freed here), after cleaning up: Criterion runs
 * no .fini after a skip, and skips past the cleanup of local g_auto
 * variables, so the message is copied to a static buffer first.
 */
static void skip_because(char *why)
{
	static char msg[512];

	g_strlcpy(msg, why, sizeof(msg));
	g_free(why);
	teardown();
	cr_skip_test("%s", msg);
}

/* Are transparent huge pages off on this host? */
static gboolean thp_off(void)
{
	g_autofree char *text = NULL;

	return !g_file_get_contents("/sys/kernel/mm/transparent_hugepage/enabled", &text, NULL,
				    NULL) ||
	       strstr(text, "[never]") != NULL;
}

static struct vr_range_usage usage_of(uint64_t start, const char *what)
{
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_smaps_read_range_usage("/proc", child_pid, start, start + HALF_BYTES, &u,
					    &err),
		  "smaps of the %s half: %s", what, err ? err->message : "");
	cr_assert_eq(u.vma_bytes, HALF_BYTES,
		     "the %s half should be a mapping of its own (%" G_GUINT64_FORMAT
		     " bytes counted)",
		     what, (guint64)u.vma_bytes);
	return u;
}

/* /proc/swaps is as it was before the test, and our file is gone. */
static void expect_no_swap_left(void)
{
	g_autoptr(GPtrArray) after = test_swap_list();

	cr_assert_eq(after->len, swaps_before->len,
		     "/proc/swaps lists %u swaps after the test, %u before", after->len,
		     swaps_before->len);
	for (guint i = 0; i < after->len; i++)
		cr_assert_str_eq(g_ptr_array_index(after, i), g_ptr_array_index(swaps_before, i),
				 "/proc/swaps changed");
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
	pidfd = vr_pidfd_open(child_pid, &err);
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

TestSuite(pageout_swap, .init = setup, .fini = teardown);

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
		skip_because(g_strdup_printf("%s: transparent huge pages are off on this host",
					     c->name));
	why = test_swap_on(&swap, SWAP_BYTES);
	if (why)
		skip_because(g_strdup_printf("%s: no swap for the test: %s", c->name, why));
	cr_assert(test_swap_listed(swap.file), "%s: /proc/swaps lists %s", c->name, swap.file);

	l = child_start(c->thp);
	cold0 = usage_of(l.cold, "cold");
	hot0 = usage_of(l.hot, "hot");
	cr_assert_geq(cold0.rss_bytes, HALF_BYTES - SLACK_BYTES,
		      "%s: the cold half is resident before (%" G_GUINT64_FORMAT " bytes)", c->name,
		      (guint64)cold0.rss_bytes);

	advised = page_out_cold_half(&l, c->max_bytes);
	cr_assert_eq(advised, c->want_out_bytes,
		     "%s: expected %" G_GUINT64_FORMAT " bytes advised, got %" G_GUINT64_FORMAT,
		     c->name, (guint64)c->want_out_bytes, (guint64)advised);
	cold1 = usage_of(l.cold, "cold");
	hot1 = usage_of(l.hot, "hot");
	cr_log_info("%s: cold half rss %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
		    " KiB, swap %" G_GUINT64_FORMAT " KiB; hot half rss %" G_GUINT64_FORMAT
		    " -> %" G_GUINT64_FORMAT " KiB",
		    c->name, (guint64)cold0.rss_bytes / 1024, (guint64)cold1.rss_bytes / 1024,
		    (guint64)cold1.swap_bytes / 1024, (guint64)hot0.rss_bytes / 1024,
		    (guint64)hot1.rss_bytes / 1024);
	cr_assert_leq(cold1.rss_bytes, cold0.rss_bytes - c->want_out_bytes + SLACK_BYTES,
		      "%s: the cold half's resident bytes should fall by %" G_GUINT64_FORMAT
		      ": %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
		      c->name, (guint64)c->want_out_bytes, (guint64)cold0.rss_bytes,
		      (guint64)cold1.rss_bytes);
	cr_assert_geq(cold1.swap_bytes, c->want_out_bytes - SLACK_BYTES,
		      "%s: the paged-out bytes are in swap, got %" G_GUINT64_FORMAT, c->name,
		      (guint64)cold1.swap_bytes);
	cr_assert_geq(hot1.rss_bytes, hot0.rss_bytes - SLACK_BYTES,
		      "%s: the hot half stays resident: %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT,
		      c->name, (guint64)hot0.rss_bytes, (guint64)hot1.rss_bytes);
	cr_assert_eq(hot1.swap_bytes, 0, "%s: nothing of the hot half in swap", c->name);

	cr_assert_eq(child_verify(), 0, "%s: every page reads back as written", c->name);
	cold2 = usage_of(l.cold, "cold");
	cr_assert_geq(cold2.rss_bytes, HALF_BYTES - SLACK_BYTES,
		      "%s: reading swapped the cold half back in (%" G_GUINT64_FORMAT " bytes)",
		      c->name, (guint64)cold2.rss_bytes);

	child_stop(FALSE);
	test_swap_off(&swap);
	expect_no_swap_left();
}

Test(pageout_swap, without_swap_advised_but_resident)
{
	struct vr_range_usage cold0, cold1;
	struct child_layout l;
	uint64_t advised;

	if (geteuid() != 0)
		skip_because(g_strdup("process_madvise on another process needs CAP_SYS_NICE: "
				      "run as root"));
	if (swaps_before->len > 0)
		skip_because(g_strdup_printf("this host has swap (%s): the case without swap "
					     "cannot be shown",
					     (const char *)g_ptr_array_index(swaps_before, 0)));
	l = child_start(FALSE);
	cold0 = usage_of(l.cold, "cold");
	advised = page_out_cold_half(&l, G_MAXUINT64);
	cr_assert_eq(advised, HALF_BYTES,
		     "the kernel counts the whole half as advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cold1 = usage_of(l.cold, "cold");
	cr_assert_geq(cold1.rss_bytes, cold0.rss_bytes - SLACK_BYTES,
		      "without swap, anonymous memory stays resident: %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT,
		      (guint64)cold0.rss_bytes, (guint64)cold1.rss_bytes);
	cr_assert_eq(cold1.swap_bytes, 0, "and nothing is in swap");
	cr_assert_eq(child_verify(), 0, "every page reads back as written");
	child_stop(FALSE);
	expect_no_swap_left();
}
