/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of another process's pageout (kernel/process-pageout.c): the
 * smaps parser on fixture text and a fake procfs, the batching of
 * process_madvise() (more ranges than IOV_MAX, byte caps, partial returns and errors, against a played kernel
 * and against a real child process), and the real errors: a dead pid, a
 * closed pidfd, an unmapped range, a caller without privileges.
 *
 * Without host swap nothing is really paged out here: the kernel still
 * counts the advised bytes, which is what these tests check.
 * tests/integration/test-host-pageout-real.c pages out for real.
 */
#define _GNU_SOURCE

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor.h" /* struct vr_range */
#include "process-pageout.h"
#include "test-fake-tree.h"
#include "test-messages.h"

#define PAGE 4096ULL
#define MIB  (1ULL << 20)
#define GIB  (1ULL << 30)
/* A host address where QEMU could have mapped guest RAM. */
#define H 0x7f0000000000ULL

TestSuite(smaps);
TestSuite(pageout_batch);
TestSuite(pageout_real);

/* ---- helpers ---- */

static uint64_t iov_start(const struct iovec *v)
{
	return (uint64_t)(uintptr_t)v->iov_base;
}

static struct iovec iov(uint64_t start, uint64_t len)
{
	return (struct iovec){ .iov_base = (void *)(uintptr_t)start, .iov_len = len };
}

/* ---- smaps ---- */

/* Three mappings: guest RAM split in two by a guard page, and a library. */
static const char smaps_text[] =
	"7f0000000000-7f0002000000 rw-p 00000000 00:00 0 \n"
	"Size:              32768 kB\n"
	"KernelPageSize:        4 kB\n"
	"Rss:               30000 kB\n"
	"Pss:               30000 kB\n"
	"AnonHugePages:         0 kB\n"
	"FilePmdMapped:         0 kB\n"
	"Swap:               2768 kB\n"
	"SwapPss:            2768 kB\n"
	"Locked:                0 kB\n"
	"VmFlags: rd wr mr mw me ac nh\n"
	"7f0002000000-7f0002001000 ---p 00000000 00:00 0 \n"
	"Size:                  4 kB\n"
	"Rss:                   0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: mr mw me ac\n"
	"7f0002001000-7f0004001000 rw-p 00000000 00:00 0 \n"
	"Size:              32768 kB\n"
	"Rss:               32768 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd wr mr mw me ac\n"
	"7f1000000000-7f1000021000 r-xp 00000000 fe:01 1234      /usr/lib/libc.so.6\n"
	"Size:                132 kB\n"
	"Rss:                 100 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd ex mr mw me\n";

struct smaps_case {
	char name[64];
	uint64_t start;
	uint64_t end;
	struct vr_range_usage want;
};

static struct smaps_case smaps_cases[] = {
	{ "exactly the first mapping",
	  H,
	  H + 32 * MIB,
	  { 32 * MIB, 30000 * 1024ULL, 2768 * 1024ULL, 1 } },
	{ "exactly the second half",
	  H + 32 * MIB + PAGE,
	  H + 64 * MIB + PAGE,
	  { 32 * MIB, 32 * MIB, 0, 1 } },
	{ "all three of the guest RAM",
	  H,
	  H + 64 * MIB + PAGE,
	  { 64 * MIB + PAGE, 62768 * 1024ULL, 2768 * 1024ULL, 3 } },
	{ "inside a mapping counts all of it",
	  H + MIB,
	  H + 2 * MIB,
	  { 32 * MIB, 30000 * 1024ULL, 2768 * 1024ULL, 1 } },
	{ "the last byte of a mapping",
	  H + 32 * MIB - 1,
	  H + 32 * MIB,
	  { 32 * MIB, 30000 * 1024ULL, 2768 * 1024ULL, 1 } },
	{ "ending where a mapping starts", H - PAGE, H, { 0, 0, 0, 0 } },
	{ "between mappings", H + 64 * MIB + PAGE, 0x7f1000000000ULL, { 0, 0, 0, 0 } },
	{ "the library", 0x7f1000000000ULL, 0x7f1000001000ULL, { 132 * 1024, 100 * 1024, 0, 1 } },
};

ParameterizedTestParameters(smaps, range_usage)
{
	return cr_make_param_array(struct smaps_case, smaps_cases, G_N_ELEMENTS(smaps_cases));
}

ParameterizedTest(struct smaps_case *c, smaps, range_usage)
{
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_smaps_parse_range_usage(smaps_text, c->start, c->end, &u, &err),
		  "%s: expected a parse, got: %s", c->name, err ? err->message : "?");
	cr_expect_eq(u.vma_bytes, c->want.vma_bytes,
		     "%s: vma_bytes %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, c->name,
		     (guint64)u.vma_bytes, (guint64)c->want.vma_bytes);
	cr_expect_eq(u.rss_bytes, c->want.rss_bytes,
		     "%s: rss_bytes %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, c->name,
		     (guint64)u.rss_bytes, (guint64)c->want.rss_bytes);
	cr_expect_eq(u.swap_bytes, c->want.swap_bytes,
		     "%s: swap_bytes %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, c->name,
		     (guint64)u.swap_bytes, (guint64)c->want.swap_bytes);
	cr_expect_eq(u.nr_vmas, c->want.nr_vmas, "%s: %u mappings, expected %u", c->name, u.nr_vmas,
		     c->want.nr_vmas);
}

struct bad_smaps_case {
	char name[64];
	char text[256];
	char words[64];
};

