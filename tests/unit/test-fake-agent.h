/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transport of a fake guest agent, shared by the tests of vreclaimd's
 * agent session and of the "agent" access source: a unix socket server in a
 * temporary folder (the socket libvirt creates for the domain's channel),
 * one connection at a time (a new one replaces the old, like the real
 * agent), lines in, lines out. What the agent answers is the test's: each
 * request arrives decoded at @on_request, after it was counted.
 *
 * It runs on the thread-default main context, the test's own, which the
 * session under test runs on too; fake_loop_run_until() turns it.
 *
 * Needs accept4(): define _GNU_SOURCE before the first #include of the test
 * file.
 */
#pragma once

#include <criterion/criterion.h>

#include <errno.h>
#include <glib-unix.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "protocol.h"

#define FAKE_AGENT_NR_COMMANDS (VR_PROTO_GET_COLD_HIST + 1)

struct fake_agent_server;

/**
 * struct fake_agent_server - a unix socket server that plays the guest agent.
 * @dir, @path:		the temporary folder and the socket in it (owned).
 * @listen_fd, @listen_watch: the listening socket, -1/0 before
 *			fake_server_listen().
 * @fd, @conn_watch, @out_watch, @out, @reader: the connection, -1 without
 *			one, and what is still to be sent on it.
 * @accepts:		connections taken.
 * @requests:		requests received, per command.
 * @on_accept:		called after a new connection replaced the old one.
 * @on_request:		called with each request; it answers with
 *			fake_server_send() (or not).
 */
struct fake_agent_server {
	char *dir;
	char *path;
	int listen_fd;
	guint listen_watch;
	int fd;
	guint conn_watch;
	guint out_watch;
	GString *out;
	struct vr_proto_reader *reader;
	guint accepts;
	guint requests[FAKE_AGENT_NR_COMMANDS];
	void (*on_accept)(struct fake_agent_server *srv);
	void (*on_request)(struct fake_agent_server *srv, const struct vr_proto_request *req);
};

/* Drop the connection, and whatever was not sent on it yet. */
static inline void fake_server_close_conn(struct fake_agent_server *srv)
{
	if (srv->conn_watch)
		g_source_remove(srv->conn_watch);
	if (srv->out_watch)
		g_source_remove(srv->out_watch);
	srv->conn_watch = srv->out_watch = 0;
	if (srv->fd >= 0)
		close(srv->fd);
	srv->fd = -1;
	g_string_truncate(srv->out, 0);
	g_clear_pointer(&srv->reader, vr_proto_reader_free);
}

static gboolean fake_server_on_writable(gint fd, GIOCondition cond, gpointer data);

/* Send what is queued until the socket is full (then on G_IO_OUT). */
static inline void fake_server_flush(struct fake_agent_server *srv)
{
	while (srv->fd >= 0 && srv->out->len) {
		ssize_t n =
			send(srv->fd, srv->out->str, srv->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN) {
			if (!srv->out_watch)
				srv->out_watch = g_unix_fd_add(srv->fd, G_IO_OUT,
							       fake_server_on_writable, srv);
			return;
		}
		if (n <= 0) {
			fake_server_close_conn(srv); /* the session went away */
			return;
		}
		g_string_erase(srv->out, 0, n);
	}
}

static gboolean fake_server_on_writable(gint fd, GIOCondition cond, gpointer data)
{
	struct fake_agent_server *srv = data;

	(void)fd;
	(void)cond;
	srv->out_watch = 0;
	fake_server_flush(srv);
	return G_SOURCE_REMOVE;
}

/* Send @len bytes of @text (any bytes) on the current connection. */
static inline void fake_server_send_len(struct fake_agent_server *srv, const char *text, gsize len)
{
	cr_assert_geq(srv->fd, 0, "the fake agent has no connection to send on");
	g_string_append_len(srv->out, text, (gssize)len);
	fake_server_flush(srv);
}

static inline void fake_server_send(struct fake_agent_server *srv, const char *text)
{
	fake_server_send_len(srv, text, strlen(text));
}

static gboolean fake_server_on_readable(gint fd, GIOCondition cond, gpointer data)
{
	struct fake_agent_server *srv = data;
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof(buf));

	(void)cond;
	if (n <= 0) {
		srv->conn_watch = 0; /* removed by returning G_SOURCE_REMOVE */
		fake_server_close_conn(srv);
		return G_SOURCE_REMOVE;
	}
	vr_proto_reader_feed(srv->reader, buf, (gsize)n);
	for (;;) {
		g_autofree char *line = NULL;
		g_auto(vr_proto_request) req = { 0 };
		g_autoptr(GError) err = NULL;
		gsize len = 0;

		cr_assert(vr_proto_reader_next(srv->reader, &line, &len, &err),
			  "the session sent a line too long: %s", err ? err->message : "?");
		if (!line)
			return G_SOURCE_CONTINUE;
		cr_assert(vr_proto_decode_request(line, len, &req, &err),
			  "the session sent a request the agent refuses: %s", err->message);
		srv->requests[req.command]++;
		srv->on_request(srv, &req);
		if (srv->fd != fd)
			return G_SOURCE_REMOVE; /* closed while answering */
	}
}

