// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The agent's end of the host channel: see channel.h.
 */
#define _GNU_SOURCE /* accept4 */

#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <linux/vm_sockets.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend.h"
#include "kernel-file.h"
#include "ratelimit.h"

G_STATIC_ASSERT(VR_CHANNEL_VSOCK_HOST_CID == VMADDR_CID_HOST);
G_STATIC_ASSERT(VR_CHANNEL_VSOCK_ANY_PEER == VMADDR_CID_ANY);

/* How often a virtio-serial port whose host is away is reopened, ms: a
 * host that connects waits at most this long for its first reply. The
 * port reports POLLHUP until the host connects; polling it faster buys
 * nothing and reopening is cheap. */
#define VR_CHANNEL_REOPEN_MS 500

/* Bytes read per wakeup. */
#define VR_CHANNEL_READ_CHUNK 16384

/* Warnings that the host does not read its replies: one per 10 s. A peer
 * that sends and never reads would make one per line. */
#define VR_CHANNEL_DROP_LOG_INTERVAL_US (10 * G_USEC_PER_SEC)
#define VR_CHANNEL_DROP_LOG_BURST	1

struct vr_channel {
	enum vr_channel_kind kind;
	char *name; /* port name or socket path */
	guint vsock_port;
	guint vsock_peer_cid;
	struct vr_ratelimit refusal_log; /* refused vsock peers */
	char *sysfs;
	char *dev;
	char *description;
	struct vr_channel_callbacks cb;
	gpointer user;

	int listen_fd; /* sockets only, -1 otherwise */
	guint listen_watch;
	int fd; /* the connected stream, -1 when none */
	guint fd_watch;
	guint out_watch;
	guint reopen_timer;
	bool connected;
	GString *out;		      /* queued bytes not yet written */
	struct vr_ratelimit drop_log; /* "does not read" warnings */
};

static void channel_close_stream(struct vr_channel *ch);
static gboolean channel_on_stream(gint fd, GIOCondition cond, gpointer data);

char *vr_channel_find_virtio_port(const char *sysfs, const char *dev, const char *name,
				  GError **error)
{
	g_autofree char *class_dir = g_build_filename(sysfs, "class", "virtio-ports", NULL);
	g_autoptr(GError) local = NULL;
	g_autoptr(GDir) dir = g_dir_open(class_dir, 0, &local);
	if (!dir) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no virtio-serial ports (%s): %s", class_dir, local->message);
		return NULL;
	}
	const char *entry;
	while ((entry = g_dir_read_name(dir))) {
		g_autofree char *name_file = g_build_filename(class_dir, entry, "name", NULL);
		g_autofree char *port_name = vr_kfile_read_line(name_file, NULL);
		if (port_name && !strcmp(port_name, name))
			return g_build_filename(dev, entry, NULL);
	}
	g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
		    "no virtio-serial port named '%s' under %s", name, class_dir);
	return NULL;
}

static void channel_set_connected(struct vr_channel *ch, bool up)
{
	if (ch->connected == up)
		return;
	ch->connected = up;
	if (up)
		g_message("host connected on %s", ch->description);
	else
		g_message("host went away from %s", ch->description);
	if (ch->cb.connected)
		ch->cb.connected(ch, up, ch->user);
}

static void channel_watch_stream(struct vr_channel *ch, int fd)
{
	ch->fd = fd;
	ch->fd_watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, channel_on_stream, ch);
}

/* ---- virtio-serial port ---- */

static gboolean channel_reopen_port(gpointer data);

/* Open the port; a port whose host is away still opens, and then reports
 * POLLHUP, which channel_on_stream() turns into a later retry. */
static gboolean channel_open_port(struct vr_channel *ch, GError **error)
{
	g_autofree char *path = vr_channel_find_virtio_port(ch->sysfs, ch->dev, ch->name, error);
	if (!path)
		return FALSE;
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot open %s: %s", path,
			    g_strerror(e));
		return FALSE;
	}
	g_free(ch->description);
	ch->description = g_strdup_printf("virtio port %s (%s)", ch->name, path);
	channel_watch_stream(ch, fd);
	return TRUE;
}

