// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * vreclaimd's control socket, its server (see control.h): who may do what
 * (roles from the peer's credentials), one line's request served (decode,
 * check the role, call the daemon, encode the reply), and the clients on the
 * socket (lines, limits per user, idle timeout, replies answered later). The
 * wire format is control-wire.c.
 */
#define _GNU_SOURCE /* SOCK_NONBLOCK, SOCK_CLOEXEC, struct ucred */

#include "control/control.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/metrics.h"
#include "control/stream-server.h"
#include "protocol.h" /* struct vr_proto_reader: lines of at most 64 KiB */
#include "ratelimit.h"

G_STATIC_ASSERT(VR_CONTROL_MAX_REQUEST_BYTES == VR_PROTO_MAX_LINE);

/* Bytes read from a client per wakeup. */
#define VR_CONTROL_READ_CHUNK 16384

/* ---- roles ---- */

static const char *const role_names[] = {
	[VR_CONTROL_ROLE_NONE] = "none",
	[VR_CONTROL_ROLE_READ_ONLY] = "read-only",
	[VR_CONTROL_ROLE_ADMIN] = "admin",
};

const char *vr_control_role_name(enum vr_control_role role)
{
	return (guint)role < G_N_ELEMENTS(role_names) ? role_names[role] : "none";
}

gboolean vr_control_command_needs_admin(enum vr_control_command command)
{
	switch (command) {
	case VR_CONTROL_STATUS:
	case VR_CONTROL_METRICS:
		return FALSE;
	case VR_CONTROL_SET:
	case VR_CONTROL_PAUSE:
	case VR_CONTROL_RESUME:
		return TRUE;
	}
	return TRUE; /* a command added later is admin's until said otherwise */
}

gboolean vr_control_ids_contain(const struct vr_control_ids *ids, uint32_t id)
{
	for (guint i = 0; i < MIN(ids->nr, (guint)VR_CONTROL_MAX_IDS); i++)
		if (ids->id[i] == id)
			return TRUE;
	return FALSE;
}

void vr_control_rules_init(struct vr_control_rules *rules)
{
	memset(rules, 0, sizeof(*rules));
	rules->owner_uid = (uint32_t)geteuid();
	rules->idle_timeout_ms = VR_CONTROL_DEFAULT_IDLE_TIMEOUT_MS;
	rules->max_clients_per_user = VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER;
}

/* Is @peer's gid or one of its supplementary groups in @ids? */
static gboolean peer_in_groups(const struct vr_control_peer *peer, const struct vr_control_ids *ids)
{
	if (vr_control_ids_contain(ids, peer->gid))
		return TRUE;
	for (guint i = 0; i < peer->nr_groups; i++)
		if (vr_control_ids_contain(ids, peer->groups[i]))
			return TRUE;
	return FALSE;
}

enum vr_control_role vr_control_role_of(const struct vr_control_rules *rules,
					const struct vr_control_peer *peer)
{
	if (peer->uid == 0 || peer->uid == rules->owner_uid ||
	    vr_control_ids_contain(&rules->admin_users, peer->uid) ||
	    peer_in_groups(peer, &rules->admin_groups))
		return VR_CONTROL_ROLE_ADMIN;
	if (vr_control_ids_contain(&rules->read_only_users, peer->uid) ||
	    peer_in_groups(peer, &rules->read_only_groups))
		return VR_CONTROL_ROLE_READ_ONLY;
	return VR_CONTROL_ROLE_NONE;
}

/* The limits of @rules are in range; errors name the field. */
static gboolean rules_validate(const struct vr_control_rules *rules, GError **error)
{
	const struct vr_control_ids *lists[] = { &rules->admin_users, &rules->admin_groups,
						 &rules->read_only_users,
						 &rules->read_only_groups };

	if (!rules->idle_timeout_ms || rules->idle_timeout_ms > G_MAXUINT) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "idle timeout %" G_GUINT64_FORMAT " ms: expected 1 to %u ms",
			    rules->idle_timeout_ms, G_MAXUINT);
		return FALSE;
	}
	if (!rules->max_clients_per_user || rules->max_clients_per_user > VR_CONTROL_MAX_CLIENTS) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "clients per user %u: expected 1 to %d", rules->max_clients_per_user,
			    VR_CONTROL_MAX_CLIENTS);
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
		if (lists[i]->nr > VR_CONTROL_MAX_IDS) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
				    "%u ids in one role list: at most %d", lists[i]->nr,
				    VR_CONTROL_MAX_IDS);
			return FALSE;
		}
	}
	return TRUE;
}

