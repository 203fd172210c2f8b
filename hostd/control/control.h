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
 *
 * Who may do what (struct vr_control_rules): the server reads each client's
 * peer credentials (SO_PEERCRED: uid, gid; SO_PEERGROUPS: its supplementary
 * groups) and gives it a role: admin (every command) or read-only (status,
 * metrics). root and vreclaimd's own user are admin; other users need to be
 * listed, by user or by group. A client with no role is refused when it
 * connects; a read-only client's set, pause or resume gets a
 * "permission-denied" error reply. A client idle for longer than the idle
 * timeout is closed, and one user holds at most a few of the server's slots,
 * so neither idle nor greedy clients lock the others out.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

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
 * @VR_CONTROL_ERROR_PERMISSION_DENIED: the client's role does not allow the
 *				       command, or the client has no role.
 */
enum vr_control_error {
	VR_CONTROL_ERROR_NO_DOMAIN,
	VR_CONTROL_ERROR_INVALID_ARGUMENT,
	VR_CONTROL_ERROR_FAILED,
	VR_CONTROL_ERROR_PERMISSION_DENIED,
};

/**
 * vr_control_error_class_name() - "no-domain", "invalid-argument",
 * "failed", "permission-denied"; "failed" for other values.
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

/* ---- roles ---- */

/**
 * enum vr_control_role - what a client of the control socket may do.
 * @VR_CONTROL_ROLE_NONE:      nothing: it is refused when it connects.
 * @VR_CONTROL_ROLE_READ_ONLY: the queries (status, metrics).
 * @VR_CONTROL_ROLE_ADMIN:     every command.
 */
enum vr_control_role {
	VR_CONTROL_ROLE_NONE,
	VR_CONTROL_ROLE_READ_ONLY,
	VR_CONTROL_ROLE_ADMIN,
};

/** vr_control_role_name() - "none", "read-only", "admin"; "none" for other values. */
const char *vr_control_role_name(enum vr_control_role role);

/**
 * vr_control_command_needs_admin() - whether @command changes the daemon
 * (set, pause, resume) and so needs VR_CONTROL_ROLE_ADMIN; the queries
 * (status, metrics) need VR_CONTROL_ROLE_READ_ONLY.
 */
gboolean vr_control_command_needs_admin(enum vr_control_command command);

/* Users or groups listed per role, at most: a role is given to a few
 * operators' accounts or groups, not to a directory. */
#define VR_CONTROL_MAX_IDS 32

/**
 * struct vr_control_ids - a set of user or group ids (uid_t and gid_t are
 * 32-bit on Linux).
 * @nr:	how many of @id are used, 0..VR_CONTROL_MAX_IDS.
 * @id:	the ids, in no order.
 */
struct vr_control_ids {
	guint nr;
	uint32_t id[VR_CONTROL_MAX_IDS];
};

/** vr_control_ids_contain() - whether @id is one of @ids. */
gboolean vr_control_ids_contain(const struct vr_control_ids *ids, uint32_t id);

/* A client that neither sends nor reads for this long is closed, ms: 30 s
 * is ample for a script between two requests (vreclaimctl sends its one
 * request at once), while a client that went to sleep holding a slot frees
 * it soon: 16 idle clients used to lock every other client out. */
#define VR_CONTROL_DEFAULT_IDLE_TIMEOUT_MS 30000U

/* Clients of one user at once, by default: a quarter of the server's
 * VR_CONTROL_MAX_CLIENTS, so one user (a script in a loop) leaves room for
 * at least three others. */
#define VR_CONTROL_DEFAULT_MAX_CLIENTS_PER_USER 4U

/* At most one log line per this many ms about refused clients; the others
 * are counted and the count is logged with the next line. */
#define VR_CONTROL_REFUSAL_LOG_INTERVAL_MS 10000

/**
 * struct vr_control_rules - who may do what on the control socket, and how
 * long and how many clients the server keeps.
 * @owner_uid:		  vreclaimd's own user: admin, as root (uid 0) is.
 * @admin_users:	  uids given the admin role.
 * @admin_groups:	  gids given the admin role: a client whose gid or one
 *			  of whose supplementary groups is listed.
 * @read_only_users:	  uids given the read-only role.
 * @read_only_groups:	  gids given the read-only role, as @admin_groups.
 * @idle_timeout_ms:	  a client that neither sends a byte nor takes one of
 *			  its reply for this long is closed, ms; > 0.
 * @max_clients_per_user: clients of one uid at once, 1..VR_CONTROL_MAX_CLIENTS;
 *			  one more is refused.
 *
 * The admin role wins when a client has both.
 */