static void channel_schedule_reopen(struct vr_channel *ch)
{
	if (!ch->reopen_timer)
		ch->reopen_timer = g_timeout_add(VR_CHANNEL_REOPEN_MS, channel_reopen_port, ch);
}

static gboolean channel_reopen_port(gpointer data)
{
	struct vr_channel *ch = data;
	ch->reopen_timer = 0;
	g_autoptr(GError) error = NULL;
	if (!channel_open_port(ch, &error)) {
		g_debug("%s", error->message);
		channel_schedule_reopen(ch);
	}
	return G_SOURCE_REMOVE;
}

/* ---- sockets ---- */

gboolean vr_channel_parse_vsock_peer(const char *text, guint *cid, GError **error)
{
	guint64 v;

	if (!strcmp(text, "any")) {
		*cid = VR_CHANNEL_VSOCK_ANY_PEER;
		return TRUE;
	}
	if (!strcmp(text, "host")) {
		*cid = VR_CHANNEL_VSOCK_HOST_CID;
		return TRUE;
	}
	if (!g_ascii_string_to_unsigned(text, 10, 0, VR_CHANNEL_VSOCK_ANY_PEER - 1, &v, NULL)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "'%s' is not a vsock CID: expected host (2, the default), any, or a "
			    "number from 0 to 4294967294",
			    text);
		return FALSE;
	}
	*cid = (guint)v;
	return TRUE;
}

bool vr_channel_vsock_peer_allowed(guint want_cid, guint peer_cid)
{
	return want_cid == VR_CHANNEL_VSOCK_ANY_PEER || peer_cid == want_cid;
}

/* Is the vsock connection @client from the peer the channel serves? A
 * refusal is logged at most once per VR_CHANNEL_REFUSAL_LOG_INTERVAL_MS. */
static bool channel_vsock_peer_ok(struct vr_channel *ch, int client)
{
	struct sockaddr_vm peer = { 0 };
	socklen_t len = sizeof(peer);
	uint64_t suppressed = 0;

	if (getpeername(client, (struct sockaddr *)&peer, &len) == 0 &&
	    peer.svm_family == AF_VSOCK &&
	    vr_channel_vsock_peer_allowed(ch->vsock_peer_cid, peer.svm_cid))
		return true;
	if (vr_ratelimit_pass(&ch->refusal_log, g_get_monotonic_time(), &suppressed))
		g_warning("%s: refused a connection from CID %u: only CID %u is served "
			  "(--vsock-peer); %" G_GUINT64_FORMAT
			  " more refused since the last such message",
			  ch->description, peer.svm_cid, ch->vsock_peer_cid, (guint64)suppressed);
	return false;
}

static gboolean channel_on_listen(gint fd, GIOCondition cond, gpointer data)
{
	struct vr_channel *ch = data;
	(void)cond;
	int client = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (client < 0) {
		if (errno != EAGAIN && errno != EINTR)
			g_warning("accept on %s: %s", ch->description, g_strerror(errno));
		return G_SOURCE_CONTINUE;
	}
	/* Before the host's connection is replaced: a stranger must not cut it. */
	if (ch->kind == VR_CHANNEL_VSOCK && !channel_vsock_peer_ok(ch, client)) {
		close(client);
		return G_SOURCE_CONTINUE;
	}
	if (ch->fd >= 0) {
		/* The old host went away, even when its end of the stream is
		 * not read yet: the owner drops what it kept of it (a half
		 * line) before the new one's first byte. */
		g_message("a new host connection on %s replaces the old one", ch->description);
		channel_close_stream(ch);
		channel_set_connected(ch, false);
	}
	channel_watch_stream(ch, client);
	channel_set_connected(ch, true);
	return G_SOURCE_CONTINUE;
}

