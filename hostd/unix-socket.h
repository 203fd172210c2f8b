/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A blocking client connection to a unix stream socket, shared by the
 * host's line clients (control-client.c for vreclaimd's control socket,
 * agent-client.c for a guest agent's channel): connect, write a whole
 * buffer, and read what comes by a deadline. Framing (lines) stays with the
 * clients.
 *
 * Errors are set in the caller's own error domain (@error_domain of struct
 * vr_unix_socket) with the codes of enum vr_unix_socket_error, which the
 * clients' error enums mirror; the messages name the peer.
 */
#pragma once

#include <glib.h>

/**
 * enum vr_unix_socket_error - why a call failed (the codes, in the
 * connection's error domain).
 * @VR_UNIX_SOCKET_ERROR_CONNECT: the path is empty or too long, or nobody
 *				  listens there.
 * @VR_UNIX_SOCKET_ERROR_CLOSED:  the peer closed the connection, or it broke.
 * @VR_UNIX_SOCKET_ERROR_TIMEOUT: nothing came before the deadline.
 */
enum vr_unix_socket_error {
	VR_UNIX_SOCKET_ERROR_CONNECT,
	VR_UNIX_SOCKET_ERROR_CLOSED,
	VR_UNIX_SOCKET_ERROR_TIMEOUT,
};

/**
 * struct vr_unix_socket - one blocking client connection; embedded in its
 * client, which clears it with vr_unix_socket_close().
 * @fd:			the connected socket (close-on-exec); -1 when not
 *			connected.
 * @peer:		who answers, as the error messages name it (e.g.
 *			"vreclaimd at '<path>'"); owned.
 * @error_domain:	the domain of the errors the calls set.
 */
struct vr_unix_socket {
	int fd;
	char *peer;
	GQuark error_domain;
};

/**
 * vr_unix_socket_connect() - connect @s to the unix stream socket @path.
 * @peer:		how messages name the other end (copied).
 * @error_domain:	the domain of this and every later error of @s.
 *
 * On failure @s is left not connected (fd -1, no peer).
 * Return: TRUE, or FALSE with @error (CONNECT): "failed to connect to
 * <peer>: <reason>", the reason being the path's length or the system's.
 */
gboolean vr_unix_socket_connect(struct vr_unix_socket *s, const char *path, const char *peer,
				GQuark error_domain, GError **error);

/**
 * vr_unix_socket_write_all() - write all @len bytes of @buf, blocking; a
 * peer that went away is an error, never a SIGPIPE.
 * Return: TRUE, or FALSE with @error (CLOSED): "writing to <peer>: <reason>".
 */
gboolean vr_unix_socket_write_all(struct vr_unix_socket *s, const char *buf, gsize len,
				  GError **error);

/**
 * vr_unix_socket_read() - wait until @s has bytes, at most until
 * @deadline_us (g_get_monotonic_time()), and read up to @size of them into
 * @buf.
 * Return: the number of bytes read (> 0), or 0 with @error: TIMEOUT ("<peer>
 * did not answer in time", also when @deadline_us has passed on entry) or
 * CLOSED ("<peer> closed the connection").
 */
gsize vr_unix_socket_read(struct vr_unix_socket *s, gint64 deadline_us, char *buf, gsize size,
			  GError **error);

/** vr_unix_socket_close() - close @s (when connected) and free its peer name. */
void vr_unix_socket_close(struct vr_unix_socket *s);
