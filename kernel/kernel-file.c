// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Small kernel text files: see kernel-file.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "kernel-file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* clang-format off */
G_DEFINE_QUARK(vr-agent-error-quark, vr_agent_error)
/* clang-format on */

gboolean vr_kfile_write(const char *path, const char *value, GError **error)
{
	return vr_kfile_write_errno(path, value, NULL, error);
}

gboolean vr_kfile_write_errno(const char *path, const char *value, int *errno_out, GError **error)
{
	if (errno_out)
		*errno_out = 0;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (errno_out)
			*errno_out = e;
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO,
			    "cannot open %s to write '%s': %s", path, value, g_strerror(e));
		return FALSE;
	}
	size_t len = strlen(value);
	ssize_t n;
	do {
		n = write(fd, value, len);
	} while (n < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (n < 0) {
		if (errno_out)
			*errno_out = e;
		g_set_error(error, VR_AGENT_ERROR,
			    e == EBUSY ? VR_AGENT_ERROR_BUSY : VR_AGENT_ERROR_IO,
			    "%s refused '%s': %s", path, value, g_strerror(e));
		return FALSE;
	}
	if ((size_t)n != len) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO,
			    "%s took %zd of the %zu bytes of '%s'", path, n, len, value);
		return FALSE;
	}
	return TRUE;
}

gboolean vr_kfile_write_u64(const char *path, uint64_t value, GError **error)
{
	char buf[32];
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, (guint64)value);
	return vr_kfile_write(path, buf, error);
}

char *vr_kfile_read(const char *path, gsize max_bytes, GError **error)
{
	if (max_bytes > VR_KFILE_MAX_BYTES)
		max_bytes = VR_KFILE_MAX_BYTES;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot read %s: %s", path,
			    g_strerror(e));
		return NULL;
	}
	/* One byte more than allowed tells a too-long file from a full one. */
	g_autofree char *buf = g_malloc(max_bytes + 2);
	gsize len = 0;
	for (;;) {
		ssize_t n = read(fd, buf + len, max_bytes + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot read %s: %s",
				    path, g_strerror(e));
			return NULL;
		}
		if (n == 0)
			break;
		len += (gsize)n;
		if (len > max_bytes) {
			close(fd);
			g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
				    "%s is longer than %zu bytes", path, max_bytes);
			return NULL;
		}
	}
	close(fd);
	buf[len] = '\0';
	return g_steal_pointer(&buf);
}

gboolean vr_kfile_read_u64(const char *path, uint64_t *out, GError **error)
{
	g_autofree char *text = vr_kfile_read(path, 64, error);
	if (!text)
		return FALSE;
	g_autofree char *stripped = g_strstrip(g_strdup(text));
	guint64 v;
	if (!g_ascii_string_to_unsigned(stripped, 10, 0, G_MAXUINT64, &v, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "%s holds '%s', not an unsigned decimal number", path, stripped);
		return FALSE;
	}
	*out = v;
	return TRUE;
}

char *vr_kfile_read_line(const char *path, GError **error)
{
	g_autofree char *text = vr_kfile_read(path, 4096, error);
	if (!text)
		return NULL;
	char *nl = strchr(text, '\n');
	if (nl)
		*nl = '\0';
	return g_steal_pointer(&text);
}
