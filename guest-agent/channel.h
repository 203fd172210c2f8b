/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's end of the host<->agent channel: a byte stream over a
 * virtio-serial port (found by its name under sysfs class/virtio-ports, as in
 * guests without udev), a listening unix socket (tests, local use) or a
 * listening vsock port. The channel knows bytes, not messages: framing and
 * decoding are the server's (server.c).
 *
 * The host side may go away and come back at any time: a virtio-serial port
 * is reopened twice a second until the host is there again; a socket goes
 * back to accepting. One host is served at a time; a new connection replaces
 * the old one (the host side restarted).
 */
#pragma once

#include <glib.h>
#include <stdbool.h>

/**
 * enum vr_channel_kind - where the host is.
 * @VR_CHANNEL_VIRTIO_PORT: a virtio-serial port, by name.
 * @VR_CHANNEL_UNIX:	    a unix socket path the agent listens on (0600).
 * @VR_CHANNEL_VSOCK:	    a vsock port the agent listens on (any CID).
 */
enum vr_channel_kind {
	VR_CHANNEL_VIRTIO_PORT,
	VR_CHANNEL_UNIX,
	VR_CHANNEL_VSOCK,
};

/**
 * struct vr_channel_address - what to open.
 * @kind:	see enum vr_channel_kind.
 * @name:	the port name (VIRTIO_PORT) or the socket path (UNIX); borrowed.
 * @vsock_port:	the vsock port (VSOCK).
 * @sysfs:	sysfs root where class/virtio-ports is looked up; borrowed.
 * @dev:	where the port's device node is ("/dev"); borrowed.
 */
struct vr_channel_address {
	enum vr_channel_kind kind;
	const char *name;
	guint vsock_port;
	const char *sysfs;
	const char *dev;
};

struct vr_channel;

/**
 * struct vr_channel_callbacks - what the channel tells its owner; all run in
 * the main loop.
 * @data:	bytes from the host (@len > 0).
 * @connected:	the host came (@up true) or went away (@up false).
 */
struct vr_channel_callbacks {
	void (*data)(struct vr_channel *ch, const char *buf, gsize len, gpointer user);
	void (*connected)(struct vr_channel *ch, bool up, gpointer user);
};

/* Bytes queued for the host at most; beyond this new messages are dropped
 * (a host that does not read must not make the agent grow). */
#define VR_CHANNEL_MAX_QUEUE_BYTES (1024 * 1024)

/**
 * vr_channel_find_virtio_port() - the device node of the virtio-serial port
 * named @name: the entry of @sysfs/class/virtio-ports whose `name` file holds
 * @name, as @dev/<entry>. Return: owned path or NULL with @error.
 */
char *vr_channel_find_virtio_port(const char *sysfs, const char *dev, const char *name,
				  GError **error);

/**
 * vr_channel_new() - open @addr and start serving it from the thread-default
 * main context. A virtio port that does not exist yet is an error (the
 * device is missing); one whose host is away is not. Return: owned, or NULL
 * with @error.
 */
struct vr_channel *vr_channel_new(const struct vr_channel_address *addr,
				  const struct vr_channel_callbacks *cb, gpointer user,
				  GError **error);

/**
 * vr_channel_send() - queue @len bytes for the host. Return: FALSE (and the
 * bytes are dropped) when no host is connected or the queue is full.
 */
bool vr_channel_send(struct vr_channel *ch, const char *buf, gsize len);

/** vr_channel_is_connected() - is a host there (as far as the agent knows)? */
bool vr_channel_is_connected(const struct vr_channel *ch);

/** vr_channel_describe() - "virtio port org.vreclaim.agent.0 (/dev/vport1p1)", etc. */
const char *vr_channel_describe(const struct vr_channel *ch);

void vr_channel_free(struct vr_channel *ch);
typedef struct vr_channel vr_channel;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_channel, vr_channel_free)