/* ---- serving one line ---- */

char *vr_control_handle_line(const struct vr_control_ops *ops, gpointer user, const char *line,
			     gsize len)
{
	return vr_control_handle_line_as(ops, user, VR_CONTROL_ROLE_ADMIN, line, len);
}

char *vr_control_handle_line_as(const struct vr_control_ops *ops, gpointer user,
				enum vr_control_role role, const char *line, gsize len)
{
	g_auto(vr_control_request) req = { 0 };
	g_autoptr(GError) error = NULL;

	if (!vr_control_decode_request(line, len, &req, &error))
		return vr_control_encode_error(error);
	if (role == VR_CONTROL_ROLE_NONE) {
		g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_PERMISSION_DENIED,
			    "permission denied: %s needs the %s role, and this client has none",
			    vr_control_command_name(req.command),
			    vr_control_command_needs_admin(req.command) ? "admin" : "read-only");
		return vr_control_encode_error(error);
	}
	if (role != VR_CONTROL_ROLE_ADMIN && vr_control_command_needs_admin(req.command)) {
		g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_PERMISSION_DENIED,
			    "permission denied: %s needs the admin role (this client's role is %s)",
			    vr_control_command_name(req.command), vr_control_role_name(role));
		return vr_control_encode_error(error);
	}
	switch (req.command) {
	case VR_CONTROL_STATUS:
	case VR_CONTROL_METRICS: {
		g_autoptr(GPtrArray) domains = NULL;
		struct vr_daemon_status daemon = { 0 };

		if (!ops->status || !ops->status(user, &domains, &daemon, &error)) {
			if (!error)
				g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
					    "this daemon has no status");
			return vr_control_encode_error(error);
		}
		if (!domains)
			domains = vr_domain_status_array_new();
		if (req.command == VR_CONTROL_STATUS)
			return vr_control_encode_status(domains, &daemon);
		g_autofree char *text = vr_metrics_render(domains, &daemon);
		return vr_control_encode_metrics(text);
	}
	case VR_CONTROL_SET:
		if (!ops->set) {
			g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "this daemon takes no settings");
		} else if (ops->set(user, req.domain, (const char *const *)req.settings, &error)) {
			return vr_control_encode_empty();
		}
		break;
	case VR_CONTROL_PAUSE:
	case VR_CONTROL_RESUME:
		if (!ops->pause) {
			g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "this daemon cannot pause");
		} else if (ops->pause(user, req.has_domain ? req.domain : NULL,
				      req.command == VR_CONTROL_PAUSE, &error)) {
			return vr_control_encode_empty();
		}
		break;
	}
	if (!error)
		g_set_error(&error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, "%s failed",
			    vr_control_command_name(req.command));
	return vr_control_encode_error(error);
}

/* ---- the server ---- */

/* Supplementary groups of a client kept at most: NGROUPS_MAX is 65536, but
 * a role is given to one of a few groups; a client in more is judged on
 * these (and its primary group). */
#define VR_CONTROL_MAX_PEER_GROUPS 256

/**
 * struct control_conn - one client.
 * @fd:		its stream, non-blocking.
 * @uid, @gid, @pid: its peer credentials when it connected (SO_PEERCRED).
 * @groups:	its supplementary groups (SO_PEERGROUPS), @nr_groups of them.
 * @in_watch:	reading; only while nothing waits in @out.
 * @out_watch:	writing; only while something waits in @out.
 * @idle_timer:	fires when it may have been idle for the idle timeout.
 * @active_us:	the monotonic time it last sent a byte or took one, us.
 * @reader:	cuts what it sent into lines (at most 64 KiB each).
 * @out:	the reply not written yet.
 * @eof:	it sent its last byte: close once @out is written.
 * @pending:	the request being answered later (set_async), NULL when
 *		none: its further requests wait until it is answered.
 * @serving:	conn_serve() runs (a call answered from within it only
 *		queues its reply).
 */
