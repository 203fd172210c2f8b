/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A temporary swap file for tests that page out for real: made in a new
 * folder on a disk filesystem (never tmpfs), 0600, mkswap, swapon(2); and
 * taken away again (swapoff, file and folder removed) in every path.
 *
 * The folder is named vr-test-swap-<pid>-XXXXXX after the test process, so
 * a later run can find and remove the swap of a run that was killed before
 * its cleanup (test_swap_reap_stale()). /proc/swaps is what `swapon --show`
 * prints: test_swap_list() reads it to check that no swap is left behind.
 *
 * Needs _GNU_SOURCE (fallocate) before the first #include of the test file.
 */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/vfs.h>
#include <unistd.h>

#define TEST_SWAP_PREFIX "vr-test-swap-"
/* f_type of the in-memory filesystems a swap file must not be on. */
#define TEST_SWAP_TMPFS_MAGIC 0x01021994
#define TEST_SWAP_RAMFS_MAGIC 0x858458f6

/**
 * struct test_swap - one temporary swap file.
 * @dir:	its folder (owned), NULL when none was made.
 * @file:	the swap file's path (owned), NULL when none.
 * @active:	swapon succeeded and no swapoff yet.
 */
struct test_swap {
	char *dir;
	char *file;
	gboolean active;
};

/* The file names /proc/swaps lists (`swapon --show`), in its order: owned. */
static inline GPtrArray *test_swap_list(void)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents("/proc/swaps", &text, NULL, NULL))
		return names;
	lines = g_strsplit(text, "\n", -1);
	/* the first line is the header "Filename Type Size Used Priority" */
	for (char **l = lines[0] ? lines + 1 : lines; *l; l++) {
		g_auto(GStrv) fields = g_strsplit_set(*l, " \t", 2);

		if (fields[0] && fields[0][0])
			/* the kernel writes a space in a path as \040 */
			g_ptr_array_add(names, g_strcompress(fields[0]));
	}
	return names;
}

/* Is @path in /proc/swaps? */
static inline gboolean test_swap_listed(const char *path)
{
	g_autoptr(GPtrArray) names = test_swap_list();

	for (guint i = 0; i < names->len; i++)
		if (strcmp(g_ptr_array_index(names, i), path) == 0)
			return TRUE;
	return FALSE;
}

/* swapoff (when active), remove the file and the folder. Idempotent; safe
 * on a zeroed struct. */
static inline void test_swap_off(struct test_swap *s)
{
	if (s->file && (s->active || test_swap_listed(s->file))) {
		if (swapoff(s->file) != 0)
			g_printerr("test-swap: swapoff %s: %s\n", s->file, g_strerror(errno));
		s->active = FALSE;
	}
	if (s->file) {
		g_unlink(s->file);
		g_clear_pointer(&s->file, g_free);
	}
	if (s->dir) {
		g_rmdir(s->dir);
		g_clear_pointer(&s->dir, g_free);
	}
}

/*
 * Turn off and remove the swap files that earlier runs of a swap test left
 * behind when they were killed: those in a folder named after a process
 * that no longer exists.
 */
static inline void test_swap_reap_stale(void)
{
	g_autoptr(GPtrArray) names = test_swap_list();

	for (guint i = 0; i < names->len; i++) {
		const char *file = g_ptr_array_index(names, i);
		g_autofree char *dir = g_path_get_dirname(file);
		g_autofree char *base = g_path_get_basename(dir);
		long pid;

		if (!g_str_has_prefix(base, TEST_SWAP_PREFIX))
			continue;
		pid = strtol(base + strlen(TEST_SWAP_PREFIX), NULL, 10);
		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		g_printerr("test-swap: removing the swap %s of an earlier run (pid %ld)\n", file,
			   pid);
		if (swapoff(file) == 0) {
			g_unlink(file);
			g_rmdir(dir);
		}
	}
}

/* Is @dir on tmpfs or ramfs (or unknown)? */
static inline gboolean test_swap_in_memory_fs(const char *dir)
{
	struct statfs st;

	if (statfs(dir, &st) != 0)
		return TRUE;
	return st.f_type == TEST_SWAP_TMPFS_MAGIC ||
	       (unsigned long)st.f_type == TEST_SWAP_RAMFS_MAGIC;
}

/* Write @size_bytes of zeros to @fd (when fallocate is not supported). */
static inline gboolean test_swap_write_zeros(int fd, uint64_t size_bytes)
{
	g_autofree char *zeros = g_malloc0(1 << 20);

	for (uint64_t done = 0; done < size_bytes;) {
		size_t n = (size_t)MIN(size_bytes - done, (uint64_t)(1 << 20));
		ssize_t w = write(fd, zeros, n);

		if (w <= 0)
			return FALSE;
		done += (uint64_t)w;
	}
	return TRUE;
}

/*
 * test_swap_on() - make a swap file of @size_bytes and turn it on.
 * Return: NULL when the swap is on (@s filled in), or why the machine cannot
 * (owned text for cr_skip_test()): not root, no disk folder, no mkswap,
 * swapon refused. On failure everything made so far is removed again.
 */
static inline char *test_swap_on(struct test_swap *s, uint64_t size_bytes)
{
	const char *bases[] = { g_get_tmp_dir(), ".", NULL };
	g_autofree char *mkswap = NULL;
	g_autofree char *out = NULL, *err_text = NULL;
	g_autoptr(GError) err = NULL;
	int status, fd;

	*s = (struct test_swap){ 0 };
	if (geteuid() != 0)
		return g_strdup("swapon needs root");
	test_swap_reap_stale();
	for (const char **b = bases; *b && !s->dir; b++) {
		g_autofree char *tmpl = NULL;

		if (test_swap_in_memory_fs(*b))
			continue;
		tmpl = g_strdup_printf("%s/" TEST_SWAP_PREFIX "%d-XXXXXX", *b, (int)getpid());
		if (g_mkdtemp(tmpl))
			s->dir = g_steal_pointer(&tmpl);
	}
	if (!s->dir)
		return g_strdup_printf("no folder on a disk filesystem for a swap file (%s and the "
				       "current folder are in memory or not writable; set TMPDIR)",
				       g_get_tmp_dir());
	s->file = g_build_filename(s->dir, "swapfile", NULL);
	fd = open(s->file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		char *why = g_strdup_printf("cannot create %s: %s", s->file, g_strerror(errno));

		test_swap_off(s);
		return why;
	}
	if ((fallocate(fd, 0, 0, (off_t)size_bytes) != 0 &&
	     !test_swap_write_zeros(fd, size_bytes)) ||
	    fchmod(fd, 0600) != 0 || fsync(fd) != 0) {
		char *why = g_strdup_printf("cannot fill %s: %s", s->file, g_strerror(errno));

		close(fd);
		test_swap_off(s);
		return why;
	}
	close(fd);
	mkswap = g_find_program_in_path("mkswap");
	if (!mkswap) {
		test_swap_off(s);
		return g_strdup("mkswap (util-linux) is not in PATH");
	}
	{
		const char *argv[] = { mkswap, s->file, NULL };

		if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
				  &err_text, &status, &err) ||
		    !g_spawn_check_wait_status(status, &err)) {
			char *why = g_strdup_printf("mkswap %s failed: %s %s", s->file,
						    err->message, err_text ? err_text : "");

			test_swap_off(s);
			return why;
		}
	}
	if (swapon(s->file, 0) != 0) {
		char *why = g_strdup_printf("swapon %s refused: %s", s->file, g_strerror(errno));

		test_swap_off(s);
		return why;
	}
	s->active = TRUE;
	return NULL;
}
