/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vreclaimd's control socket (docs/vreclaimctl.md): operators' requests as
 * JSON lines over a unix stream socket, one request per line, one reply line
 * each, in order:
 *
 *   {"command":"status"}
 *   {"command":"set","domain":"web1","settings":["priority=80"]}
 *   {"command":"pause"}                    (no "domain": every domain)
 *   {"command":"resume","domain":"web1"}
 *   {"command":"metrics"}
 *
 *   {"return":{...}}  or  {"error":{"class":"no-domain","desc":"..."}}
 *
 * The wire format (requests and replies, both directions) is pure: text in,
 * structs out and back. The server (struct vr_control_server) listens on the
 * default GMainContext, serves several clients at once, and calls the daemon
 * through struct vr_control_ops. A bad request gets an error reply naming
 * what was wrong and the connection goes on; a client that sends garbage,
 * floods, stops reading or vanishes mid-line costs only its own connection.
 */
#pragma once

#include <glib.h>

#include "domain-status.h"

/* Where vreclaimd listens and vreclaimctl connects by default. */
#define VR_CONTROL_DEFAULT_SOCKET "/run/vreclaim/vreclaimd.sock"

/* The socket's default mode: only root (vreclaimd's user) talks to it. */
#define VR_CONTROL_DEFAULT_MODE 0600

/* A request line's maximum size in bytes, its newline included (one
 * set request with every setting fits many times over). */
#define VR_CONTROL_MAX_REQUEST_BYTES 65536

/* A reply line's maximum size in bytes: a status of about ten thousand
 * domains. The client refuses longer lines. */
#define VR_CONTROL_MAX_REPLY_BYTES (16 * 1024 * 1024)

/* set: at most this many settings, each "KEY=VALUE" of at most
 * VR_CONTROL_MAX_SETTING_LEN bytes; KEY is [a-z0-9_.-]. */
#define VR_CONTROL_MAX_SETTINGS	   32
#define VR_CONTROL_MAX_SETTING_LEN 255

/* An error reply's description in bytes; longer ones are cut ("..."). */
#define VR_CONTROL_MAX_DESC_LEN 1024

#define VR_CONTROL_ERROR (vr_control_error_quark())
GQuark vr_control_error_quark(void);

/**
 * enum vr_control_error - the class of an error reply, and the codes of the
 * VR_CONTROL_ERROR domain. The daemon's ops set errors in this domain to
 * choose the class; any other error is "failed". vreclaimctl exits 1 on
 * each and words "no-domain" itself.
 * @VR_CONTROL_ERROR_NO_DOMAIN:	       the request names a domain the daemon
 *				       does not know.
 * @VR_CONTROL_ERROR_INVALID_ARGUMENT: the request is malformed (not JSON,
 *				       too long, an unknown command or member,
 *				       a wrong type), or a setting is refused;
 *				       the description names what was wrong.
 * @VR_CONTROL_ERROR_FAILED:	       the daemon could not do it.
 */
enum vr_control_error {
	VR_CONTROL_ERROR_NO_DOMAIN,
	VR_CONTROL_ERROR_INVALID_ARGUMENT,
	VR_CONTROL_ERROR_FAILED,
};

/**
 * vr_control_error_class_name() - "no-domain", "invalid-argument",
 * "failed"; "failed" for other values too.
 */
const char *vr_control_error_class_name(enum vr_control_error cls);

/** vr_control_error_class_from_name() - parse a class name; FALSE if unknown. */
gboolean vr_control_error_class_from_name(const char *name, enum vr_control_error *cls);

/**
 * enum vr_control_command - what an operator asks.
 * @VR_CONTROL_STATUS:	every domain's and the daemon's status.
 * @VR_CONTROL_SET:	change settings of one domain ("priority=80").
 * @VR_CONTROL_PAUSE:	stop reclaiming from one domain, or from all.
 * @VR_CONTROL_RESUME:	reclaim again from one domain, or from all.
 * @VR_CONTROL_METRICS:	the status as Prometheus text (metrics.h).
 */
enum vr_control_command {
	VR_CONTROL_STATUS,
	VR_CONTROL_SET,
	VR_CONTROL_PAUSE,
	VR_CONTROL_RESUME,
	VR_CONTROL_METRICS,
};

/**
 * vr_control_command_name() - "status", "set", "pause", "resume",
 * "metrics"; "unknown" for other values.
 */
const char *vr_control_command_name(enum vr_control_command command);

/** vr_control_command_from_name() - parse a command name; FALSE if unknown. */
gboolean vr_control_command_from_name(const char *name, enum vr_control_command *command);

/**
 * struct vr_control_request - one request.
 * @command:	what is asked.
 * @has_domain:	whether @domain is given: required by set, optional for
 *		pause and resume (absent: every domain), refused by status
 *		and metrics.
 * @domain:	the domain's name: not empty, UTF-8 without control
 *		characters.
 * @settings:	set only: NULL-terminated "KEY=VALUE" strings, owned;
 *		1..VR_CONTROL_MAX_SETTINGS of them, no KEY twice.
 *
 * Clear with vr_control_request_clear().
 */
struct vr_control_request {
	enum vr_control_command command;
	gboolean has_domain;
	char domain[VR_DOMAIN_NAME_SIZE];
	char **settings;
};

typedef struct vr_control_request vr_control_request;

/** vr_control_request_clear() - free what @req owns and zero it. */
void vr_control_request_clear(struct vr_control_request *req);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(vr_control_request, vr_control_request_clear)

/**
 * vr_control_encode_request() - @req as a line ('\n'-terminated, owned).
 * Return: the line, or NULL with @error (INVALID_ARGUMENT) when @req breaks
 * a rule of struct vr_control_request: the server would refuse it.
 */