struct control_conn {
	struct vr_control_server *server;
	int fd;
	uint32_t uid;
	uint32_t gid;
	int32_t pid;
	uint32_t *groups;
	guint nr_groups;
	guint in_watch;
	guint out_watch;
	guint idle_timer;
	gint64 active_us;
	struct vr_proto_reader *reader;
	GString *out;
	gboolean eof;
	struct vr_control_call *pending;
	gboolean serving;
};

/**
 * struct vr_control_call - see control.h.
 * @conn:	the client that asked, NULL once it left.
 */
struct vr_control_call {
	struct control_conn *conn;
};

/**
 * struct vr_control_server - see vr_control_server_new().
 * @rules:		who may do what, and the limits.
 * @refusal_log:	refused clients are logged at most once per
 *			VR_CONTROL_REFUSAL_LOG_INTERVAL_MS.
 */
struct vr_control_server {
	char *path;
	int listen_fd;
	struct vr_acceptor *acceptor;
	dev_t dev;
	ino_t ino;
	struct vr_control_ops ops;
	gpointer user;
	struct vr_control_rules rules;
	struct vr_ratelimit refusal_log;
	GPtrArray *conns; /* struct control_conn *, not owned: conn_close() frees */
};

static void conn_close(struct control_conn *c)
{
	if (c->in_watch)
		g_source_remove(c->in_watch);
	if (c->out_watch)
		g_source_remove(c->out_watch);
	if (c->idle_timer)
		g_source_remove(c->idle_timer);
	if (c->pending)
		c->pending->conn = NULL; /* its answer goes nowhere */
	close(c->fd);
	vr_proto_reader_free(c->reader);
	g_string_free(c->out, TRUE);
	g_free(c->groups);
	g_ptr_array_remove_fast(c->server->conns, c);
	g_debug("control client %p left", (void *)c);
	g_free(c);
}

/* The role the server's rules give @c now. */
static enum vr_control_role conn_role(const struct control_conn *c)
{
	const struct vr_control_peer peer = {
		.pid = c->pid,
		.uid = c->uid,
		.gid = c->gid,
		.groups = c->groups,
		.nr_groups = c->nr_groups,
	};

	return vr_control_role_of(&c->server->rules, &peer);
}

/* Write what waits. Return: FALSE when the client is gone. */
static gboolean conn_flush(struct control_conn *c)
{
	g_autoptr(GError) error = NULL;
	gsize before = c->out->len;

	if (vr_stream_flush(c->fd, c->out, &error)) {
		if (c->out->len < before)
			c->active_us = g_get_monotonic_time();
		return TRUE;
	}
	g_debug("control client %p: %s", (void *)c, error->message);
	return FALSE;
}

/*
 * Start answering @line later when it is a set and the daemon answers sets
 * later (set_async), for a client allowed to set (any other case, a bad
 * line too, is answered at once by vr_control_handle_line_as()).
 * Return: whether it was started.
 */
static gboolean conn_start_call(struct control_conn *c, const char *line, gsize len)
{
	g_auto(vr_control_request) req = { 0 };
	struct vr_control_server *s = c->server;

	if (!s->ops.set_async || conn_role(c) != VR_CONTROL_ROLE_ADMIN ||
	    !vr_control_decode_request(line, len, &req, NULL) || req.command != VR_CONTROL_SET)
		return FALSE;
	c->pending = g_new0(struct vr_control_call, 1);
	c->pending->conn = c;
	s->ops.set_async(s->user, req.domain, (const char *const *)req.settings, c->pending);
	return TRUE;
}

static gboolean conn_serve_lines(struct control_conn *c);

/**
 * conn_serve() - answer the lines the client sent, one at a time: the next
 * waits until the last reply is written, or the pending call is answered.
 * Return: FALSE when the connection is done (gone, or ended and answered).
 */
static gboolean conn_serve(struct control_conn *c)
{
	gboolean ret;

	c->serving = TRUE;
	ret = conn_serve_lines(c);
	c->serving = FALSE;
	return ret;
}

