// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bounded reads of files users and guests name: see user-file.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "user-file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first buffer, bytes: a policy fits. */
#define USER_FILE_FIRST_CHUNK 16384U

char *vr_user_file_read(const char *path, gsize max_bytes, gsize *len, GError **error)
{
	g_autofree char *buf = NULL;
	gsize cap, got = 0;
	struct stat st;
	int fd, e;

	max_bytes = MIN(max_bytes, (gsize)VR_USER_FILE_MAX_BYTES);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot open %s: %s",
			    path, g_strerror(e));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "%s is a folder, not a file",
			    path);
		return NULL;
	}
	/* One byte past the bound tells a file of max_bytes from a longer one;
	 * one more holds the NUL. */
	cap = MIN((gsize)USER_FILE_FIRST_CHUNK, max_bytes + 1);
	buf = g_malloc(cap + 1);
	for (;;) {
		ssize_t n;

		if (got == cap) {
			if (cap > max_bytes)
				break;
			cap = MIN(cap * 2, max_bytes + 1);
			buf = g_realloc(buf, cap + 1);
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e),
				    "cannot read %s: %s", path, g_strerror(e));
			return NULL;
		}
		if (n == 0)
			break;
		got += (gsize)n;
	}
	close(fd);
	if (got > max_bytes) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
			    "%s is larger than the %zu bytes allowed", path, (size_t)max_bytes);
		return NULL;
	}
	buf[got] = '\0';
	if (len)
		*len = got;
	return g_steal_pointer(&buf);
}
