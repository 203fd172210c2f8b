/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * process-pageout: pidfd_open, process_madvise(MADV_PAGEOUT) in bounded
 * batches with partial returns, and a range's usage from
 * /proc/<pid>/smaps. See process-pageout.h.
 */
#define _GNU_SOURCE

#include "process-pageout.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The same numbers on every architecture since Linux 5.1 (except alpha). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/* clang-format off */
G_DEFINE_QUARK(vr-host-pageout-error-quark, vr_host_pageout_error)
/* clang-format on */

#define X64 "0x%" G_GINT64_MODIFIER "x"

int vr_pidfd_open(pid_t pid, GError **error)
{
	long fd;
	int e;

	if (pid <= 0) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
			    "pid %d is not a process id", (int)pid);
		return -1;
	}
	fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0)
		return (int)fd;
	e = errno;
	switch (e) {
	case ESRCH:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE,
			    "no process with pid %d: it has exited", (int)pid);
		break;
	case ENOSYS:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_UNSUPPORTED,
			    "cannot open a pidfd for pid %d: this kernel has no pidfd_open "
			    "(Linux 5.3 or later is needed)",
			    (int)pid);
		break;
	case EPERM:
	case EACCES:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_PERMISSION,
			    "not allowed to open a pidfd for pid %d: %s", (int)pid, g_strerror(e));
		break;
	case EINVAL:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
			    "cannot open a pidfd for pid %d: it is not a process (a thread id?)",
			    (int)pid);
		break;
	default:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "cannot open a pidfd for pid %d: %s", (int)pid, g_strerror(e));
		break;
	}
	return -1;
}

static ssize_t process_madvise_syscall(int pidfd, const struct iovec *iov, size_t nr_iov,
				       int advice, unsigned int flags, void *data)
{
	(void)data;
	return (ssize_t)syscall(SYS_process_madvise, pidfd, iov, nr_iov, advice, flags);
}

/* Are all @ranges page-aligned and not wrapping around? Names the first
 * that is not. */
static gboolean check_ranges(const struct iovec *ranges, guint nr, GError **error)
{
	for (guint i = 0; i < nr; i++) {
		uint64_t base = (uint64_t)(uintptr_t)ranges[i].iov_base;
		uint64_t len = ranges[i].iov_len;

		if (base % VR_PAGE_SIZE || len % VR_PAGE_SIZE) {
			g_set_error(
				error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
				"range %u (" X64 ", %" G_GUINT64_FORMAT
				" bytes) is not page-aligned (%llu bytes) in address and length",
				i, (guint64)base, (guint64)len, VR_PAGE_SIZE);
			return FALSE;
		}
		if (len > G_MAXUINT64 - base) {
			g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
				    "range %u (" X64 ", %" G_GUINT64_FORMAT
				    " bytes) wraps around the address space",
				    i, (guint64)base, (guint64)len);
			return FALSE;
		}
	}
	return TRUE;
}

/* The error of a failed call whose first range, [@start, @end) (range
 * @index of the caller's), is the one the kernel stopped at. */
static void set_madvise_error(int e, int pidfd, guint index, uint64_t start, uint64_t end,
			      GError **error)
{
	switch (e) {
	case ESRCH:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_GONE,
			    "the process of pidfd %d has exited", pidfd);
		break;
	case EBADF:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_BAD_PIDFD,
			    "pidfd %d is not an open pidfd (closed, or another kind of file)",
			    pidfd);
		break;
	case EPERM:
	case EACCES:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_PERMISSION,
			    "not allowed to page out memory of the process of pidfd %d (%s): "
			    "MADV_PAGEOUT needs PTRACE_MODE_READ access to the process and "
			    "CAP_SYS_NICE (run as root)",
			    pidfd, g_strerror(e));
		break;
	case ENOSYS:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_UNSUPPORTED,
			    "this kernel has no process_madvise (Linux 5.10 or later is needed)");
		break;
	case EINVAL:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
			    "the kernel refused MADV_PAGEOUT on range %u [" X64 ", " X64
			    ") of the process of pidfd %d (EINVAL): locked memory (mem-lock), "
			    "hugetlbfs and PFN mappings cannot be paged out",
			    index, (guint64)start, (guint64)end, pidfd);
		break;
	case ENOMEM:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_UNMAPPED,
			    "range %u [" X64 ", " X64 ") is not wholly mapped in the process of "
			    "pidfd %d, or the kernel is out of memory (ENOMEM); is the RAM map "
			    "stale?",
			    index, (guint64)start, (guint64)end, pidfd);
		break;
	default:
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "MADV_PAGEOUT on range %u [" X64 ", " X64
			    ") of the process of pidfd %d failed: %s",
			    index, (guint64)start, (guint64)end, pidfd, g_strerror(e));
		break;
	}
}

