/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Accepting connections and flushing output for the daemon's stream
 * servers: see stream-server.h.
 */
#define _GNU_SOURCE /* accept4 */

#include "control/stream-server.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <sys/socket.h>

/**
 * struct vr_acceptor - see vr_acceptor_new().
 * @fd:			the listening socket (borrowed).
 * @name:		how warnings name the server.
 * @accept, @user:	where connections go.
 * @watch:		the listening socket's watch; 0 while backing off.
 * @backoff_timer:	the end of a back-off; 0 while accepting.
 */
struct vr_acceptor {
	int fd;
	char *name;
	vr_accept_fn accept;
	gpointer user;
	guint watch;
	guint backoff_timer;
};

static gboolean acceptor_on_listen(gint fd, GIOCondition cond, gpointer data);

static gboolean acceptor_again(gpointer data)
{
	struct vr_acceptor *a = data;

	a->backoff_timer = 0;
	a->watch = g_unix_fd_add(a->fd, G_IO_IN, acceptor_on_listen, a);
	return G_SOURCE_REMOVE;
}

static gboolean acceptor_on_listen(gint fd, GIOCondition cond, gpointer data)
{
	struct vr_acceptor *a = data;
	(void)cond;
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			g_warning("%s: accept: %s; accepting again in %d ms", a->name,
				  g_strerror(errno), VR_ACCEPT_BACKOFF_MS);
			a->watch = 0; /* this source ends by returning REMOVE */
			a->backoff_timer = g_timeout_add(VR_ACCEPT_BACKOFF_MS, acceptor_again, a);
			return G_SOURCE_REMOVE;
		}
		return G_SOURCE_CONTINUE; /* EAGAIN, EINTR, ECONNABORTED, ... */
	}
	a->accept(cfd, a->user);
	return G_SOURCE_CONTINUE;
}

struct vr_acceptor *vr_acceptor_new(int listen_fd, const char *name, vr_accept_fn accept,
				    gpointer user)
{
	struct vr_acceptor *a = g_new0(struct vr_acceptor, 1);

	a->fd = listen_fd;
	a->name = g_strdup(name);
	a->accept = accept;
	a->user = user;
	a->watch = g_unix_fd_add(listen_fd, G_IO_IN, acceptor_on_listen, a);
	return a;
}

void vr_acceptor_free(struct vr_acceptor *a)
{
	if (!a)
		return;
	if (a->watch)
		g_source_remove(a->watch);
	if (a->backoff_timer)
		g_source_remove(a->backoff_timer);
	g_free(a->name);
	g_free(a);
}

gboolean vr_stream_flush(int fd, GString *out, GError **error)
{
	while (out->len) {
		ssize_t n = send(fd, out->str, out->len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return TRUE;
		if (n <= 0) {
			int e = n < 0 ? errno : EPIPE;

			g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "write: %s",
				    g_strerror(e));
			return FALSE;
		}
		g_string_erase(out, 0, n);
	}
	return TRUE;
}