char *vr_control_encode_request(const struct vr_control_request *req, GError **error);

/**
 * vr_control_decode_request() - the request in the @len bytes of @line (a
 * final '\n' allowed) into @out (cleared first; clear it after).
 * Return: TRUE, or FALSE with @error (INVALID_ARGUMENT) whose message names
 * the member that is wrong ("settings[1]: ..."), or says that the line is
 * not JSON, not an object, or too long.
 */
gboolean vr_control_decode_request(const char *line, gsize len, struct vr_control_request *out,
				   GError **error);

/* ---- replies (server -> client); the encoders never fail ---- */

/** vr_control_encode_empty() - {"return":{}}: set, pause, resume went well. Owned line. */
char *vr_control_encode_empty(void);

/**
 * vr_control_encode_status() - {"return":{"daemon":{...},"domains":[...]}}
 * of @daemon and @domains (struct vr_domain_status *). Owned line; a
 * "failed" error reply when it would be longer than
 * VR_CONTROL_MAX_REPLY_BYTES.
 */
char *vr_control_encode_status(const GPtrArray *domains, const struct vr_daemon_status *daemon);

/** vr_control_encode_metrics() - {"return":{"text":@text}}; owned line. */
char *vr_control_encode_metrics(const char *text);

/**
 * vr_control_encode_error() - the error reply of @error: its class is
 * @error's code in the VR_CONTROL_ERROR domain, "failed" for other domains;
 * its description @error's message, cut to VR_CONTROL_MAX_DESC_LEN. Owned
 * line.
 */
char *vr_control_encode_error(const GError *error);

/*
 * The decoders of replies take the reply line (a final '\n' allowed). An
 * error reply gives FALSE with @error in VR_CONTROL_ERROR with its class as
 * the code and its description as the message; a line that is not the
 * expected reply gives FALSE with VR_CONTROL_ERROR_FAILED ("vreclaimd's
 * reply is invalid: <path>: ...").
 */

/** vr_control_decode_empty_reply() - the reply to set, pause or resume. */
gboolean vr_control_decode_empty_reply(const char *line, gsize len, GError **error);

/**
 * vr_control_decode_status_reply() - the reply to status.
 * @domains:	set to a new array that owns its struct vr_domain_status *.
 * @daemon:	filled in.
 * Unknown members are ignored (a newer daemon); missing, mistyped, too
 * long or out-of-range ones are refused.
 */
gboolean vr_control_decode_status_reply(const char *line, gsize len, GPtrArray **domains,
					struct vr_daemon_status *daemon, GError **error);

/** vr_control_decode_metrics_reply() - the reply to metrics: *@text, owned. */
gboolean vr_control_decode_metrics_reply(const char *line, gsize len, char **text, GError **error);

/* ---- the server ---- */

/**
 * struct vr_control_ops - what the server asks the daemon. Each runs on the
 * main loop and answers at once. @user is the server's user pointer. Errors
 * in the VR_CONTROL_ERROR domain choose the reply's class (NO_DOMAIN for a
 * name the daemon does not know, INVALID_ARGUMENT for a refused setting);
 * other errors are "failed".
 * @status:	a snapshot of every domain and of the daemon (vr_status_fn).
 * @set:	apply @settings ("KEY=VALUE", NULL-terminated, checked for
 *		form by the server) to @domain, all or nothing.
 * @pause:	pause (@pause TRUE) or resume reclaim for @domain, or for
 *		every domain when @domain is NULL.
 */
struct vr_control_ops {
	gboolean (*status)(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			   GError **error);
	gboolean (*set)(gpointer user, const char *domain, const char *const *settings,
			GError **error);
	gboolean (*pause)(gpointer user, const char *domain, gboolean pause, GError **error);
};

/**
 * vr_control_handle_line() - serve one request line: decode it, call @ops,
 * and return the reply line (owned; an error reply for a bad request or a
 * failed op). What the server does with each line; pure but for @ops.
 */
char *vr_control_handle_line(const struct vr_control_ops *ops, gpointer user, const char *line,
			     gsize len);

/* At most this many clients at once; one more gets a "failed" error reply
 * and is closed. */
#define VR_CONTROL_MAX_CLIENTS 16

/* Replies queued for one client that does not read, bytes: above this it is
 * dropped. While a reply waits, that client's further requests wait too. */
#define VR_CONTROL_MAX_QUEUE_BYTES (VR_CONTROL_MAX_REPLY_BYTES + 65536)

struct vr_control_server;
typedef struct vr_control_server vr_control_server;

/**
 * vr_control_server_new() - listen on the unix socket @path and serve it on
 * the default GMainContext.
 * @path:	the socket's path; its folder is created (0755) when missing.
 *		A socket file nobody listens on is replaced; a socket somebody
 *		listens on, or a file of another kind, is an error.
 * @mode:	the socket file's permissions, at most 0777 (e.g.
 *		VR_CONTROL_DEFAULT_MODE), set before it listens.
 * @ops:	the daemon's callbacks, copied.
 * @user:	passed to @ops.
 * Return: owned server, or NULL with @error naming @path.
 */
struct vr_control_server *vr_control_server_new(const char *path, guint mode,
						const struct vr_control_ops *ops, gpointer user,
						GError **error);

/** vr_control_server_nr_clients() - the clients connected now. */
guint vr_control_server_nr_clients(const struct vr_control_server *s);

/**
 * vr_control_server_free() - close every client and the socket, and remove
 * the socket file if it is still the one the server made.
 */
void vr_control_server_free(struct vr_control_server *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_control_server, vr_control_server_free)
