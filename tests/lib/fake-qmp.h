/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The QMP server side that the tests' fake QEMUs share: QEMU 7.2's
 * greeting, a listening unix socket (in a temporary folder of its own, for
 * the in-process fakes), taking command lines from what a client sent,
 * parsing a command, writing its reply, and the capabilities negotiation
 * that QEMU asks before any other command.
 *
 * Used by tests/integration/fake-qemu.c (the fake QEMU process: its
 * commands, its guest's memory and agent, one epoll loop),
 * tests/unit/hostd/qmp/test-qmp.c (a scripted server thread with fault
 * injection) and tests/unit/hostd/qmp/test-monitor-worker.c (a peer thread
 * that answers normally or a byte at a time). Each keeps only its own
 * specifics; nothing here calls Criterion, so a program without it links
 * this too. Nothing here is thread-safe beyond what its caller guards:
 * each function works on what it is given.
 */
#pragma once

#include <glib.h>
#include <json.h>

/*
 * FAKE_QMP_GREETING - what QEMU 7.2 (Debian 12's 7.2.22) greets a QMP client
 * with (tests/data/qemu/README.md), "\r\n" ended as QEMU sends it. It holds
 * no ' character, so the unit tests' dq() leaves it as it is.
 */
#define FAKE_QMP_GREETING                                                                          \
	"{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, "         \
	"\"package\": \"Debian 1:7.2+dfsg-7+deb12u18+b3\"}, \"capabilities\": [\"oob\"]}}\r\n"

/**
 * fake_qmp_listen() - listen on the unix socket @path (backlog 4,
 * close-on-exec).
 * @path:	the socket's path; it must not exist.
 * @nonblock:	TRUE for a non-blocking socket (an epoll loop's).
 * @error:	where a path too long for a socket, or a failing socket(),
 *		bind() or listen(), is said, naming @path.
 *
 * Return: the listening descriptor (the caller closes it), or -1 with
 * @error set.
 */
int fake_qmp_listen(const char *path, gboolean nonblock, GError **error);

/**
 * struct fake_qmp_socket - a listening QMP socket in a temporary folder of
 * its own: an in-process fake's.
 * @dir:	the folder (owned), removed by fake_qmp_socket_close().
 * @path:	the socket, "qmp.sock" in @dir (owned).
 * @listen_fd:	the listening descriptor (blocking), -1 once closed; a
 *		test that closes it itself sets it to -1.
 */
struct fake_qmp_socket {
	char *dir;
	char *path;
	int listen_fd;
};

/**
 * fake_qmp_socket_open() - make a temporary folder and listen on
 * "qmp.sock" in it.
 * @s:		filled; every field is set, also on failure (then what was
 *		made is undone: @s can still be given to
 *		fake_qmp_socket_close()).
 * @tmpl:	the folder's name template, as g_dir_make_tmp() takes it
 *		("vr-qmp-XXXXXX").
 * @error:	why the folder or the socket could not be made.
 *
 * Return: TRUE when @s listens.
 */
gboolean fake_qmp_socket_open(struct fake_qmp_socket *s, const char *tmpl, GError **error);

/**
 * fake_qmp_socket_close() - close @s's listening socket (unless already
 * -1), remove the socket file and the folder, free the names. @s is left
 * zeroed with @listen_fd -1; closing twice does nothing more.
 * @s:		what fake_qmp_socket_open() filled.
 */
void fake_qmp_socket_close(struct fake_qmp_socket *s);

/**
 * fake_qmp_accept() - wait up to @timeout_ms for a client on @listen_fd
 * and take it.
 * @listen_fd:	a listening socket.
 * @timeout_ms:	the longest wait, ms (-1: for ever).
 *
 * Return: the connection (blocking, close-on-exec; the caller closes it),
 * or -1 when none came in time or accept() failed.
 */
int fake_qmp_accept(int listen_fd, int timeout_ms);

/**
 * fake_qmp_take_line() - take the first whole line from @in.
 * @in:		bytes received and not yet taken; the line and its "\n" are
 *		removed from its front.
 *
 * Return: the line without its "\n" (a "\r" before it stays; owned), or
 * NULL when @in holds no "\n" yet.
 */
char *fake_qmp_take_line(GString *in);

/**
 * enum fake_qmp_read - what fake_qmp_read_line() got.
 * @FAKE_QMP_READ_LINE:	   a line.
 * @FAKE_QMP_READ_TIMEOUT: nothing came for the timeout (what came of a
 *			   line stays in the buffer).
 * @FAKE_QMP_READ_CLOSED:  the client closed (or the read failed) before
 *			   a whole line.
 */
enum fake_qmp_read {
	FAKE_QMP_READ_LINE,
	FAKE_QMP_READ_TIMEOUT,
	FAKE_QMP_READ_CLOSED,
};

/**
 * fake_qmp_read_line() - the next line from the blocking connection @fd.
 * @fd:		the connection.
 * @in:		its bytes received and not yet taken (kept between calls).
 * @timeout_ms:	the longest wait for more bytes, ms, each time @in has no
 *		whole line.
 * @line:	the line on FAKE_QMP_READ_LINE (owned, as
 *		fake_qmp_take_line() gives it), else NULL.
 *
 * Return: what came.
 */
enum fake_qmp_read fake_qmp_read_line(int fd, GString *in, int timeout_ms, char **line);

/**
 * fake_qmp_send_all() - send all of @buf on the connection @fd, at the
 * pace the client reads it.
 * @fd:		the connection.
 * @buf, @len:	the bytes.
 * @timeout_ms:	the longest wait for room to send, ms, each time.
 *
 * Return: TRUE when all went; FALSE when the client went or took nothing
 * for @timeout_ms.
 */
gboolean fake_qmp_send_all(int fd, const char *buf, gsize len, int timeout_ms);

/**
 * struct fake_qmp_command - one command line as QMP reads it.
 * @obj:	the line's JSON (owned), NULL when it is not JSON.
 * @execute:	its "execute", NULL when @obj is not an object with a
 *		string "execute" (in @obj).
 * @id:		its "id", NULL without (in @obj).
 * @arguments:	its "arguments", NULL without (in @obj).
 */
struct fake_qmp_command {
	json_object *obj;
	const char *execute;
	json_object *id;
	json_object *arguments;
};

/**
 * fake_qmp_command_parse() - parse the command line @line into @cmd.
 * @cmd:	filled; clear it with fake_qmp_command_clear().
 * @line:	one line a client sent.
 *
 * Return: TRUE when @line is a command (@cmd->execute set).
 */
gboolean fake_qmp_command_parse(struct fake_qmp_command *cmd, const char *line);

/**
 * fake_qmp_command_clear() - free what fake_qmp_command_parse() put in
 * @cmd, and zero it.
 * @cmd:	a parsed command.
 */
void fake_qmp_command_clear(struct fake_qmp_command *cmd);

/**
 * fake_qmp_command_arg() - the string argument @key of @cmd.
 * @cmd:	a parsed command.
 * @key:	the argument's name ("path").
 *
 * Return: its value (in @cmd), or NULL when @cmd has no such string
 * argument.
 */
const char *fake_qmp_command_arg(const struct fake_qmp_command *cmd, const char *key);

/**
 * fake_qmp_reply() - a reply line as QEMU writes it: {"return": RET} or
 * {"error": {"class": CLS, "desc": DESC}}, then the command's "id", then
 * "\r\n".
 * @id:		the command's id (copied), NULL for none.
 * @ret_json:	the "return" value as JSON text, or NULL for an error reply.
 * @cls, @desc:	the error's class and description (with @ret_json NULL).
 *
 * Return: the line (owned).
 */
char *fake_qmp_reply(json_object *id, const char *ret_json, const char *cls, const char *desc);

/**
 * fake_qmp_lookup_fn - what a fake answers to a command after the
 * negotiation.
 * @cmd:	the command (@cmd->execute set).
 * @cls, @desc:	set for an error reply (static strings).
 * @data:	the fake's.
 *
 * Return: the "return" value as JSON text (owned), or NULL with *@cls and
 * *@desc set for an error reply.
 */
typedef char *(*fake_qmp_lookup_fn)(const struct fake_qmp_command *cmd, const char **cls,
				    const char **desc, gpointer data);

/**
 * struct fake_qmp_session - one client's QMP session.
 * @negotiated:	qmp_capabilities was answered: commands are looked up.
 */
struct fake_qmp_session {
	gboolean negotiated;
};

/**
 * fake_qmp_answer() - the reply to @cmd as QEMU 7.2 gives it: before the
 * negotiation only qmp_capabilities ("{}", then negotiated; anything else
 * CommandNotFound), after it what @lookup says; a line that is no command
 * a GenericError. The command's id is in the reply.
 * @s:		the client's session.
 * @cmd:	the command line, parsed.
 * @lookup:	the fake's commands.
 * @data:	given to @lookup.
 * @command:	set to whether @cmd was a command after the negotiation (one
 *		@lookup answered), may be NULL.
 *
 * Return: the reply line, "\r\n" ended (owned).
 */
char *fake_qmp_answer(struct fake_qmp_session *s, const struct fake_qmp_command *cmd,
		      fake_qmp_lookup_fn lookup, gpointer data, gboolean *command);
