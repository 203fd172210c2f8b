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
 * @VR_CHANNEL_VSOCK:	    a vsock port the agent listens on; only the peer
 *			    CID of @vsock_peer_cid is served.
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
 * @vsock_peer_cid: the one peer CID served on it (VSOCK):
 *		VR_CHANNEL_VSOCK_HOST_CID by default, or
 *		VR_CHANNEL_VSOCK_ANY_PEER. A connection from another CID (a
 *		process in another guest, or in this one over loopback) is
 *		closed at once, and does not replace the host's.
 * @sysfs:	sysfs root where class/virtio-ports is looked up; borrowed.
 * @dev:	where the port's device node is ("/dev"); borrowed.
 */
struct vr_channel_address {
	enum vr_channel_kind kind;
	const char *name;
	guint vsock_port;
	guint vsock_peer_cid;
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

/* The host's CID (VMADDR_CID_HOST): where vreclaimd connects from. */
#define VR_CHANNEL_VSOCK_HOST_CID 2U

/* Any peer CID (VMADDR_CID_ANY): what --vsock-peer any asks for. */
#define VR_CHANNEL_VSOCK_ANY_PEER 0xffffffffU

/* At most one log line per this many ms about refused vsock peers. */
#define VR_CHANNEL_REFUSAL_LOG_INTERVAL_MS 10000

/**
 * vr_channel_parse_vsock_peer() - the CID of `--vsock-peer @text`: "any"
 * (VR_CHANNEL_VSOCK_ANY_PEER), "host" (VR_CHANNEL_VSOCK_HOST_CID), or a
 * decimal CID from 0 to 4294967294. Errors (VR_AGENT_ERROR_INVALID) quote
 * @text and say what is allowed.
 */
gboolean vr_channel_parse_vsock_peer(const char *text, guint *cid, GError **error);

/**
 * vr_channel_vsock_peer_allowed() - whether a connection from @peer_cid is
 * served when the channel wants @want_cid (VR_CHANNEL_VSOCK_ANY_PEER: any).
 */
bool vr_channel_vsock_peer_allowed(guint want_cid, guint peer_cid);

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