static struct bad_smaps_case bad_smaps_cases[] = {
	{ "a mapping line that does not parse", "7f0000000000-zz rw-p 0 00:00 0\nRss: 4 kB\n",
	  "does not parse|line 1" },
	{ "a mapping ending before it starts", "7f0000002000-7f0000001000 rw-p 0 00:00 0\n",
	  "does not parse" },
	{ "Rss not a number", "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: abc kB\nSwap: 0 kB\n",
	  "malformed 'Rss: abc kB'" },
	{ "Rss without kB", "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: 4\nSwap: 0 kB\n",
	  "malformed" },
	{ "Rss twice",
	  "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: 4 kB\nRss: 4 kB\nSwap: 0 kB\n",
	  "second" },
	{ "no Swap line", "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: 4 kB\n", "no Swap" },
	{ "no Rss line", "7f0000000000-7f0000001000 rw-p 0 00:00 0\nSwap: 4 kB\n", "no Rss" },
	{ "a field before any mapping", "Rss: 4 kB\n7f0000000000-7f0000001000 rw-p 0 00:00 0\n",
	  "before any mapping" },
	{ "kB overflowing bytes",
	  "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: 18446744073709551 kB\nSwap: 0 kB\n",
	  "malformed" },
};

ParameterizedTestParameters(smaps, invalid)
{
	return cr_make_param_array(struct bad_smaps_case, bad_smaps_cases,
				   G_N_ELEMENTS(bad_smaps_cases));
}

ParameterizedTest(struct bad_smaps_case *c, smaps, invalid)
{
	struct vr_range_usage u = { .nr_vmas = 77 };
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_smaps_parse_range_usage(c->text, H, H + PAGE, &u, &err),
		      "%s: expected an error", c->name);
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED, c->words, c->name);
	cr_assert_eq(u.nr_vmas, 77, "%s: the output is left alone on failure", c->name);
}

Test(smaps, mappings_outside_the_range_are_not_checked)
{
	/* a mapping without Swap that does not overlap the range is not an error */
	const char *text = "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: 4 kB\n"
			   "7f0000001000-7f0000002000 rw-p 0 00:00 0\nRss: 4 kB\nSwap: 0 kB\n";
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert(vr_smaps_parse_range_usage(text, H + PAGE, H + 2 * PAGE, &u, &err),
		  "expected a parse: %s", err ? err->message : "");
	cr_assert_eq(u.rss_bytes, PAGE, "one page resident, got %" G_GUINT64_FORMAT,
		     (guint64)u.rss_bytes);
}

Test(smaps, empty_range_and_empty_text)
{
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert_not(vr_smaps_parse_range_usage(smaps_text, H, H, &u, &err), "an empty range");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID, "empty",
		     "empty range");
	g_clear_error(&err);
	cr_assert(vr_smaps_parse_range_usage("", H, H + PAGE, &u, &err),
		  "an exited process has an empty smaps: %s", err ? err->message : "");
	cr_assert_eq(u.nr_vmas, 0, "no mapping in an empty smaps");
}

Test(smaps, read_from_a_fake_procfs)
{
	g_autofree char *root = tree_new();
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	tree_put(root, "4242/smaps", smaps_text);
	cr_assert(vr_smaps_read_range_usage(root, 4242, H, H + 64 * MIB + PAGE, &u, &err),
		  "expected to read the fake smaps: %s", err ? err->message : "");
	cr_assert_eq(u.rss_bytes, 62768 * 1024ULL, "Rss of the guest RAM, got %" G_GUINT64_FORMAT,
		     (guint64)u.rss_bytes);
	cr_assert_eq(u.swap_bytes, 2768 * 1024ULL, "Swap of the guest RAM");

	cr_assert_not(vr_smaps_read_range_usage(root, 4243, H, H + PAGE, &u, &err),
		      "no such pid in the fake procfs");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE, "no such process",
		     "missing pid");
	cr_assert(strstr(err->message, "4243/smaps"), "the message names the file: %s",
		  err->message);
	g_clear_error(&err);

	tree_put(root, "4244/smaps", "7f0000000000-7f0000001000 rw-p 0 00:00 0\nRss: x kB\n");
	cr_assert_not(vr_smaps_read_range_usage(root, 4244, H, H + PAGE, &u, &err),
		      "a malformed file");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED, "line 2",
		     "malformed file");
	cr_assert(strstr(err->message, "4244/smaps"), "the message names the file: %s",
		  err->message);
	tree_rm(root);
}

Test(smaps, this_process)
{
	size_t len = 16 * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct vr_range_usage u;
	g_autoptr(GError) err = NULL;

	cr_assert_neq(p, MAP_FAILED, "cannot map %zu bytes", len);
	if (!g_file_test("/proc/self/smaps", G_FILE_TEST_EXISTS))
		cr_skip_test("no /proc/self/smaps (procfs is not mounted)");
	memset(p, 0x5a, len);
	cr_assert(vr_smaps_read_range_usage("/proc", getpid(), (uint64_t)(uintptr_t)p,
					    (uint64_t)(uintptr_t)p + len, &u, &err),
		  "expected to read our own smaps: %s", err ? err->message : "");
	cr_assert_geq(u.nr_vmas, 1, "the mapping is listed");
	cr_assert_geq(u.rss_bytes, len,
		      "the %zu bytes written are resident, got %" G_GUINT64_FORMAT, len,
		      (guint64)u.rss_bytes);
	munmap(p, len);
}

/* ---- batching, against a played kernel ---- */

/**
 * struct fake_kernel - a process_madvise() that advises ranges in order,
 * like the kernel, and logs what it advised.
 * @truncate_bytes:	like MAX_RW_COUNT: a call's ranges are cut to this
 *			many bytes (0: no cut).
 * @bad_addr:		an address whose range fails with @bad_errno (0: none).
 * @eintr_calls:	how many first calls fail with EINTR.
 * @zero:		return 0 (no progress).
 * @nr_calls:		calls made.
 * @max_iov_seen:	the most ranges one call got.
 * @advised:		struct iovec of every range advised, in order.
 */