/*
 * Fill @batch with the next call's ranges from position (@index, @offset) of
 * @ranges: at most VR_HOST_PAGEOUT_MAX_IOVECS ranges and @cap_bytes bytes.
 * Return: the number of ranges; *@call_bytes their total.
 */
static size_t fill_batch(const struct iovec *ranges, guint nr, guint index, uint64_t offset,
			 uint64_t cap_bytes, struct iovec *batch, uint64_t *call_bytes)
{
	size_t nb = 0;

	*call_bytes = 0;
	for (guint j = index; j < nr && nb < VR_HOST_PAGEOUT_MAX_IOVECS && *call_bytes < cap_bytes;
	     j++, offset = 0) {
		uint64_t len = ranges[j].iov_len - offset;

		if (len == 0)
			continue;
		len = MIN(len, cap_bytes - *call_bytes);
		batch[nb].iov_base = (char *)ranges[j].iov_base + offset;
		batch[nb].iov_len = len;
		nb++;
		*call_bytes += len;
	}
	return nb;
}

gboolean vr_host_pageout_with(vr_process_madvise_fn madvise_fn, void *data, int pidfd,
			      const struct iovec *ranges, guint nr, uint64_t max_bytes,
			      uint64_t *advised_bytes, GError **error)
{
	g_autofree struct iovec *batch = NULL;
	uint64_t budget = max_bytes - max_bytes % VR_PAGE_SIZE;
	uint64_t done = 0, offset = 0;
	guint index = 0;

	g_return_val_if_fail(madvise_fn != NULL, FALSE);
	g_return_val_if_fail(nr == 0 || ranges != NULL, FALSE);
	g_return_val_if_fail(advised_bytes != NULL, FALSE);
	*advised_bytes = 0;
	if (!check_ranges(ranges, nr, error))
		return FALSE;
	batch = g_new(struct iovec, VR_HOST_PAGEOUT_MAX_IOVECS);
	while (done < budget) {
		uint64_t call_bytes, adv;
		size_t nb;
		ssize_t ret;

		while (index < nr && offset >= ranges[index].iov_len) {
			index++;
			offset = 0;
		}
		if (index == nr)
			break;
		nb = fill_batch(ranges, nr, index, offset,
				MIN(VR_HOST_PAGEOUT_MAX_CALL_BYTES, budget - done), batch,
				&call_bytes);
		ret = madvise_fn(pidfd, batch, nb, MADV_PAGEOUT, 0, data);
		if (ret < 0) {
			int e = errno;
			uint64_t start = (uint64_t)(uintptr_t)batch[0].iov_base;

			if (e == EINTR)
				continue;
			*advised_bytes = done;
			/* Nothing of this call was advised: its first range failed. */
			set_madvise_error(e, pidfd, index, start,
					  (uint64_t)(uintptr_t)ranges[index].iov_base +
						  ranges[index].iov_len,
					  error);
			return FALSE;
		}
		if (ret == 0 || (uint64_t)ret > call_bytes) {
			*advised_bytes = done;
			g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
				    "process_madvise on pidfd %d advised %zd of %" G_GUINT64_FORMAT
				    " bytes: the kernel made no progress or claimed too much",
				    pidfd, ret, (guint64)call_bytes);
			return FALSE;
		}
		done += (uint64_t)ret;
		/* Continue right after the advised prefix. */
		for (adv = (uint64_t)ret; adv > 0;) {
			uint64_t left = ranges[index].iov_len - offset;

			if (adv < left) {
				offset += adv;
				break;
			}
			adv -= left;
			index++;
			offset = 0;
		}
	}
	*advised_bytes = done;
	return TRUE;
}

gboolean vr_host_pageout(int pidfd, const struct iovec *ranges, guint nr, uint64_t max_bytes,
			 uint64_t *advised_bytes, GError **error)
{
	return vr_host_pageout_with(process_madvise_syscall, NULL, pidfd, ranges, nr, max_bytes,
				    advised_bytes, error);
}

/* ---- /proc/<pid>/smaps ---- */

