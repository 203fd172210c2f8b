/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking client connection to a unix stream socket: see unix-socket.h.
 */
#define _GNU_SOURCE /* SOCK_CLOEXEC, MSG_NOSIGNAL */

#include "unix-socket.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

gboolean vr_unix_socket_connect(struct vr_unix_socket *s, const char *path, const char *peer,
				GQuark error_domain, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	*s = (struct vr_unix_socket){ .fd = -1, .error_domain = error_domain };
	if (!*path || strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, error_domain, VR_UNIX_SOCKET_ERROR_CONNECT,
			    "failed to connect to %s: the path is empty or longer than %zu bytes",
			    peer, sizeof(sa.sun_path) - 1);
		return FALSE;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		g_set_error(error, error_domain, VR_UNIX_SOCKET_ERROR_CONNECT,
			    "failed to connect to %s: %s", peer, g_strerror(e));
		return FALSE;
	}
	s->fd = fd;
	s->peer = g_strdup(peer);
	return TRUE;
}

gboolean vr_unix_socket_write_all(struct vr_unix_socket *s, const char *buf, gsize len,
				  GError **error)
{
	while (len) {
		/* MSG_NOSIGNAL: a peer that went away is an error, not SIGPIPE. */
		ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;

			g_set_error(error, s->error_domain, VR_UNIX_SOCKET_ERROR_CLOSED,
				    "writing to %s: %s", s->peer, g_strerror(e));
			return FALSE;
		}
		buf += n;
		len -= (gsize)n;
	}
	return TRUE;
}

gsize vr_unix_socket_read(struct vr_unix_socket *s, gint64 deadline_us, char *buf, gsize size,
			  GError **error)
{
	for (;;) {
		gint64 left_ms = (deadline_us - g_get_monotonic_time()) / 1000;

		if (left_ms <= 0) {
			g_set_error(error, s->error_domain, VR_UNIX_SOCKET_ERROR_TIMEOUT,
				    "%s did not answer in time", s->peer);
			return 0;
		}
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		int rc = poll(&pfd, 1, (int)MIN(left_ms, G_MAXINT));
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			continue; /* the deadline check above ends it */
		ssize_t n = read(s->fd, buf, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			g_set_error(error, s->error_domain, VR_UNIX_SOCKET_ERROR_CLOSED,
				    "%s closed the connection", s->peer);
			return 0;
		}
		return (gsize)n;
	}
}

void vr_unix_socket_close(struct vr_unix_socket *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	g_clear_pointer(&s->peer, g_free);
}