struct fake_kernel {
	uint64_t truncate_bytes;
	uint64_t bad_addr;
	int bad_errno;
	guint eintr_calls;
	gboolean zero;
	guint nr_calls;
	size_t max_iov_seen;
	GArray *advised;
};

static ssize_t fake_madvise(int pidfd, const struct iovec *v, size_t n, int advice,
			    unsigned int flags, void *data)
{
	struct fake_kernel *k = data;
	uint64_t total = 0;

	(void)pidfd;
	cr_assert_eq(advice, 21, "the advice is MADV_PAGEOUT");
	cr_assert_eq(flags, 0, "no flags");
	cr_assert_leq(n, VR_HOST_PAGEOUT_MAX_IOVECS, "at most IOV_MAX ranges per call, got %zu", n);
	k->nr_calls++;
	k->max_iov_seen = MAX(k->max_iov_seen, n);
	if (k->eintr_calls > 0) {
		k->eintr_calls--;
		errno = EINTR;
		return -1;
	}
	if (k->zero)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t s = iov_start(&v[i]), len = v[i].iov_len;

		if (k->truncate_bytes && len > k->truncate_bytes - total)
			len = k->truncate_bytes - total;
		if (len == 0)
			break;
		if (k->bad_addr && k->bad_addr >= s && k->bad_addr < s + len) {
			if (total > 0)
				return (ssize_t)total;
			errno = k->bad_errno;
			return -1;
		}
		g_array_append_val(k->advised, ((struct iovec){ v[i].iov_base, len }));
		total += len;
	}
	return (ssize_t)total;
}

static struct fake_kernel *fake_new(void)
{
	struct fake_kernel *k = g_new0(struct fake_kernel, 1);

	k->advised = g_array_new(FALSE, FALSE, sizeof(struct iovec));
	return k;
}

static void fake_free(struct fake_kernel *k)
{
	g_array_unref(k->advised);
	g_free(k);
}
typedef struct fake_kernel fake_kernel;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(fake_kernel, fake_free)

/* Check that @k advised exactly the bytes of @want (in order, each once). */
static void expect_advised_exactly(const struct fake_kernel *k, const struct iovec *want, guint nr)
{
	guint w = 0;
	uint64_t pos = nr ? iov_start(&want[0]) : 0;

	for (guint i = 0; i < k->advised->len; i++) {
		const struct iovec *a = &g_array_index(k->advised, struct iovec, i);

		while (w < nr && pos == iov_start(&want[w]) + want[w].iov_len) {
			w++;
			pos = w < nr ? iov_start(&want[w]) : 0;
		}
		cr_assert_lt(w, nr, "advised more than asked: 0x%" G_GINT64_MODIFIER "x",
			     (guint64)iov_start(a));
		cr_assert_eq(iov_start(a), pos,
			     "advised piece %u starts at 0x%" G_GINT64_MODIFIER
			     "x, expected 0x%" G_GINT64_MODIFIER "x (no gap, no byte twice)",
			     i, (guint64)iov_start(a), (guint64)pos);
		cr_assert_leq(pos + a->iov_len, iov_start(&want[w]) + want[w].iov_len,
			      "piece %u runs past range %u", i, w);
		pos += a->iov_len;
	}
	while (w < nr && pos == iov_start(&want[w]) + want[w].iov_len) {
		w++;
		pos = w < nr ? iov_start(&want[w]) : 0;
	}
	cr_assert_eq(w, nr, "advised only %u of %u ranges", w, nr);
}

Test(pageout_batch, more_ranges_than_iov_max)
{
	g_autoptr(fake_kernel) k = fake_new();
	g_autofree struct iovec *r = g_new(struct iovec, 2500);
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;

	for (guint i = 0; i < 2500; i++)
		r[i] = iov(H + 2 * i * PAGE, PAGE);
	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 2500, G_MAXUINT64, &advised, &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(k->nr_calls, 3, "2500 ranges take 3 calls of at most 1024, got %u",
		     k->nr_calls);
	cr_assert_eq(k->max_iov_seen, 1024, "full calls carry 1024 ranges, got %zu",
		     k->max_iov_seen);
	cr_assert_eq(advised, 2500 * PAGE, "every page advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	expect_advised_exactly(k, r, 2500);
}

Test(pageout_batch, a_big_range_takes_calls_of_a_gib)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * GIB + 2 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 1, G_MAXUINT64, &advised, &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(k->nr_calls, 4, "3 GiB + 2 pages: 4 calls of at most 1 GiB, got %u",
		     k->nr_calls);
	cr_assert_eq(advised, 3 * GIB + 2 * PAGE, "everything advised");
	expect_advised_exactly(k, r, 1);
}

Test(pageout_batch, partial_returns_continue_after_the_prefix)
{
	/* a kernel that cuts every call to 5 pages, as it cuts to MAX_RW_COUNT */
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE), iov(H + 0x10000, 4 * PAGE), iov(H + 0x20000, PAGE),
			     iov(H + 0x30000, 6 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	k->truncate_bytes = 5 * PAGE;
	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 4, G_MAXUINT64, &advised, &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(advised, 14 * PAGE, "all 14 pages advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cr_assert_eq(k->nr_calls, 3, "14 pages at 5 a call: 3 calls, got %u", k->nr_calls);
	expect_advised_exactly(k, r, 4);
}

Test(pageout_batch, the_quota_caps_the_bytes)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE), iov(H + 0x10000, 4 * PAGE), iov(H + 0x20000, PAGE) };
	struct iovec want[] = { iov(H, 3 * PAGE), iov(H + 0x10000, 2 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	/* 5 pages and a half: rounded down to 5, the second range cut after 2 */
	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 3, 5 * PAGE + PAGE / 2, &advised,
				       &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(advised, 5 * PAGE, "5 pages advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cr_assert_eq(k->nr_calls, 1, "one call");
	expect_advised_exactly(k, want, 2);
}

Test(pageout_batch, a_quota_of_zero_advises_nothing)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;

	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 1, PAGE - 1, &advised, &err),
		  "less than a page of quota is not an error: %s", err ? err->message : "");
	cr_assert_eq(advised, 0, "nothing advised");
	cr_assert_eq(k->nr_calls, 0, "no call made");
	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, NULL, 0, G_MAXUINT64, &advised, &err),
		  "no range is not an error");
	cr_assert_eq(k->nr_calls, 0, "no call made");
}

