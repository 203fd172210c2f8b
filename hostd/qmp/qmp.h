/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Our own QMP client: one QEMU monitor socket (QEMU's `-qmp unix:PATH`),
 * for QEMU processes that run without libvirt. Blocking, with poll() and
 * monotonic deadlines: the daemon calls it with short timeouts.
 *
 * As in libvirt's qemu_monitor_json.c: messages are JSON objects framed by
 * newlines; QEMU greets, we send `qmp_capabilities`; every command carries
 * an "id" and its reply is the "return" or "error" object with that id;
 * events that arrive meanwhile are queued. Everything from QEMU is untrusted:
 * lines are bounded, every message is checked against the shapes QMP
 * defines, and what QEMU says is made printable before it reaches a
 * message. The full JSON exchanged appears only at g_debug level.
 *
 * Not thread-safe: one client per thread.
 */
#pragma once

#include <glib.h>
#include <json.h>
#include <sys/types.h>

#include "json-doc.h"

#define VR_QMP_ERROR (vr_qmp_error_quark())
GQuark vr_qmp_error_quark(void);

/**
 * enum vr_qmp_error - how a QMP exchange failed.
 * @VR_QMP_ERROR_CONNECT:  the socket cannot be reached.
 * @VR_QMP_ERROR_PROTOCOL: QEMU sent something QMP does not allow (not
 *			   JSON, not an object, a line over the bound, a
 *			   message of no known kind or of the wrong shape).
 * @VR_QMP_ERROR_COMMAND:  QEMU refused the command (an "error" reply):
 *			   "QEMU refused <command>: <class>: <desc>". The
 *			   only failure after which the client stays usable.
 * @VR_QMP_ERROR_TIMEOUT:  no reply before the deadline.
 * @VR_QMP_ERROR_CLOSED:   the connection closed (EOF, EPIPE), or an earlier
 *			   failure broke it and it needs a new connection.
 */
enum vr_qmp_error {
	VR_QMP_ERROR_CONNECT,
	VR_QMP_ERROR_PROTOCOL,
	VR_QMP_ERROR_COMMAND,
	VR_QMP_ERROR_TIMEOUT,
	VR_QMP_ERROR_CLOSED,
};

/* The longest line (one message) taken from QEMU, bytes: `info mtree -f` of
 * a guest with many devices is tens of KiB; anything near this is hostile. */
#define VR_QMP_MAX_LINE_BYTES (1024 * 1024)

/* Events kept for vr_qmp_next_event(); older ones are dropped (and counted)
 * so that a QEMU that floods events cannot make the host grow. */
#define VR_QMP_MAX_EVENTS 64

/* The longest piece of QEMU's text (an error's class or desc, a line of
 * HMP output) that goes into an error message, bytes. */
#define VR_QMP_MAX_QUOTE_BYTES 256

/**
 * enum vr_qmp_message_kind - what a message from QEMU is.
 * @VR_QMP_MESSAGE_GREETING: {"QMP": {"version": ..., "capabilities": [...]}}
 * @VR_QMP_MESSAGE_RETURN:   {"return": <any>, "id": ...}
 * @VR_QMP_MESSAGE_ERROR:    {"error": {"class": "...", "desc": "..."}, "id": ...}
 * @VR_QMP_MESSAGE_EVENT:    {"event": "...", "timestamp": {"seconds": S,
 *			     "microseconds": U}, "data": {...}}
 */
enum vr_qmp_message_kind {
	VR_QMP_MESSAGE_GREETING,
	VR_QMP_MESSAGE_RETURN,
	VR_QMP_MESSAGE_ERROR,
	VR_QMP_MESSAGE_EVENT,
};

/**
 * struct vr_qmp_version - the QEMU version its greeting announced.
 * @major, @minor, @micro: e.g. 7, 2, 22.
 */
struct vr_qmp_version {
	guint major;
	guint minor;
	guint micro;
};

/**
 * vr_qmp_parse_message() - decode one message from QEMU and check its shape.
 * @text, @len:	the message, without its newline (@len -1: NUL-terminated).
 * @kind:	what it is.
 * @msg:	the decoded object (owned).
 *
 * Pure: shared by the own client and the libvirt transport (whose
 * virDomainQemuMonitorCommand hands back the reply's text).
 * Return: FALSE with VR_QMP_ERROR_PROTOCOL naming what is wrong for text
 * that is not a JSON object or an object that is none of the four kinds
 * (or one with a member of the wrong type).
 */
gboolean vr_qmp_parse_message(const char *text, gssize len, enum vr_qmp_message_kind *kind,
			      json_object **msg, GError **error);

/**
 * vr_qmp_reply_result() - the outcome of @command from its reply @reply
 * (a RETURN or ERROR message of vr_qmp_parse_message()).
 * @ret:	when not NULL, the "return" member (owned reference).
 * Return: TRUE for a "return"; FALSE with VR_QMP_ERROR_COMMAND
 * ("QEMU refused <command>: <class>: <desc>") for an "error", or
 * VR_QMP_ERROR_PROTOCOL for a message that is no reply.
 */
gboolean vr_qmp_reply_result(json_object *reply, const char *command, json_object **ret,
			     GError **error);

/**
 * vr_qmp_printable() - @text made safe to quote in a message or log: at most
 * @max_bytes bytes (cut at a character, "..." appended when cut), invalid
 * UTF-8 and control characters replaced. Return: owned.
 */
char *vr_qmp_printable(const char *text, gsize max_bytes);

struct vr_qmp;
typedef struct vr_qmp vr_qmp;

/**
 * vr_qmp_connect() - connect to QEMU's QMP socket at @path, read and check
 * its greeting, and leave negotiation mode with `qmp_capabilities`, all
 * within @timeout_ms.
 * Return: owned client, or NULL with @error naming @path:
 * VR_QMP_ERROR_CONNECT (no socket), _PROTOCOL (a greeting of the wrong
 * shape), _COMMAND (qmp_capabilities refused), _TIMEOUT, _CLOSED.
 */
struct vr_qmp *vr_qmp_connect(const char *path, guint timeout_ms, GError **error);

/**
 * vr_qmp_execute() - run @command and wait up to @timeout_ms for its reply.
 * @args:	its "arguments" object (borrowed), NULL for none.
 * @ret:	when not NULL, the reply's "return" member (owned reference:
 *		json_object_put() it); left alone on failure.
 *
 * Replies with another id are logged at debug and dropped; events read
 * meanwhile are queued for vr_qmp_next_event().
 * Return: TRUE on a "return" reply. FALSE with VR_QMP_ERROR_COMMAND when
 * QEMU refused it (the client stays usable); any other failure
 * (_PROTOCOL, _TIMEOUT, _CLOSED) breaks the client: later calls fail at once
 * with VR_QMP_ERROR_CLOSED ("... needs a new connection").
 */
gboolean vr_qmp_execute(struct vr_qmp *qmp, const char *command, json_object *args,
			guint timeout_ms, json_object **ret, GError **error);

/**
 * vr_qmp_poll() - take in, without waiting, what QEMU has already sent:
 * events are queued, stray replies dropped. Tells whether the connection is
 * still good before a command is sent (nothing is sent here).
 * Return: FALSE (and the client broken) when QEMU closed the connection or
 * sent something invalid, or when the client was broken already.
 */
gboolean vr_qmp_poll(struct vr_qmp *qmp, GError **error);

/**
 * vr_qmp_next_event() - the oldest queued event, else wait up to
 * @timeout_ms (0: do not wait) for one from QEMU.
 * @event:	the event message (owned; members "event", "timestamp",
 *		"data"), or NULL when none came in time.
 * Return: TRUE (with or without an event); FALSE with @error when reading
 * failed (the client is broken then).
 */
gboolean vr_qmp_next_event(struct vr_qmp *qmp, guint timeout_ms, json_object **event,
			   GError **error);

/** vr_qmp_events_dropped() - how many events were dropped from a full queue. */
guint64 vr_qmp_events_dropped(const struct vr_qmp *qmp);

/** vr_qmp_is_broken() - whether the client needs a new connection. */
gboolean vr_qmp_is_broken(const struct vr_qmp *qmp);

/** vr_qmp_get_version() - the QEMU version from the greeting. */
struct vr_qmp_version vr_qmp_get_version(const struct vr_qmp *qmp);

/** vr_qmp_get_path() - the socket path the client connected to (borrowed). */
const char *vr_qmp_get_path(const struct vr_qmp *qmp);

/**
 * vr_qmp_get_peer_pid() - the process at the other end of the socket, from
 * its peer credentials (SO_PEERCRED) read at connect.
 *
 * The kernel records the process that called listen() on the socket: QEMU
 * for `-qmp unix:PATH,server=on`, but the process that made the socket when
 * QEMU was handed one already listening (systemd socket activation, fd
 * passing).
 * Return: the pid, or 0 when the kernel gave none.
 */
pid_t vr_qmp_get_peer_pid(const struct vr_qmp *qmp);

/** vr_qmp_free() - close the connection and free the client (NULL is fine). */
void vr_qmp_free(struct vr_qmp *qmp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_qmp, vr_qmp_free)