static int channel_listen_unix(const char *path, GError **error)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_INVALID,
			    "socket path %s is longer than %zu bytes", path,
			    sizeof(sa.sun_path) - 1);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "socket: %s",
			    g_strerror(errno));
		return -1;
	}
	/* A socket file left by an agent that died is in the way; anything
	 * else at that path is not ours to remove. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	mode_t old = umask(0177); /* the socket is 0600: only root talks to the agent */
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	umask(old);
	if (rc < 0 || listen(fd, 4) < 0) {
		if (rc == 0)
			e = errno;
		close(fd);
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO, "cannot listen on %s: %s",
			    path, g_strerror(e));
		return -1;
	}
	return fd;
}

static int channel_listen_vsock(guint port, GError **error)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_UNSUPPORTED,
			    "no vsock in this guest: %s", g_strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int e = errno;
		close(fd);
		g_set_error(error, VR_AGENT_ERROR, VR_AGENT_ERROR_IO,
			    "cannot listen on vsock port %u: %s", port, g_strerror(e));
		return -1;
	}
	return fd;
}

/* ---- the connected stream ---- */

static void channel_close_stream(struct vr_channel *ch)
{
	if (ch->fd_watch)
		g_source_remove(ch->fd_watch);
	if (ch->out_watch)
		g_source_remove(ch->out_watch);
	ch->fd_watch = ch->out_watch = 0;
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
	g_string_truncate(ch->out, 0);
}

/* The host went away: close, tell the owner, and wait for it again. */
static void channel_lost(struct vr_channel *ch)
{
	channel_close_stream(ch);
	channel_set_connected(ch, false);
	if (ch->kind == VR_CHANNEL_VIRTIO_PORT)
		channel_schedule_reopen(ch);
}

static gboolean channel_flush(struct vr_channel *ch);

static gboolean channel_on_writable(gint fd, GIOCondition cond, gpointer data)
{
	struct vr_channel *ch = data;
	(void)fd;
	(void)cond;
	if (!channel_flush(ch))
		return G_SOURCE_REMOVE; /* the stream was closed; its watch ids are gone */
	if (ch->out->len)
		return G_SOURCE_CONTINUE;
	ch->out_watch = 0;
	return G_SOURCE_REMOVE;
}

/* Write what is queued. Return: FALSE when the stream broke (and was closed). */
static gboolean channel_flush(struct vr_channel *ch)
{
	while (ch->out->len) {
		ssize_t n = write(ch->fd, ch->out->str, ch->out->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (!ch->out_watch)
				ch->out_watch =
					g_unix_fd_add(ch->fd, G_IO_OUT, channel_on_writable, ch);
			return TRUE;
		}
		if (n <= 0) {
			g_debug("write to %s: %s", ch->description, g_strerror(errno));
			ch->out_watch = 0; /* channel_lost() must not remove a running source */
			channel_lost(ch);
			return FALSE;
		}
		g_string_erase(ch->out, 0, n);
	}
	return TRUE;
}

static gboolean channel_on_stream(gint fd, GIOCondition cond, gpointer data)
{
	struct vr_channel *ch = data;
	char buf[VR_CHANNEL_READ_CHUNK];
	if (cond & G_IO_IN) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			/* A virtio port gives no connect event: data proves the host is there. */
			channel_set_connected(ch, true);
			if (ch->cb.data)
				ch->cb.data(ch, buf, (gsize)n, ch->user);
			return G_SOURCE_CONTINUE;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return G_SOURCE_CONTINUE;
	} else if (!(cond & (G_IO_HUP | G_IO_ERR))) {
		return G_SOURCE_CONTINUE;
	}
	/* EOF, HUP or an error: the host is away. */
	ch->fd_watch = 0; /* this source ends by returning REMOVE */
	channel_lost(ch);
	return G_SOURCE_REMOVE;
}

