/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A child process that stands in for QEMU in the tests that page out for
 * real (test-host-pageout-real.c, test-host-reclaim-real.c), and the
 * fixture around it: a temporary swap file (test-swap.h) and the check that
 * /proc/swaps is as before.
 *
 * The child maps memory of the caller's layout (its body), fills every page
 * with a pattern that depends on the page's number, sends the parent one
 * report (the addresses), then serves commands until the parent closes:
 * 'v' verifies every page (reading a swapped-out page swaps it back in) and
 * answers the number of pages that differ; 'q' exits.
 *
 * One test per process (Criterion forks a worker per test), one child per
 * test: the state is this header's static variables. Include it in one file
 * only, after _GNU_SOURCE.
 */
#pragma once

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process-pageout.h"
#include "test-swap.h"

#define TEST_STAND_IN_PAGE 4096ULL

/* private: the child and the fixture */
static pid_t stand_in_pid;
static int stand_in_to = -1, stand_in_from = -1;
static struct test_swap swap;
static GPtrArray *swaps_before;

/* Word @w of page @page: never 0 and different in every word of every page
 * (a splitmix64 step over the word's number), so no page is one value that
 * zswap or zram could keep without its contents. */
static inline uint64_t stand_in_word(uint64_t page, uint64_t w)
{
	uint64_t z = page * (TEST_STAND_IN_PAGE / 8) + w + 0x2545f4914f6cdd1dULL;

	z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
	z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
	z ^= z >> 33;
	return z ? z : 1;
}

/*
 * stand_in_pattern() - write the pattern into the @nr_pages pages at @p,
 * numbered from @first_page, or (with @check) count the pages that differ
 * from it.
 */
static inline uint64_t stand_in_pattern(uint64_t *p, uint64_t first_page, uint64_t nr_pages,
					gboolean check)
{
	uint64_t bad = 0;

	for (uint64_t pg = 0; pg < nr_pages; pg++) {
		uint64_t *words = p + pg * (TEST_STAND_IN_PAGE / 8);
		gboolean same = TRUE;

		for (uint64_t w = 0; w < TEST_STAND_IN_PAGE / 8; w++) {
			uint64_t want = stand_in_word(first_page + pg, w);

			if (!check)
				words[w] = want;
			else if (words[w] != want)
				same = FALSE;
		}
		bad += !same;
	}
	return bad;
}

/*
 * stand_in_serve() - in the child, after its report: serve 'v' (answer
 * @verify(@arg), the number of bad pages) and 'q' until the parent says
 * 'q' or closes. Never returns.
 */
G_NORETURN static inline void stand_in_serve(int in, int out, uint64_t (*verify)(const void *arg),
					     const void *arg)
{
	char cmd;

	while (read(in, &cmd, 1) == 1) {
		uint64_t bad;

		if (cmd == 'q')
			break;
		if (cmd != 'v')
			continue;
		bad = verify(arg);
		if (write(out, &bad, sizeof(bad)) != sizeof(bad))
			_exit(1);
	}
	_exit(0);
}

/*
 * stand_in_start() - fork the child: it runs @body(in, out, @arg), which
 * sets up its memory, writes its report of @report_size bytes to out and
 * calls stand_in_serve(); the parent reads that report into @report.
 * The child dies with the test process (PR_SET_PDEATHSIG).
 */