Test(pageout_batch, empty_ranges_are_skipped)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 0), iov(H + 0x10000, PAGE), iov(H + 0x20000, 0) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 3, G_MAXUINT64, &advised, &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(advised, PAGE, "one page");
	cr_assert_eq(k->advised->len, 1, "only the non-empty range went to the kernel");
}

Test(pageout_batch, eintr_is_repeated)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	k->eintr_calls = 2;
	cr_assert(vr_host_pageout_with(fake_madvise, k, 3, r, 1, G_MAXUINT64, &advised, &err),
		  "EINTR is repeated: %s", err ? err->message : "");
	cr_assert_eq(k->nr_calls, 3, "two interrupted calls and one that works, got %u",
		     k->nr_calls);
	cr_assert_eq(advised, 3 * PAGE, "everything advised");
}

Test(pageout_batch, no_progress_is_an_error)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;

	k->zero = TRUE;
	cr_assert_not(vr_host_pageout_with(fake_madvise, k, 7, r, 1, G_MAXUINT64, &advised, &err),
		      "a kernel that advises nothing must not loop");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED, "no progress",
		     "zero return");
	cr_assert_eq(advised, 0, "nothing advised");
	cr_assert_eq(k->nr_calls, 1, "one call");
}

Test(pageout_batch, stops_at_the_range_that_fails)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, 3 * PAGE), iov(H + 0x10000, 4 * PAGE), iov(H + 0x20000, PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;

	k->bad_addr = H + 0x12000; /* inside range 1 */
	k->bad_errno = ENOMEM;
	cr_assert_not(vr_host_pageout_with(fake_madvise, k, 7, r, 3, G_MAXUINT64, &advised, &err),
		      "range 1 fails");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_UNMAPPED,
		     "not wholly mapped", "unmapped range");
	cr_assert(msg_names_number(err->message, 1) && strstr(err->message, "0x7f0000010000"),
		  "the message names range 1 and its address: %s", err->message);
	cr_assert(msg_names_number(err->message, 7), "the message names pidfd 7: %s", err->message);
	cr_assert_eq(advised, 3 * PAGE,
		     "the 3 pages before it were advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cr_assert_eq(k->nr_calls, 2, "a partial call, then the call that fails, got %u",
		     k->nr_calls);
	cr_assert_eq(k->advised->len, 1, "nothing after the failed range is advised");
}

struct errno_case {
	char name[32];
	int e;
	int code;
	char words[96];
};

static struct errno_case errno_cases[] = {
	{ "ESRCH", ESRCH, VR_HOST_PAGEOUT_ERROR_GONE, "exited" },
	{ "EBADF", EBADF, VR_HOST_PAGEOUT_ERROR_BAD_PIDFD, "not an open pidfd" },
	{ "EPERM", EPERM, VR_HOST_PAGEOUT_ERROR_PERMISSION, "CAP_SYS_NICE" },
	{ "EACCES", EACCES, VR_HOST_PAGEOUT_ERROR_PERMISSION, "PTRACE_MODE_READ" },
	{ "ENOSYS", ENOSYS, VR_HOST_PAGEOUT_ERROR_UNSUPPORTED, "5.10" },
	{ "EINVAL", EINVAL, VR_HOST_PAGEOUT_ERROR_INVALID, "locked memory" },
	{ "ENOMEM", ENOMEM, VR_HOST_PAGEOUT_ERROR_UNMAPPED, "not wholly mapped" },
	{ "EIO", EIO, VR_HOST_PAGEOUT_ERROR_FAILED, "input/output error" },
};

ParameterizedTestParameters(pageout_batch, errno_messages)
{
	return cr_make_param_array(struct errno_case, errno_cases, G_N_ELEMENTS(errno_cases));
}

ParameterizedTest(struct errno_case *c, pageout_batch, errno_messages)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;

	k->bad_addr = H;
	k->bad_errno = c->e;
	cr_assert_not(vr_host_pageout_with(fake_madvise, k, 9, r, 1, G_MAXUINT64, &advised, &err),
		      "%s: expected an error", c->name);
	assert_error(err, VR_HOST_PAGEOUT_ERROR, c->code, c->words, c->name);
	cr_assert_eq(advised, 0, "%s: nothing advised", c->name);
}

struct bad_range_case {
	char name[48];
	uint64_t start;
	uint64_t len;
	char words[48];
};

static struct bad_range_case bad_range_cases[] = {
	{ "address not page-aligned", H + 0x800, PAGE, "not page-aligned" },
	{ "length not whole pages", H, PAGE + 1, "not page-aligned" },
	{ "wraps around", G_MAXUINT64 - 0xfff, 2 * PAGE, "wraps" },
};

ParameterizedTestParameters(pageout_batch, invalid_ranges)
{
	return cr_make_param_array(struct bad_range_case, bad_range_cases,
				   G_N_ELEMENTS(bad_range_cases));
}