bool vr_channel_send(struct vr_channel *ch, const char *buf, gsize len)
{
	if (ch->fd < 0)
		return false;
	if (ch->out->len + len > VR_CHANNEL_MAX_QUEUE_BYTES) {
		uint64_t suppressed = 0;

		if (vr_ratelimit_pass(&ch->drop_log, g_get_monotonic_time(), &suppressed))
			g_warning(
				"host on %s does not read: dropped %zu bytes (and %" G_GUINT64_FORMAT
				" more replies since the last warning)",
				ch->description, len, (guint64)suppressed);
		return false;
	}
	g_string_append_len(ch->out, buf, (gssize)len);
	if (ch->out_watch)
		return true;
	return channel_flush(ch);
}

bool vr_channel_is_connected(const struct vr_channel *ch)
{
	return ch->connected;
}

const char *vr_channel_describe(const struct vr_channel *ch)
{
	return ch->description;
}

struct vr_channel *vr_channel_new(const struct vr_channel_address *addr,
				  const struct vr_channel_callbacks *cb, gpointer user,
				  GError **error)
{
	g_autoptr(vr_channel) ch = g_new0(struct vr_channel, 1);
	ch->kind = addr->kind;
	ch->name = g_strdup(addr->name);
	ch->vsock_port = addr->vsock_port;
	ch->vsock_peer_cid = addr->vsock_peer_cid;
	ch->sysfs = g_strdup(addr->sysfs);
	ch->dev = g_strdup(addr->dev);
	ch->cb = *cb;
	ch->user = user;
	ch->fd = ch->listen_fd = -1;
	ch->out = g_string_new(NULL);
	vr_ratelimit_init(&ch->drop_log, VR_CHANNEL_DROP_LOG_INTERVAL_US,
			  VR_CHANNEL_DROP_LOG_BURST);
	vr_ratelimit_init(&ch->refusal_log, VR_CHANNEL_REFUSAL_LOG_INTERVAL_MS * 1000ULL, 1);

	switch (addr->kind) {
	case VR_CHANNEL_VIRTIO_PORT:
		ch->description = g_strdup_printf("virtio port %s", addr->name);
		if (!channel_open_port(ch, error))
			return NULL;
		break;
	case VR_CHANNEL_UNIX:
		ch->description = g_strdup_printf("unix socket %s", addr->name);
		ch->listen_fd = channel_listen_unix(addr->name, error);
		break;
	case VR_CHANNEL_VSOCK:
		if (addr->vsock_peer_cid == VR_CHANNEL_VSOCK_ANY_PEER)
			ch->description =
				g_strdup_printf("vsock port %u (any peer)", addr->vsock_port);
		else
			ch->description = g_strdup_printf("vsock port %u (peer CID %u)",
							  addr->vsock_port, addr->vsock_peer_cid);
		ch->listen_fd = channel_listen_vsock(addr->vsock_port, error);
		break;
	}
	if (addr->kind != VR_CHANNEL_VIRTIO_PORT) {
		if (ch->listen_fd < 0)
			return NULL;
		ch->listen_watch = g_unix_fd_add(ch->listen_fd, G_IO_IN, channel_on_listen, ch);
	}
	return g_steal_pointer(&ch);
}

void vr_channel_free(struct vr_channel *ch)
{
	if (!ch)
		return;
	channel_close_stream(ch);
	if (ch->reopen_timer)
		g_source_remove(ch->reopen_timer);
	if (ch->listen_watch)
		g_source_remove(ch->listen_watch);
	if (ch->listen_fd >= 0) {
		close(ch->listen_fd);
		if (ch->kind == VR_CHANNEL_UNIX)
			g_unlink(ch->name);
	}
	g_string_free(ch->out, TRUE);
	g_free(ch->name);
	g_free(ch->sysfs);
	g_free(ch->dev);
	g_free(ch->description);
	g_free(ch);
}