struct vr_control_rules {
	uint32_t owner_uid;
	struct vr_control_ids admin_users;
	struct vr_control_ids admin_groups;
	struct vr_control_ids read_only_users;
	struct vr_control_ids read_only_groups;
	uint64_t idle_timeout_ms;
	guint max_clients_per_user;
};

/**
 * vr_control_rules_init() - the default rules: the calling process's
 * effective uid as @owner_uid, nobody else listed, the default idle timeout
 * and clients per user.
 */
void vr_control_rules_init(struct vr_control_rules *rules);

/**
 * struct vr_control_peer - who a client is, as its socket says.
 * @pid:	its process (SO_PEERCRED), for logs.
 * @uid, @gid:	its effective user and group when it connected (SO_PEERCRED).
 * @groups:	its supplementary groups (SO_PEERGROUPS; none on kernels
 *		before 4.13); borrowed.
 * @nr_groups:	how many @groups holds.
 */
struct vr_control_peer {
	int32_t pid;
	uint32_t uid;
	uint32_t gid;
	const uint32_t *groups;
	guint nr_groups;
};

/** vr_control_role_of() - the role @rules give @peer. Pure. */
enum vr_control_role vr_control_role_of(const struct vr_control_rules *rules,
					const struct vr_control_peer *peer);

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
 * struct vr_control_call - a request answered later (struct
 * vr_control_ops @set_async): the server's, until vr_control_call_finish().
 */
struct vr_control_call;

/**
 * vr_control_call_finish() - answer @call, on the main context, exactly
 * once: an empty reply when @error is NULL, else @error's reply (as the
 * synchronous ops' errors). @call is freed; a client that left meanwhile
 * gets nothing.
 */
void vr_control_call_finish(struct vr_control_call *call, const GError *error);

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
 * @set_async:	@set for a daemon that must ask someone else first (libvirt,
 *		on its own thread): the server uses it instead of @set when
 *		given. It returns at once and answers @call later with
 *		vr_control_call_finish(); meanwhile that client's further
 *		requests wait (each client's replies stay in order; it is
 *		not read, so one that leaves is closed when its answer
 *		cannot be written), the other clients are served as usual.
 */
struct vr_control_ops {
	gboolean (*status)(gpointer user, GPtrArray **domains, struct vr_daemon_status *daemon,
			   GError **error);
	gboolean (*set)(gpointer user, const char *domain, const char *const *settings,
			GError **error);
	gboolean (*pause)(gpointer user, const char *domain, gboolean pause, GError **error);
	void (*set_async)(gpointer user, const char *domain, const char *const *settings,
			  struct vr_control_call *call);
};

/**
 * vr_control_handle_line() - serve one request line of an admin client:
 * decode it, call @ops, and return the reply line (owned; an error reply for
 * a bad request or a failed op). Pure but for @ops.
 */
char *vr_control_handle_line(const struct vr_control_ops *ops, gpointer user, const char *line,
			     gsize len);

/**
 * vr_control_handle_line_as() - vr_control_handle_line() for a client of
 * @role: a command the role does not allow is not passed to @ops and gets
 * a "permission-denied" error reply ("permission denied: set needs the
 * admin role"). What the server does with each line.
 */
char *vr_control_handle_line_as(const struct vr_control_ops *ops, gpointer user,
				enum vr_control_role role, const char *line, gsize len);

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
 *		VR_CONTROL_DEFAULT_MODE), set before it listens. It decides
 *		who may connect; @rules decide what a connected client may do.
 * @rules:	roles and limits, copied; NULL for vr_control_rules_init()'s.
 * @ops:	the daemon's callbacks, copied.
 * @user:	passed to @ops.
 * Return: owned server, or NULL with @error naming @path (or the rule that
 * is out of range).
 */
struct vr_control_server *vr_control_server_new(const char *path, guint mode,
						const struct vr_control_rules *rules,
						const struct vr_control_ops *ops, gpointer user,
						GError **error);

/**
 * vr_control_server_set_rules() - serve with @rules (copied) from now on: a
 * connected client's role is checked again with each request, so a role
 * taken away holds at once; the idle timeout applies from the next timer.
 * Return: FALSE with @error (INVALID_ARGUMENT) when a limit is out of range;
 * the rules in force stay.
 */
gboolean vr_control_server_set_rules(struct vr_control_server *s,
				     const struct vr_control_rules *rules, GError **error);

/** vr_control_server_nr_clients() - the clients connected now. */
guint vr_control_server_nr_clients(const struct vr_control_server *s);

/**
 * vr_control_server_free() - close every client and the socket, and remove
 * the socket file if it is still the one the server made.
 */
void vr_control_server_free(struct vr_control_server *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_control_server, vr_control_server_free)