static gboolean fake_server_on_accept(gint fd, GIOCondition cond, gpointer data)
{
	struct fake_agent_server *srv = data;
	int conn = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	(void)cond;
	if (conn < 0)
		return G_SOURCE_CONTINUE;
	fake_server_close_conn(srv); /* a new host replaces the old one */
	srv->accepts++;
	srv->fd = conn;
	srv->reader = vr_proto_reader_new();
	srv->conn_watch =
		g_unix_fd_add(conn, G_IO_IN | G_IO_HUP | G_IO_ERR, fake_server_on_readable, srv);
	if (srv->on_accept)
		srv->on_accept(srv);
	return G_SOURCE_CONTINUE;
}

/* A server with its socket path in a new temporary folder named after
 * @tmpl (a g_dir_make_tmp() template); not listening yet. */
static inline void fake_server_init(struct fake_agent_server *srv, const char *tmpl,
				    void (*on_request)(struct fake_agent_server *srv,
						       const struct vr_proto_request *req))
{
	g_autoptr(GError) err = NULL;

	*srv = (struct fake_agent_server){ .listen_fd = -1, .fd = -1, .on_request = on_request };
	srv->dir = g_dir_make_tmp(tmpl, &err);
	cr_assert_not_null(srv->dir, "cannot make a temporary folder: %s",
			   err ? err->message : "?");
	srv->path = g_build_filename(srv->dir, "agent.sock", NULL);
	srv->out = g_string_new(NULL);
}

/* Start listening at srv->path (libvirt creating the socket when the domain starts). */
static inline void fake_server_listen(struct fake_agent_server *srv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	cr_assert_lt(strlen(srv->path), sizeof(sa.sun_path), "the socket path %s is too long",
		     srv->path);
	g_strlcpy(sa.sun_path, srv->path, sizeof(sa.sun_path));
	srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	cr_assert_geq(srv->listen_fd, 0, "socket(): %s", g_strerror(errno));
	cr_assert_eq(bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind(%s): %s",
		     srv->path, g_strerror(errno));
	cr_assert_eq(listen(srv->listen_fd, 4), 0, "listen(): %s", g_strerror(errno));
	srv->listen_watch = g_unix_fd_add(srv->listen_fd, G_IO_IN, fake_server_on_accept, srv);
}

/* Close everything and remove the socket and its folder. */
static inline void fake_server_clear(struct fake_agent_server *srv)
{
	fake_server_close_conn(srv);
	if (srv->listen_watch)
		g_source_remove(srv->listen_watch);
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	srv->listen_watch = 0;
	srv->listen_fd = -1;
	g_unlink(srv->path);
	g_rmdir(srv->dir);
	g_string_free(srv->out, TRUE);
	g_free(srv->path);
	g_free(srv->dir);
	srv->out = NULL;
	srv->path = srv->dir = NULL;
}

/* ---- the main loop ---- */

static gboolean fake_loop_on_expired(gpointer data)
{
	*(gboolean *)data = TRUE;
	return G_SOURCE_REMOVE;
}

/* Run the thread-default main context until @done(@arg) (NULL: never) or
 * @ms pass; whether @done. */
static inline bool fake_loop_run_until(gboolean (*done)(gconstpointer arg), gconstpointer arg,
				       guint ms)
{
	gboolean expired = FALSE;
	guint timer = g_timeout_add(ms, fake_loop_on_expired, &expired);

	while (!(done && done(arg)) && !expired)
		g_main_context_iteration(NULL, TRUE);
	if (!expired)
		g_source_remove(timer);
	return done && done(arg);
}

/* Run the main context for @ms. */
static inline void fake_loop_spin_ms(guint ms)
{
	fake_loop_run_until(NULL, NULL, ms);
}