ParameterizedTest(struct bad_range_case *c, pageout_batch, invalid_ranges)
{
	g_autoptr(fake_kernel) k = fake_new();
	struct iovec r[] = { iov(H, PAGE), iov(c->start, c->len) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;

	cr_assert_not(vr_host_pageout_with(fake_madvise, k, 3, r, 2, G_MAXUINT64, &advised, &err),
		      "%s: expected an error", c->name);
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID, c->words, c->name);
	cr_assert(msg_names_number(err->message, 1), "%s: the message names range 1: %s", c->name,
		  err->message);
	cr_assert_eq(k->nr_calls, 0, "%s: nothing goes to the kernel", c->name);
	cr_assert_eq(advised, 0, "%s: nothing advised", c->name);
}

/* ---- against real processes ---- */

/**
 * struct child - a child process that waits until @ctl_fd (the write end of
 * its control pipe) is closed, then exits; it dies with its parent.
 */
struct child {
	pid_t pid;
	int ctl_fd;
};

/*
 * Fork a child that writes to every page of [@p, @p + @len) (its own
 * copies), unmaps [@hole, @hole + @hole_len) when @hole_len > 0, says it is
 * ready, and waits.
 */
static struct child child_start(char *p, size_t len, char *hole, size_t hole_len)
{
	int ctl[2], ready[2];
	struct child c;
	char b;

	cr_assert_eq(pipe2(ctl, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	c.pid = fork();
	cr_assert_geq(c.pid, 0, "fork: %s", g_strerror(errno));
	if (c.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ctl[1]);
		close(ready[0]);
		for (size_t off = 0; off < len; off += PAGE)
			p[off] = (char)(off / PAGE);
		if (hole_len)
			munmap(hole, hole_len);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		while (read(ctl[0], &b, 1) > 0)
			;
		_exit(0);
	}
	close(ctl[0]);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &b, 1), 1, "the child did not start");
	close(ready[0]);
	c.ctl_fd = ctl[1];
	return c;
}

/* Let the child exit and reap it. */
static void child_stop(struct child *c)
{
	int status;

	close(c->ctl_fd);
	cr_assert_eq(waitpid(c->pid, &status, 0), c->pid, "waitpid: %s", g_strerror(errno));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d)",
		  status);
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("process_madvise on another process needs CAP_SYS_NICE: run as root");
}

static ssize_t counting_madvise(int pidfd, const struct iovec *v, size_t n, int advice,
				unsigned int flags, void *data)
{
	struct fake_kernel *k = data;

	cr_assert_leq(n, VR_HOST_PAGEOUT_MAX_IOVECS, "at most IOV_MAX ranges per call, got %zu", n);
	k->nr_calls++;
	k->max_iov_seen = MAX(k->max_iov_seen, n);
	return (ssize_t)syscall(SYS_process_madvise, pidfd, v, n, advice, flags);
}

Test(pageout_real, a_child_with_more_ranges_than_iov_max)
{
	const guint nr = 1500;
	size_t len = 2 * nr * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	g_autoptr(fake_kernel) k = NULL;
	g_autofree struct iovec *r = NULL;
	g_autoptr(GError) err = NULL;
	uint64_t advised = 0;
	struct child c;
	int pidfd;

	need_root();
	cr_assert_neq(p, MAP_FAILED, "cannot map %zu bytes", len);
	k = fake_new();
	r = g_new(struct iovec, nr);
	c = child_start(p, len, NULL, 0);
	pidfd = vr_pidfd_open(c.pid, &err);
	cr_assert_geq(pidfd, 0, "pidfd of the child: %s", err ? err->message : "");
	/* every other page: 1500 ranges that cannot merge */
	for (guint i = 0; i < nr; i++)
		r[i] = iov((uint64_t)(uintptr_t)p + 2 * i * PAGE, PAGE);
	cr_assert(vr_host_pageout_with(counting_madvise, k, pidfd, r, nr, G_MAXUINT64, &advised,
				       &err),
		  "expected the child's pages to be advised: %s", err ? err->message : "");
	cr_assert_eq(advised, nr * PAGE, "all %u pages advised, got %" G_GUINT64_FORMAT, nr,
		     (guint64)advised);
	cr_assert_eq(k->nr_calls, 2, "1500 ranges: 2 calls, got %u", k->nr_calls);
	cr_assert_eq(k->max_iov_seen, 1024, "a full call has 1024 ranges, got %zu",
		     k->max_iov_seen);

	/* the quota stops after 100 pages: one call */
	k->nr_calls = 0;
	cr_assert(vr_host_pageout_with(counting_madvise, k, pidfd, r, nr, 100 * PAGE, &advised,
				       &err),
		  "expected success: %s", err ? err->message : "");
	cr_assert_eq(advised, 100 * PAGE, "100 pages advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	cr_assert_eq(k->nr_calls, 1, "one call, got %u", k->nr_calls);

	/* and the plain entry point does the same */
	cr_assert(vr_host_pageout(pidfd, r, nr, G_MAXUINT64, &advised, &err), "vr_host_pageout: %s",
		  err ? err->message : "");
	cr_assert_eq(advised, nr * PAGE, "all pages advised");
	close(pidfd);
	child_stop(&c);
	munmap(p, len);
}

Test(pageout_real, an_unmapped_range)
{
	size_t len = 8 * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)p;
	/* pages 0-1, 2-3 (page 3 unmapped in the child), 6-7 */
	struct iovec r[] = { iov(base, 2 * PAGE), iov(base + 2 * PAGE, 2 * PAGE),
			     iov(base + 6 * PAGE, 2 * PAGE) };
	g_autoptr(GError) err = NULL;
	g_autofree char *addr = NULL;
	uint64_t advised = 0;
	struct child c;
	int pidfd;

	need_root();
	cr_assert_neq(p, MAP_FAILED, "cannot map %zu bytes", len);
	c = child_start(p, len, p + 3 * PAGE, PAGE);
	pidfd = vr_pidfd_open(c.pid, &err);
	cr_assert_geq(pidfd, 0, "pidfd of the child: %s", err ? err->message : "");
	cr_assert_not(vr_host_pageout(pidfd, r, 3, G_MAXUINT64, &advised, &err),
		      "a range with an unmapped page must fail");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_UNMAPPED,
		     "not wholly mapped", "unmapped page");
	addr = g_strdup_printf("0x%" G_GINT64_MODIFIER "x", (guint64)(base + 2 * PAGE));
	cr_assert(msg_names_number(err->message, 1) && strstr(err->message, addr),
		  "the message names range 1 at %s: %s", addr, err->message);
	cr_assert_eq(advised, 2 * PAGE,
		     "the 2 pages before it were advised, got %" G_GUINT64_FORMAT,
		     (guint64)advised);
	close(pidfd);
	child_stop(&c);
	munmap(p, len);
}