static gboolean conn_serve_lines(struct control_conn *c)
{
	while (!c->out->len && !c->pending) {
		g_autoptr(GError) error = NULL;
		g_autofree char *line = NULL;
		g_autofree char *reply = NULL;
		gsize len = 0;

		if (!vr_proto_reader_next(c->reader, &line, &len, &error)) {
			g_autoptr(GError) too_long =
				g_error_new(VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
					    "the request is longer than %d bytes",
					    VR_CONTROL_MAX_REQUEST_BYTES);
			reply = vr_control_encode_error(too_long);
		} else if (!line) {
			break;
		} else {
			g_debug("control client %p -> %.*s", (void *)c, (int)MIN(len, 1024), line);
			if (conn_start_call(c, line, len)) {
				/* Answered at once after all: flush it. */
				if (c->out->len && !conn_flush(c))
					return FALSE;
				continue;
			}
			reply = vr_control_handle_line_as(&c->server->ops, c->server->user,
							  conn_role(c), line, len);
		}
		g_debug("control client %p <- %.*s", (void *)c, (int)MIN(strlen(reply), 1024),
			reply);
		g_string_append(c->out, reply);
		if (!conn_flush(c))
			return FALSE;
	}
	return !(c->eof && !c->out->len && !c->pending);
}

static gboolean conn_on_in(gint fd, GIOCondition cond, gpointer data);
static gboolean conn_on_out(gint fd, GIOCondition cond, gpointer data);

/* Watch for reading while nothing waits to be written, for writing else. */
static void conn_update_watches(struct control_conn *c)
{
	gboolean want_in = !c->eof && !c->out->len && !c->pending;

	if (c->out->len && !c->out_watch)
		c->out_watch = g_unix_fd_add(c->fd, G_IO_OUT, conn_on_out, c);
	if (!c->out->len && c->out_watch) {
		g_source_remove(c->out_watch);
		c->out_watch = 0;
	}
	if (want_in && !c->in_watch)
		c->in_watch = g_unix_fd_add(c->fd, G_IO_IN | G_IO_HUP | G_IO_ERR, conn_on_in, c);
	if (!want_in && c->in_watch) {
		g_source_remove(c->in_watch);
		c->in_watch = 0;
	}
}

static gboolean conn_on_in(gint fd, GIOCondition cond, gpointer data)
{
	struct control_conn *c = data;
	char buf[VR_CONTROL_READ_CHUNK];

	if (cond & G_IO_IN) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return G_SOURCE_CONTINUE;
		if (n > 0) {
			c->active_us = g_get_monotonic_time();
			vr_proto_reader_feed(c->reader, buf, (gsize)n);
		} else {
			c->eof = TRUE; /* a line it did not finish is dropped */
		}
	} else if (cond & (G_IO_HUP | G_IO_ERR)) {
		c->eof = TRUE;
	}
	if (!conn_serve(c)) {
		c->in_watch = 0; /* this source ends by returning REMOVE */
		conn_close(c);
		return G_SOURCE_REMOVE;
	}
	if (!c->eof && !c->out->len && !c->pending)
		return G_SOURCE_CONTINUE;
	c->in_watch = 0; /* a reply waits, or the client is done sending */
	conn_update_watches(c);
	return G_SOURCE_REMOVE;
}

static gboolean conn_on_out(gint fd, GIOCondition cond, gpointer data)
{
	struct control_conn *c = data;

	(void)fd;
	(void)cond;
	if (!conn_flush(c)) {
		c->out_watch = 0; /* this source ends by returning REMOVE */
		conn_close(c);
		return G_SOURCE_REMOVE;
	}
	if (c->out->len)
		return G_SOURCE_CONTINUE;
	c->out_watch = 0;
	if (!conn_serve(c)) {
		conn_close(c);
		return G_SOURCE_REMOVE;
	}
	conn_update_watches(c);
	return G_SOURCE_REMOVE;
}