/*
 * struct smaps_parser - the state of a line-at-a-time smaps parse.
 * @start, @end:	the range asked about.
 * @line_no:		lines seen, for messages.
 * @in_vma:		a mapping line was seen.
 * @counted:		the current mapping overlaps the range.
 * @vma_start, @vma_end: the current mapping's addresses, bytes.
 * @have_rss, @have_swap: its Rss and Swap lines were seen.
 * @rss_bytes, @swap_bytes: their values.
 * @usage:		the sums so far.
 */
struct smaps_parser {
	uint64_t start;
	uint64_t end;
	guint line_no;
	gboolean in_vma;
	gboolean counted;
	gboolean have_rss;
	gboolean have_swap;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t rss_bytes;
	uint64_t swap_bytes;
	struct vr_range_usage usage;
};

/* Add the mapping just finished to the sums. */
static gboolean finish_vma(struct smaps_parser *p, GError **error)
{
	struct vr_range_usage *u = &p->usage;

	if (!p->in_vma || !p->counted)
		return TRUE;
	if (!p->have_rss || !p->have_swap) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "the mapping " X64 "-" X64 " has no %s line", (guint64)p->vma_start,
			    (guint64)p->vma_end, p->have_rss ? "Swap" : "Rss");
		return FALSE;
	}
	if (!g_uint64_checked_add(&u->vma_bytes, u->vma_bytes, p->vma_end - p->vma_start) ||
	    !g_uint64_checked_add(&u->rss_bytes, u->rss_bytes, p->rss_bytes) ||
	    !g_uint64_checked_add(&u->swap_bytes, u->swap_bytes, p->swap_bytes)) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "the sizes up to line %u overflow 64 bits", p->line_no);
		return FALSE;
	}
	u->nr_vmas++;
	return TRUE;
}

/* "START-END ..." with lowercase hexadecimal addresses, END > START. */
static gboolean parse_vma_line(const char *line, uint64_t *start, uint64_t *end)
{
	char *q;

	*start = g_ascii_strtoull(line, &q, 16);
	if (q == line || *q != '-' || !g_ascii_isxdigit(q[1]))
		return FALSE;
	line = q + 1;
	*end = g_ascii_strtoull(line, &q, 16);
	return q != line && (*q == ' ' || *q == '\0') && *end > *start;
}

/* The value of a "Name:<blanks><digits> kB" line after its "Name:", in bytes. */
static gboolean parse_kb(const char *value, uint64_t *bytes)
{
	uint64_t kb;
	char *q;

	while (*value == ' ' || *value == '\t')
		value++;
	if (!g_ascii_isdigit(*value))
		return FALSE;
	errno = 0;
	kb = g_ascii_strtoull(value, &q, 10);
	if (errno || strcmp(q, " kB") != 0 || kb > G_MAXUINT64 / 1024)
		return FALSE;
	*bytes = kb * 1024;
	return TRUE;
}

static gboolean parse_field(struct smaps_parser *p, const char *line, const char *name,
			    gboolean *have, uint64_t *bytes, GError **error)
{
	if (!p->in_vma) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "line %u: %s before any mapping line", p->line_no, name);
		return FALSE;
	}
	if (*have || !parse_kb(line + strlen(name) + 1, bytes)) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
			    "line %u: %s '%s' of the mapping " X64 "-" X64, p->line_no,
			    *have ? "a second" : "a malformed", line, (guint64)p->vma_start,
			    (guint64)p->vma_end);
		return FALSE;
	}
	*have = TRUE;
	return TRUE;
}

/* One line of smaps, without its newline. */
static gboolean parse_line(struct smaps_parser *p, const char *line, GError **error)
{
	p->line_no++;
	/* Mapping lines start with a lowercase hex address; field names with
	 * an uppercase letter ("AnonHugePages", "FilePmdMapped"). */
	if (g_ascii_isdigit(*line) || (*line >= 'a' && *line <= 'f')) {
		uint64_t s, e;

		if (!parse_vma_line(line, &s, &e)) {
			g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_FAILED,
				    "line %u: a mapping line that does not parse: '%s'", p->line_no,
				    line);
			return FALSE;
		}
		if (!finish_vma(p, error))
			return FALSE;
		p->in_vma = TRUE;
		p->vma_start = s;
		p->vma_end = e;
		p->counted = s < p->end && e > p->start;
		p->have_rss = p->have_swap = FALSE;
		p->rss_bytes = p->swap_bytes = 0;
		return TRUE;
	}
	if (g_str_has_prefix(line, "Rss:"))
		return parse_field(p, line, "Rss", &p->have_rss, &p->rss_bytes, error);
	if (g_str_has_prefix(line, "Swap:"))
		return parse_field(p, line, "Swap", &p->have_swap, &p->swap_bytes, error);
	return TRUE;
}