Test(pageout_real, a_dead_pid)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *pid_text = NULL;
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0, "fork: %s", g_strerror(errno));
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid: %s", g_strerror(errno));
	cr_assert_eq(vr_pidfd_open(pid, &err), -1, "a reaped pid has no process");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE, "no process",
		     "dead pid");
	cr_assert(msg_names_number(err->message, pid), "the message names pid %d: %s", (int)pid,
		  err->message);
	g_clear_error(&err);
	cr_assert_eq(vr_pidfd_open(0, &err), -1, "pid 0");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID, "not a process id",
		     "pid 0");
	g_clear_error(&err);
	cr_assert_eq(vr_pidfd_open(-5, &err), -1, "pid -5");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID, "-5", "pid -5");
}

Test(pageout_real, a_process_that_exits_after_its_pidfd_opened)
{
	size_t len = 4 * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec r[] = { iov((uint64_t)(uintptr_t)p, len) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;
	struct child c;
	int pidfd;

	cr_assert_neq(p, MAP_FAILED, "cannot map %zu bytes", len);
	c = child_start(p, len, NULL, 0);
	pidfd = vr_pidfd_open(c.pid, &err);
	cr_assert_geq(pidfd, 0, "pidfd of the child: %s", err ? err->message : "");
	child_stop(&c);
	cr_assert_not(vr_host_pageout(pidfd, r, 1, G_MAXUINT64, &advised, &err),
		      "the process has exited");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE, "has exited",
		     "exited process");
	cr_assert(msg_names_number(err->message, pidfd), "the message names pidfd %d: %s", pidfd,
		  err->message);
	cr_assert_eq(advised, 0, "nothing advised");
	close(pidfd);
	munmap(p, len);
}

Test(pageout_real, a_closed_pidfd_and_a_file_that_is_no_pidfd)
{
	struct iovec r[] = { iov(H, PAGE) };
	g_autoptr(GError) err = NULL;
	uint64_t advised = 1;
	int fds[2];

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	close(fds[1]);
	/* fds[0] is a pipe, fds[1] is closed */
	cr_assert_not(vr_host_pageout(fds[1], r, 1, G_MAXUINT64, &advised, &err), "a closed pidfd");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_BAD_PIDFD,
		     "not an open pidfd", "closed pidfd");
	cr_assert(msg_names_number(err->message, fds[1]), "the message names fd %d: %s", fds[1],
		  err->message);
	g_clear_error(&err);
	cr_assert_not(vr_host_pageout(fds[0], r, 1, G_MAXUINT64, &advised, &err), "a pipe");
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_BAD_PIDFD,
		     "not an open pidfd", "a pipe as pidfd");
	cr_assert_eq(advised, 0, "nothing advised");
	close(fds[0]);
}

Test(pageout_real, a_caller_without_privileges)
{
	size_t len = 4 * PAGE;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t parent = getpid(), pid;
	int out[2], status;
	char buf[512] = { 0 };
	g_autofree char *code = NULL;
	ssize_t n;

	need_root();
	code = g_strdup_printf("%d ", VR_HOST_PAGEOUT_ERROR_PERMISSION);
	cr_assert_neq(p, MAP_FAILED, "cannot map %zu bytes", len);
	memset(p, 1, len);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0, "pipe: %s", g_strerror(errno));
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", g_strerror(errno));
	if (pid == 0) {
		/* as nobody, page out memory of this (root's) test process */
		struct iovec r[] = { iov((uint64_t)(uintptr_t)p, len) };
		GError *e = NULL;
		uint64_t advised;
		int pidfd;
		char *msg;

		close(out[0]);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(3);
		pidfd = vr_pidfd_open(parent, &e);
		if (pidfd < 0)
			msg = g_strdup_printf("open %d %s", e->code, e->message);
		else if (vr_host_pageout(pidfd, r, 1, G_MAXUINT64, &advised, &e))
			msg = g_strdup("no error");
		else
			msg = g_strdup_printf("%d %s", e->code, e->message);
		if (write(out[1], msg, strlen(msg)) < 0)
			_exit(4);
		_exit(0);
	}
	close(out[1]);
	n = read(out[0], buf, sizeof(buf) - 1);
	close(out[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid: %s", g_strerror(errno));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the unprivileged child failed (status %d; 3: cannot drop privileges)", status);
	cr_assert_gt(n, 0, "the child reported nothing");
	cr_assert(g_str_has_prefix(buf, code), "expected error code %s(PERMISSION), got: %s", code,
		  buf);
	cr_assert(msg_has_any(buf, "CAP_SYS_NICE") && msg_has_any(buf, "PTRACE_MODE_READ"),
		  "the message says what is needed: %s", buf);
	munmap(p, len);
}

/* ---- pagemap: the resident pages of a range ---- */

TestSuite(pagemap, .description = "vr_pagemap_read_resident(): bounded, checked reads");