/* Send @error's reply line to @fd, best effort: the client is closed next. */
static void send_error_line(int fd, const GError *error)
{
	g_autofree char *line = vr_control_encode_error(error);

	if (send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		g_debug("control socket: %s", g_strerror(errno));
}

static gboolean conn_on_idle(gpointer data);

void vr_control_call_finish(struct vr_control_call *call, const GError *error)
{
	struct control_conn *c = call->conn;
	g_autofree char *reply = error ? vr_control_encode_error(error) : vr_control_encode_empty();

	g_free(call);
	if (!c)
		return;
	c->pending = NULL;
	c->active_us = g_get_monotonic_time();
	g_debug("control client %p <- %.*s", (void *)c, (int)MIN(strlen(reply), 1024), reply);
	g_string_append(c->out, reply);
	if (c->serving)
		return; /* conn_serve() goes on with it */
	if (!conn_flush(c) || !conn_serve(c)) {
		conn_close(c);
		return;
	}
	conn_update_watches(c);
}

/* Arm @c's idle timer to fire @ms from now. */
static void conn_arm_idle(struct control_conn *c, guint64 ms)
{
	c->idle_timer = g_timeout_add((guint)MIN(MAX(ms, 1), G_MAXUINT), conn_on_idle, c);
}

/* The idle timer: close @c when it has been idle long enough, else wait for
 * the rest of its timeout. */
static gboolean conn_on_idle(gpointer data)
{
	struct control_conn *c = data;
	guint64 timeout_ms = c->server->rules.idle_timeout_ms;
	guint64 idle_ms = (guint64)(g_get_monotonic_time() - c->active_us) / 1000;

	c->idle_timer = 0; /* this source ends by returning REMOVE */
	if (c->pending) {
		/* Waiting for the daemon is not idling. */
		conn_arm_idle(c, timeout_ms);
		return G_SOURCE_REMOVE;
	}
	if (idle_ms < timeout_ms) {
		conn_arm_idle(c, timeout_ms - idle_ms);
		return G_SOURCE_REMOVE;
	}
	g_debug("control client %p (uid %u) idle for %" G_GUINT64_FORMAT " ms: closing", (void *)c,
		c->uid, idle_ms);
	if (!c->out->len) {
		g_autoptr(GError) idle = g_error_new(
			VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
			"vreclaimd closes connections idle for %" G_GUINT64_FORMAT " ms",
			timeout_ms);

		send_error_line(c->fd, idle);
	}
	conn_close(c);
	return G_SOURCE_REMOVE;
}

/**
 * server_log_refusal() - log a refused client as a warning, at most once per
 * VR_CONTROL_REFUSAL_LOG_INTERVAL_MS: a local user looping on connect must
 * not flood the journal. The refusals in between are counted and the count
 * goes with the next line.
 */
static void server_log_refusal(struct vr_control_server *s, const char *what)
{
	uint64_t suppressed = 0;

	if (!vr_ratelimit_pass(&s->refusal_log, g_get_monotonic_time(), &suppressed))
		return;
	if (suppressed)
		g_warning("control socket: %s (and %" G_GUINT64_FORMAT
			  " more refused since the last such message)",
			  what, (guint64)suppressed);
	else
		g_warning("control socket: %s", what);
}

/* Refuse the client @fd with the error line of @code and @message, log it
 * (rate-limited) as @log_line, and close it. */
static void server_refuse(struct vr_control_server *s, int fd, enum vr_control_error code,
			  const char *message, const char *log_line)
{
	g_autoptr(GError) refusal = g_error_new_literal(VR_CONTROL_ERROR, code, message);

	send_error_line(fd, refusal);
	close(fd);
	if (log_line)
		server_log_refusal(s, log_line);
}

/**
 * read_peer() - @c's credentials: SO_PEERCRED, and SO_PEERGROUPS where the
 * kernel has it (4.13); without it, the primary group alone counts.
 * Return: FALSE with @error when the socket tells nothing.
 */
static gboolean read_peer(struct control_conn *c, GError **error)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred)) {
		int e = errno;

		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, "SO_PEERCRED: %s",
			    g_strerror(e));
		return FALSE;
	}
	c->pid = (int32_t)cred.pid;
	c->uid = (uint32_t)cred.uid;
	c->gid = (uint32_t)cred.gid;