static gboolean parser_init(struct smaps_parser *p, uint64_t start, uint64_t end, GError **error)
{
	if (end <= start) {
		g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
			    "the range [" X64 ", " X64 ") is empty", (guint64)start, (guint64)end);
		return FALSE;
	}
	*p = (struct smaps_parser){ .start = start, .end = end };
	return TRUE;
}

gboolean vr_smaps_parse_range_usage(const char *text, uint64_t start, uint64_t end,
				    struct vr_range_usage *usage, GError **error)
{
	struct smaps_parser p;
	const char *line = text;

	g_return_val_if_fail(text != NULL && usage != NULL, FALSE);
	if (!parser_init(&p, start, end, error))
		return FALSE;
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		g_autofree char *one = g_strndup(line, len);

		if (!parse_line(&p, one, error))
			return FALSE;
		line += len + (nl != NULL);
	}
	if (!finish_vma(&p, error))
		return FALSE;
	*usage = p.usage;
	return TRUE;
}

static void fclose_file(FILE *f)
{
	fclose(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FILE, fclose_file)

gboolean vr_smaps_read_range_usage(const char *procfs, pid_t pid, uint64_t start, uint64_t end,
				   struct vr_range_usage *usage, GError **error)
{
	g_autofree char *pid_dir = g_strdup_printf("%d", (int)pid);
	g_autofree char *path = g_build_filename(procfs, pid_dir, "smaps", NULL);
	g_autoptr(FILE) f = NULL;
	g_autofree char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	struct smaps_parser p;

	g_return_val_if_fail(procfs != NULL && usage != NULL, FALSE);
	if (!parser_init(&p, start, end, error))
		return FALSE;
	f = fopen(path, "re");
	if (!f) {
		int e = errno;

		g_set_error(error, VR_HOST_PAGEOUT_ERROR,
			    e == ENOENT || e == ESRCH ? VR_HOST_PAGEOUT_ERROR_GONE :
			    e == EACCES || e == EPERM ? VR_HOST_PAGEOUT_ERROR_PERMISSION :
							VR_HOST_PAGEOUT_ERROR_FAILED,
			    "cannot open %s: %s", path,
			    e == ENOENT ? "no such process (it has exited?)" : g_strerror(e));
		return FALSE;
	}
	errno = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (!parse_line(&p, line, error)) {
			g_prefix_error(error, "%s: ", path);
			return FALSE;
		}
		errno = 0;
	}
	if (ferror(f) || errno) {
		int e = errno;

		g_set_error(error, VR_HOST_PAGEOUT_ERROR,
			    e == ESRCH ? VR_HOST_PAGEOUT_ERROR_GONE : VR_HOST_PAGEOUT_ERROR_FAILED,
			    "cannot read %s: %s", path, g_strerror(e ? e : EIO));
		return FALSE;
	}
	if (!finish_vma(&p, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	*usage = p.usage;
	return TRUE;
}

/* ------------------------------------------------------------------------- */
/* pagemap: which pages of a range are resident                              */
/* ------------------------------------------------------------------------- */

int vr_pagemap_open(pid_t pid, int pidfd, GError **error)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/pagemap", (int)pid);
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		g_set_error(error, VR_HOST_PAGEOUT_ERROR,
			    e == ENOENT || e == ESRCH ? VR_HOST_PAGEOUT_ERROR_GONE :
			    e == EACCES || e == EPERM ? VR_HOST_PAGEOUT_ERROR_PERMISSION :
							VR_HOST_PAGEOUT_ERROR_FAILED,
			    "cannot open %s (pid %d): %s", path, (int)pid, g_strerror(e));
		return -1;
	}
	/* The pidfd's process alive now means @pid named it when we opened. */
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) != 0) {
		e = errno;
		close(fd);
		g_set_error(error, VR_HOST_PAGEOUT_ERROR,
			    e == ESRCH ? VR_HOST_PAGEOUT_ERROR_GONE : VR_HOST_PAGEOUT_ERROR_FAILED,
			    "pid %d: the process of pidfd %d %s", (int)pid, pidfd,
			    e == ESRCH ? "has exited" : g_strerror(e));
		return -1;
	}
	return fd;
}

static ssize_t pread_syscall(int fd, void *buf, size_t count, off_t offset, void *data)
{
	(void)data;
	return pread(fd, buf, count, offset);
}

/* The error of a pagemap read that returned @got (-1: errno @e) for the
 * chunk [@start, @end) of the range [@rstart, @rend). */