/**
 * struct fake_pagemap - a pagemap file played from a page string ('P'
 * present, 'S' swapped, '.' neither) for the pages from H on.
 * @pages:	the string; pages beyond it read as absent.
 * @short_entries: when > 0, each read returns at most this many entries.
 * @odd_bytes:	return this many bytes (not a whole entry) on the first read.
 * @eof_at:	a read at this offset (bytes) returns 0 (0: never).
 * @err_at, @err: a read at this offset fails with @err (0: never).
 * @eintr:	how many first reads fail with EINTR.
 * @nr_reads, @bytes_read, @max_count: what was asked.
 */
struct fake_pagemap {
	const char *pages;
	size_t short_entries;
	size_t odd_bytes;
	off_t eof_at;
	off_t err_at;
	int err;
	guint eintr;
	guint nr_reads;
	uint64_t bytes_read;
	size_t max_count;
};

static ssize_t fake_pread(int fd, void *buf, size_t count, off_t offset, void *data)
{
	struct fake_pagemap *f = data;
	uint64_t *e = buf;
	size_t n = count / 8;

	(void)fd;
	cr_assert_eq(count % 8, 0, "whole entries asked");
	cr_assert_eq(offset % 8, 0, "at an entry");
	f->nr_reads++;
	f->max_count = MAX(f->max_count, count);
	if (f->eintr) {
		f->eintr--;
		errno = EINTR;
		return -1;
	}
	if (f->eof_at && offset == f->eof_at)
		return 0;
	if (f->err_at && offset == f->err_at) {
		errno = f->err;
		return -1;
	}
	if (f->odd_bytes) {
		size_t b = f->odd_bytes;

		f->odd_bytes = 0;
		return (ssize_t)b;
	}
	if (f->short_entries)
		n = MIN(n, f->short_entries);
	for (size_t i = 0; i < n; i++) {
		uint64_t page = (uint64_t)offset / 8 + i - H / PAGE;
		char c = page < strlen(f->pages) ? f->pages[page] : '.';

		e[i] = c == 'P' ? (VR_PAGEMAP_PRESENT | (0x100 + i)) :
		       c == 'S' ? (VR_PAGEMAP_SWAPPED | (i << 5)) :
				  0;
	}
	f->bytes_read += n * 8;
	return (ssize_t)(n * 8);
}

/* The offset in the pagemap file of the page at @addr. */
#define PM_OFF(addr) ((off_t)((addr) / PAGE * 8))

