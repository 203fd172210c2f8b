/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the daemon's stream servers (the control socket, control.c, and the
 * metrics exporter, metrics.c) share on the default GMainContext: accepting
 * connections on a listening socket, with a pause when the process is out
 * of file descriptors, and writing a non-blocking connection's pending
 * output. What a connection says and how it is answered stays with them.
 */
#pragma once

#include <glib.h>

/* How long an acceptor stops accepting when the process is out of file
 * descriptors or memory, ms: the pending connection would wake it at once
 * otherwise. */
#define VR_ACCEPT_BACKOFF_MS 1000

/**
 * typedef vr_accept_fn - a new connection: @fd is non-blocking and
 * close-on-exec, owned by the callee.
 */
typedef void (*vr_accept_fn)(int fd, gpointer user);

struct vr_acceptor;
typedef struct vr_acceptor vr_acceptor;

/**
 * vr_acceptor_new() - accept connections on @listen_fd from the default
 * GMainContext and hand each to @accept.
 * @listen_fd:	a listening, non-blocking socket; borrowed: it must outlive
 *		the acceptor.
 * @name:	how warnings name the server ("metrics"); copied.
 * @accept:	called in the main loop for every connection.
 * @user:	passed to @accept.
 *
 * When accept(2) fails with EMFILE, ENFILE, ENOBUFS or ENOMEM, it warns
 * "<name>: accept: <reason>; accepting again in <n> ms" and stops for
 * VR_ACCEPT_BACKOFF_MS; other failures (EAGAIN, ECONNABORTED, ...) are
 * passed over.
 * Return: owned; vr_acceptor_free() stops it.
 */
struct vr_acceptor *vr_acceptor_new(int listen_fd, const char *name, vr_accept_fn accept,
				    gpointer user);

/** vr_acceptor_free() - stop accepting and free @a (NULL is fine); the socket stays open. */
void vr_acceptor_free(struct vr_acceptor *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_acceptor, vr_acceptor_free)

/**
 * vr_stream_flush() - write what waits in @out to the non-blocking stream
 * socket @fd, as much as it takes now; what is written leaves @out. A peer
 * that went away is an error, never a SIGPIPE.
 * Return: TRUE when @out is empty or the socket is full (the rest waits for
 * G_IO_OUT); FALSE with @error (G_IO_ERROR, "write: <reason>") when the
 * peer is gone.
 */
gboolean vr_stream_flush(int fd, GString *out, GError **error);