static inline void stand_in_start(void (*body)(int in, int out, const void *arg), const void *arg,
				  void *report, size_t report_size)
{
	int down[2], up[2];

	cr_assert_eq(pipe2(down, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	cr_assert_eq(pipe2(up, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	stand_in_pid = fork();
	cr_assert_geq(stand_in_pid, 0, "fork: %s", g_strerror(errno));
	if (stand_in_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(down[1]);
		close(up[0]);
		body(down[0], up[1], arg);
		_exit(1);
	}
	close(down[0]);
	close(up[1]);
	stand_in_to = down[1];
	stand_in_from = up[0];
	cr_assert_eq(read(stand_in_from, report, report_size), (ssize_t)report_size,
		     "the child did not report its memory");
}

/* Ask the child to verify every page: the number of bad pages. */
static inline uint64_t stand_in_verify(void)
{
	uint64_t bad = G_MAXUINT64;

	cr_assert_eq(write(stand_in_to, "v", 1), 1, "cannot ask the child to verify");
	cr_assert_eq(read(stand_in_from, &bad, sizeof(bad)), (ssize_t)sizeof(bad),
		     "the child did not answer (it died?)");
	return bad;
}

/* Tell the child to exit and wait until it has (a zombie), without reaping
 * it. */
static inline void stand_in_exit_unreaped(void)
{
	siginfo_t info = { 0 };

	cr_assert_eq(write(stand_in_to, "q", 1), 1, "cannot tell the child to exit");
	cr_assert_eq(waitid(P_PID, (id_t)stand_in_pid, &info, WEXITED | WNOWAIT), 0,
		     "waitid on the child: %s", g_strerror(errno));
}

/* Let the child exit and reap it; kill it when @kill_it. Idempotent. */
static inline void stand_in_stop(gboolean kill_it)
{
	int status;

	if (stand_in_to >= 0)
		close(stand_in_to);
	if (stand_in_from >= 0)
		close(stand_in_from);
	stand_in_to = stand_in_from = -1;
	if (stand_in_pid > 0) {
		if (kill_it)
			kill(stand_in_pid, SIGKILL);
		waitpid(stand_in_pid, &status, 0);
		stand_in_pid = 0;
	}
}

/*
 * stand_in_usage() - smaps of the child's [@start, @start + @size), which
 * must be one mapping of its own (@what names it in the messages).
 */
static inline struct vr_range_usage stand_in_usage(uint64_t start, uint64_t size, const char *what)
{
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_smaps_read_range_usage("/proc", stand_in_pid, start, start + size, &u, &err),
		  "smaps of the %s half: %s", what, err ? err->message : "");
	cr_assert_eq(u.vma_bytes, size,
		     "the %s half should be a mapping of its own (%" G_GUINT64_FORMAT
		     " bytes counted)",
		     what, (guint64)u.vma_bytes);
	return u;
}

/* The fixture's .init: no swap yet, and what /proc/swaps lists before. */
static inline void stand_in_setup(void)
{
	swap = (struct test_swap){ 0 };
	/* a run killed before its cleanup would look like "swap left behind" */
	if (geteuid() == 0)
		test_swap_reap_stale();
	swaps_before = test_swap_list();
}

/* The fixture's .fini: the child stopped, the swap off and removed. */
static inline void stand_in_teardown(void)
{
	stand_in_stop(TRUE);
	test_swap_off(&swap);
	g_clear_pointer(&swaps_before, g_ptr_array_unref);
}

/*
 * stand_in_skip() - skip, saying @why (owned, freed here), after cleaning up:
 * Criterion runs no .fini after a skip, and skips past the cleanup of local
 * g_auto variables, so the message is copied to a static buffer first.
 */
static inline void stand_in_skip(char *why)
{
	static char msg[512];

	g_strlcpy(msg, why, sizeof(msg));
	g_free(why);
	stand_in_teardown();
	cr_skip_test("%s", msg);
}

/* /proc/swaps is as it was before the test, and our file is gone. */
static inline void stand_in_expect_no_swap_left(void)
{
	g_autoptr(GPtrArray) after = test_swap_list();

	cr_assert_eq(after->len, swaps_before->len,
		     "/proc/swaps lists %u swaps after the test, %u before", after->len,
		     swaps_before->len);
	for (guint i = 0; i < after->len; i++)
		cr_assert_str_eq(g_ptr_array_index(after, i), g_ptr_array_index(swaps_before, i),
				 "/proc/swaps changed");
}

/*
 * stand_in_expect_halves() - after a pageout of @want_out_bytes of the cold
 * half: its resident bytes fell by that much (within @slack_bytes, what the
 * kernel may keep or bring back meanwhile), the hot half stayed resident and
 * has nothing in swap. @cold0/@hot0 are the halves' smaps before, @cold1/@hot1
 * after; @name prefixes the messages. Logs the figures.
 */
static inline void stand_in_expect_halves(const char *name, const struct vr_range_usage *cold0,
					  const struct vr_range_usage *cold1,
					  const struct vr_range_usage *hot0,
					  const struct vr_range_usage *hot1,
					  uint64_t want_out_bytes, uint64_t slack_bytes)
{
	cr_log_info("%s: cold half rss %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT
		    " KiB, swap %" G_GUINT64_FORMAT " KiB; hot half rss %" G_GUINT64_FORMAT
		    " -> %" G_GUINT64_FORMAT " KiB",
		    name, (guint64)cold0->rss_bytes / 1024, (guint64)cold1->rss_bytes / 1024,
		    (guint64)cold1->swap_bytes / 1024, (guint64)hot0->rss_bytes / 1024,
		    (guint64)hot1->rss_bytes / 1024);
	cr_assert_leq(cold1->rss_bytes, cold0->rss_bytes - want_out_bytes + slack_bytes,
		      "%s: the cold half's resident bytes should fall by %" G_GUINT64_FORMAT
		      ": %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
		      name, (guint64)want_out_bytes, (guint64)cold0->rss_bytes,
		      (guint64)cold1->rss_bytes);
	cr_assert_geq(hot1->rss_bytes, hot0->rss_bytes - slack_bytes,
		      "%s: the hot half stays resident: %" G_GUINT64_FORMAT
		      " -> %" G_GUINT64_FORMAT,
		      name, (guint64)hot0->rss_bytes, (guint64)hot1->rss_bytes);
	cr_assert_eq(hot1->swap_bytes, 0, "%s: nothing of the hot half in swap", name);
}