static void set_pagemap_error(ssize_t got, int e, pid_t pid, uint64_t start, uint64_t end,
			      uint64_t rstart, uint64_t rend, GError **error)
{
	int code = VR_HOST_PAGEOUT_ERROR_FAILED;
	g_autofree char *why = NULL;

	if (got == 0) {
		code = VR_HOST_PAGEOUT_ERROR_GONE;
		why = g_strdup("end of file: the process has exited");
	} else if (got > 0) {
		why = g_strdup_printf("a read of %" G_GSSIZE_FORMAT
				      " bytes ends inside an entry of %u bytes",
				      (gssize)got, VR_PAGEMAP_ENTRY_BYTES);
	} else {
		if (e == ESRCH)
			code = VR_HOST_PAGEOUT_ERROR_GONE;
		else if (e == EPERM || e == EACCES)
			code = VR_HOST_PAGEOUT_ERROR_PERMISSION;
		why = g_strdup(g_strerror(e));
	}
	g_set_error(error, VR_HOST_PAGEOUT_ERROR, code,
		    "reading /proc/%d/pagemap at [" X64 ", " X64 ") of the range [" X64 ", " X64
		    "): %s",
		    (int)pid, (guint64)start, (guint64)end, (guint64)rstart, (guint64)rend, why);
}

/* Read the entries of [@start, @end) into @rr, a chunk at a time, until it
 * is full. */
static gboolean read_range(vr_pread_fn pread_fn, void *data, int fd, pid_t pid, uint64_t start,
			   uint64_t end, uint64_t *buf, struct vr_resident_runs *rr, GError **error)
{
	uint64_t addr = start;

	while (addr < end && !vr_resident_runs_full(rr)) {
		uint64_t pages =
			MIN((end - addr) / VR_PAGE_SIZE, (uint64_t)VR_PAGEMAP_CHUNK_ENTRIES);
		size_t want = (size_t)pages * VR_PAGEMAP_ENTRY_BYTES;
		/* < 2^61 for any 64-bit address: fits an off_t. */
		off_t off = (off_t)(addr / VR_PAGE_SIZE * VR_PAGEMAP_ENTRY_BYTES);
		ssize_t got;
		g_autoptr(GError) local = NULL;

		do
			got = pread_fn(fd, buf, want, off, data);
		while (got < 0 && errno == EINTR);
		if (got <= 0 || (size_t)got > want || got % VR_PAGEMAP_ENTRY_BYTES) {
			set_pagemap_error(got, errno, pid, addr, addr + pages * VR_PAGE_SIZE, start,
					  end, error);
			return FALSE;
		}
		pages = (uint64_t)got / VR_PAGEMAP_ENTRY_BYTES; /* a short read: go on after it */
		if (!vr_resident_runs_add(rr, addr, buf, (size_t)pages, &local)) {
			g_set_error(error, VR_HOST_PAGEOUT_ERROR, VR_HOST_PAGEOUT_ERROR_INVALID,
				    "reading /proc/%d/pagemap of the range [" X64 ", " X64 "): %s",
				    (int)pid, (guint64)start, (guint64)end, local->message);
			return FALSE;
		}
		addr += pages * VR_PAGE_SIZE;
	}
	return TRUE;
}

gboolean vr_pagemap_read_resident_with(vr_pread_fn pread_fn, void *data, int fd, pid_t pid,
				       const struct iovec *ranges, guint nr,
				       struct vr_resident_runs *rr, GError **error)
{
	g_autofree uint64_t *buf = NULL;

	g_return_val_if_fail(pread_fn != NULL && rr != NULL && (ranges != NULL || nr == 0), FALSE);
	if (!check_ranges(ranges, nr, error)) {
		g_prefix_error(error, "reading /proc/%d/pagemap: ", (int)pid);
		return FALSE;
	}
	buf = g_new(uint64_t, VR_PAGEMAP_CHUNK_ENTRIES);
	for (guint i = 0; i < nr && !vr_resident_runs_full(rr); i++) {
		uint64_t start = (uint64_t)(uintptr_t)ranges[i].iov_base;

		if (!read_range(pread_fn, data, fd, pid, start, start + ranges[i].iov_len, buf, rr,
				error))
			return FALSE;
	}
	return TRUE;
}

gboolean vr_pagemap_read_resident(int fd, pid_t pid, const struct iovec *ranges, guint nr,
				  struct vr_resident_runs *rr, GError **error)
{
	return vr_pagemap_read_resident_with(pread_syscall, NULL, fd, pid, ranges, nr, rr, error);
}
