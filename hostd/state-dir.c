/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's state folder (see state-dir.h).
 */
#define _GNU_SOURCE
#include "state-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procfs-text.h"

/* /proc/PID/stat is one line; a longer file is not one. */
#define STAT_MAX_BYTES 4096

static gboolean file_error(GError **error, int err, const char *what, const char *path)
{
	g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err), "%s %s: %s", what, path,
		    g_strerror(err));
	return FALSE;
}

gboolean vr_state_dir_prepare(const char *dir, GError **error)
{
	g_autofree char *parent = g_path_get_dirname(dir);

	/* The folders above are made as the control socket's is (0755: the
	 * default state folder is beside the socket, under /run/vreclaim);
	 * only the state folder itself is private. */
	if (g_mkdir_with_parents(parent, 0755) < 0)
		return file_error(error, errno, "cannot make the folder of the state folder",
				  parent);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return file_error(error, errno, "cannot make the state folder", dir);
	if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
		return file_error(error, ENOTDIR, "the state folder is not a folder:", dir);
	return TRUE;
}

char *vr_state_dir_path(const char *dir, const char *uuid)
{
	g_autofree char *name = g_strconcat(uuid, ".state", NULL);

	return g_build_filename(dir, name, NULL);
}

/* Write all of @text to @fd. */
static gboolean write_all(int fd, const char *text, gsize len)
{
	while (len > 0) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return FALSE;
		text += n;
		len -= (gsize)n;
	}
	return TRUE;
}

gboolean vr_state_dir_save(const char *dir, const struct vr_domain_state *st, GError **error)
{
	g_autofree char *path = vr_state_dir_path(dir, st->uuid);
	g_autofree char *tmp = g_strconcat(path, ".XXXXXX", NULL);
	g_autofree char *text = vr_domain_state_to_text(st);
	int fd, err;

	/* No fsync (of the file or the folder): the file is only of use to a
	 * vreclaimd restarted within this boot, which reads it through the page
	 * cache; a host crash ends every QEMU process the files are bound to,
	 * so none would be applied after it anyway. The rename alone makes the
	 * replacement atomic for any reader. Two fsyncs per file per save were
	 * about 40% of vreclaimd's CPU at 1000 domains (issue 16). */
	fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return file_error(error, errno, "cannot write", tmp);
	if (!write_all(fd, text, strlen(text))) {
		err = errno ? errno : EIO;
		close(fd);
		unlink(tmp);
		return file_error(error, err, "cannot write", tmp);
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		err = errno;
		unlink(tmp);
		return file_error(error, err, "cannot replace", path);
	}
	return TRUE;
}

/* Read @path, a regular file of at most @max bytes, without blocking on a
 * FIFO. */
static gboolean read_bounded(const char *path, gsize max, char **text, gsize *len, GError **error)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	g_autofree char *buf = NULL;
	struct stat sb;
	gsize got = 0;

	if (fd < 0)
		return file_error(error, errno, "cannot read", path);
	if (fstat(fd, &sb) < 0) {
		int err = errno;
		close(fd);
		return file_error(error, err, "cannot read", path);
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		g_set_error(error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_INVALID,
			    "%s is not a regular file", path);
		return FALSE;
	}
	buf = g_malloc(max + 1);
	for (;;) {
		ssize_t n = read(fd, buf + got, max + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			close(fd);
			return file_error(error, err, "cannot read", path);
		}
		if (n == 0 || (got += (gsize)n) > max)
			break;
	}
	close(fd);
	if (got > max) {
		g_set_error(error, VR_DOMAIN_STATE_ERROR, VR_DOMAIN_STATE_ERROR_INVALID,
			    "%s is longer than %" G_GSIZE_FORMAT " bytes", path, max);
		return FALSE;
	}
	buf[got] = '\0';
	*text = g_steal_pointer(&buf);
	*len = got;
	return TRUE;
}

gboolean vr_state_dir_load(const char *dir, const char *uuid, struct vr_domain_state *out,
			   GError **error)
{
	g_autofree char *path = vr_state_dir_path(dir, uuid);
	g_autofree char *text = NULL;
	gsize len = 0;

	if (!read_bounded(path, VR_DOMAIN_STATE_MAX_BYTES, &text, &len, error))
		return FALSE;
	if (!vr_domain_state_parse(text, len, out, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_state_dir_remove(const char *dir, const char *uuid, GError **error)
{
	g_autofree char *path = vr_state_dir_path(dir, uuid);

	if (unlink(path) < 0 && errno != ENOENT)
		return file_error(error, errno, "cannot remove", path);
	return TRUE;
}

gboolean vr_qemu_incarnation_read(const char *procfs, pid_t pid, struct vr_qemu_incarnation *out,
				  GError **error)
{
	g_autofree char *path = g_strdup_printf("%s/%d/stat", procfs, (int)pid);
	g_autofree char *text = NULL;
	struct vr_proc_stat st;
	long hz = sysconf(_SC_CLK_TCK);
	gsize len = 0;

	if (!read_bounded(path, STAT_MAX_BYTES, &text, &len, error) ||
	    !vr_proc_stat_parse(text, path, hz > 0 ? (uint64_t)hz : 100, &st, error))
		return FALSE;
	out->pid = (int32_t)pid;
	out->start_time_us = st.start_time_us;
	return TRUE;
}