#ifdef SO_PEERGROUPS
	{
		g_autofree gid_t *groups = g_new(gid_t, VR_CONTROL_MAX_PEER_GROUPS);
		socklen_t glen = (socklen_t)(VR_CONTROL_MAX_PEER_GROUPS * sizeof(gid_t));

		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
			c->nr_groups = (guint)(glen / sizeof(gid_t));
		} else if (errno == ERANGE) {
			/* More than we keep: glen says how many; judge on the
			 * first VR_CONTROL_MAX_PEER_GROUPS, fetched again whole. */
			g_autofree gid_t *all = g_malloc((gsize)glen);

			if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, all, &glen) == 0) {
				c->nr_groups = MIN((guint)(glen / sizeof(gid_t)),
						   (guint)VR_CONTROL_MAX_PEER_GROUPS);
				memcpy(groups, all, c->nr_groups * sizeof(gid_t));
			}
		} else if (errno != ENOPROTOOPT) {
			g_debug("control client uid %u: SO_PEERGROUPS: %s", c->uid,
				g_strerror(errno));
		}
		c->groups = g_new(uint32_t, MAX(c->nr_groups, 1));
		for (guint i = 0; i < c->nr_groups; i++)
			c->groups[i] = (uint32_t)groups[i];
	}
#endif
	return TRUE;
}

/* How many clients of @uid are connected. */
static guint server_nr_clients_of(const struct vr_control_server *s, uint32_t uid)
{
	guint n = 0;

	for (guint i = 0; i < s->conns->len; i++)
		n += ((const struct control_conn *)g_ptr_array_index(s->conns, i))->uid == uid;
	return n;
}

/* A new client (vr_accept_fn): refused when the server is full, when its
 * user has its share of the slots, or when it has no role. */
static void server_on_accept(int cfd, gpointer data)
{
	struct vr_control_server *s = data;
	g_autoptr(GError) error = NULL;
	g_autofree char *msg = NULL;
	g_autofree char *log_line = NULL;
	struct control_conn probe = { .server = s, .fd = cfd };

	if (s->conns->len >= VR_CONTROL_MAX_CLIENTS) {
		msg = g_strdup_printf("vreclaimd serves at most %d clients at once",
				      VR_CONTROL_MAX_CLIENTS);
		server_refuse(s, cfd, VR_CONTROL_ERROR_FAILED, msg, NULL);
		return;
	}
	if (!read_peer(&probe, &error)) {
		log_line = g_strdup_printf("refused a client whose credentials are unknown: %s",
					   error->message);
		server_refuse(s, cfd, VR_CONTROL_ERROR_PERMISSION_DENIED,
			      "permission denied: vreclaimd cannot tell who this client is",
			      log_line);
		return;
	}
	if (conn_role(&probe) == VR_CONTROL_ROLE_NONE) {
		msg = g_strdup_printf(
			"permission denied: uid %u has no role on vreclaimd's control socket "
			"(vreclaimd.conf: control-admin-users, control-admin-groups, "
			"control-read-only-users, control-read-only-groups)",
			probe.uid);
		log_line = g_strdup_printf("refused uid %u gid %u (pid %d): no role", probe.uid,
					   probe.gid, probe.pid);
		g_free(probe.groups);
		server_refuse(s, cfd, VR_CONTROL_ERROR_PERMISSION_DENIED, msg, log_line);
		return;
	}
	if (server_nr_clients_of(s, probe.uid) >= s->rules.max_clients_per_user) {
		msg = g_strdup_printf("vreclaimd serves at most %u clients of one user at once",
				      s->rules.max_clients_per_user);
		log_line = g_strdup_printf(
			"refused uid %u (pid %d): it has %u clients connected already", probe.uid,
			probe.pid, s->rules.max_clients_per_user);
		g_free(probe.groups);
		server_refuse(s, cfd, VR_CONTROL_ERROR_FAILED, msg, log_line);
		return;
	}
	struct control_conn *c = g_new0(struct control_conn, 1);
	*c = probe;
	c->reader = vr_proto_reader_new();
	c->out = g_string_new(NULL);
	c->active_us = g_get_monotonic_time();
	g_ptr_array_add(s->conns, c);
	conn_update_watches(c);
	conn_arm_idle(c, s->rules.idle_timeout_ms);
	g_debug("control client %p connected: uid %u gid %u pid %d, role %s", (void *)c, c->uid,
		c->gid, c->pid, vr_control_role_name(conn_role(c)));
}

/* Is somebody listening on the unix socket @sa? */
static gboolean socket_is_alive(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	gboolean alive;

	if (fd < 0)
		return TRUE; /* cannot tell: do not remove it */
	alive = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno == EAGAIN;
	close(fd);
	return alive;
}