Test(pagemap, resident_runs_of_several_ranges_in_order)
{
	struct fake_pagemap f = { .pages = "PPSS..PPPPSP" };
	const struct iovec r[] = { { (void *)(uintptr_t)(H + 6 * PAGE), 6 * PAGE },
				   { (void *)(uintptr_t)H, 4 * PAGE },
				   { (void *)(uintptr_t)(H + 4 * PAGE), 0 } };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;

	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert(vr_pagemap_read_resident_with(fake_pread, &f, 3, 42, r, 3, &rr, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(rr.runs->len, 3, "runs: 6-10, 11-12, 0-2");
	cr_assert_eq(g_array_index(rr.runs, struct vr_range, 0).start, H + 6 * PAGE);
	cr_assert_eq(g_array_index(rr.runs, struct vr_range, 0).end, H + 10 * PAGE);
	cr_assert_eq(g_array_index(rr.runs, struct vr_range, 2).start, H);
	cr_assert_eq(rr.resident_bytes, 7 * PAGE);
	cr_assert_eq(rr.swapped_bytes, 3 * PAGE);
	cr_assert_eq(f.bytes_read, 10 * 8, "only the ranges' entries are read");
	vr_resident_runs_clear(&rr);
}

Test(pagemap, reads_are_chunked_and_stop_at_the_quota)
{
	struct fake_pagemap f = { .pages = "SSSS" }; /* then absent */
	const struct iovec r[] = { { (void *)(uintptr_t)H, 1 * GIB } };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;

	/* a GiB of absent pages: 64 chunks of 4096 entries, never more */
	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert(vr_pagemap_read_resident_with(fake_pread, &f, 3, 42, r, 1, &rr, &err));
	cr_assert_eq(f.max_count, VR_PAGEMAP_CHUNK_ENTRIES * 8, "chunks of at most 32 KiB");
	cr_assert_eq(f.nr_reads, (1 * GIB / PAGE) / VR_PAGEMAP_CHUNK_ENTRIES);
	cr_assert_eq(rr.absent_bytes + rr.swapped_bytes, 1 * GIB);
	vr_resident_runs_clear(&rr);

	/* all present: a quota of 2 pages reads one chunk and stops */
	f = (struct fake_pagemap){ .pages = "PPPPPPPPPPPPPPPP" };
	vr_resident_runs_init(&rr, 2 * PAGE);
	cr_assert(vr_pagemap_read_resident_with(fake_pread, &f, 3, 42, r, 1, &rr, &err));
	cr_assert_eq(f.nr_reads, 1, "the quota was found in the first chunk");
	cr_assert_eq(rr.resident_bytes, 2 * PAGE);
	vr_resident_runs_clear(&rr);
}

Test(pagemap, short_reads_and_eintr_are_continued)
{
	struct fake_pagemap f = { .pages = "PSPPSPPP", .short_entries = 3, .eintr = 2 };
	const struct iovec r[] = { { (void *)(uintptr_t)H, 8 * PAGE } };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;

	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert(vr_pagemap_read_resident_with(fake_pread, &f, 3, 42, r, 1, &rr, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(rr.resident_bytes, 6 * PAGE, "every page read once");
	cr_assert_eq(rr.swapped_bytes, 2 * PAGE);
	cr_assert_eq(rr.runs->len, 3, "P, PP, PPP");
	cr_assert_eq(f.nr_reads, 2 + 3, "two interrupted, then reads of 3, 3 and 2 entries");
	vr_resident_runs_clear(&rr);
}

struct pagemap_fail_case {
	char name[40];
	gboolean eof;
	int err;
	size_t odd_bytes;
	int code;
	char words[80];
};

static struct pagemap_fail_case pagemap_fail_cases[] = {
	{ "end of file: exited", TRUE, 0, 0, VR_HOST_PAGEOUT_ERROR_GONE, "end of file;exited" },
	{ "EPERM", FALSE, EPERM, 0, VR_HOST_PAGEOUT_ERROR_PERMISSION, "not permitted" },
	{ "EACCES", FALSE, EACCES, 0, VR_HOST_PAGEOUT_ERROR_PERMISSION, "denied" },
	{ "ESRCH", FALSE, ESRCH, 0, VR_HOST_PAGEOUT_ERROR_GONE, "No such process" },
	{ "EIO", FALSE, EIO, 0, VR_HOST_PAGEOUT_ERROR_FAILED, "error" },
	{ "a partial entry", FALSE, 0, 12, VR_HOST_PAGEOUT_ERROR_FAILED,
	  "12 bytes;inside an entry" },
};

ParameterizedTestParameters(pagemap, a_failed_read_names_the_pid_and_range)
{
	return cr_make_param_array(struct pagemap_fail_case, pagemap_fail_cases,
				   G_N_ELEMENTS(pagemap_fail_cases));
}

ParameterizedTest(struct pagemap_fail_case *c, pagemap, a_failed_read_names_the_pid_and_range)
{
	/* the second chunk of the range fails; the first is kept */
	uint64_t len = 2 * VR_PAGEMAP_CHUNK_ENTRIES * PAGE;
	uint64_t at = H + VR_PAGEMAP_CHUNK_ENTRIES * PAGE;
	struct fake_pagemap f = { .pages = "PP" };
	const struct iovec r[] = { { (void *)(uintptr_t)H, len } };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;
	g_autofree char *words = NULL;

	if (c->eof)
		f.eof_at = PM_OFF(at);
	if (c->err) {
		f.err_at = PM_OFF(at);
		f.err = c->err;
	}
	if (c->odd_bytes)
		f.odd_bytes = c->odd_bytes; /* the first read */
	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert_not(vr_pagemap_read_resident_with(fake_pread, &f, 3, 4242, r, 1, &rr, &err),
		      "%s: should fail", c->name);
	words = g_strdup_printf("%s;/proc/4242/pagemap;0x7f0000000000, 0x7f0002000000", c->words);
	assert_error(err, VR_HOST_PAGEOUT_ERROR, c->code, words, c->name);
	if (!c->odd_bytes) {
		cr_assert(strstr(err->message, "at [0x7f0001000000, 0x7f0002000000)"),
			  "%s: names the chunk: %s", c->name, err->message);
		cr_assert_eq(rr.resident_bytes, 2 * PAGE, "%s: the first chunk is kept", c->name);
	}
	vr_resident_runs_clear(&rr);
}

Test(pagemap, bad_ranges_and_entries_are_refused)
{
	struct fake_pagemap f = { .pages = "P" };
	const struct iovec odd[] = { { (void *)(uintptr_t)(H + 1), PAGE } };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;

	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert_not(vr_pagemap_read_resident_with(fake_pread, &f, 3, 7, odd, 1, &rr, &err));
	assert_error(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
		     "/proc/7/pagemap;page-aligned", "an unaligned range");
	cr_assert_eq(f.nr_reads, 0, "nothing read");
	vr_resident_runs_clear(&rr);
}

/* This process's own pagemap, for real: touched pages are resident,
 * untouched ones absent. No privilege needed. */
Test(pagemap, this_process)
{
	const size_t n = 64;
	char *buf =
		mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec r = { buf, n * PAGE };
	struct vr_resident_runs rr;
	g_autoptr(GError) err = NULL;
	int pidfd, fd;

	cr_assert_neq(buf, MAP_FAILED);
	cr_assert_eq(madvise(buf, n * PAGE, MADV_NOHUGEPAGE), 0);
	for (size_t i = 0; i < n; i += 2)
		buf[i * PAGE] = 1;
	pidfd = vr_pidfd_open(getpid(), &err);
	cr_assert_geq(pidfd, 0, "%s", err ? err->message : "");
	fd = vr_pagemap_open(getpid(), pidfd, &err);
	cr_assert_geq(fd, 0, "%s", err ? err->message : "");
	vr_resident_runs_init(&rr, G_MAXUINT64);
	cr_assert(vr_pagemap_read_resident(fd, getpid(), &r, 1, &rr, &err), "%s",
		  err ? err->message : "");
	cr_assert_eq(rr.resident_bytes, n / 2 * PAGE, "every other page is resident");
	cr_assert_eq(rr.absent_bytes, n / 2 * PAGE, "the others were never touched");
	cr_assert_eq(rr.runs->len, n / 2, "one run each");
	vr_resident_runs_clear(&rr);
	close(fd);
	close(pidfd);
	munmap(buf, n * PAGE);
}

Test(pagemap, open_names_a_process_that_is_gone)
{
	g_autoptr(GError) err = NULL;
	g_autofree char *pid_text = NULL;
	pid_t child = fork();
	int pidfd;

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	pidfd = vr_pidfd_open(child, &err);
	cr_assert_geq(pidfd, 0, "%s", err ? err->message : "");
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_lt(vr_pagemap_open(child, pidfd, &err), 0, "a reaped child has no pagemap");
	cr_assert(g_error_matches(err, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE),
		  "GONE: %s", err->message);
	pid_text = g_strdup_printf("%d", (int)child);
	cr_assert(strstr(err->message, pid_text), "names the pid: %s", err->message);
	close(pidfd);
}