/* The socket file at @path: make room for it, bind, chmod, listen. */
static int server_listen(struct vr_control_server *s, guint mode, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	g_autofree char *dir = g_path_get_dirname(s->path);
	struct stat st;
	int fd, e;

	if (!*s->path || strlen(s->path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "socket path '%s' is empty or longer than %zu bytes", s->path,
			    sizeof(sa.sun_path) - 1);
		return -1;
	}
	if (mode > 0777) {
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_INVALID_ARGUMENT,
			    "socket mode %o is not a permission mode (0..0777)", mode);
		return -1;
	}
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	if (g_mkdir_with_parents(dir, 0755) < 0) {
		e = errno;
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
			    "cannot create the folder %s: %s", dir, g_strerror(e));
		return -1;
	}
	if (lstat(s->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "%s exists and is not a socket: not removing it", s->path);
			return -1;
		}
		if (socket_is_alive(&sa)) {
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "another process listens on %s (is vreclaimd running already?)",
				    s->path);
			return -1;
		}
		g_debug("removing the stale socket %s", s->path);
		if (unlink(s->path) < 0 && errno != ENOENT) {
			e = errno;
			g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
				    "cannot remove the stale socket %s: %s", s->path,
				    g_strerror(e));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, "socket: %s",
			    g_strerror(e));
		return -1;
	}
	/* Nobody can connect between bind() and listen(): the mode is right
	 * before the first client, without touching the process's umask. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		close(fd);
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED, "cannot bind %s: %s",
			    s->path, g_strerror(e));
		return -1;
	}
	if (chmod(s->path, mode) < 0 || lstat(s->path, &st) < 0 || listen(fd, 16) < 0) {
		e = errno;
		close(fd);
		unlink(s->path);
		g_set_error(error, VR_CONTROL_ERROR, VR_CONTROL_ERROR_FAILED,
			    "cannot listen on %s: %s", s->path, g_strerror(e));
		return -1;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return fd;
}

struct vr_control_server *vr_control_server_new(const char *path, guint mode,
						const struct vr_control_rules *rules,
						const struct vr_control_ops *ops, gpointer user,
						GError **error)
{
	g_autoptr(vr_control_server) s = g_new0(struct vr_control_server, 1);

	g_return_val_if_fail(path && ops, NULL);
	s->path = g_strdup(path);
	s->ops = *ops;
	s->user = user;
	s->conns = g_ptr_array_new();
	s->listen_fd = -1;
	vr_ratelimit_init(&s->refusal_log, VR_CONTROL_REFUSAL_LOG_INTERVAL_MS * 1000ULL, 1);
	if (rules)
		s->rules = *rules;
	else
		vr_control_rules_init(&s->rules);
	if (!rules_validate(&s->rules, error)) {
		g_prefix_error(error, "control socket: ");
		return NULL;
	}
	s->listen_fd = server_listen(s, mode, error);
	if (s->listen_fd < 0) {
		g_prefix_error(error, "control socket: ");
		return NULL;
	}
	{
		g_autofree char *name = g_strdup_printf("control socket %s", path);

		s->acceptor = vr_acceptor_new(s->listen_fd, name, server_on_accept, s);
	}
	g_debug("control socket listening on %s (mode %04o)", path, mode);
	return g_steal_pointer(&s);
}

gboolean vr_control_server_set_rules(struct vr_control_server *s,
				     const struct vr_control_rules *rules, GError **error)
{
	if (!rules_validate(rules, error)) {
		g_prefix_error(error, "control socket: ");
		return FALSE;
	}
	s->rules = *rules;
	return TRUE;
}

guint vr_control_server_nr_clients(const struct vr_control_server *s)
{
	return s->conns->len;
}

void vr_control_server_free(struct vr_control_server *s)
{
	struct stat st;

	if (!s)
		return;
	while (s->conns->len)
		conn_close(g_ptr_array_index(s->conns, s->conns->len - 1));
	g_ptr_array_unref(s->conns);
	vr_acceptor_free(s->acceptor);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		/* Another daemon may have replaced the file since: leave its. */
		if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
			unlink(s->path);
	}
	g_free(s->path);
	g_free(s);
}
